package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/lhcnp/lhcnp/migrations"
)

// TestRetentionRemovesHeldDeletes: both retention paths remove the deletes
// a stale merge held back (stale_deletes, schema 26) older than their
// horizon and keep the newer ones: a maintenance pass with a 3-day
// retention those before the oldest kept day's start (schema 27's
// lhcnp_maintain), a trim those before its instant (migrations.Trim); with
// either partition manager, and on Citus, where the table is distributed.
// Before schema 27 neither removed any: a held delete no later batch
// decided stayed for ever.
func TestRetentionRemovesHeldDeletes(t *testing.T) {
	for _, tt := range retentionDBs() {
		t.Run(tt.desc, func(t *testing.T) {
			f := tt.fixture(t)
			ctx := context.Background()
			const h = time.Hour
			days := f.t0.AddDate(0, 0, 2) // the start of the day 3 days ago: the pass's horizon
			trim := f.t0.Add(3*24*h + h)
			held := []time.Time{
				days.Add(-12 * h), // before the pass's horizon
				days,              // at it: kept by the pass
				days.Add(h),       // after it, before the trim's
				trim.Add(h),       // after both
			}
			for k, at := range held {
				if _, err := f.pool.Exec(ctx, `INSERT INTO stale_deletes (series_id, ts, flags, target, batch_id) VALUES ($1, $2, 2, 'sim', $3)`,
					int64(k+1), at, int64(100+k)); err != nil {
					t.Fatal(err)
				}
			}
			left := func() []time.Time {
				t.Helper()
				r, err := f.pool.Query(ctx, `SELECT ts FROM stale_deletes ORDER BY ts`)
				if err != nil {
					t.Fatal(err)
				}
				got, err := pgx.CollectRows(r, pgx.RowTo[time.Time])
				if err != nil {
					t.Fatal(err)
				}
				return got
			}

			if err := migrations.SetRetention(ctx, f.pool, 3*24*h); err != nil {
				t.Fatal(err)
			}
			if err := migrations.Maintain(ctx, f.pool); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(held[1:], left()); d != "" {
				t.Errorf("held deletes after a pass with 3 days' retention (-want +got):\n%s", d)
			}
			if err := migrations.TrimAt(ctx, f.pool, trim); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(held[3:], left()); d != "" {
				t.Errorf("held deletes after a trim at %v (-want +got):\n%s", trim, d)
			}
		})
	}
}
