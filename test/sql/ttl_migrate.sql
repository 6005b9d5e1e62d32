--
-- ttl_migrate: what eases the switch from pg_ttl_index: a TTL written as
-- a quoted literal, ttl_summary() and ttl_import_pg_ttl_index(), on a
-- server without the library preloaded (test/t/016_migrate.pl runs the
-- whole switch with the worker).
--
SET client_min_messages = warning;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA mig;
SET search_path = mig, public;

CREATE TABLE sessions (id int, created_at timestamptz NOT NULL);
CREATE TABLE logs (id int, logged_at timestamp NOT NULL, deleted_at timestamptz);

-- a quoted literal is the TTL's text: a bare number is seconds
SELECT ttl_create_index('sessions', 'created_at', '3600') > 0 AS ok;
SELECT expire_after FROM ttl_index_stats WHERE table_name = 'sessions'::regclass;
SELECT ttl_create_index('sessions', 'created_at', '90 minutes') > 0 AS ok;
SELECT expire_after FROM ttl_index_stats WHERE table_name = 'sessions'::regclass;
SELECT ttl_create_index('sessions', 'created_at', ' 1.5 ') > 0 AS ok;
SELECT expire_after FROM ttl_index_stats WHERE table_name = 'sessions'::regclass;
-- so is a text value, and the other forms are what they were
SELECT ttl_create_index('sessions', 'created_at', '2 days'::varchar) > 0 AS ok;
SELECT expire_after FROM ttl_index_stats WHERE table_name = 'sessions'::regclass;
SELECT ttl_create_index('sessions', 'created_at', 600) > 0 AS ok;
SELECT expire_after FROM ttl_index_stats WHERE table_name = 'sessions'::regclass;
SELECT ttl_create_index('sessions', 'created_at', interval '1 hour') > 0 AS ok;
SELECT expire_after FROM ttl_index_stats WHERE table_name = 'sessions'::regclass;
-- the options follow by position, as in pg_ttl_index
SELECT ttl_create_index('logs', 'logged_at', '604800', 500, 'deleted_at') > 0 AS ok;
SELECT expire_after, batch_size, action, soft_delete_column
  FROM ttl_index_stats WHERE table_name = 'logs'::regclass;

-- a TTL that is not one is refused, and nothing changes
SELECT ttl_create_index('sessions', 'created_at', 'soon');
SELECT ttl_create_index('sessions', 'created_at', '1 month -1 hour');
SELECT ttl_create_index('sessions', 'created_at', '-60');
SELECT ttl_create_index('sessions', 'created_at', '40000 days');
SELECT ttl_create_index('sessions', 'created_at', NULL);
SELECT ttl_create_index('sessions', 'created_at', '');
SELECT table_name, expire_after FROM ttl_index_stats ORDER BY policy_id;

-- ttl_summary(): pg_ttl_index's columns, from ttl_index_stats
SELECT schema_name, table_name, column_name, expire_after_seconds, batch_size, active,
       rows_deleted_last_run, total_rows_deleted, index_name, soft_delete_column, cleanup_mode
  FROM ttl_summary();
SELECT ttl_pause('sessions');
SELECT table_name, active FROM ttl_summary();
-- its columns and their types
SELECT pg_get_function_arguments('ttl_summary()'::regprocedure);

-- the importer reads a copy of pg_ttl_index's ttl_index_table; 2.x had no
-- schema_name: a bare name is a table in public (its worker's
-- search_path), a qualified one is read as written
CREATE TABLE events (at timestamptz NOT NULL);
CREATE TABLE public.mig_bare (at timestamptz NOT NULL);
CREATE TABLE v2_copy (table_name text, column_name text, expire_after_seconds integer,
                      active boolean, batch_size integer, index_name text);
INSERT INTO v2_copy VALUES ('mig.events', 'at', 120, true, 10000, 'idx_ttl_events_at'),
                           ('mig_bare', 'at', 300, true, 2000, NULL),
                           ('mig.nowhere', 'at', 120, true, 10000, NULL),
                           ('mig.sessions', 'id', 60, true, 10000, NULL),
                           ('mig.sessions', 'gone', 60, false, 10000, NULL);
SELECT * FROM ttl_import_pg_ttl_index('v2_copy', dry_run => true);
SELECT table_name, column_name, expire_after, batch_size, paused, policy_id > 0 AS has_id,
       index_name, redundant_index, status
  FROM ttl_import_pg_ttl_index('v2_copy');
SELECT table_name, expire_after, paused FROM ttl_index_stats ORDER BY policy_id;
-- again: the same policies, changed in place
SELECT status FROM ttl_import_pg_ttl_index('v2_copy');
SELECT count(*) FROM ttl_index_policy;

-- a table that is not such a copy, a view (reading it could run its
-- owner's functions as the caller), and no table, are refused
SELECT * FROM ttl_import_pg_ttl_index('sessions');
CREATE VIEW v2_view AS SELECT * FROM v2_copy;
SELECT * FROM ttl_import_pg_ttl_index('v2_view');
SELECT * FROM ttl_import_pg_ttl_index(NULL);
SELECT * FROM ttl_import_pg_ttl_index('no_such_copy');

-- the import runs as the caller: a role that does not own the tables
-- imports nothing
CREATE ROLE ttl_mig_other;
GRANT USAGE ON SCHEMA mig TO ttl_mig_other;
GRANT SELECT ON v2_copy TO ttl_mig_other;
CREATE TABLE other_tab (at timestamptz NOT NULL);
INSERT INTO v2_copy VALUES ('mig.other_tab', 'at', 60, true, 10000, NULL);
SET ROLE ttl_mig_other;
SELECT table_name, status FROM ttl_import_pg_ttl_index('v2_copy') WHERE table_name = 'mig.other_tab';
RESET ROLE;
SELECT count(*) FROM ttl_index_policy WHERE relid = 'other_tab'::regclass;

-- ttl_from_cron(): without pg_cron there is nothing to read.  (The jobs
-- below run as this role, in a session whose TimeZone is set here: the
-- calls carry it for timestamp and date columns.)
DO $$ BEGIN
	EXECUTE format('ALTER ROLE %I IN DATABASE %I SET TimeZone = %L', current_user,
				   current_database(), 'Australia/Sydney');
END $$;
SELECT * FROM ttl_from_cron();
-- with it: cron.job as pg_cron has it (the columns that matter here)
CREATE SCHEMA cron;
CREATE TABLE cron.job (jobid bigserial PRIMARY KEY, schedule text NOT NULL, command text NOT NULL,
                       nodename text DEFAULT 'localhost', nodeport int DEFAULT 5432,
                       database text DEFAULT current_database(), username text DEFAULT current_user,
                       active boolean DEFAULT true, jobname text);
INSERT INTO cron.job (jobname, schedule, command) VALUES
 ('purge-sessions', '*/5 * * * *', $$DELETE FROM sessions WHERE created_at < now() - interval '1 hour'$$),
 ('purge-logs', '0 3 * * *', $$delete from mig.logs where logged_at < current_timestamp - '7 days'::interval;$$),
 ('batched', '* * * * *', $$DELETE FROM public."Events" WHERE id IN (SELECT id FROM public."Events" WHERE "At" < now() - interval '30 minutes' ORDER BY "At" LIMIT 10000)$$),
 ('monthly', '0 4 1 * *', $$DELETE FROM audit WHERE at < now() - interval '3 months 2 days'$$),
 ('filtered', '0 * * * *', $$DELETE FROM jobs WHERE finished_at < now() - make_interval(secs => 86400) AND state = 'done'$$),
 ('two', '0 5 * * *', $$VACUUM sessions; DELETE FROM cache WHERE cache.expires < clock_timestamp() - interval '0'$$),
 ('vacuum', '0 6 * * *', 'VACUUM ANALYZE sessions'),
 ('by-count', '0 7 * * *', $$DELETE FROM sessions WHERE id < (SELECT max(id) - 1000 FROM sessions)$$),
 ('any-array', '0 8 * * *', $$DELETE FROM mig."My Logs" WHERE ctid = ANY (ARRAY(SELECT ctid FROM mig."My Logs" WHERE at < now() - interval '2 days' LIMIT 5000))$$);
-- what would mislead, if read as a TTL: not recognised, and the other jobs
-- are still listed
INSERT INTO cron.job (jobname, schedule, command) VALUES
 ('times', '0 9 * * *', $$DELETE FROM sessions WHERE created_at < now() - interval '1 day' * 30$$),
 ('other-table', '0 9 * * *', $$DELETE FROM sessions WHERE id IN (SELECT id FROM logs WHERE logged_at < now() - interval '1 day')$$),
 ('other-qualifier', '0 9 * * *', $$DELETE FROM cache WHERE t.expires < now() - interval '1 day'$$),
 ('or', '0 9 * * *', $$DELETE FROM jobs WHERE finished_at < now() - interval '1 day' AND state = 'done' OR state = 'failed'$$),
 ('bad-interval', '0 9 * * *', $$DELETE FROM jobs WHERE finished_at < now() - interval 'soon'$$);
UPDATE cron.job SET database = 'elsewhere' WHERE jobname = 'two';
SELECT jobid, jobname, ttl_call, note FROM ttl_from_cron();
-- nothing changed
SELECT count(*) FROM ttl_index_policy;
-- the suggested call works as it is
SELECT ttl_create_index('sessions', 'created_at', interval '1 hour') > 0 AS ok;
-- a cron.job that an ordinary role owns is not pg_cron's, and is not read
ALTER TABLE cron.job OWNER TO ttl_mig_other;
SELECT * FROM ttl_from_cron();
DROP SCHEMA cron CASCADE;
DO $$ BEGIN
	EXECUTE format('ALTER ROLE %I IN DATABASE %I RESET TimeZone', current_user,
				   current_database());
END $$;

DROP SCHEMA mig CASCADE;
DROP TABLE public.mig_bare;
DROP ROLE ttl_mig_other;
DROP EXTENSION ttl_index;
