/* ttl_index--1.0.sql: install script of the ttl_index extension */

\echo Use "CREATE EXTENSION ttl_index" to load this file. \quit

-- The policy catalog: one row per (table, column).
--
-- A table is stored as regclass and an index as regclass so that pg_dump
-- writes them as names and a restore resolves them to the new OIDs.  The
-- column is stored by number (attnum), which follows a column rename; the
-- name beside it is kept current by the event trigger below and is what a
-- restore resolves (see ttl_index_policy_resolve), because column numbers
-- are not preserved by pg_dump.
CREATE TABLE @extschema@.ttl_index_policy (
	id				serial PRIMARY KEY,
	relid			regclass NOT NULL,
	column_name		name NOT NULL,
	attnum			int2 NOT NULL,
	expire_after	interval NOT NULL,
	batch_size		integer CHECK (batch_size BETWEEN 1 AND 1000000),
	enabled			boolean NOT NULL DEFAULT true,
	created_index	regclass,
	created_at		timestamptz NOT NULL DEFAULT now(),
	UNIQUE (relid, attnum)
);

COMMENT ON TABLE @extschema@.ttl_index_policy IS
	'TTL policies of ttl_index; change them only through ttl_create_index() and ttl_drop_index()';

SELECT pg_catalog.pg_extension_config_dump('@extschema@.ttl_index_policy', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.ttl_index_policy_id_seq', '');

-- Readable by all (like pg_class); writable only through the functions.
REVOKE ALL ON @extschema@.ttl_index_policy FROM PUBLIC;
GRANT SELECT ON @extschema@.ttl_index_policy TO PUBLIC;

-- Resolve the column number from the column name on every insert.  The
-- functions insert with both; a restore from pg_dump inserts the name it
-- dumped and this finds the column's number in the restored table.
CREATE FUNCTION @extschema@.ttl_index_policy_resolve()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	SELECT a.attnum INTO NEW.attnum
	  FROM pg_catalog.pg_attribute a
	 WHERE a.attrelid = NEW.relid
	   AND a.attname = NEW.column_name
	   AND a.attnum > 0
	   AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of relation % does not exist',
			NEW.column_name, NEW.relid
			USING ERRCODE = 'undefined_column';
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER ttl_index_policy_resolve
	BEFORE INSERT ON @extschema@.ttl_index_policy
	FOR EACH ROW EXECUTE FUNCTION @extschema@.ttl_index_policy_resolve();

-- Any change to the catalog wakes this database's worker when it commits,
-- so that it re-reads its policies at once.
CREATE FUNCTION @extschema@.ttl_index_policy_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'ttl_index_policy_changed'
LANGUAGE C;

CREATE TRIGGER ttl_index_policy_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.ttl_index_policy
	FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.ttl_index_policy_changed();

-- Policies follow their table: dropping the table or the column drops the
-- policy, dropping an index the extension made forgets it.  The trigger
-- function runs as the extension owner because the catalog is not writable
-- by the role doing the DDL; it only ever removes rows for objects that are
-- being dropped.
CREATE FUNCTION @extschema@.ttl_index_on_sql_drop()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	obj record;
BEGIN
	FOR obj IN SELECT * FROM pg_catalog.pg_event_trigger_dropped_objects()
		WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass
	LOOP
		IF obj.objsubid = 0 THEN
			DELETE FROM @extschema@.ttl_index_policy WHERE relid = obj.objid;
			UPDATE @extschema@.ttl_index_policy SET created_index = NULL
			 WHERE created_index = obj.objid;
		ELSE
			DELETE FROM @extschema@.ttl_index_policy
			 WHERE relid = obj.objid AND attnum = obj.objsubid;
		END IF;
	END LOOP;
END
$$;

CREATE EVENT TRIGGER ttl_index_on_sql_drop ON sql_drop
	EXECUTE FUNCTION @extschema@.ttl_index_on_sql_drop();

-- Keep the stored column name equal to the live one after ALTER TABLE ...
-- RENAME COLUMN, so that what pg_dump writes resolves on restore.
CREATE FUNCTION @extschema@.ttl_index_on_alter_table()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	UPDATE @extschema@.ttl_index_policy p
	   SET column_name = a.attname
	  FROM pg_catalog.pg_attribute a
	 WHERE a.attrelid = p.relid
	   AND a.attnum = p.attnum
	   AND a.attname <> p.column_name
	   AND p.relid IN (SELECT c.objid FROM pg_catalog.pg_event_trigger_ddl_commands() c
					   WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass);
END
$$;

CREATE EVENT TRIGGER ttl_index_on_alter_table ON ddl_command_end
	WHEN TAG IN ('ALTER TABLE')
	EXECUTE FUNCTION @extschema@.ttl_index_on_alter_table();

-- The SQL surface.

CREATE FUNCTION @extschema@.ttl_create_index(
	table_name regclass,
	column_name text,
	expire_after interval,
	batch_size integer DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_create_index'
LANGUAGE C;

CREATE FUNCTION @extschema@.ttl_create_index(
	table_name regclass,
	column_name text,
	expire_after bigint,
	batch_size integer DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_create_index_seconds'
LANGUAGE C;

COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, interval, integer) IS
	'create or change the TTL policy of a table column; returns the policy id';
COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, bigint, integer) IS
	'create or change the TTL policy of a table column, TTL in seconds; returns the policy id';

CREATE FUNCTION @extschema@.ttl_drop_index(
	table_name regclass,
	column_name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'ttl_drop_index'
LANGUAGE C;

COMMENT ON FUNCTION @extschema@.ttl_drop_index(regclass, text) IS
	'drop the TTL policy of a table column, and the index if ttl_create_index made it';

CREATE FUNCTION @extschema@.ttl_runner()
RETURNS bigint
AS 'MODULE_PATHNAME', 'ttl_runner'
LANGUAGE C;

COMMENT ON FUNCTION @extschema@.ttl_runner() IS
	'purge every due policy of this database that the caller owns, now; returns rows deleted';

-- Monitoring.

CREATE FUNCTION @extschema@.ttl_index_policy_stats(
	OUT policy_id integer,
	OUT rows_deleted bigint,
	OUT batches bigint,
	OUT passes bigint,
	OUT rows_skipped_locked bigint,
	OUT skipped_locked bigint,
	OUT errors bigint,
	OUT last_error text,
	OUT last_error_at timestamptz,
	OUT last_run timestamptz,
	OUT time_spent interval,
	OUT lag interval,
	OUT next_expiry timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ttl_index_policy_stats'
LANGUAGE C STABLE;

CREATE VIEW @extschema@.ttl_index_stats AS
	SELECT p.id AS policy_id,
		   p.relid AS table_name,
		   p.column_name,
		   p.expire_after,
		   coalesce(p.batch_size,
					pg_catalog.current_setting('ttl_index.batch_size', true)::integer)
			 AS batch_size,
		   p.enabled,
		   coalesce(s.rows_deleted, 0) AS rows_deleted,
		   coalesce(s.batches, 0) AS batches,
		   coalesce(s.passes, 0) AS passes,
		   coalesce(s.rows_skipped_locked, 0) AS rows_skipped_locked,
		   coalesce(s.skipped_locked, 0) AS skipped_locked,
		   coalesce(s.errors, 0) AS errors,
		   s.last_error,
		   s.last_error_at,
		   s.last_run,
		   coalesce(s.time_spent, interval '0') AS time_spent,
		   s.lag,
		   s.next_expiry
	  FROM @extschema@.ttl_index_policy p
	  LEFT JOIN @extschema@.ttl_index_policy_stats() s ON s.policy_id = p.id;

GRANT SELECT ON @extschema@.ttl_index_stats TO PUBLIC;

-- Warn when the library is not preloaded, and tell the launcher about this
-- database when the CREATE EXTENSION commits.
CREATE FUNCTION @extschema@.ttl_index_installed()
RETURNS void
AS 'MODULE_PATHNAME', 'ttl_index_installed'
LANGUAGE C;

SELECT @extschema@.ttl_index_installed();
