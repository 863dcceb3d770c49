-- lhcnp schema 26: the deletes a stale merge held back (docs/collector.md,
-- the write path, step 3).
--
-- A stale batch's delete whose series' row just after it is a delete (the
-- owner's: the same disappearance, dated differently) is not stored. When
-- it ends its series in its batch, what follows it in the collector's
-- stream is in a later stale batch, not seen yet: a value there, between
-- it and that delete, makes it a disappearance of its own. The merge keeps
-- such a delete here, in its transaction, and the later merges of the
-- series judge it again with their batch's rows: stored then (with its
-- own batch_id), or forgotten once a later row of the series decides it.
-- A table, not the writer's memory: a crash between the two batches must
-- not lose it.
--
-- On Citus (schema 11 distributed samples) it is distributed by series_id,
-- co-located with samples and latest: a merge reads and writes it beside
-- them, on the series' shard.
CREATE TABLE stale_deletes (
    series_id bigint NOT NULL,
    ts        timestamptz NOT NULL,
    flags     smallint NOT NULL,
    target    text NOT NULL,
    batch_id  bigint NOT NULL,
    PRIMARY KEY (series_id, ts)
);
COMMENT ON TABLE stale_deletes IS
    'deletes of stale batches held back by the merge (next to a delete, last of their series in their batch): judged again by the later merges of their series';

DO $$
BEGIN
    -- Two statements: PL/pgSQL plans a whole condition, and without Citus
    -- there is no pg_dist_partition to plan.
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'public.samples'::regclass) THEN
        PERFORM create_distributed_table('stale_deletes', 'series_id', colocate_with => 'samples');
    END IF;
END $$;

---- create above / drop below ----

DROP TABLE stale_deletes;
