-- lhcnp schema 27: the retention removes the held deletes (schema 26's
-- stale_deletes) older than its horizon (docs/collector.md, "Partitions
-- and retention").
--
-- A delete a stale merge held back stays until a later merge of its series
-- decides it; one that no later batch decides (the collector's stream ended
-- with it, or its later batches never came) stayed for ever. A pass now
-- deletes the held deletes older than the horizon it applied, as
-- migrations.Trim does with its own. Nothing a reader can see is lost: a
-- held delete stored later is a sample at its own time, and one older than
-- the horizon is a sample the retention would remove, before the time the
-- collector's History serves from; what follows it is judged as ever.
--
-- lhcnp_maintain() is 24's with the DELETE beside the horizon it records
-- (in the pass's transaction); on Citus the same function, run on the
-- coordinator, deletes from the distributed table. One statement per
-- EXECUTE (Citus, as schema 17).
DO $$
BEGIN
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
        -- transaction's, one for the whole pass. The held deletes
        -- (schema 26) older than it go with the days.
        IF keep IS NOT NULL THEN
            DELETE FROM stale_deletes WHERE ts < lhcnp_retention_horizon(keep);
            PERFORM lhcnp_record_horizon(lhcnp_retention_horizon(keep));
        END IF;
    END $f$
    $q$;
END $$;

---- create above / drop below ----

DO $$
BEGIN
    -- Schema 24's text exactly (the catalogue compares function bodies).
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
END $$;
