package collector

import (
	"context"
	"sync"
	"time"

	"github.com/lhcnp/lhcnp/collector/lease"
	"github.com/lhcnp/lhcnp/collector/metrics"
)

// handoff is a handover in progress, in a goroutine of its own.
type handoff struct {
	done     chan struct{}
	released bool // the lease was released (written before done closes)
	// releasing, under mu, is set before the lease is released: from
	// then on the renewals leave the lease alone (a renewal the database
	// ran after the release would take the released lease back until
	// leases.ttl). A renewal holds mu for its database call.
	mu        sync.Mutex
	releasing bool
}

// startHandOver runs handOver for name in a goroutine of its own, unless
// one runs already (reconcile loop only). Its end wakes the reconcile loop,
// which then forgets the lease (handoffsDone).
func (c *Collector) startHandOver(name, kind string, succ ready) {
	if _, busy := c.handoffs[name]; busy {
		return
	}
	h := &handoff{done: make(chan struct{})}
	c.handoffs[name] = h
	go func() {
		defer c.wakeHandover()
		defer close(h.done)
		h.released = c.handOver(c.hctx, h, name, kind, succ)
	}()
}

// handoffsDone forgets the handovers that ended, and the leases they
// released (reconcile loop only).
func (c *Collector) handoffsDone() {
	for name, h := range c.handoffs {
		select {
		case <-h.done:
		default:
			continue
		}
		delete(c.handoffs, name)
		if h.released {
			delete(c.held, name)
			delete(c.handing, name)
		}
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
// at once; it returns whether the lease was released (the caller then
// forgets it). It does not touch held or handing (see startHandOver). kind is the handover's metric label ("" for a target no longer
// collected at all). Make-before-break, the new owner streams the target
// from the switch timestamp succ.syncPoint on: the loop stops once it has
// received as far (bounded by leases.ttl/2; past that the handover counts
// as break-before-make) — unless the new owner withdrew that stream or
// announced a newer one meanwhile: then nothing is stopped and handOver
// returns false (the next announcement starts another handover).
// Every database call has its own timeout.
func (c *Collector) handOver(ctx context.Context, h *handoff, name, kind string, succ ready) bool {
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
	c.mu.Unlock()
	if promoting && kind == metrics.HandoverMakeBeforeBreak {
		// Still a standby whose promotion retries: its held rows were
		// never stored, and stopping it drops them.
		kind = metrics.HandoverBreakBeforeMake
		c.log.Warn("handover: the loop is still being promoted; the rows it holds are dropped", "target", name)
	}
	if r != nil && kind == metrics.HandoverMakeBeforeBreak {
		wctx, cancel := context.WithTimeout(ctx, c.cfg.Leases.TTL/2)
		if err := r.loop.WaitReceived(wctx, succ.syncPoint); err != nil {
			kind = metrics.HandoverBreakBeforeMake
			c.log.Warn("handover: this stream did not reach the new owner's sync point", "target", name,
				"sync_point", succ.syncPoint, "received", r.loop.LastReceived(), "err", err)
		}
		cancel()
		if !c.stillReady(name, succ) {
			c.log.Info("handover: the new owner's announced stream is gone; collecting on until it announces again",
				"target", name, "to", succ.by, "session", succ.session)
			return false
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
	h.releasing = true
	h.mu.Unlock()
	dctx, cancel := c.dbCtx(ctx)
	defer cancel()
	released, err := c.lm.Release(dctx, name)
	if err != nil {
		// Still ours: the next pass tries again (or the lease expires).
		c.log.Warn("lease not released", "target", name, "err", err)
		c.targetGone(name)
		return false
	}
	if !released {
		// Not ours any more (expired and taken meanwhile): no handover
		// of ours to count.
		c.m.LeaseRenewals.WithLabelValues("lost").Inc()
		c.log.Warn("lease not ours any more when handing the target over", "target", name, "kind", kind)
		c.targetGone(name)
		return true
	}
	if kind != "" {
		c.m.Handovers.WithLabelValues("given", kind).Inc()
	}
	c.log.Info("target handed over", "target", name, "kind", kind)
	c.targetGone(name)
	return true
}

func (c *Collector) wakeHandover() {
	select {
	case c.handoverWake <- struct{}{}:
	default:
	}
}

// handoverMessage records a collector ready to take a target over, and
// wakes the loop that hands targets over or takes them when the message
// concerns it: a Ready for a target this collector runs, a Released for a
// target it streams on standby. (Waking on every message would make
// collectors waiting on standby wake each other without end.)
func (c *Collector) handoverMessage(payload string) {
	h, err := lease.ParseHandover(payload)
	if err != nil {
		c.log.Warn("handover message ignored", "payload", payload, "err", err)
		return
	}
	if h.Ready == c.cfg.ID || h.Released == c.cfg.ID || h.NotReady == c.cfg.ID {
		return // our own
	}
	c.mu.Lock()
	_, runs := c.running[h.Target]
	_, waits := c.standby[h.Target]
	switch {
	case h.Ready != "":
		// Messages of one collector arrive in the order it sent them:
		// the last one is its newest stream.
		c.ready[h.Target] = ready{by: h.Ready, session: h.Session, syncPoint: h.SyncPoint, at: time.Now()}
	case h.NotReady != "":
		if r, ok := c.ready[h.Target]; ok && r.by == h.NotReady {
			delete(c.ready, h.Target)
		}
	}
	c.mu.Unlock()
	if h.Ready != "" && runs || h.Released != "" && waits {
		c.wakeHandover()
	}
}
