package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestGroupRealtime: a paced run of a cut model reaches until, keeps each
// partition's events in time order, and lets another goroutine read and
// schedule through Do while it runs.
func TestGroupRealtime(t *testing.T) {
	m := newToy(3, 4, 5, 1000, []Time{1000, 1200, 1500})
	const until = 200 * Microsecond
	// A global event every 10 µs tells the test to call Do: the calls
	// come while the group runs, at the pace of the run.
	tick := make(chan struct{}, 1)
	m.g.EveryGlobal(0, 10*Microsecond, func(Time) {
		select {
		case tick <- struct{}{}:
		default:
		}
	})
	done := make(chan error, 1)
	go func() { done <- m.g.RunRealtime(context.Background(), 0.05, until, 2) }()

	var dos, ran int
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		case <-tick:
			m.g.Do(func() {
				dos++
				s := m.g.Sim(1)
				if now := s.Now(); now > until {
					t.Errorf("Do at %v, after until", now)
				}
				s.AtFunc(s.Now(), func() { ran++ })
			})
		}
	}
	if m.g.Now() != until || m.g.Sim(2).Now() != until {
		t.Errorf("Now = %v, partition 2 at %v; want %v", m.g.Now(), m.g.Sim(2).Now(), until)
	}
	if dos == 0 || ran == 0 {
		t.Errorf("Do ran %d times, its events %d", dos, ran)
	}
	for p, tr := range m.traces {
		var last Time
		for _, l := range tr {
			var at Time
			fmt.Sscan(l, &at)
			if at < last {
				t.Fatalf("partition %d: event at %v after %v", p, at, last)
			}
			last = at
		}
	}
	if m.g.Events() < 1000 {
		t.Errorf("only %d events", m.g.Events())
	}
}

func TestGroupRealtimeCancelAndStop(t *testing.T) {
	m := newToy(2, 2, 5, 1000, []Time{1000, 1000})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.g.RunRealtime(ctx, 1, Never, 2) }()
	m.g.Do(func() {}) // it runs
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v", err)
	}
	go func() { done <- m.g.RunRealtime(context.Background(), 1, Never, 1) }()
	m.g.Do(func() {})
	m.g.Stop()
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Errorf("stop: %v", err)
	}
}

// TestGroupDoDuringRun: Do calls that only read, made while Run drives the
// group from another goroutine, leave the run as it is without them. The
// first tick's event waits until the test's Do is waiting for the driver,
// so at least one Do lands inside the run (the run was fast enough to end
// before the test took its first tick: "Do never ran", seen in CI).
func TestGroupDoDuringRun(t *testing.T) {
	// Both runs have the global event that tells the test to call Do
	// (global events end windows: they are part of the model).
	tick := make(chan struct{}, 1)
	ticking := func(m *toy, withDo bool) *toy {
		first := true
		m.g.EveryGlobal(5, 5*Microsecond, func(Time) {
			if !withDo {
				return
			}
			select {
			case tick <- struct{}{}:
			default:
			}
			if first {
				first = false
				for m.g.doWaiting.Load() == 0 {
					runtime.Gosched()
				}
			}
		})
		return m
	}
	want := ticking(newToy(3, 4, 11, 800, []Time{800, 900, 1000}), false)
	want.g.Run(100*Microsecond, 2)

	m := ticking(newToy(3, 4, 11, 800, []Time{800, 900, 1000}), true)
	done := make(chan struct{})
	go func() {
		m.g.Run(100*Microsecond, 2)
		close(done)
	}()
	var seen []int
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick:
			m.g.Do(func() { seen = append(seen, len(m.traces[0])) })
		}
	}
	if len(seen) == 0 {
		t.Fatal("Do never ran")
	}
	if got, w := m.digest(), want.digest(); got != w {
		t.Errorf("with Do %s, without %s", got, w)
	}
}

// TestGroupLagFromTheWindowsEnd: two partitions with a 5 ms lookahead run
// their events at 0 in one window [0, 5 ms); their next events are at
// 5 ms. At a paced time of 6 ms the group trails by 1 ms: it has run
// everything before the window's end, 5 ms, though each partition's last
// event was at 0. No wall clock: the pacing is set and read at fixed
// instants.
func TestGroupLagFromTheWindowsEnd(t *testing.T) {
	g := NewGroup(2, 1)
	if err := g.SetLookahead(5 * Millisecond); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		g.Sim(i).AtFunc(0, func() {})
		g.Sim(i).AtFunc(5*Millisecond, func() {})
	}
	wall0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rt = &pacing{speed: 1, wallStart: wall0, until: Never}
	const paced = 6 * Millisecond
	if !g.stepLocked(paced, nil) {
		t.Fatal("no window ran")
	}
	if g.reachedAt != 5*Millisecond {
		t.Fatalf("the window ended at %v, want 5ms", g.reachedAt)
	}
	g.noteLagLocked(wall0.Add(paced.Duration()))
	if got, want := g.clock.lag(), Millisecond; got != want {
		t.Errorf("Lag %v at a paced %v after the window [0, 5ms), want %v (paced minus the window's end)", got, paced, want)
	}
}
