--
-- ttl_hide_expired: hide_expired => true makes expired rows invisible to
-- the table's readers from the instant they expire, through row-level
-- security policies the extension makes, keeps and drops with the TTL
-- policy (hide.c).  Who sees what, from each kind of role; the edge to the
-- microsecond; per-row TTLs, filters, epochs, zones, partitions; a table
-- with row security of its own; ttl_runner() still purges under FORCE ROW
-- LEVEL SECURITY; what alter, reset and drop leave; bad input.
--
SET client_min_messages = warning;
CREATE EXTENSION ttl_index;
DROP ROLE IF EXISTS hide_owner;
DROP ROLE IF EXISTS hide_reader;
DROP ROLE IF EXISTS hide_bypass;
RESET client_min_messages;
CREATE ROLE hide_owner;
CREATE ROLE hide_reader;
CREATE ROLE hide_bypass BYPASSRLS;
CREATE SCHEMA hx AUTHORIZATION hide_owner;
GRANT USAGE ON SCHEMA hx TO hide_reader, hide_bypass;
SET search_path = hx, public;

-- a timestamptz key, one hour: rows 1 and 2 expired, 3 fresh, 4 NULL
SET ROLE hide_owner;
CREATE TABLE s (id int PRIMARY KEY, created_at timestamptz, note text);
INSERT INTO s VALUES (1, '2020-01-01', 'old'), (2, now() - interval '2 hours', 'old'),
	(3, now(), 'new'), (4, NULL, 'never');
GRANT SELECT, INSERT, UPDATE, DELETE ON s TO hide_reader, hide_bypass;
SELECT ttl_create_index('s', 'created_at', interval '1 hour', hide_expired => true) > 0 AS ok;
RESET ROLE;
-- what a DBA sees: the policies, row security on
SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = 'hx.s'::regclass;
SELECT polname, polpermissive, polcmd, polroles::regrole[],
	   pg_get_expr(polqual, polrelid) AS using_expr, pg_get_expr(polwithcheck, polrelid) AS check_expr
  FROM pg_policy WHERE polrelid = 'hx.s'::regclass ORDER BY polname;
SELECT hide_expired FROM ttl_index_stats WHERE table_name = 'hx.s'::regclass;

-- an ordinary reader: no expired row
SET ROLE hide_reader;
SELECT id FROM s ORDER BY id;
-- an already-expired row may be inserted (then it is invisible)
INSERT INTO s VALUES (5, '2021-01-01', 'late');
SELECT count(*) FROM s WHERE id = 5;
-- an expired row cannot be changed or deleted through the table
UPDATE s SET note = 'x' WHERE id = 1;
DELETE FROM s WHERE id = 2;
-- writing an already-expired row where it must be read back is refused
INSERT INTO s VALUES (7, '2021-01-01', 'back') RETURNING id;
UPDATE s SET created_at = '2021-01-01' WHERE id = 3;
SELECT id FROM s ORDER BY id;
RESET ROLE;
-- the owner sees them (not FORCE)
SET ROLE hide_owner;
SELECT id, note FROM s ORDER BY id;
-- with FORCE ROW LEVEL SECURITY the owner does not
ALTER TABLE s FORCE ROW LEVEL SECURITY;
SELECT id FROM s ORDER BY id;
RESET ROLE;
-- a BYPASSRLS role and a superuser do
SET ROLE hide_bypass;
SELECT id FROM s ORDER BY id;
RESET ROLE;
SELECT id FROM s ORDER BY id;

-- the edge, to the microsecond, in one transaction (now() is fixed): a
-- row whose key is now() - 1 hour has not expired (the worker deletes
-- keys before now() - expire_after), one a microsecond older has
BEGIN;
INSERT INTO s VALUES (10, now() - interval '1 hour', 'edge'),
	(11, now() - interval '1 hour' - interval '1 microsecond', 'past');
SET LOCAL ROLE hide_reader;
SELECT id FROM s WHERE id >= 10 ORDER BY id;
ROLLBACK;

-- the purge under FORCE: ttl_runner() (as the worker, as the owner)
-- deletes every expired row, which the owner's own reads do not show
SELECT ttl_runner() >= 0 AS ran;
SELECT id FROM s ORDER BY id;
SELECT hx_check.ok FROM (SELECT ttl_index_purging('hx.s') = false AS ok) hx_check;

-- the TTL changes: the expression follows
INSERT INTO s VALUES (6, now() - interval '30 minutes', 'half');
SET ROLE hide_owner;
ALTER TABLE s NO FORCE ROW LEVEL SECURITY;
SELECT ttl_alter_index('s', 'created_at', expire_after => '10 minutes') > 0 AS ok;
RESET ROLE;
SELECT pg_get_expr(polqual, polrelid) AS using_expr FROM pg_policy
 WHERE polrelid = 'hx.s'::regclass AND polname LIKE 'ttl_index_hide%';
SET ROLE hide_reader;
SELECT id FROM s ORDER BY id;
RESET ROLE;

-- a change that leaves the expression as it is leaves the policies alone
-- (remaking them would lock the table against its readers)
CREATE TEMP TABLE pol_before AS SELECT oid, polname FROM pg_policy WHERE polrelid = 'hx.s'::regclass;
SET ROLE hide_owner;
SELECT ttl_alter_index('s', 'created_at', batch_size => 77) > 0 AS ok;
RESET ROLE;
SELECT count(*) AS same_policies FROM pg_policy p JOIN pol_before b USING (oid);
SET ROLE hide_owner;
SELECT ttl_alter_index('s', 'created_at', filter => 'id > 0') > 0 AS ok;
RESET ROLE;
SELECT count(*) AS same_policies FROM pg_policy p JOIN pol_before b USING (oid);
SELECT pg_get_expr(polqual, polrelid) AS using_expr FROM pg_policy
 WHERE polrelid = 'hx.s'::regclass AND polname LIKE 'ttl_index_hide%';
SET ROLE hide_owner;
SELECT ttl_alter_index('s', 'created_at', reset => '{filter, batch_size}') > 0 AS ok;
RESET ROLE;
SELECT pg_get_expr(polqual, polrelid) AS using_expr FROM pg_policy
 WHERE polrelid = 'hx.s'::regclass AND polname LIKE 'ttl_index_hide%';

-- a renamed column: the policy follows it (stored as a parse tree)
ALTER TABLE s RENAME COLUMN created_at TO made_at;
SET ROLE hide_reader;
SELECT id FROM s ORDER BY id;
RESET ROLE;
-- the key column cannot be dropped while the policy hides by it
ALTER TABLE s DROP COLUMN made_at;

-- hide_expired => false: the table's row security is exactly as before
SET ROLE hide_owner;
SELECT ttl_alter_index('s', 'made_at', hide_expired => false) > 0 AS ok;
RESET ROLE;
SELECT relrowsecurity, (SELECT count(*) FROM pg_policy WHERE polrelid = 'hx.s'::regclass) AS policies
  FROM pg_class WHERE oid = 'hx.s'::regclass;
SET ROLE hide_reader;
SELECT id FROM s ORDER BY id;
RESET ROLE;
-- on again, then reset => '{hide_expired}' and ttl_drop_index remove it too
SET ROLE hide_owner;
SELECT ttl_alter_index('s', 'made_at', hide_expired => true) > 0 AS ok;
SELECT ttl_alter_index('s', 'made_at', reset => '{hide_expired}') > 0 AS ok;
SELECT relrowsecurity FROM pg_class WHERE oid = 'hx.s'::regclass;
SELECT ttl_alter_index('s', 'made_at', hide_expired => true) > 0 AS ok;
SELECT ttl_drop_index('s', 'made_at');
RESET ROLE;
SELECT relrowsecurity, (SELECT count(*) FROM pg_policy WHERE polrelid = 'hx.s'::regclass) AS policies
  FROM pg_class WHERE oid = 'hx.s'::regclass;

-- a table with row security of its own: a tenant sees only its rows
SET ROLE hide_owner;
CREATE TABLE r (id int, tenant text, ts timestamptz);
INSERT INTO r VALUES (1, 'hide_reader', '2020-01-01'), (2, 'hide_reader', now()),
	(3, 'other', now()), (4, 'other', '2020-01-01');
GRANT SELECT ON r TO hide_reader;
ALTER TABLE r ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON r FOR SELECT USING (tenant = current_user);
SELECT ttl_create_index('r', 'ts', 3600, hide_expired => true) > 0 AS ok;
RESET ROLE;
-- no ttl_index_allow: the table's own policy still decides
SELECT polname, polpermissive FROM pg_policy WHERE polrelid = 'hx.r'::regclass ORDER BY polname;
SET ROLE hide_reader;
-- row 3 stays invisible (not its tenant); row 1 (its, expired) is now too
SELECT id FROM r ORDER BY id;
RESET ROLE;
SET ROLE hide_owner;
SELECT ttl_drop_index('r', 'ts');
RESET ROLE;
-- row security stays on with the table's own policy alone
SELECT relrowsecurity, (SELECT array_agg(polname) FROM pg_policy WHERE polrelid = 'hx.r'::regclass) AS policies
  FROM pg_class WHERE oid = 'hx.r'::regclass;
SET ROLE hide_reader;
SELECT id FROM r ORDER BY id;
RESET ROLE;

-- per-row TTL, a filter, epoch milliseconds, timestamp in a zone
SET ROLE hide_owner;
CREATE TABLE p (id int, ts timestamptz, ttl interval);
INSERT INTO p VALUES (1, now() - interval '2 hours', '1 hour'), (2, now() - interval '2 hours', '3 hours'),
	(3, now(), NULL);
SELECT ttl_create_index('p', 'ts', ttl_column => 'ttl', hide_expired => true) > 0 AS ok;
CREATE TABLE f (id int, ts timestamptz, kind text);
INSERT INTO f VALUES (1, '2020-01-01', 'temp'), (2, '2020-01-01', 'keep'), (3, '2020-01-01', NULL),
	(4, now(), 'temp');
SELECT ttl_create_index('f', 'ts', 3600, filter => $$kind = 'temp'$$, hide_expired => true) > 0 AS ok;
CREATE TABLE e (id int, ms bigint);
INSERT INTO e VALUES (1, 1577836800000), (2, (extract(epoch FROM now()) * 1000)::bigint), (3, NULL);
SELECT ttl_create_index('e', 'ms', 3600, unit => 'ms', hide_expired => true) > 0 AS ok;
CREATE TABLE z (id int, ts timestamp);
-- written in Tokyo: 90 minutes ago is expired, 30 minutes ago is not
INSERT INTO z VALUES (1, (now() AT TIME ZONE 'Asia/Tokyo') - interval '90 minutes'),
	(2, (now() AT TIME ZONE 'Asia/Tokyo') - interval '30 minutes');
SET client_min_messages = warning;	-- the NOTICE names the server's zone, pg_regress's
SELECT ttl_create_index('z', 'ts', 3600, time_zone => 'Asia/Tokyo', hide_expired => true) > 0 AS ok;
RESET client_min_messages;
GRANT SELECT ON p, f, e, z TO hide_reader;
RESET ROLE;
SET ROLE hide_reader;
SET TimeZone = 'America/New_York';
SELECT id FROM p ORDER BY id;
SELECT id FROM f ORDER BY id;
SELECT id FROM e ORDER BY id;
SELECT id FROM z ORDER BY id;
RESET TimeZone;
RESET ROLE;

-- calendar months (expiry.c): counted on the calendar of the policy's
-- zone, as the worker counts them, whatever the reader's TimeZone; the
-- edge to the microsecond in one transaction (now() is fixed): a key of
-- exactly now() - '1 month 2 hours' in Berlin is visible, a microsecond
-- older is not; 27 days and 2 hours ago (less than any month) is visible
SET ROLE hide_owner;
CREATE TABLE m (id int, ts timestamptz);
GRANT SELECT ON m TO hide_reader;
SET client_min_messages = warning;	-- the zone's NOTICE names its offset now
SELECT ttl_create_index('m', 'ts', interval '1 month 2 hours', time_zone => 'Europe/Berlin',
						hide_expired => true) > 0 AS ok;
RESET client_min_messages;
BEGIN;
SET LOCAL TimeZone = 'Europe/Berlin';
INSERT INTO m VALUES (1, now() - interval '1 month' - interval '2 hours'),
	(2, now() - interval '1 month' - interval '2 hours' - interval '1 microsecond'),
	(3, now() - interval '27 days 2 hours');
SET LOCAL TimeZone = 'Pacific/Auckland';
SET LOCAL ROLE hide_reader;
SELECT id FROM m ORDER BY id;
ROLLBACK;
RESET ROLE;

-- a partitioned table: a query on a partition directly hides too
SET ROLE hide_owner;
CREATE TABLE pt (id int, ts timestamptz) PARTITION BY RANGE (ts);
CREATE TABLE pt_old PARTITION OF pt FOR VALUES FROM ('2000-01-01') TO ('2024-01-01');
CREATE TABLE pt_new PARTITION OF pt FOR VALUES FROM ('2024-01-01') TO ('3000-01-01');
INSERT INTO pt VALUES (1, '2020-01-01'), (2, now());
GRANT SELECT ON pt, pt_old, pt_new TO hide_reader;
SELECT ttl_create_index('pt', 'ts', 3600, hide_expired => true) > 0 AS ok;
RESET ROLE;
SELECT c.relname, c.relrowsecurity, count(p.polname) AS policies
  FROM pg_class c LEFT JOIN pg_policy p ON p.polrelid = c.oid
 WHERE c.relname IN ('pt', 'pt_old', 'pt_new') AND c.relnamespace = 'hx'::regnamespace
 GROUP BY 1, 2 ORDER BY 1;
SET ROLE hide_reader;
SELECT id FROM pt ORDER BY id;
SELECT id FROM pt_old ORDER BY id;
RESET ROLE;
SET ROLE hide_owner;
SELECT ttl_drop_index('pt', 'ts');
RESET ROLE;
SELECT c.relname, c.relrowsecurity, count(p.polname) AS policies
  FROM pg_class c LEFT JOIN pg_policy p ON p.polrelid = c.oid
 WHERE c.relname IN ('pt', 'pt_old', 'pt_new') AND c.relnamespace = 'hx'::regnamespace
 GROUP BY 1, 2 ORDER BY 1;

-- bad input: each refused, nothing changed
SET ROLE hide_owner;
CREATE TABLE b (id int, ts timestamptz, kind text);
CREATE FUNCTION hx.is_temp(text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$SELECT $1 = 'temp'$$;
SELECT ttl_create_index('b', 'ts', 3600, filter => 'hx.is_temp(kind)', hide_expired => true);
SELECT ttl_create_index('b', 'ts', max_rows => 10, hide_expired => true);
ALTER TABLE b ADD COLUMN secret text;
SELECT ttl_create_index('b', 'ts', 3600, set_columns => $$secret = NULL$$, hide_expired => true);
CREATE POLICY mine ON b USING (true);
SELECT ttl_create_index('b', 'ts', 3600, hide_expired => true);
DROP POLICY mine ON b;
-- a cast to a domain runs the domain's constraints, which may call the
-- owner's function as each reader: refused as a function is
CREATE FUNCTION hx.evil(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$BEGIN RETURN true; END$$;
CREATE DOMAIN hx.dom AS int CHECK (hx.evil(VALUE));
SELECT ttl_create_index('b', 'ts', 3600, filter => 'CAST(id AS hx.dom) IS NOT NULL', hide_expired => true);
CREATE VIEW bv AS SELECT * FROM b;
SELECT ttl_create_index('bv', 'ts', 3600, hide_expired => true);
-- an existing policy, changed with a bad option: the policy and the table as they were
SELECT ttl_create_index('b', 'ts', 3600) > 0 AS ok;
SELECT ttl_alter_index('b', 'ts', filter => 'hx.is_temp(kind)', hide_expired => true);
RESET ROLE;
SELECT filter, hide_expired FROM ttl_index_stats WHERE table_name = 'hx.b'::regclass;
SELECT relrowsecurity, (SELECT count(*) FROM pg_policy WHERE polrelid = 'hx.b'::regclass) AS policies
  FROM pg_class WHERE oid = 'hx.b'::regclass;
-- ttl_index_purging() is false outside the purge
SELECT ttl_index_purging('hx.s');

-- a purge never shows another table's expired rows: an ordinary role that
-- may read s, and owns a table whose purge runs its trigger, reads s in
-- that trigger during its own ttl_runner() and sees no expired row (the
-- escape is for the purged table, as its owner)
CREATE ROLE hide_spy;
GRANT USAGE, CREATE ON SCHEMA hx TO hide_spy;
SET ROLE hide_owner;
CREATE TABLE sec (id int, ts timestamptz, note text);
INSERT INTO sec VALUES (1, now() - interval '3 hours', 'expired-secret'), (2, now(), 'fresh');
SELECT ttl_create_index('sec', 'ts', 3600, purge_window => to_char(now() + interval '2 hours', 'HH24:00') || '-' || to_char(now() + interval '3 hours', 'HH24:00'),
						hide_expired => true) > 0 AS ok;
GRANT SELECT ON sec TO hide_spy;
RESET ROLE;
SET ROLE hide_spy;
CREATE TABLE hx.loot (note text);
CREATE TABLE hx.bait (id int, ts timestamptz);
CREATE FUNCTION hx.spy() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO hx.loot SELECT note FROM hx.sec;
	RETURN OLD;
END $$;
CREATE TRIGGER spy BEFORE DELETE ON hx.bait FOR EACH ROW EXECUTE FUNCTION hx.spy();
INSERT INTO hx.bait VALUES (1, now() - interval '2 days');
SELECT ttl_create_index('hx.bait', 'ts', '1 day') > 0 AS ok;
SELECT ttl_runner() >= 1 AS ran;
SELECT count(*) AS bait_left FROM hx.bait;
SELECT count(*) FILTER (WHERE note = 'expired-secret') AS leaked,
	   count(*) FILTER (WHERE note = 'fresh') AS trigger_saw_fresh FROM hx.loot;
RESET ROLE;
-- (sec's purge window is closed: its expired row is still there)
SELECT count(*) AS secret_still_there FROM hx.sec WHERE id = 1;

-- dropping the TTL policy of a table that has a restrictive policy of the
-- owner's keeps row security and ttl_index_allow: the readers keep what
-- they could read (without ttl_index_allow a restrictive policy alone
-- grants nothing)
SET ROLE hide_owner;
CREATE TABLE kp (id int, ts timestamptz, v int);
INSERT INTO kp VALUES (1, now(), 1), (2, now(), -1);
GRANT SELECT ON kp TO hide_reader;
SELECT ttl_create_index('kp', 'ts', 3600, hide_expired => true) > 0 AS ok;
CREATE POLICY mine ON kp AS RESTRICTIVE USING (v > 0);
SET ROLE hide_reader;
SELECT id FROM kp ORDER BY id;
SET ROLE hide_owner;
SELECT ttl_drop_index('kp', 'ts');
SET ROLE hide_reader;
SELECT id FROM kp ORDER BY id;
RESET ROLE;
SELECT relrowsecurity, (SELECT array_agg(polname ORDER BY polname) FROM pg_policy WHERE polrelid = 'hx.kp'::regclass) AS policies
  FROM pg_class WHERE oid = 'hx.kp'::regclass;
-- a hiding policy the owner renamed is still the extension's: removed
SET ROLE hide_owner;
DROP POLICY mine ON kp;
SELECT ttl_create_index('kp', 'ts', 3600, hide_expired => true) > 0 AS ok;
ALTER POLICY ttl_index_hide_expired_ts ON kp RENAME TO renamed;
SELECT ttl_alter_index('kp', 'ts', hide_expired => false) > 0 AS ok;
RESET ROLE;
SELECT relrowsecurity, (SELECT array_agg(polname ORDER BY polname) FROM pg_policy WHERE polrelid = 'hx.kp'::regclass) AS policies
  FROM pg_class WHERE oid = 'hx.kp'::regclass;

-- the extension cannot be dropped while a policy calls ttl_index_purging()
CREATE TABLE hx.last (id int, ts timestamptz);
ALTER TABLE hx.last OWNER TO hide_owner;
SET ROLE hide_owner;
SELECT ttl_create_index('hx.last', 'ts', 3600, hide_expired => true) > 0 AS ok;
RESET ROLE;
\set VERBOSITY terse
DROP EXTENSION ttl_index;
\set VERBOSITY default

SET client_min_messages = warning;
DROP SCHEMA hx CASCADE;
DROP EXTENSION ttl_index;
DROP ROLE hide_owner;
DROP ROLE hide_reader;
DROP ROLE hide_bypass;
DROP ROLE hide_spy;
