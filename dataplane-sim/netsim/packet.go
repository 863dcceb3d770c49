package netsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

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

// Kind says how to read a packet. RoCEv2 packets (data, ACK, CNP, CM MADs)
// carry an encoded BTH in Hdr and are told apart by its opcode; PFC frames
// are MAC control frames with no BTH; KindOther is for other formats (the
// ICMPv6 Long-haul CNP, ...), whose bytes are in Hdr and, whole, in Frame.
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
// room for a RETH/AETH/DETH or the 16-byte Long-haul CNP RoCEv2 extension.
// Control packets that need more carry their whole frame (FrameCap).
const HdrCap = 40

// FrameCap is the largest frame a control packet can carry (Packet.Frame):
// an MTU-sized Ethernet frame, 1500 bytes of IP packet behind a VLAN-tagged
// Ethernet header, FCS excluded (as wire.Encoder writes frames).
const FrameCap = 14 + 4 + 1500

// ErrFrameTooLong is returned by Network.SetFrame for a frame above FrameCap.
var ErrFrameTooLong = errors.New("frame longer than netsim.FrameCap")

// Frame sizes on the wire, in bytes, Ethernet header to FCS inclusive, as
// wire.Encoder lays the frames out (plus the 4-byte FCS it leaves out).
// Every RoCEv2 packet has Eth 14 + IP + UDP 8 + BTH 12 + ICRC 4 + FCS 4:
// 62 bytes with an IPv4 header (20), 82 with an IPv6 one (40). The IP
// header is the one of the sending host's address (RoCEOverheadBytes); a
// host without an address is sized as IPv4. An ACK adds the 4-byte AETH;
// a CNP adds 16 reserved bytes after the BTH (IBA Annex A17); a data
// packet adds its RETH (FIRST and ONLY) and its payload padded to 4 bytes
// (DataBytes); a CM MAD adds the DETH and the 256-byte MAD. A PFC frame is
// a minimum 64-byte MAC control frame.
const (
	FCSBytes            = 4
	RoCEv4OverheadBytes = wire.EthernetLen + wire.IPv4MinLen + wire.UDPLen + wire.BTHLen + wire.ICRCLen + FCSBytes
	RoCEv6OverheadBytes = wire.EthernetLen + wire.IPv6Len + wire.UDPLen + wire.BTHLen + wire.ICRCLen + FCSBytes
	PFCFrameBytes       = 64
)

// RoCEOverheadBytes returns the bytes of a RoCEv2 frame sent from addr
// around what follows its BTH: RoCEv6OverheadBytes for an IPv6 address
// (an IPv4-mapped one included: wire.Encoder writes an IPv6 header for
// it), RoCEv4OverheadBytes otherwise.
func RoCEOverheadBytes(addr netip.Addr) int32 {
	if addr.IsValid() && !addr.Is4() {
		return RoCEv6OverheadBytes
	}
	return RoCEv4OverheadBytes
}

// roceFrameBytes is the size of a RoCEv2 frame from addr with bodyBytes
// after the BTH, padded as wire.Encoder pads short frames.
func roceFrameBytes(addr netip.Addr, bodyBytes int32) int32 {
	return frameAround(RoCEOverheadBytes(addr), bodyBytes)
}

// frameAround is the size of a RoCEv2 frame of overheadBytes
// (RoCEOverheadBytes of its sender) around bodyBytes after the BTH, padded
// as wire.Encoder pads short frames. Hosts call it with the overhead they
// keep, not to re-derive it from their address for every packet.
func frameAround(overheadBytes, bodyBytes int32) int32 {
	return max(overheadBytes+bodyBytes, wire.MinFrameLen+FCSBytes)
}

// AckBytes is the size of an ACK (BTH and AETH) sent from addr.
func AckBytes(addr netip.Addr) int32 { return roceFrameBytes(addr, wire.AETHLen) }

// CNPBytes is the size of a standard RoCEv2 CNP sent from addr.
func CNPBytes(addr netip.Addr) int32 { return roceFrameBytes(addr, wire.CNPReservedLen) }

// CMBytes is the size of a CM MAD sent from addr (UD SEND_ONLY to QP1).
func CMBytes(addr netip.Addr) int32 { return roceFrameBytes(addr, wire.DETHLen+wire.MADLen) }

// DataBytes is the size of an RDMA WRITE packet sent from addr with
// payloadBytes of payload, with a RETH (FIRST, ONLY) or without: the
// payload is padded to a multiple of 4 bytes (BTH PadCnt).
func DataBytes(addr netip.Addr, payloadBytes int32, reth bool) int32 {
	return roceFrameBytes(addr, dataBodyBytes(payloadBytes, reth))
}

// dataBodyBytes is what follows the BTH of an RDMA WRITE packet: its RETH
// (FIRST, ONLY) and its payload padded to a multiple of 4 bytes.
func dataBodyBytes(payloadBytes int32, reth bool) int32 {
	body := payloadBytes + -payloadBytes&3
	if reth {
		body += wire.RETHLen
	}
	return body
}

// FlowFrames is what a flow puts on the wire (FlowFrameBytes): the sum of
// its data frames and the sizes of its first and last frames, in bytes on
// the link (netsim.LinkBytes).
type FlowFrames struct {
	TotalBytes, FirstBytes, LastBytes int64
}

// FlowFrameBytes returns what a flow of payloadBytes puts on the wire as a
// host sends it from addr: packets of at most mtuBytes of payload
// (HostConfig.MTUBytes), one RDMA WRITE message per messageBytes
// (FlowConfig.MessageBytes; 0: the whole flow), each message's first
// packet with a RETH, each packet's payload padded to 4 bytes (DataBytes
// each). The zero FlowFrames for no payload or no MTU.
func FlowFrameBytes(addr netip.Addr, payloadBytes, mtuBytes, messageBytes int64) FlowFrames {
	if payloadBytes <= 0 || mtuBytes <= 0 {
		return FlowFrames{}
	}
	msg := messageBytes
	if msg <= 0 || msg > payloadBytes {
		msg = payloadBytes
	}
	ov := RoCEOverheadBytes(addr)
	frame := func(payload int64, reth bool) int64 {
		return int64(frameAround(ov, dataBodyBytes(int32(payload), reth)))
	}
	// message is the bytes of one message of m > 0 bytes (a first packet
	// with the RETH, full middle packets, a last packet with the rest) and
	// the size of its last frame.
	message := func(m int64) (total, last int64) {
		pkts := (m + mtuBytes - 1) / mtuBytes
		if pkts == 1 {
			return frame(m, true), frame(m, true)
		}
		last = frame(m-(pkts-1)*mtuBytes, false)
		return frame(mtuBytes, true) + (pkts-2)*frame(mtuBytes, false) + last, last
	}
	whole, last := message(msg)
	f := FlowFrames{TotalBytes: payloadBytes / msg * whole, FirstBytes: frame(min(msg, mtuBytes), true), LastBytes: last}
	if rest := payloadBytes % msg; rest > 0 {
		t, l := message(rest)
		f.TotalBytes += t
		f.LastBytes = l
	}
	return f
}

// Packet is one frame in flight or in a queue. Packets are pooled per
// Network: get one with Network.NewPacket and return it with
// Network.FreePacket; a model that receives a packet owns it until it passes
// it on or frees it. Payload bytes do not exist; SizeBytes is what the wire
// and the queues account.
//
// Data packets, ACKs and standard CNPs carry only their transport header
// (Hdr). Control packets whose bytes matter to someone on the path (CM
// MADs, Long-haul CNPs) also carry their whole encoded Ethernet frame
// (Frame, set with Network.SetFrame), in a pooled buffer that FreePacket
// recycles; Hdr then holds the first HdrCap bytes of the transport part
// so that the models demultiplex them as any other packet.
type Packet struct {
	// What a switch reads and writes at every hop comes first, in 32
	// bytes: a Packet is 96 bytes, so its first 32 always sit in one
	// cache line, and a hop touches that line alone (a packet's lines are
	// cold when it arrives: it waited in a link's ring).
	SizeBytes int32  // whole frame, Ethernet header to FCS
	Dst       NodeID // destination node
	// fb names the buffer of the whole frame (control packets), 0 for
	// none (frames.go): a Packet holds no pointer.
	fb uint32
	// inPort is the switch ingress port, for PFC accounting: its index
	// among the switch's ports plus 1, 0 for none. An index, not a
	// pointer: no write barrier where it is set and cleared, and one
	// pointer fewer for the collector to scan in every packet.
	inPort int32
	Prio   uint8 // 802.1p priority = egress queue = PFC class
	ECN    uint8 // IP ECN bits (ECNNotECT ... ECNCE)
	Kind   Kind
	// PFC frames: the class and whether it pauses (XOFF) or resumes (XON).
	PFCPrio  uint8
	PFCPause bool
	HdrLen   uint8
	frameLen uint16      // bytes of fb in use
	SentAt   engine.Time // when the sender put it on its wire

	PayloadBytes int32 // RDMA payload carried (goodput)
	Src          NodeID
	Flow         FlowID
	// SrcQP is the sender's QP number. It is not in the BTH (which names only
	// the destination QP); a real congestion-aware node learns it from the
	// IB CM exchange, so the simulator hands it over as metadata.
	SrcQP uint32
	// Hdr holds the encoded transport header: for KindRoCE, the BTH in
	// Hdr[:12] as wire.BTH.Encode wrote it (models read it back with the
	// accessors below or wire.DecodeBTH).
	Hdr [HdrCap]byte
	// A Packet stays 96 bytes, a multiple of 32, so that the first 32
	// bytes of every packet of a chunk are in one cache line.
	_ [8]byte
}

// SmallFrameCap is the room of the small frame buffers SetFrame uses for
// frames that fit: the head of a tunnelled data packet (Ethernet, outer
// and inner IPv6: 94 bytes), an FCN message, a standard CNP. Many such
// frames are in flight at once (one per tunnelled packet); a buffer of
// their size keeps them in the caches, where FrameCap-sized ones would
// take the memory of the whole frames.
const SmallFrameCap = 128

// Frame returns the whole encoded frame (Ethernet header to the end of the
// IP packet, padding included, FCS excluded) of a control packet that
// carries one, or nil. The bytes belong to the packet: read them during
// the call that hands over p, do not keep them.
func (p *Packet) Frame() []byte {
	if p.fb == 0 {
		return nil
	}
	return frameOf(p.fb)[:p.frameLen]
}

// LinkBytes is the size a frame of frameLen bytes (as wire's encoder
// writes it) has on a link: the frame and its FCS. Every packet built from
// an encoded frame sets its SizeBytes with it.
func LinkBytes(frameLen int) int32 { return int32(frameLen) + FCSBytes }

// SetFrame copies frame into p's frame buffer (taken from the network's
// pool on first use; FreePacket returns it). It does not touch SizeBytes,
// Kind or Hdr: set them as for any packet (SizeBytes is len(frame) plus
// the 4-byte FCS). An empty frame removes the frame.
func (n *Network) SetFrame(p *Packet, frame []byte) error { return n.pool().setFrame(p, frame) }

func (pp *packetPool) setFrame(p *Packet, frame []byte) error {
	if len(frame) > FrameCap {
		return fmt.Errorf("netsim: %d-byte frame: %w", len(frame), ErrFrameTooLong)
	}
	if len(frame) == 0 {
		if p.fb != 0 {
			pp.putFrame(p.fb)
			p.fb, p.frameLen = 0, 0
		}
		return nil
	}
	if p.fb != 0 && p.fb&1 == 0 && len(frame) > SmallFrameCap {
		pp.putFrame(p.fb)
		p.fb = 0
	}
	if p.fb == 0 {
		p.fb = pp.getFrame(len(frame) <= SmallFrameCap)
	}
	p.frameLen = uint16(copy(frameOf(p.fb), frame))
	return nil
}

// frameBuf attaches a frame buffer of FrameCap bytes to p and returns all
// of it for encoding in place; set p.frameLen to the encoded length after.
func (pp *packetPool) frameBuf(p *Packet) []byte {
	if p.fb != 0 && p.fb&1 == 0 {
		pp.putFrame(p.fb)
		p.fb = 0
	}
	if p.fb == 0 {
		p.fb = pp.getFrame(false)
	}
	return frameOf(p.fb)
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

// setBTH writes a BTH with PKey 0xFFFF, no SE, MigReq or TVer into Hdr:
// what SetBTH writes for those fields, without wire.BTH's range checks,
// which the callers' values pass by construction (QP numbers are checked
// at AddFlow, PSNs kept in 24 bits, Resv7 in 7, pad below 4). w is the
// BTH's last word: AckReq, Resv7 and PSN. Data packets, ACKs and CNPs
// are built with it, one per packet sent.
func (p *Packet) setBTH(op wire.Opcode, pad, byte4 uint8, destQP, w uint32) {
	h := &p.Hdr
	h[0] = uint8(op)
	h[1] = pad << 4
	h[2], h[3] = 0xFF, 0xFF
	binary.BigEndian.PutUint32(h[4:8], uint32(byte4)<<24|destQP)
	binary.BigEndian.PutUint32(h[8:12], w)
	p.HdrLen = wire.BTHLen
}

// packetPool is a free list. It is not a sync.Pool: a simulation is driven
// by one goroutine, and a plain stack is faster and keeps no per-P state.
// The stack is a list of fixed-size chunks (a Packet has no room for an
// intrusive link): growing it never copies, and it costs 8 bytes per
// packet at the peak.
type packetPool struct {
	cur   []*Packet   // top chunk
	full  [][]*Packet // full chunks below it
	spare []*Packet   // an empty chunk kept for the next push
	alloc int64
	// fresh holds packets never used yet: they are allocated
	// packetChunk at a time (one allocation: a run that fills a deep
	// buffer made 88 k allocations of one packet in the §7 benchmark,
	// 1.3 % of its instructions, and as many objects for the GC).
	fresh  []Packet
	frames []uint32  // free frame buffers of FrameCap bytes (frames.go)
	small  []uint32  // free frame buffers of SmallFrameCap bytes
	frOwn  *frameOwn // the frame buffers taken from the stores
	// own, when a test sets it, records every packet the pool allocated
	// (TestPacketsStayHome).
	own map[*Packet]bool
}

const poolChunk = 1024

// packetChunk is how many packets are allocated at once: 170 of 96 bytes
// fill the 16 KiB size class to 64 bytes (128, 12 KiB, went to the 13.3 KiB
// class: 10 % of the packets' memory lost). A Packet has no pointer, so a
// chunk has no header and the collector does not scan it.
const packetChunk = 170

// get returns a zeroed packet.
func (pp *packetPool) get() *Packet {
	if p := pp.tryGet(); p != nil {
		return p
	}
	return pp.getSlow()
}

// tryGet is get's common case, a zeroed packet off the top chunk of the
// free stack, and nil when that chunk is empty (then get). It inlines:
// the hot paths (a data packet, an ACK, a CNP) call it first.
func (pp *packetPool) tryGet() *Packet {
	c := pp.cur
	if len(c) == 0 {
		return nil
	}
	p := c[len(c)-1]
	pp.cur = c[:len(c)-1]
	*p = Packet{}
	return p
}

// getSlow is get with the top chunk of the free stack empty.
func (pp *packetPool) getSlow() *Packet {
	k := len(pp.full)
	if k == 0 {
		pp.alloc++
		if len(pp.fresh) == 0 {
			pp.fresh = make([]Packet, packetChunk)
		}
		p := &pp.fresh[0]
		pp.fresh = pp.fresh[1:]
		if pp.own != nil {
			pp.own[p] = true
		}
		return p
	}
	pp.spare = pp.cur
	pp.cur = pp.full[k-1]
	pp.full = pp.full[:k-1]
	return pp.get()
}

// put returns p to the pool.
func (pp *packetPool) put(p *Packet) {
	if !pp.tryPut(p) {
		pp.putSlow(p)
	}
}

// tryPut is put's common case, p without a frame onto a top chunk with
// room, and reports false, doing nothing, otherwise (then put). It
// inlines: the hot paths (a packet delivered to a host, a tail drop) call
// it first.
func (pp *packetPool) tryPut(p *Packet) bool {
	c := pp.cur
	if p.fb != 0 || len(c) == cap(c) {
		return false
	}
	p.inPort = 0
	pp.cur = append(c, p)
	return true
}

func (pp *packetPool) putSlow(p *Packet) {
	if p.fb != 0 {
		pp.putFrame(p.fb)
		p.fb = 0
	}
	p.inPort = 0
	if len(pp.cur) == cap(pp.cur) {
		if pp.cur != nil {
			pp.full = append(pp.full, pp.cur)
		}
		if pp.spare != nil {
			pp.cur, pp.spare = pp.spare[:0], nil
		} else {
			pp.cur = make([]*Packet, 0, poolChunk)
		}
	}
	pp.cur = append(pp.cur, p)
}

// live returns the packets taken from the pool and not yet put back: those
// allocated less those on the free stack (every chunk below the top one is
// full). Counted, not kept: get and put are every packet's.
func (pp *packetPool) live() int64 {
	return pp.alloc - int64(len(pp.cur)) - int64(len(pp.full))*poolChunk
}

func (pp *packetPool) getFrame(small bool) uint32 {
	free := &pp.frames
	if small {
		free = &pp.small
	}
	if k := len(*free); k > 0 {
		b := (*free)[k-1]
		*free = (*free)[:k-1]
		return b
	}
	return pp.newFrame(!small)
}

func (pp *packetPool) putFrame(ref uint32) {
	if ref&1 == 0 {
		pp.small = append(pp.small, ref)
		return
	}
	pp.frames = append(pp.frames, ref)
}
