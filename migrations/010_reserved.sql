-- lhcnp schema 10: reserved. Another branch adds its own migration 010 at
-- the same time as this one adds 011_citus.sql; tern wants the numbers
-- without a gap, so this empty step holds the place until that migration is
-- merged, which replaces this file (delete it then).
SELECT 1;

---- create above / drop below ----

SELECT 1;
