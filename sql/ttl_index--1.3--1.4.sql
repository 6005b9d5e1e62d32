/* ttl_index--1.3--1.4.sql: from 1.3 to 1.4 (every object safe for every caller: trigger functions that check where they fire and are not executable by PUBLIC, no SECURITY DEFINER where none is needed, the importer reading its source without running anyone's code) */

-- A fresh CREATE EXTENSION of 1.4 runs ttl_index--1.0.sql, then each
-- upgrade script in turn, ending with this one.

\echo Use "ALTER EXTENSION ttl_index UPDATE TO '1.4'" to load this file. \quit

-- A policy on a timestamp or date key reads it in a time zone of its own:
-- the one its writers use (expiry.c).  NULL for other keys.  Carried to
-- the Citus nodes with the rest of the policy.
ALTER TABLE @extschema@.ttl_index_policy ADD COLUMN time_zone text;
ALTER TABLE @extschema@.ttl_index_citus_policy ADD COLUMN time_zone text;

-- Beyond expiry by age (docs/expiry-rules.md): the hours a policy may
-- purge in (purge_window, read in the policy's time zone, window.c), a cap
-- on the table's rows (max_rows, cap.c: the oldest beyond it go, whatever
-- their age; expire_after may then be NULL, for a cap alone), and an
-- action that resets columns instead of deleting the row (anonymize, with
-- set_columns, set.c).  Stored as the API normalized them, read again by
-- every reader.  1.4 is this version in the making: these columns are part
-- of it, not of a later one.
ALTER TABLE @extschema@.ttl_index_policy
	ADD COLUMN purge_window text,
	ADD COLUMN max_rows bigint CHECK (max_rows > 0),
	ADD COLUMN set_columns text,
	ALTER COLUMN expire_after DROP NOT NULL,
	DROP CONSTRAINT ttl_index_policy_action_check,
	ADD CONSTRAINT ttl_index_policy_action_check
		CHECK (action IN ('delete', 'archive', 'soft_delete', 'anonymize')),
	ADD CONSTRAINT ttl_index_policy_set_columns_check
		CHECK ((action = 'anonymize') = (set_columns IS NOT NULL)),
	ADD CONSTRAINT ttl_index_policy_expiry_check
		CHECK (expire_after IS NOT NULL OR max_rows IS NOT NULL);
ALTER TABLE @extschema@.ttl_index_citus_policy
	ADD COLUMN purge_window text,
	ADD COLUMN max_rows bigint,
	ADD COLUMN set_columns text,
	ALTER COLUMN expire_after DROP NOT NULL;

-- The functions a policy's filter calls (filter.c): the stored text is
-- parsed again by every reader, and must call these, not a better-matching
-- overload created since.  Recorded as signatures, schema-qualified, not as
-- regprocedure: pg_dump and pg_upgrade keep names, not function OIDs, and
-- pg_upgrade refuses a table with a regprocedure column.  The Citus nodes
-- get the same text, resolved on each node.
ALTER TABLE @extschema@.ttl_index_policy ADD COLUMN filter_functions text[];
ALTER TABLE @extschema@.ttl_index_citus_policy ADD COLUMN filter_functions text[];

CREATE FUNCTION @extschema@.ttl_index_filter_functions(table_name regclass, filter text)
RETURNS text[]
AS 'MODULE_PATHNAME', 'ttl_index_filter_functions'
LANGUAGE C STRICT;

REVOKE EXECUTE ON FUNCTION @extschema@.ttl_index_filter_functions(regclass, text) FROM PUBLIC;

UPDATE @extschema@.ttl_index_policy
   SET filter_functions = CASE WHEN filter IS NULL THEN '{}'
							   ELSE @extschema@.ttl_index_filter_functions(relid, filter) END;

-- The trigger functions of the catalog.  PostgreSQL checks EXECUTE on a
-- trigger function when a trigger is created, not when it fires: revoked
-- from PUBLIC, no other role can attach them to a table of its own.  Each
-- also checks that it fires where it is meant to, for a superuser's
-- mistake.  None of them runs as anyone but the role that writes the
-- catalog, which is always the extension's owner (the API functions write
-- it as that role, the event triggers run as it) or a superuser (a
-- restore): ttl_index_citus_sync is no longer SECURITY DEFINER.
REVOKE EXECUTE ON FUNCTION @extschema@.ttl_index_policy_resolve() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.ttl_index_policy_changed() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.ttl_index_citus_sync() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.ttl_index_attnum(regclass, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.ttl_index_installed() FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.ttl_index_policy_resolve()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF TG_RELID <> '@extschema@.ttl_index_policy'::pg_catalog.regclass
	   OR TG_LEVEL <> 'ROW' OR TG_WHEN <> 'BEFORE' THEN
		RAISE EXCEPTION 'ttl_index_policy_resolve() fires only before rows are written to ttl_index_policy'
			USING ERRCODE = 'triggered_action_exception';
	END IF;
	NEW.attnum := @extschema@.ttl_index_attnum(NEW.relid, NEW.column_name);
	NEW.ttl_attnum := @extschema@.ttl_index_attnum(NEW.relid, NEW.ttl_column);
	NEW.soft_attnum := @extschema@.ttl_index_attnum(NEW.relid, NEW.soft_delete_column);
	RETURN NEW;
END
$$;

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
		-- by name: the columns 1.4 added are not in the order of the values
		INSERT INTO @extschema@.ttl_index_citus_policy
			(id, table_schema, table_name, column_name, expire_after, batch_size, enabled,
			 ttl_column, filter, unit, action, soft_delete_column, rate_limit,
			 replication_origin, time_zone, filter_functions, purge_window, max_rows, set_columns)
		SELECT NEW.id, n.nspname, c.relname, NEW.column_name, NEW.expire_after,
			   NEW.batch_size, NEW.enabled, NEW.ttl_column, NEW.filter, NEW.unit,
			   NEW.action, NEW.soft_delete_column, NEW.rate_limit,
			   NEW.replication_origin, NEW.time_zone, NEW.filter_functions::text[],
			   NEW.purge_window, NEW.max_rows, NEW.set_columns
		  FROM pg_catalog.pg_class c
		  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		 WHERE c.oid = NEW.relid;
	END IF;
	RETURN NULL;
END
$$;

-- ttl_import_pg_ttl_index() reads its source through
-- ttl_index_read_pg_ttl_index() (import.c): a heap scan of the table alone,
-- built-in column types only, so that no code of the copy's owner (a cast
-- to json, an output function, a row-level security policy, an index
-- predicate the planner would fold) runs as the caller.  Executable by
-- PUBLIC, as the importer is; it checks the caller's SELECT on the columns.
CREATE FUNCTION @extschema@.ttl_index_read_pg_ttl_index(
	source regclass,
	OUT schema_name text,
	OUT table_name text,
	OUT column_name text,
	OUT expire_after_seconds bigint,
	OUT batch_size bigint,
	OUT soft_delete_column text,
	OUT active boolean,
	OUT index_name text,
	OUT index_created_by_extension boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ttl_index_read_pg_ttl_index'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION @extschema@.ttl_index_read_pg_ttl_index(regclass) IS
	'the rows of a copy of pg_ttl_index''s ttl_index_table, read without running its owner''s code (for ttl_import_pg_ttl_index)';

-- The importer: besides reading as above, a batch size above ours is
-- clamped (with a word in status), an empty source says so, and an index
-- pg_ttl_index made that the policy now scans is marked as ttl_index's, so
-- that ttl_drop_index() drops it as pg_ttl_index's ttl_drop_index() did.
CREATE OR REPLACE FUNCTION @extschema@.ttl_import_pg_ttl_index(
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
	r			record;
	rel			regclass;
	peer_index	regclass;
	peer_made	boolean;
	ours		regclass;
	secs		bigint;
	attnum		int2;
	clamped		text;
	n			integer := 0;
	-- pg_ttl_index's worker read wall-clock columns in the zone its
	-- session took: this database's (and the bootstrap superuser's)
	-- TimeZone setting, else the server's
	zone		text := @extschema@.ttl_index_login_time_zone(NULL, NULL);
	local		boolean;
	said		text;
	copy_owner	oid;
BEGIN
	IF source IS NULL THEN
		RAISE EXCEPTION 'source must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- the copy decides which tables get which TTL: only those of its
	-- owner's, so that a role's copy imported by a superuser reaches no
	-- other role's table
	copy_owner := (SELECT c.relowner FROM pg_class c WHERE c.oid = source);
	FOR r IN SELECT s.*
			   FROM @extschema@.ttl_index_read_pg_ttl_index(source) s
			  ORDER BY s.schema_name, s.table_name, s.column_name
	LOOP
		n := n + 1;
		IF r.schema_name IS NOT NULL THEN
			table_name := quote_ident(r.schema_name) || '.' || quote_ident(r.table_name);
			rel := to_regclass(table_name);
		ELSE
			-- before 3.0: the bare name pg_ttl_index quoted and found on the
			-- default search_path, so in public; or a qualified name
			table_name := r.table_name;
			rel := to_regclass('public.' || quote_ident(table_name));
			IF rel IS NULL THEN
				rel := to_regclass(table_name);
			END IF;
		END IF;
		column_name := r.column_name;
		secs := r.expire_after_seconds;
		expire_after := make_interval(secs => secs);
		-- ours caps a batch at 1,000,000 rows; 10000 is the default of both
		clamped := NULL;
		IF r.batch_size > 1000000 THEN
			clamped := format('batch size %s clamped to 1000000', r.batch_size);
			batch_size := 1000000;
		ELSE
			batch_size := nullif(r.batch_size, 10000)::integer;
		END IF;
		soft_delete_column := r.soft_delete_column;
		paused := NOT coalesce(r.active, true);
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
		IF NOT pg_has_role(copy_owner, (SELECT c.relowner FROM pg_class c WHERE c.oid = rel), 'USAGE') THEN
			status := 'skipped: the copy''s owner does not own the table';
			RAISE WARNING 'pg_ttl_index policy on % skipped: the owner of % does not own it',
				table_name, source;
			RETURN NEXT;
			CONTINUE;
		END IF;
		IF NOT EXISTS (SELECT 1 FROM pg_attribute a
						WHERE a.attrelid = rel AND a.attname = column_name
						  AND a.attnum > 0 AND NOT a.attisdropped) THEN
			status := 'skipped: column not found';
			RAISE WARNING 'pg_ttl_index policy on %.% skipped: column not found',
				table_name, column_name;
			RETURN NEXT;
			CONTINUE;
		END IF;

		-- the peer's index, and whether the peer made it (2.x: by its name);
		-- an index of another table is none of this policy's
		peer_index := NULL;
		IF r.index_name IS NOT NULL THEN
			peer_index := to_regclass(quote_ident(
				coalesce(r.schema_name,
						 (SELECT nspname FROM pg_namespace nsp
							JOIN pg_class c ON c.relnamespace = nsp.oid
						   WHERE c.oid = rel))) || '.' || quote_ident(r.index_name));
			IF NOT EXISTS (SELECT 1 FROM pg_index i
							WHERE i.indexrelid = peer_index AND i.indrelid = rel) THEN
				peer_index := NULL;
			END IF;
		END IF;
		peer_made := coalesce(r.index_created_by_extension,
							  r.index_name LIKE 'idx\_ttl\_%');

		-- a timestamp or date column: read in the zone the peer read it in
		local := (SELECT coalesce(nullif(t.typbasetype, 0), t.oid)
						 IN ('pg_catalog.timestamp'::regtype, 'pg_catalog.date'::regtype)
					FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
				   WHERE a.attrelid = rel AND a.attname = column_name);
		said := concat_ws('; ', clamped,
						  CASE WHEN local THEN format('read in time zone %s, as pg_ttl_index''s worker did', zone) END);

		IF dry_run THEN
			status := CASE WHEN paused THEN 'would import, paused' ELSE 'would import' END;
			IF said <> '' THEN
				status := status || ' (' || said || ')';
			END IF;
			RETURN NEXT;
			CONTINUE;
		END IF;

		BEGIN
			policy_id := @extschema@.ttl_create_index(rel, column_name, secs,
													  batch_size => batch_size,
													  soft_delete_column => soft_delete_column,
													  time_zone => CASE WHEN local THEN zone END);
			IF paused THEN
				PERFORM @extschema@.ttl_pause(rel, column_name);
			END IF;
			status := CASE WHEN paused THEN 'imported, paused' ELSE 'imported' END;
			IF said <> '' THEN
				status := status || ' (' || said || ')';
			END IF;
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
			-- pg_ttl_index's ttl_drop_index() dropped the index it made:
			-- ours drops it too once it is marked as ours
			IF peer_made THEN
				EXECUTE format('COMMENT ON INDEX %s IS %L', peer_index,
							   'created by ttl_index; dropped by ttl_drop_index()');
			END IF;
		END IF;
		RETURN NEXT;
	END LOOP;
	IF n = 0 THEN
		RAISE WARNING '% has no rows: no policy was imported', source
			USING HINT = 'Copy pg_ttl_index''s ttl_index_table before DROP EXTENSION pg_ttl_index, with its rows (CREATE TABLE ... AS TABLE ttl_index_table).';
	END IF;
END
$$;

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
				IF n_months <> 0 THEN
					-- a TTL has no months (they have no fixed length)
					span := span - make_interval(months => n_months) + make_interval(days => 30 * n_months);
					note := format('the job counts calendar months, a TTL days: %s is written as %s. ',
								   span_text, span) || note;
					span_text := span::text;
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
					END IF;
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

-- DROP of an archive table: refused to the policy's owner, who can drop or
-- change the policy first; another role (the table changed hands) is not
-- refused, and the policy is paused instead (ttl_index_archive_dropped,
-- api.c).  A policy archives only into a table of its table's owner
-- (ttl_create_index, and the ALTER TABLE check).
CREATE FUNCTION @extschema@.ttl_index_archive_dropped(policy_id integer)
RETURNS void
AS 'MODULE_PATHNAME', 'ttl_index_archive_dropped'
LANGUAGE C STRICT;

REVOKE EXECUTE ON FUNCTION @extschema@.ttl_index_archive_dropped(integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.ttl_index_on_sql_drop()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	obj record;
	pid integer;
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

	FOR pid IN SELECT p.id
				 FROM @extschema@.ttl_index_policy p
				WHERE p.archive_table::pg_catalog.oid IN
					  (SELECT d.objid FROM pg_catalog.pg_event_trigger_dropped_objects() d
						WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
						  AND d.objsubid = 0)
				ORDER BY p.id
	LOOP
		PERFORM @extschema@.ttl_index_archive_dropped(pid);
	END LOOP;
END
$$;

-- Policies made before 1.4 that archive into another role's table keep
-- working only while that table is the table owner's: their batches are
-- refused otherwise (purge.c).  Say which, once.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT p.relid, p.column_name, p.archive_table
			   FROM @extschema@.ttl_index_policy p
			   JOIN pg_catalog.pg_class t ON t.oid = p.relid
			   JOIN pg_catalog.pg_class a ON a.oid = p.archive_table
			  WHERE NOT pg_catalog.pg_has_role(t.relowner, a.relowner, 'USAGE')
	LOOP
		RAISE WARNING 'the TTL policy on column "%" of table % archives into %, which its table''s owner does not own: its batches fail until it does',
			r.column_name, r.relid, r.archive_table;
	END LOOP;
END
$$;

-- The server's TimeZone, as the configuration says (the launcher reads it;
-- not the calling session's): the zone a wall-clock policy without one of
-- its own reads its rows in, and the one 1.3 read them all in.
CREATE FUNCTION @extschema@.ttl_index_server_time_zone()
RETURNS text
AS 'MODULE_PATHNAME', 'ttl_index_server_time_zone'
LANGUAGE C STABLE;

COMMENT ON FUNCTION @extschema@.ttl_index_server_time_zone() IS
	'the server''s TimeZone, as the configuration says';

-- The zone a session of a role in a database starts with (import.c): what
-- a former job or worker read its rows in.
CREATE FUNCTION @extschema@.ttl_index_login_time_zone(database name, role name)
RETURNS text
AS 'MODULE_PATHNAME', 'ttl_index_login_time_zone'
LANGUAGE C STABLE;

COMMENT ON FUNCTION @extschema@.ttl_index_login_time_zone(name, name) IS
	'the TimeZone a session of a role opened in a database starts with (NULL: this database, the bootstrap superuser)';

-- Policies that exist keep today's meaning: the zone the worker reads them
-- in today, the configuration's TimeZone.  Said once.
DO $$
DECLARE
	zone	text := @extschema@.ttl_index_server_time_zone();
	n		integer;
BEGIN
	WITH RECURSIVE base(oid, base) AS (
		SELECT t.oid, t.oid FROM pg_catalog.pg_type t WHERE t.typtype <> 'd'
		UNION ALL
		SELECT d.oid, b.base FROM pg_catalog.pg_type d JOIN base b ON d.typbasetype = b.oid
		 WHERE d.typtype = 'd')
	UPDATE @extschema@.ttl_index_policy p SET time_zone = zone
	  FROM pg_catalog.pg_attribute a, base b
	 WHERE a.attrelid = p.relid AND a.attnum = p.attnum AND b.oid = a.atttypid
	   AND p.unit IS NULL
	   AND b.base IN ('pg_catalog.timestamp'::pg_catalog.regtype, 'pg_catalog.date'::pg_catalog.regtype);
	GET DIAGNOSTICS n = ROW_COUNT;
	-- a WARNING: an extension script's notices are not shown
	IF n = 1 THEN
		RAISE WARNING 'ttl_index: the policy on a timestamp or date column reads its rows in time zone %, the server''s, as before', zone
			USING HINT = 'Where a table''s writers use another zone, give it with ttl_create_index(..., time_zone => ''...'').';
	ELSIF n > 1 THEN
		RAISE WARNING 'ttl_index: the % policies on timestamp or date columns read their rows in time zone %, the server''s, as before', n, zone
			USING HINT = 'Where a table''s writers use another zone, give it with ttl_create_index(..., time_zone => ''...'').';
	END IF;
END
$$;

-- ttl_create_index gains time_zone, purge_window, max_rows and set_columns
-- (the last arguments of each form).
DROP FUNCTION @extschema@.ttl_create_index(regclass, text, interval, integer, text, text, text, text, text, regclass, integer, boolean);
DROP FUNCTION @extschema@.ttl_create_index(regclass, text, bigint, integer, text, text, text, text, text, regclass, integer, boolean);
DROP FUNCTION @extschema@.ttl_create_index(regclass, text, text, integer, text, text, text, text, text, regclass, integer, boolean);

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
	replication_origin boolean DEFAULT NULL,
	time_zone text DEFAULT NULL,
	purge_window text DEFAULT NULL,
	max_rows bigint DEFAULT NULL,
	set_columns text DEFAULT NULL)
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
	set_columns text DEFAULT NULL)
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
	set_columns text DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'ttl_create_index_text'
LANGUAGE C;

COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, interval, integer, text, text, text, text, text, regclass, integer, boolean, text, text, bigint, text) IS
	'create or change the TTL policy of a table column; returns the policy id';
COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, bigint, integer, text, text, text, text, text, regclass, integer, boolean, text, text, bigint, text) IS
	'create or change the TTL policy of a table column, TTL in seconds; returns the policy id';
COMMENT ON FUNCTION @extschema@.ttl_create_index(regclass, text, text, integer, text, text, text, text, text, regclass, integer, boolean, text, text, bigint, text) IS
	'create or change the TTL policy of a table column, TTL as text (''3600'' or ''1 hour''); returns the policy id';

-- What the worker's last pass found of each policy's backlog (views.c):
-- stalled says why expired rows stay once the oldest has waited
-- ttl_index.stalled_after; oldest_expiry (for those who may see lag) is the
-- expiry of the oldest expired row the pass left.  Every role may call it,
-- as every role may read ttl_index_stats; it runs no user code.
CREATE FUNCTION @extschema@.ttl_index_policy_health(
	OUT policy_id integer,
	OUT stalled text,
	OUT oldest_expiry timestamptz,
	OUT checked_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ttl_index_policy_health'
LANGUAGE C STRICT;

-- ttl_index_stats gains time_zone (NULL: not a timestamp or date key) and
-- stalled (why expired rows stay): the view is made again below, with
-- what the Citus coordinator says of its nodes.


-- Citus: policies follow their tables
--
-- A policy follows its table through every Citus function that
-- distributes, converts or replaces it: create_distributed_table(),
-- create_distributed_table_concurrently(), citus_schema_distribute() and
-- citus_schema_undistribute(), alter_distributed_table(),
-- undistribute_table(), alter_table_set_access_method(), and ALTER TABLE
-- ... SET SCHEMA into or out of a distributed schema; create_reference_table()
-- and citus_add_local_table_to_metadata() are refused on a table with a
-- policy.  That is a hook in the library (citus.c), with no SQL object of
-- its own: it writes the catalog as the API does.
--
-- What is here: what the coordinator says of each node.
-- ttl_index_citus_nodes() is now C (citus.c) and says per node what it
-- can: its state (purging, ttl_index not preloaded, ttl_index disabled,
-- policy missing, no ttl_index, node down, node disabled, failed), and for
-- a node that gave no counters its last known ones, marked stale, with the
-- time they were read.  The two views that read it are made again:
-- ttl_index_stats's stalled adds, on a Citus coordinator for a policy on a
-- distributed table, the nodes whose rows wait, and why (after what the
-- worker's own last pass found, ttl_index_policy_health()), and counts a node that did not answer by its last known
-- counters, never as zero; ttl_index_citus_stats gains nodes_stale and
-- stalled.
DROP VIEW @extschema@.ttl_index_citus_stats;
DROP VIEW @extschema@.ttl_index_stats;
DROP FUNCTION @extschema@.ttl_index_citus_nodes();

-- The counters gain rows_capped (deleted beyond max_rows before they
-- expired), rows_anonymized, and next_window: the purge window the policy
-- is in, or the next one (NULL without windows).
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
	OUT next_window tstzrange)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ttl_index_policy_stats'
LANGUAGE C STABLE;

-- What this node can do for the policies on distributed tables: purging,
-- ttl_index not preloaded, ttl_index disabled.  ttl_index_citus_nodes()
-- asks every node.  Everyone may call it, as the caller; it tells whether
-- the library is preloaded and ttl_index.enabled, nothing else.
CREATE FUNCTION @extschema@.ttl_index_citus_node_state()
RETURNS text
AS 'MODULE_PATHNAME', 'ttl_index_citus_node_state'
LANGUAGE C STABLE;

COMMENT ON FUNCTION @extschema@.ttl_index_citus_node_state() IS
	'what this node can do for the TTL policies on Citus distributed tables: purging, ttl_index not preloaded, ttl_index disabled';

-- Everyone may call it, as the caller: the nodes are asked over the
-- caller's connections, and each node hides from the caller what its
-- ttl_index_policy_stats() hides.
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
	OUT falling_behind boolean,
	OUT state text,
	OUT stale boolean,
	OUT counted_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ttl_index_citus_nodes'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION @extschema@.ttl_index_citus_nodes() IS
	'per node, the counters of each TTL policy on a Citus distributed table and what the node can do for it (run on the coordinator)';

-- As before, plus stalled; a policy on a distributed table is shown over
-- the whole table (the other counters are the coordinator's own).  The
-- nodes are asked only where Citus is installed, and only when a policy is
-- on a distributed table (ttl_index_citus_nodes() asks none otherwise).
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
				 FILTER (WHERE n.state <> 'purging') AS stalled
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
		   coalesce(s.rows_anonymized, 0) AS rows_anonymized
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
		   count(n.nodename) FILTER (WHERE n.stale AND n.rows_deleted IS NOT NULL) AS nodes_stale,
		   pg_catalog.string_agg(n.state || ' (' || n.nodename || ':' || n.nodeport || ')', ', '
								 ORDER BY n.nodename, n.nodeport)
			 FILTER (WHERE n.state <> 'purging') AS stalled
	  FROM @extschema@.ttl_index_policy p
	  JOIN n ON n.policy_id = p.id
	 GROUP BY p.id, p.relid, p.column_name, p.expire_after;

GRANT SELECT ON @extschema@.ttl_index_citus_stats TO PUBLIC;
