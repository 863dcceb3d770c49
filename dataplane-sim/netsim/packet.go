package netsim

import (
	"encoding/binary"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// NodeID is a compact node number, the index of the node in its Network.
// Packets carry NodeIDs; the node's netip address is in Node.Addr and is
// what frame encoders and the flow table of a congestion-aware node use.
type NodeID int32

// FlowID is the index of a flow in its Network (Network.Flows).
type FlowID int32

// NoFlow marks packets that belong to no flow (PFC frames, CNPs sent by a
// future Long-haul CNP node before it learned anything, ...).
const NoFlow FlowID = -1

// Kind says how to read a packet. RoCEv2 packets (data, ACK, CNP) carry an
// encoded BTH in Hdr and are told apart by its opcode; PFC frames are MAC
// control frames with no BTH; KindOther is for formats added later (the
// ICMPv6 Long-haul CNP, ...), whose bytes are in Hdr.
type Kind uint8

// Packet kinds.
const (
	KindRoCE Kind = iota
	KindPFC
	KindOther
)

// IP ECN codepoints (RFC 3168), the two low bits of the IPv4 TOS / IPv6 TC.
const (
	ECNNotECT uint8 = 0b00
	ECNECT1   uint8 = 0b01
	ECNECT0   uint8 = 0b10
	ECNCE     uint8 = 0b11
)

// NumPrio is the number of 802.1p priorities (PFC classes, egress queues).
const NumPrio = 8

// HdrCap is the room for encoded header bytes in a Packet: a BTH (12) plus
// room for a RETH/AETH or the 16-byte Long-haul CNP RoCEv2 extension.
const HdrCap = 40

// Frame sizes on the wire, in bytes, Ethernet header to FCS inclusive.
// Eth 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 = 62 for every RoCEv2
// packet; an ACK adds the 4-byte AETH; a CNP adds 16 reserved bytes after the
// BTH (IBA Annex A17); a PFC frame is a minimum 64-byte MAC control frame.
const (
	RoCEOverheadBytes = 14 + 20 + 8 + wire.BTHLen + 4 + 4
	AckBytes          = RoCEOverheadBytes + 4
	CNPBytes          = RoCEOverheadBytes + 16
	PFCFrameBytes     = 64
)

// Packet is one frame in flight or in a queue. Packets are pooled per
// Network: get one with Network.NewPacket and return it with
// Network.FreePacket; a model that receives a packet owns it until it passes
// it on or frees it. Payload bytes do not exist; SizeBytes is what the wire
// and the queues account.
type Packet struct {
	SizeBytes    int32 // whole frame, Ethernet header to FCS
	PayloadBytes int32 // RDMA payload carried (goodput)
	Src, Dst     NodeID
	Flow         FlowID
	// SrcQP is the sender's QP number. It is not in the BTH (which names only
	// the destination QP); a real congestion-aware node learns it from the
	// IB CM exchange, so the simulator hands it over as metadata.
	SrcQP uint32
	Prio  uint8 // 802.1p priority = egress queue = PFC class
	ECN   uint8 // IP ECN bits (ECNNotECT ... ECNCE)
	Kind  Kind
	// PFC frames: the class and whether it pauses (XOFF) or resumes (XON).
	PFCPrio  uint8
	PFCPause bool
	HdrLen   uint8
	// Hdr holds the encoded transport header: for KindRoCE, the BTH in
	// Hdr[:12] as wire.BTH.Encode wrote it (models read it back with the
	// accessors below or wire.DecodeBTH).
	Hdr    [HdrCap]byte
	SentAt engine.Time // when the sender put it on its wire

	inPort *Port   // switch ingress port, for PFC accounting
	next   *Packet // free list
}

// Opcode reads the BTH opcode (KindRoCE only).
func (p *Packet) Opcode() wire.Opcode { return wire.Opcode(p.Hdr[0]) }

// DestQP reads the BTH destination QP.
func (p *Packet) DestQP() uint32 { return binary.BigEndian.Uint32(p.Hdr[4:8]) & 0xFFFFFF }

// PSN reads the BTH packet sequence number.
func (p *Packet) PSN() uint32 { return binary.BigEndian.Uint32(p.Hdr[8:12]) & 0xFFFFFF }

// AckReq reads the BTH AckReq bit.
func (p *Packet) AckReq() bool { return p.Hdr[8]&0x80 != 0 }

// BECN reads the BTH BECN bit.
func (p *Packet) BECN() bool { return p.Hdr[4]&wire.BTHBECN != 0 }

// BTH decodes the whole BTH with the wire package.
func (p *Packet) BTH() (wire.BTH, error) { return wire.DecodeBTH(p.Hdr[:p.HdrLen]) }

// SetBTH encodes h into Hdr. It panics only on a field out of range, which is
// a bug in the caller (QP numbers and PSNs are kept in 24 bits).
func (p *Packet) SetBTH(h *wire.BTH) {
	n, err := h.Encode(p.Hdr[:])
	if err != nil {
		panic("netsim: " + err.Error())
	}
	p.HdrLen = uint8(n)
}

// isData reports whether a BTH opcode carries RDMA data (RC/UC send or write).
func isData(op wire.Opcode) bool {
	switch op.Class() {
	case wire.ClassRC, wire.ClassUC:
		low := op & 0x1F
		return low <= 0x0B || low == 0x16 || low == 0x17
	case wire.ClassUD:
		return true
	}
	return false
}

// packetPool is a free list. It is not a sync.Pool: a simulation is driven
// by one goroutine, and a plain list is faster and keeps no per-P state.
type packetPool struct {
	free  *Packet
	live  int64
	alloc int64
}

func (pp *packetPool) get() *Packet {
	p := pp.free
	if p == nil {
		pp.alloc++
		p = new(Packet)
	} else {
		pp.free = p.next
		*p = Packet{}
	}
	pp.live++
	return p
}

func (pp *packetPool) put(p *Packet) {
	p.next = pp.free
	p.inPort = nil
	pp.free = p
	pp.live--
}
