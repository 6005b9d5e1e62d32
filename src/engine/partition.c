/*-------------------------------------------------------------------------
 *
 * partition.c
 *	  Dropping whole partitions whose every possible row has expired, the
 *	  first step of a pass over a partitioned table (pass.c).  The rows of
 *	  the other partitions are deleted target by target (targets.c).
 *
 * Dropping a whole partition.  When the table is range-partitioned on the
 * TTL column alone and a partition's upper bound is at or below the cutoff
 * (for wall-clock keys near a change of the UTC offset, the safe bound that
 * every key below has expired: see expiry.c),
 * every row it can hold is expired: DROP TABLE of the partition (which also
 * detaches it) removes them at the cost of a catalog change instead of one
 * deletion per row.  It is done only where that is the same as deleting the
 * rows:
 *	- the policy deletes (no archive, no soft delete) every expired row (no
 *	  filter) by the column itself (no per-row TTL);
 *	- no row-level DELETE trigger on the partition or below it, which
 *	  includes the triggers of foreign keys pointing at it, no rules, and
 *	  no row-level security of its own (enabled on it or below it);
 *	- nothing of the partitioned table's that a DELETE FROM it would run
 *	  and a DROP does not: no row-level security that applies to the owner
 *	  (its policies decide which rows go), no statement-level DELETE
 *	  trigger, no DELETE rule; and the owner may delete from it;
 *	- the partition and those below it are the owner's (DROP needs that);
 *	- no publication in the database (subscribers would never hear of the
 *	  rows);
 *	- the DROP succeeds without waiting: it runs as the owner, under the
 *	  short lock_timeout, in a subtransaction, after taking the partitioned
 *	  table's ACCESS EXCLUSIVE lock conditionally (PostgreSQL takes that
 *	  lock to drop a partition).  Anything in the way (a view on the
 *	  partition, a busy table, another owner) leaves the partition to the
 *	  row-by-row purge, and the next pass tries again.
 * The default partition has no bound and is never dropped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/acl.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "executor/spi.h"
#include "ttl_index.h"
#include "engine/engine.h"
#include "policy/policy.h"
#include "shared/shared.h"

/*
 * ttl_partition_upper_bound
 *		The exclusive upper bound of a range partition, or false when it has
 *		none (default partition, MAXVALUE, not a range partition).
 */
static bool
ttl_partition_upper_bound(Oid child, Datum *upper)
{
	HeapTuple	tup;
	Datum		datum;
	bool		isnull;
	PartitionBoundSpec *spec;
	PartitionRangeDatum *prd;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(child));
	if (!HeapTupleIsValid(tup))
		return false;
	datum = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relpartbound, &isnull);
	if (isnull)
	{
		ReleaseSysCache(tup);
		return false;
	}
	spec = castNode(PartitionBoundSpec, stringToNode(TextDatumGetCString(datum)));
	ReleaseSysCache(tup);
	if (spec->is_default || spec->strategy != PARTITION_STRATEGY_RANGE ||
		list_length(spec->upperdatums) != 1)
		return false;
	prd = linitial_node(PartitionRangeDatum, spec->upperdatums);
	if (prd->kind != PARTITION_RANGE_DATUM_VALUE || castNode(Const, prd->value)->constisnull)
		return false;
	*upper = castNode(Const, prd->value)->constvalue;
	return true;
}

/*
 * ttl_partition_plain
 *		Whether dropping this partition (and everything below it) is the
 *		same as deleting its rows: no row-level DELETE trigger (foreign keys
 *		pointing at it included) and no rules.  Each partition (and
 *		sub-partition) is locked before it is opened, without waiting: the
 *		parent's lock does not keep a concurrent CREATE TRIGGER or DETACH
 *		PARTITION CONCURRENTLY off a partition, and a partition whose lock
 *		is not free is not plain for this pass.  The locks are kept until
 *		the transaction ends.
 */
static bool
ttl_partition_plain(Oid child)
{
	List	   *all = find_all_inheritors(child, NoLock, NULL);
	ListCell   *lc;
	bool		plain = true;

	foreach(lc, all)
	{
		Relation	rel;
		TriggerDesc *trig;

		if (!ConditionalLockRelationOid(lfirst_oid(lc), AccessShareLock))
		{
			plain = false;
			break;
		}
		rel = try_relation_open(lfirst_oid(lc), NoLock);
		if (rel == NULL)
			continue;
		trig = rel->trigdesc;
		if (rel->rd_rel->relhasrules || rel->rd_rel->relrowsecurity ||
			!has_privs_of_role(GetUserId(), rel->rd_rel->relowner) ||
			(trig != NULL &&
			 (trig->trig_delete_before_row || trig->trig_delete_after_row ||
			  trig->trig_delete_instead_row || trig->trig_delete_old_table)))
			plain = false;
		relation_close(rel, NoLock);
		if (!plain)
			break;
	}
	list_free(all);
	return plain;
}

/*
 * ttl_partition_parent_plain
 *		Whether the owner's DELETE FROM the partitioned table would run
 *		nothing of the table's own that a DROP of a partition skips, and is
 *		allowed (see the top of the file).  Runs as the owner.
 */
static bool
ttl_partition_parent_plain(Relation rel)
{
	TriggerDesc *trig = rel->trigdesc;
	Oid			relid = RelationGetRelid(rel);

	if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED ||
		rel->rd_rel->relhasrules ||
		pg_class_aclcheck(relid, GetUserId(), ACL_DELETE) != ACLCHECK_OK)
		return false;
	return trig == NULL ||
		!(trig->trig_delete_before_statement || trig->trig_delete_after_statement ||
		  trig->trig_delete_old_table);
}

/*
 * ttl_partition_drop
 *		DROP TABLE one partition in a subtransaction.  Returns false, after
 *		logging why, when it could not be dropped.
 */
static bool
ttl_partition_drop(Oid child)
{
	static Oid	last_logged = InvalidOid;
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	char	   *name = ttl_qualified_relname(child);
	volatile bool ok = false;

	if (name == NULL)
		return false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		int			ret;

		PushActiveSnapshot(GetTransactionSnapshot());
		ttl_yield_own_xid();
		SPI_connect();
		ret = SPI_execute(psprintf("DROP TABLE %s", name), false, 0);
		if (ret != SPI_OK_UTILITY)
			elog(ERROR, "DROP TABLE %s failed: %s", name, SPI_result_code_string(ret));
		SPI_finish();
		PopActiveSnapshot();
		ReleaseCurrentSubTransaction();
		ok = true;
	}
	PG_CATCH();
	{
		/* a cancel or a shutdown is not the drop's failure: rethrown */
		ErrorData  *edata = ttl_error_catch_subxact(cxt, owner);

		/* once per partition, not at every pass */
		ereport(child == last_logged ? DEBUG1 : LOG,
				(errmsg("ttl_index: could not drop expired partition %s, deleting its rows instead: %s",
						name, edata->message)));
		last_logged = child;
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return ok;
}

/*
 * ttl_partition_drop_expired
 *		Drop the partitions of a policy's partitioned table that can hold
 *		only expired rows (see the top of the file).  Returns how many were
 *		dropped.  Runs as the table owner, in the batch's transaction.  With
 *		count_only (a preview, preview.c), drops nothing and returns how
 *		many it would try to drop, taking no lock beyond ACCESS SHARE.
 */
int
ttl_partition_drop_expired(TtlPolicy *policy, TimestampTz now, bool count_only)
{
	Relation	rel;
	PartitionKey key;
	PartitionDesc desc;
	TtlCutoff	cutoff;
	List	   *expired = NIL;
	ListCell   *lc;
	int			dropped = 0;

	/* a cap alone: no partition has expired (its rows go by the cap, cap.c) */
	if (policy->action != TTL_ACTION_DELETE || policy->filter != NULL ||
		policy->ttl_column != NULL || policy->no_expiry || ttl_publications_exist())
		return 0;
	if (!ConditionalLockRelationOid(policy->relid, AccessShareLock))
		return 0;
	rel = try_relation_open(policy->relid, NoLock);
	if (rel == NULL)
	{
		UnlockRelationOid(policy->relid, AccessShareLock);
		return 0;
	}
	key = RelationGetPartitionKey(rel);
	if (!ttl_partition_parent_plain(rel) ||
		rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE || key == NULL ||
		key->strategy != PARTITION_STRATEGY_RANGE || key->partnatts != 1 ||
		key->partattrs[0] != policy->attnum ||
		!ttl_key_type_ok(getBaseType(key->parttypid[0]), policy->unit_ns))
	{
		table_close(rel, NoLock);
		return 0;
	}

	PushActiveSnapshot(GetTransactionSnapshot());
	ttl_cutoff_compute(policy, getBaseType(key->parttypid[0]),
					   ttl_policy_zone(policy), now, &cutoff);
	desc = RelationGetPartitionDesc(rel, true);
	for (int i = 0; i < desc->nparts; i++)
	{
		Datum		upper;

		if (ttl_partition_upper_bound(desc->oids[i], &upper) &&
			DatumGetInt32(FunctionCall2Coll(&key->partsupfunc[0],
											key->partcollation[0],
											upper, cutoff.safe_bound)) <= 0 &&
			ttl_partition_plain(desc->oids[i]))
			expired = lappend_oid(expired, desc->oids[i]);
	}
	table_close(rel, NoLock);
	if (expired == NIL || count_only)
	{
		PopActiveSnapshot();
		return list_length(expired);
	}

	/*
	 * PostgreSQL locks the partitioned table this way to drop a partition.
	 * When nothing could be dropped nothing changed, and the lock is let go
	 * at once: the batch goes on deleting rows in this transaction, and
	 * must not keep every reader of the table waiting meanwhile.
	 */
	if (!ConditionalLockRelationOid(policy->relid, AccessExclusiveLock))
	{
		PopActiveSnapshot();
		return 0;
	}
	foreach(lc, expired)
	{
		Oid			child = lfirst_oid(lc);

		if (!ConditionalLockRelationOid(child, AccessExclusiveLock))
			continue;
		if (ttl_partition_plain(child) && ttl_partition_drop(child))
			dropped++;
		else
			UnlockRelationOid(child, AccessExclusiveLock);
	}
	if (dropped == 0)
		UnlockRelationOid(policy->relid, AccessExclusiveLock);
	PopActiveSnapshot();
	return dropped;
}
