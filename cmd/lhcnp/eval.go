package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/lhcnp/lhcnp/dataplane-sim/compare"
	"github.com/lhcnp/lhcnp/dataplane-sim/family"
	"github.com/lhcnp/lhcnp/internal/atomicfile"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// simEvalUsage are sim eval's usage lines, one per form (its -h's and
// sim -h's).
var simEvalUsage = [3]string{
	"lhcnp sim eval [--family FILE] [--set train|test|both] --out DIR [--markdown FILE] [--jobs N] [--seeds N] [--sim-seeds N] [--remeasure] [--oracle]",
	"lhcnp sim eval --tuned-only --baseline FILE.csv [--compare FILE2.csv] --out DIR [--family FILE] [--jobs N] [--seeds N] [--sim-seeds N] [--oracle]",
	"lhcnp sim eval --csv-from-markdown FILE [--set train|test|both] --out DIR",
}

// runEval implements `lhcnp sim eval [--family FILE] [--set train|test|both]
// --out DIR [--markdown FILE] [--jobs N] [--seeds N] [--sim-seeds N]
// [--remeasure]`: every scenario of the family's seed set with the tuner,
// the coarse grid and the finer grid around its best, each at N simulation
// seeds (compare.EvalFamily, compare.EvalOptions), the set's rows written
// as DIR/<set>.csv (compare.WriteEvalCSV) and its table as DIR/<set>.md,
// and the set's table and bars written into FILE between the markers
// <!-- tuner-eval:SET --> and <!-- /tuner-eval:SET --> (docs/tuner.md,
// `make tuner-eval`).
//
// With --tuned-only --baseline FILE.csv [--compare FILE2.csv] it runs the
// tuned runs alone (runTunedOnly); with --csv-from-markdown FILE it runs
// nothing and writes the sets' tables of FILE as DIR/<set>.csv.
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fam := newFamilySetFlags(fs, "both", true, "directory for the runs")
	md := fs.String("markdown", "", "write each set's table between its markers in this file")
	jobs := fs.Int("jobs", 1, "scenarios run at a time")
	first := fs.Int("seeds", 0, "only the first N seeds of each set (0: all; not with --markdown)")
	simSeeds := fs.Int("sim-seeds", 0, fmt.Sprintf("run everything at N simulation seeds, the family seed + k·%d (k = 0..N-1), J the mean (0: the family's sim_seeds; with --tuned-only, the baseline's)", family.SimSeedStride))
	remeasure := fs.Bool("remeasure", false, "re-measure the best static setting at simulation seed k = N (always with N > 1)")
	oracle := fs.Bool("oracle", false, "also run each seed's oracle floor: the best static setting set at the tuned run's first decision on each queue, never changed (what a tuner that starts from the switch's configuration can reach with one setting)")
	tunedOnly := fs.Bool("tuned-only", false, "run the tuned runs alone, against the static columns of --baseline (the development loop: make tuner-dev)")
	baseline := fs.String("baseline", "", "with --tuned-only: a CSV file an evaluation wrote (its set, seeds, N, bottlenecks and static results)")
	against := fs.String("compare", "", "with --tuned-only: compare with this CSV file's tuned J (default: the baseline's own)")
	fromMD := fs.String("csv-from-markdown", "", "run nothing: write the --set tables of this markdown file (docs/tuner.md) as DIR/<set>.csv")
	tunerConfig := fs.String("tuner-config", "", "the tuned runs' policy: the policy section of a tuner configuration file (lhcnp tuner --config's format, examples/tuner.yaml; the service's other keys are not used), instead of the policy's defaults (a development experiment: not with --markdown)")
	fs.Usage = flagUsage(stderr, fs, "usage: "+simEvalUsage[0], "       "+simEvalUsage[1], "       "+simEvalUsage[2], "",
		"Runs every scenario of the family's seed set with the tuner and the static grid.", defaultFilesNote(fs))
	if err := fam.parse(fs, args); err != nil {
		return err
	}
	given := givenFlags(fs)
	if *jobs < 1 {
		return usageError{fmt.Sprintf("--jobs: %d: want at least 1", *jobs)}
	}
	if *first < 0 {
		return usageError{fmt.Sprintf("--seeds: %d: want 0 or more (0: all)", *first)}
	}
	if *first > 0 && *md != "" {
		return usageError{"--seeds with --markdown: the tables are of whole sets"}
	}
	if *simSeeds < 0 || *simSeeds > family.MaxSimSeeds {
		return usageError{fmt.Sprintf("--sim-seeds: %d: want 1..%d (0: the family's sim_seeds)", *simSeeds, family.MaxSimSeeds)}
	}
	if !*tunedOnly {
		for _, f := range []string{"baseline", "compare"} {
			if given[f] {
				return usageError{fmt.Sprintf("--%s is for --tuned-only", f)}
			}
		}
	}
	if *tunerConfig != "" && *md != "" {
		return usageError{"--tuner-config with --markdown: the tables are the policy's defaults' (docs/tuner.md); write an experiment's to --out"}
	}
	var pol *policy.Config
	if *tunerConfig != "" {
		tc, cc, err := tunerFile(*tunerConfig)
		if err != nil {
			return unreadable(err, *tunerConfig, func(err error) error { return fmt.Errorf("--tuner-config: %w", err) })
		}
		if err := tc.Policy.Validate(); err != nil {
			// One line per key, each at the file's line of its key of
			// the section, a configuration error as lhcnp tuner's is.
			return cc.Locate(errors.New("policy." + strings.ReplaceAll(err.Error(), "\n", "\npolicy.")))
		}
		pol = &tc.Policy
	}
	if *fromMD != "" {
		for _, f := range []string{"tuned-only", "markdown", "seeds", "sim-seeds", "remeasure", "jobs", "oracle", "tuner-config"} {
			if given[f] {
				return usageError{fmt.Sprintf("--csv-from-markdown runs nothing: not with --%s", f)}
			}
		}
		return csvFromMarkdown(*fromMD, fam, stdout)
	}
	if *tunedOnly {
		if *baseline == "" {
			return usageError{"--tuned-only needs --baseline FILE.csv (the static results it is measured against)"}
		}
		for _, f := range []string{"markdown", "remeasure"} {
			if given[f] {
				return usageError{fmt.Sprintf("--tuned-only runs no static setting: not with --%s", f)}
			}
		}
		return runTunedOnly(ctx, fam, given["set"], *baseline, *against, *first, *simSeeds, *jobs, *oracle, pol, stdout)
	}
	s, sets, err := fam.load()
	if err != nil {
		return err
	}
	o := compare.EvalOptions{SimSeeds: s.SimSeeds, Remeasure: *remeasure, Oracle: *oracle, TunerPolicy: pol}
	if *simSeeds > 0 {
		o.SimSeeds = *simSeeds
	}
	// The train set's one setting for every scenario, read on the test set
	// after it (compare.WriteEvalMarkdownFrom).
	var fromSet, fixed string
	start := startOf(pol, s)
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
		if err := compare.WriteEvalMarkdownStart(&b, name, rows, fromSet, fixed, start); err != nil {
			return err
		}
		printEvalBars(stdout, name, rows, max(1, o.SimSeeds), -1, start)
		if f := compare.FixedReadingOf(rows, fixed); fromSet != "" && f.OK {
			fmt.Fprintf(stdout, "%s: the %s set's one setting (%s): mean ratio %.3f, worst tenth %.3f; the tuner over it: %.3f, %.3f\n",
				name, fromSet, fixed, f.MeanRatio, f.WorstTenthRatio, f.MeanTunerOver, f.WorstTenthTunerOver)
		}
		if sum := compare.Summarise(rows); name == "train" && sum.Fixed {
			fromSet, fixed = name, sum.FixedSetting
		}
		if err := os.WriteFile(filepath.Join(*fam.out, name+".md"), b.Bytes(), 0o644); err != nil {
			return err
		}
		if err := writeEvalCSV(filepath.Join(*fam.out, name+".csv"), rows); err != nil {
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

// printEvalBars prints a set's bars (compare.Summarise) in a few lines;
// the best static setting was re-measured at simulation seed k = reK.
// With decimals ≥ 0 the best static J are stored to that many decimals
// (a table's baseline): a step scenario counts as beaten when the tuner's
// J to those decimals is below, not a tie within the rounding.
// startOf is the coarse grid's name of the tuned runs' starting point on
// the family s's node: pol's, or the policy's defaults' when pol is nil
// (compare.StartSetting), with the start's alpha for a node whose
// overload_cut is on where the family's first train scenario has it on
// (its node_params: every generated scenario has the same).
func startOf(pol *policy.Config, s *family.Spec) string {
	c := policy.DefaultConfig()
	if pol != nil {
		c = *pol
	}
	cut := false
	if train := s.Train.List(); len(train) > 0 {
		if _, _, sc, err := s.Generate("train", train[0]); err == nil {
			cut = sc.Mechanism.LongHaulCNP().OverloadCut
		}
	}
	return compare.StartSetting(c, cut)
}

func printEvalBars(w io.Writer, name string, rows []compare.EvalRow, reK, decimals int, start string) {
	sum := compare.Summarise(rows)
	beaten := fmt.Sprintf("%d of %d", sum.StepsBeaten, sum.Steps)
	if decimals >= 0 {
		n := 0
		for _, r := range rows {
			if r.Draw.IsStep() && roundTo(r.Tuner, decimals) < r.Best {
				n++
			}
		}
		beaten = fmt.Sprintf("%d of %d (J to the baseline's %d decimals)", n, sum.Steps, decimals)
	}
	fmt.Fprintf(w, "%s: %d scenarios: mean ratio %.3f, worst tenth %.3f, steps beaten %s, changes per queue per s max %.1f\n",
		name, sum.N, sum.MeanRatio, sum.WorstTenthRatio, beaten, sum.MaxChangesPerQueueS)
	if sum.SimSeeds > 1 {
		fmt.Fprintf(w, "%s: at %d simulation seeds: mean ratio ± %.3f (standard error)\n", name, sum.SimSeeds, sum.MeanRatioSE)
	} else if n := rows[0].SimSeeds; n > 1 {
		fmt.Fprintf(w, "%s: at %d simulation seeds: mean ratio ± not known (the baseline has no best static J at each seed)\n", name, n)
	}
	if sum.Remeasured {
		fmt.Fprintf(w, "%s: against the best static setting re-measured at simulation seed k = %d: mean ratio %.3f, worst tenth %.3f\n",
			name, reK, sum.MeanRemeasuredRatio, sum.WorstTenthReme)
	}
	if sum.Oracle {
		fmt.Fprintf(w, "%s: the oracle floor (the best static setting from the tuned run's first decision): mean ratio %.3f, worst tenth %.3f",
			name, sum.MeanOracleRatio, sum.WorstTenthOracle)
		if sum.Remeasured {
			fmt.Fprintf(w, "; against the best static setting re-measured: %.3f, %.3f", sum.MeanOracleRemeasured, sum.WorstTenthOracleRemeas)
		}
		fmt.Fprintln(w)
	}
	if sum.Untuned {
		fmt.Fprintf(w, "%s: the draft's defaults, untuned: mean ratio %.3f, worst tenth %.3f; the tuner over them: %.3f, %.3f\n",
			name, sum.MeanUntunedRatio, sum.WorstTenthUntuned, sum.MeanTunerOverUntuned, sum.WorstTenthOverUntd)
	}
	if sum.Fixed {
		fmt.Fprintf(w, "%s: one setting for the whole set (%s, in hindsight): mean ratio %.3f, worst tenth %.3f; the tuner over it: %.3f, %.3f\n",
			name, sum.FixedSetting, sum.MeanFixedRatio, sum.WorstTenthFixed, sum.MeanTunerOverFixed, sum.WorstTenthOverFixed)
	}
	if f := compare.FixedReadingOf(rows, start); f.OK {
		fmt.Fprintf(w, "%s: the tuner's start held from the first packet (%s): mean ratio %.3f, worst tenth %.3f; the tuner over it: %.3f, %.3f (better / equal / worse by %g: %d / %d / %d)\n",
			name, start, f.MeanRatio, f.WorstTenthRatio, f.MeanTunerOver, f.WorstTenthTunerOver, compare.Within, f.Better, f.Equal, f.Worse)
	}
}

// writeEvalCSV writes rows as the CSV file path, whole at once.
func writeEvalCSV(path string, rows []compare.EvalRow) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, 0o644, func(w io.Writer) error { return compare.WriteEvalCSV(w, rows) })
}

// readEvalCSV reads an evaluation's CSV file (isDefault: a default of
// the command line, fileSource).
func readEvalCSV(path string, isDefault bool) (*compare.EvalTable, error) {
	f, err := openSource(fileSource(path, isDefault), path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return compare.ReadEvalCSV(path, f)
}

// csvFromMarkdown writes the tables of the markdown file md (the sets
// fam's --set chose) as fam's --out DIR/<set>.csv: the committed
// baselines of scenarios/family/evals/ (their README).
func csvFromMarkdown(md string, fam *familySetFlags, stdout io.Writer) error {
	sets := []string{*fam.set}
	switch *fam.set {
	case "both":
		sets = []string{"train", "test"}
	case "train", "test":
	default:
		return usageError{fmt.Sprintf("--set: %q: want train, test or both", *fam.set)}
	}
	data, err := os.ReadFile(md)
	if err != nil {
		return err
	}
	for _, set := range sets {
		rows, err := compare.EvalRowsFromMarkdown(md, data, set)
		if err != nil {
			return err
		}
		out := filepath.Join(*fam.out, set+".csv")
		if err := writeEvalCSV(out, rows); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: %d rows (seeds %d..%d) from %s's %s table\n", out, len(rows), rows[0].Draw.Seed, rows[len(rows)-1].Draw.Seed, md, set)
	}
	return nil
}

// runTunedOnly is `sim eval --tuned-only`: the baseline's seeds (the
// first first of them; 0: all) with the tuner at n simulation seeds (0:
// the baseline's), J at the baseline's bottlenecks, the static columns the
// baseline's (compare.EvalTuned); it writes DIR/<set>.csv, prints the bars
// against the baseline's statics, and the paired comparison with the
// tuned J of the file against (default: the baseline's own).
func runTunedOnly(ctx context.Context, fam *familySetFlags, setGiven bool, baseline, against string, first, n, jobs int, oracle bool, pol *policy.Config, stdout io.Writer) error {
	s, err := fam.loadSpec()
	if err != nil {
		return err
	}
	base, err := readEvalCSV(baseline, false)
	if err != nil {
		return err
	}
	if setGiven && *fam.set != base.Set {
		return usageError{fmt.Sprintf("--set %s: the baseline %s is of the %s set", *fam.set, baseline, base.Set)}
	}
	// Every seed a development seed of the family, its draw the
	// baseline's, before anything runs.
	for i, r := range base.Rows {
		ds, err := compare.DevSpec(s, base.Set, r.Draw.Seed)
		if err == nil {
			var d family.Draw
			if d, _, _, err = ds.Generate(base.Set, r.Draw.Seed); err == nil && d.Short() != r.Scenario {
				err = fmt.Errorf("seed %d: scenario %q, the family's draw is %q (another family spec?)", r.Draw.Seed, r.Scenario, d.Short())
			}
		}
		if err != nil {
			return fmt.Errorf("baseline %s:%d: %w", baseline, base.Lines[i], err)
		}
	}
	if n == 0 {
		n = base.SimSeeds
	}
	ref, refName := base, "the baseline's own tuner column"
	if against != "" {
		if ref, err = readEvalCSV(against, false); err != nil {
			return err
		}
		refName = against
		if ref.Set != base.Set {
			return fmt.Errorf("--compare %s is of the %s set, the baseline %s of the %s set", against, ref.Set, baseline, base.Set)
		}
	}
	if ref.SimSeeds != n {
		return fmt.Errorf("N mismatch: %s's tuned J are means over %d simulation seeds, this run's over %d (--sim-seeds %d, or --compare a file at N = %d)",
			ref.File, ref.SimSeeds, n, ref.SimSeeds, n)
	}
	rows := base.Rows
	if first > 0 && first < len(rows) {
		rows = rows[:first]
	}
	old := make([]float64, len(rows))
	refAt := map[int64]int{}
	for i, r := range ref.Rows {
		refAt[r.Draw.Seed] = i
	}
	for i, r := range rows {
		j, ok := refAt[r.Draw.Seed]
		if !ok {
			return fmt.Errorf("--compare %s has no row of seed %d (baseline %s:%d)", against, r.Draw.Seed, baseline, base.Lines[i])
		}
		old[i] = ref.Rows[j].Tuner
	}
	out := filepath.Join(*fam.out, base.Set)
	got, err := compare.EvalTuned(ctx, s, base.Set, rows, out, jobs, compare.EvalOptions{SimSeeds: n, Oracle: oracle, TunerPolicy: pol},
		func(line string) { fmt.Fprintln(stdout, line) })
	if err != nil {
		return err
	}
	if err := writeEvalCSV(filepath.Join(*fam.out, base.Set+".csv"), got); err != nil {
		return err
	}
	bests := make([]float64, len(rows))
	for i, r := range rows {
		bests[i] = r.Best
	}
	printEvalBars(stdout, base.Set, got, base.SimSeeds, storedDecimals(bests), startOf(pol, s))
	newer := make([]float64, len(got))
	for i, r := range got {
		newer[i] = r.Tuner
	}
	printPaired(stdout, base.Set, baseline, refName, rows, got, old, compare.PairEval(rows, newer, old))
	return nil
}

// printPaired prints a paired comparison (compare.PairEval) of this
// run's rows got with the reference's tuned J old, on the rows of base.
func printPaired(w io.Writer, set, baseline, refName string, base, got []compare.EvalRow, old []float64, p compare.EvalPaired) {
	against := "best static J (in-sample)"
	if p.Remeasured {
		against = "best static J re-measured"
	}
	fmt.Fprintf(w, "%s: paired, %d seeds at N = %d: ratio = tuner J (mean over k = 0..%d) / the baseline's %s (%s)\n",
		set, len(base), got[0].SimSeeds, got[0].SimSeeds-1, against, baseline)
	fmt.Fprintf(w, "%s:   this run:  mean ratio %.3f, worst tenth %.3f\n", set, p.MeanNew, p.WorstNew)
	fmt.Fprintf(w, "%s:   reference: mean ratio %.3f, worst tenth %.3f (%s)\n", set, p.MeanOld, p.WorstOld, refName)
	fmt.Fprintf(w, "%s:   this run − reference: mean %s ± %.3f (paired, standard error across seeds), worst tenth %s; better / worse (a ratio moving by more than %.2f): %d / %d\n",
		set, signed(p.Diff), p.DiffSE, signed(p.WorstNew-p.WorstOld), compare.RatioMove, p.Better, p.Worse)
	same, exact := 0, 0
	for i := range got {
		if fmt.Sprintf("%.4f", got[i].Tuner) == fmt.Sprintf("%.4f", old[i]) {
			same++
		}
		if got[i].Tuner == old[i] {
			exact++
		}
	}
	fmt.Fprintf(w, "%s:   tuner J equal to the reference's to 4 decimals (the tables' digits): %d of %d", set, same, len(got))
	if storedDecimals(old) < 0 {
		fmt.Fprintf(w, "; to every digit: %d of %d", exact, len(got))
	}
	fmt.Fprintln(w)
	var moved []string
	for _, i := range p.Moved[:min(5, len(p.Moved))] {
		if math.Abs(p.New[i]-p.Old[i]) < 0.0005 {
			break // the rest print as +0.000
		}
		r := got[i]
		js := make([]string, len(r.TunerJs))
		for k, j := range r.TunerJs {
			js[k] = fmt.Sprintf("%.4f", j)
		}
		moved = append(moved, fmt.Sprintf("%s:     %d (%s): ×%.3f → ×%.3f (%s); tuner J %.4f → %.4f (k = 0..%d: %s)",
			set, r.Draw.Seed, r.Draw.Short(), p.Old[i], p.New[i], signed(p.New[i]-p.Old[i]), old[i], r.Tuner, len(js)-1, strings.Join(js, ", ")))
	}
	if len(moved) == 0 {
		fmt.Fprintf(w, "%s:   no seed's ratio moved\n", set)
		return
	}
	fmt.Fprintf(w, "%s:   moved most:\n%s\n", set, strings.Join(moved, "\n"))
}

// roundTo is x rounded to d decimals.
func roundTo(x float64, d int) float64 {
	p := math.Pow10(d)
	return math.Round(x*p) / p
}

// storedDecimals is the fewest decimals (up to 8) that hold every x as
// stored; -1: more (a run's every digit).
func storedDecimals(xs []float64) int {
	for d := 0; d <= 8; d++ {
		ok := true
		for _, x := range xs {
			ok = ok && math.Abs(roundTo(x, d)-x) < 1e-12
		}
		if ok {
			return d
		}
	}
	return -1
}

// signed is x to three decimals with its sign, +0.000 for what rounds to
// zero.
func signed(x float64) string {
	if math.Abs(x) < 0.0005 {
		return "+0.000"
	}
	return fmt.Sprintf("%+.3f", x)
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
