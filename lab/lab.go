// Package lab runs the whole lhcnp system in one process, the embedded
// default of `lhcnp lab`: a PostgreSQL (a private cluster from the installed
// binaries in the state directory, or a given DSN), the switches of the lab
// topology on one engine with a gNMI target each (server/fabric), the
// collector subscribed to them, the tuner, and the web dashboard
// (lab/dashboard) on 127.0.0.1. Start brings the parts up in that order,
// failing early and cleanly (nothing started is left running) on a state
// directory or port already in use; Run keeps them until its context ends
// and stops them in reverse order.
//
// It wires existing packages together and holds no logic of theirs; it
// must not be imported by any of them. It does not print: the command
// prints what Addresses returns.
package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/internal/errline"
	"github.com/lhcnp/lhcnp/internal/pgserver"
	"github.com/lhcnp/lhcnp/internal/pidlock"
	"github.com/lhcnp/lhcnp/lab/dashboard"
	"github.com/lhcnp/lhcnp/migrations"
	"github.com/lhcnp/lhcnp/server/fabric"
	"github.com/lhcnp/lhcnp/tuner"
)

// The lab's fixed default addresses (docs/lab.md): the dashboard, the
// private PostgreSQL's port on 127.0.0.1 (beside a system cluster's 5432 and
// the 5433 of a second one), the collector's /metrics (the compose
// collector's port) and the collector's northbound gNMI (docs/collector.md's
// example, beside the switches' 9339-9341).
const (
	DefaultHTTPAddr       = "127.0.0.1:8080"
	DefaultPostgresPort   = 15432
	DefaultMetricsAddr    = "127.0.0.1:9273"
	DefaultNorthboundAddr = "127.0.0.1:9350"
)

// DefaultRetention is how much telemetry the lab keeps by default
// (docs/lab.md, "Disk", says what it costs).
const DefaultRetention = 30 * time.Minute

// DefaultSpeed is the lab's speed, simulated seconds per wall-clock second,
// in one process: the highest speed measured to keep up (its engine-lag
// within the machine's scheduling noise and not growing) on a two-core
// machine at a load of 5-8; 0.7 lagged by seconds at times and 1 fell
// behind for good (docs/lab.md, "Speed").
const DefaultSpeed = 0.4

// Config is one lab.
type Config struct {
	// StateDir holds the lab's lock, its PostgreSQL cluster (postgres/,
	// unless Postgres is set), the collector's spill (collector/) and
	// the switches' startup configurations (switches/NAME.json, unless
	// Fabric.StartupDir is set). A second start reuses it.
	StateDir string
	// Postgres, when set, is the database used instead of a private
	// cluster, parsed by the caller (pgxpool.ParseConfig: lhcnp lab's
	// parseDSN, where a string that does not parse is the configuration's
	// mistake) and opened with that parse: the check and the use cannot
	// disagree. Its ConnString is the DSN the collector and Addresses get.
	Postgres *pgxpool.Config
	// PostgresPort is the private cluster's port on 127.0.0.1 (0: the
	// port of the last start, kept in AddressesFile, or a free one).
	PostgresPort int
	// CitusWorkers, when above 0, makes the private cluster a Citus
	// cluster (citus/ in the state directory): a coordinator on
	// PostgresPort and this many workers on free ports, kept
	// (citus/ports.json). The collector's migrations distribute the
	// tables (docs/scaling.md). Needs Citus (scripts/deps.sh citus).
	CitusWorkers int
	// HTTPAddr is the dashboard's address (default DefaultHTTPAddr). Here
	// and in MetricsAddr and the switches' Listen, port 0 is the port of
	// the last start (AddressesFile), or a free one the first time.
	HTTPAddr string
	// MetricsAddr is the collector's /metrics and /healthz (default
	// 127.0.0.1:0); its /metrics has the tuner's metrics too.
	MetricsAddr string
	// Northbound is the collector's northbound gNMI (docs/collector.md,
	// "Northbound"): the fleet's latest values by target, History from the
	// database, Set forwarded. Its Listen is the lab's address (port 0 as
	// HTTPAddr's; empty: none) and its stream limits are used as they are;
	// the lab makes it insecure, as its switches are. NorthboundServer
	// serves it.
	Northbound config.Northbound
	// NorthboundServer serves Northbound (lhcnp collector's, in
	// cmd/lhcnp); needed when Northbound.Listen is set.
	NorthboundServer NorthboundServer
	// Profile serves Go's profiles of the lab process under
	// /debug/pprof/ on MetricsAddr (collector config metrics.profile).
	Profile bool
	// Fabric is the switches: every one runs in this process.
	Fabric fabric.Config
	// Traffic, if set, keeps the traffic running: its windows are added
	// to the fabric's engine (Fabric.Scenario must be Traffic.Scenario()).
	Traffic *Loop
	// CollectorDB gives the collector the schema (migrations), partition
	// maintenance and the YANG type of new series.
	CollectorDB collector.DB
	// Retention bounds the database: every RetentionPass the samples,
	// events and ledger rows older than this are deleted
	// (migrations.Trim, after the collector's maintenance pass), and the
	// private cluster reuses their space (pgserver.WithBoundedDisk). 0
	// keeps everything (the collector's db.retention 0).
	Retention time.Duration
	// RetentionPass is how often (default: a tenth of Retention, within
	// 30 s and 5 min).
	RetentionPass time.Duration
	// Subscriptions are the collector's subscriptions to every switch
	// (default config.DefaultSubscriptions).
	Subscriptions []config.Subscription
	// Tuner is the tuner's configuration; its DB is set by the lab. Tuner
	// switches that name no address get the fabric switch's. No switches:
	// no tuner.
	Tuner tuner.Config
	// DashboardRefresh is how often the page polls (default 1s).
	DashboardRefresh time.Duration
	// Logger receives the parts' logs (default: discarded).
	Logger *slog.Logger
	// Checked, if set, is called once Start holds the state directory
	// and has found every address the lab listens on free, before it
	// starts PostgreSQL or anything else: lhcnp lab says "starting" there,
	// so that a refusal (a lab on the directory, an address in use) is
	// said alone, with no start claimed before it.
	Checked func()
}

// NorthboundServer serves the collector's northbound gNMI; the lab holds
// no gNMI server of its own.
type NorthboundServer interface {
	// Options are the collector's options that feed the northbound.
	Options(nc config.Northbound) []collector.Option
	// Serve serves it on lis, History reading c's pool and Set reaching
	// c's targets, until stop.
	Serve(ctx context.Context, nc config.Northbound, c *collector.Collector, lis net.Listener) (stop func(), err error)
}

// Addresses is what a user of the lab needs. Start writes it to the state
// directory (AddressesFile).
type Addresses struct {
	Dashboard   string            `json:"dashboard"`            // http://host:port/
	PostgresDSN string            `json:"postgres_dsn"`         // the collector's database
	Switches    map[string]string `json:"switches"`             // switch name -> gNMI host:port
	Names       []string          `json:"names"`                // switch names in the fabric's order
	Metrics     string            `json:"metrics"`              // the collector's /metrics
	Northbound  string            `json:"northbound,omitempty"` // the collector's northbound gNMI host:port (none: off)
	StateDir    string            `json:"state_dir"`
	StartupDir  string            `json:"startup_dir"`      // the switches' startup configurations, NAME.json
	PrivatePG   bool              `json:"private_postgres"` // the lab runs its own PostgreSQL
	// TunerMetrics is where the tuner's metrics (lhcnp_tuner_) are
	// served: Metrics, the collector's endpoint ("": no tuner).
	TunerMetrics string `json:"tuner_metrics,omitempty"`
	// CitusWorkers is the private cluster's Citus workers (0: a single
	// PostgreSQL).
	CitusWorkers int `json:"citus_workers,omitempty"`
}

// Lab is a started lab.
type Lab struct {
	cfg       Config
	log       *slog.Logger
	lock      *pidlock.Lock
	httpLn    net.Listener
	metricsLn net.Listener
	nbLn      net.Listener
	nbStop    func()
	pg        *pgserver.Server
	cluster   *pgserver.Cluster
	dsn       string
	pool      *pgxpool.Pool
	fab       *fabric.Fabric
	coll      *collector.Collector
	tun       *tuner.Tuner
	tpool     *pgxpool.Pool
	pusher    *tuner.GNMIPusher
	cc        config.File // the collector's
	addrs     Addresses
	ran       bool
	closed    sync.Once
}

// StartupDir is the directory of the switches' startup configurations
// in the state directory stateDir, unless Config.Fabric.StartupDir names
// another.
func StartupDir(stateDir string) string { return filepath.Join(stateDir, "switches") }

// Start brings the lab up: lock the state directory, listen for the
// dashboard, try the addresses of PostgreSQL and the switches (then
// Config.Checked), start (or reach) PostgreSQL, build the switches (listening),
// the collector (migrating the schema) and the tuner. Nothing runs yet
// but PostgreSQL; Run starts the rest. On error everything started is
// stopped again.
func Start(ctx context.Context, cfg Config) (_ *Lab, err error) {
	if cfg.StateDir == "" {
		return nil, errors.New("lab: no state directory")
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = DefaultHTTPAddr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DashboardRefresh <= 0 {
		cfg.DashboardRefresh = time.Second
	}
	l := &Lab{cfg: cfg, log: cfg.Logger}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	stateDir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	// The messages name it as the user did, as the banner and lhcnp lab
	// status do: a relative --state-dir stays relative.
	named := cfg.StateDir
	if l.lock, err = lockStateDir(stateDir, named); err != nil {
		return nil, err
	}
	// Every listener first, before anything starts: an address in use
	// fails the start at once, naming the flag that chooses another.
	kept := keptAddresses(stateDir)
	if l.httpLn, err = listen(keep(cfg.HTTPAddr, kept.Dashboard), cfg.HTTPAddr, "dashboard", "--http", named); err != nil {
		return nil, err
	}
	if cfg.MetricsAddr == "" {
		cfg.MetricsAddr = "127.0.0.1:0"
	}
	if l.metricsLn, err = listen(keep(cfg.MetricsAddr, kept.Metrics), cfg.MetricsAddr, "collector metrics", "--metrics", named); err != nil {
		return nil, err
	}
	if cfg.Northbound.Listen != "" {
		if cfg.NorthboundServer == nil {
			return nil, errors.New("lab: a northbound address and no server for it")
		}
		if l.nbLn, err = listen(keep(cfg.Northbound.Listen, kept.Northbound), cfg.Northbound.Listen, "collector northbound", "--northbound", named); err != nil {
			return nil, err
		}
	}
	l.addrs = Addresses{Dashboard: "http://" + l.httpLn.Addr().String() + "/", StateDir: stateDir,
		Switches: map[string]string{}}
	if l.nbLn != nil {
		l.addrs.Northbound = l.nbLn.Addr().String()
	}

	pc := cfg.Postgres // the tuner's pool's; the private cluster's parsed below
	port := cfg.PostgresPort
	if pc == nil && port == 0 && kept.PrivatePG {
		port = portOf(kept.PostgresDSN)
	}
	if pc == nil && port != 0 {
		// PostgreSQL would only say so in its log: try the port first.
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		configured := addr
		if cfg.PostgresPort == 0 {
			configured = "127.0.0.1:0"
		}
		if err := probe(addr, configured, "postgresql", "--postgres-port", named); err != nil {
			return nil, err
		}
	}
	// The switches' addresses too, which fabric.New listens on only
	// after PostgreSQL has started.
	switchListen := make([]string, len(cfg.Fabric.Switches))
	for i, s := range cfg.Fabric.Switches {
		switchListen[i] = keep(s.Listen, kept.Switches[s.Name])
		if _, p, err := net.SplitHostPort(switchListen[i]); err == nil && p != "0" {
			if err := probe(switchListen[i], s.Listen, "switch "+s.Name+" gNMI", "--listen or the fabric file's listen key", named); err != nil {
				return nil, err
			}
		}
	}
	if cfg.Checked != nil {
		cfg.Checked()
	}

	if pc != nil {
		l.dsn = pc.ConnString()
	} else {
		opts := []pgserver.Option{pgserver.WithBoundedDisk()}
		if port != 0 && cfg.CitusWorkers == 0 {
			opts = append(opts, pgserver.WithPort(port))
		}
		if cfg.CitusWorkers > 0 {
			// Every node has its own data directory and port: the
			// coordinator takes the lab's PostgreSQL port.
			if l.cluster, err = pgserver.StartClusterIn(ctx, filepath.Join(stateDir, "citus"), port, cfg.CitusWorkers, pgserver.WithBoundedDisk()); err != nil {
				return nil, fmt.Errorf("postgresql (citus, --citus-workers %d): %w", cfg.CitusWorkers, err)
			}
			if err := l.cluster.EnsureDatabase(ctx, "lhcnp"); err != nil {
				return nil, fmt.Errorf("postgresql (citus): %w", err)
			}
			l.dsn = l.cluster.DSN("lhcnp")
		} else {
			if l.pg, err = pgserver.Start(ctx, append(opts, pgserver.WithDataDir(filepath.Join(stateDir, "postgres")))...); err != nil {
				return nil, fmt.Errorf("postgresql: %w", err)
			}
			if err := l.pg.CreateDatabase(ctx, "lhcnp", ""); err != nil {
				var pgErr *pgconn.PgError
				if !errors.As(err, &pgErr) || pgErr.Code != "42P04" { // duplicate_database: a second start
					return nil, fmt.Errorf("postgresql: %w", err)
				}
			}
			l.dsn = l.pg.DSN("lhcnp")
		}
		l.addrs.PrivatePG = true
		l.addrs.CitusWorkers = cfg.CitusWorkers
	}
	l.addrs.PostgresDSN = l.dsn

	if cfg.Fabric.StartupDir == "" {
		cfg.Fabric.StartupDir = StartupDir(stateDir)
	}
	l.addrs.StartupDir = cfg.Fabric.StartupDir
	fc := cfg.Fabric
	fc.Switches = append([]fabric.Switch(nil), cfg.Fabric.Switches...)
	for i := range fc.Switches {
		fc.Switches[i].Listen = switchListen[i]
	}
	if l.fab, err = fabric.New(ctx, fc); err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%w: choose other addresses with --listen (HOST:0: free ports, kept in %s) or the fabric file's listen keys",
				err, filepath.Join(named, AddressesFile))
		}
		return nil, err
	}
	if cfg.Traffic != nil {
		tlog := l.log.With("part", "traffic")
		cfg.Traffic.Install(l.fab.Network(), func(err error) { tlog.Error("window skipped", "err", err) })
	}
	for _, s := range l.fab.Switches() {
		l.addrs.Switches[s.Name] = s.Addr().String()
		l.addrs.Names = append(l.addrs.Names, s.Name)
	}

	if len(cfg.Tuner.Switches) > 0 {
		tc := cfg.Tuner
		tc.DB = l.dsn
		if tc.StateDir == tuner.DefaultConfig().StateDir {
			tc.StateDir = filepath.Join(stateDir, "tuner") // the lab's, as the collector's spill
		}
		tc.Switches = append([]tuner.SwitchConfig(nil), cfg.Tuner.Switches...)
		for i, s := range tc.Switches {
			if s.Address == "" {
				addr, ok := l.addrs.Switches[s.Name]
				if !ok {
					return nil, fmt.Errorf("tuner: switch %s is not in the lab", s.Name)
				}
				tc.Switches[i].Address, tc.Switches[i].Insecure = addr, true
			}
		}
		if err := tc.Validate(); err != nil {
			return nil, fmt.Errorf("tuner: %w", err)
		}
		if pc == nil { // the private cluster's DSN, the lab's own
			if pc, err = pgxpool.ParseConfig(l.dsn); err != nil {
				// pgx quotes the DSN, line breaks and all; the error is
				// one line, as the collector's of the same DSN is.
				return nil, fmt.Errorf("tuner: db: %w", errline.Of(err))
			}
		}
		if l.tpool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
			return nil, fmt.Errorf("tuner: db: %w", errline.Of(err))
		}
		var push tuner.Pusher
		if !tc.DryRun {
			l.pusher = tuner.NewGNMIPusher(tc.Switches)
			push = l.pusher
		}
		if l.tun, err = tuner.New(tc, tuner.NewPGSource(l.tpool, tuner.WithClockSkew(tc.ClockSkew)), push, tuner.NewPGRecorder(l.tpool),
			tuner.WithLogger(l.log.With("part", "tuner"))); err != nil {
			return nil, fmt.Errorf("tuner: %w", err)
		}
	}
	// The collector last: once built it holds a pool, a spill and a
	// listener that only its Run releases.
	cc := config.Defaults()
	cc.DB.DSN = l.dsn
	cc.DB.Migrate = true
	cc.DB.TargetsTable = true
	cc.StateDir = filepath.Join(stateDir, "collector")
	cc.ID = collector.DefaultID(cc.StateDir)
	cc.Metrics.Listen = l.metricsLn.Addr().String()
	cc.Metrics.Profile = cfg.Profile
	var copts []collector.Option
	if l.nbLn != nil {
		cc.Northbound = cfg.Northbound
		cc.Northbound.Listen, cc.Northbound.Insecure = l.nbLn.Addr().String(), true
		copts = cfg.NorthboundServer.Options(cc.Northbound)
	}
	db := collectorRetention(&cc.DB, cfg.CollectorDB, cfg.Retention, cfg.RetentionPass)
	if l.tun != nil {
		// The tuner's health on the collector's /healthz, as its metrics
		// on /metrics: a lab whose tuner cannot reach its database is
		// not healthy.
		copts = append(copts, collector.WithHealth(func(ctx context.Context) []string {
			var errs []string
			for _, e := range tuner.Health(ctx, l.tpool).Errors {
				errs = append(errs, "tuner: "+e)
			}
			return errs
		}))
	}
	subs := cfg.Subscriptions
	for _, name := range l.addrs.Names {
		cc.Targets = append(cc.Targets, config.Target{Name: name, Address: l.addrs.Switches[name], Insecure: true,
			Subscriptions: subs})
	}
	if l.coll, err = collector.New(ctx, cc, append(copts, collector.WithLogger(l.log.With("part", "collector")),
		collector.WithDB(db), collector.WithMetricsListener(l.metricsLn))...); err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	l.pool = l.coll.Pool()
	l.addrs.Metrics = "http://" + l.coll.Addr() + "/metrics"
	if l.tun != nil {
		// The tuner's metrics on the collector's endpoint, a port and a
		// scrape for the one process: its Go and process metrics are
		// the collector's already.
		if err := l.tun.Metrics().Register(l.coll.Metrics().Registry); err != nil {
			return nil, fmt.Errorf("tuner metrics: %w", err)
		}
		l.addrs.TunerMetrics = l.addrs.Metrics
	}
	l.cc = cc
	if err := writeAddresses(stateDir, l.addrs); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	return l, nil
}

// collectorRetention sets the lab collector's retention in cc and returns
// db with its passes trimming to keep: keep is enforced in the lab's
// private database, as a collector's db.retention set is, whole days at
// each pass and the rest by migrations.Trim; 0 keeps everything, not the
// database's own 30 days, which a collector with db.retention unset keeps.
func collectorRetention(cc *config.DB, db collector.DB, keep, pass time.Duration) collector.DB {
	cc.Retention = "0"
	if keep <= 0 || db.Maintain == nil {
		return db
	}
	cc.Retention = keep.String()
	cc.MaintainInterval = retentionPass(keep, pass)
	maintain := db.Maintain
	db.Maintain = func(ctx context.Context, pool *pgxpool.Pool, retention *time.Duration) error {
		if err := maintain(ctx, pool, retention); err != nil {
			return err
		}
		return migrations.Trim(ctx, pool, keep)
	}
	return db
}

// retentionPass is the period of the retention passes: pass, or a tenth of
// keep within [30 s, 5 min].
func retentionPass(keep, pass time.Duration) time.Duration {
	if pass > 0 {
		return pass
	}
	return min(max(keep/10, 30*time.Second), 5*time.Minute)
}

// Addresses returns where the lab's parts answer.
func (l *Lab) Addresses() Addresses { return l.addrs }

// Pool returns a pool on the lab's database.
func (l *Lab) Pool() *pgxpool.Pool { return l.pool }

// Run runs the switches, the collector, the tuner and the dashboard until
// ctx ends or one of them fails, then stops them (tuner and dashboard
// first, then the collector, which drains, then the switches) and
// PostgreSQL, and releases the state directory.
func (l *Lab) Run(ctx context.Context) error {
	defer l.Close()
	// The northbound before the collector runs (its observer feeds it);
	// it answers from the collector's values and pool, so it stops before
	// the collector does, with the dashboard.
	stopNB := func() {}
	if l.nbLn != nil {
		stop, err := l.cfg.NorthboundServer.Serve(ctx, l.cc.Northbound, l.coll, l.nbLn)
		if err != nil {
			return fmt.Errorf("collector northbound: %w", err)
		}
		l.nbLn, stopNB = nil, stop // Serve's: stop closes it
	}
	l.ran = true
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errs []error
	var mu sync.Mutex
	fail := func(part string, err error) {
		if err != nil && ctx.Err() == nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("%s: %w", part, err))
			mu.Unlock()
		}
		cancel()
	}
	// Three stages stopped in order: the consumers of the database and the
	// switches, then the collector, then the switches.
	fabCtx, stopFab := context.WithCancel(context.WithoutCancel(ctx))
	collCtx, stopColl := context.WithCancel(context.WithoutCancel(ctx))
	var fabDone, collDone, restDone sync.WaitGroup
	fabDone.Add(1)
	go func() {
		defer fabDone.Done()
		err := l.fab.Run(fabCtx)
		fail("switches", err)
	}()
	collDone.Add(1)
	go func() {
		defer collDone.Done()
		err := l.coll.Run(collCtx)
		fail("collector", err)
	}()
	if l.tun != nil {
		restDone.Add(1)
		go func() {
			defer restDone.Done()
			err := l.tun.Run(ctx)
			if errors.Is(err, context.Canceled) {
				err = nil
			}
			fail("tuner", err)
		}()
	}
	srv := &http.Server{
		Handler:           dashboard.New(l.pool, dashboard.WithRefresh(l.cfg.DashboardRefresh), dashboard.WithSpeed(l.cfg.Fabric.Speed), dashboard.WithLogger(l.log.With("part", "dashboard"))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	restDone.Add(1)
	go func() {
		defer restDone.Done()
		err := srv.Serve(l.httpLn)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		fail("dashboard", err)
	}()
	<-ctx.Done()
	shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	_ = srv.Shutdown(shutdown)
	stopNB()
	restDone.Wait()
	stopColl()
	collDone.Wait()
	stopFab()
	fabDone.Wait()
	return errors.Join(errs...)
}

// Close stops whatever Start started and Run did not stop: the tuner's
// connections, the collector's pool, the switches' listeners, PostgreSQL,
// the dashboard's listener, the lock. Safe to call more than once.
func (l *Lab) Close() {
	l.closed.Do(func() {
		if l.coll != nil && !l.ran {
			// Run with an ended context: it drains at once and releases
			// the collector's pool, spill and listener.
			ended, cancel := context.WithCancel(context.Background())
			cancel()
			_ = l.coll.Run(ended)
		}
		if l.pusher != nil {
			l.pusher.Close()
		}
		if l.tpool != nil {
			l.tpool.Close()
		}
		if l.fab != nil {
			l.fab.Close()
		}
		if l.pg != nil {
			if err := l.pg.Close(); err != nil {
				l.log.Error("stopping postgresql", "err", err)
			}
		}
		if l.cluster != nil {
			if err := l.cluster.Close(); err != nil {
				l.log.Error("stopping the citus cluster", "err", err)
			}
		}
		if l.httpLn != nil {
			l.httpLn.Close()
		}
		if l.metricsLn != nil {
			l.metricsLn.Close() // the collector's, unless it was not built
		}
		if l.nbLn != nil {
			l.nbLn.Close() // unless Run served it
		}
		l.lock.Release()
	})
}
