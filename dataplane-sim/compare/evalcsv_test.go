package compare

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	famspec "github.com/lhcnp/lhcnp/dataplane-sim/family"
)

// evalRows are two rows at two simulation seeds as an evaluation gives
// them: numbers of every digit, one without a re-measured J.
func evalRows() []EvalRow {
	d := famspec.Draw{Seed: 7, Set: "train", Rate: 32.6e9, RTT: 1480 * time.Microsecond, Congestion: "mid-wan", Overload: 1.7,
		Step: famspec.StepNone, IP: "v6", WebSearch: 0.28}
	e := d
	e.Seed, e.Step = 8, "rtt"
	return []EvalRow{
		{Draw: d, Tuner: 0.25413578901234567, TunerSE: 0.0044, SimSeeds: 2, TunerJs: []float64{0.25, 0.25827157802469134},
			Coarse: 0.2895, CoarseSetting: "alpha=1,v_growth=3260Mbps", Best: 1.0 / 3, BestSE: 1e-9, BestSetting: "alpha=1.414,v_growth=3260Mbps",
			BestJs: []float64{0.3, 0.36666666666666664}, Remeasured: 0.2415, ChangesPerQueuePerSec: 98.04, ChangesPerCycle: 0.36,
			Confirmed: 21, RolledBack: 9, Bottleneck: "m1→n2"},
		{Draw: e, Tuner: 7.8994, SimSeeds: 2, TunerJs: []float64{7.5, 8.2988}, Coarse: 7.3918, CoarseSetting: "alpha=0.25,v_growth=off",
			Best: 7.0067, BestSetting: "alpha=0.354,v_growth=off", BestJs: []float64{7, 7.0134}, Remeasured: math.NaN(),
			Bottleneck: "n2→r1"},
	}
}

// asRead are rows as ReadEvalCSV gives them back: the draw as its few
// words (Scenario), the Draw its seed and set alone (in place).
func asRead(rows []EvalRow) []EvalRow {
	for i := range rows {
		rows[i].Scenario = rows[i].Draw.Short()
		rows[i].Draw = famspec.Draw{Seed: rows[i].Draw.Seed, Set: rows[i].Draw.Set}
	}
	return rows
}

// TestEvalCSVRoundTrip: a set's rows written as CSV read back equal
// (every digit, the draw as its few words, NaN as an empty cell), and
// written again give the same bytes; rows without J at each simulation
// seed (a table's) leave those cells empty and read back without them.
func TestEvalCSVRoundTrip(t *testing.T) {
	rows := evalRows()
	var a bytes.Buffer
	if err := WriteEvalCSV(&a, rows); err != nil {
		t.Fatal(err)
	}
	if want := "set,seed,scenario,bottleneck,sim_seeds,tuner_j,tuner_se,tuner_j_k0,tuner_j_k1,coarse_j,coarse_setting,best_j,best_se,best_setting,best_j_k0,best_j_k1,remeasured_j,changes_per_queue_s,changes_per_cycle,confirmed,rolled_back\n"; !strings.HasPrefix(a.String(), want) {
		t.Errorf("header:\n%s\nwant\n%s", a.String(), want)
	}
	tab, err := ReadEvalCSV("a.csv", bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if tab.Set != "train" || tab.SimSeeds != 2 || !cmp.Equal(tab.Lines, []int{2, 3}) {
		t.Errorf("set %q, sim seeds %d, lines %v; want train, 2, [2 3]", tab.Set, tab.SimSeeds, tab.Lines)
	}
	want := asRead(rows)
	if diff := cmp.Diff(want, tab.Rows, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("read back (-want, +got):\n%s", diff)
	}
	var b bytes.Buffer
	if err := WriteEvalCSV(&b, tab.Rows); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("written again:\n%s\nfirst:\n%s", b.String(), a.String())
	}

	// A table's rows: no J at each seed.
	for i := range want {
		want[i].TunerJs, want[i].BestJs = nil, nil
	}
	b.Reset()
	if err := WriteEvalCSV(&b, want); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), ",0.0044,,,0.2895,") {
		t.Errorf("no empty per-seed cells:\n%s", b.String())
	}
	tab, err = ReadEvalCSV("b.csv", &b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, tab.Rows, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("read back (-want, +got):\n%s", diff)
	}

	rows[1].SimSeeds = 3
	if err := WriteEvalCSV(&b, rows); err == nil || !strings.Contains(err.Error(), "seed 8 at 3 simulation seeds, the first row at 2") {
		t.Errorf("rows at two N: %v", err)
	}
}

// TestEvalCSVGrid: rows with the untuned run and the coarse grid (a full
// evaluation's) add untuned_j and a column per coarse setting after the
// others, read back equal; one file holds rows with them or without.
func TestEvalCSVGrid(t *testing.T) {
	rows := evalRows()
	for i := range rows {
		rows[i].Untuned = 0.5 + float64(i)
		for k := range GridSettings() {
			rows[i].Grid = append(rows[i].Grid, 0.3+float64(k)/7+float64(i))
		}
	}
	rows[1].Untuned = math.NaN()
	var a bytes.Buffer
	if err := WriteEvalCSV(&a, rows); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(a.String(), "\n")
	if want := ",rolled_back,untuned_j,grid_j_a0.25_off,grid_j_a0.25_0.1R,grid_j_a0.25_1R,grid_j_a0.5_off,"; !strings.Contains(head, want) || !strings.HasSuffix(head, ",grid_j_a4_1R") {
		t.Errorf("header %s\nwant ...%s...grid_j_a4_1R", head, want)
	}
	tab, err := ReadEvalCSV("g.csv", bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	want := asRead(rows)
	if diff := cmp.Diff(want, tab.Rows, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("read back (-want, +got):\n%s", diff)
	}
	rows[1].Grid = nil
	if err := WriteEvalCSV(&a, rows); err == nil || !strings.Contains(err.Error(), "seed 8: the untuned run and the coarse grid on some rows only") {
		t.Errorf("rows with and without the grid: %v", err)
	}
}

// TestReadEvalCSVErrors: a bad file is refused with its name, the line
// and the column at fault.
func TestReadEvalCSVErrors(t *testing.T) {
	var good bytes.Buffer
	if err := WriteEvalCSV(&good, evalRows()); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(good.String(), "\n")
	head, row1, row2 := lines[0], lines[1], lines[2]
	cell := func(row string, i int, v string) string {
		c := strings.Split(strings.TrimSuffix(row, "\n"), ",")
		// The settings are quoted "a=1,b=2": rejoin them before indexing.
		var out []string
		for j := 0; j < len(c); j++ {
			if strings.HasPrefix(c[j], `"`) {
				out = append(out, c[j]+","+c[j+1])
				j++
				continue
			}
			out = append(out, c[j])
		}
		out[i] = v
		return strings.Join(out, ",") + "\n"
	}
	for _, tt := range []struct {
		desc, text, want string
	}{
		{"empty", "", "x.csv:1: empty file: want a header line"},
		{"a column renamed", strings.Replace(head, "tuner_se", "tuner_sd", 1) + row1, `x.csv:1: column 7 (tuner_sd): column "tuner_sd" where "tuner_se" belongs`},
		{"a column missing", strings.Replace(head, ",rolled_back", "", 1) + row1, `x.csv:1: column 21 (rolled_back): the header lacks column "rolled_back"`},
		{"a column more", strings.Replace(head, "\n", ",note\n", 1) + row1, `x.csv:1: column 22 (note): unknown column "note"`},
		{"no rows", head, "x.csv:2: no rows"},
		{"a cell short", head + strings.Replace(row1, ",9\n", "\n", 1), "x.csv:2: column 1 (cell): the row's number of cells is not the header's"},
		{"not a number", head + cell(row1, 5, "0.25x"), `x.csv:2: column 6 (tuner_j): "0.25x" is not a number of at least 0`},
		{"negative", head + row1 + cell(row2, 18, "-1"), `x.csv:3: column 19 (changes_per_cycle): "-1" is not a number of at least 0`},
		{"an empty setting", head + cell(row1, 13, ""), "x.csv:2: column 14 (best_setting): empty"},
		{"N mismatch", head + cell(row1, 4, "3"), "x.csv:2: column 5 (sim_seeds): 3 simulation seeds, the header's per-seed columns 2: N mismatch"},
		{"one per-seed cell empty", head + cell(row1, 8, ""), "x.csv:2: column 8 (tuner_j_k0): 1 of the 2 cells tuner_j_k0..tuner_j_k1 are empty: give all or none"},
		{"a seed twice", head + row1 + cell(row2, 1, "7"), "x.csv:3: column 2 (seed): seed 7 again (first on line 2)"},
		{"two sets", head + row1 + cell(row2, 0, "test"), `x.csv:3: column 1 (set): set "test", the file's first row "train": one file holds one set`},
		{"an unknown set", head + cell(row1, 0, "dev"), `x.csv:2: column 1 (set): set "dev": want train or test`},
		{"a confirmed count not whole", head + cell(row1, 19, "2.5"), `x.csv:2: column 20 (confirmed): "2.5" is not a whole number of at least 0`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := ReadEvalCSV("x.csv", strings.NewReader(tt.text))
			var ce *CSVError
			if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want a *CSVError containing %q", err, tt.want)
			}
		})
	}
}

// TestEvalRowsFromMarkdown: a set's table as WriteEvalMarkdown writes it
// reads back as its rows at the table's digits (J to four decimals, the
// changes to one, per cycle to two), without the per-seed J the table
// does not show; a file without the set's markers, or with a cell it
// cannot read, names the file and the line.
func TestEvalRowsFromMarkdown(t *testing.T) {
	rows := evalRows()
	rows[1].Remeasured = 7.1
	var md bytes.Buffer
	md.WriteString("# doc\n\n<!-- tuner-eval:train -->\n")
	if err := WriteEvalMarkdown(&md, "train", rows); err != nil {
		t.Fatal(err)
	}
	md.WriteString("<!-- /tuner-eval:train -->\n")
	got, err := EvalRowsFromMarkdown("doc.md", md.Bytes(), "train")
	if err != nil {
		t.Fatalf("%v\n%s", err, md.String())
	}
	r := rows[0]
	want := []EvalRow{
		{Draw: famspec.Draw{Seed: 7, Set: "train"}, Scenario: r.Draw.Short(), Bottleneck: "m1→n2", SimSeeds: 2,
			Tuner: 0.2541, TunerSE: 0.0044, Coarse: 0.2895, CoarseSetting: r.CoarseSetting, Best: 0.3333, BestSE: 0, BestSetting: r.BestSetting,
			Remeasured: 0.2415, ChangesPerQueuePerSec: 98.0, ChangesPerCycle: 0.36, Confirmed: 21, RolledBack: 9},
		{Draw: famspec.Draw{Seed: 8, Set: "train"}, Scenario: rows[1].Draw.Short(), Bottleneck: "n2→r1", SimSeeds: 2,
			Tuner: 7.8994, Coarse: 7.3918, CoarseSetting: rows[1].CoarseSetting, Best: 7.0067, BestSetting: rows[1].BestSetting,
			Remeasured: 7.1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want, +got):\n%s", diff)
	}
	for _, tt := range []struct{ desc, md, want string }{
		{"no markers", "# doc\n", `doc.md: no "<!-- tuner-eval:train -->" marker`},
		{"no end", "<!-- tuner-eval:train -->\ntext\n", `doc.md:1: "<!-- tuner-eval:train -->" has no "<!-- /tuner-eval:train -->" after it`},
		{"no rows", "<!-- tuner-eval:train -->\n<!-- /tuner-eval:train -->\n", "doc.md:1: no table rows"},
		{"a bad J", strings.Replace(md.String(), "| 0.2541 ± 0.0044 |", "| 0.2541 ± x |", 1), `column "tuner J": "0.2541 ± x" is not J`},
		{"a bad changes cell", strings.Replace(md.String(), "| 98.0 (21 / 9) |", "| 98.0 (21) |", 1), `"98.0 (21)" is not RATE (CONFIRMED / ROLLED BACK)`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if _, err := EvalRowsFromMarkdown("doc.md", []byte(tt.md), "train"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestPairEval: each seed's ratio is its tuned J over the re-measured
// best static J (the in-sample best where a row has none), the paired
// difference its mean with the standard error across seeds, and a seed
// counts as better or worse past RatioMove.
func TestPairEval(t *testing.T) {
	base := []EvalRow{
		{Draw: famspec.Draw{Seed: 1}, Best: 1, Remeasured: 2},
		{Draw: famspec.Draw{Seed: 2}, Best: 1, Remeasured: 1},
		{Draw: famspec.Draw{Seed: 3}, Best: 1, Remeasured: 4},
	}
	p := PairEval(base, []float64{2, 1.01, 4}, []float64{3, 1, 4})
	if !p.Remeasured || !cmp.Equal(p.New, []float64{1, 1.01, 1}) || !cmp.Equal(p.Old, []float64{1.5, 1, 1}) {
		t.Errorf("ratios new %v old %v (re-measured %v)", p.New, p.Old, p.Remeasured)
	}
	// Differences −0.5, 0.01, 0: mean −0.49/3, SE of the three.
	if math.Abs(p.Diff-(-0.49/3)) > 1e-12 || math.Abs(p.DiffSE-meanStdErr([]float64{-0.5, 0.01, 0})) > 1e-12 {
		t.Errorf("diff %v ± %v", p.Diff, p.DiffSE)
	}
	if p.Better != 1 || p.Worse != 0 || !cmp.Equal(p.Moved, []int{0, 1, 2}) {
		t.Errorf("better %d worse %d moved %v; want 1, 0, [0 1 2]", p.Better, p.Worse, p.Moved)
	}
	if p.WorstNew != 1.01 || p.WorstOld != 1.5 {
		t.Errorf("worst tenth %v / %v, want 1.01 / 1.5 (the worst one of three)", p.WorstNew, p.WorstOld)
	}
	base[2].Remeasured = math.NaN()
	if p := PairEval(base, []float64{2, 1, 4}, []float64{2, 1, 4}); p.Remeasured || p.New[0] != 2 {
		t.Errorf("without a re-measured J on every row: re-measured %v, ratio %v; want the in-sample best", p.Remeasured, p.New[0])
	}
}

// TestDevSpec: development runs take train seeds and retired held-out
// seeds (generated as the test set's), never the fresh held-out set.
func TestDevSpec(t *testing.T) {
	s, err := famspec.Parse("tiny.yaml", []byte(tinyFamily(t)+"retired_seeds:\n  - {from: 5, to: 6}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc string
		set  string
		seed int64
		want string // an error, or "" and the test set the spec generates from
	}{
		{"train", "train", 2, ""},
		{"train, out of the set", "train", 3, "seed 3 is not in tiny.yaml's train_seeds 1..2"},
		{"the fresh held-out set", "test", 3, "seed 3 is of tiny.yaml's test_seeds 3..4, the fresh held-out set"},
		{"a retired set", "test", 6, ""},
		{"no set", "test", 9, "seed 9 is in no retired held-out set of tiny.yaml"},
		{"an unknown set", "dev", 1, `no seed set "dev"`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			ds, err := DevSpec(s, tt.set, tt.seed)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("got %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := ds.Generate(tt.set, tt.seed); err != nil {
				t.Errorf("generate: %v", err)
			}
		})
	}
	if s.Test != (famspec.Seeds{From: 3, To: 4}) {
		t.Errorf("DevSpec changed the spec's test set: %v", s.Test)
	}
}
