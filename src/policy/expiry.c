/*-------------------------------------------------------------------------
 *
 * expiry.c
 *	  Time arithmetic of TTL keys: when a key expires, the cutoff a pass
 *	  scans up to, the Unix-epoch units of numeric TTL columns, and
 *	  ttl_expires_at(), the immutable function a per-row TTL is indexed by.
 *
 * One rule per key type, used by the scan, the whole-partition drops and
 * the views alike: a row expires at the instant its key denotes plus
 * expire_after, where the instant is
 *
 *	timestamptz          the value itself
 *	timestamp            the wall-clock value in the policy's time zone, as
 *	                     PostgreSQL reads it (a time skipped by a change to
 *	                     summer time is read with the offset before the
 *	                     change, a repeated time as its later occurrence)
 *	date                 midnight at the start of the day, likewise
 *	int4, int8, numeric, time since 1970-01-01 00:00 UTC in the policy's
 *	float8               unit (s, ms, us or ns); int4 holds seconds only
 *
 * The policy's time zone is the one its writers use, recorded with the
 * policy (ttl_create_index's time_zone, by default the zone of the session
 * that made it: catalog.c, api.c).  A timestamp or date means nothing
 * without it, and no single zone of the server's is every writer's: rows
 * written in UTC by an application whose server says Europe/Berlin would
 * be read an hour or two older than they are.  A policy without one (its
 * column became timestamp since) reads in the server's TimeZone, the
 * configuration's as the launcher publishes it (owner.c).  Never the
 * calling session's: ttl_runner() called with SET TimeZone = 'Asia/Tokyo'
 * deletes what the worker would.  The zone is looked up once and kept on
 * the policy until either changes (ttl_policy_zone).
 *
 * A policy without expire_after (a cap alone, cap.c) has no expiry: no
 * key has expired, and none will.  That is said by its no_expiry flag,
 * which every function here that takes the policy tests first, never by a
 * large expire_after: a key at the far end of an epoch's range (bigint
 * INT64_MIN seconds, float8 or numeric -Infinity) would still be reached
 * by it.  Such a cutoff is marked `none`, and its bounds are the key
 * type's least value, below which no key is.
 *
 * The cutoff of a pass that began at `now` is limit = now - expire_after:
 * a row has expired when its instant is before limit.
 *
 * Months and years (calendar TTLs, interval '13 months') are counted on
 * the calendar, as PostgreSQL's own interval arithmetic counts them
 * (timestamptz_mi_interval): now is read as wall-clock time in the
 * policy's zone, its month moved back, its day of the month clamped to
 * the length of that month (March 31 less a month is February 28, or 29),
 * the result read back as an instant in the zone (ttl_add_months).  That
 * is now() - interval '13 months' in a session whose TimeZone is the
 * policy's zone, never the worker's or the caller's session zone; for a
 * timestamp or date key the same instant as localtimestamp - interval '13
 * months' read in the zone (but for a key in the hour a change to summer
 * time skips, which is read as PostgreSQL reads it, above).  The rest of
 * expire_after (days counted as 24 hours, and time) is then taken off
 * that instant, as before.  Numeric epoch keys have no zone: their months
 * are counted on the UTC calendar.  The clamping means the cutoff stands
 * still at the end of a short month and leaps at its start: with '1
 * month', on March 1 the cutoff moves from January 28 to February 1, and
 * the rows of January 29, 30 and 31 all expire at that midnight
 * (ttl_key_expiry says so).  The per-row TTLs of ttl_column are another
 * matter: ttl_expires_at() is the immutable function an index is built
 * on, and counts a month there as 30 days (see it).
 *
 * The btree is in key order, so the scan needs a bound in the key's type:
 *
 *	- for timestamptz and numeric keys, "instant < limit" is "key < bound"
 *	  exactly;
 *	- for wall-clock keys, bound = limit as wall-clock time.  No key at or
 *	  above it has expired (PostgreSQL reads every wall-clock value as the
 *	  latest instant it may denote), but below it, near a change of the UTC
 *	  offset, a key can denote an instant after limit: 02:30 on the spring
 *	  day is 01:30 UTC in Berlin, later than 03:10 CEST.  When the zone
 *	  changes its offset within two days of limit, the scan checks every
 *	  row's instant (ttl_key_expired) and whole partitions are dropped only
 *	  up to the bound computed with the smaller of the two offsets
 *	  (safe_bound), below which every key has expired.  Elsewhere the bound
 *	  is exact and nothing is rechecked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "ttl_index.h"
#include "policy/policy.h"
#include "env/env.h"
#include "shared/shared.h"

/* microseconds from the Unix epoch to PostgreSQL's (2000-01-01) */
#define TTL_UNIX_OFFSET_USECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)
/* how far from the limit a change of UTC offset makes the bound inexact */
#define TTL_ZONE_MARGIN_SECS	(2 * SECS_PER_DAY)

PG_FUNCTION_INFO_V1(ttl_expires_at_interval);
PG_FUNCTION_INFO_V1(ttl_expires_at_seconds);

/*
 * ttl_server_zone_name
 *		The server's TimeZone setting (see the top of the file), palloc'd:
 *		the zone of a wall-clock policy that has none of its own.
 */
const char *
ttl_server_zone_name(void)
{
	return ttl_server_setting("TimeZone");
}

/*
 * ttl_zone_valid
 *		Whether the server knows a time zone by this name (a zone name, a
 *		POSIX zone or a fixed offset, as the TimeZone setting takes them).
 */
bool
ttl_zone_valid(const char *name)
{
	return name != NULL && name[0] != '\0' && pg_tzset(name) != NULL;
}

/*
 * ttl_policy_zone_name
 *		The zone a policy reads its wall-clock keys in: its own, or the
 *		server's when it has none (a column that became timestamp or date
 *		since, until ttl_create_index gives it one).
 */
const char *
ttl_policy_zone_name(TtlPolicy *policy)
{
	if (policy->time_zone != NULL)
		return policy->time_zone;
	return ttl_server_zone_name();
}

/*
 * ttl_policy_zone_lookup
 *		The zone of ttl_policy_zone_name, looked up (PostgreSQL keeps the
 *		zones it has loaded for the life of the process, so the pointer
 *		stays good); NULL when the server does not know the name.  Leaves
 *		nothing allocated behind.
 */
static pg_tz *
ttl_policy_zone_lookup(TtlPolicy *policy)
{
	const char *name = ttl_policy_zone_name(policy);
	pg_tz	   *tz = pg_tzset(name);

	/* the server's zone name is a copy (ttl_server_setting) */
	if (name != policy->time_zone)
		pfree((char *) name);
	return tz;
}

/*
 * ttl_policy_zone
 *		The zone a policy reads its wall-clock keys and purge windows in.  A
 *		name the server no longer knows reads as GMT here; the policy's
 *		statement fails on it, saying so.
 *
 * Every batch, cutoff, probe and window check asks, so the zone is looked
 * up once and kept on the policy (policy->zone), where it lives as long as
 * the policy does: a worker's for as long as the policy's catalog row is
 * unchanged (a new time_zone is a changed policy, which the worker's
 * reload replaces with a new one, worker.c), a view's or ttl_runner()'s
 * for its call.  A policy's own zone does not change once asked for
 * (who builds a policy sets time_zone first, api.c).  The server's (a
 * policy without one) does, when the launcher publishes the settings
 * again after a reload: the zone kept with an older publication's
 * settings (zone_generation) is looked up again.  Before any publication
 * (no shared memory, or the launcher not started) the server's zone is
 * this session's reset value, which a reload may change between any two
 * calls: it is looked up each time, as is a name the server does not know
 * (as before it was kept: a zone file installed meanwhile is found).
 */
pg_tz *
ttl_policy_zone(TtlPolicy *policy)
{
	uint32		generation = 0;

	if (policy->time_zone == NULL)
	{
		generation = ttl_shmem_settings_generation();
		/* this session's own setting: never kept */
		if (generation == 0)
			policy->zone = NULL;
	}
	if (policy->zone == NULL || policy->zone_generation != generation)
	{
		policy->zone = ttl_policy_zone_lookup(policy);
		policy->zone_generation = generation;
	}
	return policy->zone != NULL ? policy->zone : pg_tzset("GMT");
}

/*
 * ttl_unit_parse
 *		Nanoseconds per unit for 's', 'ms', 'us' or 'ns'; 0 for anything else.
 */
int64
ttl_unit_parse(const char *unit)
{
	if (strcmp(unit, "s") == 0)
		return INT64CONST(1000000000);
	if (strcmp(unit, "ms") == 0)
		return INT64CONST(1000000);
	if (strcmp(unit, "us") == 0)
		return INT64CONST(1000);
	if (strcmp(unit, "ns") == 0)
		return 1;
	return 0;
}

/*
 * ttl_key_type_ok
 *		Whether a key of this type (a domain's base type) can be used with
 *		this unit (0: none).
 */
bool
ttl_key_type_ok(Oid typid, int64 unit_ns)
{
	if (unit_ns == 0)
		return typid == TIMESTAMPTZOID || typid == TIMESTAMPOID || typid == DATEOID;
	if (typid == INT4OID)
		return unit_ns == INT64CONST(1000000000);
	return typid == INT8OID || typid == NUMERICOID || typid == FLOAT8OID;
}

/*
 * ttl_key_is_local
 *		Whether keys of this type are wall-clock time in a zone (the policy's).
 */
bool
ttl_key_is_local(Oid typid, int64 unit_ns)
{
	return unit_ns == 0 && (typid == TIMESTAMPOID || typid == DATEOID);
}

/*
 * ttl_clamp_timestamp
 *		A timestamp outside the valid range as the infinity on its side.
 */
static TimestampTz
ttl_clamp_timestamp(TimestampTz ts)
{
	if (TIMESTAMP_NOT_FINITE(ts) || IS_VALID_TIMESTAMP(ts))
		return ts;
	return ts < 0 ? DT_NOBEGIN : DT_NOEND;
}

/*
 * ttl_local_instant
 *		The instant a wall-clock timestamp denotes in the zone, as
 *		PostgreSQL's timestamp-to-timestamptz cast reads it in a session of
 *		that zone.
 */
TimestampTz
ttl_local_instant(Timestamp ts, pg_tz *zone)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;

	if (TIMESTAMP_NOT_FINITE(ts))
		return ts;
	if (timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0)
		return ts < 0 ? DT_NOBEGIN : DT_NOEND;
	tz = DetermineTimeZoneOffset(&tm, zone);
	return ttl_clamp_timestamp(ts + (int64) tz * USECS_PER_SEC);
}

/*
 * ttl_instant_local
 *		An instant as wall-clock time in the zone: the
 *		timestamptz-to-timestamp cast in a session of that zone.
 */
Timestamp
ttl_instant_local(TimestampTz t, pg_tz *zone)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;
	Timestamp	result;

	if (TIMESTAMP_NOT_FINITE(t))
		return t;
	if (timestamp2tm(t, &tz, &tm, &fsec, NULL, zone) != 0 ||
		tm2timestamp(&tm, fsec, NULL, &result) != 0)
		return t < 0 ? DT_NOBEGIN : DT_NOEND;
	return result;
}

/*
 * ttl_zone_change_near
 *		Whether the zone changes its UTC offset within
 *		TTL_ZONE_MARGIN_SECS of the instant; if so, *min_gmtoff is the
 *		smallest offset (seconds east) in effect around it.
 */
static bool
ttl_zone_change_near(TimestampTz t, pg_tz *zone, long *min_gmtoff)
{
	pg_time_t	from;
	pg_time_t	until;
	pg_time_t	boundary;
	long		before_gmtoff;
	long		after_gmtoff;
	int			before_isdst;
	int			after_isdst;
	bool		near = false;

	if (TIMESTAMP_NOT_FINITE(t))
		return false;
	from = timestamptz_to_time_t(t) - TTL_ZONE_MARGIN_SECS;
	until = timestamptz_to_time_t(t) + TTL_ZONE_MARGIN_SECS;
	*min_gmtoff = LONG_MAX;
	/* at most a few changes fall within the window */
	for (int i = 0; i < 4; i++)
	{
		if (pg_next_dst_boundary(&from, &before_gmtoff, &before_isdst,
								 &boundary, &after_gmtoff, &after_isdst,
								 zone) != 1 ||
			boundary > until)
			break;
		near = true;
		*min_gmtoff = Min(*min_gmtoff, Min(before_gmtoff, after_gmtoff));
		from = boundary;
	}
	return near;
}

/*
 * ttl_date_above
 *		The first date whose midnight is at or after the wall-clock time:
 *		the dates below it start before it.
 */
static DateADT
ttl_date_above(Timestamp local)
{
	DateADT		day;

	if (TIMESTAMP_IS_NOBEGIN(local))
		return DATEVAL_NOBEGIN;
	if (TIMESTAMP_IS_NOEND(local))
		return DATEVAL_NOEND;
	day = DatumGetDateADT(DirectFunctionCall1(timestamp_date,
											  TimestampGetDatum(local)));
	if ((Timestamp) day * USECS_PER_DAY < local)
		day++;
	return day;
}

/*
 * ttl_epoch_cutoff
 *		The bound of a numeric key: limit (a PostgreSQL timestamp) as time
 *		since the Unix epoch in the unit, rounded so that key < bound holds
 *		exactly for the keys that are before limit.
 */
static Datum
ttl_epoch_cutoff(Oid typid, int64 unit_ns, TimestampTz limit)
{
	int64		unix_us;
	int64		k;

	if (pg_add_s64_overflow(limit, TTL_UNIX_OFFSET_USECS, &unix_us))
		unix_us = PG_INT64_MAX;

	switch (typid)
	{
		case FLOAT8OID:
			return Float8GetDatum((double) unix_us * 1000.0 / (double) unit_ns);
		case NUMERICOID:
			{
				Datum		n = DirectFunctionCall1(int8_numeric, Int64GetDatum(unix_us));

				if (unit_ns == 1)
					return DirectFunctionCall2(numeric_mul, n,
											   DirectFunctionCall1(int8_numeric,
																   Int64GetDatum(1000)));
				if (unit_ns == 1000)
					return n;
				return DirectFunctionCall2(numeric_div, n,
										   DirectFunctionCall1(int8_numeric,
															   Int64GetDatum(unit_ns / 1000)));
			}
		case INT4OID:
		case INT8OID:
			if (unit_ns == 1)
			{
				if (pg_mul_s64_overflow(unix_us, 1000, &k))
					k = unix_us < 0 ? PG_INT64_MIN : PG_INT64_MAX;
			}
			else
			{
				int64		per = unit_ns / 1000;

				/* the smallest k with k * per >= unix_us: ceiling division */
				k = unix_us / per;
				if (unix_us % per > 0)
					k++;
			}
			if (typid == INT4OID)
				return Int32GetDatum((int32) Min(Max(k, (int64) PG_INT32_MIN), (int64) PG_INT32_MAX));
			return Int64GetDatum(k);
		default:
			elog(ERROR, "unsupported TTL key type %u", typid);
	}
	return (Datum) 0;			/* keep compiler quiet */
}

/*
 * ttl_key_least
 *		The least value of a key type, as its btree orders it: no key is
 *		below it.  The bound of a cutoff under which nothing has expired.
 */
static Datum
ttl_key_least(Oid typid)
{
	switch (typid)
	{
		case TIMESTAMPTZOID:
			return TimestampTzGetDatum(DT_NOBEGIN);
		case TIMESTAMPOID:
			return TimestampGetDatum(DT_NOBEGIN);
		case DATEOID:
			return DateADTGetDatum(DATEVAL_NOBEGIN);
		case INT4OID:
			return Int32GetDatum(PG_INT32_MIN);
		case INT8OID:
			return Int64GetDatum(PG_INT64_MIN);
		case FLOAT8OID:
			return Float8GetDatum(-get_float8_infinity());
		case NUMERICOID:
			return DirectFunctionCall3(numeric_in, CStringGetDatum("-Infinity"),
									   ObjectIdGetDatum(InvalidOid),
									   Int32GetDatum(-1));
		default:
			elog(ERROR, "unsupported TTL key type %u", typid);
	}
	return (Datum) 0;			/* keep compiler quiet */
}

/*
 * ttl_month_zone
 *		The zone a policy's calendar months are counted in: the policy's
 *		for timestamptz and wall-clock keys, UTC for numeric epoch keys
 *		(time since 1970-01-01 00:00 UTC has no zone of its own).
 */
static pg_tz *
ttl_month_zone(int64 unit_ns, pg_tz *zone)
{
	static pg_tz *utc = NULL;

	if (unit_ns == 0)
		return zone;
	if (utc == NULL)
		utc = pg_tzset("UTC");
	return utc;
}

/*
 * ttl_add_months
 *		t plus months calendar months (minus, when negative) in the zone:
 *		PostgreSQL's timestamptz + interval 'n months' in a session of that
 *		zone, step by step as timestamptz_pl_interval takes it.  The
 *		wall-clock time of t keeps its time of day; a day of the month
 *		past the end of the month reached is clamped to its last day; the
 *		result is read in the zone as PostgreSQL reads any wall-clock time.
 *		Past either end of time, that infinity.
 */
static TimestampTz
ttl_add_months(TimestampTz t, int32 months, pg_tz *zone)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;
	TimestampTz result;

	if (months == 0 || TIMESTAMP_NOT_FINITE(t))
		return t;
	if (timestamp2tm(t, &tz, &tm, &fsec, NULL, zone) != 0)
		return t < 0 ? DT_NOBEGIN : DT_NOEND;
	tm.tm_mon += months;
	if (tm.tm_mon > MONTHS_PER_YEAR)
	{
		tm.tm_year += (tm.tm_mon - 1) / MONTHS_PER_YEAR;
		tm.tm_mon = ((tm.tm_mon - 1) % MONTHS_PER_YEAR) + 1;
	}
	else if (tm.tm_mon < 1)
	{
		tm.tm_year += tm.tm_mon / MONTHS_PER_YEAR - 1;
		tm.tm_mon = tm.tm_mon % MONTHS_PER_YEAR + MONTHS_PER_YEAR;
	}
	/* March 31 less a month is the last day of February */
	if (tm.tm_mday > day_tab[isleap(tm.tm_year)][tm.tm_mon - 1])
		tm.tm_mday = day_tab[isleap(tm.tm_year)][tm.tm_mon - 1];
	tz = DetermineTimeZoneOffset(&tm, zone);
	if (tm2timestamp(&tm, fsec, &tz, &result) != 0)
		return months < 0 ? DT_NOBEGIN : DT_NOEND;
	return ttl_clamp_timestamp(result);
}

/*
 * ttl_next_month_start
 *		The first midnight of the month after the one t is in, in the zone.
 */
static TimestampTz
ttl_next_month_start(TimestampTz t, pg_tz *zone)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;
	TimestampTz result;

	if (TIMESTAMP_NOT_FINITE(t))
		return t;
	if (timestamp2tm(t, &tz, &tm, &fsec, NULL, zone) != 0)
		return t < 0 ? DT_NOBEGIN : DT_NOEND;
	tm.tm_mday = 1;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	if (++tm.tm_mon > MONTHS_PER_YEAR)
	{
		tm.tm_mon = 1;
		tm.tm_year++;
	}
	tz = DetermineTimeZoneOffset(&tm, zone);
	if (tm2timestamp(&tm, 0, &tz, &result) != 0)
		return DT_NOEND;
	return ttl_clamp_timestamp(result);
}

/*
 * ttl_policy_limit
 *		now - expire_after (see the top of the file): its months on the
 *		calendar of the month zone, then its fixed part.
 */
static TimestampTz
ttl_policy_limit(TtlPolicy *policy, pg_tz *zone, TimestampTz now)
{
	TimestampTz limit;

	limit = ttl_add_months(now, -policy->expire_months,
						   ttl_month_zone(policy->unit_ns, zone));
	if (TIMESTAMP_IS_NOBEGIN(limit) ||
		pg_sub_s64_overflow(limit, policy->expire_after, &limit) ||
		limit <= DT_NOBEGIN)
		limit = DT_NOBEGIN + 1;
	return limit;
}

/*
 * ttl_cutoff_compute
 *		The cutoff of the policy's pass that began at `now` (see the top of
 *		the file), for keys of type typid.  By-reference bounds (numeric)
 *		are palloc'd in the current context.
 */
void
ttl_cutoff_compute(TtlPolicy *policy, Oid typid, pg_tz *zone, TimestampTz now,
				   TtlCutoff *cutoff)
{
	int64		unit_ns = policy->unit_ns;
	TimestampTz limit;
	Timestamp	local;
	Timestamp	safe;
	long		min_gmtoff;

	cutoff->recheck = false;
	cutoff->capped = false;
	cutoff->cap_bound = (Datum) 0;
	cutoff->none = policy->no_expiry;
	if (policy->no_expiry)
	{
		/* a cap alone: nothing expires, -infinity neither */
		cutoff->limit = DT_NOBEGIN;
		cutoff->bound = ttl_key_least(typid);
		cutoff->safe_bound = cutoff->bound;
		return;
	}
	limit = ttl_policy_limit(policy, zone, now);
	cutoff->limit = limit;

	if (unit_ns != 0)
	{
		cutoff->bound = ttl_epoch_cutoff(typid, unit_ns, limit);
		cutoff->safe_bound = cutoff->bound;
		return;
	}
	if (typid == TIMESTAMPTZOID)
	{
		cutoff->bound = TimestampTzGetDatum(limit);
		cutoff->safe_bound = cutoff->bound;
		return;
	}
	if (typid != TIMESTAMPOID && typid != DATEOID)
		elog(ERROR, "unsupported TTL key type %u", typid);

	/* wall-clock keys, in the policy's zone */
	local = ttl_instant_local(limit, zone);
	safe = local;
	if (ttl_zone_change_near(limit, zone, &min_gmtoff))
	{
		cutoff->recheck = true;
		safe = Min(local, ttl_clamp_timestamp(limit + (int64) min_gmtoff * USECS_PER_SEC));
	}
	if (typid == TIMESTAMPOID)
	{
		cutoff->bound = TimestampGetDatum(local);
		cutoff->safe_bound = TimestampGetDatum(safe);
	}
	else
	{
		/* a day has expired when its midnight has */
		cutoff->bound = DateADTGetDatum(ttl_date_above(local));
		cutoff->safe_bound = DateADTGetDatum(ttl_date_above(safe));
	}
}

/*
 * ttl_epoch_instant
 *		A numeric key as a PostgreSQL timestamp (not yet clamped).
 */
static TimestampTz
ttl_epoch_instant(Oid typid, int64 unit_ns, Datum key)
{
	double		us;
	int64		unix_us;

	switch (typid)
	{
		case INT4OID:
		case INT8OID:
			{
				int64		k = typid == INT4OID ? DatumGetInt32(key) : DatumGetInt64(key);

				if (unit_ns == 1)
					unix_us = k / 1000;
				else if (pg_mul_s64_overflow(k, unit_ns / 1000, &unix_us))
					return k < 0 ? DT_NOBEGIN : DT_NOEND;
				if (pg_sub_s64_overflow(unix_us, TTL_UNIX_OFFSET_USECS, &unix_us))
					return DT_NOBEGIN;
				return unix_us;
			}
		case FLOAT8OID:
			us = DatumGetFloat8(key);
			break;
		case NUMERICOID:
			us = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, key));
			break;
		default:
			elog(ERROR, "unsupported TTL key type %u", typid);
			return 0;
	}
	if (isnan(us))
		return DT_NOEND;		/* NaN sorts after every number: never */
	us = us * (double) unit_ns / 1000.0 - (double) TTL_UNIX_OFFSET_USECS;
	if (us >= (double) END_TIMESTAMP)
		return DT_NOEND;
	if (us < (double) MIN_TIMESTAMP)
		return DT_NOBEGIN;
	return (TimestampTz) us;
}

/*
 * ttl_key_instant
 *		The instant a key denotes (see the top of the file).
 */
TimestampTz
ttl_key_instant(Oid typid, int64 unit_ns, pg_tz *zone, Datum key)
{
	if (unit_ns != 0)
		return ttl_epoch_instant(typid, unit_ns, key);
	switch (typid)
	{
		case TIMESTAMPTZOID:
			return DatumGetTimestampTz(key);
		case TIMESTAMPOID:
			return ttl_local_instant(DatumGetTimestamp(key), zone);
		case DATEOID:
			{
				DateADT		day = DatumGetDateADT(key);

				if (DATE_IS_NOBEGIN(day))
					return DT_NOBEGIN;
				if (DATE_IS_NOEND(day))
					return DT_NOEND;
				if (day >= (TIMESTAMP_END_JULIAN - POSTGRES_EPOCH_JDATE))
					return DT_NOEND;
				if (day < (DATETIME_MIN_JULIAN - POSTGRES_EPOCH_JDATE))
					return DT_NOBEGIN;
				return ttl_local_instant((Timestamp) day * USECS_PER_DAY, zone);
			}
		default:
			elog(ERROR, "unsupported TTL key type %u", typid);
	}
	return 0;					/* keep compiler quiet */
}

/*
 * ttl_key_expired
 *		Whether a key below the scan bound has expired: its instant is
 *		before the limit.  Needed only when cutoff->recheck says so.
 */
bool
ttl_key_expired(Oid typid, int64 unit_ns, pg_tz *zone, Datum key,
				const TtlCutoff *cutoff)
{
	TimestampTz t;

	if (cutoff->none)
		return false;
	t = ttl_key_instant(typid, unit_ns, zone, key);
	return !TIMESTAMP_IS_NOEND(t) && t < cutoff->limit;
}

/*
 * ttl_months_expiry
 *		The instant after which t has expired under a TTL of `months`
 *		calendar months: the last instant `now` at which now less the
 *		months (ttl_add_months) is not yet after t.  Usually t plus the
 *		months; but when that was clamped to the end of a shorter month
 *		(January 31 plus a month is February 28), now less the months
 *		reaches past t only at the start of the next month (on March 1 it
 *		is February 1), so t expires then: the instant before that
 *		midnight.
 */
static TimestampTz
ttl_months_expiry(TimestampTz t, int32 months, pg_tz *zone)
{
	TimestampTz at = ttl_add_months(t, months, zone);

	if (TIMESTAMP_NOT_FINITE(at) || ttl_add_months(at, -months, zone) >= t)
		return at;
	at = ttl_next_month_start(at, zone);
	return TIMESTAMP_NOT_FINITE(at) ? at : at - 1;
}

/*
 * ttl_key_expiry
 *		The instant a row of the policy with this key expires.  Infinite
 *		keys give DT_NOEND (never) or DT_NOBEGIN (always); every key of a
 *		policy without expiry gives DT_NOEND.
 */
TimestampTz
ttl_key_expiry(TtlPolicy *policy, Oid typid, pg_tz *zone, Datum key)
{
	TimestampTz ts;

	if (policy->no_expiry)
		return DT_NOEND;
	ts = ttl_key_instant(typid, policy->unit_ns, zone, key);
	if (TIMESTAMP_NOT_FINITE(ts))
		return ts;
	/* keys within expire_after of the end of time never expire */
	if (pg_add_s64_overflow(ts, policy->expire_after, &ts))
		return DT_NOEND;
	ts = ttl_clamp_timestamp(ts);
	if (policy->expire_months != 0)
		ts = ttl_months_expiry(ts, policy->expire_months,
							   ttl_month_zone(policy->unit_ns, zone));
	return ts;
}

/*
 * ttl_add_usecs
 *		base + usecs for timestamp and timestamptz alike (same
 *		representation); past either end of time, that infinity.
 */
static Timestamp
ttl_add_usecs(Timestamp base, int64 usecs, bool overflow)
{
	Timestamp	result;

	if (TIMESTAMP_NOT_FINITE(base))
		return base;
	if (overflow || pg_add_s64_overflow(base, usecs, &result))
		return usecs < 0 ? DT_NOBEGIN : DT_NOEND;
	return ttl_clamp_timestamp(result);
}

/*
 * ttl_expires_at(base timestamp[tz], ttl interval)
 *		base + ttl, a day counted as 24 hours and a month as 30 days.
 *
 * A per-row TTL is not counted on the calendar, unlike a policy's
 * expire_after: this function is IMMUTABLE because an index is built on
 * it, and a calendar month of a timestamptz depends on a time zone (the
 * session's, in PostgreSQL's own timestamptz + interval, which is only
 * STABLE).  Nor may it start to count otherwise now: every index already
 * built on it would then disagree with its rows.
 */
Datum
ttl_expires_at_interval(PG_FUNCTION_ARGS)
{
	Timestamp	base = PG_GETARG_TIMESTAMP(0);
	Interval   *span = PG_GETARG_INTERVAL_P(1);
	int64		usecs;
	int64		days;
	bool		overflow;

	overflow = pg_mul_s64_overflow((int64) span->month, DAYS_PER_MONTH, &days) ||
		pg_add_s64_overflow(days, span->day, &days) ||
		pg_mul_s64_overflow(days, USECS_PER_DAY, &usecs) ||
		pg_add_s64_overflow(usecs, span->time, &usecs);
	if (overflow)
		usecs = (span->month < 0 || span->day < 0 || span->time < 0) ? -1 : 1;
	PG_RETURN_TIMESTAMP(ttl_add_usecs(base, usecs, overflow));
}

/*
 * ttl_expires_at(base timestamp[tz], ttl bigint)
 *		base + ttl seconds.
 */
Datum
ttl_expires_at_seconds(PG_FUNCTION_ARGS)
{
	Timestamp	base = PG_GETARG_TIMESTAMP(0);
	int64		secs = PG_GETARG_INT64(1);
	int64		usecs;
	bool		overflow;

	overflow = pg_mul_s64_overflow(secs, USECS_PER_SEC, &usecs);
	if (overflow)
		usecs = secs < 0 ? -1 : 1;
	PG_RETURN_TIMESTAMP(ttl_add_usecs(base, usecs, overflow));
}

/*
 * ttl_key_ordinal
 *		A by-value key as an int64 that sorts as the key does, for helpers
 *		that share a key range (parallel.c cuts and halves ranges of
 *		these): timestamps, integers and dates as they are, float8 by its
 *		bits with the sign folded (NaN sorts last, as in a btree).  Returns
 *		false for a type that has none (numeric).
 */
bool
ttl_key_ordinal(Oid typid, Datum key, int64 *ordinal)
{
	switch (typid)
	{
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
		case INT8OID:
			*ordinal = DatumGetInt64(key);
			return true;
		case INT4OID:
			*ordinal = DatumGetInt32(key);
			return true;
		case DATEOID:
			*ordinal = DatumGetDateADT(key);
			return true;
		case FLOAT8OID:
			{
				double		d = DatumGetFloat8(key);
				int64		bits;

				if (d == 0)
					d = 0;		/* -0 and 0 are equal keys */
				memcpy(&bits, &d, sizeof(bits));
				*ordinal = bits < 0 ? bits ^ PG_INT64_MAX : bits;
				return true;
			}
		default:
			return false;
	}
}

/*
 * ttl_key_from_ordinal
 *		The key of type typid an ordinal stands for (the inverse of
 *		ttl_key_ordinal; an ordinal between two keys' gives a key between
 *		them).
 */
Datum
ttl_key_from_ordinal(Oid typid, int64 ordinal)
{
	switch (typid)
	{
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
		case INT8OID:
			return Int64GetDatum(ordinal);
		case INT4OID:
			return Int32GetDatum((int32) ordinal);
		case DATEOID:
			return DateADTGetDatum((DateADT) ordinal);
		case FLOAT8OID:
			{
				int64		bits = ordinal < 0 ? ordinal ^ PG_INT64_MAX : ordinal;
				double		d;

				memcpy(&d, &bits, sizeof(d));
				return Float8GetDatum(d);
			}
		default:
			elog(ERROR, "unsupported TTL key type %u", typid);
			return (Datum) 0;
	}
}
