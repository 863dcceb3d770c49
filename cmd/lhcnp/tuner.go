package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/errline"
	"github.com/lhcnp/lhcnp/tuner"
	"github.com/lhcnp/lhcnp/tuner/tunermetrics"
)

// tunerArgs is lhcnp tuner's parsed and validated command line.
type tunerArgs struct {
	cfg     tuner.Config
	pool    *pgxpool.Config // cfg.DB parsed (parseDSN)
	dbFrom  string          // where cfg.DB came from (--db, LHCNP_TUNER_DB, FILE: db), for messages
	config  string
	once    bool
	verbose bool
}

// parseTuner parses lhcnp tuner's arguments: every scalar key of the file
// is also a flag (--policy.alpha-max) and an LHCNP_TUNER_ variable
// (LHCNP_TUNER_POLICY_ALPHA_MAX) of environ, through internal/cliconf:
// flags win over variables, variables over the file. The result is
// validated.
func parseTuner(args []string, environ func() []string, stderr io.Writer) (*tunerArgs, error) {
	a := &tunerArgs{cfg: tuner.DefaultConfig()}
	c, err := newCLI(cliSpec{name: "tuner", prefix: "LHCNP_TUNER_", configHelp: "tuner configuration file (YAML, examples/tuner.yaml); required",
		usage: []string{"usage: lhcnp tuner --config FILE [--dry-run] [--db DSN] [--once] [--verbose] [--KEY VALUE ...]",
			"Every key of the file is a flag and an LHCNP_TUNER_ variable; switches are file only.",
			"lhcnp tuner hold|release (--config FILE | --db DSN) --target NAME --interface NAME --queue N: an operator's hold of one queue (docs/tuner.md)."}},
		&a.cfg, environ, stderr)
	if err != nil {
		return nil, err
	}
	c.fs.BoolVar(&a.once, "once", false, "run one period and exit (scripts, tests)")
	c.fs.BoolVar(&a.verbose, "verbose", false, "log every hold of the policy too (debug level)")
	err = c.parse(args, func() error {
		if c.config == "" {
			return c.missing("--config FILE")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.config = c.config
	// db is parsed here, not by the pool at start (a failure then, exit
	// status 1): a DSN that does not parse is the configuration's mistake.
	var dsnErr error
	if a.cfg.DB != "" {
		a.pool, dsnErr = parseDSN("db", a.cfg.DB)
	}
	if err := errors.Join(a.cfg.Validate(), dsnErr); err != nil {
		// Each problem with the file's line of its key, or the variable
		// or flag that set it.
		return nil, c.cc.Locate(err)
	}
	a.dbFrom = c.from("db")
	return a, nil
}

// runTuner implements `lhcnp tuner --config FILE [--dry-run] [--db DSN]`:
// every period, read the queues' telemetry from the collector's database,
// decide, push with gNMI Set + Commit Confirmed, record in tuner_actions
// (docs/tuner.md). It returns when ctx ends. `lhcnp tuner hold` and
// `lhcnp tuner release` are runTunerHold.
func runTuner(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "hold" || args[0] == "release") {
		return runTunerHold(ctx, args[0], args[1:], stdout, stderr)
	}
	a, err := parseTuner(args, os.Environ, stderr)
	if err != nil {
		return err
	}
	warnGRPCBinaryLog(os.Getenv, stderr, "lhcnp tuner")
	cfg := a.cfg
	warnSkipVerify(stderr, cfg.Switches)
	pool, err := pgxpool.NewWithConfig(ctx, a.pool)
	if err != nil {
		return fmt.Errorf("%s: %w", a.dbFrom, err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		// As migrate and tuner hold say it; pgx's attempts, a line each.
		return fmt.Errorf("%s: connect to %s: %w", a.dbFrom, describeDB(a.pool.ConnConfig), errline.Of(err))
	}
	var push tuner.Pusher
	if !cfg.DryRun {
		p := tuner.NewGNMIPusher(cfg.Switches)
		defer p.Close()
		push = p
	}
	log := textLog(stderr, a.verbose)
	m := tunermetrics.New()
	t, err := tuner.New(cfg, tuner.NewPGSource(pool, tuner.WithClockSkew(cfg.ClockSkew)), push, tuner.NewPGRecorder(pool),
		tuner.WithLogger(log), tuner.WithMetrics(m))
	if err != nil {
		return err
	}
	var lis net.Listener
	if cfg.Metrics.Listen != "" {
		if lis, err = net.Listen("tcp", cfg.Metrics.Listen); err != nil {
			return fmt.Errorf("metrics.listen: %w", err)
		}
	}
	mode := "pushing with Commit Confirmed"
	if cfg.DryRun {
		mode = "dry run: recording, not pushing"
	}
	every := fmt.Sprintf("every %v", cfg.Period)
	if a.once {
		every = "one period"
	}
	fmt.Fprintln(stdout, tunerBanner(len(cfg.Switches), every, mode, lis))
	if lis != nil {
		// Served until the loop has released its commits: the last
		// outcomes are counted on a /metrics still up.
		sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Serve(sctx, lis, func() tunermetrics.Health { return tunerHealth(pool) }); err != nil {
				log.Error("metrics server", "err", err)
			}
		}()
		defer wg.Wait()
		defer stop()
	}
	if a.once {
		err := t.Cycle(ctx, time.Now())
		return errors.Join(err, t.Abandon(ctx, time.Now()))
	}
	return t.Run(ctx)
}

// warnSkipVerify writes a warning on stderr for each switch whose
// certificate is not verified (skip_verify, the user's choice for labs):
// whoever answers at its address is sent the password and the Sets, and
// its answers are believed.
func warnSkipVerify(stderr io.Writer, switches []tuner.SwitchConfig) {
	for i, s := range switches {
		if s.SkipVerify && !s.Insecure {
			fmt.Fprintf(stderr, "lhcnp tuner: warning: switches[%d].skip_verify (%s): the certificate of %s is not verified: "+
				"whoever answers there is sent the tuner's username, password and Sets; give ca_file\n", i, s.Name, s.Address)
		}
	}
}

// tunerBanner is the tuner's first line on stdout; it names its /metrics
// as the collector's banner does, or says they are off (metrics.listen "").
func tunerBanner(switches int, every, mode string, lis net.Listener) string {
	metrics := "metrics off"
	if lis != nil {
		metrics = "metrics on " + metricsURL(lis.Addr().String())
	}
	return fmt.Sprintf("lhcnp tuner: %d switch(es), %s, %s, %s", switches, every, mode, metrics)
}

// tunerHealth answers /healthz (tuner.Health), within 2 s.
func tunerHealth(pool *pgxpool.Pool) tunermetrics.Health {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return tuner.Health(ctx, pool)
}
