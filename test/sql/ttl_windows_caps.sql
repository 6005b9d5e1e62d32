--
-- ttl_windows_caps: purge windows (purge_window) and size caps (max_rows).
-- No worker runs here: ttl_runner() applies the policies with the
-- worker's engine (test/t/029_windows_caps.pl covers the worker, and the
-- counters, which live in the shared memory of a preloaded library).  A cap
-- counts the rows the cumulative statistics know of, so each test hands
-- its inserts to them first (pg_stat_force_next_flush(): reported when
-- the statement ends).  Windows are placed hours away from now in the
-- policy's time zone, so the results do not depend on when the test runs.
--
SET client_min_messages = warning;
CREATE ROLE ttl_wc_owner;
CREATE ROLE ttl_wc_other;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA wc AUTHORIZATION ttl_wc_owner;
GRANT USAGE ON SCHEMA wc TO ttl_wc_other;
SET ROLE ttl_wc_owner;

-- hh:mm of now + shift in a zone
CREATE FUNCTION wc.hhmm(zone text, shift interval) RETURNS text
	LANGUAGE sql STABLE AS $$ SELECT to_char((now() AT TIME ZONE zone) + shift, 'HH24:MI') $$;
CREATE TABLE wc.policies (LIKE ttl_index_policy);

-- 1. A cap alone: expire_after NULL, at most 1000 rows, the oldest go
CREATE TABLE wc.log (id int PRIMARY KEY, at timestamptz NOT NULL, msg text);
SELECT ttl_create_index('wc.log', 'at', NULL, max_rows => 1000) > 0 AS created;
SELECT expire_after, max_rows, purge_window FROM ttl_index_stats WHERE table_name = 'wc.log'::regclass;
-- id 1 is the newest; none has expired (there is no TTL)
INSERT INTO wc.log SELECT i, now() - i * interval '1 second', 'm' FROM generate_series(1, 5000) i;
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
-- exactly the newest 1000 stay
SELECT count(*), min(id), max(id) FROM wc.log;
-- at the cap, nothing more goes
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
-- a cap is a table's, not a pass's: 300 new rows, the 300 oldest go
INSERT INTO wc.log SELECT i, now() + i * interval '1 second', 'new' FROM generate_series(-300, -1) i;
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
SELECT count(*), min(id), max(id), count(*) FILTER (WHERE msg = 'new') AS new_rows FROM wc.log;

-- 1b. A count reset (a crash, pg_stat_reset(), a promotion) starts from
-- zero while the table keeps its rows: not trusted, the cap is read from
-- the newest rows instead, exactly
CREATE TABLE wc.reset (id int PRIMARY KEY, at timestamptz NOT NULL);
SELECT ttl_create_index('wc.reset', 'at', NULL, max_rows => 100) > 0 AS created;
INSERT INTO wc.reset SELECT i, now() - i * interval '1 second' FROM generate_series(1, 400) i;
SELECT pg_stat_force_next_flush();
RESET ROLE;
ANALYZE wc.reset;
SELECT pg_stat_reset_single_table_counters('wc.reset'::regclass);
SET ROLE ttl_wc_owner;
SELECT n_live_tup FROM pg_stat_user_tables WHERE relid = 'wc.reset'::regclass;
SELECT ttl_runner() AS purged;
SELECT count(*), min(id), max(id) FROM wc.reset;

-- 2. A cap beside a TTL: the expired rows go, then the oldest of the rest
CREATE TABLE wc.feed (id int PRIMARY KEY, at timestamptz NOT NULL);
SELECT ttl_create_index('wc.feed', 'at', interval '1 hour', max_rows => 1500) > 0 AS created;
INSERT INTO wc.feed SELECT i, now() - interval '3 hours' - i * interval '1 second' FROM generate_series(1, 1000) i;
INSERT INTO wc.feed SELECT i, now() - i * interval '1 second' FROM generate_series(1001, 3000) i;
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
SELECT count(*), min(id), max(id) FROM wc.feed;
-- under the cap, the TTL alone
INSERT INTO wc.feed VALUES (0, now() - interval '2 hours');
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;

-- 3. Rows with no key never go: 10 rows with a key, 2000 without, a cap
-- of 5 (the count says the table is over it; the cut keeps the 5 newest
-- rows with a key)
CREATE TABLE wc.nulls (id int, at timestamptz);
SELECT ttl_create_index('wc.nulls', 'at', NULL, max_rows => 5) > 0 AS created;
INSERT INTO wc.nulls SELECT i, CASE WHEN i <= 10 THEN now() - i * interval '1 second' END FROM generate_series(1, 2010) i;
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
SELECT count(*), count(at), max(id) FILTER (WHERE at IS NOT NULL) AS newest_kept FROM wc.nulls;

-- 4. A partitioned table: the cap is the whole table's, across partitions
CREATE TABLE wc.parts (id int, at timestamptz NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE wc.parts_old PARTITION OF wc.parts FOR VALUES FROM (MINVALUE) TO (now() - interval '1 hour');
CREATE TABLE wc.parts_new PARTITION OF wc.parts FOR VALUES FROM (now() - interval '1 hour') TO (MAXVALUE);
SELECT ttl_create_index('wc.parts', 'at', NULL, max_rows => 700) > 0 AS created;
INSERT INTO wc.parts SELECT i, now() - i * interval '1 second' FROM generate_series(1, 2000) i;
INSERT INTO wc.parts SELECT i, now() - interval '2 hours' - i * interval '1 second' FROM generate_series(2001, 2500) i;
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
-- the 700 newest stay, all in the newer partition
SELECT tableoid::regclass AS partition, count(*), min(id), max(id) FROM wc.parts GROUP BY 1 ORDER BY 1;

-- 5. Inheritance: the parent's own rows and its child's, one cap
CREATE TABLE wc.base (id int, at timestamptz);
CREATE TABLE wc.child () INHERITS (wc.base);
SELECT ttl_create_index('wc.base', 'at', NULL, max_rows => 100) > 0 AS created;
INSERT INTO wc.base SELECT i, now() - i * interval '1 second' FROM generate_series(1, 300, 2) i;
INSERT INTO wc.child SELECT i, now() - i * interval '1 second' FROM generate_series(2, 300, 2) i;
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
SELECT count(*), max(id) FROM wc.base;

-- 6. A date key: the cut is the key of the first row that stays, and the
-- rows tied with it stay (the rest of that day: more than max_rows)
CREATE TABLE wc.daily (id int, day date);
-- (the NOTICE naming the server's zone differs between builds)
SET client_min_messages = warning;
SELECT ttl_create_index('wc.daily', 'day', NULL, max_rows => 25, time_zone => 'UTC') > 0 AS created;
RESET client_min_messages;
INSERT INTO wc.daily SELECT i, current_date - (i - 1) / 10 FROM generate_series(1, 100) i;
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
SELECT count(*), min(day) = current_date - 2 AS three_days_left FROM wc.daily;
-- rows that all share one key (one INSERT with DEFAULT now()) are never
-- capped: the cut would take them all
CREATE TABLE wc.burst (id int, at timestamptz NOT NULL DEFAULT now());
SELECT ttl_create_index('wc.burst', 'at', NULL, max_rows => 10) > 0 AS created;
INSERT INTO wc.burst (id) SELECT i FROM generate_series(1, 50) i;
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
SELECT count(*) FROM wc.burst;
-- the rows that came before it go
INSERT INTO wc.burst VALUES (0, now() - interval '1 hour');
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
SELECT count(*), min(id) FROM wc.burst;

-- 7. Archive: the rows over the cap are archived, not lost
CREATE TABLE wc.orders (id int, at timestamptz);
CREATE TABLE wc.orders_archive (id int, at timestamptz);
SELECT ttl_create_index('wc.orders', 'at', NULL, max_rows => 10, archive_table => 'wc.orders_archive') > 0 AS created;
INSERT INTO wc.orders SELECT i, now() - i * interval '1 minute' FROM generate_series(1, 40) i;
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
SELECT (SELECT count(*) FROM wc.orders) AS kept, (SELECT count(*) FROM wc.orders_archive) AS archived,
	   (SELECT min(id) FROM wc.orders_archive) AS first_archived;

-- 8. Paused: the cap waits too
INSERT INTO wc.orders SELECT i, now() + i * interval '1 minute' FROM generate_series(100, 104) i;
SELECT ttl_pause('wc.orders');
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() AS purged;
SELECT ttl_resume('wc.orders');
SELECT ttl_runner() AS purged;
SELECT count(*) FROM wc.orders;

-- 9. Windows.  Stored as written, normalized; several, one over midnight
CREATE TABLE wc.clicks (id int, at timestamptz);
SELECT ttl_create_index('wc.clicks', 'at', 60, purge_window => ' 22:00 - 02:00 ,13:00-14:30, 00:00-00:00') > 0;
SELECT ttl_create_index('wc.clicks', 'at', 60, purge_window => ' 22:00 - 02:00 ,13:00-14:30, 5:00-6:00') > 0 AS created;
SELECT purge_window FROM ttl_index_stats WHERE table_name = 'wc.clicks'::regclass;
SELECT ttl_create_index('wc.clicks', 'at', 60, purge_window => '18:00-24:00') > 0 AS created;
SELECT purge_window FROM ttl_index_stats WHERE table_name = 'wc.clicks'::regclass;

-- a window that opens in three hours: ttl_runner() leaves the policy,
-- saying so, and next_window is the next one, whole
SELECT ttl_create_index('wc.clicks', 'at', 60,
						purge_window => wc.hhmm(ttl_index_server_time_zone(), interval '3 hours') || '-' ||
										wc.hhmm(ttl_index_server_time_zone(), interval '4 hours')) > 0 AS created;
INSERT INTO wc.clicks SELECT i, now() - interval '1 hour' FROM generate_series(1, 50) i;
\set VERBOSITY terse
SELECT ttl_runner() AS purged;
\set VERBOSITY default
SELECT count(*) FROM wc.clicks;
SELECT lower(next_window) > now() AS opens_later,
	   upper(next_window) - lower(next_window) = interval '1 hour' AS one_hour,
	   lower(next_window) < now() + interval '3 hours' + interval '1 minute' AS within_3h
  FROM ttl_index_stats WHERE table_name = 'wc.clicks'::regclass;
-- one that holds now: the policy purges
SELECT ttl_create_index('wc.clicks', 'at', 60,
						purge_window => wc.hhmm(ttl_index_server_time_zone(), interval '-3 hours') || '-' ||
										wc.hhmm(ttl_index_server_time_zone(), interval '3 hours')) > 0 AS created;
SELECT ttl_runner() AS purged;
SELECT now() <@ next_window AS in_window FROM ttl_index_stats WHERE table_name = 'wc.clicks'::regclass;

-- A wall-clock policy's windows are in its time zone: 01:00-02:00 in
-- Asia/Kolkata (+05:30) is 19:30-20:30 UTC
CREATE TABLE wc.local (id int, at timestamp);
-- (the NOTICE naming the server's zone differs between builds)
SET client_min_messages = warning;
SELECT ttl_create_index('wc.local', 'at', 60, time_zone => 'Asia/Kolkata', purge_window => '01:00-02:00') > 0 AS created;
RESET client_min_messages;
SELECT to_char(lower(next_window) AT TIME ZONE 'UTC', 'HH24:MI') AS opens_utc,
	   to_char(upper(next_window) AT TIME ZONE 'UTC', 'HH24:MI') AS closes_utc
  FROM ttl_index_stats WHERE table_name = 'wc.local'::regclass;
-- a window and a cap together: outside the window, the cap waits too
INSERT INTO wc.local SELECT i, localtimestamp FROM generate_series(1, 20) i;
-- (the NOTICE naming the server's zone differs between builds)
SET client_min_messages = warning;
SELECT ttl_create_index('wc.local', 'at', NULL, max_rows => 5, time_zone => 'UTC',
						purge_window => wc.hhmm('UTC', interval '5 hours') || '-' || wc.hhmm('UTC', interval '6 hours')) > 0 AS created;
RESET client_min_messages;
SELECT pg_stat_force_next_flush();
\set VERBOSITY terse
SELECT ttl_runner() AS purged;
\set VERBOSITY default
SELECT count(*) FROM wc.local;

-- 10. Bad input: a clear error, and nothing changes
INSERT INTO wc.policies SELECT * FROM ttl_index_policy;
SELECT ttl_create_index('wc.log', 'at', NULL, max_rows => 0);
SELECT ttl_create_index('wc.log', 'at', NULL, max_rows => -5);
SELECT ttl_create_index('wc.log', 'at', NULL);
SELECT ttl_create_index('wc.log', 'at', expire_after => NULL::interval);
CREATE TABLE wc.marked (id int, at timestamptz, gone timestamptz, ttl int);
SELECT ttl_create_index('wc.marked', 'at', 60, max_rows => 10, soft_delete_column => 'gone');
SELECT ttl_create_index('wc.marked', 'at', 60, max_rows => 10, filter => 'id > 0');
SELECT ttl_create_index('wc.marked', 'at', 60, max_rows => 10, ttl_column => 'ttl');
SELECT ttl_create_index('wc.log', 'at', 60, purge_window => '');
SELECT ttl_create_index('wc.log', 'at', 60, purge_window => '25:00-01:00');
SELECT ttl_create_index('wc.log', 'at', 60, purge_window => '1-2');
SELECT ttl_create_index('wc.log', 'at', 60, purge_window => '01:00-01:00');
SELECT ttl_create_index('wc.log', 'at', 60, purge_window => '24:00-01:00');
SELECT ttl_create_index('wc.log', 'at', 60, purge_window => '01:60-02:00');
SELECT ttl_create_index('wc.log', 'at', 60, purge_window => '01:00-03:00, 02:00-04:00');
SELECT ttl_create_index('wc.log', 'at', 60, purge_window => '23:00-02:00, 01:00-01:30');
SELECT ttl_create_index('wc.log', 'at', 60, purge_window => '01:00-02:00;03:00-04:00');
SELECT ttl_create_index('wc.log', 'at', 60,
						purge_window => '00:00-01:00,02:00-03:00,04:00-05:00,06:00-07:00,08:00-09:00,10:00-11:00,12:00-13:00,14:00-15:00,16:00-17:00');
-- nothing changed
SELECT count(*) AS changed FROM (
	(TABLE ttl_index_policy EXCEPT TABLE wc.policies)
	UNION ALL
	(TABLE wc.policies EXCEPT TABLE ttl_index_policy)) d;
SELECT count(*) FROM pg_index WHERE indrelid = 'wc.marked'::regclass;

-- 11. Another role: it cannot cap, window or uncap a table it does not
-- own, and its ttl_runner() leaves the owner's tables alone
RESET ROLE;
SET ROLE ttl_wc_other;
SELECT ttl_create_index('wc.log', 'at', NULL, max_rows => 1);
SELECT ttl_create_index('wc.log', 'at', 60, purge_window => '00:00-24:00');
INSERT INTO wc.log VALUES (-1000, now() - interval '10 years', 'other');
SELECT ttl_runner() AS purged;
RESET ROLE;
SET ROLE ttl_wc_owner;
SELECT count(*) AS changed FROM (
	(TABLE ttl_index_policy EXCEPT TABLE wc.policies)
	UNION ALL
	(TABLE wc.policies EXCEPT TABLE ttl_index_policy)) d;
SELECT count(*) FROM wc.log;

-- 12. The catalog refuses what the API refuses, for a hand-made row too
RESET ROLE;
\set VERBOSITY terse
UPDATE ttl_index_policy SET max_rows = 0 WHERE relid = 'wc.log'::regclass;
UPDATE ttl_index_policy SET max_rows = NULL WHERE relid = 'wc.log'::regclass;
UPDATE ttl_index_policy SET action = 'anonymize' WHERE relid = 'wc.log'::regclass;
\set VERBOSITY default

SET client_min_messages = warning;
DROP EXTENSION ttl_index;
DROP SCHEMA wc CASCADE;
RESET client_min_messages;
DROP ROLE ttl_wc_other;
DROP ROLE ttl_wc_owner;
