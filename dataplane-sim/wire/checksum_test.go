package wire

import (
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
