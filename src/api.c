/*-------------------------------------------------------------------------
 *
 * api.c
 *	  SQL-callable functions that manage policies: ttl_create_index(),
 *	  ttl_drop_index(), ttl_runner(), and the two internal functions the
 *	  install script and the catalog trigger call.
 *
 * Security model: the functions run as the caller.  Every check (the table
 * exists, is an ordinary permanent table, the caller owns it, the column
 * exists and has a usable type, the TTL makes sense) is done before anything
 * changes.  The index is created as the caller, who owns the table.  Only
 * the write to the catalog, which nobody but the extension owner may write
 * directly, is done as the extension owner, with search_path pinned to
 * pg_catalog so that nothing the caller defines can run with those rights.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "common/int.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "ttl_index.h"

/* the longest TTL we accept: 100 years of 365.25 days */
#define TTL_MAX_EXPIRE_SECS		INT64CONST(3155760000)
#define TTL_MAX_BATCH_SIZE		1000000

PG_FUNCTION_INFO_V1(ttl_create_index);
PG_FUNCTION_INFO_V1(ttl_create_index_seconds);
PG_FUNCTION_INFO_V1(ttl_drop_index);
PG_FUNCTION_INFO_V1(ttl_runner);
PG_FUNCTION_INFO_V1(ttl_index_policy_changed);
PG_FUNCTION_INFO_V1(ttl_index_installed);

/*
 * ttl_api_require
 *		Raise the standard error for a NULL argument.
 */
static void
ttl_api_require(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
}

/*
 * ttl_api_open_table
 *		Open the table a policy call names, after checking it is one a TTL
 *		policy can be set on by the caller.  Returns the relation, locked
 *		with `lockmode`.
 */
static Relation
ttl_api_open_table(Oid relid, LOCKMODE lockmode)
{
	Relation	rel;
	char		relkind;

	rel = try_relation_open(relid, lockmode);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));

	relkind = rel->rd_rel->relkind;
	if (relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an ordinary table", RelationGetRelationName(rel)),
				 errdetail("TTL policies can be set only on ordinary tables, not on %s.",
						   relkind == RELKIND_VIEW ? "views" :
						   relkind == RELKIND_MATVIEW ? "materialized views" :
						   relkind == RELKIND_FOREIGN_TABLE ? "foreign tables" :
						   relkind == RELKIND_PARTITIONED_TABLE ? "partitioned tables (set one on each partition)" :
						   relkind == RELKIND_SEQUENCE ? "sequences" :
						   relkind == RELKIND_INDEX || relkind == RELKIND_PARTITIONED_INDEX ? "indexes" :
						   "this kind of relation")));

	if (IsCatalogRelation(rel) || IsSystemRelation(rel))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied: \"%s\" is a system catalog",
						RelationGetRelationName(rel))));

	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot set a TTL policy on temporary table \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail("The background worker cannot see temporary tables of other sessions.")));

	if (rel->rd_rel->relam != HEAP_TABLE_AM_OID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" does not use the heap access method",
						RelationGetRelationName(rel))));

	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, RelationGetRelationName(rel));

	return rel;
}

/*
 * ttl_api_column
 *		Resolve a column name of rel; raise the standard errors.
 */
static AttrNumber
ttl_api_column(Relation rel, const char *colname)
{
	AttrNumber	attnum;

	if (colname[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("column name must not be empty")));

	attnum = get_attnum(RelationGetRelid(rel), colname);
	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						colname, RelationGetRelationName(rel))));
	if (attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("cannot use system column \"%s\" in a TTL policy", colname)));
	return attnum;
}

/*
 * ttl_api_check_expire
 *		Validate a TTL given in microseconds.
 */
static void
ttl_api_check_expire(int64 usecs, bool overflow)
{
	if (usecs < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("expire_after must not be negative"),
				 errhint("Use 0 when the column holds the time of expiry itself.")));
	if (overflow || usecs > TTL_MAX_EXPIRE_SECS * USECS_PER_SEC)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("expire_after must be at most 100 years")));
}

/*
 * ttl_api_as_extension_owner
 *		Run a catalog statement as the extension owner with a pinned
 *		search_path.  Returns SPI's result code; the caller reads SPI_*.
 */
static int
ttl_api_as_extension_owner(const char *sql, int nargs, Oid *argtypes,
						   Datum *values, const char *nulls)
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	Oid			extowner = InvalidOid;
	int			ret;

	if (!ttl_extension_info(NULL, &extowner))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"%s\" is not installed in this database",
						TTL_EXTENSION_NAME)));

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(extowner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);

	ret = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);

	AtEOXact_GUC(true, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return ret;
}

/*
 * ttl_api_create_btree
 *		Create a btree index on the column, as the caller, and mark it as
 *		ttl_index's.  The name is <table>_<column>_ttl_idx, made unique if
 *		taken.
 */
static void
ttl_api_create_btree(Oid nsp, const char *relname, const char *colname)
{
	char	   *idxname;
	char	   *sql;
	int			ret;

	idxname = ChooseRelationName(relname, colname, "ttl_idx", nsp, false);
	sql = psprintf("CREATE INDEX %s ON %s (%s)",
				   quote_identifier(idxname),
				   quote_qualified_identifier(get_namespace_name(nsp), relname),
				   quote_identifier(colname));
	ret = SPI_execute(sql, false, 0);
	if (ret != SPI_OK_UTILITY)
		elog(ERROR, "could not create index: %s", SPI_result_code_string(ret));

	/*
	 * The comment marks the index as ours; ttl_drop_index() finds it by it
	 * (see ttl_api_created_index).  pg_dump and the rebuilds of ALTER TABLE
	 * ... ALTER COLUMN TYPE keep comments, not OIDs.
	 */
	sql = psprintf("COMMENT ON INDEX %s IS %s",
				   quote_qualified_identifier(get_namespace_name(nsp), idxname),
				   quote_literal_cstr(TTL_INDEX_COMMENT));
	ret = SPI_execute(sql, false, 0);
	if (ret != SPI_OK_UTILITY)
		elog(ERROR, "could not comment on index: %s", SPI_result_code_string(ret));
	CommandCounterIncrement();
}

/*
 * ttl_api_create
 *		Shared body of both ttl_create_index() variants, once expire_after is
 *		known as an interval.
 */
static int32
ttl_api_create(FunctionCallInfo fcinfo, Interval *expire_after)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *colname = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Relation	rel;
	AttrNumber	attnum;
	Form_pg_attribute att;
	Oid			indexoid;
	Oid			nsp;
	char	   *relname;
	char	   *sql;
	Oid			argtypes[4] = {OIDOID, NAMEOID, INTERVALOID, INT4OID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	NameData	colnamedata;
	int			ret;
	bool		isnull;
	int32		id;

	if (!PG_ARGISNULL(3))
	{
		int32		batch_size = PG_GETARG_INT32(3);

		if (batch_size < 1 || batch_size > TTL_MAX_BATCH_SIZE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("batch_size must be between 1 and %d", TTL_MAX_BATCH_SIZE),
					 errhint("Pass NULL to use ttl_index.batch_size.")));
	}

	/* ShareLock: we may build an index, and the table must not change under us */
	rel = ttl_api_open_table(relid, ShareLock);
	attnum = ttl_api_column(rel, colname);
	att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	if (!ttl_type_supported(att->atttypid))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of relation \"%s\" is of type %s",
						colname, RelationGetRelationName(rel),
						format_type_be(att->atttypid)),
				 errdetail("A TTL column must be of type timestamp with time zone, timestamp without time zone or date.")));

	namestrcpy(&colnamedata, NameStr(att->attname));
	indexoid = ttl_find_index(rel, attnum);
	nsp = RelationGetNamespace(rel);
	relname = pstrdup(RelationGetRelationName(rel));

	/* CREATE INDEX refuses a table we hold open; the lock stays */
	table_close(rel, NoLock);

	SPI_connect();
	if (!OidIsValid(indexoid))
		ttl_api_create_btree(nsp, relname, NameStr(colnamedata));

	values[0] = ObjectIdGetDatum(relid);
	values[1] = NameGetDatum(&colnamedata);
	values[2] = IntervalPGetDatum(expire_after);
	if (PG_ARGISNULL(3))
		nulls[3] = 'n';
	else
		values[3] = Int32GetDatum(PG_GETARG_INT32(3));

	sql = psprintf("INSERT INTO %s AS p (relid, column_name, attnum, expire_after, batch_size)"
				   " VALUES ($1, $2, 0, $3, $4)"
				   " ON CONFLICT (relid, attnum) DO UPDATE"
				   " SET expire_after = excluded.expire_after,"
				   "     batch_size = excluded.batch_size,"
				   "     column_name = excluded.column_name"
				   " RETURNING id",
				   ttl_catalog_relname());
	ret = ttl_api_as_extension_owner(sql, 4, argtypes, values, nulls);
	if (ret != SPI_OK_INSERT_RETURNING || SPI_processed != 1)
		elog(ERROR, "could not write the TTL policy: %s", SPI_result_code_string(ret));
	id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	SPI_finish();
	return id;
}

/*
 * ttl_create_index(table regclass, column text, expire_after interval,
 *					batch_size integer DEFAULT NULL) returns integer
 *		Create the policy, or change it in place; returns its id.
 */
Datum
ttl_create_index(PG_FUNCTION_ARGS)
{
	Interval   *span;

	ttl_api_require(fcinfo, 0, "table_name");
	ttl_api_require(fcinfo, 1, "column_name");
	ttl_api_require(fcinfo, 2, "expire_after");

	span = PG_GETARG_INTERVAL_P(2);
	if (span->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("expire_after must not contain months or years"),
				 errdetail("Months and years have no fixed length."),
				 errhint("Use days instead, for example interval '30 days'.")));
	{
		int64		usecs;
		bool		overflow;

		overflow = pg_mul_s64_overflow(span->day, USECS_PER_DAY, &usecs) ||
			pg_add_s64_overflow(usecs, span->time, &usecs);
		ttl_api_check_expire(usecs, overflow);
	}
	PG_RETURN_INT32(ttl_api_create(fcinfo, span));
}

/*
 * ttl_create_index(table regclass, column text, expire_after bigint,
 *					batch_size integer DEFAULT NULL) returns integer
 *		The same, with the TTL in seconds.
 */
Datum
ttl_create_index_seconds(PG_FUNCTION_ARGS)
{
	int64		secs;
	Interval   *span;

	ttl_api_require(fcinfo, 0, "table_name");
	ttl_api_require(fcinfo, 1, "column_name");
	ttl_api_require(fcinfo, 2, "expire_after");

	secs = PG_GETARG_INT64(2);
	if (secs < 0)
		ttl_api_check_expire(-1, false);
	ttl_api_check_expire(0, secs > TTL_MAX_EXPIRE_SECS);

	span = palloc0(sizeof(Interval));
	span->time = secs * USECS_PER_SEC;
	PG_RETURN_INT32(ttl_api_create(fcinfo, span));
}

/*
 * ttl_api_created_index
 *		The index of the table whose first key is the column and that bears
 *		the comment ttl_create_index() puts on the indexes it makes, or
 *		InvalidOid.  The comment, not an OID in the catalog, is the record:
 *		it survives pg_dump and restore (where the catalog's data is loaded
 *		before the indexes exist) and ALTER COLUMN ... TYPE (which rebuilds
 *		indexes under new OIDs).
 */
static Oid
ttl_api_created_index(Relation rel, AttrNumber attnum)
{
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
	return result;
}

/*
 * ttl_drop_index(table regclass, column text) returns boolean
 *		Drop a policy, and the index if ttl_create_index() created it.
 */
Datum
ttl_drop_index(PG_FUNCTION_ARGS)
{
	Oid			relid;
	char	   *colname;
	Relation	rel;
	AttrNumber	attnum;
	char	   *sql;
	Oid			argtypes[2] = {OIDOID, INT2OID};
	Datum		values[2];
	int			ret;
	Oid			created;

	ttl_api_require(fcinfo, 0, "table_name");
	ttl_api_require(fcinfo, 1, "column_name");
	relid = PG_GETARG_OID(0);
	colname = text_to_cstring(PG_GETARG_TEXT_PP(1));

	rel = ttl_api_open_table(relid, ShareUpdateExclusiveLock);
	attnum = ttl_api_column(rel, colname);

	SPI_connect();
	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int16GetDatum(attnum);
	sql = psprintf("DELETE FROM %s WHERE relid = $1 AND attnum = $2",
				   ttl_catalog_relname());
	ret = ttl_api_as_extension_owner(sql, 2, argtypes, values, NULL);
	if (ret != SPI_OK_DELETE)
		elog(ERROR, "could not delete the TTL policy: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table \"%s\" has no TTL policy on column \"%s\"",
						RelationGetRelationName(rel), colname)));

	/* the index ttl_create_index made, known by its comment */
	created = ttl_api_created_index(rel, attnum);
	if (OidIsValid(created))
	{
		ObjectAddress obj;

		ObjectAddressSet(obj, RelationRelationId, created);
		performDeletion(&obj, DROP_RESTRICT, 0);
	}

	SPI_finish();
	table_close(rel, NoLock);
	PG_RETURN_BOOL(true);
}

/*
 * ttl_runner() returns bigint
 *		One full pass over every enabled policy of this database whose table
 *		the caller owns (superusers: all), with the same engine as the
 *		worker, inside the caller's transaction.  Returns rows deleted.
 */
Datum
ttl_runner(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(ttl_run_all_in_transaction());
}

/*
 * ttl_index_policy_changed
 *		Statement trigger on the catalog: wake this database's worker, and
 *		the launcher, when the transaction commits.
 */
Datum
ttl_index_policy_changed(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "ttl_index_policy_changed: not called by trigger manager");
	ttl_wake_at_commit();
	return PointerGetDatum(NULL);
}

/*
 * ttl_index_installed
 *		Called by the install script: say when nothing will purge
 *		automatically, and let the launcher know about this database.
 */
Datum
ttl_index_installed(PG_FUNCTION_ARGS)
{
	if (!ttl_preloaded)
		ereport(WARNING,
				(errmsg("ttl_index is not in shared_preload_libraries: expired rows will not be deleted automatically"),
				 errhint("Add ttl_index to shared_preload_libraries and restart the server; until then, call ttl_runner() to purge.")));
	ttl_wake_at_commit();
	PG_RETURN_VOID();
}
