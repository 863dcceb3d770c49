package lhcnp

import (
	"math"
	"slices"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestEqualCut: two flows of one queue, 10 ms from their sources, as at
// docs/results.md's websearch-50 N2 port to b4 (docs/longhaul.md, "The
// slowest large flow (session 17)"). The first was cut 80 µs ago to
// 17 Gb/s (the second's rate was not measured yet), its cut not landed;
// loopCut now gives the second 79 %. Without EqualCut the second alone
// takes it (25 → 5.25 Gb/s, the first left at 17). With it, the two share
// that reduction at one level L: (25 − L) + (17 − L) = 19.75, L = 11.125
// Gb/s, the second cut 56 % and the first cut again 35 % (rounded up). A
// flow whose cut has landed, one cut in an earlier episode, one whose
// modelled rate is already at or below the second's level, or one that
// stopped sending, shares nothing.
func TestEqualCut(t *testing.T) {
	const (
		loop = 10 * engine.Millisecond
		iv   = 100 * engine.Microsecond
		now  = 150 * engine.Millisecond
	)
	type other struct {
		srcRate, preCut int64
		cutAgo          engine.Time
		episode         int // 0: the current one, -1: an earlier one
		idle            engine.Time
	}
	for _, tt := range []struct {
		desc     string
		others   []other
		p        uint16
		want     uint16   // the second flow's cut
		wantCuts []uint16 // the others' cuts, in order
	}{
		{desc: "the first flow's cut in flight: one level", others: []other{{srcRate: 17e9, preCut: 25e9, cutAgo: 80 * engine.Microsecond}},
			p: 79, want: 56, wantCuts: []uint16{35}},
		{desc: "two flows in flight, one already below the level", others: []other{
			{srcRate: 17e9, preCut: 25e9, cutAgo: 80 * engine.Microsecond},
			{srcRate: 4e9, preCut: 8e9, cutAgo: 2 * engine.Millisecond}},
			p: 79, want: 56, wantCuts: []uint16{35}},
		{desc: "the first flow's cut landed", others: []other{{srcRate: 17e9, preCut: 25e9, cutAgo: loop + 2*iv}}, p: 79, want: 79},
		{desc: "cut in an earlier episode", others: []other{{srcRate: 17e9, preCut: 25e9, cutAgo: 80 * engine.Microsecond, episode: -1}}, p: 79, want: 79},
		{desc: "the first flow stopped sending", others: []other{{srcRate: 17e9, preCut: 25e9, cutAgo: 80 * engine.Microsecond, idle: loop + 1}}, p: 79, want: 79},
		{desc: "the model above the rate before the cut counts at that rate", others: []other{{srcRate: 40e9, preCut: 17e9, cutAgo: 80 * engine.Microsecond}},
			p: 79, want: 56, wantCuts: []uint16{35}},
		{desc: "the others' excess covers the cut: unchanged", others: []other{{srcRate: 25e9, preCut: 25e9, cutAgo: 80 * engine.Microsecond}}, p: 1, want: 1},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var n Node
			q := &queueState{episode: 7}
			q.cfg.MeasurementInterval = iv
			q.cfg.EqualCut, q.cfg.PerFlowRTT = true, true
			e := &flowEntry{rateBitsPerSec: 25e9, winStart: now, srcRTT: loop, lastSeen: now}
			q.flows = append(q.flows, e)
			var fs []*flowEntry
			for _, o := range tt.others {
				f := &flowEntry{rateBitsPerSec: 25e9, winStart: now, srcRTT: loop, lastSeen: now - o.idle,
					needResume: true, lastAction: wire.ActionRateReduce, reducedEpisode: uint64(int(q.episode) + 1 + o.episode),
					cutAt: now - o.cutAgo, srcRate: o.srcRate, preCutRate: o.preCut}
				q.flows = append(q.flows, f)
				fs = append(fs, f)
			}
			if got := n.equalCut(q, e, now, tt.p); got != tt.want {
				t.Errorf("the second flow's cut = %d %%, want %d %%", got, tt.want)
			}
			var cuts []uint16
			for i, f := range n.equal {
				if !slices.Contains(fs, f) {
					t.Errorf("cut again: a flow not among the others")
				}
				cuts = append(cuts, uint16(n.equalLevels[i]))
			}
			if len(cuts) != len(tt.wantCuts) {
				t.Fatalf("the others cut again: %v %%, want %v %%", cuts, tt.wantCuts)
			}
			for i := range cuts {
				if cuts[i] != tt.wantCuts[i] {
					t.Errorf("the others cut again: %v %%, want %v %%", cuts, tt.wantCuts)
				}
			}
		})
	}
}

// TestEqualLevel: the level at which a flow and the flows above its level
// give up what the flow alone would have: the sum kept, every flow at the
// level or below it.
func TestEqualLevel(t *testing.T) {
	for _, tt := range []struct {
		re, le float64
		ms     []float64
	}{
		{re: 25e9, le: 5.25e9, ms: []float64{17.5e9}},
		{re: 25e9, le: 5e9, ms: []float64{20e9, 20e9}},
		{re: 10e9, le: 2e9, ms: []float64{3e9}},
	} {
		got := equalLevel(tt.re, tt.le, tt.ms)
		// The defining equation, whatever the closed form.
		given := tt.re - got
		for _, m := range tt.ms {
			given += max(0, m-got)
		}
		if math.Abs(given-(tt.re-tt.le)) > 1e3 || got < tt.le || got > tt.re {
			t.Errorf("equalLevel(%g, %g, %v) = %g: gives %g, want %g", tt.re, tt.le, tt.ms, got, given, tt.re-tt.le)
		}
	}
	if got := equalLevel(25e9, 5.25e9, []float64{17.5e9}); math.Abs(got-11.375e9) > 1e3 {
		t.Errorf("equalLevel(25, 5.25, [17.5] Gb/s) = %g, want 11.375e9", got)
	}
	// A flow whose excess over the first's rate alone exceeds the
	// reduction: no level at or below that rate; the rate itself (equalCut
	// then leaves the cut as loopCut sized it).
	if got := equalLevel(10e9, 2e9, []float64{3e9, 30e9}); math.Abs(got-10e9) > 1e3 {
		t.Errorf("equalLevel(10, 2, [3, 30] Gb/s) = %g, want 10e9", got)
	}
}

// TestEqualCutOnLine: EqualCut in the node's response. Two 25 Gb/s flows,
// 10 ms from their sources, meet at a far-end 10 Gb/s port (per_flow_rtt);
// the second starts 60 µs after the first, so the node cuts the first
// (loop-sized) before the second's first measurement interval is over.
// Without the option the second then takes the whole cut loopCut sizes
// for it (80 %); with it, the two share that reduction: the second gets
// less and the first, its cut still on its way, a second Rate Reduce sent
// with it.
func TestEqualCutOnLine(t *testing.T) {
	for _, equal := range []bool{false, true} {
		cfg := perFlowConfig()
		cfg.Interface.Queue.EqualCut = equal
		l := farEnd(t, cfg, 25e9, 10e9, 5*engine.Millisecond, farSources())
		if _, err := l.net.AddFlow(netsim.FlowConfig{Src: l.src, Dst: l.dst, SrcQPN: 101, DstQPN: 201, Start: 60 * engine.Microsecond}); err != nil {
			t.Fatal(err)
		}
		l.sim.Run(25 * engine.Millisecond)
		var first, second []Event
		for _, ev := range eventsOf(l.events2, EventCNPSent) {
			if ev.Action != wire.ActionRateReduce {
				continue
			}
			if ev.Flow.SrcQP == 100 {
				first = append(first, ev)
			} else {
				second = append(second, ev)
			}
		}
		if len(first) == 0 || len(second) == 0 {
			t.Fatalf("equal %v: cuts %v and %v, want both flows cut", equal, first, second)
		}
		switch {
		case !equal && (len(first) != 1 || second[0].Parameter < 80):
			t.Errorf("without EqualCut: the first flow cut %d times, the second %d %%; want once and the whole cut (80 %%)", len(first), second[0].Parameter)
		case equal && (len(first) != 2 || first[1].Time != second[0].Time || second[0].Parameter >= 80):
			t.Errorf("with EqualCut: the first flow's cuts %v, the second's %v; want the second below 80 %% and the first cut again with it", first, second[0])
		}
	}
}
