-- lhcnp schema 15: a refused row is dead-lettered once. Its identity is
-- (target, batch_id, row): the batch it came in and the row as JSON (md5 of
-- its text, jsonb's canonical form: a row may be longer than a btree entry
-- can hold). The writers insert with ON CONFLICT DO NOTHING. On one node a
-- batch's dead letters commit with its ledger row, so a replay never
-- reaches them; on Citus no ledger row guards a batch's events (they are
-- distributed by target, the ledger by series: docs/scaling.md, Step 3),
-- a replay offers a refused event again, and two collectors replaying one
-- batch at once (a spill replayed as its lease moved) could each write it
-- before this key. dead_letters is a reference table there (schema 11),
-- whose unique keys need no distribution column.
--
-- Copies written before this schema are removed first, the earliest kept.
-- One statement per EXECUTE: Citus cannot propagate DDL that came in a
-- string of several commands.
DO $$
BEGIN
    EXECUTE $q$DELETE FROM dead_letters d USING dead_letters k
        WHERE d.target = k.target AND d.batch_id = k.batch_id
          AND md5(d."row"::text) = md5(k."row"::text) AND d.id > k.id$q$;
    EXECUTE $q$CREATE UNIQUE INDEX dead_letters_once ON dead_letters (target, batch_id, md5("row"::text))$q$;
    EXECUTE $q$COMMENT ON INDEX dead_letters_once IS
        'a refused row is dead-lettered once by its batch and row (the writers insert with ON CONFLICT DO NOTHING)'$q$;
END $$;

---- create above / drop below ----

DROP INDEX dead_letters_once;
