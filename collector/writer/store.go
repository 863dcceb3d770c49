package writer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/lease"
	"github.com/lhcnp/lhcnp/collector/rows"
)

// The columns written, in the schema's names (migrations/).
var (
	sampleColumns = []string{"ts", "series_id", "v_int", "v_float", "v_num", "v_bool", "v_text", "flags", "batch_id"}
)

const (
	ledgerSQL = `INSERT INTO ingest_ledger (batch_id, collector, target, epoch, rows, first_ts, last_ts)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (batch_id) DO NOTHING`
	ledgerStrictSQL = `INSERT INTO ingest_ledger (batch_id, collector, target, epoch, rows, first_ts, last_ts)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	ledgerCheckSQL = `SELECT target, rows, first_ts, last_ts FROM ingest_ledger WHERE batch_id = $1`
	fenceSQL       = `SELECT epoch FROM leases WHERE target = $1 AND owner = $2 FOR SHARE`
	// citusFenceSQL reads the epoch under lease.FenceLockSQL, without a
	// row lock on the reference table (lease.FenceLockSQL says why).
	citusFenceSQL = `SELECT epoch FROM leases WHERE target = $1 AND owner = $2`
	// seriesSQL adds the series; one already stored keeps its row but
	// for its YANG type and unit, which follow the model's revision the
	// collector runs (a revision that fixes a leaf's units reaches the
	// stored series at the collector's next start; a row without a type,
	// '', undescribed, leaves them as stored). One row per id: a
	// statement's upsert may not touch a row twice.
	seriesSQL = `INSERT INTO series AS s (id, target, path, schema_path, keys, yang_type, unit, first_seen)
SELECT DISTINCT ON (id) * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::text[], $8::timestamptz[])
  AS u(id, target, path, schema_path, keys, yang_type, unit, first_seen)
ORDER BY id
ON CONFLICT (id) DO UPDATE SET yang_type = EXCLUDED.yang_type, unit = EXCLUDED.unit
WHERE EXCLUDED.yang_type <> ''
  AND (s.yang_type, s.unit) IS DISTINCT FROM (EXCLUDED.yang_type, EXCLUDED.unit)`
	latestSQL = `INSERT INTO latest (series_id, ts, v_int, v_float, v_num, v_bool, v_text, flags)
SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[], $4::float8[], $5::numeric[], $6::bool[], $7::text[], $8::smallint[])
ON CONFLICT (series_id) DO UPDATE SET ts = EXCLUDED.ts, v_int = EXCLUDED.v_int, v_float = EXCLUDED.v_float,
  v_num = EXCLUDED.v_num, v_bool = EXCLUDED.v_bool, v_text = EXCLUDED.v_text, flags = EXCLUDED.flags
WHERE latest.ts <= EXCLUDED.ts`
	// deadSQL writes a dead letter once by its batch and row (the unique
	// key dead_letters_once of schema 15): a replay, or two collectors
	// replaying one batch at once, write nothing more.
	deadSQL = `INSERT INTO dead_letters (target, batch_id, "row", error) VALUES ($1, $2, $3::jsonb, $4) ON CONFLICT DO NOTHING`
)

func tsOf(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// begin opens the batch's transaction: the fencing check and the ledger
// row. stored is true when the ledger already has the batch.
func (w *Writer) begin(ctx context.Context, b *rows.Batch) (tx pgx.Tx, stored bool, err error) {
	tx, err = w.pool.Begin(ctx)
	if err != nil {
		return nil, false, err
	}
	if w.o.fencing {
		var epoch int64
		err := tx.QueryRow(ctx, fenceSQL, b.Target, b.Collector).Scan(&epoch)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && epoch != b.Epoch {
			tx.Rollback(ctx)
			return nil, false, errStale
		}
		if err != nil {
			tx.Rollback(ctx)
			return nil, false, err
		}
	}
	stored, err = w.claimLedger(ctx, tx, b)
	if err != nil || stored {
		tx.Rollback(ctx)
		return nil, stored, err
	}
	return tx, false, nil
}

// claimLedger writes b's ledger row in tx; stored is true when the ledger
// already has the batch (a replay). Another batch that drew the same id
// gets a new one.
func (w *Writer) claimLedger(ctx context.Context, tx pgx.Tx, b *rows.Batch) (stored bool, err error) {
	first, last := b.TSRange()
	var firstTS, lastTS any
	if len(b.Samples) > 0 {
		firstTS, lastTS = tsOf(first), tsOf(last)
	}
	for {
		tag, err := tx.Exec(ctx, ledgerSQL, b.ID, b.Collector, b.Target, b.Epoch, b.Rows(), firstTS, lastTS)
		if err != nil {
			return false, err
		}
		if tag.RowsAffected() == 1 {
			return false, nil
		}
		// The id is in the ledger: this batch (a replay) or another one
		// that drew the same random id.
		var target string
		var n int
		var f, l *time.Time
		if err := tx.QueryRow(ctx, ledgerCheckSQL, b.ID).Scan(&target, &n, &f, &l); err != nil {
			return false, err
		}
		if target == b.Target && n == b.Rows() && sameTS(f, firstTS) && sameTS(l, lastTS) {
			return true, nil
		}
		w.o.log.Warn("batch id collision, drawing another", "batch", b.ID, "target", b.Target)
		b.ID = rows.NewBatchID()
	}
}

func sameTS(got *time.Time, want any) bool {
	w, ok := want.(time.Time)
	if got == nil || !ok {
		return got == nil && !ok
	}
	return got.Equal(w.Truncate(time.Microsecond))
}

// storeGroup writes batches in one transaction, in three round trips
// (the latency of each one adds up on a loaded server): BEGIN with the
// fencing check of each target, the COPYs of all their rows, then a ledger
// row per batch, the new series and latest with COMMIT in one pipeline.
// The ledger insert has no ON CONFLICT: a batch already stored fails it
// with a unique violation, which aborts the transaction before COMMIT
// (errLedgerConflict: the caller stores the batches one by one, where the
// ledger tells a replay from an id collision).
func (w *Writer) storeGroup(ctx context.Context, bs []*rows.Batch) error {
	start := time.Now()
	return w.inPipeline(ctx, bs, func(pc *pgx.Conn, open *bool) error {
		return w.storeGroupOn(ctx, pc, open, bs, start)
	})
}

// storeGroupOn is storeGroup's transaction, fenced and open on pc.
func (w *Writer) storeGroupOn(ctx context.Context, pc *pgx.Conn, open *bool, bs []*rows.Batch, start time.Time) error {
	var samples, events int
	for _, b := range bs {
		samples += len(b.Samples)
		events += len(b.Events)
	}
	if samples > 0 {
		if _, err := copySamples(ctx, pc, bs); err != nil {
			return err
		}
	}
	bt := &pgx.Batch{}
	var series []rows.Series
	all := make([][]rows.Sample, 0, len(bs))
	for _, b := range bs {
		first, last := b.TSRange()
		var firstTS, lastTS any
		if len(b.Samples) > 0 {
			firstTS, lastTS = tsOf(first), tsOf(last)
		}
		bt.Queue(ledgerStrictSQL, b.ID, b.Collector, b.Target, b.Epoch, b.Rows(), firstTS, lastTS)
		series = append(series, b.Series...)
		all = append(all, b.Samples)
	}
	if len(series) > 0 {
		bt.Queue(seriesSQL, seriesArgs(series)...)
	}
	if samples > 0 {
		bt.Queue(latestSQL, latestArgs(all...)...)
	}
	var stored int
	if events > 0 {
		bt.Queue(eventsSQL, eventsArgs(bs)...).Exec(func(tag pgconn.CommandTag) error {
			stored = int(tag.RowsAffected())
			return nil
		})
	}
	bt.Queue("COMMIT")
	if err := pc.SendBatch(ctx, bt).Close(); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "ingest_ledger_pkey" {
			return errLedgerConflict
		}
		if commitInDoubt(err) {
			// The COMMIT was sent with the rest: it may have been
			// applied, unheard. The retry that finds a batch in the
			// ledger counts it (replayed); how many of its events the
			// INSERT stored, the table tells then.
			for _, b := range bs {
				w.ledgerOf(b.ID).try = &batchTry{samples: len(b.Samples), events: len(b.Events), storedEvents: -1}
			}
		}
		return err
	}
	*open = false
	for _, b := range bs {
		w.committed(b, start, collectormetrics.BatchStored, len(b.Samples))
	}
	w.eventsStored(events, stored)
	return nil
}

// inPipeline runs fn on a connection of the pool in a transaction opened
// with the fencing check of each of bs (fencedBegin); fn clears *open once
// it committed, else the transaction is rolled back.
func (w *Writer) inPipeline(ctx context.Context, bs []*rows.Batch, fn func(pc *pgx.Conn, open *bool) error) error {
	conn, err := w.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	pc := conn.Conn()
	open := true
	defer rollbackIfOpen(ctx, pc, &open)
	if err := w.fencedBegin(ctx, pc, bs); err != nil {
		return err
	}
	return fn(pc, &open)
}

// fencedBegin opens a transaction on pc with the fencing check of each of
// bs (their targets and epochs) in one round trip: errStale when a lease
// moved.
func (w *Writer) fencedBegin(ctx context.Context, pc *pgx.Conn, bs []*rows.Batch) error {
	bt := &pgx.Batch{}
	bt.Queue("BEGIN")
	epochs := make([]int64, len(bs))
	if w.o.fencing {
		w.queueFences(bt, bs, epochs)
	}
	if err := pc.SendBatch(ctx, bt).Close(); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return errStale
		}
		return err
	}
	for i, b := range bs {
		if w.o.fencing && epochs[i] != b.Epoch {
			return errStale
		}
	}
	return nil
}

// queueFences queues the fencing checks of bs, each reading its lease's
// epoch into epochs: on one node FOR SHARE on the lease row, on Citus the
// targets' advisory locks (lease.FenceLockSQL, taken in the order of the
// targets: two writers never wait for each other's) and a plain read.
func (w *Writer) queueFences(bt *pgx.Batch, bs []*rows.Batch, epochs []int64) {
	sql := fenceSQL
	if w.citus.on {
		sql = citusFenceSQL
		targets := make([]string, 0, len(bs))
		for _, b := range bs {
			targets = append(targets, b.Target)
		}
		slices.Sort(targets)
		for _, t := range slices.Compact(targets) {
			bt.Queue(lease.FenceLockSQL, t)
		}
	}
	for i, b := range bs {
		bt.Queue(sql, b.Target, b.Collector).QueryRow(func(r pgx.Row) error { return r.Scan(&epochs[i]) })
	}
}

// rollbackIfOpen rolls back the transaction a pipeline left open on pc
// (*open: an error came before COMMIT); a connection that cannot is closed,
// and the pool drops it.
func rollbackIfOpen(ctx context.Context, pc *pgx.Conn, open *bool) {
	if !*open {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := pc.Exec(rctx, "ROLLBACK"); err != nil {
		pc.Close(rctx)
	}
}

// errLedgerConflict: a batch of the group is in the ledger already.
var errLedgerConflict = errors.New("writer: batch already in the ledger")

// store writes one batch (storeGroup of one); a ledger conflict is settled
// as a replay or an id collision.
func (w *Writer) store(ctx context.Context, b *rows.Batch) error {
	err := w.storeGroup(ctx, []*rows.Batch{b})
	if errors.Is(err, errLedgerConflict) {
		return w.replayOrCollision(ctx, b)
	}
	return err
}

// errRetryNow asks writeRetrying to store the batch again at once (it got
// a new id).
var errRetryNow = errors.New("writer: batch id redrawn")

// replayOrCollision settles a ledger conflict: the same batch (replayed
// from the spill) is done; another batch that drew the same id gets a new
// one.
func (w *Writer) replayOrCollision(ctx context.Context, b *rows.Batch) error {
	start := time.Now()
	first, last := b.TSRange()
	var firstTS, lastTS any
	if len(b.Samples) > 0 {
		firstTS, lastTS = tsOf(first), tsOf(last)
	}
	var target string
	var n int
	var f, l *time.Time
	if err := w.pool.QueryRow(ctx, ledgerCheckSQL, b.ID).Scan(&target, &n, &f, &l); err != nil {
		return err
	}
	if target == b.Target && n == b.Rows() && sameTS(f, firstTS) && sameTS(l, lastTS) {
		return w.replayed(ctx, b, start)
	}
	w.o.log.Warn("batch id collision, drawing another", "batch", b.ID, "target", b.Target)
	w.ledgerOf(b.ID).try = nil // another batch's row: no try of this one committed
	b.ID = rows.NewBatchID()
	return errRetryNow
}

// batchTry is what a try of a batch wrote in a transaction whose COMMIT
// lost its answer: its samples stored, its events offered (all but those
// dead-lettered) and stored (-1: unknown, the INSERT's answer lost too),
// its rows refused and of those the dead letters it wrote (the others kept
// in the refused file, counted then). Of a stale batch's merge, merge is
// what it merged (commitMerge), counted as the merge counts it.
type batchTry struct {
	samples              int
	events, storedEvents int
	deadRows             int
	dead                 []deadRow
	merge                *staleResult
}

// replayed counts a batch the ledger holds already (one node). A try of
// this writer whose COMMIT lost its answer committed it (ledgerOf): its
// rows are counted now, once, as stored by this writer (batches_total
// stored or partial); its events are those the table holds under the
// batch's id (an event met twice is under another batch's: a conflict).
// Else another process stored it (a replay after a crash): counted as
// replayed, its rows the first run's.
func (w *Writer) replayed(ctx context.Context, b *rows.Batch, start time.Time) error {
	l := w.ledgerOf(b.ID)
	if l.try == nil {
		w.o.m.Batches.WithLabelValues(collectormetrics.BatchReplayed).Inc()
		return nil
	}
	t := *l.try // counted below, once the events are known
	if t.storedEvents < 0 {
		t.storedEvents = 0
		if len(b.Events) > 0 {
			n, err := w.triedEvents(ctx, b)
			if err != nil {
				return err
			}
			t.storedEvents = n
		}
	}
	l.try = nil
	outcome := collectormetrics.BatchStored
	if t.deadRows > 0 {
		outcome = collectormetrics.BatchPartial
	}
	w.committed(b, start, outcome, t.samples)
	w.deadLettered(b, t.dead)
	w.eventsStored(t.events, t.storedEvents)
	return nil
}

// committed counts a committed batch and its samples (the caller counts its
// events: eventsStored).
func (w *Writer) committed(b *rows.Batch, start time.Time, outcome string, samples int) {
	now := time.Now()
	w.o.m.RoundTrip.Observe(now.Sub(start).Seconds())
	w.o.m.Batches.WithLabelValues(outcome).Inc()
	w.o.m.RowsWritten.WithLabelValues(collectormetrics.TableSamples).Add(float64(samples))
	nowNS := now.UnixNano()
	for i := range b.Samples {
		w.o.m.Lag.Observe(float64(nowNS-b.Samples[i].TS) / 1e9)
	}
}

// writeSamples stores samples, the series they need and their latest
// values.
func writeSamples(ctx context.Context, tx pgx.Tx, b *rows.Batch, series []rows.Series, samples []rows.Sample) error {
	if len(series) > 0 {
		if _, err := tx.Exec(ctx, seriesSQL, seriesArgs(series)...); err != nil {
			return err
		}
	}
	if len(samples) == 0 {
		return nil
	}
	if _, err := copySamples(ctx, tx.Conn(), []*rows.Batch{{ID: b.ID, Samples: samples}}); err != nil {
		return err
	}
	return writeLatest(ctx, tx, samples)
}

// seriesArgs are the arrays of seriesSQL.
func seriesArgs(series []rows.Series) []any {
	n := len(series)
	ids, keys := make([]int64, n), make([]string, n)
	targets, paths, spaths, types, units := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	first := make([]time.Time, n)
	for i, s := range series {
		ids[i], targets[i], paths[i], spaths[i], types[i], units[i], first[i] = s.ID, s.Target, s.Path, s.SchemaPath, s.YangType, s.Unit, tsOf(s.FirstSeen)
		keys[i] = keysJSON(s.Keys)
	}
	return []any{ids, targets, paths, spaths, keys, types, units, first}
}

// writeLatest upserts the last sample of each series (a later one already
// there wins).
func writeLatest(ctx context.Context, tx pgx.Tx, samples []rows.Sample) error {
	_, err := tx.Exec(ctx, latestSQL, latestArgs(samples)...)
	return err
}

// latestArgs are the arrays of latestSQL: the last sample of each series
// in the samples of one or more batches (not copied into one slice).
func latestArgs(batches ...[]rows.Sample) []any {
	var total int
	for _, samples := range batches {
		total += len(samples)
	}
	last := make(map[int64]*rows.Sample, total/4+1)
	order := make([]int64, 0, total/4+1)
	for _, samples := range batches {
		for i := range samples {
			s := &samples[i]
			prev, ok := last[s.SeriesID]
			if !ok {
				order = append(order, s.SeriesID)
			}
			if !ok || s.TS >= prev.TS {
				last[s.SeriesID] = s
			}
		}
	}
	return sampleArrays(len(order), func(k int) *rows.Sample { return last[order[k]] })
}

// sampleArrays are n samples (the k-th is at(k)) as the arrays of an
// unnest: series ids, timestamps, v_int, v_float, v_num, v_bool, v_text
// (a value column set, the others NULL) and flags.
func sampleArrays(n int, at func(k int) *rows.Sample) []any {
	ids, flags := make([]int64, n), make([]int16, n)
	ts := make([]time.Time, n)
	ints, floats, nums, bools, texts := make([]*int64, n), make([]*float64, n), make([]*string, n), make([]*bool, n), make([]*string, n)
	for k := range n {
		s := at(k)
		ids[k], ts[k], flags[k] = s.SeriesID, tsOf(s.TS), int16(s.Flags)
		switch s.Kind {
		case rows.ValInt:
			ints[k] = &s.Int
		case rows.ValFloat:
			floats[k] = &s.Float
		case rows.ValNum:
			nums[k] = &s.Text
		case rows.ValBool:
			v := s.Int != 0
			bools[k] = &v
		case rows.ValText:
			texts[k] = &s.Text
		}
	}
	return []any{ids, ts, ints, floats, nums, bools, texts, flags}
}

func keysJSON(keys []rows.Key) string {
	m := make(map[string]string, len(keys))
	for _, k := range keys {
		m[k.Name] = k.Value
	}
	data, _ := json.Marshal(m)
	return string(data)
}

// storeSafe stores a batch that PostgreSQL refused: samples and events are
// written in halves under savepoints, down to single rows; a single row
// refused goes to dead_letters with the error (or, when PostgreSQL refuses
// that too, to the refused file: writeDeadLetters). All in one transaction
// with the ledger row, so a replay still finds the batch stored.
func (w *Writer) storeSafe(ctx context.Context, b *rows.Batch) error {
	start := time.Now()
	tx, stored, err := w.begin(ctx, b)
	if err != nil {
		return err
	}
	if stored {
		return w.replayed(ctx, b, start)
	}
	defer tx.Rollback(ctx)
	seriesByID := seriesMap(b.Series)
	var dead []deadRow
	var okSamples, okEvents, storedEvents int
	err = splitOut(ctx, tx, b.Samples, func(tx pgx.Tx, samples []rows.Sample) (func(), error) {
		if err := writeSamples(ctx, tx, b, seriesOf(samples, seriesByID), samples); err != nil {
			return nil, err
		}
		return func() { okSamples += len(samples) }, nil
	}, func(s rows.Sample, err error) error {
		dead = append(dead, deadRow{table: "samples", row: sampleRow(s, seriesByID), err: err})
		return nil
	})
	if err != nil {
		return err
	}
	err = splitOutEvents(ctx, tx, b, writeEvents, func(offered, stored int) {
		okEvents, storedEvents = okEvents+offered, storedEvents+stored
	}, func(e rows.Event, err error) error {
		dead = append(dead, deadRow{table: "events", row: e, err: err})
		return nil
	})
	if err != nil {
		return err
	}
	letters, err := w.writeDeadLetters(ctx, tx, b, dead)
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		if commitInDoubt(err) {
			// It may have committed: the retry that finds the batch in
			// the ledger counts what this try wrote (replayed).
			w.ledgerOf(b.ID).try = &batchTry{samples: okSamples, events: okEvents, storedEvents: storedEvents, deadRows: len(dead), dead: letters}
		}
		return err
	}
	outcome := collectormetrics.BatchStored
	if len(dead) > 0 {
		outcome = collectormetrics.BatchPartial
		w.deadLettered(b, letters)
	}
	w.committed(b, start, outcome, okSamples)
	w.eventsStored(okEvents, storedEvents)
	return nil
}

// writeDeadLetters writes the dead letters of b's refused rows in tx, each
// under a savepoint: one PostgreSQL refuses too (a permanent error) is kept
// in the refused file (keepRefused), the others written. letters are those
// written.
func (w *Writer) writeDeadLetters(ctx context.Context, tx pgx.Tx, b *rows.Batch, dead []deadRow) (letters []deadRow, err error) {
	for _, d := range dead {
		err := savepoint(ctx, tx, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, deadSQL, b.Target, b.ID, d.json(), d.err.Error())
			return err
		})
		switch {
		case err == nil:
			letters = append(letters, d)
		case Classify(err) == Temporary:
			return nil, fmt.Errorf("dead letter: %w", err)
		default:
			w.keepRefused(b, d, err)
		}
	}
	return letters, nil
}

func savepoint(ctx context.Context, tx pgx.Tx, fn func(pgx.Tx) error) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(sp); err != nil {
		sp.Rollback(ctx)
		return err
	}
	return sp.Commit(ctx)
}

// splitOut writes rs in tx with write under a savepoint; when PostgreSQL
// refuses them (a permanent error), in halves, down to single rows: a
// single row refused is handed to refused with its error. What write
// returns is run once its savepoint is released (the rows are in tx: count
// them). A temporary error is returned.
func splitOut[T any](ctx context.Context, tx pgx.Tx, rs []T, write func(tx pgx.Tx, rs []T) (done func(), err error),
	refused func(r T, err error) error) error {
	if len(rs) == 0 {
		return nil
	}
	var done func()
	err := savepoint(ctx, tx, func(tx pgx.Tx) error {
		var err error
		done, err = write(tx, rs)
		return err
	})
	switch {
	case err == nil:
		done()
		return nil
	case Classify(err) == Temporary:
		return err
	case len(rs) == 1:
		return refused(rs[0], err)
	}
	h := len(rs) / 2
	if err := splitOut(ctx, tx, rs[:h], write, refused); err != nil {
		return err
	}
	return splitOut(ctx, tx, rs[h:], write, refused)
}

// splitOutEvents is splitOut of b's events, written with write: stored is
// told of each part written, its events offered and those stored.
func splitOutEvents(ctx context.Context, tx pgx.Tx, b *rows.Batch, write eventsWriter, stored func(offered, stored int),
	refused func(e rows.Event, err error) error) error {
	return splitOut(ctx, tx, b.Events, func(tx pgx.Tx, events []rows.Event) (func(), error) {
		n, err := write(ctx, tx, b.ID, events)
		if err != nil {
			return nil, err
		}
		return func() { stored(len(events), n) }, nil
	}, refused)
}

// seriesMap is series by id.
func seriesMap(series []rows.Series) map[int64]rows.Series {
	m := make(map[int64]rows.Series, len(series))
	for _, s := range series {
		m[s.ID] = s
	}
	return m
}

// seriesOf is the series of byID that samples need, once each.
func seriesOf(samples []rows.Sample, byID map[int64]rows.Series) []rows.Series {
	var need []rows.Series
	seen := map[int64]bool{}
	for _, s := range samples {
		if sr, ok := byID[s.SeriesID]; ok && !seen[s.SeriesID] {
			need, seen[s.SeriesID] = append(need, sr), true
		}
	}
	return need
}

type deadRow struct {
	table string
	row   any
	err   error
}

// json renders the row for the jsonb column. PostgreSQL's jsonb refuses
// \u0000 (often the very reason the row was refused), so it is written as
// the six characters \u0000.
func (d deadRow) json() string {
	data, err := json.Marshal(map[string]any{"table": d.table, "row": d.row})
	if err != nil {
		return fmt.Sprintf(`{"table":%q,"error":"unencodable row"}`, d.table)
	}
	return strings.ReplaceAll(string(data), `\u0000`, `\\u0000`)
}

type sampleJSON struct {
	TS       string `json:"ts"`
	SeriesID int64  `json:"series_id"`
	Path     string `json:"path,omitempty"`
	Value    string `json:"value"`
	Kind     uint8  `json:"kind"`
	Flags    int16  `json:"flags"`
}

func sampleRow(s rows.Sample, series map[int64]rows.Series) sampleJSON {
	return sampleJSON{TS: tsOf(s.TS).Format(time.RFC3339Nano), SeriesID: s.SeriesID, Path: series[s.SeriesID].Path,
		Value: s.FormatValue(), Kind: uint8(s.Kind), Flags: int16(s.Flags)}
}
