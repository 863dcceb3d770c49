package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"gopkg.in/yaml.v3"

	"github.com/lhcnp/lhcnp/tuner"
)

// loadTunerFile reads the tuner's YAML onto the defaults, strictly: an
// unknown key is an error naming the file and line.
func loadTunerFile(path string) (tuner.Config, error) {
	cfg := tuner.DefaultConfig()
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && err != io.EOF {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// runTuner implements `lhcnp tuner --config FILE [--dry-run] [--db DSN]`:
// every period, read the queues' telemetry from the collector's database,
// decide, push with gNMI Set + Commit Confirmed, record in tuner_actions
// (docs/tuner.md). It returns when ctx ends.
func runTuner(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tuner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "tuner configuration file (YAML, examples/tuner.yaml); required")
	dryRun := fs.Bool("dry-run", false, "decide and record in tuner_actions without pushing (overrides dry_run)")
	db := fs.String("db", "", "PostgreSQL connection string (overrides db; also LHCNP_TUNER_DB)")
	once := fs.Bool("once", false, "run one period and exit (scripts, tests)")
	verbose := fs.Bool("verbose", false, "log every hold of the policy too (debug level)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lhcnp tuner --config FILE [--dry-run] [--db DSN] [--once] [--verbose]")
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
	cfg, err := loadTunerFile(*cfgPath)
	if err != nil {
		return err
	}
	if v := os.Getenv("LHCNP_TUNER_DB"); v != "" {
		cfg.DB = v
	}
	if *db != "" {
		cfg.DB = *db
	}
	if *dryRun {
		cfg.DryRun = true
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
