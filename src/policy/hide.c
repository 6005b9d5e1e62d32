/*-------------------------------------------------------------------------
 *
 * hide.c
 *	  hide_expired: expired rows invisible to the table's readers from the
 *	  instant they expire, before the worker deletes them, through
 *	  PostgreSQL's own row-level security, which a DBA sees in \d.
 *
 * What the extension makes, on the policy's table and on each of its
 * partitions and inheritance children that the caller owns (a query that
 * names a partition directly does not apply its parent's policies):
 *
 *	- always, one RESTRICTIVE policy per TTL policy,
 *	  ttl_index_hide_expired_<column>, FOR ALL TO PUBLIC, USING (the row
 *	  has not expired) WITH CHECK (true): restrictive policies are ANDed
 *	  with everything else, so it never lets anyone see or change a row
 *	  that the table's own policies hide; an INSERT or UPDATE may write an
 *	  already-expired row (it is then invisible).
 *	- only when the table had row security disabled (and no policies), the
 *	  extension ENABLEs it and adds one PERMISSIVE policy ttl_index_allow,
 *	  FOR ALL TO PUBLIC USING (true) WITH CHECK (true), so that the table
 *	  grants what its privileges grant, as before.  Its presence is the
 *	  record that the extension enabled row security.  A table with row
 *	  security disabled but policies of its own is refused: enabling it
 *	  would turn those on.  A table with row security enabled gets no
 *	  permissive policy: its own decide who sees what, as before.
 *
 * Removing (hide_expired => false, reset, ttl_drop_index) drops the
 * restrictive policy of that column; when no hiding policy remains and no
 * other policy is left on the table, ttl_index_allow goes and row security
 * is disabled.  A policy the owner added since keeps both as they are
 * (with a NOTICE): dropping ttl_index_allow would leave the readers only
 * what the owner's policies grant, nothing if they are all restrictive;
 * disabling row security would widen access.  Access after the removal is
 * access before hide_expired.  A hiding policy is found by its dependencies
 * (pg_depend): on the column, so a renamed column is found, and on
 * ttl_index_purging(), so a policy the owner renamed is found too.
 *
 * The expression is plain SQL, schema-qualified, with the worker's rule
 * (expiry.c, statement.c): a row is hidden exactly when a pass starting at
 * the reader's now() would find it expired, instant < now() - expire_after
 * (its calendar months on the policy's zone's calendar, then the rest in
 * microseconds: no calendar days; hide_limit_sql), with
 *	- timestamptz keys, and per-row TTLs (ttl_expires_at(), which the
 *	  policy's index holds): key >= limit;
 *	- timestamp and date keys: the instant the key denotes in the policy's
 *	  zone (statement.c's saturated timezone()), compared with the limit;
 *	- epoch keys: key >= the bound in the key's type, computed as
 *	  ttl_epoch_cutoff() computes it, from extract(epoch ...) (numeric,
 *	  exact to the microsecond);
 *	- a NULL key never expires: visible; a filter: a row it does not
 *	  select (false or NULL) never expires: visible.
 *	- ttl_index_purging(<this table>): true only inside the purge's
 *	  statement on this table, for the role it runs as (statement.c), so
 *	  that FORCE ROW LEVEL SECURITY on a table does not hide its expired
 *	  rows from the worker, which runs as the owner, while no other
 *	  table's purge and no code running as another role sees them.
 * The parts are ORed, so the policy's qual is a filter on the rows a query
 * reads, never an index condition of its own: the query's own conditions
 * choose the index (a range on the key still scans the btree).  A bound
 * folded into one indexable comparison (key >= CASE WHEN purging THEN
 * least ELSE limit END) would make a whole-table read skip the expired
 * range, but not with NULL keys visible or wall-clock keys exact, and
 * readers rarely read a whole table; exactness was chosen.
 *
 * Security: the expression runs in every reader's session, as the reader.
 * It calls only pg_catalog's functions and ttl_index_purging(); a filter
 * that calls any other function is refused (it would run the owner's code
 * as each reader).  The statements run as the caller, who owns the table,
 * with the parse environment pinned (owner.c: search_path pg_catalog).
 *
 * Locking: the caller holds the table (ShareLock from ttl_create_index,
 * ShareUpdateExclusiveLock from ttl_drop_index); CREATE POLICY and ALTER
 * TABLE ... ROW LEVEL SECURITY take AccessExclusiveLock on each table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"

#include "compat.h"
#include "ttl_index.h"
#include "policy/policy.h"
#include "citus/citus.h"
#include "env/env.h"

#define HIDE_PREFIX		"ttl_index_hide_expired_"
#define HIDE_ALLOW		"ttl_index_allow"

/*
 * hide_exec
 *		Run one utility statement through SPI (the caller is connected), as
 *		the current user.
 */
static void
hide_exec(const char *sql)
{
	int			ret = SPI_execute(sql, false, 0);

	if (ret < 0)
		elog(ERROR, "could not run \"%s\": %s", sql, SPI_result_code_string(ret));
}

/*
 * hide_count
 *		The number from a "SELECT count(*) ..." with $1 the table's OID.
 */
static int64
hide_count(const char *sql, Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];
	bool		isnull;

	values[0] = ObjectIdGetDatum(relid);
	/* not read-only: it must see the policies this command just dropped */
	if (SPI_execute_with_args(sql, 1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the policies of relation %u", relid);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * hide_rls_enabled
 *		Whether the table has row security enabled, as its pg_class row now
 *		says.
 */
static bool
hide_rls_enabled(Oid relid)
{
	FormData_pg_class form;

	if (!ttl_rel_class(relid, &form))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	return form.relrowsecurity;
}

/*
 * hide_limit_sql
 *		now() - expire_after, as timestamptz, as expiry.c's
 *		ttl_policy_limit computes it: its calendar months first, on the
 *		calendar of the policy's zone (UTC for an epoch key), as
 *		PostgreSQL takes months off a wall-clock time and reads the result
 *		in that zone; then its fixed part, an interval in microseconds, so
 *		that no day of it is a calendar day in the reader's TimeZone.  The
 *		zone is named in the expression: a policy without a time_zone of
 *		its own counts months in the server's TimeZone of the moment the
 *		expression was made (remade by ttl_alter_index).
 */
static char *
hide_limit_sql(TtlPolicy *policy)
{
	char	   *now = "pg_catalog.now()";

	if (policy->expire_months != 0)
	{
		char	   *zone = quote_literal_cstr(policy->unit_ns != 0 ? "UTC" :
											  ttl_policy_zone_name(policy));

		now = psprintf("pg_catalog.timezone(CAST(%s AS pg_catalog.text),"
					   " pg_catalog.timezone(CAST(%s AS pg_catalog.text), pg_catalog.now())"
					   " OPERATOR(pg_catalog.-) CAST('%d months' AS pg_catalog.interval))",
					   zone, zone, policy->expire_months);
	}
	return psprintf("(%s OPERATOR(pg_catalog.-)"
					" CAST('" INT64_FORMAT " microseconds' AS pg_catalog.interval))",
					now, policy->expire_after);
}

/*
 * hide_epoch_bound_sql
 *		The bound of an epoch key, as ttl_epoch_cutoff() computes it from
 *		the limit in microseconds since 1970 (unix_us).
 */
static char *
hide_epoch_bound_sql(TtlPolicy *policy, Oid keytype)
{
	char	   *us = psprintf("CAST(pg_catalog.extract('epoch', %s) OPERATOR(pg_catalog.*) 1000000"
							  " AS pg_catalog.int8)", hide_limit_sql(policy));
	int64		per = policy->unit_ns / 1000;

	switch (keytype)
	{
		case FLOAT8OID:
			return psprintf("(CAST(%s AS pg_catalog.float8) OPERATOR(pg_catalog.*)"
							" CAST(1000 AS pg_catalog.float8) OPERATOR(pg_catalog./)"
							" CAST(" INT64_FORMAT " AS pg_catalog.float8))",
							us, policy->unit_ns);
		case NUMERICOID:
			if (policy->unit_ns == 1)
				return psprintf("(CAST(%s AS pg_catalog.numeric) OPERATOR(pg_catalog.*)"
								" CAST(1000 AS pg_catalog.numeric))", us);
			return psprintf("(CAST(%s AS pg_catalog.numeric) OPERATOR(pg_catalog./)"
							" CAST(" INT64_FORMAT " AS pg_catalog.numeric))", us, per);
		case INT4OID:
		case INT8OID:
			{
				char	   *k = policy->unit_ns == 1 ?
					psprintf("(%s OPERATOR(pg_catalog.*) CAST(1000 AS pg_catalog.int8))", us) :
					psprintf("CAST(pg_catalog.ceil(CAST(%s AS pg_catalog.numeric) OPERATOR(pg_catalog./)"
							 " CAST(" INT64_FORMAT " AS pg_catalog.numeric)) AS pg_catalog.int8)",
							 us, per);

				return keytype == INT4OID ?
					psprintf("CAST(%s AS pg_catalog.int4)", k) : k;
			}
		default:
			elog(ERROR, "unsupported TTL key type %u", keytype);
	}
	return NULL;				/* keep compiler quiet */
}

/*
 * ttl_hide_visible_sql
 *		The USING expression of the restrictive policy on the table t
 *		resolves: true for every row that a pass starting at now() would
 *		not find expired (see the top of the file).
 */
char *
ttl_hide_visible_sql(TtlPolicy *policy, TtlTarget *t)
{
	StringInfoData buf;
	char	   *key = t->key_sql;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	if (policy->filter != NULL)
		appendStringInfo(&buf, "((%s) IS NOT TRUE) OR ", policy->filter);
	appendStringInfo(&buf, "(%s IS NULL) OR ", key);
	if (policy->unit_ns != 0)
		appendStringInfo(&buf, "(%s OPERATOR(pg_catalog.>=) %s)",
						 key, hide_epoch_bound_sql(policy, t->keytype));
	else if (ttl_key_is_local(t->keytype, policy->unit_ns))
		appendStringInfo(&buf, "(%s OPERATOR(pg_catalog.>=) %s)",
						 ttl_statement_instant(t, quote_literal_cstr(ttl_policy_zone_name(policy))),
						 hide_limit_sql(policy));
	else
		appendStringInfo(&buf, "(%s OPERATOR(pg_catalog.>=) %s)", key, hide_limit_sql(policy));
	/* the table by name: a regclass constant, which a dump writes by name */
	appendStringInfo(&buf, " OR %s.ttl_index_purging(CAST(%s AS pg_catalog.regclass)))",
					 quote_identifier(get_namespace_name(ttl_catalog_namespace(false))),
					 quote_literal_cstr(quote_qualified_identifier(get_namespace_name(get_rel_namespace(t->relid)),
																   get_rel_name(t->relid))));
	return buf.data;
}

/*
 * hide_refuse_dormant_policies
 *		Refuse a table whose row security the caller found disabled but
 *		which has policies of its own: enabling row security, as
 *		hide_expired does, would turn them on.  Connected to SPI.
 */
static void
hide_refuse_dormant_policies(Oid relid)
{
	if (hide_count("SELECT count(*) FROM pg_catalog.pg_policy WHERE polrelid = $1", relid) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has row-level security policies but row security is disabled",
						get_rel_name(relid)),
				 errdetail("hide_expired enables row security, which would turn those policies on."),
				 errhint("Enable row security (ALTER TABLE ... ENABLE ROW LEVEL SECURITY) or drop the policies first.")));
}

/*
 * ttl_hide_check
 *		Refuse hide_expired where it cannot be what the documentation says,
 *		before anything changes: a policy without a TTL, an anonymize
 *		(its rows are kept to be read), a Citus table, a filter that calls
 *		functions outside pg_catalog, a table whose row security is off but
 *		which has policies of its own.
 */
void
ttl_hide_check(TtlPolicy *policy, Relation rel)
{
	const char *relname = RelationGetRelationName(rel);

	if (!policy->hide_expired)
		return;
	if (!ttl_catalog_has_hide())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the hide_expired option needs version 1.5 of the extension"),
				 errhint("Run ALTER EXTENSION ttl_index UPDATE.")));
	if (policy->no_expiry)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hide_expired needs expire_after"),
				 errdetail("A cap alone (max_rows) has no expired rows to hide.")));
	if (policy->action == TTL_ACTION_ANONYMIZE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hide_expired cannot be combined with action 'anonymize'"),
				 errdetail("An anonymized row is kept to be read; hiding it would make it no different from a deleted one.")));
	if (ttl_citus_kind(RelationGetRelid(rel)) != TTL_CITUS_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("hide_expired is not supported on Citus table \"%s\"", relname),
				 errdetail("The row-level security policy would have to be made on every shard.")));
	for (int i = 0; i < policy->nfilter_funcs; i++)
		if (get_func_namespace(policy->filter_funcs[i]) != PG_CATALOG_NAMESPACE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("hide_expired cannot be combined with a filter that calls %s",
							format_procedure(policy->filter_funcs[i])),
					 errdetail("The row-level security policy runs in every reader's session, as the reader: it would run the table owner's function as each of them."),
					 errhint("Write the filter with built-in functions and operators only.")));
	/* a cast to a domain runs its constraints, which may call anything */
	if (policy->filter != NULL &&
		ttl_filter_runs_user_code(ttl_filter_parse(rel, policy->filter, true)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hide_expired cannot be combined with a filter that runs code outside pg_catalog"),
				 errdetail("The filter casts to a domain, whose constraints may call any function; the row-level security policy runs in every reader's session, as the reader."),
				 errhint("Write the filter with built-in functions, operators and types only.")));
	if (!rel->rd_rel->relrowsecurity)
	{
		SPI_connect();
		hide_refuse_dormant_policies(RelationGetRelid(rel));
		SPI_finish();
	}
}

/*
 * hide_ours_sql
 *		A condition on pg_policy p: the policy calls ttl_index_purging(),
 *		that is, the extension made it as a hiding policy (found so when
 *		the owner renamed it, too).
 */
static char *
hide_ours_sql(void)
{
	char	   *fn = psprintf("%s.ttl_index_purging(pg_catalog.regclass)",
							  quote_identifier(get_namespace_name(ttl_catalog_namespace(false))));

	return psprintf(" AND EXISTS (SELECT FROM pg_catalog.pg_depend f"
					" WHERE f.classid = 'pg_catalog.pg_policy'::pg_catalog.regclass"
					" AND f.objid = p.oid"
					" AND f.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass"
					" AND f.refobjid = pg_catalog.to_regprocedure(%s))",
					quote_literal_cstr(fn));
}

/*
 * hide_remove_one
 *		Drop the restrictive policy of column attnum on relid, if the
 *		extension made one; then, if it was the last, ttl_index_allow and
 *		row security, when the extension enabled it and no other policy is
 *		left.  With other policies left (the owner's), both stay: dropping
 *		ttl_index_allow would leave the table's readers only what those
 *		policies grant, none at all if they are all restrictive.  Connected
 *		to SPI, in the parse environment.
 */
static void
hide_remove_one(Oid relid, AttrNumber attnum)
{
	Oid			argtypes[2] = {OIDOID, INT2OID};
	Datum		values[2];
	char	   *qualname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
													  get_rel_name(relid));
	char	   *ours = hide_ours_sql();
	List	   *names = NIL;
	ListCell   *lc;

	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int16GetDatum(attnum);
	if (SPI_execute_with_args(psprintf("SELECT p.polname::pg_catalog.text FROM pg_catalog.pg_policy p"
									   " JOIN pg_catalog.pg_depend d"
									   " ON d.classid = 'pg_catalog.pg_policy'::pg_catalog.regclass"
									   " AND d.objid = p.oid AND d.refobjid = p.polrelid"
									   " AND d.refobjsubid = $2"
									   " WHERE p.polrelid = $1%s", ours),
							  2, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the policies of relation %u", relid);
	for (uint64 i = 0; i < SPI_processed; i++)
		names = lappend(names, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	foreach(lc, names)
		hide_exec(psprintf("DROP POLICY %s ON %s", quote_identifier(lfirst(lc)), qualname));
	if (names == NIL)
		return;

	if (hide_count(psprintf("SELECT count(*) FROM pg_catalog.pg_policy p WHERE p.polrelid = $1%s",
							ours), relid) > 0)
		return;
	if (hide_count("SELECT count(*) FROM pg_catalog.pg_policy WHERE polrelid = $1"
				   " AND polname = '" HIDE_ALLOW "'", relid) == 0)
		return;
	if (hide_count("SELECT count(*) FROM pg_catalog.pg_policy WHERE polrelid = $1"
				   " AND polname <> '" HIDE_ALLOW "'", relid) > 0)
	{
		ereport(NOTICE,
				(errmsg("row-level security and policy \"%s\" stay on table \"%s\"",
						HIDE_ALLOW, get_rel_name(relid)),
				 errdetail("The table has policies other than ttl_index's; without \"%s\" its readers would see only what those grant.",
						   HIDE_ALLOW),
				 errhint("Drop policy \"%s\" yourself if the table's own policies are to decide alone.",
						 HIDE_ALLOW)));
		return;
	}
	hide_exec(psprintf("DROP POLICY " HIDE_ALLOW " ON %s", qualname));
	hide_exec(psprintf("ALTER TABLE %s DISABLE ROW LEVEL SECURITY", qualname));
}

/*
 * hide_make_one
 *		Make the policies of the top of the file on one table (the policy's
 *		or a child), replacing the column's restrictive policy if it has
 *		one.  Connected to SPI, in the parse environment.
 */
static void
hide_make_one(TtlPolicy *policy, Oid relid)
{
	Relation	rel = relation_open(relid, NoLock);
	TtlTarget  *t = ttl_target_create(relid, false, CurrentMemoryContext);
	char	   *qualname;
	char		polname[NAMEDATALEN];

	if (ttl_target_resolve(policy, t, rel) == TTL_RESOLVE_GONE)
		elog(ERROR, "could not resolve the policy on %s", RelationGetRelationName(rel));
	qualname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
										  RelationGetRelationName(rel));
	snprintf(polname, sizeof(polname), HIDE_PREFIX "%s",
			 NameStr(TupleDescAttr(RelationGetDescr(rel), t->attnum - 1)->attname));
	relation_close(rel, NoLock);

	hide_remove_one(relid, t->attnum);
	CommandCounterIncrement();
	if (!hide_rls_enabled(relid))
	{
		/* a child may have policies of its own that enabling would turn on */
		hide_refuse_dormant_policies(relid);
		hide_exec(psprintf("ALTER TABLE %s ENABLE ROW LEVEL SECURITY", qualname));
		hide_exec(psprintf("CREATE POLICY " HIDE_ALLOW " ON %s AS PERMISSIVE FOR ALL TO PUBLIC"
						   " USING (true) WITH CHECK (true)", qualname));
		hide_exec(psprintf("COMMENT ON POLICY " HIDE_ALLOW " ON %s IS %s", qualname,
						   quote_literal_cstr("created by ttl_index with row security, so that hide_expired takes nothing else away; dropped with it")));
	}
	hide_exec(psprintf("CREATE POLICY %s ON %s AS RESTRICTIVE FOR ALL TO PUBLIC"
					   " USING (%s) WITH CHECK (true)",
					   quote_identifier(polname), qualname, ttl_hide_visible_sql(policy, t)));
	hide_exec(psprintf("COMMENT ON POLICY %s ON %s IS %s", quote_identifier(polname), qualname,
					   quote_literal_cstr("created by ttl_index: hides the rows the TTL policy finds expired; dropped with hide_expired")));
}

/*
 * hide_tables
 *		The policy's table and its partitions and inheritance children of
 *		kind relkind 'r' or 'p' that the current user owns.
 */
static List *
hide_tables(Oid relid, LOCKMODE lockmode)
{
	List	   *all = find_all_inheritors(relid, lockmode, NULL);
	List	   *tables = NIL;
	ListCell   *lc;

	foreach(lc, all)
	{
		Oid			r = lfirst_oid(lc);
		char		kind = get_rel_relkind(r);

		if (r != relid && (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE))
			continue;
		if (r != relid && !ttl_rel_ownercheck(r, GetUserId()))
			continue;
		tables = lappend_oid(tables, r);
	}
	return tables;
}

/*
 * ttl_hide_sync
 *		After ttl_create_index() or ttl_alter_index() wrote the policy: make
 *		or remake its row-level security policies when hide_expired is on,
 *		remove them when it is off.  The caller owns the table and holds it
 *		in ShareLock.
 */
void
ttl_hide_sync(TtlPolicy *policy)
{
	List	   *tables;
	ListCell   *lc;
	int			nestlevel;

	if (!ttl_catalog_has_hide())
		return;
	tables = hide_tables(policy->relid, ShareLock);
	nestlevel = ttl_parse_env_enter();
	SPI_connect();
	foreach(lc, tables)
	{
		Oid			r = lfirst_oid(lc);

		if (policy->hide_expired)
			hide_make_one(policy, r);
		else
		{
			AttrNumber	a = r == policy->relid ? policy->attnum :
				get_attnum(r, policy->column_name);

			if (a != InvalidAttrNumber)
				hide_remove_one(r, a);
		}
		CommandCounterIncrement();
	}
	SPI_finish();
	ttl_parse_env_leave(nestlevel);
}

/*
 * ttl_hide_remove
 *		ttl_drop_index(): remove what hide_expired made for the column on
 *		the table and its children.  The caller owns the table.
 */
void
ttl_hide_remove(Oid relid, AttrNumber attnum)
{
	const char *colname = get_attname(relid, attnum, false);
	List	   *tables = hide_tables(relid, ShareUpdateExclusiveLock);
	ListCell   *lc;
	int			nestlevel = ttl_parse_env_enter();

	SPI_connect();
	foreach(lc, tables)
	{
		Oid			r = lfirst_oid(lc);
		AttrNumber	a = r == relid ? attnum : get_attnum(r, colname);

		if (a != InvalidAttrNumber)
			hide_remove_one(r, a);
		CommandCounterIncrement();
	}
	SPI_finish();
	ttl_parse_env_leave(nestlevel);
}
