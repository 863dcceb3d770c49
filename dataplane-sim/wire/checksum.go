package wire

import (
	"encoding/binary"
	"math/bits"
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
	return sum + uint64(bits.ReverseBytes16(csumLE(b)))
}

// csumLE returns the one's complement sum of b taken as little-endian
// 16-bit words, folded to 16 bits: the byte-swapped big-endian sum (the sum
// does not depend on byte order, RFC 1071 §2(B)), zero only when b is all
// zero.
func csumLE(b []byte) uint16 { return csumFold64(csumLE64(b)) }

// csumLE64 is csumLE before folding: a 64-bit one's complement sum (carries
// wrapped around) of b as little-endian 64-bit words, congruent to the
// 16-bit sum modulo 0xFFFF (2^64 = 1 modulo 0xFFFF) and zero only when b
// is all zero. It adds 8 bytes per addition with carry, where a big-endian
// loop of 32-bit words adds 4.
func csumLE64(b []byte) uint64 {
	var s, c uint64
	for len(b) >= 64 {
		w := (*[64]byte)(b)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[0:8]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[8:16]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[16:24]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[24:32]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[32:40]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[40:48]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[48:56]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[56:64]), c)
		b = b[64:]
	}
	if len(b) >= 32 {
		w := (*[32]byte)(b)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[0:8]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[8:16]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[16:24]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[24:32]), c)
		b = b[32:]
	}
	if len(b) >= 16 {
		w := (*[16]byte)(b)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[0:8]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[8:16]), c)
		b = b[16:]
	}
	if len(b) >= 8 {
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b), c)
		b = b[8:]
	}
	// The last 0-7 bytes, each at an offset of the same parity as in b.
	var t uint64
	switch len(b) {
	case 7:
		t = uint64(b[6]) << 48
		fallthrough
	case 6:
		t |= uint64(binary.LittleEndian.Uint16(b[4:6])) << 32
		fallthrough
	case 4:
		t |= uint64(binary.LittleEndian.Uint32(b[0:4]))
	case 5:
		t = uint64(b[4])<<32 | uint64(binary.LittleEndian.Uint32(b[0:4]))
	case 3:
		t = uint64(b[2])<<16 | uint64(binary.LittleEndian.Uint16(b[0:2]))
	case 2:
		t = uint64(binary.LittleEndian.Uint16(b[0:2]))
	case 1:
		t = uint64(b[0])
	}
	s, c = bits.Add64(s, t, c)
	return s + c // t < 2^56: no carry out
}

// csumFold64 folds a 64-bit one's complement sum to 16 bits (not
// complemented); it is zero only when s is.
func csumFold64(s uint64) uint16 {
	s = s>>32 + s&0xFFFFFFFF // < 2^33
	s = s>>16 + s&0xFFFF     // < 2^17 + 2^16
	s = s>>16 + s&0xFFFF     // <= 0xFFFF + 2
	s = s>>16 + s&0xFFFF
	return uint16(s)
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
