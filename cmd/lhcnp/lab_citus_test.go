package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestLabCitus runs `lhcnp lab --citus-workers 2`: the private PostgreSQL
// is a Citus cluster in the state directory (a coordinator and two
// workers), the collector's migrations distribute the telemetry, the
// switches' samples are stored on the workers, and a second start finds
// the cluster, its ports and its rows again.
func TestLabCitus(t *testing.T) {
	pgtest.RequireCitus(t)
	if testing.Short() {
		t.Skip("skipping the lab run in -short mode")
	}
	t.Parallel() // a lab of its own, as TestLabStarts
	state := labStateDir(t)
	count := func(dsn string) (samples int64, distributed bool) {
		t.Helper()
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM samples").Scan(&samples); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM citus_tables WHERE table_name = 'samples'::regclass AND citus_table_type = 'distributed')").Scan(&distributed); err != nil {
			t.Fatal(err)
		}
		return samples, distributed
	}
	l := startLab(t, state, "--dry-run", "--citus-workers", "2")
	if !strings.Contains(l.banner, "private Citus cluster, coordinator and 2 workers") {
		t.Errorf("the banner does not say the cluster is Citus:\n%s", l.banner)
	}
	var n int64
	for deadline := time.Now().Add(90 * time.Second); ; {
		var dist bool
		if n, dist = count(l.dsn); !dist {
			t.Fatal("samples is not a distributed table in the lab's Citus cluster")
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no samples stored within 90 s")
		}
		time.Sleep(500 * time.Millisecond) // polling the lab's own pace, with the deadline above
	}
	first := l.dsn
	if err := l.stop(); err != nil {
		t.Fatal(err)
	}
	l = startLab(t, state, "--dry-run", "--citus-workers", "2")
	if l.dsn != first {
		t.Errorf("second start's DSN %s, want the first's %s", l.dsn, first)
	}
	if again, _ := count(l.dsn); again < n {
		t.Errorf("%d samples after a restart, %d before", again, n)
	}
	if err := l.stop(); err != nil {
		t.Fatal(err)
	}
}
