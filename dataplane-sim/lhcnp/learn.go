package lhcnp

// Flow learning on the node (§5.2). A data packet learns or refreshes its
// flow's entry (learnData); the entry sits on the flow list of the egress
// queue it was last seen in, with the bytes it has queued there, so that
// the triggers can rank a queue's flows. Entries leave the table by
// replacement when it is full, by a smaller MaxEntries (ApplyConfig), by
// idle aging (age) or by a CM disconnect (cm.go), each through dropEntry,
// which reports the event. The table itself, its two lists and its
// replacement policy are flowtable.go.

import (
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// lookupData finds the entry of a data packet.
func (n *Node) lookupData(p *netsim.Packet) *flowEntry {
	e, _ := n.lookupIDs(p)
	return e
}

// lookupIDs finds the entry of a data packet through the table's cache by
// node and QP numbers (flowTable.ids), then by its key, which it returns
// when it had to make it.
func (n *Node) lookupIDs(p *netsim.Packet) (*flowEntry, FlowKey) {
	ik := idKey{src: p.Src, dst: p.Dst, srcQP: p.SrcQP, dstQP: p.DestQP()}
	s := ik.slot()
	if c := &n.ft.ids[s]; c.e != nil && c.k == ik {
		return c.e, FlowKey{}
	}
	k := FlowKey{Src: n.addrOf(p.Src), Dst: n.addrOf(p.Dst), SrcQP: p.SrcQP, DstQP: p.DestQP()}
	e := n.ft.m[k]
	if e != nil && k.Src.IsValid() && k.Dst.IsValid() {
		n.ft.cacheIDs(s, ik, e)
	}
	return e, k
}

// learnData refreshes (or learns) the entry of a data packet (§5.2: MUST
// be updated upon each matching packet).
func (n *Node) learnData(ps *portState, prio int, p *netsim.Packet, now engine.Time) *flowEntry {
	e, k := n.lookupIDs(p)
	if e == nil {
		if !n.cfg.FlowTable.LearnFromData {
			return nil
		}
		e = n.insert(k, LearnedFromData, now)
		if e == nil {
			return nil
		}
	}
	n.ft.touch(e, now)
	e.srcNode = p.Src
	size := int64(p.SizeBytes)
	e.packets++
	e.bytes += size
	if e.port != int32(ps.idx) || e.prio != uint8(prio) || e.qIdx < 0 {
		n.moveFlow(e, ps, prio)
	}
	e.rollRate(now, ps.queues[prio].cfg.MeasurementInterval, n.obsWindow(ps))
	e.winBytes += size
	if p.ECN == netsim.ECNCE {
		// This port marks at dequeue (netsim's default), after this
		// call: the mark is a node's before this one. A port that marks
		// at enqueue has marked already, and its own mark counts too
		// (UpstreamFirstMarked then waits as without it).
		e.markedAt = now
	}
	return e
}

// insert learns k, handling a replaced entry.
func (n *Node) insert(k FlowKey, from LearnSource, now engine.Time) *flowEntry {
	e, evicted := n.ft.insert(k, now, n.cfg.FlowTable.MaxEntries, n.cfg.FlowTable.Replacement)
	if evicted != nil {
		n.dropEntry(evicted, EventFlowEvicted, now)
	}
	if e == nil {
		return nil
	}
	e.from = from
	if from == LearnedFromCM {
		n.ft.counters.LearnedCM++
	}
	if id, ok := n.nodeOf(k.Src); ok {
		e.srcNode = id
	}
	n.emit(Event{Kind: EventFlowLearned, Time: now, Flow: k, Learned: from})
	return e
}

// dropEntry finishes an entry that left the table.
func (n *Node) dropEntry(e *flowEntry, kind EventKind, now engine.Time) {
	n.leaveQueue(e)
	n.emit(Event{Kind: kind, Time: now, Flow: e.key, Learned: e.from})
	n.ft.release(e)
}

// moveFlow puts e on the flow list of ps's queue prio.
func (n *Node) moveFlow(e *flowEntry, ps *portState, prio int) {
	n.leaveQueue(e)
	q := &ps.queues[prio]
	e.port, e.prio = int32(ps.idx), uint8(prio)
	e.qIdx = len(q.flows)
	e.queued = 0
	q.flows = append(q.flows, e)
}

// leaveQueue takes e off its queue's flow list.
func (n *Node) leaveQueue(e *flowEntry) {
	if e.qIdx < 0 || e.port < 0 {
		return
	}
	q := &n.ports[e.port].queues[e.prio]
	last := len(q.flows) - 1
	moved := q.flows[last]
	q.flows[e.qIdx] = moved
	moved.qIdx = e.qIdx
	q.flows[last] = nil
	q.flows = q.flows[:last]
	e.qIdx = -1
}

// scheduleAging arms the next idle-aging sweep.
func (n *Node) scheduleAging() {
	n.ageGen++
	t := n.cfg.FlowTable.IdleTimeout
	if t <= 0 {
		return
	}
	n.sim.After(max(t/4, engine.Microsecond), n, evAge, n.ageGen)
}

// age removes entries idle for longer than the idle timeout (§5.2: SHOULD
// be removed). The activity list is ordered by last packet, so only its
// tail is looked at.
func (n *Node) age(now engine.Time) {
	t := n.cfg.FlowTable.IdleTimeout
	if t <= 0 {
		return
	}
	for e := n.ft.lru.tail; e != nil && now-e.lastSeen >= t; e = n.ft.lru.tail {
		n.ft.unlink(e)
		n.ft.counters.Aged++
		n.dropEntry(e, EventFlowAged, now)
	}
}

// AgeNow runs the idle-aging sweep at once. State does not: it only
// leaves idle entries out.
func (n *Node) AgeNow() { n.age(n.sim.Now()) }
