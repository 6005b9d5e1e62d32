/*-------------------------------------------------------------------------
 *
 * pass.c
 *	  A pass of a policy: one walk over its targets (the table, or its
 *	  partitions, children or Citus shards: targets.c) up to a cutoff fixed
 *	  when the pass begins, one batch at a time.
 *
 * ttl_pass_batch() is one batch of the pass, in the caller's transaction:
 * whole-partition drops first, on a partitioned table (partition.c); then
 * the target in hand, through the batch engine (batch.c); the next target
 * when one is done, locked, gone or without its index, in the same batch
 * when that one did no work.  A target whose lock is taken is skipped for
 * this pass, so one locked partition does not starve those after it; a
 * target that failed on its own lately is held (held.c) while the others
 * go on.  When a batch offers a backlog worth sharing, the worker may post
 * a shared drain over it (drain.c); while one runs, the pass's batches are
 * the lead's share of it.
 *
 * Errors: a batch raises its errors; the caller owns the transaction (the
 * worker runs each batch in its own, ttl_runner() each policy in a
 * subtransaction of the caller's) and asks ttl_pass_isolate whether the
 * failure is some rows' (it then retries the rows of the failed statement
 * in halves, or holds the one row the filter failed on), one table's of
 * several (held for a while), or the policy's.
 *
 * Memory: a pass lives in its own context (child of the caller's), which
 * holds the targets, their resolution, the resume positions and the groups
 * of rows to retry, and a rows context that each batch empties first.  No
 * locks of its own: the engine's are held until the batch's transaction
 * ends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "tcop/utility.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "ttl_index.h"
#include "engine/engine.h"
#include "engine/batch.h"
#include "engine/drain.h"
#include "policy/policy.h"
#include "citus/citus.h"
#include "env/env.h"
#include "shared/shared.h"

/* a new pass starts with this many rows per batch, then adapts */
#define TTL_FIRST_BATCH_ROWS	1000

/*
 * ttl_pass_no_index_error
 *		The error for a policy whose table has no usable index, for those
 *		who report it as one (ttl_runner(), the worker's once-only warning).
 */
void
ttl_pass_no_index_error(TtlPolicy *policy, int elevel)
{
	char	   *relname = ttl_qualified_relname(policy->relid);

	ereport(elevel,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("table %s has no usable btree index on column \"%s\"",
					relname ? relname : "?", policy->column_name),
			 errdetail("Its expired rows are not deleted until there is one."),
			 errhint("Call ttl_create_index() again to create the index.")));
}

/* ----------
 * Passes
 * ----------
 */

/*
 * ttl_pass_begin
 *		Start a pass: fix its cutoff time.  Its targets are listed at its
 *		first batch (ttl_pass_list), which takes over the resolution of the
 *		targets the previous pass had (if given) and ends it.  Reads no
 *		catalog: no transaction needed.
 */
TtlPass *
ttl_pass_begin(TtlPolicy *policy, TtlPass *previous, TtlHeld *held,
			   TimestampTz now, int32 row_limit, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "ttl_index pass",
											  ALLOCSET_SMALL_SIZES);
	TtlPass    *pass = MemoryContextAllocZero(cxt, sizeof(TtlPass));

	pass->cxt = cxt;
	/*
	 * A small first block: a policy's last pass is kept between passes
	 * (its resolution goes to the next), and an idle policy's rows context
	 * then holds nothing; with the default sizes its 8 kB first block alone
	 * was a fifth of an idle policy's memory.  Batches' rows grow it in
	 * blocks of the default sizes.
	 */
	pass->rowscxt = AllocSetContextCreate(cxt, "ttl_index batch rows",
										  ALLOCSET_SMALL_INITSIZE,
										  ALLOCSET_DEFAULT_INITSIZE,
										  ALLOCSET_DEFAULT_MAXSIZE);
	pass->now = now;
	pass->held = held;
	ttl_held_pass_begin(held);
	pass->previous = previous;
	pass->row_limit = row_limit > 0 ? row_limit : TTL_FIRST_BATCH_ROWS;
	pass->writes_at_start = ttl_writes_count(MyDatabaseId, policy->relid);
	pass->xid_at_start = ReadNextTransactionId();
	/* a worker's decision on compressing its full-page images (wal.c) */
	if (previous != NULL)
		pass->wal = previous->wal;
	return pass;
}

/*
 * ttl_pass_list
 *		List the pass's targets, each with its write counter as the pass
 *		starts on it, keeping the resolution the previous pass had made of
 *		the same tables.
 */
static void
ttl_pass_list(TtlPolicy *policy, TtlPass *pass)
{
	TtlPass    *previous = pass->previous;
	ListCell   *lc;

	/* once a pass, not once a batch: a table made a reference table since */
	ttl_citus_refuse(policy->relid, true);
	pass->targets = ttl_targets_list(policy, pass->cxt);
	pass->listed = true;
	foreach(lc, pass->targets)
	{
		TtlTarget  *t = (TtlTarget *) lfirst(lc);
		ListCell   *lc2;

		t->writes_at_start = ttl_writes_count(MyDatabaseId, t->relid);
		if (previous == NULL)
			continue;
		foreach(lc2, previous->targets)
		{
			TtlTarget  *old = (TtlTarget *) lfirst(lc2);

			if (old->relid != t->relid || old->only != t->only ||
				old->resolved_gen == 0 || old->cxt == NULL)
				continue;
			/* take over its resolution, memory and all */
			MemoryContextDelete(t->cxt);
			MemoryContextDelete(t->skipcxt);
			MemoryContextSetParent(old->cxt, pass->cxt);
			MemoryContextSetParent(old->skipcxt, pass->cxt);
			memcpy(t, old, offsetof(TtlTarget, writes_at_start));
			old->cxt = NULL;
			break;
		}
	}
	pass->previous = NULL;
	ttl_pass_end(previous);
	/* over its cap: the second cut-off of this pass (cap.c) */
	ttl_cap_compute(policy, pass);
}

/*
 * ttl_pass_idle
 *		The pass ended and is kept only for its targets' resolution (the
 *		next pass takes it over): what its batches collected goes.
 */
void
ttl_pass_idle(TtlPass *pass)
{
	if (pass == NULL)
		return;
	MemoryContextReset(pass->rowscxt);
}

/*
 * ttl_pass_end
 *		Free a pass and everything it holds.
 */
void
ttl_pass_end(TtlPass *pass)
{
	if (pass == NULL)
		return;
	ttl_pass_end(pass->previous);
	/* helpers on its backlog stop after their batch in hand */
	ttl_drain_end(pass);
	MemoryContextDelete(pass->cxt);
}

/*
 * ttl_pass_batch
 *		Run one batch of a policy's pass (see the top of the file).  Must be
 *		called inside a transaction.
 */
void
ttl_pass_batch(TtlPolicy *policy, TtlPass *pass, TtlBatchResult *result)
{
	memset(result, 0, sizeof(TtlBatchResult));
	pass->failing_relid = InvalidOid;
	pass->failing_target = NULL;
	/* what the last batch collected, kept until now for ttl_pass_isolate */
	MemoryContextReset(pass->rowscxt);
	ttl_drain_batch_begin(pass);

	/* the direct path bypasses the executor's check of this */
	if (pass->preview == NULL)
		PreventCommandIfReadOnly("DELETE");
	if (!pass->listed)
		ttl_pass_list(policy, pass);
	/* an anonymize policy never sets a distribution column (citus.c) */
	ttl_citus_check_set(policy);

	if (!pass->drops_done)
	{
		pass->drops_done = true;
		/* a distributed table's partitions are the coordinator's to drop */
		if (get_rel_relkind(policy->relid) == RELKIND_PARTITIONED_TABLE &&
			ttl_citus_kind(policy->relid) != TTL_CITUS_DISTRIBUTED)
		{
			instr_time	start;
			instr_time	elapsed;
			TtlOwnerSave save;

			INSTR_TIME_SET_CURRENT(start);
			ttl_owner_enter(ttl_table_owner(policy->relid), &save);
			ttl_batch_set_active(true);
			PG_TRY();
			{
				/* a preview counts them, and their rows below (preview.c) */
				if (pass->preview != NULL)
					pass->preview->partitions =
						ttl_partition_drop_expired(policy, pass->now, true);
				else
					result->partitions_dropped =
						ttl_partition_drop_expired(policy, pass->now, false);
			}
			PG_FINALLY();
			{
				ttl_batch_set_active(false);
			}
			PG_END_TRY();
			ttl_owner_leave(&save);
			INSTR_TIME_SET_CURRENT(elapsed);
			INSTR_TIME_SUBTRACT(elapsed, start);
			result->elapsed_ms = INSTR_TIME_GET_MILLISEC(elapsed);
			if (result->partitions_dropped > 0)
			{
				pass->dropped = true;
				result->outcome = TTL_BATCH_MORE;
				pass->pass_batches++;
				return;
			}
			/* nothing dropped: go on to the rows in the same transaction */
		}
	}

	for (;;)
	{
		TtlTarget  *t;
		TtlBatchOutcome outcome;

		if (pass->current >= list_length(pass->targets))
		{
			/* every target done (or skipped) */
			result->outcome = pass->skipped_locked ? TTL_BATCH_LOCKED :
				pass->missing_index ? TTL_BATCH_NO_INDEX : TTL_BATCH_DONE;
			if (pass->targets == NIL && !ttl_targets_may_be_none(policy))
				result->outcome = TTL_BATCH_GONE;
			break;
		}
		/* sharing the pass's tables with helpers (drain.c) */
		if (ttl_drain_active(pass))
		{
			if (ttl_drain_lead_batch(policy, pass, result))
				break;
			/* the job is over: the tables after it */
			continue;
		}
		t = (TtlTarget *) list_nth(pass->targets, pass->current);
		if (ttl_held_table_skip(pass->held, t->relid, GetCurrentTimestamp()))
		{
			/* it failed on its own lately: the others go on meanwhile */
			pass->held_tables++;
			pass->current++;
			continue;
		}
		/* where its expired keys end, if it may be offered (drain.c) */
		result->want_top = ttl_drain_may_offer(pass, t);
		outcome = ttl_batch_run(policy, pass, t, result);
		if (outcome == TTL_BATCH_MORE)
		{
			/* a backlog worth sharing, maybe (drain.c) */
			ttl_drain_offer(pass, t, result);
			result->outcome = TTL_BATCH_MORE;
			break;
		}

		/* this target is done, gone, locked or without index: the next */
		if (outcome == TTL_BATCH_LOCKED)
			pass->skipped_locked = true;
		else if (outcome == TTL_BATCH_NO_INDEX)
			pass->missing_index = true;
		pass->current++;
		if ((result->deleted > 0 || result->skipped_locked > 0 || result->left > 0) &&
			pass->current < list_length(pass->targets))
		{
			/* the batch did work: the next target gets the next batch */
			result->outcome = TTL_BATCH_MORE;
			break;
		}
		/* an empty, locked or gone target: try the next one in this batch */
	}

	pass->pass_rows += result->deleted;
	pass->pass_batches++;
	pass->pass_skipped_locked += result->skipped_locked;
	pass->pass_left += result->left;
}

/*
 * ttl_pass_hold_target
 *		A batch failed for a reason that is not some rows' it can find: the
 *		table's, when the batch was on one of several tables in hand outside
 *		a shared job.  That table is held (held.c), and the pass goes on
 *		with the next.  Returns false when that is not the case: the failure
 *		is the policy's.
 */
static bool
ttl_pass_hold_target(TtlPass *pass, TtlTarget *failing, int sqlerrcode,
					 TimestampTz now, TtlTarget **held_table)
{
	if (failing == NULL || ttl_error_is_cancel(sqlerrcode) ||
		ttl_drain_active(pass) || list_length(pass->targets) < 2 ||
		pass->current >= list_length(pass->targets) ||
		list_nth(pass->targets, pass->current) != failing)
		return false;
	ttl_held_add_table(pass->held, failing->relid, now);
	*held_table = failing;
	failing->retry = NIL;
	pass->current++;
	return true;
}

/*
 * ttl_pass_isolate
 *		After a batch failed with an error that may be some rows' (held.c):
 *		retry the rows of its statement in two halves, each a batch of its
 *		own, or hold the single row it failed on (that of the filter, or the
 *		only row of the statement).  Returns false when there is nothing to
 *		isolate: the failure is the policy's.  *held_one says whether a row
 *		was held.  A full held set is no failure: the row is held all the
 *		same, and stepped over (held.c): the rows of a statement are behind
 *		the target's resume point already (batch.c), a row the filter failed
 *		on is stepped over by the target's next scan.  A failure that is not
 *		some rows' holds the table the batch was on instead, when the pass
 *		has others (*held_table: that target).  failed->skipped_locked is
 *		left as the locked rows the failed batch stepped over for good (the
 *		caller counts them), else 0.
 */
bool
ttl_pass_isolate(TtlPolicy *policy, TtlPass *pass, TtlBatchResult *failed,
				 int sqlerrcode, bool *held_one, TtlTarget **held_table)
{
	TimestampTz now = GetCurrentTimestamp();
	ListCell   *lc;
	TtlTarget  *t = NULL;
	TtlTarget  *failing = pass->failing_target;
	MemoryContext old;
	int64		carried;

	*held_one = false;
	*held_table = NULL;
	pass->failing_target = NULL;
	carried = failed->skipped_locked;
	failed->skipped_locked = 0;
	if (!ttl_held_error_row_related(sqlerrcode))
		return ttl_pass_hold_target(pass, failing, sqlerrcode, now, held_table);

	/* the filter failed on a row */
	if (OidIsValid(pass->failing_relid))
	{
		Oid			relid = pass->failing_relid;

		pass->failing_relid = InvalidOid;
		*held_one = true;
		if (!ttl_held_add(pass->held, relid, &pass->failing_tid,
						  pass->failing_xmin, now))
		{
			/* not remembered: the target's next scan steps over it */
			if (failing == NULL || failing->relid != relid)
			{
				failing = NULL;
				foreach(lc, pass->targets)
				{
					if (((TtlTarget *) lfirst(lc))->relid == relid)
						failing = (TtlTarget *) lfirst(lc);
				}
			}
			if (failing == NULL)
				return false;
			failing->have_step = true;
			failing->step_tid = pass->failing_tid;
			/* a sweep restarts at a page: the index scan steps exactly */
			failing->sweep = false;
			failing->no_sweep = true;
		}
		return true;
	}
	if (failed->ntids <= 0 || failed->tids == NULL)
		return ttl_pass_hold_target(pass, failing, sqlerrcode, now, held_table);

	foreach(lc, pass->targets)
	{
		if (((TtlTarget *) lfirst(lc))->relid == failed->tids_relid)
			t = (TtlTarget *) lfirst(lc);
	}
	if (t == NULL)
		return false;

	/*
	 * The locked rows its scan stepped over are behind the target's resume
	 * point with the rest (batch.c): this pass meets them no more, so they
	 * count as a committed batch's would (failed->skipped_locked, for the
	 * caller's counters; in the other cases above, the next scan meets them
	 * again and nothing is carried).
	 */
	failed->skipped_locked = carried;
	pass->pass_skipped_locked += carried;

	if (failed->ntids == 1)
	{
		/* remembered or not, the scan is past it (batch.c) */
		*held_one = true;
		(void) ttl_held_add(pass->held, t->relid, &failed->tids[0],
							failed->xmins[0], now);
		return true;
	}

	/* two halves, the first retried first; the list lives with the pass */
	old = MemoryContextSwitchTo(pass->cxt);
	for (int half = 1; half >= 0; half--)
	{
		int			from = half == 0 ? 0 : failed->ntids / 2;
		int			n = half == 0 ? failed->ntids / 2 : failed->ntids - failed->ntids / 2;
		TtlTidGroup *g = MemoryContextAlloc(pass->cxt, sizeof(TtlTidGroup));

		g->n = n;
		g->tids = MemoryContextAlloc(pass->cxt, sizeof(ItemPointerData) * n);
		g->xmins = MemoryContextAlloc(pass->cxt, sizeof(TransactionId) * n);
		g->capped = MemoryContextAlloc(pass->cxt, sizeof(bool) * n);
		memcpy(g->tids, failed->tids + from, sizeof(ItemPointerData) * n);
		memcpy(g->xmins, failed->xmins + from, sizeof(TransactionId) * n);
		memcpy(g->capped, failed->capped_rows + from, sizeof(bool) * n);
		t->retry = lcons(g, t->retry);
	}
	MemoryContextSwitchTo(old);
	ttl_batch_forget_rows(failed);
	return true;
}
