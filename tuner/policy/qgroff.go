package policy

import (
	"fmt"
	"math"
	"time"

	"github.com/lhcnp/lhcnp/internal/plural"
)

// RuleQGROff switches the QGR trigger off where its cuts cost the link and
// save nothing (Config.QGROffRTT): V_growth to the port's rate, as good as
// off (qgrOff), which every node takes (the YANG range of v-growth starts
// at 1, so 0 is the simulator's alone) and which still fires when more
// than twice the port's rate arrives (a load step of more than 2:1).
const RuleQGROff Rule = "qgr-off"

// qgrOffBytesPerSec is the V_growth rule qgr-off sets on a port of the
// given rate (bit/s): the port's rate in bytes/s, rounded up, so that
// qgrOff holds.
func qgrOffBytesPerSec(portRateBitsPerSec int64) int64 {
	return (portRateBitsPerSec + 7) / 8
}

// maxQGROffDoublings caps Memory.QGROffBacks: the evidence rule qgr-off
// needs is at most qgr_off_rtt × 2^6 (64 ×).
const maxQGROffDoublings = 6

// qgrCostly says why the window shows the QGR trigger's cuts costing the
// link and saving nothing, "" when it does not: the under-use rule
// matched (the link under utilisation_under, the queue under
// delay_low_rtt, senders throttled) and cannot loosen V_growth (at or
// above the under-use ceiling, the policy's starting point; or at its
// bound), the node sent notifications other than Resume (it cut), and
// every sample's queue and peak stayed under K_min (K_max / 2): no ECN
// marks, so no EMR trigger, and no QD trigger — the cuts are the QGR
// trigger's, on bursts of a queue the first-level loop keeps short
// (retired held-out seed 14006: V_growth at 0.1 R_port, the link 50 %
// used; the trigger off, 80 %). Only on a queue whose node sizes its cut
// to the overload (overload_cut on): without it the QGR trigger is the
// node's one early answer to a load step (its QD trigger cuts
// rate-reduce-percent per RTT_est above K_max), and off, a 6:1 load-up
// on train seed 33 lost up to 10 % of its packets (docs/tuner.md, "A
// start and a growth trigger for a node that cuts to the overload
// (session 37)").
func qgrCostly(cfg Config, w Window, m Metrics, rule Rule) string {
	v, r := w.Config.VGrowthBytesPerSec, w.PortRateBitsPerSec
	if rule != RuleUnderUse || !cfg.TuneVGrowth || qgrOff(v, r) || !w.Config.OverloadCut {
		return ""
	}
	ceiling := cfg.underUseVGrowthCeiling(r)
	if _, hi := cfg.vGrowthBounds(r); ceiling <= 0 || ceiling > hi {
		ceiling = hi
	}
	if v < ceiling {
		return "" // under-use loosens V_growth itself
	}
	cuts := m.Notifications.Total() - m.Notifications.Resume
	if cuts <= 0 {
		return ""
	}
	kmin := kmaxBytes(w) / 2
	if kmin <= 0 || !underKMin(w, kmin) {
		return ""
	}
	return fmt.Sprintf("%s with the queue under K_min (%d B) at every sample and V_growth at the under-use ceiling (%d B/s): the QGR trigger's cuts cost the link and the queue is the first-level loop's",
		plural.Count(cuts, "cut"), kmin, ceiling)
}

// underKMin says whether every sample's queue and peak stayed under kmin.
func underKMin(w Window, kmin int64) bool {
	for _, s := range w.Samples {
		if s.QueueDepthBytes >= kmin || s.PeakQueueDepthBytes >= kmin {
			return false
		}
	}
	return true
}

// qgrTrack follows, for rule qgr-off, the evidence against the QGR
// trigger: a costly window (qgrCostly) starts the count if none runs; a
// window with loss, or with the queue at or above K_min at any sample, or
// one the growth, overrun or delay rules classify (the first-level loop
// needs help) restarts it; other windows leave it. A trigger found on
// again after the tuner switched it off (rolled back, the growth or loss
// rule, an operator) doubles the evidence the next off needs.
func (m *Memory) qgrTrack(cfg Config, w Window, cm Metrics, rule Rule, costly bool) {
	if cfg.QGROffRTT <= 0 {
		return
	}
	if m.QGROff && !qgrOff(w.Config.VGrowthBytesPerSec, w.PortRateBitsPerSec) {
		m.QGROff = false
		m.QGROffBacks = min(m.QGROffBacks+1, maxQGROffDoublings)
	}
	kmin := kmaxBytes(w) / 2
	switch {
	case cm.Loss > cfg.LossHigh, kmin <= 0, !underKMin(w, kmin),
		rule == RuleGrowth, rule == RuleOverrun, rule == RuleDelay:
		m.QGRCostSince = time.Time{}
	case costly && m.QGRCostSince.IsZero():
		m.QGRCostSince = w.Start
	}
}

// qgrOffNow says why rule qgr-off switches the QGR trigger off now, ""
// while it does not: the window is costly (why) and the evidence has run
// for qgr_off_rtt × 2^QGROffBacks RTT_est.
func qgrOffNow(cfg Config, w Window, mem Memory, why string) string {
	if why == "" || cfg.QGROffRTT <= 0 || mem.QGRCostSince.IsZero() || w.RTTEst <= 0 {
		return ""
	}
	need := cfg.QGROffRTT * math.Ldexp(1, mem.QGROffBacks)
	since := w.simSeconds(w.End.Sub(mem.QGRCostSince)) / w.RTTEst.Seconds()
	if since < need {
		return ""
	}
	back := ""
	if n := mem.QGROffBacks; n > 0 {
		back = fmt.Sprintf(" × 2^%d, the trigger back on %s since the tuner switched it off", n, plural.Count(n, "time"))
	}
	return fmt.Sprintf("%s, for %.3g RTT_est (qgr_off_rtt %v%s): the QGR trigger as good as off (V_growth at R_port, %d B/s)",
		why, since, cfg.QGROffRTT, back, qgrOffBytesPerSec(w.PortRateBitsPerSec))
}

// firstLevelHolds says why a growth or delay tightening that would switch
// the QGR trigger back on leaves it off, "" when it does not: rule qgr-off
// switched it off (Memory.QGROff), and the queue one RTT_est ahead at the
// window's pace stays at or under K_max, the first-level ECN loop's range
// (marks from K_min, the QD trigger above K_max). A growth that loop does
// not stop — one heading above K_max — switches the trigger on at the
// policy's starting point, and so does loss (rule loss is not held).
func firstLevelHolds(w Window, m Metrics, mem Memory, after Settings, rule Rule) string {
	r := w.PortRateBitsPerSec
	if (rule != RuleGrowth && rule != RuleDelay) || !mem.QGROff || !qgrOff(w.Config.VGrowthBytesPerSec, r) || qgrOff(after.VGrowthBytesPerSec, r) {
		return ""
	}
	kmax := kmaxBytes(w)
	ahead := m.LastDelayRTT + m.TrendRTT
	if kmax <= 0 || w.bdpBytes(ahead) > float64(kmax) {
		return ""
	}
	return fmt.Sprintf("rule qgr-off switched the QGR trigger off and the queue one RTT_est ahead (%.3g RTT_est) stays under K_max (%.3g RTT_est): the first-level loop's, the trigger kept off",
		ahead, float64(kmax)/w.bdpBytes(1))
}
