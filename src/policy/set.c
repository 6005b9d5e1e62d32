/*-------------------------------------------------------------------------
 *
 * set.c
 *	  Anonymize: the columns a policy resets instead of deleting the row
 *	  (action 'anonymize', set_columns), column expiry.
 *
 * set_columns is the SET list of an UPDATE ("email = NULL, name =
 * 'erased'").  ttl_create_index() parses it as the caller (names on the
 * caller's search_path, as the filter is: filter.c), checks it against the
 * table and its partitions or children (ttl_set_check), and stores it as
 * PostgreSQL deparses it in the pinned parse environment (owner.c): every
 * value with its explicit cast, every name outside pg_catalog qualified, so
 * that the stored text reads the same whoever's session reads it.  Each
 * resolution of a target parses the stored text again, in the pinned
 * environment, against the target (ttl_set_read): a partition's or child's
 * column numbers may differ from its parent's, so columns are matched by
 * name.  A set column renamed or dropped, or whose type the value no
 * longer converts to, fails that parse: the ALTER TABLE check then refuses
 * the change (api.c).
 *
 * The columns a policy may not reset: the TTL column and the per-row TTL
 * column (the row's expiry would move), generated columns (PostgreSQL
 * computes them), identity columns (they identify the row: GENERATED ALWAYS
 * ones cannot be updated at all, and a BY DEFAULT one set to a constant
 * would be a key no longer), columns of the primary key, of a unique index
 * or of an exclusion constraint (every expired row would get the same
 * value, and the second would fail the batch), partition key columns (the
 * row would move, or fail the partition constraint), and a column listed
 * twice.
 *
 * The values are constants: no column reference, nothing that is not
 * immutable (now() would write a different value at every pass and never
 * be done), no function outside pg_catalog (an immutable function of
 * another role's, resolved again at every parse, could be replaced by a
 * better-matching overload: filter.c explains), no subquery, no DEFAULT.
 * Each is coerced to its column's type as an UPDATE's assignment is.
 *
 * Done rows.  A row is pending while one of its set columns differs from
 * its value (IS DISTINCT FROM: NULL is the same as NULL).  The condition
 * (ttl_set_pending_sql) is added to the target's filter (targets.c), so the
 * index ttl_create_index() makes is partial on it: a row the policy has
 * reset leaves the index, and no later pass reads it again.  Comparing
 * needs the type's equality operator: a column of a type without one (json,
 * point) is refused.
 *
 * What the column stores.  A value is stored as the column would store it
 * (ttl_set_storable): coerced with the column's typmod and domain and
 * evaluated once, when the policy is made, so that numeric(5,2) set to
 * 1.234 is stored, compared and written as 1.23 and timestamp(0) set to a
 * fraction as the whole second it rounds to (a "done" test against the
 * constant as written would never hold).  The same rule then refuses a
 * value the column cannot hold: one its type, typmod or domain rejects,
 * NULL on a NOT NULL column, one that a CHECK constraint over set columns
 * alone rejects (a CHECK that also reads other columns is left to the
 * rows: a row it refuses is held, held.c), and a set column in a unique
 * index or exclusion constraint (ttl_set_refuse_keys).  It runs at
 * ttl_create_index() and after every DDL on the policy's table that could
 * break it (ttl_set_recheck, from the event triggers: ALTER TABLE, CREATE
 * INDEX), on the table and each of its partitions and children.  Domain
 * and CHECK expressions are the table owner's code: they are evaluated as
 * the owner, in a restricted operation (owner.c).
 *
 * Reading a stored list (ttl_set_read) evaluates nothing and runs no user
 * code: parsing reads the constants with their types' input functions
 * only.
 *
 * Locking: the caller holds a lock on the table; partitions and children
 * are opened with AccessShareLock by ttl_set_check.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/heap.h"
#include "catalog/index.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_relation.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "compat.h"
#include "ttl_index.h"
#include "policy/policy.h"
#include "citus/citus.h"
#include "env/env.h"

/* "UPDATE ttl_set SET ", which ttl_set_raw puts before the list */
#define TTL_SET_PREFIX		"UPDATE ttl_set SET "
#define TTL_SET_PREFIX_LEN	((int) sizeof(TTL_SET_PREFIX) - 1)

static void
ttl_set_bad_list(const char *text)
{
	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 errmsg("set_columns must be a list of column = value, as in the SET clause of an UPDATE"),
			 errdetail("set_columns: %s", text)));
}

/*
 * ttl_set_raw
 *		Parse set_columns as the SET clause of an UPDATE, and nothing more:
 *		a FROM, WHERE or RETURNING clause, a second statement or an
 *		assignment to several columns at once is refused.  Returns the list
 *		of ResTarget.
 */
static List *
ttl_set_raw(const char *text)
{
	List	   *stmts;
	RawStmt    *raw;
	UpdateStmt *upd;
	ListCell   *lc;
	ErrorContextCallback errcallback;
	TtlPolicyText source = {"set_columns", text, TTL_SET_PREFIX_LEN};

	if (text[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("set_columns must not be empty"),
				 errhint("Name the columns to reset and their values, as in email = NULL, name = 'erased'.")));

	errcallback.callback = ttl_policy_text_callback;
	errcallback.arg = &source;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	stmts = raw_parser(psprintf("%s%s", TTL_SET_PREFIX, text), RAW_PARSE_DEFAULT);
	error_context_stack = errcallback.previous;

	if (list_length(stmts) != 1)
		ttl_set_bad_list(text);
	raw = linitial_node(RawStmt, stmts);
	if (!IsA(raw->stmt, UpdateStmt))
		ttl_set_bad_list(text);
	upd = (UpdateStmt *) raw->stmt;
#if PG_VERSION_NUM >= 180000
	if (upd->returningClause)
		ttl_set_bad_list(text);
#else
	if (upd->returningList)
		ttl_set_bad_list(text);
#endif
	if (upd->whereClause || upd->fromClause || upd->withClause || upd->targetList == NIL)
		ttl_set_bad_list(text);
	foreach(lc, upd->targetList)
	{
		ResTarget  *rt = lfirst_node(ResTarget, lc);

		if (rt->name == NULL || IsA(rt->val, MultiAssignRef))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("set_columns must assign each column on its own"),
					 errhint("Write a = 1, b = 2 rather than (a, b) = (1, 2).")));
		if (rt->indirection != NIL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("set_columns must assign whole columns, not a part of column \"%s\"",
							rt->name)));
	}
	return upd->targetList;
}

/* check_functions_in_node callback: a function outside pg_catalog */
static bool
ttl_set_not_builtin(Oid funcid, void *context)
{
	return get_func_namespace(funcid) != PG_CATALOG_NAMESPACE;
}

static bool
ttl_set_user_function_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, ttl_set_not_builtin, context))
		return true;
	return expression_tree_walker(node, ttl_set_user_function_walker, context);
}

/*
 * ttl_set_value
 *		Transform one value and coerce it to its column's type, as an
 *		UPDATE's assignment is, and check it is a constant (see the top of
 *		the file).
 */
static Node *
ttl_set_value(ParseState *pstate, Relation rel, Form_pg_attribute att, Node *raw)
{
	const char *colname = NameStr(att->attname);
	Node	   *expr;
	Oid			type;

	if (IsA(raw, SetToDefault))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the value for column \"%s\" in set_columns must be a constant, not DEFAULT",
						colname),
				 errhint("Write the column's default value itself.")));

	expr = transformExpr(pstate, raw, EXPR_KIND_UPDATE_SOURCE);
	type = exprType(expr);
	expr = coerce_to_target_type(pstate, expr, type, att->atttypid, att->atttypmod,
								 COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
	if (expr == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" is of type %s but its value in set_columns is of type %s",
						colname, format_type_be(att->atttypid), format_type_be(type)),
				 errhint("Rewrite or cast the value.")));
	assign_expr_collations(pstate, expr);

	if (pstate->p_hasSubLinks)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the value for column \"%s\" in set_columns must not contain a subquery",
						colname)));
	if (pstate->p_hasAggs || pstate->p_hasWindowFuncs || pstate->p_hasTargetSRFs)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the value for column \"%s\" in set_columns must not contain aggregates, window functions or set-returning functions",
						colname)));
	if (contain_var_clause(expr))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the value for column \"%s\" in set_columns must not refer to a column",
						colname),
				 errdetail("A value is a constant, the same for every expired row.")));
	if (contain_mutable_functions(expr))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the value for column \"%s\" in set_columns must be immutable",
						colname),
				 errdetail("A row is done when its columns hold their values; a value that changes, such as now(), would never be reached."),
				 errhint("Write a constant, such as NULL or '1970-01-01'.")));
	fix_opfuncids(expr);
	if (ttl_set_user_function_walker(expr, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the value for column \"%s\" in set_columns must call only built-in functions",
						colname),
				 errhint("Write the value as a constant.")));
	return expr;
}

/*
 * ttl_set_refuse_column
 *		Refuse a set column of rel that the policy must not reset, for a
 *		reason that concerns only its column (see the top of the file).
 *		key_attnum and ttl_attnum are the policy's columns in rel (0: none).
 */
static void
ttl_set_refuse_column(Relation rel, Form_pg_attribute att, AttrNumber key_attnum,
					  AttrNumber ttl_attnum)
{
	const char *colname = NameStr(att->attname);
	Oid			eqop;

	if (att->attnum == key_attnum || att->attnum == ttl_attnum)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("set_columns must not name column \"%s\": the row's expiry is computed from it",
						colname)));
	if (att->attgenerated != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set_columns must not name the generated column \"%s\"", colname),
				 errdetail("PostgreSQL computes its value.")));
	if (att->attidentity != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set_columns must not name the identity column \"%s\"", colname),
				 errdetail("An identity column identifies the row; set to a constant, it would do so no longer.")));

	eqop = lookup_type_cache(getBaseType(att->atttypid), TYPECACHE_EQ_OPR)->eq_opr;
	if (!OidIsValid(eqop))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set_columns must not name column \"%s\" of type %s, which has no equality operator",
						colname, format_type_be(att->atttypid)),
				 errdetail("A row is pending while a set column differs from its value, which needs the type's default btree or hash equality.")));
}

/*
 * ttl_set_refuse_keys
 *		Refuse a set column, by name, that is in a unique index or an
 *		exclusion constraint of rel (the primary key among them), or in the
 *		partition key of rel (when partitioned) or of one of its ancestors.
 *		A column set to NULL (in null_names) may be a key column of a unique
 *		index whose NULLs are distinct, as they are by default: NULLs do not
 *		collide there (email = NULL on a UNIQUE email, the GDPR case).
 */
static void
ttl_set_refuse_keys(Relation rel, List *names, List *null_names)
{
	List	   *indexes = RelationGetIndexList(rel);
	List	   *keyrels;
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = idx->rd_index;
		Bitmapset  *cols = NULL;
		Bitmapset  *exprcols = NULL;
		int			attnum = -1;
		bool		nulls_collide = form->indisprimary || form->indisexclusion ||
			form->indnullsnotdistinct;

		if (form->indisunique || form->indisexclusion)
		{
			for (int i = 0; i < form->indnkeyatts; i++)
			{
				if (form->indkey.values[i] != 0)
					cols = bms_add_member(cols, form->indkey.values[i] -
										  FirstLowInvalidHeapAttributeNumber);
			}
			pull_varattnos((Node *) RelationGetIndexExpressions(idx), 1, &exprcols);
			cols = bms_add_members(cols, exprcols);
		}
		while ((attnum = bms_next_member(cols, attnum)) >= 0)
		{
			AttrNumber	a = attnum + FirstLowInvalidHeapAttributeNumber;
			char	   *colname;

			if (a <= 0)
				continue;
			colname = NameStr(TupleDescAttr(RelationGetDescr(rel), a - 1)->attname);
			if (!nulls_collide && !bms_is_member(attnum, exprcols) &&
				list_member(null_names, makeString(colname)))
				continue;
			if (list_member(names, makeString(colname)))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("set_columns must not name column \"%s\": it is in %s %s of table \"%s\"",
								colname,
								form->indisprimary ? "the primary key" :
								form->indisexclusion ? "the exclusion constraint" :
								"the unique index",
								RelationGetRelationName(idx), RelationGetRelationName(rel)),
						 errdetail(nulls_collide ?
								   "Every expired row would get the same value." :
								   "Every expired row would get the same value; only NULL, which does not collide in it, may be set.")));
		}
		index_close(idx, AccessShareLock);
	}
	list_free(indexes);

	/* its own partition key, and its ancestors' */
	keyrels = rel->rd_rel->relispartition ?
		get_partition_ancestors(RelationGetRelid(rel)) : NIL;
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		keyrels = lappend_oid(keyrels, RelationGetRelid(rel));
	foreach(lc, keyrels)
	{
		Relation	kr = relation_open(lfirst_oid(lc), AccessShareLock);
		PartitionKey key = RelationGetPartitionKey(kr);
		Bitmapset  *cols = NULL;
		int			attnum = -1;

		for (int i = 0; key != NULL && i < key->partnatts; i++)
		{
			if (key->partattrs[i] != 0)
				cols = bms_add_member(cols, key->partattrs[i] -
									  FirstLowInvalidHeapAttributeNumber);
		}
		if (key != NULL)
			pull_varattnos((Node *) key->partexprs, 1, &cols);
		while ((attnum = bms_next_member(cols, attnum)) >= 0)
		{
			AttrNumber	a = attnum + FirstLowInvalidHeapAttributeNumber;
			char	   *colname;

			if (a <= 0)
				continue;
			colname = NameStr(TupleDescAttr(RelationGetDescr(kr), a - 1)->attname);
			if (list_member(names, makeString(colname)))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("set_columns must not name column \"%s\": it is in the partition key of table \"%s\"",
								colname, RelationGetRelationName(kr)),
						 errdetail("The row would have to move to another partition.")));
		}
		relation_close(kr, AccessShareLock);
	}
}

/*
 * ttl_set_parse
 *		Parse set_columns against rel, check every column and value, and
 *		return the list of TtlSetColumn.  Stored text (`stored`) is parsed
 *		in the parse environment; the text a caller of ttl_create_index()
 *		wrote, in the caller's own.  key_attnum and ttl_attnum are the
 *		policy's columns in rel.
 */
static List *
ttl_set_parse(Relation rel, const char *text, bool stored, AttrNumber key_attnum,
			  AttrNumber ttl_attnum)
{
	ParseState *pstate;
	ParseNamespaceItem *nsitem;
	List	   *targets;
	List	   *result = NIL;
	List	   *names = NIL;
	List	   *null_names = NIL;
	ListCell   *lc;
	int			nestlevel;
	ErrorContextCallback errcallback;
	TtlPolicyText source = {"set_columns", text, TTL_SET_PREFIX_LEN};

	nestlevel = stored ? ttl_parse_env_enter() : NewGUCNestLevel();
	targets = ttl_set_raw(text);

	pstate = make_parsestate(NULL);
	pstate->p_sourcetext = psprintf("%s%s", TTL_SET_PREFIX, text);
	nsitem = addRangeTableEntryForRelation(pstate, rel, AccessShareLock,
										   NULL, false, false);
	addNSItemToQuery(pstate, nsitem, false, true, true);

	errcallback.callback = ttl_policy_text_callback;
	errcallback.arg = &source;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	foreach(lc, targets)
	{
		ResTarget  *rt = lfirst_node(ResTarget, lc);
		TtlSetColumn *col = palloc0(sizeof(TtlSetColumn));
		Form_pg_attribute att = NULL;

		for (int i = 0; i < RelationGetNumberOfAttributes(rel); i++)
		{
			Form_pg_attribute a = TupleDescAttr(RelationGetDescr(rel), i);

			if (!a->attisdropped && strcmp(NameStr(a->attname), rt->name) == 0)
				att = a;
		}
		if (att == NULL && SystemAttributeByName(rt->name) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
					 errmsg("set_columns must not name the system column \"%s\"", rt->name)));
		if (att == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of set_columns does not exist in relation \"%s\"",
							rt->name, RelationGetRelationName(rel))));
		if (list_member(names, makeString(rt->name)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("column \"%s\" is listed twice in set_columns", rt->name)));
		names = lappend(names, makeString(pstrdup(rt->name)));
		ttl_set_refuse_column(rel, att, key_attnum, ttl_attnum);

		col->attnum = att->attnum;
		col->name = pstrdup(NameStr(att->attname));
		col->value = ttl_set_value(pstate, rel, att, rt->val);
		if (IsA(col->value, Const) && ((Const *) col->value)->constisnull)
			null_names = lappend(null_names, makeString(pstrdup(rt->name)));
		result = lappend(result, col);
	}
	error_context_stack = errcallback.previous;
	ttl_set_refuse_keys(rel, names, null_names);

	free_parsestate(pstate);
	ttl_parse_env_leave(nestlevel);
	return result;
}

/*
 * ttl_set_deparse
 *		Deparse the values of a parsed list, in the parse environment, into
 *		each column's value_sql, and return the list as it is stored.
 */
static char *
ttl_set_deparse(Relation rel, List *cols)
{
	StringInfoData buf;
	ListCell   *lc;
	int			nestlevel = ttl_parse_env_enter();
	List	   *context = deparse_context_for(RelationGetRelationName(rel),
											  RelationGetRelid(rel));

	initStringInfo(&buf);
	foreach(lc, cols)
	{
		TtlSetColumn *col = (TtlSetColumn *) lfirst(lc);

		col->value_sql = deparse_expression(col->value, context, false, false);
		appendStringInfo(&buf, "%s%s = %s", buf.len > 0 ? ", " : "",
						 quote_identifier(col->name), col->value_sql);
	}
	ttl_parse_env_leave(nestlevel);
	return buf.data;
}

/*
 * ttl_set_checks_pass
 *		Whether every enforced CHECK constraint of rel that reads set
 *		columns only accepts the row made of the values in slot (NULL
 *		elsewhere); *failed names the first that does not.  A CHECK that
 *		reads another column cannot be decided here (see the top of the
 *		file).  Runs the constraints' expressions: the caller is the owner.
 */
static bool
ttl_set_checks_pass(Relation rel, Bitmapset *setcols, TupleTableSlot *slot,
					EState *estate, const char **failed)
{
	TupleConstr *constr = RelationGetDescr(rel)->constr;

	for (int i = 0; constr != NULL && i < constr->num_check; i++)
	{
		ConstrCheck *check = &constr->check[i];
		Node	   *expr;
		Bitmapset  *reads = NULL;
		ExprState  *state;
		ExprContext *econtext = GetPerTupleExprContext(estate);

		if (!ttl_check_enforced(check))
			continue;
		expr = stringToNode(check->ccbin);
		pull_varattnos(expr, 1, &reads);
		if (reads == NULL || !bms_is_subset(reads, setcols))
			continue;
		state = ExecPrepareCheck(list_make1(expression_planner((Expr *) expr)), estate);
		econtext->ecxt_scantuple = slot;
		if (!ExecCheck(state, econtext))
		{
			*failed = check->ccname;
			return false;
		}
		ResetExprContext(econtext);
	}
	return true;
}

/*
 * Why ttl_set_store_values refused a value: the column, and a sentence
 * (NULL when an error says it).  Allocated by the caller, not on its stack:
 * it is read after an error's longjmp.
 */
typedef struct TtlSetRefusal
{
	TtlSetColumn *bad;
	char	   *why;
} TtlSetRefusal;

/*
 * ttl_set_store_values
 *		The body of ttl_set_storable, in its subtransaction, as the owner:
 *		each value evaluated as rel's column stores it (into a Const in
 *		cxt), then the NOT NULL and CHECK constraints.  Sets r->bad to the
 *		column in hand (when an error is raised) or refused, and r->why to
 *		the reason when it refuses without an error.
 */
static void
ttl_set_store_values(Relation rel, List *cols, MemoryContext cxt, TtlSetRefusal *r)
{
	TupleDesc	desc = RelationGetDescr(rel);
	EState	   *estate = CreateExecutorState();
	TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	Bitmapset  *setcols = NULL;
	const char *failed = NULL;
	ListCell   *lc;

	ExecClearTuple(slot);
	for (int i = 0; i < desc->natts; i++)
	{
		slot->tts_values[i] = (Datum) 0;
		slot->tts_isnull[i] = true;
	}
	foreach(lc, cols)
	{
		TtlSetColumn *col = (TtlSetColumn *) lfirst(lc);
		Form_pg_attribute att = TupleDescAttr(desc, col->attnum - 1);
		MemoryContext old = MemoryContextSwitchTo(cxt);
		Const	   *c;

		r->bad = col;
		c = (Const *) evaluate_expr((Expr *) col->value, att->atttypid, -1,
									att->attcollation);
		MemoryContextSwitchTo(old);
		col->value = (Node *) c;
		if (c->constisnull && att->attnotnull)
		{
			r->why = psprintf("Column \"%s\" of table \"%s\" is NOT NULL.",
							  col->name, RelationGetRelationName(rel));
			break;
		}
		slot->tts_values[col->attnum - 1] = c->constvalue;
		slot->tts_isnull[col->attnum - 1] = c->constisnull;
		setcols = bms_add_member(setcols, col->attnum - FirstLowInvalidHeapAttributeNumber);
	}
	/* a constraint that fails to evaluate on the values names the first */
	if (r->why == NULL)
		r->bad = (TtlSetColumn *) linitial(cols);
	ExecStoreVirtualTuple(slot);
	if (r->why == NULL && !ttl_set_checks_pass(rel, setcols, slot, estate, &failed))
	{
		foreach(lc, cols)
		{
			TtlSetColumn *col = (TtlSetColumn *) lfirst(lc);
			char	   *ccbin = NULL;

			/* the first set column the constraint reads, for the message */
			for (int i = 0; i < desc->constr->num_check; i++)
			{
				if (strcmp(desc->constr->check[i].ccname, failed) == 0)
					ccbin = desc->constr->check[i].ccbin;
			}
			if (ccbin != NULL)
			{
				Bitmapset  *reads = NULL;

				pull_varattnos(stringToNode(ccbin), 1, &reads);
				if (bms_is_member(col->attnum - FirstLowInvalidHeapAttributeNumber, reads))
				{
					r->bad = col;
					break;
				}
			}
		}
		r->why = psprintf("The check constraint \"%s\" of table \"%s\" refuses it.",
						failed, RelationGetRelationName(rel));
	}
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
}

/* ttl_set_store_values's arguments, for ttl_error_try */
typedef struct TtlSetStore
{
	Relation	rel;
	List	   *cols;
	MemoryContext cxt;
	TtlSetRefusal *r;
} TtlSetStore;

/*
 * ttl_set_store_as_owner
 *		ttl_set_store_values as rel's owner, as ttl_error_try calls it.
 */
static void
ttl_set_store_as_owner(void *arg)
{
	TtlSetStore *store = (TtlSetStore *) arg;
	TtlOwnerSave save;

	ttl_owner_enter(store->rel->rd_rel->relowner, &save);
	ttl_set_store_values(store->rel, store->cols, store->cxt, store->r);
	ttl_owner_leave(&save);
}

/*
 * ttl_set_storable
 *		The one rule a set list must meet on a table (see the top of the
 *		file): can each column store its value, and is none unique.  cols
 *		is the list as ttl_set_parse read it against rel (which refused
 *		the unique ones); each value is evaluated as rel's column stores
 *		it, as rel's owner in a restricted operation, and replaced by the
 *		constant stored.  A value the column cannot hold raises an error
 *		naming the column.
 */
static void
ttl_set_storable(Relation rel, List *cols)
{
	TtlSetRefusal *r = palloc0(sizeof(TtlSetRefusal));
	TtlSetStore store = {rel, cols, CurrentMemoryContext, r};
	ErrorData  *edata;
	char	   *value;

	edata = ttl_error_try(ttl_set_store_as_owner, &store);
	if (edata == NULL && r->why == NULL)
		return;
	Assert(r->bad != NULL);
	{
		int			nestlevel = ttl_parse_env_enter();

		value = deparse_expression(r->bad->value, NIL, false, false);
		ttl_parse_env_leave(nestlevel);
	}
	ereport(ERROR,
			(errcode(edata != NULL ? edata->sqlerrcode : ERRCODE_CHECK_VIOLATION),
			 errmsg("column \"%s\" of table \"%s\" cannot store its set_columns value %s",
					r->bad->name, RelationGetRelationName(rel), value),
			 r->why != NULL ? errdetail_internal("%s", r->why) :
			 errdetail("Storing it fails: %s.", edata->message),
			 errhint("Set a value the column can store.")));
}

/*
 * ttl_set_check_children
 *		ttl_set_storable on each partition and inheritance child of rel,
 *		the stored list parsed against it (which refuses its unique set
 *		columns and its partition key's).
 */
static void
ttl_set_check_children(Relation rel, TtlPolicy *policy, const char *text)
{
	ListCell   *lc;

	if (!rel->rd_rel->relhassubclass)
		return;
	foreach(lc, find_all_inheritors(RelationGetRelid(rel), AccessShareLock, NULL))
	{
		Relation	child;
		AttrNumber	key_attnum;
		AttrNumber	ttl_attnum;

		if (lfirst_oid(lc) == RelationGetRelid(rel))
			continue;
		child = relation_open(lfirst_oid(lc), NoLock);
		key_attnum = get_attnum(lfirst_oid(lc), policy->column_name);
		ttl_attnum = policy->ttl_column ?
			get_attnum(lfirst_oid(lc), policy->ttl_column) : 0;
		ttl_set_storable(child, ttl_set_parse(child, text, true,
											  key_attnum == InvalidAttrNumber ? 0 : key_attnum,
											  ttl_attnum == InvalidAttrNumber ? 0 : ttl_attnum));
		relation_close(child, NoLock);
	}
}

/*
 * ttl_set_check
 *		Check a policy's set_columns against its table (and each of its
 *		partitions and children: their own unique indexes, partition keys
 *		and constraints) as the caller, and store them as they are to be
 *		read again: each value as the column stores it (ttl_set_storable).
 *		The policy's TTL column (attnum) and ttl_column are resolved.
 */
void
ttl_set_check(Relation rel, TtlPolicy *policy)
{
	AttrNumber	ttl_attnum = policy->ttl_column ?
		get_attnum(RelationGetRelid(rel), policy->ttl_column) : 0;
	List	   *cols = ttl_set_parse(rel, policy->set_columns, false,
									 policy->attnum, ttl_attnum);
	List	   *stored;
	ListCell   *lc;
	char	   *distcol;
	char	   *text;

	ttl_set_storable(rel, cols);
	text = ttl_set_deparse(rel, cols);

	/* the stored text, read as every later reader will, must say the same */
	stored = ttl_set_parse(rel, text, true, policy->attnum, ttl_attnum);
	if (list_length(stored) != list_length(cols))
		elog(ERROR, "set_columns read back differently: %s", text);
	policy->set_columns = text;

	distcol = ttl_citus_distribution_column(RelationGetRelid(rel));
	foreach(lc, cols)
	{
		TtlSetColumn *col = (TtlSetColumn *) lfirst(lc);

		/* Citus moves no row between shards on an UPDATE */
		if (distcol != NULL && strcmp(distcol, col->name) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("set_columns must not name column \"%s\": it is the distribution column of table \"%s\"",
							col->name, RelationGetRelationName(rel)),
					 errdetail("The row would have to move to another shard.")));
	}
	ttl_set_check_children(rel, policy, text);
}

/* ttl_set_recheck's table and policy, for ttl_error_try */
typedef struct TtlSetRecheck
{
	Relation	rel;
	TtlPolicy  *policy;
} TtlSetRecheck;

/*
 * ttl_set_recheck_tables
 *		The body of ttl_set_recheck, as ttl_error_try calls it: the rule on
 *		the table, then on each of its partitions and children.
 */
static void
ttl_set_recheck_tables(void *arg)
{
	TtlSetRecheck *recheck = (TtlSetRecheck *) arg;
	Relation	rel = recheck->rel;
	TtlPolicy  *policy = recheck->policy;
	AttrNumber	ttl_attnum = policy->ttl_column ?
		get_attnum(RelationGetRelid(rel), policy->ttl_column) : 0;

	ttl_set_storable(rel, ttl_set_parse(rel, policy->set_columns, true,
										policy->attnum, ttl_attnum));
	ttl_set_check_children(rel, policy, policy->set_columns);
}

/*
 * ttl_set_recheck
 *		After DDL on the table of an anonymize policy (the event triggers,
 *		api.c): the rule of ttl_create_index() (ttl_set_storable) over the
 *		stored set_columns, on the table and each of its partitions and
 *		children.  A table that would break the policy raises an error
 *		naming the command, the policy and the column, which undoes the
 *		DDL.
 */
void
ttl_set_recheck(Relation rel, TtlPolicy *policy, const char *command)
{
	TtlSetRecheck recheck = {rel, policy};
	ErrorData  *edata;

	if (policy->set_columns == NULL)
		return;
	edata = ttl_error_try(ttl_set_recheck_tables, &recheck);
	if (edata == NULL)
		return;
	ereport(ERROR,
			(errcode(edata->sqlerrcode),
			 errmsg("%s would break the TTL policy on column \"%s\" of table %s: %s",
					command, policy->column_name, ttl_qualified_relname(policy->relid),
					edata->message),
			 edata->detail ? errdetail_internal("%s", edata->detail) :
			 errdetail("The policy's set_columns are: %s.", policy->set_columns),
			 errhint("Change the policy's set_columns with ttl_alter_index(), or drop the policy with ttl_drop_index(), first.")));
}

/*
 * ttl_set_read
 *		The policy's set columns in a target's table (see the top of the
 *		file): a list of TtlSetColumn, each value parsed from the stored
 *		text, in the current memory context.  key_attnum and ttl_attnum
 *		are the policy's columns in rel.  A set column that is gone, or
 *		whose value no longer fits it, raises the error.
 */
List *
ttl_set_read(Relation rel, TtlPolicy *policy, AttrNumber key_attnum,
			 AttrNumber ttl_attnum)
{
	List	   *cols;

	if (policy->set_columns == NULL)
		return NIL;
	cols = ttl_set_parse(rel, policy->set_columns, true, key_attnum, ttl_attnum);
	(void) ttl_set_deparse(rel, cols);
	return cols;
}

/*
 * ttl_set_assignments_sql
 *		The SET list of the statement (statement.c): "c1 = v1, c2 = v2".
 */
char *
ttl_set_assignments_sql(List *cols)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, cols)
	{
		TtlSetColumn *col = (TtlSetColumn *) lfirst(lc);

		appendStringInfo(&buf, "%s%s = %s", buf.len > 0 ? ", " : "",
						 quote_identifier(col->name), col->value_sql);
	}
	return buf.data;
}

/*
 * ttl_set_pending_sql
 *		"The row is not done yet": one of its set columns differs from its
 *		value, as SQL over rel to be parsed in the parse environment.  A
 *		NULL value reads "c IS NOT NULL"; a type whose equality operator is
 *		pg_catalog's "=" reads "c IS DISTINCT FROM v"; another type's
 *		operator (which the parse environment's search_path does not see)
 *		is named, with the same meaning as IS DISTINCT FROM.
 */
char *
ttl_set_pending_sql(Relation rel, List *cols)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	foreach(lc, cols)
	{
		TtlSetColumn *col = (TtlSetColumn *) lfirst(lc);
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), col->attnum - 1);
		const char *c = quote_identifier(col->name);
		Oid			eqop = lookup_type_cache(getBaseType(att->atttypid),
											 TYPECACHE_EQ_OPR)->eq_opr;
		HeapTuple	tup;
		Form_pg_operator op;

		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&buf, " OR ");
		if (IsA(col->value, Const) && ((Const *) col->value)->constisnull)
		{
			appendStringInfo(&buf, "%s IS NOT NULL", c);
			continue;
		}
		if (!OidIsValid(eqop))
			elog(ERROR, "no equality operator for type %s", format_type_be(att->atttypid));
		tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(eqop));
		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for operator %u", eqop);
		op = (Form_pg_operator) GETSTRUCT(tup);
		if (op->oprnamespace == PG_CATALOG_NAMESPACE && strcmp(NameStr(op->oprname), "=") == 0)
			appendStringInfo(&buf, "%s IS DISTINCT FROM %s", c, col->value_sql);
		else
			appendStringInfo(&buf, "(%s IS NULL) IS DISTINCT FROM (%s IS NULL) OR (%s OPERATOR(%s.%s) %s) IS FALSE",
							 c, col->value_sql, c,
							 quote_identifier(get_namespace_name(op->oprnamespace)),
							 NameStr(op->oprname), col->value_sql);
		ReleaseSysCache(tup);
	}
	appendStringInfoChar(&buf, ')');
	return buf.data;
}
