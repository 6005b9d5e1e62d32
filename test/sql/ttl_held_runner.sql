--
-- ttl_held_runner: what ttl_runner() returns and counts is what stays
-- deleted.  A batch that fails and rolls back counts nothing, even when it
-- had deleted rows before its failure (issue 45, case 13).
--
SET client_min_messages = warning;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA held_runner;
SET search_path = held_runner, public;

CREATE FUNCTION picky(id int) RETURNS boolean LANGUAGE sql IMMUTABLE
	AS 'SELECT true';
CREATE TABLE picky_rows (id int, ts timestamptz NOT NULL);
INSERT INTO picky_rows
	SELECT g, now() - interval '2 days' + g * interval '1 second'
	FROM generate_series(1, 100) g;
SELECT ttl_create_index('picky_rows', 'ts', 3600, filter => 'held_runner.picky(id)') > 0 AS ok;
-- then the filter fails on the 50th row in key order with an error that
-- is not some rows' (SQLSTATE 55000): the batch deletes rows 1 to 49 (no
-- trigger: each row as the scan finds it), then fails, and rolls back
CREATE OR REPLACE FUNCTION picky(id int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF id = 50 THEN
		RAISE EXCEPTION 'row % is not ready', id
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	RETURN true;
END $$;
-- a policy that works beside it
CREATE TABLE plain_rows (id int, ts timestamptz NOT NULL);
INSERT INTO plain_rows SELECT g, now() - interval '2 days' FROM generate_series(1, 10) g;
SELECT ttl_create_index('plain_rows', 'ts', 3600) > 0 AS ok;

-- the policy that fails says so, and counts none of the 49 rows its
-- rolled-back batch had deleted: 10 rows deleted in all, by the other
\set VERBOSITY terse
SELECT ttl_runner();
\set VERBOSITY default
SELECT count(*) AS picky_rows_left FROM picky_rows;
SELECT count(*) AS plain_rows_left FROM plain_rows;
-- and again: the same failure, the same answer
\set VERBOSITY terse
SELECT ttl_runner();
\set VERBOSITY default
SELECT count(*) AS picky_rows_left FROM picky_rows;

-- inside a transaction block too
BEGIN;
\set VERBOSITY terse
SELECT ttl_runner();
\set VERBOSITY default
SELECT count(*) AS picky_rows_left FROM picky_rows;
COMMIT;

-- once the filter no longer fails, every row goes
CREATE OR REPLACE FUNCTION picky(id int) RETURNS boolean LANGUAGE sql IMMUTABLE
	AS 'SELECT true';
SELECT ttl_runner();
SELECT count(*) AS picky_rows_left FROM picky_rows;

SET client_min_messages = warning;
DROP SCHEMA held_runner CASCADE;
DROP EXTENSION ttl_index;
