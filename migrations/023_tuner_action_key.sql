-- lhcnp schema 23: every row of tuner_actions is written once, retries
-- included (docs/tuner.md, "tuner_actions").
--
-- The tuner writes its rows again when a write fails (the database away
-- for a moment), and a write can fail after the database committed it:
-- the connection lost before the answer came back. Before this schema the
-- second INSERT was a second row (an operator's change recorded twice, a
-- hold twice). Each row now carries the key the tuner gave it when it made
-- it, the same on every try, and the INSERT of a key already stored
-- returns that row instead of adding one. Rows written before this schema
-- have none (NULL: a unique index lets any number of them be).
--
-- tuner_actions is a reference table on Citus (schema 11): a unique index
-- on a reference table needs no distribution column.
--
-- One statement per EXECUTE (Citus, as schema 17).
DO $$
BEGIN
    EXECUTE $q$ALTER TABLE tuner_actions ADD COLUMN action_key uuid$q$;
    EXECUTE $q$CREATE UNIQUE INDEX tuner_actions_action_key ON tuner_actions (action_key)$q$;
    EXECUTE $q$COMMENT ON COLUMN tuner_actions.action_key IS
        'the key the tuner gave the row when it made it, the same on every try of its write: written once (schema 23); NULL for rows written before'$q$;
END $$;

---- create above / drop below ----

DO $$
BEGIN
    EXECUTE $q$DROP INDEX tuner_actions_action_key$q$;
    EXECUTE $q$ALTER TABLE tuner_actions DROP COLUMN action_key$q$;
END $$;
