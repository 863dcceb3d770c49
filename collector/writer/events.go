package writer

import (
	"context"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/rows"
)

// eventsSQL stores events once: an event already in the table (same
// identity, the unique index events_identity of migration 9: target, kind,
// ts, interface, queue) is skipped and counted, not stored again. Events
// are rare (a CNP is one row where its queue's leaves are dozens of
// samples), so they go in one INSERT of arrays, in the pipeline of the
// ledger rows, rather than by COPY, which cannot skip a conflict.
const eventsSQL = `INSERT INTO events (ts, target, kind, interface, queue, action, parameter, congestion_level,
  source_address, destination_address, source_qp, destination_qp, details, batch_id)
SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::int[], $8::int[],
  $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::jsonb[], $14::bigint[])
ON CONFLICT DO NOTHING`

// eventsArgs are the arrays of eventsSQL: the events of the batches, each
// with its batch's id.
func eventsArgs(bs []*rows.Batch) []any {
	var n int
	for _, b := range bs {
		n += len(b.Events)
	}
	ts, ids := make([]any, 0, n), make([]int64, 0, n)
	targets, kinds, ifaces, actions := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	srcs, dsts, details := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	queues, params, levels, srcQPs, dstQPs := make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
	for _, b := range bs {
		for _, e := range b.Events {
			ts = append(ts, tsOf(e.TS))
			targets, kinds, ifaces, actions = append(targets, e.Target), append(kinds, e.Kind), append(ifaces, e.Interface), append(actions, e.Action)
			srcs, dsts, details = append(srcs, e.SourceAddress), append(dsts, e.DestinationAddress), append(details, e.Details)
			queues, params, levels = append(queues, e.Queue), append(params, e.Parameter), append(levels, e.CongestionLevel)
			srcQPs, dstQPs, ids = append(srcQPs, e.SourceQP), append(dstQPs, e.DestinationQP), append(ids, b.ID)
		}
	}
	return []any{ts, targets, kinds, ifaces, queues, actions, params, levels, srcs, dsts, srcQPs, dstQPs, details, ids}
}

// execer is what writeEvents needs of a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// eventsWriter stores events of batch id once in tx: writeEvents, or on
// Citus writeEventsValues.
type eventsWriter func(ctx context.Context, tx execer, id int64, events []rows.Event) (int, error)

// writeEvents stores events of batch id once; it returns how many were
// stored (the others were in the table already).
func writeEvents(ctx context.Context, tx execer, id int64, events []rows.Event) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	tag, err := tx.Exec(ctx, eventsSQL, eventsArgs([]*rows.Batch{{ID: id, Events: events}})...)
	return int(tag.RowsAffected()), err
}

// eventsStored counts, once a transaction committed, the events it stored
// and those the table already held.
func (w *Writer) eventsStored(offered, stored int) {
	w.o.m.RowsWritten.WithLabelValues(collectormetrics.TableEvents).Add(float64(stored))
	if n := offered - stored; n > 0 {
		w.o.m.EventConflicts.Add(float64(n))
		w.o.log.Warn("events already stored, not stored again", "events", n)
	}
}
