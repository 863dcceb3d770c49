package lhcnp

import (
	"slices"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestShareResume: with PerFlowRTT and RepeatResume (the options' pair,
// shareResume), a far-end node (port RTT_est 2 µs, K_min 32 KB; the flow
// 10 ms away) whose bottleneck rises from 4 to 10 Gb/s resumes the flow it
// holds while its queue is still above K_min, once the queue would be gone
// when the Resume lands, and the flow is back at the port's rate without a
// ceiling within two round trips of the rise. Without RepeatResume (the
// draft's Resume) the first Resume waits for K_min.
func TestShareResume(t *testing.T) {
	for _, tt := range []struct {
		desc      string
		repeat    bool
		wantAbove bool
	}{
		{desc: "per_flow_rtt and repeat_resume", repeat: true, wantAbove: true},
		{desc: "per_flow_rtt alone", repeat: false, wantAbove: false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(64_000, 2*engine.Microsecond)
			cfg.Interface.Queue.MinCNPInterval = engine.Millisecond
			cfg.Interface.Queue.PerFlowRTT = true
			cfg.Interface.Queue.Action.RepeatResume = tt.repeat
			rc := DefaultReactionConfig()
			rc.TrustedSources = trusted(false)
			rc.RTTEst = 10 * engine.Millisecond
			rc.RecoveryStepBitsPerSec = 100e6
			l := farEnd(t, cfg, 10e9, 4e9, 5*engine.Millisecond, rc)
			q, resume, qdAt, err := firstResumeAfterRise(l)
			if err != "" {
				t.Fatal(err)
			}
			if above := qdAt >= q.kmin; above != tt.wantAbove {
				t.Errorf("first Resume at %v with the queue at %d B (K_min %d B); above K_min %v, want %v", resume.Time, qdAt, q.kmin, above, tt.wantAbove)
			}
			if !tt.repeat {
				return
			}
			l.sim.Run(65 * engine.Millisecond)
			if got, c := l.flow.Sender.RateBitsPerSec(), l.flow.Sender.CeilingBitsPerSec(); got != 10e9 || c != 0 {
				t.Errorf("rate %d, ceiling %d at 65 ms; want 10 Gb/s and no ceiling", got, c)
			}
		})
	}
}

// TestFairShare: shareResume's share is the max-min fair share of the
// port's rate, a held flow demanding its rate before the node's first cut,
// among the flows that still send: a flow with no packet for longer than
// its loop (or two measurement intervals while its loop is not learnt)
// demands nothing, unless this node paused it.
func TestFairShare(t *testing.T) {
	const loop = 10 * engine.Millisecond
	type fl struct {
		rate, preCut int64
		held         bool
		paused       bool
		srcRTT       engine.Time
		idle         engine.Time // since its last packet
	}
	for _, tt := range []struct {
		desc  string
		flows []fl
		total int64
		want  int64
	}{
		{desc: "a held flow that stopped sending a loop ago demands nothing", flows: []fl{{preCut: 25e9, held: true, srcRTT: loop, idle: loop + 1}, {rate: 2e9, preCut: 20e9, held: true, srcRTT: loop}}, total: 25e9, want: 25e9},
		{desc: "a held flow that sent within its loop keeps its demand", flows: []fl{{rate: 1e8, preCut: 25e9, held: true, srcRTT: loop, idle: loop}, {rate: 2e9, preCut: 20e9, held: true, srcRTT: loop}}, total: 25e9, want: 12.5e9},
		{desc: "a flow this node paused keeps its demand", flows: []fl{{preCut: 25e9, held: true, paused: true, srcRTT: loop, idle: 2 * loop}, {rate: 2e9, preCut: 20e9, held: true, srcRTT: loop}}, total: 25e9, want: 12.5e9},
		{desc: "no loop learnt: stopped after two measurement intervals", flows: []fl{{preCut: 25e9, held: true, idle: 201 * engine.Microsecond}, {rate: 5e9}, {rate: 5e9}}, total: 6e9, want: 3e9},
		{desc: "small flows keep their rate, the large one gets the rest", flows: []fl{{rate: 1e9}, {rate: 1e9}, {rate: 8e9}}, total: 6e9, want: 4e9},
		{desc: "every demand fits", flows: []fl{{rate: 1e9}, {rate: 2e9}}, total: 10e9, want: 10e9},
		{desc: "a held flow demands its rate before the cut", flows: []fl{{rate: 1e9, preCut: 5e9, held: true}, {rate: 5e9}}, total: 6e9, want: 3e9},
		{desc: "idle flows demand nothing", flows: []fl{{}, {rate: 4e9}, {rate: 4e9}}, total: 6e9, want: 3e9},
		{desc: "no flow", total: 6e9, want: 6e9},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var n Node
			q := &queueState{}
			q.cfg.MeasurementInterval = 100 * engine.Microsecond
			now := 50 * engine.Millisecond
			for _, f := range tt.flows {
				e := &flowEntry{rateBitsPerSec: f.rate, preCutRate: f.preCut, needResume: f.held,
					srcRTT: f.srcRTT, lastSeen: now - f.idle, winStart: now}
				if f.paused {
					e.lastAction = wire.ActionPause
				}
				q.flows = append(q.flows, e)
			}
			if got := n.fairShare(q, now, tt.total); got != tt.want {
				t.Errorf("fairShare = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestFillLevel: shareResume divides the spare rate max-min among the
// flows it resumes: the slowest rises first, none beyond its cap, and the
// increments add up to at most the spare rate (the list order does not
// matter; it did when the spare went to the flows in the queue's order).
func TestFillLevel(t *testing.T) {
	for _, tt := range []struct {
		desc         string
		rates, caps  []int64
		budget, want int64
	}{
		{desc: "the slower flow first", rates: []int64{4e9, 1e9}, caps: []int64{5e9, 5e9}, budget: 5e9, want: 5e9},
		{desc: "the spare split once both are level", rates: []int64{4e9, 1e9}, caps: []int64{10e9, 10e9}, budget: 7e9, want: 6e9},
		{desc: "a capped flow leaves the rest to the other", rates: []int64{1e9, 1e9}, caps: []int64{2e9, 10e9}, budget: 6e9, want: 6e9},
		{desc: "every flow reaches its cap", rates: []int64{1e9, 2e9}, caps: []int64{3e9, 4e9}, budget: 10e9, want: 4e9},
		{desc: "no spare rate", rates: []int64{1e9, 2e9}, caps: []int64{3e9, 4e9}, budget: 0, want: 1e9},
		{desc: "one flow", rates: []int64{2e9}, caps: []int64{25e9}, budget: 3e9, want: 5e9},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := fillLevel(tt.rates, tt.caps, tt.budget)
			if got != tt.want {
				t.Errorf("fillLevel = %d, want %d", got, tt.want)
			}
			var given int64
			for i, r := range tt.rates {
				given += min(tt.caps[i], max(r, got)) - r
			}
			if given > max(tt.budget, 0) {
				t.Errorf("the flows get %d in all, more than the spare %d", given, tt.budget)
			}
			rev := slices.Clone(tt.rates)
			slices.Reverse(rev)
			revCaps := slices.Clone(tt.caps)
			slices.Reverse(revCaps)
			if g := fillLevel(rev, revCaps, tt.budget); g != got {
				t.Errorf("fillLevel depends on the flows' order: %d reversed, %d", g, got)
			}
		})
	}
}

// TestShareResumeOnTheWay: shareResume's two rules for a flow whose cut is
// still on its way to the node (its round trip and two measurement
// intervals since the cut). A flow whose arrival rate does not show the
// node's first cut yet waits for it, even when the node's model of its
// source (srcRate) says it was cut; a flow whose earlier cut shows and a
// later one is on its way is judged on the model, not on the rate still
// arriving, and its Resume is sized from there.
func TestShareResumeOnTheWay(t *testing.T) {
	const g = 1_000_000_000
	for _, tt := range []struct {
		desc    string
		arrival int64 // the flow's arrival rate over the last interval
		srcRate int64
		resumes int
		inc     int64 // resumeInc of the Resume
	}{
		{"first cut not shown: no resume", 10 * g, 5 * g, 0, 0},
		{"a later cut on its way: judged on the model", 6 * g, 3 * g, 1, 7 * g},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			l, _, ps, q, e := optionsLine(t, false)
			now := l.sim.Now()
			iv := q.cfg.MeasurementInterval
			ps.rateBitsPerSec = 40 * g // spare rate for the Resume
			q.qgr, q.qgrT = 0, now
			e.needResume, e.hasCNP = true, false
			e.srcRTT, e.cutAt = 5*engine.Millisecond, now-engine.Millisecond
			e.preCutRate, e.lastReduction, e.srcRate, e.srcCut = 10*g, 2*g, tt.srcRate, 2*g
			e.winStart, e.winBytes = now-iv, tt.arrival*int64(iv)/int64(engine.Second)/8
			before := len(l.events1)
			l.node1.shareResume(ps, q, now)
			var sent []Event
			for _, ev := range l.events1[before:] {
				if ev.Kind == EventCNPSent && ev.Action == wire.ActionResume {
					sent = append(sent, ev)
				}
			}
			if len(sent) != tt.resumes || (tt.resumes > 0 && e.resumeInc != tt.inc) {
				t.Errorf("%d Resumes %v, resumeInc %d; want %d and %d", len(sent), sent, e.resumeInc, tt.resumes, tt.inc)
			}
		})
	}
}
