package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/internal/cliconf"
)

// runCollector implements `lhcnp collector --config FILE`: every key of the
// file is also a flag (--writer.batch-rows) and an LHCNP_COLLECTOR_
// variable (LHCNP_COLLECTOR_WRITER_BATCH_ROWS); flags win over variables,
// variables over the file (docs/collector.md, examples/collector.yaml).
func runCollector(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("collector", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "collector configuration file (YAML)")
	verbose := fs.Bool("v", false, "log debug messages")
	cfg := config.Defaults()
	cc, err := cliconf.Register(fs, &cfg, cliconf.WithEnvPrefix("LHCNP_COLLECTOR_"))
	if err != nil {
		return err
	}
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lhcnp collector [--config FILE] [--KEY VALUE ...]")
		fmt.Fprintln(stderr, "Every key of the file is a flag and an LHCNP_COLLECTOR_ variable; targets are file or table only.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if err := cc.Load(*cfgPath); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	db, err := collectorDB()
	if err != nil {
		return err
	}
	var nb collectorNorthbound
	c, err := collector.New(ctx, cfg, append(nb.observer(cfg), collector.WithLogger(log), collector.WithDB(db))...)
	if err != nil {
		return err
	}
	stopNB, err := nb.start(ctx, cfg, c, log, stdout, stderr)
	if err != nil {
		return err
	}
	defer stopNB()
	fmt.Fprintf(stdout, "lhcnp collector %s: %d targets from the file, targets table %v, metrics on %q\n",
		c.ID(), len(cfg.Targets), cfg.DB.TargetsTable, c.Addr())
	return c.Run(ctx)
}
