/* ttl_index--1.0--1.1.sql: from 1.0 to 1.1 (monitoring, column type check, dump-safe index record) */

-- A fresh CREATE EXTENSION of 1.1 runs ttl_index--1.0.sql and then this
-- file: there is no separate full 1.1 script, so a new install and an
-- upgraded one are the same by construction.

\echo Use "ALTER EXTENSION ttl_index UPDATE TO '1.1'" to load this file. \quit

-- ALTER TABLE ... ALTER COLUMN ... TYPE on a TTL column: refuse a type the
-- purge cannot use (the list matches ttl_type_supported() in catalog.c),
-- instead of leaving a policy that fails on every batch.  Renames are kept
-- in step as in 1.0.
CREATE OR REPLACE FUNCTION @extschema@.ttl_index_on_alter_table()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	bad record;
BEGIN
	SELECT p.relid, p.column_name, a.atttypid::pg_catalog.regtype AS newtype
	  INTO bad
	  FROM @extschema@.ttl_index_policy p
	  JOIN pg_catalog.pg_attribute a ON a.attrelid = p.relid AND a.attnum = p.attnum
	 WHERE NOT a.attisdropped
	   AND a.atttypid NOT IN ('pg_catalog.timestamptz'::pg_catalog.regtype,
							  'pg_catalog.timestamp'::pg_catalog.regtype,
							  'pg_catalog.date'::pg_catalog.regtype)
	   AND p.relid IN (SELECT c.objid FROM pg_catalog.pg_event_trigger_ddl_commands() c
					   WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass)
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'column "%" of table % has a TTL policy, which cannot use type %',
			bad.column_name, bad.relid, bad.newtype
			USING ERRCODE = 'dependent_objects_still_exist',
				  HINT = 'Drop the policy with ttl_drop_index() first, or keep the column timestamptz, timestamp or date.';
	END IF;

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

-- The index ttl_create_index made is no longer recorded by OID in the
-- catalog but by a comment on the index itself.  An OID column broke
-- pg_dump: the catalog's data is restored before the indexes exist (and
-- ALTER COLUMN ... TYPE rebuilds indexes under new OIDs).  Comments are
-- dumped with their index and kept by rebuilds.  Mark the indexes 1.0 made,
-- then drop the column.
-- (1.0 could keep the OID of an index REINDEX CONCURRENTLY or ALTER COLUMN
-- TYPE had replaced: only indexes that still exist are marked.)
DO $$
DECLARE
	idx regclass;
BEGIN
	FOR idx IN SELECT c.oid::pg_catalog.regclass
				 FROM @extschema@.ttl_index_policy p
				 JOIN pg_catalog.pg_class c
				   ON c.oid = p.created_index::pg_catalog.oid AND c.relkind = 'i'
	LOOP
		EXECUTE pg_catalog.format('COMMENT ON INDEX %s IS %L', idx,
								  'created by ttl_index; dropped by ttl_drop_index()');
	END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.ttl_index_on_sql_drop()
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
		ELSE
			DELETE FROM @extschema@.ttl_index_policy
			 WHERE relid = obj.objid AND attnum = obj.objsubid;
		END IF;
	END LOOP;
END
$$;

ALTER TABLE @extschema@.ttl_index_policy DROP COLUMN created_index;

-- ttl_index_stats gains expired_estimate and stats_reset.
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
	OUT stats_reset timestamptz)
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
		   s.stats_reset
	  FROM @extschema@.ttl_index_policy p
	  LEFT JOIN @extschema@.ttl_index_policy_stats() s ON s.policy_id = p.id;

GRANT SELECT ON @extschema@.ttl_index_stats TO PUBLIC;

-- Resetting the counters is restricted as pg_stat_reset() is: superusers,
-- and roles they grant EXECUTE to.
CREATE FUNCTION @extschema@.ttl_index_stats_reset(table_name regclass DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'ttl_index_stats_reset'
LANGUAGE C;

REVOKE EXECUTE ON FUNCTION @extschema@.ttl_index_stats_reset(regclass) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.ttl_index_stats_reset(regclass) IS
	'zero the ttl_index_stats counters of this database, or of one table';

-- What each worker is doing now.
CREATE FUNCTION @extschema@.ttl_index_worker_progress(
	OUT pid integer,
	OUT datid oid,
	OUT datname name,
	OUT phase text,
	OUT phase_since timestamptz,
	OUT policy_id integer,
	OUT table_name text,
	OUT pass_started timestamptz,
	OUT pass_rows_deleted bigint,
	OUT pass_batches bigint,
	OUT batch_started timestamptz,
	OUT batch_row_limit integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ttl_index_progress'
LANGUAGE C VOLATILE;

CREATE VIEW @extschema@.ttl_index_progress AS
	SELECT * FROM @extschema@.ttl_index_worker_progress();

GRANT SELECT ON @extschema@.ttl_index_progress TO PUBLIC;
