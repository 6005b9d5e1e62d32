/*-------------------------------------------------------------------------
 *
 * shared.h
 *	  Shared state's header (shared/): the per-policy counters, write
 *	  counters, shared memory's slots and accessors, keeping up, pacing for
 *	  replicas, giving way to the application, and the job a worker shares
 *	  with its helpers.  The shapes of the shared areas are shmem.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_SHARED_H
#define TTL_SHARED_H

#include "ttl_index.h"

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
extern bool ttl_stats_clean_exit(int code);
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
	bool		paused;			/* its worker found it paused (ALTER DATABASE) */
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
extern bool ttl_slot_report_paused(uint32 generation);
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
extern uint32 ttl_shmem_settings_generation(void);
extern bool ttl_shmem_server_enabled(void);

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

#endif							/* TTL_SHARED_H */
