package collector

import (
	"context"
	"sync"
	"time"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/lease"
	"github.com/lhcnp/lhcnp/collector/placement"
)

// handoff is a handover in progress, in a goroutine of its own (its state
// is the placement's).
type handoff struct {
	done chan struct{}
	// mu orders the lease's renewals and its release: a renewal holds it
	// for its database call, and the handover holds it to say that it
	// releases the lease (placement.Releasing), after which the lease is
	// not renewed (a renewal the database ran after the release would
	// take the released lease back until leases.ttl).
	mu sync.Mutex
}

// startHandOver runs handOver for name, whose handover the placement
// began, in a goroutine of its own (reconcile loop only). Its end wakes the
// reconcile loop, which then ends it (handoffsDone).
func (c *Collector) startHandOver(name string) {
	h := &handoff{done: make(chan struct{})}
	c.handoffs[name] = h
	go func() {
		defer c.wakeHandover()
		defer close(h.done)
		c.handOver(c.hctx, h, name)
	}()
}

// handoffsDone ends the handovers whose goroutine ended: the placement
// forgets the leases they released (reconcile loop only).
func (c *Collector) handoffsDone() {
	for name, h := range c.handoffs {
		select {
		case <-h.done:
		default:
			continue
		}
		delete(c.handoffs, name)
		c.mu.Lock()
		c.pl.HandOverDone(name)
		c.mu.Unlock()
	}
}

// waitHandoffs waits for the handovers in progress (each bounded by
// leases.ttl and the drain time) and forgets them.
func (c *Collector) waitHandoffs() {
	for _, h := range c.handoffs {
		<-h.done
	}
	c.handoffsDone()
}

// handOver stops a target we should no longer own, waits (bounded) until
// its batches are stored, and releases its lease so the new owner takes it
// at once. Make-before-break, the new owner streams the target from the
// switch timestamp of its announcement on: the loop stops once it has
// received as far (bounded by leases.ttl/2; past that the handover counts
// as break-before-make) — unless the new owner withdrew that stream or
// announced a newer one meanwhile: then nothing is stopped (the next
// announcement starts another handover). The placement decides each of
// these steps and the handover's kind. Every database call has its own
// timeout.
func (c *Collector) handOver(ctx context.Context, h *handoff, name string) {
	c.mu.Lock()
	r := c.running[name]
	promoting := false
	if r != nil && r.promoted != nil {
		select {
		case <-r.promoted:
		default:
			promoting = true
		}
	}
	s := c.pl.Stopping(name, r != nil, promoting)
	c.mu.Unlock()
	if s.DropsHeld {
		c.log.Warn("handover: the loop is still being promoted; the rows it holds are dropped", "target", name)
	}
	if s.Wait {
		wctx, cancel := context.WithTimeout(ctx, c.cfg.Leases.TTL/2)
		err := r.loop.WaitReceived(wctx, s.SyncPoint)
		if err != nil {
			c.log.Warn("handover: this stream did not reach the new owner's sync point", "target", name,
				"sync_point", s.SyncPoint, "received", r.loop.LastReceived(), "err", err)
		}
		cancel()
		c.mu.Lock()
		goOn := c.pl.Reached(name, err == nil)
		c.mu.Unlock()
		if !goOn {
			c.log.Info("handover: the new owner's announced stream is gone; collecting on until it announces again",
				"target", name, "to", s.To.By, "session", s.To.Session)
			return
		}
	}
	c.mu.Lock()
	delete(c.running, name)
	c.mu.Unlock()
	if r != nil {
		r.stop()
	}
	if c.o.handedOff != nil {
		c.o.handedOff(name)
	}
	wctx, cancel := context.WithTimeout(ctx, min(c.o.drain, c.cfg.Leases.TTL/2))
	c.w.WaitTarget(wctx, name)
	cancel()
	c.m.SetState(name, "")
	h.mu.Lock() // waits for a renewal in progress
	c.mu.Lock()
	c.pl.Releasing(name)
	c.mu.Unlock()
	h.mu.Unlock()
	dctx, cancel := c.dbCtx(ctx)
	defer cancel()
	released, err := c.lm.Release(dctx, name)
	c.mu.Lock()
	res, kind := c.pl.Released(name, released, err)
	c.mu.Unlock()
	switch res {
	case placement.ReleaseFailed:
		c.log.Warn("lease not released", "target", name, "err", err)
	case placement.ReleaseLost:
		c.m.LeaseRenewals.WithLabelValues(collectormetrics.LeaseLost).Inc()
		c.log.Warn("lease not ours any more when handing the target over", "target", name, "kind", string(kind))
	case placement.Given:
		if kind != placement.Retired {
			c.m.Handovers.WithLabelValues(collectormetrics.HandoverGiven, string(kind)).Inc()
		}
		c.log.Info("target handed over", "target", name, "kind", string(kind))
	}
	c.targetGone(name)
}

func (c *Collector) wakeHandover() {
	select {
	case c.handoverWake <- struct{}{}:
	default:
	}
}

// handoverMessage records what a handover message says (the placement
// keeps the announcements), and wakes the loop that hands targets over or
// takes them when the message concerns it (placement.Hear).
func (c *Collector) handoverMessage(payload string) {
	h, err := lease.ParseHandover(payload)
	if err != nil {
		c.log.Warn("handover message ignored", "payload", payload, "err", err)
		return
	}
	c.mu.Lock()
	_, runs := c.running[h.Target]
	_, waits := c.standby[h.Target]
	wake := c.pl.Hear(h, time.Now(), runs, waits)
	c.mu.Unlock()
	if wake {
		c.wakeHandover()
	}
}
