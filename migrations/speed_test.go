package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/migrations"
)

const engineSpeed = "/lhcnp/global/state/engine-speed"

// speedRates writes counters of two targets, "real" and "sim", one sample
// per second from t0 (10 notifications, 2 drops and 1 Mb per wall-clock
// second) and each a port rate of 100 Mb/s.
func speedRates(f *fixture) {
	counter := func(target, name string) int64 { return f.series(target, queueState+"counters/"+name, "wan", 0) }
	for _, target := range []string{"real", "sim"} {
		notify, dropped, bytes := counter(target, "cnp-notify-sent"), counter(target, "dropped-packets"), counter(target, "bytes")
		for s := range 4 {
			at := time.Duration(s) * time.Second
			f.add(notify, at, 10*s, 0)
			f.add(dropped, at, 2*s, 0)
			f.add(bytes, at, 125_000*s, 0) // 1 Mb per wall-clock second
		}
		f.add(f.series(target, ifState+"effective-port-rate", "wan", -1), 0, 100_000_000, 0)
	}
}

// speedRows is what the rate views say of "real" and "sim".
type speedRows struct {
	Notifications []notifRow
	Drops         []dropRow
	Utilisation   []utilRow
}

type notifRow struct {
	Target                 string
	Second                 time.Time
	Speed                  float64
	RatePerSecond          float64
	RatePerSimulatedSecond float64
}

type dropRow struct {
	Target                           string
	Ts                               time.Time
	DroppedPacketsPerSecond          float64
	DroppedPacketsPerSimulatedSecond float64
}

type utilRow struct {
	Target                 string
	Ts                     time.Time
	BitsPerSecond          float64
	BitsPerSimulatedSecond float64
	PortRateBitsPerSec     int64 `db:"port_rate_bps"`
	UtilisationPercent     float64
}

func readSpeedRows(t *testing.T, pool *pgxpool.Pool, at time.Time) speedRows {
	t.Helper()
	return speedRows{
		Notifications: query[notifRow](t, pool, `SELECT target, second, speed, rate_per_second, rate_per_simulated_second
			FROM notifications_per_second ORDER BY target, second`),
		Drops: query[dropRow](t, pool, `SELECT target, ts, dropped_packets_per_second, dropped_packets_per_simulated_second
			FROM drops_and_pauses WHERE dropped_packets_per_second IS NOT NULL AND target = 'sim' ORDER BY ts`),
		Utilisation: query[utilRow](t, pool, `SELECT target, ts, bits_per_second, bits_per_simulated_second, port_rate_bps, utilisation_percent
			FROM queue_utilisation WHERE ts = $1 ORDER BY target`, at),
	}
}

// wantSpeedRows: "real" at speed 1 throughout; "sim" at 0.05 for its first
// second and at 0.5 from t0+2s on.
func wantSpeedRows(at func(time.Duration) time.Time) speedRows {
	return speedRows{
		Notifications: []notifRow{
			{"real", at(time.Second), 1, 10, 10}, {"real", at(2 * time.Second), 1, 10, 10}, {"real", at(3 * time.Second), 1, 10, 10},
			{"sim", at(time.Second), 0.05, 10, 200}, {"sim", at(2 * time.Second), 0.5, 10, 20}, {"sim", at(3 * time.Second), 0.5, 10, 20},
		},
		Drops:       []dropRow{{"sim", at(time.Second), 2, 40}, {"sim", at(2 * time.Second), 2, 4}, {"sim", at(3 * time.Second), 2, 4}},
		Utilisation: []utilRow{{"real", at(time.Second), 1e6, 1e6, 100e6, 1}, {"sim", at(time.Second), 1e6, 20e6, 100e6, 20}},
	}
}

// TestRatesPerSimulatedSecond: the rate views give each rate per wall-clock
// second (the switch's timestamps) and per simulated second, divided by the
// target's speed: its engine-speed leaf at that instant (lhcnp_leaf_at),
// else the leaf's first value (a bucket that starts before the switch's
// first publication), else its value in latest (the sample is past the
// retention), else 1 (a target that never published it).
// Utilisation compares the simulated rate with the port's. The units are in
// the catalogue (COMMENT ON).
func TestRatesPerSimulatedSecond(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	speedRates(f)
	// "sim" publishes 0.05 at t0+1.5s (after the start of its first
	// bucket, whose rows take that first value), then 0.5 from t0+2s.
	sim := f.series("sim", engineSpeed, "", -1)
	f.add(sim, 1500*ms, num("0.05"), flagSync)
	f.add(sim, 2*time.Second, num("0.5"), 0)
	// Bogus speeds are skipped, never divided by: a zero, a negative, a
	// deleted leaf.
	for i, v := range []any{num("0"), num("-1"), nil} {
		var flags int16
		if v == nil {
			flags = flagDelete
		}
		f.add(f.series("bogus", engineSpeed, "", -1), time.Duration(i)*time.Second, v, flags)
	}
	// "lapse" published 0.2 after 0.05, then its leaf was deleted: the
	// last valid value holds, not the first.
	lapse := f.series("lapse", engineSpeed, "", -1)
	f.add(lapse, 0, num("0.05"), flagSync)
	f.add(lapse, time.Second, num("0.2"), 0)
	f.add(lapse, 2*time.Second, nil, flagDelete)
	// "old" published 0.25 so long ago that retention dropped the sample:
	// latest still has it.
	old := f.series("old", engineSpeed, "", -1)
	f.add(old, 0, num("0.25"), flagSync)
	f.commit()
	if _, err := f.pool.Exec(ctx, `DELETE FROM samples WHERE series_id = $1`, old); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) time.Time { return f.t0.Add(d) }

	if d := cmp.Diff(wantSpeedRows(at), readSpeedRows(t, f.pool, at(time.Second))); d != "" {
		t.Errorf("rate views (-want +got):\n%s", d)
	}
	for _, c := range []struct {
		target string
		at     time.Duration
		want   float64
	}{
		{"sim", 0, 0.05}, {"sim", 1999 * ms, 0.05}, {"sim", 2 * time.Second, 0.5}, {"sim", time.Hour, 0.5},
		{"real", time.Second, 1}, {"bogus", 3 * time.Second, 1}, {"nobody", 0, 1}, {"old", time.Hour, 0.25},
		{"lapse", 500 * ms, 0.05}, {"lapse", 3 * time.Second, 0.2},
	} {
		var got float64
		if err := f.pool.QueryRow(ctx, `SELECT lhcnp_speed_at($1, $2)`, c.target, at(c.at)).Scan(&got); err != nil || got != c.want {
			t.Errorf("lhcnp_speed_at(%s, t0+%v) = %v (%v), want %v", c.target, c.at, got, err, c.want)
		}
	}

	// The units are stated where an NMS looks for them.
	for _, c := range []struct{ view, column, want string }{
		{"notifications_per_second", "rate_per_second", "notifications per wall-clock second"},
		{"notifications_per_second", "rate_per_simulated_second", "notifications per simulated second: rate_per_second / speed"},
		{"queue_utilisation", "bits_per_second", "bits per wall-clock second"},
		{"queue_congestion", "growth_rate_bytes_per_second", "bytes per simulated second (the switch's queue-growth-rate leaf)"},
		{"counter_increases", "seconds", "wall-clock seconds since the previous sample (the switch's timestamps)"},
	} {
		var got *string
		err := f.pool.QueryRow(ctx, `SELECT col_description($1::regclass, a.attnum)
			FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attname = $2`, c.view, c.column).Scan(&got)
		if err != nil || got == nil || *got != c.want {
			t.Errorf("comment on %s.%s = %v (%v), want %q", c.view, c.column, got, err, c.want)
		}
	}
	// Both speed functions are PARALLEL SAFE: the views keep their
	// parallel plans.
	for _, fn := range []string{"lhcnp_speed_of", "lhcnp_speed_at"} {
		var par string
		if err := f.pool.QueryRow(ctx, `SELECT proparallel::text FROM pg_proc WHERE proname = $1`, fn).Scan(&par); err != nil || par != "s" {
			t.Errorf("%s: proparallel %q (%v), want s (safe)", fn, par, err)
		}
	}
	var table *string
	if err := f.pool.QueryRow(ctx, `SELECT to_regclass('target_speeds')::text`).Scan(&table); err != nil || table != nil {
		t.Errorf("target_speeds still there (%v, %v)", table, err)
	}
}

// TestSpeedsCarriedOver: a database of schema 6 whose speeds are rows of
// target_speeds (as lhcnp lab and the compose lab wrote them) reads the same
// rates after migration 7, which turns the rows into samples of each
// target's engine-speed leaf under the collector's series id; going back
// down to 6 gives the rows back.
func TestSpeedsCarriedOver(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	conn, err := f.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if err := migrations.To(ctx, conn.Conn(), 6); err != nil {
		t.Fatal(err)
	}
	speedRates(f)
	f.commit()
	at := func(d time.Duration) time.Time { return f.t0.Add(d) }
	// Schema 6's rule: "sim" runs at 0.05 until t0+2s (its row is newer
	// than its first samples, which take its speed), then at 0.5.
	if _, err := f.pool.Exec(ctx, `INSERT INTO target_speeds (target, since, speed) VALUES ('sim', $1, 0.05), ('sim', $2, 0.5)`,
		at(1500*ms), at(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	before := readSpeedRows(t, f.pool, at(time.Second))
	if d := cmp.Diff(wantSpeedRows(at), before); d != "" {
		t.Fatalf("schema 6's rate views (-want +got):\n%s", d)
	}

	if err := migrations.Up(ctx, conn.Conn()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, readSpeedRows(t, f.pool, at(time.Second))); d != "" {
		t.Errorf("rate views after migration 7 (-schema 6 +schema 7):\n%s", d)
	}
	// Under the id the collector gives the leaf: its own samples, when the
	// switch publishes it, continue the same series.
	var id int64
	if err := f.pool.QueryRow(ctx, `SELECT id FROM series WHERE target = 'sim' AND path = $1`, engineSpeed).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if want := rows.SeriesID("sim", engineSpeed); id != want {
		t.Errorf("engine-speed series id %d, the collector's %d", id, want)
	}

	if err := migrations.To(ctx, conn.Conn(), 6); err != nil {
		t.Fatal(err)
	}
	back := query[struct{ Row string }](t, f.pool, `SELECT target || ' ' || speed || ' ' || to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS row
		FROM target_speeds ORDER BY since`)
	var got []string
	for _, r := range back {
		got = append(got, r.Row)
	}
	want := []string{"sim 0.05 " + at(1500*ms).UTC().Format("2006-01-02T15:04:05.000000"), "sim 0.5 " + at(2*time.Second).UTC().Format("2006-01-02T15:04:05.000000")}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("target_speeds after going down (-want +got):\n%s", d)
	}
	var left int64
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM series WHERE schema_path = $1`, engineSpeed).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d engine-speed series left after going down (%v)", left, err)
	}
	if err := migrations.Up(ctx, conn.Conn()); err != nil {
		t.Fatal(err)
	}
}
