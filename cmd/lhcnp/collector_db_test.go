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
	"github.com/lhcnp/lhcnp/migrations"
)

// TestCollectorSetsItsRetention: a running collector sets the database's
// retention (lhcnp_partitioning.retention) to its own db.retention at its
// first maintenance pass, over what `lhcnp migrate up --retention` or
// lhcnp_set_retention set before (docs/collector.md, "Partitions and
// retention": a DBA's 30 days became the collector's default 7 at its
// start, and the pass dropped the days between). 0 keeps everything.
func TestCollectorSetsItsRetention(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		desc, flag, want string
	}{
		{desc: "default", want: "7 days"},
		{desc: "72h", flag: "72h", want: "3 days"},
		{desc: "0 keeps everything", flag: "0", want: "forever"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			pool, dsn := pgtest.New(t)
			ctx := context.Background()
			// What a DBA set: `lhcnp migrate up --retention 720h`.
			if err := migrations.SetRetention(ctx, pool, 720*time.Hour); err != nil {
				t.Fatal(err)
			}
			args := []string{"--db.dsn", dsn, "--state-dir", t.TempDir(), "--db.targets-table=false"}
			if tt.flag != "" {
				args = append(args, "--db.retention", tt.flag)
			}
			cctx, cancel := context.WithCancel(ctx)
			logs := &lockedBuffer{}
			done := make(chan error, 1)
			go func() { done <- runCollector(cctx, args, io.Discard, logs) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("runCollector: %v", err)
				}
			}()
			var got string
			for deadline := time.Now().Add(60 * time.Second); ; {
				err := pool.QueryRow(ctx, `SELECT COALESCE(retention::text, 'forever') FROM lhcnp_partitioning
					WHERE parent = 'public.samples' AND retention IS DISTINCT FROM interval '30 days'`).Scan(&got)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("retention still 30 days after the collector's start (%v); collector log:\n%s", err, logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if got != tt.want {
				t.Errorf("retention after the collector's first pass = %s, want %s (its db.retention)", got, tt.want)
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
