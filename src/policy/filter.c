/*-------------------------------------------------------------------------
 *
 * filter.c
 *	  A policy's filter: a boolean SQL expression over the table's columns
 *	  that selects the rows which may expire.
 *
 * It is parsed and checked against the table (no subqueries, aggregates,
 * window or set-returning functions, or volatile functions), then stored as
 * the text PostgreSQL deparses from it: no comment or trailing text of the
 * caller's survives, and every name outside pg_catalog comes out
 * schema-qualified.  Deparsing and every later parse run in the pinned
 * parse environment (owner.c: search_path = pg_catalog, pg_temp, ISO dates,
 * ...), so the stored text means the same thing whoever's session reads it,
 * and a caller's search_path can never slip its own operator in.
 *
 * Text is parsed again, and overloads resolve again: a function created
 * since that matches the arguments better (a polymorphic function's
 * sibling of the exact type, in a schema other roles can create in) would
 * be called in its place, as the table's owner.  So the functions a filter
 * calls (operators by their functions) are recorded with the policy, as
 * signatures, schema-qualified, argument types too
 * (ttl_filter_function_signature): read back the same under any
 * search_path, and kept by pg_dump and pg_upgrade, which keep names, not
 * function OIDs (pg_upgrade refuses a table with a column of type
 * regprocedure).  A signature that names no function any more reads as
 * none.  Like every name in stored SQL (a PL/pgSQL body's, a cron job's),
 * a function dropped and created again under the same signature is taken
 * for the one recorded: the check guards against an overload created
 * beside it, not against its owner dropping it for another role to make
 * again (docs/operations.md says to make filters call functions in schemas
 * only trusted roles create in).  Every later parse of the filter, alone or in the executor
 * path's statement (statement.c), must call those and no others
 * (ttl_filter_check_functions): otherwise the batch fails, saying so.
 *
 * Parsing runs no user code (it resolves names and types; constants are
 * read by the types' input functions); nothing here folds or evaluates the
 * expression.  Evaluation happens in batch.c and probe.c, as the owner.
 *
 * Locking: the caller holds a lock on the table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/dependency.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "commands/extension.h"
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
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "compat.h"
#include "ttl_index.h"
#include "policy/policy.h"
#include "env/env.h"

/* "SELECT ", which ttl_filter_raw puts before the filter to parse it */
#define TTL_FILTER_PREFIX_LEN	7

/*
 * ttl_policy_text_callback
 *		Point a parse error at a policy's own text (a filter, set_columns),
 *		parsed behind a prefix of prefix_len characters, not at the statement
 *		that passed it (as SQL function bodies do).  arg: a TtlPolicyText.
 */
void
ttl_policy_text_callback(void *arg)
{
	const TtlPolicyText *t = (const TtlPolicyText *) arg;
	int			pos = geterrposition();

	if (pos > t->prefix_len)
	{
		errposition(0);
		internalerrposition(pos - t->prefix_len);
		internalerrquery(t->text);
	}
	errcontext("TTL policy %s \"%s\"", t->what, t->text);
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
	TtlPolicyText source = {"filter", filter, TTL_FILTER_PREFIX_LEN};

	errcallback.callback = ttl_policy_text_callback;
	errcallback.arg = &source;
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
 *		Parse and check a filter against rel.  A stored filter (`stored`) is
 *		parsed in the parse environment; the text a caller of
 *		ttl_create_index() wrote, in the caller's own (its names are
 *		resolved on the caller's search_path, then stored qualified).
 *		Returns the transformed boolean expression, its Vars numbered 1.
 */
Node *
ttl_filter_parse(Relation rel, const char *filter, bool stored)
{
	ParseState *pstate;
	ParseNamespaceItem *nsitem;
	Node	   *expr;
	int			nestlevel;

	if (filter[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("filter must not be empty"),
				 errhint("Pass NULL for no filter.")));

	nestlevel = stored ? ttl_parse_env_enter() : NewGUCNestLevel();

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
	ttl_parse_env_leave(nestlevel);
	return expr;
}

/* check_functions_in_node callback: collect every function */
static bool
ttl_filter_collect(Oid funcid, void *context)
{
	List	  **list = (List **) context;

	*list = list_append_unique_oid(*list, funcid);
	return false;
}

static bool
ttl_filter_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	(void) check_functions_in_node(node, ttl_filter_collect, context);
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, ttl_filter_walker, context, 0);
	return expression_tree_walker(node, ttl_filter_walker, context);
}

/* check_functions_in_node callback: a function outside pg_catalog */
static bool
ttl_filter_not_builtin(Oid funcid, void *context)
{
	return get_func_namespace(funcid) != PG_CATALOG_NAMESPACE;
}

static bool
ttl_filter_user_code_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	/* a domain's CHECK constraints may call anything */
	if (IsA(node, CoerceToDomain))
		return true;
	if (check_functions_in_node(node, ttl_filter_not_builtin, context))
		return true;
	return expression_tree_walker(node, ttl_filter_user_code_walker, context);
}

/*
 * ttl_filter_runs_user_code
 *		Whether evaluating a parsed filter may run code someone other than
 *		the server wrote: a function or operator outside pg_catalog, or a
 *		domain's constraints.  A filter of built-in comparisons (status =
 *		'done') runs none, and may be evaluated in any session.
 */
bool
ttl_filter_runs_user_code(Node *expr)
{
	fix_opfuncids(expr);
	return ttl_filter_user_code_walker(expr, NULL);
}

/*
 * ttl_filter_functions
 *		The functions an expression (or a Query) calls, operators by their
 *		functions, each once, as a list of OIDs.
 */
List *
ttl_filter_functions(Node *expr)
{
	List	   *funcs = NIL;

	fix_opfuncids(expr);
	(void) ttl_filter_walker(expr, &funcs);
	return funcs;
}

/*
 * ttl_filter_function_signature
 *		How the catalog records a function a filter calls (see the top of
 *		the file).
 */
char *
ttl_filter_function_signature(Oid funcid)
{
	char	   *sig = format_procedure_extended(funcid, FORMAT_PROC_FORCE_QUALIFY |
												FORMAT_PROC_INVALID_AS_NULL);

	/* dropped meanwhile: never record it as its bare OID */
	if (sig == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("function %u called by the filter does not exist", funcid)));
	return sig;
}

/*
 * ttl_filter_function_lookup
 *		The function a recorded signature names now; InvalidOid when it
 *		names none (the function, a type of its arguments or its schema is
 *		gone or renamed): the filter's check then refuses what it calls.
 *		Raises no error for that, so one policy's signature cannot stop the
 *		reading of the others.
 */
Oid
ttl_filter_function_lookup(const char *signature)
{
	Oid			save_userid;
	int			save_sec_context;
	Oid			result;

	/* a signature, never an OID, which would mean another function elsewhere */
	if (strchr(signature, '(') == NULL)
		return InvalidOid;

	/*
	 * A name looked up in the catalog, whoever reads the policies: a reader
	 * of the views who may not use the schema of another owner's function
	 * must not fail on it (nor the worker on an owner's private schema).
	 * Resolving the name runs no user code.
	 */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	result = ttl_regprocedure_lookup(signature);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return result;
}

/*
 * ttl_filter_check_functions
 *		Raise an error when an expression calls a function that is neither
 *		one of `recorded` (a policy's filter's, see the top of the file) nor
 *		one of `also`; functions of pg_catalog (which other roles cannot
 *		create in) and of the extension itself always pass.
 */
void
ttl_filter_check_functions(Node *expr, TtlPolicy *policy, List *also)
{
	Oid			ext = get_extension_oid(TTL_EXTENSION_NAME, true);
	ListCell   *lc;

	if (!policy->filter_funcs_known)
		return;
	foreach(lc, ttl_filter_functions(expr))
	{
		Oid			funcid = lfirst_oid(lc);
		bool		known = list_member_oid(also, funcid) ||
			get_func_namespace(funcid) == PG_CATALOG_NAMESPACE ||
			(OidIsValid(ext) && getExtensionOfObject(ProcedureRelationId, funcid) == ext);

		for (int i = 0; !known && i < policy->nfilter_funcs; i++)
			known = policy->filter_funcs[i] == funcid;
		if (!known)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("the filter of the policy on column \"%s\" now calls %s, which it did not call when it was made",
							policy->column_name, format_procedure_qualified(funcid)),
					 errdetail("A function created since matches its arguments better than the one it called."),
					 errhint("Make the policy again with ttl_create_index() if that function is the one meant.")));
	}
}

/*
 * ttl_filter_deparse
 *		The text a filter is stored as (see the top of the file).
 */
char *
ttl_filter_deparse(Relation rel, Node *expr)
{
	int			nestlevel = ttl_parse_env_enter();
	char	   *result;

	result = deparse_expression(expr,
								deparse_context_for(RelationGetRelationName(rel),
													RelationGetRelid(rel)),
								false, false);
	ttl_parse_env_leave(nestlevel);
	return result;
}
