// Package metrics holds the collector's Prometheus metrics (prefix
// lhcnp_collector_) in a registry of its own, and serves /metrics and
// /healthz.
//
// It is a leaf package: the runtime, the writer and the target loops update
// it; it must not depend on them.
package collectormetrics

import (
	"context"
	"net"
	"net/http/pprof"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lhcnp/lhcnp/internal/metricshttp"
)

// Prefix of every metric.
const Prefix = "lhcnp_collector_"

// Drop reasons (label reason of DroppedRows). Every row the collector
// received and did not store is counted under one of them.
const (
	DropSpillFull    = "spill_full"    // the spill reached writer.spill_bytes
	DropSpillError   = "spill_error"   // the spill could not be written (disk error)
	DropSpillCorrupt = "spill_corrupt" // a spilled record failed its CRC
	// DropStaleEpoch: rows of a batch whose target's lease moved (a
	// stale epoch) that the writer's merge could not store without risking
	// a second copy: samples newer than anything stored of their series
	// (the owner's stream may still carry them), or a whole batch when the
	// merge cannot run (no lease row; a row PostgreSQL refuses).
	DropStaleEpoch = "stale_epoch"
	// DropStaleDuplicate: rows of a stale batch already stored (by the
	// target's owner, or by an earlier replay of the batch): not a loss.
	DropStaleDuplicate = "stale_duplicate"
	DropDuplicate      = "duplicate" // a re-sent value already stored (not a loss)
	// DropDeadLetterRefused: rows PostgreSQL refused whose dead letter it
	// refused too, and that the writer could not keep in its file of such
	// rows either (none set, or a disk error): its log line holds them.
	DropDeadLetterRefused = "dead_letter_refused"
)

// Write error classes (label class of WriteErrors): writer.Class's names.
const (
	WriteErrorTemporary = "temporary" // retried with back-off
	WriteErrorPermanent = "permanent" // a row refused: split out, dead-lettered
)

// Tables (label table of RowsWritten and StaleMerged).
const (
	TableSamples = "samples"
	TableEvents  = "events"
)

// Batch outcomes (label outcome of Batches).
const (
	BatchStored   = "stored"   // committed by this writer
	BatchReplayed = "replayed" // already in the ledger: stored by an earlier run
	BatchPartial  = "partial"  // committed with rows dead-lettered (a stale batch's merge too)
	BatchStale    = "stale"    // its lease had moved: its rows merged
)

// Phases of a read of the latest table (label phase of LatestReadErrors).
const (
	LatestReadSeed    = "seed"    // a loop starts: what is stored is not stored again
	LatestReadPromote = "promote" // a standby loop is promoted
)

// Handover directions (label direction of Handovers).
const (
	HandoverGiven = "given" // a target handed to another collector
	HandoverTaken = "taken" // a target taken from one
)

// Lease renewal results (label result of LeaseRenewals):
// placement.Renewal's Result returns them.
const (
	LeaseRenewed    = "renewed"    // still held, extended
	LeaseReacquired = "reacquired" // it had expired with nobody taking it: taken again at the same epoch
	LeaseLost       = "lost"       // another collector owns the target, or it was released
	LeaseRenewError = "error"      // the database did not answer: the lease is kept
)

// Handover kinds (label kind of Handovers): placement.Kind's values.
const (
	// HandoverMakeBeforeBreak: the new owner's stream had reached its
	// sync_response before the old owner stopped.
	HandoverMakeBeforeBreak = "make_before_break"
	// HandoverBreakBeforeMake: the old owner stopped first (its successor
	// did not sync within leases.ttl, or a lease expired).
	// A collector taking a target over judges its side from what the
	// previous owner stored: break-before-make when its stream synced past
	// it (an announced stream dropped after the old owner's last look).
	HandoverBreakBeforeMake = "break_before_make"
	// HandoverTakeover: a lease taken from another collector with no
	// standby stream to promote (taker's side only): the previous owner
	// died (its lease expired) or released the lease before this
	// collector streamed the target. Nothing judges the junction: values
	// published between the previous owner's last stored one and the new
	// stream's sync are lost.
	HandoverTakeover = "takeover"
)

// Target states (label state of TargetState).
// standby: streaming, but its rows are held until this collector takes the
// target's lease over from the collector that still owns it.
var States = []string{"connecting", "syncing", "streaming", "standby", "backoff", "stopped"}

// Metrics are the collector's metrics.
type Metrics struct {
	Registry *prometheus.Registry

	TargetState   *prometheus.GaugeVec   // target, state: 1 for the current state
	Notifications *prometheus.CounterVec // target
	Resubscribes  *prometheus.CounterVec // target
	RowsWritten   *prometheus.CounterVec // table
	Batches       *prometheus.CounterVec // outcome: stored, replayed, partial, stale
	DeadLetters   prometheus.Counter
	DroppedRows   *prometheus.CounterVec // reason
	QueueRows     prometheus.Gauge
	QueueBatches  prometheus.Gauge
	SpillBytes    prometheus.Gauge
	SpillBatches  prometheus.Gauge
	DBUp          prometheus.Gauge
	WriteErrors   *prometheus.CounterVec // class: temporary, permanent
	RoundTrip     prometheus.Histogram   // one batch transaction, begin to commit
	Lag           prometheus.Histogram   // switch timestamp to commit, per sample
	Leases        prometheus.Gauge
	Handovers     *prometheus.CounterVec // direction (given, taken), kind
	// StandbyDiscarded: rows a standby loop (a collector waiting to take a
	// target over) let go of past writer.queue_rows, oldest first. Not a
	// loss: the collector that still owns the target stores them (should
	// one be newer than what it stored when the lease moves, the takeover
	// counts as break-before-make).
	StandbyDiscarded prometheus.Counter
	// StandbyRows: rows the standby loops hold now (at most
	// writer.queue_rows together).
	StandbyRows prometheus.Gauge
	// ReadyAnnounced: handover Ready messages sent (once per synced
	// standby stream, then at most once per leases.renew).
	ReadyAnnounced prometheus.Counter
	// LeaseRenewals: lease renewals by result (renewed; reacquired: it had
	// expired with nobody taking it; lost; error: the database did not
	// answer, the lease is kept, the fencing guards it).
	LeaseRenewals *prometheus.CounterVec
	// LatestReadErrors: reads of the latest table that failed and are
	// retried, by phase (seed: a loop starts; promote: a standby loop is
	// promoted, retried for as long as the lease is held).
	LatestReadErrors *prometheus.CounterVec
	// EventConflicts: events the database already held (its unique key on
	// an event's identity refused them), but for those an earlier try of
	// the same batch stored (a replay, or a try whose answer was lost):
	// 0 unless an event was met twice.
	EventConflicts prometheus.Counter
	// StaleMerged: rows of stale batches (their lease epoch no longer the
	// target's) stored by the writer's merge, by table: values only this
	// collector received.
	StaleMerged *prometheus.CounterVec
	// DeadLettersRefused: rows PostgreSQL refused whose dead letter it
	// refused too (a constraint or a trigger of dead_letters): kept in the
	// writer's file (state_dir/dead_letters.jsonl), else dropped
	// (DropDeadLetterRefused).
	DeadLettersRefused prometheus.Counter
	// RefusedFileBytes: the size of that file, read at start and after
	// each line: the collector never rotates it (a rotation would lose
	// rows), so a trigger that keeps refusing grows it until an operator
	// moves it away.
	RefusedFileBytes prometheus.Gauge
	// TargetsRefused: enabled rows of the targets table that did not
	// check at its last read (an edit that broke a working target's row
	// keeps its previous definition running; a row never good is not
	// collected).
	TargetsRefused prometheus.Gauge

	mu     sync.Mutex
	states map[string]string
}

// New returns the metrics, registered in a new registry with the Go and
// process collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		TargetState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: Prefix + "target_state",
			Help: "1 for the current state of each target's subscription (connecting, syncing, streaming, standby, backoff, stopped)."}, []string{"target", "state"}),
		Notifications: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "notifications_received_total",
			Help: "gNMI notifications received, per target."}, []string{"target"}),
		Resubscribes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "subscribes_total",
			Help: "Subscribe streams started, per target (a restart of the stream counts again)."}, []string{"target"}),
		RowsWritten: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "rows_written_total",
			Help: "Rows committed, per table (rate() gives rows per second)."}, []string{"table"}),
		Batches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "batches_total",
			Help: "Batches handled by the writer, by outcome (stored, replayed: already in the ledger, partial: some rows dead-lettered, stale: its lease had moved, its rows merged)."}, []string{"outcome"}),
		DeadLetters: prometheus.NewCounter(prometheus.CounterOpts{Name: Prefix + "dead_letters_total",
			Help: "Rows PostgreSQL refused, stored in dead_letters with the error."}),
		DeadLettersRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: Prefix + "dead_letters_refused_total",
			Help: "Rows PostgreSQL refused whose dead letter it refused too: kept as lines of state_dir/dead_letters.jsonl (those that could not be are in dropped_rows_total{reason=dead_letter_refused})."}),
		RefusedFileBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "refused_file_bytes",
			Help: "Bytes of state_dir/dead_letters.jsonl (the rows of dead_letters_refused_total), at start and after each line: never rotated; past writer.refused_file_warn_bytes the collector logs a warning."}),
		TargetsRefused: prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "targets_refused",
			Help: "Enabled rows of the targets table refused at its last read (a value that does not check): a target collected before keeps its previous definition, a new one is not collected; the log names each."}),
		DroppedRows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "dropped_rows_total",
			Help: "Rows not stored, by reason (spill_full, spill_error, spill_corrupt, stale_epoch: rows of a stale batch the merge could not store; dead_letter_refused: refused rows whose dead letter was refused too and could not be kept in state_dir/dead_letters.jsonl; duplicate and stale_duplicate count values already stored, not a loss)."}, []string{"reason"}),
		QueueRows: prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "queue_rows",
			Help: "Rows in the in-memory queue."}),
		QueueBatches: prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "queue_batches",
			Help: "Batches in the in-memory queue."}),
		SpillBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "spill_bytes",
			Help: "Bytes of spill segments on disk."}),
		SpillBatches: prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "spill_batches",
			Help: "Batches in the spill, not yet stored."}),
		DBUp: prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "db_up",
			Help: "1 when the last write to PostgreSQL succeeded."}),
		WriteErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "write_errors_total",
			Help: "Failed batch writes by class (temporary: retried with back-off; permanent: a bad row, split out)."}, []string{"class"}),
		RoundTrip: prometheus.NewHistogram(prometheus.HistogramOpts{Name: Prefix + "pg_round_trip_seconds",
			Help: "Duration of one batch transaction, begin to commit.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		Lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: Prefix + "lag_seconds",
			Help: "From a sample's switch timestamp to its commit.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}),
		Leases: prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "leases_held",
			Help: "Target leases this collector holds."}),
		Handovers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "handovers_total",
			Help: "Targets handed to another collector (direction given) or taken from one (taken), by kind (make_before_break: the new owner streamed before the old one stopped; break_before_make; takeover: taken with no standby stream, the previous owner dead or gone)."}, []string{"direction", "kind"}),
		StandbyDiscarded: prometheus.NewCounter(prometheus.CounterOpts{Name: Prefix + "standby_discarded_rows_total",
			Help: "Rows a standby stream let go of past writer.queue_rows while the target's owner still stores them (not a loss)."}),
		StandbyRows: prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "standby_rows",
			Help: "Rows the standby streams hold until this collector takes their targets over (at most writer.queue_rows together)."}),
		ReadyAnnounced: prometheus.NewCounter(prometheus.CounterOpts{Name: Prefix + "handover_ready_sent_total",
			Help: "Handover Ready messages sent by this collector's standby streams."}),
		LeaseRenewals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "lease_renewals_total",
			Help: "Lease renewals by result (renewed; reacquired: it had expired with nobody taking it, taken again at the same epoch; lost: another collector owns the target, or it was released; error: the database did not answer, the lease is kept)."}, []string{"result"}),
		LatestReadErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "latest_read_errors_total",
			Help: "Reads of the latest table that failed and are retried, by phase (seed: a target's loop starts; promote: a standby stream is promoted after its lease was taken)."}, []string{"phase"}),
		EventConflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: Prefix + "event_conflicts_total",
			Help: "Events not stored because the events table already held one of the same identity (target, kind, ts, interface, queue), but for those an earlier try of the same batch stored (a replay, or a write whose answer was lost): 0 unless an event was met twice."}),
		StaleMerged: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "stale_merged_rows_total",
			Help: "Rows of batches whose target's lease had moved (stale epoch) stored by the writer's merge, per table: values the target's owner had not stored."}, []string{"table"}),
		states: map[string]string{},
	}
	m.Registry.MustRegister(m.TargetState, m.Notifications, m.Resubscribes, m.RowsWritten, m.Batches,
		m.DeadLetters, m.DeadLettersRefused, m.RefusedFileBytes, m.TargetsRefused, m.DroppedRows, m.QueueRows, m.QueueBatches, m.SpillBytes, m.SpillBatches, m.DBUp,
		m.WriteErrors, m.RoundTrip, m.Lag, m.Leases, m.Handovers, m.StandbyDiscarded, m.StandbyRows, m.ReadyAnnounced, m.LeaseRenewals,
		m.LatestReadErrors, m.EventConflicts, m.StaleMerged,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, r := range []string{DropSpillFull, DropSpillError, DropSpillCorrupt, DropStaleEpoch, DropStaleDuplicate, DropDuplicate, DropDeadLetterRefused} {
		m.DroppedRows.WithLabelValues(r)
	}
	for _, t := range []string{TableSamples, TableEvents} {
		m.StaleMerged.WithLabelValues(t)
		m.RowsWritten.WithLabelValues(t)
	}
	// The write path's counters start at 0 too: increase() over a
	// collector's first batch (or a first stale one) counts it.
	for _, o := range []string{BatchStored, BatchReplayed, BatchPartial, BatchStale} {
		m.Batches.WithLabelValues(o)
	}
	// Errors start at 0 for every class and phase: a series that first
	// appears at 1 is no increase() or rate(), so an alert on the first
	// write error would not fire. The lease counters start with leases
	// (LeasesOn).
	for _, c := range []string{WriteErrorTemporary, WriteErrorPermanent} {
		m.WriteErrors.WithLabelValues(c)
	}
	for _, p := range []string{LatestReadSeed, LatestReadPromote} {
		m.LatestReadErrors.WithLabelValues(p)
	}
	return m
}

// LeasesOn serves the lease counters at 0 for every direction and kind of
// a handover and every result of a renewal, as the error counters are
// (New): a collector whose leases are on calls it at start, so that
// increase() sees its first handover. Without leases they stay absent:
// there is nothing to count.
func (m *Metrics) LeasesOn() {
	for _, k := range []string{HandoverMakeBeforeBreak, HandoverBreakBeforeMake} {
		m.Handovers.WithLabelValues(HandoverGiven, k)
		m.Handovers.WithLabelValues(HandoverTaken, k)
	}
	m.Handovers.WithLabelValues(HandoverTaken, HandoverTakeover) // the taker's side only
	for _, r := range []string{LeaseRenewed, LeaseReacquired, LeaseLost, LeaseRenewError} {
		m.LeaseRenewals.WithLabelValues(r)
	}
}

// SetState records a target's state; "" removes the target.
func (m *Metrics) SetState(target, state string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range States {
		if state == "" {
			m.TargetState.DeleteLabelValues(target, s)
			continue
		}
		v := 0.0
		if s == state {
			v = 1
		}
		m.TargetState.WithLabelValues(target, s).Set(v)
	}
	if state == "" {
		delete(m.states, target)
		return
	}
	m.states[target] = state
}

// States returns every target's state.
func (m *Metrics) TargetStates() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.states))
	for k, v := range m.states {
		out[k] = v
	}
	return out
}

// Health is the body of /healthz.
type Health struct {
	OK      bool              `json:"ok"`
	DBUp    bool              `json:"db_up"`
	Targets map[string]string `json:"targets"`
	Errors  []string          `json:"errors,omitempty"`
}

// Serve serves /metrics and /healthz on lis until ctx ends. health is
// called for every /healthz; a Health with OK false answers 503. With
// profile, Go's profiles are served under /debug/pprof/ too.
func (m *Metrics) Serve(ctx context.Context, lis net.Listener, profile bool, health func() Health) error {
	mux := metricshttp.Mux(m.Registry, func() (any, bool) {
		h := health()
		sort.Strings(h.Errors)
		return h, h.OK
	})
	if profile {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return metricshttp.Serve(ctx, lis, mux)
}
