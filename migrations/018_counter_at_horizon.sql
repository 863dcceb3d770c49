-- lhcnp schema 18: a counter sampled exactly at the retention's horizon
-- keeps its increase too.
--
-- Schema 17 carried a counter's last value before the horizon to the
-- horizon, unless the series had a sample there: that sample then lost its
-- predecessor with the dropped day, and its increase (the edge schema 17
-- documented). A switch whose samples are aligned to the wall clock (a
-- sample interval that divides a day, millisecond timestamps) has one at
-- every day's start, which is where lhcnp_maintain's horizon falls. samples
-- has no unique key, so the carried row now goes to the horizon beside such
-- a sample:
--
-- * lhcnp_carry_counters(horizon) carries unless the series has a carried
--   row at the horizon already (a pass is still idempotent), and takes the
--   last value before the horizon with a real sample before a carried one
--   of the same time (an earlier pass's carried row at an earlier horizon
--   with a sample beside it copies an older value).
-- * counter_increases takes as a sample's predecessor the newest earlier
--   sample, or a carried row of the same time (a sample at the horizon: the
--   carried row is the value before it); of two rows of the same time the
--   real sample comes first (for every later sample).
--
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
END $$;

---- create above / drop below ----

-- Schema 17's function and view (its text exactly). A carried row beside a
-- sample of the same time goes: schema 17's view would take either of the
-- two as the next sample's predecessor (its value, or the older one carried).
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
    -- Last: Citus cannot propagate function DDL in a transaction after a
    -- parallel operation on a distributed table.
    EXECUTE $q$DELETE FROM samples y USING samples z
        WHERE y.carried_from IS NOT NULL AND z.series_id = y.series_id AND z.ts = y.ts AND z.flags & 8 = 0$q$;
END $$;
