package policy

import (
	"fmt"
	"time"
)

// Commit is a change made to one queue and awaiting its judgement. The
// tuner service (a confirmed commit on the switch: confirmed when kept, the
// switch's rollback otherwise) and the simulator's closed loop (which
// restores the settings itself) both judge it here, so they cannot differ
// in what they keep.
type Commit struct {
	Direction Direction
	// From and To are the queue's settings before and after the change.
	From, To Settings
	// Before are the metrics of the window the change was decided on,
	// DecidedAt that window's end, and FromEffectiveKMaxBytes the K_max
	// the switch reported in it.
	Before                 Metrics
	DecidedAt              time.Time
	FromEffectiveKMaxBytes int64
	// Search: an experiment of the online search, kept only when the
	// judge window's objective beats Baseline by SearchGain; JudgeRTT is
	// the judge window it asks for, in RTT_est (0: the caller's).
	Search             bool
	Baseline, JudgeRTT float64
	// Start: the queue's first change (rule start), to the policy's own
	// starting point. It is kept on the first complete judge window: it is
	// the reference every queue starts from, not an experiment, and the
	// windows around it are a queue's first ones, in the start-up's
	// transit (judged like any loosening, it was rolled back on two of
	// the 16 train seeds, a queue growing by 1.5 RTT_est per RTT_est,
	// and the queue kept the switch's V_growth for the whole run).
	Start bool
	// Settle: rule settle's change, back to the setting an overrun started
	// from; kept unjudged with Config.SettleUnjudged.
	Settle bool
}

// CommitOf is the commit of decision d, decided on window w.
func CommitOf(d Decision, w Window) Commit {
	return Commit{Direction: d.Direction, From: d.Before, To: d.After, Before: d.Metrics, DecidedAt: w.End,
		FromEffectiveKMaxBytes: w.EffectiveKMaxBytes, Search: d.Rule == RuleSearch, Baseline: d.Baseline, JudgeRTT: d.JudgeRTT,
		Start: d.Rule == RuleStart, Settle: d.Rule == RuleSettle}
}

// Judgement is a commit's judgement on one judge window.
type Judgement struct {
	// Keep, the objectives and Reason are Judge's verdict.
	Verdict
	// Wait: the window cannot be judged on (Check's reason is in Reason);
	// the caller waits for a later one or, past its deadline, rolls the
	// change back unjudged.
	Wait bool
	// Metrics are the judge window's.
	Metrics Metrics
	// NotCompared: kept without comparing the objectives (a start, a
	// settle with Config.SettleUnjudged); Before and After are given, not
	// weighed: such a change is kept, not better.
	NotCompared bool
}

// Judge judges the commit on w, a window after the change took effect:
// kept when the objective over w is not worse than expected without the
// change (Judge, with the queue's pace extrapolated by Lag from the
// decision to the middle of w), rolled back otherwise.
func (c Commit) Judge(cfg Config, w Window) Judgement {
	if rule, reason := Check(cfg, w); rule != "" {
		return Judgement{Wait: true, Verdict: Verdict{Reason: reason}}
	}
	m := Measure(w)
	if c.Search {
		ja := Objective(m, cfg.Weights)
		v := Verdict{Keep: ja <= c.Baseline*(1-cfg.SearchGain), Before: c.Baseline, After: ja}
		v.Reason = fmt.Sprintf("search: objective %.4g after, baseline %.4g: ", ja, c.Baseline)
		if v.Keep {
			v.Reason += fmt.Sprintf("better by at least %.3g, kept", cfg.SearchGain)
		} else {
			v.Reason += fmt.Sprintf("not better by %.3g, rolled back", cfg.SearchGain)
		}
		return Judgement{Metrics: m, Verdict: v}
	}
	if c.Start {
		jb, ja := Objective(c.Before, cfg.Weights), Objective(m, cfg.Weights)
		return Judgement{Metrics: m, NotCompared: true, Verdict: Verdict{Keep: true, Before: jb, After: ja,
			Reason: fmt.Sprintf("the policy's starting point (rule start), kept: objective %.4g after, %.4g before, not compared (a queue's first windows are its start-up's)", ja, jb)}}
	}
	if c.Settle && cfg.SettleUnjudged {
		jb, ja := Objective(c.Before, cfg.Weights), Objective(m, cfg.Weights)
		return Judgement{Metrics: m, NotCompared: true, Verdict: Verdict{Keep: true, Before: jb, After: ja,
			Reason: fmt.Sprintf("back to the setting before the overrun (rule settle), kept: objective %.4g after, %.4g before, not compared (settle_unjudged: the overload's windows and the ones after it are different phases)", ja, jb)}}
	}
	return Judgement{Metrics: m, Verdict: Judge(cfg, c.Direction, c.Before, m, Lag(w, c.DecidedAt))}
}

// Applied says whether telemetry window w shows the change in effect: the
// window's settings are To (overload_cut included; only the service asks,
// the simulator's closed loop applies its changes itself), and, when alpha
// changed, the switch's effective K_max moved (or sits at its K_base
// floor, where a change of alpha does not move it); an explicit K_max is
// in effect when the switch reports it. A switch's telemetry lags its
// configuration: a window before the change took effect judges the old
// settings.
func (c Commit) Applied(w Window) bool {
	a, b := c.To, c.From
	if w.Config.VGrowthBytesPerSec != a.VGrowthBytesPerSec || w.Config.KMaxMode != a.KMaxMode || w.Config.OverloadCut != a.OverloadCut {
		return false
	}
	switch a.KMaxMode {
	case KMaxBDP:
		if w.Config.Alpha != a.Alpha {
			return false
		}
		return a.Alpha == b.Alpha || w.EffectiveKMaxBytes != c.FromEffectiveKMaxBytes || w.EffectiveKMaxBytes == w.KBaseBytes
	default:
		return w.Config.KMaxBytes == a.KMaxBytes && w.EffectiveKMaxBytes == a.KMaxBytes
	}
}
