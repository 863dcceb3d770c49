package collector

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/writer"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// seedConverter records in conv what the latest table holds of a series:
// its timestamp and counter value (updates at or before it are not stored
// again), its path (a later delete of a subtree above it deletes it too),
// and, for a leaf of a queue's last-cnp, its value, so the queue's
// last CNP is known: sent again by the switch it makes no second event,
// and the next CNP gets from it the leaves its notification leaves out.
func seedConverter(conv *rows.Converter, s writer.Stored) {
	conv.Seed(s.ID, s.TS, s.V, s.IsCounter)
	conv.SeedValue(s.Path, s.Value)
}

// Phases of a read of the latest table (label phase of LatestReadErrors).
const (
	latestSeed    = collectormetrics.LatestReadSeed    // a loop starts: what is stored is not stored again
	latestPromote = collectormetrics.LatestReadPromote // a standby loop is promoted
)

// latestReadTimeout bounds one read of the latest table.
const latestReadTimeout = 10 * time.Second

// latestOf reads what the latest table holds of a target (readLatest),
// retrying with back-off (100 ms up to writer.retry_max, each attempt
// with a timeout of its own) until it succeeds or ctx ends. phase labels
// the failures in the logs and latest_read_errors_total.
func (c *Collector) latestOf(ctx context.Context, name, phase string) ([]writer.Stored, error) {
	bo := writer.NewBackOff(100*time.Millisecond, c.cfg.Writer.RetryMax)
	return backoff.Retry(ctx, func() ([]writer.Stored, error) {
		if f := c.o.readLatestFault; f != nil {
			if err := f(name, phase); err != nil {
				return nil, err
			}
		}
		rctx, cancel := context.WithTimeout(ctx, latestReadTimeout)
		defer cancel()
		return c.readLatest(rctx, name)
	}, backoff.WithBackOff(bo), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, d time.Duration) {
		c.m.LatestReadErrors.WithLabelValues(phase).Inc()
		c.log.Warn("latest table not read, retrying", "target", name, "phase", phase, "in", d, "err", err)
	}))
}

// seed loads what the database and the spill hold for a target into its
// converter, so values the switch sends again are not stored twice. It
// retries until the database answers or ctx ends.
func (c *Collector) seed(ctx context.Context, name string, conv *rows.Converter) error {
	latest, err := c.latestOf(ctx, name, latestSeed)
	if err != nil {
		return err
	}
	for _, s := range latest {
		seedConverter(conv, s)
	}
	c.mu.Lock()
	for _, s := range c.seeds[name] {
		conv.SeedSpilled(s.path, s.last)
	}
	delete(c.seeds, name)
	c.mu.Unlock()
	return nil
}

// readLatest reads what the latest table holds of each series of a target.
func (c *Collector) readLatest(ctx context.Context, name string) ([]writer.Stored, error) {
	return writer.ReadLatest(ctx, c.pool, name, func(path string) bool {
		p, err := store.ParsePath(path)
		if err != nil {
			return false
		}
		l, ok := c.sch.LeafAt(p)
		return ok && l.Kind == store.Counter
	})
}

// seedFromSpill records, per target and series, the last sample of the
// batches left in the spill and the series' path: they are not in latest
// yet, the switch will send those values again on resubscription, and a
// series it no longer has is deleted at the sync_response (the sweep needs
// its path).
func (c *Collector) seedFromSpill(payload []byte) {
	b, err := rows.DecodeBatch(payload)
	if err != nil {
		return
	}
	m := c.seeds[b.Target]
	if m == nil {
		m = map[int64]seed{}
		c.seeds[b.Target] = m
	}
	for _, s := range b.Samples {
		if cur, ok := m[s.SeriesID]; !ok || s.TS > cur.last.TS {
			cur.last = s
			m[s.SeriesID] = cur
		}
	}
	for _, sr := range b.Series {
		if cur, ok := m[sr.ID]; ok {
			cur.path = sr.Path
			m[sr.ID] = cur
		}
	}
}
