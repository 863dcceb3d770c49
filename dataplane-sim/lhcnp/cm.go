package lhcnp

import (
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"

	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// ObserveCM decodes an Ethernet frame carrying an IB CM MAD (as
// wire.Encoder.CM writes it) and applies it to the flow table: an entry
// appears in both directions when a REQ/REP/RTU exchange completes and
// both are removed on a DREQ (white paper §2.2.1 and §2.2.3). The node
// calls it for every MAD netsim's hosts exchange through its ports
// (OnEnqueue); call it for CM frames from elsewhere (a capture, a lab wire).
func (n *Node) ObserveCM(frame []byte) error {
	n.counters.CMFrames++
	if err := n.dec.Decode(frame, &n.frame); err != nil {
		n.counters.CMErrors++
		return fmt.Errorf("lhcnp: cm frame: %w", err)
	}
	if n.frame.Kind != wire.KindCM {
		n.counters.CMErrors++
		return fmt.Errorf("lhcnp: cm frame: decoded as %v, not a cm mad", n.frame.Kind)
	}
	src, dst := n.frame.IPAddrs()
	n.LearnCM(src, dst, &n.frame.CM)
	return nil
}

// LearnCM applies one CM message sent from src to dst, following the
// correlation of wire.CMMessage.FlowQPNs.
func (n *Node) LearnCM(src, dst netip.Addr, m *wire.CMMessage) {
	if !n.cfg.FlowTable.LearnFromCM {
		return
	}
	t := &n.ft
	limit := cmPendingLimit(n.cfg.FlowTable.MaxEntries)
	switch m.AttrID {
	case wire.CMAttrREQ:
		if len(t.reqs) >= limit {
			t.counters.LearnFailures++
			return
		}
		t.reqs[cmKey{src, m.LocalCommID}] = cmConn{a: src, b: dst, qpA: m.LocalQPN, reqAt: n.sim.Now()}
	case wire.CMAttrREP:
		k := cmKey{dst, m.RemoteCommID}
		c, ok := t.reqs[k]
		if !ok || c.a != dst || c.b != src {
			return
		}
		delete(t.reqs, k)
		if len(t.reps) >= limit {
			t.counters.LearnFailures++
			return
		}
		c.qpB, c.repAt = m.LocalQPN, n.sim.Now()
		t.reps[cmKey{src, m.LocalCommID}] = c
	case wire.CMAttrRTU:
		k := cmKey{dst, m.RemoteCommID}
		c, ok := t.reps[k]
		if !ok || c.a != src || c.b != dst {
			return
		}
		delete(t.reps, k)
		// The session is established: learn both directions.
		now := n.sim.Now()
		n.learnCMFlow(FlowKey{Src: c.a, Dst: c.b, SrcQP: c.qpA, DstQP: c.qpB}, now-c.repAt)
		n.learnCMFlow(FlowKey{Src: c.b, Dst: c.a, SrcQP: c.qpB, DstQP: c.qpA}, c.repAt-c.reqAt)
	case wire.CMAttrREJ:
		delete(t.reqs, cmKey{dst, m.RemoteCommID})
		delete(t.reps, cmKey{dst, m.RemoteCommID})
	case wire.CMAttrDREQ:
		e := t.byData[dataKey{src, dst, m.RemoteQPN}]
		if e == nil {
			return
		}
		rev := t.m[FlowKey{Src: dst, Dst: src, SrcQP: e.key.DstQP, DstQP: e.key.SrcQP}]
		n.removeCM(e)
		if rev != nil {
			n.removeCM(rev)
		}
	}
}

// learnCMFlow learns (or refreshes) the flow k of a completed exchange
// and records srcRTT, the node's round trip to k's source.
func (n *Node) learnCMFlow(k FlowKey, srcRTT engine.Time) {
	now := n.sim.Now()
	e := n.ft.m[k]
	if e != nil {
		n.ft.touch(e, now)
	} else if e = n.insert(k, LearnedFromCM, now); e == nil {
		return
	}
	if srcRTT > 0 {
		e.srcRTT, e.rttFromRate, e.probing = srcRTT, false, false
	}
}

func (n *Node) removeCM(e *flowEntry) {
	n.ft.unlink(e)
	n.ft.counters.RemovedByCM++
	n.dropEntry(e, EventFlowRemoved, n.sim.Now())
}
