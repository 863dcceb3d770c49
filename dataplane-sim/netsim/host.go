package netsim

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// NPConfig is the notification point (receiver) of DCQCN and the
// receiver's ACK policy.
type NPConfig struct {
	// CNPInterval is the minimum time between two CNPs for the same QP
	// (NVIDIA: min_time_between_cnps, firmware default 4 µs, our default;
	// the DCQCN paper's N = 50 µs is PaperNP). 0 sends a CNP for every
	// CE-marked packet.
	CNPInterval engine.Time
	// CNPPrio is the 802.1p priority of CNPs (NVIDIA cnp_802p_prio, default 6).
	CNPPrio uint8
	// Disabled turns CNP generation off (ECN marks are then ignored).
	Disabled bool
}

// HostConfig configures an RNIC.
type HostConfig struct {
	DCQCN DCQCNConfig
	NP    NPConfig
	// MTUBytes is the RDMA payload per packet (the IB path MTU): 4096 on
	// DCI links with jumbo frames, 1024 with a 1500-byte Ethernet MTU.
	MTUBytes int32
	// AckEveryPackets: the sender sets AckReq on every Nth packet and on
	// the last packet of each message; the receiver answers each with an
	// ACK. 0 means only the last packet of each message.
	AckEveryPackets uint32
	// Port is the configuration of the NIC port (egress queues for ACKs and
	// CNPs; PFC frames from the switch pause it regardless).
	Port PortConfig
	// GoBackN is RC loss recovery (go back N, as RC NICs do; on in
	// DefaultHostConfig): a receiver discards a data packet that is not
	// the next in PSN sequence, sends one NAK (PSN sequence error) for
	// each gap and acknowledges duplicates again; a sender resends from
	// the PSN a NAK names, and from its oldest unacknowledged packet when
	// no ACK has come for AckTimeout. Off, nothing is resent: a receiver
	// acknowledges past a gap and a flow that lost packets finishes
	// without them (docs/engine.md, "Loss recovery").
	GoBackN bool
	// AckTimeout is the local ACK timeout of go-back-N: IB's 4.096 µs ·
	// 2^t for the QP attribute timeout t (AckTimeoutFor); the default is
	// t = 17, 537 ms, what Linux rdma_cm gives an RC QP on RoCE
	// (DefaultAckTimeoutExp).
	AckTimeout engine.Time
}

// DefaultAckTimeoutExp is the QP timeout exponent of DefaultHostConfig's
// AckTimeout: 17 (4.096 µs · 2^17 = 537 ms), what Linux rdma_cm sets on an
// RC QP over RoCE, whose connection the hosts make as it does (REQ, REP,
// RTU): the path's packet lifetime is CMA_IBOE_PACKET_LIFETIME (16, cma.c)
// and the QP's timeout that lifetime + 1 (cm.c, cm_init_av_by_path and
// cm_init_qp_rts_attr). perftest's default without the CM is 14 (67.1 ms,
// DEF_QP_TIME), the model's default until session 33: on a WAN path whose
// queue holds more than about 60 ms, and for a sender cut so slow that 16
// packets (an ACK's worth) take longer, it expired without a loss (582 of
// 1996 runs of the tuner's evaluation resent packets none of which was
// dropped). The IB range is 1..31 (0 means none, which go-back-N cannot do
// without: a lost tail would never be resent).
const DefaultAckTimeoutExp = 17

// AckTimeoutFor returns the local ACK timeout for the QP attribute
// timeout t: 4.096 µs · 2^t (IBA 9.7.6.1.3).
func AckTimeoutFor(t int) engine.Time {
	return engine.Time(4096) * engine.Nanosecond << t
}

// ackTimeoutExp is the QP attribute timeout t whose timeout (AckTimeoutFor)
// is the first at or above d, 1..31: what a host's REQ announces as its
// local ACK timeout.
func ackTimeoutExp(d engine.Time) uint8 {
	t := 1
	for t < 31 && AckTimeoutFor(t) < d {
		t++
	}
	return uint8(t)
}

// DefaultHostConfig returns an RNIC with NVIDIA's DCQCN firmware defaults
// (reaction point DefaultDCQCN, at most one CNP per QP per 4 µs), a
// 4096-byte MTU, an ACK every 16 packets and go-back-N with a local ACK
// timeout of 537 ms (t = 17).
func DefaultHostConfig() HostConfig {
	return HostConfig{
		DCQCN:           DefaultDCQCN(),
		NP:              NPConfig{CNPInterval: 4 * engine.Microsecond, CNPPrio: 6},
		MTUBytes:        4096,
		AckEveryPackets: 16,
		AckTimeout:      AckTimeoutFor(DefaultAckTimeoutExp),
		GoBackN:         true,
	}
}

// Validate checks the configuration.
func (c *HostConfig) Validate() error {
	if c.MTUBytes <= 0 || c.MTUBytes > 1<<16 {
		return fmt.Errorf("mtu %d bytes out of range", c.MTUBytes)
	}
	if c.NP.CNPPrio >= NumPrio {
		return fmt.Errorf("cnp priority %d out of range", c.NP.CNPPrio)
	}
	if c.GoBackN && c.AckTimeout <= 0 {
		return fmt.Errorf("go-back-n needs a local ack timeout above 0, not %v", c.AckTimeout)
	}
	if err := c.DCQCN.Validate(); err != nil {
		return err
	}
	return c.Port.Validate()
}

// HostStats are an RNIC's counters.
type HostStats struct {
	CNPTx, CNPRx   int64
	AckTx, AckRx   int64 // ACKs, NAKs included
	NakTx, NakRx   int64 // NAKs (PSN sequence error; go-back-N)
	CMTx, CMRx     int64 // CM MADs sent and received (QP1)
	ControlRx      int64 // packets consumed by the ControlHandler
	UnknownDropped int64 // packets nobody handles (no QP, unknown opcode, undecodable MAD)
}

// Host is an RNIC with one port. Its sender QPs are DCQCN reaction points
// paced by their current rate; its receiver QPs are notification points that
// send CNPs for CE-marked packets and ACKs for AckReq packets.
type Host struct {
	net   *Network
	part  *partition
	id    NodeID
	name  string
	addr  netip.Addr
	cfg   HostConfig
	port  *Port
	ports []*Port
	// sendQPs: nil where a QP retired (dropSendQP), until compactSend;
	// sendGaps counts them.
	sendQPs  []*QP
	sendGaps int
	// sched is sendQPs without the QPs that have sent their last byte
	// (they never send again): the list nextPacket scans round robin, rr
	// its place. Without it a host that had run thousands of short flows
	// stepped over all of them for every packet. schedAt holds, for each,
	// the time from which it may send (Never while it may not), kept by
	// QP.resched, in a tree that finds the next ready one in O(log n);
	// schedPrio their priorities.
	sched     []*QP // nil: a QP gone (unschedule), until compactSched
	schedAt   minTree
	schedPrio []uint8
	schedGaps int // the nil slots of sched
	qps       map[uint32]*QP
	recv      map[uint32]*RecvQP
	rr        int
	nextQPN   uint32
	control   ControlHandler
	stats     HostStats
	retired   RetiredStats // the final counters of retired flows
	resv7     uint8        // SetReservedBits: what every new sending QP starts with

	// overheadBytes is RoCEOverheadBytes(addr), computed once with addr:
	// every data packet, ACK and CNP the host sends is sized from it.
	overheadBytes int32

	// CM: receiver QPs by (peer node, peer QPN) for incoming REQs; QPs by
	// this host's communication ID for the other messages.
	recvByPeer map[peerQP]*RecvQP
	cmSend     map[uint32]*QP
	cmRecv     map[uint32]*RecvQP
	nextCommID uint32
	gsiPSN     uint32
	nextTID    uint64

	// recvHot caches recv by the low bits of the QP number (direct
	// mapped: a host's QP numbers are allocated in sequence): a data
	// packet finds its receiver QP without hashing. An entry is always
	// one that recv holds; retiring a receiver QP clears its slot.
	recvHot [recvHotSlots]*RecvQP

	// rto is go-back-N's local ACK timeouts of the host's QPs (rto.go).
	rto rtoHeap
}

// recvHotSlots is the size of Host.recvHot, a power of two.
const recvHotSlots = 32

// recvQP returns the receiver QP numbered qpn, or nil.
func (h *Host) recvQP(qpn uint32) *RecvQP {
	slot := &h.recvHot[qpn&(recvHotSlots-1)]
	if r := *slot; r != nil && r.QPN == qpn {
		return r
	}
	r := h.recv[qpn]
	if r != nil {
		*slot = r
	}
	return r
}

type peerQP struct {
	node NodeID
	qpn  uint32
}

// ID returns the node id.
func (h *Host) ID() NodeID { return h.id }

// Name returns the node name.
func (h *Host) Name() string { return h.name }

// Addr returns the host's IP address.
func (h *Host) Addr() netip.Addr { return h.addr }

// Ports returns the NIC port (empty before Connect).
func (h *Host) Ports() []*Port { return h.ports }

// Port returns the NIC port, or nil before Connect.
func (h *Host) Port() *Port { return h.port }

// Network returns the network the host belongs to.
func (h *Host) Network() *Network { return h.net }

// Config returns the RNIC configuration.
func (h *Host) Config() HostConfig { return h.cfg }

// SetConfig replaces the RNIC configuration (DCQCN and NP parameters take
// effect at their next use). Call from the engine goroutine.
func (h *Host) SetConfig(c HostConfig) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("host %s: %w", h.name, err)
	}
	h.cfg = c
	if h.port != nil {
		h.port.setCfg(c.Port)
	}
	return nil
}

// SetControlHandler installs the hook for CNPs and unknown control packets.
func (h *Host) SetControlHandler(c ControlHandler) { h.control = c }

// Stats returns the RNIC counters.
func (h *Host) Stats() HostStats { return h.stats }

// QP returns the sender QP with number qpn, or nil.
func (h *Host) QP(qpn uint32) *QP { return h.qps[qpn] }

// RecvQP returns the receiver QP with number qpn, or nil.
func (h *Host) RecvQP(qpn uint32) *RecvQP { return h.recv[qpn] }

// SendQPs returns the host's sender QPs in creation order.
func (h *Host) SendQPs() []*QP {
	if h.sendGaps > 0 {
		h.compactSend()
	}
	return h.sendQPs
}

// dropSendQP takes a retired QP out of sendQPs, leaving a gap (closed up
// when the gaps are half the list, as sched's): closing each at once
// moved the rest of the list, quadratic in a host's flows added ahead.
func (h *Host) dropSendQP(q *QP) {
	i := q.sendIdx
	if i < 0 || i >= len(h.sendQPs) || h.sendQPs[i] != q {
		return
	}
	q.sendIdx = -1
	h.sendQPs[i] = nil
	h.sendGaps++
	for n := len(h.sendQPs); n > 0 && h.sendQPs[n-1] == nil; n-- {
		h.sendQPs = h.sendQPs[:n-1]
		h.sendGaps--
	}
	if h.sendGaps >= 32 && 2*h.sendGaps > len(h.sendQPs) {
		h.compactSend()
	}
}

// compactSend closes up the gaps of sendQPs, keeping the order.
func (h *Host) compactSend() {
	k := 0
	for _, q := range h.sendQPs {
		if q != nil {
			q.sendIdx = k
			h.sendQPs[k] = q
			k++
		}
	}
	clear(h.sendQPs[k:])
	h.sendQPs, h.sendGaps = h.sendQPs[:k], 0
}

func (h *Host) allocQPN() uint32 {
	for {
		h.nextQPN++
		n := h.nextQPN & 0xFFFFFF
		if n == 0 || n == 1 { // QP0/QP1 are special in IB
			continue
		}
		if h.qps[n] == nil && h.recv[n] == nil {
			return n
		}
	}
}

// Receive handles a packet arriving at the NIC.
func (h *Host) Receive(p *Packet, in *Port) {
	switch p.Kind {
	case KindPFC:
		in.handlePFC(p)
		return
	case KindRoCE:
		op := p.Opcode()
		switch {
		case op.IsData():
			h.receiveData(p)
		case op == wire.OpRCAck:
			h.stats.AckRx++
			if q := h.qps[p.DestQP()]; q == nil {
				h.stats.UnknownDropped++
			} else if isNAK(p) {
				h.stats.NakRx++
				q.onNak(p.PSN())
			} else {
				q.onAck(p.PSN())
			}
		case op == wire.OpCNP:
			h.stats.CNPRx++
			if h.control != nil && h.control.HandleControl(h, p) {
				h.stats.ControlRx++
			} else if q := h.qps[p.DestQP()]; q != nil {
				q.ApplyCNP()
			} else {
				h.stats.UnknownDropped++
			}
		default:
			h.other(p)
		}
	default:
		h.other(p)
	}
	if pool := &h.part.pool; !pool.tryPut(p) {
		pool.put(p)
	}
}

func (h *Host) other(p *Packet) {
	if h.control != nil && h.control.HandleControl(h, p) {
		h.stats.ControlRx++
		return
	}
	h.stats.UnknownDropped++
}

// receiveData is the notification point and the ACK responder.
func (h *Host) receiveData(p *Packet) {
	r := h.recvQP(p.DestQP())
	if r == nil {
		// QP1 is never a receiver QP (AddFlow refuses it): a MAD.
		if p.DestQP() == wire.GSIQP {
			h.receiveCM(p)
			return
		}
		h.stats.UnknownDropped++
		return
	}
	now := h.part.sim.Now()
	psn := p.PSN()
	inSeq := true
	if gap := (psn - r.expectPSN) & 0xFFFFFF; gap != 0 {
		if h.cfg.GoBackN {
			inSeq = false
		} else {
			r.lostPackets += int64(gap)
		}
	}
	if inSeq {
		r.expectPSN = (psn + 1) & 0xFFFFFF
		r.nakSent = false
		r.rxPackets++
		r.rxBytes += int64(p.PayloadBytes)
		if r.firstRx < 0 {
			r.firstRx = now
		}
		r.lastRx = now
	}
	// The notification point answers every CE-marked packet of the QP,
	// one discarded as out of sequence too: it crossed the congestion.
	if p.ECN == ECNCE {
		r.markedRx++
		np := &h.cfg.NP
		if !np.Disabled && (r.cnpTx == 0 || now-r.lastCNP >= np.CNPInterval) {
			r.lastCNP = now
			r.cnpTx++
			h.stats.CNPTx++
			c := h.answer(r, p, wire.CNPReservedLen, np.CNPPrio) // CNPBytes
			c.setBTH(wire.OpCNP, 0, wire.BTHBECN, r.PeerQPN, 0)  // PKey 0xFFFF
			h.port.enqueue(c)
		}
	}
	switch {
	case inSeq:
		if p.AckReq() {
			h.sendAck(r, p, psn, false)
		}
	case (psn-r.expectPSN)&0xFFFFFF < 1<<23:
		// Ahead of the sequence: packets before it were lost. One NAK
		// for the gap (IBA 9.7.5.1.2: the first out-of-sequence packet
		// is NAKed, the rest discarded silently until the expected one
		// comes); a lost NAK or resent packet is the sender's timeout's.
		r.outOfSeq++
		if !r.nakSent {
			r.nakSent = true
			r.lostPackets += int64((psn - r.expectPSN) & 0xFFFFFF)
			h.sendAck(r, p, r.expectPSN, true)
		}
	default:
		// A duplicate (resent after a timeout, or after a NAK that
		// crossed it): acknowledged again, as it asks, with the last
		// packet received in sequence.
		r.outOfSeq++
		if p.AckReq() {
			h.sendAck(r, p, (r.expectPSN-1)&0xFFFFFF, false)
		}
	}
}

// aethNAKSeqErr is the AETH syndrome of a NAK for a PSN sequence error
// (IBA 9.7.5.2.4: 011 00000).
const aethNAKSeqErr = 0x60

// sendAck sends the RC ACKNOWLEDGE for psn in answer to data packet p of
// r: an ACK (a BTH; its AETH, syndrome 0, is in its size), or with nak a
// NAK for a PSN sequence error whose PSN is the one expected (its AETH in
// Hdr[12:16]).
func (h *Host) sendAck(r *RecvQP, p *Packet, psn uint32, nak bool) {
	h.stats.AckTx++
	a := h.answer(r, p, wire.AETHLen, p.Prio)    // AckBytes
	a.setBTH(wire.OpRCAck, 0, 0, r.PeerQPN, psn) // PKey 0xFFFF
	if nak {
		h.stats.NakTx++
		binary.BigEndian.PutUint32(a.Hdr[wire.BTHLen:], aethNAKSeqErr<<24)
		a.HdrLen = wire.BTHLen + wire.AETHLen
	}
	h.port.enqueue(a)
}

// answer returns a packet of r's flow back to the sender of data packet
// p, a RoCE frame with body bytes after the BTH at priority prio, not
// ECN-capable; its BTH is the caller's.
func (h *Host) answer(r *RecvQP, p *Packet, body int32, prio uint8) *Packet {
	a := h.part.pool.tryGet()
	if a == nil {
		a = h.part.pool.get()
	}
	a.Kind = KindRoCE
	a.SizeBytes = frameAround(h.overheadBytes, body)
	a.Src, a.Dst = h.id, p.Src
	a.Flow = p.Flow
	a.SrcQP = r.QPN
	a.Prio = prio
	a.ECN = ECNNotECT
	return a
}

// isNAK reports whether RC ACKNOWLEDGE p is a NAK: an AETH whose
// syndrome's top bits are 011 (ACKs carry only their BTH).
func isNAK(p *Packet) bool {
	return p.HdrLen >= wire.BTHLen+wire.AETHLen && p.Hdr[wire.BTHLen]>>5 == aethNAKSeqErr>>5
}

// nextPacket picks the next data packet for the NIC port: round robin over
// the QPs whose pacer allows a send now. With none ready it arranges a
// wake-up for the earliest one and returns nil.
func (h *Host) nextPacket(pt *Port) *Packet {
	now := h.part.sim.Now()
	n := len(h.sched)
	// A QP's time (QP.readyAt) is Never before the connection, after the
	// last byte and while administratively stopped, else the pacer's next
	// send or the end of a pause, whichever is later.
	j, next := -1, engine.Never
	if pt.pausedN == 0 {
		// No priority held: the first ready QP from rr on, round
		// robin, or the earliest of all to wake up for. A host whose
		// earliest is later than now (a paced sender between packets:
		// most frame-done events of a host) has none to look for.
		if next = h.schedAt.min(); next <= now {
			next = engine.Never
			if j = h.schedAt.first(h.rr, now); j < 0 {
				j = h.schedAt.first(0, now)
			}
		}
	} else {
		for i := 0; i < n; i++ {
			k := h.rr + i
			if k >= n {
				k -= n
			}
			if pt.paused[h.schedPrio[k]] {
				continue
			}
			if t := h.schedAt.at(k); t <= now {
				j = k
				break
			} else if t < next {
				next = t
			}
		}
	}
	if j >= 0 {
		h.rr = j + 1
		if h.rr == n {
			h.rr = 0
		}
		return h.sched[j].makePacket(now)
	}
	if next != engine.Never {
		pt.scheduleWake(next)
	}
	return nil
}

// nextDue returns the earliest time a QP of h may send on pt (priorities
// held by PFC left out), Never when none may.
func (h *Host) nextDue(pt *Port) engine.Time {
	if pt.pausedN == 0 {
		return h.schedAt.min()
	}
	next := engine.Never
	for k := range h.sched {
		if !pt.paused[h.schedPrio[k]] {
			next = min(next, h.schedAt.at(k))
		}
	}
	return next
}

// schedule puts q, out of the round robin since it sent its last byte,
// back at its end (go-back-N sends again from a packet not acknowledged).
func (h *Host) schedule(q *QP) {
	if q.schedIdx >= 0 {
		return
	}
	q.schedIdx = len(h.sched)
	h.sched = append(h.sched, q)
	h.schedAt.push(engine.Never)
	h.schedPrio = append(h.schedPrio, q.prio)
}

// unschedule takes q out of the round robin, keeping its place: the scan
// goes on from the QP it would have reached next, as if q were still
// there and skipped (a QP that sent its last byte is skipped for good).
// Its slot stays, empty (nil, time Never: nextPacket never picks it),
// until the empty slots are half of sched; then compactSched closes them
// up. Closing each gap at once cost the length of sched, and the QPs
// after it renumbered: with a run's flows added ahead of their start (a
// million flows on 16 hosts, scenarios/fabric/million-flows.yaml) that
// was quadratic in the flows of a host.
func (h *Host) unschedule(q *QP) {
	i := q.schedIdx
	if i < 0 {
		return
	}
	q.schedIdx = -1
	h.sched[i] = nil
	h.schedAt.set(i, engine.Never)
	h.schedGaps++
	// sched never ends in a gap: with no QP left from rr on, rr goes
	// back to 0 at once, as it did when every gap was closed at once (a
	// QP added next is then not the next in turn).
	for n := len(h.sched); n > 0 && h.sched[n-1] == nil; n-- {
		h.sched, h.schedPrio = h.sched[:n-1], h.schedPrio[:n-1]
		h.schedAt.pop()
		h.schedGaps--
	}
	if h.rr >= len(h.sched) {
		h.rr = 0
	}
	if sparse(h.schedGaps, len(h.sched)) {
		h.compactSched()
	}
}

// sparse reports whether a round robin with gaps empty slots of n should
// be closed up: at a thirty-second of the list. A compaction costs the
// list's length, at most 32 moves per gap, so it stays linear in the QPs
// that leave; the gaps cost nextPacket more than that, as its search from
// rr climbs over them: with up to half the list empty, the first rule,
// the web-search mix's nextPacket took 29 % more instructions than with
// every gap closed at once (10 M of 1.31 G at 100 ms), with an eighth 13 %.
func sparse(gaps, n int) bool { return gaps >= 2 && 32*gaps > n }

// compactSched drops the empty slots of sched, keeping the order of the
// others, and moves rr to the same QP (the first at or after it; 0 past
// the last): the round robin goes on as it would have.
func (h *Host) compactSched() {
	rr, k := 0, 0
	for i, q := range h.sched {
		if i == h.rr {
			rr = k
		}
		if q == nil {
			continue
		}
		q.schedIdx = k
		h.sched[k], h.schedPrio[k] = q, h.schedPrio[i]
		h.schedAt.moveLeaf(k, i)
		k++
	}
	if rr >= k {
		rr = 0
	}
	clear(h.sched[k:])
	h.sched, h.schedPrio, h.rr, h.schedGaps = h.sched[:k], h.schedPrio[:k], rr, 0
	h.schedAt.truncate(k)
}

// FlowConfig describes one RDMA flow: a sender QP on Src writing to a
// receiver QP on Dst.
type FlowConfig struct {
	Name     string
	Src, Dst *Host
	// SrcQPN and DstQPN fix the QP numbers (the §7 example uses 100 and
	// 200); 0 allocates one.
	SrcQPN, DstQPN uint32
	// Bytes to send; 0 sends forever.
	Bytes int64
	// MessageBytes splits the flow into RDMA WRITE messages (FIRST, MIDDLE,
	// LAST or ONLY opcodes); default: the whole flow, or 1 MiB for an
	// endless flow.
	MessageBytes int64
	Start        engine.Time
	Prio         uint8 // 802.1p priority of data, ACKs and CM MADs (default 0)
	// MaxRateBitsPerSec caps the sender's rate (0: none): the flow starts at
	// min(line rate, MaxRateBitsPerSec) and DCQCN's increases never exceed it (a
	// scenario's per-flow rate).
	MaxRateBitsPerSec int64
	// NoCM starts the flow without the IB CM exchange: data from Start, no
	// MADs. By default (false) a flow connects first: the sender sends a
	// REQ at Start, the receiver answers with a REP, the sender sends the
	// RTU and starts data when the REP arrives (one round trip after
	// Start, as an RC requester may post sends once it has processed the
	// REP); a finite flow ends with DREQ and DREP after its last ACK.
	// Hosts without an IP address of the same family connect without CM.
	NoCM bool
	// Dormant creates the queue pairs but never starts the sender: its
	// host runs in another process, which sends the flow's packets over a
	// Wire to the receiver here (the QPs keep both processes' flow numbers
	// and QP numbers the same).
	Dormant bool
}

// Flow is a sender QP and its receiver QP.
type Flow struct {
	ID       FlowID
	Name     string
	Sender   *QP
	Receiver *RecvQP

	finishedAt engine.Time // the sender's Done time, kept when retired
}

// QP is a sender queue pair: a DCQCN reaction point with a pacer. Its
// methods are the hooks a Long-haul CNP reaction point uses.
type QP struct {
	host               *Host
	flow               *Flow
	QPN                uint32 // this QP's number
	PeerQPN            uint32 // the receiver's QP number (BTH DestQP of data)
	dst                NodeID
	prio               uint8
	lineRateBitsPerSec int64
	maxRateBitsPerSec  int64 // FlowConfig.MaxRateBitsPerSec, 0: none
	ceilingBitsPerSec  int64 // SetCeiling, 0: none

	totalBytes int64 // 0: endless
	msgBytes   int64
	msgOff     int64
	sentBytes  int64
	ackedBytes int64
	// pkt is the index of the next data packet to send (its PSN is pkt's
	// low 24 bits: a QP starts at PSN 0), ackedPkt that of the first not
	// acknowledged: pkt - ackedPkt packets are outstanding. A packet's
	// byte offset follows from its index (offsetOf), so an ACK for a PSN
	// needs no record of what was sent, and go-back-N rewinds by setting
	// pkt back.
	pkt, ackedPkt uint64
	// Go-back-N: retxPkts counts the packets sent again, timeouts the
	// local ACK timeouts; rtoDue is when the timeout expires (0: nothing
	// outstanding), rtoSlot its entry's place in its host's timeout heap
	// + 1 (0: none; rto.go).
	retxPkts int64
	timeouts int64
	rtoDue   engine.Time
	rtoSlot  int32

	start_      engine.Time
	sending     bool // connected && !stopped && !allSent
	connected   bool // CM established (or no CM and started), not yet disconnected
	stopped     bool // AdminStop
	allSent     bool // a finite flow has sent its last byte
	finished    bool
	finishedAt  engine.Time
	nextSend    engine.Time
	lastSend    engine.Time
	lastSize    int32
	pausedUntil engine.Time
	resv7       uint8 // SetReservedBits: BTH reserved bits of its data packets
	// schedIdx is the QP's place in its host's sched, -1 once it left.
	schedIdx int
	// sendIdx is its place in its host's sendQPs, -1 once retired.
	sendIdx int

	// txSize, txRate and txTime cache the pacer's gap: engine.TxTime of
	// the last data packet's size at the rate it was sent at (Rc changes
	// far less often than packets are sent; a division costs tens of
	// cycles).
	txSize int32
	txRate int64
	txTime engine.Time
	// ackN is the AckEveryPackets the last data packet was sent with
	// (0: none), ackRem pkt modulo it: no division per packet.
	ackN, ackRem uint32

	cm cmEnd
	dc dcqcn

	// A QP is a whole number of cache lines (448 bytes, a size class of
	// its own; its fields fill them now, with no padding: a field added
	// needs a padding field here up to the next line), so that two QPs
	// never share a line: the runner adds flows in start order, so
	// neighbours in memory run at the same time, and on a network cut into
	// partitions their senders are often in two partitions that run side
	// by side, where a shared line would bounce between the cores at every
	// write (docs/engine.md, "Side by side"; TestHotTypesOwnTheirLines).
}

// Flow returns the flow the QP belongs to.
func (q *QP) Flow() *Flow { return q.flow }

// Host returns the QP's host.
func (q *QP) Host() *Host { return q.host }

// RateBitsPerSec returns the current sending rate Rc.
func (q *QP) RateBitsPerSec() int64 { return q.dc.rc }

// TargetRateBitsPerSec returns DCQCN's target rate Rt.
func (q *QP) TargetRateBitsPerSec() int64 { return q.dc.rt }

// Alpha returns DCQCN's alpha as a fraction 0..1 (updated to now).
func (q *QP) Alpha() float64 {
	if q.dc.active {
		q.alphaCatchUp(q.host.part.sim.Now())
	}
	return float64(q.dc.alpha) / float64(alphaOne)
}

// SentBytes returns the flow's payload bytes sent so far, up to where the
// sender is: a go-back-N rewind sets it back to the packet sent again
// (RetransmittedPackets counts those).
func (q *QP) SentBytes() int64 { return q.sentBytes }

// AckedBytes returns the payload bytes acknowledged so far.
func (q *QP) AckedBytes() int64 { return q.ackedBytes }

// Done reports whether all bytes of a finite flow are acknowledged, and when.
func (q *QP) Done() (bool, engine.Time) { return q.finished, q.finishedAt }

// Active reports whether the QP exists, is connected (its CM exchange is
// complete, or it started without CM) and has not completed its flow. An
// administratively stopped or paused QP is still active. A nil QP is not.
func (q *QP) Active() bool { return q != nil && q.connected && !q.finished }

// LineRateBitsPerSec returns the line rate the QP is bounded by (its host's link
// rate; it follows Link.SetRateBitsPerSec).
func (q *QP) LineRateBitsPerSec() int64 { return q.lineRateBitsPerSec }

// MaxRateBitsPerSec returns the rate the QP may not exceed now: the least of the
// line rate, DCQCN's MaxRateBitsPerSec, the flow's MaxRateBitsPerSec and the ceiling.
func (q *QP) MaxRateBitsPerSec() int64 { return q.maxRate() }

// CeilingBitsPerSec returns the ceiling set by SetCeiling (0: none).
func (q *QP) CeilingBitsPerSec() int64 { return q.ceilingBitsPerSec }

// CNPs returns the number of CNPs DCQCN has processed for this QP.
func (q *QP) CNPs() int64 { return q.dc.cnpRx }

// RateCuts returns the number of DCQCN rate decreases.
func (q *QP) RateCuts() int64 { return q.dc.rateCuts }

// SetRate sets the current and target rates (clamped to [min rate,
// MaxRateBitsPerSec], so below any ceiling) and engages the rate limiter, as a
// Long-haul CNP "Rate Reduce" or "Resume" would. DCQCN's increase timers
// continue from there: use SetCeiling for a cut DCQCN must not undo.
func (q *QP) SetRate(rcBitsPerSec, rtBitsPerSec int64) {
	c := q.cc()
	clampR := func(r int64) int64 {
		return max(c.MinRateBitsPerSec, min(r, q.maxRate()))
	}
	q.dc.rc, q.dc.rt = clampR(rcBitsPerSec), clampR(rtBitsPerSec)
	q.armIncrease()
	q.rateChanged()
}

// SetCeiling caps the QP's rate at ceilingBitsPerSec until ClearCeiling: Rc and
// Rt are lowered to it if above, DCQCN's increases (timer, byte counter)
// stop at it and SetRate is clamped to it. This is the rate cut DCQCN
// cannot undo (a Long-haul CNP Rate Reduce held until Resume or recovery).
// The other bounds stay (a ceiling above the line rate changes nothing; one
// below DCQCN's MinRateBitsPerSec holds the minimum rate). ceilingBitsPerSec <= 0 clears.
func (q *QP) SetCeiling(ceilingBitsPerSec int64) {
	if ceilingBitsPerSec <= 0 {
		q.ClearCeiling()
		return
	}
	q.ceilingBitsPerSec = ceilingBitsPerSec
	m := max(q.maxRate(), q.cc().MinRateBitsPerSec)
	q.dc.rt = min(q.dc.rt, m)
	if q.dc.rc > m {
		q.dc.rc = m
		q.rateChanged()
	}
}

// ClearCeiling removes the ceiling; DCQCN's increases continue from the
// current rate (the increase timer restarts if it had stopped at the
// ceiling).
func (q *QP) ClearCeiling() {
	if q.ceilingBitsPerSec == 0 {
		return
	}
	q.ceilingBitsPerSec = 0
	q.armIncrease()
}

// AdminStop stops the QP administratively (a scenario's flow-stop): it
// sends no data until AdminStart, whatever PauseUntil says, so a Long-haul
// CNP Resume cannot restart it. ACKs and CNPs are still processed and the
// QP stays connected. A retired flow has no QP (Flow.Sender is nil): its
// callers check Flow.Retired first.
func (q *QP) AdminStop() {
	q.stopped = true
	q.updateSending()
}

// AdminStart lifts AdminStop (a scenario's flow-start). A QP that is not
// connected yet starts when it is. As for AdminStop, a retired flow has
// no QP to start.
func (q *QP) AdminStart() {
	q.stopped = false
	q.updateSending()
}

// AdminStopped reports whether the QP is administratively stopped.
func (q *QP) AdminStopped() bool { return q.stopped }

// armIncrease starts DCQCN's increase timer when the QP is below its
// maximum and the timer is not running.
func (q *QP) armIncrease() {
	m := q.maxRate()
	if !q.dc.incRunning && (q.dc.rc < m || q.dc.rt < m) {
		q.dc.armInc(q.host.part.sim, q.timers(), q.cc().TimeReset)
	}
}

// setLineRate follows a change of the host's link rate. A QP whose rate
// limiter never engaged and that runs at its maximum moves to the new
// maximum; otherwise the rates are clamped to it and DCQCN climbs from
// there.
func (q *QP) setLineRate(r int64) {
	free := !q.dc.active && q.dc.rc >= q.maxRate() && q.dc.rt >= q.maxRate()
	q.lineRateBitsPerSec = r
	m := max(q.maxRate(), q.cc().MinRateBitsPerSec)
	if free {
		q.dc.rc, q.dc.rt = m, m
	} else {
		q.dc.rc, q.dc.rt = min(q.dc.rc, m), min(q.dc.rt, m)
		q.armIncrease()
	}
	q.rateChanged()
}

// PauseUntil holds the QP until t (a Long-haul CNP "Pause"); a t in the past
// releases it.
func (q *QP) PauseUntil(t engine.Time) {
	q.pausedUntil = t
	q.resched()
	if q.host.port != nil {
		q.host.port.kick()
	}
}

// PausedUntil returns the end of the current pause (0 or past: not paused).
func (q *QP) PausedUntil() engine.Time { return q.pausedUntil }

// start runs at the flow's start time: the CM exchange begins, or without
// CM the QP is connected at once.
func (q *QP) start() {
	if q.cm.on {
		q.sendREQ()
		return
	}
	q.connected = true
	q.cm.connectedAt = q.host.part.sim.Now()
	q.updateSending()
}

// updateSending recomputes whether the pacer may pick the QP.
func (q *QP) updateSending() {
	s := q.connected && !q.stopped && !q.allSent
	if s == q.sending {
		return
	}
	q.sending = s
	if s {
		if now := q.host.part.sim.Now(); q.nextSend < now {
			q.nextSend = now
		}
		q.resched()
		q.host.port.kick()
		return
	}
	q.resched()
}

// readyAt is the time from which the pacer may pick the QP: Never while
// it may not send, else its next send or the end of its pause.
func (q *QP) readyAt() engine.Time {
	if !q.sending {
		return engine.Never
	}
	return max(q.nextSend, q.pausedUntil)
}

// resched brings the QP's entry in its host's round robin up to date;
// every change of sending, nextSend or pausedUntil calls it.
func (q *QP) resched() {
	if q.schedIdx >= 0 {
		q.host.schedAt.set(q.schedIdx, q.readyAt())
	}
}

// rateChanged re-times the next send for the new rate.
func (q *QP) rateChanged() {
	if !q.sending {
		return
	}
	if q.lastSize > 0 {
		q.nextSend = q.lastSend + engine.TxTime(int64(q.lastSize), q.dc.rc)
		q.resched()
	}
	q.host.port.kick()
}

// makePacket builds the next data packet and advances the pacer.
func (q *QP) makePacket(now engine.Time) *Packet {
	h := q.host
	// The packet first: pool.get, a call, then has nothing of the
	// below to keep across it (its spills were on every packet's path).
	p := h.part.pool.tryGet()
	if p == nil {
		p = h.part.pool.get()
	}
	mtu := int64(h.cfg.MTUBytes)
	left := q.msgBytes - q.msgOff
	if q.totalBytes > 0 {
		left = min(left, q.totalBytes-q.sentBytes)
	}
	payload := min(mtu, left)
	first := q.msgOff == 0
	last := payload == left
	var op wire.Opcode
	switch {
	case first && last:
		op = wire.OpRCWriteOnly
	case first:
		op = wire.OpRCWriteFirst
	case last:
		op = wire.OpRCWriteLast
	default:
		op = wire.OpRCWriteMiddle
	}
	size := frameAround(h.overheadBytes, dataBodyBytes(int32(payload), first)) // DataBytes: a RETH on FIRST and ONLY
	psn := uint32(q.pkt) & 0xFFFFFF
	q.pkt++
	// ackRem is pkt % AckEveryPackets (the packets sent, this one
	// included), kept by counting while the configuration stays (ackN),
	// recomputed when it changes (and after a rewind: goBack).
	n := h.cfg.AckEveryPackets
	if n != q.ackN {
		q.ackN = n
		if n > 0 {
			q.ackRem = uint32(q.pkt % uint64(n))
		}
	} else if n > 0 {
		if q.ackRem++; q.ackRem == n {
			q.ackRem = 0
		}
	}
	ackReq := last || (n > 0 && q.ackRem == 0)

	p.Kind = KindRoCE
	p.SizeBytes = size
	p.PayloadBytes = int32(payload)
	p.Src, p.Dst = h.id, q.dst
	p.Flow = q.flow.ID
	p.SrcQP = q.QPN
	p.Prio = q.prio
	p.ECN = ECNECT0
	w := psn | uint32(q.resv7)<<24 // PSN, Resv7 and AckReq
	if ackReq {
		w |= 1 << 31
	}
	p.setBTH(op, uint8(-payload&3), 0, q.PeerQPN, w) // PKey 0xFFFF

	q.sentBytes += payload
	if h.cfg.GoBackN && q.rtoDue == 0 {
		q.armRTO(now) // the first packet outstanding
	}
	q.msgOff += payload
	if last {
		q.msgOff = 0
	}
	if q.totalBytes > 0 && q.sentBytes >= q.totalBytes {
		q.allSent = true
		q.sending = false
		h.unschedule(q)
	}
	q.lastSend = now
	q.lastSize = size
	if size != q.txSize || q.dc.rc != q.txRate {
		q.txSize, q.txRate, q.txTime = size, q.dc.rc, engine.TxTime(int64(size), q.dc.rc)
	}
	q.nextSend = now + q.txTime
	q.resched()
	if s := &q.dc; s.active && s.byteCounter+int64(size) < h.cfg.DCQCN.ByteResetBytes {
		// onBytesSent's common case, written out (its call): no
		// stage of the byte counter ends.
		s.byteCounter += int64(size)
	} else {
		q.onBytesSent(int64(size))
	}
	return p
}

// onAck applies a cumulative ACK for psn.
func (q *QP) onAck(psn uint32) {
	q.ackThrough(psn)
	if q.totalBytes > 0 && !q.finished && q.ackedBytes >= q.totalBytes {
		q.finished = true
		q.finishedAt = q.host.part.sim.Now()
		q.stopRTO()
		if q.cm.on {
			q.sendDREQ()
		}
		q.host.net.flowFinished(q)
	}
}

// ackThrough acknowledges the packets up to psn, one of those
// outstanding; an ACK for one acknowledged before (a duplicate, or one
// overtaken) changes nothing.
func (q *QP) ackThrough(psn uint32) {
	// after: the packets sent after psn's, 24-bit serial arithmetic.
	after := uint64((uint32(q.pkt) - 1 - psn) & 0xFFFFFF)
	if after >= q.pkt-q.ackedPkt {
		return
	}
	q.ackedPkt = q.pkt - after
	q.ackedBytes, _ = q.offsetOf(q.ackedPkt)
	if q.rtoDue != 0 {
		if q.ackedPkt == q.pkt {
			q.rtoDue = 0 // nothing outstanding
		} else {
			q.armRTO(q.host.part.sim.Now()) // progress restarts the timer
		}
	}
}

// onNak applies a NAK for a PSN sequence error at psn: the packets before
// it arrived, the sender goes back to it. A NAK for a packet not
// outstanding (one already resent after a timeout and acknowledged) is
// ignored.
func (q *QP) onNak(psn uint32) {
	q.ackThrough((psn - 1) & 0xFFFFFF)
	if back := uint64((uint32(q.pkt) - psn) & 0xFFFFFF); back > 0 && back <= q.pkt-q.ackedPkt {
		q.goBack(q.pkt - back)
	}
}

// offsetOf returns the byte offset of data packet k in the flow and in
// its message: the runner's flows are messages of msgBytes (the last one
// shorter), each cut into packets of the host's MTU (fixed while the flow
// sends, as an RC QP's path MTU), the last packet of a message shorter.
func (q *QP) offsetOf(k uint64) (off, msgOff int64) {
	mtu := uint64(q.host.cfg.MTUBytes)
	per := (uint64(q.msgBytes) + mtu - 1) / mtu // packets per message
	msg := int64(k/per) * q.msgBytes            // k's message's offset
	off = msg + min(int64(k%per*mtu), q.msgBytes)
	if q.totalBytes > 0 {
		off = min(off, q.totalBytes)
	}
	return off, off - msg
}

// goBack makes packet k, not yet acknowledged, the next to send (RC's go
// back N): the packets from it on are sent again, counted in retxPkts.
func (q *QP) goBack(k uint64) {
	q.retxPkts += int64(q.pkt - k)
	q.pkt = k
	q.sentBytes, q.msgOff = q.offsetOf(k)
	q.ackN = 0 // ackRem recomputed from pkt at the next packet
	q.rtoDue = 0
	if q.pkt != q.ackedPkt {
		q.armRTO(q.host.part.sim.Now())
	}
	if q.allSent {
		q.allSent = false
		q.host.schedule(q)
	}
	q.updateSending()
}

// RetransmittedPackets returns the data packets the QP sent again (go-back-N).
func (q *QP) RetransmittedPackets() int64 { return q.retxPkts }

// Timeouts returns the local ACK timeouts that expired (go-back-N).
func (q *QP) Timeouts() int64 { return q.timeouts }

// RecvQP is a receiver queue pair: the DCQCN notification point of one flow.
type RecvQP struct {
	host      *Host
	flow      *Flow
	QPN       uint32
	PeerQPN   uint32
	peer      NodeID
	prio      uint8
	expectPSN uint32
	nakSent   bool // go-back-N: a NAK went for the current gap
	cm        cmEnd

	rxPackets, rxBytes int64
	lostPackets        int64
	outOfSeq           int64 // go-back-N: data packets discarded out of sequence
	markedRx           int64
	cnpTx              int64
	lastCNP            engine.Time
	firstRx, lastRx    engine.Time

	// The padding makes a RecvQP three whole cache lines (192 bytes), so
	// that two never share one: as QP's, neighbours in memory receive at
	// the same time, often in two partitions side by side, and a receiver
	// writes its counters at every packet (TestHotTypesOwnTheirLines).
	_ [40]byte
}

// Host returns the receiver QP's host.
func (r *RecvQP) Host() *Host { return r.host }

// RxBytes returns the payload bytes received.
func (r *RecvQP) RxBytes() int64 { return r.rxBytes }

// RxPackets returns the data packets received.
func (r *RecvQP) RxPackets() int64 { return r.rxPackets }

// MarkedPackets returns the CE-marked data packets received.
func (r *RecvQP) MarkedPackets() int64 { return r.markedRx }

// CNPs returns the CNPs this notification point sent.
func (r *RecvQP) CNPs() int64 { return r.cnpTx }

// LostPackets returns the data packets missing from the PSN sequence
// (dropped in the network): without go-back-N every gap, with it the first
// gap of each NAK (later ones are discarded with it, OutOfSequence).
func (r *RecvQP) LostPackets() int64 { return r.lostPackets }

// OutOfSequence returns the data packets discarded out of sequence
// (go-back-N: after a gap, and duplicates).
func (r *RecvQP) OutOfSequence() int64 { return r.outOfSeq }

// Sim returns the engine of the host's partition.
func (h *Host) Sim() *engine.Sim { return h.part.sim }
