/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  All of ttl_index's shared memory: its size, its creation, its locks,
 *	  and the accessors every other file goes through.
 *
 * Areas, each with its own lock (a named LWLock tranche of one lock each):
 *
 *	slots		"ttl_index slots": one slot per database the launcher keeps
 *				track of (shmem.h), what its worker is doing (progress), the
 *				launcher's pid and latch, and the process slots whose
 *				replication origins the workers and helpers use (origin.c).  Held only for short sections
 *				that neither wait nor raise an error: nothing that allocates,
 *				logs, signals or registers a worker runs under it.
 *	settings	"ttl_index settings": the server-wide values of the settings
 *				user code may depend on (owner.c), as the launcher, which
 *				connects to no database, reads them from the configuration.
 *				Written by the launcher at start and after each reload,
 *				which bumps a number read without the lock (what was
 *				derived from the values holds while it has not moved).
 *	stats		"ttl_index stats": the hash table of per-policy counters
 *				(stats.c owns its contents and rules).
 *	counters	no lock: the XIDs the workers took (yield.c) and the write
 *				counters (writes.c) are atomics.
 *	wait events	on 17+, the names of the workers' and the launcher's wait
 *				events (ttl_wait_event), registered by the server in its
 *				own shared memory under its own lock.
 *
 * Accessors that hand out a slot Assert that the slots lock is held; the
 * others take and release the lock themselves.  Only the postmaster creates
 * the memory (shmem startup hook, under AddinShmemInitLock); without
 * shared_preload_libraries there is none, and every accessor says so.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/twophase.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "ttl_index.h"
#include "shared/shared.h"
#include "shared/shmem.h"

#define TTL_SETTING_LEN		1024
#define TTL_MAX_SETTINGS	16
/* write counters: a power of two */
#define TTL_WRITE_BUCKETS	8192

#define TTL_LOCK_SLOTS		"ttl_index slots"
#define TTL_LOCK_SETTINGS	"ttl_index settings"
#define TTL_LOCK_STATS		"ttl_index stats"

typedef struct TtlShared
{
	/* slots area */
	pid_t		launcher_pid;
	Latch	   *launcher_latch;
	int			nslots;

	/* settings area */
	bool		settings_valid;
	char		settings[TTL_MAX_SETTINGS][TTL_SETTING_LEN];
	/* ttl_index.enabled as the configuration says it (settings.c) */
	bool		server_enabled;
	/* bumped at each publication, read without the lock; 0: none yet */
	pg_atomic_uint32 settings_generation;

	/*
	 * Probes asked for databases that hold no slot (the launcher gave the
	 * slot of a database without the extension to another): their OIDs,
	 * under the slots lock; probe_overflow when more were asked than fit.
	 */
	Oid			probe_requests[TTL_PROBE_REQUESTS];
	bool		probe_overflow;

	/* counters */
	pg_atomic_uint64 worker_xids;
	pg_atomic_uint32 writes[TTL_WRITE_BUCKETS];

	TtlDbSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} TtlShared;

static TtlShared *Shared = NULL;
/* prepared transactions' tables (writes.c), max_prepared_xacts of them */
static TtlPrepared *Prepared = NULL;
/* process slots for replication origins (origin.c): a pid each, 0 = free */
static pid_t *OriginPids = NULL;
static bool OriginReleaseRegistered = false;
static LWLock *SlotsLock = NULL;
static LWLock *SettingsLock = NULL;
static LWLock *StatsLock = NULL;
static HTAB *StatsHash = NULL;

/* worker side: the slot this process attached to */
static TtlDbSlot *MySlot = NULL;

static void ttl_slot_detach(int code, Datum arg);

/*
 * The slots: one per database (ttl_index.max_databases), then
 * TTL_RUNNER_SLOTS for ttl_runner() calls that lead a shared drain
 * (parallel.c), which the launcher never looks at but counts the helpers
 * of.
 */
static Size
ttl_shared_size(void)
{
	return add_size(offsetof(TtlShared, slots),
					mul_size(ttl_max_databases + TTL_RUNNER_SLOTS, sizeof(TtlDbSlot)));
}

/*
 * ttl_shmem_size
 *		Shared memory for everything: the slots and counters, and the stats
 *		hash.
 */
Size
ttl_shmem_size(void)
{
	return add_size(add_size(add_size(ttl_shared_size(),
									  hash_estimate_size(ttl_max_policies, sizeof(TtlStatsEntry))),
							 mul_size(max_worker_processes, sizeof(pid_t))),
					mul_size(max_prepared_xacts, sizeof(TtlPrepared)));
}

/*
 * ttl_shmem_request
 *		From the shmem request hook: the memory and one lock per area.
 */
void
ttl_shmem_request(void)
{
	RequestAddinShmemSpace(ttl_shmem_size());
	RequestNamedLWLockTranche(TTL_LOCK_SLOTS, 1);
	RequestNamedLWLockTranche(TTL_LOCK_SETTINGS, 1);
	RequestNamedLWLockTranche(TTL_LOCK_STATS, 1);
}

/*
 * ttl_shmem_init
 *		From the shmem startup hook: create (or attach to) every area.
 */
void
ttl_shmem_init(void)
{
	bool		found;
	HASHCTL		info;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);

	if (max_prepared_xacts > 0)
	{
		Prepared = ShmemInitStruct("ttl_index prepared",
								   mul_size(max_prepared_xacts, sizeof(TtlPrepared)), &found);
		if (!found)
			memset(Prepared, 0, mul_size(max_prepared_xacts, sizeof(TtlPrepared)));
	}
	OriginPids = ShmemInitStruct("ttl_index origins",
								 mul_size(max_worker_processes, sizeof(pid_t)), &found);
	if (!found)
		memset(OriginPids, 0, mul_size(max_worker_processes, sizeof(pid_t)));
	Shared = ShmemInitStruct("ttl_index", ttl_shared_size(), &found);
	if (!found)
	{
		memset(Shared, 0, ttl_shared_size());
		Shared->nslots = ttl_max_databases;
		pg_atomic_init_u64(&Shared->worker_xids, 0);
		pg_atomic_init_u32(&Shared->settings_generation, 0);
		for (int i = 0; i < TTL_WRITE_BUCKETS; i++)
			pg_atomic_init_u32(&Shared->writes[i], 0);
	}
	SlotsLock = &(GetNamedLWLockTranche(TTL_LOCK_SLOTS))[0].lock;
	SettingsLock = &(GetNamedLWLockTranche(TTL_LOCK_SETTINGS))[0].lock;
	StatsLock = &(GetNamedLWLockTranche(TTL_LOCK_STATS))[0].lock;

	/*
	 * The stats hash never grows past its initial size: HASH_FIXED_SIZE
	 * keeps it from eating the spare shared memory the lock table relies
	 * on, and stats.c refuses entries beyond ttl_index.max_policies.
	 */
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(TtlStatsKey);
	info.entrysize = sizeof(TtlStatsEntry);
	StatsHash = ttl_ShmemInitHash("ttl_index policy stats", ttl_max_policies,
								  &info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);

	LWLockRelease(AddinShmemInitLock);
}

/*
 * ttl_wait_event
 *		The wait event to show in pg_stat_activity while waiting in a phase:
 *		a named one where the server offers them (17+: the names live in
 *		shared memory, registered on first use and cached per process),
 *		else "Extension".
 */
uint32
ttl_wait_event(const char *name)
{
#ifdef TTL_HAVE_NAMED_WAIT_EVENTS
	static char names[8][32];
	static uint32 events[8];
	static int	n = 0;
	char		full[64];

	for (int i = 0; i < n; i++)
	{
		if (strcmp(names[i], name) == 0)
			return events[i];
	}
	snprintf(full, sizeof(full), "TtlIndex%c%s", pg_toupper((unsigned char) name[0]), name + 1);
	/* "rate limited" -> "TtlIndexRateLimited" */
	for (char *c = full; *c; c++)
	{
		if (*c == ' ')
		{
			memmove(c, c + 1, strlen(c));
			*c = pg_toupper((unsigned char) *c);
		}
	}
	if (n < lengthof(names))
	{
		strlcpy(names[n], name, sizeof(names[n]));
		events[n] = WaitEventExtensionNew(full);
		return events[n++];
	}
	return WaitEventExtensionNew(full);
#else
	return PG_WAIT_EXTENSION;
#endif
}

/*
 * ttl_shmem_ready
 *		Whether there is shared memory (the library was preloaded).
 */
bool
ttl_shmem_ready(void)
{
	return Shared != NULL;
}

/* ----------
 * Slots: the launcher's and shmem.c's own access
 * ----------
 */

LWLock *
ttl_shmem_slots_lock(void)
{
	return SlotsLock;
}

/*
 * ttl_shmem_slots_lock_held
 *		For Asserts: whether this process holds the slots lock.
 */
bool
ttl_shmem_slots_lock_held(void)
{
	return SlotsLock != NULL && LWLockHeldByMe(SlotsLock);
}

int
ttl_shmem_nslots(void)
{
	return Shared->nslots;
}

/*
 * ttl_shmem_slot
 *		Slot i.  The caller holds the slots lock.
 */
TtlDbSlot *
ttl_shmem_slot(int i)
{
	Assert(LWLockHeldByMe(SlotsLock));
	Assert(i >= 0 && i < Shared->nslots);
	return &Shared->slots[i];
}

/*
 * ttl_shmem_slot_any
 *		Slot i among the databases' and then the runners' slots (a helper's
 *		slot number).  The caller holds the slots lock.
 */
TtlDbSlot *
ttl_shmem_slot_any(int i)
{
	Assert(LWLockHeldByMe(SlotsLock));
	Assert(i >= 0 && i < Shared->nslots + TTL_RUNNER_SLOTS);
	return &Shared->slots[i];
}

/*
 * ttl_shmem_runner_helpers
 *		The helpers that ttl_runner() calls run or have asked for: they take
 *		worker slots too.  The caller holds the slots lock.
 */
int
ttl_shmem_runner_helpers(void)
{
	int			n = 0;

	Assert(LWLockHeldByMe(SlotsLock));
	for (int i = 0; i < TTL_RUNNER_SLOTS; i++)
		n += ttl_shmem_helpers_of(&Shared->slots[Shared->nslots + i]);
	return n;
}

/*
 * ttl_shmem_slot_find
 *		The slot of a database, or NULL.  The caller holds the slots lock.
 */
TtlDbSlot *
ttl_shmem_slot_find(Oid dboid)
{
	Assert(LWLockHeldByMe(SlotsLock));
	for (int i = 0; i < Shared->nslots; i++)
	{
		if (Shared->slots[i].dboid == dboid)
			return &Shared->slots[i];
	}
	return NULL;
}

/*
 * ttl_shmem_launcher_attach
 *		Record the launcher's pid and latch.  Returns false when another
 *		launcher is recorded as running.
 */
bool
ttl_shmem_launcher_attach(void)
{
	bool		ok;

	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	ok = Shared->launcher_pid == 0;
	if (ok)
	{
		Shared->launcher_pid = MyProcPid;
		Shared->launcher_latch = MyLatch;
	}
	LWLockRelease(SlotsLock);
	return ok;
}

/*
 * ttl_shmem_launcher_detach
 *		Forget the launcher (at its exit).
 */
void
ttl_shmem_launcher_detach(void)
{
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	if (Shared->launcher_pid == MyProcPid)
	{
		Shared->launcher_pid = 0;
		Shared->launcher_latch = NULL;
	}
	LWLockRelease(SlotsLock);
}

/*
 * ttl_shmem_max_workers
 *		How many ttl_index processes (workers and their helpers) may run at
 *		once: ttl_index.max_workers, and never more than
 *		max_worker_processes leaves after the launcher and
 *		ttl_index.free_worker_slots.
 */
int
ttl_shmem_max_workers(void)
{
	int			room = max_worker_processes - 1 - ttl_free_worker_slots;

	return Max(1, Min(ttl_max_workers, room));
}

/*
 * ttl_shmem_bgworker
 *		Fill in bgw for a ttl_index process connected to a database (a
 *		worker or a helper): function, the library's, and type, as
 *		pg_stat_activity shows it; started once recovery is over, never
 *		restarted by the postmaster (the launcher and the lead decide).
 *		The caller sets the name, the argument and anything else.
 */
void
ttl_shmem_bgworker(BackgroundWorker *bgw, const char *function, const char *type)
{
	memset(bgw, 0, sizeof(BackgroundWorker));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw->bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw->bgw_library_name, BGW_MAXLEN, "ttl_index");
	snprintf(bgw->bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(bgw->bgw_type, BGW_MAXLEN, "%s", type);
}

/*
 * ttl_shmem_processes
 *		How many ttl_index workers and helpers run now, over all databases
 *		(helpers asked for and not yet attached included).
 */
int
ttl_shmem_processes(void)
{
	int			n = 0;

	if (Shared == NULL)
		return 0;
	LWLockAcquire(SlotsLock, LW_SHARED);
	for (int i = 0; i < ttl_shmem_nslots(); i++)
	{
		TtlDbSlot  *slot = ttl_shmem_slot(i);

		if (OidIsValid(slot->dboid))
			n += ttl_shmem_processes_of(slot);
	}
	n += ttl_shmem_runner_helpers();
	LWLockRelease(SlotsLock);
	return n;
}

/*
 * ttl_shmem_processes_of
 *		A slot's worker, if it runs, and the helpers it runs or has asked
 *		for: what it takes of ttl_shmem_max_workers.  Caller holds the slots
 *		lock.
 */
int
ttl_shmem_processes_of(TtlDbSlot *slot)
{
	return (slot->worker_running ? 1 : 0) + ttl_shmem_helpers_of(slot);
}

/*
 * ttl_shmem_helpers_of
 *		The helpers a slot's worker runs or has asked for.  Caller holds the
 *		slots lock.
 */
int
ttl_shmem_helpers_of(TtlDbSlot *slot)
{
	int			n = slot->job.reserved;

	Assert(LWLockHeldByMe(SlotsLock));
	for (int i = 0; i < TTL_MAX_HELPERS; i++)
		if (slot->job.helpers[i] != 0)
			n++;
	return n;
}

/* ----------
 * Settings
 * ----------
 */

/*
 * ttl_shmem_publish_settings
 *		The launcher's values of the server-wide settings (see owner.c): it
 *		connects to no database, so no database or role setting is among
 *		them.  Called at its start and after each reload; wakes the
 *		workers when what they obey changed.
 */
void
ttl_shmem_publish_settings(void)
{
	char		values[TTL_MAX_SETTINGS][TTL_SETTING_LEN];
	bool		changed;

	memset(values, 0, sizeof(values));
	Assert(ttl_server_setting_count <= TTL_MAX_SETTINGS);
	for (int i = 0; i < ttl_server_setting_count; i++)
	{
		const char *v = GetConfigOption(ttl_server_setting_names[i], true, false);

		strlcpy(values[i], v ? v : "", TTL_SETTING_LEN);
	}
	LWLockAcquire(SettingsLock, LW_EXCLUSIVE);
	changed = !Shared->settings_valid ||
		Shared->server_enabled != ttl_enabled ||
		memcmp(Shared->settings, values, sizeof(values)) != 0;
	memcpy(Shared->settings, values, sizeof(values));
	Shared->server_enabled = ttl_enabled;
	Shared->settings_valid = true;
	/* after the values: whoever reads the new number reads them */
	if (pg_atomic_add_fetch_u32(&Shared->settings_generation, 1) == 0)
		pg_atomic_add_fetch_u32(&Shared->settings_generation, 1);
	LWLockRelease(SettingsLock);

	/*
	 * A worker reloads its own configuration at the same SIGHUP, and may
	 * read the published values before this: switched on, it would sleep
	 * as disabled until its next wake-up (up to ttl_index.max_sleep).  Wake
	 * every worker once what they obey has changed; the latches are set
	 * after the slots lock is released, as the launcher sets them.
	 */
	if (changed)
	{
		Latch	  **latches = palloc(sizeof(Latch *) * Shared->nslots);
		int			nlatches = 0;

		LWLockAcquire(SlotsLock, LW_SHARED);
		for (int i = 0; i < Shared->nslots; i++)
		{
			if (Shared->slots[i].latch != NULL)
				latches[nlatches++] = Shared->slots[i].latch;
		}
		LWLockRelease(SlotsLock);
		for (int i = 0; i < nlatches; i++)
			SetLatch(latches[i]);
		pfree(latches);
	}
}

/*
 * ttl_shmem_server_enabled
 *		ttl_index.enabled as the configuration says it (postgresql.conf,
 *		ALTER SYSTEM, the command line), published by the launcher: what
 *		the workers and helpers obey, whatever a database's or a role's
 *		login settings made their own value (settings.c).  This process's
 *		own value while there is none (no shared memory, not yet published).
 */
bool
ttl_shmem_server_enabled(void)
{
	bool		enabled = ttl_enabled;

	if (Shared == NULL)
		return enabled;
	LWLockAcquire(SettingsLock, LW_SHARED);
	if (Shared->settings_valid)
		enabled = Shared->server_enabled;
	LWLockRelease(SettingsLock);
	return enabled;
}

/*
 * ttl_shmem_settings_generation
 *		How many times the settings were published (wrapping around, never
 *		0 again), read without the lock: what a process derived from the
 *		published values holds while this number has not moved (the time
 *		zone of expiry.c's ttl_policy_zone).  0 while there are none (no
 *		shared memory, not yet published): ttl_server_setting then reads
 *		this session's own values, which a reload may change at any time.
 */
uint32
ttl_shmem_settings_generation(void)
{
	if (Shared == NULL)
		return 0;
	return pg_atomic_read_u32(&Shared->settings_generation);
}

/*
 * ttl_shmem_published_setting
 *		The published value of a setting, copied into buf.  False when there
 *		is none (no shared memory, not yet published, not a setting in the
 *		list).
 */
bool
ttl_shmem_published_setting(const char *name, char *buf, Size len)
{
	bool		found = false;

	if (Shared == NULL)
		return false;
	for (int i = 0; i < ttl_server_setting_count; i++)
	{
		if (strcmp(ttl_server_setting_names[i], name) != 0)
			continue;
		LWLockAcquire(SettingsLock, LW_SHARED);
		if (Shared->settings_valid)
		{
			strlcpy(buf, Shared->settings[i], len);
			found = true;
		}
		LWLockRelease(SettingsLock);
		break;
	}
	return found;
}

/* ----------
 * Worker side of its slot
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
	TimestampTz now = GetCurrentTimestamp();

	if (Shared == NULL)
		return false;

	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	slot = ttl_shmem_slot_find(dboid);
	if (slot != NULL && slot->pid == 0 && slot->blocked_until <= now)
	{
		slot->pid = MyProcPid;
		slot->latch = MyLatch;
		slot->turn_over = false;
		/* helpers of a worker before this one stop (parallel.c) */
		slot->job.active = false;
		slot->job.reserved = 0;
		memset(&slot->progress, 0, sizeof(TtlProgress));
		strlcpy(slot->progress.phase, "starting", TTL_PHASE_LEN);
		slot->progress.phase_since = now;
		MySlot = slot;
		ok = true;
	}
	LWLockRelease(SlotsLock);

	if (ok)
		before_shmem_exit(ttl_slot_detach, (Datum) 0);
	return ok;
}

/*
 * ttl_slot_detach
 *		Leave the slot at exit; clearing the pid is what DROP DATABASE waits
 *		for.
 */
static void
ttl_slot_detach(int code, Datum arg)
{
	Latch	   *launcher_latch;

	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	if (MySlot != NULL && MySlot->pid == MyProcPid)
	{
		MySlot->pid = 0;
		MySlot->latch = NULL;
		memset(&MySlot->progress, 0, sizeof(TtlProgress));
	}
	launcher_latch = Shared->launcher_latch;
	LWLockRelease(SlotsLock);
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
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	MySlot->has_extension = installed;
	if (!installed)
		MySlot->probe = false;
	LWLockRelease(SlotsLock);
}

/*
 * ttl_slot_report_paused
 *		Our database is paused (ALTER DATABASE ... SET ttl_index.enabled =
 *		off, read under a snapshot taken after the generation was read):
 *		record it, so that the launcher starts no worker for it until a
 *		wake-up (ttl_shmem_wake_database) clears it.  Unless the generation
 *		moved since: a RESET may have committed and woken us after our
 *		snapshot; the caller then goes on and reads again.  Returns whether
 *		it was recorded (the worker then leaves).
 */
bool
ttl_slot_report_paused(uint32 generation)
{
	bool		recorded = false;

	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	if (MySlot->generation == generation)
	{
		MySlot->db_paused = true;
		MySlot->probe = false;
		recorded = true;
	}
	LWLockRelease(SlotsLock);
	return recorded;
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

	LWLockAcquire(SlotsLock, LW_SHARED);
	gen = MySlot->generation;
	LWLockRelease(SlotsLock);
	return gen;
}

/*
 * ttl_slot_must_leave
 *		True when DROP DATABASE (or similar) wants this worker gone.
 */
bool
ttl_slot_must_leave(void)
{
	bool		blocked;
	TimestampTz now = GetCurrentTimestamp();

	LWLockAcquire(SlotsLock, LW_SHARED);
	blocked = MySlot->blocked_until > now;
	LWLockRelease(SlotsLock);
	return blocked;
}

/*
 * ttl_slot_turn_over
 *		True when the launcher asks this worker to end its turn: other
 *		databases are waiting for a worker slot.
 */
bool
ttl_slot_turn_over(void)
{
	bool		over;

	LWLockAcquire(SlotsLock, LW_SHARED);
	over = MySlot->turn_over;
	LWLockRelease(SlotsLock);
	return over;
}

/*
 * ttl_slot_set_phase
 *		Publish that the worker is between batches (reading its policies,
 *		sleeping, yielding, ...).
 */
void
ttl_slot_set_phase(const char *phase)
{
	TtlProgress *p;
	TimestampTz now = GetCurrentTimestamp();

	if (MySlot == NULL)
		return;
	p = &MySlot->progress;
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	if (strcmp(p->phase, phase) != 0)
	{
		strlcpy(p->phase, phase, TTL_PHASE_LEN);
		p->phase_since = now;
	}
	p->policy_id = 0;
	p->relname[0] = '\0';
	p->pass_started = 0;
	p->pass_rows = 0;
	p->pass_batches = 0;
	p->batch_row_limit = 0;
	p->batch_started = 0;
	LWLockRelease(SlotsLock);
}

/*
 * ttl_slot_count_replica_hold
 *		The worker held its batches for replicas for ms milliseconds.
 */
void
ttl_slot_count_replica_hold(int64 ms)
{
	if (MySlot == NULL)
		return;
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	MySlot->replica_holds++;
	MySlot->replica_hold_ms += ms;
	LWLockRelease(SlotsLock);
}

/*
 * ttl_slot_batch_begin
 *		Publish the batch about to run: which policy and table, how far its
 *		pass has come, and the batch's row limit.
 */
void
ttl_slot_batch_begin(TtlPolicy *policy, TtlPass *pass, const char *relname)
{
	TtlProgress *p;
	TimestampTz now = GetCurrentTimestamp();

	if (MySlot == NULL)
		return;
	p = &MySlot->progress;
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	if (strcmp(p->phase, "deleting") != 0 || p->policy_id != policy->id)
	{
		strlcpy(p->phase, "deleting", TTL_PHASE_LEN);
		p->phase_since = now;
	}
	p->policy_id = policy->id;
	strlcpy(p->relname, relname, TTL_QUALNAME_LEN);
	p->pass_started = pass->now;
	p->pass_rows = pass->pass_rows;
	p->pass_batches = pass->pass_batches;
	p->batch_row_limit = pass->row_limit;
	p->batch_started = now;
	LWLockRelease(SlotsLock);
}

/*
 * ttl_slot_batch_end
 *		Publish that the batch has ended (committed or not).
 */
void
ttl_slot_batch_end(TtlPass *pass)
{
	TtlProgress *p;

	if (MySlot == NULL)
		return;
	p = &MySlot->progress;
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	if (pass != NULL)
	{
		p->pass_rows = pass->pass_rows;
		p->pass_batches = pass->pass_batches;
	}
	p->batch_started = 0;
	LWLockRelease(SlotsLock);
}

/*
 * ttl_clip_copy
 *		Copy a message into a fixed buffer of shared memory, cut at a
 *		character's boundary in the database's encoding (a message cut in
 *		the middle of a character would make the views fail for readers in
 *		another client encoding).
 */
void
ttl_clip_copy(char *dst, const char *src, Size size)
{
	int			len;

	if (src == NULL)
		src = "";
	len = pg_mbcliplen(src, strlen(src), size - 1);
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/*
 * ttl_slot_record_death
 *		The worker is ending with a FATAL error during a batch of this policy
 *		(worker.c): leave it for the workers that replace it, beside the
 *		records of the other policies that ended one (see TtlDeath).  Called
 *		from the error reporting of the ending process, which never holds
 *		the slots lock there (nothing raises an error under it).
 */
void
ttl_slot_record_death(int32 policy_id, int sqlerrcode, const char *message)
{
	TtlDeath   *d = NULL;

	if (MySlot == NULL)
		return;
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	for (int i = 0; i < TTL_MAX_DEATHS; i++)
	{
		TtlDeath   *x = &MySlot->deaths[i];

		if (x->policy_id == policy_id)
		{
			d = x;
			break;
		}
		if (d == NULL || (d->policy_id != 0 &&
						  (x->policy_id == 0 || x->at < d->at)))
			d = x;
	}
	if (d->policy_id == policy_id)
		d->count++;
	else
		d->count = 1;
	d->policy_id = policy_id;
	d->code = sqlerrcode;
	d->at = GetCurrentTimestamp();
	d->reported = false;
	ttl_clip_copy(d->message, message, sizeof(d->message));
	LWLockRelease(SlotsLock);
}

/*
 * ttl_slot_deaths
 *		A copy of the records ttl_slot_record_death left (up to
 *		TTL_MAX_DEATHS into deaths[]): the policies whose batch was in
 *		flight when a worker ended, the error, and how many times in a row.
 *		Returns how many.  Each is kept until ttl_slot_forget_death, and
 *		marked reported: the caller logs and counts those not reported yet.
 */
int
ttl_slot_deaths(TtlDeath *deaths)
{
	int			n = 0;

	if (MySlot == NULL)
		return 0;
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	for (int i = 0; i < TTL_MAX_DEATHS; i++)
	{
		if (MySlot->deaths[i].policy_id != 0)
		{
			deaths[n++] = MySlot->deaths[i];
			MySlot->deaths[i].reported = true;
		}
	}
	LWLockRelease(SlotsLock);
	return n;
}

/*
 * ttl_slot_forget_death
 *		A batch of the policy ended normally since: forget its record.
 */
void
ttl_slot_forget_death(int32 policy_id)
{
	if (MySlot == NULL)
		return;
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	for (int i = 0; i < TTL_MAX_DEATHS; i++)
	{
		if (MySlot->deaths[i].policy_id == policy_id)
			memset(&MySlot->deaths[i], 0, sizeof(TtlDeath));
	}
	LWLockRelease(SlotsLock);
}

/*
 * ttl_shmem_prepared_find
 *		The entry of a prepared transaction of a database (writes.c), or,
 *		with create, a free one given to it; NULL when there is none.  The
 *		caller holds the slots lock (ttl_shmem_slots_lock).
 */
TtlPrepared *
ttl_shmem_prepared_find(const char *gid, Oid dboid, bool create)
{
	TtlPrepared *free_entry = NULL;

	Assert(LWLockHeldByMe(SlotsLock));
	if (Prepared == NULL)
		return NULL;
	for (int i = 0; i < max_prepared_xacts; i++)
	{
		TtlPrepared *p = &Prepared[i];

		if (p->gid[0] == '\0')
		{
			if (free_entry == NULL)
				free_entry = p;
			continue;
		}
		if (p->dboid == dboid && strcmp(p->gid, gid) == 0)
			return p;
	}
	if (create && free_entry != NULL)
	{
		strlcpy(free_entry->gid, gid, GIDSIZE);
		free_entry->dboid = dboid;
		free_entry->n = 0;
		return free_entry;
	}
	return NULL;
}

/*
 * ttl_shmem_origin_release
 *		At exit: give this process's origin slot back.
 */
static void
ttl_shmem_origin_release(int code, Datum arg)
{
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	for (int i = 0; i < max_worker_processes; i++)
	{
		if (OriginPids[i] == MyProcPid)
			OriginPids[i] = 0;
	}
	LWLockRelease(SlotsLock);
}

/*
 * ttl_shmem_origin_claim
 *		A worker or helper claims the lowest free process slot, whose
 *		replication origin it uses (origin.c), until it exits.  Returns the
 *		slot, or -1 when none is free (there is one per background worker
 *		the server may run).  Under the slots lock.
 */
int
ttl_shmem_origin_claim(void)
{
	int			claimed = -1;

	if (OriginPids == NULL)
		return -1;
	if (!OriginReleaseRegistered)
	{
		/* after PostgreSQL lets go of the origin (registered after this) */
		on_shmem_exit(ttl_shmem_origin_release, (Datum) 0);
		OriginReleaseRegistered = true;
	}
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	for (int i = 0; i < max_worker_processes && claimed < 0; i++)
	{
		if (OriginPids[i] == 0 || OriginPids[i] == MyProcPid)
		{
			OriginPids[i] = MyProcPid;
			claimed = i;
		}
	}
	LWLockRelease(SlotsLock);
	return claimed;
}

/*
 * ttl_shmem_origin_in_use
 *		Whether a running process holds the process slot (origin.c drops
 *		the origins of slots none holds).  Under the slots lock.
 */
bool
ttl_shmem_origin_in_use(int slot)
{
	bool		used;

	if (OriginPids == NULL || slot < 0 || slot >= max_worker_processes)
		return false;
	LWLockAcquire(SlotsLock, LW_SHARED);
	used = OriginPids[slot] != 0;
	LWLockRelease(SlotsLock);
	return used;
}

/* ----------
 * Backends
 * ----------
 */

/*
 * ttl_shmem_wake_database
 *		A policy of the database changed, the extension was created, or its
 *		ttl_index.enabled was set or reset (ALTER DATABASE): probe it, have
 *		its worker re-read the policies (and the setting), and wake the
 *		launcher.
 */
void
ttl_shmem_wake_database(Oid dboid)
{
	TtlDbSlot  *slot;
	Latch	   *worker_latch = NULL;
	Latch	   *launcher_latch;

	if (Shared == NULL || !OidIsValid(dboid))
		return;
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	slot = ttl_shmem_slot_find(dboid);
	if (slot != NULL)
	{
		slot->probe = true;
		/* a paused database's worker starts, and reads the setting again */
		slot->db_paused = false;
		slot->generation++;
		worker_latch = slot->latch;
	}
	else
	{
		/* for the launcher, which gives the database a slot again */
		int			i;

		for (i = 0; i < TTL_PROBE_REQUESTS; i++)
		{
			if (Shared->probe_requests[i] == dboid ||
				!OidIsValid(Shared->probe_requests[i]))
			{
				Shared->probe_requests[i] = dboid;
				break;
			}
		}
		if (i == TTL_PROBE_REQUESTS)
			Shared->probe_overflow = true;
	}
	launcher_latch = Shared->launcher_latch;
	LWLockRelease(SlotsLock);

	if (worker_latch)
		SetLatch(worker_latch);
	if (launcher_latch)
		SetLatch(launcher_latch);
}

/*
 * ttl_shmem_block_database
 *		Keep the worker of a database (and its helpers) out until `until`
 *		(or until released), and fill pids with those running now (at most
 *		1 + TTL_MAX_HELPERS).  Returns how many.
 */
int
ttl_shmem_block_database(Oid dboid, TimestampTz until, pid_t *pids)
{
	TtlDbSlot  *slot;
	int			n = 0;

	if (Shared == NULL)
		return 0;
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	slot = ttl_shmem_slot_find(dboid);
	if (slot != NULL)
	{
		slot->blocked_until = until;
		if (slot->pid != 0)
			pids[n++] = slot->pid;
		for (int i = 0; i < TTL_MAX_HELPERS; i++)
			if (slot->job.helpers[i] != 0)
				pids[n++] = slot->job.helpers[i];
	}
	LWLockRelease(SlotsLock);
	return n;
}

/*
 * ttl_shmem_database_pid
 *		The pid of a process attached to a database's slot (its worker, else
 *		a helper), 0 if none.
 */
pid_t
ttl_shmem_database_pid(Oid dboid)
{
	TtlDbSlot  *slot;
	pid_t		pid = 0;

	if (Shared == NULL)
		return 0;
	LWLockAcquire(SlotsLock, LW_SHARED);
	slot = ttl_shmem_slot_find(dboid);
	if (slot != NULL)
	{
		pid = slot->pid;
		for (int i = 0; pid == 0 && i < TTL_MAX_HELPERS; i++)
			pid = slot->job.helpers[i];
	}
	LWLockRelease(SlotsLock);
	return pid;
}

/*
 * ttl_shmem_unblock_database
 *		Let the worker of a database run again, and wake the launcher.
 */
void
ttl_shmem_unblock_database(Oid dboid)
{
	TtlDbSlot  *slot;
	Latch	   *launcher_latch;

	if (Shared == NULL)
		return;
	LWLockAcquire(SlotsLock, LW_EXCLUSIVE);
	slot = ttl_shmem_slot_find(dboid);
	if (slot != NULL)
		slot->blocked_until = 0;
	launcher_latch = Shared->launcher_latch;
	LWLockRelease(SlotsLock);
	if (launcher_latch)
		SetLatch(launcher_latch);
}

/*
 * TtlSlotCopy
 *		What a list of the slots shows of one slot (a TtlProgress, a
 *		TtlDbStatus), copied into *copy under the slots lock: false when the
 *		slot is not shown.  It neither allocates nor raises an error.
 */
typedef bool (*TtlSlotCopy) (TtlDbSlot *slot, void *copy);

/*
 * ttl_shmem_slots_list
 *		What every slot shows, copied by `copy` into palloc'd entries of
 *		`size` bytes, as a List of them.  Empty without shared memory.
 */
static List *
ttl_shmem_slots_list(Size size, TtlSlotCopy copy)
{
	List	   *result = NIL;
	char	   *copies;
	int			n = 0;

	if (Shared == NULL)
		return NIL;

	/* allocate before taking the lock: nothing under it may fail */
	copies = palloc0(size * Shared->nslots);

	LWLockAcquire(SlotsLock, LW_SHARED);
	for (int i = 0; i < Shared->nslots; i++)
	{
		if (copy(&Shared->slots[i], copies + n * size))
			n++;
	}
	LWLockRelease(SlotsLock);

	for (int i = 0; i < n; i++)
		result = lappend(result, copies + i * size);
	return result;
}

/*
 * ttl_shmem_progress_copy
 *		A running worker's progress, for ttl_shmem_progress_list.
 */
static bool
ttl_shmem_progress_copy(TtlDbSlot *slot, void *copy)
{
	TtlProgress *p = (TtlProgress *) copy;

	if (!OidIsValid(slot->dboid) || slot->pid == 0)
		return false;
	memcpy(p, &slot->progress, sizeof(TtlProgress));
	p->dboid = slot->dboid;
	p->datname = slot->datname;
	p->pid = slot->pid;
	return true;
}

/*
 * ttl_shmem_progress_list
 *		A copy of the progress of every running worker, as a List of
 *		palloc'd TtlProgress.  Empty without shared memory.
 */
List *
ttl_shmem_progress_list(void)
{
	return ttl_shmem_slots_list(sizeof(TtlProgress), ttl_shmem_progress_copy);
}

/*
 * ttl_shmem_status_copy
 *		A tracked database's state, for ttl_shmem_database_list.
 */
static bool
ttl_shmem_status_copy(TtlDbSlot *slot, void *copy)
{
	TtlDbStatus *s = (TtlDbStatus *) copy;

	if (!OidIsValid(slot->dboid))
		return false;
	s->dboid = slot->dboid;
	s->datname = slot->datname;
	s->has_extension = slot->has_extension;
	s->pid = slot->pid;
	s->waiting_since = slot->waiting_since;
	s->turn_started = slot->pid != 0 ? slot->turn_started : 0;
	s->turns = slot->turns;
	s->blocked_until = slot->blocked_until;
	s->replica_holds = slot->replica_holds;
	s->replica_hold_ms = slot->replica_hold_ms;
	s->paused = slot->db_paused;
	return true;
}

/*
 * ttl_shmem_database_list
 *		A copy of every tracked database's state, as a List of palloc'd
 *		TtlDbStatus.  Empty without shared memory.
 */
List *
ttl_shmem_database_list(void)
{
	return ttl_shmem_slots_list(sizeof(TtlDbStatus), ttl_shmem_status_copy);
}

/*
 * ttl_shmem_running_count
 *		How many workers are attached to their slot now.
 */
int
ttl_shmem_running_count(void)
{
	int			n = 0;

	if (Shared == NULL)
		return 0;
	LWLockAcquire(SlotsLock, LW_SHARED);
	for (int i = 0; i < Shared->nslots; i++)
	{
		if (OidIsValid(Shared->slots[i].dboid) && Shared->slots[i].pid != 0)
			n++;
	}
	LWLockRelease(SlotsLock);
	return n;
}

/* ----------
 * Counters
 * ----------
 */

/*
 * ttl_shmem_count_worker_xid
 *		A worker took an XID (see yield.c).
 */
void
ttl_shmem_count_worker_xid(void)
{
	if (Shared != NULL)
		pg_atomic_fetch_add_u64(&Shared->worker_xids, 1);
}

/*
 * ttl_shmem_worker_xids
 *		XIDs the workers have taken since the server started.
 */
uint64
ttl_shmem_worker_xids(void)
{
	if (Shared == NULL)
		return 0;
	return pg_atomic_read_u64(&Shared->worker_xids);
}

/*
 * ttl_shmem_write_counter
 *		The write counter of a hash bucket (see writes.c), NULL without
 *		shared memory.
 */
pg_atomic_uint32 *
ttl_shmem_write_counter(uint32 hash)
{
	if (Shared == NULL)
		return NULL;
	return &Shared->writes[hash & (TTL_WRITE_BUCKETS - 1)];
}

/* ----------
 * Stats hash
 * ----------
 */

HTAB *
ttl_shmem_stats_hash(void)
{
	return StatsHash;
}

LWLock *
ttl_shmem_stats_lock(void)
{
	return StatsLock;
}

/*
 * ttl_shmem_take_probe_requests
 *		The launcher: the databases without a slot that asked for a probe
 *		since the last call (at most TTL_PROBE_REQUESTS, into dboids);
 *		returns how many, or -1 when more asked than were kept (then every
 *		database deserves one).  The caller holds the slots lock.
 */
int
ttl_shmem_take_probe_requests(Oid *dboids)
{
	int			n = 0;

	Assert(LWLockHeldByMeInMode(SlotsLock, LW_EXCLUSIVE));
	for (int i = 0; i < TTL_PROBE_REQUESTS; i++)
	{
		if (OidIsValid(Shared->probe_requests[i]))
			dboids[n++] = Shared->probe_requests[i];
		Shared->probe_requests[i] = InvalidOid;
	}
	if (Shared->probe_overflow)
	{
		Shared->probe_overflow = false;
		return -1;
	}
	return n;
}
