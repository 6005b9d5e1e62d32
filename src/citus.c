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
 * ttl_index_policy), and lists the policy's targets anew at each pass: the
 * placements of the table's shards this node holds (ttl_citus_shards), as
 * partitions are listed.  So shard moves, splits, rebalances and new nodes
 * need nothing from us: a shard comes and goes with its placement.  A
 * shard a move or split has locked is skipped like any locked table (the
 * batch never waits for a lock), and one a logical move has published
 * without a replica identity is skipped too (ttl_citus_unpublishable).
 *
 * Reference tables and local tables added to Citus's metadata are refused:
 * a reference table is copied on every node, and a delete on one node is a
 * distributed transaction over all of them; a Citus local table's rows live
 * in a shard of the coordinator under another name.
 *
 * Citus is known by its catalog pg_catalog.pg_dist_partition: one syscache
 * look-up of that name per question, and nothing more, on a server without
 * it.  Citus's catalogs are read with AccessShareLock, under the caller's
 * transaction.  The one write here is to the policy catalog, when a policy
 * follows its table through one of Citus's functions that distribute or
 * replace tables (below, "Policies follow their tables"), as the API's
 * writes are done: as the extension's owner.
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

/* the policies on distributed tables, as every node reads them */
#define TTL_CITUS_POLICY_NAME	"ttl_index_citus_policy"

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
					" coalesce(m.rate_limit, 0), m.replication_origin, %s"
					" FROM %s m"
					" JOIN pg_catalog.pg_namespace n ON n.nspname = m.table_schema"
					" JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = m.table_name"
					" JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid"
					"  AND a.attname = m.column_name AND a.attnum > 0 AND NOT a.attisdropped"
					" ORDER BY m.id",
					get_attnum(mirror, "time_zone") != InvalidAttrNumber ?
					"m.time_zone, m.filter_functions" :
					"NULL::pg_catalog.text, NULL::pg_catalog.text[]",
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

/* ----------
 * Policies follow their tables through Citus's functions.
 *
 * Citus's functions that distribute a table, or convert it to another
 * kind, do it in one of two ways.  create_distributed_table(),
 * create_reference_table() and citus_schema_distribute() keep the
 * relation: the policy stays, but it must now reach the nodes, which
 * only a write of its catalog row does (the sync trigger).
 * alter_distributed_table(), undistribute_table(),
 * alter_table_set_access_method() and citus_schema_undistribute() (and
 * ALTER TABLE ... SET SCHEMA out of a distributed schema) build a new
 * table under a temporary name, copy the rows, recreate the indexes under
 * their old names, drop the old table and give the new one its name: the
 * DROP takes the policy away (our sql_drop event trigger), and the
 * indexes come back without the comment that marks the TTL index ours.
 * citus_add_local_table_to_metadata() (which
 * create_distributed_table_concurrently() runs first, in a session of its
 * own) renames the old table to its shard's name and makes a new one, the
 * shell, under the old name.
 *
 * So around each call of those functions (a function manager hook: they
 * are called from SQL) and around ALTER TABLE ... SET SCHEMA (the utility
 * hook), the policies are read before, with their tables' names, owners,
 * Citus kinds and the TTL indexes marked ours; after, a policy whose table
 * now goes by another relation under the same name (or under the new
 * schema of SET SCHEMA), of the same owner, that this transaction holds a
 * lock on (Citus made it or works on it: not a table another session
 * made meanwhile), is written again onto that relation: the same id, so
 * its counters stay, and every setting; its
 * TTL index, found by name, is marked ours again.  A policy whose table's
 * kind changed is written again as it is, so that the sync trigger gives
 * it to the nodes or takes it back.  All in the caller's transaction: the
 * policy follows if the call commits, and not if it fails.
 *
 * Decisions the issue left open:
 *	- A call that would leave a policy on a Citus reference table or a
 *	  Citus local table, which the nodes cannot purge (see the top of the
 *	  file), is refused with an error, and the table is left as it was;
 *	  dropping the policy first lets it through.  The same for a
 *	  distributed table whose policy archives (each node would need the
 *	  archive table).  Citus's own internal sessions are not refused: the
 *	  first step of create_distributed_table_concurrently() is a
 *	  citus_add_local_table_to_metadata() over a connection of its own,
 *	  during which the policy stays on the table that holds the rows (now
 *	  the Citus local table's shard, still a plain table to us), and
 *	  moves to the distributed table when the outer call ends.
 *	- A policy follows only a table of the same owner: Citus makes the new
 *	  table its old owner's.  Otherwise it is gone, with a WARNING.
 *	- Local tables that Citus converts by itself (a foreign key to a
 *	  reference table makes a Citus local table of a table) are left as
 *	  they were: the policy stays on the table that holds the rows.
 *
 * Reading and writing the catalog run as the extension's owner with
 * search_path pinned, as the API functions write it (api.c): the caller of
 * a Citus function may have no right on the extension's schema, and is not
 * refused for it.  What runs reads catalogs and writes the stored row
 * back: nothing of the table's owner, nor of the caller's, runs.
 * ----------
 */

/* the C functions (prosrc) of Citus followed; Citus's own library only */
static const char *const TtlCitusFollowed[] = {
	"create_distributed_table",
	"create_distributed_table_concurrently",
	"create_reference_table",
	"citus_add_local_table_to_metadata",
	"create_citus_local_table",
	"citus_schema_distribute",
	"citus_schema_undistribute",
	"alter_distributed_table",
	"undistribute_table",
	"alter_table_set_access_method",
	NULL
};

/* one policy as a span began */
typedef struct TtlCitusHeld
{
	int32		id;
	Oid			relid;
	Oid			nsp;
	char	   *relname;
	Oid			owner;
	char		kind;			/* 'd', 'r', 'l' or 0 (TtlCitusKind in SQL) */
	bool		archives;
	Datum		row;			/* the catalog row, a composite */
	List	   *indexes;		/* names of its TTL indexes (ours) */
} TtlCitusHeld;

/* one call of a followed function, or one SET SCHEMA statement */
typedef struct TtlCitusSpan
{
	Oid			fn_oid;			/* InvalidOid: a utility statement */
	MemoryContext cxt;
	List	   *held;			/* TtlCitusHeld */
	Oid			moved_relid;	/* SET SCHEMA: the table, */
	Oid			moved_to;		/* and its new schema */
	struct TtlCitusSpan *outer;
} TtlCitusSpan;

/* a policy after a span: its table now, and that table's kind */
typedef struct TtlCitusNow
{
	int32		id;				/* hash key */
	Oid			relid;
	char		kind;
} TtlCitusNow;

/* the followed calls in progress, innermost first (transaction memory) */
static TtlCitusSpan *Spans = NULL;
/* our own catalog writes in progress: no span of their own */
static bool Following = false;

static needs_fmgr_hook_type prev_needs_fmgr_hook = NULL;
static fmgr_hook_type prev_fmgr_hook = NULL;

/* the kind of a Citus table as SQL tells it, as ttl_citus_kind does */
#define TTL_CITUS_KIND_SQL \
	"(SELECT CASE WHEN d.partmethod = 'n' AND d.repmodel = 't' THEN 'r'" \
	"             WHEN d.partmethod = 'n' AND d.colocationid = 0 THEN 'l'" \
	"             ELSE 'd' END" \
	"   FROM pg_catalog.pg_dist_partition d WHERE d.logicalrelid = p.relid)"

/*
 * ttl_citus_followed
 *		Whether the function is one of Citus's that create, replace or
 *		distribute a table (TtlCitusFollowed): a C function of Citus's
 *		library in pg_catalog.  One syscache look-up; C functions only
 *		read their pg_proc row further.
 */
static bool
ttl_citus_followed(Oid fn_oid)
{
	HeapTuple	tup;
	Form_pg_proc proc;
	bool		result = false;
	bool		isnull;
	Datum		d;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn_oid));
	if (!HeapTupleIsValid(tup))
		return false;
	proc = (Form_pg_proc) GETSTRUCT(tup);
	if (proc->prolang == ClanguageId && proc->pronamespace == PG_CATALOG_NAMESPACE)
	{
		d = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_probin, &isnull);
		if (!isnull)
		{
			char	   *probin = TextDatumGetCString(d);
			char	   *base = strrchr(probin, '/');

			base = base ? base + 1 : probin;
			if (strcmp(base, "citus") == 0 || strcmp(base, "citus" DLSUFFIX) == 0)
			{
				d = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
				if (!isnull)
				{
					char	   *src = TextDatumGetCString(d);

					for (int i = 0; TtlCitusFollowed[i] != NULL && !result; i++)
						result = strcmp(src, TtlCitusFollowed[i]) == 0;
					pfree(src);
				}
			}
			pfree(probin);
		}
	}
	ReleaseSysCache(tup);
	return result;
}

/*
 * ttl_citus_internal_session
 *		Whether this session is one Citus opened for its own work (its
 *		connections' application_name).
 */
static bool
ttl_citus_internal_session(void)
{
	return application_name != NULL &&
		strncmp(application_name, "citus_internal", strlen("citus_internal")) == 0;
}

/*
 * ttl_citus_locked_by_me
 *		Whether this transaction holds a lock, of any mode, on the relation.
 */
static bool
ttl_citus_locked_by_me(Oid relid)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
#if PG_VERSION_NUM >= 170000
	return LockHeldByMe(&tag, AccessShareLock, true);
#else
	for (LOCKMODE mode = AccessShareLock; mode <= AccessExclusiveLock; mode++)
	{
		if (LockHeldByMe(&tag, mode))
			return true;
	}
	return false;
#endif
}

/*
 * ttl_citus_kind_char
 *		TtlCitusKind as TTL_CITUS_KIND_SQL gives it.
 */
static char
ttl_citus_kind_char(TtlCitusKind kind)
{
	return kind == TTL_CITUS_DISTRIBUTED ? 'd' : kind == TTL_CITUS_REFERENCE ? 'r' :
		kind == TTL_CITUS_LOCAL ? 'l' : 0;
}

/*
 * ttl_citus_as_owner
 *		Run a statement on the policy catalog as the extension's owner,
 *		with the settings stored SQL is parsed under pinned (search_path
 *		first), as api.c writes it.  Reads too: the caller of a Citus
 *		function may have no right on the extension's schema, and must not
 *		be refused for it.  Not read-only, so the snapshot sees what the
 *		call has done so far.  Returns SPI's result; the caller is
 *		connected to SPI.
 */
static int
ttl_citus_as_owner(const char *sql, int nargs, Oid *argtypes, Datum *values)
{
	Oid			save_userid;
	int			save_sec_context;
	int			nestlevel;
	Oid			extowner = InvalidOid;
	int			ret;

	if (!ttl_extension_info(NULL, &extowner))
		elog(ERROR, "extension \"%s\" is not installed in this database",
			 TTL_EXTENSION_NAME);
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(extowner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	nestlevel = ttl_parse_env_enter();
	ret = SPI_execute_with_args(sql, nargs, argtypes, values, NULL, false, 0);
	ttl_parse_env_leave(nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (ret < 0)
		elog(ERROR, "could not run a statement on the ttl_index policy catalog: %s",
			 SPI_result_code_string(ret));
	return ret;
}

/*
 * ttl_citus_span_begin
 *		Read the policies before a followed call (see above), into a span
 *		in transaction memory.  A span with nothing held when there is
 *		nothing to follow: no extension, no Citus, no policy.
 */
static TtlCitusSpan *
ttl_citus_span_begin(Oid fn_oid)
{
	MemoryContext cxt;
	TtlCitusSpan *span;
	Oid			nsp;
	char	   *sql;
	bool		snapshot;

	cxt = AllocSetContextCreate(TopTransactionContext, "ttl_index Citus follow",
								ALLOCSET_SMALL_SIZES);
	span = MemoryContextAllocZero(cxt, sizeof(TtlCitusSpan));
	span->fn_oid = fn_oid;
	span->cxt = cxt;
	if (Following || !IsTransactionState())
		return span;
	nsp = ttl_catalog_namespace(true);
	if (!OidIsValid(nsp) ||
		!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)) ||
		!OidIsValid(get_relname_relid(TTL_CATALOG_NAME, nsp)))
		return span;

	sql = psprintf("SELECT p.id, p.relid::pg_catalog.oid, c.relnamespace,"
				   " c.relname::pg_catalog.text, c.relowner, p.action = 'archive', "
				   TTL_CITUS_KIND_SQL ","
				   " ARRAY(SELECT ic.relname::pg_catalog.text"
				   "   FROM pg_catalog.pg_index i"
				   "   JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid"
				   "   JOIN pg_catalog.pg_description t ON t.objoid = i.indexrelid"
				   "    AND t.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND t.objsubid = 0"
				   "  WHERE i.indrelid = p.relid AND t.description = %s),"
				   " p"
				   " FROM %s.%s p JOIN pg_catalog.pg_class c ON c.oid = p.relid"
				   " ORDER BY p.id",
				   quote_literal_cstr(TTL_INDEX_COMMENT),
				   quote_identifier(get_namespace_name(nsp)),
				   quote_identifier(TTL_CATALOG_NAME));
	snapshot = !ActiveSnapshotSet();
	if (snapshot)
		PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
	if (ttl_citus_as_owner(sql, 0, NULL, NULL) != SPI_OK_SELECT)
		elog(ERROR, "could not read the ttl_index policy catalog");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(cxt);
		TtlCitusHeld *h = palloc0(sizeof(TtlCitusHeld));
		bool		isnull;
		Datum		d;

		h->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		h->relid = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
		h->nsp = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
		h->relname = TextDatumGetCString(SPI_getbinval(tup, desc, 4, &isnull));
		h->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 5, &isnull));
		h->archives = DatumGetBool(SPI_getbinval(tup, desc, 6, &isnull)) && !isnull;
		d = SPI_getbinval(tup, desc, 7, &isnull);
		h->kind = isnull ? 0 : TextDatumGetCString(d)[0];
		d = SPI_getbinval(tup, desc, 8, &isnull);
		if (!isnull)
		{
			Datum	   *elems;
			bool	   *nulls;
			int			n;

			deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false,
							  TYPALIGN_INT, &elems, &nulls, &n);
			for (int j = 0; j < n; j++)
				if (!nulls[j])
					h->indexes = lappend(h->indexes, TextDatumGetCString(elems[j]));
		}
		h->row = datumCopy(SPI_getbinval(tup, desc, 9, &isnull), false, -1);
		span->held = lappend(span->held, h);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	if (snapshot)
		PopActiveSnapshot();
	return span;
}

/*
 * ttl_citus_refuse_kind
 *		ERROR when a followed call leaves a policy where the nodes cannot
 *		purge it (see above).  Citus's internal sessions are let through.
 */
static void
ttl_citus_refuse_kind(TtlCitusHeld *h, char kind)
{
	if (ttl_citus_internal_session())
		return;
	if (kind == 'r')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot make table \"%s\" a Citus reference table: it has a TTL policy",
						h->relname),
				 errdetail("A reference table is copied on every node; ttl_index does not purge one."),
				 errhint("Drop the policy with ttl_drop_index() first.")));
	if (kind == 'l')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot make table \"%s\" a Citus local table: it has a TTL policy",
						h->relname),
				 errdetail("ttl_index does not purge a Citus local table."),
				 errhint("Drop the policy with ttl_drop_index() first, or distribute the table with create_distributed_table().")));
	if (kind == 'd' && h->archives)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot distribute table \"%s\": its TTL policy archives the rows it expires",
						h->relname),
				 errdetail("Each node purges its own shards; the archive table would have to be on every node."),
				 errhint("Give the policy action \"delete\" or \"soft_delete\" with ttl_create_index(), or drop it with ttl_drop_index(), first.")));
}

/*
 * ttl_citus_span_end
 *		After a followed call (see above): each held policy follows its
 *		table, and one whose table changed kind is written again for the
 *		nodes.  Frees the span.
 */
static void
ttl_citus_span_end(TtlCitusSpan *span)
{
	Oid			nsp;
	Oid			catalog;
	HTAB	   *now;
	HASHCTL		ctl;
	List	   *touch = NIL;
	ListCell   *lc;
	bool		snapshot;
	char	   *qualified;

	if (span->held == NIL || !IsTransactionState() ||
		!OidIsValid(nsp = ttl_catalog_namespace(true)) ||
		!OidIsValid(catalog = get_relname_relid(TTL_CATALOG_NAME, nsp)))
	{
		MemoryContextDelete(span->cxt);
		return;
	}
	qualified = quote_qualified_identifier(get_namespace_name(nsp), TTL_CATALOG_NAME);

	/* the catalog now: id -> relid, and that table's kind */
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(int32);
	ctl.entrysize = sizeof(TtlCitusNow);
	ctl.hcxt = span->cxt;
	now = hash_create("ttl_index Citus follow", 64, &ctl,
					  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	CommandCounterIncrement();
	snapshot = !ActiveSnapshotSet();
	if (snapshot)
		PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
	if (ttl_citus_as_owner(psprintf("SELECT p.id, p.relid::pg_catalog.oid, " TTL_CITUS_KIND_SQL
									" FROM %s p", qualified), 0, NULL, NULL) != SPI_OK_SELECT)
		elog(ERROR, "could not read the ttl_index policy catalog");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int32		id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		TtlCitusNow *e = hash_search(now, &id, HASH_ENTER, NULL);
		Datum		k;

		e->relid = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
		k = SPI_getbinval(tup, desc, 3, &isnull);
		e->kind = isnull ? 0 : TextDatumGetCString(k)[0];
	}

	PG_TRY();
	{
		Following = true;
		foreach(lc, span->held)
		{
			TtlCitusHeld *h = (TtlCitusHeld *) lfirst(lc);
			TtlCitusNow *e = hash_search(now, &h->id, HASH_FIND, NULL);
			Oid			cur = e != NULL ? e->relid : InvalidOid;
			Oid			target_nsp = h->nsp;
			Oid			x;

			if (h->relid == span->moved_relid && OidIsValid(span->moved_to))
				target_nsp = span->moved_to;
			x = get_relname_relid(h->relname, target_nsp);

			/*
			 * The table goes by another relation now, one this transaction
			 * holds a lock on (Citus made it, or works on it): not a table
			 * another session dropped and made again meanwhile.
			 */
			if (OidIsValid(x) && x != h->relid && (e == NULL || cur == h->relid) &&
				ttl_citus_locked_by_me(x))
			{
				/* the table goes by another relation now: follow it */
				char		xkind = ttl_citus_kind_char(ttl_citus_kind(x));
				HeapTuple	ctup = SearchSysCache1(RELOID, ObjectIdGetDatum(x));
				Oid			xowner = InvalidOid;
				char		xrelkind = 0;
				Oid			argtypes[2];
				Datum		values[2];
				ListCell   *lc2;

				if (HeapTupleIsValid(ctup))
				{
					xowner = ((Form_pg_class) GETSTRUCT(ctup))->relowner;
					xrelkind = ((Form_pg_class) GETSTRUCT(ctup))->relkind;
					ReleaseSysCache(ctup);
				}
				if (xkind == 'r' || xkind == 'l' || (xkind == 'd' && h->archives))
				{
					ttl_citus_refuse_kind(h, xkind);
					continue;	/* Citus's own session: stay on the rows */
				}
				if (xowner != h->owner ||
					(xrelkind != RELKIND_RELATION && xrelkind != RELKIND_PARTITIONED_TABLE))
				{
					if (e == NULL)
						ereport(WARNING,
								(errmsg("the TTL policy of table \"%s\" is dropped with it",
										h->relname),
								 errdetail("The table that replaces it is not a table of the same owner.")));
					continue;
				}
				argtypes[0] = INT4OID;
				values[0] = Int32GetDatum(h->id);
				if (e != NULL)
					ttl_citus_as_owner(psprintf("DELETE FROM %s WHERE id = $1", qualified),
									   1, argtypes, values);
				argtypes[0] = get_rel_type_id(catalog);
				values[0] = h->row;
				argtypes[1] = OIDOID;
				values[1] = ObjectIdGetDatum(x);
				ttl_citus_as_owner(psprintf("INSERT INTO %s SELECT (pg_catalog.jsonb_populate_record($1,"
											" pg_catalog.jsonb_build_object('relid', $2, 'created_index', NULL))).*",
											qualified),
								   2, argtypes, values);
				/* its TTL index, rebuilt under the same name, is ours again */
				foreach(lc2, h->indexes)
				{
					Oid			idx = get_relname_relid((char *) lfirst(lc2), get_rel_namespace(x));

					if (OidIsValid(idx) && IndexGetRelation(idx, true) == x &&
						GetComment(idx, RelationRelationId, 0) == NULL)
						CreateComments(idx, RelationRelationId, 0, TTL_INDEX_COMMENT);
				}
				CommandCounterIncrement();
				continue;
			}

			/* the same relation: its kind may have changed */
			if (e == NULL || cur != h->relid || e->kind == h->kind ||
				!ttl_citus_locked_by_me(cur))
				continue;
			ttl_citus_refuse_kind(h, e->kind);
			touch = lappend_int(touch, h->id);
		}

		if (touch != NIL)
		{
			Oid			argtypes[1] = {INT4ARRAYOID};
			Datum		values[1];
			Datum	   *ids = palloc(sizeof(Datum) * list_length(touch));
			int			n = 0;
			ListCell   *lc3;

			foreach(lc3, touch)
				ids[n++] = Int32GetDatum(lfirst_int(lc3));
			values[0] = PointerGetDatum(construct_array(ids, n, INT4OID, sizeof(int32),
														true, TYPALIGN_INT));
			/* the sync trigger gives it to the nodes, or takes it back */
			ttl_citus_as_owner(psprintf("UPDATE %s SET relid = relid WHERE id = ANY ($1)",
										qualified),
							   1, argtypes, values);
			CommandCounterIncrement();
		}
	}
	PG_FINALLY();
	{
		Following = false;
	}
	PG_END_TRY();

	SPI_finish();
	if (snapshot)
		PopActiveSnapshot();
	MemoryContextDelete(span->cxt);
}

/*
 * ttl_citus_needs_fmgr_hook
 *		Function manager hook: our hook runs around the followed functions.
 */
static bool
ttl_citus_needs_fmgr_hook(Oid fn_oid)
{
	if (prev_needs_fmgr_hook && prev_needs_fmgr_hook(fn_oid))
		return true;
	return ttl_citus_followed(fn_oid);
}

/*
 * ttl_citus_fmgr_hook
 *		Function manager hook: a span around each call of a followed
 *		function.  The spans are a stack of our own: *private belongs to
 *		whichever hook comes first.
 */
static void
ttl_citus_fmgr_hook(FmgrHookEventType event, FmgrInfo *flinfo, Datum *private)
{
	TtlCitusSpan *span;

	if (prev_fmgr_hook)
		prev_fmgr_hook(event, flinfo, private);
	switch (event)
	{
		case FHET_START:
			if (!ttl_citus_followed(flinfo->fn_oid))
				return;
			span = ttl_citus_span_begin(flinfo->fn_oid);
			span->outer = Spans;
			Spans = span;
			break;
		case FHET_END:
		case FHET_ABORT:
			/* by the stack alone: no catalog look-up while an error is out */
			span = Spans;
			if (span == NULL || span->fn_oid != flinfo->fn_oid)
				break;
			Spans = span->outer;
			if (event == FHET_END)
				ttl_citus_span_end(span);
			else
				MemoryContextDelete(span->cxt);
			break;
	}
}

/*
 * ttl_citus_xact_callback
 *		The spans live in transaction memory: none outlives it.
 */
static void
ttl_citus_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		Spans = NULL;
		Following = false;
	}
}

/*
 * ttl_citus_utility_begin
 *		Before a utility statement: ALTER TABLE ... SET SCHEMA, which Citus
 *		turns into distributing the table (into a distributed schema) or
 *		undistributing it (out of one), is a span.  NULL for any other
 *		statement, and where Citus is not installed.
 */
void *
ttl_citus_utility_begin(Node *parsetree)
{
	AlterObjectSchemaStmt *stmt;
	TtlCitusSpan *span;
	Oid			relid;

	if (!IsA(parsetree, AlterObjectSchemaStmt))
		return NULL;
	stmt = (AlterObjectSchemaStmt *) parsetree;
	if (stmt->objectType != OBJECT_TABLE || stmt->relation == NULL || Following ||
		!IsTransactionState() ||
		!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return NULL;
	/* no lock: PostgreSQL's own checks come first */
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(relid))
		return NULL;
	span = ttl_citus_span_begin(InvalidOid);
	span->moved_relid = relid;
	span->moved_to = get_namespace_oid(stmt->newschema, true);
	return span;
}

/*
 * ttl_citus_utility_end
 *		After the statement ttl_citus_utility_begin() saw.
 */
void
ttl_citus_utility_end(void *span)
{
	if (span != NULL)
		ttl_citus_span_end((TtlCitusSpan *) span);
}

/*
 * ttl_citus_hooks_install
 *		The function manager hook and the transaction callback (every
 *		backend that loads the library).
 */
void
ttl_citus_hooks_install(void)
{
	prev_needs_fmgr_hook = needs_fmgr_hook;
	needs_fmgr_hook = ttl_citus_needs_fmgr_hook;
	prev_fmgr_hook = fmgr_hook;
	fmgr_hook = ttl_citus_fmgr_hook;
	RegisterXactCallback(ttl_citus_xact_callback, NULL);
}

/* ----------
 * What the coordinator says of each node (ttl_index_citus_nodes).
 *
 * The coordinator asks every primary node in pg_dist_node (Citus's
 * master_run_on_worker(), the caller's connections and rights) for its
 * state and for its counters of the policies on distributed tables, and
 * says per node and policy what it can:
 *
 *	purging					the node answered with the policy's counters
 *	ttl_index not preloaded	the node has the extension but not the library
 *							in shared_preload_libraries: nothing purges
 *	ttl_index disabled		ttl_index.enabled is off there
 *	policy missing			the node answered without the policy: its copy
 *							of ttl_index_citus_policy lacks it
 *	no ttl_index			the extension is not installed there
 *	node down				no connection could be made
 *	node disabled			Citus marks the node inactive: not asked
 *	failed					the node's answer was an error (last_error)
 *
 * A node that did not answer gives its last known counters (rows deleted,
 * errors, last run), marked stale with the time they were read, so that
 * the coordinator's sums never fall because a node is down.  They are kept
 * in shared memory by whoever reads them (a fixed number of entries, the
 * oldest replaced first; only the counters every role may see), from the
 * server's start: a coordinator restarted while a node is down has
 * nothing to give for it, and says so (state, no counts).
 *
 * Locking: the cache's entries under its own lock ("ttl_index citus
 * counts"), held only to copy an entry in or out.
 * ----------
 */

#define TTL_CITUS_COUNTS		4096
#define TTL_LOCK_CITUS_COUNTS	"ttl_index citus counts"

typedef struct TtlCitusCount
{
	Oid			dboid;			/* InvalidOid: free */
	int32		policy_id;
	TimestampTz made;			/* the policy's created_at: ids come back */
	int32		nodeid;
	int64		rows_deleted;
	int64		errors;
	TimestampTz last_run;		/* 0: none */
	TimestampTz counted_at;
} TtlCitusCount;

typedef struct TtlCitusCounts
{
	int			n;
	TtlCitusCount e[FLEXIBLE_ARRAY_MEMBER];
} TtlCitusCounts;

static TtlCitusCounts *Counts = NULL;
static LWLock *CountsLock = NULL;

/*
 * ttl_citus_counts_wanted
 *		Entries of the cache: some when Citus is preloaded, none otherwise.
 */
static int
ttl_citus_counts_wanted(void)
{
	char	   *libs;
	List	   *names = NIL;
	ListCell   *lc;
	bool		citus = false;

	if (shared_preload_libraries_string == NULL)
		return 0;
	libs = pstrdup(shared_preload_libraries_string);
	if (!SplitDirectoriesString(libs, ',', &names))
		return 0;
	foreach(lc, names)
	{
		char	   *name = (char *) lfirst(lc);
		char	   *base = strrchr(name, '/');

		base = base ? base + 1 : name;
		citus |= strcmp(base, "citus") == 0 || strcmp(base, "citus" DLSUFFIX) == 0;
	}
	return citus ? TTL_CITUS_COUNTS : 0;
}

static Size
ttl_citus_counts_size(void)
{
	return add_size(offsetof(TtlCitusCounts, e),
					mul_size(ttl_citus_counts_wanted(), sizeof(TtlCitusCount)));
}

/*
 * ttl_citus_shmem_request
 *		From the shmem request hook: the cache and its lock.
 */
void
ttl_citus_shmem_request(void)
{
	RequestAddinShmemSpace(ttl_citus_counts_size());
	RequestNamedLWLockTranche(TTL_LOCK_CITUS_COUNTS, 1);
}

/*
 * ttl_citus_shmem_init
 *		From the shmem startup hook: create (or attach to) the cache.
 */
void
ttl_citus_shmem_init(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	Counts = ShmemInitStruct("ttl_index citus counts", ttl_citus_counts_size(), &found);
	if (!found)
	{
		memset(Counts, 0, ttl_citus_counts_size());
		Counts->n = ttl_citus_counts_wanted();
	}
	CountsLock = &(GetNamedLWLockTranche(TTL_LOCK_CITUS_COUNTS))[0].lock;
	LWLockRelease(AddinShmemInitLock);
}

/*
 * ttl_citus_count_remember
 *		Keep a node's counters of a policy, as just read.
 */
static void
ttl_citus_count_remember(const TtlCitusCount *c)
{
	int			slot = -1;

	if (Counts == NULL || Counts->n == 0)
		return;
	LWLockAcquire(CountsLock, LW_EXCLUSIVE);
	for (int i = 0; i < Counts->n; i++)
	{
		TtlCitusCount *e = &Counts->e[i];

		if (e->dboid == c->dboid && e->policy_id == c->policy_id &&
			e->made == c->made && e->nodeid == c->nodeid)
		{
			slot = i;
			break;
		}
		/* else a free entry, else the oldest */
		if (slot < 0 || (Counts->e[slot].dboid != InvalidOid &&
						 (e->dboid == InvalidOid || e->counted_at < Counts->e[slot].counted_at)))
			slot = i;
	}
	Counts->e[slot] = *c;
	LWLockRelease(CountsLock);
}

/*
 * ttl_citus_count_recall
 *		A node's last known counters of a policy, if any.
 */
static bool
ttl_citus_count_recall(TtlCitusCount *c)
{
	bool		found = false;

	if (Counts == NULL || Counts->n == 0)
		return false;
	LWLockAcquire(CountsLock, LW_SHARED);
	for (int i = 0; i < Counts->n && !found; i++)
	{
		TtlCitusCount *e = &Counts->e[i];

		if (e->dboid == c->dboid && e->policy_id == c->policy_id &&
			e->made == c->made && e->nodeid == c->nodeid)
		{
			*c = *e;
			found = true;
		}
	}
	LWLockRelease(CountsLock);
	return found;
}

/*
 * ttl_index_citus_node_state
 *		What this node can do for the policies on distributed tables, in
 *		words (see above): purging, ttl_index not preloaded, ttl_index
 *		disabled.  Asked of every node by ttl_index_citus_nodes().
 */
PG_FUNCTION_INFO_V1(ttl_index_citus_node_state);

Datum
ttl_index_citus_node_state(PG_FUNCTION_ARGS)
{
	const char *state = !ttl_preloaded ? "ttl_index not preloaded" :
		!ttl_enabled ? "ttl_index disabled" : "purging";

	PG_RETURN_TEXT_P(cstring_to_text(state));
}

/* a policy the coordinator expects every node to purge */
typedef struct TtlCitusExpected
{
	int32		id;
	Oid			relid;
	TimestampTz made;
} TtlCitusExpected;

/* a node's answer for one policy */
typedef struct TtlCitusAnswer
{
	int32		id;
	bool		nulls[7];
	Datum		values[7];		/* rows_deleted .. falling_behind */
} TtlCitusAnswer;

/*
 * ttl_citus_run_on
 *		Run one command on nodes through Citus (master_run_on_worker), the
 *		caller's connections.  Returns the SPI result: node_name,
 *		node_port, success, result.  The caller is connected to SPI.
 */
static void
ttl_citus_run_on(const char *names_sql, const char *ports_sql, const char *command)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];

	values[0] = CStringGetTextDatum(command);
	if (SPI_execute_with_args(psprintf("SELECT r.node_name, r.node_port, r.success, r.result"
									   "  FROM pg_catalog.master_run_on_worker(%s, %s,"
									   "   pg_catalog.array_fill($1, ARRAY[pg_catalog.cardinality(%s)]), true) r",
									   names_sql, ports_sql, names_sql),
							  1, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not run a command on the Citus nodes");
}

/*
 * ttl_index_citus_nodes
 *		Per node and policy on a distributed table, on the coordinator:
 *		what the node says of it, or what is known (see above).  Nothing,
 *		and no node asked, when there is no such policy.
 */
PG_FUNCTION_INFO_V1(ttl_index_citus_nodes);

#define TTL_CITUS_NODES_COLS	15

Datum
ttl_index_citus_nodes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext callcxt = CurrentMemoryContext;
	Oid			nsp;
	const char *nspname;
	char	   *command;
	List	   *expected = NIL;
	int			nnodes;
	struct
	{
		int32		nodeid;
		char	   *name;
		int32		port;
		bool		active;
		bool		answered;
		char	   *result;
	}		   *nodes;
	TimestampTz now = GetCurrentTimestamp();
	int			nestlevel;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != TTL_CITUS_NODES_COLS)
		elog(ERROR, "ttl_index_citus_nodes: unexpected number of result columns %d",
			 rsinfo->setDesc->natts);
	if (!OidIsValid(get_relname_relid("pg_dist_node", PG_CATALOG_NAMESPACE)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("Citus is not installed in this database")));
	nsp = ttl_catalog_namespace(false);
	nspname = quote_identifier(get_namespace_name(nsp));

	SPI_connect();
	/* the caller's settings play no part in reading the answers */
	nestlevel = ttl_parse_env_enter();

	/* the policies: on a distributed table, or given to the nodes */
	if (SPI_execute(psprintf("SELECT p.id, p.relid::pg_catalog.oid, p.created_at FROM %s.%s p"
							 " WHERE p.id IN (SELECT m.id FROM %s.%s m)"
							 "    OR EXISTS (SELECT FROM pg_catalog.pg_dist_partition d"
							 "                WHERE d.logicalrelid = p.relid"
							 "                  AND NOT (d.partmethod = 'n' AND (d.repmodel = 't' OR d.colocationid = 0)))"
							 " ORDER BY p.id",
							 nspname, quote_identifier(TTL_CATALOG_NAME),
							 nspname, quote_identifier(TTL_CITUS_POLICY_NAME)),
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the ttl_index policy catalog");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(callcxt);
		TtlCitusExpected *x = palloc(sizeof(TtlCitusExpected));
		bool		isnull;

		x->id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		x->relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
		x->made = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3, &isnull));
		expected = lappend(expected, x);
		MemoryContextSwitchTo(old);
	}
	if (expected == NIL)
	{
		ttl_parse_env_leave(nestlevel);
		SPI_finish();
		return (Datum) 0;
	}

	/* the nodes */
	if (SPI_execute("SELECT n.nodeid, n.nodename::pg_catalog.text, n.nodeport, n.isactive"
					"  FROM pg_catalog.pg_dist_node n WHERE n.noderole = 'primary'"
					" ORDER BY n.groupid, n.nodeid", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_node");
	nnodes = (int) SPI_processed;
	nodes = MemoryContextAllocZero(callcxt, sizeof(*nodes) * Max(nnodes, 1));
	for (int i = 0; i < nnodes; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		bool		isnull;

		nodes[i].nodeid = DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		nodes[i].name = MemoryContextStrdup(callcxt, SPI_getvalue(tup, SPI_tuptable->tupdesc, 2));
		nodes[i].port = DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 3, &isnull));
		nodes[i].active = DatumGetBool(SPI_getbinval(tup, SPI_tuptable->tupdesc, 4, &isnull));
	}

	/* each active node's state and counters, all nodes at once */
	command = psprintf("SELECT pg_catalog.json_build_object("
					   "'state', %s.ttl_index_citus_node_state(),"
					   "'policies', (SELECT coalesce(pg_catalog.json_agg(pg_catalog.json_build_object("
					   " 'policy_id', s.policy_id, 'rows_deleted', s.rows_deleted,"
					   " 'errors', s.errors, 'last_error', s.last_error,"
					   " 'last_run', s.last_run, 'lag', s.lag,"
					   " 'expired_estimate', s.expired_estimate,"
					   " 'falling_behind', s.falling_behind)), '[]')"
					   "  FROM %s.ttl_index_policy_stats() s"
					   " WHERE s.policy_id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT m.id FROM %s.%s m))"
					   "    OR (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g) OPERATOR(pg_catalog.=) 0))",
					   nspname, nspname, nspname, quote_identifier(TTL_CITUS_POLICY_NAME));
	ttl_citus_run_on("ARRAY(SELECT n.nodename::pg_catalog.text FROM pg_catalog.pg_dist_node n"
					 " WHERE n.noderole = 'primary' AND n.isactive ORDER BY n.nodeid)",
					 "ARRAY(SELECT n.nodeport FROM pg_catalog.pg_dist_node n"
					 " WHERE n.noderole = 'primary' AND n.isactive ORDER BY n.nodeid)",
					 command);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *name = SPI_getvalue(tup, desc, 1);
		bool		isnull;
		int32		port = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		bool		success = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull)) && !isnull;
		char	   *result = SPI_getvalue(tup, desc, 4);

		for (int i = 0; i < nnodes; i++)
		{
			if (nodes[i].port != port || strcmp(nodes[i].name, name) != 0)
				continue;
			nodes[i].answered = success;
			nodes[i].result = MemoryContextStrdup(callcxt, result ? result : "");
		}
	}

	for (int i = 0; i < nnodes; i++)
	{
		const char *state;
		const char *error = NULL;
		List	   *answers = NIL;
		ListCell   *lc;

		if (!nodes[i].active)
			state = "node disabled";
		else if (nodes[i].result == NULL ||
				 strncmp(nodes[i].result, "failed to connect to", strlen("failed to connect to")) == 0)
		{
			state = "node down";
			error = nodes[i].result;
		}
		else if (!nodes[i].answered)
		{
			/* why: the extension missing, or something else */
			state = "failed";
			error = nodes[i].result;
			ttl_citus_run_on(psprintf("ARRAY[%s]", quote_literal_cstr(nodes[i].name)),
							 psprintf("ARRAY[%d]", nodes[i].port),
							 "SELECT count(*) FROM pg_catalog.pg_extension WHERE extname = 'ttl_index'");
			if (SPI_processed == 1)
			{
				bool		isnull;
				char	   *probe = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4);

				if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull)))
					state = "node down";
				else if (probe != NULL && strcmp(probe, "0") == 0)
				{
					state = "no ttl_index";
					error = NULL;
				}
			}
		}
		else
		{
			Oid			argtypes[1] = {TEXTOID};
			Datum		values[1];

			values[0] = CStringGetTextDatum(nodes[i].result);
			if (SPI_execute_with_args("SELECT s.j->>'state', x.policy_id, x.rows_deleted, x.errors,"
									  " x.last_error, x.last_run, x.lag, x.expired_estimate,"
									  " x.falling_behind"
									  " FROM (SELECT $1::pg_catalog.json AS j) s"
									  " LEFT JOIN LATERAL pg_catalog.json_to_recordset(s.j->'policies')"
									  "  AS x(policy_id integer, rows_deleted bigint, errors bigint,"
									  "       last_error text, last_run timestamptz, lag interval,"
									  "       expired_estimate bigint, falling_behind boolean) ON true",
									  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT ||
				SPI_processed == 0)
				elog(ERROR, "could not read the answer of node %s:%d", nodes[i].name, nodes[i].port);
			state = MemoryContextStrdup(callcxt, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
			for (uint64 r = 0; r < SPI_processed; r++)
			{
				HeapTuple	tup = SPI_tuptable->vals[r];
				TupleDesc	desc = SPI_tuptable->tupdesc;
				bool		isnull;
				Datum		id = SPI_getbinval(tup, desc, 2, &isnull);
				MemoryContext old;
				TtlCitusAnswer *a;

				if (isnull)
					continue;
				old = MemoryContextSwitchTo(callcxt);
				a = palloc0(sizeof(TtlCitusAnswer));
				a->id = DatumGetInt32(id);
				for (int c = 0; c < lengthof(a->values); c++)
				{
					Form_pg_attribute att = TupleDescAttr(desc, c + 2);
					Datum		v = SPI_getbinval(tup, desc, c + 3, &a->nulls[c]);

					a->values[c] = a->nulls[c] ? (Datum) 0 :
						datumCopy(v, att->attbyval, att->attlen);
				}
				answers = lappend(answers, a);
				MemoryContextSwitchTo(old);
			}
		}

		foreach(lc, expected)
		{
			TtlCitusExpected *x = (TtlCitusExpected *) lfirst(lc);
			TtlCitusAnswer *a = NULL;
			Datum		values[TTL_CITUS_NODES_COLS];
			bool		nulls[TTL_CITUS_NODES_COLS];
			TtlCitusCount c;
			ListCell   *lc2;

			foreach(lc2, answers)
			{
				if (((TtlCitusAnswer *) lfirst(lc2))->id == x->id)
					a = (TtlCitusAnswer *) lfirst(lc2);
			}
			memset(nulls, true, sizeof(nulls));
			values[0] = Int32GetDatum(x->id);
			nulls[0] = false;
			values[1] = ObjectIdGetDatum(x->relid);
			nulls[1] = false;
			values[2] = CStringGetTextDatum(nodes[i].name);
			nulls[2] = false;
			values[3] = Int32GetDatum(nodes[i].port);
			nulls[3] = false;
			values[4] = BoolGetDatum(nodes[i].answered);
			nulls[4] = false;

			memset(&c, 0, sizeof(c));
			c.dboid = MyDatabaseId;
			c.policy_id = x->id;
			c.made = x->made;
			c.nodeid = nodes[i].nodeid;
			if (a != NULL)
			{
				/* rows_deleted .. falling_behind, as the node said */
				for (int k = 0; k < 7; k++)
				{
					values[5 + k] = a->values[k];
					nulls[5 + k] = a->nulls[k];
				}
				c.rows_deleted = a->nulls[0] ? 0 : DatumGetInt64(a->values[0]);
				c.errors = a->nulls[1] ? 0 : DatumGetInt64(a->values[1]);
				c.last_run = a->nulls[3] ? 0 : DatumGetTimestampTz(a->values[3]);
				c.counted_at = now;
				ttl_citus_count_remember(&c);
				values[12] = CStringGetTextDatum(state);
				values[13] = BoolGetDatum(false);
				values[14] = TimestampTzGetDatum(now);
				nulls[12] = nulls[13] = nulls[14] = false;
			}
			else
			{
				/* the last known counters, stale (none: NULL) */
				values[12] = CStringGetTextDatum(nodes[i].answered ? "policy missing" : state);
				values[13] = BoolGetDatum(true);
				nulls[12] = nulls[13] = false;
				if (ttl_citus_count_recall(&c))
				{
					values[5] = Int64GetDatum(c.rows_deleted);
					values[6] = Int64GetDatum(c.errors);
					nulls[5] = nulls[6] = false;
					if (c.last_run != 0)
					{
						values[8] = TimestampTzGetDatum(c.last_run);
						nulls[8] = false;
					}
					values[14] = TimestampTzGetDatum(c.counted_at);
					nulls[14] = false;
				}
				if (error != NULL)
				{
					values[7] = CStringGetTextDatum(error);
					nulls[7] = false;
				}
			}
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	ttl_parse_env_leave(nestlevel);
	SPI_finish();
	return (Datum) 0;
}
