--
-- ttl_ofix_extreme: a wall-clock key at either end of time (a timestamp of
-- 294276-12-31 23:59:59 read west of UTC, a date of 5874897-12-31, the
-- least timestamp and date read east of UTC) no longer fails the
-- executor path's statement with 22008 "timestamp out of range", which
-- left every other expired row of the table in place for good.  Such a
-- key is the infinity on its side: past the end it never expires, before
-- the start it always has.  ttl_runner() purges; no worker runs.
--
SET client_min_messages = warning;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA ox;
SET search_path = ox, public;
SET client_min_messages = warning;

-- archive: timestamp keys, New York (west of UTC)
CREATE TABLE a (id int, k timestamp);
CREATE TABLE a_arch (LIKE a);
INSERT INTO a VALUES (1, '2025-01-01'), (2, '294276-12-31 23:59:59'),
	(3, '4714-11-24 00:00:00 BC'), (4, 'infinity'), (5, '-infinity');
SELECT ttl_create_index('a', 'k', 60, time_zone => 'America/New_York',
						archive_table => 'a_arch') > 0 AS ok;

-- soft delete into a timestamp column: date keys, Tokyo (east of UTC)
CREATE TABLE d (id int, k date, gone timestamp);
INSERT INTO d VALUES (1, '2025-01-01'), (2, '5874897-12-31'), (3, '4714-11-24 BC');
SELECT ttl_create_index('d', 'k', 60, time_zone => 'Asia/Tokyo',
						soft_delete_column => 'gone') > 0 AS ok;

-- soft delete into a date column: timestamp keys, Kiribati (UTC+14)
CREATE TABLE e (id int, k timestamp, gone date);
INSERT INTO e VALUES (1, '2025-01-01'), (2, '4714-11-24 00:00:00 BC'),
	(3, '294276-12-31 23:59:59');
SELECT ttl_create_index('e', 'k', 60, time_zone => 'Pacific/Kiritimati',
						soft_delete_column => 'gone') > 0 AS ok;

-- a per-row ttl_column whose expiry lands near the end of time, on a
-- table whose trigger keeps row 9 (the executor path)
CREATE TABLE c (id int, k timestamp, ttl int);
CREATE FUNCTION c_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.id = 9 THEN
		RETURN NULL;
	END IF;
	RETURN OLD;
END $$;
CREATE TRIGGER c_keep BEFORE DELETE ON c FOR EACH ROW EXECUTE FUNCTION c_keep();
INSERT INTO c VALUES (1, '2025-01-01', 60), (2, '294276-12-31 23:00:00', 1800),
	(9, '2025-01-01', 60);
SELECT ttl_create_index('c', 'k', NULL::interval, ttl_column => 'ttl',
						time_zone => 'America/Los_Angeles') > 0 AS ok;
-- soft delete of an epoch key at the far end of its range (bigint
-- seconds INT64_MIN): expired, its expiry is -infinity, not an error that
-- held the row back for good
CREATE TABLE s (id int, k bigint, gone timestamptz);
INSERT INTO s VALUES (1, 1735689600), (2, -9223372036854775808),
	(3, 9223372036854775807);
SELECT ttl_create_index('s', 'k', 60, unit => 's',
						soft_delete_column => 'gone') > 0 AS ok;
RESET client_min_messages;

SELECT ttl_runner() >= 0 AS ran;

-- the expired rows are gone (archived, soft-deleted); the key past the
-- end of time stays, that before its start went
SELECT id, k FROM a ORDER BY id;
SELECT id, k FROM a_arch ORDER BY id;
SELECT id, k, gone FROM d ORDER BY id;
SELECT id, k, gone FROM e ORDER BY id;
SELECT id, k FROM c ORDER BY id;
SELECT id, k, gone FROM s ORDER BY id;
-- and no policy failed
SELECT table_name, last_error FROM ttl_index_stats ORDER BY table_name::text;

-- a second run finds nothing more to do and still fails nowhere
SELECT ttl_runner() >= 0 AS ran;
SELECT count(*) AS failing FROM ttl_index_stats WHERE last_error IS NOT NULL;

SET client_min_messages = warning;
DROP SCHEMA ox CASCADE;
DROP EXTENSION ttl_index;
