/*-------------------------------------------------------------------------
 *
 * targets.c
 *	  A policy resolved to the physical tables it purges, and what each one
 *	  needs for a batch: the key it range-scans, the filter, the btree index
 *	  that serves both.
 *
 * Targets.  A policy on an ordinary table has one target, the table.  On a
 * partitioned table, one per leaf partition; on a table with inheritance
 * children, the parent's own rows and one per child, as DELETE FROM parent
 * covers them.  The list is made at the start of each pass
 * (ttl_targets_list), so partitions and children added since are included.
 * The purge engine works on exactly one target at a time and knows nothing
 * of partitions.
 *
 * Resolution (ttl_target_resolve).  Columns are matched by name, because a
 * partition's or child's column numbers may differ from its parent's (by
 * number in the policy's own table, which follows renames).  The filter is
 * parsed against the target (filter.c); the index is chosen; the statement
 * of the executor path is planned on first use (statement.c).  All of it
 * is kept across batches and transactions, in the target's own memory
 * context, until an invalidation says it may be stale: a relcache
 * invalidation of a relation a resolution depends on (DDL on the table, a
 * new or dropped index, ANALYZE, the archive table, a table its plan reads),
 * and any change to a function or a type (a filter function replaced, a
 * domain altered) bumps a process-wide generation, and a target resolved
 * under an older one is resolved again at its next batch.  Invalidations are
 * delivered when a lock is taken, so the check after the batch's table
 * lock sees every committed change.
 *
 * Choosing the index never evaluates anything: a partial index is usable
 * when the policy's filter implies its predicate, tested on the two
 * expressions as stored (predicate_implied_by), without constant-folding,
 * which would run the table owner's IMMUTABLE functions as whoever chooses
 * the index.
 *
 * Locking: the caller holds a lock on the target's table; indexes are only
 * looked at in the catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/prs2lock.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "ttl_index.h"
#include "policy/policy.h"
#include "citus/citus.h"
#include "env/env.h"

static uint64 Generation = 1;
static bool CallbacksRegistered = false;
/* the relations resolutions depend on: their invalidations count */
static HTAB *Watched = NULL;

static void
ttl_targets_relcache_callback(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || Watched == NULL ||
		hash_search(Watched, &relid, HASH_FIND, NULL) != NULL)
		Generation++;
}

/*
 * ttl_targets_watch
 *		A resolution depends on this relation: its invalidations make every
 *		resolution stale.  (Other relations' do not: DDL elsewhere in the
 *		database leaves the targets, and their known-dead prefixes, alone.)
 */
void
ttl_targets_watch(Oid relid)
{
	if (Watched == NULL)
	{
		HASHCTL		info;

		memset(&info, 0, sizeof(info));
		info.keysize = sizeof(Oid);
		info.entrysize = sizeof(Oid);
		Watched = hash_create("ttl_index watched relations", 64, &info,
							  HASH_ELEM | HASH_BLOBS);
	}
	(void) hash_search(Watched, &relid, HASH_ENTER, NULL);
}

static void
ttl_targets_syscache_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	Generation++;
}

/*
 * ttl_targets_init
 *		Listen for the invalidations that make a resolution stale (once per
 *		process).
 */
void
ttl_targets_init(void)
{
	if (CallbacksRegistered)
		return;
	CacheRegisterRelcacheCallback(ttl_targets_relcache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, ttl_targets_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(TYPEOID, ttl_targets_syscache_callback, (Datum) 0);
	CallbacksRegistered = true;
}

/*
 * ttl_targets_generation
 *		The current generation: a resolution made under an older one must be
 *		made again.
 */
uint64
ttl_targets_generation(void)
{
	return Generation;
}

/*
 * ttl_target_create
 *		An unresolved target for a table, its memory under cxt.
 */
TtlTarget *
ttl_target_create(Oid relid, bool only, MemoryContext cxt)
{
	TtlTarget  *t = MemoryContextAllocZero(cxt, sizeof(TtlTarget));

	t->relid = relid;
	t->only = only;
	t->cxt = AllocSetContextCreate(cxt, "ttl_index target", ALLOCSET_SMALL_SIZES);
	t->skipcxt = AllocSetContextCreate(cxt, "ttl_index known-dead prefix",
									   ALLOCSET_SMALL_SIZES);
	t->skip.pos = -1;
	return t;
}

/*
 * ttl_targets_add
 *		Append the targets of one table to list: the table itself, or its
 *		leaf partitions, or its own rows and its children's.
 */
static List *
ttl_targets_add(List *list, Oid relid, MemoryContext cxt)
{
	char		relkind = get_rel_relkind(relid);
	List	   *all;
	ListCell   *lc;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		return list;
	if (relkind == RELKIND_RELATION && !has_subclass(relid))
		return lappend(list, ttl_target_create(relid, false, cxt));

	all = find_all_inheritors(relid, NoLock, NULL);
	list_sort(all, list_oid_cmp);
	if (relkind == RELKIND_RELATION)
		list = lappend(list, ttl_target_create(relid, true, cxt));
	foreach(lc, all)
	{
		Oid			child = lfirst_oid(lc);

		if (child != relid && get_rel_relkind(child) == RELKIND_RELATION)
			list = lappend(list, ttl_target_create(child, false, cxt));
	}
	list_free(all);
	return list;
}

/*
 * ttl_targets_list
 *		The targets of a policy now (see the top of the file), in OID order
 *		after the policy's own table, allocated in cxt.  NIL when the table
 *		is gone.  On a Citus distributed table, the targets of each shard
 *		placement this node holds, in shard order (citus.c).  Takes no
 *		lock: it reads pg_inherits and Citus's catalogs only.
 */
List *
ttl_targets_list(TtlPolicy *policy, MemoryContext cxt)
{
	List	   *result = NIL;
	MemoryContext old;

	ttl_targets_init();
	if (ttl_citus_kind(policy->relid) == TTL_CITUS_DISTRIBUTED)
	{
		List	   *shards = ttl_citus_shards(policy->relid);
		ListCell   *lc;

		old = MemoryContextSwitchTo(cxt);
		foreach(lc, shards)
		{
			int			before = list_length(result);

			result = ttl_targets_add(result, lfirst_oid(lc), cxt);
			for (int i = before; i < list_length(result); i++)
				((TtlTarget *) list_nth(result, i))->shard = true;
		}
		MemoryContextSwitchTo(old);
		return result;
	}

	old = MemoryContextSwitchTo(cxt);
	result = ttl_targets_add(NIL, policy->relid, cxt);
	MemoryContextSwitchTo(old);
	return result;
}

/*
 * ttl_targets_may_be_none
 *		Whether a policy whose table exists may have no targets: a
 *		partitioned table without partitions, a distributed table with no
 *		shard on this node.
 */
bool
ttl_targets_may_be_none(TtlPolicy *policy)
{
	return get_rel_relkind(policy->relid) == RELKIND_PARTITIONED_TABLE ||
		ttl_citus_kind(policy->relid) == TTL_CITUS_DISTRIBUTED;
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

/* a column's type, a domain's base type */
static Oid
ttl_target_atttype(Relation rel, AttrNumber attnum)
{
	return getBaseType(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid);
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

/* raise an error, or return false when the caller asked not to */
#define TTL_TYPE_FAIL(...) \
	do { \
		if (noerror) \
			return false; \
		ereport(ERROR, __VA_ARGS__); \
	} while (0)

/*
 * ttl_target_columns
 *		Find the policy's columns in rel and check their types.  Returns
 *		false when a column is missing, or (noerror) has a type the policy
 *		cannot use; raises the error otherwise.
 */
static bool
ttl_target_columns(TtlPolicy *policy, Relation rel, TtlTarget *t, bool noerror)
{
	const char *relname = RelationGetRelationName(rel);
	Oid			typid;

	/* the TTL column: by number in the policy's table, by name elsewhere */
	if (RelationGetRelid(rel) == policy->relid)
	{
		if (policy->attnum <= 0 || policy->attnum > RelationGetNumberOfAttributes(rel) ||
			TupleDescAttr(RelationGetDescr(rel), policy->attnum - 1)->attisdropped)
			return false;
		t->attnum = policy->attnum;
	}
	else if ((t->attnum = ttl_target_column(rel, policy->column_name)) == 0)
		return false;
	typid = ttl_target_atttype(rel, t->attnum);

	t->ttl_attnum = 0;
	if (policy->ttl_column != NULL)
	{
		Oid			ttltype;

		if ((t->ttl_attnum = ttl_target_column(rel, policy->ttl_column)) == 0)
			return false;
		if (typid != TIMESTAMPTZOID && typid != TIMESTAMPOID)
			TTL_TYPE_FAIL((errcode(ERRCODE_DATATYPE_MISMATCH),
						   errmsg("column \"%s\" of relation \"%s\" is of type %s",
								  policy->column_name, relname, format_type_be(typid)),
						   errdetail("With ttl_column, the TTL column must be of type timestamp with time zone or timestamp without time zone.")));
		ttltype = ttl_target_atttype(rel, t->ttl_attnum);
		if (ttltype != INT2OID && ttltype != INT4OID && ttltype != INT8OID &&
			ttltype != INTERVALOID)
			TTL_TYPE_FAIL((errcode(ERRCODE_DATATYPE_MISMATCH),
						   errmsg("ttl_column \"%s\" of relation \"%s\" is of type %s",
								  policy->ttl_column, relname, format_type_be(ttltype)),
						   errdetail("A per-row TTL column must hold seconds (smallint, integer, bigint) or an interval.")));
	}
	else if (!ttl_key_type_ok(typid, policy->unit_ns))
	{
		bool		numeric = typid == INT4OID || typid == INT8OID ||
			typid == NUMERICOID || typid == FLOAT8OID;

		TTL_TYPE_FAIL((errcode(ERRCODE_DATATYPE_MISMATCH),
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

	t->soft_attnum = 0;
	if (policy->soft_column != NULL)
	{
		Oid			softtype;

		if ((t->soft_attnum = ttl_target_column(rel, policy->soft_column)) == 0)
			return false;
		softtype = ttl_target_atttype(rel, t->soft_attnum);
		if (softtype != TIMESTAMPTZOID && softtype != TIMESTAMPOID && softtype != DATEOID)
			TTL_TYPE_FAIL((errcode(ERRCODE_DATATYPE_MISMATCH),
						   errmsg("soft_delete_column \"%s\" of relation \"%s\" is of type %s",
								  policy->soft_column, relname, format_type_be(softtype)),
						   errdetail("A soft-delete column must be of type timestamp with time zone, timestamp without time zone or date.")));
		if (t->soft_attnum == t->attnum || t->soft_attnum == t->ttl_attnum)
			TTL_TYPE_FAIL((errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						   errmsg("soft_delete_column must not be a column the expiry is computed from")));
	}
	return true;
}

/*
 * ttl_target_check_types
 *		Raise the error of a policy column whose type the policy cannot use
 *		(for ttl_create_index and the ALTER TABLE check).  A missing column
 *		is not an error here.
 */
void
ttl_target_check_types(TtlPolicy *policy, Relation rel)
{
	TtlTarget	t;

	memset(&t, 0, sizeof(t));
	(void) ttl_target_columns(policy, rel, &t, false);
}

/*
 * ttl_target_filter
 *		The target's filter (the policy's filter, and "not yet soft-deleted"
 *		or "not yet anonymized") as an expression and as SQL, in the current
 *		memory context.  A set column that is gone, or whose value no longer
 *		fits it, raises the error (set.c).
 */
static void
ttl_target_filter(TtlPolicy *policy, Relation rel, TtlTarget *t)
{
	List	   *quals = NIL;
	List	   *sqls = NIL;
	StringInfoData buf;
	ListCell   *lc;

	t->filter = NULL;
	t->filter_sql = NULL;
	if (t->soft_attnum != 0)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), t->soft_attnum - 1);
		NullTest   *nt = makeNode(NullTest);

		nt->arg = (Expr *) makeVar(1, t->soft_attnum, att->atttypid, att->atttypmod,
								   att->attcollation, 0);
		nt->nulltesttype = IS_NULL;
		nt->argisrow = false;
		nt->location = -1;
		quals = lappend(quals, nt);
		sqls = lappend(sqls, psprintf("%s IS NULL", quote_identifier(NameStr(att->attname))));
	}
	t->set_columns = NIL;
	t->set_pending_sql = NULL;
	t->set_funcs = NIL;
	if (policy->action == TTL_ACTION_ANONYMIZE)
	{
		/*
		 * Not yet anonymized: a set column still differs from its value
		 * (set.c).  Immutable, so the policy's index is partial on it and
		 * rows the policy has reset are never read again.  The condition
		 * names the columns' equality operators itself: the statement may
		 * call their functions.
		 */
		Node	   *pending;

		t->set_columns = ttl_set_read(rel, policy, t->attnum, t->ttl_attnum);
		t->set_pending_sql = ttl_set_pending_sql(rel, t->set_columns);
		pending = ttl_filter_parse(rel, t->set_pending_sql, true);
		t->set_funcs = ttl_filter_functions(pending);
		quals = lappend(quals, pending);
		sqls = lappend(sqls, t->set_pending_sql);
	}
	if (policy->filter != NULL)
	{
		Node	   *expr = ttl_filter_parse(rel, policy->filter, true);

		/* the functions it was made with, and no others (filter.c) */
		ttl_filter_check_functions(expr, policy, NIL);
		quals = lappend(quals, expr);
		sqls = lappend(sqls, psprintf("(%s)", policy->filter));
	}
	if (quals == NIL)
		return;

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

/*
 * ttl_target_resolve
 *		Resolve a target for a batch or a look (see the top of the file):
 *		rel is the target's table, open and locked.  Returns
 *		TTL_RESOLVE_GONE when a policy column is gone (or has a type the
 *		policy cannot use: the ALTER TABLE check refuses that, so only a
 *		hand-edited catalog gets there), TTL_RESOLVE_NO_INDEX when no btree
 *		index serves the policy.  Errors raised by parsing the filter or
 *		set_columns (they no longer parse) propagate.
 */
TtlResolve
ttl_target_resolve(TtlPolicy *policy, TtlTarget *t, Relation rel)
{
	MemoryContext old;
	Form_pg_attribute att;

	Assert(RelationGetRelid(rel) == t->relid);
	if (t->resolved_gen == Generation)
		return !t->usable ? TTL_RESOLVE_GONE :
			OidIsValid(t->indexoid) ? TTL_RESOLVE_OK : TTL_RESOLVE_NO_INDEX;

	MemoryContextReset(t->cxt);
	t->plan = NULL;
	t->usable = false;
	t->resolved_gen = 0;
	old = MemoryContextSwitchTo(t->cxt);

	t->relname = ttl_qualified_relname(t->relid);
	t->owner = ttl_table_owner(policy->relid);
	if (!ttl_target_columns(policy, rel, t, true))
	{
		MemoryContextSwitchTo(old);
		t->resolved_gen = Generation;
		return TTL_RESOLVE_GONE;
	}
	get_typlenbyval(t->keytype, &t->keylen, &t->keybyval);
	ttl_target_filter(policy, rel, t);

	att = TupleDescAttr(RelationGetDescr(rel), t->attnum - 1);
	if (t->ttl_attnum != 0)
	{
		/*
		 * Casts to the exact argument types: a ttl_expires_at() another role
		 * creates beside the extension's, taking the column's own types,
		 * cannot capture the call.
		 */
		t->key_sql = psprintf("%s(CAST(%s AS pg_catalog.%s), CAST(%s AS pg_catalog.%s))",
							  ttl_expires_at_sql(),
							  quote_identifier(NameStr(att->attname)),
							  t->keytype == TIMESTAMPOID ? "timestamp" : "timestamptz",
							  quote_identifier(policy->ttl_column),
							  ttl_target_atttype(rel, t->ttl_attnum) == INTERVALOID ?
							  "interval" : "int8");
	}
	else
		t->key_sql = pstrdup(quote_identifier(NameStr(att->attname)));

	t->indexoid = ttl_find_index(t, rel);
	MemoryContextSwitchTo(old);
	ttl_targets_watch(t->relid);
	if (OidIsValid(t->indexoid))
		ttl_targets_watch(t->indexoid);

	t->usable = true;
	t->resolved_gen = Generation;
	return OidIsValid(t->indexoid) ? TTL_RESOLVE_OK : TTL_RESOLVE_NO_INDEX;
}

/*
 * ttl_strip_casts
 *		An expression without the casts around it, explicit or implicit: an
 *		index made as ttl_expires_at(ts, ttl) on an integer ttl reads
 *		ttl_expires_at(ts, (ttl)::bigint) once dumped and restored, or
 *		rebuilt by ALTER COLUMN ... TYPE or by Citus on a shard.
 */
static Node *
ttl_strip_casts(Node *node)
{
	for (;;)
	{
		if (node == NULL)
			return NULL;
		if (IsA(node, RelabelType))
			node = (Node *) ((RelabelType *) node)->arg;
		else if (IsA(node, FuncExpr) &&
				 ((FuncExpr *) node)->funcformat != COERCE_EXPLICIT_CALL &&
				 list_length(((FuncExpr *) node)->args) == 1)
			node = linitial(((FuncExpr *) node)->args);
		else
			return node;
	}
}

/*
 * ttl_index_key_matches
 *		Whether an index's first key is the target's key: the TTL column, or,
 *		for a per-row TTL, the extension's own ttl_expires_at() taking the
 *		types the key is computed with (see ttl_target_resolve) over the TTL
 *		column and the row's TTL column, whatever casts the index's text
 *		shows around them.
 */
static bool
ttl_index_key_matches(TtlTarget *t, Relation rel, HeapTuple indextup)
{
	Form_pg_index idx = (Form_pg_index) GETSTRUCT(indextup);
	Datum		datum;
	bool		isnull;
	List	   *exprs;
	FuncExpr   *fn;
	Node	   *arg0;
	Node	   *arg1;
	Oid			ext;
	Oid			ttltype;

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
	ext = get_extension_oid(TTL_EXTENSION_NAME, true);
	if (!OidIsValid(ext) ||
		getExtensionOfObject(ProcedureRelationId, fn->funcid) != ext)
		return false;
	ttltype = ttl_target_atttype(rel, t->ttl_attnum) == INTERVALOID ?
		INTERVALOID : INT8OID;
	if (exprType(linitial(fn->args)) != t->keytype ||
		exprType(lsecond(fn->args)) != ttltype)
		return false;
	arg0 = ttl_strip_casts(linitial(fn->args));
	arg1 = ttl_strip_casts(lsecond(fn->args));
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
	FormData_pg_class form;

	return ttl_rel_class(indexoid, &form) && form.relam == BTREE_AM_OID;
}

/*
 * ttl_qual_list
 *		An expression in the implicit-AND list form predicate proofs use:
 *		flattened, but neither folded nor evaluated.
 */
static List *
ttl_qual_list(Node *expr)
{
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
 */
Oid
ttl_find_index(TtlTarget *t, Relation rel)
{
	List	   *indexes = RelationGetIndexList(rel);
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
			ttl_index_key_matches(t, rel, tup);
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
 * ttl_rel_has_delete_rules
 *		Whether a table has rules that rewrite what the policy's action does
 *		to it: ON DELETE (ON UPDATE for a soft delete or an anonymize), DO
 *		INSTEAD only when instead_only.
 */
bool
ttl_rel_has_delete_rules(Relation rel, TtlAction action, bool instead_only)
{
	RuleLock   *rules = rel->rd_rules;

	if (rules == NULL)
		return false;
	for (int i = 0; i < rules->numLocks; i++)
	{
		RewriteRule *rule = rules->rules[i];
		CmdType		cmd = TTL_ACTION_UPDATES(action) ? CMD_UPDATE : CMD_DELETE;

		if (rule->event == cmd && (!instead_only || rule->isInstead))
			return true;
	}
	return false;
}
