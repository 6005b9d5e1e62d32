/*-------------------------------------------------------------------------
 *
 * helper.c
 *	  Helpers: background workers that a database's worker starts to drain
 *	  one large backlog with it, each taking slices of the key range
 *	  (parallel.c) and deleting in batches of its own.
 *
 * When.  A pass whose second full batch (third on a scattered target)
 * still stops short of the cutoff on a target (purge.c) offers it; the
 * worker starts up to ttl_index.max_parallel_workers helpers when:
 *	- the key can be cut (timestamps, dates, integer and float8 epochs);
 *	- no rate limit applies (ttl_index.rate_limit, the policy's): one
 *	  process keeps to it more simply than several;
 *	- the application is not writing (yield.c): helpers are for an idle
 *	  server's backlog;
 *	- the oldest snapshot on the server is not older than the pass: when one
 *	  is, the deleted rows' index entries stay until it ends, and the
 *	  worker's record of them (skip.c), which a shared drain does not keep,
 *	  is what keeps later passes cheap;
 *	- the workers' capacity has room and no database waits (parallel.c).
 *
 * A job covers the table in hand and the targets after it in the pass
 * (partitions, Citus shards: parallel.c), so a helper stays from one table
 * to the next; a table it finds locked, gone or without its index is given
 * up for the pass, and it goes on with the others.  A helper stops, giving
 * its slice back to the worker, as soon as any of those no longer holds, a
 * replica falls behind (replicas.c), a batch fails (the worker, which
 * isolates rows that fail, retries that slice), or its worker's job ends.
 * It never restarts; the worker may start helpers again on a later
 * backlog.
 *
 * A helper's changes carry a replication origin of its own (its process
 * slot's, origin.c) when the worker's would carry one; a helper that cannot
 * get one leaves, and the worker takes its rows over.
 *
 * A helper connects as the bootstrap superuser with the worker's pinned
 * settings, and runs every batch as the table owner, as the worker does
 * (purge.c, owner.c).  Its rows are counted in the policy's statistics
 * after each commit, and in the worker's pass when the job ends.
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

/* slices per process sharing a backlog */
#define TTL_SLICES_PER_PROCESS	4
/* how long a helper with nothing to take waits before it looks again */
#define TTL_HELPER_WAIT_MS		20

/*
 * ttl_helpers_wanted
 *		Whether helpers may share this policy's backlog now (see the top of
 *		the file), short of the capacity, which ttl_parallel_post checks.
 */
static bool
ttl_helpers_wanted(TtlPolicy *policy, TtlPass *pass)
{
	TransactionId horizon;

	if (ttl_max_parallel_workers <= 0 || ttl_rate_limit > 0 ||
		policy->rate_limit > 0 || ttl_yield_writing())
		return false;
	horizon = GetOldestNonRemovableTransactionId(NULL);
	return !TransactionIdIsValid(horizon) ||
		!TransactionIdPrecedes(horizon, pass->xid_at_start);
}

/*
 * ttl_helpers_start
 *		After a batch of the worker's, outside a transaction: the pass has
 *		offered a target (pass->split) from split_from on.  Post a job over
 *		its range up to the cutoff and start its helpers, or do nothing.
 */
void
ttl_helpers_start(TtlPolicy *policy, TtlPass *pass)
{
	TtlTarget  *t = pass->split;
	TtlCutoff	cutoff;
	int64		lo;
	int64		hi;
	int			want = Min(ttl_max_parallel_workers, TTL_MAX_HELPERS);
	int			n;
	int			slotno = -1;
	uint32		job_id = 0;
	TtlJobTarget tables[TTL_MAX_JOB_TARGETS];
	int			ntables;

	pass->split = NULL;
	if (t == NULL || t->parallel || !ttl_helpers_wanted(policy, pass))
		return;

	ttl_cutoff_compute(t->keytype, policy->unit_ns, ttl_policy_zone(policy),
					   pass->now, policy->expire_after, &cutoff);
	if (!ttl_key_ordinal(t->keytype, pass->split_from, &lo) ||
		!ttl_key_ordinal(t->keytype, cutoff.bound, &hi))
		return;
	ntables = ttl_pass_job_tables(pass, t, tables);
	n = ttl_parallel_post(policy->id, t->keytype, pass->now, tables, ntables,
						  lo, hi, TTL_SLICES_PER_PROCESS * (want + 1), want,
						  &slotno, &job_id);
	if (n <= 0)
		return;
	ttl_pass_set_parallel(pass, ntables, hi, job_id);

	for (int i = 0; i < n; i++)
	{
		BackgroundWorker bgw;

		memset(&bgw, 0, sizeof(bgw));
		bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
		bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
		bgw.bgw_restart_time = BGW_NEVER_RESTART;
		snprintf(bgw.bgw_library_name, BGW_MAXLEN, "ttl_index");
		snprintf(bgw.bgw_function_name, BGW_MAXLEN, "ttl_helper_main");
		snprintf(bgw.bgw_name, BGW_MAXLEN, "ttl_index helper");
		snprintf(bgw.bgw_type, BGW_MAXLEN, "ttl_index helper");
		bgw.bgw_main_arg = Int32GetDatum(slotno);
		memcpy(bgw.bgw_extra, &job_id, sizeof(job_id));
		if (!RegisterDynamicBackgroundWorker(&bgw, NULL))
		{
			/* no background worker slot: the others share it */
			ttl_parallel_unreserve();
		}
	}
	ereport(DEBUG1,
			(errmsg("ttl_index: %d helper(s) share the backlog of policy %d",
					n, policy->id)));
}

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
ttl_helper_must_stop(TtlPolicy *policy)
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
	if (!ttl_enabled || ttl_max_parallel_workers <= 0 || ttl_rate_limit > 0)
		return "the settings changed";
	if (ttl_yield_writing())
		return "the application is writing";
	if (ttl_replicas_hold(&phase))
		return phase;
	return NULL;
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
	int			outcome;

	/* marked as the worker's would be, or not at all (origin.c) */
	if (!ttl_origin_batch_begin(policy))
	{
		ttl_origin_batch_end();
		return -1;
	}
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	ttl_batch_wal_mode(policy, pass);
	/* bounded as the worker's batches are (timeout.c) */
	ttl_timeout_batch_start();
	PG_TRY();
	{
		pgstat_report_activity(STATE_RUNNING, "ttl_index: purging expired rows (helper)");
		outcome = ttl_purge_slice(policy, pass, result);
		if (result->flush)
			ttl_batch_wal_flush();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		ttl_timeout_batch_end();
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(LOG,
				(errmsg("ttl_index helper: a batch of policy %d failed; the worker takes its rows over",
						policy->id),
				 errdetail("%s", ttl_timeout_fired() ?
						   "The batch ran past ttl_index.batch_timeout." : edata->message)));
		FreeErrorData(edata);
		outcome = -1;
	}
	PG_END_TRY();
	ttl_timeout_batch_end();
	ttl_origin_batch_end();
	ttl_owner_release_session_locks();
	if (outcome >= 0)
		ttl_batch_wal_learn(policy, pass, result->deleted);
	pgstat_report_activity(STATE_IDLE, NULL);
	return outcome;
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
	pass = ttl_pass_for_helper(&policy, &info, cxt);

	for (;;)
	{
		TtlClaim	claim;
		int			slice;

		if ((why = ttl_helper_must_stop(&policy)) != NULL)
			break;
		slice = ttl_parallel_claim(&claim);
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
		ttl_pass_set_slice(pass, slice, &claim);
		for (;;)
		{
			TtlBatchResult result;

			if ((why = ttl_helper_must_stop(&policy)) != NULL)
				break;
			ttl_pass_slice_refresh(pass);
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
			if (!ttl_pass_slice_after(pass, &result))
				break;
		}
		if (why != NULL)
			break;
	}
	ttl_pass_slice_abandon(pass);
	ereport(DEBUG1,
			(errmsg_internal("ttl_index helper of policy %d leaves after %lld rows: %s",
							 policy.id, (long long) pass->pass_rows, why)));
	proc_exit(0);
}
