package northbound

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// MetricsPrefix is the name prefix of the northbound's metrics: the
// collector's own (lhcnp_collector_), as they are served on its /metrics.
const MetricsPrefix = "lhcnp_collector_northbound_"

// Set outcomes (label outcome of the forwarded Sets).
const (
	SetApplied       = "applied"        // the switch answered OK
	SetRefused       = "refused"        // the switch answered an error (returned as is)
	SetUnreachable   = "unreachable"    // the switch could not be reached (UNAVAILABLE)
	SetUnknownTarget = "unknown_target" // no switch of this collector by that name (NOT_FOUND)
	SetNoTarget      = "no_target"      // the prefix names no single switch (INVALID_ARGUMENT)
	SetUnimplemented = "unimplemented"  // this northbound forwards no Set (no dialer; logged, not counted)
)

// Metrics are the northbound's own: RPCs by method and code, Subscribe
// streams being served, updates sent to them, Sets forwarded by outcome.
// Install the interceptors on the northbound's gRPC server (before
// authentication, so refused calls count too) and give the Server
// WithMetrics for the Set outcomes.
type Metrics struct {
	rpcs   *prometheus.CounterVec
	active prometheus.Gauge
	sets   *prometheus.CounterVec
	// Updates sent: History's counted as sent, live ones read from the
	// switches' subscribe servers (which send pre-encoded messages) at
	// scrape time.
	history atomic.Uint64
	srv     atomic.Pointer[Server]
}

// NewMetrics creates the metrics and registers them with r (the
// collector's registry).
func NewMetrics(r prometheus.Registerer) *Metrics {
	m := &Metrics{
		rpcs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricsPrefix + "rpcs_total",
			Help: "Northbound gNMI RPCs finished, by method (Capabilities, Get, Set, Subscribe) and gRPC status code."},
			[]string{"method", "code"}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricsPrefix + "subscriptions",
			Help: "Northbound Subscribe streams being served (live and History)."}),
		sets: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricsPrefix + "sets_total",
			Help: "Northbound Sets by outcome: applied or refused by the switch they were forwarded to, unreachable (the switch), unknown_target, no_target."},
			[]string{"target", "outcome"}),
	}
	updates := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: MetricsPrefix + "updates_sent_total",
		Help: "Updates and deletes sent to northbound subscribers (live and History)."}, func() float64 {
		n := m.history.Load()
		if s := m.srv.Load(); s != nil {
			n += s.liveUpdates()
		}
		return float64(n)
	})
	r.MustRegister(m.rpcs, m.active, m.sets, updates)
	return m
}

// rpcMethod is the RPC's name without its service ("/gnmi.gNMI/Get" → "Get").
func rpcMethod(full string) string { return full[strings.LastIndexByte(full, '/')+1:] }

// UnaryInterceptor counts unary RPCs by method and code.
func (m *Metrics) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		m.rpcs.WithLabelValues(rpcMethod(info.FullMethod), status.Code(err).String()).Inc()
		return resp, err
	}
}

// StreamInterceptor counts Subscribe streams while they are served, and
// the RPC by its code when it ends.
func (m *Metrics) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		m.active.Inc()
		err := handler(srv, ss)
		m.active.Dec()
		m.rpcs.WithLabelValues(rpcMethod(info.FullMethod), status.Code(err).String()).Inc()
		return err
	}
}

// historySent counts updates a History stream sent (m may be nil).
func (m *Metrics) historySent(n int) {
	if m != nil {
		m.history.Add(uint64(n))
	}
}

// liveUpdates is what the switches' subscribe servers have sent: those of
// the targets held, and of the targets removed (kept while a stream still
// serves them, then folded into a total), so the sum never goes back.
func (s *Server) liveUpdates() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.goneUpdates
	for _, v := range s.targets {
		n += v.sub.Stats().Updates
	}
	kept := s.retired[:0]
	for _, v := range s.retired {
		st := v.sub.Stats()
		if st.ActiveStreams == 0 {
			s.goneUpdates += st.Updates
		} else {
			kept = append(kept, v)
		}
		n += st.Updates
	}
	clear(s.retired[len(kept):])
	s.retired = kept
	return n
}

// set counts a Set's outcome (m may be nil: no metrics).
func (m *Metrics) set(target, outcome string) {
	if m != nil {
		m.sets.WithLabelValues(target, outcome).Inc()
	}
}
