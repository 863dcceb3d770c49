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

// TestIssue27TwoReadings: issue 27's bars are read for the untuned options
// and for the options tuned as the DCQCN is, side by side, each against
// the tuned DCQCN; a missing tuned row reads "—" and the untuned reading
// stays.
func TestIssue27TwoReadings(t *testing.T) {
	web := func(m string, util float64, peak int64, small, large float64, done int) Row {
		return Row{Scenario: "websearch-50", Mechanism: m, Utilisation: util, PeakQueueBytes: peak,
			Buckets: []Bucket{{Name: "small < 100 KB", Flows: 10, Finished: 10, P99: small}, {Name: "medium", Flows: 10, Finished: 10, P99: 1.2},
				{Name: "large > 10 MB", Flows: 16, Finished: done, P99: large}}}
	}
	r := &Result{Rows: []Row{
		web("dcqcn"+WanTunedSuffix, 0.5067, 11_800_000, 1.20, 1.43, 16),
		web("long-haul-cnp", 0.4207, 5_400_000, 1.12, 3.61, 11),
		web("long-haul-cnp"+OptionsSuffix, 0.5060, 10_300_000, 1.19, 1.51, 16),
		web("long-haul-cnp"+OptionsSuffix+WanTunedSuffix, 0.5160, 9_000_000, 1.10, 1.40, 16),
	}}
	got := issue27(figures{r})
	for _, want := range []string{
		"| utilisation, drops, peak queue | websearch-50 | 50.60 % (best 50.67 %, dcqcn:wan-tuned); 0 drops; peak 10.3 MB vs 11.8 MB | yes | 51.60 % (best 51.60 %, long-haul-cnp:options:wan-tuned); 0 drops; peak 9.0 MB vs 11.8 MB | yes |",
		"| large flows, small flows | websearch-50 | large p99 1.51 vs 1.43, 16 of 16 finished; small p99 1.19 vs 1.12 (long-haul-cnp) (not: large p99, small p99) | **no** | large p99 1.40 vs 1.43, 16 of 16 finished; small p99 1.10 vs 1.12 (long-haul-cnp) | yes |",
		"the scenarios that fail each bar, untuned / tuned: utilisation, drops, peak queue, 0 / 0 of 1; large flows, small flows, 1 / 0 of 1.",
		"not policies a node could run",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the bars do not say %q:\n%s", want, got)
		}
	}
	r.Rows = r.Rows[:3]
	got = issue27(figures{r})
	if !strings.Contains(got, "(not: large p99, small p99) | **no** | — | — |") {
		t.Errorf("without the tuned row the untuned reading should stand alone:\n%s", got)
	}
	if issue27(figures{&Result{Rows: r.Rows[1:]}}) != "" {
		t.Errorf("bars read without the tuned DCQCN's row")
	}
}
