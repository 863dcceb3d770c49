package policy

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// shape is a window in the policy's own units: the queue in RTT_est of
// delay at R_port, time in RTT_est, settings as alpha and V_growth as a
// share of R_port. scaled turns it into the window of one port rate and
// RTT_est; the same shape must get the same decision at every scale.
type shape struct {
	util           float64 // share of R_port forwarded
	firstRTT       float64 // the first sample's queue, in RTT_est
	lastRTT        float64 // the last sample's queue, in RTT_est
	loss           float64 // drops per forwarded packet
	notifiesPerRTT float64
	alpha          float64
	vgShare        float64 // V_growth / R_port (0: off)
	mem            Memory  // LastChange: 1 ns after t0 stands for 1 RTT_est (scaled); Lifted: see lifted
	lifted         float64 // the alpha an overrun lifted K_max from (0: none)
	search         bool    // the online search on (search_after_rtt 4)
	bufferBDP      float64 // the port's buffer, in BDPs (0: unknown)
	cut            bool    // the node takes overload_cut (Window.OverloadCutSupported)
	cutOn          bool    // overload_cut on in the queue's settings
	standingShare  float64 // standing_floor_share (0: the default)
	headroom       float64 // overrun_headroom_share (0: the default, off)
	qgrOffRTT      float64 // qgr_off_rtt (0: the default, off)
	afterRTT       float64 // under_use_after_rtt, with the defaults' under-use ceiling (0: rulesConfig's, the window's own throttling); mem.ThrottledAt scaled as LastChange
}

// scaled is s on a port of rateBitsPerSec with RTT_est rtt: five samples
// a quarter of an RTT_est apart, the queue moving linearly from first to
// last, K_base a two-hundredth of the BDP (the node's K_base is a frame;
// scaled here so the K_base floor does not differ between scales).
func (s shape) scaled(rateBitsPerSec int64, rtt time.Duration) (Config, Window, Memory) {
	bdpB := float64(rateBitsPerSec) / 8 * rtt.Seconds()
	cfg := rulesConfig()
	cfg.Cooldown, cfg.MaxGap = rtt/2, rtt
	if s.search {
		cfg.SearchAfterRTT = 4
	}
	if s.standingShare > 0 {
		cfg.StandingFloorShare = s.standingShare
	}
	cfg.OverrunHeadroomShare = s.headroom
	cfg.QGROffRTT = s.qgrOffRTT
	if s.afterRTT > 0 {
		cfg.UnderUseAfterRTT, cfg.UnderUseCeilingBDP = s.afterRTT, DefaultConfig().UnderUseCeilingBDP
	}
	vg := int64(math.Round(s.vgShare * float64(rateBitsPerSec) / 8))
	w := Window{Start: t0, End: t0.Add(rtt), RTTEst: rtt, PortRateBitsPerSec: rateBitsPerSec,
		KBaseBytes: int64(bdpB / 200), Config: bdp(s.alpha, vg)}
	w.EffectiveKMaxBytes = int64(s.alpha * bdpB)
	w.BufferBytes = int64(s.bufferBDP * bdpB)
	w.OverloadCutSupported, w.Config.OverloadCut = s.cut, s.cutOn
	dt := rtt / 4
	for i := range 5 {
		q := s.firstRTT + (s.lastRTT-s.firstRTT)*float64(i)/4
		const pkts = 1000
		w.Samples = append(w.Samples, Sample{Time: t0.Add(time.Duration(i) * dt),
			QueueDepthBytes:       int64(q * bdpB),
			GrowthRateBytesPerSec: int64((s.lastRTT - s.firstRTT) / 1 * float64(rateBitsPerSec) / 8),
			TxBytes:               int64(s.util * float64(rateBitsPerSec) / 8 * dt.Seconds()),
			Packets:               pkts, Drops: int64(s.loss * pkts),
			Notifications: Notifications{Notify: int64(s.notifiesPerRTT / 4)}})
	}
	mem := s.mem
	if !mem.LastChange.IsZero() {
		mem.LastChange = t0.Add(time.Duration(float64(mem.LastChange.Sub(t0)) * float64(rtt)))
	}
	if !mem.CalmSince.IsZero() {
		mem.CalmSince = t0.Add(time.Duration(float64(mem.CalmSince.Sub(t0)) * float64(rtt)))
	}
	if !mem.QGRCostSince.IsZero() {
		mem.QGRCostSince = t0.Add(time.Duration(float64(mem.QGRCostSince.Sub(t0)) * float64(rtt)))
	}
	if !mem.ThrottledAt.IsZero() {
		mem.ThrottledAt = t0.Add(time.Duration(float64(mem.ThrottledAt.Sub(t0)) * float64(rtt)))
	}
	if s.lifted > 0 {
		mem.Lifted = bdp(s.lifted, vg)
	}
	return cfg, w, mem
}

// TestDecideScaleFree: every rule decides the same (rule, direction,
// alpha, V_growth as a share of R_port, the memory in RTT_est) for the same
// shape of window at 10, 25, 100 and 400 Gbit/s and RTT_est 1, 10 and
// 30 ms: no threshold, step or starting point of the policy is absolute.
func TestDecideScaleFree(t *testing.T) {
	changed := Memory{LastChange: t0.Add(-10), Changes: 1} // 10 RTT_est ago
	shapes := []struct {
		rule  Rule
		shape shape
	}{
		{RuleSteady, shape{util: 0.95, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 0.1, mem: changed}},
		{RuleStart, shape{util: 0.95, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 0.4}},
		{RuleStart, shape{util: 0.95, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 0.01}},
		{RuleSteady, shape{util: 0.95, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 0}}, // off: left to the growth rule
		{RuleStart, shape{util: 0.95, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 1}},  // as good as off: the draft's default, to the starting point
		// On a node that cuts to the overload the start keeps the draft's
		// alpha (alpha_start_overload_cut) and moves V_growth alone.
		{RuleStart, shape{util: 0.95, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 0.4, cut: true, cutOn: true}},
		{RuleLoss, shape{util: 0.99, firstRTT: 2, lastRTT: 2, loss: 0.01, alpha: 1, vgShare: 0.1, mem: changed}},
		{RuleGrowth, shape{util: 0.99, firstRTT: 0.1, lastRTT: 0.4, alpha: 1, vgShare: 0.5, mem: changed}},
		{RuleGrowth, shape{util: 0.99, firstRTT: 0.1, lastRTT: 0.4, alpha: 1, vgShare: 1, mem: changed}},
		{RuleFiring, shape{util: 0.99, firstRTT: 0.1, lastRTT: 0.4, alpha: 1, vgShare: 0.1, mem: changed}},
		{RuleOverrun, shape{util: 0.99, firstRTT: 0.1, lastRTT: 1.1, alpha: 1, vgShare: 0.1, mem: changed}},
		// A further lift needs the last one to have slowed the queue: held
		// at a pace no slower than the last lift's.
		{RuleBound, shape{util: 0.99, firstRTT: 0.1, lastRTT: 1.1, alpha: 2, vgShare: 0.1, mem: Memory{LastChange: t0.Add(-10), Changes: 1, LiftedTrendRTT: 0.5}, lifted: 1}},
		// The overrun ceiling (4 BDP): lifted to it, then held at it.
		{RuleOverrun, shape{util: 0.99, firstRTT: 2, lastRTT: 2.6, alpha: 3, vgShare: 0.1, mem: changed}},
		{RuleBound, shape{util: 0.99, firstRTT: 3, lastRTT: 3.6, alpha: 4, vgShare: 0.1, mem: changed, lifted: 1}},
		// The ceiling at half the port's buffer (3 BDP: 1.5 BDP), then held
		// at it; loss ends a lift; loss in the last judge window tightens.
		{RuleOverrun, shape{util: 0.99, firstRTT: 0.1, lastRTT: 1.1, alpha: 1, vgShare: 0.1, mem: changed, bufferBDP: 3}},
		{RuleBound, shape{util: 0.99, firstRTT: 1, lastRTT: 1.6, alpha: 1.5, vgShare: 0.1, mem: changed, lifted: 1, bufferBDP: 3}},
		{RuleLoss, shape{util: 0.99, firstRTT: 2, lastRTT: 2, loss: 0.01, alpha: 3, vgShare: 0.1, mem: changed, lifted: 1}},
		{RuleLoss, shape{util: 0.99, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 0.1, mem: Memory{LastChange: t0.Add(-10), Changes: 1, LossSeen: 0.01}}},
		// Rule pinned: loss again (the last decided window was loss too)
		// with the queue at 0.975 of a 4-BDP buffer: overload_cut on with
		// the loss step; not on a first loss, under pinned_buffer_share of
		// the buffer, or where the node does not take the leaf. Off again
		// after pinned_off_rtt (16) RTT_est below K_min, not before.
		{RulePinned, shape{util: 0.99, firstRTT: 3.9, lastRTT: 3.9, loss: 0.1, alpha: 1, vgShare: 0.1, bufferBDP: 4, cut: true,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, LossStreak: 1}}},
		{RuleLoss, shape{util: 0.99, firstRTT: 3.9, lastRTT: 3.9, loss: 0.1, alpha: 1, vgShare: 0.1, bufferBDP: 4, cut: true, mem: changed}},
		{RuleLoss, shape{util: 0.99, firstRTT: 2, lastRTT: 2, loss: 0.1, alpha: 1, vgShare: 0.1, bufferBDP: 4, cut: true,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, LossStreak: 1}}},
		{RuleLoss, shape{util: 0.99, firstRTT: 3.9, lastRTT: 3.9, loss: 0.1, alpha: 1, vgShare: 0.1, bufferBDP: 4,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, LossStreak: 1}}},
		{RulePinned, shape{util: 0.95, firstRTT: 0.1, lastRTT: 0.1, alpha: 1, vgShare: 0.1, bufferBDP: 4, cut: true, cutOn: true,
			mem: Memory{LastChange: t0.Add(-10), Changes: 2, CutOn: true, CalmSince: t0.Add(-20)}}},
		{RuleSteady, shape{util: 0.95, firstRTT: 0.1, lastRTT: 0.1, alpha: 1, vgShare: 0.1, bufferBDP: 4, cut: true, cutOn: true,
			mem: Memory{LastChange: t0.Add(-10), Changes: 2, CutOn: true, CalmSince: t0.Add(-5)}}},
		{RuleDraining, shape{util: 0.99, firstRTT: 0.9, lastRTT: 0.6, alpha: 1, vgShare: 0.1, mem: changed}},
		{RuleDelay, shape{util: 0.99, firstRTT: 0.8, lastRTT: 0.8, alpha: 4, vgShare: 0.1, mem: changed}},
		{RuleBound, shape{util: 0.99, firstRTT: 0.8, lastRTT: 0.8, alpha: 1, vgShare: 0.1, mem: changed}},
		// standing_floor_share 1.2: the same standing queue lowers alpha to
		// 1.2 × the queue (0.96); at 1.5 × the queue it stays bound.
		{RuleDelay, shape{util: 0.99, firstRTT: 0.8, lastRTT: 0.8, alpha: 1, vgShare: 0.1, mem: changed, standingShare: 1.2}},
		{RuleBound, shape{util: 0.99, firstRTT: 0.8, lastRTT: 0.8, alpha: 1, vgShare: 0.1, mem: changed, standingShare: 1.5}},
		// overrun_headroom_share 0.75 of a 4-BDP buffer: a queue 3.2
		// RTT_est one RTT_est ahead is no overrun, its growth tightening
		// not held by the QGR trigger firing (V_growth by the step, a lift
		// ended: alpha back); under the share (2.2 ahead) an overrun as
		// before.
		{RuleGrowth, shape{util: 0.99, firstRTT: 2, lastRTT: 2.6, alpha: 1, vgShare: 0.1, mem: changed, bufferBDP: 4, headroom: 0.75}},
		{RuleGrowth, shape{util: 0.99, firstRTT: 2, lastRTT: 2.6, alpha: 2, vgShare: 0.1, mem: changed, bufferBDP: 4, headroom: 0.75, lifted: 1}},
		{RuleOverrun, shape{util: 0.99, firstRTT: 1, lastRTT: 1.6, alpha: 1, vgShare: 0.1, mem: changed, bufferBDP: 4, headroom: 0.75}},
		{RuleUnderUse, shape{util: 0.6, firstRTT: 0.05, lastRTT: 0.05, notifiesPerRTT: 20, alpha: 0.5, vgShare: 0.05, mem: changed}},
		// Under-use loosens K_max at most to half the port's buffer (1 BDP:
		// 0.5 BDP) and never past the starting point (the guard: alpha 1,
		// V_growth v_growth_start_share × R_port), clamped there, held there.
		{RuleUnderUse, shape{util: 0.6, firstRTT: 0.05, lastRTT: 0.05, notifiesPerRTT: 20, alpha: 0.4, vgShare: 0.05, mem: changed, bufferBDP: 1}},
		{RuleUnderUse, shape{util: 0.6, firstRTT: 0.05, lastRTT: 0.05, notifiesPerRTT: 20, alpha: 0.75, vgShare: 0.075, mem: changed}},
		{RuleBound, shape{util: 0.6, firstRTT: 0.05, lastRTT: 0.05, notifiesPerRTT: 20, alpha: 1, vgShare: 0.1, mem: changed, bufferBDP: 4}},
		// Rule qgr-off (qgr_off_rtt 2): under-use held at the guard, the
		// node cutting a queue under K_min since 1 RTT_est before the window
		// (2 RTT_est at its end), overload_cut on: V_growth to R_port. The count starting in this
		// window (1 RTT_est), or twice the evidence after one way back on
		// (4 RTT_est): held. V_growth under the guard: under-use loosens it.
		// The trigger off by qgr-off: a growth under K_max one RTT_est ahead
		// leaves it off (the first-level loop's), one above switches it on
		// at the starting point.
		{RuleQGROff, shape{util: 0.6, firstRTT: 0.05, lastRTT: 0.05, notifiesPerRTT: 20, alpha: 1, vgShare: 0.1, qgrOffRTT: 2, cut: true, cutOn: true,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, QGRCostSince: t0.Add(-1)}}},
		{RuleBound, shape{util: 0.6, firstRTT: 0.05, lastRTT: 0.05, notifiesPerRTT: 20, alpha: 1, vgShare: 0.1, qgrOffRTT: 2, mem: changed}},
		{RuleBound, shape{util: 0.6, firstRTT: 0.05, lastRTT: 0.05, notifiesPerRTT: 20, alpha: 1, vgShare: 0.1, qgrOffRTT: 2,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, QGRCostSince: t0.Add(-1), QGROffBacks: 1}}},
		{RuleUnderUse, shape{util: 0.6, firstRTT: 0.05, lastRTT: 0.05, notifiesPerRTT: 20, alpha: 0.5, vgShare: 0.05, qgrOffRTT: 2,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, QGRCostSince: t0.Add(-1)}}},
		{RuleBound, shape{util: 0.99, firstRTT: 0.1, lastRTT: 0.4, alpha: 1, vgShare: 0, qgrOffRTT: 2,
			mem: Memory{LastChange: t0.Add(-10), Changes: 2, QGROff: true}}},
		{RuleGrowth, shape{util: 0.99, firstRTT: 0.1, lastRTT: 0.7, alpha: 1, vgShare: 0, qgrOffRTT: 2,
			mem: Memory{LastChange: t0.Add(-10), Changes: 2, QGROff: true}}},
		// under_use_after_rtt 2: an idle link with an empty queue and no
		// throttling of its own, 1 RTT_est after a window the node throttled
		// in, loosens alpha 0.5 to the defaults' ceiling (0.707 BDP); 3
		// RTT_est after, it is steady; a window that throttles is
		// remembered (its end).
		{RuleUnderUse, shape{util: 0.2, firstRTT: 0.01, lastRTT: 0.01, alpha: 0.5, vgShare: 0.1, afterRTT: 2,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, ThrottledAt: t0.Add(-1)}}},
		{RuleSteady, shape{util: 0.2, firstRTT: 0.01, lastRTT: 0.01, alpha: 0.5, vgShare: 0.1, afterRTT: 2,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, ThrottledAt: t0.Add(-3)}}},
		{RuleSteady, shape{util: 0.95, firstRTT: 0.2, lastRTT: 0.2, notifiesPerRTT: 20, alpha: 0.5, vgShare: 0.1, afterRTT: 2, mem: changed}},
		{RuleOverhead, shape{util: 0.95, firstRTT: 0.2, lastRTT: 0.2, notifiesPerRTT: 600, alpha: 1, vgShare: 0.1, mem: changed}},
		{RuleSettle, shape{util: 0.95, firstRTT: 0.1, lastRTT: 0.1, alpha: 1, vgShare: 0.1, mem: changed, lifted: 0.5}},
		{RuleCooldown, shape{util: 0.99, firstRTT: 0.8, lastRTT: 0.8, alpha: 4, vgShare: 0.1, mem: Memory{LastChange: t0.Add(1), Changes: 1}}},
		{RuleRejected, shape{util: 0.99, firstRTT: 0.8, lastRTT: 0.8, alpha: 4, vgShare: 0.1,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, Rejected: Tighten, RejectedUntil: t0.Add(time.Hour)}}},
		// The search: K_max up first, V_growth at its turn; not before
		// search_after_rtt, nor resting (Done).
		{RuleSearch, shape{util: 0.95, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 0.1, search: true,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, Search: Search{N: 2, SumJ: 0.2}}}},
		{RuleSearch, shape{util: 0.95, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 0.1, search: true,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, Search: Search{N: 2, SumJ: 0.2, Move: 3, Fails: 3}}}},
		{RuleSteady, shape{util: 0.95, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 0.1, search: true,
			mem: Memory{LastChange: t0.Add(-1), Changes: 1, Search: Search{N: 2, SumJ: 0.2}}}},
		{RuleSteady, shape{util: 0.95, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 0.1, search: true,
			mem: Memory{LastChange: t0.Add(-10), Changes: 1, Search: Search{N: 2, SumJ: 0.2, Done: true}}}},
	}
	rates := []int64{10e9, 25e9, 100e9, 400e9}
	rtts := []time.Duration{time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond}
	for i, sh := range shapes {
		t.Run(fmt.Sprintf("%d-%s", i, sh.rule), func(t *testing.T) {
			type outcome struct {
				Rule      Rule
				Direction Direction
				Change    bool
				Alpha     float64
				VGShare   float64
				Changes   int
				SinceRTT  float64 // LastChange after the window's end, in RTT_est
				Lifted    float64
				Search    Search // RTTEst cleared, SumJ rounded
				Cut       bool   // overload_cut after
				CutOn     bool
				CalmRTT   float64 // CalmSince before the window's end, in RTT_est
				QGROff    bool
				QGROffN   int     // QGROffBacks
				QGRCost   float64 // QGRCostSince before the window's end, in RTT_est
				Throttled float64 // ThrottledAt before the window's end, in RTT_est (-1: none)
			}
			var first *outcome
			var firstAt string
			for _, r := range rates {
				for _, rtt := range rtts {
					cfg, w, mem := sh.shape.scaled(r, rtt)
					d, m := Decide(cfg, w, mem)
					o := outcome{Rule: d.Rule, Direction: d.Direction, Change: d.Change, Alpha: d.After.Alpha,
						VGShare: math.Round(float64(d.After.VGrowthBytesPerSec)*8/float64(r)*1e6) / 1e6,
						Changes: m.Changes, Lifted: m.Lifted.Alpha, Search: m.Search, Cut: d.After.OverloadCut, CutOn: m.CutOn}
					o.QGROff, o.QGROffN = m.QGROff, m.QGROffBacks
					if !m.QGRCostSince.IsZero() {
						o.QGRCost = math.Round(float64(w.End.Sub(m.QGRCostSince))/float64(rtt)*1e6) / 1e6
					}
					o.Throttled = -1
					if !m.ThrottledAt.IsZero() {
						o.Throttled = math.Round(float64(w.End.Sub(m.ThrottledAt))/float64(rtt)*1e6) / 1e6
					}
					if !m.CalmSince.IsZero() {
						o.CalmRTT = math.Round(float64(w.End.Sub(m.CalmSince))/float64(rtt)*1e6) / 1e6
					}
					o.Search.RTTEst, o.Search.SumJ = 0, math.Round(o.Search.SumJ*1e3)/1e3
					if !m.LastChange.IsZero() {
						o.SinceRTT = math.Round(float64(m.LastChange.Sub(w.End))/float64(rtt)*1e6) / 1e6
					}
					at := fmt.Sprintf("%d Gbit/s, %v", r/1e9, rtt)
					if first == nil {
						first, firstAt = &o, at
						if o.Rule != sh.rule {
							t.Fatalf("%s: rule %s, want %s (%s)", at, o.Rule, sh.rule, d.Reason)
						}
						continue
					}
					if o != *first {
						t.Errorf("%s: %+v, at %s: %+v (%s)", at, o, firstAt, *first, d.Reason)
					}
				}
			}
		})
	}
}
