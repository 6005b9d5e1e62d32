/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The per-database worker: its main loop, the scheduler that shares it
 *	  fairly between policies, and ttl_run_all_in_transaction(), the same
 *	  engine run inside a caller's transaction for ttl_runner().
 *
 * Scheduling.  Each policy has a pass: a cutoff fixed when the pass starts,
 * and a resume key.  Passes advance in rounds: one batch (one transaction,
 * bounded by rows and by ttl_index.batch_time) per policy in pass, in
 * catalog order, so a multi-million-row backlog gets one batch per round
 * while small policies finish in their first.  Between rounds, policies that
 * have become due start a new pass, so they are served while a backlog
 * drains.  A policy is due at the expiry of its next row, read from its
 * index when its last pass ended, and at the latest ttl_index.max_sleep
 * after that (rows can be inserted already expired).  The worker sleeps
 * until the earliest due time, or until the catalog changes.
 *
 * A policy whose last pass found nothing left and whose table nobody has
 * written to since is not re-checked before its next expiry (see
 * ttl_worker_admit); ttl_index.rate_limit makes the worker wait between
 * batches (ttl_worker_throttle), and a policy's own rate_limit holds back
 * that policy's batches alone (ttl_worker_policy_debt).  While other
 * sessions are writing, batches are small and each is followed by a pause
 * (ttl_worker_yield; how the worker tells is in yield.c).  The worker
 * reports its table counters to the cumulative statistics as it goes, for
 * autovacuum.
 *
 * Failure handling (as autovacuum does per table): an error in a batch is
 * logged with the table in its context, counted in the stats, the
 * transaction is rolled back, the policy rests ttl_index.error_delay, and
 * the other policies go on.  A lock we cannot take at once is not an
 * error: the policy is counted as skipped and retried later.
 *
 * Memory: policies and their pass state live in PolicyContext, rebuilt on
 * each reload; everything a batch allocates lives in its transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "ttl_index.h"

/* re-read the catalog at least this often, even without a wake-up */
#define TTL_RELOAD_EVERY_MS		60000
/* shortest time between the end of a pass and the start of the next */
#define TTL_MIN_PASS_GAP_MS		100
/* longest time a policy goes without a pass, whatever the counters say */
#define TTL_IDLE_PASS_EVERY_MS	60000

typedef struct TtlSchedEntry
{
	TtlPolicy	policy;
	TtlPurgeState state;
	TimestampTz next_check;		/* start the next pass at this time */
	TimestampTz retry_after;	/* resting after an error until then */
	bool		caught_up;		/* the last pass ended with nothing left */
	bool		warned_no_index;	/* said once that the index is missing */
	bool		writes_known;	/* writes_seen is valid */
	int64		writes_seen;	/* the table's inserts + updates (pgstat) when
								 * the last pass began */
	TimestampTz last_pass_at;	/* when the last pass began */
	/* the policy's own rate limit (rate_limit =>): a bucket like the global */
	double		rate_tokens;
	TimestampTz rate_refilled_at;
	TimestampTz rate_ready_at;	/* in debt: no batch before then */
} TtlSchedEntry;

static double ttl_worker_rate(void);

static MemoryContext PolicyContext = NULL;
static List *Schedule = NIL;	/* of TtlSchedEntry */
static uint32 LoadedGeneration = 0;
static TimestampTz LoadedAt = 0;

/*
 * Rate limit (ttl_index.rate_limit): a token bucket of rows, refilled at
 * this worker's share of the limit and holding at most one second of it,
 * so that the limit holds over any window of a few seconds.  The share is
 * the limit divided by the number of workers running, since the setting is
 * for the whole cluster.
 */
static double RateTokens = 0;
static TimestampTz RateRefilledAt = 0;

/*
 * ttl_worker_reload
 *		Re-read the policies, keeping the pass state of those unchanged.
 *		Exits the process when the extension is no longer installed.
 */
static void
ttl_worker_reload(void)
{
	MemoryContext newcxt;
	List	   *policies;
	List	   *schedule = NIL;
	ListCell   *lc;

	LoadedGeneration = ttl_slot_generation();

	ttl_slot_set_phase("reading policies");
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "ttl_index: reading policies");

	if (!OidIsValid(ttl_catalog_namespace(true)))
	{
		ttl_slot_report_extension(false);
		/* a later CREATE EXTENSION starts policy ids at 1 again */
		ttl_stats_forget_others(MyDatabaseId, NIL);
		ereport(DEBUG1,
				(errmsg("ttl_index worker exiting: extension not installed in database \"%s\"",
						get_database_name(MyDatabaseId))));
		PopActiveSnapshot();
		SPI_finish();
		CommitTransactionCommand();
		proc_exit(0);
	}
	ttl_slot_report_extension(true);

	newcxt = AllocSetContextCreate(TopMemoryContext, "ttl_index policies",
								   ALLOCSET_DEFAULT_SIZES);
	policies = ttl_load_policies(newcxt);

	foreach(lc, policies)
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);
		TtlSchedEntry *e = MemoryContextAllocZero(newcxt, sizeof(TtlSchedEntry));
		ListCell   *lc2;

		e->policy = *p;
		foreach(lc2, Schedule)
		{
			TtlSchedEntry *old = (TtlSchedEntry *) lfirst(lc2);

			if (old->policy.id == p->id && old->policy.relid == p->relid &&
				old->policy.attnum == p->attnum)
			{
				/* unchanged target: keep the pass */
				e->state = old->state;
				e->retry_after = old->retry_after;
				e->rate_tokens = old->rate_tokens;
				e->rate_refilled_at = old->rate_refilled_at;
				e->rate_ready_at = old->rate_ready_at;
				if (old->policy.expire_after == p->expire_after)
				{
					e->next_check = old->next_check;
					e->caught_up = old->caught_up;
					e->writes_known = old->writes_known;
					e->writes_seen = old->writes_seen;
					e->warned_no_index = old->warned_no_index;
					e->last_pass_at = old->last_pass_at;
				}
				else
					e->state.in_pass = false;
				/* paused (ttl_pause): the pass in hand stops here */
				if (!p->enabled)
					e->state.in_pass = false;
				break;
			}
		}
		{
			MemoryContext old = MemoryContextSwitchTo(newcxt);

			schedule = lappend(schedule, e);
			MemoryContextSwitchTo(old);
		}
	}

	ttl_stats_forget_others(MyDatabaseId, policies);

	PopActiveSnapshot();
	SPI_finish();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);

	if (PolicyContext)
		MemoryContextDelete(PolicyContext);
	PolicyContext = newcxt;
	Schedule = schedule;
	LoadedAt = GetCurrentTimestamp();
}

/*
 * ttl_worker_log_pass
 *		The summary of a finished pass, when it took at least
 *		ttl_index.log_min_duration (-1: never).  Passes that found nothing to
 *		do are not logged even at 0: an idle policy would log every second.
 */
static void
ttl_worker_log_pass(TtlSchedEntry *e, const char *relname, TimestampTz now)
{
	long		ms;

	if (ttl_log_min_duration < 0)
		return;
	if (e->state.pass_rows == 0 && e->state.pass_skipped_locked == 0)
		return;
	ms = (long) ((now - e->state.now) / 1000);
	if (ms < ttl_log_min_duration)
		return;
	ereport(LOG,
			(errmsg("ttl_index: %s " INT64_FORMAT " rows %s %s in %ld ms",
					e->policy.action == TTL_ACTION_ARCHIVE ? "archived" :
					e->policy.action == TTL_ACTION_SOFT_DELETE ? "soft-deleted" : "deleted",
					e->state.pass_rows,
					e->policy.action == TTL_ACTION_SOFT_DELETE ? "in" : "from",
					relname, ms),
			 errdetail("Column %s, " INT64_FORMAT " batches, " INT64_FORMAT " rows skipped because another transaction had them locked.",
					   e->policy.column_name,
					   e->state.pass_batches,
					   e->state.pass_skipped_locked)));
}

/*
 * ttl_worker_visit
 *		One batch of one policy in its own transaction, with the error
 *		handling described at the top of this file.
 */
static void
ttl_worker_visit(TtlSchedEntry *e, int64 *deleted)
{
	TtlBatchResult result;
	MemoryContext cxt = CurrentMemoryContext;
	TimestampTz now;
	char		relname[TTL_QUALNAME_LEN];
	double		rate;

	memset(&result, 0, sizeof(result));
	*deleted = 0;
	snprintf(relname, sizeof(relname), "with OID %u", e->policy.relid);

	/* under a rate limit, no batch takes more than a fifth of a second's worth */
	rate = ttl_worker_rate();
	if (rate > 0)
		e->state.row_limit = Min(e->state.row_limit, Max((int32) (rate / 5), 16));
	if (e->policy.rate_limit > 0)
		e->state.row_limit = Min(e->state.row_limit, Max(e->policy.rate_limit / 5, 16));
	/* while the application writes, small batches (see yield.c) */
	if (ttl_yield_busy())
		e->state.row_limit = Min(e->state.row_limit, TTL_BUSY_BATCH_ROWS);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (!ttl_synchronous_commit)
		(void) set_config_option("synchronous_commit", "off", PGC_SUSET,
								 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
	PG_TRY();
	{
		char	   *name = ttl_qualified_relname(e->policy.relid);

		if (name != NULL)
			strlcpy(relname, name, sizeof(relname));
		SPI_connect();
		ttl_slot_batch_begin(&e->policy, &e->state, relname);
		pgstat_report_activity(STATE_RUNNING,
							   psprintf("ttl_index: purging expired rows of %s", relname));
		ttl_purge_batch(&e->policy, &e->state, &result);
		SPI_finish();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ttl_slot_batch_end(&e->state);

		e->state.in_pass = false;
		now = GetCurrentTimestamp();
		/* the batch rolled back: whatever it counted did not happen */
		memset(&result, 0, sizeof(result));
		if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		{
			result.outcome = TTL_BATCH_LOCKED;
			ttl_stats_count_batch(MyDatabaseId, &e->policy, &result);
			e->next_check = TimestampTzPlusMilliseconds(now, ttl_max_sleep);
		}
		else
		{
			/*
			 * One log entry per failure, as autovacuum does: the table and
			 * the SQLSTATE in the message, the original detail, hint and
			 * context (which names the column) kept.
			 */
			ereport(LOG,
					(errcode(edata->sqlerrcode),
					 errmsg("ttl_index: could not purge expired rows of table %s (SQLSTATE %s): %s",
							relname, unpack_sql_state(edata->sqlerrcode),
							edata->message),
					 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
					 edata->hint ? errhint("%s", edata->hint) : 0,
					 edata->context ? errcontext("%s", edata->context) : 0));
			ttl_stats_count_error(MyDatabaseId, &e->policy, edata->message);
			e->retry_after = TimestampTzPlusMilliseconds(now, ttl_error_delay * 1000L);
		}
		FreeErrorData(edata);
		pgstat_report_activity(STATE_IDLE, NULL);
		return;
	}
	PG_END_TRY();

	ttl_slot_batch_end(&e->state);
	pgstat_report_activity(STATE_IDLE, NULL);

	/*
	 * Hand our table counters (tuples deleted, dead tuples) to the
	 * cumulative statistics, as a backend does when idle: autovacuum decides
	 * when to vacuum the table from them.  At most once a second; a
	 * background worker that never calls this reports only at exit.
	 */
	pgstat_report_stat(false);
	ttl_stats_count_batch(MyDatabaseId, &e->policy, &result);
	*deleted = result.deleted;
	now = GetCurrentTimestamp();

	switch (result.outcome)
	{
		case TTL_BATCH_MORE:
			break;
		case TTL_BATCH_DONE:
			ttl_stats_count_pass(MyDatabaseId, &e->policy);
			ttl_worker_log_pass(e, relname, now);
			e->caught_up = e->state.pass_skipped_locked == 0;
			e->next_check = TimestampTzPlusMilliseconds(now, ttl_max_sleep);
			/*
			 * Wake for the next expiry, but start passes of one policy at
			 * least TTL_MIN_PASS_GAP_MS apart: rows that expire every
			 * millisecond are then deleted ten times a second in batches,
			 * not one transaction per row.
			 */
			if (e->state.next_expiry != 0 && !TIMESTAMP_NOT_FINITE(e->state.next_expiry))
				e->next_check = Min(e->next_check,
									Max(e->state.next_expiry,
										TimestampTzPlusMilliseconds(now, TTL_MIN_PASS_GAP_MS)));
			break;
		case TTL_BATCH_NO_INDEX:
			/* warn once; during a restore the index comes moments later */
			if (!e->warned_no_index)
			{
				SetCurrentStatementStartTimestamp();
				StartTransactionCommand();
				ttl_purge_no_index_error(&e->policy, WARNING);
				CommitTransactionCommand();
				e->warned_no_index = true;
			}
			e->state.in_pass = false;
			e->next_check = TimestampTzPlusMilliseconds(now, ttl_max_sleep);
			break;
		case TTL_BATCH_LOCKED:
		case TTL_BATCH_GONE:
			e->state.in_pass = false;
			e->next_check = TimestampTzPlusMilliseconds(now, ttl_max_sleep);
			break;
	}
	if (result.outcome != TTL_BATCH_NO_INDEX)
		e->warned_no_index = false;
}

/*
 * ttl_table_writes
 *		Inserts plus updates the cumulative statistics have counted for a
 *		table, or -1 when they have no entry for it.  Read with stats_fetch_consistency = none (set at worker
 *		start), so the value is current and nothing is cached.
 */
static int64
ttl_table_writes(Oid relid)
{
	PgStat_StatTabEntry *tab = pgstat_fetch_stat_tabentry(relid);
	int64		writes;

	if (tab == NULL)
		return -1;
	writes = tab->tuples_inserted + tab->tuples_updated;
	pfree(tab);
	return writes;
}

/*
 * ttl_worker_admit
 *		Start a pass for every enabled policy that is due.
 *
 * A policy is due at its next expiry, and at the latest ttl_index.max_sleep
 * after its last pass, because rows can be inserted already expired (or
 * expiring before the next known expiry).  That second kind of check is
 * skipped when the table has had no insert or update since the last pass
 * began: then nothing can have appeared.  With a thousand idle policies
 * the worker reads a thousand counters a second instead of running a
 * thousand transactions.  The counters reach shared memory when the
 * writing session flushes them (within about a second, at most
 * PGSTAT_IDLE_INTERVAL, 10 s, for a session that went idle right away);
 * rows expiring at the known next expiry never wait for that.  Writers whose
 * counters do not move (track_counts off in their session, a process that
 * flushes only at exit) are caught by a full pass at least every
 * TTL_IDLE_PASS_EVERY_MS.
 */
static void
ttl_worker_admit(TimestampTz now)
{
	ListCell   *lc;

	foreach(lc, Schedule)
	{
		TtlSchedEntry *e = (TtlSchedEntry *) lfirst(lc);
		int64		writes;

		if (e->state.in_pass || !e->policy.enabled ||
			now < e->next_check || now < e->retry_after)
			continue;

		writes = ttl_table_writes(e->policy.relid);
		if (e->caught_up && e->writes_known && writes >= 0 &&
			!e->state.next_expiry_unknown &&
			writes == e->writes_seen &&
			(e->state.next_expiry == 0 || e->state.next_expiry > now) &&
			!TimestampDifferenceExceeds(e->last_pass_at, now, TTL_IDLE_PASS_EVERY_MS))
		{
			/* only the max_sleep re-check was due, and nothing changed */
			e->next_check = TimestampTzPlusMilliseconds(now, ttl_max_sleep);
			if (e->state.next_expiry != 0 &&
				!TIMESTAMP_NOT_FINITE(e->state.next_expiry))
				e->next_check = Min(e->next_check, e->state.next_expiry);
			continue;
		}
		e->writes_seen = writes;
		e->writes_known = writes >= 0;
		e->caught_up = false;
		e->last_pass_at = now;
		ttl_pass_begin(&e->policy, &e->state, now);
	}
}

/*
 * ttl_worker_interrupted
 *		Whether the round-robin should stop and return to the main loop:
 *		catalog changed, settings to reload, or told to leave.
 */
static bool
ttl_worker_interrupted(void)
{
	CHECK_FOR_INTERRUPTS();
	if (ttl_slot_blocked())
		proc_exit(0);
	return ConfigReloadPending || ttl_slot_generation() != LoadedGeneration ||
		!ttl_enabled;
}

/*
 * ttl_worker_nap
 *		Wait up to ms milliseconds (none when ms <= 0) in the given phase,
 *		waking for a latch.  Returns false when interrupted (catalog changed,
 *		settings to reload, told to leave).
 */
static bool
ttl_worker_nap(const char *phase, long ms)
{
	ttl_slot_set_phase(phase);
	if (ms > 0)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	return !ttl_worker_interrupted();
}

/*
 * ttl_worker_rate
 *		This worker's rows per second, or 0 for no limit.
 */
static double
ttl_worker_rate(void)
{
	if (ttl_rate_limit <= 0)
		return 0;
	return (double) ttl_rate_limit / Max(ttl_slot_running_count(), 1);
}

/*
 * ttl_worker_throttle
 *		Account for the rows a batch deleted, and sleep while the bucket is
 *		in debt.  Returns false when interrupted (catalog changed, told to
 *		leave): the caller goes back to its main loop.
 */
static bool
ttl_worker_throttle(int64 deleted)
{
	double		rate = ttl_worker_rate();
	TimestampTz now = GetCurrentTimestamp();

	if (rate <= 0)
	{
		RateRefilledAt = 0;
		return true;
	}
	if (RateRefilledAt == 0)
		RateTokens = rate;
	else
		RateTokens = Min(rate, RateTokens + rate * (now - RateRefilledAt) / 1000000.0);
	RateRefilledAt = now;
	RateTokens -= deleted;

	while (RateTokens < 0)
	{
		long		ms = (long) (-RateTokens / rate * 1000.0) + 1;

		if (!ttl_worker_nap("rate limited", ms))
			return false;
		now = GetCurrentTimestamp();
		RateTokens = Min(rate, RateTokens + rate * (now - RateRefilledAt) / 1000000.0);
		RateRefilledAt = now;
	}
	return true;
}

/*
 * ttl_worker_yield
 *		After a batch that took batch_us microseconds: while the application
 *		is writing, pause so that batches fill ttl_index.busy_share percent
 *		of the time (see yield.c).  Returns false when interrupted.
 */
static bool
ttl_worker_yield(int64 batch_us)
{
	long		ms = ttl_yield_pause_ms(batch_us);

	/* in slices, so that a long pause ends once the application stops */
	while (ms > 0)
	{
		long		slice = Min(ms, (long) TTL_BUSY_HOLD_MS);

		if (!ttl_worker_nap("yielding", slice))
			return false;
		ms -= slice;
		if (ms > 0 && !ttl_yield_busy())
			break;
	}
	return true;
}

/*
 * ttl_worker_policy_debt
 *		Account for the rows a batch of a policy with its own rate limit
 *		processed: when its bucket is in debt, the policy gets no batch
 *		until the debt is paid (other policies go on meanwhile).
 */
static void
ttl_worker_policy_debt(TtlSchedEntry *e, int64 processed)
{
	double		rate = e->policy.rate_limit;
	TimestampTz now = GetCurrentTimestamp();

	if (rate <= 0)
	{
		e->rate_refilled_at = 0;
		e->rate_ready_at = 0;
		return;
	}
	if (e->rate_refilled_at == 0)
		e->rate_tokens = rate;
	else
		e->rate_tokens = Min(rate, e->rate_tokens +
							 rate * (now - e->rate_refilled_at) / 1000000.0);
	e->rate_refilled_at = now;
	e->rate_tokens -= processed;
	e->rate_ready_at = e->rate_tokens >= 0 ? 0 :
		TimestampTzPlusMilliseconds(now, (long) (-e->rate_tokens / rate * 1000.0) + 1);
}

/*
 * ttl_worker_run
 *		Serve every due policy, round-robin, until none is in a pass.
 *		Returns how long to sleep, in milliseconds.
 */
static long
ttl_worker_run(void)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz wake;
	ListCell   *lc;
	int64		deleted;
	TimestampTz started;
	int64		batch_us;

	ttl_worker_admit(now);
	for (;;)
	{
		bool		any = false;
		bool		ran = false;
		TimestampTz ready = 0;

		foreach(lc, Schedule)
		{
			TtlSchedEntry *e = (TtlSchedEntry *) lfirst(lc);

			if (!e->state.in_pass)
				continue;
			any = true;
			if (e->rate_ready_at != 0 && e->rate_ready_at > GetCurrentTimestamp())
			{
				/* over its own rate limit: wait, others go on */
				if (ready == 0 || e->rate_ready_at < ready)
					ready = e->rate_ready_at;
				continue;
			}
			ran = true;
			started = GetCurrentTimestamp();
			ttl_worker_visit(e, &deleted);
			batch_us = GetCurrentTimestamp() - started;
			ttl_worker_policy_debt(e, deleted);
			/* rows are charged to the rate limit before any pause */
			if (ttl_worker_interrupted() ||
				!ttl_worker_throttle(deleted) ||
				!ttl_worker_yield(batch_us))
				return 0;
		}
		if (!any)
			break;
		if (!ran && ready != 0)
		{
			long		ms = (long) ((ready - GetCurrentTimestamp() + 999) / 1000);

			if (!ttl_worker_nap("rate limited", Min(ms, (long) ttl_max_sleep)))
				return 0;
		}
		ttl_worker_admit(GetCurrentTimestamp());
	}

	ttl_slot_set_phase("sleeping");
	now = GetCurrentTimestamp();
	wake = TimestampTzPlusMilliseconds(now, ttl_max_sleep);
	foreach(lc, Schedule)
	{
		TtlSchedEntry *e = (TtlSchedEntry *) lfirst(lc);

		if (e->policy.enabled)
			wake = Min(wake, Max(e->next_check, e->retry_after));
	}
	if (wake <= now)
		return 0;
	return (long) ((wake - now + 999) / 1000);
}

/*
 * ttl_worker_main
 *		Entry point of a per-database worker; main_arg is the database OID.
 */
void
ttl_worker_main(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* claim the slot before connecting: an evicted worker never connects */
	if (!ttl_slot_attach(dboid))
		proc_exit(0);

	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	/* pinned settings, as autovacuum does */
	SetConfigOption("search_path", "", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed",
					PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("statement_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("idle_in_transaction_session_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("application_name", "ttl_index worker", PGC_SUSET, PGC_S_OVERRIDE);
	/* live table counters for ttl_worker_admit, never a cached snapshot */
	SetConfigOption("stats_fetch_consistency", "none", PGC_SUSET, PGC_S_OVERRIDE);

	ereport(DEBUG1, (errmsg("ttl_index worker started")));
	ttl_yield_start();

	for (;;)
	{
		long		sleep_ms = ttl_max_sleep;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			if (!ttl_yield_renice())
			{
				ereport(LOG,
						(errmsg("ttl_index worker restarting to run at nice value %d",
								ttl_worker_nice)));
				proc_exit(0);
			}
		}
		if (ttl_slot_blocked())
			proc_exit(0);

		if (PolicyContext == NULL || ttl_slot_generation() != LoadedGeneration ||
			TimestampDifferenceExceeds(LoadedAt, GetCurrentTimestamp(), TTL_RELOAD_EVERY_MS))
			ttl_worker_reload();

		if (ttl_enabled)
			sleep_ms = ttl_worker_run();

		if (sleep_ms > 0)
		{
			/* report what is still pending before a sleep */
			pgstat_report_stat(true);
			(void) WaitLatch(MyLatch,
							 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 Min(sleep_ms, (long) ttl_max_sleep),
							 PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			/* the application may have started writing meanwhile */
			ttl_yield_restart();
		}
	}
}

/*
 * ttl_run_all_in_transaction
 *		ttl_runner(): one full pass over every enabled policy whose table the
 *		caller owns (or can act as the owner of), inside the caller's
 *		transaction.  Errors propagate to the caller, with the table named
 *		in their context.  Unlike the workers, it does not look at
 *		ttl_index.enabled: calling it is an explicit request.
 */
int64
ttl_run_all_in_transaction(void)
{
	List	   *policies;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();
	int64		total = 0;

	SPI_connect();
	policies = ttl_load_policies(CurrentMemoryContext);

	foreach(lc, policies)
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);
		TtlPurgeState state;
		TtlBatchResult result;
		HeapTuple	tup;
		Oid			owner;

		if (!p->enabled)
			continue;
		tup = SearchSysCache1(RELOID, ObjectIdGetDatum(p->relid));
		if (!HeapTupleIsValid(tup))
			continue;
		owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
		ReleaseSysCache(tup);
		if (!has_privs_of_role(GetUserId(), owner))
			continue;

		memset(&state, 0, sizeof(state));
		ttl_pass_begin(p, &state, now);
		do
		{
			ttl_purge_batch(p, &state, &result);
			if (result.outcome == TTL_BATCH_NO_INDEX)
				ttl_purge_no_index_error(p, ERROR);
			ttl_stats_count_batch(MyDatabaseId, p, &result);
			total += result.deleted;
			CommandCounterIncrement();
		} while (result.outcome == TTL_BATCH_MORE);
		if (result.outcome == TTL_BATCH_DONE)
			ttl_stats_count_pass(MyDatabaseId, p);
	}

	SPI_finish();
	return total;
}
