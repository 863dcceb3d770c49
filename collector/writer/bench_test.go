package writer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/writer"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// benchBatches are n batches of 5000 samples over 512 series (what a
// switch's sample of 32 queues × 16 leaves gives in ~10 rounds).
func benchBatches(n int) []*rows.Batch {
	ts := time.Now().UnixNano()
	var out []*rows.Batch
	for i := range n {
		b := &rows.Batch{ID: rows.NewBatchID(), Collector: "bench", Target: "sw"}
		for j := range 5000 {
			s := j % 512
			id := rows.SeriesID("sw", fmt.Sprintf("/q[i=%d]", s))
			if i == 0 && j < 512 {
				b.Series = append(b.Series, rows.Series{ID: id, Target: "sw", Path: fmt.Sprintf("/q[i=%d]", s), FirstSeen: ts})
			}
			b.Samples = append(b.Samples, rows.Sample{TS: ts + int64(i*5000+j)*1000, SeriesID: id, Kind: rows.ValInt, Int: int64(j)})
		}
		out = append(out, b)
	}
	return out
}

// BenchmarkWriter stores batches through the writer (ledger, series,
// COPY, latest) and, in the same run, COPYs the same rows raw.
func BenchmarkWriter(b *testing.B) {
	for range b.N {
		pool, _ := pgtest.New(b)
		batches := benchBatches(40)
		w, _, stop := newWriter(b, pool)
		start := time.Now()
		for _, bt := range batches {
			w.Enqueue(bt)
		}
		stop()
		ours := float64(40*5000) / time.Since(start).Seconds()

		raw, _ := pgtest.New(b)
		ctx := context.Background()
		start = time.Now()
		for _, bt := range batches {
			rs := make([][]any, len(bt.Samples))
			for i, s := range bt.Samples {
				rs[i] = []any{time.Unix(0, s.TS), s.SeriesID, s.Int, int16(0), bt.ID}
			}
			if _, err := raw.CopyFrom(ctx, pgx.Identifier{"samples"}, []string{"ts", "series_id", "v_int", "flags", "batch_id"}, pgx.CopyFromRows(rs)); err != nil {
				b.Fatal(err)
			}
		}
		rawRate := float64(40*5000) / time.Since(start).Seconds()
		b.ReportMetric(ours, "rows/s")
		b.ReportMetric(rawRate, "raw-copy-rows/s")
		b.ReportMetric(ours/rawRate, "ratio")
	}
}

// BenchmarkWriterEvents stores the batches of BenchmarkWriter with and
// without Long-haul CNP events (10 per batch of 5000 samples, far more than
// a switch sends): events go in one INSERT ... ON CONFLICT DO NOTHING in
// the commit's pipeline, and must not slow the samples' path.
func BenchmarkWriterEvents(b *testing.B) {
	for _, perBatch := range []int{0, 10} {
		b.Run(fmt.Sprintf("events=%d", perBatch), func(b *testing.B) {
			for range b.N {
				pool, _ := pgtest.New(b)
				batches := benchBatches(40)
				for i, bt := range batches {
					for j := range perBatch {
						bt.Events = append(bt.Events, rows.Event{TS: bt.Samples[j].TS, Target: "sw", Kind: "cnp",
							Interface: "wan", Queue: int64(i), Action: "PAUSE", Details: "{}"})
					}
				}
				w, _, stop := newWriter(b, pool)
				start := time.Now()
				for _, bt := range batches {
					w.Enqueue(bt)
				}
				stop()
				b.ReportMetric(float64(40*5000)/time.Since(start).Seconds(), "rows/s")
			}
		})
	}
}

// BenchmarkWriterCitus stores the batches of BenchmarkWriter through the
// writer into one PostgreSQL and into a Citus coordinator with two workers
// (all on this machine), in the same run, and COPYs the same rows raw into
// the coordinator (what Citus takes without the ledger's single-shard
// transactions, with a two-phase commit per COPY). docs/scaling.md, Step 3.
func BenchmarkWriterCitus(b *testing.B) {
	for range b.N {
		rate := func(store func()) float64 {
			start := time.Now()
			store()
			return float64(40*5000) / time.Since(start).Seconds()
		}
		batches := benchBatches(40)
		through := func(pool *pgxpool.Pool) func() {
			return func() {
				w, _, stop := newWriter(b, pool)
				for _, bt := range batches {
					w.Enqueue(bt)
				}
				stop()
			}
		}
		one, _ := pgtest.New(b)
		citus, _ := pgtest.NewCitus(b)
		raw, _ := pgtest.NewCitus(b)
		b.ReportMetric(rate(through(one)), "one-node-rows/s")
		b.ReportMetric(rate(through(citus)), "citus-rows/s")
		b.ReportMetric(rate(func() {
			for _, bt := range batches {
				rs := make([][]any, len(bt.Samples))
				for i, s := range bt.Samples {
					rs[i] = []any{time.Unix(0, s.TS), s.SeriesID, s.Int, int16(0), bt.ID}
				}
				if _, err := raw.CopyFrom(context.Background(), pgx.Identifier{"samples"}, []string{"ts", "series_id", "v_int", "flags", "batch_id"}, pgx.CopyFromRows(rs)); err != nil {
					b.Fatal(err)
				}
			}
		}), "citus-raw-copy-rows/s")
	}
}

// BenchmarkWriterCitusFencing: writers of several collectors, each the
// owner of its own switch's lease, store batches at the same time into a
// Citus coordinator with two workers, with fencing (leases.enabled) off and
// on. Every part transaction's fencing check takes FOR SHARE on the
// reference table leases, and Citus takes a reference table's row locks
// under one lock of its one shard: the question is how much of the
// writers' concurrency that leaves (docs/scaling.md, "What else runs on
// Citus"). rows/s is all writers' rows over the time until the last one
// is done; waits/s the lock waits on leases seen by polling
// citus_lock_waits every 20 ms.
func BenchmarkWriterCitusFencing(b *testing.B) {
	const writers, perWriter, rowsPerBatch = 4, 12, 2000
	for _, fencing := range []bool{false, true} {
		b.Run(fmt.Sprintf("writers=%d/fencing=%v", writers, fencing), func(b *testing.B) {
			for range b.N {
				pool, dsn := pgtest.NewCitus(b)
				ctx := context.Background()
				var all [][]*rows.Batch
				var stops []func()
				var ws []*writer.Writer
				for k := range writers {
					target, coll := fmt.Sprintf("sw%d", k), fmt.Sprintf("c%d", k)
					if _, err := pool.Exec(ctx, `INSERT INTO leases (target, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
						target, coll); err != nil {
						b.Fatal(err)
					}
					w, _, stop := newWriter(b, pgtest.Pool(b, dsn), writer.WithFencing(fencing))
					ws, stops = append(ws, w), append(stops, stop)
					all = append(all, fencedBatches(target, coll, perWriter, rowsPerBatch))
				}
				var waits int64
				polled := make(chan struct{})
				done := make(chan struct{})
				go func() {
					defer close(polled)
					tick := time.NewTicker(20 * time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-done:
							return
						case <-tick.C:
						}
						var n int64
						if err := pool.QueryRow(ctx, `SELECT count(*) FROM citus_lock_waits WHERE blocked_statement LIKE '%FROM leases%'`).Scan(&n); err == nil {
							waits += n
						}
					}
				}()
				start := time.Now()
				var wg sync.WaitGroup
				for k, w := range ws {
					wg.Go(func() {
						for _, bt := range all[k] {
							if err := w.Enqueue(bt); err != nil {
								b.Error(err)
							}
						}
						stops[k]()
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				close(done)
				<-polled
				var n int64
				if err := pool.QueryRow(ctx, `SELECT count(*) FROM samples`).Scan(&n); err != nil {
					b.Fatal(err)
				}
				if want := int64(writers * perWriter * rowsPerBatch); n != want {
					b.Fatalf("%d samples stored, want %d", n, want)
				}
				b.ReportMetric(float64(n)/elapsed.Seconds(), "rows/s")
				b.ReportMetric(float64(waits)/elapsed.Seconds(), "lease-waits/s")
			}
		})
	}
}

// fencedBatches are n batches of target's n×perBatch samples over 256
// series, of collector coll at epoch 1.
func fencedBatches(target, coll string, n, perBatch int) []*rows.Batch {
	ts := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	var out []*rows.Batch
	for i := range n {
		b := &rows.Batch{ID: rows.NewBatchID(), Collector: coll, Target: target, Epoch: 1}
		for j := range perBatch {
			s := j % 256
			path := fmt.Sprintf("/q[i=%d]", s)
			id := rows.SeriesID(target, path)
			if i == 0 && j < 256 {
				b.Series = append(b.Series, rows.Series{ID: id, Target: target, Path: path, FirstSeen: ts})
			}
			b.Samples = append(b.Samples, rows.Sample{TS: ts + int64(i*perBatch+j)*1000, SeriesID: id, Kind: rows.ValInt, Int: int64(j)})
		}
		out = append(out, b)
	}
	return out
}
