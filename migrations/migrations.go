// Package migrations holds lhcnp's PostgreSQL schema as plain SQL files
// (NNN_name.sql, the up part above tern's "---- create above / drop below
// ----" line, the down part below it), embedded in the binary and applied by
// tern's migrate package. tern holds a PostgreSQL advisory lock while it
// migrates, so collectors starting together and `lhcnp migrate` never apply a
// step twice. The version lives in the table lhcnp_schema_version.
//
// The package depends on tern and pgx only; the collector, the tuner and the
// lab call it, it calls none of them.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// VersionTable is the table in which tern records the schema version.
const VersionTable = "public.lhcnp_schema_version"

//go:embed *.sql
var files embed.FS

// FS is the embedded migration files, for tools that want to read them.
func FS() fs.FS { return files }

// Step is one migration: its sequence number, file name and whether the
// database has it applied.
type Step struct {
	Sequence int32
	Name     string
	Applied  bool
}

// Status is where a database stands.
type Status struct {
	Current int32 // applied version, 0 for an empty database
	Latest  int32 // newest version this binary knows
	Steps   []Step
}

// Pending reports whether migrations remain to be applied.
func (s Status) Pending() bool { return s.Current < s.Latest }

// Option configures a migration run.
type Option func(*options)

type options struct {
	onStart          func(sequence int32, name, direction string)
	partitionManager string
}

// WithPartitionManager chooses who keeps the daily partitions of samples
// when migration 2 is applied: "pg_partman" (an error if the extension is
// unavailable), "lhcnp" (the plain-SQL functions of the migration) or
// "auto" (the default: pg_partman when the server has it).
func WithPartitionManager(m string) Option {
	return func(o *options) { o.partitionManager = m }
}

// CheckPartitionManager says why m is not a partition manager
// WithPartitionManager takes (`"weekly": want auto, pg_partman or lhcnp`),
// for a command to refuse it before it connects.
func CheckPartitionManager(m string) error {
	switch m {
	case "auto", "pg_partman", "lhcnp":
		return nil
	}
	return fmt.Errorf("%q: want auto, pg_partman or lhcnp", m)
}

// WithProgress calls f before each step is applied (direction "up" or
// "down"), e.g. to log it.
func WithProgress(f func(sequence int32, name, direction string)) Option {
	return func(o *options) { o.onStart = f }
}

func newMigrator(ctx context.Context, conn *pgx.Conn, opts []Option) (*migrate.Migrator, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return nil, fmt.Errorf("migrations: version table %s: %w", VersionTable, err)
	}
	if o.partitionManager != "" {
		if err := CheckPartitionManager(o.partitionManager); err != nil {
			return nil, fmt.Errorf("migrations: partition manager %w", err)
		}
	}
	if o.partitionManager != "" {
		m.Data["partition_manager"] = o.partitionManager
	}
	if err := m.LoadMigrations(files); err != nil {
		return nil, fmt.Errorf("migrations: load: %w", err)
	}
	if o.onStart != nil {
		m.OnStart = func(seq int32, name, direction, _ string) { o.onStart(seq, name, direction) }
	}
	return m, nil
}

// Latest is the newest schema version this binary knows (0 if the embedded
// files were unusable, which the package's tests rule out).
func Latest() int32 {
	names, err := migrate.FindMigrations(files)
	if err != nil {
		return 0
	}
	return int32(len(names))
}

// Up applies every pending migration.
func Up(ctx context.Context, conn *pgx.Conn, opts ...Option) error {
	m, err := newMigrator(ctx, conn, opts)
	if err != nil {
		return err
	}
	return wrapErr(m.Migrate(ctx), "up")
}

// Down undoes the last `steps` applied migrations (steps <= 0 means one).
func Down(ctx context.Context, conn *pgx.Conn, steps int, opts ...Option) error {
	if steps <= 0 {
		steps = 1
	}
	st, err := GetStatus(ctx, conn)
	if err != nil {
		return err
	}
	target := st.Current - int32(steps)
	if target < 0 {
		return fmt.Errorf("migrations: cannot go down %d steps from version %d", steps, st.Current)
	}
	return To(ctx, conn, target, opts...)
}

// To migrates up or down to version (0 undoes everything).
func To(ctx context.Context, conn *pgx.Conn, version int32, opts ...Option) error {
	m, err := newMigrator(ctx, conn, opts)
	if err != nil {
		return err
	}
	return wrapErr(m.MigrateTo(ctx, version), fmt.Sprintf("to version %d", version))
}

// wrapErr names the failing migration file when PostgreSQL refused one.
func wrapErr(err error, what string) error {
	if err == nil {
		return nil
	}
	var pgErr migrate.MigrationPgError
	if errors.As(err, &pgErr) {
		return fmt.Errorf("migrations: %s: %w", pgErr.MigrationName, pgErr.PgError)
	}
	return fmt.Errorf("migrations: %s: %w", what, err)
}

// GetStatus reports the applied version and every known step. It writes
// nothing: a database without the version table is at version 0 (tern's
// migrator would create the table, so it is not asked then), and `lhcnp
// migrate status` pointed at the wrong database, or run by a role that may
// only read, leaves no table behind.
func GetStatus(ctx context.Context, conn *pgx.Conn) (Status, error) {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, VersionTable).Scan(&exists); err != nil {
		return Status{}, fmt.Errorf("migrations: version table %s: %w", VersionTable, err)
	}
	if !exists {
		names, err := migrate.FindMigrations(files)
		if err != nil {
			return Status{}, fmt.Errorf("migrations: load: %w", err)
		}
		st := Status{Latest: int32(len(names))}
		for i, name := range names {
			st.Steps = append(st.Steps, Step{Sequence: int32(i + 1), Name: path.Base(name)})
		}
		return st, nil
	}
	m, err := newMigrator(ctx, conn, nil)
	if err != nil {
		return Status{}, err
	}
	cur, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return Status{}, fmt.Errorf("migrations: current version: %w", err)
	}
	st := Status{Current: cur, Latest: int32(len(m.Migrations))}
	for _, mig := range m.Migrations {
		st.Steps = append(st.Steps, Step{Sequence: mig.Sequence, Name: mig.Name, Applied: mig.Sequence <= cur})
	}
	return st, nil
}
