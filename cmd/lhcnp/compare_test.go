//go:build !lhcnpstub

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
