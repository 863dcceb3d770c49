package tuner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/tuner/policy"
)

// PGRecorder writes tuner_actions (migrations/, docs/collector.md).
type PGRecorder struct {
	pool pgDB // a *pgxpool.Pool, or inside operatorTx its transaction
}

// pgDB is what the recorder's statements need: a pool, or a transaction.
type pgDB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// PGRecorder restores the tuner's overload-cuts (CutReader) and the
// queues' settings (TrailReader) at a start.
var (
	_ CutReader   = (*PGRecorder)(nil)
	_ TrailReader = (*PGRecorder)(nil)
)

// NewPGRecorder returns a recorder writing through pool.
func NewPGRecorder(pool *pgxpool.Pool) *PGRecorder {
	return &PGRecorder{pool: pool}
}

// operatorTx runs f with a recorder inside a transaction that holds the
// queue's operator lock (a transaction-level advisory lock on the target,
// interface and queue), so that two runs of the same `lhcnp tuner hold`
// or `release` at once (a retry while the first is still under way) read
// each other's row instead of both writing one.
func (r *PGRecorder) operatorTx(ctx context.Context, target string, q QueueID, f func(tr *PGRecorder) error) error {
	pool, ok := r.pool.(*pgxpool.Pool)
	if !ok { // inside one already
		return f(r)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("tuner_actions: %s %s queue %d: begin: %w", target, q.Interface, q.Queue, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit, a no-op
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('lhcnp tuner_actions operator ' || $1 || ' ' || $2 || ' ' || $3::int::text, 0))`,
		target, q.Interface, int(q.Queue)); err != nil {
		return fmt.Errorf("tuner_actions: %s %s queue %d: the operator lock: %w", target, q.Interface, q.Queue, err)
	}
	if err := f(&PGRecorder{pool: tx}); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("tuner_actions: %s %s queue %d: commit: %w", target, q.Interface, q.Queue, err)
	}
	return nil
}

// Record implements Recorder.
func (r *PGRecorder) Record(ctx context.Context, a Action) (int64, error) {
	inputs, err := json.Marshal(a.Inputs)
	if err != nil {
		return 0, fmt.Errorf("tuner_actions: inputs: %w", err)
	}
	before, err := settingsJSON(a.Before)
	if err != nil {
		return 0, fmt.Errorf("tuner_actions: before: %w", err)
	}
	after, err := settingsJSON(a.After)
	if err != nil {
		return 0, fmt.Errorf("tuner_actions: after: %w", err)
	}
	var errText *string
	if a.Error != "" {
		errText = &a.Error
	}
	var holdUntil *time.Time
	if !a.HoldUntil.IsZero() {
		holdUntil = &a.HoldUntil
	}
	key := a.Key
	if key == "" {
		key = uuid.NewString()
	}
	// A key stored already is this action's row, written by an earlier
	// try whose answer was lost: its id, and no second row (the no-op
	// update makes RETURNING return it).
	var id int64
	err = r.pool.QueryRow(ctx, `
		INSERT INTO tuner_actions (ts, target, interface, queue, inputs, reason, before, after, outcome, dry_run, error, hold_until, action_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (action_key) DO UPDATE SET action_key = EXCLUDED.action_key
		RETURNING id`,
		a.Time, a.Target, a.Interface, int(a.Queue), inputs, string(a.Rule)+": "+a.Reason, before, after,
		string(a.Outcome), a.DryRun, errText, holdUntil, key).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("tuner_actions: insert: %w", err)
	}
	return id, nil
}

// settingsJSON is the JSON of s, NULL for settings not known (an
// operator's hold or release names no settings).
func settingsJSON(s policy.Settings) ([]byte, error) {
	if s == (policy.Settings{}) {
		return nil, nil
	}
	return json.Marshal(s)
}

// OperatorHolds implements HoldReader: per queue of target, the newest
// operator row (by ts, then id), if its hold_until is after now.
func (r *PGRecorder) OperatorHolds(ctx context.Context, target string, now time.Time) (map[QueueID]OperatorHold, error) {
	rows, err := r.pool.Query(ctx, `
		SELECT interface, queue, id, hold_until, reason FROM (
			SELECT DISTINCT ON (interface, queue) interface, queue, id, hold_until, reason
			FROM tuner_actions
			WHERE target = $1 AND outcome = 'operator' AND ts <= $2
			ORDER BY interface, queue, ts DESC, id DESC) newest
		WHERE hold_until > $2`, target, now)
	if err != nil {
		return nil, fmt.Errorf("tuner_actions: operators' holds: %w", err)
	}
	defer rows.Close()
	out := map[QueueID]OperatorHold{}
	for rows.Next() {
		var q QueueID
		var queue int
		var h OperatorHold
		var reason *string
		if err := rows.Scan(&q.Interface, &queue, &h.ID, &h.Until, &reason); err != nil {
			return nil, fmt.Errorf("tuner_actions: operators' holds: %w", err)
		}
		q.Queue, h.Reason = uint8(queue), deref(reason, "")
		out[q] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tuner_actions: operators' holds: %w", err)
	}
	return out, nil
}

// TunersCuts implements CutReader: the queues of target whose newest row
// of tuner_actions that changed its overload-cut and stands (confirmed, or
// an operator's; not a dry run, a rollback or a commit still pending) is
// the tuner's switching it on. A tuner that restarts takes such a leaf for
// its own again (policy.Memory.CutOn), and switches it off once the queue
// is calm; any other leaf on is not its to switch off. With each, the
// off-tries of rule pinned rolled back since that row whose judgement
// (inputs' judgement) was not keep: the back-off the next off-try starts
// from (policy.Memory.CutOffRollbacks), as the tuner that wrote them had
// counted it. An off-try refused, lost or undone unjudged is not counted,
// as the policy does not count it (policy.Config.Reverted).
func (r *PGRecorder) TunersCuts(ctx context.Context, target string) (map[QueueID]CutClaim, error) {
	rows, err := r.pool.Query(ctx, `
		SELECT interface, queue, (
			SELECT count(*) FROM tuner_actions off
			WHERE off.target = $1 AND off.interface = newest.interface AND off.queue = newest.queue AND NOT off.dry_run
			  AND off.outcome = 'rolled-back' AND off.inputs ->> 'rule' = 'pinned'
			  AND coalesce((off.before ->> 'overload_cut')::boolean, false) AND NOT coalesce((off.after ->> 'overload_cut')::boolean, false)
			  AND (off.inputs #>> '{judgement,keep}')::boolean IS FALSE
			  AND (off.ts, off.id) > (newest.ts, newest.id))
		FROM (
			SELECT DISTINCT ON (interface, queue) interface, queue, id, ts, outcome, after
			FROM tuner_actions
			WHERE target = $1 AND interface IS NOT NULL AND queue IS NOT NULL AND NOT dry_run
			  AND outcome IN ('confirmed', 'operator') AND before IS NOT NULL AND after IS NOT NULL
			  AND coalesce((before ->> 'overload_cut')::boolean, false) <> coalesce((after ->> 'overload_cut')::boolean, false)
			ORDER BY interface, queue, ts DESC, id DESC) newest
		WHERE outcome = 'confirmed' AND coalesce((after ->> 'overload_cut')::boolean, false)`, target)
	if err != nil {
		return nil, fmt.Errorf("tuner_actions: the tuner's overload-cuts: %w", err)
	}
	defer rows.Close()
	out := map[QueueID]CutClaim{}
	for rows.Next() {
		var q QueueID
		var queue int
		var offRollbacks int64
		if err := rows.Scan(&q.Interface, &queue, &offRollbacks); err != nil {
			return nil, fmt.Errorf("tuner_actions: the tuner's overload-cuts: %w", err)
		}
		q.Queue = uint8(queue)
		out[q] = CutClaim{OffRollbacks: int(offRollbacks)}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tuner_actions: the tuner's overload-cuts: %w", err)
	}
	return out, nil
}

// LastSettings implements TrailReader: per queue of target, its newest row
// (by ts, then id) that names the settings it ran — after for a confirmed
// change and an operator's change, before for any other row with
// settings (an operator's hold or release names none) — and whether any
// row of the queue is a change of its tuned leaves that stood (a tuner's
// confirmed, not a dry run; or an operator's).
func (r *PGRecorder) LastSettings(ctx context.Context, target string) (map[QueueID]LastSettings, error) {
	rows, err := r.pool.Query(ctx, `
		SELECT interface, queue, id, ts, outcome, before, after, decided FROM (
			SELECT DISTINCT ON (interface, queue) interface, queue, id, ts, outcome, before, after,
				bool_or((outcome = 'operator' AND after IS NOT NULL) OR (NOT dry_run AND outcome = 'confirmed'
					AND before IS NOT NULL AND after IS NOT NULL AND before <> after))
					OVER (PARTITION BY interface, queue) AS decided
			FROM tuner_actions
			WHERE target = $1 AND interface IS NOT NULL AND queue IS NOT NULL
			  AND (CASE WHEN outcome IN ('confirmed', 'operator') THEN after ELSE before END) IS NOT NULL
			ORDER BY interface, queue, ts DESC, id DESC) newest`, target)
	if err != nil {
		return nil, fmt.Errorf("tuner_actions: the queues' last settings: %w", err)
	}
	defer rows.Close()
	out := map[QueueID]LastSettings{}
	for rows.Next() {
		var q QueueID
		var queue int
		var l LastSettings
		var outcome string
		var before, after []byte
		if err := rows.Scan(&q.Interface, &queue, &l.ID, &l.At, &outcome, &before, &after, &l.Decided); err != nil {
			return nil, fmt.Errorf("tuner_actions: the queues' last settings: %w", err)
		}
		var b, a *policy.Settings
		for _, v := range []struct {
			raw []byte
			to  **policy.Settings
		}{{before, &b}, {after, &a}} {
			if v.raw == nil {
				continue
			}
			var s policy.Settings
			if err := json.Unmarshal(v.raw, &s); err != nil {
				return nil, fmt.Errorf("tuner_actions: row %d's settings: %w", l.ID, err)
			}
			*v.to = &s
		}
		l.Outcome = Outcome(outcome)
		switch l.Outcome {
		case OutcomeConfirmed, OutcomeOperator:
			l.Runs = *a
		case OutcomePushed, OutcomeError:
			l.Runs = *b
			if a != nil && *a != *b {
				l.Or = a
			}
		default:
			l.Runs = *b
		}
		q.Queue = uint8(queue)
		out[q] = l
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tuner_actions: the queues' last settings: %w", err)
	}
	return out, nil
}

// OperatorRow is a queue's operator row of tuner_actions (outcome
// operator): an operator's change the tuner saw, a hold or a release.
type OperatorRow struct {
	ID        int64
	At        time.Time // ts
	HoldUntil time.Time
	Reason    string // the rule first: "operator-hold: held by an operator until …"
}

// NewestOperatorRow returns queue q of target's newest operator row at
// now, the one that decides whether it is held (OperatorHolds: by ts,
// then id), false when it has none.
func (r *PGRecorder) NewestOperatorRow(ctx context.Context, target string, q QueueID, now time.Time) (OperatorRow, bool, error) {
	var o OperatorRow
	var reason *string
	err := r.pool.QueryRow(ctx, `
		SELECT id, ts, COALESCE(hold_until, ts), reason FROM tuner_actions
		WHERE target = $1 AND interface = $2 AND queue = $3 AND outcome = 'operator' AND ts <= $4
		ORDER BY ts DESC, id DESC LIMIT 1`, target, q.Interface, int(q.Queue), now).Scan(&o.ID, &o.At, &o.HoldUntil, &reason)
	if errors.Is(err, pgx.ErrNoRows) {
		return OperatorRow{}, false, nil
	}
	if err != nil {
		return OperatorRow{}, false, fmt.Errorf("tuner_actions: %s %s queue %d: the newest operator row: %w", target, q.Interface, q.Queue, err)
	}
	o.Reason = deref(reason, "")
	return o, true, nil
}

// holdReason is the reason of an operator's hold until until, after its
// rule.
func holdReason(until time.Time, why string) string {
	reason := "held by an operator until " + until.UTC().Format(time.RFC3339)
	if why != "" {
		reason += ": " + why
	}
	return reason
}

// Hold records an operator's hold of a queue (`lhcnp tuner hold`): the
// tuner leaves it alone until until, or until a release. why is the
// operator's text.
//
// The same hold asked again while it holds is not recorded again: when
// the queue's newest operator row is a hold still holding at now, asked
// for as long (its hold_until − ts is until − now, to the microsecond
// the database keeps) and with the same why, Hold returns that row and
// recorded false. That is the command run again because its answer was
// lost (the connection dropped after the commit), which wrote a second
// row; a hold asked for longer, shorter or for another reason is a new
// row (the newest decides). Meant for one operator's retries, one after
// the other: two run at the same instant may both write.
func (r *PGRecorder) Hold(ctx context.Context, target string, q QueueID, now, until time.Time, why string) (row OperatorRow, recorded bool, err error) {
	err = r.operatorTx(ctx, target, q, func(tr *PGRecorder) error {
		row, recorded, err = tr.hold(ctx, target, q, now, until, why)
		return err
	})
	return row, recorded, err
}

func (r *PGRecorder) hold(ctx context.Context, target string, q QueueID, now, until time.Time, why string) (row OperatorRow, recorded bool, err error) {
	last, ok, err := r.NewestOperatorRow(ctx, target, q, now)
	if err != nil {
		return OperatorRow{}, false, err
	}
	if ok && last.HoldUntil.After(now) && last.HoldUntil.Sub(last.At) == until.Sub(now).Round(time.Microsecond) &&
		last.Reason == string(RuleOperatorHold)+": "+holdReason(last.HoldUntil, why) {
		return last, false, nil
	}
	reason := holdReason(until, why)
	id, err := r.Record(ctx, Action{Time: now, Target: target, Interface: q.Interface, Queue: q.Queue,
		Rule: RuleOperatorHold, Reason: reason, Outcome: OutcomeOperator, HoldUntil: until})
	if err != nil {
		return OperatorRow{}, false, err
	}
	return OperatorRow{ID: id, At: now, HoldUntil: until, Reason: string(RuleOperatorHold) + ": " + reason}, true, nil
}

// Release records an operator's release of a queue (`lhcnp tuner
// release`): the tuner may tune it again from now, whatever held it (an
// operator's hold, or an operator's change the tuner saw).
//
// The same release asked again is not recorded again: when the queue's
// newest operator row is a release, Release returns that row and recorded
// false (the command run again because its answer was lost). Any other
// queue is released with a row, held or not as the database tells: a
// queue the tuner holds from its memory only (an operator's change it saw
// while the database could not take the row) has no row holding it, and
// the release must still outdate the row the tuner writes later.
func (r *PGRecorder) Release(ctx context.Context, target string, q QueueID, now time.Time, why string) (row OperatorRow, recorded bool, err error) {
	err = r.operatorTx(ctx, target, q, func(tr *PGRecorder) error {
		row, recorded, err = tr.release(ctx, target, q, now, why)
		return err
	})
	return row, recorded, err
}

func (r *PGRecorder) release(ctx context.Context, target string, q QueueID, now time.Time, why string) (row OperatorRow, recorded bool, err error) {
	last, ok, err := r.NewestOperatorRow(ctx, target, q, now)
	if err != nil {
		return OperatorRow{}, false, err
	}
	if ok && last.HoldUntil.Equal(last.At) && strings.HasPrefix(last.Reason, string(RuleOperatorRelease)+":") {
		return last, false, nil
	}
	reason := "released by an operator"
	if why != "" {
		reason += ": " + why
	}
	id, err := r.Record(ctx, Action{Time: now, Target: target, Interface: q.Interface, Queue: q.Queue,
		Rule: RuleOperatorRelease, Reason: reason, Outcome: OutcomeOperator, HoldUntil: now})
	if err != nil {
		return OperatorRow{}, false, err
	}
	return OperatorRow{ID: id, At: now, HoldUntil: now, Reason: string(RuleOperatorRelease) + ": " + reason}, true, nil
}

// Forget implements Recorder.
func (r *PGRecorder) Forget(ctx context.Context, key string) error {
	if _, err := r.pool.Exec(ctx, `DELETE FROM tuner_actions WHERE action_key = $1`, key); err != nil {
		return fmt.Errorf("tuner_actions: delete the row of %s: %w", key, err)
	}
	return nil
}

// SetOutcome implements Recorder: the judgement goes into inputs, under
// judgement.
func (r *PGRecorder) SetOutcome(ctx context.Context, id int64, o Outcome, reason, errText string, j *Judgement) error {
	var e *string
	if errText != "" {
		e = &errText
	}
	var judgement []byte
	if j != nil {
		var err error
		if judgement, err = json.Marshal(j); err != nil {
			return fmt.Errorf("tuner_actions: update %d: judgement: %w", id, err)
		}
	}
	// The reason is appended once: an update retried after one the
	// database committed (its answer lost) finds the row with this
	// outcome and its reason ending in this one (the right-hand sides
	// read the row as it was).
	tag, err := r.pool.Exec(ctx, `
		UPDATE tuner_actions
		SET outcome = $2,
		    reason = CASE WHEN $3 = '' OR (outcome = $2 AND right(reason, length($3) + 2) = '; ' || $3) THEN reason
		                  ELSE reason || '; ' || $3 END,
		    error = COALESCE($4, error),
		    inputs = CASE WHEN $5::jsonb IS NULL THEN inputs ELSE jsonb_set(coalesce(inputs, '{}'), '{judgement}', $5::jsonb) END
		WHERE id = $1`, id, string(o), reason, e, judgement)
	if err != nil {
		return fmt.Errorf("tuner_actions: update %d: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("tuner_actions: update %d: no such row", id)
	}
	return nil
}
