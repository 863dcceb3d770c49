-- lhcnp schema 20: queue_latest carries the queue's overload-cut option.
--
-- The tuner's rule pinned switches a queue's overload-cut on where a loss
-- persists with the queue at the buffer, and off again after it stayed
-- below K_min (docs/tuner.md, "A pinned queue"). It fires only where the
-- node takes the leaf; the simulator's closed loop knew that, the service
-- had no way to learn it, nor what the switch runs. A switch publishes the
-- option as queue state, /lhcnp/interfaces/interface/queues/queue/state/
-- overload-cut (boolean, the state mirror of config/overload-cut), the
-- collector stores it as any leaf (v_bool), and queue_latest gains the
-- column overload_cut: its latest value, NULL where the switch never
-- published the leaf (a switch without the option: the tuner never
-- switches it). The column is added at the end, so CREATE OR REPLACE keeps
-- the view's other columns and their comments (schema 16). On Citus the
-- view reads latest and series, as schema 16's did;
-- TestCitusViewsSameAsOneNode compares it row by row.
-- One statement per EXECUTE: Citus cannot propagate DDL that came in a
-- string of several commands.
DO $$
BEGIN
    EXECUTE $q$
    CREATE OR REPLACE VIEW queue_latest AS
    WITH q AS (
        SELECT se.target,
               se.keys ->> 'name' AS interface,
               lhcnp_queue_id(se.keys) AS queue,
               substr(se.schema_path, length('/lhcnp/interfaces/interface/queues/queue/state/') + 1) AS leaf,
               l.ts,
               COALESCE(l.v_num, l.v_int::numeric, l.v_float::numeric) AS value_num,
               COALESCE(l.v_text, l.v_bool::text, l.v_int::text, l.v_num::text, l.v_float::text) AS value_text,
               l.v_bool
        FROM latest l
        JOIN series se ON se.id = l.series_id
        WHERE se.schema_path LIKE '/lhcnp/interfaces/interface/queues/queue/state/%' AND l.flags & 2 = 0
    ), i AS (
        SELECT se.target,
               se.keys ->> 'name' AS interface,
               max(COALESCE(l.v_num, l.v_int::numeric)) FILTER (WHERE se.schema_path = '/lhcnp/interfaces/interface/state/effective-rtt-est') AS rtt_est_us,
               max(COALESCE(l.v_num, l.v_int::numeric)) FILTER (WHERE se.schema_path = '/lhcnp/interfaces/interface/state/effective-port-rate') AS port_rate_bps,
               max(COALESCE(l.v_num, l.v_int::numeric)) FILTER (WHERE se.schema_path = '/lhcnp/interfaces/interface/state/buffer-size') AS buffer_bytes
        FROM latest l
        JOIN series se ON se.id = l.series_id
        WHERE se.schema_path IN ('/lhcnp/interfaces/interface/state/effective-rtt-est',
                                 '/lhcnp/interfaces/interface/state/effective-port-rate',
                                 '/lhcnp/interfaces/interface/state/buffer-size')
          AND l.flags & 2 = 0
        GROUP BY 1, 2
    )
    SELECT q.target,
           q.interface,
           q.queue,
           max(q.ts) AS ts,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'queue-depth')) AS queue_depth_bytes,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'peak-queue-depth')) AS peak_queue_depth_bytes,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'effective-kmax')) AS kmax_bytes,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'effective-kmin')) AS kmin_bytes,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'queue-growth-rate')) AS growth_rate_bytes_per_second,
           max(q.value_num) FILTER (WHERE q.leaf = 'ecn-marking-rate') AS ecn_marking_rate_percent,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'congestion-level')) AS congestion_level,
           bool_or(q.v_bool) FILTER (WHERE q.leaf = 'ecn-marking-active') AS ecn_marking_active,
           max(q.value_num) FILTER (WHERE q.leaf = 'alpha') AS alpha,
           max(q.value_text) FILTER (WHERE q.leaf = 'kmax-mode') AS kmax_mode,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'k-base')) AS k_base_bytes,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'v-growth')) AS v_growth_bytes_per_second,
           max(q.value_num) FILTER (WHERE q.leaf = 'v-ecn') AS v_ecn_percent,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-notify-sent') AS cnp_notify_sent,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-pause-sent') AS cnp_pause_sent,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-rate-reduce-sent') AS cnp_rate_reduce_sent,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-resume-sent') AS cnp_resume_sent,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/dropped-packets') AS dropped_packets,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/pfc-pause-frames') AS pfc_pause_frames,
           lhcnp_int(max(i.rtt_est_us)) AS rtt_est_us,
           lhcnp_int(max(i.port_rate_bps)) AS port_rate_bps,
           jsonb_object_agg(q.leaf, COALESCE(to_jsonb(q.value_num), to_jsonb(q.v_bool), to_jsonb(q.value_text))) AS state,
           lhcnp_int(max(i.buffer_bytes)) AS buffer_bytes,
           bool_or(q.v_bool) FILTER (WHERE q.leaf = 'overload-cut') AS overload_cut
    FROM q
    LEFT JOIN i ON i.target = q.target AND i.interface = q.interface
    GROUP BY q.target, q.interface, q.queue$q$;
    EXECUTE $q$COMMENT ON COLUMN queue_latest.overload_cut IS
        'the queue''s overload-cut option as the switch runs it (state/overload-cut; NULL when the switch does not publish the leaf)'$q$;
END $$;

---- create above / drop below ----

-- Schema 16's view (a view cannot lose a column in place) with its
-- comments.
DO $$
BEGIN
    EXECUTE 'DROP VIEW queue_latest';
    EXECUTE $q$
    CREATE VIEW queue_latest AS
    WITH q AS (
        SELECT se.target,
               se.keys ->> 'name' AS interface,
               lhcnp_queue_id(se.keys) AS queue,
               substr(se.schema_path, length('/lhcnp/interfaces/interface/queues/queue/state/') + 1) AS leaf,
               l.ts,
               COALESCE(l.v_num, l.v_int::numeric, l.v_float::numeric) AS value_num,
               COALESCE(l.v_text, l.v_bool::text, l.v_int::text, l.v_num::text, l.v_float::text) AS value_text,
               l.v_bool
        FROM latest l
        JOIN series se ON se.id = l.series_id
        WHERE se.schema_path LIKE '/lhcnp/interfaces/interface/queues/queue/state/%' AND l.flags & 2 = 0
    ), i AS (
        SELECT se.target,
               se.keys ->> 'name' AS interface,
               max(COALESCE(l.v_num, l.v_int::numeric)) FILTER (WHERE se.schema_path = '/lhcnp/interfaces/interface/state/effective-rtt-est') AS rtt_est_us,
               max(COALESCE(l.v_num, l.v_int::numeric)) FILTER (WHERE se.schema_path = '/lhcnp/interfaces/interface/state/effective-port-rate') AS port_rate_bps,
               max(COALESCE(l.v_num, l.v_int::numeric)) FILTER (WHERE se.schema_path = '/lhcnp/interfaces/interface/state/buffer-size') AS buffer_bytes
        FROM latest l
        JOIN series se ON se.id = l.series_id
        WHERE se.schema_path IN ('/lhcnp/interfaces/interface/state/effective-rtt-est',
                                 '/lhcnp/interfaces/interface/state/effective-port-rate',
                                 '/lhcnp/interfaces/interface/state/buffer-size')
          AND l.flags & 2 = 0
        GROUP BY 1, 2
    )
    SELECT q.target,
           q.interface,
           q.queue,
           max(q.ts) AS ts,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'queue-depth')) AS queue_depth_bytes,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'peak-queue-depth')) AS peak_queue_depth_bytes,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'effective-kmax')) AS kmax_bytes,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'effective-kmin')) AS kmin_bytes,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'queue-growth-rate')) AS growth_rate_bytes_per_second,
           max(q.value_num) FILTER (WHERE q.leaf = 'ecn-marking-rate') AS ecn_marking_rate_percent,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'congestion-level')) AS congestion_level,
           bool_or(q.v_bool) FILTER (WHERE q.leaf = 'ecn-marking-active') AS ecn_marking_active,
           max(q.value_num) FILTER (WHERE q.leaf = 'alpha') AS alpha,
           max(q.value_text) FILTER (WHERE q.leaf = 'kmax-mode') AS kmax_mode,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'k-base')) AS k_base_bytes,
           lhcnp_int(max(q.value_num) FILTER (WHERE q.leaf = 'v-growth')) AS v_growth_bytes_per_second,
           max(q.value_num) FILTER (WHERE q.leaf = 'v-ecn') AS v_ecn_percent,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-notify-sent') AS cnp_notify_sent,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-pause-sent') AS cnp_pause_sent,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-rate-reduce-sent') AS cnp_rate_reduce_sent,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/cnp-resume-sent') AS cnp_resume_sent,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/dropped-packets') AS dropped_packets,
           max(q.value_num) FILTER (WHERE q.leaf = 'counters/pfc-pause-frames') AS pfc_pause_frames,
           lhcnp_int(max(i.rtt_est_us)) AS rtt_est_us,
           lhcnp_int(max(i.port_rate_bps)) AS port_rate_bps,
           jsonb_object_agg(q.leaf, COALESCE(to_jsonb(q.value_num), to_jsonb(q.v_bool), to_jsonb(q.value_text))) AS state,
           lhcnp_int(max(i.buffer_bytes)) AS buffer_bytes
    FROM q
    LEFT JOIN i ON i.target = q.target AND i.interface = q.interface
    GROUP BY q.target, q.interface, q.queue$q$;
    EXECUTE $q$COMMENT ON COLUMN queue_latest.growth_rate_bytes_per_second IS
        'bytes per simulated second (the switch''s queue-growth-rate leaf)'$q$;
    EXECUTE $q$COMMENT ON COLUMN queue_latest.v_growth_bytes_per_second IS
        'bytes per simulated second (the switch''s v-growth leaf)'$q$;
    EXECUTE $q$COMMENT ON COLUMN queue_latest.buffer_bytes IS
        'bytes: the port''s egress buffer (the interface''s buffer-size leaf; NULL when the switch does not report it)'$q$;
END $$;
