-- lhcnp schema 6: the time base of rates. A switch's samples carry wall-clock
-- timestamps, so the rates the views compute from counters (increase over the
-- time between two samples) are per wall-clock second. The switch's own rate
-- leaves (queue-growth-rate, v-growth, the flows' arrival-rate) are per second
-- of its dataplane's clock. For a real switch the two are the same; a
-- simulated one (lhcnp switch, lhcnp lab) runs its dataplane at a speed:
-- simulated seconds per wall-clock second (the lab's default is 0.05). The
-- table target_speeds records each target's speed, and the rate views gain
-- columns per simulated second, rate per wall-clock second / speed, so an NMS
-- reads both units from the views without knowing the lab's speed.
-- docs/collector.md ("Views") and docs/lab.md ("Rates and speed").

-- A target's speed from `since` on; a target without a row runs at speed 1
-- (real time). `lhcnp lab` writes its switches' rows when it starts; the
-- compose lab's one-shot service `speeds` writes them from the fabric file.
CREATE TABLE target_speeds (
    target text NOT NULL CHECK (target <> ''),
    since  timestamptz NOT NULL DEFAULT now(),
    speed  double precision NOT NULL CHECK (speed > 0 AND speed < 'Infinity'),
    PRIMARY KEY (target, since)
);
COMMENT ON TABLE target_speeds IS
    'Simulated seconds per wall-clock second of a target''s dataplane from `since` on; no row: 1 (a real switch).';
COMMENT ON COLUMN target_speeds.speed IS 'simulated seconds per wall-clock second (> 0)';

-- The speed of a target at an instant: that of its latest row at or before
-- it, else its earliest row (samples written before the row was), else 1.
CREATE FUNCTION lhcnp_speed_at(p_target text, p_at timestamptz) RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT COALESCE(
        (SELECT s.speed FROM target_speeds s WHERE s.target = p_target AND s.since <= p_at ORDER BY s.since DESC LIMIT 1),
        (SELECT s.speed FROM target_speeds s WHERE s.target = p_target ORDER BY s.since LIMIT 1),
        1)
$$;
COMMENT ON FUNCTION lhcnp_speed_at(text, timestamptz) IS
    'simulated seconds per wall-clock second of a target at an instant (target_speeds; 1 without a row)';

-- The views of schema 3, their columns unchanged, with the speed and the
-- rates per simulated second appended.
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

-- utilisation_percent compares the queue's output with its port's rate, a
-- rate of the dataplane's clock: it is now computed per simulated second
-- (the same at speed 1; at another speed it was off by the speed).
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

-- Units, for an NMS reading the catalogue.
COMMENT ON VIEW counter_increases IS
    'Every counter sample with its increase since the previous one; seconds is wall-clock time between the switch''s timestamps.';
COMMENT ON COLUMN counter_increases.seconds IS 'wall-clock seconds since the previous sample (the switch''s timestamps)';
COMMENT ON VIEW notifications_per_second IS
    'Long-haul CNPs sent per queue, action and wall-clock second; rate_per_second is per wall-clock second, rate_per_simulated_second per second of the dataplane''s clock (speed: target_speeds).';
COMMENT ON COLUMN notifications_per_second.sampled_seconds IS 'wall-clock seconds covered by the increases';
COMMENT ON COLUMN notifications_per_second.rate_per_second IS 'notifications per wall-clock second';
COMMENT ON COLUMN notifications_per_second.speed IS 'simulated seconds per wall-clock second (lhcnp_speed_at; 1 for a real switch)';
COMMENT ON COLUMN notifications_per_second.rate_per_simulated_second IS 'notifications per simulated second: rate_per_second / speed';
COMMENT ON VIEW drops_and_pauses IS
    'Drop and PFC pause counters per queue and sample, with their rates per wall-clock second and per simulated second.';
COMMENT ON COLUMN drops_and_pauses.dropped_packets_per_second IS 'packets per wall-clock second';
COMMENT ON COLUMN drops_and_pauses.pfc_pause_frames_per_second IS 'frames per wall-clock second';
COMMENT ON COLUMN drops_and_pauses.speed IS 'simulated seconds per wall-clock second (lhcnp_speed_at; 1 for a real switch)';
COMMENT ON COLUMN drops_and_pauses.dropped_packets_per_simulated_second IS 'packets per simulated second';
COMMENT ON COLUMN drops_and_pauses.pfc_pause_frames_per_simulated_second IS 'frames per simulated second';
COMMENT ON VIEW queue_utilisation IS
    'A queue''s output rate against its port''s rate, per counters/bytes sample; bits_per_second per wall-clock second, bits_per_simulated_second and port_rate_bps per simulated second.';
COMMENT ON COLUMN queue_utilisation.bits_per_second IS 'bits per wall-clock second';
COMMENT ON COLUMN queue_utilisation.port_rate_bps IS 'bits per simulated second (the switch''s effective-port-rate leaf)';
COMMENT ON COLUMN queue_utilisation.utilisation_percent IS 'bits_per_simulated_second / port_rate_bps, percent';
COMMENT ON COLUMN queue_utilisation.speed IS 'simulated seconds per wall-clock second (lhcnp_speed_at; 1 for a real switch)';
COMMENT ON COLUMN queue_utilisation.bits_per_simulated_second IS 'bits per simulated second: bits_per_second / speed';
COMMENT ON COLUMN queue_congestion.growth_rate_bytes_per_second IS 'bytes per simulated second (the switch''s queue-growth-rate leaf)';
COMMENT ON COLUMN queue_latest.growth_rate_bytes_per_second IS 'bytes per simulated second (the switch''s queue-growth-rate leaf)';
COMMENT ON COLUMN queue_latest.v_growth_bytes_per_second IS 'bytes per simulated second (the switch''s v-growth leaf)';
COMMENT ON FUNCTION notifications_between(timestamptz, timestamptz) IS
    'the rows of notifications_per_second for a window; rate_per_second is per wall-clock second (divide by lhcnp_speed_at for simulated seconds)';

---- create above / drop below ----

COMMENT ON FUNCTION notifications_between(timestamptz, timestamptz) IS NULL;
COMMENT ON COLUMN queue_latest.v_growth_bytes_per_second IS NULL;
COMMENT ON COLUMN queue_latest.growth_rate_bytes_per_second IS NULL;
COMMENT ON COLUMN queue_congestion.growth_rate_bytes_per_second IS NULL;
COMMENT ON COLUMN counter_increases.seconds IS NULL;
COMMENT ON VIEW counter_increases IS NULL;

-- The views of schema 3 as they were (a view cannot lose columns in place).
DROP VIEW queue_utilisation;
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

DROP VIEW drops_and_pauses;
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

DROP VIEW notifications_per_second;
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

DROP FUNCTION lhcnp_speed_at(text, timestamptz);
DROP TABLE target_speeds;
