/*-------------------------------------------------------------------------
 *
 * parallel.c
 *	  The share of a database's slot that its worker (the lead) and its
 *	  helpers use to drain one large backlog together, under the slots
 *	  lock (drain.c starts the helpers and runs the slices; slices.c does
 *	  the slices' arithmetic).
 *
 * A job is part of one pass: the table in hand (a target) from where the
 * lead stands to the pass's cutoff, as ordinals (ttl_key_ordinal), cut
 * into slices of equal width, and the targets after it in the pass's list
 * (the other partitions, or Citus shards, of the policy's table), each one
 * slice from its index's start to the cutoff.  So a policy whose rows are
 * spread over many tables keeps its helpers from one table to the next,
 * instead of starting them anew for each.  Every process, the lead
 * included, takes a free slice (in that order), drains it in bounded
 * batches of its own (one transaction each), records after each batch how
 * far it got, and takes the next.  Rows are
 * seldom spread evenly over their keys (a backlog of an hour's rows in a
 * range of days), so a process that finds no free slice takes the upper
 * half of the widest slice another process still holds (from that one's
 * progress to its end; a slice from an index's start can be halved once
 * its first batch said where it stands), whose owner reads its new end
 * before its next batch; halving again and again, the processes end close together
 * whatever the distribution.  A row the owner's batch in flight reaches
 * past the new end is seen by both: deleting is idempotent, and the second
 * finds it deleted or locked.  A table a process finds locked, gone or
 * without its index is given up for this pass, all its slices with it
 * (ttl_parallel_give_up), and the lead learns why when it looks at the
 * finished tables (ttl_parallel_finished), as it walks each one again
 * (drain.c).  A helper that
 * stops early (an error, the application busy, a replica behind, told to
 * leave, its exit) gives its slice back with its progress, and the lead,
 * which has the pass's machinery for rows that fail (held.c), takes it
 * again.  The job ends when every slice is done (the lead adds the
 * helpers' rows to its pass) or when the lead's pass ends otherwise, which
 * cancels it: the helpers stop after their batch in hand.
 *
 * A ttl_runner() call outside a transaction block leads a job as a worker
 * does, from a runner slot of its own (TTL_RUNNER_SLOTS after the
 * databases' slots, which the launcher never starts a worker for), taken
 * at its first offer and given back when its policy ends, fails or its
 * transaction aborts (ttl_parallel_runner_end).  Its helpers are started
 * whatever ttl_index.enabled says: calling it is an explicit request.  A
 * runner slot is free when no process leads it and no helper of its last
 * job is still attached.
 *
 * Capacity: helpers count against the workers the launcher may run
 * (ttl_shmem_max_workers), and are asked for only while no database waits
 * for a worker; a helper registered but not yet attached is counted as
 * reserved.
 *
 * Locking: everything here is under the slots lock (shmem.c), in short
 * sections that neither wait nor raise an error; latches are set after the
 * lock is released.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

#include "ttl_index.h"
#include "shared/shared.h"
#include "shared/shmem.h"

/* helper side: the slot and job this process attached to */
static TtlDbSlot *HelperSlot = NULL;
static uint32 HelperJob = 0;
/* the database of that slot when the helper attached (before it connects) */
static Oid	HelperDboid = InvalidOid;

static void ttl_parallel_detach(int code, Datum arg);

/*
 * The slot and job a helper attached to, while they are still its own: the
 * launcher may have freed and reused the slot for another database.
 */
#define HELPER_JOB_OK(slot) \
	((slot)->dboid == HelperDboid && (slot)->job.id == HelperJob)

/* a ttl_runner() call's side: the runner slot it leads from, or -1 */
static int	RunnerSlotNo = -1;
/* and the rows its helpers deleted in the jobs it ended, not yet taken */
static int64 RunnerHelperRows = 0;

/*
 * ttl_parallel_lead_slot
 *		The slot of our database when this process is its worker, or the
 *		runner slot this process leads from, else NULL.  Caller holds the
 *		slots lock.
 */
static TtlDbSlot *
ttl_parallel_lead_slot(void)
{
	TtlDbSlot  *slot;

	if (RunnerSlotNo >= 0)
	{
		slot = ttl_shmem_slot_any(RunnerSlotNo);
		Assert(slot->pid == MyProcPid);
		return slot;
	}
	slot = ttl_shmem_slot_find(MyDatabaseId);
	return slot != NULL && slot->pid == MyProcPid ? slot : NULL;
}

/*
 * ttl_parallel_runner_begin
 *		A ttl_runner() call is about to post a job: the runner slot it leads
 *		from, taken now if it has none.  Returns false when every runner
 *		slot is in use (the call drains alone).
 */
bool
ttl_parallel_runner_begin(void)
{
	int			nslots;

	if (RunnerSlotNo >= 0)
		return true;
	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	nslots = ttl_shmem_nslots();
	for (int i = nslots; i < nslots + TTL_RUNNER_SLOTS; i++)
	{
		TtlDbSlot  *slot = ttl_shmem_slot_any(i);

		if (slot->pid != 0 || ttl_shmem_helpers_of(slot) > 0)
			continue;
		slot->dboid = MyDatabaseId;
		slot->pid = MyProcPid;
		slot->latch = MyLatch;
		slot->job.active = false;
		RunnerSlotNo = i;
		break;
	}
	LWLockRelease(ttl_shmem_slots_lock());
	return RunnerSlotNo >= 0;
}

/*
 * ttl_parallel_runner_end
 *		A ttl_runner() call's policy ended (or failed, or its transaction
 *		aborted): its job, if any, is over, the helpers stop after their
 *		batch in hand, and its runner slot is free once they are gone.
 *		Nothing to do when it leads none.
 */
void
ttl_parallel_runner_end(void)
{
	TtlDbSlot  *slot;

	if (RunnerSlotNo < 0)
		return;
	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	slot = ttl_shmem_slot_any(RunnerSlotNo);
	if (slot->job.active)
		RunnerHelperRows += slot->job.helper_rows;
	slot->job.active = false;
	slot->job.reserved = 0;
	slot->pid = 0;
	slot->latch = NULL;
	LWLockRelease(ttl_shmem_slots_lock());
	RunnerSlotNo = -1;
}

/*
 * ttl_parallel_runner_rows
 *		For a ttl_runner() call: the rows its helpers deleted (committed) in
 *		the jobs ended since the last call of this, however they ended.
 */
int64
ttl_parallel_runner_rows(void)
{
	int64		rows = RunnerHelperRows;

	RunnerHelperRows = 0;
	return rows;
}

/*
 * ttl_parallel_database_waits
 *		For a ttl_runner() call's helpers: whether a database waits for a
 *		worker, to which they give way.
 */
bool
ttl_parallel_database_waits(void)
{
	bool		waits = false;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_SHARED);
	for (int i = 0; i < ttl_shmem_nslots() && !waits; i++)
	{
		TtlDbSlot  *s = ttl_shmem_slot(i);

		waits = OidIsValid(s->dboid) && s->waiting_since != 0;
	}
	LWLockRelease(ttl_shmem_slots_lock());
	return waits;
}

/*
 * ttl_parallel_post
 *		The lead posts a job over the tables of its pass (tables[0], the one
 *		in hand, over the ordinals [lo, hi), cut into nslices slices over
 *		the keys it holds, below top; each other one slice from its index's
 *		start up to hi: ttl_slices_cut), for policy_id, and
 *		reserves up to `want` helpers, as many as the workers' capacity
 *		allows while no database waits for a worker.  Returns how many it
 *		reserved (the caller registers that many, and gives back those it
 *		could not with ttl_parallel_unreserve); 0 posts nothing.  *slotno and
 *		*job_id are for the helpers.
 */
int
ttl_parallel_post(int32 policy_id, Oid keytype, TimestampTz pass_now,
				  const TtlJobTarget *tables, int ntables,
				  int64 lo, int64 top, int64 hi, int nslices, int want,
				  int *slotno, uint32 *job_id)
{
	TtlDbSlot  *slot;
	int			running = 0;
	bool		waiting = false;
	int			n = 0;
	TtlJob		posted;

	/* the job, made off the lock; nothing posted if nothing is worth sharing */
	memset(&posted, 0, sizeof(TtlJob));
	posted.active = true;
	posted.policy_id = policy_id;
	posted.keytype = keytype;
	posted.pass_now = pass_now;
	if (ttl_slices_cut(&posted, tables, ntables, lo, top, hi, nslices) == 0)
		return 0;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	slot = ttl_parallel_lead_slot();
	for (int i = 0; i < ttl_shmem_nslots(); i++)
	{
		TtlDbSlot  *s = ttl_shmem_slot(i);

		if (!OidIsValid(s->dboid))
			continue;
		if (s == slot)
			*slotno = i;
		running += ttl_shmem_processes_of(s);
		if (s->waiting_since != 0)
			waiting = true;
	}
	running += ttl_shmem_runner_helpers();
	if (RunnerSlotNo >= 0)
	{
		*slotno = RunnerSlotNo;
		posted.runner_lead = MyProcPid;
	}
	if (slot != NULL && !slot->job.active && ttl_shmem_helpers_of(slot) == 0 && !waiting)
		n = Min(Min(want, TTL_MAX_HELPERS), ttl_shmem_max_workers() - running);
	if (n > 0)
	{
		posted.id = slot->job.id + 1;
		posted.reserved = n;
		slot->job = posted;
		*job_id = posted.id;
	}
	LWLockRelease(ttl_shmem_slots_lock());
	return Max(n, 0);
}

/*
 * ttl_parallel_unreserve
 *		The lead could not register one of the helpers it reserved.
 */
void
ttl_parallel_unreserve(void)
{
	TtlDbSlot  *slot;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	slot = ttl_parallel_lead_slot();
	if (slot != NULL && slot->job.reserved > 0)
		slot->job.reserved--;
	LWLockRelease(ttl_shmem_slots_lock());
}

/*
 * ttl_parallel_claim
 *		Take a slice of the job (the lead's, or the helper's own): a free
 *		one, else the upper half of the widest one another process holds.
 *		Returns its number, and fills in *claim: its table, where to start
 *		in it (the index's start, its start, or where a process that gave it
 *		back got to) and its end.
 *		TTL_CLAIM_BUSY: nothing to take, some slices still held by others.
 *		TTL_CLAIM_OVER: every slice done, or (for a helper) the job is over.
 */
int
ttl_parallel_claim(TtlClaim *claim)
{
	TtlDbSlot  *slot;
	TtlJob	   *job;
	int			result = TTL_CLAIM_OVER;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	slot = HelperSlot != NULL ? HelperSlot : ttl_parallel_lead_slot();
	job = slot != NULL ? &slot->job : NULL;
	if (job != NULL && job->active && (HelperSlot == NULL || HELPER_JOB_OK(slot)))
		result = ttl_slices_claim(job, MyProcPid, claim);
	LWLockRelease(ttl_shmem_slots_lock());
	return result;
}

/*
 * ttl_parallel_slice_end
 *		Before each batch in slice i: where the slice ends now (another
 *		process may have taken its upper half).  Returns false when the job
 *		is no longer this process's: the caller keeps the end it had.
 */
bool
ttl_parallel_slice_end(int i, int64 *hi)
{
	TtlDbSlot  *slot;
	bool		found = false;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_SHARED);
	slot = HelperSlot != NULL ? HelperSlot : ttl_parallel_lead_slot();
	if (slot != NULL && (HelperSlot == NULL || HELPER_JOB_OK(slot)))
		found = ttl_slices_end(&slot->job, i, MyProcPid, hi);
	LWLockRelease(ttl_shmem_slots_lock());
	return found;
}

/*
 * ttl_parallel_progress
 *		A batch in slice i ended: the slice resumes at `cur` (if given back
 *		or halved), and a helper counts the rows it deleted, those it left
 *		in place (rows_held) and those it found locked, once its batch
 *		committed.
 */
void
ttl_parallel_progress(int i, bool have_cur, int64 cur, int64 rows, int64 left,
					  int64 skipped)
{
	TtlDbSlot  *slot;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	slot = HelperSlot != NULL ? HelperSlot : ttl_parallel_lead_slot();
	if (slot != NULL && (HelperSlot == NULL || HELPER_JOB_OK(slot)) &&
		ttl_slices_progress(&slot->job, i, MyProcPid, have_cur, cur))
	{
		slot->job.helper_rows += rows;
		slot->job.helper_left += left;
		slot->job.helper_skipped += skipped;
	}
	LWLockRelease(ttl_shmem_slots_lock());
}

/*
 * ttl_parallel_let_go
 *		Slice i, this process's, is done or given back (`state`); with an
 *		outcome other than TTL_BATCH_MORE its table is given up as well
 *		(ttl_parallel_give_up).  A helper then wakes the lead.
 */
static void
ttl_parallel_let_go(int i, TtlSliceState state, int outcome)
{
	TtlDbSlot  *slot;
	Latch	   *lead = NULL;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	slot = HelperSlot != NULL ? HelperSlot : ttl_parallel_lead_slot();
	if (slot != NULL && (HelperSlot == NULL || HELPER_JOB_OK(slot)) &&
		ttl_slices_let_go(&slot->job, i, MyProcPid, state, outcome))
	{
		if (HelperSlot != NULL)
			lead = slot->latch;
	}
	LWLockRelease(ttl_shmem_slots_lock());
	if (lead != NULL)
		SetLatch(lead);
}

/*
 * ttl_parallel_release
 *		Slice i is done (done = true), or given back part done: by a helper
 *		(which then wakes the lead) or the lead.
 */
void
ttl_parallel_release(int i, bool done)
{
	ttl_parallel_let_go(i, done ? TTL_SLICE_DONE : TTL_SLICE_FREE, TTL_BATCH_MORE);
}

/*
 * ttl_parallel_give_up
 *		The table of slice i was found locked, gone or without its index
 *		(`outcome`, a TtlBatchOutcome): this pass leaves it, every free slice
 *		of it with slice i.  The slices of it that other processes hold end
 *		at their next batch, which finds the same, or finish if the table
 *		came free.
 */
void
ttl_parallel_give_up(int i, int outcome)
{
	Assert(outcome != TTL_BATCH_MORE);
	ttl_parallel_let_go(i, TTL_SLICE_DONE, outcome);
}

/*
 * ttl_parallel_finished
 *		For the lead: a table of its job whose every slice is done, and not
 *		in `handled` (bit i for table i), or -1.  *outcome says whether it
 *		was drained (TTL_BATCH_MORE) or why a process gave it up.
 */
int
ttl_parallel_finished(uint32 handled, int *outcome)
{
	TtlDbSlot  *slot;
	int			found = -1;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_SHARED);
	slot = ttl_parallel_lead_slot();
	if (slot != NULL && slot->job.active)
		found = ttl_slices_finished(&slot->job, handled, outcome);
	LWLockRelease(ttl_shmem_slots_lock());
	return found;
}

/*
 * ttl_parallel_end
 *		The lead ends its job job_id: every slice done (the normal end), or
 *		its pass ended before (cancel): the helpers stop after their batch in
 *		hand.  Returns the rows the helpers deleted in it, and sets *left
 *		to those they left in place and *skipped to those they found
 *		locked.
 */
int64
ttl_parallel_end(uint32 job_id, int64 *left, int64 *skipped)
{
	TtlDbSlot  *slot;
	int64		rows = 0;

	*left = 0;
	*skipped = 0;
	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	slot = ttl_parallel_lead_slot();
	if (slot != NULL && slot->job.active && slot->job.id == job_id)
	{
		slot->job.active = false;
		slot->job.reserved = 0;
		rows = slot->job.helper_rows;
		if (RunnerSlotNo >= 0)
			RunnerHelperRows += rows;
		*left = slot->job.helper_left;
		*skipped = slot->job.helper_skipped;
	}
	LWLockRelease(ttl_shmem_slots_lock());
	return rows;
}

/*
 * ttl_parallel_attach
 *		A helper joins job job_id of slot slotno, or returns false when that
 *		job is over (or the database is being dropped).  Fills in what the
 *		helper needs to run the same pass.
 */
bool
ttl_parallel_attach(int slotno, uint32 job_id, TtlJobInfo *info)
{
	TtlDbSlot  *slot;
	bool		ok = false;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	if (slotno < 0 || slotno >= ttl_shmem_nslots() + TTL_RUNNER_SLOTS)
	{
		LWLockRelease(ttl_shmem_slots_lock());
		return false;
	}
	slot = ttl_shmem_slot_any(slotno);
	if (slot->job.id == job_id && slot->job.reserved > 0)
	{
		slot->job.reserved--;
		if (slot->job.active && slot->pid != 0 &&
			slot->blocked_until <= GetCurrentTimestamp())
		{
			for (int i = 0; i < TTL_MAX_HELPERS; i++)
			{
				if (slot->job.helpers[i] == 0)
				{
					slot->job.helpers[i] = MyProcPid;
					info->helper_index = i;
					ok = true;
					break;
				}
			}
		}
	}
	if (ok)
	{
		info->dboid = slot->dboid;
		info->policy_id = slot->job.policy_id;
		info->keytype = slot->job.keytype;
		info->pass_now = slot->job.pass_now;
		info->runner = slot->job.runner_lead != 0;
		HelperSlot = slot;
		HelperJob = job_id;
		HelperDboid = slot->dboid;
	}
	LWLockRelease(ttl_shmem_slots_lock());
	if (ok)
		before_shmem_exit(ttl_parallel_detach, (Datum) 0);
	return ok;
}

/*
 * ttl_parallel_detach
 *		A helper leaves at exit: a slice it still holds goes back with its
 *		progress, and the lead is woken to take it.  Also when it ends
 *		before it is connected (its database dropped meanwhile): the slot is
 *		told by the database it had at the attach, not by ours, which is
 *		not set yet, so that its pid never stays in the job.
 */
static void
ttl_parallel_detach(int code, Datum arg)
{
	Latch	   *lead = NULL;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_EXCLUSIVE);
	if (HelperSlot != NULL)
	{
		TtlJob	   *job = &HelperSlot->job;

		for (int i = 0; i < TTL_MAX_HELPERS && HelperSlot->dboid == HelperDboid; i++)
			if (job->helpers[i] == MyProcPid)
				job->helpers[i] = 0;
		if (HELPER_JOB_OK(HelperSlot))
		{
			for (int i = 0; i < TTL_MAX_SLICES; i++)
			{
				if (job->slices[i].state == TTL_SLICE_TAKEN &&
					job->slices[i].taken_by == MyProcPid)
					ttl_slices_give_back(job, i);
			}
		}
		lead = HelperSlot->latch;
	}
	LWLockRelease(ttl_shmem_slots_lock());
	HelperSlot = NULL;
	if (lead != NULL)
		SetLatch(lead);
}

/*
 * ttl_parallel_must_stop
 *		For a helper between batches: whether its job is over, or its
 *		database is being dropped or renamed.
 */
bool
ttl_parallel_must_stop(void)
{
	bool		stop;

	LWLockAcquire(ttl_shmem_slots_lock(), LW_SHARED);
	stop = HelperSlot == NULL || !HELPER_JOB_OK(HelperSlot) ||
		!HelperSlot->job.active || HelperSlot->pid == 0 ||
		HelperSlot->blocked_until > GetCurrentTimestamp();
	LWLockRelease(ttl_shmem_slots_lock());
	return stop;
}
