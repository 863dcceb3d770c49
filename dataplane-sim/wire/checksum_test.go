package wire

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// csumRef is RFC 1071 as written: big-endian 16-bit words, folded.
func csumRef(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xFFFF + s>>16
	}
	return ^uint16(s)
}

// TestChecksum checks the 64-bit little-endian sum against RFC 1071 on
// every length up to 300 with random, all-zero and all-ones data.
func TestChecksum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	b := make([]byte, 300)
	for n := range len(b) + 1 {
		for pat := range 4 {
			for i := range b[:n] {
				switch pat {
				case 0:
					b[i] = 0
				case 1:
					b[i] = 0xFF
				default:
					b[i] = byte(r.Uint32())
				}
			}
			if got, want := Checksum(b[:n]), csumRef(b[:n]); got != want {
				t.Fatalf("len %d pattern %d: %#04x, want %#04x", n, pat, got, want)
			}
			// A running sum split at an even offset agrees.
			h := n / 2 &^ 1
			if got, want := csumFold(csumAdd(csumAdd(7, b[:h]), b[h:n])), csumFold(7+csumAdd(0, b[:n])); got != want {
				t.Fatalf("len %d pattern %d split: %#04x, want %#04x", n, pat, got, want)
			}
		}
	}
}

// TestExtensionZeroChecksum: RFC 4884 §7, "An all-zero value means that no
// checksum was transmitted". A received extension whose checksum is zero
// is not checked (StatusNone, no error, every object returned), where it
// was ErrExtChecksum and the reaction point dropped the Long-haul CNP as
// malformed; a non-zero checksum that does not verify is still refused.
// And a sender whose sum complements to zero writes 0xFFFF, the same in one's
// complement, so that a receiver does not take its checksum for none.
func TestExtensionZeroChecksum(t *testing.T) {
	objs := []ExtObject{{ClassNum: 247, CType: 1, Data: []byte{0xE8, 0xF5, 0, 0}}}
	var b [16]byte
	n, err := EncodeExtension(b[:], objs, 247)
	if err != nil {
		t.Fatal(err)
	}
	// 0x2000 + 0x0008 + 0xF701 + 0xE8F5 sums to 0xFFFF: its complement is 0.
	if got := binary.BigEndian.Uint16(b[2:4]); got != 0xFFFF {
		t.Errorf("checksum written %#04x, want 0xffff for a sum that complements to zero", got)
	}
	if _, _, st, err := DecodeExtension(b[:n], nil, true); err != nil || st != StatusGood {
		t.Errorf("decoding what was written: %v, %v; want it verified", st, err)
	}
	b[2], b[3] = 0, 0
	got, csum, st, err := DecodeExtension(b[:n], nil, true)
	if err != nil || st != StatusNone || csum != 0 || len(got) != 1 || got[0].CType != 1 {
		t.Errorf("zero checksum: %d objects, checksum %#04x, %v, %v; want the object, StatusNone, no error", len(got), csum, st, err)
	}
	b[3] = 1
	if _, _, st, err := DecodeExtension(b[:n], nil, true); !errors.Is(err, ErrExtChecksum) || st != StatusBad {
		t.Errorf("a wrong non-zero checksum: %v, %v; want ErrExtChecksum", st, err)
	}
}
