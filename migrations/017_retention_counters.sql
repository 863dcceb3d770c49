-- lhcnp schema 17: retention keeps every kept counter sample's increase.
--
-- counter_increases gives a counter sample its increase since the series'
-- previous sample. When a retention pass dropped the day of that previous
-- sample, the first kept sample of every counter lost its increase (NULL:
-- the counter views had no row, or a NULL rate, for it). Schema 8 carried
-- only the leaves the views read at an instant; a counter's carried value
-- also needs the time it was sampled, or the increase would be spread over
-- too short a time. So:
--
-- * samples gains carried_from: for a carried row, the time of the sample
--   it copies (NULL for every other row; the rows schema 8 carries keep
--   NULL, as their readers read values, not times).
-- * lhcnp_carry_counters(horizon) copies the last value before the horizon
--   of every counter series (a schema path with /counters/, as
--   counter_increases matches them) to the horizon, flags bit 3, batch_id 0,
--   carried_from the original's time, one series at a time (as schema 11's
--   lhcnp_carry_forward on Citus), unless the series has a sample there or
--   was deleted before the horizon (a freed flow's counters: Trim drops
--   such series). A delete is not carried: counter_increases skips deletes
--   when it looks for the previous sample.
-- * lhcnp_maintain() and migrations.Trim run it after lhcnp_carry_forward.
-- * counter_increases gives no row for a carried sample (it reads samples
--   and series itself, not series_values, which has no flag for it: the
--   same columns and answers otherwise) and takes a carried predecessor's
--   carried_from as previous_ts: the first kept sample's increase and
--   seconds are those it had before the pass.
--
-- A sample stamped exactly at the horizon keeps its place, and the series
-- gets no carried row: that sample alone loses its increase (a switch's
-- nanosecond timestamps seldom fall on a day's start or on Trim's horizon).
--
-- One statement per EXECUTE: Citus cannot propagate DDL that came in a
-- string of several commands.
DO $$
BEGIN
    EXECUTE $q$
    CREATE FUNCTION lhcnp_carry_counters(horizon timestamptz) RETURNS integer
    LANGUAGE plpgsql AS $f$
    DECLARE
        s record;
        k integer;
        n integer := 0;
    BEGIN
        FOR s IN
            SELECT se.id FROM series se
            WHERE se.schema_path LIKE '%/counters/%'
              -- Not correlated: Citus cannot correlate a subquery with
              -- a reference table (series).
              AND se.id NOT IN (SELECT l.series_id FROM latest l WHERE l.flags & 2 = 2 AND l.ts < horizon)
            ORDER BY se.id
        LOOP
            INSERT INTO samples (ts, series_id, v_int, v_float, v_num, v_bool, v_text, flags, batch_id, carried_from)
            SELECT horizon, y.series_id, y.v_int, y.v_float, y.v_num, y.v_bool, y.v_text, y.flags | 8, 0,
                   COALESCE(y.carried_from, y.ts)
            FROM samples y
            WHERE y.series_id = s.id AND y.ts < horizon AND y.flags & 2 = 0
              AND NOT EXISTS (SELECT 1 FROM samples z WHERE z.series_id = s.id AND z.ts = horizon)
            ORDER BY y.ts DESC
            LIMIT 1;
            GET DIAGNOSTICS k = ROW_COUNT;
            n := n + k;
        END LOOP;
        RETURN n;
    END $f$
    $q$;

    EXECUTE $q$
    CREATE OR REPLACE FUNCTION lhcnp_maintain() RETURNS void
    LANGUAGE plpgsql AS $f$
    DECLARE
        keep interval;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('lhcnp_maintain'));
        SELECT retention INTO keep FROM lhcnp_partitioning WHERE parent = 'public.samples';
        IF keep IS NOT NULL THEN
            PERFORM lhcnp_carry_forward(lhcnp_retention_horizon(keep));
            PERFORM lhcnp_carry_counters(lhcnp_retention_horizon(keep));
        END IF;
        PERFORM lhcnp_maintain_partitions();
    END $f$
    $q$;

    -- After the functions: Citus cannot propagate function DDL in a
    -- transaction after a parallel operation on a distributed table.
    EXECUTE $q$ALTER TABLE samples ADD COLUMN carried_from timestamptz$q$;
    EXECUTE $q$COMMENT ON COLUMN samples.carried_from IS
        'for a row the retention carried (flags bit 3) of a counter: the time of the sample it copies; NULL otherwise'$q$;

    EXECUTE $q$
    CREATE OR REPLACE VIEW counter_increases AS
    SELECT c.ts,
           c.series_id,
           se.target,
           se.path,
           se.schema_path,
           se.keys,
           c.value_num AS value,
           p.ts AS previous_ts,
           CASE WHEN p.ts IS NULL THEN NULL
                WHEN c.flags & 4 <> 0 OR c.value_num < p.value_num THEN c.value_num
                ELSE c.value_num - p.value_num END AS increase,
           extract(epoch FROM c.ts - p.ts)::double precision AS seconds,
           (p.ts IS NOT NULL AND (c.flags & 4 <> 0 OR c.value_num < p.value_num)) AS reset
    FROM (SELECT y.ts, y.series_id, y.flags, COALESCE(y.v_num, y.v_int::numeric, y.v_float::numeric) AS value_num
          FROM samples y
          WHERE y.flags & 10 = 0) c
    JOIN series se ON se.id = c.series_id
    LEFT JOIN LATERAL (
        SELECT COALESCE(x.carried_from, x.ts) AS ts, COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric) AS value_num
        FROM samples x
        WHERE x.series_id = c.series_id AND x.ts < c.ts AND x.flags & 2 = 0
        ORDER BY x.ts DESC
        LIMIT 1
    ) p ON true
    WHERE se.schema_path LIKE '%/counters/%'
    $q$;
END $$;

---- create above / drop below ----

-- Schemas 3 and 8 again. The carried counter rows go (schema 16's
-- counter_increases would read them as samples at the horizon and spread
-- the first kept sample's increase over too short a time).
DO $$
BEGIN
    EXECUTE $q$
    CREATE OR REPLACE VIEW counter_increases AS
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
    WHERE c.schema_path LIKE '%/counters/%' AND NOT c.deleted
    $q$;
    -- Schema 8's text exactly (the catalogue compares function bodies).
    EXECUTE $q$CREATE OR REPLACE FUNCTION lhcnp_maintain() RETURNS void
LANGUAGE plpgsql AS $f$
DECLARE
    keep interval;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('lhcnp_maintain'));
    SELECT retention INTO keep FROM lhcnp_partitioning WHERE parent = 'public.samples';
    IF keep IS NOT NULL THEN
        PERFORM lhcnp_carry_forward(lhcnp_retention_horizon(keep));
    END IF;
    PERFORM lhcnp_maintain_partitions();
END $f$
$q$;
    EXECUTE $q$DROP FUNCTION lhcnp_carry_counters(timestamptz)$q$;
    EXECUTE $q$DELETE FROM samples WHERE carried_from IS NOT NULL$q$;
    EXECUTE $q$ALTER TABLE samples DROP COLUMN carried_from$q$;
END $$;
