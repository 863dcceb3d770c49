package compare

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// TestShift: the steps (timed events after 0, written-out flows starting
// after the first, groups starting after the first flow as a whole, stops)
// come later by the offset; the first flows, a group running from the
// start and an event at 0 do not move, nor does the file's scenario; a
// step of the run shifted past its end is an error naming it, a
// *ConfigError.
func TestShift(t *testing.T) {
	ms := time.Millisecond
	sc := &scenario.Scenario{Name: "x", Duration: 500 * ms,
		Flows: []scenario.Flow{
			{Name: "a", Start: 1 * ms, Stop: 300 * ms},
			{Name: "b", Start: 1 * ms},
			{Name: "c", Start: 200 * ms, Stop: 400 * ms},
			{Name: "g1", Start: 1 * ms, Group: "bg"}, {Name: "g2", Start: 50 * ms, Group: "bg"},
			{Name: "i1", Start: 100 * ms, Group: "incast"}, {Name: "i2", Start: 120 * ms, Group: "incast"},
		},
		Events: []scenario.Event{{At: 0, Kind: scenario.EventRTT, Target: "wan"}, {At: 150 * ms, Kind: scenario.EventRTT, Target: "wan"}},
	}
	times := func(s *scenario.Scenario) (out []time.Duration) {
		for _, f := range s.Flows {
			out = append(out, f.Start, f.Stop)
		}
		for _, ev := range s.Events {
			out = append(out, ev.At)
		}
		return out
	}
	before := times(sc)
	shifted, err := Shift(sc, 3*ms, sc.Duration)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{1 * ms, 303 * ms, 1 * ms, 0, 203 * ms, 403 * ms, 1 * ms, 0, 50 * ms, 0, 103 * ms, 0, 123 * ms, 0, 0, 153 * ms}
	if diff := cmp.Diff(want, times(shifted)); diff != "" {
		t.Errorf("shifted starts and stops of a b c g1 g2 i1 i2, then events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, times(sc)); diff != "" {
		t.Errorf("Shift changed its input (-before +after):\n%s", diff)
	}
	for _, tc := range []struct {
		desc string
		d    time.Duration
		end  time.Duration
		want string
	}{
		{"a stop past the end", 101 * ms, 500 * ms, "flow c's stop shifted by 101ms comes at 501ms"},
		{"a start past a shorter run's end", 3 * ms, 202 * ms, "flow c's start shifted by 3ms comes at 203ms"},
		{"an event past the end", 3 * ms, 152 * ms, "at or after the run's end (152ms)"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := Shift(sc, tc.d, tc.end)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Shift: %v, want an error saying %q", err, tc.want)
			}
			if _, ok := errors.AsType[*ConfigError](err); !ok {
				t.Errorf("Shift: %v is no *ConfigError: a command takes it for a failed run", err)
			}
		})
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
		{Setting: "a", Mean: 2, SE: 0, Wins: 1, DiffShare: 0, DiffSEShare: 1 / math.Sqrt(3) / 2},
		{Setting: "b", Mean: 2, SE: stdErr([]float64{0.5, 2.5, 3}), Wins: 1, DiffShare: 0, DiffSEShare: stdErr([]float64{0.5, -0.5, 0}) / 2},
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
	out := t.TempDir()
	p, err := RunPhases(context.Background(), sc, []time.Duration{0, 3 * time.Millisecond}, out, o)
	if err != nil {
		t.Fatal(err)
	}
	// Summaries and the tuner's decisions only, no time series.
	var summaries, series, tuner int
	filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		switch filepath.Base(path) {
		case "summary.json":
			summaries++
		case "tuner.csv":
			tuner++
		case "queues.csv", "rates.csv", "counters.csv":
			series++
		}
		return err
	})
	if want := 2 * (2 + len(GridAlphas)*len(GridVGrowthShares)); summaries != want || tuner != 2 || series != 0 {
		t.Errorf("%d summaries (want %d), %d tuner.csv (want 2), %d time series (want 0)", summaries, want, tuner, series)
	}
	if _, err := Run(context.Background(), []*scenario.Scenario{sc}, t.TempDir(), Options{Plots: true, SummaryOnly: true}); err == nil {
		t.Errorf("Run with Plots and SummaryOnly: no error")
	}
	o.Mechanisms = PhaseMechanisms
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
