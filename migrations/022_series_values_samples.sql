-- lhcnp schema 22: series_values holds the samples the switches sent, not
-- the retention's carried copies.
--
-- series_values is "every sample joined to its series" (docs/collector.md).
-- Since schemas 8 and 17 samples also holds the copies retention carries
-- to its horizon (flags bit 3, batch_id 0), and series_values showed them
-- as samples, with no column to tell them: a reader of a leaf's samples got
-- a value at the horizon the switch never sent (for a counter sampled at
-- the horizon, a second row beside the real one). The view now leaves
-- them out, rather than gaining a `carried` column:
--
-- * its readers want the switch's samples (the dashboard's QueueSeries and
--   the Grafana panels: a leaf's changes, a flow's rate summed per
--   second), and every reader of the carried values reads samples itself
--   (lhcnp_leaf_at, lhcnp_speed_of, counter_increases);
-- * the view over it (queue_congestion, one row per queue-depth sample)
--   reads a leaf that is never carried, so its answers do not change;
-- * a view's column cannot be dropped in place: the down step would have
--   to drop series_values and queue_congestion and create them again with
--   their comments, on one node and on Citus.
--
-- Same columns: CREATE OR REPLACE keeps the views over it. One statement
-- per EXECUTE (Citus, as schema 17).
DO $$
BEGIN
    EXECUTE $q$
    CREATE OR REPLACE VIEW series_values AS
    SELECT s.ts,
           s.series_id,
           se.target,
           se.path,
           se.schema_path,
           se.keys,
           COALESCE(s.v_num, s.v_int::numeric, s.v_float::numeric) AS value_num,
           COALESCE(s.v_text, s.v_bool::text, s.v_int::text, s.v_num::text, s.v_float::text) AS value_text,
           (s.flags & 1) <> 0 AS initial_sync,
           (s.flags & 2) <> 0 AS deleted,
           (s.flags & 4) <> 0 AS counter_reset,
           s.batch_id
    FROM samples s
    JOIN series se ON se.id = s.series_id
    WHERE s.flags & 8 = 0
    $q$;
END $$;

---- create above / drop below ----

-- Schema 3's view: the carried copies again.
DO $$
BEGIN
    EXECUTE $q$
    CREATE OR REPLACE VIEW series_values AS
    SELECT s.ts,
           s.series_id,
           se.target,
           se.path,
           se.schema_path,
           se.keys,
           COALESCE(s.v_num, s.v_int::numeric, s.v_float::numeric) AS value_num,
           COALESCE(s.v_text, s.v_bool::text, s.v_int::text, s.v_num::text, s.v_float::text) AS value_text,
           (s.flags & 1) <> 0 AS initial_sync,
           (s.flags & 2) <> 0 AS deleted,
           (s.flags & 4) <> 0 AS counter_reset,
           s.batch_id
    FROM samples s
    JOIN series se ON se.id = s.series_id
    $q$;
END $$;
