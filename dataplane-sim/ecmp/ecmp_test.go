package ecmp

import (
	"math"
	"net/netip"
	"testing"
)

// The source port is Linux's: the product of the queue pair numbers folded
// into a 20-bit flow label, then into 14 bits above 0xC000; both
// directions of a connection get the same port.
func TestSourcePort(t *testing.T) {
	for _, tt := range []struct {
		desc       string
		lqpn, rqpn uint32
		want       uint16
	}{
		{"small product", 0x11, 0x22, 0xC242},
		// 0x100 * 0x100 = 0x10000: label bits 14..19 fold onto bits 0..5.
		{"high label bits fold down", 0x100, 0x100, 0xC004},
		// 0x123456 * 0x10 = 0x1234560; v ^ v>>20 = 0x1234572; label 0x34572;
		// low 0x0572 ^ (0x34000 >> 14 = 0xD) = 0x057F.
		{"label beyond 20 bits", 0x123456, 0x10, 0xC57F},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if got := SourcePort(tt.lqpn, tt.rqpn); got != tt.want {
				t.Errorf("SourcePort(%#x, %#x) = %#x, want %#x", tt.lqpn, tt.rqpn, got, tt.want)
			}
			if a, b := SourcePort(tt.lqpn, tt.rqpn), SourcePort(tt.rqpn, tt.lqpn); a != b {
				t.Errorf("not symmetric: %#x, %#x", a, b)
			}
		})
	}
}

// Pick spreads hashes of distinct five-tuples evenly: over many
// connections each of n next hops gets a binomial share.
func TestPickSpread(t *testing.T) {
	const flows, n = 20000, 6
	src, dst, salt := AddrOf(netip.MustParseAddr("10.0.0.1")), AddrOf(netip.MustParseAddr("10.0.0.2")), AddrOf(netip.MustParseAddr("10.0.1.1"))
	var got [n]int
	for q := range uint32(flows) {
		got[Pick(Hash(7, salt, RoCE(src, dst, q+2, 1000+q)), n)]++
	}
	p := 1.0 / n
	mean, sd := flows*p, math.Sqrt(flows*p*(1-p))
	for i, c := range got {
		if math.Abs(float64(c)-mean) > 5*sd {
			t.Errorf("next hop %d: %d of %d, want %.0f ± %.0f", i, c, flows, mean, 5*sd)
		}
	}
}

// The seed and the switch's salt change the choice; the same inputs never do.
func TestHashInputs(t *testing.T) {
	a, b := AddrOf(netip.MustParseAddr("10.0.0.1")), AddrOf(netip.MustParseAddr("10.0.0.2"))
	tu := RoCE(a, b, 5, 6)
	if Hash(1, a, tu) != Hash(1, a, tu) {
		t.Fatal("hash not a function of its inputs")
	}
	if Hash(1, a, tu) == Hash(2, a, tu) || Hash(1, a, tu) == Hash(1, b, tu) {
		t.Error("seed or salt leave the hash unchanged")
	}
}
