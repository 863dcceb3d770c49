package collector

import (
	"context"
	"fmt"
	"time"

	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/lease"
	"github.com/lhcnp/lhcnp/collector/metrics"
)

// reconcileLeases decides, per target, whether this collector owns it
// (wanted), streams it on standby, or hands it over. Each database call
// has a timeout of its own (leases.renew); a handover runs in a goroutine
// of its own, so a slow one holds up neither the others nor the renewals.
func (c *Collector) reconcileLeases(ctx context.Context, desired map[string]config.Target, wanted map[string]int64) {
	c.handoffsDone()
	members, err := func() ([]string, error) {
		dctx, cancel := c.dbCtx(ctx)
		defer cancel()
		if err := c.lm.Heartbeat(dctx); err != nil {
			return nil, err
		}
		return c.lm.Members(dctx)
	}()
	if err != nil {
		// The database is away: keep what we hold; the writer's fencing
		// refuses our batches if a lease moves meanwhile.
		c.setDBErr(fmt.Errorf("leases: %w", err))
		for t, e := range c.held {
			if _, ok := desired[t]; ok {
				wanted[t] = e
			}
		}
		return
	}
	for _, name := range sortedKeys(desired) {
		epoch, held := c.held[name]
		owner := lease.Owner(members, name)
		mine := owner == c.lm.ID()
		if _, busy := c.handoffs[name]; busy {
			c.renew(ctx, name, epoch)
			continue
		}
		switch {
		case mine && held:
			delete(c.handing, name)
			if c.renew(ctx, name, epoch) {
				wanted[name] = epoch
			}
		case mine:
			l, ok, err := func() (lease.Lease, bool, error) {
				dctx, cancel := c.dbCtx(ctx)
				defer cancel()
				return c.lm.Acquire(dctx, name)
			}()
			if err != nil {
				c.log.Warn("lease not acquired", "target", name, "err", err)
				continue
			}
			if !ok {
				// Held by another until it lets go (or its lease
				// expires): stream on standby meanwhile, and say when
				// ready.
				c.keepStandby(ctx, desired[name])
				continue
			}
			e := l.Epoch
			c.held[name] = e
			wanted[name] = e
			switch promoted, hadStandby := c.promote(desired[name], e); {
			case promoted:
				c.log.Info("lease taken, promoting the standby stream", "target", name, "epoch", e)
			case !hadStandby && l.From != "":
				// Taken from another collector with no standby stream to
				// promote (it died or released the lease before this one
				// streamed): what the switch published between the
				// previous owner's last stored value and this loop's sync
				// is lost.
				c.m.Handovers.WithLabelValues("taken", metrics.HandoverTakeover).Inc()
				c.log.Warn("handover: lease taken over with no standby stream; values the switch published since the previous owner's last stored one are lost",
					"target", name, "epoch", e, "from", l.From)
			default:
				c.log.Info("lease taken", "target", name, "epoch", e)
			}
		case held:
			c.stopStandby(name)
			succ, isReady := c.successorReady(name, owner)
			switch since, ok := c.handing[name]; {
			case isReady:
				c.startHandOver(name, metrics.HandoverMakeBeforeBreak, succ)
				c.renew(ctx, name, epoch)
			case ok && time.Since(since) > c.cfg.Leases.TTL:
				c.log.Warn("the new owner did not stream within leases.ttl: handing over anyway", "target", name, "to", owner)
				c.startHandOver(name, metrics.HandoverBreakBeforeMake, ready{})
			default:
				// Keep collecting until the new owner streams.
				if !ok {
					c.handing[name] = time.Now()
				}
				if c.renew(ctx, name, epoch) {
					wanted[name] = epoch
				}
			}
		default:
			c.stopStandby(name)
		}
	}
	for name := range c.held {
		if _, ok := desired[name]; !ok {
			c.startHandOver(name, "", ready{})
		}
	}
	for _, name := range c.standbyNames() {
		if _, ok := desired[name]; !ok {
			c.stopStandby(name)
		}
	}
	c.m.Leases.Set(float64(len(c.held)))
}

// dbCtx bounds one database call of the lease work (leases.renew).
func (c *Collector) dbCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.Leases.Renew)
}

// renew renews a lease we hold; false when it was lost (its loop then
// stops: another collector owns the target). When the database does not
// answer, the lease is not renewed (logged, counted as an error) but kept:
// were it to expire meanwhile and move, the writer's fencing refuses this
// collector's batches, and a database blip does not stop every target.
// A target being handed over keeps its lease until its handover releases
// it (and is not renewed from then on): a renewal that finds nothing is
// not a loss, and the handover's end forgets the lease (handoffsDone).
// Reconcile (or drain) loop only.
func (c *Collector) renew(ctx context.Context, name string, epoch int64) bool {
	h := c.handoffs[name]
	if h != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.releasing {
			return false
		}
	}
	dctx, cancel := c.dbCtx(ctx)
	defer cancel()
	res, err := c.lm.Renew(dctx, name, epoch)
	switch {
	case err != nil:
		c.m.LeaseRenewals.WithLabelValues("error").Inc()
		c.log.Warn("lease not renewed: the database did not answer", "target", name, "epoch", epoch, "err", err)
		return true
	case res == lease.Reacquired:
		// It had expired (the database was away for longer than
		// leases.ttl) and nobody took it: ours again, same epoch.
		c.m.LeaseRenewals.WithLabelValues("reacquired").Inc()
		c.log.Info("lease had expired and was taken again", "target", name, "epoch", epoch)
		return true
	case res == lease.Lost && h != nil:
		// Gone before the handover released it (a renewal and a release
		// never overlap: the lock above): expired and taken meanwhile. The
		// handover's end forgets it.
		c.m.LeaseRenewals.WithLabelValues("lost").Inc()
		c.log.Warn("lease lost while handing the target over", "target", name, "epoch", epoch)
		return false
	case res == lease.Lost:
		c.m.LeaseRenewals.WithLabelValues("lost").Inc()
		c.log.Warn("lease lost", "target", name, "epoch", epoch)
		delete(c.held, name)
		delete(c.handing, name)
		return false
	}
	c.m.LeaseRenewals.WithLabelValues("renewed").Inc()
	return true
}

// successorReady: owner, the collector rendezvous hashing now names for
// the target, streams it on standby (announced within two renewals and
// not withdrawn), in the stream and from the sync point it returns.
func (c *Collector) successorReady(name, owner string) (ready, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.ready[name]
	if !ok || r.by != owner || time.Since(r.at) > 2*c.cfg.Leases.Renew {
		return ready{}, false
	}
	return r, true
}

// stillReady: the announcement r is the newest of its collector's and
// not withdrawn (its standby stream has not dropped meanwhile).
func (c *Collector) stillReady(name string, r ready) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.ready[name]
	// (A standby loop started again counts its sessions from 1 again: the
	// sync point tells its streams from the previous loop's.)
	return ok && cur.by == r.by && cur.session == r.session && cur.syncPoint == r.syncPoint
}
