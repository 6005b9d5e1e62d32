--
-- ttl_weekday_windows: purge windows that name days of the week
-- (purge_window => 'Sat-Sun 00:00-24:00, Mon-Fri 01:00-05:00', window.c).
-- The windows are asked for at chosen instants and zones through
-- ttl_window_find (src/api/engine_test.c), so that a day of the week, the
-- week's end and the days a zone changes its clocks are tested without
-- waiting for them; the policies read through the views and ttl_runner()
-- are placed days away from now, so the results do not depend on when the
-- test runs.
--
SET client_min_messages = warning;
CREATE ROLE ttl_wd_owner;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA wd_test;
CREATE SCHEMA wd AUTHORIZATION ttl_wd_owner;
CREATE FUNCTION wd_test.window(purge_window text, zone text, at timestamptz,
	OUT open boolean, OUT from_ts timestamptz, OUT until_ts timestamptz)
	AS 'ttl_index', 'ttl_test_window' LANGUAGE C STRICT;
SET TimeZone = 'UTC';

-- 1. Instants in and out (2026-06-01 is a Monday; 2026-06-06 a Saturday).
-- Weekends all day, weekdays 01:00-05:00: Saturday noon is in, until
-- Sunday's window begins (they touch: the view shows the one now is in)
SELECT * FROM wd_test.window('Sat-Sun 00:00-24:00, Mon-Fri 01:00-05:00', 'UTC', '2026-06-06 12:00+00');
SELECT * FROM wd_test.window('Sat-Sun 00:00-24:00, Mon-Fri 01:00-05:00', 'UTC', '2026-06-07 23:59+00');
-- Monday 00:30: Sunday's window has ended, Monday's opens at 01:00
SELECT * FROM wd_test.window('Sat-Sun 00:00-24:00, Mon-Fri 01:00-05:00', 'UTC', '2026-06-08 00:30+00');
-- Wednesday 03:00 in; 06:00 out, the next is Thursday's
SELECT * FROM wd_test.window('Sat-Sun 00:00-24:00, Mon-Fri 01:00-05:00', 'UTC', '2026-06-03 03:00+00');
SELECT * FROM wd_test.window('Sat-Sun 00:00-24:00, Mon-Fri 01:00-05:00', 'UTC', '2026-06-03 06:00+00');
-- Friday 06:00: the next is Saturday's, whole
SELECT * FROM wd_test.window('Sat-Sun 00:00-24:00, Mon-Fri 01:00-05:00', 'UTC', '2026-06-05 06:00+00');
-- one day a week: after Monday's window, the next Monday's
SELECT * FROM wd_test.window('Mon 01:00-02:00', 'UTC', '2026-06-01 03:00+00');
-- over midnight: Sunday 22:00 to Monday 02:00 belongs to Sunday; in on
-- Monday 01:00, out on Monday 23:00 (next: Sunday) and on Saturday 23:00
SELECT * FROM wd_test.window('Sun 22:00-02:00', 'UTC', '2026-06-08 01:00+00');
SELECT * FROM wd_test.window('Sun 22:00-02:00', 'UTC', '2026-06-08 23:00+00');
SELECT * FROM wd_test.window('Sun 22:00-02:00', 'UTC', '2026-06-06 23:00+00');
-- a range over the week's end: Friday to Monday; out on Tuesday, in on
-- Sunday and Monday
SELECT * FROM wd_test.window('Fri-Mon 10:00-11:00', 'UTC', '2026-06-02 10:30+00');
SELECT * FROM wd_test.window('Fri-Mon 10:00-11:00', 'UTC', '2026-06-07 10:30+00');
SELECT * FROM wd_test.window('Fri-Mon 10:00-11:00', 'UTC', '2026-06-08 10:30+00');
-- the day is the zone's: Sunday 18:45 UTC is Monday 00:15 in Kolkata
SELECT * FROM wd_test.window('Mon 00:00-01:00', 'Asia/Kolkata', '2026-06-07 18:45+00');
SELECT * FROM wd_test.window('Mon 00:00-01:00', 'UTC', '2026-06-07 18:45+00');

-- 2. The days a zone changes its clocks, on Sundays (New York).
-- 2026-03-08 skips 02:00-03:00: 01:00-03:30 is 06:00-07:30 UTC, and
-- 02:30-03:00 is empty that Sunday: the next is a week later (02:30 EDT)
SELECT * FROM wd_test.window('Sun 01:00-03:30', 'America/New_York', '2026-03-08 06:30+00');
SELECT * FROM wd_test.window('Sun 02:30-03:00', 'America/New_York', '2026-03-08 05:00+00');
-- 2026-11-01 repeats 01:00-02:00: an edge there is its second occurrence
-- (01:30 EST is 06:30 UTC); Saturday 22:00 EDT to Sunday 02:00 EST is
-- five hours
SELECT * FROM wd_test.window('Sun 01:30-02:30', 'America/New_York', '2026-11-01 04:00+00');
SELECT * FROM wd_test.window('Sat 22:00-02:00', 'America/New_York', '2026-11-01 06:30+00');
-- over midnight from Sunday into Monday on the Sunday of the change:
-- Sunday 2026-03-08 23:00 EDT to Monday 01:00 EDT
SELECT * FROM wd_test.window('Sun 23:00-01:00', 'America/New_York', '2026-03-09 04:30+00');

-- 3. Normalization: the days capitalized, three letters, one space before
-- the hours; in the order given; a range of the whole week is no days; a
-- window without days is stored as it always was
CREATE TABLE wd_test.policies (LIKE ttl_index_policy);
SET ROLE ttl_wd_owner;
CREATE TABLE wd.log (id int PRIMARY KEY, at timestamptz NOT NULL);
SELECT ttl_create_index('wd.log', 'at', 60, purge_window => ' sat-SUN 00:00-24:00 ,  Monday - friday 1:00-05:00') > 0 AS created;
SELECT purge_window FROM ttl_index_stats WHERE table_name = 'wd.log'::regclass;
SELECT ttl_alter_index('wd.log', 'at', purge_window => 'Tue-Mon 01:00-02:00, 22:00-23:00') > 0 AS changed;
SELECT purge_window FROM ttl_index_stats WHERE table_name = 'wd.log'::regclass;
SELECT ttl_alter_index('wd.log', 'at', purge_window => 'WED-wed 01:00-02:00,fri-mon 22:00-02:00,Thursday 05:00-06:00') > 0 AS changed;
SELECT purge_window FROM ttl_index_stats WHERE table_name = 'wd.log'::regclass;
-- touching over the week's end is no overlap; eight windows, ranges
-- counting one each
SELECT ttl_alter_index('wd.log', 'at', purge_window => 'Sun 23:00-02:00, Mon 02:00-03:00') > 0 AS changed;
SELECT purge_window FROM ttl_index_stats WHERE table_name = 'wd.log'::regclass;
SELECT ttl_alter_index('wd.log', 'at', purge_window =>
	'Mon-Fri 00:00-01:00, Mon-Fri 02:00-03:00, Mon-Fri 04:00-05:00, Mon-Fri 06:00-07:00, Sat-Sun 00:00-01:00, Sat-Sun 02:00-03:00, Sat-Sun 04:00-05:00, Sat-Sun 06:00-07:00') > 0 AS changed;
SELECT purge_window FROM ttl_index_stats WHERE table_name = 'wd.log'::regclass;

-- 4. Bad input: a clear error, and nothing changes (create and alter)
SELECT ttl_alter_index('wd.log', 'at', purge_window => 'Sat-Sun 00:00-24:00, Mon-Fri 01:00-05:00') > 0 AS changed;
RESET ROLE;
INSERT INTO wd_test.policies SELECT * FROM ttl_index_policy;
SET ROLE ttl_wd_owner;
-- an unknown day; a range without its end; days without hours; windows
-- that overlap on Wednesday, and from Sunday over midnight into Monday;
-- two letters; nine windows
SELECT ttl_create_index('wd.log', 'at', 60, purge_window => 'Fun 01:00-02:00');
SELECT ttl_create_index('wd.log', 'at', 60, purge_window => 'Mon- 01:00-02:00');
SELECT ttl_create_index('wd.log', 'at', 60, purge_window => 'Mon-Fri');
SELECT ttl_create_index('wd.log', 'at', 60, purge_window => 'Mon-Fri 01:00-05:00, Wed 04:00-06:00');
SELECT ttl_create_index('wd.log', 'at', 60, purge_window => 'Sun 23:00-02:00, Mon 01:00-03:00');
SELECT ttl_create_index('wd.log', 'at', 60, purge_window => 'Mo 01:00-02:00');
SELECT ttl_create_index('wd.log', 'at', 60, purge_window =>
	'Mon 00:00-01:00, Mon 02:00-03:00, Mon 04:00-05:00, Mon 06:00-07:00, Mon 08:00-09:00, Mon 10:00-11:00, Mon 12:00-13:00, Mon 14:00-15:00, Mon 16:00-17:00');
SELECT ttl_alter_index('wd.log', 'at', purge_window => 'Fun 01:00-02:00');
SELECT ttl_alter_index('wd.log', 'at', purge_window => 'Mon- 01:00-02:00');
SELECT ttl_alter_index('wd.log', 'at', purge_window => 'Mon-Fri');
SELECT ttl_alter_index('wd.log', 'at', purge_window => 'Mon-Fri 01:00-05:00, Wed 04:00-06:00');
SELECT ttl_alter_index('wd.log', 'at', purge_window => 'Sun 23:00-02:00, Mon 01:00-03:00');
-- the policy on a new table is not made either
CREATE TABLE wd.new (at timestamptz);
SELECT ttl_create_index('wd.new', 'at', 60, purge_window => 'Mon-Fri 01:00-05:00, Wed 04:00-06:00');
RESET ROLE;
-- nothing changed
SELECT count(*) AS changed FROM (
	(TABLE ttl_index_policy EXCEPT TABLE wd_test.policies)
	UNION ALL
	(TABLE wd_test.policies EXCEPT TABLE ttl_index_policy)) d;
SELECT purge_window FROM ttl_index_stats WHERE table_name = 'wd.log'::regclass;

-- 5. A policy whose only day is the day after tomorrow: next_window is
-- that day, and ttl_runner() leaves its rows; with yesterday to tomorrow
-- it purges them.  The windows are read in the policy's zone (UTC here).
CREATE FUNCTION wd_test.day(shift int) RETURNS text LANGUAGE sql STABLE
	AS $$ SELECT to_char((now() AT TIME ZONE 'UTC') + shift * interval '1 day', 'Dy') $$;
GRANT USAGE ON SCHEMA wd_test TO ttl_wd_owner;
SET ROLE ttl_wd_owner;
SELECT ttl_alter_index('wd.log', 'at', time_zone => 'UTC', purge_window => wd_test.day(2) || ' 00:00-24:00') > 0 AS changed;
SELECT next_window = tstzrange(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '2 days',
							   date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '3 days') AS day_after_tomorrow
	FROM ttl_index_stats WHERE table_name = 'wd.log'::regclass;
INSERT INTO wd.log SELECT i, now() - interval '1 day' FROM generate_series(1, 100) i;
SET client_min_messages = warning;
SELECT ttl_runner() AS purged;
RESET client_min_messages;
SELECT count(*) FROM wd.log;
SELECT ttl_alter_index('wd.log', 'at', purge_window => wd_test.day(-1) || '-' || wd_test.day(1) || ' 00:00-24:00') > 0 AS changed;
SELECT now() <@ next_window AS open_now FROM ttl_index_stats WHERE table_name = 'wd.log'::regclass;
SELECT ttl_runner() AS purged;
SELECT count(*) FROM wd.log;
RESET ROLE;

RESET TimeZone;
DROP SCHEMA wd CASCADE;
DROP SCHEMA wd_test CASCADE;
SET client_min_messages = warning;
DROP EXTENSION ttl_index;
RESET client_min_messages;
DROP ROLE ttl_wd_owner;
