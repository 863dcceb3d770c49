package lhcnp

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// hotPath returns a node with one learned flow and a data packet of it.
func hotPath(tb testing.TB) (*line, *netsim.Packet) {
	cfg := testConfig(1<<40, engine.Millisecond)
	l := newLine(tb, lineOpts{cfg1: &cfg, noRP: true, noCM: true})
	l.sim.Run(20 * engine.Microsecond) // learn the flow
	p := l.net.NewPacket()
	p.Kind = netsim.KindRoCE
	p.SizeBytes = 4096 + netsim.RoCEOverheadBytes(l.src.Addr())
	p.Src, p.Dst = l.src.ID(), l.dst.ID()
	p.SrcQP = 100
	p.ECN = netsim.ECNECT0
	p.SetBTH(&wire.BTH{Opcode: wire.OpRCWriteMiddle, PKey: 0xFFFF, DestQP: 200})
	return l, p
}

// TestHotPathAllocs checks that the per-packet observer calls of a learned
// flow allocate nothing.
func TestHotPathAllocs(t *testing.T) {
	l, p := hotPath(t)
	n := l.node1
	allocs := testing.AllocsPerRun(1000, func() {
		n.OnEnqueue(l.n1Out, p, 100_000)
		n.OnMark(l.n1Out, p, 100_000)
		n.OnDequeue(l.n1Out, p, 90_000)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per packet, want 0", allocs)
	}
}

// BenchmarkOnEnqueue measures the per-packet cost of the node: OnEnqueue
// and OnDequeue of a data packet of a learned flow.
func BenchmarkOnEnqueue(b *testing.B) {
	l, p := hotPath(b)
	n := l.node1
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		n.OnEnqueue(l.n1Out, p, 100_000)
		n.OnDequeue(l.n1Out, p, 90_000)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}

// BenchmarkCongestedLine runs 10 ms of a congested line with the node and
// the reaction point: the cost of the whole mechanism in a simulation.
func BenchmarkCongestedLine(b *testing.B) {
	b.ReportAllocs()
	var events uint64
	for b.Loop() {
		cfg := testConfig(200_000, 400*engine.Microsecond)
		l := newLine(b, lineOpts{srcRate: 10e9, midRate: 5e9, dcqcn: true, cfg1: &cfg})
		l.sim.Run(10 * engine.Millisecond)
		events += l.sim.Events()
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
