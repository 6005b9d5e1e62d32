/*-------------------------------------------------------------------------
 *
 * hooks.c
 *	  What ttl_index does inside other sessions' statements and
 *	  transactions: the utility hook, the executor-end hook, and the
 *	  transaction callbacks.
 *
 *	- Commit wake-ups: a change to the policy catalog (or to a Citus node's
 *	  copy of the policies on distributed tables, CREATE EXTENSION, DROP
 *	  EXTENSION, a COMMIT PREPARED whose tables are not known) asks, at
 *	  commit and only then, for the database's worker to re-read its
 *	  policies and for the launcher to look at the database (shmem.c).  A
 *	  worker woken before the change is visible would read the old
 *	  policies and sleep again.  A transaction
 *	  that is prepared wakes no one: its COMMIT PREPARED does (the
 *	  coordinator writes a node's copy of the policies in a prepared
 *	  transaction).
 *	- Writes: the tables a transaction inserts into or updates, noted at
 *	  the executor's end and after COPY FROM, reach writes.c's counters at
 *	  commit.
 *	- Counts of ttl_runner()'s work reach shared memory at commit, and go
 *	  with a rolled-back subtransaction (stats.c).
 *	- Out of the way: DROP DATABASE, ALTER DATABASE ... RENAME / SET
 *	  TABLESPACE and CREATE DATABASE ... TEMPLATE fail while another session
 *	  is connected to the database; the worker must not be that session.
 *	  The hook keeps the database's worker out (and waits a little for a
 *	  running one to leave) until the statement is done, but only for a
 *	  statement that passes PostgreSQL's privilege checks
 *	  (ttl_utility_may_evict): no other role can stop a database's purge.
 *	- DROP EXTENSION ttl_index drops the indexes ttl_create_index made, as
 *	  ttl_drop_index would (in the same transaction: a failed DROP
 *	  EXTENSION keeps them).
 *	- ALTER TABLE ... SET SCHEMA, which Citus may turn into distributing or
 *	  undistributing the table: its policies follow it (citus_follow.c).
 *	- ALTER DATABASE d SET or RESET ttl_index.enabled (a database paused or
 *	  resumed): at commit, d's worker reads the setting again, and the
 *	  launcher starts one for d if none runs (worker.c, launcher.c).
 *
 * The utility and executor hooks are installed only when the library is
 * preloaded (every backend has them then); the transaction callbacks in
 * every backend that loads the library.
 *
 * Locking: none here; shmem.c takes its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "ttl_index.h"
#include "bgw/bgw.h"
#include "policy/policy.h"
#include "citus/citus.h"
#include "env/env.h"
#include "shared/shared.h"

/* how long DROP DATABASE and friends keep the worker out, at most */
#define TTL_EVICT_BLOCK_MS		60000
/* how long they wait for the worker to leave */
#define TTL_EVICT_WAIT_MS		5000

static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;

/* wake this database's worker and the launcher at commit */
static bool WakePending = false;

/*
 * Other databases to wake at commit: their ttl_index.enabled was set or
 * reset (ttl_utility_enabled_database).  In TopTransactionContext, which
 * outlives the commit callbacks; NIL again at each transaction's end.
 */
static List *WakeOthers = NIL;

/* the gid of the PREPARE TRANSACTION in hand (ttl_xact_callback) */
static char PreparingGid[GIDSIZE];

/*
 * ttl_wake_at_commit
 *		Ask for this database's worker to re-read its policies, and for the
 *		launcher to start one if none runs, once the current transaction
 *		commits.
 */
void
ttl_wake_at_commit(void)
{
	WakePending = true;
}

/*
 * ttl_wake_database_at_commit
 *		As ttl_wake_at_commit, for any database.  A prepared transaction
 *		wakes another database at its PREPARE no more than at its COMMIT
 *		PREPARED: a pause it made is seen at the worker's next reload (at
 *		most a minute), a reset when the launcher next starts the paused
 *		database's worker to read the setting again (at most a minute,
 *		launcher.c).
 */
static void
ttl_wake_database_at_commit(Oid dboid)
{
	MemoryContext old;

	if (dboid == MyDatabaseId)
	{
		ttl_wake_at_commit();
		return;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	WakeOthers = list_append_unique_oid(WakeOthers, dboid);
	MemoryContextSwitchTo(old);
}

/*
 * ttl_xact_callback
 *		Deliver what waited for the transaction's end.
 */
static void
ttl_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			/* before the rows become visible, for the views (writes.c) */
			ttl_writes_bump();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			/* a ttl_runner() call's shared drain, if one was left */
			ttl_parallel_runner_end();
			ttl_writes_at_xact_end(true);
			ttl_stats_at_xact_end(true);
			if (WakePending)
				ttl_shmem_wake_database(MyDatabaseId);
			WakePending = false;
			{
				ListCell   *lc;

				foreach(lc, WakeOthers)
					ttl_shmem_wake_database(lfirst_oid(lc));
			}
			WakeOthers = NIL;
			break;
		case XACT_EVENT_PREPARE:
			/* visible at COMMIT PREPARED, which bumps them again (writes.c) */
			ttl_writes_bump();
			/* a wake-up that waited for this commit waits for COMMIT PREPARED */
			ttl_writes_prepared(PreparingGid[0] != '\0' ? PreparingGid : NULL,
								WakePending);
			PreparingGid[0] = '\0';
			ttl_stats_at_xact_end(false);
			WakePending = false;
			WakeOthers = NIL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			/* a ttl_runner() call that failed: its helpers stop */
			ttl_parallel_runner_end();
			PreparingGid[0] = '\0';
			ttl_writes_at_xact_end(false);
			ttl_stats_at_xact_end(false);
			WakePending = false;
			WakeOthers = NIL;
			break;
		default:
			break;
	}
}

/*
 * ttl_subxact_callback
 *		A subtransaction ends.
 */
static void
ttl_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_COMMIT_SUB)
		ttl_stats_at_subxact_end(true);
	else if (event == SUBXACT_EVENT_ABORT_SUB)
		ttl_stats_at_subxact_end(false);
}

/*
 * ttl_executor_end
 *		Note the tables a statement inserted into or updated (a plain DELETE
 *		adds no row: not noted), with the root of routed partitions.  A
 *		DELETE's data-modifying WITH that inserts or updates counts: its
 *		tables are those of its auxiliary ModifyTable nodes.
 */
static void
ttl_executor_end(QueryDesc *queryDesc)
{
	EState	   *estate = queryDesc->estate;

	if (estate != NULL)
	{
		ListCell   *lc;

		/* a Citus node's copy of the policies: wake the worker (citus.c) */
		foreach(lc, estate->es_opened_result_relations)
		{
			Relation	rel = ((ResultRelInfo *) lfirst(lc))->ri_RelationDesc;

			if (ttl_citus_policy_copy(RelationGetRelationName(rel),
									  RelationGetNamespace(rel)))
				ttl_wake_at_commit();
		}

		/* a SELECT has result relations only for a data-modifying WITH */
		if (queryDesc->operation != CMD_DELETE)
		{
			foreach(lc, estate->es_opened_result_relations)
			{
				ResultRelInfo *rri = (ResultRelInfo *) lfirst(lc);

				ttl_writes_note(RelationGetRelid(rri->ri_RelationDesc));
			}
		}
		else
		{
			foreach(lc, estate->es_auxmodifytables)
			{
				ModifyTableState *mt = (ModifyTableState *) lfirst(lc);

				if (!IsA(mt, ModifyTableState) || mt->operation == CMD_DELETE)
					continue;
				for (int i = 0; i < mt->mt_nrels; i++)
					ttl_writes_note(RelationGetRelid(mt->resultRelInfo[i].ri_RelationDesc));
			}
		}
		/* rows routed to partitions: only an INSERT, UPDATE or MERGE routes */
		foreach(lc, estate->es_tuple_routing_result_relations)
		{
			ResultRelInfo *rri = (ResultRelInfo *) lfirst(lc);

			ttl_writes_note(RelationGetRelid(rri->ri_RelationDesc));
			if (rri->ri_RootResultRelInfo)
				ttl_writes_note(RelationGetRelid(rri->ri_RootResultRelInfo->ri_RelationDesc));
		}
	}

	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

/*
 * ttl_database_evict
 *		Keep the worker of a database out until ttl_database_release(), and
 *		wait (briefly) for a running one to exit.
 */
static void
ttl_database_evict(Oid dboid)
{
	TimestampTz start = GetCurrentTimestamp();
	pid_t		pids[1 + TTL_MAX_HELPERS];
	int			n;

	/* the worker and its helpers, if any */
	n = ttl_shmem_block_database(dboid,
								 TimestampTzPlusMilliseconds(start, TTL_EVICT_BLOCK_MS),
								 pids);
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGTERM);

	while (ttl_shmem_database_pid(dboid) != 0 &&
		   !TimestampDifferenceExceeds(start, GetCurrentTimestamp(), TTL_EVICT_WAIT_MS))
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * ttl_utility_target_database
 *		The database a utility statement needs free of other sessions, or
 *		InvalidOid.
 */
static Oid
ttl_utility_target_database(Node *parsetree)
{
	const char *dbname = NULL;
	ListCell   *lc;

	switch (nodeTag(parsetree))
	{
		case T_DropdbStmt:
			dbname = ((DropdbStmt *) parsetree)->dbname;
			break;
		case T_CreatedbStmt:
			dbname = "template1";
			foreach(lc, ((CreatedbStmt *) parsetree)->options)
			{
				DefElem    *opt = (DefElem *) lfirst(lc);

				if (strcmp(opt->defname, "template") == 0 && opt->arg != NULL)
					dbname = defGetString(opt);
			}
			break;
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_DATABASE)
				dbname = ((RenameStmt *) parsetree)->subname;
			break;
		case T_AlterDatabaseStmt:
			foreach(lc, ((AlterDatabaseStmt *) parsetree)->options)
			{
				DefElem    *opt = (DefElem *) lfirst(lc);

				if (strcmp(opt->defname, "tablespace") == 0)
					dbname = ((AlterDatabaseStmt *) parsetree)->dbname;
			}
			break;
		default:
			break;
	}

	if (dbname == NULL)
		return InvalidOid;
	return get_database_oid(dbname, true);
}

/*
 * ttl_utility_enabled_database
 *		The database whose own ttl_index.enabled the statement sets or
 *		resets (ALTER DATABASE d SET / RESET ttl_index.enabled, RESET ALL,
 *		and ALTER ROLE ALL IN DATABASE d, which writes the same entry of
 *		pg_db_role_setting), or InvalidOid.  Its worker reads the setting
 *		again once the statement commits (worker.c).
 */
static Oid
ttl_utility_enabled_database(Node *parsetree)
{
	const char *dbname = NULL;
	VariableSetStmt *set = NULL;

	if (IsA(parsetree, AlterDatabaseSetStmt))
	{
		dbname = ((AlterDatabaseSetStmt *) parsetree)->dbname;
		set = ((AlterDatabaseSetStmt *) parsetree)->setstmt;
	}
	else if (IsA(parsetree, AlterRoleSetStmt) &&
			 ((AlterRoleSetStmt *) parsetree)->role == NULL)
	{
		dbname = ((AlterRoleSetStmt *) parsetree)->database;
		set = ((AlterRoleSetStmt *) parsetree)->setstmt;
	}
	if (dbname == NULL || set == NULL)
		return InvalidOid;
	if (set->kind != VAR_RESET_ALL &&
		(set->name == NULL || pg_strcasecmp(set->name, "ttl_index.enabled") != 0))
		return InvalidOid;
	return get_database_oid(dbname, true);
}

/*
 * ttl_utility_may_evict
 *		Whether the statement would get past PostgreSQL's own privilege
 *		checks, which it makes only after the hook: only then is the
 *		database's worker asked to leave.  Otherwise any role with LOGIN
 *		could stop any database's purge with a DROP DATABASE bound to fail.
 *		The checks are those of dropdb(), RenameDatabase(), createdb() and
 *		movedb(): the database's owner (or a member of its role); CREATEDB
 *		to rename or to create; to copy a database that is not a template,
 *		its owner.  A template is never dropped.
 */
static bool
ttl_utility_may_evict(Node *parsetree, Oid dboid)
{
	HeapTuple	tup;
	bool		istemplate;

	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
	if (!HeapTupleIsValid(tup))
		return false;
	istemplate = ((Form_pg_database) GETSTRUCT(tup))->datistemplate;
	ReleaseSysCache(tup);

	switch (nodeTag(parsetree))
	{
		case T_DropdbStmt:
			return !istemplate && ttl_database_ownercheck(dboid, GetUserId());
		case T_RenameStmt:
			return have_createdb_privilege() &&
				ttl_database_ownercheck(dboid, GetUserId());
		case T_CreatedbStmt:
			return have_createdb_privilege() &&
				(istemplate || ttl_database_ownercheck(dboid, GetUserId()));
		case T_AlterDatabaseStmt:
			return ttl_database_ownercheck(dboid, GetUserId());
		default:
			return false;
	}
}

/*
 * ttl_drop_created_indexes
 *		DROP EXTENSION ttl_index in this database: drop the indexes
 *		ttl_create_index made, as ttl_drop_index would.  Those of Citus
 *		tables are returned by name, to drop after the DROP EXTENSION:
 *		Citus refuses an extension command in a transaction that has run a
 *		statement over several connections to a node, as a DROP INDEX on a
 *		distributed table does, and on the coordinator one over a single
 *		connection (citus.multi_shard_modify_mode = sequential) waits for
 *		the shards' locks its own other connection holds.
 */
static List *
ttl_drop_created_indexes(void)
{
	List	   *policies;
	List	   *later = NIL;
	ListCell   *lc;

	if (!OidIsValid(ttl_catalog_namespace(true)))
		return NIL;
	PushActiveSnapshot(GetTransactionSnapshot());
	policies = ttl_load_policies(CurrentMemoryContext);
	PopActiveSnapshot();
	foreach(lc, policies)
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);
		Oid			indexoid;

		/* the coordinator drops a distributed table's index everywhere */
		if (p->citus_copy)
			continue;
		indexoid = ttl_created_index(p->relid, p->attnum);
		if (OidIsValid(indexoid))
		{
			char	   *name = ttl_citus_index_name(indexoid);

			if (name != NULL)
			{
				MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

				later = lappend(later, pstrdup(name));
				MemoryContextSwitchTo(old);
			}
			else
				ttl_drop_created(indexoid);
		}
	}
	CommandCounterIncrement();
	return later;
}

/*
 * ttl_next_utility
 *		Run a utility statement through the next hook, or the standard code.
 */
static void
ttl_next_utility(PlannedStmt *pstmt, const char *queryString,
				 bool readOnlyTree, ProcessUtilityContext context,
				 ParamListInfo params, QueryEnvironment *queryEnv,
				 DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

/*
 * ttl_process_utility
 *		Utility hook (see the top of the file).
 */
static void
ttl_process_utility(PlannedStmt *pstmt, const char *queryString,
					bool readOnlyTree, ProcessUtilityContext context,
					ParamListInfo params, QueryEnvironment *queryEnv,
					DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	Oid			dboid = ttl_utility_target_database(parsetree);
	List	   *drop_later = NIL;
	ListCell   *lc2;
	void	   *citus_span;

	if (IsA(parsetree, DropStmt) &&
		((DropStmt *) parsetree)->removeType == OBJECT_EXTENSION)
	{
		ListCell   *lc;

		foreach(lc, ((DropStmt *) parsetree)->objects)
		{
			Oid			extoid;

			if (strcmp(strVal(lfirst(lc)), TTL_EXTENSION_NAME) != 0)
				continue;

			/*
			 * Only for the extension's owner, and only where it is
			 * installed: a role that PostgreSQL is about to refuse must not
			 * lock the tables of the policies first, nor wake the launcher
			 * for nothing.
			 */
			extoid = get_extension_oid(TTL_EXTENSION_NAME, true);
			if (!OidIsValid(extoid) || !ttl_extension_ownercheck(extoid, GetUserId()))
				continue;
			/* the worker re-reads at commit, and leaves */
			ttl_wake_at_commit();
			drop_later = ttl_drop_created_indexes();
		}
	}
	else if (IsA(parsetree, TransactionStmt))
	{
		TransactionStmt *stmt = (TransactionStmt *) parsetree;

		/*
		 * A COMMIT PREPARED bumps the write counters of the tables its
		 * transaction wrote, kept since its PREPARE (writes.c); where they
		 * are not known, every policy of the database looks again.
		 */
		if (stmt->kind == TRANS_STMT_PREPARE)
			strlcpy(PreparingGid, stmt->gid, sizeof(PreparingGid));
		else if (stmt->kind == TRANS_STMT_COMMIT_PREPARED &&
				 !ttl_writes_finish_prepared(stmt->gid, true))
			ttl_wake_at_commit();
		else if (stmt->kind == TRANS_STMT_ROLLBACK_PREPARED)
			(void) ttl_writes_finish_prepared(stmt->gid, false);
	}

	if (OidIsValid(dboid) && dboid != MyDatabaseId &&
		ttl_utility_may_evict(parsetree, dboid))
	{
		ttl_database_evict(dboid);
		PG_TRY();
		{
			ttl_next_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
		}
		PG_CATCH();
		{
			ttl_shmem_unblock_database(dboid);
			PG_RE_THROW();
		}
		PG_END_TRY();

		/*
		 * A dropped database stays blocked: DROP DATABASE commits after we
		 * return, and a worker started before that would only fail to
		 * connect.  The launcher frees the slot once the database is gone.
		 */
		if (!IsA(parsetree, DropdbStmt))
			ttl_shmem_unblock_database(dboid);
		return;
	}

	/* ALTER TABLE ... SET SCHEMA: Citus may replace the table (citus_follow.c) */
	citus_span = ttl_citus_utility_begin(parsetree);
	ttl_next_utility(pstmt, queryString, readOnlyTree, context,
					 params, queryEnv, dest, qc);
	ttl_citus_utility_end(citus_span);

	/* DROP EXTENSION: the TTL indexes of Citus tables, now */
	foreach(lc2, drop_later)
		ttl_drop_index_named((char *) lfirst(lc2));

	/* a database paused or resumed: its worker, at commit (it succeeded) */
	if (IsA(parsetree, AlterDatabaseSetStmt) || IsA(parsetree, AlterRoleSetStmt))
	{
		Oid			setdb = ttl_utility_enabled_database(parsetree);

		if (OidIsValid(setdb))
			ttl_wake_database_at_commit(setdb);
	}

	/* rows COPY FROM added */
	if (IsA(parsetree, CopyStmt) && ((CopyStmt *) parsetree)->is_from &&
		((CopyStmt *) parsetree)->relation != NULL)
	{
		Oid			relid = RangeVarGetRelid(((CopyStmt *) parsetree)->relation,
											 NoLock, true);

		ttl_writes_note(relid);
		/* a Citus node's copy of the policies: wake the worker (citus.c) */
		if (OidIsValid(relid) &&
			ttl_citus_policy_copy(get_rel_name(relid), get_rel_namespace(relid)))
			ttl_wake_at_commit();
	}
}

/*
 * ttl_hooks_install
 *		Install the utility and executor hooks (preload time only).
 */
void
ttl_hooks_install(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = ttl_process_utility;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = ttl_executor_end;
}

/*
 * ttl_hooks_install_local
 *		Register the transaction callbacks (every backend that loads the
 *		library).
 */
void
ttl_hooks_install_local(void)
{
	RegisterXactCallback(ttl_xact_callback, NULL);
	RegisterSubXactCallback(ttl_subxact_callback, NULL);
}
