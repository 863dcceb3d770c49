-- lhcnp schema 2: daily partitions of samples, created ahead and dropped
-- after a retention.
--
-- pg_partman (Debian: postgresql-15-partman, version 4.x) manages them when
-- the extension is available and the migrating role may create it; otherwise
-- the plain-SQL functions below do the same job (so `lhcnp lab` works on a
-- server without partman). lhcnp_partitioning records which one was chosen;
-- lhcnp_maintain() runs the chosen one and is what the collector calls
-- periodically (migrations.Maintain). Rows outside every daily partition land
-- in samples_default and are never refused.
--
-- The choice can be forced with the migration data key partition_manager
-- ("pg_partman" or "lhcnp"; default "auto").

-- Which manager keeps each partitioned table, how many days it creates ahead
-- and how long it keeps data (NULL: forever).
CREATE TABLE lhcnp_partitioning (
    parent          text PRIMARY KEY,
    manager         text NOT NULL CHECK (manager IN ('pg_partman', 'lhcnp')),
    premake_days    integer NOT NULL DEFAULT 4 CHECK (premake_days > 0),
    retention       interval DEFAULT '30 days' CHECK (retention > '0'::interval),
    last_maintained timestamptz
);

-- The fallback: creates the partition of parent holding the UTC day `day`
-- (named like pg_partman's: parent_p, then the day formatted by `suffix`,
-- pg_partman 4's YYYY_MM_DD unless told), moving into it any rows of that day
-- the default partition holds. Returns false when it existed.
CREATE FUNCTION lhcnp_create_daily_partition(parent regclass, day date, suffix text DEFAULT 'YYYY_MM_DD') RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    nsp   text;
    rel   text;
    child text;
    lo    timestamptz := day::timestamp AT TIME ZONE 'UTC';
    hi    timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
BEGIN
    SELECT n.nspname, c.relname INTO nsp, rel
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = parent;
    child := rel || '_p' || to_char(day, suffix);
    IF to_regclass(format('%I.%I', nsp, child)) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', nsp, child, nsp, rel);
    IF to_regclass(format('%I.%I', nsp, rel || '_default')) IS NOT NULL THEN
        EXECUTE format('WITH moved AS (DELETE FROM %I.%I WHERE ts >= $1 AND ts < $2 RETURNING *) INSERT INTO %I.%I SELECT * FROM moved',
                       nsp, rel || '_default', nsp, child) USING lo, hi;
    END IF;
    EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)', nsp, rel, nsp, child, lo, hi);
    RETURN true;
END $$;

-- Whether the default partition of parent holds rows of the UTC day `day`
-- that a partition of that day (named with `suffix`) does not exist for yet.
CREATE FUNCTION lhcnp_default_has_day(parent regclass, day date, suffix text DEFAULT 'YYYY_MM_DD') RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    nsp   text;
    rel   text;
    found boolean;
BEGIN
    SELECT n.nspname, c.relname INTO nsp, rel
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = parent;
    IF to_regclass(format('%I.%I', nsp, rel || '_default')) IS NULL
       OR to_regclass(format('%I.%I', nsp, rel || '_p' || to_char(day, suffix))) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I WHERE ts >= $1 AND ts < $2)', nsp, rel || '_default')
        INTO found USING day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC';
    RETURN found;
END $$;

-- The fallback's retention: drops the daily partitions of parent that end
-- before now() - retention, and deletes such rows from the default
-- partition. Returns the number of partitions dropped.
CREATE FUNCTION lhcnp_drop_daily_partitions(parent regclass, retention interval) RETURNS integer
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

-- One maintenance pass over every table in lhcnp_partitioning: partitions
-- for yesterday through premake_days ahead, retention applied (also to
-- events and ingest_ledger rows as old as the samples dropped). Safe to call
-- from several collectors at once: an advisory lock serialises the passes.
CREATE FUNCTION lhcnp_maintain() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    cfg    record;
    d      integer;
    suffix text;
    partman_schema text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('lhcnp_maintain'));
    SELECT extnamespace::regnamespace::text INTO partman_schema FROM pg_extension WHERE extname = 'pg_partman';
    FOR cfg IN SELECT * FROM lhcnp_partitioning ORDER BY parent LOOP
        IF cfg.manager = 'pg_partman' THEN
            IF partman_schema IS NULL THEN
                RAISE EXCEPTION 'lhcnp_maintain: % is managed by pg_partman, which is no longer installed', cfg.parent;
            END IF;
            -- pg_partman refuses to create a partition whose rows sit in the
            -- default partition (they would break its constraint), and by
            -- default sizes its work by the default partition's newest row. So
            -- it ignores the default's data, and the days it is about to make
            -- that already have rows there are made here, rows moved in; it
            -- finds them under the name it would have used.
            EXECUTE format('SELECT datetime_string FROM %s.part_config WHERE parent_table = $1', partman_schema)
                INTO suffix USING cfg.parent;
            suffix := COALESCE(suffix, 'YYYY_MM_DD');
            FOR d IN -1 .. cfg.premake_days + 1 LOOP
                IF lhcnp_default_has_day(cfg.parent::regclass, ((now() AT TIME ZONE 'UTC')::date + d), suffix) THEN
                    PERFORM lhcnp_create_daily_partition(cfg.parent::regclass, ((now() AT TIME ZONE 'UTC')::date + d), suffix);
                END IF;
            END LOOP;
            EXECUTE format('UPDATE %s.part_config SET premake = $1, retention = $2, retention_keep_table = false, infinite_time_partitions = true, ignore_default_data = true WHERE parent_table = $3', partman_schema)
                USING cfg.premake_days, cfg.retention::text, cfg.parent;
            EXECUTE format('SELECT %s.run_maintenance(p_parent_table := $1, p_jobmon := false)', partman_schema) USING cfg.parent;
        ELSE
            FOR d IN -1 .. cfg.premake_days LOOP
                PERFORM lhcnp_create_daily_partition(cfg.parent::regclass, ((now() AT TIME ZONE 'UTC')::date + d));
            END LOOP;
        END IF;
        -- Retention for the fallback, and for old rows in the default
        -- partition, which pg_partman leaves alone.
        IF cfg.retention IS NOT NULL THEN
            PERFORM lhcnp_drop_daily_partitions(cfg.parent::regclass, cfg.retention);
        END IF;
        IF cfg.parent = 'public.samples' AND cfg.retention IS NOT NULL THEN
            DELETE FROM events WHERE ts < now() - cfg.retention;
            DELETE FROM ingest_ledger WHERE committed_at < now() - cfg.retention;
        END IF;
        UPDATE lhcnp_partitioning SET last_maintained = now() WHERE parent = cfg.parent;
    END LOOP;
END $$;

-- Sets how long samples (and events, ledger rows) are kept; NULL keeps them
-- forever. Takes effect at the next lhcnp_maintain().
CREATE FUNCTION lhcnp_set_retention(keep interval) RETURNS void
LANGUAGE sql AS $$
    UPDATE lhcnp_partitioning SET retention = keep WHERE parent = 'public.samples';
$$;

DO $$
DECLARE
    wanted  text := '{{ default "auto" .partition_manager }}';
    manager text := 'lhcnp';
    partman_schema text;
    partman_major  integer;
BEGIN
    IF wanted NOT IN ('auto', 'pg_partman', 'lhcnp') THEN
        RAISE EXCEPTION 'partition_manager %: want auto, pg_partman or lhcnp', wanted;
    END IF;
    IF wanted <> 'lhcnp' AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_partman') THEN
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_partman') THEN
                CREATE SCHEMA IF NOT EXISTS partman;
                CREATE EXTENSION pg_partman SCHEMA partman;
            END IF;
            SELECT extnamespace::regnamespace::text, split_part(extversion, '.', 1)::integer
                INTO partman_schema, partman_major FROM pg_extension WHERE extname = 'pg_partman';
            -- pg_partman 4 (Debian 12) calls native partitioning 'native';
            -- 5 calls it 'range' and names days YYYYMMDD (lhcnp_maintain reads
            -- the naming from part_config).
            EXECUTE format('SELECT %s.create_parent(p_parent_table := $1, p_control := $2, p_type := $3, p_interval := $4, p_premake := 4, p_jobmon := false)', partman_schema)
                USING 'public.samples', 'ts', CASE WHEN partman_major >= 5 THEN 'range' ELSE 'native' END, '1 day';
            manager := 'pg_partman';
        EXCEPTION WHEN insufficient_privilege OR feature_not_supported OR undefined_file THEN
            RAISE NOTICE 'pg_partman unusable (%), partitions kept by lhcnp_maintain()', SQLERRM;
        END;
    END IF;
    IF manager = 'lhcnp' THEN
        IF wanted = 'pg_partman' THEN
            RAISE EXCEPTION 'partition_manager pg_partman: the extension pg_partman is not available on this server (Debian: postgresql-15-partman)';
        END IF;
        CREATE TABLE samples_default PARTITION OF samples DEFAULT;
    END IF;
    INSERT INTO lhcnp_partitioning (parent, manager) VALUES ('public.samples', manager);
END $$;

SELECT lhcnp_maintain();

---- create above / drop below ----

DO $$
DECLARE
    part record;
    n    bigint;
    partman_schema text;
BEGIN
    SELECT extnamespace::regnamespace::text INTO partman_schema FROM pg_extension WHERE extname = 'pg_partman';
    IF partman_schema IS NOT NULL THEN
        EXECUTE format('DELETE FROM %s.part_config WHERE parent_table = $1', partman_schema) USING 'public.samples';
        EXECUTE format('DROP TABLE IF EXISTS %s.template_public_samples', partman_schema);
    END IF;
    FOR part IN
        SELECT c.oid::regclass AS child FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'public.samples'::regclass
    LOOP
        EXECUTE format('DROP TABLE %s', part.child);
    END LOOP;
    -- The extension goes when nothing else uses it (it may have been there
    -- before; then it stays, as does a schema holding other objects).
    IF partman_schema IS NOT NULL THEN
        EXECUTE format('SELECT count(*) FROM %s.part_config', partman_schema) INTO n;
        IF n = 0 THEN
            DROP EXTENSION pg_partman;
            BEGIN
                EXECUTE format('DROP SCHEMA %s', partman_schema);
            EXCEPTION WHEN dependent_objects_still_exist THEN
                NULL;
            END;
        END IF;
    END IF;
END $$;

DROP FUNCTION lhcnp_set_retention(interval);
DROP FUNCTION lhcnp_maintain();
DROP FUNCTION lhcnp_drop_daily_partitions(regclass, interval);
DROP FUNCTION lhcnp_default_has_day(regclass, date, text);
DROP FUNCTION lhcnp_create_daily_partition(regclass, date, text);
DROP TABLE lhcnp_partitioning;
