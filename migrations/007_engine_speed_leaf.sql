-- lhcnp schema 7: a target's speed is a leaf it publishes. Every switch
-- publishes /lhcnp/global/state/engine-speed (simulated seconds per
-- wall-clock second, 1 for real time) like its other state, the collector
-- stores it like any other leaf, and the rate views (notifications_per_second,
-- drops_and_pauses, queue_utilisation) join lhcnp_speed_of, which reads it
-- through lhcnp_leaf_at as queue_utilisation reads the port's rate; the
-- tuner calls lhcnp_speed_at, the same as a scalar. The table target_speeds
-- of schema 6 and its two writers (lhcnp lab, the compose lab's `speeds`
-- service) are gone: nobody has to tell the database a speed the switch
-- already knows.
--
-- Data stored before this migration keeps the speeds it had: each row of
-- target_speeds becomes a sample of the target's engine-speed leaf at its
-- `since` (batch_id 0: written by this migration, not by a collector), so
-- the views answer for old data exactly as schema 6 did. A target that
-- never publishes the leaf is at 1 (real time), as a target without a row
-- was. One that had no row but publishes the leaf after the upgrade (a
-- simulated switch nobody had written a row for) has its older data read
-- at the leaf's first value, as schema 6 read data older than a first row.
-- docs/collector.md ("Rates and time base"), docs/lab.md ("Rates and speed").

-- The rows of target_speeds as samples of the leaf. The series id is the
-- collector's (collector/rows.SeriesID): FNV-1a 64 of the target, a NUL and
-- the canonical path, top bit cleared; numeric arithmetic stands in for
-- uint64 (the XOR touches the low byte only).
DO $$
DECLARE
    leaf  constant text := '/lhcnp/global/state/engine-speed';
    two64 constant numeric := 18446744073709551616;
    t     text;
    h     numeric;
    b     int;
    sid   bigint;
BEGIN
    FOR t IN SELECT DISTINCT target FROM target_speeds LOOP
        h := 14695981039346656037;
        FOR b IN SELECT get_byte(x.bytes, i) FROM
                 (SELECT convert_to(t, 'UTF8') || '\x00'::bytea || convert_to(leaf, 'UTF8') AS bytes) x,
                 generate_series(0, length(x.bytes) - 1) i ORDER BY i LOOP
            h := mod((h - mod(h, 256) + (mod(h, 256)::int # b)) * 1099511628211, two64);
        END LOOP;
        sid := mod(h, two64 / 2)::bigint;
        INSERT INTO series (id, target, path, schema_path, keys, yang_type, unit)
        VALUES (sid, t, leaf, leaf, '{}', 'decimal64', 'simulated-seconds-per-second')
        ON CONFLICT DO NOTHING;
        INSERT INTO samples (ts, series_id, v_float, flags, batch_id)
        SELECT s.since, sid, s.speed, 0, 0 FROM target_speeds s WHERE s.target = t;
        INSERT INTO latest (series_id, ts, v_float, flags)
        SELECT sid, s.since, s.speed, 0 FROM target_speeds s WHERE s.target = t ORDER BY s.since DESC LIMIT 1
        ON CONFLICT (series_id) DO NOTHING;
    END LOOP;
END $$;

-- The speed of a target at an instant: the newest valid value of its
-- engine-speed leaf at or before it (from latest when that is the newest
-- value, the usual case of data after the last publication: one primary-key
-- lookup; else from samples), else the leaf's first valid value (the rows
-- of a bucket that starts before the switch's first publication, e.g.
-- notifications_per_second's whole seconds), else its value in latest (a
-- switch publishes its speed once per subscription: past the retention, the
-- partition holding that sample is gone while the switch still runs at that
-- speed), else 1. A value that is not a positive number (a deleted leaf, a
-- bogus switch) is skipped, the previous valid one read instead: the views
-- divide by the speed. A set-returning SQL function so that the planner
-- inlines it into the views' LATERAL joins, as it does lhcnp_leaf_at: index
-- lookups, no function call per row; PARALLEL SAFE (it only reads), or the
-- views lose their parallel plans.
-- A stored value of the leaf as a speed: NULL for a deleted leaf or a value
-- that is not a positive finite number (an expression the planner inlines).
CREATE FUNCTION lhcnp_valid_speed(p_num numeric, p_float double precision, p_int bigint, p_flags smallint)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_flags & 2 = 0 AND COALESCE(p_num, p_float::numeric, p_int::numeric) > 0
                     AND COALESCE(p_num, p_float::numeric, p_int::numeric) < 'Infinity'
                THEN COALESCE(p_num, p_float::numeric, p_int::numeric)::double precision END
$$;

CREATE FUNCTION lhcnp_speed_of(p_target text, p_at timestamptz) RETURNS TABLE (speed double precision)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT COALESCE(
        (SELECT lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags)
         FROM latest x WHERE x.series_id = k.id AND x.ts <= p_at),
        (SELECT lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags)
         FROM samples x
         WHERE x.series_id = k.id AND x.ts <= p_at AND lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags) IS NOT NULL
         ORDER BY x.ts DESC LIMIT 1),
        (SELECT lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags)
         FROM samples x
         WHERE x.series_id = k.id AND lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags) IS NOT NULL
         ORDER BY x.ts LIMIT 1),
        (SELECT lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags)
         FROM latest x WHERE x.series_id = k.id),
        1)
    FROM (SELECT (SELECT s.id FROM series s
                  WHERE s.target = p_target AND s.keys = '{}' AND s.schema_path = '/lhcnp/global/state/engine-speed') AS id) k
    -- Keeps the inlined subquery a subquery: pulled up, its expression
    -- would be copied into every column that uses the speed and looked
    -- up once per use.
    OFFSET 0
$$;
COMMENT ON FUNCTION lhcnp_speed_of(text, timestamptz) IS
    'one row: the speed of a target at an instant (its /lhcnp/global/state/engine-speed leaf; 1 when it never published one), for LATERAL joins';

-- The same as a scalar, for the tuner and an NMS (schema 6's name).
CREATE OR REPLACE FUNCTION lhcnp_speed_at(p_target text, p_at timestamptz) RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT s.speed FROM lhcnp_speed_of(p_target, p_at) s
$$;
COMMENT ON FUNCTION lhcnp_speed_at(text, timestamptz) IS
    'simulated seconds per wall-clock second of a target at an instant (its /lhcnp/global/state/engine-speed leaf; 1 when it never published one)';

-- The rate views of schema 6, their columns unchanged, the speed joined
-- through lhcnp_speed_of.
CREATE OR REPLACE VIEW notifications_per_second AS
SELECT n.*,
       sp.speed,
       n.rate_per_second / sp.speed AS rate_per_simulated_second
FROM (
    SELECT date_trunc('second', ts) AS second,
           target,
           keys ->> 'name' AS interface,
           lhcnp_queue_id(keys) AS queue,
           CASE schema_path
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent' THEN 'NOTIFY'
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent' THEN 'PAUSE'
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent' THEN 'RATE_REDUCE'
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent' THEN 'RESUME'
           END AS action,
           lhcnp_int(sum(increase)) AS notifications,
           sum(seconds) AS sampled_seconds,
           (sum(increase) / NULLIF(sum(seconds), 0))::double precision AS rate_per_second,
           bool_or(reset) AS counter_reset
    FROM counter_increases
    WHERE schema_path IN ('/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent',
                          '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent',
                          '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent',
                          '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent')
      AND increase IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5
) n
CROSS JOIN LATERAL lhcnp_speed_of(n.target, n.second) sp;

CREATE OR REPLACE VIEW drops_and_pauses AS
SELECT d.*,
       sp.speed,
       d.dropped_packets_per_second / sp.speed AS dropped_packets_per_simulated_second,
       d.pfc_pause_frames_per_second / sp.speed AS pfc_pause_frames_per_simulated_second
FROM (
    SELECT ts,
           target,
           keys ->> 'name' AS interface,
           lhcnp_queue_id(keys) AS queue,
           lhcnp_int(max(value) FILTER (WHERE schema_path LIKE '%/dropped-packets')) AS dropped_packets,
           lhcnp_int(max(value) FILTER (WHERE schema_path LIKE '%/pfc-pause-frames')) AS pfc_pause_frames,
           max(increase / NULLIF(seconds, 0)::numeric) FILTER (WHERE schema_path LIKE '%/dropped-packets')::double precision AS dropped_packets_per_second,
           max(increase / NULLIF(seconds, 0)::numeric) FILTER (WHERE schema_path LIKE '%/pfc-pause-frames')::double precision AS pfc_pause_frames_per_second,
           bool_or(reset) AS counter_reset
    FROM counter_increases
    WHERE schema_path IN ('/lhcnp/interfaces/interface/queues/queue/state/counters/dropped-packets',
                          '/lhcnp/interfaces/interface/queues/queue/state/counters/pfc-pause-frames')
    GROUP BY ts, target, keys
) d
CROSS JOIN LATERAL lhcnp_speed_of(d.target, d.ts) sp;

CREATE OR REPLACE VIEW queue_utilisation AS
SELECT c.ts,
       c.target,
       c.keys ->> 'name' AS interface,
       lhcnp_queue_id(c.keys) AS queue,
       (c.increase * 8 / NULLIF(c.seconds, 0)::numeric)::double precision AS bits_per_second,
       lhcnp_int(rate.value_num) AS port_rate_bps,
       (c.increase * 800 / NULLIF(c.seconds * sp.speed, 0)::numeric / NULLIF(rate.value_num, 0))::double precision AS utilisation_percent,
       sp.speed,
       (c.increase * 8 / NULLIF(c.seconds * sp.speed, 0)::numeric)::double precision AS bits_per_simulated_second
FROM counter_increases c
LEFT JOIN LATERAL lhcnp_leaf_at(c.target, jsonb_build_object('name', c.keys ->> 'name'),
                                '/lhcnp/interfaces/interface/state/effective-port-rate', c.ts) rate ON true
CROSS JOIN LATERAL lhcnp_speed_of(c.target, c.ts) sp
WHERE c.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/counters/bytes'
  AND c.increase IS NOT NULL;

DROP TABLE target_speeds;

COMMENT ON VIEW notifications_per_second IS
    'Long-haul CNPs sent per queue, action and wall-clock second; rate_per_second is per wall-clock second, rate_per_simulated_second per second of the dataplane''s clock (speed: the switch''s engine-speed leaf).';
COMMENT ON COLUMN notifications_per_second.speed IS 'simulated seconds per wall-clock second (the switch''s engine-speed leaf, lhcnp_speed_of; 1 for a real switch)';
COMMENT ON COLUMN drops_and_pauses.speed IS 'simulated seconds per wall-clock second (the switch''s engine-speed leaf, lhcnp_speed_of; 1 for a real switch)';
COMMENT ON COLUMN queue_utilisation.speed IS 'simulated seconds per wall-clock second (the switch''s engine-speed leaf, lhcnp_speed_of; 1 for a real switch)';

---- create above / drop below ----

COMMENT ON VIEW notifications_per_second IS
    'Long-haul CNPs sent per queue, action and wall-clock second; rate_per_second is per wall-clock second, rate_per_simulated_second per second of the dataplane''s clock (speed: target_speeds).';

-- Schema 6's table, refilled from the leaf's samples (those this migration
-- wrote and those collected since: the views keep answering as they did).
CREATE TABLE target_speeds (
    target text NOT NULL CHECK (target <> ''),
    since  timestamptz NOT NULL DEFAULT now(),
    speed  double precision NOT NULL CHECK (speed > 0 AND speed < 'Infinity'),
    PRIMARY KEY (target, since)
);
COMMENT ON TABLE target_speeds IS
    'Simulated seconds per wall-clock second of a target''s dataplane from `since` on; no row: 1 (a real switch).';
COMMENT ON COLUMN target_speeds.speed IS 'simulated seconds per wall-clock second (> 0)';

INSERT INTO target_speeds (target, since, speed)
SELECT DISTINCT ON (k.target, x.ts) k.target, x.ts, COALESCE(x.v_num, x.v_float::numeric, x.v_int::numeric)::double precision
FROM series k
JOIN samples x ON x.series_id = k.id
WHERE k.schema_path = '/lhcnp/global/state/engine-speed' AND k.keys = '{}'
  AND x.flags & 2 = 0
  AND COALESCE(x.v_num, x.v_float::numeric, x.v_int::numeric) > 0
  AND COALESCE(x.v_num, x.v_float::numeric, x.v_int::numeric) < 'Infinity'
ORDER BY k.target, x.ts;

-- The samples this migration wrote go with the table they came from, and
-- the leaf's series with them when nothing else was collected for it.
DELETE FROM samples x USING series k
WHERE x.series_id = k.id AND x.batch_id = 0
  AND k.schema_path = '/lhcnp/global/state/engine-speed' AND k.keys = '{}';
DELETE FROM latest l USING series k
WHERE l.series_id = k.id AND k.schema_path = '/lhcnp/global/state/engine-speed' AND k.keys = '{}'
  AND NOT EXISTS (SELECT 1 FROM samples x WHERE x.series_id = k.id);
DELETE FROM series k
WHERE k.schema_path = '/lhcnp/global/state/engine-speed' AND k.keys = '{}'
  AND NOT EXISTS (SELECT 1 FROM samples x WHERE x.series_id = k.id);

CREATE OR REPLACE FUNCTION lhcnp_speed_at(p_target text, p_at timestamptz) RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT COALESCE(
        (SELECT s.speed FROM target_speeds s WHERE s.target = p_target AND s.since <= p_at ORDER BY s.since DESC LIMIT 1),
        (SELECT s.speed FROM target_speeds s WHERE s.target = p_target ORDER BY s.since LIMIT 1),
        1)
$$;
COMMENT ON FUNCTION lhcnp_speed_at(text, timestamptz) IS
    'simulated seconds per wall-clock second of a target at an instant (target_speeds; 1 without a row)';

-- Schema 6's views, with their comments.
CREATE OR REPLACE VIEW notifications_per_second AS
SELECT n.*,
       sp.speed,
       n.rate_per_second / sp.speed AS rate_per_simulated_second
FROM (
    SELECT date_trunc('second', ts) AS second,
           target,
           keys ->> 'name' AS interface,
           lhcnp_queue_id(keys) AS queue,
           CASE schema_path
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent' THEN 'NOTIFY'
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent' THEN 'PAUSE'
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent' THEN 'RATE_REDUCE'
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent' THEN 'RESUME'
           END AS action,
           lhcnp_int(sum(increase)) AS notifications,
           sum(seconds) AS sampled_seconds,
           (sum(increase) / NULLIF(sum(seconds), 0))::double precision AS rate_per_second,
           bool_or(reset) AS counter_reset
    FROM counter_increases
    WHERE schema_path IN ('/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent',
                          '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent',
                          '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent',
                          '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent')
      AND increase IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5
) n
CROSS JOIN LATERAL (SELECT lhcnp_speed_at(n.target, n.second) AS speed) sp;

CREATE OR REPLACE VIEW drops_and_pauses AS
SELECT d.*,
       sp.speed,
       d.dropped_packets_per_second / sp.speed AS dropped_packets_per_simulated_second,
       d.pfc_pause_frames_per_second / sp.speed AS pfc_pause_frames_per_simulated_second
FROM (
    SELECT ts,
           target,
           keys ->> 'name' AS interface,
           lhcnp_queue_id(keys) AS queue,
           lhcnp_int(max(value) FILTER (WHERE schema_path LIKE '%/dropped-packets')) AS dropped_packets,
           lhcnp_int(max(value) FILTER (WHERE schema_path LIKE '%/pfc-pause-frames')) AS pfc_pause_frames,
           max(increase / NULLIF(seconds, 0)::numeric) FILTER (WHERE schema_path LIKE '%/dropped-packets')::double precision AS dropped_packets_per_second,
           max(increase / NULLIF(seconds, 0)::numeric) FILTER (WHERE schema_path LIKE '%/pfc-pause-frames')::double precision AS pfc_pause_frames_per_second,
           bool_or(reset) AS counter_reset
    FROM counter_increases
    WHERE schema_path IN ('/lhcnp/interfaces/interface/queues/queue/state/counters/dropped-packets',
                          '/lhcnp/interfaces/interface/queues/queue/state/counters/pfc-pause-frames')
    GROUP BY ts, target, keys
) d
CROSS JOIN LATERAL (SELECT lhcnp_speed_at(d.target, d.ts) AS speed) sp;

CREATE OR REPLACE VIEW queue_utilisation AS
SELECT c.ts,
       c.target,
       c.keys ->> 'name' AS interface,
       lhcnp_queue_id(c.keys) AS queue,
       (c.increase * 8 / NULLIF(c.seconds, 0)::numeric)::double precision AS bits_per_second,
       lhcnp_int(rate.value_num) AS port_rate_bps,
       (c.increase * 800 / NULLIF(c.seconds * sp.speed, 0)::numeric / NULLIF(rate.value_num, 0))::double precision AS utilisation_percent,
       sp.speed,
       (c.increase * 8 / NULLIF(c.seconds * sp.speed, 0)::numeric)::double precision AS bits_per_simulated_second
FROM counter_increases c
LEFT JOIN LATERAL lhcnp_leaf_at(c.target, jsonb_build_object('name', c.keys ->> 'name'),
                                '/lhcnp/interfaces/interface/state/effective-port-rate', c.ts) rate ON true
CROSS JOIN LATERAL (SELECT lhcnp_speed_at(c.target, c.ts) AS speed) sp
WHERE c.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/counters/bytes'
  AND c.increase IS NOT NULL;

COMMENT ON COLUMN notifications_per_second.speed IS 'simulated seconds per wall-clock second (lhcnp_speed_at; 1 for a real switch)';
COMMENT ON COLUMN drops_and_pauses.speed IS 'simulated seconds per wall-clock second (lhcnp_speed_at; 1 for a real switch)';
COMMENT ON COLUMN queue_utilisation.speed IS 'simulated seconds per wall-clock second (lhcnp_speed_at; 1 for a real switch)';

DROP FUNCTION lhcnp_speed_of(text, timestamptz);
DROP FUNCTION lhcnp_valid_speed(numeric, double precision, bigint, smallint);
