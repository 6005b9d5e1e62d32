--
-- ttl_index: the SQL surface.  Runs on a server without the library
-- preloaded, so no background worker interferes: ttl_runner() does the
-- purging here, and the worker has its own TAP tests.
--
SET client_min_messages = warning;
CREATE ROLE ttl_owner;
CREATE ROLE ttl_other;
RESET client_min_messages;

-- without shared_preload_libraries, CREATE EXTENSION warns
CREATE EXTENSION ttl_index;

CREATE SCHEMA app AUTHORIZATION ttl_owner;
GRANT USAGE ON SCHEMA app TO ttl_other;
SET ROLE ttl_owner;

CREATE TABLE app.sessions (
	id			bigserial PRIMARY KEY,
	created_at	timestamptz,
	note		text
);

-- integer seconds; the policy id comes back, and an index is created
SELECT ttl_create_index('app.sessions', 'created_at', 3600) AS policy_id \gset
SELECT :policy_id > 0 AS has_id;
-- the index says it is ttl_index's (that comment is what ttl_drop_index
-- looks for, and it survives pg_dump and index rebuilds)
SELECT indexrelid::regclass AS index, indisvalid,
	   obj_description(indexrelid, 'pg_class') AS comment
  FROM pg_index WHERE indrelid = 'app.sessions'::regclass AND indkey[0] = 2;
SELECT relid, column_name, attnum, expire_after, batch_size, enabled
  FROM ttl_index_policy;

-- calling again changes the policy in place (same id), interval form,
-- batch size as the 4th positional argument (pg_ttl_index compatible)
SELECT ttl_create_index('app.sessions', 'created_at', interval '2 hours', 5000) = :policy_id
	AS same_policy;
SELECT expire_after, batch_size FROM ttl_index_policy;
SELECT ttl_create_index(table_name => 'app.sessions', column_name => 'created_at',
						expire_after => interval '1 hour') = :policy_id AS same_policy;
SELECT expire_after, batch_size FROM ttl_index_policy;
-- still one index on the column
SELECT count(*) FROM pg_index WHERE indrelid = 'app.sessions'::regclass AND indkey[0] = 2;

-- ttl_runner deletes what has expired, keeps the rest and NULLs
INSERT INTO app.sessions (created_at, note)
	SELECT now() - interval '3 hours', 'old' FROM generate_series(1, 1000);
INSERT INTO app.sessions (created_at, note)
	SELECT now() - interval '59 minutes', 'fresh' FROM generate_series(1, 10);
INSERT INTO app.sessions (created_at, note) VALUES (NULL, 'never');
-- the backlog as the stats view sees it: 2 hours late, about 1000 rows
-- (estimated from the statistics ANALYZE gathered, not counted)
ANALYZE app.sessions;
SELECT lag BETWEEN interval '1 hour 59 minutes' AND interval '2 hours 1 minute' AS lag_2h,
	   expired_estimate BETWEEN 950 AND 1050 AS about_1000
  FROM ttl_index_stats;
SELECT ttl_runner();
SELECT note, count(*) FROM app.sessions GROUP BY note ORDER BY note;
-- nothing left to do
SELECT ttl_runner();

-- the stats view: one row, no backlog, next expiry about 1 minute away
SELECT table_name, column_name, expire_after, batch_size, enabled, errors,
	   lag = interval '0' AS no_lag, expired_estimate,
	   next_expiry BETWEEN now() AND now() + interval '2 minutes' AS next_soon
  FROM ttl_index_stats;

-- a backlog shows as lag: the oldest expired row is about 2 hours past expiry
INSERT INTO app.sessions (created_at, note) VALUES (now() - interval '3 hours', 'late');
SELECT lag BETWEEN interval '1 hour 59 minutes' AND interval '2 hours 1 minute' AS lag_2h
  FROM ttl_index_stats;
SELECT ttl_runner();

-- expire_after 0: the column holds the expiry time itself
CREATE TABLE app.tokens (token text, expires_at timestamptz);
CREATE INDEX tokens_expires_at ON app.tokens (expires_at);
SELECT ttl_create_index('app.tokens', 'expires_at', 0) > 0 AS ok;
-- the existing index was reused, and is not marked as ours
SELECT obj_description('app.tokens_expires_at'::regclass, 'pg_class') AS comment;
INSERT INTO app.tokens VALUES ('past', now() - interval '1 second'),
	('future', now() + interval '1 hour'), ('forever', 'infinity'), ('null', NULL);
SELECT ttl_runner();
SELECT token FROM app.tokens ORDER BY token;

-- timestamp without time zone is read in the server's TimeZone
CREATE TABLE app.events (at timestamp);
SELECT ttl_create_index('app.events', 'at', interval '1 day') > 0 AS ok;
INSERT INTO app.events VALUES (localtimestamp - interval '25 hours'),
	(localtimestamp - interval '23 hours');
SELECT ttl_runner();
SELECT count(*) FROM app.events;

-- date: a day expires expire_after after its midnight
CREATE TABLE app.daily (day date);
SELECT ttl_create_index('app.daily', 'day', interval '1 day') > 0 AS ok;
INSERT INTO app.daily VALUES (current_date - 2), (current_date - 1), (current_date), (current_date + 1);
SELECT ttl_runner();
SELECT day - current_date AS days_from_today FROM app.daily ORDER BY day;

-- names that need quoting are never spliced raw
CREATE TABLE app."we""ird; table" ("my col" timestamptz, "drop" int);
SELECT ttl_create_index('app."we""ird; table"', 'my col', 60) > 0 AS ok;
INSERT INTO app."we""ird; table" VALUES (now() - interval '2 minutes', 1), (now(), 2);
SELECT ttl_runner();
SELECT "drop" FROM app."we""ird; table";

-- policies follow renames of the table and the column
ALTER TABLE app."we""ird; table" RENAME TO renamed;
ALTER TABLE app.renamed RENAME COLUMN "my col" TO created;
SELECT relid, column_name FROM ttl_index_policy WHERE relid = 'app.renamed'::regclass;
INSERT INTO app.renamed VALUES (now() - interval '2 minutes', 3);
SELECT ttl_runner();
SELECT "drop" FROM app.renamed;

-- dropping the column or the table drops the policy
ALTER TABLE app.renamed DROP COLUMN created;
SELECT count(*) FROM ttl_index_policy WHERE relid = 'app.renamed'::regclass;
DROP TABLE app.daily;
SELECT count(*) FROM ttl_index_policy WHERE column_name = 'day';

-- without a usable index ttl_runner says so (a warning: the other
-- policies go on); calling ttl_create_index again makes one
SELECT ttl_create_index('app.events', 'at', interval '1 day') > 0 AS ok;
DROP INDEX app.events_at_ttl_idx;
SELECT ttl_runner();
SELECT ttl_create_index('app.events', 'at', interval '1 day') > 0 AS ok;
SELECT ttl_runner();

-- ttl_drop_index drops the index only if ttl_create_index made it
SELECT ttl_drop_index('app.tokens', 'expires_at');
SELECT count(*) FROM pg_indexes WHERE indexname = 'tokens_expires_at';
SELECT ttl_drop_index('app.events', 'at');
SELECT count(*) FROM pg_index WHERE indrelid = 'app.events'::regclass;

-- The purge acts as the table owner, whoever runs it: triggers see the
-- owner as current_user, and row-level security applies as it would to a
-- DELETE by the owner, that is only when the table forces it on its owner.
SET ROLE ttl_owner;
CREATE TABLE app.audited (ts timestamptz, kind text);
CREATE TABLE app.audit_log (who name, kind text);
CREATE FUNCTION app.log_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO app.audit_log VALUES (current_user, OLD.kind);
	RETURN OLD;
END
$$;
CREATE TRIGGER audited_delete AFTER DELETE ON app.audited
	FOR EACH ROW EXECUTE FUNCTION app.log_delete();
SELECT ttl_create_index('app.audited', 'ts', 60) > 0 AS ok;
ALTER TABLE app.audited ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_public ON app.audited USING (kind = 'public');
INSERT INTO app.audited VALUES (now() - interval '1 hour', 'public'),
	(now() - interval '1 hour', 'secret');
RESET ROLE;
-- run by the superuser: RLS is not forced, so the owner deletes both rows
SELECT ttl_runner();
SELECT who, kind FROM app.audit_log ORDER BY kind;
-- forced: the owner sees, and so the purge deletes, only the public row
SET ROLE ttl_owner;
ALTER TABLE app.audited FORCE ROW LEVEL SECURITY;
RESET ROLE;
INSERT INTO app.audited VALUES (now() - interval '1 hour', 'public'),
	(now() - interval '1 hour', 'secret');
SELECT ttl_runner();
SELECT kind FROM app.audited;
-- the owner's rights, not the superuser's: a trigger the owner could not
-- run itself makes the policy fail (a warning names it; ttl_runner itself
-- does not fail, so other policies still purge), and nothing is deleted
SET ROLE ttl_owner;
CREATE OR REPLACE FUNCTION app.log_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM count(*) FROM pg_catalog.pg_authid;
	RETURN OLD;
END
$$;
RESET ROLE;
INSERT INTO app.audited VALUES (now() - interval '1 hour', 'public');
SELECT ttl_runner();
SELECT count(*) FROM app.audited WHERE kind = 'public';
SET ROLE ttl_owner;
SELECT ttl_drop_index('app.audited', 'ts');
-- the owner's own privileges count too: an owner that revoked DELETE on
-- its table from itself gets the error its own DELETE would get (as a
-- warning of the policy's failure)
CREATE TABLE app.nodelete (ts timestamptz);
SELECT ttl_create_index('app.nodelete', 'ts', 60) > 0 AS ok;
INSERT INTO app.nodelete VALUES (now() - interval '1 hour');
REVOKE DELETE ON app.nodelete FROM ttl_owner;
RESET ROLE;
SELECT ttl_runner();
SELECT count(*) FROM app.nodelete;
SET ROLE ttl_owner;
GRANT DELETE ON app.nodelete TO ttl_owner;
RESET ROLE;
SELECT ttl_runner();
SELECT count(*) FROM app.nodelete;
-- as for any DELETE: not in a read-only transaction (an error: nothing can
-- run), and not from a table published with deletes but without a replica
-- identity (the subscribers would never hear of them; the policy fails)
BEGIN READ ONLY;
SELECT ttl_runner();
ROLLBACK;
INSERT INTO app.nodelete VALUES (now() - interval '1 hour');
SET client_min_messages = error;	-- wal_level may be too low to publish: no matter
CREATE PUBLICATION ttl_pub FOR TABLE app.nodelete;
RESET client_min_messages;
SELECT ttl_runner();
SELECT count(*) FROM app.nodelete;
ALTER TABLE app.nodelete REPLICA IDENTITY FULL;
SELECT ttl_runner();
DROP PUBLICATION ttl_pub;
SET ROLE ttl_owner;
SELECT ttl_drop_index('app.nodelete', 'ts');
DROP TABLE app.nodelete;

--
-- Bad calls: each is an error, and changes nothing.
--
CREATE TEMP TABLE policies_before AS SELECT * FROM ttl_index_policy;
CREATE TABLE app.typed (n int, t text, ts timestamptz, d date);
CREATE VIEW app.v AS SELECT * FROM app.typed;
CREATE MATERIALIZED VIEW app.mv AS SELECT * FROM app.typed;
CREATE SEQUENCE app.seq;
CREATE TEMP TABLE tmp (ts timestamptz);
ALTER TABLE app.typed ADD COLUMN gone timestamptz;
ALTER TABLE app.typed DROP COLUMN gone;
RESET ROLE;
CREATE FOREIGN DATA WRAPPER ttl_dummy_fdw;
CREATE SERVER ttl_dummy FOREIGN DATA WRAPPER ttl_dummy_fdw;
GRANT USAGE ON FOREIGN SERVER ttl_dummy TO ttl_owner;
SET ROLE ttl_owner;
CREATE FOREIGN TABLE app.ft (ts timestamptz) SERVER ttl_dummy;

SELECT ttl_create_index('app.nosuchtable', 'ts', 60);
SELECT ttl_create_index('app.typed', 'nosuchcolumn', 60);
SELECT ttl_create_index('app.typed', 'n', 60);
SELECT ttl_create_index('app.typed', 't', 60);
SELECT ttl_create_index('app.typed', 'xmin', 60);
SELECT ttl_create_index('app.typed', '', 60);
SELECT ttl_create_index('app.typed', 'ts', -1);
SELECT ttl_create_index('app.typed', 'ts', interval '-1 hour');
SELECT ttl_create_index('app.typed', 'ts', interval '1 day -25 hours');
SELECT ttl_create_index('app.typed', 'ts', 9223372036854775807);
SELECT ttl_create_index('app.typed', 'ts', interval '36900 days');
SELECT ttl_create_index('app.typed', 'ts', interval '1 month -40 days');
SELECT ttl_create_index('app.typed', 'ts', 60, 0);
SELECT ttl_create_index('app.typed', 'ts', 60, 1000001);
SELECT ttl_create_index('app.typed', 'ts', 60, -5);
SELECT ttl_create_index(NULL, 'ts', 60);
SELECT ttl_create_index('app.typed', NULL, 60);
SELECT ttl_create_index('app.typed', 'ts', NULL::interval);
SELECT ttl_create_index('app.typed', 'ts', NULL::bigint);
SELECT ttl_create_index('', 'ts', 60);
SELECT ttl_create_index('app.v', 'ts', 60);
SELECT ttl_create_index('app.mv', 'ts', 60);
SELECT ttl_create_index('app.seq', 'last_value', 60);
SELECT ttl_create_index('app.sessions_pkey', 'id', 60);
SELECT ttl_create_index('tmp', 'ts', 60);
SELECT ttl_create_index('app.ft', 'ts', 60);
SELECT ttl_create_index('app.typed', 'gone', 60);
SELECT ttl_create_index('app.typed', '........pg.dropped.5........', 60);
SELECT ttl_create_index('app.typed', 'ts', interval '-1 year');
SELECT ttl_create_index('app.typed', 'ts', -9223372036854775808);
-- a TTL column cannot change to a type the purge cannot use
ALTER TABLE app.sessions ALTER COLUMN created_at TYPE text;
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'app.sessions'::regclass AND attname = 'created_at';
SELECT ttl_create_index('app.typed', 'ts', 'one hour');
SELECT ttl_drop_index('app.typed', 'ts');
SELECT ttl_drop_index('app.typed', 'nosuchcolumn');
SELECT ttl_drop_index(NULL, 'ts');
RESET ROLE;
SELECT ttl_create_index('pg_catalog.pg_class', 'relname', 60);
SELECT ttl_create_index('pg_catalog.pg_stat_activity', 'backend_start', 60);

-- another role can neither create, change nor drop a policy on the table
SET ROLE ttl_other;
SELECT ttl_create_index('app.typed', 'ts', 60);
SELECT ttl_create_index('app.sessions', 'created_at', 1);
SELECT ttl_drop_index('app.sessions', 'created_at');
-- nor write the catalog directly; but it may read it and the stats view
INSERT INTO ttl_index_policy (relid, column_name, attnum, expire_after)
	VALUES ('app.typed', 'ts', 3, '1 hour');
UPDATE ttl_index_policy SET expire_after = '1 second';
DELETE FROM ttl_index_policy;
SELECT count(*) > 0 AS can_read FROM ttl_index_policy;
-- it sees the policies, but not another owner's backlog
SELECT table_name, lag, next_expiry FROM ttl_index_stats ORDER BY policy_id LIMIT 1;
-- ttl_runner only purges tables the caller owns
SELECT ttl_runner();
-- resetting the counters is for superusers (and whom they grant it to)
SELECT ttl_index_stats_reset();
RESET ROLE;

-- nothing changed
SELECT count(*) AS changed FROM (
	(SELECT * FROM ttl_index_policy EXCEPT SELECT * FROM policies_before)
	UNION ALL
	(SELECT * FROM policies_before EXCEPT SELECT * FROM ttl_index_policy)) d;
SELECT count(*) FROM pg_index WHERE indrelid = 'app.typed'::regclass;

-- a member of the owning role may manage the policy
GRANT ttl_owner TO ttl_other;
SET ROLE ttl_other;
SELECT ttl_create_index('app.typed', 'd', interval '7 days') > 0 AS ok;
SELECT ttl_drop_index('app.typed', 'd');
RESET ROLE;

-- the counters can be reset, for the database or one table; without
-- shared_preload_libraries there are no counters, so nothing changes
SELECT ttl_index_stats_reset();
SELECT ttl_index_stats_reset('app.sessions');
SELECT count(*) FROM ttl_index_stats WHERE stats_reset IS NOT NULL;
-- no worker runs without shared_preload_libraries
SELECT * FROM ttl_index_progress;

-- pg_dump keeps the policies: the catalog is an extension config table
SELECT extconfig::regclass[] FROM pg_extension WHERE extname = 'ttl_index';

DROP EXTENSION ttl_index;
DROP TABLE policies_before, tmp;
DROP FOREIGN TABLE app.ft;
DROP SERVER ttl_dummy;
DROP FOREIGN DATA WRAPPER ttl_dummy_fdw;
SET client_min_messages = warning;
DROP SCHEMA app CASCADE;
RESET client_min_messages;
DROP ROLE ttl_other;
DROP ROLE ttl_owner;
