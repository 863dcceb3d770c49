-- lhcnp schema 20: a counter deleted and created again counts from zero.
--
-- The collector stores a gNMI delete of a counter (a queue, a flow-table
-- entry removed) as a delete sample, and a value after it as a new life of
-- the series: the switch's new counter counted from zero. Schemas 3 to 18's
-- counter_increases skipped deletes when it looked for a sample's
-- predecessor, so the new life's first value read the old life's last
-- value: its increase was new − old (short by the old value) whenever the
-- new value was not below it, in counter_increases and in every view over
-- it (notifications_per_second, drops_and_pauses, queue_utilisation and
-- their windows). So:
--
-- * counter_increases takes a delete as a predecessor too: after a delete
--   the next value counts from zero (its increase is the value, reset true,
--   previous_ts and seconds since the delete: the new counter started after
--   it), as a counter reset does.
-- * lhcnp_carry_counters(horizon) carries the last row before the horizon
--   whatever it is, a delete included (flags 2 | 8, carried_from the
--   delete's time), so that the first kept value after a delete the pass
--   drops still counts from zero; before, it carried the value before the
--   delete. A series deleted before the horizon and not back since still
--   gets none (Trim drops it).
--
-- The view keeps its columns, so the views over it stay as they are.
-- One statement per EXECUTE (Citus, as schema 17).
DO $$
BEGIN
    EXECUTE $q$
    CREATE OR REPLACE FUNCTION lhcnp_carry_counters(horizon timestamptz) RETURNS integer
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
            WHERE y.series_id = s.id AND y.ts < horizon
              AND NOT EXISTS (SELECT 1 FROM samples z WHERE z.series_id = s.id AND z.ts = horizon AND z.flags & 8 = 8)
            ORDER BY y.ts DESC, y.flags & 8
            LIMIT 1;
            GET DIAGNOSTICS k = ROW_COUNT;
            n := n + k;
        END LOOP;
        RETURN n;
    END $f$
    $q$;

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
                WHEN p.deleted OR c.flags & 4 <> 0 OR c.value_num < p.value_num THEN c.value_num
                ELSE c.value_num - p.value_num END AS increase,
           extract(epoch FROM c.ts - p.ts)::double precision AS seconds,
           (p.ts IS NOT NULL AND (p.deleted OR c.flags & 4 <> 0 OR c.value_num < p.value_num)) AS reset
    FROM (SELECT y.ts, y.series_id, y.flags, COALESCE(y.v_num, y.v_int::numeric, y.v_float::numeric) AS value_num
          FROM samples y
          WHERE y.flags & 10 = 0) c
    JOIN series se ON se.id = c.series_id
    LEFT JOIN LATERAL (
        SELECT COALESCE(x.carried_from, x.ts) AS ts, COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric) AS value_num,
               x.flags & 2 = 2 AS deleted
        FROM samples x
        WHERE x.series_id = c.series_id AND x.ts <= c.ts AND (x.ts < c.ts OR x.flags & 8 = 8)
        ORDER BY x.ts DESC, x.flags & 8
        LIMIT 1
    ) p ON true
    WHERE se.schema_path LIKE '%/counters/%'
    $q$;
END $$;

---- create above / drop below ----

-- Schema 18's function and view (its text exactly: the catalogue compares
-- function bodies). A carried delete goes: schema 18's view would skip it
-- and read the older value before it anyway.
DO $$
BEGIN
    EXECUTE $q$
    CREATE OR REPLACE FUNCTION lhcnp_carry_counters(horizon timestamptz) RETURNS integer
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
              AND NOT EXISTS (SELECT 1 FROM samples z WHERE z.series_id = s.id AND z.ts = horizon AND z.flags & 8 = 8)
            ORDER BY y.ts DESC, y.flags & 8
            LIMIT 1;
            GET DIAGNOSTICS k = ROW_COUNT;
            n := n + k;
        END LOOP;
        RETURN n;
    END $f$
    $q$;

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
        WHERE x.series_id = c.series_id AND x.ts <= c.ts AND (x.ts < c.ts OR x.flags & 8 = 8) AND x.flags & 2 = 0
        ORDER BY x.ts DESC, x.flags & 8
        LIMIT 1
    ) p ON true
    WHERE se.schema_path LIKE '%/counters/%'
    $q$;
    -- Last: Citus cannot propagate function DDL in a transaction after a
    -- parallel operation on a distributed table.
    EXECUTE $q$DELETE FROM samples WHERE flags & 10 = 10 AND carried_from IS NOT NULL$q$;
END $$;
