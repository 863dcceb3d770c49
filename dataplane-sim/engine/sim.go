package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Handler is the target of an event. kind and arg are whatever the handler
// passed to Schedule: typically kind selects a timer and arg carries a
// generation number, so that a handler can ignore a timer it has since
// superseded (the engine has no cancel: superseded events are cheap to skip,
// and cancellation would need an index into the heap for every event).
type Handler interface {
	Handle(kind uint32, arg uint64)
}

// HandlerFunc adapts a function to Handler, for rare events (scenario
// actions, samplers). Hot paths should use a model object as the Handler:
// a closure costs an allocation per Schedule.
type HandlerFunc func(kind uint32, arg uint64)

// Handle calls f.
func (f HandlerFunc) Handle(kind uint32, arg uint64) { f(kind, arg) }

// Sim is a deterministic discrete-event simulator. Time is integer
// nanoseconds; events at the same time run in the order they were scheduled.
// The only randomness is Rand, a PCG seeded from the seed given to New; the
// engine never reads the wall clock except in RunRealtime, to pace itself.
//
// A Sim is driven by one goroutine at a time (Run or RunRealtime). Other
// goroutines talk to it only through Do, which runs a function between
// events with the model locked, and Stop.
type Sim struct {
	now    Time
	q      queue
	events uint64
	rng    *rand.Rand
	seed   uint64
	hook   eventHook // empty without the lhcnp_evhook build tag

	// mu is held by the driving goroutine while it processes events, and by Do
	// while it runs a function; it is what makes the model safe to touch from
	// other goroutines. doWaiting tells the driver to let go soon.
	mu        sync.Mutex
	doWaiting atomic.Int32
	stop      atomic.Bool
	wake      chan struct{}

	// Realtime pacing, valid while rtActive (read under mu).
	rtActive bool
	rt       pacing
	// clock holds what SetEpoch, Epoch, Speed and Lag share with
	// RunRealtime.
	clock realtimeClock
}

// Option configures a Sim.
type Option func(*Sim)

// WithSeed sets the seed of the simulation's random source (default 1).
func WithSeed(seed uint64) Option { return func(s *Sim) { s.seed = seed } }

// New returns a simulator at time 0 with no events.
func New(opts ...Option) *Sim {
	s := &Sim{seed: 1, wake: make(chan struct{}, 1)}
	for _, o := range opts {
		o(s)
	}
	s.rng = rand.New(rand.NewPCG(s.seed, s.seed^0x9E3779B97F4A7C15))
	s.q.init()
	// Near's sorted run slides along its slice as keys are pushed at its
	// back and popped at its front, and moves back to the front when it
	// reaches the end: a short slice keeps the lines it slides over in
	// the first-level cache between two laps (256 keys, 6 KiB: §7's
	// pushes missed it 0.7 M times more in 3 M events; at most
	// nearSortedMax+1 keys are a run, and a near heap grows the slice).
	s.q.near = make([]key, 0, 96)
	s.q.far = make([]key, 0, 256)
	return s
}

// Now returns the current simulated time.
func (s *Sim) Now() Time { return s.now }

// Seed returns the seed the random source was created with.
func (s *Sim) Seed() uint64 { return s.seed }

// Rand returns the simulation's random source. Models must take all their
// randomness from here, in event order, so that a seed fixes the outcome.
func (s *Sim) Rand() *rand.Rand { return s.rng }

// At schedules h.Handle(kind, arg) at time t. A time in the past runs at Now
// (after events already scheduled for Now).
func (s *Sim) At(t Time, h Handler, kind uint32, arg uint64) {
	if t < s.now {
		t = s.now
	}
	s.q.push(t, h, kind, arg)
}

// After schedules h.Handle(kind, arg) d after Now.
// A d that puts the time past Never schedules at Never (the event never
// runs), not at a time wrapped round into the past.
func (s *Sim) After(d Time, h Handler, kind uint32, arg uint64) {
	t := s.now + d
	if t < s.now {
		t = s.pastOrNever(d)
	}
	s.q.push(t, h, kind, arg)
}

// pastOrNever is After's time for a delay d that took Now+d below Now: Now
// for a negative d (At's clamp), Never for one that went past Never. Out
// of line, so that After's common case is a compare and a branch, as At's
// clamp alone was (written in line, the compiler chose conditional moves:
// 6 more instructions an event in BenchmarkQueue, against 2 now).
//
//go:noinline
func (s *Sim) pastOrNever(d Time) Time {
	if d > 0 {
		return Never
	}
	return s.now
}

// HandlerID names a handler and a kind registered with a Sim (Register).
// The zero HandlerID names none: use only those Register returned.
type HandlerID uint32

// Register registers h with kind for good and returns their HandlerID,
// for AtID. An event of a registered pair carries its number, where At
// keeps the handler and kind in a slot of their own until the event has
// run: a model object that schedules events all the time (a port, a
// link) registers its kinds once. At most 2^23 pairs can be registered
// with a Sim.
func (s *Sim) Register(h Handler, kind uint32) HandlerID {
	return HandlerID(s.q.register(h, kind))
}

// AtID schedules the handler and kind id names (Register of this Sim)
// at time t, as At(t, h, kind, arg) would: the events of At and AtID are
// ordered alike, by time and then the order in which they were
// scheduled.
func (s *Sim) AtID(t Time, id HandlerID, arg uint64) {
	if t < s.now {
		t = s.now
	}
	s.q.pushSlot(t, uint32(id), arg)
}

// Key is a place in the order of events: a time, and among the events at
// that time a sequence number (the order in which they were scheduled).
// Reserve hands one out.
type Key struct {
	At  Time
	seq uint64
}

// Reserve returns the place an event scheduled now by At(t, ...) would
// take, without scheduling one: AtKey schedules an event there later. A
// model that re-arms a timer often (DCQCN's rate timer, restarted by every
// cut) reserves the new deadline and lets the event already pending, due
// no later, move on to it when it fires, instead of leaving superseded
// events to fire and do nothing; the events that do fire run in the same
// order as if each restart had scheduled its own.
func (s *Sim) Reserve(t Time) Key {
	if t < s.now {
		t = s.now
	}
	return Key{At: t, seq: s.q.reserve()}
}

// AtKey schedules h.Handle(kind, arg) at k, a Key from Reserve of this Sim
// not used before (keys are unique: use each once). k must not be before
// the event running now; a k whose time has passed (RunRealtime's jumps
// move Now) schedules the event at Now, after the events already there.
func (s *Sim) AtKey(k Key, h Handler, kind uint32, arg uint64) {
	if k.At < s.now {
		s.q.push(s.now, h, kind, arg)
		return
	}
	s.q.pushKey(k.At, k.seq, h, kind, arg)
}

// AtFunc schedules f at time t (convenience for rare events).
func (s *Sim) AtFunc(t Time, f func()) {
	s.At(t, HandlerFunc(func(uint32, uint64) { f() }), 0, 0)
}

// Every calls f(now) at start, start+period, start+2*period, ... for as long
// as the simulation runs. It is the hook for samplers and for publishing
// snapshots from inside the simulation goroutine.
func (s *Sim) Every(start, period Time, f func(now Time)) {
	if period <= 0 {
		panic("engine: Every with non-positive period")
	}
	t := &ticker{s: s, period: period, f: f}
	s.At(start, t, 0, 0)
}

type ticker struct {
	s      *Sim
	period Time
	f      func(Time)
}

func (t *ticker) Handle(uint32, uint64) {
	t.f(t.s.now)
	t.s.After(t.period, t, 0, 0)
}

// Pending returns the number of scheduled events (including superseded ones
// their handlers will ignore).
func (s *Sim) Pending() int { return s.q.len() }

// NextAt returns the time of the earliest pending event, or Never.
func (s *Sim) NextAt() Time {
	if s.q.len() == 0 {
		return Never
	}
	return s.q.peekAt()
}

// Events returns the number of events processed so far.
func (s *Sim) Events() uint64 { return s.events }

// Stop asks the running Run or RunRealtime to return within 64 events; called while neither runs, it makes the next one return at once.
// Safe from any goroutine and from inside a handler.
func (s *Sim) Stop() {
	s.stop.Store(true)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Step processes the earliest event, if any (events at Never never run),
// and reports whether there was one. It does not lock: use it only from
// the goroutine that owns the Sim.
func (s *Sim) Step() bool {
	if s.q.peekAt() == Never { // an empty queue's too
		return false
	}
	k := s.q.popRun()
	s.now = k.at
	s.events++
	t := s.q.target(k)
	t.h.Handle(t.kind, k.arg)
	s.q.done()
	return true
}

// runLocked processes events with time <= until until there are none, Stop is
// called, or another goroutine waits in Do. It reports whether it returned
// because of Do (so the caller should yield and come back). until is
// below Never (lastRun): the bound, not a test in the loop, keeps the
// events at Never out (an empty queue's topAt is Never too).
func (s *Sim) runLocked(until Time) (yielded bool) {
	q := &s.q
	// Look at the flags every 64 events: an atomic load per event is
	// measurable at 10^7 events/s, and 64 events are a few microseconds.
	check := 0
	for q.n > 0 && q.topAt <= until {
		if check == 0 {
			if s.doWaiting.Load() != 0 {
				return true
			}
			if s.stop.Load() {
				return false
			}
			check = 64
		}
		check--
		// popFast, written out: inlined, it kept its bool in a register
		// and tested it (3 instructions an event).
		var k key
		if nh := q.nh + 1; q.mode == 0 && nh < len(q.near) && q.farAt > q.near[nh].at {
			k = q.near[nh-1]
			q.last, q.nh, q.topAt = k.at, nh, q.near[nh].at
			q.n--
		} else if nh := q.nh; q.mode == modeTopReg && nh < len(q.near) && q.farAt > q.near[nh].at {
			// The key that waited alone in top, near's first next.
			k = q.top
			q.last, q.topAt, q.mode = k.at, q.near[nh].at, 0
			q.n--
		} else {
			k = q.popRun()
		}
		s.now = k.at
		s.events++
		if slot := uint32(k.ss & slotMask); slot&regBit != 0 {
			// A registered handler (most events): no slab slot to
			// free after it, so no done (runFree is false).
			t := q.reg[slot&^regBit]
			if hookEvents {
				s.hook.before(t.h, t.kind, k.arg)
			}
			t.h.Handle(t.kind, k.arg)
			if hookEvents {
				s.hook.after(t.h, t.kind, k.arg)
			}
			continue
		}
		t := q.target(k)
		if hookEvents {
			s.hook.before(t.h, t.kind, k.arg)
		}
		t.h.Handle(t.kind, k.arg)
		q.done()
		if hookEvents {
			s.hook.after(t.h, t.kind, k.arg)
		}
	}
	return false
}

// lastRun is the time of the last events a run to until may run: until,
// or Never-1 for Never (events at Never never run). The drivers bound
// their runs with it once per call, in place of a test per event (kept
// out of runLocked, whose loop it moved by two alignment NOPs an event).
func lastRun(until Time) Time { return min(until, Never-1) }

// Run processes events in time order up to and including until, as fast as
// possible, then sets Now to until (unless stopped earlier). Functions passed
// to Do from other goroutines run between events.
func (s *Sim) Run(until Time) {
	defer s.stop.Store(false)
	for {
		s.mu.Lock()
		yielded := s.runLocked(lastRun(until))
		if !yielded {
			if !s.stop.Load() && s.now < until {
				s.now = until
			}
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.waitDo()
	}
}

// waitDo gives goroutines blocked in Do a chance to take the lock.
func (s *Sim) waitDo() {
	for s.doWaiting.Load() != 0 {
		runtime.Gosched()
	}
}

// ErrStopped is returned by RunRealtime when Stop ended it.
var ErrStopped = errors.New("engine: stopped")

// RunRealtime processes events paced to the wall clock: simulated time
// advances speed times as fast as real time (speed 1: real time; 0.01: a
// hundredth). It returns nil when simulated time reaches until (Never: run
// until ctx ends), ctx.Err() when ctx ends, or ErrStopped after Stop.
//
// While it waits for the wall clock it holds no lock, so Do runs at once;
// while it processes a burst of due events, Do waits for the current event to
// finish. If the model is too slow for the chosen speed, simulated time
// falls behind the wall clock; Lag reports by how much.
func (s *Sim) RunRealtime(ctx context.Context, speed float64, until Time) error {
	if speed <= 0 {
		return errors.New("engine: realtime speed must be positive")
	}
	defer s.stop.Store(false)
	// A context that ends stops a burst too, within 64 events: a model
	// that has fallen behind can spend seconds in one burst, and waiting
	// for it kept a cancelled fabric from ending (seen at speed 2).
	defer context.AfterFunc(ctx, s.Stop)()
	s.mu.Lock()
	s.rtActive = true
	var anchored bool
	s.rt, anchored = s.clock.start(speed, s.now, until)
	if anchored {
		s.skipLocked(s.rt.due(time.Now()))
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.rtActive = false
		s.mu.Unlock()
	}()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.mu.Lock()
		target := s.rt.at(time.Now())
		if target > until {
			target = until
		}
		yielded := s.runLocked(lastRun(target))
		if yielded {
			// A burst cut short by Do still says how far behind it is:
			// a model that falls behind is the one whose bursts Do
			// interrupts (a switch's publisher), and reading Lag only
			// after a whole burst left it at 0 exactly then.
			s.noteLagLocked(time.Now())
			s.mu.Unlock()
			s.waitDo()
			continue
		}
		if s.stop.Load() {
			s.mu.Unlock()
			if err := ctx.Err(); err != nil {
				return err
			}
			return ErrStopped
		}
		if s.now < target {
			s.now = target
		}
		if s.now >= until {
			s.mu.Unlock()
			return nil
		}
		next := s.NextAt()
		if next > until {
			next = until
		}
		wallNow := time.Now()
		s.noteLagLocked(wallNow)
		wait := s.rt.wallUntil(next, wallNow)
		s.mu.Unlock()

		if err := sleep(ctx, s.wake, timer, wait); err != nil {
			return err
		}
	}
}

// noteLagLocked records how far simulated time trails the wall clock at
// wallNow: the paced time minus Now while an event is already due, else 0
// (an engine waiting for its next event keeps up). s.mu is held.
func (s *Sim) noteLagLocked(wallNow time.Time) {
	paced := s.rt.at(wallNow)
	s.clock.noteLag(paced-s.now, s.q.n > 0 && s.q.topAt <= paced)
}

// SetEpoch anchors realtime pacing to the wall clock: simulated time t
// falls at wall time epoch + t/speed, in this RunRealtime and the next.
// Engines in several processes that share an epoch and a speed share a
// clock, which is how frames that cross processes keep their link delay
// (docs/lab.md). Without an epoch, RunRealtime anchors its start: the
// simulated time it starts from falls at the wall time it starts at.
//
// When the epoch puts the paced time ahead of the engine (a process joining
// a fabric that has run for a while), the engine jumps there: events due
// before are not replayed in their own time but run at once, in their order,
// at the new time. An epoch that puts the paced time behind the engine makes
// the engine wait for the wall clock: simulated time never goes back.
// Safe from any goroutine, before or during RunRealtime.
func (s *Sim) SetEpoch(epoch time.Time) {
	s.doWaiting.Add(1)
	s.mu.Lock()
	s.doWaiting.Add(-1)
	s.clock.epochNanos.Store(epoch.UnixNano())
	if s.rtActive {
		// Jump to the paced time if the epoch puts it ahead.
		s.clock.anchor(&s.rt, epoch)
		s.skipLocked(s.rt.due(time.Now()))
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// skipLocked moves Now forward to t. Events due before t are moved to t,
// keeping their order (after those already scheduled for t).
func (s *Sim) skipLocked(t Time) {
	if t <= s.now {
		return
	}
	s.q.skip(t)
	s.now = t
}

// skip moves the events due before t to t, keeping their order (after
// those already scheduled for t).
func (q *queue) skip(t Time) {
	type ev struct {
		t    target // an unregistered target's
		slot uint32 // a registered target's, else 0
		arg  uint64
	}
	var moved []ev
	for q.len() > 0 && q.peekAt() < t {
		k := q.popRun()
		e := ev{arg: k.arg}
		if slot := uint32(k.ss & slotMask); slot&regBit != 0 {
			e.slot = slot
		} else {
			e.t = q.target(k)
		}
		q.done()
		moved = append(moved, e)
	}
	for _, e := range moved {
		if e.slot != 0 {
			q.pushSlot(t, e.slot, e.arg)
		} else {
			q.push(t, e.t.h, e.t.kind, e.arg)
		}
	}
}

// Epoch returns the wall-clock time of simulated time 0 under realtime
// pacing: the one SetEpoch fixed or, without one, the one the running (or
// last) RunRealtime derived from its start. It is the zero time before
// any of these. Safe from any goroutine.
func (s *Sim) Epoch() time.Time {
	return s.clock.epoch()
}

// Speed returns the speed of the running or last RunRealtime (0 before
// the first). Safe from any goroutine.
func (s *Sim) Speed() float64 { return s.clock.speed() }

// Lag reports how far simulated time trailed the wall-clock target at the
// last pacing step of RunRealtime, a whole burst of due events or one that
// Do interrupted (0 when the model keeps up).
func (s *Sim) Lag() Time { return s.clock.lag() }

// Do runs f on the model, between events, and returns when f has returned.
// It is the only safe way for another goroutine to touch the model while
// Run or RunRealtime drives it: change configuration, schedule events, or
// copy state into a snapshot. It also works when nothing drives the Sim.
//
// Under RunRealtime, Now inside f is advanced to the paced wall-clock time
// (never past the next pending event), so that f's After(d, ...) counts from
// "now" as the outside world sees it. Do must not be called from inside a
// handler or from f (it would deadlock).
func (s *Sim) Do(f func()) {
	s.doWaiting.Add(1)
	s.mu.Lock()
	s.doWaiting.Add(-1)
	if s.rtActive {
		t := s.rt.due(time.Now())
		if n := s.NextAt(); t > n {
			t = n
		}
		if t > s.now {
			s.now = t
		}
	}
	defer func() {
		s.mu.Unlock()
		// f may have scheduled something earlier than what the realtime loop
		// sleeps for.
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}()
	f()
}

// Published holds the latest value published by the simulation goroutine
// for readers on other goroutines: a lock-free single-writer, many-reader
// cell. The writer stores a fresh value each time (never mutates one it has
// stored), readers Load and treat the result as read-only.
type Published[T any] struct {
	p atomic.Pointer[T]
	n atomic.Uint64
}

// Store publishes v.
func (p *Published[T]) Store(v *T) {
	p.p.Store(v)
	p.n.Add(1)
}

// Load returns the latest published value (nil before the first Store).
func (p *Published[T]) Load() *T { return p.p.Load() }

// Version counts Stores, so readers can tell whether anything new arrived.
func (p *Published[T]) Version() uint64 { return p.n.Load() }
