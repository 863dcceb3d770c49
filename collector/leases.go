package collector

import (
	"context"
	"fmt"
	"time"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/lease"
	"github.com/lhcnp/lhcnp/collector/placement"
)

// locker is what the collector needs of the leases' store
// (collector/lease's Manager, in PostgreSQL): membership, the leases, and
// the handover announcements. What to do with them is the placement's.
type locker interface {
	Heartbeat(ctx context.Context) error
	Members(ctx context.Context) ([]string, error)
	Leave(ctx context.Context) error
	Acquire(ctx context.Context, target string) (l lease.Lease, ok bool, err error)
	Renew(ctx context.Context, target string, epoch int64) (lease.Renewal, error)
	Release(ctx context.Context, target string) (released bool, err error)
	Ready(ctx context.Context, target string, session uint64, syncPoint int64) error
	NotReady(ctx context.Context, target string, session uint64) error
}

// reconcileLeases decides, per target, whether this collector owns it
// (wanted), streams it on standby, or hands it over: collector/placement
// decides, carryOut does. Each database call has a timeout of its own
// (leases.renew); a handover runs in a goroutine of its own, so a slow one
// holds up neither the others nor the renewals.
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
		for t, e := range c.held() {
			if _, ok := desired[t]; ok {
				wanted[t] = e
			}
		}
		return
	}
	for _, name := range sortedKeys(desired) {
		c.mu.Lock()
		s := c.pl.Target(name, members, time.Now())
		c.mu.Unlock()
		c.carryOut(ctx, name, s, desired, wanted)
	}
	c.mu.Lock()
	retired := c.pl.Retire(func(name string) bool {
		_, ok := desired[name]
		return ok
	})
	c.mu.Unlock()
	for _, name := range retired {
		c.startHandOver(name)
	}
	for _, name := range c.standbyNames() {
		if _, ok := desired[name]; !ok {
			c.stopStandby(name)
		}
	}
	c.m.Leases.Set(float64(len(c.held())))
}

// carryOut does what the placement decided about a target in a pass (of
// the reconcile loop, or of the drain: then desired and wanted are nil, as
// a drain takes no lease and collects no new target).
func (c *Collector) carryOut(ctx context.Context, name string, s placement.Step, desired map[string]config.Target, wanted map[string]int64) {
	if s.StopStandby {
		c.stopStandby(name)
	}
	if s.Acquire {
		c.acquire(ctx, desired[name], wanted)
		return
	}
	if s.HandOver {
		if s.Kind == placement.BreakBeforeMake {
			c.log.Warn("the new owner did not stream within leases.ttl: handing over anyway", "target", name, "to", s.Owner)
		}
		c.startHandOver(name)
	}
	if s.Renew && c.renew(ctx, name, s.Epoch) && s.Collect {
		wanted[name] = s.Epoch
	}
}

// acquire tries to take the lease of a target rendezvous hashing gives
// this collector: taken, the target is wanted at the lease's epoch (its
// standby loop, if any, promoted); held by another, it is streamed on
// standby meanwhile.
func (c *Collector) acquire(ctx context.Context, t config.Target, wanted map[string]int64) {
	l, ok, err := func() (lease.Lease, bool, error) {
		dctx, cancel := c.dbCtx(ctx)
		defer cancel()
		return c.lm.Acquire(dctx, t.Name)
	}()
	sb := c.standbyOf(t)
	c.mu.Lock()
	taken := c.pl.Acquired(t.Name, l, ok, err, sb)
	c.mu.Unlock()
	switch taken {
	case placement.NotTaken:
		c.log.Warn("lease not acquired", "target", t.Name, "err", err)
		return
	case placement.HeldByAnother:
		// Held by another until it lets go (or its lease expires): stream
		// on standby meanwhile, and say when ready.
		c.keepStandby(ctx, t)
		return
	}
	e := l.Epoch
	wanted[t.Name] = e
	switch taken {
	case placement.Promote:
		c.promote(t.Name, e)
		c.log.Info("lease taken, promoting the standby stream", "target", t.Name, "epoch", e)
		return
	case placement.StartAfresh:
		c.stopStandby(t.Name)
		c.m.Handovers.WithLabelValues(collectormetrics.HandoverTaken, collectormetrics.HandoverBreakBeforeMake).Inc()
		c.log.Warn("handover: the standby stream could not be promoted; the target starts afresh", "target", t.Name)
	case placement.TakenOver:
		// What the switch published between the previous owner's last
		// stored value and this loop's sync is lost.
		c.m.Handovers.WithLabelValues(collectormetrics.HandoverTaken, collectormetrics.HandoverTakeover).Inc()
		c.log.Warn("handover: lease taken over with no standby stream; values the switch published since the previous owner's last stored one are lost",
			"target", t.Name, "epoch", e, "from", l.From)
		return
	}
	c.log.Info("lease taken", "target", t.Name, "epoch", e)
}

// held returns the leases held: target → epoch.
func (c *Collector) held() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pl.Held()
}

// heldNames returns the targets whose lease is held, in order.
func (c *Collector) heldNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pl.HeldNames()
}

// dbCtx bounds one database call of the lease work (leases.renew).
func (c *Collector) dbCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.Leases.Renew)
}

// renew renews a lease we hold; false when it was lost (its loop then
// stops: another collector owns the target) or is being released by its
// handover. What a result means is placement.Renewal's.
// Reconcile (or drain) loop only.
func (c *Collector) renew(ctx context.Context, name string, epoch int64) bool {
	if h := c.handoffs[name]; h != nil {
		// A renewal and the handover's release never overlap.
		h.mu.Lock()
		defer h.mu.Unlock()
	}
	c.mu.Lock()
	may := c.pl.Renewing(name)
	c.mu.Unlock()
	if !may {
		return false
	}
	dctx, cancel := c.dbCtx(ctx)
	defer cancel()
	res, err := c.lm.Renew(dctx, name, epoch)
	c.mu.Lock()
	r := c.pl.Renewed(name, res, err)
	c.mu.Unlock()
	c.m.LeaseRenewals.WithLabelValues(r.Result()).Inc()
	switch r {
	case placement.RenewFailed:
		c.log.Warn("lease not renewed: the database did not answer", "target", name, "epoch", epoch, "err", err)
	case placement.Reacquired:
		c.log.Info("lease had expired and was taken again", "target", name, "epoch", epoch)
	case placement.LostHandingOver:
		c.log.Warn("lease lost while handing the target over", "target", name, "epoch", epoch)
	case placement.Lost:
		c.log.Warn("lease lost", "target", name, "epoch", epoch)
	}
	return r.Keep()
}
