/*-------------------------------------------------------------------------
 *
 * alter.c
 *	  What a call that changes a policy keeps.  ttl_create_index() on a
 *	  column that already has a policy, and ttl_alter_index(), change only
 *	  the options they name: an argument left out (or NULL) keeps the
 *	  policy's value, as MongoDB's collMod does; ttl_alter_index()'s
 *	  reset => '{filter, ...}' removes an option, the one way to do so.
 *
 * How: before api.c checks a call, the policy's current values are read
 * from the catalog and put, in a copy of the call's arguments, in place of
 * each NULL the call has.  The one path that checks and writes a new policy
 * then checks and writes the changed one, so that a change is checked
 * exactly as a creation is.  Which arguments were kept is remembered for
 * the time of the call (ttl_alter_was_kept): a value the policy already
 * had was checked when it was given, and a rule added since (such as the
 * stricter reading of time zones) applies to what a call gives, not to
 * what it keeps.
 *
 * The action and the option that goes with it (archive_table,
 * soft_delete_column, set_columns) travel together: a call that names any
 * of the four sets the action anew, and the options of the old action are
 * not kept.
 *
 * Locking: none of its own.  The catalog is read as the caller (it is
 * readable by every role), before api.c locks the table: two sessions
 * changing one policy at the same moment each keep what they read, and the
 * last write wins, as with two ALTER TABLE ... SET (...) on one table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"

#include "compat.h"
#include "ttl_index.h"
#include "api/api.h"
#include "policy/policy.h"

/* the arguments of ttl_create_index() and ttl_alter_index() (api.c) */
#define ALTER_FIRST_OPTION	2
#define ALTER_NOPTIONS		16

/*
 * The options, in argument order from expire_after on, as the catalog's
 * columns hold them (read as the argument's type), and whether reset =>
 * may remove them.  unit follows the column's type, action is set by
 * naming another, and time_zone is changed by naming a zone.
 */
static const struct
{
	const char *name;
	const char *column;
	bool		resettable;
}			alter_options[ALTER_NOPTIONS] =
{
	{"expire_after", "expire_after", true},
	{"batch_size", "batch_size", true},
	{"soft_delete_column", "soft_delete_column::text", true},
	{"ttl_column", "ttl_column::text", true},
	{"filter", "filter", true},
	{"unit", "unit", false},
	{"action", "action", false},
	{"archive_table", "archive_table::oid", true},
	{"rate_limit", "rate_limit", true},
	{"replication_origin", "replication_origin", true},
	{"time_zone", "time_zone", false},
	{"purge_window", "purge_window", true},
	{"max_rows", "max_rows", true},
	{"set_columns", "set_columns", true},
	{"max_bytes", "max_bytes", true},
	{"hide_expired", "hide_expired", true},
};

/* arguments of the action and its options */
#define ALTER_ARG_SOFT		4
#define ALTER_ARG_ACTION	8
#define ALTER_ARG_ARCHIVE	9
#define ALTER_ARG_SET		15

/*
 * alter_noptions
 *		How many of the options the catalog has: all but max_bytes and
 *		hide_expired in a 1.4 catalog (between installing this library and
 *		ALTER EXTENSION UPDATE).
 */
static int
alter_noptions(void)
{
	if (!ttl_catalog_has_bytes())
		return ALTER_NOPTIONS - 2;
	return ttl_catalog_has_hide() ? ALTER_NOPTIONS : ALTER_NOPTIONS - 1;
}

/* which arguments the current call kept from the policy (bit per argno) */
static uint32 alter_kept = 0;
/* which options its reset => removed (bit per argno) */
static uint32 alter_reset = 0;

/*
 * alter_arg_given
 *		Whether the call passed argument argno, not NULL.
 */
static bool
alter_arg_given(FunctionCallInfo fcinfo, int argno)
{
	return argno < fcinfo->nargs && !fcinfo->args[argno].isnull;
}

/*
 * alter_resets
 *		The options reset => names, as a bitmask of argument numbers, each
 *		checked: a known option that may be removed and that the call does
 *		not also give.
 */
static uint32
alter_resets(FunctionCallInfo fcinfo, ArrayType *reset)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	uint32		mask = 0;

	if (reset == NULL)
		return 0;
	deconstruct_array(reset, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		char	   *name;
		int			j;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("reset must not contain NULL")));
		name = TextDatumGetCString(elems[i]);
		for (j = 0; j < ALTER_NOPTIONS; j++)
			if (pg_strcasecmp(name, alter_options[j].name) == 0)
				break;
		if (j == ALTER_NOPTIONS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("\"%s\" is not an option of a TTL policy", name),
					 errhint("The options reset may remove are expire_after, batch_size, soft_delete_column, ttl_column, filter, archive_table, rate_limit, replication_origin, purge_window, max_rows, set_columns, max_bytes and hide_expired.")));
		if (!alter_options[j].resettable)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"%s\" cannot be reset", alter_options[j].name),
					 errdetail("%s",
							   j + ALTER_FIRST_OPTION == ALTER_ARG_ACTION ?
							   "A policy always has an action." :
							   j + ALTER_FIRST_OPTION == ALTER_ARG_ACTION - 1 ?
							   "The unit goes with the column's type." :
							   "A policy on a timestamp or date column is always read in a time zone."),
					 errhint("%s",
							 j + ALTER_FIRST_OPTION == ALTER_ARG_ACTION ?
							 "Name another action, for example action => 'delete'." :
							 j + ALTER_FIRST_OPTION == ALTER_ARG_ACTION - 1 ?
							 "Name another unit with unit => '...'." :
							 "Name the zone with time_zone => '...'.")));
		if (alter_arg_given(fcinfo, j + ALTER_FIRST_OPTION))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"%s\" is both given and reset", alter_options[j].name)));
		mask |= UINT32_C(1) << (j + ALTER_FIRST_OPTION);
	}
	return mask;
}

/*
 * alter_read_policy
 *		The policy's options as the catalog holds them, one Datum per option
 *		(isnull when the option is not set), copied into the caller's memory
 *		context.  Returns false when the column has no policy.
 */
static bool
alter_read_policy(Oid relid, AttrNumber attnum, Datum *values, bool *isnull)
{
	MemoryContext cxt = CurrentMemoryContext;
	StringInfoData sql;
	Oid			argtypes[2] = {OIDOID, INT2OID};
	Datum		args[2];
	bool		found;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (int j = 0; j < alter_noptions(); j++)
		appendStringInfo(&sql, "%s%s", j > 0 ? ", " : "", alter_options[j].column);
	appendStringInfo(&sql, " FROM %s WHERE relid = $1 AND attnum = $2",
					 ttl_catalog_relname());
	args[0] = ObjectIdGetDatum(relid);
	args[1] = Int16GetDatum(attnum);

	SPI_connect();
	if (SPI_execute_with_args(sql.data, 2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the TTL policy of relation %u", relid);
	found = SPI_processed == 1;
	for (int j = 0; found && j < alter_noptions(); j++)
	{
		Oid			type = SPI_gettypeid(SPI_tuptable->tupdesc, j + 1);
		int16		typlen;
		bool		typbyval;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									  j + 1, &isnull[j]);
		MemoryContext old;

		get_typlenbyval(type, &typlen, &typbyval);
		old = MemoryContextSwitchTo(cxt);
		values[j] = isnull[j] ? (Datum) 0 : datumCopy(d, typbyval, typlen);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return found;
}

/*
 * ttl_alter_keep
 *		For a call of ttl_create_index() or ttl_alter_index() on table and
 *		column (arguments 0 and 1): if the column has a policy, a copy of
 *		the call's arguments in which each option the call leaves NULL
 *		holds the policy's value, but those reset names and the options of
 *		an action the call replaces; else the call as it is.  *exists says
 *		whether there is a policy; *expire_after is the TTL to use when the
 *		call gives none (the policy's, NULL when it has none or there is no
 *		policy).  Call it once at the start of every call: it also resets
 *		what ttl_alter_was_kept answers.
 */
FunctionCallInfo
ttl_alter_keep(FunctionCallInfo fcinfo, ArrayType *reset, bool *exists,
			   Interval **expire_after)
{
	FunctionCallInfo copy;
	Datum		values[ALTER_NOPTIONS];
	bool		isnull[ALTER_NOPTIONS];
	uint32		resets;
	bool		new_action;
	AttrNumber	attnum;
	char	   *colname;

	alter_kept = 0;
	alter_reset = 0;
	*exists = false;
	*expire_after = NULL;

	/* a call through an older version's SQL definition changes as it did */
	if (fcinfo->nargs < ALTER_FIRST_OPTION + alter_noptions() || !ttl_catalog_has_rules())
		return fcinfo;

	resets = alter_resets(fcinfo, reset);
	alter_reset = resets;
	colname = text_to_cstring(DatumGetTextPP(fcinfo->args[1].value));
	attnum = get_attnum(DatumGetObjectId(fcinfo->args[0].value), colname);
	if (attnum == InvalidAttrNumber ||
		!alter_read_policy(DatumGetObjectId(fcinfo->args[0].value), attnum, values, isnull))
		return fcinfo;
	*exists = true;

	copy = palloc(SizeForFunctionCallInfo(fcinfo->nargs));
	memcpy(copy, fcinfo, SizeForFunctionCallInfo(fcinfo->nargs));

	new_action = alter_arg_given(fcinfo, ALTER_ARG_ACTION) ||
		alter_arg_given(fcinfo, ALTER_ARG_SOFT) ||
		alter_arg_given(fcinfo, ALTER_ARG_ARCHIVE) ||
		alter_arg_given(fcinfo, ALTER_ARG_SET) ||
		(resets & ((UINT32_C(1) << ALTER_ARG_SOFT) | (UINT32_C(1) << ALTER_ARG_ARCHIVE) |
				   (UINT32_C(1) << ALTER_ARG_SET))) != 0;
	for (int j = 0; j < alter_noptions(); j++)
	{
		int			argno = j + ALTER_FIRST_OPTION;
		bool		of_action = argno == ALTER_ARG_ACTION || argno == ALTER_ARG_SOFT ||
			argno == ALTER_ARG_ARCHIVE || argno == ALTER_ARG_SET;

		if (alter_arg_given(fcinfo, argno) || isnull[j] ||
			(resets & (UINT32_C(1) << argno)) != 0 || (of_action && new_action))
			continue;
		if (argno == ALTER_FIRST_OPTION)
		{
			/* the TTL's argument type differs between the forms: the caller uses it */
			*expire_after = DatumGetIntervalP(values[j]);
			alter_kept |= UINT32_C(1) << argno;
			continue;
		}
		copy->args[argno].value = values[j];
		copy->args[argno].isnull = false;
		alter_kept |= UINT32_C(1) << argno;
	}
	return copy;
}

/*
 * ttl_alter_was_kept
 *		Whether the current call's argument argno holds the policy's value,
 *		kept by ttl_alter_keep, rather than one the call gave.
 */
bool
ttl_alter_was_kept(int argno)
{
	return argno < 32 && (alter_kept & (UINT32_C(1) << argno)) != 0;
}

/*
 * ttl_alter_was_reset
 *		Whether the current call's reset => removed the option of argument
 *		argno.
 */
bool
ttl_alter_was_reset(int argno)
{
	return argno < 32 && (alter_reset & (UINT32_C(1) << argno)) != 0;
}
