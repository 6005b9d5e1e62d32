/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The cluster-wide launcher: it keeps one slot per database (shmem.h)
 *	  and starts the per-database workers, taking turns when more databases
 *	  need one than may run.
 *
 * The launcher is a static background worker connected to no database (it
 * reads only the shared catalog pg_database, and its settings are the
 * configuration's alone, which it publishes for owner.c, and its
 * ttl_index.enabled for the workers).  It never runs in
 * a server that pg_upgrade started (binary-upgrade mode), so no worker does
 * either: workers are started by the launcher alone.  Each loop:
 *
 *	- a database it has never seen is probed: a worker is started, and if
 *	  the extension is not installed there, that worker says so in the slot
 *	  and exits; the launcher then leaves the database alone until CREATE
 *	  EXTENSION (or any change to the policy catalog) asks at commit for the
 *	  database to be probed again (hooks.c).  When every slot is taken
 *	  (ttl_index.max_databases), a database probed without the extension
 *	  gives its slot to one that needs it, and gets one again only when a
 *	  probe is asked for it: empty databases cannot crowd the others out;
 *	- a worker that exits while its database still has the extension is
 *	  started again, after a delay that doubles with each quick failure (1 s
 *	  up to 60 s), so that a broken database cannot cause a restart storm;
 *	- at most max_workers() workers run at once: ttl_index.max_workers, and
 *	  never more than max_worker_processes leaves after the launcher and
 *	  ttl_index.free_worker_slots (the slots parallel query, logical
 *	  replication and other extensions need).  When more databases need a
 *	  worker, they take turns: those waiting longest start first as slots
 *	  free up, and a worker whose turn has lasted ttl_index.database_turn
 *	  (or that sleeps with nothing to do for a couple of seconds of its
 *	  turn) is asked to leave while others wait.  With N databases and W
 *	  workers, a database waits at most ceil((N - W) / W) turns.  Every
 *	  database that waits is named in the log (once per shortage) and shown
 *	  by ttl_index_databases;
 *	- a database paused by ALTER DATABASE ... SET ttl_index.enabled = off
 *	  gets no worker: its worker finds the setting (the launcher, connected
 *	  to no database, cannot read pg_db_role_setting), marks the slot and
 *	  leaves, which is no failure; the slot stays marked, taking no worker
 *	  from the others, until the commit of an ALTER DATABASE ... SET or
 *	  RESET of the setting (or any other wake-up of the database, hooks.c)
 *	  clears it, or a minute after its worker left (a RESET that woke no
 *	  one), and a worker starts and reads the setting again.
 *
 * Locking: the slots lock (shmem.c) is held only to read and change slots;
 * registering a worker, logging and setting latches happen after it is
 * released.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "ttl_index.h"
#include "bgw/bgw.h"
#include "engine/engine.h"
#include "shared/shared.h"
#include "shared/shmem.h"

/* how long a worker must have lived for its exit not to count as a failure */
#define TTL_HEALTHY_RUN_MS		10000
#define TTL_MAX_BACKOFF_MS		60000
/* a paused database's worker starts again after this to re-read the setting */
#define TTL_PAUSED_RECHECK_MS	60000
/* a worker sleeping this long into its turn leaves early when others wait */
#define TTL_IDLE_TURN_MS		2000

typedef struct TtlDbInfo
{
	Oid			oid;
	NameData	name;
} TtlDbInfo;

/* a worker to start, decided under the lock, registered after it */
typedef struct TtlStart
{
	int			slot;
	Oid			dboid;
	NameData	datname;
} TtlStart;

static BackgroundWorkerHandle **Handles = NULL;
static bool *LoggedWaiting = NULL;	/* per slot, during a shortage */
static bool InShortage = false;

static void ttl_launcher_detach(int code, Datum arg);

/*
 * ttl_launcher_register
 *		Register the launcher with the postmaster (preload time only).
 *
 * It starts once recovery has finished, so on a standby nothing runs until
 * promotion, and it is restarted after 5 s if it ever exits with an error.
 */
void
ttl_launcher_register(void)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 5;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "ttl_index");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "ttl_launcher_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "ttl_index launcher");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "ttl_index launcher");
	RegisterBackgroundWorker(&bgw);
}

/*
 * ttl_launcher_list_databases
 *		The databases a worker may serve: connectable, valid, not templates.
 *
 * Templates are skipped on purpose: a worker connected to template1 would
 * make every CREATE DATABASE wait for it, and a template holds no live data.
 */
static List *
ttl_launcher_list_databases(void)
{
	List	   *result = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	MemoryContext outer = CurrentMemoryContext;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();

	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		MemoryContext old;
		TtlDbInfo  *info;

		if (!db->datallowconn || db->datistemplate ||
			ttl_database_is_invalid_form(db))
			continue;

		old = MemoryContextSwitchTo(outer);
		info = palloc(sizeof(TtlDbInfo));
		info->oid = db->oid;
		namestrcpy(&info->name, NameStr(db->datname));
		result = lappend(result, info);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);

	CommitTransactionCommand();
	return result;
}

/*
 * Databases probed without the extension whose slot another database took
 * (launcher memory, OIDs): they get a slot again when a backend asks for a
 * probe (CREATE EXTENSION, ttl_shmem_wake_database), not at every loop.
 */
static List *NoExtension = NIL;

/*
 * ttl_launcher_reclaim_slot
 *		The slot of a database the probe found without the extension (and
 *		no worker running), given up for a database that needs one: a role
 *		that may create databases cannot keep the databases that use
 *		ttl_index out by filling ttl_index.max_databases with empty ones.
 *		NULL when there is none.  The caller holds the slots lock.
 */
static TtlDbSlot *
ttl_launcher_reclaim_slot(void)
{
	int			nslots = ttl_shmem_nslots();

	for (int i = 0; i < nslots; i++)
	{
		TtlDbSlot  *slot = ttl_shmem_slot(i);
		MemoryContext old;

		if (!OidIsValid(slot->dboid) || slot->has_extension || slot->probe ||
			slot->worker_running)
			continue;
		old = MemoryContextSwitchTo(TopMemoryContext);
		NoExtension = lappend_oid(NoExtension, slot->dboid);
		MemoryContextSwitchTo(old);
		memset(slot, 0, sizeof(TtlDbSlot));
		LoggedWaiting[i] = false;
		return slot;
	}
	return NULL;
}

/*
 * ttl_launcher_sync_slots
 *		Make the slots match the list of databases: a new database gets a
 *		slot and a probe (the slot of a database without the extension, when
 *		none is free); a slot whose database is gone and whose worker has
 *		stopped is freed.
 */
static void
ttl_launcher_sync_slots(List *databases)
{
	static bool warned_full = false;
	int			nslots = ttl_shmem_nslots();
	Oid		   *gone = palloc(sizeof(Oid) * nslots);
	int			ngone = 0;
	char	   *unserved = NULL;
	ListCell   *lc;
	Oid			asked[TTL_PROBE_REQUESTS];
	int			nasked;
	List	   *still = NIL;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);

	/* databases without a slot that asked for a probe, and those gone */
	nasked = ttl_shmem_take_probe_requests(asked);
	foreach(lc, NoExtension)
	{
		Oid			dboid = lfirst_oid(lc);
		bool		keep = nasked >= 0;
		bool		present = false;
		ListCell   *lc2;

		for (int i = 0; keep && i < nasked; i++)
			keep = asked[i] != dboid;
		foreach(lc2, databases)
			present |= ((TtlDbInfo *) lfirst(lc2))->oid == dboid;
		if (keep && present)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			still = lappend_oid(still, dboid);
			MemoryContextSwitchTo(old);
		}
	}
	list_free(NoExtension);
	NoExtension = still;
	for (int i = 0; i < nslots; i++)
	{
		TtlDbSlot  *slot = ttl_shmem_slot(i);
		bool		present = false;

		if (!OidIsValid(slot->dboid))
			continue;
		foreach(lc, databases)
		{
			if (((TtlDbInfo *) lfirst(lc))->oid == slot->dboid)
			{
				present = true;
				break;
			}
		}
		if (!present && !slot->worker_running)
		{
			gone[ngone++] = slot->dboid;
			memset(slot, 0, sizeof(TtlDbSlot));
			LoggedWaiting[i] = false;
		}
	}

	foreach(lc, databases)
	{
		TtlDbInfo  *info = (TtlDbInfo *) lfirst(lc);
		TtlDbSlot  *slot = ttl_shmem_slot_find(info->oid);

		if (slot != NULL)
		{
			slot->datname = info->name;
			continue;
		}
		if (list_member_oid(NoExtension, info->oid))
			continue;			/* probed: no extension there */
		slot = ttl_shmem_slot_find(InvalidOid);
		if (slot == NULL)
			slot = ttl_launcher_reclaim_slot();
		if (slot == NULL)
		{
			if (unserved == NULL)
				unserved = NameStr(info->name);
			continue;
		}
		memset(slot, 0, sizeof(TtlDbSlot));
		slot->dboid = info->oid;
		slot->datname = info->name;
		slot->probe = true;
	}
	LWLockRelease(ttl_shmem_slots_lock());

	if (unserved != NULL && !warned_full)
		ereport(WARNING,
				(errmsg("ttl_index: more databases than ttl_index.max_databases (%d); database \"%s\" is not served",
						ttl_max_databases, unserved),
				 errhint("Raise ttl_index.max_databases and restart the server.")));
	warned_full = unserved != NULL;

	/* the counters of dropped databases go with them */
	for (int i = 0; i < ngone; i++)
		ttl_stats_forget_others(gone[i], NIL);
	pfree(gone);
}

/*
 * ttl_launcher_backoff_ms
 *		Delay before restarting a worker that failed `failures` times in a row.
 */
static long
ttl_launcher_backoff_ms(int failures)
{
	long		delay;

	if (failures <= 0)
		return 0;
	delay = 1000L << Min(failures - 1, 10);
	return Min(delay, TTL_MAX_BACKOFF_MS);
}

/*
 * ttl_launcher_policy_death
 *		Whether the worker of a slot, started at slot->last_start, ended
 *		during a batch of a policy (ttl_slot_record_death).  The caller holds
 *		the slots lock.
 */
static bool
ttl_launcher_policy_death(TtlDbSlot *slot)
{
	for (int i = 0; i < TTL_MAX_DEATHS; i++)
	{
		if (slot->deaths[i].policy_id != 0 &&
			slot->deaths[i].at >= slot->last_start)
			return true;
	}
	return false;
}

/*
 * ttl_launcher_stopped
 *		Notice a worker that has stopped.  The caller holds the slots lock.
 */
static void
ttl_launcher_stopped(int i, TtlDbSlot *slot, TimestampTz now)
{
	pid_t		pid;
	bool		stopped;

	/*
	 * With a handle, ask the postmaster.  Without one (the launcher was
	 * restarted while the worker ran), the worker's pid in the slot, cleared
	 * when it exits, is all we have.
	 */
	if (Handles[i])
		stopped = (GetBackgroundWorkerPid(Handles[i], &pid) == BGWH_STOPPED);
	else
		stopped = (slot->pid == 0);
	if (!stopped)
		return;

	slot->worker_running = false;
	slot->pid = 0;
	slot->latch = NULL;
	/*
	 * A turn that ended on request is no failure, nor one that ended during
	 * a batch of a policy: the next worker rests that policy (worker.c), and
	 * waiting longer for each such policy would stall the others' more.
	 */
	if (slot->has_extension && !slot->turn_over && !slot->db_paused &&
		!ttl_launcher_policy_death(slot) &&
		!TimestampDifferenceExceeds(slot->last_start, now, TTL_HEALTHY_RUN_MS))
		slot->failures++;
	else
		slot->failures = 0;
	slot->turn_over = false;
}

/*
 * ttl_launcher_wants
 *		Whether a slot's database wants a worker started now.  The caller
 *		holds the slots lock.  *wait_ms: when to look again, if not now.
 */
static bool
ttl_launcher_wants(TtlDbSlot *slot, TimestampTz now, long *wait_ms)
{
	long		ms;

	*wait_ms = -1;
	if (slot->worker_running || (!slot->has_extension && !slot->probe))
		return false;
	/*
	 * Paused by ALTER DATABASE: its slot stays free until a wake-up, or a
	 * minute after its worker left, when one starts to read the setting
	 * again: a RESET that woke no one (a prepared transaction of another
	 * database, whose COMMIT PREPARED does not know it) is seen so.  The
	 * caller holds the lock exclusively.
	 */
	if (slot->db_paused)
	{
		ms = TTL_PAUSED_RECHECK_MS - TimestampDifferenceMilliseconds(slot->last_start, now);
		if (ms > 0)
		{
			*wait_ms = ms + 1;
			return false;
		}
		slot->db_paused = false;
	}
	if (slot->blocked_until > now)
	{
		*wait_ms = TimestampDifferenceMilliseconds(now, slot->blocked_until) + 1;
		return false;
	}
	ms = ttl_launcher_backoff_ms(slot->failures) -
		TimestampDifferenceMilliseconds(slot->last_start, now);
	if (slot->failures > 0 && ms > 0)
	{
		*wait_ms = ms + 1;
		return false;
	}
	return true;
}

/*
 * ttl_launcher_sort_waiting
 *		Order the candidate slots, those waiting longest first (insertion
 *		sort: few slots).  Under the slots lock.
 */
static void
ttl_launcher_sort_waiting(int *cand, int ncand)
{
	for (int a = 1; a < ncand; a++)
	{
		int			c = cand[a];
		TimestampTz since = ttl_shmem_slot(c)->waiting_since;
		int			b = a - 1;

		if (since == 0)
			continue;
		while (b >= 0 && (ttl_shmem_slot(cand[b])->waiting_since == 0 ||
						  ttl_shmem_slot(cand[b])->waiting_since > since))
		{
			cand[b + 1] = cand[b];
			b--;
		}
		cand[b + 1] = c;
	}
}

/*
 * ttl_launcher_end_turns
 *		With nwaiting databases waiting, ask as many running workers whose
 *		turn is over (idle for a while, or running for ttl_index.database_turn)
 *		to leave: marks their slots and returns their latches, to be set
 *		once the lock is released.  Under the slots lock.
 */
static int
ttl_launcher_end_turns(TimestampTz now, int nwaiting, Latch **latches)
{
	int			nlatches = 0;

	for (int i = 0; i < ttl_shmem_nslots() && nlatches < nwaiting; i++)
	{
		TtlDbSlot  *slot = ttl_shmem_slot(i);
		bool		idle;

		if (!OidIsValid(slot->dboid) || !slot->worker_running || slot->pid == 0 ||
			slot->turn_over)
			continue;
		idle = (strcmp(slot->progress.phase, "sleeping") == 0 ||
				strcmp(slot->progress.phase, "waiting for a purge window") == 0) &&
			TimestampDifferenceExceeds(slot->turn_started, now, TTL_IDLE_TURN_MS);
		if (idle || TimestampDifferenceExceeds(slot->turn_started, now,
											   ttl_database_turn * 1000L))
		{
			slot->turn_over = true;
			if (slot->latch)
				latches[nlatches++] = slot->latch;
		}
	}
	return nlatches;
}

/*
 * ttl_launcher_decide
 *		Under the slots lock: notice stopped workers, choose which waiting
 *		databases get a worker (those waiting longest first), and ask
 *		workers whose turn is over to leave.  Fills starts (returns how
 *		many) and the latches to set; *next_ms is when to look again.
 */
static int
ttl_launcher_decide(TimestampTz now, TtlStart *starts, Latch **latches,
					int *nlatches, int *nwaiting, long *next_ms)
{
	int			nslots = ttl_shmem_nslots();
	int			running = 0;
	int			nstarts = 0;
	int			room;
	int			ncand = 0;
	int		   *cand = palloc(sizeof(int) * nslots);

	*nlatches = 0;
	*nwaiting = 0;
	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	for (int i = 0; i < nslots; i++)
	{
		TtlDbSlot  *slot = ttl_shmem_slot(i);
		long		wait_ms;

		if (!OidIsValid(slot->dboid))
			continue;
		if (slot->worker_running)
			ttl_launcher_stopped(i, slot, now);
		/* helpers take worker slots too (parallel.c) */
		running += ttl_shmem_helpers_of(slot);
		if (slot->worker_running)
		{
			running++;
			continue;
		}
		if (ttl_launcher_wants(slot, now, &wait_ms))
			cand[ncand++] = i;
		else
		{
			slot->waiting_since = 0;
			if (wait_ms >= 0)
				*next_ms = Min(*next_ms, wait_ms);
		}
	}

	ttl_launcher_sort_waiting(cand, ncand);

	/* and the helpers of ttl_runner() calls (parallel.c) */
	running += ttl_shmem_runner_helpers();
	room = Max(ttl_shmem_max_workers() - running, 0);
	for (int k = 0; k < ncand; k++)
	{
		TtlDbSlot  *slot = ttl_shmem_slot(cand[k]);

		if (k < room)
		{
			starts[nstarts].slot = cand[k];
			starts[nstarts].dboid = slot->dboid;
			starts[nstarts].datname = slot->datname;
			nstarts++;
			slot->worker_running = true;
			slot->probe = false;
			slot->last_start = now;
			slot->turn_started = now;
			slot->turns++;
			slot->waiting_since = 0;
		}
		else
		{
			if (slot->waiting_since == 0)
				slot->waiting_since = now;
			(*nwaiting)++;
		}
	}

	/* others wait: the workers whose turn is over leave */
	if (*nwaiting > 0)
		*nlatches = ttl_launcher_end_turns(now, *nwaiting, latches);
	LWLockRelease(ttl_shmem_slots_lock());
	pfree(cand);

	if (*nwaiting > 0)
		*next_ms = Min(*next_ms, 500);
	return nstarts;
}

/*
 * ttl_launcher_start_one
 *		Register the worker of one database.  Returns false when no
 *		background worker slot was free (max_worker_processes).
 */
static bool
ttl_launcher_start_one(TtlStart *s)
{
	BackgroundWorker bgw;
	MemoryContext old;
	bool		ok;

	ttl_shmem_bgworker(&bgw, "ttl_worker_main", "ttl_index worker");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "ttl_index worker for database %s",
			 NameStr(s->datname));
	bgw.bgw_main_arg = ObjectIdGetDatum(s->dboid);
	bgw.bgw_notify_pid = MyProcPid;

	if (Handles[s->slot])
	{
		pfree(Handles[s->slot]);
		Handles[s->slot] = NULL;
	}
	/* the handle outlives this loop of the launcher */
	old = MemoryContextSwitchTo(TopMemoryContext);
	ok = RegisterDynamicBackgroundWorker(&bgw, &Handles[s->slot]);
	MemoryContextSwitchTo(old);
	return ok;
}

/*
 * ttl_launcher_log_waiting
 *		Name each database that waits for a worker, once per shortage.
 */
static void
ttl_launcher_log_waiting(int nwaiting)
{
	int			nslots = ttl_shmem_nslots();
	NameData   *names = palloc(sizeof(NameData) * nslots);
	int			n = 0;

	if (nwaiting == 0)
	{
		if (InShortage)
			ereport(LOG,
					(errmsg("ttl_index: no database waits for a worker any more")));
		InShortage = false;
		memset(LoggedWaiting, 0, sizeof(bool) * nslots);
		pfree(names);
		return;
	}

	LWLockAcquire(ttl_shmem_slots_lock(), LW_SHARED);
	for (int i = 0; i < nslots; i++)
	{
		TtlDbSlot  *slot = ttl_shmem_slot(i);

		if (OidIsValid(slot->dboid) && slot->waiting_since != 0 && !LoggedWaiting[i])
		{
			names[n++] = slot->datname;
			LoggedWaiting[i] = true;
		}
	}
	LWLockRelease(ttl_shmem_slots_lock());

	if (!InShortage)
		ereport(LOG,
				(errmsg("ttl_index: more databases need a worker than may run at once (%d): they take turns of up to %d s",
						ttl_shmem_max_workers(), ttl_database_turn),
				 errhint("ttl_index.max_workers is %d, max_worker_processes %d, ttl_index.free_worker_slots %d; see ttl_index_databases.",
						 ttl_max_workers, max_worker_processes, ttl_free_worker_slots)));
	InShortage = true;
	for (int i = 0; i < n; i++)
		ereport(LOG,
				(errmsg("ttl_index: database \"%s\" waits for a worker", NameStr(names[i]))));
	pfree(names);
}

/*
 * ttl_launcher_tend
 *		Notice stopped workers, start the ones that should run, end turns.
 *		Returns the number of milliseconds until the launcher should look
 *		again.
 */
static long
ttl_launcher_tend(void)
{
	static bool warned_no_bgworker = false;
	TimestampTz now = GetCurrentTimestamp();
	long		next_ms = ttl_launcher_naptime * 1000L;
	int			nslots = ttl_shmem_nslots();
	TtlStart   *starts = palloc(sizeof(TtlStart) * nslots);
	Latch	  **latches = palloc(sizeof(Latch *) * nslots);
	int			nlatches;
	int			nwaiting;
	int			nstarts;

	nstarts = ttl_launcher_decide(now, starts, latches, &nlatches, &nwaiting, &next_ms);

	for (int k = 0; k < nstarts; k++)
	{
		TtlDbSlot  *slot;

		if (ttl_launcher_start_one(&starts[k]))
			continue;
		/* no background worker slot after all: it waits */
		LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
		slot = ttl_shmem_slot(starts[k].slot);
		if (slot->dboid == starts[k].dboid)
		{
			slot->worker_running = false;
			slot->turns--;
			slot->waiting_since = now;
		}
		LWLockRelease(ttl_shmem_slots_lock());
		nwaiting++;
		next_ms = Min(next_ms, 1000);
		if (!warned_no_bgworker)
			ereport(WARNING,
					(errmsg("ttl_index: no free background worker slot for database \"%s\"",
							NameStr(starts[k].datname)),
					 errhint("Raise max_worker_processes, or lower ttl_index.max_workers.")));
		warned_no_bgworker = true;
	}
	for (int k = 0; k < nlatches; k++)
		SetLatch(latches[k]);
	ttl_launcher_log_waiting(nwaiting);
	pfree(starts);
	pfree(latches);
	return next_ms;
}

/*
 * ttl_launcher_main
 *		Entry point of the launcher.
 */
void
ttl_launcher_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/*
	 * Under pg_upgrade (binary-upgrade mode) no launcher is registered
	 * (_PG_init), so none starts a worker.  Should one start all the same,
	 * it leaves at once; exit code 0 unregisters it, so it is not restarted.
	 */
	if (IsBinaryUpgrade)
		proc_exit(0);

	if (!ttl_shmem_launcher_attach())
	{
		/* exit with a failure, so that the postmaster tries again later */
		elog(LOG, "ttl_index: another launcher is running");
		proc_exit(1);
	}
	before_shmem_exit(ttl_launcher_detach, (Datum) 0);

	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	ttl_shmem_publish_settings();

	Handles = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(BackgroundWorkerHandle *) * ttl_shmem_nslots());
	LoggedWaiting = MemoryContextAllocZero(TopMemoryContext,
										   sizeof(bool) * ttl_shmem_nslots());

	ereport(LOG, (errmsg("ttl_index launcher started")));
	/* the replication states its processes may take (origin.c) */
	ttl_origin_check_capacity();

	for (;;)
	{
		List	   *databases;
		long		next_ms;
		MemoryContext loop_cxt;
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			ttl_shmem_publish_settings();
			ttl_origin_check_capacity();
		}

		loop_cxt = AllocSetContextCreate(TopMemoryContext, "ttl_index launcher loop",
										 ALLOCSET_DEFAULT_SIZES);
		old = MemoryContextSwitchTo(loop_cxt);
		databases = ttl_launcher_list_databases();
		ttl_launcher_sync_slots(databases);
		next_ms = ttl_launcher_tend();
		MemoryContextSwitchTo(old);
		MemoryContextDelete(loop_cxt);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(next_ms, 10), ttl_wait_event("launcher"));
		ResetLatch(MyLatch);
	}
}

/*
 * ttl_launcher_detach
 *		Forget the launcher in shared memory when it exits.
 */
static void
ttl_launcher_detach(int code, Datum arg)
{
	ttl_shmem_launcher_detach();
}
