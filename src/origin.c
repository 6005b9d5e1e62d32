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
 * server's own subscriptions, until it is dropped.  So origins are not
 * per database: each worker or helper claims the lowest free process slot
 * in shared memory (shmem.c) and uses the origin ttl_index_process_<slot>,
 * whichever database it serves.  ttl_index never holds more replication
 * states than the processes it may run at once (ttl_index.max_workers,
 * helpers included); each worker, as it starts and after a reload, drops
 * the origins of slots above that, and those of earlier versions
 * (ttl_index_<database OID> and their helpers'), when no process uses them
 * (ttl_origin_drop_unused).  Not the launcher: connected to no database, it
 * cannot open the origins' catalog, which is shared but not among those a
 * process without a database can read.
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
 * cleaned up by the abort: no lock survives it.
 *
 * Locking: none of ours but the slots lock inside shmem.c's claim;
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
#include "miscadmin.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "shmem.h"
#include "ttl_index.h"

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
static char FailedReason[256];
static bool FailureNew = false;

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
	ReplOriginId id = InvalidReplOriginId;

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

	StartTransactionCommand();
	PG_TRY();
	{
		id = replorigin_by_name(name, true);
		if (id == InvalidReplOriginId)
		{
			/* its XID is a worker's, not the application's (yield.c) */
			ttl_yield_own_xid();
			id = replorigin_create(name);
		}
		/* inside the transaction: an error here is cleaned up by its abort */
		ttl_replorigin_session_setup(id);
		CommitTransactionCommand();
		SessionOrigin = id;
		SetupFailed = false;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ttl_origin_failed(name, edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
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
 * ttl_origin_drop_unused
 *		A worker's housekeeping (the origins' catalog is shared: any
 *		database's worker may do it): drop the origins of process slots at or above
 *		the number of processes ttl_index may run (ttl_index.max_workers) and those of earlier versions, none of which any process
 *		uses now, so that their replication states go back to the server.
 *		An origin in use (its process still running) is left for a later
 *		call.  Returns how many were dropped.
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
			/* a slot of ours: kept while it may be used */
			if (slot >= 0 && slot < capacity)
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
		const char *name = (const char *) lfirst(lc);

		StartTransactionCommand();
		PG_TRY();
		{
			/* nowait: one a process holds is in use, and stays */
			replorigin_drop_by_name(name, true, true);
			CommitTransactionCommand();
			dropped++;
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(cxt);
			FlushErrorState();
			AbortCurrentTransaction();
		}
		PG_END_TRY();
	}
	list_free_deep(names);
	return dropped;
}
