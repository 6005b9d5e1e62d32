--
-- ttl_anonymize: action 'anonymize' (set_columns), column expiry: after the
-- TTL some columns of a row are reset and the row stays.  As in
-- ttl_expiry_rules.sql, no worker runs here: ttl_runner() applies the
-- policies with the worker's engine.  Rows are placed relative to now()
-- with wide margins, so the results do not depend on how fast it runs.
--
SET client_min_messages = error;
CREATE ROLE ttl_anon_owner;
CREATE ROLE ttl_anon_other;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA anon AUTHORIZATION ttl_anon_owner;
GRANT USAGE ON SCHEMA anon TO ttl_anon_other;
SET ROLE ttl_anon_owner;

-- 1. expired rows get their columns reset; fresh rows and other columns
-- are left alone
CREATE TABLE anon.users (id int PRIMARY KEY, last_seen timestamptz NOT NULL,
	email text, name varchar(20), plan text);
INSERT INTO anon.users VALUES
	(1, now() - interval '3 years', 'a@example.com', 'Ann', 'gold'),
	(2, now() - interval '1 year', 'b@example.com', 'Bob', 'free'),
	(3, now() - interval '5 years', 'c@example.com', 'Cy', 'free'),
	(4, now() - interval '3 years', NULL, 'erased', 'gold');
-- counts the row-level UPDATEs the policy makes
CREATE TABLE anon.fired (id int, at_role name);
CREATE FUNCTION anon.count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO anon.fired VALUES (NEW.id, current_user);
	RETURN NEW;
END $$;
CREATE TRIGGER users_count BEFORE UPDATE ON anon.users
	FOR EACH ROW EXECUTE FUNCTION anon.count_update();
SELECT ttl_create_index('anon.users', 'last_seen', interval '730 days',
	set_columns => $$email = NULL, name = 'erased'$$) > 0 AS created;
-- stored normalized, with explicit casts; the action is implied
SELECT action, set_columns FROM ttl_index_policy WHERE relid = 'anon.users'::regclass;
-- the index is partial: a row whose columns are already reset is not in it
SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
 WHERE i.indrelid = 'anon.users'::regclass AND NOT i.indisprimary;
SELECT ttl_runner();
SELECT id, email, name, plan, last_seen < now() - interval '730 days' AS expired
  FROM anon.users ORDER BY id;
-- row 4 was done already: never read, never updated
SELECT id, count(*) AS updates FROM anon.fired GROUP BY id ORDER BY id;
-- (no shared memory without shared_preload_libraries: rows_anonymized is
-- counted in the TAP tests)
SELECT table_name, action, set_columns FROM ttl_index_stats
 WHERE table_name = 'anon.users'::regclass;
-- done rows are never read again: a second pass updates nothing
SELECT ttl_runner();
SELECT count(*) AS updates FROM anon.fired;
-- a done row that is changed again is pending again
UPDATE anon.users SET email = 'again@example.com' WHERE id = 1;
TRUNCATE anon.fired;
SELECT ttl_runner();
SELECT id, email, name FROM anon.users WHERE id = 1;
SELECT id, count(*) AS updates FROM anon.fired GROUP BY id ORDER BY id;
-- an existing plain index is replaced by the partial one
CREATE TABLE anon.visits (id int PRIMARY KEY, at timestamptz, ip inet, agent text);
CREATE INDEX visits_at ON anon.visits (at);
SELECT ttl_create_index('anon.visits', 'at', 3600, set_columns => 'ip = NULL') > 0 AS created;
SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 'anon.visits'::regclass
   AND NOT indisprimary ORDER BY 1;

-- 2. a BEFORE UPDATE trigger and row-level security apply, as to an UPDATE
-- by the owner
CREATE TABLE anon.notes (id int PRIMARY KEY, at timestamptz, body text, secret boolean);
INSERT INTO anon.notes SELECT g, now() - interval '2 hours', 'note ' || g, g % 2 = 0
  FROM generate_series(1, 6) g;
CREATE FUNCTION anon.keep_five() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.id = 5 THEN
		RETURN NULL;			-- the trigger keeps row 5 as it is
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER notes_keep BEFORE UPDATE ON anon.notes
	FOR EACH ROW EXECUTE FUNCTION anon.keep_five();
ALTER TABLE anon.notes ENABLE ROW LEVEL SECURITY;
ALTER TABLE anon.notes FORCE ROW LEVEL SECURITY;
CREATE POLICY notes_read ON anon.notes FOR SELECT USING (true);
-- the owner may update only the rows that are not secret
CREATE POLICY notes_upd ON anon.notes FOR UPDATE USING (NOT secret);
SELECT ttl_create_index('anon.notes', 'at', 3600, set_columns => $$body = '[removed]'$$) > 0 AS created;
SELECT ttl_runner();
SELECT id, body, secret FROM anon.notes ORDER BY id;

-- 3. a partitioned table: each partition, with the partial index on each
CREATE TABLE anon.events (id int, at timestamptz NOT NULL, region text NOT NULL,
	payload text, who text) PARTITION BY LIST (region);
CREATE TABLE anon.events_eu PARTITION OF anon.events FOR VALUES IN ('eu');
-- columns in another order: matched by name
CREATE TABLE anon.events_us (who text, payload text, id int, region text NOT NULL,
	at timestamptz NOT NULL);
ALTER TABLE anon.events ATTACH PARTITION anon.events_us FOR VALUES IN ('us');
INSERT INTO anon.events VALUES
	(1, now() - interval '2 days', 'eu', 'p1', 'w1'),
	(2, now() - interval '1 minute', 'eu', 'p2', 'w2'),
	(3, now() - interval '2 days', 'us', 'p3', 'w3'),
	(4, now() - interval '1 minute', 'us', 'p4', 'w4');
SELECT ttl_create_index('anon.events', 'at', interval '1 day',
	set_columns => $$who = 'nobody', payload = NULL$$) > 0 AS created;
SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE i.indrelid IN ('anon.events_eu'::regclass, 'anon.events_us'::regclass) ORDER BY 1;
SELECT ttl_runner();
SELECT tableoid::regclass, id, region, payload, who FROM anon.events ORDER BY id;

-- 4. an inheritance child: its own index, its own rows
CREATE TABLE anon.logs (id int, at timestamptz, msg text);
CREATE TABLE anon.logs_old (extra int) INHERITS (anon.logs);
INSERT INTO anon.logs VALUES (1, now() - interval '2 days', 'parent old'), (2, now(), 'parent new');
INSERT INTO anon.logs_old VALUES (3, now() - interval '2 days', 'child old', 7), (4, now(), 'child new', 8);
SELECT ttl_create_index('anon.logs', 'at', interval '1 day', set_columns => $$msg = ''$$) > 0 AS created;
SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE i.indrelid IN ('anon.logs'::regclass, 'anon.logs_old'::regclass) ORDER BY 1;
SELECT ttl_runner();
SELECT tableoid::regclass, id, msg FROM anon.logs ORDER BY id;
SELECT id, msg, extra FROM anon.logs_old ORDER BY id;

-- 5. ALTER TABLE that would break the policy is refused
ALTER TABLE anon.users RENAME COLUMN email TO mail;
ALTER TABLE anon.users DROP COLUMN name;
ALTER TABLE anon.users ALTER COLUMN name TYPE integer USING 0;
-- a change the value still fits is allowed
ALTER TABLE anon.users ALTER COLUMN name TYPE text;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'anon.users'::regclass AND attnum > 0 ORDER BY attnum;
-- and the policy still finds its (rebuilt) partial index and runs
INSERT INTO anon.users VALUES (5, now() - interval '3 years', 'e@example.com', 'Eve', 'free');
SELECT ttl_runner();
SELECT id, email, name FROM anon.users WHERE id = 5;

-- Bad calls: each fails with a clear error, and nothing changes.
CREATE TEMP TABLE policies_before AS SELECT * FROM ttl_index_policy;
CREATE TABLE anon.t (id int PRIMARY KEY, ts timestamptz, ttl int, code text UNIQUE,
	tag text UNIQUE NULLS NOT DISTINCT, lower_code text,
	name text, other text, doc json, pos point, n int,
	g int GENERATED ALWAYS AS (n * 2) STORED,
	idn int GENERATED BY DEFAULT AS IDENTITY);
CREATE TABLE anon.parts (id int, ts timestamptz, region text, note text) PARTITION BY LIST (region);
CREATE TABLE anon.parts_eu PARTITION OF anon.parts FOR VALUES IN ('eu');
-- the TTL column, the per-row TTL column
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'ts = NULL');
SELECT ttl_create_index('anon.t', 'ts', ttl_column => 'ttl', set_columns => 'ttl = 0');
CREATE UNIQUE INDEX t_lower_code ON anon.t (lower(lower_code));
-- key columns: primary key, unique (NULL is the one value that cannot
-- collide in a unique index, unless its NULLs are not distinct or the
-- column is inside an expression)
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'id = 0');
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => $$code = 'gone'$$);
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'tag = NULL');
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'lower_code = NULL');
-- generated and identity columns
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'g = 0');
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'idn = 0');
-- a partition key column
SELECT ttl_create_index('anon.parts', 'ts', 60, set_columns => $$region = 'eu'$$);
-- a column twice, a missing column, a system column
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => $$name = 'x', name = 'y'$$);
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'nosuch = NULL');
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'xmin = NULL');
-- values: another column, not immutable, the wrong type, a subquery, DEFAULT
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'name = other');
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'name = now()');
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'name = random()::text');
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => $$n = 'abc'::text$$);
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'name = (SELECT 1)');
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'name = DEFAULT');
-- types without an equality operator
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'doc = NULL');
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'pos = NULL');
-- set_columns with another action, action 'anonymize' without it
SELECT ttl_create_index('anon.t', 'ts', 60, action => 'delete', set_columns => 'name = NULL');
SELECT ttl_create_index('anon.t', 'ts', 60, action => 'anonymize');
-- empty, or not a SET list
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => '');
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'name');
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => $$name = 'x' WHERE true$$);
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => $$name = 'x'; DROP TABLE anon.t$$);
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => '(name, other) = (NULL, NULL)');
-- max_rows leaves no room for a row that stays
SELECT ttl_create_index('anon.t', 'ts', 60, max_rows => 10, set_columns => 'name = NULL');
SELECT count(*) AS changed FROM (
	(SELECT * FROM ttl_index_policy EXCEPT SELECT * FROM policies_before)
	UNION ALL
	(SELECT * FROM policies_before EXCEPT SELECT * FROM ttl_index_policy)) d;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'anon.t'::regclass;

-- a unique column set to NULL: the GDPR case, every expired row's email
-- erased, none colliding
SET ROLE ttl_anon_owner;
CREATE TABLE anon.members (id int PRIMARY KEY, joined timestamptz, email text UNIQUE);
INSERT INTO anon.members VALUES (1, now() - interval '3 hours', 'a@example.com'),
	(2, now() - interval '3 hours', 'b@example.com'), (3, now(), 'c@example.com');
SELECT ttl_create_index('anon.members', 'joined', 3600, set_columns => 'email = NULL') > 0 AS created;
SELECT ttl_runner();
SELECT id, email FROM anon.members ORDER BY id;
SELECT ttl_drop_index('anon.members', 'joined');
RESET ROLE;

-- 6. other roles
RESET ROLE;
-- a role that does not own the table may not make the policy
SET ROLE ttl_anon_other;
SELECT ttl_create_index('anon.t', 'ts', 60, set_columns => 'name = NULL');
-- and its ttl_runner() runs no policy on the owner's tables
SELECT ttl_runner();
RESET ROLE;
SELECT count(*) AS changed FROM (
	(SELECT * FROM ttl_index_policy EXCEPT SELECT * FROM policies_before)
	UNION ALL
	(SELECT * FROM policies_before EXCEPT SELECT * FROM ttl_index_policy)) d;
-- another role's table with a BEFORE UPDATE trigger: run by a superuser's
-- ttl_runner(), the UPDATE and its trigger run as that table's owner
CREATE SCHEMA other AUTHORIZATION ttl_anon_other;
SET ROLE ttl_anon_other;
CREATE TABLE other.accounts (id int PRIMARY KEY, at timestamptz, phone text);
CREATE TABLE other.seen (id int, by_role name, super boolean);
CREATE FUNCTION other.who() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO other.seen SELECT NEW.id, current_user, rolsuper
	  FROM pg_roles WHERE rolname = current_user;
	RETURN NEW;
END $$;
CREATE TRIGGER accounts_who BEFORE UPDATE ON other.accounts
	FOR EACH ROW EXECUTE FUNCTION other.who();
INSERT INTO other.accounts VALUES (1, now() - interval '2 hours', '555-0100'),
	(2, now(), '555-0101');
SELECT ttl_create_index('other.accounts', 'at', 3600, set_columns => 'phone = NULL') > 0 AS created;
RESET ROLE;
SELECT ttl_runner() >= 1 AS ran;
SELECT id, phone FROM other.accounts ORDER BY id;
SELECT id, by_role, super FROM other.seen ORDER BY id;

-- dropping the policy drops its partial index
SET ROLE ttl_anon_owner;
SELECT ttl_drop_index('anon.users', 'last_seen');
SELECT count(*) AS left_indexes FROM pg_index
 WHERE indrelid = 'anon.users'::regclass AND NOT indisprimary;
RESET ROLE;

DROP TABLE policies_before;
SET client_min_messages = warning;
DROP EXTENSION ttl_index CASCADE;
DROP SCHEMA anon CASCADE;
DROP SCHEMA other CASCADE;
RESET client_min_messages;
DROP ROLE ttl_anon_other;
DROP ROLE ttl_anon_owner;
