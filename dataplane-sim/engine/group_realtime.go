package engine

import (
	"context"
	"errors"
	"time"
)

// pacing maps wall-clock time to simulated time under RunRealtime.
type pacing struct {
	speed     float64
	wallStart time.Time
	simStart  Time
}

func (p *pacing) at(wall time.Time) Time {
	return p.simStart + Time(float64(wall.Sub(p.wallStart))*p.speed)
}

func (p *pacing) wallUntil(t Time, now time.Time) time.Duration {
	if t == Never {
		return time.Hour
	}
	d := p.wallStart.Add(time.Duration(float64(t-p.simStart) / p.speed)).Sub(now)
	return min(d, time.Hour)
}

// RunRealtime runs the partitions paced to the wall clock at speed (1:
// real time), on threads goroutines, until simulated time reaches until
// (Never: until ctx ends). It returns nil at until, ctx.Err() when ctx
// ends, ErrStopped after Stop. A group of one partition is its Sim's
// RunRealtime.
//
// Windows end at the paced time as well as at the lookahead, so no
// partition runs ahead of the wall clock; where they end then depends on
// the wall clock, so a paced run, unlike Run, is not the same for every
// thread count (no paced run is reproducible). Do runs between windows.
// Lag reports how far the group trails the wall clock.
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
	g.rt = &pacing{speed: speed, wallStart: time.Now(), simStart: g.now}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.rt = nil
		g.mu.Unlock()
	}()
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
			// Behind by more than a window: the model cannot keep up.
			if lag := g.rt.at(time.Now()) - g.now; lag > g.lookahead {
				g.lagNanos.Store(int64(lag))
			} else {
				g.lagNanos.Store(0)
			}
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
		if lag := g.rt.at(now) - g.now; lag > 0 && next <= g.rt.at(now) {
			g.lagNanos.Store(int64(lag))
		} else {
			g.lagNanos.Store(0)
		}
		wait := g.rt.wallUntil(next, now)
		g.mu.Unlock()
		if wait <= 0 {
			continue
		}
		// Wake for the next event, a Do or Stop, or ctx (time.After's
		// timer is collected once it fires or is dropped).
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-g.wake:
		case <-time.After(wait):
		}
	}
}

// Lag reports how far the group trailed the wall clock at the last pacing
// step of RunRealtime (0 when it keeps up).
func (g *Group) Lag() Time {
	if len(g.parts) == 1 {
		return g.parts[0].sim.Lag()
	}
	return Time(g.lagNanos.Load())
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
	g.doWaiting.Add(1)
	g.mu.Lock()
	g.doWaiting.Add(-1)
	defer func() {
		g.mu.Unlock()
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}()
	if g.rt != nil {
		t, gt := g.next()
		g.advanceLocked(min(g.rt.at(time.Now()), t, gt))
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
