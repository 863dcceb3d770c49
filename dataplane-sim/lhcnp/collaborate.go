package lhcnp

// Collaborative suppression (§5.7). Each flow entry keeps its arrival rate
// per measurement interval and the peak rate of the observation window
// (rollRate, peak). Before a notification, collaborate defers it when the
// flow's rate fell by ArrivalRateDropPercent within the window (an upstream
// node acted; a fall this node caused itself does not count), lets an
// upstream peer on the flow's route respond first once per episode
// (UpstreamFirst, Peers; with UpstreamFirstMarked only for a flow that
// arrives CE-marked, a peer's sign of congestion), and escalates when the
// queue kept growing for a whole window while the node deferred.

import (
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// rollRate closes the flow's arrival-rate interval when it is over and
// keeps the peak rate of the observation window in two buckets.
func (e *flowEntry) rollRate(now, iv, win engine.Time) {
	if now-e.winStart < iv {
		return
	}
	dt := now - e.winStart
	e.rateBitsPerSec = e.winBytes * 8 * int64(engine.Second) / int64(dt)
	e.rateValid = true
	if e.probing {
		e.answer(now, dt)
	}
	e.winStart, e.winBytes = now, 0
	if now-e.peakStart >= win {
		if now-e.peakStart >= 2*win {
			e.peakPrev = 0
		} else {
			e.peakPrev = e.peakCur
		}
		e.peakCur = 0
		e.peakStart = now
	}
	e.peakCur = max(e.peakCur, e.rateBitsPerSec)
}

// answer checks, at the close of a measurement interval of dt ending at
// now, whether the flow's rate answered the node's cut (a fall by half the
// cut or more from the highest rate since the cut): its round trip to its
// source is then at most the time from the cut to the middle of the
// interval the fall showed in (the first of its packets sent at the new
// rate arrived within it). An interval that began before the cut cannot
// show it.
func (e *flowEntry) answer(now, dt engine.Time) {
	start := now - dt
	if start < e.probeAt {
		return
	}
	if 200*e.rateBitsPerSec > e.probeRate*(200-e.probeCut) {
		e.probeRate = max(e.probeRate, e.rateBitsPerSec)
		return
	}
	e.probing = false
	// An answer cannot come sooner than the round trip, but later: the
	// source's own increases can hide a small cut until a later fall. The
	// shortest answer is the estimate.
	rtt := max(start+dt/2-e.probeAt, 1)
	if !e.rttFromRate || rtt < e.srcRTT {
		e.srcRTT, e.rttFromRate = rtt, true
	}
}

// rateNow closes the interval if it is over and returns the arrival rate,
// counting the time since the last packet (a paused flow's rate falls to
// zero without packets). Only decisions call it: it changes the windows.
func (e *flowEntry) rateNow(now, iv, win engine.Time) int64 {
	e.rollRate(now, iv, win)
	return e.rateBitsPerSec
}

// rateAt is the rate rateNow would return at now, without closing the
// interval: what snapshots report.
func (e *flowEntry) rateAt(now, iv engine.Time) int64 {
	if dt := now - e.winStart; dt >= iv && dt > 0 {
		return e.winBytes * 8 * int64(engine.Second) / int64(dt)
	}
	return e.rateBitsPerSec
}

// partialRate is the arrival rate of a flow whose first measurement
// interval is not over: what arrived since it began, at most the port's
// rate (a few packets over a short span would say more).
func (e *flowEntry) partialRate(now engine.Time, portBitsPerSec int64) int64 {
	dt := now - e.winStart
	if dt <= 0 {
		return 0
	}
	return min(portBitsPerSec, e.winBytes*8*int64(engine.Second)/int64(dt))
}

// peak returns the highest arrival rate of the observation window.
func (e *flowEntry) peak() int64 { return max(e.peakCur, e.peakPrev) }

// obsWindow returns the collaborative observation window of a port.
func (n *Node) obsWindow(ps *portState) engine.Time {
	if w := n.cfg.Collaborative.ObservationWindow; w > 0 {
		return w
	}
	return ps.rtt
}

// deferWindow is §5.7's observation window for flow e (a deferral lasts
// one) and the loop within which a rate's fall may be this node's own cut.
func (n *Node) deferWindow(ps *portState, q *queueState, e *flowEntry) (win, loop engine.Time) {
	win, loop = n.obsWindow(ps), ps.rtt
	if q.cfg.PerFlowRTT && e.srcRTT > 0 {
		// This node's own cut, or an upstream node's, shows here within
		// the flow's round trip to its source: a fall within it is not
		// upstream control, and waiting longer for one is pointless.
		// The window and the upstream-priority wait are §5.7's (one
		// RTT_est of the port) when that is shorter: a wait of the
		// flow's whole round trip lets the queue grow for that long
		// before the first cut (at the far end, one WAN round trip of
		// the senders' excess, more than the buffer), and a window
		// that long takes the receivers' DCQCN cuts for upstream
		// control and defers again.
		loop = e.srcRTT + q.cfg.MeasurementInterval
		win = min(win, loop)
	}
	return win, loop
}

// deferringNow says whether the node defers flow e at now: a deferral
// lasts one window, and is looked at again only when the flow is picked
// for a notification, so a flow deferred in an episode that ended kept
// e.deferring for good.
func (n *Node) deferringNow(e *flowEntry, now engine.Time) bool {
	if !e.deferring || e.port < 0 || int(e.port) >= len(n.ports) {
		return false
	}
	ps := n.ports[e.port]
	win, _ := n.deferWindow(ps, &ps.queues[e.prio], e)
	return now-e.deferStart < win
}

// collaborate applies §5.7 to flow e: defer when its arrival rate fell
// within the observation window (an upstream node acted), escalate when
// the queue kept growing for a whole window while deferring.
func (n *Node) collaborate(ps *portState, q *queueState, e *flowEntry, now engine.Time) (deferNow, escalate bool) {
	cs := &n.cfg.Collaborative
	if !cs.Enabled {
		e.deferring, e.waiting = false, false
		return false, false
	}
	win, loop := n.deferWindow(ps, q, e)
	rate := e.rateNow(now, q.cfg.MeasurementInterval, win)
	peak := e.peak()
	dropped := e.rateValid && peak > 0 && rate*100 <= peak*int64(100-cs.ArrivalRateDropPercent)
	// A fall this node caused itself is not upstream control.
	own := e.hasCNP && now-e.lastCNP < win+loop
	if e.deferring {
		if now-e.deferStart < win {
			return true, false
		}
		if e.waiting {
			// The upstream-priority wait is over. A fall in the flow's
			// rate means the upstream node responded: defer to it from
			// now, as §5.7 says (escalating if the queue keeps growing);
			// otherwise respond.
			e.waiting, e.waitEnd = false, now
			if dropped && !own {
				e.deferStart, e.deferQD = now, q.qd
				return true, false
			}
			e.deferring = false
			return false, false
		}
		if q.qd > e.deferQD {
			// Worse after a whole window: upstream control is not enough.
			e.deferring = false
			return false, true
		}
		if dropped && !own {
			e.deferStart, e.deferQD = now, q.qd
			return true, false
		}
		e.deferring = false
		return false, false
	}
	// Upstream priority (§5.7): the first response of an episode (none
	// from this node and no wait within a window and an RTT_est) waits
	// for a congestion-aware node between the source and this one.
	wait := cs.UpstreamFirst && !own && !dropped && (e.waitEnd == 0 || now-e.waitEnd >= win+loop) &&
		(!cs.UpstreamFirstMarked || e.markedAt > 0 && now-e.markedAt < win) && n.upstreamPeer(e)
	if (dropped && !own) || wait {
		e.deferring, e.waiting = true, wait
		e.deferStart, e.deferQD = now, q.qd
		q.counters.Deferrals++
		n.emit(Event{Kind: EventDeferral, Time: now, Port: ps.name, Queue: q.prio, Flow: e.key, Upstream: wait})
		return true, false
	}
	return false, false
}

// Values of flowEntry.upstream.
const (
	upstreamUnknown uint8 = iota
	upstreamYes
	upstreamNo
)

// upstreamPeer reports whether a peer (Collaborative.Peers) lies on the
// flow's route from e's source to this node (its ECMP path), looking it up
// once per entry.
func (n *Node) upstreamPeer(e *flowEntry) bool {
	if len(n.cfg.Collaborative.Peers) == 0 {
		return false
	}
	if e.upstream == upstreamUnknown {
		e.upstream = upstreamNo
		if n.findUpstreamPeer(e) {
			e.upstream = upstreamYes
		}
	}
	return e.upstream == upstreamYes
}

// findUpstreamPeer walks the flow's route from e's source host towards
// its destination (Switch.RouteFlow: the ECMP path its packets take) until
// it reaches this switch. The routing tables are static during a run, so
// reading other switches' tables is safe on a network cut into
// partitions.
func (n *Node) findUpstreamPeer(e *flowEntry) bool {
	if e.srcNode < 0 {
		return false
	}
	h, ok := n.net.Node(e.srcNode).(*netsim.Host)
	if !ok || h.Port() == nil {
		return false
	}
	dst, ok := n.byAddr[e.key.Dst]
	if !ok {
		return false
	}
	found := false
	pt := h.Port()
	for range 64 {
		next := pt.Peer().Node()
		if next == netsim.Node(n.sw) {
			return found
		}
		sw, ok := next.(*netsim.Switch)
		if !ok {
			return false
		}
		for _, p := range n.cfg.Collaborative.Peers {
			if a := sw.Addr(); a.IsValid() && p.Contains(a) {
				found = true
			}
		}
		if pt = sw.RouteFlow(e.srcNode, dst, e.key.SrcQP, e.key.DstQP); pt == nil {
			return false
		}
	}
	return false
}
