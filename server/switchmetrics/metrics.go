// Package metrics exports a switch's gNMI target to Prometheus with
// client_golang: RPCs by method and code (gRPC interceptors), the Set
// latency, Subscribe streams with their queue depths, notifications sent,
// commit-confirmed state and the dataplane engine's lag behind the wall
// clock. Everything is registered in the Metrics' own registry (no global
// state) under the prefix "lhcnp_".
//
// It depends on gRPC, internal/metricshttp (the HTTP server every service's
// /metrics has) and the small interfaces it declares; it must not
// depend on the schema, the target's handlers or the dataplane: the caller
// hands it functions to read.
package switchmetrics

import (
	"context"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lhcnp/lhcnp/gnmi/subscribe"
	"github.com/lhcnp/lhcnp/internal/metricshttp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// Namespace is the prefix of every metric.
const Namespace = "lhcnp"

// SetBuckets are the Set latency histogram's upper bounds in seconds: 0.5 ms
// to about 8 s (a Set takes about 2 ms on the test machines).
var SetBuckets = prometheus.ExponentialBuckets(0.0005, 2, 15)

// Subscriptions is what the metrics read from a Subscribe server
// (*subscribe.Server).
type Subscriptions interface {
	Stats() subscribe.Stats
	Streams() []subscribe.StreamInfo
}

// Metrics holds a registry with the target's metrics.
type Metrics struct {
	reg        *prometheus.Registry
	rpcs       *prometheus.CounterVec
	setSeconds prometheus.Histogram

	// shared marks a process's Metrics whose switches have their own
	// (NewShared); perSwitch marks those (ForSwitch), which leave the engine
	// lag to the process's.
	shared, perSwitch bool

	mu      sync.Mutex
	lag     func() time.Duration
	subs    Subscriptions
	pending func() bool
}

// New returns Metrics with the RPC, Set, Subscribe, commit and engine-lag
// metrics and the Go runtime and process collectors registered.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.register(m.reg)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// NewShared returns the Metrics of a process that serves several switches
// (a fabric): the runtime, process and engine-lag metrics, and no target
// metrics of its own; each switch gets its own through ForSwitch.
func NewShared() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), shared: true}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), (*lagCollector)(m))
	return m
}

// Shared reports whether m came from NewShared.
func (m *Metrics) Shared() bool { return m.shared }

// ForSwitch returns the metrics of one switch of a NewShared process: its
// RPC, Set, Subscribe and commit metrics carry the label switch=name and
// are served by m's Handler.
func (m *Metrics) ForSwitch(name string) *Metrics {
	s := &Metrics{reg: m.reg, perSwitch: true}
	s.register(prometheus.WrapRegistererWith(prometheus.Labels{"switch": name}, m.reg))
	return s
}

// register creates the per-target metrics and registers them with r.
func (m *Metrics) register(r prometheus.Registerer) {
	m.rpcs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "gnmi", Name: "rpcs_total",
		Help: "gNMI RPCs finished, by method (Capabilities, Get, Set, Subscribe) and gRPC status code.",
	}, []string{"method", "code"})
	m.setSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "gnmi", Name: "set_duration_seconds",
		Help:    "Time to serve a Set RPC, from receipt to response, whatever its outcome.",
		Buckets: SetBuckets,
	})
	r.MustRegister(m.rpcs, m.setSeconds, (*collector)(m))
}

// Registry returns the registry, to add more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats (mount
// it at /metrics): OpenMetrics when asked (Prometheus asks for it first;
// its "# EOF" makes a scrape cut short an error rather than a partial one),
// else the text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// SetEngineLagFunc sets how the engine's lag behind the wall clock is read
// (lhcnp_engine_lag_seconds); without it the gauge is not exported.
func (m *Metrics) SetEngineLagFunc(f func() time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lag = f
}

// WatchSubscriptions exports the Subscribe server's streams and counters.
func (m *Metrics) WatchSubscriptions(s Subscriptions) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.subs = s
}

// SetCommitPendingFunc sets how to read whether a confirmed commit waits for
// confirmation (lhcnp_gnmi_commit_pending).
func (m *Metrics) SetCommitPendingFunc(f func() bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = f
}

// method is the RPC's name without its service ("/gnmi.gNMI/Get" → "Get").
func method(full string) string {
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[i+1:]
	}
	return full
}

// UnaryInterceptor counts unary RPCs and times Sets. Install it before
// authentication so that refused calls are counted too.
func (m *Metrics) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		name := method(info.FullMethod)
		if name == "Set" {
			m.setSeconds.Observe(time.Since(start).Seconds())
		}
		m.rpcs.WithLabelValues(name, status.Code(err).String()).Inc()
		return resp, err
	}
}

// StreamInterceptor counts streaming RPCs (Subscribe) when they end.
func (m *Metrics) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		err := handler(srv, ss)
		m.rpcs.WithLabelValues(method(info.FullMethod), status.Code(err).String()).Inc()
		return err
	}
}

// collector exports what is read at scrape time.
type collector Metrics

var (
	descSubscribers = prometheus.NewDesc(Namespace+"_gnmi_subscribers",
		"Subscribe streams being served.", nil, nil)
	descQueue = prometheus.NewDesc(Namespace+"_gnmi_subscriber_queue_depth",
		"Values waiting to be sent to one Subscribe stream (its coalescing queue and its place in a shared fan-out).",
		[]string{"stream", "peer", "mode"}, nil)
	descNotifications = prometheus.NewDesc(Namespace+"_gnmi_notifications_sent_total",
		"Subscribe notifications sent.", nil, nil)
	descUpdates = prometheus.NewDesc(Namespace+"_gnmi_updates_sent_total",
		"Updates and deletes sent in Subscribe notifications.", nil, nil)
	descCoalesced = prometheus.NewDesc(Namespace+"_gnmi_updates_coalesced_total",
		"Values replaced in a subscriber's queue by a newer one before being sent.", nil, nil)
	descPending = prometheus.NewDesc(Namespace+"_gnmi_commit_pending",
		"1 while a confirmed commit (gnmi_ext.Commit) waits for its confirmation.", nil, nil)
	descLag = prometheus.NewDesc(Namespace+"_engine_lag_seconds",
		"How far the dataplane's simulated time trails the wall clock it is paced to.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSubscribers, descQueue, descNotifications, descUpdates, descCoalesced, descPending} {
		ch <- d
	}
	if !c.perSwitch {
		ch <- descLag
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	subs, lag, pending := c.subs, c.lag, c.pending
	c.mu.Unlock()
	if subs != nil {
		st := subs.Stats()
		streams := subs.Streams()
		ch <- prometheus.MustNewConstMetric(descSubscribers, prometheus.GaugeValue, float64(len(streams)))
		for _, s := range streams {
			ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(s.Queued),
				strconv.FormatUint(s.ID, 10), s.Peer, strings.ToLower(s.Mode.String()))
		}
		ch <- prometheus.MustNewConstMetric(descNotifications, prometheus.CounterValue, float64(st.Notifications))
		ch <- prometheus.MustNewConstMetric(descUpdates, prometheus.CounterValue, float64(st.Updates))
		ch <- prometheus.MustNewConstMetric(descCoalesced, prometheus.CounterValue, float64(st.Coalesced))
	}
	if pending != nil {
		v := 0.0
		if pending() {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, v)
	}
	if lag != nil && !c.perSwitch {
		(*lagCollector)(c).Collect(ch)
	}
}

// lagCollector exports the engine lag alone: the process-wide metric of a
// process whose switches have their own target metrics (ForSwitch).
type lagCollector Metrics

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descLag }

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	lag := c.lag
	c.mu.Unlock()
	if lag != nil {
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, math.Max(0, lag().Seconds()))
	}
}

// Serve serves /metrics on lis until ctx ends, with the collector's and
// the tuner's server (internal/metricshttp: its timeouts, and a scrape
// under way when ctx ends may finish).
func (m *Metrics) Serve(ctx context.Context, lis net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	return metricshttp.Serve(ctx, lis, mux)
}
