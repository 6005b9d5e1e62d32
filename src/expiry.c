/*-------------------------------------------------------------------------
 *
 * expiry.c
 *	  Time arithmetic of TTL keys: the scan bound (cutoff) of a pass, the
 *	  instant a key expires, the Unix-epoch units of numeric TTL columns,
 *	  and ttl_expires_at(), the immutable function a per-row TTL is indexed
 *	  by.
 *
 * A key is the value the purge range-scans: the TTL column itself, or
 * ttl_expires_at(column, ttl_column) for a per-row TTL.  It is of one of
 * these types:
 *
 *	timestamptz          compared as is
 *	timestamp            local time in the server's TimeZone, like
 *	                     now()::timestamp
 *	date                 midnight at the start of the day, local time
 *	int4, int8, numeric, time since 1970-01-01 00:00 UTC in the policy's
 *	float8               unit (s, ms, us or ns); int4 holds seconds only
 *
 * A row is expired when key + expire_after <= now, which the scan tests as
 * key < cutoff.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgrprotos.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "ttl_index.h"

/* microseconds from the Unix epoch to PostgreSQL's (2000-01-01) */
#define TTL_UNIX_OFFSET_USECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

PG_FUNCTION_INFO_V1(ttl_expires_at_interval);
PG_FUNCTION_INFO_V1(ttl_expires_at_seconds);

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
 *		Whether a key of this type can be used with this unit (0: none).
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
 * ttl_epoch_cutoff
 *		The cutoff of a numeric key: limit (a PostgreSQL timestamp) as time
 *		since the Unix epoch in the unit, rounded so that key < cutoff holds
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
 * ttl_cutoff
 *		The scan bound of a pass that began at `now`: a row is expired when
 *		its key is strictly below the returned value.
 */
Datum
ttl_cutoff(Oid typid, int64 unit_ns, TimestampTz now, int64 expire_after)
{
	TimestampTz limit;
	Timestamp	local;
	DateADT		day;

	if (pg_sub_s64_overflow(now, expire_after, &limit))
		limit = DT_NOBEGIN + 1;

	if (unit_ns != 0)
		return ttl_epoch_cutoff(typid, unit_ns, limit);

	switch (typid)
	{
		case TIMESTAMPTZOID:
			return TimestampTzGetDatum(limit);
		case TIMESTAMPOID:
			return DirectFunctionCall1(timestamptz_timestamp,
									   TimestampTzGetDatum(limit));
		case DATEOID:
			local = DatumGetTimestamp(DirectFunctionCall1(timestamptz_timestamp,
														  TimestampTzGetDatum(limit)));
			day = DatumGetDateADT(DirectFunctionCall1(timestamp_date,
													  TimestampGetDatum(local)));
			/* day's midnight is expired only if strictly before `local` */
			if ((Timestamp) day * USECS_PER_DAY < local)
				day++;
			return DateADTGetDatum(day);
		default:
			elog(ERROR, "unsupported TTL key type %u", typid);
	}
	return (Datum) 0;			/* keep compiler quiet */
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
 * ttl_key_expiry
 *		The instant a row with this key expires.  Infinite keys give
 *		DT_NOEND (never) or DT_NOBEGIN (always).
 */
TimestampTz
ttl_key_expiry(Oid typid, int64 unit_ns, Datum key, int64 expire_after)
{
	TimestampTz ts;

	if (unit_ns != 0)
		ts = ttl_epoch_instant(typid, unit_ns, key);
	else
	{
		switch (typid)
		{
			case TIMESTAMPTZOID:
				ts = DatumGetTimestampTz(key);
				break;
			case TIMESTAMPOID:
				if (TIMESTAMP_NOT_FINITE(DatumGetTimestamp(key)))
					ts = DatumGetTimestamp(key);
				else
					ts = DatumGetTimestampTz(DirectFunctionCall1(timestamp_timestamptz, key));
				break;
			case DATEOID:
				if (DATE_NOT_FINITE(DatumGetDateADT(key)))
					ts = DATE_IS_NOBEGIN(DatumGetDateADT(key)) ? DT_NOBEGIN : DT_NOEND;
				else
					ts = DatumGetTimestampTz(DirectFunctionCall1(date_timestamptz, key));
				break;
			default:
				elog(ERROR, "unsupported TTL key type %u", typid);
		}
	}
	if (TIMESTAMP_NOT_FINITE(ts))
		return ts;
	/* keys within expire_after of the end of time never expire */
	if (pg_add_s64_overflow(ts, expire_after, &ts))
		return DT_NOEND;
	return ttl_clamp_timestamp(ts);
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
