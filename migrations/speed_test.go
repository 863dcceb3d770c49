package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRatesPerSimulatedSecond: the rate views give each rate per wall-clock
// second (the switch's timestamps) and per simulated second (divided by the
// target's speed in target_speeds at that instant; 1 without a row), and
// utilisation compares the simulated rate with the port's. A speed change
// applies from its `since`; samples older than a target's first row take
// that row's speed. The units are in the catalogue (COMMENT ON).
func TestRatesPerSimulatedSecond(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
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
	f.commit()
	at := func(d time.Duration) time.Time { return f.t0.Add(d) }
	// "sim" runs at 0.05 until t0+2s (the row is newer than its first
	// samples), then at 0.5.
	if _, err := f.pool.Exec(ctx, `INSERT INTO target_speeds (target, since, speed) VALUES ('sim', $1, 0.05), ('sim', $2, 0.5)`,
		at(500*ms), at(2*time.Second)); err != nil {
		t.Fatal(err)
	}

	type row struct {
		Target                 string
		Second                 time.Time
		Speed                  float64
		RatePerSecond          float64
		RatePerSimulatedSecond float64
	}
	got := query[row](t, f.pool, `SELECT target, second, speed, rate_per_second, rate_per_simulated_second
		FROM notifications_per_second ORDER BY target, second`)
	want := []row{
		{"real", at(time.Second), 1, 10, 10}, {"real", at(2 * time.Second), 1, 10, 10}, {"real", at(3 * time.Second), 1, 10, 10},
		{"sim", at(time.Second), 0.05, 10, 200}, {"sim", at(2 * time.Second), 0.5, 10, 20}, {"sim", at(3 * time.Second), 0.5, 10, 20},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("notifications_per_second (-want +got):\n%s", d)
	}

	type drop struct {
		Target                           string
		Ts                               time.Time
		DroppedPacketsPerSecond          float64
		DroppedPacketsPerSimulatedSecond float64
	}
	gotD := query[drop](t, f.pool, `SELECT target, ts, dropped_packets_per_second, dropped_packets_per_simulated_second
		FROM drops_and_pauses WHERE dropped_packets_per_second IS NOT NULL AND target = 'sim' ORDER BY ts`)
	wantD := []drop{{"sim", at(time.Second), 2, 40}, {"sim", at(2 * time.Second), 2, 4}, {"sim", at(3 * time.Second), 2, 4}}
	if d := cmp.Diff(wantD, gotD); d != "" {
		t.Errorf("drops_and_pauses (-want +got):\n%s", d)
	}

	type util struct {
		Target                 string
		Ts                     time.Time
		BitsPerSecond          float64
		BitsPerSimulatedSecond float64
		PortRateBps            int64
		UtilisationPercent     float64
	}
	gotU := query[util](t, f.pool, `SELECT target, ts, bits_per_second, bits_per_simulated_second, port_rate_bps, utilisation_percent
		FROM queue_utilisation WHERE ts = $1 ORDER BY target`, at(time.Second))
	wantU := []util{{"real", at(time.Second), 1e6, 1e6, 100e6, 1}, {"sim", at(time.Second), 1e6, 20e6, 100e6, 20}}
	if d := cmp.Diff(wantU, gotU); d != "" {
		t.Errorf("queue_utilisation (-want +got):\n%s", d)
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

	// Bad speeds are refused.
	for _, speed := range []string{"0", "-1", "'Infinity'", "'NaN'"} {
		if _, err := f.pool.Exec(ctx, `INSERT INTO target_speeds (target, speed) VALUES ('x', `+speed+`)`); err == nil {
			t.Errorf("speed %s accepted", speed)
		}
	}
}
