/* ttl_index--1.2--1.3.sql: from 1.2 to 1.3 (rows held back, the SQLSTATE of the last error and the rows of the last pass in ttl_index_stats, the databases and their turns in ttl_index_databases, a TTL written as a quoted literal, ttl_summary() and the pg_ttl_index importer, the replication_origin option) */

-- A fresh CREATE EXTENSION of 1.3 runs ttl_index--1.0.sql, then each
-- upgrade script in turn, ending with this one.

\echo Use "ALTER EXTENSION ttl_index UPDATE TO '1.3'" to load this file. \quit

-- A policy's replication_origin: whether the worker's changes carry the
-- replication origin (NULL: as ttl_index.replication_origin says).
ALTER TABLE @extschema@.ttl_index_policy ADD COLUMN replication_origin boolean;

-- ttl_index_stats gains rows_held (expired rows the last pass left in
-- place: still referenced by a foreign key, refused by a trigger or a
-- constraint), last_error_sqlstate, rows_last_pass (rows the last
-- complete pass deleted, archived or soft-deleted), and the worker's
-- expiry_rate, delete_rate and falling_behind (see keepup.c).
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
	OUT rows_last_pass bigint,
	OUT expiry_rate float8,
	OUT delete_rate float8,
	OUT falling_behind boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ttl_index_policy_stats'
LANGUAGE C STABLE;

-- Citus (citus.c).  A policy on a distributed table is made on the
-- coordinator, in ttl_index_policy as any other; this table carries it to
-- every node.  The first such policy makes it a Citus reference table:
-- Citus then copies each change to every node in the same distributed
-- transaction, and copies the table to a node before it places shards
-- there.  The table is named by schema and name, not by regclass: a node
-- added later receives the rows in binary, OIDs and all, and OIDs differ
-- between nodes.  Each node's worker reads the policies from its own
-- placement of this table and purges the placements of the table's shards
-- it holds.  Written only by the trigger below, on the coordinator.
CREATE TABLE @extschema@.ttl_index_citus_policy (
	id					integer PRIMARY KEY,
	table_schema		name NOT NULL,
	table_name			name NOT NULL,
	column_name			name NOT NULL,
	expire_after		interval NOT NULL,
	batch_size			integer,
	enabled				boolean NOT NULL,
	ttl_column			name,
	filter				text,
	unit				text,
	action				text NOT NULL,
	soft_delete_column	name,
	rate_limit			integer,
	replication_origin	boolean
);

COMMENT ON TABLE @extschema@.ttl_index_citus_policy IS
	'TTL policies on Citus distributed tables, as every node reads them; kept equal to ttl_index_policy by a trigger on it';

REVOKE ALL ON @extschema@.ttl_index_citus_policy FROM PUBLIC;
GRANT SELECT ON @extschema@.ttl_index_citus_policy TO PUBLIC;

-- Keep ttl_index_citus_policy equal to the coordinator's policies on
-- distributed tables.  Every write to ttl_index_policy passes here: the
-- API's, the DROP event trigger's, and the ALTER TABLE event trigger's,
-- which rewrites the column names of every policy of an altered table (so
-- a rename of the table, of its schema or of a column is carried over).
-- Nothing happens without Citus, or on a node other than the coordinator
-- (a worker's local policies are its own).
CREATE FUNCTION @extschema@.ttl_index_citus_sync()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
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
		INSERT INTO @extschema@.ttl_index_citus_policy
		SELECT NEW.id, n.nspname, c.relname, NEW.column_name, NEW.expire_after,
			   NEW.batch_size, NEW.enabled, NEW.ttl_column, NEW.filter, NEW.unit,
			   NEW.action, NEW.soft_delete_column, NEW.rate_limit,
			   NEW.replication_origin
		  FROM pg_catalog.pg_class c
		  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		 WHERE c.oid = NEW.relid;
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER ttl_index_citus_sync
	AFTER INSERT OR UPDATE OR DELETE ON @extschema@.ttl_index_policy
	FOR EACH ROW EXECUTE FUNCTION @extschema@.ttl_index_citus_sync();

-- Each node's own counters for the policies on distributed tables, read on
-- the coordinator through Citus's run_command_on_all_nodes().  A node that
-- cannot be reached gives one row with reachable false and its error.
CREATE FUNCTION @extschema@.ttl_index_citus_nodes(
	OUT policy_id integer,
	OUT table_name regclass,
	OUT nodename text,
	OUT nodeport integer,
	OUT reachable boolean,
	OUT rows_deleted bigint,
	OUT errors bigint,
	OUT last_error text,
	OUT last_run timestamptz,
	OUT lag interval,
	OUT expired_estimate bigint,
	OUT falling_behind boolean)
RETURNS SETOF record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
BEGIN
	IF pg_catalog.to_regproc('pg_catalog.run_command_on_all_nodes') IS NULL THEN
		RAISE EXCEPTION 'Citus is not installed in this database'
			USING ERRCODE = 'feature_not_supported';
	END IF;
	FOR r IN EXECUTE $q$
		SELECT n.nodename::text AS nodename, n.nodeport, c.success, c.result
		  FROM pg_catalog.run_command_on_all_nodes($c$
			SELECT coalesce(pg_catalog.json_agg(pg_catalog.json_build_object(
					'policy_id', s.policy_id, 'rows_deleted', s.rows_deleted,
					'errors', s.errors, 'last_error', s.last_error,
					'last_run', s.last_run, 'lag', s.lag,
					'expired_estimate', s.expired_estimate,
					'falling_behind', s.falling_behind)), '[]')
			  FROM @extschema@.ttl_index_policy_stats() s
			 WHERE s.policy_id IN (SELECT m.id FROM @extschema@.ttl_index_citus_policy m)
		  $c$) c
		  JOIN pg_catalog.pg_dist_node n ON n.nodeid = c.nodeid
		 ORDER BY n.groupid, n.nodeid
	$q$
	LOOP
		nodename := r.nodename;
		nodeport := r.nodeport;
		reachable := r.success;
		IF NOT r.success THEN
			policy_id := NULL; table_name := NULL; rows_deleted := NULL;
			errors := NULL; last_run := NULL; lag := NULL;
			expired_estimate := NULL; falling_behind := NULL;
			last_error := r.result;
			RETURN NEXT;
			CONTINUE;
		END IF;
		FOR policy_id, rows_deleted, errors, last_error, last_run, lag,
			expired_estimate, falling_behind IN
			SELECT (e->>'policy_id')::integer, (e->>'rows_deleted')::bigint,
				   (e->>'errors')::bigint, e->>'last_error',
				   (e->>'last_run')::timestamptz, (e->>'lag')::interval,
				   (e->>'expired_estimate')::bigint, (e->>'falling_behind')::boolean
			  FROM pg_catalog.json_array_elements(r.result::json) e
		LOOP
			SELECT p.relid INTO table_name
			  FROM @extschema@.ttl_index_policy p WHERE p.id = policy_id;
			RETURN NEXT;
		END LOOP;
	END LOOP;
END
$$;

COMMENT ON FUNCTION @extschema@.ttl_index_citus_nodes() IS
	'per node, the counters of each TTL policy on a Citus distributed table (run on the coordinator)';

-- The whole table: rows and errors summed over the nodes, the greatest lag,
-- the expired rows summed, and how many nodes answered.
CREATE VIEW @extschema@.ttl_index_citus_stats AS
	WITH n AS MATERIALIZED (
		-- asks the nodes once; not at all when no policy is on a Citus table
		SELECT * FROM @extschema@.ttl_index_citus_nodes()
		 WHERE EXISTS (SELECT FROM @extschema@.ttl_index_citus_policy))
	SELECT p.id AS policy_id,
		   p.relid AS table_name,
		   p.column_name,
		   p.expire_after,
		   count(n.nodename) AS nodes,
		   count(n.nodename) FILTER (WHERE n.errors > 0) AS nodes_with_errors,
		   (SELECT count(*) FROM n u WHERE NOT u.reachable) AS nodes_unreachable,
		   coalesce(sum(n.rows_deleted), 0)::bigint AS rows_deleted,
		   coalesce(sum(n.errors), 0)::bigint AS errors,
		   max(n.lag) AS lag,
		   sum(n.expired_estimate)::bigint AS expired_estimate,
		   coalesce(bool_or(n.falling_behind), false) AS falling_behind,
		   max(n.last_run) AS last_run
	  FROM @extschema@.ttl_index_policy p
	  JOIN @extschema@.ttl_index_citus_policy m ON m.id = p.id
	  LEFT JOIN n ON n.policy_id = p.id
	 GROUP BY p.id, p.relid, p.column_name, p.expire_after;

GRANT SELECT ON @extschema@.ttl_index_citus_stats TO PUBLIC;

-- On a Citus coordinator, ttl_index_stats shows a policy on a distributed
-- table over the whole table: rows_deleted and errors summed over the
-- nodes, lag the greatest of theirs, expired_estimate summed, last_run the
-- latest, last_error the latest node's, falling_behind any node's (from
-- ttl_index_citus_nodes(), which asks every node: only when such a policy
-- exists).  Its other counters are the coordinator's own; each node's are
-- in ttl_index_citus_nodes().
CREATE VIEW @extschema@.ttl_index_stats AS
	WITH cluster AS MATERIALIZED (
		SELECT n.policy_id,
			   sum(n.rows_deleted)::bigint AS rows_deleted,
			   sum(n.errors)::bigint AS errors,
			   (pg_catalog.array_agg(n.last_error ORDER BY n.last_run DESC NULLS LAST)
				  FILTER (WHERE n.last_error IS NOT NULL))[1] AS last_error,
			   max(n.last_run) AS last_run,
			   max(n.lag) AS lag,
			   sum(n.expired_estimate)::bigint AS expired_estimate,
			   bool_or(n.falling_behind) AS falling_behind
		  FROM @extschema@.ttl_index_citus_nodes() n
		 WHERE EXISTS (SELECT FROM @extschema@.ttl_index_citus_policy m
						JOIN @extschema@.ttl_index_policy q ON q.id = m.id)
		   AND n.reachable
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
		   coalesce(c.falling_behind, s.falling_behind, false) AS falling_behind
	  FROM @extschema@.ttl_index_policy p
	  LEFT JOIN @extschema@.ttl_index_policy_stats() s ON s.policy_id = p.id
	  LEFT JOIN cluster c ON c.policy_id = p.id;

GRANT SELECT ON @extschema@.ttl_index_stats TO PUBLIC;

-- The databases the launcher keeps track of, their turns when more of them
-- need a worker than ttl_index.max_workers allows, and how often and how
-- long their workers held their batches for a standby or a replication
-- slot's consumer (ttl_index.max_standby_lag, ttl_index.max_slot_lag).
CREATE FUNCTION @extschema@.ttl_index_database_status(
	OUT datid oid,
	OUT datname name,
	OUT state text,
	OUT worker_pid integer,
	OUT waiting_since timestamptz,
	OUT turn_started timestamptz,
	OUT turns bigint,
	OUT has_extension boolean,
	OUT replica_holds bigint,
	OUT replica_hold_time interval)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ttl_index_databases'
LANGUAGE C VOLATILE;

CREATE VIEW @extschema@.ttl_index_databases AS
	SELECT * FROM @extschema@.ttl_index_database_status();

GRANT SELECT ON @extschema@.ttl_index_databases TO PUBLIC;

-- ttl_create_index gains the replication_origin option, and a third form:
-- a TTL written as a quoted literal, ttl_create_index('t', 'c', '3600'),
-- matched both the interval and the bigint form, and PostgreSQL refused
-- the call as ambiguous.  Text is the preferred type for an untyped
-- literal, so the text form takes it; it reads the text as an interval,
-- where a bare number is seconds.
DROP FUNCTION @extschema@.ttl_create_index(regclass, text, interval, integer, text, text, text, text, text, regclass, integer);
DROP FUNCTION @extschema@.ttl_create_index(regclass, text, bigint, integer, text, text, text, text, text, regclass, integer);

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
	rate_limit integer DEFAULT NULL,
	replication_origin boolean DEFAULT NULL)
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
	replication_origin boolean DEFAULT NULL)
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
	replication_origin boolean DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_create_index_text'
LANGUAGE C;

COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, interval, integer, text, text, text, text, text, regclass, integer, boolean) IS
	'create or change the TTL policy of a table column; returns the policy id';
COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, bigint, integer, text, text, text, text, text, regclass, integer, boolean) IS
	'create or change the TTL policy of a table column, TTL in seconds; returns the policy id';
COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, text, integer, text, text, text, text, text, regclass, integer, boolean) IS
	'create or change the TTL policy of a table column, TTL as text (''3600'' or ''1 hour''); returns the policy id';

-- ttl_summary(): the columns of pg_ttl_index's summary function, computed
-- from ttl_index_stats, so that monitoring queries written for it keep
-- working.  expire_after_seconds is bigint (a TTL may exceed 68 years);
-- index_name is a valid btree index that leads with the column: the one
-- ttl_create_index made if there is one, else a plain one before a partial
-- one (the worker chooses among them each pass; this is a summary).
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
	OUT cleanup_mode text)
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
			   ELSE 'hard_delete'
		   END
	  FROM @extschema@.ttl_index_stats s
	  JOIN pg_class c ON c.oid = s.table_name
	  JOIN pg_namespace n ON n.oid = c.relnamespace
	 ORDER BY 1, 2, 3
$$;

COMMENT ON FUNCTION @extschema@.ttl_summary() IS
	'pg_ttl_index''s summary columns, from ttl_index_stats';

-- ttl_import_pg_ttl_index(source): make the policies a pg_ttl_index
-- installation had, from a copy of its ttl_index_table (the table goes
-- with DROP EXTENSION pg_ttl_index, and the two extensions cannot share a
-- database: copy it first, see docs/migrating.md).  Reads the columns of
-- every version of that table: schema_name (3.0; before, the bare
-- table_name is looked up in public, as pg_ttl_index found it on the
-- default search_path, else read as written), table_name, column_name,
-- expire_after_seconds, batch_size, soft_delete_column, active,
-- index_name, index_created_by_extension.
--
-- One row out per row in: each policy is made in its own subtransaction
-- with ttl_create_index() (as the caller, who must own the table, as for
-- any call) and paused with ttl_pause() where the peer's was inactive.  A
-- row that fails says why in status and the import goes on; a batch size
-- of 10000 (the peer's default, and ours) becomes ours, so the policy
-- follows ttl_index.batch_size.  index_name is the index the policy scans
-- when it is the peer's or one ttl_create_index made; redundant_index is
-- the peer's own index when the policy does not need it any more (a soft
-- delete wants a partial index), left in place for the caller to drop.
-- A row whose table or column is gone is skipped.  With dry_run nothing
-- changes: the copy is read, its tables and columns looked up, and status
-- says what would be done (ttl_create_index's own checks, the column's
-- type and the caller's ownership, run only in the import itself).
CREATE FUNCTION @extschema@.ttl_import_pg_ttl_index(
	source regclass,
	dry_run boolean DEFAULT false,
	OUT table_name text,
	OUT column_name text,
	OUT expire_after interval,
	OUT batch_size integer,
	OUT soft_delete_column text,
	OUT paused boolean,
	OUT policy_id integer,
	OUT index_name regclass,
	OUT redundant_index regclass,
	OUT status text)
RETURNS SETOF record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r			jsonb;
	rel			regclass;
	peer_index	regclass;
	peer_made	boolean;
	ours		regclass;
	secs		bigint;
	attnum		int2;
BEGIN
	IF source IS NULL THEN
		RAISE EXCEPTION 'source must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- a table: reading one runs nobody's code, reading a view or a foreign
	-- table could run its owner's functions as the caller
	IF (SELECT c.relkind FROM pg_class c WHERE c.oid = source) NOT IN ('r', 'p') THEN
		RAISE EXCEPTION '% is not a table', source
			USING ERRCODE = 'wrong_object_type',
				  HINT = 'Copy pg_ttl_index''s ttl_index_table with CREATE TABLE ... AS TABLE ttl_index_table.';
	END IF;
	IF (SELECT count(*) FROM pg_attribute a
		 WHERE a.attrelid = source AND a.attnum > 0 AND NOT a.attisdropped
		   AND a.attname IN ('table_name', 'column_name', 'expire_after_seconds')) < 3 THEN
		RAISE EXCEPTION '% is not a copy of pg_ttl_index''s ttl_index_table', source
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'It needs the columns table_name, column_name and expire_after_seconds.';
	END IF;
	FOR r IN EXECUTE format('SELECT j FROM (SELECT to_jsonb(s) AS j FROM %s s) t '
							'ORDER BY j->>''schema_name'', j->>''table_name'', j->>''column_name''',
							source)
	LOOP
		IF r->>'schema_name' IS NOT NULL THEN
			table_name := quote_ident(r->>'schema_name') || '.' || quote_ident(r->>'table_name');
			rel := to_regclass(table_name);
		ELSE
			-- before 3.0: the bare name pg_ttl_index quoted and found on the
			-- default search_path, so in public; or a qualified name
			table_name := r->>'table_name';
			rel := to_regclass('public.' || quote_ident(table_name));
			IF rel IS NULL THEN
				rel := to_regclass(table_name);
			END IF;
		END IF;
		column_name := r->>'column_name';
		secs := (r->>'expire_after_seconds')::bigint;
		expire_after := make_interval(secs => secs);
		batch_size := nullif((r->>'batch_size')::integer, 10000);
		soft_delete_column := r->>'soft_delete_column';
		paused := NOT coalesce((r->>'active')::boolean, true);
		policy_id := NULL;
		index_name := NULL;
		redundant_index := NULL;
		IF rel IS NULL THEN
			status := 'skipped: table not found';
			RAISE WARNING 'pg_ttl_index policy on % skipped: table not found', table_name;
			RETURN NEXT;
			CONTINUE;
		END IF;
		table_name := rel::text;
		IF NOT EXISTS (SELECT 1 FROM pg_attribute a
						WHERE a.attrelid = rel AND a.attname = column_name
						  AND a.attnum > 0 AND NOT a.attisdropped) THEN
			status := 'skipped: column not found';
			RAISE WARNING 'pg_ttl_index policy on %.% skipped: column not found',
				table_name, column_name;
			RETURN NEXT;
			CONTINUE;
		END IF;

		-- the peer's index, and whether the peer made it (2.x: by its name)
		peer_index := NULL;
		IF r->>'index_name' IS NOT NULL THEN
			peer_index := to_regclass(quote_ident(
				coalesce(r->>'schema_name',
						 (SELECT nspname FROM pg_namespace nsp
							JOIN pg_class c ON c.relnamespace = nsp.oid
						   WHERE c.oid = rel))) || '.' || quote_ident(r->>'index_name'));
		END IF;
		peer_made := coalesce((r->>'index_created_by_extension')::boolean,
							  r->>'index_name' LIKE 'idx\_ttl\_%');

		IF dry_run THEN
			status := CASE WHEN paused THEN 'would import, paused' ELSE 'would import' END;
			RETURN NEXT;
			CONTINUE;
		END IF;

		BEGIN
			policy_id := @extschema@.ttl_create_index(rel, column_name, secs,
													  batch_size => batch_size,
													  soft_delete_column => soft_delete_column);
			IF paused THEN
				PERFORM @extschema@.ttl_pause(rel, column_name);
			END IF;
			status := CASE WHEN paused THEN 'imported, paused' ELSE 'imported' END;
		EXCEPTION WHEN OTHERS THEN
			policy_id := NULL;
			status := 'failed: ' || SQLERRM;
			RAISE WARNING 'pg_ttl_index policy on %.% not imported: %',
				table_name, column_name, SQLERRM;
			RETURN NEXT;
			CONTINUE;
		END;

		-- the index the policy scans: one ttl_create_index made, else the
		-- peer's when it leads with the column
		SELECT p.attnum INTO attnum FROM @extschema@.ttl_index_policy p WHERE p.id = policy_id;
		SELECT i.indexrelid::regclass INTO ours
		  FROM pg_index i
		 WHERE i.indrelid = rel
		   AND i.indkey[0] = attnum
		   AND obj_description(i.indexrelid, 'pg_class') =
			   'created by ttl_index; dropped by ttl_drop_index()'
		 LIMIT 1;
		IF ours IS NOT NULL THEN
			index_name := ours;
			IF peer_index IS NOT NULL AND peer_made AND peer_index <> ours THEN
				redundant_index := peer_index;
			END IF;
		ELSIF peer_index IS NOT NULL AND EXISTS (
				SELECT 1 FROM pg_index i
				 WHERE i.indexrelid = peer_index AND i.indkey[0] = attnum) THEN
			index_name := peer_index;
		END IF;
		RETURN NEXT;
	END LOOP;
END
$$;

COMMENT ON FUNCTION @extschema@.ttl_import_pg_ttl_index(regclass, boolean) IS
	'create the policies of a copy of pg_ttl_index''s ttl_index_table; one row per policy says what was done';

-- ttl_from_cron(): the pg_cron jobs that look like expiry cleanups (a
-- DELETE of the rows whose timestamp is older than now() minus an
-- interval, batched or not), each with the ttl_create_index() call that
-- replaces it.  Reads cron.job (as the caller: pg_cron shows each role
-- its own jobs); changes nothing.  Recognised: DELETE FROM t WHERE c <
-- now() - interval 'x' (also current_timestamp, clock_timestamp(),
-- localtimestamp, '<x>'::interval and make_interval(secs => n)), alone
-- or inside the usual batching subquery; every other job is listed with
-- the reason it was not matched.  A condition beyond the time one is
-- pointed out, to be written as the policy's filter by hand.
CREATE FUNCTION @extschema@.ttl_from_cron(
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
	m			text[];
	tab			text;
	col			text;
	span		interval;
	span_text	text;
	n_months	int;
	ident		constant text := '(?:"(?:[^"]|"")+"|[[:alpha:]_][[:alnum:]_$]*)';
	now_fn		constant text :=
		'(?:now\(\s*\)|current_timestamp|clock_timestamp\(\s*\)|localtimestamp|'
		'statement_timestamp\(\s*\)|transaction_timestamp\(\s*\))';
	found_one	boolean;
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
		FOREACH stmt IN ARRAY regexp_split_to_array(coalesce(command, ''), ';')
		LOOP
			-- the table the DELETE is on
			m := regexp_match(stmt, '^\s*delete\s+from\s+(?:only\s+)?(' || ident ||
							  '(?:\s*\.\s*' || ident || ')?)', 'i');
			CONTINUE WHEN m IS NULL;
			tab := regexp_replace(m[1], '\s+', '', 'g');
			-- its time condition: column < now() - interval
			m := regexp_match(stmt, '(?:' || ident || '\s*\.\s*)?(' || ident || ')\s*<=?\s*' ||
							  now_fn || '\s*-\s*(?:interval\s*''([^'']+)''|''([^'']+)''\s*::\s*interval|'
							  'make_interval\(\s*secs\s*=>\s*([0-9.]+)\s*\))', 'i');
			CONTINUE WHEN m IS NULL;
			col := m[1];
			IF col ~ '^"' THEN
				col := replace(substr(col, 2, length(col) - 2), '""', '"');
			ELSE
				col := lower(col);
			END IF;
			span_text := coalesce(m[2], m[3], m[4] || ' seconds');
			span := span_text::interval;
			note := format('then SELECT cron.unschedule(%s)', jobid);
			n_months := 12 * extract(year FROM span)::int + extract(month FROM span)::int;
			IF n_months <> 0 THEN
				-- a TTL has no months (they have no fixed length)
				span := span - make_interval(months => n_months) + make_interval(days => 30 * n_months);
				note := format('the job counts calendar months, a TTL days: %s is written as %s. ',
							   span_text, span) || note;
				span_text := span::text;
			END IF;
			IF (SELECT count(*) FROM unnest(regexp_split_to_array(command, ';')) u
				 WHERE u !~ '^\s*$') > 1 THEN
				note := 'the job runs other statements too: keep them in a job of their own. ' || note;
			END IF;
			IF stmt ~* '\m(and|or)\M' THEN
				note := 'the job has conditions beyond the time: add them as filter => ''...''. ' || note;
			END IF;
			IF database IS NOT NULL AND database <> current_database() THEN
				note := format('run the call in database %s. ', database) || note;
			END IF;
			ttl_call := format('SELECT ttl_create_index(%L, %L, interval %L);', tab, col, span_text);
			found_one := true;
			RETURN NEXT;
		END LOOP;
		IF NOT found_one THEN
			ttl_call := NULL;
			note := 'not recognised as an expiry cleanup (DELETE FROM t WHERE c < now() - interval ''...'')';
			RETURN NEXT;
		END IF;
	END LOOP;
END
$$;

COMMENT ON FUNCTION @extschema@.ttl_from_cron() IS
	'the pg_cron jobs that look like expiry cleanups, with the ttl_create_index() call that replaces each; changes nothing';
