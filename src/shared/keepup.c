/*-------------------------------------------------------------------------
 *
 * keepup.c
 *	  Keeping up: how fast a policy's rows expire, how fast the worker
 *	  deletes them, whether its backlog grows, and how short giving way
 *	  must make its pauses so that it never falls behind.
 *
 * A pass deletes the rows that had expired when it began.  So the rows a
 * pass deletes are those whose expiry fell between its start and the start
 * of the pass before: their count over that time is the rate at which the
 * policy's rows expire (expiry_rate), measured where it matters, with its
 * filter and per-row TTL, and without counting anything.  The pass's rows
 * over its own duration are the rate at which the worker deleted them
 * (delete_rate).  The rate is taken only from passes that began at most
 * TTL_KEEPUP_MAX_INTERVAL_MS apart, as they do while rows keep expiring: a
 * pass after a long quiet time (the worker off, a bulk load of rows that
 * had expired already) would count an old backlog as a rate, and the
 * worker would stop giving way to drain it.  The last rate taken stays
 * meanwhile, through the long passes of a policy falling behind too.
 *
 * Giving way (yield.c) slows the worker to a share of its time while the
 * application writes.  If rows expire faster than that pace, every pass
 * is longer than the one before, and the backlog grows for as long as the
 * application writes.  So while a policy's pass runs, the pause after its
 * batch is cut short where waiting would bring the pass's own rate below
 * expiry_rate plus TTL_KEEPUP_MARGIN: a pass then takes at most
 * 1/(1 + margin) of the time the rows took to arrive, and the next pass
 * is shorter again.  An old backlog (the first pass, or one after the
 * policy was paused) still drains at the giving-way pace: the rate is
 * measured from the pass before, and at a fresh start there is none.
 *
 * A policy falls behind when its passes grow, each taking longer than
 * TTL_KEEPUP_SHORT_MS and deleting more rows than the one before, for
 * TTL_KEEPUP_BEHIND_PASSES passes in a row (falling_behind in
 * ttl_index_stats); when that has gone on for ttl_index.behind_warning
 * the worker logs one WARNING, and one LOG when a pass no longer grows.
 * That happens when the worker cannot keep up even at full speed, or with
 * ttl_index.keep_up off.
 *
 * Purge windows (window.c).  A policy that may purge only some hours of
 * the week must delete a week's rows in those hours: the pace keep-up asks
 * for is the expiry rate divided by the share of the week its windows
 * cover (for windows of every day, the share of the day).  The rate itself is measured between the passes inside a window,
 * as rows expire all day; a window's first pass, after hours without one,
 * is the backlog and takes no rate.  A window that closes before its pass
 * is over leaves expired rows to the next: the policy is falling behind
 * until a pass ends inside a window, and the worker says so once.
 *
 * Locking: none; process-local state kept in the worker's schedule entry.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "utils/timestamp.h"

#include "ttl_index.h"
#include "shared/shared.h"

/* delete at least this much faster than rows expire */
#define TTL_KEEPUP_MARGIN			0.25
/* a pass shorter than this is not a backlog */
#define TTL_KEEPUP_SHORT_MS			500
/* this many growing passes in a row: falling behind */
#define TTL_KEEPUP_BEHIND_PASSES	2
/* a rate measured over a longer time between passes is not taken */
#define TTL_KEEPUP_MAX_INTERVAL_MS	10000

/*
 * ttl_keepup_pass_done
 *		A pass that began at `start` ended at `end` having deleted `rows`:
 *		update the rates and the growth, and say when the policy has been
 *		falling behind for long, or no longer is.
 */
void
ttl_keepup_pass_done(TtlKeepUp *k, TimestampTz start, TimestampTz end, int64 rows,
					 const char *relname, const char *column)
{
	long		ms = TimestampDifferenceMilliseconds(start, end);
	bool		growing;

	if (k->prev_start != 0 && start > k->prev_start &&
		!TimestampDifferenceExceeds(k->prev_start, start, TTL_KEEPUP_MAX_INTERVAL_MS))
		k->expiry_rate = (double) rows * 1000000.0 / (double) (start - k->prev_start);
	k->delete_rate = rows > 0 ? (double) rows * 1000.0 / Max(ms, 1) : 0;

	growing = k->prev_start != 0 && ms >= TTL_KEEPUP_SHORT_MS && rows > k->prev_rows;
	k->prev_start = start;
	k->prev_rows = rows;
	k->window_missed = false;
	if (!growing)
	{
		k->growing_passes = 0;
		k->growing_since = 0;
		if (k->warned)
			ereport(LOG,
					(errmsg("ttl_index: the purge of %s keeps up again", relname),
					 errdetail("Column %s: its last pass deleted " INT64_FORMAT " rows in %ld ms.",
							   column, rows, ms)));
		k->warned = false;
		return;
	}
	if (k->growing_passes++ == 0)
		k->growing_since = start;
	if (!k->warned && k->growing_passes >= TTL_KEEPUP_BEHIND_PASSES &&
		TimestampDifferenceExceeds(k->growing_since, end, ttl_behind_warning * 1000))
	{
		k->warned = true;
		ereport(WARNING,
				(errmsg("ttl_index: the purge of %s is falling behind", relname),
				 errdetail("Column %s: for %ld s every pass has been longer than the last; rows expire at "
						   "%.0f a second, the last pass deleted %.0f a second.",
						   column, TimestampDifferenceMilliseconds(k->growing_since, end) / 1000,
						   k->expiry_rate, k->delete_rate),
				 errhint("%s", ttl_keep_up ?
						 "The worker cannot delete as fast as rows expire: see ttl_index_stats, and raise ttl_index.busy_share or the hardware's limits." :
						 "ttl_index.keep_up is off: giving way to the application slows the worker below the rate rows expire at.")));
	}
}

/*
 * ttl_keepup_behind
 *		Whether the policy's passes have been growing (falling_behind).
 */
bool
ttl_keepup_behind(TtlKeepUp *k)
{
	return k->growing_passes >= TTL_KEEPUP_BEHIND_PASSES || k->window_missed;
}

/*
 * ttl_keepup_window_closed
 *		The policy's purge window closed before its pass ended: falling
 *		behind until a pass ends.  Said once per run of such windows.
 *		Needs a transaction (the zone's name for the message).
 */
void
ttl_keepup_window_closed(TtlKeepUp *k, const char *relname, const char *column,
						 TimestampTz opens)
{
	bool		first = !k->window_missed;

	k->window_missed = true;
	if (first && !k->warned)
	{
		k->warned = true;
		ereport(WARNING,
				(errmsg("ttl_index: the purge window of %s closed with expired rows left", relname),
				 errdetail("Column %s: the rows wait for the next window, which opens at %s.",
						   column, timestamptz_to_str(opens)),
				 errhint("Widen the window with ttl_create_index(..., purge_window => ...), or raise ttl_index.busy_share so that the worker gives way less inside it.")));
	}
}

/*
 * ttl_keepup_pause_ms
 *		Cut a pause of giving way short, so that the pass in hand (begun at
 *		pass_start, `rows` deleted so far) deletes at least expiry_rate plus
 *		the margin, over the share of the week its windows cover.  Returns
 *		the pause to take.
 */
long
ttl_keepup_pause_ms(TtlKeepUp *k, TimestampTz pass_start, int64 rows, long pause_ms,
					double window_share)
{
	double		target;
	double		elapsed_s;
	double		allowed_ms;

	if (!ttl_keep_up || k->expiry_rate <= 0 || pause_ms <= 0)
		return pause_ms;
	/* a week's rows in the hours of its windows */
	target = k->expiry_rate * (1.0 + TTL_KEEPUP_MARGIN) / Max(window_share, 0.001);
	elapsed_s = (double) (GetCurrentTimestamp() - pass_start) / 1000000.0;
	allowed_ms = ((double) rows / target - elapsed_s) * 1000.0;
	if (allowed_ms <= 0)
		return 0;
	return Min(pause_ms, (long) ceil(allowed_ms));
}
