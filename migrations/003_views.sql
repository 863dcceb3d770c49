-- lhcnp schema 3: views an NMS, the tuner and the dashboard read without
-- knowing how the collector stores values. docs/collector.md ("Views") gives
-- every column and its unit. Values come from the typed columns of samples:
-- the numeric ones (v_int, v_num, v_float) as value_num, all of them as
-- value_text. Leaves are matched by their schema path (keys removed), as the
-- collector writes it: /lhcnp/interfaces/interface/queues/queue/state/...

-- A number as bigint, NULL when it does not fit: a bogus value from one
-- switch must not make a view fail for everyone.
CREATE FUNCTION lhcnp_int(v numeric) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN v BETWEEN -9223372036854775808 AND 9223372036854775807 THEN round(v)::bigint END
$$;

-- The queue id of a series' keys, NULL when it is not a number.
CREATE FUNCTION lhcnp_queue_id(keys jsonb) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN keys ->> 'id' ~ '^[0-9]{1,9}$' THEN (keys ->> 'id')::integer END
$$;

-- Every sample with its series, the value as a number and as text, and its
-- flags spelled out.
CREATE VIEW series_values AS
SELECT s.ts,
       s.series_id,
       se.target,
       se.path,
       se.schema_path,
       se.keys,
       COALESCE(s.v_num, s.v_int::numeric, s.v_float::numeric) AS value_num,
       COALESCE(s.v_text, s.v_bool::text, s.v_int::text, s.v_num::text, s.v_float::text) AS value_text,
       (s.flags & 1) <> 0 AS initial_sync,
       (s.flags & 2) <> 0 AS deleted,
       (s.flags & 4) <> 0 AS counter_reset,
       s.batch_id
FROM samples s
JOIN series se ON se.id = s.series_id;

-- The value of one leaf (target, list keys, schema path) at an instant: its
-- latest sample at or before `at`; NULL values when that sample is a delete,
-- no row when there is none. Inlined by the planner (a STABLE SQL function
-- returning a table), so the views below stay index lookups.
CREATE FUNCTION lhcnp_leaf_at(p_target text, p_keys jsonb, p_schema_path text, p_at timestamptz)
RETURNS TABLE (ts timestamptz, value_num numeric, value_text text)
LANGUAGE sql STABLE AS $$
    SELECT x.ts,
           CASE WHEN x.flags & 2 = 0 THEN COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric) END,
           CASE WHEN x.flags & 2 = 0 THEN COALESCE(x.v_text, x.v_bool::text, x.v_int::text, x.v_num::text, x.v_float::text) END
    FROM samples x
    -- The series id as a scalar first: then the newest sample at or before
    -- p_at is one backward step of the (series_id, ts) index per partition,
    -- not a sort of the leaf's whole history.
    WHERE x.series_id = (SELECT k.id FROM series k
                         WHERE k.target = p_target AND k.keys = p_keys AND k.schema_path = p_schema_path)
      AND x.ts <= p_at
    ORDER BY x.ts DESC
    LIMIT 1
$$;

-- Every sample of a counter leaf (a schema path with /counters/) with its
-- increase since the previous sample of the same series. A counter that went
-- backwards, or a sample flagged as a counter reset, counts from zero: the
-- increase is the new value, never negative. The first sample of a series
-- has no increase (NULL).
CREATE VIEW counter_increases AS
SELECT c.ts,
       c.series_id,
       c.target,
       c.path,
       c.schema_path,
       c.keys,
       c.value_num AS value,
       p.ts AS previous_ts,
       CASE WHEN p.ts IS NULL THEN NULL
            WHEN c.counter_reset OR c.value_num < p.value_num THEN c.value_num
            ELSE c.value_num - p.value_num END AS increase,
       extract(epoch FROM c.ts - p.ts)::double precision AS seconds,
       (p.ts IS NOT NULL AND (c.counter_reset OR c.value_num < p.value_num)) AS reset
FROM series_values c
LEFT JOIN LATERAL (
    SELECT x.ts, COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric) AS value_num
    FROM samples x
    WHERE x.series_id = c.series_id AND x.ts < c.ts AND x.flags & 2 = 0
    ORDER BY x.ts DESC
    LIMIT 1
) p ON true
WHERE c.schema_path LIKE '%/counters/%' AND NOT c.deleted;

-- Per queue, one row per queue-depth sample, with the other congestion
-- leaves as they were at that instant (their latest sample at or before it).
CREATE VIEW queue_congestion AS
SELECT qd.ts,
       qd.target,
       qd.keys ->> 'name' AS interface,
       lhcnp_queue_id(qd.keys) AS queue,
       lhcnp_int(qd.value_num) AS queue_depth_bytes,
       lhcnp_int(peak.value_num) AS peak_queue_depth_bytes,
       lhcnp_int(kmax.value_num) AS kmax_bytes,
       lhcnp_int(kmin.value_num) AS kmin_bytes,
       lhcnp_int(growth.value_num) AS growth_rate_bytes_per_second,
       emr.value_num AS ecn_marking_rate_percent
FROM series_values qd
LEFT JOIN LATERAL lhcnp_leaf_at(qd.target, qd.keys, '/lhcnp/interfaces/interface/queues/queue/state/peak-queue-depth', qd.ts) peak ON true
LEFT JOIN LATERAL lhcnp_leaf_at(qd.target, qd.keys, '/lhcnp/interfaces/interface/queues/queue/state/effective-kmax', qd.ts) kmax ON true
LEFT JOIN LATERAL lhcnp_leaf_at(qd.target, qd.keys, '/lhcnp/interfaces/interface/queues/queue/state/effective-kmin', qd.ts) kmin ON true
LEFT JOIN LATERAL lhcnp_leaf_at(qd.target, qd.keys, '/lhcnp/interfaces/interface/queues/queue/state/queue-growth-rate', qd.ts) growth ON true
LEFT JOIN LATERAL lhcnp_leaf_at(qd.target, qd.keys, '/lhcnp/interfaces/interface/queues/queue/state/ecn-marking-rate', qd.ts) emr ON true
WHERE qd.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/queue-depth'
  AND NOT qd.deleted;

-- Long-haul CNPs sent per queue and action, per second of switch time, from
-- the counters cnp-{notify,pause,rate-reduce,resume}-sent. An increase is
-- counted in the second of the sample that shows it; sampled_seconds is the
-- time those increases cover (about 1 when the counters are sampled at least
-- every second), and rate_per_second their average rate.
CREATE VIEW notifications_per_second AS
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
GROUP BY 1, 2, 3, 4, 5;

-- Per queue, one row per sample time of its drop and PFC pause counters:
-- the counters and their rates since the previous sample.
CREATE VIEW drops_and_pauses AS
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
GROUP BY ts, target, keys;

-- Per queue, the bytes it forwarded per second against its port's effective
-- rate (the interface's effective-port-rate at that instant).
CREATE VIEW queue_utilisation AS
SELECT c.ts,
       c.target,
       c.keys ->> 'name' AS interface,
       lhcnp_queue_id(c.keys) AS queue,
       (c.increase * 8 / NULLIF(c.seconds, 0)::numeric)::double precision AS bits_per_second,
       lhcnp_int(rate.value_num) AS port_rate_bps,
       (c.increase * 800 / NULLIF(c.seconds, 0)::numeric / NULLIF(rate.value_num, 0))::double precision AS utilisation_percent
FROM counter_increases c
LEFT JOIN LATERAL lhcnp_leaf_at(c.target, jsonb_build_object('name', c.keys ->> 'name'),
                                '/lhcnp/interfaces/interface/state/effective-port-rate', c.ts) rate ON true
WHERE c.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/counters/bytes'
  AND c.increase IS NOT NULL;

-- The running configuration of every switch as last reported: every config
-- leaf (a schema path with /config/) that is not deleted.
CREATE VIEW current_config AS
SELECT se.target,
       se.path,
       COALESCE(l.v_text, l.v_bool::text, l.v_int::text, l.v_num::text, l.v_float::text) AS value,
       l.ts,
       se.schema_path
FROM latest l
JOIN series se ON se.id = l.series_id
WHERE se.schema_path LIKE '%/config/%' AND l.flags & 2 = 0;

-- Per queue, the latest value of its state leaves in columns, all of them in
-- `state` (keyed by the path below .../queue/state/), and the RTT_est and
-- port rate of its interface. The tuner and the dashboard start here.
CREATE VIEW queue_latest AS
WITH q AS (
    SELECT se.target,
           se.keys ->> 'name' AS interface,
           lhcnp_queue_id(se.keys) AS queue,
           substr(se.schema_path, length('/lhcnp/interfaces/interface/queues/queue/state/') + 1) AS leaf,
           l.ts,
           COALESCE(l.v_num, l.v_int::numeric, l.v_float::numeric) AS value_num,
           COALESCE(l.v_text, l.v_bool::text, l.v_int::text, l.v_num::text, l.v_float::text) AS value_text,
           l.v_bool
    FROM latest l
    JOIN series se ON se.id = l.series_id
    WHERE se.schema_path LIKE '/lhcnp/interfaces/interface/queues/queue/state/%' AND l.flags & 2 = 0
), i AS (
    SELECT se.target,
           se.keys ->> 'name' AS interface,
           max(COALESCE(l.v_num, l.v_int::numeric)) FILTER (WHERE se.schema_path = '/lhcnp/interfaces/interface/state/effective-rtt-est') AS rtt_est_us,
           max(COALESCE(l.v_num, l.v_int::numeric)) FILTER (WHERE se.schema_path = '/lhcnp/interfaces/interface/state/effective-port-rate') AS port_rate_bps
    FROM latest l
    JOIN series se ON se.id = l.series_id
    WHERE se.schema_path IN ('/lhcnp/interfaces/interface/state/effective-rtt-est',
                             '/lhcnp/interfaces/interface/state/effective-port-rate')
      AND l.flags & 2 = 0
    GROUP BY 1, 2
)
SELECT q.target,
       q.interface,
       q.queue,
       max(q.ts) AS ts,
       lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'queue-depth')) AS queue_depth_bytes,
       lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'peak-queue-depth')) AS peak_queue_depth_bytes,
       lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'effective-kmax')) AS kmax_bytes,
       lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'effective-kmin')) AS kmin_bytes,
       lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'queue-growth-rate')) AS growth_rate_bytes_per_second,
       max(q.value_num) FILTER (WHERE q.leaf = 'ecn-marking-rate') AS ecn_marking_rate_percent,
       lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'congestion-level')) AS congestion_level,
       bool_or(q.v_bool) FILTER (WHERE q.leaf = 'ecn-marking-active') AS ecn_marking_active,
       max(q.value_num) FILTER (WHERE q.leaf = 'alpha') AS alpha,
       max(q.value_text) FILTER (WHERE q.leaf = 'kmax-mode') AS kmax_mode,
       lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'k-base')) AS k_base_bytes,
       lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'v-growth')) AS v_growth_bytes_per_second,
       max(q.value_num) FILTER (WHERE q.leaf = 'v-ecn') AS v_ecn_percent,
       max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-notify-sent') AS cnp_notify_sent,
       max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-pause-sent') AS cnp_pause_sent,
       max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-rate-reduce-sent') AS cnp_rate_reduce_sent,
       max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-resume-sent') AS cnp_resume_sent,
       max(q.value_num) FILTER (WHERE q.leaf = 'counters/dropped-packets') AS dropped_packets,
       max(q.value_num) FILTER (WHERE q.leaf = 'counters/pfc-pause-frames') AS pfc_pause_frames,
       lhcnp_int(max(i.rtt_est_us)) AS rtt_est_us,
       lhcnp_int(max(i.port_rate_bps)) AS port_rate_bps,
       jsonb_object_agg(q.leaf, COALESCE(to_jsonb(q.value_num), to_jsonb(q.v_bool), to_jsonb(q.value_text))) AS state
FROM q
LEFT JOIN i ON i.target = q.target AND i.interface = q.interface
GROUP BY q.target, q.interface, q.queue;

---- create above / drop below ----

DROP VIEW queue_latest;
DROP VIEW current_config;
DROP VIEW queue_utilisation;
DROP VIEW drops_and_pauses;
DROP VIEW notifications_per_second;
DROP VIEW queue_congestion;
DROP VIEW counter_increases;
DROP FUNCTION lhcnp_leaf_at(text, jsonb, text, timestamptz);
DROP VIEW series_values;
DROP FUNCTION lhcnp_queue_id(jsonb);
DROP FUNCTION lhcnp_int(numeric);
