//go:build !lhcnpstub

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	tests := []struct {
		desc      string
		args      []string
		wantUsage bool
		wantText  string
	}{
		{"no subcommand", nil, true, "sim run"},
		{"unknown subcommand", []string{"walk"}, true, "sim run"},
		{"no out", []string{"run", "x.yaml"}, true, "--out"},
		{"two scenarios", []string{"run", "a.yaml", "b.yaml", "--out", "d"}, true, "exactly one"},
		{"bad duration", []string{"run", "a.yaml", "--out", "d", "--duration", "5"}, false, "no unit"},
		{"scenario error", []string{"run", bad, "--out", "d"}, false, "bad_rate_unit.yaml:8:13: topology.links[0].rate"},
		{"no threads", []string{"run", "a.yaml", "--out", "d", "--threads", "0"}, true, "--threads 0"},
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
