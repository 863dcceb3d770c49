package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"../../scenarios/compare/rtt-step.yaml", "--out", dir, "--duration", "3ms", "--no-plots",
		"--mechanisms", "dcqcn,long-haul-cnp"}
	if err := runCompare(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("runCompare: %v\nstderr: %s", err, stderr.String())
	}
	for _, f := range []string{"results.md", "results.csv", "rtt-step/dcqcn/summary.json", "rtt-step/long-haul-cnp/summary.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "results.md"))
	if !strings.Contains(string(md), "| rtt-step | long-haul-cnp |") {
		t.Errorf("results.md has no long-haul-cnp row:\n%s", md)
	}
	if err := runCompare(context.Background(), []string{"--mechanisms", "dcqcn"}, &stdout, &stderr); err == nil {
		t.Errorf("runCompare without --out succeeded")
	}
}

// TestPhasesCommand: `lhcnp sim phases` runs a step scenario at two
// phases and writes the table; bad arguments are refused with the reason.
func TestPhasesCommand(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "phases.md")
	var stdout, stderr bytes.Buffer
	args := []string{"../../scenarios/compare/rtt-step.yaml", "--out", dir, "--duration", "35ms", "--phases", "2",
		"--phase-step", "2ms", "--markdown", md}
	if err := runPhases(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("runPhases: %v\nstderr: %s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "rtt-step: tuner J") {
		t.Errorf("stdout: %q", stdout.String())
	}
	b, err := os.ReadFile(md)
	if err != nil || !strings.Contains(string(b), "| 2ms | ") {
		t.Errorf("%s: %v\n%s", md, err, b)
	}
	for _, tc := range []struct {
		desc string
		args []string
		want string
	}{
		{"no out", []string{"../../scenarios/compare/rtt-step.yaml"}, "--out DIR is required"},
		{"one phase", []string{"--out", dir, "--phases", "1"}, "want at least 2"},
		{"event after the end", []string{"../../scenarios/compare/rtt-step.yaml", "--out", dir, "--phase-step", "40ms"},
			"the rtt event on wan shifted by 40ms comes at 70ms, at or after the run's end (60ms)"},
		{"flows after the end", []string{"../../scenarios/tuner/load-step.yaml", "--out", dir, "--phases", "2", "--phase-step", "301ms"},
			"flow s3's start shifted by 301ms comes at 501ms"},
		{"bad step", []string{"--out", dir, "--phase-step", "soon"}, "soon"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := runPhases(context.Background(), tc.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestCompareMarkdownReplaced: --markdown FILE is replaced once the
// document is written whole (a temporary file in its directory, renamed),
// never emptied while the runs go on: a run that fails leaves FILE as it
// was, and no temporary file behind.
func TestCompareMarkdownReplaced(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "results.md")
	const before = "the results of the last run\n"
	if err := os.WriteFile(md, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(tuner string) []string {
		return []string{"../../scenarios/compare/rtt-step.yaml", "--out", filepath.Join(dir, "out"), "--duration", "3ms", "--no-plots",
			"--mechanisms", "dcqcn,long-haul-cnp", "--markdown", md, "--section7", "../../scenarios/section7.yaml",
			"--section7-unstaged", "", "--fabrics", "", "--validation", "", "--tuner-scenarios", tuner,
			"--held-out", "../../scenarios/family/evals/test.csv"}
	}
	left := func() []string {
		var names []string
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	var stdout, stderr bytes.Buffer
	err := runCompare(context.Background(), args("../../scenarios/no-such-tuner-scenario.yaml"), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "no-such-tuner-scenario") {
		t.Fatalf("runCompare with a missing tuner scenario: %v", err)
	}
	if b, err := os.ReadFile(md); err != nil || string(b) != before {
		t.Errorf("%s after a failed run: %q (%v), want it untouched", md, b, err)
	}
	if got := left(); !slices.Equal(got, []string{"out", "results.md"}) {
		t.Errorf("files left beside it: %v", got)
	}
	if err := runCompare(context.Background(), args(""), &stdout, &stderr); err != nil {
		t.Fatalf("runCompare: %v\nstderr: %s", err, stderr.String())
	}
	if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "| rtt-step | long-haul-cnp |") {
		t.Errorf("%s after the run: %v\n%s", md, err, b)
	}
	// The held-out read's bars beside the tuner's.
	if b, _ := os.ReadFile(md); !strings.Contains(string(b), "The tuner family's latest held-out read (`../../scenarios/family/evals/test.csv`: test seeds ") {
		t.Errorf("%s lacks the held-out read:\n%s", md, b)
	}
	bad := append(args(""), "--held-out", "no-such-read.csv")
	if err := runCompare(context.Background(), bad, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "--held-out: open no-such-read.csv") {
		t.Errorf("runCompare with a missing --held-out file: %v", err)
	}
	if got := left(); !slices.Equal(got, []string{"out", "results.md"}) {
		t.Errorf("files left beside it: %v", got)
	}
}

// TestCompareWanTuned: the flag's help lists the options' hindsight row
// and says what the suffix does; a :wan-tuned row of a mechanism it does
// not apply to is refused with its name, before any run.
func TestCompareWanTuned(t *testing.T) {
	var stdout, stderr bytes.Buffer
	_ = runCompare(context.Background(), []string{"--help"}, &stdout, &stderr) // the help goes to stderr
	for _, want := range []string{"long-haul-cnp:options:wan-tuned", "a static long-haul-cnp row with :wan-tuned appended"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("help does not say %q:\n%s", want, stderr.String())
		}
	}
	dir := t.TempDir()
	err := runCompare(context.Background(), []string{"../../scenarios/compare/rtt-step.yaml", "--out", dir, "--no-plots",
		"--mechanisms", "dcqcn,fast-cnp:wan-tuned"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "fast-cnp:wan-tuned") {
		t.Fatalf("runCompare with fast-cnp:wan-tuned: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "rtt-step", "dcqcn")); err == nil {
		t.Errorf("the baseline ran before the bad mechanism was refused")
	}
}

// TestCompareMechanismsRefused: a --mechanisms list compare.Run would not
// run to the end is the command line's mistake, refused before anything
// is loaded or run: exit status 2, one line naming the flag and its value.
// An empty list (",", "") panicked (the bars read its first name), an
// unknown name or a best-static row of another mechanism exited 1, and a
// name given twice ran both into one directory.
func TestCompareMechanismsRefused(t *testing.T) {
	out := t.TempDir()
	scen := "../../scenarios/compare/near-source-incast.yaml"
	for _, tt := range []struct {
		desc, mechs, want string
	}{
		{"comma", ",", `--mechanisms: ",": no mechanism to compare`},
		{"empty", "", `--mechanisms: "": no mechanism to compare`},
		{"twice", "dcqcn,long-haul-cnp,dcqcn", `--mechanisms: "dcqcn,long-haul-cnp,dcqcn": mechanism "dcqcn" named twice`},
		{"unknown", "dcqcn,hpcc", `--mechanisms: "dcqcn,hpcc": unknown mechanism "hpcc" (want one of: pfc, dcqcn, `},
		{"best-static of dcqcn", "dcqcn:best-static", `--mechanisms: "dcqcn:best-static": unknown mechanism "dcqcn:best-static" (:best-static applies to long-haul-cnp)`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"sim", "compare", scen, "--out", out, "--duration", "1ms", "--no-plots", "--mechanisms", tt.mechs}, &stdout, &stderr)
			if code != 2 || !strings.HasPrefix(stderr.String(), "lhcnp sim compare: "+tt.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line starting %q", code, stderr.String(), "lhcnp sim compare: "+tt.want)
			}
		})
	}
	// The names the refusal offers are every one the flag takes: the
	// tuner's rows too.
	var stdout, stderr bytes.Buffer
	run([]string{"sim", "compare", scen, "--out", out, "--mechanisms", "hpcc"}, &stdout, &stderr)
	if !strings.Contains(stderr.String(), "long-haul-cnp+tuner") {
		t.Errorf("the refusal of an unknown mechanism does not offer long-haul-cnp+tuner: %s", stderr.String())
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a refused list ran: %s holds %d entries", out, len(entries))
	}
}
