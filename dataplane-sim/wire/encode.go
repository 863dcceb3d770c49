package wire

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
)

// DefaultTTL is the IPv4 TTL and IPv6 hop limit written for a zero
// Addressing.TTL.
const DefaultTTL = 64

// Addressing is everything around a format's body: Ethernet, IP and UDP
// fields. The zero value of each field is a sane default except the
// addresses, which must be set (both IPv4 or both IPv6).
type Addressing struct {
	DstMAC, SrcMAC MAC
	VLAN           VLAN
	SrcIP, DstIP   netip.Addr
	// TOS is the IPv4 TOS or IPv6 traffic class (DSCP and ECN).
	TOS uint8
	// TTL is the IPv4 TTL or IPv6 hop limit; 0 means DefaultTTL.
	TTL uint8
	// FlowLabel is the IPv6 flow label (20 bits).
	FlowLabel uint32
	// IPv4ID and DF are the IPv4 identification and Don't Fragment bit.
	IPv4ID uint16
	DF     bool
	// SrcPort is the UDP source port (RoCEv2 uses it for ECMP entropy).
	SrcPort uint16
	// DstPort is the UDP destination port; 0 means the format's port
	// (RoCEv2Port, CodePoints.FCNPort).
	DstPort uint16
	// UDPChecksum computes the UDP checksum over IPv4 (RoCEv2 usually sends
	// zero there: the ICRC protects the packet). Over IPv6 it is always
	// computed.
	UDPChecksum bool
	// Tunnel wraps the packet in an outer IPv6 header.
	Tunnel Tunnel
}

// Tunnel is an outer IPv6 header (IPv6-in-IPv6 or IPv4-in-IPv6, RFC 2473),
// as the ingress PE of FCN adds with a per-flow flow label.
type Tunnel struct {
	Present      bool
	Src, Dst     netip.Addr // IPv6
	TrafficClass uint8      // FCN copies the inner ECN here
	FlowLabel    uint32
	HopLimit     uint8 // 0 means DefaultTTL
}

// Encoder builds whole frames into a caller's buffer. The zero value uses
// DefaultCodePoints. Every method returns the frame length (padded with
// zeros to MinFrameLen; no FCS) or an error wrapping ErrShortBuffer or
// ErrInvalid, and allocates nothing.
type Encoder struct {
	// CodePoints gives the values the drafts leave TBD; zero means
	// DefaultCodePoints().
	CodePoints CodePoints
}

// codePoints returns the configured code points or the defaults, by
// pointer (as Decoder.codePoints, which says why).
func (e *Encoder) codePoints() *CodePoints {
	if e.CodePoints.isZero() {
		return &defaultCodePoints
	}
	return &e.CodePoints
}

// layout records where open put each header.
type layout struct {
	ip    int // (inner) IP header
	l4    int // UDP or ICMPv6 header
	body  int // after the UDP or ICMPv6 header
	end   int // end of the IP packet
	frame int // frame length after padding
	v6    bool
	proto uint8
	csum4 bool // UDP checksum over IPv4
}

// open validates a and writes the headers of a frame whose UDP payload
// (proto ProtoUDP) or ICMPv6 message after its 4-byte header (ProtoICMPv6)
// is bodyLen bytes. fc, if not nil, adds a Fast CNP destination option.
func (e *Encoder) open(b []byte, a *Addressing, proto uint8, fc *FastCNPOption, dstPort uint16, bodyLen int, cp *CodePoints) (layout, error) {
	l, err := e.plan(a, proto, fc, bodyLen)
	if err != nil {
		return l, err
	}
	if len(b) < l.frame {
		return l, fmt.Errorf("encode: frame needs %d bytes, have %d: %w", l.frame, len(b), ErrShortBuffer)
	}
	if err := e.writeIP(b, a, &l, fc, cp); err != nil {
		return l, err
	}
	l4 := b[l.l4:]
	if proto == ProtoUDP {
		if a.DstPort != 0 {
			dstPort = a.DstPort
		}
		binary.BigEndian.PutUint16(l4[0:], a.SrcPort)
		binary.BigEndian.PutUint16(l4[2:], dstPort)
		binary.BigEndian.PutUint16(l4[4:], uint16(l.end-l.l4))
		l4[6], l4[7] = 0, 0
	} else {
		l4[2], l4[3] = 0, 0
	}
	return l, nil
}

// head writes the Ethernet, tunnel and IP headers of a frame whose
// transport (proto) is bodyLen bytes after its UDP or ICMPv6 header, and
// returns where the transport starts: the head of the frame open writes.
func (e *Encoder) head(b []byte, a *Addressing, proto uint8, bodyLen int) (int, error) {
	l, err := e.plan(a, proto, nil, bodyLen)
	if err != nil {
		return 0, err
	}
	if len(b) < l.l4 {
		return 0, fmt.Errorf("encode: headers need %d bytes, have %d: %w", l.l4, len(b), ErrShortBuffer)
	}
	return l.l4, e.writeIP(b, a, &l, nil, e.codePoints())
}

// plan validates a and lays the frame out.
func (e *Encoder) plan(a *Addressing, proto uint8, fc *FastCNPOption, bodyLen int) (layout, error) {
	var l layout
	if !a.SrcIP.IsValid() || !a.DstIP.IsValid() || a.SrcIP.Is4() != a.DstIP.Is4() {
		return l, fmt.Errorf("addressing: source %v and destination %v must both be ipv4 or both ipv6: %w", a.SrcIP, a.DstIP, ErrInvalid)
	}
	l.v6, l.proto = !a.SrcIP.Is4(), proto
	l.csum4 = a.UDPChecksum
	if !l.v6 && (proto == ProtoICMPv6 || fc != nil) {
		return l, fmt.Errorf("addressing: %v is ipv4, the format needs ipv6: %w", a.SrcIP, ErrInvalid)
	}
	if a.FlowLabel > 0xFFFFF || a.Tunnel.FlowLabel > 0xFFFFF {
		return l, fmt.Errorf("addressing: flow label above 20 bits: %w", ErrInvalid)
	}
	if a.VLAN.ID > 0xFFF || a.VLAN.PCP > 7 {
		return l, fmt.Errorf("addressing: vlan id %d pcp %d out of range: %w", a.VLAN.ID, a.VLAN.PCP, ErrInvalid)
	}
	tun := a.Tunnel.Present
	if tun && (!a.Tunnel.Src.Is6() || !a.Tunnel.Dst.Is6()) {
		return l, fmt.Errorf("addressing: tunnel endpoints %v, %v must be ipv6: %w", a.Tunnel.Src, a.Tunnel.Dst, ErrInvalid)
	}
	ethLen := EthernetLen
	if a.VLAN.Present {
		ethLen += VLANTagLen
	}
	l.ip = ethLen
	if tun {
		l.ip += IPv6Len
	}
	l.l4 = l.ip + IPv4MinLen
	if l.v6 {
		l.l4 = l.ip + IPv6Len
		if fc != nil {
			l.l4 += fc.DestOptsLen()
		}
	}
	l.body = l.l4 + UDPLen
	if proto == ProtoICMPv6 {
		l.body = l.l4 + ICMPv6HdrLen
	}
	l.end = l.body + bodyLen
	l.frame = max(l.end, MinFrameLen)
	if l.end-l.ip > 0xFFFF {
		return l, fmt.Errorf("addressing: ip packet of %d bytes: %w", l.end-l.ip, ErrInvalid)
	}
	return l, nil
}

// writeIP writes the Ethernet header, the tunnel's outer IPv6 header and
// the IP header (with a Fast CNP option, fc) of the layout l.
func (e *Encoder) writeIP(b []byte, a *Addressing, l *layout, fc *FastCNPOption, cp *CodePoints) error {
	tun := a.Tunnel.Present
	ttl := a.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	ethLen := EthernetLen
	if a.VLAN.Present {
		ethLen += VLANTagLen
	}
	proto := l.proto

	// The Ethernet header, as encodeEthernet writes it (without building an
	// Ethernet on the stack).
	copy(b[0:6], a.DstMAC[:])
	copy(b[6:12], a.SrcMAC[:])
	et := uint16(EtherTypeIPv4)
	if l.v6 || tun {
		et = EtherTypeIPv6
	}
	if a.VLAN.Present {
		tci := uint16(a.VLAN.PCP&7)<<13 | a.VLAN.ID&0x0FFF
		if a.VLAN.DEI {
			tci |= 0x1000
		}
		binary.BigEndian.PutUint16(b[12:14], EtherTypeVLAN)
		binary.BigEndian.PutUint16(b[14:16], tci)
	}
	binary.BigEndian.PutUint16(b[ethLen-2:ethLen], et)
	if tun {
		hop := a.Tunnel.HopLimit
		if hop == 0 {
			hop = DefaultTTL
		}
		inner := uint8(ProtoIPv6)
		if !l.v6 {
			inner = ProtoIPv4
		}
		src, dst := a.Tunnel.Src.As16(), a.Tunnel.Dst.As16()
		encodeIPv6(b[ethLen:], a.Tunnel.TrafficClass, a.Tunnel.FlowLabel, l.end-l.ip, inner, hop, &src, &dst)
	}
	ip := b[l.ip:]
	if l.v6 {
		nh := proto
		if fc != nil {
			nh = ProtoDestOpts
			if _, err := fc.EncodeDestOpts(ip[IPv6Len:l.l4-l.ip], proto, cp); err != nil {
				return err
			}
		}
		src, dst := a.SrcIP.As16(), a.DstIP.As16()
		encodeIPv6(ip, a.TOS, a.FlowLabel, l.end-l.ip-IPv6Len, nh, ttl, &src, &dst)
	} else {
		ip[0], ip[1] = 0x45, a.TOS
		binary.BigEndian.PutUint16(ip[2:], uint16(l.end-l.ip))
		binary.BigEndian.PutUint16(ip[4:], a.IPv4ID)
		ip[6], ip[7] = 0, 0
		if a.DF {
			ip[6] = 0x40
		}
		ip[8], ip[9], ip[10], ip[11] = ttl, proto, 0, 0
		src, dst := a.SrcIP.As4(), a.DstIP.As4()
		copy(ip[12:16], src[:])
		copy(ip[16:20], dst[:])
		binary.BigEndian.PutUint16(ip[10:], Checksum(ip[:IPv4MinLen]))
	}
	return nil
}

// close computes the ICRC (roce), then the UDP or ICMPv6 checksum, pads the
// frame and returns its length.
func (e *Encoder) close(b []byte, a *Addressing, l *layout, roce bool) int {
	if roce {
		pkt := b[l.ip:l.end]
		udp, end := l.l4-l.ip, len(pkt)-ICRCLen
		crc, ok := icrcMasked(pkt, udp, end)
		if !ok {
			crc = icrcInPlace(pkt, udp, end)
		}
		putICRC(pkt[end:], crc)
	}
	if l.v6 || l.csum4 {
		// The pseudo-header's addresses are those open wrote in the IP
		// header, right before the message unless a Fast CNP option is
		// between them: one pass sums both. Length and protocol are added
		// byte-swapped to the little-endian sum (see csumLE64).
		msg := b[l.l4:l.end]
		var s, c uint64
		switch {
		case !l.v6:
			s = csumLE64(b[l.ip+12 : l.end])
		case l.l4 == l.ip+IPv6Len:
			s = csumLE64(b[l.ip+8 : l.end])
		default:
			s, c = bits.Add64(csumLE64(b[l.ip+8:l.ip+IPv6Len]), csumLE64(msg), 0)
			s += c
		}
		s, c = bits.Add64(s, uint64(bits16swap(uint16(len(msg))))+uint64(l.proto)<<8, 0)
		sum := bits16swap(^csumFold64(s + c))
		if l.proto == ProtoUDP {
			if sum == 0 {
				sum = 0xFFFF // RFC 768: a computed zero is sent as all ones
			}
			binary.BigEndian.PutUint16(msg[6:], sum)
		} else {
			binary.BigEndian.PutUint16(msg[2:], sum)
		}
	}
	if l.frame > l.end {
		clear(b[l.end:l.frame])
	}
	return l.frame
}

// LongHaulICMPv6 encodes a Long-haul CNP in ICMPv6 format (§6.1): type
// CodePoints.LongHaulICMPv6Type, code m.ICMPCode, the body and, when m has
// objects, the extension. a must be IPv6.
func (e *Encoder) LongHaulICMPv6(b []byte, a *Addressing, m *LongHaul) (int, error) {
	cp := e.codePoints()
	if err := m.Validate(cp.LongHaulClassNum); err != nil {
		return 0, err
	}
	l, err := e.open(b, a, ProtoICMPv6, nil, 0, m.Len(), cp)
	if err != nil {
		return 0, err
	}
	b[l.l4], b[l.l4+1] = cp.LongHaulICMPv6Type, m.ICMPCode
	if err := m.encodeTo(b[l.body:l.end], cp.LongHaulClassNum); err != nil {
		return 0, err
	}
	return e.close(b, a, &l, false), nil
}

// encodeTo writes a validated body and extension into b (exactly m.Len()).
func (m *LongHaul) encodeTo(b []byte, classNum uint8) error {
	m.encodeBody(b)
	if len(m.Objects) == 0 {
		return nil
	}
	_, err := EncodeExtension(b[LongHaulBodyLen:], m.Objects, classNum)
	return err
}

// LongHaulRoCE encodes a Long-haul CNP in RoCEv2 format (§6.2): a CNP BTH
// with E=1 (§6.2.3 values, DestQP and P_Key from c), the 12-octet body, the
// extension when m has objects, and the ICRC over all of it.
func (e *Encoder) LongHaulRoCE(b []byte, a *Addressing, c *CNP, m *LongHaul) (int, error) {
	cp := e.codePoints()
	if err := m.Validate(cp.LongHaulClassNum); err != nil {
		return 0, err
	}
	bth := c.bth(true)
	l, err := e.open(b, a, ProtoUDP, nil, RoCEv2Port, BTHLen+m.Len()+ICRCLen, cp)
	if err != nil {
		return 0, err
	}
	if _, err := bth.Encode(b[l.body:]); err != nil {
		return 0, err
	}
	if err := m.encodeTo(b[l.body+BTHLen:l.end-ICRCLen], cp.LongHaulClassNum); err != nil {
		return 0, err
	}
	return e.close(b, a, &l, true), nil
}

// CNP encodes a standard RoCEv2 CNP: BTH (opcode 0x81, BECN), 16 reserved
// zero bytes, ICRC.
func (e *Encoder) CNP(b []byte, a *Addressing, c *CNP) (int, error) {
	return e.cnp(b, a, c, nil)
}

// FastCNP encodes a Fast CNP (draft-xiao-rtgwg-rocev2-fast-cnp): a standard
// CNP whose IPv6 header is followed by a Destination Options header holding
// o. a must be IPv6; c.DestQP is the data packet's destination QP.
func (e *Encoder) FastCNP(b []byte, a *Addressing, c *CNP, o *FastCNPOption) (int, error) {
	if o == nil {
		return 0, fmt.Errorf("fast cnp: no option: %w", ErrInvalid)
	}
	return e.cnp(b, a, c, o)
}

func (e *Encoder) cnp(b []byte, a *Addressing, c *CNP, o *FastCNPOption) (int, error) {
	cp := e.codePoints()
	bth := c.bth(false)
	l, err := e.open(b, a, ProtoUDP, o, RoCEv2Port, BTHLen+CNPReservedLen+ICRCLen, cp)
	if err != nil {
		return 0, err
	}
	if _, err := bth.Encode(b[l.body:]); err != nil {
		return 0, err
	}
	clear(b[l.body+BTHLen : l.end-ICRCLen])
	return e.close(b, a, &l, true), nil
}

// RateAdvice encodes a SCONE Rate Advice message: a BTH with opcode
// CodePoints.RateAdviceOpcode, P_Key 0xFFFF, DestQP r.DestQP (the sender's
// QP, so its RNIC delivers it there), PSN 0, then the 16-byte packet and the
// ICRC.
func (e *Encoder) RateAdvice(b []byte, a *Addressing, r *RateAdvice) (int, error) {
	cp := e.codePoints()
	bth := BTH{Opcode: cp.RateAdviceOpcode, PKey: 0xFFFF, DestQP: r.DestQP}
	l, err := e.open(b, a, ProtoUDP, nil, RoCEv2Port, BTHLen+RateAdviceLen+ICRCLen, cp)
	if err != nil {
		return 0, err
	}
	if _, err := bth.Encode(b[l.body:]); err != nil {
		return 0, err
	}
	if _, err := r.Encode(b[l.body+BTHLen:]); err != nil {
		return 0, err
	}
	return e.close(b, a, &l, true), nil
}

// RoCE encodes any RoCEv2 packet from its BTH. For an RC, UC or UD opcode
// (OpcodeHeaders) it writes the extended headers the opcode carries from th
// (nil means all zero), then the payload and the pad bytes, setting the
// BTH's PadCnt from the payload length. For other opcodes it writes payload
// as it is after the BTH, with the BTH unchanged. The ICRC ends the packet.
func (e *Encoder) RoCE(b []byte, a *Addressing, bth *BTH, th *TransportHeaders, payload []byte) (int, error) {
	cp := e.codePoints()
	h := *bth
	set, known := OpcodeHeaders(h.Opcode)
	pad := 0
	if known {
		if set&HasPayload == 0 && len(payload) != 0 {
			return 0, fmt.Errorf("rocev2: opcode %#02x carries no payload, given %d bytes: %w", uint8(h.Opcode), len(payload), ErrInvalid)
		}
		pad = -len(payload) & 3
		h.PadCount = uint8(pad)
		if th == nil {
			th = &TransportHeaders{}
		}
	}
	bodyLen := BTHLen + set.Len() + len(payload) + pad + ICRCLen
	l, err := e.open(b, a, ProtoUDP, nil, RoCEv2Port, bodyLen, cp)
	if err != nil {
		return 0, err
	}
	off := l.body
	n, err := h.Encode(b[off:])
	if err != nil {
		return 0, err
	}
	off += n
	if known {
		n, err := encodeTransport(b[off:], set, th)
		if err != nil {
			return 0, err
		}
		off += n
	}
	off += copy(b[off:], payload)
	clear(b[off : off+pad])
	return e.close(b, a, &l, true), nil
}

// CM encodes a CM MAD as RoCEv2 sends it: UD SEND_ONLY to QP1 (P_Key
// 0xFFFF, the given PSN), DETH with the GSI Q_Key and source QP 1, the
// 256-byte MAD, ICRC.
func (e *Encoder) CM(b []byte, a *Addressing, psn uint32, m *CMMessage) (int, error) {
	cp := e.codePoints()
	bth := BTH{Opcode: OpUDSendOnly, PKey: 0xFFFF, DestQP: GSIQP, PSN: psn}
	l, err := e.open(b, a, ProtoUDP, nil, RoCEv2Port, BTHLen+DETHLen+MADLen+ICRCLen, cp)
	if err != nil {
		return 0, err
	}
	off := l.body
	if _, err := bth.Encode(b[off:]); err != nil {
		return 0, err
	}
	off += BTHLen
	th := TransportHeaders{DETH: DETH{QKey: GSIQKey, SrcQP: GSIQP}}
	encodeTransport(b[off:], HasDETH, &th)
	off += DETHLen
	if _, err := m.Encode(b[off : off+MADLen]); err != nil {
		return 0, err
	}
	return e.close(b, a, &l, true), nil
}

// FCN encodes an FCN message: UDP to CodePoints.FCNPort with the 4-byte
// body. The draft sends it over IPv6 and may copy m.FlowLabel into the IPv6
// flow label: set a.FlowLabel for that.
func (e *Encoder) FCN(b []byte, a *Addressing, m *FCNMessage) (int, error) {
	cp := e.codePoints()
	l, err := e.open(b, a, ProtoUDP, nil, cp.FCNPort, FCNMessageLen, cp)
	if err != nil {
		return 0, err
	}
	if _, err := m.Encode(b[l.body:l.end]); err != nil {
		return 0, err
	}
	return e.close(b, a, &l, false), nil
}
