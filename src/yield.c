/*-------------------------------------------------------------------------
 *
 * yield.c
 *	  Giving way to the application: how a worker tells that other sessions
 *	  are writing, and how long it pauses after a batch while they are.
 *
 * A drain at full speed writes WAL as fast as one core can delete rows.
 * Every commit of the application must flush the WAL inserted before it,
 * most of it ours, and on a small machine the worker also takes a core.
 * Measured on two cores (benchmark scenario 4), that costs an insert-heavy
 * application about 40% of its throughput and multiplies its p99 latency
 * by five for as long as the drain lasts.  So while others are writing,
 * a worker takes small batches (TTL_BUSY_BATCH_ROWS) and, after each one,
 * pauses so that its batches fill at most ttl_index.busy_share percent of
 * its time.  When nobody else writes, it runs at full speed again.
 *
 * "Others are writing" is read off the transaction ID counter: every
 * transaction that writes takes an XID.  The workers count the XIDs they
 * take themselves in shared memory (ttl_yield_own_xid, called just before
 * the first write of a batch, so the count follows the counter within
 * microseconds); what the counter gained beyond that was taken by someone
 * else.  TTL_BUSY_XIDS of them within TTL_BUSY_WINDOW_MS make the worker
 * yield, and it goes on yielding for TTL_BUSY_HOLD_MS after the last such
 * sign.  A few writes a second (a cron job, autovacuum's ANALYZE, a burst
 * of twenty inserts) do not slow a drain down; an application that commits
 * writes all the time does, and at thousands of commits a second it is
 * seen within milliseconds.  Read-only sessions take no XID and are not
 * seen: they compete with a drain for CPU only.
 *
 * After a sleep the worker does not know yet: its first batches are small
 * ones, and after TTL_BUSY_LOOK_MS it decides from the rate it saw (at
 * least two XIDs, at a rate that would reach TTL_BUSY_XIDS within the
 * window).  Transitions are logged at DEBUG1.
 *
 * Everything here is process-local except the XID count, a shared atomic
 * counter (launcher.c) that needs no lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/transam.h"
#include "access/xact.h"
#include "utils/timestamp.h"

#include "ttl_index.h"

/* this many XIDs taken by others within one window ... */
#define TTL_BUSY_XIDS			50
/* ... of at most this long mean that the application is writing */
#define TTL_BUSY_WINDOW_MS		1000
/* yield for this long after the last sign of writing */
#define TTL_BUSY_HOLD_MS		1000
/* after a sleep, watch for this long before running at full speed */
#define TTL_BUSY_LOOK_MS		10

/* set by the worker at start: count our XIDs, pace our batches */
bool		ttl_yield_in_worker = false;

/* the window of observation: counters at its start */
static TimestampTz WindowStart = 0;
static uint64 WindowNextXid = 0;
static uint64 WindowOwnXids = 0;
/* yielding until then */
static TimestampTz BusyUntil = 0;
/* just woken up: watching for TTL_BUSY_LOOK_MS before deciding */
static bool Looking = false;
/* what the last look decided (for the DEBUG1 message on a change) */
static bool WasBusy = false;

static void ttl_yield_window(TimestampTz now, uint64 next, uint64 own);

/*
 * ttl_yield_own_xid
 *		Take the transaction's XID now, before the batch's first write, and
 *		count it as a worker's.  A no-op outside a worker (ttl_runner() is
 *		the application, as far as the workers are concerned) and once the
 *		XIDs are taken.  Inside a subtransaction, its XID is counted too.
 */
void
ttl_yield_own_xid(void)
{
	if (!ttl_yield_in_worker)
		return;
	if (!TransactionIdIsValid(GetTopTransactionIdIfAny()))
	{
		(void) GetTopTransactionId();
		ttl_shared_count_worker_xid();
	}
	if (IsSubTransaction() &&
		!TransactionIdIsValid(GetCurrentTransactionIdIfAny()))
	{
		(void) GetCurrentTransactionId();
		ttl_shared_count_worker_xid();
	}
}

/*
 * ttl_yield_window
 *		Start a window of observation with these counters.
 */
static void
ttl_yield_window(TimestampTz now, uint64 next, uint64 own)
{
	WindowStart = now;
	WindowNextXid = next;
	WindowOwnXids = own;
}

/*
 * ttl_yield_restart
 *		The worker has just woken up: whatever it saw before its sleep is
 *		stale.  Start a new window, and give way until it has watched for
 *		TTL_BUSY_LOOK_MS.
 */
void
ttl_yield_restart(void)
{
	TimestampTz now = GetCurrentTimestamp();
	uint64		next = U64FromFullTransactionId(ReadNextFullTransactionId());

	/* read after the counter: an XID a worker just took is counted by now */
	ttl_yield_window(now, next, ttl_shared_worker_xids());
	Looking = true;
}

/*
 * ttl_yield_busy
 *		Whether the worker should give way now: the application is writing,
 *		or the worker has not watched long enough to know.  Reads the
 *		counters and moves the window on.
 */
bool
ttl_yield_busy(void)
{
	TimestampTz now;
	uint64		next;
	uint64		own;
	int64		others;
	long		ms;
	bool		busy;

	if (ttl_busy_share >= 100)
		return false;
	if (WindowStart == 0)
		ttl_yield_restart();

	now = GetCurrentTimestamp();
	next = U64FromFullTransactionId(ReadNextFullTransactionId());
	own = ttl_shared_worker_xids();
	others = (int64) (next - WindowNextXid) - (int64) (own - WindowOwnXids);
	ms = (long) ((now - WindowStart) / 1000);

	/*
	 * Enough XIDs within the window; or, at the end of the first look after
	 * a sleep, a rate that would reach that many within the window (the
	 * look is too short to wait for the count).
	 */
	if (others >= TTL_BUSY_XIDS ||
		(Looking && ms >= TTL_BUSY_LOOK_MS && others >= 2 &&
		 others * TTL_BUSY_WINDOW_MS >= (int64) TTL_BUSY_XIDS * ms))
	{
		BusyUntil = TimestampTzPlusMilliseconds(now, TTL_BUSY_HOLD_MS);
		ttl_yield_window(now, next, own);
		Looking = false;
	}
	else if (ms >= TTL_BUSY_WINDOW_MS)
		ttl_yield_window(now, next, own);	/* too few to matter */
	if (ms >= TTL_BUSY_LOOK_MS)
		Looking = false;

	busy = now < BusyUntil || Looking;
	if (busy != WasBusy)
		ereport(DEBUG1,
				(errmsg_internal("ttl_index: %s (" INT64_FORMAT " XIDs taken by others in %ld ms)",
								 busy ? "giving way" : "full speed", others, ms)));
	WasBusy = busy;
	return busy;
}

/*
 * ttl_yield_pause_ms
 *		How long to pause after a batch that took batch_us microseconds, so
 *		that batches fill ttl_index.busy_share percent of the time; 0 when
 *		the application is not writing.
 */
long
ttl_yield_pause_ms(int64 batch_us)
{
	double		ms;

	if (!ttl_yield_busy())
		return 0;
	ms = (double) batch_us / 1000.0 * (100 - ttl_busy_share) / ttl_busy_share;
	return (long) ceil(Max(ms, 1.0));
}
