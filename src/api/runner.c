/*-------------------------------------------------------------------------
 *
 * runner.c
 *	  ttl_runner(): one full pass over every enabled policy of the current
 *	  database whose table the caller owns (superusers: all), now, in the
 *	  caller's transaction, with the same engine as the worker.  A policy
 *	  outside its purge window (window.c) is left alone, with a NOTICE: its
 *	  windows are the hours its table may bear a purge in.
 *
 * It deletes what the worker would: the cutoff, the rows and the figures do
 * not depend on the calling session (its TimeZone, search_path, DateStyle,
 * role settings: see owner.c and expiry.c), and user code runs as each
 * table's owner.
 *
 * Each policy runs in a subtransaction of the caller's: a policy that fails
 * is rolled back alone, reported as a WARNING (with its SQLSTATE, and the
 * table in the context) and counted in ttl_index_stats, and the others go
 * on; ttl_runner() itself does not fail for it.  A failed policy runs again
 * with a subtransaction per batch, so that what failed is found and left in
 * place while the rest is deleted: some rows (in halves, down to single
 * rows), or one of its tables (held.c); a failure that is neither is then
 * reported.  A query cancel, a statement timeout or a shutdown request
 * always ends the call.  Called from inside a purge (a trigger of the table
 * calling it), it refuses: the purge in hand would count its rows twice.
 *
 * Its counts reach ttl_index_stats only if the caller's transaction commits
 * (stats.c); errors are counted at once.  The batches are bounded, but their
 * locks and snapshot last until the caller commits: for bounded
 * transactions leave the work to the worker.
 *
 * Outside a transaction block it leads a shared drain of a large backlog
 * as a worker does (drain.c, parallel.c: a runner slot of its own): its
 * helpers commit their batches as they go, as the table owner, whatever
 * becomes of the call; in a transaction block it drains alone, so that a
 * ROLLBACK undoes all of it.  The job ends with the policy's pass, or when
 * the policy fails or the transaction aborts (hooks.c).
 *
 * Its batches' full-page images are compressed as a worker's are
 * (ttl_index.wal_compression, with the same trial: wal.c), the setting made
 * for the policy's subtransaction only; the caller's commit and every
 * setting of the session are as they were after the call.
 *
 * Memory: each batch's allocations go in a context reset after it; the
 * pass lives in a context of its own, deleted with the policy.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "ttl_index.h"
#include "api/api.h"
#include "engine/engine.h"
#include "engine/batch.h"
#include "engine/drain.h"
#include "policy/policy.h"
#include "env/env.h"
#include "shared/shared.h"

PG_FUNCTION_INFO_V1(ttl_runner);

/*
 * Whether this call's passes may share a backlog with helpers, as a
 * worker's do (drain.c): outside a transaction block only, whose caller
 * could not roll back what the helpers commit; not once the transaction
 * has written (an XID), which may have changed a policy the helpers, in
 * transactions of their own, would read as it was; not in a server without
 * the library preloaded (no shared memory).  Read when the call starts,
 * before the policies' subtransactions.
 */
static bool RunnerShares = false;

/*
 * ttl_runner_report
 *		A policy failed: warn (once per policy and SQLSTATE for held rows)
 *		and count it.
 */
static void
ttl_runner_report(TtlPolicy *p, ErrorData *edata, bool held_one, TtlHeld *held,
				  TtlTarget *held_table)
{
	char	   *relname = ttl_qualified_relname(p->relid);

	/* a lock not free at once is no failure, for the worker as for us */
	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
	{
		ttl_stats_count_locked(MyDatabaseId, p);
		ereport(NOTICE,
				(errmsg("ttl_index: table %s or some of its expired rows are locked by another transaction; they are left for a later pass",
						relname ? relname : "?")));
		return;
	}
	ttl_stats_count_error(MyDatabaseId, p, edata->sqlerrcode, edata->message);
	if (held_one && !ttl_held_first_report(held, edata->sqlerrcode))
		return;
	if (held_table != NULL)
	{
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("ttl_index: could not purge expired rows of %s, one of the tables of the policy on %s, which is left for now (SQLSTATE %s): %s",
						held_table->relname ? held_table->relname : "a table",
						relname ? relname : "?", unpack_sql_state(edata->sqlerrcode),
						edata->message),
				 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
				 edata->context ? errcontext("%s", edata->context) : 0));
		return;
	}
	ereport(WARNING,
			(errcode(edata->sqlerrcode),
			 held_one ?
			 errmsg("ttl_index: an expired row of table %s cannot be removed and is left in place (SQLSTATE %s): %s",
					relname ? relname : "?", unpack_sql_state(edata->sqlerrcode),
					edata->message) :
			 errmsg("ttl_index: could not purge expired rows of table %s (SQLSTATE %s): %s",
					relname ? relname : "?", unpack_sql_state(edata->sqlerrcode),
					edata->message),
			 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
			 edata->hint ? errhint("%s", edata->hint) : 0,
			 edata->context ? errcontext("%s", edata->context) : 0));
}

/*
 * ttl_runner_pass
 *		One pass over a policy.  With careful, each batch runs in a
 *		subtransaction of its own and a failure of some rows is isolated;
 *		else the batches run in the caller's (sub)transaction and every
 *		error propagates.  Returns rows deleted; *failed is set (with the
 *		error, the caller's to free) when the policy failed.
 */
static int64
ttl_runner_pass(TtlPolicy *p, TimestampTz now, bool careful,
				ErrorData **failed, bool *row_failure, TtlHeld *held,
				MemoryContext cxt)
{
	MemoryContext batchcxt = AllocSetContextCreate(cxt, "ttl_index runner batch",
												   ALLOCSET_DEFAULT_SIZES);
	TtlPass    *pass = ttl_pass_begin(p, NULL, held, now, 0, cxt);
	TtlBatchResult result;
	int64		total = 0;

	pass->runner = RunnerShares;

	*failed = NULL;
	*row_failure = false;
	for (;;)
	{
		MemoryContext old = MemoryContextSwitchTo(batchcxt);

		/* full-page images compressed as a worker's (wal.c), until the policy's end */
		ttl_wal_batch_compress(p, pass, true);
		if (!careful)
		{
			ttl_pass_batch(p, pass, &result);
		}
		else
		{
			ResourceOwner owner = CurrentResourceOwner;
			ErrorData  *edata = NULL;

			BeginInternalSubTransaction(NULL);
			MemoryContextSwitchTo(batchcxt);
			PG_TRY();
			{
				ttl_pass_batch(p, pass, &result);
				ReleaseCurrentSubTransaction();
			}
			PG_CATCH();
			{
				/* no break or return in here (DESIGN.md, trap 22): a flag */
				edata = ttl_error_catch_subxact(cxt, owner);
			}
			PG_END_TRY();
			CurrentResourceOwner = owner;
			if (edata != NULL)
			{
				bool		held_one;
				TtlTarget  *held_table;
				int64		carried;

				MemoryContextSwitchTo(batchcxt);
				if (!ttl_pass_isolate(p, pass, &result, edata->sqlerrcode, &held_one,
									  &held_table))
				{
					/* the policy failed: its rolled-back batch counts nothing */
					*failed = edata;
					MemoryContextSwitchTo(old);
					break;
				}
				if (held_table != NULL || held_one)
					ttl_runner_report(p, edata, held_one, held, held_table);
				FreeErrorData(edata);

				/*
				 * Rolled back: nothing it did stays, nothing is counted but
				 * the locked rows it stepped over for good (pass.c)
				 */
				carried = result.skipped_locked;
				memset(&result, 0, sizeof(result));
				result.skipped_locked = carried;
				result.outcome = TTL_BATCH_MORE;
			}
		}
		MemoryContextSwitchTo(old);
		/* a state, not a failed batch: said, not counted (as the worker) */
		if (result.outcome == TTL_BATCH_NO_INDEX)
			ttl_pass_no_index_error(p, WARNING);
		ttl_stats_count_batch(MyDatabaseId, p, &result);
		ttl_wal_batch_learn(p, pass, result.deleted);
		total += result.deleted;
		CommandCounterIncrement();
		MemoryContextReset(batchcxt);
		if (result.outcome != TTL_BATCH_MORE || *failed)
			break;
		if (!pass->runner)
			continue;
		if (ttl_drain_offered(pass))
			ttl_drain_start(p, pass);
		else if (ttl_drain_waiting(pass))
		{
			/* the helpers hold the last slices: wait for one to end */
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 100, ttl_wait_event("waiting for helpers"));
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}

	/* its lock on the partitioned table lasts until the call ends */
	if (pass->dropped)
		RunnerShares = false;
	if (*failed == NULL && result.outcome == TTL_BATCH_DONE)
		ttl_stats_count_pass(MyDatabaseId, p, pass->pass_rows,
							 pass->pass_left + ttl_held_count(held),
							 pass->pass_skipped_locked);
	ttl_pass_end(pass);
	MemoryContextDelete(batchcxt);
	return total;
}

/*
 * ttl_runner_policy
 *		One policy in a subtransaction (see the top of the file).  Returns
 *		the rows it deleted, 0 if it failed.
 */
static int64
ttl_runner_policy(TtlPolicy *p, TimestampTz now)
{
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext policycxt = AllocSetContextCreate(cxt, "ttl_index runner policy",
													ALLOCSET_DEFAULT_SIZES);
	ResourceOwner owner = CurrentResourceOwner;
	TtlHeld    *held = ttl_held_create(policycxt);
	volatile int64 total = 0;
	volatile bool careful = false;
	ErrorData  *failed = NULL;
	bool		row_failure = false;

	/* a count left by a call cancelled before it read it is not ours */
	(void) ttl_parallel_runner_rows();

	for (int attempt = 0; attempt < 2; attempt++)
	{
		ErrorData  *edata = NULL;

		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(policycxt);
		PG_TRY();
		{
			total = ttl_runner_pass(p, now, careful, &failed, &row_failure,
									held, policycxt);
			/* a careful pass keeps what it did before a failure */
			ReleaseCurrentSubTransaction();
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(policycxt);
			if (failed == NULL)
				edata = CopyErrorData();
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
		}
		PG_END_TRY();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;

		if (failed != NULL)
		{
			/* the careful pass found a failure that is not some rows' */
			ttl_runner_report(p, failed, false, held, NULL);
			break;
		}
		if (edata == NULL)
			break;
		total = 0;
		if (ttl_error_is_cancel(edata->sqlerrcode))
		{
			/* its helpers stop, whoever catches the cancel */
			ttl_parallel_runner_end();
			ReThrowError(edata);
		}
		/* a lock not free at once: left for a later pass, as the worker does */
		if (careful || edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		{
			ttl_runner_report(p, edata, false, held, NULL);
			break;
		}

		/*
		 * Again, batch by batch, isolating what failed: some rows, or one
		 * table of several (held.c).  A failure that is neither fails the
		 * careful pass too, and is reported then.
		 */
		FreeErrorData(edata);
		careful = true;
		/* a shared drain of the failed pass ends with it */
		ttl_parallel_runner_end();
	}
	ttl_parallel_runner_end();
	MemoryContextDelete(policycxt);
	/*
	 * and the rows its helpers committed, whatever became of its passes
	 * (but for a helper's batch in flight when a job was cancelled, which
	 * ttl_index_stats counts)
	 */
	return total + ttl_parallel_runner_rows();
}

/*
 * ttl_runner() returns bigint
 *		One full pass over every enabled policy of this database whose table
 *		the caller owns (superusers: all).  Returns rows deleted, archived or
 *		soft-deleted.  Unlike the workers, it does not look at
 *		ttl_index.enabled: calling it is an explicit request.
 */
Datum
ttl_runner(PG_FUNCTION_ARGS)
{
	List	   *policies;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz opens;
	int64		total = 0;

	/* a session's state, not a policy's failure: say it once */
	PreventCommandIfReadOnly("DELETE");
	if (ttl_batch_active())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("ttl_runner() cannot be called inside a purge"),
				 errdetail("A trigger, rule or function that a purge runs called it.")));
	ttl_targets_init();
	policies = ttl_load_policies(CurrentMemoryContext);
	/* in a transaction block, SET CONSTRAINTS is the caller's (batch.c) */
	ttl_batch_set_constraints_immediate(!IsTransactionBlock());
	RunnerShares = ttl_shmem_ready() && IsUnderPostmaster && !IsTransactionBlock() &&
		!TransactionIdIsValid(GetTopTransactionIdIfAny());
	ttl_stats_defer(true);
	foreach(lc, policies)
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);

		CHECK_FOR_INTERRUPTS();
		if (!p->enabled || get_rel_name(p->relid) == NULL)
			continue;
		if (!has_privs_of_role(GetUserId(), ttl_table_owner(p->relid)))
			continue;
		if (!ttl_window_find(p, now, &opens, NULL))
		{
			/* the hours it may purge in are the operator's word (window.c) */
			ereport(NOTICE,
					(errmsg("ttl_index: the policy on %s, column %s, is outside its purge window",
							ttl_qualified_relname(p->relid), p->column_name),
					 p->windows.n < 0 ?
					 errdetail("Its purge_window \"%s\" cannot be read.", p->purge_window) :
					 errdetail("Its next window opens at %s.", timestamptz_to_str(opens))));
			continue;
		}
		total += ttl_runner_policy(p, now);
	}
	ttl_stats_defer(false);
	ttl_batch_set_constraints_immediate(true);
	PG_RETURN_INT64(total);
}
