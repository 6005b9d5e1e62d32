/*-------------------------------------------------------------------------
 *
 * citus.c
 *	  What ttl_index does differently on a server where Citus is installed:
 *	  telling a Citus table from a plain one, and dropping the indexes
 *	  ttl_create_index() made through the path Citus propagates.
 *
 * On a Citus coordinator, a distributed table, a reference table and a
 * local table added to Citus's metadata are shells: their rows live in
 * shard tables (on the worker nodes, or under another name on this one).
 * Purging the shell finds nothing and would report a false "nothing
 * expired".  Until policies are resolved to shard placements on every node,
 * ttl_create_index() refuses such a table, and a pass whose table became
 * one (create_distributed_table() after the policy) fails the policy with
 * the same error, so that ttl_index_stats shows it rather than a lag of 0.
 *
 * Citus is known by its catalog pg_catalog.pg_dist_partition: one syscache
 * look-up of that name per question, and nothing more, on a server without
 * it.  The catalog is read with AccessShareLock, under the caller's
 * transaction; nothing here writes.
 *
 * An index on a Citus table is dropped with a DROP INDEX statement, run
 * through ProcessUtility, so that Citus's utility hook drops the shards'
 * copies too; performDeletion() would drop the shell's index alone.
 * Elsewhere performDeletion() stays: it needs no ownership of the index,
 * which DROP EXTENSION by the extension's owner relies on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "ttl_index.h"

/*
 * ttl_citus_kind
 *		What Citus makes of the table: TTL_CITUS_NONE when Citus is not
 *		installed in this database or the table is not in its metadata.
 */
TtlCitusKind
ttl_citus_kind(Oid relid)
{
	Oid			catoid;
	Relation	cat;
	TupleDesc	desc;
	AttrNumber	relid_att;
	AttrNumber	method_att;
	AttrNumber	model_att;
	AttrNumber	coloc_att;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	TtlCitusKind kind = TTL_CITUS_NONE;

	catoid = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
	if (!OidIsValid(catoid))
		return TTL_CITUS_NONE;

	cat = table_open(catoid, AccessShareLock);
	desc = RelationGetDescr(cat);
	relid_att = get_attnum(catoid, "logicalrelid");
	method_att = get_attnum(catoid, "partmethod");
	model_att = get_attnum(catoid, "repmodel");
	coloc_att = get_attnum(catoid, "colocationid");
	if (relid_att == InvalidAttrNumber || method_att == InvalidAttrNumber ||
		model_att == InvalidAttrNumber || coloc_att == InvalidAttrNumber)
	{
		/* a Citus we do not know; every row of it is a Citus table */
		relid_att = relid_att == InvalidAttrNumber ? 1 : relid_att;
		method_att = model_att = coloc_att = InvalidAttrNumber;
	}

	ScanKeyInit(&key, relid_att, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(cat, InvalidOid, false, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		char		method = 0;
		char		model = 0;
		int32		colocation = 0;

		if (method_att != InvalidAttrNumber)
		{
			method = DatumGetChar(heap_getattr(tup, method_att, desc, &isnull));
			model = DatumGetChar(heap_getattr(tup, model_att, desc, &isnull));
			colocation = DatumGetInt32(heap_getattr(tup, coloc_att, desc, &isnull));
		}
		if (method == 'n' && model == 't')
			kind = TTL_CITUS_REFERENCE;
		else if (method == 'n' && colocation == 0)
			kind = TTL_CITUS_LOCAL;
		else
			kind = TTL_CITUS_DISTRIBUTED;
	}
	systable_endscan(scan);
	table_close(cat, AccessShareLock);
	return kind;
}

/*
 * ttl_citus_refuse
 *		ERROR when the table is a Citus table (see the top of the file);
 *		has_policy: a pass of an existing policy, not ttl_create_index().
 */
void
ttl_citus_refuse(Oid relid, bool has_policy)
{
	TtlCitusKind kind = ttl_citus_kind(relid);

	if (kind == TTL_CITUS_NONE)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("ttl_index cannot purge the Citus %s \"%s\"",
					kind == TTL_CITUS_REFERENCE ? "reference table" :
					kind == TTL_CITUS_LOCAL ? "local table" : "distributed table",
					get_rel_name(relid)),
			 errdetail("Its rows live in shard tables; the table on this node holds none of them."),
			 has_policy ?
			 errhint("TTL policies on Citus tables are not supported in this version: drop this one with ttl_drop_index().") :
			 errhint("TTL policies on Citus tables are not supported in this version.")));
}

/*
 * ttl_drop_created
 *		Drop an index ttl_create_index() made (see the top of the file).
 */
void
ttl_drop_created(Oid indexoid)
{
	Oid			relid = IndexGetRelation(indexoid, false);
	ObjectAddress obj;

	if (ttl_citus_kind(relid) != TTL_CITUS_NONE)
	{
		char	   *sql;
		int			ret;

		sql = psprintf("DROP INDEX %s",
					   quote_qualified_identifier(get_namespace_name(get_rel_namespace(indexoid)),
												  get_rel_name(indexoid)));
		SPI_connect();
		ret = SPI_execute(sql, false, 0);
		if (ret != SPI_OK_UTILITY)
			elog(ERROR, "could not drop index: %s", SPI_result_code_string(ret));
		SPI_finish();
		return;
	}
	ObjectAddressSet(obj, RelationRelationId, indexoid);
	performDeletion(&obj, DROP_RESTRICT, 0);
}
