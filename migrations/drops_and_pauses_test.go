package migrations_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDropsAndPausesOneCounterPerRow: a queue's drop counter changes at 0
// and 1 s, its PFC pause counter at 0.5 s and 1.5 s (a switch stamps each
// leaf with the time its value last changed, and the collector stores only
// changes, so two counters seldom share a timestamp). drops_and_pauses has
// a row per sample time holding only the counter sampled then, the other
// and its rate NULL, as docs/collector.md says since the audit (it said a
// row held both counters; the view did not, and still does not: carrying
// the other counter would need a lookup per row, and a second plan on
// Citus). This test pins the documented behaviour; it passed on the old
// code too (the finding was the documentation).
func TestDropsAndPausesOneCounterPerRow(t *testing.T) {
	f := newFixture(t)
	dropped := f.series("sw1", queueState+"counters/dropped-packets", "wan", 0)
	pfc := f.series("sw1", queueState+"counters/pfc-pause-frames", "wan", 0)
	f.add(dropped, 0, 0, 0)
	f.add(dropped, time.Second, 10, 0)
	f.add(pfc, 500*ms, 5, 0)
	f.add(pfc, 1500*ms, 7, 0)
	f.commit()

	type dp struct {
		Ts                      time.Time
		DroppedPackets          *int64
		PfcPauseFrames          *int64
		DroppedPacketsPerSecond *float64
		PfcPauseFramesPerSecond *float64
	}
	got := query[dp](t, f.pool, `SELECT ts, dropped_packets, pfc_pause_frames, dropped_packets_per_second, pfc_pause_frames_per_second
		FROM drops_and_pauses WHERE target = 'sw1' ORDER BY ts`)
	at := func(d time.Duration) time.Time { return f.t0.Add(d) }
	want := []dp{
		{at(0), p[int64](0), nil, nil, nil},
		{at(500 * ms), nil, p[int64](5), nil, nil},
		{at(time.Second), p[int64](10), nil, p(10.0), nil},
		{at(1500 * ms), nil, p[int64](7), nil, p(2.0)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("drops_and_pauses, the counter sampled at each row only (-want +got):\n%s", diff)
	}
}
