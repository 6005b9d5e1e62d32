/*-------------------------------------------------------------------------
 *
 * ttl_index.h
 *	  Declarations shared by the files of the ttl_index extension.
 *
 * The extension is split into one file per box of the design:
 *
 *	ttl_index.c  module load: GUCs, shared memory, hooks
 *	launcher.c   the cluster-wide launcher and the per-database slots
 *	worker.c     the per-database worker loop and its scheduler
 *	purge.c      the purge engine: one batch = index range scan + DELETE
 *	catalog.c    reading the policy catalog and choosing the index
 *	api.c        SQL-callable functions that manage policies
 *	stats.c      shared-memory counters, their file across restarts, and
 *	             the ttl_index_stats SRF
 *	backlog.c    estimating how many rows are past expiry, from statistics
 *	progress.c   the ttl_index_progress SRF
 *	expiry.c     time arithmetic of TTL keys, units, ttl_expires_at()
 *	target.c     what a policy means for one table: its key, its filter,
 *	             the index that serves it, the SQL of its action
 *	partition.c  partitioned tables: their leaves, whole-partition drops
 *	yield.c      giving way to the application while it writes
 *
 * Locking rules are described at the top of the file that owns the lock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_INDEX_H
#define TTL_INDEX_H

#include "access/attnum.h"
#include "datatype/timestamp.h"
#include "utils/timestamp.h"
#include "executor/spi.h"
#include "nodes/pg_list.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/relcache.h"

#define TTL_EXTENSION_NAME		"ttl_index"
#define TTL_CATALOG_NAME		"ttl_index_policy"
/* comment on the indexes ttl_create_index() creates (see api.c) */
#define TTL_INDEX_COMMENT		"created by ttl_index; dropped by ttl_drop_index()"

/* ----------
 * Settings (ttl_index.c)
 * ----------
 */
extern bool ttl_enabled;
extern bool ttl_synchronous_commit;
extern int	ttl_batch_size;
extern int	ttl_batch_time;			/* ms */
extern int	ttl_max_sleep;			/* ms */
extern int	ttl_lock_timeout;		/* ms */
extern int	ttl_error_delay;		/* s */
extern int	ttl_launcher_naptime;	/* s */
extern int	ttl_max_databases;
extern int	ttl_max_policies;
extern int	ttl_log_min_duration;	/* ms, -1 = off */
extern int	ttl_rate_limit;			/* rows/s over all workers, 0 = none */
extern int	ttl_busy_share;			/* %, 100 = never yield */
extern int	ttl_worker_nice;		/* 0..19, workers' CPU priority */

/* true when loaded through shared_preload_libraries (shared memory exists) */
extern bool ttl_preloaded;

/* ----------
 * One TTL policy, as read from the catalog (catalog.c)
 * ----------
 */
typedef enum TtlAction
{
	TTL_ACTION_DELETE,
	TTL_ACTION_ARCHIVE,			/* move the row into archive_relid */
	TTL_ACTION_SOFT_DELETE		/* set soft_column to the time of expiry */
} TtlAction;

typedef struct TtlPolicy
{
	int32		id;
	Oid			relid;
	AttrNumber	attnum;
	char	   *column_name;	/* as stored in the catalog */
	int64		expire_after;	/* microseconds */
	int32		batch_size;		/* 0 = use ttl_index.batch_size */
	bool		enabled;
	/* 1.2 */
	char	   *ttl_column;		/* per-row TTL column, or NULL */
	char	   *filter;			/* stored filter expression, or NULL */
	int64		unit_ns;		/* numeric epoch column: ns per unit; else 0 */
	TtlAction	action;
	Oid			archive_relid;	/* TTL_ACTION_ARCHIVE */
	char	   *soft_column;	/* TTL_ACTION_SOFT_DELETE */
	int32		rate_limit;		/* rows/s, 0 = none */
} TtlPolicy;

extern bool ttl_extension_info(Oid *nspoid, Oid *owner);
extern Oid	ttl_catalog_namespace(bool missing_ok);
extern char *ttl_catalog_relname(void);
extern bool ttl_catalog_is_current(void);
extern char *ttl_qualified_relname(Oid relid);
extern int64 ttl_interval_usecs(Interval *span);
extern List *ttl_load_policies(MemoryContext cxt);

/* ----------
 * Time arithmetic (expiry.c)
 * ----------
 */
extern int64 ttl_unit_parse(const char *unit);
extern bool ttl_key_type_ok(Oid typid, int64 unit_ns);
extern Datum ttl_cutoff(Oid typid, int64 unit_ns, TimestampTz now, int64 expire_after);
extern TimestampTz ttl_key_expiry(Oid typid, int64 unit_ns, Datum key, int64 expire_after);

/* ----------
 * A policy applied to one table (target.c)
 *
 * The table is the policy's own, or for a partitioned table one of its
 * partitions: columns are matched by name, because a partition's column
 * numbers may differ from its parent's.
 * ----------
 */
typedef struct TtlTarget
{
	Relation	rel;
	AttrNumber	attnum;			/* the TTL column in rel */
	AttrNumber	ttl_attnum;		/* per-row TTL column, or 0 */
	AttrNumber	soft_attnum;	/* soft-delete column, or 0 */
	Oid			keytype;		/* type of the scanned key */
	Expr	   *filter;			/* rows that may expire (user filter, and
								 * "not yet soft-deleted"), or NULL */
	char	   *key_sql;		/* the key as SQL over rel */
	char	   *filter_sql;		/* the filter as SQL, or NULL */
} TtlTarget;

typedef enum TtlTargetStatus
{
	TTL_TARGET_OK,
	TTL_TARGET_GONE,			/* a column of the policy is gone */
	TTL_TARGET_BAD				/* a column has a type the policy cannot use */
} TtlTargetStatus;

extern TtlTargetStatus ttl_target_resolve(TtlPolicy *policy, Relation rel,
										  TtlTarget *t, bool noerror);
extern Node *ttl_filter_parse(Relation rel, const char *filter);
extern char *ttl_filter_deparse(Relation rel, Node *expr);
extern Oid	ttl_find_index(TtlTarget *t);
extern char *ttl_target_action_sql(TtlPolicy *policy, TtlTarget *t);
extern char *ttl_expires_at_sql(void);

/* ----------
 * Partitioned tables (partition.c)
 * ----------
 */
extern Oid	ttl_partition_next_leaf(Oid relid, Oid after);
extern int	ttl_partition_drop_expired(TtlPolicy *policy, TimestampTz now);

/* ----------
 * Purge engine (purge.c)
 *
 * TtlPurgeState is the per-policy state that lives across batches of one
 * pass: the cutoff fixed when the pass started, the key the last batch
 * reached, and an adaptive row limit that keeps a batch within
 * ttl_index.batch_time.
 * ----------
 */
typedef enum TtlBatchOutcome
{
	TTL_BATCH_MORE,				/* stopped at a row or time bound: more to do */
	TTL_BATCH_DONE,				/* reached the cutoff: pass complete */
	TTL_BATCH_LOCKED,			/* table, index or rows locked: come back later */
	TTL_BATCH_GONE,				/* table or column gone */
	TTL_BATCH_NO_INDEX			/* no usable btree index on the column */
} TtlBatchOutcome;

typedef struct TtlPurgeState
{
	bool		in_pass;
	TimestampTz now;			/* the "now" the cutoff was computed from */
	Oid			target;			/* partitioned table: the partition in hand */
	bool		drops_done;		/* partitioned table: whole partitions done */
	TimestampTz leaves_next_expiry; /* partitioned: earliest over leaves done */
	bool		have_resume;
	Datum		resume_key;		/* a by-reference key lives in
								 * TopMemoryContext */
	bool		resume_byval;
	int32		row_limit;		/* adaptive, <= batch size */
	int64		pass_rows;
	int64		pass_batches;
	int64		pass_skipped_locked;
	TimestampTz next_expiry;	/* when the next row expires, or 0 = none */
	bool		next_expiry_unknown;	/* the last look gave up (filter) */
} TtlPurgeState;

typedef struct TtlBatchResult
{
	TtlBatchOutcome outcome;
	int64		deleted;		/* rows deleted, archived or soft-deleted */
	int64		archived;		/* of which archived */
	int64		soft_deleted;	/* of which soft-deleted */
	int64		partitions_dropped;
	int64		skipped_locked;	/* rows skipped because another xact had them */
	double		elapsed_ms;
} TtlBatchResult;

extern void ttl_pass_begin(TtlPolicy *policy, TtlPurgeState *state, TimestampTz now);
extern void ttl_purge_batch(TtlPolicy *policy, TtlPurgeState *state,
							TtlBatchResult *result);
typedef enum TtlProbeResult
{
	TTL_PROBE_FOUND,			/* *expires_at is set */
	TTL_PROBE_EMPTY,			/* no row with a key */
	TTL_PROBE_UNKNOWN			/* locked, gone or unusable: not looked at */
} TtlProbeResult;

extern void ttl_purge_no_index_error(TtlPolicy *policy, int elevel);
extern bool ttl_publications_exist(void);
extern TtlProbeResult ttl_probe_oldest(TtlPolicy *policy, TimestampTz *expires_at);

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
extern Size ttl_stats_shmem_size(void);
extern void ttl_stats_shmem_init(void);
extern void ttl_stats_count_batch(Oid dboid, TtlPolicy *policy,
								  TtlBatchResult *result);
extern void ttl_stats_count_pass(Oid dboid, TtlPolicy *policy);
extern void ttl_stats_count_error(Oid dboid, TtlPolicy *policy,
								  const char *message);
extern void ttl_stats_forget_others(Oid dboid, List *policies);
extern void ttl_stats_reset(Oid dboid, List *policy_ids);

/* ----------
 * Launcher and database slots (launcher.c)
 * ----------
 */
extern Size ttl_launcher_shmem_size(void);
extern void ttl_launcher_shmem_init(void);
extern void ttl_launcher_register(void);
extern void ttl_wake_at_commit(void);
extern void ttl_at_xact_end(bool commit);
extern void ttl_utility_hook_install(void);

/*
 * What a worker is doing now, published in its database slot and shown by
 * ttl_index_progress.  Times are 0 when not applicable.
 */
#define TTL_PHASE_LEN		24
/* schema.table, both quoted: every character may be a doubled quote */
#define TTL_QUALNAME_LEN	(2 * (2 * NAMEDATALEN + 2) + 2)

typedef struct TtlProgress
{
	Oid			dboid;
	NameData	datname;
	int			pid;
	char		phase[TTL_PHASE_LEN];	/* "starting", "reading policies",
										 * "deleting", "rate limited",
										 * "sleeping" */
	TimestampTz phase_since;
	int32		policy_id;		/* 0 unless deleting */
	char		relname[TTL_QUALNAME_LEN];	/* qualified and quoted */
	TimestampTz pass_started;
	int64		pass_rows;		/* deleted in this pass, before this batch */
	int64		pass_batches;	/* batches of this pass, before this batch */
	int32		batch_row_limit;	/* most rows the batch in flight takes */
	TimestampTz batch_started;	/* 0: no batch in flight */
} TtlProgress;

/* The per-database worker reports into its slot. */
extern bool ttl_slot_attach(Oid dboid);
extern void ttl_slot_report_extension(bool installed);
extern uint32 ttl_slot_generation(void);
extern bool ttl_slot_blocked(void);
extern void ttl_slot_set_phase(const char *phase);
extern void ttl_slot_batch_begin(TtlPolicy *policy, TtlPurgeState *state,
								 const char *relname);
extern void ttl_slot_batch_end(TtlPurgeState *state);

/* Everyone may read the slots. */
extern List *ttl_slot_progress_list(void);
extern int	ttl_slot_running_count(void);

/* XIDs the workers took, for yield.c */
extern void ttl_shared_count_worker_xid(void);
extern uint64 ttl_shared_worker_xids(void);

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
extern long ttl_yield_pause_ms(int64 batch_us);

/* ----------
 * Worker (worker.c)
 * ----------
 */
extern PGDLLEXPORT void ttl_launcher_main(Datum main_arg);
extern PGDLLEXPORT void ttl_worker_main(Datum main_arg);

/*
 * One full pass over every due policy of the current database, inside the
 * caller's transaction (ttl_runner()).  Returns rows deleted.
 */
extern int64 ttl_run_all_in_transaction(void);

#endif							/* TTL_INDEX_H */
