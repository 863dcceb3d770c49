package engine

import (
	"runtime"
	"time"
)

// A Profile measures where a run of a Group spends its CPU time: each
// partition's steps (its messages, its events and its EveryPartition
// instants, window by window) and the driver's serial work between
// windows (global events, the delivery before them, the window loop, the
// OnBarrier function: the merge of the partitions' samples). From the steps of
// every window it computes what the same run would take on n threads with
// the partitions spread as Run spreads them (partition i on thread i mod
// n) and free cores: the critical path, the sum over windows of the
// busiest thread's share, plus the serial work. The bound it gives,
// Speedup(n), is the imbalance and the serial part alone, measured on the
// run itself rather than on a machine's free cores, so it can be read on
// a loaded machine: profile a run on one thread (on more, the driver's
// figure includes its wait at the barrier).
//
// The clock is a thread's CPU time (cputime.Thread); a profiled run locks
// its goroutines to their threads. The garbage collector's background
// work runs on other threads and is not counted.
type Profile struct {
	clock func() time.Duration
	// Windows is the number of windows profiled.
	Windows uint64
	// Busy is each partition's CPU time in its steps.
	Busy []time.Duration
	// Serial is the driver's CPU time outside the partitions' steps.
	Serial time.Duration
	// Critical[n-1] is the sum over windows of the busiest of n threads'
	// steps, for n from 1 to the number of partitions.
	Critical []time.Duration

	window []time.Duration // this window's steps, per partition
}

// Profile starts measuring the group's runs with clock, a thread's CPU
// time, and returns the profile the runs add to. A group of one partition
// is its Sim and is not profiled.
func (g *Group) Profile(clock func() time.Duration) *Profile {
	n := len(g.parts)
	g.prof = &Profile{clock: clock, Busy: make([]time.Duration, n), Critical: make([]time.Duration, n), window: make([]time.Duration, n)}
	return g.prof
}

// Work is the CPU time of the profiled runs on one thread: every step and
// the serial part.
func (p *Profile) Work() time.Duration {
	w := p.Serial
	for _, b := range p.Busy {
		w += b
	}
	return w
}

// Speedup returns the speedup n threads on free cores would give over one,
// as far as the partitions' imbalance and the serial work allow: Work over
// the critical path on n threads plus the serial part.
func (p *Profile) Speedup(n int) float64 {
	n = max(1, min(n, len(p.Critical)))
	crit := p.Critical[n-1] + p.Serial
	if crit <= 0 {
		return 1
	}
	return float64(p.Work()) / float64(crit)
}

// lock locks the calling goroutine to its thread while the group is
// profiled, so that the thread's CPU time is its own; it returns the undo.
func (p *Profile) lock() func() {
	if p == nil {
		return func() {}
	}
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// endWindow adds the window's steps to the critical paths.
func (p *Profile) endWindow() {
	p.Windows++
	for n := 1; n <= len(p.window); n++ {
		var busiest time.Duration
		for k := 0; k < n; k++ {
			var sum time.Duration
			for i := k; i < len(p.window); i += n {
				sum += p.window[i]
			}
			busiest = max(busiest, sum)
		}
		p.Critical[n-1] += busiest
	}
	clear(p.window)
}
