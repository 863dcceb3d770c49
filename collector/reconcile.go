package collector

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/stream"
)

// Wake asks for a reconcile now (a targets-table notification).
func (c *Collector) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Collector) reconcileLoop(ctx context.Context) {
	every := c.cfg.DB.TargetsReread
	if c.lm != nil {
		every = c.cfg.Leases.Renew
	}
	if !c.cfg.DB.TargetsTable && c.lm == nil {
		every = time.Hour // nothing changes on its own
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var lastRead time.Time
	reread := true
	for {
		if c.cfg.DB.TargetsTable && (reread || time.Since(lastRead) >= c.cfg.DB.TargetsReread) {
			c.readTable(ctx)
			lastRead, reread = time.Now(), false
		}
		c.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-c.wake:
			reread = true
		case <-c.handoverWake:
		}
	}
}

const targetsSQL = `SELECT name, address, coalesce(insecure, false), coalesce(skip_verify, false),
  coalesce(ca_file, ''), coalesce(cert_file, ''), coalesce(key_file, ''), coalesce(username, ''),
  coalesce(password, ''), coalesce(subscriptions::text, ''), coalesce(enabled, true)
FROM targets ORDER BY name`

// tableRow is a row of the targets table as read, before it is checked.
type tableRow struct {
	t       config.Target // Subscriptions and Enabled not set
	subs    string
	enabled bool
}

// target is the row's target, or the row's first fault, naming the target
// and the column.
func (r tableRow) target() (config.Target, error) {
	t := r.t
	t.Enabled = &r.enabled
	var err error
	if t.Subscriptions, err = config.ParseSubscriptions([]byte(r.subs)); err != nil {
		return t, fmt.Errorf("targets[%s].%w", t.Name, err)
	}
	return t, t.Check()
}

// readTable reads the targets table. A disabled row is not collected,
// whatever it holds. An enabled row that does not check is refused: a
// target the table defined well before (an edit broke its row) keeps that
// definition, so that a typo does not stop the collection of a switch that
// worked; a target it never defined well is not collected. A refused row is
// logged (the target, the column and why) once per distinct value, and
// again when it is fixed; targets_refused counts them. The others are kept.
func (c *Collector) readTable(ctx context.Context) {
	if c.o.tableRead != nil {
		defer c.o.tableRead()
	}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rs, err := c.pool.Query(qctx, targetsSQL)
	if err != nil {
		c.setDBErr(fmt.Errorf("targets table: %w", err))
		return
	}
	c.mu.Lock()
	prev := c.table
	c.mu.Unlock()
	table := map[string]config.Target{}
	refused := map[string]tableRow{}
	accepted := map[string]bool{}
	var r tableRow
	_, err = pgx.ForEachRow(rs, []any{&r.t.Name, &r.t.Address, &r.t.Insecure, &r.t.SkipVerify, &r.t.CAFile,
		&r.t.CertFile, &r.t.KeyFile, &r.t.Username, &r.t.Password, &r.subs, &r.enabled}, func() error {
		if !r.enabled {
			return nil
		}
		name := r.t.Name
		t, err := r.target()
		if err == nil {
			if _, was := c.refused[name]; was {
				c.log.Info("targets table: row accepted", "target", name)
			}
			accepted[name] = true
			table[name] = t
			return nil
		}
		refused[name] = r
		old, kept := prev[name]
		if kept {
			table[name] = old
		}
		if last, seen := c.refused[name]; seen && reflect.DeepEqual(last, r) {
			return nil // logged when read so
		}
		if kept {
			c.log.Error("targets table: row refused, keeping the previous definition", "target", name,
				"err", err, "kept_address", old.Address)
		} else {
			c.log.Error("targets table: row refused, not collected", "target", name, "err", err)
		}
		return nil
	})
	if err != nil {
		// The rows read before the failure were logged as read: keep
		// that, so that the next read does not log them again. The
		// rows not reached keep what the last read logged of them.
		for name := range accepted {
			delete(c.refused, name)
		}
		if c.refused == nil {
			c.refused = map[string]tableRow{}
		}
		for name, r := range refused {
			c.refused[name] = r
		}
		c.setDBErr(fmt.Errorf("targets table: %w", err))
		return
	}
	c.setDBErr(nil)
	c.refused = refused
	c.m.TargetsRefused.Set(float64(len(refused)))
	c.mu.Lock()
	c.table = table
	c.mu.Unlock()
}

func (c *Collector) setDBErr(err error) {
	c.mu.Lock()
	c.dbErr = err
	c.mu.Unlock()
	if err != nil {
		c.log.Warn("database", "err", err)
	}
}

// desiredTargets is the file's targets and the table's enabled ones (the
// file wins on a name in both).
func (c *Collector) desiredTargets() map[string]config.Target {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]config.Target, len(c.cfg.Targets)+len(c.table))
	for name, t := range c.table {
		out[name] = t
	}
	for _, t := range c.cfg.Targets {
		if t.IsEnabled() {
			out[t.Name] = t
		} else {
			delete(out, t.Name)
		}
	}
	return out
}

// reconcile starts and stops loops so that exactly the wanted targets run,
// each with its current configuration and lease epoch.
func (c *Collector) reconcile(ctx context.Context) {
	desired := c.desiredTargets()
	wanted := map[string]int64{} // target → epoch
	if c.lm == nil {
		for name := range desired {
			wanted[name] = 0
		}
	} else {
		c.reconcileLeases(ctx, desired, wanted)
	}
	c.mu.Lock()
	var stop []*running
	for name, r := range c.running {
		if _, busy := c.handoffs[name]; busy {
			continue // its handover stops it
		}
		epoch, ok := wanted[name]
		if !ok || epoch != r.epoch || !reflect.DeepEqual(desired[name], r.t) {
			stop = append(stop, r)
			delete(c.running, name)
		}
	}
	c.mu.Unlock()
	for _, r := range stop {
		r.stop()
		if _, ok := wanted[r.t.Name]; !ok {
			c.m.SetState(r.t.Name, "")
			c.log.Info("target stopped", "target", r.t.Name)
			c.targetGone(r.t.Name)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range sortedKeys(wanted) {
		if _, busy := c.handoffs[name]; busy {
			continue
		}
		if _, ok := c.running[name]; !ok {
			c.startLocked(ctx, desired[name], wanted[name], false)
		}
	}
}

func (c *Collector) targetGone(name string) {
	if c.o.gone != nil {
		c.o.gone(name)
	}
}

// startLocked starts the loop of t at epoch (under mu) and records it in
// running, or, on standby, returns it for the caller to record. A standby
// loop converts with a converter of its own, adopted as the target's only
// when it is promoted: a standby stopped without promotion leaves nothing
// behind (its newest timestamps would make the next loop drop the new
// stream's initial values as duplicates).
func (c *Collector) startLocked(ctx context.Context, t config.Target, epoch int64, standby bool) *running {
	conv := c.convs[t.Name]
	if conv == nil || standby {
		var opts []rows.Option
		if c.o.db.Describe != nil {
			opts = append(opts, rows.WithDescriber(c.o.db.Describe))
		}
		conv = rows.NewConverter(t.Name, c.sch, opts...)
		if !standby {
			c.convs[t.Name] = conv
		}
	}
	// A loop ends when stopped (cancel), not with ctx: a draining
	// collector streams on until its targets' new owners stream.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &running{t: t, epoch: epoch, conv: conv, ctx: lctx, cancel: cancel, seeded: make(chan struct{}),
		done: make(chan struct{})}
	opts := []stream.Option{stream.WithCollector(c.cfg.ID, epoch),
		stream.WithBatch(c.cfg.Writer.BatchRows, c.cfg.Writer.BatchInterval),
		stream.WithMetrics(c.m), stream.WithLogger(c.log),
		stream.WithBackoff(c.o.backoff[0], c.o.backoff[1]), stream.WithObserver(c.o.observe),
		stream.WithDialOptions(c.o.dialOpts...)}
	if standby {
		// The owner stores what this loop holds until it is promoted;
		// its sync wakes the reconcile loop to announce it.
		opts = append(opts, stream.WithStandby(c.standbyBudget), stream.WithOnSync(c.wakeHandover))
	} else {
		c.running[t.Name] = r
	}
	r.loop = stream.New(t, conv, c.w.Enqueue, opts...)
	c.m.SetState(t.Name, "connecting")
	c.log.Info("target started", "target", t.Name, "address", t.Address, "epoch", epoch, "standby", standby)
	if t.SkipVerify && !t.Insecure && !reflect.DeepEqual(c.skipVerifyWarned[t.Name], t) {
		// The user's choice for labs, said once per definition of the
		// target (a flapping target or a lease coming and going would
		// repeat it at each start): whoever answers at the address is
		// taken for the switch.
		if c.skipVerifyWarned == nil {
			c.skipVerifyWarned = map[string]config.Target{}
		}
		c.skipVerifyWarned[t.Name] = t
		c.log.Warn("target's certificate not verified (skip_verify): whoever answers at its address is sent its "+
			"username and password and stored as its telemetry", "target", t.Name, "address", t.Address)
	}
	go func() {
		defer close(r.done)
		if err := c.seed(lctx, t.Name, conv); err != nil {
			return
		}
		close(r.seeded)
		r.loop.Run(lctx)
	}()
	return r
}
