/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Reading the policy catalog (ttl_index_policy), and names the other
 *	  files need for messages and statements.
 *
 * The catalog is an ordinary table in the extension's schema, read through
 * SPI with fully qualified names, so a caller's search_path cannot redirect
 * it.  All functions here must be called inside a transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "commands/comment.h"
#include "nodes/bitmapset.h"
#include "optimizer/optimizer.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "catalog/pg_publication.h"
#include "utils/array.h"
#include "executor/spi.h"
#include "storage/proc.h"

#include "compat.h"
#include "ttl_index.h"
#include "policy/policy.h"
#include "citus/citus.h"
#include "env/env.h"

/*
 * ttl_qualified_relname
 *		Quoted schema.table name of a relation, or NULL when it is gone.
 *		Needs a transaction (catalog lookups).
 */
char *
ttl_qualified_relname(Oid relid)
{
	char	   *relname = get_rel_name(relid);

	if (relname == NULL)
		return NULL;
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  relname);
}

/*
 * ttl_catalog_relname
 *		Fully qualified, quoted name of the policy catalog.
 */
char *
ttl_catalog_relname(void)
{
	Oid			nspoid = ttl_catalog_namespace(false);

	return quote_qualified_identifier(get_namespace_name(nspoid),
									  TTL_CATALOG_NAME);
}

/*
 * ttl_catalog_has_column
 *		Whether the policy catalog has the column (a column a later version
 *		added is missing between installing this library and ALTER
 *		EXTENSION UPDATE).
 */
static bool
ttl_catalog_has_column(const char *column)
{
	Oid			catrelid = get_relname_relid(TTL_CATALOG_NAME, ttl_catalog_namespace(false));

	return OidIsValid(catrelid) && get_attnum(catrelid, column) != InvalidAttrNumber;
}

/*
 * ttl_catalog_is_current
 *		Whether the policy catalog has the 1.2 columns.  It has not between
 *		installing this library and ALTER EXTENSION UPDATE: readers then use
 *		the older columns, writers refuse the newer options.
 */
bool
ttl_catalog_is_current(void)
{
	return ttl_catalog_has_column("action");
}

/*
 * ttl_catalog_has_origin
 *		Whether the policy catalog has the 1.3 column replication_origin
 *		(not between installing this library and ALTER EXTENSION UPDATE).
 */
bool
ttl_catalog_has_origin(void)
{
	return ttl_catalog_has_column("replication_origin");
}

/*
 * ttl_catalog_has_zone
 *		Whether the policy catalog has the 1.4 column time_zone (not between
 *		installing this library and ALTER EXTENSION UPDATE: policies then
 *		read wall-clock keys in the server's zone, as 1.3 did).
 */
bool
ttl_catalog_has_zone(void)
{
	return ttl_catalog_has_column("time_zone");
}

/*
 * ttl_catalog_has_rules
 *		Whether the policy catalog has the 1.4 columns purge_window,
 *		max_rows and set_columns.
 */
bool
ttl_catalog_has_rules(void)
{
	return ttl_catalog_has_column("max_rows");
}

/*
 * ttl_catalog_has_bytes
 *		Whether the policy catalog has the 1.5 column max_bytes (cap.c).
 */
bool
ttl_catalog_has_bytes(void)
{
	return ttl_catalog_has_column("max_bytes");
}

/*
 * ttl_catalog_has_hide
 *		Whether the policy catalog has the 1.5 column hide_expired.
 */
bool
ttl_catalog_has_hide(void)
{
	return ttl_catalog_has_column("hide_expired");
}

/*
 * ttl_catalog_paused_since
 *		When the policy was paused, from the 1.5 column paused_since: false
 *		when the catalog has no such column (before ALTER EXTENSION UPDATE)
 *		or does not say (a copy of a Citus policy on a node, a policy that
 *		runs).  Connects to SPI for the time of the read.
 */
bool
ttl_catalog_paused_since(int32 policy_id, TimestampTz *since)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		values[1];
	bool		found = false;

	if (!ttl_catalog_has_column("paused_since"))
		return false;
	SPI_connect();
	values[0] = Int32GetDatum(policy_id);
	if (SPI_execute_with_args(psprintf("SELECT paused_since FROM %s WHERE id = $1",
									   ttl_catalog_relname()),
							  1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
		{
			*since = DatumGetTimestampTz(d);
			found = true;
		}
	}
	SPI_finish();
	return found;
}

/*
 * ttl_catalog_pause_sql
 *		The SET list that pauses ($n true: resumes) a policy in an UPDATE of
 *		the catalog: enabled, and paused_since where the catalog has it (a
 *		pause keeps the time of the first one).
 */
char *
ttl_catalog_pause_sql(const char *enabled)
{
	if (!ttl_catalog_has_column("paused_since"))
		return psprintf("enabled = %s", enabled);
	return psprintf("enabled = %s, paused_since = CASE WHEN %s THEN NULL"
					" ELSE coalesce(paused_since, pg_catalog.now()) END",
					enabled, enabled);
}

/*
 * ttl_interval_usecs
 *		The part of an expire_after interval that has a fixed length, as
 *		microseconds: its time, and its days counted as 24 hours.  Its
 *		months (and years) are calendar months, kept apart
 *		(TtlPolicy.expire_months) and counted in the policy's zone
 *		(expiry.c).
 */
int64
ttl_interval_usecs(Interval *span)
{
	return span->time + (int64) span->day * USECS_PER_DAY;
}

/*
 * ttl_policy_from_tuple
 *		A policy from a row of the query ttl_load_policies runs (or of the
 *		same columns, read from ttl_index_citus_policy by citus.c).
 */
static TtlPolicy *
ttl_policy_from_tuple(HeapTuple tup, TupleDesc desc, MemoryContext cxt)
{
	MemoryContext old;
	TtlPolicy  *p;
	bool		isnull;
	Datum		d;
	char	   *action;

	old = MemoryContextSwitchTo(cxt);
	p = palloc0(sizeof(TtlPolicy));
	p->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	p->relid = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	p->attnum = DatumGetInt16(SPI_getbinval(tup, desc, 3, &isnull));
	p->column_name = TextDatumGetCString(SPI_getbinval(tup, desc, 4, &isnull));
	d = SPI_getbinval(tup, desc, 5, &isnull);
	/* NULL: a cap alone; nothing expires by age (cap.c) */
	p->no_expiry = isnull;
	p->expire_after = isnull ? 0 : ttl_interval_usecs(DatumGetIntervalP(d));
	p->expire_months = isnull ? 0 : DatumGetIntervalP(d)->month;
	p->batch_size = DatumGetInt32(SPI_getbinval(tup, desc, 6, &isnull));
	p->enabled = DatumGetBool(SPI_getbinval(tup, desc, 7, &isnull));
	d = SPI_getbinval(tup, desc, 8, &isnull);
	p->ttl_column = isnull ? NULL : TextDatumGetCString(d);
	d = SPI_getbinval(tup, desc, 9, &isnull);
	p->filter = isnull ? NULL : TextDatumGetCString(d);
	d = SPI_getbinval(tup, desc, 10, &isnull);
	p->unit_ns = isnull ? 0 : ttl_unit_parse(TextDatumGetCString(d));
	action = TextDatumGetCString(SPI_getbinval(tup, desc, 11, &isnull));
	p->action = strcmp(action, "archive") == 0 ? TTL_ACTION_ARCHIVE :
		strcmp(action, "soft_delete") == 0 ? TTL_ACTION_SOFT_DELETE :
		TTL_ACTION_DELETE;
	d = SPI_getbinval(tup, desc, 12, &isnull);
	p->archive_relid = isnull ? InvalidOid : DatumGetObjectId(d);
	d = SPI_getbinval(tup, desc, 13, &isnull);
	p->soft_column = isnull ? NULL : TextDatumGetCString(d);
	p->rate_limit = DatumGetInt32(SPI_getbinval(tup, desc, 14, &isnull));
	d = SPI_getbinval(tup, desc, 15, &isnull);
	p->replication_origin = isnull ? -1 : DatumGetBool(d) ? 1 : 0;
	d = SPI_getbinval(tup, desc, 16, &isnull);
	p->time_zone = isnull ? NULL : TextDatumGetCString(d);
	d = SPI_getbinval(tup, desc, 17, &isnull);
	p->filter_funcs_known = !isnull;
	if (!isnull)
	{
		Datum	   *elems;
		bool	   *enulls;

		/* recorded as signatures, resolved now (filter.c) */
		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false,
						  TYPALIGN_INT, &elems, &enulls, &p->nfilter_funcs);
		p->filter_funcs = palloc(sizeof(Oid) * Max(p->nfilter_funcs, 1));
		for (int i = 0; i < p->nfilter_funcs; i++)
			p->filter_funcs[i] = enulls[i] ? InvalidOid :
				ttl_filter_function_lookup(TextDatumGetCString(elems[i]));
	}
	d = SPI_getbinval(tup, desc, 18, &isnull);
	p->purge_window = isnull ? NULL : TextDatumGetCString(d);
	ttl_window_read(p->purge_window, &p->windows);
	d = SPI_getbinval(tup, desc, 19, &isnull);
	p->max_rows = isnull ? 0 : DatumGetInt64(d);
	d = SPI_getbinval(tup, desc, 20, &isnull);
	p->set_columns = isnull ? NULL : TextDatumGetCString(d);
	d = SPI_getbinval(tup, desc, 21, &isnull);
	p->max_bytes = isnull ? 0 : DatumGetInt64(d);
	if (strcmp(action, "anonymize") == 0)
		p->action = TTL_ACTION_ANONYMIZE;
	MemoryContextSwitchTo(old);
	return p;
}

/*
 * ttl_load_policies
 *		Read every policy of the current database, in id order, into cxt.
 *		Connects to SPI for the time of the read.
 */
List *
ttl_load_policies(MemoryContext cxt)
{
	char	   *sql;
	char	   *catalog = ttl_catalog_relname();
	List	   *result = NIL;
	int			ret;

	SPI_connect();

	/*
	 * Between installing a newer library and ALTER EXTENSION UPDATE, the
	 * catalog has the columns of the older version: read those, with the
	 * defaults of the newer ones.
	 */
	if (ttl_catalog_is_current())
		sql = psprintf("SELECT id, relid::pg_catalog.oid, attnum, column_name::pg_catalog.text,"
					   " expire_after, coalesce(batch_size, 0), enabled,"
					   " ttl_column::pg_catalog.text, filter, unit, action,"
					   " archive_table::pg_catalog.oid, soft_delete_column::pg_catalog.text,"
					   " coalesce(rate_limit, 0), %s, %s, %s, %s"
					   " FROM %s ORDER BY id",
					   ttl_catalog_has_origin() ? "replication_origin" : "NULL::pg_catalog.bool",
					   ttl_catalog_has_zone() ?
					   "time_zone, filter_functions" :
					   "NULL::pg_catalog.text, NULL::pg_catalog.text[]",
					   ttl_catalog_has_rules() ?
					   "purge_window, max_rows, set_columns" :
					   "NULL::pg_catalog.text, NULL::pg_catalog.int8, NULL::pg_catalog.text",
					   ttl_catalog_has_bytes() ? "max_bytes" : "NULL::pg_catalog.int8",
					   catalog);
	else
		sql = psprintf("SELECT id, relid::pg_catalog.oid, attnum, column_name::pg_catalog.text,"
					   " expire_after, coalesce(batch_size, 0), enabled,"
					   " NULL::pg_catalog.text, NULL::pg_catalog.text, NULL::pg_catalog.text,"
					   " 'delete'::pg_catalog.text, NULL::pg_catalog.oid, NULL::pg_catalog.text, 0,"
					   " NULL::pg_catalog.bool, NULL::pg_catalog.text, NULL::pg_catalog.text[],"
					   " NULL::pg_catalog.text, NULL::pg_catalog.int8, NULL::pg_catalog.text,"
					   " NULL::pg_catalog.int8"
					   " FROM %s ORDER BY id", catalog);
	ret = SPI_execute(sql, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read the ttl_index policy catalog: %s",
			 SPI_result_code_string(ret));

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		TtlPolicy  *p = ttl_policy_from_tuple(SPI_tuptable->vals[i],
											  SPI_tuptable->tupdesc, cxt);
		MemoryContext old = MemoryContextSwitchTo(cxt);

		result = lappend(result, p);
		MemoryContextSwitchTo(old);
	}

	/*
	 * On a Citus node other than the coordinator, the policies on
	 * distributed tables come from this node's copy of
	 * ttl_index_citus_policy.  Their ids are the coordinator's, and a
	 * node's own policies number theirs from 1 too: the two must never
	 * meet (a local policy of any role would otherwise hide a Citus policy
	 * of the same id, and its shards here would go unpurged).  So a copy
	 * takes the negative of its coordinator id (TTL_CITUS_COPY_ID): the
	 * worker's schedule, the counters, the held rows and the helpers all
	 * key on it, and ttl_index_policy_stats() on this node shows it so.
	 */
	sql = ttl_citus_policies_sql(ttl_catalog_namespace(true));
	if (sql != NULL)
	{
		ret = SPI_execute(sql, true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "could not read the ttl_index Citus policies: %s",
				 SPI_result_code_string(ret));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			TtlPolicy  *p = ttl_policy_from_tuple(SPI_tuptable->vals[i],
												  SPI_tuptable->tupdesc, cxt);
			MemoryContext old;

			if (p->id <= 0)
				continue;		/* not a coordinator's id: not ours */
			old = MemoryContextSwitchTo(cxt);
			p->id = TTL_CITUS_COPY_ID(p->id);
			p->citus_copy = true;
			result = lappend(result, p);
			MemoryContextSwitchTo(old);
		}
	}
	SPI_finish();
	return result;
}

/*
 * ttl_created_index
 *		The index of the table on the column (as its first key, or in the
 *		expression of its first key) that bears the comment
 *		ttl_create_index() puts on the indexes it makes, or InvalidOid.  The
 *		comment, not an OID in the catalog, is the record:
 *		it survives pg_dump and restore (where the catalog's data is loaded
 *		before the indexes exist) and ALTER COLUMN ... TYPE (which rebuilds
 *		indexes under new OIDs).
 */
Oid
ttl_created_index(Oid relid, AttrNumber attnum)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Oid			result = InvalidOid;

	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);
		HeapTuple	tup;
		bool		first_key;
		char	   *comment;

		tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
		if (!HeapTupleIsValid(tup))
			continue;
		first_key = ((Form_pg_index) GETSTRUCT(tup))->indnatts > 0 &&
			((Form_pg_index) GETSTRUCT(tup))->indkey.values[0] == attnum;
		if (((Form_pg_index) GETSTRUCT(tup))->indnatts > 0 &&
			((Form_pg_index) GETSTRUCT(tup))->indkey.values[0] == 0)
		{
			bool		isnull;
			Datum		d = SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indexprs, &isnull);
			Bitmapset  *attrs = NULL;

			if (!isnull)
				pull_varattnos(linitial((List *) stringToNode(TextDatumGetCString(d))),
							   1, &attrs);
			first_key = bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber, attrs);
		}
		ReleaseSysCache(tup);
		if (!first_key)
			continue;
		comment = GetComment(indexoid, RelationRelationId, 0);
		if (comment != NULL && strcmp(comment, TTL_INDEX_COMMENT) == 0)
		{
			result = indexoid;
			break;
		}
	}
	list_free(indexes);
	relation_close(rel, AccessShareLock);
	return result;
}

static bool
ttl_str_equal(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
		(a != NULL && b != NULL && strcmp(a, b) == 0);
}

/*
 * ttl_policy_equal
 *		Whether two readings of a policy are the same in everything a pass
 *		depends on (a reload keeps the pass in hand only then).
 */
bool
ttl_policy_equal(TtlPolicy *a, TtlPolicy *b)
{
	return a->id == b->id && a->relid == b->relid && a->attnum == b->attnum &&
		a->expire_after == b->expire_after &&
		a->expire_months == b->expire_months && a->batch_size == b->batch_size &&
		a->enabled == b->enabled && a->unit_ns == b->unit_ns &&
		a->action == b->action && a->archive_relid == b->archive_relid &&
		a->rate_limit == b->rate_limit &&
		a->replication_origin == b->replication_origin &&
		ttl_str_equal(a->time_zone, b->time_zone) &&
		a->filter_funcs_known == b->filter_funcs_known &&
		a->nfilter_funcs == b->nfilter_funcs &&
		(a->nfilter_funcs == 0 ||
		 memcmp(a->filter_funcs, b->filter_funcs, sizeof(Oid) * a->nfilter_funcs) == 0) &&
		ttl_str_equal(a->column_name, b->column_name) &&
		ttl_str_equal(a->ttl_column, b->ttl_column) &&
		ttl_str_equal(a->filter, b->filter) &&
		ttl_str_equal(a->soft_column, b->soft_column) &&
		a->no_expiry == b->no_expiry && a->max_rows == b->max_rows &&
		ttl_str_equal(a->purge_window, b->purge_window) &&
		ttl_str_equal(a->set_columns, b->set_columns) &&
		a->max_bytes == b->max_bytes;
}

/*
 * ttl_publications_exist
 *		Whether the current database has any publication, looked up once per
 *		transaction (a CREATE PUBLICATION commits before a later transaction
 *		sees it here).
 */
bool
ttl_publications_exist(void)
{
	static LocalTransactionId checked_in = InvalidLocalTransactionId;
	static bool exist = false;
	Relation	pubrel;
	SysScanDesc scan;

	if (checked_in == TTL_MY_LXID)
		return exist;

	pubrel = table_open(PublicationRelationId, AccessShareLock);
	scan = systable_beginscan(pubrel, InvalidOid, false, NULL, 0, NULL);
	exist = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(pubrel, AccessShareLock);
	checked_in = TTL_MY_LXID;
	return exist;
}
