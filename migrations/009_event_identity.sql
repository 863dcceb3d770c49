-- lhcnp schema 9: an event is stored once. An event is an occurrence, not
-- a value: its identity is (target, kind, ts, interface, queue) — for a
-- Long-haul CNP (kind 'cnp') the switch, the queue that sent it and the
-- switch's time of the CNP (the queue's last-cnp/timestamp, which names one
-- CNP: a queue reports one at a time). Whatever happens between two
-- streams (a restart, a crash, a replay of the spill, a handover between
-- collectors, a switch restart, a PostgreSQL outage), the collector may
-- meet the same CNP again; this unique index makes the database refuse a
-- second row of it. The collector inserts events with ON CONFLICT DO
-- NOTHING and counts what was refused (event_conflicts_total): a defect
-- shows as a count, never as a duplicate row. docs/collector.md ("Exactly
-- once").
--
-- Rows stored twice before this schema (the defect of issue 22) are
-- removed first, the copy with the earliest batch kept.

DELETE FROM events e
USING events k
WHERE e.target = k.target AND e.kind = k.kind AND e.ts = k.ts
  AND coalesce(e.interface, '') = coalesce(k.interface, '')
  AND coalesce(e.queue, -1) = coalesce(k.queue, -1)
  AND (coalesce(e.batch_id, 0), e.ctid) > (coalesce(k.batch_id, 0), k.ctid);

-- interface and queue are NULL for an event of no queue: coalesced, so
-- that such events have an identity too (a unique index treats NULLs as
-- distinct).
CREATE UNIQUE INDEX events_identity ON events (target, kind, ts, coalesce(interface, ''), coalesce(queue, -1));
COMMENT ON INDEX events_identity IS
    'an event''s identity: (target, kind, ts, interface, queue); the collector stores an event once (ON CONFLICT DO NOTHING, counted in event_conflicts_total)';

---- create above / drop below ----

DROP INDEX events_identity;
