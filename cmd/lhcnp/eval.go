package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lhcnp/lhcnp/dataplane-sim/compare"
	"github.com/lhcnp/lhcnp/dataplane-sim/family"
	"github.com/lhcnp/lhcnp/internal/atomicfile"
)

// runEval implements `lhcnp sim eval --family FILE --set train|test|both
// --out DIR [--markdown FILE] [--jobs N] [--seeds N] [--sim-seeds N]
// [--remeasure]`: every scenario of the family's seed set with the tuner,
// the coarse grid and the finer grid around its best, each at N simulation
// seeds (compare.EvalFamily, compare.EvalOptions), and the set's table and bars
// written into FILE between the markers <!-- tuner-eval:SET --> and
// <!-- /tuner-eval:SET --> (docs/tuner.md, `make tuner-eval`).
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fam := newFamilySetFlags(fs, "both", true, "directory for the runs")
	md := fs.String("markdown", "", "write each set's table between its markers in this file")
	jobs := fs.Int("jobs", 1, "scenarios run at a time")
	first := fs.Int("seeds", 0, "only the first N seeds of each set (0: all; not with --markdown)")
	simSeeds := fs.Int("sim-seeds", 0, fmt.Sprintf("run everything at N simulation seeds, the family seed + k·%d (k = 0..N-1), J the mean (0: the family's sim_seeds)", family.SimSeedStride))
	remeasure := fs.Bool("remeasure", false, "re-measure the best static setting at simulation seed k = N (always with N > 1)")
	fs.Usage = flagUsage(stderr, fs, "usage: lhcnp sim eval --family FILE --set train|test|both --out DIR [--markdown FILE] [--jobs N] [--seeds N] [--sim-seeds N] [--remeasure]", "",
		"Runs every scenario of the family's seed set with the tuner and the static grid.")
	if err := fam.parse(fs, args); err != nil {
		return err
	}
	if *first > 0 && *md != "" {
		return usageError{"--seeds with --markdown: the tables are of whole sets"}
	}
	if *simSeeds < 0 || *simSeeds > family.MaxSimSeeds {
		return usageError{fmt.Sprintf("--sim-seeds %d: want 1..%d (0: the family's sim_seeds)", *simSeeds, family.MaxSimSeeds)}
	}
	s, sets, err := fam.load()
	if err != nil {
		return err
	}
	o := compare.EvalOptions{SimSeeds: s.SimSeeds, Remeasure: *remeasure}
	if *simSeeds > 0 {
		o.SimSeeds = *simSeeds
	}
	for _, name := range sets {
		list := s.Sets()[name].List()
		if *first > 0 && *first < len(list) {
			list = list[:*first]
		}
		rows, err := compare.EvalFamily(ctx, s, name, list, filepath.Join(*fam.out, name), *jobs, o,
			func(line string) { fmt.Fprintln(stdout, line) })
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := compare.WriteEvalMarkdown(&b, name, rows); err != nil {
			return err
		}
		sum := compare.Summarise(rows)
		fmt.Fprintf(stdout, "%s: %d scenarios: mean ratio %.3f, worst tenth %.3f, steps beaten %d of %d, changes per queue per s max %.1f\n",
			name, sum.N, sum.MeanRatio, sum.WorstTenthRatio, sum.StepsBeaten, sum.Steps, sum.MaxChangesPerQueueS)
		if sum.SimSeeds > 1 {
			fmt.Fprintf(stdout, "%s: at %d simulation seeds: mean ratio ± %.3f (standard error)\n", name, sum.SimSeeds, sum.MeanRatioSE)
		}
		if sum.Remeasured {
			fmt.Fprintf(stdout, "%s: against the best static setting re-measured at simulation seed k = %d: mean ratio %.3f, worst tenth %.3f\n",
				name, sum.SimSeeds, sum.MeanRemeasuredRatio, sum.WorstTenthReme)
		}
		if err := os.WriteFile(filepath.Join(*fam.out, name+".md"), b.Bytes(), 0o644); err != nil {
			return err
		}
		if *md != "" {
			if err := replaceBetween(*md, "tuner-eval:"+name, b.String()); err != nil {
				return err
			}
		}
	}
	return nil
}

// replaceBetween replaces what lies between <!-- KEY --> and <!-- /KEY -->
// in the file with text.
func replaceBetween(path, key, text string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	open, end := "<!-- "+key+" -->\n", "<!-- /"+key+" -->"
	s := string(data)
	i, j := strings.Index(s, open), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %q ... %q markers", path, strings.TrimSpace(open), end)
	}
	s = s[:i+len(open)] + text + s[j:]
	// Replaced whole at once (a reader never sees the file half written).
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	})
}
