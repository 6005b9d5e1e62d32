/*-------------------------------------------------------------------------
 *
 * engine.h
 *	  The engine's header (engine/): a pass over a policy's tables and what
 *	  its batches use (held rows, the known-dead prefix, caps, the
 *	  replication origin, the batch's time bound and WAL, partition drops,
 *	  index look-ups, backlog estimates), for the processes and the SQL
 *	  surface.  batch.h and drain.h add the batch engine and the shared
 *	  drain for the files that drive them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_ENGINE_H
#define TTL_ENGINE_H

#include "ttl_index.h"
#include "policy/policy.h"

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
extern int	ttl_partition_drop_expired(TtlPolicy *policy, TimestampTz now,
									   bool count_only);

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

#endif							/* TTL_ENGINE_H */
