--
-- ttl_edges: tables and rows that used to stall a policy, or that a
-- policy refused or misread; ttl_runner() purges, on a server without the
-- library preloaded.
--
SET client_min_messages = warning;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA edges;
SET search_path = edges, public;

-- a row a foreign key references stays; the others go, and ttl_runner()
-- goes on to the other policies
CREATE TABLE parent (id int PRIMARY KEY, ts timestamptz NOT NULL);
CREATE TABLE child (pid int REFERENCES parent);
INSERT INTO parent SELECT g, now() - interval '1 day' FROM generate_series(1, 1000) g;
INSERT INTO child VALUES (10), (20);
SELECT ttl_create_index('parent', 'ts', 3600) > 0 AS ok;
-- a trigger that refuses one row
CREATE TABLE docs (id int, ts timestamptz NOT NULL);
CREATE FUNCTION docs_hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.id = 3 THEN
		RAISE EXCEPTION 'document % is on legal hold', OLD.id;
	END IF;
	RETURN OLD;
END $$;
CREATE TRIGGER docs_hold BEFORE DELETE ON docs FOR EACH ROW EXECUTE FUNCTION docs_hold();
INSERT INTO docs SELECT g, now() - interval '1 day' FROM generate_series(1, 10) g;
SELECT ttl_create_index('docs', 'ts', 3600) > 0 AS ok;
-- and a policy that fails as a whole (its trigger writes to a table that
-- is gone): a warning, the others still purge
CREATE TABLE broken (ts timestamptz NOT NULL);
CREATE TABLE broken_log (ts timestamptz);
CREATE FUNCTION broken_log() RETURNS trigger LANGUAGE plpgsql AS
	$$ BEGIN INSERT INTO edges.broken_log VALUES (OLD.ts); RETURN OLD; END $$;
CREATE TRIGGER broken_log BEFORE DELETE ON broken FOR EACH ROW EXECUTE FUNCTION broken_log();
DROP TABLE broken_log;
INSERT INTO broken VALUES (now() - interval '1 day');
SELECT ttl_create_index('broken', 'ts', 3600) > 0 AS ok;
SELECT ttl_runner();
SELECT (SELECT string_agg(id::text, ',' ORDER BY id) FROM parent) AS parent_left,
	   (SELECT string_agg(id::text, ',' ORDER BY id) FROM docs) AS docs_left,
	   (SELECT count(*) FROM broken) AS broken_left;
SELECT ttl_drop_index('broken', 'ts');
-- once the references are gone, so are the rows
DELETE FROM child;
DROP TRIGGER docs_hold ON docs;
SELECT ttl_runner();

-- a rule that replaces the DELETE: refused
CREATE TABLE ruled (ts timestamptz NOT NULL);
CREATE RULE keep AS ON DELETE TO ruled DO INSTEAD NOTHING;
SELECT ttl_create_index('ruled', 'ts', 60);
SELECT count(*) FROM ttl_index_policy WHERE relid = 'ruled'::regclass;
-- added later: the policy fails with the same clear error
DROP RULE keep ON ruled;
SELECT ttl_create_index('ruled', 'ts', 60) > 0 AS ok;
CREATE RULE keep AS ON DELETE TO ruled DO INSTEAD NOTHING;
INSERT INTO ruled VALUES (now() - interval '1 hour');
SELECT ttl_runner();
-- a DO ALSO rule is fine: it runs as for a DELETE of the owner's
DROP RULE keep ON ruled;
CREATE TABLE ruled_log (ts timestamptz);
CREATE RULE log AS ON DELETE TO ruled DO ALSO INSERT INTO edges.ruled_log VALUES (OLD.ts);
SELECT ttl_runner();
SELECT (SELECT count(*) FROM ruled) AS ruled_left, (SELECT count(*) FROM ruled_log) AS logged;

-- an inheritance parent covers its children, as DELETE FROM parent does;
-- each child gets the index
CREATE TABLE measures (ts timestamptz NOT NULL, v int);
CREATE TABLE measures_a () INHERITS (measures);
CREATE TABLE measures_b (extra text) INHERITS (measures);
INSERT INTO measures VALUES (now() - interval '2 hours', 1), (now(), 2);
INSERT INTO measures_a VALUES (now() - interval '2 hours', 3), (now(), 4);
INSERT INTO measures_b VALUES (now() - interval '2 hours', 5, 'x'), (now(), 6, 'y');
SELECT ttl_create_index('measures', 'ts', 3600) > 0 AS ok;
SELECT tablename, indexname FROM pg_indexes WHERE schemaname = 'edges' AND tablename LIKE 'measures%' ORDER BY 1;
SELECT lag > interval '59 minutes' AS behind FROM ttl_index_stats WHERE table_name = 'measures'::regclass;
SELECT ttl_runner();
SELECT tableoid::regclass AS tbl, v FROM measures ORDER BY v;
SELECT lag FROM ttl_index_stats WHERE table_name = 'measures'::regclass;
SELECT ttl_drop_index('measures', 'ts');
SELECT count(*) FROM pg_indexes WHERE schemaname = 'edges' AND tablename LIKE 'measures%';

-- a domain over timestamptz is a timestamptz
CREATE DOMAIN stamp AS timestamptz CHECK (VALUE > '2000-01-01');
CREATE TABLE stamped (at stamp);
SELECT ttl_create_index('stamped', 'at', 60) > 0 AS ok;
INSERT INTO stamped VALUES (now() - interval '1 hour'), (now() + interval '1 hour');
SELECT ttl_runner();
SELECT count(*) FROM stamped;

-- the view never runs a policy's filter in the reader's session (the
-- owner's code, which could outlast or read the session): a filter that
-- sleeps does not slow it down; its lag is what the worker last saw
-- (none here: no worker runs without shared_preload_libraries)
CREATE FUNCTION slow(text) RETURNS boolean LANGUAGE plpgsql STABLE AS
	$$ BEGIN PERFORM pg_sleep(1); RETURN true; END $$;
CREATE TABLE slowly (ts timestamptz NOT NULL, kind text);
SELECT ttl_create_index('slowly', 'ts', 60, filter => 'edges.slow(kind)') > 0 AS ok;
INSERT INTO slowly VALUES (now() - interval '1 hour', 'a');
SET statement_timeout = '100ms';
SELECT lag FROM ttl_index_stats WHERE table_name = 'slowly'::regclass;
RESET statement_timeout;

-- deferred constraints are checked at the end of the batch, as the owner:
-- a deferred trigger that refuses one row holds that row only.  Inside a
-- transaction block, SET CONSTRAINTS is the caller's: the policy fails there
CREATE TABLE deferred (id int PRIMARY KEY, ts timestamptz NOT NULL);
CREATE FUNCTION refuse_two() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.id = 2 THEN
		RAISE EXCEPTION 'row 2 is on hold';
	END IF;
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER refuse_two AFTER DELETE ON deferred
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_two();
INSERT INTO deferred SELECT g, now() - interval '1 hour' FROM generate_series(1, 3) g;
SELECT ttl_create_index('deferred', 'ts', 60) > 0 AS ok;
SELECT count(ttl_pause(relid::regclass, column_name)) FROM ttl_index_policy
 WHERE relid <> 'deferred'::regclass;
BEGIN;
SELECT ttl_runner();
ROLLBACK;
SELECT ttl_runner();
SELECT id FROM deferred;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA edges CASCADE;
DROP EXTENSION ttl_index;
