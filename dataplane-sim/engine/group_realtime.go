package engine

import (
	"context"
	"errors"
	"time"
)

// RunRealtime runs the partitions paced to the wall clock at speed (1:
// real time), on threads goroutines, until simulated time reaches until
// (Never: until ctx ends). It returns nil at until, ctx.Err() when ctx
// ends, ErrStopped after Stop. A group of one partition is its Sim's
// RunRealtime.
//
// Windows end at the paced time as well as at the lookahead, so no
// partition runs ahead of the wall clock; where they end then depends on
// the wall clock, so a paced run, unlike Run, is not the same for every
// thread count (no paced run is reproducible). Do runs between windows,
// and ctx and Stop are looked at between windows: a group that has fallen
// behind ends within a window of its cancel. Lag reports how far the
// group trails the wall clock; SetEpoch anchors the pacing as Sim's does.
func (g *Group) RunRealtime(ctx context.Context, speed float64, until Time, threads int) error {
	if len(g.parts) == 1 {
		return g.parts[0].sim.RunRealtime(ctx, speed, until)
	}
	if speed <= 0 {
		return errors.New("engine: realtime speed must be positive")
	}
	w := g.begin(threads)
	defer g.end(w)
	g.mu.Lock()
	p, anchored := g.clock.start(speed, g.now, until)
	g.rt = &p
	if anchored {
		g.jumpLocked()
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.rt = nil
		g.mu.Unlock()
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if g.stopped.Load() {
			return ErrStopped
		}
		g.waitDo()
		g.mu.Lock()
		target := min(g.rt.at(time.Now()), until)
		if g.stepLocked(target, w) {
			// After every window, so that a Do between two windows of a
			// group that falls behind reads how far behind it is.
			g.noteLagLocked(time.Now())
			g.mu.Unlock()
			continue
		}
		// Nothing is due before the paced time: the group idles there.
		g.advanceLocked(target)
		if target >= until {
			g.finishLocked(until)
			g.mu.Unlock()
			return nil
		}
		t, gt := g.next()
		next := min(t, gt, until)
		now := time.Now()
		g.noteLagLocked(now)
		wait := g.rt.wallUntil(next, now)
		g.mu.Unlock()
		// Wake for the next event, a Do or Stop, or ctx.
		if err := sleep(ctx, g.wake, timer, wait); err != nil {
			return err
		}
	}
}

// noteLagLocked records how far the group trails the wall clock at wall,
// as Sim's does: the paced time minus the time the group has reached
// while an event, message or global event is already due, else 0. g.mu
// is held and pacing is active.
func (g *Group) noteLagLocked(wall time.Time) {
	paced := g.rt.at(wall)
	t, gt := g.next()
	g.clock.noteLag(paced-g.reached(), min(t, gt) <= paced)
}

// reached returns the time the group has reached: the time before which
// every partition has run every event (the end of the last window, the
// time of the last global events), or the time the group or a partition
// was advanced to with nothing due before it (an idle step, a Do). A
// partition's own Now is the time of its last event: after a window in
// which its events ended early it is behind the window's end, although
// the partition has run everything before that end, and the group with
// it. (The latest of those alone made Lag trail by up to a lookahead:
// TestGroupLagFromTheWindowsEnd.)
func (g *Group) reached() Time {
	now := max(g.now, g.reachedAt)
	for _, p := range g.parts {
		now = max(now, p.sim.now)
	}
	return now
}

// Lag reports how far the group trailed the wall clock after the last
// window (or idle step) of RunRealtime (0 when it keeps up): the paced
// time minus the time before which every partition has run every event
// (the end of the last window), while something is already due. With
// several partitions it is the group's lag, not any one partition's: a
// window ends for all of them at once. A group of one partition is its
// Sim's Lag.
func (g *Group) Lag() Time {
	if len(g.parts) == 1 {
		return g.parts[0].sim.Lag()
	}
	return g.clock.lag()
}

// SetEpoch anchors realtime pacing to the wall clock as Sim.SetEpoch
// does: simulated time t falls at wall time epoch + t/speed, in this
// RunRealtime and the next. An epoch that puts the paced time ahead of
// the group makes it jump there: the pending messages are delivered, and
// every partition's events and the global events due before run at once
// at the new time, each queue in its order (global events first, as at
// any time). Safe from any goroutine, before or during RunRealtime, never
// from a handler. A group of one partition is its Sim's SetEpoch.
func (g *Group) SetEpoch(epoch time.Time) {
	if len(g.parts) == 1 {
		g.parts[0].sim.SetEpoch(epoch)
		return
	}
	g.lockOutDriver()
	defer g.unlockAndWake()
	g.clock.epochNanos.Store(epoch.UnixNano())
	if g.rt != nil {
		g.clock.anchor(g.rt, epoch)
		g.jumpLocked()
	}
}

// lockOutDriver takes g.mu from the driver between two steps.
func (g *Group) lockOutDriver() {
	g.doWaiting.Add(1)
	g.mu.Lock()
	g.doWaiting.Add(-1)
}

// unlockAndWake lets go of g.mu and wakes a sleeping RunRealtime: what was
// done may be due earlier than what it sleeps for.
func (g *Group) unlockAndWake() {
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// jumpLocked jumps to the paced time if it is ahead (pacing was just
// anchored to an epoch). g.mu is held and pacing is active.
func (g *Group) jumpLocked() {
	t := g.rt.due(time.Now())
	if t <= g.reached() {
		return
	}
	g.deliverAll()
	for _, p := range g.parts {
		p.sim.skipLocked(t)
		// The EveryPartition instants skipped: one at t.
		p.tickAt = max(p.tickAt, t)
	}
	g.globals.skip(t)
	g.now = t
}

// Epoch returns the wall-clock time of simulated time 0 under realtime
// pacing, as Sim.Epoch does. Safe from any goroutine.
func (g *Group) Epoch() time.Time {
	if len(g.parts) == 1 {
		return g.parts[0].sim.Epoch()
	}
	return g.clock.epoch()
}

// Speed returns the speed of the running or last RunRealtime (0 before
// the first). Safe from any goroutine.
func (g *Group) Speed() float64 {
	if len(g.parts) == 1 {
		return g.parts[0].sim.Speed()
	}
	return g.clock.speed()
}

// Do runs f between windows, with every partition stopped, and returns
// when f has returned: the way other goroutines touch a cut model while
// Run or RunRealtime drives it (or when nothing does). Under RunRealtime
// every partition's Now is first advanced to the paced time, never past
// the next pending event or message. f may schedule events in any
// partition and send messages (they arrive at least the lookahead later
// as ever). Do must not be called from a handler or from f. A group of one
// partition is its Sim's Do.
func (g *Group) Do(f func()) {
	if len(g.parts) == 1 {
		g.parts[0].sim.Do(f)
		return
	}
	g.lockOutDriver()
	defer g.unlockAndWake()
	if g.rt != nil {
		t, gt := g.next()
		g.advanceLocked(min(g.rt.due(time.Now()), t, gt))
	}
	g.sendMin = g.now
	f()
	g.sendMin = Never
	// What f sent joins the messages the next step delivers, behind them
	// in each source's sequence: a Do that sends nothing changes nothing.
	cur, prev := g.cur, g.cur^1
	for _, p := range g.parts {
		for d, ms := range p.out[cur] {
			p.out[prev][d] = append(p.out[prev][d], ms...)
			clear(ms)
			p.out[cur][d] = ms[:0]
		}
		p.minOut[prev] = min(p.minOut[prev], p.minOut[cur])
		p.minOut[cur] = Never
	}
}
