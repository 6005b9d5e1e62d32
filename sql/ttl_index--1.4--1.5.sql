/* sql/ttl_index--1.4--1.5.sql: upgrade ttl_index from 1.4 to 1.5 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl_index UPDATE TO '1.5'" to load this file. \quit

-- When a policy was paused (NULL while it runs): a pause forgotten for
-- longer than ttl_index.stalled_after shows in ttl_index_stats.stalled
-- (views.c).  A policy paused before this update counts from the update.
ALTER TABLE @extschema@.ttl_index_policy ADD COLUMN paused_since timestamptz;
UPDATE @extschema@.ttl_index_policy SET paused_since = now() WHERE NOT enabled;

-- A cap on the table's size in bytes (max_bytes, cap.c: heap, TOAST and
-- indexes, as pg_total_relation_size counts them; the oldest rows beyond
-- the rows that fit go, whatever their age).  expire_after may be NULL
-- beside it too, for a cap alone.  Only the table's owner may set it, as
-- every option; it runs no user code but the table's row-level security
-- (the rows are counted as the owner, as the cap's cut is read), and its
-- size is read from the files.
ALTER TABLE @extschema@.ttl_index_policy
	ADD COLUMN max_bytes bigint CHECK (max_bytes > 0),
	DROP CONSTRAINT ttl_index_policy_expiry_check,
	ADD CONSTRAINT ttl_index_policy_expiry_check
		CHECK (expire_after IS NOT NULL OR max_rows IS NOT NULL OR max_bytes IS NOT NULL);
ALTER TABLE @extschema@.ttl_index_citus_policy ADD COLUMN max_bytes bigint;

-- hide_expired: expired rows are invisible to the table's readers from the
-- moment they expire, through a row-level security policy the extension
-- makes on the table (hide.c).  The Citus copy has the column so that
-- the sync below copies every option; hide_expired is refused on
-- distributed tables.
ALTER TABLE @extschema@.ttl_index_policy ADD COLUMN hide_expired boolean NOT NULL DEFAULT false;
ALTER TABLE @extschema@.ttl_index_citus_policy ADD COLUMN hide_expired boolean NOT NULL DEFAULT false;

-- True only inside ttl_index's own purge statement on that table in this
-- backend, and only for the role the statement runs as, the table's owner
-- (statement.c): the row-level security policy of hide_expired lets the
-- purge see the expired rows it deletes even where the table forces row
-- security on its owner, as the worker runs.  Code the purge reaches that
-- reads another table, or runs as another role (a SECURITY DEFINER
-- function, the triggers of a table a foreign key cascades into), gets
-- false.  Everyone may execute it: it is part of every reader's policy
-- expression, reads nothing and runs no user code; nothing in SQL sets it.
-- PARALLEL SAFE: a parallel worker answers false, as its leader does for
-- every query but the purge's, which is planned without parallel workers.
CREATE FUNCTION @extschema@.ttl_index_purging(regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'ttl_index_purging'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.ttl_index_purging(regclass) IS
	'true only inside ttl_index''s purge statement on that table, as its owner: lets the hide_expired row security policy show it the expired rows';

-- On a Citus coordinator, a policy without a zone of its own (a
-- timestamptz or epoch key) goes to the nodes with the coordinator's zone.
CREATE OR REPLACE FUNCTION @extschema@.ttl_index_citus_sync()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF TG_RELID <> '@extschema@.ttl_index_policy'::pg_catalog.regclass
	   OR TG_LEVEL <> 'ROW' OR TG_WHEN <> 'AFTER' THEN
		RAISE EXCEPTION 'ttl_index_citus_sync() fires only after rows of ttl_index_policy are written'
			USING ERRCODE = 'triggered_action_exception';
	END IF;
	-- one test at a time: a statement naming Citus's catalogs is parsed
	-- only when reached, and they exist only where Citus is installed
	IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL
	   OR pg_catalog.to_regclass('pg_catalog.pg_dist_local_group') IS NULL THEN
		RETURN NULL;
	END IF;
	IF (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g) <> 0 THEN
		RETURN NULL;
	END IF;
	IF TG_OP IN ('UPDATE', 'DELETE')
	   AND EXISTS (SELECT FROM @extschema@.ttl_index_citus_policy m WHERE m.id = OLD.id) THEN
		DELETE FROM @extschema@.ttl_index_citus_policy WHERE id = OLD.id;
	END IF;
	-- distributed as citus.c tells it: hash- or range-distributed, or a
	-- single-shard table of a colocation group (schema-based sharding);
	-- not a reference table, not a Citus local table
	IF TG_OP IN ('INSERT', 'UPDATE')
	   AND EXISTS (SELECT FROM pg_catalog.pg_dist_partition d
				   WHERE d.logicalrelid = NEW.relid
					 AND NOT (d.partmethod = 'n' AND (d.repmodel = 't' OR d.colocationid = 0))) THEN
		IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition d
					   WHERE d.logicalrelid = '@extschema@.ttl_index_citus_policy'::pg_catalog.regclass) THEN
			PERFORM pg_catalog.create_reference_table('@extschema@.ttl_index_citus_policy');
		END IF;
		-- by name: the columns 1.4 added are not in the order of the values.
		-- A policy without a zone of its own (a timestamptz or epoch key)
		-- reads its purge windows in the server's TimeZone: the nodes are
		-- given the coordinator's, so that every node reads them in the
		-- same zone whatever its own TimeZone (a write of the policy, such
		-- as ttl_pause() and ttl_resume(), gives them the one it has then)
		INSERT INTO @extschema@.ttl_index_citus_policy
			(id, table_schema, table_name, column_name, expire_after, batch_size, enabled,
			 ttl_column, filter, unit, action, soft_delete_column, rate_limit,
			 replication_origin, time_zone, filter_functions, purge_window, max_rows, set_columns,
			 max_bytes, hide_expired)
		SELECT NEW.id, n.nspname, c.relname, NEW.column_name, NEW.expire_after,
			   NEW.batch_size, NEW.enabled, NEW.ttl_column, NEW.filter, NEW.unit,
			   NEW.action, NEW.soft_delete_column, NEW.rate_limit,
			   NEW.replication_origin,
			   coalesce(NEW.time_zone, @extschema@.ttl_index_server_time_zone()),
			   NEW.filter_functions::text[],
			   NEW.purge_window, NEW.max_rows, NEW.set_columns, NEW.max_bytes, NEW.hide_expired
		  FROM pg_catalog.pg_class c
		  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		 WHERE c.oid = NEW.relid;
	END IF;
	RETURN NULL;
END
$$;

-- A second ttl_create_index() on a column that has a policy keeps what it
-- does not name: expire_after's default is NULL (left out: kept, or an
-- error for a new policy without max_rows or ttl_column), where it was '0'.
-- ttl_create_index gains max_bytes (cap.c) and hide_expired (hide.c), the
-- last arguments of each form, so the 1.4 forms go.
DROP FUNCTION @extschema@.ttl_create_index(regclass, text, interval, integer, text, text, text, text, text, regclass, integer, boolean, text, text, bigint, text);
DROP FUNCTION @extschema@.ttl_create_index(regclass, text, bigint, integer, text, text, text, text, text, regclass, integer, boolean, text, text, bigint, text);
DROP FUNCTION @extschema@.ttl_create_index(regclass, text, text, integer, text, text, text, text, text, regclass, integer, boolean, text, text, bigint, text);

CREATE FUNCTION @extschema@.ttl_create_index(
	table_name regclass,
	column_name text,
	expire_after interval DEFAULT NULL,
	batch_size integer DEFAULT NULL,
	soft_delete_column text DEFAULT NULL,
	ttl_column text DEFAULT NULL,
	filter text DEFAULT NULL,
	unit text DEFAULT NULL,
	action text DEFAULT NULL,
	archive_table regclass DEFAULT NULL,
	rate_limit integer DEFAULT NULL,
	replication_origin boolean DEFAULT NULL,
	time_zone text DEFAULT NULL,
	purge_window text DEFAULT NULL,
	max_rows bigint DEFAULT NULL,
	set_columns text DEFAULT NULL,
	max_bytes bigint DEFAULT NULL,
	hide_expired boolean DEFAULT NULL)
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
	rate_limit integer DEFAULT NULL,
	replication_origin boolean DEFAULT NULL,
	time_zone text DEFAULT NULL,
	purge_window text DEFAULT NULL,
	max_rows bigint DEFAULT NULL,
	set_columns text DEFAULT NULL,
	max_bytes bigint DEFAULT NULL,
	hide_expired boolean DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_create_index_seconds'
LANGUAGE C;

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
	rate_limit integer DEFAULT NULL,
	replication_origin boolean DEFAULT NULL,
	time_zone text DEFAULT NULL,
	purge_window text DEFAULT NULL,
	max_rows bigint DEFAULT NULL,
	set_columns text DEFAULT NULL,
	max_bytes bigint DEFAULT NULL,
	hide_expired boolean DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_create_index_text'
LANGUAGE C;

COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, interval, integer, text, text, text, text, text, regclass, integer, boolean, text, text, bigint, text, bigint, boolean) IS
	'create the TTL policy of a table column, or change the options the call names; returns the policy id';
COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, bigint, integer, text, text, text, text, text, regclass, integer, boolean, text, text, bigint, text, bigint, boolean) IS
	'create the TTL policy of a table column (TTL in seconds), or change the options the call names; returns the policy id';
COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, text, integer, text, text, text, text, text, regclass, integer, boolean, text, text, bigint, text, bigint, boolean) IS
	'create the TTL policy of a table column (TTL as text: ''3600'' or ''1 hour''), or change the options the call names; returns the policy id';

-- ttl_alter_index changes the options it names and keeps the others
-- (alter.c); reset => '{filter, ...}' removes options.  The TTL is an
-- interval here: '2 days' or interval '2 days'.  ttl_create_index on a
-- column that has a policy keeps what it does not name as well: an
-- argument left out keeps its value in both (expire_after's default is NULL).
CREATE FUNCTION @extschema@.ttl_alter_index(
	table_name regclass,
	column_name text,
	expire_after interval DEFAULT NULL,
	batch_size integer DEFAULT NULL,
	soft_delete_column text DEFAULT NULL,
	ttl_column text DEFAULT NULL,
	filter text DEFAULT NULL,
	unit text DEFAULT NULL,
	action text DEFAULT NULL,
	archive_table regclass DEFAULT NULL,
	rate_limit integer DEFAULT NULL,
	replication_origin boolean DEFAULT NULL,
	time_zone text DEFAULT NULL,
	purge_window text DEFAULT NULL,
	max_rows bigint DEFAULT NULL,
	set_columns text DEFAULT NULL,
	max_bytes bigint DEFAULT NULL,
	hide_expired boolean DEFAULT NULL,
	reset text[] DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_alter_index'
LANGUAGE C;

COMMENT ON FUNCTION @extschema@.ttl_alter_index(regclass, text, interval, integer, text, text, text, text, text, regclass, integer, boolean, text, text, bigint, text, bigint, boolean, text[]) IS
	'change the options of a TTL policy that the call names, keep the others; reset => removes options; returns the policy id';

-- The views are made again for backlog_reason (below), and so that a node
-- removed from a Citus cluster is neither stale nor stalled.
DROP VIEW @extschema@.ttl_index_citus_stats;
DROP VIEW @extschema@.ttl_index_stats;

-- The counters gain backlog_reason: why lag, expired_estimate or
-- next_expiry is NULL, or that they are the worker's last pass's (a policy
-- whose filter or set_columns is its owner's code: the views never run it
-- in the reader's session); and rows_locked, the expired rows the last
-- pass skipped because other transactions had them locked (a number of
-- rows, where rows_skipped_locked counts every batch's skips).
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
	OUT rows_last_pass bigint,
	OUT expiry_rate float8,
	OUT delete_rate float8,
	OUT falling_behind boolean,
	OUT rows_capped bigint,
	OUT rows_anonymized bigint,
	OUT next_window tstzrange,
	OUT backlog_reason text,
	OUT rows_locked bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ttl_index_policy_stats'
LANGUAGE C STABLE;

-- As in 1.4, plus backlog_reason and rows_locked.
CREATE VIEW @extschema@.ttl_index_stats AS
	WITH nodes AS MATERIALIZED (
		SELECT * FROM @extschema@.ttl_index_citus_nodes()
		 WHERE pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL),
	cluster AS (
		SELECT n.policy_id,
			   sum(n.rows_deleted)::bigint AS rows_deleted,
			   sum(n.errors)::bigint AS errors,
			   (pg_catalog.array_agg(n.last_error ORDER BY n.last_run DESC NULLS LAST)
				  FILTER (WHERE n.last_error IS NOT NULL AND NOT n.stale))[1] AS last_error,
			   max(n.last_run) AS last_run,
			   max(n.lag) AS lag,
			   sum(n.expired_estimate)::bigint AS expired_estimate,
			   bool_or(n.falling_behind) AS falling_behind,
			   pg_catalog.string_agg(n.state || ' (' || n.nodename || ':' || n.nodeport || ')', ', '
									 ORDER BY n.nodename, n.nodeport)
				 FILTER (WHERE n.state NOT IN ('purging', 'node removed')) AS stalled
		  FROM nodes n
		 WHERE n.policy_id IS NOT NULL
		 GROUP BY n.policy_id)
	SELECT p.id AS policy_id,
		   p.relid AS table_name,
		   p.column_name,
		   p.expire_after,
		   coalesce(p.batch_size,
					pg_catalog.current_setting('ttl_index.batch_size', true)::integer)
			 AS batch_size,
		   p.enabled,
		   coalesce(c.rows_deleted, s.rows_deleted, 0) AS rows_deleted,
		   coalesce(s.batches, 0) AS batches,
		   coalesce(s.passes, 0) AS passes,
		   coalesce(s.rows_skipped_locked, 0) AS rows_skipped_locked,
		   coalesce(s.skipped_locked, 0) AS skipped_locked,
		   coalesce(c.errors, s.errors, 0) AS errors,
		   coalesce(c.last_error, s.last_error) AS last_error,
		   s.last_error_at,
		   coalesce(c.last_run, s.last_run) AS last_run,
		   coalesce(s.time_spent, interval '0') AS time_spent,
		   CASE WHEN c.policy_id IS NOT NULL THEN c.lag ELSE s.lag END AS lag,
		   CASE WHEN c.policy_id IS NOT NULL THEN c.expired_estimate ELSE s.expired_estimate END AS expired_estimate,
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
		   coalesce(s.rows_last_pass, 0) AS rows_last_pass,
		   p.replication_origin,
		   coalesce(s.expiry_rate, 0) AS expiry_rate,
		   coalesce(s.delete_rate, 0) AS delete_rate,
		   coalesce(c.falling_behind, s.falling_behind, false) AS falling_behind,
		   p.time_zone,
		   CASE WHEN c.stalled IS NULL THEN h.stalled
				WHEN h.stalled IS NULL THEN c.stalled
				ELSE h.stalled || '; ' || c.stalled END AS stalled,
		   p.purge_window,
		   s.next_window,
		   p.max_rows,
		   coalesce(s.rows_capped, 0) AS rows_capped,
		   p.set_columns,
		   coalesce(s.rows_anonymized, 0) AS rows_anonymized,
		   CASE WHEN c.policy_id IS NOT NULL THEN NULL ELSE s.backlog_reason END AS backlog_reason,
		   coalesce(s.rows_locked, 0) AS rows_locked,
		   p.max_bytes,
		   p.hide_expired
	  FROM @extschema@.ttl_index_policy p
	  LEFT JOIN @extschema@.ttl_index_policy_stats() s ON s.policy_id = p.id
	  LEFT JOIN cluster c ON c.policy_id = p.id
	  LEFT JOIN @extschema@.ttl_index_policy_health() h ON h.policy_id = p.id;

GRANT SELECT ON @extschema@.ttl_index_stats TO PUBLIC;

-- The whole table: rows and errors summed over the nodes (a node that did
-- not answer by its last known counters), the greatest lag, the expired
-- rows summed, how many nodes answered, and which nodes leave rows waiting.
CREATE VIEW @extschema@.ttl_index_citus_stats AS
	WITH n AS MATERIALIZED (
		SELECT * FROM @extschema@.ttl_index_citus_nodes()
		 WHERE pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL)
	SELECT p.id AS policy_id,
		   p.relid AS table_name,
		   p.column_name,
		   p.expire_after,
		   count(n.nodename) FILTER (WHERE NOT n.stale) AS nodes,
		   count(n.nodename) FILTER (WHERE NOT n.stale AND n.errors > 0) AS nodes_with_errors,
		   (SELECT count(DISTINCT (u.nodename, u.nodeport)) FROM n u WHERE NOT u.reachable) AS nodes_unreachable,
		   coalesce(sum(n.rows_deleted), 0)::bigint AS rows_deleted,
		   coalesce(sum(n.errors), 0)::bigint AS errors,
		   max(n.lag) AS lag,
		   sum(n.expired_estimate)::bigint AS expired_estimate,
		   coalesce(bool_or(n.falling_behind), false) AS falling_behind,
		   max(n.last_run) AS last_run,
		   count(n.nodename) FILTER (WHERE n.stale AND n.rows_deleted IS NOT NULL
									   AND n.state <> 'node removed') AS nodes_stale,
		   pg_catalog.string_agg(n.state || ' (' || n.nodename || ':' || n.nodeport || ')', ', '
								 ORDER BY n.nodename, n.nodeport)
			 FILTER (WHERE n.state NOT IN ('purging', 'node removed')) AS stalled
	  FROM @extschema@.ttl_index_policy p
	  JOIN n ON n.policy_id = p.id
	 GROUP BY p.id, p.relid, p.column_name, p.expire_after;

GRANT SELECT ON @extschema@.ttl_index_citus_stats TO PUBLIC;

-- ttl_expires_at(now(), '1 hour'): an untyped literal resolves to these
-- (text is the preferred type of an unknown literal), read as an interval,
-- as ttl_create_index's text form reads its TTL.  STABLE: reading an
-- interval depends on IntervalStyle.
CREATE FUNCTION @extschema@.ttl_expires_at(base timestamptz, ttl text)
RETURNS timestamptz
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN @extschema@.ttl_expires_at(base, CAST(ttl AS pg_catalog.interval));

CREATE FUNCTION @extschema@.ttl_expires_at(base timestamp, ttl text)
RETURNS timestamp
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN @extschema@.ttl_expires_at(base, CAST(ttl AS pg_catalog.interval));

-- ttl_summary() says whether each policy is healthy: pg_ttl_index users are
-- told to keep monitoring with it (docs/migrating.md), and its columns alone
-- look the same for a policy that purges and one that is stuck.  The new
-- columns come after pg_ttl_index's, so queries written for it still work:
-- healthy is false while the policy is paused, stalled (ttl_index_stats.
-- stalled says why) or falling behind; errors, last_error and lag are
-- ttl_index_stats' own (lag NULL for those who may not see it).
DROP FUNCTION @extschema@.ttl_summary();
CREATE FUNCTION @extschema@.ttl_summary(
	OUT schema_name text,
	OUT table_name text,
	OUT column_name text,
	OUT expire_after_seconds bigint,
	OUT batch_size integer,
	OUT active boolean,
	OUT last_run timestamptz,
	OUT time_since_last_run interval,
	OUT rows_deleted_last_run bigint,
	OUT total_rows_deleted bigint,
	OUT index_name text,
	OUT soft_delete_column text,
	OUT cleanup_mode text,
	OUT healthy boolean,
	OUT stalled text,
	OUT errors bigint,
	OUT last_error text,
	OUT lag interval)
RETURNS SETOF record
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT n.nspname::text,
		   c.relname::text,
		   s.column_name::text,
		   extract(epoch FROM s.expire_after)::bigint,
		   s.batch_size,
		   NOT s.paused,
		   s.last_run,
		   now() - s.last_run,
		   s.rows_last_pass,
		   s.rows_deleted + s.rows_soft_deleted,
		   (SELECT ic.relname::text
			  FROM pg_index i
			  JOIN pg_class ic ON ic.oid = i.indexrelid
			  JOIN pg_am am ON am.oid = ic.relam
			  JOIN @extschema@.ttl_index_policy p ON p.id = s.policy_id
			 WHERE i.indrelid = s.table_name
			   AND i.indkey[0] = p.attnum
			   AND i.indisvalid
			   AND am.amname = 'btree'
			 ORDER BY obj_description(i.indexrelid, 'pg_class')
					  IS DISTINCT FROM 'created by ttl_index; dropped by ttl_drop_index()',
					  i.indpred IS NOT NULL,
					  ic.relname
			 LIMIT 1),
		   s.soft_delete_column::text,
		   CASE s.action
			   WHEN 'soft_delete' THEN 'soft_delete'
			   WHEN 'archive' THEN 'archive'
			   WHEN 'anonymize' THEN 'anonymize'
			   ELSE 'hard_delete'
		   END,
		   NOT s.paused AND s.stalled IS NULL AND NOT s.falling_behind,
		   s.stalled,
		   s.errors,
		   s.last_error,
		   s.lag
	  FROM @extschema@.ttl_index_stats s
	  JOIN pg_class c ON c.oid = s.table_name
	  JOIN pg_namespace n ON n.oid = c.relnamespace
	 ORDER BY 1, 2, 3
$$;

COMMENT ON FUNCTION @extschema@.ttl_summary() IS
	'pg_ttl_index''s summary columns, from ttl_index_stats, then whether each policy is healthy and why not';

-- A set column of an anonymize policy must stay able to store its value,
-- and must not become unique (set.c: the rule ttl_create_index() applies).
-- ALTER TABLE is checked by ttl_index_on_alter_table; CREATE INDEX (a
-- unique index on a set column, of the table or of one of its partitions
-- or children) here.  The command's tag goes into the error.
CREATE FUNCTION @extschema@.ttl_index_check_policy(policy_id integer, command text)
RETURNS void
AS 'MODULE_PATHNAME', 'ttl_index_check_policy'
LANGUAGE C STRICT;

REVOKE EXECUTE ON FUNCTION @extschema@.ttl_index_check_policy(integer, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.ttl_index_on_create_index()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	pid integer;
BEGIN
	FOR pid IN
		WITH RECURSIVE up(relid) AS (
			SELECT i.indrelid
			  FROM pg_catalog.pg_event_trigger_ddl_commands() c
			  JOIN pg_catalog.pg_index i ON i.indexrelid = c.objid
			 WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
			UNION
			SELECT h.inhparent
			  FROM up JOIN pg_catalog.pg_inherits h ON h.inhrelid = up.relid)
		SELECT p.id FROM @extschema@.ttl_index_policy p
		 WHERE p.set_columns IS NOT NULL AND p.relid IN (SELECT relid FROM up)
		 ORDER BY p.id
	LOOP
		PERFORM @extschema@.ttl_index_check_policy(pid, TG_TAG);
	END LOOP;
END
$$;

CREATE EVENT TRIGGER ttl_index_on_create_index ON ddl_command_end
	WHEN TAG IN ('CREATE INDEX')
	EXECUTE FUNCTION @extschema@.ttl_index_on_create_index();

-- ttl_from_cron() as in 1.4, but for months: a job's interval '6 months'
-- becomes a calendar TTL of 6 months (1.5 counts them as the job did, in
-- the zone of the job's session, which the call then names for a
-- timestamptz column too), where 1.4 wrote 180 days.  Same security as in
-- 1.4: SECURITY INVOKER, reads cron.job only when pg_cron's superuser owns
-- it, runs no user code; it returns calls to review, and runs none.
--
-- ttl_from_cron(): a job is recognised only when it is exactly an expiry
-- DELETE of its own table: DELETE FROM t WHERE c < now() - interval '...'
-- (also current_timestamp, clock_timestamp(), localtimestamp,
-- statement_timestamp(), transaction_timestamp(), '<x>'::interval and
-- make_interval(secs => n)), or the usual batching form DELETE FROM t WHERE
-- k IN (SELECT k FROM t WHERE c < ... [ORDER BY ...] [LIMIT n]) or k = ANY
-- (ARRAY(SELECT ...)) on the same table.  Other conditions joined by AND
-- become the policy's filter; an OR, an interval multiplied or added to,
-- a condition on another table, anything else: not recognised.  A job
-- whose text cannot be read (an interval that does not parse) is not
-- recognised either, and the others are still listed.
CREATE OR REPLACE FUNCTION @extschema@.ttl_from_cron(
	OUT jobid bigint,
	OUT jobname text,
	OUT database text,
	OUT schedule text,
	OUT command text,
	OUT ttl_call text,
	OUT note text)
RETURNS SETOF record
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET IntervalStyle = postgres
AS $$
DECLARE
	j			jsonb;
	stmt		text;
	stmts		text[];
	m			text[];
	tab			text[];
	tab_text	text;
	alias		text;
	w			text;
	inner_w		text;
	rest		text;
	col			text;
	qual		text;
	span		interval;
	span_text	text;
	n_months	int;
	found_one	boolean;
	zone		text;
	zone_arg	text;
	rel			regclass;
	ident		constant text := '(?:"(?:[^"]|"")+"|[[:alpha:]_][[:alnum:]_$]*)';
	qname		constant text := '(?:"(?:[^"]|"")+"|[[:alpha:]_][[:alnum:]_$]*)(?:\s*\.\s*(?:"(?:[^"]|"")+"|[[:alpha:]_][[:alnum:]_$]*))?';
	now_fn		constant text :=
		'(?:now\(\s*\)|current_timestamp|clock_timestamp\(\s*\)|localtimestamp|'
		'statement_timestamp\(\s*\)|transaction_timestamp\(\s*\))';
	span_re		constant text :=
		'(?:interval\s*''([^'']+)''|''([^'']+)''\s*::\s*interval|'
		'make_interval\(\s*secs\s*=>\s*([0-9]+(?:\.[0-9]+)?)\s*\))';
	not_recognised constant text :=
		'not recognised as an expiry cleanup (DELETE FROM t WHERE c < now() - interval ''...'')';
BEGIN
	IF to_regclass('cron.job') IS NULL THEN
		RAISE EXCEPTION 'pg_cron is not installed in this database'
			USING ERRCODE = 'undefined_table',
				  HINT = 'Call ttl_from_cron() in the database that has CREATE EXTENSION pg_cron (cron.database_name).';
	END IF;
	-- pg_cron's table belongs to a superuser; anything else named cron.job
	-- (a view, a role's table) could run its owner's code as the caller
	IF NOT (SELECT c.relkind = 'r' AND r.rolsuper
			  FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
			 WHERE c.oid = 'cron.job'::regclass) THEN
		RAISE EXCEPTION 'cron.job is not pg_cron''s: it is not a table owned by a superuser'
			USING ERRCODE = 'wrong_object_type';
	END IF;
	FOR j IN SELECT to_jsonb(c) FROM cron.job c ORDER BY c.jobid
	LOOP
		jobid := (j->>'jobid')::bigint;
		jobname := j->>'jobname';
		database := j->>'database';
		schedule := j->>'schedule';
		command := j->>'command';
		found_one := false;
		stmts := ARRAY(SELECT u FROM unnest(regexp_split_to_array(coalesce(command, ''), ';')) u
						WHERE u !~ '^\s*$');
		FOREACH stmt IN ARRAY stmts
		LOOP
			ttl_call := NULL;
			note := NULL;
			-- one job's text that does not parse is that job's answer only
			BEGIN
				stmt := btrim(stmt, E' \t\r\n');
				-- DELETE FROM [ONLY] table [[AS] alias] WHERE ...
				m := regexp_match(stmt, '^delete\s+from\s+(?:only\s+)?(' || qname || ')'
								  '(?:\s+(?:as\s+)?(' || ident || '))?\s+where\s+(.*)$', 'i');
				CONTINUE WHEN m IS NULL OR lower(coalesce(m[2], '')) = 'where';
				tab := parse_ident(m[1]);
				alias := m[2];
				w := m[3];
				-- the batching form: the rows of a subquery on the same table
				m := regexp_match(w, '^(' || ident || ')\s*(?:in\s*\(|=\s*any\s*\(\s*array\s*\()'
								  '\s*select\s+(' || ident || ')\s+from\s+(?:only\s+)?(' || qname || ')'
								  '(?:\s+(?:as\s+)?(' || ident || '))?\s+where\s+(.*)$', 'i');
				IF m IS NOT NULL THEN
					CONTINUE WHEN m[1] <> m[2] OR parse_ident(m[3]) <> tab;
					inner_w := regexp_replace(m[5], '\)\s*(\)\s*)?$', '');
					CONTINUE WHEN inner_w = m[5];
					inner_w := regexp_replace(inner_w, '\s+limit\s+[0-9]+\s*$', '', 'i');
					inner_w := regexp_replace(inner_w, '\s+order\s+by\s+[^()'']*$', '', 'i');
					w := inner_w;
					alias := m[4];
				END IF;
				-- [qualifier.]column < now - interval, alone or ANDed with others
				m := regexp_match(w, '^(?:(' || ident || ')\s*\.\s*)?(' || ident || ')\s*<=?\s*' ||
								  now_fn || '\s*-\s*' || span_re || '(?:\s+and\s+(.*))?$', 'i');
				CONTINUE WHEN m IS NULL;
				qual := m[1];
				rest := m[6];
				CONTINUE WHEN qual IS NOT NULL AND
					(parse_ident(qual))[1] IS DISTINCT FROM tab[array_upper(tab, 1)] AND
					(parse_ident(qual))[1] IS DISTINCT FROM (parse_ident(coalesce(alias, '""""')))[1];
				-- an OR anywhere could bind the conditions otherwise than read
				CONTINUE WHEN rest IS NOT NULL AND rest ~* '\mor\M';
				col := (parse_ident(m[2]))[1];
				span_text := coalesce(m[3], m[4], m[5] || ' seconds');
				span := span_text::interval;
				tab_text := array_to_string(ARRAY(SELECT CASE WHEN x ~ '^[a-z_][a-z0-9_$]*$' THEN x
																ELSE quote_ident(x) END
													FROM unnest(tab) x), '.');
				note := format('then SELECT cron.unschedule(%s)', jobid);
				n_months := 12 * extract(year FROM span)::int + extract(month FROM span)::int;
				-- a TTL counts calendar months as the job does (1.5), but
				-- not beside a negative part: those become 30 days each
				IF n_months <> 0 AND span - make_interval(months => n_months) < interval '0' THEN
					span := span - make_interval(months => n_months) + make_interval(days => 30 * n_months);
					note := format('a TTL does not mix months with a negative part: %s is written as %s. ',
								   span_text, span) || note;
					span_text := span::text;
					n_months := 0;
				END IF;
				IF array_length(stmts, 1) > 1 THEN
					note := 'the job runs other statements too: keep them in a job of their own. ' || note;
				END IF;
				IF database IS NOT NULL AND database <> current_database() THEN
					note := format('run the call in database %s. ', database) || note;
				END IF;
				-- a timestamp or date column is read in the zone the job's
				-- session had: its role's and database's TimeZone setting
				zone := @extschema@.ttl_index_login_time_zone(
					coalesce(database, current_database()), coalesce(j->>'username', current_user));
				zone_arg := '';
				-- the table as the job named it, from its default search_path
				-- ("$user", public) when unqualified
				rel := NULL;
				IF database IS NULL OR database = current_database() THEN
					IF array_length(tab, 1) > 1 THEN
						rel := to_regclass(tab_text);
					ELSE
						rel := coalesce(to_regclass(quote_ident(coalesce(j->>'username', current_user)) || '.' || quote_ident(tab[1])),
										to_regclass('public.' || quote_ident(tab[1])));
					END IF;
				END IF;
				IF rel IS NOT NULL AND zone IS NOT NULL THEN
					IF (SELECT coalesce(nullif(t.typbasetype, 0), t.oid)
								 IN ('pg_catalog.timestamp'::regtype, 'pg_catalog.date'::regtype)
						  FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
						 WHERE a.attrelid = rel AND a.attname = col AND NOT a.attisdropped) THEN
						zone_arg := format(', time_zone => %L', zone);
						note := format('the job read %s in time zone %s, its session''s; so does the policy. ',
									   col, zone) || note;
					ELSIF n_months <> 0 THEN
						-- months of a timestamptz are counted in a zone too
						zone_arg := format(', time_zone => %L', zone);
						note := format('the job counted its months in time zone %s, its session''s; so does the policy. ',
									   zone) || note;
					END IF;
				ELSIF zone IS NOT NULL AND n_months <> 0 THEN
					note := format('add time_zone => %L, the zone the job''s session counted its months in. ',
								   zone) || note;
				ELSIF zone IS NOT NULL THEN
					note := format('if %s is a timestamp or date column, add time_zone => %L, the zone the job''s session read it in. ',
								   col, zone) || note;
				END IF;
				IF rest IS NULL THEN
					ttl_call := format('SELECT ttl_create_index(%L, %L, interval %L%s);',
									   tab_text, col, span_text, zone_arg);
				ELSE
					note := 'the job deletes only the rows that also match its other conditions, '
							'which the call makes the policy''s filter. ' || note;
					ttl_call := format('SELECT ttl_create_index(%L, %L, interval %L, filter => %L%s);',
									   tab_text, col, span_text, rest, zone_arg);
				END IF;
			EXCEPTION WHEN OTHERS THEN
				ttl_call := NULL;
				note := NULL;
				CONTINUE;
			END;
			found_one := true;
			RETURN NEXT;
		END LOOP;
		IF NOT found_one THEN
			ttl_call := NULL;
			note := not_recognised;
			RETURN NEXT;
		END IF;
	END LOOP;
END
$$;

-- ttl_preview(table): what the next pass of each policy of the table would
-- do, counted by the engine's own pass in a mode that changes nothing
-- (src/api/preview.c).  Security: any role may execute it, but it refuses
-- all but the table's owner, a member of the owning role and superusers
-- (as ttl_create_index()).  The user code it reaches (the filter's
-- functions, the anonymize condition, the key expression, row-level
-- security forced on the owner) runs as the table owner in a
-- security-restricted operation with the owner's settings, as the worker
-- runs it, never with the caller's rights; it takes ACCESS SHARE locks
-- only and writes nothing, so it works in a read-only transaction.
CREATE FUNCTION @extschema@.ttl_preview(
	"table" regclass,
	OUT policy_id integer,
	OUT column_name text,
	OUT action text,
	OUT enabled boolean,
	OUT window_open boolean,
	OUT next_window timestamptz,
	OUT "rows" bigint,
	OUT rows_capped bigint,
	OUT rows_kept bigint,
	OUT partitions integer,
	OUT oldest text,
	OUT oldest_expiry timestamptz,
	OUT newest text,
	OUT newest_expiry timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ttl_preview'
LANGUAGE C VOLATILE CALLED ON NULL INPUT;

COMMENT ON FUNCTION @extschema@.ttl_preview(regclass) IS
'What the next pass of each TTL policy of the table would delete, archive, soft-delete or anonymize, computed as the worker would; changes nothing';

-- The column numbers follow the names on an update as well: a second
-- ttl_create_index() or a ttl_alter_index() that names a ttl_column or a
-- soft_delete_column updates the policy's row (INSERT ... ON CONFLICT DO
-- UPDATE), and with the trigger on INSERT alone their numbers stayed NULL,
-- so that the next ALTER TABLE of the table, which sets the names from the
-- numbers (ttl_index_on_alter_table), failed the catalog's checks.  An
-- update that sets the names from the numbers resolves the same numbers.
DROP TRIGGER ttl_index_policy_resolve ON @extschema@.ttl_index_policy;
CREATE TRIGGER ttl_index_policy_resolve
	BEFORE INSERT OR UPDATE ON @extschema@.ttl_index_policy
	FOR EACH ROW EXECUTE FUNCTION @extschema@.ttl_index_policy_resolve();
