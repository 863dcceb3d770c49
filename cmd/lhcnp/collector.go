package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/config"
)

// collectorArgs is lhcnp collector's parsed command line.
type collectorArgs struct {
	cfg     config.File
	config  string // the file, "" for none
	verbose bool
	nbAuth  gnmiAuth // the northbound's users and TLS, with northbound.listen
}

// parseCollector parses lhcnp collector's arguments: every key of the file
// is also a flag (--writer.batch-rows) and an LHCNP_COLLECTOR_ variable
// (LHCNP_COLLECTOR_WRITER_BATCH_ROWS) of environ; flags win over
// variables, variables over the file (docs/collector.md,
// examples/collector.yaml).
func parseCollector(args []string, environ func() []string, stderr io.Writer) (*collectorArgs, error) {
	a := &collectorArgs{cfg: config.Defaults()}
	c, err := newCLI(cliSpec{name: "collector", prefix: "LHCNP_COLLECTOR_", configHelp: "collector configuration file (YAML)",
		usage: []string{"usage: lhcnp collector [--config FILE] [--KEY VALUE ...]",
			"Every key of the file is a flag and an LHCNP_COLLECTOR_ variable; targets are file or table only."}},
		&a.cfg, environ, stderr)
	if err != nil {
		return nil, err
	}
	c.fs.BoolVar(&a.verbose, "v", false, "log debug messages")
	if err := c.parse(args, nil); err != nil {
		return nil, err
	}
	a.config = c.config
	// The check collector.New makes, here where each problem can name
	// the file's line of its key, or the variable or flag that set it.
	if err := collector.Check(a.cfg); err != nil {
		return nil, c.cc.Locate(err)
	}
	// Its two listeners apart, before the database is reached: the
	// northbound's net.Listen said "address already in use" once the
	// collector had connected, migrated and taken the metrics' port.
	if nb := a.cfg.Northbound.Listen; nb != "" && a.cfg.Metrics.Listen != "" {
		if err := listenersApart("the collector's", []listener{{a.cfg.Metrics.Listen, namedKey(c.cc, c.config, "metrics.listen")},
			{nb, namedKey(c.cc, c.config, "northbound.listen")}}); err != nil {
			return nil, err
		}
	}
	// The northbound's files, before the database is reached.
	if nc := a.cfg.Northbound; nc.Listen != "" {
		if a.nbAuth, err = loadGNMIAuth("northbound.", nc.Users, nc.Insecure, nc.TLSCert, nc.TLSKey, nc.ClientCA); err != nil {
			return nil, c.cc.Locate(err)
		}
	}
	return a, nil
}

// runCollector implements `lhcnp collector --config FILE`.
func runCollector(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := parseCollector(args, os.Environ, stderr)
	if err != nil {
		return err
	}
	warnGRPCBinaryLog(os.Getenv, stderr, "lhcnp collector")
	cfg := a.cfg
	log := textLog(stderr, a.verbose)
	db, err := collectorDB()
	if err != nil {
		return err
	}
	var nb collectorNorthbound
	c, err := collector.New(ctx, cfg, append(nb.observer(cfg.Northbound), collector.WithLogger(log), collector.WithDB(db))...)
	if err != nil {
		return err
	}
	stopNB, err := nb.start(ctx, cfg, a.nbAuth, c, log, stdout, stderr)
	if err != nil {
		return err
	}
	defer stopNB()
	fmt.Fprintln(stdout, collectorBanner(c.ID(), len(cfg.Targets), cfg.DB.TargetsTable, c.Addr()))
	return c.Run(ctx)
}

// collectorBanner is the collector's first line on stdout. It names its
// /metrics as lhcnp switch's banner does (metricsURL), or says they are
// off (metrics.listen ""), where it quoted the bare address ("").
func collectorBanner(id string, fileTargets int, targetsTable bool, metricsAddr string) string {
	metrics := "metrics off"
	if metricsAddr != "" {
		metrics = "metrics on " + metricsURL(metricsAddr)
	}
	return fmt.Sprintf("lhcnp collector %s: %d targets from the file, targets table %v, %s", id, fileTargets, targetsTable, metrics)
}
