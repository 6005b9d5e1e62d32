/*-------------------------------------------------------------------------
 *
 * citus_nodes.c
 *	  What the Citus coordinator says of each node (ttl_index_citus_nodes).
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
 *	database paused			ttl_index.enabled is off for the node's database
 *							(ALTER DATABASE ... SET)
 *	policy missing			the node answered without the policy: its copy
 *							of ttl_index_citus_policy lacks it
 *	no ttl_index			the extension is not installed there
 *	node down				no connection could be made
 *	node disabled			Citus marks the node inactive: not asked
 *	failed					the node's answer was an error (last_error)
 *
 * The counters shown never go down: per node and policy, the coordinator
 * keeps the figure the node last reported and adds only what it grew by
 * (all of it when it is lower: the node counts again from zero after a
 * crash or a reset), and keeps the totals of nodes removed from the
 * cluster since (state "node removed").  A node keeps the coordinator's
 * policy N as -N (catalog.c) and is asked for those.
 *
 * A node that did not answer gives its last known counters (rows deleted,
 * errors, last run), marked stale with the time they were read, so that
 * the coordinator's sums never fall because a node is down.  They are kept
 * in shared memory by whoever reads them (a fixed number of entries, the
 * oldest replaced first; only the counters every role may see), written to
 * a file at a clean shutdown and read back at the start, as the counters
 * are (stats.c): a coordinator that crashed, restarted while a node is
 * down, has nothing to give for it, and says so (state, no counts).
 *
 * Locking: the cache's entries under its own lock ("ttl_index citus
 * counts"), held only to copy an entry in or out.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "pgstat.h"
#include "storage/fd.h"
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
#include "utils/tuplestore.h"
#include "utils/relcache.h"

#include "ttl_index.h"
#include "citus/citus.h"
#include "env/env.h"
#include "shared/shared.h"

#define TTL_CITUS_COUNTS		4096
#define TTL_LOCK_CITUS_COUNTS	"ttl_index citus counts"

typedef struct TtlCitusCount
{
	Oid			dboid;			/* InvalidOid: free */
	int32		policy_id;
	TimestampTz made;			/* the policy's created_at: ids come back */
	int32		nodeid;
	int64		rows_deleted;	/* the total shown: never goes down */
	int64		errors;			/* likewise */
	int64		reported_rows;	/* the node's own counters, as last read */
	int64		reported_errors;
	TimestampTz last_run;		/* 0: none */
	TimestampTz counted_at;
	char		nodename[64];	/* for a node removed since (truncated) */
	int32		nodeport;
} TtlCitusCount;

typedef struct TtlCitusCounts
{
	int			n;
	TtlCitusCount e[FLEXIBLE_ARRAY_MEMBER];
} TtlCitusCounts;

static TtlCitusCounts *Counts = NULL;
static LWLock *CountsLock = NULL;

/* the cache across clean restarts; the magic changes with TtlCitusCount */
#define TTL_CITUS_COUNTS_FILE	PGSTAT_STAT_PERMANENT_DIRECTORY "/ttl_index_citus.stat"
#define TTL_CITUS_COUNTS_MAGIC	0x544c4302

static void ttl_citus_counts_load(void);
static void ttl_citus_counts_save(int code, Datum arg);

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
	/* in the postmaster: what the last clean shutdown kept, and keep at exit */
	if (!found && !IsUnderPostmaster && Counts->n > 0)
	{
		ttl_citus_counts_load();
		on_shmem_exit(ttl_citus_counts_save, (Datum) 0);
	}
}

/*
 * ttl_citus_counts_load
 *		Fill the cache from its file, then remove it, so that a crash never
 *		brings back older totals.  A missing, short or foreign file is not
 *		an error: the cache starts empty.
 */
static void
ttl_citus_counts_load(void)
{
	FILE	   *file;
	uint32		magic;
	int32		n;

	file = AllocateFile(TTL_CITUS_COUNTS_FILE, PG_BINARY_R);
	if (file == NULL)
		return;
	if (fread(&magic, sizeof(magic), 1, file) == 1 && magic == TTL_CITUS_COUNTS_MAGIC &&
		fread(&n, sizeof(n), 1, file) == 1)
	{
		for (int i = 0; i < n && i < Counts->n; i++)
		{
			if (fread(&Counts->e[i], sizeof(TtlCitusCount), 1, file) != 1)
			{
				memset(&Counts->e[i], 0, sizeof(TtlCitusCount));
				break;
			}
			Counts->e[i].nodename[sizeof(Counts->e[i].nodename) - 1] = '\0';
		}
	}
	FreeFile(file);
	unlink(TTL_CITUS_COUNTS_FILE);
}

/*
 * ttl_citus_counts_save
 *		At postmaster exit after a clean shutdown (ttl_stats_clean_exit),
 *		write the cache to its file (as stats.c writes the counters), so
 *		that the coordinator's totals, those of removed nodes among them,
 *		survive a restart.
 */
static void
ttl_citus_counts_save(int code, Datum arg)
{
	FILE	   *file;
	uint32		magic = TTL_CITUS_COUNTS_MAGIC;
	int32		n = 0;

	if (Counts == NULL || !ttl_stats_clean_exit(code))
		return;
	for (int i = 0; i < Counts->n; i++)
		if (Counts->e[i].dboid != InvalidOid)
			n++;
	file = AllocateFile(TTL_CITUS_COUNTS_FILE ".tmp", PG_BINARY_W);
	if (file == NULL)
		return;
	if (fwrite(&magic, sizeof(magic), 1, file) == 1 && fwrite(&n, sizeof(n), 1, file) == 1)
	{
		bool		ok = true;

		for (int i = 0; i < Counts->n && ok; i++)
			if (Counts->e[i].dboid != InvalidOid)
				ok = fwrite(&Counts->e[i], sizeof(TtlCitusCount), 1, file) == 1;
		if (FreeFile(file) == 0 && ok)
		{
			(void) durable_rename(TTL_CITUS_COUNTS_FILE ".tmp", TTL_CITUS_COUNTS_FILE, LOG);
			return;
		}
	}
	else
		FreeFile(file);
	ereport(LOG,
			(errcode_for_file_access(),
			 errmsg("could not write file \"%s\": %m", TTL_CITUS_COUNTS_FILE ".tmp")));
	unlink(TTL_CITUS_COUNTS_FILE ".tmp");
}

/*
 * ttl_citus_count_slot
 *		The entry of the cache for c's database, policy and node, else a
 *		free one, else the oldest; -1 without a cache.  The caller holds
 *		the lock.
 */
static int
ttl_citus_count_slot(const TtlCitusCount *c, bool *found)
{
	int			slot = -1;

	*found = false;
	for (int i = 0; i < Counts->n; i++)
	{
		TtlCitusCount *e = &Counts->e[i];

		if (e->dboid == c->dboid && e->policy_id == c->policy_id &&
			e->made == c->made && e->nodeid == c->nodeid)
		{
			*found = true;
			return i;
		}
		/* else a free entry, else the oldest */
		if (slot < 0 || (Counts->e[slot].dboid != InvalidOid &&
						 (e->dboid == InvalidOid || e->counted_at < Counts->e[slot].counted_at)))
			slot = i;
	}
	return slot;
}

/*
 * ttl_citus_count_add
 *		A node's counters of a policy, as just read (c->reported_*): the
 *		totals shown (c->rows_deleted, c->errors, set here) grow by what
 *		the node's counters grew since they were last read, and never go
 *		down: counters lower than last read mean the node counts again from
 *		zero (a crash, ttl_index_stats_reset() there), and all of them are
 *		new.  So a node that restarts, or one removed from the cluster, never
 *		takes rows from the sums.
 */
static void
ttl_citus_count_add(TtlCitusCount *c)
{
	bool		found;
	int			slot;

	c->rows_deleted = c->reported_rows;
	c->errors = c->reported_errors;
	if (Counts == NULL || Counts->n == 0)
		return;
	LWLockAcquire(CountsLock, LW_EXCLUSIVE);
	slot = ttl_citus_count_slot(c, &found);
	if (found)
	{
		TtlCitusCount *e = &Counts->e[slot];

		c->rows_deleted = e->rows_deleted +
			(c->reported_rows >= e->reported_rows ?
			 c->reported_rows - e->reported_rows : c->reported_rows);
		c->errors = e->errors +
			(c->reported_errors >= e->reported_errors ?
			 c->reported_errors - e->reported_errors : c->reported_errors);
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
 * ttl_citus_count_removed
 *		The counters kept for a policy of nodes that are no longer in
 *		pg_dist_node (nodeids: those that are), palloc'd; *n of them.
 */
static TtlCitusCount *
ttl_citus_count_removed(int32 policy_id, TimestampTz made, int32 *nodeids, int nnodes,
						int *n)
{
	TtlCitusCount *result;

	*n = 0;
	if (Counts == NULL || Counts->n == 0)
		return NULL;
	result = palloc(sizeof(TtlCitusCount) * Counts->n);
	LWLockAcquire(CountsLock, LW_SHARED);
	for (int i = 0; i < Counts->n; i++)
	{
		TtlCitusCount *e = &Counts->e[i];
		bool		present = false;

		if (e->dboid != MyDatabaseId || e->policy_id != policy_id || e->made != made)
			continue;
		for (int j = 0; j < nnodes && !present; j++)
			present = nodeids[j] == e->nodeid;
		if (!present)
			result[(*n)++] = *e;
	}
	LWLockRelease(CountsLock);
	return result;
}

/*
 * ttl_index_citus_node_state
 *		What this node can do for the policies on distributed tables, in
 *		words (see above): purging, ttl_index not preloaded, ttl_index
 *		disabled, database paused.  Asked of every node by ttl_index_citus_nodes().
 */
PG_FUNCTION_INFO_V1(ttl_index_citus_node_state);

Datum
ttl_index_citus_node_state(PG_FUNCTION_ARGS)
{
	/* what the node's workers obey (settings.c), not this session's value */
	const char *state = !ttl_preloaded ? "ttl_index not preloaded" :
		!ttl_shmem_server_enabled() ? "ttl_index disabled" :
		ttl_database_paused(MyDatabaseId) ? "database paused" : "purging";

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

/* the columns of ttl_index_citus_nodes() */
#define TTL_CITUS_NODES_COLS	15

/* a primary node of pg_dist_node, and its answer */
typedef struct TtlCitusNode
{
	int32		nodeid;
	char	   *name;
	int32		port;
	bool		active;
	bool		answered;		/* its answer is a result, not an error */
	char	   *result;			/* its answer; NULL: none */
} TtlCitusNode;

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
 * ttl_citus_nodes_expected
 *		The policies the nodes are asked about: those on a distributed
 *		table, or given to the nodes (TtlCitusExpected, in callcxt).  The
 *		caller is connected to SPI.
 */
static List *
ttl_citus_nodes_expected(const char *nspname, MemoryContext callcxt)
{
	List	   *expected = NIL;

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
	return expected;
}

/*
 * ttl_citus_nodes_read
 *		The primary nodes of pg_dist_node, in callcxt; *nnodes of them.
 *		The caller is connected to SPI.
 */
static TtlCitusNode *
ttl_citus_nodes_read(MemoryContext callcxt, int *nnodes)
{
	TtlCitusNode *nodes;

	if (SPI_execute("SELECT n.nodeid, n.nodename::pg_catalog.text, n.nodeport, n.isactive"
					"  FROM pg_catalog.pg_dist_node n WHERE n.noderole = 'primary'"
					" ORDER BY n.groupid, n.nodeid", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_node");
	*nnodes = (int) SPI_processed;
	nodes = MemoryContextAllocZero(callcxt, sizeof(TtlCitusNode) * Max(*nnodes, 1));
	for (int i = 0; i < *nnodes; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		bool		isnull;

		nodes[i].nodeid = DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		nodes[i].name = MemoryContextStrdup(callcxt, SPI_getvalue(tup, SPI_tuptable->tupdesc, 2));
		nodes[i].port = DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 3, &isnull));
		nodes[i].active = DatumGetBool(SPI_getbinval(tup, SPI_tuptable->tupdesc, 4, &isnull));
	}
	return nodes;
}

/*
 * ttl_citus_nodes_ask
 *		Each active node's state and counters, all nodes at once, into its
 *		answered and result (in callcxt).  A node other than the
 *		coordinator keeps its copy of policy N as -N (TTL_CITUS_COPY_ID,
 *		catalog.c), apart from its own policies: only those are asked for,
 *		and given back under the coordinator's id.  The caller is
 *		connected to SPI.
 */
static void
ttl_citus_nodes_ask(TtlCitusNode *nodes, int nnodes, const char *nspname,
					MemoryContext callcxt)
{
	char	   *command;

	command = psprintf("SELECT pg_catalog.json_build_object("
					   "'state', %s.ttl_index_citus_node_state(),"
					   "'policies', (SELECT coalesce(pg_catalog.json_agg(pg_catalog.json_build_object("
					   " 'policy_id', pg_catalog.abs(s.policy_id), 'rows_deleted', s.rows_deleted,"
					   " 'errors', s.errors, 'last_error', s.last_error,"
					   " 'last_run', s.last_run, 'lag', s.lag,"
					   " 'expired_estimate', s.expired_estimate,"
					   " 'falling_behind', s.falling_behind)), '[]')"
					   "  FROM %s.ttl_index_policy_stats() s"
					   " WHERE CASE WHEN (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g) OPERATOR(pg_catalog.=) 0"
					   "  THEN s.policy_id OPERATOR(pg_catalog.>) 0"
					   "  ELSE OPERATOR(pg_catalog.-) s.policy_id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT m.id FROM %s.%s m)) END))",
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
}

/*
 * ttl_citus_node_probe
 *		The state of a node whose answer was an error (*error: that error),
 *		asked again whether it has the extension: "node down" if it cannot
 *		say, "no ttl_index" (and no error) if it has none, else "failed".
 *		The caller is connected to SPI.
 */
static const char *
ttl_citus_node_probe(TtlCitusNode *node, const char **error)
{
	const char *state = "failed";

	*error = node->result;
	ttl_citus_run_on(psprintf("ARRAY[%s]", quote_literal_cstr(node->name)),
					 psprintf("ARRAY[%d]", node->port),
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
			*error = NULL;
		}
	}
	return state;
}

/*
 * ttl_citus_node_answers
 *		The state a node that answered says it is in, and its counters of
 *		each policy (*answers, TtlCitusAnswer), in callcxt.  The caller is
 *		connected to SPI.
 */
static const char *
ttl_citus_node_answers(TtlCitusNode *node, MemoryContext callcxt, List **answers)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	const char *state;

	values[0] = CStringGetTextDatum(node->result);
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
		elog(ERROR, "could not read the answer of node %s:%d", node->name, node->port);
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
		*answers = lappend(*answers, a);
		MemoryContextSwitchTo(old);
	}
	return state;
}

/*
 * ttl_citus_node_says
 *		What is known of a node (see the top of the file): its state in
 *		words, the error to show with it (*error, NULL if none) and, when
 *		it answered, its counters of each policy (*answers, in callcxt).
 *		The caller is connected to SPI.
 */
static const char *
ttl_citus_node_says(TtlCitusNode *node, MemoryContext callcxt, const char **error,
					List **answers)
{
	*error = NULL;
	*answers = NIL;
	if (!node->active)
		return "node disabled";
	if (node->result == NULL ||
		strncmp(node->result, "failed to connect to", strlen("failed to connect to")) == 0)
	{
		*error = node->result;
		return "node down";
	}
	/* why: the extension missing, or something else */
	if (!node->answered)
		return ttl_citus_node_probe(node, error);
	return ttl_citus_node_answers(node, callcxt, answers);
}

/*
 * ttl_citus_nodes_fresh
 *		A row's counters as the node just said them (a): rows_deleted ..
 *		falling_behind, with the totals that never go down (see the top of
 *		the file), which c, the node's entry of the cache, records.
 */
static void
ttl_citus_nodes_fresh(Datum *values, bool *nulls, TtlCitusCount *c,
					  TtlCitusAnswer *a, TtlCitusNode *node, const char *state,
					  TimestampTz now)
{
	for (int k = 0; k < 7; k++)
	{
		values[5 + k] = a->values[k];
		nulls[5 + k] = a->nulls[k];
	}
	c->reported_rows = a->nulls[0] ? 0 : DatumGetInt64(a->values[0]);
	c->reported_errors = a->nulls[1] ? 0 : DatumGetInt64(a->values[1]);
	c->last_run = a->nulls[3] ? 0 : DatumGetTimestampTz(a->values[3]);
	c->counted_at = now;
	strlcpy(c->nodename, node->name, sizeof(c->nodename));
	c->nodeport = node->port;
	/* the totals, which never go down (see above) */
	ttl_citus_count_add(c);
	values[5] = Int64GetDatum(c->rows_deleted);
	values[6] = Int64GetDatum(c->errors);
	nulls[5] = nulls[6] = false;
	values[12] = CStringGetTextDatum(state);
	values[13] = BoolGetDatum(false);
	values[14] = TimestampTzGetDatum(now);
	nulls[12] = nulls[13] = nulls[14] = false;
}

/*
 * ttl_citus_nodes_stale
 *		A row's counters when the node said nothing of the policy: the last
 *		known ones (c's, from the cache), stale; none: NULL.
 */
static void
ttl_citus_nodes_stale(Datum *values, bool *nulls, TtlCitusCount *c,
					  TtlCitusNode *node, const char *state, const char *error)
{
	values[12] = CStringGetTextDatum(node->answered ? "policy missing" : state);
	values[13] = BoolGetDatum(true);
	nulls[12] = nulls[13] = false;
	if (ttl_citus_count_recall(c))
	{
		values[5] = Int64GetDatum(c->rows_deleted);
		values[6] = Int64GetDatum(c->errors);
		nulls[5] = nulls[6] = false;
		if (c->last_run != 0)
		{
			values[8] = TimestampTzGetDatum(c->last_run);
			nulls[8] = false;
		}
		values[14] = TimestampTzGetDatum(c->counted_at);
		nulls[14] = false;
	}
	if (error != NULL)
	{
		values[7] = CStringGetTextDatum(error);
		nulls[7] = false;
	}
}

/*
 * ttl_citus_nodes_put
 *		The row of one policy (x) on one node: what the node said of it,
 *		among its answers, else what is known.
 */
static void
ttl_citus_nodes_put(ReturnSetInfo *rsinfo, TtlCitusExpected *x, TtlCitusNode *node,
					List *answers, const char *state, const char *error,
					TimestampTz now)
{
	TtlCitusAnswer *a = NULL;
	Datum		values[TTL_CITUS_NODES_COLS];
	bool		nulls[TTL_CITUS_NODES_COLS];
	TtlCitusCount c;
	ListCell   *lc;

	foreach(lc, answers)
	{
		if (((TtlCitusAnswer *) lfirst(lc))->id == x->id)
			a = (TtlCitusAnswer *) lfirst(lc);
	}
	memset(nulls, true, sizeof(nulls));
	values[0] = Int32GetDatum(x->id);
	nulls[0] = false;
	values[1] = ObjectIdGetDatum(x->relid);
	nulls[1] = false;
	values[2] = CStringGetTextDatum(node->name);
	nulls[2] = false;
	values[3] = Int32GetDatum(node->port);
	nulls[3] = false;
	values[4] = BoolGetDatum(node->answered);
	nulls[4] = false;

	memset(&c, 0, sizeof(c));
	c.dboid = MyDatabaseId;
	c.policy_id = x->id;
	c.made = x->made;
	c.nodeid = node->nodeid;
	if (a != NULL)
		ttl_citus_nodes_fresh(values, nulls, &c, a, node, state, now);
	else
		ttl_citus_nodes_stale(values, nulls, &c, node, state, error);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * ttl_citus_nodes_removed
 *		The rows of the nodes removed from the cluster since their counters
 *		were read: their rows stay counted (state "node removed", reachable
 *		NULL, stale), so that draining and removing a node takes nothing
 *		from the sums.
 */
static void
ttl_citus_nodes_removed(ReturnSetInfo *rsinfo, List *expected, TtlCitusNode *nodes,
						int nnodes)
{
	int32	   *nodeids = palloc(sizeof(int32) * Max(nnodes, 1));
	ListCell   *lc;

	for (int i = 0; i < nnodes; i++)
		nodeids[i] = nodes[i].nodeid;
	foreach(lc, expected)
	{
		TtlCitusExpected *x = (TtlCitusExpected *) lfirst(lc);
		int			n;
		TtlCitusCount *gone = ttl_citus_count_removed(x->id, x->made, nodeids, nnodes, &n);

		for (int k = 0; k < n; k++)
		{
			Datum		values[TTL_CITUS_NODES_COLS];
			bool		nulls[TTL_CITUS_NODES_COLS];

			memset(nulls, true, sizeof(nulls));
			values[0] = Int32GetDatum(x->id);
			values[1] = ObjectIdGetDatum(x->relid);
			values[2] = CStringGetTextDatum(gone[k].nodename);
			values[3] = Int32GetDatum(gone[k].nodeport);
			values[5] = Int64GetDatum(gone[k].rows_deleted);
			values[6] = Int64GetDatum(gone[k].errors);
			values[12] = CStringGetTextDatum("node removed");
			values[13] = BoolGetDatum(true);
			values[14] = TimestampTzGetDatum(gone[k].counted_at);
			nulls[0] = nulls[1] = nulls[2] = nulls[3] = false;
			nulls[5] = nulls[6] = false;
			nulls[12] = nulls[13] = nulls[14] = false;
			if (gone[k].last_run != 0)
			{
				values[8] = TimestampTzGetDatum(gone[k].last_run);
				nulls[8] = false;
			}
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
}

/*
 * ttl_index_citus_nodes
 *		Per node and policy on a distributed table, on the coordinator:
 *		what the node says of it, or what is known (see above).  Nothing,
 *		and no node asked, when there is no such policy.
 */
PG_FUNCTION_INFO_V1(ttl_index_citus_nodes);

Datum
ttl_index_citus_nodes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext callcxt = CurrentMemoryContext;
	Oid			nsp;
	const char *nspname;
	List	   *expected;
	int			nnodes;
	TtlCitusNode *nodes;
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

	expected = ttl_citus_nodes_expected(nspname, callcxt);
	if (expected == NIL)
	{
		ttl_parse_env_leave(nestlevel);
		SPI_finish();
		return (Datum) 0;
	}
	nodes = ttl_citus_nodes_read(callcxt, &nnodes);
	ttl_citus_nodes_ask(nodes, nnodes, nspname, callcxt);

	for (int i = 0; i < nnodes; i++)
	{
		const char *error;
		List	   *answers;
		const char *state = ttl_citus_node_says(&nodes[i], callcxt, &error, &answers);
		ListCell   *lc;

		foreach(lc, expected)
			ttl_citus_nodes_put(rsinfo, (TtlCitusExpected *) lfirst(lc), &nodes[i],
								answers, state, error, now);
	}
	ttl_citus_nodes_removed(rsinfo, expected, nodes, nnodes);

	ttl_parse_env_leave(nestlevel);
	SPI_finish();
	return (Datum) 0;
}
