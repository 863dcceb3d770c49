package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// EtherTypes, IP protocol numbers and header sizes of the layers around the
// formats.
const (
	EtherTypeIPv4 = 0x0800
	EtherTypeIPv6 = 0x86DD
	EtherTypeVLAN = 0x8100 // IEEE 802.1Q

	ProtoHopByHop = 0
	ProtoIPv4     = 4 // IPv4 in IP (a tunnel's inner packet)
	ProtoUDP      = 17
	ProtoIPv6     = 41 // IPv6 in IP (a tunnel's inner packet)
	ProtoRouting  = 43
	ProtoFragment = 44
	ProtoICMPv6   = 58
	ProtoDestOpts = 60

	EthernetLen  = 14
	VLANTagLen   = 4
	IPv4MinLen   = 20
	IPv6Len      = 40
	UDPLen       = 8
	ICMPv6HdrLen = 4

	// MinFrameLen is the shortest Ethernet frame without FCS. Encoders pad
	// shorter frames with zeros up to it; decoders report bytes after the IP
	// packet as Frame.Trailer.
	MinFrameLen = 60
)

// MAC is an Ethernet address.
type MAC [6]byte

// String formats the address as six colon-separated hex octets.
func (m MAC) String() string {
	const hex = "0123456789abcdef"
	var buf [17]byte
	for i, b := range m {
		if i > 0 {
			buf[3*i-1] = ':'
		}
		buf[3*i] = hex[b>>4]
		buf[3*i+1] = hex[b&0xF]
	}
	return string(buf[:])
}

// VLAN is an IEEE 802.1Q tag.
type VLAN struct {
	Present bool
	PCP     uint8  // priority code point, 3 bits
	DEI     bool   // drop eligible
	ID      uint16 // 12 bits
}

// Ethernet is an Ethernet II header with at most one 802.1Q tag.
type Ethernet struct {
	Dst, Src  MAC
	VLAN      VLAN
	EtherType uint16 // of the payload, after the tag
}

// IPv4 is an IPv4 header.
type IPv4 struct {
	TOS            uint8 // DSCP and ECN
	TotalLen       uint16
	ID             uint16
	DF, MF         bool
	FragOffset     uint16 // in 8-octet units
	TTL            uint8
	Protocol       uint8
	Checksum       uint16
	ChecksumStatus Status
	Src, Dst       netip.Addr
	Options        []byte // raw options, a sub-slice of the input; nil when IHL is 5
}

// HeaderLen returns the header length including options.
func (h *IPv4) HeaderLen() int { return IPv4MinLen + len(h.Options) }

// IPv6 is an IPv6 header with the extension headers that follow it.
type IPv6 struct {
	TrafficClass uint8  // DSCP and ECN
	FlowLabel    uint32 // 20 bits
	PayloadLen   uint16
	NextHeader   uint8 // of the fixed header
	HopLimit     uint8
	Src, Dst     netip.Addr
	// Extension headers as on the wire (sub-slices of the input, nil when
	// absent). Only the first of each kind is kept; all are walked.
	HopByHop, Routing, DestOpts []byte
	// Proto is the upper-layer protocol after the extension headers.
	Proto uint8
	// HeaderLen is 40 plus the extension headers.
	HeaderLen int
}

// UDP is a UDP header.
type UDP struct {
	SrcPort, DstPort uint16
	Length           uint16
	Checksum         uint16
	ChecksumStatus   Status
}

// ICMPv6 is the ICMPv6 header (RFC 4443 §2.1).
type ICMPv6 struct {
	Type, Code     uint8
	Checksum       uint16
	ChecksumStatus Status
}

// isIPv6ExtHeader reports whether nh is an extension header we walk: all use
// the 8-octet length unit. Fragment and AH are not walked.
func isIPv6ExtHeader(nh uint8) bool {
	return nh == ProtoHopByHop || nh == ProtoRouting || nh == ProtoDestOpts
}

// decodeEthernet reads the Ethernet header and returns its length.
func decodeEthernet(b []byte, h *Ethernet) (int, error) {
	if len(b) < EthernetLen {
		return 0, fmt.Errorf("ethernet: need %d bytes, have %d: %w", EthernetLen, len(b), ErrTruncated)
	}
	copy(h.Dst[:], b[0:6])
	copy(h.Src[:], b[6:12])
	h.EtherType = binary.BigEndian.Uint16(b[12:14])
	if h.EtherType != EtherTypeVLAN {
		return EthernetLen, nil
	}
	if len(b) < EthernetLen+VLANTagLen {
		return 0, fmt.Errorf("ethernet: 802.1q tag: need %d bytes, have %d: %w", EthernetLen+VLANTagLen, len(b), ErrTruncated)
	}
	tci := binary.BigEndian.Uint16(b[14:16])
	h.VLAN = VLAN{Present: true, PCP: uint8(tci >> 13), DEI: tci&0x1000 != 0, ID: tci & 0x0FFF}
	h.EtherType = binary.BigEndian.Uint16(b[16:18])
	return EthernetLen + VLANTagLen, nil
}

// encodeEthernet writes the Ethernet header; the caller checked the room.
func encodeEthernet(b []byte, h *Ethernet) int {
	copy(b[0:6], h.Dst[:])
	copy(b[6:12], h.Src[:])
	if !h.VLAN.Present {
		binary.BigEndian.PutUint16(b[12:14], h.EtherType)
		return EthernetLen
	}
	binary.BigEndian.PutUint16(b[12:14], EtherTypeVLAN)
	tci := uint16(h.VLAN.PCP&7)<<13 | h.VLAN.ID&0x0FFF
	if h.VLAN.DEI {
		tci |= 0x1000
	}
	binary.BigEndian.PutUint16(b[14:16], tci)
	binary.BigEndian.PutUint16(b[16:18], h.EtherType)
	return EthernetLen + VLANTagLen
}

// decodeIPv4 reads an IPv4 header. It returns the header length and the
// bytes of the packet (header included) as the total length gives them.
func decodeIPv4(b []byte, h *IPv4, verify bool) (hlen int, pkt []byte, err error) {
	if len(b) < IPv4MinLen {
		return 0, nil, fmt.Errorf("ipv4: need %d bytes, have %d: %w", IPv4MinLen, len(b), ErrTruncated)
	}
	if b[0]>>4 != 4 {
		return 0, nil, fmt.Errorf("ipv4: version %d: %w", b[0]>>4, ErrUnsupported)
	}
	hlen = int(b[0]&0x0F) * 4
	if hlen < IPv4MinLen {
		return 0, nil, fmt.Errorf("ipv4: ihl %d below 5: %w", hlen/4, ErrLength)
	}
	if len(b) < hlen {
		return 0, nil, fmt.Errorf("ipv4: ihl says %d bytes, have %d: %w", hlen, len(b), ErrTruncated)
	}
	h.TOS = b[1]
	h.TotalLen = binary.BigEndian.Uint16(b[2:4])
	h.ID = binary.BigEndian.Uint16(b[4:6])
	ff := binary.BigEndian.Uint16(b[6:8])
	h.DF = ff&0x4000 != 0
	h.MF = ff&0x2000 != 0
	h.FragOffset = ff & 0x1FFF
	h.TTL = b[8]
	h.Protocol = b[9]
	h.Checksum = binary.BigEndian.Uint16(b[10:12])
	h.Src = netip.AddrFrom4([4]byte(b[12:16]))
	h.Dst = netip.AddrFrom4([4]byte(b[16:20]))
	if hlen > IPv4MinLen {
		h.Options = b[IPv4MinLen:hlen:hlen]
	}
	switch {
	case !verify:
		h.ChecksumStatus = StatusUnchecked
	case Checksum(b[:hlen]) == 0:
		h.ChecksumStatus = StatusGood
	default:
		h.ChecksumStatus = StatusBad
	}
	if int(h.TotalLen) < hlen {
		return 0, nil, fmt.Errorf("ipv4: total length %d below header length %d: %w", h.TotalLen, hlen, ErrLength)
	}
	if int(h.TotalLen) > len(b) {
		return 0, nil, fmt.Errorf("ipv4: total length %d, have %d bytes: %w", h.TotalLen, len(b), ErrTruncated)
	}
	return hlen, b[:h.TotalLen:h.TotalLen], nil
}

// decodeIPv6Fixed reads the fixed IPv6 header and returns the packet bytes
// its payload length gives.
func decodeIPv6Fixed(b []byte, h *IPv6) ([]byte, error) {
	if len(b) < IPv6Len {
		return nil, fmt.Errorf("ipv6: need %d bytes, have %d: %w", IPv6Len, len(b), ErrTruncated)
	}
	w := binary.BigEndian.Uint32(b[0:4])
	if w>>28 != 6 {
		return nil, fmt.Errorf("ipv6: version %d: %w", w>>28, ErrUnsupported)
	}
	h.TrafficClass = uint8(w >> 20)
	h.FlowLabel = w & 0xFFFFF
	h.PayloadLen = binary.BigEndian.Uint16(b[4:6])
	h.NextHeader = b[6]
	h.HopLimit = b[7]
	h.Src = netip.AddrFrom16([16]byte(b[8:24]))
	h.Dst = netip.AddrFrom16([16]byte(b[24:40]))
	h.Proto = h.NextHeader
	h.HeaderLen = IPv6Len
	if h.PayloadLen == 0 && h.NextHeader == ProtoHopByHop {
		return nil, fmt.Errorf("ipv6: jumbogram: %w", ErrUnsupported)
	}
	n := IPv6Len + int(h.PayloadLen)
	if n > len(b) {
		return nil, fmt.Errorf("ipv6: payload length %d, have %d bytes: %w", h.PayloadLen, len(b)-IPv6Len, ErrTruncated)
	}
	return b[:n:n], nil
}

// encodeIPv6 writes a fixed IPv6 header.
func encodeIPv6(b []byte, tc uint8, flow uint32, payloadLen int, nh, hop uint8, src, dst *[16]byte) {
	binary.BigEndian.PutUint32(b[0:4], 6<<28|uint32(tc)<<20|flow&0xFFFFF)
	binary.BigEndian.PutUint16(b[4:6], uint16(payloadLen))
	b[6] = nh
	b[7] = hop
	copy(b[8:24], src[:])
	copy(b[24:40], dst[:])
}

// decodeUDP reads a UDP header and returns the datagram its length gives.
func decodeUDP(b []byte, h *UDP) ([]byte, error) {
	if len(b) < UDPLen {
		return nil, fmt.Errorf("udp: need %d bytes, have %d: %w", UDPLen, len(b), ErrTruncated)
	}
	h.SrcPort = binary.BigEndian.Uint16(b[0:2])
	h.DstPort = binary.BigEndian.Uint16(b[2:4])
	h.Length = binary.BigEndian.Uint16(b[4:6])
	h.Checksum = binary.BigEndian.Uint16(b[6:8])
	if h.Length < UDPLen {
		return nil, fmt.Errorf("udp: length %d below 8: %w", h.Length, ErrLength)
	}
	if int(h.Length) > len(b) {
		return nil, fmt.Errorf("udp: length %d, ip payload has %d bytes: %w", h.Length, len(b), ErrLength)
	}
	return b[:h.Length:h.Length], nil
}
