package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutNotADirectory: an --out naming a file is the command line's
// mistake, exit status 2 naming --out, before anything runs, for every
// command that writes a directory (it was mkdir's error, exit status 1,
// after the scenario was read); a directory that does not exist yet is
// not refused.
func TestOutNotADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "results.txt")
	if err := os.WriteFile(file, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"sim", "run", "../../scenarios/incast-dcqcn.yaml"},
		{"sim", "compare"},
		{"sim", "phases"},
		{"sim", "generate"},
		{"sim", "eval"},
	} {
		var out, errOut bytes.Buffer
		code := run(append(args, "--out", file), &out, &errOut)
		want := "--out: " + file + ": not a directory"
		if code != 2 || !strings.Contains(errOut.String(), want) {
			t.Errorf("%s --out FILE: exit %d, stderr %q; want 2 and %q", strings.Join(args, " "), code, errOut.String(), want)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep me\n" {
		t.Errorf("the file named by --out: %q, %v; want it untouched", b, err)
	}
	if err := checkOutDir(flag.NewFlagSet("t", flag.ContinueOnError), filepath.Join(t.TempDir(), "new", "dir")); err != nil {
		t.Errorf("a directory not there yet: %v, want it taken (the run creates it)", err)
	}
}
