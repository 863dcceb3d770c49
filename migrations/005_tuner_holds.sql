-- The tuner records its holds in tuner_actions (docs/tuner.md, "tuner_actions"):
-- a decision not to change (rule steady, cool-down, firing, bound, rejected, ...)
-- once per episode, when the queue's rule becomes it, and the end of an episode
-- in which telemetry could not be decided on (no-data, gap). Until now holds were
-- only logged, and the CHECK constraint of 001 had no outcome for them.
ALTER TABLE tuner_actions DROP CONSTRAINT tuner_actions_outcome_check;
ALTER TABLE tuner_actions ADD CONSTRAINT tuner_actions_outcome_check
    CHECK (outcome IN ('dry-run', 'pushed', 'confirmed', 'rolled-back', 'refused', 'error', 'hold'));

---- create above / drop below ----

-- Holds cannot be kept under the old constraint.
DELETE FROM tuner_actions WHERE outcome = 'hold';
ALTER TABLE tuner_actions DROP CONSTRAINT tuner_actions_outcome_check;
ALTER TABLE tuner_actions ADD CONSTRAINT tuner_actions_outcome_check
    CHECK (outcome IN ('dry-run', 'pushed', 'confirmed', 'rolled-back', 'refused', 'error'));
