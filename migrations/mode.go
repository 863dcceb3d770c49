package migrations

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Mode is how a database holds lhcnp's tables: on one PostgreSQL node, or
// distributed by Citus from a coordinator (migration 011, docs/scaling.md
// Step 3).
type Mode struct {
	// Citus is true when samples is a distributed table (the database is a
	// Citus coordinator and migration 011 distributed it).
	Citus bool
	// CitusInstalled is true when the database has the citus extension,
	// distributed or not.
	CitusInstalled bool
	// Workers is the number of active Citus workers registered.
	Workers int
	// Distributed lists the tables Citus holds, each with how:
	// "samples: by series_id" or "series: reference".
	Distributed []string
}

// String says the mode in one line, for `lhcnp migrate status`.
func (m Mode) String() string {
	switch {
	case m.Citus:
		return fmt.Sprintf("Citus coordinator with %d workers; samples, latest, ingest_ledger and stale_deletes distributed by series (co-located), events by target, the small tables reference tables", m.Workers)
	case m.CitusInstalled:
		return fmt.Sprintf("PostgreSQL, one node (citus installed, %d workers, tables not distributed)", m.Workers)
	default:
		return "PostgreSQL, one node"
	}
}

// GetMode reports the database's mode. It changes nothing.
func GetMode(ctx context.Context, conn *pgx.Conn) (Mode, error) {
	var m Mode
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')`).Scan(&m.CitusInstalled); err != nil {
		return Mode{}, fmt.Errorf("migrations: mode: %w", err)
	}
	if !m.CitusInstalled {
		return m, nil
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid <> 0`).Scan(&m.Workers); err != nil {
		return Mode{}, fmt.Errorf("migrations: mode: %w", err)
	}
	// Partitions of samples are left out: they follow their parent.
	rows, err := conn.Query(ctx, `
		SELECT p.logicalrelid::regclass::text || ': ' ||
		       CASE WHEN p.partmethod = 'n' THEN 'reference' ELSE 'by ' || column_to_column_name(p.logicalrelid, p.partkey) END
		FROM pg_dist_partition p
		WHERE NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = p.logicalrelid)
		ORDER BY 1`)
	if err != nil {
		return Mode{}, fmt.Errorf("migrations: mode: %w", err)
	}
	m.Distributed, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return Mode{}, fmt.Errorf("migrations: mode: %w", err)
	}
	if len(m.Distributed) == 0 {
		m.Distributed = nil
	}
	for _, d := range m.Distributed {
		if d == "samples: by series_id" {
			m.Citus = true
		}
	}
	return m, nil
}
