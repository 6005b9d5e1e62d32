--
-- ttl_views_owner_code: the monitoring views in a reader's session never
-- run, parse or resolve a policy's owner code (filter, set_columns), and
-- no policy makes them fail.  Three hostile or broken policies beside a
-- plain one, read by a plain role, by a member of pg_read_all_stats and by
-- a superuser:
--   a. a filter calling a function in the owner's private schema
--      (readers may not use it: "permission denied for schema a");
--   b. a filter whose built-in to_jsonb() dispatches to the owner's cast of
--      her enum to json, which records who ran it, then sets exit_on_error
--      and raises: run in the reader's backend, it ends the session;
--   c. broken policies: a filter function dropped after the policy was
--      made, and an anonymize policy with a unique index on its set
--      column (if the index is accepted).
-- No worker runs here (no shared_preload_libraries): the figures the
-- views take from the worker are absent, and backlog_reason says so.
--
SET client_min_messages = error;
CREATE ROLE ttl_views_owner;
CREATE ROLE ttl_views_plain;
CREATE ROLE ttl_views_stats IN ROLE pg_read_all_stats;
CREATE EXTENSION ttl_index;
RESET client_min_messages;

-- a. a private schema
CREATE SCHEMA a AUTHORIZATION ttl_views_owner;
SET ROLE ttl_views_owner;
CREATE FUNCTION a.ok(int) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT $1 > 0';
CREATE TABLE a.t (id int, ts timestamptz NOT NULL);
INSERT INTO a.t SELECT g, now() - interval '2 hours' FROM generate_series(1, 10) g;
RESET ROLE;
SELECT ttl_create_index('a.t', 'ts', 60, filter => 'a.ok(id)') > 0 AS created;

-- b. the owner's cast of her enum to json, armed once the policy exists
CREATE SCHEMA b AUTHORIZATION ttl_views_owner;
GRANT USAGE ON SCHEMA b TO PUBLIC;
SET ROLE ttl_views_owner;
CREATE TYPE b.mood AS ENUM ('calm', 'angry');
CREATE TABLE b.armed (on_ boolean);
CREATE TABLE b.ran (by_session name);
GRANT INSERT ON b.ran TO PUBLIC;
CREATE FUNCTION b.mood_json(m b.mood) RETURNS json LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT FROM b.armed) THEN
		INSERT INTO b.ran VALUES (session_user);
		SET exit_on_error = on;
		RAISE EXCEPTION 'the owner''s cast ran in %''s session', session_user;
	END IF;
	RETURN pg_catalog.to_json(m::text);
END $$;
CREATE CAST (b.mood AS json) WITH FUNCTION b.mood_json(b.mood);
CREATE TABLE b.t (k b.mood, ts timestamptz NOT NULL);
INSERT INTO b.t SELECT 'calm', now() - interval '2 hours' FROM generate_series(1, 10);
RESET ROLE;
SELECT ttl_create_index('b.t', 'ts', 60, filter => 'pg_catalog.to_jsonb(k) IS NOT NULL') > 0 AS created;
INSERT INTO b.armed VALUES (true);

-- c. a filter whose function is dropped (with the policy's partial index
-- on it), and an anonymize policy with a unique index on its set column
CREATE TABLE public.c (id int, ts timestamptz NOT NULL, email text);
CREATE FUNCTION public.keep(int) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT $1 > 0';
INSERT INTO public.c SELECT g, now() - interval '2 hours', 'x' FROM generate_series(1, 10) g;
SELECT ttl_create_index('public.c', 'ts', 60, filter => 'public.keep(id)') > 0 AS created;
DROP FUNCTION public.keep(int) CASCADE;
CREATE TABLE public.anon (id int, ts timestamptz NOT NULL, email text);
INSERT INTO public.anon SELECT g, now() - interval '2 hours', 'x' || g FROM generate_series(1, 10) g;
SELECT ttl_create_index('public.anon', 'ts', 60, set_columns => $$email = 'erased'$$) > 0 AS created;
-- a unique index on the set column breaks the policy (or is refused)
DO $$
BEGIN
	CREATE UNIQUE INDEX anon_email ON public.anon (email);
EXCEPTION WHEN others THEN
	NULL;
END $$;

-- d. a plain policy: its figures are read from the table now
CREATE TABLE public.plain (ts timestamptz NOT NULL);
INSERT INTO public.plain SELECT now() - interval '2 hours' FROM generate_series(1, 10);
SELECT ttl_create_index('public.plain', 'ts', 60) > 0 AS created;
ANALYZE public.plain;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO PUBLIC;

-- Every view answers every reader, with one row per policy; the plain
-- policy's figures are there for those who may see them; the others' are
-- NULL, with the reason.
CREATE FUNCTION public.ttl_views_check() RETURNS TABLE (
	tbl regclass, lag_2h boolean, expired_estimate bigint,
	next_expiry_set boolean, backlog_reason text)
LANGUAGE sql AS $$
	SELECT table_name, lag > interval '1 hour', expired_estimate,
		   next_expiry IS NOT NULL, backlog_reason
	  FROM ttl_index_stats ORDER BY policy_id
$$;
SET ROLE ttl_views_plain;
SELECT * FROM ttl_views_check();
SELECT table_name, total_rows_deleted FROM ttl_summary() ORDER BY 1;
SELECT count(*) FROM ttl_index_policy_stats();
SELECT count(*) FROM ttl_index_policy_health();
RESET ROLE;
SET ROLE ttl_views_stats;
SELECT * FROM ttl_views_check();
SELECT table_name, total_rows_deleted FROM ttl_summary() ORDER BY 1;
SELECT count(*) FROM ttl_index_policy_stats();
SELECT count(*) FROM ttl_index_policy_health();
RESET ROLE;
SELECT * FROM ttl_views_check();
SELECT table_name, total_rows_deleted FROM ttl_summary() ORDER BY 1;
SELECT count(*) FROM ttl_index_policy_stats();
SELECT count(*) FROM ttl_index_policy_health();

-- the owner's cast never ran in a reader's session
SELECT count(*) AS cast_ran FROM b.ran;
-- and the session lives on
SELECT current_setting('exit_on_error') AS exit_on_error;

-- the table owner sees her own policies' backlog (the reason says whence)
SET ROLE ttl_views_owner;
SELECT * FROM ttl_views_check() WHERE tbl::text LIKE '_.t';
RESET ROLE;

SET client_min_messages = error;
DROP EXTENSION ttl_index;
DROP SCHEMA a, b CASCADE;
DROP TABLE public.c, public.anon, public.plain;
DROP FUNCTION public.ttl_views_check();
DROP ROLE ttl_views_owner, ttl_views_plain, ttl_views_stats;
