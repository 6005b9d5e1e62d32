/*-------------------------------------------------------------------------
 *
 * window.c
 *	  Purge windows: the hours of the day a policy may purge in
 *	  (ttl_create_index(..., purge_window => '01:00-05:00, 13:00-14:00')).
 *
 * A window is a range of wall-clock minutes of the day, from its start up
 * to (not including) its end; one whose end is not after its start runs
 * over midnight ('22:00-02:00'), and '00:00-24:00' is the whole day.  A
 * policy has at most TTL_MAX_WINDOWS, which must not overlap.  The text is
 * stored as ttl_window_normalize writes it ('01:00-05:00,13:00-14:00') and
 * read again by every reader: the worker, ttl_runner() and the views.
 *
 * The clock is the policy's time zone (expiry.c, ttl_policy_zone): the one
 * its timestamp or date key is read in, else the server's TimeZone.  A
 * window's edges are wall-clock times of that zone, found on each day as
 * PostgreSQL reads a local time (a timestamp cast to timestamptz): on the
 * day a zone skips an hour, an edge inside the gap is read with the offset
 * from before the change (02:30 in New York becomes 03:30 EDT); on the day
 * it repeats one, at its second occurrence.  A window whose end is then
 * before its start is empty that day.
 *
 * Outside its windows a policy starts no pass, and a pass in hand ends at
 * its next batch (worker.c); ttl_runner() leaves it alone.  Keep-up
 * (keepup.c) asks for the pace that purges a day's rows in the windows'
 * hours, and a window that closes with expired rows left is falling
 * behind.
 *
 * Memory: the worker asks ttl_window_find outside any transaction, at
 * every batch of a windowed policy, and it allocates nothing: its zone is
 * the one kept on the policy (ttl_policy_zone), whose look-up leaves
 * nothing behind.
 *
 * Locking: none; arithmetic on a policy read by the caller.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "lib/stringinfo.h"
#include "pgtime.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "ttl_index.h"
#include "policy/policy.h"

#define TTL_MINUTES_PER_DAY		1440

/*
 * ttl_window_time
 *		Read "HH:MM" at *p (hours 0-24, 24 only as 24:00); advance *p past it.
 *		Returns the minute of the day, or -1.
 */
static int
ttl_window_time(const char **p)
{
	const char *s = *p;
	int			h = 0;
	int			m = 0;
	int			digits = 0;

	while (isdigit((unsigned char) *s) && digits < 2)
		h = h * 10 + (*s++ - '0'), digits++;
	if (digits == 0 || *s != ':')
		return -1;
	s++;
	if (!isdigit((unsigned char) s[0]) || !isdigit((unsigned char) s[1]))
		return -1;
	m = (s[0] - '0') * 10 + (s[1] - '0');
	s += 2;
	if (h > 24 || m > 59 || (h == 24 && m != 0))
		return -1;
	*p = s;
	return h * 60 + m;
}

/*
 * ttl_window_parse
 *		Read a list of windows.  Returns NULL, or what is wrong with it.
 */
static const char *
ttl_window_parse(const char *text, TtlWindows *w)
{
	const char *p = text;
	bool		minutes[TTL_MINUTES_PER_DAY];

	memset(w, 0, sizeof(TtlWindows));
	memset(minutes, 0, sizeof(minutes));
	for (;;)
	{
		int			start;
		int			end;
		int			len;

		while (isspace((unsigned char) *p))
			p++;
		if ((start = ttl_window_time(&p)) < 0)
			return "a window is written HH:MM-HH:MM, in 24-hour time";
		while (isspace((unsigned char) *p))
			p++;
		if (*p++ != '-')
			return "a window is written HH:MM-HH:MM, in 24-hour time";
		while (isspace((unsigned char) *p))
			p++;
		if ((end = ttl_window_time(&p)) < 0)
			return "a window is written HH:MM-HH:MM, in 24-hour time";
		if (start == TTL_MINUTES_PER_DAY)
			return "a window cannot start at 24:00";
		if (start == end)
			return "a window must not be empty";
		if (w->n == TTL_MAX_WINDOWS)
			return "a policy has at most 8 windows";
		len = end > start ? end - start : end + TTL_MINUTES_PER_DAY - start;
		for (int i = 0; i < len; i++)
		{
			int			m = (start + i) % TTL_MINUTES_PER_DAY;

			if (minutes[m])
				return "windows must not overlap";
			minutes[m] = true;
		}
		w->start[w->n] = start;
		w->end[w->n] = end % TTL_MINUTES_PER_DAY;
		w->n++;
		w->open_minutes += len;
		while (isspace((unsigned char) *p))
			p++;
		if (*p == '\0')
			return NULL;
		if (*p++ != ',')
			return "windows are separated by commas";
	}
}

/*
 * ttl_window_normalize
 *		Check a purge_window argument and return it as it is stored: each
 *		window as HH:MM-HH:MM, in the order given, separated by commas.  An
 *		error names what is wrong.
 */
char *
ttl_window_normalize(const char *text)
{
	TtlWindows	w;
	const char *problem = ttl_window_parse(text, &w);
	StringInfoData buf;

	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid purge_window \"%s\": %s", text, problem),
				 errhint("Write the windows as '01:00-05:00' or '22:00-02:00, 13:00-14:00', in the policy's time zone.")));
	initStringInfo(&buf);
	for (int i = 0; i < w.n; i++)
		appendStringInfo(&buf, "%s%02d:%02d-%02d:%02d", i > 0 ? "," : "",
						 w.start[i] / 60, w.start[i] % 60,
						 (w.end[i] == 0 ? TTL_MINUTES_PER_DAY : w.end[i]) / 60,
						 w.end[i] % 60);
	return buf.data;
}

/*
 * ttl_window_read
 *		The windows of a stored text (NULL: none).  A text that cannot be
 *		read (a hand-edited catalog) gives n = -1: the policy never opens,
 *		and the views say why.
 */
void
ttl_window_read(const char *text, TtlWindows *w)
{
	if (text == NULL)
	{
		memset(w, 0, sizeof(TtlWindows));
		return;
	}
	if (ttl_window_parse(text, w) != NULL)
	{
		memset(w, 0, sizeof(TtlWindows));
		w->n = -1;
	}
}

/*
 * ttl_window_edge
 *		The instant of minute `minute` (may be past 1440) of the local day
 *		that starts at `midnight` (a wall-clock timestamp) in the zone.
 */
static TimestampTz
ttl_window_edge(Timestamp midnight, int minute, pg_tz *zone)
{
	return ttl_local_instant(midnight + (int64) minute * USECS_PER_MINUTE, zone);
}

/*
 * ttl_window_find
 *		Whether the policy may purge at `now`.  Without windows: yes, from
 *		-infinity to infinity.  Inside a window: yes, *from and *until its
 *		edges.  Outside: no, *from and *until the edges of the next window.
 *		Unreadable windows: no, never (both infinity).  from and until may
 *		be NULL.
 */
bool
ttl_window_find(TtlPolicy *policy, TimestampTz now, TimestampTz *from,
				TimestampTz *until)
{
	TtlWindows *w = &policy->windows;
	pg_tz	   *zone;
	Timestamp	local;
	Timestamp	midnight;
	TimestampTz best_from = DT_NOEND;
	TimestampTz best_until = DT_NOEND;
	bool		open = false;

	if (w->n <= 0)
	{
		if (from)
			*from = w->n == 0 ? DT_NOBEGIN : DT_NOEND;
		if (until)
			*until = DT_NOEND;
		return w->n == 0;
	}
	zone = ttl_policy_zone(policy);
	local = ttl_instant_local(now, zone);
	if (TIMESTAMP_NOT_FINITE(local))
		return false;
	midnight = local - (local % USECS_PER_DAY + USECS_PER_DAY) % USECS_PER_DAY;

	/*
	 * Each window on the day before (it may run over midnight into today),
	 * today and tomorrow: the one that holds now, else the first to open.
	 */
	for (int day = -1; day <= 1 && !open; day++)
	{
		Timestamp	base = midnight + (int64) day * USECS_PER_DAY;

		for (int i = 0; i < w->n; i++)
		{
			int			len = w->end[i] > w->start[i] ? w->end[i] - w->start[i] :
				w->end[i] + TTL_MINUTES_PER_DAY - w->start[i];
			TimestampTz s = ttl_window_edge(base, w->start[i], zone);
			TimestampTz e = ttl_window_edge(base, w->start[i] + len, zone);

			/* an edge in a skipped hour can put the end first: empty */
			if (e <= s)
				continue;
			if (s <= now && now < e)
			{
				open = true;
				best_from = s;
				best_until = e;
				break;
			}
			if (s > now && s < best_from)
			{
				best_from = s;
				best_until = e;
			}
		}
	}
	if (from)
		*from = best_from;
	if (until)
		*until = best_until;
	return open;
}

/*
 * ttl_window_due
 *		The first time at or after `t` the policy may purge: t itself, or
 *		the opening of its next window.
 */
TimestampTz
ttl_window_due(TtlPolicy *policy, TimestampTz t)
{
	TimestampTz from;

	if (policy->windows.n == 0 || TIMESTAMP_NOT_FINITE(t))
		return t;
	if (ttl_window_find(policy, t, &from, NULL))
		return t;
	return from;
}

/*
 * ttl_window_share
 *		The share of the day the policy may purge in (1 without windows).
 */
double
ttl_window_share(TtlPolicy *policy)
{
	if (policy->windows.n <= 0)
		return 1.0;
	return (double) policy->windows.open_minutes / TTL_MINUTES_PER_DAY;
}
