package compare

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// Shift returns a copy of sc whose steps come d later: every timed event,
// and every flow that starts after the first flow (its stop too). The
// first flows, the duration and everything else stay. It is how a step
// bar is measured at other phases of the flows' own cycles (their cuts
// and recoveries), which a single deterministic run fixes by chance.
func Shift(sc *scenario.Scenario, d time.Duration) *scenario.Scenario {
	c := *sc
	first := time.Duration(math.MaxInt64)
	for _, f := range sc.Flows {
		first = min(first, f.Start)
	}
	c.Flows = slices.Clone(sc.Flows)
	for i := range c.Flows {
		if f := &c.Flows[i]; f.Start > first {
			f.Start += d
			if f.Stop > 0 {
				f.Stop += d
			}
		}
	}
	c.Events = slices.Clone(sc.Events)
	for i := range c.Events {
		c.Events[i].At += d
	}
	return &c
}

// Phases is a step scenario measured at several phases (Shift by each
// offset): the tuned run's objective and every static setting's of the
// grid, per phase.
type Phases struct {
	Scenario string
	Offsets  []time.Duration
	// Tuner[i] is the tuned run's objective at Offsets[i].
	Tuner []float64
	// Settings are the grid's settings; Static[s][i] the objective of
	// Settings[s] at Offsets[i].
	Settings []string
	Static   [][]float64
}

// RunPhases runs sc at every offset with the tuner's rows
// (TunerMechanisms: the bottleneck is the baseline's at each phase) under
// outDir/<scenario>/<offset>/.
func RunPhases(ctx context.Context, sc *scenario.Scenario, offsets []time.Duration, outDir string, o Options) (*Phases, error) {
	p := &Phases{Scenario: sc.Name, Offsets: offsets}
	o.Mechanisms, o.Plots = TunerMechanisms, false
	for i, d := range offsets {
		res, err := Run(ctx, []*scenario.Scenario{Shift(sc, d)}, filepath.Join(outDir, sc.Name, "+"+d.String()), o)
		if err != nil {
			return nil, fmt.Errorf("compare: %s shifted by %v: %w", sc.Name, d, err)
		}
		t, ok1 := res.find(sc.Name, "long-haul-cnp"+TunerSuffix)
		b, ok2 := res.find(sc.Name, "long-haul-cnp"+BestStaticSuffix)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: %s with the tuner and the best static setting", ErrNoRun, sc.Name)
		}
		p.Tuner = append(p.Tuner, t.Objective)
		for s, g := range b.Grid {
			if i == 0 {
				p.Settings = append(p.Settings, g.Setting)
				p.Static = append(p.Static, make([]float64, len(offsets)))
			}
			if s >= len(p.Settings) || p.Settings[s] != g.Setting {
				return nil, fmt.Errorf("compare: %s shifted by %v: grid setting %d is %s, want %s", sc.Name, d, s, g.Setting, p.Settings[s])
			}
			p.Static[s][i] = g.Objective
		}
	}
	return p, nil
}

// PhaseStat is one static setting against the tuned run over the phases.
type PhaseStat struct {
	Setting string
	// Mean and SE are the setting's mean objective and its standard error.
	Mean, SE float64
	// Wins counts the phases where the tuned run's objective is below the
	// setting's; Diff is the tuned run's mean relative to the setting's
	// (negative: the tuned run is better) and DiffSE the standard error of
	// the paired difference, relative to the setting's mean.
	Wins         int
	Diff, DiffSE float64
}

// Stats returns the tuned run's mean and standard error and every static
// setting against it, the lowest mean first.
func (p *Phases) Stats() (mean, se float64, stats []PhaseStat) {
	mean, se = meanSE(p.Tuner)
	for s, js := range p.Static {
		st := PhaseStat{Setting: p.Settings[s]}
		st.Mean, st.SE = meanSE(js)
		diffs := make([]float64, len(js))
		for i, j := range js {
			diffs[i] = p.Tuner[i] - j
			if p.Tuner[i] < j {
				st.Wins++
			}
		}
		dm, dse := meanSE(diffs)
		if st.Mean > 0 {
			st.Diff, st.DiffSE = dm/st.Mean, dse/st.Mean
		}
		stats = append(stats, st)
	}
	slices.SortStableFunc(stats, func(a, b PhaseStat) int { return cmp.Compare(a.Mean, b.Mean) })
	return mean, se, stats
}

// meanSE is the mean of xs and its standard error (0 for fewer than two).
func meanSE(xs []float64) (mean, se float64) {
	if len(xs) == 0 {
		return math.NaN(), 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
}

// WritePhasesMarkdown writes, per scenario, the objective at every phase
// (the tuned run and the best static setting of that phase) and the
// settings whose mean over the phases is lowest against the tuned run's.
func WritePhasesMarkdown(w io.Writer, ps []*Phases, top int) error {
	var b strings.Builder
	for _, p := range ps {
		mean, se, stats := p.Stats()
		fmt.Fprintf(&b, "### %s\n\n", p.Scenario)
		b.WriteString("| steps shifted by | tuner J | best static J at this phase (setting) | tuner vs it |\n|---|---|---|---|\n")
		for i, d := range p.Offsets {
			best := 0
			for s := range p.Static {
				if p.Static[s][i] < p.Static[best][i] {
					best = s
				}
			}
			fmt.Fprintf(&b, "| %v | %.4f | %.4f (%s) | %s |\n", d, p.Tuner[i], p.Static[best][i], p.Settings[best],
				ratioPct(p.Tuner[i], p.Static[best][i]))
		}
		fmt.Fprintf(&b, "\nOver the %d phases the tuned run's J is %.4f ± %.4f (mean ± standard error). The static settings with the lowest means:\n\n",
			len(p.Offsets), mean, se)
		b.WriteString("| static setting | mean J ± SE | tuner below it in | tuner vs it (paired mean ± SE) |\n|---|---|---|---|\n")
		for _, st := range stats[:min(top, len(stats))] {
			fmt.Fprintf(&b, "| %s | %.4f ± %.4f | %d of %d phases | %+.1f %% ± %.1f %% |\n", st.Setting, st.Mean, st.SE,
				st.Wins, len(p.Offsets), 100*st.Diff, 100*st.DiffSE)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
