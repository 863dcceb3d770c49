package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/compare"
)

// writeFamily writes dataplane-sim/compare's tiny family (runs of
// milliseconds of simulated time, train seeds 1..2) with sets, the lines
// of its held-out and retired sets, in place of its test_seeds.
func writeFamily(t *testing.T, dir, name, sets string) string {
	t.Helper()
	b, err := os.ReadFile("../../dataplane-sim/compare/testdata/tiny-family.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`(?m)^test_seeds:.*\n`).ReplaceAllString(string(b), sets)
	if n := strings.Count(text, "test_seeds"); n != 1 {
		t.Fatalf("tiny-family.yaml with %q: %d test_seeds lines", sets, n)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// evalTinyTrain writes the tiny family into dir (test seeds 5..6) and runs
// the full evaluation of its first train seed with extra flags into
// dir/full; it returns the family file, that directory and what it
// printed.
func evalTinyTrain(t *testing.T, dir string, extra ...string) (fam, full, printed string) {
	t.Helper()
	fam = writeFamily(t, dir, "tiny.yaml", "test_seeds: {from: 5, to: 6}\n")
	full = filepath.Join(dir, "full")
	var stdout, stderr bytes.Buffer
	args := append([]string{"--family", fam, "--set", "train", "--seeds", "1", "--out", full}, extra...)
	if err := runEval(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("sim eval %v: %v\n%s", extra, err, stderr.String())
	}
	return fam, full, stdout.String()
}

func readTable(t *testing.T, path string) *compare.EvalTable {
	t.Helper()
	tab, err := readEvalCSV(path, false)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestEvalTunedOnly: `sim eval` writes its rows as OUT/<set>.csv; the
// tuned runs alone (--tuned-only) against that file reproduce its tuner
// J at every simulation seed to the last digit, keep its static columns,
// and print the bars and the paired comparison (nothing moved); a seed of
// a retired held-out set is run as the full evaluation ran it while it
// was the test set.
func TestEvalTunedOnly(t *testing.T) {
	dir := t.TempDir()
	// While 5..6 was the held-out set.
	before := writeFamily(t, dir, "before.yaml", "test_seeds: {from: 5, to: 6}\n")
	// After: retired, 3..4 the fresh set.
	after := writeFamily(t, dir, "after.yaml", "test_seeds: {from: 3, to: 4}\nretired_seeds:\n  - {from: 5, to: 6}\n")
	ctx := context.Background()
	full := filepath.Join(dir, "full")
	var stdout, stderr bytes.Buffer
	if err := runEval(ctx, []string{"--family", before, "--set", "both", "--seeds", "1", "--sim-seeds", "2", "--jobs", "2", "--out", full}, &stdout, &stderr); err != nil {
		t.Fatalf("sim eval: %v\n%s", err, stderr.String())
	}
	// Both sets: the train set's one setting for every scenario is read
	// on the test set too.
	if !strings.Contains(stdout.String(), "test: the train set's one setting (alpha=") {
		t.Errorf("no train setting read on the test set in:\n%s", stdout.String())
	}
	for _, set := range []string{"train", "test"} {
		t.Run(set, func(t *testing.T) {
			base := readTable(t, filepath.Join(full, set+".csv"))
			if len(base.Rows) != 1 || base.SimSeeds != 2 || len(base.Rows[0].TunerJs) != 2 || len(base.Rows[0].BestJs) != 2 {
				t.Fatalf("the full evaluation's %s.csv: %d rows at N = %d: %+v", set, len(base.Rows), base.SimSeeds, base.Rows)
			}
			out := filepath.Join(dir, "tuned-"+set)
			stdout.Reset()
			if err := runEval(ctx, []string{"--tuned-only", "--baseline", filepath.Join(full, set+".csv"), "--family", after, "--out", out}, &stdout, &stderr); err != nil {
				t.Fatalf("--tuned-only: %v\n%s", err, stderr.String())
			}
			got := readTable(t, filepath.Join(out, set+".csv"))
			b, g := base.Rows[0], got.Rows[0]
			if g.Tuner != b.Tuner || g.TunerSE != b.TunerSE || g.TunerJs[0] != b.TunerJs[0] || g.TunerJs[1] != b.TunerJs[1] {
				t.Errorf("tuner J %v (k: %v), the full evaluation's %v (k: %v)", g.Tuner, g.TunerJs, b.Tuner, b.TunerJs)
			}
			if g.ChangesPerQueuePerSec != b.ChangesPerQueuePerSec || g.Confirmed != b.Confirmed || g.RolledBack != b.RolledBack {
				t.Errorf("changes %v (%d / %d), the full evaluation's %v (%d / %d)", g.ChangesPerQueuePerSec, g.Confirmed, g.RolledBack,
					b.ChangesPerQueuePerSec, b.Confirmed, b.RolledBack)
			}
			var a, c bytes.Buffer
			if err := compare.WriteEvalCSV(&a, base.Rows); err != nil {
				t.Fatal(err)
			}
			if err := compare.WriteEvalCSV(&c, got.Rows); err != nil {
				t.Fatal(err)
			}
			if a.String() != c.String() {
				t.Errorf("--tuned-only's %s.csv:\n%s\nthe full evaluation's:\n%s", set, c.String(), a.String())
			}
			for _, want := range []string{
				set + ": 1 scenarios: mean ratio",
				"paired, 1 seeds at N = 2: ratio = tuner J (mean over k = 0..1) / the baseline's best static J re-measured",
				"this run − reference: mean +0.000 ± 0.000",
				"better / worse (a ratio moving by more than 0.02): 0 / 0",
				"tuner J equal to the reference's to 4 decimals (the tables' digits): 1 of 1; to every digit: 1 of 1",
				"no seed's ratio moved",
			} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}

			// Against another policy's file whose tuner J was 1.5 times
			// this one's: the seed got better by a third of its ratio.
			other := base.Rows
			other[0].Tuner *= 1.5
			worse := filepath.Join(dir, "worse-"+set+".csv")
			if err := writeEvalCSV(worse, other); err != nil {
				t.Fatal(err)
			}
			stdout.Reset()
			if err := runEval(ctx, []string{"--tuned-only", "--baseline", filepath.Join(full, set+".csv"), "--compare", worse, "--family", after, "--out", out}, &stdout, &stderr); err != nil {
				t.Fatalf("--tuned-only --compare: %v\n%s", err, stderr.String())
			}
			ratio := g.Tuner / g.Remeasured
			for _, want := range []string{
				fmt.Sprintf("reference: mean ratio %.3f, worst tenth %.3f (%s)", 1.5*ratio, 1.5*ratio, worse),
				fmt.Sprintf("this run − reference: mean %+.3f ± 0.000", -0.5*ratio),
				"better / worse (a ratio moving by more than 0.02): 1 / 0",
				"to every digit: 0 of 1",
				fmt.Sprintf("moved most:\n%s:     %d (%s): ×%.3f → ×%.3f", set, g.Draw.Seed, g.Scenario, 1.5*ratio, ratio),
			} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
		})
	}
}

// TestEvalTunedOnlyErrors: what --tuned-only refuses, each before any
// run, with the file, line and column, or the seed, at fault.
func TestEvalTunedOnlyErrors(t *testing.T) {
	dir := t.TempDir()
	fam := writeFamily(t, dir, "tiny.yaml", "test_seeds: {from: 3, to: 4}\nretired_seeds:\n  - {from: 5, to: 6}\n")
	head := "set,seed,scenario,bottleneck,sim_seeds,tuner_j,tuner_se,tuner_j_k0,coarse_j,coarse_setting,best_j,best_se,best_setting,best_j_k0,remeasured_j,changes_per_queue_s,changes_per_cycle,confirmed,rolled_back\n"
	row := func(set, seed, scenario string) string {
		return set + "," + seed + "," + scenario + ",n1→n2,1,0.5,0,,0.4,\"alpha=1,v_growth=1Gbps\",0.4,0,\"alpha=1,v_growth=1Gbps\",,0.41,10,0.1,1,0\n"
	}
	draw := "near-source 10Gbps RTT 500µs 2:1 none v4 +web 20%"
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good.csv", head+row("train", "1", draw))
	for _, tt := range []struct {
		desc string
		args []string
		want string
	}{
		{"no baseline", []string{"--tuned-only"}, "--tuned-only needs --baseline FILE.csv"},
		{"a baseline without --tuned-only", []string{"--baseline", good}, "--baseline is for --tuned-only"},
		{"with --markdown", []string{"--tuned-only", "--baseline", good, "--markdown", "x.md"}, "--tuned-only runs no static setting: not with --markdown"},
		{"a missing file", []string{"--tuned-only", "--baseline", filepath.Join(dir, "none.csv")}, "none.csv: no such file"},
		{"a bad cell", []string{"--tuned-only", "--baseline", file("bad.csv", head+strings.Replace(row("train", "1", draw), ",0.5,", ",half,", 1))},
			`bad.csv:2: column 6 (tuner_j): "half" is not a number`},
		{"a seed not in the set", []string{"--tuned-only", "--baseline", file("seed.csv", head+row("train", "1", draw)+row("train", "9", draw))},
			"seed.csv:3: seed 9 is not in " + fam + "'s train_seeds 1..2"},
		{"the fresh held-out set", []string{"--tuned-only", "--baseline", file("fresh.csv", head+row("test", "3", draw))},
			"fresh.csv:2: seed 3 is of " + fam + "'s test_seeds 3..4, the fresh held-out set"},
		{"another family's draw", []string{"--tuned-only", "--baseline", file("draw.csv", head+row("train", "1", "far-end 10Gbps"))},
			`draw.csv:2: seed 1: scenario "far-end 10Gbps", the family's draw is "` + draw + `"`},
		{"N mismatch", []string{"--tuned-only", "--baseline", good, "--sim-seeds", "2"},
			"N mismatch: " + good + "'s tuned J are means over 1 simulation seeds, this run's over 2"},
		{"a comparison without the seed", []string{"--tuned-only", "--baseline", good, "--compare", file("other.csv", head+row("train", "2", draw))},
			"other.csv has no row of seed 1 (baseline " + good + ":2)"},
		{"another set", []string{"--tuned-only", "--baseline", good, "--set", "test"}, "--set test: the baseline " + good + " is of the train set"},
		{"a tuner file with an unknown key", []string{"--tuned-only", "--baseline", good, "--tuner-config", file("key.yaml", "policy:\n  rulez_off: []\n")},
			"key.yaml:2:3: unknown key policy.rulez_off"},
		{"a tuner file with a bad policy", []string{"--tuned-only", "--baseline", good, "--tuner-config", file("value.yaml", "policy:\n  alpha_start: -3\n")},
			"value.yaml:2:16: policy.alpha_start: -3 is neither 0 nor an alpha"},
		{"a tuner file with --markdown", []string{"--tuner-config", file("md.yaml", "policy:\n  alpha_start: 0.7\n"), "--markdown", "x.md"},
			"--tuner-config with --markdown: the tables are the policy's defaults'"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--family", fam, "--out", filepath.Join(dir, "out")}, tt.args...)
			err := runEval(context.Background(), args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
			if strings.Contains(stdout.String(), "seed") {
				t.Errorf("ran before refusing:\n%s", stdout.String())
			}
		})
	}
}

// TestEvalBaselinesFromDocs: the committed development baselines
// (scenarios/family/evals/) are docs/tuner.md's tables as
// --csv-from-markdown writes them, byte for byte: `make tuner-baselines`
// after every table change keeps them so.
func TestEvalBaselinesFromDocs(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := runEval(context.Background(), []string{"--csv-from-markdown", "../../docs/tuner.md", "--set", "both", "--out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, set := range []string{"train", "test"} {
		got, err := os.ReadFile(filepath.Join(out, set+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		committed := filepath.Join("..", "..", "scenarios", "family", "evals", set+".csv")
		want, err := os.ReadFile(committed)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not docs/tuner.md's %s table (run `make tuner-baselines`):\n%s", committed, set, got)
		}
		tab := readTable(t, committed)
		if tab.Set != set || tab.SimSeeds != 3 || tab.Rows[0].TunerJs != nil {
			t.Errorf("%s: set %s at N = %d, per-seed J %v; want %s at 3, none (the tables print means)", committed, tab.Set, tab.SimSeeds, tab.Rows[0].TunerJs, set)
		}
	}
	if err := runEval(context.Background(), []string{"--csv-from-markdown", "../../docs/tuner.md", "--set", "both", "--out", out, "--jobs", "2"}, &stdout, &stderr); err == nil ||
		!strings.Contains(err.Error(), "--csv-from-markdown runs nothing: not with --jobs") {
		t.Errorf("--csv-from-markdown with --jobs: %v", err)
	}
}

// TestEvalOracle: `sim eval --oracle` runs each seed's oracle floor, the
// best static setting set at the tuned run's first decision on each queue
// (its tuner.csv: one rule fixed change per queue, to the row's best
// setting, and nothing else), writes its columns and bars, and the tuned
// runs alone with --oracle against that file measure the same J at every
// simulation seed.
func TestEvalOracle(t *testing.T) {
	dir := t.TempDir()
	fam, full, printed := evalTinyTrain(t, dir, "--sim-seeds", "2", "--oracle")
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	stdout.WriteString(printed)
	base := readTable(t, filepath.Join(full, "train.csv"))
	b := base.Rows[0]
	if !b.HasOracle() || len(b.OracleJs) != 2 || !(b.Oracle > 0) {
		t.Fatalf("the oracle floor not in train.csv: %+v", b)
	}
	if !strings.Contains(stdout.String(), "train: the oracle floor (the best static setting from the tuned run's first decision): mean ratio ") {
		t.Errorf("stdout lacks the oracle's bars:\n%s", stdout.String())
	}
	md, err := os.ReadFile(filepath.Join(full, "train.md"))
	if err != nil || !strings.Contains(string(md), "| the oracle floor") {
		t.Errorf("train.md lacks the oracle's line: %v\n%s", err, md)
	}
	matches, _ := filepath.Glob(filepath.Join(full, "train", "*", "long-haul-cnp"+compare.OracleSuffix, "tuner.csv"))
	if len(matches) != 1 {
		t.Fatalf("the oracle's tuner.csv at k = 0: found %v", matches)
	}
	csvText, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csvText)), "\n")[1:]
	if len(lines) == 0 {
		t.Fatal("the oracle's tuner.csv has no decision")
	}
	alpha, vg, _ := strings.Cut(strings.TrimPrefix(b.BestSetting, "alpha="), ",v_growth=")
	for _, l := range lines {
		// rule, alpha and V_growth (bytes per second): columns 5, 18, 20.
		f := strings.Split(l, ",")
		if f[4] != "fixed" || f[17] != alpha {
			t.Errorf("oracle decision %s: want rule fixed only, alpha %s (the best setting %s)", l, alpha, b.BestSetting)
		}
		if v, want := f[19], vg; want == "off" && v != "0" {
			t.Errorf("oracle decision %s: V_growth %s, want 0 (the best setting %s)", l, v, b.BestSetting)
		}
	}
	out := filepath.Join(dir, "tuned")
	stdout.Reset()
	if err := runEval(ctx, []string{"--tuned-only", "--oracle", "--baseline", filepath.Join(full, "train.csv"), "--family", fam, "--out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("--tuned-only --oracle: %v\n%s", err, stderr.String())
	}
	g := readTable(t, filepath.Join(out, "train.csv")).Rows[0]
	if g.Oracle != b.Oracle || g.OracleJs[0] != b.OracleJs[0] || g.OracleJs[1] != b.OracleJs[1] {
		t.Errorf("--tuned-only's oracle J %v (k: %v), the full evaluation's %v (k: %v)", g.Oracle, g.OracleJs, b.Oracle, b.OracleJs)
	}
}

// TestEvalTunerConfig: --tuner-config gives the tuned runs the policy
// section of a tuner configuration file: the same seed's tuned run starts
// its queues at the file's alpha_start, where without it they start at the
// default's.
func TestEvalTunerConfig(t *testing.T) {
	dir := t.TempDir()
	fam, full, _ := evalTinyTrain(t, dir)
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	starts := func(out string) map[string]int {
		t.Helper()
		files, _ := filepath.Glob(filepath.Join(out, "train", "*", "long-haul-cnp+tuner", "tuner.csv"))
		if len(files) != 1 {
			t.Fatalf("%s: tuner.csv files %v", out, files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		alphas := map[string]int{}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if f := strings.Split(line, ","); len(f) > 17 && f[4] == "start" {
				alphas[f[17]]++
			}
		}
		return alphas
	}
	file := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(file, []byte("policy:\n  alpha_start: 0.7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc, alpha string
		args        []string
	}{
		{"the defaults", "0.5", nil},
		{"the file's", "0.7", []string{"--tuner-config", file}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			out := filepath.Join(dir, tt.alpha)
			args := append([]string{"--tuned-only", "--baseline", filepath.Join(full, "train.csv"), "--family", fam, "--out", out}, tt.args...)
			if err := runEval(ctx, args, &stdout, &stderr); err != nil {
				t.Fatalf("--tuned-only: %v\n%s", err, stderr.String())
			}
			got := starts(out)
			if len(got) != 1 || got[tt.alpha] == 0 {
				t.Errorf("start rows by alpha %v, want every one at %s", got, tt.alpha)
			}
		})
	}
}
