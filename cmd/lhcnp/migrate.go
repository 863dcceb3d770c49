package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lhcnp/lhcnp/internal/cliconf"
	"github.com/lhcnp/lhcnp/internal/errline"
	"github.com/lhcnp/lhcnp/internal/pgdsn"
	"github.com/lhcnp/lhcnp/migrations"
)

// migrateFile is `lhcnp migrate`'s configuration: every key is a flag and
// an LHCNP_MIGRATE_ variable (internal/cliconf), db.dsn named as in the
// collector's file; --db and LHCNP_DB are its older names (docs/collector.md).
type migrateFile struct {
	DB           migrateDB     `yaml:"db"`
	Steps        int           `yaml:"steps" help:"how many migrations to apply (up; not given: every pending one) or undo (down; not given: 1)"`
	Partitioning string        `yaml:"partitioning" help:"up: who keeps the daily partitions of samples: auto (pg_partman when the server has it), pg_partman or lhcnp (plain SQL)"`
	Retention    string        `yaml:"retention" help:"up: keep samples, events and ledger rows this long (a Go duration such as 720h, or 0 for ever); default: unchanged (30 days on a new schema); a collector whose db.retention is set enforces its own at each pass"`
	Timeout      time.Duration `yaml:"timeout" help:"give up after this long (connecting, waiting for the lock, migrating)"`
}

// migrateDB is the db: section, as in the collector's file.
type migrateDB struct {
	DSN string `yaml:"dsn" help:"PostgreSQL connection string (postgres://... or key=value); also --db, LHCNP_DB"`
}

// migrateArgs is lhcnp migrate's parsed and checked command line.
type migrateArgs struct {
	action  string // up, down or status
	mf      migrateFile
	dsnFrom string          // where db.dsn came from, for messages
	conn    *pgx.ConnConfig // db.dsn parsed
	keep    time.Duration   // the retention, when mf.Retention is set
	upSteps bool            // steps was given: up applies that many, not all
}

// parseMigrate parses lhcnp migrate's arguments: the action, then every
// key of migrateFile as a flag and an LHCNP_MIGRATE_ variable of environ
// (internal/cliconf), db.dsn also as --db and LHCNP_DB, its older names.
func parseMigrate(args []string, environ func() []string, stderr io.Writer) (*migrateArgs, error) {
	a := &migrateArgs{action: "up", mf: migrateFile{Partitioning: "auto", Timeout: 5 * time.Minute}}
	c, err := newCLI(cliSpec{name: "migrate", prefix: "LHCNP_MIGRATE_", configHelp: "migrate configuration file (YAML; every key is also a flag)",
		usage: []string{"usage: lhcnp migrate [up|down|status] --db.dsn DSN [flags]",
			"Every key is a flag and an LHCNP_MIGRATE_ variable (LHCNP_MIGRATE_DB_DSN); --db and LHCNP_DB are older names of db.dsn."},
		opts: []cliconf.Option{cliconf.WithFlagAlias("db", "db.dsn"), cliconf.WithEnvAlias("LHCNP_DB", "db.dsn")}},
		&a.mf, environ, stderr)
	if err != nil {
		return nil, err
	}
	err = c.parseArgs(args, 1, func() error {
		if len(c.args) > 0 {
			a.action = c.args[0]
		}
		switch a.action {
		case "up", "down", "status":
			return nil
		}
		return c.usageError(fmt.Sprintf("unknown action %q: want up, down or status", a.action))
	})
	if err != nil {
		return nil, err
	}
	mf := &a.mf
	// Messages name the flag or variable the user gave, or the key.
	a.dsnFrom = c.from("db.dsn")
	if mf.DB.DSN == "" {
		return nil, c.usageError(a.dsnFrom + ": a connection string is required (--db.dsn or --db, LHCNP_MIGRATE_DB_DSN or LHCNP_DB)")
	}
	// A DSN that does not parse is named where it came from, as the
	// collector's is (FILE:2:8: db.dsn: cannot parse ...; its passwords
	// hidden, pgdsn).
	if a.conn, err = pgx.ParseConfig(pgdsn.LowerScheme(mf.DB.DSN)); err != nil {
		return nil, c.cc.Locate(fmt.Errorf("db.dsn: %s", pgdsn.ErrorString(err)))
	}
	// steps, retention and partitioning are keys: a bad value is named
	// where it came from, the flag, the variable or the file's line.
	// steps has no default of its own (the flag's help would print one
	// that is only down's): not given, up applies every pending
	// migration and down undoes one.
	a.upSteps = c.cc.Origin("steps") != ""
	if a.upSteps && mf.Steps < 1 {
		return nil, c.cc.Locate(fmt.Errorf("steps: %d: want 1 or more", mf.Steps))
	}
	if !a.upSteps {
		a.mf.Steps = 1 // down's
	}
	if err := migrations.CheckPartitionManager(mf.Partitioning); err != nil {
		return nil, c.cc.Locate(fmt.Errorf("partitioning: %w", err))
	}
	if mf.Retention != "" {
		d, err := time.ParseDuration(mf.Retention)
		if err != nil || d < 0 {
			return nil, c.cc.Locate(fmt.Errorf("retention: %q: want a duration such as 720h, or 0 for ever", mf.Retention))
		}
		a.keep = d
	}
	return a, nil
}

// runMigrate implements `lhcnp migrate [up|down|status] --db.dsn DSN`: the
// schema of migrations/ applied, undone or reported, under tern's advisory
// lock (collectors starting meanwhile wait).
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := parseMigrate(args, os.Environ, stderr)
	if err != nil {
		return err
	}
	mf, action, dsnFrom, keep, upSteps, cfg := a.mf, a.action, a.dsnFrom, a.keep, a.upSteps, a.conn
	ctx, cancel := context.WithTimeout(ctx, mf.Timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		// pgx lists every address tried on its own line (each twice,
		// with TLS and without, by default); a CLI error is one line.
		return fmt.Errorf("%s: connect to %s: %s", dsnFrom, describeDB(cfg), errline.String(err))
	}
	defer conn.Close(context.WithoutCancel(ctx))

	progress := migrations.WithProgress(func(seq int32, name, direction string) {
		fmt.Fprintf(stdout, "%s %s\n", direction, name)
	})
	switch action {
	case "up":
		up := migrations.Up
		if upSteps {
			st, err := migrations.GetStatus(ctx, conn)
			if err != nil {
				return err
			}
			to := min(st.Current+int32(mf.Steps), st.Latest)
			up = func(ctx context.Context, conn *pgx.Conn, opts ...migrations.Option) error {
				return migrations.To(ctx, conn, to, opts...)
			}
		}
		if err := up(ctx, conn, progress, migrations.WithPartitionManager(mf.Partitioning)); err != nil {
			return err
		}
		if mf.Retention != "" {
			if err := migrations.SetRetention(ctx, conn, keep); err != nil {
				return err
			}
			if err := migrations.Maintain(ctx, conn); err != nil {
				return err
			}
		}
	case "down":
		if err := migrations.Down(ctx, conn, mf.Steps, progress); err != nil {
			return err
		}
	}
	return printStatus(ctx, conn, stdout)
}

// describeDB names a database for messages, without its password.
func describeDB(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

func printStatus(ctx context.Context, conn *pgx.Conn, w io.Writer) error {
	st, err := migrations.GetStatus(ctx, conn)
	if err != nil {
		return err
	}
	pending := ""
	if st.Pending() {
		pending = fmt.Sprintf(" (%d pending)", st.Latest-st.Current)
	}
	fmt.Fprintf(w, "schema version %d of %d%s\n", st.Current, st.Latest, pending)
	for _, s := range st.Steps {
		mark := " "
		if s.Applied {
			mark = "x"
		}
		fmt.Fprintf(w, "  [%s] %s\n", mark, s.Name)
	}
	mode, err := migrations.GetMode(ctx, conn)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "mode: %s\n", mode)
	var manager, retention string
	var premake int
	var last *time.Time
	err = conn.QueryRow(ctx, `SELECT manager, premake_days, COALESCE(retention::text, 'forever'), last_maintained
		FROM lhcnp_partitioning WHERE parent = 'public.samples'`).Scan(&manager, &premake, &retention, &last)
	switch {
	case err == nil:
		maintained := "never"
		if last != nil {
			maintained = last.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "samples partitions: kept by %s, %d days ahead, retention %s, last maintained %s\n",
			manager, premake, retention, maintained)
	case errors.Is(err, pgx.ErrNoRows), isUndefinedTable(err):
		return nil
	default:
		return err
	}
	if st.Current < horizonSchema {
		return nil
	}
	// What retention removed (migration 024): History serves from here on.
	var horizon *time.Time
	if err := conn.QueryRow(ctx, `SELECT horizon FROM lhcnp_partitioning WHERE parent = 'public.samples'`).Scan(&horizon); err != nil {
		return err
	}
	switch {
	case horizon == nil && st.Current < upgradedHorizonSchema:
		// Not "nothing removed": the passes before schema 24 recorded
		// no horizon, and 025 gives one to a database upgraded with data.
		fmt.Fprintln(w, "retention horizon: none yet (no retention pass has run since schema 24, and schema 25 is not applied; History serves every instant stored)")
	case horizon == nil:
		// 025 leaves NULL only where no series was ever stored; a pass
		// records its own.
		fmt.Fprintln(w, "retention horizon: none (no retention pass has recorded one; History serves every instant stored)")
	default:
		// A pass's horizon, or 025's oldest sample of an upgraded
		// database: nothing older is kept either way.
		fmt.Fprintf(w, "retention horizon: %s (nothing older is kept; History serves from it on)\n", horizon.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// horizonSchema is the schema version that records the retention horizon
// (024_retention_horizon_applied.sql).
const horizonSchema = 24

// upgradedHorizonSchema gives a horizon to a database upgraded with data
// and none recorded (025_retention_horizon_upgraded.sql).
const upgradedHorizonSchema = 25

func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}
