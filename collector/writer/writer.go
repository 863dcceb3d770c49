// Package writer is the collector's write path, off the receive path: a
// bounded in-memory queue of batches, then the disk spill, then counted
// drops; one goroutine takes batches in order and stores each in one
// PostgreSQL transaction (COPY into samples and events, series inserted on
// first sight, latest upserted, and the ingest_ledger row with the lease
// epoch). A ledger conflict means the batch is already stored (a replay
// after a crash): it is skipped. A batch whose epoch is no longer its
// target's (the lease moved) is merged instead (stale.go): what it holds
// that is not stored yet is stored, never a second copy. Errors are classified: temporary ones
// (connection, serialization, shutdown) are retried with jittered
// exponential back-off; a bad row is split out of the batch (binary search
// under savepoints) into dead_letters and the rest is stored.
//
// It depends on rows/, spill/, metrics/ and pgx; it knows nothing of gNMI.
package writer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/spill"
)

// ErrDropped is returned by Enqueue when the batch could be neither queued
// nor spilled; its rows are counted under a drop reason.
var ErrDropped = errors.New("writer: batch dropped")

// errStale: the batch's lease epoch is no longer the target's (it is
// merged: storeStale).
var errStale = errors.New("writer: stale lease epoch")

type options struct {
	queueRows int
	groupRows int
	retryMax  time.Duration
	fencing   bool
	log       *slog.Logger
	m         *collectormetrics.Metrics
	onCommit  func(b *rows.Batch)
	// refusedFile keeps the rows whose dead letter PostgreSQL refused
	// (refused.go); past refusedWarnBytes (0: never) a warning is logged.
	refusedFile      string
	refusedWarnBytes int64
}

// Option configures a Writer.
type Option func(*options)

// WithQueueRows bounds the rows held in memory (default 200 000).
func WithQueueRows(n int) Option { return func(o *options) { o.queueRows = n } }

// WithGroupRows sets how many rows of a backlog one transaction may take
// (group commit; default 20 000). 0 stores one batch per transaction.
func WithGroupRows(n int) Option { return func(o *options) { o.groupRows = n } }

// WithRetryMax sets the longest back-off between failed writes, jitter
// included (default 10 s).
func WithRetryMax(d time.Duration) Option { return func(o *options) { o.retryMax = d } }

// WithFencing checks every batch's epoch against the leases table in its
// transaction (scale-out); a stale batch is merged (storeStale): only what
// is not stored yet, and nothing the owner may still store.
func WithFencing(on bool) Option { return func(o *options) { o.fencing = on } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithMetrics sets the metrics to update.
func WithMetrics(m *collectormetrics.Metrics) Option { return func(o *options) { o.m = m } }

// WithOnCommit calls fn after each batch is stored (or found stored).
func WithOnCommit(fn func(b *rows.Batch)) Option { return func(o *options) { o.onCommit = fn } }

// Writer is the queue and its writing goroutine.
type Writer struct {
	pool  *pgxpool.Pool
	spill *spill.Spill
	o     options

	mu      sync.Mutex
	mem     []*rows.Batch
	memRows int
	// spilled: batches went to the spill since it was last empty, so new
	// ones must follow them there (first in, first out).
	spilled bool
	closed  bool
	wake    chan struct{}
	// pending counts batches enqueued and not yet finished, per target.
	pending map[string]int
	idle    *sync.Cond

	citus citusState // used by Run's goroutine only
	// refusedWarned: the refused file's size was last seen past
	// o.refusedWarnBytes, and that was logged (refusedSize). Set by New,
	// then used by Run's goroutine only.
	refusedWarned bool
	// tries: what this writer's tries of a batch wrote that the database
	// cannot tell from another process's, by batch id (batchLedger). Used
	// by Run's goroutine only, forgotten when the group is done
	// (forgetGroup) but for the batches requeued.
	tries map[int64]*batchLedger
}

// batchLedger is what the tries of one batch wrote and did not count: the
// retry that finds it in the database counts it, stored by this writer,
// not a replay, nor events met twice.
type batchLedger struct {
	// try: on one node, a try that sent COMMIT and heard no answer (it
	// may have committed), with what it wrote; on both, a stale batch's
	// merge that did (commitMerge). The retry that finds the batch in the
	// ledger counts it (replayed, mergeStale).
	try *batchTry
	// kept: the rows kept in the refused file (keepRefused), by their
	// JSON, which a retry does not keep again; keptRead: those the file
	// held already, another process's, were read into kept (keptBefore).
	kept     map[string]bool
	keptRead bool
	// On Citus, by ledger shard key: parts an earlier try of the batch
	// alone committed and did not count (storeCitus counts a batch's
	// samples once it is done), those it committed before it failed and
	// the one whose COMMIT it heard no answer of (storeCitus,
	// mergeStaleCitus); and the parts the group committed before it
	// failed (groupParts), which the fallback, a batch at a time, counts.
	parts      map[int64]partTry
	groupParts map[int64]bool
	// groupEvents: the group stored the events, and counted them.
	groupEvents bool
	// eventsTried: a try may have stored events without hearing it
	// (inDoubt), or stored some one by one before it failed, of which it
	// counted eventsCounted: the next try finds them in the table, its
	// own, not events met twice, and counts the others (triedEvents).
	eventsTried   bool
	eventsCounted int
	// deadTried: dead letters, by their JSON, whose INSERT may have
	// committed unheard: the retry finds them written and counts them
	// (storeEventsCitus).
	deadTried map[string]bool
	// carried: requeued when ctx ended, not settled (forgetGroup).
	carried bool
}

// ledgerOf is batch id's entry of w.tries, made on first use.
func (w *Writer) ledgerOf(id int64) *batchLedger {
	l := w.tries[id]
	if l == nil {
		l = &batchLedger{kept: map[string]bool{}, parts: map[int64]partTry{}, groupParts: map[int64]bool{}, deadTried: map[string]bool{}}
		w.tries[id] = l
	}
	return l
}

// New returns a writer storing into pool, spilling into sp.
func New(pool *pgxpool.Pool, sp *spill.Spill, opts ...Option) *Writer {
	o := options{queueRows: 200_000, groupRows: 20_000, retryMax: 10 * time.Second, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	if o.m == nil {
		o.m = collectormetrics.New()
	}
	w := &Writer{pool: pool, spill: sp, o: o, wake: make(chan struct{}, 1), pending: map[string]int{},
		tries: map[int64]*batchLedger{}}
	w.idle = sync.NewCond(&w.mu)
	w.spilled = sp.Pending() > 0
	w.gauges()
	w.refusedAtStart()
	return w
}

// Enqueue hands a batch to the writer without blocking on the database:
// into memory while the queue has room and the spill is empty, else into
// the spill (acknowledged once written there), else it is dropped and
// counted (ErrDropped).
func (w *Writer) Enqueue(b *rows.Batch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.spillLocked(b)
	}
	if !w.spilled && w.memRows+b.Rows() <= w.o.queueRows {
		w.mem = append(w.mem, b)
		w.memRows += b.Rows()
		w.pending[b.Target]++
		w.gauges()
		w.signal()
		return nil
	}
	return w.spillLocked(b)
}

func (w *Writer) spillLocked(b *rows.Batch) error {
	err := w.spill.Append(rows.AppendBatch(nil, b))
	if err != nil {
		reason := collectormetrics.DropSpillError
		if errors.Is(err, spill.ErrFull) {
			reason = collectormetrics.DropSpillFull
		}
		w.o.m.DroppedRows.WithLabelValues(reason).Add(float64(b.Rows()))
		w.o.log.Warn("batch dropped", "target", b.Target, "rows", b.Rows(), "reason", reason, "err", err)
		return fmt.Errorf("%w: %s: %v", ErrDropped, reason, err)
	}
	w.spilled = true
	w.pending[b.Target]++
	w.gauges()
	w.signal()
	return nil
}

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Writer) gauges() {
	w.o.m.QueueRows.Set(float64(w.memRows))
	w.o.m.QueueBatches.Set(float64(len(w.mem)))
	w.o.m.SpillBytes.Set(float64(w.spill.Bytes()))
	w.o.m.SpillBatches.Set(float64(w.spill.Pending()))
}

// Pending returns the batches of a target enqueued and not yet stored.
func (w *Writer) Pending(target string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending[target]
}

// WaitTarget waits until no batch of target is pending or ctx ends.
func (w *Writer) WaitTarget(ctx context.Context, target string) error {
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		w.idle.Broadcast()
		w.mu.Unlock()
	})
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.pending[target] > 0 && ctx.Err() == nil {
		w.idle.Wait()
	}
	return ctx.Err()
}

// Close stops taking batches into memory (later ones go to the spill); Run
// returns once the queue and the spill are empty.
func (w *Writer) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.signal()
}

// item is the next batch and where it came from.
type item struct {
	b   *rows.Batch
	rec spill.Record
	mem bool
}

func (w *Writer) next() (item, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.mem) > 0 {
		b := w.mem[0]
		w.mem[0] = nil
		w.mem = w.mem[1:]
		w.memRows -= b.Rows()
		w.gauges()
		return item{b: b, mem: true}, true, nil
	}
	for {
		rec, ok, err := w.spill.Next()
		if err != nil {
			// Corrupt records: counted by the spill; the rows are unknown.
			w.o.m.DroppedRows.WithLabelValues(collectormetrics.DropSpillCorrupt).Add(1)
			w.o.log.Error("spill", "err", err)
			continue
		}
		if !ok {
			w.spilled = false
			w.spill.Flush()
			w.gauges()
			return item{}, false, nil
		}
		b, err := rows.DecodeBatch(rec.Payload)
		if err != nil {
			w.spill.Done(rec)
			w.o.m.DroppedRows.WithLabelValues(collectormetrics.DropSpillCorrupt).Add(1)
			w.o.log.Error("spill record", "err", err)
			continue
		}
		return item{b: b, rec: rec}, true, nil
	}
}

func (w *Writer) finish(it item) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !it.mem {
		w.spill.Done(it.rec)
	}
	if w.pending[it.b.Target]--; w.pending[it.b.Target] <= 0 {
		delete(w.pending, it.b.Target)
	}
	w.gauges()
	w.idle.Broadcast()
}

// Run stores batches until Close was called and everything is stored, or
// ctx ends; then the batches still in memory go to the spill, so nothing
// acknowledged by Enqueue is lost.
func (w *Writer) Run(ctx context.Context) error {
	defer w.spillMemory()
	bo := w.newBackOff()
	for {
		it, ok, err := w.next()
		if err != nil {
			return err
		}
		if !ok {
			w.mu.Lock()
			done := w.closed && len(w.mem) == 0 && w.spill.Pending() == 0
			w.mu.Unlock()
			if done {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-w.wake:
			}
			continue
		}
		group := []item{it}
		n := it.b.Rows()
		for n < w.o.groupRows {
			more, ok, err := w.next()
			if err != nil || !ok {
				break
			}
			group = append(group, more)
			n += more.b.Rows()
		}
		stored, err := w.writeGroup(ctx, group, bo)
		for _, it := range group[:stored] {
			w.finish(it)
			if w.o.onCommit != nil {
				w.o.onCommit(it.b)
			}
		}
		if err != nil {
			// ctx ended mid-retry: keep the rest for the next run.
			for i := len(group) - 1; i >= stored; i-- {
				w.requeue(group[i])
			}
			return nil
		}
	}
}

// writeGroup stores the batches of a backlog in one transaction (group
// commit: one BEGIN, one COPY, one COMMIT for all); on anything but a
// temporary error it falls back to one transaction per batch, where replays,
// stale epochs and bad rows are settled batch by batch.
// It returns how many batches of the group (a prefix) are stored.
func (w *Writer) writeGroup(ctx context.Context, group []item, bo *backoff.ExponentialBackOff) (stored int, err error) {
	defer func() { w.forgetGroup(group, stored) }()
	// On Citus the group is stored a transaction per shard
	// (storeCitusGroup): one transaction would span every worker.
	citus, cerr := w.isCitus(ctx)
	if len(group) > 1 && cerr == nil {
		bs := make([]*rows.Batch, len(group))
		for i, it := range group {
			bs[i] = it.b
		}
		store := w.storeGroup
		if citus {
			store = w.storeCitusGroup
		}
		for {
			err := store(ctx, bs)
			if err == nil {
				w.o.m.DBUp.Set(1)
				bo.Reset()
				return len(group), nil
			}
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			if errors.Is(err, errStale) || errors.Is(err, errLedgerConflict) || errors.Is(err, errSeriesRefused) || Classify(err) == Permanent {
				break
			}
			w.o.m.WriteErrors.WithLabelValues(Temporary.String()).Inc()
			w.o.m.DBUp.Set(0)
			d := bo.NextBackOff()
			w.o.log.Warn("write failed, retrying", "batches", len(bs), "in", d, "err", err)
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			case <-t.C:
			}
		}
	}
	for i, it := range group {
		if err := w.writeRetrying(ctx, it.b, bo); err != nil {
			return i, err
		}
	}
	return len(group), nil
}

// forgetGroup forgets what the tries of a group's batches wrote, once
// writeGroup is done with them: the first stored of them are settled; the
// others, requeued because ctx ended (a drain whose time is up), are
// carried, since a try of theirs may have committed (its COMMIT's answer
// lost, a part or the group's shard stored before a failure): their retry
// by a later Run counts what it did, as this Run's retry would have, not a
// replay. A batch the spill hands to the next process is a replay there:
// what this process's tries committed is counted by no one
// (docs/collector.md, the write path).
func (w *Writer) forgetGroup(group []item, stored int) {
	for _, it := range group[stored:] {
		if l := w.tries[it.b.ID]; l != nil {
			l.carried = true
		}
	}
	for _, it := range group[:stored] {
		delete(w.tries, it.b.ID)
	}
	maps.DeleteFunc(w.tries, func(_ int64, l *batchLedger) bool { return !l.carried })
}

func (w *Writer) requeue(it item) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if it.mem {
		w.mem = append([]*rows.Batch{it.b}, w.mem...)
		w.memRows += it.b.Rows()
		return
	}
	w.spill.Requeue(it.rec)
}

// spillMemory moves the batches left in memory to the spill (shutdown).
func (w *Writer) spillMemory() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.mem {
		w.pending[b.Target]--
		if err := w.spillLocked(b); err != nil {
			w.o.log.Error("shutdown: batch not spilled", "target", b.Target, "err", err)
		}
	}
	w.mem, w.memRows = nil, 0
	w.gauges()
}

func (w *Writer) newBackOff() *backoff.ExponentialBackOff {
	return NewBackOff(50*time.Millisecond, w.o.retryMax)
}

// writeRetrying stores b, retrying temporary errors until ctx ends.
func (w *Writer) writeRetrying(ctx context.Context, b *rows.Batch, bo *backoff.ExponentialBackOff) error {
	// A batch a merge of this writer may have stored (its COMMIT's answer
	// lost, the batch carried to this Run) is stale: merged again, the
	// merge finds it in the ledger and counts what it did. On Citus
	// storeCitus would find its parts in the ledger before its fencing
	// check read a later epoch of this collector's, and count a replay.
	l := w.tries[b.ID]
	safe, stale := false, l != nil && l.try != nil && l.try.merge != nil
	for {
		var err error
		switch {
		case stale:
			err = w.storeStale(ctx, b)
		case safe:
			err = w.storeSafe(ctx, b)
		default:
			var citus bool
			if citus, err = w.isCitus(ctx); err == nil && citus {
				err = w.storeCitus(ctx, b)
			} else if err == nil {
				err = w.store(ctx, b)
			}
		}
		switch {
		case err == nil:
			w.o.m.DBUp.Set(1)
			bo.Reset()
			return nil
		case errors.Is(err, errRetryNow):
			continue
		case errors.Is(err, errStale):
			// The lease moved: merge what the batch holds that is not
			// stored (storeStale), from now on.
			stale = true
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		}
		class := Classify(err)
		w.o.m.WriteErrors.WithLabelValues(class.String()).Inc()
		// On Citus, storeCitus splits out bad rows itself.
		if class == Permanent && !safe && !w.citus.on {
			w.o.log.Warn("batch refused, splitting out the bad rows", "target", b.Target, "batch", b.ID, "err", err)
			safe = true
			continue
		}
		w.o.m.DBUp.Set(0)
		d := bo.NextBackOff()
		w.o.log.Warn("write failed, retrying", "target", b.Target, "batch", b.ID, "in", d, "err", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Class is how an error of PostgreSQL is handled.
type Class uint8

// The classes.
const (
	// Temporary: retry the same batch later (connection lost, server
	// shutting down, serialization failure, deadlock, resources).
	Temporary Class = iota
	// Permanent: a row is refused (data exception, constraint, a
	// statement the server cannot run); retrying cannot help.
	Permanent
)

func (c Class) String() string {
	if c == Permanent {
		return collectormetrics.WriteErrorPermanent
	}
	return collectormetrics.WriteErrorTemporary
}

// Classify chooses the class of an error from its SQLSTATE: classes 22
// (data exception), 23 (integrity constraint), 42 (syntax or access rule)
// and 2200x-like row errors are permanent; everything else (08 connection,
// 40 transaction rollback, 53 resources, 57 operator intervention, 58
// system, network errors without a SQLSTATE) is temporary, except a COPY
// the client aborted because a row could not be encoded (57014 with
// "COPY from stdin failed"), which is a bad row.
func Classify(err error) Class {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return Temporary
	}
	switch pe.Code[:2] {
	case "22", "23", "42", "2F", "P0":
		return Permanent
	}
	if pe.Code == "57014" && strings.HasPrefix(pe.Message, "COPY from stdin failed") {
		// pgx aborted the COPY itself: a row could not be encoded.
		return Permanent
	}
	return Temporary
}
