-- Statements a pg_ttl_index user runs, written from that extension's public
-- documentation (quick start, function and table reference, configuration,
-- monitoring and best-practice guides), run one by one against ttl_index by
-- test/t/016_migrate.pl.  Each block is one statement, preceded by what it
-- must do here:
--   [works]          succeeds on ttl_index
--   [refused] why    fails on ttl_index by design (docs/migrating.md says
--                    what replaces it)
--   [varies] why     not asserted (depends on the server version)
-- Blocks are separated by blank lines.

-- [works]
CREATE TABLE user_sessions (
    id serial PRIMARY KEY,
    user_id integer NOT NULL,
    session_token text NOT NULL,
    session_data jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_activity timestamptz NOT NULL DEFAULT now()
);

-- [works]
INSERT INTO user_sessions (user_id, session_token, created_at)
SELECT g, md5(g::text), CASE WHEN g <= 210 THEN now() - interval '2 hours' ELSE now() END
  FROM generate_series(1, 240) g;

-- [works]
CREATE TABLE app_logs (id bigserial PRIMARY KEY, level text, message text,
                       logged_at timestamptz NOT NULL DEFAULT now());

-- [works]
CREATE TABLE cache_entries (key text PRIMARY KEY, value jsonb, expires_at timestamptz NOT NULL);

-- [works]
INSERT INTO cache_entries SELECT 'k' || g, '{}', now() - interval '1 second' FROM generate_series(1, 50) g;

-- [works]
CREATE TABLE notifications (id serial, body text, created_at timestamptz DEFAULT now());

-- [works]
CREATE TABLE metrics (id bigserial, value float8, collected_at timestamptz DEFAULT now());

-- [works]
CREATE TABLE events (id bigserial, kind text, "timestamp" timestamptz DEFAULT now());

-- [works]
CREATE TABLE audit_log (id bigserial, what text, created_at timestamptz DEFAULT now(),
                        deleted_at timestamptz);

-- [works]
INSERT INTO audit_log (what, created_at) SELECT 'old', now() - interval '100 days' FROM generate_series(1, 30);

-- [works]
SELECT ttl_create_index('user_sessions', 'created_at', 3600);

-- [works]
SELECT ttl_create_index('public.user_sessions', 'last_activity', 1800);

-- [works]
SELECT ttl_create_index('app_logs', 'logged_at', 604800, 50000);

-- [works]
SELECT ttl_create_index('cache_entries', 'expires_at', 0);

-- [works]
SELECT ttl_create_index('notifications', 'created_at', 86400, 1000);

-- [works]
SELECT ttl_create_index('metrics', 'collected_at', 3600, 100000);

-- [works]
SELECT ttl_create_index('events', 'timestamp', '3600');

-- [works]
SELECT ttl_create_index('public.events', 'timestamp', '86400', 50000);

-- [works]
SELECT ttl_create_index('audit_log', 'created_at', 7776000, 10000, 'deleted_at');

-- [works]
SELECT ttl_create_index('user_sessions', 'created_at', 7200);

-- [works]
SELECT ttl_create_index('user_sessions', 'created_at', '1800');

-- [refused] named arguments take ttl_index's names (table_name, column_name, expire_after, ...)
SELECT ttl_create_index(p_table_name => 'notifications', p_column_name => 'created_at', p_expire_after_seconds => 3600);

-- [refused] a wrong call is an error, not false with a WARNING
SELECT ttl_create_index('user_sessions', 'invalid_col', 3600);

-- [refused] a wrong call is an error, not false with a WARNING
SELECT ttl_create_index('no_such_table', 'created_at', 3600);

-- [refused] a wrong call is an error, not false with a WARNING
SELECT ttl_create_index('user_sessions', 'created_at', -1);

-- [refused] a wrong call is an error, not false with a WARNING
SELECT ttl_create_index('audit_log', 'created_at', 3600, 0);

-- [works]
SELECT ttl_runner();

-- [works]
SELECT count(*) FROM user_sessions WHERE created_at < now() - interval '30 minutes';

-- [works]
SELECT count(*) FROM cache_entries;

-- [works]
SELECT * FROM ttl_summary();

-- [works]
SELECT table_name, active, expire_after_seconds / 3600.0 AS expire_hours,
       last_run, time_since_last_run, rows_deleted_last_run, total_rows_deleted
  FROM ttl_summary() ORDER BY table_name;

-- [works]
SELECT table_name, last_run, time_since_last_run, rows_deleted_last_run
  FROM ttl_summary() WHERE last_run > now() - interval '1 hour' ORDER BY last_run DESC;

-- [works]
SELECT table_name, time_since_last_run, active FROM ttl_summary()
 WHERE active = true AND (last_run IS NULL OR last_run < now() - interval '5 minutes')
 ORDER BY last_run NULLS FIRST;

-- [works]
SELECT table_name, batch_size, rows_deleted_last_run,
       CASE WHEN rows_deleted_last_run >= batch_size THEN 'consider a larger batch_size'
            ELSE 'ok' END AS advice
  FROM ttl_summary();

-- [works]
SELECT table_name, soft_delete_column, cleanup_mode FROM ttl_summary() WHERE cleanup_mode = 'soft_delete';

-- [works]
SELECT sum(total_rows_deleted) AS total FROM ttl_summary();

-- [works]
SELECT count(*) FILTER (WHERE active) AS active, count(*) FILTER (WHERE NOT active) AS inactive FROM ttl_summary();

-- [works]
SELECT schema_name, table_name, column_name, index_name FROM ttl_summary() ORDER BY 1, 2, 3;

-- [works]
SELECT table_name, expire_after_seconds FROM ttl_summary() WHERE expire_after_seconds > 86400;

-- [works]
SELECT count(*) FROM audit_log WHERE deleted_at IS NOT NULL;

-- [refused] no configuration table: ttl_index_stats and ttl_summary() show the policies
SELECT * FROM ttl_index_table ORDER BY schema_name, table_name, column_name;

-- [refused] no configuration table: ttl_index_stats and ttl_summary() show the policies
SELECT table_name, column_name, expire_after_seconds FROM ttl_index_table WHERE active = true;

-- [refused] no configuration table: ttl_index_stats and ttl_summary() show the policies
SELECT table_name, last_run, now() - last_run AS time_since_last, rows_deleted_last_run
  FROM ttl_index_table WHERE last_run IS NOT NULL ORDER BY last_run DESC;

-- [refused] no configuration table: ttl_pause() and ttl_resume() switch a policy
UPDATE ttl_index_table SET active = false WHERE table_name = 'user_sessions';

-- [refused] no configuration table: ttl_create_index() changes a policy in place
UPDATE ttl_index_table SET batch_size = 5000 WHERE table_name = 'app_logs';

-- [refused] the worker starts by itself: the launcher runs one per database with policies
SELECT ttl_start_worker();

-- [refused] ttl_index_progress and ttl_index_databases show the workers
SELECT * FROM ttl_worker_status();

-- [refused] ttl_index_progress and ttl_index_databases show the workers
SELECT worker_pid, now() - backend_start AS uptime, state FROM ttl_worker_status();

-- [refused] ttl_index.enabled = off stops every worker; ttl_pause() one table
SELECT ttl_stop_worker();

-- [refused] the settings are named ttl_index.*
SHOW pg_ttl_index.naptime;

-- [refused] the settings are named ttl_index.*
SHOW pg_ttl_index.enabled;

-- [varies] ALTER SYSTEM of an unknown prefixed setting: accepted as a placeholder or refused
ALTER SYSTEM SET pg_ttl_index.naptime = 30;

-- [varies] ALTER SYSTEM of an unknown prefixed setting: accepted as a placeholder or refused
ALTER SYSTEM SET pg_ttl_index.enabled = false;

-- [works]
ALTER SYSTEM RESET ALL;

-- [works]
SELECT ttl_drop_index('cache_entries', 'expires_at');

-- [works]
SELECT ttl_drop_index('public.app_logs', 'logged_at');

-- [refused] dropping a policy that does not exist is an error, not false
SELECT ttl_drop_index('user_sessions', 'nonexistent');

-- [works]
SELECT count(*) FROM ttl_summary();
