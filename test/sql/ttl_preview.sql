--
-- ttl_preview: ttl_preview(table) counts what the next pass of each policy
-- of the table would do, by the engine's own pass in a mode that changes
-- nothing, and ttl_runner() then does exactly that.  Each case: the
-- preview, the table unchanged by it, the runner, and the preview's rows
-- equal to the rows the runner removed (or changed).  Then bad input, other
-- roles, a hostile owner's filter previewed by a superuser, odd settings
-- and a read-only transaction.  No worker runs.
--
SET client_min_messages = warning;
CREATE EXTENSION ttl_index;
CREATE ROLE ttl_pv_owner;
CREATE ROLE ttl_pv_member IN ROLE ttl_pv_owner;
CREATE ROLE ttl_pv_plain;
RESET client_min_messages;
SET TimeZone = 'UTC';
CREATE SCHEMA pv;
SET search_path = pv, public;

-- the preview of a table, and the runner's work on it, side by side
CREATE FUNCTION pv.check(tbl regclass, changed text DEFAULT NULL)
RETURNS TABLE (previewed bigint, removed bigint, same boolean)
LANGUAGE plpgsql AS $$
DECLARE
	before bigint;
	after bigint;
	n bigint;
	cond text := coalesce(changed, 'true');
BEGIN
	SELECT sum(p.rows) INTO previewed FROM ttl_preview(tbl) p;
	EXECUTE format('SELECT count(*) FROM %s WHERE %s', tbl, cond) INTO before;
	n := ttl_runner();
	EXECUTE format('SELECT count(*) FROM %s WHERE %s', tbl, cond) INTO after;
	removed := before - after;
	same := previewed = removed;
	RETURN NEXT;
END $$;

-- 1. delete: three rows expired, two not; the table is unchanged by it
CREATE TABLE d (id int, ts timestamptz);
INSERT INTO d VALUES (1, '2020-01-01'), (2, '2020-01-03'), (3, '2020-01-02'),
	(4, '2999-01-01'), (5, NULL);
SELECT ttl_create_index('d', 'ts', '1 day') > 0 AS created;
SELECT column_name, action, enabled, window_open, next_window, rows,
	   rows_capped, rows_kept, partitions, oldest, oldest_expiry, newest,
	   newest_expiry
  FROM ttl_preview('d');
SELECT count(*) AS still_5 FROM d;
SELECT * FROM pv.check('d');
SELECT rows, oldest FROM ttl_preview('d');

-- 2. a filter: only the rows it admits
CREATE TABLE f (id int, ts timestamptz);
INSERT INTO f SELECT g, '2020-01-01'::timestamptz + g * interval '1 hour'
  FROM generate_series(1, 40) g;
SELECT ttl_create_index('f', 'ts', '1 day', filter => 'id % 4 = 0') > 0 AS created;
SELECT rows, oldest, newest FROM ttl_preview('f');
SELECT * FROM pv.check('f');

-- many batches of 100 rows, some keys shared: each row counted once
CREATE TABLE f2 (id int, ts timestamptz);
INSERT INTO f2 SELECT g, '2020-01-01'::timestamptz + (g / 7) * interval '1 minute'
  FROM generate_series(1, 3000) g;
INSERT INTO f2 SELECT g, '2999-01-01' FROM generate_series(3001, 3100) g;
SELECT ttl_create_index('f2', 'ts', '1 day', batch_size => 100,
						filter => 'id % 3 <> 0') > 0 AS created;
SELECT rows, oldest, newest FROM ttl_preview('f2');
SELECT * FROM pv.check('f2');

-- 3. per-row TTL (ttl_column): the key is the row's expiry
CREATE TABLE r (id int, created timestamptz, ttl interval);
INSERT INTO r VALUES (1, now() - interval '2 hours', '1 hour'),
	(2, now() - interval '2 hours', '3 hours'),
	(3, now() - interval '10 days', '1 day'),
	(4, now(), '1 year');
SELECT ttl_create_index('r', 'created', ttl_column => 'ttl') > 0 AS created;
SELECT rows, oldest_expiry < newest_expiry AS in_order,
	   newest_expiry < now() AS both_expired,
	   oldest = oldest_expiry::text AS key_is_expiry
  FROM ttl_preview('r');
SELECT * FROM pv.check('r');

-- 4. an epoch key in seconds
CREATE TABLE e (id int, at bigint);
INSERT INTO e VALUES (1, 1577836800), (2, 1577923200), (3, 32503680000);
SELECT ttl_create_index('e', 'at', '1 hour', unit => 's') > 0 AS created;
SELECT rows, oldest, oldest_expiry, newest, newest_expiry FROM ttl_preview('e');
SELECT * FROM pv.check('e');

-- 5. soft delete: rows already soft-deleted are not counted
CREATE TABLE s (id int, ts timestamptz, gone timestamptz);
INSERT INTO s VALUES (1, '2020-01-01', NULL), (2, '2020-01-02', '2020-01-05'),
	(3, '2020-01-03', NULL), (4, '2999-01-01', NULL);
SELECT ttl_create_index('s', 'ts', '1 day', soft_delete_column => 'gone') > 0 AS created;
SELECT action, rows, oldest, newest FROM ttl_preview('s');
SELECT * FROM pv.check('s', 'gone IS NULL');

-- 6. anonymize: rows already anonymized are not counted
CREATE TABLE a (id int, ts timestamptz, email text);
INSERT INTO a VALUES (1, '2020-01-01', 'x@y'), (2, '2020-01-02', NULL),
	(3, '2020-01-03', 'z@y'), (4, '2999-01-01', 'w@y');
SELECT ttl_create_index('a', 'ts', '1 day', set_columns => 'email = NULL') > 0 AS created;
SELECT action, rows, oldest, newest FROM ttl_preview('a');
SELECT * FROM pv.check('a', 'email IS NOT NULL');
SELECT rows FROM ttl_preview('a');

-- 7. archive
CREATE TABLE ar (id int, ts timestamptz);
CREATE TABLE ar_arch (LIKE ar);
INSERT INTO ar SELECT g, '2020-01-01'::timestamptz + g * interval '1 day'
  FROM generate_series(1, 10) g;
INSERT INTO ar VALUES (11, '2999-01-01');
SELECT ttl_create_index('ar', 'ts', '1 day', action => 'archive',
						archive_table => 'ar_arch') > 0 AS created;
SELECT action, rows FROM ttl_preview('ar');
SELECT * FROM pv.check('ar');
SELECT count(*) AS archived FROM ar_arch;

-- 8. a cap: rows over max_rows go, expired or not; of them rows_capped
CREATE TABLE c (id int, ts timestamptz);
INSERT INTO c SELECT g, '2020-01-01'::timestamptz + g * interval '1 day'
  FROM generate_series(1, 3) g;
INSERT INTO c SELECT g, '2999-01-01'::timestamptz + g * interval '1 day'
  FROM generate_series(4, 20) g;
SELECT ttl_create_index('c', 'ts', '1 day', max_rows => 12) > 0 AS created;
SELECT rows, rows_capped, oldest, newest FROM ttl_preview('c');
SELECT * FROM pv.check('c');
SELECT count(*) AS at_cap FROM c;
-- a cap alone (no expiry)
CREATE TABLE c2 (id int, ts timestamptz);
INSERT INTO c2 SELECT g, '2999-01-01'::timestamptz + g * interval '1 day'
  FROM generate_series(1, 10) g;
SELECT ttl_create_index('c2', 'ts', max_rows => 4) > 0 AS created;
SELECT rows, rows_capped, oldest, newest, newest_expiry FROM ttl_preview('c2');
SELECT * FROM pv.check('c2');

-- 9. rows a foreign key still references: kept, reported apart
CREATE TABLE parent (id int PRIMARY KEY, ts timestamptz);
CREATE TABLE child (pid int REFERENCES parent);
INSERT INTO parent SELECT g, '2020-01-01'::timestamptz + g * interval '1 day'
  FROM generate_series(1, 6) g;
INSERT INTO child VALUES (2), (5);
SELECT ttl_create_index('parent', 'ts', '1 day') > 0 AS created;
SELECT rows, rows_kept, oldest, newest FROM ttl_preview('parent');
SELECT * FROM pv.check('parent');
SELECT id FROM parent ORDER BY id;

-- 10. a partitioned table: partitions dropped whole are counted, rows too
CREATE TABLE p (id int, ts timestamptz) PARTITION BY RANGE (ts);
CREATE TABLE p_2020 PARTITION OF p FOR VALUES FROM ('2020-01-01') TO ('2021-01-01');
CREATE TABLE p_2021 PARTITION OF p FOR VALUES FROM ('2021-01-01') TO ('2022-01-01');
CREATE TABLE p_now PARTITION OF p FOR VALUES FROM ('2022-01-01') TO (MAXVALUE);
INSERT INTO p VALUES (1, '2020-03-01'), (2, '2020-06-01'), (3, '2021-03-01'),
	(4, '2023-01-01'), (5, '2999-01-01');
SELECT ttl_create_index('p', 'ts', '1 day') > 0 AS created;
SELECT rows, partitions, oldest, newest FROM ttl_preview('p');
SELECT * FROM pv.check('p');
SELECT count(*) AS partitions_left FROM pg_inherits WHERE inhparent = 'p'::regclass;

-- 11. a closed purge window: said, counted all the same
CREATE TABLE w (id int, ts timestamptz);
INSERT INTO w VALUES (1, '2020-01-01'), (2, '2999-01-01');
SELECT ttl_create_index('w', 'ts', '1 day', time_zone => 'UTC',
	purge_window => to_char(now() AT TIME ZONE 'UTC' + interval '3 hours', 'HH24:00') || '-' ||
					to_char(now() AT TIME ZONE 'UTC' + interval '4 hours', 'HH24:00')) > 0 AS created;
SELECT window_open, next_window > now() AS opens_later, rows FROM ttl_preview('w');
SELECT ttl_drop_index('w', 'ts');

-- 12. two policies on one table: a row each
CREATE TABLE two (id int, ts timestamptz, ts2 timestamptz);
INSERT INTO two VALUES (1, '2020-01-01', '2999-01-01'), (2, '2999-01-01', '2020-01-01'),
	(3, '2020-01-01', '2020-01-01');
SELECT ttl_create_index('two', 'ts', '1 day') > 0 AS created;
SELECT ttl_create_index('two', 'ts2', '1 day') > 0 AS created;
SELECT column_name, rows FROM ttl_preview('two') ORDER BY policy_id;

-- 13. a paused policy: no next pass until resumed, its rows counted
SELECT ttl_pause('two', 'ts2');
SELECT column_name, enabled, rows FROM ttl_preview('two') ORDER BY policy_id;

-- 14. a filter that fails on one row: that row is held, as the worker
-- holds it, and the others counted
CREATE TABLE fe (id int, ts timestamptz);
CREATE TABLE fe_bad (id int);
-- (declared immutable, as a filter's functions must be, and it is not)
CREATE FUNCTION pv.fe_ok(i int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF EXISTS (SELECT FROM pv.fe_bad b WHERE b.id = i) THEN
		RAISE EXCEPTION 'row % fails the filter', i;
	END IF;
	RETURN true;
END $$;
INSERT INTO fe SELECT g, '2020-01-01'::timestamptz + g * interval '1 day'
  FROM generate_series(1, 4) g;
SELECT ttl_create_index('fe', 'ts', '1 day', filter => 'pv.fe_ok(id)') > 0 AS created;
INSERT INTO fe_bad VALUES (2);
SELECT rows, oldest, newest FROM ttl_preview('fe');
SELECT * FROM pv.check('fe');

-- 15. called inside a purge (a trigger of the table): refused
CREATE TABLE tr (id int, ts timestamptz);
CREATE FUNCTION pv.tr_preview() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM public.ttl_preview('pv.tr');
	RETURN OLD;
END $$;
CREATE TRIGGER tr_preview BEFORE DELETE ON tr FOR EACH ROW EXECUTE FUNCTION pv.tr_preview();
INSERT INTO tr VALUES (1, '2020-01-01');
SELECT ttl_create_index('tr', 'ts', '1 day') > 0 AS created;
SELECT rows FROM ttl_preview('tr');
SELECT ttl_runner();
SELECT count(*) AS still_1 FROM tr;

-- 16. hide_expired on a table that forces row security on its owner: the
-- owner's own reads do not see the expired rows, the pass (as the owner)
-- does, and so does the preview (it counts what the pass will do)
CREATE TABLE hx (id int, ts timestamptz);
INSERT INTO hx VALUES (1, '2020-01-01'), (2, '2020-01-02'), (3, '2999-01-01');
ALTER TABLE hx OWNER TO ttl_pv_owner;
GRANT USAGE ON SCHEMA pv TO ttl_pv_owner;
SELECT ttl_create_index('hx', 'ts', '1 day', hide_expired => true) > 0 AS created;
ALTER TABLE hx FORCE ROW LEVEL SECURITY;
SET ROLE ttl_pv_owner;
SELECT count(*) AS the_owner_sees_1 FROM hx;
RESET ROLE;
SELECT rows, oldest FROM ttl_preview('hx');
SET client_min_messages = error;	-- the held rows of fe and tr, said before
SELECT * FROM pv.check('hx');
RESET client_min_messages;
SELECT ttl_drop_index('hx', 'ts');

-- bad input: a clear error, nothing changed
CREATE TABLE nop (id int, ts timestamptz);
INSERT INTO nop VALUES (1, '2020-01-01');
CREATE VIEW v AS SELECT * FROM d;
SELECT * FROM ttl_preview('nop');
SELECT * FROM ttl_preview('v');
SELECT * FROM ttl_preview(NULL);
SELECT * FROM ttl_preview(0);
SELECT count(*) AS still_1 FROM nop;

-- a policy tried in a transaction rolled back: previewed, then gone
BEGIN;
SELECT ttl_create_index('nop', 'ts', '1 day') > 0 AS created;
SELECT column_name, rows FROM ttl_preview('nop');
ROLLBACK;
SELECT count(*) AS no_policy FROM ttl_index_policy WHERE relid = 'nop'::regclass;
SELECT count(*) AS still_1 FROM nop;

-- other roles: the owner's table with a filter that records who runs it
-- and tries what only a superuser may
CREATE SCHEMA h AUTHORIZATION ttl_pv_owner;
GRANT USAGE ON SCHEMA h, pv TO PUBLIC;
SET ROLE ttl_pv_owner;
CREATE TABLE h.seen (by_user name, by_session name, tried text);
-- the filter calls the built-in to_jsonb(), which calls the owner's cast of
-- her enum to json: volatile code the filter's check does not see
CREATE TYPE h.mood AS ENUM ('calm', 'angry');
CREATE FUNCTION h.mood_json(m h.mood) RETURNS json LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		EXECUTE 'CREATE ROLE ttl_pv_evil SUPERUSER';
		INSERT INTO h.seen VALUES (current_user, session_user, 'created a role');
	EXCEPTION WHEN others THEN
		INSERT INTO h.seen VALUES (current_user, session_user, SQLSTATE);
	END;
	RETURN pg_catalog.to_json(m::text);
END $$;
CREATE CAST (h.mood AS json) WITH FUNCTION h.mood_json(h.mood);
CREATE TABLE h.t (k h.mood, ts timestamptz);
INSERT INTO h.t VALUES ('calm', '2020-01-01'), ('calm', '2020-01-02'), ('calm', '2999-01-01');
SELECT ttl_create_index('h.t', 'ts', '1 day',
						filter => 'pg_catalog.to_jsonb(k) IS NOT NULL') > 0 AS created;
TRUNCATE h.seen;
RESET ROLE;
-- a superuser previews: the owner's function runs as the owner, and fails
SELECT rows FROM ttl_preview('h.t');
SELECT DISTINCT by_user, tried FROM h.seen;
SELECT count(*) AS no_evil_role FROM pg_roles WHERE rolname = 'ttl_pv_evil';
-- a member of the owning role may
SET ROLE ttl_pv_member;
SELECT rows FROM ttl_preview('h.t');
RESET ROLE;
-- an ordinary role may not
SET ROLE ttl_pv_plain;
SELECT rows FROM ttl_preview('h.t');
SELECT rows FROM ttl_preview('pv.d');
RESET ROLE;
SELECT count(*) AS still_3 FROM h.t;

-- odd settings: an evil search_path, a statement_timeout, read-only
CREATE SCHEMA evil;
CREATE FUNCTION evil.count(anyelement) RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint';
CREATE FUNCTION evil.min(anyelement) RETURNS anyelement LANGUAGE sql AS 'SELECT NULL';
CREATE OPERATOR evil.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = pg_catalog.timestamptz_gt);
SET search_path = evil, pv, public;
SET statement_timeout = '30s';
INSERT INTO pv.d VALUES (6, '2020-01-01'), (7, '2020-01-02');
INSERT INTO pv.a VALUES (5, '2020-01-01', 'v@y');
INSERT INTO pv.p VALUES (6, '2023-02-01');
SELECT rows, oldest, newest FROM public.ttl_preview('pv.d');
BEGIN TRANSACTION READ ONLY;
SELECT rows, oldest, newest FROM public.ttl_preview('pv.d');
SELECT rows FROM public.ttl_preview('pv.a');
COMMIT;
SET default_transaction_read_only = on;
SELECT rows FROM public.ttl_preview('pv.p');
RESET default_transaction_read_only;
RESET statement_timeout;
SET search_path = pv, public;
SELECT count(*) AS still_4 FROM d;
SELECT count(*) AS still_1 FROM a WHERE email IS NOT NULL AND ts < '2021-01-01';

SET client_min_messages = warning;
DROP SCHEMA pv, h, evil CASCADE;
DROP EXTENSION ttl_index CASCADE;
DROP ROLE ttl_pv_owner, ttl_pv_member, ttl_pv_plain;
