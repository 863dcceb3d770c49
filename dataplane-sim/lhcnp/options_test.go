package lhcnp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
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
// flow's learnt round trip (here about 2 ms) plus two measurement
// intervals (100 µs each: the cut lands within one, the next measures it)
// rather than the port's
// RTT_est (10 ms); without it, RTT_est.
func TestPerFlowRTTInterval(t *testing.T) {
	for _, tt := range []struct {
		desc        string
		perFlow     bool
		minGap, max engine.Time
	}{
		{"draft: one RTT_est", false, 10 * engine.Millisecond, 11 * engine.Millisecond},
		{"per-flow rtt", true, 2200 * engine.Microsecond, 2300 * engine.Microsecond},
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

// TestOneCutInFlight: with OneCutInFlight too, a flow the node cut is
// not marked while its cut is on its way (the per-flow interval since the
// cut), and is marked again after it while the queue stays above K_min
// (its source does not react here: the queue never drains); with the
// whole episode's sparing it is not marked again at all.
func TestOneCutInFlight(t *testing.T) {
	for _, inFlight := range []bool{false, true} {
		cfg := testConfig(400_000, 200*engine.Microsecond)
		cfg.Interface.Queue.Action.ResumeEnabled = false
		cfg.Interface.Queue.OneCutPerEpisode = true
		cfg.Interface.Queue.OneCutInFlight = inFlight
		l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg, noRP: true})
		ps := l.node1.portOf(l.n1Out)
		q := &ps.queues[0]
		fwd := key(addrSrc4, addrDst4, 100, 200)
		var onItsWay, landed int64 // marks on the flow in the cut's episode, before and after the cut's interval
		for end := 20 * engine.Millisecond; l.sim.Now() < end; {
			e := l.node1.ft.m[fwd]
			cut := e != nil && e.cutEpisode == q.episode+1
			var cutAt, lands engine.Time
			if cut {
				cutAt, lands = e.cutAt, e.cutAt+q.intervalFor(e)
			}
			marks, ep, from := q.counters.ECNMarked, q.episode, l.sim.Now()
			to := from + engine.Microsecond
			l.sim.Run(to)
			if !cut || q.episode != ep || e.cutAt != cutAt {
				continue // not in a cut's episode, or a cut within the step
			}
			switch {
			case to <= lands:
				onItsWay += q.counters.ECNMarked - marks
			case from >= lands:
				landed += q.counters.ECNMarked - marks
			}
		}
		if q.counters.SentRateReduce == 0 || q.counters.MarksSpared == 0 {
			t.Fatalf("in flight %v: %d Rate Reduce sent, %d marks spared; want some of each", inFlight, q.counters.SentRateReduce, q.counters.MarksSpared)
		}
		if onItsWay != 0 {
			t.Errorf("in flight %v: %d marks while the cut was on its way, want 0", inFlight, onItsWay)
		}
		if inFlight != (landed > 0) {
			t.Errorf("in flight %v: %d marks after the cut's interval in its episode; want some only with OneCutInFlight", inFlight, landed)
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

// farEnd is the far-end case of docs/results.md at test scale: the
// bottleneck is n2's egress to dst (srcRate into dstRate), a 2 x midDelay
// loop from the source, n1 a congestion-aware peer upstream that sees no
// congestion (§5.7's upstream priority makes n2 wait for it first). n2
// runs cfg with the port's RTT_est of its 1 µs link and Rate Reduce as
// its action (no Pause), as the comparison's nodes.
// resumeLine is the far-end line of the Resume tests: a 10 Gb/s source into
// a 4 Gb/s bottleneck 5 ms away, per_flow_rtt and repeat_resume on,
// resume_on_drain as given, the source's own recovery slow (20 ms, then
// 100 Mb/s per ms) so that a Resume shows.
func resumeLine(t *testing.T, resumeOnDrain bool) *line {
	cfg := perFlowConfig()
	cfg.Interface.Queue.Action.RepeatResume = true
	cfg.Interface.Queue.Action.ResumeOnDrain = resumeOnDrain
	rc := farSources()
	rc.RecoveryStepBitsPerSec = 100e6
	return farEnd(t, cfg, 10e9, 4e9, 5*engine.Millisecond, rc)
}

// perFlowConfig is the far-end node of the options' tests: K_max 64 KB,
// a per-flow interval of 1 ms, per_flow_rtt on.
func perFlowConfig() Config {
	cfg := testConfig(64_000, 2*engine.Microsecond)
	cfg.Interface.Queue.MinCNPInterval = engine.Millisecond
	cfg.Interface.Queue.PerFlowRTT = true
	return cfg
}

// farSources is the reaction point of senders 10 ms from the far end.
func farSources() ReactionConfig {
	rc := DefaultReactionConfig()
	rc.TrustedSources = trusted(false)
	rc.RTTEst = 10 * engine.Millisecond
	return rc
}

func farEnd(t *testing.T, cfg Config, srcRate, dstRate int64, midDelay engine.Time, rc ReactionConfig) *line {
	t.Helper()
	cfg.Interface.RTTEst = 2 * engine.Microsecond
	cfg.Collaborative.Enabled = true
	cfg.Collaborative.UpstreamFirst = true
	cfg.Collaborative.Peers = []netip.Prefix{netip.PrefixFrom(addrN14, 32)}
	cfg.Interface.Queue.Action.DefaultAction = wire.ActionRateReduce
	cfg.Interface.Queue.Action.PauseLevel = PauseLevelNever
	return newLine(t, lineOpts{srcRate: srcRate, midRate: srcRate, dstRate: dstRate, midDelay: midDelay, cfg2: &cfg, rc: rc, noRP: rc.RTTEst == 0})
}

// TestPerFlowRTTUpstreamWait: with PerFlowRTT the upstream-priority wait
// of §5.7 stays one observation window of the port (RTT_est), as in the
// draft: the far-end node's first cut follows its first deferral within a
// measurement interval or two, not the flow's 10 ms round trip (that wait,
// and a window that took the receivers' DCQCN cuts for upstream control,
// let the queue of docs/results.md's far-end overflow for a round trip).
// With OneCutPerEpisode the flow's packets are not marked while the node
// waits for the flow's first rate measurement to size its cut (its sender
// is about to be notified).
func TestPerFlowRTTUpstreamWait(t *testing.T) {
	for _, perFlow := range []bool{false, true} {
		cfg := testConfig(64_000, 2*engine.Microsecond)
		cfg.Interface.Queue.MinCNPInterval = engine.Millisecond
		cfg.Interface.Queue.PerFlowRTT = perFlow
		cfg.Interface.Queue.OneCutPerEpisode = perFlow
		l := farEnd(t, cfg, 10e9, 4e9, 5*engine.Millisecond, ReactionConfig{})
		q := &l.node2.portOf(l.n2Out).queues[0]
		var deferAt, cutAt engine.Time
		var marksWaiting int64
		for l.sim.Now() < 40*engine.Millisecond && cutAt == 0 {
			marks := q.counters.ECNMarked
			waiting := deferAt > 0
			l.sim.Run(l.sim.Now() + engine.Microsecond)
			if waiting {
				marksWaiting += q.counters.ECNMarked - marks
			}
			for _, ev := range l.events2 {
				switch {
				case ev.Kind == EventDeferral && deferAt == 0:
					deferAt = ev.Time
				case ev.Kind == EventCNPSent && cutAt == 0:
					cutAt = ev.Time
				}
			}
		}
		if deferAt == 0 || cutAt == 0 {
			t.Fatalf("perFlow=%v: deferral at %v, first cut at %v; want both", perFlow, deferAt, cutAt)
		}
		if d := cutAt - deferAt; d > 3*cfg.Interface.Queue.MeasurementInterval {
			t.Errorf("perFlow=%v: first cut %v after the upstream wait began, want within 3 measurement intervals", perFlow, d)
		}
		if perFlow && (marksWaiting != 0 || q.counters.MarksSpared == 0) {
			t.Errorf("one cut per episode: %d marks between the deferral and the cut, %d spared; want 0 and some", marksWaiting, q.counters.MarksSpared)
		}
	}
}

// TestLoopCut: with PerFlowRTT a far-end node that can cut a flow once
// per 10 ms round trip sizes the cut for the loop: the queue's arrivals
// (10 Gb/s) to less than the port's 4 Gb/s (at least 60 %, not the
// configured 30 %), and while the queue it found drains (QD above K_max
// for a while after the cut worked) it does not cut again. Without the
// option, the configured percentage.
func TestLoopCut(t *testing.T) {
	for _, perFlow := range []bool{false, true} {
		cfg := testConfig(64_000, 2*engine.Microsecond)
		cfg.Interface.Queue.MinCNPInterval = engine.Millisecond
		cfg.Interface.Queue.Action.ResumeEnabled = false
		cfg.Interface.Queue.PerFlowRTT = perFlow
		rc := DefaultReactionConfig()
		rc.TrustedSources = trusted(false)
		rc.RTTEst = 10 * engine.Millisecond
		l := farEnd(t, cfg, 10e9, 4e9, 5*engine.Millisecond, rc)
		q := &l.node2.portOf(l.n2Out).queues[0]
		var afterCut int64 // the sender's rate once the first cut reached it
		var fallingCuts []engine.Time
		var episode uint64 // the queue's episode of the first cut, + 1
		for seen := 0; l.sim.Now() < 60*engine.Millisecond; {
			// Microsecond steps once the node has cut: the queue's growth
			// read at the end of a step is the one its cut saw.
			step := 100 * engine.Microsecond
			if seen > 0 {
				step = engine.Microsecond
			}
			l.sim.Run(l.sim.Now() + step)
			s := eventsOf(l.events2, EventCNPSent)
			if afterCut == 0 && len(s) > 0 && l.sim.Now() > s[0].Time+6*engine.Millisecond {
				afterCut = l.flow.Sender.RateBitsPerSec()
			}
			if episode == 0 && len(s) > 0 {
				episode = q.episode + 1
			}
			// A cut after the first in its episode (the queue not below
			// K_min since), in a step that ends with the queue falling
			// (its growth over the last measurement interval).
			for _, ev := range s[min(max(seen, 1), len(s)):] {
				if ev.Action == wire.ActionRateReduce && q.episode+1 == episode && q.qgrAt(l.sim.Now()) < 0 {
					fallingCuts = append(fallingCuts, ev.Time)
				}
			}
			seen = len(s)
		}
		if perFlow && len(fallingCuts) > 0 {
			t.Errorf("per-flow rtt: cut again at %v with the queue falling; want no second cut in the episode while the first one works", fallingCuts)
		}
		sent := eventsOf(l.events2, EventCNPSent)
		if len(sent) == 0 {
			t.Fatalf("perFlow=%v: no notification", perFlow)
		}
		first := sent[0]
		if !perFlow {
			if first.Parameter != cfg.Interface.Queue.Action.RateReducePercent {
				t.Errorf("draft: first cut %d %%, want the configured %d %%", first.Parameter, cfg.Interface.Queue.Action.RateReducePercent)
			}
			continue
		}
		if first.Action != wire.ActionRateReduce || first.Parameter < 60 || first.Parameter > 99 {
			t.Errorf("per-flow rtt: first notification %v %d %%, want Rate Reduce of 60 to 99 %%", first.Action, first.Parameter)
		}
		// The cut lands a round trip later; the queue then drains. One
		// more cut at most (the arrivals measured just before the cut
		// landed), none once it drains.
		var later int
		for _, ev := range sent[1:] {
			if ev.Action == wire.ActionRateReduce && ev.Time < first.Time+40*engine.Millisecond {
				later++
			}
		}
		if later > 1 {
			t.Errorf("per-flow rtt: %d more cuts within 4 round trips after the first; want at most 1", later)
		}
		if afterCut > 4e9 || afterCut == 0 {
			t.Errorf("per-flow rtt: sender at %d b/s after the cut, want at most the port's 4 Gb/s", afterCut)
		}
	}
}

// TestFillResume: with PerFlowRTT and RepeatResume, a flow cut at a far-end
// bottleneck (10 Gb/s into 4 Gb/s, 10 ms round trip) is resumed once the
// bottleneck rises to 10 Gb/s and its queue drains: the node sizes each
// Resume to the port's spare rate, so the sender is back at 10 Gb/s with
// no ceiling within a few round trips, where the source's own recovery
// (20 ms, then 100 Mb/s per ms) would still be climbing.
func TestFillResume(t *testing.T) {
	l := resumeLine(t, false)
	l.sim.Run(40 * engine.Millisecond)
	qp := l.flow.Sender
	if qp.CeilingBitsPerSec() == 0 {
		t.Fatalf("no held ceiling after 40 ms at the bottleneck (rate %d)", qp.RateBitsPerSec())
	}
	l.n2Out.Out().SetRateBitsPerSec(10e9)
	l.sim.Run(75 * engine.Millisecond)
	resumes := l.node2.State(false).Ports[l.n2Out.Index()].Queues[0].Counters.SentResume
	if got := qp.RateBitsPerSec(); got != 10e9 || qp.CeilingBitsPerSec() != 0 {
		t.Errorf("rate %d, ceiling %d after %d Resumes; want 10 Gb/s and no ceiling", got, qp.CeilingBitsPerSec(), resumes)
	}
}

// TestSourceRTTFromRate: with PerFlowRTT, a node that saw no CM exchange
// of a flow learns its round trip to the source from how soon the flow's
// rate answers the node's first cut, from 0.1 to 40 ms: within one
// measurement interval (100 µs, the rate's resolution) of the round trip's
// propagation. A flow whose exchange the node saw keeps the exchange's.
func TestSourceRTTFromRate(t *testing.T) {
	const iv = 100 * engine.Microsecond
	for _, tt := range []struct {
		mid  engine.Time
		noCM bool
	}{
		{50 * engine.Microsecond, true}, {engine.Millisecond, true}, {5 * engine.Millisecond, true},
		{20 * engine.Millisecond, true}, {engine.Millisecond, false},
	} {
		t.Run(fmt.Sprintf("%v cm %v", tt.mid.Duration(), !tt.noCM), func(t *testing.T) {
			cfg := testConfig(200_000, 2*tt.mid)
			cfg.Interface.Queue.Action.ResumeEnabled = false
			cfg.Interface.Queue.PerFlowRTT = true
			// n2's egress to dst is the bottleneck.
			l := newLine(t, lineOpts{srcRate: 10e9, midRate: 10e9, dstRate: 5e9, midDelay: tt.mid, cfg2: &cfg, noCM: tt.noCM})
			prop := 2 * (tt.mid + engine.Microsecond)
			l.sim.Run(4*prop + 5*engine.Millisecond)
			if len(eventsOf(l.events2, EventCNPSent)) == 0 {
				t.Fatal("no notification")
			}
			f, ok := l.node2.Flow(key(addrSrc4, addrDst4, 100, 200))
			if !ok {
				t.Fatal("no entry")
			}
			if f.SourceRTTFromRate != tt.noCM {
				t.Errorf("SourceRTTFromRate %v, want %v", f.SourceRTTFromRate, tt.noCM)
			}
			lo, hi := prop-iv, prop+iv+5*engine.Microsecond
			if f.SourceRTT < lo || f.SourceRTT > hi {
				t.Errorf("SourceRTT %v, want %v to %v", f.SourceRTT, lo, hi)
			}
		})
	}
}

// TestLoopSized: with PerFlowRTT a Rate Reduce is sized for the flow's loop
// when the loop is longer than the configured gap or than four
// measurement intervals, whichever is shorter: a node 5 ms from the
// sources with a 10 ms gap sizes its cuts too; one 300 µs from them cuts
// by the configured percentage.
func TestLoopSized(t *testing.T) {
	for _, tt := range []struct {
		gap, loop engine.Time
		want      bool
	}{
		{10 * engine.Millisecond, 5 * engine.Millisecond, true},
		{engine.Millisecond, 2 * engine.Millisecond, true},
		{10 * engine.Millisecond, 300 * engine.Microsecond, false},
		{200 * engine.Microsecond, 300 * engine.Microsecond, true},
		{engine.Millisecond, 0, false},
	} {
		q := &queueState{minInterval: tt.gap}
		q.cfg.MeasurementInterval = 100 * engine.Microsecond
		if got := q.loopSized(&flowEntry{srcRTT: tt.loop}); got != tt.want {
			t.Errorf("gap %v, loop %v: loop-sized %v, want %v", tt.gap, tt.loop, got, tt.want)
		}
	}
}

// TestPerFlowRTTSeverity: at a port whose RTT_est is its 2 µs link (K_max
// = K_base, 64 KB), a flow 2 ms away (10 Gb/s into 5 Gb/s) is Paused by
// the draft's node every measurement interval once the queue passes 1.21
// K_max; with PerFlowRTT its severity is the queue against the thresholds
// of its own round trip (K_max 1.25 MB): the first notification is a Rate
// Reduce at a low level, and a Pause comes only if the queue passes 1.21
// times that K_max (once in the run, against the draft's tens).
func TestPerFlowRTTSeverity(t *testing.T) {
	var draftPauses int
	for _, perFlow := range []bool{false, true} {
		cfg := testConfig(0, 2*engine.Microsecond)
		q := &cfg.Interface.Queue
		q.KMaxMode = KMaxBDP
		q.PerFlowRTT = perFlow
		q.Action.ResumeEnabled = false
		q.Action.PauseDuration = 500 * engine.Microsecond
		l := newLine(t, lineOpts{srcRate: 10e9, midRate: 10e9, dstRate: 5e9, midDelay: engine.Millisecond, cfg2: &cfg})
		l.sim.Run(10 * engine.Millisecond)
		sent := eventsOf(l.events2, EventCNPSent)
		if len(sent) == 0 {
			t.Fatalf("perFlow=%v: no notification", perFlow)
		}
		var pauses int
		for _, e := range sent {
			if e.Action == wire.ActionPause {
				pauses++
			}
		}
		first := sent[0]
		switch {
		case !perFlow && (pauses == 0 || first.CongLevel < 170):
			t.Errorf("draft: %d pauses, first level %d; want pauses and a first level of at least 170", pauses, first.CongLevel)
		case perFlow && (10*pauses > draftPauses || first.CongLevel >= 170 || first.Action != wire.ActionRateReduce):
			t.Errorf("per-flow rtt: %d pauses (draft %d), first %v at level %d; want Rate Reduce below 170 and a tenth of the pauses at most",
				pauses, draftPauses, first.Action, first.CongLevel)
		}
		if !perFlow {
			draftPauses = pauses
		}
	}
}

// TestPerFlowRTTDeferWindow: with PerFlowRTT, §5.7's observation window is
// the shorter of the port's RTT_est and the flow's loop (its round trip to
// the source plus a measurement interval), and a rate's fall within that
// loop of the node's own notification is not taken for upstream control;
// without the option, or before the round trip is learnt, both are the
// port's RTT_est.
func TestPerFlowRTTDeferWindow(t *testing.T) {
	l, _, ps, q, e := optionsLine(t, false)
	port, iv := ps.rtt, q.cfg.MeasurementInterval // 200 µs, 100 µs
	for _, tt := range []struct {
		desc      string
		perFlow   bool
		srcRTT    engine.Time
		win, loop engine.Time
	}{
		{"loop shorter than rtt_est", true, 50 * engine.Microsecond, 50*engine.Microsecond + iv, 50*engine.Microsecond + iv},
		{"loop longer than rtt_est", true, 5 * engine.Millisecond, port, 5*engine.Millisecond + iv},
		{"round trip not learnt", true, 0, port, port},
		{"option off", false, 50 * engine.Microsecond, port, port},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			q.cfg.PerFlowRTT, e.srcRTT = tt.perFlow, tt.srcRTT
			if win, loop := l.node1.deferWindow(ps, q, e); win != tt.win || loop != tt.loop {
				t.Errorf("window %v, loop %v; want %v, %v", win, loop, tt.win, tt.loop)
			}
		})
	}
}

// TestPerFlowRTTResumeHold: with PerFlowRTT (and no configured hold, no
// RepeatResume) the Resume hold is the longest loop of the flows awaiting
// Resume (round trip plus a measurement interval), not the port's
// RTT_est; a configured hold stays, RepeatResume holds one measurement
// interval, and without the option the hold is RTT_est (§5.5.1).
func TestPerFlowRTTResumeHold(t *testing.T) {
	_, _, ps, q, e := optionsLine(t, false)
	port, iv := ps.rtt, q.cfg.MeasurementInterval
	for _, tt := range []struct {
		desc            string
		perFlow, repeat bool
		hold, want      engine.Time
	}{
		{"the flow's loop", true, false, 0, 5*engine.Millisecond + iv},
		{"a configured hold", true, false, 300 * engine.Microsecond, 300 * engine.Microsecond},
		{"repeat resume", true, true, 0, iv},
		{"option off", false, false, 0, port},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			q.cfg.PerFlowRTT, q.cfg.Action.RepeatResume, q.cfg.Action.ResumeHold = tt.perFlow, tt.repeat, tt.hold
			q.resumeHold = port
			if tt.hold > 0 {
				q.resumeHold = tt.hold
			}
			e.needResume, e.srcRTT = true, 5*engine.Millisecond
			if got := q.holdFor(); got != tt.want {
				t.Errorf("hold %v, want %v", got, tt.want)
			}
		})
	}
}

// TestOneCutPerEpisodeAwaitingResume: with OneCutPerEpisode a data packet
// of a flow the node cut is spared its mark in the cut's episode and, in
// a later one, while the cut still awaits the node's Resume; a flow with
// neither is marked, and so is one awaiting a Resume the node will never
// send (ResumeEnabled off).
func TestOneCutPerEpisodeAwaitingResume(t *testing.T) {
	cfg := testConfig(400_000, 200*engine.Microsecond)
	cfg.Interface.Queue.OneCutPerEpisode = true
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 10e9, cfg1: &cfg, noRP: true})
	l.sim.Run(2 * engine.Millisecond)
	q := &l.node1.portOf(l.n1Out).queues[0]
	e := l.node1.ft.m[key(addrSrc4, addrDst4, 100, 200)]
	if e == nil {
		t.Fatal("flow not learnt")
	}
	p := l.net.NewPacket()
	p.Src, p.Dst, p.SrcQP, p.Prio = l.src.ID(), l.dst.ID(), 100, 0
	binary.BigEndian.PutUint32(p.Hdr[4:8], 200)
	for _, tt := range []struct {
		desc              string
		thisEpisode, wait bool
		resumeOff         bool
		want              bool
	}{
		{desc: "cut in this episode", thisEpisode: true, want: false},
		{desc: "cut earlier, awaiting resume", wait: true, want: false},
		{desc: "neither", want: true},
		{desc: "awaiting a resume that never comes", wait: true, resumeOff: true, want: true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			e.cutEpisode, e.needResume = q.episode, tt.wait // q.episode: an earlier episode's
			if tt.thisEpisode {
				e.cutEpisode = q.episode + 1
			}
			q.cfg.Action.ResumeEnabled = !tt.resumeOff
			if got := l.node1.AllowMark(l.n1Out, p); got != tt.want {
				t.Errorf("AllowMark %v, want %v", got, tt.want)
			}
		})
	}
}
