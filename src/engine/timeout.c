/*-------------------------------------------------------------------------
 *
 * timeout.c
 *	  The wall-time bound of a worker's or a helper's batch
 *	  (ttl_index.batch_timeout), whatever the table owner's code in it does.
 *
 * A batch runs the owner's triggers, rules and filter with
 * statement_timeout off (owner.c): an owner's trigger that sleeps an hour
 * would hold the database's worker, and every other owner's policies, for
 * that hour.  So each batch has a timeout of its own: past it, the batch is
 * canceled as a statement is, and the caller, seeing that the cancel is
 * ours (ttl_timeout_fired), fails the batch as the policy's, which rests
 * like any failing policy while the database's other policies go on.  Code
 * that catches the cancel and goes on (PL/pgSQL can catch query_canceled)
 * meets a second deadline, as long again: the process then ends as on
 * SIGTERM, and the worker that replaces it rests the policy whose batch was
 * in flight (worker.c).
 *
 * The bound is ttl_index.batch_timeout when it is positive, 0 for none, and
 * by default (-1) a hundred times ttl_index.batch_time, at least ten
 * seconds: far above what a batch takes, which the row limit adapts to
 * batch_time (batch.c), yet bounded.
 *
 * ttl_runner() has none of this: it runs in the caller's session, under
 * the caller's statement_timeout.
 *
 * Process-local state only; the handlers run in signal context and only
 * set flags and the latch.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timeout.h"

#include "ttl_index.h"
#include "engine/engine.h"

/* the default bound: batch_time times this, at least TTL_TIMEOUT_MIN_MS */
#define TTL_TIMEOUT_FACTOR		100
#define TTL_TIMEOUT_MIN_MS		10000

static TimeoutId CancelTimeout = MAX_TIMEOUTS;
static TimeoutId KillTimeout = MAX_TIMEOUTS;
static volatile sig_atomic_t Fired = false;
static volatile sig_atomic_t Killed = false;

/* the first deadline: cancel the batch */
static void
ttl_timeout_cancel(void)
{
	Fired = true;
	QueryCancelPending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

/* the second: the owner's code caught the cancel; end the process */
static void
ttl_timeout_kill(void)
{
	Killed = true;
	ProcDiePending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

/*
 * ttl_timeout_ms
 *		The bound of a batch now, in milliseconds; 0 for none.
 */
int
ttl_timeout_ms(void)
{
	if (ttl_batch_timeout >= 0)
		return ttl_batch_timeout;
	return Max(ttl_batch_time * TTL_TIMEOUT_FACTOR, TTL_TIMEOUT_MIN_MS);
}

/*
 * ttl_timeout_batch_start
 *		A batch begins: arm its deadlines (registering them the first time).
 */
void
ttl_timeout_batch_start(void)
{
	int			ms = ttl_timeout_ms();

	if (CancelTimeout == MAX_TIMEOUTS)
	{
		CancelTimeout = RegisterTimeout(USER_TIMEOUT, ttl_timeout_cancel);
		KillTimeout = RegisterTimeout(USER_TIMEOUT, ttl_timeout_kill);
	}
	Fired = false;
	if (ms <= 0)
		return;
	enable_timeout_after(CancelTimeout, ms);
	enable_timeout_after(KillTimeout, ms > INT_MAX / 2 ? INT_MAX : 2 * ms);
}

/*
 * ttl_timeout_batch_end
 *		The batch ended, committed or not: disarm.
 */
void
ttl_timeout_batch_end(void)
{
	if (CancelTimeout == MAX_TIMEOUTS)
		return;
	disable_timeout(CancelTimeout, false);
	disable_timeout(KillTimeout, false);
}

/*
 * ttl_timeout_fired
 *		Whether the batch that just failed was canceled by its deadline (not
 *		by someone's pg_cancel_backend()).  Resets the flag.
 */
bool
ttl_timeout_fired(void)
{
	bool		fired = Fired;

	Fired = false;
	return fired;
}

/*
 * ttl_timeout_killed
 *		Whether the process is ending because the batch ran past its second
 *		deadline (for the record the worker leaves, worker.c).
 */
bool
ttl_timeout_killed(void)
{
	return Killed;
}
