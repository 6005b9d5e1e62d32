--
-- ttl_expiry_rules: the options of ttl_create_index added in 1.2 (per-row
-- TTL, filters, epoch columns, partitioned tables, archive, soft delete,
-- rate limits) and ttl_pause()/ttl_resume().  As in ttl_index.sql, no
-- worker runs here: ttl_runner() applies the policies with the worker's
-- engine.  Rows are placed relative to now() with wide margins, so the
-- counts do not depend on how fast the test runs.
--
SET client_min_messages = error;
CREATE ROLE ttl_rules_owner;
CREATE ROLE ttl_rules_other;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA rules AUTHORIZATION ttl_rules_owner;
GRANT USAGE ON SCHEMA rules TO ttl_rules_other;
SET ROLE ttl_rules_owner;

-- 1. per-row TTL: a row expires at created_at + ttl (+ expire_after)
CREATE TABLE rules.msgs (id int PRIMARY KEY, created_at timestamptz NOT NULL, ttl integer);
SELECT ttl_create_index('rules.msgs', 'created_at', ttl_column => 'ttl') > 0 AS created;
-- the index is on the computed expiry, so the purge is a range scan
SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = 'rules.msgs'::regclass
   AND NOT i.indisprimary;
INSERT INTO rules.msgs VALUES
	(1, now() - interval '1 hour', 60),		-- expired 59 minutes ago
	(2, now() - interval '1 hour', 7200),	-- expires in an hour
	(3, now() - interval '1 hour', NULL),	-- no TTL: never
	(4, now() - interval '1 hour', 3000);	-- expired 10 minutes ago
SELECT ttl_runner();
SELECT id FROM rules.msgs ORDER BY id;
-- expire_after is added to the row's TTL: 3000 s + 1 h has not passed
INSERT INTO rules.msgs VALUES (4, now() - interval '1 hour', 3000);
SELECT ttl_create_index('rules.msgs', 'created_at', 3600, ttl_column => 'ttl') > 0 AS changed;
SELECT ttl_runner();
SELECT id FROM rules.msgs ORDER BY id;
-- an interval TTL works the same; a day counts 24 hours, a month 30 days
CREATE TABLE rules.msgs_iv (id int PRIMARY KEY, created_at timestamp NOT NULL, ttl interval);
SELECT ttl_create_index('rules.msgs_iv', 'created_at', ttl_column => 'ttl') > 0 AS created;
INSERT INTO rules.msgs_iv VALUES
	(1, now()::timestamp - interval '2 days', interval '1 day'),
	(2, now()::timestamp - interval '2 days', interval '1 month');
SELECT ttl_runner();
SELECT id FROM rules.msgs_iv ORDER BY id;
SELECT ttl_expires_at('2020-01-01 00:00+00'::timestamptz, interval '1 month 1 day')
	= '2020-02-01 00:00+00' AS month_is_30_days,
	   ttl_expires_at('2020-01-01 00:00'::timestamp, 90) AS plus_90_s,
	   ttl_expires_at('2020-01-01 00:00+00'::timestamptz, 9223372036854775807) AS never;

-- a per-row TTL column keeps a type the policy can use
-- (terse: the wording of the hint differs between versions)
\set VERBOSITY terse
ALTER TABLE rules.msgs_iv ALTER COLUMN ttl TYPE text;
\set VERBOSITY default

-- 2. filtered policies: only rows that also pass the filter expire
CREATE FUNCTION rules.is_final(s text) RETURNS boolean
	LANGUAGE sql IMMUTABLE AS $$ SELECT s IN ('done', 'cancelled') $$;
CREATE TABLE rules.jobs (id int PRIMARY KEY, finished_at timestamptz, status text);
SET search_path = rules, public;
SELECT ttl_create_index('jobs', 'finished_at', 60, filter => 'is_final(status) and status <> ''cancelled''') > 0 AS created;
RESET search_path;
-- stored as PostgreSQL deparses it, names qualified: it means the same
-- whatever search_path reads it later
SELECT filter FROM ttl_index_policy WHERE relid = 'rules.jobs'::regclass;
-- the filter is immutable, so the index made for it is partial
SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = 'rules.jobs'::regclass
   AND NOT i.indisprimary;
INSERT INTO rules.jobs SELECT g, now() - interval '1 hour',
	(ARRAY['done', 'failed', 'cancelled', 'running'])[g % 4 + 1] FROM generate_series(1, 40) g;
SELECT ttl_runner();
SELECT status, count(*) FROM rules.jobs GROUP BY status ORDER BY status;
-- a partial index the filter implies serves the policy: no new index
CREATE TABLE rules.tasks (id int PRIMARY KEY, at timestamptz, state text);
CREATE INDEX tasks_done_at ON rules.tasks (at) WHERE state = 'done';
SELECT ttl_create_index('rules.tasks', 'at', 60, filter => 'state = ''done'' AND id > 0') > 0 AS created;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'rules.tasks'::regclass;
-- a change that breaks the filter is refused
ALTER TABLE rules.tasks RENAME COLUMN state TO st;
ALTER TABLE rules.tasks DROP COLUMN state;
SELECT attname FROM pg_attribute WHERE attrelid = 'rules.tasks'::regclass AND attnum = 3;

-- 3. numeric epoch columns, with their unit
CREATE TABLE rules.ev (id int PRIMARY KEY, s integer, ms bigint, ns bigint, n numeric, f double precision);
INSERT INTO rules.ev SELECT g,
	extract(epoch FROM now())::integer - g * 600,
	(extract(epoch FROM now()) * 1000)::bigint - g * 600000,
	(extract(epoch FROM now()) * 1000000)::bigint * 1000 - g * 600000000000,
	extract(epoch FROM now()) - g * 600,
	extract(epoch FROM now()) * 1000 - g * 600000
  FROM generate_series(0, 5) g;	-- 0, 10, 20 ... 50 minutes old
CREATE TABLE rules.ev_s (LIKE rules.ev);
CREATE TABLE rules.ev_ms (LIKE rules.ev);
CREATE TABLE rules.ev_ns (LIKE rules.ev);
CREATE TABLE rules.ev_n (LIKE rules.ev);
CREATE TABLE rules.ev_f (LIKE rules.ev);
INSERT INTO rules.ev_s SELECT * FROM rules.ev;
INSERT INTO rules.ev_ms SELECT * FROM rules.ev;
INSERT INTO rules.ev_ns SELECT * FROM rules.ev;
INSERT INTO rules.ev_n SELECT * FROM rules.ev;
INSERT INTO rules.ev_f SELECT * FROM rules.ev;
-- each keeps rows younger than 25 minutes: ids 0, 1, 2
SELECT ttl_create_index('rules.ev_s', 's', 1500, unit => 's') > 0,
	   ttl_create_index('rules.ev_ms', 'ms', 1500, unit => 'ms') > 0,
	   ttl_create_index('rules.ev_ns', 'ns', 1500, unit => 'ns') > 0,
	   ttl_create_index('rules.ev_n', 'n', 1500, unit => 's') > 0,
	   ttl_create_index('rules.ev_f', 'f', 1500, unit => 'ms') > 0;
SELECT ttl_runner();
SELECT (SELECT array_agg(id ORDER BY id) FROM rules.ev_s) AS s,
	   (SELECT array_agg(id ORDER BY id) FROM rules.ev_ms) AS ms,
	   (SELECT array_agg(id ORDER BY id) FROM rules.ev_ns) AS ns,
	   (SELECT array_agg(id ORDER BY id) FROM rules.ev_n) AS n,
	   (SELECT array_agg(id ORDER BY id) FROM rules.ev_f) AS f;

-- 4. partitioned tables: whole expired partitions are dropped, others
-- purged row by row, the default partition included
CREATE TABLE rules.log (id int, at timestamptz NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE rules.log_2019 PARTITION OF rules.log FOR VALUES FROM ('2019-01-01') TO ('2020-01-01');
CREATE TABLE rules.log_2020 PARTITION OF rules.log FOR VALUES FROM ('2020-01-01') TO ('2021-01-01');
CREATE TABLE rules.log_now PARTITION OF rules.log FOR VALUES FROM ('2021-01-01') TO ('2200-01-01');
CREATE TABLE rules.log_default PARTITION OF rules.log DEFAULT;
INSERT INTO rules.log VALUES (1, '2019-06-01'), (2, '2020-06-01'), (3, now() - interval '2 days'),
	(4, now()), (5, '1990-01-01');
SELECT ttl_create_index('rules.log', 'at', interval '1 day') > 0 AS created;
-- the index is on the partitioned table, so every partition has one
SELECT count(*) AS partition_indexes FROM pg_inherits
  WHERE inhparent = (SELECT indexrelid FROM pg_index WHERE indrelid = 'rules.log'::regclass);
-- a partition attached later is covered
CREATE TABLE rules.log_2018 PARTITION OF rules.log FOR VALUES FROM ('2018-01-01') TO ('2019-01-01');
INSERT INTO rules.log VALUES (6, '2018-06-01');
SELECT ttl_runner();
SELECT id FROM rules.log ORDER BY id;
SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'rules.log'::regclass ORDER BY 1;

-- 5. archive: expired rows move to the archive table, in one transaction
CREATE TABLE rules.orders (id int PRIMARY KEY, created_at timestamptz, total numeric);
CREATE TABLE rules.orders_archive (id int, created_at timestamptz, total numeric,
	archived_at timestamptz DEFAULT now());
SELECT ttl_create_index('rules.orders', 'created_at', interval '1 day',
	action => 'archive', archive_table => 'rules.orders_archive') > 0 AS created;
INSERT INTO rules.orders SELECT g, now() - g * interval '12 hours', g * 10 FROM generate_series(1, 6) g;
SELECT ttl_runner();
SELECT id, total FROM rules.orders ORDER BY id;
SELECT id, total, archived_at IS NOT NULL AS stamped FROM rules.orders_archive ORDER BY id;
-- the archive table cannot go while the policy needs it, nor fall out of
-- step with the table
DROP TABLE rules.orders_archive;
ALTER TABLE rules.orders ADD COLUMN note text;
ALTER TABLE rules.orders_archive DROP COLUMN total;
SELECT count(*) AS columns FROM pg_attribute WHERE attrelid = 'rules.orders'::regclass AND attnum > 0;

-- 6. soft delete, pg_ttl_index style: the 5th argument is the column
CREATE TABLE rules.accounts (id int PRIMARY KEY, created_at timestamptz, deleted_at timestamptz);
SELECT ttl_create_index('rules.accounts', 'created_at', 3600, 5000, 'deleted_at') > 0 AS created;
SELECT action, soft_delete_column, batch_size FROM ttl_index_policy
 WHERE relid = 'rules.accounts'::regclass;
INSERT INTO rules.accounts SELECT g, now() - g * interval '40 minutes', NULL FROM generate_series(1, 4) g;
SELECT ttl_runner();
-- set once, to the time the row expired: created_at + 1 hour
SELECT id, deleted_at = created_at + interval '1 hour' AS at_expiry FROM rules.accounts ORDER BY id;
-- a plain index on the column is not enough: the marked rows would be
-- read again at every pass, so the policy gets its partial index
CREATE TABLE rules.users (id int PRIMARY KEY, last_login timestamptz, deleted_at timestamptz);
CREATE INDEX users_last_login ON rules.users (last_login);
SELECT ttl_create_index('rules.users', 'last_login', 3600, NULL, 'deleted_at') > 0 AS created;
SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 'rules.users'::regclass
   AND NOT indisprimary ORDER BY 1;
CREATE TEMP TABLE marks AS SELECT id, deleted_at FROM rules.accounts;
SELECT ttl_runner();
SELECT count(*) AS changed FROM rules.accounts a JOIN marks m USING (id)
 WHERE a.deleted_at IS DISTINCT FROM m.deleted_at;

-- 7. a policy's own rate limit is stored and shown
SELECT ttl_create_index('rules.msgs', 'created_at', 3600, ttl_column => 'ttl', rate_limit => 500) > 0;
SELECT table_name, rate_limit FROM ttl_index_stats WHERE rate_limit IS NOT NULL;

-- 8. pause and resume
INSERT INTO rules.jobs VALUES (100, now() - interval '1 hour', 'done');
SELECT ttl_pause('rules.jobs');
SELECT table_name, paused FROM ttl_index_stats WHERE table_name = 'rules.jobs'::regclass;
SELECT ttl_runner();
SELECT count(*) AS kept_while_paused FROM rules.jobs WHERE id = 100;
SELECT ttl_resume('rules.jobs', 'finished_at');
SELECT ttl_runner();
SELECT count(*) AS gone_after_resume FROM rules.jobs WHERE id = 100;

-- Bad calls: each fails with a clear error, and nothing changes.
CREATE TEMP TABLE policies_before AS SELECT * FROM ttl_index_policy;
CREATE TEMP TABLE indexes_before AS SELECT indexrelid FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
	JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'rules';
CREATE TABLE rules.t (id int, ts timestamptz, d date, n numeric, i int, sm smallint,
	txt text, ttl int, deleted_at timestamptz, status text);
-- per-row TTL
SELECT ttl_create_index('rules.t', 'ts', ttl_column => 'nosuch');
SELECT ttl_create_index('rules.t', 'ts', ttl_column => 'txt');
SELECT ttl_create_index('rules.t', 'd', ttl_column => 'ttl');
SELECT ttl_create_index('rules.t', 'ts', ttl_column => 'ts');
SELECT ttl_create_index('rules.t', 'n', ttl_column => 'ttl', unit => 's');
-- filters
SELECT ttl_create_index('rules.t', 'ts', 0, filter => '');
SELECT ttl_create_index('rules.t', 'ts', 0, filter => 'status =');
SELECT ttl_create_index('rules.t', 'ts', 0, filter => 'status');
SELECT ttl_create_index('rules.t', 'ts', 0, filter => 'nosuch = 1');
SELECT ttl_create_index('rules.t', 'ts', 0, filter => 'id IN (SELECT 1)');
SELECT ttl_create_index('rules.t', 'ts', 0, filter => 'random() < 0.5');
SELECT ttl_create_index('rules.t', 'ts', 0, filter => 'count(*) > 0');
SELECT ttl_create_index('rules.t', 'ts', 0, filter => 'true; DROP TABLE rules.t');
SELECT ttl_create_index('rules.t', 'ts', 0, filter => 'true FROM pg_class');
SELECT ttl_create_index('rules.t', 'ts', 0, filter => 'true AS x');
-- units
SELECT ttl_create_index('rules.t', 'n', 60);
SELECT ttl_create_index('rules.t', 'ts', 60, unit => 's');
SELECT ttl_create_index('rules.t', 'i', 60, unit => 'ms');
SELECT ttl_create_index('rules.t', 'sm', 60, unit => 's');
SELECT ttl_create_index('rules.t', 'n', 60, unit => 'h');
-- actions
SELECT ttl_create_index('rules.t', 'ts', 60, action => 'purge');
SELECT ttl_create_index('rules.t', 'ts', 60, action => 'archive');
SELECT ttl_create_index('rules.t', 'ts', 60, action => 'delete', archive_table => 'rules.orders_archive');
SELECT ttl_create_index('rules.t', 'ts', 60, action => 'archive', archive_table => 'rules.t');
SELECT ttl_create_index('rules.t', 'ts', 60, action => 'archive', archive_table => 'rules.orders_archive');
SELECT ttl_create_index('rules.t', 'ts', 60, action => 'soft_delete');
SELECT ttl_create_index('rules.t', 'ts', 60, action => 'delete', soft_delete_column => 'deleted_at');
SELECT ttl_create_index('rules.t', 'ts', 60, soft_delete_column => 'txt');
SELECT ttl_create_index('rules.t', 'ts', 60, soft_delete_column => 'ts');
SELECT ttl_create_index('rules.t', 'ts', 60, soft_delete_column => 'nosuch');
-- rate limit
SELECT ttl_create_index('rules.t', 'ts', 60, rate_limit => 0);
SELECT ttl_create_index('rules.t', 'ts', 60, rate_limit => -5);
-- pause and resume
SELECT ttl_pause('rules.t');
SELECT ttl_resume('rules.jobs', 'status');
SELECT ttl_pause(NULL);
RESET ROLE;
SET ROLE ttl_rules_other;
SELECT ttl_pause('rules.jobs');
SELECT ttl_create_index('rules.jobs', 'finished_at', 60, filter => 'true');
RESET ROLE;
-- an archive table the owner may not insert into
CREATE TABLE rules.not_yours (id int, created_at timestamptz, total numeric);
SET ROLE ttl_rules_owner;
SELECT ttl_create_index('rules.t', 'ts', 60, action => 'archive', archive_table => 'rules.not_yours');
RESET ROLE;

-- nothing changed
SELECT count(*) AS changed FROM (
	(SELECT * FROM ttl_index_policy EXCEPT SELECT * FROM policies_before)
	UNION ALL
	(SELECT * FROM policies_before EXCEPT SELECT * FROM ttl_index_policy)) d;
SELECT count(*) AS new_indexes FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
	JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'rules' AND i.indexrelid NOT IN (SELECT indexrelid FROM indexes_before);

-- A timestamp or date key is read in the policy's time zone: by default
-- the zone of the session that makes the policy (here Asia/Kolkata, where
-- the rows are written), or time_zone; ttl_runner() from a session in
-- another zone purges as that zone says.  (Notices name the server's zone,
-- which is this session's here: not shown.)
SET client_min_messages = warning;
SET TimeZone = 'Asia/Kolkata';
CREATE TABLE rules.wall (ts timestamp NOT NULL, what text);
INSERT INTO rules.wall VALUES (localtimestamp - interval '30 minutes', 'young'),
	(localtimestamp - interval '2 hours', 'old');
SELECT ttl_create_index('rules.wall', 'ts', 3600) > 0 AS ok;
CREATE TABLE rules.days (day date NOT NULL);
SELECT ttl_create_index('rules.days', 'day', interval '1 day', time_zone => 'europe/paris') > 0 AS ok;
RESET client_min_messages;
SELECT table_name, time_zone FROM ttl_index_stats
 WHERE table_name IN ('rules.wall'::regclass, 'rules.days'::regclass) ORDER BY policy_id;
SET TimeZone = 'America/Anchorage';
SELECT ttl_runner() >= 1 AS purged;
SELECT what FROM rules.wall;
-- bad zones: refused, nothing changed
SELECT ttl_create_index('rules.wall', 'ts', 3600, time_zone => 'Mars/Olympus_Mons');
SELECT ttl_create_index('rules.wall', 'ts', 3600, time_zone => '');
CREATE TABLE rules.instants (ts timestamptz NOT NULL);
-- a key of instants is read in no zone: a zone given is its purge
-- windows' (they follow the server's TimeZone otherwise), refused as for
-- a wall-clock key when it is not a zone
SELECT ttl_create_index('rules.instants', 'ts', 3600, time_zone => 'UTC-5', purge_window => '02:00-04:00');
SELECT ttl_create_index('rules.instants', 'ts', 3600, time_zone => 'Asia/Tokyo', purge_window => '02:00-04:00') > 0 AS created;
SELECT to_char(lower(next_window) AT TIME ZONE 'Asia/Tokyo', 'HH24:MI') AS opens,
       to_char(upper(next_window) AT TIME ZONE 'Asia/Tokyo', 'HH24:MI') AS closes
  FROM ttl_index_stats WHERE table_name = 'rules.instants'::regclass;
-- a second call that does not name it keeps it
SELECT ttl_create_index('rules.instants', 'ts', 7200) > 0 AS changed;
SELECT time_zone, purge_window FROM ttl_index_policy WHERE relid = 'rules.instants'::regclass;
CREATE TABLE rules.epochs (t bigint NOT NULL);
SELECT ttl_create_index('rules.epochs', 't', 3600, unit => 's', time_zone => 'UTC') > 0 AS created;
SELECT table_name, time_zone FROM ttl_index_stats
 WHERE table_name IN ('rules.wall'::regclass, 'rules.days'::regclass,
					  'rules.instants'::regclass, 'rules.epochs'::regclass) ORDER BY policy_id;
-- changed in place, like the TTL
SET client_min_messages = warning;
SELECT ttl_create_index('rules.wall', 'ts', 3600, time_zone => 'UTC') > 0 AS ok;
RESET client_min_messages;
SELECT time_zone FROM ttl_index_stats WHERE table_name = 'rules.wall'::regclass;
RESET TimeZone;
SELECT ttl_drop_index('rules.wall', 'ts'), ttl_drop_index('rules.days', 'day');

-- dropping a policy drops the expression or partial index it made
SELECT ttl_drop_index('rules.msgs', 'created_at'), ttl_drop_index('rules.jobs', 'finished_at');
SELECT count(*) AS left_indexes FROM pg_index
 WHERE indrelid IN ('rules.msgs'::regclass, 'rules.jobs'::regclass) AND NOT indisprimary;

-- an index on ttl_expires_at() depends on the extension: drop the policy
-- first (ttl_drop_index drops the index), or use CASCADE
DROP EXTENSION ttl_index;
SELECT ttl_drop_index('rules.msgs_iv', 'created_at');
DROP TABLE policies_before, indexes_before, marks, rules.not_yours;
SET client_min_messages = warning;
DROP EXTENSION ttl_index;
DROP SCHEMA rules CASCADE;
RESET client_min_messages;
DROP ROLE ttl_rules_other;
DROP ROLE ttl_rules_owner;
