/* ttl_index--1.1--1.2.sql: from 1.1 to 1.2 (expiry semantics: per-row TTL, filters, epoch columns, partitioned tables, archive and soft delete, per-policy rate limits, pause and resume) */

-- A fresh CREATE EXTENSION of 1.2 runs ttl_index--1.0.sql, then
-- ttl_index--1.0--1.1.sql, then this file.

\echo Use "ALTER EXTENSION ttl_index UPDATE TO '1.2'" to load this file. \quit

-- New policy attributes.  Columns other than the TTL column are stored the
-- same way as it is: by name, which pg_dump writes and a restore resolves,
-- and by number, which follows renames (see ttl_index_policy_resolve).
ALTER TABLE @extschema@.ttl_index_policy
	ADD COLUMN ttl_column name,
	ADD COLUMN ttl_attnum int2,
	ADD COLUMN filter text,
	ADD COLUMN unit text CHECK (unit IN ('s', 'ms', 'us', 'ns')),
	ADD COLUMN action text NOT NULL DEFAULT 'delete'
		CHECK (action IN ('delete', 'archive', 'soft_delete')),
	ADD COLUMN archive_table regclass,
	ADD COLUMN soft_delete_column name,
	ADD COLUMN soft_attnum int2,
	ADD COLUMN rate_limit integer CHECK (rate_limit > 0),
	ADD CONSTRAINT ttl_index_policy_action_args_check CHECK (
		(action = 'archive') = (archive_table IS NOT NULL) AND
		(action = 'soft_delete') = (soft_delete_column IS NOT NULL));

CREATE FUNCTION @extschema@.ttl_index_attnum(rel regclass, col name)
RETURNS int2
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	num int2;
BEGIN
	IF col IS NULL THEN
		RETURN NULL;
	END IF;
	SELECT a.attnum INTO num
	  FROM pg_catalog.pg_attribute a
	 WHERE a.attrelid = rel AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of relation % does not exist', col, rel
			USING ERRCODE = 'undefined_column';
	END IF;
	RETURN num;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.ttl_index_policy_resolve()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	NEW.attnum := @extschema@.ttl_index_attnum(NEW.relid, NEW.column_name);
	NEW.ttl_attnum := @extschema@.ttl_index_attnum(NEW.relid, NEW.ttl_column);
	NEW.soft_attnum := @extschema@.ttl_index_attnum(NEW.relid, NEW.soft_delete_column);
	RETURN NEW;
END
$$;

-- ALTER TABLE: refuse a change that leaves a policy unable to work (a
-- column type the purge cannot use, a filter that no longer parses against
-- the table, an archive table that no longer takes the table's rows; the
-- archive table's own ALTERs are checked too), and keep the stored column
-- names equal to the live ones.
-- ttl_index_check_policy() (C, api.c) does the checking; the type rules
-- live there, in one place.
CREATE FUNCTION @extschema@.ttl_index_check_policy(policy_id integer)
RETURNS void
AS 'MODULE_PATHNAME', 'ttl_index_check_policy'
LANGUAGE C STRICT;

REVOKE EXECUTE ON FUNCTION @extschema@.ttl_index_check_policy(integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.ttl_index_on_alter_table()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	pid integer;
BEGIN
	UPDATE @extschema@.ttl_index_policy p
	   SET column_name = (SELECT a.attname FROM pg_catalog.pg_attribute a
						   WHERE a.attrelid = p.relid AND a.attnum = p.attnum),
		   ttl_column = (SELECT a.attname FROM pg_catalog.pg_attribute a
						  WHERE a.attrelid = p.relid AND a.attnum = p.ttl_attnum),
		   soft_delete_column = (SELECT a.attname FROM pg_catalog.pg_attribute a
								  WHERE a.attrelid = p.relid AND a.attnum = p.soft_attnum)
	 WHERE p.relid IN (SELECT c.objid FROM pg_catalog.pg_event_trigger_ddl_commands() c
					   WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass);

	FOR pid IN SELECT p.id FROM @extschema@.ttl_index_policy p
				WHERE p.relid IN (SELECT c.objid FROM pg_catalog.pg_event_trigger_ddl_commands() c
								  WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass)
				   OR p.archive_table::pg_catalog.oid IN
					  (SELECT c.objid FROM pg_catalog.pg_event_trigger_ddl_commands() c
						WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass)
	LOOP
		PERFORM @extschema@.ttl_index_check_policy(pid);
	END LOOP;
END
$$;

-- DROP: a policy goes with its table or any of its columns.  The table a
-- policy archives into cannot be dropped while the policy exists, as if it
-- depended on it.
CREATE OR REPLACE FUNCTION @extschema@.ttl_index_on_sql_drop()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	obj record;
	bad record;
BEGIN
	FOR obj IN SELECT * FROM pg_catalog.pg_event_trigger_dropped_objects()
		WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass
	LOOP
		IF obj.objsubid = 0 THEN
			DELETE FROM @extschema@.ttl_index_policy WHERE relid = obj.objid;
		ELSE
			DELETE FROM @extschema@.ttl_index_policy
			 WHERE relid = obj.objid
			   AND obj.objsubid IN (attnum, ttl_attnum, soft_attnum);
		END IF;
	END LOOP;

	SELECT p.relid, p.column_name, p.archive_table::pg_catalog.oid AS archive
	  INTO bad
	  FROM @extschema@.ttl_index_policy p
	 WHERE p.archive_table::pg_catalog.oid IN
		   (SELECT d.objid FROM pg_catalog.pg_event_trigger_dropped_objects() d
			 WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objsubid = 0)
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'cannot drop the archive table of the TTL policy on column "%" of table %',
			bad.column_name, bad.relid
			USING ERRCODE = 'dependent_objects_still_exist',
				  HINT = 'Drop the policy with ttl_drop_index() first.';
	END IF;
END
$$;

-- The expiry of a row with a TTL of its own: base + ttl.  Immutable, so an
-- index can be built on it: an interval counts a day as 24 hours and a
-- month as 30 days, whatever the time zone (as interval comparison does).
-- A result past the end of time is infinity: the row never expires.
CREATE FUNCTION @extschema@.ttl_expires_at(base timestamptz, ttl interval)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'ttl_expires_at_interval'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.ttl_expires_at(base timestamptz, ttl bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'ttl_expires_at_seconds'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.ttl_expires_at(base timestamp, ttl interval)
RETURNS timestamp
AS 'MODULE_PATHNAME', 'ttl_expires_at_interval'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.ttl_expires_at(base timestamp, ttl bigint)
RETURNS timestamp
AS 'MODULE_PATHNAME', 'ttl_expires_at_seconds'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.ttl_expires_at(timestamptz, interval) IS
	'when a row with a per-row TTL expires; indexed by ttl_create_index(..., ttl_column => ...)';
COMMENT ON FUNCTION @extschema@.ttl_expires_at(timestamptz, bigint) IS
	'when a row with a per-row TTL in seconds expires; indexed by ttl_create_index(..., ttl_column => ...)';
COMMENT ON FUNCTION @extschema@.ttl_expires_at(timestamp, interval) IS
	'when a row with a per-row TTL expires; indexed by ttl_create_index(..., ttl_column => ...)';
COMMENT ON FUNCTION @extschema@.ttl_expires_at(timestamp, bigint) IS
	'when a row with a per-row TTL in seconds expires; indexed by ttl_create_index(..., ttl_column => ...)';

-- ttl_create_index gains its options.  The first five arguments are
-- positional-compatible with pg_ttl_index: table, column, TTL, batch size,
-- soft-delete column.  Only the interval form has a default TTL (0), so a
-- call without one is not ambiguous.
DROP FUNCTION @extschema@.ttl_create_index(regclass, text, interval, integer);
DROP FUNCTION @extschema@.ttl_create_index(regclass, text, bigint, integer);

CREATE FUNCTION @extschema@.ttl_create_index(
	table_name regclass,
	column_name text,
	expire_after interval DEFAULT '0',
	batch_size integer DEFAULT NULL,
	soft_delete_column text DEFAULT NULL,
	ttl_column text DEFAULT NULL,
	filter text DEFAULT NULL,
	unit text DEFAULT NULL,
	action text DEFAULT NULL,
	archive_table regclass DEFAULT NULL,
	rate_limit integer DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_create_index'
LANGUAGE C;

CREATE FUNCTION @extschema@.ttl_create_index(
	table_name regclass,
	column_name text,
	expire_after bigint,
	batch_size integer DEFAULT NULL,
	soft_delete_column text DEFAULT NULL,
	ttl_column text DEFAULT NULL,
	filter text DEFAULT NULL,
	unit text DEFAULT NULL,
	action text DEFAULT NULL,
	archive_table regclass DEFAULT NULL,
	rate_limit integer DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_create_index_seconds'
LANGUAGE C;

COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, interval, integer, text, text, text, text, text, regclass, integer) IS
	'create or change the TTL policy of a table column; returns the policy id';
COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, bigint, integer, text, text, text, text, text, regclass, integer) IS
	'create or change the TTL policy of a table column, TTL in seconds; returns the policy id';

-- Pause and resume, by table or by table and column.
CREATE FUNCTION @extschema@.ttl_pause(table_name regclass, column_name text DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_pause'
LANGUAGE C;

CREATE FUNCTION @extschema@.ttl_resume(table_name regclass, column_name text DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_resume'
LANGUAGE C;

COMMENT ON FUNCTION @extschema@.ttl_pause(regclass, text) IS
	'stop purging a table (or one of its TTL columns) until ttl_resume(); returns the number of policies paused';
COMMENT ON FUNCTION @extschema@.ttl_resume(regclass, text) IS
	'purge a paused table (or one of its TTL columns) again; returns the number of policies resumed';

-- ttl_index_stats shows the new attributes and counts archived rows and
-- dropped partitions.
DROP VIEW @extschema@.ttl_index_stats;
DROP FUNCTION @extschema@.ttl_index_policy_stats();

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
	OUT expired_estimate bigint,
	OUT next_expiry timestamptz,
	OUT stats_reset timestamptz,
	OUT rows_archived bigint,
	OUT rows_soft_deleted bigint,
	OUT partitions_dropped bigint)
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
		   s.expired_estimate,
		   s.next_expiry,
		   s.stats_reset,
		   NOT p.enabled AS paused,
		   p.ttl_column,
		   p.filter,
		   p.unit,
		   p.action,
		   p.archive_table,
		   p.soft_delete_column,
		   p.rate_limit,
		   coalesce(s.rows_archived, 0) AS rows_archived,
		   coalesce(s.rows_soft_deleted, 0) AS rows_soft_deleted,
		   coalesce(s.partitions_dropped, 0) AS partitions_dropped
	  FROM @extschema@.ttl_index_policy p
	  LEFT JOIN @extschema@.ttl_index_policy_stats() s ON s.policy_id = p.id;

GRANT SELECT ON @extschema@.ttl_index_stats TO PUBLIC;
