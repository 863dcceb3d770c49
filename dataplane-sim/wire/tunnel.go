package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// The tunnel of FCN's ingress PE (fcn-wan-rocev2-tunnels §4.1): the PE
// puts an outer IPv6 header in front of the RoCEv2 packet, its own address
// as source, the flow's assigned label in the Flow Label and the inner
// ECN copied. The draft leaves the encapsulation to the tunnel (VXLAN,
// SRv6, SR-MPLS); this package writes the plain IPv6 one, next header 41
// (IPv6) or 4 (IPv4) as RFC 2473 does, which is also what SRv6 sends with
// one segment and the reduced encapsulation (RFC 8986 H.Encaps.Red: no
// SRH, the egress PE's SID as destination). It adds TunnelOverheadBytes
// to every packet. Encoder.RoCE with Addressing.Tunnel writes whole
// tunnelled frames; the helpers here work on the head of one: the
// simulator's tunnelled packets carry the Ethernet, outer IPv6 and inner
// IP headers as bytes (their transport headers and payload are modelled
// as for every data packet), a congested WAN node reads the label and the
// ECN field there, and the egress PE takes the outer header off.

// TunnelOverheadBytes is what the encapsulation adds to a packet: the
// outer IPv6 header.
const TunnelOverheadBytes = IPv6Len

// Encap is the head of a tunnelled frame as DecodeEncap reads it.
type Encap struct {
	// Outer is the tunnel's fixed IPv6 header (no extension header: the
	// inner packet follows it directly). Its Proto is ProtoIPv6 or
	// ProtoIPv4, HeaderLen 40.
	Outer IPv6
	// InnerVersion is 4 or 6; InnerTOS the inner IPv4 TOS or IPv6
	// traffic class (DSCP and ECN); InnerProto the inner header's protocol
	// (next header); InnerFlowLabel the inner IPv6 flow label.
	InnerVersion   uint8
	InnerTOS       uint8
	InnerProto     uint8
	InnerFlowLabel uint32
	InnerSrc       netip.Addr
	InnerDst       netip.Addr
	// InnerOff is the offset of the inner IP header in the frame, HeadLen
	// the offset right after it (where its transport starts).
	InnerOff, HeadLen int
}

// EncapHead writes the head of a tunnelled RoCEv2 frame into b: Ethernet,
// the outer IPv6 header a.Tunnel describes and the inner IP header
// (a's addresses, TOS, TTL, flow label, next header UDP) of a packet
// whose inner IP payload (UDP header to ICRC) is l4Len bytes. The bytes
// are the first n of the frame RoCE writes with the same addressing and
// a RoCEv2 body of l4Len-UDPLen bytes (RoCEUDPLen gives it); a.Tunnel
// must be present. It returns n, or an error wrapping ErrShortBuffer or
// ErrInvalid.
func (e *Encoder) EncapHead(b []byte, a *Addressing, l4Len int) (int, error) {
	if !a.Tunnel.Present {
		return 0, fmt.Errorf("tunnel: no outer header in the addressing: %w", ErrInvalid)
	}
	if l4Len < UDPLen {
		return 0, fmt.Errorf("tunnel: inner payload of %d bytes, below a udp header: %w", l4Len, ErrInvalid)
	}
	return e.head(b, a, ProtoUDP, l4Len-UDPLen)
}

// RoCEUDPLen returns the UDP length (header included) of a RoCEv2 packet
// with opcode op and payloadBytes of payload as RoCE encodes it: the BTH,
// the extended headers the opcode carries, the payload and its pad, the
// ICRC. An opcode OpcodeHeaders does not know counts the BTH alone.
func RoCEUDPLen(op Opcode, payloadBytes int) int {
	set, _ := OpcodeHeaders(op)
	return UDPLen + BTHLen + set.Len() + payloadBytes + (-payloadBytes & 3) + ICRCLen
}

// DecodeEncap reads the head of a tunnelled frame: the Ethernet header
// (one 802.1Q tag allowed), an outer IPv6 header with next header 41 or 4
// and the inner IPv6 or IPv4 header. The frame may end right after the
// inner header (the simulator's packets carry no more); lengths beyond it
// are not checked, but the inner header's own fields are (version, IHL,
// IPv4 header checksum). A frame that is not IPv6 over Ethernet, or whose
// IPv6 header carries something else, returns an error wrapping
// ErrUnsupported; a short one ErrTruncated; an inner IPv4 header that
// does not verify ErrChecksum.
func DecodeEncap(b []byte, h *Encap) error {
	var eth Ethernet
	n, err := decodeEthernet(b, &eth)
	if err != nil {
		return err
	}
	if eth.EtherType != EtherTypeIPv6 {
		return fmt.Errorf("tunnel: ethertype %#04x is not ipv6: %w", eth.EtherType, ErrUnsupported)
	}
	o := b[n:]
	if len(o) < IPv6Len {
		return fmt.Errorf("tunnel: outer ipv6 header: need %d bytes, have %d: %w", IPv6Len, len(o), ErrTruncated)
	}
	w := binary.BigEndian.Uint32(o[0:4])
	if w>>28 != 6 {
		return fmt.Errorf("tunnel: outer ip version %d: %w", w>>28, ErrUnsupported)
	}
	nh := o[6]
	if nh != ProtoIPv6 && nh != ProtoIPv4 {
		return fmt.Errorf("tunnel: outer next header %d is not ipv6 (41) or ipv4 (4): %w", nh, ErrUnsupported)
	}
	*h = Encap{Outer: IPv6{
		TrafficClass: uint8(w >> 20), FlowLabel: w & 0xFFFFF, PayloadLen: binary.BigEndian.Uint16(o[4:6]),
		NextHeader: nh, HopLimit: o[7], Src: netip.AddrFrom16([16]byte(o[8:24])), Dst: netip.AddrFrom16([16]byte(o[24:40])),
		Proto: nh, HeaderLen: IPv6Len,
	}}
	h.InnerOff = n + IPv6Len
	in := b[h.InnerOff:]
	if nh == ProtoIPv6 {
		if len(in) < IPv6Len {
			return fmt.Errorf("tunnel: inner ipv6 header: need %d bytes, have %d: %w", IPv6Len, len(in), ErrTruncated)
		}
		w := binary.BigEndian.Uint32(in[0:4])
		if w>>28 != 6 {
			return fmt.Errorf("tunnel: next header 41 but inner ip version %d: %w", w>>28, ErrInvalid)
		}
		h.InnerVersion, h.InnerTOS, h.InnerFlowLabel, h.InnerProto = 6, uint8(w>>20), w&0xFFFFF, in[6]
		h.InnerSrc, h.InnerDst = netip.AddrFrom16([16]byte(in[8:24])), netip.AddrFrom16([16]byte(in[24:40]))
		h.HeadLen = h.InnerOff + IPv6Len
		return nil
	}
	if len(in) < IPv4MinLen {
		return fmt.Errorf("tunnel: inner ipv4 header: need %d bytes, have %d: %w", IPv4MinLen, len(in), ErrTruncated)
	}
	if in[0]>>4 != 4 {
		return fmt.Errorf("tunnel: next header 4 but inner ip version %d: %w", in[0]>>4, ErrInvalid)
	}
	hl := int(in[0]&0x0F) * 4
	if hl < IPv4MinLen {
		return fmt.Errorf("tunnel: inner ipv4 header length %d below 20: %w", hl, ErrLength)
	}
	if len(in) < hl {
		return fmt.Errorf("tunnel: inner ipv4 header of %d bytes, have %d: %w", hl, len(in), ErrTruncated)
	}
	if Checksum(in[:hl]) != 0 {
		return fmt.Errorf("tunnel: inner ipv4 header checksum %#04x does not verify: %w", binary.BigEndian.Uint16(in[10:12]), ErrChecksum)
	}
	h.InnerVersion, h.InnerTOS, h.InnerProto = 4, in[1], in[9]
	h.InnerSrc, h.InnerDst = netip.AddrFrom4([4]byte(in[12:16])), netip.AddrFrom4([4]byte(in[16:20]))
	h.HeadLen = h.InnerOff + hl
	return nil
}

// OuterDst returns the destination address of the outer IPv6 header of a
// tunnelled frame, for a switch to tell quickly whether a tunnel ends at
// it: ok is false unless b holds an Ethernet header (one 802.1Q tag
// allowed) and an IPv6 header whose next header is 41 or 4. It checks no
// more than that; DecodeEncap reads and checks the head.
func OuterDst(b []byte) (dst [16]byte, ok bool) {
	off := EthernetLen
	if len(b) >= EthernetLen && binary.BigEndian.Uint16(b[12:]) == EtherTypeVLAN {
		off += VLANTagLen
	}
	if len(b) < off+IPv6Len || binary.BigEndian.Uint16(b[off-2:]) != EtherTypeIPv6 || b[off]>>4 != 6 ||
		b[off+6] != ProtoIPv6 && b[off+6] != ProtoIPv4 {
		return dst, false
	}
	return [16]byte(b[off+24 : off+40]), true
}

// ipOffset returns the offset of the IP header of an Ethernet frame and
// its version.
func ipOffset(b []byte) (int, uint8, error) {
	var eth Ethernet
	n, err := decodeEthernet(b, &eth)
	if err != nil {
		return 0, 0, err
	}
	switch eth.EtherType {
	case EtherTypeIPv4:
		if len(b) < n+IPv4MinLen {
			return 0, 0, fmt.Errorf("ipv4: need %d bytes, have %d: %w", IPv4MinLen, len(b)-n, ErrTruncated)
		}
		return n, 4, nil
	case EtherTypeIPv6:
		if len(b) < n+IPv6Len {
			return 0, 0, fmt.Errorf("ipv6: need %d bytes, have %d: %w", IPv6Len, len(b)-n, ErrTruncated)
		}
		return n, 6, nil
	}
	return 0, 0, fmt.Errorf("ethertype %#04x is not ip: %w", eth.EtherType, ErrUnsupported)
}

// SetOuterECN writes ecn (two bits) into the ECN field of the outermost
// IP header of the Ethernet frame b, as a congested switch marks a
// packet (RFC 3168 §5; of a tunnelled packet, the outer header, RFC 6040
// §4.1), updating an IPv4 header checksum incrementally (RFC 1624).
func SetOuterECN(b []byte, ecn uint8) error {
	off, v, err := ipOffset(b)
	if err != nil {
		return fmt.Errorf("ecn: %w", err)
	}
	ecn &= 3
	if v == 6 {
		b[off+1] = b[off+1]&^0x30 | ecn<<4
		return nil
	}
	old := binary.BigEndian.Uint16(b[off:])
	b[off+1] = b[off+1]&^3 | ecn
	setIPv4Word(b[off:], 0, old)
	return nil
}

// setIPv4Word fixes the checksum of the IPv4 header h after the 16-bit
// word at byte offset i changed from old (RFC 1624 eqn. 3:
// HC' = ~(~HC + ~m + m')).
func setIPv4Word(h []byte, i int, old uint16) {
	sum := uint32(^binary.BigEndian.Uint16(h[10:12])) + uint32(^old) + uint32(binary.BigEndian.Uint16(h[i:]))
	for sum > 0xFFFF {
		sum = sum&0xFFFF + sum>>16
	}
	binary.BigEndian.PutUint16(h[10:12], ^uint16(sum))
}

// DecapECN returns the ECN field of the inner header after
// decapsulation, from the arriving inner and outer fields (RFC 6040
// §4.2, Figure 4, which FCN's copy of the ECN at the ingress PE, §4.1,
// pairs with). drop says the packet must be dropped (an outer CE on a
// Not-ECT inner packet: the mark cannot be passed on); unusual flags
// the combinations RFC 6040 says no compliant tunnel produces (logged,
// the result still applies).
func DecapECN(inner, outer uint8) (ecn uint8, drop, unusual bool) {
	const notECT, ect1, ect0, ce = 0, 1, 2, 3
	inner, outer = inner&3, outer&3
	switch {
	case inner == notECT:
		return notECT, outer == ce, outer != notECT
	case outer == ce:
		return ce, false, false
	case inner == ce:
		return ce, false, outer == ect1
	case outer == ect1:
		return ect1, false, false
	}
	// ECT(0) or ECT(1) inner, Not-ECT or ECT(0) outer: the inner stays.
	return inner, false, inner == ect1 && outer == ect0
}

// Decapsulate takes the outer IPv6 header off the tunnelled frame b in
// place, as the egress PE does: the Ethernet header moves up by
// TunnelOverheadBytes, its EtherType becomes the inner version's, and
// the inner header's ECN field is set by DecapECN (an IPv4 header's
// checksum updated). It returns the inner frame (a sub-slice of b), and
// drop when RFC 6040 says the packet must be dropped (b then is
// unchanged). Errors are DecodeEncap's.
func Decapsulate(b []byte) (inner []byte, drop bool, err error) {
	var h Encap
	if err := DecodeEncap(b, &h); err != nil {
		return nil, false, err
	}
	ecn, drop, _ := DecapECN(h.InnerTOS, h.Outer.TrafficClass)
	if drop {
		return nil, true, nil
	}
	ip := b[h.InnerOff:]
	if h.InnerVersion == 6 {
		ip[1] = ip[1]&^0x30 | ecn<<4
	} else {
		old := binary.BigEndian.Uint16(ip)
		ip[1] = ip[1]&^3 | ecn
		setIPv4Word(ip, 0, old)
	}
	eth := h.InnerOff - IPv6Len
	copy(b[TunnelOverheadBytes:h.InnerOff], b[:eth])
	et := uint16(EtherTypeIPv6)
	if h.InnerVersion == 4 {
		et = EtherTypeIPv4
	}
	binary.BigEndian.PutUint16(b[h.InnerOff-2:], et)
	return b[TunnelOverheadBytes:], false, nil
}
