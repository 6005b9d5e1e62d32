--
-- ttl_calendar: calendar TTLs (expire_after => interval '13 months').
-- Months and years are counted as PostgreSQL counts them, in the policy's
-- zone: the cutoff of a pass begun at `at` is at - interval '13 months' in
-- a session whose TimeZone is the policy's, whatever the calling
-- session's.  ttl_test.cutoff and ttl_test.expiry (engine_test.c) compute
-- a cutoff and a key's expiry at chosen instants, so that month ends, leap
-- years and changes to summer time are tested on the days they happen;
-- ttl_runner() is then checked against PostgreSQL's own arithmetic at the
-- real now(), with rows placed half an hour from the cutoff.
--
SET client_min_messages = error;
CREATE ROLE ttl_cal_owner;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA ttl_test;
CREATE FUNCTION ttl_test.cutoff(expire_after interval, zone text, at timestamptz,
	key_type regtype DEFAULT 'timestamptz', unit text DEFAULT NULL,
	OUT limit_at timestamptz, OUT bound text, OUT recheck boolean)
	AS 'ttl_index', 'ttl_test_cutoff' LANGUAGE C;
CREATE FUNCTION ttl_test.expiry(expire_after interval, zone text, key text,
	key_type regtype DEFAULT 'timestamptz', unit text DEFAULT NULL)
	RETURNS timestamptz AS 'ttl_index', 'ttl_test_expiry' LANGUAGE C;
CREATE SCHEMA cal AUTHORIZATION ttl_cal_owner;

-- 1. The cutoff is PostgreSQL's own at - interval in the policy's zone
-- (Europe/Berlin), computed here in a session of another zone.  Month
-- ends are clamped (March 31 less a month is February 28, or 29 in a leap
-- year); a month across a change to summer time keeps the wall-clock time
-- (12:00 CET on March 15 is a month before 12:00 CEST on April 15: 31 days
-- less an hour); a cutoff in the hour summer time skips is read as
-- PostgreSQL reads that wall-clock time.
SET TimeZone = 'Asia/Tokyo';
CREATE TABLE ttl_test.cases (at timestamptz, span interval);
INSERT INTO ttl_test.cases VALUES
	('2023-03-31 12:00 Europe/Berlin', '1 month'),
	('2024-03-31 12:00 Europe/Berlin', '1 month'),
	('2024-02-29 12:00 Europe/Berlin', '1 year'),
	('2025-03-29 12:00 Europe/Berlin', '13 months'),
	('2024-04-15 12:00 Europe/Berlin', '1 month'),
	('2024-11-15 12:00 Europe/Berlin', '1 month'),
	('2024-05-31 02:30 Europe/Berlin', '2 months'),
	('2024-01-01 00:30 Europe/Berlin', '7 years'),
	('2024-04-15 12:00 Europe/Berlin', '1 month 12 hours');
SET TimeZone = 'Europe/Berlin';
SELECT c.at, c.span, x.limit_at, x.limit_at = c.at - c.span AS as_postgres
  FROM ttl_test.cases c, LATERAL ttl_test.cutoff(c.span, 'Europe/Berlin', c.at) x
  ORDER BY c.at, c.span;
-- PostgreSQL's own arithmetic in a session of another zone differs in
-- most of these cases: the policy's zone is what counts
SET TimeZone = 'Asia/Tokyo';
SELECT count(*) AS cases,
	   count(*) FILTER (WHERE x.limit_at = (SELECT c.at - c.span)) AS same_in_tokyo
  FROM ttl_test.cases c, LATERAL ttl_test.cutoff(c.span, 'Europe/Berlin', c.at) x;
SET TimeZone = 'Europe/Berlin';
-- a policy's days are 24 hours, as before, taken off after the months: a
-- day across the change to summer time is an hour more than the calendar
-- day PostgreSQL's own arithmetic would take
SELECT x.limit_at, '2024-05-31 12:00'::timestamptz - interval '2 months 1 day' AS postgres
  FROM ttl_test.cutoff('2 months 1 day', 'Europe/Berlin', '2024-05-31 12:00') x;

-- timestamp and date keys: local now less the interval, as timestamp
-- arithmetic, in the policy's zone; near a change of offset each row's
-- instant is checked (recheck)
SELECT c.at, c.span, x.bound, x.recheck,
	   x.bound::timestamp = (c.at AT TIME ZONE 'Europe/Berlin') - c.span AS as_postgres
  FROM ttl_test.cases c,
	   LATERAL ttl_test.cutoff(c.span, 'Europe/Berlin', c.at, 'timestamp') x
  ORDER BY c.at, c.span;
SELECT x.bound AS first_day_kept
  FROM ttl_test.cutoff('1 month', 'Europe/Berlin', '2023-03-31 12:00', 'date') x;

-- epoch keys have no zone: their months are on the UTC calendar.  23:30
-- UTC on March 31 is April 1 in Berlin; a month before it is February 29
-- 23:30 UTC, not March 1 01:30 in Berlin
SELECT x.bound, to_timestamp(x.bound::bigint) AT TIME ZONE 'UTC' AS utc
  FROM ttl_test.cutoff('1 month', 'Europe/Berlin', '2024-03-31 23:30+00', 'bigint', 's') x;

-- 2. When a row expires: the first instant at which the cutoff has passed
-- it.  A row of January 31 under '1 month' is not gone on February 28 or
-- 29: until the end of February the cutoff is at most January 29
-- (or 28), and at midnight on March 1 it leaps to February 1, so the rows
-- of January 29, 30 and 31 (in a leap year: 30 and 31) all expire then.
SELECT k, ttl_test.expiry('1 month', 'Europe/Berlin', k) AS expires_after
  FROM unnest(ARRAY['2023-01-15 12:00', '2023-01-28 12:00', '2023-01-29 12:00',
					'2023-01-31 12:00', '2024-01-29 12:00', '2024-01-31 12:00',
					'2024-02-29 12:00']) k;
-- for every key of two years, six hours apart, under '1 month' and '13
-- months': not expired at that instant, expired a microsecond later
SELECT s.span, count(*) AS keys,
	   count(*) FILTER (WHERE (SELECT limit_at FROM ttl_test.cutoff(s.span, 'Europe/Berlin', e)) <= k
						  AND (SELECT limit_at FROM ttl_test.cutoff(s.span, 'Europe/Berlin',
																	e + interval '1 microsecond')) > k) AS exact
  FROM (VALUES (interval '1 month'), (interval '13 months')) s(span),
	   generate_series(timestamptz '2023-01-01 00:00', '2024-12-31 18:00', '6 hours') k,
	   LATERAL ttl_test.expiry(s.span, 'Europe/Berlin', k::text) e
  GROUP BY s.span ORDER BY s.span;

-- 3. ttl_runner() deletes exactly the rows older than now() - interval
-- '13 months' in the policy's zone, called from a session of another zone.
-- The rows are 48 hours either side of that cutoff, half an hour off the
-- hour.
SET ROLE ttl_cal_owner;
CREATE TABLE cal.events (id int PRIMARY KEY, at timestamptz NOT NULL);
CREATE TABLE cal.local_events (id int PRIMARY KEY, at timestamp NOT NULL);
SET TimeZone = 'Europe/Berlin';
INSERT INTO cal.events SELECT k + 100, now() - interval '13 months' + k * interval '1 hour' + interval '30 minutes'
  FROM generate_series(-48, 47) k;
INSERT INTO cal.local_events SELECT k + 100, localtimestamp - interval '13 months' + k * interval '1 hour' + interval '30 minutes'
  FROM generate_series(-48, 47) k;
-- (the NOTICE naming the zone gives its offset now, which changes with the
-- season: ttl_index_stats shows the zone)
SET client_min_messages = warning;
SELECT ttl_create_index('cal.events', 'at', interval '13 months', time_zone => 'Europe/Berlin') > 0 AS created;
SELECT ttl_create_index('cal.local_events', 'at', interval '13 months', time_zone => 'Europe/Berlin') > 0 AS created;
RESET client_min_messages;
SELECT table_name, expire_after, time_zone FROM ttl_index_stats
  WHERE table_name::text LIKE 'cal.%' ORDER BY 1;
-- what a 30-day month ('390 days') would have deleted: every row here
SELECT count(*) FILTER (WHERE at < now() - interval '390 days') AS by_390_days,
	   count(*) FILTER (WHERE at < now() - interval '13 months') AS by_13_months
  FROM cal.events;
SET TimeZone = 'Pacific/Auckland';
SELECT ttl_runner() >= 96 AS ran;
SET TimeZone = 'Europe/Berlin';
SELECT count(*) AS kept, min(id) AS oldest_kept,
	   count(*) FILTER (WHERE at < now() - interval '13 months') AS kept_but_expired
  FROM cal.events;
SELECT count(*) AS kept, min(id) AS oldest_kept,
	   count(*) FILTER (WHERE at < localtimestamp - interval '13 months') AS kept_but_expired
  FROM cal.local_events;
-- ttl_summary's expire_after_seconds is extract(epoch ...): a year is
-- 365.25 days and a month 30 there; the TTL itself is the interval
SELECT table_name, expire_after_seconds FROM ttl_summary() WHERE schema_name = 'cal' ORDER BY 1;

-- 4. A soft delete records the row's expiry: January 31 under '1 month'
-- in a leap year is recorded as the last instant of February
CREATE TABLE cal.soft (id int PRIMARY KEY, at timestamptz NOT NULL, gone timestamptz);
INSERT INTO cal.soft VALUES (1, '2020-01-31 12:00', NULL), (2, '2020-01-15 12:00', NULL),
	(3, now() + interval '1 day', NULL);
SET client_min_messages = warning;
SELECT ttl_create_index('cal.soft', 'at', interval '1 month', soft_delete_column => 'gone',
	time_zone => 'Europe/Berlin') > 0 AS created;
RESET client_min_messages;
SELECT ttl_runner() >= 2 AS ran;
RESET ROLE;
SELECT id, gone, gone = ttl_test.expiry('1 month', 'Europe/Berlin', at::text) AS as_expiry
  FROM cal.soft ORDER BY id;
SET ROLE ttl_cal_owner;

-- 5. Months beside a per-row TTL and on an epoch column are accepted: the
-- policy's months are on the calendar; a per-row interval's month is 30
-- days (ttl_expires_at() is the immutable function the index is on)
CREATE TABLE cal.cache (id int PRIMARY KEY, at timestamptz NOT NULL, ttl interval);
SELECT ttl_create_index('cal.cache', 'at', interval '1 month', ttl_column => 'ttl') > 0 AS created;
SELECT ttl_expires_at('2023-01-31 00:00+00'::timestamptz, interval '1 month') AT TIME ZONE 'UTC'
	AS per_row_month_is_30_days;
CREATE TABLE cal.epoch (id int PRIMARY KEY, at bigint NOT NULL);
SELECT ttl_create_index('cal.epoch', 'at', interval '1 year', unit => 's') > 0 AS created;

-- 6. Bad input: a negative month, months with a negative part, more than
-- 100 years.  Each is refused and the policy is as it was.
CREATE TEMP TABLE before AS SELECT * FROM ttl_index_policy;
SELECT ttl_create_index('cal.events', 'at', interval '-1 month');
SELECT ttl_create_index('cal.events', 'at', interval '1 month -40 days');
SELECT ttl_create_index('cal.events', 'at', interval '1 month -1 hour');
SELECT ttl_alter_index('cal.events', 'at', interval '101 years');
SELECT ttl_create_index('cal.events', 'at', '13 months -2 days');
SELECT (SELECT count(*) FROM (TABLE ttl_index_policy EXCEPT TABLE before) d) AS changed,
	   (SELECT count(*) FROM (TABLE before EXCEPT TABLE ttl_index_policy) d) AS lost;
-- 100 years is the most
SELECT ttl_alter_index('cal.events', 'at', interval '100 years') > 0 AS altered;
SELECT expire_after FROM ttl_index_stats WHERE table_name = 'cal.events'::regclass;

DROP TABLE before;
RESET ROLE;

-- 7. ttl_from_cron() maps a job's months to a calendar TTL, counted in the
-- zone of the job's session; months beside a negative part become 30
-- days each, which a TTL allows.  The jobs' role has its own TimeZone, so
-- that the zone does not depend on pg_regress's (PST8PDT before 17)
CREATE ROLE ttl_cal_cron;
ALTER ROLE ttl_cal_cron SET TimeZone = 'America/Los_Angeles';
CREATE SCHEMA cron;
CREATE TABLE cron.job (jobid bigserial PRIMARY KEY, schedule text NOT NULL, command text NOT NULL,
					   database text DEFAULT current_database(), username text DEFAULT 'ttl_cal_cron',
					   jobname text);
INSERT INTO cron.job (jobname, schedule, command) VALUES
 ('yearly', '0 4 1 * *', $$DELETE FROM cal.events WHERE at < now() - interval '7 years'$$),
 ('local', '0 4 1 * *', $$DELETE FROM cal.local_events WHERE at < now() - interval '13 months'$$),
 ('less', '0 4 1 * *', $$DELETE FROM cal.events WHERE at < now() - interval '1 month -1 day'$$),
 ('nowhere', '0 4 1 * *', $$DELETE FROM cal.none WHERE at < now() - interval '1 year'$$);
SELECT jobname, ttl_call, note FROM ttl_from_cron() ORDER BY jobid;
DROP SCHEMA cron CASCADE;
DROP ROLE ttl_cal_cron;
SET client_min_messages = error;
DROP SCHEMA cal CASCADE;
DROP SCHEMA ttl_test CASCADE;
DROP EXTENSION ttl_index;
DROP ROLE ttl_cal_owner;
