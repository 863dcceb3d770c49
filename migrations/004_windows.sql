-- lhcnp schema 4: the views a dashboard refreshes, as functions of a time
-- window, so that they read only the window. Same columns and rules as the
-- views (docs/collector.md).

-- notifications_per_second groups by a computed second, so a filter on
-- `second` cannot prune the partitions of samples: every dashboard refresh
-- would read all of them.
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

-- queue_congestion looks up the five carried leaves for every queue-depth
-- row (a few index probes per partition each). Over a window, the samples of
-- all six leaves are read once, each leaf's last sample before the window is
-- looked up once per queue, and the carrying forward is done by window
-- functions: a leaf's value at a row is that of its latest sample at or
-- before it (NULL when that sample is a delete).
CREATE FUNCTION queue_congestion_between(p_from timestamptz, p_to timestamptz)
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
LANGUAGE sql STABLE AS $$
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
$$;

---- create above / drop below ----

DROP FUNCTION queue_congestion_between(timestamptz, timestamptz);

DROP FUNCTION notifications_between(timestamptz, timestamptz);
