/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The cluster-wide launcher, the per-database slots it keeps in shared
 *	  memory, the wake-ups sent at commit, and the utility hook that moves a
 *	  worker out of the way of DROP DATABASE and friends.
 *
 * The launcher is a static background worker connected to no database (it
 * reads only the shared catalog pg_database).  It keeps one slot per
 * connectable, non-template database and starts one worker per slot:
 *
 *	- a database it has never seen is probed: a worker is started, and if
 *	  the extension is not installed there, that worker says so in the slot
 *	  and exits; the launcher then leaves the database alone;
 *	- CREATE EXTENSION, or any change to the policy catalog, asks at commit
 *	  for the database to be probed again and wakes the launcher, so a new
 *	  database is served within a second or so, with no restart;
 *	- a worker that exits while its database still has the extension is
 *	  restarted, after a delay that doubles with each quick failure (1 s up
 *	  to 60 s), so a broken database cannot cause a restart storm.
 *
 * Locking: TtlLauncherShared->lock protects every field of every slot and
 * the launcher's pid and latch.  It is held only for short, non-blocking
 * sections; never call anything that can wait or error while holding it.
 * Each field has one writer except where noted:
 *	launcher: dboid, datname, worker_running, last_start, failures
 *	worker:   pid, latch, has_extension (cleared), progress fields
 *	backends: probe, generation, blocked_until
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>
#include <unistd.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "ttl_index.h"

/* how long a worker must have lived for its exit not to count as a failure */
#define TTL_HEALTHY_RUN_MS		10000
#define TTL_MAX_BACKOFF_MS		60000
/* how long DROP DATABASE and friends keep the worker out, at most */
#define TTL_EVICT_BLOCK_MS		60000
/* how long they wait for the worker to leave */
#define TTL_EVICT_WAIT_MS		5000

typedef struct TtlDbSlot
{
	Oid			dboid;			/* InvalidOid: slot is free */
	NameData	datname;
	bool		has_extension;	/* false until a worker has seen it */
	bool		probe;			/* start a worker even if !has_extension */
	bool		worker_running; /* registered and not yet seen stopped */
	pid_t		pid;			/* worker's pid once attached, else 0 */
	Latch	   *latch;			/* worker's latch once attached */
	uint32		generation;		/* bumped when the policy catalog changes */
	TimestampTz blocked_until;	/* no worker may run before this */
	TimestampTz last_start;
	int			failures;

	/* what the worker is doing now (ttl_index_progress) */
	TtlProgress progress;
} TtlDbSlot;

typedef struct TtlLauncherShared
{
	LWLock	   *lock;
	pid_t		launcher_pid;
	Latch	   *launcher_latch;
	pg_atomic_uint64 worker_xids;	/* XIDs the workers took (yield.c) */
	int			nslots;
	TtlDbSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} TtlLauncherShared;

static TtlLauncherShared *TtlShared = NULL;

/* worker side: the slot this process attached to */
static TtlDbSlot *MySlot = NULL;

/* backend side: what to do at commit */
static bool wake_pending = false;

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

static TtlDbSlot *ttl_slot_find(Oid dboid);
static void ttl_launcher_detach(int code, Datum arg);
static void ttl_worker_detach(int code, Datum arg);

/*
 * ttl_launcher_shmem_size
 *		Shared memory for the launcher and its database slots.
 */
Size
ttl_launcher_shmem_size(void)
{
	return add_size(offsetof(TtlLauncherShared, slots),
					mul_size(ttl_max_databases, sizeof(TtlDbSlot)));
}

/*
 * ttl_launcher_shmem_init
 *		Create (or attach to) the slots; called from the shmem startup hook.
 */
void
ttl_launcher_shmem_init(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	TtlShared = ShmemInitStruct("ttl_index launcher",
								ttl_launcher_shmem_size(), &found);
	if (!found)
	{
		memset(TtlShared, 0, ttl_launcher_shmem_size());
		TtlShared->lock = &(GetNamedLWLockTranche("ttl_index"))[0].lock;
		TtlShared->nslots = ttl_max_databases;
		pg_atomic_init_u64(&TtlShared->worker_xids, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

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
 * ttl_slot_find
 *		The slot of a database, or NULL.  Caller holds the lock.
 */
static TtlDbSlot *
ttl_slot_find(Oid dboid)
{
	for (int i = 0; i < TtlShared->nslots; i++)
	{
		if (TtlShared->slots[i].dboid == dboid)
			return &TtlShared->slots[i];
	}
	return NULL;
}

/* ----------
 * Launcher
 * ----------
 */

typedef struct TtlDbInfo
{
	Oid			oid;
	NameData	name;
} TtlDbInfo;

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
			database_is_invalid_form(db))
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
 * ttl_launcher_sync_slots
 *		Make the slots match the list of databases: a new database gets a
 *		slot and a probe; a slot whose database is gone and whose worker has
 *		stopped is freed.
 */
static void
ttl_launcher_sync_slots(List *databases, BackgroundWorkerHandle **handles)
{
	static bool warned_full = false;
	ListCell   *lc;
	Oid		   *gone = palloc(sizeof(Oid) * TtlShared->nslots);
	int			ngone = 0;

	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);

	for (int i = 0; i < TtlShared->nslots; i++)
	{
		TtlDbSlot  *slot = &TtlShared->slots[i];
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
			if (handles[i])
			{
				pfree(handles[i]);
				handles[i] = NULL;
			}
		}
	}

	foreach(lc, databases)
	{
		TtlDbInfo  *info = (TtlDbInfo *) lfirst(lc);
		TtlDbSlot  *slot = ttl_slot_find(info->oid);

		if (slot != NULL)
		{
			slot->datname = info->name;
			continue;
		}
		slot = ttl_slot_find(InvalidOid);
		if (slot == NULL)
		{
			if (!warned_full)
				ereport(WARNING,
						(errmsg("ttl_index: more databases than ttl_index.max_databases (%d); database \"%s\" is not served",
								ttl_max_databases, NameStr(info->name)),
						 errhint("Raise ttl_index.max_databases and restart the server.")));
			warned_full = true;
			continue;
		}
		memset(slot, 0, sizeof(TtlDbSlot));
		slot->dboid = info->oid;
		slot->datname = info->name;
		slot->probe = true;
	}

	LWLockRelease(TtlShared->lock);

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
 * ttl_launcher_start_one
 *		Register the worker of one slot.  Returns false when no background
 *		worker slot was free (max_worker_processes).
 */
static bool
ttl_launcher_start_one(TtlDbSlot *slot, BackgroundWorkerHandle **handle)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "ttl_index");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "ttl_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "ttl_index worker for database %s",
			 NameStr(slot->datname));
	snprintf(bgw.bgw_type, BGW_MAXLEN, "ttl_index worker");
	bgw.bgw_main_arg = ObjectIdGetDatum(slot->dboid);
	bgw.bgw_notify_pid = MyProcPid;

	if (*handle)
	{
		pfree(*handle);
		*handle = NULL;
	}
	return RegisterDynamicBackgroundWorker(&bgw, handle);
}

/*
 * ttl_launcher_tend
 *		Notice stopped workers and start the ones that should run.  Returns
 *		the number of milliseconds until the launcher should look again.
 */
static long
ttl_launcher_tend(BackgroundWorkerHandle **handles)
{
	static bool warned_no_bgworker = false;
	TimestampTz now = GetCurrentTimestamp();
	long		next_ms = ttl_launcher_naptime * 1000L;

	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < TtlShared->nslots; i++)
	{
		TtlDbSlot  *slot = &TtlShared->slots[i];
		long		wait_ms;

		if (!OidIsValid(slot->dboid))
			continue;

		if (slot->worker_running)
		{
			pid_t		pid;
			bool		stopped;

			/*
			 * With a handle, ask the postmaster.  Without one (the launcher
			 * was restarted while the worker ran), the worker's pid in the
			 * slot, cleared when it exits, is all we have.
			 */
			if (handles[i])
				stopped = (GetBackgroundWorkerPid(handles[i], &pid) == BGWH_STOPPED);
			else
				stopped = (slot->pid == 0);
			if (!stopped)
				continue;

			slot->worker_running = false;
			slot->pid = 0;
			slot->latch = NULL;
			if (slot->has_extension &&
				!TimestampDifferenceExceeds(slot->last_start, now, TTL_HEALTHY_RUN_MS))
				slot->failures++;
			else
				slot->failures = 0;
		}

		if (!slot->has_extension && !slot->probe)
			continue;

		if (slot->blocked_until > now)
		{
			wait_ms = TimestampDifferenceMilliseconds(now, slot->blocked_until);
			next_ms = Min(next_ms, wait_ms + 1);
			continue;
		}

		wait_ms = ttl_launcher_backoff_ms(slot->failures) -
			TimestampDifferenceMilliseconds(slot->last_start, now);
		if (slot->failures > 0 && wait_ms > 0)
		{
			next_ms = Min(next_ms, wait_ms + 1);
			continue;
		}

		if (!ttl_launcher_start_one(slot, &handles[i]))
		{
			if (!warned_no_bgworker)
				ereport(WARNING,
						(errmsg("ttl_index: no free background worker slot for database \"%s\"",
								NameStr(slot->datname)),
						 errhint("Raise max_worker_processes: the launcher needs one, plus one per database with the extension.")));
			warned_no_bgworker = true;
			next_ms = Min(next_ms, 1000);
			continue;
		}
		slot->worker_running = true;
		slot->probe = false;
		slot->last_start = now;
	}
	LWLockRelease(TtlShared->lock);

	return next_ms;
}

/*
 * ttl_launcher_main
 *		Entry point of the launcher.
 */
void
ttl_launcher_main(Datum main_arg)
{
	BackgroundWorkerHandle **handles;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	if (TtlShared->launcher_pid != 0)
	{
		LWLockRelease(TtlShared->lock);
		elog(LOG, "ttl_index: launcher already running as PID %d",
			 (int) TtlShared->launcher_pid);
		proc_exit(0);
	}
	TtlShared->launcher_pid = MyProcPid;
	TtlShared->launcher_latch = MyLatch;
	LWLockRelease(TtlShared->lock);
	before_shmem_exit(ttl_launcher_detach, (Datum) 0);

	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	handles = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(BackgroundWorkerHandle *) * TtlShared->nslots);

	ereport(LOG, (errmsg("ttl_index launcher started")));

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
		}

		loop_cxt = AllocSetContextCreate(TopMemoryContext, "ttl_index launcher loop",
										 ALLOCSET_DEFAULT_SIZES);
		old = MemoryContextSwitchTo(loop_cxt);
		databases = ttl_launcher_list_databases();
		ttl_launcher_sync_slots(databases, handles);
		MemoryContextSwitchTo(old);
		MemoryContextDelete(loop_cxt);

		next_ms = ttl_launcher_tend(handles);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(next_ms, 10), PG_WAIT_EXTENSION);
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
	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	TtlShared->launcher_pid = 0;
	TtlShared->launcher_latch = NULL;
	LWLockRelease(TtlShared->lock);
}

/* ----------
 * Wake-ups from backends, delivered at commit
 * ----------
 */

/*
 * ttl_wake_at_commit
 *		Ask for this database's worker to re-read its policies, and for the
 *		launcher to start one if none runs, once the current transaction
 *		commits.
 */
void
ttl_wake_at_commit(void)
{
	wake_pending = true;
}

/*
 * ttl_at_xact_end
 *		Called from the transaction callback: deliver pending wake-ups.
 */
void
ttl_at_xact_end(bool commit)
{
	TtlDbSlot  *slot;
	Latch	   *worker_latch = NULL;
	Latch	   *launcher_latch;

	if (!wake_pending)
		return;
	wake_pending = false;
	if (!commit || TtlShared == NULL || !OidIsValid(MyDatabaseId))
		return;

	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	slot = ttl_slot_find(MyDatabaseId);
	if (slot != NULL)
	{
		slot->probe = true;
		slot->generation++;
		worker_latch = slot->latch;
	}
	launcher_latch = TtlShared->launcher_latch;
	LWLockRelease(TtlShared->lock);

	if (worker_latch)
		SetLatch(worker_latch);
	if (launcher_latch)
		SetLatch(launcher_latch);
}

/* ----------
 * Worker side of the slot
 * ----------
 */

/*
 * ttl_slot_attach
 *		Claim the slot of our database.  Returns false when the worker should
 *		exit at once: no slot (database dropped), another worker already
 *		attached, or the database is blocked by DROP DATABASE and friends.
 *		Called before connecting to the database, so that an evicted worker
 *		never holds a connection.
 */
bool
ttl_slot_attach(Oid dboid)
{
	TtlDbSlot  *slot;
	bool		ok = false;

	if (TtlShared == NULL)
		return false;

	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	slot = ttl_slot_find(dboid);
	if (slot != NULL && slot->pid == 0 &&
		slot->blocked_until <= GetCurrentTimestamp())
	{
		slot->pid = MyProcPid;
		slot->latch = MyLatch;
		memset(&slot->progress, 0, sizeof(TtlProgress));
		strlcpy(slot->progress.phase, "starting", TTL_PHASE_LEN);
		slot->progress.phase_since = GetCurrentTimestamp();
		MySlot = slot;
		ok = true;
	}
	LWLockRelease(TtlShared->lock);

	if (ok)
		before_shmem_exit(ttl_worker_detach, (Datum) 0);
	return ok;
}

/*
 * ttl_worker_detach
 *		Leave the slot at exit; clearing the pid is what DROP DATABASE waits
 *		for.
 */
static void
ttl_worker_detach(int code, Datum arg)
{
	Latch	   *launcher_latch;

	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	if (MySlot != NULL && MySlot->pid == MyProcPid)
	{
		MySlot->pid = 0;
		MySlot->latch = NULL;
		memset(&MySlot->progress, 0, sizeof(TtlProgress));
	}
	launcher_latch = TtlShared->launcher_latch;
	LWLockRelease(TtlShared->lock);
	MySlot = NULL;
	if (launcher_latch)
		SetLatch(launcher_latch);
}

/*
 * ttl_slot_report_extension
 *		Record whether the extension is installed in our database.  A worker
 *		that finds none reports it and exits; the launcher will not start
 *		another until CREATE EXTENSION asks for a probe.
 */
void
ttl_slot_report_extension(bool installed)
{
	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	MySlot->has_extension = installed;
	if (!installed)
		MySlot->probe = false;
	LWLockRelease(TtlShared->lock);
}

/*
 * ttl_slot_generation
 *		Current catalog generation of our database; a change means re-read
 *		the policies.
 */
uint32
ttl_slot_generation(void)
{
	uint32		gen;

	LWLockAcquire(TtlShared->lock, LW_SHARED);
	gen = MySlot->generation;
	LWLockRelease(TtlShared->lock);
	return gen;
}

/*
 * ttl_slot_blocked
 *		True when DROP DATABASE (or similar) wants this worker gone.
 */
bool
ttl_slot_blocked(void)
{
	bool		blocked;

	LWLockAcquire(TtlShared->lock, LW_SHARED);
	blocked = MySlot->blocked_until > GetCurrentTimestamp();
	LWLockRelease(TtlShared->lock);
	return blocked;
}

/*
 * ttl_slot_set_phase
 *		Publish that the worker is between batches: reading its policies or
 *		sleeping.
 */
void
ttl_slot_set_phase(const char *phase)
{
	TtlProgress *p;

	if (MySlot == NULL)
		return;
	p = &MySlot->progress;
	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	if (strcmp(p->phase, phase) != 0)
	{
		strlcpy(p->phase, phase, TTL_PHASE_LEN);
		p->phase_since = GetCurrentTimestamp();
	}
	p->policy_id = 0;
	p->relname[0] = '\0';
	p->pass_started = 0;
	p->pass_rows = 0;
	p->pass_batches = 0;
	p->batch_row_limit = 0;
	p->batch_started = 0;
	LWLockRelease(TtlShared->lock);
}

/*
 * ttl_slot_batch_begin
 *		Publish the batch about to run: which policy and table, how far its
 *		pass has come, and the batch's row limit.
 */
void
ttl_slot_batch_begin(TtlPolicy *policy, TtlPurgeState *state,
					 const char *relname)
{
	TtlProgress *p;
	TimestampTz now = GetCurrentTimestamp();

	if (MySlot == NULL)
		return;
	p = &MySlot->progress;
	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	if (strcmp(p->phase, "deleting") != 0 || p->policy_id != policy->id)
	{
		strlcpy(p->phase, "deleting", TTL_PHASE_LEN);
		p->phase_since = now;
	}
	p->policy_id = policy->id;
	strlcpy(p->relname, relname, TTL_QUALNAME_LEN);
	p->pass_started = state->now;
	p->pass_rows = state->pass_rows;
	p->pass_batches = state->pass_batches;
	p->batch_row_limit = state->row_limit;
	p->batch_started = now;
	LWLockRelease(TtlShared->lock);
}

/*
 * ttl_slot_batch_end
 *		Publish that the batch has ended (committed or not).
 */
void
ttl_slot_batch_end(TtlPurgeState *state)
{
	TtlProgress *p;

	if (MySlot == NULL)
		return;
	p = &MySlot->progress;
	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	p->pass_rows = state->pass_rows;
	p->pass_batches = state->pass_batches;
	p->batch_started = 0;
	LWLockRelease(TtlShared->lock);
}

/*
 * ttl_slot_progress_list
 *		A copy of the progress of every running worker, as a List of
 *		palloc'd TtlProgress.  Empty when the library is not preloaded.
 */
List *
ttl_slot_progress_list(void)
{
	List	   *result = NIL;
	TtlProgress *copies;
	int			n = 0;
	int			i;

	if (TtlShared == NULL)
		return NIL;

	/* allocate before taking the lock: nothing under it may fail */
	copies = palloc(sizeof(TtlProgress) * TtlShared->nslots);

	LWLockAcquire(TtlShared->lock, LW_SHARED);
	for (i = 0; i < TtlShared->nslots; i++)
	{
		TtlDbSlot  *slot = &TtlShared->slots[i];
		TtlProgress *p = &copies[n];

		if (!OidIsValid(slot->dboid) || slot->pid == 0)
			continue;
		memcpy(p, &slot->progress, sizeof(TtlProgress));
		p->dboid = slot->dboid;
		p->datname = slot->datname;
		p->pid = slot->pid;
		n++;
	}
	LWLockRelease(TtlShared->lock);

	for (i = 0; i < n; i++)
		result = lappend(result, &copies[i]);
	return result;
}

/*
 * ttl_slot_running_count
 *		How many workers are attached to their slot now.
 */
int
ttl_slot_running_count(void)
{
	int			n = 0;

	if (TtlShared == NULL)
		return 0;
	LWLockAcquire(TtlShared->lock, LW_SHARED);
	for (int i = 0; i < TtlShared->nslots; i++)
	{
		if (OidIsValid(TtlShared->slots[i].dboid) && TtlShared->slots[i].pid != 0)
			n++;
	}
	LWLockRelease(TtlShared->lock);
	return n;
}

/*
 * ttl_shared_count_worker_xid
 *		A worker took an XID (see yield.c).
 */
void
ttl_shared_count_worker_xid(void)
{
	if (TtlShared != NULL)
		pg_atomic_fetch_add_u64(&TtlShared->worker_xids, 1);
}

/*
 * ttl_shared_worker_xids
 *		XIDs the workers have taken since the server started.
 */
uint64
ttl_shared_worker_xids(void)
{
	if (TtlShared == NULL)
		return 0;
	return pg_atomic_read_u64(&TtlShared->worker_xids);
}

/* ----------
 * Getting out of the way of DROP DATABASE and friends
 * ----------
 */

/*
 * ttl_database_evict
 *		Keep the worker of a database out until ttl_database_release(), and
 *		wait (briefly) for a running one to exit.
 *
 * DROP DATABASE, ALTER DATABASE ... RENAME / SET TABLESPACE and CREATE
 * DATABASE ... TEMPLATE fail while another session is connected to the
 * database; our worker must not be that session.
 */
static void
ttl_database_evict(Oid dboid)
{
	TtlDbSlot  *slot;
	pid_t		pid;
	TimestampTz start = GetCurrentTimestamp();

	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	slot = ttl_slot_find(dboid);
	if (slot == NULL)
	{
		LWLockRelease(TtlShared->lock);
		return;
	}
	slot->blocked_until = TimestampTzPlusMilliseconds(start, TTL_EVICT_BLOCK_MS);
	pid = slot->pid;
	LWLockRelease(TtlShared->lock);

	if (pid != 0)
		kill(pid, SIGTERM);

	for (;;)
	{
		LWLockAcquire(TtlShared->lock, LW_SHARED);
		pid = (slot->dboid == dboid) ? slot->pid : 0;
		LWLockRelease(TtlShared->lock);
		if (pid == 0 ||
			TimestampDifferenceExceeds(start, GetCurrentTimestamp(), TTL_EVICT_WAIT_MS))
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * ttl_database_release
 *		Let the worker of a database run again, and wake the launcher.
 */
static void
ttl_database_release(Oid dboid)
{
	TtlDbSlot  *slot;
	Latch	   *launcher_latch;

	LWLockAcquire(TtlShared->lock, LW_EXCLUSIVE);
	slot = ttl_slot_find(dboid);
	if (slot != NULL)
		slot->blocked_until = 0;
	launcher_latch = TtlShared->launcher_latch;
	LWLockRelease(TtlShared->lock);
	if (launcher_latch)
		SetLatch(launcher_latch);
}

/*
 * ttl_utility_target_database
 *		The database a utility statement needs free of other sessions, or
 *		InvalidOid.
 */
static Oid
ttl_utility_target_database(Node *parsetree)
{
	const char *dbname = NULL;
	ListCell   *lc;

	switch (nodeTag(parsetree))
	{
		case T_DropdbStmt:
			dbname = ((DropdbStmt *) parsetree)->dbname;
			break;
		case T_CreatedbStmt:
			dbname = "template1";
			foreach(lc, ((CreatedbStmt *) parsetree)->options)
			{
				DefElem    *opt = (DefElem *) lfirst(lc);

				if (strcmp(opt->defname, "template") == 0 && opt->arg != NULL)
					dbname = defGetString(opt);
			}
			break;
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_DATABASE)
				dbname = ((RenameStmt *) parsetree)->subname;
			break;
		case T_AlterDatabaseStmt:
			foreach(lc, ((AlterDatabaseStmt *) parsetree)->options)
			{
				DefElem    *opt = (DefElem *) lfirst(lc);

				if (strcmp(opt->defname, "tablespace") == 0)
					dbname = ((AlterDatabaseStmt *) parsetree)->dbname;
			}
			break;
		default:
			break;
	}

	if (dbname == NULL)
		return InvalidOid;
	return get_database_oid(dbname, true);
}

/*
 * ttl_next_utility
 *		Run a utility statement through the next hook, or the standard code.
 */
static void
ttl_next_utility(PlannedStmt *pstmt, const char *queryString,
				 bool readOnlyTree, ProcessUtilityContext context,
				 ParamListInfo params, QueryEnvironment *queryEnv,
				 DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

/*
 * ttl_process_utility
 *		Utility hook: evict our worker from a database that a statement
 *		needs to itself, run the statement, let the worker back.
 */
static void
ttl_process_utility(PlannedStmt *pstmt, const char *queryString,
					bool readOnlyTree, ProcessUtilityContext context,
					ParamListInfo params, QueryEnvironment *queryEnv,
					DestReceiver *dest, QueryCompletion *qc)
{
	Oid			dboid = InvalidOid;
	Node	   *parsetree = pstmt->utilityStmt;

	if (TtlShared != NULL)
		dboid = ttl_utility_target_database(parsetree);

	/* DROP EXTENSION ttl_index: the worker re-reads at commit, and leaves */
	if (IsA(parsetree, DropStmt) &&
		((DropStmt *) parsetree)->removeType == OBJECT_EXTENSION)
	{
		ListCell   *lc;

		foreach(lc, ((DropStmt *) parsetree)->objects)
		{
			if (strcmp(strVal(lfirst(lc)), TTL_EXTENSION_NAME) == 0)
				ttl_wake_at_commit();
		}
	}

	if (OidIsValid(dboid) && dboid != MyDatabaseId)
	{
		ttl_database_evict(dboid);
		PG_TRY();
		{
			ttl_next_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
		}
		PG_CATCH();
		{
			ttl_database_release(dboid);
			PG_RE_THROW();
		}
		PG_END_TRY();

		/*
		 * A dropped database stays blocked: DROP DATABASE commits after we
		 * return, and a worker started before that would only fail to
		 * connect.  The launcher frees the slot once the database is gone.
		 */
		if (!IsA(pstmt->utilityStmt, DropdbStmt))
			ttl_database_release(dboid);
		return;
	}

	ttl_next_utility(pstmt, queryString, readOnlyTree, context,
					 params, queryEnv, dest, qc);
}

/*
 * ttl_utility_hook_install
 *		Install the utility hook (preload time only).
 */
void
ttl_utility_hook_install(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = ttl_process_utility;
}
