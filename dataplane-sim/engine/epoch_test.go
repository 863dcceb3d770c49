package engine

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestSetEpochJoinsLate: an engine whose epoch lies 10 s in the past
// starts at about 10 s of simulated time (speed 1), and the events due
// before run at that time, in their order, not replayed one by one.
func TestSetEpochJoinsLate(t *testing.T) {
	s := New()
	var order []int
	var at []Time
	for i, t0 := range []Time{3 * Second, Millisecond, 2 * Second} {
		s.AtFunc(t0, func() { order = append(order, i); at = append(at, s.Now()) })
	}
	later := 20 * Second
	s.AtFunc(later, func() { order = append(order, 99) })
	epoch := time.Now().Add(-10 * time.Second)
	s.SetEpoch(epoch)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	until := 10*Second + 50*Millisecond
	if err := s.RunRealtime(ctx, 1, until); err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 0}; len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("order %v, want %v (the event at 20 s must not run)", order, want)
	}
	for _, x := range at {
		if x < 10*Second || x > until {
			t.Errorf("a skipped event ran at %v, want the join time (10 s .. %v)", x, until)
		}
	}
	if got := s.Epoch(); !got.Equal(time.Unix(0, epoch.UnixNano())) {
		t.Errorf("Epoch() = %v, want %v", got, epoch)
	}
	if s.Speed() != 1 {
		t.Errorf("Speed() = %g, want 1", s.Speed())
	}
}

// TestSetEpochWhileRunning: a running engine that adopts an earlier epoch
// (a neighbour's) jumps ahead; without SetEpoch, Epoch reports the anchor
// RunRealtime took at its start.
func TestSetEpochWhileRunning(t *testing.T) {
	s := New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	reached := make(chan Time, 1)
	s.AtFunc(5*Second, func() { reached <- s.Now() })
	go func() { done <- s.RunRealtime(ctx, 0.5, Never) }()
	deadline := time.Now().Add(5 * time.Second)
	for s.Epoch().IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("RunRealtime did not start")
		}
		time.Sleep(time.Millisecond) // polling interval
	}
	if e := s.Epoch(); e.Before(start.Add(-time.Millisecond)) || e.After(time.Now()) {
		t.Errorf("Epoch() = %v, want the start of RunRealtime (about %v)", e, start)
	}
	// 20 s of wall time ago at speed 0.5 is 10 s of simulated time.
	s.SetEpoch(time.Now().Add(-20 * time.Second))
	select {
	case now := <-reached:
		if now < 10*Second {
			t.Errorf("the 5 s event ran at %v, want at the jump (>= 10 s)", now)
		}
	case <-ctx.Done():
		t.Fatal("the engine did not jump to the adopted epoch")
	}
	s.Stop()
	if err := <-done; err != ErrStopped {
		t.Fatalf("RunRealtime = %v, want ErrStopped", err)
	}
}

// TestLagWhileDoInterrupts: a model far slower than its speed (a chain of
// events a simulated millisecond apart, paced at a million times real
// time) falls further behind the longer it runs. A goroutine that keeps
// calling Do, as a switch's publisher does, interrupts its bursts; Lag
// must still follow the shortfall as it grows, not stay at what the last
// whole burst left (0, or an old figure).
func TestLagWhileDoInterrupts(t *testing.T) {
	s := New()
	running := make(chan struct{})
	var n atomic.Int64
	var tick func()
	tick = func() {
		if n.Add(1) == 10_000 {
			close(running)
		}
		s.AtFunc(s.Now()+Millisecond, tick)
	}
	s.AtFunc(0, tick)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.RunRealtime(ctx, 1e6, Never) }()
	<-running
	var first, last Time
	for range 200 {
		// Let the engine run a little between two Dos, as a publisher
		// every few milliseconds does, so that it is a burst that Do
		// interrupts.
		for seen := n.Load(); n.Load() < seen+100; {
			runtime.Gosched()
		}
		s.Do(func() {})
		if first == 0 {
			first = s.Lag()
		}
		last = s.Lag()
	}
	cancel()
	<-done
	if first <= 0 || last <= first {
		t.Fatalf("Lag() went from %v to %v over 200 interrupted bursts of a model paced at 1e6× real time, want > 0 and growing", first, last)
	}
}

// TestCancelStopsABurst: a model that has fallen far behind is in one long
// burst of due events; cancelling the context ends RunRealtime within
// moments, with the context's error, not when the burst is done.
func TestCancelStopsABurst(t *testing.T) {
	s := New()
	ctx, cancel := context.WithCancel(context.Background())
	n, chain := 0, true
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
	// At 1e9× real time every event is due long before the loop looks at
	// the wall clock again: the burst would last as long as the chain.
	err := s.RunRealtime(ctx, 1e9, Never)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RunRealtime = %v, want context.Canceled", err)
	}
	// Stop is called from the context's own goroutine, so how many
	// events run before it is the scheduler's; a burst left to end by
	// itself would run the chain's 10^9 events.
	if n > 1_000_000 {
		t.Errorf("%d events ran after the cancel, want the burst cut short", n-1000)
	}
	// The next run is not stopped by the last one's cancel.
	chain = false
	s.AtFunc(s.Now()+Second, func() {})
	if err := s.RunRealtime(context.Background(), 1e9, s.Now()+Second); err != nil {
		t.Fatalf("second RunRealtime = %v, want nil", err)
	}
}
