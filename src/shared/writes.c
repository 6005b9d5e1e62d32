/*-------------------------------------------------------------------------
 *
 * writes.c
 *	  Which tables have been written: a counter per table (per hash bucket
 *	  of tables, in shared memory) bumped when a transaction that inserted
 *	  into or updated the table commits.
 *
 * The worker does not look at an idle policy again before its next known
 * expiry unless its table may have gained rows (worker.c).  The cumulative
 * statistics cannot say so in time: a session reports its counts when it
 * goes idle, so a procedure or DO block that commits as it goes reports
 * only at its end, a COPY when it is over, and a session with track_counts
 * off never.  So every backend notes the tables its statements insert into
 * or update (hooks.c: the executor's end, COPY FROM, and the partitions a
 * statement routed rows to, with their root), and when its transaction
 * commits (each COMMIT of a procedure included) it bumps their counters.
 * A transaction bumps its tables' counters twice: just before it becomes
 * visible (pre-commit, or when it is prepared), and just after it became
 * visible (commit).  The worker needs the second: a counter that did not
 * change since the worker's last look means no row was added that its
 * snapshot could not see then.  The views need the first: a counter that
 * did not change since the worker checked its known-dead prefix means no
 * row a view's snapshot can see was added below it since (probe.c).  Rows
 * written by a subtransaction that rolled back are noted anyway, and a
 * transaction that fails after its pre-commit bump has bumped needlessly:
 * a needless look, never a missed one.
 *
 * The counters are uint32 atomics in 8192 buckets: two tables sharing a
 * bucket only cause needless looks: two atomic increments per table per
 * committing transaction.  Logical replication's apply worker writes
 * without the executor's hooks; the cumulative statistics, which it reports
 * as it goes, cover it for the worker, and the views do not use a prefix in
 * a database with a subscription.
 *
 * A prepared transaction's tables are kept in shared memory from its
 * PREPARE to its COMMIT PREPARED, which bumps their counters as it
 * commits: a COMMIT PREPARED then wakes the policies of the tables it
 * wrote, not every policy of the database (hooks.c).  One COMMIT PREPARED
 * per node of a Citus write, or one per XA transaction, would otherwise
 * send every idle policy through a pass.
 *
 * Locking: none for the counters (atomics); the prepared transactions'
 * tables under shmem.c's slots lock.  The list of tables to bump is this
 * backend's, emptied at the end of each transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "utils/memutils.h"

#include "ttl_index.h"
#include "shared/shared.h"
#include "shared/shmem.h"

static void ttl_writes_note_bucket(uint32 h);

/* the tables this transaction wrote, as their buckets, bumped at commit */
static uint32 *Noted = NULL;	/* in TopMemoryContext, grows as needed */
static int	NNoted = 0;
static int	NotedSize = 0;

/*
 * ttl_writes_hash
 *		The bucket of a table.
 */
static uint32
ttl_writes_hash(Oid dboid, Oid relid)
{
	return hash_combine(hash_uint32(dboid), hash_uint32(relid));
}

/*
 * ttl_writes_note
 *		This transaction inserted into or updated a table.
 */
void
ttl_writes_note(Oid relid)
{
	if (!ttl_shmem_ready() || !OidIsValid(relid))
		return;
	ttl_writes_note_bucket(ttl_writes_hash(MyDatabaseId, relid));
}

/*
 * ttl_writes_note_bucket
 *		This transaction wrote a table of this bucket.
 */
static void
ttl_writes_note_bucket(uint32 h)
{
	for (int i = 0; i < NNoted; i++)
	{
		if (Noted[i] == h)
			return;
	}
	if (NNoted == NotedSize)
	{
		NotedSize = Max(16, NotedSize * 2);
		Noted = Noted == NULL ?
			MemoryContextAlloc(TopMemoryContext, sizeof(uint32) * NotedSize) :
			repalloc(Noted, sizeof(uint32) * NotedSize);
	}
	Noted[NNoted++] = h;
}

/*
 * ttl_writes_bump
 *		Bump the counters of the tables this transaction wrote, which it
 *		keeps noted: just before the transaction becomes visible.
 */
void
ttl_writes_bump(void)
{
	for (int i = 0; i < NNoted; i++)
		pg_atomic_fetch_add_u32(ttl_shmem_write_counter(Noted[i]), 1);
}

/*
 * ttl_writes_at_xact_end
 *		The transaction ends: on commit, bump the counters of its tables
 *		(again: it is visible now), then forget them.
 */
void
ttl_writes_at_xact_end(bool commit)
{
	if (commit)
		ttl_writes_bump();
	NNoted = 0;
}

/*
 * ttl_writes_prepared
 *		PREPARE TRANSACTION gid: keep the tables the transaction wrote, for
 *		its COMMIT PREPARED to bump (see the top of the file), then forget
 *		them here.  A transaction that changed the policies (wake), too
 *		many tables, or no room: COMMIT PREPARED will not find them, and
 *		wakes every policy of the database instead.
 */
void
ttl_writes_prepared(const char *gid, bool wake)
{
	TtlPrepared *p;

	if (!ttl_shmem_ready() || gid == NULL)
	{
		NNoted = 0;
		return;
	}
	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	p = ttl_shmem_prepared_find(gid, MyDatabaseId, true);
	if (p != NULL)
	{
		/* a change to the policies: its COMMIT PREPARED wakes them all */
		p->n = !wake && NNoted <= TTL_PREPARED_BUCKETS ? NNoted : -1;
		for (int i = 0; i < p->n; i++)
			p->buckets[i] = Noted[i];
	}
	LWLockRelease(ttl_shmem_slots_lock());
	NNoted = 0;
}

/*
 * ttl_writes_finish_prepared
 *		COMMIT PREPARED (commit) or ROLLBACK PREPARED gid: the tables kept
 *		at its PREPARE, noted for this transaction to bump as it commits
 *		(the prepared one's rows become visible with it); the entry is
 *		forgotten.  Returns false when they are not known (too many, no
 *		room, or prepared before the server started): the caller wakes
 *		every policy of the database.
 */
bool
ttl_writes_finish_prepared(const char *gid, bool commit)
{
	TtlPrepared *p;
	uint32		buckets[TTL_PREPARED_BUCKETS];
	int			n = -1;

	if (!ttl_shmem_ready())
		return false;
	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	p = ttl_shmem_prepared_find(gid, MyDatabaseId, false);
	if (p != NULL)
	{
		n = p->n;
		if (n > 0)
			memcpy(buckets, p->buckets, sizeof(uint32) * n);
		p->gid[0] = '\0';
	}
	LWLockRelease(ttl_shmem_slots_lock());
	if (!commit)
		return true;
	if (n < 0)
		return false;
	for (int i = 0; i < n; i++)
		ttl_writes_note_bucket(buckets[i]);
	return true;
}

/*
 * ttl_writes_count
 *		The write counter of a table now.
 */
uint32
ttl_writes_count(Oid dboid, Oid relid)
{
	pg_atomic_uint32 *c;

	if (!ttl_shmem_ready())
		return 0;
	c = ttl_shmem_write_counter(ttl_writes_hash(dboid, relid));
	return pg_atomic_read_u32(c);
}
