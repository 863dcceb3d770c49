package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/northbound"
	ctarget "github.com/lhcnp/lhcnp/collector/stream"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
)

// collectorNorthbound is the collector's gNMI endpoint (northbound.listen):
// built before the collector (its observer feeds the stores), started once
// the collector exists (History reads its pool, Set reaches its targets).
type collectorNorthbound struct {
	nb *northbound.Server
}

// observer returns the collector option that feeds the northbound, or none
// when northbound.listen is empty.
func (n *collectorNorthbound) observer(nc config.Northbound) []collector.Option {
	if nc.Listen == "" {
		return nil
	}
	return []collector.Option{collector.WithObserver(func(t string, r *gnmi.SubscribeResponse) { n.nb.Observe(t, r) }), collector.WithTargetGone(func(t string) { n.nb.RemoveTarget(t) })}
}

// start serves the northbound on northbound.listen; stop closes it.
func (n *collectorNorthbound) start(ctx context.Context, cfg config.File, ga gnmiAuth, c *collector.Collector, log *slog.Logger, stdout, stderr io.Writer) (stop func(), err error) {
	nc := cfg.Northbound
	if nc.Listen == "" {
		return func() {}, nil
	}
	listen := func() (net.Listener, error) {
		lis, err := net.Listen("tcp", nc.Listen)
		if err != nil {
			return nil, fmt.Errorf("northbound.listen: %w", err)
		}
		return lis, nil
	}
	if nc.Users != "" {
		if nc.Insecure {
			warnClearPasswords(ctx, lookupHost, stderr, "lhcnp collector: warning: northbound.users over northbound.insecure", "northbound.tls_cert, northbound.tls_key", nc.Listen)
		}
	} else if nc.Insecure {
		noticeAnonymousWrites(ctx, lookupHost, stderr, "lhcnp collector: warning: no northbound.users over northbound.insecure",
			"lhcnp collector: no northbound.users: every northbound client is the anonymous read-write user",
			"can read every target and Set it with the collector's own credentials",
			"northbound.users (lhcnp passwd), TLS (northbound.tls_cert, northbound.tls_key) or a loopback address", nc.Listen)
	} else {
		fmt.Fprintln(stderr, "lhcnp collector: no northbound.users: every northbound client with a certificate of northbound.client_ca is the anonymous read-write user")
	}
	stop, addr, err := n.serve(ctx, nc, ga, c, listen, log)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "lhcnp collector: northbound gNMI on %s\n", addr)
	return stop, nil
}

// serve serves the northbound nc, with the users and TLS of ga (loaded
// from nc's files, loadGNMIAuth), on the listener of listen, called once
// the server is built; stop closes both. It prints nothing: its caller
// says what users and TLS mean for who may reach it (start; the lab's
// labNorthboundNotice).
func (n *collectorNorthbound) serve(ctx context.Context, nc config.Northbound, ga gnmiAuth, c *collector.Collector, listen func() (net.Listener, error), log *slog.Logger) (stop func(), addr net.Addr, err error) {
	sch, err := schema.New()
	if err != nil {
		return nil, nil, err
	}
	conns := &northbound.Conns{}
	dial := func(ctx context.Context, name string) (*grpc.ClientConn, context.Context, bool, error) {
		t, ok := c.Target(name)
		if !ok {
			return nil, nil, false, nil
		}
		cc, err := conns.Get(t.Name+"\x00"+t.Address, func() (*grpc.ClientConn, error) { return ctarget.Dial(t) })
		if t.Username != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, auth.MetadataUsername, t.Username, auth.MetadataPassword, t.Password)
		}
		return cc, ctx, true, err
	}
	// Its metrics are served on the collector's /metrics.
	m := northbound.NewMetrics(c.Metrics().Registry)
	n.nb = northbound.New(sch, northbound.WithHistory(c.Pool()), northbound.WithDialer(dial),
		northbound.WithLogger(log.With("component", "northbound")), northbound.WithMetrics(m))
	u := ga.users
	opts := append(gnmiServerOptions(auth.New(u), u != nil, gnmiLimits{nc.MaxStreams, nc.MaxStreamsPerUser, nc.MaxStreamsPerConnection}),
		service.WithCapabilities(n.nb), service.WithGet(n.nb), service.WithSet(n.nb), service.WithSubscribe(n.nb),
		service.WithOuterInterceptors([]grpc.UnaryServerInterceptor{m.UnaryInterceptor()}, []grpc.StreamServerInterceptor{m.StreamInterceptor()}))
	if nc.Insecure {
		opts = append(opts, service.WithInsecure())
	} else {
		opts = append(opts, service.WithTLS(ga.tls))
	}
	srv, err := service.New(opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("northbound: %w", err)
	}
	lis, err := listen()
	if err != nil {
		return nil, nil, err
	}
	go srv.Serve(lis) //nolint:errcheck // ends with Stop, which closes lis
	return func() {
		srv.Stop()
		conns.Close() //nolint:errcheck // closing
	}, lis.Addr(), nil
}

// labNorthbound serves the lab's collector northbound (lab.NorthboundServer)
// as lhcnp collector serves its own. The lab's is insecure and without
// users, always: the banner says so ("insecure"), and runLab warns before
// the start when its address is not loopback (labNorthboundNotice).
type labNorthbound struct {
	nb  collectorNorthbound
	log *slog.Logger
}

func (l *labNorthbound) Options(nc config.Northbound) []collector.Option { return l.nb.observer(nc) }

func (l *labNorthbound) Serve(ctx context.Context, nc config.Northbound, c *collector.Collector, lis net.Listener) (func(), error) {
	ga, err := loadGNMIAuth("northbound.", nc.Users, nc.Insecure, nc.TLSCert, nc.TLSKey, nc.ClientCA)
	if err != nil {
		return nil, err
	}
	stop, _, err := l.nb.serve(ctx, nc, ga, c, func() (net.Listener, error) { return lis, nil }, l.log)
	return stop, err
}

// labNorthboundNotice warns on stderr, as lhcnp collector does of its own
// (start), when the lab's northbound (--northbound addr, insecure and
// without users) listens on more than loopback: anyone who reaches it can
// read every switch and Set it. On loopback the banner's "insecure" says
// enough; without a northbound there is nothing to say.
func labNorthboundNotice(ctx context.Context, lookup lookupFunc, stderr io.Writer, addr string) {
	if addr == "" {
		return
	}
	if open := notLoopback(ctx, lookup, []string{addr}); len(open) > 0 {
		fmt.Fprintf(stderr, "lhcnp lab: warning: the collector northbound has no users and no TLS: anyone who reaches gNMI on %s can read every switch and Set it as the anonymous read-write user; give --northbound a loopback address\n", addr)
	}
}
