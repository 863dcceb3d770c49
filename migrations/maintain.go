package migrations

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Execer is what Maintain and SetRetention need: a *pgx.Conn, a
// *pgxpool.Pool or a pgx.Tx.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Maintain runs one maintenance pass (SQL lhcnp_maintain()): daily
// partitions of samples created ahead, those past the retention dropped, by
// pg_partman or by the migration's own functions, whichever keeps them, and
// the horizon they were dropped by recorded (schema 24), the held stale
// deletes older than it removed (schema 27). The
// collector calls it periodically (hourly is plenty: partitions are made
// days ahead); concurrent calls are serialised by the database. Since
// schema 28 the pass runs as the schema's owner (SECURITY DEFINER): the
// caller needs EXECUTE on lhcnp_maintain(), which the owner grants, not the
// right to create tables (docs/collector.md, "Roles").
func Maintain(ctx context.Context, db Execer) error {
	if _, err := db.Exec(ctx, "SELECT lhcnp_maintain()"); err != nil {
		return fmt.Errorf("partition maintenance: %w", err)
	}
	return nil
}

// SetRetention sets how long samples (and events and ledger rows) are kept;
// keep <= 0 keeps them forever. It takes effect at the next Maintain. The
// retention is whole seconds at least. As Maintain, it runs as the
// schema's owner since schema 28, for a caller granted EXECUTE on
// lhcnp_set_retention.
func SetRetention(ctx context.Context, db Execer, keep time.Duration) error {
	var arg any // NULL: forever
	if keep > 0 {
		if keep < time.Second {
			return fmt.Errorf("retention %v: want at least 1s", keep)
		}
		arg = fmt.Sprintf("%d seconds", int64(keep/time.Second))
	}
	if _, err := db.Exec(ctx, "SELECT lhcnp_set_retention(justify_hours($1::interval))", arg); err != nil {
		return fmt.Errorf("set retention %v: %w", keep, err)
	}
	return nil
}

// Trim deletes the samples, events, ledger rows and held stale deletes
// (schema 26) older than keep, within the days Maintain keeps (its
// retention drops whole days only): for a retention shorter than a day,
// such as `lhcnp lab`'s. As a maintenance
// pass does before it drops days, the last value of each leaf the views
// read at an instant, and of each counter (with the time it was sampled,
// so that the first kept sample keeps its increase; a delete too, so that
// a value after it still counts from zero), is first carried
// forward to the horizon (lhcnp_carry_forward, lhcnp_carry_counters), so
// the kept rows read what they read before. The
// deleted rows' space is reused by later rows once (auto)vacuum has run, so
// a table trimmed every few minutes stays at the size of keep's rows. The
// series (and latest rows) of leaves deleted before the horizon are
// deleted too; a collector that still runs the subscription that deleted
// one would not describe it again should the same path come back. keep
// must be at least a second. The horizon is recorded as the one a pass
// applied (lhcnp_partitioning.horizon, schema 24), unless an earlier pass
// applied a later one.
func Trim(ctx context.Context, db Beginner, keep time.Duration) error {
	if keep < time.Second {
		return fmt.Errorf("trim: keep %v: want at least 1s", keep)
	}
	return trimAt(ctx, db, time.Now().Add(-keep), fmt.Sprintf("trim to %v", keep))
}

// TrimAt is Trim to a given horizon: what is older than horizon goes (the
// carried rows of schema 17 and 18 at horizon). Trim's horizon is the wall
// clock less keep; a test that places samples exactly at a horizon names it.
func TrimAt(ctx context.Context, db Beginner, horizon time.Time) error {
	return trimAt(ctx, db, horizon, fmt.Sprintf("trim at %v", horizon))
}

// Beginner is what Trim needs: a *pgx.Conn or a *pgxpool.Pool.
type Beginner interface {
	Execer
	Begin(ctx context.Context) (pgx.Tx, error)
}

func trimAt(ctx context.Context, db Beginner, horizon time.Time, what string) error {
	for _, q := range []string{
		// The horizon first (schema 24): a reader refuses times before
		// it from now on, and a trim that fails half-way has removed
		// some rows before it. Committed on its own, before any row
		// goes: History reads it again after its rows to learn whether
		// a pass removed some meanwhile, which holds only if no removal
		// is visible before its horizon (and on Citus a worker may
		// commit its part of a transaction before the coordinator).
		"SELECT lhcnp_record_horizon($1)",
		"SELECT lhcnp_carry_forward($1)",
		"SELECT lhcnp_carry_counters($1)",
		"DELETE FROM samples WHERE ts < $1",
		"DELETE FROM events WHERE ts < $1",
		"DELETE FROM ingest_ledger WHERE committed_at < $1",
		// The deletes a stale merge held back (schema 26) that no
		// later batch decided: one older than the horizon could only
		// become a sample the trim removes.
		"DELETE FROM stale_deletes WHERE ts < $1",
	} {
		if _, err := db.Exec(ctx, q, horizon); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	// A leaf the switch deleted before the horizon (a flow-table entry
	// freed by its DREQ: the lab makes thousands an hour) has no sample
	// left: its latest and series rows go too, in one transaction. Two
	// statements, not one joining them: Citus refuses a DELETE of the
	// reference table series that reads the distributed latest.
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, `DELETE FROM latest WHERE flags & 2 = 2 AND ts < $1 RETURNING series_id`, horizon)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	gone, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if len(gone) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM series WHERE id = ANY($1)`, gone); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
