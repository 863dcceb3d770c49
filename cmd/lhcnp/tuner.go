package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/cliconf"
	"github.com/lhcnp/lhcnp/tuner"
)

// runTuner implements `lhcnp tuner --config FILE [--dry-run] [--db DSN]`:
// every period, read the queues' telemetry from the collector's database,
// decide, push with gNMI Set + Commit Confirmed, record in tuner_actions
// (docs/tuner.md). Every scalar key of the file is also a flag
// (--policy.alpha-max) and an LHCNP_TUNER_ variable
// (LHCNP_TUNER_POLICY_ALPHA_MAX), through internal/cliconf: flags win over
// variables, variables over the file. It returns when ctx ends.
func runTuner(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tuner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "tuner configuration file (YAML, examples/tuner.yaml); required")
	once := fs.Bool("once", false, "run one period and exit (scripts, tests)")
	verbose := fs.Bool("verbose", false, "log every hold of the policy too (debug level)")
	cfg := tuner.DefaultConfig()
	cc, err := cliconf.Register(fs, &cfg, cliconf.WithEnvPrefix("LHCNP_TUNER_"))
	if err != nil {
		return err
	}
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lhcnp tuner --config FILE [--dry-run] [--db DSN] [--once] [--verbose] [--KEY VALUE ...]")
		fmt.Fprintln(stderr, "Every key of the file is a flag and an LHCNP_TUNER_ variable; switches are file only.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *cfgPath == "" {
		fs.Usage()
		return usageError{"--config FILE is required"}
	}
	if err := cc.Load(*cfgPath); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%s: %w", *cfgPath, err)
	}
	pool, err := pgxpool.New(ctx, cfg.DB)
	if err != nil {
		return fmt.Errorf("db: %w", err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("db: %w", err)
	}
	var push tuner.Pusher
	if !cfg.DryRun {
		p := tuner.NewGNMIPusher(cfg.Switches)
		defer p.Close()
		push = p
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	t, err := tuner.New(cfg, tuner.NewPGSource(pool), push, tuner.NewPGRecorder(pool), tuner.WithLogger(log))
	if err != nil {
		return err
	}
	mode := "pushing with Commit Confirmed"
	if cfg.DryRun {
		mode = "dry run: recording, not pushing"
	}
	fmt.Fprintf(stdout, "lhcnp tuner: %d switches, every %v, %s\n", len(cfg.Switches), cfg.Period, mode)
	if *once {
		return t.Cycle(ctx, time.Now())
	}
	return t.Run(ctx)
}
