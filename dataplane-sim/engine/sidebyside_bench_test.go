package engine

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/internal/cputime"
)

// memNode is a node of BenchmarkSideBySide: at every event it
// reads and writes linesPerEvent cache lines at random places of its
// partition's working set, then sets itself a timer.
type memNode struct {
	s     *Sim
	w     *workingSet
	delay Time
}

// workingSet is a partition's memory: the benchmark's nodes of one
// partition share it and no other partition touches it. x is the
// xorshift state that picks the lines.
type workingSet struct {
	mem  []uint64 // 8 words per 64-byte line
	mask uint64   // lines - 1 (a power of two)
	x    uint64
	_    [40]byte // keeps the two partitions' x on lines of their own
}

const linesPerEvent = 8

func (n *memNode) Handle(uint32, uint64) {
	w := n.w
	if w.mem != nil {
		x := w.x
		for range linesPerEvent {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			w.mem[(x&w.mask)*8]++
		}
		w.x = x
	}
	n.s.After(n.delay, n, 0, 0)
}

// BenchmarkSideBySide is the control for what running two partitions
// side by side costs on this machine (docs/engine.md, "Side by side"):
// two partitions of 64 timers each and no message between them, a
// lookahead of a second (no barrier inside a run), and each event
// touches 8 random 64-byte lines of its partition's own working set of
// ws bytes (none for ws=0: the engine's queue alone). Each round (b.N
// rounds) runs the group 2 ms of simulated time (about 256 000 events)
// on one thread, the partitions in turn, then 2 ms on two, side by side:
// the same kind of events on the same warm memory. part-cpu-ns/event-1
// and -2 are the partitions' thread CPU time (engine.Profile,
// cputime.Thread) per event, the least of the rounds (the round the
// machine's other processes disturbed least), and side-by-side their
// ratio: what a busy second core costs each event of the first (the
// caches and memory bandwidth the cores share, the host's frequency and
// scheduling), the engine doing the same work either way;
// side-by-side-median is the median of the rounds' ratios. One process
// alternates the two, so a change of the machine's speed or load falls
// on both; a quiet machine still gives the figures that mean something.
func BenchmarkSideBySide(b *testing.B) {
	for _, ws := range []int{0, 32 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("ws=%s", sizeName(ws)), func(b *testing.B) {
			sideBySide(b, ws)
		})
	}
}

func sideBySide(b *testing.B, wsBytes int) {
	g := NewGroup(2, 1)
	if err := g.SetLookahead(Second); err != nil {
		b.Fatal(err)
	}
	for p := range 2 {
		w := &workingSet{x: uint64(p)*0x9E3779B97F4A7C15 + 1}
		if lines := wsBytes / 64; lines > 0 {
			w.mem = make([]uint64, lines*8)
			w.mask = uint64(lines - 1)
			for i := range w.mem {
				w.mem[i] = uint64(i) // touch every page before the clock starts
			}
		}
		s := g.Sim(p)
		for i := range 64 {
			n := &memNode{s: s, w: w, delay: Time(1000 + 7*i)}
			s.At(Time(i), n, 0, 0)
		}
	}
	prof := g.Profile(cputime.Thread)
	busy := func() (d time.Duration) {
		for _, x := range prof.Busy {
			d += x
		}
		return d
	}
	const chunk = 2 * Millisecond
	until := Time(0)
	g.Run(until, 1) // the first events, outside the rounds
	var per [2][]float64
	var ratios []float64
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var r [2]float64
		for k, threads := range []int{1, 2} {
			ev0, busy0 := g.Events(), busy()
			until += chunk
			g.Run(until, threads)
			r[k] = float64((busy() - busy0).Nanoseconds()) / float64(g.Events()-ev0)
			per[k] = append(per[k], r[k])
		}
		ratios = append(ratios, r[1]/r[0])
	}
	one, two := slices.Min(per[0]), slices.Min(per[1])
	b.ReportMetric(one, "part-cpu-ns/event-1")
	b.ReportMetric(two, "part-cpu-ns/event-2")
	b.ReportMetric(two/one, "side-by-side")
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "side-by-side-median")
	b.ReportMetric(float64(wsBytes)/1e6, "ws-MB/partition")
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKB", n>>10)
	}
	return fmt.Sprint(n)
}
