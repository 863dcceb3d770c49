package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/internal/cputime"
)

// benchNode is a node of the benchmark's cut model: it sets itself a
// timer at every event, and every eighth event sends a message to a node
// of the next partition instead (a packet crossing a cut link).
type benchNode struct {
	g     *Group
	part  int
	n     uint64
	peer  *benchNode
	delay Time
}

func (x *benchNode) Handle(uint32, uint64) {
	x.n++
	if x.n%8 == 0 {
		x.g.Send(x.part, x.peer.part, x.g.Sim(x.part).Now()+x.g.Lookahead(), x.peer, x.peer)
		return
	}
	x.g.Sim(x.part).After(x.delay, x, 0, 0)
}

func (x *benchNode) Deliver(at Time, v any) {
	x.g.Sim(x.part).At(at, v.(*benchNode), 0, 0)
}

// BenchmarkGroup runs a model of two partitions of 64 nodes each, one
// pending event per node, a lookahead of 10 µs (a few hundred events per
// partition and window), at 1 and 2 threads in the same run: events per
// wall second (the speedup) and per CPU second (the cost of the barriers
// and the merge). b.N is simulated microseconds.
func BenchmarkGroup(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			g := NewGroup(2, 1)
			if err := g.SetLookahead(10 * Microsecond); err != nil {
				b.Fatal(err)
			}
			var nodes [2][]*benchNode
			for p := 0; p < 2; p++ {
				for i := 0; i < 64; i++ {
					nodes[p] = append(nodes[p], &benchNode{g: g, part: p, delay: Time(2000 + 37*i)})
				}
			}
			for p := 0; p < 2; p++ {
				for i, x := range nodes[p] {
					x.peer = nodes[1-p][(i*7)%64]
					g.Sim(p).At(Time(i), x, 0, 0)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			wall, cpu := time.Now(), cputime.Process()
			g.Run(Time(b.N)*Microsecond, threads)
			w, c := time.Since(wall).Seconds(), (cputime.Process() - cpu).Seconds()
			ev := float64(g.Events())
			b.ReportMetric(ev/w, "events/s")
			b.ReportMetric(ev/c, "events/cpu-s")
			b.ReportMetric(ev/float64(g.Windows()), "events/window")
		})
	}
}

// BenchmarkGroupBarrier measures the barrier alone: two partitions with
// one event per window each, so a window costs the barrier, the merge of
// one message and two events.
func BenchmarkGroupBarrier(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			g := NewGroup(2, 1)
			if err := g.SetLookahead(Microsecond); err != nil {
				b.Fatal(err)
			}
			a := &benchNode{g: g, part: 0, delay: Microsecond}
			c := &benchNode{g: g, part: 1, delay: Microsecond}
			a.peer, c.peer = c, a
			g.Sim(0).At(0, a, 0, 0)
			g.Sim(1).At(0, c, 0, 0)
			b.ReportAllocs()
			b.ResetTimer()
			wall := time.Now()
			g.Run(Time(b.N)*Microsecond, threads)
			b.ReportMetric(float64(time.Since(wall).Nanoseconds())/float64(g.Windows()), "ns/window")
		})
	}
}
