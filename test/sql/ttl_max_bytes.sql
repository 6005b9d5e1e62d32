--
-- ttl_max_bytes: size caps by bytes (max_bytes, docs/expiry-rules.md
-- "### By bytes").  The oldest rows go until the rows that stay fit in
-- max_bytes at the footprint the table's rows have (its heap, TOAST and
-- indexes, pg_total_relation_size, less the free space VACUUM recorded):
-- once VACUUM has made their space free, new rows reuse it and the table
-- stops growing.  No worker runs here: ttl_runner() applies the policies
-- with the worker's engine (test/t/045_max_bytes.pl: the worker, under
-- steady inserts).
--
SET client_min_messages = warning;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA mb;
-- autovacuum off: the tests say when VACUUM records free space
CREATE TABLE mb.ev (id bigint, at timestamptz, payload text) WITH (autovacuum_enabled = off);
CREATE TABLE mb.other (id bigint, at timestamptz, payload text);

-- the policy's options as the catalog and the view hold them
CREATE FUNCTION mb.options(t regclass)
RETURNS TABLE (expire_after interval, max_rows bigint, max_bytes bigint, action text)
LANGUAGE sql AS $$
	SELECT s.expire_after, s.max_rows, s.max_bytes, s.action
	  FROM ttl_index_stats s WHERE s.table_name = t
$$;
-- the whole catalog row, to show that a refused call changed nothing
CREATE TABLE mb.before AS SELECT * FROM ttl_index_policy WHERE false;
CREATE FUNCTION mb.keep() RETURNS void LANGUAGE sql AS $$
	DELETE FROM mb.before;
	INSERT INTO mb.before SELECT * FROM ttl_index_policy;
$$;
CREATE FUNCTION mb.unchanged() RETURNS boolean LANGUAGE sql AS $$
	SELECT NOT EXISTS (SELECT * FROM ttl_index_policy EXCEPT SELECT * FROM mb.before)
	   AND NOT EXISTS (SELECT * FROM mb.before EXCEPT SELECT * FROM ttl_index_policy)
$$;

-- 1. A cap by bytes alone (no TTL), then beside a TTL and max_rows.
SELECT ttl_create_index('mb.ev', 'at', NULL::interval, max_bytes => 2097152) > 0 AS created;
SELECT * FROM mb.options('mb.ev');
SELECT ttl_alter_index('mb.ev', 'at', max_bytes => 4194304, max_rows => 100000) > 0 AS altered;
SELECT * FROM mb.options('mb.ev');
-- an option left out keeps its value; ttl_create_index changes what it names
SELECT ttl_create_index('mb.ev', 'at', interval '30 days') > 0 AS changed;
SELECT * FROM mb.options('mb.ev');
SELECT ttl_alter_index('mb.ev', 'at', reset => '{max_bytes, max_rows}') > 0 AS reset;
SELECT * FROM mb.options('mb.ev');
-- in seconds and as text too
SELECT ttl_create_index('mb.other', 'at', 3600, max_bytes => 1048576) > 0 AS created;
SELECT ttl_create_index('mb.other', 'at', '2 hours', max_bytes => 1048577) > 0 AS changed;
SELECT * FROM mb.options('mb.other');
SELECT ttl_drop_index('mb.other', 'at');

-- 2. Bad input: a clear error, and nothing changed.
SELECT ttl_alter_index('mb.ev', 'at', max_bytes => 3145728, reset => '{max_rows}') > 0 AS altered;
SELECT mb.keep();
SELECT ttl_alter_index('mb.ev', 'at', max_bytes => 0);
SELECT ttl_alter_index('mb.ev', 'at', max_bytes => -1);
SELECT ttl_alter_index('mb.ev', 'at', max_bytes => 1048575);
SELECT ttl_alter_index('mb.ev', 'at', max_bytes => 4194304, reset => '{max_bytes}');
SELECT ttl_alter_index('mb.ev', 'at', max_bytes => 4194304, filter => 'id > 0');
SELECT ttl_alter_index('mb.ev', 'at', max_bytes => 4194304, action => 'soft_delete',
					   soft_delete_column => 'payload');
-- a role that does not own the table may not cap it
CREATE ROLE mb_other;
GRANT USAGE ON SCHEMA mb TO mb_other;
SET ROLE mb_other;
SELECT ttl_alter_index('mb.ev', 'at', max_bytes => 4194304);
RESET ROLE;
-- the TTL removed from a cap by bytes that is removed too: no rule left
SELECT ttl_alter_index('mb.ev', 'at', reset => '{max_bytes, expire_after}');
SELECT mb.unchanged();
SELECT * FROM mb.options('mb.ev');
-- a new policy: the same errors, and no policy made
SELECT ttl_create_index('mb.other', 'at', 3600, max_bytes => 0);
SELECT ttl_create_index('mb.other', 'at', NULL::interval, max_bytes => 1048576,
						ttl_column => 'payload');
SELECT mb.unchanged();
SELECT count(*) FROM ttl_index_policy WHERE relid = 'mb.other'::regclass;

-- 3. ttl_runner() on a table above its cap: the oldest rows go, the
-- newest stay, as many as fit in max_bytes at the footprint the rows have.
-- The table was never analyzed: its row count is read, not taken from the
-- statistics.  A cap alone: no row is old enough to expire.
SELECT ttl_alter_index('mb.ev', 'at', max_bytes => 2097152, reset => '{expire_after}') > 0;
INSERT INTO mb.ev SELECT i, now() - interval '1 day' + i * interval '1 ms', repeat('x', 100)
  FROM generate_series(1, 40000) i;
SELECT pg_stat_force_next_flush();
CREATE TABLE mb.seen AS
	SELECT pg_total_relation_size('mb.ev') AS size, count(*) AS n FROM mb.ev;
SELECT size > 2097152 AS over_cap FROM mb.seen;
SELECT ttl_runner() > 0 AS capped;
-- the rows kept are the newest, up to id 40000, and each row's footprint
-- (the size over the rows it held) times the rows kept fits in the cap,
-- within one row
SELECT max(id) = 40000 AS newest_kept, min(id) = 40001 - count(*) AS oldest_gone,
	   count(*) * s.size / s.n <= 2097152 AS fits,
	   (count(*) + 1) * s.size / s.n > 2097152 AS no_more_than_needed
  FROM mb.ev, mb.seen s GROUP BY s.size, s.n;

-- 4. Steady inserts: after VACUUM the new rows reuse the space of the
-- rows the cap took, and the table stops growing.  Five rounds of 5000
-- rows, each capped then vacuumed: the size stays within the size it had
-- when first over the cap plus one round's rows (the rows written between
-- a pass and the VACUUM that frees what it deleted: docs, the bound), and
-- the rows kept are always the newest.
VACUUM mb.ev;
CREATE TABLE mb.sizes (round int, size bigint, n bigint, lo bigint, hi bigint);
CREATE FUNCTION mb.insert_round() RETURNS void LANGUAGE sql AS $$
	INSERT INTO mb.ev SELECT i, now() - interval '1 day' + i * interval '1 ms', repeat('x', 100)
	  FROM generate_series((SELECT max(id) FROM mb.ev) + 1, (SELECT max(id) FROM mb.ev) + 5000) i;
$$;
CREATE FUNCTION mb.record_round() RETURNS void LANGUAGE sql AS $$
	INSERT INTO mb.sizes
	SELECT coalesce((SELECT max(round) FROM mb.sizes), 0) + 1,
		   pg_total_relation_size('mb.ev'), count(*), min(id), max(id) FROM mb.ev;
$$;
\set round 'SELECT mb.insert_round(); SELECT pg_stat_force_next_flush(); SELECT ttl_runner() >= 0 AS ran; VACUUM mb.ev; SELECT mb.record_round();'
\pset tuples_only on
:round
:round
:round
:round
:round
\pset tuples_only off
SELECT round, hi = 40000 + 5000 * round AS newest_kept, hi - lo + 1 = n AS a_newest_suffix,
	   size <= (SELECT size + 5000 * size / n FROM mb.seen) AS within_bound
  FROM mb.sizes ORDER BY round;

-- 5. Both caps: the stricter holds.
SELECT ttl_alter_index('mb.ev', 'at', max_rows => 1000) > 0;
SELECT pg_stat_force_next_flush();
SELECT ttl_runner() > 0 AS capped;
SELECT count(*) AS n, max(id) AS newest FROM mb.ev;

-- 6. A live-row count reset (pg_stat_reset(): the counts begin again
-- while the table keeps its rows) is not trusted: the rows are estimated
-- from the table's density when ANALYZE last measured it.
SELECT ttl_alter_index('mb.ev', 'at', reset => '{max_rows}') > 0;
INSERT INTO mb.ev SELECT i, now() - interval '1 day' + i * interval '1 ms', repeat('x', 100)
  FROM generate_series(65001, 105000) i;
ANALYZE mb.ev;
SELECT pg_stat_reset();
SELECT ttl_runner() > 0 AS capped;
SELECT max(id) = 105000 AS newest_kept, max(id) - min(id) + 1 = count(*) AS a_newest_run,
	   count(*) < 40000 AS capped_down
  FROM mb.ev;

SET client_min_messages = warning;
DROP SCHEMA mb CASCADE;
DROP ROLE mb_other;
DROP EXTENSION ttl_index;
