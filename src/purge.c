/*-------------------------------------------------------------------------
 *
 * purge.c
 *	  The purge engine.  One batch of one policy:
 *
 *	  1. take the table's lock without waiting (else: come back later);
 *	  2. become the table owner, in a restricted security context with a
 *		 safe search_path and a short lock_timeout;
 *	  3. range-scan the btree on the TTL column from where the last batch
 *		 stopped up to the cutoff fixed when the pass began, collecting the
 *		 TIDs of visible rows, skipping rows another transaction is
 *		 changing or has locked, until the row limit or the time limit;
 *	  4. delete exactly those row versions.
 *
 * Step 4 has two paths, chosen per batch (ttl_direct_delete_ok):
 *
 *	- direct: when a DELETE by the owner would run no user code and apply no
 *	  policy (no DELETE triggers, which includes the foreign keys that point
 *	  at the table, no rules, no row-level security on the owner), each row
 *	  version the scan found is deleted at once with table_tuple_delete(),
 *	  without waiting.  That is what the executor's DELETE does underneath,
 *	  WAL, TOAST, replica identity and serializable checks included, minus
 *	  the planning and the second visit to each row.  A version that another
 *	  transaction has locked or is changing is skipped (TM_BeingModified); one
 *	  that was updated or deleted since the scan saw it is left alone
 *	  (TM_Updated / TM_Deleted): the next pass looks at the new version, so a
 *	  row moved into the future by a concurrent UPDATE is kept.
 *	- executor: otherwise, the TIDs are collected (skipping busy rows) and
 *	  deleted by a prepared DELETE by TID, with the cutoff repeated in the
 *	  WHERE clause so that EvalPlanQual re-checks a concurrently updated row.
 *	  Triggers, foreign-key actions, rules and row-level security then
 *	  behave exactly as for a DELETE by the owner.
 *
 * The caller owns the transaction: the worker runs each batch in its own,
 * ttl_runner() runs all batches in the caller's.  The batch's locks are held
 * until that transaction ends (ttl_probe_oldest, a read-only look for the
 * stats view, releases its own at once).
 *
 * Why a DELETE by TID and not "DELETE ... WHERE ts < cutoff LIMIT n": the
 * rows a batch deletes are the ones its own scan found, so the planner never
 * chooses how to find them (no sequential scan per batch), and the next
 * batch resumes from the last key instead of re-reading the index entries
 * of rows already deleted.  On the executor path the DELETE plan is generic
 * (prepared for each batch); its TID array parameter makes it a TID scan.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_am.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "common/int.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/date.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "ttl_index.h"

/* a new pass starts with this many rows per batch, then adapts */
#define TTL_FIRST_BATCH_ROWS	1000
#define TTL_MIN_BATCH_ROWS		16
/* look at the clock every this many index entries */
#define TTL_CLOCK_EVERY			64

/*
 * Everything a batch holds open, so that one cleanup path releases it.
 */
typedef struct TtlOpenTable
{
	Relation	rel;
	Relation	irel;
	Oid			typid;			/* the key's type */
	char	   *relname;		/* qualified, for messages */
	TtlTarget	tgt;			/* the policy applied to rel */
	EState	   *estate;			/* for the filter, when there is one */
	ExprState  *filter;
} TtlOpenTable;

typedef struct TtlErrorContext
{
	const char *relname;
	const char *colname;
} TtlErrorContext;

/*
 * ttl_purge_errcontext
 *		Name the table and column in every error raised during a batch.
 */
static void
ttl_purge_errcontext(void *arg)
{
	TtlErrorContext *ctx = (TtlErrorContext *) arg;

	errcontext("while purging expired rows of table %s, column %s",
			   ctx->relname, ctx->colname);
}

/*
 * ttl_btree_proc
 *		The comparison function of the column type's default btree opfamily
 *		for a strategy.
 */
static RegProcedure
ttl_btree_proc(Relation irel, Oid typid, StrategyNumber strategy)
{
	Oid			opfamily = irel->rd_opfamily[0];
	Oid			opno;

	opno = get_opfamily_member(opfamily, typid, typid, strategy);
	if (!OidIsValid(opno))
		elog(ERROR, "missing operator %d(%u,%u) in opfamily %u",
			 strategy, typid, typid, opfamily);
	return get_opcode(opno);
}

/*
 * ttl_open_table
 *		Lock and open a table of the policy (its own, or one partition) and
 *		the index that serves it, without waiting.
 *
 * Returns the outcome: TTL_BATCH_MORE when both are open, TTL_BATCH_LOCKED
 * when a lock was not free, TTL_BATCH_GONE when the table or a column is
 * gone, TTL_BATCH_NO_INDEX when it has no usable index.  Raises an error
 * when the policy cannot work (column type changed), or with noerror
 * returns TTL_BATCH_GONE.  `lockmode` is the table lock: RowExclusiveLock
 * to purge, AccessShareLock to look.
 */
static TtlBatchOutcome
ttl_open_table(TtlPolicy *policy, Oid relid, TtlOpenTable *t, LOCKMODE lockmode,
			   bool noerror)
{
	Oid			indexoid;

	memset(t, 0, sizeof(TtlOpenTable));

	if (!ConditionalLockRelationOid(relid, lockmode))
		return TTL_BATCH_LOCKED;
	t->rel = try_relation_open(relid, NoLock);
	if (t->rel == NULL)
	{
		UnlockRelationOid(relid, lockmode);
		return TTL_BATCH_GONE;
	}
	t->relname = ttl_qualified_relname(relid);

	if (t->rel->rd_rel->relkind != RELKIND_RELATION ||
		t->rel->rd_rel->relam != HEAP_TABLE_AM_OID)
	{
		if (noerror)
			return TTL_BATCH_GONE;
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an ordinary heap table",
						RelationGetRelationName(t->rel))));
	}

	if (ttl_target_resolve(policy, t->rel, &t->tgt, noerror) != TTL_TARGET_OK)
		return TTL_BATCH_GONE;
	t->typid = t->tgt.keytype;

	/*
	 * No usable index is a state, not a failed batch: during a restore the
	 * policy catalog is loaded before the indexes are built, and a worker
	 * woken by it must not count errors.  The caller says so (see
	 * ttl_purge_no_index_error).
	 */
	indexoid = ttl_find_index(&t->tgt);
	if (!OidIsValid(indexoid))
		return TTL_BATCH_NO_INDEX;
	if (!ConditionalLockRelationOid(indexoid, AccessShareLock))
		return TTL_BATCH_LOCKED;
	t->irel = index_open(indexoid, NoLock);

	return TTL_BATCH_MORE;
}

/*
 * ttl_filter_begin
 *		Prepare the target's filter for evaluation on the rows the scan
 *		finds.  Runs as the table owner (the filter may call the owner's
 *		functions).
 */
static void
ttl_filter_begin(TtlOpenTable *t)
{
	if (t->tgt.filter == NULL)
		return;
	t->estate = CreateExecutorState();
	t->filter = ExecPrepareExpr(t->tgt.filter, t->estate);
}

/*
 * ttl_filter_passes
 *		Whether the row in the slot passes the filter (true without one).
 */
static bool
ttl_filter_passes(TtlOpenTable *t, TupleTableSlot *slot)
{
	ExprContext *econtext;
	bool		isnull;
	Datum		d;

	if (t->filter == NULL)
		return true;
	econtext = GetPerTupleExprContext(t->estate);
	econtext->ecxt_scantuple = slot;
	d = ExecEvalExprSwitchContext(t->filter, econtext, &isnull);
	ResetExprContext(econtext);
	return !isnull && DatumGetBool(d);
}

/*
 * ttl_close_table
 *		Close what ttl_open_table opened; locks stay until transaction end
 *		unless `lockmode` says which to release.
 */
static void
ttl_close_table(TtlOpenTable *t, LOCKMODE lockmode)
{
	if (t->estate)
		FreeExecutorState(t->estate);
	if (t->irel)
		index_close(t->irel, lockmode == NoLock ? NoLock : AccessShareLock);
	if (t->rel)
		table_close(t->rel, lockmode);
}

/*
 * ttl_purge_no_index_error
 *		The error for a policy whose table has no usable index, for those
 *		who report it as one (ttl_runner(), the worker's once-only warning).
 */
void
ttl_purge_no_index_error(TtlPolicy *policy, int elevel)
{
	char	   *relname = ttl_qualified_relname(policy->relid);

	ereport(elevel,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("table %s has no usable btree index on column \"%s\"",
					relname ? relname : "?", policy->column_name),
			 errdetail("Its expired rows are not deleted until there is one."),
			 errhint("Call ttl_create_index() again to create the index.")));
}

/*
 * ttl_tuple_busy
 *		Whether another transaction is updating, deleting or locking the row
 *		version in the slot right now.  Such rows are skipped, not waited
 *		for: the next pass gets them.
 */
static bool
ttl_tuple_busy(TupleTableSlot *slot)
{
	BufferHeapTupleTableSlot *bslot = (BufferHeapTupleTableSlot *) slot;
	TM_Result	res;

	Assert(TTS_IS_BUFFERTUPLE(slot));
	LockBuffer(bslot->buffer, BUFFER_LOCK_SHARE);
	res = HeapTupleSatisfiesUpdate(bslot->base.tuple, GetCurrentCommandId(false),
								   bslot->buffer);
	LockBuffer(bslot->buffer, BUFFER_LOCK_UNLOCK);
	return res == TM_BeingModified;
}

/*
 * ttl_publications_exist
 *		Whether the current database has any publication, looked up once per
 *		transaction (a CREATE PUBLICATION commits before a later transaction
 *		sees it here).
 */
bool
ttl_publications_exist(void)
{
	static LocalTransactionId checked_in = InvalidLocalTransactionId;
	static bool exist = false;
	Relation	pubrel;
	SysScanDesc scan;

	if (checked_in == TTL_MY_LXID)
		return exist;

	pubrel = table_open(PublicationRelationId, AccessShareLock);
	scan = systable_beginscan(pubrel, InvalidOid, false, NULL, 0, NULL);
	exist = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(pubrel, AccessShareLock);
	checked_in = TTL_MY_LXID;
	return exist;
}

/*
 * ttl_direct_delete_ok
 *		Whether this batch may delete row versions itself (see the top of the
 *		file): true when a DELETE by the current user, the table owner, would
 *		fire no trigger, meet no rule and apply no row-level security, and
 *		the policy's action is a plain delete.  A filter does not matter: the
 *		scan evaluates it on each row.  Checks the owner's DELETE and SELECT
 *		rights as the executor would (SELECT on the filter's columns is
 *		checked by the executor path only).
 */
static bool
ttl_direct_delete_ok(TtlPolicy *policy, Relation rel, AttrNumber attnum)
{
	TriggerDesc *trig = rel->trigdesc;
	AclResult	aclresult;

	if (policy->action != TTL_ACTION_DELETE || rel->rd_rel->relhasrules)
		return false;
	if (trig != NULL &&
		(trig->trig_delete_before_row || trig->trig_delete_after_row ||
		 trig->trig_delete_instead_row || trig->trig_delete_before_statement ||
		 trig->trig_delete_after_statement || trig->trig_delete_old_table))
		return false;
	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, false) == RLS_ENABLED)
		return false;

	/*
	 * As the executor does for any DELETE: a table published with deletes
	 * must have a replica identity, or the subscribers would miss them.
	 * Building a table's publication data costs a few catalog lookups, which
	 * ttl_runner() would pay for every table of a pass: skip it when the
	 * database has no publication at all.
	 */
	if (ttl_publications_exist())
		CheckCmdReplicaIdentity(rel, CMD_DELETE);

	/* DELETE on the table, SELECT on the column (or the whole table) */
	aclresult = pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_DELETE);
	if (aclresult == ACLCHECK_OK &&
		pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclresult = pg_attribute_aclcheck(RelationGetRelid(rel), attnum,
										  GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, RelationGetRelationName(rel));
	return true;
}

/*
 * ttl_action_plan
 *		The executor path's statement (see ttl_target_action_sql): DELETE,
 *		archive or soft delete by TID, with the cutoff and filter repeated.
 *
 * Prepared for each batch (planning is a fraction of a millisecond) rather
 * than saved: a saved plan would keep the table and column names and the
 * cutoff's type from when it was made, and a rename or ALTER COLUMN ... TYPE
 * in between would break it.  Prepared with enable_seqscan off and as a
 * generic plan, so that it is a TID scan whatever the statistics say.
 */
static SPIPlanPtr
ttl_action_plan(TtlPolicy *policy, TtlOpenTable *t)
{
	char	   *sql = ttl_target_action_sql(policy, &t->tgt);
	Oid			argtypes[3];
	SPIPlanPtr	plan;
	int			nestlevel;

	argtypes[0] = TIDARRAYOID;
	argtypes[1] = t->typid;
	argtypes[2] = INTERVALOID;

	nestlevel = NewGUCNestLevel();
	(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	plan = SPI_prepare_cursor(sql, 3, argtypes, CURSOR_OPT_GENERIC_PLAN);
	AtEOXact_GUC(true, nestlevel);
	if (plan == NULL)
		elog(ERROR, "could not prepare the purge of %s: %s",
			 t->relname, SPI_result_code_string(SPI_result));
	pfree(sql);
	return plan;
}

/* how many index entries a look for the next expiry reads past the filter */
#define TTL_PROBE_MAX_ROWS		1000

/*
 * ttl_probe_from
 *		The first visible key at or after `from` (or the first at all when
 *		!have_from) of a row that passes the filter, as the instant it
 *		expires.  Returns TTL_PROBE_FOUND, TTL_PROBE_EMPTY when there is no
 *		such row, or TTL_PROBE_UNKNOWN when the first TTL_PROBE_MAX_ROWS
 *		entries were all rows the filter rejects.  The filter must have been
 *		prepared.
 */
static TtlProbeResult
ttl_probe_from(TtlPolicy *policy, TtlOpenTable *t, bool have_from, Datum from,
			   TimestampTz *expires_at)
{
	ScanKeyData key;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	TtlProbeResult found = TTL_PROBE_UNKNOWN;

	if (have_from)
		ScanKeyInit(&key, 1, BTGreaterEqualStrategyNumber,
					ttl_btree_proc(t->irel, t->typid, BTGreaterEqualStrategyNumber),
					from);
	else
	{
		ScanKeyEntryInitialize(&key, SK_ISNULL | SK_SEARCHNOTNULL, 1,
							   InvalidStrategy, InvalidOid, InvalidOid,
							   InvalidOid, (Datum) 0);
	}

	slot = table_slot_create(t->rel, NULL);
	scan = ttl_index_beginscan(t->rel, t->irel, GetActiveSnapshot(), 1, 0);
	scan->xs_want_itup = true;
	index_rescan(scan, &key, 1, NULL, 0);
	for (int n = 0; n < TTL_PROBE_MAX_ROWS; n++)
	{
		bool		isnull;
		Datum		k;

		if (!index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			found = TTL_PROBE_EMPTY;
			break;
		}
		if (!ttl_filter_passes(t, slot))
			continue;
		k = index_getattr(scan->xs_itup, 1, scan->xs_itupdesc, &isnull);
		if (!isnull)
		{
			*expires_at = ttl_key_expiry(t->typid, policy->unit_ns, k,
										 policy->expire_after);
			found = TTL_PROBE_FOUND;
		}
		else
			found = TTL_PROBE_EMPTY;	/* NULL keys sort last: none after */
		break;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	return found;
}

/*
 * ttl_set_resume
 *		Remember the key the next batch resumes from, across transactions.
 */
static void
ttl_set_resume(TtlPurgeState *state, Datum key, bool byval, int16 typlen)
{
	if (state->have_resume && !state->resume_byval)
		pfree(DatumGetPointer(state->resume_key));
	if (byval)
		state->resume_key = key;
	else
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		state->resume_key = datumCopy(key, false, typlen);
		MemoryContextSwitchTo(old);
	}
	state->resume_byval = byval;
	state->have_resume = true;
}

/*
 * ttl_clear_resume
 *		Forget the resume key (a new pass, or a new partition).
 */
static void
ttl_clear_resume(TtlPurgeState *state)
{
	if (state->have_resume && !state->resume_byval)
		pfree(DatumGetPointer(state->resume_key));
	state->have_resume = false;
	state->resume_key = (Datum) 0;
	state->resume_byval = true;
}

/*
 * ttl_pass_begin
 *		Start a pass: fix its cutoff time, forget where the last pass ended.
 */
void
ttl_pass_begin(TtlPolicy *policy, TtlPurgeState *state, TimestampTz now)
{
	state->in_pass = true;
	state->now = now;
	state->target = InvalidOid;
	state->drops_done = false;
	state->leaves_next_expiry = 0;
	state->next_expiry_unknown = false;
	ttl_clear_resume(state);
	state->pass_rows = 0;
	state->pass_batches = 0;
	state->pass_skipped_locked = 0;
	if (state->row_limit <= 0)
		state->row_limit = TTL_FIRST_BATCH_ROWS;
}

/*
 * Acting as the owner of the policy's table (see ttl_become_owner).
 */
typedef struct TtlOwnerSave
{
	Oid			userid;
	int			sec_context;
	int			nestlevel;
} TtlOwnerSave;

/*
 * ttl_become_owner
 *		From here on act as the owner of the policy's table, as VACUUM does:
 *		triggers, foreign-key actions, default expressions and the filter run
 *		with the owner's rights, never ours.  search_path holds only
 *		pg_catalog and pg_temp so that nobody else's objects can be slipped
 *		into the owner's code; lock_timeout bounds any lock the statement
 *		itself takes.  For a partitioned table, the owner of the partitioned
 *		table: the role that made the policy.
 */
static void
ttl_become_owner(Oid relid, TtlOwnerSave *save)
{
	HeapTuple	tup;
	Oid			owner;
	char		timeout[32];

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);

	GetUserIdAndSecContext(&save->userid, &save->sec_context);
	SetUserIdAndSecContext(owner, save->sec_context | SECURITY_RESTRICTED_OPERATION);
	save->nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	snprintf(timeout, sizeof(timeout), "%d", ttl_lock_timeout);
	(void) set_config_option("lock_timeout", timeout, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

static void
ttl_restore_user(TtlOwnerSave *save)
{
	AtEOXact_GUC(false, save->nestlevel);
	SetUserIdAndSecContext(save->userid, save->sec_context);
}

/*
 * ttl_purge_table_batch
 *		One batch on one table: the policy's, or a partition of it.
 */
static void
ttl_purge_table_batch(TtlPolicy *policy, TtlPurgeState *state, Oid relid,
					  TtlBatchResult *result)
{
	TtlOpenTable t;
	TtlErrorContext errctx;
	ErrorContextCallback errcallback;
	TtlOwnerSave save;
	instr_time	start;
	instr_time	now;
	int32		batch_size = policy->batch_size > 0 ? policy->batch_size : ttl_batch_size;
	int32		limit;
	ItemPointerData *tids;
	int			ntids = 0;
	int64		seen = 0;
	bool		stopped = false;
	bool		have_last = false;
	Datum		last_key = (Datum) 0;
	Datum		cutoff;
	ScanKeyData keys[2];
	int			nkeys = 0;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	bool		direct;
	CommandId	cid = InvalidCommandId;
	bool		key_byval;
	int16		key_typlen;
	MemoryContext keycxt = NULL;

	INSTR_TIME_SET_CURRENT(start);

	result->outcome = ttl_open_table(policy, relid, &t, RowExclusiveLock, false);
	if (result->outcome != TTL_BATCH_MORE)
	{
		ttl_close_table(&t, NoLock);
		return;
	}

	errctx.relname = t.relname;
	errctx.colname = policy->column_name;
	errcallback.callback = ttl_purge_errcontext;
	errcallback.arg = &errctx;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	ttl_become_owner(policy->relid, &save);
	PushActiveSnapshot(GetTransactionSnapshot());

	direct = ttl_direct_delete_ok(policy, t.rel, t.tgt.attnum);
	if (direct)
		cid = GetCurrentCommandId(true);
	ttl_filter_begin(&t);
	get_typlenbyval(t.typid, &key_typlen, &key_byval);
	if (!key_byval)
		keycxt = AllocSetContextCreate(CurrentMemoryContext, "ttl_index key",
									   ALLOCSET_SMALL_SIZES);

	/* 3. the range scan (and, on the direct path, 4. the deletes) */
	limit = Min(Max(state->row_limit, TTL_MIN_BATCH_ROWS), batch_size);
	tids = direct ? NULL : palloc(sizeof(ItemPointerData) * limit);
	cutoff = ttl_cutoff(t.typid, policy->unit_ns, state->now, policy->expire_after);
	if (state->have_resume)
		ScanKeyInit(&keys[nkeys++], 1, BTGreaterEqualStrategyNumber,
					ttl_btree_proc(t.irel, t.typid, BTGreaterEqualStrategyNumber),
					state->resume_key);
	ScanKeyInit(&keys[nkeys++], 1, BTLessStrategyNumber,
				ttl_btree_proc(t.irel, t.typid, BTLessStrategyNumber),
				cutoff);

	slot = table_slot_create(t.rel, NULL);
	scan = ttl_index_beginscan(t.rel, t.irel, GetActiveSnapshot(), nkeys, 0);
	scan->xs_want_itup = true;
	index_rescan(scan, keys, nkeys, NULL, 0);

	while (ntids < limit)
	{
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		if (!index_getnext_slot(scan, ForwardScanDirection, slot))
			break;
		seen++;
		last_key = index_getattr(scan->xs_itup, 1, scan->xs_itupdesc, &isnull);
		have_last = !isnull;
		if (have_last && !key_byval)
		{
			/* the index tuple goes with the scan: keep a copy */
			MemoryContextReset(keycxt);
			last_key = datumCopy(last_key, false, key_typlen);
		}

		if (!ttl_filter_passes(&t, slot))
			;					/* not a row this policy may touch */
		else if (direct)
		{
			TM_FailureData tmfd;

			if (ntids == 0)
				ttl_yield_own_xid();
			/* the visible version of the row, never waiting for it */
			switch (table_tuple_delete(t.rel, &slot->tts_tid, cid,
									   GetActiveSnapshot(), InvalidSnapshot,
									   false, &tmfd, false))
			{
				case TM_Ok:
					result->deleted++;
					break;
				case TM_BeingModified:
					result->skipped_locked++;
					break;
				default:
					/* updated or deleted since our snapshot: not ours */
					break;
			}
			ntids++;
		}
		else if (ttl_tuple_busy(slot))
			result->skipped_locked++;
		else
			tids[ntids++] = slot->tts_tid;

		if (seen % TTL_CLOCK_EVERY == 0)
		{
			INSTR_TIME_SET_CURRENT(now);
			INSTR_TIME_SUBTRACT(now, start);
			if (INSTR_TIME_GET_MILLISEC(now) >= ttl_batch_time)
			{
				stopped = true;
				break;
			}
		}
	}
	if (ntids >= limit)
		stopped = true;
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);

	/* 4. the action, through the executor */
	if (!direct && ntids > 0)
	{
		SPIPlanPtr	plan = ttl_action_plan(policy, &t);
		Datum	   *tiddatums = palloc(sizeof(Datum) * ntids);
		Datum		values[3];
		Interval   *span = palloc0(sizeof(Interval));
		int			ret;

		for (int i = 0; i < ntids; i++)
			tiddatums[i] = PointerGetDatum(&tids[i]);
		values[0] = PointerGetDatum(construct_array(tiddatums, ntids, TIDOID,
													sizeof(ItemPointerData), false,
													TYPALIGN_SHORT));
		values[1] = cutoff;
		span->time = policy->expire_after;
		values[2] = IntervalPGetDatum(span);
		ttl_yield_own_xid();
		ret = SPI_execute_plan(plan, values, NULL, false, 0);
		if (ret != SPI_OK_DELETE && ret != SPI_OK_UPDATE && ret != SPI_OK_INSERT)
			elog(ERROR, "purge of %s failed: %s", t.relname,
				 SPI_result_code_string(ret));
		result->deleted = SPI_processed;
		if (policy->action == TTL_ACTION_ARCHIVE)
			result->archived = SPI_processed;
		else if (policy->action == TTL_ACTION_SOFT_DELETE)
			result->soft_deleted = SPI_processed;
		/* ttl_runner() runs many batches in one SPI connection */
		SPI_freeplan(plan);
		pfree(DatumGetPointer(values[0]));
		pfree(tiddatums);
	}
	if (tids != NULL)
		pfree(tids);

	/* where the next batch resumes, or when the next row expires */
	if (stopped)
	{
		result->outcome = TTL_BATCH_MORE;
		/* no progress at all: give up on this pass rather than spin */
		if (have_last && state->have_resume && result->deleted == 0 &&
			datumIsEqual(last_key, state->resume_key, key_byval, key_typlen))
			result->outcome = TTL_BATCH_DONE;
	}
	else
		result->outcome = TTL_BATCH_DONE;
	if (have_last)
		ttl_set_resume(state, last_key, key_byval, key_typlen);
	if (result->outcome == TTL_BATCH_DONE)
	{
		switch (ttl_probe_from(policy, &t, true, cutoff, &state->next_expiry))
		{
			case TTL_PROBE_FOUND:
				break;
			case TTL_PROBE_EMPTY:
				state->next_expiry = 0;
				break;
			case TTL_PROBE_UNKNOWN:
				/* the worker must then look again at every max_sleep */
				state->next_expiry = 0;
				state->next_expiry_unknown = true;
				break;
		}
	}

	PopActiveSnapshot();
	ttl_restore_user(&save);
	error_context_stack = errcallback.previous;
	ttl_close_table(&t, NoLock);
	if (keycxt)
		MemoryContextDelete(keycxt);

	/* the next batch aims at ttl_index.batch_time */
	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	result->elapsed_ms = INSTR_TIME_GET_MILLISEC(now);
	if (ntids > 0)
	{
		double		per_row = Max(result->elapsed_ms, 0.001) / ntids;
		double		target = ttl_batch_time / per_row;

		state->row_limit = (int32) Min(Max(target, TTL_MIN_BATCH_ROWS), batch_size);
	}
}

/*
 * ttl_purge_partitioned_batch
 *		One batch of a pass over a partitioned table.  The pass first drops
 *		the partitions that hold only expired rows (one batch), then deletes
 *		rows partition by partition, in OID order, each partition as an
 *		ordinary table.  Partitions are listed anew at each step, so ones
 *		created or attached during the pass are included.
 */
static void
ttl_purge_partitioned_batch(TtlPolicy *policy, TtlPurgeState *state,
							TtlBatchResult *result)
{
	if (!state->drops_done)
	{
		TtlOwnerSave save;
		instr_time	start;
		instr_time	now;

		INSTR_TIME_SET_CURRENT(start);
		ttl_become_owner(policy->relid, &save);
		result->partitions_dropped = ttl_partition_drop_expired(policy, state->now);
		ttl_restore_user(&save);
		state->drops_done = true;
		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		result->elapsed_ms = INSTR_TIME_GET_MILLISEC(now);
		result->outcome = TTL_BATCH_MORE;
		if (result->partitions_dropped > 0)
			return;
		/* nothing dropped: go on to the rows in the same transaction */
	}

	for (;;)
	{
		TimestampTz leaf_next;

		if (!OidIsValid(state->target))
		{
			state->target = ttl_partition_next_leaf(policy->relid, InvalidOid);
			ttl_clear_resume(state);
		}
		if (!OidIsValid(state->target))
		{
			/* no partition at all */
			result->outcome = TTL_BATCH_DONE;
			state->next_expiry = 0;
			return;
		}

		ttl_purge_table_batch(policy, state, state->target, result);
		if (result->outcome != TTL_BATCH_DONE && result->outcome != TTL_BATCH_GONE)
			return;

		/* this partition is done (or gone): on to the next */
		leaf_next = result->outcome == TTL_BATCH_DONE ? state->next_expiry : 0;
		if (leaf_next != 0 &&
			(state->leaves_next_expiry == 0 || leaf_next < state->leaves_next_expiry))
			state->leaves_next_expiry = leaf_next;
		state->target = ttl_partition_next_leaf(policy->relid, state->target);
		ttl_clear_resume(state);
		if (!OidIsValid(state->target))
		{
			result->outcome = TTL_BATCH_DONE;
			state->next_expiry = state->leaves_next_expiry;
			return;
		}
		if (result->deleted > 0 || result->skipped_locked > 0)
		{
			/* the batch did work: the next partition gets the next batch */
			result->outcome = TTL_BATCH_MORE;
			return;
		}
		/* an empty partition: try the next one in this batch */
	}
}

/*
 * ttl_purge_batch
 *		Run one batch of a policy's current pass.  Must be called inside a
 *		transaction, between SPI_connect() and SPI_finish().
 */
void
ttl_purge_batch(TtlPolicy *policy, TtlPurgeState *state, TtlBatchResult *result)
{
	memset(result, 0, sizeof(TtlBatchResult));

	/* the direct path bypasses the executor's check of this */
	PreventCommandIfReadOnly("DELETE");

	if (get_rel_relkind(policy->relid) == RELKIND_PARTITIONED_TABLE)
		ttl_purge_partitioned_batch(policy, state, result);
	else
		ttl_purge_table_batch(policy, state, policy->relid, result);

	state->pass_rows += result->deleted;
	state->pass_batches++;
	state->pass_skipped_locked += result->skipped_locked;
	if (result->outcome != TTL_BATCH_MORE)
		state->in_pass = false;
}

/*
 * ttl_probe_look
 *		Open one table of the policy without waiting, read when its oldest
 *		row (that passes the filter) expires, and release the locks.
 */
static TtlProbeResult
ttl_probe_look(TtlPolicy *policy, Oid relid, TimestampTz *expires_at)
{
	TtlOpenTable t;
	TtlProbeResult result = TTL_PROBE_UNKNOWN;
	TtlOwnerSave save;

	if (ttl_open_table(policy, relid, &t, AccessShareLock, true) == TTL_BATCH_MORE)
	{
		ttl_become_owner(policy->relid, &save);
		ttl_filter_begin(&t);
		result = ttl_probe_from(policy, &t, false, (Datum) 0, expires_at);
		ttl_restore_user(&save);
	}
	/* in a subtransaction too: a committed one would hand its locks up */
	ttl_close_table(&t, AccessShareLock);
	return result;
}

/*
 * ttl_probe_table
 *		ttl_probe_oldest for one table.  A filter is the owner's code, and
 *		can fail on a row: then the look is made in a subtransaction, so
 *		that one table cannot make the whole stats view fail.  Without a
 *		filter nothing in it raises an error.
 */
static TtlProbeResult
ttl_probe_table(TtlPolicy *policy, Oid relid, TimestampTz *expires_at)
{
	volatile TtlProbeResult result = TTL_PROBE_UNKNOWN;
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	if (policy->filter == NULL)
		return ttl_probe_look(policy, relid, expires_at);

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		result = ttl_probe_look(policy, relid, expires_at);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		result = TTL_PROBE_UNKNOWN;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return result;
}

/*
 * ttl_probe_oldest
 *		When the oldest row of a policy expires (or expired), read from the
 *		first entry of its index that passes its filter; for a partitioned
 *		table, the earliest over its partitions.  Never waits for a lock: a
 *		locked table is TTL_PROBE_UNKNOWN.  Must be called inside a
 *		transaction with an active snapshot.  Errors (a filter that fails)
 *		propagate.
 *
 *		The locks are released before returning: ttl_index_stats probes
 *		every policy in one transaction, and holding two locks per policy
 *		until its end would overflow the lock table with thousands of
 *		policies (max_locks_per_transaction).
 */
TtlProbeResult
ttl_probe_oldest(TtlPolicy *policy, TimestampTz *expires_at)
{
	TtlProbeResult result = TTL_PROBE_EMPTY;
	Oid			leaf = InvalidOid;

	if (get_rel_relkind(policy->relid) != RELKIND_PARTITIONED_TABLE)
		return ttl_probe_table(policy, policy->relid, expires_at);

	while (OidIsValid(leaf = ttl_partition_next_leaf(policy->relid, leaf)))
	{
		TimestampTz at;

		switch (ttl_probe_table(policy, leaf, &at))
		{
			case TTL_PROBE_FOUND:
				if (result != TTL_PROBE_FOUND || at < *expires_at)
					*expires_at = at;
				result = TTL_PROBE_FOUND;
				break;
			case TTL_PROBE_EMPTY:
				break;
			case TTL_PROBE_UNKNOWN:
				return TTL_PROBE_UNKNOWN;
		}
	}
	return result;
}
