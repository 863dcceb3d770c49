package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/migrations"
)

// TestTrimCitus: the lab's retention (migrations.Trim, `lhcnp lab
// --retention` with --citus-workers) trims a Citus database as one node: the
// samples before the horizon go, a leaf deleted before it loses its series
// and latest rows, a live leaf keeps them. Its last statement deleted the
// series (a reference table) using latest (distributed), which Citus
// refuses as a multi-shard delete: every trim of a Citus lab failed.
func TestTrimCitus(t *testing.T) {
	for _, tt := range []struct {
		desc  string
		citus bool
	}{{"one node", false}, {"citus", true}} {
		t.Run(tt.desc, func(t *testing.T) {
			ctx := context.Background()
			pool, _ := pgtest.New(t)
			if tt.citus {
				pool, _ = pgtest.NewCitus(t)
			}
			f := newFixtureOn(t, pool, fixtureStart())
			gone := f.series("sim", queueState+"counters/bytes", "wan", 7)
			f.add(gone, -30*time.Second, 5, flagSync)
			f.add(gone, -20*time.Second, nil, flagDelete)
			live := f.series("sim", queueState+"counters/bytes", "wan", 1)
			f.add(live, -30*time.Second, 5, flagSync)
			f.add(live, 0, 9, 0)
			f.commit()
			if err := migrations.TrimAt(ctx, pool, f.t0.Add(-10*time.Second)); err != nil {
				t.Fatalf("trim: %v", err)
			}
			var series, latest, old int
			if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM series WHERE id = $1), (SELECT count(*) FROM latest WHERE series_id = $1),
				(SELECT count(*) FROM samples WHERE ts < $2 AND flags & 8 = 0)`, gone, f.t0.Add(-10*time.Second)).Scan(&series, &latest, &old); err != nil {
				t.Fatal(err)
			}
			if series != 0 || latest != 0 || old != 0 {
				t.Errorf("after the trim: the deleted leaf's series %d, latest %d; samples before the horizon %d; want 0, 0, 0", series, latest, old)
			}
			var liveSeries int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM series WHERE id = $1`, live).Scan(&liveSeries); err != nil || liveSeries != 1 {
				t.Errorf("the live leaf's series: %d (%v), want kept", liveSeries, err)
			}
		})
	}
}
