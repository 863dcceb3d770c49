package wire

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The RoCEv2 invariant CRC (IBTA Annex A17, as the vectors in
// shared/vectors/roce-third-party.txt confirm): CRC-32 IEEE over 8 bytes of
// 0xFF, then the IP header through the last byte before the ICRC, with the
// fields a router may change set to all ones first:
//
//	IPv4: TOS (DSCP+ECN), TTL, header checksum
//	IPv6: traffic class, flow label, hop limit
//	UDP:  checksum
//	BTH:  byte 4 (FECN, BECN and the reserved bits, so the Long-haul CNP E bit)
//
// The result goes on the wire little-endian. Length fields are taken as they
// are on the wire (they include the ICRC). IPv4 options and IPv6 extension
// headers are covered as they are, unmasked: that is what a receiver that
// sees them computes, and none of our formats puts mutable data in them.
//
// Every masked field is all ones, so a masked packet is the packet OR-ed
// with a constant mask: icrcMasked (the amd64 assembly icrcCLMUL) masks as
// it loads, with nothing copied. Without it, icrcCopy masks a copy, and
// icrc runs over segments of the packet itself with the masked bytes taken
// from a constant array.

// icrcOnes supplies the masked bytes, and icrcIPv6Word0 the first word of
// an IPv6 header (version 6, traffic class and flow label all ones). They
// are package-level because crc32.Update makes its argument escape: a stack
// copy would be a heap allocation per packet. They are never written.
var (
	icrcOnes      = [8]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	icrcIPv6Word0 = [4]byte{0x6F, 0xFF, 0xFF, 0xFF}
)

// icrcSeed is the CRC state after the 8 bytes of 0xFF that stand for the
// InfiniBand LRH; TestICRCSeed checks it against crc32.
const icrcSeed = 0x2144df1c

// ICRCLen is the size of the RoCEv2 invariant CRC.
const ICRCLen = 4

// icrcBufLen is the size of the scratch buffer icrcCopy masks into: the
// 8-byte prefix and an IPv6 packet up to 184 bytes, which holds every
// control format whole and the headers of any data packet.
const icrcBufLen = 192

// icrcMaskLen is the size of a mask of icrcMasks, and the most bytes
// icrcCLMUL takes.
const icrcMaskLen = 128

// icrcMaxMaskUDP is the largest UDP offset icrcMasks6 covers. IPv4 puts UDP
// at 60 at most.
const icrcMaxMaskUDP = 96

// icrcMasks4 and icrcMasks6 hold, for IPv4 with UDP at 4i and for IPv6 with
// UDP at 40+8i, 0xFF (0x0F in the IPv6 version byte) where the ICRC masks a
// field and zero elsewhere: a packet OR-ed with its mask is the masked
// packet, so icrcCLMUL masks as it loads and nothing is copied.
var icrcMasks4, icrcMasks6 = func() (m4 [60/4 + 1][icrcMaskLen]byte, m6 [(icrcMaxMaskUDP-IPv6Len)/8 + 1][icrcMaskLen]byte) {
	for i := range m4 {
		if udp := 4 * i; udp >= IPv4MinLen {
			m := &m4[i]
			m[0] = 0x40
			maskICRC(m[:], udp)
			m[0] = 0
		}
	}
	for i := range m6 {
		m := &m6[i]
		m[0] = 0x60
		maskICRC(m[:], IPv6Len+8*i)
		m[0] = 0x0F
	}
	return
}()

// icrcMasked returns the invariant CRC of pkt[:end] like icrc, with
// icrcCLMUL, or ok false when that does not apply (no PCLMULQDQ, headers
// that do not fit a mask). A packet longer than icrcMaskLen runs its first
// 113-128 bytes, which hold every masked field, through icrcCLMUL and the
// rest, a multiple of 16 bytes, through hash/crc32.
func icrcMasked(pkt []byte, udp, end int) (crc uint32, ok bool) {
	if !haveCLMUL || udp > icrcMaxMaskUDP || end < 16 || end > len(pkt) {
		return 0, false
	}
	var mask *[icrcMaskLen]byte
	switch {
	case pkt[0]>>4 == 6 && udp >= IPv6Len && udp%8 == 0:
		mask = &icrcMasks6[(udp-IPv6Len)/8]
	case pkt[0]>>4 == 4 && udp >= IPv4MinLen && udp <= 60 && udp%4 == 0:
		mask = &icrcMasks4[udp/4]
	default:
		return 0, false
	}
	if end <= icrcMaskLen {
		return ^icrcCLMUL(^uint32(icrcSeed), pkt[:end], mask), true
	}
	rest := (end - (icrcMaskLen - 15)) &^ 15
	crc = ^icrcCLMUL(^uint32(icrcSeed), pkt[:end-rest], mask)
	return crc32.Update(crc, crc32.IEEETable, pkt[end-rest:end]), true
}

// icrcCopy returns the invariant CRC of pkt[:end] like icrc, faster when
// icrcMasked does not apply: it copies the 8 bytes of 0xFF and as much of
// pkt as fits into buf, masks the copy, and runs crc32 once over it (the
// carry-less-multiply path of hash/crc32 needs 64 contiguous bytes) and
// once over what did not fit. buf must not be on the stack of a hot
// caller: crc32.Update makes it escape. When the masked headers do not fit
// it falls back to icrc.
func icrcCopy(buf *[icrcBufLen]byte, pkt []byte, udp, end int) uint32 {
	n := min(end, icrcBufLen-8)
	if n < udp+13 {
		return icrc(pkt, udp, end)
	}
	copy(buf[:8], icrcOnes[:])
	m := buf[8 : 8+n]
	copy(m, pkt[:n])
	maskICRC(m, udp)
	crc := crc32.Update(0, crc32.IEEETable, buf[:8+n])
	if n < end {
		crc = crc32.Update(crc, crc32.IEEETable, pkt[n:end])
	}
	return crc
}

// maskICRC sets the fields the ICRC does not cover to all ones, in a packet
// that starts at the IP header with UDP at offset udp.
func maskICRC(p []byte, udp int) {
	if p[0]>>4 == 6 {
		p[0] |= 0x0F
		p[1], p[2], p[3] = 0xFF, 0xFF, 0xFF
		p[7] = 0xFF
	} else {
		p[1], p[8], p[10], p[11] = 0xFF, 0xFF, 0xFF, 0xFF
	}
	p[udp+6], p[udp+7] = 0xFF, 0xFF
	p[udp+12] = 0xFF
}

// icrcInPlace computes the ICRC of a packet the caller owns by masking it in
// place, running crc32 once, and restoring the masked bytes.
func icrcInPlace(p []byte, udp, end int) uint32 {
	var saved [9]byte
	copy(saved[:4], p[:4])
	saved[4], saved[5], saved[6] = p[7], p[8], p[10]
	saved[7], saved[8] = p[11], p[udp+12]
	csum0, csum1 := p[udp+6], p[udp+7]
	maskICRC(p, udp)
	crc := crc32.Update(icrcSeed, crc32.IEEETable, p[:end])
	copy(p[:4], saved[:4])
	p[7], p[8], p[10] = saved[4], saved[5], saved[6]
	p[11], p[udp+12] = saved[7], saved[8]
	p[udp+6], p[udp+7] = csum0, csum1
	return crc
}

// icrc returns the invariant CRC of pkt[:end]. pkt starts at the IP header
// (version 4 or 6 in its first nibble), udp is the offset of the UDP header
// and end the offset of the ICRC. The caller has checked the bounds:
// udp+8+BTHLen <= end <= len(pkt).
func icrc(pkt []byte, udp, end int) uint32 {
	tab := crc32.IEEETable
	ones := icrcOnes[:]
	crc := uint32(icrcSeed)
	if pkt[0]>>4 == 6 {
		// Version 6, then 28 bits of traffic class and flow label.
		crc = crc32.Update(crc, tab, icrcIPv6Word0[:])
		crc = crc32.Update(crc, tab, pkt[4:7]) // payload length, next header
		crc = crc32.Update(crc, tab, ones[:1]) // hop limit
		crc = crc32.Update(crc, tab, pkt[8:udp+6])
	} else {
		crc = crc32.Update(crc, tab, pkt[:1])  // version, IHL
		crc = crc32.Update(crc, tab, ones[:1]) // TOS
		crc = crc32.Update(crc, tab, pkt[2:8]) // total length, ID, flags, offset
		crc = crc32.Update(crc, tab, ones[:1]) // TTL
		crc = crc32.Update(crc, tab, pkt[9:10])
		crc = crc32.Update(crc, tab, ones[:2]) // header checksum
		crc = crc32.Update(crc, tab, pkt[12:udp+6])
	}
	crc = crc32.Update(crc, tab, ones[:2]) // UDP checksum
	crc = crc32.Update(crc, tab, pkt[udp+8:udp+12])
	crc = crc32.Update(crc, tab, ones[:1]) // BTH byte 4
	return crc32.Update(crc, tab, pkt[udp+13:end])
}

// ICRC computes the invariant CRC of a RoCEv2 packet. pkt starts at the IP
// header and ends with the 4-byte ICRC (whose value is ignored); IPv6
// extension headers are walked to find UDP. It returns the CRC as a number:
// on the wire it is written little-endian.
func ICRC(pkt []byte) (uint32, error) {
	udp, err := findUDP(pkt)
	if err != nil {
		return 0, err
	}
	end := len(pkt) - ICRCLen
	if end < udp+UDPLen+BTHLen {
		return 0, fmt.Errorf("icrc: %d bytes leave no room for udp, bth and icrc: %w", len(pkt), ErrTruncated)
	}
	return icrc(pkt, udp, end), nil
}

// findUDP returns the offset of the UDP header in an IP packet.
func findUDP(pkt []byte) (int, error) {
	if len(pkt) < 1 {
		return 0, fmt.Errorf("icrc: empty packet: %w", ErrTruncated)
	}
	switch pkt[0] >> 4 {
	case 4:
		if len(pkt) < IPv4MinLen {
			return 0, fmt.Errorf("icrc: ipv4 header: %w", ErrTruncated)
		}
		if pkt[9] != ProtoUDP {
			return 0, fmt.Errorf("icrc: ipv4 protocol %d is not udp: %w", pkt[9], ErrUnsupported)
		}
		// An IHL below 5 would put UDP inside the fixed header, where the
		// masked spans of icrc overlap or run backwards.
		hlen := int(pkt[0]&0x0F) * 4
		if hlen < IPv4MinLen {
			return 0, fmt.Errorf("icrc: ipv4 ihl %d below 5: %w", hlen/4, ErrLength)
		}
		return hlen, nil
	case 6:
		if len(pkt) < IPv6Len {
			return 0, fmt.Errorf("icrc: ipv6 header: %w", ErrTruncated)
		}
		nh, off := pkt[6], IPv6Len
		for nh != ProtoUDP {
			if !isIPv6ExtHeader(nh) {
				return 0, fmt.Errorf("icrc: ipv6 next header %d is not udp: %w", nh, ErrUnsupported)
			}
			if len(pkt) < off+8 {
				return 0, fmt.Errorf("icrc: ipv6 extension header: %w", ErrTruncated)
			}
			nh, off = pkt[off], off+8*(int(pkt[off+1])+1)
		}
		return off, nil
	}
	return 0, fmt.Errorf("icrc: ip version %d: %w", pkt[0]>>4, ErrUnsupported)
}

// putICRC writes crc little-endian, as RoCEv2 puts it on the wire.
func putICRC(b []byte, crc uint32) { binary.LittleEndian.PutUint32(b, crc) }
