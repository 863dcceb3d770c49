-- lhcnp schema 12: on a Citus coordinator (where schema 11 distributed
-- samples), the functions and views that read samples are rewritten so
-- that Citus plans them, with the same signatures, columns and answers; on
-- plain PostgreSQL this step changes nothing (docs/scaling.md, Step 3).
--
-- Citus cannot plan a SQL function over a distributed table when PostgreSQL
-- does not inline it ("cannot perform distributed planning on this query
-- because parameterized queries for SQL functions referencing distributed
-- tables are not supported"): the *_between window functions of schema 4
-- whenever they are called, and lhcnp_leaf_at, lhcnp_speed_of and
-- lhcnp_speed_at, which the views queue_congestion, notifications_per_second,
-- drops_and_pauses and queue_utilisation join laterally. So:
--
-- * They become PL/pgSQL, whose arguments Citus receives as values. The
--   bodies are those of schemas 3, 4 and 7, except where Citus cannot plan
--   a query that reads samples for other series than the row's (a
--   correlated or lateral subquery): lhcnp_speed_of looks its speed up one
--   query after the other, and queue_congestion_between finds each carried
--   leaf's last sample before the window one series at a time (as schema
--   11's lhcnp_carry_forward does). CREATE OR REPLACE keeps the views that
--   use them, the comments and the grants.
-- * queue_congestion and queue_utilisation would have Citus push the calls
--   of lhcnp_leaf_at down to the shards, which cannot run a distributed
--   query ("cannot execute a distributed query from a query on a shard").
--   queue_congestion becomes queue_congestion_between over all time.
--   queue_utilisation reads its rows from the distributed tables first, in
--   a subquery (OFFSET 0) that Citus computes on the workers, and calls
--   the functions on the coordinator, a few queries per row. A filter on
--   either view applies after all its rows were computed: correct, not
--   fast (docs/scaling.md, Step 3).
--
-- Down puts back the SQL functions (PostgreSQL inlines them into the views
-- on one node again) and the views of schemas 3 and 10.

DO $$
BEGIN
    -- Two statements: PL/pgSQL plans a whole condition, and without Citus
    -- there is no pg_dist_partition to plan.
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'public.samples'::regclass) THEN
        RETURN;
    END IF;

    CREATE OR REPLACE FUNCTION lhcnp_leaf_at(p_target text, p_keys jsonb, p_schema_path text, p_at timestamptz)
    RETURNS TABLE (ts timestamptz, value_num numeric, value_text text)
    LANGUAGE plpgsql STABLE AS $f$
    #variable_conflict use_column
    BEGIN
        RETURN QUERY
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
        LIMIT 1;
    END
    $f$;

    -- Schema 7's lhcnp_speed_of, one lookup after the other (Citus plans
    -- no correlated subqueries over samples).
    CREATE OR REPLACE FUNCTION lhcnp_speed_of(p_target text, p_at timestamptz) RETURNS TABLE (speed double precision)
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $f$
    DECLARE
        k bigint;
        v double precision;
    BEGIN
        SELECT s.id INTO k FROM series s
        WHERE s.target = p_target AND s.keys = '{}' AND s.schema_path = '/lhcnp/global/state/engine-speed';
        IF k IS NOT NULL THEN
            SELECT lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags) INTO v
            FROM latest x WHERE x.series_id = k AND x.ts <= p_at;
            IF v IS NULL THEN
                SELECT lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags) INTO v
                FROM samples x
                WHERE x.series_id = k AND x.ts <= p_at AND lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags) IS NOT NULL
                ORDER BY x.ts DESC LIMIT 1;
            END IF;
            IF v IS NULL THEN
                SELECT lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags) INTO v
                FROM samples x
                WHERE x.series_id = k AND lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags) IS NOT NULL
                ORDER BY x.ts LIMIT 1;
            END IF;
            IF v IS NULL THEN
                SELECT lhcnp_valid_speed(x.v_num, x.v_float, x.v_int, x.flags) INTO v
                FROM latest x WHERE x.series_id = k;
            END IF;
        END IF;
        speed := COALESCE(v, 1);
        RETURN NEXT;
    END
    $f$;

    CREATE OR REPLACE FUNCTION notifications_between(p_from timestamptz, p_to timestamptz)
    RETURNS TABLE (
        second          timestamptz,
        target          text,
        interface       text,
        queue           integer,
        action          text,
        notifications   bigint,
        sampled_seconds double precision,
        rate_per_second double precision,
        counter_reset   boolean
    )
    LANGUAGE plpgsql STABLE AS $f$
    #variable_conflict use_column
    BEGIN
        RETURN QUERY
        SELECT date_trunc('second', c.ts),
               c.target,
               c.keys ->> 'name',
               lhcnp_queue_id(c.keys),
               CASE c.schema_path
                   WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent' THEN 'NOTIFY'
                   WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent' THEN 'PAUSE'
                   WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent' THEN 'RATE_REDUCE'
                   WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent' THEN 'RESUME'
               END,
               lhcnp_int(sum(c.increase)),
               sum(c.seconds),
               (sum(c.increase) / NULLIF(sum(c.seconds), 0))::double precision,
               bool_or(c.reset)
        FROM counter_increases c
        WHERE c.schema_path IN ('/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent',
                                '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent',
                                '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent',
                                '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent')
          AND c.increase IS NOT NULL
          AND c.ts >= date_trunc('second', p_from) AND c.ts < p_to
        GROUP BY 1, 2, 3, 4, 5;
    END
    $f$;

    CREATE OR REPLACE FUNCTION queue_congestion_between(p_from timestamptz, p_to timestamptz)
    RETURNS TABLE (
        ts                           timestamptz,
        target                       text,
        interface                    text,
        queue                        integer,
        queue_depth_bytes            bigint,
        peak_queue_depth_bytes       bigint,
        kmax_bytes                   bigint,
        kmin_bytes                   bigint,
        growth_rate_bytes_per_second bigint,
        ecn_marking_rate_percent     numeric
    )
    LANGUAGE plpgsql STABLE AS $f$
    #variable_conflict use_column
    DECLARE
        r      record;
        b      record;
        b_id   bigint[] := '{}';
        b_ts   timestamptz[] := '{}';
        b_flag smallint[] := '{}';
        b_v    numeric[] := '{}';
    BEGIN
        -- Each carried leaf's last sample before the window, one series at
        -- a time: Citus cannot plan the lateral LIMIT 1 of schema 4. None
        -- before the beginning of time (queue_congestion).
        FOR r IN
            SELECT k.id FROM series q
            JOIN series k ON k.target = q.target AND k.keys = q.keys
            WHERE q.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/queue-depth'
              AND k.schema_path IN ('/lhcnp/interfaces/interface/queues/queue/state/peak-queue-depth',
                                    '/lhcnp/interfaces/interface/queues/queue/state/effective-kmax',
                                    '/lhcnp/interfaces/interface/queues/queue/state/effective-kmin',
                                    '/lhcnp/interfaces/interface/queues/queue/state/queue-growth-rate',
                                    '/lhcnp/interfaces/interface/queues/queue/state/ecn-marking-rate')
              AND p_from > '-infinity'
        LOOP
            FOR b IN
                SELECT x.series_id, x.ts, x.flags, COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric) AS v
                FROM samples x
                WHERE x.series_id = r.id AND x.ts < p_from
                ORDER BY x.ts DESC
                LIMIT 1
            LOOP
                b_id := b_id || b.series_id;
                b_ts := b_ts || b.ts;
                b_flag := b_flag || b.flags;
                b_v := b_v || b.v;
            END LOOP;
        END LOOP;
        RETURN QUERY
        WITH leaves (leaf, ord, schema_path) AS (
            VALUES ('peak',   1, '/lhcnp/interfaces/interface/queues/queue/state/peak-queue-depth'),
                   ('kmax',   2, '/lhcnp/interfaces/interface/queues/queue/state/effective-kmax'),
                   ('kmin',   3, '/lhcnp/interfaces/interface/queues/queue/state/effective-kmin'),
                   ('growth', 4, '/lhcnp/interfaces/interface/queues/queue/state/queue-growth-rate'),
                   ('emr',    5, '/lhcnp/interfaces/interface/queues/queue/state/ecn-marking-rate'),
                   -- Last at equal timestamps: a queue-depth row sees the others
                   -- of its instant ("at or before").
                   ('qd',     6, '/lhcnp/interfaces/interface/queues/queue/state/queue-depth')
        ), queues AS (
            SELECT se.id, se.target, se.keys
            FROM series se
            WHERE se.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/queue-depth'
        ), leaf_series AS (
            SELECT q.id AS queue_series, l.leaf, l.ord, k.id AS series_id
            FROM queues q
            JOIN series k ON k.target = q.target AND k.keys = q.keys
            JOIN leaves l ON l.schema_path = k.schema_path
        ), points AS MATERIALIZED (
            SELECT ls.queue_series, ls.leaf, ls.ord, x.ts, x.flags,
                   COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric) AS v
            FROM leaf_series ls
            JOIN samples x ON x.series_id = ls.series_id AND x.ts >= p_from AND x.ts < p_to
            UNION ALL
            SELECT ls.queue_series, ls.leaf, ls.ord, b.ts, b.flags, b.v
            FROM leaf_series ls
            JOIN unnest(b_id, b_ts, b_flag, b_v) b (series_id, ts, flags, v) ON b.series_id = ls.series_id
            WHERE ls.leaf <> 'qd'
        ), grouped AS (
            -- g_<leaf>: how many samples of that leaf came up to this point; the
            -- rows sharing a g_<leaf> follow the same sample of it.
            SELECT p.*,
                   count(*) FILTER (WHERE leaf = 'peak')   OVER w AS g_peak,
                   count(*) FILTER (WHERE leaf = 'kmax')   OVER w AS g_kmax,
                   count(*) FILTER (WHERE leaf = 'kmin')   OVER w AS g_kmin,
                   count(*) FILTER (WHERE leaf = 'growth') OVER w AS g_growth,
                   count(*) FILTER (WHERE leaf = 'emr')    OVER w AS g_emr
            FROM points p
            WINDOW w AS (PARTITION BY queue_series ORDER BY ts, ord ROWS UNBOUNDED PRECEDING)
        ), carried AS (
            SELECT g.queue_series, g.leaf, g.ts, g.flags, g.v,
                   max(v) FILTER (WHERE leaf = 'peak')   OVER (PARTITION BY queue_series, g_peak)   AS peak,
                   max(v) FILTER (WHERE leaf = 'kmax')   OVER (PARTITION BY queue_series, g_kmax)   AS kmax,
                   max(v) FILTER (WHERE leaf = 'kmin')   OVER (PARTITION BY queue_series, g_kmin)   AS kmin,
                   max(v) FILTER (WHERE leaf = 'growth') OVER (PARTITION BY queue_series, g_growth) AS growth,
                   max(v) FILTER (WHERE leaf = 'emr')    OVER (PARTITION BY queue_series, g_emr)    AS emr
            FROM grouped g
        )
        SELECT c.ts, q.target, q.keys ->> 'name', lhcnp_queue_id(q.keys),
               lhcnp_int(c.v), lhcnp_int(c.peak), lhcnp_int(c.kmax), lhcnp_int(c.kmin), lhcnp_int(c.growth), c.emr
        FROM carried c
        JOIN queues q ON q.id = c.queue_series
        WHERE c.leaf = 'qd' AND c.flags & 2 = 0;
    END
    $f$;

    CREATE OR REPLACE FUNCTION lhcnp_speed_at(p_target text, p_at timestamptz) RETURNS double precision
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $f$
    BEGIN
        RETURN (SELECT s.speed FROM lhcnp_speed_of(p_target, p_at) s);
    END
    $f$;

    -- The views that join those functions laterally: their rows from the
    -- distributed tables first.
    -- queue_congestion as queue_congestion_between over all time (the same
    -- rows: migrations/views_test.go): one pass over the samples of the
    -- congestion leaves instead of five lookups, each a query of its own
    -- from the coordinator, per queue-depth row.
    CREATE OR REPLACE VIEW queue_congestion AS
    SELECT c.ts,
           c.target,
           c.interface,
           c.queue,
           c.queue_depth_bytes,
           c.peak_queue_depth_bytes,
           c.kmax_bytes,
           c.kmin_bytes,
           c.growth_rate_bytes_per_second,
           c.ecn_marking_rate_percent
    FROM queue_congestion_between('-infinity', 'infinity') c;

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

---- create above / drop below ----

DO $$
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'public.samples'::regclass) THEN
        RETURN;
    END IF;

    -- The bodies exactly as schemas 3, 4 and 7 wrote them (not indented):
    -- pg_dump shows them as they are.
    CREATE OR REPLACE FUNCTION lhcnp_leaf_at(p_target text, p_keys jsonb, p_schema_path text, p_at timestamptz)
    RETURNS TABLE (ts timestamptz, value_num numeric, value_text text)
    LANGUAGE sql STABLE
    AS $f$
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
$f$;

    CREATE OR REPLACE FUNCTION lhcnp_speed_of(p_target text, p_at timestamptz) RETURNS TABLE (speed double precision)
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $f$
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
$f$;

    CREATE OR REPLACE FUNCTION notifications_between(p_from timestamptz, p_to timestamptz)
    RETURNS TABLE (
        second          timestamptz,
        target          text,
        interface       text,
        queue           integer,
        action          text,
        notifications   bigint,
        sampled_seconds double precision,
        rate_per_second double precision,
        counter_reset   boolean
    )
    LANGUAGE sql STABLE
    AS $f$
    SELECT date_trunc('second', c.ts),
           c.target,
           c.keys ->> 'name',
           lhcnp_queue_id(c.keys),
           CASE c.schema_path
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent' THEN 'NOTIFY'
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent' THEN 'PAUSE'
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent' THEN 'RATE_REDUCE'
               WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent' THEN 'RESUME'
           END,
           lhcnp_int(sum(c.increase)),
           sum(c.seconds),
           (sum(c.increase) / NULLIF(sum(c.seconds), 0))::double precision,
           bool_or(c.reset)
    FROM counter_increases c
    WHERE c.schema_path IN ('/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent',
                            '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent',
                            '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent',
                            '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent')
      AND c.increase IS NOT NULL
      AND c.ts >= date_trunc('second', p_from) AND c.ts < p_to
    GROUP BY 1, 2, 3, 4, 5
$f$;

    CREATE OR REPLACE FUNCTION queue_congestion_between(p_from timestamptz, p_to timestamptz)
    RETURNS TABLE (
        ts                           timestamptz,
        target                       text,
        interface                    text,
        queue                        integer,
        queue_depth_bytes            bigint,
        peak_queue_depth_bytes       bigint,
        kmax_bytes                   bigint,
        kmin_bytes                   bigint,
        growth_rate_bytes_per_second bigint,
        ecn_marking_rate_percent     numeric
    )
    LANGUAGE sql STABLE
    AS $f$
    WITH leaves (leaf, ord, schema_path) AS (
        VALUES ('peak',   1, '/lhcnp/interfaces/interface/queues/queue/state/peak-queue-depth'),
               ('kmax',   2, '/lhcnp/interfaces/interface/queues/queue/state/effective-kmax'),
               ('kmin',   3, '/lhcnp/interfaces/interface/queues/queue/state/effective-kmin'),
               ('growth', 4, '/lhcnp/interfaces/interface/queues/queue/state/queue-growth-rate'),
               ('emr',    5, '/lhcnp/interfaces/interface/queues/queue/state/ecn-marking-rate'),
               -- Last at equal timestamps: a queue-depth row sees the others
               -- of its instant ("at or before").
               ('qd',     6, '/lhcnp/interfaces/interface/queues/queue/state/queue-depth')
    ), queues AS (
        SELECT se.id, se.target, se.keys
        FROM series se
        WHERE se.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/queue-depth'
    ), leaf_series AS (
        SELECT q.id AS queue_series, l.leaf, l.ord, k.id AS series_id
        FROM queues q
        JOIN series k ON k.target = q.target AND k.keys = q.keys
        JOIN leaves l ON l.schema_path = k.schema_path
    ), points AS (
        SELECT ls.queue_series, ls.leaf, ls.ord, x.ts, x.flags,
               COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric) AS v
        FROM leaf_series ls
        JOIN samples x ON x.series_id = ls.series_id AND x.ts >= p_from AND x.ts < p_to
        UNION ALL
        SELECT ls.queue_series, ls.leaf, ls.ord, b.ts, b.flags, b.v
        FROM leaf_series ls
        CROSS JOIN LATERAL (
            SELECT x.ts, x.flags, COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric) AS v
            FROM samples x
            WHERE x.series_id = ls.series_id AND x.ts < p_from
            ORDER BY x.ts DESC
            LIMIT 1
        ) b
        WHERE ls.leaf <> 'qd'
    ), grouped AS (
        -- g_<leaf>: how many samples of that leaf came up to this point; the
        -- rows sharing a g_<leaf> follow the same sample of it.
        SELECT p.*,
               count(*) FILTER (WHERE leaf = 'peak')   OVER w AS g_peak,
               count(*) FILTER (WHERE leaf = 'kmax')   OVER w AS g_kmax,
               count(*) FILTER (WHERE leaf = 'kmin')   OVER w AS g_kmin,
               count(*) FILTER (WHERE leaf = 'growth') OVER w AS g_growth,
               count(*) FILTER (WHERE leaf = 'emr')    OVER w AS g_emr
        FROM points p
        WINDOW w AS (PARTITION BY queue_series ORDER BY ts, ord ROWS UNBOUNDED PRECEDING)
    ), carried AS (
        SELECT g.queue_series, g.leaf, g.ts, g.flags, g.v,
               max(v) FILTER (WHERE leaf = 'peak')   OVER (PARTITION BY queue_series, g_peak)   AS peak,
               max(v) FILTER (WHERE leaf = 'kmax')   OVER (PARTITION BY queue_series, g_kmax)   AS kmax,
               max(v) FILTER (WHERE leaf = 'kmin')   OVER (PARTITION BY queue_series, g_kmin)   AS kmin,
               max(v) FILTER (WHERE leaf = 'growth') OVER (PARTITION BY queue_series, g_growth) AS growth,
               max(v) FILTER (WHERE leaf = 'emr')    OVER (PARTITION BY queue_series, g_emr)    AS emr
        FROM grouped g
    )
    SELECT c.ts, q.target, q.keys ->> 'name', lhcnp_queue_id(q.keys),
           lhcnp_int(c.v), lhcnp_int(c.peak), lhcnp_int(c.kmax), lhcnp_int(c.kmin), lhcnp_int(c.growth), c.emr
    FROM carried c
    JOIN queues q ON q.id = c.queue_series
    WHERE c.leaf = 'qd' AND c.flags & 2 = 0
$f$;

    CREATE OR REPLACE FUNCTION lhcnp_speed_at(p_target text, p_at timestamptz) RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $f$
    SELECT s.speed FROM lhcnp_speed_of(p_target, p_at) s
$f$;

    CREATE OR REPLACE VIEW queue_congestion AS
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
    FROM counter_increases c
    LEFT JOIN LATERAL lhcnp_leaf_at(c.target, jsonb_build_object('name', c.keys ->> 'name'),
                                    '/lhcnp/interfaces/interface/state/effective-port-rate', c.ts) rate ON true
    CROSS JOIN LATERAL lhcnp_speed_of(c.target, c.ts) sp
    WHERE c.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/counters/bytes'
      AND c.increase IS NOT NULL;
END $$;
