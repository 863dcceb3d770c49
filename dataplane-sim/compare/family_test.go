package compare

import (
	"bytes"
	"strings"
	"testing"
	"time"

	famspec "github.com/lhcnp/lhcnp/dataplane-sim/family"
)

// TestEvalMarkdownChangesPerCycle: the set's table reports each run's
// busiest queue in changes per judgement cycle and the set's largest
// against its bound of one (issue #24: "changes per queue per second
// bounded and reported").
func TestEvalMarkdownChangesPerCycle(t *testing.T) {
	d := famspec.Draw{Seed: 1, Set: "train", Rate: 10e9, RTT: time.Millisecond, Congestion: "mid-wan", Overload: 2, Step: famspec.StepNone, IP: "v4"}
	rows := []EvalRow{
		{Draw: d, Tuner: 1, Best: 1, ChangesPerQueuePerSec: 100, ChangesPerCycle: 0.32},
		{Draw: d, Tuner: 1, Best: 1, ChangesPerQueuePerSec: 50, ChangesPerCycle: 0.16},
	}
	s := Summarise(rows)
	if s.MaxChangesPerCycle != 0.32 {
		t.Errorf("MaxChangesPerCycle %v, want 0.32", s.MaxChangesPerCycle)
	}
	var b bytes.Buffer
	if err := WriteEvalMarkdown(&b, "train", rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| … per judgement cycle (Set delay + RTT_est), the busiest queue of the set | ≤ 1 | 0.32 | holds |",
		"| 100.0 (0 / 0) | 0.32 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	rows[1].ChangesPerCycle = 1.5
	b.Reset()
	if err := WriteEvalMarkdown(&b, "train", rows); err != nil {
		t.Fatal(err)
	}
	if want := "| ≤ 1 | 1.50 | **fails** |"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}
