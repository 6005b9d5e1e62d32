/*-------------------------------------------------------------------------
 *
 * citus_follow.c
 *	  Policies follow their tables through Citus's functions that distribute,
 *	  convert or replace them.
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
 * Decisions:
 *	- A call that would leave a policy on a Citus reference table or a
 *	  Citus local table, which the nodes cannot purge (see citus.c), is
 *	  refused with an error, and the table is left as it was; dropping
 *	  the policy first lets it through.  The same for a
 *	  distributed table whose policy archives (each node would need the
 *	  archive table).  Citus's own internal sessions are not refused: the
 *	  first step of create_distributed_table_concurrently() is a
 *	  citus_add_local_table_to_metadata() over a connection of its own,
 *	  during which the policy stays on the table that holds the rows (now
 *	  the Citus local table's shard, still a plain table to us), and
 *	  moves to the distributed table when the outer call ends.
 *	- A call that would leave an anonymize policy setting its table's
 *	  distribution column (create_distributed_table() or
 *	  alter_distributed_table() by a column it sets) is refused: Citus
 *	  moves no row between shards on an UPDATE.
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
 *
 * Locking: no lock of its own.  The tables are those the caller's
 * transaction (Citus's function) locked; the catalogs are read under it.
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
#include "citus/citus.h"
#include "env/env.h"

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
	char	   *set_columns;	/* an anonymize policy's, else NULL */
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
 *		ttl_as_extension_owner (owner.c), as the API writes the catalog:
 *		the caller of a Citus function may have no right on the extension's
 *		schema, and must not be refused for it.  An SPI failure is an error.
 */
static int
ttl_citus_as_owner(const char *sql, int nargs, Oid *argtypes, Datum *values)
{
	int			ret = ttl_as_extension_owner(sql, nargs, argtypes, values, NULL);

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
				   " p, pg_catalog.to_jsonb(p) OPERATOR(pg_catalog.->>) 'set_columns'"
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
		d = SPI_getbinval(tup, desc, 10, &isnull);
		h->set_columns = isnull ? NULL : TextDatumGetCString(d);
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
				 errhint("Give the policy action \"delete\" or \"soft_delete\" with ttl_alter_index(), or drop it with ttl_drop_index(), first.")));
}

/*
 * ttl_citus_refuse_set
 *		ERROR when a followed call leaves an anonymize policy setting its
 *		table's distribution column (relid: the table now, distributed):
 *		Citus moves no row between shards on an UPDATE, and each node
 *		would write its shards' rows a value that belongs to another
 *		shard.  The table is left as it was.  Citus's internal sessions
 *		are let through, as by ttl_citus_refuse_kind (the batches refuse
 *		it: ttl_citus_check_set).
 */
static void
ttl_citus_refuse_set(TtlCitusHeld *h, Oid relid)
{
	char	   *col;

	if (h->set_columns == NULL || ttl_citus_internal_session())
		return;
	col = ttl_citus_set_distribution(relid, h->set_columns);
	if (col != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot distribute table \"%s\" by column \"%s\": its TTL policy sets that column",
						h->relname, col),
				 errdetail("The policy anonymizes expired rows with set_columns %s; Citus moves no row between shards on an UPDATE.",
						   h->set_columns),
				 errhint("Give the policy set_columns without column \"%s\" with ttl_create_index(), or drop it with ttl_drop_index(), first; or distribute the table by another column.",
						 col)));
}

/*
 * ttl_citus_catalog_now
 *		The catalog after a followed call: its policies' tables and those
 *		tables' kinds, by policy id (TtlCitusNow), in the span's memory.
 *		The caller is connected to SPI.
 */
static HTAB *
ttl_citus_catalog_now(TtlCitusSpan *span, const char *qualified)
{
	HTAB	   *now;
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(int32);
	ctl.entrysize = sizeof(TtlCitusNow);
	ctl.hcxt = span->cxt;
	now = hash_create("ttl_index Citus follow", 64, &ctl,
					  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
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
	return now;
}

/*
 * ttl_citus_follow
 *		A held policy whose table goes by another relation now (x): the
 *		policy follows it (its catalog row written again for x, in place
 *		of the old one while the catalog still has it, and its TTL indexes
 *		marked ours again), unless x is a kind of Citus table no node
 *		purges (refused, or left to Citus's own session), or not a table of
 *		the same owner (the policy goes with the old table).  The caller is
 *		connected to SPI.
 */
static void
ttl_citus_follow(TtlCitusHeld *h, bool in_catalog, Oid x, Oid catalog,
				 const char *qualified)
{
	char		xkind = ttl_citus_kind_char(ttl_citus_kind(x));
	FormData_pg_class xform;
	bool		found = ttl_rel_class(x, &xform);
	Oid			xowner = found ? xform.relowner : InvalidOid;
	char		xrelkind = found ? xform.relkind : 0;
	Oid			argtypes[2];
	Datum		values[2];
	ListCell   *lc;

	if (xkind == 'r' || xkind == 'l' || (xkind == 'd' && h->archives))
	{
		ttl_citus_refuse_kind(h, xkind);
		return;					/* Citus's own session: stay on the rows */
	}
	if (xkind == 'd')
		ttl_citus_refuse_set(h, x);
	if (xowner != h->owner ||
		(xrelkind != RELKIND_RELATION && xrelkind != RELKIND_PARTITIONED_TABLE))
	{
		if (!in_catalog)
			ereport(WARNING,
					(errmsg("the TTL policy of table \"%s\" is dropped with it",
							h->relname),
					 errdetail("The table that replaces it is not a table of the same owner.")));
		return;
	}
	argtypes[0] = INT4OID;
	values[0] = Int32GetDatum(h->id);
	if (in_catalog)
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
	foreach(lc, h->indexes)
	{
		Oid			idx = get_relname_relid((char *) lfirst(lc), get_rel_namespace(x));

		if (OidIsValid(idx) && IndexGetRelation(idx, true) == x &&
			GetComment(idx, RelationRelationId, 0) == NULL)
			CreateComments(idx, RelationRelationId, 0, TTL_INDEX_COMMENT);
	}
	CommandCounterIncrement();
}

/*
 * ttl_citus_rewrite
 *		Write the policies of ids (a List of int) again, as they are, so
 *		that the sync trigger gives them to the nodes, or takes them back:
 *		their tables changed kind.  The caller is connected to SPI.
 */
static void
ttl_citus_rewrite(List *ids, const char *qualified)
{
	Oid			argtypes[1] = {INT4ARRAYOID};
	Datum		values[1];
	Datum	   *elems = palloc(sizeof(Datum) * list_length(ids));
	int			n = 0;
	ListCell   *lc;

	foreach(lc, ids)
		elems[n++] = Int32GetDatum(lfirst_int(lc));
	values[0] = PointerGetDatum(construct_array(elems, n, INT4OID, sizeof(int32),
												true, TYPALIGN_INT));
	ttl_citus_as_owner(psprintf("UPDATE %s SET relid = relid WHERE id = ANY ($1)",
								qualified),
					   1, argtypes, values);
	CommandCounterIncrement();
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

	CommandCounterIncrement();
	snapshot = !ActiveSnapshotSet();
	if (snapshot)
		PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
	/* the catalog now: id -> relid, and that table's kind */
	now = ttl_citus_catalog_now(span, qualified);

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
				ttl_citus_follow(h, e != NULL, x, catalog, qualified);
				continue;
			}

			/* the same relation: its kind may have changed */
			if (e == NULL || cur != h->relid || e->kind == h->kind ||
				!ttl_citus_locked_by_me(cur))
				continue;
			ttl_citus_refuse_kind(h, e->kind);
			if (e->kind == 'd')
				ttl_citus_refuse_set(h, cur);
			touch = lappend_int(touch, h->id);
		}
		if (touch != NIL)
			ttl_citus_rewrite(touch, qualified);
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
