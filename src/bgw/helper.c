/*-------------------------------------------------------------------------
 *
 * helper.c
 *	  The helper process: a background worker that a database's worker
 *	  (or a ttl_runner() call, parallel.c) starts to drain one large
 *	  backlog with it (drain.c says when, and owns the slices), claiming
 *	  slices of the key range and deleting in batches of its own, one
 *	  transaction each.
 *
 * A helper stops, giving its slice back to the worker, as soon as the job
 * is over, the settings no longer allow helpers, the application writes
 * (yield.c), a replica falls behind (replicas.c), or a batch fails (the
 * worker, which isolates rows that fail, retries that slice).  A table it
 * finds locked, gone or without its index is given up for the pass, and it
 * goes on with the others.  It never restarts; the worker may start
 * helpers again on a later backlog.
 *
 * A helper's changes carry a replication origin of its own (its process
 * slot's, origin.c) when the worker's would carry one; a helper that cannot
 * get one leaves, and the worker takes its rows over.
 *
 * A helper connects as the bootstrap superuser with the worker's pinned
 * settings, and runs every batch as the table owner, as the worker does
 * (batch.c, owner.c).  Its rows are counted in the policy's statistics
 * after each commit, and in the worker's pass when the job ends.  A failed
 * batch is logged as autovacuum logs a failed table: the original error,
 * with a context line saying whose batch it was.
 *
 * Memory: the helper's policy and pass live in one context for its life;
 * a batch's allocations go with its transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "ttl_index.h"
#include "bgw/bgw.h"
#include "engine/engine.h"
#include "engine/drain.h"
#include "policy/policy.h"
#include "env/env.h"
#include "shared/shared.h"

/* how long a helper with nothing to take waits before it looks again */
#define TTL_HELPER_WAIT_MS		20

/*
 * ttl_helper_load
 *		The policy of the job, read in a transaction of its own; false when
 *		it is gone or paused.
 */
static bool
ttl_helper_load(int32 policy_id, TtlPolicy *policy, MemoryContext cxt)
{
	List	   *policies;
	ListCell   *lc;
	bool		found = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	policies = ttl_load_policies(cxt);
	foreach(lc, policies)
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);

		if (p->id == policy_id && p->enabled)
		{
			*policy = *p;
			found = true;
		}
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	return found;
}

/*
 * ttl_helper_must_stop
 *		Between batches: why the helper should give its slice back and
 *		leave (see the top of the file), or NULL.
 */
static const char *
ttl_helper_must_stop(TtlPolicy *policy, bool runner)
{
	const char *phase;

	CHECK_FOR_INTERRUPTS();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	if (ttl_parallel_must_stop())
		return "the job is over";
	/*
	 * a ttl_runner() call's helpers purge whatever ttl_index.enabled says;
	 * a worker's obey the configuration's value (settings.c), and stop with
	 * the job when a database pause makes their worker leave
	 */
	if ((!ttl_shmem_server_enabled() && !runner) || ttl_max_parallel_workers <= 0 || ttl_rate_limit > 0)
		return "the settings changed";
	if (ttl_yield_writing())
		return "the application is writing";
	/* a call's helpers take no worker a database waits for (parallel.c) */
	if (runner && ttl_parallel_database_waits())
		return "a database waits for a worker";
	if (ttl_replicas_hold(&phase))
		return phase;
	return NULL;
}

/*
 * The batch ttl_helper_batch runs, for the steps of its transaction
 * (ttl_error_catch_xact), and the outcome it returns.
 */
typedef struct TtlHelperBatch
{
	TtlPolicy  *policy;
	TtlPass    *pass;
	TtlBatchResult *result;
	int			outcome;
} TtlHelperBatch;

/*
 * ttl_helper_batch_begin
 *		A batch's transaction has begun: set its WAL mode and arm its
 *		deadline.
 */
static void
ttl_helper_batch_begin(void *arg)
{
	TtlHelperBatch *b = (TtlHelperBatch *) arg;

	ttl_wal_batch_mode(b->policy, b->pass);
	/* bounded as the worker's batches are (timeout.c) */
	ttl_timeout_batch_start();
}

/*
 * ttl_helper_batch_body
 *		The batch proper, its errors caught: run it in the slice (drain.c),
 *		and flush its commit when it asks.
 */
static void
ttl_helper_batch_body(void *arg)
{
	TtlHelperBatch *b = (TtlHelperBatch *) arg;

	pgstat_report_activity(STATE_RUNNING, "ttl_index: purging expired rows (helper)");
	b->outcome = ttl_drain_helper_batch(b->policy, b->pass, b->result);
	if (b->result->flush)
		ttl_wal_batch_flush();
}

/*
 * ttl_helper_batch
 *		One batch of the helper in its slice, in its own transaction.
 *		Returns the outcome, or -1 when the batch failed (logged; the
 *		worker retries the slice).
 */
static int
ttl_helper_batch(TtlPolicy *policy, TtlPass *pass, TtlBatchResult *result)
{
	MemoryContext cxt = CurrentMemoryContext;
	TtlHelperBatch batch = {.policy = policy, .pass = pass, .result = result};
	TtlXactWork work = {
		.begin = ttl_helper_batch_begin,
		.body = ttl_helper_batch_body,
		.caught = ttl_timeout_batch_end,
		.arg = &batch,
	};
	ErrorData  *edata;

	/* marked as the worker's would be, or not at all (origin.c) */
	if (!ttl_origin_batch_begin(policy))
	{
		ttl_origin_batch_end();
		return -1;
	}
	SetCurrentStatementStartTimestamp();
	edata = ttl_error_catch_xact(cxt, &work);
	if (edata != NULL)
	{
		ttl_error_log(edata, LOG,
					  "ttl_index helper: a batch of policy %d failed (SQLSTATE %s)%s; the worker takes its rows over",
					  policy->id, unpack_sql_state(edata->sqlerrcode),
					  ttl_timeout_fired() ? ": it ran past ttl_index.batch_timeout" : "");
		FreeErrorData(edata);
		batch.outcome = -1;
	}
	ttl_timeout_batch_end();
	ttl_origin_batch_end();
	ttl_owner_release_session_locks();
	if (batch.outcome >= 0)
		ttl_wal_batch_learn(policy, pass, result->deleted);
	pgstat_report_activity(STATE_IDLE, NULL);
	return batch.outcome;
}

/*
 * ttl_helper_main
 *		Entry point of a helper: main_arg is the database's slot, bgw_extra
 *		the job it was started for.
 */
void
ttl_helper_main(Datum main_arg)
{
	int			slotno = DatumGetInt32(main_arg);
	uint32		job_id;
	TtlJobInfo	info;
	TtlPolicy	policy;
	TtlPass    *pass;
	MemoryContext cxt;
	const char *why = NULL;

	memcpy(&job_id, MyBgworkerEntry->bgw_extra, sizeof(job_id));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* the job may be over already: then never connect */
	if (!ttl_parallel_attach(slotno, job_id, &info))
		proc_exit(0);
	BackgroundWorkerInitializeConnectionByOid(info.dboid, InvalidOid, 0);
	ttl_pin_process_settings("ttl_index helper");
	ttl_yield_start();
	ttl_targets_init();

	cxt = AllocSetContextCreate(TopMemoryContext, "ttl_index helper",
								ALLOCSET_DEFAULT_SIZES);
	if (!ttl_helper_load(info.policy_id, &policy, cxt))
		proc_exit(0);
	pass = ttl_pass_begin(&policy, NULL, ttl_held_create(cxt), info.pass_now, 0, cxt);
	ttl_drain_join(pass, &info);

	for (;;)
	{
		int			slice;

		if ((why = ttl_helper_must_stop(&policy, info.runner)) != NULL)
			break;
		slice = ttl_drain_claim(pass);
		if (slice == TTL_CLAIM_BUSY)
		{
			/*
			 * Nothing to take for now: the slices left are others', and one
			 * that starts at an index's start cannot be halved before its
			 * first batch says where it stands.  Look again shortly; the
			 * job ends (TTL_CLAIM_OVER) when its last slice is done.
			 */
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 TTL_HELPER_WAIT_MS, ttl_wait_event("helper waiting"));
			ResetLatch(MyLatch);
			continue;
		}
		if (slice < 0)
		{
			why = "no slice left";
			break;
		}
		for (;;)
		{
			TtlBatchResult result;

			if ((why = ttl_helper_must_stop(&policy, info.runner)) != NULL)
				break;
			if (ttl_helper_batch(&policy, pass, &result) < 0)
			{
				why = "a batch failed";
				break;
			}
			pgstat_report_stat(false);
			ttl_stats_count_batch(MyDatabaseId, &policy, &result);

			/*
			 * At the slice's end, the next; a table found locked, gone or
			 * without its index is given up for this pass (the worker
			 * learns why), and the helper goes on with the others.
			 */
			if (!ttl_drain_helper_after(pass, &result))
				break;
		}
		if (why != NULL)
			break;
	}
	ttl_drain_leave(pass);
	ereport(DEBUG1,
			(errmsg_internal("ttl_index helper of policy %d leaves after %lld rows: %s",
							 policy.id, (long long) pass->pass_rows, why)));
	proc_exit(0);
}
