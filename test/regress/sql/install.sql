-- The extension installs its schemas, catalog and API, and uninstalls cleanly.
CREATE EXTENSION pg_trickle;
SELECT nspname FROM pg_namespace WHERE nspname LIKE 'pgtrickle%' ORDER BY 1;
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel
  FROM pg_proc p WHERE p.pronamespace = 'pgtrickle'::regnamespace ORDER BY p.oid::regprocedure::text COLLATE "C";
SELECT c.relname FROM pg_class c
 WHERE c.relnamespace = 'pgtrickle'::regnamespace AND c.relkind = 'r' ORDER BY 1;
SELECT has_schema_privilege('public', 'pgtrickle_changes', 'CREATE') AS public_creates_in_changes;
SELECT * FROM pgtrickle.pgt_status();
DROP EXTENSION pg_trickle;
SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pgtrickle%';
