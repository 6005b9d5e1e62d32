/*-------------------------------------------------------------------------
 *
 * drain.h
 *	  The shared drain (drain.c): a backlog a worker drains with its
 *	  helpers, in slices.  For pass.c (the lead's batches), worker.c
 *	  (starting one) and helper.c (a helper's slices).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_DRAIN_H
#define TTL_DRAIN_H

#include "ttl_index.h"
#include "engine/engine.h"

/* the lead */
extern bool ttl_drain_active(TtlPass *pass);
extern void ttl_drain_batch_begin(TtlPass *pass);
extern bool ttl_drain_may_offer(TtlPass *pass, TtlTarget *t);
extern void ttl_drain_offer(TtlPass *pass, TtlTarget *t, TtlBatchResult *result);
extern bool ttl_drain_offered(TtlPass *pass);
extern bool ttl_drain_waiting(TtlPass *pass);
extern void ttl_drain_start(TtlPolicy *policy, TtlPass *pass);
extern bool ttl_drain_lead_batch(TtlPolicy *policy, TtlPass *pass,
								 TtlBatchResult *result);
extern void ttl_drain_end(TtlPass *pass);

/* a helper */
extern void ttl_drain_join(TtlPass *pass, TtlJobInfo *info);
extern int	ttl_drain_claim(TtlPass *pass);
extern TtlBatchOutcome ttl_drain_helper_batch(TtlPolicy *policy, TtlPass *pass,
											  TtlBatchResult *result);
extern bool ttl_drain_helper_after(TtlPass *pass, TtlBatchResult *result);
extern void ttl_drain_leave(TtlPass *pass);

#endif							/* TTL_DRAIN_H */
