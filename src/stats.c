/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Per-policy counters in shared memory, the file that keeps them across
 *	  a clean restart, ttl_index_stats_reset(), and ttl_index_policy_stats(),
 *	  the set-returning function behind the ttl_index_stats view.
 *
 * Counters live in a shared hash table keyed by (database, policy id), with
 * room for ttl_index.max_policies entries.  Locking, as in
 * pg_stat_statements: the table's LWLock is taken shared to find an entry
 * and exclusive only to add or remove one; each entry's counters are
 * updated and read under the entry's spinlock.  Readers copy an entry under
 * the spinlock and build their output after releasing it.
 *
 * Persistence, as the cumulative statistics system does it: the postmaster
 * writes the counters to pg_stat/ttl_index.stat when it exits after a clean
 * shutdown (smart or fast: pg_control says "shut down") and reads them back
 * (then removes the file) when it starts.  After a crash or an immediate
 * shutdown, which end in crash recovery, the counters start at zero like
 * every other statistic: they could count batches whose commit was lost.
 *
 * Without shared_preload_libraries there is no shared memory: counting does
 * nothing and the view shows zeros, but the backlog columns (lag,
 * expired_estimate, next_expiry) still work since they are read from the
 * index and the planner statistics at query time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_control.h"
#include "common/controldata_utils.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "ttl_index.h"

#define TTL_ERROR_LEN	256
#define TTL_STATS_FILE	PGSTAT_STAT_PERMANENT_DIRECTORY "/ttl_index.stat"
#define TTL_STATS_FILE_TMP	TTL_STATS_FILE ".tmp"
/* changes whenever the layout of TtlStatsRecord changes */
#define TTL_STATS_FILE_MAGIC	0x544c5402

typedef struct TtlStatsKey
{
	Oid			dboid;
	int32		policy_id;
} TtlStatsKey;

typedef struct TtlStatsCounters
{
	int64		rows_deleted;
	int64		batches;
	int64		passes;
	int64		rows_skipped_locked;
	int64		skipped_locked;
	int64		errors;
	int64		rows_archived;
	int64		rows_soft_deleted;
	int64		partitions_dropped;
	double		time_spent_ms;
	TimestampTz last_run;
	TimestampTz last_error_at;
	TimestampTz stats_reset;
	char		last_error[TTL_ERROR_LEN];
} TtlStatsCounters;

typedef struct TtlStatsEntry
{
	TtlStatsKey key;			/* hash key: must be first */
	slock_t		mutex;			/* protects the counters */
	TtlStatsCounters c;
} TtlStatsEntry;

/* one entry in the stats file */
typedef struct TtlStatsRecord
{
	TtlStatsKey key;
	TtlStatsCounters c;
} TtlStatsRecord;

static HTAB *TtlStatsHash = NULL;
static LWLock *TtlStatsLock = NULL;

static TtlStatsEntry *ttl_stats_entry(Oid dboid, int32 policy_id);
static void ttl_stats_load(void);
static void ttl_stats_save(int code, Datum arg);

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

	/* in the postmaster: read what the last clean shutdown saved */
	if (!IsUnderPostmaster)
	{
		ttl_stats_load();
		on_shmem_exit(ttl_stats_save, (Datum) 0);
	}
}

/*
 * ttl_stats_load
 *		Fill the counters from the stats file, then remove it, so that a
 *		crash never brings back counters older than the crash.  A missing,
 *		short or foreign file is not an error: the counters start at zero.
 */
static void
ttl_stats_load(void)
{
	FILE	   *file;
	uint32		magic;
	int32		count;

	file = AllocateFile(TTL_STATS_FILE, PG_BINARY_R);
	if (file == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", TTL_STATS_FILE)));
		return;
	}
	if (fread(&magic, sizeof(magic), 1, file) == 1 &&
		magic == TTL_STATS_FILE_MAGIC &&
		fread(&count, sizeof(count), 1, file) == 1)
	{
		for (int i = 0; i < count; i++)
		{
			TtlStatsRecord rec;
			TtlStatsEntry *entry;

			if (fread(&rec, sizeof(rec), 1, file) != 1)
				break;
			entry = ttl_stats_entry(rec.key.dboid, rec.key.policy_id);
			if (entry == NULL)
				break;
			rec.c.last_error[TTL_ERROR_LEN - 1] = '\0';
			entry->c = rec.c;
			LWLockRelease(TtlStatsLock);
		}
	}
	else
		ereport(LOG,
				(errmsg("ignoring file \"%s\": not a ttl_index stats file of this version",
						TTL_STATS_FILE)));
	FreeFile(file);
	unlink(TTL_STATS_FILE);
}

/*
 * ttl_stats_save
 *		At postmaster exit, write the counters to the stats file (through a
 *		temporary file and a durable rename).  Not after a crash (code != 0:
 *		shared memory may be corrupt) nor after an immediate shutdown (the
 *		control file does not say "shut down").
 */
static void
ttl_stats_save(int code, Datum arg)
{
	FILE	   *file;
	HASH_SEQ_STATUS seq;
	TtlStatsEntry *e;
	uint32		magic = TTL_STATS_FILE_MAGIC;
	int32		count;
	ControlFileData *control;
	bool		crc_ok;

	if (code != 0 || TtlStatsHash == NULL)
		return;

	/* only after a clean shutdown: the checkpointer has written the state */
	control = get_controlfile(DataDir, &crc_ok);
	if (!crc_ok || (control->state != DB_SHUTDOWNED &&
					control->state != DB_SHUTDOWNED_IN_RECOVERY))
		return;

	file = AllocateFile(TTL_STATS_FILE_TMP, PG_BINARY_W);
	if (file == NULL)
		goto error;
	count = hash_get_num_entries(TtlStatsHash);
	if (fwrite(&magic, sizeof(magic), 1, file) != 1 ||
		fwrite(&count, sizeof(count), 1, file) != 1)
		goto error;
	hash_seq_init(&seq, TtlStatsHash);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		TtlStatsRecord rec;

		memset(&rec, 0, sizeof(rec));
		rec.key = e->key;
		rec.c = e->c;
		if (fwrite(&rec, sizeof(rec), 1, file) != 1)
		{
			hash_seq_term(&seq);
			goto error;
		}
	}
	if (FreeFile(file))
	{
		file = NULL;
		goto error;
	}
	(void) durable_rename(TTL_STATS_FILE_TMP, TTL_STATS_FILE, LOG);
	return;

error:
	ereport(LOG,
			(errcode_for_file_access(),
			 errmsg("could not write file \"%s\": %m", TTL_STATS_FILE_TMP)));
	if (file)
		FreeFile(file);
	unlink(TTL_STATS_FILE_TMP);
}

/*
 * ttl_stats_entry
 *		The entry of a policy, created on first use, returned with
 *		TtlStatsLock held: the caller updates it under its spinlock and then
 *		releases TtlStatsLock, so that ttl_stats_forget_others() cannot free
 *		the entry meanwhile.  NULL, with no lock held, when there is no
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
	if (entry != NULL)
		return entry;
	LWLockRelease(TtlStatsLock);

	LWLockAcquire(TtlStatsLock, LW_EXCLUSIVE);
	entry = hash_search(TtlStatsHash, &key, HASH_ENTER_NULL, &found);
	if (entry != NULL)
	{
		if (!found)
		{
			memset(&entry->c, 0, sizeof(TtlStatsCounters));
			SpinLockInit(&entry->mutex);
		}
		return entry;
	}
	LWLockRelease(TtlStatsLock);

	if (!warned)
	{
		ereport(WARNING,
				(errmsg("ttl_index: more policies than ttl_index.max_policies (%d); some are not counted in ttl_index_stats",
						ttl_max_policies),
				 errhint("Raise ttl_index.max_policies and restart the server.")));
		warned = true;
	}
	return NULL;
}

/*
 * ttl_stats_count_batch
 *		Add one batch to a policy's counters.
 */
void
ttl_stats_count_batch(Oid dboid, TtlPolicy *policy, TtlBatchResult *result)
{
	TtlStatsEntry *e;
	TimestampTz now = GetCurrentTimestamp();

	/* a table that is gone or has no index was not visited at all */
	if (result->outcome == TTL_BATCH_GONE || result->outcome == TTL_BATCH_NO_INDEX)
		return;
	e = ttl_stats_entry(dboid, policy->id);
	if (e == NULL)
		return;
	SpinLockAcquire(&e->mutex);
	if (result->outcome == TTL_BATCH_LOCKED && result->deleted == 0 &&
		result->skipped_locked == 0)
		e->c.skipped_locked++;
	else
		e->c.batches++;
	/* rows_deleted: rows gone from the table, archived ones included */
	e->c.rows_deleted += result->deleted - result->soft_deleted;
	e->c.rows_archived += result->archived;
	e->c.rows_soft_deleted += result->soft_deleted;
	e->c.partitions_dropped += result->partitions_dropped;
	e->c.rows_skipped_locked += result->skipped_locked;
	e->c.time_spent_ms += result->elapsed_ms;
	e->c.last_run = now;
	SpinLockRelease(&e->mutex);
	LWLockRelease(TtlStatsLock);
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
	e->c.passes++;
	SpinLockRelease(&e->mutex);
	LWLockRelease(TtlStatsLock);
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
	e->c.errors++;
	e->c.last_error_at = now;
	strlcpy(e->c.last_error, message ? message : "", TTL_ERROR_LEN);
	SpinLockRelease(&e->mutex);
	LWLockRelease(TtlStatsLock);
}

/*
 * ttl_stats_forget_others
 *		Remove the counters of a database's policies that are not in the
 *		list (all of them for NIL: the extension or the database is gone,
 *		and a new CREATE EXTENSION starts its policy ids at 1 again).
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

/*
 * ttl_stats_reset
 *		Zero the counters of the given policies of a database and stamp the
 *		reset time.
 */
void
ttl_stats_reset(Oid dboid, List *policy_ids)
{
	TimestampTz now = GetCurrentTimestamp();
	ListCell   *lc;

	if (TtlStatsHash == NULL)
		return;

	foreach(lc, policy_ids)
	{
		TtlStatsEntry *e = ttl_stats_entry(dboid, lfirst_int(lc));

		if (e == NULL)
			continue;
		SpinLockAcquire(&e->mutex);
		memset(&e->c, 0, sizeof(TtlStatsCounters));
		e->c.stats_reset = now;
		SpinLockRelease(&e->mutex);
		LWLockRelease(TtlStatsLock);
	}
}

PG_FUNCTION_INFO_V1(ttl_index_stats_reset);

/*
 * ttl_index_stats_reset
 *		SQL: zero the counters of the current database's policies, or of the
 *		policies of one table.  Who may call it is decided by EXECUTE
 *		privilege (revoked from PUBLIC, as for pg_stat_reset()).
 */
Datum
ttl_index_stats_reset(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	List	   *policies;
	List	   *ids = NIL;
	ListCell   *lc;

	SPI_connect();
	policies = ttl_load_policies(CurrentMemoryContext);
	foreach(lc, policies)
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);

		if (!OidIsValid(relid) || p->relid == relid)
			ids = lappend_int(ids, p->id);
	}
	/* before SPI_finish(): the list lives in SPI's memory */
	ttl_stats_reset(MyDatabaseId, ids);
	SPI_finish();
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(ttl_index_policy_stats);

#define TTL_STATS_COLS	18
#define TTL_STATS_COLS_1_1	15
#define TTL_STATS_COLS_1_0	13

/*
 * ttl_index_policy_stats
 *		One row per policy of the current database: counters, and the
 *		backlog read from the first entry of the policy's index and
 *		estimated from the planner statistics.
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
		TtlStatsCounters c;
		Datum		values[TTL_STATS_COLS];
		bool		nulls[TTL_STATS_COLS];
		bool		may_see = ttl_stats_may_see(p->relid);
		TimestampTz expires_at;
		double		estimate;
		int			i = 0;

		memset(nulls, 0, sizeof(nulls));
		memset(&c, 0, sizeof(c));
		if (TtlStatsHash != NULL)
		{
			TtlStatsEntry *e;

			LWLockAcquire(TtlStatsLock, LW_SHARED);
			e = hash_search(TtlStatsHash, &(TtlStatsKey)
							{
								MyDatabaseId, p->id
							}, HASH_FIND, NULL);
			if (e != NULL)
			{
				SpinLockAcquire(&e->mutex);
				c = e->c;
				SpinLockRelease(&e->mutex);
			}
			LWLockRelease(TtlStatsLock);
		}

		values[i++] = Int32GetDatum(p->id);
		values[i++] = Int64GetDatum(c.rows_deleted);
		values[i++] = Int64GetDatum(c.batches);
		values[i++] = Int64GetDatum(c.passes);
		values[i++] = Int64GetDatum(c.rows_skipped_locked);
		values[i++] = Int64GetDatum(c.skipped_locked);
		values[i++] = Int64GetDatum(c.errors);
		if (c.last_error_at != 0 && may_see)
			values[i] = CStringGetTextDatum(c.last_error);
		else
			nulls[i] = true;
		i++;
		if (c.last_error_at != 0)
			values[i] = TimestampTzGetDatum(c.last_error_at);
		else
			nulls[i] = true;
		i++;
		if (c.last_run != 0)
			values[i] = TimestampTzGetDatum(c.last_run);
		else
			nulls[i] = true;
		i++;
		{
			Interval   *spent = palloc0(sizeof(Interval));

			spent->time = (int64) (c.time_spent_ms * 1000.0);
			values[i++] = IntervalPGetDatum(spent);
		}

		/*
		 * Lag and next expiry from the first entry of the index; the count
		 * of expired rows from the statistics, corrected by what the index
		 * shows (see backlog.c).
		 */
		switch (may_see ? ttl_probe_oldest(p, &expires_at) : TTL_PROBE_UNKNOWN)
		{
			case TTL_PROBE_FOUND:
				{
					Interval   *lag = palloc0(sizeof(Interval));
					bool		expired = !TIMESTAMP_IS_NOEND(expires_at) &&
						expires_at < now;

					if (expired && !TIMESTAMP_NOT_FINITE(expires_at))
						lag->time = now - expires_at;
					values[i++] = IntervalPGetDatum(lag);
					if (!expired)
						values[i++] = Int64GetDatum(0);
					else if (ttl_backlog_estimate(p, now, &estimate))
						values[i++] = Int64GetDatum(Max((int64) (estimate + 0.5), 1));
					else
						nulls[i++] = true;
					if (TIMESTAMP_NOT_FINITE(expires_at))
						nulls[i] = true;
					else
						values[i] = TimestampTzGetDatum(expires_at);
					i++;
					break;
				}
			case TTL_PROBE_EMPTY:
				values[i++] = IntervalPGetDatum(palloc0(sizeof(Interval)));
				values[i++] = Int64GetDatum(0);
				nulls[i++] = true;
				break;
			case TTL_PROBE_UNKNOWN:
				nulls[i++] = true;
				nulls[i++] = true;
				nulls[i++] = true;
				break;
		}
		if (c.stats_reset != 0)
			values[i] = TimestampTzGetDatum(c.stats_reset);
		else
			nulls[i] = true;
		i++;
		values[i++] = Int64GetDatum(c.rows_archived);
		values[i++] = Int64GetDatum(c.rows_soft_deleted);
		values[i++] = Int64GetDatum(c.partitions_dropped);
		Assert(i == TTL_STATS_COLS);

		/*
		 * Between installing a newer library and ALTER EXTENSION UPDATE, the
		 * function of an older version asks for fewer columns.  1.1 asks for
		 * the first 15 (the tuple is formed from the leading values); 1.0
		 * for 13, without expired_estimate (12) and stats_reset (14).
		 */
		if (rsinfo->setDesc->natts == TTL_STATS_COLS_1_0)
		{
			values[12] = values[13];
			nulls[12] = nulls[13];
		}
		else if (rsinfo->setDesc->natts != TTL_STATS_COLS &&
				 rsinfo->setDesc->natts != TTL_STATS_COLS_1_1)
			elog(ERROR, "ttl_index_policy_stats: unexpected number of result columns %d",
				 rsinfo->setDesc->natts);

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	SPI_finish();
	return (Datum) 0;
}
