// Package clock abstracts wall-clock time and timers so that code driven by
// timers (SAMPLE subscriptions, heartbeats) can be tested deterministically.
// Production code uses Real; tests use a Fake that only moves when told to.
//
// It must not depend on gNMI or on anything else under server/.
package clock

import (
	"sync"
	"time"
)

// Clock is the source of time and timers.
type Clock interface {
	Now() time.Time
	// NewTimer returns an armed timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that callers need.
type Timer interface {
	C() <-chan time.Time
	// Stop disarms the timer; it reports whether the timer was armed.
	Stop() bool
	// Reset re-arms the timer to fire after d.
	Reset(d time.Duration)
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Stop() bool            { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }

// Fake is a clock that moves only on Advance. Timers fire (a non-blocking
// send on their channel, capacity one) when Advance passes their deadline.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*fakeTimer]struct{} // armed timers
	changed chan struct{}           // closed and replaced whenever the set of armed timers changes
}

// NewFake returns a Fake clock that reads start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, timers: map[*fakeTimer]struct{}{}, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns an armed fake timer.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Advance moves the clock by d and fires every timer whose deadline is reached.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	fired := false
	for t := range f.timers {
		if !t.deadline.After(f.now) {
			delete(f.timers, t)
			fired = true
			select {
			case t.c <- f.now:
			default:
			}
		}
	}
	if fired {
		f.notifyLocked()
	}
}

// Armed returns how many timers are armed.
func (f *Fake) Armed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitArmed blocks until at least n timers are armed or done is closed; it
// reports whether the count was reached. Tests use it to know that the code
// under test has set its timers before they Advance.
func (f *Fake) WaitArmed(done <-chan struct{}, n int) bool {
	for {
		f.mu.Lock()
		if len(f.timers) >= n {
			f.mu.Unlock()
			return true
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-done:
			return false
		}
	}
}

// NextDeadline returns the earliest deadline of an armed timer.
func (f *Fake) NextDeadline() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var min time.Time
	for t := range f.timers {
		if min.IsZero() || t.deadline.Before(min) {
			min = t.deadline
		}
	}
	return min, !min.IsZero()
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	f        *Fake
	c        chan time.Time
	deadline time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	_, armed := t.f.timers[t]
	if armed {
		delete(t.f.timers, t)
		t.f.notifyLocked()
	}
	return armed
}

func (t *fakeTimer) Reset(d time.Duration) {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.deadline = t.f.now.Add(d)
	if d <= 0 {
		delete(t.f.timers, t)
		select {
		case t.c <- t.f.now:
		default:
		}
		t.f.notifyLocked()
		return
	}
	t.f.timers[t] = struct{}{}
	t.f.notifyLocked()
}
