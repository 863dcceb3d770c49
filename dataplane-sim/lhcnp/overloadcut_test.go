package lhcnp

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestOverloadCutSelection: with OverloadCut a severe queue's flows are
// chosen by their arrival rate, not by their bytes in the queue (the
// flows that filled a deep queue were fast a sojourn ago), and the Rate
// Reduce is sized to bring the arrivals to R_port less what drains the
// queue within one RTT_est, at least half R_port. Five flows arrive at
// 21.5 Gb/s into a 10 Gb/s port with RTT_est 1 ms (one RTT_est of queue
// is 1.25 MB); A holds most of the queue but arrives at 1 Gb/s, under
// MinSharePercent (10 %) of the arrivals, as does E.
func TestOverloadCutSelection(t *testing.T) {
	const now = 10 * engine.Millisecond
	flows := []struct {
		name   string
		queued int64
		rate   int64
	}{
		{"A", 3_000_000, 1e9},
		{"B", 1_000_000, 9e9},
		{"C", 500_000, 8e9},
		{"D", 0, 3e9},
		{"E", 100_000, 5e8},
	}
	for _, tt := range []struct {
		desc    string
		qd      int64
		wantPct uint16
	}{
		{"empty queue: to R_port", 0, 54},            // 1 - 10/21.5
		{"0.2 RTT_est: to 0.8 R_port", 250_000, 63},  // 1 - 8/21.5
		{"2 RTT_est: to half R_port", 2_500_000, 77}, // 1 - 5/21.5
		{"at the buffer: to half R_port", 5e6, 77},   // the same bound
	} {
		t.Run(tt.desc, func(t *testing.T) {
			n := &Node{}
			ps := &portState{rateBitsPerSec: 10e9, rtt: engine.Millisecond}
			q := &ps.queues[0]
			q.cfg = DefaultQueueConfig()
			q.qd = tt.qd
			names := map[*flowEntry]string{}
			for _, f := range flows {
				// A measurement interval under way: rateAt is the last one's.
				e := &flowEntry{queued: f.queued, rateBitsPerSec: f.rate, rateValid: true, winStart: now}
				names[e] = f.name
				q.flows = append(q.flows, e)
			}
			pct := n.selectByRate(ps, q, now)
			var got []string
			for _, e := range n.sel {
				got = append(got, names[e])
			}
			if diff := cmp.Diff([]string{"B", "C", "D"}, got); diff != "" {
				t.Errorf("selected by rate (-want, +got):\n%s", diff)
			}
			if pct != tt.wantPct {
				t.Errorf("percentage %d, want %d", pct, tt.wantPct)
			}
			q.qd = 4_600_000 // the flows' bytes: MinSharePercent of the queue
			n.selectFlows(q)
			got = got[:0]
			for _, e := range n.sel {
				got = append(got, names[e])
			}
			if diff := cmp.Diff([]string{"A", "B", "C"}, got); diff != "" {
				t.Errorf("selected by bytes in the queue, the draft's (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestOverloadCutSevere: a queue is severe for OverloadCut above K_max,
// or within the per-flow interval (RTT_est) of a tail drop, so that a
// K_max at the buffer, never exceeded, still counts a dropping queue.
func TestOverloadCutSevere(t *testing.T) {
	for _, tt := range []struct {
		desc    string
		qd      int64
		dropAgo engine.Time // 0: never dropped
		want    bool
	}{
		{"below K_max, no drop", 900, 0, false},
		{"above K_max", 1100, 0, true},
		{"drop within RTT_est", 900, 500 * engine.Microsecond, true},
		{"drop longer ago", 900, 2 * engine.Millisecond, false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			const now = 10 * engine.Millisecond
			q := &queueState{cfg: DefaultQueueConfig(), kmax: 1000, qd: tt.qd, minInterval: engine.Millisecond}
			if tt.dropAgo > 0 {
				q.dropAt, q.dropped = now-tt.dropAgo, true
			}
			if got := q.severe(now); got != tt.want {
				t.Errorf("severe %v, want %v", got, tt.want)
			}
		})
	}
}

// TestOverloadCutOnLine: 10 Gb/s into 2.5 Gb/s, the queue past K_max.
// Off (the draft's default), every Rate Reduce is the configured 30 %;
// on, the first at the severe queue takes at least the overload's 75 %.
// On, a queue that is not severe (the growth trigger fires far below a
// 4 MB K_max, no drop) gets the configured percentage all the same,
// unless OverloadCutGrowth sizes the growth trigger's cut too.
func TestOverloadCutOnLine(t *testing.T) {
	for _, tt := range []struct {
		desc       string
		on         bool
		minPct     uint16
		maxPct     uint16
		growth     bool
		growthSize bool
	}{
		{"draft: the configured percentage", false, 30, 30, false, false},
		{"overload cut", true, 75, 99, false, false},
		{"overload cut, queue not severe", true, 30, 30, true, false},
		{"overload cut growth, queue not severe", true, 75, 99, true, true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(100_000, engine.Millisecond)
			if tt.growth {
				cfg = testConfig(4_000_000, engine.Millisecond)
				cfg.Interface.Queue.VGrowthBytesPerSec = 100_000_000
			}
			cfg.Interface.Queue.Action.ResumeEnabled = false
			cfg.Interface.Queue.OverloadCut = tt.on
			cfg.Interface.Queue.OverloadCutGrowth = tt.growthSize
			l := newLine(t, lineOpts{srcRate: 10e9, midRate: 2500e6, cfg1: &cfg})
			l.sim.Run(3 * engine.Millisecond)
			sent := eventsOf(l.events1, EventCNPSent)
			if len(sent) == 0 {
				t.Fatal("no notification")
			}
			first := sent[0]
			if first.Action != wire.ActionRateReduce || first.Parameter < tt.minPct || first.Parameter > tt.maxPct {
				t.Errorf("first notification %v %d, want rate-reduce %d to %d", first.Action, first.Parameter, tt.minPct, tt.maxPct)
			}
			if tt.growth && first.Trigger != TriggerQGR {
				t.Errorf("first notification on %v, want the growth trigger (the queue below K_max)", first.Trigger)
			}
		})
	}
}
