/*-------------------------------------------------------------------------
 *
 * citus.c
 *	  What ttl_index does differently on a server where Citus is installed:
 *	  telling a Citus table from a plain one, the policies on distributed
 *	  tables as each node reads them, the shard placements a node purges,
 *	  and dropping the indexes ttl_create_index() made through the path
 *	  Citus propagates.
 *
 * Distributed tables.  On a Citus coordinator a distributed table is a
 * shell: its rows live in shard tables, each placed on one node (the
 * coordinator too, when it holds shards).  A policy on one is made on the
 * coordinator, in ttl_index_policy as any other, and a row trigger there
 * (ttl_index_citus_sync, in the extension's script) copies it into
 * ttl_index_citus_policy, a Citus reference table: Citus writes every
 * node's copy in the same distributed transaction, and copies the table to
 * a node before it places shards there.  Each node's worker reads the
 * policies from its own copy (ttl_citus_policies_sql; the coordinator from
 * ttl_index_policy), each under the negative of the coordinator's id
 * (TTL_CITUS_COPY_ID, catalog.c), apart from the node's own policies, and
 * with the coordinator's TimeZone when it has no zone of its own (the sync
 * trigger gives it: every node reads the purge windows in the same zone),
 * and lists the policy's targets anew at each pass: the
 * placements of the table's shards this node holds (ttl_citus_shards), as
 * partitions are listed.  So shard moves, splits, rebalances and new nodes
 * need nothing from us: a shard comes and goes with its placement.  A
 * shard a move or split has locked is skipped like any locked table (the
 * batch never waits for a lock), and one a logical move has published
 * without a replica identity is skipped too (ttl_citus_unpublishable).
 * A shard a move or split took elsewhere during a pass is left before its
 * next batch (ttl_citus_placement_current): its rows are the new
 * placement's, and would be deleted, and counted, twice.  An anonymize
 * policy whose set column is the table's distribution column updates
 * nothing (ttl_citus_check_set, before each batch).
 *
 * Reference tables and local tables added to Citus's metadata are refused:
 * a reference table is copied on every node, and a delete on one node is a
 * distributed transaction over all of them; a Citus local table's rows live
 * in a shard of the coordinator under another name.
 *
 * Citus is known by its catalog pg_catalog.pg_dist_partition: one syscache
 * look-up of that name per question, and nothing more, on a server without
 * it.  Citus's catalogs are read with AccessShareLock, under the caller's
 * transaction.  Nothing here writes the policy catalog: a policy following
 * its table through Citus's functions is citus_follow.c's, what the
 * coordinator says of each node citus_nodes.c's.
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
#include "catalog/pg_publication.h"
#include "access/xact.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/varlena.h"
#include "funcapi.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/syscache.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/relcache.h"

#include "ttl_index.h"
#include "citus/citus.h"
#include "env/env.h"

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
 * ttl_citus_kind_name
 *		The kind of Citus table, in words.
 */
static const char *
ttl_citus_kind_name(TtlCitusKind kind)
{
	return kind == TTL_CITUS_REFERENCE ? "reference table" :
		kind == TTL_CITUS_LOCAL ? "local table" : "distributed table";
}

/*
 * ttl_citus_distribution_column
 *		The name of a distributed table's distribution column, or NULL (not
 *		a Citus table, or one without a distribution column).  Asks Citus,
 *		through SPI, with a snapshot of its own: Citus's function that has
 *		just distributed the table (citus_follow.c) wrote its metadata after
 *		the caller's snapshot was taken.
 */
char *
ttl_citus_distribution_column(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];
	char	   *result = NULL;

	if (ttl_citus_kind(relid) != TTL_CITUS_DISTRIBUTED)
		return NULL;
	values[0] = ObjectIdGetDatum(relid);
	SPI_connect();
	if (SPI_execute_with_args("SELECT pg_catalog.column_to_column_name(logicalrelid, partkey)"
							  " FROM pg_catalog.pg_dist_partition"
							  " WHERE logicalrelid OPERATOR(pg_catalog.=) $1 AND partkey IS NOT NULL",
							  1, argtypes, values, NULL, false, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (name != NULL)
			result = MemoryContextStrdup(CurTransactionContext, name);
	}
	SPI_finish();
	return result;
}

/*
 * ttl_citus_set_distribution
 *		The column of an anonymize policy's set_columns (stored text) that
 *		is the distribution column of the Citus distributed table, or NULL.
 *		Only the names of the SET list are read (the raw parser: nothing is
 *		looked up or evaluated).  Citus moves no row between shards on an
 *		UPDATE: a row whose distribution column changed would stay in a
 *		shard its new value does not belong to.
 */
char *
ttl_citus_set_distribution(Oid relid, const char *set_columns)
{
	char	   *distcol;
	List	   *stmts;
	ListCell   *lc;

	if (set_columns == NULL || set_columns[0] == '\0')
		return NULL;
	distcol = ttl_citus_distribution_column(relid);
	if (distcol == NULL)
		return NULL;
	stmts = raw_parser(psprintf("UPDATE ttl_set SET %s", set_columns), RAW_PARSE_DEFAULT);
	if (list_length(stmts) != 1 ||
		!IsA(linitial_node(RawStmt, stmts)->stmt, UpdateStmt))
		return NULL;
	foreach(lc, ((UpdateStmt *) linitial_node(RawStmt, stmts)->stmt)->targetList)
	{
		ResTarget  *rt = lfirst_node(ResTarget, lc);

		if (rt->name != NULL && strcmp(rt->name, distcol) == 0)
			return pstrdup(rt->name);
	}
	return NULL;
}

/*
 * ttl_citus_check_set
 *		Before each batch of an anonymize policy, on every node: ERROR when
 *		a set column is now the distribution column of the policy's table
 *		(distributed, or distributed by another column, after the policy was
 *		made; citus_follow.c refuses that, this is for whatever got past
 *		it).  The policy then updates nothing and rests, its counters and
 *		stalled saying why.
 */
void
ttl_citus_check_set(TtlPolicy *policy)
{
	char	   *col;
	bool		snapshot;

	if (policy->action != TTL_ACTION_ANONYMIZE || policy->set_columns == NULL ||
		ttl_citus_kind(policy->relid) != TTL_CITUS_DISTRIBUTED)
		return;
	snapshot = !ActiveSnapshotSet();
	if (snapshot)
		PushActiveSnapshot(GetTransactionSnapshot());
	col = ttl_citus_set_distribution(policy->relid, policy->set_columns);
	if (snapshot)
		PopActiveSnapshot();
	if (col != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the policy on table \"%s\" sets column \"%s\", the table's Citus distribution column: nothing is anonymized",
						get_rel_name(policy->relid), col),
				 errdetail("Citus moves no row between shards on an UPDATE; an anonymized row would stay in a shard its new value does not belong to."),
				 errhint("Give the policy set_columns without column \"%s\" with ttl_create_index(), or drop it with ttl_drop_index().",
						 col)));
}

/*
 * ttl_citus_placement_current
 *		Whether the shard table rel is still a placement of this node, in
 *		good standing, as Citus's metadata says now: a shard a move or a
 *		split has just taken elsewhere stays behind until Citus's deferred
 *		cleanup drops it, its rows copied to the new placement, which its
 *		node purges (and counts).  Read after the batch locked the shard,
 *		with a snapshot taken then: a move that committed before is seen.
 *		The shard id is the number that ends a shard's name.
 */
bool
ttl_citus_placement_current(Relation rel)
{
	const char *name = RelationGetRelationName(rel);
	const char *digits = strrchr(name, '_');
	int64		shardid;
	char	   *end;
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		result = true;

	if (digits == NULL || digits[1] == '\0')
		return true;
	errno = 0;
	shardid = strtoi64(digits + 1, &end, 10);
	if (*end != '\0' || errno != 0 || shardid <= 0)
		return true;
	values[0] = Int64GetDatum(shardid);
	PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
	if (SPI_execute_with_args("SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_placement p"
							  " WHERE p.shardid OPERATOR(pg_catalog.=) $1 AND p.shardstate OPERATOR(pg_catalog.=) 1"
							  "   AND p.groupid OPERATOR(pg_catalog.=) (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g))",
							  1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		bool		isnull;

		result = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_finish();
	PopActiveSnapshot();
	return result;
}

/*
 * ttl_citus_refuse
 *		ERROR when the table is a Citus table a policy cannot be on (see
 *		the top of the file): a reference table or a Citus local table.
 *		has_policy: a pass of an existing policy, not ttl_create_index().
 */
void
ttl_citus_refuse(Oid relid, bool has_policy)
{
	TtlCitusKind kind = ttl_citus_kind(relid);

	if (kind == TTL_CITUS_NONE || kind == TTL_CITUS_DISTRIBUTED)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("ttl_index cannot purge the Citus %s \"%s\"",
					ttl_citus_kind_name(kind), get_rel_name(relid)),
			 kind == TTL_CITUS_REFERENCE ?
			 errdetail("A reference table is copied on every node; deleting from it is a transaction over all of them.") :
			 errdetail("Its rows live in a shard table of the coordinator."),
			 has_policy ?
			 errhint("Drop this policy with ttl_drop_index(); TTL policies on Citus tables are supported on distributed tables.") :
			 errhint("TTL policies on Citus tables are supported on distributed tables.")));
}

/*
 * ttl_citus_local_group
 *		This node's group in the Citus cluster (0 on the coordinator), or
 *		-1 without Citus.  Runs one query; the caller is connected to SPI.
 */
static int32
ttl_citus_local_group(void)
{
	bool		isnull;
	Datum		d;

	if (!OidIsValid(get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE)))
		return -1;
	if (SPI_execute("SELECT groupid FROM pg_catalog.pg_dist_local_group", true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		return -1;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? -1 : DatumGetInt32(d);
}

/*
 * ttl_citus_check_create
 *		Before ttl_create_index() writes a policy: refuse the Citus tables a
 *		policy cannot be on, and, on a distributed table, what the nodes
 *		cannot do (see the top of the file).
 */
void
ttl_citus_check_create(TtlPolicy *policy)
{
	TtlCitusKind kind = ttl_citus_kind(policy->relid);
	int32		group;

	if (kind == TTL_CITUS_NONE)
		return;
	ttl_citus_refuse(policy->relid, false);

	SPI_connect();
	group = ttl_citus_local_group();
	SPI_finish();
	if (group != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a TTL policy on the distributed table \"%s\" is made on the coordinator",
						get_rel_name(policy->relid)),
				 errdetail("The coordinator gives the policy to every node.")));
	if (policy->action == TTL_ACTION_ARCHIVE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("action \"archive\" is not supported on the distributed table \"%s\"",
						get_rel_name(policy->relid)),
				 errdetail("Each node purges its own shards; the archive table would have to be on every node."),
				 errhint("Use action \"delete\" or \"soft_delete\".")));
	if (policy->max_bytes > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("max_bytes is not supported on the distributed table \"%s\"",
						get_rel_name(policy->relid)),
				 errdetail("Each node sees the size of its own shards only, not the table's."),
				 errhint("Cap the table by rows with max_rows: that cap is the whole table's, over every node.")));
}

/*
 * ttl_citus_placements
 *		The tables that hold this node group's placements of the Citus
 *		table's shards, in good standing, in shard order, as a list of OIDs
 *		in the caller's memory context.  shard_name() gives a shard's name,
 *		which it quotes and may qualify; parse_ident() takes the name back,
 *		which is looked for in the table's schema, in C: no search_path is
 *		involved, and pg_class is not read in SQL, where Citus hides shards
 *		(citus.override_table_visibility).  A placement whose table is gone
 *		(a move or a split finishing) is left out.  The caller is connected
 *		to SPI.
 */
static List *
ttl_citus_placements(Oid relid, int32 group, MemoryContext cxt)
{
	Oid			nsp = get_rel_namespace(relid);
	List	   *result = NIL;
	char	   *sql;

	sql = psprintf("SELECT (SELECT i[pg_catalog.array_upper(i, 1)]"
				   "          FROM pg_catalog.parse_ident(pg_catalog.shard_name(s.logicalrelid, s.shardid)) i)"
				   "  FROM pg_catalog.pg_dist_shard s"
				   "  JOIN pg_catalog.pg_dist_placement p ON p.shardid = s.shardid"
				   " WHERE s.logicalrelid = %u AND p.groupid = %d AND p.shardstate = 1"
				   " ORDER BY s.shardid", relid, group);
	if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list the shards of \"%s\"", get_rel_name(relid));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		Oid			shard = name ? get_relname_relid(name, nsp) : InvalidOid;

		if (OidIsValid(shard))
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			result = lappend_oid(result, shard);
			MemoryContextSwitchTo(old);
		}
	}
	return result;
}

/*
 * ttl_citus_placement
 *		The placement on this node of a Citus table with one shard (the
 *		reference table ttl_index_citus_policy), as a quoted name usable
 *		in SQL, or NULL.  The caller is connected to SPI.
 */
static char *
ttl_citus_placement(Oid relid, int32 group)
{
	List	   *placements = ttl_citus_placements(relid, group, CurrentMemoryContext);
	Oid			placement;

	if (placements == NIL)
		return NULL;
	placement = linitial_oid(placements);
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(placement)),
									  get_rel_name(placement));
}

/*
 * ttl_citus_policies_sql
 *		On a Citus node other than the coordinator, the query that reads the
 *		policies on distributed tables from this node's copy of
 *		ttl_index_citus_policy, with the columns of ttl_load_policies's; a
 *		policy whose table or column this node does not have is left out.
 *		NULL elsewhere, and on a node that holds no copy yet.  nsp: the
 *		extension's schema.  The caller is connected to SPI.
 */
char *
ttl_citus_policies_sql(Oid nsp)
{
	Oid			mirror;
	int32		group;
	char	   *placement;

	if (!OidIsValid(nsp) ||
		!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return NULL;
	mirror = get_relname_relid(TTL_CITUS_POLICY_NAME, nsp);
	if (!OidIsValid(mirror) || ttl_citus_kind(mirror) != TTL_CITUS_REFERENCE)
		return NULL;
	group = ttl_citus_local_group();
	if (group <= 0)
		return NULL;
	placement = ttl_citus_placement(mirror, group);
	if (placement == NULL)
		return NULL;

	return psprintf("SELECT m.id, c.oid, a.attnum, m.column_name::pg_catalog.text,"
					" m.expire_after, coalesce(m.batch_size, 0), m.enabled,"
					" m.ttl_column::pg_catalog.text, m.filter, m.unit, m.action,"
					" NULL::pg_catalog.oid, m.soft_delete_column::pg_catalog.text,"
					" coalesce(m.rate_limit, 0), m.replication_origin, %s, %s, %s"
					" FROM %s m"
					" JOIN pg_catalog.pg_namespace n ON n.nspname = m.table_schema"
					" JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = m.table_name"
					" JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid"
					"  AND a.attname = m.column_name AND a.attnum > 0 AND NOT a.attisdropped"
					" ORDER BY m.id",
					get_attnum(mirror, "time_zone") != InvalidAttrNumber ?
					"m.time_zone, m.filter_functions" :
					"NULL::pg_catalog.text, NULL::pg_catalog.text[]",
					get_attnum(mirror, "max_rows") != InvalidAttrNumber ?
					"m.purge_window, m.max_rows, m.set_columns" :
					"NULL::pg_catalog.text, NULL::pg_catalog.int8, NULL::pg_catalog.text",
					get_attnum(mirror, "max_bytes") != InvalidAttrNumber ?
					"m.max_bytes" : "NULL::pg_catalog.int8",
					placement);
}

/*
 * ttl_citus_policy_copy
 *		Whether the relation of this name and schema is a placement of
 *		ttl_index_citus_policy: a write to it (INSERT, or the COPY Citus
 *		sends for INSERT ... SELECT) changes the policies this node purges,
 *		and wakes its worker at commit (hooks.c).  Called at the end of
 *		every statement that writes: a comparison of the name's prefix, and
 *		a catalog look-up only when it matches.
 */
bool
ttl_citus_policy_copy(const char *relname, Oid relnamespace)
{
	size_t		len = strlen(TTL_CITUS_POLICY_NAME);
	size_t		digits;

	if (relname == NULL || strncmp(relname, TTL_CITUS_POLICY_NAME, len) != 0 ||
		relname[len] != '_')
		return false;
	digits = strspn(relname + len + 1, "0123456789");
	if (digits == 0 || relname[len + 1 + digits] != '\0')
		return false;
	return relnamespace == ttl_catalog_namespace(true);
}

/*
 * ttl_citus_shards
 *		The tables of this node that hold placements of the distributed
 *		table's shards, in shard order, allocated in the caller's memory
 *		context.  NIL when it has none (or Citus says nothing of the
 *		table).  Takes no lock.
 */
List *
ttl_citus_shards(Oid relid)
{
	List	   *result = NIL;
	MemoryContext cxt = CurrentMemoryContext;
	bool		snapshot = !ActiveSnapshotSet();
	int32		group;

	/* at the start of a pass there is no snapshot yet */
	if (snapshot)
		PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
	group = ttl_citus_local_group();
	if (group >= 0)
		result = ttl_citus_placements(relid, group, cxt);
	SPI_finish();
	if (snapshot)
		PopActiveSnapshot();
	return result;
}

/*
 * ttl_citus_unpublishable
 *		Whether a delete from the table would fail because a publication
 *		publishes its deletes and it has no replica identity: a shard that
 *		a logical move (or split) is copying, for that moment.
 */
bool
ttl_citus_unpublishable(Relation rel)
{
	PublicationDesc pubdesc;

	if (rel->rd_rel->relreplident == REPLICA_IDENTITY_FULL ||
		OidIsValid(RelationGetReplicaIndex(rel)))
		return false;
	RelationBuildPublicationDesc(rel, &pubdesc);
	return pubdesc.pubactions.pubdelete;
}

/*
 * ttl_citus_index_name
 *		The qualified, quoted name of an index on a Citus table, to drop
 *		later with ttl_drop_index_named(); NULL when its table is not a
 *		Citus table.
 */
char *
ttl_citus_index_name(Oid indexoid)
{
	if (ttl_citus_kind(IndexGetRelation(indexoid, false)) == TTL_CITUS_NONE)
		return NULL;
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(indexoid)),
									  get_rel_name(indexoid));
}

/*
 * ttl_drop_index_named
 *		DROP INDEX IF EXISTS, through ProcessUtility, so that Citus drops
 *		the shards' copies too.
 */
void
ttl_drop_index_named(const char *name)
{
	int			ret;

	SPI_connect();
	ret = SPI_execute(psprintf("DROP INDEX IF EXISTS %s", name), false, 0);
	if (ret != SPI_OK_UTILITY)
		elog(ERROR, "could not drop index %s: %s", name, SPI_result_code_string(ret));
	SPI_finish();
}

/*
 * ttl_drop_created
 *		Drop an index ttl_create_index() made (see the top of the file).
 */
void
ttl_drop_created(Oid indexoid)
{
	char	   *citus_name = ttl_citus_index_name(indexoid);
	ObjectAddress obj;

	if (citus_name != NULL)
	{
		ttl_drop_index_named(citus_name);
		return;
	}
	ObjectAddressSet(obj, RelationRelationId, indexoid);
	performDeletion(&obj, DROP_RESTRICT, 0);
}
