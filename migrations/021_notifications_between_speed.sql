-- lhcnp schema 21: notifications_between has the columns of
-- notifications_per_second.
--
-- Schema 4 made notifications_between "the same columns and rules as the
-- view" it windows; schema 6 then appended speed and
-- rate_per_simulated_second to the view but left the function with schema
-- 3's nine columns (only its comment said to divide by lhcnp_speed_at), so
-- a dashboard reading a window got no rate per simulated second. The
-- function gets them, computed as the view does (lhcnp_speed_at of the
-- target at the row's second). A function's result columns cannot be
-- changed in place: it is dropped and created again (nothing in the schema
-- depends on it). On a Citus coordinator, schema 12's PL/pgSQL version
-- (Citus cannot plan the SQL function) with the same two columns; on plain
-- PostgreSQL the SQL function, which PostgreSQL inlines.
-- TestCitusViewsSameAsOneNode compares both, row by row.

DROP FUNCTION notifications_between(timestamptz, timestamptz);

CREATE FUNCTION notifications_between(p_from timestamptz, p_to timestamptz)
RETURNS TABLE (
    second          timestamptz,
    target          text,
    interface       text,
    queue           integer,
    action          text,
    notifications   bigint,
    sampled_seconds double precision,
    rate_per_second double precision,
    counter_reset   boolean,
    speed           double precision,
    rate_per_simulated_second double precision
)
LANGUAGE sql STABLE AS $$
    SELECT n.*, sp.speed, n.rate_per_second / sp.speed
    FROM (
        SELECT date_trunc('second', c.ts) AS second,
               c.target AS target,
               c.keys ->> 'name' AS interface,
               lhcnp_queue_id(c.keys) AS queue,
               CASE c.schema_path
                   WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent' THEN 'NOTIFY'
                   WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent' THEN 'PAUSE'
                   WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent' THEN 'RATE_REDUCE'
                   WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent' THEN 'RESUME'
               END AS action,
               lhcnp_int(sum(c.increase)) AS notifications,
               sum(c.seconds) AS sampled_seconds,
               (sum(c.increase) / NULLIF(sum(c.seconds), 0))::double precision AS rate_per_second,
               bool_or(c.reset) AS counter_reset
        FROM counter_increases c
        WHERE c.schema_path IN ('/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent',
                                '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent',
                                '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent',
                                '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent')
          AND c.increase IS NOT NULL
          AND c.ts >= date_trunc('second', p_from) AND c.ts < p_to
        GROUP BY 1, 2, 3, 4, 5
    ) n
    CROSS JOIN LATERAL (SELECT lhcnp_speed_at(n.target, n.second) AS speed) sp
$$;
COMMENT ON FUNCTION notifications_between(timestamptz, timestamptz) IS
    'the rows of notifications_per_second for a window, with its columns: rate_per_second per wall-clock second, rate_per_simulated_second per simulated second (rate_per_second / speed)';

DO $$
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'public.samples'::regclass) THEN
        RETURN;
    END IF;

    DROP FUNCTION notifications_between(timestamptz, timestamptz);
    CREATE FUNCTION notifications_between(p_from timestamptz, p_to timestamptz)
    RETURNS TABLE (
        second          timestamptz,
        target          text,
        interface       text,
        queue           integer,
        action          text,
        notifications   bigint,
        sampled_seconds double precision,
        rate_per_second double precision,
        counter_reset   boolean,
        speed           double precision,
        rate_per_simulated_second double precision
    )
    LANGUAGE plpgsql STABLE AS $f$
    #variable_conflict use_column
    BEGIN
        RETURN QUERY
        SELECT n.*, sp.speed, n.rate_per_second / sp.speed
        FROM (
            SELECT date_trunc('second', c.ts) AS second,
                   c.target AS target,
                   c.keys ->> 'name' AS interface,
                   lhcnp_queue_id(c.keys) AS queue,
                   CASE c.schema_path
                       WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent' THEN 'NOTIFY'
                       WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent' THEN 'PAUSE'
                       WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent' THEN 'RATE_REDUCE'
                       WHEN '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent' THEN 'RESUME'
                   END AS action,
                   lhcnp_int(sum(c.increase)) AS notifications,
                   sum(c.seconds) AS sampled_seconds,
                   (sum(c.increase) / NULLIF(sum(c.seconds), 0))::double precision AS rate_per_second,
                   bool_or(c.reset) AS counter_reset
            FROM counter_increases c
            WHERE c.schema_path IN ('/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-notify-sent',
                                    '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-pause-sent',
                                    '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-rate-reduce-sent',
                                    '/lhcnp/interfaces/interface/queues/queue/state/counters/cnp-resume-sent')
              AND c.increase IS NOT NULL
              AND c.ts >= date_trunc('second', p_from) AND c.ts < p_to
            GROUP BY 1, 2, 3, 4, 5
        ) n
        CROSS JOIN LATERAL (SELECT lhcnp_speed_at(n.target, n.second) AS speed) sp;
    END
    $f$;
    COMMENT ON FUNCTION notifications_between(timestamptz, timestamptz) IS
        'the rows of notifications_per_second for a window, with its columns: rate_per_second per wall-clock second, rate_per_simulated_second per simulated second (rate_per_second / speed)';
END $$;

---- create above / drop below ----

-- Schema 4's function with schema 6's comment, and on a Citus coordinator
-- schema 12's (their text exactly: the catalogue compares function bodies).
DROP FUNCTION notifications_between(timestamptz, timestamptz);

CREATE FUNCTION notifications_between(p_from timestamptz, p_to timestamptz)
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
LANGUAGE sql STABLE AS $$
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
$$;
COMMENT ON FUNCTION notifications_between(timestamptz, timestamptz) IS
    'the rows of notifications_per_second for a window; rate_per_second is per wall-clock second (divide by lhcnp_speed_at for simulated seconds)';

DO $$
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'public.samples'::regclass) THEN
        RETURN;
    END IF;

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
END $$;
