/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The differences between the PostgreSQL versions ttl_index builds
 *	  against (15 to 19), in one place.
 *
 * Every guard tests the version that changed the API (PG_VERSION_NUM), not
 * the versions we happen to test, so a version or a minor release in
 * between builds with the same code.  Each shim names the upstream change.
 * Code outside this file calls the names defined here and carries no
 * version test of its own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_COMPAT_H
#define TTL_COMPAT_H

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/xact.h"
#include "access/xlogdefs.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/fmgrprotos.h"
#include "utils/wait_event.h"

#if PG_VERSION_NUM >= 160000
#include "nodes/miscnodes.h"
#endif
#include "utils/rangetypes.h"

#if PG_VERSION_NUM < 150000
#error "ttl_index needs PostgreSQL 15 or later"
#endif

/*
 * PostgreSQL 15.4 (the minor releases of August 2023, "Handle DROP DATABASE
 * getting interrupted") marks a database whose DROP DATABASE was
 * interrupted as invalid (datconnlimit -2), tested by
 * database_is_invalid_form().  Before 15.4 there were no invalid databases.
 */
#if PG_VERSION_NUM >= 150004
#define ttl_database_is_invalid_form(datform) \
	database_is_invalid_form(datform)
#else
#define ttl_database_is_invalid_form(datform)	((void) (datform), false)
#endif

/*
 * PostgreSQL 16 replaced the per-catalog ownership and privilege checks
 * (pg_class_ownercheck, pg_namespace_aclcheck, ...) with
 * object_ownercheck(classid, ...) and object_aclcheck(classid, ...).
 */
#if PG_VERSION_NUM >= 160000
#define ttl_rel_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#define ttl_database_ownercheck(dboid, roleid) \
	object_ownercheck(DatabaseRelationId, (dboid), (roleid))
#define ttl_namespace_aclcheck(nspoid, roleid, mode) \
	object_aclcheck(NamespaceRelationId, (nspoid), (roleid), (mode))
#define ttl_extension_ownercheck(extoid, roleid) \
	object_ownercheck(ExtensionRelationId, (extoid), (roleid))
#else
#define ttl_rel_ownercheck(relid, roleid) \
	pg_class_ownercheck((relid), (roleid))
#define ttl_database_ownercheck(dboid, roleid) \
	pg_database_ownercheck((dboid), (roleid))
#define ttl_namespace_aclcheck(nspoid, roleid, mode) \
	pg_namespace_aclcheck((nspoid), (roleid), (mode))
#define ttl_extension_ownercheck(extoid, roleid) \
	pg_extension_ownercheck((extoid), (roleid))
#endif

/*
 * PostgreSQL 17 moved the local transaction id into the virtual
 * transaction id of PGPROC (MyProc->vxid.lxid).
 */
#if PG_VERSION_NUM >= 170000
#define TTL_MY_LXID		(MyProc->vxid.lxid)
#else
#define TTL_MY_LXID		(MyProc->lxid)
#endif

/*
 * PostgreSQL 18 gave index_beginscan() an instrumentation argument (NULL:
 * none), and 19 a flags argument (ScanOptions for the table fetches).  The
 * only flag a caller may give, SO_HINT_REL_READ_ONLY ("the statement does
 * not modify the relation"), lets a read prune a page and set it
 * all-visible in the visibility map; ttl_index's index scans read the rows
 * a batch deletes (batch.c) or is about to (probe.c), so they give none:
 * setting the bit would only make the delete clear it again.
 */
#if PG_VERSION_NUM >= 190000
#define ttl_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys), SO_NONE)
#elif PG_VERSION_NUM >= 180000
#define ttl_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys))
#else
#define ttl_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), (norderbys))
#endif

/*
 * A sequential scan of a table the statement only reads (import.c reads
 * pg_ttl_index's table): PostgreSQL 19 gave table_beginscan() a flags
 * argument, where SO_HINT_REL_READ_ONLY says so and lets the scan set the
 * pages it prunes all-visible.  Before 19 there is no such hint.
 */
#if PG_VERSION_NUM >= 190000
#define ttl_table_beginscan_read_only(rel, snapshot) \
	table_beginscan((rel), (snapshot), 0, NULL, SO_HINT_REL_READ_ONLY)
#else
#define ttl_table_beginscan_read_only(rel, snapshot) \
	table_beginscan((rel), (snapshot), 0, NULL)
#endif

/*
 * PostgreSQL 19 replaced the last argument of table_tuple_delete(), bool
 * changingPart, with a bitmask of options (TABLE_DELETE_CHANGING_PARTITION,
 * TABLE_DELETE_NO_LOGICAL) given after the command id.  The shim takes 19's
 * arguments; ttl_index gives no option (its deletes are decoded like any
 * other), and before 19 none exists but changingPart, which is false.
 */
#if PG_VERSION_NUM >= 190000
#define ttl_table_tuple_delete(rel, tid, cid, options, snapshot, crosscheck, wait, tmfd) \
	table_tuple_delete((rel), (tid), (cid), (options), (snapshot), (crosscheck), \
					   (wait), (tmfd))
#else
#define ttl_table_tuple_delete(rel, tid, cid, options, snapshot, crosscheck, wait, tmfd) \
	(AssertMacro((options) == 0), \
	 table_tuple_delete((rel), (tid), (cid), (snapshot), (crosscheck), (wait), \
						(tmfd), false))
#endif

/*
 * PostgreSQL 17 dropped the snapshot argument of _bt_get_endpoint() (the
 * leaf at one end of a btree, returned pinned and share-locked).
 */
#if PG_VERSION_NUM >= 170000
#define ttl_bt_leftmost_leaf(irel)	_bt_get_endpoint((irel), 0, false)
#else
#define ttl_bt_leftmost_leaf(irel)	_bt_get_endpoint((irel), 0, false, NULL)
#endif

/*
 * PostgreSQL 18 removed the execute_once argument of ExecutorRun().
 */
#if PG_VERSION_NUM >= 180000
#define ttl_ExecutorRun(qd, dir, count) ExecutorRun((qd), (dir), (count))
#else
#define ttl_ExecutorRun(qd, dir, count) ExecutorRun((qd), (dir), (count), true)
#endif

/*
 * PostgreSQL 17 lets an extension name its own wait events, shown in
 * pg_stat_activity.wait_event (WaitEventExtensionNew); before, every wait
 * of an extension is "Extension".
 */
#if PG_VERSION_NUM >= 170000
#define TTL_HAVE_NAMED_WAIT_EVENTS 1
#endif

/*
 * Replication origins (origin.c): PostgreSQL 18 counts the origins in use
 * against max_active_replication_origins, earlier versions against
 * max_replication_slots; replorigin_session_setup() asserts the count is
 * not 0.  From 16 it also takes the pid that acquired the origin (0: us).
 */
#if PG_VERSION_NUM >= 180000
#define TTL_ORIGIN_CAPACITY		max_active_replication_origins
#define TTL_ORIGIN_CAPACITY_NAME "max_active_replication_origins"
#else
#define TTL_ORIGIN_CAPACITY		max_replication_slots
#define TTL_ORIGIN_CAPACITY_NAME "max_replication_slots"
#endif

/*
 * PostgreSQL 19 renamed RepOriginId and InvalidRepOriginId to ReplOriginId
 * and InvalidReplOriginId, and moved the origin a transaction is marked with
 * from replorigin_session_origin into replorigin_xact_state (with the
 * remote LSN and time that went along with it).  The code uses 19's names;
 * before 19 they are the old ones.  TTL_XACT_ORIGIN is the variable
 * (assignable) that marks the next transaction's WAL and commit.
 */
#if PG_VERSION_NUM >= 190000
#define TTL_XACT_ORIGIN			(replorigin_xact_state.origin)
#else
typedef RepOriginId ReplOriginId;
#define InvalidReplOriginId		InvalidRepOriginId
#define TTL_XACT_ORIGIN			replorigin_session_origin
#endif

#if PG_VERSION_NUM >= 160000
#define ttl_replorigin_session_setup(node)	replorigin_session_setup((node), 0)
#else
#define ttl_replorigin_session_setup(node)	replorigin_session_setup(node)
#endif

/*
 * PostgreSQL 19 names the process that holds a replication slot by its
 * ProcNumber (ReplicationSlot.active_proc, INVALID_PROC_NUMBER when none),
 * where earlier versions kept its pid (active_pid, 0 when none).  The
 * caller holds the slot's spinlock; the pid is 0 when none holds it.
 */
#if PG_VERSION_NUM >= 190000
#define ttl_slot_active_pid(slot) \
	((slot)->active_proc == INVALID_PROC_NUMBER ? 0 : \
	 GetPGProcByNumber((slot)->active_proc)->pid)
#else
#define ttl_slot_active_pid(slot)	((slot)->active_pid)
#endif

/*
 * PostgreSQL 19 sizes a shared hash table with one number of entries
 * (ShmemInitHash(name, nelems, ...)), where earlier versions took an
 * initial and a maximum size.  ttl_index's tables never grow
 * (HASH_FIXED_SIZE): before 19 both sizes are the one given.
 */
#if PG_VERSION_NUM >= 190000
#define ttl_ShmemInitHash(name, nelems, info, flags) \
	ShmemInitHash((name), (nelems), (info), (flags))
#else
#define ttl_ShmemInitHash(name, nelems, info, flags) \
	ShmemInitHash((name), (nelems), (nelems), (info), (flags))
#endif

/*
 * PostgreSQL 18 lets a module declare its name and version
 * (PG_MODULE_MAGIC_EXT), shown by pg_get_loaded_modules().
 */
#if PG_VERSION_NUM >= 180000
#define TTL_MODULE_MAGIC \
	PG_MODULE_MAGIC_EXT(.name = TTL_EXTENSION_NAME, .version = TTL_LIBRARY_VERSION)
#else
#define TTL_MODULE_MAGIC PG_MODULE_MAGIC
#endif

/*
 * PostgreSQL 16 keeps the GUC variables in a hash table: get_guc_variables()
 * returns a sorted array and its length, where 15 returned the array and
 * GetNumConfigOptions() its length.
 */
#if PG_VERSION_NUM >= 160000
#define ttl_guc_variables(num) get_guc_variables(num)
#else
static inline struct config_generic **
ttl_guc_variables(int *num)
{
	*num = GetNumConfigOptions();
	return get_guc_variables();
}
#endif

/*
 * PostgreSQL 19 keeps a setting's type-specific fields in a union inside
 * config_generic (its member _bool for a boolean), where earlier versions
 * had config_bool begin with a config_generic: a cast of the generic
 * pointer reaches them there, and on 19 writes over the generic fields.
 */
#if PG_VERSION_NUM >= 190000
#define TTL_GUC_BOOL(gen) (&(gen)->_bool)
#else
#define TTL_GUC_BOOL(gen) ((struct config_bool *) (gen))
#endif

/*
 * A function's signature read back, InvalidOid when it names none (or a
 * type or schema that is gone).  PostgreSQL 16 reads input without raising
 * errors ("soft" errors, DirectInputFunctionCallSafe()); 15 raises them, so
 * there the error is caught in a subtransaction, and only the errors of a
 * name that resolves to nothing are taken for "none".
 */
#if PG_VERSION_NUM >= 160000
static inline Oid
ttl_regprocedure_lookup(const char *signature)
{
	ErrorSaveContext escontext = {T_ErrorSaveContext};
	Datum		result;

	if (!DirectInputFunctionCallSafe(regprocedurein, (char *) signature,
									 InvalidOid, -1, (Node *) &escontext,
									 &result))
		return InvalidOid;
	return DatumGetObjectId(result);
}
#else
extern ErrorData *ttl_error_catch_subxact(MemoryContext cxt, ResourceOwner owner);

static inline Oid
ttl_regprocedure_lookup(const char *signature)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile Oid result = InvalidOid;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		result = DatumGetObjectId(DirectFunctionCall1(regprocedurein,
													  CStringGetDatum(signature)));
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		/* a cancel or a shutdown is thrown again (errors.c) */
		ErrorData  *edata = ttl_error_catch_subxact(cxt, owner);

		if (edata->sqlerrcode != ERRCODE_UNDEFINED_FUNCTION &&
			edata->sqlerrcode != ERRCODE_UNDEFINED_OBJECT &&
			edata->sqlerrcode != ERRCODE_INVALID_SCHEMA_NAME &&
			edata->sqlerrcode != ERRCODE_INVALID_NAME &&
			edata->sqlerrcode != ERRCODE_INVALID_TEXT_REPRESENTATION &&
			edata->sqlerrcode != ERRCODE_SYNTAX_ERROR)
			ReThrowError(edata);
		FreeErrorData(edata);
		result = InvalidOid;
	}
	PG_END_TRY();
	return result;
}
#endif

/*
 * PostgreSQL 16 gave make_range() an error-saving context.
 */
#if PG_VERSION_NUM >= 160000
#define ttl_make_range(typcache, lower, upper) \
	make_range((typcache), (lower), (upper), false, NULL)
#else
#define ttl_make_range(typcache, lower, upper) \
	make_range((typcache), (lower), (upper), false)
#endif

/*
 * PostgreSQL 18 ("Add support for NOT ENFORCED in CHECK constraints") lets
 * a CHECK constraint be NOT ENFORCED (ConstrCheck.ccenforced); before, every
 * CHECK constraint was enforced.
 */
#if PG_VERSION_NUM >= 180000
#define ttl_check_enforced(check)	((check)->ccenforced)
#else
#define ttl_check_enforced(check)	((void) (check), true)
#endif

/*
 * PostgreSQL 16 ("Rename fields of PgStat_TableCounts") dropped the t_
 * prefix of a table's pending statistics counters (PgStat_TableStatus).
 */
#if PG_VERSION_NUM >= 160000
#define TTL_TABSTAT_DELTA_LIVE(ts)	((ts)->counts.delta_live_tuples)
#else
#define TTL_TABSTAT_DELTA_LIVE(ts)	((ts)->t_counts.t_delta_live_tuples)
#endif

#endif							/* TTL_COMPAT_H */
