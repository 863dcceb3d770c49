package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	famspec "github.com/lhcnp/lhcnp/dataplane-sim/family"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// TestParseGridName: a static setting's name (gridName) reads back as
// its alpha and V_growth; a name of another form is refused.
func TestParseGridName(t *testing.T) {
	for _, c := range []struct {
		alpha float64
		vg    scenario.Rate
	}{{1.414, 3260 * scenario.Mbps}, {0.177, 0}, {4, 400 * scenario.Gbps}, {0.354, 2853 * scenario.Mbps}} {
		a, v, err := parseGridName(gridName(c.alpha, c.vg))
		if err != nil || a != c.alpha || v != c.vg {
			t.Errorf("%s: %v, %v, %v", gridName(c.alpha, c.vg), a, v, err)
		}
	}
	for _, bad := range []string{"", "alpha=1", "v_growth=off,alpha=1", "alpha=x,v_growth=off", "alpha=-1,v_growth=off", "alpha=1,v_growth=fast"} {
		if _, _, err := parseGridName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestEvalCSVOracle: rows with their oracle floor write its columns after
// the others and read back equal; rows of which some lack it are one
// file's two protocols, refused; the bars summarise it.
func TestEvalCSVOracle(t *testing.T) {
	rows := evalRows()
	rows[0].Oracle, rows[0].OracleSE, rows[0].OracleJs = 0.27, 0.01, []float64{0.26, 0.28}
	rows[1].Oracle, rows[1].OracleSE, rows[1].OracleJs = 7.1, 0, []float64{7.1, 7.1}
	var a bytes.Buffer
	if err := WriteEvalCSV(&a, rows); err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(a.String(), "\n"); !strings.HasSuffix(head, ",rolled_back,oracle_j,oracle_se,oracle_j_k0,oracle_j_k1") {
		t.Errorf("header %s: want the oracle's columns last", head)
	}
	tab, err := ReadEvalCSV("o.csv", bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	want := evalRows()
	for i := range want {
		want[i].Oracle, want[i].OracleSE, want[i].OracleJs = rows[i].Oracle, rows[i].OracleSE, rows[i].OracleJs
		want[i].Scenario = want[i].Draw.Short()
		want[i].Draw = famspec.Draw{Seed: want[i].Draw.Seed, Set: want[i].Draw.Set}
	}
	if diff := cmp.Diff(want, tab.Rows, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("read back (-want, +got):\n%s", diff)
	}
	s := Summarise(rows)
	if !s.Oracle || math.Abs(s.MeanOracleRatio-(0.27*3+7.1/7.0067)/2) > 1e-12 || math.Abs(s.WorstTenthOracle-7.1/7.0067) > 1e-12 {
		t.Errorf("summary %+v: want the oracle's mean %v and worst tenth %v", s, (0.27*3+7.1/7.0067)/2, 7.1/7.0067)
	}
	var md strings.Builder
	if err := WriteEvalMarkdown(&md, "train", rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| the oracle floor") || !strings.Contains(md.String(), " 0.2700 ± 0.0100 | 0.810 |") {
		t.Errorf("markdown without the oracle's line or cells:\n%s", md.String())
	}
	rows[1].OracleJs = nil
	if err := WriteEvalCSV(&a, rows); err == nil || !strings.Contains(err.Error(), "oracle floor measured on some rows only") {
		t.Errorf("rows with and without the oracle: %v", err)
	}
	if s := Summarise(rows); s.Oracle {
		t.Error("a summary of rows of which one lacks the oracle has one")
	}
}
