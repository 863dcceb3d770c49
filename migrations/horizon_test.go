package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	for _, tt := range retentionDBs() {
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

// TestHorizonOfUpgradedDatabase: a database upgraded from schema 23, whose
// passes recorded no horizon, gets one at schema 25 (its oldest sample the
// daily partitions keep), where it had none until its next pass: with
// either partition manager and on Citus. Nothing stored: none (a fresh
// database: nothing was removed). After schema 23's pass with a 3-day
// retention: the start of the oldest kept day (the carried copy there).
// After a trim as schema 23 did it: its instant. Series stored but every
// sample removed: the migration's time. Before 025 each was none (this test
// failed).
func TestHorizonOfUpgradedDatabase(t *testing.T) {
	type db struct {
		desc string
		open func(t *testing.T) (*fixture, *pgx.Conn)
	}
	var dbs []db
	for _, manager := range managers {
		dbs = append(dbs, db{manager, func(t *testing.T) (*fixture, *pgx.Conn) {
			f := retentionFixture(t, manager)
			return f, connect(t, f.pool.Config().ConnString())
		}})
	}
	dbs = append(dbs, db{"citus", func(t *testing.T) (*fixture, *pgx.Conn) {
		pool, _ := pgtest.NewCitus(t)
		return dailyFixture(t, pool), connect(t, pool.Config().ConnString())
	}})
	const before = 23
	for _, tt := range dbs {
		t.Run(tt.desc, func(t *testing.T) {
			f, conn := tt.open(t)
			ctx := context.Background()
			const h = time.Hour
			// upgrade takes the database back to schema 23 (024's down drops
			// the horizon), runs what happened there, up to the latest, and
			// returns the horizon then.
			upgrade := func(at23 func()) *time.Time {
				t.Helper()
				if err := migrations.To(ctx, conn, before); err != nil {
					t.Fatal(err)
				}
				at23()
				if err := migrations.Up(ctx, conn); err != nil {
					t.Fatal(err)
				}
				var at *time.Time
				if err := f.pool.QueryRow(ctx, `SELECT horizon FROM lhcnp_partitioning WHERE parent = 'public.samples'`).Scan(&at); err != nil {
					t.Fatal(err)
				}
				return at
			}
			check := func(when string, got *time.Time, want time.Time) {
				t.Helper()
				if got == nil || !got.Equal(want) {
					t.Errorf("%s: horizon %v, want %v", when, got, want)
				}
			}
			exec := func(sql string, args ...any) {
				t.Helper()
				if _, err := f.pool.Exec(ctx, sql, args...); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}

			if got := upgrade(func() {}); got != nil {
				t.Errorf("nothing stored: horizon %v, want none", *got)
			}

			// A depth every 6 hours, half past, until this morning; a leaf
			// the retention carries (lhcnp_carried_leaves), set once.
			depth := f.series("sim", queueState+"queue-depth", "wan", 0)
			for k := range 20 {
				f.add(depth, time.Duration(k)*6*h+30*time.Minute, 100*k, 0)
			}
			kmax := f.series("sim", queueState+"effective-kmax", "wan", 0)
			f.add(kmax, h, 6000, 0)
			f.commit()
			check("after schema 23's pass with 3 days' retention", upgrade(func() {
				if err := migrations.SetRetention(ctx, f.pool, 3*24*h); err != nil {
					t.Fatal(err)
				}
				exec(`SELECT lhcnp_maintain()`)
			}), f.t0.AddDate(0, 0, 2))

			trim := f.t0.Add(3*24*h + time.Hour)
			check("after schema 23's trim", upgrade(func() {
				// migrations.Trim as it was before schema 24.
				for _, q := range []string{`SELECT lhcnp_carry_forward($1)`, `SELECT lhcnp_carry_counters($1)`, `DELETE FROM samples WHERE ts < $1`} {
					exec(q, trim)
				}
			}), trim)

			from := time.Now().Truncate(time.Microsecond)
			got := upgrade(func() { exec(`DELETE FROM samples`) })
			if got == nil || got.Before(from) || got.After(time.Now()) {
				t.Errorf("every sample removed: horizon %v, want the migration's time, after %v", got, from)
			}
		})
	}
}
