/*-------------------------------------------------------------------------
 *
 * backlog.c
 *	  How many rows of a policy's table are past expiry, estimated the way
 *	  the planner estimates "col < cutoff": from the column's statistics
 *	  (most common values and histogram, as ANALYZE left them) and the
 *	  table's row count scaled to its current size.  Nothing is counted, so
 *	  ttl_index_stats stays cheap on large tables and many policies.
 *
 * The estimate is only as fresh as the last ANALYZE: right after a large
 * purge it can still count rows that are gone, until autovacuum analyzes
 * the table again.  ttl_index_stats corrects the two cases it can see from
 * the index: no expired row at all (then 0), and expired rows that the
 * statistics do not know about (then at least 1).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_statistic.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "ttl_index.h"
#include "engine/engine.h"
#include "policy/policy.h"
#include "citus/citus.h"
#include "env/env.h"

/*
 * ttl_backlog_tuples
 *		The table's row count now: the density ANALYZE or VACUUM measured,
 *		times the current number of pages (as the planner does).  Negative
 *		when the table has never been analyzed or vacuumed.
 */
static double
ttl_backlog_tuples(Oid relid)
{
	FormData_pg_class form;
	double		reltuples;
	BlockNumber relpages;
	BlockNumber curpages;
	Relation	rel;

	if (!ttl_rel_class(relid, &form))
		return -1;
	reltuples = form.reltuples;
	relpages = form.relpages;

	if (reltuples < 0)
		return -1;
	if (relpages == 0)
		return reltuples;

	/* the current size, if the table can be opened without waiting */
	if (!ConditionalLockRelationOid(relid, AccessShareLock))
		return reltuples;
	rel = try_relation_open(relid, NoLock);
	if (rel == NULL)
	{
		UnlockRelationOid(relid, AccessShareLock);
		return reltuples;
	}
	curpages = RelationGetNumberOfBlocks(rel);
	/* released at once, like the probe's (see ttl_probe_oldest) */
	relation_close(rel, AccessShareLock);

	return reltuples / relpages * curpages;
}

/*
 * ttl_backlog_histogram_fraction
 *		The fraction of a histogram's population that has expired at `now`,
 *		interpolating linearly inside the bucket that straddles it.
 */
static double
ttl_backlog_histogram_fraction(TtlPolicy *policy, Oid typid, Datum *bounds,
							   int nbounds, pg_tz *zone, TimestampTz now)
{
	int			lo = 0;
	int			hi = nbounds;
	TimestampTz below;
	TimestampTz above;
	double		within = 0.5;

	if (nbounds < 2)
		return 0;

	/* first bound that has not expired (bounds are sorted) */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (ttl_key_expiry(policy, typid, zone, bounds[mid]) < now)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	if (lo == nbounds)
		return 1;

	below = ttl_key_expiry(policy, typid, zone, bounds[lo - 1]);
	above = ttl_key_expiry(policy, typid, zone, bounds[lo]);
	if (!TIMESTAMP_NOT_FINITE(below) && !TIMESTAMP_NOT_FINITE(above) &&
		above > below)
		within = (double) (now - below) / (double) (above - below);

	return (lo - 1 + within) / (nbounds - 1);
}

/*
 * ttl_backlog_table
 *		Estimate how many rows of one table, holding the policy's column as
 *		attnum, have expired at `now`.  Returns false when the table has no
 *		statistics to go by.
 */
static bool
ttl_backlog_table(TtlPolicy *policy, Oid relid, AttrNumber attnum,
				  TimestampTz now, double *rows)
{
	HeapTuple	statstup;
	AttStatsSlot sslot;
	Oid			typid;
	double		tuples;
	double		nullfrac;
	double		mcv_total = 0;
	double		mcv_expired = 0;
	double		hist_fraction = 0;
	double		selectivity;
	pg_tz	   *zone = ttl_policy_zone(policy);

	/*
	 * The column's statistics say nothing of a per-row TTL or a filter, and
	 * a partitioned table has none of its own rows: no estimate.
	 */
	if (policy->ttl_column != NULL || policy->filter != NULL ||
		policy->soft_column != NULL || policy->action == TTL_ACTION_ANONYMIZE ||
		get_rel_relkind(relid) != RELKIND_RELATION)
		return false;
	typid = getBaseType(get_atttype(relid, attnum));
	if (!ttl_key_type_ok(typid, policy->unit_ns))
		return false;
	tuples = ttl_backlog_tuples(relid);
	if (tuples < 0)
		return false;

	statstup = SearchSysCache3(STATRELATTINH,
							   ObjectIdGetDatum(relid),
							   Int16GetDatum(attnum),
							   BoolGetDatum(false));
	if (!HeapTupleIsValid(statstup))
		return false;
	nullfrac = ((Form_pg_statistic) GETSTRUCT(statstup))->stanullfrac;

	if (get_attstatsslot(&sslot, statstup, STATISTIC_KIND_MCV, InvalidOid,
						 ATTSTATSSLOT_VALUES | ATTSTATSSLOT_NUMBERS))
	{
		for (int i = 0; i < sslot.nvalues && i < sslot.nnumbers; i++)
		{
			mcv_total += sslot.numbers[i];
			if (ttl_key_expiry(policy, typid, zone, sslot.values[i]) < now)
				mcv_expired += sslot.numbers[i];
		}
		free_attstatsslot(&sslot);
	}
	if (get_attstatsslot(&sslot, statstup, STATISTIC_KIND_HISTOGRAM, InvalidOid,
						 ATTSTATSSLOT_VALUES))
	{
		hist_fraction = ttl_backlog_histogram_fraction(policy, typid, sslot.values,
													   sslot.nvalues, zone, now);
		free_attstatsslot(&sslot);
	}
	ReleaseSysCache(statstup);

	selectivity = mcv_expired + hist_fraction * Max(0.0, 1.0 - nullfrac - mcv_total);
	selectivity = Min(Max(selectivity, 0.0), 1.0);
	*rows = selectivity * tuples;
	return true;
}

/*
 * ttl_backlog_estimate
 *		Estimate how many rows of the policy's table have expired at `now`:
 *		on a Citus distributed table, of the shard placements of this node.
 *		Returns false when the table (or a shard) has no statistics to go
 *		by.
 */
bool
ttl_backlog_estimate(TtlPolicy *policy, TimestampTz now, double *rows)
{
	List	   *shards;
	ListCell   *lc;

	if (ttl_citus_kind(policy->relid) != TTL_CITUS_DISTRIBUTED)
		return ttl_backlog_table(policy, policy->relid, policy->attnum, now, rows);

	*rows = 0;
	shards = ttl_citus_shards(policy->relid);
	foreach(lc, shards)
	{
		Oid			shard = lfirst_oid(lc);
		AttrNumber	attnum = get_attnum(shard, policy->column_name);
		double		n;

		if (attnum == InvalidAttrNumber ||
			!ttl_backlog_table(policy, shard, attnum, now, &n))
			return false;
		*rows += n;
	}
	return true;
}
