// Package gcgoal sets the Go collector's goal for the simulator's commands.
//
// A simulation's heap is small and live: the packets in flight, the flows'
// state, the samplers' series. With the runtime's default (GOGC=100) the
// collector runs at every doubling of that heap while it grows from the
// runtime's 4 MB minimum, and each cycle marks every packet in flight and
// turns on the write barriers of the model's stores: on the §7 example
// (docs/engine.md) two cycles in 100 ms simulated, about 9 % of its
// instructions. While the live heap is under SmallHeap, Start lets the heap
// grow to (1 + Percent/100) times the live heap before the next cycle;
// above it the runtime's default comes back, so a large run (a million
// flows, docs/engine.md "Memory") peaks where it did. The goal is read again
// after every cycle.
//
// GOGC set in the environment wins: Start then does nothing.
package gcgoal

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Defaults of Start.
const (
	// Percent is the collector's goal while the live heap is small: the
	// heap grows to five times the live heap before the next cycle.
	Percent = 400
	// SmallHeap is the live heap under which Percent applies: at most
	// 1.25 GB of heap at Percent; above it, the runtime's 100.
	SmallHeap = 256 << 20
	// defaultPercent is the runtime's goal without GOGC.
	defaultPercent = 100
)

// Config is a goal: Percent while the live heap is under SmallHeap bytes,
// the runtime's default (100) above.
type Config struct {
	Percent   int
	SmallHeap uint64
	// after, when set, is called after each adjustment with the live heap
	// and the percent in force (tests).
	after func(live uint64, percent int)
}

// Start applies the default goal to this process, unless GOGC is set in the
// environment. stop restores the goal in force before Start and ends the
// adjustments.
func Start() (stop func()) { return StartWith(Config{Percent: Percent, SmallHeap: SmallHeap}) }

var (
	mu     sync.Mutex // guards active and users
	active *goal
	users  int
)

// StartWith is Start with a goal of its own. Starts nest: while one is in
// force a later Start shares it (its Config ignored), and the goal of before
// comes back at the last stop.
func StartWith(c Config) (stop func()) {
	if v, ok := os.LookupEnv("GOGC"); ok && v != "" {
		return func() {}
	}
	mu.Lock()
	defer mu.Unlock()
	if users == 0 {
		g := &goal{c: c, prev: debug.SetGCPercent(c.Percent), percent: c.Percent}
		g.sample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		g.arm()
		active = g
	}
	users++
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if users--; users > 0 {
				return
			}
			g := active
			active = nil
			g.mu.Lock()
			g.stopped = true
			debug.SetGCPercent(g.prev)
			g.mu.Unlock()
		})
	}
}

type goal struct {
	c       Config
	prev    int
	mu      sync.Mutex
	stopped bool
	percent int
	sample  []metrics.Sample
}

// token is the object whose collection tells the goal that a cycle ended.
type token struct{ _ [32]byte } // not tiny-allocated: its own object

// arm makes a token whose cleanup, run after the cycle that collects it,
// adjusts the goal and arms the next one.
func (g *goal) arm() {
	t := new(token)
	runtime.AddCleanup(t, func(g *goal) { g.adjust() }, g)
}

func (g *goal) adjust() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	metrics.Read(g.sample)
	live := g.sample[0].Value.Uint64()
	want := g.c.Percent
	if live >= g.c.SmallHeap {
		want = defaultPercent
	}
	if want != g.percent {
		debug.SetGCPercent(want)
		g.percent = want
	}
	if g.c.after != nil {
		g.c.after(live, want)
	}
	g.arm()
}
