--
-- ttl_alter: changing one option of a policy changes only that option.
-- ttl_create_index() on a column that has a policy, and ttl_alter_index(),
-- keep every option they do not name; ttl_alter_index(..., reset => ...)
-- removes one.  Time zones a writer cannot get backwards, a TTL left out
-- that does not mean 0, and errors that say what is wrong.  No worker runs
-- here: ttl_runner() purges, with the worker's engine.
--
SET client_min_messages = warning;
CREATE ROLE ttl_alter_owner;
CREATE ROLE ttl_alter_other;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA alt AUTHORIZATION ttl_alter_owner;
GRANT USAGE ON SCHEMA alt TO ttl_alter_other;
SET ROLE ttl_alter_owner;
SET TimeZone = 'UTC';

-- what a policy holds, without the fields that vary from run to run
CREATE VIEW alt.p AS
	SELECT relid::regclass AS tbl, column_name AS col, expire_after, batch_size,
		   ttl_column, filter, action, rate_limit, time_zone, purge_window, max_rows
	FROM ttl_index_policy ORDER BY relid::regclass::text, column_name;

-- 1. Shortening the TTL of a filtered policy keeps the filter: the 900
-- rows it protects (kind 'audit') stay, the 100 debug rows that are now
-- expired go
CREATE TABLE alt.ev (id int PRIMARY KEY, kind text NOT NULL, at timestamptz NOT NULL);
INSERT INTO alt.ev SELECT i, CASE WHEN i <= 100 THEN 'debug' ELSE 'audit' END,
	now() - interval '3 days' FROM generate_series(1, 1000) i;
SELECT ttl_create_index('alt.ev', 'at', interval '7 days', filter => $$kind = 'debug'$$,
						rate_limit => 100000, batch_size => 500, purge_window => '00:00-24:00') > 0 AS created;
SELECT ttl_create_index('alt.ev', 'at', interval '2 days') > 0 AS changed;
SELECT * FROM alt.p WHERE tbl = 'alt.ev'::regclass;
SELECT ttl_runner() >= 100 AS purged;
SELECT kind, count(*) FROM alt.ev GROUP BY kind ORDER BY kind;

-- pg_ttl_index's call, TTL in seconds, changes the TTL and nothing else
SELECT ttl_create_index('alt.ev', 'at', 3600) > 0 AS changed;
SELECT * FROM alt.p WHERE tbl = 'alt.ev'::regclass;

-- 2. A change from a session in another zone keeps the policy's zone: a
-- UTC policy on a timestamp column stays UTC when its batch size is changed
-- from Tokyo, and a row written 7 seconds ago (UTC wall clock) under a
-- 6-hour TTL stays
CREATE TABLE alt.w (id int, at timestamp NOT NULL);
INSERT INTO alt.w VALUES (1, (now() AT TIME ZONE 'UTC') - interval '7 seconds'),
						 (2, (now() AT TIME ZONE 'UTC') - interval '7 hours');
-- (terse: the NOTICE's detail names the server's zone, which varies)
\set VERBOSITY terse
SELECT ttl_create_index('alt.w', 'at', interval '6 hours', time_zone => 'UTC') > 0 AS created;
\set VERBOSITY default
SET TimeZone = 'Asia/Tokyo';
SELECT ttl_create_index('alt.w', 'at', batch_size => 100) > 0 AS changed;
SELECT ttl_alter_index('alt.w', 'at', rate_limit => 50) > 0 AS changed;
SELECT tbl, time_zone, batch_size, rate_limit FROM alt.p WHERE tbl = 'alt.w'::regclass;
SELECT ttl_runner() >= 1 AS purged;
SELECT id FROM alt.w ORDER BY id;
SET TimeZone = 'UTC';

-- 3. A per-row TTL policy stays one when it is created again without ttl_column
CREATE TABLE alt.cache (k text, stored_at timestamptz NOT NULL DEFAULT now(), ttl integer);
SELECT ttl_create_index('alt.cache', 'stored_at', ttl_column => 'ttl') > 0 AS created;
SELECT ttl_create_index('alt.cache', 'stored_at') > 0 AS again;
SELECT ttl_create_index('alt.cache', 'stored_at', batch_size => 10) > 0 AS changed;
SELECT tbl, expire_after, ttl_column, batch_size FROM alt.p WHERE tbl = 'alt.cache'::regclass;

-- 4. ttl_alter_index: what it names changes, reset removes, the rest stays
SELECT ttl_alter_index('alt.ev', 'at', batch_size => 50, reset => '{rate_limit, purge_window}') > 0 AS changed;
SELECT * FROM alt.p WHERE tbl = 'alt.ev'::regclass;
SELECT ttl_alter_index('alt.ev', 'at', expire_after => '1 day', filter => $$kind = 'audit'$$) > 0 AS changed;
SELECT * FROM alt.p WHERE tbl = 'alt.ev'::regclass;
-- a cap alone: reset the TTL beside max_rows; then the TTL back
SELECT ttl_alter_index('alt.ev', 'at', max_rows => 5000, reset => '{expire_after, filter}') > 0 AS changed;
SELECT * FROM alt.p WHERE tbl = 'alt.ev'::regclass;
SELECT ttl_alter_index('alt.ev', 'at', expire_after => '12 hours', reset => '{max_rows}') > 0 AS changed;
SELECT * FROM alt.p WHERE tbl = 'alt.ev'::regclass;
-- the action and its option go together: naming another replaces both
CREATE TABLE alt.ev_archive (id int, kind text, at timestamptz);
SELECT ttl_alter_index('alt.ev', 'at', archive_table => 'alt.ev_archive') > 0 AS changed;
SELECT tbl, action, filter FROM alt.p WHERE tbl = 'alt.ev'::regclass;
SELECT ttl_alter_index('alt.ev', 'at', action => 'delete') > 0 AS changed;
SELECT tbl, action FROM alt.p WHERE tbl = 'alt.ev'::regclass;

-- bad calls: a clear error, and nothing changed
CREATE TABLE alt.before AS SELECT * FROM alt.p;
SELECT ttl_alter_index('alt.ev', 'at', reset => '{unit}');
SELECT ttl_alter_index('alt.ev', 'at', reset => '{time_zone}');
SELECT ttl_alter_index('alt.ev', 'at', reset => '{action}');
SELECT ttl_alter_index('alt.ev', 'at', reset => '{bogus}');
SELECT ttl_alter_index('alt.ev', 'at', reset => '{NULL}');
SELECT ttl_alter_index('alt.ev', 'at', batch_size => 5, reset => '{batch_size}');
SELECT ttl_alter_index('alt.ev', 'at', reset => '{expire_after}');
SELECT ttl_alter_index('alt.ev', 'id', batch_size => 5);
SELECT ttl_alter_index('alt.ev', 'at', expire_after => '1 month -40 days');
SELECT ttl_alter_index('alt.ev', 'at', batch_size => 0);
SELECT ttl_alter_index('alt.ev', 'at', max_rows => 10, filter => 'id > 0');
SELECT count(*) AS changed FROM (SELECT * FROM alt.p EXCEPT SELECT * FROM alt.before) c;
-- another role may not change the policy
RESET ROLE;
SET ROLE ttl_alter_other;
SELECT ttl_alter_index('alt.ev', 'at', batch_size => 7);
SELECT ttl_create_index('alt.ev', 'at', 60);
RESET ROLE;
SET ROLE ttl_alter_owner;
SELECT count(*) AS changed FROM (SELECT * FROM alt.p EXCEPT SELECT * FROM alt.before) c;

-- 5. A TTL left out of a new policy is an error, not 0; 0 on a column that
-- records when a row was made says what it does
CREATE TABLE alt.s (id int, created_at timestamptz NOT NULL DEFAULT now(), seen timestamptz);
SELECT ttl_create_index('alt.s', 'seen');
SELECT ttl_create_index('alt.s', 'seen', NULL);
SELECT ttl_create_index('alt.s', 'created_at', 0) > 0 AS created;
SELECT ttl_create_index('alt.s', 'created_at', interval '1 day') > 0 AS changed;
SELECT ttl_create_index('alt.s', 'seen', 0) > 0 AS created;
SELECT tbl, col, expire_after FROM alt.p WHERE tbl = 'alt.s'::regclass;

-- 6. Time zones: POSIX offsets from UTC or GMT, whose sign reads
-- backwards, offsets beyond 15 hours and intervals are refused; an ISO
-- offset reads as ISO writes it; the NOTICE says the zone and its offset
CREATE TABLE alt.z (id int, at timestamp NOT NULL, d date);
SELECT ttl_create_index('alt.z', 'at', interval '6 hours', time_zone => 'UTC-5');
SELECT ttl_create_index('alt.z', 'at', interval '6 hours', time_zone => 'GMT+3');
SELECT ttl_create_index('alt.z', 'at', interval '6 hours', time_zone => '+99:00');
SELECT ttl_create_index('alt.z', 'at', interval '6 hours', time_zone => '-16');
SELECT ttl_create_index('alt.z', 'at', interval '6 hours', time_zone => 'INTERVAL ''1 HOUR''');
SELECT ttl_create_index('alt.z', 'at', interval '6 hours', time_zone => 'Mars/Olympus');
SELECT count(*) AS policies FROM ttl_index_policy WHERE relid = 'alt.z'::regclass;
\set VERBOSITY terse
SELECT ttl_create_index('alt.z', 'at', interval '6 hours', time_zone => '-05:00') > 0 AS created;
SELECT ttl_create_index('alt.z', 'd', interval '2 days', time_zone => 'Asia/Tokyo') > 0 AS created;
\set VERBOSITY default
SELECT tbl, col, time_zone FROM alt.p WHERE tbl = 'alt.z'::regclass;
-- the zone reads as written: 5 hours west, a row 5 h 30 min old by UTC is
-- 30 minutes old there
INSERT INTO alt.z VALUES (1, (now() AT TIME ZONE 'UTC') - interval '5 hours 30 minutes'),
						 (2, (now() AT TIME ZONE 'UTC') - interval '11 hours 30 minutes');
SELECT ttl_runner() >= 1 AS purged;
SELECT id FROM alt.z ORDER BY id;

-- 7. Errors that say what is wrong
-- a column the filter uses
CREATE TABLE alt.events (id int, kind text, at timestamptz);
SELECT ttl_create_index('alt.events', 'at', interval '7 days', filter => $$kind = 'debug'$$) > 0 AS created;
ALTER TABLE alt.events DROP COLUMN kind;
ALTER TABLE alt.events RENAME COLUMN kind TO k;
SELECT attname FROM pg_attribute WHERE attrelid = 'alt.events'::regclass AND attnum > 0 ORDER BY attnum;
-- after the filter is removed, the column may go
SELECT ttl_alter_index('alt.events', 'at', reset => '{filter}') > 0 AS changed;
ALTER TABLE alt.events DROP COLUMN kind;
-- an archive table without some of the table's columns names them
CREATE TABLE alt.o (id int, a text, b int, created_at timestamptz);
CREATE TABLE alt.oa (id int, created_at timestamptz);
SELECT ttl_create_index('alt.o', 'created_at', interval '7 days', archive_table => 'alt.oa');
SELECT count(*) AS policies FROM ttl_index_policy WHERE relid = 'alt.o'::regclass;
-- resetting the statistics of a table without a policy, as pausing it
CREATE TABLE alt.nopol (x int);
SELECT ttl_pause('alt.nopol');
RESET ROLE;
SELECT ttl_index_stats_reset('alt.nopol');
SELECT ttl_index_stats_reset('alt.ev');
SET ROLE ttl_alter_owner;
-- ttl_expires_at with an untyped TTL literal
SELECT ttl_expires_at('2020-01-01 00:00+00'::timestamptz, '1 hour') AS tstz,
	   ttl_expires_at('2020-01-01 00:00'::timestamp, '90') AS ts;

-- 8. ttl_summary() says whether each policy is healthy, after
-- pg_ttl_index's columns: a paused policy is not
SELECT ttl_pause('alt.s', 'seen');
SELECT table_name, column_name, active, healthy, stalled, errors, last_error
  FROM ttl_summary() WHERE schema_name = 'alt' ORDER BY 1, 2;
SELECT count(*) FILTER (WHERE NOT healthy) AS unhealthy FROM ttl_summary() WHERE schema_name = 'alt';

-- 9. a second call that names a ttl_column or a soft_delete_column finds
-- their column numbers, as the first does: the next ALTER TABLE of the
-- table (which sets the names from the numbers) then works and keeps them
CREATE TABLE alt.later (at timestamptz NOT NULL, gone timestamptz, ttl interval);
SELECT ttl_create_index('alt.later', 'at', interval '1 day') > 0 AS created;
SELECT ttl_alter_index('alt.later', 'at', action => 'soft_delete', soft_delete_column => 'gone') > 0 AS altered;
SELECT ttl_create_index('alt.later', 'at', ttl_column => 'ttl') > 0 AS again;
SELECT soft_delete_column, soft_attnum, ttl_column, ttl_attnum
  FROM ttl_index_policy WHERE relid = 'alt.later'::regclass;
ALTER TABLE alt.later ADD COLUMN note text;
ALTER TABLE alt.later RENAME COLUMN gone TO deleted_at;
SELECT soft_delete_column, soft_attnum, ttl_column, ttl_attnum
  FROM ttl_index_policy WHERE relid = 'alt.later'::regclass;
SELECT ttl_alter_index('alt.later', 'at', reset => '{ttl_column}') > 0 AS reset;
SELECT ttl_column, ttl_attnum FROM ttl_index_policy WHERE relid = 'alt.later'::regclass;

RESET ROLE;
SET client_min_messages = warning;
DROP SCHEMA alt CASCADE;
DROP EXTENSION ttl_index;
DROP ROLE ttl_alter_owner;
DROP ROLE ttl_alter_other;
