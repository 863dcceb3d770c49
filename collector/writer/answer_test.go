package writer_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/writer"
)

// TestCommitAnswerLost: the connection is cut once a transaction's COMMIT
// was sent and applied, before its answer: the pipeline that ends with it
// (on one node a batch's or a group's ledger rows, events and latest; on
// Citus a part's or a shard's samples), or the COMMIT of a batch whose
// bad rows were split out. The retry finds the batches in the ledger; they
// are this writer's, not replays: every row is counted once in
// rows_written_total, every dead letter once, batches_total counts them
// stored or partial, and an event of the batch met twice (under another
// batch's id) is counted in event_conflicts_total; so when the batch's
// lease moved before the retry: on one node the merge finds the batch in
// the ledger; on Citus the part cut, counted as this writer's, and the
// parts after it it merges (the new owner stored a newer value of every
// series first, as TestStaleRefusedRow's owner: they are older than
// latest, stored, not refused), the batch stale, every row counted once
// (the Citus variants pass on the writer as it was; they were skipped).
// Stored again by another
// writer (a replay after a crash), they are replayed. On the old code one
// node counted every such batch as replayed, its rows nowhere (and its
// event met twice not as a conflict), and so did Citus a group's shard.
// Each case again with the writer stopped once the answer is lost (its
// ctx ended: the drain's time up), the batches requeued, then run again:
// the second Run's retry counts them the same; before writeGroup kept the
// tries of the requeued batches, it counted them replayed, their rows
// nowhere (Citus the parts the cut COMMIT stored).
func TestCommitAnswerLost(t *testing.T) {
	for _, db := range bothDBs {
		for _, tt := range []struct {
			desc      string
			groupRows int // 0: a batch at a time
			bad       bool
			twice     bool // an event of the first group met again, three batches later
			moved     bool // the batch's lease moves before its retry
		}{
			{"a batch alone", 0, false, false, false},
			{"a group", 6 * 40, false, false, false},
			{"a group, an event met twice in it", 6 * 40, false, true, false},
			{"a batch alone, an event met twice in it", 0, false, true, false},
			{"a batch with refused rows", 0, true, false, false},
			{"a batch alone, its lease moved before the retry", 0, false, false, true},
		} {
			for _, stopped := range []bool{false, true} {
				if stopped && testing.Short() {
					continue // the race step (-short): the unit step runs them
				}
				name := db.name + "/" + tt.desc
				if stopped {
					name += ", the writer stopped before the retry"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					ctx := context.Background()
					check, dsn := db.new(t)
					cut := &cutter{batch: commitPipeline, at: map[int]cutAt{1: afterCommit}}
					bs := citusWorkload(31)
					var opts []writer.Option
					var owner *rows.Batch // the new owner's, stored before the retry
					if tt.moved {
						// The retry finds the batch stale, and merges it
						// (storeStale): the ledger holds it (on Citus the
						// part cut, the first; the others are merged).
						// A batch with events (on Citus the merge writes them).
						i := slices.IndexFunc(bs[:3], func(b *rows.Batch) bool { return len(b.Events) > 0 })
						if i < 0 {
							t.Fatal("none of the first 3 batches has events")
						}
						bs = bs[i : i+1]
						opts = append(opts, writer.WithFencing(true))
						if _, err := check.Exec(ctx, `INSERT INTO leases (target, owner, epoch, expires_at) VALUES ($1, 'c', 1, now() + interval '1 hour')`, bs[0].Target); err != nil {
							t.Fatal(err)
						}
						// The new owner b stores a newer value of every
						// series before the retry (its stream began after
						// the takeover, as TestStaleRefusedRow's owner):
						// the batch's samples not stored yet are older than
						// their series' latest, merged, not refused.
						owner = newerValues(bs[0], "b", 2)
						ow, _, stopOwner := newWriter(t, check, writer.WithFencing(true))
						t.Cleanup(stopOwner)
						// The lease row is held FOR SHARE by the transaction
						// cut (on Citus the target's advisory lock, shared):
						// the move waits for it to commit, the owner's batch
						// for the move, and the retry's BEGIN for both.
						moved := make(chan struct{})
						cut.onFault = func() {
							go func() {
								defer close(moved)
								if _, err := check.Exec(ctx, `UPDATE leases SET owner = 'b', epoch = 2 WHERE target = $1`, bs[0].Target); err != nil {
									t.Error(err)
									return
								}
								if err := ow.Enqueue(owner); err != nil {
									t.Error(err)
									return
								}
								wctx, cancel := context.WithTimeout(ctx, time.Minute)
								defer cancel()
								if err := ow.WaitTarget(wctx, owner.Target); err != nil {
									t.Error(err)
								}
							}()
						}
						cut.batch = func(b *pgx.Batch) bool {
							if b.QueuedQueries[0].SQL == "BEGIN" && cut.faults() == 1 {
								<-moved
							}
							return commitPipeline(b)
						}
					}
					var conflicts, dead float64
					if tt.twice {
						// Met twice in the first group; a batch at a time, the
						// cut is the second one's (its first part's on Citus).
						id := metTwice(t, bs).ID
						conflicts = 1
						if tt.groupRows == 0 {
							cut.batch = func(b *pgx.Batch) bool {
								return commitPipeline(b) && slices.ContainsFunc(b.QueuedQueries, func(q *pgx.QueuedQuery) bool {
									return slices.Contains(q.Arguments, any(id))
								})
							}
						}
					}
					if tt.bad {
						// Its COMMIT is the first commit statement: on one
						// node storeSafe's, on Citus storePartSafe's.
						bs = bs[:1]
						bs[0] = badBatch()
						cut.batch = nil
						cut.match = func(data pgx.TraceQueryStartData) bool { return strings.HasPrefix(data.SQL, "commit") }
						dead = 3
					}
					var arm func(stop func())
					if stopped {
						// The writer's ctx ends once the COMMIT's answer is
						// lost: it stores nothing more in that Run, and runs
						// again (writeGroup requeued the batches).
						arm = func(stop func()) { cut.onCut = stop }
					}
					m := storeBacklogStopped(t, cut.pool(t, dsn), tt.groupRows, bs, arm, opts...)
					if got := cut.faults(); got != 1 {
						t.Fatalf("%d connections cut, want 1", got)
					}
					if owner != nil {
						// The owner's rows are its writer's: counted here,
						// then taken out, so that what remains is bs's.
						if n := count(t, check, `SELECT count(*) FROM samples WHERE batch_id = $1`, owner.ID); n != int64(len(owner.Samples)) {
							t.Errorf("%d samples of the owner's batch, want %d", n, len(owner.Samples))
						}
						for _, table := range []string{"samples", "ingest_ledger"} {
							if _, err := check.Exec(ctx, `DELETE FROM `+table+` WHERE batch_id = $1`, owner.ID); err != nil {
								t.Fatal(err)
							}
						}
					}
					if tt.bad {
						badBatchStored(t, check, bs[0])
					} else {
						storedOnce(t, check, bs)
					}
					writtenOnce(t, check, m)
					// Stored by this writer: on Citus, where the lease moved,
					// the part cut is and the others are merged (stale).
					stored, stale := float64(len(bs)), 0.0
					if tt.moved && db.name == "citus" {
						stored, stale = 0, 1
					}
					for _, c := range []struct {
						desc      string
						got, want float64
					}{
						{"event_conflicts_total", testutil.ToFloat64(m.EventConflicts), conflicts},
						{"dead_letters_total", testutil.ToFloat64(m.DeadLetters), dead},
						{"batches_total{outcome=replayed}", testutil.ToFloat64(m.Batches.WithLabelValues("replayed")), 0},
						{"batches_total{outcome=stored} + {outcome=partial}",
							testutil.ToFloat64(m.Batches.WithLabelValues("stored")) + testutil.ToFloat64(m.Batches.WithLabelValues("partial")), stored},
						{"batches_total{outcome=stale}", testutil.ToFloat64(m.Batches.WithLabelValues("stale")), stale},
						{"dropped_rows_total{reason=stale_duplicate}", testutil.ToFloat64(m.DroppedRows.WithLabelValues(collectormetrics.DropStaleDuplicate)), 0},
						{"dropped_rows_total{reason=stale_epoch}", testutil.ToFloat64(m.DroppedRows.WithLabelValues(collectormetrics.DropStaleEpoch)), 0},
					} {
						if c.got != c.want {
							t.Errorf("%s = %v, want %v", c.desc, c.got, c.want)
						}
					}
					if merged := testutil.ToFloat64(m.StaleMerged.WithLabelValues("samples")); stale == 0 && merged != 0 || stale == 1 && (merged < 1 || merged >= 40) {
						t.Errorf("stale_merged_rows_total{table=samples} = %v, want 0 on one node, on Citus the samples of the parts after the one cut", merged)
					}
					// Another process replays them (a crash before the spill
					// heard they were stored): replays, nothing counted.
					m = storeBacklog(t, check, tt.groupRows, bs)
					if got := testutil.ToFloat64(m.Batches.WithLabelValues("replayed")); got != float64(len(bs)) {
						t.Errorf("replayed by another writer: batches_total{outcome=replayed} = %v, want %d", got, len(bs))
					}
					for _, table := range []string{"samples", "events"} {
						if got := testutil.ToFloat64(m.RowsWritten.WithLabelValues(table)); got != 0 {
							t.Errorf("replayed by another writer: rows_written_total{table=%s} = %v, want 0", table, got)
						}
					}
				})
			}
		}
	}
}

// newerValues is a batch of collector at epoch holding a value of each of
// b's series an hour after b's newest: what an owner stores of the
// series once the lease moved to it.
func newerValues(b *rows.Batch, collector string, epoch int64) *rows.Batch {
	_, last := b.TSRange()
	o := &rows.Batch{ID: rows.NewBatchID(), Collector: collector, Target: b.Target, Epoch: epoch}
	seen := map[int64]bool{}
	for _, s := range b.Samples {
		if !seen[s.SeriesID] {
			seen[s.SeriesID] = true
			o.Samples = append(o.Samples, rows.Sample{TS: last + int64(time.Hour), SeriesID: s.SeriesID, Kind: rows.ValInt, Int: 1})
		}
	}
	return o
}
