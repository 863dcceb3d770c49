package tuner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/lhcnp/lhcnp/internal/plural"
	"github.com/lhcnp/lhcnp/tuner/policy"
	"github.com/lhcnp/lhcnp/tuner/tunermetrics"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// QueueWindow is the telemetry window of one queue of a switch.
type QueueWindow struct {
	Interface string
	Queue     uint8
	Window    policy.Window
}

// Source reads telemetry windows.
type Source interface {
	// Windows returns the window [start, end] of every queue of the target
	// that has telemetry, in (interface, queue) order.
	Windows(ctx context.Context, target string, start, end time.Time) ([]QueueWindow, error)
}

// Outcome is what became of a decision (tuner_actions.outcome).
type Outcome string

// Outcomes.
const (
	OutcomeDryRun     Outcome = "dry-run"     // decided, not pushed (--dry-run)
	OutcomePushed     Outcome = "pushed"      // committed, awaiting confirmation
	OutcomeConfirmed  Outcome = "confirmed"   // applied, not worse, confirmed
	OutcomeRolledBack Outcome = "rolled-back" // not confirmed: the switch rolled it back
	OutcomeRefused    Outcome = "refused"     // the switch (or the model check) refused the Set
	OutcomeError      Outcome = "error"       // the tuner could not finish (confirm failed, ...)
	// OutcomeHold is a decision not to change (rule steady, cool-down,
	// firing, bound, rejected, ...), recorded once per episode: when the
	// queue's rule becomes it, not every period (migration 005); and the
	// end of a no-data or gap episode.
	OutcomeHold Outcome = "hold"
)

// holdEpisode is a run of periods in which a queue held for one rule.
type holdEpisode struct {
	rule    policy.Rule
	since   time.Time
	periods int
	// escalated: a telemetry episode recorded as an error, having lasted
	// longer than telemetryEscalation.
	escalated bool
}

// telemetryRule reports whether rule holds for want of telemetry (no-data
// or gap): a hold, as any other, unless it lasts longer than the tuner
// needs to fill a window (telemetryEscalation), when it becomes an error.
func telemetryRule(rule policy.Rule) bool { return rule == policy.RuleNoData || rule == policy.RuleGap }

// known says whether telemetry has shown every tuned leaf of a queue (the
// YANG ranges of alpha, kmax and v-growth start above 0).
func known(s policy.Settings) bool {
	mode := s.KMaxMode == policy.KMaxBDP && s.Alpha > 0 || s.KMaxMode == policy.KMaxExplicit && s.KMaxBytes > 0
	return mode && s.VGrowthBytesPerSec > 0
}

// telemetryEscalation is how long a no-data or gap episode is normal life
// (a queue's first window after a start of the switch, the collector or the
// tuner; a collector restarting) before it is recorded as an error, which
// needs a person: a window and a period, by when a collector storing
// the queue has filled a window.
func (t *Tuner) telemetryEscalation() time.Duration { return t.cfg.Window + t.cfg.Period }

// Action is one row of tuner_actions.
type Action struct {
	Time      time.Time
	Target    string
	Interface string
	Queue     uint8
	// Inputs is what the policy saw (JSON in the table).
	Inputs  Inputs
	Rule    policy.Rule
	Reason  string
	Before  policy.Settings
	After   policy.Settings
	Outcome Outcome
	DryRun  bool
	Error   string
	// HoldUntil is set on an operator's row (OutcomeOperator): tuning of
	// the queue is held until then.
	HoldUntil time.Time
	// Key identifies the row on every try of its write (a UUID; column
	// action_key): a write retried after one the database committed but
	// whose answer was lost finds the row and adds none. Record gives an
	// action without one a key of its own, for that try alone.
	Key string
}

// Inputs are the decision's inputs as recorded.
type Inputs struct {
	WindowStart        time.Time      `json:"window_start"`
	WindowEnd          time.Time      `json:"window_end"`
	Samples            int            `json:"samples"`
	Rule               policy.Rule    `json:"rule"`
	Metrics            policy.Metrics `json:"metrics"`
	Objective          float64        `json:"objective"`
	KBaseBytes         int64          `json:"k_base_bytes"`
	EffectiveKMaxBytes int64          `json:"effective_kmax_bytes"`
	RTTEstNs           int64          `json:"rtt_est_ns"`
	PortRateBitsPerSec int64          `json:"port_rate_bps"`
	Step               float64        `json:"step,omitempty"`
	Memory             policy.Memory  `json:"memory"`
	// Direction is the decision's (policy.Decision.Direction: tighten,
	// loosen, or hold; for a hold, the direction of the rule that held it
	// back), as the simulator's tuner.csv has it; "" on an operator's row.
	Direction string `json:"direction,omitempty"`
	// Judgement is the change's judgement, added with its outcome (nil:
	// not judged — a hold, or a change refused, lost, or undone before a
	// judge window could judge it).
	Judgement *Judgement `json:"judgement,omitempty"`
}

// Judgement is a change's judgement as tuner_actions records it:
// policy.Commit.Judge's verdict on the change's own queue over its judge
// window. A rollback whose queue's judgement is not Keep is the only one
// the policy counts as worse (policy.Config.Reverted); a queue judged
// keep is rolled back all the same when another queue of its commit was
// judged worse.
type Judgement struct {
	Keep bool `json:"keep"`
	// ObjectiveBefore is the objective expected without the change,
	// ObjectiveAfter the judge window's.
	ObjectiveBefore float64        `json:"objective_before"`
	ObjectiveAfter  float64        `json:"objective_after"`
	Metrics         policy.Metrics `json:"metrics"`
	// NotCompared: kept without weighing the objectives (rule start's
	// change, policy.Judgement.NotCompared): kept, not better.
	NotCompared bool `json:"not_compared,omitempty"`
}

// judgementOf is j as recorded.
func judgementOf(j policy.Judgement) *Judgement {
	return &Judgement{Keep: j.Keep, ObjectiveBefore: j.Before, ObjectiveAfter: j.After, Metrics: j.Metrics, NotCompared: j.NotCompared}
}

// CutReader is a Recorder that also says, from the audit trail, which
// queues' overload-cut the tuner switched on and no one switched since
// (PGRecorder.TunersCuts): a tuner started anew takes those for its own
// (rule pinned switches them off again once the queue is calm), with the
// back-off of the off-tries rolled back since. Without it a leaf found on
// at a start is left on.
type CutReader interface {
	// TunersCuts returns the queues of target whose overload-cut is the
	// tuner's, and only those.
	TunersCuts(ctx context.Context, target string) (map[QueueID]CutClaim, error)
}

// CutClaim is the tuner's claim on a queue's overload-cut as the audit
// trail has it (policy.Memory.ClaimCut).
type CutClaim struct {
	// OffRollbacks counts rule pinned's off-tries of the leaf judged worse
	// and rolled back since the tuner switched it on
	// (policy.Memory.CutOffRollbacks).
	OffRollbacks int
}

// Recorder writes the audit trail, and reads the operators' holds from it.
type Recorder interface {
	HoldReader
	// Record stores a decision and returns its id; the row of an action
	// whose Key is stored already is that row (not a second one).
	Record(ctx context.Context, a Action) (int64, error)
	// SetOutcome updates a decision's outcome, appending to its reason,
	// and adds its judgement to its inputs (j nil: not judged). The same
	// update again changes nothing more (a retry after a lost answer).
	SetOutcome(ctx context.Context, id int64, o Outcome, reason, errText string, j *Judgement) error
	// Forget deletes the row of key, if the database has one: a decision
	// whose Record failed was not pushed, and a row its write may have
	// left must not say it was.
	Forget(ctx context.Context, key string) error
}

type queueKey struct {
	target, iface string
	queue         uint8
}

// pending is a commit awaiting confirmation on one switch.
type pending struct {
	id       string
	pushedAt time.Time
	deadline time.Time
	changes  []pendingChange
	// worse holds why the tuner decided not to confirm ("" while it may
	// still): the same for every change of the commit (another client's
	// Set), or, with judgedWorse, the judgement of every queue of the
	// commit, for the log; each row then gives its own (notConfirmed).
	worse       string
	judgedWorse bool
	// cancelErr is the last failed cancel's error ("" when none failed):
	// the reason the commit reached the switch's deadline.
	cancelErr string
}

// rollsBackAt is when the switch rolls the commit back unless confirmed.
func (p *pending) rollsBackAt() string { return p.deadline.UTC().Format(time.RFC3339) }

// notConfirmed is why c's row is not confirmed: p.worse, or, for a
// commit judged worse, c's own queue's judgement, and for a queue judged
// not worse, the judgement of the queues that undid the commit (one Set,
// confirmed or cancelled whole). A row repeated every queue's judgement
// of its commit, the whole interface's on a start's rows.
func (p *pending) notConfirmed(c pendingChange) string {
	if !p.judgedWorse {
		return p.worse
	}
	why := "not confirmed: " + c.verdict
	if c.worse() {
		return why
	}
	var by []string
	for _, o := range p.changes {
		if o.worse() {
			by = append(by, fmt.Sprintf("%s queue %d for the worse (%s)", o.key.iface, o.key.queue, o.verdict))
		}
	}
	return why + "; but the same commit changed " + strings.Join(by, " and ")
}

// sameReason is reason for every row of a commit.
func sameReason(reason string) func(pendingChange) string {
	return func(pendingChange) string { return reason }
}

type pendingChange struct {
	key      queueKey
	change   Change
	actionID int64
	commit   policy.Commit
	// judged is the change's judgement once every change of the commit
	// has one (nil before, and for a commit never judged), verdict its
	// reason (policy.Verdict.Reason).
	judged  *Judgement
	verdict string
}

// worse says the change's own queue was judged worse: its rollback is one
// the policy counts (policy.Config.Reverted).
func (c pendingChange) worse() bool { return c.judged != nil && !c.judged.Keep }

// Tuner is the service's loop. It is not safe for concurrent use: Run
// calls Cycle once per period.
type Tuner struct {
	cfg  Config
	src  Source
	push Pusher
	rec  Recorder
	log  *slog.Logger
	// trail and cuts are rec's optional readers (nil when it has none).
	trail TrailReader
	cuts  CutReader
	m     *tunermetrics.Metrics

	mem     map[queueKey]policy.Memory
	holds   map[queueKey]holdEpisode
	pending map[string]*pending
	seen    map[queueKey]seenSettings
	// noStart holds the queues rule start is not to run on
	// (policy.Memory.NoStart): an operator's change seen, or a queue the
	// audit trail shows decided before the tuner started (restore). Kept
	// apart from mem, whose entry says the policy has decided on the
	// queue since the start.
	noStart map[queueKey]bool
	// orphans holds the queues whose newest row at the start is a commit
	// a stopped tuner left pending (closeOrphan).
	orphans map[queueKey]LastSettings
	// trails holds each switch's audit trail as the tuner found it at its
	// first decision there (TrailReader), for the queues it sees later.
	trails map[string]map[QueueID]LastSettings
	// unrecordedOps holds the operators' rows whose Record failed (the
	// database away for a moment), oldest first: their holds are kept
	// here, with the database's, and the rows recorded again each period
	// until they are (operatorChange, retryOperatorRows). Without them the
	// change, already the queue's baseline, would be seen no more and the
	// next period push over the operator's value.
	unrecordedOps []Action
	// unwritten holds the outcomes whose SetOutcome failed, by action id:
	// each is written again at the start of every period of its switch
	// until it is (retryOutcomes), once. Without them a row would stay
	// `pushed` for good, read by the tuner started next as a commit left
	// by a crash.
	unwritten map[int64]unwrittenOutcome
	// unrecorded holds the other rows whose Record failed (a hold, an
	// error, the end of a telemetry episode), oldest first, recorded again
	// each period of their switch until they are (retryRows): the row key
	// makes a retry after a write whose answer was lost find that row.
	unrecorded []Action
	// forget holds the keys of decisions whose Record failed: nothing was
	// pushed for them, and the row their write may have left (committed,
	// its answer lost) is deleted, each period until the delete succeeds
	// (retryRows).
	forget []forgetKey
}

// forgetKey is the key of a row that must not stay (Recorder.Forget).
type forgetKey struct{ target, key string }

// unwrittenOutcome is an outcome of a target's row not written yet.
type unwrittenOutcome struct {
	target          string
	outcome         Outcome
	reason, errText string
	judged          *Judgement
}

// Option configures New.
type Option func(*Tuner)

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(t *Tuner) { t.log = l } }

// New returns a tuner. push may be nil only in dry-run mode.
func New(cfg Config, src Source, push Pusher, rec Recorder, opts ...Option) (*Tuner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if push == nil && !cfg.DryRun {
		return nil, errors.New("tuner: no pusher outside dry-run")
	}
	t := &Tuner{cfg: cfg, src: src, push: push, rec: rec, log: slog.Default(),
		mem: map[queueKey]policy.Memory{}, holds: map[queueKey]holdEpisode{}, pending: map[string]*pending{},
		seen: map[queueKey]seenSettings{}, noStart: map[queueKey]bool{}, orphans: map[queueKey]LastSettings{},
		trails: map[string]map[QueueID]LastSettings{}, unwritten: map[int64]unwrittenOutcome{}}
	for _, o := range opts {
		o(t)
	}
	if t.m == nil {
		t.m = tunermetrics.New()
	}
	t.meter()
	if err := t.loadState(); err != nil {
		return nil, err
	}
	return t, nil
}

// Run calls Cycle every period until ctx ends. Errors of one cycle are
// logged; the loop goes on. When ctx ends, the commits still pending are
// cancelled (Release) before Run returns.
func (t *Tuner) Run(ctx context.Context) error {
	tick := time.NewTicker(t.cfg.Period)
	defer tick.Stop()
	for {
		if err := t.Cycle(ctx, time.Now()); err != nil && ctx.Err() == nil {
			t.log.Warn("tuner cycle", "err", err)
		}
		select {
		case <-ctx.Done():
			if err := t.Release(ctx, time.Now()); err != nil {
				t.log.Warn("tuner: releasing pending commits", "err", err)
			}
			return nil
		case <-tick.C:
		}
	}
}

// Release ends every commit still pending, as a tuner that stops must: no
// one else can judge or confirm it. Each is cancelled on its switch (the
// switch restores the settings of before at once, not at its deadline)
// and recorded rolled-back, so that the audit trail says what the
// switches run and a tuner started next decides on settings the switches
// really have. A cancel that fails (the switch unreachable, the commit
// already rolled back) is recorded with its error: the switch rolls the
// commit back at its deadline all the same. The cancel and the record each
// get a switch_timeout of their own, whether ctx has ended or not.
func (t *Tuner) Release(ctx context.Context, now time.Time) error {
	return t.endPending(ctx, now, true)
}

// Abandon records every commit still pending as left to its switch's
// rollback, without cancelling it: `lhcnp tuner --once` pushes and exits,
// and no one follows the commit after it (the switch rolls it back at its
// deadline). The rows would otherwise stay `pushed` for ever.
func (t *Tuner) Abandon(ctx context.Context, now time.Time) error {
	return t.endPending(ctx, now, false)
}

// endPending ends every commit still pending, cancelling it on its switch
// (Release) or leaving it to the switch's rollback (Abandon), and records
// it rolled-back.
func (t *Tuner) endPending(ctx context.Context, now time.Time, cancel bool) error {
	var errs []error
	for _, s := range t.cfg.Switches {
		// A last try for what a database blip left unwritten: the
		// outcomes, and the operators' rows (their holds are the
		// process's until recorded, lost when it stops).
		rctx, done := t.ownTimeout(ctx)
		errs = append(errs, t.retryOutcomes(rctx, s.Name), t.retryRows(rctx, s.Name))
		done()
		p := t.pending[s.Name]
		if p == nil {
			continue
		}
		reason, errText := sameReason("left to the switch: the tuner ran once and does not follow it; the switch rolls it back at "+p.rollsBackAt()), ""
		if cancel {
			reason = sameReason("cancelled: the tuner stopped before it could judge the change")
			if p.worse != "" { // judged already, waiting for the switch's rollback
				reason = func(c pendingChange) string { return p.notConfirmed(c) + "; cancelled when the tuner stopped" }
			}
			if err := t.cancelCommit(ctx, s.Name, p); err != nil {
				reason = sameReason("the tuner stopped before it could judge the change; its cancel failed, the switch rolls it back at " + p.rollsBackAt())
				errText = err.Error()
				errs = append(errs, err)
			}
		}
		rctx, done = t.ownTimeout(ctx)
		errs = append(errs, t.finish(rctx, s, p, now, OutcomeRolledBack, reason, errText))
		done()
	}
	// What the database did not take by now (the finishes' outcomes
	// included) is kept for the tuner started next.
	for _, s := range t.cfg.Switches {
		if !t.owed() {
			break
		}
		rctx, done := t.ownTimeout(ctx)
		errs = append(errs, t.retryOutcomes(rctx, s.Name))
		done()
	}
	errs = append(errs, t.saveState())
	t.m.CommitsPending.Set(float64(len(t.pending)))
	return errors.Join(errs...)
}

// ownTimeout is a switch_timeout of its own, whether ctx ended or not: a
// record or a cancel after the cycle's budget was used up, or the tuner
// stopped.
func (t *Tuner) ownTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), t.cfg.SwitchTimeout)
}

// cancelCommit cancels p on its switch, within a switch_timeout of its own.
func (t *Tuner) cancelCommit(ctx context.Context, target string, p *pending) error {
	cctx, done := t.ownTimeout(ctx)
	defer done()
	return t.push.Cancel(cctx, target, p.id)
}

// Cycle serves every switch once, at time now: follows its pending
// commit, or decides and pushes. A failing switch does not stop the
// others; the errors are returned joined.
func (t *Tuner) Cycle(ctx context.Context, now time.Time) error {
	var errs []error
	for _, s := range t.cfg.Switches {
		sctx, cancel := context.WithTimeout(ctx, t.cfg.SwitchTimeout)
		err := t.retryOutcomes(sctx, s.Name)
		if p := t.pending[s.Name]; p != nil {
			// decide retries the rows itself, the operators' before it
			// reads their holds.
			err = errors.Join(err, t.retryRows(sctx, s.Name))
			err = errors.Join(err, t.follow(sctx, s, p, now))
		} else {
			err = errors.Join(err, t.decide(sctx, s, now))
		}
		cancel()
		if err != nil {
			errs = append(errs, err)
		}
	}
	t.cycleDone(now)
	return errors.Join(errs...)
}

// Pending reports whether a commit awaits confirmation on the switch.
func (t *Tuner) Pending(target string) bool { return t.pending[target] != nil }

func (t *Tuner) decide(ctx context.Context, s SwitchConfig, now time.Time) error {
	// The queues decided on and those the operator holds, this period
	// (none when the switch's holds or telemetry cannot be read).
	var tuned, opHeld int
	defer func() {
		t.m.QueuesTuned.WithLabelValues(s.Name).Set(float64(tuned))
		t.m.QueuesHeld.WithLabelValues(s.Name).Set(float64(opHeld))
	}()
	// The operators' holds first: a queue whose hold cannot be read is
	// not touched. Those of rows not recorded yet are the process's.
	var errs []error
	if err := t.retryRows(ctx, s.Name); err != nil {
		errs = append(errs, fmt.Errorf("switch %q: recording: %w", s.Name, err))
	}
	held, err := t.rec.OperatorHolds(ctx, s.Name, now)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("switch %q: reading the operators' holds: %w", s.Name, err))...)
	}
	if held == nil {
		held = map[QueueID]OperatorHold{}
	}
	for _, a := range t.unrecordedOps {
		if a.Target == s.Name {
			held[QueueID{a.Interface, a.Queue}] = OperatorHold{Until: a.HoldUntil, Reason: string(a.Rule) + ": " + a.Reason}
		}
	}
	wins, err := t.src.Windows(ctx, s.Name, now.Add(-t.cfg.Window), now)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("switch %q: reading telemetry: %w", s.Name, err))...)
	}
	var changes []pendingChange
	var cuts map[QueueID]CutClaim // read at the first queue that needs it
	for _, qw := range wins {
		if len(s.Interfaces) > 0 && !slices.Contains(s.Interfaces, qw.Interface) {
			continue
		}
		k := queueKey{s.Name, qw.Interface, qw.Queue}
		qid := QueueID{qw.Interface, qw.Queue}
		if _, seen := t.seen[k]; !seen {
			// The first sight since the start: what the audit trail says
			// the queue ran when a tuner last saw it, read once per switch
			// (the trail as the tuner found it; its own rows since are in
			// its memory).
			trail, read := t.trails[s.Name]
			if t.trail != nil && !read {
				l, err := t.trail.LastSettings(ctx, s.Name)
				if err != nil {
					// Not decided on while whether someone changed it is
					// unknown.
					errs = append(errs, fmt.Errorf("switch %q: %w", s.Name, err))
					continue
				}
				trail, t.trails[s.Name] = l, l
			}
			if ls, ok := trail[qid]; ok {
				t.restore(k, ls)
			}
		}
		if known(qw.Window.Config) {
			if err := t.closeOrphan(ctx, k, qw.Window.Config, now); err != nil {
				errs = append(errs, fmt.Errorf("switch %q: recording: %w", s.Name, err))
			}
			if change, from, tr := t.observe(k, qw.Window.Config); change != "" {
				h, err := t.operatorChange(ctx, k, qw.Window, change, from, tr, now)
				if err != nil {
					errs = append(errs, fmt.Errorf("switch %q: recording: %w", s.Name, err))
				}
				held[qid] = h
			}
		}
		if h, ok := held[qid]; ok && now.Before(h.Until) {
			// The operator's: no decision, and the episode starts anew
			// when the hold ends.
			delete(t.holds, k)
			t.log.Debug("tuner: held by the operator", "target", s.Name, "interface", qw.Interface, "queue", qw.Queue,
				"until", h.Until, "why", h.Reason)
			opHeld++
			continue
		}
		if _, decided := t.mem[k]; !decided && qw.Window.Config.OverloadCut {
			// The first decision since the start on a queue running
			// overload-cut: the tuner's own when the audit trail says so.
			if t.cuts != nil && cuts == nil {
				c, err := t.cuts.TunersCuts(ctx, s.Name)
				if err != nil {
					// Not decided on while whose leaf it is is unknown.
					errs = append(errs, fmt.Errorf("switch %q: %w", s.Name, err))
					continue
				}
				cuts = c
			}
			if c, ok := cuts[qid]; ok {
				var m policy.Memory
				m.ClaimCut(c.OffRollbacks)
				t.mem[k] = m
			}
		}
		before := t.mem[k]
		before.NoStart = before.NoStart || t.noStart[k]
		d, mem := policy.Decide(t.cfg.Policy, qw.Window, before)
		tuned++
		t.m.Decisions.WithLabelValues(string(d.Rule), d.Direction.String()).Inc()
		a := t.action(now, k, qw.Window, d, before)
		if err := t.episode(ctx, k, a, d, now); err != nil {
			errs = append(errs, fmt.Errorf("switch %q: recording: %w", s.Name, err))
		}
		if !d.Change {
			// A hold's memory is kept as a change's (the simulator's
			// closed loop keeps every decision's): what the policy counts
			// over decided windows — the loss streak rule pinned needs, the
			// calm that switches its overload_cut off again, the search's
			// baseline — advances in windows that change nothing.
			t.mem[k] = mem
			continue
		}
		a.Outcome = OutcomePushed
		if t.cfg.DryRun {
			a.Outcome = OutcomeDryRun
		}
		id, err := t.rec.Record(ctx, a)
		if err != nil {
			// Nothing is pushed that is not in the audit trail, and no row
			// says pushed for what was not: the write may have been
			// committed with its answer lost.
			t.forget = append(t.forget, forgetKey{target: s.Name, key: a.Key})
			errs = append(errs, fmt.Errorf("switch %q: recording: %w", s.Name, err))
			continue
		}
		t.mem[k] = mem
		if t.cfg.DryRun {
			t.countChanges(OutcomeDryRun, 1)
		}
		t.log.Info("tuner decision", "target", s.Name, "interface", qw.Interface, "queue", qw.Queue,
			"rule", d.Rule, "direction", d.Direction, "reason", d.Reason, "dry_run", t.cfg.DryRun)
		changes = append(changes, pendingChange{key: k, actionID: id, commit: policy.CommitOf(d, qw.Window),
			change: Change{Interface: qw.Interface, Queue: qw.Queue, Before: d.Before, After: d.After}})
	}
	if len(changes) == 0 || t.cfg.DryRun {
		return errors.Join(errs...)
	}
	p := &pending{id: fmt.Sprintf("lhcnp-tuner-%s-%d", s.Name, now.UnixNano()), pushedAt: now,
		deadline: now.Add(t.cfg.RollbackDuration), changes: changes}
	cs := make([]Change, len(changes))
	for i, c := range changes {
		cs[i] = c.change
	}
	err = t.push.Commit(ctx, s.Name, p.id, cs, t.cfg.RollbackDuration)
	if errors.Is(err, ErrOperatorSet) && errors.Is(err, ErrCancelFailed) {
		// Applied over another client's Set, and not cancelled: the commit
		// is pending on the switch, the other client's value overwritten.
		// Kept pending, marked for the cancel, which follow tries again
		// every period (cancelJudged) as for one judged worse; the row
		// stays pushed until a cancel succeeds or the deadline passes.
		p.worse = fmt.Sprintf("another client set the queue between the tuner's check and its Set, and the tuner's cancel failed (%v): the other client's value stands once the commit is cancelled", err)
		t.pending[s.Name] = p
		t.countChanges(OutcomePushed, len(changes)) // its rows stay pushed
		for _, c := range changes {
			t.expect(c.key, c.change.After, c.change.Before)
		}
		return errors.Join(append(errs, err)...)
	}
	if err != nil {
		outcome, reason := OutcomeRefused, ""
		if errors.Is(err, ErrOperatorSet) {
			// Applied over another client's Set and cancelled at once: the
			// other client's value stands, and the next period sees it
			// (an operator's change: the queue is held).
			outcome, reason = OutcomeRolledBack, "another client set the queue between the tuner's check and its Set: cancelled, the other client's value stands"
		} else if errors.Is(err, ErrNotPushed) {
			// Nothing was sent, whatever the error's code: no answer was
			// lost, nothing is cancelled, the row is refused. (Taken for a
			// lost answer, a check past switch_timeout was recorded rolled
			// back after a cancel the switch refused: no commit waiting.)
			// The outcome is written within a switch_timeout of its own:
			// a check that failed at the deadline left the period's
			// context none for it.
			var done context.CancelFunc
			ctx, done = t.ownTimeout(ctx)
			defer done()
		} else if answerLost(ctx, err) {
			// The Set's answer was lost (switch_timeout, or the tuner
			// stopping): the switch may have applied it. Cancel it there
			// so that no commit this tuner does not follow stays pending,
			// and record the outcome, each within a switch_timeout of its
			// own.
			if cerr := t.cancelCommit(ctx, s.Name, p); cerr == nil {
				outcome, reason = OutcomeRolledBack, "the Set's answer was lost, but the switch had applied it: cancelled"
			} else {
				// No commit to cancel (the Set never landed), or the cancel
				// itself failed, or the Set lands after it: whichever, the
				// switch does not keep the change past the deadline.
				outcome = OutcomeRolledBack
				reason = fmt.Sprintf("the Set's answer was lost and its cancel failed (%v): if the switch applied it, it rolls it back at %s",
					cerr, p.rollsBackAt())
			}
			var done context.CancelFunc
			ctx, done = t.ownTimeout(ctx)
			defer done()
		}
		for _, c := range changes {
			// Never judged: an off-try of rule pinned refused or lost
			// here does not double the next one's calm.
			t.mem[c.key] = t.cfg.Policy.Reverted(t.mem[c.key], now, false)
			if outcome == OutcomeRolledBack { // it may have been applied, and is undone
				t.expect(c.key, c.change.Before, c.change.After)
			}
			if rerr := t.setOutcome(ctx, s.Name, c.actionID, outcome, reason, err.Error(), nil); rerr != nil {
				errs = append(errs, rerr)
			}
		}
		return errors.Join(append(errs, err)...)
	}
	t.pending[s.Name] = p
	t.countChanges(OutcomePushed, len(changes))
	for _, c := range changes {
		t.expect(c.key, c.change.After, c.change.Before)
	}
	return errors.Join(errs...)
}

// episode records the holds of a queue once per episode (not every
// period: under load a row per period filled the table with holds): a
// hold when the queue's rule becomes a holding one; for a telemetry rule
// (no-data, gap: nothing can be decided) an error once the episode has
// lasted longer than filling a window takes (telemetryEscalation: the
// first windows after a start are normal life), and, when it ends, a hold
// saying how long it lasted.
//
// The source gives a window the queue's state wherever the switch was
// reporting (PGSource: the values carried from their last change, at the
// instants of the collector's ingest ledger), so an idle or steady queue
// has its samples, and a telemetry rule means the switch did not report
// (or does not publish the leaves the policy needs).
func (t *Tuner) episode(ctx context.Context, k queueKey, a Action, d policy.Decision, now time.Time) error {
	ep, ok := t.holds[k]
	// A switch that stops reporting shows a gap, then, once no report is
	// left in the window, too few samples (no-data): one episode.
	if ok && !d.Change && (ep.rule == d.Rule || telemetryRule(ep.rule) && telemetryRule(d.Rule)) {
		ep.periods++
		ep.rule = d.Rule
		var err error
		if telemetryRule(ep.rule) && !ep.escalated && now.Sub(ep.since) > t.telemetryEscalation() {
			// Longer than filling a window takes: the collector does not
			// store this queue, or the switch does not publish it.
			ep.escalated = true
			a.Outcome = OutcomeError
			a.Error = fmt.Sprintf("telemetry: no window to decide on for %v (%s; a window fills within %v): %s",
				now.Sub(ep.since), plural.Count(ep.periods, "period"), t.telemetryEscalation(), d.Reason)
			a.Reason = "telemetry missing for longer than a window: the switch has not reported (nothing in the collector's ingest_ledger for it), or does not publish the queue's leaves: check the collector's subscription to this switch"
			err = t.record(ctx, a)
		}
		t.holds[k] = ep
		return err
	}
	var errs []error
	if ok && telemetryRule(ep.rule) {
		// The episode's end changes nothing: a's settings and direction
		// are the decision's after it (a change, say), not the held rule's.
		end := a
		end.Rule, end.Outcome, end.After = ep.rule, OutcomeHold, a.Before
		end.Inputs.Rule, end.Inputs.Direction, end.Inputs.Step = ep.rule, policy.Hold.String(), 0
		next := "a change"
		if !d.Change {
			next = "rule " + string(d.Rule)
		}
		end.Reason = fmt.Sprintf("ended after %v (%s): the window is complete again, now %s", now.Sub(ep.since), plural.Count(ep.periods, "period"), next)
		end.Key = uuid.NewString() // a row of its own beside a's
		if err := t.record(ctx, end); err != nil {
			errs = append(errs, err)
		}
	}
	delete(t.holds, k)
	if d.Change {
		return errors.Join(errs...)
	}
	t.holds[k] = holdEpisode{rule: d.Rule, since: now, periods: 1}
	t.log.Debug("tuner hold", "target", k.target, "interface", k.iface, "queue", k.queue, "rule", d.Rule, "reason", d.Reason)
	a.Outcome = OutcomeHold
	if err := t.record(ctx, a); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// record is Recorder.Record for a row nothing else waits on (a hold, an
// error), keeping it to record again (retryRows) when the write fails.
func (t *Tuner) record(ctx context.Context, a Action) error {
	if _, err := t.rec.Record(ctx, a); err != nil {
		t.unrecorded = append(t.unrecorded, a)
		return err
	}
	return nil
}

// retryRows records again target's rows whose Record failed (operators'
// rows first, then the others, each oldest first, at its own time), and
// deletes the rows decisions not pushed may have left. What fails again
// is kept for the next try.
func (t *Tuner) retryRows(ctx context.Context, target string) error {
	errs := []error{t.retryOperatorRows(ctx, target)}
	kept := t.unrecorded[:0]
	for _, a := range t.unrecorded {
		if a.Target == target {
			if _, err := t.rec.Record(ctx, a); err != nil {
				errs = append(errs, fmt.Errorf("switch %q: recording a %s row again: %w", target, a.Outcome, err))
				kept = append(kept, a)
			}
			continue
		}
		kept = append(kept, a)
	}
	t.unrecorded = kept
	keep := t.forget[:0]
	for _, f := range t.forget {
		if f.target == target {
			if err := t.rec.Forget(ctx, f.key); err != nil {
				errs = append(errs, fmt.Errorf("switch %q: deleting the row of a decision not pushed: %w", target, err))
				keep = append(keep, f)
			}
			continue
		}
		keep = append(keep, f)
	}
	t.forget = keep
	return errors.Join(errs...)
}

func (t *Tuner) action(now time.Time, k queueKey, w policy.Window, d policy.Decision, mem policy.Memory) Action {
	return Action{Time: now, Target: k.target, Interface: k.iface, Queue: k.queue, Rule: d.Rule, Reason: d.Reason,
		Before: d.Before, After: d.After, DryRun: t.cfg.DryRun, Key: uuid.NewString(),
		Inputs: Inputs{WindowStart: w.Start, WindowEnd: w.End, Samples: len(w.Samples), Rule: d.Rule,
			Metrics: d.Metrics, Objective: d.Objective, KBaseBytes: w.KBaseBytes,
			EffectiveKMaxBytes: w.EffectiveKMaxBytes, RTTEstNs: int64(w.RTTEst), PortRateBitsPerSec: w.PortRateBitsPerSec,
			Step: d.Step, Memory: mem, Direction: d.Direction.String()}}
}

// follow advances a pending commit: once the judge window after the push
// is complete and telemetry shows every change applied, the commit is
// confirmed if no queue's objective got worse, and cancelled at once if
// one did. A commit the telemetry does not let the tuner judge within
// Config.JudgeBound is cancelled too: the tuner never keeps a commit
// pending (and other clients' Sets refused) longer than its judgement
// needs. A cancel that fails is tried again every period; the switch rolls
// the commit back at its deadline all the same.
func (t *Tuner) follow(ctx context.Context, s SwitchConfig, p *pending, now time.Time) error {
	if !now.Before(p.deadline) {
		var reason func(pendingChange) string
		switch {
		case p.cancelErr != "" && p.worse == "":
			reason = sameReason("not judged within judge_window + 2 periods, and the tuner's cancels failed: rolled back by the switch at its rollback duration")
		case p.cancelErr != "":
			reason = func(c pendingChange) string {
				return p.notConfirmed(c) + "; the tuner's cancels failed: rolled back by the switch at its rollback duration"
			}
		case p.worse == "":
			reason = sameReason("not confirmed within the rollback duration: telemetry did not show the change applied with a complete judge window")
		default:
			reason = p.notConfirmed
		}
		// The switch rolls it back at its deadline; a cancel all the same,
		// in case its clock is behind the tuner's (an error here is the
		// switch having rolled it back already).
		if err := t.cancelCommit(ctx, s.Name, p); err != nil {
			t.log.Debug("tuner: cancel at the deadline", "target", s.Name, "commit", p.id, "err", err)
		}
		return t.finish(ctx, s, p, now, OutcomeRolledBack, reason, p.cancelErr)
	}
	if p.worse != "" {
		return t.cancelJudged(ctx, s, p, now, p.worse, p.notConfirmed)
	}
	if now.Sub(p.pushedAt) < t.cfg.JudgeWindow {
		return nil
	}
	// wait is the answer while no judgement can be made: wait for a
	// later period, or, at JudgeBound, cancel.
	wait := func() error {
		if now.Sub(p.pushedAt) < t.cfg.JudgeBound() {
			return nil
		}
		why := fmt.Sprintf("not judged within judge_window + 2 periods (%v): telemetry did not show the change applied with a complete judge window", t.cfg.JudgeBound())
		return t.cancelJudged(ctx, s, p, now, why, sameReason(why))
	}
	// The judge window starts at the push, not judge_window before now:
	// what happened from the Set on (drops while it took effect) is the
	// commit's to answer for (docs/tuner.md, "Judging a change").
	wins, err := t.src.Windows(ctx, s.Name, p.pushedAt, now)
	if err != nil {
		return errors.Join(fmt.Errorf("switch %q: reading telemetry to judge commit %s: %w", s.Name, p.id, err), wait())
	}
	var verdicts []string
	worse := false
	judged := make([]*Judgement, len(p.changes))
	own := make([]string, len(p.changes))
	for ci, c := range p.changes {
		i := slices.IndexFunc(wins, func(w QueueWindow) bool { return w.Interface == c.key.iface && w.Queue == c.key.queue })
		if i < 0 {
			return wait() // no telemetry yet
		}
		w := wins[i].Window
		if !c.commit.Applied(w) {
			return wait()
		}
		j := c.commit.Judge(t.cfg.Policy, w)
		if j.Wait {
			return wait() // gaps: a complete window may come
		}
		verdicts = append(verdicts, fmt.Sprintf("%s queue %d: %s", c.key.iface, c.key.queue, j.Reason))
		worse = worse || !j.Keep
		judged[ci], own[ci] = judgementOf(j), j.Reason
		t.mem[c.key] = t.cfg.Policy.Judged(t.mem[c.key], j)
	}
	// Every change judged: the commit's judgement is made.
	for ci := range p.changes {
		p.changes[ci].judged, p.changes[ci].verdict = judged[ci], own[ci]
	}
	reason := strings.Join(verdicts, "; ")
	if worse {
		p.worse, p.judgedWorse = "not confirmed: "+reason, true
		t.log.Info("tuner: change made things worse; cancelling it", "target", s.Name, "commit", p.id, "reason", reason)
		return t.cancelJudged(ctx, s, p, now, p.worse, p.notConfirmed)
	}
	err = t.push.Confirm(ctx, s.Name, p.id)
	// The record gets a switch_timeout of its own: the Confirm may have
	// used up ctx's, or the tuner be stopping.
	rctx, done := t.ownTimeout(ctx)
	defer done()
	if err != nil {
		why := "confirm failed: the switch rolls the change back at " + p.rollsBackAt()
		if ctx.Err() != nil {
			why = "the confirm's answer was lost: the switch either confirmed it or rolls it back at " + p.rollsBackAt()
		}
		ferr := t.finish(rctx, s, p, now, OutcomeError, sameReason(why), err.Error())
		return errors.Join(err, ferr)
	}
	// Each row its own queue's judgement.
	return t.finish(rctx, s, p, now, OutcomeConfirmed, func(c pendingChange) string { return "applied and " + c.verdict }, "")
}

// cancelJudged cancels p on its switch, the tuner's judgement made (worse,
// or none possible within JudgeBound), and records it rolled back with
// each row's why. When the cancel fails, p stays pending: the next period
// tries again, and the switch rolls it back at its deadline anyway.
func (t *Tuner) cancelJudged(ctx context.Context, s SwitchConfig, p *pending, now time.Time, commitWhy string, why func(pendingChange) string) error {
	if err := t.cancelCommit(ctx, s.Name, p); err != nil {
		p.cancelErr = err.Error()
		return fmt.Errorf("switch %q: cancelling commit %s (%s): %w", s.Name, p.id, commitWhy, err)
	}
	rctx, done := t.ownTimeout(ctx)
	defer done()
	return t.finish(rctx, s, p, now, OutcomeRolledBack, func(c pendingChange) string { return why(c) + "; cancelled" }, "")
}

// finish ends p with outcome o, each change's row with its reason.
func (t *Tuner) finish(ctx context.Context, s SwitchConfig, p *pending, now time.Time, o Outcome, reason func(pendingChange) string, errText string) error {
	delete(t.pending, s.Name)
	var errs []error
	for _, c := range p.changes {
		if o != OutcomeConfirmed {
			t.mem[c.key] = t.cfg.Policy.Reverted(t.mem[c.key], now, c.worse())
			t.expect(c.key, c.change.Before, c.change.After)
		} else {
			t.seen[c.key] = seenSettings{settled: c.change.After}
		}
		why := reason(c)
		if err := t.setOutcome(ctx, s.Name, c.actionID, o, why, errText, c.judged); err != nil {
			errs = append(errs, fmt.Errorf("switch %q: recording outcome: %w", s.Name, err))
		}
		t.log.Info("tuner commit", "target", s.Name, "commit", p.id, "interface", c.key.iface, "queue", c.key.queue,
			"outcome", o, "reason", why, "err", errText)
	}
	return errors.Join(errs...)
}

// setOutcome is Recorder.SetOutcome, keeping the outcome to write again
// (retryOutcomes) when the write fails.
func (t *Tuner) setOutcome(ctx context.Context, target string, id int64, o Outcome, reason, errText string, j *Judgement) error {
	t.countChanges(o, 1)
	err := t.rec.SetOutcome(ctx, id, o, reason, errText, j)
	if err != nil {
		t.unwritten[id] = unwrittenOutcome{target: target, outcome: o, reason: reason, errText: errText, judged: j}
	}
	return err
}

// retryOutcomes writes again target's outcomes whose write failed, in
// the order of their rows; each written is dropped, so that a row's
// outcome is updated once.
func (t *Tuner) retryOutcomes(ctx context.Context, target string) error {
	var ids []int64
	for id, u := range t.unwritten {
		if u.target == target {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var errs []error
	for _, id := range ids {
		u := t.unwritten[id]
		if err := t.rec.SetOutcome(ctx, id, u.outcome, u.reason, u.errText, u.judged); err != nil {
			errs = append(errs, fmt.Errorf("switch %q: recording the outcome of row %d again: %w", target, id, err))
			continue
		}
		delete(t.unwritten, id)
		t.log.Info("tuner: outcome recorded", "target", target, "row", id, "outcome", u.outcome)
	}
	return errors.Join(errs...)
}

// answerLost says whether a Set that failed may still have been applied:
// the tuner's context ended (switch_timeout, or the tuner stopping), or
// the call ended without the switch's answer — a deadline or a cancel
// (the switch's side of the call ends at the deadline the tuner's
// context gave it, a moment before the tuner's own context does), or the
// connection lost after the request went out.
func answerLost(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded, codes.Canceled, codes.Unavailable:
		return true
	}
	return false
}
