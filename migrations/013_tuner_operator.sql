-- The operator wins (docs/tuner.md, "The operator"): the tuner records, with
-- outcome 'operator', a change to a leaf it tunes that it did not make (another
-- client's Set, seen in telemetry), and an operator's `lhcnp tuner hold` and
-- `lhcnp tuner release`. hold_until is when tuning of that queue may resume:
-- the newest 'operator' row of a queue whose hold_until is still ahead holds it
-- (a release is a row whose hold_until is its own ts). A column of
-- tuner_actions, not a table of its own: the hold is part of the audit trail,
-- survives a restart of the tuner, and on Citus the reference table of schema
-- 11 carries it without another step.
-- One statement per EXECUTE: on Citus (schema 11) tuner_actions is a
-- reference table, and Citus cannot propagate DDL that came in a string of
-- several commands.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE tuner_actions DROP CONSTRAINT tuner_actions_outcome_check';
    EXECUTE $q$ALTER TABLE tuner_actions ADD CONSTRAINT tuner_actions_outcome_check
        CHECK (outcome IN ('dry-run', 'pushed', 'confirmed', 'rolled-back', 'refused', 'error', 'hold', 'operator'))$q$;
    EXECUTE 'ALTER TABLE tuner_actions ADD COLUMN hold_until timestamptz';
    EXECUTE $q$COMMENT ON COLUMN tuner_actions.hold_until IS
        'outcome operator: tuning of the queue is held until then (docs/tuner.md, "The operator")'$q$;
END $$;

---- create above / drop below ----

-- Operator rows cannot be kept under the old constraint.
DO $$
BEGIN
    EXECUTE $q$DELETE FROM tuner_actions WHERE outcome = 'operator'$q$;
    EXECUTE 'ALTER TABLE tuner_actions DROP COLUMN hold_until';
    EXECUTE 'ALTER TABLE tuner_actions DROP CONSTRAINT tuner_actions_outcome_check';
    EXECUTE $q$ALTER TABLE tuner_actions ADD CONSTRAINT tuner_actions_outcome_check
        CHECK (outcome IN ('dry-run', 'pushed', 'confirmed', 'rolled-back', 'refused', 'error', 'hold'))$q$;
END $$;
