/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The per-database worker: its main loop, and the scheduler that shares
 *	  it fairly between policies.
 *
 * Scheduling.  Each policy has a pass: a cutoff fixed when the pass starts,
 * its targets (pass.c).  Passes advance in rounds: one batch (one
 * transaction, bounded by rows and by ttl_index.batch_time) per policy in
 * pass, in catalog order, so a multi-million-row backlog gets one batch per
 * round while small policies finish in their first.  Between rounds,
 * policies that have become due start a new pass, so they are served while
 * a backlog drains.  A policy is due at the expiry of its next row, read
 * from its index when its last pass ended, and at the latest
 * ttl_index.max_sleep after that (rows can be inserted already expired).
 * The worker sleeps until the earliest due time, or until the catalog
 * changes.
 *
 * Idle policies.  The max_sleep look at a policy whose last pass found
 * nothing left is skipped while none of its tables has been written since
 * that pass began: neither the commit-time write counters (writes.c), which
 * every backend bumps when a transaction that inserted into or updated the
 * table commits (inside a long procedure too, with track_counts off too),
 * nor the cumulative statistics (which cover logical replication's apply
 * worker) have moved.  A thousand idle policies then cost a thousand
 * counter reads a second, not a thousand transactions; a full pass still
 * runs at least every TTL_IDLE_PASS_EVERY_MS, whatever the counters say.
 * Those re-checks are due on a grid of TTL_RECHECK_GRID_MS
 * (ttl_worker_recheck_at), so that the policies share wake-ups: each
 * wake-up walks the whole schedule, and with 10,000 policies one wake-up
 * each would walk it thousands of times a second.
 *
 * ttl_index.rate_limit makes the worker wait between batches
 * (ttl_worker_throttle), a policy's own rate_limit holds back that policy's
 * batches alone (ttl_worker_policy_debt), and while other sessions are
 * writing, batches are small and each is followed by a pause
 * (ttl_worker_yield; how the worker tells is in yield.c).
 *
 * Failure handling (as autovacuum does per table): a failed batch is rolled
 * back.  When the failure may be some rows' (held.c), the rows of the
 * failed statement are retried in halves in the next batches of the same
 * pass, down to the single rows that fail, which are held back and logged
 * once per policy and SQLSTATE; the others are deleted in the same pass.
 * Any other failure is logged with the table in its context, counted, and
 * the policy rests ttl_index.error_delay while the other policies go on.  A
 * lock we cannot take at once is not an error: the policy is counted as
 * skipped and retried later.
 *
 * Turns.  When more databases need a worker than may run at once, the
 * launcher asks a worker whose turn is over to leave (launcher.c); the
 * worker ends its batch and exits, and the launcher starts the worker of a
 * waiting database.
 *
 * The schedule is one array of slots, in catalog (policy id) order, each
 * holding when its entry next needs a look (TtlSchedSlot.due): a wake-up's
 * walks read that array and touch only the entries that are due or in a
 * pass, and an idle policy's re-check reads its slot alone.  With a
 * thousand idle policies, reading every entry at each of four wake-ups a
 * second cost more than all the re-checks together: entries are scattered
 * over the heap, and each read was a cache miss or worse.  Whatever
 * changes an entry's pass, timers or write counters then sets its slot
 * (ttl_worker_slot_set); an assert-enabled build checks every slot before
 * each sleep.
 *
 * Memory: each policy's schedule entry, its pass and its held rows live in
 * a memory context of their own (kept across reloads while the policy is
 * unchanged); everything a batch allocates lives in its transaction.  The
 * slot array lives in TopMemoryContext and is rebuilt at each reload.
 * Whatever else the worker allocates outside a transaction (an error's
 * copy, a message, a drain's start) lives in RoundContext, which is reset
 * at each turn of the main loop and at each round of a run, as
 * autovacuum's launcher resets its own: a transaction's end switches to
 * TopMemoryContext, so the code here switches back to RoundContext after
 * each (ttl_worker_in_round, or ttl_error_catch_xact, which leaves its
 * caller's context current), and nothing of a round outlives it.  So
 * whatever must outlive a round is allocated in its owner's context
 * explicitly, never in the current one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "ttl_index.h"
#include "bgw/bgw.h"
#include "engine/engine.h"
#include "engine/drain.h"
#include "policy/policy.h"
#include "env/env.h"
#include "shared/shared.h"
#include "shared/shmem.h"

/* re-read the catalog at least this often, even without a wake-up */
#define TTL_RELOAD_EVERY_MS		60000
/* shortest time between the end of a pass and the start of the next */
#define TTL_MIN_PASS_GAP_MS		100
/* longest time a policy goes without a pass, whatever the counters say */
#define TTL_IDLE_PASS_EVERY_MS	60000
/* the re-checks of idle policies fall on multiples of this */
#define TTL_RECHECK_GRID_MS		250
/* tables of a policy whose write counters the idle check reads */
#define TTL_WATCHED_MAX			32

typedef struct TtlSchedEntry
{
	MemoryContext cxt;			/* this entry, its pass, its held rows */
	TtlPolicy	policy;
	TtlPass    *pass;			/* NULL between passes */
	TtlPass    *last_pass;		/* the pass before, until the next begins */
	TtlHeld    *held;
	int32		row_limit;		/* carried from pass to pass */
	TimestampTz next_check;		/* start the next pass at this time */
	TimestampTz retry_after;	/* resting after an error until then */
	TimestampTz next_expiry;	/* as the last pass saw it, 0 = none */
	bool		next_expiry_unknown;
	bool		caught_up;		/* the last pass ended with nothing left */
	bool		warned_no_index;	/* said once that the index is missing */
	bool		origin_waiting; /* its last batch waited for an origin */
	bool		window_wait;	/* outside its purge window with work left */
	bool		cap_warned;		/* said its cap waits for a measure */
	TimestampTz oldest_expiry;	/* as the last pass's probe saw it
								 * (TtlHealth) */
	Oid			owner;			/* the table's owner, at the last reload */
	bool		writes_known;	/* the counters below are valid */
	int64		stat_writes;	/* inserts + updates (pgstat) at the last
								 * pass's start, -1 = none */
	int			nwatched;
	Oid			watched[TTL_WATCHED_MAX];	/* its tables ... */
	uint32		watched_counts[TTL_WATCHED_MAX];	/* ... their counters */
	TimestampTz last_pass_at;	/* when the last pass began */
	/* the policy's own rate limit (rate_limit =>): a bucket like the global */
	double		rate_tokens;
	TimestampTz rate_refilled_at;
	TimestampTz rate_ready_at;	/* in debt: no batch before then */
	/* the known-dead prefix published for the views (stats.c) */
	Oid			prefix_relid;	/* InvalidOid: none */
	Oid			prefix_indexoid;
	Datum		prefix_key;
	uint32		prefix_writes;
	TtlKeepUp	keepup;			/* its rates and growth (keepup.c) */
	/* what the views show of it (ttl_worker_health) */
	TimestampTz health_next;	/* a pass in hand publishes again from then */
	TimestampTz locked_since;	/* its passes find a table locked since,
								 * 0: they do not */
	bool		locked_logged;	/* said so, for this time */
} TtlSchedEntry;

static double ttl_worker_rate(void);
static void ttl_worker_rest(TtlSchedEntry *e, ErrorData *edata,
							const char *message, const char *relname,
							TimestampTz now);
static TimestampTz ttl_worker_recheck_at(TimestampTz now);
static bool ttl_worker_hold_for_replicas(void);
static void ttl_worker_watch(TtlSchedEntry *e, TtlPass *pass);
static void ttl_worker_publish_prefix(TtlSchedEntry *e, TtlPass *pass);
static bool ttl_worker_nap(const char *phase, long ms);
static void ttl_worker_entry_free(TtlSchedEntry *e);
static void ttl_worker_health(TtlSchedEntry *e, const char *reason, TtlPass *pass);
static void ttl_worker_health_in_pass(TtlSchedEntry *e, TtlPass *pass);
static TimestampTz ttl_worker_probe_oldest(TtlSchedEntry *e);
static void ttl_worker_table_locked(TtlSchedEntry *e, const char *relname,
									TimestampTz now);
static void ttl_worker_window_closed(TtlSchedEntry *e);

/*
 * A policy's place in the schedule.  due is TTL_DUE_IN_PASS while the entry
 * has a pass in hand, DT_NOEND while the policy is paused, else the time
 * from which ttl_worker_admit must look at it: Max(next_check, retry_after)
 * of the entry, or later once an idle re-check has moved it on.
 *
 * The idle re-check's inputs are copied into the slot (ttl_worker_slot_set)
 * when the policy's last pass left nothing and it has one table to watch,
 * so that the re-check reads no entry: it moves due on and leaves the
 * entry's next_check behind.  Even in the slots, reading each entry once a
 * second cost an idle worker a long-lived heap's cache and TLB misses,
 * most of its CPU in the benchmark's scenario 5.
 */
typedef struct TtlSchedSlot
{
	TimestampTz due;
	TtlSchedEntry *e;
	bool		idle;			/* the fields below are valid */
	Oid			relid;			/* the policy's one table */
	uint32		writes;			/* its commit-time write counter ... */
	int64		stat_writes;	/* ... and pgstat's, at the last pass */
	TimestampTz last_pass_at;
	TimestampTz next_expiry;
	bool		origin_waiting; /* the entry's, kept here: see below */
	bool		window_wait;	/* the entry's, enabled: as origin_waiting */
} TtlSchedSlot;

#define TTL_DUE_IN_PASS		DT_NOBEGIN

static TtlSchedSlot *Schedule = NULL;	/* in TopMemoryContext */
static int	ScheduleLen = 0;
static bool Loaded = false;
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
 * A worker that ends with a FATAL error during a batch (the owner's code
 * caught the cancel of ttl_index.batch_timeout and went on: timeout.c; an
 * exit_on_error the owner's code set is refused: owner.c) leaves a record
 * of the policy in its database's slot (ttl_worker_emit_log), beside those
 * of the other policies that ended a worker (shmem.h, TtlDeath).  The
 * worker that replaces it rests every one of them, each twice as long for
 * each time in a row (ttl_worker_apply_death), so that the database's
 * other policies go on however many owners' policies end workers.  A
 * shutdown or an eviction (SIGTERM) leaves none.
 */
static int32 BatchPolicy = 0;	/* the policy of the batch in flight */
static MemoryContext RoundContext = NULL;	/* reset at each round */
static emit_log_hook_type prev_emit_log_hook = NULL;
static TtlDeath PendingDeaths[TTL_MAX_DEATHS];	/* read at start */
static int	NumPendingDeaths = 0;
static bool PendingDeathsApplied = false;	/* the policies were made to rest */

/*
 * ttl_worker_in_round
 *		After a transaction's end (which leaves TopMemoryContext current):
 *		allocate in the round's context again.
 */
static void
ttl_worker_in_round(void)
{
	if (RoundContext != NULL)
		MemoryContextSwitchTo(RoundContext);
}

/*
 * ttl_worker_new_round
 *		A round begins: what the last one allocated outside a transaction
 *		goes (see Memory at the top of the file).
 */
static void
ttl_worker_new_round(void)
{
	ttl_worker_in_round();
	if (RoundContext != NULL)
		MemoryContextReset(RoundContext);
}

/*
 * ttl_worker_entry_free
 *		Drop a schedule entry: its passes end (helpers on their backlog
 *		stop), its memory goes.
 */
static void
ttl_worker_entry_free(TtlSchedEntry *e)
{
	ttl_pass_end(e->pass);
	ttl_pass_end(e->last_pass);
	MemoryContextDelete(e->cxt);
}

/*
 * ttl_worker_entry_new
 *		A schedule entry for a policy, in a memory context of its own.
 */
static TtlSchedEntry *
ttl_worker_entry_new(TtlPolicy *p)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext,
											  "ttl_index policy",
											  ALLOCSET_SMALL_SIZES);
	TtlSchedEntry *e = MemoryContextAllocZero(cxt, sizeof(TtlSchedEntry));
	MemoryContext old = MemoryContextSwitchTo(cxt);

	e->cxt = cxt;
	e->policy = *p;
	e->policy.column_name = pstrdup(p->column_name);
	e->policy.ttl_column = p->ttl_column ? pstrdup(p->ttl_column) : NULL;
	e->policy.filter = p->filter ? pstrdup(p->filter) : NULL;
	e->policy.soft_column = p->soft_column ? pstrdup(p->soft_column) : NULL;
	e->policy.time_zone = p->time_zone ? pstrdup(p->time_zone) : NULL;
	e->policy.purge_window = p->purge_window ? pstrdup(p->purge_window) : NULL;
	e->policy.set_columns = p->set_columns ? pstrdup(p->set_columns) : NULL;
	if (p->nfilter_funcs > 0)
	{
		e->policy.filter_funcs = palloc(sizeof(Oid) * p->nfilter_funcs);
		memcpy(e->policy.filter_funcs, p->filter_funcs, sizeof(Oid) * p->nfilter_funcs);
	}
	e->held = ttl_held_create(cxt);
	MemoryContextSwitchTo(old);
	return e;
}

/*
 * ttl_worker_due
 *		The due time of an entry's slot (see TtlSchedSlot).
 */
static TimestampTz
ttl_worker_due(TtlSchedEntry *e)
{
	if (e->pass != NULL)
		return TTL_DUE_IN_PASS;
	if (!e->policy.enabled)
		return DT_NOEND;
	/* outside its purge windows, at the next opening (window.c) */
	return ttl_window_due(&e->policy, Max(e->next_check, e->retry_after));
}

/*
 * ttl_worker_slot_set
 *		Point a slot at its entry, and copy what the idle re-check reads
 *		(see TtlSchedSlot).  Called wherever the entry's pass, timers or
 *		write counters may have changed.
 */
static void
ttl_worker_slot_set(TtlSchedSlot *slot, TtlSchedEntry *e)
{
	slot->e = e;
	slot->due = ttl_worker_due(e);
	/* read at every wake-up: from the slots, not through each entry */
	slot->origin_waiting = e->origin_waiting;
	slot->window_wait = e->window_wait && e->policy.enabled;
	/* a policy with windows goes through its entry: its due time moves */
	slot->idle = e->pass == NULL && e->policy.enabled && e->caught_up &&
		e->policy.windows.n == 0 &&
		!e->next_expiry_unknown && e->writes_known && e->nwatched == 1 &&
		e->watched[0] == e->policy.relid;
	if (slot->idle)
	{
		slot->relid = e->policy.relid;
		slot->writes = e->watched_counts[0];
		slot->stat_writes = e->stat_writes;
		slot->last_pass_at = e->last_pass_at;
		slot->next_expiry = e->next_expiry;
	}
}

/*
 * ttl_worker_policy_cmp
 *		list_sort comparator: policies by id.
 */
static int
ttl_worker_policy_cmp(const ListCell *a, const ListCell *b)
{
	int32		ida = ((TtlPolicy *) lfirst(a))->id;
	int32		idb = ((TtlPolicy *) lfirst(b))->id;

	return (ida > idb) - (ida < idb);
}

/*
 * ttl_worker_reload
 *		Re-read the policies.  An unchanged policy keeps its entry (pass,
 *		held rows, timers); a changed one starts afresh but for its rate
 *		bucket and error rest.  After a wake-up (the generation moved) every
 *		policy is looked at again: a COMMIT PREPARED may have added rows.
 *		Exits the process when the extension is no longer installed, or
 *		when the database is paused.  Returns false, having read nothing,
 *		when the database is paused but the generation moved since it was
 *		read: the caller purges nothing and reloads again.
 */
static bool
ttl_worker_reload(void)
{
	List	   *policies;
	TtlSchedSlot *schedule;
	int			n = 0;
	int			old_i = 0;
	ListCell   *lc;
	uint32		generation = ttl_slot_generation();
	bool		woken = generation != LoadedGeneration;
	MemoryContext tmp;

	LoadedGeneration = generation;

	ttl_slot_set_phase("reading policies");
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
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
		CommitTransactionCommand();
		proc_exit(0);
	}
	ttl_slot_report_extension(true);

	/*
	 * ALTER DATABASE ... SET ttl_index.enabled = off: the worker leaves,
	 * and the launcher starts none until the setting changes (the commit
	 * of an ALTER DATABASE ... SET or RESET of it wakes the database,
	 * hooks.c), so that a database under maintenance takes no worker slot.
	 * Read here, at each reload: at the start, at each wake-up (that
	 * commit bumps the generation, so a pass stops after its batch) and
	 * at least every TTL_RELOAD_EVERY_MS; one index look-up, never per
	 * policy.  When the generation moved since it was read, a RESET may
	 * have come after this snapshot: nothing is purged, and the caller
	 * reads again.
	 */
	if (ttl_database_paused(MyDatabaseId))
	{
		bool		recorded = ttl_slot_report_paused(generation);

		if (recorded)
			ereport(LOG,
					(errmsg("ttl_index worker leaving: database \"%s\" is paused",
							get_database_name(MyDatabaseId)),
					 errdetail("ttl_index.enabled is off for the database (ALTER DATABASE ... SET); no worker runs for it until it is reset.")));
		PopActiveSnapshot();
		CommitTransactionCommand();
		ttl_worker_in_round();
		pgstat_report_activity(STATE_IDLE, NULL);
		if (recorded)
			proc_exit(0);
		return false;
	}

	tmp = AllocSetContextCreate(TopTransactionContext, "ttl_index reload",
								ALLOCSET_DEFAULT_SIZES);
	policies = ttl_load_policies(tmp);
	/* ids are unique: a Citus node's copies (negative ids) come first */
	list_sort(policies, ttl_worker_policy_cmp);
	schedule = MemoryContextAlloc(TopMemoryContext,
								  Max(list_length(policies), 1) * sizeof(TtlSchedSlot));

	/* both the policies and the old schedule are in id order: one walk */
	foreach(lc, policies)
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);
		TtlSchedEntry *e = NULL;
		Oid			owner = ttl_table_owner_if_exists(p->relid);

		/*
		 * A table dropped since the policies were read: its policy goes
		 * with it (the walk below frees an old entry of it).
		 */
		if (!OidIsValid(owner))
			continue;
		while (old_i < ScheduleLen && Schedule[old_i].e->policy.id < p->id)
			old_i++;
		if (old_i < ScheduleLen && Schedule[old_i].e->policy.id == p->id)
		{
			TtlSchedEntry *old = Schedule[old_i].e;

			if (ttl_policy_equal(&old->policy, p))
				e = old;		/* unchanged: keep everything */
			else
			{
				/* changed: a new pass, held rows and timers */
				e = ttl_worker_entry_new(p);
				e->retry_after = old->retry_after;
				e->origin_waiting = old->origin_waiting;
				e->rate_tokens = old->rate_tokens;
				e->rate_refilled_at = old->rate_refilled_at;
				e->rate_ready_at = old->rate_ready_at;
				e->row_limit = old->row_limit;
				ttl_worker_entry_free(old);
			}
			/* taken: the walk below frees what is left */
			Schedule[old_i++].e = NULL;
		}
		if (e == NULL)
			e = ttl_worker_entry_new(p);
		/* paused (ttl_pause): the pass in hand stops here */
		if (!p->enabled && e->pass != NULL)
		{
			ttl_pass_end(e->pass);
			e->pass = NULL;
		}
		if (woken)
			e->writes_known = false;
		e->owner = owner;
		ttl_worker_slot_set(&schedule[n++], e);
	}

	/* the entries of policies that are gone */
	for (int i = 0; i < ScheduleLen; i++)
	{
		if (Schedule[i].e != NULL)
			ttl_worker_entry_free(Schedule[i].e);
	}
	if (Schedule != NULL)
		pfree(Schedule);
	Schedule = schedule;
	ScheduleLen = n;

	ttl_stats_forget_others(MyDatabaseId, policies);

	PopActiveSnapshot();
	CommitTransactionCommand();
	ttl_worker_in_round();
	pgstat_report_activity(STATE_IDLE, NULL);
	LoadedAt = GetCurrentTimestamp();
	Loaded = true;
	return true;
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
	TtlPass    *pass = e->pass;
	long		ms;

	if (ttl_log_min_duration < 0)
		return;
	if (pass->pass_rows == 0 && pass->pass_skipped_locked == 0)
		return;
	ms = (long) ((now - pass->now) / 1000);
	if (ms < ttl_log_min_duration)
		return;
	ereport(LOG,
			(errmsg("ttl_index: %s " INT64_FORMAT " rows %s %s in %ld ms",
					e->policy.action == TTL_ACTION_ARCHIVE ? "archived" :
					e->policy.action == TTL_ACTION_SOFT_DELETE ? "soft-deleted" : "deleted",
					pass->pass_rows,
					e->policy.action == TTL_ACTION_SOFT_DELETE ? "in" : "from",
					relname, ms),
			 errdetail("Column %s, " INT64_FORMAT " batches, " INT64_FORMAT " rows skipped because another transaction had them locked.",
					   e->policy.column_name,
					   pass->pass_batches,
					   pass->pass_skipped_locked)));
}

/*
 * ttl_worker_recheck_at
 *		When to look again at a policy with nothing known to be due:
 *		ttl_index.max_sleep from now, rounded down to the grid (see the top
 *		of the file), never later.
 */
static TimestampTz
ttl_worker_recheck_at(TimestampTz now)
{
	int64		grid = (int64) Min(TTL_RECHECK_GRID_MS, ttl_max_sleep) * 1000;
	TimestampTz at = TimestampTzPlusMilliseconds(now, ttl_max_sleep);

	/* at - grid < result <= at, and at - grid >= now */
	return at - ((at % grid) + grid) % grid;
}

/*
 * ttl_worker_idle_holds
 *		Whether a policy whose last pass left nothing may skip a pass now,
 *		as far as time goes: none of its rows expires yet, and its
 *		once-a-minute full pass is not due.  (Its tables' write counters
 *		are the caller's to compare.)
 */
static inline bool
ttl_worker_idle_holds(TimestampTz now, TimestampTz next_expiry,
					  TimestampTz last_pass_at)
{
	return (next_expiry == 0 || next_expiry > now) &&
		!TimestampDifferenceExceeds(last_pass_at, now, TTL_IDLE_PASS_EVERY_MS);
}

/*
 * ttl_worker_idle_next
 *		When to look again at a policy whose re-check found nothing changed:
 *		at the re-check grid, or at its next expiry if that comes first.
 */
static TimestampTz
ttl_worker_idle_next(TimestampTz now, TimestampTz next_expiry)
{
	TimestampTz at = ttl_worker_recheck_at(now);

	if (next_expiry != 0 && !TIMESTAMP_NOT_FINITE(next_expiry))
		at = Min(at, next_expiry);
	return at;
}

/*
 * ttl_worker_failed
 *		A batch of the policy failed, its transaction rolled back.  Isolate
 *		the rows responsible if the failure is theirs (the pass goes on),
 *		else log and count it as the policy's, which rests
 *		ttl_index.error_delay.
 */
static void
ttl_worker_failed(TtlSchedEntry *e, TtlBatchResult *result, ErrorData *edata,
				  const char *relname, TimestampTz now)
{
	bool		held_one = false;
	TtlTarget  *held_table = NULL;

	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
	{
		ttl_stats_count_locked(MyDatabaseId, &e->policy);
		if (e->pass != NULL)
		{
			/* a lock of the statement's (lock_timeout): as a locked table */
			e->pass->skipped_locked = true;
			ttl_worker_table_locked(e, relname, now);
			ttl_worker_health(e, NULL, e->pass);
		}
		ttl_pass_end(e->pass);
		e->pass = NULL;
		e->next_check = ttl_worker_recheck_at(now);
		return;
	}

	if (e->pass != NULL &&
		ttl_pass_isolate(&e->policy, e->pass, result, edata->sqlerrcode, &held_one,
						 &held_table))
	{
		/* the locked rows it stepped over for good (pass.c) */
		if (result->skipped_locked > 0)
			ttl_stats_count_rows_locked(MyDatabaseId, &e->policy,
										result->skipped_locked);
		if (held_table != NULL)
		{
			/* one of its tables held back; the pass goes on with the others */
			ttl_stats_count_error(MyDatabaseId, &e->policy, edata->sqlerrcode,
								  edata->message);
			ttl_error_log(edata, LOG,
						  "ttl_index: %s, one of the tables of the policy on %s, is left for now (SQLSTATE %s); its other tables are purged meanwhile, and it is tried again after ttl_index.error_delay, doubling each time it fails",
						  held_table->relname ? held_table->relname : "a table",
						  relname, unpack_sql_state(edata->sqlerrcode));
			return;
		}
		if (!held_one)
			return;				/* its rows are retried in halves */
		/* one row held back: say so once per kind of failure */
		ttl_stats_count_error(MyDatabaseId, &e->policy, edata->sqlerrcode,
							  edata->message);
		if (ttl_held_first_report(e->held, edata->sqlerrcode))
			ttl_error_log(edata, LOG,
						  "ttl_index: an expired row of table %s cannot be removed and is left in place (SQLSTATE %s); rows like it are retried later and counted in rows_held of ttl_index_stats, and this is logged once per policy and kind of error",
						  relname, unpack_sql_state(edata->sqlerrcode));
		return;
	}

	ttl_worker_rest(e, edata, NULL, relname, now);
}

/*
 * ttl_worker_rest
 *		A failure of the policy's own (not some rows'): log it once, as
 *		autovacuum does, the original error with a context line naming the
 *		table and the SQLSTATE; count it (with message, when given, in place
 *		of the error's); end the pass; the policy rests
 *		ttl_index.error_delay while the other policies go on.
 */
static void
ttl_worker_rest(TtlSchedEntry *e, ErrorData *edata, const char *message,
				const char *relname, TimestampTz now)
{
	int			sqlerrcode = edata->sqlerrcode;

	ttl_stats_count_error(MyDatabaseId, &e->policy, sqlerrcode,
						  message ? message : edata->message);
	ttl_error_log(edata, LOG,
				  "ttl_index: a batch of the policy on table %s failed (SQLSTATE %s)%s%s; the policy rests ttl_index.error_delay",
				  relname, unpack_sql_state(sqlerrcode),
				  message ? ": " : "", message ? message : "");
	ttl_worker_health(e, "errors", NULL);
	ttl_pass_end(e->pass);
	e->pass = NULL;
	e->retry_after = TimestampTzPlusMilliseconds(now, ttl_error_delay * 1000L);
}

/*
 * ttl_worker_pass_done
 *		A pass ended: when the next one is due.
 */
static void
ttl_worker_pass_done(TtlSchedEntry *e, TtlBatchResult *result,
					 const char *relname, TimestampTz now)
{
	TtlPass    *pass = e->pass;

	e->row_limit = pass->row_limit;
	e->next_check = ttl_worker_recheck_at(now);
	/* the next pass of a capped policy counts with this one's deletes (cap.c) */
	if (e->policy.max_rows > 0 || e->policy.max_bytes > 0)
		pgstat_report_stat(true);
	if (pass->cap_unmeasured && !e->cap_warned)
	{
		/* said once, until a pass can cap again */
		ereport(WARNING,
				(errmsg("ttl_index: the cap of %s waits for the table to be measured", relname),
				 e->policy.max_rows > 0 ?
				 errdetail("Its live-row count cannot be trusted (the table was never measured, or a crash, pg_stat_reset() or a promotion reset the count), and a cap of " INT64_FORMAT " rows is too large to count at each pass.",
						   e->policy.max_rows) :
				 errdetail("Its live-row count cannot be trusted (the table was never measured), and a table over 1 GB is too large to count at each pass."),
				 errhint("Run ANALYZE on the table; autovacuum will in time.")));
		e->cap_warned = true;
	}
	else if (!pass->cap_unmeasured)
		e->cap_warned = false;
	switch (result->outcome)
	{
		case TTL_BATCH_DONE:
			ttl_stats_count_pass(MyDatabaseId, &e->policy, pass->pass_rows,
								 pass->pass_left + ttl_held_count(e->held),
								 pass->pass_skipped_locked);
			/* held rows it did not meet are gone: room for others (held.c) */
			ttl_held_pass_done(e->held);
			e->locked_since = 0;
			e->locked_logged = false;
			ttl_worker_log_pass(e, relname, now);
			ttl_keepup_pass_done(&e->keepup, pass->now, now, pass->pass_rows,
								 relname, e->policy.column_name);
			ttl_stats_set_rates(MyDatabaseId, &e->policy, e->keepup.expiry_rate,
								e->keepup.delete_rate, ttl_keepup_behind(&e->keepup));
			e->caught_up = pass->pass_skipped_locked == 0 && pass->pass_left == 0;
			e->next_expiry = pass->next_expiry;
			e->next_expiry_unknown = pass->next_expiry_unknown;

			/*
			 * Wake for the next expiry, but start passes of one policy at
			 * least TTL_MIN_PASS_GAP_MS apart: rows that expire every
			 * millisecond are then deleted ten times a second in batches,
			 * not one transaction per row.
			 */
			if (e->next_expiry != 0 && !TIMESTAMP_NOT_FINITE(e->next_expiry))
				e->next_check = Min(e->next_check,
									Max(e->next_expiry,
										TimestampTzPlusMilliseconds(now, TTL_MIN_PASS_GAP_MS)));
			ttl_worker_health(e, NULL, pass);
			break;
		case TTL_BATCH_LOCKED:
			/* a table's lock could not be had: the views say so */
			ttl_worker_table_locked(e, relname, now);
			ttl_worker_health(e, NULL, pass);
			break;
		case TTL_BATCH_NO_INDEX:
			ttl_worker_health(e, "no usable index", NULL);
			/* warn once; during a restore the index comes moments later */
			if (!e->warned_no_index)
			{
				SetCurrentStatementStartTimestamp();
				StartTransactionCommand();
				ttl_pass_no_index_error(&e->policy, WARNING);
				CommitTransactionCommand();
				ttl_worker_in_round();
				e->warned_no_index = true;
			}
			break;
		default:
			break;
	}
	if (result->outcome != TTL_BATCH_NO_INDEX)
		e->warned_no_index = false;
	ttl_worker_watch(e, pass);
	/* kept until the next pass begins, which takes over its resolution */
	ttl_pass_idle(pass);
	e->last_pass = pass;
	e->pass = NULL;
}

/*
 * ttl_worker_origin_wait
 *		The policy wants its changes marked and no replication origin could
 *		be set up (origin.c): its batch waits, never runs unmarked.  The
 *		policy is looked at again shortly (the set-up is retried), its pass
 *		kept; the failure is counted once per run of them, with its reason.
 */
static void
ttl_worker_origin_wait(TtlSchedEntry *e)
{
	bool		news;
	const char *reason = ttl_origin_failure(&news);

	ttl_origin_batch_end();
	if (news)
		ttl_stats_count_error(MyDatabaseId, &e->policy, ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
							  psprintf("waiting for a replication origin: %s", reason));
	ttl_worker_health(e, "waiting for a replication origin", NULL);
	ttl_pass_end(e->pass);
	e->pass = NULL;
	e->retry_after = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ttl_max_sleep);
	e->origin_waiting = true;
}

/*
 * ttl_worker_window_closed
 *		The policy's purge window closed during its pass: the pass ends
 *		after the batch it had, its rows left for the next window, which
 *		the schedule waits for (ttl_worker_due).  A window that closes
 *		with expired rows left is falling behind (keepup.c); the views say
 *		the rows wait for the window.
 */
static void
ttl_worker_window_closed(TtlSchedEntry *e)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz opens;
	char	   *relname;

	(void) ttl_window_find(&e->policy, now, &opens, NULL);
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	relname = ttl_qualified_relname(e->policy.relid);
	ttl_keepup_window_closed(&e->keepup, relname ? relname : "?",
							 e->policy.column_name, opens);
	CommitTransactionCommand();
	ttl_worker_in_round();
	ttl_stats_set_rates(MyDatabaseId, &e->policy, e->keepup.expiry_rate,
						e->keepup.delete_rate, ttl_keepup_behind(&e->keepup));
	ttl_pass_end(e->pass);
	e->pass = NULL;
	e->caught_up = false;
	e->window_wait = true;
	e->next_check = now;

	/*
	 * What the entry remembers of the oldest expired row is from an earlier
	 * pass (one that found the table locked remembers when): read it again,
	 * so that the views say how long the rows left have waited.
	 */
	e->oldest_expiry = ttl_worker_probe_oldest(e);
	ttl_worker_health(e, e->oldest_expiry == 0 ? "" : "waiting for its purge window",
					  NULL);
}

/*
 * The batch ttl_worker_visit runs, for the steps of its transaction
 * (ttl_error_catch_xact).
 */
typedef struct TtlWorkerBatch
{
	TtlSchedEntry *e;
	TtlPass    *pass;
	TtlBatchResult *result;
	char	   *relname;		/* TTL_QUALNAME_LEN bytes, named in the batch */
} TtlWorkerBatch;

/*
 * ttl_worker_batch_begin
 *		A batch's transaction has begun: set its WAL mode, note its policy
 *		for the record of a worker that ends in it (see PendingDeaths), and
 *		arm its deadline.
 */
static void
ttl_worker_batch_begin(void *arg)
{
	TtlWorkerBatch *b = (TtlWorkerBatch *) arg;

	ttl_wal_batch_mode(&b->e->policy, b->pass);
	BatchPolicy = b->e->policy.id;
	ttl_timeout_batch_start();
}

/*
 * ttl_worker_batch_body
 *		The batch proper, its errors caught: name its table, say what runs
 *		in the slot and the activity, run it (pass.c), and flush its commit
 *		when it asks.
 */
static void
ttl_worker_batch_body(void *arg)
{
	TtlWorkerBatch *b = (TtlWorkerBatch *) arg;
	char	   *name = ttl_qualified_relname(b->e->policy.relid);

	if (name != NULL)
		strlcpy(b->relname, name, TTL_QUALNAME_LEN);
	ttl_slot_batch_begin(&b->e->policy, b->pass, b->relname);
	pgstat_report_activity(STATE_RUNNING,
						   psprintf("ttl_index: purging expired rows of %s", b->relname));
	ttl_pass_batch(&b->e->policy, b->pass, b->result);
	if (b->result->flush)
		ttl_wal_batch_flush();
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
	MemoryContext cxt;
	TimestampTz now;
	char		relname[TTL_QUALNAME_LEN];
	double		rate;
	TtlPass    *pass = e->pass;
	ErrorData  *edata;
	TtlWorkerBatch batch = {.e = e, .pass = pass, .result = &result,
							.relname = relname};
	TtlXactWork work = {
		.begin = ttl_worker_batch_begin,
		.body = ttl_worker_batch_body,
		.caught = ttl_timeout_batch_end,
		.arg = &batch,
	};

	/* what outlives the transaction is the round's (see Memory, above) */
	ttl_worker_in_round();
	cxt = CurrentMemoryContext;
	memset(&result, 0, sizeof(result));
	*deleted = 0;
	snprintf(relname, sizeof(relname), "with OID %u", e->policy.relid);

	/* under a rate limit, no batch takes more than a fifth of a second's worth */
	rate = ttl_worker_rate();
	if (rate > 0)
		pass->row_limit = Min(pass->row_limit, Max((int32) (rate / 5), 16));
	if (e->policy.rate_limit > 0)
		pass->row_limit = Min(pass->row_limit, Max(e->policy.rate_limit / 5, 16));
	/* while the application writes, small batches (see yield.c) */
	if (ttl_yield_busy())
		pass->row_limit = Min(pass->row_limit, TTL_BUSY_BATCH_ROWS);

	if (!ttl_origin_batch_begin(&e->policy))
	{
		ttl_worker_origin_wait(e);
		return;
	}
	e->origin_waiting = false;
	SetCurrentStatementStartTimestamp();
	/* back in cxt either way; a failed batch's deadline is disarmed first */
	edata = ttl_error_catch_xact(cxt, &work);

	if (edata != NULL)
	{
		BatchPolicy = 0;
		ttl_origin_batch_end();
		ttl_slot_batch_end(pass);
		now = GetCurrentTimestamp();
		if (ttl_timeout_fired())
		{
			char		message[128];

			/* canceled by its deadline: the policy's failure (timeout.c) */
			snprintf(message, sizeof(message),
					 "the batch ran past ttl_index.batch_timeout (%d ms)",
					 ttl_timeout_ms());
			ttl_worker_rest(e, edata, message, relname, now);
		}
		else if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		{
			/* someone canceled the batch: no failure of the policy's */
			ereport(LOG,
					(errmsg("ttl_index: a batch of the policy on %s was canceled; its rows are left for a later pass",
							relname)));
			ttl_pass_end(e->pass);
			e->pass = NULL;
			e->next_check = ttl_worker_recheck_at(now);
		}
		else
			ttl_worker_failed(e, &result, edata, relname, now);
		FreeErrorData(edata);
		ttl_owner_release_session_locks();
		pgstat_report_activity(STATE_IDLE, NULL);
		return;
	}

	ttl_timeout_batch_end();
	BatchPolicy = 0;
	ttl_origin_batch_end();
	ttl_owner_release_session_locks();
	ttl_slot_batch_end(pass);
	pgstat_report_activity(STATE_IDLE, NULL);
	for (int i = 0; i < NumPendingDeaths; i++)
	{
		if (PendingDeaths[i].policy_id != e->policy.id)
			continue;
		/* a policy whose batch ended a worker has one that ends */
		ttl_slot_forget_death(e->policy.id);
		PendingDeaths[i].policy_id = 0;
	}

	/*
	 * Hand our table counters (tuples deleted, dead tuples) to the
	 * cumulative statistics, as a backend does when idle: autovacuum decides
	 * when to vacuum the table from them.  At most once a second; a
	 * background worker that never calls this reports only at exit.
	 */
	pgstat_report_stat(false);
	ttl_wal_batch_learn(&e->policy, pass, result.deleted);
	ttl_stats_count_batch(MyDatabaseId, &e->policy, &result);
	ttl_worker_publish_prefix(e, pass);
	*deleted = result.deleted;
	now = GetCurrentTimestamp();
	/* a long pass (a backlog, a rate limit): the views need not wait */
	if (result.outcome == TTL_BATCH_MORE)
		ttl_worker_health_in_pass(e, pass);
	if (result.outcome != TTL_BATCH_MORE)
		ttl_worker_pass_done(e, &result, relname, now);
	else if (ttl_drain_offered(pass))
		ttl_drain_start(&e->policy, pass);
	else if (ttl_drain_waiting(pass))
	{
		/* the helpers hold the last slices: wait for one to end */
		(void) ttl_worker_nap("waiting for helpers", 100);
	}
}

/*
 * The probe of ttl_worker_probe_oldest: the policy, and what its
 * transaction read.
 */
typedef struct TtlWorkerProbe
{
	TtlPolicy  *policy;
	TimestampTz oldest;
} TtlWorkerProbe;

/*
 * ttl_worker_probe_body
 *		In the probe's transaction, its errors caught: read the oldest
 *		expired row's expiry under a snapshot.
 */
static void
ttl_worker_probe_body(void *arg)
{
	TtlWorkerProbe *probe = (TtlWorkerProbe *) arg;
	TimestampTz at;

	PushActiveSnapshot(GetTransactionSnapshot());
	switch (ttl_probe_oldest(probe->policy, &at))
	{
		case TTL_PROBE_FOUND:
			probe->oldest = at < GetCurrentTimestamp() ? at : 0;
			break;
		case TTL_PROBE_EMPTY:
			probe->oldest = 0;
			break;
		case TTL_PROBE_UNKNOWN:
			break;
	}
	PopActiveSnapshot();
}

/*
 * ttl_worker_probe_oldest
 *		The expiry of the policy's oldest expired row, read from its index
 *		in a transaction of its own (probe.c: the owner's filter runs as the
 *		owner, in a subtransaction); 0 when no row has expired, DT_NOBEGIN
 *		when it cannot be read.  An error is the probe's, never the
 *		policy's: the answer is then unknown.
 */
static TimestampTz
ttl_worker_probe_oldest(TtlSchedEntry *e)
{
	TtlWorkerProbe probe = {.policy = &e->policy, .oldest = DT_NOBEGIN};
	TtlXactWork work = {.body = ttl_worker_probe_body, .arg = &probe};
	ErrorData  *edata;

	SetCurrentStatementStartTimestamp();
	edata = ttl_error_catch_xact(CurrentMemoryContext, &work);
	if (edata != NULL)
	{
		ereport(DEBUG1,
				(errmsg_internal("ttl_index: could not read the oldest expired row of the policy %d: %s",
								 e->policy.id, edata->message)));
		FreeErrorData(edata);
		probe.oldest = DT_NOBEGIN;
	}
	return probe.oldest;
}

/*
 * ttl_worker_pass_reason
 *		Why a pass leaves expired rows in place (or, while it runs, has left
 *		them so far), from what it met: the first that applies.
 */
static const char *
ttl_worker_pass_reason(TtlSchedEntry *e, TtlPass *pass)
{
	if (pass->skipped_locked)
		return "table locked";
	if (ttl_held_count(e->held) > 0)
		return "held rows";
	if (pass->pass_left > 0)
		return "rows kept by triggers, rules or foreign keys";
	if (pass->pass_skipped_locked > 0)
		return "locked rows";
	if (e->policy.rate_limit > 0 || ttl_worker_rate() > 0)
		return "rate limited";
	return "falling behind";
}

/*
 * ttl_worker_health_in_pass
 *		While a pass runs long (a backlog, a rate limit), publish its health
 *		now and then instead of at its end only: a policy that is not
 *		keeping up is stalled while it works, once its oldest expired row
 *		has waited ttl_index.stalled_after.  At most every quarter of that
 *		(between 1 s and 1 min), and not in a pass's first such time, so
 *		short passes never probe; a probe that took long (it read past
 *		many rows a filter rejects) waits ten times as long before the
 *		next.  A probe that cannot tell publishes nothing.  Outside a
 *		transaction.
 */
static void
ttl_worker_health_in_pass(TtlSchedEntry *e, TtlPass *pass)
{
	TimestampTz now = GetCurrentTimestamp();
	int			every_ms = (int) Max(1000, Min(60000, (int64) ttl_stalled_after * 250));
	TimestampTz oldest;
	TtlHealth	h;

	if (!TimestampDifferenceExceeds(pass->now, now, every_ms) ||
		now < e->health_next)
		return;
	oldest = ttl_worker_probe_oldest(e);
	e->health_next = GetCurrentTimestamp();
	e->health_next += Max((int64) every_ms * 1000, (e->health_next - now) * 10);
	if (oldest == DT_NOBEGIN)
		return;
	e->oldest_expiry = oldest;
	memset(&h, 0, sizeof(h));
	h.oldest_expiry = e->oldest_expiry;
	h.next_expiry = e->next_expiry_unknown ? 0 : e->next_expiry;
	h.at = GetCurrentTimestamp();
	strlcpy(h.reason, e->oldest_expiry == 0 ? "" : ttl_worker_pass_reason(e, pass),
			sizeof(h.reason));
	ttl_stats_publish_health(MyDatabaseId, e->policy.id, &h);
}

/*
 * ttl_worker_table_locked
 *		A pass found a table of the policy locked (its lock not to be had
 *		at once): remember since when, and once it has lasted
 *		ttl_index.stalled_after, say so in the log, once, with where to
 *		look: a prepared transaction nobody finished holds its locks for
 *		good.
 */
static void
ttl_worker_table_locked(TtlSchedEntry *e, const char *relname, TimestampTz now)
{
	if (e->locked_since == 0)
		e->locked_since = now;
	if (e->locked_logged ||
		!TimestampDifferenceExceeds(e->locked_since, now,
									(int) Min((int64) ttl_stalled_after * 1000, PG_INT32_MAX)))
		return;
	e->locked_logged = true;
	ereport(LOG,
			(errmsg("ttl_index: a table of the policy on %s has been locked by another transaction since %s; its expired rows wait",
					relname, timestamptz_to_str(e->locked_since)),
			 errdetail("The worker takes its locks without waiting, and comes back later."),
			 errhint("A prepared transaction that was never committed or rolled back keeps its locks until it is: look in pg_prepared_xacts, and in pg_locks for the lock's holder.")));
}

/*
 * ttl_worker_health
 *		Publish what the worker knows of the policy's backlog for the views
 *		(TtlHealth, stats.c): after a pass (pass not NULL), the oldest
 *		expired row still there, from an index probe, and why the pass left
 *		it; when a pass could not run, why, with what the last probe saw.
 */
static void
ttl_worker_health(TtlSchedEntry *e, const char *reason, TtlPass *pass)
{
	TtlHealth	h;

	memset(&h, 0, sizeof(h));
	if (pass != NULL)
	{
		TimestampTz now = GetCurrentTimestamp();

		/*
		 * A pass that left nothing in place deleted every row expired at
		 * its start: what expired since is what the next one takes (and
		 * a probe would read past every row a filter rejects to find
		 * it).  One that left rows reads the oldest from the index.
		 */
		if (ttl_held_count(e->held) == 0 && pass->pass_left == 0 &&
			pass->pass_skipped_locked == 0 && !pass->skipped_locked)
			e->oldest_expiry =
				!e->next_expiry_unknown && e->next_expiry != 0 &&
				!TIMESTAMP_NOT_FINITE(e->next_expiry) && e->next_expiry < now ?
				e->next_expiry : 0;
		else
			e->oldest_expiry = ttl_worker_probe_oldest(e);

		/*
		 * A table whose lock is not to be had may not be readable either
		 * (ACCESS EXCLUSIVE): its rows have waited at least since then.
		 */
		if (e->oldest_expiry == DT_NOBEGIN && pass->skipped_locked &&
			e->locked_since != 0)
			e->oldest_expiry = e->locked_since;
		reason = e->oldest_expiry == 0 ? "" : ttl_worker_pass_reason(e, pass);
	}
	else if (e->oldest_expiry == 0)
		e->oldest_expiry = DT_NOBEGIN;	/* not looked at since */
	h.oldest_expiry = e->oldest_expiry;
	h.next_expiry = e->next_expiry_unknown ? 0 : e->next_expiry;
	h.at = GetCurrentTimestamp();
	strlcpy(h.reason, reason, sizeof(h.reason));
	ttl_stats_publish_health(MyDatabaseId, e->policy.id, &h);
}

/*
 * ttl_worker_publish_prefix
 *		Once a batch committed: where the known-dead prefix of the policy's
 *		first target that has one ends, for the views' probes (probe.c), which
 *		would otherwise read every dead entry at each look.  Published only
 *		when it changed.
 */
static void
ttl_worker_publish_prefix(TtlSchedEntry *e, TtlPass *pass)
{
	ListCell   *lc;

	foreach(lc, pass->targets)
	{
		TtlTarget  *t = (TtlTarget *) lfirst(lc);
		Datum		key;
		uint32		writes;

		if (!ttl_skip_key(t, &key, &writes))
			continue;
		if (t->relid != e->prefix_relid || t->indexoid != e->prefix_indexoid ||
			key != e->prefix_key || writes != e->prefix_writes)
		{
			ttl_stats_publish_prefix(MyDatabaseId, e->policy.id, t->relid,
									 t->indexoid, true, key, writes);
			e->prefix_relid = t->relid;
			e->prefix_indexoid = t->indexoid;
			e->prefix_key = key;
			e->prefix_writes = writes;
		}
		return;
	}
	if (OidIsValid(e->prefix_relid))
		ttl_stats_publish_prefix(MyDatabaseId, e->policy.id, e->prefix_relid,
								 InvalidOid, false, (Datum) 0, 0);
	e->prefix_relid = InvalidOid;
}

/*
 * ttl_table_stat_writes
 *		Inserts plus updates the cumulative statistics have counted for a
 *		table, or -1 when they have no entry for it.  Read with
 *		stats_fetch_consistency = none (set at worker start), so the value
 *		is current and nothing is cached.
 */
static int64
ttl_table_stat_writes(Oid relid)
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
 * ttl_worker_watch
 *		Remember, for the idle check, the write counters the pass read as it
 *		began: the policy's own table's and its targets'.
 */
static void
ttl_worker_watch(TtlSchedEntry *e, TtlPass *pass)
{
	ListCell   *lc;

	e->nwatched = 0;
	e->writes_known = pass->listed &&
		list_length(pass->targets) < TTL_WATCHED_MAX;
	if (!e->writes_known)
		return;
	e->watched[e->nwatched] = e->policy.relid;
	e->watched_counts[e->nwatched++] = pass->writes_at_start;
	foreach(lc, pass->targets)
	{
		TtlTarget  *t = (TtlTarget *) lfirst(lc);

		/*
		 * Citus writes shards without the executor's end or the COPY
		 * statement our hooks see (local execution on the coordinator, its
		 * own COPY): look at the shards at every max_sleep re-check.
		 */
		if (t->shard)
		{
			e->writes_known = false;
			e->nwatched = 0;
			return;
		}
		if (t->relid == e->policy.relid)
			continue;
		e->watched[e->nwatched] = t->relid;
		e->watched_counts[e->nwatched++] = t->writes_at_start;
	}
}

/*
 * ttl_worker_written
 *		Whether any table of the policy may have been written since its last
 *		pass began.
 */
static bool
ttl_worker_written(TtlSchedEntry *e)
{
	if (!e->writes_known)
		return true;
	for (int i = 0; i < e->nwatched; i++)
	{
		if (ttl_writes_count(MyDatabaseId, e->watched[i]) != e->watched_counts[i])
			return true;
	}
	return ttl_table_stat_writes(e->policy.relid) != e->stat_writes;
}

/*
 * ttl_worker_admit
 *		Start a pass for every enabled policy that is due (see the top of
 *		the file for when the max_sleep look is skipped).  Returns whether
 *		any policy is in a pass.
 */
static bool
ttl_worker_admit(TimestampTz now)
{
	bool		any = false;

	for (int i = 0; i < ScheduleLen; i++)
	{
		TtlSchedSlot *slot = &Schedule[i];
		TtlSchedEntry *e;

		/* most policies: not due, and their entries are not read */
		if (slot->due > now)
			continue;
		if (slot->due == TTL_DUE_IN_PASS)
		{
			any = true;
			continue;
		}

		/*
		 * Only the max_sleep re-check is due, and nothing changed: move the
		 * slot on without reading the entry (see TtlSchedSlot).
		 */
		if (slot->idle &&
			ttl_worker_idle_holds(now, slot->next_expiry, slot->last_pass_at) &&
			ttl_writes_count(MyDatabaseId, slot->relid) == slot->writes &&
			ttl_table_stat_writes(slot->relid) == slot->stat_writes)
		{
			slot->due = ttl_worker_idle_next(now, slot->next_expiry);
			continue;
		}

		e = slot->e;
		Assert(e->pass == NULL && e->policy.enabled && now >= e->retry_after);

		if (e->caught_up && !e->next_expiry_unknown &&
			ttl_worker_idle_holds(now, e->next_expiry, e->last_pass_at) &&
			!ttl_worker_written(e))
		{
			/* as above, for a policy whose slot has no copy */
			e->next_check = ttl_worker_idle_next(now, e->next_expiry);
			ttl_worker_slot_set(slot, e);
			continue;
		}
		if (!ttl_window_find(&e->policy, now, NULL, NULL))
		{
			/* due, but its window has closed meanwhile: at the next one */
			e->next_check = now;
			if (!e->window_wait &&
				(!e->caught_up || e->next_expiry_unknown ||
				 (e->next_expiry != 0 && e->next_expiry <= now)))
			{
				/* rows have expired, or may have: they wait for the window */
				e->window_wait = true;
				ttl_worker_health(e, "waiting for its purge window", NULL);
			}
			ttl_worker_slot_set(slot, e);
			continue;
		}
		e->window_wait = false;
		e->caught_up = false;
		e->last_pass_at = now;
		e->next_expiry = 0;
		e->next_expiry_unknown = false;
		e->stat_writes = ttl_table_stat_writes(e->policy.relid);
		e->pass = ttl_pass_begin(&e->policy, e->last_pass, e->held, now,
								 e->row_limit, e->cxt);
		e->last_pass = NULL;
		ttl_worker_slot_set(slot, e);
		any = true;
	}
	return any;
}

/*
 * ttl_worker_leave_if_asked
 *		Exit if DROP DATABASE (or similar) wants the worker gone, or the
 *		launcher ends its turn.
 */
static void
ttl_worker_leave_if_asked(void)
{
	if (ttl_slot_must_leave())
		proc_exit(0);
	if (ttl_slot_turn_over())
	{
		/* outside a transaction: no catalog look-up, the OID */
		ereport(DEBUG1,
				(errmsg_internal("ttl_index worker of database %u ends its turn",
								 MyDatabaseId)));
		proc_exit(0);
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
	ttl_worker_leave_if_asked();
	return ConfigReloadPending || ttl_slot_generation() != LoadedGeneration ||
		!ttl_shmem_server_enabled();
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
						 ms, ttl_wait_event(phase));
		ResetLatch(MyLatch);
	}
	return !ttl_worker_interrupted();
}

/*
 * ttl_worker_hold_for_replicas
 *		Before a batch: while a standby or a replication slot's consumer is
 *		too far behind (replicas.c), wait, in a phase that says for what.
 *		Returns false when interrupted (catalog changed, settings to reload,
 *		told to leave): the caller goes back to its main loop, and comes
 *		back here.
 */
static bool
ttl_worker_hold_for_replicas(void)
{
	const char *phase;
	TimestampTz started;
	bool		go_on = true;
	bool		holding = ttl_replicas_hold(&phase);

	if (!holding)
		return true;
	started = GetCurrentTimestamp();
	while (go_on && holding)
	{
		go_on = ttl_worker_nap(phase, 250);
		holding = go_on && ttl_replicas_hold(&phase);
	}
	ttl_slot_count_replica_hold((GetCurrentTimestamp() - started) / 1000);
	return go_on;
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
	return (double) ttl_rate_limit / Max(ttl_shmem_running_count(), 1);
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
 *		After a batch of e that took batch_us microseconds: while the
 *		application is writing, pause so that batches fill
 *		ttl_index.busy_share percent of the time (see yield.c), but not so
 *		long that e's pass deletes more slowly than its rows expire
 *		(keepup.c).  Returns false when interrupted.
 */
static bool
ttl_worker_yield(TtlSchedEntry *e, int64 batch_us)
{
	long		ms = ttl_yield_pause_ms(batch_us);

	/* never so long that the policy's pass falls behind (keepup.c) */
	if (e->pass != NULL)
		ms = ttl_keepup_pause_ms(&e->keepup, e->pass->now, e->pass->pass_rows, ms,
								 ttl_window_share(&e->policy));

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
 * Fairness between owners.  The worker serves the policies in a pass round
 * by round, one batch each.  One owner's batches that each take nearly
 * ttl_index.batch_timeout (the owner's triggers decide) would make every
 * other owner wait for all of them at each round: an owner whose batches
 * of the round have taken TTL_FAIR_BATCHES times ttl_index.batch_time
 * waits for the next round while another owner has policies in a pass.
 * An owner never waits for itself (one owner: no limit), and each owner's
 * first batch of a round always runs.  Owners past TTL_FAIR_OWNERS in a
 * round are not limited.
 */
#define TTL_FAIR_OWNERS		64
static int	RoundStart = 0;
#define TTL_FAIR_BATCHES	2

typedef struct TtlOwnerShare
{
	Oid			owner;
	int64		used_us;		/* batch time in this round */
} TtlOwnerShare;

/*
 * ttl_worker_owner_shares
 *		The owners of the policies in a pass, each with nothing used yet;
 *		returns how many.
 */
static int
ttl_worker_owner_shares(TtlOwnerShare *shares)
{
	int			n = 0;

	for (int i = 0; i < ScheduleLen; i++)
	{
		TtlSchedEntry *e = Schedule[i].e;
		bool		seen = false;

		if (Schedule[i].due != TTL_DUE_IN_PASS)
			continue;
		for (int j = 0; j < n && !seen; j++)
			seen = shares[j].owner == e->owner;
		if (!seen && n < TTL_FAIR_OWNERS)
		{
			shares[n].owner = e->owner;
			shares[n].used_us = 0;
			n++;
		}
	}
	return n;
}

/*
 * ttl_worker_owner_share
 *		An owner's share of the round, or NULL when it is not tracked.
 */
static TtlOwnerShare *
ttl_worker_owner_share(TtlOwnerShare *shares, int n, Oid owner)
{
	for (int j = 0; j < n; j++)
	{
		if (shares[j].owner == owner)
			return &shares[j];
	}
	return NULL;
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
	int64		deleted;
	TimestampTz started;
	int64		batch_us;
	bool		any;
	bool		origin_waiting;
	bool		window_wait;

	any = ttl_worker_admit(now);

	while (any)
	{
		bool		ran = false;
		TimestampTz ready = 0;
		TtlOwnerShare shares[TTL_FAIR_OWNERS];
		int			nshares;

		/* one batch per policy in pass: a round (see Memory, above) */
		ttl_worker_new_round();
		nshares = ttl_worker_owner_shares(shares);

		/* each round starts one entry further: an owner's turns rotate */
		RoundStart = RoundStart + 1 < ScheduleLen ? RoundStart + 1 : 0;
		for (int k = 0, i = RoundStart; k < ScheduleLen; k++, i = i + 1 < ScheduleLen ? i + 1 : 0)
		{
			TtlSchedSlot *slot = &Schedule[i];
			TtlSchedEntry *e = slot->e;
			TtlOwnerShare *share;

			if (slot->due != TTL_DUE_IN_PASS)
				continue;
			/* its purge window closed: the pass ends here (window.c) */
			if (e->policy.windows.n != 0 &&
				!ttl_window_find(&e->policy, GetCurrentTimestamp(), NULL, NULL))
			{
				ttl_worker_window_closed(e);
				ttl_worker_slot_set(slot, e);
				continue;
			}
			/* an owner past its share of this round waits for the next */
			share = ttl_worker_owner_share(shares, nshares, e->owner);
			if (share != NULL && nshares > 1 &&
				share->used_us >= (int64) ttl_batch_time * 1000 * TTL_FAIR_BATCHES)
			{
				ran = true;		/* the round is not over: go round again */
				continue;
			}
			if (e->rate_ready_at != 0 && e->rate_ready_at > GetCurrentTimestamp())
			{
				/* over its own rate limit: wait, others go on */
				if (ready == 0 || e->rate_ready_at < ready)
					ready = e->rate_ready_at;
				continue;
			}
			if (!ttl_worker_hold_for_replicas())
				return 0;
			ran = true;
			started = GetCurrentTimestamp();
			ttl_worker_visit(e, &deleted);
			ttl_worker_slot_set(slot, e);
			batch_us = GetCurrentTimestamp() - started;
			if (share != NULL)
				share->used_us += batch_us;
			ttl_worker_policy_debt(e, deleted);
			/* rows are charged to the rate limit before any pause */
			if (ttl_worker_interrupted() ||
				!ttl_worker_throttle(deleted) ||
				!ttl_worker_yield(e, batch_us))
				return 0;
		}
		if (!ran && ready != 0)
		{
			long		ms = (long) ((ready - GetCurrentTimestamp() + 999) / 1000);

			if (!ttl_worker_nap("rate limited", Min(ms, (long) ttl_max_sleep)))
				return 0;
		}
		any = ttl_worker_admit(GetCurrentTimestamp());
	}

	origin_waiting = false;
	window_wait = false;
	now = GetCurrentTimestamp();
	wake = TimestampTzPlusMilliseconds(now, ttl_max_sleep);
	for (int i = 0; i < ScheduleLen; i++)
	{
		origin_waiting |= Schedule[i].origin_waiting;
		window_wait |= Schedule[i].window_wait;
		/*
		 * In a build with asserts: no slot is out of step with its entry.
		 * An idle re-check moves due past the entry's next_check, never
		 * before it.
		 */
		Assert(Schedule[i].e->pass == NULL);
		/*
		 * A window only moves due later; its opening is not recomputed
		 * here (the server's TimeZone may have changed since).
		 */
		Assert(!Schedule[i].e->policy.enabled ? Schedule[i].due == DT_NOEND :
			   Schedule[i].e->policy.windows.n != 0 ?
			   Schedule[i].due >= Max(Schedule[i].e->next_check, Schedule[i].e->retry_after) :
			   Schedule[i].due >= ttl_worker_due(Schedule[i].e));
		wake = Min(wake, Schedule[i].due);
	}
	ttl_slot_set_phase(origin_waiting ? "waiting for a replication origin" :
					   window_wait ? "waiting for a purge window" : "sleeping");
	if (wake <= now)
		return 0;
	return (long) ((wake - now + 999) / 1000);
}

/*
 * ttl_worker_emit_log
 *		emit_log_hook of the worker: a FATAL error during a batch leaves a
 *		record of the policy for the next workers (see PendingDeaths), unless
 *		it is a shutdown or an eviction, which say nothing of the policy.
 *		Runs inside error reporting: records, and nothing more.
 */
static void
ttl_worker_emit_log(ErrorData *edata)
{
	if (edata->elevel >= FATAL && BatchPolicy != 0)
	{
		if (ttl_timeout_killed())
			ttl_slot_record_death(BatchPolicy, ERRCODE_QUERY_CANCELED,
								  "the batch ran past ttl_index.batch_timeout and went on when canceled");
		else if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_OPERATOR_INTERVENTION)
			ttl_slot_record_death(BatchPolicy, edata->sqlerrcode, edata->message);
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/*
 * ttl_worker_apply_death
 *		After a reload: each policy whose batch ended a worker (see
 *		PendingDeaths) rests ttl_index.error_delay, doubled for each time in
 *		a row, up to ten minutes; each failure is logged and counted once,
 *		by the first worker that reads it.
 */
static void
ttl_worker_apply_death(void)
{
	TimestampTz now = GetCurrentTimestamp();

	if (NumPendingDeaths == 0 || PendingDeathsApplied)
		return;
	for (int d = 0; d < NumPendingDeaths; d++)
	{
		TtlDeath   *death = &PendingDeaths[d];
		int64		rest_s;

		if (death->policy_id == 0)
			continue;
		rest_s = Min((int64) ttl_error_delay << Min(Max(death->count, 1) - 1, 16), 600);
		for (int i = 0; i < ScheduleLen; i++)
		{
			TtlSchedEntry *e = Schedule[i].e;

			if (e->policy.id != death->policy_id)
				continue;
			/* every new worker rests it; the first logs and counts it */
			if (!death->reported)
			{
				ereport(LOG,
						(errcode(death->code),
						 errmsg("ttl_index: the worker ended during a batch of the policy on table OID %u, column %s, which rests " INT64_FORMAT " s (SQLSTATE %s): %s",
								e->policy.relid, e->policy.column_name, rest_s,
								unpack_sql_state(death->code), death->message)));
				ttl_stats_count_error(MyDatabaseId, &e->policy, death->code,
									  psprintf("the worker ended during a batch: %s",
											   death->message));
			}
			ttl_pass_end(e->pass);
			e->pass = NULL;
			e->retry_after = TimestampTzPlusMilliseconds(now, rest_s * 1000);
			ttl_worker_slot_set(&Schedule[i], e);
		}
	}
	/* counted once; the slot keeps each record until a batch of it ends */
	PendingDeathsApplied = true;
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

	ttl_pin_process_settings("ttl_index worker");
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = ttl_worker_emit_log;
	NumPendingDeaths = ttl_slot_deaths(PendingDeaths);

	ereport(DEBUG1, (errmsg("ttl_index worker started")));
	/* origins no process may use any more go back to the server (origin.c) */
	(void) ttl_origin_drop_unused();
	ttl_yield_start();
	ttl_targets_init();
	RoundContext = AllocSetContextCreate(TopMemoryContext, "ttl_index worker round",
										 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		long		sleep_ms = ttl_max_sleep;
		bool		enabled;

		/* nothing of the last turn outlives it (see Memory, above) */
		ttl_worker_new_round();
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			ttl_origin_config_reloaded();
			(void) ttl_origin_drop_unused();
			/* its transactions' ends may have left TopMemoryContext current */
			ttl_worker_in_round();
			if (!ttl_yield_renice())
			{
				ereport(LOG,
						(errmsg("ttl_index worker restarting to run at nice value %d",
								ttl_worker_nice)));
				proc_exit(0);
			}
		}
		ttl_worker_leave_if_asked();

		if (!Loaded || ttl_slot_generation() != LoadedGeneration ||
			TimestampDifferenceExceeds(LoadedAt, GetCurrentTimestamp(), TTL_RELOAD_EVERY_MS))
		{
			/* paused, and the setting may have changed since: again */
			if (!ttl_worker_reload())
				continue;
			ttl_worker_apply_death();
		}

		/* the configuration's value, not this process's (settings.c) */
		enabled = ttl_shmem_server_enabled();
		if (enabled)
			sleep_ms = ttl_worker_run();
		else
			ttl_slot_set_phase("disabled");

		/*
		 * A wake-up that came while we ran may have had its latch consumed
		 * by a wait inside PostgreSQL (a lock or buffer wait resets the
		 * process latch): look at the generation again rather than sleep
		 * through it.
		 */
		if (sleep_ms > 0 && Loaded && ttl_slot_generation() != LoadedGeneration)
			sleep_ms = 0;

		if (sleep_ms > 0)
		{
			/* report what is still pending before a sleep */
			pgstat_report_stat(true);
			(void) WaitLatch(MyLatch,
							 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 Min(sleep_ms, (long) ttl_max_sleep),
							 ttl_wait_event(enabled ? "sleeping" : "disabled"));
			ResetLatch(MyLatch);
			/* the application may have started writing meanwhile */
			ttl_yield_restart();
		}
	}
}
