package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
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
		{"queue out of range", []string{"hold", "--config", cfg, "--target", "n1", "--interface", "wan0", "--queue", "300"}, "--queue: 300: want a queue id 0-15"},
		{"no queue", []string{"release", "--config", cfg, "--target", "n1", "--interface", "wan0"}, "--queue is required"},
		{"no target", []string{"release", "--config", cfg}, "--target, --interface and --queue are required"},
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

// TestTunerHoldReleaseOnce: an operator who runs hold or release again
// (its answer lost: the connection dropped after the commit) gets no
// second row: the same hold still holding is "already held until" its
// end, and a release right after a release says so and writes nothing.
// Each wrote a row, one more every time. A hold asked for another length
// is a new row; a release of a queue with no hold in the database is
// written (the tuner may hold it from its memory).
func TestTunerHoldReleaseOnce(t *testing.T) {
	ctx := context.Background()
	pool, dsn := pgtest.New(t)
	q := []string{"--db", dsn, "--target", "n1", "--interface", "wan0", "--queue", "3"}
	rows := func() (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM tuner_actions WHERE outcome = 'operator'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	step := func(args []string, want string, wantRows int) {
		t.Helper()
		var out bytes.Buffer
		if err := runTuner(ctx, append(args, q...), &out, io.Discard); err != nil {
			t.Fatalf("lhcnp tuner %s: %v", strings.Join(args, " "), err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("lhcnp tuner %s: output %q, want %q in it", strings.Join(args, " "), out.String(), want)
		}
		if got := rows(); got != wantRows {
			t.Errorf("lhcnp tuner %s: %d operator rows, want %d", strings.Join(args, " "), got, wantRows)
		}
	}
	step([]string{"release"}, "lhcnp tuner release: n1 wan0 queue 3: the tuner may tune it again (tuner_actions 1)", 1)
	step([]string{"release"}, "lhcnp tuner release: n1 wan0 queue 3: released already at ", 1)
	hold := []string{"hold", "--for", "1h", "--why", "maintenance"}
	step(hold, "lhcnp tuner hold: n1 wan0 queue 3: held until ", 2)
	step(hold, "lhcnp tuner hold: n1 wan0 queue 3: already held until ", 2)
	step(hold, "by the same hold (tuner_actions 2, recorded at ", 2)
	step([]string{"hold", "--for", "2h", "--why", "maintenance"}, "lhcnp tuner hold: n1 wan0 queue 3: held until ", 3)
	step([]string{"hold", "--for", "2h", "--why", "a longer one"}, "lhcnp tuner hold: n1 wan0 queue 3: held until ", 4)
	step([]string{"release"}, "the tuner may tune it again (tuner_actions 5)", 5)
	step([]string{"release"}, "released already at ", 5)
	step([]string{"release"}, "(tuner_actions 5: operator-release: released by an operator); nothing recorded", 5)
	// After a release the same hold is a hold again.
	step(hold, "lhcnp tuner hold: n1 wan0 queue 3: held until ", 6)
}

// TestTunerHoldUsage: a flag missing or a bad value is said once, in one
// line (the missing ones together, with the usage's first line), a usage
// error (exit status 2), as a bad flag is (TestBadFlagOnce); the tuner's
// whole flag list (about 120 lines of policy.*) was printed before a
// missing flag's message. lhcnp tuner without --config the same.
func TestTunerHoldUsage(t *testing.T) {
	const holdUsage = " (usage: lhcnp tuner hold (--config FILE | --db DSN) --target NAME --interface NAME --queue N [--for DURATION] [--why TEXT])"
	q := []string{"--db", "postgres://x/y", "--target", "n1", "--interface", "wan0"}
	for _, tt := range []struct {
		desc string
		args []string // after lhcnp
		want string   // the whole stderr
	}{
		{"no target", []string{"tuner", "hold", "--db", "postgres://x/y", "--interface", "wan0", "--queue", "1"},
			"lhcnp tuner hold: --target is required" + holdUsage},
		{"no queue", append([]string{"tuner", "hold"}, q...), "lhcnp tuner hold: --queue is required" + holdUsage},
		{"none of them", []string{"tuner", "hold", "--db", "postgres://x/y"},
			"lhcnp tuner hold: --target, --interface and --queue are required" + holdUsage},
		{"release", []string{"tuner", "release", "--db", "postgres://x/y", "--target", "n1"},
			"lhcnp tuner release: --interface and --queue are required (usage: lhcnp tuner release (--config FILE | --db DSN) --target NAME --interface NAME --queue N [--why TEXT])"},
		{"no database", []string{"tuner", "hold", "--target", "n1", "--interface", "wan0", "--queue", "1"},
			"lhcnp tuner hold: db: missing: give --config FILE (the tuner's) or --db DSN (the lab prints its postgresql)"},
		{"queue out of range", append(append([]string{"tuner", "hold"}, q...), "--queue", "300"), "lhcnp tuner hold: --queue: 300: want a queue id 0-15"},
		{"negative hold", append(append([]string{"tuner", "hold"}, q...), "--queue", "3", "--for", "-1h"), "lhcnp tuner hold: --for: -1h0m0s: want a positive duration"},
		// 0 is the flag's default, the configuration's operator_hold: --for 0
		// held the queue 15 min.
		{"zero hold", append(append([]string{"tuner", "hold"}, q...), "--queue", "3", "--for", "0"), "lhcnp tuner hold: --for: 0s: want a positive duration"},
		{"tuner without its file", []string{"tuner", "--db", "postgres://x/y"},
			"lhcnp tuner: --config FILE is required (usage: lhcnp tuner --config FILE [--dry-run] [--db DSN] [--once] [--verbose] [--KEY VALUE ...])"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Setenv("LHCNP_TUNER_DB", "") // a caller's would fill --db
			var stdout, stderr strings.Builder
			code := run(tt.args, &stdout, &stderr)
			if code != 2 || stderr.String() != tt.want+"\n" || stdout.Len() > 0 {
				t.Errorf("lhcnp %s: exit status %d, stderr\n%s\nwant exit status 2, stderr\n%s", strings.Join(tt.args, " "), code, stderr.String(), tt.want)
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
			"lhcnp tuner hold: --queue: 300: want a queue id 0-15\n"},
		{[]string{"tuner", "release", "--db", "postgres://x/y", "--target", "n1", "--interface", "wan0", "--queue", "-2"},
			"lhcnp tuner release: --queue: -2: want a queue id 0-15\n"},
		{[]string{"sim", "run", "--out", t.TempDir()}, "lhcnp sim run: want exactly one scenario file, got 0\n"},
	} {
		var stdout, stderr strings.Builder
		run(tt.args, &stdout, &stderr)
		if !strings.HasPrefix(stderr.String(), tt.want) && !strings.HasSuffix(stderr.String(), tt.want) {
			t.Errorf("lhcnp %s: stderr %q, want %q", strings.Join(tt.args, " "), stderr.String(), tt.want)
		}
	}
}

// TestTunerHoldUnreachable: a database that does not answer is named by
// lhcnp tuner hold, release and the tuner itself as lhcnp migrate names it, where the DSN came from (--db, the variable, the
// file's key) and the database, in one line, exit status 1 (a failure
// while working); it was "db: failed to connect to ...", whichever of the
// three gave it.
func TestTunerHoldUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	dsn := "postgres://postgres:secret@" + addr + "/lhcnp?sslmode=disable&connect_timeout=5"
	cfg := filepath.Join(t.TempDir(), "tuner.yaml")
	if err := os.WriteFile(cfg, []byte("db: "+dsn+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tunerCfg := filepath.Join(filepath.Dir(cfg), "tuner-switches.yaml")
	if err := os.WriteFile(tunerCfg, []byte("db: "+dsn+"\nswitches:\n  - {name: n1, address: 127.0.0.1:9339, insecure: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := []string{"--target", "n1", "--interface", "wan", "--queue", "0"}
	for _, tt := range []struct {
		desc string
		env  string // LHCNP_TUNER_DB
		args []string
		from string
	}{
		{"flag", "", append([]string{"hold", "--db", dsn}, q...), "--db"},
		{"variable", dsn, append([]string{"release"}, q...), "LHCNP_TUNER_DB"},
		{"file", "", append([]string{"hold", "--config", cfg}, q...), cfg + ": db"},
		// The tuner itself, its switches in the file.
		{"the tuner", "", []string{"--config", tunerCfg, "--once"}, tunerCfg + ": db"},
		{"the tuner, --db", "", []string{"--config", tunerCfg, "--once", "--db", dsn}, "--db"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Setenv("LHCNP_TUNER_DB", tt.env) // restored after
			if tt.env == "" {
				os.Unsetenv("LHCNP_TUNER_DB")
			}
			var stdout, stderr strings.Builder
			code := run(append([]string{"tuner"}, tt.args...), &stdout, &stderr)
			name := "lhcnp tuner"
			if tt.args[0] == "hold" || tt.args[0] == "release" {
				name += " " + tt.args[0]
			}
			want := name + ": " + tt.from + ": connect to postgres@" + addr + "/lhcnp: "
			got := stderr.String()
			if code != 1 || !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 || strings.Contains(got, "secret") {
				t.Errorf("exit status %d, stderr\n%s\nwant exit status 1 and one line starting %q, no password", code, got, want)
			}
		})
	}
}

// TestTunerHoldHelp: `lhcnp tuner hold -h` and `release -h` list the flags
// the command reads (before: the tuner's every key, about 60 flags, most
// of which do nothing there), and say that the others are accepted; one of
// them given is accepted still.
func TestTunerHoldHelp(t *testing.T) {
	for _, tt := range []struct {
		action string
		want   []string
	}{
		{"hold", []string{"config", "db", "for", "interface", "operator-hold", "queue", "target", "why"}},
		{"release", []string{"config", "db", "interface", "queue", "target", "why"}},
	} {
		var out, errOut bytes.Buffer
		run([]string{"tuner", tt.action, "-h"}, &out, &errOut)
		help := out.String() + errOut.String()
		var got []string
		for _, l := range strings.Split(help, "\n") {
			if strings.HasPrefix(l, "  -") {
				got = append(got, strings.Fields(l)[0][1:])
			}
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("tuner %s -h lists %v, want %v\n%s", tt.action, got, tt.want, help)
		}
		if !strings.Contains(help, "other keys of the configuration are flags too (their list: lhcnp tuner -h)") {
			t.Errorf("tuner %s -h does not say the other keys are flags:\n%s", tt.action, help)
		}
		if strings.Contains(help, "(default -1)") {
			t.Errorf("tuner %s -h gives --queue's internal default:\n%s", tt.action, help)
		}
	}
	a, err := parseTunerHold("hold", []string{"--db", "postgres://u@127.0.0.1/x", "--dry-run", "--target", "n1", "--interface", "wan0", "--queue", "0"},
		func() []string { return nil }, io.Discard)
	if err != nil || a.target != "n1" {
		t.Errorf("a hidden key given: %v, %+v; want it accepted", err, a)
	}
}
