package tuner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PGRecorder writes tuner_actions (migrations/, docs/collector.md).
type PGRecorder struct {
	pool *pgxpool.Pool
}

// NewPGRecorder returns a recorder writing through pool.
func NewPGRecorder(pool *pgxpool.Pool) *PGRecorder { return &PGRecorder{pool: pool} }

// Record implements Recorder.
func (r *PGRecorder) Record(ctx context.Context, a Action) (int64, error) {
	inputs, err := json.Marshal(a.Inputs)
	if err != nil {
		return 0, fmt.Errorf("tuner_actions: inputs: %w", err)
	}
	before, err := json.Marshal(a.Before)
	if err != nil {
		return 0, fmt.Errorf("tuner_actions: before: %w", err)
	}
	after, err := json.Marshal(a.After)
	if err != nil {
		return 0, fmt.Errorf("tuner_actions: after: %w", err)
	}
	var errText *string
	if a.Error != "" {
		errText = &a.Error
	}
	var id int64
	err = r.pool.QueryRow(ctx, `
		INSERT INTO tuner_actions (ts, target, interface, queue, inputs, reason, before, after, outcome, dry_run, error)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		RETURNING id`,
		a.Time, a.Target, a.Interface, int(a.Queue), inputs, string(a.Rule)+": "+a.Reason, before, after,
		string(a.Outcome), a.DryRun, errText).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("tuner_actions: insert: %w", err)
	}
	return id, nil
}

// SetOutcome implements Recorder.
func (r *PGRecorder) SetOutcome(ctx context.Context, id int64, o Outcome, reason, errText string) error {
	var e *string
	if errText != "" {
		e = &errText
	}
	tag, err := r.pool.Exec(ctx, `
		UPDATE tuner_actions
		SET outcome = $2,
		    reason = CASE WHEN $3 = '' THEN reason ELSE reason || '; ' || $3 END,
		    error = COALESCE($4, error)
		WHERE id = $1`, id, string(o), reason, e)
	if err != nil {
		return fmt.Errorf("tuner_actions: update %d: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("tuner_actions: update %d: no such row", id)
	}
	return nil
}
