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
-- of the same time (a subquery in the carried branch of a CASE, so run for
-- carried rows alone), and return it if there is one. Ordering by
-- (ts DESC, flags & 8) instead, the two newest rows sorted, or a lateral
-- join for the probe made queue_congestion, which calls the function for
-- every row, 20-70 % slower (migrations.BenchmarkViews); this form about
-- 10 % (25.8 -> 28.4 ms, six alternated runs; drops_and_pauses unchanged).
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
    SELECT x.ts,
           CASE WHEN x.flags & 8 = 0 THEN
                     CASE WHEN x.flags & 2 = 0 THEN COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric) END
                -- A carried row: the real sample of the same time if there
                -- is one (a value, or a delete's NULL), else the carried value.
                ELSE (SELECT u.v FROM (
                          SELECT 0 AS o, CASE WHEN z.flags & 2 = 0 THEN COALESCE(z.v_num, z.v_int::numeric, z.v_float::numeric) END AS v
                          FROM samples z WHERE z.series_id = x.series_id AND z.ts = x.ts AND z.flags & 8 = 0
                          UNION ALL
                          SELECT 1, COALESCE(x.v_num, x.v_int::numeric, x.v_float::numeric)) u
                      ORDER BY u.o LIMIT 1) END,
           CASE WHEN x.flags & 8 = 0 THEN
                     CASE WHEN x.flags & 2 = 0 THEN COALESCE(x.v_text, x.v_bool::text, x.v_int::text, x.v_num::text, x.v_float::text) END
                ELSE (SELECT u.v FROM (
                          SELECT 0 AS o, CASE WHEN z.flags & 2 = 0 THEN COALESCE(z.v_text, z.v_bool::text, z.v_int::text, z.v_num::text, z.v_float::text) END AS v
                          FROM samples z WHERE z.series_id = x.series_id AND z.ts = x.ts AND z.flags & 8 = 0
                          UNION ALL
                          SELECT 1, COALESCE(x.v_text, x.v_bool::text, x.v_int::text, x.v_num::text, x.v_float::text)) u
                      ORDER BY u.o LIMIT 1) END
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
