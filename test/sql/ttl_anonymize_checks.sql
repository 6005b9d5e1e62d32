--
-- ttl_anonymize_checks: a set value is checked and stored exactly as its
-- column stores it (set.c), when the policy is made and after any DDL on
-- its table.  The value is coerced with the column's typmod and domain (so
-- the "done" test compares with what the column holds, and a row is
-- updated once); a value the column cannot hold (type, typmod, domain, NOT
-- NULL, a CHECK constraint) or a set column that is unique is refused at
-- ttl_create_index(), and so is the DDL that would make it so (ALTER
-- COLUMN ... TYPE, SET NOT NULL, ADD CHECK, CREATE UNIQUE INDEX, ATTACH
-- PARTITION).  Each refusal shows its error and that nothing changed.
--
SET client_min_messages = error;
CREATE ROLE ttl_anonck_owner;
CREATE EXTENSION ttl_index;
RESET client_min_messages;
CREATE SCHEMA anonck AUTHORIZATION ttl_anonck_owner;
SET ROLE ttl_anonck_owner;

-- 1. the value is stored as the column stores it
CREATE TABLE anonck.m (id int PRIMARY KEY, at timestamptz NOT NULL,
	amount numeric(5,2), seen timestamp(0), code varchar(4), note text);
CREATE TABLE anonck.fired (id int);
CREATE FUNCTION anonck.count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO anonck.fired VALUES (NEW.id);
	RETURN NEW;
END $$;
CREATE TRIGGER m_count AFTER UPDATE ON anonck.m
	FOR EACH ROW EXECUTE FUNCTION anonck.count_update();
INSERT INTO anonck.m SELECT g, now() - interval '2 days', 99.99, '2024-05-05 10:00:00', 'abcd', 'x'
  FROM generate_series(1, 4) g;
SELECT ttl_create_index('anonck.m', 'at', interval '1 day',
	set_columns => $$amount = 1.234, seen = '2020-01-01 00:00:00.7', code = 'zz  '$$) > 0 AS created;
-- 1.234 is stored as 1.23, the fraction as the second it rounds to
SELECT set_columns FROM ttl_index_policy WHERE relid = 'anonck.m'::regclass;
SELECT pg_get_indexdef(indexrelid) FROM pg_index
 WHERE indrelid = 'anonck.m'::regclass AND NOT indisprimary;
SELECT ttl_runner() AS rows;
SELECT id, amount, seen, code FROM anonck.m ORDER BY id;
-- each row is updated once, and is done: a second run updates nothing
SELECT id, count(*) AS updates FROM anonck.fired GROUP BY id ORDER BY id;
SELECT ttl_runner() AS rows;
SELECT count(*) AS updates FROM anonck.fired;
-- a trigger that changes the value again: those rows are not done after
-- their update, and are held (updated once, not counted as anonymized)
CREATE TABLE anonck.k (id int, at timestamptz, email text);
INSERT INTO anonck.k SELECT g, now() - interval '2 days', 'k' || g FROM generate_series(1, 6) g;
CREATE FUNCTION anonck.keep_even() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.id % 2 = 0 THEN
		NEW.email := 'kept';
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER k_keep BEFORE UPDATE ON anonck.k
	FOR EACH ROW EXECUTE FUNCTION anonck.keep_even();
CREATE TRIGGER k_count AFTER UPDATE ON anonck.k
	FOR EACH ROW EXECUTE FUNCTION anonck.count_update();
TRUNCATE anonck.fired;
SELECT ttl_create_index('anonck.k', 'at', interval '1 day', set_columns => $$email = 'erased'$$) > 0 AS created;
SELECT ttl_runner() AS rows;
SELECT id, email FROM anonck.k ORDER BY id;
SELECT id, count(*) AS updates FROM anonck.fired GROUP BY id ORDER BY id;
-- a domain: its value is checked and stored through it
CREATE DOMAIN anonck.short AS varchar(6) CHECK (VALUE <> 'secret');
CREATE TABLE anonck.d (id int, at timestamptz, tag anonck.short);
SELECT ttl_create_index('anonck.d', 'at', 60, set_columns => $$tag = 'gone'$$) > 0 AS created;
SELECT set_columns FROM ttl_index_policy WHERE relid = 'anonck.d'::regclass;

-- 2. values the column cannot hold are refused when the policy is made
CREATE TEMP TABLE policies_before AS SELECT id, relid, set_columns FROM ttl_index_policy;
CREATE TABLE anonck.c (id int, at timestamptz, email varchar(3), name text NOT NULL,
	who text CHECK (who <> 'erased'), n numeric(3,1), tag anonck.short,
	flag text, kind text, CHECK (flag IS NULL OR kind = 'x'));
-- too long for varchar(3)
SELECT ttl_create_index('anonck.c', 'at', 60, set_columns => $$email = 'erased'$$);
-- NULL on a NOT NULL column
SELECT ttl_create_index('anonck.c', 'at', 60, set_columns => 'name = NULL');
-- a CHECK constraint that refuses it
SELECT ttl_create_index('anonck.c', 'at', 60, set_columns => $$who = 'erased'$$);
-- out of range for numeric(3,1)
SELECT ttl_create_index('anonck.c', 'at', 60, set_columns => 'n = 1000');
-- a domain's CHECK and its typmod
SELECT ttl_create_index('anonck.c', 'at', 60, set_columns => $$tag = 'secret'$$);
SELECT ttl_create_index('anonck.c', 'at', 60, set_columns => $$tag = 'much too long'$$);
-- a partition's own NOT NULL and CHECK
CREATE TABLE anonck.p (id int, at timestamptz, region text, note text) PARTITION BY LIST (region);
CREATE TABLE anonck.p_eu PARTITION OF anonck.p (note NOT NULL) FOR VALUES IN ('eu');
CREATE TABLE anonck.p_us PARTITION OF anonck.p (CHECK (note <> 'n/a')) FOR VALUES IN ('us');
SELECT ttl_create_index('anonck.p', 'at', 60, set_columns => 'note = NULL');
SELECT ttl_create_index('anonck.p', 'at', 60, set_columns => $$note = 'n/a'$$);
-- nothing changed: no policy, no index
SELECT count(*) AS policies_changed FROM (
	(SELECT id, relid, set_columns FROM ttl_index_policy EXCEPT SELECT * FROM policies_before)
	UNION ALL
	(SELECT * FROM policies_before EXCEPT SELECT id, relid, set_columns FROM ttl_index_policy)) d;
SELECT count(*) AS indexes FROM pg_index
 WHERE indrelid IN ('anonck.c'::regclass, 'anonck.p_eu'::regclass, 'anonck.p_us'::regclass);
-- a CHECK that also reads another column is left to the rows (held)
SELECT ttl_create_index('anonck.c', 'at', 60, set_columns => $$flag = 'f'$$) > 0 AS created;
-- values the columns hold are taken
SELECT ttl_create_index('anonck.p', 'at', 60, set_columns => $$note = 'gone'$$) > 0 AS created;

-- 3. DDL that would break a policy is refused
CREATE TABLE anonck.u (id int, at timestamptz, email text, code text, nick text);
SELECT ttl_create_index('anonck.u', 'at', 60,
	set_columns => $$email = 'erased', code = NULL, nick = NULL$$) > 0 AS created;
CREATE TEMP TABLE u_before AS
	SELECT (SELECT string_agg(pg_get_indexdef(indexrelid), '; ' ORDER BY indexrelid)
			  FROM pg_index WHERE indrelid = 'anonck.u'::regclass) AS indexes,
		   (SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) ||
							  CASE WHEN attnotnull THEN ' not null' ELSE '' END, ', ' ORDER BY attnum)
			  FROM pg_attribute WHERE attrelid = 'anonck.u'::regclass AND attnum > 0) AS columns,
		   (SELECT count(*) FROM pg_constraint WHERE conrelid = 'anonck.u'::regclass) AS constraints;
-- a unique index on a set column, partial too
CREATE UNIQUE INDEX u_email ON anonck.u (email);
CREATE UNIQUE INDEX u_email_partial ON anonck.u (email) WHERE id > 10;
-- NULLs collide in a unique index whose NULLs are not distinct
CREATE UNIQUE INDEX u_code ON anonck.u (code) NULLS NOT DISTINCT;
-- a type that cannot hold the value
ALTER TABLE anonck.u ALTER COLUMN email TYPE varchar(3);
-- NOT NULL against a NULL value
ALTER TABLE anonck.u ALTER COLUMN code SET NOT NULL;
-- a CHECK that refuses the value
ALTER TABLE anonck.u ADD CONSTRAINT u_no_erased CHECK (email <> 'erased');
ALTER TABLE anonck.u ADD CONSTRAINT u_no_erased CHECK (email <> 'erased') NOT VALID;
-- nothing changed
SELECT u.indexes = b.indexes AS same_indexes, u.columns = b.columns AS same_columns,
	   u.constraints = b.constraints AS same_constraints
  FROM u_before b, (SELECT
	(SELECT string_agg(pg_get_indexdef(indexrelid), '; ' ORDER BY indexrelid)
	   FROM pg_index WHERE indrelid = 'anonck.u'::regclass) AS indexes,
	(SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) ||
					   CASE WHEN attnotnull THEN ' not null' ELSE '' END, ', ' ORDER BY attnum)
	   FROM pg_attribute WHERE attrelid = 'anonck.u'::regclass AND attnum > 0) AS columns,
	(SELECT count(*) FROM pg_constraint WHERE conrelid = 'anonck.u'::regclass) AS constraints) u;
-- what the value still fits is allowed
CREATE UNIQUE INDEX u_code_ok ON anonck.u (code);
CREATE INDEX u_email_plain ON anonck.u (email);
ALTER TABLE anonck.u ALTER COLUMN email TYPE varchar(10);
ALTER TABLE anonck.u ADD CONSTRAINT u_email_ok CHECK (email <> 'secret');
ALTER TABLE anonck.u ALTER COLUMN id SET NOT NULL;
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'anonck.u'::regclass AND attname = 'email';

-- partitions: a unique index on a partition, and attaching a partition
-- that has one
CREATE UNIQUE INDEX p_eu_note ON anonck.p_eu (note);
CREATE TABLE anonck.p_fr (id int, at timestamptz, region text, note text);
CREATE UNIQUE INDEX p_fr_note ON anonck.p_fr (note);
ALTER TABLE anonck.p ATTACH PARTITION anonck.p_fr FOR VALUES IN ('fr');
CREATE TABLE anonck.p_de (id int, at timestamptz, region text, note text CHECK (note <> 'gone'));
ALTER TABLE anonck.p ATTACH PARTITION anonck.p_de FOR VALUES IN ('de');
-- nothing changed
SELECT count(*) AS unique_indexes FROM pg_index
 WHERE indrelid = 'anonck.p_eu'::regclass AND indisunique;
SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'anonck.p'::regclass ORDER BY 1;
-- a partition the value fits is attached
CREATE TABLE anonck.p_it (id int, at timestamptz, region text, note text);
ALTER TABLE anonck.p ATTACH PARTITION anonck.p_it FOR VALUES IN ('it');
SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'anonck.p'::regclass ORDER BY 1;

RESET ROLE;
DROP TABLE policies_before, u_before;
SET client_min_messages = warning;
DROP EXTENSION ttl_index CASCADE;
DROP SCHEMA anonck CASCADE;
RESET client_min_messages;
DROP ROLE ttl_anonck_owner;
