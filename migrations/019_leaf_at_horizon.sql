-- lhcnp schema 19: lhcnp_leaf_at at a carried row's time reads the real
-- sample beside it.
--
-- Schema 18 carries a counter's last value before the retention's horizon
-- to the horizon even where the series has a sample exactly there (a switch
-- sampling on the wall clock's day boundaries), so two rows share that time:
-- the real sample and the carried one (flags & 8), which holds the older
-- value. lhcnp_leaf_at took the newest row by time alone, either of the two.
-- It still takes the newest row by one backward step of the (series_id, ts)
-- index; only when that row is a carried one does it look for a real sample
-- of the same time (one more index probe), and return it if there is one.
-- Ordering by (ts DESC, flags & 8) instead, or taking the two newest rows
-- and sorting them, made the views that call the function for every row
-- 1.4-1.7x slower (migrations.BenchmarkViews/queue_congestion); the probe
-- runs for carried rows only, which only counters have.
--
-- On a Citus coordinator the function stays PL/pgSQL (schema 12's reason),
-- the probe a second query.
DO $$
DECLARE
    citus boolean := false;
BEGIN
    -- Two steps: PL/pgSQL plans a whole condition, and without Citus there
    -- is no pg_dist_partition to plan.
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE $q$SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'public.samples'::regclass)$q$ INTO citus;
    END IF;
    IF citus THEN
        EXECUTE $q$
    CREATE OR REPLACE FUNCTION lhcnp_leaf_at(p_target text, p_keys jsonb, p_schema_path text, p_at timestamptz)
    RETURNS TABLE (ts timestamptz, value_num numeric, value_text text)
    LANGUAGE plpgsql STABLE AS $f$
    #variable_conflict use_column
    DECLARE
        k bigint;
        x record;
        r record;
    BEGIN
        SELECT s.id INTO k FROM series s
        WHERE s.target = p_target AND s.keys = p_keys AND s.schema_path = p_schema_path;
        IF k IS NULL THEN
            RETURN;
        END IF;
        SELECT y.ts, y.flags, y.v_num, y.v_int, y.v_float, y.v_text, y.v_bool INTO x
        FROM samples y
        WHERE y.series_id = k AND y.ts <= p_at
        ORDER BY y.ts DESC
        LIMIT 1;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        IF x.flags & 8 = 8 THEN
            SELECT z.ts, z.flags, z.v_num, z.v_int, z.v_float, z.v_text, z.v_bool INTO r
            FROM samples z
            WHERE z.series_id = k AND z.ts = x.ts AND z.flags & 8 = 0
            LIMIT 1;
            IF FOUND THEN
                x := r;
            END IF;
        END IF;
        RETURN QUERY SELECT x.ts,
               CASE WHEN x.flags & 2 = 0 THEN COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric) END,
               CASE WHEN x.flags & 2 = 0 THEN COALESCE(x.v_text, x.v_bool::text, x.v_int::text, x.v_num::text, x.v_float::text) END;
    END
    $f$
        $q$;
    ELSE
        EXECUTE $q$
    CREATE OR REPLACE FUNCTION lhcnp_leaf_at(p_target text, p_keys jsonb, p_schema_path text, p_at timestamptz)
    RETURNS TABLE (ts timestamptz, value_num numeric, value_text text)
    LANGUAGE sql STABLE AS $f$
    SELECT y.ts,
           CASE WHEN r.flags IS NOT NULL THEN
                     CASE WHEN r.flags & 2 = 0 THEN COALESCE(r.v_num, r.v_int::numeric, r.v_float::numeric) END
                WHEN y.flags & 2 = 0 THEN COALESCE(y.v_num, y.v_int::numeric, y.v_float::numeric) END,
           CASE WHEN r.flags IS NOT NULL THEN
                     CASE WHEN r.flags & 2 = 0 THEN COALESCE(r.v_text, r.v_bool::text, r.v_int::text, r.v_num::text, r.v_float::text) END
                WHEN y.flags & 2 = 0 THEN COALESCE(y.v_text, y.v_bool::text, y.v_int::text, y.v_num::text, y.v_float::text) END
    FROM (SELECT x.ts, x.series_id, x.flags, x.v_num, x.v_int, x.v_float, x.v_text, x.v_bool
          FROM samples x
          -- The series id as a scalar first: then the newest sample at or
          -- before p_at is one backward step of the (series_id, ts) index per
          -- partition, not a sort of the leaf's whole history.
          WHERE x.series_id = (SELECT k.id FROM series k
                               WHERE k.target = p_target AND k.keys = p_keys AND k.schema_path = p_schema_path)
            AND x.ts <= p_at
          ORDER BY x.ts DESC
          LIMIT 1) y
    -- A carried row (flags & 8): the real sample of the same time, if any
    -- (a value, or a delete).
    LEFT JOIN LATERAL (
          SELECT z.flags, z.v_num, z.v_int, z.v_float, z.v_text, z.v_bool
          FROM samples z
          WHERE y.flags & 8 = 8 AND z.series_id = y.series_id AND z.ts = y.ts AND z.flags & 8 = 0
          LIMIT 1) r ON true
    $f$
        $q$;
    END IF;
END $$;

---- create above / drop below ----

-- Schema 18's function: schema 3's body, or schema 12's on a Citus
-- coordinator.
DO $$
DECLARE
    citus boolean := false;
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE $q$SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'public.samples'::regclass)$q$ INTO citus;
    END IF;
    IF citus THEN
        EXECUTE $q$
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
    $f$
        $q$;
    ELSE
        EXECUTE $q$
CREATE OR REPLACE FUNCTION lhcnp_leaf_at(p_target text, p_keys jsonb, p_schema_path text, p_at timestamptz)
RETURNS TABLE (ts timestamptz, value_num numeric, value_text text)
LANGUAGE sql STABLE AS $f$
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
$f$
        $q$;
    END IF;
END $$;
