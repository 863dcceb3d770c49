package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultsFromAnywhere: sim compare, sim phases and sim generate with their
// default files run from a directory without scenarios/ (the files built
// into lhcnp, CDF files included) as from the repository's root, with
// the same output. They exited 2 naming scenarios/compare/... and
// scenarios/family/tuner.yaml.
func TestDefaultsFromAnywhere(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc  string
		run   func(args []string, stdout, stderr *bytes.Buffer) error
		args  []string
		files []string // of --out, compared
	}{
		{desc: "sim compare", run: func(args []string, stdout, stderr *bytes.Buffer) error {
			return runCompare(context.Background(), args, stdout, stderr)
		}, args: []string{"--duration", "15ms", "--no-plots", "--mechanisms", "dcqcn"}, files: []string{"results.csv"}},
		{desc: "sim phases", run: func(args []string, stdout, stderr *bytes.Buffer) error {
			return runPhases(context.Background(), args, stdout, stderr)
		}, args: []string{"--duration", "1ms", "--phases", "2", "--phase-step", "1ms"}},
		{desc: "sim generate", run: func(args []string, stdout, stderr *bytes.Buffer) error {
			return runGenerate(args, stdout, stderr)
		}, args: []string{"--seed", "3"}, files: []string{"fam-train-3.yaml"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var outs [2]string
			for i, wd := range []string{root, t.TempDir()} {
				t.Chdir(wd)
				dir := t.TempDir()
				var stdout, stderr bytes.Buffer
				if err := tt.run(append([]string{"--out", dir}, tt.args...), &stdout, &stderr); err != nil {
					t.Fatalf("in %s: %v\nstderr: %s", wd, err, stderr.String())
				}
				out := strings.ReplaceAll(stdout.String(), dir, "DIR")
				for _, f := range tt.files {
					b, err := os.ReadFile(filepath.Join(dir, f))
					if err != nil {
						t.Fatal(err)
					}
					out += "\n" + f + ":\n" + string(b)
				}
				outs[i] = out
			}
			if outs[0] != outs[1] {
				t.Errorf("from the repository's root:\n%s\nfrom elsewhere:\n%s", outs[0], outs[1])
			}
		})
	}
}

// TestDefaultsCDFFiles: the --markdown defaults of sim compare load from
// a directory without scenarios/, the CDF files the fabric scenario names
// (../cdf/websearch.txt) read from lhcnp's copy too.
func TestDefaultsCDFFiles(t *testing.T) {
	t.Chdir(t.TempDir())
	files := append(append([]string{"scenarios/section7.yaml", "scenarios/section7-unstaged.yaml"}, defaultTunerScenarios...), defaultFabricScenarios...)
	var d defaultFiles
	if _, err := loadScenarios(files, d.add(files...)); err != nil {
		t.Fatal(err)
	}
	if _, err := readEvalCSV("scenarios/family/evals/test.csv", true); err != nil {
		t.Fatal(err)
	}
	// Not a default: the command line's file is the working directory's.
	if _, err := loadScenarios(defaultFabricScenarios, nil); err == nil {
		t.Errorf("%s given on the command line loaded from lhcnp's copy", defaultFabricScenarios[0])
	}
}

// TestDefaultsWorkingDirectoryWins: a default file the working directory
// holds is read from it, not from lhcnp's copy (one editing scenarios/
// runs the edit); a file the command line names is never lhcnp's copy.
func TestDefaultsWorkingDirectoryWins(t *testing.T) {
	t.Chdir(t.TempDir())
	const f = "scenarios/family/tuner.yaml"
	if src := fileSource(f, true); src == nil {
		t.Errorf("%s absent: read from the working directory, want lhcnp's copy", f)
	}
	if src := fileSource(f, false); src != nil {
		t.Errorf("%s given on the command line: read from lhcnp's copy", f)
	}
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte("name: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadFamily(f, true); err == nil || !strings.Contains(err.Error(), f) {
		t.Errorf("the working directory's broken %s: %v, want its error", f, err)
	}
}

// TestDefaultsValidationFromAnywhere: sim compare --markdown with the
// default --validation and --validation-scenarios (the stored reference
// runs and scenarios/refsim) writes from a directory without them the
// document it writes from the repository's root, the validation column
// and its footnote included. It exited 2 naming
// dataplane-sim/refsim/testdata/ref.
func TestDefaultsValidationFromAnywhere(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var docs [2]string
	for i, wd := range []string{root, t.TempDir()} {
		t.Chdir(wd)
		dir := t.TempDir()
		md := filepath.Join(dir, "results.md")
		args := []string{"--out", filepath.Join(dir, "out"), "--markdown", md, "--duration", "15ms", "--no-plots",
			"--mechanisms", "dcqcn,long-haul-cnp", "--section7-unstaged", "", "--fabrics", "", "--tuner-scenarios", "", "--held-out", ""}
		var stdout, stderr bytes.Buffer
		if err := runCompare(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("in %s: %v\nstderr: %s", wd, err, stderr.String())
		}
		b, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "How far our DCQCN is from the RDMA ns-3") {
			t.Fatalf("in %s: no validation footnote in\n%s", wd, b)
		}
		docs[i] = strings.ReplaceAll(string(b), dir, "DIR")
	}
	if docs[0] != docs[1] {
		t.Errorf("from the repository's root:\n%s\nfrom elsewhere:\n%s", docs[0], docs[1])
	}
}
