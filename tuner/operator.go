package tuner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lhcnp/lhcnp/tuner/policy"
)

// The operator wins (docs/tuner.md, "The operator"): a change to a leaf the
// tuner tunes that the tuner did not make holds that queue for
// Config.OperatorHold, and an operator holds and releases a queue with
// `lhcnp tuner hold` and `lhcnp tuner release`. Both are rows of
// tuner_actions with outcome operator and a hold_until (migration 013): the
// hold survives a restart of the tuner and is in the audit trail.

// OutcomeOperator is an operator's act on a queue: a change the tuner did
// not make (rule operator), a hold or a release. The row's hold_until is
// when tuning of the queue may resume.
const OutcomeOperator Outcome = "operator"

// The rules of the operator's rows (tuner_actions.reason starts with them).
const (
	// RuleOperator: a tuned leaf changed and the tuner did not change it.
	RuleOperator policy.Rule = "operator"
	// RuleOperatorHold: an operator held the queue (lhcnp tuner hold).
	RuleOperatorHold policy.Rule = "operator-hold"
	// RuleOperatorRelease: an operator released it (lhcnp tuner release).
	RuleOperatorRelease policy.Rule = "operator-release"
)

// MaxQueueID is the largest queue id of the model (yang/lhcnp.yang: a
// queue's config id, uint8 range 0..15).
const MaxQueueID = 15

// QueueID names a queue of a switch.
type QueueID struct {
	Interface string
	Queue     uint8
}

// OperatorHold is an operator's hold of a queue's tuning.
type OperatorHold struct {
	Until time.Time
	// ID and Reason are those of the tuner_actions row that holds it.
	ID     int64
	Reason string
}

// HoldReader reads the operators' holds of a switch's queues.
type HoldReader interface {
	// OperatorHolds returns the queues of target held at now: those whose
	// newest operator row has a hold_until after now.
	OperatorHolds(ctx context.Context, target string, now time.Time) (map[QueueID]OperatorHold, error)
}

// seenSettings is what the tuner knows a queue runs: settled, and while
// the telemetry may not have caught up with the tuner's own change (its
// commit, or the commit's rollback or cancel), transit, the settings of
// before. Anything else the telemetry shows is an operator's.
type seenSettings struct {
	settled policy.Settings
	transit *policy.Settings
	// trail is the audit trail's row settled came from (restore), until
	// the telemetry has confirmed or changed it: a change then was made
	// while no tuner ran.
	trail *LastSettings
}

// tunedDiff names the tuned leaves (policy.Config.TuneKMax: kmax-mode and
// alpha or kmax; TuneVGrowth: v-growth; rule pinned on, a
// pinned_buffer_share above 0: overload-cut) in which b differs from a, ""
// when none does.
func tunedDiff(cfg policy.Config, a, b policy.Settings) string {
	var d string
	add := func(s string) {
		if d != "" {
			d += ", "
		}
		d += s
	}
	if cfg.TuneKMax {
		switch {
		case a.KMaxMode != b.KMaxMode:
			add(fmt.Sprintf("kmax-mode %s → %s", a.KMaxMode, b.KMaxMode))
		case a.KMaxMode == policy.KMaxExplicit && a.KMaxBytes != b.KMaxBytes:
			add(fmt.Sprintf("kmax %d → %d", a.KMaxBytes, b.KMaxBytes))
		case a.KMaxMode != policy.KMaxExplicit && a.Alpha != b.Alpha:
			add(fmt.Sprintf("alpha %v → %v", a.Alpha, b.Alpha))
		}
	}
	if cfg.TuneVGrowth && a.VGrowthBytesPerSec != b.VGrowthBytesPerSec {
		add(fmt.Sprintf("v-growth %d → %d", a.VGrowthBytesPerSec, b.VGrowthBytesPerSec))
	}
	if cutTuned(cfg) && a.OverloadCut != b.OverloadCut {
		add(fmt.Sprintf("overload-cut %v → %v", a.OverloadCut, b.OverloadCut))
	}
	return d
}

// cutTuned says whether the tuner switches overload-cut (rule pinned on).
func cutTuned(cfg policy.Config) bool { return cfg.PinnedBufferShare > 0 }

// observe compares the settings the telemetry shows for queue k with what
// the tuner knows it runs. It returns the operator's change ("" when the
// tuner explains what it sees) and the settings it replaced. While the
// telemetry catches up with the tuner's own change, each tuned leaf may
// show either value (the collector may store one leaf of a Set before the
// other). The first settings seen of a queue are taken as they are: what
// was set before the tuner started is not the tuner's to judge.
//
// A queue restored from the audit trail (restore) is compared with the
// trail's settings; its change, if any, is one made while no tuner ran
// (trail returns the row it was compared with, nil otherwise).
func (t *Tuner) observe(k queueKey, runs policy.Settings) (change string, from policy.Settings, trail *LastSettings) {
	s, ok := t.seen[k]
	if !ok || tunedDiff(t.cfg.Policy, s.settled, runs) == "" {
		t.seen[k] = seenSettings{settled: runs}
		return "", runs, nil
	}
	if s.transit != nil && explains(t.cfg.Policy, s.settled, *s.transit, runs) {
		if s.trail != nil { // a commit left pending by the tuner before: either value is the tuner's
			t.seen[k] = seenSettings{settled: runs, transit: &s.settled}
		}
		return "", runs, nil // the telemetry is behind the tuner's own change
	}
	t.seen[k] = seenSettings{settled: runs}
	return tunedDiff(t.cfg.Policy, s.settled, runs), s.settled, s.trail
}

// explains says whether every tuned leaf of runs has its value in a or in
// b.
func explains(cfg policy.Config, a, b, runs policy.Settings) bool {
	leaf := func(pick func(policy.Settings) policy.Settings) bool {
		return tunedDiff(cfg, pick(a), pick(runs)) == "" || tunedDiff(cfg, pick(b), pick(runs)) == ""
	}
	kmax := func(s policy.Settings) policy.Settings { s.VGrowthBytesPerSec, s.OverloadCut = 0, false; return s }
	vgrowth := func(s policy.Settings) policy.Settings {
		return policy.Settings{KMaxMode: policy.KMaxBDP, VGrowthBytesPerSec: s.VGrowthBytesPerSec}
	}
	cut := func(s policy.Settings) policy.Settings {
		return policy.Settings{KMaxMode: policy.KMaxBDP, OverloadCut: s.OverloadCut}
	}
	return leaf(kmax) && leaf(vgrowth) && leaf(cut)
}

// expect tells observe that queue k runs to, or still from while the
// telemetry catches up (the tuner's commit or its rollback).
func (t *Tuner) expect(k queueKey, to, from policy.Settings) {
	t.seen[k] = seenSettings{settled: to, transit: &from}
}

// operatorChange records an operator's change of queue k, seen in window
// w at now, and holds the queue for operator_hold.
//
// trail, when set, is the audit trail's row from was taken from: the
// change was made while no tuner ran. Either way the operator's setting
// is the queue's starting point from now on (policy.Memory.NoStart).
func (t *Tuner) operatorChange(ctx context.Context, k queueKey, w policy.Window, change string, from policy.Settings, trail *LastSettings, now time.Time) (OperatorHold, error) {
	until := now.Add(t.cfg.OperatorHold)
	t.noStart[k] = true
	if from.OverloadCut != w.Config.OverloadCut {
		// The operator's overload-cut from now on, whichever way it was
		// set: the tuner never switches off a leaf it did not switch on
		// (policy.Memory.CutOn), and its calm count and the off-tries'
		// back-off end with it.
		m := t.mem[k]
		m.EndCut()
		t.mem[k] = m
	}
	a := t.action(now, k, w, policy.Decision{Rule: RuleOperator, Before: from, After: w.Config}, t.mem[k])
	a.Outcome, a.HoldUntil = OutcomeOperator, until
	a.Inputs.Direction = "" // not the policy's
	seen := "seen in telemetry"
	if trail != nil {
		seen = fmt.Sprintf("while no tuner ran: seen at the tuner's start against tuner_actions row %d of %s",
			trail.ID, trail.At.UTC().Format(time.RFC3339))
	}
	a.Reason = fmt.Sprintf("%s set by another client (%s); the tuner leaves the queue alone until %s",
		change, seen, until.UTC().Format(time.RFC3339))
	t.log.Info("tuner: operator's change", "target", k.target, "interface", k.iface, "queue", k.queue,
		"change", change, "held_until", until)
	id, err := t.rec.Record(ctx, a)
	if err != nil {
		// Held all the same, from the process, until the row is recorded:
		// the change is the queue's baseline already, and seen no more.
		t.unrecordedOps = append(t.unrecordedOps, a)
	}
	return OperatorHold{Until: until, ID: id, Reason: string(RuleOperator) + ": " + a.Reason}, err
}

// retryOperatorRows records again target's operators' rows whose Record
// failed, oldest first, each at its own time (so that a release recorded
// meanwhile stays the newer). Those that fail again are kept, with their
// holds.
func (t *Tuner) retryOperatorRows(ctx context.Context, target string) error {
	var errs []error
	kept := t.unrecordedOps[:0]
	for _, a := range t.unrecordedOps {
		if a.Target == target {
			if _, err := t.rec.Record(ctx, a); err != nil {
				errs = append(errs, err)
				kept = append(kept, a)
				continue
			}
			t.log.Info("tuner: operator's change recorded", "target", a.Target, "interface", a.Interface,
				"queue", a.Queue, "held_until", a.HoldUntil)
			continue
		}
		kept = append(kept, a)
	}
	t.unrecordedOps = kept
	return errors.Join(errs...)
}

// TrailReader is a Recorder that also says, from the audit trail, what
// each queue of a switch ran when a tuner last recorded it
// (PGRecorder.LastSettings). A tuner started anew takes those for the
// settings it knows, not the first it sees: a tuned leaf changed while no
// tuner ran is an operator's change, recorded and held like one seen in
// telemetry; and a queue decided before (by a tuner or an operator) does
// not get rule start again (policy.Memory.NoStart), which would move a
// V_growth someone chose back to the policy's starting point. Without it
// the first settings seen are taken as they are, and every queue starts.
type TrailReader interface {
	// LastSettings returns, per queue of target that has a row with
	// settings, what its newest such row says it runs.
	LastSettings(ctx context.Context, target string) (map[QueueID]LastSettings, error)
}

// LastSettings is what a queue ran by its newest row of tuner_actions that
// names its settings.
type LastSettings struct {
	// ID and At are the row's.
	ID int64
	At time.Time
	// Runs is what the queue ran by that row: a confirmed change's or an
	// operator's settings after, any other row's before (a hold's, a
	// change rolled back, refused or only dry-run). Or, when set, is what
	// it may run instead: a commit left pending (outcome pushed, or error:
	// its confirm failed) runs until the switch's rollback, then Runs.
	Runs policy.Settings
	Or   *policy.Settings
	// Outcome is the row's.
	Outcome Outcome
	// Decided says the queue's trail holds a change of its tuned leaves
	// that stood: a tuner's confirmed (not a dry run), or an operator's. A
	// change rolled back, refused or left pending by a tuner that stopped
	// does not count: the next tuner may start the queue again, as one
	// that never stopped would not (its memory holds the rolled-back
	// start), a judgement lost with the restart.
	Decided bool
}

// restore takes queue k's last settings from the audit trail at its first
// sight since the tuner started (see TrailReader).
func (t *Tuner) restore(k queueKey, ls LastSettings) {
	t.seen[k] = seenSettings{settled: ls.Runs, transit: ls.Or, trail: &ls}
	if ls.Decided {
		t.noStart[k] = true
	}
	if ls.Outcome == OutcomePushed && ls.Or != nil {
		t.orphans[k] = ls
	}
}

// closeOrphan ends the row of a commit a tuner left pending when it
// stopped without ending it (a crash: a tuner that stops releases its
// commits, Release), once queue k's telemetry runs the settings of before
// it: the switch rolled it back at its deadline. While the telemetry shows
// the commit's settings it may still be pending, or was confirmed before
// the stop (its row not updated): the row is left as it is until the
// settings of before show. Any other settings end the watch (an
// operator's Set, recorded as such: the commit had ended, how is not
// known).
func (t *Tuner) closeOrphan(ctx context.Context, k queueKey, runs policy.Settings, now time.Time) error {
	ls, ok := t.orphans[k]
	if !ok {
		return nil
	}
	switch {
	case tunedDiff(t.cfg.Policy, ls.Runs, runs) == "":
		delete(t.orphans, k)
		return t.setOutcome(ctx, k.target, ls.ID, OutcomeRolledBack, fmt.Sprintf(
			"the tuner stopped without ending the commit; the switch rolled it back (the settings of before seen at %s by the tuner started next)",
			now.UTC().Format(time.RFC3339)), "", nil)
	case tunedDiff(t.cfg.Policy, *ls.Or, runs) != "":
		delete(t.orphans, k)
	}
	return nil
}
