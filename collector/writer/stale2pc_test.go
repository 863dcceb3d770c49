package writer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/writer"
	"github.com/lhcnp/lhcnp/internal/pgserver"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// On Citus a stale batch's merge is a transaction across both workers
// (TestStaleRefusedRow's Citus merge), and its COMMIT Citus's two-phase
// commit: at the coordinator's pre-commit the workers PREPARE (after the
// pg_dist_transaction rows that name them are written in the coordinator's
// transaction), the coordinator writes its commit record, then sends each
// worker COMMIT PREPARED. A crash between two of these steps leaves the
// workers' parts prepared, unseen and holding their locks (the lease row,
// FOR NO KEY UPDATE on every placement), until Citus recovers them
// (recover_prepared_transactions(), or its maintenance daemon every
// citus.recover_2pc_interval): committed when the coordinator's commit holds
// their records, rolled back when it does not. The tests below make each
// crash, recover by both, and check that the batch is stored and counted
// exactly once: every sample and event stored once, each row counted once
// (merged, duplicates, stale_epoch), none replayed, each dead letter written
// and counted once (mergedOnce).

// TestCitusStaleMergeCoordinatorCrash: the coordinator crashes once its
// commit record is flushed, before the COMMIT PREPARED. (The point is
// reached as a synchronous replica would make it: the coordinator waits for
// a standby that does not exist once its commit record is flushed; only the
// merge's session asks for that wait, synchronous_commit on, set by the
// test's tracer at its COMMIT.) The coordinator started again, the writer's
// retry waits for the prepared transactions' locks until they are
// recovered: committed, since the coordinator's commit holds their records.
// The retry then finds every part in the ledger, and counts what the merge
// did (commitMerge remembered it).
func TestCitusStaleMergeCoordinatorCrash(t *testing.T) {
	t.Parallel() // a cluster of its own
	citusMergeCrash(t, coordinatorCommitted)
}

// TestCitusStaleMergeCrashPrepared: the coordinator crashes once the workers
// have PREPAREd, before its commit record. (The point is reached with the
// lock PostgreSQL takes to queue a transaction's NOTIFYs, after the
// pre-commit callbacks, where Citus prepares, and before the commit record:
// the test's tracer adds a NOTIFY to the merge's transaction at its COMMIT,
// while another session holds that lock, waiting at its own commit for a
// standby that does not exist.) The coordinator started again, the writer's
// retry waits for the prepared transactions' locks until they are
// recovered: rolled back, since no commit holds their records. The retry
// then finds no part in the ledger and merges the batch again, as if the
// first merge had never run: what commitMerge remembered of it (its COMMIT
// lost its answer) is read only when every part is in the ledger.
func TestCitusStaleMergeCrashPrepared(t *testing.T) {
	t.Parallel() // a cluster of its own
	citusMergeCrash(t, workersPrepared)
}

// TestCitusStaleMergeWorkerCrash: a worker crashes once the coordinator's
// commit record is flushed, before its COMMIT PREPARED (the coordinator
// held as in TestCitusStaleMergeCoordinatorCrash, and let go once the
// worker is down). The coordinator's COMMIT PREPARED to it fails, which
// Citus reports as a warning: the merge is committed, and the writer hears
// so and counts it. The worker started again, its part of the merge is
// prepared until it is recovered: committed.
func TestCitusStaleMergeWorkerCrash(t *testing.T) {
	t.Parallel() // a cluster of its own
	citusMergeCrash(t, workerCommitPrepared)
}

// twoPhaseCrash is where a merge's two-phase commit is cut.
type twoPhaseCrash int

const (
	coordinatorCommitted twoPhaseCrash = iota // the coordinator, after its commit record
	workersPrepared                           // the coordinator, after the workers' PREPARE, before its commit record
	workerCommitPrepared                      // a worker, after the coordinator's commit record, before its COMMIT PREPARED
)

// citusMergeCrash merges a stale batch on a Citus cluster of its own,
// crashes a node at the point at of the merge's two-phase commit, starts it
// again, recovers the prepared transactions (the maintenance daemon, then
// recover_prepared_transactions()) and checks that the batch is stored and
// counted once.
func citusMergeCrash(t *testing.T, at twoPhaseCrash) {
	const n = staleSeries
	ctx := context.Background()
	// No commit waits for a standby but those that ask for it.
	c, dsn := pgtest.PrivateCitusDB(t, 2, pgserver.WithSetting("synchronous_commit", "local"),
		pgserver.WithSetting("synchronous_standby_names", "lhcnp_no_standby"))
	check, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	var interval string
	if err := check.QueryRow(ctx, `SELECT boot_val || unit FROM pg_settings WHERE name = 'citus.recover_2pc_interval'`).Scan(&interval); err != nil {
		t.Fatal(err)
	}
	if interval != "60000ms" {
		t.Errorf("citus.recover_2pc_interval is %s by default; docs/collector.md says 1 min", interval)
	}
	// Prepared transactions are recovered by the test, or by the
	// maintenance daemon once the test sets an interval: in
	// postgresql.auto.conf (ALTER SYSTEM), which a setting on the command
	// line would override, read again when the coordinator starts.
	recoverEvery := func(t *testing.T, interval string) {
		t.Helper()
		for _, sql := range []string{`ALTER SYSTEM SET citus.recover_2pc_interval = ` + interval, `SELECT pg_reload_conf()`} {
			if _, err := check.Exec(ctx, sql); err != nil {
				t.Fatal(err)
			}
		}
	}
	recoverEvery(t, "-1")
	workers := make([]*pgxpool.Pool, len(c.Workers))
	for i, s := range c.Workers {
		if workers[i], err = pgxpool.New(ctx, s.DSN("lhcnp")); err != nil {
			t.Fatal(err)
		}
		defer workers[i].Close()
	}
	// The prepared transactions on each worker (their gids, sorted). A
	// merge prepares one on each worker it wrote to, or more: Citus may
	// open more than one connection to a worker for a statement across
	// its shards (the executor's slow start, when a task takes long).
	preparedGIDs := func(t *testing.T) [][]string {
		t.Helper()
		gids := make([][]string, len(workers))
		for i, wp := range workers {
			rs, err := wp.Query(ctx, `SELECT gid FROM pg_prepared_xacts WHERE database = 'lhcnp' ORDER BY gid`)
			if err != nil {
				t.Fatal(err)
			}
			if gids[i], err = pgx.CollectRows(rs, pgx.RowTo[string]); err != nil {
				t.Fatal(err)
			}
		}
		return gids
	}
	samePrepared := func(t *testing.T, when string, want [][]string) {
		t.Helper()
		if got := preparedGIDs(t); !slices.EqualFunc(want, got, slices.Equal) {
			t.Fatalf("prepared transactions on the workers %s: %q, want %q", when, got, want)
		}
	}
	// How many of gids the coordinator's commits name: those recovery
	// commits (the others it rolls back).
	committed := func(t *testing.T, gids [][]string) int64 {
		t.Helper()
		return count(t, check, `SELECT count(*) FROM pg_dist_transaction WHERE gid = ANY($1)`, slices.Concat(gids...))
	}
	for _, tt := range []struct {
		desc        string
		refused     bool // a sample and an event only the stale batch holds, refused by PostgreSQL
		deadRefused bool // and their dead letters refused too: kept in the refused file
		restart     bool // the writer stopped before the recovery, the batch merged by the next process from the spill
		daemon      bool // the prepared transactions recovered by Citus's maintenance daemon
		want        mergeWant
	}{
		{"no row refused, recovered by the maintenance daemon", false, false, false, true, mergeWant{
			map[int64]int64{1: n, 2: n, 3: n},
			staleCounts{Merged: n, MergedEvents: 1, Duplicates: n, Refused: n, Stale: 1}, "stale", 0, 0, n}},
		{"a sample and an event only the stale batch holds, recovered by recover_prepared_transactions()", true, false, false, false, mergeWant{
			map[int64]int64{1: n, 2: n - 1, 3: n},
			staleCounts{Merged: n - 1, MergedEvents: 1, Duplicates: n, Refused: n}, "partial", 2, 0, n - 1}},
		// The next process counts no line: the first wrote them, and
		// counted them (checked below).
		{"their dead letters refused too, the writer stopped before recover_prepared_transactions()", true, true, true, false, mergeWant{
			map[int64]int64{1: n, 2: n - 1, 3: n},
			staleCounts{Merged: n - 1, MergedEvents: 1, Duplicates: n, Refused: n}, "partial", 0, 0, n - 1}},
	} {
		if tt.restart && at != workersPrepared {
			continue // a merge rolled back is merged again; a committed one is a replay there
		}
		t.Run(tt.desc, func(t *testing.T) {
			if _, err := check.Exec(ctx, `TRUNCATE samples, latest, series, events, dead_letters, ingest_ledger, leases`); err != nil {
				t.Fatal(err)
			}
			if _, err := check.Exec(ctx, `ALTER TABLE dead_letters DROP CONSTRAINT IF EXISTS test_refused`); err != nil {
				t.Fatal(err)
			}
			if _, err := check.Exec(ctx, `INSERT INTO leases (target, owner, epoch, expires_at) VALUES ('sw1', 'b', 2, now() + interval '1 hour')`); err != nil {
				t.Fatal(err)
			}
			base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano()
			owner, _, stopOwner := newWriter(t, check, writer.WithFencing(true))
			enqueue(t, owner, []*rows.Batch{staleBatch(base, "b", 2, []int{1, 3})})
			stopOwner()
			steps := []int{1, 2, 5}
			sb := staleBatch(base, "a", 1, steps, 2)
			if tt.refused {
				refuseSample(sb, steps, 2)
				sb.Events = append(sb.Events, refusedEvent(base))
			}
			if tt.deadRefused {
				if _, err := check.Exec(ctx, fmt.Sprintf(`ALTER TABLE dead_letters ADD CONSTRAINT test_refused CHECK (batch_id <> %d)`, sb.ID)); err != nil {
					t.Fatal(err)
				}
			}
			refusedFile := filepath.Join(t.TempDir(), "dead_letters.jsonl")
			spillDir := t.TempDir()

			gate := &commitGate{sql: "SET synchronous_commit = on"}
			if at == workersPrepared {
				gate.sql = "NOTIFY lhcnp_hold"
				holdNotifyLock(t, dsn)
			}
			cfg, err := pgxpool.ParseConfig(dsn)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnConfig.Tracer = gate
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			opts := []writer.Option{writer.WithFencing(true), writer.WithRetryMax(100 * time.Millisecond), writer.WithRefusedFile(refusedFile)}
			w, m, stop := spillWriter(t, pool, spillDir, opts...)
			defer stop(false)
			enqueue(t, w, []*rows.Batch{sb})

			if at == workersPrepared {
				// The merge's COMMIT waits for the lock of NOTIFY: the
				// workers' transactions prepared, the coordinator's commit
				// not written.
				waitCount(t, check, "merges waiting for the lock of NOTIFY",
					`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'object'`, 1)
			} else {
				// The merge's COMMIT waits for the standby: the
				// coordinator's commit is written, the workers'
				// transactions prepared.
				waitCount(t, check, "merges waiting for a standby", `SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`, 1)
			}
			gids := preparedGIDs(t)
			if len(gids[0]) == 0 || len(gids[1]) == 0 {
				t.Fatalf("prepared transactions on the workers %q, want the merge's on each", gids)
			}
			all := int64(len(gids[0]) + len(gids[1]))
			if at == workerCommitPrepared {
				// A worker crashes; the coordinator, let go, sends it
				// COMMIT PREPARED in vain and answers COMMIT.
				if err := c.Workers[0].Crash(); err != nil {
					t.Fatal(err)
				}
				if _, err := check.Exec(ctx, `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`); err != nil {
					t.Fatal(err)
				}
				wctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				if err := w.WaitTarget(wctx, "sw1"); err != nil {
					t.Fatalf("the stale batch not stored with a worker down after the coordinator's commit: %v", err)
				}
				if diff := cmp.Diff(tt.want.counts, staleCountsOf(m)); diff != "" {
					t.Errorf("counters once the COMMIT answered, the worker down (-want, +got):\n%s", diff)
				}
				if err := c.Workers[0].Start(ctx); err != nil {
					t.Fatal(err)
				}
				workers[0].Reset() // its connections went with the worker
				// And the coordinator's to it, cached by its sessions.
				check.Reset()
				// The other worker's committed.
				samePrepared(t, "after the crash", [][]string{gids[0], nil})
				if got := committed(t, gids); got != all {
					t.Errorf("the coordinator's commits name %d of the merge's %d prepared transactions, want all", got, all)
				}
			} else {
				if err := c.Coordinator.Crash(); err != nil {
					t.Fatal(err)
				}
				if err := c.Coordinator.Start(ctx); err != nil {
					t.Fatal(err)
				}
				check.Reset() // its connections went with the coordinator
				samePrepared(t, "after the crash", gids)
				want := all // committed by the recovery
				if at == workersPrepared {
					want = 0 // rolled back
				}
				if got := committed(t, gids); got != want {
					t.Errorf("the coordinator's commits name %d of the merge's %d prepared transactions, want %d", got, all, want)
				}
				// The retry waits for their locks on a worker.
				deadline := time.Now().Add(30 * time.Second)
				for waiting := int64(0); waiting == 0; {
					for _, wp := range workers {
						waiting += count(t, wp, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = 'lhcnp'`)
					}
					if time.Now().After(deadline) {
						t.Fatal("the writer's retry does not wait for the prepared transactions")
					}
					time.Sleep(10 * time.Millisecond) // polling with a deadline
				}
				if got := staleCountsOf(m); got != (staleCounts{}) {
					t.Errorf("counted before the prepared transactions were recovered: %+v", got)
				}
			}
			if tt.restart {
				// The collector stops (its retry cancelled, the batch
				// spilled); the next process merges it from the spill once
				// the prepared transactions are rolled back. The first
				// counted the lines it kept, once.
				stop(false)
				if got := testutil.ToFloat64(m.DeadLettersRefused); got != 2 {
					t.Errorf("dead_letters_refused_total of the stopped writer = %v, want 2", got)
				}
				if _, err := check.Exec(ctx, `SELECT recover_prepared_transactions()`); err != nil {
					t.Fatal(err)
				}
				next, err := pgxpool.New(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer next.Close()
				var stopNext func(bool)
				w, m, stopNext = spillWriter(t, next, spillDir, opts...)
				defer stopNext(false)
				stopNext(true) // the batch comes from the spill: WaitTarget does not know it
			} else if tt.daemon {
				recoverEvery(t, "'100ms'")
				defer recoverEvery(t, "-1")
			} else if _, err := check.Exec(ctx, `SELECT recover_prepared_transactions()`); err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := w.WaitTarget(wctx, "sw1"); err != nil {
				t.Fatalf("the stale batch not stored once the prepared transactions could be recovered: %v", err)
			}
			// The writer waits for no prepared transaction after a
			// worker's crash: the daemon's recovery is waited for here.
			deadline := time.Now().Add(30 * time.Second)
			for got := preparedGIDs(t); len(got[0])+len(got[1]) > 0; got = preparedGIDs(t) {
				if time.Now().After(deadline) {
					t.Fatalf("prepared transactions left on the workers: %q", got)
				}
				time.Sleep(10 * time.Millisecond) // polling with a deadline
			}

			mergedOnce(t, check, m, sb, tt.want)
			want := 0
			if tt.deadRefused {
				want = 2
			}
			if lines := refusedLines(t, refusedFile); len(lines) != want {
				t.Errorf("%d lines in the refused file, want %d (the refused sample's and event's, once each)", len(lines), want)
			}
		})
	}
}

// holdNotifyLock holds, until the coordinator crashes or the test ends,
// the lock a commit takes to queue its NOTIFYs (an object lock of
// pg_database, AccessExclusive, taken after the pre-commit callbacks and
// released after the commit): a session NOTIFYs and writes (a commit that
// wrote nothing waits for no standby), and its COMMIT waits for a standby
// that does not exist once its commit record is flushed, holding that lock.
func holdNotifyLock(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn.Exec(ctx, `BEGIN; SET LOCAL synchronous_commit = on; CREATE TEMP TABLE lhcnp_hold (); NOTIFY lhcnp_hold; COMMIT`)
		conn.Close(ctx)
	}()
	pid := conn.PgConn().PID()
	t.Cleanup(func() {
		// A test that failed before the crash lets it go: its wait
		// cancelled, the COMMIT answers (a stopping server waits for it).
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			c.Exec(ctx, `SELECT pg_cancel_backend($1)`, pid)
			c.Close(ctx)
		}
		<-done
	})
	waitCount(t, pool, "sessions holding the lock of NOTIFY", `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
		WHERE l.locktype = 'object' AND l.classid = 'pg_database'::regclass AND l.objid = 0 AND l.granted AND a.wait_event = 'SyncRep'`, 1)
}

// commitGate is the tracer of a writer's pool that runs sql in the session
// of the first COMMIT after a merge's lease lock (FOR NO KEY UPDATE), just
// before that COMMIT is sent (on the connection, not traced). With
// synchronous_standby_names naming no standby that exists, "SET
// synchronous_commit = on" makes the server flush the commit record, then
// wait: committed, unanswered.
type commitGate struct {
	sql            string
	merging, fired bool // used by the writer's goroutine only
}

func (g *commitGate) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	g.merging = g.merging || strings.HasSuffix(data.SQL, "FOR NO KEY UPDATE")
	if g.merging && !g.fired && strings.HasPrefix(data.SQL, "commit") {
		g.fired = true
		if _, err := conn.PgConn().Exec(ctx, g.sql).ReadAll(); err != nil {
			panic(fmt.Sprintf("commitGate: %v", err)) // the writer's goroutine: no t.Fatal
		}
	}
	return ctx
}

func (g *commitGate) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// waitCount polls until sql counts want on pool.
func waitCount(t *testing.T, pool *pgxpool.Pool, desc, sql string, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := count(t, pool, sql)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", desc, got, want)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}

// TestCitusRecoverAfterWorkerRestart pins the operator's recovery step
// (docs/collector.md, the write path): once a worker restarted, a
// coordinator session opened before holds cached connections to it, and
// its first recover_prepared_transactions() fails ("server closed the
// connection unexpectedly"); that drops them, and its second call
// recovers. A new session's first call recovers. Citus has no function
// that empties those caches. The check the docs give, prepared
// transactions left per worker by run_command_on_workers, counts none.
func TestCitusRecoverAfterWorkerRestart(t *testing.T) {
	t.Parallel() // a cluster of its own
	ctx := context.Background()
	c, dsn := pgtest.PrivateCitusDB(t, 2)
	recoverIn := func(conn *pgx.Conn) error {
		var n int64
		return conn.QueryRow(ctx, `SELECT recover_prepared_transactions()`).Scan(&n)
	}
	old, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close(ctx)
	// The session's connections to the workers, cached.
	if _, err := old.Exec(ctx, `SELECT count(*) FROM samples`); err != nil {
		t.Fatal(err)
	}
	if err := recoverIn(old); err != nil {
		t.Fatal(err)
	}
	if err := c.Workers[0].Crash(); err != nil {
		t.Fatal(err)
	}
	if err := c.Workers[0].Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recoverIn(old); err == nil || !strings.Contains(err.Error(), "server closed the connection unexpectedly") {
		t.Errorf("the first recovery in a session older than the worker's restart: %v, want server closed the connection unexpectedly (docs/collector.md)", err)
	}
	if err := recoverIn(old); err != nil {
		t.Errorf("the second recovery in that session: %v", err)
	}
	fresh, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	if err := recoverIn(fresh); err != nil {
		t.Errorf("the recovery in a new session: %v", err)
	}
	rs, err := fresh.Query(ctx, `SELECT nodeport, success, result FROM run_command_on_workers($$SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()$$)`)
	if err != nil {
		t.Fatal(err)
	}
	var port int
	var ok bool
	var result string
	if _, err := pgx.ForEachRow(rs, []any{&port, &ok, &result}, func() error {
		if !ok || result != "0" {
			t.Errorf("worker %d: prepared transactions left %q (ran: %v), want 0", port, result, ok)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
