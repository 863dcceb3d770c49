package policy

import (
	"fmt"
	"math"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/internal/plural"
)

// KMaxMode is how the queue obtains K_max: the YANG enum's names.
type KMaxMode string

// K_max modes.
const (
	KMaxBDP      KMaxMode = "BDP_ADAPTIVE"
	KMaxExplicit KMaxMode = "EXPLICIT"
)

// Settings are the values the tuner writes to a queue.
type Settings struct {
	KMaxMode KMaxMode `json:"kmax_mode"`
	// Alpha is used in BDP_ADAPTIVE mode, KMaxBytes in EXPLICIT mode.
	Alpha     float64 `json:"alpha"`
	KMaxBytes int64   `json:"kmax_bytes,omitempty"`
	// VGrowthBytesPerSec 0 is a node whose QGR trigger is off (the simulator's
	// nodes allow it; the YANG model does not): it is left off.
	VGrowthBytesPerSec int64 `json:"v_growth_bytes_per_second"`
	// OverloadCut is the node option overload_cut (docs/longhaul.md, "A
	// queue standing at the buffer"; off by default): rule pinned switches
	// it on for a queue pinned at the buffer, where the node supports it
	// (Window.OverloadCutSupported).
	OverloadCut bool `json:"overload_cut,omitempty"`
}

// Notifications counts the Long-haul CNPs a queue sent, by action.
type Notifications struct {
	Notify     int64 `json:"notify"`
	Pause      int64 `json:"pause"`
	RateReduce int64 `json:"rate_reduce"`
	Resume     int64 `json:"resume"`
}

// Total is the sum over the actions.
func (n Notifications) Total() int64 { return n.Notify + n.Pause + n.RateReduce + n.Resume }

// Sample is the queue's telemetry at one instant. The counts (TxBytes,
// Packets, Drops, Pauses, Notifications) are what happened since the
// previous sample of the window; the first sample's counts are ignored.
type Sample struct {
	Time                  time.Time
	QueueDepthBytes       int64
	PeakQueueDepthBytes   int64
	GrowthRateBytesPerSec int64
	ECNMarkingPercent     float64
	TxBytes               int64
	Packets               int64
	Drops                 int64
	Pauses                int64
	Notifications         Notifications
}

// Window is one queue's telemetry over [Start, End] and what it was
// configured with. Samples are in time order.
type Window struct {
	Start, End time.Time
	Samples    []Sample
	Config     Settings
	// KBaseBytes is the K_max floor; EffectiveKMaxBytes the K_max the
	// switch reports in use.
	KBaseBytes         int64
	EffectiveKMaxBytes int64
	// RTTEst and PortRateBitsPerSec are the port's effective RTT_est and R_port.
	RTTEst             time.Duration
	PortRateBitsPerSec int64
	// BufferBytes is the port's egress buffer, where the switch reports it
	// (its interface's buffer-size leaf; in the service through
	// queue_latest.buffer_bytes, in the simulator the port's): the
	// overrun's lift stays under a share of it. 0: unknown or not limited.
	BufferBytes int64
	// OverloadCutSupported says the node takes the overload_cut leaf from
	// the tuner (the simulator's nodes; in the service, a switch that
	// publishes the queue's state/overload-cut, queue_latest.state):
	// without it rule pinned never fires.
	OverloadCutSupported bool
	// Speed is the simulated seconds per second of the samples' timestamps:
	// a simulated switch paced at a fraction of the wall clock (the lab)
	// stamps its samples in wall time while its rates, RTT_est and counters
	// run in simulated time. 0 or 1: real time.
	Speed float64
	// LagGrowth is how much the switch's simulated clock fell further
	// behind its pace between the window's first sample and its last (the
	// growth of its engine-lag leaf, in simulated time; negative when it
	// caught up; 0 for a switch in real time): the samples' span covers
	// Speed × span − LagGrowth of the switch's own time. An engine that
	// lags spreads the same simulated seconds over more wall-clock seconds,
	// and one that catches up over fewer: the lab's windows read the link
	// 83-92 % used after its load step and 111.6 % before it.
	LagGrowth time.Duration
}

// spanSeconds is the switch's own (simulated) seconds from the window's
// first sample to its last (0 when its clock did not advance).
func (w Window) spanSeconds() float64 {
	if len(w.Samples) < 2 {
		return 0
	}
	return max(w.simSeconds(w.Samples[len(w.Samples)-1].Time.Sub(w.Samples[0].Time))-w.LagGrowth.Seconds(), 0)
}

// simSeconds is d, a span of the samples' timestamps, in the switch's own
// (simulated) seconds.
func (w Window) simSeconds(d time.Duration) float64 {
	if w.Speed > 0 {
		return d.Seconds() * w.Speed
	}
	return d.Seconds()
}

// Metrics are the figures the objective weighs, measured over a window.
type Metrics struct {
	// Utilisation is the share of R_port the queue forwarded.
	Utilisation float64 `json:"utilisation"`
	// DelayRTT is the mean queue depth as queueing delay, in RTT_est.
	DelayRTT float64 `json:"delay_rtt"`
	// LastDelayRTT is the last sample's queue depth as delay, in RTT_est.
	LastDelayRTT float64 `json:"last_delay_rtt"`
	// TrendRTT is the queueing delay the queue adds per RTT_est at the
	// window's pace (last minus first sample, scaled to one RTT_est).
	TrendRTT              float64       `json:"trend_rtt"`
	MeanQueueBytes        float64       `json:"mean_queue_bytes"`
	PeakQueueBytes        int64         `json:"peak_queue_bytes"`
	MeanGrowthBytesPerSec float64       `json:"mean_growth_bytes_per_second"`
	ECNMarkingPercent     float64       `json:"ecn_marking_percent"`
	Packets               int64         `json:"packets"`
	Drops                 int64         `json:"drops"`
	Pauses                int64         `json:"pauses"`
	Notifications         Notifications `json:"notifications"`
	// Loss is dropped plus paused packets per forwarded packet.
	Loss float64 `json:"loss"`
	// NotificationsPerRTT is the notifications sent per RTT_est.
	NotificationsPerRTT float64 `json:"notifications_per_rtt"`
	// Duration is the time the counts cover, in the samples' timestamps
	// (wall time for a simulated switch; see Window.Speed).
	Duration time.Duration `json:"duration_ns"`
}

// kmaxBytes is the K_max in use: the explicit kmax, or the effective K_max
// the switch reports (0: unknown).
func kmaxBytes(w Window) int64 {
	if w.Config.KMaxMode == KMaxExplicit {
		return w.Config.KMaxBytes
	}
	return w.EffectiveKMaxBytes
}

// bdpBytes is the K_max of §5.3.2 without its K_base floor, alpha ·
// R_port · RTT_est / 8: the bytes of alpha RTT_est of queue at R_port
// (alpha 1: one RTT_est of queue, the unit of the policy's delays). The
// node's formula (lhcnp.BDPBytes), not a copy of it.
func (w Window) bdpBytes(alpha float64) float64 {
	return lhcnp.BDPBytes(alpha, w.PortRateBitsPerSec, w.RTTEst)
}

// atKBaseFloor says whether alpha gives the BDP-adaptive K_max its K_base
// floor, as the node computes it (lhcnp.BDPKMaxBytes).
func (w Window) atKBaseFloor(alpha float64) bool {
	return lhcnp.BDPKMaxBytes(w.KBaseBytes, alpha, w.PortRateBitsPerSec, w.RTTEst) <= w.KBaseBytes
}

// growthBytesPerSec is the queue's growth at the window's pace (m.TrendRTT, in
// RTT_est per RTT_est) in bytes per second, the unit of V_growth.
func (w Window) growthBytesPerSec(m Metrics) float64 {
	return m.TrendRTT * float64(w.PortRateBitsPerSec) / 8
}

// Check says why a window cannot be decided on (the rule and the reason),
// or "" when it can.
func Check(cfg Config, w Window) (rule Rule, reason string) {
	if len(w.Samples) < cfg.MinSamples {
		return RuleNoData, fmt.Sprintf("%s in the window, %d needed", plural.Count(len(w.Samples), "sample"), cfg.MinSamples)
	}
	if w.PortRateBitsPerSec <= 0 || w.RTTEst <= 0 {
		return RuleNoData, fmt.Sprintf("no port rate (%d bit/s) or RTT_est (%v)", w.PortRateBitsPerSec, w.RTTEst)
	}
	switch w.Config.KMaxMode {
	case KMaxBDP:
		if !(w.Config.Alpha > 0) {
			return RuleNoData, fmt.Sprintf("alpha %v unknown", w.Config.Alpha)
		}
	case KMaxExplicit:
		if w.Config.KMaxBytes <= 0 {
			return RuleNoData, "explicit kmax unknown"
		}
	default:
		return RuleNoData, fmt.Sprintf("kmax-mode %q unknown", w.Config.KMaxMode)
	}
	if w.Config.VGrowthBytesPerSec < 0 {
		return RuleNoData, fmt.Sprintf("v-growth %d unknown", w.Config.VGrowthBytesPerSec)
	}
	if d := w.Samples[0].Time.Sub(w.Start); d > cfg.MaxGap {
		return RuleGap, fmt.Sprintf("no sample for %v after the window's start (max-gap %v)", d, cfg.MaxGap)
	}
	if d := w.End.Sub(w.Samples[len(w.Samples)-1].Time); d > cfg.MaxGap {
		return RuleGap, fmt.Sprintf("no sample for %v before the window's end (max-gap %v)", d, cfg.MaxGap)
	}
	for i := 1; i < len(w.Samples); i++ {
		d := w.Samples[i].Time.Sub(w.Samples[i-1].Time)
		if d <= 0 {
			return RuleGap, fmt.Sprintf("samples %d and %d out of time order", i-1, i)
		}
		if d > cfg.MaxGap {
			return RuleGap, fmt.Sprintf("gap of %v between samples at %s (max-gap %v)", d,
				w.Samples[i-1].Time.Format(time.RFC3339Nano), cfg.MaxGap)
		}
	}
	if w.spanSeconds() <= 0 {
		// A switch whose engine stood still: no rate to measure.
		return RuleGap, fmt.Sprintf("the switch's clock did not advance over the window (its engine-lag grew by %v)", w.LagGrowth)
	}
	return "", ""
}

// Measure computes the window's metrics. The window must hold at least
// two samples in time order and a positive port rate and RTT_est
// (Decide checks that first).
func Measure(w Window) Metrics {
	var m Metrics
	var depth, growth, emr float64
	for i, s := range w.Samples {
		depth += float64(s.QueueDepthBytes)
		growth += float64(s.GrowthRateBytesPerSec)
		emr += s.ECNMarkingPercent
		m.PeakQueueBytes = max(m.PeakQueueBytes, s.PeakQueueDepthBytes, s.QueueDepthBytes)
		if i == 0 {
			continue
		}
		m.Packets += s.Packets
		m.Drops += s.Drops
		m.Pauses += s.Pauses
		m.Notifications.Notify += s.Notifications.Notify
		m.Notifications.Pause += s.Notifications.Pause
		m.Notifications.RateReduce += s.Notifications.RateReduce
		m.Notifications.Resume += s.Notifications.Resume
		m.Utilisation += float64(s.TxBytes)
	}
	n := float64(len(w.Samples))
	m.MeanQueueBytes = depth / n
	m.MeanGrowthBytesPerSec = growth / n
	m.ECNMarkingPercent = emr / n
	rtt := w.RTTEst.Seconds()
	m.DelayRTT = DelayRTT(m.MeanQueueBytes, w.PortRateBitsPerSec, w.RTTEst)
	m.LastDelayRTT = DelayRTT(float64(w.Samples[len(w.Samples)-1].QueueDepthBytes), w.PortRateBitsPerSec, w.RTTEst)
	first := DelayRTT(float64(w.Samples[0].QueueDepthBytes), w.PortRateBitsPerSec, w.RTTEst)
	if span := w.spanSeconds(); span > 0 {
		m.TrendRTT = (m.LastDelayRTT - first) * rtt / span
	}
	m.Duration = w.Samples[len(w.Samples)-1].Time.Sub(w.Samples[0].Time)
	if secs := w.spanSeconds(); secs > 0 {
		m.Utilisation = m.Utilisation * 8 / float64(w.PortRateBitsPerSec) / secs
		m.NotificationsPerRTT = float64(m.Notifications.Total()) * rtt / secs
	} else {
		m.Utilisation = 0
	}
	switch lost := m.Drops + m.Pauses; {
	case lost == 0:
	case m.Packets > 0:
		m.Loss = float64(lost) / float64(m.Packets)
	default:
		m.Loss = 1
	}
	return m
}

// DelayRTT is a queue of queueBytes as queueing delay at rateBitsPerSec (bit/s),
// in units of rtt: the objective's d, in the policy's windows and in the
// simulator's whole runs (dataplane-sim/compare) alike.
func DelayRTT(queueBytes float64, rateBitsPerSec int64, rtt time.Duration) float64 {
	return queueBytes * 8 / float64(rateBitsPerSec) / rtt.Seconds()
}

// Objective is J of docs/tuner.md for the metrics: lower is better.
func Objective(m Metrics, w Weights) float64 {
	return w.Utilisation*(1-math.Min(m.Utilisation, 1)) + w.Delay*m.DelayRTT + w.Loss*m.Loss +
		w.Notifications*m.NotificationsPerRTT
}
