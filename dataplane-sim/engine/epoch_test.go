package engine

import (
	"context"
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
