/* ttl_index--1.2--1.3.sql: from 1.2 to 1.3 (rows held back, the SQLSTATE of the last error and the rows of the last pass in ttl_index_stats, the databases and their turns in ttl_index_databases, a TTL written as a quoted literal) */

-- A fresh CREATE EXTENSION of 1.3 runs ttl_index--1.0.sql, then each
-- upgrade script in turn, ending with this one.

\echo Use "ALTER EXTENSION ttl_index UPDATE TO '1.3'" to load this file. \quit

-- ttl_index_stats gains rows_held (expired rows the last pass left in
-- place: still referenced by a foreign key, refused by a trigger or a
-- constraint), last_error_sqlstate and rows_last_pass (rows the last
-- complete pass deleted, archived or soft-deleted).
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
	OUT partitions_dropped bigint,
	OUT rows_held bigint,
	OUT last_error_sqlstate text,
	OUT rows_last_pass bigint)
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
		   coalesce(s.partitions_dropped, 0) AS partitions_dropped,
		   coalesce(s.rows_held, 0) AS rows_held,
		   s.last_error_sqlstate,
		   coalesce(s.rows_last_pass, 0) AS rows_last_pass
	  FROM @extschema@.ttl_index_policy p
	  LEFT JOIN @extschema@.ttl_index_policy_stats() s ON s.policy_id = p.id;

GRANT SELECT ON @extschema@.ttl_index_stats TO PUBLIC;

-- The databases the launcher keeps track of, and their turns when more of
-- them need a worker than ttl_index.max_workers allows.
CREATE FUNCTION @extschema@.ttl_index_database_status(
	OUT datid oid,
	OUT datname name,
	OUT state text,
	OUT worker_pid integer,
	OUT waiting_since timestamptz,
	OUT turn_started timestamptz,
	OUT turns bigint,
	OUT has_extension boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ttl_index_databases'
LANGUAGE C VOLATILE;

CREATE VIEW @extschema@.ttl_index_databases AS
	SELECT * FROM @extschema@.ttl_index_database_status();

GRANT SELECT ON @extschema@.ttl_index_databases TO PUBLIC;

-- A TTL written as a quoted literal, ttl_create_index('t', 'c', '3600'):
-- an untyped literal matched both the interval and the bigint form, and
-- PostgreSQL refused the call as ambiguous.  Text is the preferred type
-- for an untyped literal, so this form takes it; it reads the text as an
-- interval, where a bare number is seconds.
CREATE FUNCTION @extschema@.ttl_create_index(
	table_name regclass,
	column_name text,
	expire_after text,
	batch_size integer DEFAULT NULL,
	soft_delete_column text DEFAULT NULL,
	ttl_column text DEFAULT NULL,
	filter text DEFAULT NULL,
	unit text DEFAULT NULL,
	action text DEFAULT NULL,
	archive_table regclass DEFAULT NULL,
	rate_limit integer DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_create_index_text'
LANGUAGE C;

COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, text, integer, text, text, text, text, text, regclass, integer) IS
	'create or change the TTL policy of a table column, TTL as text (''3600'' or ''1 hour''); returns the policy id';

