package lhcnp

// The monitors of §5.3.1. The node watches its egress ports as their
// netsim.PortObserver: enqueues, dequeues and marks update the queue's
// depth (QD), its ECN marking rate (EMR, the share of a window's data
// packets marked CE) and its growth rate (QGR, the change of QD over a
// measurement interval), and drops are counted; an enqueue also learns or
// refreshes the packet's flow (learn.go) and evaluates the triggers
// (triggers.go). R_port and RTT_est, the inputs of K_max, come from the
// configuration, the port's link (watched as a netsim.LinkObserver) or a
// receiver's report (ReportRTT); a change reprograms the thresholds
// (recompute, node.go). emrAt and qgrAt give a monitor's value at any
// instant without changing it, so evaluate, severity and State read a
// monitor without disturbing its window.

import (
	"fmt"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// portRate returns R_port for ps under ic.
func (n *Node) portRate(ps *portState, ic *InterfaceConfig) int64 {
	if ic.PortRateBitsPerSec > 0 {
		return ic.PortRateBitsPerSec
	}
	return ps.pt.RateBitsPerSec()
}

// probeBytes is the size of the simulated RTT probe.
const probeBytes = 64

// rttFor returns RTT_est for ps under ic.
func (n *Node) rttFor(ps *portState, ic *InterfaceConfig) engine.Time {
	switch ic.RTTSource {
	case RTTProbed:
		l := ps.pt.Out()
		return 2*l.Delay() + 2*engine.TxTime(probeBytes, l.RateBitsPerSec())
	case RTTReported:
		if ps.reportedRTT > 0 {
			return ps.reportedRTT
		}
	}
	return ic.RTTEst
}

// LinkChanged re-reads the port's rate and delay and recomputes K_max at
// once. The node watches its ports' links itself (netsim.LinkObserver), so
// this is needed only after changes netsim does not report.
func (n *Node) LinkChanged(pt *netsim.Port) {
	if ps := n.portOf(pt); ps != nil {
		_ = n.recompute(ps, n.sim.Now())
	}
}

// ReportRTT sets the receiver-reported RTT_est of the port (used when its
// RTT source is RTTReported) and recomputes K_max.
func (n *Node) ReportRTT(pt *netsim.Port, rtt engine.Time) error {
	ps := n.portOf(pt)
	if ps == nil {
		return fmt.Errorf("lhcnp: port %s is not on switch %s", pt.Name(), n.sw.Name())
	}
	if rtt <= 0 {
		return fmt.Errorf("lhcnp: port %s: reported rtt %v must be positive", pt.Name(), rtt)
	}
	ps.reportedRTT = rtt
	return n.recompute(ps, n.sim.Now())
}

// linkWatch recomputes a port's thresholds when netsim changes the rate or
// delay of its egress link (§5.3.2: upon RTT_est or rate changes).
type linkWatch struct {
	n  *Node
	ps *portState
}

// OnLinkChange implements netsim.LinkObserver.
func (w linkWatch) OnLinkChange(*netsim.Link) { _ = w.n.recompute(w.ps, w.n.sim.Now()) }

// OnEnqueue implements netsim.PortObserver: flow learning and refresh,
// per-queue counters, the QD and QGR monitors and the triggers.
func (n *Node) OnEnqueue(pt *netsim.Port, p *netsim.Packet, qBytes int64) {
	ps := n.portOf(pt)
	if ps == nil {
		return
	}
	now := n.sim.Now()
	prio := int(p.Prio)
	q := &ps.queues[prio]
	q.qd, q.qdT = qBytes, now
	q.peak.observe(now, qBytes)
	if p.Kind == netsim.KindRoCE && p.Opcode().IsData() {
		if p.DestQP() != wire.GSIQP {
			size := int64(p.SizeBytes)
			q.counters.Packets++
			q.counters.Bytes += size
			if e := n.learnData(ps, prio, p, now); e != nil {
				e.queued += size
			}
		} else if fr := p.Frame(); fr != nil {
			// A MAD to QP1: the CM exchange that a real node learns from
			// (decode errors are counted in CMErrors).
			_ = n.ObserveCM(fr)
		}
	}
	n.rollQGR(q, now)
	if qBytes >= q.kmin && q.below {
		q.below = false
		q.resumeGen++
		q.resumePending = false
	}
	n.evaluate(ps, q, now)
}

// OnDequeue implements netsim.PortObserver.
func (n *Node) OnDequeue(pt *netsim.Port, p *netsim.Packet, qBytes int64) {
	ps := n.portOf(pt)
	if ps == nil {
		return
	}
	now := n.sim.Now()
	q := &ps.queues[p.Prio]
	q.qd, q.qdT = qBytes, now
	if p.Kind == netsim.KindRoCE && p.Opcode().IsData() && p.DestQP() != wire.GSIQP {
		n.rollEMR(q, now)
		q.emrPkts++
		if e := n.lookupData(p); e != nil {
			e.queued = max(0, e.queued-int64(p.SizeBytes))
		}
	}
	n.rollQGR(q, now)
	if q.cfg.Action.ResumeOnDrain && !q.below && now >= q.drainCheckAt {
		n.drainResume(ps, q, now)
	} else if q.fillResume() && !q.below && now >= q.drainCheckAt {
		n.shareResume(ps, q, now)
	}
	if qBytes < q.kmin && !q.below {
		q.below = true
		q.episode++
		q.belowSince = now
		q.resumeGen++
		q.resumePending = false
		n.scheduleResume(ps, q)
	}
}

// OnMark implements netsim.PortObserver: the EMR monitor.
func (n *Node) OnMark(pt *netsim.Port, p *netsim.Packet, qBytes int64) {
	ps := n.portOf(pt)
	if ps == nil {
		return
	}
	q := &ps.queues[p.Prio]
	n.rollEMR(q, n.sim.Now())
	q.emrMarks++
	q.counters.ECNMarked++
}

// AllowMark implements netsim.MarkFilter: with OneCutPerEpisode, a data
// packet of a flow this queue cut in the current episode, or whose cut it
// has not resumed yet, or that it defers to an upstream node for, is not
// marked (its sender is slowed by a node; the receiver's CNP for the mark
// would cut it a second time); with OneCutInFlight too, only while the
// node's last cut of the flow is on its way (its per-flow interval since).
// Otherwise every mark the port's ECN configuration calls for is applied,
// as §5.4 asks.
func (n *Node) AllowMark(pt *netsim.Port, p *netsim.Packet) bool {
	ps := n.portOf(pt)
	if ps == nil {
		return true
	}
	q := &ps.queues[p.Prio]
	if !q.cfg.OneCutPerEpisode || !n.active(ps, q) {
		return true
	}
	if e := n.lookupData(p); e != nil && int(e.port) == ps.idx && (e.cutEpisode == q.episode+1 || e.needResume && q.cfg.Action.ResumeEnabled) {
		if q.cfg.OneCutInFlight && n.sim.Now() >= e.cutAt+q.intervalFor(e) {
			return true // the cut has landed: the queue above K_min is marked as §5.4 asks
		}
		q.counters.MarksSpared++
		return false
	}
	return true
}

// OnDrop implements netsim.PortObserver.
func (n *Node) OnDrop(pt *netsim.Port, p *netsim.Packet, qBytes int64) {
	ps := n.portOf(pt)
	if ps == nil {
		return
	}
	q := &ps.queues[p.Prio]
	if pt.Out().Up() {
		// A buffer overflow: the port drops for its link being down
		// before it looks at the buffer, and counts those in its
		// DownDropPackets. Only an overflow is a tail drop for
		// OverloadCut's severity (severe): a link's failure is not
		// congestion to cut flows for.
		q.counters.Drops++
		q.dropAt, q.dropped = n.sim.Now(), true
	}
	if p.Kind != netsim.KindRoCE || !p.Opcode().IsData() || p.DestQP() == wire.GSIQP {
		return
	}
	// A dropped packet arrived all the same: a flow's arrival rate
	// (§5.3.1) counts it. Counting only what the full buffer accepted,
	// the flows of a queue at its buffer seemed to arrive at the port's
	// rate, their rates to have fallen (an upstream response, for §5.7's
	// suppression) and loopCut found nothing to cut (a generated far-end,
	// seed 1002: 78 Gb/s into 11.7 Gb/s, the buffer full for 15 ms).
	if e := n.lookupData(p); e != nil && e.port == int32(ps.idx) && e.prio == p.Prio {
		e.rollRate(n.sim.Now(), q.cfg.MeasurementInterval, n.obsWindow(ps))
		e.winBytes += int64(p.SizeBytes)
	}
}

// rollQGR closes the measurement interval when it is over: QGR is the
// change of QD over the interval, in bytes per second (§5.3.1).
func (n *Node) rollQGR(q *queueState, now engine.Time) {
	if now-q.qgrT < q.cfg.MeasurementInterval {
		return
	}
	q.qgr = (q.qd - q.qgrQD) * int64(engine.Second) / int64(now-q.qgrT)
	q.qgrT, q.qgrQD = now, q.qd
}

// qgrAt is the QGR State reports at now, changing nothing: 0 when the
// queue has not changed for a whole interval (no packet since: the growth
// over the last interval is none), otherwise the last interval's, or,
// once an interval is over, what rollQGR would compute then. So an idle
// queue does not keep reporting the growth of its last busy interval.
func (q *queueState) qgrAt(now engine.Time) int64 {
	iv := q.cfg.MeasurementInterval
	switch dt := now - q.qgrT; {
	case now-q.qdT >= iv:
		return 0
	case dt < iv:
		return q.qgr
	default:
		return (q.qd - q.qgrQD) * int64(engine.Second) / int64(dt)
	}
}

// rollEMR closes the EMR window when it is over: EMR is the share of the
// window's data packets this port marked CE (§5.3.1).
func (n *Node) rollEMR(q *queueState, now engine.Time) {
	if now-q.emrT < q.cfg.EMRWindow {
		return
	}
	q.emr = q.emrAt(now)
	q.emrT, q.emrPkts, q.emrMarks = now, 0, 0
}

// emrAt is the EMR the node has at now, changing nothing: the last
// window's, or, once a window is over, what rollEMR would compute then (0
// after a whole window without traffic). State reports it, so an idle port
// does not keep reporting the marking rate of its last busy window.
func (q *queueState) emrAt(now engine.Time) float64 {
	switch d := now - q.emrT; {
	case d < q.cfg.EMRWindow:
		return q.emr
	case d >= 2*q.cfg.EMRWindow || q.emrPkts == 0:
		// A whole window without traffic in between.
		return 0
	}
	return 100 * float64(q.emrMarks) / float64(q.emrPkts)
}
