// Package tunermetrics holds the tuner's Prometheus metrics (prefix
// lhcnp_tuner_) in a registry of its own, and serves /metrics and
// /healthz.
//
// It is a leaf package: the tuner's loop updates it, and the metrics only
// count what the loop does (nothing here is read back by the loop). It
// must not depend on the tuner, nor on the collector's metrics (the tuner
// does not import the collector's code).
package tunermetrics

import (
	"context"
	"net"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lhcnp/lhcnp/internal/metricshttp"
)

// Prefix of every metric.
const Prefix = "lhcnp_tuner_"

// Error kinds (label kind of Errors).
const (
	// ErrDatabase: a read or write of PostgreSQL failed (telemetry, the
	// audit trail, the operators' holds).
	ErrDatabase = "database"
	// ErrDial: a gNMI call found no switch to talk to (gRPC Unavailable:
	// connection refused, no route, the connection lost).
	ErrDial = "dial"
	// ErrSet: a commit, confirm or cancel that reached the switch (or
	// was refused before it left the tuner) failed otherwise.
	ErrSet = "set"
)

// Pusher calls (label call of SetDuration).
const (
	CallCommit  = "commit"
	CallConfirm = "confirm"
	CallCancel  = "cancel"
)

// Outcomes are the outcomes of tuner_actions a change can end with
// (label outcome of Changes), as the table spells them.
var Outcomes = []string{"dry-run", "pushed", "confirmed", "rolled-back", "refused", "error"}

// Metrics are the tuner's metrics.
type Metrics struct {
	Registry *prometheus.Registry

	// Decisions: the policy's decisions, one per queue decided on per
	// period (holds included), by rule and direction.
	Decisions *prometheus.CounterVec
	// Changes: changes (one per queue of a commit) by outcome as
	// tuner_actions records it: pushed when the switch took the Set,
	// then confirmed, rolled-back or error; refused; dry-run.
	Changes *prometheus.CounterVec
	// CommitsPending: commits awaiting the tuner's judgement now (at most
	// one per switch).
	CommitsPending prometheus.Gauge
	// QueuesTuned, QueuesHeld: per switch, the queues decided on and
	// those an operator holds, at the switch's last decision period.
	QueuesTuned *prometheus.GaugeVec
	QueuesHeld  *prometheus.GaugeVec
	// SetDuration: each Pusher call (commit, confirm, cancel), start to
	// answer.
	SetDuration *prometheus.HistogramVec
	// Errors: failures by kind (database, dial, set).
	Errors *prometheus.CounterVec
	// LastCycle: when the last period ended (the tuner's clock), seconds
	// since the epoch.
	LastCycle prometheus.Gauge
}

// New returns the metrics, registered in a new registry with the Go and
// process collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "decisions_total",
			Help: "Decisions of the policy, one per queue decided on per period (holds included), by rule and direction (tighten, loosen, hold)."}, []string{"rule", "direction"}),
		Changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "changes_total",
			Help: "Changes of a queue's settings by outcome as tuner_actions records it (pushed: the switch took the Set; then confirmed, rolled-back or error; refused; dry-run)."}, []string{"outcome"}),
		CommitsPending: prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "commits_pending",
			Help: "Commits pushed and not yet confirmed or cancelled (at most one per switch)."}),
		QueuesTuned: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: Prefix + "queues_tuned",
			Help: "Queues the tuner decided on at the switch's last decision period."}, []string{"target"}),
		QueuesHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: Prefix + "queues_operator_held",
			Help: "Queues an operator holds (not decided on) at the switch's last decision period."}, []string{"target"}),
		SetDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: Prefix + "set_duration_seconds",
			Help:    "Duration of each gNMI call of a commit (check, Set and watch), a confirm or a cancel (a Set each), start to answer.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"call"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "errors_total",
			Help: "Failures by kind (database: a read or write of PostgreSQL; dial: a switch not reached; set: a commit, confirm or cancel that failed otherwise)."}, []string{"kind"}),
		LastCycle: prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "last_cycle_timestamp_seconds",
			Help: "When the tuner's last period ended, seconds since the epoch (time() minus it: how long the tuner has not decided)."}),
	}
	m.Registry.MustRegister(append(m.own(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))...)
	// The bounded labels exist from the start at 0: a rate or an alert
	// over them needs no first event.
	for _, o := range Outcomes {
		m.Changes.WithLabelValues(o)
	}
	for _, k := range []string{ErrDatabase, ErrDial, ErrSet} {
		m.Errors.WithLabelValues(k)
	}
	for _, c := range []string{CallCommit, CallConfirm, CallCancel} {
		m.SetDuration.WithLabelValues(c)
	}
	return m
}

// own is the tuner's metrics without the Go and process collectors.
func (m *Metrics) own() []prometheus.Collector {
	return []prometheus.Collector{m.Decisions, m.Changes, m.CommitsPending, m.QueuesTuned, m.QueuesHeld, m.SetDuration,
		m.Errors, m.LastCycle}
}

// Register registers the tuner's metrics in r too, without the Go and
// process collectors: r is another service's registry in the same
// process (the lab's collector's), which has those already. They count
// on in both.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range m.own() {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Health is the body of /healthz.
type Health struct {
	OK     bool     `json:"ok"`
	DBUp   bool     `json:"db_up"`
	Errors []string `json:"errors,omitempty"`
}

// Serve serves /metrics and /healthz on lis until ctx ends. health is
// called for every /healthz; a Health with OK false answers 503.
func (m *Metrics) Serve(ctx context.Context, lis net.Listener, health func() Health) error {
	return metricshttp.Serve(ctx, lis, metricshttp.Mux(m.Registry, func() (any, bool) {
		h := health()
		sort.Strings(h.Errors)
		return h, h.OK
	}))
}
