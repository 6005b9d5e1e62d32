/*-------------------------------------------------------------------------
 *
 * statement.c
 *	  The executor path's statement: the SQL that deletes, archives,
 *	  soft-deletes or anonymizes the rows a batch found, its plan, and
 *	  running it.
 *
 * The statement acts on the rows at the TIDs the scan collected that have
 * still expired and still pass the filter, so that a row a concurrent
 * UPDATE changed since the scan is checked again (EvalPlanQual):
 *
 *	DELETE FROM ONLY t [AS ttl_t] WHERE ctid = ANY ($1) AND <expired> AND
 *	  <filter> [AND NOT EXISTS (rows referencing ttl_t)]
 *	WITH expired AS (DELETE ... RETURNING <columns>) INSERT INTO <archive>
 *	  (<columns>) SELECT <columns> FROM expired
 *	UPDATE ONLY t SET <soft_delete_column> = <the row's expiry>
 *	  WHERE ...
 *	UPDATE ONLY t SET <set_columns> WHERE ...
 *
 * An anonymize's WHERE holds the target's filter, which says that a set
 * column still differs from its value (set.c): a row another UPDATE reset
 * since the scan is left alone.  Its SET list is the stored set_columns as
 * read against the target (constants, with their casts).
 *
 * On a partition or inheritance child of the policy's table, the statement
 * is that of the owner's DELETE FROM parent when a DELETE of the leaf alone
 * would differ from it (batch.c decides): it runs on the policy's table,
 * restricted to the leaf (tableoid, and the leaf's partition constraint,
 * which prunes the other partitions of a range- or list-partitioned
 * table), so that the parent's row-level security, grants, statement-level
 * triggers and DO ALSO rules apply, and not the leaf's.
 *
 * $1 is tid[], $2 the cutoff (the bound in the key's type, or for
 * wall-clock keys the limit as timestamptz, compared with the key's instant
 * in the policy's zone), $3 expire_after as an interval of microseconds
 * (its fixed part: its calendar months are written into the soft delete's
 * expiry, ttl_statement_months_sql),
 * $4 the policy's time zone, $5 for wall-clock keys the bound in the key's
 * type when a cap moved it (NULL otherwise): a key below it goes whatever
 * its instant, which is the end of time for infinity and for a date past
 * the range of timestamps alike.  Triggers, foreign-key actions, rules and
 * row-level security then behave exactly as for the owner's own statement.
 *
 * Foreign keys.  A row that a NO ACTION or RESTRICT foreign key still
 * references would fail the whole statement; the NOT EXISTS clauses leave
 * such rows out beforehand (where the owner may read the referencing
 * columns).  A row referenced by a transaction that commits between the
 * clause and the end of the statement still fails it: held.c isolates it.
 *
 * The plan.  The statement is parsed in the pinned parse environment
 * (owner.c), so the stored filter means what it meant when stored, and
 * planned as the table owner (the planner folds the owner's IMMUTABLE
 * functions: it must run with the owner's rights and an active snapshot)
 * with the planner settings pinned to their defaults and TID scans on, so
 * that no setting of the database or the owner's role can turn it into a
 * scan of the table (enable_tidscan = off made each batch read the whole
 * backlog).  The plan is generic, made once per resolution of the target
 * (targets.c) and reused by every batch until an invalidation: before each
 * run the relations of the plan are locked (under the owner's
 * lock_timeout), which delivers any invalidation, and a stale plan is made
 * again.  It runs under the current settings, which are the owner's
 * (ttl_owner_enter): triggers see the owner's search_path, the statement
 * itself does not depend on it.
 *
 * Rules: a DO INSTEAD rule on the table's DELETE (UPDATE for a soft delete
 * or an anonymize) is refused (ttl_create_index says so; a rule added later
 * fails the batch with the same error); DO ALSO rules run as for the owner's
 * statement.
 *
 * A preview (api/preview.c) runs the same WHERE clause as a count instead
 * of the statement (ttl_statement_preview), planned the same way each time
 * and not kept: a SELECT, so no trigger, rule or foreign-key action runs.
 *
 * hide_expired (hide.c).  While the statement runs, ttl_index_purging()
 * of the relation it names is true in this backend for the role it runs as
 * (the owner): the row-level security policy of hide_expired then lets it
 * see the expired rows it acts on, where the table forces row security on
 * its owner.  It is false for any other relation, and for code that runs
 * as another role (a SECURITY DEFINER function, a trigger of a table a
 * foreign key cascades into): no user code the purge reaches sees another
 * table's expired rows, nor this one's as anyone but its owner.  A
 * preview's count sees them the same way (its caller may see them anyway:
 * the owner, who may turn FORCE off, a member of its role, or a
 * superuser).  The state is this file's and nothing else sets it; it is
 * restored when the statement ends or fails.
 *
 * Locking: the caller holds the target table's ROW EXCLUSIVE lock (ACCESS
 * SHARE for a preview); the other relations of the plan are locked here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tstoreReceiver.h"
#include "miscadmin.h"
#include "nodes/params.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "compat.h"
#include "ttl_index.h"
#include "policy/policy.h"
#include "env/env.h"
#include "shared/shared.h"

#define TTL_STATEMENT_NPARAMS	5

struct TtlPlan
{
	char	   *sql;
	List	   *stmts;			/* PlannedStmt: the statement, and those of
								 * DO ALSO rules */
	uint64		gen;			/* targets generation it was made under */
	bool		via_parent;		/* on the policy's table (see the top) */
};

/*
 * The planner settings pinned while planning: every enable_* at its
 * default, TID scans on, default costs, no parallel plan, no JIT.  Names a
 * server version lacks are skipped.
 */
static const char *const ttl_planner_pins[][2] = {
	{"enable_async_append", "on"},
	{"enable_bitmapscan", "on"},
	{"enable_distinct_reordering", "on"},
	{"enable_gathermerge", "on"},
	{"enable_group_by_reordering", "on"},
	{"enable_hashagg", "on"},
	{"enable_hashjoin", "on"},
	{"enable_incremental_sort", "on"},
	{"enable_indexonlyscan", "on"},
	{"enable_indexscan", "on"},
	{"enable_material", "on"},
	{"enable_memoize", "on"},
	{"enable_mergejoin", "on"},
	{"enable_nestloop", "on"},
	{"enable_parallel_append", "on"},
	{"enable_parallel_hash", "on"},
	{"enable_partition_pruning", "on"},
	{"enable_partitionwise_aggregate", "off"},
	{"enable_partitionwise_join", "off"},
	{"enable_presorted_aggregate", "on"},
	{"enable_self_join_elimination", "on"},
	{"enable_seqscan", "on"},
	{"enable_sort", "on"},
	{"enable_tidscan", "on"},
	{"seq_page_cost", "1"},
	{"random_page_cost", "4"},
	{"cpu_tuple_cost", "0.01"},
	{"cpu_index_tuple_cost", "0.005"},
	{"cpu_operator_cost", "0.0025"},
	{"effective_cache_size", "524288"},
	{"constraint_exclusion", "partition"},
	{"from_collapse_limit", "8"},
	{"join_collapse_limit", "8"},
	{"geqo", "on"},
	{"max_parallel_workers_per_gather", "0"},
	{"jit", "off"}
};

/*
 * Inside ttl_statement_run's statement or a preview's count (see the top of
 * the file): the relation the statement names and the role it runs as (the
 * table's owner); InvalidOid outside.
 */
static Oid	statement_purging_relid = InvalidOid;
static Oid	statement_purging_user = InvalidOid;

PG_FUNCTION_INFO_V1(ttl_index_purging);

/*
 * ttl_index_purging(regclass) returns boolean
 *		Whether this backend is running ttl_index's purge statement on that
 *		relation, and evaluates the call as the role the statement runs as:
 *		the escape of hide_expired's row-level security policy of that
 *		relation (hide.c).  User code that the statement reaches and that
 *		runs as another role (a SECURITY DEFINER function, the triggers of
 *		a table a foreign key cascades into, which run as that table's
 *		owner) gets false, and so does every read of another relation: the
 *		purge of one table never shows another table's expired rows.
 */
Datum
ttl_index_purging(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);

	PG_RETURN_BOOL(OidIsValid(statement_purging_relid) &&
				   relid == statement_purging_relid &&
				   GetUserId() == statement_purging_user);
}

/*
 * statement_executor_run
 *		Run a query to its end with ttl_index_purging() true for relid, as
 *		the current user; restores what was there before, also on error.
 */
static void
statement_executor_run(QueryDesc *qd, Oid relid)
{
	Oid			save_relid = statement_purging_relid;
	Oid			save_user = statement_purging_user;

	statement_purging_relid = relid;
	statement_purging_user = GetUserId();
	PG_TRY();
	{
		ExecutorStart(qd, 0);
		ttl_ExecutorRun(qd, ForwardScanDirection, 0);
		ExecutorFinish(qd);
	}
	PG_FINALLY();
	{
		statement_purging_relid = save_relid;
		statement_purging_user = save_user;
	}
	PG_END_TRY();
}

/*
 * The wall-clock keys converted to instants: two days inside either end of
 * time (no zone is a day off UTC), so that converting a key, and its expiry
 * back to wall-clock time, cannot leave the range.  Keys beyond them are
 * the infinity on their side, as ttl_key_instant() reads them: a key past
 * the end never expires, one before the start always has.  Without this, a
 * single such row failed every statement it met (22008), and the other
 * expired rows of its table stayed for good.
 */
#define TTL_LOCAL_LOW		"4714-11-26 00:00:00 BC"
#define TTL_LOCAL_HIGH		"294276-12-30 00:00:00"

/*
 * ttl_statement_clamp_sql
 *		CASE that gives -infinity below the low end and infinity at or
 *		above the high end of value (of type valtype, timestamp, date or
 *		timestamptz), and otherwise inner, of type restype.
 */
static char *
ttl_statement_clamp_sql(const char *value, const char *valtype,
						const char *restype, const char *inner)
{
	const char *zone = strcmp(valtype, "timestamptz") == 0 ? "+00" : "";

	return psprintf("CASE WHEN %s OPERATOR(pg_catalog.<) CAST('%s%s' AS pg_catalog.%s)"
					" THEN CAST('-infinity' AS pg_catalog.%s)"
					" WHEN %s OPERATOR(pg_catalog.>=) CAST('%s%s' AS pg_catalog.%s)"
					" THEN CAST('infinity' AS pg_catalog.%s) ELSE %s END",
					value, TTL_LOCAL_LOW, zone, valtype, restype,
					value, TTL_LOCAL_HIGH, zone, valtype, restype, inner);
}

/*
 * ttl_statement_instant_sql
 *		A wall-clock key (timestamp or date) as the instant it denotes in
 *		the policy's zone, saturated at either end of time.
 */
static char *
ttl_statement_instant_sql(TtlTarget *t)
{
	return ttl_statement_instant(t, "$4");
}

/*
 * ttl_statement_instant
 *		A wall-clock key (timestamp or date) as the instant it denotes in
 *		the zone that the SQL expression zone names, saturated at either end
 *		of time: the statement's ($4) and hide_expired's (a literal).
 */
char *
ttl_statement_instant(TtlTarget *t, const char *zone)
{
	if (t->keytype == DATEOID)
		return ttl_statement_clamp_sql(t->key_sql, "date", "timestamptz",
									   psprintf("pg_catalog.timezone(%s, CAST(%s AS pg_catalog.timestamp))",
												zone, t->key_sql));
	return ttl_statement_clamp_sql(t->key_sql, "timestamp", "timestamptz",
								   psprintf("pg_catalog.timezone(%s, %s)", zone, t->key_sql));
}

/*
 * ttl_statement_expired_sql
 *		The condition "this row has expired" over the key, with $2 and $4 as
 *		described at the top of the file.
 */
static char *
ttl_statement_expired_sql(TtlPolicy *policy, TtlTarget *t)
{
	if (!ttl_key_is_local(t->keytype, policy->unit_ns))
		return psprintf("%s OPERATOR(pg_catalog.<) $2", t->key_sql);
	return psprintf("(%s OPERATOR(pg_catalog.<) $2 OR %s OPERATOR(pg_catalog.<) $5)",
					ttl_statement_instant_sql(t), t->key_sql);
}

/*
 * ttl_statement_months_sql
 *		The instant at which a row whose instant plus the fixed part of
 *		expire_after is `at` expires under `months` calendar months counted
 *		in `zone` (expiry.c's ttl_months_expiry, in SQL): at + the months on
 *		the zone's calendar, or, when that was clamped to the end of a
 *		shorter month, the instant before the next month starts.  The
 *		months are the policy's, as constant as the statement's text (a
 *		changed policy is a new plan).
 */
static char *
ttl_statement_months_sql(const char *at, const char *zone, int32 months)
{
	char	   *wall = psprintf("pg_catalog.timezone(%s, %s)", zone, at);
	char	   *span = psprintf("CAST('%d mons' AS pg_catalog.interval)", months);
	char	   *moved = psprintf("(%s OPERATOR(pg_catalog.+) %s)", wall, span);

	return psprintf("(CASE WHEN (%s OPERATOR(pg_catalog.-) %s) OPERATOR(pg_catalog.<) %s"
					" THEN pg_catalog.timezone(%s, pg_catalog.date_trunc('month', %s)"
					" OPERATOR(pg_catalog.+) CAST('1 mon' AS pg_catalog.interval))"
					" OPERATOR(pg_catalog.-) CAST('1 microsecond' AS pg_catalog.interval)"
					" ELSE pg_catalog.timezone(%s, %s) END)",
					moved, span, wall, zone, moved, zone, moved);
}

/*
 * ttl_statement_expiry_sql
 *		The instant the row expires, as a value of the soft-delete column's
 *		type: timestamptz as is, timestamp and date as wall-clock time in
 *		the policy's zone (saturated at either end of time).
 */
static char *
ttl_statement_expiry_sql(TtlPolicy *policy, TtlTarget *t, Oid softtype)
{
	char	   *instant;
	char	   *expiry;

	if (policy->unit_ns != 0)
	{
		const char *per_second =
			policy->unit_ns == INT64CONST(1000000000) ? "1" :
			policy->unit_ns == INT64CONST(1000000) ? "1000" :
			policy->unit_ns == INT64CONST(1000) ? "1000000" : "1000000000";

		char	   *secs = psprintf("(CAST(%s AS pg_catalog.float8) OPERATOR(pg_catalog./) %s)",
									t->key_sql, per_second);

		/* a day inside either end of time, as for wall-clock keys */
		instant = psprintf("CASE WHEN %s OPERATOR(pg_catalog.<) -210866716800"
						   " THEN CAST('-infinity' AS pg_catalog.timestamptz)"
						   " WHEN %s OPERATOR(pg_catalog.>=) 9224317929600"
						   " THEN CAST('infinity' AS pg_catalog.timestamptz)"
						   " ELSE pg_catalog.to_timestamp(%s) END",
						   secs, secs, secs);
	}
	else if (t->keytype == DATEOID || t->keytype == TIMESTAMPOID)
		instant = ttl_statement_instant_sql(t);
	else
		instant = t->key_sql;

	expiry = psprintf("(%s OPERATOR(pg_catalog.+) $3)", instant);
	if (policy->expire_months != 0)
		expiry = ttl_statement_months_sql(expiry, policy->unit_ns != 0 ? "'UTC'" : "$4",
										  policy->expire_months);
	if (softtype == TIMESTAMPOID)
		return ttl_statement_clamp_sql(expiry, "timestamptz", "timestamp",
									   psprintf("pg_catalog.timezone($4, %s)", expiry));
	if (softtype == DATEOID)
		return ttl_statement_clamp_sql(expiry, "timestamptz", "date",
									   psprintf("CAST(pg_catalog.timezone($4, %s) AS pg_catalog.date)", expiry));
	return expiry;
}

/*
 * ttl_statement_operator_sql
 *		OPERATOR(schema.name) of an operator.
 */
static char *
ttl_statement_operator_sql(Oid opno)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	Form_pg_operator op;
	char	   *result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opno);
	op = (Form_pg_operator) GETSTRUCT(tup);
	result = psprintf("OPERATOR(%s.%s)",
					  quote_identifier(get_namespace_name(op->oprnamespace)),
					  NameStr(op->oprname));
	ReleaseSysCache(tup);
	return result;
}

/*
 * ttl_statement_fk_sql
 *		" AND NOT EXISTS (...)" for every NO ACTION or RESTRICT foreign key
 *		that references the target and whose referencing columns the
 *		current user (the owner) may read; "" when there is none.
 */
static char *
ttl_statement_fk_sql(Relation rel, List **funcs)
{
	StringInfoData buf;
	Relation	conrel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;

	initStringInfo(&buf);
	conrel = table_open(ConstraintRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_constraint_confrelid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(RelationGetRelid(rel)));
	/* no index on confrelid: a scan of pg_constraint, once per resolution */
	scan = systable_beginscan(conrel, InvalidOid, false, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tup);
		Datum		d;
		bool		isnull;
		ArrayType  *a;
		int16	   *conkey;
		int16	   *confkey;
		Oid		   *pfeqop;
		int			n;
		bool		readable = true;
		char	   *child;
		StringInfoData cond;

		if (con->contype != CONSTRAINT_FOREIGN ||
			(con->confdeltype != FKCONSTR_ACTION_NOACTION &&
			 con->confdeltype != FKCONSTR_ACTION_RESTRICT))
			continue;

		d = heap_getattr(tup, Anum_pg_constraint_conkey, RelationGetDescr(conrel), &isnull);
		if (isnull)
			continue;
		a = DatumGetArrayTypeP(d);
		n = ARR_DIMS(a)[0];
		conkey = (int16 *) ARR_DATA_PTR(a);
		d = heap_getattr(tup, Anum_pg_constraint_confkey, RelationGetDescr(conrel), &isnull);
		if (isnull)
			continue;
		confkey = (int16 *) ARR_DATA_PTR(DatumGetArrayTypeP(d));
		d = heap_getattr(tup, Anum_pg_constraint_conpfeqop, RelationGetDescr(conrel), &isnull);
		if (isnull)
			continue;
		pfeqop = (Oid *) ARR_DATA_PTR(DatumGetArrayTypeP(d));

		/*
		 * Only a referencing table of the same owner: the clause reads it as
		 * the current user, and would run another owner's row-level security
		 * policies on it with this owner's rights.  (PostgreSQL's own check
		 * reads it as its owner.)  A reference it cannot see here fails the
		 * statement, and held.c isolates the row.
		 */
		if (get_rel_name(con->conrelid) == NULL ||
			ttl_table_owner(con->conrelid) != GetUserId())
			continue;
		for (int i = 0; i < n; i++)
		{
			if (pg_attribute_aclcheck(con->conrelid, conkey[i], GetUserId(),
									  ACL_SELECT) != ACLCHECK_OK &&
				pg_class_aclcheck(con->conrelid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
				readable = false;
		}
		child = ttl_qualified_relname(con->conrelid);
		if (!readable || child == NULL)
			continue;

		initStringInfo(&cond);
		for (int i = 0; i < n; i++)
		{
			char	   *fkcol = get_attname(con->conrelid, conkey[i], false);
			char	   *pkcol = get_attname(RelationGetRelid(rel), confkey[i], false);

			appendStringInfo(&cond, "%sttl_c.%s %s ttl_t.%s",
							 i > 0 ? " AND " : "",
							 quote_identifier(fkcol),
							 ttl_statement_operator_sql(pfeqop[i]),
							 quote_identifier(pkcol));
			*funcs = lappend_oid(*funcs, get_opcode(pfeqop[i]));
		}
		appendStringInfo(&buf, " AND NOT EXISTS (SELECT FROM ONLY %s AS ttl_c WHERE %s)",
						 child, cond.data);
	}
	systable_endscan(scan);
	table_close(conrel, AccessShareLock);
	return buf.data;
}

/*
 * ttl_statement_partition_sql
 *		" AND tableoid = <leaf> AND (<the leaf's partition constraint>)" for
 *		a statement on the policy's table restricted to one of its leaves:
 *		the TIDs are the leaf's, tableoid keeps them off the rows of other
 *		tables at the same TIDs, and the partition constraint, written over
 *		the parent's columns, lets the planner prune the other partitions of
 *		a range- or list-partitioned table.  Deparsed in the parse
 *		environment, where it is parsed again.
 */
static char *
ttl_statement_partition_sql(Relation rel, Relation parent, List **funcs)
{
	Expr	   *qual = get_rel_relispartition(RelationGetRelid(rel)) ?
		get_partition_qual_relid(RelationGetRelid(rel)) : NULL;
	char	   *sql = psprintf(" AND tableoid OPERATOR(pg_catalog.=) %u::pg_catalog.oid",
							   RelationGetRelid(rel));
	int			nestlevel;
	List	   *mapped;

	if (qual == NULL)
		return sql;
	mapped = map_partition_varattnos(list_make1(qual), 1, parent, rel);
	*funcs = list_concat(*funcs, ttl_filter_functions((Node *) mapped));
	nestlevel = ttl_parse_env_enter();
	sql = psprintf("%s AND (%s)", sql,
				   deparse_expression((Node *) linitial(mapped),
									  deparse_context_for(RelationGetRelationName(parent),
														  RelationGetRelid(parent)),
									  false, false));
	ttl_parse_env_leave(nestlevel);
	return sql;
}

/*
 * ttl_statement_where
 *		The statement's WHERE clause over the rows at $1 (see the top of the
 *		file), and in *from the relation it acts on, as ttl_statement_sql
 *		names it: the one selection of the rows a statement acts on, which
 *		a preview counts (ttl_statement_preview).
 */
static char *
ttl_statement_where(TtlPolicy *policy, TtlTarget *t, Relation rel, Relation parent,
					bool via_parent, bool precheck, List **funcs, char **from)
{
	char	   *relname = via_parent ?
		ttl_qualified_relname(RelationGetRelid(parent)) :
		psprintf("ONLY %s", ttl_qualified_relname(t->relid));
	char	   *fk = precheck && !TTL_ACTION_UPDATES(policy->action) ?
		ttl_statement_fk_sql(rel, funcs) : "";

	/* the subqueries of the foreign-key clauses name the table ttl_t */
	if (fk[0] != '\0')
		relname = psprintf("%s AS ttl_t", relname);
	*from = relname;
	return psprintf("ctid OPERATOR(pg_catalog.=) ANY ($1) AND %s%s%s%s%s",
					ttl_statement_expired_sql(policy, t),
					t->filter_sql ? " AND " : "",
					t->filter_sql ? t->filter_sql : "",
					via_parent ? ttl_statement_partition_sql(rel, parent, funcs) : "",
					fk);
}

/*
 * ttl_statement_sql
 *		The statement of a target (see the top of the file).  With precheck,
 *		rows still referenced by a foreign key are left out.  parent is the
 *		policy's table when the target is one of its partitions or children
 *		(else NULL), and via_parent says the statement runs on it, as the
 *		owner's DELETE FROM parent does; otherwise it runs on the target
 *		alone (ONLY).  An archive statement archives the policy's table's
 *		columns.  Needs a transaction; runs as the owner when precheck
 *		(privileges).
 */
char *
ttl_statement_sql(TtlPolicy *policy, TtlTarget *t, Relation rel, Relation parent,
				  bool via_parent, bool precheck, List **funcs)
{
	char	   *relname;
	Relation	colrel = parent != NULL ? parent : rel;
	char	   *where = ttl_statement_where(policy, t, rel, parent, via_parent,
											precheck, funcs, &relname);

	switch (policy->action)
	{
		case TTL_ACTION_DELETE:
			return psprintf("DELETE FROM %s WHERE %s", relname, where);
		case TTL_ACTION_SOFT_DELETE:
			return psprintf("UPDATE %s SET %s = %s WHERE %s",
							relname,
							quote_identifier(NameStr(TupleDescAttr(RelationGetDescr(rel),
																   t->soft_attnum - 1)->attname)),
							ttl_statement_expiry_sql(policy, t,
													 getBaseType(TupleDescAttr(RelationGetDescr(rel),
																			   t->soft_attnum - 1)->atttypid)),
							where);
		case TTL_ACTION_ANONYMIZE:
			/* the "not yet anonymized" condition names its operators */
			*funcs = list_concat(*funcs, t->set_funcs);
			return psprintf("UPDATE %s SET %s WHERE %s",
							relname, ttl_set_assignments_sql(t->set_columns), where);
		case TTL_ACTION_ARCHIVE:
			{
				StringInfoData cols;
				char	   *archive = ttl_qualified_relname(policy->archive_relid);

				if (archive == NULL)
					ereport(ERROR,
							(errcode(ERRCODE_UNDEFINED_TABLE),
							 errmsg("the archive table of the policy on %s no longer exists",
									relname)));
				initStringInfo(&cols);
				for (int i = 0; i < RelationGetNumberOfAttributes(colrel); i++)
				{
					Form_pg_attribute att = TupleDescAttr(RelationGetDescr(colrel), i);

					if (att->attisdropped)
						continue;
					if (cols.len > 0)
						appendStringInfoString(&cols, ", ");
					appendStringInfoString(&cols, quote_identifier(NameStr(att->attname)));
				}
				return psprintf("WITH expired AS (DELETE FROM %s WHERE %s RETURNING %s)"
								" INSERT INTO %s (%s) SELECT %s FROM expired",
								relname, where, cols.data, archive, cols.data, cols.data);
			}
	}
	return NULL;				/* keep compiler quiet */
}

/*
 * ttl_statement_param_types
 *		The types of $1 .. $5.
 */
static void
ttl_statement_param_types(TtlPolicy *policy, TtlTarget *t, Oid *types)
{
	types[0] = TIDARRAYOID;
	types[1] = ttl_key_is_local(t->keytype, policy->unit_ns) ? TIMESTAMPTZOID : t->keytype;
	types[2] = INTERVALOID;
	types[3] = TEXTOID;
	types[4] = t->keytype;
}

/*
 * ttl_statement_error_callback
 *		Show the statement an error came from, as SPI does: a syntax error
 *		position points into its text, else it is named in the context.
 */
static void
ttl_statement_error_callback(void *arg)
{
	const char *sql = (const char *) arg;
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery(sql);
	}
	else
		errcontext("SQL statement \"%s\"", sql);
}

/*
 * ttl_statement_analyze
 *		Parse, analyze and rewrite the statement in the parse environment.
 *		Refuses a table whose rule replaces the statement (DO INSTEAD).
 */
static List *
ttl_statement_analyze(TtlPolicy *policy, const char *sql, Oid *types, int nparams,
					  const char *relname, List *funcs)
{
	List	   *raw;
	List	   *queries;
	Query	   *query;
	ListCell   *lc;
	bool		original = false;
	int			nestlevel = ttl_parse_env_enter();
	ErrorContextCallback errcallback;

	errcallback.callback = ttl_statement_error_callback;
	errcallback.arg = (void *) sql;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	raw = pg_parse_query(sql);
	if (list_length(raw) != 1)
		elog(ERROR, "unexpected purge statement: %s", sql);
	query = parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql,
									  types, nparams, NULL);

	/*
	 * The statement calls what the policy was made with, and what its own
	 * parts name (the foreign keys' operators, the partition constraint),
	 * nothing that resolves otherwise since (filter.c).  Checked before the
	 * rewriter adds the table's rules and row-level security policies,
	 * which are the owner's own.
	 */
	ttl_filter_check_functions((Node *) query, policy, funcs);
	queries = pg_rewrite_query(query);
	error_context_stack = errcallback.previous;
	ttl_parse_env_leave(nestlevel);

	foreach(lc, queries)
	{
		if (lfirst_node(Query, lc)->querySource == QSRC_ORIGINAL)
			original = true;
	}
	if (!original)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table %s has a DO INSTEAD rule that rewrites what a TTL policy does to it",
						relname),
				 errdetail("Its expired rows would never be removed."),
				 errhint("Drop the rule, or drop the policy with ttl_drop_index().")));
	return queries;
}

/*
 * ttl_statement_check
 *		Parse, analyze and rewrite (not plan, not run) the statement of a
 *		target, as the caller: the archive table's columns, the soft-delete
 *		column's type and DO INSTEAD rules are checked as a batch will meet
 *		them.  No user code runs.
 */
void
ttl_statement_check(TtlPolicy *policy, TtlTarget *t, Relation rel)
{
	Oid			types[TTL_STATEMENT_NPARAMS];
	List	   *funcs = NIL;
	char	   *sql = ttl_statement_sql(policy, t, rel, NULL, false, false, &funcs);

	ttl_statement_param_types(policy, t, types);
	(void) ttl_statement_analyze(policy, sql, types, TTL_STATEMENT_NPARAMS,
								 t->relname ? t->relname :
								 RelationGetRelationName(rel), funcs);
}

/*
 * ttl_statement_plan_pinned
 *		Plan the analyzed statement (generic) under the pinned planner
 *		settings (see the top of the file).
 */
static List *
ttl_statement_plan_pinned(List *queries, const char *sql)
{
	int			nestlevel = NewGUCNestLevel();
	List	   *stmts;

	for (int i = 0; i < lengthof(ttl_planner_pins); i++)
		(void) set_config_option(ttl_planner_pins[i][0], ttl_planner_pins[i][1],
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, DEBUG1, false);
	stmts = pg_plan_queries(queries, sql, CURSOR_OPT_GENERIC_PLAN, NULL);
	AtEOXact_GUC(true, nestlevel);
	return stmts;
}

/*
 * ttl_statement_plan
 *		Make the target's plan (see the top of the file), in its memory
 *		context.  Runs as the owner, with an active snapshot.
 */
static TtlPlan *
ttl_statement_plan(TtlPolicy *policy, TtlTarget *t, Relation rel, Relation parent,
				   bool via_parent)
{
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext,
											  "ttl_index planning",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);
	Oid			types[TTL_STATEMENT_NPARAMS];
	char	   *sql;
	List	   *queries;
	List	   *stmts;
	TtlPlan    *plan;
	List	   *funcs = NIL;

	ttl_statement_param_types(policy, t, types);
	sql = ttl_statement_sql(policy, t, rel, parent, via_parent, true, &funcs);
	queries = ttl_statement_analyze(policy, sql, types, TTL_STATEMENT_NPARAMS,
									t->relname, funcs);
	stmts = ttl_statement_plan_pinned(queries, sql);

	MemoryContextSwitchTo(t->cxt);
	plan = palloc0(sizeof(TtlPlan));
	plan->sql = pstrdup(sql);
	plan->stmts = copyObject(stmts);
	plan->gen = ttl_targets_generation();
	plan->via_parent = via_parent;
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
	return plan;
}

/*
 * ttl_statement_lock
 *		Lock every relation the plan uses, as the executor expects (it
 *		asserts the locks are held).  Waits at most lock_timeout.
 */
static void
ttl_statement_lock(TtlPlan *plan)
{
	ListCell   *lc;

	foreach(lc, plan->stmts)
	{
		PlannedStmt *stmt = lfirst_node(PlannedStmt, lc);
		ListCell   *lc2;

		foreach(lc2, stmt->rtable)
		{
			RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc2);

			if (rte->rtekind == RTE_RELATION)
			{
				LockRelationOid(rte->relid, rte->rellockmode);
				ttl_targets_watch(rte->relid);
			}
		}
	}
}

/*
 * ttl_statement_tids
 *		The rows at tids as a tid[].
 */
static Datum
ttl_statement_tids(ItemPointerData *tids, int ntids)
{
	Datum	   *tiddatums = palloc(sizeof(Datum) * Max(ntids, 1));

	for (int i = 0; i < ntids; i++)
		tiddatums[i] = PointerGetDatum(&tids[i]);
	return PointerGetDatum(construct_array(tiddatums, ntids, TIDOID,
										   sizeof(ItemPointerData),
										   false, TYPALIGN_SHORT));
}

/*
 * ttl_statement_params
 *		$1 .. $5 of the statement over the rows at tids (see the top of the
 *		file), in a list of nparams (the caller sets those past $5).
 */
static ParamListInfo
ttl_statement_params(TtlPolicy *policy, TtlTarget *t, ItemPointerData *tids,
					 int ntids, const TtlCutoff *cutoff, int nparams)
{
	ParamListInfo params = makeParamList(nparams);
	Interval   *span = palloc0(sizeof(Interval));
	Oid			types[TTL_STATEMENT_NPARAMS];

	ttl_statement_param_types(policy, t, types);
	span->time = policy->expire_after;
	params->numParams = nparams;
	params->params[0].value = ttl_statement_tids(tids, ntids);
	params->params[1].value = ttl_key_is_local(t->keytype, policy->unit_ns) ?
		TimestampTzGetDatum(cutoff->limit) : cutoff->bound;
	params->params[2].value = IntervalPGetDatum(span);
	params->params[3].value = CStringGetTextDatum(ttl_policy_zone_name(policy));
	params->params[4].value = cutoff->capped ? cutoff->cap_bound : (Datum) 0;
	for (int i = 0; i < TTL_STATEMENT_NPARAMS; i++)
	{
		params->params[i].isnull = i == 4 && !cutoff->capped;
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = types[i];
	}
	return params;
}

/*
 * ttl_statement_run
 *		Run the target's statement over the given rows, as the current user
 *		(the owner) under the current settings, and return how many rows it
 *		processed (deleted, archived or soft-deleted).  rel is the target's
 *		table, parent the policy's table when the target is one of its
 *		partitions or children (else NULL), both open and locked; via_parent
 *		as for ttl_statement_sql.
 */
uint64
ttl_statement_run(TtlPolicy *policy, TtlTarget *t, Relation rel, Relation parent,
				  bool via_parent, ItemPointerData *tids, int ntids,
				  const TtlCutoff *cutoff)
{
	ParamListInfo params;
	uint64		processed = 0;
	ListCell   *lc;

	/* a plan, with every relation it uses locked, made since the last change */
	for (int tries = 0;; tries++)
	{
		if (t->plan == NULL || t->plan->gen != ttl_targets_generation() ||
			t->plan->via_parent != via_parent)
			t->plan = ttl_statement_plan(policy, t, rel, parent, via_parent);
		ttl_statement_lock(t->plan);
		if (t->plan->gen == ttl_targets_generation() || tries > 0)
			break;
	}

	params = ttl_statement_params(policy, t, tids, ntids, cutoff,
								  TTL_STATEMENT_NPARAMS);
	ttl_yield_own_xid();
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	foreach(lc, t->plan->stmts)
	{
		PlannedStmt *stmt = lfirst_node(PlannedStmt, lc);
		QueryDesc  *qd;

		if (foreach_current_index(lc) > 0)
		{
			CommandCounterIncrement();
			UpdateActiveSnapshotCommandId();
		}
		qd = CreateQueryDesc(stmt, t->plan->sql, GetActiveSnapshot(),
							 InvalidSnapshot, None_Receiver, params, NULL, 0);
		statement_executor_run(qd, RelationGetRelid(via_parent ? parent : rel));
		if (stmt->canSetTag)
			processed = qd->estate->es_processed;
		ExecutorEnd(qd);
		FreeQueryDesc(qd);
	}
	PopActiveSnapshot();
	CommandCounterIncrement();
	return processed;
}

/* ----------
 * A preview's count (preview.c)
 * ----------
 */

/* $6 of the count: the rows taken for the cap */
#define TTL_PREVIEW_NPARAMS		(TTL_STATEMENT_NPARAMS + 1)

/*
 * ttl_statement_preview_note
 *		Make the least or greatest key of a count the preview's oldest or
 *		newest when it expires before or after those it has, with the
 *		instant it expires.  The key is copied into the preview's memory
 *		(the caller shows it as text in its own settings).
 */
static void
ttl_statement_preview_note(TtlPolicy *policy, TtlTarget *t, TtlPreview *pv,
						   Datum key, bool newest)
{
	TimestampTz expiry = ttl_key_expiry(policy, t->keytype,
										ttl_policy_zone(policy), key);
	MemoryContext old;

	if (pv->have_keys &&
		(newest ? expiry < pv->newest_expiry : expiry >= pv->oldest_expiry))
		return;
	old = MemoryContextSwitchTo(pv->cxt);
	pv->keytype = t->keytype;
	if (newest)
	{
		pv->newest = datumCopy(key, t->keybyval, t->keylen);
		pv->newest_expiry = expiry;
	}
	else
	{
		pv->oldest = datumCopy(key, t->keybyval, t->keylen);
		pv->oldest_expiry = expiry;
	}
	MemoryContextSwitchTo(old);
}

/*
 * ttl_statement_preview
 *		A preview's act (batch.c): instead of the statement, the count of
 *		the rows at tids that the statement would act on, by its own WHERE
 *		clause (ttl_statement_where: still expired, passing the filter, the
 *		leaf's constraint on a parent, no foreign key still referencing
 *		them), planned as the statement is, in the parse environment, as
 *		the current user (the owner), read-only:
 *
 *	SELECT count(*), count(*) FILTER (WHERE ctid = ANY ($6)), min(key),
 *	  max(key) FROM <the statement's relation> WHERE <its WHERE>
 *
 * $6 is the rows taken for the cap.  Adds to *pv; returns the count.  A
 * SELECT runs no DELETE or UPDATE trigger or rule, and row-level security
 * (which applies to the owner only when forced) gives its SELECT policies.
 */
int64
ttl_statement_preview(TtlPolicy *policy, TtlTarget *t, Relation rel,
					  Relation parent, bool via_parent, ItemPointerData *tids,
					  bool *capped, int ntids, const TtlCutoff *cutoff,
					  TtlPreview *pv)
{
	Oid			types[TTL_PREVIEW_NPARAMS];
	List	   *funcs = NIL;
	char	   *from;
	char	   *where = ttl_statement_where(policy, t, rel, parent, via_parent,
											true, &funcs, &from);
	char	   *sql = psprintf("SELECT pg_catalog.count(*),"
							   " pg_catalog.count(*) FILTER (WHERE ctid OPERATOR(pg_catalog.=) ANY ($6)),"
							   " pg_catalog.min(%s), pg_catalog.max(%s) FROM %s WHERE %s",
							   t->key_sql, t->key_sql, from, where);
	ParamListInfo params = ttl_statement_params(policy, t, tids, ntids, cutoff,
												TTL_PREVIEW_NPARAMS);
	ItemPointerData *capped_tids = palloc(sizeof(ItemPointerData) * Max(ntids, 1));
	int			ncapped = 0;
	List	   *stmts;
	QueryDesc  *qd;
	Tuplestorestate *store = tuplestore_begin_heap(false, false, work_mem);
	DestReceiver *dest = CreateDestReceiver(DestTuplestore);
	TupleTableSlot *slot;
	int64		rows = 0;

	ttl_statement_param_types(policy, t, types);
	types[TTL_STATEMENT_NPARAMS] = TIDARRAYOID;
	for (int i = 0; i < ntids; i++)
		if (capped[i])
			capped_tids[ncapped++] = tids[i];
	params->params[TTL_STATEMENT_NPARAMS].value = ttl_statement_tids(capped_tids, ncapped);
	params->params[TTL_STATEMENT_NPARAMS].isnull = false;
	params->params[TTL_STATEMENT_NPARAMS].pflags = PARAM_FLAG_CONST;
	params->params[TTL_STATEMENT_NPARAMS].ptype = TIDARRAYOID;

	stmts = ttl_statement_plan_pinned(ttl_statement_analyze(policy, sql, types,
															TTL_PREVIEW_NPARAMS,
															t->relname, funcs),
									  sql);
	if (list_length(stmts) != 1)
		elog(ERROR, "unexpected preview statement: %s", sql);
	SetTuplestoreDestReceiverParams(dest, store, CurrentMemoryContext, false,
									NULL, NULL);
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	qd = CreateQueryDesc(linitial_node(PlannedStmt, stmts), sql, GetActiveSnapshot(),
						 InvalidSnapshot, dest, params, NULL, 0);
	/* sees what the statement would: hide_expired's rows under FORCE too */
	statement_executor_run(qd, RelationGetRelid(via_parent ? parent : rel));
	slot = MakeSingleTupleTableSlot(qd->tupDesc, &TTSOpsMinimalTuple);
	if (tuplestore_gettupleslot(store, true, false, slot))
	{
		bool		isnull;

		slot_getallattrs(slot);
		rows = DatumGetInt64(slot_getattr(slot, 1, &isnull));
		pv->rows += rows;
		pv->capped += DatumGetInt64(slot_getattr(slot, 2, &isnull));
		pv->kept += ntids - rows;
		if (rows > 0)
		{
			Datum		least = slot_getattr(slot, 3, &isnull);

			if (!isnull)
			{
				Datum		greatest = slot_getattr(slot, 4, &isnull);

				ttl_statement_preview_note(policy, t, pv, least, false);
				ttl_statement_preview_note(policy, t, pv, greatest, true);
				pv->have_keys = true;
			}
		}
	}
	ExecDropSingleTupleTableSlot(slot);
	ExecutorEnd(qd);
	FreeQueryDesc(qd);
	PopActiveSnapshot();
	dest->rDestroy(dest);
	tuplestore_end(store);
	return rows;
}
