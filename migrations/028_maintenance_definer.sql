-- lhcnp schema 28: the maintenance pass and the retention setter run as
-- their owner, so a collector role with only SELECT, INSERT, UPDATE and
-- DELETE on the tables runs them (docs/collector.md, "Roles").
--
-- lhcnp_maintain() creates the days ahead (CREATE TABLE, ATTACH PARTITION,
-- pg_partman's run_maintenance) and drops the old ones: a role that does
-- not own samples and may not create in its schema could not, and its
-- first pass that had to make a new day failed with "permission denied for
-- schema public" (the collector logged a warning; the rows of the days not
-- made went to samples_default, which both managers have). Now
-- both functions are SECURITY DEFINER: they run as the role that migrated
-- (the owner of the tables), whatever calls them; everything they call
-- runs as that role too.
--
-- As PostgreSQL's "Writing SECURITY DEFINER Functions Safely" says: the
-- search_path is fixed (public, where the schema is, then pg_temp last, so
-- that no temporary object of the caller stands in for one of ours), and
-- EXECUTE is taken from PUBLIC: the owner grants it to the collector's role
-- (a read-only role must not set the retention, which removes data at the
-- next pass). lhcnp_maintain reaches pg_partman by the schema recorded in
-- pg_extension, not by the path.
--
-- On Citus the pass runs on the coordinator, as before: the attributes and
-- privileges that matter are the coordinator's.
ALTER FUNCTION lhcnp_maintain() SECURITY DEFINER SET search_path = public, pg_temp;
ALTER FUNCTION lhcnp_set_retention(interval) SECURITY DEFINER SET search_path = public, pg_temp;
REVOKE EXECUTE ON FUNCTION lhcnp_maintain() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION lhcnp_set_retention(interval) FROM PUBLIC;

---- create above / drop below ----

GRANT EXECUTE ON FUNCTION lhcnp_set_retention(interval) TO PUBLIC;
GRANT EXECUTE ON FUNCTION lhcnp_maintain() TO PUBLIC;
ALTER FUNCTION lhcnp_set_retention(interval) SECURITY INVOKER RESET search_path;
ALTER FUNCTION lhcnp_maintain() SECURITY INVOKER RESET search_path;
