-- lhcnp schema 7: a target's speed is a leaf it publishes. Every switch
-- publishes /lhcnp/global/state/engine-speed (simulated seconds per
-- wall-clock second, 1 for real time) like its other state, the collector
-- stores it like any other leaf, and lhcnp_speed_at, which the rate views
-- (notifications_per_second, drops_and_pauses, queue_utilisation) and the
-- tuner call, reads it through lhcnp_leaf_at, as queue_utilisation reads
-- the port's rate. The table target_speeds of schema 6 and its two writers
-- (lhcnp lab, the compose lab's `speeds` service) are gone: nobody has to
-- tell the database a speed the switch already knows.
--
-- Data stored before this migration keeps the speeds it had: each row of
-- target_speeds becomes a sample of the target's engine-speed leaf at its
-- `since` (batch_id 0: written by this migration, not by a collector), so
-- the views answer for old data exactly as schema 6 did. A target that
-- never published the leaf and had no row runs at 1 (real time), as
-- before. docs/collector.md ("Views"), docs/lab.md ("Rates and speed").

-- The rows of target_speeds as samples of the leaf. The series id is the
-- collector's (collector/rows.SeriesID): FNV-1a 64 of the target, a NUL and
-- the canonical path, top bit cleared; numeric arithmetic stands in for
-- uint64 (the XOR touches the low byte only).
DO $$
DECLARE
    leaf  constant text := '/lhcnp/global/state/engine-speed';
    two64 constant numeric := 18446744073709551616;
    t     text;
    h     numeric;
    b     int;
    sid   bigint;
BEGIN
    FOR t IN SELECT DISTINCT target FROM target_speeds LOOP
        h := 14695981039346656037;
        FOR b IN SELECT get_byte(x.bytes, i) FROM
                 (SELECT convert_to(t, 'UTF8') || '\x00'::bytea || convert_to(leaf, 'UTF8') AS bytes) x,
                 generate_series(0, length(x.bytes) - 1) i ORDER BY i LOOP
            h := mod((h - mod(h, 256) + (mod(h, 256)::int # b)) * 1099511628211, two64);
        END LOOP;
        sid := mod(h, two64 / 2)::bigint;
        INSERT INTO series (id, target, path, schema_path, keys, yang_type, unit)
        VALUES (sid, t, leaf, leaf, '{}', 'decimal64', 'simulated-seconds-per-second')
        ON CONFLICT DO NOTHING;
        INSERT INTO samples (ts, series_id, v_float, flags, batch_id)
        SELECT s.since, sid, s.speed, 0, 0 FROM target_speeds s WHERE s.target = t;
        INSERT INTO latest (series_id, ts, v_float, flags)
        SELECT sid, s.since, s.speed, 0 FROM target_speeds s WHERE s.target = t ORDER BY s.since DESC LIMIT 1
        ON CONFLICT (series_id) DO NOTHING;
    END LOOP;
END $$;

-- The speed of a target at an instant: its engine-speed leaf at or before
-- it, else the leaf's first value (the rows of a bucket that starts before
-- the switch's first publication, e.g. notifications_per_second's whole
-- seconds), else 1. A value that is not a positive number (a deleted leaf,
-- a bogus switch) is skipped: the views divide by the speed.
CREATE OR REPLACE FUNCTION lhcnp_speed_at(p_target text, p_at timestamptz) RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT COALESCE(
        (SELECT l.value_num::double precision
         FROM lhcnp_leaf_at(p_target, '{}', '/lhcnp/global/state/engine-speed', p_at) l
         WHERE l.value_num > 0 AND l.value_num < 'Infinity'),
        (SELECT COALESCE(x.v_num, x.v_float::numeric, x.v_int::numeric)::double precision
         FROM samples x
         WHERE x.series_id = (SELECT k.id FROM series k
                              WHERE k.target = p_target AND k.keys = '{}' AND k.schema_path = '/lhcnp/global/state/engine-speed')
           AND x.flags & 2 = 0
           AND COALESCE(x.v_num, x.v_float::numeric, x.v_int::numeric) > 0
           AND COALESCE(x.v_num, x.v_float::numeric, x.v_int::numeric) < 'Infinity'
         ORDER BY x.ts
         LIMIT 1),
        1)
$$;
COMMENT ON FUNCTION lhcnp_speed_at(text, timestamptz) IS
    'simulated seconds per wall-clock second of a target at an instant (its /lhcnp/global/state/engine-speed leaf; 1 when it never published one)';

DROP TABLE target_speeds;

COMMENT ON VIEW notifications_per_second IS
    'Long-haul CNPs sent per queue, action and wall-clock second; rate_per_second is per wall-clock second, rate_per_simulated_second per second of the dataplane''s clock (speed: the switch''s engine-speed leaf).';

---- create above / drop below ----

COMMENT ON VIEW notifications_per_second IS
    'Long-haul CNPs sent per queue, action and wall-clock second; rate_per_second is per wall-clock second, rate_per_simulated_second per second of the dataplane''s clock (speed: target_speeds).';

-- Schema 6's table, refilled from the leaf's samples (those this migration
-- wrote and those collected since: the views keep answering as they did).
CREATE TABLE target_speeds (
    target text NOT NULL CHECK (target <> ''),
    since  timestamptz NOT NULL DEFAULT now(),
    speed  double precision NOT NULL CHECK (speed > 0 AND speed < 'Infinity'),
    PRIMARY KEY (target, since)
);
COMMENT ON TABLE target_speeds IS
    'Simulated seconds per wall-clock second of a target''s dataplane from `since` on; no row: 1 (a real switch).';
COMMENT ON COLUMN target_speeds.speed IS 'simulated seconds per wall-clock second (> 0)';

INSERT INTO target_speeds (target, since, speed)
SELECT DISTINCT ON (k.target, x.ts) k.target, x.ts, COALESCE(x.v_num, x.v_float::numeric, x.v_int::numeric)::double precision
FROM series k
JOIN samples x ON x.series_id = k.id
WHERE k.schema_path = '/lhcnp/global/state/engine-speed' AND k.keys = '{}'
  AND x.flags & 2 = 0
  AND COALESCE(x.v_num, x.v_float::numeric, x.v_int::numeric) > 0
  AND COALESCE(x.v_num, x.v_float::numeric, x.v_int::numeric) < 'Infinity'
ORDER BY k.target, x.ts;

-- The samples this migration wrote go with the table they came from, and
-- the leaf's series with them when nothing else was collected for it.
DELETE FROM samples x USING series k
WHERE x.series_id = k.id AND x.batch_id = 0
  AND k.schema_path = '/lhcnp/global/state/engine-speed' AND k.keys = '{}';
DELETE FROM latest l USING series k
WHERE l.series_id = k.id AND k.schema_path = '/lhcnp/global/state/engine-speed' AND k.keys = '{}'
  AND NOT EXISTS (SELECT 1 FROM samples x WHERE x.series_id = k.id);
DELETE FROM series k
WHERE k.schema_path = '/lhcnp/global/state/engine-speed' AND k.keys = '{}'
  AND NOT EXISTS (SELECT 1 FROM samples x WHERE x.series_id = k.id);

CREATE OR REPLACE FUNCTION lhcnp_speed_at(p_target text, p_at timestamptz) RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT COALESCE(
        (SELECT s.speed FROM target_speeds s WHERE s.target = p_target AND s.since <= p_at ORDER BY s.since DESC LIMIT 1),
        (SELECT s.speed FROM target_speeds s WHERE s.target = p_target ORDER BY s.since LIMIT 1),
        1)
$$;
COMMENT ON FUNCTION lhcnp_speed_at(text, timestamptz) IS
    'simulated seconds per wall-clock second of a target at an instant (target_speeds; 1 without a row)';
