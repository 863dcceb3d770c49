package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/migrations"
)

// TestSeriesValuesLeavesOutCarried: a counter sampled before and exactly at
// a trim's horizon (a switch sampling on the clock), then the trim, which
// carries the value before the horizon to it (migrations 17 and 18).
// series_values is "every sample joined to its series" (docs/collector.md):
// the switch's samples, not the retention's copies. Before migration 22 it
// also gave the carried copy (1000 at the horizon, beside the real 2000),
// with no column to tell it (this test failed); counter_increases still
// reads the copy (the real sample keeps its increase).
func TestSeriesValuesLeavesOutCarried(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bytes := f.series("sw1", queueState+"counters/bytes", "wan", 0)
	f.add(bytes, 0, 1000, 0)
	f.add(bytes, 10*time.Second, 2000, 0)
	f.add(bytes, 20*time.Second, 3000, 0)
	f.commit()
	if err := migrations.TrimAt(ctx, f.pool, f.t0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	type sv struct {
		Ts        time.Time
		ValueText string
	}
	got := query[sv](t, f.pool, `SELECT ts, value_text FROM series_values WHERE series_id = $1 ORDER BY ts, value_text`, bytes)
	want := []sv{{f.t0.Add(10 * time.Second), "2000"}, {f.t0.Add(20 * time.Second), "3000"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series_values after a trim: the switch's samples (-want +got):\n%s", diff)
	}
	type inc struct {
		Ts       time.Time
		Increase float64
	}
	gotInc := query[inc](t, f.pool, `SELECT ts, increase::float8 AS increase FROM counter_increases WHERE series_id = $1 ORDER BY ts`, bytes)
	wantInc := []inc{{f.t0.Add(10 * time.Second), 1000}, {f.t0.Add(20 * time.Second), 1000}}
	if diff := cmp.Diff(wantInc, gotInc); diff != "" {
		t.Errorf("counter_increases after a trim (-want +got):\n%s", diff)
	}
}
