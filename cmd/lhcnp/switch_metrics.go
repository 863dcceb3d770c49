package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/lhcnp/lhcnp/server/switchmetrics"
)

// switchMetrics is the Prometheus endpoint of `lhcnp switch --metrics ADDR`
// (docs/gnmi-target.md, "Metrics"). A nil *switchMetrics (no --metrics) does
// nothing.
type switchMetrics struct {
	m   *switchmetrics.Metrics
	lis net.Listener
}

// newSwitchMetrics listens on addr ("" = off). fabric.New attaches the
// targets' RPC, Subscribe and commit metrics and the engine's lag to it.
// With several switches each one's metrics carry a switch label.
func newSwitchMetrics(addr string, switches int, stdout io.Writer) (*switchMetrics, error) {
	if addr == "" {
		return nil, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	fmt.Fprintf(stdout, "lhcnp switch: metrics on %s\n", metricsURL(lis.Addr().String()))
	m := switchmetrics.New()
	if switches > 1 {
		m = switchmetrics.NewShared()
	}
	return &switchMetrics{m: m, lis: lis}, nil
}

// metrics is what fabric.Config.Metrics takes (nil without --metrics).
func (sm *switchMetrics) metrics() *switchmetrics.Metrics {
	if sm == nil {
		return nil
	}
	return sm.m
}

// serve serves /metrics until ctx ends.
func (sm *switchMetrics) serve(ctx context.Context) error {
	if sm == nil {
		return nil
	}
	if err := sm.m.Serve(ctx, sm.lis); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// close closes the listener if serve never ran (runSwitch returned early).
func (sm *switchMetrics) close() {
	if sm != nil {
		_ = sm.lis.Close()
	}
}

// metricsURL is how the commands' banners name a /metrics served on addr
// (host:port), plainly, so that one can paste it.
func metricsURL(addr string) string { return "http://" + addr + "/metrics" }
