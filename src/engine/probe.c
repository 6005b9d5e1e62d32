/*-------------------------------------------------------------------------
 *
 * probe.c
 *	  Index look-ups shared by the scheduler and the views: when the next
 *	  row of a table expires, and when the oldest row of a policy expired.
 *
 * Both read the first entries of the target's btree from a given key (or
 * from the start) and return the expiry of the first visible row that
 * passes the filter.  A filter that rejects every one of the first
 * TTL_PROBE_MAX_ROWS entries makes the look give up (TTL_PROBE_UNKNOWN)
 * rather than read a whole index.
 *
 * ttl_probe_oldest, for ttl_index_stats, takes every lock without waiting
 * (a locked table is TTL_PROBE_UNKNOWN) and releases it before returning:
 * the view probes every policy in one transaction, and holding two locks
 * per policy until its end would overflow the lock table with thousands of
 * policies.  Where the policy has a filter, the filter is the owner's code:
 * it is evaluated as the owner (owner.c), in a subtransaction, so that an
 * error in it makes that policy's figures NULL instead of failing the
 * caller; a query cancel still cancels it.
 *
 * The views (ttl_probe_oldest_for_reader) never get that far: they run in
 * a reader's session, where the owner's code must not run at all (it could
 * read or end the session: DESIGN.md traps 10, 15, 23).  A policy with a
 * filter or set_columns (the expressions its owner wrote) is not looked
 * at: its target is not even resolved, since resolving parses them.  The
 * others' looks run nothing but the server's code (a btree of the key
 * type's default operator class, visibility checks, a NULL test for a
 * soft-deleted row); the view runs each policy's in a subtransaction, so
 * that a broken policy makes its own figures NULL, with the error as the
 * reason, and never fails the view.
 *
 * ttl_probe_oldest starts past the known-dead prefix the worker published
 * for the target (skip.c, stats.c): the entries of rows deleted while an
 * old snapshot holds the xmin horizon would otherwise be read, with their
 * heap tuples, at every look.  The prefix holds while no transaction that
 * inserted into or updated the table has committed since the worker
 * checked it (the table's write counter, writes.c, has not moved); after
 * one, the look reads from the start until the worker's next batch
 * publishes the prefix again.  Logical replication's apply worker writes
 * without bumping the counters: in a database with a subscription the
 * views do not use the prefix.
 *
 * Locking: as described; the caller has an active snapshot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_subscription.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "ttl_index.h"
#include "engine/engine.h"
#include "policy/policy.h"
#include "env/env.h"
#include "shared/shared.h"

/* a view's probe (checked: it never resolves the owner's expressions) */
static bool ReaderProbe = false;

/* how many index entries a look reads past rows the filter rejects */
#define TTL_PROBE_MAX_ROWS		1000

/*
 * ttl_btree_proc
 *		The comparison function of the index's first column for a strategy
 *		on the key type.
 */
RegProcedure
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
 * ttl_probe_from
 *		The expiry of the first visible row at or after `from` (or the first
 *		at all when !have_from) that passes the filter (prepared by the
 *		caller, NULL for none).  Returns TTL_PROBE_FOUND, TTL_PROBE_EMPTY
 *		when there is no such row, or TTL_PROBE_UNKNOWN when the first
 *		TTL_PROBE_MAX_ROWS entries were all rejected by the filter.
 */
TtlProbeResult
ttl_probe_from(TtlPolicy *policy, TtlTarget *t, Relation rel, Relation irel,
			   ExprState *filter, ExprContext *econtext, bool have_from,
			   Datum from, TimestampTz *expires_at)
{
	ScanKeyData key;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	TtlProbeResult found = TTL_PROBE_UNKNOWN;

	if (have_from)
		ScanKeyInit(&key, 1, BTGreaterEqualStrategyNumber,
					ttl_btree_proc(irel, t->keytype, BTGreaterEqualStrategyNumber),
					from);
	else
		ScanKeyEntryInitialize(&key, SK_ISNULL | SK_SEARCHNOTNULL, 1,
							   InvalidStrategy, InvalidOid, InvalidOid,
							   InvalidOid, (Datum) 0);

	slot = table_slot_create(rel, NULL);
	scan = ttl_index_beginscan(rel, irel, GetActiveSnapshot(), 1, 0);
	scan->xs_want_itup = true;
	index_rescan(scan, &key, 1, NULL, 0);
	for (int n = 0; n < TTL_PROBE_MAX_ROWS; n++)
	{
		bool		isnull;
		Datum		k;

		CHECK_FOR_INTERRUPTS();
		if (!index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			found = TTL_PROBE_EMPTY;
			break;
		}
		if (filter != NULL)
		{
			bool		fnull;
			Datum		d;

			econtext->ecxt_scantuple = slot;
			d = ExecEvalExprSwitchContext(filter, econtext, &fnull);
			ResetExprContext(econtext);
			if (fnull || !DatumGetBool(d))
				continue;
		}
		k = index_getattr(scan->xs_itup, 1, scan->xs_itupdesc, &isnull);
		if (!isnull)
		{
			*expires_at = ttl_key_expiry(policy, t->keytype,
										 ttl_policy_zone(policy), k);
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
 * ttl_probe_look
 *		Open one target without waiting, read when its oldest row expires,
 *		and release the locks.
 */
static TtlProbeResult
ttl_probe_look(TtlPolicy *policy, TtlTarget *t, TimestampTz *expires_at)
{
	TtlProbeResult result = TTL_PROBE_UNKNOWN;
	Relation	rel;
	Relation	irel;
	TtlOwnerSave save;
	bool		as_owner = policy->filter != NULL;
	bool		resolved;

	if (!ConditionalLockRelationOid(t->relid, AccessShareLock))
		return TTL_PROBE_UNKNOWN;
	rel = try_relation_open(t->relid, NoLock);
	if (rel == NULL)
	{
		UnlockRelationOid(t->relid, AccessShareLock);
		return TTL_PROBE_UNKNOWN;
	}
	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_rel->relam != HEAP_TABLE_AM_OID)
	{
		relation_close(rel, AccessShareLock);
		return TTL_PROBE_UNKNOWN;
	}

	/* a reader's look never resolves the owner's expressions (see above) */
	Assert(!ReaderProbe || !ttl_probe_runs_owner_code(policy));
	if (as_owner)
		ttl_owner_enter(ttl_table_owner(policy->relid), &save);
	resolved = ttl_target_resolve(policy, t, rel) == TTL_RESOLVE_OK;
	if (resolved && ConditionalLockRelationOid(t->indexoid, AccessShareLock))
	{
		EState	   *estate = NULL;
		ExprState  *filter = NULL;
		ExprContext *econtext = NULL;
		Datum		from = (Datum) 0;
		bool		have_from;
		uint32		writes;

		irel = index_open(t->indexoid, NoLock);
		if (t->filter != NULL)
		{
			estate = CreateExecutorState();
			filter = ExecPrepareExpr(t->filter, estate);
			econtext = GetPerTupleExprContext(estate);
		}
		/* past the dead entries the worker found (see the top of the file) */
		have_from = ttl_stats_prefix(MyDatabaseId, policy->id, t->relid,
									 t->indexoid, &from, &writes) &&
			writes == ttl_writes_count(MyDatabaseId, t->relid) &&
			CountDBSubscriptions(MyDatabaseId) == 0;
		result = ttl_probe_from(policy, t, rel, irel, filter, econtext,
								have_from, from, expires_at);
		if (estate)
			FreeExecutorState(estate);
		index_close(irel, AccessShareLock);
	}
	if (as_owner)
		ttl_owner_leave(&save);
	relation_close(rel, AccessShareLock);
	return result;
}

/*
 * ttl_probe_table
 *		ttl_probe_look, in a subtransaction when the policy has a filter
 *		(see the top of the file).
 */
static TtlProbeResult
ttl_probe_table(TtlPolicy *policy, TtlTarget *t, TimestampTz *expires_at)
{
	volatile TtlProbeResult result = TTL_PROBE_UNKNOWN;
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	if (policy->filter == NULL)
		return ttl_probe_look(policy, t, expires_at);

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		result = ttl_probe_look(policy, t, expires_at);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		/* a cancel or a shutdown is not the filter's failure: rethrown */
		FreeErrorData(ttl_error_catch_subxact(cxt, owner));
		result = TTL_PROBE_UNKNOWN;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return result;
}

/*
 * ttl_probe_oldest
 *		When the oldest row of a policy expires (or expired): the earliest
 *		over its targets.  TTL_PROBE_UNKNOWN when any target could not be
 *		looked at (locked, no index, a filter that fails or rejects the
 *		first rows): an unknown is never reported as an empty backlog.
 */
TtlProbeResult
ttl_probe_oldest(TtlPolicy *policy, TimestampTz *expires_at)
{
	TtlProbeResult result = TTL_PROBE_EMPTY;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "ttl_index probe",
											  ALLOCSET_SMALL_SIZES);
	List	   *targets = ttl_targets_list(policy, cxt);
	ListCell   *lc;

	/* gone, unless a partitioned table without partitions (or the like) */
	if (targets == NIL && !ttl_targets_may_be_none(policy))
		result = TTL_PROBE_UNKNOWN;
	foreach(lc, targets)
	{
		TimestampTz at;

		switch (ttl_probe_table(policy, (TtlTarget *) lfirst(lc), &at))
		{
			case TTL_PROBE_FOUND:
				if (result != TTL_PROBE_FOUND || at < *expires_at)
					*expires_at = at;
				result = TTL_PROBE_FOUND;
				break;
			case TTL_PROBE_EMPTY:
				break;
			case TTL_PROBE_UNKNOWN:
				result = TTL_PROBE_UNKNOWN;
				break;
		}
		if (result == TTL_PROBE_UNKNOWN)
			break;
	}
	MemoryContextDelete(cxt);
	return result;
}

/*
 * ttl_probe_runs_owner_code
 *		Whether a look at the policy's rows would parse or run expressions
 *		its owner wrote: a filter, set_columns (anonymize).
 */
bool
ttl_probe_runs_owner_code(TtlPolicy *policy)
{
	return policy->filter != NULL || policy->action == TTL_ACTION_ANONYMIZE;
}

/*
 * ttl_probe_oldest_for_reader
 *		ttl_probe_oldest for a view, in the reader's session (see the top of
 *		the file).  A policy whose look would run its owner's code is not
 *		looked at: TTL_PROBE_UNKNOWN with *user_code set, and the caller
 *		takes what the worker's last pass saw instead.  The caller runs it
 *		in a subtransaction (views.c): a look that fails is the policy's.
 */
TtlProbeResult
ttl_probe_oldest_for_reader(TtlPolicy *policy, TimestampTz *expires_at,
							bool *user_code)
{
	TtlProbeResult result;

	*user_code = ttl_probe_runs_owner_code(policy);
	if (*user_code)
		return TTL_PROBE_UNKNOWN;

	ReaderProbe = true;
	PG_TRY();
	{
		result = ttl_probe_oldest(policy, expires_at);
	}
	PG_FINALLY();
	{
		ReaderProbe = false;
	}
	PG_END_TRY();
	return result;
}
