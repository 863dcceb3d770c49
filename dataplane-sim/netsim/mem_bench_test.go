package netsim

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/internal/cputime"
)

// liveHeap is the heap in use after a full collection: what the program
// holds, garbage excluded.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// memFabric is sender hosts and receiver hosts on one switch, 100 Gb/s
// links of delay d, DCQCN marking at the switch.
type memFabric struct {
	sim      *engine.Sim
	net      *Network
	src, dst []*Host
}

func newMemFabric(tb testing.TB, hosts int, d engine.Time) *memFabric {
	tb.Helper()
	sim := engine.New(engine.WithSeed(5))
	n := New(sim)
	m := &memFabric{sim: sim, net: n}
	sw, err := n.AddSwitch("sw", netip.MustParseAddr("10.0.0.254"), SwitchConfig{Port: dcqcnPort(100_000, 400_000, 64<<20)})
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < 2*hosts; i++ {
		h, err := n.AddHost(fmt.Sprintf("h%d", i), netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)}), DefaultHostConfig())
		if err != nil {
			tb.Fatal(err)
		}
		if _, _, err := n.Connect(h, sw, LinkConfig{RateBitsPerSec: 100e9, Delay: d}); err != nil {
			tb.Fatal(err)
		}
		if i < hosts {
			m.src = append(m.src, h)
		} else {
			m.dst = append(m.dst, h)
		}
	}
	n.ComputeRoutes()
	return m
}

// BenchmarkMemoryPerFlow: the heap a flow holds while it exists (its
// sender and receiver QPs, the host tables' entries, the Flow), measured
// over 20 000 flows added to 4 host pairs and not yet started. What a
// retired flow keeps is BenchmarkMillionFlows' B/flow-after.
func BenchmarkMemoryPerFlow(b *testing.B) {
	const flows = 20_000
	var live float64
	for b.Loop() {
		m := newMemFabric(b, 4, engine.Microsecond)
		h0 := liveHeap()
		for i := 0; i < flows; i++ {
			if _, err := m.net.AddFlow(FlowConfig{Src: m.src[i%4], Dst: m.dst[(i/4)%4], Bytes: 2048,
				Start: engine.Second, NoCM: true}); err != nil {
				b.Fatal(err)
			}
		}
		live += float64(liveHeap()-h0) / flows
		runtime.KeepAlive(m)
	}
	b.ReportMetric(live/float64(b.N), "B/live-flow")
}

// BenchmarkMemoryPerPacketInFlight: one endless flow over 10 ms links at
// 100 Gb/s, run until the path is full (about 60 000 packets on the
// wires); the heap it grew by (the packets, the pool's stack, the links'
// rings) divided by the packets in flight.
func BenchmarkMemoryPerPacketInFlight(b *testing.B) {
	var perPacket, packets float64
	for b.Loop() {
		m := newMemFabric(b, 1, 10*engine.Millisecond)
		if _, err := m.net.AddFlow(FlowConfig{Src: m.src[0], Dst: m.dst[0], NoCM: true}); err != nil {
			b.Fatal(err)
		}
		h0 := liveHeap()
		m.sim.Run(19 * engine.Millisecond) // data on both links, ACKs on their way back
		live := m.net.LivePackets()
		perPacket += float64(liveHeap()-h0) / float64(live)
		packets += float64(live)
		runtime.KeepAlive(m)
	}
	b.ReportMetric(perPacket/float64(b.N), "B/packet-in-flight")
	b.ReportMetric(packets/float64(b.N), "packets-in-flight")
}

// BenchmarkMillionFlows: a million 2 KB flows over one run with
// retirement on (issue 25's memory bar: they must fit in 4 GB). Four
// senders and four receivers on one switch; flow k starts at k·100 ns
// (about 40 % of the receivers' links), each added 100-200 µs before it
// starts, as the lab adds flows to a running engine. It reports the peak
// heap (HeapAlloc sampled every 5 ms of simulated time, garbage not yet
// collected included), the heap the Go runtime obtained (HeapSys), the
// process's peak resident set (run it alone: -bench MillionFlows
// -benchtime 1x), the heap still held per flow after the run, and events
// per CPU second.
func BenchmarkMillionFlows(b *testing.B) {
	const (
		flows  = 1_000_000
		gap    = 100 * engine.Nanosecond
		batch  = 100 * engine.Microsecond
		retire = 20 * engine.Microsecond
	)
	var peakHeap, peakSys uint64
	var held float64
	var events uint64
	var cpu time.Duration
	for b.Loop() {
		m := newMemFabric(b, 4, engine.Microsecond)
		if err := m.net.RetireFinished(retire); err != nil {
			b.Fatal(err)
		}
		h0 := liveHeap()
		next := 0
		fill := func(until engine.Time) {
			for ; next < flows && engine.Time(next)*gap < until; next++ {
				if _, err := m.net.AddFlow(FlowConfig{Src: m.src[next%4], Dst: m.dst[(next/4)%4], Bytes: 2048,
					Start: engine.Time(next) * gap, NoCM: true}); err != nil {
					b.Fatal(err)
				}
			}
		}
		fill(2 * batch)
		m.sim.Every(batch, batch, func(now engine.Time) { fill(now + 2*batch) })
		m.sim.Every(0, 5*engine.Millisecond, func(engine.Time) {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peakHeap, peakSys = max(peakHeap, ms.HeapAlloc), max(peakSys, ms.HeapSys)
		})
		c0 := cputime.Process()
		m.sim.Run(flows*gap + engine.Millisecond)
		cpu += cputime.Process() - c0
		events += m.sim.Events()
		if r := m.net.RetiredFlows(); r != flows {
			b.Fatalf("%d flows retired, want %d", r, flows)
		}
		held += float64(liveHeap()-h0) / flows
		runtime.KeepAlive(m)
	}
	b.ReportMetric(float64(peakHeap)/1e6, "peak-heap-MB")
	b.ReportMetric(float64(peakSys)/1e6, "heap-sys-MB")
	b.ReportMetric(float64(cputime.PeakRSS())/1e6, "peak-rss-MB")
	b.ReportMetric(held/float64(b.N), "B/flow-after")
	if cpu > 0 {
		b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
	}
}
