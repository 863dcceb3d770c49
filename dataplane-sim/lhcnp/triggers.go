package lhcnp

// The triggers and the second-level response (§5.4, §5.5). evaluate runs at
// every enqueue: when QD is above K_max, EMR above V_ecn or QGR above
// V_growth, has held for TriggerPersistence and the queue is not holding
// off, fire picks the flows with the largest share of the queue
// (selectFlows), applies the per-flow minimum interval, collaborative
// suppression (collaborate.go) and the per-port token bucket (takeToken),
// chooses the action from the queue's own severity (policy, generate.go)
// and sends. The first-level response, K_max and K_min programmed into the
// port's ECN marking, is recompute in node.go. A queue that stays below
// K_min for the hold time sends Resume to the flows it slowed
// (scheduleResume, resume).

import (
	"math"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Trigger is the reason of a second-level response (§5.4).
type Trigger uint8

// Triggers, in the order that picks the reported one when several hold.
const (
	TriggerNone     Trigger = iota
	TriggerQD               // (a) QD > K_max
	TriggerQGR              // (c) QGR > V_growth
	TriggerEMR              // (b) EMR > V_ecn
	TriggerResume           // not a trigger: QD below K_min for the hold time
	TriggerExternal         // fired by another mechanism (Node.Fire)
)

func (t Trigger) String() string {
	switch t {
	case TriggerQD:
		return "qd"
	case TriggerQGR:
		return "qgr"
	case TriggerEMR:
		return "emr"
	case TriggerResume:
		return "resume"
	case TriggerExternal:
		return "external"
	}
	return "none"
}

// active reports whether the node may act on queue q of ps.
func (n *Node) active(ps *portState, q *queueState) bool {
	return n.cfg.Enabled && ps.ic.Enabled && q.cfg.Enabled
}

// marks reports whether the node marks q (§5.4's first-level response):
// it programs the port's ECN marking with q's thresholds when active and
// no other mechanism detects congestion (WithExternalTriggers); otherwise
// the port keeps the marking it had.
func (n *Node) marks(ps *portState, q *queueState) bool {
	return n.active(ps, q) && !n.opts.externalTriggers
}

// conditions are §5.4's three for a queue depth, a marking rate (percent)
// and a growth rate (bytes per second): QD > K_max, EMR > V_ecn, QGR >
// V_growth (a zero V_ecn or V_growth switches its trigger off).
func (q *queueState) conditions(qd int64, emr float64, qgr int64) (qdAbove, emrAbove, qgrAbove bool) {
	return qd > q.kmax, q.cfg.VECNPercent > 0 && emr > q.cfg.VECNPercent,
		q.cfg.VGrowthBytesPerSec > 0 && qgr > q.cfg.VGrowthBytesPerSec
}

// evaluate checks the second-level conditions (§5.4) and fires when one
// holds and the queue is not holding off.
func (n *Node) evaluate(ps *portState, q *queueState, now engine.Time) {
	// The EMR now, not that of the last window closed: its window closes
	// at a dequeue or a mark, so the first packet after an idle spell
	// longer than a window would find the marking rate of the last busy
	// window (after a burst, 100 %) and fire on it (§3: the fraction of
	// packets marked per unit time).
	qd, emr, qgr := q.conditions(q.qd, q.emrAt(now), q.qgr)
	q.level = levelQD(q.qd, q.kmin, q.kmax)
	if n.opts.externalTriggers {
		return // another mechanism detects congestion (Fire)
	}
	if !n.active(ps, q) {
		q.qdAbove, q.emrAbove, q.qgrAbove = qd, emr, qgr
		return
	}
	if qd && !q.qdAbove {
		q.counters.QDTriggers++
	}
	if emr && !q.emrAbove {
		q.counters.EMRTriggers++
	}
	if qgr && !q.qgrAbove {
		q.counters.QGRTriggers++
	}
	was := q.qdAbove || q.emrAbove || q.qgrAbove
	q.qdAbove, q.emrAbove, q.qgrAbove = qd, emr, qgr
	if !qd && !emr && !qgr {
		return
	}
	if !was {
		q.condSince = now
	}
	if q.below {
		// Congestion has not subsided while a second-level condition
		// holds: the Resume hold counts from when none does (§5.5.1).
		q.belowSince = now
	}
	// Persistence: a condition must have held for TriggerPersistence
	// before the node generates (§1: no control packets for transient
	// queue build-up). Conditions are evaluated per enqueue, so a queue
	// that dips below K_max between two packets counts as holding.
	if now-q.condSince < q.cfg.TriggerPersistence || now < q.holdUntil {
		return
	}
	t := TriggerEMR
	switch {
	case qd:
		t = TriggerQD
	case qgr:
		t = TriggerQGR
	}
	n.fire(ps, q, t, now)
}

// fire runs the §5.5 procedure for one trigger: choose the flows with the
// largest share of the queue, apply the per-flow interval, collaborative
// suppression and the per-port limit, and send.
func (n *Node) fire(ps *portState, q *queueState, t Trigger, now engine.Time) {
	level, mt, mv := n.severity(ps, q, t)
	var over uint16
	if q.cfg.OverloadCut && (q.severe(now) || q.cfg.OverloadCutGrowth && t == TriggerQGR) {
		over = n.selectByRate(ps, q, now)
	} else {
		n.selectFlows(q)
	}
	hold := now + q.cfg.MeasurementInterval
	for _, e := range n.sel {
		n.equal = n.equal[:0]
		if iv := q.intervalFor(e); e.hasCNP && now-e.lastCNP < iv {
			q.counters.SuppressedFlowInterval++
			hold = min(hold, e.lastCNP+iv)
			continue
		}
		if q.fillResume() && e.needResume && e.reducedEpisode == q.episode+1 && q.qd < q.kmin && !q.loopSized(e) {
			// PerFlowRTT with RepeatResume: no second cut of a flow
			// whose loop with this node is short (a node next to the
			// senders: a fixed-percentage cut, not loopSized) while
			// its first cut awaits its Resume and the queue has not
			// reached K_min (no congestion the first-level marks
			// could not take: bursts on an uncongested port, the QGR
			// trigger). Its per-flow gap is its loop and two
			// measurement intervals, a few hundred microseconds, so
			// the next burst cut it again; the rule it had instead
			// was §5.7's deferral, its own cut's fall taken for an
			// upstream node's, and then, the queue grown on the next
			// burst, an escalation to a 60 % cut (docs/longhaul.md,
			// "The third fault, third attempt").
			q.counters.SuppressedFlowInterval++
			continue
		}
		deferNow, escalate := n.collaborate(ps, q, e, now)
		if deferNow {
			q.counters.SuppressedDeferral++
			if q.cfg.PerFlowRTT && e.deferring {
				// Look again when the wait ends (one RTT_est of the
				// port at most, 2 µs next to the receiver), not a
				// measurement interval later: the first-level marks
				// meanwhile are DCQCN's cuts over the whole path.
				hold = min(hold, max(now+1, e.deferStart+min(n.obsWindow(ps), e.srcRTT+q.cfg.MeasurementInterval)))
			}
			continue
		}
		m := wire.LongHaul{CongLevel: level, SourceQP: e.key.SrcQP, MetricType: mt, MetricValue: mv}
		// §5.5.1: Pause only for severe congestion. Severity for the
		// action is the queue's own (its depth against K_min and K_max),
		// whatever the trigger: a fast-growing or heavily marked queue
		// below K_max gets the default action, never a first Pause.
		qdLevel := n.flowLevel(ps, q, e)
		if t == TriggerQD {
			// At least 1: a Rate Reduce at level 0 is inconsistent
			// (§9, the reaction point drops it), and the trigger held.
			m.CongLevel = max(qdLevel, 1)
		}
		m.Action, m.Parameter = policy(&q.cfg.Action, int(qdLevel))
		if m.Action == wire.ActionRateReduce {
			// OverloadCut: at least the overload's share.
			m.Parameter = max(m.Parameter, over)
		}
		if q.cfg.PerFlowRTT && e.reducedEpisode == q.episode+1 && q.qgrAt(now) < 0 {
			// The node's last cut of the flow, a round trip ago, works:
			// the queue falls. A queue that filled the buffer stays
			// above K_max while it drains; cutting again for that would
			// cut every round trip until the flow starves.
			q.counters.SuppressedFlowInterval++
			continue
		}
		if m.Action == wire.ActionRateReduce && q.cfg.PerFlowRTT && q.loopSized(e) && !e.rateValid {
			// One cut per round trip, sized from the flows' rates
			// (loopCut): the flow's first measurement interval is not
			// over yet.
			hold = min(hold, max(now+1, e.winStart+q.cfg.MeasurementInterval))
			if q.cfg.OneCutPerEpisode {
				// The node notifies this flow's sender now: no mark
				// (the receiver's CNPs would cut it first).
				e.cutEpisode = q.episode + 1
			}
			continue
		}
		if m.Action == wire.ActionRateReduce && q.cfg.PerFlowRTT && q.loopSized(e) {
			// One cut per round trip to the source, longer than the
			// gap the configured percentage repeats at: the cut is
			// sized for the loop (loopCut). Within an episode the node
			// already cut the flow in, only what loopCut still finds
			// missing.
			p := n.loopCut(ps, q, e, now)
			if e.reducedEpisode != q.episode+1 {
				p = max(p, m.Parameter)
			} else if p == 0 {
				q.counters.SuppressedFlowInterval++
				continue
			}
			m.Parameter = p
			if q.cfg.EqualCut {
				m.Parameter = n.equalCut(q, e, now, p)
			}
		}
		if escalate {
			cs := &n.cfg.Collaborative
			// §5.7: a higher level than this node would send and than the
			// flow last got from it, at least EscalationLevel.
			m.CongLevel = uint8(min(255, max(int(level)+1, cs.EscalationLevel, int(e.lastLevel)+1)))
			m.Action, m.Parameter = escalationAction(&q.cfg.Action, cs.EscalationAction)
		}
		if !n.takeToken(ps, now) {
			q.counters.SuppressedPortLimit++
			ps.counters.SuppressedPortLimit++
			continue
		}
		sent := n.send(ps, q, e, &m, t, escalate, now)
		if sent && escalate {
			q.counters.Escalations++
			n.emit(Event{Kind: EventEscalation, Time: now, Port: ps.name, Queue: q.prio, Flow: e.key,
				Action: m.Action, Parameter: m.Parameter, CongLevel: m.CongLevel})
		}
		if !escalate && len(n.equal) > 0 {
			if sent {
				n.sendEqual(ps, q, &m, t, now)
			}
			n.equal = n.equal[:0]
		}
	}
	q.holdUntil = hold
}

// loopCut is the Rate Reduce percentage (PerFlowRTT) that brings the
// queue's arrivals to the port's rate in one cut of the selected flows:
// with one notification per round trip to the source, a fixed 30 % (the
// comparison's, for a 1 ms gap) leaves the port oversubscribed for a whole
// round trip after each cut. The target is the port's rate less what
// drains, in that round trip, the queue the cut will find: the queue now
// plus the excess still in flight during the loop, drained at most at half
// the port's rate (the port stays full while there is a queue). 0 when
// the flows' rates are not known yet.
func (n *Node) loopCut(ps *portState, q *queueState, e *flowEntry, now engine.Time) uint16 {
	loop := e.srcRTT
	if loop <= 0 {
		return 0
	}
	var in, sel int64
	for _, f := range q.flows {
		in += f.rateAt(now, q.cfg.MeasurementInterval)
	}
	for _, f := range n.sel {
		sel += f.rateAt(now, q.cfg.MeasurementInterval)
	}
	r := ps.rateBitsPerSec
	if in <= 0 || sel <= 0 || r <= 0 {
		return 0
	}
	sec := float64(loop) / float64(engine.Second)
	found := float64(q.qd) + max(0, float64(in-r))*sec/8
	target := drainTarget(float64(r), found, sec)
	need := float64(in) - target
	if need <= 0 {
		return 0
	}
	p := 100 * need / float64(sel)
	// No flow below its equal share of the target: the largest flows
	// carry the cut, not the whole of it when small ones share the port.
	active := 0
	for _, f := range q.flows {
		if f.rateAt(now, q.cfg.MeasurementInterval) > 0 {
			active++
		}
	}
	if rate := float64(e.rateAt(now, q.cfg.MeasurementInterval)); rate > 0 && active > 0 {
		p = min(p, 100*(1-target/float64(active)/rate))
	}
	if p <= 0 {
		return 0
	}
	return cutPercent(p)
}

// drainTarget is the arrival rate a cut aims at (bits per second): the
// port's rate r less what drains queued bytes within a loop of sec
// seconds, at least half of r (the port stays full while a queue is
// left). loopCut and selectByRate share it.
func drainTarget(r, queued, sec float64) float64 {
	return r * (1 - min(0.5, queued/(r*sec/8)))
}

// equalCut is the Rate Reduce percentage for e with EqualCut, p being
// loopCut's: the flows of the queue this node cut in the current episode
// whose cut has not reached the queue yet (their loop and two measurement
// intervals since it) and whose modelled rate at the source (srcRate,
// at most their rate before the first cut) is above the level the cut
// leaves e at, L_e = rate(e) · (1 − p/100), share the reduction e alone
// would take: one level L >= L_e with
// (rate(e) − L) + sum(max(0, srcRate(f) − L)) = rate(e) − L_e.
// e is cut to L, and the flows above L to L (n.equal, sent by sendEqual
// once e's own cut went). loopCut sizes its cut from arrival rates, which
// show none of those cuts, and the per-flow interval keeps the node from
// cutting those flows again within their loop: the flow measured last
// took the whole need of the loop (docs/longhaul.md, "The slowest large
// flow (session 17)"). p unchanged when no such flow is above L_e.
func (n *Node) equalCut(q *queueState, e *flowEntry, now engine.Time, p uint16) uint16 {
	iv := q.cfg.MeasurementInterval
	n.equal, n.equalLevels = n.equal[:0], n.equalLevels[:0]
	re := float64(e.rateAt(now, iv))
	if re <= 0 || p == 0 {
		return p
	}
	le := re * float64(100-int(p)) / 100
	for _, f := range q.flows {
		if f == e || !f.needResume || f.reducedEpisode != q.episode+1 || f.lastAction != wire.ActionRateReduce ||
			f.srcRTT <= 0 || now >= f.cutAt+f.srcRTT+2*iv || q.stopped(f, now) {
			continue
		}
		if m := float64(min(f.srcRate, f.preCutRate)); m > le {
			n.equal, n.equalLevels = append(n.equal, f), append(n.equalLevels, m)
		}
	}
	if len(n.equal) == 0 {
		return p
	}
	l := equalLevel(re, le, n.equalLevels)
	if l >= 0.99*re {
		// The others' excess alone covers e's reduction: no cut of e
		// below 1 %, nor a Rate Reduce of 0.
		n.equal = n.equal[:0]
		return p
	}
	k := 0
	for i, f := range n.equal {
		if n.equalLevels[i] > l {
			n.equal[k], n.equalLevels[k] = f, float64(cutPercent(100*(1-l/n.equalLevels[i])))
			k++
		}
	}
	n.equal, n.equalLevels = n.equal[:k], n.equalLevels[:k]
	return cutPercent(100 * (1 - l/re))
}

// equalLevel is the level L in [le, re] at which a flow at rate re and
// flows at rates ms (each above le) together give up re − le:
// (re − L) + sum(max(0, m − L)) = re − le, or re when the flows' excess
// over re alone is more than that. The sum is non-increasing in L.
func equalLevel(re, le float64, ms []float64) float64 {
	total := re - le
	given := func(l float64) float64 {
		s := re - l
		for _, m := range ms {
			s += max(0, m-l)
		}
		return s
	}
	lo, hi := le, re
	for range 64 {
		mid := (lo + hi) / 2
		if given(mid) > total {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// sendEqual sends the cuts equalCut chose for the other flows (n.equal,
// their percentages in n.equalLevels) after e's own cut m went: Rate
// Reduce at m's level, within the port's rate limit.
func (n *Node) sendEqual(ps *portState, q *queueState, m *wire.LongHaul, t Trigger, now engine.Time) {
	for i, f := range n.equal {
		if !n.takeToken(ps, now) {
			q.counters.SuppressedPortLimit++
			ps.counters.SuppressedPortLimit++
			return
		}
		mf := wire.LongHaul{CongLevel: m.CongLevel, Action: wire.ActionRateReduce, Parameter: uint16(n.equalLevels[i]),
			SourceQP: f.key.SrcQP, MetricType: m.MetricType, MetricValue: m.MetricValue}
		n.send(ps, q, f, &mf, t, false, now)
	}
}

// cutPercent is a Rate Reduce parameter for a cut of p percent (p > 0):
// rounded up, at most 99.
func cutPercent(p float64) uint16 {
	return uint16(min(99, math.Ceil(p)))
}

// flowLevel is the congestion level of the queue's depth for flow e: against
// the port's K_min and K_max (§5.3.2, from the port's RTT_est), or with
// PerFlowRTT, when the flow's round trip to its source is longer than the
// port's RTT_est and K_max is the BDP's, against the thresholds the same
// formula gives for the flow's round trip (§5.8): a queue that is severe
// for a port's 2 µs link next to the receivers (K_max = K_base) is a
// fraction of the bandwidth-delay product of a flow 10 ms away, and
// Pausing that flow for it idles the port for a whole loop.
func (n *Node) flowLevel(ps *portState, q *queueState, e *flowEntry) uint8 {
	if !q.cfg.PerFlowRTT || e.srcRTT <= ps.rtt || q.cfg.KMaxMode != KMaxBDP {
		return levelQD(q.qd, q.kmin, q.kmax)
	}
	kmax, kmin := thresholds(&q.cfg, ps.rateBitsPerSec, e.srcRTT)
	return levelQD(q.qd, kmin, kmax)
}

// loopSized reports whether a Rate Reduce to e is sized for its loop
// (loopCut, PerFlowRTT): when the flow's round trip to its source is longer
// than the configured gap, or than loopMIs measurement intervals (a loop
// long enough for the rates loopCut reads to have settled between two
// cuts: the node cuts once per loop either way, and a fixed percentage per
// loop left a generated mid-WAN node, 5 ms from the senders with a 10 ms
// gap, at its full buffer for 150 ms).
func (q *queueState) loopSized(e *flowEntry) bool {
	return e.srcRTT > min(q.minInterval, loopMIs*q.cfg.MeasurementInterval)
}

// loopMIs is how many measurement intervals a flow's loop must exceed for
// loopSized.
const loopMIs = 4

// intervalFor is the minimum time between two notifications to e (§5.5):
// with PerFlowRTT its round trip to its source when learnt plus one
// measurement interval (when the last one's effect shows in QGR and the
// flow's arrival rate), else the queue's.
func (q *queueState) intervalFor(e *flowEntry) engine.Time {
	if q.cfg.PerFlowRTT && e.srcRTT > 0 {
		// Two intervals: the cut arrives within one, the next one
		// closed after it measures the new rate (loopCut).
		return e.srcRTT + 2*q.cfg.MeasurementInterval
	}
	return q.minInterval
}

// selectFlows fills n.sel with the flows to notify (§5.5 step 1): the
// largest contributors to the queue, at most MaxFlowsPerTrigger, each with
// at least MinSharePercent of the queue (the largest always).
func (n *Node) selectFlows(q *queueState) {
	a := &q.cfg.Action
	n.sel = n.sel[:0]
	for _, e := range q.flows {
		if e.queued <= 0 {
			continue
		}
		// Insertion into a short list sorted by queued bytes, descending.
		i := len(n.sel)
		if i == a.MaxFlowsPerTrigger {
			if e.queued <= n.sel[i-1].queued {
				continue
			}
			i--
		} else {
			n.sel = append(n.sel, nil)
		}
		for i > 0 && n.sel[i-1].queued < e.queued {
			n.sel[i] = n.sel[i-1]
			i--
		}
		n.sel[i] = e
	}
	if len(n.sel) == 0 {
		return
	}
	minBytes := q.qd * int64(a.MinSharePercent) / 100
	k := 1
	for k < len(n.sel) && n.sel[k].queued >= minBytes {
		k++
	}
	n.sel = n.sel[:k]
}

// severe reports whether the queue is severely congested for OverloadCut:
// QD above K_max, or a tail drop within the per-flow interval (RTT_est by
// default) or the measurement interval, the longer (a K_max at or above
// the buffer is never exceeded).
func (q *queueState) severe(now engine.Time) bool {
	return q.qd > q.kmax || q.dropped && now-q.dropAt < max(q.cfg.MeasurementInterval, q.minInterval)
}

// selectByRate fills n.sel as selectFlows does, for a severe queue with
// OverloadCut: by the flows' arrival rates over the measurement interval
// (their contribution to the queue now), at most MaxFlowsPerTrigger, each
// with at least MinSharePercent of the queue's arrivals (the fastest
// always), instead of their bytes in the queue. It returns the overload's
// share: the Rate Reduce percentage that brings the queue's arrivals to
// the target below, ceil(100 * (1 - target / arrivals)), at most 99, 0
// when the arrivals are within it.
func (n *Node) selectByRate(ps *portState, q *queueState, now engine.Time) uint16 {
	a := &q.cfg.Action
	iv := q.cfg.MeasurementInterval
	n.sel, n.selRates = n.sel[:0], n.selRates[:0]
	var in int64
	for _, e := range q.flows {
		r := e.rateAt(now, iv)
		if r <= 0 {
			continue
		}
		in += r
		// Insertion into a short list sorted by rate, descending.
		i := len(n.sel)
		if i == a.MaxFlowsPerTrigger {
			if r <= n.selRates[i-1] {
				continue
			}
			i--
		} else {
			n.sel, n.selRates = append(n.sel, nil), append(n.selRates, 0)
		}
		for i > 0 && n.selRates[i-1] < r {
			n.sel[i], n.selRates[i] = n.sel[i-1], n.selRates[i-1]
			i--
		}
		n.sel[i], n.selRates[i] = e, r
	}
	if len(n.sel) == 0 {
		return 0
	}
	k := 1
	for k < len(n.sel) && 100*n.selRates[k] >= in*int64(a.MinSharePercent) {
		k++
	}
	n.sel = n.sel[:k]
	// The target: R_port less what drains the queue within one RTT_est,
	// at least half R_port (loopCut's target, the port's RTT_est as the
	// loop). Brought only to R_port, the arrivals leave the queue
	// standing where it is: at the buffer, dropping at every burst.
	target := float64(ps.rateBitsPerSec)
	if sec := float64(ps.rtt) / float64(engine.Second); sec > 0 && target > 0 {
		target = drainTarget(target, float64(q.qd), sec)
	}
	if target <= 0 || float64(in) <= target {
		return 0
	}
	return cutPercent(100 * (1 - target/float64(in)))
}

// takeToken takes one notification from the port's bucket (§9: global
// rate limit per port).
func (n *Node) takeToken(ps *portState, now engine.Time) bool {
	const unit = 1_000_000_000
	burst := ps.ic.CNPBurst * unit
	if dt := int64(now - ps.lastRefill); dt > 0 {
		if dt >= burst/ps.ic.CNPRatePerSec+1 {
			ps.tokens = burst
		} else {
			ps.tokens = min(burst, ps.tokens+dt*ps.ic.CNPRatePerSec)
		}
		ps.lastRefill = now
	}
	if ps.tokens < unit {
		return false
	}
	ps.tokens -= unit
	return true
}

// scheduleResume arms the Resume check of a queue that went below K_min.
func (n *Node) scheduleResume(ps *portState, q *queueState) {
	if q.resumePending || !q.cfg.Action.ResumeEnabled || !n.active(ps, q) {
		return
	}
	need := false
	for _, e := range q.flows {
		if e.needResume {
			need = true
			break
		}
	}
	if !need {
		return
	}
	q.resumePending = true
	n.sim.At(q.belowSince+q.holdFor(), n, evResume, resumeArg(ps.idx, int(q.prio), q.resumeGen))
}

// holdFor is how long the queue must stay below K_min before Resume
// (§5.5.1): the configured or RTT_est hold, or with PerFlowRTT (and no
// configured hold) the longest round trip to the source of the flows
// awaiting Resume plus a measurement interval, when the queue's depth has
// had time to show their last change; with RepeatResume too, one
// measurement interval.
func (q *queueState) holdFor() engine.Time {
	if !q.cfg.PerFlowRTT || q.cfg.Action.ResumeHold > 0 {
		return q.resumeHold
	}
	if q.cfg.Action.RepeatResume {
		// fillResume sizes each Resume to the port's spare rate, the
		// Resumes in flight counted: the queue need only stay below
		// K_min for the interval the rates are measured over, not
		// for a flow's whole round trip (at the far end, a round trip
		// of an idle port).
		return q.cfg.MeasurementInterval
	}
	var h engine.Time
	for _, e := range q.flows {
		if e.needResume && e.srcRTT > 0 {
			h = max(h, e.srcRTT+q.cfg.MeasurementInterval)
		}
	}
	if h == 0 {
		return q.resumeHold
	}
	return h
}

// fillResume reports whether the queue's Resumes are sized to the port's
// spare rate (PerFlowRTT with RepeatResume, fillResume).
func (q *queueState) fillResume() bool { return q.cfg.PerFlowRTT && q.cfg.Action.RepeatResume }

// spareRate is the port's rate the queue's flows leave unused (PerFlowRTT
// with RepeatResume): the port's rate less their arrival rates and less
// what the Resumes still on their way (sent within a flow's loop, not yet
// in its arrival rate) will add.
func (n *Node) spareRate(ps *portState, q *queueState, now engine.Time) int64 {
	spare := ps.rateBitsPerSec
	for _, f := range q.flows {
		spare -= f.rateAt(now, q.cfg.MeasurementInterval)
		if f.resumeInc > 0 && now-f.lastCNP < f.srcRTT+2*q.cfg.MeasurementInterval &&
			now-f.lastSeen < 2*q.cfg.MeasurementInterval {
			spare -= f.resumeInc
		}
	}
	return spare
}

// fillResume is the Resume parameter (PerFlowRTT with RepeatResume) that
// gives flow e what is left of the port's spare rate (*budget), as a
// percentage of the reduction the node last applied to it, and takes it
// from the budget: 0 (unconditional, back to the rate before its first
// cut) when that is at most twice the budget (the overshoot, at most the
// budget, lasts one loop: the next cut, loopCut, trims it; a percentage
// of the last of several cuts would bring back a fraction of the way).
// The caller checks that the budget is positive and lastReduction known
// (or the rate before the cut unknown: preCutUnknown, ResumeOnDrain only).
func (n *Node) fillResume(ps *portState, q *queueState, e *flowEntry, now engine.Time, budget *int64) uint16 {
	if e.preCutUnknown {
		// Its rate before the cut was never measured (cut within its
		// first measurement interval): the percentage of an unknown
		// cut, or "back at its rate before the cut", cannot be judged.
		// §5.5.1's unconditional Resume, the source restoring its own
		// rate; the whole spare counted against it for a loop.
		e.resumeInc = *budget
		*budget = 0
		return 0
	}
	gap := e.preCutRate - e.rateAt(now, q.cfg.MeasurementInterval)
	if gap <= 2**budget {
		e.resumeInc = max(gap, 0)
		*budget -= e.resumeInc
		return 0
	}
	if 2*e.lastReduction < *budget && 2*(ps.rateBitsPerSec-*budget) < ps.rateBitsPerSec {
		// The port mostly idle and the last cut less than half the
		// budget (a flow cut several times): the percentage cannot
		// bring it back; unconditional, as RepeatResume's repeats.
		e.resumeInc = gap
		*budget -= gap
		return 0
	}
	p := uint16(min(100, max(1, (100**budget+e.lastReduction-1)/e.lastReduction)))
	e.resumeInc = e.lastReduction * int64(p) / 100
	*budget -= e.resumeInc
	return p
}

// resume sends Resume (§5.5.1) to every flow of the queue this node slowed,
// once QD stayed below K_min for the hold time; flows held back by the
// rate limits are retried.
func (n *Node) resume(ps *portState, q *queueState, now engine.Time) {
	if !n.active(ps, q) || !q.cfg.Action.ResumeEnabled {
		return
	}
	retry := engine.Never
	level, mt, mv := n.severity(ps, q, TriggerResume)
	repeat := q.cfg.Action.RepeatResume
	param := q.cfg.Action.ResumePercent
	fill := q.fillResume()
	var budget int64
	if fill {
		budget = n.spareRate(ps, q, now)
	}
	if repeat {
		// The port mostly idle (the queue's flows arrive at less than
		// half its rate): a Resume of a percentage of the last cut
		// cannot bring back flows cut several times, so the repeated
		// Resume is §5.5.1's unconditional one (Parameter 0: back to the
		// original rate); the next episode's cut, one round trip per
		// flow apart, trims any overshoot.
		var in int64
		for _, e := range q.flows {
			in += e.rateAt(now, q.cfg.MeasurementInterval)
		}
		if 2*in < ps.rateBitsPerSec {
			param = 0
		}
	}
	for _, e := range q.flows {
		if !e.needResume {
			continue
		}
		iv := q.intervalFor(e)
		if fill {
			// The spare rate is measured now and counts the Resumes
			// on their way: a Resume need not wait for the last
			// notification's effect (a cut not landed yet only makes
			// the spare look smaller). The queue's own interval.
			iv = q.minInterval
		}
		if repeat && !fill && e.resumed && e.srcRTT > 0 {
			// The last Resume's effect shows here a round trip to the
			// source later.
			iv = max(iv, e.srcRTT+q.cfg.MeasurementInterval)
		}
		if e.hasCNP && now-e.lastCNP < iv {
			q.counters.SuppressedFlowInterval++
			retry = min(retry, e.lastCNP+iv)
			continue
		}
		if land := e.cutAt + e.srcRTT + 2*q.cfg.MeasurementInterval; fill && e.srcRTT > 0 && now < land {
			// The node's last cut has not reached its queue yet (the
			// flow's loop, and the interval that measures it): the
			// flow's arrival rate is still its rate before the cut.
			// Judged "back at its rate" on it, the flow lost its Resume
			// and, with one_cut_per_episode, the sparing of its marks
			// that the cut stands for: the receiver's CNPs for the
			// marks cut it again once the cut landed (a web-search mix:
			// a 30 MB flow under 5 Gb/s for 40 ms). Sized on it, a
			// Resume would count the cut as not taken. Judged when the
			// cut shows.
			q.counters.SuppressedFlowInterval++
			retry = min(retry, land)
			continue
		}
		if fill && !e.preCutUnknown && e.rateAt(now, q.cfg.MeasurementInterval) >= e.preCutRate {
			// Back at its rate before the node's first cut.
			e.needResume, e.resumed = false, false
			continue
		}
		if repeat && !fill && e.resumed && e.rateAt(now, q.cfg.MeasurementInterval) <= e.resumeRate {
			// The last Resume raised nothing: the source is back at its
			// rate or held elsewhere.
			e.needResume, e.resumed = false, false
			continue
		}
		if fill && (budget <= 0 || e.lastReduction <= 0 && !e.preCutUnknown) {
			// The port has no spare rate for it now: the next check
			// one measurement interval on, when the rates are new.
			retry = min(retry, now+q.cfg.MeasurementInterval)
			continue
		}
		if !n.takeToken(ps, now) {
			q.counters.SuppressedPortLimit++
			ps.counters.SuppressedPortLimit++
			retry = min(retry, now+engine.Second/engine.Time(ps.ic.CNPRatePerSec))
			continue
		}
		p := q.cfg.Action.ResumePercent
		if e.resumed {
			p = param
		}
		if fill {
			p = n.fillResume(ps, q, e, now, &budget)
		}
		m := wire.LongHaul{CongLevel: level, Action: wire.ActionResume, Parameter: p,
			SourceQP: e.key.SrcQP, MetricType: mt, MetricValue: mv}
		n.send(ps, q, e, &m, TriggerResume, false, now)
	}
	if retry != engine.Never {
		q.resumePending = true
		n.sim.At(retry, n, evResume, resumeArg(ps.idx, int(q.prio), q.resumeGen))
		return
	}
	if repeat {
		// The next Resume one hold after this one, if the queue stays
		// below K_min and some flow still has a ceiling to release.
		q.belowSince = now
		n.scheduleResume(ps, q)
	}
}

// drainResume is the Resume of a queue above K_min (ResumeOnDrain, with
// PerFlowRTT and RepeatResume), checked once per measurement interval: the flows it
// slowed are resumed as soon as the queue, at the port's spare rate, drains
// before the Resume's effect reaches the node, one round trip to the
// nearest of their sources later (§5.5.1's "congestion subsides" for the
// flows' loops, §5.8). Waiting for QD below K_min (32 KB at a port next to
// the receivers, K_max = K_base) idled the port for a whole loop after the
// queue had drained: a flow 10 ms away held at a fraction of its share for
// 10 ms more (traced on web-search mixes, docs/longhaul.md).
func (n *Node) drainResume(ps *portState, q *queueState, now engine.Time) {
	if !q.cfg.Action.ResumeOnDrain || !q.cfg.PerFlowRTT || !q.cfg.Action.RepeatResume || !q.cfg.Action.ResumeEnabled || !n.active(ps, q) {
		return
	}
	q.drainCheckAt = now + q.cfg.MeasurementInterval
	var loop engine.Time
	for _, e := range q.flows {
		if e.needResume && e.srcRTT > 0 && (loop == 0 || e.srcRTT < loop) {
			loop = e.srcRTT
		}
	}
	if loop <= ps.rtt {
		// No flow awaiting Resume is further than the port's own
		// round trip: K_min is the right threshold.
		return
	}
	spare := n.spareRate(ps, q, now)
	if spare <= 0 || q.qgrAt(now) > 0 ||
		float64(q.qd)*8 > float64(spare)*float64(loop)/float64(engine.Second) {
		return
	}
	n.resume(ps, q, now)
}

// shareResume is the Resume of a queue above K_min with PerFlowRTT and
// RepeatResume (fillResume), checked once per measurement interval: a flow
// this node holds is resumed, up to its max-min fair share of the port, as
// soon as the queue would be gone when the Resume lands (QD · 8 at most
// the port's spare rate times the shortest round trip to the sources of
// the flows awaiting Resume, the queue not growing): §5.5.1's "congestion
// subsides" judged on the flows' loop, as §5.8 allows. Only where the
// port's RTT_est is less than half that loop (a port next to the
// receivers, RTT_est its own link, K_min = K_base / 2): there K_min says
// nothing of the flows' timescale, and waiting for it, then for the last
// cut to land, held a 27 MB flow of docs/results.md's websearch-70 a
// loop late (docs/longhaul.md, "Recovery that follows the bottleneck");
// where RTT_est is the flows' round trip (configured) the K_min Resume
// stays. A flow whose arrival rate already shows a cut of this node
// (below its rate before the first) is judged on it while a later cut is
// still on its way; a flow whose rate does not show one yet waits for it,
// as in resume. The Resume is unconditional (Parameter 0) when the flow's
// rate before the node's first cut is within its share and the spare
// rate, else the percentage of the last cut that brings it there.
func (n *Node) shareResume(ps *portState, q *queueState, now engine.Time) {
	if !q.cfg.Action.ResumeEnabled || !n.active(ps, q) {
		return
	}
	q.drainCheckAt = now + q.cfg.MeasurementInterval
	var loop engine.Time
	for _, e := range q.flows {
		if e.needResume && e.srcRTT > 0 && (loop == 0 || e.srcRTT < loop) {
			loop = e.srcRTT
		}
	}
	if loop == 0 || loop < 2*ps.rtt {
		return
	}
	budget := n.spareRate(ps, q, now)
	if budget <= 0 || q.qgrAt(now) > 0 ||
		float64(q.qd)*8 > float64(budget)*float64(loop)/float64(engine.Second) {
		return
	}
	iv := q.cfg.MeasurementInterval
	share := n.fairShare(q, now, ps.rateBitsPerSec)
	level, mt, mv := n.severity(ps, q, TriggerResume)
	// The flows to resume now, and how far each may rise: to its rate
	// before the node's first cut, at most its share.
	held, rates, caps := n.held[:0], n.demands[:0], n.caps[:0]
	for _, e := range q.flows {
		if !e.needResume || e.srcRTT <= 0 || e.lastReduction <= 0 || e.preCutRate <= 0 ||
			e.hasCNP && now-e.lastCNP < q.minInterval {
			continue
		}
		rate := e.rateAt(now, iv)
		if now < e.cutAt+e.srcRTT+2*iv && rate >= e.preCutRate {
			continue // its first cut has not shown yet
		}
		if landed := now >= e.cutAt+e.srcRTT+2*iv; !landed && e.srcRate > 0 && e.srcRate < rate {
			// A later cut is on its way: the flow is judged on the rate
			// it left the source at, not on the rate still arriving.
			rate = e.srcRate
		}
		if c := min(e.preCutRate, share); c > rate {
			held, rates, caps = append(held, e), append(rates, rate), append(caps, c)
		}
	}
	n.held, n.demands, n.caps = held, rates, caps
	// The spare rate shared max-min among them (the slowest raised
	// first), not handed out in the queue's flow order: the first flow
	// of the list took most of it and the second stayed slow
	// (docs/longhaul.md, "Fair Resume").
	fill := fillLevel(rates, caps, budget)
	for i, e := range held {
		inc := min(caps[i], max(rates[i], fill)) - rates[i]
		if inc <= 0 {
			continue
		}
		var p uint16
		if e.preCutRate-rates[i] <= inc {
			e.resumeInc = e.preCutRate - rates[i]
		} else {
			// A percentage of what the last cut took at the source.
			red := e.lastReduction
			if e.srcCut > 0 {
				red = min(red, e.srcCut)
			}
			p = uint16(min(100, max(1, (100*inc+red-1)/red)))
			e.resumeInc = min(inc, red*int64(p)/100)
		}
		if !n.takeToken(ps, now) {
			q.counters.SuppressedPortLimit++
			ps.counters.SuppressedPortLimit++
			return
		}
		m := wire.LongHaul{CongLevel: level, Action: wire.ActionResume, Parameter: p,
			SourceQP: e.key.SrcQP, MetricType: mt, MetricValue: mv}
		n.send(ps, q, e, &m, TriggerResume, false, now)
	}
}

// fillLevel is the water level of budget poured over flows at rates,
// each rising at most to its cap (cap > rate): the level f with
// sum(min(cap, max(rate, f)) - rate) = budget, or the highest cap when
// every flow reaches its cap within the budget. The max-min fair division
// of a spare rate among the flows a node resumes.
func fillLevel(rates, caps []int64, budget int64) int64 {
	var lo, hi int64
	for i := range rates {
		if i == 0 || rates[i] < lo {
			lo = rates[i]
		}
		hi = max(hi, caps[i])
	}
	given := func(f int64) int64 {
		var sum int64
		for i, r := range rates {
			sum += min(caps[i], max(r, f)) - r
		}
		return sum
	}
	if budget <= 0 || len(rates) == 0 {
		return lo
	}
	if given(hi) <= budget {
		return hi
	}
	// given is non-decreasing in f: the highest f with given(f) <= budget.
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if given(mid) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// fairShare is the max-min fair share of total among the queue's flows
// that still send (stopped), each demanding its arrival rate or, for a
// flow this node holds (awaiting Resume), its rate before the node's first
// cut: the level s with sum(min(demand, s)) = total, or total when every
// demand fits.
func (n *Node) fairShare(q *queueState, now engine.Time, total int64) int64 {
	d := n.demands[:0]
	for _, f := range q.flows {
		if q.stopped(f, now) {
			continue
		}
		r := f.rateAt(now, q.cfg.MeasurementInterval)
		if f.needResume {
			r = max(r, f.preCutRate)
		}
		if r > 0 {
			d = append(d, r)
		}
	}
	slices.Sort(d)
	n.demands = d
	rem := total
	for i, r := range d {
		if k := int64(len(d) - i); r*k > rem {
			return rem / k
		}
		rem -= r
	}
	return total
}

// stopped reports whether flow f has stopped sending to this queue: no
// packet of it for longer than its loop (its round trip to its source, or
// two measurement intervals while that is not learnt), unless this node
// paused it (it sends again at its Resume). A flow stays on its queue's
// list until the idle timeout ages it out (60 s by default), and one this
// node held kept demanding its rate before the node's first cut in
// fairShare after its last packet had passed: the share of the flows
// still sending came out too small, and shareResume held them below it
// (docs/longhaul.md, "The share and the first interval (session 14)").
// A flow held near DCQCN's floor (1 Mb/s: a packet every few ms) may
// look stopped between two packets; it then demands nothing, as its
// arrival rate would say anyway, and shareResume still resumes it.
func (q *queueState) stopped(f *flowEntry, now engine.Time) bool {
	if f.needResume && f.lastAction == wire.ActionPause {
		return false
	}
	idle := f.srcRTT
	if idle <= 0 {
		idle = 2 * q.cfg.MeasurementInterval
	}
	return now-f.lastSeen > idle
}
