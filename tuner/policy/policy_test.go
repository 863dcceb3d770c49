package policy

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var t0 = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)

// A 100 Gbit/s port with RTT_est 10 ms: one RTT_est of queue is 125 MB.
const (
	rateBitsPerSec = 100_000_000_000
	rtt            = 10 * time.Millisecond
	bdpBytes       = rateBitsPerSec / 8 / 100
)

// queue describes a steady queue; window turns it into five samples a
// second apart.
type queue struct {
	util      float64 // share of the port rate forwarded
	delayRTT  float64 // queue depth in RTT_est
	lastRTT   float64 // the last sample's depth, when not 0
	lossShare float64 // drops per forwarded packet
	notifies  int64   // per second
	emr       float64
}

func window(q queue, cfg Settings) Window {
	w := Window{Start: t0, End: t0.Add(4 * time.Second), Config: cfg, KBaseBytes: 65536,
		RTTEst: rtt, PortRateBitsPerSec: rateBitsPerSec}
	w.EffectiveKMaxBytes = int64(cfg.Alpha * bdpBytes)
	for i := range 5 {
		tx := int64(q.util * rateBitsPerSec / 8)
		pkts := tx / 1000
		w.Samples = append(w.Samples, Sample{
			Time:              t0.Add(time.Duration(i) * time.Second),
			QueueDepthBytes:   int64(q.delayRTT * bdpBytes),
			ECNMarkingPercent: q.emr,
			TxBytes:           tx, Packets: pkts, Drops: int64(q.lossShare * float64(pkts)),
			Notifications: Notifications{Notify: q.notifies},
		})
	}
	if q.lastRTT > 0 {
		w.Samples[4].QueueDepthBytes = int64(q.lastRTT * bdpBytes)
	}
	return w
}

// growing is a queue rising from 0.1 to 0.4 RTT_est over one RTT_est
// (10 ms): one RTT_est ahead it is at 0.7.
func growing(cfg Settings) Window {
	w := window(queue{util: 0.99}, cfg)
	w.End = t0.Add(10 * time.Millisecond)
	for i := range w.Samples {
		w.Samples[i].Time = t0.Add(time.Duration(i) * 2500 * time.Microsecond)
		w.Samples[i].QueueDepthBytes = int64((0.1 + 0.075*float64(i)) * bdpBytes)
		w.Samples[i].TxBytes = int64(0.99 * rateBitsPerSec / 8 * 0.0025)
	}
	return w
}

// draining is a queue falling from 0.9 to 0.6 RTT_est over one RTT_est:
// one RTT_est ahead at that pace it is at 0.3, below delay_high_rtt.
func draining(cfg Settings) Window {
	w := growing(cfg)
	for i := range w.Samples {
		w.Samples[i].QueueDepthBytes = int64((0.9 - 0.075*float64(i)) * bdpBytes)
	}
	return w
}

// steep is a queue rising by 0.6 RTT_est over one RTT_est from fromRTT:
// one RTT_est ahead at that pace it is at fromRTT + 1.2.
func steep(cfg Settings, fromRTT float64) Window {
	w := growing(cfg)
	for i := range w.Samples {
		w.Samples[i].QueueDepthBytes = int64((fromRTT + 0.15*float64(i)) * bdpBytes)
	}
	return w
}

func bdp(alpha float64, vgrowth int64) Settings {
	return Settings{KMaxMode: KMaxBDP, Alpha: alpha, VGrowthBytesPerSec: vgrowth}
}

const vg = 1_250_000_000

// pinnedWindow is a queue at 0.975 of a 4-BDP buffer losing 1 % of its
// packets, on a node that takes overload_cut (rule pinned).
func pinnedWindow(cfg Settings) Window {
	w := window(queue{util: 0.99, delayRTT: 3.9, lossShare: 0.01}, cfg)
	w.BufferBytes, w.OverloadCutSupported = 4*bdpBytes, true
	return w
}

// bufferLoss is a queue at delayRTT losing 1 % of its packets in front of
// a 4-BDP buffer, at alpha 1 (K_max under the queue).
func bufferLoss(delayRTT float64) Window {
	w := window(queue{util: 0.99, delayRTT: delayRTT, lossShare: 0.01}, bdp(1, vg))
	w.BufferBytes = 4 * bdpBytes
	return w
}

// calmWindow is a queue at 0.1 RTT_est (below K_min) on a full link, on
// a node that takes overload_cut, with the leaf on or off.
func calmWindow(on bool) Window {
	w := window(queue{util: 0.97, delayRTT: 0.1}, cut(bdp(1, vg), on))
	w.OverloadCutSupported = true
	return w
}

// qgrCostWindow is an under-used link (60 %) with a queue at 0.05 RTT_est,
// far under K_min, and the node cutting (20 notifications a second): rule
// qgr-off's evidence.
func qgrCostWindow(cfg Settings) Window {
	return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, cfg)
}

// vgOff is the V_growth rule qgr-off sets on the tests' port: its rate.
const vgOff = rateBitsPerSec / 8

// cut is s with overload_cut set to on.
func cut(s Settings, on bool) Settings { s.OverloadCut = on; return s }

func TestDecide(t *testing.T) {
	type result struct {
		Change bool
		Rule   Rule
		After  Settings
		Memory Memory
	}
	full := queue{util: 0.97, delayRTT: 0.3, notifies: 10, emr: 5}
	tests := []struct {
		desc   string
		cfg    func(*Config)
		window func() Window
		mem    Memory
		want   result
		reason string // a substring of the reason
	}{
		{
			desc:   "steady inside the dead band: no change",
			window: func() Window { return window(full, bdp(1, vg)) },
			want:   result{Rule: RuleSteady, After: bdp(1, vg)},
			reason: "dead band",
		},
		{
			desc: "too few samples: no decision",
			window: func() Window {
				w := window(full, bdp(1, vg))
				w.Samples = w.Samples[:2]
				w.End = w.Samples[1].Time
				return w
			},
			want:   result{Rule: RuleNoData, After: bdp(1, vg)},
			reason: "2 samples in the window, 3 needed",
		},
		{
			desc: "one sample: no decision, the noun in agreement",
			window: func() Window {
				w := window(full, bdp(1, vg))
				w.Samples = w.Samples[:1]
				w.End = w.Samples[0].Time
				return w
			},
			want:   result{Rule: RuleNoData, After: bdp(1, vg)},
			reason: "1 sample in the window, 3 needed",
		},
		{
			desc:   "no port rate: no decision",
			window: func() Window { w := window(full, bdp(1, vg)); w.PortRateBitsPerSec = 0; return w },
			want:   result{Rule: RuleNoData, After: bdp(1, vg)},
			reason: "no port rate",
		},
		{
			desc:   "alpha unknown: no decision",
			window: func() Window { return window(full, bdp(0, vg)) },
			want:   result{Rule: RuleNoData, After: bdp(0, vg)},
			reason: "alpha 0 unknown",
		},
		{
			desc:   "v-growth unknown: no decision",
			window: func() Window { return window(queue{util: 1, delayRTT: 3, lastRTT: 0.3}, bdp(1, -1)) },
			want:   result{Rule: RuleNoData, After: bdp(1, -1)},
			reason: "v-growth -1 unknown",
		},
		{
			desc:   "the QGR trigger off (v-growth 0): a standing queue lowers alpha to twice the queue, the trigger stays off",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window { return window(queue{util: 1, delayRTT: 3, lastRTT: 0.3}, bdp(1, 0)) },
			want: result{Change: true, Rule: RuleDelay, After: bdp(0.6, 0),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 2}},
		},
		{
			desc:   "a queue growing below V_growth: V_growth tightened, K_max kept",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window { return growing(bdp(1, 4*vg)) },
			want: result{Change: true, Rule: RuleGrowth, After: bdp(1, 2*vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 2, Changes: 2}},
			reason: "queue growing by 0.3 RTT_est per RTT_est",
		},
		{
			desc:   "a queue growing faster than V_growth: the QGR trigger fires, hold",
			window: func() Window { return growing(bdp(1, vg)) },
			want:   result{Rule: RuleFiring, After: bdp(1, vg)},
			reason: "the QGR trigger fires",
		},
		{
			desc: "loss with the queue above K_max: tightened all the same, V_growth only (no cut storm)",
			window: func() Window {
				return window(queue{util: 0.99, delayRTT: 1.5, lossShare: 0.01}, bdp(1, vg))
			},
			want: result{Change: true, Rule: RuleLoss, After: bdp(1, vg/2),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1, LossStreak: 1}},
			reason: "above the K_max a lower alpha would give",
		},
		{
			desc:   "V_growth at the port rate (a 2:1 incast grows the queue unseen): a growing queue switches it to the enable share at once",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window { return growing(bdp(1, rateBitsPerSec/8)) },
			want: result{Change: true, Rule: RuleGrowth, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 2, Changes: 2}},
		},
		{
			desc: "V_growth at the port rate and a queue growing faster than that: the trigger is as good as off, switched on (not firing, not overrun)",
			mem:  Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window {
				w := growing(bdp(2, rateBitsPerSec/8)) // K_max 2 RTT_est: above the queue, under it one RTT_est ahead
				for i := range w.Samples {
					w.Samples[i].QueueDepthBytes = int64((0.1 + 0.3*float64(i)) * bdpBytes) // 1.2 RTT_est per RTT_est
				}
				return w
			},
			want: result{Change: true, Rule: RuleGrowth, After: bdp(2, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 2, Changes: 2}},
		},
		{
			desc:   "V_growth just under the port rate: one step",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window { return growing(bdp(1, rateBitsPerSec/8-vg)) },
			want: result{Change: true, Rule: RuleGrowth, After: bdp(1, (rateBitsPerSec/8-vg)/2),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 2, Changes: 2}},
		},
		{
			desc:   "overrun: a queue the QGR trigger cuts that outgrows K_max one RTT_est ahead: K_max raised, V_growth kept",
			window: func() Window { return growing(bdp(0.5, vg)) }, // 0.7 RTT_est ahead, K_max 0.5
			want: result{Change: true, Rule: RuleOverrun, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 1,
					Lifted: bdp(0.5, vg), LiftedTrendRTT: 0.3}},
			reason: "K_max is raised",
		},
		{
			desc:   "overrun: a second step keeps the setting the overload started from",
			window: func() Window { return growing(bdp(0.3, vg)) },
			mem: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 1,
				Lifted: bdp(0.15, vg)},
			want: result{Change: true, Rule: RuleOverrun, After: bdp(0.6, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 2,
					Lifted: bdp(0.15, vg), LiftedTrendRTT: 0.3}},
		},
		{
			desc:   "overrun: no further lift when the last one did not slow the queue (the same pace): bound",
			window: func() Window { return growing(bdp(0.3, vg)) }, // 0.3 RTT_est per RTT_est
			mem: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 1,
				Lifted: bdp(0.15, vg), LiftedTrendRTT: 0.3},
			want:   result{Rule: RuleBound, After: bdp(0.3, vg)},
			reason: "the last lift did not slow the queue",
		},
		{
			desc:   "overrun: a further lift when the last one slowed the queue",
			window: func() Window { return growing(bdp(0.3, vg)) },
			mem: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 1,
				Lifted: bdp(0.15, vg), LiftedTrendRTT: 0.6},
			want: result{Change: true, Rule: RuleOverrun, After: bdp(0.6, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 2,
					Lifted: bdp(0.15, vg), LiftedTrendRTT: 0.3}},
		},
		{
			desc:   "overrun: the pace of an episode that ended is not compared (a new episode lifts)",
			window: func() Window { return growing(bdp(0.3, vg)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 1, LiftedTrendRTT: 0.3},
			want: result{Change: true, Rule: RuleOverrun, After: bdp(0.6, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 2,
					Lifted: bdp(0.3, vg), LiftedTrendRTT: 0.3}},
		},
		{
			desc:   "overrun: held by the cool-down like any change",
			window: func() Window { return growing(bdp(0.5, vg)) },
			mem:    Memory{LastChange: t0.Add(8 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 1, Lifted: bdp(0.25, vg)},
			want: result{Rule: RuleCooldown, After: bdp(0.5, vg),
				Memory: Memory{LastChange: t0.Add(8 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 1, Lifted: bdp(0.25, vg)}},
		},
		{
			desc:   "overrun: not while a loosening is rejected",
			window: func() Window { return growing(bdp(0.5, vg)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Changes: 1, Rejected: Loosen, RejectedUntil: t0.Add(time.Minute)},
			want: result{Rule: RuleRejected, After: bdp(0.5, vg),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Changes: 1, Rejected: Loosen, RejectedUntil: t0.Add(time.Minute)}},
		},
		{
			desc:   "overrun: K_max lifted at most to overrun_ceiling_bdp (4 BDP)",
			window: func() Window { return steep(bdp(3, vg), 2) }, // 3.2 RTT_est ahead, K_max 3
			want: result{Change: true, Rule: RuleOverrun, After: bdp(4, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 1,
					Lifted: bdp(3, vg), LiftedTrendRTT: 0.6}},
		},
		{
			desc:   "overrun: K_max at the ceiling already: nothing moves (bound)",
			window: func() Window { return steep(bdp(4, vg), 3) }, // 4.2 RTT_est ahead, K_max 4
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)},
			want: result{Rule: RuleBound, After: bdp(4, vg),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)}},
			reason: "overrun ceiling of 4 BDP",
		},
		{
			desc: "overrun: an explicit kmax is lifted at most to the ceiling too",
			window: func() Window {
				return steep(Settings{KMaxMode: KMaxExplicit, KMaxBytes: 3 * bdpBytes, VGrowthBytesPerSec: vg}, 2)
			},
			want: result{Change: true, Rule: RuleOverrun, After: Settings{KMaxMode: KMaxExplicit, KMaxBytes: 4 * bdpBytes, VGrowthBytesPerSec: vg},
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 1,
					Lifted: Settings{KMaxMode: KMaxExplicit, KMaxBytes: 3 * bdpBytes, VGrowthBytesPerSec: vg}, LiftedTrendRTT: 0.6}},
		},
		{
			desc:   "overrun: no ceiling with overrun_ceiling_bdp 0",
			cfg:    func(c *Config) { c.OverrunCeilingBDP = 0 },
			window: func() Window { return steep(bdp(3, vg), 2) },
			want: result{Change: true, Rule: RuleOverrun, After: bdp(6, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 1,
					Lifted: bdp(3, vg), LiftedTrendRTT: 0.6}},
		},
		{
			desc:   "no overrun when K_max stays above the queue one RTT_est ahead: the QGR trigger fires, hold",
			window: func() Window { return growing(bdp(0.8, vg)) },
			want:   result{Rule: RuleFiring, After: bdp(0.8, vg)},
		},
		{
			desc:   "settle: the overload over, the queue under the K_max of before: K_max back by a step",
			window: func() Window { return window(queue{util: 0.95, delayRTT: 0.3}, bdp(4, vg)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)},
			// A reversal: the step halves to 1.5.
			want: result{Change: true, Rule: RuleSettle, After: bdp(2.667, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 1.5, Changes: 3, Lifted: bdp(1, vg)}},
			reason: "the overload is over",
		},
		{
			desc:   "settle_whole: the whole lift back in one change, which ends the episode",
			cfg:    func(c *Config) { c.SettleWhole = true },
			window: func() Window { return window(queue{util: 0.95, delayRTT: 0.3}, bdp(4, vg)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)},
			want: result{Change: true, Rule: RuleSettle, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 1.5, Changes: 3}},
			reason: "the whole lift at once (settle_whole)",
		},
		{
			desc:   "settle: never below the setting of before, which ends the episode",
			window: func() Window { return window(queue{util: 0.95, delayRTT: 0.3}, bdp(1.2, vg)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Tighten, Step: 2, Changes: 3, Lifted: bdp(1, vg)},
			want: result{Change: true, Rule: RuleSettle, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 4}},
		},
		{
			desc:   "settle: not while the queue is above the K_max of before",
			window: func() Window { return window(queue{util: 0.8, delayRTT: 1.5}, bdp(4, vg)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)},
			want: result{Rule: RuleSteady, After: bdp(4, vg),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)}},
		},
		{
			desc:   "while K_max is lifted, a standing queue above the K_max of before is the overload's: no tightening",
			window: func() Window { return window(queue{util: 0.95, delayRTT: 1.5}, bdp(4, vg)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)},
			want: result{Rule: RuleFiring, After: bdp(4, vg),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)}},
			reason: "K_max is lifted",
		},
		{
			desc: "while K_max is lifted, loss ends the overrun: K_max back to the setting before it at once",
			window: func() Window {
				return window(queue{util: 0.95, delayRTT: 0.3, lossShare: 0.01}, bdp(4, vg))
			},
			mem: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)},
			want: result{Change: true, Rule: RuleLoss, After: bdp(1, 833_333_333),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 1.5, Changes: 3, LossStreak: 1}},
			reason: "loss ends the overrun",
		},
		{
			desc: "loss in the last change's judge window (LossSeen): the next decision tightens for it",
			window: func() Window {
				return window(queue{util: 0.95, delayRTT: 0.3}, bdp(1, vg))
			},
			mem: Memory{LastChange: t0.Add(-time.Minute), Changes: 2, LossSeen: 0.01},
			want: result{Change: true, Rule: RuleLoss, After: bdp(0.5, 625_000_000),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 3, LossStreak: 1}},
			reason: "in the last change's judge window",
		},
		{
			desc:   "overrun: K_max lifted at most to overrun_ceiling_buffer_share of the port's buffer",
			window: func() Window { w := steep(bdp(1, vg), 2); w.BufferBytes = 4 * bdpBytes; return w }, // ceiling 2 BDP
			want: result{Change: true, Rule: RuleOverrun, After: bdp(2, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 1,
					Lifted: bdp(1, vg), LiftedTrendRTT: 0.6}},
		},
		{
			desc:   "overrun: K_max at half the buffer already: nothing moves (bound)",
			window: func() Window { w := steep(bdp(2, vg), 2); w.BufferBytes = 4 * bdpBytes; return w },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)},
			want: result{Rule: RuleBound, After: bdp(2, vg),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)}},
			reason: "overrun ceiling of 2 BDP",
		},
		{
			desc: "overrun: an explicit kmax is held under half the buffer too",
			window: func() Window {
				w := steep(Settings{KMaxMode: KMaxExplicit, KMaxBytes: 1 * bdpBytes, VGrowthBytesPerSec: vg}, 2)
				w.BufferBytes = 3 * bdpBytes
				return w
			},
			want: result{Change: true, Rule: RuleOverrun, After: Settings{KMaxMode: KMaxExplicit, KMaxBytes: 3 * bdpBytes / 2, VGrowthBytesPerSec: vg},
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 1,
					Lifted: Settings{KMaxMode: KMaxExplicit, KMaxBytes: 1 * bdpBytes, VGrowthBytesPerSec: vg}, LiftedTrendRTT: 0.6}},
		},
		{
			desc:   "settle: not while the queue still grows faster than V_growth",
			window: func() Window { return growing(bdp(4, vg)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)},
			want: result{Rule: RuleFiring, After: bdp(4, vg),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)}},
		},
		{
			desc:   "settle: an overrun rolled back (K_max back already) ends the episode without a change",
			window: func() Window { return window(queue{util: 0.95, delayRTT: 0.3}, bdp(1, vg)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Changes: 1, Lifted: bdp(1, vg)},
			want: result{Rule: RuleSteady, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Changes: 1}},
		},
		{
			desc: "settle at the K_base floor: K_max cannot go back, the lift is dropped (no firing for ever)",
			window: func() Window {
				w := window(queue{util: 0.95, delayRTT: 0.3}, bdp(4, vg))
				w.KBaseBytes = 5 * bdpBytes // RTT_est fell: K_max on its K_base floor
				w.EffectiveKMaxBytes = w.KBaseBytes
				return w
			},
			mem: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)},
			want: result{Rule: RuleBound, After: bdp(4, vg),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2}},
			reason: "the overrun's lift is dropped",
		},
		{
			desc:   "an alpha of before that rounds up to the current one (3 digits): K_max is back, the lift ends before any rule (no bound settle a window later)",
			window: func() Window { return window(queue{util: 0.95, delayRTT: 0.3}, bdp(1, vg)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(0.9995, vg)},
			want: result{Rule: RuleSteady, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2}},
			reason: "inside the dead band",
		},
		{
			desc:   "settle never raises K_max: an alpha of before rounding up above the current one (1 over 0.9995) is K_max back already: the lift ends, alpha kept (the floor used to be patched in after the step, to 1)",
			window: func() Window { return window(queue{util: 0.95, delayRTT: 0.3}, bdp(0.9995, vg)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(0.9991, vg)},
			want: result{Rule: RuleSteady, After: bdp(0.9995, vg),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2}},
			reason: "inside the dead band",
		},
		{
			desc: "settle band: a queue growing between settle_growth_share·V_growth and V_growth neither settles nor overruns",
			// growth 3.75 GB/s, V_growth 4.2 GB/s: 0.89 of it
			window: func() Window { return growing(bdp(4, 4_200_000_000)) },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(0.5, 4_200_000_000)},
			want: result{Rule: RuleFiring, After: bdp(4, 4_200_000_000),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(0.5, 4_200_000_000)}},
			reason: "K_max is lifted",
		},
		{
			desc:   "settle band: the same growth under settle_growth_share·V_growth settles",
			window: func() Window { return growing(bdp(4, 5_000_000_000)) }, // 0.75 of V_growth
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(0.5, 5_000_000_000)},
			want: result{Change: true, Rule: RuleSettle, After: bdp(2.667, 5_000_000_000),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 1.5, Changes: 3, Lifted: bdp(0.5, 5_000_000_000)}},
			reason: "under settle_growth_share",
		},
		{
			desc: "settle in explicit K_max mode: kmax back by a step",
			window: func() Window {
				return window(queue{util: 0.95, delayRTT: 0.3}, Settings{KMaxMode: KMaxExplicit, KMaxBytes: 4 * bdpBytes, VGrowthBytesPerSec: vg})
			},
			mem: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2,
				Lifted: Settings{KMaxMode: KMaxExplicit, KMaxBytes: bdpBytes, VGrowthBytesPerSec: vg}},
			want: result{Change: true, Rule: RuleSettle, After: Settings{KMaxMode: KMaxExplicit, KMaxBytes: 333_333_333, VGrowthBytesPerSec: vg},
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 1.5, Changes: 3,
					Lifted: Settings{KMaxMode: KMaxExplicit, KMaxBytes: bdpBytes, VGrowthBytesPerSec: vg}}},
			reason: "the overload is over",
		},
		{
			desc: "settle in explicit K_max mode: never below the kmax of before, which ends the episode",
			window: func() Window {
				return window(queue{util: 0.95, delayRTT: 0.3}, Settings{KMaxMode: KMaxExplicit, KMaxBytes: 150_000_000, VGrowthBytesPerSec: vg})
			},
			mem: Memory{LastChange: t0.Add(-time.Minute), Direction: Tighten, Step: 2, Changes: 3,
				Lifted: Settings{KMaxMode: KMaxExplicit, KMaxBytes: bdpBytes, VGrowthBytesPerSec: vg}},
			want: result{Change: true, Rule: RuleSettle, After: Settings{KMaxMode: KMaxExplicit, KMaxBytes: bdpBytes, VGrowthBytesPerSec: vg},
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 4}},
		},
		{
			desc: "the lift is cleared by a K_max mode change (alpha lifted, the queue now in explicit mode)",
			window: func() Window {
				return window(queue{util: 0.95, delayRTT: 0.3}, Settings{KMaxMode: KMaxExplicit, KMaxBytes: 4 * bdpBytes, VGrowthBytesPerSec: vg})
			},
			mem: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)},
			want: result{Rule: RuleSteady, After: Settings{KMaxMode: KMaxExplicit, KMaxBytes: 4 * bdpBytes, VGrowthBytesPerSec: vg},
				Memory: Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2}},
		},
		{
			desc:   "settle held by a rejected tightening: no change, the lift kept",
			window: func() Window { return window(queue{util: 0.95, delayRTT: 0.3}, bdp(4, vg)) },
			mem: Memory{LastChange: t0.Add(-time.Minute), Changes: 2, Lifted: bdp(1, vg),
				Rejected: Tighten, RejectedUntil: t0.Add(time.Minute)},
			want: result{Rule: RuleRejected, After: bdp(4, vg),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Changes: 2, Lifted: bdp(1, vg),
					Rejected: Tighten, RejectedUntil: t0.Add(time.Minute)}},
			reason: "K_max back; but the last tighten was rolled back",
		},
		{
			desc: "a queue under K_base is no congestion: a one-packet queue on a 2 µs port holds",
			window: func() Window {
				w := window(queue{util: 0.99}, bdp(1, vg))
				w.RTTEst = 2 * time.Microsecond // one RTT_est is 25 kB at 100 Gbit/s
				w.Samples[4].QueueDepthBytes = 4158
				w.EffectiveKMaxBytes = w.KBaseBytes
				return w
			},
			want: result{Rule: RuleSteady, After: bdp(1, vg)},
		},
		{
			desc: "loosening alpha that leaves K_max on its K_base floor: alpha kept",
			mem:  Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window {
				w := window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(0.5, vg/2))
				w.KBaseBytes = 4 * bdpBytes
				w.EffectiveKMaxBytes = w.KBaseBytes
				return w
			},
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(0.5, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 2}},
			reason: "K_max stays at its K_base floor",
		},
		{
			desc:   "a queue above delay_high_rtt draining below it within one RTT_est: hold",
			window: func() Window { return draining(bdp(1, vg)) },
			want:   result{Rule: RuleDraining, After: bdp(1, vg)},
			reason: "draining by 0.3 RTT_est per RTT_est",
		},
		{
			desc: "a queue above delay_high_rtt draining, but not below it within one RTT_est: tightened",
			window: func() Window {
				w := draining(bdp(4, vg))
				for i := range w.Samples {
					w.Samples[i].QueueDepthBytes += bdpBytes // 1.9 to 1.6 RTT_est
				}
				return w
			},
			// K_max no lower than twice the queue: 3.2 RTT_est.
			want: result{Change: true, Rule: RuleDelay, After: bdp(3.2, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc:   "a growing queue with the QGR trigger off: switched on at the YANG default",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window { return growing(bdp(1, 0)) },
			want: result{Change: true, Rule: RuleGrowth, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 2, Changes: 2}},
		},
		{
			desc:   "a growing queue with V_growth at its minimum: alpha instead, down to the queue one window ahead",
			cfg:    func(c *Config) { c.VGrowthMinShare, c.VGrowthStartShare = 0.4, 0.4 },
			window: func() Window { return growing(bdp(1, 4*vg)) },
			want: result{Change: true, Rule: RuleGrowth, After: bdp(0.7, 4*vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc:   "the QGR trigger off: loosening leaves it off",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(0.5, 0)) },
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(1, 0),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 2}},
		},
		{
			desc:   "the QGR trigger off and v_growth_start_share 0: a growing queue lowers alpha instead",
			cfg:    func(c *Config) { c.VGrowthStartShare = 0 },
			window: func() Window { return growing(bdp(1, 0)) },
			want: result{Change: true, Rule: RuleGrowth, After: bdp(0.7, 0),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc: "gap inside the window: no decision",
			cfg:  func(c *Config) { c.MaxGap = 2 * time.Second },
			window: func() Window {
				w := window(queue{util: 1, delayRTT: 3, lastRTT: 0.3}, bdp(1, vg))
				w.Samples = append(w.Samples[:2:2], w.Samples[4])
				return w
			},
			want:   result{Rule: RuleGap, After: bdp(1, vg)},
			reason: "gap of 3s",
		},
		{
			desc: "no sample near the window's end: no decision",
			window: func() Window {
				w := window(queue{util: 1, delayRTT: 3, lastRTT: 0.3}, bdp(1, vg))
				w.End = w.End.Add(10 * time.Second)
				return w
			},
			want:   result{Rule: RuleGap, After: bdp(1, vg)},
			reason: "before the window's end",
		},
		{
			desc: "samples out of order: no decision",
			window: func() Window {
				w := window(queue{util: 1, delayRTT: 3, lastRTT: 0.3}, bdp(1, vg))
				w.Samples[2].Time = w.Samples[1].Time
				return w
			},
			want:   result{Rule: RuleGap, After: bdp(1, vg)},
			reason: "out of time order",
		},
		{
			desc:   "standing queue on a full link: tighten by the full step",
			window: func() Window { return window(queue{util: 0.99, delayRTT: 2, lastRTT: 0.1}, bdp(1, vg)) },
			want: result{Change: true, Rule: RuleDelay, After: bdp(0.5, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
			reason: "queueing delay 1.62 RTT_est",
		},
		{
			desc: "fast attack: a queue growing through delay_high_rtt is tightened in the window it crosses it",
			window: func() Window {
				w := window(queue{util: 0.99, delayRTT: 0.2}, bdp(1, vg))
				w.Samples[4].QueueDepthBytes = bdpBytes * 3 / 4 // mean 0.31, last 0.75 RTT_est
				return w
			},
			// One window ahead the queue is at 1.3 RTT_est: above K_max,
			// so alpha stays; V_growth is tightened.
			want: result{Change: true, Rule: RuleDelay, After: bdp(1, vg/2),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
			reason: "mean 0.31, last 0.75",
		},
		{
			desc: "a queue crossing delay_high_rtt, V_growth at its minimum: K_max down to where the queue will be",
			cfg:  func(c *Config) { c.VGrowthMinShare = 0.1 },
			window: func() Window {
				return window(queue{util: 0.99, delayRTT: 0.4, lastRTT: 0.6}, bdp(1, vg))
			},
			// Mean 0.44, last 0.6: crossing, not standing. One window ahead
			// the queue is at 0.8 RTT_est (2·last − first).
			want: result{Change: true, Rule: RuleDelay, After: bdp(0.8, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc: "slow release: an under-used link whose queue rose again in the last sample holds",
			window: func() Window {
				w := window(queue{util: 0.6, delayRTT: 0.02, notifies: 20}, bdp(1, vg))
				w.Samples[4].QueueDepthBytes = bdpBytes / 2
				return w
			},
			want: result{Rule: RuleSteady, After: bdp(1, vg)},
		},
		{
			desc:   "a queue above K_max: the QD trigger fires, hold",
			window: func() Window { return window(queue{util: 0.99, delayRTT: 1.5}, bdp(1, vg)) },
			want:   result{Rule: RuleFiring, After: bdp(1, vg)},
			reason: "the QD trigger fires",
		},
		{
			desc: "explicit K_max over a queue crossing delay_high_rtt: no lower than twice the queue one window ahead, V_growth instead",
			window: func() Window {
				return window(queue{util: 0.99, delayRTT: 0.4, lastRTT: 0.6}, Settings{KMaxMode: KMaxExplicit, KMaxBytes: bdpBytes, VGrowthBytesPerSec: vg})
			},
			want: result{Change: true, Rule: RuleDelay,
				After:  Settings{KMaxMode: KMaxExplicit, KMaxBytes: bdpBytes, VGrowthBytesPerSec: vg / 2},
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc:   "a standing queue above K_min: K_max no lower than twice the queue, and V_growth would not shorten it: nothing moves",
			window: func() Window { return window(queue{util: 0.99, delayRTT: 0.8}, bdp(1, vg)) },
			want:   result{Rule: RuleBound, After: bdp(1, vg)},
			reason: "2 × the queue (100000000 B, 100000000 B one window ahead: K_min at 1 × the queue) is above the K_max a lower alpha would give: alpha kept, the queue stands (the window's mean above delay_high_rtt): V_growth would not shorten it, V_growth kept",
		},
		{
			desc:   "standing_floor_share 1.2: a standing queue above K_min lowers alpha to 1.2 × the queue (K_min under it)",
			cfg:    func(c *Config) { c.StandingFloorShare = 1.2 },
			window: func() Window { return window(queue{util: 0.99, delayRTT: 0.8}, bdp(1, vg)) },
			want: result{Change: true, Rule: RuleDelay, After: bdp(0.96, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc:   "standing_floor_share 1.5: a standing queue at 0.8 RTT_est, 1.5 × it above K_max: nothing moves",
			cfg:    func(c *Config) { c.StandingFloorShare = 1.5 },
			window: func() Window { return window(queue{util: 0.99, delayRTT: 0.8}, bdp(1, vg)) },
			want:   result{Rule: RuleBound, After: bdp(1, vg)},
			reason: "1.5 × the queue (100000000 B, 100000000 B one window ahead: K_min at 0.75 × the queue) is above the K_max a lower alpha would give: alpha kept, the queue stands",
		},
		{
			desc: "standing_floor_share 1: explicit K_max over a standing queue goes down to the queue itself",
			cfg:  func(c *Config) { c.StandingFloorShare = 1 },
			window: func() Window {
				return window(queue{util: 0.99, delayRTT: 0.8}, Settings{KMaxMode: KMaxExplicit, KMaxBytes: bdpBytes, VGrowthBytesPerSec: vg})
			},
			want: result{Change: true, Rule: RuleDelay,
				After:  Settings{KMaxMode: KMaxExplicit, KMaxBytes: bdpBytes * 8 / 10, VGrowthBytesPerSec: vg},
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc: "standing_floor_share 1 leaves a queue crossing delay_high_rtt to twice the queue: V_growth instead",
			cfg:  func(c *Config) { c.StandingFloorShare = 1 },
			window: func() Window {
				return window(queue{util: 0.99, delayRTT: 0.4, lastRTT: 0.6}, bdp(1, vg))
			},
			want: result{Change: true, Rule: RuleDelay, After: bdp(1, vg/2),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc:   "a standing queue above K_min, V_growth at its minimum: K_max not down to the queue either",
			cfg:    func(c *Config) { c.VGrowthMinShare = 0.1 },
			window: func() Window { return window(queue{util: 0.99, delayRTT: 0.8}, bdp(1, vg)) },
			want:   result{Rule: RuleBound, After: bdp(1, vg)},
		},
		{
			// The fall-back's other arm (V_growth not tuned; the crossing
			// queue with V_growth at its minimum is above). A standing
			// queue with V_growth not tuned, as this row was, took the
			// row before's path to the same result: nothing new.
			desc: "a queue crossing delay_high_rtt, V_growth not tuned: K_max down to where the queue will be",
			cfg:  func(c *Config) { c.TuneVGrowth = false },
			window: func() Window {
				return window(queue{util: 0.99, delayRTT: 0.4, lastRTT: 0.6}, bdp(1, vg))
			},
			want: result{Change: true, Rule: RuleDelay, After: bdp(0.8, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc: "explicit K_max over a standing queue, V_growth not tuned: no lower than twice the queue, so kept",
			cfg:  func(c *Config) { c.TuneVGrowth = false },
			window: func() Window {
				return window(queue{util: 0.99, delayRTT: 0.8}, Settings{KMaxMode: KMaxExplicit, KMaxBytes: bdpBytes, VGrowthBytesPerSec: vg})
			},
			want:   result{Rule: RuleBound, After: Settings{KMaxMode: KMaxExplicit, KMaxBytes: bdpBytes, VGrowthBytesPerSec: vg}},
			reason: "is above the K_max a lower kmax would give: kmax kept, the queue stands",
		},
		{
			desc:   "drops: tighten even with a short queue",
			window: func() Window { return window(queue{util: 0.8, delayRTT: 0.1, lossShare: 0.01}, bdp(1, vg)) },
			want: result{Change: true, Rule: RuleLoss, After: bdp(0.5, vg/2),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1, LossStreak: 1}},
			reason: "0.01 of packets dropped or paused",
		},
		{
			desc:   "under-used link with throttled senders: loosen, up to the starting point",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(0.5, vg/2)) },
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 2}},
			reason: "link 60.0% used",
		},
		{
			// Train seed 33 (a 6:1 load step at 372 Gbit/s): under-use loosened
			// alpha to 2 and V_growth to 0.3 × R_port on quiet windows just
			// before the step, then V_growth to R_port after it.
			desc:   "under-use guard: K_max and V_growth at the starting point (alpha 1, v_growth_start_share × R_port): nothing moves",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(1, vg)) },
			want:   result{Rule: RuleBound, After: bdp(1, vg)},
			reason: "alpha 1 is at or above the under-use ceiling of 1 BDP (under_use_ceiling_bdp 1: under-use never loosens K_max past the starting point): alpha kept, v-growth 1250000000 B/s is at or above the under-use ceiling of 1250000000 B/s (v_growth_start_share 0.1 of R_port): v-growth kept",
		},
		{
			// Retired held-out seed 14006: under-use held at the starting
			// point while the QGR trigger cut a queue far under K_min.
			desc:   "qgr-off: under-use at the guard, cuts with the queue under K_min for qgr_off_rtt: V_growth to R_port",
			cfg:    func(c *Config) { c.QGROffRTT = 2 },
			mem:    Memory{Changes: 1},
			window: func() Window { return qgrCostWindow(cut(bdp(1, vg), true)) },
			want: result{Change: true, Rule: RuleQGROff, After: cut(bdp(1, vgOff), true),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Changes: 2, QGROff: true}},
			reason: "the QGR trigger's cuts cost the link and the queue is the first-level loop's, for 400 RTT_est (qgr_off_rtt 2): the QGR trigger as good as off (V_growth at R_port, 12500000000 B/s)",
		},
		{
			desc: "qgr-off: one cut, the noun in agreement",
			cfg:  func(c *Config) { c.QGROffRTT = 2 },
			mem:  Memory{Changes: 1},
			window: func() Window {
				w := qgrCostWindow(cut(bdp(1, vg), true))
				for i := range w.Samples {
					w.Samples[i].Notifications.Notify = 0
				}
				w.Samples[4].Notifications.Notify = 1
				return w
			},
			want: result{Change: true, Rule: RuleQGROff, After: cut(bdp(1, vgOff), true),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Changes: 2, QGROff: true}},
			reason: "1 cut with the queue under K_min",
		},
		{
			desc:   "qgr-off off (qgr_off_rtt 0): the guard holds, no count",
			cfg:    func(c *Config) { c.QGROffRTT = 0 },
			mem:    Memory{Changes: 1},
			window: func() Window { return qgrCostWindow(cut(bdp(1, vg), true)) },
			want:   result{Rule: RuleBound, After: cut(bdp(1, vg), true)},
			reason: "v-growth 1250000000 B/s is at or above the under-use ceiling",
		},
		{
			// Train seed 33 (a 6:1 load-up): on the draft's node the QGR
			// trigger is the early answer to a load step.
			desc:   "qgr-off: a node without overload_cut: no count, the trigger stays on",
			cfg:    func(c *Config) { c.QGROffRTT = 2 },
			mem:    Memory{Changes: 1},
			window: func() Window { return qgrCostWindow(bdp(1, vg)) },
			want:   result{Rule: RuleBound, After: bdp(1, vg), Memory: Memory{Changes: 1}},
			reason: "v-growth 1250000000 B/s is at or above the under-use ceiling",
		},
		{
			desc:   "qgr-off: evidence shorter than qgr_off_rtt: the count starts",
			cfg:    func(c *Config) { c.QGROffRTT = 1000 },
			mem:    Memory{Changes: 1},
			window: func() Window { return qgrCostWindow(cut(bdp(1, vg), true)) },
			want:   result{Rule: RuleBound, After: cut(bdp(1, vg), true), Memory: Memory{Changes: 1, QGRCostSince: t0}},
		},
		{
			desc:   "qgr-off: twice the evidence after the trigger came back on once",
			cfg:    func(c *Config) { c.QGROffRTT = 150 },
			mem:    Memory{Changes: 3, QGROffBacks: 1},
			window: func() Window { return qgrCostWindow(cut(bdp(1, vg), true)) },
			want: result{Change: true, Rule: RuleQGROff, After: cut(bdp(1, vgOff), true),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Changes: 4, QGROff: true, QGROffBacks: 1}},
			reason: "(qgr_off_rtt 150 × 2^1, the trigger back on 1 time since the tuner switched it off)",
		},
		{
			desc:   "qgr-off: four times after twice: not yet",
			cfg:    func(c *Config) { c.QGROffRTT = 150 },
			mem:    Memory{Changes: 3, QGROffBacks: 2},
			window: func() Window { return qgrCostWindow(cut(bdp(1, vg), true)) },
			want:   result{Rule: RuleBound, After: cut(bdp(1, vg), true), Memory: Memory{Changes: 3, QGROffBacks: 2, QGRCostSince: t0}},
		},
		{
			desc:   "qgr-off: the trigger found on again after the tuner switched it off: counted, the evidence restarts at twice",
			cfg:    func(c *Config) { c.QGROffRTT = 300 },
			mem:    Memory{Changes: 3, QGROff: true},
			window: func() Window { return qgrCostWindow(cut(bdp(1, vg), true)) },
			want:   result{Rule: RuleBound, After: cut(bdp(1, vg), true), Memory: Memory{Changes: 3, QGROffBacks: 1, QGRCostSince: t0}},
		},
		{
			desc: "qgr-off: a sample's peak at K_min (ECN marks, the QD trigger near): no evidence, the count restarts",
			cfg:  func(c *Config) { c.QGROffRTT = 2 },
			mem:  Memory{Changes: 1, QGRCostSince: t0.Add(-time.Minute)},
			window: func() Window {
				w := qgrCostWindow(cut(bdp(1, vg), true))
				w.Samples[2].PeakQueueDepthBytes = bdpBytes / 2
				return w
			},
			want: result{Rule: RuleBound, After: cut(bdp(1, vg), true), Memory: Memory{Changes: 1}},
		},
		{
			desc:   "qgr-off: marks but no cuts: not the trigger's doing",
			cfg:    func(c *Config) { c.QGROffRTT = 2 },
			mem:    Memory{Changes: 1},
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, emr: 5}, bdp(1, vg)) },
			want:   result{Rule: RuleBound, After: bdp(1, vg)},
		},
		{
			desc:   "qgr-off: V_growth under the starting point: under-use loosens it, the trigger stays on",
			cfg:    func(c *Config) { c.QGROffRTT = 2 },
			mem:    Memory{Changes: 1},
			window: func() Window { return qgrCostWindow(cut(bdp(0.5, vg/2), true)) },
			want: result{Change: true, Rule: RuleUnderUse, After: cut(bdp(1, vg), true),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 2}},
		},
		{
			desc:   "qgr-off: a loosening rolled back just now: held (rejected)",
			cfg:    func(c *Config) { c.QGROffRTT = 2 },
			mem:    Memory{Changes: 2, Rejected: Loosen, RejectedUntil: t0.Add(time.Hour)},
			window: func() Window { return qgrCostWindow(cut(bdp(1, vg), true)) },
			want:   result{Rule: RuleRejected, After: cut(bdp(1, vg), true), Memory: Memory{Changes: 2, Rejected: Loosen, RejectedUntil: t0.Add(time.Hour), QGRCostSince: t0}},
		},
		{
			desc:   "qgr-off: a growth the first-level loop can hold (one RTT_est ahead under K_max) leaves the trigger off",
			cfg:    func(c *Config) { c.QGROffRTT = 2 },
			mem:    Memory{Changes: 2, QGROff: true},
			window: func() Window { return growing(bdp(1, vgOff)) },
			want:   result{Rule: RuleBound, After: bdp(1, vgOff)},
			reason: "but rule qgr-off switched the QGR trigger off and the queue one RTT_est ahead (0.7 RTT_est) stays under K_max (1 RTT_est): the first-level loop's, the trigger kept off",
		},
		{
			desc:   "qgr-off: the same growth on a trigger the tuner did not switch off switches it on (the growth rule as before)",
			cfg:    func(c *Config) { c.QGROffRTT = 2 },
			mem:    Memory{Changes: 2},
			window: func() Window { return growing(bdp(1, vgOff)) },
			want: result{Change: true, Rule: RuleGrowth, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 2, Changes: 3}},
		},
		{
			desc:   "qgr-off: the way back on: a growth the first-level loop does not stop (above K_max one RTT_est ahead) switches the trigger on at the starting point",
			cfg:    func(c *Config) { c.QGROffRTT = 2 },
			mem:    Memory{Changes: 2, QGROff: true, QGRCostSince: t0.Add(-time.Minute)},
			window: func() Window { return steep(bdp(1, vgOff), 0.2) },
			want: result{Change: true, Rule: RuleGrowth, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 2, Changes: 3, QGROff: true}},
		},
		{
			desc:   "qgr-off: the way back on: loss switches the trigger on",
			cfg:    func(c *Config) { c.QGROffRTT = 2 },
			mem:    Memory{Changes: 2, QGROff: true},
			window: func() Window { return window(queue{util: 0.99, delayRTT: 0.3, lossShare: 0.01}, bdp(1, vgOff)) },
			want: result{Change: true, Rule: RuleLoss, After: bdp(0.5, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 3, LossStreak: 1, QGROff: true}},
		},
		{
			desc:   "under-use guard: a step clamped at the starting point",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(0.75, 937_500_000)) },
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 2}},
		},
		{
			desc:   "under-use guard: alpha set above the starting point by an operator is kept, V_growth under it still moves",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(2, vg/2)) },
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(2, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 2}},
			reason: "alpha 2 is at or above the under-use ceiling of 1 BDP",
		},
		{
			desc:   "under-use guard: V_growth set above the starting point is kept, alpha under it still moves",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(0.5, 3*vg)) },
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(1, 3*vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 2}},
			reason: "v-growth 3750000000 B/s is at or above the under-use ceiling of 1250000000 B/s",
		},
		{
			desc:   "under-use guard off (under_use_ceiling_bdp 0): loosened past the starting point by the step",
			cfg:    func(c *Config) { c.UnderUseCeilingBDP = 0 },
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(1, vg)) },
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(2, 2*vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 1}},
		},
		{
			desc: "under-use: K_max loosened at most to overrun_ceiling_buffer_share of the port's buffer, V_growth as the step",
			mem:  Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window {
				w := window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(0.4, vg/2))
				w.BufferBytes = bdpBytes // ceiling 0.5 BDP, under the guard's 1
				return w
			},
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(0.5, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 2}},
		},
		{
			desc: "under-use: K_max at half the buffer already: alpha kept, V_growth loosened",
			mem:  Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window {
				w := window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(0.5, vg/2))
				w.BufferBytes = bdpBytes
				return w
			},
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(0.5, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 2}},
			reason: "under-use ceiling of 0.5 BDP (under_use_ceiling_bdp 1, overrun_ceiling_buffer_share 0.5 of a 125000000 B buffer",
		},
		{
			desc: "under-use: an explicit kmax is held under half the buffer too",
			mem:  Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window {
				w := window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, Settings{KMaxMode: KMaxExplicit, KMaxBytes: 0.4 * bdpBytes, VGrowthBytesPerSec: vg / 2})
				w.EffectiveKMaxBytes = 0.4 * bdpBytes
				w.BufferBytes = bdpBytes
				return w
			},
			want: result{Change: true, Rule: RuleUnderUse, After: Settings{KMaxMode: KMaxExplicit, KMaxBytes: 0.5 * bdpBytes, VGrowthBytesPerSec: vg},
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 2}},
		},
		{
			desc: "under-use guard: an explicit kmax is held at one BDP",
			mem:  Memory{Changes: 1}, // not the queue's first decision (rule start)
			window: func() Window {
				w := window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, Settings{KMaxMode: KMaxExplicit, KMaxBytes: 0.8 * bdpBytes, VGrowthBytesPerSec: vg / 2})
				w.EffectiveKMaxBytes = 0.8 * bdpBytes
				return w
			},
			want: result{Change: true, Rule: RuleUnderUse, After: Settings{KMaxMode: KMaxExplicit, KMaxBytes: bdpBytes, VGrowthBytesPerSec: vg},
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 2}},
		},
		{
			desc: "under-used link whose only notifications are Resumes: the node is releasing the senders, no change",
			window: func() Window {
				w := window(queue{util: 0.6, delayRTT: 0.05}, bdp(1, vg))
				for i := range w.Samples {
					w.Samples[i].Notifications = Notifications{Resume: 20}
				}
				return w
			},
			want: result{Rule: RuleSteady, After: bdp(1, vg)},
		},
		{
			desc: "an idle link whose node still reports the marking rate it last measured: no packets, no marks, no change",
			window: func() Window {
				w := window(queue{util: 0, delayRTT: 0, emr: 100}, bdp(1, vg))
				for i := range w.Samples {
					w.Samples[i].Packets = 0
				}
				return w
			},
			want: result{Rule: RuleSteady, After: bdp(1, vg)},
		},
		{
			desc:   "under-used link without notifications or marks: no demand, no change",
			window: func() Window { return window(queue{util: 0.3, delayRTT: 0}, bdp(1, vg)) },
			want:   result{Rule: RuleSteady, After: bdp(1, vg)},
		},
		{
			desc:   "many notifications on a full link: V_growth up only",
			window: func() Window { return window(queue{util: 0.97, delayRTT: 0.3, notifies: 100_000}, bdp(1, vg)) },
			want: result{Change: true, Rule: RuleOverhead, After: bdp(1, 2*vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 1}},
			reason: "1e+03 notifications per RTT_est",
		},
		{
			desc:   "hysteresis: a queue between delay-low and delay-high with a full link holds",
			window: func() Window { return window(queue{util: 0.95, delayRTT: 0.4, notifies: 10}, bdp(1, vg)) },
			want:   result{Rule: RuleSteady, After: bdp(1, vg)},
		},
		{
			desc:   "hysteresis: a link between utilisation_under and utilisation_low with a short queue holds",
			window: func() Window { return window(queue{util: 0.85, delayRTT: 0.02, notifies: 20}, bdp(1, vg)) },
			want:   result{Rule: RuleSteady, After: bdp(1, vg)},
		},
		{
			desc:   "hysteresis: an under-used link with a queue above delay-low holds",
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.2, notifies: 10}, bdp(1, vg)) },
			want:   result{Rule: RuleSteady, After: bdp(1, vg)},
		},
		{
			desc:   "cool-down: no change one second after the last",
			window: func() Window { return window(queue{util: 0.99, delayRTT: 2, lastRTT: 0.3}, bdp(1, vg)) },
			mem:    Memory{LastChange: t0.Add(3 * time.Second), Direction: Tighten, Step: 2, Changes: 1},
			want: result{Rule: RuleCooldown, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(3 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
			reason: "last change 1s ago, cool-down 5s",
		},
		{
			desc:   "cool-down over: the same direction again with the step at most max_step",
			window: func() Window { return window(queue{util: 0.99, delayRTT: 2, lastRTT: 0.1}, bdp(1, vg)) },
			mem:    Memory{LastChange: t0.Add(-2 * time.Second), Direction: Tighten, Step: 1.5, Changes: 1},
			want: result{Change: true, Rule: RuleDelay, After: bdp(0.5, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 2}},
		},
		{
			desc:   "a reversal halves the step",
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(0.5, vg/2)) },
			mem:    Memory{LastChange: t0.Add(-2 * time.Second), Direction: Tighten, Step: 2, Changes: 1},
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(0.75, 937_500_000),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 1.5, Changes: 2}},
		},
		{
			desc:   "the step never goes below min_step",
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(0.5, vg/2)) },
			mem:    Memory{LastChange: t0.Add(-2 * time.Second), Direction: Tighten, Step: 1.1, Changes: 5},
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(0.55, 687_500_000),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 1.1, Changes: 6}},
		},
		{
			desc:   "alpha at alpha_min and v-growth at its minimum: no change",
			cfg:    func(c *Config) { c.VGrowthMinShare = 0.1 },
			window: func() Window { return window(queue{util: 0.99, delayRTT: 2, lastRTT: 0.0001}, bdp(0.1, vg)) },
			want:   result{Rule: RuleBound, After: bdp(0.1, vg)},
			reason: "alpha at its bound 0.1, the queue stands",
		},
		{
			desc:   "alpha set above alpha_max by hand: a loosening keeps it (clamping would lower K_max), v-growth still moves",
			cfg:    func(c *Config) { c.UnderUseCeilingBDP = 0 }, // the under-use guard off: the bounds alone
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(20, vg)) },
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(20, 2*vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 1}},
			reason: "alpha 20 is outside its bounds [0.1, 10], and bringing it back would loosen the other way: alpha kept",
		},
		{
			desc:   "alpha above alpha_max and v-growth above its maximum: a loosening changes nothing",
			mem:    Memory{Changes: 1}, // not the queue's first decision (rule start)
			cfg:    func(c *Config) { c.VGrowthMaxShare, c.UnderUseCeilingBDP = 0.1, 0 },
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(20, 2*vg)) },
			want:   result{Rule: RuleBound, After: bdp(20, 2*vg)},
			reason: "v-growth 2500000000 B/s is outside its bounds",
		},
		{
			desc:   "a step clamped at alpha_max",
			cfg:    func(c *Config) { c.UnderUseCeilingBDP = 0 },
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(7, vg)) },
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(10, 2*vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 1}},
		},
		{
			desc:   "alpha rounded to the YANG model's 3 fraction digits",
			window: func() Window { return window(queue{util: 0.99, delayRTT: 2, lastRTT: 0.0001}, bdp(0.333, vg)) },
			want: result{Change: true, Rule: RuleDelay, After: bdp(0.167, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc: "K_max at its K_base floor: alpha kept, and V_growth kept for a standing queue",
			window: func() Window {
				w := window(queue{util: 0.99, delayRTT: 2, lastRTT: 0.1}, bdp(0.1, vg))
				w.KBaseBytes = 20 << 20 // above 0.1 BDP (12.5 MB)
				w.EffectiveKMaxBytes = w.KBaseBytes
				return w
			},
			want:   result{Rule: RuleBound, After: bdp(0.1, vg)},
			reason: "K_max is at its K_base floor 20971520 B: alpha kept, the queue stands",
		},
		{
			desc: "explicit K_max: the explicit value is stepped, within kmax bounds (alpha_min × BDP)",
			window: func() Window {
				return window(queue{util: 0.99, delayRTT: 2, lastRTT: 0.00001}, Settings{KMaxMode: KMaxExplicit, KMaxBytes: 0.15 * bdpBytes, VGrowthBytesPerSec: vg})
			},
			want: result{Change: true, Rule: RuleDelay,
				After:  Settings{KMaxMode: KMaxExplicit, KMaxBytes: 0.1 * bdpBytes, VGrowthBytesPerSec: vg},
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc:   "v-growth tuning off: only alpha moves",
			cfg:    func(c *Config) { c.TuneVGrowth = false },
			window: func() Window { return window(queue{util: 0.99, delayRTT: 2, lastRTT: 0.1}, bdp(1, vg)) },
			want: result{Change: true, Rule: RuleDelay, After: bdp(0.5, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 1}},
		},
		{
			desc:   "a direction rolled back is held for four cool-downs",
			window: func() Window { return window(queue{util: 0.99, delayRTT: 2, lastRTT: 0.3}, bdp(1, vg)) },
			mem: Memory{LastChange: t0.Add(-10 * time.Second), Step: 1.5, Changes: 1,
				Rejected: Tighten, RejectedUntil: t0.Add(10 * time.Second)},
			want: result{Rule: RuleRejected, After: bdp(1, vg), Memory: Memory{LastChange: t0.Add(-10 * time.Second),
				Step: 1.5, Changes: 1, Rejected: Tighten, RejectedUntil: t0.Add(10 * time.Second)}},
			reason: "rolled back",
		},
		{
			desc: "loss overrides a rejected tightening",
			window: func() Window {
				return window(queue{util: 0.99, delayRTT: 2, lastRTT: 0.3, lossShare: 0.01}, bdp(1, vg))
			},
			mem: Memory{LastChange: t0.Add(-10 * time.Second), Step: 1.5, Changes: 1,
				Rejected: Tighten, RejectedUntil: t0.Add(10 * time.Second)},
			want: result{Change: true, Rule: RuleLoss, After: bdp(0.667, 833_333_333),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 1.5, Changes: 2,
					Rejected: Tighten, RejectedUntil: t0.Add(10 * time.Second), LossStreak: 1}},
		},
		{
			desc:   "a rejected direction does not hold the other",
			window: func() Window { return window(queue{util: 0.6, delayRTT: 0.05, notifies: 20}, bdp(0.5, vg/2)) },
			mem: Memory{LastChange: t0.Add(-10 * time.Second), Step: 1.5, Changes: 1,
				Rejected: Tighten, RejectedUntil: t0.Add(10 * time.Second)},
			want: result{Change: true, Rule: RuleUnderUse, After: bdp(0.75, 937_500_000),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 1.5, Changes: 2,
					Rejected: Tighten, RejectedUntil: t0.Add(10 * time.Second)}},
		},
		{
			desc:   "pinned: loss again with the queue at the buffer (previous decided window loss too): the loss step and overload_cut on",
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Tighten, Step: 2, Changes: 2, LossStreak: 1},
			window: func() Window { return pinnedWindow(bdp(1, vg)) },
			want: result{Change: true, Rule: RulePinned, After: cut(bdp(1, vg/2), true),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 3, LossStreak: 2, CutOn: true}},
			reason: "pinned at the buffer (487500000 B, 0.975 of its 500000000 B: pinned_buffer_share 0.75) after the last decision's loss: K_max and V_growth are out of reach there, overload_cut on",
		},
		{
			desc:   "pinned: a first loss at the buffer is loss's (not yet answered)",
			mem:    Memory{LastChange: t0.Add(-time.Minute), Changes: 2},
			window: func() Window { return pinnedWindow(bdp(1, vg)) },
			want: result{Change: true, Rule: RuleLoss, After: bdp(1, vg/2),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 3, LossStreak: 1}},
			reason: "above the K_max a lower alpha would give",
		},
		{
			desc: "pinned: loss persisting under pinned_buffer_share of the buffer is loss's",
			mem:  Memory{LastChange: t0.Add(-time.Minute), Changes: 2, LossStreak: 1},
			window: func() Window {
				w := pinnedWindow(bdp(1, vg))
				w.BufferBytes = 8 * bdpBytes // the queue at 0.49 of it
				return w
			},
			want: result{Change: true, Rule: RuleLoss, After: bdp(1, vg/2),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 3, LossStreak: 2}},
			reason: "dropped or paused",
		},
		{
			desc: "pinned: not where the node does not take overload_cut (the service today)",
			mem:  Memory{LastChange: t0.Add(-time.Minute), Changes: 2, LossStreak: 1},
			window: func() Window {
				w := pinnedWindow(bdp(1, vg))
				w.OverloadCutSupported = false
				return w
			},
			want: result{Change: true, Rule: RuleLoss, After: bdp(1, vg/2),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 3, LossStreak: 2}},
			reason: "dropped or paused",
		},
		{
			desc:   "pinned: overload_cut on already (the operator's): loss's step, the leaf kept and never switched off by the tuner",
			mem:    Memory{LastChange: t0.Add(-time.Minute), Changes: 2, LossStreak: 1},
			window: func() Window { return pinnedWindow(cut(bdp(1, vg), true)) },
			want: result{Change: true, Rule: RuleLoss, After: cut(bdp(1, vg/2), true),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 3, LossStreak: 2}},
			reason: "dropped or paused",
		},
		{
			desc:   "pinned: overload_cut off again once the queue stayed below K_min for pinned_off_rtt; only the leaf moves",
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Tighten, Step: 2, Changes: 3, CutOn: true, CalmSince: t0.Add(-time.Second)},
			window: func() Window { return calmWindow(true) },
			want: result{Change: true, Rule: RulePinned, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 4, CutOn: true, CutOffTrying: true}},
			reason: "the queue below K_min for 500 RTT_est (pinned_off_rtt 16) since rule pinned switched overload_cut on: overload_cut off",
		},
		{
			desc: "pinned: after 4 off-tries rolled back the next needs pinned_off_rtt × 2^4 (256 RTT_est) of calm: 500 is enough",
			mem: Memory{LastChange: t0.Add(-time.Minute), Direction: Tighten, Step: 2, Changes: 3, CutOn: true, CalmSince: t0.Add(-time.Second),
				CutOffRollbacks: 4},
			window: func() Window { return calmWindow(true) },
			want: result{Change: true, Rule: RulePinned, After: bdp(1, vg),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Loosen, Step: 2, Changes: 4, CutOn: true, CutOffTrying: true,
					CutOffRollbacks: 4}},
			reason: "the queue below K_min for 500 RTT_est (pinned_off_rtt 16 × 2^4 after 4 rolled-back off-tries) since rule pinned switched overload_cut on: overload_cut off",
		},
		{
			desc: "pinned: after 5 off-tries rolled back 500 RTT_est of calm is under pinned_off_rtt × 2^5 (512): overload_cut kept",
			mem: Memory{LastChange: t0.Add(-time.Minute), Changes: 3, CutOn: true, CalmSince: t0.Add(-time.Second),
				CutOffRollbacks: 5},
			window: func() Window { return calmWindow(true) },
			want:   result{Rule: RuleSteady, After: cut(bdp(1, vg), true)},
			reason: "dead band",
		},
		{
			desc: "pinned: calm for less than pinned_off_rtt: overload_cut kept",
			mem:  Memory{LastChange: t0.Add(-time.Minute), Changes: 3, CutOn: true},
			window: func() Window {
				w := window(queue{util: 0.97, delayRTT: 0.1}, cut(bdp(1, vg), true))
				w.End = t0.Add(100 * time.Millisecond) // 10 RTT_est since the window's start
				for i := range w.Samples {
					w.Samples[i].Time = t0.Add(time.Duration(i) * 25 * time.Millisecond)
				}
				w.OverloadCutSupported = true
				return w
			},
			want: result{Rule: RuleSteady, After: cut(bdp(1, vg), true),
				Memory: Memory{LastChange: t0.Add(-time.Minute), Changes: 3, CutOn: true, CalmSince: t0}},
			reason: "dead band",
		},
		{
			desc:   "pinned: overload_cut found off (rolled back, or an operator's Set): the episode ends, nothing switched",
			mem:    Memory{LastChange: t0.Add(-time.Minute), Changes: 3, CutOn: true, CalmSince: t0.Add(-time.Second)},
			window: func() Window { return calmWindow(false) },
			want:   result{Rule: RuleSteady, After: bdp(1, vg), Memory: Memory{LastChange: t0.Add(-time.Minute), Changes: 3}},
			reason: "dead band",
		},
		{
			desc: "pinned: overload_cut found off after an off-try (kept): the episode and its back-off end",
			mem: Memory{LastChange: t0.Add(-time.Minute), Changes: 4, CutOn: true, CutOffTrying: true,
				CutOffRollbacks: 3},
			window: func() Window { return calmWindow(false) },
			want:   result{Rule: RuleSteady, After: bdp(1, vg), Memory: Memory{LastChange: t0.Add(-time.Minute), Changes: 4}},
			reason: "dead band",
		},
		{
			desc:   "pinned: a new episode starts without the last one's back-off",
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Tighten, Step: 2, Changes: 2, LossStreak: 1, CutOffRollbacks: 2},
			window: func() Window { return pinnedWindow(bdp(1, vg)) },
			want: result{Change: true, Rule: RulePinned, After: cut(bdp(1, vg/2), true),
				Memory: Memory{LastChange: t0.Add(4 * time.Second), Direction: Tighten, Step: 2, Changes: 3, LossStreak: 2, CutOn: true}},
			reason: "overload_cut on",
		},
		{
			desc: "overrun_headroom_share: a queue that overfills the buffer one RTT_est ahead is no overrun, and the growth tightening is not held by the QGR trigger firing",
			cfg:  func(c *Config) { c.OverrunHeadroomShare = 0.75 },
			mem:  Memory{LastChange: t0.Add(-time.Minute), Changes: 1},
			// 3.2 RTT_est ahead, 0.8 of a 4-BDP buffer; the queue grows at 60 BDP/s, over V_growth.
			window: func() Window { w := steep(bdp(1, vg), 2); w.BufferBytes = 4 * bdpBytes; return w },
			want: result{Change: true, Rule: RuleGrowth, After: bdp(1, vg/2),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 2, Changes: 2}},
			reason: "overfills the buffer one RTT_est ahead (overrun_headroom_share 0.75)",
		},
		{
			desc:   "overrun_headroom_share: under the share one RTT_est ahead, overrun as before",
			cfg:    func(c *Config) { c.OverrunHeadroomShare = 0.75 },
			window: func() Window { w := steep(bdp(1, vg), 1); w.BufferBytes = 4 * bdpBytes; return w }, // 2.2 RTT_est ahead
			want: result{Change: true, Rule: RuleOverrun, After: bdp(2, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 1,
					Lifted: bdp(1, vg), LiftedTrendRTT: 0.6}},
		},
		{
			desc:   "overrun_headroom_share: a queue overfilling the buffer while K_max is lifted ends the overrun (K_max back) and tightens V_growth",
			cfg:    func(c *Config) { c.OverrunHeadroomShare = 0.75 },
			window: func() Window { w := steep(bdp(2, vg), 2); w.BufferBytes = 4 * bdpBytes; return w },
			mem:    Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg), LiftedTrendRTT: 0.6},
			want: result{Change: true, Rule: RuleGrowth, After: bdp(1, 833_333_333),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Tighten, Step: 1.5, Changes: 3}},
			reason: "a queue overfilling the buffer ends the overrun",
		},
		{
			desc:   "overrun_headroom_share: a switch that reports no buffer: overrun as before",
			cfg:    func(c *Config) { c.OverrunHeadroomShare = 0.75 },
			window: func() Window { return steep(bdp(1, vg), 2) },
			want: result{Change: true, Rule: RuleOverrun, After: bdp(2, vg),
				Memory: Memory{LastChange: t0.Add(10 * time.Millisecond), Direction: Loosen, Step: 2, Changes: 1,
					Lifted: bdp(1, vg), LiftedTrendRTT: 0.6}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := rulesConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("config: %v", err)
			}
			d, mem := Decide(cfg, tt.window(), tt.mem)
			got := result{Change: d.Change, Rule: d.Rule, After: d.After, Memory: mem}
			want := tt.want
			if !want.Change && want.Memory == (Memory{}) {
				want.Memory = tt.mem
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s\nreason: %s", diff, d.Reason)
			}
			if !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("reason %q does not say %q", d.Reason, tt.reason)
			}
			if d.Before != tt.window().Config {
				t.Errorf("Before = %+v, want the window's config", d.Before)
			}
		})
	}
}

// TestDecideDeterministic: the same inputs give the same decision, and a
// changed window never changes what was passed in.
func TestDecideDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	w := window(queue{util: 0.99, delayRTT: 2, lastRTT: 0.3}, bdp(1, vg))
	before := append([]Sample(nil), w.Samples...)
	d1, m1 := Decide(cfg, w, Memory{})
	d2, m2 := Decide(cfg, w, Memory{})
	if diff := cmp.Diff(d1, d2); diff != "" {
		t.Errorf("second decision differs (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(m1, m2); diff != "" {
		t.Errorf("second memory differs (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(before, w.Samples); diff != "" {
		t.Errorf("window changed (-before +after):\n%s", diff)
	}
}

// TestNoOscillation: a controller fed alternately a congested and an
// under-used window changes at most once per cool-down, with a step that
// shrinks on every reversal down to min_step.
func TestNoOscillation(t *testing.T) {
	cfg := rulesConfig()
	settings := bdp(1, vg)
	var mem Memory
	changes := 0
	var steps []float64
	for i := range 60 { // 60 windows one second apart
		q := queue{util: 0.99, delayRTT: 2, lastRTT: 0.3}
		if i%2 == 1 {
			q = queue{util: 0.5, delayRTT: 0.01, notifies: 50}
		}
		w := window(q, settings)
		shift := time.Duration(i) * time.Second
		w.Start, w.End = w.Start.Add(shift), w.End.Add(shift)
		for j := range w.Samples {
			w.Samples[j].Time = w.Samples[j].Time.Add(shift)
		}
		d, m := Decide(cfg, w, mem)
		mem = m
		if d.Change {
			changes++
			steps = append(steps, d.Step)
			settings = d.After
		}
	}
	if max := 60/int(cfg.Cooldown/time.Second) + 1; changes > max {
		t.Errorf("%d changes in 60 s, want at most %d (one per cool-down)", changes, max)
	}
	if len(steps) < 3 {
		t.Fatalf("only %d changes: the alternating input should reverse the direction", len(steps))
	}
	if last := steps[len(steps)-1]; last != cfg.MinStep {
		t.Errorf("last step %v, want it shrunk to min_step %v (steps %v)", last, cfg.MinStep, steps)
	}
}

// TestPinnedOffBackoff: under an overload that persists, each rolled-back
// off-try of rule pinned doubles the calm the next one needs, up to 2^6 ×
// pinned_off_rtt; an off-try kept (the leaf found off) ends the episode,
// and the next episode starts from pinned_off_rtt again. The off-try is a
// loosening, in the decision and the memory: its rollback refuses
// loosening for four cool-downs, not the tightening that switched it on.
func TestPinnedOffBackoff(t *testing.T) {
	cfg := DefaultConfig()
	// Windows of 4 s back to back, RTT_est 250 ms: each is 16 RTT_est,
	// pinned_off_rtt's default, of a queue below K_min with the leaf on.
	const rttEst = 250 * time.Millisecond
	if cfg.PinnedOffRTT != 16 {
		t.Fatalf("pinned_off_rtt %v: the windows below are sized for 16", cfg.PinnedOffRTT)
	}
	at := 0
	next := func(on bool) Window {
		w := window(queue{util: 0.97, delayRTT: 0.1}, cut(bdp(1, vg), on))
		w.RTTEst, w.OverloadCutSupported = rttEst, true
		shift := time.Duration(at) * 4 * time.Second
		w.Start, w.End = w.Start.Add(shift), w.End.Add(shift)
		for j := range w.Samples {
			w.Samples[j].Time = w.Samples[j].Time.Add(shift)
		}
		at++
		return w
	}
	mem := Memory{LastChange: t0.Add(-time.Hour), Changes: 3, CutOn: true}
	// tryOff feeds calm windows until an off-try, and returns how many
	// decided windows (past the cool-down) it took.
	tryOff := func() (int, Decision) {
		decided := 0
		for range 1000 {
			d, m := Decide(cfg, next(true), mem)
			mem = m
			if d.Rule == RuleCooldown {
				continue
			}
			decided++
			if d.Change {
				if d.Rule != RulePinned || d.After.OverloadCut {
					t.Fatalf("window %d: %s %+v, want rule pinned's off-try", at, d.Rule, d.After)
				}
				return decided, d
			}
		}
		t.Fatalf("no off-try in 1000 windows (memory %+v)", mem)
		return 0, Decision{}
	}
	var got, want []int
	for k := range 9 {
		n, d := tryOff()
		got, want = append(got, n), append(want, 1<<min(k, 6))
		if k > 0 && !strings.Contains(d.Reason, "rolled-back off-tr") {
			t.Errorf("off-try %d: reason %q does not name the rolled-back tries", k, d.Reason)
		}
		// The overload comes back with the leaf off: rolled back at the
		// end of the judge window. The off-try was a loosening: loosening
		// is refused for a while, not the tightening that switched it on.
		if d.Direction != Loosen || mem.Direction != Loosen {
			t.Errorf("off-try %d: direction %v, memory's %v; want loosen", k, d.Direction, mem.Direction)
		}
		mem = cfg.Reverted(mem, t0.Add(time.Duration(at)*4*time.Second), true)
		if mem.Rejected != Loosen {
			t.Errorf("off-try %d rolled back: %v refused, want loosen", k, mem.Rejected)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("decided windows to each off-try %v, want %v (doubling, capped at 2^6)", got, want)
	}
	// An off-try kept: the next window finds the leaf off, the episode ends
	// and the back-off with it.
	tryOff()
	mem = cfg.Judged(mem, Judgement{Verdict: Verdict{Keep: true}})
	for mem.CutOn {
		_, mem = Decide(cfg, next(false), mem)
	}
	if mem.CutOffRollbacks != 0 || mem.CutOffTrying {
		t.Errorf("after the episode: %+v, want no back-off", mem)
	}
	// A new episode (the tuner's overload_cut on again): one window.
	mem.CutOn = true
	if n, _ := tryOff(); n != 1 {
		t.Errorf("new episode: the off-try after %d windows, want 1", n)
	}
}

func TestReverted(t *testing.T) {
	cfg := DefaultConfig()
	offTry := Memory{LastChange: t0, Direction: Tighten, Step: 2, Changes: 4, CutOn: true, CutOffTrying: true, CutOffRollbacks: 2}
	tests := []struct {
		desc  string
		mem   Memory
		worse bool
		want  Memory
	}{
		{
			desc: "a change judged worse", mem: Memory{LastChange: t0, Direction: Tighten, Step: 2, Changes: 3}, worse: true,
			want: Memory{LastChange: t0.Add(7 * time.Second), Direction: Hold, Step: 1.5, Changes: 3,
				Rejected: Tighten, RejectedUntil: t0.Add(27 * time.Second)},
		},
		{
			desc: "a change undone unjudged (refused, lost, not judged in time): the same", mem: Memory{LastChange: t0, Direction: Tighten, Step: 2, Changes: 3},
			want: Memory{LastChange: t0.Add(7 * time.Second), Direction: Hold, Step: 1.5, Changes: 3,
				Rejected: Tighten, RejectedUntil: t0.Add(27 * time.Second)},
		},
		{
			desc: "rule pinned's off-try judged worse: the back-off doubles", mem: offTry, worse: true,
			want: Memory{LastChange: t0.Add(7 * time.Second), Direction: Hold, Step: 1.5, Changes: 4, CutOn: true, CutOffRollbacks: 3,
				Rejected: Tighten, RejectedUntil: t0.Add(27 * time.Second)},
		},
		{
			desc: "rule pinned's off-try undone unjudged: the back-off stays", mem: offTry,
			want: Memory{LastChange: t0.Add(7 * time.Second), Direction: Hold, Step: 1.5, Changes: 4, CutOn: true, CutOffRollbacks: 2,
				Rejected: Tighten, RejectedUntil: t0.Add(27 * time.Second)},
		},
		{
			desc: "rule pinned's off-try judged worse at the cap: 2^6 at most",
			mem:  Memory{LastChange: t0, Changes: 4, CutOn: true, CutOffTrying: true, CutOffRollbacks: maxCutOffDoublings}, worse: true,
			want: Memory{LastChange: t0.Add(7 * time.Second), Changes: 4, CutOn: true, CutOffRollbacks: maxCutOffDoublings,
				RejectedUntil: t0.Add(27 * time.Second)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got := cfg.Reverted(tt.mem, t0.Add(7*time.Second), tt.worse)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Reverted (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClaimCut: a claim restored from the audit trail (the service started
// anew) carries the off-tries' back-off, counted as Reverted counts it.
func TestClaimCut(t *testing.T) {
	for _, tt := range []struct {
		desc     string
		rollback int
		want     int
	}{
		{desc: "none", rollback: 0, want: 0},
		{desc: "two", rollback: 2, want: 2},
		{desc: "past the cap", rollback: 40, want: maxCutOffDoublings},
		{desc: "below zero", rollback: -1, want: 0},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var m Memory
			m.ClaimCut(tt.rollback)
			if diff := cmp.Diff(Memory{CutOn: true, CutOffRollbacks: tt.want}, m); diff != "" {
				t.Errorf("ClaimCut(%d) (-want +got):\n%s", tt.rollback, diff)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	cfg := DefaultConfig()
	// Retired seed 15012's first settle at k = 0 (n2, 249.9 ms), decided
	// on the overload's drain, and its judge window (0.624 RTT_est ahead).
	settle15012 := Metrics{Utilisation: 1, DelayRTT: 1.018, LastDelayRTT: 0.9678, TrendRTT: -1}
	judged15012 := Metrics{Utilisation: 0.7763, DelayRTT: 0.3774}
	// A DC-side port's slow drain, judged 500 RTT_est after the decision.
	dcDrain := Metrics{Utilisation: 1, DelayRTT: 2.2, LastDelayRTT: 2, TrendRTT: -0.3}
	tests := []struct {
		desc          string
		strict        bool
		dir           Direction
		before, after Metrics
		aheadRTT      float64
		aheadMax      float64 // judge_ahead_max_rtt, when not the default
		drain         bool    // judge_drain_arrivals
		keep          bool
	}{
		{desc: "better", dir: Tighten, before: Metrics{Utilisation: 0.9, DelayRTT: 2}, after: Metrics{Utilisation: 0.95, DelayRTT: 0.5}, keep: true},
		{desc: "the same", dir: Tighten, before: Metrics{Utilisation: 0.9, DelayRTT: 2}, after: Metrics{Utilisation: 0.9, DelayRTT: 2}, keep: true},
		{desc: "worse within the tolerance", dir: Tighten, before: Metrics{Utilisation: 0.9, DelayRTT: 2}, after: Metrics{Utilisation: 0.89, DelayRTT: 2}, keep: true},
		{desc: "tightening lost utilisation", dir: Tighten, before: Metrics{Utilisation: 0.99, DelayRTT: 0.5}, after: Metrics{Utilisation: 0.7, DelayRTT: 0.1}, keep: false},
		{desc: "loosening brought drops", dir: Loosen, before: Metrics{Utilisation: 0.99}, after: Metrics{Utilisation: 0.99, Loss: 0.001}, keep: false},
		{desc: "tightening, then drops: the traffic grew, kept", dir: Tighten, before: Metrics{Utilisation: 1, DelayRTT: 0.4}, after: Metrics{Utilisation: 1, DelayRTT: 1.8, Loss: 0.2}, keep: true},
		{desc: "tightening, then drops, strict: rolled back", strict: true, dir: Tighten, before: Metrics{Utilisation: 1, DelayRTT: 0.4}, after: Metrics{Utilisation: 1, DelayRTT: 1.8, Loss: 0.2}, keep: false},
		{desc: "loosening, then the link idles: the demand fell, kept", dir: Loosen, before: Metrics{Utilisation: 0.6}, after: Metrics{Utilisation: 0.2}, keep: true},
		{desc: "near-zero objective does not flap", dir: Loosen, before: Metrics{Utilisation: 1}, after: Metrics{Utilisation: 0.9995}, keep: true},
		{desc: "loosening decided on a growing queue: judged against where the growth was taking it, kept", dir: Loosen,
			before: Metrics{Utilisation: 1, DelayRTT: 0.1, LastDelayRTT: 0.12, TrendRTT: 1.5}, after: Metrics{Utilisation: 1, DelayRTT: 1.2},
			aheadRTT: 1, keep: true},
		{desc: "the same judged against the window before: rolled back", dir: Loosen,
			before: Metrics{Utilisation: 1, DelayRTT: 0.1, LastDelayRTT: 0.12, TrendRTT: 1.5}, after: Metrics{Utilisation: 1, DelayRTT: 1.2},
			keep: false},
		{desc: "a queue growing faster than the expectation after a loosening: rolled back", dir: Loosen,
			before: Metrics{Utilisation: 1, DelayRTT: 0.1, LastDelayRTT: 0.12, TrendRTT: 1.5}, after: Metrics{Utilisation: 1, DelayRTT: 2.5},
			aheadRTT: 1, keep: false},
		{desc: "a change decided on a draining queue takes no credit for the drain", dir: Loosen,
			before: Metrics{Utilisation: 1, DelayRTT: 1, LastDelayRTT: 0.9, TrendRTT: -1}, after: Metrics{Utilisation: 1, DelayRTT: 0.6},
			aheadRTT: 0.5, keep: false},
		{desc: "DC-side port, judged 500 RTT_est after a loosening on a growing queue: expected judge_ahead_max_rtt ahead, not 500, a longer queue rolled back", dir: Loosen,
			before: Metrics{Utilisation: 1, DelayRTT: 0.5, LastDelayRTT: 1, TrendRTT: 1}, after: Metrics{Utilisation: 1, DelayRTT: 20},
			aheadRTT: 500, keep: false},
		{desc: "DC-side port, the same queue where the pace takes it in judge_ahead_max_rtt: kept", dir: Loosen,
			before: Metrics{Utilisation: 1, DelayRTT: 0.5, LastDelayRTT: 1, TrendRTT: 1}, after: Metrics{Utilisation: 1, DelayRTT: 5},
			aheadRTT: 500, keep: true},
		{desc: "DC-side port, judged 500 RTT_est after a tightening on a slowly draining queue: not expected empty, kept", dir: Tighten,
			before: Metrics{Utilisation: 1, DelayRTT: 2.2, LastDelayRTT: 2, TrendRTT: -0.3}, after: Metrics{Utilisation: 0.99, DelayRTT: 0.5},
			aheadRTT: 500, keep: true},
		{desc: "DC-side port, the same with judge_ahead_max_rtt 500: the old reading, rolled back", aheadMax: 500, dir: Tighten,
			before: Metrics{Utilisation: 1, DelayRTT: 2.2, LastDelayRTT: 2, TrendRTT: -0.3}, after: Metrics{Utilisation: 0.99, DelayRTT: 0.5},
			aheadRTT: 500, keep: false},
		// 15012 at k = 0, n2's first settle (alpha 2 → 1.334 at 249.9 ms):
		// decided on the overload's drain, the queue at 0.968 RTT_est
		// falling by 1 RTT_est per RTT_est (nothing arrives: every sender
		// cut), judged 0.624 RTT_est ahead. The drain empties the queue
		// 0.968 RTT_est in and the link idles from then on, with the
		// change or without it: the judge window's 77.6 % used is the
		// drain's. Expected with the link full, the settle is rolled back
		// and the lift kept (the run's drops came with the next overload).
		{desc: "a tightening decided on a queue draining to empty with nothing arriving, the link expected full: rolled back", dir: Tighten,
			before: settle15012, after: judged15012,
			aheadRTT: 0.624, keep: false},
		{desc: "judge_drain_arrivals: the same tightening, the idle link after the drain expected: kept", drain: true, dir: Tighten,
			before: settle15012, after: judged15012,
			aheadRTT: 0.624, keep: true},
		{desc: "judge_drain_arrivals: the same tightening with the link used less than what arrives (half): its own cost, rolled back", drain: true, dir: Tighten,
			before: Metrics{Utilisation: 1, DelayRTT: 1.018, LastDelayRTT: 0.9678, TrendRTT: -0.5}, after: Metrics{Utilisation: 0.5, DelayRTT: 0.3774},
			aheadRTT: 0.624, keep: false},
		{desc: "judge_drain_arrivals: a tightening on a queue draining to empty, the arrivals filling 60 % of the link: judged against 60 % after the drain, kept", drain: true, dir: Tighten,
			before: Metrics{Utilisation: 1, DelayRTT: 0.5, LastDelayRTT: 0.4, TrendRTT: -0.4}, after: Metrics{Utilisation: 0.85, DelayRTT: 0.3},
			aheadRTT: 1, keep: true},
		{desc: "judge_drain_arrivals: the same with the queue not empty inside the judge window: judged against a full link, rolled back", drain: true, dir: Tighten,
			before: Metrics{Utilisation: 1, DelayRTT: 1, LastDelayRTT: 0.9, TrendRTT: -0.4}, after: Metrics{Utilisation: 0.85, DelayRTT: 0.3},
			aheadRTT: 1, keep: false},
		{desc: "judge_drain_arrivals: a loosening decided on a draining queue still takes no credit for the drain", drain: true, dir: Loosen,
			before: Metrics{Utilisation: 1, DelayRTT: 1.5, LastDelayRTT: 1.4, TrendRTT: -1}, after: Metrics{Utilisation: 1, DelayRTT: 1.2},
			aheadRTT: 0.5, keep: false},
		{desc: "judge_drain_arrivals: DC-side port, a tightening 500 RTT_est after the decision on a slowly draining queue: expected over judge_ahead_max_rtt twice (empty 6.7 RTT_est in, then the arrivals' 70 %), kept", drain: true, dir: Tighten,
			before: dcDrain, after: Metrics{Utilisation: 0.9, DelayRTT: 0.5},
			aheadRTT: 500, keep: true},
		{desc: "judge_drain_arrivals: the same with the link at 75 %, under the 95 % expected over that horizon (not the arrivals' 70 % of 1000 RTT_est): rolled back", drain: true, dir: Tighten,
			before: dcDrain, after: Metrics{Utilisation: 0.75, DelayRTT: 0.5},
			aheadRTT: 500, keep: false},
		{desc: "judge_drain_arrivals: DC-side port, a loosening on a draining queue followed by a standing one: rolled back", drain: true, dir: Loosen,
			before: Metrics{Utilisation: 1, DelayRTT: 2.2, LastDelayRTT: 2, TrendRTT: -0.5}, after: Metrics{Utilisation: 1, DelayRTT: 2},
			aheadRTT: 500, keep: false},
		{desc: "a queue within growth_trend_rtt is judged against the window before", dir: Loosen,
			before: Metrics{Utilisation: 1, DelayRTT: 0.5, LastDelayRTT: 0.5, TrendRTT: 0.2}, after: Metrics{Utilisation: 1, DelayRTT: 0.5},
			aheadRTT: 3, keep: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := cfg
			cfg.AttributeWorsening = !tt.strict
			if tt.aheadMax > 0 {
				cfg.JudgeAheadMaxRTT = tt.aheadMax
			}
			cfg.JudgeDrainArrivals = tt.drain
			v := Judge(cfg, tt.dir, tt.before, tt.after, tt.aheadRTT)
			if v.Keep != tt.keep {
				t.Errorf("Keep = %v, want %v (%s)", v.Keep, tt.keep, v.Reason)
			}
		})
	}
}

// TestLag: the middle of the judge window, in RTT_est after the decision,
// in the switch's own time.
func TestLag(t *testing.T) {
	w := Window{Start: t0.Add(20 * time.Millisecond), End: t0.Add(30 * time.Millisecond), RTTEst: rtt}
	if got := Lag(w, t0); math.Abs(got-2.5) > 1e-9 {
		t.Errorf("Lag = %v, want 2.5 RTT_est", got)
	}
	w.Speed = 0.1
	if got := Lag(w, t0); math.Abs(got-0.25) > 1e-9 {
		t.Errorf("Lag at speed 0.1 = %v, want 0.25 RTT_est", got)
	}
	// A DC-side port (RTT_est 2 µs) judged over the next millisecond: 500
	// RTT_est ahead, which Judge caps (TestJudge, "DC-side port" cases).
	dc := Window{Start: t0.Add(500 * time.Microsecond), End: t0.Add(1500 * time.Microsecond), RTTEst: 2 * time.Microsecond}
	if got := Lag(dc, t0); math.Abs(got-500) > 1e-6 {
		t.Errorf("Lag on a DC-side port = %v, want 500 RTT_est", got)
	}
	if got := Lag(Window{}, t0); got != 0 {
		t.Errorf("Lag without RTT_est = %v, want 0", got)
	}
}

func TestMeasure(t *testing.T) {
	w := window(queue{util: 0.5, delayRTT: 1, lossShare: 0.001, notifies: 100, emr: 10}, bdp(1, vg))
	got := Measure(w)
	want := Metrics{Utilisation: 0.5, DelayRTT: 1, LastDelayRTT: 1, MeanQueueBytes: bdpBytes, PeakQueueBytes: bdpBytes,
		ECNMarkingPercent: 10, Packets: 4 * 6_250_000, Drops: 4 * 6_250, Notifications: Notifications{Notify: 400},
		Loss: 0.001, NotificationsPerRTT: 1, Duration: 4 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Measure (-want +got):\n%s", diff)
	}
	if j, want := Objective(got, DefaultWeights()), 0.5+0.5+0.1+0.001; j < want-1e-9 || j > want+1e-9 {
		t.Errorf("Objective = %v, want %v", j, want)
	}
}

// TestMeasureSpeed: a switch simulated at a tenth of the wall clock stamps
// its samples in wall time; the same counts over ten times the wall span
// are the same rates in the switch's own time.
func TestMeasureSpeed(t *testing.T) {
	w := window(queue{util: 0.5, delayRTT: 1, lossShare: 0.001, notifies: 100, emr: 10}, bdp(1, vg))
	want := Measure(w)
	slow := w
	slow.Samples = slices.Clone(w.Samples)
	s0 := w.Samples[0].Time
	for i := range slow.Samples {
		slow.Samples[i].Time = s0.Add(10 * slow.Samples[i].Time.Sub(s0))
	}
	slow.Start, slow.End = s0.Add(10*w.Start.Sub(s0)), s0.Add(10*w.End.Sub(s0))
	slow.Speed = 0.1
	got := Measure(slow)
	want.Duration *= 10
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("Measure at speed 0.1 (-want +got):\n%s", diff)
	}
	slow.Speed = 0 // read as real time: a tenth of the rates
	if got := Measure(slow); math.Abs(got.Utilisation-0.05) > 1e-9 {
		t.Errorf("Measure at speed 0: utilisation %v, want 0.05", got.Utilisation)
	}

	// The engine falls behind its pace by a fifth of the span (simulated):
	// the same counts came in four fifths of the simulated time Speed
	// gives, so the rates are 5/4 of what Speed alone reads; one that
	// catches up as much reads 5/6 of them.
	slow.Speed = 0.1
	span := want.Duration / 10 // the samples' span in simulated time at speed 0.1
	cfg := DefaultConfig()
	cfg.MaxGap = 20 * time.Second // the samples ten times as far apart
	for _, tt := range []struct {
		growth time.Duration
		ratio  float64
	}{{span / 5, 5.0 / 4}, {-span / 5, 5.0 / 6}, {0, 1}} {
		slow.LagGrowth = tt.growth
		got := Measure(slow)
		if math.Abs(got.Utilisation-0.5*tt.ratio) > 1e-9 || math.Abs(got.NotificationsPerRTT-want.NotificationsPerRTT*tt.ratio) > 1e-9 {
			t.Errorf("Measure with the lag grown by %v: utilisation %v, notifications per RTT %v; want %v × 0.5 and × %v",
				tt.growth, got.Utilisation, got.NotificationsPerRTT, tt.ratio, want.NotificationsPerRTT)
		}
		if rule, why := Check(cfg, slow); rule != "" {
			t.Errorf("Check with the lag grown by %v: %s (%s)", tt.growth, rule, why)
		}
	}
	// An engine that stood still over the whole window: nothing to measure.
	slow.LagGrowth = span
	if rule, why := Check(cfg, slow); rule != RuleGap || !strings.Contains(why, "the switch's clock did not advance over the window") {
		t.Errorf("Check with the engine stood still: %s (%s); want gap", rule, why)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		desc string
		edit func(*Config)
		want string // substring of the error, "" for none
	}{
		{desc: "defaults", edit: func(*Config) {}},
		{desc: "alpha_min below the YANG range", edit: func(c *Config) { c.AlphaMin = 0.0001 }, want: "alpha_min: 0.0001 is outside the YANG range of alpha 0.001..1000"},
		{desc: "alpha_max above the YANG range", edit: func(c *Config) { c.AlphaMax = 2000 }, want: "alpha_max: 2000 is outside the YANG range"},
		{desc: "alpha_min above alpha_max", edit: func(c *Config) { c.AlphaMin, c.AlphaMax = 4, 2 }, want: "alpha_min: 4 is above alpha_max 2"},
		{desc: "v-growth minimum 0", edit: func(c *Config) { c.VGrowthMinShare = 0 }, want: "v_growth_min_share: 0 is not a finite share of R_port > 0"},
		{desc: "v-growth maximum under its minimum", edit: func(c *Config) { c.VGrowthMaxShare = 0.0005 }, want: "v_growth_max_share: 0.0005 is below v_growth_min_share 0.001"},
		{desc: "v-growth start outside the bounds", edit: func(c *Config) { c.VGrowthStartShare = 2 }, want: "v_growth_start_share: 2 is neither 0 nor a share in [v_growth_min_share 0.001, v_growth_max_share 1]"},
		{desc: "a step of 1", edit: func(c *Config) { c.MaxStep = 1 }, want: "max_step: 1 must be a factor above 1"},
		{desc: "no dead band", edit: func(c *Config) { c.DelayHighRTT = c.DelayLowRTT }, want: "delay_high_rtt"},
		{desc: "negative weight", edit: func(c *Config) { c.Weights.Delay = -1 }, want: "weights.delay: -1"},
		{desc: "one sample", edit: func(c *Config) { c.MinSamples = 1 }, want: "min_samples"},
		{desc: "settle band above V_growth", edit: func(c *Config) { c.SettleGrowthShare = 1.2 }, want: "settle_growth_share: 1.2 is not a share in (0, 1]"},
		{desc: "standing floor under the queue", edit: func(c *Config) { c.StandingFloorShare = 0.9 }, want: "standing_floor_share: 0.9 is not a multiple of the queue in [1, 2]"},
		{desc: "standing floor above twice the queue", edit: func(c *Config) { c.StandingFloorShare = 3 }, want: "standing_floor_share: 3 is not a multiple"},
		{desc: "overrun headroom above the buffer", edit: func(c *Config) { c.OverrunHeadroomShare = 1.5 }, want: "overrun_headroom_share: 1.5 is neither 0 (no limit) nor a share of the buffer in (0, 1]"},
		{desc: "overrun headroom negative", edit: func(c *Config) { c.OverrunHeadroomShare = -0.1 }, want: "overrun_headroom_share: -0.1 is neither 0"},
		{desc: "standing floor at the queue", edit: func(c *Config) { c.StandingFloorShare = 1 }},
		{desc: "qgr-off evidence negative", edit: func(c *Config) { c.QGROffRTT = -1 }, want: "qgr_off_rtt: -1 is neither 0 (off) nor a positive number of RTT_est"},
		{desc: "no judge horizon", edit: func(c *Config) { c.JudgeAheadMaxRTT = 0 }, want: "judge_ahead_max_rtt: 0 must be a positive delay"},
		{desc: "search before the change", edit: func(c *Config) { c.SearchAfterRTT = -1 }, want: "search_after_rtt: -1 is neither 0 (off) nor a positive number of RTT_est"},
		{desc: "search judge window", edit: func(c *Config) { c.SearchJudgeRTT = math.Inf(1) }, want: "search_judge_rtt: +Inf is not a finite number of RTT_est"},
		{desc: "search gain of all", edit: func(c *Config) { c.SearchGain = 1 }, want: "search_gain: 1 is not a share in [0, 1)"},
		{desc: "no utilisation dead band", edit: func(c *Config) { c.UtilisationUnder = 0.95 }, want: "utilisation_under: 0.95 must be a share in (0, utilisation_low 0.9]"},
		{desc: "alpha_start above alpha_max", edit: func(c *Config) { c.AlphaStart = 20 }, want: "alpha_start: 20 is neither 0 nor an alpha in [alpha_min 0.1, alpha_max 10]"},
		{desc: "alpha_start with four digits", edit: func(c *Config) { c.AlphaStart = 0.5005 }, want: "alpha_start: 0.5005 has more than the YANG model's 3 fraction digits"},
		{desc: "alpha_start 0: the switch's K_max kept", edit: func(c *Config) { c.AlphaStart = 0 }},
		{desc: "alpha_start_overload_cut below alpha_min", edit: func(c *Config) { c.AlphaStartOverloadCut = 0.05 }, want: "alpha_start_overload_cut: 0.05 is neither 0 nor an alpha in [alpha_min 0.1, alpha_max 10]"},
		{desc: "alpha_start_overload_cut not finite", edit: func(c *Config) { c.AlphaStartOverloadCut = math.NaN() }, want: "alpha_start_overload_cut: NaN is neither 0"},
		{desc: "alpha_start_overload_cut with four digits", edit: func(c *Config) { c.AlphaStartOverloadCut = 1.0005 }, want: "alpha_start_overload_cut: 1.0005 has more than the YANG model's 3 fraction digits"},
		{desc: "alpha_start_overload_cut 0: alpha_start everywhere", edit: func(c *Config) { c.AlphaStartOverloadCut = 0 }},
		{desc: "every rule on", edit: func(c *Config) { c.RulesOff = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestStartKeepsCutClaim: rule start (a queue's first decision) keeps the
// memory's claim on an overload_cut the tuner switched on (CutOn and its
// calm count), which a service started anew restores from its audit
// trail before that decision; a fresh memory has none.
func TestStartKeepsCutClaim(t *testing.T) {
	cfg := DefaultConfig()
	calm := t0.Add(-time.Second)
	w := window(queue{util: 0.95, delayRTT: 0.2}, cut(bdp(1, 2*vg), true)) // V_growth 0.2 of R_port: rule start moves it
	d, mem := Decide(cfg, w, Memory{CutOn: true, CalmSince: calm})
	if d.Rule != RuleStart || !d.Change {
		t.Fatalf("decision %s (%s): want rule start", d.Rule, d.Reason)
	}
	if !mem.CutOn || !mem.CalmSince.Equal(calm) || mem.Changes != 1 {
		t.Errorf("memory after start %+v: want CutOn, CalmSince %v and one change", mem, calm)
	}
	if _, mem = Decide(cfg, w, Memory{}); mem.CutOn {
		t.Errorf("a fresh memory's start claims the leaf: %+v", mem)
	}
}

// rulesConfig is DefaultConfig with every rule on (no rules_off), no
// starting K_max (alpha_start 0), and under-use as it was written (the
// window's own throttling, under_use_after_rtt 0, and its guard at one
// BDP): the configuration the rules' own tests read, each rule reachable
// as docs/tuner.md's table describes it. The defaults switch overrun off
// and start at alpha 0.5 (session 19), and under-use counts the last 2
// RTT_est's throttling up to 0.707 BDP (session 22); TestDefaultStart,
// TestRulesOff and TestUnderUseAfter test those.
func rulesConfig() Config {
	c := DefaultConfig()
	c.AlphaStart = 0
	c.RulesOff = nil
	c.UnderUseAfterRTT = 0
	c.UnderUseCeilingBDP = 1
	c.FiringNeedsThrottle = false // the firing hold as written: the tables' windows are silent
	return c
}

// TestDefaultStart: the defaults' first decision on a queue moves it to the
// policy's starting point, V_growth to v_growth_start_share (0.1) of
// R_port whatever the switch has, and alpha from the draft's default (1)
// to alpha_start (0.5), at every port rate and RTT_est (the same decision
// for the same shape of window); an alpha or an explicit kmax someone set
// is kept, and a knob already there (within min_step), not tuned or
// without a starting point stays.
func TestDefaultStart(t *testing.T) {
	explicit := func(kmax, vgrowth int64) Settings {
		return Settings{KMaxMode: KMaxExplicit, KMaxBytes: kmax, VGrowthBytesPerSec: vgrowth}
	}
	cut := func(s Settings) Settings { s.OverloadCut = true; return s }
	full := queue{util: 0.97, delayRTT: 0.3, notifies: 10, emr: 5}
	for _, tt := range []struct {
		desc    string
		cfg     func(*Config)
		from    Settings
		change  bool
		dir     Direction
		after   Settings
		reason  string
		notRule Rule // with no start, the rule the window does not get either
		mem     Memory
	}{
		{desc: "the draft's alpha: halved to the starting point, V_growth there already", from: bdp(1, vg), change: true, dir: Tighten,
			after: bdp(0.5, vg), reason: "alpha from the draft's default 1 to 0.5 (alpha_start)"},
		{desc: "both knobs: K_max's direction", from: bdp(1, vg/8), change: true, dir: Tighten, after: bdp(0.5, vg),
			reason: "V_growth from the switch's 156250000 B/s (0.0125 of R_port) to 1250000000 B/s"},
		{desc: "an alpha someone set: kept, V_growth alone to its starting point", from: bdp(0.8, vg/8), change: true, dir: Loosen,
			after: bdp(0.8, vg), reason: "V_growth from the switch's"},
		{desc: "an alpha someone set under the starting point: kept", from: bdp(0.25, vg), after: bdp(0.25, vg), notRule: RuleStart},
		{desc: "an explicit kmax: kept", from: explicit(2*bdpBytes, vg), after: explicit(2*bdpBytes, vg), notRule: RuleStart},
		{desc: "alpha_start 0: K_max kept, V_growth alone", cfg: func(c *Config) { c.AlphaStart = 0 }, from: bdp(1, vg/8),
			change: true, dir: Loosen, after: bdp(1, vg)},
		{desc: "alpha_start within min_step of the draft's alpha: no start", cfg: func(c *Config) { c.AlphaStart = 1.05 }, from: bdp(1, vg),
			after: bdp(1, vg), notRule: RuleStart},
		{desc: "tune_kmax false: K_max kept", cfg: func(c *Config) { c.TuneKMax = false }, from: bdp(1, vg), after: bdp(1, vg), notRule: RuleStart},
		{desc: "the QGR trigger off (0): left to the growth rule, K_max moved", from: bdp(1, 0), change: true, dir: Tighten, after: bdp(0.5, 0)},
		{desc: "V_growth at R_port, as good as off: to the starting point", from: bdp(1, rateBitsPerSec/8), change: true, dir: Tighten,
			after: bdp(0.5, vg), reason: "V_growth from the switch's 12500000000 B/s (1 of R_port) to 1250000000 B/s"},
		{desc: "overload_cut on: the draft's alpha kept (alpha_start_overload_cut 1), V_growth alone", from: cut(bdp(1, vg/8)),
			change: true, dir: Loosen, after: cut(bdp(1, vg)), reason: "V_growth from the switch's"},
		{desc: "overload_cut on, the draft's alpha, V_growth there already: no start", from: cut(bdp(1, vg)), after: cut(bdp(1, vg)), notRule: RuleStart},
		{desc: "overload_cut on, alpha_start_overload_cut 0.707: alpha there", cfg: func(c *Config) { c.AlphaStartOverloadCut = 0.707 },
			from: cut(bdp(1, vg)), change: true, dir: Tighten, after: cut(bdp(0.707, vg)),
			reason: "alpha from the draft's default 1 to 0.707 (alpha_start_overload_cut: the node cuts to the overload)"},
		{desc: "overload_cut on, alpha_start_overload_cut 0: alpha_start", cfg: func(c *Config) { c.AlphaStartOverloadCut = 0 },
			from: cut(bdp(1, vg)), change: true, dir: Tighten, after: cut(bdp(0.5, vg)), reason: "alpha from the draft's default 1 to 0.5 (alpha_start)"},
		{desc: "overload_cut on, an alpha someone set: kept", from: cut(bdp(0.8, vg)), after: cut(bdp(0.8, vg)), notRule: RuleStart},
		{desc: "NoStart (an operator's setting, or a queue decided before a restart): no start", mem: Memory{NoStart: true},
			from: bdp(1, vg/8), after: bdp(1, vg/8), notRule: RuleStart},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := DefaultConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			w := window(full, tt.from)
			d, mem := Decide(cfg, w, tt.mem)
			if d.Change != tt.change || d.After != tt.after || (tt.change && (d.Rule != RuleStart || d.Direction != tt.dir)) {
				t.Fatalf("Decide: change %v rule %s %s %+v, want change %v start %s %+v (%s)", d.Change, d.Rule, d.Direction, d.After, tt.change, tt.dir, tt.after, d.Reason)
			}
			if tt.change && (mem.Changes != 1 || !mem.LastChange.Equal(w.End)) {
				t.Errorf("memory after start: %+v", mem)
			}
			if !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("reason %q, want it to say %q", d.Reason, tt.reason)
			}
			if tt.notRule != "" && d.Rule == tt.notRule {
				t.Errorf("rule %s (%s)", d.Rule, d.Reason)
			}
		})
	}
	// The same start at every scale: the switch's YANG defaults (alpha 1,
	// V_growth 10 Gbit/s) to alpha 0.5 and a tenth of the port's rate (on a
	// 10 Gbit/s port too, where 10 Gbit/s is as good as off).
	for _, rate := range []int64{10e9, 25e9, 100e9, 400e9} {
		for _, r := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond} {
			w := window(full, bdp(1, vg))
			w.PortRateBitsPerSec, w.RTTEst = rate, r
			d, _ := Decide(DefaultConfig(), w, Memory{})
			want := bdp(0.5, rate/80) // on a 10 Gbit/s port from 10 Gbit/s: as good as off, the draft's default
			if rate == 100e9 {        // V_growth at its starting point already
				want = bdp(0.5, vg)
			}
			if !d.Change || d.Rule != RuleStart || d.Direction != Tighten || d.After != want {
				t.Errorf("%d bit/s, %v: %s %s %+v, want start tighten %+v (%s)", rate, r, d.Rule, d.Direction, d.After, want, d.Reason)
			}
		}
	}
}

// TestRulesOff: a rule in rules_off does not decide; its window falls
// through to the next rule (or steady), and the defaults switch under-use
// and overrun off (session 19, docs/tuner.md "A starting point and fewer
// rules").
func TestRulesOff(t *testing.T) {
	if got := DefaultConfig().RulesOff; len(got) != 1 || got[0] != RuleOverrun {
		t.Errorf("default rules_off %v, want [overrun]", got)
	}
	started := Memory{Changes: 1, LastChange: t0.Add(-time.Minute)}
	for _, tt := range []struct {
		off      Rule
		window   Window
		on, then Rule
	}{
		{RuleUnderUse, window(queue{util: 0.5, delayRTT: 0.01, notifies: 50}, bdp(0.5, vg/2)), RuleUnderUse, RuleSteady},
		{RuleOverrun, growing(bdp(0.5, vg)), RuleOverrun, RuleFiring}, // growth's tightening, held: the QGR trigger fires
		{RuleGrowth, growing(bdp(1, 4*vg)), RuleGrowth, RuleSteady},
		{RuleDelay, window(queue{util: 0.97, delayRTT: 0.8}, bdp(2, vg)), RuleDelay, RuleSteady},
		{RuleOverhead, window(queue{util: 0.97, delayRTT: 0.3, notifies: 100_000}, bdp(1, vg)), RuleOverhead, RuleSteady},
	} {
		t.Run(string(tt.off), func(t *testing.T) {
			cfg := rulesConfig()
			if d, _ := Decide(cfg, tt.window, started); d.Rule != tt.on {
				t.Fatalf("every rule on: %s (%s), want %s", d.Rule, d.Reason, tt.on)
			}
			cfg.RulesOff = []Rule{tt.off}
			d, _ := Decide(cfg, tt.window, started)
			if d.Rule != tt.then || d.Change {
				t.Errorf("%s off: %s change %v (%s), want %s and no change", tt.off, d.Rule, d.Change, d.Reason, tt.then)
			}
		})
	}
	for _, tt := range []struct {
		off  []Rule
		want string
	}{
		{[]Rule{RuleLoss}, `rules_off: "loss" is not a rule that can be switched off`},
		{[]Rule{RuleSettle}, `rules_off: "settle" is not a rule`},
		{[]Rule{"under_use"}, `rules_off: "under_use" is not a rule`},
		{[]Rule{RuleDelay, RuleDelay}, `rules_off: "delay" is listed twice`},
	} {
		cfg := DefaultConfig()
		cfg.RulesOff = tt.off
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("rules_off %v: %v, want %q", tt.off, err, tt.want)
		}
	}
}

// TestUnderUseAfter: with the defaults (under_use_after_rtt 2, the
// under-use guard at 0.707 BDP), a window in which the node throttles is
// remembered, and an idle link with an empty queue that follows it within
// 2 RTT_est is under-use although the window shows no mark and no cut of
// its own: K_max is loosened from the starting point's alpha 0.5 to
// 0.707 (the guard), V_growth stays at the starting point. Later than 2
// RTT_est, or with under_use_after_rtt 0 (only the window's own
// throttling counts, the rule as written), the same window is steady, and
// then nothing is remembered.
func TestUnderUseAfter(t *testing.T) {
	cfg := DefaultConfig()
	start := bdp(0.5, rateBitsPerSec/8/10) // the policy's starting point
	changed := Memory{LastChange: t0.Add(-time.Minute), Changes: 1}
	marks := window(queue{util: 1, delayRTT: 0.3, emr: 20}, start)
	d, mem := Decide(cfg, marks, changed)
	if d.Rule != RuleSteady || !mem.ThrottledAt.Equal(marks.End) {
		t.Fatalf("a window with marks: %s (%s), ThrottledAt %v, want steady and %v", d.Rule, d.Reason, mem.ThrottledAt, marks.End)
	}
	idle := func(after time.Duration) Window {
		w := window(queue{util: 0.2, delayRTT: 0.01}, start)
		for i := range w.Samples {
			w.Samples[i].Time = w.Samples[i].Time.Add(marks.End.Sub(t0) + after)
		}
		w.Start, w.End = w.Start.Add(marks.End.Sub(t0)+after), w.End.Add(marks.End.Sub(t0)+after)
		return w
	}
	d, next := Decide(cfg, idle(15*time.Millisecond), mem) // 1.5 RTT_est later
	if d.Rule != RuleUnderUse || !d.Change || d.After != bdp(0.707, start.VGrowthBytesPerSec) {
		t.Errorf("idle 1.5 RTT_est after the marks: %s change %v %+v (%s), want under-use to alpha 0.707", d.Rule, d.Change, d.After, d.Reason)
	}
	if !strings.Contains(d.Reason, "after the node throttled senders within under_use_after_rtt 2 RTT_est") {
		t.Errorf("reason %q does not say why", d.Reason)
	}
	if !next.ThrottledAt.Equal(marks.End) {
		t.Errorf("an idle window moved ThrottledAt to %v", next.ThrottledAt)
	}
	if d, _ := Decide(cfg, idle(25*time.Millisecond), mem); d.Rule != RuleSteady || d.Change {
		t.Errorf("idle 2.5 RTT_est after the marks: %s (%s), want steady", d.Rule, d.Reason)
	}
	own := cfg
	own.UnderUseAfterRTT = 0
	d, m := Decide(own, marks, changed)
	if d.Rule != RuleSteady || !m.ThrottledAt.IsZero() {
		t.Errorf("under_use_after_rtt 0: %s, ThrottledAt %v, want steady and nothing remembered", d.Rule, m.ThrottledAt)
	}
	if d, _ := Decide(own, idle(15*time.Millisecond), mem); d.Rule != RuleSteady {
		t.Errorf("under_use_after_rtt 0, idle after the marks: %s (%s), want steady", d.Rule, d.Reason)
	}
	bad := DefaultConfig()
	bad.UnderUseAfterRTT = -1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "under_use_after_rtt: -1 is neither 0") {
		t.Errorf("under_use_after_rtt -1: %v", err)
	}
}

// TestFiringNeedsThrottle: a queue growing above K_max on a full link is
// held as firing with firing_needs_throttle off; with it (the default since
// session 34) the hold needs
// the node to throttle in the window (notifications or its own marks), so
// a node that sends nothing (it defers, or its packets arrive CE-marked)
// gets rule growth's tighter V_growth.
func TestFiringNeedsThrottle(t *testing.T) {
	changed := Memory{LastChange: t0.Add(-time.Minute), Changes: 1}
	with := func(notify int64, emr float64) Window {
		w := growing(bdp(0.3, 4*vg)) // 0.1 → 0.4 RTT_est, K_max 0.3 RTT_est: the QD trigger's
		for i := range w.Samples {
			w.Samples[i].Notifications.Notify, w.Samples[i].ECNMarkingPercent = notify, emr
			w.Samples[i].Packets = 1000
		}
		return w
	}
	silent, cutting, marking := with(0, 0), with(100, 0), with(0, 30)
	on, off := DefaultConfig(), DefaultConfig()
	off.FiringNeedsThrottle = false
	for _, c := range []struct {
		desc string
		cfg  Config
		w    Window
		want Rule
	}{
		{"firing_needs_throttle off, silent node", off, silent, RuleFiring},
		{"firing_needs_throttle off, cutting node", off, cutting, RuleFiring},
		{"firing_needs_throttle, silent node", on, silent, RuleGrowth},
		{"firing_needs_throttle, notifying node", on, cutting, RuleFiring},
		{"firing_needs_throttle, marking node", on, marking, RuleFiring},
	} {
		d, _ := Decide(c.cfg, c.w, changed)
		if d.Rule != c.want || d.Change != (c.want == RuleGrowth) {
			t.Errorf("%s: %s change %v (%s), want %s", c.desc, d.Rule, d.Change, d.Reason, c.want)
		}
		if c.want == RuleGrowth && d.After != bdp(0.3, 2*vg) {
			t.Errorf("%s: %+v, want V_growth halved, alpha kept", c.desc, d.After)
		}
		if c.want == RuleFiring && !strings.Contains(d.Reason, "the QD trigger fires") {
			t.Errorf("%s: reason %q", c.desc, d.Reason)
		}
	}
}

// TestLossCapsUnderUse: with loss_caps_under_use a loss change's setting
// is remembered, and a later under-use loosens neither alpha nor V_growth
// above it; off (the default), nothing is remembered and under-use
// loosens to its own ceiling.
func TestLossCapsUnderUse(t *testing.T) {
	start := bdp(0.5, rateBitsPerSec/8/10)
	old := Memory{LastChange: t0.Add(-time.Minute), Changes: 1}
	lossy := window(queue{util: 1, delayRTT: 0.3, lossShare: 0.01, emr: 20}, start)
	idle := func(s Settings) Window {
		w := window(queue{util: 0.2, delayRTT: 0.01, emr: 20}, s) // marks: the node throttles
		for i := range w.Samples {
			w.Samples[i].Time = w.Samples[i].Time.Add(time.Hour)
		}
		w.Start, w.End = w.Start.Add(time.Hour), w.End.Add(time.Hour)
		return w
	}
	on := DefaultConfig()
	on.LossCapsUnderUse = true
	d, mem := Decide(on, lossy, old)
	if d.Rule != RuleLoss || !d.Change || mem.LossAfter != d.After {
		t.Fatalf("loss: %s change %v, LossAfter %+v, want loss and %+v remembered (%s)", d.Rule, d.Change, mem.LossAfter, d.After, d.Reason)
	}
	if d.After.VGrowthBytesPerSec >= start.VGrowthBytesPerSec {
		t.Fatalf("loss left V_growth at %d, want below %d", d.After.VGrowthBytesPerSec, start.VGrowthBytesPerSec)
	}
	// Tighter still after the loss (another rule's change), then idle.
	tight := d.After
	tight.VGrowthBytesPerSec /= 4
	tight.Alpha /= 2
	u, _ := Decide(on, idle(tight), mem)
	if u.Rule != RuleUnderUse || !u.Change || u.After.Alpha > d.After.Alpha || u.After.VGrowthBytesPerSec > d.After.VGrowthBytesPerSec {
		t.Errorf("under-use after a loss, loss_caps_under_use: %s change %v %+v (%s), want at most the loss's %+v", u.Rule, u.Change, u.After, u.Reason, d.After)
	}
	// At the loss's setting: nothing above it.
	if u, _ := Decide(on, idle(d.After), mem); u.Change || !strings.Contains(u.Reason, "loss_caps_under_use: the ceilings are the last loss change's setting") {
		t.Errorf("under-use at the loss's setting, loss_caps_under_use: %s %+v (%s), want no change, the cap named", u.Rule, u.After, u.Reason)
	}
	d, mem = Decide(DefaultConfig(), lossy, old)
	if (mem.LossAfter != Settings{}) {
		t.Errorf("the key off: LossAfter %+v, want none", mem.LossAfter)
	}
	if u, _ := Decide(DefaultConfig(), idle(d.After), mem); u.Rule != RuleUnderUse || !u.Change || u.After.VGrowthBytesPerSec <= d.After.VGrowthBytesPerSec && u.After.Alpha <= d.After.Alpha {
		t.Errorf("under-use after a loss, the key off: %s change %v %+v (%s), want a loosening past %+v", u.Rule, u.Change, u.After, u.Reason, d.After)
	}
}

// TestChangedKeepsMemory: a change keeps every field of the queue's
// memory but those Memory.changed names (a field added later is kept
// across changes unless it is named there: session 34's first measurement
// of a new field was void because the change path built a fresh memory
// and dropped it).
func TestChangedKeepsMemory(t *testing.T) {
	var m Memory
	v := reflect.ValueOf(&m).Elem()
	for i := range v.NumField() {
		fill(t, v.Field(i), v.Type().Field(i).Name)
	}
	end := m.LastChange.Add(time.Second)
	got := m.changed(end, Loosen, 1.5, RuleUnderUse, 0.25, Settings{Alpha: 0.3})
	set := map[string]bool{"LastChange": true, "Direction": true, "Step": true, "Changes": true, "Search": true,
		"LiftedTrendRTT": true, "LossAfter": true, "LossSeen": true, "CutOffTrying": true, "QGRCostSince": true}
	g := reflect.ValueOf(got)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		same := reflect.DeepEqual(v.Field(i).Interface(), g.Field(i).Interface())
		if !set[name] && !same {
			t.Errorf("changed dropped %s: %v, was %v", name, g.Field(i).Interface(), v.Field(i).Interface())
		}
	}
	if got.LastChange != end || got.Direction != Loosen || got.Step != 1.5 || got.Changes != m.Changes+1 ||
		got.LiftedTrendRTT != 0.25 || got.LossAfter != (Settings{Alpha: 0.3}) ||
		got.LossSeen != 0 || got.CutOffTrying || !got.QGRCostSince.IsZero() {
		t.Errorf("changed = %+v, want the change's time, direction, step, count, pace and loss cap, and no judge loss, off-try or qgr-off count", got)
	}
}

// fill sets v, a field of Memory named name, to a value other than its
// zero value.
func fill(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		if v.Type() == reflect.TypeOf(time.Duration(0)) {
			v.SetInt(int64(time.Second))
			return
		}
		v.SetInt(3)
	case reflect.Float64:
		v.SetFloat(0.7)
	case reflect.String:
		v.SetString("x")
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(1000, 0)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), name+"."+v.Type().Field(i).Name)
			}
		}
	default:
		t.Fatalf("fill: no value for %s (%s)", name, v.Kind())
	}
}

// TestUnderUseVGrowthShare: with under_use_v_growth_share above the
// start's share, a cautious start is opened up by under-use to that
// ceiling and no further; 0 keeps the start's share as the ceiling; a
// value outside V_growth's bounds is refused naming the key.
func TestUnderUseVGrowthShare(t *testing.T) {
	share := func(s Settings) float64 { return float64(s.VGrowthBytesPerSec) * 8 / rateBitsPerSec }
	old := Memory{LastChange: t0.Add(-time.Minute), Changes: 1}
	idle := func(vshare float64) Window {
		return window(queue{util: 0.2, delayRTT: 0.01, emr: 20}, bdp(0.5, int64(vshare*rateBitsPerSec/8))) // the node throttles
	}
	cfg := DefaultConfig()
	cfg.VGrowthStartShare, cfg.UnderUseVGrowthShare = 0.01, 0.1
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, from := range []float64{0.01, 0.08} {
		d, _ := Decide(cfg, idle(from), old)
		if got := share(d.After); d.Rule != RuleUnderUse || !d.Change || got <= from || got > 0.1+1e-9 {
			t.Errorf("from %v × R: %s change %v to %v × R (%s), want under-use above the start and at most 0.1 × R", from, d.Rule, d.Change, got, d.Reason)
		}
	}
	if d, _ := Decide(cfg, idle(0.1), old); share(d.After) != 0.1 || !strings.Contains(d.Reason, "under-use ceiling of 1250000000 B/s (under_use_v_growth_share 0.1 of R_port): v-growth kept") {
		t.Errorf("at the ceiling: V_growth to %v × R (%s), want kept at 0.1, the key named", share(d.After), d.Reason)
	}
	// 0: the start's share is the ceiling (the policy's default).
	cfg.UnderUseVGrowthShare = 0
	if d, _ := Decide(cfg, idle(0.01), old); d.Change && share(d.After) > 0.01+1e-9 {
		t.Errorf("under_use_v_growth_share 0: V_growth to %v × R (%s), want at most the start's 0.01", share(d.After), d.Reason)
	}
	for _, v := range []float64{-1, 2, math.NaN(), 0.0001} {
		c := DefaultConfig()
		c.UnderUseVGrowthShare = v
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "under_use_v_growth_share") {
			t.Errorf("under_use_v_growth_share %v: %v, want an error naming the key", v, err)
		}
	}
}
