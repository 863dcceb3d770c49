package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/lhcnp/lhcnp/dataplane-sim/compare"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// tunerBars checks the tuner's bars on every scenario that has its rows
// (with the step bars on the step scenarios) and prints one line per
// scenario.
func tunerBars(stdout io.Writer, res *compare.Result, scs []*scenario.Scenario, steps bool) []compare.BarSet {
	var sets []compare.BarSet
	for _, sc := range scs {
		bars, err := res.TunerBars(sc, steps && sc.File != "" && isStepScenario(sc.File))
		if err != nil {
			continue // the tuner rows are not among the runs
		}
		held := 0
		for _, b := range bars {
			if b.Holds {
				held++
			}
		}
		sets = append(sets, compare.BarSet{Title: "long-haul-cnp" + compare.TunerSuffix + ", " + sc.Name, Bars: bars})
		fmt.Fprintf(stdout, "%s: the tuner holds %d of %d bars\n", sc.Name, held, len(bars))
	}
	return sets
}

// defaultTunerScenarios are the tuner's step scenarios (docs/tuner.md).
var defaultTunerScenarios = []string{"scenarios/tuner/rtt-step-back.yaml", "scenarios/tuner/load-step.yaml"}

// tunerDoc runs the tuner's rows on the extra scenarios scs (§7 and the
// step scenarios, of the files extra; loadDocInputs checked them) and
// gathers the tuner's part of docs/results.md with the comparison's own
// tuner rows and bars.
func tunerDoc(ctx context.Context, stdout, stderr io.Writer, res *compare.Result, sets []compare.BarSet, scs []*scenario.Scenario,
	extra, compared []string, out string, opts compare.Options) (*compare.TunerDoc, error) {
	opts.Mechanisms = compare.TunerMechanisms
	opts.Plots = false
	if isTerminal(stderr) {
		opts.Progress = func(sc, m string) { fmt.Fprintf(stderr, "compare: %s with %s\n", sc, m) }
	}
	tres, err := compare.Run(ctx, scs, filepath.Join(out, "tuner"), opts)
	if err != nil {
		return nil, err
	}
	sets = append(sets, tunerBars(stdout, tres, scs, true)...)
	return &compare.TunerDoc{Results: []*compare.Result{res, tres}, BarSets: sets,
		Scenarios: append(append([]string(nil), compared...), extra...)}, nil
}

// isStepScenario says whether a file is one of the tuner's step scenarios.
func isStepScenario(file string) bool {
	return filepath.Base(filepath.Dir(file)) == "tuner"
}
