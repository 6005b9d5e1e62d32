/*-------------------------------------------------------------------------
 *
 * api.c
 *	  SQL-callable functions that manage policies: ttl_create_index(),
 *	  ttl_drop_index(), ttl_pause(), ttl_resume(), and the internal
 *	  functions the install script and the triggers call.
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
#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "access/sysattr.h"
#include "nodes/bitmapset.h"
#include "optimizer/optimizer.h"
#include "nodes/nodeFuncs.h"
#include "rewrite/rewriteHandler.h"
#include "commands/comment.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "common/int.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/formatting.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "catalog/pg_inherits.h"
#include "ttl_index.h"
#include "api/api.h"
#include "bgw/bgw.h"
#include "policy/policy.h"
#include "citus/citus.h"
#include "env/env.h"

/* the longest TTL we accept: 100 years of 365.25 days */
#define TTL_MAX_EXPIRE_SECS		INT64CONST(3155760000)
#define TTL_MAX_BATCH_SIZE		1000000

PG_FUNCTION_INFO_V1(ttl_create_index);
PG_FUNCTION_INFO_V1(ttl_create_index_seconds);
PG_FUNCTION_INFO_V1(ttl_create_index_text);
PG_FUNCTION_INFO_V1(ttl_alter_index);
PG_FUNCTION_INFO_V1(ttl_drop_index);
PG_FUNCTION_INFO_V1(ttl_index_policy_changed);
PG_FUNCTION_INFO_V1(ttl_index_installed);
PG_FUNCTION_INFO_V1(ttl_pause);
PG_FUNCTION_INFO_V1(ttl_resume);
PG_FUNCTION_INFO_V1(ttl_index_check_policy);
PG_FUNCTION_INFO_V1(ttl_index_archive_dropped);
PG_FUNCTION_INFO_V1(ttl_index_filter_functions);

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
	Oid			ext;

	/*
	 * Ownership first, before any lock: a role that may not manage the
	 * table must not queue for its lock behind the application's writers
	 * (and make their next statements queue behind it), as PostgreSQL
	 * checks before it locks for TRUNCATE and LOCK.  Checked again once
	 * locked: the owner may have changed meanwhile.
	 */
	if (!ttl_rel_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));

	rel = try_relation_open(relid, lockmode);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));

	relkind = rel->rd_rel->relkind;
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an ordinary table", RelationGetRelationName(rel)),
				 errdetail("TTL policies can be set only on ordinary and partitioned tables, not on %s.",
						   relkind == RELKIND_VIEW ? "views" :
						   relkind == RELKIND_MATVIEW ? "materialized views" :
						   relkind == RELKIND_FOREIGN_TABLE ? "foreign tables" :
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

	if (relkind == RELKIND_RELATION && rel->rd_rel->relam != HEAP_TABLE_AM_OID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" does not use the heap access method",
						RelationGetRelationName(rel))));

	if (!ttl_rel_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, RelationGetRelationName(rel));

	/* the extension's own tables: a policy there would purge the policies */
	ext = get_extension_oid(TTL_EXTENSION_NAME, true);
	if (OidIsValid(ext) && getExtensionOfObject(RelationRelationId, relid) == ext)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("\"%s\" belongs to the extension ttl_index",
						RelationGetRelationName(rel)),
				 errdetail("TTL policies cannot be set on the extension's own tables.")));

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
 * ttl_api_index_partial
 *		Whether an index has a predicate.
 */
static bool
ttl_api_index_partial(Oid indexoid)
{
	HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	bool		partial;

	if (!HeapTupleIsValid(tup))
		return false;
	partial = !heap_attisnull(tup, Anum_pg_index_indpred, NULL);
	ReleaseSysCache(tup);
	return partial;
}

/*
 * ttl_api_create_btree
 *		Create the btree index that serves a policy, as the caller, and mark
 *		it as ttl_index's: on the key (the column, or ttl_expires_at() of it
 *		and the per-row TTL), partial on the filter when the filter is
 *		immutable (a partial index only holds rows the policy may touch),
 *		else on "not yet soft-deleted" alone when there is a soft delete,
 *		or on "not yet anonymized" alone for an anonymize (set.c).
 *		The name is <table>_<column>_ttl_idx, made unique if taken.
 */
static void
ttl_api_create_btree(Oid nsp, const char *relname, const char *colname,
					 TtlTarget *t)
{
	char	   *idxname;
	char	   *sql;
	const char *where = NULL;
	int			ret;
	int			nestlevel;

	if (t->filter != NULL && !contain_mutable_functions((Node *) t->filter))
		where = t->filter_sql;
	else if (t->soft_attnum != 0)
		where = psprintf("%s IS NULL",
						 quote_identifier(get_attname(t->relid, t->soft_attnum, false)));
	else if (t->set_pending_sql != NULL)
		where = t->set_pending_sql;

	idxname = ChooseRelationName(relname, colname, "ttl_idx", nsp, false);
	sql = psprintf("CREATE INDEX %s ON %s (%s)%s%s",
				   quote_identifier(idxname),
				   quote_qualified_identifier(get_namespace_name(nsp), relname),
				   t->key_sql,
				   where ? " WHERE " : "", where ? where : "");

	/* the filter's text was deparsed in this environment */
	SPI_connect();
	nestlevel = ttl_parse_env_enter();
	ret = SPI_execute(sql, false, 0);
	ttl_parse_env_leave(nestlevel);
	if (ret != SPI_OK_UTILITY)
		elog(ERROR, "could not create index: %s", SPI_result_code_string(ret));

	/*
	 * The comment marks the index as ours; ttl_drop_index() finds it by it
	 * (see ttl_created_index).  pg_dump and the rebuilds of ALTER TABLE
	 * ... ALTER COLUMN TYPE keep comments, not OIDs.
	 */
	sql = psprintf("COMMENT ON INDEX %s IS %s",
				   quote_qualified_identifier(get_namespace_name(nsp), idxname),
				   quote_literal_cstr(TTL_INDEX_COMMENT));
	ret = SPI_execute(sql, false, 0);
	if (ret != SPI_OK_UTILITY)
		elog(ERROR, "could not comment on index: %s", SPI_result_code_string(ret));
	SPI_finish();
	CommandCounterIncrement();
}

/*
 * ttl_api_arg_null
 *		Whether argument argno is NULL or not passed at all (a call through
 *		the SQL definition of an older version, before ALTER EXTENSION
 *		UPDATE, passes fewer).
 */
static bool
ttl_api_arg_null(FunctionCallInfo fcinfo, int argno)
{
	return argno >= PG_NARGS() || PG_ARGISNULL(argno);
}

static char *
ttl_api_text_arg(FunctionCallInfo fcinfo, int argno)
{
	return ttl_api_arg_null(fcinfo, argno) ? NULL :
		text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/* argument numbers of ttl_create_index() */
#define TTL_ARG_BATCH_SIZE		3
#define TTL_ARG_SOFT_COLUMN		4
#define TTL_ARG_TTL_COLUMN		5
#define TTL_ARG_FILTER			6
#define TTL_ARG_UNIT			7
#define TTL_ARG_ACTION			8
#define TTL_ARG_ARCHIVE_TABLE	9
#define TTL_ARG_RATE_LIMIT		10
#define TTL_ARG_REPLICATION_ORIGIN	11
#define TTL_ARG_TIME_ZONE		12
#define TTL_ARG_PURGE_WINDOW	13
#define TTL_ARG_MAX_ROWS		14
#define TTL_ARG_SET_COLUMNS		15
#define TTL_ARG_MAX_BYTES		16
#define TTL_ARG_HIDE_EXPIRED	17
#define TTL_ARG_RESET			18	/* ttl_alter_index() only */

/*
 * ttl_api_action_arg
 *		Refuse an action without the argument only it takes (arg, given or
 *		not), or that argument with another action: is_action says whether
 *		the policy's action is that one (action).
 */
static void
ttl_api_action_arg(bool is_action, bool given, const char *action, const char *arg)
{
	if (is_action != given)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 is_action ?
				 errmsg("action '%s' needs %s", action, arg) :
				 errmsg("%s is only for action '%s'", arg, action)));
}

/*
 * ttl_api_options
 *		Read and check the options of ttl_create_index() that do not need
 *		the table: batch size, rate limit, unit, action.  Fills policy.
 */
static void
ttl_api_options(FunctionCallInfo fcinfo, TtlPolicy *policy, char **unit,
				char **action)
{
	if (!ttl_api_arg_null(fcinfo, TTL_ARG_BATCH_SIZE))
	{
		policy->batch_size = PG_GETARG_INT32(TTL_ARG_BATCH_SIZE);
		if (policy->batch_size < 1 || policy->batch_size > TTL_MAX_BATCH_SIZE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("batch_size must be between 1 and %d", TTL_MAX_BATCH_SIZE),
					 errhint("Pass NULL to use ttl_index.batch_size.")));
	}
	if (!ttl_api_arg_null(fcinfo, TTL_ARG_RATE_LIMIT))
	{
		policy->rate_limit = PG_GETARG_INT32(TTL_ARG_RATE_LIMIT);
		if (policy->rate_limit < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rate_limit must be a positive number of rows per second"),
					 errhint("Pass NULL for no limit of the policy's own.")));
	}

	*unit = ttl_api_text_arg(fcinfo, TTL_ARG_UNIT);
	if (*unit != NULL && (policy->unit_ns = ttl_unit_parse(*unit)) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unit must be one of 's', 'ms', 'us' or 'ns', not \"%s\"", *unit)));

	if (!ttl_api_arg_null(fcinfo, TTL_ARG_MAX_ROWS))
	{
		policy->max_rows = PG_GETARG_INT64(TTL_ARG_MAX_ROWS);
		if (policy->max_rows < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_rows must be a positive number of rows"),
					 errhint("Pass NULL for no cap.")));
	}
	if (!ttl_api_arg_null(fcinfo, TTL_ARG_MAX_BYTES))
	{
		policy->max_bytes = PG_GETARG_INT64(TTL_ARG_MAX_BYTES);
		if (policy->max_bytes < TTL_CAP_MIN_BYTES)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_bytes must be at least %d bytes (1 MB), not " INT64_FORMAT,
							TTL_CAP_MIN_BYTES, policy->max_bytes),
					 errdetail("A table's files take tens of kilobytes before it holds a row; a smaller cap would leave it one row."),
					 errhint("Pass NULL for no cap by size.")));
	}
	policy->purge_window = ttl_api_text_arg(fcinfo, TTL_ARG_PURGE_WINDOW);
	if (policy->purge_window != NULL)
	{
		policy->purge_window = ttl_window_normalize(policy->purge_window);
		ttl_window_read(policy->purge_window, &policy->windows);
	}
	policy->set_columns = ttl_api_text_arg(fcinfo, TTL_ARG_SET_COLUMNS);
	policy->hide_expired = !ttl_api_arg_null(fcinfo, TTL_ARG_HIDE_EXPIRED) &&
		PG_GETARG_BOOL(TTL_ARG_HIDE_EXPIRED);

	policy->replication_origin = ttl_api_arg_null(fcinfo, TTL_ARG_REPLICATION_ORIGIN) ? -1 :
		PG_GETARG_BOOL(TTL_ARG_REPLICATION_ORIGIN) ? 1 : 0;
	policy->soft_column = ttl_api_text_arg(fcinfo, TTL_ARG_SOFT_COLUMN);
	policy->time_zone = ttl_api_text_arg(fcinfo, TTL_ARG_TIME_ZONE);
	policy->archive_relid = ttl_api_arg_null(fcinfo, TTL_ARG_ARCHIVE_TABLE) ?
		InvalidOid : PG_GETARG_OID(TTL_ARG_ARCHIVE_TABLE);
	*action = ttl_api_text_arg(fcinfo, TTL_ARG_ACTION);
	if (*action == NULL)
		*action = policy->soft_column ? "soft_delete" :
			policy->set_columns ? "anonymize" :
			OidIsValid(policy->archive_relid) ? "archive" : "delete";

	if (strcmp(*action, "delete") == 0)
		policy->action = TTL_ACTION_DELETE;
	else if (strcmp(*action, "archive") == 0)
		policy->action = TTL_ACTION_ARCHIVE;
	else if (strcmp(*action, "soft_delete") == 0)
		policy->action = TTL_ACTION_SOFT_DELETE;
	else if (strcmp(*action, "anonymize") == 0)
		policy->action = TTL_ACTION_ANONYMIZE;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("action must be 'delete', 'archive', 'soft_delete' or 'anonymize', not \"%s\"", *action)));

	ttl_api_action_arg(policy->action == TTL_ACTION_ARCHIVE,
					   OidIsValid(policy->archive_relid), "archive", "archive_table");
	ttl_api_action_arg(policy->action == TTL_ACTION_SOFT_DELETE,
					   policy->soft_column != NULL, "soft_delete", "soft_delete_column");
	ttl_api_action_arg(policy->action == TTL_ACTION_ANONYMIZE,
					   policy->set_columns != NULL, "anonymize", "set_columns");
	if ((policy->max_rows > 0 || policy->max_bytes > 0) &&
		policy->action != TTL_ACTION_DELETE && policy->action != TTL_ACTION_ARCHIVE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is only for action 'delete' or 'archive'",
						policy->max_rows > 0 ? "max_rows" : "max_bytes"),
				 errdetail("%s leaves the row in the table, which would stay over its cap.",
						   policy->action == TTL_ACTION_SOFT_DELETE ? "A soft delete" : "Anonymizing")));
}

/*
 * ttl_api_archive_owned
 *		Whether a table's owner owns the archive table (or has the rights of
 *		the role that does).  A policy that archived into another role's
 *		table would make that role's DROP TABLE or ALTER TABLE fail for a
 *		policy it cannot drop.
 */
static bool
ttl_api_archive_owned(Oid relowner, Oid archive)
{
	return has_privs_of_role(relowner, ttl_table_owner(archive));
}

/*
 * ttl_api_archive_columns
 *		An archived row keeps every column of its table: the archive table
 *		needs a column of each name.  Names those it lacks, rather than
 *		leaving it to the parser of the batch's statement.
 */
static void
ttl_api_archive_columns(Relation rel, Oid archive)
{
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData missing;
	int			n = 0;
	char	   *archname = get_rel_name(archive);

	if (archname == NULL)
		return;
	initStringInfo(&missing);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || get_attnum(archive, NameStr(att->attname)) != InvalidAttrNumber)
			continue;
		appendStringInfo(&missing, "%s%s", n++ > 0 ? ", " : "",
						 quote_identifier(NameStr(att->attname)));
	}
	if (n > 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg_plural("archive table \"%s\" has no column %s",
							   "archive table \"%s\" has no columns %s",
							   n, archname, missing.data),
				 errdetail("An archived row keeps every column of table \"%s\": the archive table needs a column of each name.",
						   RelationGetRelationName(rel)),
				 errhint("Add the missing columns to \"%s\" with ALTER TABLE ... ADD COLUMN.", archname)));
}

/*
 * ttl_api_check_archive
 *		The archive table must be a table other than the policy's, that the
 *		table's owner (the caller) owns and may insert into.
 */
static void
ttl_api_check_archive(Relation rel, Oid archive)
{
	char		relkind = get_rel_relkind(archive);
	AclResult	aclresult;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("archive_table \"%s\" is not a table",
						get_rel_name(archive) ? get_rel_name(archive) : "?")));
	if (archive == RelationGetRelid(rel) ||
		get_rel_relispartition(archive) ||
		(rel->rd_rel->relispartition &&
		 list_member_oid(get_partition_ancestors(RelationGetRelid(rel)), archive)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("archive_table must be a table of its own, not the table or one of its partitions")));
	if (get_rel_persistence(archive) == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archive_table must not be a temporary table")));
	if (!ttl_api_archive_owned(rel->rd_rel->relowner, archive))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("archive_table \"%s\" is not owned by the owner of \"%s\"",
						get_rel_name(archive), RelationGetRelationName(rel)),
				 errdetail("A policy archives only into a table of its table's owner: another role's table could not be dropped or altered by that role while the policy exists.")));
	aclresult = pg_class_aclcheck(archive, GetUserId(), ACL_INSERT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(archive));
	ttl_api_archive_columns(rel, archive);
}

/*
 * ttl_api_policy
 *		Read ttl_create_index()'s arguments into a policy and check those
 *		that do not need the table.
 */
static void
ttl_api_policy(FunctionCallInfo fcinfo, Interval *expire_after, TtlPolicy *policy,
			   char **unit, char **action)
{
	memset(policy, 0, sizeof(TtlPolicy));
	ttl_api_options(fcinfo, policy, unit, action);
	policy->relid = PG_GETARG_OID(0);
	policy->column_name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	policy->ttl_column = ttl_api_text_arg(fcinfo, TTL_ARG_TTL_COLUMN);
	policy->filter = ttl_api_text_arg(fcinfo, TTL_ARG_FILTER);
	policy->no_expiry = expire_after == NULL;
	policy->expire_after = expire_after ? ttl_interval_usecs(expire_after) : 0;
	policy->expire_months = expire_after ? expire_after->month : 0;
	if (policy->no_expiry && policy->max_rows == 0 && policy->max_bytes == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("expire_after must not be null"),
				 errhint("expire_after may be NULL only beside max_rows or max_bytes, for a cap alone.")));
	if ((policy->max_rows > 0 || policy->max_bytes > 0) &&
		(policy->ttl_column != NULL || policy->filter != NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s cannot be combined with %s",
						policy->max_rows > 0 ? "max_rows" : "max_bytes",
						policy->ttl_column != NULL ? "ttl_column" : "filter"),
				 errdetail("A cap deletes the oldest rows of the whole table by the TTL column; %s.",
						   policy->ttl_column != NULL ?
						   "with a per-row TTL the column does not order the rows by age" :
						   "a filter would keep rows the cap counts")));
	if (policy->ttl_column != NULL && policy->unit_ns != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unit cannot be combined with ttl_column"),
				 errdetail("With ttl_column, the TTL column is a timestamp and the per-row TTL is in seconds or an interval.")));

	/* the library is newer than the installed SQL definitions */
	if (!ttl_catalog_is_current() &&
		(policy->ttl_column || policy->filter || *unit ||
		 policy->action != TTL_ACTION_DELETE || policy->rate_limit > 0))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("these options of ttl_create_index need version 1.2 of the extension"),
				 errhint("Run ALTER EXTENSION ttl_index UPDATE.")));
	if (policy->time_zone != NULL && !ttl_catalog_has_zone())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the time_zone option of ttl_create_index needs version 1.4 of the extension"),
				 errhint("Run ALTER EXTENSION ttl_index UPDATE.")));
	if ((policy->purge_window != NULL || policy->max_rows > 0 ||
		 policy->action == TTL_ACTION_ANONYMIZE) && !ttl_catalog_has_rules())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the purge_window, max_rows and set_columns options of ttl_create_index need version 1.4 of the extension"),
				 errhint("Run ALTER EXTENSION ttl_index UPDATE.")));
	if (policy->max_bytes > 0 && !ttl_catalog_has_bytes())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the max_bytes option of ttl_create_index needs version 1.5 of the extension"),
				 errhint("Run ALTER EXTENSION ttl_index UPDATE.")));
	if (policy->replication_origin >= 0 && !ttl_catalog_has_origin())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the replication_origin option of ttl_create_index needs version 1.3 of the extension"),
				 errhint("Run ALTER EXTENSION ttl_index UPDATE.")));
}

/*
 * ttl_api_zone_offset
 *		A zone's offset from UTC now, as ISO 8601 writes it: "UTC+05:30".
 */
static const char *
ttl_api_zone_offset(pg_tz *tz)
{
	pg_time_t	now = timestamptz_to_time_t(GetCurrentTimestamp());
	struct pg_tm *tm = tz ? pg_localtime(&now, tz) : NULL;
	long		off = tm ? tm->tm_gmtoff : 0;
	long		abs_off = off < 0 ? -off : off;

	if (abs_off % SECS_PER_MINUTE != 0)
		return psprintf("UTC%c%02ld:%02ld:%02ld", off < 0 ? '-' : '+',
						abs_off / SECS_PER_HOUR, abs_off / SECS_PER_MINUTE % 60,
						abs_off % SECS_PER_MINUTE);
	return psprintf("UTC%c%02ld:%02ld", off < 0 ? '-' : '+',
					abs_off / SECS_PER_HOUR, abs_off / SECS_PER_MINUTE % 60);
}

/*
 * ttl_api_posix_offset
 *		Whether a zone is written as a POSIX offset from UTC or GMT ("UTC-5",
 *		"GMT+3"): POSIX counts those hours west of Greenwich, so "UTC-5" is
 *		five hours east, the opposite of what a reader of ISO 8601 means.
 */
static bool
ttl_api_posix_offset(const char *p)
{
	static const char *const names[] = {"UTC", "GMT", "UT", "Z"};

	for (int i = 0; i < lengthof(names); i++)
	{
		size_t		n = strlen(names[i]);
		const char *q = p + n;

		if (pg_strncasecmp(p, names[i], n) != 0)
			continue;
		while (*q == ' ')
			q++;
		if ((*q == '+' || *q == '-') && isdigit((unsigned char) q[1]))
			return true;
	}
	return false;
}

/*
 * ttl_api_iso_offset
 *		Read an offset written as ISO 8601 does, east of Greenwich positive:
 *		"+05:30", "-05", "+0530".  Returns false when the text is not one.
 */
static bool
ttl_api_iso_offset(const char *p, long *secs)
{
	int			sign = *p == '-' ? -1 : 1;
	int			hh = 0;
	int			mm = 0;
	int			digits = 0;

	if (*p != '+' && *p != '-')
		return false;
	for (p++; isdigit((unsigned char) *p) && digits < 2; p++, digits++)
		hh = hh * 10 + (*p - '0');
	if (digits == 0)
		return false;
	if (*p == ':')
		p++;
	if (isdigit((unsigned char) p[0]) && isdigit((unsigned char) p[1]))
	{
		mm = (p[0] - '0') * 10 + (p[1] - '0');
		p += 2;
	}
	while (*p == ' ')
		p++;
	if (*p != '\0' || mm >= 60)
		return false;
	*secs = sign * ((long) hh * SECS_PER_HOUR + (long) mm * SECS_PER_MINUTE);
	return true;
}

/*
 * ttl_api_zone_given
 *		Check a time_zone a call gives and return the name to record: a
 *		zone of the time zone database (as PostgreSQL names it), a POSIX
 *		zone with a name of its own, or an ISO 8601 offset (recorded so
 *		that PostgreSQL reads it back the same way).  Refused: an interval,
 *		a POSIX offset from UTC or GMT, whose sign reads backwards, and
 *		anything more than 15 hours from UTC.
 */
static const char *
ttl_api_zone_given(const char *given)
{
	const char *p = given;
	long		secs;
	pg_tz	   *tz;
	pg_time_t	now = timestamptz_to_time_t(GetCurrentTimestamp());
	struct pg_tm *tm;

	while (*p == ' ')
		p++;
	if (pg_strncasecmp(p, "interval", 8) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" not recognized", given),
				 errdetail("time_zone takes a zone name or an offset, not an interval."),
				 errhint("Use a name of pg_timezone_names, such as 'America/New_York', or an offset such as '-05:00'.")));
	if (ttl_api_posix_offset(p))
	{
		tz = pg_tzset(p);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" is a POSIX offset, which counts hours west of Greenwich", given),
				 tz ? errdetail("\"%s\" is %s, not what ISO 8601 would read.", given,
								ttl_api_zone_offset(tz)) : 0,
				 errhint("Use a name of pg_timezone_names, such as 'America/New_York', or an ISO 8601 offset, such as '-05:00' for five hours west of Greenwich.")));
	}
	if (ttl_api_iso_offset(p, &secs))
	{
		if (secs > 15 * SECS_PER_HOUR || secs < -15 * SECS_PER_HOUR)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("time zone offset \"%s\" is out of range", given),
					 errdetail("Offsets from UTC go from -15:00 to +15:00.")));
		/* pg_tzset_offset counts seconds west, as POSIX does */
		tz = pg_tzset_offset(-secs);
	}
	else if (!ttl_zone_valid(p))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" not recognized", given),
				 errhint("Use a name of pg_timezone_names, such as 'UTC' or 'Europe/Berlin'.")));
	else
		tz = pg_tzset(p);
	tm = pg_localtime(&now, tz);
	if (tm == NULL || tm->tm_gmtoff > 15 * SECS_PER_HOUR || tm->tm_gmtoff < -15 * SECS_PER_HOUR)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" is out of range", given),
				 errdetail("Offsets from UTC go from -15:00 to +15:00.")));
	return pg_get_timezone_name(tz);
}

/*
 * ttl_api_creation_default
 *		Whether an expression (a column's default) calls now() or another of
 *		the clock's functions: the column records when the row was made.
 */
static bool
ttl_api_creation_default(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr))
	{
		Oid			f = ((FuncExpr *) node)->funcid;

		if (f == F_NOW || f == F_STATEMENT_TIMESTAMP || f == F_CLOCK_TIMESTAMP ||
			f == F_TRANSACTION_TIMESTAMP)
			return true;
	}
	if (IsA(node, SQLValueFunction))
		return true;
	return expression_tree_walker(node, ttl_api_creation_default, context);
}

/*
 * ttl_api_zero_notice
 *		A TTL of 0 says the column holds each row's expiry time.  On a
 *		column that records when a row was made (its default reads the
 *		clock, or its name says so), every row older than now then goes at
 *		once: say so, once, when the call sets that TTL.
 */
static void
ttl_api_zero_notice(Relation rel, TtlPolicy *policy)
{
	Node	   *def;
	bool		by_default;
	char	   *lower;

	if (policy->no_expiry || policy->expire_after != 0 || policy->expire_months != 0 ||
		policy->ttl_column != NULL ||
		ttl_alter_was_kept(2))
		return;
	def = build_column_default(rel, policy->attnum);
	by_default = def != NULL && ttl_api_creation_default(def, NULL);
	lower = asc_tolower(policy->column_name, strlen(policy->column_name));
	if (!by_default && strstr(lower, "creat") == NULL && strstr(lower, "insert") == NULL &&
		strstr(lower, "added") == NULL)
		return;
	ereport(NOTICE,
			(errmsg("with expire_after 0, every row whose \"%s\" is in the past expires at once",
					policy->column_name),
			 errdetail("A TTL of 0 reads column \"%s\" of table \"%s\" as each row's expiry time, but %s.",
					   policy->column_name, RelationGetRelationName(rel),
					   by_default ? "its default records when the row was made" :
					   "its name says it records when the row was made"),
			 errhint("Give expire_after, how long a row lives after \"%s\", for example interval '1 day'.",
					 policy->column_name)));
}

/*
 * ttl_api_time_zone
 *		The zone a policy on a timestamp or date key reads it in (expiry.c):
 *		time_zone if given, else the TimeZone of the session that makes
 *		the policy, which is the zone its writers use when they are the
 *		application running its migrations, or the database's and role's
 *		for a session opened by psql.  Said in a NOTICE when it is not the
 *		server's.  Stored as PostgreSQL names the zone.  A key of another
 *		type is an instant (or a number of seconds) and is read in no zone:
 *		a time_zone given for it is the zone of its purge windows (else
 *		they follow the server's TimeZone, as on a Citus node the
 *		coordinator's).
 */
static void
ttl_api_time_zone(Relation rel, TtlPolicy *policy)
{
	Oid			keytype = getBaseType(TupleDescAttr(RelationGetDescr(rel),
													policy->attnum - 1)->atttypid);
	const char *server;
	const char *zone;
	bool		given = policy->time_zone != NULL;

	if (!ttl_key_is_local(keytype, policy->unit_ns))
	{
		/*
		 * Its keys are instants, read in no zone; a zone given reads its
		 * purge windows (window.c) and, for timestamptz, counts the months
		 * of its TTL (expiry.c), which otherwise follow the server's.
		 */
		if (policy->time_zone == NULL || ttl_alter_was_kept(TTL_ARG_TIME_ZONE))
			return;
		if (!ttl_catalog_has_zone())
			return;
		zone = ttl_api_zone_given(policy->time_zone);
		policy->time_zone = pstrdup(zone);
		/* ... and counts the months of a timestamptz's TTL (expiry.c) */
		ereport(NOTICE,
				(errmsg("the purge windows %sof the policy on column \"%s\" of table \"%s\" are read in time zone \"%s\" (%s now)",
						policy->expire_months != 0 && policy->unit_ns == 0 ?
						"and the months of expire_after " : "",
						policy->column_name, RelationGetRelationName(rel), zone,
						ttl_api_zone_offset(pg_tzset(zone))),
				 errdetail("Column \"%s\" is of type %s: its values are %s, read in no time zone.",
						   policy->column_name, format_type_be(keytype),
						   policy->unit_ns != 0 ? "numbers of units since the Unix epoch" :
						   "instants")));
		return;
	}
	if (!ttl_catalog_has_zone())
		return;
	if (policy->time_zone != NULL && ttl_alter_was_kept(TTL_ARG_TIME_ZONE))
		zone = policy->time_zone;	/* the policy's, checked when it was given */
	else if (policy->time_zone != NULL)
		zone = ttl_api_zone_given(policy->time_zone);
	else
		zone = pg_get_timezone_name(session_timezone);
	policy->time_zone = pstrdup(zone);

	server = ttl_server_zone_name();
	if (pg_strcasecmp(zone, server) != 0 && !ttl_alter_was_kept(TTL_ARG_TIME_ZONE))
		ereport(NOTICE,
				(errmsg("column \"%s\" of table \"%s\" is read as wall-clock time in time zone \"%s\" (%s now)",
						policy->column_name, RelationGetRelationName(rel), zone,
						ttl_api_zone_offset(pg_tzset(zone))),
				 !given ?
				 errdetail("It is the time zone of this session, not the server's \"%s\"; the policy keeps it.", server) :
				 errdetail("It is not the server's time zone, \"%s\".", server),
				 errhint("Pass time_zone => '...' for the zone the table's writers use.")));
}

/*
 * ttl_api_policy_columns
 *		Resolve the policy's column names against the table (as stored: the
 *		live spelling), check the archive table, and parse the filter as the
 *		caller, storing it as deparsed.
 */
static void
ttl_api_policy_columns(Relation rel, TtlPolicy *policy)
{
	TupleDesc	desc = RelationGetDescr(rel);

	policy->attnum = ttl_api_column(rel, policy->column_name);
	policy->column_name = pstrdup(NameStr(TupleDescAttr(desc, policy->attnum - 1)->attname));
	if (policy->ttl_column != NULL)
	{
		AttrNumber	a = ttl_api_column(rel, policy->ttl_column);

		if (a == policy->attnum)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("ttl_column must not be the TTL column itself")));
		policy->ttl_column = pstrdup(NameStr(TupleDescAttr(desc, a - 1)->attname));
	}
	if (policy->soft_column != NULL)
	{
		AttrNumber	a = ttl_api_column(rel, policy->soft_column);

		policy->soft_column = pstrdup(NameStr(TupleDescAttr(desc, a - 1)->attname));
	}
	if (policy->action == TTL_ACTION_ARCHIVE)
		ttl_api_check_archive(rel, policy->archive_relid);
	if (policy->action == TTL_ACTION_ANONYMIZE)
		ttl_set_check(rel, policy);
	ttl_target_check_types(policy, rel);
	ttl_api_time_zone(rel, policy);
	if (ttl_rel_has_delete_rules(rel, policy->action, true))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" has a DO INSTEAD rule on %s",
						RelationGetRelationName(rel),
						TTL_ACTION_UPDATES(policy->action) ? "UPDATE" : "DELETE"),
				 errdetail("The rule would replace what the policy does to expired rows, which would then never be removed."),
				 errhint("Drop the rule first.")));

	/*
	 * The filter, parsed and checked as the caller, stored as deparsed, with
	 * the functions it calls (filter.c).  The stored text, parsed again as
	 * every later reader will, must call those.
	 */
	policy->filter_funcs_known = true;
	policy->nfilter_funcs = 0;
	if (policy->filter != NULL)
	{
		Node	   *expr = ttl_filter_parse(rel, policy->filter, false);
		List	   *funcs = ttl_filter_functions(expr);
		ListCell   *lc;

		policy->filter = ttl_filter_deparse(rel, expr);
		policy->filter_funcs = palloc(sizeof(Oid) * Max(list_length(funcs), 1));
		foreach(lc, funcs)
			policy->filter_funcs[policy->nfilter_funcs++] = lfirst_oid(lc);
		ttl_filter_check_functions(ttl_filter_parse(rel, policy->filter, true), policy, NIL);
	}
}

/*
 * ttl_api_index_one
 *		Make sure one table of the policy (its own, or an inheritance child)
 *		has the index the policy needs: one that serves it as it now is,
 *		else a new one; an index this function made earlier for the column
 *		that no longer serves it (the options changed) is dropped.  Checks
 *		the statement a batch will run on the table first.  The caller holds
 *		the table in SHARE mode, and does not hold it open (CREATE INDEX
 *		refuses a table in use in this session).
 */
static void
ttl_api_index_one(TtlPolicy *policy, Oid relid)
{
	Relation	rel = relation_open(relid, NoLock);
	TtlTarget  *t = ttl_target_create(relid, false, CurrentMemoryContext);
	Oid			indexoid;
	Oid			created;
	char	   *relname;
	char	   *colname;
	Oid			nsp;

	if (ttl_target_resolve(policy, t, rel) == TTL_RESOLVE_GONE)
		elog(ERROR, "could not resolve the policy on %s", RelationGetRelationName(rel));
	ttl_statement_check(policy, t, rel);
	nsp = RelationGetNamespace(rel);
	relname = pstrdup(RelationGetRelationName(rel));
	colname = pstrdup(NameStr(TupleDescAttr(RelationGetDescr(rel), t->attnum - 1)->attname));
	relation_close(rel, NoLock);

	indexoid = t->indexoid;
	if (OidIsValid(indexoid) && t->filter != NULL && !ttl_api_index_partial(indexoid) &&
		(TTL_ACTION_UPDATES(policy->action) ||
		 !contain_mutable_functions((Node *) t->filter)))
	{
		/*
		 * A plain index would make every pass re-read the expired rows the
		 * filter keeps (and a soft delete's marked rows, or an anonymize's
		 * reset ones, without end): make the partial index the policy can
		 * have.
		 */
		indexoid = InvalidOid;
	}
	created = ttl_created_index(relid, t->attnum);
	/* a child another role owns: its indexes are that role's to drop */
	if (OidIsValid(created) && created != indexoid &&
		ttl_rel_ownercheck(relid, GetUserId()))
	{
		ttl_drop_created(created);
		CommandCounterIncrement();
	}
	if (!OidIsValid(indexoid))
		ttl_api_create_btree(nsp, relname, colname, t);
}

/*
 * ttl_api_indexes
 *		The index of every table the policy covers: the table itself (on a
 *		partitioned table PostgreSQL makes it on every partition), and each
 *		inheritance child, which inherits no index.  The caller holds the
 *		table in SHARE mode; children are locked the same way.
 */
static void
ttl_api_indexes(TtlPolicy *policy, bool has_children)
{
	List	   *children = NIL;
	ListCell   *lc;

	if (has_children)
		children = find_all_inheritors(policy->relid, ShareLock, NULL);
	ttl_api_index_one(policy, policy->relid);
	foreach(lc, children)
	{
		if (lfirst_oid(lc) != policy->relid &&
			get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
			ttl_api_index_one(policy, lfirst_oid(lc));
	}
}

/*
 * ttl_api_write_policy
 *		Insert or update the catalog row, as the extension owner.  Returns
 *		the policy id.
 */
static int32
ttl_api_write_policy(TtlPolicy *policy, Interval *expire_after, const char *unit,
					 const char *action)
{
	bool		current = ttl_catalog_is_current();
	bool		has_origin = current && ttl_catalog_has_origin();
	bool		has_zone = has_origin && ttl_catalog_has_zone();
	bool		has_rules = has_zone && ttl_catalog_has_rules();
	bool		has_bytes = has_rules && ttl_catalog_has_bytes();
	bool		has_hide = has_bytes && ttl_catalog_has_hide();

	/*
	 * the 1.5 catalog has them all, 1.4 all but the last two (a 1.4 in the
	 * making before purge_window all but the last five), 1.3 all but the
	 * last seven, 1.2 all but the last eight, 1.0 and 1.1 two
	 */
	static const char *const cols[] = {"expire_after", "batch_size", "ttl_column",
		"filter", "unit", "action", "archive_table", "soft_delete_column", "rate_limit",
		"replication_origin", "time_zone", "filter_functions", "purge_window", "max_rows",
	"set_columns", "max_bytes", "hide_expired"};
	Oid			argtypes[19] = {OIDOID, NAMEOID, INTERVALOID, INT4OID, NAMEOID,
		TEXTOID, TEXTOID, TEXTOID, OIDOID, NAMEOID, INT4OID, BOOLOID, TEXTOID,
	TEXTARRAYOID, TEXTOID, INT8OID, TEXTOID, INT8OID, BOOLOID};
	int			ncols;
	StringInfoData insert;
	StringInfoData params;
	StringInfoData set;
	Datum		values[19];
	char		nulls[19];
	Datum	   *funcs;
	NameData	colnamedata;
	NameData	ttlnamedata;
	NameData	softnamedata;
	char	   *sql;
	int			ret;
	bool		isnull;
	int32		id;

	namestrcpy(&colnamedata, policy->column_name);
	if (policy->ttl_column)
		namestrcpy(&ttlnamedata, policy->ttl_column);
	if (policy->soft_column)
		namestrcpy(&softnamedata, policy->soft_column);

	memset(nulls, ' ', sizeof(nulls));
	values[0] = ObjectIdGetDatum(policy->relid);
	values[1] = NameGetDatum(&colnamedata);
	values[2] = expire_after ? IntervalPGetDatum(expire_after) : (Datum) 0;
	nulls[2] = expire_after ? ' ' : 'n';
	values[3] = Int32GetDatum(policy->batch_size);
	nulls[3] = policy->batch_size > 0 ? ' ' : 'n';
	values[4] = NameGetDatum(&ttlnamedata);
	nulls[4] = policy->ttl_column ? ' ' : 'n';
	values[5] = policy->filter ? CStringGetTextDatum(policy->filter) : (Datum) 0;
	nulls[5] = policy->filter ? ' ' : 'n';
	values[6] = unit ? CStringGetTextDatum(unit) : (Datum) 0;
	nulls[6] = unit ? ' ' : 'n';
	values[7] = CStringGetTextDatum(action);
	values[8] = ObjectIdGetDatum(policy->archive_relid);
	nulls[8] = OidIsValid(policy->archive_relid) ? ' ' : 'n';
	values[9] = NameGetDatum(&softnamedata);
	nulls[9] = policy->soft_column ? ' ' : 'n';
	values[10] = Int32GetDatum(policy->rate_limit);
	nulls[10] = policy->rate_limit > 0 ? ' ' : 'n';
	values[11] = BoolGetDatum(policy->replication_origin > 0);
	nulls[11] = policy->replication_origin >= 0 ? ' ' : 'n';
	values[12] = policy->time_zone ? CStringGetTextDatum(policy->time_zone) : (Datum) 0;
	nulls[12] = policy->time_zone ? ' ' : 'n';
	funcs = palloc(sizeof(Datum) * Max(policy->nfilter_funcs, 1));
	for (int i = 0; i < policy->nfilter_funcs; i++)
		funcs[i] = CStringGetTextDatum(ttl_filter_function_signature(policy->filter_funcs[i]));
	values[13] = PointerGetDatum(construct_array(funcs, policy->nfilter_funcs, TEXTOID,
												 -1, false, TYPALIGN_INT));
	values[14] = policy->purge_window ? CStringGetTextDatum(policy->purge_window) : (Datum) 0;
	nulls[14] = policy->purge_window ? ' ' : 'n';
	values[15] = Int64GetDatum(policy->max_rows);
	nulls[15] = policy->max_rows > 0 ? ' ' : 'n';
	values[16] = policy->set_columns ? CStringGetTextDatum(policy->set_columns) : (Datum) 0;
	nulls[16] = policy->set_columns ? ' ' : 'n';
	values[17] = Int64GetDatum(policy->max_bytes);
	nulls[17] = policy->max_bytes > 0 ? ' ' : 'n';
	values[18] = BoolGetDatum(policy->hide_expired);

	/* the catalog's columns after relid, column_name and attnum, in $3... */
	ncols = has_hide ? lengthof(cols) : has_bytes ? lengthof(cols) - 1 :
		has_rules ? lengthof(cols) - 2 :
		has_zone ? lengthof(cols) - 5 : has_origin ? lengthof(cols) - 7 :
		current ? lengthof(cols) - 8 : 2;
	initStringInfo(&insert);
	initStringInfo(&params);
	initStringInfo(&set);
	for (int i = 0; i < ncols; i++)
	{
		appendStringInfo(&insert, ", %s", cols[i]);
		appendStringInfo(&params, ", $%d", i + 3);
		appendStringInfo(&set, ", %s = excluded.%s", cols[i], cols[i]);
	}
	sql = psprintf("INSERT INTO %s AS p (relid, column_name, attnum%s) VALUES ($1, $2, 0%s)"
				   " ON CONFLICT (relid, attnum) DO UPDATE SET column_name = excluded.column_name%s"
				   " RETURNING id",
				   ttl_catalog_relname(), insert.data, params.data, set.data);
	SPI_connect();
	ret = ttl_as_extension_owner(sql, ncols + 2, argtypes, values, nulls);
	if (ret != SPI_OK_INSERT_RETURNING || SPI_processed != 1)
		elog(ERROR, "could not write the TTL policy: %s", SPI_result_code_string(ret));
	id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return id;
}

/*
 * ttl_api_hide_changed
 *		Whether the call gives or resets an option that hide_expired's
 *		row-level security policies depend on (the TTL, ttl_column, the
 *		filter, the unit, the zone, hide_expired itself): only then are
 *		they made again, which locks the table against its readers until
 *		the transaction ends.  A call that changes, say, the batch size of
 *		a policy that hides expired rows leaves them as they are.
 */
static bool
ttl_api_hide_changed(FunctionCallInfo fcinfo)
{
	static const int args[] = {2, TTL_ARG_TTL_COLUMN, TTL_ARG_FILTER, TTL_ARG_UNIT,
	TTL_ARG_TIME_ZONE, TTL_ARG_HIDE_EXPIRED};

	for (int i = 0; i < lengthof(args); i++)
		if ((!ttl_api_arg_null(fcinfo, args[i]) && !ttl_alter_was_kept(args[i])) ||
			ttl_alter_was_reset(args[i]))
			return true;
	return false;
}

/*
 * ttl_api_create
 *		Shared body of both ttl_create_index() variants, once expire_after is
 *		known as an interval: check everything, make the indexes, write the
 *		catalog.
 */
static int32
ttl_api_create(FunctionCallInfo fcinfo, Interval *expire_after)
{
	TtlPolicy	policy;
	char	   *unit;
	char	   *action;
	Relation	rel;
	bool		has_children;
	int32		id;

	ttl_api_policy(fcinfo, expire_after, &policy, &unit, &action);

	/* ShareLock: we may build an index, and the table must not change under us */
	rel = ttl_api_open_table(policy.relid, ShareLock);
	ttl_citus_check_create(&policy);
	ttl_api_policy_columns(rel, &policy);
	ttl_api_zero_notice(rel, &policy);
	ttl_hide_check(&policy, rel);
	has_children = rel->rd_rel->relkind == RELKIND_RELATION && rel->rd_rel->relhassubclass;
	table_close(rel, NoLock);
	ttl_api_indexes(&policy, has_children);

	id = ttl_api_write_policy(&policy, expire_after, unit, action);
	/* the row-level security policies of hide_expired, made or removed */
	if (!policy.hide_expired || ttl_api_hide_changed(fcinfo))
		ttl_hide_sync(&policy);
	return id;
}

/*
 * ttl_api_check_interval
 *		Validate a TTL given as an interval: not negative, at most 100
 *		years.  Months and years are calendar months (expiry.c): a month
 *		is 28 to 31 days, so one beside a negative part (interval '1 month
 *		-30 days') would be a TTL of no time at all on some dates, and is
 *		refused; a positive part beside months is added to them.  Whether
 *		it exceeds 100 years counts a month as PostgreSQL's extract(epoch)
 *		does, a year as 365.25 days.
 */
static void
ttl_api_check_interval(Interval *span)
{
	int64		usecs;
	int64		month_usecs;
	bool		overflow;

	if (span->month < 0)
		ttl_api_check_expire(-1, false);
	if (span->month > 0 && (span->day < 0 || span->time < 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("expire_after must not mix months or years with a negative part"),
				 errdetail("A TTL with months or years must have no negative part: a month is 28 to 31 days long, so interval '1 month -30 days' would be no time at all on some dates."),
				 errhint("Write the TTL in months and years alone, or in days alone.")));
	overflow = pg_mul_s64_overflow(span->day, USECS_PER_DAY, &usecs) ||
		pg_add_s64_overflow(usecs, span->time, &usecs);
	/* 365.25 days a year, a twelfth of it a month (at most 100 years: exact) */
	month_usecs = (int64) Min(span->month, 12 * 1000) *
		(SECS_PER_YEAR / MONTHS_PER_YEAR) * USECS_PER_SEC;
	overflow = overflow || pg_add_s64_overflow(usecs, month_usecs, &usecs);
	ttl_api_check_expire(usecs, overflow);
}

/*
 * ttl_api_unnamed_ttl
 *		The TTL of a call that gives none (expire_after NULL or left out):
 *		on a column that has a policy, the policy's own (kept: NULL for a
 *		cap alone); else NULL beside max_rows, a cap alone; else 0 beside
 *		ttl_column (the row's own TTL is the whole TTL); else an error: a
 *		TTL left out must not mean 0, which deletes every row whose time
 *		is past.
 */
static Interval *
ttl_api_unnamed_ttl(FunctionCallInfo fcinfo, bool exists, Interval *kept)
{
	if (exists)
		return kept;
	if (!ttl_api_arg_null(fcinfo, TTL_ARG_MAX_ROWS) ||
		!ttl_api_arg_null(fcinfo, TTL_ARG_MAX_BYTES))
		return NULL;
	if (ttl_api_arg_null(fcinfo, TTL_ARG_TTL_COLUMN))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("expire_after must not be null"),
				 errdetail("A new policy needs a TTL, unless it has max_rows or max_bytes (a cap alone) or ttl_column (a TTL per row)."),
				 errhint("Give expire_after, how long a row lives after \"%s\"; 0 if the column holds each row's expiry time.",
						 text_to_cstring(PG_GETARG_TEXT_PP(1)))));
	return palloc0(sizeof(Interval));
}

/*
 * ttl_api_create_open
 *		What both ttl_create_index()s do first: the table and the column are
 *		required, and a policy's current values are kept for the arguments
 *		the call leaves out (alter.c).  Returns the call to go on with; when
 *		it gives no TTL, *unnamed is set and *span is the TTL to use
 *		(ttl_api_unnamed_ttl: NULL for a cap alone).
 */
static FunctionCallInfo
ttl_api_create_open(FunctionCallInfo fcinfo, bool *unnamed, Interval **span)
{
	Interval   *kept;
	bool		exists;

	ttl_api_require(fcinfo, 0, "table_name");
	ttl_api_require(fcinfo, 1, "column_name");
	fcinfo = ttl_alter_keep(fcinfo, NULL, &exists, &kept);
	*unnamed = PG_ARGISNULL(2);
	*span = *unnamed ? ttl_api_unnamed_ttl(fcinfo, exists, kept) : NULL;
	return fcinfo;
}

/*
 * ttl_create_index(table regclass, column text, expire_after interval,
 *					batch_size integer DEFAULT NULL, ...) returns integer
 *		Create the policy, or change it in place; returns its id.
 */
Datum
ttl_create_index(PG_FUNCTION_ARGS)
{
	Interval   *span;
	bool		unnamed;

	fcinfo = ttl_api_create_open(fcinfo, &unnamed, &span);
	if (!unnamed)
	{
		span = PG_GETARG_INTERVAL_P(2);
		ttl_api_check_interval(span);
	}
	PG_RETURN_INT32(ttl_api_create(fcinfo, span));
}

/*
 * ttl_create_index(table regclass, column text, expire_after bigint,
 *					batch_size integer DEFAULT NULL, ...) returns integer
 *		The same, with the TTL in seconds.
 */
Datum
ttl_create_index_seconds(PG_FUNCTION_ARGS)
{
	int64		secs;
	Interval   *span;
	bool		unnamed;

	fcinfo = ttl_api_create_open(fcinfo, &unnamed, &span);
	if (unnamed)
		PG_RETURN_INT32(ttl_api_create(fcinfo, span));

	secs = PG_GETARG_INT64(2);
	if (secs < 0)
		ttl_api_check_expire(-1, false);
	ttl_api_check_expire(0, secs > TTL_MAX_EXPIRE_SECS);

	span = palloc0(sizeof(Interval));
	span->time = secs * USECS_PER_SEC;
	PG_RETURN_INT32(ttl_api_create(fcinfo, span));
}

/*
 * ttl_create_index(table regclass, column text, expire_after text,
 *					batch_size integer DEFAULT NULL, ...) returns integer
 *		The same, with the TTL written as text: a quoted literal such as
 *		'3600' or '1 hour'.  Without this form such a call matches both
 *		the interval and the bigint form and PostgreSQL refuses it as
 *		ambiguous; with it, an untyped literal resolves here (text is the
 *		preferred type for an unknown literal).  The text is read as an
 *		interval, and interval input reads a bare number as seconds, so
 *		'3600', '3600 seconds' and '1 hour' are the same TTL.
 */
Datum
ttl_create_index_text(PG_FUNCTION_ARGS)
{
	char	   *str;
	Interval   *span;
	bool		exists;

	ttl_api_require(fcinfo, 0, "table_name");
	ttl_api_require(fcinfo, 1, "column_name");
	fcinfo = ttl_alter_keep(fcinfo, NULL, &exists, &span);
	if (PG_ARGISNULL(2))
		PG_RETURN_INT32(ttl_api_create(fcinfo, ttl_api_unnamed_ttl(fcinfo, exists, span)));

	str = text_to_cstring(PG_GETARG_TEXT_PP(2));
	span = DatumGetIntervalP(DirectFunctionCall3(interval_in,
												 CStringGetDatum(str),
												 ObjectIdGetDatum(InvalidOid),
												 Int32GetDatum(-1)));
	ttl_api_check_interval(span);
	PG_RETURN_INT32(ttl_api_create(fcinfo, span));
}

/*
 * ttl_alter_index(table regclass, column text, expire_after interval DEFAULT
 *				   NULL, batch_size integer DEFAULT NULL, ..., reset text[]
 *				   DEFAULT NULL) returns integer
 *		Change the options of an existing policy that the call names, and
 *		remove those reset names; every other option keeps its value
 *		(alter.c).  The policy must exist.  Returns its id.
 */
Datum
ttl_alter_index(PG_FUNCTION_ARGS)
{
	Interval   *span;
	bool		exists;
	ArrayType  *reset = ttl_api_arg_null(fcinfo, TTL_ARG_RESET) ? NULL :
		PG_GETARG_ARRAYTYPE_P(TTL_ARG_RESET);

	ttl_api_require(fcinfo, 0, "table_name");
	ttl_api_require(fcinfo, 1, "column_name");
	fcinfo = ttl_alter_keep(fcinfo, reset, &exists, &span);
	if (!exists)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("column \"%s\" of table \"%s\" has no TTL policy",
						text_to_cstring(PG_GETARG_TEXT_PP(1)),
						get_rel_name(PG_GETARG_OID(0)) ? get_rel_name(PG_GETARG_OID(0)) : "?"),
				 errhint("Create one with ttl_create_index().")));
	if (!PG_ARGISNULL(2))
	{
		span = PG_GETARG_INTERVAL_P(2);
		ttl_api_check_interval(span);
	}
	PG_RETURN_INT32(ttl_api_create(fcinfo, span));
}

/*
 * ttl_api_drop_created
 *		Drop the indexes ttl_create_index made for a policy: on the table,
 *		and on its inheritance children (on a partitioned table, the one
 *		index takes its partitions' with it).
 */
static void
ttl_api_drop_created(Relation rel, AttrNumber attnum)
{
	Oid			relid = RelationGetRelid(rel);
	const char *colname = get_attname(relid, attnum, false);
	List	   *tables = list_make1_oid(relid);
	ListCell   *lc;

	if (rel->rd_rel->relkind == RELKIND_RELATION && rel->rd_rel->relhassubclass)
		tables = find_all_inheritors(relid, ShareUpdateExclusiveLock, NULL);
	foreach(lc, tables)
	{
		Oid			table = lfirst_oid(lc);
		AttrNumber	a = table == relid ? attnum : get_attnum(table, colname);
		Oid			created;

		if (a == InvalidAttrNumber ||
			(table != relid && get_rel_relkind(table) != RELKIND_RELATION))
			continue;
		/* a child another role owns: its indexes are that role's to drop */
		if (table != relid && !ttl_rel_ownercheck(table, GetUserId()))
			continue;
		created = ttl_created_index(table, a);
		if (OidIsValid(created))
			ttl_drop_created(created);
	}
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
	ret = ttl_as_extension_owner(sql, 2, argtypes, values, NULL);
	if (ret != SPI_OK_DELETE)
		elog(ERROR, "could not delete the TTL policy: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table \"%s\" has no TTL policy on column \"%s\"",
						RelationGetRelationName(rel), colname)));

	SPI_finish();

	/* the indexes ttl_create_index made, known by their comment */
	ttl_api_drop_created(rel, attnum);
	table_close(rel, NoLock);
	/* hide_expired's row-level security policies, if it made them */
	ttl_hide_remove(relid, attnum);
	PG_RETURN_BOOL(true);
}

/*
 * ttl_index_policy_changed
 *		Statement trigger on the catalog: wake this database's worker, and
 *		the launcher, when the transaction commits.
 */
Datum
ttl_index_policy_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Oid			nsp;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "ttl_index_policy_changed: not called by trigger manager");

	/*
	 * Only on the catalog: EXECUTE is revoked from PUBLIC, so no other role
	 * can attach it to a table of its own, but a superuser could.
	 */
	nsp = ttl_catalog_namespace(true);
	if (!OidIsValid(nsp) ||
		RelationGetRelid(trigdata->tg_relation) != get_relname_relid(TTL_CATALOG_NAME, nsp))
		ereport(ERROR,
				(errcode(ERRCODE_TRIGGERED_ACTION_EXCEPTION),
				 errmsg("ttl_index_policy_changed() fires only on %s", TTL_CATALOG_NAME)));
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

/*
 * ttl_api_set_enabled
 *		Body of ttl_pause() and ttl_resume(): set the enabled flag of the
 *		table's policies (or of the one on a column).  Returns how many
 *		policies there are; an error when there is none.
 */
static int32
ttl_api_set_enabled(FunctionCallInfo fcinfo, bool enabled)
{
	Oid			relid;
	Relation	rel;
	AttrNumber	attnum = 0;
	char	   *colname = NULL;
	char	   *sql;
	Oid			argtypes[3] = {OIDOID, INT2OID, BOOLOID};
	Datum		values[3];
	int			ret;
	int32		count;

	ttl_api_require(fcinfo, 0, "table_name");
	relid = PG_GETARG_OID(0);
	rel = ttl_api_open_table(relid, ShareUpdateExclusiveLock);
	if (!PG_ARGISNULL(1))
	{
		colname = text_to_cstring(PG_GETARG_TEXT_PP(1));
		attnum = ttl_api_column(rel, colname);
	}

	SPI_connect();
	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int16GetDatum(attnum);
	values[2] = BoolGetDatum(enabled);
	/* every policy of the table, so that the count says what there is */
	sql = psprintf("UPDATE %s SET %s"
				   " WHERE relid = $1 AND ($2 = 0 OR attnum = $2)",
				   ttl_catalog_relname(), ttl_catalog_pause_sql("$3"));
	ret = ttl_as_extension_owner(sql, 3, argtypes, values, NULL);
	if (ret != SPI_OK_UPDATE)
		elog(ERROR, "could not update the TTL policy: %s", SPI_result_code_string(ret));
	count = (int32) SPI_processed;
	if (count == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 colname ?
				 errmsg("table \"%s\" has no TTL policy on column \"%s\"",
						RelationGetRelationName(rel), colname) :
				 errmsg("table \"%s\" has no TTL policy", RelationGetRelationName(rel))));
	SPI_finish();
	table_close(rel, NoLock);
	return count;
}

/*
 * ttl_pause(table regclass, column text DEFAULT NULL) returns integer
 *		Stop purging the table's policies (or the column's) until
 *		ttl_resume(); the policies, their index and counters stay.
 */
Datum
ttl_pause(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(ttl_api_set_enabled(fcinfo, false));
}

/*
 * ttl_resume(table regclass, column text DEFAULT NULL) returns integer
 *		Purge paused policies again.
 */
Datum
ttl_resume(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(ttl_api_set_enabled(fcinfo, true));
}

/*
 * ttl_check_policy_context
 *		Say which policy a refused ALTER TABLE would break.
 */
static void
ttl_check_policy_context(void *arg)
{
	TtlPolicy  *p = (TtlPolicy *) arg;
	char	   *relname = ttl_qualified_relname(p->relid);

	errcontext("TTL policy on column \"%s\" of table %s; change or drop it first with ttl_alter_index() or ttl_drop_index()",
			   p->column_name, relname ? relname : "?");
}

/*
 * ttl_api_pause_policy
 *		Pause one policy, as the extension owner, and say why: what another
 *		role did to a table of its own broke it, and that role's DDL is not
 *		to be refused for it.
 */
static void
ttl_api_pause_policy(TtlPolicy *p, const char *why)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		values[1];
	char	   *relname = ttl_qualified_relname(p->relid);

	SPI_connect();
	values[0] = Int32GetDatum(p->id);
	if (ttl_as_extension_owner(psprintf("UPDATE %s SET %s WHERE id = $1",
											ttl_catalog_relname(),
											ttl_catalog_pause_sql("false")),
								   1, argtypes, values, NULL) != SPI_OK_UPDATE)
		elog(ERROR, "could not pause the TTL policy %d", p->id);
	SPI_finish();
	ereport(WARNING,
			(errmsg("the TTL policy on column \"%s\" of table %s is paused: %s",
					p->column_name, relname ? relname : "?", why),
			 errhint("Its owner can change it with ttl_alter_index() and resume it with ttl_resume().")));
}

/*
 * ttl_api_check_filter_columns
 *		The filter, parsed as the table now is: a column it names that is
 *		gone (dropped or renamed by the command being checked) is said as
 *		such, rather than as the parser's "column does not exist" with a
 *		guess at another column.
 */
static void
ttl_api_check_filter_columns(TtlPolicy *p, Relation rel)
{
	MemoryContext cxt = CurrentMemoryContext;
	ErrorData  *edata = NULL;

	if (p->filter == NULL)
		return;
	PG_TRY();
	{
		(void) ttl_filter_parse(rel, p->filter, true);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_UNDEFINED_COLUMN)
			PG_RE_THROW();
		FlushErrorState();
	}
	PG_END_TRY();
	if (edata != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("the filter of the TTL policy on column \"%s\" of table \"%s\" uses a column this command drops or renames",
						p->column_name, RelationGetRelationName(rel)),
				 errdetail("The filter is %s: %s.", p->filter, edata->message),
				 errhint("Change the filter first with ttl_alter_index(..., filter => '...'), or remove it with ttl_alter_index(..., reset => '{filter}').")));
}

/*
 * ttl_api_check_one
 *		The checks of ttl_index_check_policy on one policy, its table open,
 *		after `command` (ALTER TABLE, CREATE INDEX).
 */
static void
ttl_api_check_one(TtlPolicy *p, Relation rel, const char *command)
{
	TtlTarget  *t;
	ErrorContextCallback errcallback;

	errcallback.callback = ttl_check_policy_context;
	errcallback.arg = p;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	ttl_target_check_types(p, rel);
	if (p->action == TTL_ACTION_ARCHIVE && get_rel_name(p->archive_relid) != NULL &&
		!ttl_api_archive_owned(rel->rd_rel->relowner, p->archive_relid))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("the archive table %s would not be owned by the owner of table %s",
						get_rel_name(p->archive_relid), RelationGetRelationName(rel)),
				 errdetail("A policy archives only into a table of its table's owner.")));
	/* whether the columns can still store the values (set.c) */
	ttl_set_recheck(rel, p, command);
	t = ttl_target_create(p->relid, false, CurrentMemoryContext);
	ttl_api_check_filter_columns(p, rel);
	if (p->action == TTL_ACTION_ARCHIVE)
		ttl_api_archive_columns(rel, p->archive_relid);
	if (ttl_target_resolve(p, t, rel) != TTL_RESOLVE_GONE)
		ttl_statement_check(p, t, rel);
	error_context_stack = errcallback.previous;
}

/* ttl_api_check_one's arguments, for ttl_error_try */
typedef struct TtlApiCheck
{
	TtlPolicy  *policy;
	Relation	rel;
	const char *command;
} TtlApiCheck;

/*
 * ttl_api_check_one_try
 *		ttl_api_check_one, as ttl_error_try calls it.
 */
static void
ttl_api_check_one_try(void *arg)
{
	TtlApiCheck *check = (TtlApiCheck *) arg;

	ttl_api_check_one(check->policy, check->rel, check->command);
}

/*
 * ttl_api_zone_follows
 *		After ALTER TABLE: a column that became timestamp or date takes the
 *		zone of the session that altered it (as a new policy takes its
 *		creator's); one that is no longer keeps its zone, for its purge
 *		windows (ttl_api_time_zone).
 */
static void
ttl_api_zone_follows(TtlPolicy *p, Relation rel)
{
	Oid			keytype;
	Oid			argtypes[2] = {INT4OID, TEXTOID};
	Datum		values[2];
	const char *zone;

	if (!ttl_catalog_has_zone() || p->attnum <= 0 ||
		p->attnum > RelationGetNumberOfAttributes(rel) || p->time_zone != NULL)
		return;
	keytype = getBaseType(TupleDescAttr(RelationGetDescr(rel), p->attnum - 1)->atttypid);
	if (!ttl_key_is_local(keytype, p->unit_ns))
		return;
	zone = pg_get_timezone_name(session_timezone);
	values[0] = Int32GetDatum(p->id);
	values[1] = CStringGetTextDatum(zone);
	ereport(NOTICE,
			(errmsg("column \"%s\" of table \"%s\" is now read as wall-clock time in time zone \"%s\", this session's",
					p->column_name, RelationGetRelationName(rel), zone),
			 errhint("Pass time_zone => '...' to ttl_create_index() for the zone the table's writers use.")));
	SPI_connect();
	if (ttl_as_extension_owner(psprintf("UPDATE %s SET time_zone = $2 WHERE id = $1",
											ttl_catalog_relname()),
								   2, argtypes, values, NULL) != SPI_OK_UPDATE)
		elog(ERROR, "could not update the time zone of TTL policy %d", p->id);
	SPI_finish();
}

/*
 * ttl_api_policy_by_id
 *		The policy with this id, or NULL.
 */
static TtlPolicy *
ttl_api_policy_by_id(int32 id)
{
	ListCell   *lc;

	foreach(lc, ttl_load_policies(CurrentMemoryContext))
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);

		if (p->id == id && !p->citus_copy)
			return p;
	}
	return NULL;
}

/*
 * ttl_index_check_policy(policy_id integer[, command text]) returns void
 *		Called by the ALTER TABLE event trigger for each policy whose table
 *		or archive table was altered, and by the CREATE INDEX one for each
 *		anonymize policy on the index's table or one of its ancestors
 *		(command: the command's tag; ALTER TABLE without it): raise an
 *		error, which undoes the command, when the policy can no longer work
 *		as the tables now are (a column type it cannot use, a filter that
 *		no longer parses because a column it names was renamed or dropped,
 *		an archive table that no longer takes the table's columns, or that
 *		is no longer the table owner's, a set column that can no longer
 *		store its value or that is now unique).  The error names the policy.
 *
 *		Only the policy's owner (a role with the rights of its table's
 *		owner) is refused so: a policy must not block another role's DDL on
 *		a table of its own (an archive table that changed hands).  For that
 *		role, the ALTER goes through and the policy is paused, with a
 *		WARNING.  The role is the session's (GetOuterUserId): the event
 *		trigger runs as the extension's owner.
 */
Datum
ttl_index_check_policy(PG_FUNCTION_ARGS)
{
	int32		id = PG_GETARG_INT32(0);
	char	   *command = PG_NARGS() > 1 ? text_to_cstring(PG_GETARG_TEXT_PP(1)) :
		"ALTER TABLE";
	TtlPolicy  *p = ttl_api_policy_by_id(id);
	Relation	rel;

	if (p == NULL)
		PG_RETURN_VOID();
	rel = try_relation_open(p->relid, AccessShareLock);
	if (rel == NULL)
		PG_RETURN_VOID();
	if (has_privs_of_role(GetOuterUserId(), rel->rd_rel->relowner))
	{
		ttl_api_check_one(p, rel, command);
		ttl_api_zone_follows(p, rel);
	}
	else
	{
		TtlApiCheck check = {p, rel, command};
		ErrorData  *edata = ttl_error_try(ttl_api_check_one_try, &check);

		if (edata != NULL && p->enabled)
			ttl_api_pause_policy(p, edata->message);
	}
	relation_close(rel, NoLock);
	PG_RETURN_VOID();
}

/*
 * ttl_index_archive_dropped(policy_id integer) returns void
 *		Called by the DROP event trigger for a policy whose archive table is
 *		being dropped.  Its owner is refused, as if the policy depended on
 *		the table: the policy must be dropped or changed first.  Another role
 *		(the archive table had changed hands) is not: the policy is paused.
 */
Datum
ttl_index_archive_dropped(PG_FUNCTION_ARGS)
{
	TtlPolicy  *p = ttl_api_policy_by_id(PG_GETARG_INT32(0));
	Oid			owner;

	if (p == NULL || get_rel_name(p->relid) == NULL)
		PG_RETURN_VOID();
	owner = ttl_table_owner(p->relid);
	if (has_privs_of_role(GetOuterUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop the archive table of the TTL policy on column \"%s\" of table %s",
						p->column_name, ttl_qualified_relname(p->relid)),
				 errhint("Drop the policy with ttl_drop_index() first.")));
	if (p->enabled)
		ttl_api_pause_policy(p, "its archive table was dropped");
	PG_RETURN_VOID();
}

/*
 * ttl_index_filter_functions(table regclass, filter text) returns text[]
 *		The functions a stored filter calls on the table (filter.c), for the
 *		update from 1.3 to record them for the policies it finds.  Parses
 *		in the parse environment; evaluates nothing.
 */
Datum
ttl_index_filter_functions(PG_FUNCTION_ARGS)
{
	Relation	rel = try_relation_open(PG_GETARG_OID(0), AccessShareLock);
	List	   *funcs;
	Datum	   *elems;
	int			n = 0;
	ListCell   *lc;

	if (rel == NULL)
		PG_RETURN_NULL();
	funcs = ttl_filter_functions(ttl_filter_parse(rel, text_to_cstring(PG_GETARG_TEXT_PP(1)), true));
	relation_close(rel, AccessShareLock);
	elems = palloc(sizeof(Datum) * Max(list_length(funcs), 1));
	foreach(lc, funcs)
		elems[n++] = CStringGetTextDatum(ttl_filter_function_signature(lfirst_oid(lc)));
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}
