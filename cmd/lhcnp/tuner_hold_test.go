package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/tuner"
)

// TestTunerHoldRelease: `lhcnp tuner hold` records an operator's hold of
// one queue in tuner_actions, which the tuner reads (OperatorHolds) as
// holding it; `lhcnp tuner release` ends it. Mistakes name the flag.
func TestTunerHoldRelease(t *testing.T) {
	ctx := context.Background()
	pool, dsn := pgtest.New(t)
	cfg := filepath.Join(t.TempDir(), "tuner.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("db: %s\nswitches:\n  - {name: n1, address: 127.0.0.1:9339, insecure: true}\n", dsn)), 0o644); err != nil {
		t.Fatal(err)
	}
	q := []string{"--config", cfg, "--target", "n1", "--interface", "wan0", "--queue", "3"}
	rec := tuner.NewPGRecorder(pool)
	holds := func() map[tuner.QueueID]tuner.OperatorHold {
		t.Helper()
		h, err := rec.OperatorHolds(ctx, "n1", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	var out bytes.Buffer
	if err := runTuner(ctx, append([]string{"hold", "--for", "1h", "--why", "maintenance"}, q...), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "lhcnp tuner hold: n1 wan0 queue 3: held until ") {
		t.Errorf("output %q", out.String())
	}
	h, ok := holds()[tuner.QueueID{Interface: "wan0", Queue: 3}]
	if !ok || h.Until.Sub(time.Now()) < 59*time.Minute || !strings.Contains(h.Reason, "operator-hold: held by an operator until") ||
		!strings.HasSuffix(h.Reason, ": maintenance") {
		t.Errorf("after hold: %+v (held %v); want wan0 queue 3 held for an hour, the reason kept", h, ok)
	}
	out.Reset()
	// As in the lab: the database the lab prints, no tuner file.
	if err := runTuner(ctx, []string{"release", "--db", dsn, "--target", "n1", "--interface", "wan0", "--queue", "3"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := holds(); len(got) != 0 || !strings.Contains(out.String(), "the tuner may tune it again") {
		t.Errorf("after release: holds %+v, output %q; want none", got, out.String())
	}

	for _, tt := range []struct {
		desc string
		args []string
		want string
	}{
		{"unknown switch", []string{"hold", "--config", cfg, "--target", "n9", "--interface", "wan0", "--queue", "0"}, `--target: "n9": not a switch of ` + cfg + ` (switches: [n1])`},
		{"queue out of range", []string{"hold", "--config", cfg, "--target", "n1", "--interface", "wan0", "--queue", "300"}, "--queue: 300: want a queue id 0-255"},
		{"no queue", []string{"release", "--config", cfg, "--target", "n1", "--interface", "wan0"}, "--queue is required"},
		{"no target", []string{"release", "--config", cfg}, "--target is required"},
		{"no database", []string{"hold", "--target", "n1", "--interface", "wan0", "--queue", "0"}, "db: missing: give --config FILE"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			err := runTuner(ctx, tt.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
			// Every one a mistake of the command line or its file.
			if got := exitStatus(err); got != 2 {
				t.Errorf("exit status %d, want 2 (%v)", got, err)
			}
		})
	}
}

// TestTunerHoldUsage: a flag missing prints the usage before the message;
// a bad value is the one message, a usage error still.
func TestTunerHoldUsage(t *testing.T) {
	q := []string{"--db", "postgres://x/y", "--target", "n1", "--interface", "wan0"}
	for _, tt := range []struct {
		desc  string
		args  []string
		want  string
		usage bool
	}{
		{"no target", []string{"--db", "postgres://x/y"}, "--target is required", true},
		{"no queue", q, "--queue is required", true},
		{"queue out of range", append(slices.Clone(q), "--queue", "300"), "--queue: 300: want a queue id 0-255", false},
		{"negative hold", append(slices.Clone(q), "--queue", "3", "--for", "-1h"), "--for: -1h0m0s: want a positive duration", false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var stderr strings.Builder
			_, err := parseTunerHold("hold", tt.args, func() []string { return nil }, &stderr)
			if _, ok := err.(usageError); !ok || err.Error() != tt.want {
				t.Fatalf("parseTunerHold(%q) = %v, want the usage error %q", tt.args, err, tt.want)
			}
			if printed := strings.Contains(stderr.String(), "usage: lhcnp tuner hold"); printed != tt.usage {
				t.Errorf("usage printed %v, want %v", printed, tt.usage)
			}
		})
	}
}

// TestSubcommandErrorsNamed: a subcommand's error is printed under its
// whole name (lhcnp tuner hold:, lhcnp sim run:, lhcnp lab status:), where
// it was the command's (lhcnp tuner:) whichever subcommand failed; a
// command's own stays its own.
func TestSubcommandErrorsNamed(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"tuner", "hold", "--db", "postgres://x/y", "--target", "n1", "--interface", "wan0", "--queue", "300"},
			"lhcnp tuner hold: --queue: 300: want a queue id 0-255\n"},
		{[]string{"tuner", "release", "--db", "postgres://x/y", "--target", "n1", "--interface", "wan0", "--queue", "-2"},
			"lhcnp tuner release: --queue: -2: want a queue id 0-255\n"},
		{[]string{"sim", "run", "--out", t.TempDir()}, "lhcnp sim run: want exactly one scenario file, got 0\n"},
		{[]string{"tuner", "--db", "postgres://x/y"}, "lhcnp tuner: --config FILE is required\n"},
	} {
		var stdout, stderr strings.Builder
		run(tt.args, &stdout, &stderr)
		if !strings.HasPrefix(stderr.String(), tt.want) && !strings.HasSuffix(stderr.String(), tt.want) {
			t.Errorf("lhcnp %s: stderr %q, want %q", strings.Join(tt.args, " "), stderr.String(), tt.want)
		}
	}
}
