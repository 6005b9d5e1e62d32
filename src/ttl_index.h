/*-------------------------------------------------------------------------
 *
 * ttl_index.h
 *	  Declarations shared by the files of the ttl_index extension.
 *
 * One file per box of the design (docs/design.md draws them).  Calls go one
 * way, from the SQL surface and the processes down to the shared state:
 *
 *	module		ttl_index.c  module load: settings, shared memory request,
 *				             hooks (it calls every floor: the top)
 *	SQL surface	api.c        policy management: ttl_create_index() & co.
 *				alter.c      what a call that changes a policy keeps
 *				views.c      the functions behind the monitoring views
 *				runner.c     ttl_runner(): a pass inside the caller's transaction
 *				import.c     what the importers read: a copy, a time zone
 *				engine_test.c  the engine's test entry points (declared only
 *				             by sql/ttl_engine.sql)
 *	processes	launcher.c   the cluster-wide launcher and its rotation
 *				worker.c     the per-database worker and its scheduler
 *				helper.c     the helper process: attach, loop over slices
 *				hooks.c      utility, executor and transaction hooks
 *	one pass	pass.c       a pass over a policy's targets, batch by batch
 *				drain.c      a backlog drained with helpers, in slices
 *				batch.c      the engine: one batch on one physical table
 *				             between two keys: begin, scan, act, finish
 *				partition.c  whole-partition drops
 *				held.c       rows that cannot be deleted: isolation, backoff
 *				skip.c       the known-dead prefix of an index
 *				probe.c      index look-ups: the next and the oldest expiry
 *				backlog.c    expired rows estimated from the statistics
 *				origin.c     the replication origin a batch's changes carry
 *				wal.c        a batch's WAL: commit flush, full-page images
 *				timeout.c    the wall-time bound of a worker's batch
 *	policy		targets.c    a policy resolved to its physical tables
 *				statement.c  the executor path's statement: SQL, plan, run
 *				filter.c     a policy's filter: parsing and storing it
 *				owner.c      whose rights and settings user code runs with
 *				expiry.c     time arithmetic: cutoffs, instants, units
 *				catalog.c    reading the policy catalog
 *				citus.c      Citus tables: telling them, dropping their indexes
 *				citus_follow.c  policies following tables through Citus's functions
 *				citus_nodes.c   what the coordinator says of each node
 *				extension.c  the extension's schema and owner here
 *	shared		stats.c      per-policy counters
 *				writes.c     which tables were written, noted at commit
 *				yield.c      giving way to the application
 *				keepup.c     rows expiring and deleted per second; keeping up
 *				replicas.c   holding batches for a standby or a slot's consumer
 *				parallel.c   the job a worker shares with its helpers
 *				shmem.c      all shared memory and its locks
 *	bottom		settings.c   the ttl_index.* settings
 *				errors.c     catching, telling and logging errors
 *				slices.c     a shared drain's slices: cut, claim, halve
 *
 * Locking rules are described at the top of the file that owns the lock
 * (shmem.c for all shared memory).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_INDEX_H
#define TTL_INDEX_H

#include "access/attnum.h"
#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "nodes/pg_list.h"
#include "port/atomics.h"
#include "storage/block.h"
#include "storage/itemptr.h"
#include "storage/lwlock.h"
#include "utils/relcache.h"
#include "utils/resowner.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"

#define TTL_EXTENSION_NAME		"ttl_index"
#define TTL_LIBRARY_VERSION		"1.4"
#define TTL_CATALOG_NAME		"ttl_index_policy"
/* comment on the indexes ttl_create_index() creates (see api.c) */
#define TTL_INDEX_COMMENT		"created by ttl_index; dropped by ttl_drop_index()"

/* ----------
 * What a call that changes a policy keeps (alter.c); needs fmgr.h, array.h
 * ----------
 */
struct ArrayType;
extern FunctionCallInfo ttl_alter_keep(FunctionCallInfo fcinfo, struct ArrayType *reset,
									   bool *exists, Interval **expire_after);
extern bool ttl_alter_was_kept(int argno);

/* ----------
 * Settings (settings.c)
 * ----------
 */

#include "settings.h"

/* ----------
 * Errors: catching, telling a cancel, logging a batch's (errors.c)
 * ----------
 */
extern bool ttl_error_is_cancel(int sqlerrcode);
extern ErrorData *ttl_error_catch_subxact(MemoryContext cxt, ResourceOwner owner);
extern void ttl_error_log(ErrorData *edata, int elevel, const char *fmt,...)
			pg_attribute_printf(3, 4);

/* ----------
 * One TTL policy, as read from the catalog (catalog.c)
 * ----------
 */
typedef enum TtlAction
{
	TTL_ACTION_DELETE,
	TTL_ACTION_ARCHIVE,			/* move the row into archive_relid */
	TTL_ACTION_SOFT_DELETE,		/* set soft_column to the time of expiry */
	TTL_ACTION_ANONYMIZE		/* set the columns of set_columns (set.c) */
} TtlAction;

/* the actions whose statement is an UPDATE: the row stays */
#define TTL_ACTION_UPDATES(action) \
	((action) == TTL_ACTION_SOFT_DELETE || (action) == TTL_ACTION_ANONYMIZE)

/*
 * The hours of the day a policy may purge in (window.c): minutes of the
 * local day, [start, end); a window whose end is not after its start runs
 * over midnight.
 */
#define TTL_MAX_WINDOWS			8

typedef struct TtlWindows
{
	int			n;				/* 0: no windows (always open); -1: the
								 * stored text cannot be read (never open) */
	int16		start[TTL_MAX_WINDOWS];
	int16		end[TTL_MAX_WINDOWS];
	int			open_minutes;	/* minutes of the day inside a window */
} TtlWindows;

typedef struct TtlPolicy
{
	int32		id;
	Oid			relid;
	AttrNumber	attnum;
	char	   *column_name;	/* as stored in the catalog */
	int64		expire_after;	/* microseconds; 0 when no_expiry, which
								 * every reader tests first (expiry.c) */
	int32		batch_size;		/* 0 = use ttl_index.batch_size */
	bool		enabled;
	char	   *ttl_column;		/* per-row TTL column, or NULL */
	char	   *filter;			/* stored filter expression, or NULL */
	int64		unit_ns;		/* numeric epoch column: ns per unit; else 0 */
	TtlAction	action;
	Oid			archive_relid;	/* TTL_ACTION_ARCHIVE */
	char	   *soft_column;	/* TTL_ACTION_SOFT_DELETE */
	int32		rate_limit;		/* rows/s, 0 = none */
	int8		replication_origin; /* mark its changes: 1, 0, or -1 for
									 * ttl_index.replication_origin */
	bool		citus_copy;		/* this node's copy of a coordinator's policy
								 * on a distributed table (citus.c) */
	char	   *time_zone;		/* wall-clock keys are read in it (expiry.c);
								 * NULL: not a wall-clock key, or the
								 * server's zone */
	bool		filter_funcs_known; /* the filter's functions are recorded */
	int			nfilter_funcs;
	Oid		   *filter_funcs;	/* the functions it calls (filter.c) */
	bool		no_expiry;		/* expire_after NULL: a cap alone (max_rows) */
	char	   *purge_window;	/* as stored, or NULL (window.c) */
	TtlWindows	windows;		/* ... read */
	int64		max_rows;		/* 0: no cap (cap.c) */
	char	   *set_columns;	/* TTL_ACTION_ANONYMIZE (set.c) */
} TtlPolicy;

/* where the extension is (extension.c) */
extern bool ttl_extension_info(Oid *nspoid, Oid *owner);
extern Oid	ttl_catalog_namespace(bool missing_ok);

extern char *ttl_catalog_relname(void);
extern bool ttl_catalog_is_current(void);
extern bool ttl_catalog_has_origin(void);
extern bool ttl_catalog_has_zone(void);
extern bool ttl_catalog_has_rules(void);
extern bool ttl_catalog_paused_since(int32 policy_id, TimestampTz *since);
extern char *ttl_catalog_pause_sql(const char *enabled);
extern char *ttl_qualified_relname(Oid relid);
extern int64 ttl_interval_usecs(Interval *span);
extern List *ttl_load_policies(MemoryContext cxt);
extern bool ttl_policy_equal(TtlPolicy *a, TtlPolicy *b);
extern bool ttl_publications_exist(void);
extern Oid	ttl_created_index(Oid relid, AttrNumber attnum);

/* ----------
 * Citus tables (citus.c)
 * ----------
 */
typedef enum TtlCitusKind
{
	TTL_CITUS_NONE,				/* not in Citus's metadata, or no Citus */
	TTL_CITUS_DISTRIBUTED,
	TTL_CITUS_REFERENCE,
	TTL_CITUS_LOCAL				/* a local table added to the metadata */
} TtlCitusKind;

/* the policies on distributed tables, as every node reads them */
#define TTL_CITUS_POLICY_NAME	"ttl_index_citus_policy"
/*
 * The id a Citus node gives its copy of the coordinator's policy id: the
 * negative, a space of its own, apart from the node's local policies
 * (catalog.c).
 */
#define TTL_CITUS_COPY_ID(coordinator_id)	(-(coordinator_id))

extern TtlCitusKind ttl_citus_kind(Oid relid);
extern void ttl_citus_check_create(TtlPolicy *policy);
extern char *ttl_citus_policies_sql(Oid nsp);
extern bool ttl_citus_policy_copy(const char *relname, Oid relnamespace);
extern List *ttl_citus_shards(Oid relid);
extern bool ttl_citus_unpublishable(Relation rel);
extern void ttl_citus_refuse(Oid relid, bool has_policy);
extern char *ttl_citus_distribution_column(Oid relid);
extern char *ttl_citus_set_distribution(Oid relid, const char *set_columns);
extern void ttl_citus_check_set(TtlPolicy *policy);
extern bool ttl_citus_placement_current(Relation rel);
extern char *ttl_citus_index_name(Oid indexoid);
extern void ttl_drop_index_named(const char *name);
extern void ttl_drop_created(Oid indexoid);

/* policies following their tables through Citus's functions (citus_follow.c) */
extern void ttl_citus_hooks_install(void);
extern void *ttl_citus_utility_begin(Node *parsetree);
extern void ttl_citus_utility_end(void *span);

/* what the coordinator says of each node (citus_nodes.c) */
extern void ttl_citus_shmem_request(void);
extern void ttl_citus_shmem_init(void);

/* ----------
 * Whose rights and settings (owner.c)
 * ----------
 */
typedef struct TtlOwnerSave
{
	Oid			userid;
	int			sec_context;
	int			nestlevel;
} TtlOwnerSave;

extern Oid	ttl_table_owner(Oid relid);
extern Oid	ttl_table_owner_if_exists(Oid relid);
extern void ttl_owner_enter(Oid owner, TtlOwnerSave *save);
extern void ttl_owner_leave(TtlOwnerSave *save);
extern void ttl_owner_release_session_locks(void);
extern void ttl_pin_process_settings(const char *application_name);
extern int	ttl_parse_env_enter(void);
extern void ttl_parse_env_leave(int nestlevel);
extern int	ttl_as_extension_owner(const char *sql, int nargs, Oid *argtypes,
								   Datum *values, const char *nulls);
extern const char *ttl_server_setting(const char *name);
extern char *ttl_login_setting(Oid dboid, Oid roleid, const char *name);

/* the settings whose server-wide values the launcher publishes (owner.c) */
extern const char *const ttl_server_setting_names[];
extern const int ttl_server_setting_count;

/* ----------
 * Time arithmetic (expiry.c)
 *
 * A key is the value the purge range-scans: the TTL column, or
 * ttl_expires_at(column, ttl_column).  A cutoff says which keys have
 * expired at the start of a pass.
 * ----------
 */
typedef struct TtlCutoff
{
	TimestampTz limit;			/* now - expire_after: expired when the key's
								 * instant is before this */
	Datum		bound;			/* every expired key is below this (scan bound) */
	Datum		safe_bound;		/* every key below this is expired (drops) */
	bool		recheck;		/* local-time key near a change of the
								 * server's UTC offset: check each row's
								 * instant (ttl_key_expired) */
	bool		none;			/* no key has expired (a cap alone): bound
								 * and safe_bound are the type's least value,
								 * below which there is no key */
	bool		capped;			/* the cap takes every key below cap_bound
								 * (cap.c), whatever its instant; the
								 * statement compares the key with it */
	Datum		cap_bound;		/* when capped: bound itself, or, near a
								 * change of offset, the cap's bound below
								 * the expiry's (whose keys are rechecked) */
} TtlCutoff;

extern int64 ttl_unit_parse(const char *unit);
extern bool ttl_key_type_ok(Oid typid, int64 unit_ns);
extern bool ttl_key_is_local(Oid typid, int64 unit_ns);
extern void ttl_cutoff_compute(TtlPolicy *policy, Oid typid, struct pg_tz *zone,
							   TimestampTz now, TtlCutoff *cutoff);
extern bool ttl_key_ordinal(Oid typid, Datum key, int64 *ordinal);
extern Datum ttl_key_from_ordinal(Oid typid, int64 ordinal);
extern TimestampTz ttl_key_instant(Oid typid, int64 unit_ns, struct pg_tz *zone,
								   Datum key);
extern bool ttl_key_expired(Oid typid, int64 unit_ns, struct pg_tz *zone,
							Datum key, const TtlCutoff *cutoff);
extern TimestampTz ttl_key_expiry(TtlPolicy *policy, Oid typid,
								  struct pg_tz *zone, Datum key);
extern const char *ttl_server_zone_name(void);
extern bool ttl_zone_valid(const char *name);
extern const char *ttl_policy_zone_name(TtlPolicy *policy);
extern struct pg_tz *ttl_policy_zone(TtlPolicy *policy);
extern TimestampTz ttl_local_instant(Timestamp ts, struct pg_tz *zone);
extern Timestamp ttl_instant_local(TimestampTz t, struct pg_tz *zone);

/* ----------
 * Anonymize (set.c)
 * ----------
 */
typedef struct TtlSetColumn
{
	AttrNumber	attnum;			/* in the table it was read against */
	char	   *name;
	Node	   *value;			/* coerced to the column's type */
	char	   *value_sql;		/* as deparsed in the parse environment */
} TtlSetColumn;

extern void ttl_set_check(Relation rel, TtlPolicy *policy);
extern void ttl_set_recheck(Relation rel, TtlPolicy *policy, const char *command);
extern List *ttl_set_read(Relation rel, TtlPolicy *policy, AttrNumber key_attnum,
						  AttrNumber ttl_attnum);
extern char *ttl_set_assignments_sql(List *cols);
extern char *ttl_set_pending_sql(Relation rel, List *cols);

/* ----------
 * Purge windows (window.c)
 * ----------
 */
extern char *ttl_window_normalize(const char *text);
extern void ttl_window_read(const char *text, TtlWindows *w);
extern bool ttl_window_find(TtlPolicy *policy, TimestampTz now,
							TimestampTz *from, TimestampTz *until);
extern TimestampTz ttl_window_due(TtlPolicy *policy, TimestampTz t);
extern double ttl_window_share(TtlPolicy *policy);

/* ----------
 * Filters (filter.c)
 * ----------
 */
/* a policy's text parsed behind a prefix, for ttl_policy_text_callback */
typedef struct TtlPolicyText
{
	const char *what;			/* "filter", "set_columns" */
	const char *text;
	int			prefix_len;
} TtlPolicyText;

extern void ttl_policy_text_callback(void *arg);
extern Node *ttl_filter_parse(Relation rel, const char *filter, bool stored);
extern char *ttl_filter_deparse(Relation rel, Node *expr);
extern List *ttl_filter_functions(Node *expr);
extern char *ttl_filter_function_signature(Oid funcid);
extern Oid	ttl_filter_function_lookup(const char *signature);
extern bool ttl_filter_runs_user_code(Node *expr);
extern void ttl_filter_check_functions(Node *expr, TtlPolicy *policy, List *also);

/* ----------
 * A policy resolved to its physical tables (targets.c)
 *
 * A target is one physical table a policy purges: the policy's own table,
 * or one leaf partition, or one inheritance child (or the parent's own
 * rows).  Its resolution (columns matched by name, the key, the filter,
 * the index, the statement) is done once and kept until an invalidation
 * says the table, an index or a function may have changed.
 * ----------
 */
typedef struct TtlPlan TtlPlan;	/* statement.c */

/* the known-dead prefix of a target's index (skip.c) */
typedef struct TtlSkip
{
	Oid			indexoid;		/* the index it is of */
	Oid			relfilenode;	/* ... and the index's storage it was read
								 * from (a TRUNCATE or REINDEX makes new
								 * pages, maybe with the same LSNs) */
	bool		ready;			/* recorded: passes may start at key */
	TransactionId xid;			/* the (sub)transaction that recorded it */
	uint32		writes;			/* the table's write counter (writes.c)
								 * before the pass checked it */
	bool		tracking;		/* this pass is recording it */
	Datum		key;			/* the last key of the last page but one */
	bool		have_edge;
	Datum		edge;			/* the last key of the page before pos */
	int			npages;			/* leaf pages it spans, leftmost first */
	int			maxpages;
	int			pos;			/* the page the scan is on, -1: not known */
	BlockNumber *blocks;
	XLogRecPtr *lsns;
} TtlSkip;

typedef struct TtlTarget
{
	Oid			relid;
	bool		only;			/* the parent of inheritance children: its
								 * own rows */
	bool		shard;			/* a Citus shard placement (citus.c) */
	MemoryContext cxt;			/* the resolution below lives here */
	MemoryContext skipcxt;		/* the known-dead prefix lives here */
	uint64		resolved_gen;	/* 0: not resolved */
	bool		usable;			/* resolved, and the policy can run on it */
	char	   *relname;		/* qualified, quoted */
	Oid			owner;			/* whose rights (the policy table's owner) */
	AttrNumber	attnum;			/* the TTL column in this table */
	AttrNumber	ttl_attnum;		/* per-row TTL column, or 0 */
	AttrNumber	soft_attnum;	/* soft-delete column, or 0 */
	List	   *set_columns;	/* anonymize: of TtlSetColumn (set.c) */
	char	   *set_pending_sql;	/* ... a row not done yet, as SQL */
	List	   *set_funcs;		/* ... the functions that condition calls */
	Oid			keytype;		/* type of the scanned key (a domain's base) */
	int16		keylen;
	bool		keybyval;
	Oid			indexoid;		/* InvalidOid: no usable index */
	Expr	   *filter;			/* rows that may expire, or NULL */
	char	   *key_sql;		/* the key as SQL over the table */
	char	   *filter_sql;		/* the filter as SQL, or NULL */
	TtlPlan    *plan;			/* executor path, made on first use */
	TtlSkip		skip;			/* kept from pass to pass, like the above */
	bool		scattered;		/* its rows lie on the heap in no key
								 * order (a large backlog is swept) */

	/* progress of the current pass on this table */
	uint32		writes_at_start;	/* its write counter (writes.c) */
	bool		done;			/* reached the cutoff (or gone) */
	bool		have_resume;
	Datum		resume_key;		/* by-reference keys live in cxt's parent */
	/* where in the run of entries of resume_key (batch.c, ttl_batch_scan) */
	ItemPointerData resume_tid; /* the last one read; invalid: from its start */
	int64		resume_dups;	/* how many of them were read */
	List	   *retry;			/* of TtlTidGroup: rows of a failed batch,
								 * retried in parts */
	/* a sweep of the heap in block order (batch.c, ttl_batch_sweep) */
	bool		sweep;
	BlockNumber sweep_next;		/* the next block to read */
	BlockNumber sweep_end;		/* the table's size when the sweep began */
	/* shared with helpers (parallel.c): the pass takes slices of it */
	bool		parallel;
	bool		have_stop;		/* a slice in hand: scan below stop_key */
	Datum		stop_key;
	int			slice;
	/* a row the filter failed on past the held set's bound (held.c) */
	bool		have_step;		/* the next scan steps over step_tid */
	ItemPointerData step_tid;
	bool		no_sweep;		/* and no sweep this pass (batch.c) */
} TtlTarget;

/* rows of a failed statement, to be retried (pass.c) */
typedef struct TtlTidGroup
{
	int			n;
	ItemPointerData *tids;
	TransactionId *xmins;
	bool	   *capped;			/* taken for the cap (batch.c) */
} TtlTidGroup;

typedef enum TtlResolve
{
	TTL_RESOLVE_OK,
	TTL_RESOLVE_GONE,			/* the table or a policy column is gone */
	TTL_RESOLVE_NO_INDEX		/* no usable btree index */
} TtlResolve;

extern uint64 ttl_targets_generation(void);
extern void ttl_targets_watch(Oid relid);
extern void ttl_targets_init(void);
extern bool ttl_targets_may_be_none(TtlPolicy *policy);
extern List *ttl_targets_list(TtlPolicy *policy, MemoryContext cxt);
extern TtlTarget *ttl_target_create(Oid relid, bool only, MemoryContext cxt);
extern TtlResolve ttl_target_resolve(TtlPolicy *policy, TtlTarget *t, Relation rel);
extern void ttl_target_check_types(TtlPolicy *policy, Relation rel);
extern Oid	ttl_find_index(TtlTarget *t, Relation rel);
extern char *ttl_expires_at_sql(void);
extern bool ttl_rel_has_delete_rules(Relation rel, TtlAction action, bool instead_only);

/* ----------
 * The executor path's statement (statement.c)
 * ----------
 */
extern char *ttl_statement_sql(TtlPolicy *policy, TtlTarget *t, Relation rel,
							   Relation parent, bool via_parent, bool precheck,
							   List **funcs);
extern void ttl_statement_check(TtlPolicy *policy, TtlTarget *t, Relation rel);
extern uint64 ttl_statement_run(TtlPolicy *policy, TtlTarget *t, Relation rel,
								Relation parent, bool via_parent,
								ItemPointerData *tids, int ntids,
								const TtlCutoff *cutoff);

/* ----------
 * The known-dead prefix (skip.c)
 * ----------
 */
extern bool ttl_skip_start(TtlTarget *t, Relation irel, Datum *from);
extern void ttl_skip_resume(TtlTarget *t);
extern void ttl_skip_forget(TtlTarget *t);
extern void ttl_skip_on_page(TtlTarget *t, Relation irel, BlockNumber blkno,
							 bool have_prev, Datum prev_key);
extern void ttl_skip_stop(TtlTarget *t);
extern bool ttl_skip_key(TtlTarget *t, Datum *key, uint32 *writes);
extern bool ttl_skip_entry_dead(Relation heap, ItemPointer tid, Snapshot snapshot);

/* ----------
 * Rows that cannot be deleted (held.c)
 * ----------
 */
typedef struct TtlHeld TtlHeld;

extern bool ttl_held_error_row_related(int sqlerrcode);
extern TtlHeld *ttl_held_create(MemoryContext cxt);
extern bool ttl_held_skip(TtlHeld *held, Oid relid, ItemPointer tid,
						  TransactionId xmin, TimestampTz now);
extern bool ttl_held_add(TtlHeld *held, Oid relid, ItemPointer tid,
						 TransactionId xmin, TimestampTz now);
extern bool ttl_held_table_skip(TtlHeld *held, Oid relid, TimestampTz now);
extern void ttl_held_add_table(TtlHeld *held, Oid relid, TimestampTz now);
extern int64 ttl_held_count(TtlHeld *held);
extern void ttl_held_pass_begin(TtlHeld *held);
extern void ttl_held_pass_done(TtlHeld *held);
extern bool ttl_held_first_report(TtlHeld *held, int sqlerrcode);

/* ----------
 * A pass and its batches (pass.c, batch.c, drain.c)
 *
 * A pass of a policy: the cutoff fixed when it starts, its targets, and an
 * adaptive row limit that keeps a batch within ttl_index.batch_time.
 * ----------
 */
typedef enum TtlBatchOutcome
{
	TTL_BATCH_MORE,				/* stopped at a row or time bound: more to do */
	TTL_BATCH_DONE,				/* every target reached the cutoff */
	TTL_BATCH_LOCKED,			/* a table, index or rows were locked */
	TTL_BATCH_GONE,				/* the table or column is gone */
	TTL_BATCH_NO_INDEX			/* no usable btree index on the column */
} TtlBatchOutcome;

/*
 * The tables a pass shares with helpers (parallel.c): the one in hand when
 * the backlog was found large, and those after it in the pass's list, at
 * most this many.
 */
#define TTL_MAX_JOB_TARGETS	16

typedef struct TtlJobTarget
{
	Oid			relid;
	bool		only;
	bool		shard;
} TtlJobTarget;

/* a slice a process claimed (parallel.c) */
typedef struct TtlClaim
{
	int			target;			/* its table: an index into the job's */
	TtlJobTarget table;
	bool		from_start;		/* from the index's start, else from `from` */
	int64		from;
	int64		hi;				/* it ends below this */
} TtlClaim;

/* a process's trial of WAL compression, kept from pass to pass (wal.c) */
typedef struct TtlWalTrial
{
	int			decided;		/* 0: trying, 1: compress, -1: do not */
	bool		measuring;		/* the batch in hand is a trial */
	bool		batch_compresses;	/* the batch in hand compresses */
	uint64		start_bytes;	/* pgWalUsage when it began */
	int64		start_fpi;
	double		bytes_per_row[2];	/* [compressed]: a trial's, 0 = none yet */
	double		fpi_per_row[2]; /* and its full-page images a row */
} TtlWalTrial;

typedef struct TtlPass
{
	MemoryContext cxt;			/* targets and their resolution */
	MemoryContext rowscxt;		/* the rows a batch collects: emptied at
								 * the next batch, so a failed one leaks
								 * nothing into the pass */
	TimestampTz now;			/* the cutoff is computed from it */
	bool		runner;			/* a ttl_runner() call's, that may lead a
								 * shared drain (drain.c) */
	bool		dropped;		/* it dropped a partition (its lock kept) */
	uint32		writes_at_start;	/* the policy's table's write counter */
	bool		listed;			/* targets listed (at the first batch) */
	struct TtlPass *previous;	/* until listed: the pass before */
	List	   *targets;		/* of TtlTarget */
	int			current;		/* index of the target in hand */
	bool		drops_done;		/* whole-partition drops tried */
	bool		skipped_locked; /* a target was locked: pass incomplete */
	bool		missing_index;	/* a target had no usable index */
	int32		row_limit;		/* adaptive, <= batch size */
	int64		pass_rows;
	int64		pass_batches;
	int64		pass_skipped_locked;
	int64		pass_left;		/* expired rows found but not deleted */
	TimestampTz next_expiry;	/* earliest next expiry seen, 0 = none */
	bool		next_expiry_unknown;	/* a look gave up (filter) */
	TtlHeld    *held;			/* the policy's held rows (not owned) */
	struct TtlDrain *drain;		/* a shared drain's state, drain.c */
	TransactionId xid_at_start; /* the next XID when the pass began */
	TtlWalTrial wal;			/* this process's, wal.c */
	/* the table a batch is on, until it returns: a failure is that table's */
	TtlTarget  *failing_target;
	int			held_tables;	/* tables this pass left alone, held */
	/* the row being looked at, for an error raised by user code */
	Oid			failing_relid;
	ItemPointerData failing_tid;
	TransactionId failing_xmin;
	/* the cap (cap.c), computed at the pass's first batch */
	bool		cap_active;		/* rows below cap_bound go, expired or not */
	Datum		cap_bound;		/* in the key's type, in cxt */
	bool		cap_unmeasured; /* a count not trusted, a cap too large to
								 * read exactly: no cap this pass */
} TtlPass;

/* what a helper needs to run its lead's pass (parallel.c) */
typedef struct TtlJobInfo
{
	Oid			dboid;
	int32		policy_id;
	TimestampTz pass_now;
	Oid			keytype;		/* of the shared key */
	int			helper_index;	/* this helper's place among its worker's */
	bool		runner;			/* its lead is a ttl_runner() call */
} TtlJobInfo;

typedef struct TtlBatchResult
{
	TtlBatchOutcome outcome;
	int64		deleted;		/* rows deleted, archived or soft-deleted */
	int64		archived;		/* of which archived */
	int64		soft_deleted;	/* of which soft-deleted */
	int64		anonymized;		/* of which anonymized */
	int64		capped;			/* of which deleted beyond max_rows before
								 * they expired (cap.c) */
	int64		partitions_dropped;
	int64		skipped_locked;	/* rows skipped because another xact had them */
	int64		left;			/* expired rows found and not deleted */
	double		elapsed_ms;
	bool		flush;			/* its commit waits for the WAL flush: user
								 * code may have written outside (wal.c) */
	/* the rows of the statement in flight: retried in parts if it fails */
	Oid			tids_relid;
	int			ntids;
	ItemPointerData *tids;		/* in the pass's memory */
	TransactionId *xmins;
	bool	   *capped_rows;	/* whether each was taken for the cap */
	/* the last key the last engine batch read, until the next (batch.c) */
	bool		have_last;
	Datum		last_key;
	/*
	 * Asked by the caller (want_top), for a batch that may offer its target
	 * to a shared drain (drain.c): the key of the index's last entry below
	 * the expiry's cutoff, where the expired keys end (by value).
	 */
	bool		want_top;
	bool		have_top;
	Datum		top_key;
} TtlBatchResult;

/* a pass (pass.c); its engine is batch.h's, its shared drain drain.h's */
extern TtlPass *ttl_pass_begin(TtlPolicy *policy, TtlPass *previous,
							   TtlHeld *held, TimestampTz now,
							   int32 row_limit, MemoryContext parent);
extern void ttl_pass_end(TtlPass *pass);
extern void ttl_pass_idle(TtlPass *pass);
extern void ttl_pass_batch(TtlPolicy *policy, TtlPass *pass,
						   TtlBatchResult *result);
extern bool ttl_pass_isolate(TtlPolicy *policy, TtlPass *pass,
							 TtlBatchResult *failed, int sqlerrcode,
							 bool *held_one, TtlTarget **held_table);
extern void ttl_pass_no_index_error(TtlPolicy *policy, int elevel);

/* ----------
 * Size caps (cap.c)
 * ----------
 */
extern void ttl_cap_compute(TtlPolicy *policy, TtlPass *pass);
extern bool ttl_cap_cutoff(TtlPolicy *policy, TtlPass *pass, Oid keytype,
						   struct pg_tz *zone, RegProcedure less, Oid collation,
						   TtlCutoff *cutoff);

/* ----------
 * The replication origin of the worker's changes (origin.c)
 * ----------
 */
extern bool ttl_origin_batch_begin(TtlPolicy *policy);
extern void ttl_origin_batch_end(void);
extern bool ttl_origin_wanted(TtlPolicy *policy);
extern void ttl_origin_config_reloaded(void);
extern const char *ttl_origin_failure(bool *news);
extern int	ttl_origin_drop_unused(void);
extern void ttl_origin_check_capacity(void);

/* ----------
 * The wall-time bound of a batch (timeout.c)
 * ----------
 */
extern int	ttl_timeout_ms(void);
extern void ttl_timeout_batch_start(void);
extern void ttl_timeout_batch_end(void);
extern bool ttl_timeout_fired(void);
extern bool ttl_timeout_killed(void);

/* ----------
 * The WAL of the workers' batches (wal.c)
 * ----------
 */
extern void ttl_wal_batch_mode(TtlPolicy *policy, TtlPass *pass);
extern void ttl_wal_batch_compress(TtlPolicy *policy, TtlPass *pass, bool in_runner);
extern void ttl_wal_batch_learn(TtlPolicy *policy, TtlPass *pass, int64 rows);
extern void ttl_wal_batch_flush(void);

/* ----------
 * Whole-partition drops (partition.c)
 * ----------
 */
extern int	ttl_partition_drop_expired(TtlPolicy *policy, TimestampTz now);

/* ----------
 * Index look-ups (probe.c)
 * ----------
 */
typedef enum TtlProbeResult
{
	TTL_PROBE_FOUND,			/* *expires_at is set */
	TTL_PROBE_EMPTY,			/* no row with a key */
	TTL_PROBE_UNKNOWN			/* locked, gone or unusable: not looked at */
} TtlProbeResult;

extern TtlProbeResult ttl_probe_from(TtlPolicy *policy, TtlTarget *t,
									 Relation rel, Relation irel,
									 struct ExprState *filter,
									 struct ExprContext *econtext,
									 bool have_from, Datum from,
									 TimestampTz *expires_at);
extern TtlProbeResult ttl_probe_oldest(TtlPolicy *policy, TimestampTz *expires_at);
extern bool ttl_probe_runs_owner_code(TtlPolicy *policy);
extern TtlProbeResult ttl_probe_oldest_for_reader(TtlPolicy *policy,
												  TimestampTz *expires_at,
												  bool *user_code);
extern RegProcedure ttl_btree_proc(Relation irel, Oid typid, uint16 strategy);

/* ----------
 * Backlog estimate (backlog.c)
 * ----------
 */
extern bool ttl_backlog_estimate(TtlPolicy *policy, TimestampTz now,
								 double *rows);

/* ----------
 * Shared-memory counters (stats.c)
 * ----------
 */
typedef struct TtlStatsCounters
{
	int64		rows_deleted;
	int64		batches;
	int64		passes;
	int64		rows_skipped_locked;
	int64		skipped_locked;
	int64		errors;
	int64		rows_archived;
	int64		rows_soft_deleted;
	int64		rows_anonymized;
	int64		rows_capped;
	int64		partitions_dropped;
	int64		rows_held;		/* gauge: left in place by the last pass */
	int64		rows_locked;	/* gauge: left locked by the last pass */
	int64		last_pass_rows; /* gauge: rows the last complete pass took */
	double		expiry_rate;	/* gauge: rows/s that expire (worker) */
	double		delete_rate;	/* gauge: rows/s its last pass deleted */
	bool		falling_behind; /* gauge: its passes keep growing */
	double		time_spent_ms;
	TimestampTz last_run;
	TimestampTz last_error_at;
	TimestampTz stats_reset;
	int			last_error_code;	/* SQLSTATE, packed */
	char		last_error[256];
} TtlStatsCounters;

/*
 * What the worker last found of a policy's backlog, published at the end of
 * each pass (and when a pass cannot run): the views read it instead of
 * running the owner's filter in the reader's session, and say from it
 * whether the policy is stalled.
 */
#define TTL_STALL_LEN		48

typedef struct TtlHealth
{
	bool		known;			/* published since the server started */
	TimestampTz oldest_expiry;	/* expiry of the oldest expired row left
								 * after the pass; 0: none; DT_NOBEGIN:
								 * unknown */
	TimestampTz next_expiry;	/* the next row to expire; 0: none known */
	TimestampTz at;				/* when it was published */
	char		reason[TTL_STALL_LEN];	/* why rows stay; "": nothing */
} TtlHealth;

extern void ttl_stats_publish_health(Oid dboid, int32 policy_id, const TtlHealth *h);
extern bool ttl_stats_health(Oid dboid, int32 policy_id, TtlHealth *h);

extern void ttl_stats_init(void);
extern void ttl_stats_count_batch(Oid dboid, TtlPolicy *policy,
								  TtlBatchResult *result);
extern void ttl_stats_count_pass(Oid dboid, TtlPolicy *policy, int64 rows,
								 int64 left, int64 locked);
extern void ttl_stats_count_locked(Oid dboid, TtlPolicy *policy);
extern void ttl_stats_count_rows_locked(Oid dboid, TtlPolicy *policy, int64 rows);
extern void ttl_stats_set_rates(Oid dboid, TtlPolicy *policy, double expiry_rate,
								double delete_rate, bool falling_behind);
extern void ttl_stats_count_error(Oid dboid, TtlPolicy *policy,
								  int sqlerrcode, const char *message);
extern void ttl_stats_forget_others(Oid dboid, List *policies);
extern void ttl_stats_reset(Oid dboid, List *policy_ids);
extern bool ttl_stats_read(Oid dboid, int32 policy_id, TtlStatsCounters *c);
extern void ttl_stats_publish_prefix(Oid dboid, int32 policy_id, Oid relid,
									 Oid indexoid, bool valid, Datum key,
									 uint32 writes);
extern bool ttl_stats_prefix(Oid dboid, int32 policy_id, Oid relid,
							 Oid indexoid, Datum *key, uint32 *writes);
extern void ttl_stats_defer(bool defer);
extern void ttl_stats_at_xact_end(bool commit);
extern void ttl_stats_at_subxact_end(bool commit);

/* ----------
 * Writes to tables, noted at commit (writes.c)
 * ----------
 */
extern void ttl_writes_note(Oid relid);
extern void ttl_writes_bump(void);
extern void ttl_writes_at_xact_end(bool commit);
extern uint32 ttl_writes_count(Oid dboid, Oid relid);
extern void ttl_writes_prepared(const char *gid, bool wake);
extern bool ttl_writes_finish_prepared(const char *gid, bool commit);

/* ----------
 * Shared memory (shmem.c)
 * ----------
 */
#define TTL_PHASE_LEN		48
/* probes asked for databases without a slot, kept until the launcher looks */
#define TTL_PROBE_REQUESTS	16
/* schema.table, both quoted: every character may be a doubled quote */
#define TTL_QUALNAME_LEN	(2 * (2 * NAMEDATALEN + 2) + 2)

/*
 * What a worker is doing now, published in its database slot and shown by
 * ttl_index_progress.  Times are 0 when not applicable.
 */
typedef struct TtlProgress
{
	Oid			dboid;
	NameData	datname;
	int			pid;
	char		phase[TTL_PHASE_LEN];
	TimestampTz phase_since;
	int32		policy_id;		/* 0 unless deleting */
	char		relname[TTL_QUALNAME_LEN];	/* qualified and quoted */
	TimestampTz pass_started;
	int64		pass_rows;		/* deleted in this pass, before this batch */
	int64		pass_batches;	/* batches of this pass, before this batch */
	int32		batch_row_limit;	/* most rows the batch in flight takes */
	TimestampTz batch_started;	/* 0: no batch in flight */
} TtlProgress;

/* a database as the launcher sees it (ttl_index_databases) */
typedef struct TtlDbStatus
{
	Oid			dboid;
	NameData	datname;
	bool		has_extension;
	int			pid;			/* its worker, 0: none */
	TimestampTz waiting_since;	/* 0: not waiting for a worker slot */
	TimestampTz turn_started;	/* its worker's turn began, 0: none */
	int64		turns;			/* workers started for it */
	TimestampTz blocked_until;	/* DROP DATABASE and friends */
	int64		replica_holds;	/* times its worker held for replicas */
	int64		replica_hold_ms;	/* and for how long in all */
} TtlDbStatus;

extern void ttl_clip_copy(char *dst, const char *src, Size size);
extern Size ttl_shmem_size(void);
extern void ttl_shmem_request(void);
extern void ttl_shmem_init(void);
extern bool ttl_shmem_ready(void);
extern bool ttl_shmem_slots_lock_held(void);
struct BackgroundWorker;
extern void ttl_shmem_bgworker(struct BackgroundWorker *bgw, const char *function,
							   const char *type);
extern uint32 ttl_wait_event(const char *name);

/* launcher side */
extern bool ttl_shmem_launcher_attach(void);
extern void ttl_shmem_publish_settings(void);

/* worker side of its slot */
extern bool ttl_slot_attach(Oid dboid);
extern int	ttl_shmem_origin_claim(void);
extern bool ttl_shmem_origin_in_use(int slot);
extern void ttl_slot_report_extension(bool installed);
extern uint32 ttl_slot_generation(void);
extern bool ttl_slot_must_leave(void);
extern bool ttl_slot_turn_over(void);
extern void ttl_slot_set_phase(const char *phase);
extern void ttl_slot_count_replica_hold(int64 ms);
extern void ttl_slot_batch_begin(TtlPolicy *policy, TtlPass *pass,
								 const char *relname);
extern void ttl_slot_batch_end(TtlPass *pass);
extern void ttl_slot_record_death(int32 policy_id, int sqlerrcode,
								  const char *message);
struct TtlDeath;				/* shmem.h */
extern int	ttl_slot_deaths(struct TtlDeath *deaths);
extern void ttl_slot_forget_death(int32 policy_id);

/* backends */
extern void ttl_shmem_wake_database(Oid dboid);
/* helpers one worker may run at once (ttl_index.max_parallel_workers) */
#define TTL_MAX_HELPERS		8
/* ttl_runner() calls that may lead a shared drain at once (parallel.c) */
#define TTL_RUNNER_SLOTS	4
/* slices a shared backlog is cut into, at most (parallel.c) */
#define TTL_MAX_SLICES		48

extern int	ttl_shmem_block_database(Oid dboid, TimestampTz until, pid_t *pids);
extern pid_t ttl_shmem_database_pid(Oid dboid);
extern void ttl_shmem_unblock_database(Oid dboid);
extern List *ttl_shmem_progress_list(void);
extern List *ttl_shmem_database_list(void);
extern int	ttl_shmem_running_count(void);
extern bool ttl_shmem_published_setting(const char *name, char *buf, Size len);

/* XIDs the workers took (yield.c) */
extern void ttl_shmem_count_worker_xid(void);
extern uint64 ttl_shmem_worker_xids(void);
extern int	ttl_shmem_processes(void);

/* write counters (writes.c) */
extern pg_atomic_uint32 *ttl_shmem_write_counter(uint32 hash);

/* the stats hash (stats.c) */
extern struct HTAB *ttl_shmem_stats_hash(void);
extern LWLock *ttl_shmem_stats_lock(void);

/* ----------
 * Launcher (launcher.c)
 * ----------
 */
extern void ttl_launcher_register(void);
extern PGDLLEXPORT void ttl_launcher_main(Datum main_arg);

/* ----------
 * Hooks (hooks.c)
 * ----------
 */
extern void ttl_hooks_install(void);
extern void ttl_hooks_install_local(void);
extern void ttl_wake_at_commit(void);

/* ----------
 * Keeping up with the rows that expire (keepup.c)
 * ----------
 */
typedef struct TtlKeepUp
{
	TimestampTz prev_start;		/* start of the last complete pass, 0: none */
	int64		prev_rows;		/* rows it deleted */
	double		expiry_rate;	/* rows/s that expire, 0: not known yet */
	double		delete_rate;	/* rows/s the last pass deleted */
	int			growing_passes; /* passes in a row longer than the last */
	TimestampTz growing_since;
	bool		warned;			/* said it is falling behind */
	bool		window_missed;	/* a purge window closed on its pass */
} TtlKeepUp;

extern void ttl_keepup_pass_done(TtlKeepUp *k, TimestampTz start, TimestampTz end,
								 int64 rows, const char *relname, const char *column);
extern bool ttl_keepup_behind(TtlKeepUp *k);
extern long ttl_keepup_pause_ms(TtlKeepUp *k, TimestampTz pass_start, int64 rows,
								long pause_ms, double window_share);
extern void ttl_keepup_window_closed(TtlKeepUp *k, const char *relname,
									 const char *column, TimestampTz opens);

/* ----------
 * Pacing for replicas (replicas.c)
 * ----------
 */
extern bool ttl_replicas_hold(const char **phase);

/* ----------
 * Giving way to the application (yield.c)
 * ----------
 */
/* a batch takes at most this many rows while others are writing */
#define TTL_BUSY_BATCH_ROWS		500
/*
 * giving way lasts this long after the last sign of writing, and a pause is
 * slept in slices no longer than this
 */
#define TTL_BUSY_HOLD_MS		1000

extern bool ttl_yield_in_worker;
extern void ttl_yield_start(void);
extern bool ttl_yield_renice(void);
extern void ttl_yield_own_xid(void);
extern void ttl_yield_restart(void);
extern bool ttl_yield_busy(void);
extern bool ttl_yield_writing(void);
extern long ttl_yield_pause_ms(int64 batch_us);

/* ----------
 * Worker (worker.c) and ttl_runner() (runner.c)
 * ----------
 */
extern PGDLLEXPORT void ttl_worker_main(Datum main_arg);

/* ----------
 * Helpers of a worker on a large backlog (helper.c; shared part parallel.c)
 * ----------
 */
#define TTL_CLAIM_BUSY		(-1)
#define TTL_CLAIM_OVER		(-2)

extern int	ttl_parallel_post(int32 policy_id, Oid keytype, TimestampTz pass_now,
							  const TtlJobTarget *tables, int ntables,
							  int64 lo, int64 top, int64 hi, int nslices, int want,
							  int *slotno, uint32 *job_id);
extern void ttl_parallel_unreserve(void);
extern bool ttl_parallel_runner_begin(void);
extern void ttl_parallel_runner_end(void);
extern int64 ttl_parallel_runner_rows(void);
extern bool ttl_parallel_database_waits(void);
extern int	ttl_parallel_claim(TtlClaim *claim);
extern void ttl_parallel_give_up(int i, int outcome);
extern int	ttl_parallel_finished(uint32 handled, int *outcome);
extern bool ttl_parallel_slice_end(int i, int64 *hi);
extern void ttl_parallel_progress(int i, bool have_cur, int64 cur, int64 rows,
								  int64 left, int64 skipped);
extern void ttl_parallel_release(int i, bool done);
extern int64 ttl_parallel_end(uint32 job_id, int64 *left, int64 *skipped);
extern bool ttl_parallel_attach(int slotno, uint32 job_id, TtlJobInfo *info);
extern bool ttl_parallel_must_stop(void);

extern PGDLLEXPORT void ttl_helper_main(Datum main_arg);

#endif							/* TTL_INDEX_H */
