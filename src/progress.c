/*-------------------------------------------------------------------------
 *
 * progress.c
 *	  ttl_index_progress(), the set-returning function behind the
 *	  ttl_index_progress view: what each running worker is doing right now,
 *	  in the spirit of pg_stat_progress_vacuum.
 *
 * The data is published by the workers in their database slots
 * (launcher.c); this file only formats a copy of it.  One row per running
 * worker, whatever the database.  Everyone sees the rows of the current
 * database in full (table names are no secret there: pg_class is readable
 * by all); the table and policy a worker of another database is busy with
 * are shown only to members of pg_read_all_stats.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "ttl_index.h"

#define TTL_PROGRESS_COLS	12

PG_FUNCTION_INFO_V1(ttl_index_progress);

/*
 * ttl_index_progress
 *		One row per running worker.
 */
Datum
ttl_index_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		see_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	List	   *workers;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);

	workers = ttl_slot_progress_list();
	foreach(lc, workers)
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
