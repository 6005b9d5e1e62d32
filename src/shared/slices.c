/*-------------------------------------------------------------------------
 *
 * slices.c
 *	  The arithmetic of a shared drain's slices (see parallel.c): cutting
 *	  a job's key range into slices, claiming a free one or halving the
 *	  widest one another process holds, recording progress, letting a
 *	  slice go, and telling which tables are finished.  Each function works
 *	  on the TtlJob it is given, as process `who`; none takes a lock, waits,
 *	  allocates or raises an error.
 *
 * parallel.c calls these on the job in a database's slot, under the slots
 * lock; the engine's tests (engine_test.c) call them on a job in local
 * memory, with made-up process ids, to run a sequence of claims, steals
 * and releases step by step.
 *
 * Invariants, checked by Asserts after every change (ttl_slices_check):
 * a taken slice has an owner and a free or done one none; a slice that
 * knows where it stands ends at or after that point; and the open
 * (free or taken) slices of one table that know where they stand never
 * overlap, so no two processes are ever given the same keys to drain,
 * halving or not.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ttl_index.h"
#include "shared/shared.h"
#include "shared/shmem.h"

static int	ttl_slices_steal(TtlJob *job, pid_t who);

#ifdef USE_ASSERT_CHECKING
/*
 * ttl_slices_check
 *		For Asserts: whether the job's slices keep the invariants above.
 */
static bool
ttl_slices_check(TtlJob *job)
{
	for (int i = 0; i < TTL_MAX_SLICES; i++)
	{
		TtlSlice   *a = &job->slices[i];

		if ((a->state == TTL_SLICE_TAKEN) != (a->taken_by != 0))
			return false;
		if (a->state != TTL_SLICE_FREE && a->state != TTL_SLICE_TAKEN)
			continue;
		if (a->target >= job->ntargets)
			return false;
		if (a->from_start)
			continue;
		if (a->cur > a->hi)
			return false;
		for (int j = i + 1; j < TTL_MAX_SLICES; j++)
		{
			TtlSlice   *b = &job->slices[j];

			if ((b->state != TTL_SLICE_FREE && b->state != TTL_SLICE_TAKEN) ||
				b->from_start || b->target != a->target ||
				a->cur == a->hi || b->cur == b->hi)
				continue;
			if (a->cur < b->hi && b->cur < a->hi)
				return false;
		}
	}
	return true;
}
#endif

/*
 * ttl_slices_cut
 *		Set up job's slices: tables[0] (the table in hand) over the ordinals
 *		[lo, hi), its keys ending below top (lo < top <= hi), cut into
 *		nslices slices of equal width over [lo, top), the last reaching on
 *		to hi; each other table one slice from its index's start up to hi.
 *		Returns how many slices the first table got (nslices, less when the
 *		range is narrower), 0 when there is nothing worth sharing.  Leaves
 *		the rest of the job alone.
 */
int
ttl_slices_cut(TtlJob *job, const TtlJobTarget *tables, int ntables,
			   int64 lo, int64 top, int64 hi, int nslices)
{
	uint64		width;
	int			k = 0;

	if (top > hi)
		top = hi;
	if (top <= lo || ntables < 1 || nslices < 1)
		return 0;
	ntables = Min(ntables, TTL_MAX_JOB_TARGETS);
	width = (uint64) top - (uint64) lo;
	/* room for the other tables' slices, and as many again to halve */
	nslices = (int) Min((uint64) Min(nslices, TTL_MAX_SLICES / 2 - (ntables - 1)),
						width);
	if (nslices < 1 || (nslices < 2 && ntables < 2))
		return 0;

	memset(job->slices, 0, sizeof(job->slices));
	job->ntargets = ntables;
	for (int i = 0; i < ntables; i++)
	{
		job->targets[i] = tables[i];
		job->outcomes[i] = TTL_BATCH_MORE;
	}
	for (int i = 0; i < nslices; i++, k++)
	{
		job->slices[k].state = TTL_SLICE_FREE;
		job->slices[k].target = 0;
		job->slices[k].cur = (int64) ((uint64) lo + width / nslices * i);
		job->slices[k].hi = i == nslices - 1 ? hi :
			(int64) ((uint64) lo + width / nslices * (i + 1));
	}
	for (int i = 1; i < ntables; i++, k++)
	{
		job->slices[k].state = TTL_SLICE_FREE;
		job->slices[k].target = (uint8) i;
		job->slices[k].from_start = true;
		job->slices[k].cur = hi;
		job->slices[k].hi = hi;
	}
	Assert(ttl_slices_check(job));
	return nslices;
}

/*
 * ttl_slices_steal
 *		No slice is free: split the widest slice another process holds, its
 *		upper half becoming a slice of who's (in an unused or done entry).
 *		A slice from an index's start cannot be halved before its first
 *		batch says where it stands, nor one of a table given up (it would be
 *		given up again, piece by piece).  In a job a ttl_runner() call leads,
 *		no slice of the call's is halved and the call halves none: its
 *		deletes stay uncommitted until the call ends, and a batch reaching
 *		past a halved slice's new end would meet the other's rows, wait for
 *		them until its lock_timeout and fail, while the rows it had taken
 *		(and the other had stepped over as locked) stay for the next pass,
 *		which a call does not make.  Returns its number, or -1 when no slice
 *		is wide enough or no entry is left.
 */
static int
ttl_slices_steal(TtlJob *job, pid_t who)
{
	int			widest = -1;
	uint64		best = 1;
	int			entry = -1;

	if (job->runner_lead != 0 && who == job->runner_lead)
		return -1;
	for (int i = 0; i < TTL_MAX_SLICES; i++)
	{
		TtlSlice   *sl = &job->slices[i];

		if (sl->state == TTL_SLICE_TAKEN && sl->taken_by != who &&
			(job->runner_lead == 0 || sl->taken_by != job->runner_lead) &&
			!sl->from_start && job->outcomes[sl->target] == TTL_BATCH_MORE &&
			sl->hi > sl->cur && (uint64) sl->hi - (uint64) sl->cur > best)
		{
			best = (uint64) sl->hi - (uint64) sl->cur;
			widest = i;
		}
		if (entry < 0 && (sl->state == TTL_SLICE_UNUSED || sl->state == TTL_SLICE_DONE))
			entry = i;
	}
	if (widest < 0 || entry < 0)
		return -1;
	job->slices[entry].state = TTL_SLICE_TAKEN;
	job->slices[entry].taken_by = who;
	job->slices[entry].target = job->slices[widest].target;
	job->slices[entry].from_start = false;
	job->slices[entry].hi = job->slices[widest].hi;
	job->slices[entry].cur = (int64) ((uint64) job->slices[widest].cur + best / 2);
	job->slices[widest].hi = job->slices[entry].cur;
	return entry;
}

/*
 * ttl_slices_claim
 *		Take a slice for who: a free one, else the upper half of the widest
 *		one another process holds.  Returns its number, and fills in
 *		*claim: its table, where to start in it (the index's start, its
 *		start, or where a process that gave it back got to) and its end.
 *		TTL_CLAIM_BUSY: nothing to take, some slices still held by others.
 *		TTL_CLAIM_OVER: every slice done.
 */
int
ttl_slices_claim(TtlJob *job, pid_t who, TtlClaim *claim)
{
	int			result = TTL_CLAIM_OVER;

	if (who == 0)
		return TTL_CLAIM_OVER;	/* no process: a free slice's "owner" */
	for (int i = 0; i < TTL_MAX_SLICES; i++)
	{
		if (job->slices[i].state == TTL_SLICE_TAKEN)
			result = TTL_CLAIM_BUSY;
		else if (job->slices[i].state == TTL_SLICE_FREE)
		{
			job->slices[i].state = TTL_SLICE_TAKEN;
			job->slices[i].taken_by = who;
			result = i;
			break;
		}
	}
	if (result == TTL_CLAIM_BUSY)
	{
		int			i = ttl_slices_steal(job, who);

		if (i >= 0)
			result = i;
	}
	if (result >= 0)
	{
		TtlSlice   *sl = &job->slices[result];

		claim->target = sl->target;
		claim->table = job->targets[sl->target];
		claim->from_start = sl->from_start;
		claim->from = sl->cur;
		claim->hi = sl->hi;
	}
	Assert(ttl_slices_check(job));
	return result;
}

/*
 * ttl_slices_end
 *		Where slice i, who's, ends now (another process may have taken its
 *		upper half).  Returns false when it is not who's.
 */
bool
ttl_slices_end(TtlJob *job, int i, pid_t who, int64 *hi)
{
	if (who == 0 || i < 0 || i >= TTL_MAX_SLICES || job->slices[i].taken_by != who)
		return false;
	*hi = job->slices[i].hi;
	return true;
}

/*
 * ttl_slices_progress
 *		A batch of who's in slice i ended: the slice resumes at cur (if
 *		given back or halved).  A slice from the index's start now knows
 *		where it stands.  Returns false, changing nothing, when the slice
 *		is not who's.
 */
bool
ttl_slices_progress(TtlJob *job, int i, pid_t who, bool have_cur, int64 cur)
{
	TtlSlice   *sl;

	if (who == 0 || i < 0 || i >= TTL_MAX_SLICES || job->slices[i].taken_by != who)
		return false;
	sl = &job->slices[i];
	Assert(sl->state == TTL_SLICE_TAKEN);
	if (have_cur && (sl->from_start || cur > sl->cur) && cur <= sl->hi)
	{
		sl->cur = cur;
		sl->from_start = false;
	}
	Assert(ttl_slices_check(job));
	return true;
}

/*
 * ttl_slices_give_back
 *		Slice i, taken, is given back part done: free for another process,
 *		or done if its table was given up meanwhile (it would only be given
 *		up again).
 */
void
ttl_slices_give_back(TtlJob *job, int i)
{
	TtlSlice   *sl = &job->slices[i];

	Assert(sl->state == TTL_SLICE_TAKEN);
	sl->state = job->outcomes[sl->target] == TTL_BATCH_MORE ?
		TTL_SLICE_FREE : TTL_SLICE_DONE;
	sl->taken_by = 0;
	Assert(ttl_slices_check(job));
}

/*
 * ttl_slices_let_go
 *		Slice i, who's, is done or given back (state); with an outcome other
 *		than TTL_BATCH_MORE its table is given up as well: every free slice
 *		of it is done, and the slices of it that others hold end at their
 *		next batch.  Returns false, changing nothing, when the slice is not
 *		who's.
 */
bool
ttl_slices_let_go(TtlJob *job, int i, pid_t who, TtlSliceState state, int outcome)
{
	int			target;

	if (who == 0 || i < 0 || i >= TTL_MAX_SLICES || job->slices[i].taken_by != who)
		return false;
	Assert(state == TTL_SLICE_FREE || state == TTL_SLICE_DONE);
	target = job->slices[i].target;
	if (state == TTL_SLICE_FREE)
		ttl_slices_give_back(job, i);
	else
	{
		job->slices[i].state = state;
		job->slices[i].taken_by = 0;
	}
	if (outcome != TTL_BATCH_MORE)
	{
		job->outcomes[target] = (uint8) outcome;
		for (int j = 0; j < TTL_MAX_SLICES; j++)
			if (job->slices[j].state == TTL_SLICE_FREE && job->slices[j].target == target)
				job->slices[j].state = TTL_SLICE_DONE;
	}
	Assert(ttl_slices_check(job));
	return true;
}

/*
 * ttl_slices_finished
 *		A table of the job whose every slice is done, and not in handled
 *		(bit i for table i), or -1.  *outcome says whether it was drained
 *		(TTL_BATCH_MORE) or why a process gave it up.
 */
int
ttl_slices_finished(TtlJob *job, uint32 handled, int *outcome)
{
	uint32		open = 0;

	for (int j = 0; j < TTL_MAX_SLICES; j++)
		if (job->slices[j].state == TTL_SLICE_FREE ||
			job->slices[j].state == TTL_SLICE_TAKEN)
			open |= (uint32) 1 << job->slices[j].target;
	for (int t = 0; t < job->ntargets; t++)
	{
		if ((handled & ((uint32) 1 << t)) == 0 && (open & ((uint32) 1 << t)) == 0)
		{
			*outcome = job->outcomes[t];
			return t;
		}
	}
	return -1;
}
