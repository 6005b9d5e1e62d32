/*-------------------------------------------------------------------------
 *
 * owner.c
 *	  The rights and settings under which user code runs, and those under
 *	  which ttl_index parses the SQL text it stores.
 *
 * The owner's environment (ttl_owner_enter).  Everything a purge runs that
 * a table owner wrote (the filter, triggers, foreign-key actions, defaults,
 * index expressions, the archive table's triggers) runs as the owner of the
 * policy's table, in a SECURITY_RESTRICTED_OPERATION, as VACUUM does: with
 * the owner's rights, never those of whoever started the purge (the worker
 * is the bootstrap superuser; ttl_runner() and the views run as their
 * caller).  The settings are those the owner gets when logging in to this
 * database, so that the owner's code behaves as in a DELETE of the owner's:
 *
 *	1. the server-wide values of the settings user code depends on (the
 *	   list below), as the launcher read them from the configuration: the
 *	   caller's session settings (SET TimeZone, SET search_path, a role's
 *	   own settings) never leak in;
 *	   Custom settings the caller's session holds (SET app.secret, its
 *	   role's own: placeholders of no module) are emptied;
 *	2. then ALTER ROLE ALL SET, ALTER DATABASE SET, ALTER ROLE owner SET,
 *	   ALTER ROLE owner IN DATABASE SET, each overriding the one before, as
 *	   at login, for the settings that change what the owner's SQL means
 *	   or writes (those of the list, a few more, and custom settings such
 *	   as app.tenant: ttl_owner_setting_names); the others (exit_on_error,
 *	   application_name, logging, memory, ...) are the process's, and one
 *	   owner's role settings must not reach the process or another owner's
 *	   batches;
 *	3. then the settings the purge itself relies on, whatever 1 and 2 say:
 *	   session_replication_role = origin (triggers and foreign-key actions
 *	   always fire), row_security = on, exit_on_error = off, lock_timeout =
 *	   ttl_index.lock_timeout, statement_timeout and the idle and
 *	   transaction timeouts off (a batch has its own bound:
 *	   ttl_index.batch_timeout, worker.c).
 *
 * No escalation: the owner could run the same code, with the same
 * settings, by logging in and deleting the rows; the purge adds no right.
 * All of it is undone when the batch ends (a GUC nest level), so nothing
 * the owner's code sets, even with set_config(..., false), outlives it.
 *
 * The parse environment (ttl_parse_env_enter).  A filter is stored as the
 * text PostgreSQL deparses (filter.c), and parsed again from that text by
 * the purge, the views and the statement of the executor path.  Both sides
 * run with search_path = pg_catalog, pg_temp, DateStyle = ISO, YMD,
 * IntervalStyle = postgres, extra_float_digits = 1 and lc_monetary = C, so
 * the text means the same whoever's session reads it: no operator planted
 * in a schema on the caller's search_path, no date read day-first.
 *
 * A relation's owner is read from a copy of its pg_class row
 * (ttl_rel_class), which the other files of the policy floor, and those
 * above, read too.
 *
 * pg_db_role_setting is read here alone: the owner's login settings, a
 * former job's (ttl_login_setting), and whether ALTER DATABASE paused a
 * database (ttl_database_paused, the workers' and the views' question).
 *
 * Locking: none; the published server settings are read through shmem.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_db_role_setting.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "ttl_index.h"
#include "env/env.h"
#include "shared/shared.h"

/*
 * The settings an owner's role or database settings may give the owner's
 * code (step 2): besides those of the list above, the ones that change what
 * its SQL means or writes, and custom settings (a name with a dot, such as
 * app.tenant, which row-level security policies and triggers read with
 * current_setting()).  Every other setting stays at the server's value for
 * the batch, whatever the role says: exit_on_error would turn the batch's
 * errors into the end of the process, application_name, the log_* settings
 * and client_min_messages are the process's, work_mem and the like its
 * resources, and the timeouts, role and replication settings are pinned
 * below.
 */
static const char *const ttl_owner_setting_names[] = {
	"timezone_abbreviations",
	"escape_string_warning",
	"quote_all_identifiers",
	"transform_null_equals",
	"check_function_bodies",
	"default_tablespace",
	"temp_tablespaces",
	"default_table_access_method",
	"default_toast_compression"
};

/*
 * The settings the purge sets for itself (step 3), whatever anyone's
 * settings say.  The owner's code can still change them while it runs;
 * everything it sets is undone when the batch ends.
 */
static const char *const ttl_pinned_names[][2] = {
	{"session_replication_role", "origin"},
	{"row_security", "on"},
	{"statement_timeout", "0"},
	{"idle_in_transaction_session_timeout", "0"},
	{"idle_session_timeout", "0"},
	{"transaction_timeout", "0"},
	{"exit_on_error", "off"}
};

/*
 * ttl_server_setting
 *		The server-wide value of a setting of the list: as the launcher
 *		published it, or, without one (the library not preloaded, or the
 *		launcher not started yet), this session's reset value.  Returns a
 *		palloc'd string.
 */
const char *
ttl_server_setting(const char *name)
{
	char		buf[1024];
	const char *v;

	if (ttl_shmem_published_setting(name, buf, sizeof(buf)))
		return pstrdup(buf);
	v = GetConfigOptionResetString(name);
	return pstrdup(v ? v : "");
}

/*
 * ttl_table_owner
 *		The owner of a relation; an error if it is gone.
 */
Oid
ttl_table_owner(Oid relid)
{
	Oid			owner = ttl_table_owner_if_exists(relid);

	if (!OidIsValid(owner))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	return owner;
}

/*
 * ttl_table_owner_if_exists
 *		The owner of a relation, or InvalidOid if it is gone: one a
 *		concurrent DROP removed while its policy row was still visible to
 *		the caller's snapshot (no lock is held on it here).
 */
Oid
ttl_table_owner_if_exists(Oid relid)
{
	FormData_pg_class form;

	return ttl_rel_class(relid, &form) ? form.relowner : InvalidOid;
}

/*
 * ttl_rel_class
 *		A copy of a relation's pg_class row (its fixed part) into *form,
 *		from the syscache; false, *form untouched, if it is gone.  No lock
 *		is taken: a concurrent DROP may remove it at any time.
 */
bool
ttl_rel_class(Oid relid, FormData_pg_class *form)
{
	HeapTuple	tup;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return false;
	memcpy(form, GETSTRUCT(tup), CLASS_TUPLE_SIZE);
	ReleaseSysCache(tup);
	return true;
}

/*
 * ttl_set
 *		Set a setting within the current GUC nest level, quietly: a value the
 *		server refuses (a setting that cannot change now, an unknown one) is
 *		left alone.
 */
static void
ttl_set(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, DEBUG1, false);
}

/*
 * ttl_owner_empty_placeholders
 *		Empty every custom setting that no module defines (a placeholder:
 *		app.tenant, ops.token) and that holds a value in this session: those
 *		are the caller's (ttl_runner() runs in the caller's session), which
 *		the owner's code must not read.  The owner's own come back in step
 *		2 of ttl_owner_enter.
 */
static void
ttl_owner_empty_placeholders(void)
{
	struct config_generic **vars;
	int			n;
	List	   *names = NIL;
	ListCell   *lc;

	vars = ttl_guc_variables(&n);
	for (int i = 0; i < n; i++)
	{
		struct config_generic *var = vars[i];
		const char *value;

		if ((var->flags & GUC_CUSTOM_PLACEHOLDER) == 0 ||
			var->vartype != PGC_STRING)
			continue;

		/*
		 * The value through the GUC API: the layout of a string variable's
		 * own fields is not the same in every version (19 moved them into
		 * a union inside config_generic).
		 */
		value = GetConfigOption(var->name, true, false);
		if (value == NULL || value[0] == '\0')
			continue;
		names = lappend(names, pstrdup(var->name));
	}
	/* set after the walk: setting may reorder the variables */
	foreach(lc, names)
		ttl_set((const char *) lfirst(lc), "");
	list_free_deep(names);
}

/*
 * ttl_owner_may_set
 *		Whether a setting of the owner's role or database reaches the
 *		owner's code in a batch (see ttl_owner_setting_names).
 */
static bool
ttl_owner_may_set(const char *name)
{
	for (int i = 0; i < ttl_server_setting_count; i++)
	{
		if (pg_strcasecmp(name, ttl_server_setting_names[i]) == 0)
			return true;
	}
	for (int i = 0; i < lengthof(ttl_owner_setting_names); i++)
	{
		if (pg_strcasecmp(name, ttl_owner_setting_names[i]) == 0)
			return true;
	}
	/* a custom setting, but not ours */
	return strchr(name, '.') != NULL &&
		pg_strncasecmp(name, TTL_EXTENSION_NAME ".", strlen(TTL_EXTENSION_NAME) + 1) != 0;
}

/* what to do with each "name=value" of a pg_db_role_setting entry */
typedef void (*TtlRoleSettingFn) (const char *name, const char *value, void *arg);

/*
 * ttl_role_settings_walk
 *		Call fn for each setting of the pg_db_role_setting entry of
 *		(database, role), if any, in the order ALTER ... SET stored them.
 */
static void
ttl_role_settings_walk(Relation rel, Snapshot snapshot, Oid dboid, Oid roleid,
					   TtlRoleSettingFn fn, void *arg)
{
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;

	ScanKeyInit(&keys[0], Anum_pg_db_role_setting_setdatabase,
				BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(dboid));
	ScanKeyInit(&keys[1], Anum_pg_db_role_setting_setrole,
				BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(roleid));
	scan = systable_beginscan(rel, DbRoleSettingDatidRolidIndexId, true,
							  snapshot, 2, keys);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_db_role_setting_setconfig,
									 RelationGetDescr(rel), &isnull);
		ArrayType  *a;
		Datum	   *elems;
		int			nelems;

		if (isnull)
			continue;
		a = DatumGetArrayTypeP(d);
		deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &nelems);
		for (int i = 0; i < nelems; i++)
		{
			/* "name=value", as ALTER ROLE ... SET stores it */
			char	   *name = TextDatumGetCString(elems[i]);
			char	   *value = strchr(name, '=');

			if (value != NULL)
			{
				*value++ = '\0';
				fn(name, value, arg);
			}
			pfree(name);
		}
	}
	systable_endscan(scan);
}

/*
 * ttl_login_walk
 *		Call fn for every setting a login of role into database gets from
 *		pg_db_role_setting, least specific first (ALTER ROLE ALL SET, ALTER
 *		DATABASE SET, ALTER ROLE SET, ALTER ROLE IN DATABASE SET), so that a
 *		later call overrides an earlier one, as at login.
 */
static void
ttl_login_walk(Oid dboid, Oid roleid, TtlRoleSettingFn fn, void *arg)
{
	Relation	rel;
	Snapshot	snapshot;

	rel = table_open(DbRoleSettingRelationId, AccessShareLock);
	snapshot = RegisterSnapshot(GetCatalogSnapshot(DbRoleSettingRelationId));
	ttl_role_settings_walk(rel, snapshot, InvalidOid, InvalidOid, fn, arg);
	ttl_role_settings_walk(rel, snapshot, dboid, InvalidOid, fn, arg);
	ttl_role_settings_walk(rel, snapshot, InvalidOid, roleid, fn, arg);
	ttl_role_settings_walk(rel, snapshot, dboid, roleid, fn, arg);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
}

/* ttl_login_walk callback of ttl_owner_enter: apply what the owner may set */
static void
ttl_apply_owner_setting(const char *name, const char *value, void *arg)
{
	if (ttl_owner_may_set(name))
		ttl_set(name, value);
}

/* ttl_login_walk callback of ttl_login_setting: remember one setting */
typedef struct TtlFindSetting
{
	const char *name;
	char	   *value;
} TtlFindSetting;

static void
ttl_find_setting(const char *name, const char *value, void *arg)
{
	TtlFindSetting *find = (TtlFindSetting *) arg;

	if (pg_strcasecmp(name, find->name) == 0)
		find->value = pstrdup(value);
}

/*
 * ttl_login_setting
 *		The value a setting of the server-wide list (ttl_server_setting_names)
 *		has in a session of role opened in database: its pg_db_role_setting
 *		entries, most specific first, else the server-wide value.  What the
 *		importers read a former job's or worker's rows with (a session opened
 *		by pg_cron, or by pg_ttl_index's worker, took these).  Returns a
 *		palloc'd string.
 */
char *
ttl_login_setting(Oid dboid, Oid roleid, const char *name)
{
	TtlFindSetting find;

	find.name = name;
	find.value = NULL;
	ttl_login_walk(dboid, roleid, ttl_find_setting, &find);
	if (find.value != NULL)
		return find.value;
	return (char *) ttl_server_setting(name);
}

/* ttl_role_settings_walk callback of ttl_database_paused */
static void
ttl_find_enabled(const char *name, const char *value, void *arg)
{
	bool		enabled;

	/* a value the GUC machinery did not check (set before a load) counts not */
	if (pg_strcasecmp(name, "ttl_index.enabled") == 0 &&
		parse_bool(value, &enabled))
		*(bool *) arg = !enabled;
}

/*
 * ttl_database_paused
 *		Whether ALTER DATABASE ... SET ttl_index.enabled = off pauses a
 *		database: its own entry of pg_db_role_setting (setrole = 0, which
 *		ALTER ROLE ALL IN DATABASE writes too), one index look-up, in a
 *		transaction.  The role entries and the server-wide one (ALTER ROLE
 *		[ALL] SET) are not read: the workers do not obey them (settings.c).
 */
bool
ttl_database_paused(Oid dboid)
{
	Relation	rel;
	Snapshot	snapshot;
	bool		paused = false;

	rel = table_open(DbRoleSettingRelationId, AccessShareLock);
	snapshot = RegisterSnapshot(GetCatalogSnapshot(DbRoleSettingRelationId));
	ttl_role_settings_walk(rel, snapshot, dboid, InvalidOid, ttl_find_enabled, &paused);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return paused;
}

/*
 * ttl_owner_enter
 *		Act as `owner`, with the owner's login settings and the purge's pins
 *		(see the top of the file), until ttl_owner_leave().
 */
void
ttl_owner_enter(Oid owner, TtlOwnerSave *save)
{
	char		timeout[32];

	GetUserIdAndSecContext(&save->userid, &save->sec_context);
	SetUserIdAndSecContext(owner, save->sec_context | SECURITY_RESTRICTED_OPERATION);
	save->nestlevel = NewGUCNestLevel();

	/* 1. the server-wide values */
	for (int i = 0; i < ttl_server_setting_count; i++)
		ttl_set(ttl_server_setting_names[i],
				ttl_server_setting(ttl_server_setting_names[i]));

	/* ... and no custom setting of the caller's */
	ttl_owner_empty_placeholders();

	/* 2. as at login, the most specific last, those the owner may set */
	ttl_login_walk(MyDatabaseId, owner, ttl_apply_owner_setting, NULL);

	/* 3. the purge's own (a setting this server lacks is left alone) */
	for (int i = 0; i < lengthof(ttl_pinned_names); i++)
		ttl_set(ttl_pinned_names[i][0], ttl_pinned_names[i][1]);
	snprintf(timeout, sizeof(timeout), "%d", ttl_lock_timeout);
	ttl_set("lock_timeout", timeout);
}

/*
 * ttl_owner_release_session_locks
 *		After a batch of the worker or a helper, once its transaction has
 *		ended: release the session-level advisory locks the owner's code
 *		took (pg_advisory_lock), which would otherwise outlive the batch in
 *		the process and block whoever waits for them, the owner's other
 *		sessions or another owner's code.  The process takes none of its
 *		own.  (ttl_runner() leaves its caller's session alone: its locks and
 *		the owner's cannot be told apart there.)
 */
void
ttl_owner_release_session_locks(void)
{
	LockReleaseSession(USER_LOCKMETHOD);
}

/*
 * ttl_owner_leave
 *		Undo ttl_owner_enter: our own user and settings again, and whatever
 *		the owner's code set undone.
 */
void
ttl_owner_leave(TtlOwnerSave *save)
{
	AtEOXact_GUC(false, save->nestlevel);
	SetUserIdAndSecContext(save->userid, save->sec_context);
}

/*
 * ttl_parse_env_enter
 *		Pin the settings stored SQL text is parsed and deparsed under (see
 *		the top of the file).  Returns the nest level for
 *		ttl_parse_env_leave().
 */
int
ttl_parse_env_enter(void)
{
	int			nestlevel = NewGUCNestLevel();

	ttl_set("search_path", "pg_catalog, pg_temp");
	ttl_set("DateStyle", "ISO, YMD");
	ttl_set("IntervalStyle", "postgres");
	ttl_set("extra_float_digits", "1");
	ttl_set("lc_monetary", "C");
	ttl_set("standard_conforming_strings", "on");
	return nestlevel;
}

void
ttl_parse_env_leave(int nestlevel)
{
	AtEOXact_GUC(true, nestlevel);
}

/*
 * ttl_as_extension_owner
 *		Run a statement on the extension's catalog as the extension's
 *		owner, in the parse environment above: the API's catalog writes
 *		(api.c) and the Citus hook's reads and writes (citus_follow.c), for
 *		callers with no right on the extension's schema.  Not read-only, so
 *		the snapshot sees what the transaction has done so far.  Returns
 *		SPI's result code; the caller is connected to SPI and reads SPI_*.
 */
int
ttl_as_extension_owner(const char *sql, int nargs, Oid *argtypes,
					   Datum *values, const char *nulls)
{
	Oid			save_userid;
	int			save_sec_context;
	int			nestlevel;
	Oid			extowner = InvalidOid;
	int			ret;

	if (!ttl_extension_info(NULL, &extowner))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"%s\" is not installed in this database",
						TTL_EXTENSION_NAME)));
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(extowner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	nestlevel = ttl_parse_env_enter();
	ret = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);
	ttl_parse_env_leave(nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return ret;
}

/*
 * ttl_owner_check_exit_on_error
 *		Check hook of exit_on_error in a worker or a helper process: off
 *		only.  Owner code that sets it (SET, set_config(), a function's SET
 *		clause) gets an error, which fails its own batch, instead of
 *		turning that batch's next error into the end of the process and
 *		stalling every other owner's policies in the database.
 */
static bool
ttl_owner_check_exit_on_error(bool *newval, void **extra, GucSource source)
{
	if (!*newval)
		return true;
	GUC_check_errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM);
	GUC_check_errdetail("The ttl_index worker runs table owners' code with exit_on_error off.");
	return false;
}

/*
 * ttl_owner_guard_exit_on_error
 *		Give this process's exit_on_error the check hook above (it has none
 *		of its own).  exit_on_error is a user setting: pinning it off when a
 *		batch starts (ttl_owner_enter) does not stop the owner's code from
 *		setting it on again, and then its next error would end the process
 *		(elog.c promotes ERROR to FATAL).  Only this process's copy of the
 *		setting's definition is changed.
 */
static void
ttl_owner_guard_exit_on_error(void)
{
	struct config_generic **vars;
	int			nvars;

	vars = ttl_guc_variables(&nvars);
	for (int i = 0; i < nvars; i++)
	{
		if (vars[i]->vartype == PGC_BOOL &&
			pg_strcasecmp(vars[i]->name, "exit_on_error") == 0)
		{
			TTL_GUC_BOOL(vars[i])->check_hook = ttl_owner_check_exit_on_error;
			return;
		}
	}
	elog(ERROR, "setting \"exit_on_error\" not found");
}

/*
 * ttl_pin_process_settings
 *		The settings of a worker or a helper process, pinned as autovacuum
 *		does: whatever ALTER DATABASE or ALTER ROLE says, the process's own
 *		work runs with these.  (Batches run with the table owner's settings,
 *		and pin again what they rely on: ttl_owner_enter.)
 */
void
ttl_pin_process_settings(const char *application_name)
{
	ttl_owner_guard_exit_on_error();
	SetConfigOption("exit_on_error", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("search_path", "", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed",
					PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("session_replication_role", "origin", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("statement_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("idle_in_transaction_session_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_deferrable", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("row_security", "on", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("application_name", application_name, PGC_SUSET, PGC_S_OVERRIDE);
	/* live table counters for ttl_worker_admit, never a cached snapshot */
	SetConfigOption("stats_fetch_consistency", "none", PGC_SUSET, PGC_S_OVERRIDE);
}
