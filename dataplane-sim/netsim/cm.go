package netsim

import (
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// The IB CM exchange of a flow (IBA Vol 1 ch. 12), as RoCEv2 RNICs run it:
// MADs in UD SEND_ONLY packets to QP1, encoded whole by wire.Encoder.CM and
// carried in Packet.Frame hop by hop, so that switches (PortObserver) see
// them as a congestion-aware node would.
//
//	sender                      receiver
//	  REQ  (LocalQPN = QP)  -->
//	                        <--  REP (LocalQPN = peer QP)
//	  RTU                   -->           data may start at the sender here
//	  data ...
//	  (last ACK)
//	  DREQ (RemoteQPN = peer) -->
//	                        <--  DREP
//
// Communication IDs come from a per-host counter and transaction IDs from
// the node id and a counter: deterministic, unique per host (a switch keys
// them by address, as wire.CMMessage.FlowQPNs explains). A REQ that gets
// no REP within the CM response timeout it announces (about 4.3 s, as
// Linux rdma_cm) is sent again, the same MAD, up to cmMaxRetries times: a
// link down (a neighbour process restarting, netsim.Link.SetUp) or a drop
// delays a connection instead of killing it. The receiver answers a
// repeated REQ with its REP again. Other MADs are not retried; a lost RTU
// does not matter (the receiver takes data in any state).

// cmEnd is one side's state of a flow's CM connection.
type cmEnd struct {
	on            bool // the flow connects with CM
	state         cmState
	local, remote uint32 // communication IDs: this side's, the peer's
	connectedAt   engine.Time
	reqTID        uint64 // the REQ's transaction ID, kept for its retries
	retries       int    // REQs sent again
}

type cmState uint8

const (
	cmIdle        cmState = iota
	cmReqSent             // sender: REQ out, waiting for the REP
	cmRepSent             // receiver: REP out, waiting for the RTU
	cmEstablished         // REP received (sender) or RTU received (receiver)
	cmDreqSent            // sender: DREQ out, waiting for the DREP
	cmClosed
)

// CM MAD values the hosts write. They are what Linux rdma_cm sends by
// default; of the timeouts only the REQ's response timeout is modelled
// (cmResponseTime).
const (
	cmResponseTimeout = 20 // 4.096 µs x 2^20, about 4.3 s (CMA_CM_RESPONSE_TIMEOUT)
	cmMaxRetries      = 15 // CMA_MAX_CM_RETRIES
	cmRetryCount      = 7
	cmRNRRetryCount   = 7
	cmResources       = 16 // responder resources and initiator depth
	cmServiceID       = 0x0000000001064000
)

// cmResponseTime is the CM response timeout the REQ announces: 4.096 µs x
// 2^cmResponseTimeout.
const cmResponseTime = 4096 * engine.Nanosecond << cmResponseTimeout

// ConnectedAt returns when the QP's connection was established (the REP
// arrived; for a flow without CM, its start), or -1 before that.
func (q *QP) ConnectedAt() engine.Time { return q.cm.connectedAt }

func (h *Host) newCommID() uint32 {
	h.nextCommID++
	if h.nextCommID == 0 {
		h.nextCommID++
	}
	return h.nextCommID
}

func (h *Host) newTID() uint64 {
	h.nextTID++
	return uint64(h.id)<<32 | h.nextTID&0xFFFFFFFF
}

// caGUID is the host's channel adapter GUID: the node id in a locally
// administered EUI-64.
func (h *Host) caGUID() uint64 { return 0x0200_00FF_FE00_0000 | uint64(h.id)&0xFFFFFF }

func gid(a netip.Addr) [16]byte { return a.As16() }

// pathMTU is the IBA encoding of an MTU (1 = 256 ... 5 = 4096).
func pathMTU(mtu int32) uint8 {
	enc := uint8(1)
	for m := int32(512); m <= mtu && enc < 5; m <<= 1 {
		enc++
	}
	return enc
}

// sendCM encodes m in a pooled frame and queues it on the NIC port.
func (h *Host) sendCM(dst NodeID, prio uint8, flow FlowID, m *wire.CMMessage) {
	n := h.net
	peer := n.nodes[dst]
	p := h.part.pool.get()
	b := h.part.pool.frameBuf(p)
	a := wire.Addressing{SrcIP: h.addr, DstIP: peer.Addr(), SrcPort: 0xC000 | wire.GSIQP}
	size, err := (&wire.Encoder{}).CM(b, &a, h.gsiPSN, m)
	if err != nil {
		// Addresses were checked by AddFlow and every field is in range:
		// a bug here.
		panic("netsim: cm: " + err.Error())
	}
	p.frameLen = uint16(size)
	p.Kind = KindRoCE
	p.SizeBytes = LinkBytes(size)
	p.Src, p.Dst = h.id, dst
	p.Flow = flow
	p.SrcQP = wire.GSIQP
	p.Prio = prio
	p.ECN = ECNNotECT
	ipLen := wire.IPv4MinLen
	if !h.addr.Is4() {
		ipLen = wire.IPv6Len
	}
	off := wire.EthernetLen + ipLen + wire.UDPLen
	p.HdrLen = uint8(copy(p.Hdr[:wire.BTHLen+wire.DETHLen], b[off:size]))
	h.gsiPSN = (h.gsiPSN + 1) & 0xFFFFFF
	h.stats.CMTx++
	h.port.enqueue(p)
}

// sendREQ opens the connection of a sender QP.
func (q *QP) sendREQ() {
	h := q.host
	q.cm.local = h.newCommID()
	q.cm.reqTID = h.newTID()
	q.cm.state = cmReqSent
	h.cmSend[q.cm.local] = q
	q.transmitREQ()
}

// retryREQ sends the REQ again if its REP has not come (the timer of the
// REQ with communication ID commID).
func (q *QP) retryREQ(commID uint32) {
	if q.cm.state != cmReqSent || q.cm.local != commID || q.cm.retries >= cmMaxRetries {
		return
	}
	q.cm.retries++
	q.transmitREQ()
}

// transmitREQ sends the QP's REQ and arms its response timer.
func (q *QP) transmitREQ() {
	h := q.host
	peer := h.net.nodes[q.dst].(*Host)
	m := wire.CMMessage{
		Method: wire.MethodSend, TransactionID: q.cm.reqTID, AttrID: wire.CMAttrREQ,
		LocalCommID: q.cm.local, ServiceID: cmServiceID,
		LocalQPN: q.QPN, StartingPSN: 0, LocalCAGUID: h.caGUID(),
		ResponderResources: cmResources, InitiatorDepth: cmResources,
		RemoteCMResponseTimeout: cmResponseTimeout, LocalCMResponseTimeout: cmResponseTimeout,
		TransportServiceType: 0, RetryCount: cmRetryCount, RNRRetryCount: cmRNRRetryCount,
		PKey: 0xFFFF, PathMTU: pathMTU(h.cfg.MTUBytes), MaxCMRetries: cmMaxRetries,
		PrimaryLocalGID: gid(h.addr), PrimaryRemoteGID: gid(peer.addr),
		PrimaryHopLimit: wire.DefaultTTL, PrimarySL: q.prio, PrimaryLocalACKTimeout: ackTimeoutExp(h.cfg.AckTimeout),
	}
	h.sendCM(q.dst, q.prio, q.flow.ID, &m)
	h.part.sim.After(cmResponseTime, (*cmRetry)(h), evQPCMRetry, uint64(q.cm.local))
}

// cmRetry runs a host's REQ response timers: the QP is found by the REQ's
// communication ID, so that a pending timer (4.3 s ahead) holds no QP and
// a retired flow's QPs are freed at once (a retired QP has left cmSend:
// its timer does nothing, as the QP's own would have, connected).
type cmRetry Host

func (c *cmRetry) Handle(_ uint32, arg uint64) {
	if q := c.cmSend[uint32(arg)]; q != nil {
		q.retryREQ(uint32(arg))
	}
}

// sendDREQ closes the connection of a sender QP whose flow completed.
func (q *QP) sendDREQ() {
	if q.cm.state != cmEstablished {
		return
	}
	h := q.host
	q.cm.state = cmDreqSent
	q.connected = false
	q.updateSending()
	m := wire.CMMessage{Method: wire.MethodSend, TransactionID: h.newTID(), AttrID: wire.CMAttrDREQ,
		LocalCommID: q.cm.local, RemoteCommID: q.cm.remote, RemoteQPN: q.PeerQPN}
	h.sendCM(q.dst, q.prio, q.flow.ID, &m)
}

// receiveCM runs the host's side of a CM MAD that arrived for QP1.
func (h *Host) receiveCM(p *Packet) {
	n := h.part
	f := &n.cmFrame
	if p.fb == 0 || n.cmDec.Decode(p.Frame(), f) != nil || f.Kind != wire.KindCM {
		h.stats.UnknownDropped++
		return
	}
	h.stats.CMRx++
	m := &f.CM
	now := n.sim.Now()
	switch m.AttrID {
	case wire.CMAttrREQ:
		r := h.recvByPeer[peerQP{p.Src, m.LocalQPN}]
		if r == nil {
			h.stats.UnknownDropped++
			return
		}
		if r.cm.state == cmIdle {
			r.cm.local = h.newCommID()
			h.cmRecv[r.cm.local] = r
		}
		r.cm.remote = m.LocalCommID
		if r.cm.state != cmEstablished {
			r.cm.state = cmRepSent
		}
		rep := wire.CMMessage{Method: wire.MethodSend, TransactionID: m.TransactionID, AttrID: wire.CMAttrREP,
			LocalCommID: r.cm.local, RemoteCommID: m.LocalCommID, LocalQPN: r.QPN, StartingPSN: 0,
			LocalCAGUID: h.caGUID(), ResponderResources: cmResources, InitiatorDepth: cmResources,
			TargetACKDelay: 15, RNRRetryCount: cmRNRRetryCount}
		h.sendCM(r.peer, r.prio, r.flow.ID, &rep)
	case wire.CMAttrREP:
		q := h.cmSend[m.RemoteCommID]
		if q == nil || q.cm.state != cmReqSent {
			return // a duplicate: the RTU went out already
		}
		q.cm.remote = m.LocalCommID
		q.cm.state = cmEstablished
		q.cm.connectedAt = now
		rtu := wire.CMMessage{Method: wire.MethodSend, TransactionID: m.TransactionID, AttrID: wire.CMAttrRTU,
			LocalCommID: q.cm.local, RemoteCommID: q.cm.remote}
		h.sendCM(q.dst, q.prio, q.flow.ID, &rtu)
		q.connected = true
		q.updateSending()
	case wire.CMAttrRTU:
		if r := h.cmRecv[m.RemoteCommID]; r != nil && r.cm.state == cmRepSent {
			r.cm.state = cmEstablished
			r.cm.connectedAt = now
		}
	case wire.CMAttrDREQ:
		r := h.cmRecv[m.RemoteCommID]
		if r == nil {
			h.stats.UnknownDropped++
			return
		}
		r.cm.state = cmClosed
		drep := wire.CMMessage{Method: wire.MethodSend, TransactionID: m.TransactionID, AttrID: wire.CMAttrDREP,
			LocalCommID: r.cm.local, RemoteCommID: m.LocalCommID}
		h.sendCM(r.peer, r.prio, r.flow.ID, &drep)
		delete(h.cmRecv, r.cm.local)
	case wire.CMAttrDREP:
		if q := h.cmSend[m.RemoteCommID]; q != nil && q.cm.state == cmDreqSent {
			q.cm.state = cmClosed
			delete(h.cmSend, q.cm.local)
			h.net.flowClosed(q)
		}
	default:
		h.stats.UnknownDropped++ // REJ, MRA: the hosts never send them
	}
}
