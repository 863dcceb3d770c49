package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/lhcnp/lhcnp/server/metrics"
	"github.com/lhcnp/lhcnp/server/subscribe"
	"github.com/lhcnp/lhcnp/server/target"
	"google.golang.org/grpc"
)

// switchMetrics is the Prometheus endpoint of `lhcnp switch --metrics ADDR`
// (docs/gnmi-target.md, "Metrics"). A nil *switchMetrics (no --metrics) does
// nothing.
type switchMetrics struct {
	m   *metrics.Metrics
	lis net.Listener
}

// newSwitchMetrics listens on addr ("" = off) and exports the target's RPCs,
// its Subscribe streams, its pending commit and the engine's lag.
func newSwitchMetrics(addr string, h *target.Handler, sub *subscribe.Server, lag func() time.Duration, stdout io.Writer) (*switchMetrics, error) {
	if addr == "" {
		return nil, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	m := metrics.New()
	m.WatchSubscriptions(sub)
	m.SetEngineLagFunc(lag)
	m.SetCommitPendingFunc(func() bool { _, _, ok := h.PendingCommit(); return ok })
	fmt.Fprintf(stdout, "lhcnp switch: metrics on http://%s/metrics\n", lis.Addr())
	return &switchMetrics{m: m, lis: lis}, nil
}

// options are the target options that count RPCs (before authentication,
// so refused calls count too).
func (sm *switchMetrics) options() []target.Option {
	if sm == nil {
		return nil
	}
	return []target.Option{target.WithOuterInterceptors(
		[]grpc.UnaryServerInterceptor{sm.m.UnaryInterceptor()},
		[]grpc.StreamServerInterceptor{sm.m.StreamInterceptor()})}
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
