/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  The batch engine (batch.c): one batch on one target between its
 *	  resume position and its stop key or the pass's cutoff.  For the
 *	  files that drive batches: pass.c, drain.c, runner.c and the engine's
 *	  test entry points.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_BATCH_H
#define TTL_BATCH_H

#include "ttl_index.h"
#include "engine/engine.h"

extern TtlBatchOutcome ttl_batch_run(TtlPolicy *policy, TtlPass *pass,
									 TtlTarget *t, TtlBatchResult *result);
extern void ttl_batch_resume_from(TtlPass *pass, TtlTarget *t, Datum key);
extern void ttl_batch_forget_rows(TtlBatchResult *result);
extern bool ttl_batch_active(void);
extern void ttl_batch_set_active(bool on);
extern void ttl_batch_set_constraints_immediate(bool on);
extern void ttl_batch_set_entry_limit(int n);

#endif							/* TTL_BATCH_H */
