--
-- ttl_engine: the batch engine and a shared drain's slices, driven step by
-- step (src/api/engine_test.c), so that what the timing-dependent TAP tests
-- reach only by chance is checked batch by batch: the resume position
-- inside a run of one key, a slice's bounds, the known-dead prefix, and
-- the claims and steals of a shared drain.  Batches here are bounded by
-- rows and index entries read, never by time.
--
SET client_min_messages = warning;
CREATE EXTENSION ttl_index;
RESET client_min_messages;

-- The entry points exist only here: the extension declares none.
CREATE SCHEMA ttl_test;
CREATE FUNCTION ttl_test.engine_begin(policy int, rows int, entries int) RETURNS void
	AS 'ttl_index', 'ttl_test_engine_begin' LANGUAGE C STRICT;
CREATE FUNCTION ttl_test.engine_range(from_key text, stop_key text) RETURNS void
	AS 'ttl_index', 'ttl_test_engine_range' LANGUAGE C;
CREATE FUNCTION ttl_test.engine_batch(OUT outcome text, OUT deleted bigint,
	OUT left_rows bigint, OUT skipped bigint, OUT target regclass,
	OUT resume text, OUT resume_tid tid, OUT resume_dups bigint,
	OUT prefix text, OUT prefix_pages int) RETURNS record
	AS 'ttl_index', 'ttl_test_engine_batch' LANGUAGE C;
CREATE FUNCTION ttl_test.engine_end() RETURNS void
	AS 'ttl_index', 'ttl_test_engine_end' LANGUAGE C;
CREATE FUNCTION ttl_test.slices(lo bigint, hi bigint, nslices int, ntables int,
	steps text[]) RETURNS TABLE (step text, result bigint, slices text)
	AS 'ttl_index', 'ttl_test_slices' LANGUAGE C STRICT;
CREATE FUNCTION ttl_test.slices(lo bigint, hi bigint, nslices int, ntables int,
	steps text[], top bigint) RETURNS TABLE (step text, result bigint, slices text)
	AS 'ttl_index', 'ttl_test_slices' LANGUAGE C STRICT;

-- Only a superuser drives the engine, even when granted the function.
CREATE ROLE ttl_e_other;
GRANT USAGE ON SCHEMA ttl_test TO ttl_e_other;
SET ROLE ttl_e_other;
SELECT * FROM ttl_test.slices(0, 100, 2, 1, '{}');
SELECT ttl_test.engine_begin(1, 10, 0);
RESET ROLE;

SET TimeZone = 'UTC';

-- 1. The resume position inside a run of one key.  3,000 expired rows
-- share one key and the filter rejects them all; 20 later expired rows
-- pass it.  (The filter calls a STABLE function, so that the index is not
-- partial: a partial index would hold only the 20.)  Each batch may read
-- 1,000 entries: it stops in the run, and the next resumes past the last
-- entry read (key and heap TID), so the fourth batch gets past the run and
-- deletes the 20.  Resuming at the key alone would read the same 1,000
-- entries batch after batch.
CREATE TABLE run (id int, ts timestamptz NOT NULL, keep boolean NOT NULL)
	WITH (autovacuum_enabled = off);
INSERT INTO run SELECT g, '2020-01-01 00:00+00', true FROM generate_series(1, 3000) g;
INSERT INTO run SELECT 3000 + g, '2020-01-02 00:00+00'::timestamptz + g * interval '1 minute', false
  FROM generate_series(1, 20) g;
CREATE FUNCTION expired_for_good(keep boolean) RETURNS boolean
	LANGUAGE sql STABLE AS 'SELECT NOT keep';
SELECT ttl_create_index('run', 'ts', 3600, filter => 'expired_for_good(keep)') AS run_policy \gset
SELECT indexdef LIKE '%WHERE%' AS partial FROM pg_indexes WHERE tablename = 'run';
SELECT ttl_test.engine_begin(:run_policy, 100, 1000);
SELECT outcome, deleted, resume, resume_tid, resume_dups FROM ttl_test.engine_batch();
SELECT outcome, deleted, resume, resume_tid, resume_dups FROM ttl_test.engine_batch();
SELECT outcome, deleted, resume, resume_tid, resume_dups FROM ttl_test.engine_batch();
SELECT outcome, deleted, resume, resume_tid, resume_dups FROM ttl_test.engine_batch();
SELECT count(*) AS kept, bool_and(keep) AS all_kept_rows FROM run;

-- 2. A slice: the batches of a range start at its first key and stop
-- below its stop key, whatever the row limit, and leave the rows outside
-- it; the same target with no range drains the rest.
CREATE TABLE slice (id int, ts timestamptz NOT NULL) WITH (autovacuum_enabled = off);
INSERT INTO slice SELECT g, '2020-01-01 00:00+00'::timestamptz + g * interval '1 minute'
  FROM generate_series(1, 100) g;
SELECT ttl_create_index('slice', 'ts', 3600) AS slice_policy \gset
SELECT ttl_test.engine_begin(:slice_policy, 16, 0);
-- the first batch resolves the target: 16 rows from the index's start
SELECT outcome, deleted, resume FROM ttl_test.engine_batch();
SELECT ttl_test.engine_range('2020-01-01 00:41+00', '2020-01-01 01:11+00');
SELECT outcome, deleted, resume FROM ttl_test.engine_batch();
SELECT outcome, deleted, resume FROM ttl_test.engine_batch();
SELECT min(id), max(id), count(*) FROM slice WHERE id > 16;
SELECT count(*) AS left_in_range FROM slice WHERE ts >= '2020-01-01 00:41+00' AND ts < '2020-01-01 01:11+00';
-- bad input: a range needs its stop key
SELECT ttl_test.engine_range('2020-01-01 00:41+00', NULL);
-- a new pass takes the whole target again
SELECT ttl_test.engine_begin(:slice_policy, 1000, 0);
SELECT outcome, deleted FROM ttl_test.engine_batch();
SELECT count(*) AS rows_left FROM slice;

-- 3. The known-dead prefix.  A pass deletes 5,000 rows; the rows'
-- entries stay in the index (no VACUUM here), and the pass records how far
-- the index holds nothing else: past its second page at least, below the
-- first live key.  The next pass, with a row inserted since below the
-- prefix (its page's LSN changes), finds the prefix changed, does not
-- trust it, and deletes that row.
CREATE TABLE prefix (id int, ts timestamptz NOT NULL) WITH (autovacuum_enabled = off);
INSERT INTO prefix SELECT g, '2020-01-01 00:00+00'::timestamptz + g * interval '1 second'
  FROM generate_series(1, 5000) g;
INSERT INTO prefix VALUES (0, now() + interval '1 day');
SELECT ttl_create_index('prefix', 'ts', 3600) AS prefix_policy \gset
SELECT ttl_test.engine_begin(:prefix_policy, 10000, 0);
SELECT outcome, deleted, prefix_pages >= 2 AS prefix_spans_pages,
	   prefix::timestamptz > '2020-01-01 00:00+00' AND prefix::timestamptz < '2020-01-01 01:24+00' AS prefix_below_last_deleted
  FROM ttl_test.engine_batch();
-- a pass that finds nothing changed starts past the prefix, and keeps it
SELECT ttl_test.engine_begin(:prefix_policy, 10000, 0);
SELECT outcome, deleted, prefix IS NOT NULL AS prefix_kept FROM ttl_test.engine_batch();
INSERT INTO prefix VALUES (-1, '2020-01-01 00:00:30+00');
SELECT ttl_test.engine_begin(:prefix_policy, 10000, 0);
SELECT outcome, deleted FROM ttl_test.engine_batch();
SELECT id FROM prefix ORDER BY id;
SELECT ttl_test.engine_end();

-- 4. Slices of a shared drain (slices.c), step by step: process 101 (the
-- lead) and 102, 103 (helpers) on a job of two tables; the first cut in
-- four slices over [0, 1000), the second one slice from its index's start.
-- A process with no free slice takes the upper half of the widest slice
-- another holds (from that one's progress), never one from an index's
-- start before its first batch says where it stands, nor one of a table
-- given up; a slice's owner reads its new end; a slice given back is taken
-- again from where it got to; a table is finished when all its slices are
-- done, or when it is given up.
SELECT * FROM ttl_test.slices(0, 1000, 4, 2, ARRAY[
	'claim 101', 'claim 102', 'claim 103',
	'done 101 0', 'claim 101', 'done 102 1', 'claim 102',
	'progress 101 3 800', 'done 103 2',
	-- no slice free: 103 takes the upper half of 101's from its progress
	'claim 103', 'end 101 3',
	-- 101's batch in flight got past its new end: not recorded
	'progress 101 3 950',
	-- the second table's slice knows where it stands after its first batch
	'progress 102 4 600',
	-- given back part done, taken again from where it got to
	'back 103 0', 'claim 103',
	-- the second table found locked: given up, finished, not stolen from
	'giveup 102 4', 'claim 102', 'finished 0',
	'done 101 3', 'done 103 0', 'done 102 1',
	'finished 2', 'finished 3', 'claim 101',
	-- only a slice's owner may let it go
	'done 999 0']);
-- a slice from an index's start is not halved before it knows where it is
SELECT * FROM ttl_test.slices(0, 100, 1, 2, ARRAY[
	'claim 101', 'claim 102', 'done 101 0', 'claim 101', 'progress 102 1 40',
	'claim 101']);
-- bad input: a clear error
SELECT * FROM ttl_test.slices(0, 100, 2, 1, ARRAY['bogus 1']);
SELECT * FROM ttl_test.slices(0, 100, 2, 0, '{}');
SELECT * FROM ttl_test.slices(0, 100, -1, 1, '{}');
SELECT * FROM ttl_test.slices(0, 100, 2, 1, ARRAY['claim 101', 'back 0 1']);
-- a job too narrow to share is not cut
SELECT * FROM ttl_test.slices(0, 1, 4, 1, '{}');
SELECT * FROM ttl_test.slices(10, 10, 4, 2, '{}');
-- The first table's keys end below 100 of a job up to 1000 (a backlog far
-- older than the cutoff): its four slices are cut over [0, 100), the last
-- reaching on to 1000, so that each holds a quarter of its rows; the
-- second table's slice still reaches 1000.  A top past hi is hi; a top at
-- or below lo leaves nothing to share.
SELECT * FROM ttl_test.slices(0, 1000, 4, 2, '{}', 100);
SELECT * FROM ttl_test.slices(0, 1000, 4, 1, '{}', 5000);
SELECT * FROM ttl_test.slices(50, 1000, 4, 1, '{}', 50);

-- Purge windows at any instant (window.c): the days a zone skips or
-- repeats an hour, without waiting for them
CREATE FUNCTION ttl_test.window(purge_window text, zone text, at timestamptz,
	OUT open boolean, OUT from_ts timestamptz, OUT until_ts timestamptz)
	AS 'ttl_index', 'ttl_test_window' LANGUAGE C STRICT;
SET TimeZone = 'UTC';
-- inside; outside (the next window, whole); the end is not in it
SELECT * FROM ttl_test.window('01:00-05:00', 'UTC', '2026-06-01 03:00+00');
SELECT * FROM ttl_test.window('01:00-05:00', 'UTC', '2026-06-01 06:00+00');
SELECT * FROM ttl_test.window('01:00-05:00', 'UTC', '2026-06-01 05:00+00');
-- over midnight: inside since the day before, and the next one
SELECT * FROM ttl_test.window('22:00-02:00', 'UTC', '2026-06-01 01:00+00');
SELECT * FROM ttl_test.window('22:00-02:00, 13:00-14:00', 'UTC', '2026-06-01 03:00+00');
-- 24:00 ends the day
SELECT * FROM ttl_test.window('18:00-24:00', 'UTC', '2026-06-01 23:59:59+00');
SELECT * FROM ttl_test.window('18:00-24:00', 'UTC', '2026-06-02 00:00+00');
-- in the zone's clock: 01:00 in Asia/Kolkata is 19:30 UTC
SELECT * FROM ttl_test.window('01:00-02:00', 'Asia/Kolkata', '2026-06-01 00:00+00');
-- New York skips 02:00-03:00 on 2026-03-08: 02:30 reads as 03:30 EDT, so
-- 02:30-03:00 is empty that day and the next window is the day after;
-- 01:00-03:30 spans the gap, 06:00 to 07:30 UTC
SELECT * FROM ttl_test.window('02:30-03:00', 'America/New_York', '2026-03-08 05:00+00');
SELECT * FROM ttl_test.window('01:00-03:30', 'America/New_York', '2026-03-08 06:30+00');
-- it repeats 01:00-02:00 on 2026-11-01: an edge there is the second 01:30
-- (EST, 06:30 UTC)
SELECT * FROM ttl_test.window('01:30-02:30', 'America/New_York', '2026-11-01 04:00+00');
-- bad input
SELECT * FROM ttl_test.window('1-2', 'UTC', '2026-06-01 00:00+00');
SELECT * FROM ttl_test.window('01:00-02:00', 'Nowhere/Else', '2026-06-01 00:00+00');
RESET TimeZone;

DROP TABLE run, slice, prefix;
DROP FUNCTION expired_for_good(boolean);
DROP SCHEMA ttl_test CASCADE;
DROP ROLE ttl_e_other;
SET client_min_messages = warning;
DROP EXTENSION ttl_index;
RESET client_min_messages;
