package writer_test

import (
	"context"
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
	const path = "/lhcnp/global/rocev2-receivers/receiver[prefix=192.168.0.0/16]/config/prefix"
	id := rows.SeriesID("sw1", path)
	type row struct {
		Step    int
		Deleted bool
	}
	for _, tt := range []struct {
		desc        string
		owner, zomb []row // the owner's rows (stored first), the stale batch's
		want        []row
	}{
		{"a's delete before b's", []row{{0, false}, {2, true}}, []row{{0, false}, {1, true}}, []row{{0, false}, {2, true}}},
		{"a's delete after b's", []row{{0, false}, {1, true}, {4, false}}, []row{{0, false}, {2, true}},
			[]row{{0, false}, {1, true}, {4, false}}},
		{"a's delete, then a value only a received: another disappearance", []row{{0, false}, {4, false}, {5, true}},
			[]row{{0, false}, {1, true}, {2, false}}, []row{{0, false}, {1, true}, {2, false}, {4, false}, {5, true}}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			pool, _ := newDB(t)
			ctx := context.Background()
			// b holds the lease at epoch 2 (and stored rows of other series).
			owner, base, wait := staleOwner(t, pool, 2)
			batch := func(collector string, epoch int64, rs []row) *rows.Batch {
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
			owner.Enqueue(batch("b", 2, tt.owner))
			wait(owner)
			zombie, _, stopZombie := newWriter(t, pool, writer.WithFencing(true))
			defer stopZombie()
			zombie.Enqueue(batch("a", 1, tt.zomb))
			wait(zombie)

			rs, err := pool.Query(ctx, `SELECT round((extract(epoch FROM ts) * 1000000000 - $1::bigint) / 1000000)::bigint, flags & 2 = 2
				FROM samples WHERE series_id = $2 ORDER BY ts`, base, id)
			if err != nil {
				t.Fatal(err)
			}
			var got []row
			var r row
			var step int64
			if _, err := pgx.ForEachRow(rs, []any{&step, &r.Deleted}, func() error {
				r.Step = int(step)
				got = append(got, r)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("samples (-want +got):\n%s", d)
			}
		})
	}
}
