package writer

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/lease"
	"github.com/lhcnp/lhcnp/collector/rows"
)

// A stale batch — its lease epoch is no longer its target's: the lease
// moved while the batch waited (in the spill during an outage), or its
// collector still streams after losing the lease (a zombie) — is merged:
// what it holds that is not stored yet is stored, never a second copy.
//
// A switch stamps a leaf with the time its value last changed, so a
// sample's (series_id, ts) names one change of one leaf. Of a stale
// batch's samples:
//   - one whose (series_id, ts) is in samples is a duplicate (the owner
//     stored it, or an earlier merge);
//   - one at or before its series' latest.ts and not in samples is a
//     value only this collector received (superseded before the owner's
//     stream synced): stored;
//   - one newer than its series' latest.ts (or of a series latest does not
//     hold) is refused: the owner may hold it in a batch not yet committed
//     (a zombie receives what the owner receives, at the same time), and
//     the owner's COPY does not look before it writes. The owner's pending
//     rows of a series are all newer than that series' latest.ts: its
//     promotion skipped what latest held, its stream goes forward in time,
//     and a merge never raises latest (it stores nothing newer). So the
//     rows a merge stores are never among the owner's pending ones;
//   - a delete (flags bit 1) whose series' row just before it or just after
//     it (stored, or in the batch) is a delete is the same disappearance
//     as that one, dated differently by the two collectors (each deletes a
//     leaf a restarted switch no longer sends at its own stream's
//     sync_response, at the oldest newer timestamp it received): a
//     duplicate, so one delete row is stored per disappearance. Where a
//     stored row and a batch's row share the timestamp nearest a delete,
//     the stored row decides (the batch's is a duplicate, never stored),
//     here and on Citus (staleDeletesAgain).
//   - such a delete judged by the row after it only (the row before it
//     not a delete) that ends its series in the batch is held back, in
//     stale_deletes: what follows it in its collector's stream is in a
//     later stale batch, not seen yet. Every merge judges the held deletes
//     of its series with its batch's rows, by the same rule: one no longer
//     next to a delete (a value of the later batch follows it) is a
//     disappearance of its own, stored with its own batch_id; one still
//     next to a delete stays held while it ends its series, and is
//     forgotten once a later row decides it. In the merge's transaction:
//     a crash between two batches loses nothing.
//
// The merge holds the target's lease row FOR NO KEY UPDATE: it waits for
// the owner's transaction in flight (whose fencing check holds the row FOR
// SHARE) and the owner's next one waits for it, and two merges of the
// target (two zombies, or a replay beside a zombie) run one after the
// other, so the anti-join sees every row committed before it. The lease
// row, not an advisory lock: the owner already takes that row in every
// transaction, so the normal path pays nothing; an advisory lock would
// need the owner to take it too. Renewals and acquisitions of that one
// lease wait for the merge, as they wait for the owner's transactions.
// On Citus the owner fences with the target's advisory lock instead
// (lease.FenceLockSQL: the lease row's lock is one lock of the reference
// table's shard there), and the merge takes it exclusive first.
//
// Events have their own unique key (events_identity): every event of a
// stale batch is offered with ON CONFLICT DO NOTHING.
//
// The ledger row (the batch's own epoch and rows) is written in the same
// transaction: a replay of the batch is recognised and skipped, and a
// replay under another id stores nothing twice either (the anti-join).
const (
	staleLockSQL    = `SELECT owner, epoch FROM leases WHERE target = $1 FOR NO KEY UPDATE`
	staleSamplesSQL = `WITH u AS (
  SELECT u.*, $9::bigint AS batch_id, false AS held, false AS ctx FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[], $4::float8[],
    $5::numeric[], $6::bool[], $7::text[], $8::smallint[]) AS u (series_id, ts, v_int, v_float, v_num, v_bool, v_text, flags)
  UNION ALL
  SELECT h.series_id, h.ts, NULL, NULL, NULL, NULL, NULL, h.flags, h.batch_id, true, false FROM stale_deletes h WHERE h.series_id = ANY($1::bigint[])
  UNION ALL
  SELECT o.series_id, o.ts, NULL, NULL, NULL, NULL, NULL, o.flags, NULL, false, true
  FROM unnest($11::bigint[], $12::timestamptz[], $13::smallint[]) AS o (series_id, ts, flags) WHERE o.series_id = ANY($1::bigint[])
), s AS (
  SELECT DISTINCT ON (series_id, ts) * FROM u ORDER BY series_id, ts, held, ctx
), c AS (
  SELECT s.*, EXISTS (SELECT FROM samples x WHERE x.series_id = s.series_id AND x.ts = s.ts) AS stored,
    EXISTS (SELECT FROM latest l WHERE l.series_id = s.series_id AND l.ts >= s.ts) AS passed,
    s.flags & 2 = 2 AND COALESCE((SELECT y.flags & 2 = 2 FROM (SELECT x.ts, x.flags, false AS batched FROM samples x WHERE x.series_id = s.series_id AND x.ts < s.ts
          UNION ALL SELECT z.ts, z.flags, true FROM s z WHERE z.series_id = s.series_id AND z.ts < s.ts) y ORDER BY y.ts DESC, y.batched LIMIT 1), false) AS prev_del,
    s.flags & 2 = 2 AND COALESCE((SELECT y.flags & 2 = 2 FROM (SELECT x.ts, x.flags, false AS batched FROM samples x WHERE x.series_id = s.series_id AND x.ts > s.ts
          UNION ALL SELECT z.ts, z.flags, true FROM s z WHERE z.series_id = s.series_id AND z.ts > s.ts) y ORDER BY y.ts, y.batched LIMIT 1), false) AS next_del,
    NOT EXISTS (SELECT FROM s z WHERE z.series_id = s.series_id AND z.ts > s.ts) AS last
  FROM s
), d AS (
  SELECT c.*, NOT ctx AND passed AND NOT stored AND NOT prev_del AND NOT next_del AS merge,
    NOT ctx AND passed AND NOT stored AND NOT prev_del AND next_del AND last AS hold
  FROM c
), m AS (
  INSERT INTO samples (ts, series_id, v_int, v_float, v_num, v_bool, v_text, flags, batch_id)
  SELECT ts, series_id, v_int, v_float, v_num, v_bool, v_text, flags, batch_id FROM d WHERE merge
  RETURNING 1
), k AS (
  INSERT INTO stale_deletes (series_id, ts, flags, target, batch_id)
  SELECT series_id, ts, flags, $10, batch_id FROM d WHERE hold
  ON CONFLICT DO NOTHING
), f AS (
  DELETE FROM stale_deletes h USING d WHERE h.series_id = d.series_id AND h.ts = d.ts AND NOT d.hold AND NOT d.ctx
)
SELECT count(*) FILTER (WHERE merge AND NOT held), count(*) FILTER (WHERE merge AND held),
  count(*) FILTER (WHERE NOT passed AND NOT stored AND NOT held AND NOT ctx) FROM d`
)

// storeStale merges a stale batch (above) and counts what became of its
// rows. It returns only errors worth retrying. A row PostgreSQL refuses
// is split out (mergeSafe; on Citus mergeStaleCitus's safe, a series too:
// its samples judged as refused rows) and the rest merged; a permanent
// error the split does not settle leaves the batch refused, counted as
// stale_epoch. On Citus, a batch whose every part is
// in the ledger has only its events written (mergeStaleCitus), as
// storeCitus writes them: a refused one dead-lettered, or kept in the
// refused file when its dead letter is refused too.
func (w *Writer) storeStale(ctx context.Context, b *rows.Batch) error {
	start := time.Now()
	merge := w.mergeStale
	if w.citus.on {
		merge = w.mergeStaleCitus
	}
	res, err := merge(ctx, b, false)
	if err != nil && Classify(err) == Permanent {
		// A row PostgreSQL refuses fails the statement it is in (a
		// sample's value is an element of the samples' arrays or
		// VALUES): the merge runs again, its rows in halves under
		// savepoints, as storeSafe stores a refused batch.
		w.o.log.Warn("stale batch refused, splitting out the bad rows", "target", b.Target, "batch", b.ID, "err", err)
		res, err = merge(ctx, b, true)
	}
	if err != nil {
		if Classify(err) == Temporary {
			// On Citus, the events a replay stored before the error are
			// counted (citusEvents); the retry finds them.
			return err
		}
		w.o.m.WriteErrors.WithLabelValues(Permanent.String()).Inc()
		if !res.replayed {
			// Refused whole, but for this writer's parts (stored).
			res = staleResult{refused: b.Rows() - res.own - res.ownDeadRows, own: res.own, ownDeadRows: res.ownDeadRows, ownDead: res.ownDead}
			w.o.log.Warn("stale batch refused: its merge failed", "target", b.Target, "epoch", b.Epoch, "rows", res.refused, "err", err)
		} else {
			// On Citus, the events of a batch in the ledger are stored
			// (a refused one dead-lettered, or kept in the refused file):
			// only the count of those an earlier try stored failed.
			w.o.log.Warn("stale batch: its events not counted", "target", b.Target, "epoch", b.Epoch, "err", err)
		}
	}
	if res.replayed && !w.citus.on {
		// In the ledger: stored by a try of this writer whose COMMIT
		// lost its answer before the lease moved, or a replay.
		return w.replayed(ctx, b, start)
	}
	w.o.m.RoundTrip.Observe(time.Since(start).Seconds())
	m := w.o.m
	// The parts this writer stored before the lease moved (on Citus: the
	// group's, or an earlier try's that failed after them) are counted
	// now, once: not merged, not duplicates.
	m.RowsWritten.WithLabelValues(collectormetrics.TableSamples).Add(float64(res.own))
	w.deadLettered(b, res.ownDead)
	m.DroppedRows.WithLabelValues(collectormetrics.DropStaleEpoch).Add(float64(res.refused))
	if res.replayed {
		// On Citus the events a crash kept from the run that stored the
		// parts are stored now (citusEvents counted them): not merged,
		// and those found not duplicates. With this writer's parts, the
		// batch is stored by this writer, not replayed.
		outcome := collectormetrics.BatchReplayed
		switch {
		case res.ownParts > 0 && res.ownDeadRows+res.deadEvents > 0:
			outcome = collectormetrics.BatchPartial
		case res.ownParts > 0:
			outcome = collectormetrics.BatchStored
		}
		m.Batches.WithLabelValues(outcome).Inc()
		return nil
	}
	// A batch whose merge dead-lettered rows is partial, as a batch
	// stored with its bad rows split out is.
	outcome := collectormetrics.BatchStale
	if res.deadRows > 0 {
		outcome = collectormetrics.BatchPartial
	}
	m.Batches.WithLabelValues(outcome).Inc()
	w.deadLettered(b, res.dead)
	// The held deletes stored now are rows of earlier batches, each counted
	// by its own batch as a duplicate then: stored rows here, not rows of
	// this batch.
	m.RowsWritten.WithLabelValues(collectormetrics.TableSamples).Add(float64(res.samples + res.held))
	m.RowsWritten.WithLabelValues(collectormetrics.TableEvents).Add(float64(res.events))
	m.StaleMerged.WithLabelValues(collectormetrics.TableSamples).Add(float64(res.samples + res.held))
	m.StaleMerged.WithLabelValues(collectormetrics.TableEvents).Add(float64(res.events))
	dup := b.Rows() - res.samples - res.events - res.refused - res.own - res.ownDeadRows - res.deadRows
	m.DroppedRows.WithLabelValues(collectormetrics.DropStaleDuplicate).Add(float64(dup))
	log := w.o.log.Info
	if res.refused+res.deadRows > 0 {
		log = w.o.log.Warn
	}
	log("stale batch merged: its lease had moved", "target", b.Target, "epoch", b.Epoch, "owner", res.owner,
		"owner_epoch", res.epoch, "samples", res.samples, "held_deletes_stored", res.held, "events", res.events, "duplicates", dup, "refused", res.refused,
		"dead_lettered", res.deadRows)
	return nil
}

// staleResult is what a merge did: samples and events stored, rows
// refused (newer than what is stored: the owner may store them), rows
// PostgreSQL refused that only this batch holds (deadRows: dead-lettered,
// or kept in the refused file; dead the dead letters written), whether
// the ledger held the batch already (on Citus its events are offered
// still, and stored and counted: deadEvents as citusEvents's dead),
// and the lease's owner and epoch. On Citus, own counts the samples of
// ownParts, parts in the ledger this writer stored and did not count,
// ownDeadRows their rows dead-lettered and ownDead those not counted.
type staleResult struct {
	samples, events, refused int
	held                     int // deletes of earlier batches, held back (stale_deletes), stored now
	replayed                 bool
	own, ownParts            int
	ownDeadRows              int
	ownDead                  []deadRow
	deadEvents               int
	deadRows                 int
	dead                     []deadRow
	owner                    string
	epoch                    int64
}

// beginMerge opens the merge's transaction and locks b's lease row; tx is
// nil when the batch is refused whole (res says so) or on an error.
func (w *Writer) beginMerge(ctx context.Context, b *rows.Batch) (tx pgx.Tx, res staleResult, err error) {
	tx, err = w.pool.Begin(ctx)
	if err != nil {
		return nil, res, err
	}
	if w.citus.on {
		// On Citus the owner's writes hold the target's advisory lock,
		// not its lease row (lease.FenceLockSQL).
		if _, err := tx.Exec(ctx, lease.TakeoverLockSQL, b.Target); err != nil {
			tx.Rollback(ctx)
			return nil, res, err
		}
	}
	err = tx.QueryRow(ctx, staleLockSQL, b.Target).Scan(&res.owner, &res.epoch)
	if err != nil {
		tx.Rollback(ctx)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		// No lease row (leases are never deleted; someone did): nothing to
		// order the merge with the writes of a next owner.
		w.o.log.Warn("stale batch refused: its target has no lease", "target", b.Target, "epoch", b.Epoch)
		return nil, staleResult{refused: b.Rows()}, nil
	}
	if err != nil {
		return nil, res, err
	}
	return tx, res, nil
}

// mergeStale runs the merge's transaction; safe splits out the rows
// PostgreSQL refuses (mergeSafe).
func (w *Writer) mergeStale(ctx context.Context, b *rows.Batch, safe bool) (staleResult, error) {
	tx, res, err := w.beginMerge(ctx, b)
	if tx == nil {
		return res, err
	}
	defer tx.Rollback(ctx)
	if res.replayed, err = w.claimLedger(ctx, tx, b); err != nil || res.replayed {
		if l := w.ledgerOf(b.ID); res.replayed && l.try != nil && l.try.merge != nil {
			// Merged by a try whose COMMIT lost its answer: what it
			// merged is counted now, once, as this writer's.
			merged := *l.try.merge
			l.try = nil
			return merged, nil
		}
		return res, err
	}
	if safe {
		if err := w.mergeSafe(ctx, tx, b, &res); err != nil {
			return res, err
		}
		return w.commitMerge(ctx, tx, b, res)
	}
	if len(b.Series) > 0 {
		if _, err := tx.Exec(ctx, seriesSQL, seriesArgs(b.Series)...); err != nil {
			return res, err
		}
	}
	if len(b.Samples) > 0 {
		if res.samples, res.held, res.refused, err = mergeSamples(ctx, tx, b, b.Samples); err != nil {
			return res, err
		}
	}
	if res.events, err = writeEvents(ctx, tx, b.ID, b.Events); err != nil {
		return res, err
	}
	return w.commitMerge(ctx, tx, b, res)
}

// commitMerge commits a merge's transaction, which wrote res. A COMMIT
// that lost its answer may have committed: the retry that finds the batch
// in the ledger counts res then (batchLedger.try), as the normal path's retry
// counts what its try wrote, where it counted a replay and the merged
// rows and dead letters nowhere.
func (w *Writer) commitMerge(ctx context.Context, tx pgx.Tx, b *rows.Batch, res staleResult) (staleResult, error) {
	err := tx.Commit(ctx)
	if err != nil && commitInDoubt(err) {
		w.ledgerOf(b.ID).try = &batchTry{merge: &res}
	}
	return res, err
}

// mergeSamples merges samples of batch b (staleSamplesSQL) with the
// deletes earlier merges held back of their series: how many of samples
// were stored, how many held deletes were, and how many of samples refused
// as newer than what is stored. samples may be a part of b's (mergeSafe
// splitting out a refused row): its deletes are judged with all of b's
// rows of their series then, the others' series, timestamps and flags
// given as neighbours only (the ctx rows), as the whole batch judges them
// and as Citus does (staleDeletesAgain reads the whole batch). A refused
// value after a delete still follows it in the collector's stream: judged
// with the part alone, that delete was dropped as the owner's
// disappearance and the one after the value not held back.
func mergeSamples(ctx context.Context, tx pgx.Tx, b *rows.Batch, samples []rows.Sample) (merged, held, refused int, err error) {
	args := append(sampleArrays(len(samples), func(k int) *rows.Sample { return &samples[k] }), b.ID, b.Target)
	var ids []int64
	var tss []time.Time
	var flags []int16
	if len(samples) < len(b.Samples) {
		for _, s := range b.Samples {
			ids, tss, flags = append(ids, s.SeriesID), append(tss, tsOf(s.TS)), append(flags, int16(s.Flags))
		}
	}
	args = append(args, ids, tss, flags)
	var m, h, r int64
	err = tx.QueryRow(ctx, staleSamplesSQL, args...).Scan(&m, &h, &r)
	return int(m), int(h), int(r), err
}

// A row of a stale batch PostgreSQL refuses is judged by what is stored
// of it, as the merge judges the others, without its value (which may be
// what PostgreSQL refuses): a sample stored, or dead-lettered already
// (the target's dead letters hold a sample of its series and time: the
// owner received it too, and dead-lettered it), is a duplicate; one newer
// than its series' latest is refused as stale_epoch (the owner may hold
// it, and dead-letter it); any other, a row only this collector holds, is
// dead-lettered. An event is a duplicate when the target's dead letters
// hold the same row.
const (
	staleRefusedSampleSQL = `SELECT EXISTS (SELECT FROM samples x WHERE x.series_id = $1 AND x.ts = $2),
  EXISTS (SELECT FROM latest l WHERE l.series_id = $1 AND l.ts >= $2),
  EXISTS (SELECT FROM dead_letters d WHERE d.target = $3 AND d."row"->>'table' = 'samples'
    AND d."row"->'row'->'series_id' = to_jsonb($1::bigint) AND d."row"->'row'->>'ts' = $4)`
	staleRefusedEventSQL = `SELECT EXISTS (SELECT FROM dead_letters WHERE target = $1 AND md5("row"::text) = md5($2::jsonb::text))`
)

// mergeSafe merges b's rows in tx as mergeStale does, in halves under
// savepoints down to single rows (splitOut); a single row PostgreSQL
// refuses is judged as above (refusals).
func (w *Writer) mergeSafe(ctx context.Context, tx pgx.Tx, b *rows.Batch, res *staleResult) error {
	r := newRefusals(b)
	err := splitOut(ctx, tx, b.Samples, func(tx pgx.Tx, samples []rows.Sample) (func(), error) {
		if need := seriesOf(samples, r.series); len(need) > 0 {
			if _, err := tx.Exec(ctx, seriesSQL, seriesArgs(need)...); err != nil {
				return nil, err
			}
		}
		merged, held, refused, err := mergeSamples(ctx, tx, b, samples)
		if err != nil {
			return nil, err
		}
		return func() { res.samples, res.held, res.refused = res.samples+merged, res.held+held, res.refused+refused }, nil
	}, func(s rows.Sample, rerr error) error { return r.sample(ctx, tx, res, s, rerr) })
	if err != nil {
		return err
	}
	return w.mergeEventsSafe(ctx, tx, r, res, writeEvents)
}

// refusals are the rows of a stale batch PostgreSQL refused, judged (the
// merge's refusal rules, above) and those to dead-letter kept, once each:
// a batch may hold a refused row twice.
type refusals struct {
	b       *rows.Batch
	series  map[int64]rows.Series // b's series, for the dead letters' paths
	dead    []deadRow
	samples map[seriesTS]bool
	events  map[string]bool
}

func newRefusals(b *rows.Batch) *refusals {
	return &refusals{b: b, series: seriesMap(b.Series), samples: map[seriesTS]bool{}, events: map[string]bool{}}
}

// sample judges s, refused with rerr: a duplicate, refused (counted in
// res) or to dead-letter.
func (r *refusals) sample(ctx context.Context, tx pgx.Tx, res *staleResult, s rows.Sample, rerr error) error {
	at := tsOf(s.TS)
	var stored, passed, lettered bool
	if err := tx.QueryRow(ctx, staleRefusedSampleSQL, s.SeriesID, at, r.b.Target, at.Format(time.RFC3339Nano)).
		Scan(&stored, &passed, &lettered); err != nil {
		return err
	}
	k := seriesTS{s.SeriesID, s.TS / 1000}
	switch {
	case stored || lettered || r.samples[k]:
		// A duplicate.
	case !passed:
		res.refused++
	default:
		r.samples[k] = true
		r.dead = append(r.dead, deadRow{table: "samples", row: sampleRow(s, r.series), err: rerr})
	}
	return nil
}

// event judges e, refused with rerr: a duplicate or to dead-letter.
func (r *refusals) event(ctx context.Context, tx pgx.Tx, e rows.Event, rerr error) error {
	d := deadRow{table: "events", row: e, err: rerr}
	row := d.json()
	var lettered bool
	if err := tx.QueryRow(ctx, staleRefusedEventSQL, r.b.Target, row).Scan(&lettered); err != nil {
		return err
	}
	if !lettered && !r.events[row] {
		r.events[row] = true
		r.dead = append(r.dead, d)
	}
	return nil
}

// mergeEventsSafe offers the batch's events in tx with write, split as
// splitOutEvents splits them, a refused one judged by r; then writes the
// dead letters of r's rows (writeDeadLetters), counted in res.
func (w *Writer) mergeEventsSafe(ctx context.Context, tx pgx.Tx, r *refusals, res *staleResult, write eventsWriter) error {
	err := splitOutEvents(ctx, tx, r.b, write, func(_, stored int) { res.events += stored },
		func(e rows.Event, rerr error) error { return r.event(ctx, tx, e, rerr) })
	if err == nil {
		res.deadRows = len(r.dead)
		res.dead, err = w.writeDeadLetters(ctx, tx, r.b, r.dead)
	}
	return err
}
