package wire

import (
	"encoding/binary"
	"strconv"
)

// Status is the outcome of one checksum or ICRC check, kept in the decoded
// frame so that a tool can show a frame whose check failed.
type Status uint8

const (
	// StatusNone: the field is absent or does not apply (a zero UDP checksum
	// over IPv4, no ICRC in an ICMPv6 frame, no extension header).
	StatusNone Status = iota
	// StatusUnchecked: the field is present but verification was switched off.
	StatusUnchecked
	// StatusGood: the field verifies.
	StatusGood
	// StatusBad: the field does not verify.
	StatusBad
)

// String names the status as the decode command prints it.
func (s Status) String() string {
	switch s {
	case StatusNone:
		return "none"
	case StatusUnchecked:
		return "unchecked"
	case StatusGood:
		return "good"
	case StatusBad:
		return "bad"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// csumAdd adds b to a running one's complement sum as big-endian 16-bit
// words. The sum is kept unfolded in 64 bits; b must start at an even offset
// of the checksummed data (every caller's segments do).
func csumAdd(sum uint64, b []byte) uint64 {
	for len(b) >= 8 {
		sum += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	if len(b) >= 4 {
		sum += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		sum += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint64(b[0]) << 8
	}
	return sum
}

// csumFold folds a running sum to 16 bits and complements it.
func csumFold(sum uint64) uint16 {
	for sum>>16 != 0 {
		sum = sum&0xFFFF + sum>>16
	}
	return ^uint16(sum)
}

// Checksum returns the Internet checksum (RFC 1071) of b: the one's
// complement of the one's complement sum of its 16-bit words. A header that
// carries its own correct checksum sums to zero.
func Checksum(b []byte) uint16 { return csumFold(csumAdd(0, b)) }

// pseudoSum6 is the sum of the IPv6 pseudo-header (RFC 8200 §8.1).
func pseudoSum6(src, dst *[16]byte, length uint32, proto uint8) uint64 {
	s := csumAdd(0, src[:])
	s = csumAdd(s, dst[:])
	return s + uint64(length>>16) + uint64(length&0xFFFF) + uint64(proto)
}

// pseudoSum4 is the sum of the IPv4 pseudo-header (RFC 768).
func pseudoSum4(src, dst *[4]byte, length uint16, proto uint8) uint64 {
	return uint64(binary.BigEndian.Uint16(src[:2])) + uint64(binary.BigEndian.Uint16(src[2:])) +
		uint64(binary.BigEndian.Uint16(dst[:2])) + uint64(binary.BigEndian.Uint16(dst[2:])) +
		uint64(length) + uint64(proto)
}
