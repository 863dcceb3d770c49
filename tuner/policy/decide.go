package policy

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/internal/plural"
)

// Rule names the rule that made a decision; tuner_actions stores it.
type Rule string

// The rules, in the order Decide applies them (docs/tuner.md).
const (
	RuleNoData   Rule = "no-data"   // too few samples or an unknown input
	RuleGap      Rule = "gap"       // samples missing inside the window
	RuleCooldown Rule = "cool-down" // too soon after the last change
	RuleStart    Rule = "start"     // the first decision on a queue: V_growth to the policy's starting point
	RuleLoss     Rule = "loss"      // drops or pauses: tighten
	RulePinned   Rule = "pinned"    // loss persisting at the buffer: loss's step and the node's overload_cut on (off again once calm)
	RuleSettle   Rule = "settle"    // the overload an overrun lifted K_max for is over: K_max back
	RuleOverrun  Rule = "overrun"   // a queue outgrowing K_max while the QGR trigger cuts: raise K_max
	RuleGrowth   Rule = "growth"    // a queue growing towards delay_high_rtt: tighten V_growth
	RuleDraining Rule = "draining"  // a queue above the threshold that drains below it within RTT_est: hold
	RuleDelay    Rule = "delay"     // a queue above delay_high_rtt on a full link: tighten K_max
	RuleUnderUse Rule = "under-use" // link under-used while senders are throttled: loosen
	RuleOverhead Rule = "overhead"  // many notifications on a full link: raise V_growth
	RuleFiring   Rule = "firing"    // a tightening while the node's own trigger fires: hold
	RuleRejected Rule = "rejected"  // the direction was just rolled back
	RuleBound    Rule = "bound"     // the change is already at its bound
	RuleSteady   Rule = "steady"    // inside the dead band: nothing to do
)

// Direction is the sense of a change: Tighten lowers K_max and V_growth
// (earlier signals, shorter queues), Loosen raises them.
type Direction int

// Directions.
const (
	Hold    Direction = 0
	Tighten Direction = -1
	Loosen  Direction = 1
)

func (d Direction) String() string {
	switch d {
	case Tighten:
		return "tighten"
	case Loosen:
		return "loosen"
	}
	return "hold"
}

// Memory is what the policy remembers about one queue between decisions.
// The zero value is a queue never changed.
type Memory struct {
	// LastChange is the end of the window of the last change (zero: none).
	LastChange time.Time
	Direction  Direction
	// Step is the multiplicative step of the next change (0: MaxStep). It
	// halves (in log) when the direction reverses or a change is rolled
	// back, and doubles back towards MaxStep while the direction holds.
	Step float64
	// Rejected is a direction rolled back, refused until RejectedUntil.
	Rejected      Direction
	RejectedUntil time.Time
	Changes       int
	// Lifted is the setting an overrun raised K_max from (zero: none):
	// once the overload is over K_max goes back to it (rule settle).
	// Memory.endLift is the one place that ends the episode, with why.
	Lifted Settings
	// Search is the online search's state (rule search).
	Search Search
	// LossSeen is the loss a change's judge window measured (Config.Judged,
	// above loss_high; 0: none): drops while a commit is pending fall in
	// no decision's window, so the next decision answers them (rule loss).
	LossSeen float64
	// LiftedTrendRTT is the queue's pace at the episode's last overrun.
	// LiftedTrendRTT is the queue's pace (Metrics.TrendRTT) in the window
	// of the episode's last overrun (0: no lift): a further lift needs
	// the queue slower than that, by worse_tolerance (the last lift is
	// working); a lift that left the pace where it was only lets the
	// queue grow towards the buffer (train seed 22: N2's alpha 1.6 → 2 →
	// 2.35 → 2.73 at 0.367 RTT_est per RTT_est each time, then 37 % of the
	// packets dropped).
	LiftedTrendRTT float64
	// LossStreak counts the queue's consecutive decided windows (past the
	// cool-down) that rule loss classified; any other rule resets it.
	// Rule pinned needs one before (loss persists after it was answered).
	LossStreak int
	// CutOn says rule pinned switched the node's overload_cut on (an
	// operator's or the switch's own value is never switched off);
	// CalmSince is the start of the decided windows that have all ended
	// with the queue below K_min since (zero: the last did not).
	CutOn     bool
	CalmSince time.Time
	// CutOffTrying says the last change was rule pinned's off-try (the
	// overload_cut switched off again after the calm); CutOffRollbacks
	// counts this episode's off-tries rolled back (Reverted), at most
	// maxCutOffDoublings: each doubles the calm the next off-try needs
	// (pinned_off_rtt × 2^CutOffRollbacks). Under an overload that
	// persists, a calm window is the overload_cut's doing, and an off-try
	// every cool-down and judge window put the queue back at the buffer
	// for each judge window (the service's 10 s window meets
	// pinned_off_rtt in its first calm window). Both end with the
	// episode (EndCut).
	CutOffTrying    bool
	CutOffRollbacks int
	// QGRCostSince is the start of the evidence rule qgr-off counts (the
	// QGR trigger's cuts costing the link, qgrCostly; zero: none runs; a
	// change of any rule restarts it);
	// QGROff says rule qgr-off switched the trigger off, and QGROffBacks
	// counts the times it was found on again since (at most
	// maxQGROffDoublings): each doubles the evidence the next off needs.
	QGRCostSince time.Time
	QGROff       bool
	QGROffBacks  int
	// NoStart says rule start is not the policy's to run on the queue: its
	// starting point is someone's choice already — an operator set a tuned
	// leaf (their setting is where tuning starts from), or the audit trail
	// of a service started anew shows the queue decided before (the tuner's
	// own later values, or an operator's, are not the draft's defaults).
	NoStart bool `json:",omitempty"`
	// ThrottledAt is the end of the queue's last window in which the node
	// throttled senders (notifications other than Resume, or ECN marks on
	// packets it forwarded); rule under-use counts it for
	// under_use_after_rtt RTT_est.
	ThrottledAt time.Time `json:",omitempty"`
	// LossAfter is the setting the queue's last loss or pinned change
	// left (zero: none), loss_caps_under_use's cap.
	LossAfter Settings `json:",omitempty"`
}

// maxCutOffDoublings caps Memory.CutOffRollbacks: an off-try waits at most
// pinned_off_rtt × 2^6 (64 ×) of calm.
const maxCutOffDoublings = 6

// EndCut ends the queue's overload_cut episode: the leaf is no longer the
// tuner's to switch off (found off, or set by an operator either way), and
// the calm count and the off-tries' back-off go with it.
func (m *Memory) EndCut() {
	m.CutOn, m.CalmSince, m.CutOffTrying, m.CutOffRollbacks = false, time.Time{}, false, 0
}

// ClaimCut restores a claim on an overload_cut from an audit trail (a
// service started anew, before the queue's first decision): the leaf is
// the tuner's to switch off, and offRollbacks of the episode's off-tries
// were rolled back as worse (Reverted), counted at most as Reverted counts
// them.
func (m *Memory) ClaimCut(offRollbacks int) {
	m.CutOn, m.CutOffRollbacks = true, min(max(offRollbacks, 0), maxCutOffDoublings)
}

// Decision is the outcome of one call of Decide.
type Decision struct {
	Change bool
	Rule   Rule
	// Direction of the change (or of the rule that held it back).
	Direction Direction
	Reason    string
	Before    Settings
	After     Settings
	Metrics   Metrics
	Objective float64
	// Step is the multiplicative step used.
	Step float64
	// Baseline is the objective a search experiment must beat (the mean
	// of the queue's windows since the last change), JudgeRTT the judge
	// window it asks for, in RTT_est (0: the caller's); rule search only.
	Baseline, JudgeRTT float64
}

// Decide is the policy: one decision for one queue's window. It returns
// the memory to keep for the next call. Rules, first match wins
// (classify): loss; settle, once the overload an overrun lifted K_max for
// is over (K_max goes back whatever the other rules but loss say);
// overrun, a growth the QGR trigger cuts already but that will outgrow
// K_max (K_max raised); growth, draining, delay, under-use, overhead,
// otherwise steady. Missing data, gaps and the cool-down come first. A
// growth or delay tightening is held while the node's own trigger for it
// fires, or while K_max is lifted for an overload (firing); a direction
// just rolled back is held for four cool-downs (except against loss); a
// change is one step (at most MaxStep) of alpha (or the explicit K_max)
// and V_growth, clamped to the bounds.
func Decide(cfg Config, w Window, mem Memory) (Decision, Memory) {
	d := Decision{Before: w.Config, After: w.Config}
	if rule, reason := Check(cfg, w); rule != "" {
		d.Rule, d.Reason = rule, reason
		return d, mem
	}
	d.Metrics = Measure(w)
	d.Objective = Objective(d.Metrics, cfg.Weights)
	within := func(t time.Time) bool {
		return !t.IsZero() && w.RTTEst > 0 && w.simSeconds(w.Start.Sub(t)) <= cfg.UnderUseAfterRTT*w.RTTEst.Seconds()
	}
	recent := cfg.UnderUseAfterRTT > 0 && within(mem.ThrottledAt)
	if cfg.UnderUseAfterRTT > 0 && throttles(d.Metrics) {
		mem.ThrottledAt = w.End
	}
	if !mem.LastChange.IsZero() {
		if since := w.End.Sub(mem.LastChange); since < cfg.Cooldown {
			d.Rule = RuleCooldown
			d.Reason = fmt.Sprintf("last change %v ago, cool-down %v", since, cfg.Cooldown)
			return d, mem
		}
	}
	mem.Search.observe(cfg, w, d.Objective)
	if mem.Changes == 0 && !mem.NoStart {
		// A queue the policy never changed, and no one else chose for: its
		// first decision may move V_growth to the policy's starting point
		// (rule start).
		if after, dir, why := start(cfg, w); dir != Hold {
			d.Change, d.Rule, d.Direction, d.After, d.Step = true, RuleStart, dir, after, 1
			d.Reason = why
			// The claim on an overload_cut (CutOn, CalmSince) stays: a
			// service started anew restores it from its audit trail
			// before the queue's first decision. A place, not a step: no
			// direction for the next change to reverse, the step afresh.
			return d, mem.changed(w.End, Hold, 0, RuleStart, 0, Settings{})
		}
	}
	mem.endLift(w.Config, false)
	cm := d.Metrics
	seen := mem.LossSeen
	mem.LossSeen = 0
	if seen > cm.Loss {
		cm.Loss = seen // drops in the last change's judge window (Judged)
	}
	dir, rule, reason := classify(cfg, w, cm, mem.Lifted, recent)
	if rule == RuleLoss && seen > d.Metrics.Loss {
		reason += " in the last change's judge window"
	}
	d.Direction, d.Rule, d.Reason = dir, rule, reason
	streak := mem.LossStreak
	if rule == RuleLoss {
		mem.LossStreak++
	} else {
		mem.LossStreak = 0
	}
	mem.calm(w)
	costly := qgrCostly(cfg, w, cm, rule)
	mem.qgrTrack(cfg, w, cm, rule, costly != "")
	if why := cutOff(cfg, w, mem); why != "" && rule != RuleLoss {
		// Rule pinned's overload_cut, off again once the queue stayed
		// below K_min for pinned_off_rtt: only that leaf moves.
		after := w.Config
		after.OverloadCut = false
		d.Change, d.Rule, d.Direction, d.After, d.Step = true, RulePinned, Loosen, after, 1
		d.Reason = reason + "; " + why
		// CutOn stays: the next window finds the leaf off and ends the
		// episode (calm); a rollback brings it back on, and it is switched
		// off again after twice the calm this try needed (Reverted). The
		// memory's direction is the off-try's, as every rule's change
		// leaves its own: a rollback refuses loosening, not the tightening
		// that switched the leaf on.
		mem.LastChange, mem.Changes, mem.Direction, mem.Search = w.End, mem.Changes+1, Loosen, mem.Search.afterChange(RulePinned)
		mem.CalmSince, mem.CutOffTrying = time.Time{}, true
		mem.QGRCostSince = time.Time{} // a change restarts rule qgr-off's count
		return d, mem
	}
	pin := ""
	if rule == RuleLoss {
		pin = pinned(cfg, w, cm, streak)
	}
	if dir == Hold {
		if rule != RuleSteady {
			return d, mem
		}
		after, sdir, step, why, ok := search(cfg, w, &mem)
		if !ok {
			return d, mem
		}
		d.Change, d.Rule, d.Direction, d.After, d.Step, d.Reason = true, RuleSearch, sdir, after, step, reason+"; "+why
		d.Baseline, d.JudgeRTT = mem.Search.SumJ/float64(mem.Search.N), cfg.SearchJudgeRTT
		mem.LastChange, mem.Changes, mem.Search = w.End, mem.Changes+1, mem.Search.afterChange(RuleSearch)
		mem.CutOffTrying, mem.QGRCostSince = false, time.Time{}
		return d, mem
	}
	if rule == RuleOverrun && mem.Lifted.KMaxMode != "" && mem.LiftedTrendRTT > 0 && d.Metrics.TrendRTT >= mem.LiftedTrendRTT*(1-cfg.WorseTolerance) {
		// Before and after the last lift, in the same overload: a lift
		// that did not slow the queue is not followed by another.
		d.Rule = RuleBound
		d.Reason = fmt.Sprintf("%s; but the last lift did not slow the queue (%.3g RTT_est per RTT_est then, %.3g now): K_max kept",
			reason, mem.LiftedTrendRTT, d.Metrics.TrendRTT)
		return d, mem
	}
	overfill := (rule == RuleGrowth || rule == RuleDelay) && overfills(cfg, w, d.Metrics)
	if (rule == RuleGrowth || rule == RuleDelay) && !overfill {
		// A tightening is held while the node cuts: its own trigger for
		// it fires (an overrun, classified first, is the exception), or
		// K_max is lifted for an overload. Not for a queue that will
		// overfill the buffer (overrun_headroom_share): the node's cuts
		// are too late for it, the tightening rules act.
		if why := firing(w, d.Metrics); why != "" && (!cfg.FiringNeedsThrottle || throttles(d.Metrics)) {
			d.Rule = RuleFiring
			d.Reason = fmt.Sprintf("%s; but %s: the node is cutting already, a lower threshold would only cut deeper once the queue is back", reason, why)
			return d, mem
		}
		if mem.Lifted.KMaxMode != "" {
			d.Rule = RuleFiring
			d.Reason = fmt.Sprintf("%s; but K_max is lifted for an overload the node is cutting (overrun): the thresholds are tightened, if at all, once it is settled", reason)
			return d, mem
		}
	}
	if dir == mem.Rejected && w.End.Before(mem.RejectedUntil) && rule != RuleLoss {
		d.Rule = RuleRejected
		d.Reason = fmt.Sprintf("%s; but the last %s was rolled back: held until %s", reason, dir,
			mem.RejectedUntil.Format(time.RFC3339Nano))
		return d, mem
	}
	if why := qgrOffNow(cfg, w, mem, costly); why != "" {
		// Rule qgr-off: only V_growth moves, to the port's rate (as good
		// as off: qgrOff); judged as a loosening.
		after := w.Config
		after.VGrowthBytesPerSec = qgrOffBytesPerSec(w.PortRateBitsPerSec)
		d.Change, d.Rule, d.After, d.Step = true, RuleQGROff, after, 1
		d.Reason = reason + "; " + why
		mem.LastChange, mem.Changes, mem.Direction, mem.Search = w.End, mem.Changes+1, dir, mem.Search.afterChange(RuleQGROff)
		mem.QGROff, mem.QGRCostSince, mem.CutOffTrying = true, time.Time{}, false
		return d, mem
	}
	step := nextStep(cfg, mem, dir)
	d.Step = step
	// A settle goes back to the setting the overrun started from, never
	// below it.
	var back Settings
	if rule == RuleSettle {
		back = mem.Lifted
	}
	// A queue whose window's mean is above delay_high_rtt stands: the
	// delay rule moves K_max only (apply).
	standing := rule == RuleDelay && d.Metrics.DelayRTT > cfg.DelayHighRTT
	acfg := cfg
	if l := mem.LossAfter; cfg.LossCapsUnderUse && rule == RuleUnderUse && l.KMaxMode == KMaxBDP {
		if l.Alpha > 0 && (acfg.UnderUseCeilingBDP <= 0 || l.Alpha < acfg.UnderUseCeilingBDP) {
			acfg.UnderUseCeilingBDP = max(l.Alpha, cfg.AlphaMin)
		}
		if v := float64(l.VGrowthBytesPerSec) / (float64(w.PortRateBitsPerSec) / 8); l.VGrowthBytesPerSec > 0 && w.PortRateBitsPerSec > 0 {
			acfg.VGrowthStartShare = min(acfg.VGrowthStartShare, v)
			if acfg.UnderUseVGrowthShare > 0 {
				acfg.UnderUseVGrowthShare = min(acfg.UnderUseVGrowthShare, v)
			}
		}
	}
	after, notes := apply(acfg, w, dir, rule, step, back, standing)
	if acfg.UnderUseCeilingBDP != cfg.UnderUseCeilingBDP || acfg.VGrowthStartShare != cfg.VGrowthStartShare || acfg.UnderUseVGrowthShare != cfg.UnderUseVGrowthShare {
		// The ceilings the notes name are the loss cap's, not the keys'.
		if notes != "" {
			notes += "; "
		}
		notes += fmt.Sprintf("loss_caps_under_use: the ceilings are the last loss change's setting (alpha %v, v-growth %d B/s)", mem.LossAfter.Alpha, mem.LossAfter.VGrowthBytesPerSec)
	}
	if overfill {
		reason += fmt.Sprintf("; the queue overfills the buffer one RTT_est ahead (overrun_headroom_share %v): not held while the node cuts", cfg.OverrunHeadroomShare)
		d.Reason = reason
	}
	if l := mem.Lifted; rule == RuleSettle && cfg.SettleWhole && cfg.TuneKMax && l.KMaxMode == w.Config.KMaxMode && kmaxOf(after) > kmaxOf(l) {
		// The whole lift back in one change (settle_whole), to where a
		// settle by steps ends (kmaxBack: alpha rounded up to the model's
		// digits), inside the bounds, and never up.
		if l.KMaxMode == KMaxExplicit {
			lo, hi := cfg.kmaxBounds(w)
			after.KMaxBytes = min(min(max(l.KMaxBytes, lo), hi), after.KMaxBytes)
		} else {
			after.Alpha = min(min(max(ceilAlpha(l.Alpha), cfg.AlphaMin), cfg.AlphaMax), after.Alpha)
		}
		notes = strings.TrimPrefix(notes+", the whole lift at once (settle_whole)", ", ")
	}
	if l := mem.Lifted; (rule == RuleLoss || overfill) && cfg.TuneKMax && l.KMaxMode == w.Config.KMaxMode && kmaxOf(after) > kmaxOf(l) {
		// Loss ends an overrun: the lift let the queue reach the buffer,
		// so K_max goes back to the setting the overload found at once
		// (past the floor that keeps K_max above a queue: a queue that
		// drops is to be cut).
		after.Alpha, after.KMaxBytes = l.Alpha, l.KMaxBytes
		what := "loss"
		if rule != RuleLoss {
			what = "a queue overfilling the buffer"
		}
		notes = strings.TrimPrefix(notes+", "+what+" ends the overrun: K_max back to the setting before it", ", ")
		mem.Lifted, mem.LiftedTrendRTT = Settings{}, 0
	}
	if why := firstLevelHolds(w, d.Metrics, mem, after, rule); why != "" {
		d.Rule, d.After = RuleBound, w.Config
		d.Reason = fmt.Sprintf("%s; but %s", reason, why)
		return d, mem
	}
	if pin != "" {
		// Loss persists at the buffer: the loss step (whatever its floors
		// left) and the node's overload_cut.
		after.OverloadCut = true
		notes = strings.TrimPrefix(notes+", "+pin, ", ")
		d.Rule, rule = RulePinned, RulePinned
		mem.EndCut()
		mem.CutOn = true
	}
	d.After = after
	if rule == RuleSettle {
		mem.endLift(after, after == w.Config)
	}
	if after == w.Config {
		d.Rule = RuleBound
		d.Reason = fmt.Sprintf("%s; but %s", reason, notes)
		if rule == RuleSettle {
			d.Reason += "; the overrun's lift is dropped: K_max stays where it is"
		}
		return d, mem
	}
	d.Change = true
	if notes != "" {
		d.Reason += "; " + notes
	}
	if rule == RuleOverrun && mem.Lifted.KMaxMode == "" {
		mem.Lifted = w.Config // the first overrun of the episode: the setting to go back to
	}
	lt := mem.LiftedTrendRTT
	if rule == RuleOverrun {
		lt = d.Metrics.TrendRTT
	}
	if mem.Lifted.KMaxMode == "" {
		lt = 0
	}
	return d, mem.changed(w.End, dir, step, rule, lt, lossAfter(cfg, mem.LossAfter, rule, after))
}

// changed is the queue's memory after a change of rule decided at end:
// everything of m kept but what a change sets (its time, direction, step,
// count, the search's state, the lift's pace and the loss cap's setting)
// and what a change ends (a judge window's loss, an off-try of the
// overload_cut, rule qgr-off's count). A field added to Memory is kept
// across changes unless it is named here (TestChangedKeepsMemory).
func (m Memory) changed(end time.Time, dir Direction, step float64, rule Rule, liftedTrend float64, lossAfter Settings) Memory {
	m.LastChange, m.Direction, m.Step, m.Changes = end, dir, step, m.Changes+1
	m.Search = m.Search.afterChange(rule)
	m.LiftedTrendRTT, m.LossAfter = liftedTrend, lossAfter
	m.LossSeen, m.CutOffTrying, m.QGRCostSince = 0, false, time.Time{}
	return m
}

// lossAfter is the setting loss_caps_under_use remembers after a change
// of rule to after: a loss or pinned change's, else the one before (none
// while the key is off).
func lossAfter(cfg Config, before Settings, rule Rule, after Settings) Settings {
	if !cfg.LossCapsUnderUse {
		return Settings{}
	}
	if rule == RuleLoss || rule == RulePinned {
		return after
	}
	return before
}

// pinned says why a loss decision escalates to the node's overload_cut
// (rule pinned), "" when it does not: the rule is on (pinned_buffer_share
// above 0), the node takes the leaf, the leaf is off, the queue's previous
// decided window was loss too (loss persists after it was answered), the
// loss is above loss_high (in the window or the last change's judge
// window), and the window's last sample is at or above
// pinned_buffer_share of the port's buffer (where the switch reports it).
// There the node's congestion level is capped and every packet is marked
// whatever K_max is, and a queue at the buffer does not grow, so the QGR
// trigger is silent whatever V_growth is: the thresholds are out of reach,
// and the node's cuts land on the flows with the most bytes queued, the
// fast ones of a queue's sojourn ago (retired held-out seed 10021,
// docs/longhaul.md "A queue standing at the buffer").
func pinned(cfg Config, w Window, m Metrics, streak int) string {
	if cfg.PinnedBufferShare <= 0 || !w.OverloadCutSupported || w.Config.OverloadCut || w.BufferBytes <= 0 ||
		streak == 0 || m.Loss <= cfg.LossHigh {
		return ""
	}
	last := w.Samples[len(w.Samples)-1].QueueDepthBytes
	if float64(last) < cfg.PinnedBufferShare*float64(w.BufferBytes) {
		return ""
	}
	return fmt.Sprintf("loss persists with the queue pinned at the buffer (%d B, %.3g of its %d B: pinned_buffer_share %v) after the last decision's loss: K_max and V_growth are out of reach there, overload_cut on",
		last, float64(last)/float64(w.BufferBytes), w.BufferBytes, cfg.PinnedBufferShare)
}

// calm follows, for an overload_cut rule pinned switched on, how long the
// queue's decided windows have ended below K_min (half the K_max in use);
// a leaf found off (rolled back, or an operator's) ends the episode.
func (m *Memory) calm(w Window) {
	if !m.CutOn {
		return
	}
	if !w.Config.OverloadCut {
		m.EndCut()
		return
	}
	kmin := kmaxBytes(w) / 2
	if last := w.Samples[len(w.Samples)-1].QueueDepthBytes; kmin <= 0 || last >= kmin {
		m.CalmSince = time.Time{}
		return
	}
	if m.CalmSince.IsZero() {
		m.CalmSince = w.Start
	}
}

// cutOff says why rule pinned switches its overload_cut off again, ""
// while it does not: pinned_off_rtt above 0 (0: never), and the queue
// below K_min at the end of every decided window for that many RTT_est,
// doubled for each off-try of the episode rolled back.
func cutOff(cfg Config, w Window, mem Memory) string {
	if cfg.PinnedOffRTT <= 0 || !mem.CutOn || mem.CalmSince.IsZero() || w.RTTEst <= 0 {
		return ""
	}
	need := cfg.PinnedOffRTT * math.Ldexp(1, mem.CutOffRollbacks)
	calm := w.simSeconds(w.End.Sub(mem.CalmSince)) / w.RTTEst.Seconds()
	if calm < need {
		return ""
	}
	if n := mem.CutOffRollbacks; n > 0 {
		tries := "off-tries"
		if n == 1 {
			tries = "off-try"
		}
		return fmt.Sprintf("the queue below K_min for %.3g RTT_est (pinned_off_rtt %v × 2^%d after %d rolled-back %s) since rule pinned switched overload_cut on: overload_cut off",
			calm, cfg.PinnedOffRTT, n, n, tries)
	}
	return fmt.Sprintf("the queue below K_min for %.3g RTT_est (pinned_off_rtt %v) since rule pinned switched overload_cut on: overload_cut off", calm, cfg.PinnedOffRTT)
}

// start is the first decision on a queue (rule start): the policy's
// starting point, from whatever the switch has. V_growth to
// VGrowthStartShare of R_port, so the tuning starts from the same point at
// every port rate (the YANG default of 10 Gbit/s is 40 % of a 25 Gbit/s
// port and 2.5 % of a 400 Gbit/s one), and alpha from the draft's default
// (1) to AlphaStart (AlphaStartOverloadCut on a queue whose node has
// overload_cut on: Config.alphaStart). A knob stays where it is when it has no starting
// point or is not tuned, when it is there already (within MinStep),
// V_growth when the QGR trigger is off or as good as off (the growth rule
// switches it on), and K_max when it is not the draft's default (an alpha
// or an explicit kmax someone set). Its direction is K_max's where K_max
// moves, V_growth's otherwise.
func start(cfg Config, w Window) (Settings, Direction, string) {
	after := w.Config
	var dir Direction = Hold
	var why []string
	near := func(cur, target float64) bool { r := cur / target; return r >= 1/cfg.MinStep && r <= cfg.MinStep }
	sense := func(cur, target float64) Direction {
		if target > cur {
			return Loosen
		}
		return Tighten
	}
	target := cfg.vGrowthStartBytesPerSec(w.PortRateBitsPerSec)
	cur := w.Config.VGrowthBytesPerSec
	// A trigger that is off (V_growth 0, the simulator's nodes only) is
	// left to the growth rule, which switches it on where a queue grows:
	// switched on at every queue at once, it cost tuner-load-step its win
	// under the policy before session 19 (J 0.1714 against 0.1402,
	// docs/tuner.md). One as good as off (at or above R_port: the YANG
	// default of 10 Gbit/s on a 10 Gbit/s port) is the draft's default,
	// not a choice, and goes to the starting point like any other: the
	// start is the one relative setting, V_growth included.
	if cfg.TuneVGrowth && target > 0 && cur != 0 && !near(float64(cur), float64(target)) {
		after.VGrowthBytesPerSec = target
		dir = sense(float64(cur), float64(target))
		why = append(why, fmt.Sprintf("V_growth from the switch's %d B/s (%.3g of R_port) to %d B/s (v_growth_start_share %.3g)",
			cur, float64(cur)*8/float64(w.PortRateBitsPerSec), target, cfg.VGrowthStartShare))
	}
	// K_max moves only from the draft's default (BDP_ADAPTIVE at the
	// node's default alpha, 1): an alpha or an explicit kmax someone set,
	// before the tuner could see it set, is theirs and kept (the operator
	// wins, also before the tuner's first window).
	key, as := "alpha_start", cfg.alphaStart(w.Config)
	if as != cfg.AlphaStart {
		key = "alpha_start_overload_cut: the node cuts to the overload"
	}
	if a := w.Config.Alpha; cfg.TuneKMax && as > 0 && w.Config.KMaxMode == KMaxBDP &&
		a == lhcnp.DefaultQueueConfig().Alpha && !near(a, as) {
		after.Alpha = as
		dir = sense(a, as)
		why = append(why, fmt.Sprintf("alpha from the draft's default %.4g to %.4g (%s)", a, as, key))
	}
	if dir == Hold {
		return w.Config, Hold, ""
	}
	return after, dir, "the first decision on the queue, the policy's starting point: " + strings.Join(why, "; ")
}

// endLift ends the overload episode an overrun started (clears Lifted)
// when it is over, with the queue's K_max at cur; stuck is a settle that
// cannot move K_max. It is over when
//   - the K_max mode is no longer the one lifted: the two settings no
//     longer compare;
//   - K_max is at or under the setting of before: the overrun was rolled
//     back, another rule moved K_max there, or a settle brought it back
//     (Decide asks at the start of a decision, with the queue's settings,
//     and after a settle, with the settle's: a change of another rule is
//     seen in the next window, once applied, so one rolled back leaves the
//     lift as it was);
//   - a settle cannot move K_max (stuck: the K_base floor, when RTT_est
//     fell, or a bound): kept, the lift would hold every growth and delay
//     tightening as firing for ever.
func (m *Memory) endLift(cur Settings, stuck bool) {
	switch l := m.Lifted; {
	case l.KMaxMode == "":
		return
	case l.KMaxMode != cur.KMaxMode, kmaxOf(cur) <= kmaxBack(l), stuck:
		m.Lifted, m.LiftedTrendRTT = Settings{}, 0
	}
}

// kmaxBack is where a settle brings K_max back to for an overrun lifted
// from l: l's alpha rounded up to the model's 3 digits (the floor
// tighterKMax enforces), or l's explicit K_max.
func kmaxBack(l Settings) float64 {
	if l.KMaxMode == KMaxExplicit {
		return float64(l.KMaxBytes)
	}
	return ceilAlpha(l.Alpha)
}

// kmaxOf orders settings by K_max: alpha, or the explicit K_max.
func kmaxOf(s Settings) float64 {
	if s.KMaxMode == KMaxExplicit {
		return float64(s.KMaxBytes)
	}
	return s.Alpha
}

// settled says why the overload an overrun lifted K_max for is over, ""
// while it is not: the queue grows slower than settle_growth_share of
// V_growth (overrun needs it faster than V_growth: the band between keeps
// the two from flipping on one sample's noise) and is below the K_max it
// was lifted from.
func settled(cfg Config, w Window, m Metrics, lifted Settings) string {
	growthBytesPerSec := w.growthBytesPerSec(m)
	if w.Config.VGrowthBytesPerSec > 0 && growthBytesPerSec >= cfg.SettleGrowthShare*float64(w.Config.VGrowthBytesPerSec) {
		return ""
	}
	old := w.bdpBytes(lifted.Alpha)
	if lifted.KMaxMode == KMaxExplicit {
		old = float64(lifted.KMaxBytes)
	}
	last := float64(w.Samples[len(w.Samples)-1].QueueDepthBytes)
	if last >= old { // K_max at or under the setting of before has ended the lift already (endLift)
		return ""
	}
	return fmt.Sprintf("the overload is over (growth %.4g B/s under settle_growth_share of V_growth, the queue at %.3g RTT_est under the K_max of before the overrun): K_max back", growthBytesPerSec, last/w.bdpBytes(1))
}

// classify picks the rule, the first that matches: loss; settle (lifted
// is the setting an overrun raised K_max from, zero when none); overrun;
// growth; draining; delay; under-use; overhead; steady. The firing hold
// comes after it, in Decide. The thresholds leave a dead band (hysteresis):
// the queue is tightened above DelayHighRTT and loosened only below
// DelayLowRTT with the link below UtilisationUnder. A queue growing fast
// towards the threshold (one RTT_est ahead at the window's pace) is the
// growth rule's, which tightens the growth trigger: it catches the growth
// with small early cuts, where a lower K_max under a growing queue would
// cut every flow at every interval. A standing queue is the delay rule's,
// which lowers K_max. Tightening looks at the window's mean and its last
// sample (fast attack); loosening needs both below (slow release).
func classify(cfg Config, w Window, m Metrics, lifted Settings, recent bool) (Direction, Rule, string) {
	throttled := throttles(m)
	by := fmt.Sprintf("while %s and %.2f%% ECN marks throttle senders", plural.Count(m.Notifications.Total(), "notification"), m.ECNMarkingPercent)
	if !throttled && recent {
		throttled, by = true, fmt.Sprintf("after the node throttled senders within under_use_after_rtt %v RTT_est", cfg.UnderUseAfterRTT)
	}
	delay := math.Max(m.DelayRTT, m.LastDelayRTT)
	ahead := m.LastDelayRTT + m.TrendRTT // one RTT_est ahead at the window's pace
	// A queue under K_base, the node's sensitivity floor (the draft's "at
	// least one maximum-sized frame"), is no congestion to tighten for: on
	// a DC-side port with an RTT_est of 2 µs one 4 KB packet is 1.7 RTT_est.
	aboveBase := func(delayRTT float64) bool { return w.bdpBytes(delayRTT) > float64(w.KBaseBytes) }
	growing := m.TrendRTT > cfg.GrowthTrendRTT && ahead > cfg.DelayHighRTT && m.Utilisation >= cfg.UtilisationLow && aboveBase(ahead)
	growth := func() string {
		return fmt.Sprintf("queue growing by %.3g RTT_est per RTT_est (growth_trend_rtt %.3g): %.3g RTT_est one RTT_est ahead, above delay_high_rtt %.3g, with the link %.1f%% used",
			m.TrendRTT, cfg.GrowthTrendRTT, ahead, cfg.DelayHighRTT, 100*m.Utilisation)
	}
	var settle, over string
	if lifted.KMaxMode != "" {
		settle = settled(cfg, w, m, lifted)
	}
	if growing {
		over = overrun(cfg, w, m)
	}
	switch {
	case m.Loss > cfg.LossHigh:
		return Tighten, RuleLoss, fmt.Sprintf("%.3g of packets dropped or paused (loss_high %.3g)", m.Loss, cfg.LossHigh)
	case settle != "":
		// Before every rule but loss: the lift is for the overload only.
		return Tighten, RuleSettle, settle
	case over != "" && cfg.on(RuleOverrun):
		// A growth the QGR trigger cuts already, outgrowing K_max: K_max
		// is in the way, not too high (overrun).
		return Loosen, RuleOverrun, growth() + "; " + over
	case growing && cfg.on(RuleGrowth):
		return Tighten, RuleGrowth, growth()
	case delay > cfg.DelayHighRTT && m.Utilisation >= cfg.UtilisationLow && aboveBase(delay) && m.TrendRTT < -cfg.GrowthTrendRTT && ahead <= cfg.DelayHighRTT:
		return Hold, RuleDraining, fmt.Sprintf("queueing delay %.3g RTT_est (mean %.3g, last %.3g) above delay_high_rtt %.3g, but draining by %.3g RTT_est per RTT_est: %.3g one RTT_est ahead",
			delay, m.DelayRTT, m.LastDelayRTT, cfg.DelayHighRTT, -m.TrendRTT, ahead)
	case delay > cfg.DelayHighRTT && m.Utilisation >= cfg.UtilisationLow && aboveBase(delay) && cfg.on(RuleDelay):
		return Tighten, RuleDelay, fmt.Sprintf("queueing delay %.3g RTT_est (mean %.3g, last %.3g) above delay_high_rtt %.3g with the link %.1f%% used",
			delay, m.DelayRTT, m.LastDelayRTT, cfg.DelayHighRTT, 100*m.Utilisation)
	case m.Utilisation < cfg.UtilisationUnder && delay < cfg.DelayLowRTT && throttled && cfg.on(RuleUnderUse):
		return Loosen, RuleUnderUse, fmt.Sprintf("link %.1f%% used (utilisation_under %.1f%%), queue %.3g RTT_est (delay_low_rtt %.3g), %s",
			100*m.Utilisation, 100*cfg.UtilisationUnder, delay, cfg.DelayLowRTT, by)
	case cfg.Weights.Notifications*m.NotificationsPerRTT > cfg.NotificationsHighCost && m.Utilisation >= cfg.UtilisationLow && cfg.on(RuleOverhead):
		return Loosen, RuleOverhead, fmt.Sprintf("%.3g notifications per RTT_est cost %.3g of an idle link (notifications_high_cost %.3g) on a link %.1f%% used",
			m.NotificationsPerRTT, cfg.Weights.Notifications*m.NotificationsPerRTT, cfg.NotificationsHighCost, 100*m.Utilisation)
	}
	return Hold, RuleSteady, fmt.Sprintf("inside the dead band: link %.1f%% used, queue %.3g RTT_est, %.3g lost, %.3g notifications per RTT_est",
		100*m.Utilisation, m.DelayRTT, m.Loss, m.NotificationsPerRTT)
}

// throttles says the window shows the node throttling senders. Resume
// releases them: only the cutting actions and ECN marks throttle. Marks
// need packets: a node's marking rate is the share of the packets it
// forwarded, and one that forwarded none may still report the last share
// it measured (the simulator's nodes do).
func throttles(m Metrics) bool {
	return m.Notifications.Total()-m.Notifications.Resume > 0 || (m.ECNMarkingPercent > 0 && m.Packets > 0)
}

// firing says which of the node's second-level triggers the window shows
// firing, "" when none: the queue at or above its effective K_max (QD >
// K_max), or growing faster than V_growth (QGR > V_growth, the window's
// mean growth from its first to its last sample). The thresholds decide
// when a node starts cutting; while it cuts, the cuts and the senders'
// reaction decide, and a threshold lowered then only over-cuts once the
// queue has drained (in the simulator, a V_growth halved under a 3:1
// incast that had fired it already cost 6.4 points of utilisation over
// the run, docs/tuner.md).
func firing(w Window, m Metrics) string {
	last := w.Samples[len(w.Samples)-1].QueueDepthBytes
	kmax := kmaxBytes(w)
	if kmax > 0 && last >= kmax {
		return fmt.Sprintf("the queue (%d B) is at or above K_max (%d B): the QD trigger fires", last, kmax)
	}
	if qgrFires(w, m) {
		return fmt.Sprintf("the queue grows at %.4g B/s, above V_growth (%d B/s): the QGR trigger fires",
			w.growthBytesPerSec(m), w.Config.VGrowthBytesPerSec)
	}
	return ""
}

// qgrFires says whether the queue grows faster than V_growth over the
// window, with a V_growth that is on: one at or above R_port is as good
// as off (qgrOff), and a queue growing past it is the growth rule's to
// switch the trigger on, not a trigger to rely on (a 2:1 incast grows the
// queue at R_port itself, one sample's noise above or below V_growth).
func qgrFires(w Window, m Metrics) bool {
	v := w.Config.VGrowthBytesPerSec
	return !qgrOff(v, w.PortRateBitsPerSec) && w.growthBytesPerSec(m) > float64(v)
}

// overrun says why a queue that grows faster than V_growth (the QGR
// trigger fires: the node cuts the senders itself, the second level of
// §5.4 in control) will outgrow K_max one RTT_est ahead at the window's
// pace, "" when it will not. Above K_max every packet is ECN-marked, and
// the receivers' CNPs for those marks cut the senders again a whole path
// round trip later, after the direct cuts took effect: the senders end up
// far below the port rate and the link idles once the queue is gone (in
// the simulator's mid-wan, K_max at one BDP under a 2.5:1 overload left
// 19 ms of 100 % marking, 12450 receiver CNPs and the link idle for the
// last 18 ms of the run). Raising K_max keeps the marks proportional
// while the QGR trigger does the cutting.
func overrun(cfg Config, w Window, m Metrics) string {
	if !qgrFires(w, m) || overfills(cfg, w, m) {
		return ""
	}
	v := w.Config.VGrowthBytesPerSec
	kmax := kmaxBytes(w)
	ahead := m.LastDelayRTT + m.TrendRTT
	if kmax <= 0 || w.bdpBytes(ahead) <= float64(kmax) {
		return ""
	}
	return fmt.Sprintf("the QGR trigger cuts the senders already (growth %.4g B/s above V_growth %d B/s), and the queue outgrows K_max (%.3g RTT_est) one RTT_est ahead: above it every packet is marked and the receivers' CNPs would cut the senders again a path round trip later, so K_max is raised",
		w.growthBytesPerSec(m), v, float64(kmax)/w.bdpBytes(1))
}

// overfills says whether the queue one RTT_est ahead at the window's pace
// is at or above overrun_headroom_share of the port's buffer (false when
// the option is off or the switch reports no buffer). There overrun's
// premise fails: the node's cuts reach the senders a loop away, and one
// RTT_est of growth at that pace fills the buffer before they do (retired
// held-out seed 14019, docs/tuner.md "A loop that overfills the buffer").
func overfills(cfg Config, w Window, m Metrics) bool {
	if cfg.OverrunHeadroomShare <= 0 || w.BufferBytes <= 0 || m.TrendRTT <= 0 {
		return false
	}
	return w.bdpBytes(m.LastDelayRTT+m.TrendRTT) >= cfg.OverrunHeadroomShare*float64(w.BufferBytes)
}

// nextStep adapts the step: halved (in log) on a reversal, doubled back
// towards MaxStep while the direction holds.
func nextStep(cfg Config, mem Memory, dir Direction) float64 {
	step := mem.Step
	if step == 0 {
		return cfg.MaxStep
	}
	switch mem.Direction {
	case dir:
		step = 1 + (step-1)*2
	case -dir:
		step = 1 + (step-1)/2
	}
	return math.Min(cfg.MaxStep, math.Max(cfg.MinStep, step))
}

// apply computes the settings after one step in dir. The overhead rule
// moves V_growth only. A tightening never takes K_max below back's (zero
// Settings: no such floor). standing is a delay decision on a queue that
// stands (its window's mean above delay_high_rtt, not only its last
// sample): K_max only, never V_growth. notes says what a bound or a floor
// held.
func apply(cfg Config, w Window, dir Direction, rule Rule, step float64, back Settings, standing bool) (Settings, string) {
	factor := step
	if dir == Tighten {
		factor = 1 / step
	}
	// The lowest K_max a tightening may set (no cut storm: a K_max under
	// the queue makes the QD trigger cut every flow at every interval
	// until the queue drains): a growing queue's depth one window ahead at
	// its pace; a queue that is not growing, its depth; the current K_max
	// when the queue is above it already (the node is cutting).
	last, first := w.Samples[len(w.Samples)-1].QueueDepthBytes, w.Samples[0].QueueDepthBytes
	kmaxNow := kmaxBytes(w)
	var floorBytes int64
	switch {
	case last > first:
		floorBytes = 2*last - first
	case kmaxNow > 0 && last >= kmaxNow:
		floorBytes = kmaxNow
	default:
		floorBytes = last
	}
	// The growth and delay rules first keep K_max at twice that: the queue
	// at most at K_min (K_max / 2), inside the ECN range of the
	// first-level response, never just under K_max, where any burst fires
	// the QD trigger on every flow until the queue drains (in the
	// simulator, K_max set 4 % above a standing queue under a 2:1 incast
	// left the link 23 % used 18 ms later). Only when that moves nothing and V_growth
	// cannot move either, K_max goes down to the queue itself. A standing
	// queue is the exception: the growth trigger cannot shorten a queue
	// that does not grow (it only cuts the next small burst: in the
	// simulator, V_growth halved twice for a queue standing at 0.55 RTT_est
	// after an 8:1 load step left the link 68-72 % used), and K_max at the
	// queue fires the QD trigger on every burst; so when twice the queue
	// is above the K_max a step would give, nothing moves (bound).
	// A standing queue's floor is standing_floor_share × the queue (2 by
	// default, as the others'; below 2 K_min falls under the queue and the
	// first-level ECN marking rises: docs/tuner.md, "A standing queue at
	// full use (session 16)").
	gentle := rule == RuleGrowth || rule == RuleDelay
	share := 0.0
	switch {
	case standing:
		share = cfg.StandingFloorShare
	case gentle:
		share = 2
	}
	after, notes := tighterKMax(cfg, w, dir, rule, factor, floorBytes, share, back)
	if gentle && !standing && after == w.Config && !(cfg.TuneVGrowth && vgCanMove(cfg, w.Config.VGrowthBytesPerSec, w.PortRateBitsPerSec, dir)) {
		after, notes = tighterKMax(cfg, w, dir, rule, factor, floorBytes, 0, back)
	}
	vgKnob := rule != RuleDelay && rule != RuleOverrun && rule != RuleSettle
	switch {
	case rule == RuleDelay && standing && after == w.Config:
		notes = append(notes, "the queue stands (the window's mean above delay_high_rtt): V_growth would not shorten it, V_growth kept")
	case rule == RuleDelay && after == w.Config:
		vgKnob = true // a queue crossing the threshold, K_max cannot move: the growth trigger instead
	}
	switch {
	case !vgKnob:
	case cfg.TuneVGrowth && qgrOff(w.Config.VGrowthBytesPerSec, w.PortRateBitsPerSec) && dir == Tighten && cfg.VGrowthStartShare > 0:
		// The QGR trigger off, or as good as off: tightening switches it
		// on at the policy's starting point, a share of R_port (the YANG
		// default is a tenth of a 100 Gbit/s port).
		after.VGrowthBytesPerSec = cfg.vGrowthStartBytesPerSec(w.PortRateBitsPerSec)
	case cfg.TuneVGrowth && w.Config.VGrowthBytesPerSec > 0:
		lo, hi := cfg.vGrowthBounds(w.PortRateBitsPerSec)
		next := int64(math.Round(float64(w.Config.VGrowthBytesPerSec) * factor))
		if g := cfg.underUseVGrowthCeiling(w.PortRateBitsPerSec); rule == RuleUnderUse && dir == Loosen && g > 0 && next > g {
			// The starting-point guard: under-use loosens V_growth no
			// further than the policy's starting point (or
			// under_use_v_growth_share's ceiling).
			if next = max(w.Config.VGrowthBytesPerSec, g); next == w.Config.VGrowthBytesPerSec {
				key, share := "v_growth_start_share", cfg.VGrowthStartShare
				if cfg.UnderUseVGrowthShare > 0 {
					key, share = "under_use_v_growth_share", cfg.UnderUseVGrowthShare
				}
				notes = append(notes, fmt.Sprintf("v-growth %d B/s is at or above the under-use ceiling of %d B/s (%s %v of R_port): v-growth kept",
					w.Config.VGrowthBytesPerSec, g, key, share))
				after.VGrowthBytesPerSec = next
				break
			}
		}
		v, note := bounded("v-growth", "B/s", dir, w.Config.VGrowthBytesPerSec, next, lo, hi)
		if note != "" {
			notes = append(notes, note)
		}
		after.VGrowthBytesPerSec = v
	}
	return after, strings.Join(notes, ", ")
}

// tighterKMax moves K_max (alpha, or the explicit kmax) by factor when the
// rule moves it; a tightening never below floorBytes (share × that when
// share > 0: 2 for the growth and delay rules), nor below back's K_max (a settle: the setting an overrun
// started from, as far as the bounds allow; zero Settings: none), nor
// above the K_max it started from. notes say what a bound or floor held.
func tighterKMax(cfg Config, w Window, dir Direction, rule Rule, factor float64, floorBytes int64, share float64, back Settings) (Settings, []string) {
	after := w.Config
	var notes []string
	last := w.Samples[len(w.Samples)-1].QueueDepthBytes
	ahead := fmt.Sprintf("the queue (%d B, %d B one window ahead)", last, floorBytes)
	if share > 0 {
		// One message for every share (the growth and delay rules' 2, a
		// standing queue's standing_floor_share): the multiple as set, and
		// where K_min (K_max / 2) then sits.
		ahead = fmt.Sprintf("%v × the queue (%d B, %d B one window ahead: K_min at %v × the queue)", share, last, floorBytes, share/2)
		floorBytes = int64(math.Ceil(float64(floorBytes) * share))
	}
	// Which knobs: the growth and overhead rules move V_growth (the growth
	// rule K_max when V_growth cannot move), the delay rule K_max (V_growth
	// when K_max cannot move, for a queue crossing the threshold only: apply),
	// the overrun rule K_max only, loss and under-use both.
	kmaxKnob := rule != RuleOverhead && rule != RuleGrowth
	if rule == RuleGrowth && (!cfg.TuneVGrowth || !vgCanMove(cfg, w.Config.VGrowthBytesPerSec, w.PortRateBitsPerSec, dir)) {
		kmaxKnob = true
	}
	if cfg.TuneKMax && kmaxKnob {
		switch w.Config.KMaxMode {
		case KMaxBDP:
			bdpBytes := w.bdpBytes(1)
			lo, hi := ceilAlpha(cfg.AlphaMin), floorAlpha(cfg.AlphaMax)
			// Rounded to the YANG model's 3 digits towards the current
			// value, so a step never exceeds max-step.
			a := floorAlpha(w.Config.Alpha * factor)
			floor, backAlpha := 0.0, 0.0
			if dir == Tighten {
				a = ceilAlpha(w.Config.Alpha * factor)
				floor = ceilAlpha(float64(floorBytes) / bdpBytes)
				if back.KMaxMode == KMaxBDP {
					backAlpha = math.Min(kmaxBack(back), hi)
				}
				a = math.Max(a, math.Max(floor, backAlpha))
			}
			ceiling, ceilAlphaV := false, 0.0
			if c := cfg.loosenCeilingBytes(w, rule); dir == Loosen && c > 0 {
				ceilAlphaV = floorAlpha(c / bdpBytes)
				if a > ceilAlphaV {
					a, ceiling = math.Max(w.Config.Alpha, ceilAlphaV), true
				}
			}
			switch a = math.Min(hi, math.Max(lo, a)); {
			case ceiling && a == w.Config.Alpha:
				notes = append(notes, fmt.Sprintf("alpha %v is at or above the %s of %v BDP (%s): alpha kept",
					w.Config.Alpha, ceilingName(rule), ceilAlphaV, cfg.ceilingKeys(rule, w)))
			case outside(dir, w.Config.Alpha, lo, hi):
				notes = append(notes, fmt.Sprintf("alpha %v is outside its bounds [%v, %v], and bringing it back would %s the other way: alpha kept",
					w.Config.Alpha, lo, hi, dir))
			case dir == Tighten && w.atKBaseFloor(w.Config.Alpha):
				notes = append(notes, fmt.Sprintf("K_max is at its K_base floor %d B: alpha kept", w.KBaseBytes))
			case dir == Loosen && w.atKBaseFloor(a):
				notes = append(notes, fmt.Sprintf("K_max stays at its K_base floor %d B: alpha kept", w.KBaseBytes))
			case dir == Tighten && a >= w.Config.Alpha && floor >= w.Config.Alpha:
				notes = append(notes, fmt.Sprintf("%s is above the K_max a lower alpha would give: alpha kept", ahead))
			case a == w.Config.Alpha:
				notes = append(notes, fmt.Sprintf("alpha at its bound %v", a))
			default:
				after.Alpha = a
			}
		case KMaxExplicit:
			kLo, kHi := cfg.kmaxBounds(w)
			k := int64(math.Round(float64(w.Config.KMaxBytes) * factor))
			if dir == Tighten {
				backBytes := int64(0)
				if back.KMaxMode == KMaxExplicit {
					backBytes = min(int64(kmaxBack(back)), kHi)
				}
				k = min(w.Config.KMaxBytes, max(k, floorBytes, backBytes)) // no cut storm (above)
			}
			if dir == Tighten && k == w.Config.KMaxBytes && floorBytes >= k && w.Config.KMaxBytes >= kLo {
				notes = append(notes, fmt.Sprintf("%s is above the K_max a lower kmax would give: kmax kept", ahead))
				break
			}
			if cb := cfg.loosenCeilingBytes(w, rule); dir == Loosen && cb > 0 {
				if c := int64(math.Floor(cb)); k > c {
					k = max(w.Config.KMaxBytes, c)
					if k == w.Config.KMaxBytes {
						notes = append(notes, fmt.Sprintf("kmax %d B is at or above the %s of %d B (%s): kmax kept",
							k, ceilingName(rule), c, cfg.ceilingKeys(rule, w)))
						break
					}
				}
			}
			k, note := bounded("kmax", "B", dir, w.Config.KMaxBytes, k, kLo, kHi)
			if note != "" {
				notes = append(notes, note)
			}
			after.KMaxBytes = k
		}
	}
	return after, notes
}

// bounded is a step of an integer knob from cur to next, clamped to [lo,
// hi]; a cur outside the bound dir moves towards is kept (outside), and
// note says what held the knob.
func bounded(name, unit string, dir Direction, cur, next, lo, hi int64) (v int64, note string) {
	next = min(hi, max(lo, next))
	switch {
	case outside(dir, float64(cur), float64(lo), float64(hi)):
		return cur, fmt.Sprintf("%s %d %s is outside its bounds [%d, %d] %s, and bringing it back would %s the other way: %s kept",
			name, cur, unit, lo, hi, unit, dir, name)
	case next == cur:
		return cur, fmt.Sprintf("%s at its bound %d %s", name, cur, unit)
	}
	return next, ""
}

// outside says whether a value set outside the tuner's bounds [lo, hi]
// (by an operator) lies beyond the bound dir moves towards: clamping the
// step would then move it the other way (a loosening that lowers K_max, a
// tightening that raises it), so it is left where it is.
func outside(dir Direction, v, lo, hi float64) bool {
	return (dir == Loosen && v > hi) || (dir == Tighten && v < lo)
}

// qgrOff says whether a V_growth (bytes/s) leaves the QGR trigger off, or
// as good as off on a port of the given rate (bit/s): 0, or at least the
// port's rate — the queue then grows that fast only when more than twice
// the port rate arrives, so a 2:1 incast grows it unseen (the YANG default,
// 10 Gbit/s, on a 10 Gbit/s port).
func qgrOff(vBytesPerSec, portRateBitsPerSec int64) bool {
	return vBytesPerSec == 0 || (portRateBitsPerSec > 0 && vBytesPerSec*8 >= portRateBitsPerSec)
}

// vgCanMove says whether V_growth can move in dir within its bounds.
func vgCanMove(cfg Config, v, portRateBitsPerSec int64, dir Direction) bool {
	switch {
	case dir == Tighten && qgrOff(v, portRateBitsPerSec) && cfg.VGrowthStartShare > 0:
		return true
	case v == 0:
		return false
	}
	lo, hi := cfg.vGrowthBounds(portRateBitsPerSec)
	switch {
	case dir == Tighten:
		return v > lo
	default:
		return v < hi
	}
}

// Reverted is the memory after the change decided at mem.LastChange was
// rolled back at the given time: the cool-down restarts, the step halves,
// and the direction is refused for four cool-downs. worse says the change
// was judged worse (Commit.Judge's verdict on its own queue): only then
// does a rolled-back off-try of rule pinned double the calm the next one
// needs (CutOffRollbacks). A change undone without that judgement — the
// switch refused the Set or its answer was lost, no window could judge it,
// the tuner stopped, another queue of the same commit was the worse one —
// says nothing of the queue without the overload_cut: the next off-try
// waits the calm this one needed.
func (c Config) Reverted(mem Memory, at time.Time, worse bool) Memory {
	out := mem
	out.LastChange = at
	if mem.CutOffTrying {
		// Rule pinned's off-try rolled back: when the overload came back
		// with the leaf off, the next one waits twice the calm.
		out.CutOffTrying = false
		if mem.CutOn && worse {
			out.CutOffRollbacks = min(mem.CutOffRollbacks+1, maxCutOffDoublings)
		}
	}
	if s := &out.Search; s.Trying {
		// A search experiment rolled back: the next neighbour; the rules'
		// direction, step and refusals are not the search's.
		s.Trying, s.SumJ, s.N = false, 0, 0
		s.Move++
		s.Fails++
		return out
	}
	out.Rejected = mem.Direction
	out.RejectedUntil = at.Add(4 * c.Cooldown)
	out.Direction = Hold
	if mem.Step > 0 {
		out.Step = math.Max(c.MinStep, 1+(mem.Step-1)/2)
	}
	return out
}

// Judged is the memory after a change's judgement j (kept or rolled back;
// after Reverted for a rollback): loss in its judge window above loss_high
// is kept for the next decision (Memory.LossSeen), which tightens for it.
func (c Config) Judged(mem Memory, j Judgement) Memory {
	if !j.Wait && j.Metrics.Loss > c.LossHigh {
		mem.LossSeen = j.Metrics.Loss
	}
	return mem
}

// Verdict is the judgement of a change from the metrics before and after.
type Verdict struct {
	Keep          bool
	Before, After float64 // objectives
	Reason        string
}

// Judge says whether a change in direction dir is kept. It is kept when
// the objective after it is not worse than the one expected without it
// by more than WorseTolerance (relative, with an absolute floor of 0.001
// so a near-zero objective does not flap). Expected is the objective
// before, except for a queue in transit: one that grew or drained by more
// than GrowthTrendRTT per RTT_est when the decision was taken is expected
// where that pace takes it aheadRTT RTT_est after the decision window's
// end (the middle of the judge window, Lag), JudgeAheadMaxRTT at most: a change decided on a growing
// queue is not blamed for the growth under way, and one decided on a
// draining queue does not take credit for the drain; with
// JudgeDrainArrivals a queue expected empty inside the judge window
// leaves the link to what arrives at it from then on. With
// AttributeWorsening, a worse objective is still kept when the terms that
// got worse are not the ones the change can worsen: a tightening costs utilisation, a loosening
// costs delay and loss (the notifications a tightening brings are how it
// works; they are judged through what they do); a tightening followed
// by a longer queue (the traffic grew) is not rolled back, since a
// rollback would make that worse still.
func Judge(cfg Config, dir Direction, before, after Metrics, aheadRTT float64) Verdict {
	w := cfg.Weights
	was := "before"
	if math.Abs(before.TrendRTT) > cfg.GrowthTrendRTT && aheadRTT > 0 {
		jb0 := Objective(before, w)
		// A pace holds for a few RTT_est at most (the senders react within
		// one, the node's triggers within less): on a DC-side port a judge
		// window lies hundreds of RTT_est after the decision, and the pace
		// extrapolated that far expects an absurd queue (every change on a
		// growing one kept) or an empty one (every change on a draining one
		// rolled back). Not capped at K_max: a queue outgrows it by the
		// round trip the cuts take (mid-wan: 80 MB over a K_max of 25 MB),
		// and an overrun judged against K_max is rolled back (docs/tuner.md).
		ahead := math.Min(aheadRTT, cfg.JudgeAheadMaxRTT)
		before.DelayRTT = math.Max(0, before.LastDelayRTT+before.TrendRTT*ahead)
		was = fmt.Sprintf("expected %.3g RTT_est ahead at the queue's pace of %.3g RTT_est per RTT_est (%.4g before)", ahead, before.TrendRTT, jb0)
		if empty, arrive, ok := drained(before, 2*ahead); ok && cfg.JudgeDrainArrivals {
			// The judge window runs from the Set (the decision) to twice
			// the middle. A queue draining at pace p under a link used u
			// is fed at (u + p) of R_port; expected empty inside the
			// window, the link carries only that from then on. Kept full,
			// the expectation blames the idle link the drain itself leaves
			// on the change (15012: a settle decided on an overload's
			// drain, every sender cut, rolled back and the lift kept).
			span := 2 * ahead
			before.DelayRTT = before.LastDelayRTT * empty / 2 / span
			before.Utilisation = (empty*before.Utilisation + (span-empty)*arrive) / span
			was = fmt.Sprintf("expected over the judge window at the queue's pace of %.3g RTT_est per RTT_est: empty %.3g RTT_est after the decision, then the link %.3g used by what arrives (%.4g before)",
				before.TrendRTT, empty, arrive, jb0)
		}
	}
	jb, ja := Objective(before, w), Objective(after, w)
	tol := math.Max(cfg.WorseTolerance*math.Abs(jb), 0.001)
	if ja <= jb+tol {
		return Verdict{Keep: true, Before: jb, After: ja,
			Reason: fmt.Sprintf("objective %.4g after, %.4g %s: not worse", ja, jb, was)}
	}
	if cfg.AttributeWorsening {
		cost := func(m Metrics) float64 { // what dir can make worse
			if dir == Tighten {
				return w.Utilisation * (1 - math.Min(m.Utilisation, 1))
			}
			return w.Delay*m.DelayRTT + w.Loss*m.Loss
		}
		if cb, ca := cost(before), cost(after); dir != Hold && ca <= cb+tol {
			return Verdict{Keep: true, Before: jb, After: ja,
				Reason: fmt.Sprintf("objective %.4g after, %.4g %s, but not through what a %s costs (%.4g after, %.4g before): the traffic changed",
					ja, jb, was, dir, ca, cb)}
		}
	}
	return Verdict{Keep: false, Before: jb, After: ja,
		Reason: fmt.Sprintf("objective %.4g after, %.4g %s: worse by more than %.3g", ja, jb, was, cfg.WorseTolerance)}
}

// drained says whether a queue draining at m's pace (TrendRTT < 0) from
// its last sample is empty within span RTT_est of the decision: when
// (empty, in RTT_est) and what share of R_port arrives at it, m's
// utilisation plus its pace (the drain is the link's rate minus the
// arrivals), within [0, m's utilisation].
func drained(m Metrics, span float64) (empty, arrive float64, ok bool) {
	if m.TrendRTT >= 0 || span <= 0 {
		return 0, 0, false
	}
	empty = m.LastDelayRTT / -m.TrendRTT
	if empty >= span {
		return 0, 0, false
	}
	u := math.Min(m.Utilisation, 1)
	return empty, math.Max(0, math.Min(u, u+m.TrendRTT)), true
}

// Lag is how far, in RTT_est, the middle of the judge window w lies after
// decided, the end of the window a change was decided on: how far ahead
// Judge expects a queue in transit to have moved at its pace.
func Lag(w Window, decided time.Time) float64 {
	if w.RTTEst <= 0 {
		return 0
	}
	mid := w.Start.Add(w.End.Sub(w.Start) / 2)
	return w.simSeconds(mid.Sub(decided)) / w.RTTEst.Seconds()
}
