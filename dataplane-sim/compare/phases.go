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

// Shift returns a copy of sc whose steps come d later: every timed event
// after time 0, every flow written out that starts after the first flow,
// every generated or incast group whose first flow starts after the first
// flow (the whole group, so its arrivals keep their spacing), and every
// stop after the first flow's start. Everything else stays: the first
// flows, the groups running from the start, the duration. It is how a step
// bar is measured at other phases of the flows' own cycles (their cuts and
// recoveries), which a single deterministic run fixes by chance. A step
// of the run that the shift takes to or past end, the run's end, is an
// error (*ConfigError); one at or after end already stays where it is.
func Shift(sc *scenario.Scenario, d, end time.Duration) (*scenario.Scenario, error) {
	c := *sc
	first := time.Duration(math.MaxInt64)
	groupStart := map[string]time.Duration{}
	for _, f := range sc.Flows {
		first = min(first, f.Start)
		if f.Group != "" {
			if g, ok := groupStart[f.Group]; !ok || f.Start < g {
				groupStart[f.Group] = f.Start
			}
		}
	}
	later := func(what string, t *time.Duration) error {
		if *t >= end {
			return nil // not in the run, shifted or not
		}
		*t += d
		if *t >= end {
			return &ConfigError{fmt.Errorf("compare: %s: %s shifted by %v comes at %v, at or after the run's end (%v)", sc.Name, what, d, *t, end)}
		}
		return nil
	}
	c.Flows = slices.Clone(sc.Flows)
	for i := range c.Flows {
		f := &c.Flows[i]
		step := f.Start > first
		if f.Group != "" {
			step = groupStart[f.Group] > first
		}
		if step {
			if err := later("flow "+f.Name+"'s start", &f.Start); err != nil {
				return nil, err
			}
		}
		if f.Stop > first {
			if err := later("flow "+f.Name+"'s stop", &f.Stop); err != nil {
				return nil, err
			}
		}
	}
	c.Events = slices.Clone(sc.Events)
	for i := range c.Events {
		if ev := &c.Events[i]; ev.At > 0 {
			if err := later(fmt.Sprintf("the %s event on %s", ev.Kind, ev.Target), &ev.At); err != nil {
				return nil, err
			}
		}
	}
	return &c, nil
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

// RunPhases runs sc at every offset with the rows the bars compare (the
// baseline that picks the bottleneck, the tuned run, the grid), each phase
// under outDir/<scenario>/+<offset>/ (summaries and tuner.csv only:
// Options.SummaryOnly). Every offset is checked (CheckPhases) before the
// first run.
func RunPhases(ctx context.Context, sc *scenario.Scenario, offsets []time.Duration, outDir string, o Options) (*Phases, error) {
	shifted, err := shiftPhases(sc, offsets, o)
	if err != nil {
		return nil, err
	}
	p := &Phases{Scenario: sc.Name, Offsets: offsets}
	o.Mechanisms = PhaseMechanisms
	o.Plots, o.SummaryOnly = false, true
	for i, d := range offsets {
		res, err := Run(ctx, []*scenario.Scenario{shifted[i]}, filepath.Join(outDir, sc.Name, "+"+d.String()), o)
		if err != nil {
			return nil, err
		}
		t, ok1 := res.find(sc.Name, "long-haul-cnp"+TunerSuffix)
		b, ok2 := res.find(sc.Name, "long-haul-cnp"+BestStaticSuffix)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: %s with the tuner and the best static setting", ErrNoRun, sc.Name)
		}
		if i == 0 {
			for _, g := range b.Grid {
				p.Settings = append(p.Settings, g.Setting)
				p.Static = append(p.Static, make([]float64, len(offsets)))
			}
		}
		if len(b.Grid) != len(p.Settings) {
			return nil, fmt.Errorf("compare: %s shifted by %v: %d grid settings, %d at the first phase", sc.Name, d, len(b.Grid), len(p.Settings))
		}
		p.Tuner = append(p.Tuner, t.Objective)
		for s, g := range b.Grid {
			if g.Setting != p.Settings[s] {
				return nil, fmt.Errorf("compare: %s shifted by %v: grid setting %d is %s, %s at the first phase", sc.Name, d, s, g.Setting, p.Settings[s])
			}
			p.Static[s][i] = g.Objective
		}
	}
	if len(p.Settings) == 0 {
		return nil, fmt.Errorf("compare: %s: the grid is empty", sc.Name)
	}
	return p, nil
}

// CheckPhases refuses what RunPhases refuses of sc before its first run: a
// step that a phase shifts to or past the run's end (Shift), and what
// Check refuses of the phases' rows (PhaseMechanisms). Its errors are
// *ConfigError. A command running several scenarios checks every one
// before the first's phases run.
func CheckPhases(sc *scenario.Scenario, offsets []time.Duration, o Options) error {
	_, err := shiftPhases(sc, offsets, o)
	return err
}

// shiftPhases is sc shifted by every offset (Shift, up to the run's end),
// each checked as Run checks it with the phases' rows.
func shiftPhases(sc *scenario.Scenario, offsets []time.Duration, o Options) ([]*scenario.Scenario, error) {
	end := sc.Duration
	if o.Duration > 0 {
		end = o.Duration
	}
	shifted := make([]*scenario.Scenario, len(offsets))
	for i, d := range offsets {
		var err error
		if shifted[i], err = Shift(sc, d, end); err != nil {
			return nil, err
		}
	}
	o.Mechanisms = PhaseMechanisms
	if err := Check(shifted, o); err != nil {
		return nil, err
	}
	return shifted, nil
}

// PhaseMechanisms are the rows RunPhases runs at each phase: DCQCN (the
// baseline that picks the bottleneck, as in the comparison), the tuned run
// and the grid.
var PhaseMechanisms = []string{"dcqcn", "long-haul-cnp" + TunerSuffix, "long-haul-cnp" + BestStaticSuffix}

// PhaseStat is one static setting against the tuned run over the phases.
type PhaseStat struct {
	Setting string
	// Mean and SE are the setting's mean objective and its standard error.
	Mean, SE float64
	// Wins counts the phases where the tuned run's objective is below the
	// setting's; DiffShare is the paired mean difference (tuned minus the
	// setting) as a share of the setting's mean (negative: the tuned run is
	// better), DiffSEShare its standard error as the same share; both NaN
	// when the setting's mean is not positive.
	Wins                   int
	DiffShare, DiffSEShare float64
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
		st.DiffShare, st.DiffSEShare = math.NaN(), math.NaN()
		if st.Mean > 0 {
			st.DiffShare, st.DiffSEShare = dm/st.Mean, dse/st.Mean
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
		if len(p.Static) == 0 || len(p.Tuner) != len(p.Offsets) {
			return fmt.Errorf("compare: %s: %d static settings, %d tuned runs for %d phases", p.Scenario, len(p.Static), len(p.Tuner), len(p.Offsets))
		}
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
		fmt.Fprintf(&b, "\nOver the %d phases the tuned run's J is %.4f ± %.4f (mean ± standard error, the phases taken as samples of where in the flows' cycle the steps land). The static settings with the lowest means:\n\n",
			len(p.Offsets), mean, se)
		b.WriteString("| static setting | mean J ± SE | tuner below it in | tuner vs it (paired mean ± SE) |\n|---|---|---|---|\n")
		for _, st := range stats[:min(top, len(stats))] {
			fmt.Fprintf(&b, "| %s | %.4f ± %.4f | %d of %d phases | %+.1f %% ± %.1f %% |\n", st.Setting, st.Mean, st.SE,
				st.Wins, len(p.Offsets), 100*st.DiffShare, 100*st.DiffSEShare)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
