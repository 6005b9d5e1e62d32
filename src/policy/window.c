/*-------------------------------------------------------------------------
 *
 * window.c
 *	  Purge windows: the hours of the day, and the days of the week, a
 *	  policy may purge in (ttl_create_index(..., purge_window =>
 *	  '01:00-05:00, 13:00-14:00'), or 'Sat-Sun 00:00-24:00, Mon-Fri
 *	  01:00-05:00').
 *
 * A window is written [DAYS ]HH:MM-HH:MM.  Its hours are a range of
 * wall-clock minutes of the day, from its start up to (not including) its
 * end; one whose end is not after its start runs over midnight
 * ('22:00-02:00'), and '00:00-24:00' is the whole day.  DAYS is a day
 * ('Mon') or a range of days ('Mon-Fri'; 'Fri-Mon' wraps over the week's
 * end, Friday to Monday): English names, three letters or whole
 * ('Monday'), in any case.  A window without days is there every day, and
 * a window runs on the days it starts on: 'Fri 22:00-02:00' is Friday
 * 22:00 to Saturday 02:00.  Windows are separated by commas; a policy has
 * at most TTL_MAX_WINDOWS (a range of days counts as one window), which
 * must not overlap anywhere in the week, the tail of one over midnight and
 * from Sunday into Monday included.  The text is stored as
 * ttl_window_normalize writes it, in the order given: each window's days
 * as 'Mon' or 'Mon-Fri' (the three letters, capitalized; a range of all
 * seven days is no days), one space, then HH:MM-HH:MM
 * ('Mon-Fri 01:00-05:00,Sat-Sun 00:00-24:00'); a window without days is
 * stored as before days existed.  Every reader reads it again: the worker,
 * ttl_runner() and the views.
 *
 * The clock is the policy's time zone (expiry.c, ttl_policy_zone): the one
 * its timestamp or date key is read in, else the server's TimeZone.  A
 * window's edges are wall-clock times of that zone, found on each day as
 * PostgreSQL reads a local time (a timestamp cast to timestamptz): on the
 * day a zone skips an hour, an edge inside the gap is read with the offset
 * from before the change (02:30 in New York becomes 03:30 EDT); on the day
 * it repeats one, at its second occurrence.  A window whose end is then
 * before its start is empty that day.  A window with days follows the
 * same rules on the days it names: the day is the local date of the
 * zone.
 *
 * Outside its windows a policy starts no pass, and a pass in hand ends at
 * its next batch (worker.c); ttl_runner() leaves it alone.  Keep-up
 * (keepup.c) asks for the pace that purges a week's rows in the windows'
 * hours of the week (for windows of every day: a day's rows in the day's
 * hours), and a window that closes with expired rows left is falling
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
#define TTL_MINUTES_PER_WEEK	(7 * TTL_MINUTES_PER_DAY)
#define TTL_EVERY_DAY			0x7F

/* the days of the week, from Monday: bit i of a window's days is day i */
static const char *const ttl_window_day_names[7] = {
	"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"
};

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
 * ttl_window_day
 *		Read a day's name at *p (three letters or the whole name, in any
 *		case); advance *p past it.  Returns the day (0 Monday ... 6
 *		Sunday), or -1.
 */
static int
ttl_window_day(const char **p)
{
	const char *s = *p;
	int			len = 0;

	while (isalpha((unsigned char) s[len]))
		len++;
	if (len < 3)
		return -1;
	for (int d = 0; d < 7; d++)
	{
		if (pg_strncasecmp(s, ttl_window_day_names[d], len) == 0 &&
			(len == 3 || ttl_window_day_names[d][len] == '\0'))
		{
			*p = s + len;
			return d;
		}
	}
	return -1;
}

/*
 * ttl_window_days
 *		Read the days a window may start with ('Mon', 'Mon-Fri', 'Fri-Mon')
 *		at *p, and the space after them; advance *p.  *days is the days
 *		(every day when there are none).  Returns NULL, or what is wrong.
 */
static const char *
ttl_window_days(const char **p, uint8 *days)
{
	const char *s = *p;
	int			first;
	int			last;

	*days = TTL_EVERY_DAY;
	if (!isalpha((unsigned char) *s))
		return NULL;
	if ((first = ttl_window_day(&s)) < 0)
		return "unknown day: days are written Mon, Tue, Wed, Thu, Fri, Sat, Sun";
	last = first;
	while (isspace((unsigned char) *s))
		s++;
	if (*s == '-')
	{
		s++;
		while (isspace((unsigned char) *s))
			s++;
		if (!isalpha((unsigned char) *s))
			return "a range of days is written Mon-Fri";
		if ((last = ttl_window_day(&s)) < 0)
			return "unknown day: days are written Mon, Tue, Wed, Thu, Fri, Sat, Sun";
		while (isspace((unsigned char) *s))
			s++;
	}
	if (!isdigit((unsigned char) *s))
		return "the days of a window are followed by its hours, as Mon-Fri 01:00-05:00";
	*days = 0;
	for (int d = first;; d = (d + 1) % 7)
	{
		*days |= 1 << d;
		if (d == last)
			break;
	}
	*p = s;
	return NULL;
}

/*
 * ttl_window_parse
 *		Read a list of windows.  Returns NULL, or what is wrong with it.
 */
static const char *
ttl_window_parse(const char *text, TtlWindows *w)
{
	const char *p = text;
	bool		minutes[TTL_MINUTES_PER_WEEK];

	memset(w, 0, sizeof(TtlWindows));
	memset(minutes, 0, sizeof(minutes));
	for (;;)
	{
		int			start;
		int			end;
		int			len;
		uint8		days;
		const char *problem;

		while (isspace((unsigned char) *p))
			p++;
		if ((problem = ttl_window_days(&p, &days)) != NULL)
			return problem;
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
		/* its minutes of the week, on each of its days, over midnight too */
		for (int d = 0; d < 7; d++)
		{
			if ((days & (1 << d)) == 0)
				continue;
			for (int i = 0; i < len; i++)
			{
				int			m = (d * TTL_MINUTES_PER_DAY + start + i) % TTL_MINUTES_PER_WEEK;

				if (minutes[m])
					return "windows must not overlap";
				minutes[m] = true;
			}
			w->open_minutes += len;
		}
		w->start[w->n] = start;
		w->end[w->n] = end % TTL_MINUTES_PER_DAY;
		w->days[w->n] = days;
		w->n++;
		while (isspace((unsigned char) *p))
			p++;
		if (*p == '\0')
			return NULL;
		if (*p++ != ',')
			return "windows are separated by commas";
	}
}

/*
 * ttl_window_append_days
 *		Append a window's days as they are stored ('Mon ', 'Fri-Mon '):
 *		nothing for every day.  Its days are one run of the week, from the
 *		parser's range.
 */
static void
ttl_window_append_days(StringInfo buf, uint8 days)
{
	int			first = 0;
	int			last;
	static const char *const abbrev[7] = {
		"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"
	};

	if (days == TTL_EVERY_DAY)
		return;
	/* the run's first day: one whose day before is not in it */
	while ((days & (1 << first)) == 0 || (days & (1 << ((first + 6) % 7))) != 0)
		first++;
	last = first;
	while (days & (1 << ((last + 1) % 7)))
		last = (last + 1) % 7;
	if (last == first)
		appendStringInfo(buf, "%s ", abbrev[first]);
	else
		appendStringInfo(buf, "%s-%s ", abbrev[first], abbrev[last]);
}

/*
 * ttl_window_normalize
 *		Check a purge_window argument and return it as it is stored: each
 *		window as [DAYS ]HH:MM-HH:MM, in the order given, separated by
 *		commas (see the top of the file).  An error names what is wrong.
 */
char *
ttl_window_normalize(const char *text)
{
	TtlWindows	w;
	const char *problem = ttl_window_parse(text, &w);
	StringInfoData buf;

	if (problem != NULL)
	{
		bool		named_days = false;

		for (const char *c = text; *c; c++)
			named_days |= isalpha((unsigned char) *c) != 0;
		if (named_days)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid purge_window \"%s\": %s", text, problem),
					 errhint("Write the windows as 'Mon-Fri 01:00-05:00, Sat-Sun 00:00-24:00': a day or a range of days, then the hours, in the policy's time zone.")));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid purge_window \"%s\": %s", text, problem),
				 errhint("Write the windows as '01:00-05:00' or '22:00-02:00, 13:00-14:00', in the policy's time zone.")));
	}
	initStringInfo(&buf);
	for (int i = 0; i < w.n; i++)
	{
		if (i > 0)
			appendStringInfoChar(&buf, ',');
		ttl_window_append_days(&buf, w.days[i]);
		appendStringInfo(&buf, "%02d:%02d-%02d:%02d",
						 w.start[i] / 60, w.start[i] % 60,
						 (w.end[i] == 0 ? TTL_MINUTES_PER_DAY : w.end[i]) / 60,
						 w.end[i] % 60);
	}
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
 * ttl_window_weekday
 *		The day of the week (0 Monday ... 6 Sunday) of a local midnight.
 */
static int
ttl_window_weekday(Timestamp midnight)
{
	int			date = (int) (midnight / USECS_PER_DAY) + POSTGRES_EPOCH_JDATE;

	/* j2day: 0 Sunday ... 6 Saturday */
	return (j2day(date) + 6) % 7;
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
	 * today and the week ahead, on the days it names: the one that holds
	 * now, else the first to open.  A window opens on the day it starts on,
	 * so none of a later day opens before one found on an earlier day.
	 */
	for (int day = -1; day <= 7 && !open; day++)
	{
		Timestamp	base = midnight + (int64) day * USECS_PER_DAY;
		int			weekday = ttl_window_weekday(base);

		if (day > 0 && best_from != DT_NOEND)
			break;
		for (int i = 0; i < w->n; i++)
		{
			int			len = w->end[i] > w->start[i] ? w->end[i] - w->start[i] :
				w->end[i] + TTL_MINUTES_PER_DAY - w->start[i];
			TimestampTz s;
			TimestampTz e;

			if ((w->days[i] & (1 << weekday)) == 0)
				continue;
			s = ttl_window_edge(base, w->start[i], zone);
			e = ttl_window_edge(base, w->start[i] + len, zone);

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
 *		The share of the week the policy may purge in (1 without windows):
 *		for windows of every day, the share of the day.
 */
double
ttl_window_share(TtlPolicy *policy)
{
	if (policy->windows.n <= 0)
		return 1.0;
	return (double) policy->windows.open_minutes / TTL_MINUTES_PER_WEEK;
}
