package udpwire

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// PFC frames (IEEE 802.1Qbb): MAC control, opcode 0x0101, a class-enable
// vector and eight pause times. Package wire has no PFC format; the few
// bytes are written here.
const (
	etherTypeMACControl = 0x8808
	pfcOpcode           = 0x0101
	pfcPauseQuanta      = 0xFFFF
)

var pfcDstMAC = wire.MAC{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01}

// codec turns netsim packets into frames and frames back into packets,
// for one network: every node of the scenario has its address (or at
// least its NodeID) on both sides of a wire.
type codec struct {
	net    *netsim.Network
	byAddr map[netip.Addr]netsim.NodeID
	enc    wire.Encoder
	dec    wire.Decoder
	zeros  []byte
}

func newCodec(n *netsim.Network) *codec {
	c := &codec{net: n, byAddr: map[netip.Addr]netsim.NodeID{}, zeros: make([]byte, netsim.FrameCap*8)}
	for _, x := range n.Nodes() {
		if a := x.Addr(); a.IsValid() {
			c.byAddr[a] = x.ID()
		}
	}
	return c
}

// nodeMAC is a locally administered MAC made of the node number.
func nodeMAC(id netsim.NodeID) wire.MAC {
	return wire.MAC{0x02, 0x00, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}
}

// appendFrame appends p's frame to dst and fills m (all but SentAt and
// Seq). A packet that carries its frame (CM MADs, Long-haul CNPs) sends
// it as it is; data, ACKs and CNPs are encoded from their BTH with zero
// payload bytes, a tunnelled one (its frame the head FCN's ingress PE
// wrote, wire.EncapHead) inside that head's outer header; PFC frames as
// 802.1Qbb frames.
func (c *codec) appendFrame(dst []byte, p *netsim.Packet, m *Meta) ([]byte, error) {
	*m = Meta{SentAt: m.SentAt, Seq: m.Seq, SizeBytes: p.SizeBytes, PayloadBytes: p.PayloadBytes,
		Flow: int32(p.Flow), SrcQP: p.SrcQP, Kind: uint8(p.Kind), Prio: p.Prio, HdrLen: p.HdrLen}
	head := p.Frame()
	var h wire.Encap
	if head != nil && (p.Kind != netsim.KindRoCE || wire.DecodeEncap(head, &h) != nil || h.HeadLen != len(head)) {
		m.ModelFrame = true
		return append(dst, head...), nil
	}
	if p.Kind == netsim.KindPFC {
		var b [wire.MinFrameLen]byte
		copy(b[0:], pfcDstMAC[:])
		src := nodeMAC(p.Src)
		copy(b[6:], src[:])
		binary.BigEndian.PutUint16(b[12:], etherTypeMACControl)
		binary.BigEndian.PutUint16(b[14:], pfcOpcode)
		binary.BigEndian.PutUint16(b[16:], 1<<p.PFCPrio)
		if p.PFCPause {
			binary.BigEndian.PutUint16(b[18+2*int(p.PFCPrio):], pfcPauseQuanta)
		}
		return append(dst, b[:]...), nil
	}
	if p.Kind != netsim.KindRoCE {
		return dst, fmt.Errorf("udpwire: packet of kind %d without a frame", p.Kind)
	}
	bth, err := p.BTH()
	if err != nil {
		return dst, fmt.Errorf("udpwire: %w", err)
	}
	src, dst1 := c.net.Node(p.Src), c.net.Node(p.Dst)
	if src == nil || dst1 == nil {
		return dst, fmt.Errorf("udpwire: packet from node %d to node %d: no such node", p.Src, p.Dst)
	}
	a := wire.Addressing{SrcMAC: nodeMAC(p.Src), DstMAC: nodeMAC(p.Dst), SrcIP: src.Addr(), DstIP: dst1.Addr(),
		TOS: p.ECN & 3, SrcPort: 0xC000 | uint16(p.SrcQP&0x3FFF)}
	if head != nil {
		tunnelAddressing(&a, head, &h)
	}
	// Payload: the RDMA payload of data opcodes; the body after the BTH
	// of others (a CNP's 16 reserved bytes) as the model sizes it.
	body := int(p.PayloadBytes)
	if _, known := wire.OpcodeHeaders(bth.Opcode); !known {
		body = int(p.SizeBytes - netsim.RoCEOverheadBytes(src.Addr()))
		if head != nil {
			body -= wire.TunnelOverheadBytes
		}
	}
	if body < 0 || body > len(c.zeros) {
		return dst, fmt.Errorf("udpwire: packet of %d bytes with %d payload bytes", p.SizeBytes, p.PayloadBytes)
	}
	n := len(dst)
	dst = append(dst, c.zeros[:wire.EthernetLen+2*wire.IPv6Len+wire.UDPLen+wire.BTHLen+32+body+8+wire.ICRCLen]...)
	// An ACK's AETH: in Hdr when the model wrote one (a NAK's syndrome,
	// go-back-N), else zero (an ACK).
	var th *wire.TransportHeaders
	if set, _ := wire.OpcodeHeaders(bth.Opcode); set&wire.HasAETH != 0 && int(p.HdrLen) >= wire.BTHLen+wire.AETHLen {
		w := binary.BigEndian.Uint32(p.Hdr[wire.BTHLen:])
		th = &wire.TransportHeaders{AETH: wire.AETH{Syndrome: uint8(w >> 24), MSN: w & 0xFFFFFF}}
	}
	size, err := c.enc.RoCE(dst[n:], &a, &bth, th, c.zeros[:body])
	if err != nil {
		return dst[:n], fmt.Errorf("udpwire: %w", err)
	}
	return dst[:n+size], nil
}

// tunnelAddressing makes a encode the head h of a tunnelled packet
// (read from head) again: its MACs, the inner header's fields and the
// outer header.
func tunnelAddressing(a *wire.Addressing, head []byte, h *wire.Encap) {
	a.DstMAC, a.SrcMAC = wire.MAC(head[0:6]), wire.MAC(head[6:12])
	a.SrcIP, a.DstIP, a.TOS, a.FlowLabel = h.InnerSrc, h.InnerDst, h.InnerTOS, h.InnerFlowLabel
	in := head[h.InnerOff:]
	if h.InnerVersion == 4 {
		a.TTL, a.IPv4ID, a.DF = in[8], binary.BigEndian.Uint16(in[4:]), in[6]&0x40 != 0
	} else {
		a.TTL = in[7]
	}
	a.Tunnel = wire.Tunnel{Present: true, Src: h.Outer.Src, Dst: h.Outer.Dst, TrafficClass: h.Outer.TrafficClass,
		FlowLabel: h.Outer.FlowLabel, HopLimit: h.Outer.HopLimit}
}

// rxFrame is a received frame checked off the engine goroutine, ready to
// become a packet on it.
type rxFrame struct {
	meta     Meta
	src, dst netsim.NodeID
	ecn      uint8
	pfcPrio  uint8
	pfcPause bool
	hdr      [netsim.HdrCap]byte
	frame    []byte // the model's frame (ModelFrame), a copy
}

// check decodes and verifies a received frame: its checksums and ICRC,
// that its addresses are nodes of the network, that the metadata agrees
// with it. f is scratch.
func (c *codec) check(d *Datagram, f *wire.Frame, r *rxFrame) error {
	m := &d.Meta
	r.meta = *m
	b := d.Frame
	if m.SizeBytes <= 0 || m.SizeBytes > 1<<16 || m.PayloadBytes < 0 || m.PayloadBytes > m.SizeBytes ||
		m.Prio >= netsim.NumPrio || int(m.HdrLen) > netsim.HdrCap || m.Flow < -1 || int(m.Flow) >= len(c.net.Flows()) {
		return fmt.Errorf("%w: meta out of range: size %d, payload %d, prio %d, header %d, flow %d",
			ErrMalformed, m.SizeBytes, m.PayloadBytes, m.Prio, m.HdrLen, m.Flow)
	}
	if len(b) > netsim.FrameCap*4 {
		return fmt.Errorf("%w: %d-byte frame", ErrMalformed, len(b))
	}
	if netsim.Kind(m.Kind) == netsim.KindPFC {
		if len(b) < 34 || binary.BigEndian.Uint16(b[12:]) != etherTypeMACControl || binary.BigEndian.Uint16(b[14:]) != pfcOpcode {
			return fmt.Errorf("%w: pfc frame: not an 802.1Qbb frame", ErrMalformed)
		}
		cev := binary.BigEndian.Uint16(b[16:])
		if cev == 0 || cev > 0xFF || cev&(cev-1) != 0 {
			return fmt.Errorf("%w: pfc frame: class-enable vector %#04x names not one priority", ErrMalformed, cev)
		}
		for cev > 1 {
			cev >>= 1
			r.pfcPrio++
		}
		r.pfcPause = binary.BigEndian.Uint16(b[18+2*int(r.pfcPrio):]) != 0
		return nil
	}
	if netsim.Kind(m.Kind) != netsim.KindRoCE && netsim.Kind(m.Kind) != netsim.KindOther {
		return fmt.Errorf("%w: packet kind %d", ErrMalformed, m.Kind)
	}
	if err := c.dec.Decode(b, f); err != nil {
		return fmt.Errorf("%w: frame: %w", ErrMalformed, err)
	}
	if f.IPVersion == 0 {
		return fmt.Errorf("%w: frame without an ip header", ErrMalformed)
	}
	if isRoCE := f.UDP.DstPort == wire.RoCEv2Port; isRoCE != (netsim.Kind(m.Kind) == netsim.KindRoCE) {
		return fmt.Errorf("%w: meta says kind %d, the frame is %v", ErrMalformed, m.Kind, f.Kind)
	}
	srcIP, dstIP := f.IPAddrs()
	var ok bool
	if r.src, ok = c.byAddr[srcIP]; !ok {
		return fmt.Errorf("%w: source %v is no node of the scenario", ErrMalformed, srcIP)
	}
	if r.dst, ok = c.byAddr[dstIP]; !ok {
		return fmt.Errorf("%w: destination %v is no node of the scenario", ErrMalformed, dstIP)
	}
	r.ecn = f.TOS() & 3
	if f.Tunneled {
		r.ecn = f.Outer.TrafficClass & 3 // what the switches mark
	}
	off, err := transportOffset(b)
	if err != nil {
		return err
	}
	if off+int(m.HdrLen) > len(b) {
		return fmt.Errorf("%w: %d header bytes at offset %d of a %d-byte frame", ErrMalformed, m.HdrLen, off, len(b))
	}
	copy(r.hdr[:], b[off:off+int(m.HdrLen)])
	r.frame = nil
	if f.Tunneled && !m.ModelFrame {
		// A tunnelled data packet: the model keeps the head.
		var h wire.Encap
		if err := wire.DecodeEncap(b, &h); err != nil {
			return fmt.Errorf("%w: tunnel: %w", ErrMalformed, err)
		}
		r.frame = append([]byte(nil), b[:h.HeadLen]...)
	}
	if m.ModelFrame {
		if len(b) > netsim.FrameCap {
			return fmt.Errorf("%w: %d-byte control frame", ErrMalformed, len(b))
		}
		r.frame = append([]byte(nil), b...)
	}
	return nil
}

// packet makes the netsim packet of r; call it on the engine goroutine.
func (c *codec) packet(r *rxFrame, from, to netsim.NodeID) *netsim.Packet {
	p := c.net.NewPacket()
	m := &r.meta
	p.SizeBytes, p.PayloadBytes = m.SizeBytes, m.PayloadBytes
	p.Flow, p.SrcQP = netsim.FlowID(m.Flow), m.SrcQP
	p.Kind, p.Prio = netsim.Kind(m.Kind), m.Prio
	if p.Kind == netsim.KindPFC {
		p.Src, p.Dst = from, to
		p.PFCPrio, p.PFCPause = r.pfcPrio, r.pfcPause
		return p
	}
	p.Src, p.Dst, p.ECN = r.src, r.dst, r.ecn
	p.Hdr, p.HdrLen = r.hdr, m.HdrLen
	if r.frame != nil {
		_ = c.net.SetFrame(p, r.frame) // checked: within FrameCap
	}
	return p
}

// skipIPv6Ext walks the IPv6 extension headers (hop-by-hop, routing,
// destination options) from off, whose type is next; it returns the
// header after them and where it starts, false when b ends inside one.
func skipIPv6Ext(b []byte, next uint8, off int) (uint8, int, bool) {
	for next == 0 || next == 43 || next == 60 {
		if len(b) < off+2 {
			return next, off, false
		}
		next = b[off]
		off += (int(b[off+1]) + 1) * 8
	}
	return next, off, true
}

// transportOffset returns where the bytes after the IP header (and the
// UDP header, if any) start in an Ethernet frame: what netsim keeps in
// Packet.Hdr.
func transportOffset(b []byte) (int, error) {
	bad := func(what string) (int, error) { return 0, fmt.Errorf("%w: frame: %s", ErrMalformed, what) }
	if len(b) < wire.EthernetLen {
		return bad("short ethernet header")
	}
	off, et := wire.EthernetLen, binary.BigEndian.Uint16(b[12:])
	if et == wire.EtherTypeVLAN {
		if len(b) < off+4 {
			return bad("short vlan tag")
		}
		et = binary.BigEndian.Uint16(b[16:])
		off += 4
	}
	var proto uint8
	switch et {
	case wire.EtherTypeIPv4:
		if len(b) < off+wire.IPv4MinLen {
			return bad("short ipv4 header")
		}
		if ihl := int(b[off] & 0x0F); ihl < 5 {
			return bad(fmt.Sprintf("ipv4 header length %d words, below 5", ihl))
		}
		proto = b[off+9]
		off += int(b[off]&0x0F) * 4
	case wire.EtherTypeIPv6:
		if len(b) < off+wire.IPv6Len {
			return bad("short ipv6 header")
		}
		proto = b[off+6]
		off += wire.IPv6Len
		var ok bool
		if proto, off, ok = skipIPv6Ext(b, proto, off); !ok {
			return bad("short ipv6 extension header")
		}
		// A tunnel (FCN's ingress PE): the transport follows the inner
		// header, and its extension headers as the outer's.
		switch proto {
		case wire.ProtoIPv6:
			if len(b) < off+wire.IPv6Len {
				return bad("short inner ipv6 header")
			}
			proto = b[off+6]
			off += wire.IPv6Len
			if proto, off, ok = skipIPv6Ext(b, proto, off); !ok {
				return bad("short inner ipv6 extension header")
			}
		case wire.ProtoIPv4:
			if len(b) < off+wire.IPv4MinLen {
				return bad("short inner ipv4 header")
			}
			if ihl := int(b[off] & 0x0F); ihl < 5 {
				return bad(fmt.Sprintf("inner ipv4 header length %d words, below 5", ihl))
			}
			proto = b[off+9]
			off += int(b[off]&0x0F) * 4
		}
	default:
		return bad(fmt.Sprintf("ethertype %#04x", et))
	}
	if proto == wire.ProtoUDP {
		off += wire.UDPLen
	}
	if off > len(b) {
		return bad("headers longer than the frame")
	}
	return off, nil
}
