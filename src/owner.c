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
 *	2. then ALTER ROLE ALL SET, ALTER DATABASE SET, ALTER ROLE owner SET,
 *	   ALTER ROLE owner IN DATABASE SET, each overriding the one before, as
 *	   at login (any setting there, not only those of the list);
 *	3. then the settings the purge itself relies on, whatever 1 and 2 say:
 *	   session_replication_role = origin (triggers and foreign-key actions
 *	   always fire), row_security = on, lock_timeout =
 *	   ttl_index.lock_timeout, statement_timeout and the idle and
 *	   transaction timeouts off.
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
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "ttl_index.h"

/*
 * The settings whose server-wide value the owner's code starts from (step
 * 1 above): those that change what SQL means or prints.  The launcher
 * publishes their values (shmem.c).
 */
const char *const ttl_server_setting_names[] = {
	"search_path",
	"TimeZone",
	"DateStyle",
	"IntervalStyle",
	"extra_float_digits",
	"standard_conforming_strings",
	"bytea_output",
	"lc_monetary",
	"lc_numeric",
	"lc_time",
	"default_text_search_config",
	"array_nulls",
	"backslash_quote",
	"xmlbinary",
	"xmloption"
};
const int	ttl_server_setting_count = lengthof(ttl_server_setting_names);

/* settings the owner's role or database cannot change for the purge */
static const char *const ttl_pinned_names[] = {
	"session_replication_role",
	"row_security",
	"lock_timeout",
	"statement_timeout",
	"idle_in_transaction_session_timeout",
	"idle_session_timeout",
	"transaction_timeout",
	"default_transaction_isolation",
	"default_transaction_read_only",
	"default_transaction_deferrable",
	"transaction_isolation",
	"transaction_read_only",
	"transaction_deferrable",
	"role",
	"session_authorization",
	/* set for the batch's full-page images by the worker (wal.c) */
	"wal_compression"
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
	HeapTuple	tup;
	Oid			owner;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
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

static bool
ttl_pinned(const char *name)
{
	for (int i = 0; i < lengthof(ttl_pinned_names); i++)
	{
		if (pg_strcasecmp(name, ttl_pinned_names[i]) == 0)
			return true;
	}
	return false;
}

/*
 * ttl_apply_role_settings
 *		Apply the pg_db_role_setting entry of (database, role), if any,
 *		skipping the pinned settings.
 */
static void
ttl_apply_role_settings(Relation rel, Snapshot snapshot, Oid dboid, Oid roleid)
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
				if (!ttl_pinned(name))
					ttl_set(name, value);
			}
			pfree(name);
		}
	}
	systable_endscan(scan);
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
	Relation	rel;
	Snapshot	snapshot;

	GetUserIdAndSecContext(&save->userid, &save->sec_context);
	SetUserIdAndSecContext(owner, save->sec_context | SECURITY_RESTRICTED_OPERATION);
	save->nestlevel = NewGUCNestLevel();

	/* 1. the server-wide values */
	for (int i = 0; i < ttl_server_setting_count; i++)
		ttl_set(ttl_server_setting_names[i],
				ttl_server_setting(ttl_server_setting_names[i]));

	/* 2. as at login, the most specific last */
	rel = table_open(DbRoleSettingRelationId, AccessShareLock);
	snapshot = RegisterSnapshot(GetCatalogSnapshot(DbRoleSettingRelationId));
	ttl_apply_role_settings(rel, snapshot, InvalidOid, InvalidOid);
	ttl_apply_role_settings(rel, snapshot, MyDatabaseId, InvalidOid);
	ttl_apply_role_settings(rel, snapshot, InvalidOid, owner);
	ttl_apply_role_settings(rel, snapshot, MyDatabaseId, owner);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);

	/* 3. the purge's own */
	ttl_set("session_replication_role", "origin");
	ttl_set("row_security", "on");
	snprintf(timeout, sizeof(timeout), "%d", ttl_lock_timeout);
	ttl_set("lock_timeout", timeout);
	ttl_set("statement_timeout", "0");
	ttl_set("idle_in_transaction_session_timeout", "0");
	ttl_set("idle_session_timeout", "0");
#if PG_VERSION_NUM >= 170000
	ttl_set("transaction_timeout", "0");
#endif
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
 * ttl_pin_process_settings
 *		The settings of a worker or a helper process, pinned as autovacuum
 *		does: whatever ALTER DATABASE or ALTER ROLE says, the process's own
 *		work runs with these.  (Batches run with the table owner's settings,
 *		and pin again what they rely on: ttl_owner_enter.)
 */
void
ttl_pin_process_settings(const char *application_name)
{
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
