/*-------------------------------------------------------------------------
 *
 * origin.c
 *	  The replication origin the worker's changes carry, so that logical
 *	  decoding can tell a TTL delete from an application's: test_decoding's
 *	  only-local skips them, a subscription made WITH (origin = none) does
 *	  not receive them, one with origin = any (the default) does.
 *
 * Each database's worker uses an origin of its own, ttl_index_<database
 * OID>, created when first needed: PostgreSQL lets one process at a time
 * use an origin, and one worker per database runs at a time.  The worker
 * sets its session up with the origin once, and each batch sets
 * replorigin_session_origin (marking its WAL records and its commit) or
 * clears it, as the policy and ttl_index.replication_origin say; between
 * batches it is clear.  When no origin can be set up (no free replication
 * state: max_replication_slots, or max_active_replication_origins from
 * PostgreSQL 18), the purge goes on unmarked, with one WARNING, and the
 * worker tries again a minute later, or after a reload of the
 * configuration.  ttl_runner()
 * never marks: its changes are the caller's transaction's.
 *
 * Locking: none of ours; PostgreSQL's origin code takes its own locks.
 * Process-local state only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "ttl_index.h"

/* a helper's own origin: its name ends with this (ttl_origin_for_helper) */
static int	HelperIndex = -1;

/* the session's origin: InvalidRepOriginId until set up */
static RepOriginId SessionOrigin = InvalidRepOriginId;

/* set-up failed: tried again a minute later, or after a reload */
#define TTL_ORIGIN_RETRY_MS		60000
static bool SetupFailed = false;
static TimestampTz SetupFailedAt = 0;
static uint64 SetupFailedGeneration = 0;
static uint64 ReloadGeneration = 0;

static void ttl_origin_failed(const char *name, const char *reason);
static void ttl_origin_setup(void);

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
 *		once (ttl_index.replication_origin may have changed).
 */
void
ttl_origin_config_reloaded(void)
{
	ReloadGeneration++;
}

/*
 * ttl_origin_failed
 *		The origin could not be set up: say so, the first time, and try
 *		again later (see ttl_origin_setup).
 */
static void
ttl_origin_failed(const char *name, const char *reason)
{
	if (!SetupFailed)
		ereport(HelperIndex >= 0 ? DEBUG1 : WARNING,
				(errmsg("ttl_index could not set up replication origin \"%s\": %s",
						name, reason),
				 errdetail("Expired rows are deleted without a replication origin: logical decoding "
						   "and subscriptions cannot tell them from the application's deletes."),
				 errhint("Raise %s, or set ttl_index.replication_origin = off.",
						 TTL_ORIGIN_CAPACITY_NAME)));
	SetupFailed = true;
	SetupFailedAt = GetCurrentTimestamp();
	SetupFailedGeneration = ReloadGeneration;
}

/*
 * ttl_origin_setup
 *		Find or create this database's origin, in a transaction of its own,
 *		and set the session up with it.  On failure, one WARNING.
 */
static void
ttl_origin_setup(void)
{
	char		name[NAMEDATALEN];
	MemoryContext cxt = CurrentMemoryContext;
	RepOriginId id = InvalidRepOriginId;

	if (SetupFailed && SetupFailedGeneration == ReloadGeneration &&
		!TimestampDifferenceExceeds(SetupFailedAt, GetCurrentTimestamp(), TTL_ORIGIN_RETRY_MS))
		return;
	if (HelperIndex >= 0)
		snprintf(name, sizeof(name), "ttl_index_%u_helper%d", MyDatabaseId, HelperIndex);
	else
		snprintf(name, sizeof(name), "ttl_index_%u", MyDatabaseId);
	if (TTL_ORIGIN_CAPACITY == 0)
	{
		ttl_origin_failed(name, psprintf("%s is 0", TTL_ORIGIN_CAPACITY_NAME));
		return;
	}

	StartTransactionCommand();
	PG_TRY();
	{
		id = replorigin_by_name(name, true);
		if (id == InvalidRepOriginId)
		{
			/* its XID is a worker's, not the application's (yield.c) */
			ttl_yield_own_xid();
			id = replorigin_create(name);
		}
		CommitTransactionCommand();
		ttl_replorigin_session_setup(id);
		SessionOrigin = id;
		SetupFailed = false;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		if (IsTransactionState())
			AbortCurrentTransaction();
		else
			AbortOutOfAnyTransaction();
		ttl_origin_failed(name, edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/*
 * ttl_origin_for_helper
 *		This process is helper number k of its database's worker (helper.c):
 *		its changes carry an origin of its own, ttl_index_<database
 *		OID>_helper<k>, since an origin serves one process at a time.  Any
 *		origin tells a TTL delete from the application's alike; a helper
 *		that cannot get one does not delete unmarked (it leaves the rows to
 *		the worker), so it says so at DEBUG1 only.
 */
void
ttl_origin_for_helper(int k)
{
	HelperIndex = k;
}

/*
 * ttl_origin_helper_done
 *		A helper leaves: its origin is dropped.  PostgreSQL keeps an origin's
 *		replication state (one of max_replication_slots, or of
 *		max_active_replication_origins from 18) for as long as the origin
 *		exists, even with no session on it; the helpers' would take them
 *		from subscriptions for good.  The next helper with this number
 *		creates it again.  A failure is only logged (DEBUG1): the origin
 *		stays, for that next helper.
 */
void
ttl_origin_helper_done(void)
{
	char		name[NAMEDATALEN];
	MemoryContext cxt = CurrentMemoryContext;

	if (HelperIndex < 0 || SessionOrigin == InvalidRepOriginId)
		return;
	replorigin_session_reset();
	SessionOrigin = InvalidRepOriginId;
	snprintf(name, sizeof(name), "ttl_index_%u_helper%d", MyDatabaseId, HelperIndex);
	StartTransactionCommand();
	PG_TRY();
	{
		ttl_yield_own_xid();
		replorigin_drop_by_name(name, true, true);
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(DEBUG1,
				(errmsg_internal("ttl_index helper could not drop replication origin \"%s\": %s",
								 name, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/*
 * ttl_origin_batch_begin
 *		Before a batch's transaction starts: mark it with the origin, or
 *		not, as the policy wants.  Returns false when the policy wants the
 *		origin and none could be set up (the batch then goes unmarked).
 */
bool
ttl_origin_batch_begin(TtlPolicy *policy)
{
	Assert(!IsTransactionState());
	if (!ttl_origin_wanted(policy))
	{
		replorigin_session_origin = InvalidRepOriginId;
		return true;
	}
	if (SessionOrigin == InvalidRepOriginId)
		ttl_origin_setup();
	replorigin_session_origin = SessionOrigin;
	return SessionOrigin != InvalidRepOriginId;
}

/*
 * ttl_origin_batch_end
 *		After the batch's transaction ended, committed or not.
 */
void
ttl_origin_batch_end(void)
{
	replorigin_session_origin = InvalidRepOriginId;
}
