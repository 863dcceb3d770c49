package wire

import (
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// crcMaskedRef is what icrcCLMUL computes, by hash/crc32 on a masked copy.
func crcMaskedRef(crc uint32, p []byte, mask *[icrcMaskLen]byte) uint32 {
	c := append([]byte(nil), p...)
	for i := range c {
		c[i] |= mask[i]
	}
	return crc32.Update(crc, crc32.IEEETable, c)
}

// TestICRCCLMUL checks the assembly against hash/crc32 for every length it
// takes, random data, initial values and masks.
func TestICRCCLMUL(t *testing.T) {
	if !haveCLMUL {
		t.Skip("no PCLMULQDQ")
	}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, icrcMaskLen+32)
	for n := 16; n <= icrcMaskLen; n++ {
		for range 20 {
			off := r.IntN(32)
			p := buf[off : off+n]
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			var mask [icrcMaskLen]byte
			for i := range icrcMaskLen {
				if r.IntN(4) == 0 {
					mask[i] = byte(r.Uint32())
				}
			}
			crc := r.Uint32()
			if got, want := ^icrcCLMUL(^crc, p, &mask), crcMaskedRef(crc, p, &mask); got != want {
				t.Fatalf("len %d: got %#08x, want %#08x", n, got, want)
			}
		}
	}
}

// TestICRCMasked checks icrcMasked against icrc (hash/crc32 over the
// segments between masked fields) on random IPv4 and IPv6 packets with
// UDP at every offset and lengths up to 2048, and that it declines what it
// cannot do.
func TestICRCMasked(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pkt := make([]byte, 2048)
	for i := range pkt {
		pkt[i] = byte(r.Uint32())
	}
	for _, v6 := range []bool{false, true} {
		for udp := 0; udp <= 160; udp += 4 {
			for end := 0; end <= len(pkt); end += 1 + r.IntN(13) {
				if v6 {
					pkt[0] = 0x60 | pkt[0]&0x0F
				} else {
					pkt[0] = 0x40 | pkt[0]&0x0F
				}
				got, ok := icrcMasked(pkt, udp, end)
				canDo := haveCLMUL && end >= 16 && udp <= icrcMaxMaskUDP &&
					(v6 && udp >= IPv6Len && udp%8 == 0 || !v6 && udp >= IPv4MinLen && udp <= 60)
				if ok != canDo {
					t.Fatalf("v6 %v udp %d end %d: ok %v, want %v", v6, udp, end, ok, canDo)
				}
				if !ok || end < udp+13 {
					continue
				}
				if want := icrc(pkt, udp, end); got != want {
					t.Fatalf("v6 %v udp %d end %d: got %#08x, want %#08x", v6, udp, end, got, want)
				}
			}
		}
	}
}

// FuzzICRCCLMUL compares the assembly with hash/crc32 on any input.
func FuzzICRCCLMUL(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123"), uint32(0), uint8(0))
	f.Fuzz(func(t *testing.T, p []byte, crc uint32, seed uint8) {
		if !haveCLMUL || len(p) < 16 {
			return
		}
		p = p[:min(len(p), icrcMaskLen)]
		var mask [icrcMaskLen]byte
		for i := range icrcMaskLen {
			if (i*7+int(seed))%5 == 0 {
				mask[i] = byte(i) ^ seed
			}
		}
		if got, want := ^icrcCLMUL(^crc, p, &mask), crcMaskedRef(crc, p, &mask); got != want {
			t.Fatalf("len %d: got %#08x, want %#08x", len(p), got, want)
		}
	})
}

// TestICRCConstants derives the fold constants of icrc_amd64.s the way its
// comment says, x^(128d±32) mod P bit-reflected and shifted left once, and
// checks the formula against hash/crc32's own (crc32_amd64.s: r4r3 for
// d = 1, r2r1 for d = 4, r5 = x^64). TestICRCCLMUL exercises every distance
// the assembly uses (1 to 7).
func TestICRCConstants(t *testing.T) {
	const p = 0x104C11DB7
	xpow := func(n int) uint64 { // x^n mod P
		r := uint64(1)
		for range n {
			r <<= 1
			if r&(1<<32) != 0 {
				r ^= p
			}
		}
		return r
	}
	rho := func(n int) uint64 { return uint64(bits.Reverse32(uint32(xpow(n)))) << 1 }
	for _, c := range []struct {
		n    int
		want uint64
	}{{160, 0x1751997d0}, {96, 0x0ccaa009e}, {544, 0x154442bd4}, {480, 0x1c6e41596}, {64, 0x163cd6124}} {
		if got := rho(c.n); got != c.want {
			t.Errorf("x^%d: %#x, hash/crc32 has %#x", c.n, got, c.want)
		}
	}
	for d := 1; d <= 7; d++ {
		t.Logf("icrcK[%d] = %#011x, %#011x", d-1, rho(128*d+32), rho(128*d-32))
	}
}
