-- The compose lab's switches run at the speed of
-- examples/lab-containers.yaml (simulated seconds per wall-clock second):
-- recorded in target_speeds (migration 6) so that the views' rates per
-- simulated second are right for them. Run once by the compose service
-- `speeds` after the collector has made the schema:
--   psql DSN -v ON_ERROR_STOP=1 -v speed=0.05 -f target-speeds.sql
-- A row only when the speed in force differs: running it again adds none.
INSERT INTO target_speeds (target, speed)
SELECT s.target, :speed
FROM unnest(ARRAY['t1', 'n1', 'n2']) AS s(target)
WHERE lhcnp_speed_at(s.target, now()) IS DISTINCT FROM :speed;
