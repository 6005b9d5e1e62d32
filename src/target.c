/*-------------------------------------------------------------------------
 *
 * target.c
 *	  What a policy means for one table: which value it range-scans (the
 *	  key), which rows it may touch (the filter), the btree index that
 *	  serves both, and the SQL statement of its action.
 *
 * The same resolution serves ttl_create_index() (to check a new policy and
 * to find or create its index), the purge (once per batch, so that it
 * follows renames and partitions), and the ALTER TABLE check.
 *
 * Filters.  A filter is a boolean SQL expression over the table's columns.
 * It is parsed and checked against the table (no subqueries, aggregates,
 * window functions or volatile functions), then stored as the text
 * PostgreSQL deparses from it with only pg_catalog on the search_path: every
 * name outside pg_catalog comes out schema-qualified, no comment or
 * trailing text of the caller's survives, and the stored text means the
 * same thing whoever's search_path later reads it.  The purge re-parses it
 * against the table it purges (with the same pinned search_path), checks
 * it again, and evaluates it on each row its scan finds; the executor path
 * also repeats it in its statement so that a concurrently updated row is
 * re-checked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_relation.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

#include "ttl_index.h"

/* "SELECT ", which ttl_filter_raw puts before the filter to parse it */
#define TTL_FILTER_PREFIX_LEN	7

/*
 * ttl_filter_error_callback
 *		Point a parse error at the filter's own text, not at the statement
 *		that passed it (as SQL function bodies do).
 */
static void
ttl_filter_error_callback(void *arg)
{
	const char *filter = (const char *) arg;
	int			pos = geterrposition();

	if (pos > TTL_FILTER_PREFIX_LEN)
	{
		errposition(0);
		internalerrposition(pos - TTL_FILTER_PREFIX_LEN);
		internalerrquery(filter);
	}
	errcontext("TTL policy filter \"%s\"", filter);
}

/*
 * ttl_filter_raw
 *		Parse a filter's text as one SQL expression, and nothing more: it is
 *		parsed as "SELECT <filter>", and anything but a single unnamed
 *		target (a FROM clause, a second statement, ...) is refused.
 */
static Node *
ttl_filter_raw(const char *filter)
{
	List	   *stmts;
	RawStmt    *raw;
	SelectStmt *sel;
	ResTarget  *rt;
	ErrorContextCallback errcallback;

	errcallback.callback = ttl_filter_error_callback;
	errcallback.arg = (void *) filter;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	stmts = raw_parser(psprintf("SELECT %s", filter), RAW_PARSE_DEFAULT);
	error_context_stack = errcallback.previous;
	if (list_length(stmts) != 1)
		goto bad;
	raw = linitial_node(RawStmt, stmts);
	if (!IsA(raw->stmt, SelectStmt))
		goto bad;
	sel = (SelectStmt *) raw->stmt;
	if (sel->op != SETOP_NONE || sel->distinctClause || sel->intoClause ||
		sel->fromClause || sel->whereClause || sel->groupClause ||
		sel->havingClause || sel->windowClause || sel->valuesLists ||
		sel->sortClause || sel->limitOffset || sel->limitCount ||
		sel->lockingClause || sel->withClause ||
		list_length(sel->targetList) != 1)
		goto bad;
	rt = linitial_node(ResTarget, sel->targetList);
	if (rt->name != NULL || rt->indirection != NIL)
		goto bad;
	return rt->val;

bad:
	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 errmsg("filter must be a single boolean expression over the table's columns"),
			 errdetail("Filter: %s", filter)));
	return NULL;				/* keep compiler quiet */
}

/*
 * ttl_filter_parse
 *		Parse and check a filter against rel.  Returns the transformed
 *		boolean expression, its Vars numbered 1.  The caller holds a lock on
 *		rel.
 */
Node *
ttl_filter_parse(Relation rel, const char *filter)
{
	ParseState *pstate;
	ParseNamespaceItem *nsitem;
	Node	   *expr;

	if (filter[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("filter must not be empty"),
				 errhint("Pass NULL for no filter.")));

	pstate = make_parsestate(NULL);
	nsitem = addRangeTableEntryForRelation(pstate, rel, AccessShareLock,
										   NULL, false, false);
	addNSItemToQuery(pstate, nsitem, false, true, true);

	expr = transformExpr(pstate, ttl_filter_raw(filter), EXPR_KIND_WHERE);
	expr = coerce_to_boolean(pstate, expr, "filter");
	assign_expr_collations(pstate, expr);

	if (pstate->p_hasSubLinks)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("filter must not contain subqueries")));
	if (pstate->p_hasAggs || pstate->p_hasWindowFuncs || pstate->p_hasTargetSRFs)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("filter must not contain aggregates, window functions or set-returning functions")));
	if (contain_volatile_functions(expr))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("filter must not use volatile functions"),
				 errdetail("A row's filter result must not change between the scan that finds it and the statement that deletes it.")));

	free_parsestate(pstate);
	return expr;
}

/*
 * ttl_filter_deparse
 *		The text a filter is stored as (see the top of the file).
 */
char *
ttl_filter_deparse(Relation rel, Node *expr)
{
	int			nestlevel = NewGUCNestLevel();
	char	   *result;

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	result = deparse_expression(expr,
								deparse_context_for(RelationGetRelationName(rel),
													RelationGetRelid(rel)),
								false, false);
	AtEOXact_GUC(true, nestlevel);
	return result;
}

/*
 * ttl_target_column
 *		A policy column by name in rel, or 0 when there is none.
 */
static AttrNumber
ttl_target_column(Relation rel, const char *name)
{
	for (int i = 0; i < RelationGetNumberOfAttributes(rel); i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	return 0;
}

static Oid
ttl_target_atttype(Relation rel, AttrNumber attnum)
{
	return TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid;
}

/*
 * ttl_expires_at_sql
 *		Qualified name of ttl_expires_at in the extension's schema.
 */
char *
ttl_expires_at_sql(void)
{
	return psprintf("%s.ttl_expires_at",
					quote_identifier(get_namespace_name(ttl_catalog_namespace(false))));
}

/* raise an error, or return TTL_TARGET_BAD when the caller asked not to */
#define TTL_TARGET_FAIL(elevel, ...) \
	do { \
		if (noerror) \
			return TTL_TARGET_BAD; \
		ereport(elevel, __VA_ARGS__); \
	} while (0)

/*
 * ttl_target_resolve
 *		Apply a policy to rel: find its columns, check their types, build
 *		the key and the filter.  Raises an error when a column has a type
 *		the policy cannot use (or, with noerror, returns TTL_TARGET_BAD) or
 *		the filter no longer parses; returns TTL_TARGET_GONE when a column
 *		is missing.
 */
TtlTargetStatus
ttl_target_resolve(TtlPolicy *policy, Relation rel, TtlTarget *t, bool noerror)
{
	const char *relname = RelationGetRelationName(rel);
	Oid			typid;
	List	   *quals = NIL;
	List	   *sqls = NIL;

	memset(t, 0, sizeof(TtlTarget));
	t->rel = rel;

	/* the TTL column: by number in the policy's table, by name elsewhere */
	if (RelationGetRelid(rel) == policy->relid)
	{
		if (policy->attnum <= 0 || policy->attnum > RelationGetNumberOfAttributes(rel) ||
			TupleDescAttr(RelationGetDescr(rel), policy->attnum - 1)->attisdropped)
			return TTL_TARGET_GONE;
		t->attnum = policy->attnum;
	}
	else if ((t->attnum = ttl_target_column(rel, policy->column_name)) == 0)
		return TTL_TARGET_GONE;
	typid = ttl_target_atttype(rel, t->attnum);

	if (policy->ttl_column != NULL)
	{
		Oid			ttltype;

		if ((t->ttl_attnum = ttl_target_column(rel, policy->ttl_column)) == 0)
			return TTL_TARGET_GONE;
		if (typid != TIMESTAMPTZOID && typid != TIMESTAMPOID)
			TTL_TARGET_FAIL(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of relation \"%s\" is of type %s",
							policy->column_name, relname, format_type_be(typid)),
					 errdetail("With ttl_column, the TTL column must be of type timestamp with time zone or timestamp without time zone.")));
		ttltype = ttl_target_atttype(rel, t->ttl_attnum);
		if (ttltype != INT2OID && ttltype != INT4OID && ttltype != INT8OID &&
			ttltype != INTERVALOID)
			TTL_TARGET_FAIL(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("ttl_column \"%s\" of relation \"%s\" is of type %s",
							policy->ttl_column, relname, format_type_be(ttltype)),
					 errdetail("A per-row TTL column must hold seconds (smallint, integer, bigint) or an interval.")));
	}
	else if (!ttl_key_type_ok(typid, policy->unit_ns))
	{
		bool		numeric = typid == INT4OID || typid == INT8OID ||
			typid == NUMERICOID || typid == FLOAT8OID;

		TTL_TARGET_FAIL(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of relation \"%s\" is of type %s",
						policy->column_name, relname, format_type_be(typid)),
				 numeric && policy->unit_ns == 0 ?
				 errdetail("A numeric TTL column holds time since the Unix epoch and needs unit => 's', 'ms', 'us' or 'ns'.") :
				 typid == INT4OID ?
				 errdetail("An integer column can hold only seconds since the Unix epoch (unit => 's'); use bigint for finer units.") :
				 policy->unit_ns != 0 ?
				 errdetail("With unit, the TTL column must be of type integer, bigint, numeric or double precision.") :
				 errdetail("A TTL column must be of type timestamp with time zone, timestamp without time zone or date, or a number of seconds, milliseconds, microseconds or nanoseconds since the Unix epoch (with unit).")));
	}
	t->keytype = typid;

	if (policy->soft_column != NULL)
	{
		Oid			softtype;
		NullTest   *nt;
		Form_pg_attribute att;

		if ((t->soft_attnum = ttl_target_column(rel, policy->soft_column)) == 0)
			return TTL_TARGET_GONE;
		att = TupleDescAttr(RelationGetDescr(rel), t->soft_attnum - 1);
		softtype = att->atttypid;
		if (softtype != TIMESTAMPTZOID && softtype != TIMESTAMPOID && softtype != DATEOID)
			TTL_TARGET_FAIL(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("soft_delete_column \"%s\" of relation \"%s\" is of type %s",
							policy->soft_column, relname, format_type_be(softtype)),
					 errdetail("A soft-delete column must be of type timestamp with time zone, timestamp without time zone or date.")));
		if (t->soft_attnum == t->attnum || t->soft_attnum == t->ttl_attnum)
			TTL_TARGET_FAIL(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("soft_delete_column must not be a column the expiry is computed from")));
		nt = makeNode(NullTest);
		nt->arg = (Expr *) makeVar(1, t->soft_attnum, softtype, att->atttypmod,
								   att->attcollation, 0);
		nt->nulltesttype = IS_NULL;
		nt->argisrow = false;
		nt->location = -1;
		quals = lappend(quals, nt);
		sqls = lappend(sqls, psprintf("%s IS NULL", quote_identifier(policy->soft_column)));
	}

	if (policy->filter != NULL)
	{
		quals = lappend(quals, ttl_filter_parse(rel, policy->filter));
		sqls = lappend(sqls, psprintf("(%s)", policy->filter));
	}
	if (quals != NIL)
	{
		StringInfoData buf;
		ListCell   *lc;

		t->filter = make_ands_explicit(quals);
		initStringInfo(&buf);
		foreach(lc, sqls)
		{
			if (buf.len > 0)
				appendStringInfoString(&buf, " AND ");
			appendStringInfoString(&buf, (char *) lfirst(lc));
		}
		t->filter_sql = buf.data;
	}

	if (t->ttl_attnum != 0)
		t->key_sql = psprintf("%s(%s, %s)", ttl_expires_at_sql(),
							  quote_identifier(NameStr(TupleDescAttr(RelationGetDescr(rel), t->attnum - 1)->attname)),
							  quote_identifier(policy->ttl_column));
	else
		t->key_sql = pstrdup(quote_identifier(NameStr(TupleDescAttr(RelationGetDescr(rel), t->attnum - 1)->attname)));
	return TTL_TARGET_OK;
}

/*
 * ttl_index_key_matches
 *		Whether an index's first key is the target's key: the TTL column, or
 *		ttl_expires_at(TTL column, TTL column of the row) for a per-row TTL.
 */
static bool
ttl_index_key_matches(TtlTarget *t, HeapTuple indextup)
{
	Form_pg_index idx = (Form_pg_index) GETSTRUCT(indextup);
	Datum		datum;
	bool		isnull;
	List	   *exprs;
	FuncExpr   *fn;
	Node	   *arg0;
	Node	   *arg1;
	char	   *fname;

	if (t->ttl_attnum == 0)
		return idx->indkey.values[0] == t->attnum;
	if (idx->indkey.values[0] != 0)
		return false;

	datum = SysCacheGetAttr(INDEXRELID, indextup, Anum_pg_index_indexprs, &isnull);
	if (isnull)
		return false;
	exprs = (List *) stringToNode(TextDatumGetCString(datum));
	if (!IsA(linitial(exprs), FuncExpr))
		return false;
	fn = linitial_node(FuncExpr, exprs);
	if (list_length(fn->args) != 2)
		return false;
	fname = get_func_name(fn->funcid);
	if (fname == NULL || strcmp(fname, "ttl_expires_at") != 0 ||
		get_func_namespace(fn->funcid) != ttl_catalog_namespace(true))
		return false;
	arg0 = linitial(fn->args);
	arg1 = strip_implicit_coercions(lsecond(fn->args));
	return IsA(arg0, Var) && ((Var *) arg0)->varattno == t->attnum &&
		IsA(arg1, Var) && ((Var *) arg1)->varattno == t->ttl_attnum;
}

/*
 * ttl_index_is_btree
 *		Whether an index uses the btree access method.
 */
static bool
ttl_index_is_btree(Oid indexoid)
{
	HeapTuple	tup;
	bool		result;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(indexoid));
	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_class) GETSTRUCT(tup))->relam == BTREE_AM_OID;
	ReleaseSysCache(tup);
	return result;
}

/*
 * ttl_qual_list
 *		An expression in the implicit-AND list form predicate proofs use.
 */
static List *
ttl_qual_list(Node *expr)
{
	expr = eval_const_expressions(NULL, expr);
	expr = (Node *) canonicalize_qual((Expr *) expr, false);
	return make_ands_implicit((Expr *) expr);
}

/*
 * ttl_find_index
 *		A btree index the purge can range-scan for the target: valid, ready,
 *		the key as its ascending first column with the key type's default
 *		operator class, and either no predicate or one the target's filter
 *		implies (a partial index holding every row the filter admits).
 *		Partial indexes are preferred, then fewer columns: the smallest to
 *		scan.  Returns InvalidOid when there is none.
 *
 * The caller holds a lock on the target's table.
 */
Oid
ttl_find_index(TtlTarget *t)
{
	List	   *indexes = RelationGetIndexList(t->rel);
	Oid			defopclass = GetDefaultOpClass(t->keytype, BTREE_AM_OID);
	List	   *filter_quals = NIL;
	Oid			best = InvalidOid;
	int			best_score = INT_MAX;
	ListCell   *lc;

	if (t->filter != NULL)
		filter_quals = ttl_qual_list((Node *) copyObject(t->filter));

	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);
		HeapTuple	tup;
		Form_pg_index idx;
		Datum		datum;
		bool		isnull;
		bool		usable;
		int			score;

		tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
		if (!HeapTupleIsValid(tup))
			continue;
		idx = (Form_pg_index) GETSTRUCT(tup);

		usable = idx->indisvalid && idx->indisready && idx->indislive &&
			idx->indnkeyatts >= 1 && ttl_index_is_btree(indexoid) &&
			ttl_index_key_matches(t, tup);
		if (usable)
		{
			datum = SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indclass, &isnull);
			usable = !isnull && ((oidvector *) DatumGetPointer(datum))->values[0] == defopclass;
		}
		if (usable)
		{
			datum = SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indoption, &isnull);
			usable = !isnull &&
				(((int2vector *) DatumGetPointer(datum))->values[0] & INDOPTION_DESC) == 0;
		}
		score = idx->indnatts + 1000;
		if (usable)
		{
			datum = SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indpred, &isnull);
			if (!isnull)
			{
				List	   *pred = ttl_qual_list(stringToNode(TextDatumGetCString(datum)));

				usable = filter_quals != NIL &&
					predicate_implied_by(pred, filter_quals, false);
				score = idx->indnatts;
			}
		}
		if (usable && score < best_score)
		{
			best = indexoid;
			best_score = score;
		}
		ReleaseSysCache(tup);
	}
	list_free(indexes);
	return best;
}

/*
 * ttl_target_expiry_sql
 *		SQL for the instant the key expires, without expire_after, as a
 *		timestamp (soft delete stores key's instant + expire_after).
 */
static char *
ttl_target_expiry_sql(TtlPolicy *policy, TtlTarget *t)
{
	const char *per_second;

	if (policy->unit_ns == 0)
		return t->key_sql;
	per_second = policy->unit_ns == INT64CONST(1000000000) ? "1" :
		policy->unit_ns == INT64CONST(1000000) ? "1000" :
		policy->unit_ns == INT64CONST(1000) ? "1000000" : "1000000000";
	return psprintf("pg_catalog.to_timestamp(%s::pg_catalog.float8 OPERATOR(pg_catalog./) %s)",
					t->key_sql, per_second);
}

/*
 * ttl_target_action_sql
 *		The executor path's statement for one batch: act on the rows at the
 *		TIDs in $1 (tid[]) that are still expired (key < $2, the cutoff)
 *		and still pass the filter.  $3 is expire_after as an interval.
 *		Needs a transaction; the names are qualified.
 */
char *
ttl_target_action_sql(TtlPolicy *policy, TtlTarget *t)
{
	char	   *relname = ttl_qualified_relname(RelationGetRelid(t->rel));
	char	   *where;

	where = psprintf("ctid OPERATOR(pg_catalog.=) ANY ($1) AND %s OPERATOR(pg_catalog.<) $2%s%s",
					 t->key_sql,
					 t->filter_sql ? " AND " : "",
					 t->filter_sql ? t->filter_sql : "");

	switch (policy->action)
	{
		case TTL_ACTION_DELETE:
			return psprintf("DELETE FROM ONLY %s WHERE %s", relname, where);
		case TTL_ACTION_SOFT_DELETE:
			return psprintf("UPDATE ONLY %s SET %s = %s OPERATOR(pg_catalog.+) $3 WHERE %s",
							relname, quote_identifier(policy->soft_column),
							ttl_target_expiry_sql(policy, t), where);
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
				for (int i = 0; i < RelationGetNumberOfAttributes(t->rel); i++)
				{
					Form_pg_attribute att = TupleDescAttr(RelationGetDescr(t->rel), i);

					if (att->attisdropped)
						continue;
					if (cols.len > 0)
						appendStringInfoString(&cols, ", ");
					appendStringInfoString(&cols, quote_identifier(NameStr(att->attname)));
				}
				return psprintf("WITH expired AS (DELETE FROM ONLY %s WHERE %s RETURNING %s)"
								" INSERT INTO %s (%s) SELECT %s FROM expired",
								relname, where, cols.data, archive, cols.data, cols.data);
			}
	}
	return NULL;				/* keep compiler quiet */
}
