// Package collector is the collector's runtime: it opens the database and
// the spill, runs one subscription loop per target (collector/target)
// feeding the writer (collector/writer), keeps the set of targets in step
// with the configuration file and the targets table (LISTEN lhcnp_targets
// plus a periodic re-read), shares targets with other collectors through
// leases when asked (collector/lease), serves /metrics and /healthz, and
// drains on shutdown: loops stopped, queued batches stored (or spilled),
// leases released. A target changes collector make-before-break: the new
// owner streams on standby first, the old one stops once it is ready.
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
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"

	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/lease"
	"github.com/lhcnp/lhcnp/collector/metrics"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/spill"
	"github.com/lhcnp/lhcnp/collector/target"
	"github.com/lhcnp/lhcnp/collector/writer"
	"github.com/lhcnp/lhcnp/server/schema"
	"github.com/lhcnp/lhcnp/server/store"
)

// DB is what the collector needs of the database package: applying the
// migrations and maintaining the sample partitions.
type DB struct {
	Migrate  func(ctx context.Context, pool *pgxpool.Pool) error
	Maintain func(ctx context.Context, pool *pgxpool.Pool, retention time.Duration) error
	// Describe gives yang_type and unit of a schema path (nil: from the
	// generated schema).
	Describe rows.Describer
}

type options struct {
	log      *slog.Logger
	db       DB
	drain    time.Duration
	backoff  [2]time.Duration
	metrics  *metrics.Metrics
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
	m     *metrics.Metrics
	sch   *schema.Schema
	lm    *lease.Manager
	log   *slog.Logger
	addr  string
	lis   net.Listener
	wake  chan struct{}
	seeds map[string]map[int64]seed // from the spill at Open, by target

	mu      sync.Mutex
	running map[string]*running
	standby map[string]*running // targets whose lease another collector still holds
	ready   map[string]ready    // target → the collector ready to take it (HandoverChannel)
	convs   map[string]*rows.Converter
	table   map[string]config.Target // the targets table, last read
	tableOK bool
	held    map[string]int64 // leases held: target → epoch (reconcile loop only)
	// handing: since when a held target should move to another collector
	// (reconcile loop only).
	handing map[string]time.Time
	// handoverWake: a handover message arrived, a standby stream synced or
	// dropped, or a handover ended.
	handoverWake chan struct{}
	// handoffs: the handovers in progress, each in a goroutine of its own
	// (reconcile loop only; see startHandOver); hctx is their context.
	handoffs map[string]*handoff
	hctx     context.Context
	// standbyBudget bounds the rows the standby loops hold together
	// (writer.queue_rows).
	standbyBudget *target.StandbyBudget
	dbErr         error
}

// ready is a collector's announcement that it streams a target on standby
// (lease.Handover).
type ready struct {
	by        string
	session   uint64 // the announcing collector's stream of the target
	syncPoint int64
	at        time.Time
}

type seed struct {
	ts      int64
	counter uint64
	ok      bool
}

type running struct {
	t     config.Target
	epoch int64 // reconcile loop only
	loop  *target.Loop
	conv  *rows.Converter // the loop's (a standby loop has its own)
	// announced: the standby stream last announced Ready, and when
	// (reconcile loop only).
	announced   target.Sync
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

// New checks the configuration, connects to PostgreSQL (a one-line error
// naming db.dsn when it cannot), applies the migrations when db.migrate is
// on, and opens the spill. Run starts the work.
func New(ctx context.Context, cfg config.File, opts ...Option) (*Collector, error) {
	o := options{log: slog.New(slog.DiscardHandler), drain: 10 * time.Second,
		backoff: [2]time.Duration{500 * time.Millisecond, 30 * time.Second}}
	for _, opt := range opts {
		opt(&o)
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.ID == "" {
		cfg.ID = DefaultID(cfg.StateDir)
	}
	pcfg, err := pgxpool.ParseConfig(cfg.DB.DSN)
	if err != nil {
		return nil, fmt.Errorf("db.dsn: %s", oneLine(err))
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
		return nil, fmt.Errorf("db.dsn: cannot reach PostgreSQL at %s:%d: %s", pcfg.ConnConfig.Host, pcfg.ConnConfig.Port, oneLine(err))
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
		held: map[string]int64{}, standby: map[string]*running{}, ready: map[string]ready{},
		handing: map[string]time.Time{}, handoverWake: make(chan struct{}, 1), handoffs: map[string]*handoff{},
		hctx: context.Background(), standbyBudget: target.NewStandbyBudget(cfg.Writer.QueueRows)}
	c.m = o.metrics
	if c.m == nil {
		c.m = metrics.New()
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
		writer.WithFencing(cfg.Leases.Enabled), writer.WithLogger(o.log.With("component", "writer")), writer.WithMetrics(c.m))
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
func (c *Collector) Metrics() *metrics.Metrics { return c.m }

// Pool returns the database pool.
func (c *Collector) Pool() *pgxpool.Pool { return c.pool }

// seedFromSpill records, per target and series, the last timestamp of the
// batches left in the spill: they are not in latest yet, and the switch
// will send those values again on resubscription.
func (c *Collector) seedFromSpill(payload []byte) {
	b, err := rows.DecodeBatch(payload)
	if err != nil {
		return
	}
	m := c.seeds[b.Target]
	if m == nil {
		m = map[int64]seed{}
		c.seeds[b.Target] = m
	}
	for _, s := range b.Samples {
		if cur := m[s.SeriesID]; s.TS > cur.ts {
			m[s.SeriesID] = seed{ts: s.TS, counter: uint64(s.Int), ok: s.Kind == rows.ValInt}
		}
	}
}

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
			if err := c.m.Serve(ctx, lis, c.health); err != nil {
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

	// Drain: targets go make-before-break to the collectors that take them
	// over (bounded by the drain time and leases.ttl), the other loops stop
	// and hand over their last batch, the writer stores what it holds (or
	// spills it when the drain time is up), leases go.
	if c.lm != nil {
		c.drainLeases()
		// The drain is over: handovers still in progress are cut short
		// (their leases are released below).
		stopHandoffs()
		c.waitHandoffs()
	}
	c.stopAll(nil)
	c.w.Close()
	select {
	case <-wdone:
	case <-time.After(c.o.drain):
		c.log.Warn("drain time is up: the rest stays in the spill", "batches", c.sp.Pending())
		stopWriter()
		<-wdone
	}
	if c.lm != nil {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for _, t := range sortedKeys(c.held) {
			if _, err := c.lm.Release(dctx, t); err != nil {
				c.log.Warn("lease not released", "target", t, "err", err)
			}
		}
		c.lm.Leave(dctx)
		c.m.Leases.Set(0)
		cancel()
	}
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

// Wake asks for a reconcile now (a targets-table notification).
func (c *Collector) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Collector) reconcileLoop(ctx context.Context) {
	every := c.cfg.DB.TargetsReread
	if c.lm != nil {
		every = c.cfg.Leases.Renew
	}
	if !c.cfg.DB.TargetsTable && c.lm == nil {
		every = time.Hour // nothing changes on its own
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var lastRead time.Time
	reread := true
	for {
		if c.cfg.DB.TargetsTable && (reread || time.Since(lastRead) >= c.cfg.DB.TargetsReread) {
			c.readTable(ctx)
			lastRead, reread = time.Now(), false
		}
		c.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-c.wake:
			reread = true
		case <-c.handoverWake:
		}
	}
}

const targetsSQL = `SELECT name, address, coalesce(insecure, false), coalesce(skip_verify, false),
  coalesce(ca_file, ''), coalesce(cert_file, ''), coalesce(key_file, ''), coalesce(username, ''),
  coalesce(password, ''), coalesce(subscriptions::text, ''), coalesce(enabled, true)
FROM targets ORDER BY name`

// readTable reads the targets table; a row that does not check is logged
// (naming the target and the column) and skipped, the others are kept.
func (c *Collector) readTable(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rs, err := c.pool.Query(qctx, targetsSQL)
	if err != nil {
		c.setDBErr(fmt.Errorf("targets table: %w", err))
		return
	}
	table := map[string]config.Target{}
	var subs string
	var enabled bool
	var t config.Target
	_, err = pgx.ForEachRow(rs, []any{&t.Name, &t.Address, &t.Insecure, &t.SkipVerify, &t.CAFile, &t.CertFile,
		&t.KeyFile, &t.Username, &t.Password, &subs, &enabled}, func() error {
		tt := t
		tt.Enabled = &enabled
		var err error
		if tt.Subscriptions, err = config.ParseSubscriptions([]byte(subs)); err != nil {
			c.log.Error("targets table: row skipped", "target", tt.Name, "err", fmt.Errorf("targets[%s].%w", tt.Name, err))
			return nil
		}
		if err := tt.Check(); err != nil {
			c.log.Error("targets table: row skipped", "target", tt.Name, "err", err)
			return nil
		}
		if enabled {
			table[tt.Name] = tt
		}
		return nil
	})
	if err != nil {
		c.setDBErr(fmt.Errorf("targets table: %w", err))
		return
	}
	c.setDBErr(nil)
	c.mu.Lock()
	c.table, c.tableOK = table, true
	c.mu.Unlock()
}

func (c *Collector) setDBErr(err error) {
	c.mu.Lock()
	c.dbErr = err
	c.mu.Unlock()
	if err != nil {
		c.log.Warn("database", "err", err)
	}
}

// desiredTargets is the file's targets and the table's enabled ones (the
// file wins on a name in both).
func (c *Collector) desiredTargets() map[string]config.Target {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]config.Target, len(c.cfg.Targets)+len(c.table))
	for name, t := range c.table {
		out[name] = t
	}
	for _, t := range c.cfg.Targets {
		if t.IsEnabled() {
			out[t.Name] = t
		} else {
			delete(out, t.Name)
		}
	}
	return out
}

// reconcile starts and stops loops so that exactly the wanted targets run,
// each with its current configuration and lease epoch.
func (c *Collector) reconcile(ctx context.Context) {
	desired := c.desiredTargets()
	wanted := map[string]int64{} // target → epoch
	if c.lm == nil {
		for name := range desired {
			wanted[name] = 0
		}
	} else {
		c.reconcileLeases(ctx, desired, wanted)
	}
	c.mu.Lock()
	var stop []*running
	for name, r := range c.running {
		if _, busy := c.handoffs[name]; busy {
			continue // its handover stops it
		}
		epoch, ok := wanted[name]
		if !ok || epoch != r.epoch || !reflect.DeepEqual(desired[name], r.t) {
			stop = append(stop, r)
			delete(c.running, name)
		}
	}
	c.mu.Unlock()
	for _, r := range stop {
		r.stop()
		if _, ok := wanted[r.t.Name]; !ok {
			c.m.SetState(r.t.Name, "")
			c.log.Info("target stopped", "target", r.t.Name)
			c.targetGone(r.t.Name)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range sortedKeys(wanted) {
		if _, busy := c.handoffs[name]; busy {
			continue
		}
		if _, ok := c.running[name]; !ok {
			c.startLocked(ctx, desired[name], wanted[name], false)
		}
	}
}

// reconcileLeases decides, per target, whether this collector owns it
// (wanted), streams it on standby, or hands it over. Each database call
// has a timeout of its own (leases.renew); a handover runs in a goroutine
// of its own, so a slow one holds up neither the others nor the renewals.
func (c *Collector) reconcileLeases(ctx context.Context, desired map[string]config.Target, wanted map[string]int64) {
	c.handoffsDone()
	members, err := func() ([]string, error) {
		dctx, cancel := c.dbCtx(ctx)
		defer cancel()
		if err := c.lm.Heartbeat(dctx); err != nil {
			return nil, err
		}
		return c.lm.Members(dctx)
	}()
	if err != nil {
		// The database is away: keep what we hold; the writer's fencing
		// refuses our batches if a lease moves meanwhile.
		c.setDBErr(fmt.Errorf("leases: %w", err))
		for t, e := range c.held {
			if _, ok := desired[t]; ok {
				wanted[t] = e
			}
		}
		return
	}
	for _, name := range sortedKeys(desired) {
		epoch, held := c.held[name]
		owner := lease.Owner(members, name)
		mine := owner == c.lm.ID()
		if _, busy := c.handoffs[name]; busy {
			c.renew(ctx, name, epoch)
			continue
		}
		switch {
		case mine && held:
			delete(c.handing, name)
			if c.renew(ctx, name, epoch) {
				wanted[name] = epoch
			}
		case mine:
			l, ok, err := func() (lease.Lease, bool, error) {
				dctx, cancel := c.dbCtx(ctx)
				defer cancel()
				return c.lm.Acquire(dctx, name)
			}()
			if err != nil {
				c.log.Warn("lease not acquired", "target", name, "err", err)
				continue
			}
			if !ok {
				// Held by another until it lets go (or its lease
				// expires): stream on standby meanwhile, and say when
				// ready.
				c.keepStandby(ctx, desired[name])
				continue
			}
			e := l.Epoch
			c.held[name] = e
			wanted[name] = e
			switch promoted, hadStandby := c.promote(desired[name], e); {
			case promoted:
				c.log.Info("lease taken, promoting the standby stream", "target", name, "epoch", e)
			case !hadStandby && l.From != "":
				// Taken from another collector with no standby stream to
				// promote (it died or released the lease before this one
				// streamed): what the switch published between the
				// previous owner's last stored value and this loop's sync
				// is lost.
				c.m.Handovers.WithLabelValues("taken", metrics.HandoverTakeover).Inc()
				c.log.Warn("handover: lease taken over with no standby stream; values the switch published since the previous owner's last stored one are lost",
					"target", name, "epoch", e, "from", l.From)
			default:
				c.log.Info("lease taken", "target", name, "epoch", e)
			}
		case held:
			c.stopStandby(name)
			succ, isReady := c.successorReady(name, owner)
			switch since, ok := c.handing[name]; {
			case isReady:
				c.startHandOver(name, metrics.HandoverMakeBeforeBreak, succ)
				c.renew(ctx, name, epoch)
			case ok && time.Since(since) > c.cfg.Leases.TTL:
				c.log.Warn("the new owner did not stream within leases.ttl: handing over anyway", "target", name, "to", owner)
				c.startHandOver(name, metrics.HandoverBreakBeforeMake, ready{})
			default:
				// Keep collecting until the new owner streams.
				if !ok {
					c.handing[name] = time.Now()
				}
				if c.renew(ctx, name, epoch) {
					wanted[name] = epoch
				}
			}
		default:
			c.stopStandby(name)
		}
	}
	for name := range c.held {
		if _, ok := desired[name]; !ok {
			c.startHandOver(name, "", ready{})
		}
	}
	for _, name := range c.standbyNames() {
		if _, ok := desired[name]; !ok {
			c.stopStandby(name)
		}
	}
	c.m.Leases.Set(float64(len(c.held)))
}

// dbCtx bounds one database call of the lease work (leases.renew).
func (c *Collector) dbCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.Leases.Renew)
}

// renew renews a lease we hold; false when it was lost (its loop then
// stops: another collector owns the target). When the database does not
// answer, the lease is not renewed (logged, counted as an error) but kept:
// were it to expire meanwhile and move, the writer's fencing refuses this
// collector's batches, and a database blip does not stop every target.
// A target being handed over keeps its lease until its handover releases
// it (and is not renewed from then on): a renewal that finds nothing is
// not a loss, and the handover's end forgets the lease (handoffsDone).
// Reconcile (or drain) loop only.
func (c *Collector) renew(ctx context.Context, name string, epoch int64) bool {
	h := c.handoffs[name]
	if h != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.releasing {
			return false
		}
	}
	dctx, cancel := c.dbCtx(ctx)
	defer cancel()
	res, err := c.lm.Renew(dctx, name, epoch)
	switch {
	case err != nil:
		c.m.LeaseRenewals.WithLabelValues("error").Inc()
		c.log.Warn("lease not renewed: the database did not answer", "target", name, "epoch", epoch, "err", err)
		return true
	case res == lease.Reacquired:
		// It had expired (the database was away for longer than
		// leases.ttl) and nobody took it: ours again, same epoch.
		c.m.LeaseRenewals.WithLabelValues("reacquired").Inc()
		c.log.Info("lease had expired and was taken again", "target", name, "epoch", epoch)
		return true
	case res == lease.Lost && h != nil:
		// Gone before the handover released it (a renewal and a release
		// never overlap: the lock above): expired and taken meanwhile. The
		// handover's end forgets it.
		c.m.LeaseRenewals.WithLabelValues("lost").Inc()
		c.log.Warn("lease lost while handing the target over", "target", name, "epoch", epoch)
		return false
	case res == lease.Lost:
		c.m.LeaseRenewals.WithLabelValues("lost").Inc()
		c.log.Warn("lease lost", "target", name, "epoch", epoch)
		delete(c.held, name)
		delete(c.handing, name)
		return false
	}
	c.m.LeaseRenewals.WithLabelValues("renewed").Inc()
	return true
}

// successorReady: owner, the collector rendezvous hashing now names for
// the target, streams it on standby (announced within two renewals and
// not withdrawn), in the stream and from the sync point it returns.
func (c *Collector) successorReady(name, owner string) (ready, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.ready[name]
	if !ok || r.by != owner || time.Since(r.at) > 2*c.cfg.Leases.Renew {
		return ready{}, false
	}
	return r, true
}

// stillReady: the announcement r is the newest of its collector's and
// not withdrawn (its standby stream has not dropped meanwhile).
func (c *Collector) stillReady(name string, r ready) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.ready[name]
	// (A standby loop started again counts its sessions from 1 again: the
	// sync point tells its streams from the previous loop's.)
	return ok && cur.by == r.by && cur.session == r.session && cur.syncPoint == r.syncPoint
}

// keepStandby runs a standby loop for a target whose lease another
// collector holds, and once its stream has synced announces that this
// collector is ready to take the target over.
func (c *Collector) keepStandby(ctx context.Context, t config.Target) {
	c.mu.Lock()
	r := c.standby[t.Name]
	c.mu.Unlock()
	if r != nil && !reflect.DeepEqual(r.t, t) {
		c.stopStandby(t.Name)
		r = nil
	}
	if r == nil {
		c.mu.Lock()
		c.standby[t.Name] = c.startLocked(ctx, t, 0, true)
		c.mu.Unlock()
		return
	}
	s, ok := r.loop.Synced()
	if !ok {
		// The announced stream dropped: withdraw, so the owner does not
		// stop while this collector has no stream.
		c.withdrawReady(ctx, t.Name, r)
		return
	}
	// Once per synced stream, then again once per renewal (the owner
	// counts on an announcement for two renewals): not on every pass.
	if s == r.announced && time.Since(r.announcedAt) < c.cfg.Leases.Renew*9/10 {
		return
	}
	dctx, cancel := c.dbCtx(ctx)
	defer cancel()
	if err := c.lm.Ready(dctx, t.Name, s.Session, s.Point); err != nil {
		c.log.Warn("handover: ready not announced", "target", t.Name, "err", err)
		return
	}
	r.announced, r.announcedAt = s, time.Now()
	c.m.ReadyAnnounced.Inc()
}

func (c *Collector) standbyNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedKeys(c.standby)
}

// stopStandby stops a target's standby loop, if any; what it held is
// dropped (the owner stores it), its Ready, if announced, is withdrawn, and
// the northbound forgets the target.
func (c *Collector) stopStandby(name string) {
	c.mu.Lock()
	r := c.standby[name]
	delete(c.standby, name)
	c.mu.Unlock()
	if r == nil {
		return
	}
	r.stop()
	c.withdrawReady(context.Background(), name, r)
	c.m.SetState(name, "")
	c.targetGone(name)
}

// withdrawReady withdraws the Ready the standby loop r announced, if any
// (reconcile loop only); when the database does not answer, the next pass
// tries again.
func (c *Collector) withdrawReady(ctx context.Context, name string, r *running) {
	if r.announced == (target.Sync{}) {
		return
	}
	dctx, cancel := c.dbCtx(ctx)
	defer cancel()
	if err := c.lm.NotReady(dctx, name, r.announced.Session); err != nil {
		c.log.Warn("handover: ready not withdrawn", "target", name, "err", err)
		return
	}
	r.announced = target.Sync{}
}

// promote turns the target's standby loop, if it streams with the
// configuration t, into its running loop at epoch (reconcile loop only),
// and finishes the promotion in a goroutine of its own (finishPromotion):
// the loop holds its batches until then. It returns false when there is no
// standby loop to promote (hadStandby says whether there was one); one that
// cannot be (it ended, or t changed) is stopped and the takeover counted as
// break-before-make.
func (c *Collector) promote(t config.Target, epoch int64) (promoted, hadStandby bool) {
	c.mu.Lock()
	r := c.standby[t.Name]
	c.mu.Unlock()
	if r == nil {
		return false, false
	}
	select {
	case <-r.done:
	default:
		if reflect.DeepEqual(r.t, t) {
			r.epoch, r.promoted = epoch, make(chan struct{})
			c.mu.Lock()
			delete(c.standby, t.Name)
			c.running[t.Name] = r
			c.mu.Unlock()
			go c.finishPromotion(r, epoch)
			return true, true
		}
	}
	c.stopStandby(t.Name)
	c.m.Handovers.WithLabelValues("taken", metrics.HandoverBreakBeforeMake).Inc()
	c.log.Warn("handover: the standby stream could not be promoted; the target starts afresh", "target", t.Name)
	return false, true
}

// finishPromotion reads what the previous owner stored (the latest table,
// read now that the lease is ours and the old owner's transactions are
// over), retrying for as long as the loop runs (the lease is ours), and
// promotes the loop: what the previous owner stored is skipped, the rest
// sent at epoch. It then counts the takeover: make-before-break when the
// loop's stream (the one up now, or the next to sync) synced at or before
// the newest value the previous owner stored, and no held batch newer than
// that was let go of — every value is then in what the previous owner
// stored or in this stream; else break-before-make (the values superseded
// in between are in neither). A promotion cut short (the loop stopped:
// lease lost, target gone, drain) drops the held batches and counts as
// break-before-make.
func (c *Collector) finishPromotion(r *running, epoch int64) {
	defer close(r.promoted)
	name := r.t.Name
	kind := metrics.HandoverBreakBeforeMake
	defer func() { c.m.Handovers.WithLabelValues("taken", kind).Inc() }()
	select {
	case <-r.seeded: // the standby's own seeding is over: the converter is ours
	case <-r.ctx.Done():
		return
	}
	latest, err := c.latestOf(r.ctx, name, latestPromote)
	if err != nil {
		c.log.Warn("handover: standby stopped before it was promoted; its rows are dropped", "target", name, "err", err)
		return
	}
	floor := make(map[int64]int64, len(latest))
	var stored int64 // the newest value the previous owner stored
	for _, s := range latest {
		floor[s.ID] = s.TS
		stored = max(stored, s.TS)
	}
	samples, events := r.loop.Promote(epoch, floor, func(conv *rows.Converter) {
		for _, s := range latest {
			seedConverter(conv, s)
		}
	})
	c.mu.Lock()
	if c.running[name] == r {
		c.convs[name] = r.conv // the promoted stream's state is the target's now
	}
	c.mu.Unlock()
	c.log.Info("handover: standby promoted, rows the previous owner stored skipped", "target", name, "epoch", epoch,
		"samples", samples, "events", events)
	s, err := r.loop.WaitSynced(r.ctx)
	switch discarded := r.loop.DiscardedUpTo(); {
	case err != nil:
		c.log.Warn("handover: stopped before a stream synced", "target", name)
	case s.Point > stored:
		// The announced stream dropped after the old owner's last look
		// (or no stream was announced: the lease expired); the stream
		// that replaced it started past what the old owner stored.
		c.log.Warn("handover: break-before-make: values superseded between the previous owner's last stored and this stream's sync point are lost",
			"target", name, "stored_up_to", stored, "sync_point", s.Point, "session", s.Session)
	case discarded > stored:
		c.log.Warn("handover: break-before-make: held rows newer than the previous owner's were let go of past writer.queue_rows",
			"target", name, "stored_up_to", stored, "discarded_up_to", discarded)
	default:
		kind = metrics.HandoverMakeBeforeBreak
	}
}

// Phases of a read of the latest table (label phase of LatestReadErrors).
const (
	latestSeed    = "seed"    // a loop starts: what is stored is not stored again
	latestPromote = "promote" // a standby loop is promoted
)

// latestReadTimeout bounds one read of the latest table.
const latestReadTimeout = 10 * time.Second

// latestOf reads what the latest table holds of a target (readLatest),
// retrying with back-off (100 ms up to writer.retry_max, each attempt
// with a timeout of its own) until it succeeds or ctx ends. phase labels
// the failures in the logs and latest_read_errors_total.
func (c *Collector) latestOf(ctx context.Context, name, phase string) ([]writer.Stored, error) {
	bo := writer.NewBackOff(100*time.Millisecond, c.cfg.Writer.RetryMax)
	return backoff.Retry(ctx, func() ([]writer.Stored, error) {
		if f := c.o.readLatestFault; f != nil {
			if err := f(name, phase); err != nil {
				return nil, err
			}
		}
		rctx, cancel := context.WithTimeout(ctx, latestReadTimeout)
		defer cancel()
		return c.readLatest(rctx, name)
	}, backoff.WithBackOff(bo), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, d time.Duration) {
		c.m.LatestReadErrors.WithLabelValues(phase).Inc()
		c.log.Warn("latest table not read, retrying", "target", name, "phase", phase, "in", d, "err", err)
	}))
}

// drainLeases, at shutdown, hands this collector's targets over
// make-before-break: it leaves the members (so the others take its
// targets), keeps streaming and renewing, and stops each target once its
// new owner streams it (the handovers run side by side) — until none is
// left, nobody else is alive, or the drain time (at most leases.ttl) is
// up.
func (c *Collector) drainLeases() {
	if len(c.held) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(c.o.drain, c.cfg.Leases.TTL))
	defer cancel()
	if err := c.lm.Leave(ctx); err != nil {
		c.log.Warn("drain: cannot leave the members", "err", err)
		return
	}
	tick := time.NewTicker(c.cfg.Leases.Renew)
	defer tick.Stop()
	for {
		c.handoffsDone()
		if len(c.held) == 0 {
			return
		}
		members, err := func() ([]string, error) {
			dctx, cancel := c.dbCtx(ctx)
			defer cancel()
			return c.lm.Members(dctx)
		}()
		if err != nil || len(members) == 0 {
			return
		}
		for _, name := range sortedKeys(c.held) {
			if _, busy := c.handoffs[name]; busy {
				c.renew(ctx, name, c.held[name])
				continue
			}
			if succ, ok := c.successorReady(name, lease.Owner(members, name)); ok {
				c.startHandOver(name, metrics.HandoverMakeBeforeBreak, succ)
				c.renew(ctx, name, c.held[name])
				continue
			}
			c.renew(ctx, name, c.held[name])
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-c.handoverWake:
		}
	}
}

// handoff is a handover in progress, in a goroutine of its own.
type handoff struct {
	done     chan struct{}
	released bool // the lease was released (written before done closes)
	// releasing, under mu, is set before the lease is released: from
	// then on the renewals leave the lease alone (a renewal the database
	// ran after the release would take the released lease back until
	// leases.ttl). A renewal holds mu for its database call.
	mu        sync.Mutex
	releasing bool
}

// startHandOver runs handOver for name in a goroutine of its own, unless
// one runs already (reconcile loop only). Its end wakes the reconcile loop,
// which then forgets the lease (handoffsDone).
func (c *Collector) startHandOver(name, kind string, succ ready) {
	if _, busy := c.handoffs[name]; busy {
		return
	}
	h := &handoff{done: make(chan struct{})}
	c.handoffs[name] = h
	go func() {
		defer c.wakeHandover()
		defer close(h.done)
		h.released = c.handOver(c.hctx, h, name, kind, succ)
	}()
}

// handoffsDone forgets the handovers that ended, and the leases they
// released (reconcile loop only).
func (c *Collector) handoffsDone() {
	for name, h := range c.handoffs {
		select {
		case <-h.done:
		default:
			continue
		}
		delete(c.handoffs, name)
		if h.released {
			delete(c.held, name)
			delete(c.handing, name)
		}
	}
}

// waitHandoffs waits for the handovers in progress (each bounded by
// leases.ttl and the drain time) and forgets them.
func (c *Collector) waitHandoffs() {
	for _, h := range c.handoffs {
		<-h.done
	}
	c.handoffsDone()
}

// handOver stops a target we should no longer own, waits (bounded) until
// its batches are stored, and releases its lease so the new owner takes it
// at once; it returns whether the lease was released (the caller then
// forgets it). It does not touch held or handing (see startHandOver). kind is the handover's metric label ("" for a target no longer
// collected at all). Make-before-break, the new owner streams the target
// from the switch timestamp succ.syncPoint on: the loop stops once it has
// received as far (bounded by leases.ttl/2; past that the handover counts
// as break-before-make) — unless the new owner withdrew that stream or
// announced a newer one meanwhile: then nothing is stopped and handOver
// returns false (the next announcement starts another handover).
// Every database call has its own timeout.
func (c *Collector) handOver(ctx context.Context, h *handoff, name, kind string, succ ready) bool {
	c.mu.Lock()
	r := c.running[name]
	promoting := false
	if r != nil && r.promoted != nil {
		select {
		case <-r.promoted:
		default:
			promoting = true
		}
	}
	c.mu.Unlock()
	if promoting && kind == metrics.HandoverMakeBeforeBreak {
		// Still a standby whose promotion retries: its held rows were
		// never stored, and stopping it drops them.
		kind = metrics.HandoverBreakBeforeMake
		c.log.Warn("handover: the loop is still being promoted; the rows it holds are dropped", "target", name)
	}
	if r != nil && kind == metrics.HandoverMakeBeforeBreak {
		wctx, cancel := context.WithTimeout(ctx, c.cfg.Leases.TTL/2)
		if err := r.loop.WaitReceived(wctx, succ.syncPoint); err != nil {
			kind = metrics.HandoverBreakBeforeMake
			c.log.Warn("handover: this stream did not reach the new owner's sync point", "target", name,
				"sync_point", succ.syncPoint, "received", r.loop.LastReceived(), "err", err)
		}
		cancel()
		if !c.stillReady(name, succ) {
			c.log.Info("handover: the new owner's announced stream is gone; collecting on until it announces again",
				"target", name, "to", succ.by, "session", succ.session)
			return false
		}
	}
	c.mu.Lock()
	delete(c.running, name)
	c.mu.Unlock()
	if r != nil {
		r.stop()
	}
	if c.o.handedOff != nil {
		c.o.handedOff(name)
	}
	wctx, cancel := context.WithTimeout(ctx, min(c.o.drain, c.cfg.Leases.TTL/2))
	c.w.WaitTarget(wctx, name)
	cancel()
	c.m.SetState(name, "")
	h.mu.Lock() // waits for a renewal in progress
	h.releasing = true
	h.mu.Unlock()
	dctx, cancel := c.dbCtx(ctx)
	defer cancel()
	released, err := c.lm.Release(dctx, name)
	if err != nil {
		// Still ours: the next pass tries again (or the lease expires).
		c.log.Warn("lease not released", "target", name, "err", err)
		c.targetGone(name)
		return false
	}
	if !released {
		// Not ours any more (expired and taken meanwhile): no handover
		// of ours to count.
		c.m.LeaseRenewals.WithLabelValues("lost").Inc()
		c.log.Warn("lease not ours any more when handing the target over", "target", name, "kind", kind)
		c.targetGone(name)
		return true
	}
	if kind != "" {
		c.m.Handovers.WithLabelValues("given", kind).Inc()
	}
	c.log.Info("target handed over", "target", name, "kind", kind)
	c.targetGone(name)
	return true
}

func (c *Collector) targetGone(name string) {
	if c.o.gone != nil {
		c.o.gone(name)
	}
}

// startLocked starts the loop of t at epoch (under mu) and records it in
// running, or, on standby, returns it for the caller to record. A standby
// loop converts with a converter of its own, adopted as the target's only
// when it is promoted: a standby stopped without promotion leaves nothing
// behind (its newest timestamps would make the next loop drop the new
// stream's initial values as duplicates).
func (c *Collector) startLocked(ctx context.Context, t config.Target, epoch int64, standby bool) *running {
	conv := c.convs[t.Name]
	if conv == nil || standby {
		var opts []rows.Option
		if c.o.db.Describe != nil {
			opts = append(opts, rows.WithDescriber(c.o.db.Describe))
		}
		conv = rows.NewConverter(t.Name, c.sch, opts...)
		if !standby {
			c.convs[t.Name] = conv
		}
	}
	// A loop ends when stopped (cancel), not with ctx: a draining
	// collector streams on until its targets' new owners stream.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &running{t: t, epoch: epoch, conv: conv, ctx: lctx, cancel: cancel, seeded: make(chan struct{}),
		done: make(chan struct{})}
	opts := []target.Option{target.WithCollector(c.cfg.ID, epoch),
		target.WithBatch(c.cfg.Writer.BatchRows, c.cfg.Writer.BatchInterval),
		target.WithMetrics(c.m), target.WithLogger(c.log),
		target.WithBackoff(c.o.backoff[0], c.o.backoff[1]), target.WithObserver(c.o.observe),
		target.WithDialOptions(c.o.dialOpts...)}
	if standby {
		// The owner stores what this loop holds until it is promoted;
		// its sync wakes the reconcile loop to announce it.
		opts = append(opts, target.WithStandby(c.standbyBudget), target.WithOnSync(c.wakeHandover))
	} else {
		c.running[t.Name] = r
	}
	r.loop = target.New(t, conv, c.w.Enqueue, opts...)
	c.m.SetState(t.Name, "connecting")
	c.log.Info("target started", "target", t.Name, "address", t.Address, "epoch", epoch, "standby", standby)
	go func() {
		defer close(r.done)
		if err := c.seed(lctx, t.Name, conv); err != nil {
			return
		}
		close(r.seeded)
		r.loop.Run(lctx)
	}()
	return r
}

func (c *Collector) wakeHandover() {
	select {
	case c.handoverWake <- struct{}{}:
	default:
	}
}

// seed loads what the database and the spill hold for a target into its
// converter, so values the switch sends again are not stored twice. It
// retries until the database answers or ctx ends.
func (c *Collector) seed(ctx context.Context, name string, conv *rows.Converter) error {
	latest, err := c.latestOf(ctx, name, latestSeed)
	if err != nil {
		return err
	}
	for _, s := range latest {
		seedConverter(conv, s)
	}
	c.mu.Lock()
	for id, s := range c.seeds[name] {
		conv.Seed(id, s.ts, s.counter, s.ok)
	}
	delete(c.seeds, name)
	c.mu.Unlock()
	return nil
}

// readLatest reads what the latest table holds of each series of a target.
func (c *Collector) readLatest(ctx context.Context, name string) ([]writer.Stored, error) {
	return writer.ReadLatest(ctx, c.pool, name, func(path string) bool {
		p, err := store.ParsePath(path)
		if err != nil {
			return false
		}
		l, ok := c.sch.LeafAt(p)
		return ok && l.Kind == store.Counter
	})
}

// stopAll stops every loop (each hands its last batch to the writer).
func (c *Collector) stopAll(_ map[string]bool) {
	c.mu.Lock()
	rs := make([]*running, 0, len(c.running)+len(c.standby))
	for _, r := range c.running {
		rs = append(rs, r)
	}
	for _, r := range c.standby {
		rs = append(rs, r)
	}
	c.running, c.standby = map[string]*running{}, map[string]*running{}
	c.mu.Unlock()
	for _, r := range rs {
		r.cancel()
	}
	for _, r := range rs {
		r.wait()
	}
}

// targetsChannel is the NOTIFY channel of the targets table's trigger.
const targetsChannel = "lhcnp_targets"

// listen LISTENs on channels: a NOTIFY lhcnp_targets wakes the reconcile
// loop to re-read the table (the periodic re-read covers notifications lost
// while it reconnects); a handover message records who is ready to take a
// target and wakes the reconcile (or drain) loop.
func (c *Collector) listen(ctx context.Context, channels []string) {
	bo := writer.NewBackOff(200*time.Millisecond, c.cfg.Writer.RetryMax)
	for ctx.Err() == nil {
		err := func() error {
			conn, err := c.pool.Acquire(ctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			for _, ch := range channels { // our own constant names
				if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
					return err
				}
			}
			defer conn.Exec(context.Background(), "UNLISTEN *")
			c.Wake() // changes made while we were not listening
			bo.Reset()
			for {
				n, err := conn.Conn().WaitForNotification(ctx)
				if err != nil {
					conn.Conn().Close(context.Background()) // do not return a broken LISTEN conn to the pool
					return err
				}
				if n.Channel == lease.HandoverChannel {
					c.handoverMessage(n.Payload)
					continue
				}
				c.log.Debug("targets table changed", "target", n.Payload)
				c.Wake()
			}
		}()
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("LISTEN interrupted", "channels", channels, "err", err)
		t := time.NewTimer(bo.NextBackOff())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// handoverMessage records a collector ready to take a target over, and
// wakes the loop that hands targets over or takes them when the message
// concerns it: a Ready for a target this collector runs, a Released for a
// target it streams on standby. (Waking on every message would make
// collectors waiting on standby wake each other without end.)
func (c *Collector) handoverMessage(payload string) {
	h, err := lease.ParseHandover(payload)
	if err != nil {
		c.log.Warn("handover message ignored", "payload", payload, "err", err)
		return
	}
	if h.Ready == c.cfg.ID || h.Released == c.cfg.ID || h.NotReady == c.cfg.ID {
		return // our own
	}
	c.mu.Lock()
	_, runs := c.running[h.Target]
	_, waits := c.standby[h.Target]
	switch {
	case h.Ready != "":
		// Messages of one collector arrive in the order it sent them:
		// the last one is its newest stream.
		c.ready[h.Target] = ready{by: h.Ready, session: h.Session, syncPoint: h.SyncPoint, at: time.Now()}
	case h.NotReady != "":
		if r, ok := c.ready[h.Target]; ok && r.by == h.NotReady {
			delete(c.ready, h.Target)
		}
	}
	c.mu.Unlock()
	if h.Ready != "" && runs || h.Released != "" && waits {
		c.wakeHandover()
	}
}

func (c *Collector) maintain(ctx context.Context) {
	t := time.NewTicker(c.cfg.DB.MaintainInterval)
	defer t.Stop()
	for {
		if err := c.o.db.Maintain(ctx, c.pool, c.cfg.DB.Retention); err != nil && ctx.Err() == nil {
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
func (c *Collector) health() metrics.Health {
	h := metrics.Health{Targets: c.m.TargetStates()}
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

// oneLine joins the lines of an error (pgx lists every address it tried on
// a line of its own) so the command's error stays one line.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

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
