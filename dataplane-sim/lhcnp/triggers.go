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

// evaluate checks the second-level conditions (§5.4) and fires when one
// holds and the queue is not holding off.
func (n *Node) evaluate(ps *portState, q *queueState, now engine.Time) {
	qd := q.qd > q.kmax
	// The EMR now, not that of the last window closed: its window closes
	// at a dequeue or a mark, so the first packet after an idle spell
	// longer than a window would find the marking rate of the last busy
	// window (after a burst, 100 %) and fire on it (§3: the fraction of
	// packets marked per unit time).
	emr := q.cfg.VECNPercent > 0 && q.emrAt(now) > q.cfg.VECNPercent
	qgr := q.cfg.VGrowthBytesPerSec > 0 && q.qgr > q.cfg.VGrowthBytesPerSec
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
	n.selectFlows(q)
	hold := now + q.cfg.MeasurementInterval
	for _, e := range n.sel {
		if iv := q.intervalFor(e); e.hasCNP && now-e.lastCNP < iv {
			q.counters.SuppressedFlowInterval++
			hold = min(hold, e.lastCNP+iv)
			continue
		}
		deferNow, escalate := n.collaborate(ps, q, e, now)
		if deferNow {
			q.counters.SuppressedDeferral++
			continue
		}
		m := wire.LongHaul{CongLevel: level, SourceQP: e.key.SrcQP, MetricType: mt, MetricValue: mv}
		// §5.5.1: Pause only for severe congestion. Severity for the
		// action is the queue's own (its depth against K_min and K_max),
		// whatever the trigger: a fast-growing or heavily marked queue
		// below K_max gets the default action, never a first Pause.
		m.Action, m.Parameter = policy(&q.cfg.Action, int(levelQD(q.qd, q.kmin, q.kmax)))
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
		if n.send(ps, q, e, &m, t, escalate, now) && escalate {
			q.counters.Escalations++
			n.emit(Event{Kind: EventEscalation, Time: now, Port: ps.name, Queue: q.prio, Flow: e.key,
				Action: m.Action, Parameter: m.Parameter, CongLevel: m.CongLevel})
		}
	}
	q.holdUntil = hold
}

// intervalFor is the minimum time between two notifications to e (§5.5):
// with PerFlowRTT its round trip to its source when learnt plus one
// measurement interval (when the last one's effect shows in QGR and the
// flow's arrival rate), else the queue's.
func (q *queueState) intervalFor(e *flowEntry) engine.Time {
	if q.cfg.PerFlowRTT && e.srcRTT > 0 {
		return e.srcRTT + q.cfg.MeasurementInterval
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
// had time to show their last change.
func (q *queueState) holdFor() engine.Time {
	if !q.cfg.PerFlowRTT || q.cfg.Action.ResumeHold > 0 {
		return q.resumeHold
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
		if repeat && e.resumed && e.srcRTT > 0 {
			// The last Resume's effect shows here a round trip to the
			// source later.
			iv = max(iv, e.srcRTT+q.cfg.MeasurementInterval)
		}
		if e.hasCNP && now-e.lastCNP < iv {
			q.counters.SuppressedFlowInterval++
			retry = min(retry, e.lastCNP+iv)
			continue
		}
		if repeat && e.resumed && e.rateAt(now, q.cfg.MeasurementInterval) <= e.resumeRate {
			// The last Resume raised nothing: the source is back at its
			// rate or held elsewhere.
			e.needResume, e.resumed = false, false
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
