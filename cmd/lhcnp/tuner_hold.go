package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/errline"
	"github.com/lhcnp/lhcnp/tuner"
)

// tunerHoldArgs is lhcnp tuner hold's and release's parsed command line.
type tunerHoldArgs struct {
	action  string // hold or release
	cfg     tuner.Config
	pool    *pgxpool.Config // cfg.DB parsed (parseDSN)
	dbFrom  string          // where cfg.DB came from (--db, LHCNP_TUNER_DB, FILE: db), for messages
	target  string
	iface   string
	queue   int
	holdFor time.Duration
	why     string
}

// parseTunerHold parses `lhcnp tuner hold|release`: the tuner's
// configuration (for db and the switches' names: --config FILE, --db, the
// LHCNP_TUNER_ variables) and the queue.
func parseTunerHold(action string, args []string, environ func() []string, stderr io.Writer) (*tunerHoldArgs, error) {
	a := &tunerHoldArgs{action: action, cfg: tuner.DefaultConfig()}
	usage := "usage: lhcnp tuner hold (--config FILE | --db DSN) --target NAME --interface NAME --queue N [--for DURATION] [--why TEXT]"
	if action == "release" {
		usage = "usage: lhcnp tuner release (--config FILE | --db DSN) --target NAME --interface NAME --queue N [--why TEXT]"
	}
	// -h lists the flags the command reads, not the tuner's every key.
	shown := []string{"config", "db", "target", "interface", "queue", "why"}
	if action == "hold" {
		shown = append(shown, "for", "operator-hold")
	}
	c, err := newCLI(cliSpec{name: "tuner " + action, prefix: "LHCNP_TUNER_", configHelp: "the tuner's configuration file (its db, and its switches to check --target against)",
		usage: []string{usage, "Records the operator's " + action + " in tuner_actions (outcome operator); the running tuner reads it every period (docs/tuner.md, \"The operator\")."},
		shown: shown},
		&a.cfg, environ, stderr)
	if err != nil {
		return nil, err
	}
	c.fs.StringVar(&a.target, "target", "", "the switch (its name in the tuner's switches)")
	c.fs.StringVar(&a.iface, "interface", "", "the queue's interface")
	c.fs.IntVar(&a.queue, "queue", -1, "the queue's id (0-15)")
	c.fs.Lookup("queue").DefValue = "0" // -1 is "not given": a required flag, no default to print
	c.fs.StringVar(&a.why, "why", "", "the operator's reason, kept in the row")
	if action == "hold" {
		c.fs.DurationVar(&a.holdFor, "for", 0, "how long the tuner leaves the queue alone (default: the configuration's operator_hold)")
	}
	err = c.parse(args, func() error {
		var missing []string
		for _, m := range []struct {
			flag  string
			unset bool
		}{{"--target", a.target == ""}, {"--interface", a.iface == ""}, {"--queue", a.queue == -1 /* the flag's default */}} {
			if m.unset {
				missing = append(missing, m.flag)
			}
		}
		switch {
		case len(missing) > 0:
			return c.missing(missing...)
		case a.queue < 0 || a.queue > tuner.MaxQueueID:
			return usageError{fmt.Sprintf("--queue: %d: want a queue id 0-%d", a.queue, tuner.MaxQueueID)}
		case a.holdFor < 0 || a.holdFor == 0 && givenFlags(c.fs)["for"]:
			// 0 is the flag's "not given" (the configuration's
			// operator_hold): --for 0 was taken as that, a hold of
			// 15 min where the operator asked for none.
			return usageError{fmt.Sprintf("--for: %v: want a positive duration", a.holdFor)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if a.cfg.DB == "" {
		return nil, usageError{"db: missing: give --config FILE (the tuner's) or --db DSN (the lab prints its postgresql)"}
	}
	if a.pool, err = parseDSN("db", a.cfg.DB); err != nil {
		return nil, c.cc.Locate(err)
	}
	a.dbFrom = c.from("db")
	if len(a.cfg.Switches) > 0 && !slices.ContainsFunc(a.cfg.Switches, func(s tuner.SwitchConfig) bool { return s.Name == a.target }) {
		var names []string
		for _, s := range a.cfg.Switches {
			names = append(names, s.Name)
		}
		// A mistake of the command line against its configuration file:
		// a usage error (exit status 2), as --queue's range is.
		return nil, usageError{fmt.Sprintf("--target: %q: not a switch of %s (switches: %v)", a.target, c.config, names)}
	}
	if a.holdFor == 0 {
		a.holdFor = a.cfg.OperatorHold
	}
	return a, nil
}

// runTunerHold implements `lhcnp tuner hold` and `lhcnp tuner release`:
// one row of tuner_actions (outcome operator) that holds the queue's tuning
// until then, or releases it now, whatever held it.
func runTunerHold(ctx context.Context, action string, args []string, stdout, stderr io.Writer) error {
	a, err := parseTunerHold(action, args, os.Environ, stderr)
	if err != nil {
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, a.pool)
	if err != nil {
		return fmt.Errorf("%s: %w", a.dbFrom, err)
	}
	defer pool.Close()
	// As migrate says it: where the DSN came from, then the database
	// (its password never shown); pgx's attempts, a line each, in one.
	db := describeDB(a.pool.ConnConfig)
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("%s: connect to %s: %w", a.dbFrom, db, errline.Of(err))
	}
	var known bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queue_latest WHERE target = $1 AND interface = $2 AND queue = $3)`,
		a.target, a.iface, a.queue).Scan(&known); err != nil {
		return fmt.Errorf("%s: %s: %w", a.dbFrom, db, errline.Of(err))
	}
	if !known {
		fmt.Fprintf(stderr, "lhcnp tuner %s: no telemetry of %s %s queue %d in queue_latest (a typo?); recorded all the same\n",
			action, a.target, a.iface, a.queue)
	}
	rec := tuner.NewPGRecorder(pool)
	q := tuner.QueueID{Interface: a.iface, Queue: uint8(a.queue)}
	// To the microsecond the database keeps: the same hold asked again
	// is known by its length (PGRecorder.Hold).
	now := time.Now().Truncate(time.Microsecond)
	queue := fmt.Sprintf("%s %s queue %d", a.target, a.iface, a.queue)
	if action == "release" {
		row, recorded, err := rec.Release(ctx, a.target, q, now, a.why)
		switch {
		case err != nil:
			return err
		case recorded:
			fmt.Fprintf(stdout, "lhcnp tuner release: %s: the tuner may tune it again (tuner_actions %d)\n", queue, row.ID)
		default:
			fmt.Fprintf(stdout, "lhcnp tuner release: %s: released already at %s (tuner_actions %d: %s); nothing recorded\n", queue,
				row.At.UTC().Format(time.RFC3339), row.ID, row.Reason)
		}
		return nil
	}
	row, recorded, err := rec.Hold(ctx, a.target, q, now, now.Add(a.holdFor), a.why)
	switch {
	case err != nil:
		return err
	case recorded:
		fmt.Fprintf(stdout, "lhcnp tuner hold: %s: held until %s (tuner_actions %d)\n", queue, row.HoldUntil.UTC().Format(time.RFC3339), row.ID)
	default:
		fmt.Fprintf(stdout, "lhcnp tuner hold: %s: already held until %s by the same hold (tuner_actions %d, recorded at %s); nothing recorded (another --for or --why is a new hold)\n",
			queue, row.HoldUntil.UTC().Format(time.RFC3339), row.ID, row.At.UTC().Format(time.RFC3339))
	}
	return nil
}
