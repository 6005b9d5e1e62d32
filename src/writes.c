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
 * Locking: none (atomics).  The list of tables to bump is this backend's,
 * emptied at the end of each transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "utils/memutils.h"

#include "ttl_index.h"

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
	uint32		h;

	if (!ttl_shmem_ready() || !OidIsValid(relid))
		return;
	h = ttl_writes_hash(MyDatabaseId, relid);
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
