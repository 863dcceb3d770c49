-- lhcnp schema 14: queue_utilisation on Citus in one pass.
--
-- Schema 12 made queue_utilisation usable on a Citus coordinator by
-- calling lhcnp_leaf_at (the port's rate) and lhcnp_speed_of (the target's
-- speed) from the coordinator, a few queries per row: 19-23 s for a
-- window of 100 rows of two targets (docs/scaling.md, Step 3). Here the
-- view reads the three things it needs once each and joins them on the
-- coordinator:
--
-- * the bytes counter's increases (counter_increases, as before);
-- * every sample of each port's effective-port-rate with the time of the
--   next one (lead over the series, pushed down to the shards): the rate
--   in force over [ts, next);
-- * each target's valid engine-speed samples and its latest row, from
--   which the speed at an instant is lhcnp_speed_of's (the latest value
--   when the instant is at or after it; else the last valid sample at or
--   before; else the first valid sample; else the latest; else 1).
--
-- The rate and the speed change seldom (samples store changes only), so
-- the coordinator's join is over few rows. queue_utilisation_between(from,
-- to) gives the rows of a window and reads only the increases in it, as
-- queue_congestion_between does; the view is it over all time. On plain
-- PostgreSQL the view stays schemas 3 and 10's, which PostgreSQL plans
-- well, and queue_utilisation_between is the view with a filter (inlined),
-- so a reader (the tuner) asks for a window the same way on both.
-- TestCitusViewsSameAsOneNode compares both, row by row.

-- On one node: the view with a filter, which PostgreSQL inlines.
CREATE FUNCTION queue_utilisation_between(p_from timestamptz, p_to timestamptz)
RETURNS TABLE (
    ts                        timestamptz,
    target                    text,
    interface                 text,
    queue                     integer,
    bits_per_second           double precision,
    port_rate_bps             bigint,
    utilisation_percent       double precision,
    speed                     double precision,
    bits_per_simulated_second double precision
)
LANGUAGE sql STABLE AS $f$
    SELECT u.ts, u.target, u.interface, u.queue, u.bits_per_second, u.port_rate_bps,
           u.utilisation_percent, u.speed, u.bits_per_simulated_second
    FROM queue_utilisation u
    WHERE u.ts >= p_from AND u.ts < p_to
$f$;
COMMENT ON FUNCTION queue_utilisation_between(timestamptz, timestamptz) IS
    'queue_utilisation''s rows with from <= ts < to';

DO $$
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'public.samples'::regclass) THEN
        RETURN;
    END IF;

    CREATE OR REPLACE FUNCTION queue_utilisation_between(p_from timestamptz, p_to timestamptz)
    RETURNS TABLE (
        ts                        timestamptz,
        target                    text,
        interface                 text,
        queue                     integer,
        bits_per_second           double precision,
        port_rate_bps             bigint,
        utilisation_percent       double precision,
        speed                     double precision,
        bits_per_simulated_second double precision
    )
    LANGUAGE plpgsql STABLE AS $f$
    #variable_conflict use_column
    BEGIN
        RETURN QUERY
        WITH c AS MATERIALIZED (
            SELECT i.ts, i.target, i.keys, i.increase, i.seconds
            FROM counter_increases i
            WHERE i.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/counters/bytes'
              AND i.increase IS NOT NULL
              AND i.ts >= p_from AND i.ts < p_to
        ), rate AS MATERIALIZED (
            SELECT k.target, k.keys, x.ts,
                   lead(x.ts) OVER (PARTITION BY x.series_id ORDER BY x.ts) AS next_ts,
                   CASE WHEN x.flags & 2 = 0 THEN COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric) END AS v
            FROM series k
            JOIN samples x ON x.series_id = k.id
            WHERE k.schema_path = '/lhcnp/interfaces/interface/state/effective-port-rate'
              AND x.ts < p_to
        ), speed_series AS MATERIALIZED (
            SELECT s.id, s.target FROM series s
            WHERE s.keys = '{}' AND s.schema_path = '/lhcnp/global/state/engine-speed'
        ), speed_valid AS MATERIALIZED (
            SELECT ss.target, x.ts, lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags) AS v
            FROM speed_series ss
            JOIN samples x ON x.series_id = ss.id
            WHERE lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags) IS NOT NULL
        ), speed_latest AS MATERIALIZED (
            SELECT ss.target, l.ts, lhcnp_valid_speed(l.v_num, l.v_float, l.v_int, l.flags) AS v
            FROM speed_series ss
            JOIN latest l ON l.series_id = ss.id
        )
        SELECT c.ts,
               c.target,
               c.keys ->> 'name',
               lhcnp_queue_id(c.keys),
               (c.increase * 8 / NULLIF(c.seconds, 0)::numeric)::double precision,
               lhcnp_int(r.v),
               LEAST(100, (c.increase * 800 / NULLIF(c.seconds * sp.speed, 0)::numeric / NULLIF(r.v, 0))::double precision),
               sp.speed,
               (c.increase * 8 / NULLIF(c.seconds * sp.speed, 0)::numeric)::double precision
        FROM c
        LEFT JOIN rate r ON r.target = c.target AND r.keys = jsonb_build_object('name', c.keys ->> 'name')
                        AND r.ts <= c.ts AND (r.next_ts IS NULL OR c.ts < r.next_ts)
        CROSS JOIN LATERAL (
            SELECT COALESCE(
                (SELECT l.v FROM speed_latest l WHERE l.target = c.target AND l.ts <= c.ts),
                (SELECT v.v FROM speed_valid v WHERE v.target = c.target AND v.ts <= c.ts ORDER BY v.ts DESC LIMIT 1),
                (SELECT v.v FROM speed_valid v WHERE v.target = c.target ORDER BY v.ts LIMIT 1),
                (SELECT l.v FROM speed_latest l WHERE l.target = c.target),
                1) AS speed
        ) sp;
    END
    $f$;
    COMMENT ON FUNCTION queue_utilisation_between(timestamptz, timestamptz) IS
        'queue_utilisation''s rows with from <= ts < to, read in one pass (Citus)';

    CREATE OR REPLACE VIEW queue_utilisation AS
    SELECT u.ts,
           u.target,
           u.interface,
           u.queue,
           u.bits_per_second,
           u.port_rate_bps,
           u.utilisation_percent,
           u.speed,
           u.bits_per_simulated_second
    FROM queue_utilisation_between('-infinity', 'infinity') u;
END $$;

---- create above / drop below ----

DO $$
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'public.samples'::regclass) THEN
        RETURN;
    END IF;

    -- Schema 12's view.
    CREATE OR REPLACE VIEW queue_utilisation AS
    SELECT c.ts,
           c.target,
           c.keys ->> 'name' AS interface,
           lhcnp_queue_id(c.keys) AS queue,
           (c.increase * 8 / NULLIF(c.seconds, 0)::numeric)::double precision AS bits_per_second,
           lhcnp_int(rate.value_num) AS port_rate_bps,
           LEAST(100, (c.increase * 800 / NULLIF(c.seconds * sp.speed, 0)::numeric / NULLIF(rate.value_num, 0))::double precision) AS utilisation_percent,
           sp.speed,
           (c.increase * 8 / NULLIF(c.seconds * sp.speed, 0)::numeric)::double precision AS bits_per_simulated_second
    FROM (SELECT i.ts, i.target, i.keys, i.increase, i.seconds FROM counter_increases i
          WHERE i.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/counters/bytes'
            AND i.increase IS NOT NULL
          -- As in queue_congestion: the functions run on the coordinator.
          OFFSET 0) c
    LEFT JOIN LATERAL lhcnp_leaf_at(c.target, jsonb_build_object('name', c.keys ->> 'name'),
                                    '/lhcnp/interfaces/interface/state/effective-port-rate', c.ts) rate ON true
    CROSS JOIN LATERAL lhcnp_speed_of(c.target, c.ts) sp;
END $$;

DROP FUNCTION queue_utilisation_between(timestamptz, timestamptz);
