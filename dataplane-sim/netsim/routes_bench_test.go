package netsim

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// fatTree builds a k-ary fat-tree (k pods of k/2 edge and k/2
// aggregation switches, (k/2)^2 core switches, k/2 hosts per edge
// switch: k^3/4 hosts), 100 Gb/s links of 1 µs, with ECMP on; routes are
// not computed.
func fatTree(tb testing.TB, k int) *Network {
	tb.Helper()
	n := New(engine.New(engine.WithSeed(1)))
	n.SetECMP(true, 1)
	lc := LinkConfig{RateBitsPerSec: 100e9, Delay: engine.Microsecond}
	connect := func(a, b Node) {
		if _, _, err := n.Connect(a, b, lc); err != nil {
			tb.Fatal(err)
		}
	}
	sw := func(name string, a [4]byte) *Switch {
		s, err := n.AddSwitch(name, netip.AddrFrom4(a), SwitchConfig{})
		if err != nil {
			tb.Fatal(err)
		}
		return s
	}
	half := k / 2
	core := make([]*Switch, half*half)
	for i := range core {
		core[i] = sw(fmt.Sprintf("c%d", i), [4]byte{10, byte(k), byte(i / half), byte(i%half + 1)})
	}
	for p := 0; p < k; p++ {
		aggs := make([]*Switch, half)
		for a := range aggs {
			aggs[a] = sw(fmt.Sprintf("p%d-a%d", p, a), [4]byte{10, byte(p), byte(half + a), 1})
			for c := 0; c < half; c++ {
				connect(aggs[a], core[a*half+c])
			}
		}
		for e := 0; e < half; e++ {
			edge := sw(fmt.Sprintf("p%d-e%d", p, e), [4]byte{10, byte(p), byte(e), 1})
			for _, a := range aggs {
				connect(edge, a)
			}
			for h := 0; h < half; h++ {
				host, err := n.AddHost(fmt.Sprintf("p%d-e%d-h%d", p, e, h), netip.AddrFrom4([4]byte{10, byte(p), byte(e), byte(h + 2)}), DefaultHostConfig())
				if err != nil {
					tb.Fatal(err)
				}
				connect(host, edge)
			}
		}
	}
	return n
}

// BenchmarkRoutesFatTree: ComputeRoutes with ECMP on a k-ary fat-tree,
// k = 8 to 48 (docs/scaling.md, "The simulator: route tables of a large
// fabric"). ns/op is the route computation alone; route-B/host the heap
// its tables hold per host; heap-MB the live heap of the whole network
// afterwards. Run k = 48 alone (-bench 'RoutesFatTree/k=48$' -benchtime
// 1x): it builds 27 648 hosts.
func BenchmarkRoutesFatTree(b *testing.B) {
	for _, k := range []int{8, 16, 24, 32, 48} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			var perHost, heap float64
			for b.Loop() {
				b.StopTimer()
				n := fatTree(b, k)
				h0 := liveHeap()
				b.StartTimer()
				n.ComputeRoutes()
				b.StopTimer()
				h1 := liveHeap()
				perHost += float64(h1-h0) / float64(len(n.Hosts()))
				heap += float64(h1) / 1e6
				if n.Switches()[0].Route(n.Hosts()[0].ID()) == nil {
					b.Fatal("no route from the first core switch to the first host")
				}
				b.StartTimer()
			}
			b.ReportMetric(perHost/float64(b.N), "route-B/host")
			b.ReportMetric(heap/float64(b.N), "heap-MB")
		})
	}
}
