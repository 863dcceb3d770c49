// Package collector is the collector's runtime: it opens the database and
// the spill, runs one subscription loop per target (collector/stream)
// feeding the writer (collector/writer), keeps the set of targets in step
// with the configuration file and the targets table (LISTEN lhcnp_targets
// plus a periodic re-read), shares targets with other collectors through
// leases when asked (collector/lease), serves /metrics and /healthz, and
// drains on shutdown: loops stopped, queued batches stored (or spilled),
// leases released. A target changes collector make-before-break: the new
// owner streams on standby first, the old one stops once it is ready.
//
// Its files go by job: collector.go the type, New and Run; reconcile.go
// the targets to collect (file, targets table) and their loops; listen.go
// the LISTEN on the targets and handover channels; leases.go, standby.go
// and handover.go carry out what collector/placement decides about leases,
// standby streams and handovers (collector/lease holds the SQL); drain.go
// the shutdown.
//
// Migrations and partition maintenance are given as functions (the
// migrations package), so this package does not depend on the schema's
// source.
package collector

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/lease"
	"github.com/lhcnp/lhcnp/collector/placement"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/spill"
	"github.com/lhcnp/lhcnp/collector/stream"
	"github.com/lhcnp/lhcnp/collector/writer"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/internal/errline"
	"github.com/lhcnp/lhcnp/internal/pgdsn"
)

// DB is what the collector needs of the database package: applying the
// migrations and maintaining the sample partitions.
type DB struct {
	Migrate func(ctx context.Context, pool *pgxpool.Pool) error
	// Maintain runs one maintenance pass, with the database's retention
	// set to *retention first when it is not nil (db.retention set; 0
	// keeps everything), with the database's own when it is.
	Maintain func(ctx context.Context, pool *pgxpool.Pool, retention *time.Duration) error
	// Describe gives yang_type and unit of a schema path (nil: from the
	// generated schema).
	Describe rows.Describer
}

type options struct {
	log      *slog.Logger
	db       DB
	drain    time.Duration
	backoff  [2]time.Duration
	metrics  *collectormetrics.Metrics
	listener net.Listener
	observe  func(target string, r *gnmi.SubscribeResponse)
	gone     func(target string)
	// readLatestFault, when set, is called before each read of the
	// latest table (phase: latestSeed or latestPromote); an error fails
	// that read (tests).
	readLatestFault func(target, phase string) error
	// handedOff, when set, is called by a handover once the loop it
	// stopped has ended, before the lease is released (tests).
	handedOff func(target string)
	dialOpts  []grpc.DialOption
	// tableRead, when set, is called after each read of the targets
	// table (tests).
	tableRead func()
	health    func(ctx context.Context) []string
}

// Option configures New.
type Option func(*options)

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithDB sets the migration and maintenance functions.
func WithDB(db DB) Option { return func(o *options) { o.db = db } }

// WithDrainTimeout bounds the shutdown's wait for queued batches to be
// stored (default 10 s); what is left goes to the spill.
func WithDrainTimeout(d time.Duration) Option { return func(o *options) { o.drain = d } }

// WithTargetBackoff sets the first and longest back-off of the target loops.
func WithTargetBackoff(initial, max time.Duration) Option {
	return func(o *options) { o.backoff = [2]time.Duration{initial, max} }
}

// WithMetricsListener serves /metrics and /healthz on lis (instead of
// listening on metrics.listen).
func WithMetricsListener(lis net.Listener) Option { return func(o *options) { o.listener = lis } }

// WithObserver hands every response of every target's subscription to f
// (collector/northbound's store); see target.WithObserver.
func WithObserver(f func(target string, r *gnmi.SubscribeResponse)) Option {
	return func(o *options) { o.observe = f }
}

// WithHealth adds check's errors to /healthz: each is listed with the
// collector's, and any makes it answer 503. The lab's tuner, whose
// metrics are on the collector's endpoint, says so its health.
func WithHealth(check func(ctx context.Context) []string) Option {
	return func(o *options) { o.health = check }
}

// WithTargetGone calls f with the name of a target this collector stopped
// collecting (taken out of the file or the targets table, disabled, or
// handed to another collector by the leases), once its loop has ended: the
// northbound drops what it holds of it (northbound.Server.RemoveTarget).
func WithTargetGone(f func(target string)) Option { return func(o *options) { o.gone = f } }

// Collector is a running collector.
type Collector struct {
	cfg   config.File
	o     options
	pool  *pgxpool.Pool
	sp    *spill.Spill
	w     *writer.Writer
	m     *collectormetrics.Metrics
	sch   *schema.Schema
	lm    locker // nil without leases
	log   *slog.Logger
	addr  string
	lis   net.Listener
	wake  chan struct{}
	seeds map[string]map[int64]seed // from the spill at Open, by target

	mu      sync.Mutex
	running map[string]*running
	standby map[string]*running // targets whose lease another collector still holds
	convs   map[string]*rows.Converter
	table   map[string]config.Target // the targets table, last read
	// refused: the rows of the targets table refused at its last read, by
	// target (reconcile loop only).
	refused map[string]tableRow
	// pl decides about the leases held, the handovers and the
	// announcements heard (under mu).
	pl *placement.Placement
	// handoverWake: a handover message arrived, a standby stream synced or
	// dropped, or a handover ended.
	handoverWake chan struct{}
	// handoffs: the handovers in progress (placement.Step.HandOver), each
	// in a goroutine of its own (reconcile loop only; see startHandOver);
	// hctx is their context.
	handoffs map[string]*handoff
	hctx     context.Context
	// standbyBudget bounds the rows the standby loops hold together
	// (writer.queue_rows).
	standbyBudget *stream.StandbyBudget
	dbErr         error
	// skipVerifyWarned: the definition of each target with skip_verify
	// last warned of (under mu): warned again only when it changes.
	skipVerifyWarned map[string]config.Target
}

type seed struct {
	last rows.Sample // the series' last sample in the spill
	path string      // from the spill's series row, if it holds one
}

type running struct {
	t     config.Target
	epoch int64 // reconcile loop only
	loop  *stream.Loop
	conv  *rows.Converter // the loop's (a standby loop has its own)
	// announced: the standby stream last announced Ready, and when
	// (reconcile loop only).
	announced   placement.Stream
	announcedAt time.Time
	// ctx is the loop's: it ends when the loop is stopped (cancel).
	ctx    context.Context
	cancel context.CancelFunc
	// seeded is closed once the converter holds what the database and
	// the spill hold of the target; done when the loop has ended;
	// promoted (nil unless the loop was a standby being promoted) when
	// its promotion has ended.
	seeded, done, promoted chan struct{}
}

// stop stops the loop and waits until it (and its promotion) ended.
func (r *running) stop() {
	r.cancel()
	r.wait()
}

// wait waits until the loop (and its promotion) ended.
func (r *running) wait() {
	<-r.done
	if r.promoted != nil {
		<-r.promoted
	}
}

// Check is the check of the configuration New makes before it connects:
// the file's (config.File.Check) and db.dsn's form, which a command makes
// while it loads the configuration, where each error can be named at the
// file's line of its key, or by the variable or flag that set it.
func Check(cfg config.File) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	_, err := poolConfig(cfg.DB.DSN)
	return err
}

// poolConfig parses dsn (its passwords hidden in an error: pgdsn).
func poolConfig(dsn string) (*pgxpool.Config, error) {
	pcfg, err := pgxpool.ParseConfig(pgdsn.LowerScheme(dsn))
	if err != nil {
		return nil, fmt.Errorf("db.dsn: %s", pgdsn.ErrorString(err))
	}
	return pcfg, nil
}

// New checks the configuration (Check), connects to PostgreSQL (a one-line error
// naming db.dsn when it cannot), applies the migrations when db.migrate is
// on, and opens the spill. Run starts the work.
func New(ctx context.Context, cfg config.File, opts ...Option) (*Collector, error) {
	o := options{log: slog.New(slog.DiscardHandler), drain: 10 * time.Second,
		backoff: [2]time.Duration{500 * time.Millisecond, 30 * time.Second}}
	for _, opt := range opts {
		opt(&o)
	}
	if err := Check(cfg); err != nil {
		return nil, err
	}
	if cfg.ID == "" {
		cfg.ID = DefaultID(cfg.StateDir)
	}
	pcfg, err := poolConfig(cfg.DB.DSN)
	if err != nil {
		return nil, err
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = "lhcnp-collector " + cfg.ID
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("db.dsn: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("db.dsn: cannot reach PostgreSQL at %s:%d: %s", pcfg.ConnConfig.Host, pcfg.ConnConfig.Port, errline.String(err))
	}
	if cfg.DB.Migrate && o.db.Migrate != nil {
		if err := o.db.Migrate(ctx, pool); err != nil {
			pool.Close()
			return nil, fmt.Errorf("db.migrate: %w", err)
		}
	}
	sch, err := schema.New()
	if err != nil {
		pool.Close()
		return nil, err
	}
	c := &Collector{cfg: cfg, o: o, pool: pool, sch: sch, log: o.log, wake: make(chan struct{}, 1),
		seeds: map[string]map[int64]seed{}, running: map[string]*running{}, convs: map[string]*rows.Converter{},
		standby: map[string]*running{}, pl: placement.New(cfg.ID, cfg.Leases.TTL, cfg.Leases.Renew),
		handoverWake: make(chan struct{}, 1), handoffs: map[string]*handoff{},
		hctx: context.Background(), standbyBudget: stream.NewStandbyBudget(cfg.Writer.QueueRows)}
	c.m = o.metrics
	if c.m == nil {
		c.m = collectormetrics.New()
	}
	c.sp, err = spill.Open(filepath.Join(cfg.StateDir, "spill"),
		spill.WithMaxBytes(cfg.Writer.SpillBytes), spill.WithSegmentBytes(cfg.Writer.SegmentBytes),
		spill.WithFsync(cfg.Writer.Fsync == "batch"), spill.WithScan(c.seedFromSpill))
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("state_dir: %w", err)
	}
	if n := c.sp.Pending(); n > 0 {
		c.log.Info("spill holds batches from a previous run", "batches", n, "bytes", c.sp.Bytes())
	}
	c.w = writer.New(pool, c.sp, writer.WithQueueRows(cfg.Writer.QueueRows), writer.WithRetryMax(cfg.Writer.RetryMax),
		writer.WithFencing(cfg.Leases.Enabled), writer.WithLogger(o.log.With("component", "writer")), writer.WithMetrics(c.m),
		writer.WithRefusedFile(filepath.Join(cfg.StateDir, "dead_letters.jsonl")), writer.WithRefusedFileWarnBytes(cfg.Writer.RefusedFileWarnBytes))
	c.lis = o.listener
	if c.lis == nil && cfg.Metrics.Listen != "" {
		if c.lis, err = net.Listen("tcp", cfg.Metrics.Listen); err != nil {
			c.sp.Close()
			pool.Close()
			return nil, fmt.Errorf("metrics.listen: %w", err)
		}
	}
	if c.lis != nil {
		c.addr = c.lis.Addr().String()
	}
	if cfg.Leases.Enabled {
		c.lm = lease.New(pool, cfg.ID, c.addr, cfg.Leases.TTL)
		c.m.LeasesOn()
	}
	return c, nil
}

// DefaultID is the collector id when none is configured: the host name and
// a hash of the state directory, stable across restarts so the collector
// finds its own leases again.
func DefaultID(stateDir string) string {
	host, _ := os.Hostname()
	abs, _ := filepath.Abs(stateDir)
	return fmt.Sprintf("%s-%08x", host, uint32(rows.SeriesID(host, abs)))
}

// ID returns the collector's id.
func (c *Collector) ID() string { return c.cfg.ID }

// Metrics returns the collector's metrics.
func (c *Collector) Metrics() *collectormetrics.Metrics { return c.m }

// Pool returns the database pool.
func (c *Collector) Pool() *pgxpool.Pool { return c.pool }

// Run works until ctx ends, then drains. It returns the first fatal error
// (the metrics address cannot be opened).
func (c *Collector) Run(ctx context.Context) error {
	defer c.pool.Close()
	defer c.sp.Close()
	var wg sync.WaitGroup
	wctx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriter()
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		c.w.Run(wctx)
	}()

	if lis := c.lis; lis != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.m.Serve(ctx, lis, c.cfg.Metrics.Profile, c.health); err != nil {
				c.log.Error("metrics server", "err", err)
			}
		}()
	}
	// The listener outlives ctx: a draining collector hears when the
	// collectors taking its targets over are ready.
	lctx, stopListen := context.WithCancel(context.WithoutCancel(ctx))
	defer stopListen()
	var channels []string
	if c.cfg.DB.TargetsTable {
		channels = append(channels, targetsChannel)
	}
	if c.lm != nil {
		channels = append(channels, lease.HandoverChannel)
	}
	if len(channels) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.listen(lctx, channels)
		}()
	}
	if c.o.db.Maintain != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.maintain(ctx)
		}()
	}
	// Handovers in progress finish (each bounded by leases.ttl) even when
	// ctx ends: the drain waits for them.
	hctx, stopHandoffs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHandoffs()
	c.hctx = hctx
	c.reconcileLoop(ctx)
	c.drain(wdone, stopWriter, stopHandoffs)
	stopListen()
	wg.Wait()
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (c *Collector) maintain(ctx context.Context) {
	// db.retention unset: the database's own retention stands (docs/
	// collector.md, "Who sets the retention"). New checked it.
	var retention *time.Duration
	if keep, set, _ := c.cfg.DB.RetentionKeep(); set {
		retention = &keep
	}
	t := time.NewTicker(c.cfg.DB.MaintainInterval)
	defer t.Stop()
	for {
		if err := c.o.db.Maintain(ctx, c.pool, retention); err != nil && ctx.Err() == nil {
			c.log.Warn("partition maintenance", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// health answers /healthz: ok while the database takes writes; each
// target's state; the errors of targets not streaming.
func (c *Collector) health() collectormetrics.Health {
	h := collectormetrics.Health{Targets: c.m.TargetStates()}
	c.mu.Lock()
	for name, r := range c.running {
		if err := r.loop.LastError(); err != nil {
			h.Errors = append(h.Errors, fmt.Sprintf("target %s: %v", name, err))
		}
	}
	if c.dbErr != nil {
		h.Errors = append(h.Errors, c.dbErr.Error())
	}
	c.mu.Unlock()
	pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := c.pool.Ping(pctx)
	h.DBUp = err == nil
	if err != nil {
		h.Errors = append(h.Errors, "database: "+err.Error())
	}
	h.OK = h.DBUp
	if c.o.health != nil {
		hctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if errs := c.o.health(hctx); len(errs) > 0 {
			h.OK, h.Errors = false, append(h.Errors, errs...)
		}
	}
	return h
}

// TargetError returns the last error of a running target's loop.
func (c *Collector) TargetError(name string) (error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.running[name]
	if !ok {
		return nil, false
	}
	return r.loop.LastError(), true
}

// Running returns the names of the targets with a loop.
func (c *Collector) Running() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedKeys(c.running)
}

// Addr is the address /metrics is served on ("" when off).
func (c *Collector) Addr() string { return c.addr }

// Target returns the configuration of a target this collector runs (from
// the file or the targets table), to reach the switch (Set forwarding).
func (c *Collector) Target(name string) (config.Target, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.running[name]
	if !ok {
		return config.Target{}, false
	}
	return r.t, true
}
