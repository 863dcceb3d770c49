package fastcnp

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
)

// BenchmarkSharedReceivers: a Fast CNP offered to the receivers that
// several switches put on one host (mechanism.ShareControl), the last
// switch's trusting it: each receiver judges it and that one acts on it
// (it cuts flow a's rate). The cost per message is what grows with the
// switches sharing the host.
func BenchmarkSharedReceivers(b *testing.B) {
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("switches=%d", n), func(b *testing.B) {
			r := newRig(b, rigOpts{dcqcn: true})
			r.sim.Run(engine.Millisecond) // connected
			h := r.s1
			h.SetControlHandler(nil)
			var last netip.Addr
			for i := range n {
				rv, err := NewReceiver(r.net, ReceiverConfig{})
				if err != nil {
					b.Fatal(err)
				}
				last = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0x01, 0x00, 15: byte(i + 1)})
				if err := rv.ApplyConfig(ReceiverConfig{Enabled: true, AccessList: []netip.Prefix{netip.PrefixFrom(last, 128)}}); err != nil {
					b.Fatal(err)
				}
				mechanism.ShareControl(h, rv)
			}
			p := fastCNP(b, r, last, addrS1, addrR1, 200)
			c := h.ControlHandler()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !c.HandleControl(h, p) {
					b.Fatal("not handled")
				}
			}
		})
	}
}
