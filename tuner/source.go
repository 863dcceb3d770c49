package tuner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/tuner/policy"
)

// PGSource reads windows from the collector's views (docs/collector.md,
// "Views"): queue_congestion for the queue samples, queue_latest for each
// queue's settings and counters, notifications_per_second,
// drops_and_pauses and queue_throughput for the counts between samples.
// It never reads the collector's tables.
type PGSource struct {
	pool *pgxpool.Pool
}

// NewPGSource returns a source reading through pool.
func NewPGSource(pool *pgxpool.Pool) *PGSource { return &PGSource{pool: pool} }

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
		var vgrowth, kmax, kbase, eff, rate, rttUs *int64
		var mode *string
		if err := rows.Scan(&k.iface, &k.queue, &alpha, &vgrowth, &mode, &kmax, &kbase, &eff, &rate, &rttUs); err != nil {
			rows.Close()
			return nil, fmt.Errorf("queue_latest: %w", err)
		}
		w := policy.Window{Start: start, End: end}
		w.Config.KMaxMode = policy.KMaxMode(deref(mode, string(policy.KMaxBDP)))
		w.Config.Alpha = deref(alpha, 0)
		w.Config.VGrowthBps = deref(vgrowth, 0)
		w.Config.KMaxBytes = deref(kmax, 0)
		w.KBaseBytes = deref(kbase, 0)
		w.EffectiveKMaxBytes = deref(eff, 0)
		w.PortRateBps = deref(rate, 0)
		w.RTTEst = time.Duration(deref(rttUs, 0)) * time.Microsecond
		wins[k] = &QueueWindow{Interface: k.iface, Queue: uint8(k.queue), Window: w}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queue_latest: %w", err)
	}

	// The samples.
	rows, err = s.pool.Query(ctx, sqlSamples, target, start, end)
	if err != nil {
		return nil, fmt.Errorf("queue_congestion: %w", err)
	}
	for rows.Next() {
		var k qk
		var sm policy.Sample
		var depth, peak, growth *int64
		var emr *float64
		if err := rows.Scan(&k.iface, &k.queue, &sm.Time, &depth, &peak, &growth, &emr); err != nil {
			rows.Close()
			return nil, fmt.Errorf("queue_congestion: %w", err)
		}
		w := wins[k]
		if w == nil || depth == nil {
			continue
		}
		sm.QueueDepthBytes, sm.PeakQueueDepthBytes = *depth, deref(peak, *depth)
		sm.GrowthRateBytesPerSec, sm.ECNMarkingPercent = deref(growth, 0), deref(emr, 0)
		w.Window.Samples = append(w.Window.Samples, sm)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queue_congestion: %w", err)
	}

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
	if err := s.each(ctx, sqlNotifications, target, start, end, func(r pgx.Rows) error {
		var k qk
		var at time.Time
		var action string
		var n float64
		if err := r.Scan(&k.iface, &k.queue, &at, &action, &n); err != nil {
			return err
		}
		add(k, at, func(s *policy.Sample) {
			c := int64(n + 0.5)
			switch action {
			case "NOTIFY", "notify":
				s.Notifications.Notify += c
			case "PAUSE", "pause":
				s.Notifications.Pause += c
			case "RATE_REDUCE", "rate-reduce", "rate_reduce":
				s.Notifications.RateReduce += c
			case "RESUME", "resume":
				s.Notifications.Resume += c
			}
		})
		return nil
	}); err != nil {
		return nil, fmt.Errorf("notifications_per_second: %w", err)
	}
	if err := s.each(ctx, sqlDrops, target, start, end, func(r pgx.Rows) error {
		var k qk
		var at time.Time
		var drops, pauses *int64
		if err := r.Scan(&k.iface, &k.queue, &at, &drops, &pauses); err != nil {
			return err
		}
		add(k, at, func(s *policy.Sample) { s.Drops += deref(drops, 0); s.Pauses += deref(pauses, 0) })
		return nil
	}); err != nil {
		return nil, fmt.Errorf("drops_and_pauses: %w", err)
	}
	if err := s.each(ctx, sqlThroughput, target, start, end, func(r pgx.Rows) error {
		var k qk
		var at time.Time
		var bytes, packets *int64
		if err := r.Scan(&k.iface, &k.queue, &at, &bytes, &packets); err != nil {
			return err
		}
		add(k, at, func(s *policy.Sample) { s.TxBytes += deref(bytes, 0); s.Packets += deref(packets, 0) })
		return nil
	}); err != nil {
		return nil, fmt.Errorf("queue_throughput: %w", err)
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

func (s *PGSource) each(ctx context.Context, sql, target string, start, end time.Time, f func(pgx.Rows) error) error {
	rows, err := s.pool.Query(ctx, sql, target, start, end)
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

// The queries, one per view.
const (
	sqlLatest = `
SELECT interface, queue, alpha, v_growth_bytes_per_second, kmax_mode, kmax_bytes, k_base_bytes,
       effective_kmax_bytes, effective_port_rate_bps, effective_rtt_est_us
FROM queue_latest WHERE target = $1`
	sqlSamples = `
SELECT interface, queue, ts, queue_depth_bytes, peak_queue_depth_bytes, growth_rate_bytes_per_second,
       ecn_marking_rate_percent
FROM queue_congestion WHERE target = $1 AND ts BETWEEN $2 AND $3
ORDER BY interface, queue, ts`
	sqlNotifications = `
SELECT interface, queue, second, action, notifications
FROM notifications_per_second WHERE target = $1 AND second > $2 AND second <= $3`
	sqlDrops = `
SELECT interface, queue, ts, dropped_packets_delta, pfc_pause_frames_delta
FROM drops_and_pauses WHERE target = $1 AND ts > $2 AND ts <= $3`
	sqlThroughput = `
SELECT interface, queue, ts, bytes_delta, packets_delta
FROM queue_throughput WHERE target = $1 AND ts > $2 AND ts <= $3`
)
