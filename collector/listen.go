package collector

import (
	"context"
	"time"

	"github.com/lhcnp/lhcnp/collector/lease"
	"github.com/lhcnp/lhcnp/collector/writer"
)

// targetsChannel is the NOTIFY channel of the targets table's trigger.
const targetsChannel = "lhcnp_targets"

// listen LISTENs on channels: a NOTIFY lhcnp_targets wakes the reconcile
// loop to re-read the table (the periodic re-read covers notifications lost
// while it reconnects); a handover message records who is ready to take a
// target and wakes the reconcile (or drain) loop.
func (c *Collector) listen(ctx context.Context, channels []string) {
	bo := writer.NewBackOff(200*time.Millisecond, c.cfg.Writer.RetryMax)
	for ctx.Err() == nil {
		err := func() error {
			conn, err := c.pool.Acquire(ctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			for _, ch := range channels { // our own constant names
				if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
					return err
				}
			}
			defer conn.Exec(context.Background(), "UNLISTEN *")
			c.Wake() // changes made while we were not listening
			bo.Reset()
			for {
				n, err := conn.Conn().WaitForNotification(ctx)
				if err != nil {
					conn.Conn().Close(context.Background()) // do not return a broken LISTEN conn to the pool
					return err
				}
				if n.Channel == lease.HandoverChannel {
					c.handoverMessage(n.Payload)
					continue
				}
				c.log.Debug("targets table changed", "target", n.Payload)
				c.Wake()
			}
		}()
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("LISTEN interrupted", "channels", channels, "err", err)
		t := time.NewTimer(bo.NextBackOff())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
