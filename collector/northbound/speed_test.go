package northbound_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gen/oc/ocpath"
	"github.com/openconfig/ygnmi/ygnmi"
)

// TestViewsUseTheSwitchSpeed: the fleet's switches n1 and n2 (the lab's,
// paced at 0.05 simulated seconds per wall-clock second) publish that speed
// as /lhcnp/global/state/engine-speed; the real collector stores it like
// any other leaf, and the rate views of the real schema divide by it: every
// row of n1 and n2 in queue_utilisation, drops_and_pauses and
// notifications_per_second carries speed 0.05 and its rates per simulated
// second are those per wall-clock second / 0.05, with nothing but the
// switches telling the database the speed. n2's egress to dest, which the
// main flow fills at its 10 Gb/s port rate in simulated time, shows a
// utilisation near the port's over the window; counted at speed 1 it would
// be under 5 %. The northbound serves the leaf like the switch.
func TestViewsUseTheSwitchSpeed(t *testing.T) {
	fl := startFleet(t)
	const speed = 0.05
	ctx := context.Background()
	count := func(sql string) int64 {
		var n int64
		if err := fl.pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	// Two wall-clock seconds of n2's egress to dest (twenty samples of its
	// bytes counter) and n1's first notifications (the bursts on its WAN
	// egress start at 100 ms of simulated time).
	waitFor(t, 90*time.Second, "n2's egress to dest in queue_utilisation and n1's notifications", func() bool {
		return count(`SELECT count(*) FROM queue_utilisation WHERE target = 'n2' AND interface = 'to-dest' AND queue = 0`) >= 20 &&
			count(`SELECT count(*) FROM notifications_per_second WHERE target = 'n1'`) > 0
	})

	for _, v := range []struct{ view, check string }{
		{"queue_utilisation", `abs(bits_per_simulated_second * speed - bits_per_second) <= 1e-9 * bits_per_second
			AND (port_rate_bps IS NULL OR abs(utilisation_percent - least(100, bits_per_simulated_second * 100 / port_rate_bps)) <= 1e-9 * utilisation_percent)`},
		{"drops_and_pauses", `(dropped_packets_per_second IS NULL OR abs(dropped_packets_per_simulated_second * speed - dropped_packets_per_second) <= 1e-9 * dropped_packets_per_second)
			AND (pfc_pause_frames_per_second IS NULL OR abs(pfc_pause_frames_per_simulated_second * speed - pfc_pause_frames_per_second) <= 1e-9 * pfc_pause_frames_per_second)`},
		{"notifications_per_second", `abs(rate_per_simulated_second * speed - rate_per_second) <= 1e-9 * rate_per_second`},
	} {
		var rows, atSpeed, consistent int64
		if err := fl.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE speed = $1), count(*) FILTER (WHERE `+v.check+`)
			FROM `+v.view+` WHERE target IN ('n1', 'n2')`, speed).Scan(&rows, &atSpeed, &consistent); err != nil {
			t.Fatalf("%s: %v", v.view, err)
		}
		if rows == 0 || atSpeed != rows || consistent != rows {
			t.Errorf("%s: %d rows of n1 and n2, %d at speed %v, %d with rates per simulated second = per second / speed",
				v.view, rows, atSpeed, speed, consistent)
		}
	}

	var percent float64
	if err := fl.pool.QueryRow(ctx, `SELECT avg(utilisation_percent)
		FROM queue_utilisation WHERE target = 'n2' AND interface = 'to-dest' AND queue = 0`).Scan(&percent); err != nil {
		t.Fatal(err)
	}
	if math.IsNaN(percent) || percent < 10 || percent > 110 {
		t.Errorf("n2's egress to dest: %.1f %% of its port on average, want near 100 (a 10 Gb/s flow on a 10 Gb/s port)", percent)
	}
	t.Logf("n2's egress to dest: %.1f %% of its port on average", percent)

	// The leaf itself, from the switch and through the collector's
	// northbound.
	for _, addr := range []string{fl.sw["n1"], fl.addr} {
		got, err := ygnmi.Get(ctx, fl.ygnmi(t, addr, "n1"), ocpath.Root().Lhcnp().Global().State().EngineSpeed())
		if err != nil || got != speed {
			t.Errorf("engine-speed of n1 at %s: %v (%v), want %v", addr, got, err, speed)
		}
	}
}
