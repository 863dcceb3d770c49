-- lhcnp schema 8: retention keeps the values the views read "at or before".
--
-- Retention drops whole days of samples. The views read some leaves at an
-- instant rather than row by row: queue_congestion the queue's K_max, K_min,
-- peak depth, growth and marking rate (lhcnp_leaf_at), queue_utilisation the
-- port's effective-port-rate (lhcnp_leaf_at), the rate views the switch's
-- engine-speed (lhcnp_speed_of). Such a leaf changes seldom: its last sample
-- is often in a day the retention drops, and the kept rows then read
-- nothing (the port rate: NULL utilisation), or another value (the speed:
-- the oldest remaining one, or latest's). So before a pass drops anything,
-- the last value of each such series before the retention horizon (the
-- start of the oldest day kept) is copied to the horizon: a row stamped at
-- that day's start, flags bit 3 ("carried"), batch_id 0 (not a collector's).
-- Every kept row finds the value it found before.
-- docs/collector.md ("Partitions and retention").

-- The leaves carried forward, and how the views read them: 'leaf_at', the
-- newest sample (a delete included: the views read NULL after it);
-- 'speed_of', the newest valid speed (lhcnp_valid_speed: a delete or a value
-- that is not a positive number is skipped). A view of one's own that reads
-- another leaf at an instant adds its schema path here.
CREATE TABLE lhcnp_carried_leaves (
    schema_path text PRIMARY KEY,
    reader      text NOT NULL DEFAULT 'leaf_at' CHECK (reader IN ('leaf_at', 'speed_of'))
);
INSERT INTO lhcnp_carried_leaves (schema_path, reader) VALUES
    ('/lhcnp/interfaces/interface/queues/queue/state/peak-queue-depth', 'leaf_at'),
    ('/lhcnp/interfaces/interface/queues/queue/state/effective-kmax', 'leaf_at'),
    ('/lhcnp/interfaces/interface/queues/queue/state/effective-kmin', 'leaf_at'),
    ('/lhcnp/interfaces/interface/queues/queue/state/queue-growth-rate', 'leaf_at'),
    ('/lhcnp/interfaces/interface/queues/queue/state/ecn-marking-rate', 'leaf_at'),
    ('/lhcnp/interfaces/interface/state/effective-port-rate', 'leaf_at'),
    ('/lhcnp/global/state/engine-speed', 'speed_of');

COMMENT ON COLUMN samples.flags IS
    'bit 0: initial sync (before sync_response); bit 1: delete; bit 2: counter reset; bit 3: carried (a copy of the last value of a day the retention dropped, at the oldest kept day''s start)';

-- The start of the oldest UTC day a pass with this retention keeps: the
-- days before it end before now() - retention and are dropped (pg_partman's
-- rule, which the fallback follows).
CREATE FUNCTION lhcnp_retention_horizon(retention interval) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT date_trunc('day', (now() - retention - interval '1 microsecond') AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
$$;

-- Copies the last value before horizon of every series of a carried leaf
-- to horizon (unless the series has a sample there). Returns the number of
-- rows written.
CREATE FUNCTION lhcnp_carry_forward(horizon timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    INSERT INTO samples (ts, series_id, v_int, v_float, v_num, v_bool, v_text, flags, batch_id)
    SELECT horizon, se.id, x.v_int, x.v_float, x.v_num, x.v_bool, x.v_text, x.flags | 8, 0
    FROM lhcnp_carried_leaves c
    JOIN series se ON se.schema_path = c.schema_path
    CROSS JOIN LATERAL (
        SELECT y.v_int, y.v_float, y.v_num, y.v_bool, y.v_text, y.flags
        FROM samples y
        WHERE y.series_id = se.id AND y.ts < horizon
          AND (c.reader = 'leaf_at' OR lhcnp_valid_speed(y.v_num, y.v_float, y.v_int, y.flags) IS NOT NULL)
        ORDER BY y.ts DESC
        LIMIT 1
    ) x
    WHERE NOT EXISTS (SELECT 1 FROM samples z WHERE z.series_id = se.id AND z.ts = horizon);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

-- The fallback's retention, by whole days: drops the daily partitions of
-- parent older than the horizon, and deletes such rows from the default
-- partition. Returns the number of partitions dropped.
CREATE OR REPLACE FUNCTION lhcnp_drop_daily_partitions(parent regclass, retention interval) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    nsp     text;
    rel     text;
    part    record;
    dropped integer := 0;
    horizon timestamptz := lhcnp_retention_horizon(retention);
BEGIN
    SELECT n.nspname, c.relname INTO nsp, rel
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = parent;
    FOR part IN
        SELECT c.relname
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = parent
          AND c.relname ~ ('^' || rel || '_p\d{4}_\d{2}_\d{2}$')
    LOOP
        IF to_date(right(part.relname, 10), 'YYYY_MM_DD')::timestamp AT TIME ZONE 'UTC' < horizon THEN
            EXECUTE format('DROP TABLE %I.%I', nsp, part.relname);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    IF to_regclass(format('%I.%I', nsp, rel || '_default')) IS NOT NULL THEN
        EXECUTE format('DELETE FROM %I.%I WHERE ts < $1', nsp, rel || '_default') USING horizon;
    END IF;
    RETURN dropped;
END $$;

-- The pass: the carried values first, then schema 2's pass (renamed
-- lhcnp_maintain_partitions), whose pg_partman run_maintenance and
-- lhcnp_drop_daily_partitions drop the days.
ALTER FUNCTION lhcnp_maintain() RENAME TO lhcnp_maintain_partitions;
CREATE FUNCTION lhcnp_maintain() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    keep interval;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('lhcnp_maintain'));
    SELECT retention INTO keep FROM lhcnp_partitioning WHERE parent = 'public.samples';
    IF keep IS NOT NULL THEN
        PERFORM lhcnp_carry_forward(lhcnp_retention_horizon(keep));
    END IF;
    PERFORM lhcnp_maintain_partitions();
END $$;

---- create above / drop below ----

-- Schema 2's pass and rule again. The carried rows stay: they are samples of
-- the values the kept rows read, which schema 7's views read too.
DROP FUNCTION lhcnp_maintain();
ALTER FUNCTION lhcnp_maintain_partitions() RENAME TO lhcnp_maintain;

CREATE OR REPLACE FUNCTION lhcnp_drop_daily_partitions(parent regclass, retention interval) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    nsp     text;
    rel     text;
    part    record;
    dropped integer := 0;
    cutoff  timestamptz := now() - retention;
BEGIN
    SELECT n.nspname, c.relname INTO nsp, rel
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = parent;
    FOR part IN
        SELECT c.relname
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = parent
          AND c.relname ~ ('^' || rel || '_p\d{4}_\d{2}_\d{2}$')
    LOOP
        IF (to_date(right(part.relname, 10), 'YYYY_MM_DD') + 1)::timestamp AT TIME ZONE 'UTC' <= cutoff THEN
            EXECUTE format('DROP TABLE %I.%I', nsp, part.relname);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    IF to_regclass(format('%I.%I', nsp, rel || '_default')) IS NOT NULL THEN
        EXECUTE format('DELETE FROM %I.%I WHERE ts < $1', nsp, rel || '_default') USING cutoff;
    END IF;
    RETURN dropped;
END $$;

DROP FUNCTION lhcnp_carry_forward(timestamptz);
DROP FUNCTION lhcnp_retention_horizon(interval);
COMMENT ON COLUMN samples.flags IS NULL;
DROP TABLE lhcnp_carried_leaves;
