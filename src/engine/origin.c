/*-------------------------------------------------------------------------
 *
 * origin.c
 *	  The replication origin the workers' and helpers' changes carry, so
 *	  that logical decoding can tell a TTL delete from an application's:
 *	  test_decoding's only-local skips them, a subscription made WITH
 *	  (origin = none) does not receive them, one with origin = any (the
 *	  default) does.
 *
 * Bounded by the processes that run.  PostgreSQL lets one process at a
 * time use an origin, and an origin that has ever been set up keeps a
 * replication state (one of max_replication_slots, of
 * max_active_replication_origins from PostgreSQL 18), shared with the
 * server's own subscriptions, until it is dropped (across restarts too).
 * So origins are not per database: each worker or helper claims the lowest
 * free process slot in shared memory (shmem.c) and uses the origin
 * ttl_index_process_<slot>, whichever database it serves.  The server's
 * states are not ours (DESIGN.md, trap 26), so:
 *
 * - a process sets its origin up only while more than
 *	 ttl_index.free_replication_states states are free, so that a
 *	 subscription's apply and table-sync workers always find one; when that
 *	 reserve leaves fewer states than processes, the launcher says so at
 *	 start and after a reload (ttl_origin_check_capacity);
 * - a process that set its origin up drops it as it exits
 *	 (ttl_origin_exit), which gives its state back: the origin carries no
 *	 progress anyone reads, only an id in the WAL, and the next process of
 *	 the slot creates it again;
 * - origins left by a process that could not drop its own (a crash, an
 *	 immediate shutdown) are dropped by the workers, as they start and
 *	 after a reload, once no process holds their slot; so are the origins of
 *	 slots at or above the processes ttl_index may run at once
 *	 (ttl_index.max_workers, helpers included) and those of earlier versions
 *	 (ttl_index_<database OID> and their helpers') (ttl_origin_drop_unused).
 *	 Not the launcher: connected to no database, it cannot open the
 *	 origins' catalog, which is shared but not among those a process
 *	 without a database can read.  docs/operations.md says how a DBA frees
 *	 what is left once no database has the extension.
 *
 * A process sets its session up with its origin once, and each batch sets
 * the transaction's origin (TTL_XACT_ORIGIN, compat.h: marking its WAL
 * records and its commit) or clears it, as the policy and ttl_index.replication_origin say; between
 * batches it is clear.  When a policy wants its changes marked and no
 * origin can be set up (no free replication state), its batches wait
 * (ttl_origin_batch_begin says so, the caller holds them back and says
 * why, once): they never delete unmarked, since a subscriber made WITH
 * (origin = none) would then delete rows it was promised to keep.  The
 * set-up is tried again every TTL_ORIGIN_RETRY_MS, or after a reload.
 * ttl_runner() never marks: its changes are the caller's transaction's.
 *
 * The set-up runs inside a transaction, so that an error in it (no free
 * state: ReplicationOriginLock is held when PostgreSQL raises it) is
 * cleaned up by the abort: no lock survives it (trap 17).
 *
 * Locking: the set-up holds ExclusiveLock on pg_replication_origin (what
 * replorigin_create takes) from before it counts the free states to its
 * commit: two ttl_index processes never both take the last state above the
 * reserve, and no drop (RowExclusiveLock) removes the origin between its
 * look-up and the session set-up.  The slots lock inside shmem.c's claim;
 * PostgreSQL's origin code takes its own locks.  Process-local state
 * otherwise.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_replication_origin.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "ttl_index.h"
#include "engine/engine.h"
#include "shared/shared.h"
#include "shared/shmem.h"

/* the name of a process slot's origin */
#define TTL_ORIGIN_PREFIX		"ttl_index_process_"

/* set-up failed: tried again this long after, or after a reload */
#define TTL_ORIGIN_RETRY_MS		10000

/* this process's slot (shmem.c), -1 until claimed */
static int	OriginSlot = -1;

/* the session's origin: InvalidReplOriginId until set up */
static ReplOriginId SessionOrigin = InvalidReplOriginId;

static bool SetupFailed = false;
static TimestampTz SetupFailedAt = 0;
static uint64 SetupFailedGeneration = 0;
static uint64 ReloadGeneration = 0;

static void ttl_origin_exit(int code, Datum arg);
static char FailedReason[256];
static bool FailureNew = false;
static bool ExitRegistered = false;

/*
 * ttl_origin_wanted
 *		Whether the policy's changes are to carry the origin.
 */
bool
ttl_origin_wanted(TtlPolicy *policy)
{
	if (policy->replication_origin >= 0)
		return policy->replication_origin > 0;
	return ttl_replication_origin;
}

/*
 * ttl_origin_config_reloaded
 *		The configuration was reloaded: a failed set-up is tried again at
 *		once (the limits or ttl_index.replication_origin may have changed).
 */
void
ttl_origin_config_reloaded(void)
{
	ReloadGeneration++;
}

/*
 * ttl_origin_failed
 *		The origin could not be set up: say so, the first time of a run of
 *		failures, and try again later (see ttl_origin_setup).
 */
static void
ttl_origin_failed(const char *name, const char *reason)
{
	if (!SetupFailed)
	{
		ereport(WARNING,
				(errmsg("ttl_index could not set up replication origin \"%s\": %s",
						name, reason),
				 errdetail("The batches of policies whose changes carry the origin wait until it can be: "
						   "they never delete unmarked."),
				 errhint("Raise %s, or set ttl_index.replication_origin = off (or the policy's "
						 "replication_origin => false) where marking is not needed.",
						 TTL_ORIGIN_CAPACITY_NAME)));
		FailureNew = true;
	}
	strlcpy(FailedReason, reason, sizeof(FailedReason));
	SetupFailed = true;
	SetupFailedAt = GetCurrentTimestamp();
	SetupFailedGeneration = ReloadGeneration;
}

/*
 * ttl_origin_states
 *		How many of the server's replication states are taken, and whether
 *		origin id (InvalidReplOriginId: none) has one already (a state is
 *		kept from one set-up to the next, and across restarts, until the
 *		origin is dropped).
 */
static void
ttl_origin_states(ReplOriginId id, int *used, bool *has_state)
{
	char		query[256];
	bool		isnull;

	snprintf(query, sizeof(query),
			 "SELECT pg_catalog.count(*), pg_catalog.count(*) FILTER (WHERE local_id = %u)"
			 " FROM pg_catalog.pg_show_replication_origin_status()",
			 (unsigned int) id);
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(query, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the replication origin states");
	*used = (int) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1, &isnull));
	*has_state = id != InvalidReplOriginId &&
		DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									SPI_tuptable->tupdesc, 2, &isnull)) > 0;
	SPI_finish();
	PopActiveSnapshot();
}

/*
 * ttl_origin_exit
 *		before_shmem_exit callback of a process that set its origin up:
 *		let go of it and drop it, so that its replication state goes back
 *		to the server (see the top of the file).  Runs a transaction of its
 *		own, as PostgreSQL's clean-up of temporary relations does at exit.
 */
static void
ttl_origin_exit(int code, Datum arg)
{
	char		name[NAMEDATALEN];

	if (SessionOrigin == InvalidReplOriginId || OriginSlot < 0)
		return;
	AbortOutOfAnyTransaction();
	TTL_XACT_ORIGIN = InvalidReplOriginId;
	replorigin_session_reset();
	SessionOrigin = InvalidReplOriginId;
	if (RecoveryInProgress())
		return;
	snprintf(name, sizeof(name), TTL_ORIGIN_PREFIX "%d", OriginSlot);
	StartTransactionCommand();
	/* nowait: none but us uses the slot's origin until we leave the slot */
	replorigin_drop_by_name(name, true, true);
	CommitTransactionCommand();
}

/*
 * ttl_origin_check_capacity
 *		At the launcher's start and after a reload: say once, for each
 *		change of the settings, when the processes ttl_index may run cannot
 *		all mark their changes without taking the states
 *		ttl_index.free_replication_states leaves to others.
 */
void
ttl_origin_check_capacity(void)
{
	static int	said_capacity = -1;
	static int	said_processes = -1;
	static int	said_free = -1;
	int			processes = ttl_shmem_max_workers();
	int			room = TTL_ORIGIN_CAPACITY - ttl_free_replication_states;

	if (processes <= room || !ttl_replication_origin)
	{
		said_capacity = -1;
		return;
	}
	if (said_capacity == TTL_ORIGIN_CAPACITY && said_processes == processes &&
		said_free == ttl_free_replication_states)
		return;
	said_capacity = TTL_ORIGIN_CAPACITY;
	said_processes = processes;
	said_free = ttl_free_replication_states;
	ereport(LOG,
			(errmsg("ttl_index may run %d processes, but only %d of the server's %d replication states may carry its replication origin",
					processes, Max(room, 0), TTL_ORIGIN_CAPACITY),
			 errdetail("ttl_index.free_replication_states leaves %d states to subscriptions and other users; "
					   "the batches of a process that finds none free wait while its policies' changes are to carry the origin.",
					   ttl_free_replication_states),
			 errhint("Raise %s to at least %d, or lower ttl_index.max_workers, "
					 "or set ttl_index.replication_origin = off where marking is not needed.",
					 TTL_ORIGIN_CAPACITY_NAME, processes + ttl_free_replication_states)));
}

/*
 * The set-up of ttl_origin_setup, for the body of its transaction: the
 * slot's origin's name, and the origin found or made.
 */
typedef struct TtlOriginSetup
{
	const char *name;
	ReplOriginId id;
} TtlOriginSetup;

/*
 * ttl_origin_setup_body
 *		In the set-up's transaction, its errors caught: find or create the
 *		origin, and set the session up with it.
 */
static void
ttl_origin_setup_body(void *arg)
{
	TtlOriginSetup *setup = (TtlOriginSetup *) arg;
	int			used;
	bool		has_state;

	/* one set-up at a time, no drop under us (see the top of the file) */
	LockRelationOid(ReplicationOriginRelationId, ExclusiveLock);
	setup->id = replorigin_by_name(setup->name, true);
	ttl_origin_states(setup->id, &used, &has_state);
	if (!has_state && TTL_ORIGIN_CAPACITY - used - 1 < ttl_free_replication_states)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("%d of the server's %d replication states are free, and ttl_index.free_replication_states leaves %d to others",
						Max(TTL_ORIGIN_CAPACITY - used, 0), TTL_ORIGIN_CAPACITY,
						ttl_free_replication_states)));
	if (setup->id == InvalidReplOriginId)
	{
		/* its XID is a worker's, not the application's (yield.c) */
		ttl_yield_own_xid();
		setup->id = replorigin_create(setup->name);
	}
	/* inside the transaction: an error here is cleaned up by its abort */
	ttl_replorigin_session_setup(setup->id);
}

/*
 * ttl_origin_setup
 *		Find or create this process slot's origin and set the session up
 *		with it, in a transaction of its own (see the top of the file).  On
 *		failure, one WARNING for a run of them.
 */
static void
ttl_origin_setup(void)
{
	char		name[NAMEDATALEN];
	MemoryContext cxt = CurrentMemoryContext;
	TtlOriginSetup setup = {.name = name, .id = InvalidReplOriginId};
	TtlXactWork work = {.body = ttl_origin_setup_body, .arg = &setup};
	ErrorData  *edata;

	if (SetupFailed && SetupFailedGeneration == ReloadGeneration &&
		!TimestampDifferenceExceeds(SetupFailedAt, GetCurrentTimestamp(), TTL_ORIGIN_RETRY_MS))
		return;
	if (OriginSlot < 0)
		OriginSlot = ttl_shmem_origin_claim();
	if (OriginSlot < 0)
	{
		ttl_origin_failed(TTL_ORIGIN_PREFIX "?", "no process slot is free");
		return;
	}
	snprintf(name, sizeof(name), TTL_ORIGIN_PREFIX "%d", OriginSlot);
	if (TTL_ORIGIN_CAPACITY == 0)
	{
		ttl_origin_failed(name, psprintf("%s is 0", TTL_ORIGIN_CAPACITY_NAME));
		return;
	}

	if (!ExitRegistered)
	{
		/* before PostgreSQL's own clean-up, which runs on_shmem_exit */
		before_shmem_exit(ttl_origin_exit, (Datum) 0);
		ExitRegistered = true;
	}

	edata = ttl_error_catch_xact(cxt, &work);
	if (edata == NULL)
	{
		SessionOrigin = setup.id;
		SetupFailed = false;
		return;
	}
	ttl_origin_failed(name, edata->message);
	FreeErrorData(edata);
}

/*
 * ttl_origin_batch_begin
 *		Before a batch's transaction starts: mark it with the origin, or
 *		not, as the policy wants.  Returns false when the policy wants the
 *		origin and none could be set up: the caller must not run the batch.
 */
bool
ttl_origin_batch_begin(TtlPolicy *policy)
{
	Assert(!IsTransactionState());
	if (!ttl_origin_wanted(policy))
	{
		TTL_XACT_ORIGIN = InvalidReplOriginId;
		return true;
	}
	if (SessionOrigin == InvalidReplOriginId)
		ttl_origin_setup();
	TTL_XACT_ORIGIN = SessionOrigin;
	return SessionOrigin != InvalidReplOriginId;
}

/*
 * ttl_origin_batch_end
 *		After the batch's transaction ended, committed or not.
 */
void
ttl_origin_batch_end(void)
{
	TTL_XACT_ORIGIN = InvalidReplOriginId;
}

/*
 * ttl_origin_failure
 *		Why the origin could not be set up, and whether this is news (the
 *		first time of a run of failures: the caller counts it once).
 */
const char *
ttl_origin_failure(bool *news)
{
	*news = FailureNew;
	FailureNew = false;
	return FailedReason;
}

/*
 * ttl_origin_drop_body
 *		In a transaction of its own, its errors caught: drop the origin
 *		named arg.
 */
static void
ttl_origin_drop_body(void *arg)
{
	/* nowait: one a process holds is in use, and stays */
	replorigin_drop_by_name((const char *) arg, true, true);
}

/*
 * ttl_origin_drop_unused
 *		A worker's housekeeping (the origins' catalog is shared: any
 *		database's worker may do it): drop the origins of process slots no
 *		process holds (their process could not drop its own at exit), those
 *		at or above the number of processes ttl_index may run
 *		(ttl_index.max_workers) and those of earlier versions, so that their
 *		replication states go back to the server.  An origin in use (a
 *		process took its slot since) is left: the drop does not wait, and
 *		the set-up's lock keeps it from dropping one being set up.  Returns
 *		how many were dropped.
 */
int
ttl_origin_drop_unused(void)
{
	int			capacity = ttl_shmem_max_workers();
	MemoryContext cxt = CurrentMemoryContext;
	List	   *names = NIL;
	ListCell   *lc;
	int			dropped = 0;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	MemoryContext old;

	StartTransactionCommand();
	rel = table_open(ReplicationOriginRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		char	   *name = TextDatumGetCString(heap_getattr(tup, Anum_pg_replication_origin_roname,
															RelationGetDescr(rel), &isnull));
		int			slot;
		char		rest;

		if (strncmp(name, "ttl_index_", strlen("ttl_index_")) != 0)
			continue;
		if (sscanf(name, TTL_ORIGIN_PREFIX "%d%c", &slot, &rest) == 1)
		{
			/* a slot of ours: kept while a process holds it */
			if (slot >= 0 && slot < capacity && ttl_shmem_origin_in_use(slot))
				continue;
		}
		else if (!(sscanf(name, "ttl_index_%d%c", &slot, &rest) == 1 ||
				   sscanf(name, "ttl_index_%d_helper%d%c", &slot, &slot, &rest) == 2))
			continue;			/* not a name we ever gave */
		/* the list outlives the transaction: in the caller's memory */
		old = MemoryContextSwitchTo(cxt);
		names = lappend(names, pstrdup(name));
		MemoryContextSwitchTo(old);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();

	foreach(lc, names)
	{
		TtlXactWork work = {.body = ttl_origin_drop_body, .arg = lfirst(lc)};
		ErrorData  *edata = ttl_error_catch_xact(cxt, &work);

		/* one that could not be dropped is left, whatever the error */
		if (edata == NULL)
			dropped++;
		else
			FreeErrorData(edata);
	}
	list_free_deep(names);
	return dropped;
}
