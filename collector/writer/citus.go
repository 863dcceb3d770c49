package writer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/rows"
)

// The write path on Citus (migration 011, docs/scaling.md Step 3): samples,
// latest and ingest_ledger are distributed by series, co-located. A batch
// is split by shard, and each part is stored in a transaction of its own
// with its own ledger row, keyed (shard_key, batch_id) with shard_key a
// series id of the part: every statement of that transaction goes to one
// shard group on one worker, so Citus commits it there without a two-phase
// commit. A part found in the ledger (a replay) is skipped; the others are
// stored, so a batch whose parts a crash cut in two is completed by the
// replay, never doubled. New series (a reference table, on every node) and
// the events (distributed by target, stored once by their identity) are
// written in transactions of their own, before and after the parts; both
// are idempotent.

const (
	citusModeSQL = `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')
	AND EXISTS (SELECT 1 FROM pg_class WHERE relname = 'pg_dist_partition' AND relnamespace = 'pg_catalog'::regnamespace)`
	citusSamplesSQL = `SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'public.samples'::regclass)`
	shardIDsSQL     = `SELECT id, get_shard_id_for_distribution_column('public.samples', id) FROM unnest($1::bigint[]) id`
	ledgerPartSQL   = `INSERT INTO ingest_ledger (shard_key, batch_id, collector, target, epoch, rows, first_ts, last_ts)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	ledgerPartCheckSQL = `SELECT target, rows, first_ts, last_ts FROM ingest_ledger WHERE shard_key = $1 AND batch_id = $2`
)

// citusCacheMax bounds each of citusState's caches: a cache that reaches
// it starts again empty (both are caches: a series' shard is asked again,
// a series offered again is ON CONFLICT DO NOTHING). Without a bound they
// grew with every series a long run ever saw: the lab's flow-table entries,
// about 18,000 series a minute at its default speed, trimmed from the
// database by its retention but not from memory.
var citusCacheMax = 1 << 18

// citusState is what the writer knows of the database's distribution; only
// the goroutine of Run uses it.
type citusState struct {
	known  bool            // on is settled
	on     bool            // samples is distributed by Citus
	shard  map[int64]int64 // series id -> shard id of samples
	series map[int64]bool  // series stored by this writer
}

// partTry is what a try committed of a part: its samples stored, its
// rows dead-lettered, and of those the dead letters not counted yet (a
// COMMIT whose answer was lost).
type partTry struct {
	samples, deadRows int
	uncounted         []deadRow
}

// inDoubt reports whether a statement or COMMIT that failed with err may
// have committed: a temporary error can come after the commit (the
// connection cut, the node stopped, before the answer), unless pgx sent
// nothing (pgconn.SafeToRetry); a permanent one is the statement refused.
func inDoubt(err error) bool {
	return Classify(err) == Temporary && !pgconn.SafeToRetry(err)
}

// commitInDoubt reports whether a transaction whose COMMIT failed with err
// may have committed: unless PostgreSQL refused a statement of it, yes. Not
// inDoubt: pgx (v5.12.0) reports a statement without arguments (tx.Commit's
// "commit") whose connection failed while it read the answer as a closed
// connection's lock error, safe to retry as if nothing had been sent. The
// retry asks the ledger, which the transaction wrote: its row is there
// only if it committed.
func commitInDoubt(err error) bool {
	return Classify(err) == Temporary
}

// isCitus reports whether samples is distributed, asking the database the
// first time.
func (w *Writer) isCitus(ctx context.Context) (bool, error) {
	if w.citus.known {
		return w.citus.on, nil
	}
	var ext, on bool
	if err := w.pool.QueryRow(ctx, citusModeSQL).Scan(&ext); err != nil {
		return false, err
	}
	if ext {
		if err := w.pool.QueryRow(ctx, citusSamplesSQL).Scan(&on); err != nil {
			return false, err
		}
	}
	w.citus = citusState{known: true, on: on, shard: map[int64]int64{}, series: map[int64]bool{}}
	if on {
		w.o.log.Info("samples distributed by Citus: batches are stored split by shard")
	}
	return on, nil
}

// storeSeries inserts the series this writer has not stored yet (a
// reference table: each insert is a two-phase commit, so a batch stored
// one by one after its group failed does not offer them again). Should
// PostgreSQL refuse one (a permanent error, which no retry can help: the
// writer retried the batch for ever, every target's batches queued behind
// it), the series are written again in halves under savepoints
// (splitOutSeries): refused are those it refuses, with their errors, the
// others stored. The caller dead-letters the samples of a refused series
// (storePartSafe), as one node does, where a series is written with its
// samples and refuses them.
func (w *Writer) storeSeries(ctx context.Context, series []rows.Series) (refused map[int64]error, err error) {
	var todo []rows.Series
	for _, s := range series {
		if !w.citus.series[s.ID] {
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	if _, err := w.pool.Exec(ctx, seriesSQL, seriesArgs(todo)...); err != nil {
		if Classify(err) == Temporary {
			return nil, err
		}
		if refused, err = w.storeSeriesSafe(ctx, todo); err != nil {
			return nil, err
		}
	}
	if len(w.citus.series)+len(todo) > citusCacheMax {
		clear(w.citus.series)
	}
	for _, s := range todo {
		if rerr, ok := refused[s.ID]; ok {
			w.o.log.Warn("series refused, its samples dead-lettered", "target", s.Target, "path", s.Path, "err", rerr)
			continue
		}
		w.citus.series[s.ID] = true
	}
	return refused, nil
}

// storeSeriesSafe writes series PostgreSQL refused in a transaction of
// their own, split (splitOutSeries).
func (w *Writer) storeSeriesSafe(ctx context.Context, series []rows.Series) (refused map[int64]error, err error) {
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	if refused, err = splitOutSeries(ctx, tx, series); err != nil {
		return nil, err
	}
	return refused, tx.Commit(ctx)
}

// splitOutSeries writes series in tx as splitOut writes rows: refused are
// those PostgreSQL refuses, by id, with their errors; the others written.
func splitOutSeries(ctx context.Context, tx pgx.Tx, series []rows.Series) (refused map[int64]error, err error) {
	refused = map[int64]error{}
	err = splitOut(ctx, tx, series, func(tx pgx.Tx, ss []rows.Series) (func(), error) {
		_, err := tx.Exec(ctx, seriesSQL, seriesArgs(ss)...)
		return func() {}, err
	}, func(s rows.Series, rerr error) error {
		refused[s.ID] = rerr
		return nil
	})
	return refused, err
}

// errSeriesRefused: PostgreSQL refused a series of a group (storeSeries):
// its batches are stored one by one, where the samples of that series are
// dead-lettered (storeCitus).
var errSeriesRefused = errors.New("writer: a series refused")

// holdsSeries reports whether samples hold one of a series in ids.
func holdsSeries(samples []rows.Sample, ids map[int64]error) bool {
	if len(ids) == 0 {
		return false
	}
	return slices.ContainsFunc(samples, func(s rows.Sample) bool {
		_, ok := ids[s.SeriesID]
		return ok
	})
}

// shardsOf fills the shard cache for the series of samples (one query for
// those not in it yet).
func (w *Writer) shardsOf(ctx context.Context, samples []rows.Sample) error {
	var missing []int64
	seen := map[int64]bool{}
	for i := range samples {
		id := samples[i].SeriesID
		if _, ok := w.citus.shard[id]; !ok && !seen[id] {
			seen[id] = true
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if len(w.citus.shard)+len(missing) > citusCacheMax {
		clear(w.citus.shard)
	}
	rs, err := w.pool.Query(ctx, shardIDsSQL, missing)
	if err != nil {
		return err
	}
	var id, shard int64
	_, err = pgx.ForEachRow(rs, []any{&id, &shard}, func() error {
		w.citus.shard[id] = shard
		return nil
	})
	return err
}

// Citus commits with a two-phase commit whenever a transaction used COPY
// or an INSERT ... SELECT it plans on the coordinator, even when every row
// went to one shard; a multi-row INSERT ... VALUES whose rows are all of one
// shard is routed to it as it is. So a part is written with such INSERTs,
// valuesRows rows (9 parameters each, under PostgreSQL's 65 535) at a time.
const (
	samplesValuesSQL  = `INSERT INTO samples (series_id, ts, v_int, v_float, v_num, v_bool, v_text, flags, batch_id) VALUES `
	latestValuesSQL   = `INSERT INTO latest (series_id, ts, v_int, v_float, v_num, v_bool, v_text, flags) VALUES `
	latestConflictSQL = ` ON CONFLICT (series_id) DO UPDATE SET ts = EXCLUDED.ts, v_int = EXCLUDED.v_int, v_float = EXCLUDED.v_float,
  v_num = EXCLUDED.v_num, v_bool = EXCLUDED.v_bool, v_text = EXCLUDED.v_text, flags = EXCLUDED.flags
WHERE latest.ts <= EXCLUDED.ts`
	valuesRows = 5000
)

// queueValues queues the INSERTs of n samples (the k-th is at(k)): prefix,
// then the rows' values (with batch_id when batchID is not 0), then suffix.
func queueValues(bt *pgx.Batch, prefix, suffix string, batchID int64, n int, at func(k int) *rows.Sample) {
	cols := 8
	if batchID != 0 {
		cols = 9
	}
	for lo := 0; lo < n; lo += valuesRows {
		hi := min(lo+valuesRows, n)
		var sb strings.Builder
		sb.WriteString(prefix)
		args := make([]any, 0, (hi-lo)*cols)
		arrays := sampleArrays(hi-lo, func(k int) *rows.Sample { return at(lo + k) })
		for k := range hi - lo {
			if k > 0 {
				sb.WriteByte(',')
			}
			j := len(args)
			fmt.Fprintf(&sb, "($%d::bigint,$%d::timestamptz,$%d::bigint,$%d::float8,$%d::numeric,$%d::bool,$%d::text,$%d::smallint",
				j+1, j+2, j+3, j+4, j+5, j+6, j+7, j+8)
			if batchID != 0 {
				fmt.Fprintf(&sb, ",$%d::bigint", j+9)
			}
			sb.WriteByte(')')
			for _, a := range arrays {
				args = append(args, reflect.ValueOf(a).Index(k).Interface())
			}
			if batchID != 0 {
				args = append(args, batchID)
			}
		}
		sb.WriteString(suffix)
		bt.Queue(sb.String(), args...)
	}
}

// latestOf is the last sample of each series in samples, in the order the
// series first appear (a later timestamp wins; at the same one, the later
// sample, as latestArgs).
func latestOf(samples []rows.Sample) []*rows.Sample {
	idx := map[int64]int{}
	var last []*rows.Sample
	for i := range samples {
		s := &samples[i]
		k, ok := idx[s.SeriesID]
		switch {
		case !ok:
			idx[s.SeriesID] = len(last)
			last = append(last, s)
		case s.TS >= last[k].TS:
			last[k] = s
		}
	}
	return last
}

// eventsValues is eventsSQL as a multi-row INSERT ... VALUES of the events
// of bs (all of one target: one shard of events, no two-phase commit).
func eventsValues(bs ...*rows.Batch) (string, []any) {
	var sb strings.Builder
	sb.WriteString(`INSERT INTO events (ts, target, kind, interface, queue, action, parameter, congestion_level,
  source_address, destination_address, source_qp, destination_qp, details, batch_id) VALUES `)
	types := []string{"timestamptz", "text", "text", "text", "int", "text", "int", "int", "text", "text", "bigint", "bigint", "jsonb", "bigint"}
	var args []any
	for _, b := range bs {
		for _, e := range b.Events {
			if len(args) > 0 {
				sb.WriteByte(',')
			}
			sb.WriteByte('(')
			for c, typ := range types {
				if c > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, "$%d::%s", len(args)+c+1, typ)
			}
			sb.WriteByte(')')
			args = append(args, tsOf(e.TS), e.Target, e.Kind, e.Interface, e.Queue, e.Action, e.Parameter, e.CongestionLevel,
				e.SourceAddress, e.DestinationAddress, e.SourceQP, e.DestinationQP, e.Details, b.ID)
		}
	}
	sb.WriteString(" ON CONFLICT DO NOTHING")
	return sb.String(), args
}

// part is the samples of a batch that fall on one shard.
type part struct {
	shard   int64
	key     int64 // the ledger row's shard_key: the first series id of the part
	samples []rows.Sample
	events  int // the batch's events counted in this part's ledger row
}

// splitByShard groups samples by shard, in the order of the shards; each
// part keeps the samples' order.
func splitByShard(samples []rows.Sample, shardOf map[int64]int64) []part {
	idx := map[int64]int{}
	var parts []part
	for _, s := range samples {
		sh := shardOf[s.SeriesID]
		i, ok := idx[sh]
		if !ok {
			i = len(parts)
			idx[sh] = i
			parts = append(parts, part{shard: sh, key: s.SeriesID})
		}
		parts[i].samples = append(parts[i].samples, s)
	}
	slices.SortFunc(parts, func(a, b part) int { return cmpInt64(a.shard, b.shard) })
	return parts
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// storeCitus stores one batch on Citus: its new series, then each part in
// a single-shard transaction with its ledger row, then its events.
func (w *Writer) storeCitus(ctx context.Context, b *rows.Batch) (err error) {
	start := time.Now()
	refusedSeries, err := w.storeSeries(ctx, b.Series)
	if err != nil {
		return err
	}
	if err := w.shardsOf(ctx, b.Samples); err != nil {
		return err
	}
	parts := splitByShard(b.Samples, w.citus.shard)
	if len(parts) == 0 && len(b.Events) > 0 {
		// A batch of events only has a ledger row as on one node, of
		// shard key 0.
		parts = []part{{}}
	}
	if len(parts) > 0 {
		// The first part's ledger row counts the events too: the ledger
		// rows of a batch sum to its rows, as its one row on one node.
		parts[0].events = len(b.Events)
	}
	stored, replayed, deadRows := 0, 0, 0
	// The parts this try commits: should it fail after them, the retry
	// finds them in the ledger, this writer's, not counted yet.
	l := w.ledgerOf(b.ID) // b's id until it returns
	fresh := map[int64]partTry{}
	defer func() {
		if err != nil {
			maps.Copy(l.parts, fresh)
		}
	}()
	var ownDead []deadRow // dead letters of earlier tries counted by this one
	for _, p := range parts {
		if l.groupParts[p.key] {
			// Committed by the group this batch was in: stored, by this
			// writer, and counted here.
			stored += len(p.samples)
			continue
		}
		var done bool
		var n int
		if holdsSeries(p.samples, refusedSeries) {
			// Samples of a series PostgreSQL refused: dead-lettered.
			done, n, err = w.storePartSafe(ctx, b, p, refusedSeries)
		} else {
			done, err = w.storePart(ctx, b, p)
			if err != nil && Classify(err) == Permanent && !errors.Is(err, errLedgerConflict) {
				w.o.log.Warn("part refused, splitting out the bad rows", "target", b.Target, "batch", b.ID, "err", err)
				done, n, err = w.storePartSafe(ctx, b, p, nil)
			}
		}
		t, own := l.parts[p.key]
		switch {
		case errors.Is(err, errLedgerConflict) && stored == 0 && replayed == 0:
			// Another batch drew this id (nothing of this one is stored
			// under it): draw another, as store does.
			w.o.log.Warn("batch id collision, drawing another", "batch", b.ID, "target", b.Target)
			b.ID = rows.NewBatchID()
			return errRetryNow
		case err != nil:
			return err
		case done && own:
			// Committed by an earlier try of this batch (that failed
			// after it, or never heard its answer): stored by this
			// writer, counted now, not a replay.
			stored += t.samples
			deadRows += t.deadRows
			ownDead = append(ownDead, t.uncounted...)
		case done:
			replayed++
		default:
			stored += len(p.samples) - n
			deadRows += n
			fresh[p.key] = partTry{samples: len(p.samples) - n, deadRows: n}
		}
	}
	// The events are offered even when every part was in the ledger: no
	// ledger row guards them (they are distributed by target, the ledger
	// by series), so a crash after the parts and before the events leaves
	// them to the replay. They are stored once by their identity, and
	// their dead letters once by theirs (deadSQL).
	replay := replayed == len(parts) && len(parts) > 0
	var deadEvents int
	if len(b.Events) > 0 && !l.groupEvents { // else stored and counted by the group
		if deadEvents, err = w.citusEvents(ctx, b, replay); err != nil {
			return err
		}
	}
	outcome := collectormetrics.BatchStored
	switch {
	case replay:
		outcome = collectormetrics.BatchReplayed
	case deadRows+deadEvents > 0:
		outcome = collectormetrics.BatchPartial
	}
	w.committed(b, start, outcome, stored)
	w.deadLettered(b, ownDead)
	return nil
}

// citusEvents stores b's events on Citus (storeEventsCitus) and counts
// them once: those stored, and those the table held already, as events met
// twice but for a replay's (the first run's) and for those an earlier try
// of this writer stored (triedEvents). On an error, those stored one by
// one before it are counted, and the retry told of them and of those the
// error may have stored (eventsTried). dead is as storeEventsCitus's.
func (w *Writer) citusEvents(ctx context.Context, b *rows.Batch, replay bool) (dead int, err error) {
	stored, dead, err := w.storeEventsCitus(ctx, b)
	l := w.ledgerOf(b.ID)
	counted, tried := l.eventsCounted, l.eventsTried
	if err != nil {
		w.o.m.RowsWritten.WithLabelValues(collectormetrics.TableEvents).Add(float64(stored))
		if tried || stored > 0 || inDoubt(err) {
			l.eventsTried, l.eventsCounted = true, counted+stored
		}
		return dead, err
	}
	switch {
	case tried:
		// An earlier try may have stored some unheard: the table holds
		// this batch's under its id, the others are events met twice.
		n, err := w.triedEvents(ctx, b)
		if err != nil {
			// Those stored now are in the table: the retry counts them.
			return dead, err
		}
		w.eventsStored(len(b.Events)-dead-counted, n-counted)
	case replay:
		// Those found are the first run's, not conflicts.
		w.o.m.RowsWritten.WithLabelValues(collectormetrics.TableEvents).Add(float64(stored))
	default:
		w.eventsStored(len(b.Events)-dead, stored)
	}
	l.eventsTried, l.eventsCounted = false, 0
	return dead, nil
}

// batchEventsSQL counts the events stored under a batch's id: one shard of
// events (its target), through events_target_ts (the batch's times).
const batchEventsSQL = `SELECT count(*) FROM events WHERE target = $1 AND ts BETWEEN $2 AND $3 AND batch_id = $4`

// triedEvents is how many of b's events the table holds under b's id:
// stored by a try of this batch, where an event met twice is under another
// batch's. A batch id is drawn at random, and drawn again only before
// anything of the batch is stored (storeCitus).
func (w *Writer) triedEvents(ctx context.Context, b *rows.Batch) (int, error) {
	first, last := b.Events[0].TS, b.Events[0].TS
	for _, e := range b.Events {
		first, last = min(first, e.TS), max(last, e.TS)
	}
	var n int
	err := w.pool.QueryRow(ctx, batchEventsSQL, b.Target, tsOf(first), tsOf(last), b.ID).Scan(&n)
	return n, err
}

// storePart stores one part and its ledger row in one transaction; done is
// true when the ledger already has the part (a replay). A ledger row of the
// same key that is not this part's is errLedgerConflict.
func (w *Writer) storePart(ctx context.Context, b *rows.Batch, p part) (done bool, err error) {
	conn, err := w.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	pc := conn.Conn()
	open := false
	defer rollbackIfOpen(ctx, pc, &open)
	var firstTS, lastTS any
	if len(p.samples) > 0 {
		first, last := (&rows.Batch{Samples: p.samples}).TSRange()
		firstTS, lastTS = tsOf(first), tsOf(last)
	}
	bt := &pgx.Batch{}
	bt.Queue("BEGIN")
	epoch := make([]int64, 1)
	if w.o.fencing {
		w.queueFences(bt, []*rows.Batch{b}, epoch)
	}
	bt.Queue(ledgerPartSQL, p.key, b.ID, b.Collector, b.Target, b.Epoch, len(p.samples)+p.events, firstTS, lastTS)
	open = true
	if err := pc.SendBatch(ctx, bt).Close(); err != nil {
		var pe *pgconn.PgError
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return false, errStale
		case errors.As(err, &pe) && pe.Code == "23505":
			return w.partStored(ctx, b, p, firstTS, lastTS)
		}
		return false, err
	}
	if w.o.fencing && epoch[0] != b.Epoch {
		return false, errStale
	}
	bt = &pgx.Batch{}
	queueValues(bt, samplesValuesSQL, "", b.ID, len(p.samples), func(k int) *rows.Sample { return &p.samples[k] })
	newest := latestOf(p.samples)
	queueValues(bt, latestValuesSQL, latestConflictSQL, 0, len(newest), func(k int) *rows.Sample { return newest[k] })
	bt.Queue("COMMIT")
	if err := pc.SendBatch(ctx, bt).Close(); err != nil {
		if commitInDoubt(err) {
			// The COMMIT may have been applied: the retry that finds
			// the part in the ledger counts it.
			w.ledgerOf(b.ID).parts[p.key] = partTry{samples: len(p.samples)}
		}
		return false, err
	}
	open = false
	return false, nil
}

// partStored settles a ledger conflict of a part: this part (a replay) or
// another batch's (errLedgerConflict).
func (w *Writer) partStored(ctx context.Context, b *rows.Batch, p part, firstTS, lastTS any) (bool, error) {
	var target string
	var n int
	var f, l *time.Time
	if err := w.pool.QueryRow(ctx, ledgerPartCheckSQL, p.key, b.ID).Scan(&target, &n, &f, &l); err != nil {
		return false, err
	}
	if target == b.Target && n == len(p.samples)+p.events && sameTS(f, firstTS) && sameTS(l, lastTS) {
		return true, nil
	}
	return false, fmt.Errorf("%w: shard key %d", errLedgerConflict, p.key)
}

// storePartSafe stores a part PostgreSQL refused, as storeSafe does a
// batch: the ledger row, then each sample under a savepoint; a refused one
// goes to dead_letters (a reference table: this transaction then spans the
// nodes, which a bad row may cost; one whose dead letter is refused too is
// kept in the refused file). A sample of a series in refusedSeries
// (PostgreSQL refused the series: storeSeries) is refused with its series'
// error, not written. The transaction is fenced as storePart's. done is as
// storePart's; dead counts the rows refused.
func (w *Writer) storePartSafe(ctx context.Context, b *rows.Batch, p part, refusedSeries map[int64]error) (done bool, dead int, err error) {
	var firstTS, lastTS any
	if len(p.samples) > 0 {
		first, last := (&rows.Batch{Samples: p.samples}).TSRange()
		firstTS, lastTS = tsOf(first), tsOf(last)
	}
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return false, 0, err
	}
	defer tx.Rollback(ctx)
	if w.o.fencing {
		// Its own transaction: storePart's fencing check, if any, was
		// another's.
		bt := &pgx.Batch{}
		epoch := make([]int64, 1)
		w.queueFences(bt, []*rows.Batch{b}, epoch)
		err := tx.SendBatch(ctx, bt).Close()
		if errors.Is(err, pgx.ErrNoRows) || err == nil && epoch[0] != b.Epoch {
			return false, 0, errStale
		}
		if err != nil {
			return false, 0, err
		}
	}
	if _, err := tx.Exec(ctx, ledgerPartSQL, p.key, b.ID, b.Collector, b.Target, b.Epoch, len(p.samples)+p.events, firstTS, lastTS); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			tx.Rollback(ctx)
			done, err := w.partStored(ctx, b, p, firstTS, lastTS)
			return done, 0, err
		}
		return false, 0, err
	}
	seriesByID := make(map[int64]rows.Series, len(b.Series))
	for _, s := range b.Series {
		seriesByID[s.ID] = s
	}
	var good []rows.Sample
	var bad []deadRow
	for i := range p.samples {
		s := &p.samples[i]
		if rerr, ok := refusedSeries[s.SeriesID]; ok {
			bad = append(bad, deadRow{table: "samples", row: sampleRow(*s, seriesByID), err: rerr})
			continue
		}
		err := savepoint(ctx, tx, func(tx pgx.Tx) error {
			bt := &pgx.Batch{}
			queueValues(bt, samplesValuesSQL, "", b.ID, 1, func(int) *rows.Sample { return s })
			return tx.SendBatch(ctx, bt).Close()
		})
		switch {
		case err == nil:
			good = append(good, *s)
		case Classify(err) == Temporary:
			return false, 0, err
		default:
			bad = append(bad, deadRow{table: "samples", row: sampleRow(*s, seriesByID), err: err})
		}
	}
	if len(good) > 0 {
		bt := &pgx.Batch{}
		newest := latestOf(good)
		queueValues(bt, latestValuesSQL, latestConflictSQL, 0, len(newest), func(k int) *rows.Sample { return newest[k] })
		if err := tx.SendBatch(ctx, bt).Close(); err != nil {
			return false, 0, err
		}
	}
	letters, err := w.writeDeadLetters(ctx, tx, b, bad)
	if err != nil {
		return false, 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		if commitInDoubt(err) {
			// As storePart's: the retry that finds the part in the
			// ledger counts its samples and dead letters.
			w.ledgerOf(b.ID).parts[p.key] = partTry{samples: len(good), deadRows: len(bad), uncounted: letters}
		}
		return false, 0, err
	}
	w.deadLettered(b, letters)
	return false, len(bad), nil
}

// storeEventsCitus stores b's events in one INSERT; when PostgreSQL refuses
// it, one by one, a refused event going to dead_letters. Events are stored
// once by their identity, their dead letters once by batch and row
// (deadSQL: a replay offers the batch's events again, no ledger row guarding
// them on Citus, and finds the first run's dead letter); dead
// counts the refused events, newly dead-lettered or not. A refused event
// whose dead letter PostgreSQL refuses too is kept in the refused file
// (keepRefused), counted in dead as well. On an error, stored counts
// those stored before it, one by one.
func (w *Writer) storeEventsCitus(ctx context.Context, b *rows.Batch) (stored, dead int, err error) {
	sql, args := eventsValues(b)
	tag, err := w.pool.Exec(ctx, sql, args...)
	if err == nil || Classify(err) == Temporary {
		return int(tag.RowsAffected()), 0, err
	}
	// The dead letters written are counted on an error too: the retry
	// finds them written (deadSQL) and counts none.
	var bad []deadRow
	defer func() { w.deadLettered(b, bad) }()
	for _, e := range b.Events {
		sql, args := eventsValues(&rows.Batch{ID: b.ID, Events: []rows.Event{e}})
		tag, err := w.pool.Exec(ctx, sql, args...)
		switch {
		case err == nil:
			stored += int(tag.RowsAffected())
		case Classify(err) == Temporary:
			return stored, dead, err
		default:
			d := deadRow{table: "events", row: e, err: err}
			row := d.json()
			tried := w.ledgerOf(b.ID).deadTried
			tag, err2 := w.pool.Exec(ctx, deadSQL, b.Target, b.ID, row, err.Error())
			switch {
			case err2 == nil:
				dead++
				// Written now, or by an earlier try that did not hear
				// it committed: this writer's, counted once.
				if tag.RowsAffected() == 1 || tried[row] {
					bad = append(bad, d)
					delete(tried, row)
				}
			case Classify(err2) == Temporary:
				if inDoubt(err2) {
					tried[row] = true
				}
				return stored, dead, fmt.Errorf("dead letter: %w", err2)
			default:
				dead++
				w.keepRefused(b, d, err2)
			}
		}
	}
	return stored, dead, nil
}

// deadLettered counts and logs the rows of b that went to dead_letters.
func (w *Writer) deadLettered(b *rows.Batch, dead []deadRow) {
	w.o.m.DeadLetters.Add(float64(len(dead)))
	for _, d := range dead {
		w.o.log.Warn("row dead-lettered", "target", b.Target, "batch", b.ID, "table", d.table, "err", d.err)
	}
}

// On Citus a stale batch is merged as on one node (stale.go), with the
// same lock on its lease row and the same rules, but the merge's one
// statement (an anti-join of the batch's rows against samples and latest,
// spread over the shards) is not one Citus can plan: the merge reads the
// batch's ledger rows, the samples stored at its series and timestamps,
// latest of its series and the stored rows either side of each delete it
// would store, decides here, and writes each part not in the
// ledger with its ledger row, then the batch's events. All in one
// transaction: it spans the nodes (a two-phase commit), which a stale
// batch, rare, may cost. A batch whose every part is in the ledger (a
// replay) has its events offered still, as storeCitus does: no ledger row
// guards them.
const (
	staleLedgerSQL = `SELECT shard_key, target, rows, first_ts, last_ts FROM ingest_ledger WHERE batch_id = $1`
	staleStoredSQL = `SELECT series_id, ts FROM samples WHERE series_id = ANY($1::bigint[]) AND ts BETWEEN $2 AND $3`
	staleLatestSQL = `SELECT series_id, ts FROM latest WHERE series_id = ANY($1::bigint[])`
	// The stored rows just before and just after each delete to merge:
	// the one-node merge's rule of a delete next to a delete
	// (staleSamplesSQL), which needs rows outside the batch's time range.
	// Joined through latest (co-located, by series_id) so that Citus
	// runs the lateral subqueries on the shards, each an index scan of
	// one row (samples_series_ts); from unnest alone it refuses the join.
	staleNeighboursSQL = `SELECT d.series_id, d.ts, p.ts, p.flags & 2 = 2, n.ts, n.flags & 2 = 2
FROM latest l JOIN unnest($1::bigint[], $2::timestamptz[]) AS d (series_id, ts) ON l.series_id = d.series_id
LEFT JOIN LATERAL (SELECT x.ts, x.flags FROM samples x WHERE x.series_id = l.series_id AND x.ts < d.ts ORDER BY x.ts DESC LIMIT 1) p ON true
LEFT JOIN LATERAL (SELECT x.ts, x.flags FROM samples x WHERE x.series_id = l.series_id AND x.ts > d.ts ORDER BY x.ts LIMIT 1) n ON true
WHERE l.series_id = ANY($1::bigint[])`
)

// seriesTS names a sample by its series and its timestamp in microseconds
// (PostgreSQL's precision; pgx truncates).
type seriesTS struct{ id, us int64 }

// staleDeletesAgain returns the deletes of the parts todo and of held (the
// deletes earlier merges held back, stale_deletes) that the merge would
// store (not stored, at or before their series' latest) whose series' row
// just before or just after them, stored, in the batch's samples or held,
// is a delete: the same disappearance, dated differently by two
// collectors, which the one-node merge drops too (staleSamplesSQL). Of
// those, hold are the ones to hold back: the row before them not a
// delete, and no row of their series after them in samples or held (what
// follows them is in a later stale batch).
func staleDeletesAgain(ctx context.Context, tx pgx.Tx, samples, held []rows.Sample, todo []part,
	stored map[seriesTS]bool, latest map[int64]int64) (again, hold map[seriesTS]bool, err error) {
	var ids []int64
	var tss []time.Time
	seen := map[seriesTS]bool{}
	candidate := func(s rows.Sample) {
		k := seriesTS{s.SeriesID, s.TS / 1000}
		if s.Flags&rows.Deleted == 0 || seen[k] || stored[k] {
			return
		}
		if l, ok := latest[s.SeriesID]; !ok || l < k.us {
			return
		}
		seen[k] = true
		ids = append(ids, k.id)
		tss = append(tss, tsOf(s.TS))
	}
	for _, p := range todo {
		for _, s := range p.samples {
			candidate(s)
		}
	}
	for _, s := range held {
		candidate(s)
	}
	if len(ids) == 0 {
		return nil, nil, nil
	}
	// The nearest row on each side: the batch's, or the stored one, the
	// nearer of the two. At one timestamp the stored row wins: the batch's
	// row there is a duplicate, never stored, so the row the table holds
	// is what a delete is next to (the one-node merge's rule too,
	// staleSamplesSQL); before, a delete if either was, where one node
	// took either, so the two could keep different rows.
	type near struct {
		before, after    int64 // the rows' timestamps in microseconds
		prevDel, nextDel bool
		later            bool // a row of the batch (or held) after it
	}
	nears := make(map[seriesTS]*near, len(seen))
	bySeries := map[int64][]seriesTS{}
	for k := range seen {
		nears[k] = &near{before: math.MinInt64, after: math.MaxInt64}
		bySeries[k.id] = append(bySeries[k.id], k)
	}
	nearer := func(k seriesTS, us int64, del bool) {
		n := nears[k]
		switch {
		case us < k.us && us > n.before:
			n.before, n.prevDel = us, del
		case us < k.us && us == n.before:
			n.prevDel = n.prevDel || del
		case us > k.us && us < n.after:
			n.after, n.nextDel = us, del
		case us > k.us && us == n.after:
			n.nextDel = n.nextDel || del
		}
	}
	rs, err := tx.Query(ctx, staleNeighboursSQL, ids, tss)
	if err != nil {
		return nil, nil, err
	}
	var id int64
	var ts time.Time
	var pts, nts *time.Time
	var pdel, ndel *bool
	if _, err := pgx.ForEachRow(rs, []any{&id, &ts, &pts, &pdel, &nts, &ndel}, func() error {
		k := seriesTS{id, ts.UnixMicro()}
		if nears[k] == nil {
			return nil
		}
		if pts != nil {
			nearer(k, pts.UnixMicro(), *pdel)
		}
		if nts != nil {
			nearer(k, nts.UnixMicro(), *ndel)
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	for _, rs := range [][]rows.Sample{samples, held} {
		for _, s := range rs {
			us := s.TS / 1000
			for _, k := range bySeries[s.SeriesID] {
				if us > k.us {
					nears[k].later = true
				}
				if !stored[seriesTS{s.SeriesID, us}] { // the stored row wins (above)
					nearer(k, us, s.Flags&rows.Deleted != 0)
				}
			}
		}
	}
	again, hold = map[seriesTS]bool{}, map[seriesTS]bool{}
	for k, n := range nears {
		if n.prevDel || n.nextDel {
			again[k] = true
		}
		if !n.prevDel && n.nextDel && !n.later {
			hold[k] = true
		}
	}
	return again, hold, nil
}

// The deletes earlier merges held back (stale_deletes, the one-node
// merge's rule: staleSamplesSQL), read, stored, held and forgotten one row
// at a time on the series' shard: few rows, on a rare path.
const (
	staleHeldSQL   = `SELECT series_id, ts, flags, batch_id FROM stale_deletes WHERE series_id = ANY($1::bigint[])`
	staleHoldSQL   = `INSERT INTO stale_deletes (series_id, ts, flags, target, batch_id) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`
	staleForgetSQL = `DELETE FROM stale_deletes WHERE series_id = $1 AND ts = $2`
)

// heldDelete is a row of stale_deletes: the delete and its own batch.
type heldDelete struct {
	s     rows.Sample
	batch int64
}

// readHeld reads the held deletes of the series ids.
func readHeld(ctx context.Context, tx pgx.Tx, ids []int64) ([]heldDelete, error) {
	rs, err := tx.Query(ctx, staleHeldSQL, ids)
	if err != nil {
		return nil, err
	}
	var held []heldDelete
	var h heldDelete
	var ts time.Time
	_, err = pgx.ForEachRow(rs, []any{&h.s.SeriesID, &ts, &h.s.Flags, &h.batch}, func() error {
		h.s.TS = ts.UnixNano()
		held = append(held, h)
		return nil
	})
	return held, err
}

// settleHeld writes what the merge judged of the held deletes and of the
// batch's deletes to hold back (staleDeletesAgain's again and hold), as
// the one-node merge does: a held delete no longer next to a delete is
// stored, with its own batch id (counted in stored); one still next to a
// delete stays held while it is still the last of its series, and is
// forgotten otherwise (a later row decided it), as is one stored or at a
// sample of the batch not held again; a delete of the batch to hold back
// is held. The series PostgreSQL refused (refusedSeries) are left as they
// are, which loses and duplicates nothing: their samples are refused rows
// (dead-lettered, duplicates or stale_epoch), none stored, so a held
// delete of such a series is next to no row this merge stored and stays
// for a later merge (or the retention) to decide, and a delete of theirs
// held back here would be stored by a later merge beside its dead letter.
// One node does the same without a rule for it: a part holding a sample of
// a refused series fails with its series row, down to that sample alone,
// so staleSamplesSQL never reads or holds that series' deletes
// (TestStaleDeleteRefusedRow's refused series, the same on both).
func settleHeld(ctx context.Context, tx pgx.Tx, b *rows.Batch, todo []part, held []heldDelete, inBatch, heldAt, again, hold, stored map[seriesTS]bool,
	latest map[int64]int64, refusedSeries map[int64]error) (storedHeld int, err error) {
	bt := &pgx.Batch{}
	for _, h := range held {
		k := seriesTS{h.s.SeriesID, h.s.TS / 1000}
		if _, refused := refusedSeries[k.id]; refused || inBatch[k] {
			continue
		}
		at := tsOf(h.s.TS)
		l, ok := latest[k.id]
		switch {
		case stored[k] || !ok || l < k.us:
		case again[k]:
			if hold[k] {
				continue
			}
		default:
			queueValues(bt, samplesValuesSQL, "", h.batch, 1, func(int) *rows.Sample { return &h.s })
			storedHeld++
		}
		bt.Queue(staleForgetSQL, k.id, at)
	}
	seen := map[seriesTS]bool{}
	for _, p := range todo {
		for _, s := range p.samples {
			k := seriesTS{s.SeriesID, s.TS / 1000}
			if _, refused := refusedSeries[k.id]; refused || seen[k] {
				continue
			}
			seen[k] = true
			switch {
			case hold[k]:
				bt.Queue(staleHoldSQL, k.id, tsOf(s.TS), s.Flags, b.Target, b.ID)
			case heldAt[k]:
				bt.Queue(staleForgetSQL, k.id, tsOf(s.TS))
			}
		}
	}
	if bt.Len() == 0 {
		return 0, nil
	}
	return storedHeld, tx.SendBatch(ctx, bt).Close()
}

// mergeStaleCitus is mergeStale on Citus; safe splits out the rows
// PostgreSQL refuses, as mergeSafe does: the samples to merge of each part
// and the events, in halves under savepoints.
func (w *Writer) mergeStaleCitus(ctx context.Context, b *rows.Batch, safe bool) (staleResult, error) {
	if err := w.shardsOf(ctx, b.Samples); err != nil {
		return staleResult{}, err
	}
	parts := splitByShard(b.Samples, w.citus.shard)
	if len(parts) == 0 {
		parts = []part{{}}
	}
	parts[0].events = len(b.Events)
	tx, res, err := w.beginMerge(ctx, b)
	if tx == nil {
		return res, err
	}
	defer tx.Rollback(ctx)
	// The parts in the ledger (stored before the lease moved, or by an
	// earlier merge) are skipped.
	type ledgerRow struct {
		target string
		rows   int
		f, l   *time.Time
	}
	ledger := map[int64]ledgerRow{}
	rs, err := tx.Query(ctx, staleLedgerSQL, b.ID)
	if err != nil {
		return res, err
	}
	var key int64
	var lr ledgerRow
	if _, err := pgx.ForEachRow(rs, []any{&key, &lr.target, &lr.rows, &lr.f, &lr.l}, func() error {
		ledger[key] = lr
		return nil
	}); err != nil {
		return res, err
	}
	tries := w.ledgerOf(b.ID)
	var todo []part
	var ids []int64
	for _, p := range parts {
		var firstTS, lastTS any
		if len(p.samples) > 0 {
			f, l := (&rows.Batch{Samples: p.samples}).TSRange()
			firstTS, lastTS = tsOf(f), tsOf(l)
		}
		if lr, ok := ledger[p.key]; ok {
			if lr.target == b.Target && lr.rows == len(p.samples)+p.events && sameTS(lr.f, firstTS) && sameTS(lr.l, lastTS) {
				// This writer's, committed before the lease moved by
				// the group or an earlier try that failed after it (or
				// never heard its answer): not counted yet.
				if t, own := tries.parts[p.key]; own {
					res.ownParts++
					res.own += t.samples
					res.ownDeadRows += t.deadRows
					res.ownDead = append(res.ownDead, t.uncounted...)
				} else if tries.groupParts[p.key] {
					res.ownParts++
					res.own += len(p.samples)
				}
				continue
			}
			return res, fmt.Errorf("%w: shard key %d", errLedgerConflict, p.key)
		}
		todo = append(todo, p)
		for _, s := range p.samples {
			ids = append(ids, s.SeriesID)
		}
	}
	if len(todo) == 0 {
		// Every part in the ledger: a replay, or this writer's parts
		// (ownParts). Its events are offered still, as storeCitus does:
		// no ledger row guards them, and a crash or a connection cut
		// after the parts and before the events leaves them to this
		// try. Stored and counted as storeCitus does (citusEvents: a
		// refused one dead-lettered, the others kept), after the
		// merge's transaction, which wrote nothing: the lease's lock
		// orders the samples' anti-join with the owner's writes, and
		// events are stored once by their identity.
		tx.Rollback(ctx)
		if t := tries.try; t != nil && t.merge != nil {
			// Merged by a try whose COMMIT lost its answer (its events
			// too, in its transaction): counted now, as this writer's.
			tries.try = nil
			return *t.merge, nil
		}
		res.replayed = true
		if len(b.Events) > 0 && !tries.groupEvents {
			res.deadEvents, err = w.citusEvents(ctx, b, res.ownParts == 0)
		}
		return res, err
	}
	stored, latest := map[seriesTS]bool{}, map[int64]int64{}
	var held []heldDelete
	if len(ids) > 0 {
		first, last := b.TSRange()
		if held, err = readHeld(ctx, tx, ids); err != nil {
			return res, err
		}
		for _, h := range held {
			first, last = min(first, h.s.TS), max(last, h.s.TS)
		}
		rs, err := tx.Query(ctx, staleStoredSQL, ids, tsOf(first), tsOf(last))
		if err != nil {
			return res, err
		}
		var id int64
		var ts time.Time
		if _, err := pgx.ForEachRow(rs, []any{&id, &ts}, func() error {
			stored[seriesTS{id, ts.UnixMicro()}] = true
			return nil
		}); err != nil {
			return res, err
		}
		if rs, err = tx.Query(ctx, staleLatestSQL, ids); err != nil {
			return res, err
		}
		if _, err := pgx.ForEachRow(rs, []any{&id, &ts}, func() error {
			latest[id] = ts.UnixMicro()
			return nil
		}); err != nil {
			return res, err
		}
	}
	// A held delete at a sample of the batch is that sample (a replay
	// under another id): the batch's row is judged, the held one kept or
	// forgotten with it (heldAt).
	inBatch := map[seriesTS]bool{}
	for _, s := range b.Samples {
		inBatch[seriesTS{s.SeriesID, s.TS / 1000}] = true
	}
	heldAt := map[seriesTS]bool{}
	var heldRows []rows.Sample
	for _, h := range held {
		k := seriesTS{h.s.SeriesID, h.s.TS / 1000}
		heldAt[k] = true
		if !inBatch[k] {
			heldRows = append(heldRows, h.s)
		}
	}
	again, hold, err := staleDeletesAgain(ctx, tx, b.Samples, heldRows, todo, stored, latest)
	if err != nil {
		return res, err
	}
	// A series PostgreSQL refuses (safe: split out of the series, as
	// storeSeries does) refuses its samples to merge, judged as refused
	// rows, as on one node, where a series is written with its samples:
	// it refused the whole merge, counted as stale_epoch.
	var refusedSeries map[int64]error
	switch {
	case safe:
		if refusedSeries, err = splitOutSeries(ctx, tx, b.Series); err != nil {
			return res, err
		}
	case len(b.Series) > 0:
		if _, err := tx.Exec(ctx, seriesSQL, seriesArgs(b.Series)...); err != nil {
			return res, err
		}
	}
	r := newRefusals(b)
	for _, p := range todo {
		var firstTS, lastTS any
		if len(p.samples) > 0 {
			f, l := (&rows.Batch{Samples: p.samples}).TSRange()
			firstTS, lastTS = tsOf(f), tsOf(l)
		}
		bt := &pgx.Batch{}
		bt.Queue(ledgerPartSQL, p.key, b.ID, b.Collector, b.Target, b.Epoch, len(p.samples)+p.events, firstTS, lastTS)
		// Of the part's samples, once each by (series_id, ts): those stored
		// are duplicates, and deletes next to a delete (again); those at
		// or before their series' latest are merged, the newer ones
		// refused (the owner may hold them).
		var merge []rows.Sample
		seen := map[seriesTS]bool{}
		for _, s := range p.samples {
			k := seriesTS{s.SeriesID, s.TS / 1000}
			if seen[k] {
				continue
			}
			seen[k] = true
			l, ok := latest[s.SeriesID]
			switch {
			case stored[k]:
			case ok && l >= k.us:
				if !again[k] {
					merge = append(merge, s)
				}
			default:
				res.refused++
			}
		}
		if !safe {
			queueValues(bt, samplesValuesSQL, "", b.ID, len(merge), func(k int) *rows.Sample { return &merge[k] })
		}
		if err := tx.SendBatch(ctx, bt).Close(); err != nil {
			return res, err
		}
		if !safe {
			res.samples += len(merge)
			continue
		}
		if holdsSeries(merge, refusedSeries) {
			kept := merge[:0:0]
			for _, s := range merge {
				if rerr, ok := refusedSeries[s.SeriesID]; ok {
					if err := r.sample(ctx, tx, &res, s, rerr); err != nil {
						return res, err
					}
					continue
				}
				kept = append(kept, s)
			}
			merge = kept
		}
		err := splitOut(ctx, tx, merge, func(tx pgx.Tx, ss []rows.Sample) (func(), error) {
			bt := &pgx.Batch{}
			queueValues(bt, samplesValuesSQL, "", b.ID, len(ss), func(k int) *rows.Sample { return &ss[k] })
			return func() { res.samples += len(ss) }, tx.SendBatch(ctx, bt).Close()
		}, func(s rows.Sample, rerr error) error { return r.sample(ctx, tx, &res, s, rerr) })
		if err != nil {
			return res, err
		}
	}
	if res.held, err = settleHeld(ctx, tx, b, todo, held, inBatch, heldAt, again, hold, stored, latest, refusedSeries); err != nil {
		return res, err
	}
	if safe {
		if err := w.mergeEventsSafe(ctx, tx, r, &res, writeEventsValues); err != nil {
			return res, err
		}
	} else if res.events, err = writeEventsValues(ctx, tx, b.ID, b.Events); err != nil {
		return res, err
	}
	return w.commitMerge(ctx, tx, b, res)
}

// writeEventsValues is writeEvents as eventsValues (one shard of events,
// no two-phase commit).
func writeEventsValues(ctx context.Context, tx execer, id int64, events []rows.Event) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	sql, args := eventsValues(&rows.Batch{ID: id, Events: events})
	tag, err := tx.Exec(ctx, sql, args...)
	return int(tag.RowsAffected()), err
}

// storeCitusGroup stores a backlog of batches on Citus in one transaction
// per shard (group commit, as storeGroup on one node, without a two-phase
// commit): the parts of all the batches that fall on a shard, each with
// its ledger row, then the latest values of that shard's series. The new
// series go first and the events last (one INSERT per target: one shard of
// events each), both idempotent. A ledger conflict (a replay, or a batch a
// failed group stored in part) is errLedgerConflict, a lease moved
// errStale, and a refused row a permanent error: the caller then stores the
// batches one by one (storeCitus), which settles each.
func (w *Writer) storeCitusGroup(ctx context.Context, bs []*rows.Batch) error {
	start := time.Now()
	var series []rows.Series
	var all []rows.Sample
	for _, b := range bs {
		series = append(series, b.Series...)
		all = append(all, b.Samples...)
		if len(b.Samples) == 0 {
			all = append(all, rows.Sample{}) // the shard of key 0, for a batch of events only
		}
	}
	if refused, err := w.storeSeries(ctx, series); err != nil {
		return err
	} else if len(refused) > 0 {
		return errSeriesRefused
	}
	if err := w.shardsOf(ctx, all); err != nil {
		return err
	}
	byShard := map[int64][]batchPart{}
	var shards []int64
	add := func(b *rows.Batch, p part) {
		if _, ok := byShard[p.shard]; !ok {
			shards = append(shards, p.shard)
		}
		byShard[p.shard] = append(byShard[p.shard], batchPart{b, p})
	}
	for _, b := range bs {
		parts := splitByShard(b.Samples, w.citus.shard)
		if len(parts) == 0 && len(b.Events) > 0 {
			parts = []part{{shard: w.citus.shard[0]}} // as storeCitus: shard key 0
		}
		if len(parts) > 0 {
			parts[0].events = len(b.Events)
		}
		for _, p := range parts {
			add(b, p)
		}
	}
	slices.Sort(shards)
	for _, sh := range shards {
		if err := w.storeShardGroup(ctx, byShard[sh]); err != nil {
			return err
		}
		for _, bp := range byShard[sh] {
			w.ledgerOf(bp.b.ID).groupParts[bp.p.key] = true
		}
	}
	// The events of each target, in INSERTs of at most maxEvents (14
	// parameters each, under PostgreSQL's 65 535).
	const maxEvents = 4000
	byTarget := map[string][]*rows.Batch{}
	var targets []string
	insert := func(target string) error {
		if len(byTarget[target]) == 0 {
			return nil
		}
		sql, args := eventsValues(byTarget[target]...)
		tag, err := w.pool.Exec(ctx, sql, args...)
		if err != nil {
			if inDoubt(err) {
				for _, b := range byTarget[target] {
					w.ledgerOf(b.ID).eventsTried = true // none counted, or as counted
				}
			}
			return err
		}
		// Counted now: a later insert that fails leaves these to no one.
		offered := 0
		for _, b := range byTarget[target] {
			offered += len(b.Events)
			w.ledgerOf(b.ID).groupEvents = true
		}
		byTarget[target] = nil
		w.eventsStored(offered, int(tag.RowsAffected()))
		return nil
	}
	pending := map[string]int{}
	for _, b := range bs {
		if len(b.Events) == 0 {
			continue
		}
		if pending[b.Target]+len(b.Events) > maxEvents {
			if err := insert(b.Target); err != nil {
				return err
			}
			pending[b.Target] = 0
		}
		if _, ok := pending[b.Target]; !ok {
			targets = append(targets, b.Target)
		}
		byTarget[b.Target] = append(byTarget[b.Target], b)
		pending[b.Target] += len(b.Events)
	}
	for _, target := range targets {
		if err := insert(target); err != nil {
			return err
		}
	}
	for _, b := range bs {
		w.committed(b, start, collectormetrics.BatchStored, len(b.Samples))
	}
	w.o.log.Debug("group stored by shard", "batches", len(bs), "shards", len(shards))
	return nil
}

// batchPart is a part of a batch.
type batchPart struct {
	b *rows.Batch
	p part
}

// storeShardGroup stores parts of one shard with their ledger rows and
// the latest values of their series, in one transaction: BEGIN with the
// fencing check of each target, then the ledger rows, samples, latest and
// COMMIT in one pipeline.
func (w *Writer) storeShardGroup(ctx context.Context, bps []batchPart) error {
	bs := make([]*rows.Batch, len(bps))
	for i, bp := range bps {
		bs[i] = bp.b
	}
	return w.inPipeline(ctx, bs, func(pc *pgx.Conn, open *bool) error { return w.storeShardGroupOn(ctx, pc, open, bps) })
}

// storeShardGroupOn is storeShardGroup's transaction, fenced and open on pc.
func (w *Writer) storeShardGroupOn(ctx context.Context, pc *pgx.Conn, open *bool, bps []batchPart) error {
	bt := &pgx.Batch{}
	var all [][]rows.Sample
	for _, bp := range bps {
		var firstTS, lastTS any
		if len(bp.p.samples) > 0 {
			f, l := (&rows.Batch{Samples: bp.p.samples}).TSRange()
			firstTS, lastTS = tsOf(f), tsOf(l)
		}
		bt.Queue(ledgerPartSQL, bp.p.key, bp.b.ID, bp.b.Collector, bp.b.Target, bp.b.Epoch, len(bp.p.samples)+bp.p.events, firstTS, lastTS)
		samples := bp.p.samples
		queueValues(bt, samplesValuesSQL, "", bp.b.ID, len(samples), func(k int) *rows.Sample { return &samples[k] })
		all = append(all, samples)
	}
	var newest []*rows.Sample
	for _, samples := range all {
		newest = append(newest, latestOf(samples)...)
	}
	newest = latestOf(derefSamples(newest))
	queueValues(bt, latestValuesSQL, latestConflictSQL, 0, len(newest), func(k int) *rows.Sample { return newest[k] })
	bt.Queue("COMMIT")
	if err := pc.SendBatch(ctx, bt).Close(); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" && strings.HasPrefix(pe.ConstraintName, "ingest_ledger_pkey") {
			return errLedgerConflict
		}
		if commitInDoubt(err) {
			// The COMMIT was sent with the rest and may have been
			// applied: the batches' retry, one by one, that finds these
			// parts in the ledger counts them (storeCitus).
			for _, bp := range bps {
				w.ledgerOf(bp.b.ID).parts[bp.p.key] = partTry{samples: len(bp.p.samples)}
			}
		}
		return err
	}
	*open = false
	return nil
}

// derefSamples copies the samples ss point to.
func derefSamples(ss []*rows.Sample) []rows.Sample {
	out := make([]rows.Sample, len(ss))
	for i, s := range ss {
		out[i] = *s
	}
	return out
}
