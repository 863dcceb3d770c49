package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lhcnp/lhcnp/dataplane-sim/compare"
	"github.com/lhcnp/lhcnp/dataplane-sim/refsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/sim"
	"github.com/lhcnp/lhcnp/internal/atomicfile"
	"github.com/lhcnp/lhcnp/internal/cliconf"
)

// defaultFabricScenarios are the generated fabrics of the results
// document (--fabrics): the small variant of the two-DC benchmark.
var defaultFabricScenarios = []string{"scenarios/fabric/two-dc-k4.yaml"}

// docInputs are the files --markdown runs after the comparison, loaded
// and checked (as Run, RunSection7 and RunLongHaulReport would refuse
// them) before the comparison's first run: a bad one came after minutes
// of runs.
type docInputs struct {
	section7 *scenario.Scenario
	unstaged *scenario.Scenario // nil for none
	// tuner are the §7 scenario (a copy of its own) and the tuner's
	// step scenarios, from tunerFiles.
	tuner       []*scenario.Scenario
	tunerFiles  []string
	fabrics     []*scenario.Scenario // from fabricFiles; none for no section
	fabricOpts  compare.Options
	fabricFiles []string
}

// loadDocInputs loads and checks the files of --markdown's runs: the §7
// scenario, the unstaged one ("" for none), the tuner's scenarios (with
// the §7 one, run with compare.TunerMechanisms) and the fabrics (run with
// fabricMechs), each run with opts as the comparison's, and the stored
// reference summaries of --validation (valRef, "" for none).
// defaults are those of the files that are the command's defaults.
func loadDocInputs(s7, s7u string, tunerFiles, fabricFiles, fabricMechs []string, valRef, valScenarios string,
	dur durationFlag, opts compare.Options, defaults defaultFiles) (*docInputs, error) {
	in := &docInputs{tunerFiles: append([]string{s7}, tunerFiles...), fabricFiles: fabricFiles}
	if valRef != "" {
		if err := refsim.CheckAllStored(valRef, valScenarios, validationSources(valRef, valScenarios, defaults)...); err != nil {
			return nil, fileError{fmt.Errorf("--validation: %w", err)}
		}
	}
	var err error
	if in.section7, err = loadDefaultScenario(s7, defaults[s7]); err != nil {
		return nil, err
	}
	if err := sim.CheckSection7(in.section7); err != nil {
		return nil, fileError{fmt.Errorf("--section7: %s: %w", s7, err)}
	}
	if s7u != "" {
		if in.unstaged, err = loadDefaultScenario(s7u, defaults[s7u]); err != nil {
			return nil, err
		}
		if err := sim.CheckLongHaulReport(in.unstaged); err != nil {
			return nil, fileError{fmt.Errorf("--section7-unstaged: %s: %w", s7u, err)}
		}
	}
	if in.tuner, err = loadScenarios(in.tunerFiles, defaults); err != nil {
		return nil, err
	}
	if err := dur.fits(in.tuner...); err != nil {
		return nil, err
	}
	topts := opts
	topts.Mechanisms = compare.TunerMechanisms
	if err := compare.Check(in.tuner, topts); err != nil {
		return nil, err
	}
	if len(fabricFiles) == 0 {
		return in, nil
	}
	if in.fabrics, err = loadScenarios(fabricFiles, defaults); err != nil {
		return nil, err
	}
	if err := dur.fits(in.fabrics...); err != nil {
		return nil, err
	}
	in.fabricOpts = opts
	in.fabricOpts.Mechanisms = fabricMechs
	if err := compare.Check(in.fabrics, in.fabricOpts); err != nil {
		return nil, err
	}
	return in, nil
}

// fabricRuns compares the fabric scenarios scs (of files) with o for the
// results document, in outDir/fabrics, copying the plot the document shows
// (the FCT slowdown by class) into plotDir; nil for no scenarios.
func fabricRuns(ctx context.Context, scs []*scenario.Scenario, files []string, outDir, plotDir string, o compare.Options) (*compare.FabricDoc, error) {
	if len(scs) == 0 {
		return nil, nil
	}
	var infos []compare.ScenarioInfo
	for i, sc := range scs {
		infos = append(infos, compare.ScenarioInfo{Name: sc.Name, File: files[i], Description: sc.Description})
	}
	dir := filepath.Join(outDir, "fabrics")
	res, err := compare.Run(ctx, scs, dir, o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(plotDir, 0o755); err != nil {
		return nil, err
	}
	for _, p := range res.Plots {
		if !strings.HasSuffix(p, "-fabric-fct.png") {
			continue // the document shows this one; the others stay in outDir
		}
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(plotDir, p), b, 0o644); err != nil {
			return nil, err
		}
	}
	return &compare.FabricDoc{Result: res, Scenarios: infos}, nil
}

// simCompareUsage is sim compare's usage line (its -h's and sim -h's).
const simCompareUsage = "lhcnp sim compare [SCENARIO...] --out DIR [--mechanisms LIST] [--duration D] [--no-plots] [--markdown FILE]"

// defaultCompareScenarios are compared when no file is given.
var defaultCompareScenarios = []string{
	"scenarios/compare/near-source-incast.yaml",
	"scenarios/compare/mid-wan.yaml",
	"scenarios/compare/far-end.yaml",
	"scenarios/compare/two-node-congestion.yaml",
	"scenarios/compare/rtt-step.yaml",
	"scenarios/compare/websearch-30.yaml",
	"scenarios/compare/websearch-50.yaml",
	"scenarios/compare/websearch-70.yaml",
}

// runCompare implements `lhcnp sim compare [SCENARIO...] --out DIR
// [--mechanisms dcqcn,long-haul-cnp,...] [--duration D] [--no-plots]
// [--markdown FILE [--section7 FILE] [--section7-unstaged FILE]]`: every scenario with every
// mechanism, a table (results.md, results.csv) and plots in DIR. With
// --markdown it also runs the §7 example (staged and unstaged) and writes the full results
// document (docs/results.md), copying the plots next to it.
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory for the runs, the table and the plots (created if needed); required")
	mechs := fs.String("mechanisms", "dcqcn,"+strings.Join(slices.DeleteFunc(compare.DefaultMechanisms(), func(s string) bool { return s == "dcqcn" }), ","),
		"mechanisms to compare, comma-separated; the first is the baseline ("+strings.Join(compare.DefaultMechanisms(), ", ")+
			"; a static long-haul-cnp row with "+compare.WanTunedSuffix+" appended has its alpha and V_growth chosen per scenario as dcqcn"+compare.WanTunedSuffix+" chooses its thresholds)")
	var dur durationFlag
	fs.Var(&dur, "duration", "run every scenario for this `duration` instead of its own")
	noPlots := fs.Bool("no-plots", false, "do not write the PNG plots (an earlier comparison's plots of the same scenarios in DIR are removed)")
	md := fs.String("markdown", "", "also write the results document to this file (plots go to a directory named after it)")
	s7 := fs.String("section7", "scenarios/section7.yaml", "the §7 scenario for --markdown")
	tunerFiles := fs.String("tuner-scenarios", strings.Join(defaultTunerScenarios, ","),
		"the tuner's step scenarios for --markdown (with the §7 scenario), comma-separated")
	s7u := fs.String("section7-unstaged", "scenarios/section7-unstaged.yaml", "the unstaged §7 run for --markdown (\"\" for none)")
	heldOut := fs.String("held-out", "scenarios/family/evals/test.csv",
		"the tuner family's latest held-out read (an evaluation's CSV file) whose bars --markdown quotes beside the tuner's (\"\" for none)")
	fabricFiles := fs.String("fabrics", strings.Join(defaultFabricScenarios, ","),
		"scenarios on generated fabrics for --markdown, comma-separated (\"\" for none): their own section")
	fabricMechs := fs.String("fabric-mechanisms", "dcqcn,long-haul-cnp", "the mechanisms of the --fabrics runs")
	valRef := fs.String("validation", "dataplane-sim/refsim/testdata/ref",
		"the stored reference-simulator summaries for --markdown (\"\" for none): how far our DCQCN is from the reference, a column of the tables")
	valScenarios := fs.String("validation-scenarios", "scenarios/refsim", "the scenario files of --validation")
	fs.Usage = flagUsage(stderr, fs,
		"usage: "+simCompareUsage,
		"",
		"Runs each scenario with each mechanism and writes results.md, results.csv (and",
		"fabrics.md for generated fabrics) and <scenario>-queue.png / -rate.png into DIR.",
		"Without scenarios: "+strings.Join(defaultCompareScenarios, " "),
		defaultFilesNote(fs))
	files, err := cliconf.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := checkOutDir(fs, *out); err != nil {
		return err
	}
	// The mechanisms are the command line's: a list compare.Run would
	// refuse (or, empty, take for its defaults while the bars below read
	// its first name) is a usage error before anything is read or run.
	mechList := splitList(*mechs)
	if err := compare.CheckMechanisms(mechList, nil); err != nil {
		return usageError{fmt.Sprintf("--mechanisms: %q: %v", *mechs, err)}
	}
	given := files // the document names them; not the defaults
	var defaults defaultFiles
	if len(files) == 0 {
		files = defaultCompareScenarios
		defaults = defaults.add(files...)
	}
	defaults = defaults.addFlags(fs, "section7", "section7-unstaged", "tuner-scenarios", "fabrics", "held-out", "validation", "validation-scenarios")
	// The held-out read is read before any run: a bad file costs nothing.
	var held *compare.EvalTable
	if *md != "" && *heldOut != "" {
		if held, err = readEvalCSV(*heldOut, defaults[*heldOut]); err != nil {
			return fmt.Errorf("--held-out: %w", err)
		}
	}
	scs, err := loadScenarios(files, defaults)
	if err != nil {
		return err
	}
	if err := dur.fits(scs...); err != nil {
		return err
	}
	opts := compare.Options{Mechanisms: mechList, Plots: !*noPlots}
	if dur.set {
		opts.Duration = dur.d
	}
	if isTerminal(stderr) {
		opts.Progress = func(sc, m string) { fmt.Fprintf(stderr, "compare: %s with %s\n", sc, m) }
	}
	// Refused before --out is made: nothing of this comparison is written.
	if err := compare.Check(scs, opts); err != nil {
		mechsGiven := false
		fs.Visit(func(f *flag.Flag) { mechsGiven = mechsGiven || f.Name == "mechanisms" })
		if errors.Is(err, compare.ErrNoNodes) && !mechsGiven {
			// The user did not choose it: say how to leave it out.
			return fmt.Errorf("%w; it is one of the default mechanisms: --mechanisms chooses others", err)
		}
		return err
	}
	var in *docInputs
	if *md != "" {
		if in, err = loadDocInputs(*s7, *s7u, splitList(*tunerFiles), splitList(*fabricFiles), splitList(*fabricMechs), *valRef, *valScenarios, dur, opts, defaults); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	res, err := compare.Run(ctx, scs, *out, opts)
	if err != nil {
		return err
	}
	if err := res.WriteFiles(*out); err != nil {
		return err
	}
	var sets []compare.BarSet
	for _, cand := range []string{"long-haul-cnp", "long-haul-cnp" + compare.DefaultsSuffix} {
		bars, err := res.Bars("near-source-incast", opts.Mechanisms[0], cand)
		if err != nil {
			continue // not among the runs
		}
		sets = append(sets, compare.BarSet{Title: fmt.Sprintf("%s against %s, near-source-incast", cand, opts.Mechanisms[0]), Bars: bars})
		held := 0
		for _, b := range bars {
			if b.Holds {
				held++
			}
		}
		fmt.Fprintf(stdout, "near-source-incast: %s holds %d of %d bars against %s\n", cand, held, len(bars), opts.Mechanisms[0])
	}
	tunerSets := tunerBars(stdout, res, scs, false)
	fmt.Fprintf(stdout, "wrote %s: %s, %d plots, %d runs\n", *out, strings.Join(res.TableFiles(), ", "), len(res.Plots), len(res.Rows))
	if *md == "" {
		return nil
	}

	r7, err := sim.RunSection7(ctx, in.section7, filepath.Join(*out, in.section7.Name), sim.WithoutPlots())
	if err != nil {
		return err
	}
	steps := r7.Steps()
	var unstaged []string
	if scu := in.unstaged; scu != nil {
		ru, err := sim.RunLongHaulReport(ctx, scu, filepath.Join(*out, scu.Name), sim.WithoutPlots())
		if err != nil {
			return err
		}
		unstaged = ru.Lines()
	}
	plotDir := strings.TrimSuffix(*md, filepath.Ext(*md))
	if len(res.Plots) > 0 {
		if err := os.MkdirAll(plotDir, 0o755); err != nil {
			return err
		}
		for _, p := range res.Plots {
			b, err := os.ReadFile(filepath.Join(*out, p))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(plotDir, p), b, 0o644); err != nil {
				return err
			}
		}
	}
	td, err := tunerDoc(ctx, stdout, stderr, res, tunerSets, in.tuner, in.tunerFiles, files, *out, opts)
	if err != nil {
		return err
	}
	if held != nil {
		td.HeldOut, td.HeldOutFile = held.Rows, *heldOut
	}
	fab, err := fabricRuns(ctx, in.fabrics, in.fabricFiles, *out, plotDir, in.fabricOpts)
	if err != nil {
		return err
	}
	if *valRef != "" {
		stored, err := refsim.CompareAllStored(*valRef, *valScenarios, validationSources(*valRef, *valScenarios, defaults)...)
		if err != nil {
			return err
		}
		d := refsim.DistanceOfDCQCN(stored)
		ref := &compare.DCQCNRef{Cell: d.Cell(), FCT: d.FCTCell(), Paper: refsim.PaperCell, Footnote: d.Footnote()}
		res.DCQCNRef = ref
		if fab != nil && fab.Result != nil {
			fab.Result.DCQCNRef = ref
		}
	}
	var variants []compare.Variant
	for _, m := range opts.Mechanisms {
		if v, err := compare.LookupVariant(m); err == nil {
			variants = append(variants, v)
		}
	}
	var infos []compare.ScenarioInfo
	for i, sc := range scs {
		infos = append(infos, compare.ScenarioInfo{Name: sc.Name, File: files[i], Description: sc.Description})
	}
	doc := compare.Doc{Result: res, BarSets: sets, Section7: steps, Section7Scenario: *s7, Tuner: td,
		Unstaged: unstaged, UnstagedScenario: *s7u, Variants: variants, Scenarios: infos,
		Reference: "long-haul-cnp", Reading: compare.Reading(res, "long-haul-cnp"),
		PlotDir: filepath.Base(plotDir), Command: regenCommand(fs, "lhcnp sim compare", []string{"out", "markdown"}, given), Fabric: fab}
	// Replaced whole at the end: while the runs go on, and when one fails,
	// the file holds the last results, not an empty document.
	if err := atomicfile.Write(*md, 0o644, func(w io.Writer) error { return compare.WriteDocument(w, doc) }); err != nil {
		return err
	}
	ok := 0
	for _, s := range steps {
		if s.OK {
			ok++
		}
	}
	fmt.Fprintf(stdout, "section7: %d of %d steps as the draft tells; wrote %s\n", ok, len(steps), *md)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// regenCommand is the command line that writes a --markdown document again:
// cmd, the flags named in first with their values whether set or not (the
// shipped documents' own words), every other flag the command line set, in
// fs's order, and the files given. A document states it under "Generated
// by": without the flags and files that changed its runs (--duration,
// --mechanisms, the scenarios) it named a command that writes another
// document.
func regenCommand(fs *flag.FlagSet, cmd string, first []string, files []string) string {
	words := []string{cmd}
	add := func(f *flag.Flag) {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() && f.Value.String() == "true" {
			words = append(words, "--"+f.Name)
			return
		}
		words = append(words, "--"+f.Name, shellWord(f.Value.String()))
	}
	for _, name := range first {
		add(fs.Lookup(name))
	}
	fs.Visit(func(f *flag.Flag) {
		if !slices.Contains(first, f.Name) {
			add(f)
		}
	})
	for _, f := range files {
		words = append(words, shellWord(f))
	}
	return strings.Join(words, " ")
}

// shellWord quotes s for a POSIX shell when it holds anything but the
// characters of paths, lists and values.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:,=+@%-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
