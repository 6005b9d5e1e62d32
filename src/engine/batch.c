/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  The batch engine: one batch on one target (a physical table,
 *	  targets.c), from where the target's last batch stopped to its stop
 *	  key or the pass's cutoff, whichever comes first.  The one call is
 *	  ttl_batch_run(); the worker's passes (pass.c), the shared drain's
 *	  slices (drain.c) and ttl_runner() all go through it.  A batch goes
 *	  down the floors once:
 *
 *	  begin   take the table's lock without waiting (else: come back
 *	          later), become the table owner with the owner's settings
 *	          (owner.c), take a snapshot, resolve the target if anything
 *	          changed since (targets.c), lock its index without waiting;
 *	  scan    range-scan the btree from the target's resume position (or
 *	          past its known-dead prefix, skip.c) up to the bound, skipping
 *	          rows another transaction is changing or has locked, rows held
 *	          back (held.c), rows the filter rejects, until the row limit or
 *	          the time limit;
 *	  act     delete exactly the row versions found: on the direct path
 *	          each one as the scan finds it, on the executor path all of
 *	          them by one statement (statement.c);
 *	  finish  record the resume position (key and heap TID), or read when
 *	          the next row expires; leave the owner's identity; adapt the
 *	          pass's row limit to ttl_index.batch_time.
 *
 * What the caller gets back: the outcome (more to do, done, locked, gone,
 * no index), the rows deleted, left and skipped, the last key read (for a
 * drain's split, drain.c), and the rows of the statement in flight (for
 * retrying them in parts when it fails, pass.c).  The position is the
 * target's (resume_key, resume_tid), kept in the pass's memory.
 *
 * The direct path: when a DELETE by the owner would run no user code and
 * apply no policy (no DELETE triggers, which includes the foreign keys that
 * point at the table, no rules, no row-level security on the owner), each
 * row version the scan finds is deleted with table_tuple_delete(), without
 * waiting: what the executor's DELETE does underneath (WAL, TOAST, replica
 * identity, serializable checks), minus the planning and the second visit
 * to each row.  A version another transaction has locked or is changing is
 * skipped (TM_BeingModified); one updated or deleted since the snapshot is
 * left alone (TM_Updated / TM_Deleted): the next pass looks at the new
 * version, so a row moved into the future by a concurrent UPDATE is kept.
 * Archive and soft delete, and every table with triggers, rules or
 * row-level security, take the executor path.
 *
 * Why a statement by TID and not "DELETE ... WHERE ts < cutoff LIMIT n":
 * the rows a batch deletes are the ones its own scan found, so the planner
 * never chooses how to find them, and the next batch resumes from the last
 * key instead of re-reading the index entries of rows already deleted.
 *
 * A preview's batch (pass->preview, api/preview.c) changes nothing: it
 * takes ACCESS SHARE locks, never the direct path, counts a row another
 * transaction has locked, starts no sweep, and where the statement would
 * run it counts the rows the statement's own selection would act on
 * (statement.c, ttl_statement_preview).
 *
 * Errors: a batch raises its errors, with a context line naming the table
 * and column; the caller owns the transaction and decides (pass.c, with
 * held.c) whether the failure is some rows' or the policy's.  While a
 * batch runs, the pass records the row the filter is looking at and the
 * target in hand, for that decision.
 *
 * Memory: the rows a batch collects live in the pass's rows context,
 * emptied by the caller at the next batch (they outlive a failed batch,
 * for retrying in parts, and no longer); the resume keys live in the
 * pass's context; everything else a batch allocates goes with the
 * caller's per-batch context.  Locks: the batch takes its table's,
 * parent's and index's without waiting, and holds them until its
 * transaction ends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "pgtime.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "ttl_index.h"
#include "engine/engine.h"
#include "engine/batch.h"
#include "policy/policy.h"
#include "citus/citus.h"
#include "env/env.h"
#include "shared/shared.h"


/* look at the clock every this many index entries */
#define TTL_CLOCK_EVERY			64
/* the fewest rows a batch is asked for, whatever its speed */
#define TTL_MIN_BATCH_ROWS		16

static void ttl_batch_resume_at(TtlPass *pass, TtlTarget *t, Datum key,
								ItemPointer tid, int64 dups);

/*
 * What a batch holds open, so that one path releases it.
 */
typedef struct TtlBatch
{
	TtlPolicy  *policy;
	TtlPass    *pass;
	TtlTarget  *target;
	Relation	rel;
	Relation	parent;			/* the policy's table, when the target is one
								 * of its partitions or children */
	bool		via_parent;		/* the statement runs on parent (statement.c) */
	pg_tz	   *zone;			/* the policy's, for wall-clock keys */
	Relation	irel;
	bool		as_owner;
	TtlOwnerSave save;
	bool		snapshot;
	ErrorContextCallback errcallback;
	TtlCutoff	cutoff;
	/* the pass's cap moved the cut-off above the expiry's (cap.c) */
	bool		capping;
	TtlCutoff	expiry;			/* the expiry's own cut-off, when capping:
								 * rows at or above its bound are taken for
								 * the cap, and rows below it near a change
								 * of offset too, unless their instant has
								 * expired */
	FmgrInfo	less;			/* the key's "<", when capping */
	EState	   *estate;			/* for the filter, when there is one */
	ExprState  *filter;
	instr_time	start;
} TtlBatch;

#ifdef USE_ASSERT_CHECKING
static bool ttl_batch_moves_on(TtlBatch *b, Datum key, ItemPointer tid);
#endif

static void ttl_batch_check_rights(TtlBatch *b);
static bool ttl_batch_via_parent(TtlBatch *b);

/*
 * ttl_batch_errcontext
 *		Name the table and column in every error raised during a batch.
 */
static void
ttl_batch_errcontext(void *arg)
{
	TtlBatch   *b = (TtlBatch *) arg;

	errcontext("while purging expired rows of table %s, column %s",
			   b->target->relname ? b->target->relname : "?",
			   b->policy->column_name);
}

/* a batch of this process is running (ttl_batch_active) */
static bool InBatch = false;

/* most index entries a scan reads, 0: no bound (ttl_batch_set_entry_limit) */
static int	EntryLimit = 0;

/*
 * ttl_batch_active
 *		Whether a batch of this process is running: user code it runs is
 *		calling back.
 */
bool
ttl_batch_active(void)
{
	return InBatch;
}

/* ----------
 * The resume position
 * ----------
 */

/*
 * ttl_batch_resume_from
 *		Set the position the next batch of the target resumes from, across
 *		transactions (in the pass's memory): every entry of key, the first
 *		included.  A drain's slices start so (drain.c).
 */
void
ttl_batch_resume_from(TtlPass *pass, TtlTarget *t, Datum key)
{
	ttl_batch_resume_at(pass, t, key, NULL, 0);
}

/*
 * ttl_batch_resume_at
 *		Remember where the next batch resumes: past the entry of key at tid,
 *		the dups-th entry of that key the pass read (see ttl_batch_scan);
 *		with no tid, at the first entry of key.
 */
static void
ttl_batch_resume_at(TtlPass *pass, TtlTarget *t, Datum key, ItemPointer tid,
					int64 dups)
{
	if (tid != NULL)
		ItemPointerCopy(tid, &t->resume_tid);
	else
		ItemPointerSetInvalid(&t->resume_tid);
	t->resume_dups = tid != NULL ? dups : 0;
	if (t->have_resume && !t->keybyval)
		pfree(DatumGetPointer(t->resume_key));
	if (t->keybyval)
		t->resume_key = key;
	else
	{
		MemoryContext old = MemoryContextSwitchTo(pass->cxt);

		t->resume_key = datumCopy(key, false, t->keylen);
		MemoryContextSwitchTo(old);
	}
	t->have_resume = true;
}

/* ----------
 * A batch: begin
 * ----------
 */

/* ttl_runner() in a transaction block leaves the caller's alone (below) */
static bool ConstraintsImmediate = true;

/*
 * ttl_batch_set_constraints_immediate
 *		Whether batches set their constraints immediate (see below);
 *		ttl_runner() says so as it starts, from its caller's state.
 */
void
ttl_batch_set_constraints_immediate(bool on)
{
	ConstraintsImmediate = on;
}

/*
 * ttl_batch_constraints_immediate
 *		SET CONSTRAINTS ALL IMMEDIATE for the batch's transaction.
 *
 * The batch runs the owner's code in a security-restricted operation, past
 * whose end PostgreSQL refuses to queue a deferred trigger: a deferred
 * foreign key or constraint trigger on the table would fail every batch,
 * even one that accepts every row.  Fired at the end of the batch's
 * statement instead, as the owner, a trigger's refusal is the refusal of
 * some rows, which the batch holds (held.c) as it holds any other.
 *
 * The worker's batches each have a transaction of their own.  ttl_runner()
 * runs in its caller's: outside a transaction block nothing of the
 * caller's is pending and the state ends with the statement; inside one,
 * the caller's SET CONSTRAINTS and deferred events are the caller's, and
 * stay as they are (a deferred trigger then fails the policy there; the
 * reference says to call it outside a transaction block).
 */
static void
ttl_batch_constraints_immediate(void)
{
	ConstraintsSetStmt *stmt;

	if (!ConstraintsImmediate)
		return;
	stmt = makeNode(ConstraintsSetStmt);
	stmt->constraints = NIL;
	stmt->deferred = false;
	AfterTriggerSetState(stmt);
}

/*
 * ttl_batch_begin
 *		Lock and open the target and its index without waiting, become the
 *		owner, take a snapshot, resolve.  Returns TTL_BATCH_MORE when all is
 *		open, else the outcome (locked, gone, no index) with everything
 *		released by ttl_batch_end.
 */
static TtlBatchOutcome
ttl_batch_begin(TtlBatch *b)
{
	TtlTarget  *t = b->target;
	/* a preview only reads (preview.c) */
	LOCKMODE	lockmode = b->pass->preview ? AccessShareLock : RowExclusiveLock;

	INSTR_TIME_SET_CURRENT(b->start);
	b->zone = ttl_policy_zone(b->policy);

	/*
	 * A partition or child of the policy's table is purged as the owner's
	 * DELETE FROM parent would purge it, which locks the parent first.
	 */
	if (!t->shard && t->relid != b->policy->relid)
	{
		if (!ConditionalLockRelationOid(b->policy->relid, lockmode))
			return TTL_BATCH_LOCKED;
		b->parent = try_relation_open(b->policy->relid, NoLock);
		if (b->parent == NULL)
			return TTL_BATCH_GONE;
	}
	if (!ConditionalLockRelationOid(t->relid, lockmode))
		return TTL_BATCH_LOCKED;
	b->rel = try_relation_open(t->relid, NoLock);
	if (b->rel == NULL)
	{
		UnlockRelationOid(t->relid, lockmode);
		return TTL_BATCH_GONE;
	}
	if (b->rel->rd_rel->relkind != RELKIND_RELATION ||
		b->rel->rd_rel->relam != HEAP_TABLE_AM_OID)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an ordinary heap table",
						RelationGetRelationName(b->rel))));

	b->errcallback.callback = ttl_batch_errcontext;
	b->errcallback.arg = b;
	b->errcallback.previous = error_context_stack;
	error_context_stack = &b->errcallback;

	/*
	 * A shard a logical move or split is copying is published without a
	 * replica identity for that moment: its deletes would fail.  Leave it,
	 * as a locked table is left, until the move is done.
	 */
	if (t->shard && ttl_citus_unpublishable(b->rel))
		return TTL_BATCH_LOCKED;

	/*
	 * A shard a move or split took elsewhere since the pass listed it: its
	 * rows are the new placement's, deleted and counted there.  Gone.
	 */
	if (t->shard && !ttl_citus_placement_current(b->rel))
		return TTL_BATCH_GONE;

	/* from here on, anything that may run user code runs as the owner */
	if (!b->pass->preview)
		ttl_batch_constraints_immediate();
	ttl_owner_enter(ttl_table_owner(b->policy->relid), &b->save);
	b->as_owner = true;
	PushActiveSnapshot(GetTransactionSnapshot());
	b->snapshot = true;

	/*
	 * No usable index is a state, not a failed batch: during a restore the
	 * policy catalog is loaded before the indexes are built, and a worker
	 * woken by it must not count errors.  The caller says so.
	 */
	switch (ttl_target_resolve(b->policy, t, b->rel))
	{
		case TTL_RESOLVE_OK:
			break;
		case TTL_RESOLVE_GONE:
			return TTL_BATCH_GONE;
		case TTL_RESOLVE_NO_INDEX:
			return TTL_BATCH_NO_INDEX;
	}
	if (!ConditionalLockRelationOid(t->indexoid, AccessShareLock))
		return TTL_BATCH_LOCKED;
	b->irel = index_open(t->indexoid, NoLock);
	ttl_batch_check_rights(b);
	b->via_parent = b->parent != NULL && ttl_batch_via_parent(b);

	ttl_cutoff_compute(b->policy, t->keytype, b->zone, b->pass->now, &b->cutoff);
	b->expiry = b->cutoff;
	{
		RegProcedure less = ttl_btree_proc(b->irel, t->keytype, BTLessStrategyNumber);

		b->capping = ttl_cap_cutoff(b->policy, b->pass, t->keytype, b->zone, less,
									b->irel->rd_indcollation[0], &b->cutoff);
		if (b->capping)
			fmgr_info(less, &b->less);
	}
	/* a cap alone, under its cap: no row of this pass goes (expiry.c) */
	if (b->cutoff.none)
		return TTL_BATCH_DONE;
	if (t->filter != NULL)
	{
		b->estate = CreateExecutorState();
		b->filter = ExecPrepareExpr(t->filter, b->estate);
	}
	return TTL_BATCH_MORE;
}

/*
 * ttl_batch_end
 *		Release what ttl_batch_begin took, but the locks (held until the
 *		transaction ends).
 */
static void
ttl_batch_end(TtlBatch *b)
{
	if (b->estate)
		FreeExecutorState(b->estate);
	if (b->irel)
		index_close(b->irel, NoLock);
	if (b->snapshot)
		PopActiveSnapshot();
	if (b->as_owner)
		ttl_owner_leave(&b->save);
	if (b->rel)
	{
		error_context_stack = b->errcallback.previous;
		table_close(b->rel, NoLock);
	}
	if (b->parent)
		table_close(b->parent, NoLock);
}

/*
 * ttl_rel_fires_on
 *		Whether a DELETE (an UPDATE, for a soft delete or an anonymize) of
 *		the table would run its row-level triggers (row), or its
 *		statement-level triggers and DO ALSO rules (!row).
 */
static bool
ttl_rel_fires_on(Relation rel, TtlAction action, bool row)
{
	TriggerDesc *trig = rel->trigdesc;

	if (!row && ttl_rel_has_delete_rules(rel, action, false))
		return true;
	if (trig == NULL)
		return false;
	if (TTL_ACTION_UPDATES(action))
		return row ?
			(trig->trig_update_before_row || trig->trig_update_after_row ||
			 trig->trig_update_instead_row) :
			(trig->trig_update_before_statement || trig->trig_update_after_statement ||
			 trig->trig_update_old_table || trig->trig_update_new_table);
	return row ?
		(trig->trig_delete_before_row || trig->trig_delete_after_row ||
		 trig->trig_delete_instead_row) :
		(trig->trig_delete_before_statement || trig->trig_delete_after_statement ||
		 trig->trig_delete_old_table);
}

/*
 * ttl_rel_reaches_out
 *		Whether the statement's user code on this table can write anything
 *		but the expired rows' deletion: a trigger on the command's event
 *		(other than PostgreSQL's checks of foreign keys, which write
 *		nothing: a NO ACTION or RESTRICT reference, or the check of a
 *		referencing row), or a DO ALSO rule.  An outbox trigger's row that a
 *		reader took for committed must not be undone by a crash: such a
 *		batch waits for its flush (wal.c).
 */
static bool
ttl_rel_reaches_out(Relation rel, TtlAction action)
{
	TriggerDesc *trig = rel->trigdesc;
	int			event = TTL_ACTION_UPDATES(action) ? TRIGGER_TYPE_UPDATE :
		TRIGGER_TYPE_DELETE;

	if (ttl_rel_has_delete_rules(rel, action, false))
		return true;
	if (trig == NULL)
		return false;
	for (int i = 0; i < trig->numtriggers; i++)
	{
		Trigger    *tg = &trig->triggers[i];

		if ((tg->tgtype & event) == 0 || tg->tgenabled == TRIGGER_DISABLED)
			continue;
		if (tg->tgisinternal &&
			(tg->tgfoid == F_RI_FKEY_NOACTION_DEL || tg->tgfoid == F_RI_FKEY_RESTRICT_DEL ||
			 tg->tgfoid == F_RI_FKEY_NOACTION_UPD || tg->tgfoid == F_RI_FKEY_RESTRICT_UPD ||
			 tg->tgfoid == F_RI_FKEY_CHECK_UPD))
			continue;
		return true;
	}
	return false;
}

/*
 * ttl_batch_may
 *		Whether the current user (the owner) has the rights a DELETE (an
 *		UPDATE for a soft delete or an anonymize) with the policy's condition needs on rel:
 *		the command's privilege, and SELECT on the column (or the table).
 */
static bool
ttl_batch_may(TtlBatch *b, Relation rel, AttrNumber attnum)
{
	AclMode		mode = TTL_ACTION_UPDATES(b->policy->action) ? ACL_UPDATE : ACL_DELETE;
	Oid			relid = RelationGetRelid(rel);

	if (pg_class_aclcheck(relid, GetUserId(), mode) != ACLCHECK_OK)
		return false;
	return pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK ||
		pg_attribute_aclcheck(relid, attnum, GetUserId(), ACL_SELECT) == ACLCHECK_OK;
}

/*
 * ttl_batch_check_rights
 *		As the owner, before anything else: what the owner's own statement
 *		would be refused for, refused here too.  The policy's table must be
 *		reachable (USAGE on its schema: PostgreSQL needs it to name the
 *		table), its privileges held (on the policy's table, which is the
 *		one a DELETE FROM parent is checked on), and an archive table must
 *		be the owner's (api.c).  The error fails the batch, and says why.
 */
static void
ttl_batch_check_rights(TtlBatch *b)
{
	Relation	rel = b->parent != NULL ? b->parent : b->rel;
	Oid			nsp = RelationGetNamespace(rel);
	AclResult	aclresult;

	aclresult = ttl_namespace_aclcheck(nsp, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the owner of table %s has no USAGE on its schema %s",
						RelationGetRelationName(rel), get_namespace_name(nsp)),
				 errdetail("The owner's own DELETE would be refused; the rows stay until the owner may reach the table again.")));
	if (b->parent != NULL && !ttl_batch_may(b, b->parent, b->policy->attnum))
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, RelationGetRelationName(b->parent));
	if (b->policy->action == TTL_ACTION_ARCHIVE &&
		OidIsValid(b->policy->archive_relid) &&
		get_rel_name(b->policy->archive_relid) != NULL &&
		!has_privs_of_role(GetUserId(), ttl_table_owner(b->policy->archive_relid)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the archive table %s is not owned by the owner of table %s",
						get_rel_name(b->policy->archive_relid), RelationGetRelationName(rel)),
				 errhint("Make the archive table the table owner's, or change the policy with ttl_alter_index().")));
}

/*
 * ttl_batch_via_parent
 *		For a partition or child of the policy's table (b->parent), whether
 *		the executor path must run its statement on the policy's table
 *		(statement.c), because a statement on the leaf alone would not do
 *		what the owner's DELETE FROM parent does: the parent's row-level
 *		security, statement-level triggers or rules would not apply, or the
 *		leaf's own would, or the owner lacks the leaf's privileges (which a
 *		DELETE through the parent does not need).  Runs as the owner.
 */
static bool
ttl_batch_via_parent(TtlBatch *b)
{
	TtlAction	action = b->policy->action;

	return check_enable_rls(RelationGetRelid(b->parent), InvalidOid, false) == RLS_ENABLED ||
		ttl_rel_fires_on(b->parent, action, false) ||
		check_enable_rls(RelationGetRelid(b->rel), InvalidOid, false) == RLS_ENABLED ||
		ttl_rel_fires_on(b->rel, action, false) ||
		!ttl_batch_may(b, b->rel, b->target->attnum);
}

/*
 * ttl_direct_delete_ok
 *		Whether this batch may delete row versions itself (see the top of the
 *		file): true when a DELETE by the current user, the table owner, would
 *		fire no trigger, meet no rule and apply no row-level security, and
 *		the policy's action is a plain delete.  For a partition or child of
 *		the policy's table, that DELETE is the owner's DELETE FROM parent:
 *		the leaf's row triggers fire, and the parent's statement triggers,
 *		rules and row-level security apply (the leaf's do not).  A filter
 *		does not matter: the scan evaluates it on each row.  Checks the
 *		owner's DELETE and SELECT rights as the executor would, on the
 *		table the DELETE names.
 */
static bool
ttl_direct_delete_ok(TtlBatch *b)
{
	Relation	rel = b->rel;
	Relation	named = b->parent != NULL ? b->parent : b->rel;

	if (b->policy->action != TTL_ACTION_DELETE ||
		ttl_rel_fires_on(rel, TTL_ACTION_DELETE, true) ||
		ttl_rel_fires_on(named, TTL_ACTION_DELETE, false) ||
		check_enable_rls(RelationGetRelid(named), InvalidOid, false) == RLS_ENABLED)
		return false;

	/*
	 * As the executor does for any DELETE: a table published with deletes
	 * must have a replica identity, or the subscribers would miss them.
	 */
	if (ttl_publications_exist())
		CheckCmdReplicaIdentity(rel, CMD_DELETE);

	if (!ttl_batch_may(b, named, named == rel ? b->target->attnum : b->policy->attnum))
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, RelationGetRelationName(named));
	return true;
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
 * ttl_slot_xmin
 *		The inserting transaction of the row version in the slot.
 */
static TransactionId
ttl_slot_xmin(TupleTableSlot *slot)
{
	BufferHeapTupleTableSlot *bslot = (BufferHeapTupleTableSlot *) slot;

	Assert(TTS_IS_BUFFERTUPLE(slot));
	return HeapTupleHeaderGetXmin(bslot->base.tuple->t_data);
}

/*
 * ttl_filter_passes
 *		Whether the row in the slot passes the filter (true without one).
 */
static bool
ttl_filter_passes(TtlBatch *b, TupleTableSlot *slot)
{
	ExprContext *econtext;
	bool		isnull;
	Datum		d;

	if (b->filter == NULL)
		return true;
	econtext = GetPerTupleExprContext(b->estate);
	econtext->ecxt_scantuple = slot;
	d = ExecEvalExprSwitchContext(b->filter, econtext, &isnull);
	ResetExprContext(econtext);
	return !isnull && DatumGetBool(d);
}

/*
 * ttl_batch_hold_not_done
 *		After an anonymize's statement: each row it updated whose new
 *		version is still not done (a trigger or a rule changed a set column
 *		again) is held (held.c), the new version by its TID and xmin, so
 *		that neither the rest of the pass nor the next passes rewrite it
 *		before its backoff: the new version lands after the pass's resume
 *		point, and a pass whose rows all share one key would otherwise
 *		never end.  Returns how many rows it held.  A held set that is full
 *		fails the batch as the policy's (ERRCODE_PROGRAM_LIMIT_EXCEEDED is
 *		not some rows' error), which rolls the updates back.
 */
static int
ttl_batch_hold_not_done(TtlBatch *b, ItemPointerData *tids, int ntids)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	TableScanDesc scan = table_beginscan_tid(b->rel, snapshot);
	TupleTableSlot *slot = table_slot_create(b->rel, NULL);
	TimestampTz now = GetCurrentTimestamp();
	int			held = 0;

	for (int i = 0; i < ntids; i++)
	{
		ItemPointerData tid = tids[i];
		TransactionId xmin;

		/* the version the statement made, if it updated the row */
		table_tuple_get_latest_tid(scan, &tid);
		if (ItemPointerEquals(&tid, &tids[i]))
			continue;

		/*
		 * The version it replaced is gone: if it was held (this is its
		 * retry), forget it, as the scan forgets a TID that holds another
		 * row (no row version has an invalid xmin), so that a row kept
		 * from being done is held once, not once per retry.
		 */
		(void) ttl_held_skip(b->pass->held, b->target->relid, &tids[i],
							 InvalidTransactionId, now);
		if (!table_tuple_fetch_row_version(b->rel, &tid, snapshot, slot))
			continue;
		xmin = ttl_slot_xmin(slot);
		if (!TransactionIdIsCurrentTransactionId(xmin) || !ttl_filter_passes(b, slot))
			continue;
		if (!ttl_held_add(b->pass->held, b->target->relid, &tid, xmin, now))
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many anonymized rows of table \"%s\" are still not done after their update",
							RelationGetRelationName(b->rel)),
					 errdetail("A trigger or a rule changes the set columns again."),
					 errhint("Make the trigger leave the policy's set_columns values alone, or change set_columns.")));
		held++;
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	return held;
}

/*
 * ttl_batch_statement
 *		The executor path's act: run the statement over the rows the scan
 *		collected (or a retried group).  The rows are recorded in the result
 *		first, in the pass's memory, so that a caller whose transaction
 *		fails can retry them in parts.  An anonymize counts the rows its
 *		update left done; those still not done are held.
 */
static void
ttl_batch_statement(TtlBatch *b, ItemPointerData *tids, TransactionId *xmins,
					bool *capped, int ntids, TtlBatchResult *result)
{
	uint64		processed;
	int64		ncapped = 0;

	result->tids_relid = b->target->relid;
	result->ntids = ntids;
	result->tids = tids;
	result->xmins = xmins;
	result->capped_rows = capped;
	for (int i = 0; i < ntids; i++)
		ncapped += capped[i] ? 1 : 0;
	if (b->pass->preview)
	{
		/* a preview counts what the statement would act on (preview.c) */
		processed = ttl_statement_preview(b->policy, b->target, b->rel, b->parent,
										  b->via_parent, tids, capped, ntids,
										  &b->cutoff, b->pass->preview);
		result->deleted += processed;
		result->left += ntids - (int64) processed;
		result->ntids = 0;
		return;
	}
	if (ttl_rel_reaches_out(b->rel, b->policy->action) ||
		(b->via_parent && ttl_rel_reaches_out(b->parent, b->policy->action)))
		result->flush = true;
	processed = ttl_statement_run(b->policy, b->target, b->rel, b->parent,
								  b->via_parent, tids, ntids, &b->cutoff);
	result->deleted += processed;
	result->left += ntids - (int64) processed;
	/*
	 * Those taken for the cap, as far as the statement took them.  When it
	 * left some rows (a trigger, a foreign key) of a mix of capped and
	 * expired ones, the capped rows it deleted are those our snapshot no
	 * longer sees since it ran (a cap only deletes or archives).
	 */
	if (processed == 0 || ncapped == 0 || ncapped == ntids ||
		processed == (uint64) ntids)
		result->capped += Min(ncapped, (int64) processed);
	else
	{
		TupleTableSlot *slot = table_slot_create(b->rel, NULL);

		CommandCounterIncrement();
		UpdateActiveSnapshotCommandId();
		for (int i = 0; i < ntids; i++)
		{
			if (capped[i] &&
				!table_tuple_fetch_row_version(b->rel, &tids[i],
											   GetActiveSnapshot(), slot))
				result->capped++;
		}
		ExecDropSingleTupleTableSlot(slot);
	}
	if (b->policy->action == TTL_ACTION_ARCHIVE)
		result->archived += processed;
	else if (b->policy->action == TTL_ACTION_SOFT_DELETE)
		result->soft_deleted += processed;
	else if (b->policy->action == TTL_ACTION_ANONYMIZE)
	{
		int			held = processed > 0 ? ttl_batch_hold_not_done(b, tids, ntids) : 0;

		result->deleted -= held;
		result->anonymized += processed - held;
	}
	result->ntids = 0;
}

/*
 * ttl_batch_forget_rows
 *		Free the rows of the statement in flight that result records
 *		(ttl_batch_statement: in the pass's memory, for a caller whose
 *		transaction fails to retry in parts), and forget them.
 */
void
ttl_batch_forget_rows(TtlBatchResult *result)
{
	if (result->tids != NULL)
	{
		pfree(result->tids);
		pfree(result->xmins);
		pfree(result->capped_rows);
	}
	result->tids = NULL;
	result->xmins = NULL;
	result->capped_rows = NULL;
}

/* ----------
 * A batch: scan and act
 * ----------
 */

/*
 * What a scan does with the rows it takes: delete each at once (the direct
 * path), or collect them for the statement.
 */
typedef struct TtlTake
{
	bool		direct;
	CommandId	cid;			/* direct: the deletes' command */
	ItemPointerData *tids;		/* else: the rows collected */
	TransactionId *xmins;
	bool	   *capped;			/* whether each was taken for the cap */
	int			ntids;			/* rows deleted or collected */
	int			limit;
} TtlTake;

/*
 * Where a scan stopped (ttl_batch_scan), for ttl_batch_finish.
 */
typedef struct TtlScanEnd
{
	bool		have_last;		/* an entry with a key was read */
	Datum		last_key;		/* its key (in the caller's keycxt) */
	ItemPointerData last_tid;	/* its heap TID */
	int64		dups;			/* entries of last_key read in the pass */
	bool		advanced;		/* read past where it resumed */
} TtlScanEnd;

/*
 * ttl_batch_begin_scan
 *		An index scan of the target from where the last batch of the pass
 *		stopped, or else from past the known-dead prefix, up to the cutoff.
 *		The index tuples come with their entries (xs_want_itup), for the
 *		keys.
 */
static IndexScanDesc
ttl_batch_begin_scan(TtlBatch *b)
{
	TtlTarget  *t = b->target;
	ScanKeyData keys[2];
	int			nkeys = 0;
	bool		have_from = false;
	Datum		from = (Datum) 0;
	Datum		bound;
	IndexScanDesc scan;

	if (t->have_resume)
		ttl_skip_resume(t);
	else if (ttl_skip_start(t, b->irel, &from))
	{
		/* the prefix may move while this scan runs: a copy of its key */
		have_from = true;
		if (!t->keybyval)
			from = datumCopy(from, false, t->keylen);
	}
	if (t->have_resume || have_from)
		ScanKeyInit(&keys[nkeys++], 1, BTGreaterEqualStrategyNumber,
					ttl_btree_proc(b->irel, t->keytype, BTGreaterEqualStrategyNumber),
					t->have_resume ? t->resume_key : from);
	/*
	 * A slice (parallel.c) ends at its stop key, never past the cutoff: the
	 * slices were cut from a cutoff that a changed policy or key type may
	 * have moved since.
	 */
	bound = b->cutoff.bound;
	if (t->have_stop &&
		DatumGetBool(OidFunctionCall2Coll(ttl_btree_proc(b->irel, t->keytype,
														 BTLessStrategyNumber),
										  b->irel->rd_indcollation[0],
										  t->stop_key, b->cutoff.bound)))
		bound = t->stop_key;
	ScanKeyInit(&keys[nkeys++], 1, BTLessStrategyNumber,
				ttl_btree_proc(b->irel, t->keytype, BTLessStrategyNumber),
				bound);

	scan = ttl_index_beginscan(b->rel, b->irel, GetActiveSnapshot(), nkeys, 0);
	scan->xs_want_itup = true;
	index_rescan(scan, keys, nkeys, NULL, 0);
	return scan;
}

/*
 * ttl_batch_capped
 *		Whether a row taken with this key is taken for the cap: its key is
 *		not below the expiry's bound (cap.c), or it is, but that bound is a
 *		wall-clock time near a change of offset (expiry.c: such keys are
 *		rechecked by their instant) and the key's instant has not expired.
 *		A time in the hour the clocks skip, read with the offset from before
 *		the change, is later than the bound's wall-clock time says: without
 *		the recheck, rows the cap took were counted as expired.
 */
static inline bool
ttl_batch_capped(TtlBatch *b, bool isnull, Datum key)
{
	if (!b->capping || isnull)
		return false;
	if (!DatumGetBool(FunctionCall2Coll(&b->less, b->irel->rd_indcollation[0],
										key, b->expiry.bound)))
		return true;
	return b->expiry.recheck &&
		!ttl_key_expired(b->target->keytype, b->policy->unit_ns, b->zone, key,
						 &b->expiry);
}

/*
 * ttl_batch_take_row
 *		One row the scan found visible, with its entry's key: left in place
 *		(held back, not expired after all near a change of offset, not
 *		passing the filter, locked by someone), deleted at once, or
 *		collected.  Returns whether its entry is now known dead.
 */
static bool
ttl_batch_take_row(TtlBatch *b, TupleTableSlot *slot, bool isnull, Datum key,
				   TimestampTz now, TtlTake *take, TtlBatchResult *result)
{
	TtlPolicy  *policy = b->policy;
	TtlPass    *pass = b->pass;
	TtlTarget  *t = b->target;
	TransactionId xmin = ttl_slot_xmin(slot);
	bool		passes;
	TM_FailureData tmfd;

	if (ttl_held_skip(pass->held, t->relid, &slot->tts_tid, xmin, now))
		return false;			/* held back after failing on its own */
	if (b->cutoff.recheck && !isnull &&
		!ttl_key_expired(t->keytype, policy->unit_ns, b->zone, key, &b->cutoff) &&
		!(b->cutoff.capped &&
		  DatumGetBool(FunctionCall2Coll(&b->less, b->irel->rd_indcollation[0],
										 key, b->cutoff.cap_bound))))
		return false;			/* wall-clock key near a change of offset,
								 * not below the cap's bound (cap.c) */

	/* the filter is the owner's code: say which row it failed on */
	pass->failing_relid = t->relid;
	pass->failing_tid = slot->tts_tid;
	pass->failing_xmin = xmin;
	passes = ttl_filter_passes(b, slot);
	pass->failing_relid = InvalidOid;
	if (!passes)
		return false;			/* not a row this policy may touch */

	if (!take->direct)
	{
		/*
		 * deleted by the statement, which may yet leave it; a preview
		 * counts a row another transaction has locked right now
		 */
		if (!pass->preview && ttl_tuple_busy(slot))
			result->skipped_locked++;
		else
		{
			take->tids[take->ntids] = slot->tts_tid;
			take->xmins[take->ntids] = xmin;
			take->capped[take->ntids] = ttl_batch_capped(b, isnull, key);
			take->ntids++;
		}
		return false;
	}

	if (take->ntids++ == 0)
		ttl_yield_own_xid();
	/* the visible version of the row, never waiting for it */
	switch (ttl_table_tuple_delete(b->rel, &slot->tts_tid, take->cid, 0,
								   GetActiveSnapshot(), InvalidSnapshot,
								   false, &tmfd))
	{
		case TM_Ok:
			result->deleted++;
			if (ttl_batch_capped(b, isnull, key))
				result->capped++;
			return true;
		case TM_BeingModified:
			result->skipped_locked++;
			return false;
		case TM_Deleted:
			return true;		/* by a transaction that committed */
		default:
			return false;		/* updated since our snapshot: not ours */
	}
}

/*
 * ttl_take_begin
 *		Set up what a scan does with the rows it takes (TtlTake): delete
 *		them at once, or collect them for the statement.
 */
static void
ttl_take_begin(TtlBatch *b, TtlTake *take)
{
	TtlPolicy  *policy = b->policy;
	int32		batch_size = policy->batch_size > 0 ? policy->batch_size : ttl_batch_size;

	memset(take, 0, sizeof(TtlTake));
	take->limit = Min(Max(b->pass->row_limit, TTL_MIN_BATCH_ROWS), batch_size);
	/* a preview counts by the statement's selection (preview.c) */
	take->direct = !b->pass->preview && ttl_direct_delete_ok(b);
	if (take->direct)
		take->cid = GetCurrentCommandId(true);
	else
	{
		/* a sweep stops at a page's end: room for one page more */
		int			room = take->limit + MaxHeapTuplesPerPage;

		take->tids = MemoryContextAlloc(b->pass->rowscxt, sizeof(ItemPointerData) * room);
		take->xmins = MemoryContextAlloc(b->pass->rowscxt, sizeof(TransactionId) * room);
		take->capped = MemoryContextAlloc(b->pass->rowscxt, sizeof(bool) * room);
	}
}

/*
 * ttl_take_end
 *		The executor path's act: the statement over the rows collected.
 */
static void
ttl_take_end(TtlBatch *b, TtlTake *take, TtlBatchResult *result)
{
	if (!take->direct && take->ntids > 0)
		ttl_batch_statement(b, take->tids, take->xmins, take->capped,
							take->ntids, result);
	/* the rows collected (none on the direct path), recorded or not */
	result->tids = take->tids;
	result->xmins = take->xmins;
	result->capped_rows = take->capped;
	ttl_batch_forget_rows(result);
}

/*
 * ttl_batch_time_up
 *		Whether the batch has run for ttl_index.batch_time.
 */
static bool
ttl_batch_time_up(TtlBatch *b)
{
	instr_time	elapsed;

	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, b->start);
	return INSTR_TIME_GET_MILLISEC(elapsed) >= ttl_batch_time;
}

/*
 * ttl_batch_sweep
 *		A batch of a sweep: a scattered target (its rows lie on the heap in
 *		no key order) with a large backlog is drained by reading its heap
 *		in block order from where the last batch stopped, taking each
 *		visible row whose key is below the cutoff, as a plain DELETE's
 *		sequential scan would, instead of visiting a page once per row in
 *		key order.  It stops at a page's end once the row or time limit is
 *		reached.  Returns whether it stopped before the sweep's last block.
 */
static bool
ttl_batch_sweep(TtlBatch *b, TtlBatchResult *result)
{
	TtlTarget  *t = b->target;
	TtlTake		take;
	TableScanDesc scan;
	TupleTableSlot *slot;
	FmgrInfo	less;
	Oid			collation = b->irel->rd_indcollation[0];
	BlockNumber block = t->sweep_next;
	bool		stopped = false;
	TimestampTz now = GetCurrentTimestamp();

	/* VACUUM may have truncated the table since the sweep began */
	t->sweep_end = Min(t->sweep_end, RelationGetNumberOfBlocks(b->rel));
	if (t->sweep_next >= t->sweep_end)
		return false;
	fmgr_info(ttl_btree_proc(b->irel, t->keytype, BTLessStrategyNumber), &less);
	ttl_take_begin(b, &take);
	slot = table_slot_create(b->rel, NULL);
	/* no synchronized start: the sweep resumes exactly where it stopped */
	scan = table_beginscan_strat(b->rel, GetActiveSnapshot(), 0, NULL, true, false);
	heap_setscanlimits(scan, t->sweep_next, t->sweep_end - t->sweep_next);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		BlockNumber here = ItemPointerGetBlockNumber(&slot->tts_tid);
		bool		isnull;
		Datum		key;

		CHECK_FOR_INTERRUPTS();
		if (here < block)
			break;				/* wrapped around: the sweep is over */
		if (here != block)
		{
			/* a page's end: stop here if the batch is full or its time up */
			block = here;
			if (take.ntids >= take.limit || ttl_batch_time_up(b))
			{
				stopped = true;
				break;
			}
		}
		key = slot_getattr(slot, t->attnum, &isnull);
		if (isnull ||
			!DatumGetBool(FunctionCall2Coll(&less, collation, key, b->cutoff.bound)))
			continue;
		(void) ttl_batch_take_row(b, slot, false, key, now, &take, result);
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	t->sweep_next = stopped ? block : t->sweep_end;
	ttl_take_end(b, &take, result);
	return stopped;
}

/*
 * Resuming inside a run of one key.  The scan resumes at the key where the
 * last batch stopped, and steps over the entries of that key the last
 * batch read, without visiting the heap: those up to the heap TID it
 * stopped at, where the index orders equal keys by heap TID (every btree
 * since PostgreSQL 12), else as many as it read.  A run of entries the
 * batches cannot take (held rows, rows the filter rejects, more than a
 * batch's time of them) is so crossed once per pass, batch after batch,
 * instead of stopping every pass at its start.  Stepping over re-reads only
 * index entries, not bounded by the batch's time (it is bounded by the
 * run), so that each batch gets past where the last one stopped.
 */
typedef struct TtlStep
{
	bool		stepping;		/* among the entries an earlier batch read */
	bool		by_tid;			/* the index orders equal keys by heap TID */
	FmgrInfo	eq;				/* the key type's "=" */
} TtlStep;

/*
 * ttl_scan_step_begin
 *		Whether the scan starts by stepping over entries of its resume key
 *		(it resumes inside a run of one key: after a heap TID, or after a
 *		count of entries), and how it tells them.
 */
static void
ttl_scan_step_begin(TtlBatch *b, TtlStep *step)
{
	TtlTarget  *t = b->target;

	step->by_tid = false;
	step->stepping = t->have_resume &&
		(ItemPointerIsValid(&t->resume_tid) || t->resume_dups > 0);
	if (step->stepping)
	{
		bool		allequalimage;

		_bt_metaversion(b->irel, &step->by_tid, &allequalimage);
		fmgr_info(get_opcode(get_opfamily_member(b->irel->rd_opfamily[0],
												 t->keytype, t->keytype,
												 BTEqualStrategyNumber)),
				  &step->eq);
	}
}

/*
 * ttl_scan_step_over
 *		Whether the entry of key at tid is one an earlier batch of the pass
 *		read, which the scan steps over (it is then the last entry read,
 *		end).  Sets *same to whether its key is that of the entry before,
 *		or of the resume point.  The first entry not stepped over ends the
 *		stepping.
 */
static bool
ttl_scan_step_over(TtlBatch *b, TtlStep *step, TtlScanEnd *end, bool isnull,
				   Datum key, ItemPointer tid, bool *same)
{
	TtlTarget  *t = b->target;

	/* the same key as the entry before (or as the resume point) */
	if (step->stepping)
		*same = !isnull &&
			DatumGetBool(FunctionCall2Coll(&step->eq, b->irel->rd_indcollation[0],
										   key, t->resume_key));
	else
		*same = !isnull && end->have_last &&
			datumIsEqual(key, end->last_key, t->keybyval, t->keylen);
	if (step->stepping && *same &&
		(step->by_tid ? ItemPointerCompare(tid, &t->resume_tid) <= 0 :
		 end->dups < t->resume_dups))
	{
		/* read by an earlier batch of the pass: step over it */
		end->dups++;
		end->have_last = true;
		end->last_key = t->resume_key;
		return true;
	}
	if (step->stepping && !*same)
		end->dups = 0;
	step->stepping = false;
	return false;
}

/*
 * ttl_scan_note
 *		Record the entry of key at tid, read past where the scan resumed,
 *		as the last entry read (end); same: its key is that of the entry
 *		before.  A key not by value is copied into keycxt.
 */
static void
ttl_scan_note(TtlTarget *t, TtlScanEnd *end, MemoryContext keycxt, bool isnull,
			  Datum key, ItemPointer tid, bool same)
{
	end->advanced = true;
	end->dups = same ? end->dups + 1 : 1;
	ItemPointerCopy(tid, &end->last_tid);
	end->have_last = !isnull;
	if (end->have_last && t->keybyval)
		end->last_key = key;
	else if (end->have_last)
	{
		/* the index tuple goes with the scan: keep a copy */
		MemoryContext old;

		MemoryContextReset(keycxt);
		old = MemoryContextSwitchTo(keycxt);
		end->last_key = datumCopy(key, false, t->keylen);
		MemoryContextSwitchTo(old);
	}
}

/*
 * ttl_scan_visit
 *		The row of the entry the scan is at (tid, key): taken
 *		(ttl_batch_take_row), unless it is the held row the scan steps over
 *		(held); when no version of it is visible, its entry is dead or not.
 *		An entry not known dead ends the known-dead prefix (skip.c).
 */
static void
ttl_scan_visit(TtlBatch *b, IndexScanDesc scan, TupleTableSlot *slot,
			   ItemPointer tid, bool held, bool isnull, Datum key,
			   TimestampTz now, TtlTake *take, TtlBatchResult *result)
{
	TtlTarget  *t = b->target;
	bool		dead;

	if (held)
		dead = false;			/* held, stepped over (ttl_batch_scan) */
	else if (index_fetch_heap(scan, slot))
		dead = ttl_batch_take_row(b, slot, isnull, key, now, take, result);
	else
	{
		/* no version visible to us: gone for good, or not yet there */
		dead = !t->skip.tracking ||
			ttl_skip_entry_dead(b->rel, tid, GetActiveSnapshot());
	}
	/* a row left in place, or deleted by a statement yet to run */
	if (!dead && t->skip.tracking)
		ttl_skip_stop(t);
}

/*
 * ttl_scan_bound_reached
 *		Whether the scan stops after the entries it has seen: the engine's
 *		tests bound a batch by entries read, not by time; else when the
 *		batch's time is up, looked at every TTL_CLOCK_EVERY entries.
 */
static bool
ttl_scan_bound_reached(TtlBatch *b, int64 seen)
{
	if (EntryLimit > 0 && seen >= EntryLimit)
		return true;
	return seen % TTL_CLOCK_EVERY == 0 && ttl_batch_time_up(b);
}

/*
 * ttl_scan_done
 *		After the scan, before the statement runs: whether the target is
 *		scattered, from the entries seen and the jumps between heap pages
 *		among them; and where the next batch resumes.
 */
static void
ttl_scan_done(TtlBatch *b, TtlScanEnd *end, int64 seen, int64 jumps)
{
	TtlTarget  *t = b->target;

	/*
	 * Whether the target is scattered: most entries in key order point at
	 * another heap page than the entry before (an expiry column filled in
	 * no time order), so that a drain in key order visits a page once per
	 * row (see ttl_batch_sweep).
	 */
	if (seen >= TTL_MIN_BATCH_ROWS * 4)
		t->scattered = jumps * 2 > seen;

	/*
	 * The next batch resumes past every entry read, set before the
	 * statement runs: if it fails, its rows are retried in parts or held
	 * (pass.c, held.c) while the scan goes on past them, as it goes on
	 * past the rows the statement leaves (a foreign key, a trigger).
	 */
	if (end->have_last && end->advanced)
	{
		Assert(ttl_batch_moves_on(b, end->last_key, &end->last_tid));
		ttl_batch_resume_at(b->pass, t, end->last_key, &end->last_tid, end->dups);
	}
}

/*
 * ttl_batch_scan
 *		Range-scan the target's index from where the last batch stopped to
 *		the cutoff, taking each row (ttl_batch_take_row), then run the
 *		statement over the rows collected.  Returns whether it stopped at a
 *		bound (rows, time: more to do) rather than at the cutoff.  Sets *end
 *		to the last entry read (its key in keycxt).  The known-dead prefix
 *		(skip.c) is told of each page and of the first entry that is not
 *		dead.  A scan that resumes inside a run of one key first steps over
 *		the entries of it an earlier batch read (TtlStep).
 */
static bool
ttl_batch_scan(TtlBatch *b, TtlBatchResult *result, MemoryContext keycxt,
			   TtlScanEnd *end)
{
	TtlTarget  *t = b->target;
	TtlTake		take;
	TtlStep		step;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	int64		seen = 0;
	int64		jumps = 0;
	BlockNumber last_block = InvalidBlockNumber;
	bool		stopped = false;
	TimestampTz now = GetCurrentTimestamp();

	ttl_take_begin(b, &take);
	slot = table_slot_create(b->rel, NULL);
	ttl_scan_step_begin(b, &step);
	scan = ttl_batch_begin_scan(b);
	end->have_last = false;
	end->dups = 0;
	end->advanced = false;
	ItemPointerSetInvalid(&end->last_tid);
	while (take.ntids < take.limit)
	{
		bool		isnull;
		Datum		key;
		ItemPointer tid;
		bool		same;
		bool		held = false;

		CHECK_FOR_INTERRUPTS();
		/* index_getnext_slot(), looking at the entries it would pass over */
		if ((tid = index_getnext_tid(scan, ForwardScanDirection)) == NULL)
			break;
		key = index_getattr(scan->xs_itup, 1, scan->xs_itupdesc, &isnull);
		ttl_skip_on_page(t, b->irel, ((BTScanOpaque) scan->opaque)->currPos.currPage,
						 end->have_last, end->last_key);
		if (ttl_scan_step_over(b, &step, end, isnull, key, tid, &same))
			continue;

		/*
		 * A row the filter failed on past the held set's bound (held.c,
		 * pass.c): the batch stops before it when it has taken rows, else
		 * steps over it and stops just past it, so that its resume point
		 * is past it before another such row can fail a batch.
		 */
		if (t->have_step && ItemPointerEquals(tid, &t->step_tid))
		{
			if (take.ntids > 0)
			{
				stopped = true;
				break;
			}
			t->have_step = false;
			held = true;
		}
		ttl_scan_note(t, end, keycxt, isnull, key, tid, same);
		seen++;
		if (ItemPointerGetBlockNumber(tid) != last_block)
			jumps++;
		last_block = ItemPointerGetBlockNumber(tid);

		ttl_scan_visit(b, scan, slot, tid, held, isnull, key, now, &take, result);
		if (held || ttl_scan_bound_reached(b, seen))
		{
			stopped = true;
			break;
		}
	}
	if (take.ntids >= take.limit)
		stopped = true;
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);

	ttl_scan_done(b, end, seen, jumps);
	ttl_take_end(b, &take, result);
	return stopped;
}

#ifdef USE_ASSERT_CHECKING
/*
 * ttl_batch_moves_on
 *		For Asserts: whether the entry of key at tid, the last a batch read
 *		past where it resumed, is past the target's resume position (a
 *		position never goes back within a pass), and below the slice's stop
 *		key when the target is a slice (a slice never reaches past its end,
 *		whoever moved it down).
 */
static bool
ttl_batch_moves_on(TtlBatch *b, Datum key, ItemPointer tid)
{
	TtlTarget  *t = b->target;
	FmgrInfo   *cmp = index_getprocinfo(b->irel, 1, BTORDER_PROC);
	Oid			collation = b->irel->rd_indcollation[0];
	int32		c;
	bool		by_tid;
	bool		allequalimage;

	if (t->have_stop &&
		DatumGetInt32(FunctionCall2Coll(cmp, collation, key, t->stop_key)) >= 0)
		return false;
	if (!t->have_resume)
		return true;
	c = DatumGetInt32(FunctionCall2Coll(cmp, collation, key, t->resume_key));
	if (c != 0)
		return c > 0;
	/* the same key: past the resume entry, where equal keys are in TID order */
	_bt_metaversion(b->irel, &by_tid, &allequalimage);
	return !by_tid || !ItemPointerIsValid(&t->resume_tid) ||
		ItemPointerCompare(tid, &t->resume_tid) > 0;
}
#endif

/*
 * ttl_batch_finish
 *		Where the next batch resumes, or, at the end of the target, when its
 *		next row expires.  Returns the outcome.
 */
static TtlBatchOutcome
ttl_batch_finish(TtlBatch *b, TtlBatchResult *result, bool stopped,
				 TtlScanEnd *end)
{
	TtlTarget  *t = b->target;
	TtlPass    *pass = b->pass;
	TtlBatchOutcome outcome = stopped ? TTL_BATCH_MORE : TTL_BATCH_DONE;
	TimestampTz next;

	/* no entry read past where it resumed: give up on this pass, not spin */
	if (stopped && !end->advanced)
		outcome = TTL_BATCH_DONE;
	/* the resume position is the scan's (ttl_batch_scan) */
	if (outcome != TTL_BATCH_DONE)
		return outcome;

	/* everything below the cutoff was dead or deleted: the prefix ends here */
	if (t->skip.tracking)
	{
		if (end->have_last)
			ttl_skip_stop(t);
		else
			t->skip.tracking = false;
	}
	if (t->have_stop)
		return outcome;			/* the end of a slice, not of the target */

	/* the next row to expire, past the cutoff */
	switch (ttl_probe_from(b->policy, t, b->rel, b->irel, b->filter,
						   b->filter ? GetPerTupleExprContext(b->estate) : NULL,
						   true, b->cutoff.bound, &next))
	{
		case TTL_PROBE_FOUND:
			if (pass->next_expiry == 0 || next < pass->next_expiry)
				pass->next_expiry = next;
			break;
		case TTL_PROBE_EMPTY:
			break;
		case TTL_PROBE_UNKNOWN:
			/* the worker must then look again at every max_sleep */
			pass->next_expiry_unknown = true;
			break;
	}
	return outcome;
}

/*
 * ttl_batch_adapt
 *		Aim the next batch at ttl_index.batch_time, from this one's speed.
 */
static void
ttl_batch_adapt(TtlBatch *b, TtlBatchResult *result, int64 rows)
{
	instr_time	elapsed;
	int32		batch_size = b->policy->batch_size > 0 ?
		b->policy->batch_size : ttl_batch_size;

	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, b->start);
	result->elapsed_ms = INSTR_TIME_GET_MILLISEC(elapsed);
	if (rows > 0)
	{
		double		per_row = Max(result->elapsed_ms, 0.001) / rows;
		double		target = ttl_batch_time / per_row;

		b->pass->row_limit = (int32) Min(Max(target, TTL_MIN_BATCH_ROWS), batch_size);
	}
}

/*
 * ttl_batch_top_key
 *		The key of the target index's last entry below the expiry's cutoff,
 *		read backwards from it: one descent of the btree, no heap tuple, an
 *		entry dead or alive.  Where the expired keys end, for cutting a
 *		shared drain's slices over the keys the table holds (drain.c).
 *		Returns false when there is none.  By value keys only.
 */
static bool
ttl_batch_top_key(TtlBatch *b, Datum *key)
{
	TtlTarget  *t = b->target;
	ScanKeyData skey;
	IndexScanDesc scan;
	bool		found = false;

	Assert(t->keybyval);
	ScanKeyInit(&skey, 1, BTLessStrategyNumber,
				ttl_btree_proc(b->irel, t->keytype, BTLessStrategyNumber),
				b->expiry.bound);
	scan = ttl_index_beginscan(b->rel, b->irel, GetActiveSnapshot(), 1, 0);
	scan->xs_want_itup = true;
	index_rescan(scan, &skey, 1, NULL, 0);
	if (index_getnext_tid(scan, BackwardScanDirection) != NULL)
	{
		bool		isnull;
		Datum		d = index_getattr(scan->xs_itup, 1, scan->xs_itupdesc, &isnull);

		if (!isnull)
		{
			*key = d;
			found = true;
		}
	}
	index_endscan(scan);
	return found;
}

/*
 * ttl_batch_one
 *		One batch on one target: a retried group of rows if it has one, else
 *		the scan.
 */
static TtlBatchOutcome
ttl_batch_one(TtlPolicy *policy, TtlPass *pass, TtlTarget *t,
			  TtlBatchResult *result)
{
	TtlBatch	b;
	TtlBatchOutcome outcome;
	MemoryContext keycxt;
	bool		stopped;
	TtlScanEnd	end;

	memset(&b, 0, sizeof(b));
	memset(&end, 0, sizeof(end));
	b.policy = policy;
	b.pass = pass;
	b.target = t;

	outcome = ttl_batch_begin(&b);
	if (outcome != TTL_BATCH_MORE)
	{
		ttl_batch_end(&b);
		return outcome;
	}

	if (t->retry != NIL)
	{
		TtlTidGroup *g = (TtlTidGroup *) linitial(t->retry);

		t->retry = list_delete_first(t->retry);
		ttl_batch_statement(&b, g->tids, g->xmins, g->capped, g->n, result);
		/* the statement recorded the group's rows in the result */
		ttl_batch_forget_rows(result);
		pfree(g);
		ttl_batch_end(&b);
		ttl_batch_adapt(&b, result, result->deleted + result->left);
		return TTL_BATCH_MORE;
	}

	if (t->sweep)
	{
		/* the sweep in hand; at its end, the index from the cutoff on */
		if (ttl_batch_sweep(&b, result))
			outcome = TTL_BATCH_MORE;
		else
		{
			t->sweep = false;
			ttl_batch_resume_from(pass, t, b.cutoff.bound);
			outcome = TTL_BATCH_MORE;
		}
		ttl_batch_end(&b);
		ttl_batch_adapt(&b, result, result->deleted + result->skipped_locked + result->left);
		return outcome;
	}

	keycxt = AllocSetContextCreate(CurrentMemoryContext, "ttl_index key",
								   ALLOCSET_SMALL_SIZES);
	stopped = ttl_batch_scan(&b, result, keycxt, &end);
	outcome = ttl_batch_finish(&b, result, stopped, &end);

	/*
	 * A third full batch in a pass on a scattered target whose key is a
	 * column: sweep the heap from here on (ttl_batch_sweep).  Not in a slice, nor for a
	 * per-row TTL (its key is an expression of the row).
	 */
	if (outcome == TTL_BATCH_MORE && t->scattered && t->ttl_attnum == 0 &&
		!t->parallel && !t->have_stop && !t->no_sweep && !pass->preview &&
		pass->pass_batches >= 2 &&
		result->deleted > 0)
	{
		t->sweep = true;
		t->sweep_next = 0;
		t->sweep_end = RelationGetNumberOfBlocks(b.rel);
		ttl_skip_forget(t);
	}

	/* where the expired keys end, when the caller asks (drain.c) */
	if (result->want_top && end.have_last && outcome == TTL_BATCH_MORE &&
		t->keybyval && !b.expiry.none)
		result->have_top = ttl_batch_top_key(&b, &result->top_key);

	/* the last key read, for the caller until the next batch (drain.c) */
	if (end.have_last && outcome == TTL_BATCH_MORE)
	{
		result->have_last = true;
		if (t->keybyval)
			result->last_key = end.last_key;
		else
		{
			MemoryContext old = MemoryContextSwitchTo(pass->rowscxt);

			result->last_key = datumCopy(end.last_key, false, t->keylen);
			MemoryContextSwitchTo(old);
		}
	}
	ttl_batch_end(&b);
	MemoryContextDelete(keycxt);
	ttl_batch_adapt(&b, result, result->deleted + result->skipped_locked + result->left);
	return outcome;
}

/*
 * ttl_batch_run
 *		One batch on target t of the pass: from the target's resume position
 *		(else past its known-dead prefix, else the index's start) to its
 *		stop key when it has one (a slice, drain.c), never past the pass's
 *		cutoff.  Adds to *result what it did (see the top of the file);
 *		returns the outcome.  Must be called inside a transaction, with the
 *		pass's rows context emptied since the last batch.  While it runs,
 *		the target is recorded (an error it raises is that table's:
 *		ttl_pass_isolate) and the batch known to be running
 *		(ttl_batch_active).
 */
TtlBatchOutcome
ttl_batch_run(TtlPolicy *policy, TtlPass *pass, TtlTarget *t,
			  TtlBatchResult *result)
{
	volatile TtlBatchOutcome outcome = TTL_BATCH_MORE;

	Assert(IsTransactionState());
	/* no batch inside a batch: user code calling ttl_runner() is refused */
	Assert(!InBatch);
	/* a stop key only in a slice of a shared drain */
	Assert(!t->have_stop || t->parallel);
	/* no lock of the slots held into a batch: user code runs in it */
	Assert(!ttl_shmem_slots_lock_held());
	pass->failing_target = t;
	InBatch = true;
	PG_TRY();
	{
		outcome = ttl_batch_one(policy, pass, t, result);
	}
	PG_FINALLY();
	{
		InBatch = false;
	}
	PG_END_TRY();
	pass->failing_target = NULL;
	/* nor out of one: the batch's own owner and lock are released */
	Assert(!ttl_shmem_slots_lock_held());
	return outcome;
}

/*
 * ttl_batch_set_entry_limit
 *		Bound each scan to n index entries read past where it resumed (0:
 *		none), as the time limit would: for the engine's tests
 *		(engine_test.c), which must not depend on how fast the machine is.
 */
void
ttl_batch_set_entry_limit(int n)
{
	EntryLimit = n;
}

/*
 * ttl_batch_set_active
 *		Mark a batch of this process as running (ttl_batch_active) around
 *		work that is not a batch of this file's but runs the owner's code
 *		the same way: a pass's whole-partition drops (pass.c).
 */
void
ttl_batch_set_active(bool on)
{
	Assert(InBatch != on);
	InBatch = on;
}
