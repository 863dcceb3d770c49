package engine

import (
	"fmt"
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
// lookahead of a second (one window per run: no barrier in the way), and
// each event touches 8 random 64-byte lines of its partition's own
// working set of ws bytes (none for ws=0: the engine's queue alone). At
// threads=1 one thread runs the partitions in turn, at threads=2 they run
// side by side on two; the same events in the same order either way.
// part-cpu-ns/event is the partitions' thread CPU time
// (engine.Profile, cputime.Thread) per event, so the ratio of the two
// rows is what the second core costs each event of the first: the caches
// and memory the cores share, the host's frequency and scheduling, not
// the engine (which does the same work). Run the rows in separate
// processes, alternated, on a quiet machine: on a loaded one the other
// processes share the cores and caches at threads=1 too. b.N is simulated
// microseconds (about 64 events per partition each).
func BenchmarkSideBySide(b *testing.B) {
	for _, ws := range []int{0, 32 << 10, 1 << 20, 8 << 20, 64 << 20} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("ws=%s/threads=%d", sizeName(ws), threads), func(b *testing.B) {
				sideBySide(b, ws, threads)
			})
		}
	}
}

func sideBySide(b *testing.B, wsBytes, threads int) {
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
	b.ReportAllocs()
	b.ResetTimer()
	wall, cpu := time.Now(), cputime.Process()
	g.Run(Time(b.N)*Microsecond, threads)
	w, c := time.Since(wall).Seconds(), (cputime.Process() - cpu).Seconds()
	ev := float64(g.Events())
	var busy time.Duration
	for _, d := range prof.Busy {
		busy += d
	}
	b.ReportMetric(float64(busy.Nanoseconds())/ev, "part-cpu-ns/event")
	b.ReportMetric(c*1e9/ev, "cpu-ns/event")
	b.ReportMetric(ev/w, "events/s")
	b.ReportMetric(float64(wsBytes*2)/1e6, "ws-MB")
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
