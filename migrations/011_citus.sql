-- lhcnp schema 11: on a Citus coordinator, the tables are distributed
-- (docs/scaling.md, Step 3); on plain PostgreSQL this step changes nothing.
--
-- It applies when the database has the citus extension and at least one
-- active worker registered (pgserver.Cluster.CreateDatabase, or by hand:
-- CREATE EXTENSION citus on every node, citus_set_coordinator_host and
-- citus_add_node on the coordinator). Then:
--
-- * samples (time-partitioned: every daily partition is distributed the
--   same way, also those made later) and latest are distributed by
--   series_id, co-located: a series' history and its last value are on one
--   shard, and a query of one queue touches the few shards of its series.
-- * ingest_ledger is co-located with them: it gets a column shard_key, a
--   series id of the rows its batch (or the part of a batch) holds, and is
--   distributed by it, with the primary key (shard_key, batch_id). The
--   part of a batch that falls on one shard and its ledger row then commit
--   in one single-shard transaction on one worker, without a two-phase
--   commit. A ledger row written without shard_key has 0.
-- * events are distributed by target (stored once by their identity index,
--   which holds target, so they need no ledger row).
-- * series, leases, collectors, lhcnp_carried_leaves, tuner_actions and
--   dead_letters are reference tables (a copy on every node): small,
--   joined with samples in the views, written seldom.
-- * targets stays a table of the coordinator: its trigger NOTIFYs the
--   collectors, which LISTEN on the coordinator, and Citus cannot commit a
--   NOTIFY in a two-phase commit across nodes. lhcnp_partitioning stays too
--   (read by lhcnp_maintain on the coordinator only).
-- * lhcnp_carry_forward (schema 8) joins samples laterally with a LIMIT,
--   which Citus cannot plan over a distributed table: on Citus it becomes a
--   loop over the carried series, one single-shard INSERT ... SELECT each;
--   schema 8's stays as lhcnp_carry_forward_single_node and comes back on
--   the way down.
--
-- Down undistributes every table (undistribute_table copies the rows back
-- into the coordinator) and restores the primary key of the ledger: rows
-- of two parts of one batch (same batch_id, another shard_key) cannot both
-- be kept then, and the step refuses with an error rather than drop one.
--
-- `lhcnp migrate status` says which mode a database is in
-- (migrations.Mode).

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid <> 0) THEN
        RAISE NOTICE 'citus is installed but no worker is registered: the tables stay on this node';
        RETURN;
    END IF;

    -- Functions first: Citus propagates function DDL to the workers, which
    -- it cannot do in a transaction after a parallel operation on a
    -- distributed table.
    ALTER FUNCTION lhcnp_carry_forward(timestamptz) RENAME TO lhcnp_carry_forward_single_node;
    -- Schema 8's lhcnp_carry_forward, one series at a time.
    CREATE FUNCTION lhcnp_carry_forward(horizon timestamptz) RETURNS integer
    LANGUAGE plpgsql AS $f$
    DECLARE
        s record;
        k integer;
        n integer := 0;
    BEGIN
        FOR s IN
            SELECT se.id, c.reader FROM lhcnp_carried_leaves c JOIN series se ON se.schema_path = c.schema_path
            ORDER BY se.id
        LOOP
            INSERT INTO samples (ts, series_id, v_int, v_float, v_num, v_bool, v_text, flags, batch_id)
            SELECT horizon, y.series_id, y.v_int, y.v_float, y.v_num, y.v_bool, y.v_text, y.flags | 8, 0
            FROM samples y
            WHERE y.series_id = s.id AND y.ts < horizon
              AND (s.reader = 'leaf_at' OR lhcnp_valid_speed(y.v_num, y.v_float, y.v_int, y.flags) IS NOT NULL)
              AND NOT EXISTS (SELECT 1 FROM samples z WHERE z.series_id = s.id AND z.ts = horizon)
            ORDER BY y.ts DESC
            LIMIT 1;
            GET DIAGNOSTICS k = ROW_COUNT;
            n := n + k;
        END LOOP;
        RETURN n;
    END $f$;

    ALTER TABLE ingest_ledger ADD COLUMN shard_key bigint NOT NULL DEFAULT 0;
    ALTER TABLE ingest_ledger DROP CONSTRAINT ingest_ledger_pkey;
    ALTER TABLE ingest_ledger ADD CONSTRAINT ingest_ledger_pkey PRIMARY KEY (shard_key, batch_id);
    COMMENT ON COLUMN ingest_ledger.shard_key IS
        'Citus: a series id of the rows the ledger row vouches for (its shard); 0 when written without one';

    PERFORM create_distributed_table('samples', 'series_id');
    PERFORM create_distributed_table('latest', 'series_id', colocate_with => 'samples');
    PERFORM create_distributed_table('ingest_ledger', 'shard_key', colocate_with => 'samples');
    PERFORM create_distributed_table('events', 'target');
    PERFORM create_reference_table('series');
    PERFORM create_reference_table('leases');
    PERFORM create_reference_table('collectors');
    PERFORM create_reference_table('lhcnp_carried_leaves');
    PERFORM create_reference_table('tuner_actions');
    PERFORM create_reference_table('dead_letters');
END $$;

---- create above / drop below ----

DO $$
DECLARE
    comments text[];
    c        text;
BEGIN
    -- Two statements: PL/pgSQL plans a whole condition, and without Citus
    -- there is no pg_dist_partition to plan.
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'public.samples'::regclass) THEN
        RETURN;
    END IF;
    DROP FUNCTION lhcnp_carry_forward(timestamptz);
    ALTER FUNCTION lhcnp_carry_forward_single_node(timestamptz) RENAME TO lhcnp_carry_forward;

    -- undistribute_table recreates the tables and the views on them
    -- without their comments: they are kept here and put back.
    SELECT array_agg(CASE WHEN a.attname IS NULL
                          THEN format('COMMENT ON %s %I.%I IS %L',
                                      CASE WHEN k.relkind = 'v' THEN 'VIEW' WHEN k.relkind IN ('i', 'I') THEN 'INDEX' ELSE 'TABLE' END,
                                      n.nspname, k.relname, d.description)
                          ELSE format('COMMENT ON COLUMN %I.%I.%I IS %L', n.nspname, k.relname, a.attname, d.description) END)
    INTO comments
    FROM pg_description d
    JOIN pg_class k ON d.classoid = 'pg_class'::regclass AND k.oid = d.objoid
    JOIN pg_namespace n ON n.oid = k.relnamespace
    LEFT JOIN pg_attribute a ON d.objsubid > 0 AND a.attrelid = k.oid AND a.attnum = d.objsubid
    WHERE n.nspname = 'public' AND NOT (k.relname = 'ingest_ledger' AND a.attname = 'shard_key');

    PERFORM undistribute_table('dead_letters');
    PERFORM undistribute_table('tuner_actions');
    PERFORM undistribute_table('lhcnp_carried_leaves');
    PERFORM undistribute_table('collectors');
    PERFORM undistribute_table('leases');
    PERFORM undistribute_table('series');
    PERFORM undistribute_table('events');
    PERFORM undistribute_table('ingest_ledger');
    PERFORM undistribute_table('latest');
    PERFORM undistribute_table('samples');

    ALTER TABLE ingest_ledger DROP CONSTRAINT ingest_ledger_pkey;
    ALTER TABLE ingest_ledger DROP COLUMN shard_key;
    ALTER TABLE ingest_ledger ADD CONSTRAINT ingest_ledger_pkey PRIMARY KEY (batch_id);
    FOREACH c IN ARRAY coalesce(comments, '{}') LOOP
        EXECUTE c;
    END LOOP;
END $$;
