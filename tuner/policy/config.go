package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// The YANG model's ranges of the leaves the tuner writes
// (yang/lhcnp.yang, queue config): alpha is a decimal64 with 3 fraction
// digits in 0.001..1000; kmax and v-growth are uint64 in 1..max.
const (
	YANGAlphaMin              = 0.001
	YANGAlphaMax              = 1000
	YANGAlphaFractionDigit    = 3
	YANGKMaxMinBytes          = 1
	YANGVGrowthMinBytesPerSec = 1
)

// alphaScale is 10^YANGAlphaFractionDigit: an alpha the model takes is a
// whole number of 1/alphaScale.
func alphaScale() float64 { return math.Pow10(YANGAlphaFractionDigit) }

// AlphaHasExtraDigits reports whether alpha has more than
// YANGAlphaFractionDigit fraction digits (by more than a millionth of the
// last digit, for the float's rounding): ygot's validation does not check
// fraction digits, the switch does.
func AlphaHasExtraDigits(alpha float64) bool {
	s := alphaScale()
	return math.Abs(math.Round(alpha*s)-alpha*s) > 1e-6
}

// ceilAlpha and floorAlpha round v up and down to the model's fraction
// digits; a v within 1e-9 of a step is that step.
func ceilAlpha(v float64) float64  { s := alphaScale(); return math.Ceil(v*s-1e-9) / s }
func floorAlpha(v float64) float64 { s := alphaScale(); return math.Floor(v*s+1e-9) / s }

// Weights are the objective's weights (docs/tuner.md): the objective is
//
//	J = Utilisation·(1 − u) + Delay·d + Loss·l + Notifications·n
//
// with u the queue's share of the port rate, d the mean queueing delay in
// RTT_est, l the dropped and paused packets per forwarded packet and n the
// notifications sent per RTT_est. Lower is better.
type Weights struct {
	Utilisation   float64 `yaml:"utilisation" help:"objective weight of the link's idle share, 1 − u"`
	Delay         float64 `yaml:"delay" help:"objective weight of the mean queueing delay, in RTT_est"`
	Loss          float64 `yaml:"loss" help:"objective weight of the dropped and paused packets per forwarded packet"`
	Notifications float64 `yaml:"notifications" help:"objective weight of the notifications sent per RTT_est"`
}

// DefaultWeights: a fully idle link costs 1, as much as a standing queue of
// two RTT_est, one percent of packets dropped or paused, or a thousand
// notifications per RTT_est.
func DefaultWeights() Weights {
	return Weights{Utilisation: 1, Delay: 0.5, Loss: 100, Notifications: 0.001}
}

// Config is the policy's tuning. Durations are wall time for the service
// and simulated time for the simulator; the policy only compares them.
type Config struct {
	Weights Weights `yaml:"weights"`

	// Bounds of what the policy may set, inside the YANG ranges, every
	// one relative to the port (scale-free: the same decision at 10 and
	// 400 Gbit/s, 1 and 30 ms): alpha in [AlphaMin, AlphaMax], and so an
	// explicit kmax in [AlphaMin, AlphaMax] × the port's BDP (R_port ·
	// RTT_est / 8); V_growth in [VGrowthMinShare, VGrowthMaxShare] × R_port.
	AlphaMin        float64 `yaml:"alpha_min" help:"lowest alpha the policy sets, and an explicit kmax in BDPs of the port (in the YANG range 0.001..1000)"`
	AlphaMax        float64 `yaml:"alpha_max" help:"highest alpha the policy sets, and an explicit kmax in BDPs of the port (in the YANG range 0.001..1000)"`
	VGrowthMinShare float64 `yaml:"v_growth_min_share" help:"lowest V_growth the policy sets, a share of R_port"`
	VGrowthMaxShare float64 `yaml:"v_growth_max_share" help:"highest V_growth the policy sets, a share of R_port"`
	TuneVGrowth     bool    `yaml:"tune_v_growth" help:"the policy may change V_growth"`
	// VGrowthStartShare is the policy's own starting point of V_growth, as
	// a share of R_port: the first decision on a queue moves V_growth there
	// from whatever the switch has (rule start), and a tightening gives it
	// to a queue whose QGR trigger is off (v-growth 0, possible in the
	// simulator only, or at or above R_port); 0: no starting point, the
	// switch's V_growth is kept and a trigger that is off stays off.
	VGrowthStartShare float64 `yaml:"v_growth_start_share" help:"starting V_growth, a share of R_port: the first decision on a queue moves V_growth there (rule start; 0: the switch's is kept)"`
	// AlphaStart is the policy's starting alpha: the first decision on a
	// queue moves alpha there from the draft's default (1), with V_growth
	// (rule start); an alpha or an explicit kmax someone set is kept; 0:
	// the switch's K_max is kept. 0.5, the one relative setting (with V_growth 0.1 × R_port)
	// best over the train seeds (docs/tuner.md "A starting point and
	// fewer rules (session 19)").
	AlphaStart float64 `yaml:"alpha_start" help:"starting alpha: the first decision on a queue moves alpha there from the draft's default 1 (rule start; 0: the switch's K_max is kept)"`
	// AlphaStartOverloadCut is the starting alpha instead of AlphaStart on
	// a queue whose node sizes its cut to the overload (the queue's
	// overload_cut on at the first decision: docs/longhaul.md, "A queue
	// standing at the buffer"): such a node drains a queue above K_max
	// within a round trip, so the draft's K_max (alpha 1) keeps the link
	// full without the lower start's margin (docs/tuner.md, "A start for
	// a node that cuts to the overload (session 37)"). 0: AlphaStart.
	AlphaStartOverloadCut float64 `yaml:"alpha_start_overload_cut" help:"starting alpha on a queue whose node has overload_cut on (rule start; 0: alpha_start)"`
	// RulesOff are rules the policy does not apply: a window one of them
	// would decide falls through to the next (growth, delay, under-use,
	// overrun, overhead; settle ends overrun's lifts and is never off, nor
	// is loss). Default under-use and overrun: on the development set
	// neither did better than the starting point held (session 19).
	RulesOff   []Rule        `yaml:"rules_off"`
	TuneKMax   bool          `yaml:"tune_kmax" help:"the policy may change K_max (alpha or an explicit kmax)"`
	MaxStep    float64       `yaml:"max_step" help:"multiplicative step of a change at first; it halves on a reversal or a rollback"`
	MinStep    float64       `yaml:"min_step" help:"smallest multiplicative step of a change"`
	Cooldown   time.Duration `yaml:"cooldown" help:"minimum time between two changes of a queue"`
	MinSamples int           `yaml:"min_samples" help:"samples a window needs for a decision"`
	MaxGap     time.Duration `yaml:"max_gap" help:"longest gap between a window's samples; a longer one suspends decisions"`

	// The rules' thresholds; the pairs (UtilisationLow, DelayLowRTT) and
	// DelayHighRTT leave a dead band in which the policy holds.
	LossHigh     float64 `yaml:"loss_high" help:"loss (dropped + paused per forwarded packet) above which the policy tightens"`
	DelayHighRTT float64 `yaml:"delay_high_rtt" help:"queueing delay, in RTT_est, above which the policy tightens on a link used at least utilisation_low"`
	// GrowthTrendRTT: a queue adding more than this delay per RTT_est is
	// growing (the growth rule), not standing.
	GrowthTrendRTT float64 `yaml:"growth_trend_rtt" help:"a queue adding more than this delay per RTT_est, in RTT_est, is growing (rule growth tightens V_growth)"`
	DelayLowRTT    float64 `yaml:"delay_low_rtt" help:"queueing delay, in RTT_est, below which rule under-use may loosen"`
	UtilisationLow float64 `yaml:"utilisation_low" help:"the tightening rules need the link used at least this share"`
	// UtilisationUnder: the under-use rule needs the link below it (below
	// UtilisationLow: the dead band between the two is hysteresis).
	UtilisationUnder float64 `yaml:"utilisation_under" help:"rule under-use needs the link used below this share (up to utilisation_low: hysteresis)"`
	// NotificationsHighCost: the overhead rule raises V_growth when the
	// notifications' share of the objective (Weights.Notifications × the
	// notifications per RTT_est) is above it, in units of an idle link's
	// cost; with a weight of 0 notifications are free and it never fires.
	NotificationsHighCost float64 `yaml:"notifications_high_cost" help:"rule overhead raises V_growth when the notifications cost more than this (weights.notifications × per RTT_est, in units of an idle link)"`
	// SettleGrowthShare: settle needs the queue to grow slower than this
	// share of V_growth, where overrun needs it faster than V_growth (the
	// dead band between the two keeps them from flipping on one sample's
	// noise).
	SettleGrowthShare float64 `yaml:"settle_growth_share" help:"rule settle needs the queue to grow slower than this share of V_growth (overrun: faster than V_growth)"`
	// OverrunCeilingBDP is the highest K_max, in BDPs of the port, an
	// overrun lifts it to (0: no ceiling): the lift spares the senders the
	// receivers' CNP storm above K_max, but a K_max lifted without a bound
	// fills the buffer (docs/tuner.md, "Overrun and settle").
	OverrunCeilingBDP float64 `yaml:"overrun_ceiling_bdp" help:"highest K_max an overrun lifts to, in BDPs of the port (0: no ceiling)"`
	// OverrunCeilingBufferShare caps the same lift at this share of the
	// port's egress buffer, where the switch reports it (Window.BufferBytes;
	// 0: no such cap): a K_max lifted to the buffer lets the queue fill it
	// and drop (held-out seed 3026: 4 BDP was the port's whole buffer).
	OverrunCeilingBufferShare float64 `yaml:"overrun_ceiling_buffer_share" help:"highest K_max any loosening sets, a share of the port's egress buffer where the switch reports it (0: no cap)"`
	// UnderUseCeilingBDP is the highest K_max, in BDPs of the port, the
	// under-use rule loosens it to (0: no such ceiling, the buffer's
	// alone); with VGrowthStartShare it is the under-use guard: under-use
	// never loosens past the policy's starting point, K_max at most this
	// (1: alpha 1, the draft's) and V_growth at most VGrowthStartShare ×
	// R_port. A quiet window cannot tell a quiet phase before a load step
	// from senders that do better loosened: on train seed 33 (a 6:1 step
	// at 372 Gbit/s) under-use loosened alpha to 2 and V_growth to 0.3 ×
	// R_port just before the step, then V_growth to R_port after it
	// (docs/tuner.md, "The starting-point guard").
	UnderUseCeilingBDP float64 `yaml:"under_use_ceiling_bdp" help:"highest K_max rule under-use loosens to, in BDPs of the port, and V_growth at most v_growth_start_share × R_port (0: no such guard)"`
	// UnderUseVGrowthShare is the guard's ceiling for V_growth, a share of
	// R_port (0: v_growth_start_share, the starting point): set above the
	// start, the start is cautious and under-use opens V_growth up to it
	// as the link shows itself under-used (session 35, measured: docs/tuner.md,
	// "A sweep of the policy's keys").
	UnderUseVGrowthShare float64 `yaml:"under_use_v_growth_share" help:"highest V_growth rule under-use loosens to, a share of R_port (0: v_growth_start_share), while under_use_ceiling_bdp is set"`
	// UnderUseAfterRTT lets rule under-use count the node's throttling of
	// the last UnderUseAfterRTT RTT_est before the window (0: the window's
	// own only): a first-level loop a path round trip long cuts the
	// senders after its marks, and the link idles with the queue empty
	// windows later, when the window itself shows no mark (a queue that
	// runs dry after the node's marks: its K_max is too low for the loop).
	UnderUseAfterRTT float64 `yaml:"under_use_after_rtt" help:"rule under-use also counts the node's throttling of this many RTT_est before the window (0: the window's own only)"`
	// FiringNeedsThrottle (on since session 34): the firing hold needs the
	// window to show the node throttling senders (notifications or its own
	// ECN marks); a trigger that "fires" while the node sends nothing (it
	// defers to another node, or its packets arrive CE-marked from an
	// upstream congestion point, which a switch does not mark again) is no
	// cut in progress, and the tightening rules act (docs/tuner.md,
	// "A trigger that fires while the node is silent").
	// LossCapsUnderUse (session 34, measured): rule under-use never
	// loosens K_max or V_growth above the setting the queue's last loss
	// (or pinned) change left: a setting that dropped packets is not gone
	// back to by a quiet window.
	LossCapsUnderUse    bool `yaml:"loss_caps_under_use" help:"rule under-use never loosens above the setting the queue's last loss change left"`
	FiringNeedsThrottle bool `yaml:"firing_needs_throttle" help:"the firing hold needs the node to throttle senders in the window (notifications or its own marks)"`
	// PinnedBufferShare turns rule pinned on (0: off): a `loss` decision
	// whose own window drops, on a queue whose previous decided window was
	// `loss` too (loss persists after it was answered) and whose last sample
	// is at or above this share of the port's buffer (where the switch
	// reports it), switches the node's overload_cut on, where the node
	// supports it. Above the buffer's K_max-independent share K_max and
	// V_growth are out of reach (docs/tuner.md, "A pinned queue").
	PinnedBufferShare float64 `yaml:"pinned_buffer_share" help:"rule pinned: a persisting loss with the queue at this share of its buffer switches the node's overload_cut on (0: off)"`
	// PinnedOffRTT is how long, in RTT_est, the queue's decided windows
	// must have ended below K_min (K_max / 2) before the tuner switches
	// off an overload_cut it switched on (0: never, kept until an operator
	// changes it).
	PinnedOffRTT float64 `yaml:"pinned_off_rtt" help:"rule pinned: overload_cut off again once the queue stayed below K_min this many RTT_est (0: never)"`
	// QGROffRTT turns rule qgr-off on (0: off): the QGR trigger is switched
	// as good as off (V_growth at the port's rate: RuleQGROff), on a queue
	// whose node sizes its cut to the overload (overload_cut on), once the
	// queue's decided windows have shown, for this many RTT_est (doubled
	// each time the trigger came back on after the tuner switched it off),
	// its cuts costing the link and saving nothing: the under-use rule
	// held at the starting point's V_growth, the link under
	// utilisation_under, the node cutting (notifications other than
	// Resume) with the queue below K_min at every sample (no ECN marks,
	// no QD trigger: the cuts are the QGR trigger's), no loss. A queue at
	// K_min or above, or loss, restarts the count. 0.5: chosen on the
	// development sets (docs/tuner.md, "A start and a growth trigger for a
	// node that cuts to the overload (session 37)"; the rule since
	// "Switching the QGR trigger off (session 17)").
	QGROffRTT float64 `yaml:"qgr_off_rtt" help:"rule qgr-off: V_growth to the port's rate (the QGR trigger as good as off) after this many RTT_est of its cuts costing the link and saving nothing (0: off)"`
	// StandingFloorShare is the delay rule's K_max floor for a standing
	// queue (the window's mean above delay_high_rtt), in multiples of the
	// queue: K_max is never tightened below it (2, the growth and delay
	// rules' floor for any queue, keeps K_min = K_max / 2 at the queue;
	// nearer 1, K_min falls under a standing queue and the first-level ECN
	// marking rises; at 1 K_max sits at the queue). docs/tuner.md, "A
	// standing queue at full use (session 16)".
	StandingFloorShare float64 `yaml:"standing_floor_share" help:"rule delay's K_max floor for a standing queue, in multiples of the queue, in [1, 2]"`
	// OverrunHeadroomShare limits rule overrun to a queue that stays under
	// this share of the port's buffer one RTT_est ahead at the window's
	// pace (0: no such limit; a switch that reports no buffer: none).
	// Above it the window is no overrun, and the growth and delay
	// tightenings it then reaches are not held by firing: overrun's
	// premise (the QGR trigger does the cutting, so K_max can give way for
	// one episode) fails when one RTT_est of growth is more than the
	// buffer's headroom (retired held-out seed 14019: 2.9 RTT_est per
	// RTT_est into a 4-BDP buffer). docs/tuner.md, "A loop that overfills
	// the buffer (session 17)".
	OverrunHeadroomShare float64 `yaml:"overrun_headroom_share" help:"rule overrun only while the queue one RTT_est ahead stays under this share of the port's buffer (0: no such limit)"`
	// SettleWhole: rule settle brings K_max back to the setting the
	// overrun started from in one change, not a step at a time; a lift
	// left half-way by a settle stood when the next overload came
	// (docs/tuner.md, "A settle in one change, kept (session 21)").
	// Off by default: measured with overrun on the development sets only;
	// the held-out read of the two together did not confirm them.
	SettleWhole bool `yaml:"settle_whole" help:"rule settle brings K_max back to the setting the overrun started from in one change, not a step at a time"`
	// SettleUnjudged: a settle's commit is kept on its first complete
	// judge window, as rule start's is: it returns to the setting before
	// the overload, not an experiment, and its judge window after an
	// overload is another phase's (judged, settles were rolled back
	// against idle windows and left lifts in place).
	SettleUnjudged bool `yaml:"settle_unjudged" help:"rule settle's change is kept on its first complete judge window without comparing windows, as rule start's is"`
	// JudgeAheadMaxRTT caps how far ahead, in RTT_est, Judge expects a
	// queue in transit at its pace (a DC-side port's RTT_est is a few µs,
	// its judge window many of them).
	JudgeAheadMaxRTT float64 `yaml:"judge_ahead_max_rtt" help:"how far ahead, in RTT_est, a queue in transit is expected at its pace when a change is judged"`
	// WorseTolerance is the relative rise of the objective after a change
	// that still counts as "not worse" (Judge).
	WorseTolerance float64 `yaml:"worse_tolerance" help:"a change whose objective is worse by more than this share is not confirmed (rolled back)"`
	// AttributeWorsening keeps a change after which the objective got
	// worse only through terms the change cannot worsen (Judge).
	AttributeWorsening bool `yaml:"attribute_worsening" help:"keep a change that got worse only through terms it cannot worsen (false: plain objective not worse)"`
	// JudgeDrainArrivals makes Judge's expectation of a draining queue
	// whole: a queue draining at pace p under a link used u is fed at
	// u + p of R_port, and one expected empty inside the judge window
	// leaves the link carrying only that from then on (false: the link
	// expected as used as before, the queue gone). Without it a change
	// decided on an overload's drain, every sender cut, is blamed for the
	// idle link the drain leaves (retired held-out seed 15012: a settle
	// rolled back, the lift kept into the next overload, which overfilled
	// the buffer). docs/tuner.md, "A settle judged on its drain (session
	// 18)": measured, not turned on.
	JudgeDrainArrivals bool `yaml:"judge_drain_arrivals" help:"judging a change, a draining queue expected to empty leaves the link carrying its arrivals only from then on (false: the link expected as used as before)"`
	// SearchAfterRTT turns the online search on (rule search, 0: off): a
	// queue steady for this many RTT_est since its last change tries a
	// neighbouring setting, judged over SearchJudgeRTT RTT_est (where the
	// caller's judge window is shorter) and kept only when its objective
	// beats the queue's own since the last change by SearchGain.
	SearchAfterRTT float64 `yaml:"search_after_rtt" help:"online search (rule search): a queue steady this many RTT_est since its last change tries a neighbouring setting (0: off)"`
	SearchJudgeRTT float64 `yaml:"search_judge_rtt" help:"online search: a try is judged over at least this many RTT_est"`
	SearchGain     float64 `yaml:"search_gain" help:"online search: a try is kept only when its objective beats the queue's own since the last change by this share"`
}

// alphaStart is the starting alpha for a queue configured as cur
// (StartAlpha).
func (c Config) alphaStart(cur Settings) float64 { return c.StartAlpha(cur.OverloadCut) }

// StartAlpha is rule start's alpha for a queue whose node has overload_cut
// on (overloadCut) or off: AlphaStartOverloadCut where overload_cut is on
// and the key is set, AlphaStart otherwise.
func (c Config) StartAlpha(overloadCut bool) float64 {
	if overloadCut && c.AlphaStartOverloadCut > 0 {
		return c.AlphaStartOverloadCut
	}
	return c.AlphaStart
}

// DefaultConfig is the configuration docs/tuner.md documents.
func DefaultConfig() Config {
	return Config{
		Weights:                   DefaultWeights(),
		AlphaMin:                  0.1,
		AlphaMax:                  10,
		VGrowthMinShare:           0.001,
		VGrowthMaxShare:           1,
		TuneVGrowth:               true,
		VGrowthStartShare:         0.1, // the YANG default's share of a 100 Gbit/s port (TestVGrowthStartShareIsTheDefault)
		AlphaStart:                0.5,
		AlphaStartOverloadCut:     1,
		RulesOff:                  []Rule{RuleOverrun},
		TuneKMax:                  true,
		MaxStep:                   2,
		MinStep:                   1.1,
		Cooldown:                  5 * time.Second,
		MinSamples:                3,
		MaxGap:                    3 * time.Second,
		LossHigh:                  1e-4,
		DelayHighRTT:              0.5,
		DelayLowRTT:               0.1,
		GrowthTrendRTT:            0.25,
		UtilisationLow:            0.9,
		UtilisationUnder:          0.75,
		NotificationsHighCost:     0.5,
		SettleGrowthShare:         0.8,
		OverrunCeilingBDP:         4,
		OverrunCeilingBufferShare: 0.5,
		UnderUseCeilingBDP:        0.707,
		UnderUseAfterRTT:          2,
		FiringNeedsThrottle:       true,
		PinnedBufferShare:         0.75,
		PinnedOffRTT:              16,
		QGROffRTT:                 0.5,
		StandingFloorShare:        2,
		OverrunHeadroomShare:      0,
		SettleWhole:               false,
		SettleUnjudged:            false,
		JudgeAheadMaxRTT:          4,
		WorseTolerance:            0.02,
		AttributeWorsening:        true,
		JudgeDrainArrivals:        false,
		SearchAfterRTT:            0,
		SearchJudgeRTT:            4,
		SearchGain:                0.01,
	}
}

// Validate checks the configuration, naming the offending key (its YAML
// name) in the error. Bounds outside the YANG model's ranges are refused,
// so the policy never proposes a value a switch would refuse.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for _, w := range []struct {
		key string
		v   float64
	}{{"weights.utilisation", c.Weights.Utilisation}, {"weights.delay", c.Weights.Delay},
		{"weights.loss", c.Weights.Loss}, {"weights.notifications", c.Weights.Notifications}} {
		if !finite(w.v) || w.v < 0 {
			bad(w.key, "%v is not a finite weight ≥ 0", w.v)
		}
	}
	if !finite(c.AlphaMin) || c.AlphaMin < YANGAlphaMin || c.AlphaMin > YANGAlphaMax {
		bad("alpha_min", "%v is outside the YANG range of alpha %v..%v", c.AlphaMin, YANGAlphaMin, YANGAlphaMax)
	}
	if !finite(c.AlphaMax) || c.AlphaMax < YANGAlphaMin || c.AlphaMax > YANGAlphaMax {
		bad("alpha_max", "%v is outside the YANG range of alpha %v..%v", c.AlphaMax, YANGAlphaMin, YANGAlphaMax)
	}
	if c.AlphaMin > c.AlphaMax {
		bad("alpha_min", "%v is above alpha_max %v", c.AlphaMin, c.AlphaMax)
	}
	if !finite(c.VGrowthMinShare) || c.VGrowthMinShare <= 0 {
		bad("v_growth_min_share", "%v is not a finite share of R_port > 0", c.VGrowthMinShare)
	}
	if !finite(c.VGrowthMaxShare) || c.VGrowthMaxShare < c.VGrowthMinShare {
		bad("v_growth_max_share", "%v is below v_growth_min_share %v", c.VGrowthMaxShare, c.VGrowthMinShare)
	}
	if !finite(c.VGrowthStartShare) || c.VGrowthStartShare < 0 ||
		(c.VGrowthStartShare > 0 && (c.VGrowthStartShare < c.VGrowthMinShare || c.VGrowthStartShare > c.VGrowthMaxShare)) {
		bad("v_growth_start_share", "%v is neither 0 nor a share in [v_growth_min_share %v, v_growth_max_share %v]", c.VGrowthStartShare, c.VGrowthMinShare, c.VGrowthMaxShare)
	}
	if !finite(c.AlphaStart) || c.AlphaStart < 0 || (c.AlphaStart > 0 && (c.AlphaStart < c.AlphaMin || c.AlphaStart > c.AlphaMax)) {
		bad("alpha_start", "%v is neither 0 nor an alpha in [alpha_min %v, alpha_max %v]", c.AlphaStart, c.AlphaMin, c.AlphaMax)
	} else if c.AlphaStart > 0 && AlphaHasExtraDigits(c.AlphaStart) {
		bad("alpha_start", "%v has more than the YANG model's %d fraction digits", c.AlphaStart, YANGAlphaFractionDigit)
	}
	if a := c.AlphaStartOverloadCut; !finite(a) || a < 0 || (a > 0 && (a < c.AlphaMin || a > c.AlphaMax)) {
		bad("alpha_start_overload_cut", "%v is neither 0 nor an alpha in [alpha_min %v, alpha_max %v]", a, c.AlphaMin, c.AlphaMax)
	} else if a > 0 && AlphaHasExtraDigits(a) {
		bad("alpha_start_overload_cut", "%v has more than the YANG model's %d fraction digits", a, YANGAlphaFractionDigit)
	}
	for i, r := range c.RulesOff {
		switch {
		case !slices.Contains(SwitchableRules(), r):
			bad("rules_off", "%q is not a rule that can be switched off (growth, delay, under-use, overrun, overhead; loss and settle never are)", r)
		case slices.Contains(c.RulesOff[:i], r):
			bad("rules_off", "%q is listed twice", r)
		}
	}
	if !finite(c.MaxStep) || c.MaxStep <= 1 {
		bad("max_step", "%v must be a factor above 1", c.MaxStep)
	}
	if !finite(c.MinStep) || c.MinStep <= 1 || c.MinStep > c.MaxStep {
		bad("min_step", "%v must be a factor above 1 and at most max_step", c.MinStep)
	}
	if c.Cooldown < 0 {
		bad("cooldown", "%v is negative", c.Cooldown)
	}
	if c.MinSamples < 2 {
		bad("min_samples", "%d: a rate needs at least 2 samples", c.MinSamples)
	}
	if c.MaxGap <= 0 {
		bad("max_gap", "%v must be positive", c.MaxGap)
	}
	if !finite(c.LossHigh) || c.LossHigh < 0 {
		bad("loss_high", "%v is not a finite share ≥ 0", c.LossHigh)
	}
	if !finite(c.DelayLowRTT) || c.DelayLowRTT < 0 {
		bad("delay_low_rtt", "%v is not a finite delay ≥ 0", c.DelayLowRTT)
	}
	if !finite(c.DelayHighRTT) || c.DelayHighRTT <= c.DelayLowRTT {
		bad("delay_high_rtt", "%v must be above delay_low_rtt %v (the dead band)", c.DelayHighRTT, c.DelayLowRTT)
	}
	if !finite(c.GrowthTrendRTT) || c.GrowthTrendRTT <= 0 {
		bad("growth_trend_rtt", "%v must be positive", c.GrowthTrendRTT)
	}
	if !finite(c.UtilisationLow) || c.UtilisationLow <= 0 || c.UtilisationLow > 1 {
		bad("utilisation_low", "%v is not a share in (0, 1]", c.UtilisationLow)
	}
	if !finite(c.UtilisationUnder) || c.UtilisationUnder <= 0 || c.UtilisationUnder > c.UtilisationLow {
		bad("utilisation_under", "%v must be a share in (0, utilisation_low %v] (the dead band)", c.UtilisationUnder, c.UtilisationLow)
	}
	if !finite(c.NotificationsHighCost) || c.NotificationsHighCost <= 0 {
		bad("notifications_high_cost", "%v must be positive", c.NotificationsHighCost)
	}
	if !finite(c.SearchAfterRTT) || c.SearchAfterRTT < 0 {
		bad("search_after_rtt", "%v is neither 0 (off) nor a positive number of RTT_est", c.SearchAfterRTT)
	}
	if !finite(c.SearchJudgeRTT) || c.SearchJudgeRTT < 0 {
		bad("search_judge_rtt", "%v is not a finite number of RTT_est ≥ 0", c.SearchJudgeRTT)
	}
	if !finite(c.SearchGain) || c.SearchGain < 0 || c.SearchGain >= 1 {
		bad("search_gain", "%v is not a share in [0, 1)", c.SearchGain)
	}
	if !finite(c.SettleGrowthShare) || c.SettleGrowthShare <= 0 || c.SettleGrowthShare > 1 {
		bad("settle_growth_share", "%v is not a share in (0, 1]", c.SettleGrowthShare)
	}
	if !finite(c.OverrunCeilingBDP) || c.OverrunCeilingBDP < 0 || (c.OverrunCeilingBDP > 0 && c.OverrunCeilingBDP < c.AlphaMin) {
		bad("overrun_ceiling_bdp", "%v is neither 0 (no ceiling) nor a number of BDPs ≥ alpha_min %v", c.OverrunCeilingBDP, c.AlphaMin)
	}
	if !finite(c.OverrunCeilingBufferShare) || c.OverrunCeilingBufferShare < 0 || c.OverrunCeilingBufferShare > 1 {
		bad("overrun_ceiling_buffer_share", "%v is neither 0 (no cap) nor a share of the buffer in (0, 1]", c.OverrunCeilingBufferShare)
	}
	if !finite(c.UnderUseCeilingBDP) || c.UnderUseCeilingBDP < 0 || (c.UnderUseCeilingBDP > 0 && c.UnderUseCeilingBDP < c.AlphaMin) {
		bad("under_use_ceiling_bdp", "%v is neither 0 (no ceiling) nor a number of BDPs ≥ alpha_min %v", c.UnderUseCeilingBDP, c.AlphaMin)
	}
	if !finite(c.UnderUseVGrowthShare) || c.UnderUseVGrowthShare < 0 ||
		(c.UnderUseVGrowthShare > 0 && (c.UnderUseVGrowthShare < c.VGrowthMinShare || c.UnderUseVGrowthShare > c.VGrowthMaxShare)) {
		bad("under_use_v_growth_share", "%v is neither 0 (v_growth_start_share) nor a share of R_port in [v_growth_min_share %v, v_growth_max_share %v]", c.UnderUseVGrowthShare, c.VGrowthMinShare, c.VGrowthMaxShare)
	}
	if !finite(c.UnderUseAfterRTT) || c.UnderUseAfterRTT < 0 {
		bad("under_use_after_rtt", "%v is neither 0 (the window's own throttling only) nor a number of RTT_est > 0", c.UnderUseAfterRTT)
	}
	if !finite(c.PinnedBufferShare) || c.PinnedBufferShare < 0 || c.PinnedBufferShare > 1 {
		bad("pinned_buffer_share", "%v is neither 0 (off) nor a share of the buffer in (0, 1]", c.PinnedBufferShare)
	}
	if !finite(c.StandingFloorShare) || c.StandingFloorShare < 1 || c.StandingFloorShare > 2 {
		bad("standing_floor_share", "%v is not a multiple of the queue in [1, 2] (under 1 K_max would be set under a standing queue: a cut storm)", c.StandingFloorShare)
	}
	if !finite(c.QGROffRTT) || c.QGROffRTT < 0 {
		bad("qgr_off_rtt", "%v is neither 0 (off) nor a positive number of RTT_est", c.QGROffRTT)
	}
	if !finite(c.OverrunHeadroomShare) || c.OverrunHeadroomShare < 0 || c.OverrunHeadroomShare > 1 {
		bad("overrun_headroom_share", "%v is neither 0 (no limit) nor a share of the buffer in (0, 1]", c.OverrunHeadroomShare)
	}
	if !finite(c.PinnedOffRTT) || c.PinnedOffRTT < 0 {
		bad("pinned_off_rtt", "%v is neither 0 (never) nor a positive number of RTT_est", c.PinnedOffRTT)
	}
	if !finite(c.JudgeAheadMaxRTT) || c.JudgeAheadMaxRTT <= 0 {
		bad("judge_ahead_max_rtt", "%v must be a positive delay", c.JudgeAheadMaxRTT)
	}
	if !finite(c.WorseTolerance) || c.WorseTolerance < 0 {
		bad("worse_tolerance", "%v is not a finite share ≥ 0", c.WorseTolerance)
	}
	return errors.Join(errs...)
}

// SwitchableRules are the rules RulesOff may name, in the policy's order.
func SwitchableRules() []Rule {
	return []Rule{RuleGrowth, RuleDelay, RuleUnderUse, RuleOverrun, RuleOverhead}
}

// on says whether the policy applies rule r (not in RulesOff).
func (c Config) on(r Rule) bool { return !slices.Contains(c.RulesOff, r) }

// vGrowthBounds are V_growth's bounds in bytes per second on a port of
// portRateBitsPerSec: the shares of R_port, at least the YANG model's 1.
func (c Config) vGrowthBounds(portRateBitsPerSec int64) (lo, hi int64) {
	r := float64(portRateBitsPerSec) / 8
	lo = max(YANGVGrowthMinBytesPerSec, int64(math.Ceil(c.VGrowthMinShare*r)))
	hi = max(lo, int64(math.Floor(c.VGrowthMaxShare*r)))
	return lo, hi
}

// vGrowthStartBytesPerSec is the policy's starting V_growth on a port of
// portRateBitsPerSec (0: none).
func (c Config) vGrowthStartBytesPerSec(portRateBitsPerSec int64) int64 {
	if c.VGrowthStartShare <= 0 {
		return 0
	}
	return c.vGrowthShareBytesPerSec(c.VGrowthStartShare, portRateBitsPerSec)
}

// vGrowthShareBytesPerSec is share × R_port in bytes/s, inside V_growth's
// bounds.
func (c Config) vGrowthShareBytesPerSec(share float64, portRateBitsPerSec int64) int64 {
	lo, hi := c.vGrowthBounds(portRateBitsPerSec)
	return min(hi, max(lo, int64(math.Round(share*float64(portRateBitsPerSec)/8))))
}

// overrunCeilingBytes is the highest K_max an overrun lifts to on the
// window's port, in bytes (0: none): OverrunCeilingBDP BDPs, and at most
// OverrunCeilingBufferShare of the port's egress buffer where the switch
// reports it.
func (c Config) overrunCeilingBytes(w Window) float64 {
	var ceil float64
	if c.OverrunCeilingBDP > 0 {
		ceil = c.OverrunCeilingBDP * w.bdpBytes(1)
	}
	if b := c.OverrunCeilingBufferShare * float64(w.BufferBytes); b > 0 && (ceil == 0 || b < ceil) {
		ceil = b
	}
	return ceil
}

// loosenCeilingBytes is the highest K_max a loosening of rule may set on
// the window's port, in bytes (0: none): an overrun's ceiling
// (overrunCeilingBytes); for every other rule the same share of the port's
// egress buffer where the switch reports it, the buffer's ceiling, and for
// under-use also UnderUseCeilingBDP BDPs (the starting-point guard). A
// K_max near the buffer lets a queue reach the buffer before the node
// marks or cuts it: on train seed 33 (a 6:1 load step at 372 Gbit/s)
// under-use loosened alpha to 3 (3 of the buffer's 4 BDP) while the link
// idled before the step, the step dropped 24 % of the packets, and
// under-use went on to alpha 10 (docs/tuner.md); with the buffer's
// ceiling alone it still took alpha to 2 before the step.
func (c Config) loosenCeilingBytes(w Window, rule Rule) float64 {
	if rule == RuleOverrun {
		return c.overrunCeilingBytes(w)
	}
	ceil := c.OverrunCeilingBufferShare * float64(w.BufferBytes)
	if rule == RuleUnderUse && c.UnderUseCeilingBDP > 0 {
		if g := c.UnderUseCeilingBDP * w.bdpBytes(1); ceil <= 0 || g < ceil {
			ceil = g
		}
	}
	return ceil
}

// ceilingName names loosenCeilingBytes's ceiling for rule in a reason.
func ceilingName(rule Rule) string {
	switch rule {
	case RuleOverrun:
		return "overrun ceiling"
	case RuleUnderUse:
		return "under-use ceiling"
	}
	return "buffer's ceiling"
}

// ceilingKeys says which keys set rule's ceiling on w's port, for a reason.
func (c Config) ceilingKeys(rule Rule, w Window) string {
	switch rule {
	case RuleOverrun:
		return fmt.Sprintf("overrun_ceiling_bdp %v, overrun_ceiling_buffer_share %v of a %d B buffer", c.OverrunCeilingBDP, c.OverrunCeilingBufferShare, w.BufferBytes)
	case RuleUnderUse:
		if w.BufferBytes > 0 {
			return fmt.Sprintf("under_use_ceiling_bdp %v, overrun_ceiling_buffer_share %v of a %d B buffer: under-use never loosens K_max past the starting point", c.UnderUseCeilingBDP, c.OverrunCeilingBufferShare, w.BufferBytes)
		}
		return fmt.Sprintf("under_use_ceiling_bdp %v: under-use never loosens K_max past the starting point", c.UnderUseCeilingBDP)
	}
	return fmt.Sprintf("overrun_ceiling_buffer_share %v of a %d B buffer: no loosening lifts K_max above it", c.OverrunCeilingBufferShare, w.BufferBytes)
}

// underUseVGrowthCeiling is the highest V_growth (bytes/s) under-use
// loosens it to on a port of portRateBitsPerSec: under_use_v_growth_share
// of it, else the policy's starting point (vGrowthStartBytesPerSec; 0:
// none).
func (c Config) underUseVGrowthCeiling(portRateBitsPerSec int64) int64 {
	if c.UnderUseCeilingBDP <= 0 {
		return 0
	}
	if c.UnderUseVGrowthShare > 0 {
		return c.vGrowthShareBytesPerSec(c.UnderUseVGrowthShare, portRateBitsPerSec)
	}
	return c.vGrowthStartBytesPerSec(portRateBitsPerSec)
}

// kmaxBounds are an explicit kmax's bounds in bytes for the window's port:
// alpha's bounds times its BDP, at least the YANG model's 1.
func (c Config) kmaxBounds(w Window) (lo, hi int64) {
	bdp := w.bdpBytes(1)
	lo = max(YANGKMaxMinBytes, int64(math.Ceil(c.AlphaMin*bdp)))
	hi = max(lo, int64(math.Floor(c.AlphaMax*bdp)))
	return lo, hi
}
