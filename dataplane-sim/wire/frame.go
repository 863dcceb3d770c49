package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
)

// Kind says which of our formats a decoded frame is.
type Kind uint8

// Frame kinds.
const (
	// KindNone: nothing was recognised (the frame failed to decode early).
	KindNone Kind = iota
	// KindLongHaulICMPv6: Long-haul CNP, ICMPv6 format (§6.1).
	KindLongHaulICMPv6
	// KindLongHaulRoCE: Long-haul CNP, RoCEv2 format (§6.2): opcode 0x81, E=1.
	KindLongHaulRoCE
	// KindCNP: standard RoCEv2 CNP (opcode 0x81, E=0, or any 0x81 frame
	// read by a legacy Decoder).
	KindCNP
	// KindFastCNP: a standard CNP behind a Fast CNP destination option.
	KindFastCNP
	// KindRoCEData: RC, UC or UD data, ACK, read or atomic packet.
	KindRoCEData
	// KindCM: a CM MAD in a UD SEND_ONLY to QP1.
	KindCM
	// KindRateAdvice: SCONE Rate Advice (CodePoints.RateAdviceOpcode).
	KindRateAdvice
	// KindFCN: FCN message (UDP to CodePoints.FCNPort).
	KindFCN
	// KindOther: well-formed layers this package does not interpret further
	// (ARP, TCP, other UDP ports, other ICMPv6 types, RD/XRC/vendor opcodes,
	// IP fragments). The layers that were parsed are filled.
	KindOther
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindLongHaulICMPv6:
		return "long-haul-cnp-icmpv6"
	case KindLongHaulRoCE:
		return "long-haul-cnp-rocev2"
	case KindCNP:
		return "cnp"
	case KindFastCNP:
		return "fast-cnp"
	case KindRoCEData:
		return "rocev2"
	case KindCM:
		return "cm"
	case KindRateAdvice:
		return "rate-advice"
	case KindFCN:
		return "fcn"
	case KindOther:
		return "other"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Frame is a decoded Ethernet frame: every layer's fields and the status of
// every check. Slices in it (options, extension headers, objects' Data,
// payloads) point into the decoded buffer; they are valid while it is.
// Only the fields of the layers present are set; Kind says which format.
type Frame struct {
	Kind Kind
	Eth  Ethernet

	// Tunneled is set for IPv6-in-IPv6 or IPv4-in-IPv6 (next header 41 or
	// 4); Outer is then the tunnel's IPv6 header and IPv4/IPv6 the inner one.
	Tunneled bool
	Outer    IPv6

	// IPVersion is 4 or 6 for the (inner) IP header, 0 when there is none.
	IPVersion uint8
	IPv4      IPv4
	IPv6      IPv6

	UDP    UDP
	ICMPv6 ICMPv6

	// RoCEv2: the BTH and, for data opcodes, the extended headers.
	BTH       BTH
	Transport TransportHeaders

	LongHaul   LongHaul
	RateAdvice RateAdvice
	// HasFastCNP says FastCNP holds the Fast CNP destination option of the
	// (inner) IPv6 header.
	HasFastCNP bool
	FastCNP    FastCNPOption
	FCN        FCNMessage
	CM         CMMessage

	// Payload is, for RoCEv2 data, the payload without pad bytes; for a CNP
	// the bytes between BTH and ICRC (the 16 reserved bytes); for KindOther
	// the bytes after the last parsed header.
	Payload []byte
	// Pad holds the RoCEv2 pad bytes (BTH PadCnt of them).
	Pad []byte

	// ICRC is the invariant CRC as read from the wire (little-endian) and
	// ICRCComputed what the bytes give, when checked.
	ICRC         uint32
	ICRCComputed uint32
	ICRCStatus   Status

	// Trailer holds bytes after the IP packet: Ethernet padding or an FCS.
	Trailer []byte

	// icrcBuf is scratch space for the ICRC, here because a Frame is the
	// one piece of per-decode state the caller owns (a Decoder is shared
	// configuration). It is not part of the decoded value.
	icrcBuf [icrcBufLen]byte
}

// OuterFlowLabel returns the flow label of the outermost IPv6 header: the
// tunnel header of an encapsulated packet (what FCN's ingress PE assigns and
// a congested WAN node copies into an FCN message), otherwise the packet's
// own IPv6 header. ok is false when the outermost header is IPv4.
func (f *Frame) OuterFlowLabel() (label uint32, ok bool) {
	switch {
	case f.Tunneled:
		return f.Outer.FlowLabel, true
	case f.IPVersion == 6:
		return f.IPv6.FlowLabel, true
	}
	return 0, false
}

// IPAddrs returns the (inner) IP source and destination.
func (f *Frame) IPAddrs() (src, dst netip.Addr) {
	if f.IPVersion == 4 {
		return f.IPv4.Src, f.IPv4.Dst
	}
	return f.IPv6.Src, f.IPv6.Dst
}

// TOS returns the (inner) IPv4 TOS or IPv6 traffic class: DSCP and ECN.
func (f *Frame) TOS() uint8 {
	if f.IPVersion == 4 {
		return f.IPv4.TOS
	}
	return f.IPv6.TrafficClass
}

// Addressing returns the addressing of the frame, as an encoder takes it:
// re-encoding a decoded frame with it reproduces the layers around the body.
func (f *Frame) Addressing() Addressing {
	a := Addressing{
		DstMAC:  f.Eth.Dst,
		SrcMAC:  f.Eth.Src,
		VLAN:    f.Eth.VLAN,
		TOS:     f.TOS(),
		SrcPort: f.UDP.SrcPort,
		DstPort: f.UDP.DstPort,
	}
	a.SrcIP, a.DstIP = f.IPAddrs()
	if f.IPVersion == 4 {
		a.TTL, a.IPv4ID, a.DF = f.IPv4.TTL, f.IPv4.ID, f.IPv4.DF
	} else {
		a.TTL, a.FlowLabel = f.IPv6.HopLimit, f.IPv6.FlowLabel
	}
	a.UDPChecksum = f.UDP.Checksum != 0
	if f.Tunneled {
		a.Tunnel = Tunnel{
			Present:      true,
			Src:          f.Outer.Src,
			Dst:          f.Outer.Dst,
			TrafficClass: f.Outer.TrafficClass,
			FlowLabel:    f.Outer.FlowLabel,
			HopLimit:     f.Outer.HopLimit,
		}
	}
	return a
}

// Decoder decodes Ethernet frames into Frames. The zero value is ready to
// use: default code points, every checksum and the ICRC verified, formats
// read as a Long-haul-capable endpoint reads them.
type Decoder struct {
	// CodePoints gives the values the drafts leave TBD. The zero value means
	// DefaultCodePoints().
	CodePoints CodePoints
	// SkipICRC leaves the RoCEv2 ICRC unverified (StatusUnchecked).
	SkipICRC bool
	// SkipChecksums leaves IPv4, UDP, ICMPv6 and RFC 4884 checksums
	// unverified (StatusUnchecked).
	SkipChecksums bool
	// AllowZeroUDPChecksumIPv6 accepts a zero UDP checksum over IPv6
	// (StatusNone), as RFC 6935 allows for tunnels and some RoCEv2 stacks
	// send; by default it is bad, as RFC 8200 §8.1 says.
	AllowZeroUDPChecksumIPv6 bool
	// Legacy reads like an RNIC that knows only the standard CNP: every
	// opcode-0x81 packet is a KindCNP whatever its E bit, the bytes between
	// BTH and ICRC are Payload and not parsed (§8), and a Long-haul ICMPv6
	// message is an unknown informational type (KindOther, §8).
	Legacy bool
	// LegacyStrictLength, with Legacy, rejects a CNP whose bytes between BTH
	// and ICRC are not the standard 16 (ErrLength): the strict RNICs of §8
	// that drop RoCEv2 Long-haul CNPs.
	LegacyStrictLength bool
}

// check returns the status of a checksum whose covered data sum to sum.
func check(sum uint64) Status {
	if csumFold(sum) == 0 {
		return StatusGood
	}
	return StatusBad
}

// Decode reads the Ethernet frame b into f, which it resets first (keeping
// the capacity of f.LongHaul.Objects, so reusing one Frame allocates
// nothing).
//
// Malformed input stops decoding with an error wrapping ErrTruncated,
// ErrLength, ErrExtVersion, ErrObjectLength, ErrUnsupported or ErrInvalid;
// the fields of the layers read until then are filled. A failed check does
// not stop decoding: every field is filled, the layer's status is
// StatusBad, and Decode returns an error wrapping ErrChecksum (IPv4, UDP,
// ICMPv6), ErrExtChecksum (RFC 4884) or ErrICRC, so a tool can print the
// frame and say what is wrong. When several checks fail, the error wraps
// each (errors.Join).
func (d *Decoder) Decode(b []byte, f *Frame) error {
	if !decodeFastOff && d.decodeRoCEv6(b, f) {
		return nil
	}
	f.reset()
	s := decodeState{d: d, cp: d.codePoints()}
	err := s.decode(b, f)
	switch {
	case err == nil:
		return s.checkErr
	case s.checkErr == nil:
		return err
	}
	return errors.Join(err, s.checkErr)
}

// reset clears every field an earlier Decode may have set. The large parts
// that only some formats use are cleared only when the earlier decode used
// them (Kind, IPVersion, Tunneled and HasFastCNP say so), and the ICRC
// scratch is left alone: clearing all of a Frame costs as much as decoding
// a CNP. TestFrameReset checks that nothing stale survives.
func (f *Frame) reset() {
	switch f.Kind {
	case KindLongHaulICMPv6, KindLongHaulRoCE:
		f.LongHaul = LongHaul{Objects: f.LongHaul.Objects[:0]}
	case KindCM:
		f.CM = CMMessage{}
		f.Transport = TransportHeaders{}
	case KindRoCEData:
		f.Transport = TransportHeaders{}
	case KindRateAdvice:
		f.RateAdvice = RateAdvice{}
	case KindFCN:
		f.FCN = FCNMessage{}
	}
	if f.Tunneled {
		f.Outer = IPv6{}
	}
	if f.HasFastCNP {
		f.FastCNP = FastCNPOption{}
	}
	switch f.IPVersion {
	case 4:
		f.IPv4 = IPv4{}
	case 6:
		f.IPv6 = IPv6{}
	}
	f.Kind, f.Tunneled, f.IPVersion, f.HasFastCNP = KindNone, false, 0, false
	f.Eth = Ethernet{}
	f.UDP = UDP{}
	f.ICMPv6 = ICMPv6{}
	f.BTH = BTH{}
	f.Payload, f.Pad, f.Trailer = nil, nil, nil
	f.ICRC, f.ICRCComputed, f.ICRCStatus = 0, 0, StatusNone
}

// decodeFastOff turns decodeRoCEv6 off, for tests that compare it with the
// general decoder.
var decodeFastOff = false

// defaultCodePoints is what a zero Decoder.CodePoints stands for. It is
// read only.
var defaultCodePoints = DefaultCodePoints()

// codePoints returns the configured code points or the defaults. It returns
// a pointer: copying the 7-byte struct into a decodeState built on the
// stack made the next 16-byte load of it wait on a failed store forwarding,
// a sixth of the time of a whole decode.
func (d *Decoder) codePoints() *CodePoints {
	if d.CodePoints.isZero() {
		return &defaultCodePoints
	}
	return &d.CodePoints
}

// decodeState carries one Decode call.
type decodeState struct {
	d        *Decoder
	cp       *CodePoints
	checkErr error // failed checks, joined
}

// fail records a failed check.
func (s *decodeState) fail(err error) {
	if s.checkErr == nil {
		s.checkErr = err
		return
	}
	s.checkErr = errors.Join(s.checkErr, err)
}

func (s *decodeState) decode(b []byte, f *Frame) error {
	n, err := decodeEthernet(b, &f.Eth)
	if err != nil {
		return err
	}
	var pkt []byte // the IP packet, header to end
	switch f.Eth.EtherType {
	case EtherTypeIPv4:
		pkt, err = s.ipv4(b[n:], f)
	case EtherTypeIPv6:
		pkt, err = s.ipv6(b[n:], f, &f.IPv6)
		if err == nil && (f.IPv6.Proto == ProtoIPv6 || f.IPv6.Proto == ProtoIPv4) {
			// A tunnel: keep the outer header, decode the inner packet.
			// The trailer is what follows the outer packet.
			f.Trailer = b[n+len(pkt):]
			f.Tunneled, f.Outer, f.IPv6 = true, f.IPv6, IPv6{}
			f.HasFastCNP, f.FastCNP = false, FastCNPOption{}
			inner := pkt[f.Outer.HeaderLen:]
			if f.Outer.Proto == ProtoIPv4 {
				pkt, err = s.ipv4(inner, f)
			} else {
				pkt, err = s.ipv6(inner, f, &f.IPv6)
			}
			if err != nil {
				return err
			}
			return s.transport(pkt, f)
		}
	default:
		f.Kind = KindOther
		f.Payload = b[n:]
		return nil
	}
	if err != nil {
		return err
	}
	f.Trailer = b[n+len(pkt):]
	return s.transport(pkt, f)
}

// ipv4 decodes an IPv4 header and returns the packet.
func (s *decodeState) ipv4(b []byte, f *Frame) ([]byte, error) {
	f.IPVersion = 4
	_, pkt, err := decodeIPv4(b, &f.IPv4, !s.d.SkipChecksums)
	if err != nil {
		return nil, err
	}
	if f.IPv4.ChecksumStatus == StatusBad {
		s.fail(fmt.Errorf("ipv4: header checksum %#04x does not verify: %w", f.IPv4.Checksum, ErrChecksum))
	}
	return pkt, nil
}

// ipv6 decodes an IPv6 header and walks its extension headers into h.
func (s *decodeState) ipv6(b []byte, f *Frame, h *IPv6) ([]byte, error) {
	f.IPVersion = 6
	pkt, err := decodeIPv6Fixed(b, h)
	if err != nil {
		return nil, err
	}
	off, nh := IPv6Len, h.NextHeader
	for isIPv6ExtHeader(nh) {
		if nh == ProtoHopByHop && off != IPv6Len {
			// RFC 8200 §4.1: only right after the IPv6 header; a Next
			// Header of zero elsewhere is a Parameter Problem (§4).
			return nil, fmt.Errorf("ipv6: hop-by-hop options header at offset %d, not right after the ipv6 header: %w", off, ErrInvalid)
		}
		if len(pkt) < off+2 {
			return nil, fmt.Errorf("ipv6: extension header %d at offset %d: %w", nh, off, ErrTruncated)
		}
		hl := 8 * (int(pkt[off+1]) + 1)
		if len(pkt) < off+hl {
			return nil, fmt.Errorf("ipv6: extension header %d at offset %d is %d bytes, have %d: %w",
				nh, off, hl, len(pkt)-off, ErrTruncated)
		}
		raw := pkt[off : off+hl : off+hl]
		switch {
		case nh == ProtoHopByHop && h.HopByHop == nil:
			h.HopByHop = raw
		case nh == ProtoRouting && h.Routing == nil:
			h.Routing = raw
		case nh == ProtoDestOpts && h.DestOpts == nil:
			h.DestOpts = raw
			opt, _, _, err := DecodeDestOpts(raw, s.cp)
			switch {
			case err == nil:
				f.HasFastCNP, f.FastCNP = true, opt
			case !errors.Is(err, ErrUnsupported):
				return nil, err
			}
		}
		nh, off = pkt[off], off+hl
	}
	h.Proto, h.HeaderLen = nh, off
	return pkt, nil
}

// transport decodes what follows the (inner) IP header.
func (s *decodeState) transport(pkt []byte, f *Frame) error {
	var hlen int
	var proto uint8
	if f.IPVersion == 4 {
		hlen, proto = f.IPv4.HeaderLen(), f.IPv4.Protocol
		if f.IPv4.MF || f.IPv4.FragOffset != 0 {
			f.Kind, f.Payload = KindOther, pkt[hlen:]
			return nil
		}
	} else {
		hlen, proto = f.IPv6.HeaderLen, f.IPv6.Proto
	}
	switch {
	case proto == ProtoUDP:
		return s.udp(pkt, hlen, f)
	case proto == ProtoICMPv6 && f.IPVersion == 6:
		return s.icmpv6(pkt, hlen, f)
	}
	f.Kind, f.Payload = KindOther, pkt[hlen:]
	return nil
}

// pseudoSum returns the sum of the pseudo-header of the IP packet pkt
// (RFC 768, RFC 8200 §8.1), read from the header's address bytes.
func pseudoSum(pkt []byte, length int, proto uint8) uint64 {
	var addrs []byte
	if pkt[0]>>4 == 4 {
		addrs = pkt[12:20]
	} else {
		addrs = pkt[8:40]
	}
	return csumAdd(uint64(length)+uint64(proto), addrs)
}

// udp decodes UDP and the formats carried in it.
func (s *decodeState) udp(pkt []byte, hlen int, f *Frame) error {
	dgram, err := decodeUDP(pkt[hlen:], &f.UDP)
	if err != nil {
		return err
	}
	u := &f.UDP
	switch {
	case u.Checksum == 0 && (f.IPVersion == 4 || s.d.AllowZeroUDPChecksumIPv6):
		u.ChecksumStatus = StatusNone
	case u.Checksum == 0:
		u.ChecksumStatus = StatusBad
		s.fail(fmt.Errorf("udp: zero checksum over ipv6: %w", ErrChecksum))
	default:
		u.ChecksumStatus = StatusUnchecked
		if !s.d.SkipChecksums {
			u.ChecksumStatus = check(csumAdd(pseudoSum(pkt, len(dgram), ProtoUDP), dgram))
		}
		if u.ChecksumStatus == StatusBad {
			s.fail(fmt.Errorf("udp: checksum %#04x does not verify: %w", u.Checksum, ErrChecksum))
		}
	}
	switch u.DstPort {
	case RoCEv2Port:
		return s.roce(pkt, hlen, f)
	case s.cp.FCNPort:
		f.Kind = KindFCN
		f.FCN, err = DecodeFCN(dgram[UDPLen:])
		return err
	}
	f.Kind, f.Payload = KindOther, dgram[UDPLen:]
	return nil
}

// icmpv6 decodes an ICMPv6 message and a Long-haul CNP in it.
func (s *decodeState) icmpv6(pkt []byte, hlen int, f *Frame) error {
	msg := pkt[hlen:]
	if len(msg) < ICMPv6HdrLen {
		return fmt.Errorf("icmpv6: need %d bytes, have %d: %w", ICMPv6HdrLen, len(msg), ErrTruncated)
	}
	h := &f.ICMPv6
	h.Type, h.Code, h.Checksum = msg[0], msg[1], binary.BigEndian.Uint16(msg[2:4])
	h.ChecksumStatus = StatusUnchecked
	if !s.d.SkipChecksums {
		h.ChecksumStatus = check(csumAdd(pseudoSum(pkt, len(msg), ProtoICMPv6), msg))
	}
	if h.ChecksumStatus == StatusBad {
		s.fail(fmt.Errorf("icmpv6: checksum %#04x does not verify: %w", h.Checksum, ErrChecksum))
	}
	if h.Type != s.cp.LongHaulICMPv6Type || s.d.Legacy {
		f.Kind, f.Payload = KindOther, msg[ICMPv6HdrLen:]
		return nil
	}
	f.Kind = KindLongHaulICMPv6
	err := DecodeLongHaul(msg[ICMPv6HdrLen:], &f.LongHaul, !s.d.SkipChecksums)
	f.LongHaul.ICMPCode = h.Code
	if errors.Is(err, ErrExtChecksum) {
		s.fail(err)
		return nil
	}
	return err
}

// roce decodes a RoCEv2 packet: BTH, what follows it, and the ICRC.
func (s *decodeState) roce(pkt []byte, hlen int, f *Frame) error {
	udp := hlen
	roce := pkt[udp+UDPLen : udp+int(f.UDP.Length)]
	if len(roce) < BTHLen+ICRCLen {
		return fmt.Errorf("rocev2: %d bytes cannot hold bth and icrc: %w", len(roce), ErrTruncated)
	}
	decodeBTH(roce, &f.BTH)
	end := len(roce) - ICRCLen
	f.ICRC = binary.LittleEndian.Uint32(roce[end:])
	if s.d.SkipICRC {
		f.ICRCStatus = StatusUnchecked
	} else {
		crc, ok := icrcMasked(pkt, udp, udp+UDPLen+end)
		if !ok {
			crc = icrcCopy(&f.icrcBuf, pkt, udp, udp+UDPLen+end)
		}
		f.ICRCComputed = crc
		f.ICRCStatus = StatusGood
		if f.ICRCComputed != f.ICRC {
			f.ICRCStatus = StatusBad
			s.fail(fmt.Errorf("rocev2: icrc %#08x on the wire, computed %#08x: %w", f.ICRC, f.ICRCComputed, ErrICRC))
		}
	}
	body := roce[BTHLen:end:end]
	op := f.BTH.Opcode
	switch {
	case op == s.cp.RateAdviceOpcode:
		f.Kind = KindRateAdvice
		var err error
		f.RateAdvice, err = DecodeRateAdvice(body)
		return err
	case op == OpCNP:
		return s.cnp(body, f)
	}
	set, ok := OpcodeHeaders(op)
	if !ok {
		f.Kind, f.Payload = KindOther, body
		return nil
	}
	f.Kind = KindRoCEData
	n, err := decodeTransport(body, set, &f.Transport)
	if err != nil {
		return err
	}
	payload := body[n:]
	if set&HasPayload == 0 && len(payload) != 0 {
		return fmt.Errorf("rocev2: opcode %#02x carries no payload, have %d bytes: %w", uint8(op), len(payload), ErrLength)
	}
	pad := int(f.BTH.PadCount)
	if pad > len(payload) {
		return fmt.Errorf("rocev2: pad count %d exceeds the %d-byte payload: %w", pad, len(payload), ErrLength)
	}
	f.Payload, f.Pad = payload[:len(payload)-pad], payload[len(payload)-pad:]
	if op == OpUDSendOnly && f.BTH.DestQP == GSIQP && len(payload) > 1 && payload[1] == MgmtClassCM {
		f.Kind = KindCM
		f.CM, err = DecodeCM(payload)
		return err
	}
	return nil
}

// cnp decodes an opcode-0x81 packet: standard, Long-haul or Fast CNP.
func (s *decodeState) cnp(body []byte, f *Frame) error {
	switch {
	case s.d.Legacy:
		f.Kind, f.Payload = KindCNP, body
		if s.d.LegacyStrictLength && len(body) != CNPReservedLen {
			return fmt.Errorf("cnp: %d bytes between bth and icrc, a strict legacy rnic wants %d: %w",
				len(body), CNPReservedLen, ErrLength)
		}
		return nil
	case f.BTH.E():
		f.Kind = KindLongHaulRoCE
		err := DecodeLongHaul(body, &f.LongHaul, !s.d.SkipChecksums)
		if errors.Is(err, ErrExtChecksum) {
			s.fail(err)
			return nil
		}
		return err
	}
	f.Kind, f.Payload = KindCNP, body
	if f.HasFastCNP {
		f.Kind = KindFastCNP
	}
	if len(body) != CNPReservedLen {
		return fmt.Errorf("cnp: %d bytes between bth and icrc, want %d: %w", len(body), CNPReservedLen, ErrLength)
	}
	return nil
}
