/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Per-policy counters in shared memory, the file that keeps them across
 *	  a clean restart, and counting only work that committed.
 *
 * Counters live in a shared hash table keyed by (database, policy id), with
 * room for ttl_index.max_policies entries and never more (the table does
 * not grow into the shared memory the lock table relies on; a policy past
 * the limit is not counted, and a warning says so once per process).
 * Locking, as in pg_stat_statements: the "ttl_index stats" LWLock (shmem.c)
 * is taken shared to find an entry and exclusive only to add or remove
 * one; each entry's counters are updated and read under the entry's
 * spinlock.  Readers copy an entry under the spinlock and build their
 * output after releasing it.
 *
 * Committed work only.  The worker counts a batch after it committed.
 * ttl_runner() works inside its caller's transaction, which may still roll
 * back: while it runs, counting is deferred (ttl_stats_defer); the counts
 * wait in this backend's memory, tagged with the subtransaction level, and
 * reach shared memory when the top transaction commits.  A rolled-back
 * subtransaction (a policy that failed, a ROLLBACK TO SAVEPOINT around the
 * call) takes its counts with it.  Errors are not work: they are counted at
 * once.
 *
 * Persistence, as the cumulative statistics system does it: the postmaster
 * writes the counters to pg_stat/ttl_index.stat when it exits after a clean
 * shutdown (smart or fast: pg_control says "shut down") and reads them back
 * (then removes the file) when it starts.  After a crash or an immediate
 * shutdown, which end in crash recovery, the counters start at zero like
 * every other statistic: they could count batches whose commit was lost.
 *
 * Without shared_preload_libraries there is no shared memory: counting does
 * nothing and the views show zeros.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xact.h"
#include "catalog/pg_control.h"
#include "common/controldata_utils.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "ttl_index.h"
#include "shared/shared.h"
#include "shared/shmem.h"

#define TTL_STATS_FILE	PGSTAT_STAT_PERMANENT_DIRECTORY "/ttl_index.stat"
#define TTL_STATS_FILE_TMP	TTL_STATS_FILE ".tmp"
/* changes whenever the layout of TtlStatsRecord changes */
#define TTL_STATS_FILE_MAGIC	0x544c5405

/* one entry in the stats file */
typedef struct TtlStatsRecord
{
	TtlStatsKey key;
	TtlStatsCounters c;
} TtlStatsRecord;

/* counts waiting for their transaction to commit (ttl_runner) */
typedef struct TtlPendingCount
{
	int			nestlevel;		/* subtransaction level that counted it */
	Oid			dboid;
	int32		policy_id;
	TtlBatchResult result;		/* or a pass: */
	bool		is_pass;
	int64		rows;			/* a pass: rows it took */
	int64		left;			/* a pass: expired rows it left */
	int64		locked;			/* a pass: locked rows it skipped */
} TtlPendingCount;

static bool Deferring = false;
static List *Pending = NIL;		/* in TopTransactionContext */

static void ttl_stats_load(void);
static void ttl_stats_save(int code, Datum arg);

/*
 * ttl_stats_init
 *		In the postmaster, once the hash exists: read what the last clean
 *		shutdown saved, and save at exit.
 */
void
ttl_stats_init(void)
{
	ttl_stats_load();
	on_shmem_exit(ttl_stats_save, (Datum) 0);
}

/*
 * ttl_stats_find
 *		Take the stats lock and look up a policy's entry: shared to read
 *		one, exclusive to add one (add), which it does when the policy has
 *		none and the table has room, with its counters zeroed.  Returns the
 *		entry, or NULL; the lock stays taken either way.  The caller has
 *		checked that there is shared memory (the hash).
 */
static TtlStatsEntry *
ttl_stats_find(HTAB *hash, Oid dboid, int32 policy_id, bool add)
{
	TtlStatsKey key;
	TtlStatsEntry *entry;
	bool		found;

	memset(&key, 0, sizeof(key));
	key.dboid = dboid;
	key.policy_id = policy_id;
	LWLockAcquire(ttl_shmem_stats_lock(), add ? LW_EXCLUSIVE : LW_SHARED);
	entry = hash_search(hash, &key, HASH_FIND, NULL);
	if (entry != NULL || !add || hash_get_num_entries(hash) >= ttl_max_policies)
		return entry;
	entry = hash_search(hash, &key, HASH_ENTER_NULL, &found);
	if (entry != NULL && !found)
	{
		memset(&entry->c, 0, sizeof(TtlStatsCounters));
		entry->prefix_relid = InvalidOid;
		memset(&entry->health, 0, sizeof(TtlHealth));
		SpinLockInit(&entry->mutex);
	}
	return entry;
}

/*
 * ttl_stats_entry
 *		The entry of a policy, created on first use, returned with the stats
 *		lock held: the caller updates it under its spinlock and then
 *		releases the lock, so that ttl_stats_forget_others() cannot free the
 *		entry meanwhile.  NULL, with no lock held, when there is no shared
 *		memory or the table is full.
 */
static TtlStatsEntry *
ttl_stats_entry(Oid dboid, int32 policy_id)
{
	static bool warned = false;
	HTAB	   *hash = ttl_shmem_stats_hash();
	LWLock	   *lock = ttl_shmem_stats_lock();
	TtlStatsEntry *entry;

	if (hash == NULL)
		return NULL;

	/* found under the shared lock; the exclusive one only to add it */
	entry = ttl_stats_find(hash, dboid, policy_id, false);
	if (entry != NULL)
		return entry;
	LWLockRelease(lock);
	entry = ttl_stats_find(hash, dboid, policy_id, true);
	if (entry != NULL)
		return entry;
	LWLockRelease(lock);

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
			rec.c.last_error[sizeof(rec.c.last_error) - 1] = '\0';
			entry->c = rec.c;
			LWLockRelease(ttl_shmem_stats_lock());
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
 * ttl_stats_clean_exit
 *		At postmaster exit (code as on_shmem_exit passes it): whether what
 *		shared memory holds may be saved to a file.  Not after a crash
 *		(code != 0: shared memory may be corrupt) nor after an immediate
 *		shutdown (the control file does not say "shut down"), which both
 *		end in crash recovery (see the top of the file).  The rule of the
 *		counters, and of the Citus nodes' last known counts
 *		(citus_nodes.c).
 */
bool
ttl_stats_clean_exit(int code)
{
	ControlFileData *control;
	bool		crc_ok;

	if (code != 0)
		return false;
	/* only after a clean shutdown: the checkpointer has written the state */
	control = get_controlfile(DataDir, &crc_ok);
	return crc_ok && (control->state == DB_SHUTDOWNED ||
					  control->state == DB_SHUTDOWNED_IN_RECOVERY);
}

/*
 * ttl_stats_save
 *		At postmaster exit, after a clean shutdown (ttl_stats_clean_exit),
 *		write the counters to the stats file (through a temporary file and
 *		a durable rename).
 */
static void
ttl_stats_save(int code, Datum arg)
{
	HTAB	   *hash = ttl_shmem_stats_hash();
	FILE	   *file;
	HASH_SEQ_STATUS seq;
	TtlStatsEntry *e;
	uint32		magic = TTL_STATS_FILE_MAGIC;
	int32		count;

	if (hash == NULL || !ttl_stats_clean_exit(code))
		return;

	file = AllocateFile(TTL_STATS_FILE_TMP, PG_BINARY_W);
	if (file == NULL)
		goto error;
	count = hash_get_num_entries(hash);
	if (fwrite(&magic, sizeof(magic), 1, file) != 1 ||
		fwrite(&count, sizeof(count), 1, file) != 1)
		goto error;
	hash_seq_init(&seq, hash);
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
 * ttl_stats_defer
 *		While on, counts of work wait for the transaction to commit (see
 *		the top of the file).
 */
void
ttl_stats_defer(bool defer)
{
	Deferring = defer;
}

/*
 * ttl_stats_pend
 *		Keep a count until the transaction commits.
 */
static void
ttl_stats_pend(Oid dboid, TtlPolicy *policy, TtlBatchResult *result,
			   bool is_pass, int64 rows, int64 left, int64 locked)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	TtlPendingCount *p = palloc0(sizeof(TtlPendingCount));

	p->nestlevel = GetCurrentTransactionNestLevel();
	p->dboid = dboid;
	p->policy_id = policy->id;
	if (result)
	{
		p->result = *result;
		p->result.tids = NULL;
		p->result.xmins = NULL;
		p->result.capped_rows = NULL;
	}
	p->is_pass = is_pass;
	p->rows = rows;
	p->left = left;
	p->locked = locked;
	Pending = lappend(Pending, p);
	MemoryContextSwitchTo(old);
}

/*
 * ttl_stats_add_batch
 *		Add one batch to a policy's counters in shared memory.
 */
static void
ttl_stats_add_batch(Oid dboid, int32 policy_id, TtlBatchResult *result)
{
	TtlStatsEntry *e;
	TimestampTz now = GetCurrentTimestamp();

	/* a table that is gone or has no index was not visited at all */
	if (result->outcome == TTL_BATCH_GONE || result->outcome == TTL_BATCH_NO_INDEX)
		return;
	e = ttl_stats_entry(dboid, policy_id);
	if (e == NULL)
		return;
	SpinLockAcquire(&e->mutex);
	if (result->outcome == TTL_BATCH_LOCKED && result->deleted == 0 &&
		result->skipped_locked == 0 && result->left == 0)
		e->c.skipped_locked++;
	else
		e->c.batches++;
	/*
	 * rows_deleted: rows gone from the table, archived and capped ones
	 * included
	 */
	e->c.rows_deleted += result->deleted - result->soft_deleted - result->anonymized;
	e->c.rows_archived += result->archived;
	e->c.rows_soft_deleted += result->soft_deleted;
	e->c.rows_anonymized += result->anonymized;
	e->c.rows_capped += result->capped;
	e->c.partitions_dropped += result->partitions_dropped;
	e->c.rows_skipped_locked += result->skipped_locked;
	e->c.time_spent_ms += result->elapsed_ms;
	e->c.last_run = now;
	SpinLockRelease(&e->mutex);
	LWLockRelease(ttl_shmem_stats_lock());
}

/*
 * ttl_stats_add_pass
 *		Count a completed pass, the rows it left in place and the locked
 *		rows it skipped (rows_locked: rows, where rows_skipped_locked counts
 *		every batch's skips).
 */
static void
ttl_stats_add_pass(Oid dboid, int32 policy_id, int64 rows, int64 left,
				   int64 locked)
{
	TtlStatsEntry *e = ttl_stats_entry(dboid, policy_id);

	if (e == NULL)
		return;
	SpinLockAcquire(&e->mutex);
	e->c.passes++;
	e->c.last_pass_rows = rows;
	e->c.rows_held = left;
	e->c.rows_locked = locked;
	SpinLockRelease(&e->mutex);
	LWLockRelease(ttl_shmem_stats_lock());
}

/*
 * ttl_stats_count_batch
 *		Count one batch: now, or at commit while deferring.
 */
void
ttl_stats_count_batch(Oid dboid, TtlPolicy *policy, TtlBatchResult *result)
{
	if (Deferring)
		ttl_stats_pend(dboid, policy, result, false, 0, 0, 0);
	else
		ttl_stats_add_batch(dboid, policy->id, result);
}

/*
 * ttl_stats_count_pass
 *		Count a completed pass; `rows` is how many rows it deleted, archived
 *		or soft-deleted, `left` how many expired rows it could not delete
 *		(rows_held).
 */
void
ttl_stats_count_pass(Oid dboid, TtlPolicy *policy, int64 rows, int64 left,
					 int64 locked)
{
	if (Deferring)
		ttl_stats_pend(dboid, policy, NULL, true, rows, left, locked);
	else
		ttl_stats_add_pass(dboid, policy->id, rows, left, locked);
}

/*
 * ttl_stats_set_rates
 *		The worker's rates for a policy, after a pass (at once: gauges, not
 *		work that could roll back).
 */
void
ttl_stats_set_rates(Oid dboid, TtlPolicy *policy, double expiry_rate,
					double delete_rate, bool falling_behind)
{
	TtlStatsEntry *e = ttl_stats_entry(dboid, policy->id);

	if (e == NULL)
		return;
	SpinLockAcquire(&e->mutex);
	e->c.expiry_rate = expiry_rate;
	e->c.delete_rate = delete_rate;
	e->c.falling_behind = falling_behind;
	SpinLockRelease(&e->mutex);
	LWLockRelease(ttl_shmem_stats_lock());
}

/*
 * ttl_stats_count_locked
 *		Count a visit that found the table or its rows locked (at once: it
 *		did no work that could roll back).
 */
void
ttl_stats_count_locked(Oid dboid, TtlPolicy *policy)
{
	TtlBatchResult locked;

	memset(&locked, 0, sizeof(locked));
	locked.outcome = TTL_BATCH_LOCKED;
	ttl_stats_add_batch(dboid, policy->id, &locked);
}

/*
 * ttl_stats_count_rows_locked
 *		Count locked rows a batch stepped over before it failed on others,
 *		which its pass meets no more (pass.c; at once: the worker's only,
 *		never deferred).
 */
void
ttl_stats_count_rows_locked(Oid dboid, TtlPolicy *policy, int64 rows)
{
	TtlStatsEntry *e;

	Assert(!Deferring);
	e = ttl_stats_entry(dboid, policy->id);
	if (e == NULL)
		return;
	SpinLockAcquire(&e->mutex);
	e->c.rows_skipped_locked += rows;
	SpinLockRelease(&e->mutex);
	LWLockRelease(ttl_shmem_stats_lock());
}

/*
 * ttl_stats_count_error
 *		Count a failure and remember its SQLSTATE and message (at once: an
 *		error is not work that could roll back).
 */
void
ttl_stats_count_error(Oid dboid, TtlPolicy *policy, int sqlerrcode,
					  const char *message)
{
	TtlStatsEntry *e = ttl_stats_entry(dboid, policy->id);
	TimestampTz now = GetCurrentTimestamp();

	if (e == NULL)
		return;
	SpinLockAcquire(&e->mutex);
	e->c.errors++;
	e->c.last_error_at = now;
	e->c.last_error_code = sqlerrcode;
	ttl_clip_copy(e->c.last_error, message, sizeof(e->c.last_error));
	SpinLockRelease(&e->mutex);
	LWLockRelease(ttl_shmem_stats_lock());
}

/*
 * ttl_stats_at_subxact_end
 *		A subtransaction ends: on commit its counts belong to its parent, on
 *		abort they go.
 *
 * Counts are appended at the current nesting level, and every deeper
 * subtransaction has ended by then, so the levels along the list never go
 * down: the ending subtransaction's counts are the list's tail.  Only the
 * tail is read (ttl_runner() ends a subtransaction per policy: reading the
 * whole list each time grew with the square of the policies).
 */
void
ttl_stats_at_subxact_end(bool commit)
{
	int			level = GetCurrentTransactionNestLevel();
	int			i;

	for (i = list_length(Pending) - 1; i >= 0; i--)
	{
		TtlPendingCount *p = (TtlPendingCount *) list_nth(Pending, i);

		if (p->nestlevel < level)
			break;
		if (commit)
			p->nestlevel = level - 1;
	}
	if (!commit)
		Pending = list_truncate(Pending, i + 1);
}

/*
 * ttl_stats_at_xact_end
 *		The top transaction ends: on commit, the pending counts reach
 *		shared memory.
 */
void
ttl_stats_at_xact_end(bool commit)
{
	ListCell   *lc;

	if (commit)
	{
		foreach(lc, Pending)
		{
			TtlPendingCount *p = (TtlPendingCount *) lfirst(lc);

			if (p->is_pass)
				ttl_stats_add_pass(p->dboid, p->policy_id, p->rows, p->left,
								   p->locked);
			else
				ttl_stats_add_batch(p->dboid, p->policy_id, &p->result);
		}
	}
	/* the list lived in TopTransactionContext, which goes now */
	Pending = NIL;
	Deferring = false;
}

/* qsort and bsearch comparator of policy ids */
static int
ttl_stats_id_cmp(const void *a, const void *b)
{
	int32		ia = *(const int32 *) a;
	int32		ib = *(const int32 *) b;

	return (ia > ib) - (ia < ib);
}

/*
 * ttl_stats_forget_others
 *		Remove the counters of a database's policies that are not in the
 *		list (all of them for NIL: the extension or the database is gone,
 *		and a new CREATE EXTENSION starts its policy ids at 1 again).
 *
 *		The worker calls this at every reload: the entries to remove are
 *		found under the shared lock, with the list's ids sorted for a binary
 *		search (ten thousand policies compared with each other took a
 *		second, under the exclusive lock every counter update waits for),
 *		and the exclusive lock is taken only when there are some.
 */
void
ttl_stats_forget_others(Oid dboid, List *policies)
{
	HTAB	   *hash = ttl_shmem_stats_hash();
	LWLock	   *lock = ttl_shmem_stats_lock();
	HASH_SEQ_STATUS seq;
	TtlStatsEntry *e;
	int			nids = list_length(policies);
	int32	   *ids;
	List	   *gone = NIL;
	ListCell   *lc;
	int			i = 0;

	if (hash == NULL)
		return;

	ids = palloc(Max(nids, 1) * sizeof(int32));
	foreach(lc, policies)
		ids[i++] = ((TtlPolicy *) lfirst(lc))->id;
	qsort(ids, nids, sizeof(int32), ttl_stats_id_cmp);

	LWLockAcquire(lock, LW_SHARED);
	hash_seq_init(&seq, hash);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		TtlStatsKey *key;

		if (e->key.dboid != dboid ||
			bsearch(&e->key.policy_id, ids, nids, sizeof(int32),
					ttl_stats_id_cmp) != NULL)
			continue;
		key = palloc(sizeof(TtlStatsKey));
		*key = e->key;
		gone = lappend(gone, key);
	}
	LWLockRelease(lock);

	if (gone != NIL)
	{
		LWLockAcquire(lock, LW_EXCLUSIVE);
		foreach(lc, gone)
			hash_search(hash, lfirst(lc), HASH_REMOVE, NULL);
		LWLockRelease(lock);
	}
	list_free_deep(gone);
	pfree(ids);
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

	foreach(lc, policy_ids)
	{
		TtlStatsEntry *e = ttl_stats_entry(dboid, lfirst_int(lc));

		if (e == NULL)
			continue;
		SpinLockAcquire(&e->mutex);
		memset(&e->c, 0, sizeof(TtlStatsCounters));
		e->c.stats_reset = now;
		SpinLockRelease(&e->mutex);
		LWLockRelease(ttl_shmem_stats_lock());
	}
}

/*
 * ttl_stats_publish_prefix
 *		The worker's known-dead prefix of one target of a policy (skip.c),
 *		once the batch that found it committed, for the views' probes to
 *		start past (probe.c).  valid = false withdraws the prefix of that
 *		target.  Only by-value keys are published.
 */
void
ttl_stats_publish_prefix(Oid dboid, int32 policy_id, Oid relid, Oid indexoid,
						 bool valid, Datum key, uint32 writes)
{
	TtlStatsEntry *e = ttl_stats_entry(dboid, policy_id);

	if (e == NULL)
		return;
	SpinLockAcquire(&e->mutex);
	if (valid)
	{
		e->prefix_relid = relid;
		e->prefix_indexoid = indexoid;
		e->prefix_key = key;
		e->prefix_writes = writes;
	}
	else if (e->prefix_relid == relid)
		e->prefix_relid = InvalidOid;
	SpinLockRelease(&e->mutex);
	LWLockRelease(ttl_shmem_stats_lock());
}

/*
 * ttl_stats_prefix
 *		The published known-dead prefix of a policy's target in that index:
 *		true with *key and *writes (the table's write counter it holds for)
 *		set, or false.
 */
bool
ttl_stats_prefix(Oid dboid, int32 policy_id, Oid relid, Oid indexoid,
				 Datum *key, uint32 *writes)
{
	HTAB	   *hash = ttl_shmem_stats_hash();
	TtlStatsEntry *e;
	bool		found = false;

	if (hash == NULL)
		return false;
	e = ttl_stats_find(hash, dboid, policy_id, false);
	if (e != NULL)
	{
		SpinLockAcquire(&e->mutex);
		if (OidIsValid(relid) && e->prefix_relid == relid &&
			e->prefix_indexoid == indexoid)
		{
			*key = e->prefix_key;
			*writes = e->prefix_writes;
			found = true;
		}
		SpinLockRelease(&e->mutex);
	}
	LWLockRelease(ttl_shmem_stats_lock());
	return found;
}

/*
 * ttl_stats_copy
 *		Copy, under its spinlock, what a policy's entry holds: its counters
 *		into *c, its health into *h (either may be NULL).  False, with
 *		nothing copied, when it has none or there is no shared memory.
 */
static bool
ttl_stats_copy(Oid dboid, int32 policy_id, TtlStatsCounters *c, TtlHealth *h)
{
	HTAB	   *hash = ttl_shmem_stats_hash();
	TtlStatsEntry *e;

	if (hash == NULL)
		return false;
	e = ttl_stats_find(hash, dboid, policy_id, false);
	if (e != NULL)
	{
		SpinLockAcquire(&e->mutex);
		if (c != NULL)
			*c = e->c;
		if (h != NULL)
			*h = e->health;
		SpinLockRelease(&e->mutex);
	}
	LWLockRelease(ttl_shmem_stats_lock());
	return e != NULL;
}

/*
 * ttl_stats_read
 *		A copy of a policy's counters; false (and zeros) when it has none.
 */
bool
ttl_stats_read(Oid dboid, int32 policy_id, TtlStatsCounters *c)
{
	memset(c, 0, sizeof(TtlStatsCounters));
	return ttl_stats_copy(dboid, policy_id, c, NULL);
}

/*
 * ttl_stats_publish_health
 *		The worker's account of a policy's backlog after a pass (see
 *		TtlHealth).
 */
void
ttl_stats_publish_health(Oid dboid, int32 policy_id, const TtlHealth *h)
{
	TtlStatsEntry *e = ttl_stats_entry(dboid, policy_id);

	if (e == NULL)
		return;
	SpinLockAcquire(&e->mutex);
	e->health = *h;
	e->health.known = true;
	SpinLockRelease(&e->mutex);
	LWLockRelease(ttl_shmem_stats_lock());
}

/*
 * ttl_stats_health
 *		The last account published for a policy: false when there is none
 *		(no worker has finished a pass of it since the server started).
 */
bool
ttl_stats_health(Oid dboid, int32 policy_id, TtlHealth *h)
{
	memset(h, 0, sizeof(TtlHealth));
	(void) ttl_stats_copy(dboid, policy_id, NULL, h);
	return h->known;
}
