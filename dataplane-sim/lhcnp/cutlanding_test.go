package lhcnp

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestResumeWaitsForCutToLand: with PerFlowRTT and RepeatResume (and
// OneCutPerEpisode), a far-end node (the flow 10 ms away) whose queue is
// below K_min before its cut of a flow reached the queue does not judge the
// flow "back at its rate before the cut" on its arrival rate, which is
// still that rate: the flow keeps awaiting its Resume (and so its marks stay
// spared) until its loop and a measurement interval are over, then is
// judged. Judged at once (the queue's 1 ms interval after the cut), the
// flow lost the sparing, and the receiver's CNPs for the marks cut it
// again once the cut landed (web-search mixes, docs/longhaul.md).
func TestResumeWaitsForCutToLand(t *testing.T) {
	cfg := testConfig(64_000, 2*engine.Microsecond)
	cfg.Interface.Queue.MinCNPInterval = engine.Millisecond
	cfg.Interface.Queue.PerFlowRTT = true
	cfg.Interface.Queue.OneCutPerEpisode = true
	cfg.Interface.Queue.Action.RepeatResume = true
	// No bottleneck: the node cuts nothing itself; the cut is set below.
	l := farEnd(t, cfg, 10e9, 10e9, 5*engine.Millisecond, ReactionConfig{})
	l.sim.Run(25 * engine.Millisecond)
	ps := l.node2.portOf(l.n2Out)
	q := &ps.queues[0]
	e := l.node2.ft.m[key(addrSrc4, addrDst4, 100, 200)]
	if e == nil || e.srcRTT < 10*engine.Millisecond || !e.rateValid {
		t.Fatalf("flow entry %+v: want it learnt, its round trip (10 ms) from CM and its rate measured", e)
	}
	if !q.below {
		t.Fatalf("queue %d B: want it below K_min %d B (no bottleneck)", q.qd, q.kmin)
	}
	iv := cfg.Interface.Queue.MeasurementInterval
	// A cut of half the flow's rate, sent 2 ms ago: not landed yet.
	now := l.sim.Now()
	rate := e.rateAt(now, iv)
	e.needResume, e.resumed, e.hasCNP = true, false, true
	e.cutAt, e.lastCNP = now-2*engine.Millisecond, now-2*engine.Millisecond
	e.preCutRate, e.lastReduction = rate, rate/2
	e.cutEpisode = q.episode + 1
	land := e.cutAt + e.srcRTT + 2*iv
	resumes := func() int {
		c := 0
		for _, ev := range l.events2 {
			if ev.Kind == EventCNPSent && ev.Action == wire.ActionResume {
				c++
			}
		}
		return c
	}
	before := resumes()
	l.node2.resume(ps, q, now)
	if !e.needResume || resumes() != before {
		t.Fatalf("cut in flight (lands at %v, now %v): needResume %v, %d Resumes; want it still awaiting its Resume, none sent",
			land, now, e.needResume, resumes()-before)
	}
	// The flow's packets stay unmarked meanwhile (OneCutPerEpisode).
	q.episode++ // the queue drained below K_min: a new episode
	if e.cutEpisode == q.episode+1 || !e.needResume {
		t.Fatal("setup: the sparing must come from the awaited Resume alone")
	}
	// Past the landing the flow is judged: its rate (the cut was never
	// applied here) is its rate before the cut, so it is back.
	l.sim.Run(land + engine.Microsecond)
	l.node2.resume(ps, q, l.sim.Now())
	if e.needResume {
		t.Errorf("at %v, past the cut's landing (%v), rate %d against %d before the cut: still awaiting a Resume; want it judged back",
			l.sim.Now(), land, e.rateAt(l.sim.Now(), iv), e.preCutRate)
	}
}

// TestCutRateBeforeFirstInterval: with PerFlowRTT and RepeatResume, a flow
// cut before its first whole measurement interval (a node next to the
// sources, on a burst) has as its rate before the cut what arrived since
// its first packet, not 0: at 0 it was judged back at its rate at once and
// never resumed, whatever the cuts that followed. With ResumeOnDrain the
// node keeps that option's rule (rate unknown, resumed unconditionally).
func TestCutRateBeforeFirstInterval(t *testing.T) {
	for _, rod := range []bool{false, true} {
		l, _, ps, q, e := optionsLine(t, rod)
		// The flow's first interval, 50 µs of it at 8 Gb/s.
		now := l.sim.Now()
		e.rateValid, e.rateBitsPerSec = false, 0
		e.winStart, e.winBytes = now-50*engine.Microsecond, 50_000
		e.needResume = false
		m := wire.LongHaul{CongLevel: 100, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: e.key.SrcQP}
		l.node1.send(ps, q, e, &m, TriggerQGR, false, now)
		want, wantRed := int64(8e9), int64(8e9*30/100)
		if rod {
			want, wantRed = 0, 0
		}
		if e.preCutRate != want || e.lastReduction != wantRed || e.preCutUnknown != rod {
			t.Errorf("resume_on_drain %v: rate before the cut %d, reduction %d, unknown %v; want %d, %d, %v",
				rod, e.preCutRate, e.lastReduction, e.preCutUnknown, want, wantRed, rod)
		}
	}
}

// TestNoSecondCutAwaitingResume: with PerFlowRTT and RepeatResume, a node
// whose loop with a flow is short (next to its source: a fixed-percentage
// cut, not loopSized) does not cut the flow again while its first cut
// awaits its Resume and the queue is below K_min (a QGR trigger on a
// burst); once the flow is resumed it may. Without RepeatResume (the
// draft's single Resume) the second cut goes out.
func TestNoSecondCutAwaitingResume(t *testing.T) {
	for _, tt := range []struct {
		desc           string
		repeat, resume bool
		want           int
	}{
		{"awaiting Resume", true, true, 0},
		{"resumed", true, false, 1},
		{"without repeat_resume", false, true, 1},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			l, _, ps, q, e := optionsLine(t, false)
			q.cfg.Action.RepeatResume = tt.repeat
			now := l.sim.Now()
			if q.loopSized(e) || e.srcRTT <= 0 {
				t.Fatalf("round trip %v: want it learnt and short (not loop-sized)", e.srcRTT)
			}
			// The node cut the flow 5 ms ago (past its per-flow gap and
			// §5.7's window); a burst puts some of it in the queue,
			// far below K_min.
			e.hasCNP, e.lastCNP, e.cutAt = true, now-5*engine.Millisecond, now-5*engine.Millisecond
			e.reducedEpisode, e.needResume = q.episode+1, tt.resume
			e.queued, q.qd = 8_000, 8_000
			if q.qd >= q.kmin {
				t.Fatalf("queue %d B: want it below K_min %d B", q.qd, q.kmin)
			}
			before := len(eventsOf(l.events1, EventCNPSent))
			l.node1.fire(ps, q, TriggerQGR, now)
			sent := eventsOf(l.events1, EventCNPSent)[before:]
			if len(sent) != tt.want {
				t.Fatalf("%d notifications %+v, want %d", len(sent), sent, tt.want)
			}
			if tt.want > 0 && sent[0].Action != wire.ActionRateReduce {
				t.Errorf("sent %v, want a Rate Reduce", sent[0].Action)
			}
		})
	}
}
