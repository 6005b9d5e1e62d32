/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Per-policy counters in shared memory, and ttl_index_policy_stats(),
 *	  the set-returning function behind the ttl_index_stats view.
 *
 * Counters live in a shared hash table keyed by (database, policy id), with
 * room for ttl_index.max_policies entries.  Locking, as in
 * pg_stat_statements: the table's LWLock is taken shared to find an entry
 * and exclusive only to add or remove one; each entry's counters are
 * updated and read under the entry's spinlock.  Readers copy an entry under
 * the spinlock and build their output after releasing it.
 *
 * Without shared_preload_libraries there is no shared memory: counting does
 * nothing and the view shows zeros, but the backlog columns (lag,
 * next_expiry) still work since they are read from the index at query time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "ttl_index.h"

#define TTL_ERROR_LEN	256

typedef struct TtlStatsKey
{
	Oid			dboid;
	int32		policy_id;
} TtlStatsKey;

typedef struct TtlStatsEntry
{
	TtlStatsKey key;			/* hash key: must be first */
	slock_t		mutex;			/* protects everything below */
	int64		rows_deleted;
	int64		batches;
	int64		passes;
	int64		rows_skipped_locked;
	int64		skipped_locked;
	int64		errors;
	double		time_spent_ms;
	TimestampTz last_run;
	TimestampTz last_error_at;
	char		last_error[TTL_ERROR_LEN];
} TtlStatsEntry;

static HTAB *TtlStatsHash = NULL;
static LWLock *TtlStatsLock = NULL;

/*
 * ttl_stats_shmem_size
 *		Shared memory for the counters.
 */
Size
ttl_stats_shmem_size(void)
{
	return hash_estimate_size(ttl_max_policies, sizeof(TtlStatsEntry));
}

/*
 * ttl_stats_shmem_init
 *		Create or attach to the counters; called from the shmem startup hook.
 */
void
ttl_stats_shmem_init(void)
{
	HASHCTL		info;

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(TtlStatsKey);
	info.entrysize = sizeof(TtlStatsEntry);
	TtlStatsHash = ShmemInitHash("ttl_index policy stats",
								 ttl_max_policies, ttl_max_policies,
								 &info, HASH_ELEM | HASH_BLOBS);
	TtlStatsLock = &(GetNamedLWLockTranche("ttl_index"))[1].lock;
}

/*
 * ttl_stats_entry
 *		The entry of a policy, created on first use.  NULL when there is no
 *		shared memory or the table is full (then the policy is not counted,
 *		and a warning says so once per process).
 */
static TtlStatsEntry *
ttl_stats_entry(Oid dboid, int32 policy_id)
{
	static bool warned = false;
	TtlStatsKey key;
	TtlStatsEntry *entry;
	bool		found;

	if (TtlStatsHash == NULL)
		return NULL;

	memset(&key, 0, sizeof(key));
	key.dboid = dboid;
	key.policy_id = policy_id;

	LWLockAcquire(TtlStatsLock, LW_SHARED);
	entry = hash_search(TtlStatsHash, &key, HASH_FIND, NULL);
	LWLockRelease(TtlStatsLock);
	if (entry != NULL)
		return entry;

	LWLockAcquire(TtlStatsLock, LW_EXCLUSIVE);
	entry = hash_search(TtlStatsHash, &key, HASH_ENTER_NULL, &found);
	if (entry != NULL && !found)
	{
		memset((char *) entry + sizeof(TtlStatsKey), 0,
			   sizeof(TtlStatsEntry) - sizeof(TtlStatsKey));
		SpinLockInit(&entry->mutex);
	}
	LWLockRelease(TtlStatsLock);

	if (entry == NULL && !warned)
	{
		ereport(WARNING,
				(errmsg("ttl_index: more policies than ttl_index.max_policies (%d); some are not counted in ttl_index_stats",
						ttl_max_policies),
				 errhint("Raise ttl_index.max_policies and restart the server.")));
		warned = true;
	}
	return entry;
}

/*
 * ttl_stats_count_batch
 *		Add one batch to a policy's counters.
 */
void
ttl_stats_count_batch(Oid dboid, TtlPolicy *policy, TtlBatchResult *result)
{
	TtlStatsEntry *e = ttl_stats_entry(dboid, policy->id);
	TimestampTz now = GetCurrentTimestamp();

	if (e == NULL)
		return;
	SpinLockAcquire(&e->mutex);
	if (result->outcome == TTL_BATCH_LOCKED && result->deleted == 0 &&
		result->skipped_locked == 0)
		e->skipped_locked++;
	else
		e->batches++;
	e->rows_deleted += result->deleted;
	e->rows_skipped_locked += result->skipped_locked;
	e->time_spent_ms += result->elapsed_ms;
	e->last_run = now;
	SpinLockRelease(&e->mutex);
}

/*
 * ttl_stats_count_pass
 *		Count a completed pass.
 */
void
ttl_stats_count_pass(Oid dboid, TtlPolicy *policy)
{
	TtlStatsEntry *e = ttl_stats_entry(dboid, policy->id);

	if (e == NULL)
		return;
	SpinLockAcquire(&e->mutex);
	e->passes++;
	SpinLockRelease(&e->mutex);
}

/*
 * ttl_stats_count_error
 *		Count a failed batch and remember its message.
 */
void
ttl_stats_count_error(Oid dboid, TtlPolicy *policy, const char *message)
{
	TtlStatsEntry *e = ttl_stats_entry(dboid, policy->id);
	TimestampTz now = GetCurrentTimestamp();

	if (e == NULL)
		return;
	SpinLockAcquire(&e->mutex);
	e->errors++;
	e->last_error_at = now;
	strlcpy(e->last_error, message ? message : "", TTL_ERROR_LEN);
	SpinLockRelease(&e->mutex);
}

/*
 * ttl_stats_forget_others
 *		Remove the counters of this database's policies that no longer
 *		exist (policy ids are never reused within a database).
 */
void
ttl_stats_forget_others(Oid dboid, List *policies)
{
	HASH_SEQ_STATUS seq;
	TtlStatsEntry *e;

	if (TtlStatsHash == NULL)
		return;

	LWLockAcquire(TtlStatsLock, LW_EXCLUSIVE);
	hash_seq_init(&seq, TtlStatsHash);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		bool		keep = false;
		ListCell   *lc;

		if (e->key.dboid != dboid)
			continue;
		foreach(lc, policies)
		{
			if (((TtlPolicy *) lfirst(lc))->id == e->key.policy_id)
			{
				keep = true;
				break;
			}
		}
		if (!keep)
			hash_search(TtlStatsHash, &e->key, HASH_REMOVE, NULL);
	}
	LWLockRelease(TtlStatsLock);
}

/*
 * ttl_stats_may_see
 *		Whether the current user may see a table's error messages and
 *		backlog: members of the owning role, and pg_read_all_stats.  Error
 *		messages can quote row values, so nobody else sees them.
 */
static bool
ttl_stats_may_see(Oid relid)
{
	HeapTuple	tup;
	Oid			owner;

	if (has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		return true;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return false;
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return has_privs_of_role(GetUserId(), owner);
}

PG_FUNCTION_INFO_V1(ttl_index_policy_stats);

/*
 * ttl_index_policy_stats
 *		One row per policy of the current database: counters, and the
 *		backlog read from the first entry of the policy's index.
 */
Datum
ttl_index_policy_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *policies;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();

	InitMaterializedSRF(fcinfo, 0);

	SPI_connect();
	policies = ttl_load_policies(CurrentMemoryContext);

	foreach(lc, policies)
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);
		TtlStatsEntry copy;
		TtlStatsEntry *e = NULL;
		Datum		values[13];
		bool		nulls[13];
		bool		may_see = ttl_stats_may_see(p->relid);
		TimestampTz expires_at;
		int			i = 0;

		memset(nulls, 0, sizeof(nulls));
		memset(&copy, 0, sizeof(copy));
		if (TtlStatsHash != NULL)
		{
			LWLockAcquire(TtlStatsLock, LW_SHARED);
			e = hash_search(TtlStatsHash, &(TtlStatsKey)
							{
								MyDatabaseId, p->id
							}, HASH_FIND, NULL);
			if (e != NULL)
			{
				SpinLockAcquire(&e->mutex);
				memcpy(&copy, e, sizeof(copy));
				SpinLockRelease(&e->mutex);
			}
			LWLockRelease(TtlStatsLock);
		}

		values[i++] = Int32GetDatum(p->id);
		values[i++] = Int64GetDatum(copy.rows_deleted);
		values[i++] = Int64GetDatum(copy.batches);
		values[i++] = Int64GetDatum(copy.passes);
		values[i++] = Int64GetDatum(copy.rows_skipped_locked);
		values[i++] = Int64GetDatum(copy.skipped_locked);
		values[i++] = Int64GetDatum(copy.errors);
		if (copy.last_error_at != 0 && may_see)
			values[i] = CStringGetTextDatum(copy.last_error);
		else
			nulls[i] = true;
		i++;
		if (copy.last_error_at != 0)
			values[i] = TimestampTzGetDatum(copy.last_error_at);
		else
			nulls[i] = true;
		i++;
		if (copy.last_run != 0)
			values[i] = TimestampTzGetDatum(copy.last_run);
		else
			nulls[i] = true;
		i++;
		{
			Interval   *spent = palloc0(sizeof(Interval));

			spent->time = (int64) (copy.time_spent_ms * 1000.0);
			values[i++] = IntervalPGetDatum(spent);
		}

		/* lag and next expiry, from the first entry of the index */
		switch (may_see ? ttl_probe_oldest(p, &expires_at) : TTL_PROBE_UNKNOWN)
		{
			case TTL_PROBE_FOUND:
				{
					Interval   *lag = palloc0(sizeof(Interval));

					if (!TIMESTAMP_NOT_FINITE(expires_at) && expires_at < now)
						lag->time = now - expires_at;
					values[i++] = IntervalPGetDatum(lag);
					if (TIMESTAMP_NOT_FINITE(expires_at))
						nulls[i] = true;
					else
						values[i] = TimestampTzGetDatum(expires_at);
					i++;
					break;
				}
			case TTL_PROBE_EMPTY:
				values[i++] = IntervalPGetDatum(palloc0(sizeof(Interval)));
				nulls[i++] = true;
				break;
			case TTL_PROBE_UNKNOWN:
				nulls[i++] = true;
				nulls[i++] = true;
				break;
		}

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	SPI_finish();
	return (Datum) 0;
}
