/*-------------------------------------------------------------------------
 *
 * views.c
 *	  The SQL functions behind the monitoring views: ttl_index_stats
 *	  (ttl_index_policy_stats), ttl_index_progress, ttl_index_databases,
 *	  and ttl_index_stats_reset().
 *
 * ttl_index_stats joins the counters (stats.c) to the catalog and reads
 * the backlog of each policy at query time: the oldest row's expiry from
 * its index (probe.c) and an estimate from the planner statistics
 * (backlog.c).  The figures do not depend on the reader's session: the
 * expiry rules use the server's TimeZone.  No owner's code runs in the
 * reader's session, and no policy can make a view fail: a policy with a
 * filter or set_columns (expressions its owner wrote) is not looked at,
 * its figures are what the worker's last pass recorded (stats.c), and a
 * look that fails leaves its policy's figures NULL; backlog_reason says
 * why a figure is NULL or where it comes from.  Who may
 * see what: `last_error` (error messages can quote row values), `lag`,
 * `expired_estimate` and `next_expiry` (they reveal the data's
 * distribution) only members of the table's owning role and of
 * pg_read_all_stats; the table and policy a worker of another database is
 * busy with only members of pg_read_all_stats.
 *
 * Locking: none of its own; the probes take and release theirs (probe.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"
#include "catalog/pg_type.h"

#include "compat.h"
#include "ttl_index.h"
#include "api/api.h"
#include "engine/engine.h"
#include "policy/policy.h"
#include "env/env.h"
#include "shared/shared.h"

#define TTL_STATS_COLS		29
#define TTL_STATS_COLS_1_4	27
#define TTL_STATS_COLS_1_3	24
#define TTL_STATS_COLS_1_2	18
#define TTL_STATS_COLS_1_1	15
#define TTL_STATS_COLS_1_0	13
#define TTL_PROGRESS_COLS	12
#define TTL_DATABASES_COLS	10

PG_FUNCTION_INFO_V1(ttl_index_policy_stats);
PG_FUNCTION_INFO_V1(ttl_index_progress);
PG_FUNCTION_INFO_V1(ttl_index_databases);
PG_FUNCTION_INFO_V1(ttl_index_stats_reset);
PG_FUNCTION_INFO_V1(ttl_index_policy_health);

#define TTL_HEALTH_COLS		4

/*
 * ttl_views_may_see
 *		Whether the current user may see a table's error messages and
 *		backlog: members of the owning role, and pg_read_all_stats.
 */
static bool
ttl_views_may_see(Oid relid)
{
	if (has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		return true;
	if (get_rel_name(relid) == NULL)
		return false;
	return has_privs_of_role(GetUserId(), ttl_table_owner(relid));
}

/*
 * ttl_views_backlog
 *		lag, expired_estimate and next_expiry of a policy, into values[i..]
 *		and nulls[i..]; returns the next column.  *reason: why one of them is
 *		NULL, or where they come from when not from the table now (NULL when
 *		they are read from the table now).
 */
static int
ttl_views_backlog(TtlPolicy *p, bool may_see, TimestampTz now,
				  Datum *values, bool *nulls, int i, const char **reason)
{
	TimestampTz expires_at;
	double		estimate;
	TtlHealth	h;
	TtlProbeResult probed;
	bool		user_code = false;

	*reason = NULL;
	if (!may_see)
	{
		*reason = "the backlog is shown to members of the table's owning role and of pg_read_all_stats";
		nulls[i++] = true;
		nulls[i++] = true;
		nulls[i++] = true;
		return i;
	}
	probed = ttl_probe_oldest_for_reader(p, &expires_at, &user_code);

	/*
	 * A filter or set_columns is the owner's code, never run in the reader's
	 * session (a reader's settings, cancels and transaction are none of the
	 * owner's business, and the owner's code could end the session): what
	 * the worker's last pass saw stands in for the look.
	 */
	if (user_code)
	{
		Interval   *lag;

		if (!ttl_stats_health(MyDatabaseId, p->id, &h) ||
			h.oldest_expiry == DT_NOBEGIN)
		{
			*reason = "the policy's filter or set_columns is its owner's code, which the view does not run, and no pass of the worker has recorded the backlog yet";
			nulls[i++] = true;
			nulls[i++] = true;
			nulls[i++] = true;
			return i;
		}
		*reason = "from the worker's last pass: the policy's filter or set_columns is its owner's code, which the view does not run";
		lag = palloc0(sizeof(Interval));
		if (h.oldest_expiry != 0 && h.oldest_expiry < now)
			lag->time = now - h.oldest_expiry;
		else if (h.next_expiry != 0 && !TIMESTAMP_NOT_FINITE(h.next_expiry) &&
				 h.next_expiry < now)
			lag->time = now - h.next_expiry;
		values[i++] = IntervalPGetDatum(lag);
		/* the planner's statistics say nothing of a filter */
		if (lag->time == 0)
			values[i++] = Int64GetDatum(0);
		else
			nulls[i++] = true;
		if (h.next_expiry == 0 || TIMESTAMP_NOT_FINITE(h.next_expiry))
			nulls[i] = true;
		else
			values[i] = TimestampTzGetDatum(h.next_expiry);
		i++;
		return i;
	}

	switch (probed)
	{
		case TTL_PROBE_FOUND:
			{
				Interval   *lag = palloc0(sizeof(Interval));
				bool		expired = !TIMESTAMP_IS_NOEND(expires_at) &&
					expires_at < now;

				if (expired && !TIMESTAMP_NOT_FINITE(expires_at))
					lag->time = now - expires_at;
				values[i++] = IntervalPGetDatum(lag);
				if (!expired)
					values[i++] = Int64GetDatum(0);
				else if (ttl_backlog_estimate(p, now, &estimate))
					values[i++] = Int64GetDatum(Max((int64) (estimate + 0.5), 1));
				else
				{
					*reason = "expired_estimate: the planner's statistics cannot tell (a table never analyzed, a partitioned table, a per-row TTL or a soft delete)";
					nulls[i++] = true;
				}
				if (TIMESTAMP_NOT_FINITE(expires_at))
					nulls[i] = true;
				else
					values[i] = TimestampTzGetDatum(expires_at);
				i++;
				break;
			}
		case TTL_PROBE_EMPTY:
			values[i++] = IntervalPGetDatum(palloc0(sizeof(Interval)));
			values[i++] = Int64GetDatum(0);
			nulls[i++] = true;
			break;
		case TTL_PROBE_UNKNOWN:
			*reason = "the policy's rows could not be read now: its table is locked, gone or without a usable index";
			nulls[i++] = true;
			nulls[i++] = true;
			nulls[i++] = true;
			break;
	}
	return i;
}

/*
 * ttl_views_backlog_guarded
 *		ttl_views_backlog in a subtransaction: an error in reading one
 *		policy's backlog (a broken policy) makes that policy's three figures
 *		NULL, with the error as the reason, and never fails the view.  A
 *		cancel or a shutdown is the reader's, and is thrown again.
 */
static int
ttl_views_backlog_guarded(TtlPolicy *p, bool may_see, TimestampTz now,
						  Datum *values, bool *nulls, int i, const char **reason)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool failed = false;
	const char *volatile failure = NULL;

	if (!may_see)
		return ttl_views_backlog(p, may_see, now, values, nulls, i, reason);

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		(void) ttl_views_backlog(p, may_see, now, values, nulls, i, reason);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata = ttl_error_catch_subxact(cxt, owner);

		failure = psprintf("the policy's rows could not be read: %s", edata->message);
		FreeErrorData(edata);
		failed = true;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	if (failed)
	{
		*reason = failure;
		nulls[i] = nulls[i + 1] = nulls[i + 2] = true;
	}
	return i + 3;
}

/*
 * ttl_views_window
 *		next_window: the purge window the policy is in, or its next one
 *		(window.c); NULL without windows, and for windows that cannot be
 *		read.  Fills one column.
 */
static int
ttl_views_window(TtlPolicy *p, TimestampTz now, Datum *values, bool *nulls, int i)
{
	TimestampTz from;
	TimestampTz until;
	RangeBound	lower;
	RangeBound	upper;
	TypeCacheEntry *typcache;

	if (p->windows.n <= 0)
	{
		nulls[i] = true;
		return i + 1;
	}
	(void) ttl_window_find(p, now, &from, &until);
	typcache = lookup_type_cache(TSTZRANGEOID, TYPECACHE_RANGE_INFO);
	lower.val = TimestampTzGetDatum(from);
	lower.infinite = false;
	lower.inclusive = true;
	lower.lower = true;
	upper.val = TimestampTzGetDatum(until);
	upper.infinite = false;
	upper.inclusive = false;
	upper.lower = false;
	values[i] = RangeTypePGetDatum(ttl_make_range(typcache, &lower, &upper));
	return i + 1;
}

/*
 * ttl_index_policy_stats
 *		One row per policy of the current database (see the top of the
 *		file).
 */
Datum
ttl_index_policy_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *policies;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();
	int			natts;

	InitMaterializedSRF(fcinfo, 0);
	natts = rsinfo->setDesc->natts;
	if (natts != TTL_STATS_COLS && natts != TTL_STATS_COLS_1_4 &&
		natts != TTL_STATS_COLS_1_3 &&
		natts != TTL_STATS_COLS_1_2 &&
		natts != TTL_STATS_COLS_1_1 && natts != TTL_STATS_COLS_1_0)
		elog(ERROR, "ttl_index_policy_stats: unexpected number of result columns %d",
			 natts);

	ttl_targets_init();
	policies = ttl_load_policies(CurrentMemoryContext);

	foreach(lc, policies)
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);
		TtlStatsCounters c;
		Datum		values[TTL_STATS_COLS];
		bool		nulls[TTL_STATS_COLS];
		bool		may_see;
		const char *reason;
		int			i = 0;

		CHECK_FOR_INTERRUPTS();
		memset(nulls, 0, sizeof(nulls));
		may_see = ttl_views_may_see(p->relid);
		(void) ttl_stats_read(MyDatabaseId, p->id, &c);

		values[i++] = Int32GetDatum(p->id);
		values[i++] = Int64GetDatum(c.rows_deleted);
		values[i++] = Int64GetDatum(c.batches);
		values[i++] = Int64GetDatum(c.passes);
		values[i++] = Int64GetDatum(c.rows_skipped_locked);
		values[i++] = Int64GetDatum(c.skipped_locked);
		values[i++] = Int64GetDatum(c.errors);
		if (c.last_error_at != 0 && may_see)
			values[i] = CStringGetTextDatum(c.last_error);
		else
			nulls[i] = true;
		i++;
		if (c.last_error_at != 0)
			values[i] = TimestampTzGetDatum(c.last_error_at);
		else
			nulls[i] = true;
		i++;
		if (c.last_run != 0)
			values[i] = TimestampTzGetDatum(c.last_run);
		else
			nulls[i] = true;
		i++;
		{
			Interval   *spent = palloc0(sizeof(Interval));

			spent->time = (int64) (c.time_spent_ms * 1000.0);
			values[i++] = IntervalPGetDatum(spent);
		}
		i = ttl_views_backlog_guarded(p, may_see, now, values, nulls, i, &reason);
		if (c.stats_reset != 0)
			values[i] = TimestampTzGetDatum(c.stats_reset);
		else
			nulls[i] = true;
		i++;
		values[i++] = Int64GetDatum(c.rows_archived);
		values[i++] = Int64GetDatum(c.rows_soft_deleted);
		values[i++] = Int64GetDatum(c.partitions_dropped);
		values[i++] = Int64GetDatum(c.rows_held);
		if (c.last_error_at != 0)
			values[i] = CStringGetTextDatum(unpack_sql_state(c.last_error_code));
		else
			nulls[i] = true;
		i++;
		values[i++] = Int64GetDatum(c.last_pass_rows);
		values[i++] = Float8GetDatum(c.expiry_rate);
		values[i++] = Float8GetDatum(c.delete_rate);
		values[i++] = BoolGetDatum(c.falling_behind);
		values[i++] = Int64GetDatum(c.rows_capped);
		values[i++] = Int64GetDatum(c.rows_anonymized);
		i = ttl_views_window(p, now, values, nulls, i);
		if (reason != NULL)
			values[i] = CStringGetTextDatum(reason);
		else
			nulls[i] = true;
		i++;
		values[i++] = Int64GetDatum(c.rows_locked);
		Assert(i == TTL_STATS_COLS);

		/*
		 * Between installing a newer library and ALTER EXTENSION UPDATE, the
		 * function of an older version asks for fewer columns: 1.2 and 1.1
		 * the leading ones (the tuple is formed from them); 1.0 13, without
		 * expired_estimate (12) and stats_reset (14).
		 */
		if (natts == TTL_STATS_COLS_1_0)
		{
			values[12] = values[13];
			nulls[12] = nulls[13];
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * ttl_index_progress
 *		One row per running worker, in the spirit of
 *		pg_stat_progress_vacuum.  Everyone sees the rows of the current
 *		database in full (table names are no secret there: pg_class is
 *		readable by all).
 */
Datum
ttl_index_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		see_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);

	foreach(lc, ttl_shmem_progress_list())
	{
		TtlProgress *p = (TtlProgress *) lfirst(lc);
		Datum		values[TTL_PROGRESS_COLS];
		bool		nulls[TTL_PROGRESS_COLS];
		bool		show = see_all || p->dboid == MyDatabaseId;
		bool		busy = p->policy_id != 0 && show;
		int			i = 0;

		memset(nulls, 0, sizeof(nulls));

		values[i++] = Int32GetDatum(p->pid);
		values[i++] = ObjectIdGetDatum(p->dboid);
		values[i++] = NameGetDatum(&p->datname);
		values[i++] = CStringGetTextDatum(p->phase);
		if (p->phase_since != 0)
			values[i] = TimestampTzGetDatum(p->phase_since);
		else
			nulls[i] = true;
		i++;

		/* the rest describes the pass and batch of the policy in hand */
		if (busy)
		{
			values[i++] = Int32GetDatum(p->policy_id);
			values[i++] = CStringGetTextDatum(p->relname);
			values[i++] = TimestampTzGetDatum(p->pass_started);
			values[i++] = Int64GetDatum(p->pass_rows);
			values[i++] = Int64GetDatum(p->pass_batches);
		}
		else
		{
			for (int j = 0; j < 5; j++)
				nulls[i++] = true;
		}
		if (busy && p->batch_started != 0)
		{
			values[i++] = TimestampTzGetDatum(p->batch_started);
			values[i++] = Int32GetDatum(p->batch_row_limit);
		}
		else
		{
			nulls[i++] = true;
			nulls[i++] = true;
		}
		Assert(i == TTL_PROGRESS_COLS);

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * ttl_index_databases
 *		One row per database the launcher keeps track of: whether it has
 *		the extension, its worker, and whether it waits for a worker slot
 *		(more databases need a worker than ttl_index.max_workers allows:
 *		they take turns, see launcher.c).
 */
Datum
ttl_index_databases(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz now = GetCurrentTimestamp();
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);

	foreach(lc, ttl_shmem_database_list())
	{
		TtlDbStatus *d = (TtlDbStatus *) lfirst(lc);
		Datum		values[TTL_DATABASES_COLS];
		bool		nulls[TTL_DATABASES_COLS];
		const char *state;
		int			i = 0;

		memset(nulls, 0, sizeof(nulls));
		if (d->blocked_until > now)
			state = "blocked";
		else if (d->pid != 0)
			state = "running";
		else if (d->waiting_since != 0)
			state = "waiting";
		else if (d->paused)
			state = "paused";
		else if (d->has_extension)
			state = "starting";
		else
			state = "no extension";

		values[i++] = ObjectIdGetDatum(d->dboid);
		values[i++] = NameGetDatum(&d->datname);
		values[i++] = CStringGetTextDatum(state);
		if (d->pid != 0)
			values[i] = Int32GetDatum(d->pid);
		else
			nulls[i] = true;
		i++;
		if (d->waiting_since != 0)
			values[i] = TimestampTzGetDatum(d->waiting_since);
		else
			nulls[i] = true;
		i++;
		if (d->turn_started != 0)
			values[i] = TimestampTzGetDatum(d->turn_started);
		else
			nulls[i] = true;
		i++;
		values[i++] = Int64GetDatum(d->turns);
		values[i++] = BoolGetDatum(d->has_extension);
		values[i++] = Int64GetDatum(d->replica_holds);
		{
			Interval   *held = palloc0(sizeof(Interval));

			held->time = d->replica_hold_ms * 1000;
			values[i++] = IntervalPGetDatum(held);
		}
		Assert(i == TTL_DATABASES_COLS);

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * ttl_index_stats_reset
 *		SQL: zero the counters of the current database's policies, or of the
 *		policies of one table.  Who may call it is decided by EXECUTE
 *		privilege (revoked from PUBLIC, as for pg_stat_reset()).
 */
Datum
ttl_index_stats_reset(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	List	   *ids = NIL;
	ListCell   *lc;

	foreach(lc, ttl_load_policies(CurrentMemoryContext))
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);

		if (!OidIsValid(relid) || p->relid == relid)
			ids = lappend_int(ids, p->id);
	}
	/* as ttl_pause() says it: a table without a policy is a mistake */
	if (OidIsValid(relid) && ids == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table \"%s\" has no TTL policy",
						get_rel_name(relid) ? get_rel_name(relid) : "?")));
	ttl_stats_reset(MyDatabaseId, ids);
	PG_RETURN_VOID();
}

/*
 * ttl_views_stalled
 *		Why a policy's expired rows stay, when they have stayed longer than
 *		ttl_index.stalled_after (or the worker cannot tell how long: no
 *		usable index, failing batches, no replication origin); NULL when
 *		nothing is wrong.
 */
static const char *
ttl_views_stalled(TtlHealth *h, TimestampTz now)
{
	if (!h->known || h->reason[0] == '\0' || h->oldest_expiry == 0)
		return NULL;
	if (h->oldest_expiry == DT_NOBEGIN)
		return h->reason;
	if (now - h->oldest_expiry >= (int64) ttl_stalled_after * USECS_PER_SEC)
		return h->reason;
	return NULL;
}

/*
 * ttl_views_paused_health
 *		The row of a paused policy, or of any policy of a paused database
 *		(db_paused: ALTER DATABASE ... SET ttl_index.enabled = off).  No
 *		worker looks at it, so what one last said of it is from before the
 *		pause: stalled is "database paused" at once (nothing else says why
 *		a database's rows stay: its policies are not paused, and no worker
 *		runs for it), else "paused" once the policy's pause has lasted
 *		ttl_index.stalled_after (a pause nobody lifted is a stall nobody
 *		sees otherwise); the oldest expiry is read now, as lag is
 *		(ttl_views_backlog), for those who may see the backlog.
 */
static void
ttl_views_paused_health(TtlPolicy *p, bool db_paused, TimestampTz now,
						Datum *values, bool *nulls)
{
	TimestampTz since;
	Datum		backlog[3];
	bool		bnulls[3] = {false, false, false};
	const char *reason;

	values[0] = Int32GetDatum(p->id);
	if (db_paused)
		values[1] = CStringGetTextDatum("database paused");
	else if (ttl_catalog_paused_since(p->id, &since) &&
			 now - since >= (int64) ttl_stalled_after * USECS_PER_SEC)
		values[1] = CStringGetTextDatum("paused");
	else
		nulls[1] = true;
	nulls[2] = true;
	if (ttl_views_may_see(p->relid))
	{
		(void) ttl_views_backlog_guarded(p, true, now, backlog, bnulls, 0, &reason);
		if (!bnulls[0] && DatumGetIntervalP(backlog[0])->time > 0)
		{
			values[2] = TimestampTzGetDatum(now - DatumGetIntervalP(backlog[0])->time);
			nulls[2] = false;
		}
	}
	values[3] = TimestampTzGetDatum(now);
}

/*
 * ttl_index_policy_health
 *		One row per policy of the current database that a worker has looked
 *		at since the server started, and per paused policy (every policy
 *		of a paused database): whether it is stalled and why (for every
 *		reader: it says nothing of the data), the
 *		expiry of its oldest expired row as the worker's last pass saw it
 *		(for a paused policy, as read now; for those who may see the
 *		backlog, as for lag), and when it was looked at.
 */
Datum
ttl_index_policy_health(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz now = GetCurrentTimestamp();
	ListCell   *lc;
	bool		db_paused;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != TTL_HEALTH_COLS)
		elog(ERROR, "ttl_index_policy_health: unexpected number of result columns %d",
			 rsinfo->setDesc->natts);

	/* as the worker reads it: the database's own entry, not this session's */
	db_paused = ttl_database_paused(MyDatabaseId);
	foreach(lc, ttl_load_policies(CurrentMemoryContext))
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);
		TtlHealth	h;
		Datum		values[TTL_HEALTH_COLS];
		bool		nulls[TTL_HEALTH_COLS];
		const char *stalled;

		memset(nulls, 0, sizeof(nulls));
		if (!p->enabled || db_paused)
		{
			ttl_views_paused_health(p, db_paused, now, values, nulls);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			continue;
		}
		if (!ttl_stats_health(MyDatabaseId, p->id, &h))
			continue;
		values[0] = Int32GetDatum(p->id);
		stalled = ttl_views_stalled(&h, now);
		if (stalled != NULL)
			values[1] = CStringGetTextDatum(stalled);
		else
			nulls[1] = true;
		if (h.oldest_expiry == 0 || h.oldest_expiry == DT_NOBEGIN ||
			!ttl_views_may_see(p->relid))
			nulls[2] = true;
		else
			values[2] = TimestampTzGetDatum(h.oldest_expiry);
		values[3] = TimestampTzGetDatum(h.at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
