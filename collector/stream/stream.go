// Package target is the collector's subscription loop for one switch: dial
// the gNMI target (TLS or insecure, username and password in metadata),
// Subscribe with the target's subscription list, turn responses into rows
// (collector/rows) and hand full batches to a sink (the writer's queue).
// A failed dial or a broken stream is retried with jittered exponential
// back-off (cenkalti/backoff); the back-off resets once a stream has
// delivered its sync_response.
//
// A loop can start on standby (WithStandby): it streams and converts, but
// holds its batches until Promote gives it the target's lease epoch and
// what the previous owner stored, so a collector taking a target over
// subscribes before the old owner lets go (make-before-break).
//
// It knows gNMI and rows, not the database: the sink decides where
// batches go.
package stream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/decode"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/auth"
)

// Sink takes a formed batch. It must not block on the database.
type Sink func(*rows.Batch) error

// Loop subscribes to one target. Build it with New and run it with Run.
type Loop struct {
	t         config.Target
	conv      *rows.Converter
	sink      Sink
	collector string
	batchRows int
	every     time.Duration
	m         *collectormetrics.Metrics
	log       *slog.Logger
	backoff   func() *backoff.ExponentialBackOff
	observe   func(target string, r *gnmi.SubscribeResponse)
	onSync    func()
	dialOpts  []grpc.DialOption

	mu      sync.Mutex
	lastErr error

	// The batch in progress and what a standby loop holds, under bmu: the
	// receiving goroutine, the ticker and Promote share them.
	bmu      sync.Mutex
	cur      *rows.Batch
	epoch    int64
	held     []*rows.Batch
	heldRows int
	budget   *StandbyBudget
	// discardedTS is the newest sample timestamp of the held batches let
	// go of past the budget (under bmu).
	discardedTS int64
	// lastRows is the size of the last batch sent (under bmu): the next
	// one starts with room for a little more, so a busy target's batch is
	// not grown by copying, and an idle one's is not the size of a full
	// one.
	lastRows int

	standby atomic.Bool // written under bmu
	// sync is the current stream's once it reached its sync_response (nil
	// while none has: connecting, syncing, in back-off), written under
	// smu; syncWait, under smu, is closed when a stream next syncs
	// (WaitSynced); sessions counts the streams started.
	smu      sync.Mutex
	sync     atomic.Pointer[Sync]
	syncWait *syncWaiter
	sessions atomic.Uint64
	// lastTS is the newest notification timestamp received (any stream);
	// waiter is a WaitReceived in progress.
	lastTS atomic.Int64
	waiter atomic.Pointer[tsWaiter]
}

// syncWaiter is closed by the next stream to sync, which it records.
type syncWaiter struct {
	s  Sync
	ch chan struct{}
}

type tsWaiter struct {
	ts int64
	ch chan struct{}
}

type options struct {
	collector string
	epoch     int64
	batchRows int
	every     time.Duration
	m         *collectormetrics.Metrics
	log       *slog.Logger
	initial   time.Duration
	max       time.Duration
	observe   func(target string, r *gnmi.SubscribeResponse)
	standby   *StandbyBudget
	onSync    func()
	dialOpts  []grpc.DialOption
}

// StandbyBudget bounds the rows the standby loops sharing it hold
// together (a collector shares one between its standby loops).
type StandbyBudget struct {
	max  int64
	rows atomic.Int64
	// mu orders the gauge's updates with the counts: loops of different
	// targets change rows concurrently, and a gauge set from a count read
	// before another loop's change would keep a stale value.
	mu sync.Mutex
}

// NewStandbyBudget returns a budget of maxRows rows (at least 1).
func NewStandbyBudget(maxRows int) *StandbyBudget {
	return &StandbyBudget{max: int64(max(1, maxRows))}
}

// Rows is the number of rows the loops hold now.
func (b *StandbyBudget) Rows() int64 { return b.rows.Load() }

// add counts n more rows held (n < 0: fewer) and sets gauge to the rows
// held now.
func (b *StandbyBudget) add(n int, gauge interface{ Set(float64) }) {
	b.mu.Lock()
	gauge.Set(float64(b.rows.Add(int64(n))))
	b.mu.Unlock()
}

func (b *StandbyBudget) over() bool { return b.rows.Load() > b.max }

// Option configures a Loop.
type Option func(*options)

// WithCollector names the collector in batches (the ledger's collector
// column) and the lease epoch batches carry.
func WithCollector(id string, epoch int64) Option {
	return func(o *options) { o.collector, o.epoch = id, epoch }
}

// WithBatch sets the rows per batch and the longest wait before a partial
// batch goes out.
func WithBatch(rows int, every time.Duration) Option {
	return func(o *options) { o.batchRows, o.every = rows, every }
}

// WithMetrics sets the metrics to update.
func WithMetrics(m *collectormetrics.Metrics) Option { return func(o *options) { o.m = m } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithBackoff sets the first and the longest back-off between attempts
// (default 500 ms and 30 s, randomised ±50 %).
func WithBackoff(initial, max time.Duration) Option {
	return func(o *options) { o.initial, o.max = initial, max }
}

// WithObserver calls f with every response the target sends, on the
// receiving goroutine, before it becomes rows (the collector's northbound
// keeps the latest values from it). r is decoded into reused messages
// (collector/decode): they are valid during the call only, so f copies
// what it keeps (paths excepted: decoded paths are never modified); f must
// not modify them, and must not block.
func WithObserver(f func(target string, r *gnmi.SubscribeResponse)) Option {
	return func(o *options) { o.observe = f }
}

// WithStandby starts the loop on standby: its batches are held, not sent,
// until Promote. The loops sharing budget hold at most its rows together:
// past that each lets go of its oldest held batches (keeping its newest;
// counted by standby_discarded_rows_total, not as dropped rows), as the
// collector that still owns the target stores them.
func WithStandby(budget *StandbyBudget) Option { return func(o *options) { o.standby = budget } }

// WithOnSync calls f (on the receiving goroutine; it must not block) each
// time Synced changes: a stream reaches its sync_response, or a stream
// that had ends.
func WithOnSync(f func()) Option { return func(o *options) { o.onSync = f } }

// WithDialOptions adds gRPC dial options to the target's connections
// (after the transport credentials): keepalive parameters, interceptors.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOpts = append(o.dialOpts, opts...) }
}

// New returns the loop of target t, converting with conv (whose state
// survives reconnects) and sending batches to sink.
func New(t config.Target, conv *rows.Converter, sink Sink, opts ...Option) *Loop {
	o := options{batchRows: 5000, every: 200 * time.Millisecond, log: slog.New(slog.DiscardHandler),
		initial: 500 * time.Millisecond, max: 30 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.m == nil {
		o.m = collectormetrics.New()
	}
	l := &Loop{t: t, conv: conv, sink: sink, collector: o.collector, epoch: o.epoch, batchRows: o.batchRows,
		every: o.every, m: o.m, log: o.log.With("target", t.Name), observe: o.observe, budget: o.standby,
		onSync: o.onSync, dialOpts: o.dialOpts}
	l.standby.Store(o.standby != nil)
	l.backoff = func() *backoff.ExponentialBackOff {
		b := backoff.NewExponentialBackOff()
		b.InitialInterval, b.MaxInterval = o.initial, o.max
		return b
	}
	return l
}

// Sync identifies a stream that has delivered its sync_response.
type Sync struct {
	// Session numbers the loop's streams (1 for the first): a stream that
	// drops and comes back is a new session.
	Session uint64
	// Point is the newest timestamp of the notifications the stream
	// delivered before its sync_response: a collector that still owns the
	// target stops only once its own stream has received as far
	// (WaitReceived), so that every value is in one of the two streams.
	Point int64
}

// Synced returns the current stream's Sync; ok is false while no stream is
// up past its sync_response (a standby loop is then not ready to take
// over).
func (l *Loop) Synced() (s Sync, ok bool) {
	if p := l.sync.Load(); p != nil {
		return *p, true
	}
	return Sync{}, false
}

// WaitSynced returns the Sync of the current stream, or waits until a
// stream reaches its sync_response (or ctx ends).
func (l *Loop) WaitSynced(ctx context.Context) (Sync, error) {
	l.smu.Lock()
	if p := l.sync.Load(); p != nil {
		l.smu.Unlock()
		return *p, nil
	}
	if l.syncWait == nil {
		l.syncWait = &syncWaiter{ch: make(chan struct{})}
	}
	w := l.syncWait
	l.smu.Unlock()
	select {
	case <-w.ch:
		// That stream may have dropped since: it was up from its sync
		// point on.
		return w.s, nil
	case <-ctx.Done():
		return Sync{}, ctx.Err()
	}
}

// setSync records the current stream's Sync (nil: no stream is synced),
// waking WaitSynced on a sync.
func (l *Loop) setSync(s *Sync) (had bool) {
	l.smu.Lock()
	defer l.smu.Unlock()
	if s != nil && l.syncWait != nil {
		l.syncWait.s = *s
		close(l.syncWait.ch)
		l.syncWait = nil
	}
	return l.sync.Swap(s) != nil
}

// DiscardedUpTo is the newest sample timestamp of the batches the loop
// let go of on standby past its budget (0: none).
func (l *Loop) DiscardedUpTo() int64 {
	l.bmu.Lock()
	defer l.bmu.Unlock()
	return l.discardedTS
}

// LastReceived is the newest notification timestamp received.
func (l *Loop) LastReceived() int64 { return l.lastTS.Load() }

// WaitReceived waits until the loop has received a notification with a
// timestamp at or after ts (the switch sends in order, so everything before
// it has been received too), or ctx ends.
func (l *Loop) WaitReceived(ctx context.Context, ts int64) error {
	if l.lastTS.Load() >= ts {
		return nil
	}
	w := &tsWaiter{ts: ts, ch: make(chan struct{})}
	l.waiter.Store(w)
	defer l.waiter.CompareAndSwap(w, nil)
	if l.lastTS.Load() >= ts {
		return nil
	}
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// received records the timestamp of a notification received.
func (l *Loop) received(ts int64) {
	// Only the receiving goroutine writes lastTS.
	if ts <= l.lastTS.Load() {
		return
	}
	l.lastTS.Store(ts)
	if w := l.waiter.Load(); w != nil && ts >= w.ts && l.waiter.CompareAndSwap(w, nil) {
		close(w.ch)
	}
}

// Standby reports whether the loop still holds its batches.
func (l *Loop) Standby() bool { return l.standby.Load() }

// Promote ends the standby: from now on batches carry epoch and go to the
// sink. floor is, per series, the last timestamp the previous owner stored
// (rounded up within its microsecond); the held batches and the one in
// progress lose their samples at or before it (and the events those made),
// then go to the sink in order. seed, called first, hands the converter
// what the database holds (Converter.Seed), so the stream's values at or
// before it are dropped as duplicates from now on. It returns the samples
// and events skipped.
func (l *Loop) Promote(epoch int64, floor map[int64]int64, seed func(*rows.Converter)) (samples, events int) {
	l.bmu.Lock()
	defer l.bmu.Unlock()
	if seed != nil {
		seed(l.conv)
	}
	l.epoch = epoch
	for _, b := range append(l.held, l.cur) {
		if b == nil {
			continue
		}
		s, e := l.conv.Skip(b, floor)
		samples, events = samples+s, events+e
		b.Epoch = epoch
	}
	l.m.DroppedRows.WithLabelValues(collectormetrics.DropDuplicate).Add(float64(samples + events))
	l.standby.Store(false)
	for _, b := range l.held {
		l.flushLocked(b)
	}
	l.releaseHeldLocked()
	if l.sync.Load() != nil {
		l.m.SetState(l.t.Name, "streaming")
	}
	return samples, events
}

// LastError returns the error that ended the last attempt (nil while a
// stream is up).
func (l *Loop) LastError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

func (l *Loop) setErr(err error) {
	l.mu.Lock()
	l.lastErr = err
	l.mu.Unlock()
}

// Run subscribes until ctx ends, reconnecting with back-off. The batch in
// progress is handed to the sink before Run returns.
func (l *Loop) Run(ctx context.Context) {
	defer l.m.SetState(l.t.Name, "stopped")
	defer func() {
		// A standby stopped without promotion: its rows go.
		l.bmu.Lock()
		if l.standby.Load() {
			l.releaseHeldLocked()
		}
		l.bmu.Unlock()
	}()
	req, err := l.t.SubscribeRequest()
	if err != nil {
		l.setErr(err)
		l.log.Error("target not started", "err", err)
		return
	}
	bo := l.backoff()
	for ctx.Err() == nil {
		l.m.SetState(l.t.Name, "connecting")
		synced, err := l.session(ctx, req)
		if ctx.Err() != nil {
			return
		}
		if synced {
			bo.Reset()
		}
		err = fmt.Errorf("target %s (%s): %w", l.t.Name, l.t.Address, err)
		l.setErr(err)
		d := bo.NextBackOff()
		l.m.SetState(l.t.Name, "backoff")
		l.log.Warn("subscription ended, retrying", "in", d.Round(time.Millisecond), "err", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Dial opens a client connection to a target; opts come after the
// transport credentials.
func Dial(t config.Target, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	var creds credentials.TransportCredentials
	switch {
	case t.Insecure:
		creds = insecure.NewCredentials()
	case t.CAFile != "":
		tc, err := auth.ClientTLS(t.CAFile, t.CertFile, t.KeyFile, "")
		if err != nil {
			return nil, fmt.Errorf("targets[%s].ca_file: %w", t.Name, err)
		}
		tc.InsecureSkipVerify = t.SkipVerify
		creds = credentials.NewTLS(tc)
	default:
		tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.SkipVerify} //nolint:gosec // skip_verify is the user's choice for labs
		if t.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("targets[%s].cert_file: %w", t.Name, err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		creds = credentials.NewTLS(tc)
	}
	return grpc.NewClient(t.Address, append([]grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20))}, opts...)...)
}

// session runs one Subscribe stream; synced reports whether it got as far
// as its sync_response.
func (l *Loop) session(ctx context.Context, req *gnmi.SubscribeRequest) (synced bool, err error) {
	conn, err := Dial(l.t, l.dialOpts...)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if l.t.Username != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, auth.MetadataUsername, l.t.Username, auth.MetadataPassword, l.t.Password)
	}
	// Nothing keeps the messages after they became rows (an observer
	// copies what it keeps): the stream decodes into one reused set
	// (collector/decode).
	dec := decode.New()
	stream, err := gnmi.NewGNMIClient(conn).Subscribe(ctx, decode.CallOption())
	if err != nil {
		return false, fmt.Errorf("subscribe: %w", err)
	}
	if err := stream.Send(req); err != nil {
		_, rerr := stream.Recv() // the server's reason, if it gave one
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			err = rerr
		}
		return false, fmt.Errorf("subscribe: %w", err)
	}
	l.m.Resubscribes.WithLabelValues(l.t.Name).Inc()
	session := l.sessions.Add(1)
	// syncPoint is the newest timestamp received before the stream's
	// sync_response.
	var syncPoint int64
	defer func() {
		// The stream is gone: nobody may count on it any more.
		if l.setSync(nil) && l.onSync != nil {
			l.onSync()
		}
	}()
	// At the sync_response the converter deletes what it knows under these
	// paths that the initial data no longer had.
	var paths []*gnmi.Path
	for _, sub := range req.GetSubscribe().GetSubscription() {
		paths = append(paths, sub.GetPath())
	}
	l.bmu.Lock()
	l.conv.Resubscribed(paths...)
	l.cur = l.newBatch()
	l.bmu.Unlock()
	l.m.SetState(l.t.Name, "syncing")
	recv := func() (*gnmi.SubscribeResponse, error) {
		if err := stream.RecvMsg(dec); err != nil {
			return nil, err
		}
		return dec.Response(), nil
	}

	// This goroutine receives and converts; a ticker sends a partial batch
	// on time while the stream is quiet. They share the batch under bmu,
	// so a response goes from the socket to rows without a hand-off.
	tickDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(l.every)
		defer tick.Stop()
		for {
			select {
			case <-tickDone:
				return
			case <-tick.C:
				l.bmu.Lock()
				if l.cur.Rows() > 0 {
					l.flushLocked(l.cur)
					l.cur = l.newBatch()
				}
				l.bmu.Unlock()
			}
		}
	})
	defer func() {
		close(tickDone)
		wg.Wait()
		l.bmu.Lock()
		l.flushLocked(l.cur)
		l.cur = nil
		l.bmu.Unlock()
	}()
	notes := l.m.Notifications.WithLabelValues(l.t.Name)
	dups := l.m.DroppedRows.WithLabelValues(collectormetrics.DropDuplicate)
	for {
		r, err := recv()
		if err != nil {
			if ctx.Err() != nil {
				return synced, ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("stream closed by the target")
			}
			return synced, err
		}
		if u, ok := r.GetResponse().(*gnmi.SubscribeResponse_Update); ok {
			notes.Inc()
			ts := u.Update.GetTimestamp()
			if !synced {
				syncPoint = max(syncPoint, ts)
			}
			l.received(ts)
		}
		if l.observe != nil {
			l.observe(l.t.Name, r)
		}
		l.bmu.Lock()
		st := l.conv.Add(r, l.cur)
		if l.cur.Rows() >= l.batchRows {
			l.flushLocked(l.cur)
			l.cur = l.newBatch()
		}
		nowSynced := !synced && l.conv.Synced()
		var swept []*gnmi.Notification
		if st.Swept > 0 {
			swept = l.conv.Swept()
		}
		l.bmu.Unlock()
		if st.Duplicates > 0 {
			dups.Add(float64(st.Duplicates))
		}
		if l.observe != nil {
			// The series the converter deleted at the sync_response: the
			// observer (the northbound's latest values) deletes them too.
			for _, n := range swept {
				l.observe(l.t.Name, &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}})
			}
		}
		if nowSynced {
			synced = true
			l.setSync(&Sync{Session: session, Point: syncPoint})
			l.setErr(nil)
			if l.standby.Load() {
				l.m.SetState(l.t.Name, "standby")
				l.log.Info("streaming on standby")
			} else {
				l.m.SetState(l.t.Name, "streaming")
				l.log.Info("streaming")
			}
			if l.onSync != nil {
				l.onSync()
			}
		}
	}
}

// newBatch starts a batch (under bmu).
func (l *Loop) newBatch() *rows.Batch {
	return &rows.Batch{ID: rows.NewBatchID(), Collector: l.collector, Target: l.t.Name, Epoch: l.epoch,
		Samples: make([]rows.Sample, 0, min(l.batchRows+256, max(64, l.lastRows+l.lastRows/4)))}
}

// releaseHeldLocked forgets the held batches and gives their rows back to
// the budget (under bmu).
func (l *Loop) releaseHeldLocked() {
	if l.budget != nil {
		l.budget.add(-l.heldRows, l.m.StandbyRows)
	}
	l.held, l.heldRows = nil, 0
}

// flushLocked sends b to the sink, or holds it on standby (under bmu).
func (l *Loop) flushLocked(b *rows.Batch) {
	if b == nil || b.Rows() == 0 && len(b.Series) == 0 {
		return
	}
	l.lastRows = len(b.Samples)
	if l.standby.Load() {
		l.held = append(l.held, b)
		l.heldRows += b.Rows()
		l.budget.add(b.Rows(), l.m.StandbyRows)
		for l.budget.over() && len(l.held) > 1 {
			old := l.held[0]
			l.held, l.heldRows = l.held[1:], l.heldRows-old.Rows()
			_, last := old.TSRange()
			l.discardedTS = max(l.discardedTS, last)
			l.budget.add(-old.Rows(), l.m.StandbyRows)
			l.m.StandbyDiscarded.Add(float64(old.Rows()))
		}
		return
	}
	if err := l.sink(b); err != nil {
		l.log.Warn("batch not queued", "err", err)
	}
}
