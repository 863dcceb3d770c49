package compare

import (
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/report"
)

// With a DCQCNRef the comparison table has its column: the distance on
// every row whose RNICs run DCQCN, the paper's cell on dcqcn:paper, none
// on pfc; every row keeps as many cells as the header.
func TestDCQCNRefColumn(t *testing.T) {
	r := &Result{Rows: []Row{
		{Scenario: "s", Mechanism: "pfc", Summary: &report.Summary{}},
		{Scenario: "s", Mechanism: "dcqcn", Summary: &report.Summary{}},
		{Scenario: "s", Mechanism: "dcqcn" + PaperSuffix, Summary: &report.Summary{}},
		{Scenario: "s", Mechanism: "long-haul-cnp", Summary: &report.Summary{}},
	}, DCQCNRef: &DCQCNRef{Cell: "queue 4 %", FCT: "FCT 2 %", Paper: "paper: none"}}
	var b strings.Builder
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 || !strings.Contains(lines[0], DCQCNRefColumn) {
		t.Fatalf("table:\n%s", b.String())
	}
	cells := strings.Count(lines[0], "|")
	for i, want := range []string{"", "", "— (no DCQCN)", "queue 4 %", "paper: none", "queue 4 %"} {
		if strings.Count(lines[i], "|") != cells {
			t.Errorf("line %d has %d bars, the header %d: %s", i, strings.Count(lines[i], "|"), cells, lines[i])
		}
		if want != "" && !strings.HasSuffix(lines[i], " "+want+" |") {
			t.Errorf("line %d: %s, want it to end with %q", i, lines[i], want)
		}
	}
}
