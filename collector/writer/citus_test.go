package writer_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/spill"
	"github.com/lhcnp/lhcnp/collector/writer"
	"github.com/lhcnp/lhcnp/internal/pgserver"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// citusWorkload is a seeded workload of three switches: 12 batches each of
// 40 series (ints, floats, numerics, text; the series sent with a switch's
// first batch only, as the collector does), a few CNP events per batch. The
// same seed gives the same batches, ids included.
func citusWorkload(seed uint64) []*rows.Batch {
	r := rand.New(rand.NewPCG(seed, 1))
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	var bs []*rows.Batch
	for k := range 12 {
		for _, target := range []string{"sw1", "sw2", "sw3"} {
			b := &rows.Batch{ID: int64(r.Uint64() >> 1), Collector: "c", Target: target, Epoch: 1}
			ts := t0 + int64(k)*int64(time.Second)
			for i := range 40 {
				path := fmt.Sprintf("/x[i=%d]", i)
				id := rows.SeriesID(target, path)
				if k == 0 {
					b.Series = append(b.Series, rows.Series{ID: id, Target: target, Path: path, SchemaPath: "/x", FirstSeen: ts})
				}
				s := rows.Sample{TS: ts + int64(i)*int64(time.Millisecond), SeriesID: id}
				switch i % 4 {
				case 0:
					s.Kind, s.Int = rows.ValInt, r.Int64N(1_000_000)
				case 1:
					s.Kind, s.Float = rows.ValFloat, r.Float64()
				case 2:
					s.Kind, s.Text = rows.ValNum, fmt.Sprint(r.Uint64())
				default:
					s.Kind, s.Text = rows.ValText, fmt.Sprintf("v%d", r.IntN(100))
				}
				b.Samples = append(b.Samples, s)
			}
			for q := range r.IntN(3) {
				b.Events = append(b.Events, rows.Event{TS: ts, Target: target, Kind: "cnp", Interface: "wan", Queue: int64(q), Details: "{}"})
			}
			bs = append(bs, b)
		}
	}
	return bs
}

// tableRows is every row of what the readers query, as a record's text in a
// fixed order: samples, latest, series, events, the ledger summed per batch
// (one row per batch on one node, one per part on Citus) and the view
// series_values.
func tableRows(t *testing.T, pool *pgxpool.Pool) map[string][]string {
	t.Helper()
	// The order is the outer query's: Citus keeps no order of a subquery
	// (nor the names of its columns, which row_to_json would show).
	queries := map[string]struct{ sql, order string }{
		"samples": {`SELECT ts, series_id, v_int, v_float, v_num, v_bool, v_text, flags, batch_id FROM samples`, "series_id, ts, batch_id"},
		"latest":  {`SELECT * FROM latest`, "series_id"},
		"series":  {`SELECT id, target, path, schema_path, keys, yang_type, unit, first_seen FROM series`, "id"},
		"events":  {`SELECT ts, target, kind, interface, queue, action, batch_id FROM events`, "target, ts, queue"},
		"ledger": {`SELECT batch_id, collector, target, epoch, sum(rows) AS rows, min(first_ts) AS first_ts, max(last_ts) AS last_ts
			FROM ingest_ledger GROUP BY 1, 2, 3, 4`, "batch_id"},
		"series_values": {`SELECT * FROM series_values`, "series_id, ts"},
	}
	got := map[string][]string{}
	for name, q := range queries {
		rs, err := pool.Query(context.Background(), `SELECT v::text FROM (`+q.sql+`) v ORDER BY `+q.order)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name], err = pgx.CollectRows(rs, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return got
}

// TestCitusSameAsOneNode stores the same workload, with replays, into one
// PostgreSQL and into a Citus coordinator with two workers, and compares
// what the readers see row by row. On Citus every batch is split by shard,
// one single-shard transaction per part (or per shard of a group): the only
// two-phase commits are the inserts of new series (a reference table), one
// per switch or one for the switches of a group. A batch of
// which a crash kept one part only is completed by its replay, not doubled.
func TestCitusSameAsOneNode(t *testing.T) {
	ctx := context.Background()
	sameOnBoth(t, func(name string, pool *pgxpool.Pool) {
		db := struct {
			name string
			pool *pgxpool.Pool
		}{name, pool}
		if db.name == "citus" {
			if _, err := db.pool.Exec(ctx, `SELECT recover_prepared_transactions()`); err != nil {
				t.Fatal(err)
			}
		}
		// pg_dist_transaction has a row per worker of each two-phase
		// commit, its gid citus_<node>_<pid>_<transaction>_<connection>.
		twoPC := func() int64 {
			return count(t, db.pool, `SELECT count(DISTINCT regexp_replace(gid, '_[0-9]+$', '')) FROM pg_dist_transaction`)
		}
		var before int64
		if db.name == "citus" {
			before = twoPC()
		}
		w, m, stop := newWriter(t, db.pool)
		bs := citusWorkload(7)
		for i, b := range bs {
			if err := w.Enqueue(b); err != nil {
				t.Fatal(err)
			}
			if i%5 == 4 { // a replay (the spill after a crash), without its series
				replay := *bs[i]
				replay.Series = nil
				if err := w.Enqueue(&replay); err != nil {
					t.Fatal(err)
				}
			}
		}
		stop()
		if got := testutil.ToFloat64(m.Batches.WithLabelValues("replayed")); got != float64(len(bs)/5) {
			t.Errorf("%s: batches_total{outcome=replayed} = %v, want %d", db.name, got, len(bs)/5)
		}
		if db.name == "citus" {
			// A group commit inserts the series of the switches of its
			// batches at once.
			if n := twoPC() - before; n < 1 || n > 3 {
				t.Errorf("citus: %d two-phase commits, want 1 to 3 (the series of the switches)", n)
			}
			// A crash after the first part of the last batch: its other
			// parts and their ledger rows are gone; the replay restores them.
			last := bs[len(bs)-1]
			var gone []int64
			for _, x := range last.Samples {
				var same bool
				if err := db.pool.QueryRow(ctx, `SELECT get_shard_id_for_distribution_column('samples', $1::bigint)
					= get_shard_id_for_distribution_column('samples', (SELECT min(shard_key) FROM ingest_ledger WHERE batch_id = $2))`,
					x.SeriesID, last.ID).Scan(&same); err != nil {
					t.Fatal(err)
				}
				if !same {
					gone = append(gone, x.SeriesID)
				}
			}
			if _, err := db.pool.Exec(ctx, `DELETE FROM samples WHERE batch_id = $1 AND series_id = ANY($2)`, last.ID, gone); err != nil {
				t.Fatal(err)
			}
			if _, err := db.pool.Exec(ctx, `DELETE FROM ingest_ledger WHERE batch_id = $1 AND shard_key = ANY($2)`, last.ID, gone); err != nil {
				t.Fatal(err)
			}
			if n := count(t, db.pool, `SELECT count(*) FROM samples WHERE batch_id = $1`, last.ID); n == 0 || n >= 40 {
				t.Fatalf("citus: %d samples of the cut batch left, want some of its 40", n)
			}
			w, _, stop := newWriter(t, db.pool)
			replay := *last
			if err := w.Enqueue(&replay); err != nil {
				t.Fatal(err)
			}
			stop()
		}
	})
}

// TestCitusNodeDown: a node stopped while batches arrive and started again
// after the writer failed and retried — a worker, or the coordinator, the
// node the writer talks to (its batches wait in its queue and spill
// meanwhile) — and every batch is stored once.
func TestCitusNodeDown(t *testing.T) {
	for _, tt := range []struct {
		desc string
		seed uint64
		node func(*pgserver.Cluster) *pgserver.Server
	}{
		{"a worker", 11, func(c *pgserver.Cluster) *pgserver.Server { return c.Workers[1] }},
		{"the coordinator", 12, func(c *pgserver.Cluster) *pgserver.Server { return c.Coordinator }},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			c, pool := citusCluster(t, 2)
			w, m, stop := newWriter(t, pool, writer.WithRetryMax(200*time.Millisecond))
			bs := citusWorkload(tt.seed)
			enqueueFirst(t, w, bs)
			node := tt.node(c)
			if err := node.Stop(); err != nil {
				t.Fatal(err)
			}
			enqueue(t, w, bs[3:])
			waitWriteErrors(t, m, 3, "while "+tt.desc+" was down")
			if err := node.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			stop()
			storedOnce(t, pool, bs)
		})
	}
}

// TestCitusAddWorker: a third worker joins while batches arrive and the
// shards are rebalanced onto it (citus_add_node, rebalance_table_shards
// with block_writes: samples has no replica identity for logical
// replication); every batch is stored once and the new worker holds
// shards.
func TestCitusAddWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, pool := citusCluster(t, 2)
	w, _, stop := newWriter(t, pool, writer.WithRetryMax(200*time.Millisecond))
	bs := citusWorkload(13)
	enqueueFirst(t, w, bs)
	s, err := c.AddWorker(ctx, "lhcnp")
	if err != nil {
		t.Fatal(err)
	}
	half := 3 + (len(bs)-3)/2
	enqueue(t, w, bs[3:half])
	if _, err := pool.Exec(ctx, `SELECT rebalance_table_shards(shard_transfer_mode := 'block_writes')`); err != nil {
		t.Fatalf("rebalance: %v", err)
	}
	enqueue(t, w, bs[half:])
	stop()
	storedOnce(t, pool, bs)
	if n := count(t, pool, fmt.Sprintf(`SELECT count(*) FROM citus_shards WHERE nodeport = %d`, s.Port())); n == 0 {
		t.Errorf("the added worker holds no shard after the rebalance")
	}
}

// citusCluster is a coordinator with workers, its database migrated.
func citusCluster(t *testing.T, workers int) (*pgserver.Cluster, *pgxpool.Pool) {
	t.Helper()
	c, dsn := pgtest.PrivateCitusDB(t, workers)
	return c, pgtest.Pool(t, dsn)
}

// enqueueFirst stores the first three batches, with every node up: the
// series (a reference table, written on all nodes) exist before a fault.
func enqueueFirst(t *testing.T, w *writer.Writer, bs []*rows.Batch) {
	t.Helper()
	enqueue(t, w, bs[:3])
	if err := w.WaitTarget(context.Background(), "sw3"); err != nil {
		t.Fatal(err)
	}
}

func enqueue(t *testing.T, w *writer.Writer, bs []*rows.Batch) {
	t.Helper()
	for _, b := range bs {
		if err := w.Enqueue(b); err != nil {
			t.Fatal(err)
		}
	}
}

// waitWriteErrors waits for n failed writes: the writer retries on its own.
func waitWriteErrors(t *testing.T, m *collectormetrics.Metrics, n float64, while string) {
	t.Helper()
	// Polling with a deadline: the fault is the test's, the retries the
	// writer's.
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for testutil.ToFloat64(m.WriteErrors.WithLabelValues("temporary")) < n {
		select {
		case <-deadline:
			t.Fatalf("fewer than %g failed writes %s", n, while)
		case <-tick.C:
		}
	}
}

// storedOnce checks that every sample of bs is stored once and every
// batch has its ledger rows.
func storedOnce(t *testing.T, pool *pgxpool.Pool, bs []*rows.Batch) {
	t.Helper()
	want := int64(len(bs) * 40)
	if n := count(t, pool, `SELECT count(*) FROM samples`); n != want {
		t.Errorf("%d samples, want %d", n, want)
	}
	if n := count(t, pool, `SELECT count(*) FROM (SELECT DISTINCT series_id, ts FROM samples) d`); n != want {
		t.Errorf("%d distinct samples, want %d (none lost, none twice)", n, want)
	}
	if n := count(t, pool, `SELECT count(DISTINCT batch_id) FROM ingest_ledger`); n != int64(len(bs)) {
		t.Errorf("ledger has %d batches, want %d", n, len(bs))
	}
}

// TestCitusBadRows is TestBadRowsSplitOut on Citus: the bad rows of a part
// go to dead_letters, one each, the rest of the batch is stored, and each
// part has its ledger row.
func TestCitusBadRows(t *testing.T) {
	pool, _ := pgtest.NewCitus(t)
	w, m, stop := newWriter(t, pool)
	b := badBatch()
	w.Enqueue(b)
	stop()
	badBatchStored(t, pool, b)
	if got := testutil.ToFloat64(m.Batches.WithLabelValues("partial")); got != 1 {
		t.Errorf("batches_total{outcome=partial} = %v, want 1", got)
	}
}

// TestCitusFencing: with fencing on, the lease check of every part (FOR
// SHARE on leases, a reference table) adds no two-phase commit; a batch of
// an epoch the lease has left is merged (mergeStaleCitus: its samples,
// newer than what is stored, are refused as on one node) in a transaction
// of its own across the nodes, and does not stop the batches after it.
func TestCitusFencing(t *testing.T) {
	ctx := context.Background()
	pool, _ := pgtest.NewCitus(t)
	if _, err := pool.Exec(ctx, `INSERT INTO leases (target, owner, epoch, expires_at)
		SELECT t, 'c', 1, now() + interval '1 hour' FROM unnest(ARRAY['sw1', 'sw2', 'sw3']) t`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `SELECT recover_prepared_transactions()`); err != nil {
		t.Fatal(err)
	}
	w, m, stop := newWriter(t, pool, writer.WithFencing(true))
	bs := citusWorkload(3)
	stale := bs[len(bs)-4]
	stale.Epoch = 0
	for _, b := range bs {
		if err := w.Enqueue(b); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	if n, want := count(t, pool, `SELECT count(*) FROM samples`), int64((len(bs)-1)*40); n != want {
		t.Errorf("%d samples, want %d (all but the stale batch's)", n, want)
	}
	if n := count(t, pool, `SELECT count(DISTINCT regexp_replace(gid, '_[0-9]+$', '')) FROM pg_dist_transaction`); n < 2 || n > 4 {
		t.Errorf("%d two-phase commits, want 2 to 4 (the series of the switches, 1 to 3 as grouped, and the stale batch's merge)", n)
	}
	if got := testutil.ToFloat64(m.Batches.WithLabelValues("stale")); got != 1 {
		t.Errorf("batches_total{outcome=stale} = %v, want 1", got)
	}
}

// TestCitusReplayEvents: on Citus no ledger row guards a batch's events
// (they are distributed by target, the ledger by series), so a replay
// offers them again: a crash between two parts, or after the parts and
// before the events, leaves every event stored once and every refused
// event dead-lettered once.
func TestCitusReplayEvents(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		desc string
		cut  func(t *testing.T, pool *pgxpool.Pool, b *rows.Batch)
		dead float64 // dead letters written: the cut takes the events' one back
	}{
		{"between two parts", func(t *testing.T, pool *pgxpool.Pool, b *rows.Batch) {
			var key int64
			if err := pool.QueryRow(ctx, `SELECT max(shard_key) FROM ingest_ledger WHERE batch_id = $1`, b.ID).Scan(&key); err != nil {
				t.Fatal(err)
			}
			ids := make([]int64, len(b.Samples))
			for i, x := range b.Samples {
				ids[i] = x.SeriesID
			}
			rs, err := pool.Query(ctx, `SELECT id FROM unnest($1::bigint[]) id
				WHERE get_shard_id_for_distribution_column('samples', id) = get_shard_id_for_distribution_column('samples', $2::bigint)`, ids, key)
			if err != nil {
				t.Fatal(err)
			}
			gone, err := pgx.CollectRows(rs, pgx.RowTo[int64])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `DELETE FROM samples WHERE batch_id = $1 AND series_id = ANY($2)`, b.ID, gone); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `DELETE FROM ingest_ledger WHERE batch_id = $1 AND shard_key = $2`, b.ID, key); err != nil {
				t.Fatal(err)
			}
		}, 3},
		{"before the events", func(t *testing.T, pool *pgxpool.Pool, b *rows.Batch) {
			for _, sql := range []string{`DELETE FROM events WHERE batch_id = $1`, `DELETE FROM dead_letters WHERE batch_id = $1 AND "row"->>'table' = 'events'`} {
				if _, err := pool.Exec(ctx, sql, b.ID); err != nil {
					t.Fatal(err)
				}
			}
		}, 4},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			pool, _ := pgtest.NewCitus(t)
			w, m, stop := newWriter(t, pool)
			b := badBatch()
			if err := w.Enqueue(b); err != nil {
				t.Fatal(err)
			}
			if err := w.WaitTarget(ctx, "sw1"); err != nil {
				t.Fatal(err)
			}
			tt.cut(t, pool, b)
			replay := *b
			replay.Series = nil
			if err := w.Enqueue(&replay); err != nil {
				t.Fatal(err)
			}
			stop()
			badBatchStored(t, pool, b)
			if got := testutil.ToFloat64(m.DeadLetters); got != tt.dead {
				t.Errorf("dead_letters_total = %v, want %v", got, tt.dead)
			}
		})
	}
}

// badBatchStored checks that badBatch b is stored on Citus once: its good
// rows, its three bad ones dead-lettered, the ledger rows of its parts
// summing to its rows.
func badBatchStored(t *testing.T, pool *pgxpool.Pool, b *rows.Batch) {
	t.Helper()
	for _, c := range []struct {
		desc, sql string
		want      int64
	}{
		{"samples", `SELECT count(*) FROM samples WHERE batch_id = $1`, 98},
		{"distinct samples", `SELECT count(*) FROM (SELECT DISTINCT series_id, ts FROM samples WHERE batch_id = $1) d`, 98},
		{"events", `SELECT count(*) FROM events WHERE batch_id = $1`, 1},
		{"dead letters", `SELECT count(*) FROM dead_letters WHERE batch_id = $1`, 3},
		{"latest", `SELECT count(*) FROM latest WHERE $1::bigint IS NOT NULL`, 98},
		{"ledger rows of the batch, summed", `SELECT sum(rows) FROM ingest_ledger WHERE batch_id = $1`, 102},
	} {
		if n := count(t, pool, c.sql, b.ID); n != c.want {
			t.Errorf("%s: %d, want %d", c.desc, n, c.want)
		}
	}
}

// TestCitusGroupCommit: a backlog (batches queued before the writer runs)
// is stored on Citus in groups, a transaction per shard of each group, and
// a group of batches already stored (replays) falls back to one batch at a
// time, where the ledger recognises them; what the readers see is what one
// node gives for the same backlog.
func TestCitusGroupCommit(t *testing.T) {
	ctx := context.Background()
	sameOnBoth(t, func(name string, pool *pgxpool.Pool) {
		sp, err := spill.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		m := collectormetrics.New()
		logs := &strings.Builder{}
		w := writer.New(pool, sp, writer.WithMetrics(m), writer.WithGroupRows(6*40),
			writer.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		bs := citusWorkload(17)
		enqueue(t, w, bs)
		for _, b := range bs[6:12] {
			replay := *b
			replay.Series = nil
			enqueue(t, w, []*rows.Batch{&replay})
		}
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		w.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(m.Batches.WithLabelValues("replayed")); got != 6 {
			t.Errorf("%s: batches_total{outcome=replayed} = %v, want 6", name, got)
		}
		if name == "citus" {
			if n := strings.Count(logs.String(), "group stored by shard"); n != len(bs)/6 {
				t.Errorf("citus: %d groups stored by shard, want %d (the backlog in groups of 6)", n, len(bs)/6)
			}
		}
	})
}

// TestCitusGroupEventRefused: a group whose samples committed shard by
// shard but whose events insert PostgreSQL refused (one bad event) falls
// back to one batch at a time. The fallback finds the group's parts in the
// ledger; they are this writer's, stored by the group, not replays: the
// counters say what one node's say for the same backlog (its group is one
// transaction, rolled back whole), and the rows are the same.
func TestCitusGroupEventRefused(t *testing.T) {
	ctx := context.Background()
	counters := map[string]map[string]float64{}
	sameOnBoth(t, func(name string, pool *pgxpool.Pool) {
		sp, err := spill.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		m := collectormetrics.New()
		w := writer.New(pool, sp, writer.WithMetrics(m), writer.WithGroupRows(6*40),
			writer.WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil))))
		bs := citusWorkload(29)[:6]
		bs[4].Events = append(bs[4].Events, rows.Event{TS: bs[4].Samples[0].TS, Target: bs[4].Target, Kind: "cnp", Queue: 9, Details: "{bad json"})
		enqueue(t, w, bs)
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		w.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		counters[name] = map[string]float64{
			"batches stored":   testutil.ToFloat64(m.Batches.WithLabelValues("stored")),
			"batches partial":  testutil.ToFloat64(m.Batches.WithLabelValues("partial")),
			"batches replayed": testutil.ToFloat64(m.Batches.WithLabelValues("replayed")),
			"samples written":  testutil.ToFloat64(m.RowsWritten.WithLabelValues("samples")),
			"events written":   testutil.ToFloat64(m.RowsWritten.WithLabelValues("events")),
			"event conflicts":  testutil.ToFloat64(m.EventConflicts),
			"dead letters":     testutil.ToFloat64(m.DeadLetters),
		}
	})
	want := map[string]float64{"batches stored": 5, "batches partial": 1, "batches replayed": 0, "samples written": 6 * 40, "dead letters": 1}
	for k, v := range want {
		if got := counters["postgresql"][k]; got != v {
			t.Errorf("postgresql: %s = %v, want %v", k, got, v)
		}
	}
	if d := cmp.Diff(counters["postgresql"], counters["citus"]); d != "" {
		t.Errorf("counters differ (-one node +citus):\n%s", d)
	}
}

// TestCitusCachesBounded: with the writer's Citus caches (each series'
// shard, the series it stored) bounded at a few entries, so that they start
// again empty many times in a run, a backlog stored in groups and a batch at
// a time leaves the same rows as one node.
func TestCitusCachesBounded(t *testing.T) {
	defer writer.SetCitusCacheMax(5)()
	ctx := context.Background()
	sameOnBoth(t, func(name string, pool *pgxpool.Pool) {
		sp, err := spill.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		w := writer.New(pool, sp, writer.WithGroupRows(3*40))
		enqueue(t, w, citusWorkload(23))
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		w.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// sameOnBoth runs store on a fresh database of one PostgreSQL
// ("postgresql") and of the shared Citus cluster ("citus"), and compares
// what the readers see (tableRows) row by row.
func sameOnBoth(t *testing.T, store func(name string, pool *pgxpool.Pool)) {
	t.Helper()
	plain, _ := pgtest.New(t)
	citus, _ := pgtest.NewCitus(t)
	results := map[string]map[string][]string{}
	for _, db := range []struct {
		name string
		pool *pgxpool.Pool
	}{{"postgresql", plain}, {"citus", citus}} {
		store(db.name, db.pool)
		results[db.name] = tableRows(t, db.pool)
	}
	for name, want := range results["postgresql"] {
		if len(want) == 0 {
			t.Errorf("%s: no rows on one node", name)
		}
		if d := cmp.Diff(want, results["citus"][name]); d != "" {
			t.Errorf("%s differs (-one node +citus):\n%s", name, d)
		}
	}
}

// TestCitusEventsAnswerLost: on Citus a batch's events are an INSERT of
// their own, after its parts, so a connection cut after that INSERT
// committed and before its answer (the coordinator stopped, as in
// TestCitusFaults) has the writer offer the same events again: from a
// group commit's insert to the batch stored alone, or from the batch's own
// insert to its retry. What the table then holds already is this writer's,
// an earlier try's, not an event met twice: event_conflicts_total stays 0
// (its tests' check that no event was made again), and each event is
// stored once. The batch retried after the group's parts are the cases
// that counted conflicts before: its parts, stored by the group, were not
// found in the ledger as a replay's. An insert cut before it reached the
// database stored nothing: an event met twice after it still counts, and
// so does one met twice in the insert whose answer was lost (the retry
// finds it under the other batch's id). rows_written_total counts every row once, this writer's: the events an
// insert stored unheard (they were never counted: the retry found them and
// counted what it stored, none), and the samples of a batch whose parts
// committed on a try that failed at its events (the retry found them in
// the ledger and counted a replay).
func TestCitusEventsAnswerLost(t *testing.T) {
	for _, tt := range []struct {
		desc      string
		groupRows int           // 0: a batch at a time
		cuts      map[int]cutAt // by the events INSERT's number, from 1
		twice     bool          // an event of the first group met again, three batches later
	}{
		{"a group's insert", 6 * 40, map[int]cutAt{1: afterCommit}, false},
		{"the insert of a batch of the group, retried alone", 6 * 40, map[int]cutAt{1: beforeSent, 2: afterCommit}, false},
		{"the insert of a batch stored alone", 0, map[int]cutAt{1: afterCommit}, false},
		{"the insert of a batch stored alone, never sent", 0, map[int]cutAt{1: beforeSent}, false},
		{"an insert that never reached the database, then an event met twice", 6 * 40, map[int]cutAt{1: beforeSent}, true},
		{"a group's insert, an event met twice in it", 6 * 40, map[int]cutAt{1: afterCommit}, true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			check, dsn := pgtest.NewCitus(t)
			cut := &cutter{match: eventsInsert, at: tt.cuts}
			bs := citusWorkload(31)
			var conflicts float64
			if tt.twice {
				metTwice(t, bs)
				conflicts = 1
			}
			m := storeBacklog(t, cut.pool(t, dsn), tt.groupRows, bs)
			if got := cut.faults(); got != len(tt.cuts) {
				t.Fatalf("%d connections cut, want %d", got, len(tt.cuts))
			}
			storedOnce(t, check, bs)
			var events int64
			for _, b := range bs {
				events += int64(len(b.Events))
			}
			if n, want := count(t, check, `SELECT count(*) FROM events`), events-int64(conflicts); n != want {
				t.Errorf("%d events stored, want %d", n, want)
			}
			if got := testutil.ToFloat64(m.EventConflicts); got != conflicts {
				t.Errorf("event_conflicts_total = %v, want %v", got, conflicts)
			}
			writtenOnce(t, check, m)
			if got := testutil.ToFloat64(m.Batches.WithLabelValues("replayed")); got != 0 {
				t.Errorf("batches_total{outcome=replayed} = %v, want 0 (no batch came back after a crash)", got)
			}
		})
	}
}

// metTwice gives an event of the first batch with events of bs (a
// citusWorkload) to its switch's next batch too, and returns that batch:
// both are of the first group of 6 batches (3 switches in turn).
func metTwice(t *testing.T, bs []*rows.Batch) *rows.Batch {
	t.Helper()
	i := slices.IndexFunc(bs, func(b *rows.Batch) bool { return len(b.Events) > 0 })
	if i < 0 || i > 2 {
		t.Fatalf("the first batch with events is the %d-th, want one of the first 3", i)
	}
	bs[i+3].Events = append(bs[i+3].Events, bs[i].Events[0])
	return bs[i+3]
}

// writtenOnce checks that rows_written_total counts each row the database
// holds once: one writer stored them all.
func writtenOnce(t *testing.T, pool *pgxpool.Pool, m *collectormetrics.Metrics) {
	t.Helper()
	for _, table := range []string{"samples", "events"} {
		want := float64(count(t, pool, `SELECT count(*) FROM `+table))
		if got := testutil.ToFloat64(m.RowsWritten.WithLabelValues(table)); got != want {
			t.Errorf("rows_written_total{table=%s} = %v, want %v (the rows stored)", table, got, want)
		}
	}
}

// TestCitusEventsOneByOneCut: a batch of the group whose events insert
// PostgreSQL refused (a bad event) stores its events one by one; the
// connection cut before the last one, the retry finds the first one
// stored, by that try: not an event met twice (it counted one before);
// the bad event's dead letter, written by that try, is counted once.
func TestCitusEventsOneByOneCut(t *testing.T) {
	check, dsn := pgtest.NewCitus(t)
	bs := citusWorkload(31)
	i := slices.IndexFunc(bs, func(b *rows.Batch) bool { return len(b.Events) > 0 })
	b := bs[i]
	b.Events = append(b.Events, rows.Event{TS: b.Events[0].TS, Target: b.Target, Kind: "cnp", Queue: 8, Details: "{bad json"},
		rows.Event{TS: b.Events[0].TS, Target: b.Target, Kind: "cnp", Queue: 9, Details: "{}"})
	// The last event's insert of its own (14 arguments, its queue the 5th).
	cut := &cutter{match: func(data pgx.TraceQueryStartData) bool {
		return eventsInsert(data) && len(data.Args) == 14 && data.Args[1] == b.Target && data.Args[4] == int64(9)
	}, at: map[int]cutAt{1: beforeSent}}
	m := storeBacklog(t, cut.pool(t, dsn), 6*40, bs)
	if got := cut.faults(); got != 1 {
		t.Fatalf("%d connections cut, want 1", got)
	}
	storedOnce(t, check, bs)
	var events int64
	for _, b := range bs {
		events += int64(len(b.Events))
	}
	if n := count(t, check, `SELECT count(*) FROM events`); n != events-1 {
		t.Errorf("%d events stored, want %d (all but the bad one)", n, events-1)
	}
	if n := count(t, check, `SELECT count(*) FROM dead_letters`); n != 1 {
		t.Errorf("%d dead letters, want 1", n)
	}
	if got := testutil.ToFloat64(m.DeadLetters); got != 1 {
		t.Errorf("dead_letters_total = %v, want 1 (written by the try cut after it)", got)
	}
	if got := testutil.ToFloat64(m.EventConflicts); got != 0 {
		t.Errorf("event_conflicts_total = %v, want 0 (no event was met twice)", got)
	}
}

// TestCitusDeadLettersAnswerLost: on Citus a dead letter is written in a
// statement of its own (a refused event's, storeEventsCitus) or in the
// transaction of a part PostgreSQL refused (a bad sample's,
// storePartSafe). The connection cut after it committed and before its
// answer, the retry finds it written (the dead letter once by its batch
// and row, the part in the ledger) and counts it, this writer's, once: it
// was counted by no one (dead_letters_total 0 and 1 of 3), and the part's
// samples by no one either.
func TestCitusDeadLettersAnswerLost(t *testing.T) {
	for _, tt := range []struct {
		desc  string
		batch func() *rows.Batch
		sql   string // the statement cut: the first of them
		check func(t *testing.T, pool *pgxpool.Pool, b *rows.Batch)
		dead  float64
	}{
		{"a refused event's dead letter", func() *rows.Batch {
			b := batch("sw1", time.Now().UnixNano(), 100)
			b.Events = []rows.Event{{TS: b.Samples[0].TS, Target: "sw1", Kind: "cnp", Details: "{}"},
				{TS: b.Samples[0].TS, Target: "sw1", Kind: "cnp", Queue: 1, Details: "{bad json"}}
			return b
		}, "INSERT INTO dead_letters", func(t *testing.T, pool *pgxpool.Pool, b *rows.Batch) {
			for _, c := range []struct {
				desc, sql string
				want      int64
			}{
				{"samples", `SELECT count(*) FROM samples WHERE batch_id = $1`, 100},
				{"events", `SELECT count(*) FROM events WHERE batch_id = $1`, 1},
				{"dead letters", `SELECT count(*) FROM dead_letters WHERE batch_id = $1`, 1},
			} {
				if n := count(t, pool, c.sql, b.ID); n != c.want {
					t.Errorf("%s: %d, want %d", c.desc, n, c.want)
				}
			}
		}, 1},
		{"the commit of a part with a refused sample", badBatch, "commit", badBatchStored, 3},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			check, dsn := pgtest.NewCitus(t)
			cut := &cutter{match: func(data pgx.TraceQueryStartData) bool { return strings.HasPrefix(data.SQL, tt.sql) },
				at: map[int]cutAt{1: afterCommit}}
			b := tt.batch()
			m := storeBacklog(t, cut.pool(t, dsn), 0, []*rows.Batch{b})
			if got := cut.faults(); got != 1 {
				t.Fatalf("%d connections cut, want 1", got)
			}
			tt.check(t, check, b)
			if got := testutil.ToFloat64(m.DeadLetters); got != tt.dead {
				t.Errorf("dead_letters_total = %v, want %v", got, tt.dead)
			}
			writtenOnce(t, check, m)
			if got := testutil.ToFloat64(m.EventConflicts); got != 0 {
				t.Errorf("event_conflicts_total = %v, want 0", got)
			}
			if got := testutil.ToFloat64(m.Batches.WithLabelValues("partial")); got != 1 {
				t.Errorf("batches_total{outcome=partial} = %v, want 1", got)
			}
		})
	}
}

// storeBacklog stores bs, queued before the writer starts (a backlog: in
// groups of groupRows rows), into pool, and returns the writer's metrics.
func storeBacklog(t *testing.T, pool *pgxpool.Pool, groupRows int, bs []*rows.Batch, opts ...writer.Option) *collectormetrics.Metrics {
	t.Helper()
	return storeBacklogStopped(t, pool, groupRows, bs, nil, opts...)
}

// storeBacklogStopped is storeBacklog whose writer's first Run is stopped
// by the test: arm is handed the function that ends that Run's ctx (as a
// drain whose time is up), and the test calls it where the writer must
// stop. What the writer had not stored is requeued (into the spill), and
// a second Run of the same writer stores it. With arm nil, one Run.
func storeBacklogStopped(t *testing.T, pool *pgxpool.Pool, groupRows int, bs []*rows.Batch, arm func(stop func()),
	opts ...writer.Option) *collectormetrics.Metrics {
	t.Helper()
	sp, err := spill.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := collectormetrics.New()
	opts = append([]writer.Option{writer.WithMetrics(m), writer.WithGroupRows(groupRows),
		writer.WithRetryMax(100 * time.Millisecond), writer.WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil)))}, opts...)
	w := writer.New(pool, sp, opts...)
	enqueue(t, w, bs)
	w.Close()
	// A deadline, not a timed assertion: a writer retrying a batch for
	// ever fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(ctx context.Context) {
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if arm != nil {
		first, stop := context.WithCancel(ctx)
		defer stop()
		arm(stop)
		run(first)
		if first.Err() == nil || sp.Pending() == 0 {
			t.Fatalf("the first run stopped: %v, with %d batches requeued; want stopped, some requeued", first.Err() != nil, sp.Pending())
		}
	}
	run(ctx)
	if ctx.Err() != nil {
		t.Fatalf("the backlog not stored in 2 minutes: %d batches pending", sp.Pending())
	}
	return m
}
