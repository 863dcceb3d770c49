package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/migrations"
)

// TestRetentionHorizonRecorded: every retention pass records the horizon it
// applied in lhcnp_partitioning.horizon (migration 024), the greatest kept:
// none before any pass; a maintenance pass with a 3-day retention records
// the start of the oldest day it keeps, and removed exactly the samples
// before it (with either partition manager, and on Citus); a trim to a
// later instant records that; a later pass, a trim to an earlier instant
// and a pass without retention leave it.
func TestRetentionHorizonRecorded(t *testing.T) {
	type db struct {
		desc    string
		fixture func(t *testing.T) *fixture
	}
	var dbs []db
	for _, manager := range managers {
		dbs = append(dbs, db{manager, func(t *testing.T) *fixture { return retentionFixture(t, manager) }})
	}
	dbs = append(dbs, db{"citus", func(t *testing.T) *fixture {
		pool, _ := pgtest.NewCitus(t)
		return dailyFixture(t, pool)
	}})
	for _, tt := range dbs {
		t.Run(tt.desc, func(t *testing.T) {
			f := tt.fixture(t)
			ctx := context.Background()
			const h = time.Hour
			recorded := func() *time.Time {
				t.Helper()
				var at *time.Time
				if err := f.pool.QueryRow(ctx, `SELECT horizon FROM lhcnp_partitioning WHERE parent = 'public.samples'`).Scan(&at); err != nil {
					t.Fatal(err)
				}
				return at
			}
			// The oldest sample left that is not a carried copy.
			oldest := func() time.Time {
				t.Helper()
				var at time.Time
				if err := f.pool.QueryRow(ctx, `SELECT min(ts) FROM samples WHERE flags & 8 = 0`).Scan(&at); err != nil {
					t.Fatal(err)
				}
				return at
			}
			check := func(when string, want time.Time, oldestWant time.Time) {
				t.Helper()
				if got := recorded(); got == nil || !got.Equal(want) {
					t.Errorf("%s: horizon %v, want %v", when, got, want)
				}
				if got := oldest(); !got.Equal(oldestWant) {
					t.Errorf("%s: oldest sample %v, want %v", when, got, oldestWant)
				}
			}
			if got := recorded(); got != nil {
				t.Errorf("before any pass: horizon %v, want none", *got)
			}
			// A depth (not carried) every 6 hours, half past, until this
			// morning.
			depth := f.series("sim", queueState+"queue-depth", "wan", 0)
			for k := range 20 {
				f.add(depth, time.Duration(k)*6*h+30*time.Minute, 100*k, 0)
			}
			f.commit()

			if err := migrations.SetRetention(ctx, f.pool, 3*24*h); err != nil {
				t.Fatal(err)
			}
			if err := migrations.Maintain(ctx, f.pool); err != nil {
				t.Fatal(err)
			}
			days := f.t0.AddDate(0, 0, 2) // the start of the day 3 days ago
			check("a pass with 3 days' retention", days, days.Add(30*time.Minute))

			trim := f.t0.Add(3*24*h + time.Hour)
			if err := migrations.TrimAt(ctx, f.pool, trim); err != nil {
				t.Fatal(err)
			}
			check("a trim a day later", trim, trim.Add(5*h+30*time.Minute))

			if err := migrations.Maintain(ctx, f.pool); err != nil {
				t.Fatal(err)
			}
			if err := migrations.TrimAt(ctx, f.pool, trim.Add(-2*h)); err != nil {
				t.Fatal(err)
			}
			if err := migrations.SetRetention(ctx, f.pool, 0); err != nil {
				t.Fatal(err)
			}
			if err := migrations.Maintain(ctx, f.pool); err != nil {
				t.Fatal(err)
			}
			check("a pass, an earlier trim and a pass without retention after it", trim, trim.Add(5*h+30*time.Minute))
		})
	}
}
