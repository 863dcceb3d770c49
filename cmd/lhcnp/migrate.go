package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lhcnp/lhcnp/migrations"
)

// runMigrate implements `lhcnp migrate [up|down|status] --db DSN`: the
// schema of migrations/ applied, undone or reported, under tern's advisory
// lock (collectors starting meanwhile wait).
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", os.Getenv("LHCNP_DB"), "PostgreSQL connection string (URL or key=value); default $LHCNP_DB")
	steps := fs.Int("steps", 1, "down: how many migrations to undo")
	partitioning := fs.String("partitioning", "auto", "up: who keeps the daily partitions of samples: auto (pg_partman when the server has it), pg_partman or lhcnp (plain SQL)")
	retention := fs.String("retention", "", "up: keep samples, events and ledger rows this long (a Go duration such as 720h, or 0 for ever); default: unchanged (30 days on a new schema)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long (connecting, waiting for the lock, migrating)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lhcnp migrate [up|down|status] --db DSN [flags]")
		fs.PrintDefaults()
	}
	action := "up"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		action, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	switch action {
	case "up", "down", "status":
	default:
		fs.Usage()
		return usageError{fmt.Sprintf("unknown action %q: want up, down or status", action)}
	}
	if *db == "" {
		fs.Usage()
		return usageError{"--db: a connection string is required (or set LHCNP_DB)"}
	}
	if *steps < 1 {
		return usageError{fmt.Sprintf("--steps %d: want 1 or more", *steps)}
	}
	var keep time.Duration
	if *retention != "" {
		d, err := time.ParseDuration(*retention)
		if err != nil || d < 0 {
			return usageError{fmt.Sprintf("--retention %q: want a duration such as 720h, or 0 for ever", *retention)}
		}
		keep = d
	}
	cfg, err := pgx.ParseConfig(*db)
	if err != nil {
		return usageError{fmt.Sprintf("--db: %v", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		// pgx lists every address tried on its own line; a CLI error is one.
		return fmt.Errorf("--db: connect to %s: %s", describeDB(cfg), strings.Join(strings.Fields(err.Error()), " "))
	}
	defer conn.Close(context.WithoutCancel(ctx))

	progress := migrations.WithProgress(func(seq int32, name, direction string) {
		fmt.Fprintf(stdout, "%s %s\n", direction, name)
	})
	switch action {
	case "up":
		if err := migrations.Up(ctx, conn, progress, migrations.WithPartitionManager(*partitioning)); err != nil {
			return err
		}
		if *retention != "" {
			if err := migrations.SetRetention(ctx, conn, keep); err != nil {
				return err
			}
			if err := migrations.Maintain(ctx, conn); err != nil {
				return err
			}
		}
	case "down":
		if err := migrations.Down(ctx, conn, *steps, progress); err != nil {
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
	default:
		return err
	}
	return nil
}

func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}
