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
// Every masked field is all ones, so the CRC runs over segments of the
// packet itself with the masked bytes taken from a constant array: nothing
// is copied and nothing escapes.

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

// icrcCopy returns the invariant CRC of pkt[:end] like icrc, faster: it
// copies the 8 bytes of 0xFF and as much of pkt as fits into buf, masks the
// copy, and runs crc32 once over it (the carry-less-multiply path of
// hash/crc32 needs 64 contiguous bytes) and once over what did not fit.
// buf must not be on the stack of a hot caller: crc32.Update makes it
// escape. When the masked headers do not fit it falls back to icrc.
func icrcCopy(buf *[icrcBufLen]byte, pkt []byte, udp, end int) uint32 {
	n := icrcPrepare(buf, pkt, udp, end)
	if n < 0 {
		return icrc(pkt, udp, end)
	}
	return icrcFinish(buf, pkt, n, end)
}

// icrcPrepare copies the 8 bytes of 0xFF and as much of pkt[:end] as fits
// into buf and masks the copy; it returns the bytes of pkt copied, or -1
// when the masked headers do not fit (icrc must be used then). Decode calls
// it before verifying the UDP checksum and icrcFinish after: the byte stores
// of the copy and the mask have then left the store buffer when the
// carry-less-multiply CRC loads the copy in 16-byte words. Loaded back at
// once, every such load waits for a failed store forwarding, which doubled
// the cost of the CRC.
func icrcPrepare(buf *[icrcBufLen]byte, pkt []byte, udp, end int) int {
	n := min(end, icrcBufLen-8)
	if n < udp+13 {
		return -1
	}
	copy(buf[:8], icrcOnes[:])
	m := buf[8 : 8+n]
	copy(m, pkt[:n])
	maskICRC(m, udp)
	return n
}

// icrcFinish completes icrcPrepare: the CRC of the prepared copy, then of
// what did not fit.
func icrcFinish(buf *[icrcBufLen]byte, pkt []byte, n, end int) uint32 {
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
		return int(pkt[0]&0x0F) * 4, nil
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
