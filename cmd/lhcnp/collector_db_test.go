package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestCollectorSetsItsRetention: a collector whose db.retention is unset
// (the default) leaves the database's retention (lhcnp_partitioning.retention)
// as it was, 30 days on a new schema or what `lhcnp migrate up --retention`
// set, and runs its pass with it; one whose db.retention is set enforces it
// at its first pass, over what migrate set, 0 keeping everything. The
// samples of 10 and 5 days ago tell what the pass kept (docs/collector.md,
// "Who sets the retention"): with a default of 168h, a DBA's 720h became 7
// days at the collector's start, and the pass dropped the days between.
func TestCollectorSetsItsRetention(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		desc    string
		migrate string   // `lhcnp migrate up --retention` before the collector, if any
		args    []string // the collector's db.retention
		env     string   // LHCNP_COLLECTOR_DB_RETENTION, if any
		want    string   // the retention after its first pass
		kept    int      // of the samples 10 and 5 days old
	}{
		{desc: "unset keeps a new schema's", want: "30 days", kept: 2},
		{desc: "unset keeps migrate's", migrate: "720h", want: "30 days", kept: 2},
		{desc: "unset keeps migrate's shorter one", migrate: "144h", want: "6 days", kept: 1},
		{desc: "168h", migrate: "720h", args: []string{"--db.retention", "168h"}, want: "7 days", kept: 1},
		{desc: "72h by the variable", migrate: "720h", env: "72h", want: "3 days", kept: 0},
		{desc: "0 keeps everything", migrate: "144h", args: []string{"--db.retention", "0"}, want: "forever", kept: 2},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			pool, dsn := pgtest.New(t)
			ctx := context.Background()
			if tt.migrate != "" {
				if err := runMigrate(ctx, []string{"up", "--db.dsn", dsn, "--retention", tt.migrate}, io.Discard, io.Discard); err != nil {
					t.Fatalf("lhcnp migrate up --retention %s: %v", tt.migrate, err)
				}
			}
			// After migrate's own pass: what the collector's removes.
			now := time.Now()
			if _, err := pool.Exec(ctx, `INSERT INTO series (id, target, path, schema_path) VALUES (1, 'sw1', '/a', '/a')`); err != nil {
				t.Fatal(err)
			}
			for _, ago := range []time.Duration{10 * 24 * time.Hour, 5 * 24 * time.Hour} {
				if _, err := pool.Exec(ctx, `INSERT INTO samples (ts, series_id, v_int, flags, batch_id) VALUES ($1, 1, 1, 0, 1)`, now.Add(-ago)); err != nil {
					t.Fatal(err)
				}
			}
			var before *time.Time
			if err := pool.QueryRow(ctx, `SELECT last_maintained FROM lhcnp_partitioning WHERE parent = 'public.samples'`).Scan(&before); err != nil {
				t.Fatal(err)
			}
			environ := []string{}
			if tt.env != "" {
				environ = append(environ, "LHCNP_COLLECTOR_DB_RETENTION="+tt.env)
			}
			a, err := parseCollector(append([]string{"--db.dsn", dsn, "--state-dir", t.TempDir(), "--db.targets-table=false"}, tt.args...),
				func() []string { return environ }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			db, err := collectorDB()
			if err != nil {
				t.Fatal(err)
			}
			logs := &lockedBuffer{}
			c, err := collector.New(ctx, a.cfg, collector.WithDB(db), collector.WithLogger(textLog(logs, false)))
			if err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- c.Run(cctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("collector: %v", err)
				}
			}()
			var got string
			for deadline := time.Now().Add(60 * time.Second); ; {
				err := pool.QueryRow(ctx, `SELECT COALESCE(retention::text, 'forever') FROM lhcnp_partitioning
					WHERE parent = 'public.samples' AND last_maintained IS DISTINCT FROM $1`, before).Scan(&got)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no maintenance pass within 60 s of the collector's start (%v); collector log:\n%s", err, logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			var kept int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM samples WHERE series_id = 1`).Scan(&kept); err != nil {
				t.Fatal(err)
			}
			if got != tt.want || kept != tt.kept {
				t.Errorf("after the collector's first pass: retention %s, %d of the samples 10 and 5 days old kept; want %s and %d", got, kept, tt.want, tt.kept)
			}
		})
	}
}

// TestCollectorRetentionKey: db.retention is unset unless the file, the
// variable or the flag gives it, and then 0 is a value (keep everything),
// not the absence of one; a value that is not a duration of 1 s or more is
// refused where it came from, exit status 2, before the database is
// reached.
func TestCollectorRetentionKey(t *testing.T) {
	withoutEnv(t, "LHCNP_COLLECTOR_")
	const dsn = "postgres://127.0.0.1:1/lhcnp" // never reached
	const want = ": want a duration of 1s or more such as 168h, or 0 for ever (unset: the database's own)"
	for _, tt := range []struct {
		desc    string
		file    string // the db: section's retention line, if any
		args    []string
		env     string
		keep    time.Duration
		set     bool
		wantErr string // FILE for the file's path
	}{
		{desc: "unset"},
		{desc: "0 in the file", file: "retention: 0", set: true},
		{desc: "720h in the file", file: "retention: 720h", keep: 720 * time.Hour, set: true},
		{desc: "the variable over the file", file: "retention: 720h", env: "0", set: true},
		{desc: "the flag over the variable", env: "0", args: []string{"--db.retention", "72h"}, keep: 72 * time.Hour, set: true},
		{desc: "no unit in the file", file: "retention: 30", wantErr: `FILE:3:14: db.retention: "30"` + want},
		{desc: "negative flag", args: []string{"--db.retention", "-1h"}, wantErr: `--db.retention: db.retention: "-1h"` + want},
		{desc: "under a second by the variable", env: "500ms", wantErr: `LHCNP_COLLECTOR_DB_RETENTION: db.retention: "500ms"` + want},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			body := "db:\n  dsn: " + dsn + "\n"
			if tt.file != "" {
				body += "  " + tt.file + "\n"
			}
			file := collectorFile(t, body+"state_dir: "+t.TempDir()+"\n")
			var environ []string
			if tt.env != "" {
				environ = []string{"LHCNP_COLLECTOR_DB_RETENTION=" + tt.env}
			}
			a, err := parseCollector(append([]string{"--config", file}, tt.args...), func() []string { return environ }, io.Discard)
			if tt.wantErr != "" {
				want := strings.ReplaceAll(tt.wantErr, "FILE", file)
				if err == nil || err.Error() != want || exitStatus(err) != 2 {
					t.Errorf("parseCollector = %v (exit status %d), want exit status 2 and\n%s", err, exitStatus(err), want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			keep, set, err := a.cfg.DB.RetentionKeep()
			if err != nil || keep != tt.keep || set != tt.set {
				t.Errorf("db.retention %q: keep %v, set %v, err %v; want %v, %v", a.cfg.DB.Retention, keep, set, err, tt.keep, tt.set)
			}
		})
	}
}

// TestCollectorDefaultID: without id a collector is named by the host and
// a hash of its state_dir (collector.DefaultID, stable across restarts),
// in its banner and in PostgreSQL's application_name, where a DBA finds
// its sessions (pg_stat_activity); -h says so. It said "default
// hostname-pid", a name no session ever had.
func TestCollectorDefaultID(t *testing.T) {
	t.Parallel()
	var help, errOut bytes.Buffer
	if code := run([]string{"collector", "-h"}, &help, &errOut); code != 0 {
		t.Fatalf("collector -h: exit %d: %s", code, errOut.String())
	}
	if got := listedFlags(help.String() + errOut.String())["id"]; !strings.Contains(got, "a hash of state_dir") {
		t.Errorf("collector -h: --id %q, want it to name the host name and a hash of state_dir", got)
	}

	pool, dsn := pgtest.New(t)
	ctx := context.Background()
	state := t.TempDir()
	want := collector.DefaultID(state)
	cctx, cancel := context.WithCancel(ctx)
	stdout := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runCollector(cctx, []string{"--db.dsn", dsn, "--state-dir", state, "--db.targets-table=false"}, stdout, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runCollector: %v", err)
		}
	}()
	for deadline := time.Now().Add(60 * time.Second); ; {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, "lhcnp-collector "+want).Scan(&n)
		// The banner comes once the collector is set up, after its
		// pool's first session.
		banner := stdout.String()
		if err == nil && n > 0 && banner != "" {
			if !strings.HasPrefix(banner, "lhcnp collector "+want+":") {
				t.Errorf("banner %q, want it to name the collector %s", banner, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions named application_name %q (%v), banner %q", n, "lhcnp-collector "+want, err, banner)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
