/*-------------------------------------------------------------------------
 *
 * yield.c
 *	  Giving way to the application: how a worker tells that other sessions
 *	  are writing, and how long it pauses after a batch while they are.
 *
 * A drain at full speed writes WAL as fast as one core can delete rows.
 * Every commit of the application must flush the WAL inserted before it,
 * most of it ours, and on a small machine the worker also takes a core
 * (benchmark scenario 4 in docs/benchmarks.md says what that costs).  So
 * while others are writing, a worker takes small batches
 * (TTL_BUSY_BATCH_ROWS) and, after each one that wrote, pauses so that its
 * batches fill at most ttl_index.busy_share percent of its time.  When nobody else writes, it
 * runs at full speed again.
 *
 * "Others are writing" is read off the transaction ID counter: every
 * transaction that writes takes an XID.  The workers count the XIDs they
 * take themselves in shared memory: the top-level XID just before a
 * batch's first write (ttl_yield_own_xid), the XID of any subtransaction
 * (ours, or a trigger's exception block) when it ends (a subtransaction
 * callback).  What the counter gained beyond that was taken by someone
 * else.  TTL_BUSY_XIDS of them within TTL_BUSY_WINDOW_MS (or that rate
 * over a longer window, when the worker looked less often) make the worker
 * give way, and it goes on giving way for TTL_BUSY_HOLD_MS after the last
 * such sign.  A few writes a second (a cron job, autovacuum's ANALYZE, a
 * burst of a few dozen inserts) do not slow a drain down; an application
 * that commits writes all the time does, and at thousands of commits a
 * second it is seen within milliseconds.  Read-only sessions take no XID
 * and are not seen: they compete with a drain for CPU only.
 *
 * A batch that gives way deletes its rows in one go and pauses after it.
 * Pausing within the batch as well, the way cost-based delay paces VACUUM,
 * does not help the application (docs/benchmarks.md, "Where the time
 * goes") and keeps each batch's transaction open many times longer.
 *
 * A worker reads its own count between batches, when all its XIDs are
 * counted.  Another worker's or helper's XID is counted a moment after it
 * is taken (a trigger's subtransaction when it ends), so a look can see one
 * uncounted XID per such process taking one just then.  That error is far
 * below TTL_BUSY_XIDS, but not below TTL_LOOK_XIDS: two workers deleting
 * rows whose trigger writes, and a helper, made the look after a sleep
 * take them for an application now and then (TAP 011 saw a worker give way
 * for half a second while only workers wrote).  So a look takes one XID per
 * other running ttl_index process off what it counts as others'.
 *
 * After a sleep the worker does not know yet: for TTL_BUSY_LOOK_MS its
 * batches are small (with pauses no longer than the look), then it
 * decides from the rate it saw (at least TTL_LOOK_XIDS, at a rate that
 * would reach TTL_BUSY_XIDS within the window).  Changes between giving
 * way and full speed are logged at DEBUG1.
 *
 * The workers also run at a low CPU priority (ttl_index.worker_nice, 19
 * by default): a batch that wakes up while every core is busy waits for
 * the application instead of taking a core from it, and a drain competes
 * with read-only sessions, which take no XID, only for spare CPU.  A
 * process may raise its nice value but not lower it again, so a worker
 * asked to run at a lower value than it does exits, and the launcher
 * starts a new one.  When the postmaster already runs at a higher nice
 * value, the workers keep it: they never run at a higher priority than
 * the server.
 *
 * Everything here is process-local except the XID count, a shared atomic
 * counter (shmem.c) that needs no lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#ifndef WIN32
#include <sys/resource.h>
#endif

#include "access/transam.h"
#include "access/xact.h"
#include "utils/timestamp.h"

#include "ttl_index.h"
#include "shared/shared.h"

/* this many XIDs taken by others within one window ... */
#define TTL_BUSY_XIDS			50
/* ... of at most this long mean that the application is writing */
#define TTL_BUSY_WINDOW_MS		1000
/* after a sleep, watch for this long before running at full speed ... */
#define TTL_BUSY_LOOK_MS		10
/* ... and give way if at least this many XIDs came meanwhile (see above) */
#define TTL_LOOK_XIDS			3
/* a batch is taken to have lasted at most this long (clock jumps) */
#define TTL_BUSY_MAX_BATCH_MS	60000

/* set by ttl_yield_start: count our XIDs, pace our batches */
bool		ttl_yield_in_worker = false;

/* the window of observation: counters at its start */
static TimestampTz WindowStart = 0;
static uint64 WindowNextXid = 0;
static uint64 WindowOwnXids = 0;
/* giving way until then */
static TimestampTz BusyUntil = 0;
/* just woken up: watching for TTL_BUSY_LOOK_MS before deciding */
static bool Looking = false;
/* whether the application was seen writing (for the DEBUG1 message) */
static bool WasBusy = false;
/* whether this worker took an XID since its last pause */
static bool Wrote = false;
/* the nice value the worker was started with, its postmaster's */
static int	StartNice = 0;

/*
 * ttl_yield_subxact
 *		Subtransaction callback of a worker: a subtransaction that took an
 *		XID (our partition drops, a trigger's exception block) is ending;
 *		count its XID as a worker's.
 */
static void
ttl_yield_subxact(SubXactEvent event, SubTransactionId mySubid,
				  SubTransactionId parentSubid, void *arg)
{
	if ((event == SUBXACT_EVENT_COMMIT_SUB || event == SUBXACT_EVENT_ABORT_SUB) &&
		TransactionIdIsValid(GetCurrentTransactionIdIfAny()))
	{
		ttl_shmem_count_worker_xid();
		Wrote = true;
	}
}

/*
 * ttl_yield_start
 *		Called once by a worker at start: from now on, its XIDs count as a
 *		worker's and its batches are paced.
 */
void
ttl_yield_start(void)
{
	ttl_yield_in_worker = true;
	RegisterSubXactCallback(ttl_yield_subxact, NULL);
#ifndef WIN32
	errno = 0;
	StartNice = getpriority(PRIO_PROCESS, 0);
	if (errno != 0)
		StartNice = 0;
#endif
	(void) ttl_yield_renice();
}

/*
 * ttl_yield_renice
 *		Run at ttl_index.worker_nice, or at the nice value the worker was
 *		started with if that is higher.  Returns false when the worker runs
 *		at a higher value than that, which it cannot lower: the caller exits
 *		and the launcher starts a new worker.  Called at start and after
 *		every reload of the settings.
 */
bool
ttl_yield_renice(void)
{
#ifndef WIN32
	int			want = Max(ttl_worker_nice, StartNice);
	int			now;

	errno = 0;
	now = getpriority(PRIO_PROCESS, 0);
	if (errno != 0 || now == want)
		return true;
	if (now > want)
		return false;
	if (setpriority(PRIO_PROCESS, 0, want) != 0)
		ereport(WARNING,
				(errmsg("ttl_index: could not set the worker's nice value to %d: %m", want)));
	else
		ereport(DEBUG1,
				(errmsg_internal("ttl_index: worker runs at nice value %d", want)));
#endif
	return true;
}

/*
 * ttl_yield_own_xid
 *		Take the transaction's top-level XID now, before the batch's first
 *		write, and count it as a worker's.  A no-op outside a worker
 *		(ttl_runner() is the application, as far as the workers are
 *		concerned) and once the XID is taken.  Subtransactions' XIDs are
 *		counted as they end (ttl_yield_subxact).
 */
void
ttl_yield_own_xid(void)
{
	if (!ttl_yield_in_worker)
		return;
	if (!TransactionIdIsValid(GetTopTransactionIdIfAny()))
	{
		(void) GetTopTransactionId();
		ttl_shmem_count_worker_xid();
	}
	Wrote = true;
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
 * ttl_yield_signs
 *		Whether `others` XIDs in a window of ms milliseconds say that the
 *		application writes: enough within the window (at that rate, over a
 *		window that grew longer); or, at the end of the look after a sleep,
 *		a rate that would reach that many within the window (the look is too
 *		short to wait for the count).
 */
static bool
ttl_yield_signs(int64 others, long ms)
{
	return others * TTL_BUSY_WINDOW_MS >= (int64) TTL_BUSY_XIDS * Max(ms, TTL_BUSY_WINDOW_MS) ||
		(Looking && ms >= TTL_BUSY_LOOK_MS && others >= TTL_LOOK_XIDS &&
		 others * TTL_BUSY_WINDOW_MS >= (int64) TTL_BUSY_XIDS * ms);
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
	ttl_yield_window(GetCurrentTimestamp(),
					 U64FromFullTransactionId(ReadNextFullTransactionId()),
					 ttl_shmem_worker_xids());
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
	bool		writing;

	if (ttl_busy_share >= 100)
		return false;
	if (WindowStart == 0)
		ttl_yield_restart();

	now = GetCurrentTimestamp();
	next = U64FromFullTransactionId(ReadNextFullTransactionId());
	own = ttl_shmem_worker_xids();
	others = (int64) (next - WindowNextXid) - (int64) (own - WindowOwnXids);
	ms = TimestampDifferenceMilliseconds(WindowStart, now);

	/*
	 * Signs of an application writing, less the other workers' and
	 * helpers' XIDs taken and not yet counted, one each at most: the count
	 * of them reads every database's slot, so only when the signs are
	 * there (an idle worker looks between every visit).
	 */
	if (ttl_yield_signs(others, ms) &&
		ttl_yield_signs(Max(others - Max(ttl_shmem_processes() - 1, 0), 0), ms))
	{
		BusyUntil = TimestampTzPlusMilliseconds(now, TTL_BUSY_HOLD_MS);
		ttl_yield_window(now, next, own);
		Looking = false;
	}
	else if (ms >= TTL_BUSY_WINDOW_MS || WindowStart > now)
		ttl_yield_window(now, next, own);	/* too few to matter */
	if (ms >= TTL_BUSY_LOOK_MS)
		Looking = false;
	/* the clock went back: do not give way for as long */
	if (BusyUntil > TimestampTzPlusMilliseconds(now, TTL_BUSY_HOLD_MS))
		BusyUntil = TimestampTzPlusMilliseconds(now, TTL_BUSY_HOLD_MS);

	writing = now < BusyUntil;
	if (writing != WasBusy)
		ereport(DEBUG1,
				(errmsg_internal("ttl_index: %s (" INT64_FORMAT " XIDs taken by others in %ld ms)",
								 writing ? "giving way" : "full speed", others, ms)));
	WasBusy = writing;
	return writing || Looking;
}

/*
 * ttl_yield_writing
 *		Whether other sessions are writing, as ttl_yield_busy sees it, but
 *		without the doubt of the look after a start or a sleep: for helpers
 *		(helper.c), which leave when the application writes and must not
 *		leave because they just started.
 */
bool
ttl_yield_writing(void)
{
	(void) ttl_yield_busy();
	return WasBusy;
}

/*
 * ttl_yield_pause_ms
 *		How long to pause after a batch that took batch_us microseconds, so
 *		that batches fill ttl_index.busy_share percent of the time; 0 when
 *		the batch wrote nothing or the application is not writing.  While
 *		only looking (just woken up), no longer than the look.  The caller
 *		sleeps at most TTL_BUSY_HOLD_MS at a time and asks again, so that a
 *		long pause ends soon after the application stops.
 */
long
ttl_yield_pause_ms(int64 batch_us)
{
	double		ms;

	if (!Wrote || !ttl_yield_busy())
		return 0;
	Wrote = false;
	batch_us = Min(Max(batch_us, 0), (int64) TTL_BUSY_MAX_BATCH_MS * 1000);
	ms = (double) batch_us / 1000.0 * (100 - ttl_busy_share) / ttl_busy_share;
	ms = Max(ms, 1.0);
	if (GetCurrentTimestamp() >= BusyUntil)
		ms = Min(ms, (double) TTL_BUSY_LOOK_MS);
	return (long) ceil(ms);
}
