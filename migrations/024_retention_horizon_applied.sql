-- lhcnp schema 24: the horizon the retention applied, recorded
-- (docs/collector.md, "Partitions and retention"; docs/gnmi-target.md,
-- "History").
--
-- A reader of the samples (the collector's History extension) must know
-- from when they are complete: before the horizon the retention removed
-- them. It is not now() - retention: lhcnp_maintain drops whole UTC days
-- (from lhcnp_retention_horizon(retention), up to a day earlier), and
-- migrations.Trim (the lab's retention) trims to its own horizon at each
-- pass, not to the reader's now. So every pass records the horizon it
-- applied, and the reader reads that:
--
-- * lhcnp_partitioning.horizon: the greatest horizon a pass applied to the
--   table (samples: its rows older are removed, but for the carried copies
--   stamped at it); NULL until a pass with a retention has run, and in a database
--   upgraded to this schema until its next pass (the collector runs one
--   when it starts). It only grows: a longer retention set later brings
--   nothing back, a shorter one moves it on at the next pass.
-- * lhcnp_record_horizon(applied) moves it on (GREATEST: an older horizon
--   changes nothing). lhcnp_maintain() calls it with its horizon when the
--   table has a retention; migrations.Trim with its own before it deletes
--   (a trim that fails half-way has removed some rows before it).
--
-- lhcnp_partitioning stays a table of the coordinator on Citus (schema 11):
-- the pass and the reader use the coordinator. One statement per EXECUTE
-- (Citus, as schema 17); the functions before anything else.
DO $$
BEGIN
    EXECUTE $q$
    CREATE FUNCTION lhcnp_record_horizon(applied timestamptz) RETURNS void
    LANGUAGE plpgsql AS $f$
    BEGIN
        UPDATE lhcnp_partitioning SET horizon = GREATEST(horizon, applied) WHERE parent = 'public.samples';
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
        -- The horizon the days were dropped by: now() is the
        -- transaction's, one for the whole pass.
        IF keep IS NOT NULL THEN
            PERFORM lhcnp_record_horizon(lhcnp_retention_horizon(keep));
        END IF;
    END $f$
    $q$;

    EXECUTE $q$ALTER TABLE lhcnp_partitioning ADD COLUMN horizon timestamptz$q$;
    EXECUTE $q$COMMENT ON COLUMN lhcnp_partitioning.horizon IS
        'the greatest horizon a retention pass (lhcnp_maintain, migrations.Trim) applied: the rows before it are removed; NULL: none yet (schema 24)'$q$;
END $$;

---- create above / drop below ----

DO $$
BEGIN
    -- Schema 17's text exactly (the catalogue compares function bodies).
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

    EXECUTE $q$DROP FUNCTION lhcnp_record_horizon(timestamptz)$q$;
    EXECUTE $q$ALTER TABLE lhcnp_partitioning DROP COLUMN horizon$q$;
END $$;
