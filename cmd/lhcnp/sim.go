package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/family"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/sim"
	"github.com/lhcnp/lhcnp/internal/cliconf"
	"github.com/lhcnp/lhcnp/internal/gcgoal"
)

// runSim implements `lhcnp sim run SCENARIO --out DIR [--duration D]
// [--seed N] [--threads N] [--no-plots]`: load and validate the scenario, run it, write
// CSV, summary.json and PNG plots into DIR. Progress is a line refreshed on
// stderr when stderr is a terminal, nothing in a pipe.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// The simulator's collector goal (internal/gcgoal): fewer cycles while
	// the live heap is small; GOGC in the environment wins.
	defer gcgoal.Start()()
	err := runSimCommand(ctx, args, stdout, stderr)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// Ctrl-C or SIGTERM (main's context): said in the user's words,
		// not the context package's alone.
		return fmt.Errorf("interrupted: %w", err)
	}
	return err
}

// runSimCommand is runSim's subcommand: sim run's own work, or another's.
func runSimCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "compare" {
		return runCompare(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "phases" {
		return runPhases(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "generate" {
		return runGenerate(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "eval" {
		return runEval(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "run" {
		simUsage(stderr, nil)
		switch {
		case len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help"):
			return flag.ErrHelp
		case len(args) == 0 || strings.HasPrefix(args[0], "-"):
			return usageError{"want a subcommand first: " + simSubcommands}
		}
		return usageError{fmt.Sprintf("unknown subcommand %q: want %s", args[0], simSubcommands)}
	}
	fs := flag.NewFlagSet("sim run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory for the output files (created if needed); required")
	var dur durationFlag
	fs.Var(&dur, "duration", "run for this `duration` instead of the scenario's own (e.g. 5ms, 1.5s)")
	seed := fs.Int64("seed", 0, "seed instead of the scenario's (generated traffic and ECN marking)")
	noPlots := fs.Bool("no-plots", false, "do not write the PNG plots")
	threads := fs.Int("threads", runtime.GOMAXPROCS(0), "goroutines for the partitions of a scenario cut into partitions (outputs do not depend on it)")
	fs.Usage = func() { simUsage(stderr, fs) }

	pos, err := cliconf.ParseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageError{fmt.Sprintf("want exactly one scenario file, got %d", len(pos))}
	}
	if err := checkOutDir(fs, *out); err != nil {
		return err
	}
	if *threads < 1 {
		return usageError{fmt.Sprintf("--threads: %d: want at least 1", *threads)}
	}
	seedSet := false
	fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
	if seedSet && (*seed < 0 || *seed > scenario.MaxSeed) {
		// The range of the file's seed, which the flag replaces.
		return usageError{fmt.Sprintf("--seed: %d: want 0..%d", *seed, int64(scenario.MaxSeed))}
	}

	var loadOpts []scenario.Option
	var runOpts []sim.Option
	if seedSet {
		loadOpts = append(loadOpts, scenario.WithSeed(*seed))
		runOpts = append(runOpts, sim.WithSeed(*seed))
	}
	sc, err := loadScenario(pos[0], loadOpts...)
	if err != nil {
		return err
	}
	if err := dur.fits(sc); err != nil {
		return err
	}
	if dur.set {
		runOpts = append(runOpts, sim.WithDuration(dur.d))
	}
	if *noPlots {
		runOpts = append(runOpts, sim.WithoutPlots())
	}
	runOpts = append(runOpts, sim.WithThreads(*threads))
	var bar *progressLine
	if isTerminal(stderr) {
		bar = &progressLine{w: stderr, name: sc.Name, start: time.Now()}
		runOpts = append(runOpts, sim.WithProgress(bar.update))
	}
	sum, err := sim.Run(ctx, sc, *out, runOpts...)
	if bar != nil {
		bar.done()
	}
	if err != nil {
		return err
	}
	for _, w := range sum.Warnings {
		fmt.Fprintf(stderr, "lhcnp sim: warning: %s\n", w)
	}
	t := sum.Totals
	fmt.Fprintf(stdout, "%s: %s, %v simulated, %d events; flows %d/%d finished, peak queue %d B, drops %d, resent %d, ECN marks %d, PFC pauses %d, Jain %.3f\n",
		sum.Scenario, sum.Mechanism, time.Duration(sum.DurationNs), sum.Events, t.FlowsFinished, t.Flows,
		t.PeakQueueBytes, t.DropPackets, t.RetransmittedPackets, t.ECNMarks, t.PFCPauseFrames, float64(t.JainFairness))
	files := []string{sim.QueuesCSV, sim.RatesCSV, sim.CountersCSV, sim.ThresholdsCSV, sim.SummaryJSON}
	if sc.Tuner != nil { // the closed loop's decisions (docs/scenarios.md, "Output files")
		files = append(files, sim.TunerCSV)
	}
	if !*noPlots {
		files = append(files, sim.QueuesPNG, sim.RatesPNG)
	}
	fmt.Fprintf(stdout, "wrote %s: %v\n", *out, files)
	return nil
}

// simSubcommands names sim's subcommands for its usage errors.
const simSubcommands = "run, compare, phases, generate or eval"

// simRunUsage is sim run's usage line (its -h's and sim -h's).
const simRunUsage = "lhcnp sim run SCENARIO --out DIR [--duration D] [--seed N] [--threads N] [--no-plots]"

// simUsage prints sim run's usage and flags (fs), or without fs sim's:
// the usage line of every subcommand, each the one its own -h prints, and
// what each does.
func simUsage(w io.Writer, fs *flag.FlagSet) {
	if fs != nil {
		fmt.Fprintln(w, "usage: "+simRunUsage)
		fmt.Fprintln(w, "\nRuns a scenario (see docs/scenarios.md) and writes queues.csv, rates.csv,")
		fmt.Fprintln(w, "counters.csv, thresholds.csv, summary.json, queues.png and rates.png into DIR,")
		fmt.Fprintln(w, "and tuner.csv when the scenario has a tuner block.")
		fmt.Fprintln(w)
		fs.PrintDefaults()
		return
	}
	for i, l := range append([]string{simRunUsage, simCompareUsage, simPhasesUsage, simGenerateUsage}, simEvalUsage[:]...) {
		if i == 0 {
			fmt.Fprintln(w, "usage: "+l)
		} else {
			fmt.Fprintln(w, "       "+l)
		}
	}
	fmt.Fprintln(w, `
  run       one scenario (docs/scenarios.md): queues.csv, rates.csv, counters.csv,
            thresholds.csv, summary.json, queues.png and rates.png into DIR
  compare   each scenario with each mechanism: results.md, results.csv and plots
  phases    the tuner's step scenarios with their steps shifted, tuned and static
  generate  the scenario files of a family's seed set (docs/tuner.md)
  eval      the tuner against the static grid on a family's seed set

Run 'lhcnp sim SUBCOMMAND -h' for a subcommand's flags.`)
}

// fileError is a file the command line names (a scenario, a family spec)
// that cannot be read or does not load: a mistake of the configuration,
// exit status 2 (docs/collector.md, "Exit status"), its message the
// loader's own (the file, line, column and key).
type fileError struct{ err error }

func (e fileError) Error() string        { return e.err.Error() }
func (e fileError) Unwrap() error        { return e.err }
func (e fileError) Is(target error) bool { return target == cliconf.ErrConfig }

// loadScenario is scenario.LoadFile for a file of the command line: its
// mistakes are the configuration's (fileError).
func loadScenario(path string, opts ...scenario.Option) (*scenario.Scenario, error) {
	sc, err := scenario.LoadFile(path, opts...)
	if err != nil {
		return nil, fileError{err}
	}
	return sc, nil
}

// loadScenarios loads the scenario files a command runs side by side
// (sim compare, sim phases), every one before the first run. Two of one
// name are refused: a scenario's runs and plots go to the directory and
// files of its name, so the second would overwrite the first's, and the
// table would hold two rows alike. defaults are the files of the
// command's defaults, not of its command line (fileSource).
func loadScenarios(files []string, defaults defaultFiles) ([]*scenario.Scenario, error) {
	var scs []*scenario.Scenario
	for i, f := range files {
		sc, err := loadDefaultScenario(f, defaults[f])
		if err != nil {
			return nil, err
		}
		if j := slices.IndexFunc(scs, func(s *scenario.Scenario) bool { return s.Name == sc.Name }); j >= 0 {
			return nil, usageError{fmt.Sprintf("%s and %s: both scenarios are named %q, and a scenario's runs are written under its name: give one another name", files[j], files[i], sc.Name)}
		}
		scs = append(scs, sc)
	}
	return scs, nil
}

// loadFamily is family.LoadFile for a file of the command line (--family;
// isDefault: its default, fileSource): its mistakes are the
// configuration's (fileError).
func loadFamily(path string, isDefault bool) (*family.Spec, error) {
	data, err := readSource(fileSource(path, isDefault), path)
	if err != nil {
		return nil, fileError{err}
	}
	s, err := family.Parse(path, data)
	if err != nil {
		return nil, fileError{err}
	}
	return s, nil
}

// flagUsage returns a usage function that prints lines, a blank line and
// fs's flags to w.
func flagUsage(w io.Writer, fs *flag.FlagSet, lines ...string) func() {
	return func() {
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
		fmt.Fprintln(w)
		fs.PrintDefaults()
	}
}

// durationFlag takes durations in the scenario grammar (10ms, 5us, 1.5s).
type durationFlag struct {
	d   time.Duration
	set bool
}

func (f *durationFlag) String() string {
	if !f.set {
		return ""
	}
	return f.d.String()
}

// fits refuses a --duration shorter than a scenario's sample_interval, as
// the loader refuses a file whose duration is: a run without a sample
// after its first.
func (f *durationFlag) fits(scs ...*scenario.Scenario) error {
	for _, sc := range scs {
		if f.set && f.d < sc.SampleInterval {
			return usageError{fmt.Sprintf("--duration: %v: shorter than the sample_interval %v of %s", f.d, sc.SampleInterval, sc.File)}
		}
	}
	return nil
}

func (f *durationFlag) Set(s string) error {
	d, err := scenario.ParseDuration(s)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("%q: must be greater than zero", s)
	}
	f.d, f.set = d, true
	return nil
}

// isTerminal reports whether w is a character device (a terminal), the
// only place a \r-refreshed line makes sense.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressLine is one status line rewritten in place, at most ten times a
// second.
type progressLine struct {
	w     io.Writer
	name  string
	start time.Time
	last  time.Time
	width int
}

func (p *progressLine) update(pr sim.Progress) {
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && pr.Now < pr.Total {
		return
	}
	p.last = now
	pct := 100 * float64(pr.Now) / float64(pr.Total)
	wall := now.Sub(p.start).Seconds()
	rate := ""
	if wall > 0 {
		rate = strconv.FormatFloat(float64(pr.Events)/wall/1e6, 'f', 1, 64) + " M events/s"
	}
	line := fmt.Sprintf("sim %s: %v / %v simulated (%.0f%%), %d events, %s", p.name, pr.Now, pr.Total, pct, pr.Events, rate)
	pad := max(p.width-len(line), 0)
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%*s", line, pad, "")
}

func (p *progressLine) done() {
	if p.width > 0 {
		fmt.Fprintln(p.w)
	}
}

// checkOutDir checks the --out of a command that writes a directory:
// required (the usage printed), and not something other than a directory
// (a file, a link to one): the command line's mistake, exit status 2, said
// before anything runs (it was mkdir's error, exit 1, after the scenario
// was read). A path that does not exist yet is created by the run.
func checkOutDir(fs *flag.FlagSet, out string) error {
	if out == "" {
		fs.Usage()
		return usageError{"--out DIR is required"}
	}
	fi, err := os.Stat(out)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return usageError{fmt.Sprintf("--out: %v", err)}
	case !fi.IsDir():
		return usageError{fmt.Sprintf("--out: %s: not a directory", out)}
	}
	return nil
}
