package collector

import (
	"context"
	"reflect"
	"time"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/placement"
	"github.com/lhcnp/lhcnp/collector/rows"
)

// keepStandby runs a standby loop for a target whose lease another
// collector holds, and once its stream has synced announces that this
// collector is ready to take the target over.
func (c *Collector) keepStandby(ctx context.Context, t config.Target) {
	c.mu.Lock()
	r := c.standby[t.Name]
	c.mu.Unlock()
	if r != nil && !reflect.DeepEqual(r.t, t) {
		c.stopStandby(t.Name)
		r = nil
	}
	if r == nil {
		c.mu.Lock()
		c.standby[t.Name] = c.startLocked(ctx, t, 0, true)
		c.mu.Unlock()
		return
	}
	got, ok := r.loop.Synced()
	s := placement.Stream(got)
	c.mu.Lock()
	say := c.pl.Announce(s, ok, r.announced, r.announcedAt, time.Now())
	c.mu.Unlock()
	switch say {
	case placement.AnnounceWithdraw:
		c.withdrawReady(ctx, t.Name, r)
		return
	case placement.AnnounceNothing:
		return
	}
	dctx, cancel := c.dbCtx(ctx)
	defer cancel()
	if err := c.lm.Ready(dctx, t.Name, s.Session, s.Point); err != nil {
		c.log.Warn("handover: ready not announced", "target", t.Name, "err", err)
		return
	}
	r.announced, r.announcedAt = s, time.Now()
	c.m.ReadyAnnounced.Inc()
}

func (c *Collector) standbyNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedKeys(c.standby)
}

// stopStandby stops a target's standby loop, if any; what it held is
// dropped (the owner stores it), its Ready, if announced, is withdrawn, and
// the northbound forgets the target.
func (c *Collector) stopStandby(name string) {
	c.mu.Lock()
	r := c.standby[name]
	delete(c.standby, name)
	c.mu.Unlock()
	if r == nil {
		return
	}
	r.stop()
	c.withdrawReady(context.Background(), name, r)
	c.m.SetState(name, "")
	c.targetGone(name)
}

// withdrawReady withdraws the Ready the standby loop r announced, if any
// (reconcile loop only); when the database does not answer, the next pass
// tries again.
func (c *Collector) withdrawReady(ctx context.Context, name string, r *running) {
	if r.announced == (placement.Stream{}) {
		return
	}
	dctx, cancel := c.dbCtx(ctx)
	defer cancel()
	if err := c.lm.NotReady(dctx, name, r.announced.Session); err != nil {
		c.log.Warn("handover: ready not withdrawn", "target", name, "err", err)
		return
	}
	r.announced = placement.Stream{}
}

// standbyOf says whether the target's standby loop, if any, can be
// promoted: it still runs, with the configuration t.
func (c *Collector) standbyOf(t config.Target) placement.Standby {
	c.mu.Lock()
	r := c.standby[t.Name]
	c.mu.Unlock()
	if r == nil {
		return placement.NoStandby
	}
	select {
	case <-r.done:
		return placement.StandbyUnusable
	default:
	}
	if !reflect.DeepEqual(r.t, t) {
		return placement.StandbyUnusable
	}
	return placement.StandbyStreaming
}

// promote turns the target's standby loop (standbyOf: streaming) into its
// running loop at epoch (reconcile loop only), and finishes the promotion
// in a goroutine of its own (finishPromotion): the loop holds its batches
// until then.
func (c *Collector) promote(name string, epoch int64) {
	c.mu.Lock()
	r := c.standby[name]
	r.epoch, r.promoted = epoch, make(chan struct{})
	delete(c.standby, name)
	c.running[name] = r
	c.mu.Unlock()
	go c.finishPromotion(r, epoch)
}

// finishPromotion reads what the previous owner stored (the latest table,
// read now that the lease is ours and the old owner's transactions are
// over), retrying for as long as the loop runs (the lease is ours), and
// promotes the loop: what the previous owner stored is skipped, the rest
// sent at epoch. It then counts the takeover: make-before-break when the
// loop's stream (the one up now, or the next to sync) synced at or before
// the newest value the previous owner stored, and no held batch newer than
// that was let go of — every value is then in what the previous owner
// stored or in this stream; else break-before-make (the values superseded
// in between are in neither). A promotion cut short (the loop stopped:
// lease lost, target gone, drain) drops the held batches and counts as
// break-before-make.
func (c *Collector) finishPromotion(r *running, epoch int64) {
	defer close(r.promoted)
	name := r.t.Name
	kind := collectormetrics.HandoverBreakBeforeMake
	defer func() { c.m.Handovers.WithLabelValues(collectormetrics.HandoverTaken, kind).Inc() }()
	select {
	case <-r.seeded: // the standby's own seeding is over: the converter is ours
	case <-r.ctx.Done():
		return
	}
	latest, err := c.latestOf(r.ctx, name, latestPromote)
	if err != nil {
		c.log.Warn("handover: standby stopped before it was promoted; its rows are dropped", "target", name, "err", err)
		return
	}
	floor := make(map[int64]int64, len(latest))
	var stored int64 // the newest value the previous owner stored
	for _, s := range latest {
		floor[s.ID] = s.TS
		stored = max(stored, s.TS)
	}
	samples, events := r.loop.Promote(epoch, floor, func(conv *rows.Converter) {
		for _, s := range latest {
			seedConverter(conv, s)
		}
	})
	c.mu.Lock()
	if c.running[name] == r {
		c.convs[name] = r.conv // the promoted stream's state is the target's now
	}
	c.mu.Unlock()
	c.log.Info("handover: standby promoted, rows the previous owner stored skipped", "target", name, "epoch", epoch,
		"samples", samples, "events", events)
	s, err := r.loop.WaitSynced(r.ctx)
	discarded := r.loop.DiscardedUpTo()
	p := placement.Promoted(err == nil, placement.Stream(s), stored, discarded)
	switch kind = string(p.Kind()); p {
	case placement.PromotionCut:
		c.log.Warn("handover: stopped before a stream synced", "target", name)
	case placement.PromotionLateSync:
		c.log.Warn("handover: break-before-make: values superseded between the previous owner's last stored and this stream's sync point are lost",
			"target", name, "stored_up_to", stored, "sync_point", s.Point, "session", s.Session)
	case placement.PromotionDiscarded:
		c.log.Warn("handover: break-before-make: held rows newer than the previous owner's were let go of past writer.queue_rows",
			"target", name, "stored_up_to", stored, "discarded_up_to", discarded)
	}
}
