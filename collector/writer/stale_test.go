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

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/lease"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/writer"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// staleSeries is how many series the batches of the stale tests carry: on
// Citus (8 shards on two workers) sw1's series fall on both workers, so a
// merge is a transaction across them (a two-phase commit; with 5 series
// they were all on one).
const staleSeries = 8

// staleBatch is a batch of target sw1 formed by collector at epoch: every
// series has a sample at each step (ms after base, the value the step),
// and a CNP event at each of events.
func staleBatch(base int64, collector string, epoch int64, steps []int, events ...int) *rows.Batch {
	b := &rows.Batch{ID: rows.NewBatchID(), Collector: collector, Target: "sw1", Epoch: epoch}
	at := func(step int) int64 { return base + int64(step)*int64(time.Millisecond) }
	for i := range staleSeries {
		path := fmt.Sprintf("/x[i=%d]", i)
		id := rows.SeriesID("sw1", path)
		b.Series = append(b.Series, rows.Series{ID: id, Target: "sw1", Path: path, FirstSeen: base})
		for _, s := range steps {
			b.Samples = append(b.Samples, rows.Sample{TS: at(s), SeriesID: id, Kind: rows.ValInt, Int: int64(s)})
		}
	}
	for _, e := range events {
		b.Events = append(b.Events, rows.Event{TS: at(e), Target: "sw1", Kind: "cnp", Interface: "wan", Action: "PAUSE", Details: "{}"})
	}
	return b
}

// staleCounts are a writer's counters of stale batches.
type staleCounts struct {
	Merged, MergedEvents, Duplicates, Refused, Stale, Replayed float64
}

func staleCountsOf(m *collectormetrics.Metrics) staleCounts {
	return staleCounts{
		Merged:       testutil.ToFloat64(m.StaleMerged.WithLabelValues("samples")),
		MergedEvents: testutil.ToFloat64(m.StaleMerged.WithLabelValues("events")),
		Duplicates:   testutil.ToFloat64(m.DroppedRows.WithLabelValues(collectormetrics.DropStaleDuplicate)),
		Refused:      testutil.ToFloat64(m.DroppedRows.WithLabelValues(collectormetrics.DropStaleEpoch)),
		Stale:        testutil.ToFloat64(m.Batches.WithLabelValues("stale")),
		Replayed:     testutil.ToFloat64(m.Batches.WithLabelValues("replayed")),
	}
}

// storedSteps is how many samples of each step (value) samples holds,
// and whether any (series_id, ts) is there twice.
func storedSteps(t *testing.T, pool *pgxpool.Pool) (map[int64]int64, bool) {
	t.Helper()
	rs, err := pool.Query(context.Background(), `SELECT v_int, count(*) FROM samples GROUP BY v_int`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int64{}
	var v, n int64
	if _, err := pgx.ForEachRow(rs, []any{&v, &n}, func() error { got[v] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	twice := count(t, pool, `SELECT count(*) FROM (SELECT 1 FROM samples GROUP BY series_id, ts HAVING count(*) > 1) d`) > 0
	return got, twice
}

// waitLockWaiters waits until n backends wait for a lock while running a
// statement containing query (lockWaits).
func waitLockWaiters(t *testing.T, pool *pgxpool.Pool, citus bool, query string, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := lockWaits(t, pool, citus, query)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends wait for a lock in %q, want %d", got, query, n)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}

// lockWaits counts the backends waiting for a lock while running a
// statement containing query; on Citus on every node (citus_lock_waits: a
// statement the coordinator sent to a worker waits there).
func lockWaits(t *testing.T, pool *pgxpool.Pool, citus bool, query string) int64 {
	t.Helper()
	if citus {
		// A transaction that waits on the coordinator before it reached a
		// worker (an advisory lock: lease.FenceLockSQL) is in
		// pg_stat_activity only.
		return count(t, pool, `SELECT GREATEST(
  (SELECT count(*) FROM citus_lock_waits WHERE blocked_statement LIKE '%' || $1 || '%'),
  (SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'))`, query)
	}
	return count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, query)
}

// waitsOrReturns polls until a statement containing query, run in a
// goroutine that sends its result on done, waits for a lock (lockWaits) or
// has returned: then it gives its result and true.
func waitsOrReturns[T any](t *testing.T, pool *pgxpool.Pool, citus bool, query string, done <-chan T) (T, bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for lockWaits(t, pool, citus, query) == 0 {
		select {
		case r := <-done:
			return r, true
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q neither returned nor waits for a lock", query)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
	var zero T
	return zero, false
}

// staleOwner starts the test of a stale batch: a database where collector
// b holds sw1's lease at epoch, and b's writer (fencing on), which stored
// the steps 1 and 3 of every series (and a CNP at each of events). It
// returns the pool, b's writer, the time base and wait (until a writer has
// no batch of sw1 pending).
func staleOwner(t *testing.T, pool *pgxpool.Pool, epoch int64, events ...int) (*writer.Writer, int64, func(*writer.Writer)) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO leases (target, owner, epoch, expires_at) VALUES ('sw1', 'b', $1, now() + interval '1 hour')`, epoch); err != nil {
		t.Fatal(err)
	}
	owner, _, stop := newWriter(t, pool, writer.WithFencing(true))
	t.Cleanup(stop)
	wait := func(w *writer.Writer) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := w.WaitTarget(wctx, "sw1"); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Now().Truncate(time.Millisecond).UnixNano()
	owner.Enqueue(staleBatch(base, "b", epoch, []int{1, 3}, events...))
	wait(owner)
	return owner, base, wait
}

// TestStaleBatchMerged: collector a lost sw1's lease to b (a zombie still
// writing, or its spill replayed after the lease moved); its batch's
// epoch is stale. While b's next batch is in flight (its transaction holds
// the lease row FOR SHARE, held up on the ledger by the test), a's batch
// waits; then of its samples those b stored (steps 1 and 4, 4 committed
// by the batch it waited for) are duplicates, those only a received and
// older than what b stored (2, 5) are stored, and those newer than
// anything stored (7: b may still hold them) are refused; of its CNPs the
// one b stored is a duplicate, the other stored. Replayed (same id, or
// another id the ledger does not know), nothing is stored twice.
func TestStaleBatchMerged(t *testing.T) {
	pool, _ := pgtest.New(t)
	owner, base, wait := staleOwner(t, pool, 2, 1)
	ctx := context.Background()
	zombie, zm, stopZombie := newWriter(t, pool, writer.WithFencing(true))
	defer stopZombie()

	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx) //nolint:errcheck // committed by then
	if _, err := hold.Exec(ctx, `LOCK TABLE ingest_ledger IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	owner.Enqueue(staleBatch(base, "b", 2, []int{4, 6}))
	waitLockWaiters(t, pool, false, "INSERT INTO ingest_ledger", 1)
	stale := staleBatch(base, "a", 1, []int{1, 2, 4, 5, 7}, 1, 2)
	zombie.Enqueue(stale)
	waitLockWaiters(t, pool, false, "FOR NO KEY UPDATE", 1)
	if got, _ := storedSteps(t, pool); got[2] != 0 {
		t.Errorf("%d samples of the stale batch stored while the owner's transaction was in flight", got[2])
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wait(owner)
	wait(zombie)

	staleMerged(t, pool, zombie, zm, stale, wait)
}

// staleMerged checks what became of the stale batch of
// TestStaleBatchMerged (which zombie's writer stored), and of its replays.
func staleMerged(t *testing.T, pool *pgxpool.Pool, zombie *writer.Writer, zm *collectormetrics.Metrics, stale *rows.Batch, wait func(*writer.Writer)) {
	t.Helper()
	const n = staleSeries
	want := map[int64]int64{1: n, 2: n, 3: n, 4: n, 5: n, 6: n}
	for _, tt := range []struct {
		desc  string
		batch func() *rows.Batch
		want  staleCounts
	}{
		{"merged behind the owner's batch in flight", nil,
			staleCounts{Merged: 2 * n, MergedEvents: 1, Duplicates: 2*n + 1, Refused: n, Stale: 1}},
		{"the same batch again (a spill replayed): the ledger has it", func() *rows.Batch { b := *stale; return &b },
			staleCounts{Merged: 2 * n, MergedEvents: 1, Duplicates: 2*n + 1, Refused: n, Stale: 1, Replayed: 1}},
		{"and again", func() *rows.Batch { b := *stale; return &b },
			staleCounts{Merged: 2 * n, MergedEvents: 1, Duplicates: 2*n + 1, Refused: n, Stale: 1, Replayed: 2}},
		{"under another id: the ledger does not know it, the anti-join does", func() *rows.Batch {
			b := *stale
			b.ID = rows.NewBatchID()
			return &b
		}, staleCounts{Merged: 2 * n, MergedEvents: 1, Duplicates: 2*n + 1 + 4*n + 2, Refused: 2 * n, Stale: 2, Replayed: 2}},
	} {
		if tt.batch != nil {
			zombie.Enqueue(tt.batch())
			wait(zombie)
		}
		if diff := cmp.Diff(tt.want, staleCountsOf(zm)); diff != "" {
			t.Errorf("%s: counters (-want, +got):\n%s", tt.desc, diff)
		}
		got, twice := storedSteps(t, pool)
		if diff := cmp.Diff(want, got); diff != "" || twice {
			t.Errorf("%s: samples per step (-want, +got):\n%s; a (series_id, ts) stored twice: %v", tt.desc, diff, twice)
		}
		if n := count(t, pool, `SELECT count(*) FROM events`); n != 2 {
			t.Errorf("%s: %d events, want 2", tt.desc, n)
		}
		if n := count(t, pool, `SELECT count(*) FROM latest WHERE v_int <> 6`); n != 0 {
			t.Errorf("%s: %d series' latest not the owner's newest value", tt.desc, n)
		}
	}
	if n := count(t, pool, `SELECT count(DISTINCT batch_id) FROM ingest_ledger WHERE collector = 'a' AND epoch = 1`); n != 2 {
		t.Errorf("%d batches of a's stale ones in the ledger, want 2 (the batch, and its copy under another id)", n)
	}
}

// TestCitusStaleBatchMerged is TestStaleBatchMerged on Citus, the owner's
// batches stored before the stale one comes: the same merge, counted the
// same (stale batches were refused whole on Citus: the one-node merge's
// statement is not one Citus plans).
func TestCitusStaleBatchMerged(t *testing.T) {
	pool, _ := pgtest.NewCitus(t)
	owner, base, wait := staleOwner(t, pool, 2, 1)
	zombie, zm, stopZombie := newWriter(t, pool, writer.WithFencing(true))
	defer stopZombie()
	owner.Enqueue(staleBatch(base, "b", 2, []int{4, 6}))
	wait(owner)
	stale := staleBatch(base, "a", 1, []int{1, 2, 4, 5, 7}, 1, 2)
	zombie.Enqueue(stale)
	wait(zombie)
	staleMerged(t, pool, zombie, zm, stale, wait)
}

// TestCitusStaleMergeBehindOwner: on Citus, a stale batch's merge waits
// for the owner's transaction in flight (its fencing check holds the
// target's advisory lock, lease.FenceLockSQL; the test holds it up on its
// ledger row), as on one node (TestStaleBatchMerged). On Citus that transaction is one part of
// the owner's batch (a shard's series): the merge then sees what it
// committed, and the owner's later parts commit after the merge or before
// it. Whichever, nothing is stored twice or lost: the owner's samples all
// stored; of the stale batch's, 2 (older than every series' latest) for
// every series, 5 at least for the part in flight's series (older than
// their latest once it committed), 7 (newer than anything stored) for
// none; its CNPs once.
func TestCitusStaleMergeBehindOwner(t *testing.T) {
	pool, _ := pgtest.NewCitus(t)
	owner, base, wait := staleOwner(t, pool, 2, 1)
	zombie, _, stopZombie := newWriter(t, pool, writer.WithFencing(true))
	defer stopZombie()
	inFlight := staleBatch(base, "b", 2, []int{4, 6})
	hold := holdLedger(t, pool, true, inFlight)
	owner.Enqueue(inFlight)
	waitLockWaiters(t, pool, true, "INSERT INTO ingest_ledger", 1)
	zombie.Enqueue(staleBatch(base, "a", 1, []int{1, 2, 4, 5, 7}, 1, 2))
	// On Citus the zombie's fencing check (the target's advisory lock
	// shared, lease.FenceLockSQL) finds the lease not its own at once; its
	// merge waits for the lock exclusive (lease.TakeoverLockSQL).
	waitLockWaiters(t, pool, true, "pg_advisory_xact_lock(", 1)
	if got, _ := storedSteps(t, pool); got[2] != 0 {
		t.Errorf("%d samples of the stale batch stored while the owner's transaction was in flight", got[2])
	}
	if err := hold.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	wait(owner)
	wait(zombie)
	got, twice := storedSteps(t, pool)
	n := int64(staleSeries)
	if got[1] != n || got[2] != n || got[3] != n || got[4] != n || got[6] != n || got[5] < 1 || got[5] > n || got[7] != 0 || twice {
		t.Errorf("samples per step %v (a (series_id, ts) twice: %v): want %d of 1, 2, 3, 4 and 6, 1 to %d of 5, none of 7", got, twice, n, n)
	}
	if c := count(t, pool, `SELECT count(*) FROM events`); c != 2 {
		t.Errorf("%d events, want 2", c)
	}
}

// TestCitusStaleEventsCut: on Citus a batch's events are stored after its
// parts, in an INSERT of their own that no ledger row guards. The
// connection cut at that INSERT and the lease moved to another collector
// before the writer's retry, the retry finds the batch stale and merges it
// (mergeStaleCitus) with every part in the ledger: its events are offered
// still, as storeCitus offers them, stored once (those the cut INSERT
// stored, its answer lost, found there; a refused one dead-lettered, the
// others stored), no event counted as a conflict. The merge returned
// before the events when every part was in the ledger: the events of a
// batch cut before them were lost. The parts are this writer's, stored
// before the lease moved: the batch is stored (or partial), not replayed,
// and rows_written_total counts its samples and its events once, those
// the cut INSERT stored too (it counted neither: the retry found the parts
// in the ledger and the events in the table). A refused event whose dead
// letter PostgreSQL refuses too is kept in the refused file, the batch
// partial (it was the one row counted as stale_epoch, and before that the
// whole batch: all 13 rows, though stored).
func TestCitusStaleEventsCut(t *testing.T) {
	for _, tt := range []struct {
		desc        string
		at          cutAt
		bad         bool // a third event PostgreSQL refuses
		deadRefused bool // and its dead letter too
		outcome     string
	}{
		{"the events never sent", beforeSent, false, false, "stored"},
		{"the events stored, their answer lost", afterCommit, false, false, "stored"},
		{"the events never sent, one of them refused", beforeSent, true, false, "partial"},
		{"the events never sent, one of them refused, and its dead letter", beforeSent, true, true, "partial"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			ctx := context.Background()
			check, dsn := pgtest.NewCitus(t)
			if _, err := check.Exec(ctx, `INSERT INTO leases (target, owner, epoch, expires_at) VALUES ('sw1', 'a', 1, now() + interval '1 hour')`); err != nil {
				t.Fatal(err)
			}
			cut := &cutter{match: eventsInsert, at: map[int]cutAt{1: tt.at}, onFault: func() {
				// b takes sw1 between a's parts and its events.
				if _, err := check.Exec(ctx, `UPDATE leases SET owner = 'b', epoch = 2 WHERE target = 'sw1'`); err != nil {
					t.Error(err)
				}
			}}
			base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano()
			b := staleBatch(base, "a", 1, []int{1, 3}, 1, 2)
			var dead, kept int64
			if tt.bad {
				b.Events = append(b.Events, rows.Event{TS: base, Target: "sw1", Kind: "cnp", Details: "{bad json"})
				dead = 1
			}
			if tt.deadRefused {
				if _, err := check.Exec(ctx, fmt.Sprintf(`ALTER TABLE dead_letters ADD CONSTRAINT test_refused CHECK (batch_id <> %d)`, b.ID)); err != nil {
					t.Fatal(err)
				}
				dead, kept = 0, 1
			}
			refusedFile := filepath.Join(t.TempDir(), "dead_letters.jsonl")
			w, m, stop := newWriter(t, cut.pool(t, dsn), writer.WithFencing(true), writer.WithRefusedFile(refusedFile))
			enqueue(t, w, []*rows.Batch{b})
			stop()
			if got := cut.faults(); got != 1 {
				t.Fatalf("%d connections cut, want 1", got)
			}
			for _, c := range []struct {
				desc, sql string
				want      int64
			}{
				{"events", `SELECT count(*) FROM events WHERE batch_id = $1`, 2},
				{"samples", `SELECT count(*) FROM samples WHERE batch_id = $1`, 2 * staleSeries},
				{"dead letters", `SELECT count(*) FROM dead_letters WHERE batch_id = $1`, dead},
				{"ledger rows of the batch, summed", `SELECT sum(rows) FROM ingest_ledger WHERE batch_id = $1`, int64(2*staleSeries + len(b.Events))},
			} {
				if n := count(t, check, c.sql, b.ID); n != c.want {
					t.Errorf("%s: %d, want %d", c.desc, n, c.want)
				}
			}
			if diff := cmp.Diff(staleCounts{}, staleCountsOf(m)); diff != "" {
				t.Errorf("counters (-want, +got):\n%s", diff)
			}
			if got := testutil.ToFloat64(m.DeadLettersRefused); got != float64(kept) {
				t.Errorf("dead_letters_refused_total = %v, want %v", got, kept)
			}
			if got := refusedLines(t, refusedFile); len(got) != int(kept) {
				t.Errorf("%d lines in the refused file, want %d", len(got), kept)
			}
			if got := testutil.ToFloat64(m.Batches.WithLabelValues(tt.outcome)); got != 1 {
				t.Errorf("batches_total{outcome=%s} = %v, want 1", tt.outcome, got)
			}
			if got := testutil.ToFloat64(m.EventConflicts); got != 0 {
				t.Errorf("event_conflicts_total = %v, want 0", got)
			}
			if got := testutil.ToFloat64(m.DeadLetters); got != float64(dead) {
				t.Errorf("dead_letters_total = %v, want %v", got, dead)
			}
			for table, want := range map[string]float64{"samples": 2 * staleSeries, "events": 2} {
				if got := testutil.ToFloat64(m.RowsWritten.WithLabelValues(table)); got != want {
					t.Errorf("rows_written_total{table=%s} = %v, want %v", table, got, want)
				}
			}
		})
	}
}

// TestStaleMergesSerialised: two collectors that lost sw1's lease (two
// zombies) merge stale batches holding the same values only they received,
// at the same moment (both waited for the owner's transaction in flight,
// here the test's FOR SHARE on the lease row): the lease row's lock runs
// one merge after the other, so each value is stored once.
func TestStaleMergesSerialised(t *testing.T) {
	pool, _ := pgtest.New(t)
	_, base, wait := staleOwner(t, pool, 3)
	ctx := context.Background()
	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx) //nolint:errcheck // committed by then
	if _, err := hold.Exec(ctx, `SELECT epoch FROM leases WHERE target = 'sw1' AND owner = 'b' FOR SHARE`); err != nil {
		t.Fatal(err)
	}
	var ms []*collectormetrics.Metrics
	var ws []*writer.Writer
	for i, c := range []string{"a", "c"} {
		w, m, stop := newWriter(t, pool, writer.WithFencing(true))
		defer stop()
		w.Enqueue(staleBatch(base, c, int64(i+1), []int{2}))
		ms, ws = append(ms, m), append(ws, w)
	}
	waitLockWaiters(t, pool, false, "FOR NO KEY UPDATE", 2)
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var sum staleCounts
	for i, w := range ws {
		wait(w)
		c := staleCountsOf(ms[i])
		sum.Merged, sum.Duplicates, sum.Stale = sum.Merged+c.Merged, sum.Duplicates+c.Duplicates, sum.Stale+c.Stale
	}
	if diff := cmp.Diff(staleCounts{Merged: staleSeries, Duplicates: staleSeries, Stale: 2}, sum); diff != "" {
		t.Errorf("both zombies' counters (-want, +got):\n%s", diff)
	}
	got, twice := storedSteps(t, pool)
	if diff := cmp.Diff(map[int64]int64{1: staleSeries, 2: staleSeries, 3: staleSeries}, got); diff != "" || twice {
		t.Errorf("samples per step (-want, +got):\n%s; a (series_id, ts) stored twice: %v", diff, twice)
	}
}

// TestTakeoverWaitsForWriter: a collector taking over a lease (it expired:
// lease.Manager.Acquire, epoch + 1) while the owner's transaction is in
// flight (its fencing check holds the lease row FOR SHARE, on Citus the
// target's advisory lock; the test holds it up on its ledger row) waits
// for that transaction: what it writes is
// stored under its epoch, and only then is the lease the taker's; the
// owner's next batch is stale. On one node and on Citus, where the lease
// row is on every node (a reference table), the owner's transaction writes
// on a worker, and a batch is a transaction per shard.
func TestTakeoverWaitsForWriter(t *testing.T) {
	for _, db := range bothDBs {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			pool, _ := db.new(t)
			citus := db.name == "citus"
			owner, base, wait := staleOwner(t, pool, 1)
			if _, err := pool.Exec(ctx, `UPDATE leases SET expires_at = now() - interval '1 hour' WHERE target = 'sw1'`); err != nil {
				t.Fatal(err)
			}
			inFlight := staleBatch(base, "b", 1, []int{4, 6})
			hold := holdLedger(t, pool, citus, inFlight)
			owner.Enqueue(inFlight)
			waitLockWaiters(t, pool, citus, "INSERT INTO ingest_ledger", 1)
			type taken struct {
				l   lease.Lease
				ok  bool
				err error
			}
			done := make(chan taken, 1)
			go func() {
				l, ok, err := lease.New(pool, "a", "", time.Minute).Acquire(ctx, "sw1")
				done <- taken{l, ok, err}
			}()
			// On Citus the owner's transaction holds the target's advisory
			// lock (lease.FenceLockSQL), not the lease row.
			waitsIn := "FOR UPDATE"
			if citus {
				waitsIn = "pg_advisory_xact_lock("
			}
			if r, returned := waitsOrReturns(t, pool, citus, waitsIn, done); returned {
				t.Fatalf("the takeover did not wait for the owner's transaction in flight: %+v (%v)", r, r.err)
			}
			if err := hold.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil || !r.ok || r.l != (lease.Lease{Epoch: 2, From: "b"}) {
				t.Fatalf("takeover: %+v %v (%v), want epoch 2 from b", r.l, r.ok, r.err)
			}
			wait(owner)
			// On one node the batch in flight is one transaction; on Citus
			// each of its parts (a shard's series) is: the part in flight
			// is stored, the parts after the takeover are stale, and their
			// samples, newer than anything stored, refused.
			got, twice := storedSteps(t, pool)
			if got[4] != got[6] || got[4] == 0 || !citus && got[4] != staleSeries || twice {
				t.Errorf("samples per step %v (a series' twice: %v): the owner's transaction in flight not stored whole under its epoch", got, twice)
			}
			// The owner's next batch is stale: nothing of it, newer than
			// what is stored, is stored (the taker may hold it).
			owner.Enqueue(staleBatch(base, "b", 1, []int{7}))
			wait(owner)
			if got, _ := storedSteps(t, pool); got[7] != 0 {
				t.Errorf("%d samples of the owner's batch after the takeover stored", got[7])
			}
		})
	}
}

// refuseSample makes the sample of series 0 at step of staleBatch b
// (made with steps) one PostgreSQL refuses (a NUL in text).
func refuseSample(b *rows.Batch, steps []int, step int) {
	i := slices.Index(steps, step)
	s := &b.Samples[i]
	*s = rows.Sample{TS: s.TS, SeriesID: s.SeriesID, Kind: rows.ValText, Text: "a\x00b"}
}

// refusedEvent is an event of sw1 at base PostgreSQL refuses (its details
// not JSON).
func refusedEvent(base int64) rows.Event {
	return rows.Event{TS: base, Target: "sw1", Kind: "cnp", Interface: "lan", Details: "{bad json"}
}

// bothDBs are the two kinds of database a test runs on: one PostgreSQL and
// the shared Citus cluster.
var bothDBs = []struct {
	name string
	new  func(testing.TB) (*pgxpool.Pool, string)
}{{"postgresql", pgtest.New}, {"citus", pgtest.NewCitus}}

// holdLedger opens a transaction that writes the ledger rows batch b will
// write (on one node its id; on Citus its id under each of its series as
// shard key: one of them is each part's), so that the writer storing b
// waits inside its transaction, after its fencing check, until the test
// rolls this one back.
func holdLedger(t *testing.T, pool *pgxpool.Pool, citus bool, b *rows.Batch) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx) }) //nolint:errcheck // rolled back by then
	sql, args := `INSERT INTO ingest_ledger (batch_id, collector, target, epoch, rows) VALUES ($1, 'hold', $2, 0, 0)`, []any{b.ID, b.Target}
	if citus {
		var keys []int64
		for _, s := range b.Series {
			keys = append(keys, s.ID)
		}
		sql = `INSERT INTO ingest_ledger (shard_key, batch_id, collector, target, epoch, rows)
			SELECT k, $1, 'hold', $2, 0, 0 FROM unnest($3::bigint[]) k`
		args = append(args, keys)
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
	return tx
}

// TestStaleRefusedRow: a stale batch (its lease moved to b, which stored
// the steps 1 and 3 of every series) holds a row PostgreSQL refuses (a
// sample with a NUL in its text, an event whose details are not JSON, a
// series a constraint the test adds refuses: its samples are refused).
// The merge stores what the owner has not stored (step 2, older than the
// owner's newest), dead-letters the refused row only this collector holds
// (or keeps it in the refused file when its dead letter is refused too),
// counts a refused row the owner stored or dead-lettered as a duplicate
// and one newer than what is stored as stale_epoch, as its good rows: the
// batch is partial when it dead-lettered a row, each row counted once.
// On one node and on Citus (mergeStaleCitus: the part's samples to merge
// and the events split out). On the old code the whole batch was counted
// stale_epoch and its good rows, which only this collector held, were
// lost; on Citus too for a refused series (the series are written before
// the parts there), on the code before mergeStaleCitus split them out.
// Each case again with the merge's COMMIT cut after it ran, its
// answer lost: the retry finds the batch in the ledger and counts what the
// merge did, the same (commitMerge); on the code before it, a replay, its
// merged rows and dead letters counted nowhere. And with the writer
// stopped once that answer is lost (the batch requeued), its retry by the
// next Run counts the same; before writeGroup carried the requeued batch's
// try, a replay (on Citus, before writeRetrying went to the merge first,
// too: storeCitus found every part in the ledger).
func TestStaleRefusedRow(t *testing.T) {
	const n = staleSeries
	for _, tt := range []struct {
		desc        string
		ownerBad    bool // the owner's batch has the same refused sample (step 2) and event, dead-lettered by it
		badStep     int  // the step of the stale batch's refused sample (0: none)
		badEvent    bool // and a refused event
		deadRefused bool // the dead letters of the stale batch refused too
		steps       map[int64]int64
		counts      staleCounts
		outcome     string
		dead, kept  int64 // the stale batch's rows dead-lettered, kept in the refused file
		samples     float64
		series      bool // PostgreSQL refuses the stale batch's series 0 (a constraint on series)
	}{
		{"no row refused", false, 0, false, false,
			map[int64]int64{1: n, 2: n, 3: n},
			staleCounts{Merged: n, MergedEvents: 1, Duplicates: n, Refused: n, Stale: 1}, "stale", 0, 0, n, false},
		{"a sample and an event only the stale batch holds", false, 2, true, false,
			map[int64]int64{1: n, 2: n - 1, 3: n},
			staleCounts{Merged: n - 1, MergedEvents: 1, Duplicates: n, Refused: n}, "partial", 2, 0, n - 1, false},
		{"and their dead letters refused too", false, 2, true, true,
			map[int64]int64{1: n, 2: n - 1, 3: n},
			staleCounts{Merged: n - 1, MergedEvents: 1, Duplicates: n, Refused: n}, "partial", 0, 2, n - 1, false},
		{"a sample newer than what is stored: the owner may hold it", false, 5, false, false,
			map[int64]int64{1: n, 2: n, 3: n},
			staleCounts{Merged: n, MergedEvents: 1, Duplicates: n, Refused: n, Stale: 1}, "stale", 0, 0, n, false},
		{"a sample and an event the owner dead-lettered", true, 2, true, false,
			map[int64]int64{1: n, 2: n - 1, 3: n},
			staleCounts{MergedEvents: 1, Duplicates: 2*n + 1, Refused: n, Stale: 1}, "stale", 0, 0, 0, false},
		{"a series refused: its sample only the stale batch holds", false, 0, false, false,
			map[int64]int64{1: n, 2: n - 1, 3: n},
			staleCounts{Merged: n - 1, MergedEvents: 1, Duplicates: n, Refused: n}, "partial", 1, 0, n - 1, true},
	} {
		for _, db := range bothDBs {
			for _, fault := range []struct {
				lost, stopped bool
				regained      bool // the lease back with a, at epoch 3, before the stale batch is written
				name          string
			}{{false, false, false, ""}, {true, false, false, ", the merge's COMMIT answer lost"},
				{true, true, false, ", the merge's COMMIT answer lost, the writer stopped before the retry"},
				{true, true, true, ", the merge's COMMIT answer lost, the writer stopped before the retry, the lease back with it"}} {
				if fault.stopped && testing.Short() {
					continue // the race step (-short): the unit step runs them
				}
				lost, name := fault.lost, db.name+"/"+tt.desc+fault.name
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					ctx := context.Background()
					pool, dsn := db.new(t)
					if _, err := pool.Exec(ctx, `INSERT INTO leases (target, owner, epoch, expires_at) VALUES ('sw1', 'b', 2, now() + interval '1 hour')`); err != nil {
						t.Fatal(err)
					}
					base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano()
					ownerSteps := []int{1, 3}
					if tt.ownerBad {
						ownerSteps = []int{1, 2, 3}
					}
					ob := staleBatch(base, "b", 2, ownerSteps)
					if tt.ownerBad {
						refuseSample(ob, ownerSteps, 2)
						ob.Events = append(ob.Events, refusedEvent(base))
					}
					owner, _, stopOwner := newWriter(t, pool, writer.WithFencing(true))
					enqueue(t, owner, []*rows.Batch{ob})
					stopOwner()

					if fault.regained {
						// a's fencing check then reads an epoch, not none
						// (on Citus after the part's ledger row: its
						// conflict came first).
						if _, err := pool.Exec(ctx, `UPDATE leases SET owner = 'a', epoch = 3 WHERE target = 'sw1'`); err != nil {
							t.Fatal(err)
						}
					}
					steps := []int{1, 2, 5}
					sb := staleBatch(base, "a", 1, steps, 2)
					if tt.badStep != 0 {
						refuseSample(sb, steps, tt.badStep)
					}
					if tt.badEvent {
						sb.Events = append(sb.Events, refusedEvent(base))
					}
					if tt.series {
						sb.Series[0].YangType, sb.Series[0].Unit = "uint64", "test-refused"
						if _, err := pool.Exec(ctx, `ALTER TABLE series ADD CONSTRAINT test_refused CHECK (unit <> 'test-refused')`); err != nil {
							t.Fatal(err)
						}
					}
					if tt.deadRefused {
						if _, err := pool.Exec(ctx, fmt.Sprintf(`ALTER TABLE dead_letters ADD CONSTRAINT test_refused CHECK (batch_id <> %d)`, sb.ID)); err != nil {
							t.Fatal(err)
						}
					}
					refusedFile := filepath.Join(t.TempDir(), "dead_letters.jsonl")
					// Lost: the merge's COMMIT (the first after its lease
					// row's lock: on Citus a refused series' transaction
					// commits before the merge) commits, its answer lost;
					// the retry finds the batch in the ledger.
					merging := false
					cut := &cutter{match: func(data pgx.TraceQueryStartData) bool {
						merging = merging || strings.HasSuffix(data.SQL, "FOR NO KEY UPDATE")
						return merging && strings.HasPrefix(data.SQL, "commit")
					}}
					if lost {
						cut.at = map[int]cutAt{1: afterCommit}
					}
					var arm func(stop func())
					if fault.stopped {
						// The writer's ctx ends once the answer is lost; a
						// second Run retries the batch (requeued).
						arm = func(stop func()) { cut.onCut = stop }
					}
					m := storeBacklogStopped(t, cut.pool(t, dsn), 0, []*rows.Batch{sb}, arm, writer.WithFencing(true),
						writer.WithRefusedFile(refusedFile))
					if got, want := cut.faults(), len(cut.at); got != want {
						t.Fatalf("%d connections cut, want %d", got, want)
					}

					if db.name == "citus" {
						// The merge wrote a ledger row on the shard of each
						// series and the event on sw1's shard of events:
						// its transaction spans the workers, and its COMMIT
						// is Citus's two-phase commit.
						var ids []int64
						for _, sr := range sb.Series {
							ids = append(ids, sr.ID)
						}
						if n := count(t, pool, `SELECT count(DISTINCT (nodename, nodeport)) FROM pg_dist_shard_placement
							WHERE shardid IN (SELECT get_shard_id_for_distribution_column('public.samples', id) FROM unnest($1::bigint[]) id
							  UNION SELECT get_shard_id_for_distribution_column('public.events', 'sw1'::text))`, ids); n < 2 {
							t.Fatalf("the stale batch's shards on %d nodes, want the merge to span 2", n)
						}
					}
					mergedOnce(t, pool, m, sb, mergeWant{tt.steps, tt.counts, tt.outcome, tt.dead, tt.kept, tt.samples})
					if tt.ownerBad {
						if got := count(t, pool, `SELECT count(*) FROM dead_letters`); got != 2 {
							t.Errorf("%d dead letters, want 2 (the owner's)", got)
						}
					}
					if lines := refusedLines(t, refusedFile); int64(len(lines)) != tt.kept {
						t.Errorf("%d lines in the refused file, want %d", len(lines), tt.kept)
					}
				})
			}
		}
	}
}

// mergeWant is what a merge of TestStaleRefusedRow's stale batch (its
// steps 1, 2 and 5, a CNP at 2) leaves: samples per step (the owner's too),
// its counters, the batch's outcome, its rows dead-lettered and kept in
// the refused file, and rows_written_total{table=samples}.
type mergeWant struct {
	steps      map[int64]int64
	counts     staleCounts
	outcome    string
	dead, kept int64
	samples    float64
}

// mergedOnce checks that the stale batch sb is stored as want says, each
// row once, and counted once in m: its CNP stored, its dead letters
// written, its ledger rows under its id, no event met twice.
func mergedOnce(t *testing.T, pool *pgxpool.Pool, m *collectormetrics.Metrics, sb *rows.Batch, want mergeWant) {
	t.Helper()
	got, twice := storedSteps(t, pool)
	delete(got, 0) // the refused samples' v_int, none stored
	if diff := cmp.Diff(want.steps, got); diff != "" || twice {
		t.Errorf("samples per step (-want, +got):\n%s; a (series_id, ts) stored twice: %v", diff, twice)
	}
	for _, c := range []struct {
		desc, sql string
		want      int64
	}{
		{"events", `SELECT count(*) FROM events WHERE batch_id = $1`, 1},
		{"dead letters of the stale batch", `SELECT count(*) FROM dead_letters WHERE batch_id = $1`, want.dead},
		{"batches of that id in the ledger", `SELECT count(DISTINCT batch_id) FROM ingest_ledger WHERE batch_id = $1`, 1},
	} {
		if got := count(t, pool, c.sql, sb.ID); got != c.want {
			t.Errorf("%s: %d, want %d", c.desc, got, c.want)
		}
	}
	if diff := cmp.Diff(want.counts, staleCountsOf(m)); diff != "" {
		t.Errorf("counters (-want, +got):\n%s", diff)
	}
	for _, c := range []struct {
		desc      string
		got, want float64
	}{
		{"batches_total{outcome=" + want.outcome + "}", testutil.ToFloat64(m.Batches.WithLabelValues(want.outcome)), 1},
		{"rows_written_total{table=samples}", testutil.ToFloat64(m.RowsWritten.WithLabelValues("samples")), want.samples},
		{"rows_written_total{table=events}", testutil.ToFloat64(m.RowsWritten.WithLabelValues("events")), 1},
		{"dead_letters_total", testutil.ToFloat64(m.DeadLetters), float64(want.dead)},
		{"dead_letters_refused_total", testutil.ToFloat64(m.DeadLettersRefused), float64(want.kept)},
		{"event_conflicts_total", testutil.ToFloat64(m.EventConflicts), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.desc, c.got, c.want)
		}
	}
}
