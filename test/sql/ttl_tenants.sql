--
-- ttl_tenants: on a server many roles share, no role reaches another
-- role's rows, rights or purge through ttl_index's objects.  ttl_runner()
-- purges, on a server without the library preloaded (test/t/023_tenants.pl
-- covers the worker, the database hooks and the owner's settings).
--
SET client_min_messages = warning;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE ROLE ttl_t_owner;
CREATE ROLE ttl_t_other;
CREATE ROLE ttl_t_group;
GRANT ttl_t_group TO ttl_t_owner;
CREATE SCHEMA ten AUTHORIZATION ttl_t_owner;
GRANT USAGE, CREATE ON SCHEMA ten TO ttl_t_other, ttl_t_group;
SET search_path = ten, public;

-- The inventory: every function of the extension, whether it runs as its
-- owner (SECURITY DEFINER) and whether every role may call it.  Only the
-- two event trigger functions are SECURITY DEFINER (they write the catalog
-- for whoever runs the DDL, and cannot be called directly); the catalog's
-- trigger functions and the internal functions are not for PUBLIC.
SELECT p.oid::regprocedure AS function, p.prosecdef AS definer,
	   p.proacl IS NULL OR EXISTS (SELECT FROM aclexplode(p.proacl) a
								   WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE') AS public
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'ttl_index'
 ORDER BY p.proname, p.oid::regprocedure::text;
-- and its tables and views: readable by all, written by none but itself
SELECT c.oid::regclass AS relation, c.relkind,
	   EXISTS (SELECT FROM aclexplode(c.relacl) a WHERE a.grantee = 0 AND a.privilege_type = 'SELECT') AS public_select,
	   EXISTS (SELECT FROM aclexplode(c.relacl) a WHERE a.grantee = 0 AND a.privilege_type <> 'SELECT') AS public_write
  FROM pg_class c
  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'ttl_index'
 ORDER BY c.relname;

-- A role cannot attach the catalog's trigger functions to a table of its
-- own (a look-alike table would have them act on the real catalog)
SET ROLE ttl_t_other;
CREATE TABLE ten.lookalike (id serial, relid regclass, column_name name);
CREATE TRIGGER sync AFTER INSERT ON ten.lookalike
	FOR EACH ROW EXECUTE FUNCTION ttl_index_citus_sync();
CREATE TRIGGER wake AFTER INSERT ON ten.lookalike
	FOR EACH STATEMENT EXECUTE FUNCTION ttl_index_policy_changed();
CREATE TRIGGER resolve BEFORE INSERT ON ten.lookalike
	FOR EACH ROW EXECUTE FUNCTION ttl_index_policy_resolve();
SELECT ttl_index_installed();
RESET ROLE;
-- and where a superuser attaches one by mistake, it refuses to act
CREATE TRIGGER wake AFTER INSERT ON ten.lookalike
	FOR EACH STATEMENT EXECUTE FUNCTION ttl_index_policy_changed();
INSERT INTO ten.lookalike (relid, column_name) VALUES ('ten.lookalike', 'id');
DROP TRIGGER wake ON ten.lookalike;
CREATE TRIGGER sync AFTER INSERT ON ten.lookalike
	FOR EACH ROW EXECUTE FUNCTION ttl_index_citus_sync();
INSERT INTO ten.lookalike (relid, column_name) VALUES ('ten.lookalike', 'id');
DROP TRIGGER sync ON ten.lookalike;
CREATE TRIGGER resolve BEFORE INSERT ON ten.lookalike
	FOR EACH ROW EXECUTE FUNCTION ttl_index_policy_resolve();
INSERT INTO ten.lookalike (relid, column_name) VALUES ('ten.lookalike', 'id');
SELECT count(*) FROM ten.lookalike;

-- The extension's own tables take no policy (one on the catalog would
-- purge the policies)
SELECT ttl_create_index('ttl_index_policy', 'created_at', 60);
SELECT count(*) FROM ttl_index_policy;

-- A role may archive only into a table its table's owner owns: INSERT on
-- another role's table is not enough (that role could then neither drop
-- nor alter its own table)
SET ROLE ttl_t_other;
CREATE TABLE ten.others_archive (id int, ts timestamptz);
GRANT INSERT ON ten.others_archive TO ttl_t_owner;
SET ROLE ttl_t_owner;
CREATE TABLE ten.orders (id int, ts timestamptz NOT NULL);
SELECT ttl_create_index('ten.orders', 'ts', 60, archive_table => 'ten.others_archive');
SELECT count(*) FROM ttl_index_policy WHERE relid = 'ten.orders'::regclass;
-- its own table is fine, and so is one of a role it belongs to
CREATE TABLE ten.own_archive (id int, ts timestamptz);
SELECT ttl_create_index('ten.orders', 'ts', 60, archive_table => 'ten.own_archive') > 0 AS ok;
SET ROLE ttl_t_group;
CREATE TABLE ten.group_archive (id int, ts timestamptz);
GRANT INSERT ON ten.group_archive TO ttl_t_owner;
SET ROLE ttl_t_owner;
CREATE TABLE ten.lines (id int, ts timestamptz NOT NULL);
SELECT ttl_create_index('ten.lines', 'ts', 60, archive_table => 'ten.group_archive') > 0 AS ok;
RESET ROLE;
-- giving the archive table away is refused while the policy exists
ALTER TABLE ten.own_archive OWNER TO ttl_t_other;
SELECT relowner::regrole FROM pg_class WHERE oid = 'ten.own_archive'::regclass;
-- the group's table leaves the owner's reach (the owner leaves the group):
-- the group's own DDL on it is not refused for the owner's policy, which
-- is paused instead
REVOKE ttl_t_group FROM ttl_t_owner;
SET ROLE ttl_t_group;
ALTER TABLE ten.group_archive DROP COLUMN ts;
SELECT enabled FROM ttl_index_policy WHERE relid = 'ten.lines'::regclass;
DROP TABLE ten.group_archive;
SELECT enabled FROM ttl_index_policy WHERE relid = 'ten.lines'::regclass;
RESET ROLE;
-- the owner's own archive table is the owner's to keep: dropping it is
-- refused while the policy exists
SET ROLE ttl_t_owner;
DROP TABLE ten.own_archive;
SELECT ttl_drop_index('ten.lines', 'ts');
RESET ROLE;

-- A trigger that calls ttl_runner() inside a purge is refused (the purge
-- in hand would count its rows again); the rows go once, counted once
CREATE TABLE ten.refusals (msg text);
CREATE TABLE ten.nested (id int, ts timestamptz NOT NULL);
CREATE FUNCTION ten.nested_runner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM ttl_runner();
	RETURN OLD;
EXCEPTION WHEN object_not_in_prerequisite_state THEN
	INSERT INTO ten.refusals VALUES (SQLERRM);
	RETURN OLD;
END $$;
CREATE TRIGGER nested_runner BEFORE DELETE ON ten.nested
	FOR EACH ROW EXECUTE FUNCTION ten.nested_runner();
INSERT INTO ten.nested SELECT g, now() - interval '1 day' FROM generate_series(1, 3) g;
SELECT ttl_create_index('ten.nested', 'ts', 60) > 0 AS ok;
SELECT ttl_runner();
SELECT count(*) FROM ten.nested;
SELECT msg, count(*) FROM ten.refusals GROUP BY msg;
SELECT ttl_drop_index('ten.nested', 'ts');

-- The owner without USAGE on the table's schema: its own DELETE would be
-- refused, so is the purge, and the rows stay
CREATE SCHEMA ten_hidden;
CREATE TABLE ten_hidden.t (ts timestamptz NOT NULL);
ALTER TABLE ten_hidden.t OWNER TO ttl_t_owner;
GRANT USAGE, CREATE ON SCHEMA ten_hidden TO ttl_t_owner;
INSERT INTO ten_hidden.t VALUES (now() - interval '1 day');
SET ROLE ttl_t_owner;
SELECT ttl_create_index('ten_hidden.t', 'ts', 60) > 0 AS ok;
RESET ROLE;
REVOKE USAGE ON SCHEMA ten_hidden FROM ttl_t_owner;
SELECT ttl_runner();
SELECT count(*) FROM ten_hidden.t;
GRANT USAGE ON SCHEMA ten_hidden TO ttl_t_owner;
SELECT ttl_runner();
DROP SCHEMA ten_hidden CASCADE;

-- The foreign-key pre-check never reads another owner's referencing table
-- as the purging owner: that table's row-level security policy would run
-- with the purging owner's rights
CREATE TABLE ten.seen (who name);
GRANT INSERT ON ten.seen TO PUBLIC;
SET ROLE ttl_t_owner;
CREATE TABLE ten.accounts (id int PRIMARY KEY, ts timestamptz NOT NULL);
GRANT REFERENCES, SELECT ON ten.accounts TO ttl_t_other;
INSERT INTO ten.accounts SELECT g, now() - interval '1 day' FROM generate_series(1, 5) g;
SELECT ttl_create_index('ten.accounts', 'ts', 60) > 0 AS ok;
SET ROLE ttl_t_other;
CREATE TABLE ten.invoices (account int REFERENCES ten.accounts);
GRANT SELECT ON ten.invoices TO ttl_t_owner;
INSERT INTO ten.invoices VALUES (2);
CREATE FUNCTION ten.spy() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ten.seen VALUES (current_user);
	RETURN true;
END $$;
ALTER TABLE ten.invoices ENABLE ROW LEVEL SECURITY;
CREATE POLICY everyone ON ten.invoices USING (ten.spy());
GRANT EXECUTE ON FUNCTION ten.spy() TO PUBLIC;
RESET ROLE;
SET client_min_messages = error;
SELECT ttl_runner();
RESET client_min_messages;
SELECT string_agg(id::text, ',' ORDER BY id) AS left FROM ten.accounts;
SELECT count(*) AS spied_as_owner FROM ten.seen WHERE who = 'ttl_t_owner';
SELECT ttl_drop_index('ten.accounts', 'ts');

-- A policy on a parent purges as the owner's DELETE FROM parent does.
-- Row-level security of a partitioned table decides which rows go, in every
-- partition: rows on legal hold stay, and the partition that holds them is
-- not dropped whole
SET ROLE ttl_t_owner;
CREATE TABLE ten.events (id int, ts timestamptz NOT NULL, hold boolean NOT NULL DEFAULT false)
	PARTITION BY RANGE (ts);
CREATE TABLE ten.events_old PARTITION OF ten.events FOR VALUES FROM ('2000-01-01') TO ('2020-01-01');
CREATE TABLE ten.events_new PARTITION OF ten.events FOR VALUES FROM ('2020-01-01') TO (MAXVALUE);
INSERT INTO ten.events SELECT g, '2010-01-01'::timestamptz + g * interval '1 day', g IN (2, 4)
  FROM generate_series(1, 5) g;
INSERT INTO ten.events SELECT g, now() - interval '1 day', g = 7 FROM generate_series(6, 10) g;
ALTER TABLE ten.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE ten.events FORCE ROW LEVEL SECURITY;
CREATE POLICY see ON ten.events FOR SELECT USING (true);
CREATE POLICY hold ON ten.events FOR DELETE USING (NOT hold);
SELECT ttl_create_index('ten.events', 'ts', 3600) > 0 AS ok;
-- and its statement-level trigger fires, seeing every row deleted
CREATE TABLE ten.events_audit (n bigint);
CREATE FUNCTION ten.events_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ten.events_audit SELECT count(*) FROM gone;
	RETURN NULL;
END $$;
CREATE TRIGGER events_audit AFTER DELETE ON ten.events
	REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION ten.events_audit();
RESET ROLE;
SELECT ttl_runner();
SELECT string_agg(id::text, ',' ORDER BY id) AS left FROM ten.events;
SELECT sum(n) AS audited FROM ten.events_audit;
SELECT count(*) AS old_partition_kept FROM pg_class WHERE oid = 'ten.events_old'::regclass;

-- A partition of another owner's, which the owner may not delete from
-- directly: purged through the parent, as the owner's DELETE FROM parent
-- would; one whose trigger refuses the owner is left alone, held, and the
-- partitions after it are purged
SET ROLE ttl_t_owner;
CREATE TABLE ten.logs (id int, ts timestamptz NOT NULL) PARTITION BY LIST (id);
CREATE TABLE ten.logs_1 PARTITION OF ten.logs FOR VALUES IN (1);
CREATE TABLE ten.logs_2 PARTITION OF ten.logs FOR VALUES IN (2);
CREATE TABLE ten.logs_3 PARTITION OF ten.logs FOR VALUES IN (3);
INSERT INTO ten.logs SELECT g % 3 + 1, now() - interval '1 day' FROM generate_series(1, 9) g;
SELECT ttl_create_index('ten.logs', 'ts', 3600) > 0 AS ok;
RESET ROLE;
ALTER TABLE ten.logs_1 OWNER TO ttl_t_other;
REVOKE ALL ON ten.logs_1 FROM ttl_t_owner;
CREATE FUNCTION ten.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'not for you' USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER refuse BEFORE DELETE ON ten.logs_2 FOR EACH ROW EXECUTE FUNCTION ten.refuse();
SELECT ttl_runner();
SELECT tableoid::regclass AS partition, count(*) FROM ten.logs GROUP BY 1 ORDER BY 1;

-- DO ALSO rules of an inheritance parent see its children's rows too
SET ROLE ttl_t_owner;
CREATE TABLE ten.docs (id int, ts timestamptz NOT NULL);
CREATE TABLE ten.docs_2020 () INHERITS (ten.docs);
CREATE TABLE ten.docs_gone (id int);
CREATE RULE docs_gone AS ON DELETE TO ten.docs DO ALSO INSERT INTO ten.docs_gone VALUES (old.id);
INSERT INTO ten.docs SELECT g, now() - interval '1 day' FROM generate_series(1, 3) g;
INSERT INTO ten.docs_2020 SELECT g, now() - interval '1 day' FROM generate_series(4, 6) g;
SELECT ttl_create_index('ten.docs', 'ts', 3600) > 0 AS ok;
RESET ROLE;
SELECT ttl_runner();
SELECT count(*) AS docs_left FROM ten.docs;
SELECT string_agg(id::text, ',' ORDER BY id) AS gone FROM ten.docs_gone;

-- The importer reads a copy of pg_ttl_index's table without running its
-- owner's code: a cast to json of a type of theirs, a domain's check, a
-- partial index's predicate run nothing as the superuser who imports
TRUNCATE ten.seen;
CREATE TABLE ten.imported (ts timestamptz NOT NULL);
ALTER TABLE ten.imported OWNER TO ttl_t_owner;
SET ROLE ttl_t_other;
CREATE TYPE ten.mark AS (a int);
CREATE FUNCTION ten.mark_json(ten.mark) RETURNS json LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ten.seen VALUES (current_user);
	RETURN '{}';
END $$;
CREATE CAST (ten.mark AS json) WITH FUNCTION ten.mark_json(ten.mark);
CREATE FUNCTION ten.spy_immutable() RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	RETURN ten.spy();
END $$;
CREATE DOMAIN ten.name_text AS text CHECK (ten.spy());
CREATE TABLE ten.copy (table_name ten.name_text, column_name text, expire_after_seconds integer,
					   batch_size integer, active boolean, extra ten.mark);
INSERT INTO ten.copy VALUES ('ten.imported', 'ts', 60, 2000000, true, ROW(1));
CREATE INDEX copy_spy ON ten.copy (expire_after_seconds) WHERE ten.spy_immutable();
GRANT SELECT ON ten.copy TO ttl_t_owner;
RESET ROLE;
-- handed over to the table's owner (a copy names only its owner's tables)
ALTER TABLE ten.copy OWNER TO ttl_t_owner;
TRUNCATE ten.seen;
SELECT table_name, column_name, expire_after, batch_size, status
  FROM ttl_import_pg_ttl_index('ten.copy', dry_run => true);
SELECT count(*) AS code_run FROM ten.seen;
-- a batch size above ours is clamped, and said so
SET ROLE ttl_t_owner;
SELECT table_name, batch_size, status FROM ttl_import_pg_ttl_index('ten.copy');
RESET ROLE;
-- row-level security on the copy that applies to the reader: refused,
-- rather than run its policies as the reader
ALTER TABLE ten.copy OWNER TO ttl_t_other;
SET ROLE ttl_t_other;
ALTER TABLE ten.copy ENABLE ROW LEVEL SECURITY;
CREATE POLICY spy ON ten.copy USING (ten.spy());
RESET ROLE;
SET ROLE ttl_t_owner;
SELECT * FROM ttl_import_pg_ttl_index('ten.copy');
RESET ROLE;
-- a column of a type that is not built in: refused
CREATE TABLE ten.copy2 (table_name text, column_name text, expire_after_seconds integer, batch_size ten.mark);
SELECT * FROM ttl_import_pg_ttl_index('ten.copy2');
-- an empty copy imports nothing, and says so
CREATE TABLE ten.copy3 (table_name text, column_name text, expire_after_seconds integer);
SELECT * FROM ttl_import_pg_ttl_index('ten.copy3');

-- a copy another role owns names only tables of that role: the owner of
-- ten.ledger did not write it, so its table keeps no policy and its index
-- stays its own
CREATE TABLE ten.ledger (id int, ts timestamptz NOT NULL);
CREATE UNIQUE INDEX ledger_uq ON ten.ledger (ts, id);
ALTER TABLE ten.ledger OWNER TO ttl_t_owner;
SET ROLE ttl_t_other;
CREATE TABLE ten.copy4 (schema_name text, table_name text, column_name text,
						expire_after_seconds bigint, index_name text,
						index_created_by_extension boolean);
INSERT INTO ten.copy4 VALUES ('ten', 'ledger', 'ts', 1, 'ledger_uq', true);
RESET ROLE;
SELECT table_name, status FROM ttl_import_pg_ttl_index('ten.copy4');
SELECT count(*) AS ledger_policies FROM ttl_index_policy WHERE relid = 'ten.ledger'::regclass;
SELECT obj_description('ten.ledger_uq'::regclass, 'pg_class') AS ledger_uq_comment;

-- The policies above rest: the runner's warnings below are the sections'
SELECT count(ttl_pause(relid::regclass, column_name)) > 0 AS paused FROM ttl_index_policy;

-- A function another role creates after the policy, matching the
-- filter's call better than the one it was made with, is not run: the
-- batch fails, saying so, and the rows wait
SET ROLE ttl_t_owner;
CREATE FUNCTION ten.present(v anyelement) RETURNS boolean LANGUAGE sql IMMUTABLE
	AS $$ SELECT v IS NOT NULL $$;
CREATE TABLE ten.visits (ts timestamptz NOT NULL, tag varchar(10));
INSERT INTO ten.visits SELECT now() - interval '3 days', 't' FROM generate_series(1, 3);
SELECT ttl_create_index('ten.visits', 'ts', 3600, filter => 'ten.present(tag)') > 0 AS ok;
SET ROLE ttl_t_other;
CREATE FUNCTION ten.present(v varchar) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
	INSERT INTO ten.seen VALUES (current_user);
	RETURN true;
END $$;
RESET ROLE;
TRUNCATE ten.seen;
SELECT ttl_runner();
SELECT count(*) AS visits_left, (SELECT count(*) FROM ten.seen) AS code_run FROM ten.visits;
-- once that function is gone, the rows go
SET ROLE ttl_t_other;
DROP FUNCTION ten.present(varchar);
RESET ROLE;
SELECT ttl_runner();
SELECT count(*) AS visits_left FROM ten.visits;
-- The functions are recorded as signatures, schema-qualified, argument
-- types too (pg_dump and pg_upgrade keep names, not function OIDs).  One
-- that names nothing any more (a type gone) reads as no function: the
-- policy's batch refuses the call, and the catalog is still read.
SELECT filter_functions FROM ttl_index_policy WHERE relid = 'ten.visits'::regclass;
INSERT INTO ten.visits SELECT now() - interval '3 days', 't' FROM generate_series(1, 2);
UPDATE ttl_index_policy SET filter_functions = '{"ten.present(ten.no_such_type)"}'
 WHERE relid = 'ten.visits'::regclass;
SELECT ttl_runner();
SELECT count(*) AS visits_left FROM ten.visits;
-- nor does a bare OID (after a dump or pg_upgrade it names another function)
UPDATE ttl_index_policy
   SET filter_functions = ARRAY[(SELECT p.oid::text FROM pg_proc p
								  WHERE p.proname = 'present'
									AND p.pronamespace = 'ten'::regnamespace)]
 WHERE relid = 'ten.visits'::regclass;
SELECT ttl_runner();
SELECT count(*) AS visits_left FROM ten.visits;
SELECT ttl_create_index('ten.visits', 'ts', 3600, filter => 'ten.present(tag)') > 0 AS ok;
SELECT filter_functions FROM ttl_index_policy WHERE relid = 'ten.visits'::regclass;
SELECT ttl_runner();
SELECT count(*) AS visits_left FROM ten.visits;

-- The statement calls the extension's own ttl_expires_at(), whatever
-- another role adds beside it taking the row's own types
SET ROLE ttl_t_owner;
CREATE TABLE ten.tokens (issued timestamptz NOT NULL, ttl integer NOT NULL);
INSERT INTO ten.tokens SELECT now() - interval '2 hours', 60 FROM generate_series(1, 3);
SELECT ttl_create_index('ten.tokens', 'issued', ttl_column => 'ttl') > 0 AS ok;
RESET ROLE;
GRANT CREATE ON SCHEMA public TO ttl_t_other;
SET ROLE ttl_t_other;
CREATE FUNCTION public.ttl_expires_at(base timestamptz, ttl integer) RETURNS timestamptz
	LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	INSERT INTO ten.seen VALUES (current_user);
	RETURN base;
END $$;
RESET ROLE;
TRUNCATE ten.seen;
SELECT ttl_runner();
SELECT count(*) AS tokens_left, (SELECT count(*) FROM ten.seen) AS code_run FROM ten.tokens;
DROP FUNCTION public.ttl_expires_at(timestamptz, integer);
REVOKE CREATE ON SCHEMA public FROM ttl_t_other;

-- An index whose text shows the cast explicitly (as pg_dump writes it, and
-- as ALTER COLUMN ... TYPE rebuilds it) is the policy's index
SET ROLE ttl_t_owner;
CREATE TABLE ten.tokens2 (issued timestamptz NOT NULL, ttl smallint NOT NULL);
CREATE INDEX tokens2_exp ON ten.tokens2 (ttl_expires_at(issued, (ttl)::bigint));
SELECT ttl_create_index('ten.tokens2', 'issued', ttl_column => 'ttl') > 0 AS ok;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'ten.tokens2'::regclass;
ALTER TABLE ten.tokens2 ALTER COLUMN ttl TYPE integer;
INSERT INTO ten.tokens2 SELECT now() - interval '2 hours', 60 FROM generate_series(1, 3);
RESET ROLE;
SELECT ttl_runner();
SELECT count(*) AS tokens2_left FROM ten.tokens2;

-- A parent's owner does not drop the indexes of a child another role owns
-- (here the child's own TTL index)
SET ROLE ttl_t_other;
CREATE TABLE ten.child (ts timestamptz NOT NULL, extra text);
SELECT ttl_create_index('ten.child', 'ts', 3600) > 0 AS ok;
RESET ROLE;
CREATE TABLE ten.parent (ts timestamptz NOT NULL);
ALTER TABLE ten.parent OWNER TO ttl_t_owner;
ALTER TABLE ten.child INHERIT ten.parent;
SET ROLE ttl_t_owner;
SELECT ttl_create_index('ten.parent', 'ts', 7200) > 0 AS ok;
SELECT ttl_drop_index('ten.parent', 'ts');
RESET ROLE;
SELECT indexrelid::regclass AS child_index FROM pg_index WHERE indrelid = 'ten.child'::regclass;

-- ttl_runner() runs the owner's code in its caller's session: the caller's
-- custom settings (SET ops.token) are not the owner's to read
SET ROLE ttl_t_owner;
CREATE TABLE ten.peek (ts timestamptz NOT NULL);
CREATE TABLE ten.peeked (token text);
CREATE FUNCTION ten.peek() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ten.peeked VALUES (current_setting('ops.token', true));
	RETURN NULL;
END $$;
CREATE TRIGGER peek AFTER DELETE ON ten.peek FOR EACH STATEMENT EXECUTE FUNCTION ten.peek();
INSERT INTO ten.peek VALUES (now() - interval '2 hours');
SELECT ttl_create_index('ten.peek', 'ts', 3600) > 0 AS ok;
RESET ROLE;
SET ops.token = 'the caller''s secret';
SELECT ttl_runner();
SELECT coalesce(token, '(null)') AS token_seen FROM ten.peeked;
SHOW ops.token;
RESET ops.token;

SET client_min_messages = warning;
DROP SCHEMA ten CASCADE;
DROP EXTENSION ttl_index;
RESET client_min_messages;
DROP ROLE ttl_t_owner;
DROP ROLE ttl_t_other;
DROP ROLE ttl_t_group;
