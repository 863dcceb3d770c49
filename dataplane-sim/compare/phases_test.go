package compare

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// TestShift: the steps (timed events, flows starting after the first)
// come later by the offset; the first flows and the file's scenario do
// not move.
func TestShift(t *testing.T) {
	sc, err := scenario.LoadFile(filepath.Join("..", "..", "scenarios", "tuner", "load-step.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sc.Events = append(sc.Events, scenario.Event{At: 300 * time.Millisecond, Kind: scenario.EventFlowStop, Target: "s3"})
	sc.Flows[2].Stop = 400 * time.Millisecond
	starts := func(s *scenario.Scenario) (out []time.Duration) {
		for _, f := range s.Flows {
			out = append(out, f.Start, f.Stop)
		}
		for _, ev := range s.Events {
			out = append(out, ev.At)
		}
		return out
	}
	before := starts(sc)
	got := starts(Shift(sc, 3*time.Millisecond))
	ms := time.Millisecond
	want := []time.Duration{1 * ms, 0, 1 * ms, 0, 203 * ms, 403 * ms}
	for range 5 {
		want = append(want, 203*ms, 0)
	}
	want = append(want, 303*ms)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shifted starts, stops and events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, starts(sc)); diff != "" {
		t.Errorf("Shift changed its input (-before +after):\n%s", diff)
	}
}

// TestPhaseStats: means, standard errors, wins and the paired difference
// of a hand-made set of phases; the lowest mean first.
func TestPhaseStats(t *testing.T) {
	p := &Phases{Scenario: "x", Offsets: []time.Duration{0, time.Millisecond, 2 * time.Millisecond},
		Tuner:    []float64{1, 2, 3},
		Settings: []string{"a", "b"},
		Static:   [][]float64{{2, 2, 2}, {0.5, 2.5, 3}}}
	mean, se, stats := p.Stats()
	if mean != 2 || math.Abs(se-1/math.Sqrt(3)) > 1e-12 {
		t.Errorf("tuner mean %v ± %v, want 2 ± %v", mean, se, 1/math.Sqrt(3))
	}
	// a: mean 2, SE 0; the tuner's differences -1, 0, 1 (mean 0, SE
	// 1/sqrt(3), relative to a's mean: half). b: mean 2; differences 0.5,
	// -0.5, 0. The means tie: the stable order keeps the grid's.
	want := []PhaseStat{
		{Setting: "a", Mean: 2, SE: 0, Wins: 1, Diff: 0, DiffSE: 1 / math.Sqrt(3) / 2},
		{Setting: "b", Mean: 2, SE: stdErr([]float64{0.5, 2.5, 3}), Wins: 1, Diff: 0, DiffSE: stdErr([]float64{0.5, -0.5, 0}) / 2},
	}
	if diff := cmp.Diff(want, stats, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

// stdErr is the standard error of xs, written out for the test.
func stdErr(xs []float64) float64 {
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
}

// TestRunPhases: at offset 0 the phases are the comparison's own runs (the
// same objectives as compare.Run's tuner and grid rows); a later phase
// moves the step and so the runs; the table names every phase.
func TestRunPhases(t *testing.T) {
	sc := loadScenario(t, "rtt-step.yaml")
	o := Options{Duration: 40 * time.Millisecond}
	p, err := RunPhases(context.Background(), sc, []time.Duration{0, 3 * time.Millisecond}, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	o.Mechanisms = TunerMechanisms
	res, err := Run(context.Background(), []*scenario.Scenario{sc}, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	tuned, _ := res.find(sc.Name, "long-haul-cnp"+TunerSuffix)
	best, _ := res.find(sc.Name, "long-haul-cnp"+BestStaticSuffix)
	if p.Tuner[0] != tuned.Objective {
		t.Errorf("phase 0: tuner J %v, compare.Run's %v", p.Tuner[0], tuned.Objective)
	}
	if len(p.Settings) != len(best.Grid) {
		t.Fatalf("%d settings, want the grid's %d", len(p.Settings), len(best.Grid))
	}
	moved := false
	for s, g := range best.Grid {
		if p.Settings[s] != g.Setting || p.Static[s][0] != g.Objective {
			t.Errorf("phase 0, setting %d: %s J %v, compare.Run's %s J %v", s, p.Settings[s], p.Static[s][0], g.Setting, g.Objective)
		}
		moved = moved || p.Static[s][1] != p.Static[s][0]
	}
	if !moved {
		t.Errorf("shifting the step by 3 ms changed no static setting's J: %v", p.Static)
	}
	var b bytes.Buffer
	if err := WritePhasesMarkdown(&b, []*Phases{p}, 3); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"### rtt-step", "| 0s | ", "| 3ms | ", "of 2 phases"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
}
