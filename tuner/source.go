package tuner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/tuner/policy"
)

// PGSource reads windows from the collector's views (docs/collector.md,
// "Views"): queue_latest for each queue's settings and its port's R_port,
// RTT_est and buffer (migrations/016_queue_buffer.sql), and its
// overload-cut option (the view's state column, as the explicit kmax: NULL
// where the switch never published the leaf, which the window takes for a
// node without the option), queue_congestion for the queue samples, lhcnp_leaf_at for
// the queue's state at the window's start, counter_increases for the
// counts between samples (bytes, packets, drops, pauses and notifications
// by action), lhcnp_speed_at for the switch's simulated seconds per
// wall-clock second; and the collector's ingest ledger for when it was
// receiving the switch.
//
// The collector stores a leaf when its value changes (the switch stamps a
// leaf with the time of its last change, and a value sent again is a
// duplicate): a steady queue has no row in a window, and a window made of
// rows alone would say "no data" of an idle queue and "gap" of a steady
// one. So a window is the queue's state, not its rows: its first sample
// is the state at the window's start (each leaf's last value at or before
// it, as queue_congestion_between carries its leaves), and the state is
// sampled again at every instant the collector shows it was receiving the
// switch (the last switch timestamp of each batch it stored for the
// target, from ingest_ledger), the values carried from the last change.
// A stretch without such an instant is a stretch in which the target did
// not report (its stream down, its collector stopped or behind): there
// the window has no sample, and the policy sees the gap (max_gap) or too
// few samples (min_samples).
type PGSource struct {
	pool *pgxpool.Pool
	skew time.Duration
}

// SourceOption configures a PGSource.
type SourceOption func(*PGSource)

// WithClockSkew is how far a switch's clock may be ahead of the
// database's (Config.ClockSkew; default DefaultClockSkew): the ledger's
// batches are found through their commit time, which is that much before
// the switch's timestamps they carry at most.
func WithClockSkew(d time.Duration) SourceOption { return func(s *PGSource) { s.skew = d } }

// NewPGSource returns a source reading through pool.
func NewPGSource(pool *pgxpool.Pool, opts ...SourceOption) *PGSource {
	s := &PGSource{pool: pool, skew: DefaultClockSkew}
	for _, o := range opts {
		o(s)
	}
	return s
}

type qk struct {
	iface string
	queue int
}

// Windows implements Source.
func (s *PGSource) Windows(ctx context.Context, target string, start, end time.Time) ([]QueueWindow, error) {
	wins := map[qk]*QueueWindow{}
	// The queues and their settings: the latest value of each leaf.
	rows, err := s.pool.Query(ctx, sqlLatest, target)
	if err != nil {
		return nil, fmt.Errorf("queue_latest: %w", err)
	}
	var keys []qk
	for rows.Next() {
		var k qk
		var alpha *float64
		var vgrowth, kmax, kbase, eff, rate, rttUs, buffer *int64
		var mode *string
		var cut *bool
		if err := rows.Scan(&k.iface, &k.queue, &alpha, &vgrowth, &mode, &kmax, &kbase, &eff, &rate, &rttUs, &buffer, &cut); err != nil {
			rows.Close()
			return nil, fmt.Errorf("queue_latest: %w", err)
		}
		w := policy.Window{Start: start, End: end}
		m := deref(mode, string(policy.KMaxBDP))
		if i := strings.LastIndexByte(m, ':'); i >= 0 {
			m = m[i+1:] // a module-qualified identity or enum name
		}
		w.Config.KMaxMode = policy.KMaxMode(m)
		w.Config.Alpha = deref(alpha, 0)
		w.Config.VGrowthBytesPerSec = deref(vgrowth, 0)
		w.Config.KMaxBytes = deref(kmax, 0)
		w.KBaseBytes = deref(kbase, 0)
		w.EffectiveKMaxBytes = deref(eff, 0)
		w.PortRateBitsPerSec = deref(rate, 0)
		w.RTTEst = time.Duration(deref(rttUs, 0)) * time.Microsecond
		w.BufferBytes = max(deref(buffer, 0), 0)
		// A switch that publishes the option takes it from the tuner
		// (rule pinned); one that never did is left alone.
		w.Config.OverloadCut, w.OverloadCutSupported = deref(cut, false), cut != nil
		wins[k] = &QueueWindow{Interface: k.iface, Queue: uint8(k.queue), Window: w}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queue_latest: %w", err)
	}

	// The switch's speed (its engine-speed leaf, migration 007): a
	// simulated switch paced below the wall clock stamps wall time on
	// simulated-time rates.
	var speed float64
	if err := s.pool.QueryRow(ctx, sqlSpeed, target, end).Scan(&speed); err != nil {
		return nil, fmt.Errorf("lhcnp_speed_at: %w", err)
	}
	for _, w := range wins {
		w.Window.Speed = speed
	}

	// The state at the start, then the changes in the window.
	for _, q := range []struct {
		name, sql string
		args      []any
	}{{"lhcnp_leaf_at", sqlStateAt, []any{target, start}}, {"queue_congestion", sqlSamples, []any{target, start, end}}} {
		if err := s.each(ctx, q.sql, func(r pgx.Rows) error {
			var k qk
			var sm policy.Sample
			var depth, peak, growth *int64
			var emr *float64
			if err := r.Scan(&k.iface, &k.queue, &sm.Time, &depth, &peak, &growth, &emr); err != nil {
				return err
			}
			w := wins[k]
			if w == nil || depth == nil {
				return nil // a queue without settings, or its queue depth deleted
			}
			sm.QueueDepthBytes, sm.PeakQueueDepthBytes = *depth, deref(peak, *depth)
			sm.GrowthRateBytesPerSec, sm.ECNMarkingPercent = deref(growth, 0), deref(emr, 0)
			ss := w.Window.Samples
			switch {
			case sm.Time.Before(start):
				sm.Time = start // the state at the start
			case len(ss) > 0 && ss[len(ss)-1].Time.Equal(sm.Time):
				ss = ss[:len(ss)-1] // a change at the start itself
			}
			w.Window.Samples = append(ss, sm)
			return nil
		}, q.args...); err != nil {
			return nil, fmt.Errorf("%s: %w", q.name, err)
		}
	}

	// The instants the collector was receiving the switch: the state
	// sampled there, carried from the last change before.
	// Read from a window's length before the start: the last instant
	// before it bounds the counts that straddle the start (below).
	var reported, before []time.Time
	if err := s.each(ctx, sqlReported, func(r pgx.Rows) error {
		var at time.Time
		if err := r.Scan(&at); err != nil {
			return err
		}
		if at.After(start) {
			reported = append(reported, at)
		} else {
			before = append(before, at)
		}
		return nil
	}, target, start.Add(-end.Sub(start)), end, s.skew.Microseconds()); err != nil {
		return nil, fmt.Errorf("ingest_ledger: %w", err)
	}
	for _, w := range wins {
		w.Window.Samples = carry(w.Window.Samples, reported)
	}
	instants := append(before, reported...)

	// The counts between samples: each per-second or per-sample count goes
	// to the first sample at or after it.
	add := func(k qk, at time.Time, f func(*policy.Sample)) {
		w := wins[k]
		if w == nil {
			return
		}
		ss := w.Window.Samples
		i, _ := slices.BinarySearchFunc(ss, at, func(s policy.Sample, t time.Time) int { return s.Time.Compare(t) })
		if i == 0 || i == len(ss) {
			return // before the first sample (its counts are ignored) or after the last
		}
		f(&ss[i])
	}
	if err := s.each(ctx, sqlCounts, func(r pgx.Rows) error {
		var k qk
		var at time.Time
		var leaf string
		var inc float64
		var prev *time.Time
		if err := r.Scan(&k.iface, &k.queue, &at, &leaf, &inc, &prev); err != nil {
			return err
		}
		if prev != nil && prev.Before(start) {
			// An increase since a value stored before the window: the
			// collector stores a leaf when it changes, so it came after
			// the switch's last report before at (the value unchanged
			// there). When that report is before the start too, only the
			// increase's share after the start is the window's, at an even
			// pace: the whole of it, over the span from the start, counted
			// up to a sample interval's worth too much (a tenth of the
			// service's 10 s window at the lab's 1 s sampling). No report in
			// the window's length before the start: when it came is not
			// known, and the whole is counted.
			i, _ := slices.BinarySearchFunc(instants, at, func(a, b time.Time) int { return a.Compare(b) })
			if i > 0 {
				from := instants[i-1]
				if prev.After(from) {
					from = *prev
				}
				if from.Before(start) && at.After(from) {
					inc *= float64(at.Sub(start)) / float64(at.Sub(from))
				}
			}
		}
		n := int64(inc + 0.5)
		if leaf == "pfc-pause-frames" {
			// A queue's pfc-pause-frames are the PAUSEs its interface sent
			// upstream; a congested egress queue's leave by the interfaces
			// its traffic arrives on, and its own read 0. Every queue of the
			// priority is charged with the switch's (the simulator's
			// switchPauses).
			for kq := range wins {
				if kq.queue == k.queue {
					add(kq, at, func(s *policy.Sample) { s.Pauses += n })
				}
			}
			return nil
		}
		add(k, at, func(s *policy.Sample) {
			switch leaf {
			case "bytes":
				s.TxBytes += n
			case "packets":
				s.Packets += n
			case "dropped-packets":
				s.Drops += n
			case "cnp-notify-sent":
				s.Notifications.Notify += n
			case "cnp-pause-sent":
				s.Notifications.Pause += n
			case "cnp-rate-reduce-sent":
				s.Notifications.RateReduce += n
			case "cnp-resume-sent":
				s.Notifications.Resume += n
			}
		})
		return nil
	}, target, start, end); err != nil {
		return nil, fmt.Errorf("counter_increases: %w", err)
	}

	// The engine's lag at each window's first and last sample (its
	// engine-lag leaf, the value at or before each instant): a simulated
	// switch that falls behind its pace, or catches up, covers less, or
	// more, of its own time than Speed × the samples' span.
	var at []time.Time
	for _, w := range wins {
		if ss := w.Window.Samples; len(ss) >= 2 {
			at = append(at, ss[0].Time, ss[len(ss)-1].Time)
		}
	}
	// By microsecond, the database's resolution (the window's start, the
	// first sample's instant, comes from the caller's clock).
	us := func(t time.Time) int64 { return t.Round(time.Microsecond).UnixMicro() }
	lag := map[int64]time.Duration{}
	if len(at) > 0 {
		if err := s.each(ctx, sqlLagAt, func(r pgx.Rows) error {
			var t time.Time
			var ns *int64
			if err := r.Scan(&t, &ns); err != nil {
				return err
			}
			lag[us(t)] = time.Duration(deref(ns, 0))
			return nil
		}, target, at); err != nil {
			return nil, fmt.Errorf("engine-lag: %w", err)
		}
		for _, w := range wins {
			if ss := w.Window.Samples; len(ss) >= 2 {
				w.Window.LagGrowth = lag[us(ss[len(ss)-1].Time)] - lag[us(ss[0].Time)]
			}
		}
	}

	slices.SortFunc(keys, func(a, b qk) int {
		if a.iface != b.iface {
			if a.iface < b.iface {
				return -1
			}
			return 1
		}
		return a.queue - b.queue
	})
	out := make([]QueueWindow, 0, len(keys))
	for _, k := range keys {
		out = append(out, *wins[k])
	}
	return out, nil
}

// carry merges into ss (a queue's samples in time order, from its state
// at the window's start) a sample at every instant of at (in time order)
// that has none, with the values of the sample before it. An instant
// before the first sample is left out: the queue's state is not known
// there (a queue whose first value came later).
func carry(ss []policy.Sample, at []time.Time) []policy.Sample {
	if len(ss) == 0 || len(at) == 0 {
		return ss
	}
	out := make([]policy.Sample, 0, len(ss)+len(at))
	i := 0
	for _, t := range at {
		for i < len(ss) && !ss[i].Time.After(t) {
			out = append(out, ss[i])
			i++
		}
		if len(out) == 0 || out[len(out)-1].Time.Equal(t) {
			continue
		}
		c := out[len(out)-1]
		out = append(out, policy.Sample{Time: t, QueueDepthBytes: c.QueueDepthBytes, PeakQueueDepthBytes: c.PeakQueueDepthBytes,
			GrowthRateBytesPerSec: c.GrowthRateBytesPerSec, ECNMarkingPercent: c.ECNMarkingPercent})
	}
	return append(out, ss[i:]...)
}

func (s *PGSource) each(ctx context.Context, sql string, f func(pgx.Rows) error, args ...any) error {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// The queries, one per view (migrations/003_views.sql) and the speed
// function of migrations/006_time_base.sql. The samples come from
// queue_congestion_between (migrations/004_windows.sql, from <= ts < to):
// the view's rows of the window, which reads the window and each leaf's
// last sample before it; on Citus (migration 012) the view is that
// function over all time, so a filter on it read the whole history.
const (
	sqlSpeed = `SELECT lhcnp_speed_at($1, $2)`
	// The engine-lag leaf (simulated ns) at or before each instant: 0 for
	// a switch that never published it (real time).
	sqlLagAt = `
SELECT t, (SELECT lhcnp_int(l.value_num) FROM lhcnp_leaf_at($1, '{}'::jsonb, '/lhcnp/global/state/engine-lag', t) l)
FROM unnest($2::timestamptz[]) t`
	sqlLatest = `
SELECT interface, queue, alpha::float8, v_growth_bytes_per_second, kmax_mode, (state ->> 'kmax')::bigint,
       k_base_bytes, kmax_bytes, port_rate_bps, rtt_est_us, buffer_bytes, (state ->> 'overload-cut')::boolean
FROM queue_latest WHERE target = $1`
	sqlSamples = `
SELECT interface, queue, ts, queue_depth_bytes, peak_queue_depth_bytes, growth_rate_bytes_per_second,
       ecn_marking_rate_percent::float8
FROM queue_congestion_between($2, $3::timestamptz + interval '1 microsecond') WHERE target = $1
ORDER BY interface, queue, ts`
	// The state of every queue of the target at the window's start: each
	// congestion leaf's value at or before it, as queue_congestion gives
	// it at a queue-depth row.
	sqlStateAt = `
SELECT q.keys ->> 'name', lhcnp_queue_id(q.keys), qd.ts, lhcnp_int(qd.value_num), lhcnp_int(peak.value_num),
       lhcnp_int(growth.value_num), emr.value_num::float8
FROM series q
CROSS JOIN LATERAL lhcnp_leaf_at(q.target, q.keys, q.schema_path, $2) qd
LEFT JOIN LATERAL lhcnp_leaf_at(q.target, q.keys, '/lhcnp/interfaces/interface/queues/queue/state/peak-queue-depth', $2) peak ON true
LEFT JOIN LATERAL lhcnp_leaf_at(q.target, q.keys, '/lhcnp/interfaces/interface/queues/queue/state/queue-growth-rate', $2) growth ON true
LEFT JOIN LATERAL lhcnp_leaf_at(q.target, q.keys, '/lhcnp/interfaces/interface/queues/queue/state/ecn-marking-rate', $2) emr ON true
WHERE q.target = $1 AND q.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/queue-depth'
ORDER BY 1, 2`
	// The instants the collector was receiving the target: the newest
	// switch timestamp of every batch it stored. committed_at bounds the
	// rows read through the ledger's index (target, committed_at): a batch
	// is committed after its values' instants, unless the switch's clock
	// is ahead of the database's: by up to the clock skew allowed ($4,
	// microseconds; WithClockSkew).
	sqlReported = `
SELECT DISTINCT last_ts FROM ingest_ledger
WHERE target = $1 AND committed_at >= $2::timestamptz - $4::bigint * interval '1 microsecond'
  AND last_ts > $2 AND last_ts <= $3
ORDER BY 1`
	// The increases of the queue counters the policy counts, by leaf.
	sqlCounts = `
SELECT keys ->> 'name', (keys ->> 'id')::integer, ts,
       substr(schema_path, length('/lhcnp/interfaces/interface/queues/queue/state/counters/') + 1),
       increase::float8, previous_ts
FROM counter_increases
WHERE target = $1 AND ts > $2 AND ts <= $3 AND increase IS NOT NULL
  AND schema_path IN ('/lhcnp/interfaces/interface/queues/queue/state/counters/bytes',
                      '/lhcnp/interfaces/interface/queues/queue/state/counters/packets',
                      '/lhcnp/interfaces/interface/queues/queue/state/counters/dropped-packets',
                      '/lhcnp/interfaces/interface/queues/queue/state/counters/pfc-pause-frames',
                      '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent',
                      '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent',
                      '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent',
                      '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent')`
)
