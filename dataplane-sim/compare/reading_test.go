package compare

import (
	"strings"
	"testing"
)

// TestReadingQuotesTheRows: the reading's figures are the rows' own: a
// peak queue, a utilisation, drops and a large-flow bucket appear as the
// rows hold them and follow them when they change; a row the comparison
// did not run reads "?".
func TestReadingQuotesTheRows(t *testing.T) {
	r := &Result{Rows: []Row{
		{Scenario: "near-source-incast", Mechanism: "fast-cnp", PeakQueueBytes: 21_040_000, Utilisation: 0.9900},
		{Scenario: "two-node-congestion", Mechanism: "fast-cnp", PeakQueueBytes: 5_400_000, Utilisation: 0.9858},
		{Scenario: "rtt-step", Mechanism: "fast-cnp", PeakQueueBytes: 1_600_000, Utilisation: 0.9951},
		{Scenario: "far-end", Mechanism: "long-haul-cnp:options", Utilisation: 0.8997, BottleneckDrops: 2751},
		{Scenario: "websearch-50", Mechanism: "long-haul-cnp:options", Utilisation: 0.502,
			Buckets: []Bucket{{Name: "small < 100 KB"}, {Name: "large > 10 MB", Flows: 16, Finished: 16, P99: 1.8149}}},
	}}
	text := func() string { return strings.Join(Reading(r, "long-haul-cnp"), "\n") }
	for _, want := range []string{
		"holds the queue to 21.0 MB in the incast, 5.4 MB with two congestion points and 1.6 MB after the RTT step, at 99–100 % utilisation without a drop",
		"the far end at 90.0 %",
		"with 2751 drops against the draft node's ? and",
		"(?, 16 of 16, ?)",
		"their p99 comes down (1.81 and ?)",
	} {
		if got := text(); !strings.Contains(got, want) {
			t.Errorf("the reading does not say %q:\n%s", want, got)
		}
	}
	r.Rows[0].PeakQueueBytes = 30_000_000
	r.Rows[3].BottleneckDrops = 12
	for _, want := range []string{"holds the queue to 30.0 MB in the incast", "with 12 drops against"} {
		if got := text(); !strings.Contains(got, want) {
			t.Errorf("after the rows changed, the reading does not say %q", want)
		}
	}
}
