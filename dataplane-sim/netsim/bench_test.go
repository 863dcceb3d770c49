package netsim

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/internal/cputime"
	"github.com/lhcnp/lhcnp/internal/gcgoal"
)

// BenchmarkBottleneck: 8 DCQCN senders at 100 Gb/s into one 100 Gb/s port,
// marking, CNPs and ACKs flowing; reports engine events per wall second
// and per run (events/op).
func BenchmarkBottleneck(b *testing.B) {
	defer gcgoal.Start()() // the collector goal of `lhcnp sim` (GOGC in the environment wins)
	b.ReportAllocs()
	var events uint64
	var wall, cpu time.Duration
	for i := 0; i < b.N; i++ {
		in := newIncast(b, incastCfg{senders: 8, rateBitsPerSec: 100e9, accessDelay: engine.Microsecond,
			bnDelay: 2 * engine.Microsecond, port: dcqcnPort(100_000, 400_000, 32<<20), host: DefaultHostConfig()})
		start, c0 := time.Now(), cputime.Process()
		in.sim.Run(10 * engine.Millisecond)
		wall += time.Since(start)
		cpu += cputime.Process() - c0
		events += in.sim.Events()
	}
	b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
	if cpu > 0 {
		b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
	}
	b.ReportMetric(float64(wall.Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64(events)/float64(b.N), "events/op") // the same every run: what a model change adds or removes
}

// Section7 builds the draft's §7 path: 8 sources in DC-A at 100 Gb/s into N1,
// a 100 Gb/s WAN from N1 to N2 with 5 ms one way (10 ms RTT), and the
// destination behind N2; one flow per source. Exported to tests only.
func buildSection7(tb testing.TB, mtu int32, seed uint64) (*engine.Sim, *Network) {
	tb.Helper()
	sim := engine.New(engine.WithSeed(seed))
	n := New(sim)
	hc := DefaultHostConfig()
	hc.MTUBytes = mtu
	// K_min/K_max as the draft's first-level response with a DC-sized K_max;
	// a deep WAN buffer.
	pc := PortConfig{BufferBytes: 256 << 20,
		ECN: SameECN(ECNConfig{Enabled: true, KMinBytes: 200_000, KMaxBytes: 1_600_000, PMax: 0.2})}
	n1, _ := n.AddSwitch("n1", netip.MustParseAddr("10.0.0.2"), SwitchConfig{Port: pc})
	n2, _ := n.AddSwitch("n2", netip.MustParseAddr("10.0.0.3"), SwitchConfig{Port: pc})
	dst, _ := n.AddHost("dest", netip.MustParseAddr("10.0.0.4"), hc)
	if _, _, err := n.Connect(n1, n2, LinkConfig{RateBitsPerSec: 100e9, Delay: 5 * engine.Millisecond}); err != nil {
		tb.Fatal(err)
	}
	if _, _, err := n.Connect(n2, dst, LinkConfig{RateBitsPerSec: 100e9, Delay: engine.Microsecond}); err != nil {
		tb.Fatal(err)
	}
	var srcs []*Host
	for i := 0; i < 8; i++ {
		h, _ := n.AddHost(fmt.Sprintf("src%d", i), netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)}), hc)
		if _, _, err := n.Connect(h, n1, LinkConfig{RateBitsPerSec: 100e9, Delay: engine.Microsecond}); err != nil {
			tb.Fatal(err)
		}
		srcs = append(srcs, h)
	}
	n.ComputeRoutes()
	for i, h := range srcs {
		// NoCM: the CM exchange would leave the path idle for the first 10 ms
		// RTT and make the benchmark lighter than the 100 ms it names.
		if _, err := n.AddFlow(FlowConfig{Src: h, Dst: dst, Start: engine.Time(i) * engine.Microsecond, Prio: 3, NoCM: true}); err != nil {
			tb.Fatal(err)
		}
	}
	return sim, n
}

// BenchmarkSection7 is the wall time to simulate 100 ms of the §7 topology
// with 8 flows at 100 Gb/s. The bar (issue 25) is 0.5x real time on one
// core: at most 0.2 CPU-s per 100 ms simulated.
func BenchmarkSection7(b *testing.B) {
	defer gcgoal.Start()() // the collector goal of `lhcnp sim` (GOGC in the environment wins)
	for _, mtu := range []int32{4096, 1024} {
		b.Run(fmt.Sprintf("mtu=%d", mtu), func(b *testing.B) {
			b.ReportAllocs()
			var events uint64
			var wall, cpu time.Duration
			for i := 0; i < b.N; i++ {
				sim, _ := buildSection7(b, mtu, 1)
				start, c0 := time.Now(), cputime.Process()
				sim.Run(100 * engine.Millisecond)
				wall += time.Since(start)
				cpu += cputime.Process() - c0
				events += sim.Events()
			}
			if cpu > 0 {
				b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/100ms")
			}
			b.ReportMetric(wall.Seconds()/float64(b.N), "wall-s/100ms")
			b.ReportMetric(0.1/(wall.Seconds()/float64(b.N)), "x-realtime")
			b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}
