package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/migrations"
)

// TestTrimBoundsDisk: a lab's samples over three hours, trimmed every 15
// minutes to the last 30 (the clock moved by placing each pass's rows 15
// minutes later in the past). No sample older than the horizon is left but
// the carried values of K_max, which the views still read, and of a live
// counter, whose every kept sample keeps its increase; after the first
// passes the table stays at its size (new rows reuse the space of the rows
// trimmed and vacuumed; without the trims it would grow by a quarter of
// an hour's rows at every pass).
func TestTrimBoundsDisk(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const slice, keep = 15 * time.Minute, 30 * time.Minute
	// The three hours of samples in one daily partition (schema 2): a
	// fixture less than three hours after midnight (UTC) spread them over
	// two, and the table grew by the space the trims freed in yesterday's,
	// which today's rows cannot reuse (the test failed from 00:00 to 03:00).
	// TrimAt names its horizon, so samples later today than the wall clock
	// are as good (the partitions are created days ahead).
	if day := f.t0.UTC().Truncate(24 * time.Hour); f.t0.Sub(day) < 3*time.Hour+time.Minute {
		f.t0 = day.Add(3*time.Hour + time.Minute)
	}
	kmax := f.series("sim", queueState+"effective-kmax", "wan", 0)
	f.add(kmax, -3*time.Hour, 1000, flagSync) // set once, long ago: carried
	gone := f.series("sim", queueState+"counters/bytes", "wan", 7)
	f.add(gone, -3*time.Hour, 5, flagSync)
	f.add(gone, -150*time.Minute, nil, flagDelete)                 // a leaf deleted long ago: its series goes
	live := f.series("sim", queueState+"counters/bytes", "wan", 1) // sampled every 10 minutes
	var depth []int64
	for q := range 20 {
		depth = append(depth, f.series("sim", queueState+"queue-depth", "wan", q))
	}
	fill := func(from, to time.Duration) {
		for at := from; at < to; at += 2 * time.Second {
			for _, id := range depth {
				f.add(id, at, int(at/time.Second), 0)
			}
			if (at%(10*time.Minute)+10*time.Minute)%(10*time.Minute) == 0 { // at every other horizon (schema 18)
				f.add(live, at, 100_000+int(at/time.Second), 0) // 1 per second
			}
		}
		f.commit()
	}
	size := func() int64 {
		var n int64
		if err := f.pool.QueryRow(ctx, `SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'samples'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	fill(-3*time.Hour, -2*time.Hour)
	var sizes []int64
	for pass := 1; pass <= 6; pass++ {
		now := -2*time.Hour + time.Duration(pass)*slice // the lab's clock, as an offset from f.t0
		fill(now-slice, now)
		horizon := f.t0.Add(now - keep)
		// At the horizon itself: Trim's is the wall clock less keep, a
		// moment later than horizon when the test is descheduled between them.
		if err := migrations.TrimAt(ctx, f.pool, horizon); err != nil {
			t.Fatal(err)
		}
		var old, carried int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE flags & 8 = 0), count(*) FILTER (WHERE flags & 8 = 8 AND series_id = $2)
			FROM samples WHERE ts < $1`, horizon.Add(-time.Second), kmax).Scan(&old, &carried); err != nil {
			t.Fatal(err)
		}
		if old != 0 {
			t.Errorf("pass %d: %d samples older than the horizon left", pass, old)
		}
		var kmaxNow int64
		if err := f.pool.QueryRow(ctx, `SELECT value_num::bigint FROM lhcnp_leaf_at('sim', '{"id": "0", "name": "wan"}', $1, $2)`,
			queueState+"effective-kmax", f.t0.Add(now)).Scan(&kmaxNow); err != nil || kmaxNow != 1000 {
			t.Errorf("pass %d: K_max read after the trim: %d (%v), want 1000 (carried)", pass, kmaxNow, err)
		}
		var rows, wrong int
		if err := f.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE increase IS DISTINCT FROM 600 OR seconds IS DISTINCT FROM 600)
			FROM counter_increases WHERE series_id = $1`, live).Scan(&rows, &wrong); err != nil {
			t.Fatal(err)
		}
		if rows != int(keep/(10*time.Minute)) || wrong != 0 {
			t.Errorf("pass %d: the live counter's kept samples: %d rows, %d without their increase of 600 in 600 s; want %d, 0",
				pass, rows, wrong, keep/(10*time.Minute))
		}
		if _, err := f.pool.Exec(ctx, `VACUUM samples`); err != nil { // autovacuum, in the lab
			t.Fatal(err)
		}
		sizes = append(sizes, size())
	}
	t.Logf("samples after each pass: %v bytes", sizes)
	var series, latest int
	if err := f.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM series WHERE id = $1), (SELECT count(*) FROM latest WHERE series_id = $1)`,
		gone).Scan(&series, &latest); err != nil {
		t.Fatal(err)
	}
	if series != 0 || latest != 0 {
		t.Errorf("a leaf deleted before the horizon: %d series and %d latest rows left, want none", series, latest)
	}
	if n := len(query[struct{ ID int64 }](t, f.pool, `SELECT id FROM series WHERE id = ANY($1)`, append(depth, kmax, live))); n != len(depth)+2 {
		t.Errorf("%d of the %d live series left", n, len(depth)+2)
	}
	for _, s := range sizes[2:] {
		if s > sizes[1]*21/20 {
			t.Errorf("samples grew from %d to %d bytes while every pass trims as many rows as it adds: %v", sizes[1], s, sizes)
		}
	}
}
