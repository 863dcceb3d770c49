-- lhcnp schema 25: a horizon for a database upgraded without one
-- (docs/collector.md, "Partitions and retention").
--
-- Schema 24 records the horizon each retention pass applies, from then
-- on: a database upgraded to it had its old days dropped (or trimmed) by the
-- passes before, which recorded nothing, so until its next pass its horizon
-- was NULL and the collector's History served a time before the removed
-- rows as if complete. Where the horizon is NULL, this sets it to the oldest
-- sample the daily partitions keep: nothing older is kept, so refusing an
-- older time is true, and every pass removed only what was older than what
-- it kept (a trim's carried copies are stamped at its horizon, so after a
-- trim it is that instant; after a pass of whole days, the first sample of
-- the oldest kept day, the carried ones at its start). Rows of the default
-- partition (switch clocks far off) are not read: a pass deleted those
-- before its horizon too, and the newer ones are not a day's history.
--
-- * A database that never stored a series (a fresh one, migrated from
--   nothing) keeps NULL: nothing was removed, and its first pass records
--   its own horizon.
-- * Series stored but no sample kept (the retention removed them all):
--   the migration's time, before which nothing is kept.
-- * The partitions are read oldest first, by their bounds (whichever
--   manager made them), and only up to the first that holds a row: one
--   day's rows are scanned, not the table.
-- * On Citus the same, through the coordinator: lhcnp_partitioning is its
--   table, the partitions' min(ts) is asked of the workers.
--
-- A horizon set here is kept by down (data, not schema: a pass could have
-- recorded it as well, and it is true); down restores 24's comment only.
DO $$
DECLARE
    part regclass;
    oldest timestamptz;
BEGIN
    IF EXISTS (SELECT 1 FROM lhcnp_partitioning WHERE parent = 'public.samples' AND horizon IS NULL)
       AND EXISTS (SELECT 1 FROM series) THEN
        FOR part IN
            SELECT c.oid::regclass
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'public.samples'::regclass
              AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
            ORDER BY (regexp_match(pg_get_expr(c.relpartbound, c.oid), $r$FROM \('([^']+)'\)$r$))[1]::timestamptz
        LOOP
            EXECUTE format('SELECT min(ts) FROM %s', part) INTO oldest;
            EXIT WHEN oldest IS NOT NULL;
        END LOOP;
        UPDATE lhcnp_partitioning SET horizon = COALESCE(oldest, now()) WHERE parent = 'public.samples';
    END IF;

    EXECUTE $q$COMMENT ON COLUMN lhcnp_partitioning.horizon IS
        'the greatest horizon a retention pass (lhcnp_maintain, migrations.Trim) applied: the rows before it are removed; NULL: none yet (schema 24); in a database upgraded to schema 25 without one, its oldest kept sample then'$q$;
END $$;

---- create above / drop below ----

DO $$
BEGIN
    -- Schema 24's text exactly (the catalogue is compared).
    EXECUTE $q$COMMENT ON COLUMN lhcnp_partitioning.horizon IS
        'the greatest horizon a retention pass (lhcnp_maintain, migrations.Trim) applied: the rows before it are removed; NULL: none yet (schema 24)'$q$;
END $$;
