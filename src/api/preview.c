/*-------------------------------------------------------------------------
 *
 * preview.c
 *	  ttl_preview(table regclass): what the next pass of each policy of a
 *	  table would do, found by the engine's own pass in a mode that counts
 *	  instead of acting, and changes nothing.
 *
 * The preview runs a pass as ttl_runner() does (pass.c, batch.c): the same
 * cutoff from the same clock reading for every target (the policy's unit
 * and zone, expiry.c), the same targets (partitions, children), the same
 * cap (cap.c), the same index scan, held rows and filter (the owner's
 * expression, with "not yet soft-deleted" and "not yet anonymized",
 * targets.c).  Where the pass would act, by its statement or by deleting
 * each row it finds, the preview runs the statement's own selection as a
 * count (statement.c, ttl_statement_preview): the rows still expired, still
 * passing the filter, on a parent restricted to the leaf, and for a delete
 * or an archive not still referenced by a foreign key.  So:
 *
 *	rows			the rows the next pass would delete, archive, soft-delete
 *					or anonymize, whether by age or by the cap;
 *	rows_capped		of them, those taken for the cap (max_rows) before
 *					they expired;
 *	rows_kept		expired rows the pass finds and leaves in place, as a
 *					foreign key (NO ACTION, RESTRICT) still references them;
 *	partitions		partitions the pass would drop whole (partition.c);
 *					their rows are in rows;
 *	oldest, newest	the least and greatest key of the rows, as text, with
 *					the instant each expires (oldest_expiry, newest_expiry;
 *					a row taken for the cap may expire later, or never);
 *	window_open		whether the purge window is open now; if not,
 *					next_window is when the next opens (the pass waits for
 *					it; the rows are counted all the same);
 *	enabled			a paused policy has no next pass until resumed; its
 *					rows are counted all the same.
 *
 * What it cannot see: a DELETE or UPDATE trigger or rule that would refuse
 * or change a row (a SELECT fires none), rows the worker holds in its own
 * memory after they failed on their own (held.c: the preview starts with
 * none held), and rows another transaction has locked at that moment (the
 * pass steps over them, the preview counts them).  A table locked
 * exclusively at that moment is left out with a NOTICE, as a pass leaves it.
 *
 * Who may call it: the table's owner, a member of the owning role or a
 * superuser (as ttl_create_index()); anyone else gets a permission error.
 * As whom it runs: the user code it reaches (the filter's functions, the
 * "not yet anonymized" condition, the key's expression, row-level security
 * forced on the owner) runs as the table owner in a security-restricted
 * operation with the owner's settings, as the worker runs it (owner.c,
 * batch.c), never with the caller's rights, so that a superuser previewing
 * another role's table runs that role's functions as that role.  The
 * statement is parsed in the pinned parse environment: the caller's
 * search_path does not matter.
 *
 * It writes nothing: no lock stronger than ACCESS SHARE, no transaction
 * id, no statistics (ttl_index_stats is not told); it works in a read-only
 * transaction.  Locking: ACCESS SHARE on the table, its partitions and
 * index, held until the caller's transaction ends, taken without waiting.
 * Each batch runs in a subtransaction, so that a filter failing on a row
 * holds that row as the worker would (held.c) and the preview goes on;
 * another failure is the preview's error.
 *
 * Memory: in the caller's per-call context; each batch's in a context
 * reset after it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "compat.h"
#include "ttl_index.h"
#include "api/api.h"
#include "engine/engine.h"
#include "engine/batch.h"
#include "policy/policy.h"
#include "env/env.h"

PG_FUNCTION_INFO_V1(ttl_preview);

#define TTL_PREVIEW_COLS	14

/*
 * ttl_preview_batch
 *		One batch of the preview's pass in a subtransaction.  Returns false
 *		when it failed with an error the pass isolates (a row the filter
 *		failed on, now held): the pass goes on.  Any other error is thrown.
 */
static bool
ttl_preview_batch(TtlPolicy *p, TtlPass *pass, TtlBatchResult *result,
				  MemoryContext batchcxt)
{
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *edata = NULL;
	bool		held_one;
	TtlTarget  *held_table;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(batchcxt);
	PG_TRY();
	{
		ttl_pass_batch(p, pass, result);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		/* no break or return in here (DESIGN.md): a flag */
		edata = ttl_error_catch_subxact(batchcxt, owner);
	}
	PG_END_TRY();
	CurrentResourceOwner = owner;
	MemoryContextSwitchTo(batchcxt);
	if (edata == NULL)
		return true;
	if (ttl_error_is_cancel(edata->sqlerrcode) ||
		!ttl_pass_isolate(p, pass, result, edata->sqlerrcode, &held_one,
						  &held_table))
		ReThrowError(edata);
	FreeErrorData(edata);
	return false;
}

/*
 * ttl_preview_policy
 *		Count what the next pass of p would do into *pv (see the top of the
 *		file).
 */
static void
ttl_preview_policy(TtlPolicy *p, TimestampTz now, TtlPreview *pv)
{
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext passcxt = AllocSetContextCreate(cxt, "ttl_index preview",
												  ALLOCSET_DEFAULT_SIZES);
	MemoryContext batchcxt = AllocSetContextCreate(passcxt, "ttl_index preview batch",
												   ALLOCSET_DEFAULT_SIZES);
	TtlHeld    *held = ttl_held_create(passcxt);
	TtlPass    *pass = ttl_pass_begin(p, NULL, held, now, 0, passcxt);
	TtlBatchResult result;

	pass->preview = pv;
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (!ttl_preview_batch(p, pass, &result, batchcxt))
		{
			/* a row held: the pass goes on past it */
			MemoryContextSwitchTo(cxt);
			MemoryContextReset(batchcxt);
			continue;
		}
		MemoryContextSwitchTo(cxt);
		MemoryContextReset(batchcxt);
		if (result.outcome == TTL_BATCH_NO_INDEX)
			ttl_pass_no_index_error(p, ERROR);
		if (result.outcome != TTL_BATCH_MORE)
			break;
	}
	if (result.outcome == TTL_BATCH_LOCKED)
		ereport(NOTICE,
				(errmsg("ttl_index: a table of the policy on %s, column %s, is locked by another transaction and is left out of the preview",
						ttl_qualified_relname(p->relid), p->column_name)));
	ttl_pass_end(pass);
	MemoryContextDelete(passcxt);
}

/*
 * ttl_preview_check
 *		The table must be a table the caller may preview: its owner, a
 *		member of the owning role or a superuser.
 */
static void
ttl_preview_check(Oid relid)
{
	char		relkind = get_rel_relkind(relid);

	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(relid)),
				 errdetail("TTL policies are set on tables only.")));
	if (!ttl_rel_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
}

/*
 * ttl_preview_action
 *		The policy's action as ttl_create_index() names it.
 */
static const char *
ttl_preview_action(TtlPolicy *p)
{
	switch (p->action)
	{
		case TTL_ACTION_DELETE:
			return "delete";
		case TTL_ACTION_ARCHIVE:
			return "archive";
		case TTL_ACTION_SOFT_DELETE:
			return "soft_delete";
		case TTL_ACTION_ANONYMIZE:
			return "anonymize";
	}
	return "?";
}

/*
 * ttl_preview_row
 *		The result row of one policy.
 */
static void
ttl_preview_row(ReturnSetInfo *rsinfo, TtlPolicy *p, TimestampTz now,
				TtlPreview *pv)
{
	Datum		values[TTL_PREVIEW_COLS];
	bool		nulls[TTL_PREVIEW_COLS];
	TimestampTz opens = 0;
	bool		open = ttl_window_find(p, now, &opens, NULL);

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int32GetDatum(p->id);
	values[1] = CStringGetTextDatum(p->column_name);
	values[2] = CStringGetTextDatum(ttl_preview_action(p));
	values[3] = BoolGetDatum(p->enabled);
	values[4] = BoolGetDatum(open);
	values[5] = TimestampTzGetDatum(opens);
	nulls[5] = open || p->windows.n < 0;
	values[6] = Int64GetDatum(pv->rows);
	values[7] = Int64GetDatum(pv->capped);
	values[8] = Int64GetDatum(pv->kept);
	values[9] = Int32GetDatum((int32) pv->partitions);
	nulls[10] = nulls[11] = nulls[12] = nulls[13] = !pv->have_keys;
	if (pv->have_keys)
	{
		Oid			outfunc;
		bool		isvarlena;

		/* a built-in type's output, in the caller's settings */
		getTypeOutputInfo(pv->keytype, &outfunc, &isvarlena);
		values[10] = CStringGetTextDatum(OidOutputFunctionCall(outfunc, pv->oldest));
		values[11] = TimestampTzGetDatum(pv->oldest_expiry);
		values[12] = CStringGetTextDatum(OidOutputFunctionCall(outfunc, pv->newest));
		values[13] = TimestampTzGetDatum(pv->newest_expiry);
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * ttl_preview(table regclass) returns setof record
 *		One row per policy of the table: what its next pass would do, now
 *		(see the top of the file).  Changes nothing.
 */
Datum
ttl_preview(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid;
	List	   *policies;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();
	bool		found = false;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("table must not be null")));
	relid = PG_GETARG_OID(0);
	if (ttl_batch_active())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("ttl_preview() cannot be called inside a purge"),
				 errdetail("A trigger, rule or function that a purge runs called it.")));
	ttl_preview_check(relid);
	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != TTL_PREVIEW_COLS)
		elog(ERROR, "ttl_preview: unexpected number of result columns %d",
			 rsinfo->setDesc->natts);

	ttl_targets_init();
	policies = ttl_load_policies(CurrentMemoryContext);
	foreach(lc, policies)
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);
		TtlPreview	pv;

		if (p->relid != relid)
			continue;
		found = true;
		memset(&pv, 0, sizeof(pv));
		pv.cxt = CurrentMemoryContext;
		ttl_preview_policy(p, now, &pv);
		ttl_preview_row(rsinfo, p, now, &pv);
	}
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s has no TTL policy", ttl_qualified_relname(relid)),
				 errhint("Create one with ttl_create_index().")));
	return (Datum) 0;
}
