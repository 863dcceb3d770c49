package collector

import (
	"context"
	"time"
)

// drain, once Run's context has ended: targets go make-before-break to
// the collectors that take them over (bounded by the drain time and
// leases.ttl), the other loops stop and hand over their last batch, the
// writer (whose Run closes wdone) stores what it holds (or spills it when
// the drain time is up: stopWriter), leases go. stopHandoffs cuts short
// the handovers still in progress.
func (c *Collector) drain(wdone <-chan struct{}, stopWriter, stopHandoffs context.CancelFunc) {
	if c.lm != nil {
		c.drainLeases()
		// The drain is over: handovers still in progress are cut short
		// (their leases are released below).
		stopHandoffs()
		c.waitHandoffs()
	}
	c.stopAll(nil)
	c.w.Close()
	select {
	case <-wdone:
	case <-time.After(c.o.drain):
		c.log.Warn("drain time is up: the rest stays in the spill", "batches", c.sp.Pending())
		stopWriter()
		<-wdone
	}
	if c.lm != nil {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for _, t := range c.heldNames() {
			if _, err := c.lm.Release(dctx, t); err != nil {
				c.log.Warn("lease not released", "target", t, "err", err)
			}
		}
		c.lm.Leave(dctx)
		c.m.Leases.Set(0)
		cancel()
	}
}

// drainLeases, at shutdown, hands this collector's targets over
// make-before-break: it leaves the members (so the others take its
// targets), keeps streaming and renewing, and stops each target once its
// new owner streams it (the handovers run side by side) — until none is
// left, nobody else is alive, or the drain time (at most leases.ttl) is
// up.
func (c *Collector) drainLeases() {
	if len(c.heldNames()) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(c.o.drain, c.cfg.Leases.TTL))
	defer cancel()
	if err := c.lm.Leave(ctx); err != nil {
		c.log.Warn("drain: cannot leave the members", "err", err)
		return
	}
	tick := time.NewTicker(c.cfg.Leases.Renew)
	defer tick.Stop()
	for {
		c.handoffsDone()
		if len(c.heldNames()) == 0 {
			return
		}
		members, err := func() ([]string, error) {
			dctx, cancel := c.dbCtx(ctx)
			defer cancel()
			return c.lm.Members(dctx)
		}()
		if err != nil || len(members) == 0 {
			return
		}
		for _, name := range c.heldNames() {
			c.mu.Lock()
			s := c.pl.Draining(name, members, time.Now())
			c.mu.Unlock()
			c.carryOut(ctx, name, s, nil, nil)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-c.handoverWake:
		}
	}
}

// stopAll stops every loop (each hands its last batch to the writer).
func (c *Collector) stopAll(_ map[string]bool) {
	c.mu.Lock()
	rs := make([]*running, 0, len(c.running)+len(c.standby))
	for _, r := range c.running {
		rs = append(rs, r)
	}
	for _, r := range c.standby {
		rs = append(rs, r)
	}
	c.running, c.standby = map[string]*running{}, map[string]*running{}
	c.mu.Unlock()
	for _, r := range rs {
		r.cancel()
	}
	for _, r := range rs {
		r.wait()
	}
}
