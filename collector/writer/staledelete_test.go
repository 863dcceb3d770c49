package writer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/writer"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestStaleDeleteOnce: a switch restarted without a leaf; collector a
// deleted it at its stream's sync_response and spilled the batch (or
// streamed on as a zombie), while b, the lease's owner now, deleted it at
// its own stream's, dated differently (every leaf changed between the two
// subscriptions). Merged, a's delete is the same disappearance as b's
// when the series' row just before or just after it is a delete: one
// delete row per disappearance. A delete with a value between it and b's
// is another disappearance and is stored. Before the fix the merge stored
// a's delete beside b's: two delete rows of one disappearance.
func TestStaleDeleteOnce(t *testing.T) {
	staleDeleteOnce(t, pgtest.New)
}

// TestCitusStaleDeleteOnce is TestStaleDeleteOnce on Citus, where the
// merge decides in Go (mergeStaleCitus) from the rows it reads: before
// the fix it stored a's delete beside b's there too.
func TestCitusStaleDeleteOnce(t *testing.T) {
	staleDeleteOnce(t, pgtest.NewCitus)
}

func staleDeleteOnce(t *testing.T, newDB func(testing.TB) (*pgxpool.Pool, string)) {
	for _, tt := range []struct {
		desc        string
		owner, zomb []deleteRow // the owner's rows (stored first), the stale batch's
		split       int         // > 0: the stale rows in two batches, the second from zomb[split]
		want        []deleteRow
	}{
		{desc: "a's delete before b's", owner: []deleteRow{{0, false}, {2, true}}, zomb: []deleteRow{{0, false}, {1, true}},
			want: []deleteRow{{0, false}, {2, true}}},
		{desc: "a's delete after b's", owner: []deleteRow{{0, false}, {1, true}, {4, false}}, zomb: []deleteRow{{0, false}, {2, true}},
			want: []deleteRow{{0, false}, {1, true}, {4, false}}},
		{desc: "a's delete, then a value only a received: another disappearance", owner: []deleteRow{{0, false}, {4, false}, {5, true}},
			zomb: []deleteRow{{0, false}, {1, true}, {2, false}}, want: []deleteRow{{0, false}, {1, true}, {2, false}, {4, false}, {5, true}}},
		// Deleted and created again twice inside a's stale window while
		// b's stream was down: b deleted it once, at its next stream's
		// sync_response (5). a's first delete is a disappearance of its
		// own (a value follows it); its second is b's (no value between).
		{desc: "deleted twice, one stale batch", owner: []deleteRow{{0, false}, {5, true}},
			zomb: []deleteRow{{0, false}, {1, true}, {2, false}, {3, true}}, want: []deleteRow{{0, false}, {1, true}, {2, false}, {5, true}}},
		// The same, a's rows in two batches cut after its first delete:
		// merging the first, the value that follows that delete is not
		// in it, and the next row is b's delete. The merge holds that
		// delete back (stale_deletes), and the second batch's merge
		// judges it again with the value at 2: stored then. Before, it
		// was dropped as b's disappearance, and the value at 2 followed
		// the value at 0 with no delete between (got 0, 2, 5 deleted).
		{desc: "deleted twice, the stale batches cut after the first delete", owner: []deleteRow{{0, false}, {5, true}},
			zomb: []deleteRow{{0, false}, {1, true}, {2, false}, {3, true}}, split: 2,
			want: []deleteRow{{0, false}, {1, true}, {2, false}, {5, true}}},
		// Cut after the second delete, and a value only a received
		// follows it in the second batch (the one after b's delete is
		// newer than what is stored: refused): the second delete, held
		// back, is a disappearance of its own too.
		{desc: "deleted twice, the stale batches cut after the second delete, a value after it", owner: []deleteRow{{0, false}, {5, true}},
			zomb: []deleteRow{{0, false}, {1, true}, {2, false}, {3, true}, {4, false}, {6, false}}, split: 4,
			want: []deleteRow{{0, false}, {1, true}, {2, false}, {3, true}, {4, false}, {5, true}}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			zombs := [][]deleteRow{tt.zomb}
			if tt.split > 0 {
				zombs = [][]deleteRow{tt.zomb[:tt.split], tt.zomb[tt.split:]}
			}
			if d := cmp.Diff(tt.want, staleDeleteRows(t, newDB, tt.owner, zombs...)); d != "" {
				t.Errorf("samples (-want +got):\n%s", d)
			}
		})
	}
}

// TestStaleDeleteHeldAcrossRestart: TestStaleDeleteOnce's two batches cut
// after the first delete, the writer that merged the first stopped at once
// (a crash) and a new one merging the second, on one node and on Citus:
// the delete held back by the first merge is in the database
// (stale_deletes), and the second merge stores it. Counted: the value at 2
// and that delete merged; the value at 0, that delete (by its own batch,
// which judged it so) and the delete at 3 duplicates.
func TestStaleDeleteHeldAcrossRestart(t *testing.T) {
	for _, db := range []struct {
		desc  string
		newDB func(testing.TB) (*pgxpool.Pool, string)
	}{{"one node", pgtest.New}, {"Citus", pgtest.NewCitus}} {
		t.Run(db.desc, func(t *testing.T) {
			t.Parallel()
			got, counts := staleDeleteRun(t, db.newDB, true, []deleteRow{{0, false}, {5, true}},
				[]deleteRow{{0, false}, {1, true}}, []deleteRow{{2, false}, {3, true}})
			if d := cmp.Diff([]deleteRow{{0, false}, {1, true}, {2, false}, {5, true}}, got); d != "" {
				t.Errorf("samples (-want +got):\n%s", d)
			}
			if d := cmp.Diff(staleCounts{Merged: 2, Duplicates: 3, Stale: 2}, counts); d != "" {
				t.Errorf("counters (-want +got):\n%s", d)
			}
		})
	}
}

// TestStaleDeleteTie: the row nearest a delete of a stale batch is, at one
// timestamp, both a stored row (the owner's) and one of the batch, one a
// delete and the other a value. The stored row decides, on one node and on
// Citus alike: the batch's row at that timestamp is a duplicate, never
// stored, so the delete is next to the row the table holds. Run on both,
// the same rows stored. Before, Citus took a delete if either was (it
// dropped a's delete next to a value b stored: the disappearance had no
// delete row) and one node took either of the two, as its sort met them.
func TestStaleDeleteTie(t *testing.T) {
	for _, tt := range []struct {
		desc        string
		owner, zomb []deleteRow
		want        []deleteRow
	}{
		{"b stored a value where a has a delete: a's next delete stored",
			[]deleteRow{{0, false}, {3, false}, {5, false}}, []deleteRow{{3, true}, {4, true}},
			[]deleteRow{{0, false}, {3, false}, {4, true}, {5, false}}},
		{"b stored a delete where a has a value: a's next delete the same disappearance",
			[]deleteRow{{0, false}, {3, true}, {5, false}}, []deleteRow{{3, false}, {4, true}},
			[]deleteRow{{0, false}, {3, true}, {5, false}}},
		{"after the delete: b stored a value where a has a delete",
			[]deleteRow{{0, false}, {3, false}, {5, false}}, []deleteRow{{2, true}, {3, true}},
			[]deleteRow{{0, false}, {2, true}, {3, false}, {5, false}}},
		{"after the delete: b stored a delete where a has a value",
			[]deleteRow{{0, false}, {3, true}, {5, false}}, []deleteRow{{2, true}, {3, false}},
			[]deleteRow{{0, false}, {3, true}, {5, false}}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			one := staleDeleteRows(t, pgtest.New, tt.owner, tt.zomb)
			citus := staleDeleteRows(t, pgtest.NewCitus, tt.owner, tt.zomb)
			if d := cmp.Diff(one, citus); d != "" {
				t.Errorf("samples on Citus differ from one node's (-one node +Citus):\n%s", d)
			}
			if d := cmp.Diff(tt.want, one); d != "" {
				t.Errorf("samples on one node (-want +got):\n%s", d)
			}
		})
	}
}

// deleteRow is a sample of staleDeleteRows's series: its step (ms after
// the base) and whether it is a delete.
type deleteRow struct {
	Step    int
	Deleted bool
}

// staleDeleteRows stores owner's rows of one series as b, the lease's
// owner at epoch 2, then merges zombs as stale batches of a (epoch 1),
// one batch each, in order, on a database of newDB, and returns
// the series' rows stored.
func staleDeleteRows(t *testing.T, newDB func(testing.TB) (*pgxpool.Pool, string), owner []deleteRow, zombs ...[]deleteRow) []deleteRow {
	t.Helper()
	got, _ := staleDeleteRun(t, newDB, false, owner, zombs...)
	return got
}

// staleDeleteRun is staleDeleteRows; with restart, each stale batch is
// merged by a writer of its own, the one before stopped at once after its
// merge (a crash: nothing of it kept but what it committed). It returns
// the counters too, summed over its writers.
func staleDeleteRun(t *testing.T, newDB func(testing.TB) (*pgxpool.Pool, string), restart bool, owner []deleteRow, zombs ...[]deleteRow) ([]deleteRow, staleCounts) {
	t.Helper()
	got, counts, _ := staleDeleteRunSpoilt(t, newDB, restart, nil, owner, zombs...)
	return got, counts
}

// staleDeleteRunSpoilt is staleDeleteRun; spoil, when not nil, is given
// the database and each stale batch (its index in zombs) before it is
// queued, to make PostgreSQL refuse some of its rows. It returns the
// held deletes left (stale_deletes) too.
func staleDeleteRunSpoilt(t *testing.T, newDB func(testing.TB) (*pgxpool.Pool, string), restart bool,
	spoil func(t *testing.T, pool *pgxpool.Pool, k int, b *rows.Batch), owner []deleteRow, zombs ...[]deleteRow) ([]deleteRow, staleCounts, []deleteRow) {
	t.Helper()
	const path = "/lhcnp/global/rocev2-receivers/receiver[prefix=192.168.0.0/16]/config/prefix"
	id := rows.SeriesID("sw1", path)
	pool, _ := newDB(t)
	ctx := context.Background()
	// b holds the lease at epoch 2 (and stored rows of other series).
	ow, base, wait := staleOwner(t, pool, 2)
	batch := func(collector string, epoch int64, rs []deleteRow) *rows.Batch {
		b := &rows.Batch{ID: rows.NewBatchID(), Collector: collector, Target: "sw1", Epoch: epoch,
			Series: []rows.Series{{ID: id, Target: "sw1", Path: path, FirstSeen: base}}}
		for _, r := range rs {
			s := rows.Sample{TS: base + int64(r.Step)*int64(time.Millisecond), SeriesID: id, Kind: rows.ValText, Text: "192.168.0.0/16"}
			if r.Deleted {
				s = rows.Sample{TS: s.TS, SeriesID: id, Flags: rows.Deleted}
			}
			b.Samples = append(b.Samples, s)
		}
		return b
	}
	ow.Enqueue(batch("b", 2, owner))
	wait(ow)
	var counts staleCounts
	zombie, m, stopZombie := spillWriter(t, pool, t.TempDir(), writer.WithFencing(true))
	count := func() { // summed over the writers of the run
		c := staleCountsOf(m)
		counts = staleCounts{Merged: counts.Merged + c.Merged, MergedEvents: counts.MergedEvents + c.MergedEvents,
			Duplicates: counts.Duplicates + c.Duplicates, Refused: counts.Refused + c.Refused, Stale: counts.Stale + c.Stale,
			Replayed: counts.Replayed + c.Replayed}
	}
	for k, zomb := range zombs {
		if restart && k > 0 {
			wait(zombie)
			stopZombie(false)
			count()
			zombie, m, stopZombie = spillWriter(t, pool, t.TempDir(), writer.WithFencing(true))
		}
		b := batch("a", 1, zomb)
		if spoil != nil {
			spoil(t, pool, k, b)
		}
		zombie.Enqueue(b)
	}
	wait(zombie)
	stopZombie(true)
	count()

	stepsOf := func(table string) []deleteRow {
		t.Helper()
		rs, err := pool.Query(ctx, `SELECT round((extract(epoch FROM ts) * 1000000000 - $1::bigint) / 1000000)::bigint, flags & 2 = 2
			FROM `+table+` WHERE series_id = $2 ORDER BY ts`, base, id)
		if err != nil {
			t.Fatal(err)
		}
		var got []deleteRow
		var r deleteRow
		var step int64
		if _, err := pgx.ForEachRow(rs, []any{&step, &r.Deleted}, func() error {
			r.Step = int(step)
			got = append(got, r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	return stepsOf("samples"), counts, stepsOf("stale_deletes")
}

// TestStaleDeleteRefusedRow: the stale batches of TestStaleDeleteOnce with
// a row PostgreSQL refuses, merged on one node and on Citus, the same rows
// stored and the same deletes held. A value refused (a NUL in its text,
// dead-lettered: a row only a holds) after a delete still follows it in
// a's stream: that delete is a disappearance of its own, stored, and the
// delete after the value, next to b's, is held back (it ends its batch).
// A series refused (a constraint the test adds: every sample of the
// second batch dead-lettered): the delete the first merge held back is
// left held, none of the refused series is held (a dead-lettered delete
// held back would be stored later: in samples and in dead_letters).
func TestStaleDeleteRefusedRow(t *testing.T) {
	owner := []deleteRow{{0, false}, {5, true}}
	zomb := []deleteRow{{0, false}, {1, true}, {2, false}, {3, true}}
	// refuseValue spoils the value at index i of stale batch k.
	refuseValue := func(k, i int) func(*testing.T, *pgxpool.Pool, int, *rows.Batch) {
		return func(_ *testing.T, _ *pgxpool.Pool, kb int, b *rows.Batch) {
			if kb == k {
				b.Samples[i].Text = "a\x00b"
			}
		}
	}
	for _, tt := range []struct {
		desc        string
		split       int
		spoil       func(*testing.T, *pgxpool.Pool, int, *rows.Batch)
		want, wantH []deleteRow
	}{
		{desc: "one batch, the value after the first delete refused", spoil: refuseValue(0, 2),
			want: []deleteRow{{0, false}, {1, true}, {5, true}}, wantH: []deleteRow{{3, true}}},
		{desc: "cut after the first delete, the value after it refused", split: 2, spoil: refuseValue(1, 0),
			want: []deleteRow{{0, false}, {1, true}, {5, true}}, wantH: []deleteRow{{3, true}}},
		{desc: "cut after the first delete, the second batch's series refused", split: 2,
			spoil: func(t *testing.T, pool *pgxpool.Pool, k int, b *rows.Batch) {
				if k == 0 {
					return
				}
				if _, err := pool.Exec(context.Background(), `ALTER TABLE series ADD CONSTRAINT test_refused CHECK (unit <> 'test-refused')`); err != nil {
					t.Fatal(err)
				}
				b.Series[0].YangType, b.Series[0].Unit = "string", "test-refused"
			},
			want: []deleteRow{{0, false}, {5, true}}, wantH: []deleteRow{{1, true}}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			zombs := [][]deleteRow{zomb}
			if tt.split > 0 {
				zombs = [][]deleteRow{zomb[:tt.split], zomb[tt.split:]}
			}
			type stored struct{ Samples, Held []deleteRow }
			run := func(newDB func(testing.TB) (*pgxpool.Pool, string)) stored {
				got, _, held := staleDeleteRunSpoilt(t, newDB, false, tt.spoil, owner, zombs...)
				return stored{got, held}
			}
			one, citus := run(pgtest.New), run(pgtest.NewCitus)
			if d := cmp.Diff(one, citus); d != "" {
				t.Errorf("on Citus differ from one node's (-one node +Citus):\n%s", d)
			}
			if d := cmp.Diff(stored{tt.want, tt.wantH}, one); d != "" {
				t.Errorf("on one node (-want +got):\n%s", d)
			}
		})
	}
}

// TestStaleDeleteHeldStoredAsDirect: a held delete keeps only its series,
// time, flags and batch (stale_deletes has no value column): a delete has
// none (rows.Sample with Flags Deleted, Kind ValNone). Stored later it is
// the row the merge stores of a delete it does not hold, every column:
// TestStaleDeleteOnce's first delete (its flags with Initial too), merged
// in one stale batch and in two cut after it (held, then stored), on one
// node and on Citus; the values and carried_from NULL, batch_id the batch
// it came in (ts is the row's key: each run has its own time base).
func TestStaleDeleteHeldStoredAsDirect(t *testing.T) {
	owner := []deleteRow{{0, false}, {5, true}}
	zomb := []deleteRow{{0, false}, {1, true}, {2, false}, {3, true}}
	for _, db := range bothDBs {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			row := func(split int) string {
				t.Helper()
				zombs := [][]deleteRow{zomb}
				if split > 0 {
					zombs = [][]deleteRow{zomb[:split], zomb[split:]}
				}
				var pool *pgxpool.Pool
				var first *rows.Batch
				var at time.Time
				_, _, held := staleDeleteRunSpoilt(t, db.new, false, func(_ *testing.T, p *pgxpool.Pool, k int, b *rows.Batch) {
					if k == 0 {
						pool, first = p, b
						b.Samples[1].Flags |= rows.Initial
						at = time.Unix(0, b.Samples[1].TS)
					}
				}, owner, zombs...)
				if len(held) != 1 || held[0] != (deleteRow{3, true}) {
					t.Errorf("cut at %d: held %v, want the delete at 3", split, held)
				}
				var got string
				var batch int64
				if err := pool.QueryRow(context.Background(), `SELECT (to_jsonb(x) - 'batch_id' - 'ts')::text, x.batch_id
					FROM samples x WHERE x.series_id = $1 AND x.ts = $2`, first.Samples[1].SeriesID, at).Scan(&got, &batch); err != nil {
					t.Fatalf("cut at %d: the delete at 1: %v", split, err)
				}
				if batch != first.ID {
					t.Errorf("cut at %d: the delete at 1 stored with batch_id %d, want its own batch's %d", split, batch, first.ID)
				}
				return got
			}
			direct, held := row(0), row(2)
			if d := cmp.Diff(direct, held); d != "" {
				t.Errorf("the delete at 1 held, then stored, differs from it stored at once (-at once +held):\n%s", d)
			}
			for _, col := range []string{`"v_int": null`, `"v_float": null`, `"v_num": null`, `"v_bool": null`, `"v_text": null`,
				`"carried_from": null`, fmt.Sprintf(`"flags": %d`, rows.Deleted|rows.Initial)} {
				if !strings.Contains(direct, col) {
					t.Errorf("the delete at 1 stored: %s, want %s", direct, col)
				}
			}
		})
	}
}
