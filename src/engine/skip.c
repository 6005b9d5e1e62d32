/*-------------------------------------------------------------------------
 *
 * skip.c
 *	  The known-dead prefix of a target's index: the leading entries a pass
 *	  may skip because they point only at row versions that no snapshot
 *	  will ever see again.
 *
 * After a drain, the index entries of the deleted rows stay until VACUUM
 * removes them, and VACUUM cannot while an old snapshot (a long REPEATABLE
 * READ transaction, a replication slot's xmin) holds the xmin horizon:
 * every scan from the start of the index would read them and visit their
 * heap tuples again, pass after pass, a cost that grows with the backlog
 * deleted.  So a pass records how far the index holds nothing but such
 * entries, and the next pass starts there.
 *
 * What counts as dead.  An entry whose row version the scan deleted
 * itself, and an entry invisible to the scan's snapshot whose HOT chain
 * holds only versions inserted by transactions the snapshot sees as
 * committed, the last one deleted by such a transaction
 * (ttl_skip_entry_dead): no later snapshot can see any of them.  Anything
 * else (a visible row the pass does not delete, a version a running
 * transaction inserted or updated) ends the prefix.
 *
 * What may change it.  A row inserted since with a key below the prefix's
 * end lands in one of the leaf pages the prefix spans, and changes that
 * page's LSN; so do page splits and VACUUM.  The prefix records each leaf
 * page it spans with its LSN, read before the scan read the page (the
 * right sibling's LSN is read while the scan is still on the page to its
 * left, the leftmost leaf's before the scan starts).  The last page it
 * spans is also where new rows arrive (their keys are above the prefix's),
 * so its LSN says nothing: the prefix's key is the last key of the page
 * before it, and the next pass reads that last page again from there.  A
 * pass uses the prefix only after walking its pages again, from the
 * leftmost leaf by their right-links, and finding the same pages with the
 * same LSNs (the last page only by its place), in the same storage (a
 * TRUNCATE or REINDEX gives the index new pages, which may have the same
 * numbers and, written without WAL under wal_level = minimal, the same LSN
 * 0: a page of LSN 0 never proves anything), and only if the batch that
 * recorded it committed: it may span rows that batch deleted, which an
 * abort brings back without touching the index.  Any difference makes the
 * pass scan from the start, and record anew.  The walk reads one page per
 * few hundred entries instead of every entry and its heap tuple.
 *
 * Memory: the prefix lives in a memory context of the target's (targets.c),
 * kept from pass to pass with the target's resolution.  It is the prefix of
 * one index: a pass or a batch that finds the target resolved to another
 * index since (targets.c resolves again after DDL) drops it.
 * Locking: pages are read under a share lock, one at a time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/transam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "ttl_index.h"
#include "engine/engine.h"
#include "shared/shared.h"

static bool ttl_skip_settle(TtlTarget *t);
static void ttl_skip_set_edge(TtlTarget *t, Datum key);

/*
 * ttl_skip_page_lsn
 *		The LSN of an index page, read under a share lock.
 */
static XLogRecPtr
ttl_skip_page_lsn(Relation irel, BlockNumber blkno, BlockNumber *next)
{
	Buffer		buf = ReadBuffer(irel, blkno);
	Page		page;
	XLogRecPtr	lsn;
	BTPageOpaque opaque;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	lsn = PageGetLSN(page);
	opaque = BTPageGetOpaque(page);
	if (next)
		*next = (P_ISLEAF(opaque) && !P_IGNORE(opaque)) ? opaque->btpo_next : InvalidBlockNumber;
	UnlockReleaseBuffer(buf);
	return lsn;
}

/*
 * ttl_skip_add
 *		Record a leaf page with its LSN.
 */
static void
ttl_skip_add(TtlTarget *t, BlockNumber blkno, XLogRecPtr lsn)
{
	TtlSkip    *s = &t->skip;

	if (s->npages == s->maxpages)
	{
		int			n = Max(16, s->maxpages * 2);

		if (s->blocks == NULL)
		{
			s->blocks = MemoryContextAlloc(t->skipcxt, sizeof(BlockNumber) * n);
			s->lsns = MemoryContextAlloc(t->skipcxt, sizeof(XLogRecPtr) * n);
		}
		else
		{
			s->blocks = repalloc(s->blocks, sizeof(BlockNumber) * n);
			s->lsns = repalloc(s->lsns, sizeof(XLogRecPtr) * n);
		}
		s->maxpages = n;
	}
	/*
	 * The same block may be recorded twice: VACUUM deleted and recycled an
	 * emptied page of the prefix, and a split made it the last page's
	 * right sibling again.  Not looked for here (a search per page would
	 * cost a long drain's prefix quadratic time): the next pass's walk by
	 * right-links (ttl_skip_validate) finds the pages differ, and records
	 * the prefix anew.
	 */
	Assert(blkno != P_NONE && blkno != InvalidBlockNumber);
	s->blocks[s->npages] = blkno;
	s->lsns[s->npages] = lsn;
	s->npages++;
	Assert(s->npages <= s->maxpages);
}

/*
 * ttl_skip_forget
 *		No prefix, and no tracking.
 */
void
ttl_skip_forget(TtlTarget *t)
{
	TtlSkip    *s = &t->skip;

	/* the keys and the page arrays: whatever the key type was */
	MemoryContextReset(t->skipcxt);
	memset(s, 0, sizeof(TtlSkip));
	s->indexoid = InvalidOid;
	s->pos = -1;
}

/*
 * ttl_skip_settle
 *		Whether the prefix holds as far as the transaction that recorded it
 *		goes: that transaction committed, or is ours and still running.  The
 *		prefix may span rows it deleted itself: if it aborted, they are
 *		there again, and no page LSN says so (a heap delete does not touch
 *		the index); the prefix is then dropped.  Once seen committed, the
 *		XID is cleared, so that it is never looked up after the transaction
 *		status it needs has been truncated away.
 */
static bool
ttl_skip_settle(TtlTarget *t)
{
	TtlSkip    *s = &t->skip;

	if (!TransactionIdIsValid(s->xid) || TransactionIdIsCurrentTransactionId(s->xid))
		return true;
	if (TransactionIdDidCommit(s->xid))
	{
		s->xid = InvalidTransactionId;
		return true;
	}
	ttl_skip_forget(t);
	return false;
}

/*
 * ttl_skip_validate
 *		Whether the recorded pages are still the leftmost leaves of the
 *		index, in order, each with its LSN.
 */
static bool
ttl_skip_validate(TtlTarget *t, Relation irel)
{
	TtlSkip    *s = &t->skip;
	Buffer		buf;
	BlockNumber blkno;

	Assert(s->ready);
	if (s->npages == 0)
		return false;
	buf = ttl_bt_leftmost_leaf(irel);
	if (!BufferIsValid(buf))
		return false;
	blkno = BufferGetBlockNumber(buf);
	UnlockReleaseBuffer(buf);

	for (int i = 0; i < s->npages; i++)
	{
		BlockNumber next;

		if (blkno != s->blocks[i])
			return false;
		/* the last page: read again by the scan, only its place counts */
		if (i == s->npages - 1)
			break;
		/* a page written without WAL (LSN 0) proves nothing */
		if (s->lsns[i] == InvalidXLogRecPtr ||
			ttl_skip_page_lsn(irel, blkno, &next) != s->lsns[i])
			return false;
		blkno = next;
	}
	return true;
}

/*
 * ttl_skip_sibling
 *		The scan is on the last recorded page: record its right sibling's
 *		LSN now, before the scan moves there.
 */
static void
ttl_skip_sibling(TtlTarget *t, Relation irel)
{
	TtlSkip    *s = &t->skip;
	BlockNumber next;

	Assert(s->tracking && s->npages > 0);
	(void) ttl_skip_page_lsn(irel, s->blocks[s->npages - 1], &next);
	if (next != P_NONE && next != InvalidBlockNumber)
		ttl_skip_add(t, next, ttl_skip_page_lsn(irel, next, NULL));
}

/*
 * ttl_skip_start
 *		A pass begins its scan of the target from the start.  When the
 *		recorded prefix still holds, returns true with *from set to where
 *		the scan may start, and goes on recording from there; otherwise
 *		starts recording a new prefix at the leftmost leaf.
 */
bool
ttl_skip_start(TtlTarget *t, Relation irel, Datum *from)
{
	TtlSkip    *s = &t->skip;
	Buffer		buf;
	/* read before the pages: a write committed after shows as a change */
	uint32		writes = ttl_writes_count(MyDatabaseId, t->relid);

	/*
	 * An index that writes no WAL (an unlogged table's) sets no page LSNs:
	 * an insert below a prefix would go unseen.  No prefix there.
	 */
	if (!RelationNeedsWAL(irel))
	{
		ttl_skip_forget(t);
		return false;
	}
	if (s->ready && s->indexoid == RelationGetRelid(irel) &&
		s->relfilenode == irel->rd_rel->relfilenode &&
		ttl_skip_settle(t) && ttl_skip_validate(t, irel))
	{
		/* a prefix ends on its second page or later (ttl_skip_stop) */
		Assert(s->npages >= 2 && s->indexoid == RelationGetRelid(irel));
		s->writes = writes;
		*from = s->key;
		s->tracking = true;
		s->pos = -1;			/* found by the first entry */
		return true;
	}
	ttl_skip_forget(t);
	s->indexoid = RelationGetRelid(irel);
	s->relfilenode = irel->rd_rel->relfilenode;
	s->writes = writes;
	buf = ttl_bt_leftmost_leaf(irel);
	if (!BufferIsValid(buf))
		return false;
	ttl_skip_add(t, BufferGetBlockNumber(buf), PageGetLSN(BufferGetPage(buf)));
	UnlockReleaseBuffer(buf);
	s->pos = 0;
	s->tracking = true;
	ttl_skip_sibling(t, irel);
	return false;
}

/*
 * ttl_skip_resume
 *		A later batch of the pass scans on from where the last stopped: the
 *		page of its first entry must be one recorded.
 */
void
ttl_skip_resume(TtlTarget *t)
{
	/* the target was resolved again, to another index, since the start */
	if (t->skip.indexoid != t->indexoid)
		ttl_skip_forget(t);
	/* the batch that ended the prefix failed (see ttl_skip_settle) */
	(void) ttl_skip_settle(t);
	t->skip.pos = -1;
}

/*
 * ttl_skip_on_page
 *		The scan returned an entry from this leaf page.  It must be a page
 *		recorded (its LSN read before the scan read it): the one in hand,
 *		the next one, or, for the first entry of a scan, any of them.
 */
void
ttl_skip_on_page(TtlTarget *t, Relation irel, BlockNumber blkno,
				 bool have_prev, Datum prev_key)
{
	TtlSkip    *s = &t->skip;

	if (!s->tracking)
		return;
	if (s->pos >= 0 && s->blocks[s->pos] == blkno)
		return;
	if (s->pos >= 0 && s->pos + 1 < s->npages && s->blocks[s->pos + 1] == blkno)
	{
		/* moving right: the last key of the page left behind */
		if (!have_prev)
		{
			ttl_skip_forget(t);
			return;
		}
		ttl_skip_set_edge(t, prev_key);
		s->pos++;
	}
	else if (s->pos < 0)
	{
		for (int i = 0; i < s->npages; i++)
		{
			if (s->blocks[i] == blkno)
				s->pos = i;
		}
	}
	if (s->pos < 0 || s->blocks[s->pos] != blkno)
	{
		/* a page not recorded (a split, an empty page stepped over) */
		ttl_skip_forget(t);
		return;
	}
	Assert(s->pos >= 0 && s->pos < s->npages && s->blocks[s->pos] == blkno);
	if (s->pos == s->npages - 1)
		ttl_skip_sibling(t, irel);
}

/*
 * ttl_skip_set_edge
 *		Remember the last key of the page the scan just left.
 */
static void
ttl_skip_set_edge(TtlTarget *t, Datum key)
{
	TtlSkip    *s = &t->skip;
	MemoryContext old;

	if (s->have_edge && !t->keybyval)
		pfree(DatumGetPointer(s->edge));
	old = MemoryContextSwitchTo(t->skipcxt);
	s->edge = t->keybyval ? key : datumCopy(key, false, t->keylen);
	MemoryContextSwitchTo(old);
	s->have_edge = true;
}

/*
 * ttl_skip_stop
 *		The prefix ends on the page the scan is on: every entry before, on
 *		earlier pages and on this one, is dead.  The next pass may start at
 *		the last key of the page before this one.
 */
void
ttl_skip_stop(TtlTarget *t)
{
	TtlSkip    *s = &t->skip;

	if (!s->tracking || s->pos < 1 || !s->have_edge)
	{
		ttl_skip_forget(t);
		return;
	}
	Assert(s->pos < s->npages);
	s->tracking = false;
	/* the pages after the one in hand are not part of it */
	s->npages = s->pos + 1;
	Assert(s->npages >= 2);
	if (s->ready && !t->keybyval)
		pfree(DatumGetPointer(s->key));
	if (t->keybyval)
		s->key = s->edge;
	else
	{
		MemoryContext old = MemoryContextSwitchTo(t->skipcxt);

		s->key = datumCopy(s->edge, false, t->keylen);
		MemoryContextSwitchTo(old);
	}
	s->ready = true;
	/* the deletes of this batch, if any, are part of it */
	s->xid = GetCurrentTransactionIdIfAny();
}

/*
 * ttl_skip_key
 *		The key past which passes may start, when the target has a known-dead
 *		prefix of its current index and the key is by value, with the table's
 *		write counter read before the pass checked the prefix (what the
 *		worker publishes for the views, stats.c: a reader may trust the
 *		prefix only while the counter has not moved since).
 */
bool
ttl_skip_key(TtlTarget *t, Datum *key, uint32 *writes)
{
	TtlSkip    *s = &t->skip;

	if (!s->ready || !t->keybyval || s->indexoid != t->indexoid ||
		!ttl_skip_settle(t))
		return false;
	Assert(s->npages >= 2);
	*key = s->key;
	*writes = s->writes;
	return true;
}

/*
 * ttl_skip_entry_dead
 *		Whether the heap tuples an index entry points at (the HOT chain from
 *		its TID) can never be seen again (see the top of the file).  The
 *		caller found no version of it visible to the snapshot.
 */
bool
ttl_skip_entry_dead(Relation heap, ItemPointer tid, Snapshot snapshot)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	OffsetNumber offnum = ItemPointerGetOffsetNumber(tid);
	Buffer		buf;
	Page		page;
	bool		dead = false;

	buf = ReadBuffer(heap, blkno);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);

	for (int hops = 0; hops < MaxHeapTuplesPerPage; hops++)
	{
		ItemId		lp;
		HeapTupleHeader htup;
		TransactionId xmin;
		TransactionId xmax;

		if (offnum < FirstOffsetNumber || offnum > PageGetMaxOffsetNumber(page))
			break;
		lp = PageGetItemId(page, offnum);
		if (ItemIdIsRedirected(lp))
		{
			offnum = ItemIdGetRedirect(lp);
			continue;
		}
		if (!ItemIdIsNormal(lp))
		{
			/* pruned away: nothing left to see */
			dead = true;
			break;
		}
		htup = (HeapTupleHeader) PageGetItem(page, lp);

		/* inserted by a transaction the snapshot sees as committed */
		xmin = HeapTupleHeaderGetXmin(htup);
		if (!HeapTupleHeaderXminFrozen(htup) &&
			(XidInMVCCSnapshot(xmin, snapshot) || !TransactionIdDidCommit(xmin)))
			break;
		if (HeapTupleHeaderIsHotUpdated(htup))
		{
			/* the next version is on the same page */
			offnum = ItemPointerGetOffsetNumber(&htup->t_ctid);
			continue;
		}
		/* the last version: deleted by such a transaction too */
		if ((htup->t_infomask & HEAP_XMAX_INVALID) ||
			HEAP_XMAX_IS_LOCKED_ONLY(htup->t_infomask))
			break;
		xmax = HeapTupleHeaderGetUpdateXid(htup);
		dead = TransactionIdIsValid(xmax) &&
			!XidInMVCCSnapshot(xmax, snapshot) && TransactionIdDidCommit(xmax);
		break;
	}
	UnlockReleaseBuffer(buf);
	return dead;
}
