package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// paced is what a realtime caller uses of a Sim or a Group.
type paced interface {
	Do(func())
	Lag() Time
	SetEpoch(time.Time)
	Epoch() time.Time
	Speed() float64
	Stop()
	Now() Time
}

// rtCase is one engine the realtime tests run on: a lone Sim, or a group
// of two partitions on two threads (a group of one is its Sim).
type rtCase struct {
	name  string
	e     paced
	parts []*Sim
	run   func(ctx context.Context, speed float64, until Time) error
	// global schedules f as a global event (a Sim's: an event).
	global func(t Time, f func())
}

func rtCases(t *testing.T, lookahead Time) []rtCase {
	t.Helper()
	s := New()
	g := NewGroup(2, 1)
	if err := g.SetLookahead(lookahead); err != nil {
		t.Fatal(err)
	}
	return []rtCase{
		{"sim", s, []*Sim{s}, s.RunRealtime, s.AtFunc},
		{"group", g, []*Sim{g.Sim(0), g.Sim(1)},
			func(ctx context.Context, speed float64, until Time) error { return g.RunRealtime(ctx, speed, until, 2) },
			g.AtGlobal},
	}
}

// TestSetEpochJoinsLate: an engine whose epoch lies 10 s in the past
// starts at about 10 s of simulated time (speed 1), and the events due
// before run at that time, in their order, not replayed one by one (in a
// group: every partition's, and the global events, first at that time).
func TestSetEpochJoinsLate(t *testing.T) {
	want := map[string]string{"sim": "[[1 global 2 0]]", "group": "[[global 1 2 0] [1 2 0]]"}
	for _, c := range rtCases(t, Millisecond) {
		order := make([][]string, len(c.parts))
		at := make([][]Time, len(c.parts)) // per partition: they run side by side
		for p, s := range c.parts {
			for i, t0 := range []Time{3 * Second, Millisecond, 2 * Second} {
				s.AtFunc(t0, func() { order[p] = append(order[p], fmt.Sprint(i)); at[p] = append(at[p], s.Now()) })
			}
			s.AtFunc(20*Second, func() { order[p] = append(order[p], "late") })
		}
		c.global(Second, func() { order[0] = append(order[0], "global"); at[0] = append(at[0], c.e.Now()) })
		epoch := time.Now().Add(-10 * time.Second)
		c.e.SetEpoch(epoch)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		until := 10*Second + 50*Millisecond
		err := c.run(ctx, 1, until)
		cancel()
		if err != nil {
			t.Fatal(c.name, err)
		}
		if got := fmt.Sprint(order); got != want[c.name] {
			t.Fatalf("%s: order %s, want %s (the events at 20 s must not run)", c.name, got, want[c.name])
		}
		for _, xs := range at {
			for _, x := range xs {
				if x < 10*Second || x > until {
					t.Errorf("%s: a skipped event ran at %v, want the join time (10 s .. %v)", c.name, x, until)
				}
			}
		}
		if got := c.e.Epoch(); !got.Equal(time.Unix(0, epoch.UnixNano())) {
			t.Errorf("%s: Epoch() = %v, want %v", c.name, got, epoch)
		}
		if c.e.Speed() != 1 {
			t.Errorf("%s: Speed() = %g, want 1", c.name, c.e.Speed())
		}
	}
}

// TestSetEpochWhileRunning: a running engine that adopts an earlier epoch
// (a neighbour's) jumps ahead; without SetEpoch, Epoch reports the anchor
// RunRealtime took at its start.
func TestSetEpochWhileRunning(t *testing.T) {
	for _, c := range rtCases(t, Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		done := make(chan error, 1)
		reached := make(chan Time, 1)
		s := c.parts[len(c.parts)-1]
		s.AtFunc(5*Second, func() { reached <- s.Now() })
		go func() { done <- c.run(ctx, 0.5, Never) }()
		deadline := time.Now().Add(5 * time.Second)
		for c.e.Epoch().IsZero() {
			if time.Now().After(deadline) {
				t.Fatal(c.name, "RunRealtime did not start")
			}
			time.Sleep(time.Millisecond) // polling interval
		}
		if e := c.e.Epoch(); e.Before(start.Add(-time.Millisecond)) || e.After(time.Now()) {
			t.Errorf("%s: Epoch() = %v, want the start of RunRealtime (about %v)", c.name, e, start)
		}
		// 20 s of wall time ago at speed 0.5 is 10 s of simulated time.
		c.e.SetEpoch(time.Now().Add(-20 * time.Second))
		select {
		case now := <-reached:
			if now < 10*Second {
				t.Errorf("%s: the 5 s event ran at %v, want at the jump (>= 10 s)", c.name, now)
			}
		case <-ctx.Done():
			t.Fatal(c.name, "the engine did not jump to the adopted epoch")
		}
		c.e.Stop()
		if err := <-done; err != ErrStopped {
			t.Fatalf("%s: RunRealtime = %v, want ErrStopped", c.name, err)
		}
		cancel()
	}
}

// TestLagWhileDoInterrupts: a model far slower than its speed (a chain of
// events a simulated millisecond apart, paced at a million times real
// time) falls further behind the longer it runs. A goroutine that keeps
// calling Do, as a switch's publisher does, interrupts its bursts (a
// group's windows); Lag must still follow the shortfall as it grows, not
// stay at what the last whole burst left (0, or an old figure).
func TestLagWhileDoInterrupts(t *testing.T) {
	for _, c := range rtCases(t, Millisecond) {
		running := make(chan struct{})
		var n atomic.Int64
		for p, s := range c.parts {
			var tick func()
			tick = func() {
				if n.Add(1) == 10_000 {
					close(running)
				}
				s.AtFunc(s.Now()+Millisecond, tick)
			}
			s.AtFunc(Time(p), tick)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.run(ctx, 1e6, Never) }()
		<-running
		var first, last Time
		for range 200 {
			// Let the engine run a little between two Dos, as a publisher
			// every few milliseconds does, so that it is a burst that Do
			// interrupts.
			for seen := n.Load(); n.Load() < seen+100; {
				runtime.Gosched()
			}
			c.e.Do(func() {})
			if first == 0 {
				first = c.e.Lag()
			}
			last = c.e.Lag()
		}
		cancel()
		<-done
		if first <= 0 || last <= first {
			t.Fatalf("%s: Lag() went from %v to %v over 200 interrupted bursts of a model paced at 1e6× real time, want > 0 and growing", c.name, first, last)
		}
	}
}

// TestCancelStopsABurst: a model that has fallen far behind is in one long
// burst of due events; cancelling the context ends RunRealtime within
// moments, with the context's error, not when the burst is done.
func TestCancelStopsABurst(t *testing.T) {
	// Stop is called from the context's own goroutine, so how many events
	// of a Sim run before it is the scheduler's; a burst left to end by
	// itself would run the chain's 10^9 events. A group looks at ctx
	// between windows: a microsecond, a thousand events of the chain.
	most := map[string]int{"sim": 1_000_000, "group": 1000}
	for _, c := range rtCases(t, Microsecond) {
		ctx, cancel := context.WithCancel(context.Background())
		n, chain := 0, true
		s := c.parts[0]
		var tick func()
		tick = func() {
			if n++; n == 1000 {
				cancel()
			}
			if chain {
				s.AtFunc(s.Now()+Nanosecond, tick)
			}
		}
		s.AtFunc(0, tick)
		// At 1e9× real time every event is due long before the loop looks
		// at the wall clock again: the burst would last as long as the
		// chain.
		err := c.run(ctx, 1e9, Never)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: RunRealtime = %v, want context.Canceled", c.name, err)
		}
		if n-1000 > most[c.name] {
			t.Errorf("%s: %d events ran after the cancel, want the burst cut short", c.name, n-1000)
		}
		// The next run is not stopped by the last one's cancel.
		chain = false
		c.parts[len(c.parts)-1].AtFunc(c.e.Now()+Second, func() {})
		if err := c.run(context.Background(), 1e9, c.e.Now()+Second); err != nil {
			t.Fatalf("%s: second RunRealtime = %v, want nil", c.name, err)
		}
	}
}

// TestRealtimeNeverPastUntil: pacing whose paced time lies far beyond the
// run's until (an epoch an hour in the past) takes the engine to until,
// not to the paced time: RunRealtime returns nil with Now at until, no
// event after until runs, and every partition stops there. A Do between
// two steps advances the clock the same way (capped at until), which a
// Do that came after the wall clock passed until used to break
// (TestGroupRealtime's "Do at 200.466µs, after until", seen once under
// load).
func TestRealtimeNeverPastUntil(t *testing.T) {
	for _, c := range rtCases(t, Millisecond) {
		var late atomic.Int32
		for _, s := range c.parts {
			s.AtFunc(2*Second, func() { late.Add(1) })
		}
		c.e.SetEpoch(time.Now().Add(-time.Hour))
		const until = Second
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.run(ctx, 1, until)
		cancel()
		if err != nil {
			t.Fatal(c.name, err)
		}
		if now := c.e.Now(); now != until {
			t.Errorf("%s: Now = %v after the run, want until %v", c.name, now, until)
		}
		for i, s := range c.parts {
			if s.Now() != until {
				t.Errorf("%s: partition %d at %v, want %v", c.name, i, s.Now(), until)
			}
		}
		if n := late.Load(); n != 0 {
			t.Errorf("%s: %d events after until ran", c.name, n)
		}
	}
}
