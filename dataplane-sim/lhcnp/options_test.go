package lhcnp

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// TestSourceRTTFromCM: a node learns each flow's round trip to its source
// from the flow's CM exchange (REP forwarded towards the requester → RTU
// back: the requester's; REQ towards the responder → REP back: the
// responder's), from 0.1 to 40 ms of path delay. The bounds are the
// propagation of the two links the round trip crosses, plus at most 5 µs
// for the MADs' serialisation at four hops.
func TestSourceRTTFromCM(t *testing.T) {
	const slack = 5 * engine.Microsecond
	for _, mid := range []engine.Time{100 * engine.Microsecond, engine.Millisecond, 10 * engine.Millisecond, 40 * engine.Millisecond} {
		t.Run(mid.Duration().String(), func(t *testing.T) {
			cfg := testConfig(1<<30, engine.Millisecond)
			// A long flow (no DREQ during the run); REQ, REP and RTU
			// cross the middle link once each.
			l := newLine(t, lineOpts{cfg1: &cfg, cfg2: &cfg, noRP: true, midDelay: mid})
			l.sim.Run(3*mid + engine.Millisecond)
			fwd := key(addrSrc4, addrDst4, 100, 200) // data from src
			rev := key(addrDst4, addrSrc4, 200, 100)
			hop := engine.Microsecond
			for _, c := range []struct {
				name string
				n    *Node
				k    FlowKey
				prop engine.Time // round-trip propagation to the flow's source
			}{
				{"n1 to src", l.node1, fwd, 2 * hop},
				{"n2 to src", l.node2, fwd, 2 * (mid + hop)},
				{"n1 to dst", l.node1, rev, 2 * (mid + hop)},
				{"n2 to dst", l.node2, rev, 2 * hop},
			} {
				f, ok := c.n.Flow(c.k)
				if !ok {
					t.Fatalf("%s: no entry for %v", c.name, c.k)
				}
				if f.SourceRTT < c.prop || f.SourceRTT > c.prop+slack {
					t.Errorf("%s: SourceRTT %v, want %v to %v", c.name, f.SourceRTT, c.prop, c.prop+slack)
				}
			}
		})
	}
}

// TestPerFlowRTTInterval: with PerFlowRTT the per-flow interval is the
// flow's learnt round trip (here about 2 ms) plus a measurement interval
// (100 µs) rather than the port's
// RTT_est (10 ms); without it, RTT_est.
func TestPerFlowRTTInterval(t *testing.T) {
	for _, tt := range []struct {
		desc        string
		perFlow     bool
		minGap, max engine.Time
	}{
		{"draft: one RTT_est", false, 10 * engine.Millisecond, 11 * engine.Millisecond},
		{"per-flow rtt", true, 2100 * engine.Microsecond, 2200 * engine.Microsecond},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(200_000, 10*engine.Millisecond)
			cfg.Interface.Queue.Action.ResumeEnabled = false
			cfg.Interface.Queue.PerFlowRTT = tt.perFlow
			// n2's egress to dst is the bottleneck, 1 ms from the source.
			l := newLine(t, lineOpts{srcRate: 10e9, midRate: 10e9, dstRate: 5e9, midDelay: engine.Millisecond, cfg2: &cfg, noRP: true})
			l.sim.Run(40 * engine.Millisecond)
			sent := eventsOf(l.events2, EventCNPSent)
			if len(sent) < 3 {
				t.Fatalf("%d notifications, want several", len(sent))
			}
			gap := sent[2].Time - sent[1].Time
			if gap < tt.minGap || gap > tt.max {
				t.Errorf("gap between notifications %v, want %v to %v", gap, tt.minGap, tt.max)
			}
		})
	}
}

// TestOneCutPerEpisode: with OneCutPerEpisode a flow the node cut is not
// marked again until its queue drains below K_min; with the draft's
// marking it is, so the receiver's CNPs would cut it a second time.
func TestOneCutPerEpisode(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := testConfig(400_000, 200*engine.Microsecond)
		cfg.Interface.Queue.Action.ResumeEnabled = false
		cfg.Interface.Queue.OneCutPerEpisode = on
		l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg, noRP: true})
		ps := l.node1.portOf(l.n1Out)
		q := &ps.queues[0]
		fwd := key(addrSrc4, addrDst4, 100, 200)
		var inEpisode int64 // marks on the flow after its cut, in the cut's episode
		for end := 20 * engine.Millisecond; l.sim.Now() < end; {
			e := l.node1.ft.m[fwd]
			cut := e != nil && e.cutEpisode == q.episode+1
			marks, ep := q.counters.ECNMarked, q.episode
			l.sim.Run(l.sim.Now() + engine.Microsecond)
			if cut && q.episode == ep {
				inEpisode += q.counters.ECNMarked - marks
			}
		}
		if q.counters.SentRateReduce == 0 {
			t.Fatalf("on=%v: no Rate Reduce sent", on)
		}
		if on && (inEpisode != 0 || q.counters.MarksSpared == 0) {
			t.Errorf("option on: %d marks within the cut's episode, %d spared; want 0 and some", inEpisode, q.counters.MarksSpared)
		}
		if !on && (inEpisode == 0 || q.counters.MarksSpared != 0) {
			t.Errorf("draft's marking: %d marks within the cut's episode, %d spared; want some and 0", inEpisode, q.counters.MarksSpared)
		}
	}
}

// TestRepeatResumeReleasesHeldCeiling: a flow cut at a 5 Gb/s bottleneck
// is held by its ceiling; at 20 ms the bottleneck becomes 10 Gb/s and the
// queue drains. With RepeatResume the node keeps resuming the flow while
// the queue stays below K_min and the flow's rate follows, so its ceiling
// is gone (back at 10 Gb/s) 10 ms later; with the draft's single Resume
// it is still climbing by the source's recovery steps (100 Mb/s per ms).
func TestRepeatResumeReleasesHeldCeiling(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := testConfig(400_000, 200*engine.Microsecond)
		cfg.Interface.Queue.Action.RepeatResume = on
		rc := DefaultReactionConfig()
		rc.TrustedSources = trusted(false)
		rc.RTTEst = 10 * engine.Millisecond
		rc.RecoveryStepBitsPerSec = 100e6
		l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, dstRate: 10e9, cfg1: &cfg, rc: rc})
		l.sim.Run(20 * engine.Millisecond)
		qp := l.flow.Sender
		if qp.CeilingBitsPerSec() == 0 {
			t.Fatalf("on=%v: no held ceiling after 20 ms at the bottleneck", on)
		}
		l.n1Out.Out().SetRateBitsPerSec(10e9)
		l.sim.Run(30 * engine.Millisecond)
		resumes := l.node1.State(false).Ports[l.n1Out.Index()].Queues[0].Counters.SentResume
		got := qp.RateBitsPerSec()
		if on && (got != 10e9 || qp.CeilingBitsPerSec() != 0) {
			t.Errorf("RepeatResume: rate %d, ceiling %d after %d Resumes; want 10 Gb/s and no ceiling", got, qp.CeilingBitsPerSec(), resumes)
		}
		if !on && got >= 10e9 {
			t.Errorf("draft: rate %d after %d Resumes; want still below 10 Gb/s", got, resumes)
		}
		t.Logf("on=%v: rate %d, %d Resumes", on, got, resumes)
	}
}
