/*-------------------------------------------------------------------------
 *
 * drain.c
 *	  The shared drain: a worker (the lead) and its helpers drain one large
 *	  backlog together, in slices of the key range.  This file owns the
 *	  drain from the lead's offer to the job's end, on both sides: when to
 *	  share, the job's tables, starting the helpers, the lead's batches in
 *	  its job, a helper's slices, and the job's end.  The shared state (the
 *	  slices, claims and steals) is parallel.c's; the batches are the
 *	  engine's (batch.c); the helper process is helper.c's.
 *
 * When.  A pass whose second full batch (third on a scattered target) still
 * stops short of the cutoff on a target offers it (ttl_drain_offer); after
 * that batch's commit the worker posts a job and starts up to
 * ttl_index.max_parallel_workers helpers (ttl_drain_start) when:
 *	- the key can be cut (timestamps, dates, integer and float8 epochs);
 *	- no rate limit applies (ttl_index.rate_limit, the policy's): one
 *	  process keeps to it more simply than several;
 *	- the application is not writing (yield.c): helpers are for an idle
 *	  server's backlog;
 *	- the oldest snapshot on the server is not older than the pass: when one
 *	  is, the deleted rows' index entries stay until it ends, and the
 *	  worker's record of them (skip.c), which a shared drain does not keep,
 *	  is what keeps later passes cheap;
 *	- the workers' capacity has room and no database waits (parallel.c).
 *
 * A ttl_runner() call outside a transaction block leads a job the same way
 * (pass->runner; parallel.c gives it a slot of its own), after a batch of
 * its pass, inside its transaction.  The snapshot condition does not apply
 * to it: its own snapshot is the oldest, and its passes keep no record of
 * dead entries.  Its helpers' rows are committed as they go, whatever
 * becomes of the call's transaction; its own are the call's.
 *
 * The job covers the table in hand from the offered key to the cutoff, and
 * the targets after it in the pass (partitions, Citus shards), up to the
 * first scattered one.  The offering batch also read where the table's
 * expired keys end (its index's last entry below the cutoff): the slices
 * of that table are cut over the keys it holds, not over the time up to
 * the cutoff, and the last one reaches on to the cutoff.  A backlog
 * loaded or left two days ago, a few minutes wide, cut up to the cutoff
 * put every row in the lead's first slice; a worker's helpers then split
 * it by halving, one at a time, and a ttl_runner() call's, whose slices
 * are never halved, found all theirs empty.  The lead's batches then take slices like any
 * helper's (ttl_drain_lead_batch); a table whose slices are all done is
 * ended by one batch of the lead's from the job's end, which reads when its
 * next row expires.  The job ends when every slice is done (the helpers'
 * rows join the pass), or with the pass, which cancels it.
 *
 * A helper's pass is its lead's, on the tables they share, made as it
 * claims slices of them (ttl_drain_join, ttl_drain_claim); each batch of
 * it is one engine batch in its slice (ttl_drain_helper_batch), and after
 * its commit the progress others may halve from is recorded
 * (ttl_drain_helper_after).  A helper that leaves gives its slice back
 * with its progress (ttl_drain_leave).
 *
 * State: a TtlDrain hangs off the pass (pass->drain), made at the first
 * offer or join, in the pass's memory.  Locking: none of its own; the
 * shared state is parallel.c's, under the slots lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/procarray.h"
#include "tcop/utility.h"
#include "utils/memutils.h"

#include "ttl_index.h"
#include "engine/engine.h"
#include "engine/batch.h"
#include "engine/drain.h"
#include "policy/policy.h"
#include "shared/shared.h"

/* slices per process sharing a backlog; a ttl_runner() call's job */
#define TTL_SLICES_PER_PROCESS	4
#define TTL_RUNNER_SLICES_PER_PROCESS	8

/*
 * The pass's share of a drain.  The lead's job tables are pass->targets
 * from first on; a helper's are made as it claims slices of them.
 */
typedef struct TtlDrain
{
	/* the lead's offer, made by the pass's last batch */
	TtlTarget  *offer;
	Datum		offer_from;		/* from this key on (by value) */
	bool		offer_have_top;
	Datum		offer_top;		/* its last expired key (by value) */
	bool		waiting;		/* the last batch found every slice taken */
	/* the job: 0 when none is active */
	uint32		job_id;
	TtlTarget  *targets[TTL_MAX_JOB_TARGETS];
	int			ntargets;
	int			first;			/* the lead's: index in pass->targets */
	uint32		handled;		/* the lead's: bit i, table i finished and
								 * looked at */
	TtlTarget  *cur;			/* the table of the slice in hand */
	TtlTarget  *walk;			/* the lead's: a finished table it ends */
	int64		hi;				/* the job's end (the cutoff), an ordinal */
	Oid			keytype;		/* a helper's: the shared key's type */
} TtlDrain;

/*
 * ttl_drain_state
 *		The pass's drain state, made on first use.
 */
static TtlDrain *
ttl_drain_state(TtlPass *pass)
{
	if (pass->drain == NULL)
		pass->drain = MemoryContextAllocZero(pass->cxt, sizeof(TtlDrain));
	return pass->drain;
}

/*
 * ttl_drain_active
 *		Whether the pass's batches are the lead's share of a job.
 */
bool
ttl_drain_active(TtlPass *pass)
{
	return pass->drain != NULL && pass->drain->job_id != 0;
}

/* ----------
 * The lead: offering, starting, ending
 * ----------
 */

/*
 * ttl_drain_batch_begin
 *		Before a batch of the lead's pass: no offer, no wait yet.
 */
void
ttl_drain_batch_begin(TtlPass *pass)
{
	if (pass->drain == NULL)
		return;
	pass->drain->offer = NULL;
	pass->drain->waiting = false;
}

/*
 * ttl_drain_offer
 *		After an engine batch on target t outside a job, with more to do:
 *		offer t from the last key read to the cutoff when the backlog is
 *		worth sharing.  That is a second full batch in the pass; on a
 *		scattered target a third, the second being the sweep's to take
 *		(batch.c), and a slice cannot be swept.  The keys must be ordinals
 *		(by value).
 */
void
ttl_drain_offer(TtlPass *pass, TtlTarget *t, TtlBatchResult *result)
{
	TtlDrain   *d;

	if (!result->have_last || result->deleted <= 0 || !ttl_drain_may_offer(pass, t))
		return;
	d = ttl_drain_state(pass);
	d->offer = t;
	d->offer_from = result->last_key;
	d->offer_have_top = result->have_top;
	d->offer_top = result->top_key;
}

/*
 * ttl_drain_may_offer
 *		Whether a batch on target t that stops short of the cutoff would
 *		offer it: the engine then also reads where its expired keys end
 *		(batch.c), which an offer cuts the slices by.
 */
bool
ttl_drain_may_offer(TtlPass *pass, TtlTarget *t)
{
	return t->keybyval && !t->parallel && !t->have_stop && !t->sweep &&
		ttl_max_parallel_workers > 0 && !ttl_drain_active(pass) &&
		pass->pass_batches >= (t->scattered && t->ttl_attnum == 0 ? 2 : 1);
}

/*
 * ttl_drain_offered
 *		Whether the last batch of the pass offered a backlog to share.
 */
bool
ttl_drain_offered(TtlPass *pass)
{
	return pass->drain != NULL && pass->drain->offer != NULL;
}

/*
 * ttl_drain_waiting
 *		Whether the last batch of the lead found every free slice taken:
 *		the worker waits for a helper's to end.
 */
bool
ttl_drain_waiting(TtlPass *pass)
{
	return pass->drain != NULL && pass->drain->waiting;
}

/*
 * ttl_drain_wanted
 *		Whether helpers may share this policy's backlog now (see the top of
 *		the file), short of the capacity, which ttl_parallel_post checks.
 */
static bool
ttl_drain_wanted(TtlPolicy *policy, TtlPass *pass)
{
	TransactionId horizon;

	if (ttl_max_parallel_workers <= 0 || ttl_rate_limit > 0 ||
		policy->rate_limit > 0 || ttl_yield_writing())
		return false;
	/*
	 * A call's pass that dropped a partition holds the parent's lock until
	 * the call ends: its helpers could lock none of the tables.
	 */
	if (pass->runner)
		return !pass->dropped;
	horizon = GetOldestNonRemovableTransactionId(NULL);
	return !TransactionIdIsValid(horizon) ||
		!TransactionIdPrecedes(horizon, pass->xid_at_start);
}

/*
 * ttl_drain_job_tables
 *		The tables a job over the offer would share: the offered target (in
 *		hand), then those after it in the pass's list, up to the first
 *		scattered one (a slice is drained in key order, and a scattered
 *		table is better swept by the worker alone), or one with rows to
 *		retry or held.  Returns how many.
 */
static int
ttl_drain_job_tables(TtlPass *pass, TtlTarget *offer, TtlJobTarget *tables)
{
	int			n = 0;

	/* the offer is made by the batch on the target in hand */
	Assert(list_nth(pass->targets, pass->current) == offer);
	for (int i = pass->current; i < list_length(pass->targets) &&
		 n < TTL_MAX_JOB_TARGETS; i++)
	{
		TtlTarget  *t = (TtlTarget *) list_nth(pass->targets, i);

		if (n > 0 && (t->scattered || t->retry != NIL ||
					  ttl_held_table_skip(pass->held, t->relid, GetCurrentTimestamp())))
			break;
		tables[n].relid = t->relid;
		tables[n].only = t->only;
		tables[n].shard = t->shard;
		n++;
	}
	return n;
}

/*
 * ttl_drain_set_job
 *		Job job_id is posted over the pass's first ntables targets from the
 *		one in hand on, up to the ordinal hi (the cutoff): the lead's
 *		batches take slices of them from now on.  The known-dead prefix of
 *		the target in hand goes on through the lead's first slice
 *		(contiguous with it) and ends there; the next pass extends it over
 *		the others' ranges as it walks them.
 */
static void
ttl_drain_set_job(TtlPass *pass, int ntables, int64 hi, uint32 job_id)
{
	TtlDrain   *d = ttl_drain_state(pass);
	TtlTarget  *first = (TtlTarget *) list_nth(pass->targets, pass->current);

	d->job_id = job_id;
	d->hi = hi;
	d->first = pass->current;
	d->ntargets = ntables;
	d->handled = 0;
	d->cur = NULL;
	d->walk = NULL;
	for (int i = 0; i < ntables; i++)
	{
		TtlTarget  *t = (TtlTarget *) list_nth(pass->targets, pass->current + i);

		/*
		 * A table the pass has not resolved yet takes the shared key's type
		 * (by value), which its slices' keys are made of; resolving at its
		 * first batch says the same (the tables of one policy share the
		 * column's type).
		 */
		if (t->resolved_gen == 0)
		{
			t->keytype = first->keytype;
			t->keybyval = true;
			t->keylen = sizeof(Datum);
		}
		t->parallel = true;
		t->have_stop = false;
		d->targets[i] = t;
	}
}

/*
 * ttl_drain_start
 *		After a batch of the lead's, outside a transaction (a worker's) or
 *		between batches (a ttl_runner() call's, which takes a runner slot
 *		first), when the batch offered a backlog (ttl_drain_offered): post a
 *		job over it up to the cutoff and start its helpers, or do nothing.
 */
void
ttl_drain_start(TtlPolicy *policy, TtlPass *pass)
{
	TtlDrain   *d = pass->drain;
	TtlTarget  *t;
	TtlCutoff	cutoff;
	int64		lo;
	int64		hi;
	int64		top;
	int			want = Min(ttl_max_parallel_workers, TTL_MAX_HELPERS);
	int			n;
	int			slotno = -1;
	uint32		job_id = 0;
	TtlJobTarget tables[TTL_MAX_JOB_TARGETS];
	int			ntables;

	Assert(!IsTransactionState() || pass->runner);
	if (d == NULL || d->offer == NULL)
		return;
	t = d->offer;
	d->offer = NULL;
	if (t->parallel || ttl_drain_active(pass) || !ttl_drain_wanted(policy, pass))
		return;
	if (pass->runner && !ttl_parallel_runner_begin())
		return;

	ttl_cutoff_compute(policy, t->keytype, ttl_policy_zone(policy), pass->now,
					   &cutoff);
	/* a cap alone has no expired backlog to share (cap.c) */
	if (cutoff.none)
		return;
	if (!ttl_key_ordinal(t->keytype, d->offer_from, &lo) ||
		!ttl_key_ordinal(t->keytype, cutoff.bound, &hi))
		return;
	/* the slices of the table in hand over the keys it holds (above) */
	top = hi;
	if (d->offer_have_top && ttl_key_ordinal(t->keytype, d->offer_top, &top) &&
		top < hi)
		top++;
	else
		top = hi;
	ntables = ttl_drain_job_tables(pass, t, tables);
	/* a call's slices are never halved (slices.c): more, narrower ones */
	n = ttl_parallel_post(policy->id, t->keytype, pass->now, tables, ntables,
						  lo, top, hi, (pass->runner ? TTL_RUNNER_SLICES_PER_PROCESS :
								   TTL_SLICES_PER_PROCESS) * (want + 1), want,
						  &slotno, &job_id);
	if (n <= 0)
		return;
	ttl_drain_set_job(pass, ntables, hi, job_id);

	for (int i = 0; i < n; i++)
	{
		BackgroundWorker bgw;

		ttl_shmem_bgworker(&bgw, "ttl_helper_main", "ttl_index helper");
		snprintf(bgw.bgw_name, BGW_MAXLEN, "ttl_index helper");
		bgw.bgw_main_arg = Int32GetDatum(slotno);
		memcpy(bgw.bgw_extra, &job_id, sizeof(job_id));
		if (!RegisterDynamicBackgroundWorker(&bgw, NULL))
		{
			/* no background worker slot: the others share it */
			ttl_parallel_unreserve();
		}
	}
	ereport(DEBUG1,
			(errmsg("ttl_index: %d helper(s) share the backlog of policy %d",
					n, policy->id)));
}

/*
 * ttl_drain_job_over
 *		The lead's job ended, every slice done, or cancelled (a table of it
 *		errored out of the pass in hand, or the settings changed): the
 *		helpers' rows join the pass, and the pass goes on after the job's
 *		tables.
 */
static void
ttl_drain_job_over(TtlPass *pass)
{
	TtlDrain   *d = pass->drain;
	int64		left;
	int64		skipped;

	pass->pass_rows += ttl_parallel_end(d->job_id, &left, &skipped);
	pass->pass_left += left;
	/* rows a helper found locked: the pass is not caught up */
	pass->pass_skipped_locked += skipped;
	d->job_id = 0;
	for (int i = 0; i < d->ntargets; i++)
	{
		d->targets[i]->parallel = false;
		d->targets[i]->have_stop = false;
	}
	pass->current = d->first + d->ntargets;
	d->ntargets = 0;
	d->cur = NULL;
	d->walk = NULL;
}

/*
 * ttl_drain_end
 *		The pass ends: its job, if any, is cancelled; the helpers stop after
 *		their batch in hand.
 */
void
ttl_drain_end(TtlPass *pass)
{
	int64		left;
	int64		skipped;

	if (ttl_drain_active(pass))
		(void) ttl_parallel_end(pass->drain->job_id, &left, &skipped);
}

/* ----------
 * Slices: the lead's and the helpers'
 * ----------
 */

/*
 * ttl_drain_take_slice
 *		Slice number slice, as claimed, becomes the one in hand on target t:
 *		its batches scan from the claim's start (or the index's) to its end.
 */
static void
ttl_drain_take_slice(TtlPass *pass, TtlTarget *t, int slice, TtlClaim *claim)
{
	Assert(t->parallel);
	t->slice = slice;
	t->have_stop = true;
	t->stop_key = ttl_key_from_ordinal(t->keytype, claim->hi);
	if (claim->from_start)
		t->have_resume = false;
	else
		ttl_batch_resume_from(pass, t, ttl_key_from_ordinal(t->keytype, claim->from));
	pass->drain->cur = t;
}

/*
 * ttl_drain_refresh
 *		Before a batch in a slice: its end, which another process may have
 *		moved down by taking the upper half (parallel.c).
 */
static void
ttl_drain_refresh(TtlTarget *t)
{
	int64		hi;

	if (t->have_stop && ttl_parallel_slice_end(t->slice, &hi))
		t->stop_key = ttl_key_from_ordinal(t->keytype, hi);
}

/*
 * ttl_drain_slice_done
 *		After a batch in a slice (the lead's or a helper's): record the
 *		progress others may halve from, or at the slice's end release it,
 *		or give its table up when the table is locked, gone or without its
 *		index.  Returns whether the slice is still in hand.
 */
static bool
ttl_drain_slice_done(TtlTarget *t, TtlBatchOutcome outcome, TtlBatchResult *result,
					 bool helper)
{
	int64		cur = 0;
	bool		have_cur;

	Assert(t->have_stop);
	have_cur = outcome == TTL_BATCH_MORE && t->have_resume &&
		ttl_key_ordinal(t->keytype, t->resume_key, &cur);
	ttl_parallel_progress(t->slice, have_cur, cur, helper ? result->deleted : 0,
						  helper ? result->left : 0,
						  helper ? result->skipped_locked : 0);
	if (outcome == TTL_BATCH_MORE)
		return true;
	if (outcome == TTL_BATCH_DONE)
		ttl_parallel_release(t->slice, true);
	else
		ttl_parallel_give_up(t->slice, outcome);
	t->have_stop = false;
	return false;
}

/*
 * ttl_drain_lead_next
 *		The lead's next batch in its job: on the table it ends, else on the
 *		slice in hand, else on a drained table to end, else on a slice it
 *		claims.  Returns NULL with *wait when every slice left is a
 *		helper's, and NULL without when the job is over.
 *
 * A drained table ends with one batch from the job's end (the cutoff),
 * which finds nothing and reads when the table's next row expires.  Its
 * known-dead prefix ends where the lead's own contiguous slices ended: the
 * next pass walks from there over the helpers' dead entries, as a pass's
 * start does after any drain, extending the prefix, and deletes a row
 * inserted meanwhile with a key below this pass's cutoff.  Walking them
 * here instead (a heap visit per dead entry) took the CPU the helpers
 * drained with, and delayed the pass's end by a walk per table.  A table
 * the job ended under (the lead's database being dropped) is walked from
 * its prefix, which deletes what may be left.
 */
static TtlTarget *
ttl_drain_lead_next(TtlPass *pass, bool *wait)
{
	TtlDrain   *d = pass->drain;
	TtlClaim	claim;
	int			i;
	int			outcome;

	*wait = false;
	if (d->walk != NULL)
		return d->walk;
	if (d->cur != NULL)
		return d->cur;

	while ((i = ttl_parallel_finished(d->handled, &outcome)) >= 0)
	{
		TtlTarget  *t = d->targets[i];

		d->handled |= (uint32) 1 << i;
		t->parallel = false;
		t->have_stop = false;
		if (outcome == TTL_BATCH_LOCKED && pass->runner)
		{
			/*
			 * A call's helpers found it locked, maybe by the call's own
			 * transaction (a lock its caller took): the call, which
			 * makes one pass only, walks it whole itself.
			 */
			t->have_resume = false;
			d->walk = t;
			return t;
		}
		else if (outcome == TTL_BATCH_LOCKED)
			pass->skipped_locked = true;
		else if (outcome == TTL_BATCH_NO_INDEX)
			pass->missing_index = true;
		else if (outcome == TTL_BATCH_MORE)
		{
			/* drained: from the job's end, which reads the next expiry */
			ttl_batch_resume_from(pass, t, ttl_key_from_ordinal(t->keytype, d->hi));
			d->walk = t;
			return t;
		}
	}

	i = ttl_parallel_claim(&claim);
	if (i >= 0)
	{
		TtlTarget  *t = d->targets[claim.target];
		int64		at;

		/*
		 * The known-dead prefix goes on only through a slice that starts
		 * where the lead stood, or from the index's start (past the
		 * prefix): the others start elsewhere.
		 */
		if (!claim.from_start && t->skip.tracking &&
			!(t->have_resume && ttl_key_ordinal(t->keytype, t->resume_key, &at) &&
			  at == claim.from))
			ttl_skip_forget(t);
		ttl_drain_take_slice(pass, t, i, &claim);
		return t;
	}
	if (i == TTL_CLAIM_BUSY)
	{
		*wait = true;
		return NULL;
	}

	/* a helper finished a table's last slice since the look above */
	if (ttl_parallel_finished(d->handled, &outcome) >= 0)
		return ttl_drain_lead_next(pass, wait);

	/*
	 * Every slice done, or the job ended under the lead (its database is
	 * being dropped): a table not looked at yet is walked from its prefix,
	 * which deletes what may be left of it.
	 */
	for (i = 0; i < d->ntargets; i++)
	{
		TtlTarget  *t = d->targets[i];

		if ((d->handled & ((uint32) 1 << i)) != 0)
			continue;
		d->handled |= (uint32) 1 << i;
		t->parallel = false;
		t->have_stop = false;
		t->have_resume = false;
		d->walk = t;
		return t;
	}
	ttl_drain_job_over(pass);
	return NULL;
}

/*
 * ttl_drain_lead_batch
 *		One batch of the lead's pass in its job (ttl_drain_active): on a
 *		slice or a table it ends, or none when every free slice is a
 *		helper's (ttl_drain_waiting then says so).  Returns false, having
 *		run no batch, when the job is over: the pass goes on after its
 *		tables.
 */
bool
ttl_drain_lead_batch(TtlPolicy *policy, TtlPass *pass, TtlBatchResult *result)
{
	TtlDrain   *d = pass->drain;
	TtlTarget  *t;
	TtlBatchOutcome outcome;
	bool		wait;

	Assert(ttl_drain_active(pass));
	t = ttl_drain_lead_next(pass, &wait);
	if (wait)
	{
		/* every free slice is taken: the worker waits for its helpers */
		d->waiting = true;
		result->outcome = TTL_BATCH_MORE;
		return true;
	}
	if (t == NULL)
		return false;

	if (t->have_stop)
		ttl_drain_refresh(t);
	outcome = ttl_batch_run(policy, pass, t, result);
	if (t == d->walk)
	{
		if (outcome == TTL_BATCH_LOCKED)
			pass->skipped_locked = true;
		else if (outcome == TTL_BATCH_NO_INDEX)
			pass->missing_index = true;
		if (outcome != TTL_BATCH_MORE)
			d->walk = NULL;
	}
	else if (!ttl_drain_slice_done(t, outcome, result, false))
		d->cur = NULL;
	result->outcome = TTL_BATCH_MORE;
	return true;
}

/*
 * ttl_drain_join
 *		A helper's pass (new, from ttl_pass_begin) joins its lead's job:
 *		its tables are made as it claims slices of them; it lists none of
 *		its own and drops no partition.
 */
void
ttl_drain_join(TtlPass *pass, TtlJobInfo *info)
{
	TtlDrain   *d = ttl_drain_state(pass);

	d->keytype = info->keytype;
	pass->listed = true;
	pass->drops_done = true;
}

/*
 * ttl_drain_claim
 *		A helper's next slice, claimed (parallel.c) and made the one in
 *		hand.  Returns its number, or TTL_CLAIM_BUSY when every slice left
 *		is another's and cannot be halved yet, or TTL_CLAIM_OVER.
 */
int
ttl_drain_claim(TtlPass *pass)
{
	TtlDrain   *d = pass->drain;
	TtlClaim	claim;
	TtlTarget  *t;
	int			slice;

	Assert(d != NULL && d->cur == NULL);
	slice = ttl_parallel_claim(&claim);
	if (slice < 0)
		return slice;
	t = d->targets[claim.target];
	if (t == NULL)
	{
		t = ttl_target_create(claim.table.relid, claim.table.only, pass->cxt);
		t->shard = claim.table.shard;
		/* the shared key's type (by value); resolving says the same */
		t->keytype = d->keytype;
		t->keybyval = true;
		t->keylen = sizeof(Datum);
		t->parallel = true;
		d->targets[claim.target] = t;
		pass->targets = lappend(pass->targets, t);
	}
	ttl_drain_take_slice(pass, t, slice, &claim);
	return slice;
}

/*
 * ttl_drain_helper_batch
 *		One batch of a helper in its slice, up to the slice's end as it
 *		stands now.  Must be called inside a transaction; the recording is
 *		for after its commit (ttl_drain_helper_after).
 */
TtlBatchOutcome
ttl_drain_helper_batch(TtlPolicy *policy, TtlPass *pass, TtlBatchResult *result)
{
	TtlTarget  *t = pass->drain->cur;

	Assert(t != NULL && t->have_stop);
	memset(result, 0, sizeof(TtlBatchResult));
	/* what the last batch collected, kept until now for ttl_pass_isolate */
	MemoryContextReset(pass->rowscxt);
	PreventCommandIfReadOnly("DELETE");
	ttl_drain_refresh(t);
	result->outcome = ttl_batch_run(policy, pass, t, result);
	pass->pass_rows += result->deleted;
	pass->pass_batches++;
	return result->outcome;
}

/*
 * ttl_drain_helper_after
 *		After a helper's batch committed: its progress, its rows, and the
 *		slice released or its table given up at the end.  Returns whether
 *		the slice is still in hand.
 */
bool
ttl_drain_helper_after(TtlPass *pass, TtlBatchResult *result)
{
	TtlDrain   *d = pass->drain;

	if (ttl_drain_slice_done(d->cur, result->outcome, result, true))
		return true;
	d->cur = NULL;
	return false;
}

/*
 * ttl_drain_leave
 *		A helper leaves with its slice in hand: it goes back, part done.
 */
void
ttl_drain_leave(TtlPass *pass)
{
	TtlDrain   *d = pass->drain;

	if (d == NULL || d->cur == NULL)
		return;
	if (d->cur->have_stop)
		ttl_parallel_release(d->cur->slice, false);
	d->cur->have_stop = false;
	d->cur = NULL;
}
