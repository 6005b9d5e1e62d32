/*-------------------------------------------------------------------------
 *
 * cap.c
 *	  Size caps: at most max_rows rows, or max_bytes bytes, in a policy's
 *	  table, the oldest by the TTL column going first, expired or not
 *	  (ttl_create_index(..., max_rows => N), max_bytes => N).
 *
 * A cap is a second cut-off.  At a pass's first batch, the key of the
 * first row that stays is read from the policy's index; every batch of the
 * pass then deletes the rows below that key as well as the expired ones,
 * with the same engine, in the same bounded batches, at the same pace
 * (batch.c).  The rows it takes that had not expired are counted apart
 * (rows_capped).
 *
 * Counting a table's rows reads all of it; the cap reads as little as it
 * can.  PostgreSQL's own count of live rows, the one autovacuum reads
 * (pg_stat_get_live_tuples: every committed insert and delete, a second or
 * so after its commit, and the estimate of the last VACUUM or ANALYZE),
 * summed over the tables the policy purges, with this process's own
 * inserts and deletes not reported yet (its pending counts, not those of
 * rolled-back subtransactions: ttl_cap_pending_live), says whether
 * the table may be over its cap; the worker reports its deletes at the end
 * of each capped pass.  Only then is the cut read, exactly: the key of the
 * max_rows-th newest row, which reads max_rows index entries.  The count
 * alone cannot place the cut: deletes reported before the inserts they
 * followed are lost to it (PostgreSQL keeps it from going below zero), and
 * a cut placed by it took the newest rows.
 *
 * A crash, pg_stat_reset() or a promotion starts the counts again from
 * zero while the table keeps its rows.  A count with no VACUUM or ANALYZE
 * since the counts began is trusted only when it cannot be such a count:
 * not when it is below the size the table was last measured at
 * (pg_class.reltuples), nor when the table was never measured (reltuples
 * -1: a count kept since the table was made and one begun since a reset
 * look the same), nor when it counts no row in a table that has pages.
 * Then the cap counts for itself: the cut is read at each pass, which
 * reads at most max_rows index entries, until the table is measured.
 *
 * A cap over TTL_CAP_MAX_WALK rows is too large to read at each pass: its
 * cut is placed by the count, from the oldest row, with a walk of at most
 * TTL_CAP_MAX_WALK entries (a table further over comes down by that much a
 * pass), and an untrusted count makes it wait for the table to be measured
 * (autoanalyze, or ANALYZE), which the worker says once.  Such a cap is as
 * close as the count: it may take rows of the newest max_rows.
 *
 * The cut is the key of the first row that stays: the rows below it go.
 * Rows tied with it stay, so the table may hold a few more than max_rows
 * (with a date column, the rest of that day's rows), and rows that all
 * share one key (one INSERT with DEFAULT now()) are never capped.  Rows
 * with a NULL key are never counted in the cut nor deleted.
 *
 * The count and the cut are those of the tables the passes purge
 * (targets.c): a table's foreign partitions or children are neither
 * counted nor read (a server that is down would fail every cut), and the
 * cut is then read in each of the others alone, as a Citus node reads its
 * shards.
 *
 * Citus: the cap is the distributed table's, over every node.  Each node
 * (the coordinator with its shards too) reads the cut of the whole table
 * through Citus at each capped pass, the key of the table's max_rows-th
 * newest row (ttl_cap_global_key), and deletes the rows of its shards
 * below it: the same cut on every node, so no row of the table's newest
 * max_rows is deleted for the cap, however the rows spread over the shards
 * (one busy tenant), and partitions count as rows, not as shards.  A node
 * with no row reads nothing.  When the cut cannot be read over the nodes
 * (a node down), or the cap is over TTL_CAP_MAX_WALK, a node caps its own
 * shards at max_rows: it still never deletes one of the table's newest
 * max_rows (a row with max_rows newer ones on this node alone has them in
 * the table), but the table may then keep up to max_rows per node.
 *
 * Caps by bytes (max_bytes): the table's size is what pg_total_relation_size
 * counts (heap, TOAST and every index, with their free space and
 * visibility maps: what \dt+ shows and what fills a disk), summed over the
 * tables the passes purge (a partitioned table's partitions; not a foreign
 * one).  Deleting rows never shrinks those files: PostgreSQL reuses the
 * space once VACUUM has recorded it in the free space map.  So a cap by
 * bytes holds by reuse, not by shrinking: at each pass whose tables take
 * more than max_bytes, it becomes a number of rows, those that fit in
 * max_bytes at the footprint the rows have now (the space used, the size
 * less the free space the maps record, over the live and dead rows: a dead
 * row's space is free only once VACUUM has recorded it), and that many are
 * kept as max_rows keeps them (with max_rows too, the smaller number).
 * Once the table reached max_bytes, the rows the cap takes leave their
 * space to the rows that come after them, and the table stops growing.
 * While the tables are within max_bytes a pass reads nothing more.  The
 * maps are read for at most TTL_CAP_FSM_SAMPLE blocks of each relation (a
 * larger one is sampled evenly).  A live-row count not trusted (above) is
 * replaced by PostgreSQL's estimate from the tables' density when last
 * measured; for tables never measured, by a count of their rows when they
 * take at most 1 GB, else the cap by bytes waits for them to be measured.
 *
 * How close it holds: the table may exceed max_bytes by the rows written
 * between a pass and the VACUUM that records the space of the rows it took
 * (they go to new pages until then), and by what the maps do not show as
 * free yet: index pages the cap emptied become free to reuse a VACUUM or
 * two later, which makes the footprint look larger for a pass or two (the
 * cap then keeps fewer rows, never more).  It cannot shrink a table already
 * larger than max_bytes: its rows come down to what fits, and the files
 * stay as large until VACUUM FULL or pg_repack rewrites them, or VACUUM
 * truncates the empty pages at their end.  Citus distributed tables are
 * refused (each node sees only its own shards' size): max_rows is the
 * whole table's.
 *
 * Locking: runs in the batch's transaction; the key is read as the table's
 * owner (its row-level security applies, as to the purge), with
 * AccessShareLock on the tables read.  A cap by bytes takes AccessShareLock
 * on the tables, their indexes and TOAST without waiting: one locked away
 * (a DDL waiting) leaves the cap by bytes out of that pass.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "access/xact.h"
#include "utils/array.h"
#include "executor/spi.h"
#include "storage/bufmgr.h"
#include "storage/freespace.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datum.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/pgstat_internal.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "ttl_index.h"
#include "engine/engine.h"
#include "policy/policy.h"
#include "citus/citus.h"
#include "env/env.h"

/*
 * Most index entries a pass reads to find its cap's key: a walk from the
 * oldest row goes on at the next pass; a count not trusted with a larger
 * cap waits for the table to be measured.
 */
#define TTL_CAP_MAX_WALK		1000000

/*
 * Most blocks of one relation whose free space a pass reads from the free
 * space map for a cap by bytes; a larger relation is sampled evenly.
 */
#define TTL_CAP_FSM_SAMPLE		4096

/*
 * Largest tables a cap by bytes counts the rows of, when their live-row
 * count cannot be trusted and they were never measured (1 GB).
 */
#define TTL_CAP_COUNT_MAX_BYTES	(1024.0 * 1024 * 1024)

/*
 * ttl_cap_count_lost
 *		Whether a table's live-row count, with no VACUUM or ANALYZE since the
 *		counts began, may have begun again while the table kept its rows (a
 *		crash, pg_stat_reset(), a promotion): it is below the size the table
 *		was last measured at, or the table was never measured (nothing then
 *		tells a count kept since the table was made from one begun later),
 *		or it counts no row in a table that has pages.
 */
static bool
ttl_cap_count_lost(Oid relid, float4 reltuples, int64 counted)
{
	Relation	rel;
	bool		pages = true;

	if (reltuples < 0 || (double) counted < (double) reltuples)
		return true;
	if (counted > 0)
		return false;
	/* its size, without waiting: a table locked away is taken to have pages */
	if (ConditionalLockRelationOid(relid, AccessShareLock))
	{
		rel = try_relation_open(relid, NoLock);
		if (rel != NULL)
		{
			pages = RelationGetNumberOfBlocks(rel) > 0;
			relation_close(rel, NoLock);
		}
	}
	return pages;
}

/*
 * ttl_cap_pending_live
 *		The live rows this process has added to a table (less those it
 *		deleted) and not yet reported to the cumulative statistics: the net
 *		of its ended transactions (delta_live_tuples) and of each open
 *		(sub)transaction level.  Not pg_stat_get_xact_tuples_inserted() less
 *		pg_stat_get_xact_tuples_deleted(): those count the rows of
 *		rolled-back subtransactions too.  ttl_runner() rolls back a policy's
 *		first attempt when some rows refuse, and retries it batch by batch:
 *		the deletes of the rolled-back attempt made the table look under its
 *		cap, and the retry capped nothing.  An over-count is safe (the cut
 *		is then read, exactly); an under-count keeps rows over the cap.
 */
static int64
ttl_cap_pending_live(Oid relid)
{
	PgStat_EntryRef *ref;
	PgStat_TableStatus *ts;
	int64		n;

	ref = pgstat_fetch_pending_entry(PGSTAT_KIND_RELATION, MyDatabaseId, relid);
	if (ref == NULL || ref->pending == NULL)
		return 0;
	ts = (PgStat_TableStatus *) ref->pending;
	n = TTL_TABSTAT_DELTA_LIVE(ts);
	for (PgStat_TableXactStatus *x = ts->trans; x != NULL; x = x->upper)
		n += x->tuples_inserted - x->tuples_deleted;
	return n;
}

/*
 * ttl_cap_live_rows
 *		The live rows of the pass's tables, as the cumulative statistics
 *		count them, with the inserts and deletes this process has not
 *		reported to them yet (ttl_runner(): the caller's session; the
 *		worker reports its own at the end of each capped pass).  Returns
 *		false when the count cannot be trusted (see the top of the file).
 *		The caller is connected to SPI.
 */
static bool
ttl_cap_live_rows(TtlPass *pass, int64 *live)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		values[1];
	Datum	   *relids = palloc(sizeof(Datum) * list_length(pass->targets));
	int			n = 0;
	ListCell   *lc;
	bool		trusted = true;

	foreach(lc, pass->targets)
		relids[n++] = ObjectIdGetDatum(((TtlTarget *) lfirst(lc))->relid);
	values[0] = PointerGetDatum(construct_array(relids, n, OIDOID, sizeof(Oid), true,
												TYPALIGN_INT));

	/*
	 * Over the table OIDs themselves, not pg_class: Citus hides its shards
	 * from queries of pg_class.
	 */
	if (SPI_execute_with_args("SELECT r, pg_catalog.pg_stat_get_live_tuples(r),"
							  " coalesce(pg_catalog.pg_stat_get_last_vacuum_time(r),"
							  "          pg_catalog.pg_stat_get_last_autovacuum_time(r),"
							  "          pg_catalog.pg_stat_get_last_analyze_time(r),"
							  "          pg_catalog.pg_stat_get_last_autoanalyze_time(r)) IS NOT NULL"
							  " FROM pg_catalog.unnest($1) r",
							  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not count the live rows of a capped table");
	*live = 0;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		int64		counted = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		int64		pending = ttl_cap_pending_live(relid);
		bool		measured = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));
		HeapTuple	classtup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
		float4		reltuples = -1;

		if (HeapTupleIsValid(classtup))
		{
			reltuples = ((Form_pg_class) GETSTRUCT(classtup))->reltuples;
			ReleaseSysCache(classtup);
		}
		/* counts begun again since the table was last measured (above) */
		if (!measured && ttl_cap_count_lost(relid, reltuples, counted))
			trusted = false;
		*live += counted + pending;
	}
	return trusted;
}

/*
 * ttl_cap_keep_key
 *		The key the last SPI query read (its one row's first column, not
 *		NULL) as the pass's cut: copied into the pass's memory, which
 *		outlives SPI's and this transaction, and the cap made active.
 */
static void
ttl_cap_keep_key(TtlPass *pass)
{
	Oid			keytype = getBaseType(SPI_gettypeid(SPI_tuptable->tupdesc, 1));
	bool		isnull;
	Datum		key = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	int16		typlen;
	bool		typbyval;
	MemoryContext old;

	get_typlenbyval(keytype, &typlen, &typbyval);
	old = MemoryContextSwitchTo(pass->cxt);
	pass->cap_bound = datumCopy(key, typbyval, typlen);
	MemoryContextSwitchTo(old);
	pass->cap_active = true;
}

/*
 * ttl_cap_global_key
 *		On a Citus distributed table: the key of the max_rows-th newest row
 *		of the whole table, over every node, read through Citus (a query of
 *		the distributed table itself: Citus reads each shard's newest
 *		max_rows keys from its index and merges them), as pass->cap_bound,
 *		cap_active when the table is over its cap.  Every node reads the
 *		same cut, so the table, not each node, keeps its newest max_rows.
 *		Returns false when it could not be read (a node down, a connection
 *		refused): the caller then caps by what this node holds.  Runs in a
 *		subtransaction of its own, so that a failure costs only this.  The
 *		caller is connected to SPI, as the table's owner.
 */
static bool
ttl_cap_global_key(TtlPolicy *policy, TtlPass *pass, int64 cap)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	const char *col = quote_identifier(policy->column_name);
	char	   *sql;
	volatile bool ok = false;

	sql = psprintf("SELECT %s FROM %s WHERE %s IS NOT NULL ORDER BY %s DESC OFFSET " INT64_FORMAT " LIMIT 1",
				   col, ttl_qualified_relname(policy->relid), col, col, cap - 1);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		if (SPI_execute(sql, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read the key of the cap of table %u", policy->relid);
		if (SPI_processed == 1)
			ttl_cap_keep_key(pass);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		ok = true;
	}
	PG_CATCH();
	{
		/* a cancel or a shutdown is thrown again, as everywhere else */
		ErrorData  *edata = ttl_error_catch_subxact(cxt, owner);

		pass->cap_active = false;
		ereport(DEBUG1,
				(errmsg("ttl_index: the cap of table \"%s\" is read on this node alone: %s",
						get_rel_name(policy->relid), edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return ok;
}

/*
 * ttl_cap_skips_tables
 *		Whether the policy's table has partitions or children that its
 *		passes do not purge, and so must not count: foreign tables (a
 *		foreign partition whose server is down would fail every read of
 *		the whole table).  Takes no lock: it reads pg_inherits only.
 */
static bool
ttl_cap_skips_tables(TtlPolicy *policy)
{
	char		relkind = get_rel_relkind(policy->relid);
	List	   *all;
	ListCell   *lc;
	bool		skips = false;

	if (relkind != RELKIND_PARTITIONED_TABLE &&
		!(relkind == RELKIND_RELATION && has_subclass(policy->relid)))
		return false;
	all = find_all_inheritors(policy->relid, NoLock, NULL);
	foreach(lc, all)
	{
		relkind = get_rel_relkind(lfirst_oid(lc));
		/* the targets are the tables (targets.c); the rest hold no rows */
		if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
			skips = true;
	}
	list_free(all);
	return skips;
}

/*
 * ttl_cap_sql
 *		The query for the key of the $1-th oldest (or newest) row, from 0,
 *		of the pass's tables: over the policy's table (its partitions or
 *		children with it) when those are all the pass's, else over the
 *		tables the pass purges (the shards this node holds, the partitions
 *		that are not foreign tables), each read alone.
 */
static char *
ttl_cap_sql(TtlPolicy *policy, TtlPass *pass, bool newest)
{
	const char *order = newest ? " DESC" : "";
	const char *col = quote_identifier(policy->column_name);
	StringInfoData from;
	ListCell   *lc;

	if (ttl_citus_kind(policy->relid) != TTL_CITUS_DISTRIBUTED &&
		!ttl_cap_skips_tables(policy))
		return psprintf("SELECT %s FROM %s WHERE %s IS NOT NULL ORDER BY %s%s OFFSET $1 LIMIT 1",
						col, ttl_qualified_relname(policy->relid), col, col, order);
	initStringInfo(&from);
	foreach(lc, pass->targets)
	{
		TtlTarget  *t = (TtlTarget *) lfirst(lc);

		appendStringInfo(&from, "%sSELECT %s AS k FROM ONLY %s",
						 from.len > 0 ? " UNION ALL " : "", col,
						 ttl_qualified_relname(t->relid));
	}
	return psprintf("SELECT k FROM (%s) s WHERE k IS NOT NULL ORDER BY k%s OFFSET $1 LIMIT 1",
					from.data, order);
}

/*
 * ttl_cap_fork_free
 *		The free space the free space map records for a relation's main
 *		fork, in bytes: read for every block of a relation of up to
 *		TTL_CAP_FSM_SAMPLE blocks, for that many blocks evenly spread over
 *		a larger one and scaled to its size.  A relation never vacuumed has
 *		no map: nothing free.
 */
static double
ttl_cap_fork_free(Relation rel, BlockNumber nblocks)
{
	BlockNumber n = Min(nblocks, (BlockNumber) TTL_CAP_FSM_SAMPLE);
	double		free = 0;

	if (n == 0)
		return 0;
	for (BlockNumber i = 0; i < n; i++)
		free += GetRecordedFreeSpace(rel, (BlockNumber) ((double) i * nblocks / n));
	return free * nblocks / n;
}

/*
 * ttl_cap_rel_bytes
 *		Add a relation's size, every fork of it (pg_relation_size's sum, as
 *		pg_total_relation_size counts), to *total, and unless free is NULL
 *		the free space its main fork's map records to *free; for a table,
 *		its indexes and its TOAST table (with the TOAST table's index)
 *		too.  Takes AccessShareLock on each, without waiting: returns false
 *		when one is locked away (a DDL waiting for it must not queue behind
 *		the pass).  A relation dropped meanwhile counts nothing.
 */
static bool
ttl_cap_rel_bytes(Oid relid, bool with_parts, double *total, double *free)
{
	Relation	rel;
	List	   *indexes = NIL;
	Oid			toast = InvalidOid;
	ListCell   *lc;
	bool		ok = true;

	if (!ConditionalLockRelationOid(relid, AccessShareLock))
		return false;
	rel = try_relation_open(relid, NoLock);
	if (rel == NULL)
		return true;
	if (RELKIND_HAS_STORAGE(rel->rd_rel->relkind))
	{
		for (ForkNumber fork = 0; fork <= MAX_FORKNUM; fork++)
		{
			BlockNumber nblocks;

			if (!smgrexists(RelationGetSmgr(rel), fork))
				continue;
			nblocks = smgrnblocks(RelationGetSmgr(rel), fork);
			*total += (double) nblocks * BLCKSZ;
			if (fork == MAIN_FORKNUM && free != NULL)
				*free += ttl_cap_fork_free(rel, nblocks);
		}
	}
	if (with_parts)
	{
		indexes = RelationGetIndexList(rel);
		toast = rel->rd_rel->reltoastrelid;
	}
	relation_close(rel, NoLock);
	foreach(lc, indexes)
	{
		if (ok)
			ok = ttl_cap_rel_bytes(lfirst_oid(lc), false, total, free);
	}
	list_free(indexes);
	if (ok && OidIsValid(toast))
		ok = ttl_cap_rel_bytes(toast, true, total, free);
	return ok;
}

/*
 * ttl_cap_exact_live
 *		The live rows of the pass's tables, counted by reading them: for a
 *		cap by bytes whose live-row count cannot be trusted (see the top of
 *		the file).  The caller is connected to SPI, as the table's owner.
 */
static int64
ttl_cap_exact_live(TtlPass *pass)
{
	StringInfoData sql;
	ListCell   *lc;
	bool		isnull;
	Datum		d;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT 0::pg_catalog.int8");
	foreach(lc, pass->targets)
		appendStringInfo(&sql, " + (SELECT pg_catalog.count(*) FROM ONLY %s)",
						 ttl_qualified_relname(((TtlTarget *) lfirst(lc))->relid));
	if (SPI_execute(sql.data, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not count the rows of a table capped by size");
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? 0 : DatumGetInt64(d);
}

/*
 * ttl_cap_estimate_live
 *		The live rows of the pass's tables as the planner estimates them:
 *		the rows per page they had when last measured (pg_class.reltuples
 *		over relpages) times the pages they have now.  -1 when one of them
 *		was never measured.
 */
static double
ttl_cap_estimate_live(TtlPass *pass)
{
	double		est = 0;
	ListCell   *lc;

	foreach(lc, pass->targets)
	{
		Oid			relid = ((TtlTarget *) lfirst(lc))->relid;
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
		Form_pg_class form;
		Relation	rel;

		if (!HeapTupleIsValid(tup))
			continue;
		form = (Form_pg_class) GETSTRUCT(tup);
		if (form->reltuples < 0 || (form->relpages == 0 && form->reltuples > 0))
		{
			ReleaseSysCache(tup);
			return -1;
		}
		if (form->relpages > 0)
		{
			/* locked by ttl_cap_rel_bytes */
			rel = try_relation_open(relid, NoLock);
			if (rel != NULL)
			{
				est += form->reltuples / form->relpages *
					RelationGetNumberOfBlocks(rel);
				relation_close(rel, NoLock);
			}
		}
		ReleaseSysCache(tup);
	}
	return est;
}

/*
 * ttl_cap_bytes_rows
 *		A cap by bytes as a number of rows (see the top of the file): the
 *		rows that fit in max_bytes at the footprint the rows have now, the
 *		space the tables use (their size less the free space their maps
 *		record) over their rows (live and dead: a dead row's space is free
 *		only once VACUUM has recorded it).  Returns -1 when the tables are
 *		within max_bytes, or could not be measured without waiting: no cap
 *		by bytes at this pass.  The maps are read only for tables over it.
 *		*live and *trusted are the count of ttl_cap_live_rows; a count not
 *		trusted is replaced by PostgreSQL's estimate from the tables'
 *		density when they were last measured (ttl_cap_estimate_live), else
 *		by a count of the rows when the tables take at most 1 GB, else the
 *		pass waits for them to be measured (cap_unmeasured).  The caller
 *		is connected to SPI, as the table's owner.
 */
static int64
ttl_cap_bytes_rows(TtlPolicy *policy, TtlPass *pass, int64 *live, bool *trusted)
{
	double		total = 0;
	double		free = 0;
	double		used;
	double		rows;
	int64		dead = 0;
	int64		budget;
	ListCell   *lc;

	foreach(lc, pass->targets)
	{
		if (!ttl_cap_rel_bytes(((TtlTarget *) lfirst(lc))->relid, true, &total, NULL))
			return -1;
	}
	if (total <= (double) policy->max_bytes)
		return -1;
	/* over it: the free space and the dead rows, with the size again */
	total = 0;
	foreach(lc, pass->targets)
	{
		Oid			relid = ((TtlTarget *) lfirst(lc))->relid;

		if (!ttl_cap_rel_bytes(relid, true, &total, &free))
			return -1;
		dead += DatumGetInt64(DirectFunctionCall1(pg_stat_get_dead_tuples,
												  ObjectIdGetDatum(relid)));
	}
	rows = (double) Max(*live, 0);
	if (!*trusted)
	{
		rows = ttl_cap_estimate_live(pass);
		if (rows < 0 && total <= TTL_CAP_COUNT_MAX_BYTES)
		{
			*live = ttl_cap_exact_live(pass);
			*trusted = true;
			rows = (double) *live;
		}
		else if (rows < 0)
		{
			pass->cap_unmeasured = true;
			return -1;
		}
	}
	rows += (double) Max(dead, 0);
	used = Max(total - free, (double) BLCKSZ);
	if (rows <= 0)
		return -1;
	/* how many rows of this footprint fill max_bytes: at least one */
	budget = (int64) Max(floor((double) policy->max_bytes * rows / used), 1.0);
	ereport(DEBUG1,
			(errmsg_internal("ttl_index: table \"%s\" takes %.0f bytes, %.0f of them free, for " INT64_FORMAT " live and " INT64_FORMAT " dead rows: " INT64_FORMAT " rows fit in " INT64_FORMAT " bytes",
							 get_rel_name(policy->relid), total, free, *live, dead,
							 budget, policy->max_bytes)));
	return budget;
}

/*
 * ttl_cap_compute
 *		At the pass's first batch, once its targets are listed: whether the
 *		tables are over the cap, and if so the key below which rows go
 *		(pass->cap_bound, in the key's type, see ttl_cap_cutoff).
 */
void
ttl_cap_compute(TtlPolicy *policy, TtlPass *pass)
{
	TtlOwnerSave save;
	int64		cap;
	int64		live;
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	int64		offset;
	bool		newest;
	bool		trusted;

	pass->cap_active = false;
	pass->cap_unmeasured = false;
	if ((policy->max_rows <= 0 && policy->max_bytes <= 0) || pass->targets == NIL)
		return;

	ttl_owner_enter(ttl_table_owner(policy->relid), &save);
	PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
	cap = policy->max_rows > 0 ? policy->max_rows : PG_INT64_MAX;
	trusted = ttl_cap_live_rows(pass, &live);
	if (policy->max_bytes > 0 &&
		ttl_citus_kind(policy->relid) != TTL_CITUS_DISTRIBUTED)
	{
		/* both caps: the stricter holds */
		int64		by_bytes = ttl_cap_bytes_rows(policy, pass, &live, &trusted);

		if (by_bytes >= 0)
			cap = Min(cap, by_bytes);
	}
	if (cap == PG_INT64_MAX)
	{
		/* a cap by bytes alone, the tables within it */
		newest = false;
		offset = -1;
	}
	else if (ttl_citus_kind(policy->relid) == TTL_CITUS_DISTRIBUTED &&
		!(trusted && live == 0) && cap <= TTL_CAP_MAX_WALK &&
		ttl_cap_global_key(policy, pass, cap))
	{
		/* the whole table's cut, read over every node */
		newest = false;
		offset = -1;
	}
	else if (trusted && live <= cap)
	{
		/* under the cap as far as the count knows: nothing to read */
		newest = false;
		offset = -1;
	}
	else if (cap <= TTL_CAP_MAX_WALK)
	{
		/*
		 * The last row that stays, counted from the newest: exact, so that
		 * no count ahead of the table (one that lost deletes reported
		 * before the inserts they followed) takes a row of the newest
		 * max_rows.
		 */
		newest = true;
		offset = cap - 1;
	}
	else if (trusted)
	{
		/*
		 * A cap too large to read at each pass: the first row that stays,
		 * counted from the oldest by the count; a walk of at most
		 * TTL_CAP_MAX_WALK entries, the next pass going on from there.
		 */
		newest = false;
		offset = Min(live - cap, (int64) TTL_CAP_MAX_WALK);
	}
	else
	{
		/* too many to read at each pass: until the table is measured */
		newest = true;
		offset = -1;
		pass->cap_unmeasured = true;
	}
	if (offset > 0 || (newest && offset >= 0))
	{
		values[0] = Int64GetDatum(offset);
		if (SPI_execute_with_args(ttl_cap_sql(policy, pass, newest), 1, argtypes, values, NULL,
								  true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read the key of the cap of table %u", policy->relid);
		if (SPI_processed == 1)
			ttl_cap_keep_key(pass);
	}
	SPI_finish();
	PopActiveSnapshot();
	ttl_owner_leave(&save);
}

/*
 * ttl_cap_cutoff
 *		A batch's cut-off, with the pass's cap: when the cap's bound is above
 *		the expiry's, the batch takes every row below it, and the statement
 *		compares with it (the limit, for wall-clock keys, is the instant of
 *		that bound in the policy's zone).  less is the index's "<" on the
 *		key.  Returns whether the cap moved the cut-off (the caller keeps a
 *		copy of the expiry's own, to tell which rows the cap took).
 *
 *		Near a change of the zone's offset the expiry's bound is an upper
 *		bound whose keys are rechecked by their instant (expiry.c): a key in
 *		the hour the clocks skip sorts below later wall-clock times that
 *		are earlier instants.  A cap's bound below it still takes every key
 *		below the cap's, expired or not; the keys from there up to the
 *		expiry's bound go if they expired.  Those keys are the cap's too
 *		(cap_bound), the rest of the cut-off the expiry's.
 */
bool
ttl_cap_cutoff(TtlPolicy *policy, TtlPass *pass, Oid keytype, struct pg_tz *zone,
			   RegProcedure less, Oid collation, TtlCutoff *cutoff)
{
	if (!pass->cap_active)
		return false;
	if (!DatumGetBool(OidFunctionCall2Coll(less, collation, cutoff->bound, pass->cap_bound)))
	{
		/* below the expiry's bound: every key there expired, unless rechecked */
		if (!cutoff->recheck || cutoff->none)
			return false;
		cutoff->capped = true;
		cutoff->cap_bound = pass->cap_bound;
		return true;
	}
	cutoff->bound = pass->cap_bound;
	cutoff->cap_bound = pass->cap_bound;
	cutoff->safe_bound = pass->cap_bound;
	cutoff->recheck = false;
	cutoff->none = false;
	cutoff->capped = true;
	/*
	 * The limit is the bound's instant (expiry.c's rule, saturated at either
	 * end of time); a key past the instants a timestamp holds reads as the
	 * end of time too, as does infinity, so the statement also compares the
	 * key itself with the bound (statement.c): the cap's cut is in the key's
	 * order, and 5874897-12-31 comes before infinity.
	 */
	if (keytype == TIMESTAMPTZOID ||
		(ttl_key_is_local(keytype, policy->unit_ns)))
		cutoff->limit = ttl_key_instant(keytype, policy->unit_ns, zone, pass->cap_bound);
	return true;
}
