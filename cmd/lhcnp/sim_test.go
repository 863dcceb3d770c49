package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

func TestRunSim(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	scen := filepath.Join("..", "..", "scenarios", "incast-dcqcn.yaml")
	// Flags after the scenario, as people type them.
	err := runSim(context.Background(), []string{"run", scen, "--out", out, "--duration", "500us", "--seed", "3", "--no-plots"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("runSim: %v\nstderr: %s", err, stderr.String())
	}
	for _, f := range []string{"queues.csv", "rates.csv", "counters.csv", "summary.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "queues.png")); err == nil {
		t.Errorf("--no-plots wrote queues.png")
	}
	sum, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if !strings.Contains(string(sum), `"seed": 3`) || !strings.Contains(string(sum), `"duration_ns": 500000`) {
		t.Errorf("summary does not reflect --seed/--duration:\n%.300s", sum)
	}
	// stderr is a buffer, not a terminal: no progress line.
	if strings.Contains(stderr.String(), "\r") {
		t.Errorf("progress written to a pipe: %q", stderr.String())
	}
	if !strings.Contains(stdout.String(), "incast-dcqcn: dcqcn") {
		t.Errorf("stdout = %q", stdout.String())
	}
}

func TestRunSimErrors(t *testing.T) {
	bad := filepath.Join("..", "..", "dataplane-sim", "scenario", "testdata", "bad_rate_unit.yaml")
	// A tab indents a scenario's host: the error is at the tab, where
	// yaml.v3 names the line above it.
	tab := fileWriter(t, t.TempDir())("tab.yaml", "duration: 1ms\nsample_interval: 1us\ntopology:\n  hosts:\n    - {name: h1}\n\t- {name: h2}\n")
	tests := []struct {
		desc      string
		args      []string
		wantUsage bool
		wantText  string
	}{
		{"no subcommand", nil, true, "want a subcommand first: run, compare, phases, generate or eval"},
		{"unknown subcommand", []string{"walk"}, true, `unknown subcommand "walk": want run, compare, phases, generate or eval`},
		{"flags before the subcommand", []string{"--out", "d", "a.yaml"}, true, "want a subcommand first: run, compare, phases, generate or eval"},
		{"no out", []string{"run", "x.yaml"}, true, "--out"},
		{"two scenarios", []string{"run", "a.yaml", "b.yaml", "--out", "d"}, true, "exactly one"},
		{"bad duration", []string{"run", "a.yaml", "--out", "d", "--duration", "5"}, false, "no unit"},
		{"scenario error", []string{"run", bad, "--out", "d"}, false, "bad_rate_unit.yaml:8:13: topology.links[0].rate"},
		{"tab in a scenario", []string{"run", tab, "--out", "d"}, false, "tab.yaml:6:1: a tab in the indentation (YAML indents with spaces only)"},
		{"no threads", []string{"run", "a.yaml", "--out", "d", "--threads", "0"}, true, "--threads: 0: want at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := runSim(context.Background(), tt.args, &stdout, &stderr)
			if err == nil {
				t.Fatal("runSim succeeded")
			}
			var ue usageError
			if got := errors.As(err, &ue); got != tt.wantUsage {
				t.Errorf("usage error = %v, want %v (%v)", got, tt.wantUsage, err)
			}
			if !strings.Contains(err.Error()+stderr.String(), tt.wantText) {
				t.Errorf("error %q / stderr %q does not mention %q", err, stderr.String(), tt.wantText)
			}
		})
	}
	if err := runSim(context.Background(), []string{"run", "-h"}, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h = %v, want flag.ErrHelp", err)
	}
}

// TestSimDurationSaidOnce: a --duration or --phase-step the scenario
// grammar refuses names the value once, at the flag, as a variable's bad
// value is named: it said `--duration="abc": "abc" is not a duration: …`.
func TestSimDurationSaidOnce(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "run", "x.yaml", "--out", "d", "--duration", "abc"},
			`lhcnp sim run: --duration="abc": not a duration: want a number followed by a unit (ns, us, µs, ms, s)`},
		{[]string{"sim", "run", "x.yaml", "--out", "d", "--duration", "0"}, `lhcnp sim run: --duration="0": must be greater than zero`},
		{[]string{"sim", "compare", "x.yaml", "--duration", "5"}, `lhcnp sim compare: --duration="5": has no unit: want one of ns, us, µs, ms, s`},
		{[]string{"sim", "phases", "x.yaml", "--phase-step", "5x"},
			`lhcnp sim phases: --phase-step="5x": unknown duration unit "x": want one of ns, us, µs, ms, s`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code != 2 || stderr.String() != tt.want+"\n" {
			t.Errorf("%v: exit status %d, stderr\n%s\nwant exit status 2 and\n%s", tt.args, code, stderr.String(), tt.want)
		}
	}
}

// TestRunSimThreads: the two-DC scenario, cut into two partitions, writes
// the same files at --threads 1 and 2.
func TestRunSimThreads(t *testing.T) {
	scen := filepath.Join("..", "..", "scenarios", "two-dc.yaml")
	var outs [2]string
	for i, th := range []string{"1", "2"} {
		outs[i] = t.TempDir()
		var stdout, stderr bytes.Buffer
		if err := runSim(context.Background(), []string{"run", scen, "--out", outs[i], "--duration", "3ms", "--threads", th}, &stdout, &stderr); err != nil {
			t.Fatalf("--threads %s: %v\nstderr: %s", th, err, stderr.String())
		}
	}
	for _, f := range []string{"queues.csv", "rates.csv", "counters.csv", "thresholds.csv", "summary.json", "queues.png", "rates.png"} {
		a, errA := os.ReadFile(filepath.Join(outs[0], f))
		b, errB := os.ReadFile(filepath.Join(outs[1], f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between --threads 1 and 2 (%v, %v)", f, errA, errB)
		}
	}
}

// TestRunSimGenerate: `lhcnp sim generate` writes one loadable scenario per
// seed of the set; a bad family spec names its file, line and key.
func TestRunSimGenerate(t *testing.T) {
	spec := filepath.Join("..", "..", "scenarios", "family", "tuner.yaml")
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := runSim(context.Background(), []string{"generate", "--family", spec, "--set", "train", "--out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.yaml"))
	if len(files) != 48 {
		t.Errorf("%d files, want the 48 train seeds", len(files))
	}
	for _, f := range files {
		if _, err := scenario.LoadFile(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// One seed at a simulation seed: the file sim eval ran, its seeds
	// moved by the stride; a retired held-out seed too.
	one := t.TempDir()
	if err := runSim(context.Background(), []string{"generate", "--family", spec, "--seed", "3", "--sim-seed", "1", "--out", one}, &stdout, &stderr); err != nil {
		t.Fatalf("--seed 3 --sim-seed 1: %v\n%s", err, stderr.String())
	}
	if err := runSim(context.Background(), []string{"generate", "--family", spec, "--set", "test", "--seed", "1001", "--out", one}, &stdout, &stderr); err != nil {
		t.Fatalf("--set test --seed 1001 (retired): %v\n%s", err, stderr.String())
	}
	files, _ = filepath.Glob(filepath.Join(one, "*.yaml"))
	if len(files) != 2 {
		t.Errorf("--seed: files %v, want fam-train-3.yaml and fam-test-1001.yaml", files)
	}
	if b, err := os.ReadFile(filepath.Join(one, "fam-train-3.yaml")); err != nil || !strings.Contains(string(b), "\nseed: 100003\n") {
		t.Errorf("fam-train-3.yaml at simulation seed 1: %v, no `seed: 100003`:\n%s", err, b)
	}
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, bytes.Replace(data, []byte("test_seeds: {from: 25001, to: 25032}"), []byte("test_seeds: {from: 5, to: 40}"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	// The first two held-out sets, 1001-1032 and 2001-2032, were seen:
	// retired, never a test set again.
	old := filepath.Join(t.TempDir(), "old.yaml")
	if err := os.WriteFile(old, bytes.Replace(data, []byte("test_seeds: {from: 25001, to: 25032}"), []byte("test_seeds: {from: 1001, to: 1032}"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(t.TempDir(), "second.yaml")
	if err := os.WriteFile(second, bytes.Replace(data, []byte("test_seeds: {from: 25001, to: 25032}"), []byte("test_seeds: {from: 2001, to: 2032}"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "--family", bad, "--out", out}, "bad.yaml:23:13: test_seeds: 5..40 overlaps train_seeds 1..48"},
		{[]string{"generate", "--family", old, "--out", out}, "old.yaml:23:13: test_seeds: 1001..1032 overlaps retired_seeds 1001..1032"},
		{[]string{"generate", "--family", second, "--set", "test", "--out", out}, "second.yaml:23:13: test_seeds: 2001..2032 overlaps retired_seeds 2001..2032"},
		{[]string{"generate", "--family", spec, "--set", "dev", "--out", out}, `--set: "dev": want train or test`},
		{[]string{"generate", "extra", "--out", out}, `unexpected argument "extra"`},
		{[]string{"generate", "--family", spec, "--set", "test", "--seed", "25005", "--out", out}, "seed 25005 is of " + spec + "'s test_seeds 25001..25032, the fresh held-out set"},
		{[]string{"generate", "--family", spec, "--seed", "49", "--out", out}, "seed 49 is not in " + spec + "'s train_seeds 1..48"},
		{[]string{"generate", "--family", spec, "--sim-seed", "1", "--out", out}, "--sim-seed is for --seed"},
		{[]string{"eval", "--family", spec, "--out", out, "--seeds", "2", "--markdown", "x.md"}, "--seeds with --markdown"},
		{[]string{"eval", "--family", spec, "--out", out, "--sim-seeds", "21"}, "--sim-seeds: 21: want 1..20"},
		{[]string{"eval", "--family", spec, "--out", out, "--sim-seeds", "-1"}, "--sim-seeds: -1: want 1..20"},
	} {
		err := runSim(context.Background(), tt.args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("sim %v: %v, want %q", tt.args, err, tt.want)
		}
	}
}

// TestSimFileErrorExitStatus: a scenario or family file the command line
// names that cannot be read or does not load is a mistake of the
// configuration (docs/collector.md, "Exit status"): exit status 2 and the
// loader's message, naming the file, line, column and key, for every sim
// subcommand that reads one. They all exited 1, a failure of the work's
// status. A failure once the work has begun still exits 1.
func TestSimFileErrorExitStatus(t *testing.T) {
	dir := t.TempDir()
	write := fileWriter(t, dir)
	typo := write("typo.yaml", "name: t\ndurration: 1ms\nsample_interval: 10us\ntopology:\n  hosts: [{name: h1}]\n")
	empty := write("empty.yaml", "")
	missing := filepath.Join(dir, "missing.yaml")
	spec, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "family", "tuner.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	famRange := write("fam.yaml", strings.Replace(string(spec), "link_rate: {min: 10Gbps, max: 400Gbps}", "link_rate: {min: 400Gbps, max: 10Gbps}", 1))
	out := filepath.Join(dir, "out")
	for _, tt := range []struct {
		desc string
		args []string
		want string // the first line of stderr
	}{
		{"run unknown key", []string{"sim", "run", typo, "--out", out}, "lhcnp sim run: " + typo + ":1:1: duration: missing required field"},
		{"run empty", []string{"sim", "run", empty, "--out", out}, "lhcnp sim run: " + empty + ": empty scenario"},
		{"run directory", []string{"sim", "run", dir, "--out", out}, "lhcnp sim run: " + dir + ": is a directory"},
		{"run missing", []string{"sim", "run", missing, "--out", out}, "lhcnp sim run: " + missing + ": no such file or directory"},
		{"compare", []string{"sim", "compare", typo, "--out", out, "--mechanisms", "dcqcn"}, "lhcnp sim compare: " + typo + ":1:1: duration: missing required field"},
		{"phases", []string{"sim", "phases", typo, "--out", out}, "lhcnp sim phases: " + typo + ":1:1: duration: missing required field"},
		{"generate", []string{"sim", "generate", "--family", famRange, "--out", out},
			"lhcnp sim generate: " + famRange + ":10:18: link_rate: impossible range: min 400Gbps is above max 10Gbps"},
		{"generate missing", []string{"sim", "generate", "--family", missing, "--out", out}, "lhcnp sim generate: open " + missing + ": no such file or directory"},
		{"eval", []string{"sim", "eval", "--family", famRange, "--out", out},
			"lhcnp sim eval: " + famRange + ":10:18: link_rate: impossible range: min 400Gbps is above max 10Gbps"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if first, _, _ := strings.Cut(stderr.String(), "\n"); code != 2 || first != tt.want {
				t.Errorf("exit %d, stderr %q; want exit 2, first line %q", code, stderr.String(), tt.want)
			}
		})
	}
	// --out under a file: the command line's mistake, said before the
	// scenario is read (it was mkdir's error after the run had begun,
	// exit 1; TestOutNotADirectory has --out naming a file).
	ok := filepath.Join("..", "..", "scenarios", "incast-dcqcn.yaml")
	var stdout, stderr bytes.Buffer
	code := run([]string{"sim", "run", ok, "--out", filepath.Join(typo, "out"), "--duration", "100us", "--no-plots"}, &stdout, &stderr)
	if want := "lhcnp sim run: --out: stat " + filepath.Join(typo, "out") + ": not a directory"; code != 2 || !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("--out under a file: exit %d (%s), want 2 and %q", code, stderr.String(), want)
	}
}

// TestSimUsageLines: `lhcnp sim -h` lists each subcommand's usage as the
// subcommand's own -h states it, every form of it and in its words, and
// `lhcnp sim run -h` says sim run's alone. sim -h had its own copies, which
// had fallen behind (generate without --seed, eval's --set without both and
// without --jobs, compare and phases without --duration and --markdown).
func TestSimUsageLines(t *testing.T) {
	help := func(args ...string) string {
		var stdout, stderr bytes.Buffer
		if code := run(append(args, "-h"), &stdout, &stderr); code != 0 {
			t.Fatalf("%v -h: exit %d", args, code)
		}
		return stderr.String()
	}
	usageLines := func(out string) []string {
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(l, "usage: "); ok {
				lines = append(lines, rest)
			} else if rest, ok := strings.CutPrefix(l, "       lhcnp "); ok && len(lines) > 0 {
				lines = append(lines, "lhcnp "+rest)
			}
		}
		return lines
	}
	var want []string
	for _, sub := range []string{"run", "compare", "phases", "generate", "eval"} {
		own := usageLines(help("sim", sub))
		if len(own) == 0 {
			t.Fatalf("sim %s -h states no usage", sub)
		}
		for _, l := range own {
			if !strings.HasPrefix(l, "lhcnp sim "+sub+" ") {
				t.Errorf("sim %s -h: usage line %q is another command's", sub, l)
			}
		}
		want = append(want, own...)
	}
	if got := usageLines(help("sim")); !slices.Equal(got, want) {
		t.Errorf("sim -h usage lines:\n%s\nwant the subcommands' own:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRunSimListsFiles: the "wrote DIR: [...]" line names every file the
// run wrote into DIR and nothing else: tuner.csv too, written by a
// scenario with a tuner block, which the line left out. The cases run
// into one DIR in turn: a file an earlier run wrote and this one did not
// (the plots, tuner.csv) is gone, which stayed beside the new files as if
// it were theirs.
func TestRunSimListsFiles(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "tuner", "load-step.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tuned := fileWriter(t, t.TempDir())("tuned.yaml", string(data)+"\ntuner: {}\n")
	out := t.TempDir()
	for _, tt := range []struct {
		desc string
		args []string
	}{
		{"no plots", []string{filepath.Join("..", "..", "scenarios", "incast-dcqcn.yaml"), "--duration", "200us", "--no-plots"}},
		{"plots", []string{filepath.Join("..", "..", "scenarios", "incast-dcqcn.yaml"), "--duration", "200us"}},
		{"tuner", []string{tuned, "--duration", "5ms", "--no-plots"}},
		{"no tuner after the tuner's", []string{filepath.Join("..", "..", "scenarios", "incast-dcqcn.yaml"), "--duration", "200us", "--no-plots"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := runSim(context.Background(), append([]string{"run", "--out", out}, tt.args...), &stdout, &stderr); err != nil {
				t.Fatalf("runSim: %v\nstderr: %s", err, stderr.String())
			}
			entries, err := os.ReadDir(out)
			if err != nil {
				t.Fatal(err)
			}
			var written []string
			for _, e := range entries {
				written = append(written, e.Name())
			}
			_, list, _ := strings.Cut(stdout.String(), "wrote "+out+": [")
			list, _, _ = strings.Cut(list, "]")
			listed := strings.Fields(list)
			slices.Sort(listed)
			if !slices.Equal(listed, written) {
				t.Errorf("stdout lists %v, the run wrote %v\nstdout: %s", listed, written, stdout.String())
			}
		})
	}
}

// TestSimInterrupted: a sim command whose context ends (Ctrl-C, SIGTERM:
// main's signal context) says it was interrupted, not "context canceled"
// alone, and writes no run.
func TestSimInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	scen := filepath.Join("..", "..", "scenarios", "incast-dcqcn.yaml")
	for _, args := range [][]string{
		{"run", scen, "--no-plots"},
		{"compare", scen, "--mechanisms", "dcqcn", "--no-plots"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		var stdout, stderr bytes.Buffer
		err := runSim(ctx, append(args, "--out", out), &stdout, &stderr)
		if err == nil || !strings.HasPrefix(err.Error(), "interrupted: ") || !errors.Is(err, context.Canceled) {
			t.Errorf("sim %s with its context ended: %v, want interrupted: ... (context.Canceled)", args[0], err)
		}
		if _, err := os.Stat(filepath.Join(out, "summary.json")); err == nil {
			t.Errorf("sim %s wrote a summary after its context ended", args[0])
		}
	}
}
