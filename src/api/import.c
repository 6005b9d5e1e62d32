/*-------------------------------------------------------------------------
 *
 * import.c
 *	  What the importers read without running anyone's code: the rows of a
 *	  copy of pg_ttl_index's ttl_index_table (for ttl_import_pg_ttl_index()),
 *	  and the time zone a former job or worker read its rows in (for the
 *	  importer and ttl_from_cron()), or the server's (for the update from
 *	  1.3, which keeps what the worker read them in).
 *
 * Reading a table that another role owns can run that role's code as the
 * reader: a cast to json or an output function of a type of theirs, a
 * view's functions, row-level security policies, the planner folding the
 * IMMUTABLE functions of an index predicate or of extended statistics.  A
 * superuser importing a copy a role made would run them as superuser.  So
 * the copy is read here with a plain heap scan of the table alone: no
 * planner, no executor, no casts; only columns of built-in types are read,
 * converted by built-in code; a table that row-level security filters for
 * the caller, or a view, a foreign or a partitioned table, is refused.  The
 * caller needs SELECT on the columns read, as for any query.
 *
 * Locking: the copy is read under AccessShareLock, released at the end of
 * the transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "compat.h"
#include "ttl_index.h"
#include "api/api.h"
#include "policy/policy.h"
#include "env/env.h"

PG_FUNCTION_INFO_V1(ttl_index_read_pg_ttl_index);
PG_FUNCTION_INFO_V1(ttl_index_login_time_zone);
PG_FUNCTION_INFO_V1(ttl_index_server_time_zone);

/* the columns of pg_ttl_index's ttl_index_table we read, in output order */
typedef enum TtlImportCol
{
	TTL_IMPORT_SCHEMA,
	TTL_IMPORT_TABLE,
	TTL_IMPORT_COLUMN,
	TTL_IMPORT_EXPIRE,
	TTL_IMPORT_BATCH,
	TTL_IMPORT_SOFT,
	TTL_IMPORT_ACTIVE,
	TTL_IMPORT_INDEX,
	TTL_IMPORT_INDEX_MADE,
	TTL_IMPORT_NCOLS
} TtlImportCol;

typedef enum TtlImportKind
{
	TTL_IMPORT_TEXT,
	TTL_IMPORT_INT,
	TTL_IMPORT_BOOL
} TtlImportKind;

static const struct
{
	const char *name;
	TtlImportKind kind;
	bool		required;
}			ttl_import_cols[TTL_IMPORT_NCOLS] = {
	{"schema_name", TTL_IMPORT_TEXT, false},
	{"table_name", TTL_IMPORT_TEXT, true},
	{"column_name", TTL_IMPORT_TEXT, true},
	{"expire_after_seconds", TTL_IMPORT_INT, true},
	{"batch_size", TTL_IMPORT_INT, false},
	{"soft_delete_column", TTL_IMPORT_TEXT, false},
	{"active", TTL_IMPORT_BOOL, false},
	{"index_name", TTL_IMPORT_TEXT, false},
	{"index_created_by_extension", TTL_IMPORT_BOOL, false}
};

/*
 * ttl_import_type_ok
 *		Whether a column of this type (a domain's base type) can be read as
 *		the kind: built-in types only, read by built-in code.
 */
static bool
ttl_import_type_ok(Oid typid, TtlImportKind kind)
{
	switch (kind)
	{
		case TTL_IMPORT_TEXT:
			return typid == TEXTOID || typid == VARCHAROID || typid == NAMEOID ||
				typid == BPCHAROID;
		case TTL_IMPORT_INT:
			return typid == INT2OID || typid == INT4OID || typid == INT8OID ||
				typid == NUMERICOID;
		case TTL_IMPORT_BOOL:
			return typid == BOOLOID;
	}
	return false;
}

/*
 * ttl_import_value
 *		A column's value as the output column's type (text, bigint or
 *		boolean).  Numbers that do not fit are an error of numeric's.
 */
static Datum
ttl_import_value(Datum d, Oid typid, TtlImportKind kind)
{
	switch (kind)
	{
		case TTL_IMPORT_TEXT:
			if (typid == NAMEOID)
				return CStringGetTextDatum(NameStr(*DatumGetName(d)));
			if (typid == BPCHAROID)
				return DirectFunctionCall1(rtrim1, d);
			return PointerGetDatum(PG_DETOAST_DATUM_COPY(d));
		case TTL_IMPORT_INT:
			if (typid == INT2OID)
				return Int64GetDatum(DatumGetInt16(d));
			if (typid == INT4OID)
				return Int64GetDatum(DatumGetInt32(d));
			if (typid == NUMERICOID)
				return DirectFunctionCall1(numeric_int8, d);
			return d;
		case TTL_IMPORT_BOOL:
			return d;
	}
	return (Datum) 0;
}

/*
 * ttl_import_open
 *		Open the copy and find the columns to read (attnums, 0 when absent),
 *		with every check of the top of the file.
 */
static Relation
ttl_import_open(Oid source, AttrNumber *attnums, Oid *types)
{
	Relation	rel;
	TupleDesc	desc;
	int			missing = 0;
	char	   *name;

	rel = try_relation_open(source, AccessShareLock);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", source)));
	/* as regclass shows it: qualified when not on the search_path */
	name = DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(source)));
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s is not a table", name),
				 errdetail("Reading a view, a foreign table or a partitioned table could run its owner's code as you."),
				 errhint("Copy pg_ttl_index's ttl_index_table with CREATE TABLE ... AS TABLE ttl_index_table.")));
	if (check_enable_rls(source, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s has row-level security that applies to you", name),
				 errdetail("Reading it would run its policies as you."),
				 errhint("Copy pg_ttl_index's ttl_index_table with CREATE TABLE ... AS TABLE ttl_index_table.")));

	desc = RelationGetDescr(rel);
	for (int c = 0; c < TTL_IMPORT_NCOLS; c++)
	{
		attnums[c] = 0;
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (!att->attisdropped &&
				strcmp(NameStr(att->attname), ttl_import_cols[c].name) == 0)
			{
				attnums[c] = att->attnum;
				types[c] = getBaseType(att->atttypid);
			}
		}
		if (attnums[c] == 0)
		{
			missing += ttl_import_cols[c].required;
			continue;
		}
		if (!ttl_import_type_ok(types[c], ttl_import_cols[c].kind))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of %s is of type %s",
							ttl_import_cols[c].name, name, format_type_be(types[c])),
					 errdetail("Columns are read as built-in text, integer or boolean types only.")));
		/* SELECT on the table, else on the column (which alone is not all) */
		if (pg_class_aclcheck(source, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
			pg_attribute_aclcheck(source, attnums[c], GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, RelationGetRelationName(rel));
	}
	if (missing > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is not a copy of pg_ttl_index's ttl_index_table", name),
				 errdetail("It needs the columns table_name, column_name and expire_after_seconds.")));
	return rel;
}

/*
 * ttl_index_read_pg_ttl_index(source regclass)
 *		The rows of a copy of pg_ttl_index's ttl_index_table, read as the
 *		top of the file says: schema_name, table_name, column_name,
 *		expire_after_seconds, batch_size, soft_delete_column, active,
 *		index_name, index_created_by_extension; NULL for a column the copy
 *		lacks.  Rows come in the table's order; the importer sorts them.
 */
Datum
ttl_index_read_pg_ttl_index(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	AttrNumber	attnums[TTL_IMPORT_NCOLS];
	Oid			types[TTL_IMPORT_NCOLS];
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;
	Snapshot	snapshot;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("source must not be null")));
	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != TTL_IMPORT_NCOLS)
		elog(ERROR, "ttl_index_read_pg_ttl_index: unexpected number of result columns %d",
			 rsinfo->setDesc->natts);

	rel = ttl_import_open(PG_GETARG_OID(0), attnums, types);
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	slot = table_slot_create(rel, NULL);
	scan = ttl_table_beginscan_read_only(rel, snapshot);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		Datum		values[TTL_IMPORT_NCOLS];
		bool		nulls[TTL_IMPORT_NCOLS];

		CHECK_FOR_INTERRUPTS();
		for (int c = 0; c < TTL_IMPORT_NCOLS; c++)
		{
			Datum		d;

			nulls[c] = true;
			values[c] = (Datum) 0;
			if (attnums[c] == 0)
				continue;
			d = slot_getattr(slot, attnums[c], &nulls[c]);
			if (!nulls[c])
				values[c] = ttl_import_value(d, types[c], ttl_import_cols[c].kind);
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	return (Datum) 0;
}

/*
 * ttl_index_login_time_zone(database name, role name) returns text
 *		The TimeZone a session of role opened in database starts with: its
 *		ALTER ROLE / ALTER DATABASE settings, else the server's (owner.c).
 *		NULL database: this one; NULL role: the bootstrap superuser (as whom
 *		a background worker such as pg_ttl_index's connects).  A database or
 *		role that does not exist gives NULL.  It tells only a time zone,
 *		which is no secret; every other setting stays unread.
 */
Datum
ttl_index_login_time_zone(PG_FUNCTION_ARGS)
{
	Oid			dboid = MyDatabaseId;
	Oid			roleid = BOOTSTRAP_SUPERUSERID;

	if (!PG_ARGISNULL(0))
		dboid = get_database_oid(NameStr(*PG_GETARG_NAME(0)), true);
	if (!PG_ARGISNULL(1))
		roleid = get_role_oid(NameStr(*PG_GETARG_NAME(1)), true);
	if (!OidIsValid(dboid) || !OidIsValid(roleid))
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(ttl_login_setting(dboid, roleid, "TimeZone")));
}

/*
 * ttl_index_server_time_zone() returns text
 *		The server's TimeZone, as the configuration says (expiry.c): the
 *		zone a wall-clock policy without one of its own reads its rows in,
 *		and the one the update from 1.3 gives the policies that exist.
 */
Datum
ttl_index_server_time_zone(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(ttl_server_zone_name()));
}
