package engine

import (
	"context"
	"math"
	"sync/atomic"
	"time"
)

// pacing maps wall-clock time to simulated time under RunRealtime (a
// Sim's or a Group's): simulated time simStart falls at wall time
// wallStart, and speed simulated seconds pass per wall second; the run
// ends at until.
type pacing struct {
	speed     float64
	wallStart time.Time
	simStart  Time
	until     Time
}

// due is the paced time at wall, never past the run's until: what a Do
// between two steps may advance the clock to (a Do that comes after the
// wall clock passed until must not move the partitions beyond it).
func (p *pacing) due(wall time.Time) Time {
	return min(p.at(wall), p.until)
}

// at maps wall time to simulated time.
func (p *pacing) at(wall time.Time) Time {
	return p.simStart + Time(float64(wall.Sub(p.wallStart))*p.speed)
}

// wallUntil returns how long to sleep from now until simulated time t is
// due (at most an hour: a sleeper wakes and looks again).
func (p *pacing) wallUntil(t Time, now time.Time) time.Duration {
	if t == Never {
		return time.Hour
	}
	d := p.wallStart.Add(time.Duration(float64(t-p.simStart) / p.speed)).Sub(now)
	return min(d, time.Hour)
}

// realtimeClock is what SetEpoch, Epoch, Speed and Lag share with a
// running RunRealtime, Sim's and Group's alike: atomics, safe from any
// goroutine.
type realtimeClock struct {
	// epochNanos is the wall-clock time (Unix nanoseconds) of simulated
	// time 0 that SetEpoch fixed, 0 when pacing anchors at its start.
	// pacedEpoch is the epoch pacing uses or last used, explicit or derived
	// from the start of RunRealtime. speedBits holds the speed of the
	// running or last RunRealtime. lagNanos is how far simulated time
	// trails the paced target.
	epochNanos atomic.Int64
	pacedEpoch atomic.Int64
	speedBits  atomic.Uint64
	lagNanos   atomic.Int64
}

// start returns the pacing of a RunRealtime at speed from simulated time
// now to until: anchored at SetEpoch's epoch when there is one (anchored true: the
// caller jumps to the paced time if it is ahead), else at the wall time
// of its start.
func (c *realtimeClock) start(speed float64, now, until Time) (p pacing, anchored bool) {
	p = pacing{speed: speed, wallStart: time.Now(), simStart: now, until: until}
	c.speedBits.Store(math.Float64bits(speed))
	if e := c.epochNanos.Load(); e != 0 {
		c.anchor(&p, time.Unix(0, e))
		return p, true
	}
	c.pacedEpoch.Store(p.wallStart.Add(-time.Duration(float64(p.simStart) / speed)).UnixNano())
	return p, false
}

// anchor makes epoch the wall time of simulated time 0 in p.
func (c *realtimeClock) anchor(p *pacing, epoch time.Time) {
	p.wallStart = epoch
	p.simStart = 0
	c.pacedEpoch.Store(epoch.UnixNano())
}

// epoch is Epoch: SetEpoch's epoch, else the one the running or last
// RunRealtime derived from its start, else the zero time.
func (c *realtimeClock) epoch() time.Time {
	e := c.epochNanos.Load()
	if e == 0 {
		e = c.pacedEpoch.Load()
	}
	if e == 0 {
		return time.Time{}
	}
	return time.Unix(0, e)
}

// speed is Speed: the speed of the running or last RunRealtime.
func (c *realtimeClock) speed() float64 { return math.Float64frombits(c.speedBits.Load()) }

// noteLag records lag when positive and something is due by the paced
// time (due), else 0: an engine waiting for its next event keeps up.
func (c *realtimeClock) noteLag(lag Time, due bool) {
	if lag > 0 && due {
		c.lagNanos.Store(int64(lag))
	} else {
		c.lagNanos.Store(0)
	}
}

// lag is Lag.
func (c *realtimeClock) lag() Time { return Time(c.lagNanos.Load()) }

// sleep waits until wait has passed on the wall clock, a wake (a Do, Stop
// or SetEpoch: what it did may be due sooner) or ctx's end (its error).
// timer is the caller's, reused: since Go 1.23 a stopped or reset timer
// delivers no stale tick.
func sleep(ctx context.Context, wake <-chan struct{}, timer *time.Timer, wait time.Duration) error {
	if wait <= 0 {
		return nil
	}
	timer.Reset(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
	case <-timer.C:
	}
	return nil
}
