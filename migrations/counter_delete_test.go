package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/migrations"
)

// TestCounterAcrossDelete: a queue's dropped-packets counter at 100, then
// deleted by the switch (the queue, or a flow-table entry, removed), then
// back at 500: a new counter that counted from zero. counter_increases
// must give the new value as its increase (reset, since the delete), as
// docs/collector.md says of a reset, and still so after a trim whose
// horizon falls between the delete and the new value (the delete carried
// to the horizon, migration 20). Before migration 20 the view skipped the
// delete and gave 400 over 2 s (this test failed), and after the trim read
// the carried 100.
func TestCounterAcrossDelete(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		desc  string
		citus bool
		trim  bool
	}{
		{"one node", false, false},
		{"one node, trimmed after the delete", false, true},
		{"citus", true, false},
		{"citus, carried after the delete", true, true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			newDB := pgtest.New
			if tt.citus {
				newDB = pgtest.NewCitus
			}
			pool, _ := newDB(t)
			f := newFixtureOn(t, pool, fixtureStart())
			dropped := f.series("sw1", queueState+"counters/dropped-packets", "wan", 0)
			f.add(dropped, 0, 100, 0)
			f.add(dropped, time.Second, nil, flagDelete)
			f.add(dropped, 3*time.Second, 500, 0)
			f.commit()
			if tt.trim {
				if err := trimAt(pool, tt.citus, f.t0.Add(2*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			type inc struct {
				PreviousTs time.Time
				Increase   *float64
				Seconds    float64
				Reset      bool
			}
			got := query[inc](t, pool, `SELECT previous_ts, increase::float8 AS increase, seconds, reset
				FROM counter_increases WHERE series_id = $1 AND ts = $2`, dropped, f.t0.Add(3*time.Second))
			want := []inc{{PreviousTs: f.t0.Add(time.Second), Increase: p(500.0), Seconds: 2, Reset: true}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("counter_increases of the value after a delete: counted from zero since the delete (-want +got):\n%s", diff)
			}
		})
	}
}

// trimAt trims pool's samples at horizon (migrations.TrimAt, on one node and
// on Citus alike since TestTrimCitus).
func trimAt(pool *pgxpool.Pool, _ bool, horizon time.Time) error {
	return migrations.TrimAt(context.Background(), pool, horizon)
}
