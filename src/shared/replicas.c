/*-------------------------------------------------------------------------
 *
 * replicas.c
 *	  Pacing for replicas: whether the worker must hold its batches because
 *	  a streaming standby lags too far behind in replay, or a replication
 *	  slot whose consumer is connected has too much WAL left to consume.
 *
 * A drain writes WAL as fast as it deletes; a standby that replays slowly,
 * or a logical consumer that is behind, then falls further behind.  Before
 * each batch the worker asks ttl_replicas_hold(): above
 * ttl_index.max_standby_lag (the WAL between the server's insert position
 * and a physical standby's replay position) or ttl_index.max_slot_lag (the
 * WAL between it and an active slot's consumer: a logical slot's confirmed
 * position, a physical one's restart position) it holds, and it goes on
 * only once every gap is below half of its limit.  Only connected
 * consumers count: an abandoned slot is max_slot_wal_keep_size's business,
 * and waiting for it would stop the purge for good.  The look, before
 * every batch (a drain writes megabytes of WAL in a tenth of a second), is
 * two small arrays under their spinlocks; an idle worker does not look.
 *
 * Locking: reads PostgreSQL's walsender and slot arrays under their own
 * spinlocks and ReplicationSlotControlLock (shared).  Process-local state
 * only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "replication/slot.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "storage/lwlock.h"
#include "storage/spin.h"

#include "compat.h"
#include "ttl_index.h"
#include "shared/shared.h"

/* holding: until every gap is below half of its limit */
static bool Holding = false;
static const char *HoldingFor = NULL;

/*
 * ttl_replicas_gaps
 *		The largest replay gap of a physical standby, and the largest gap of
 *		an active slot's consumer, in bytes (0 when none).
 */
static void
ttl_replicas_gaps(uint64 *standby_gap, uint64 *slot_gap)
{
	XLogRecPtr	now = GetXLogInsertRecPtr();
	int			nlogical = 0;
	int		   *logical_pids;

	*standby_gap = 0;
	*slot_gap = 0;
	logical_pids = palloc(sizeof(int) * Max(max_replication_slots, 1));

	if (ReplicationSlotCtl != NULL)
	{
		LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
		for (int i = 0; i < max_replication_slots; i++)
		{
			ReplicationSlot *s = &ReplicationSlotCtl->replication_slots[i];
			XLogRecPtr	pos;
			pid_t		pid;
			bool		logical;

			if (!s->in_use)
				continue;
			SpinLockAcquire(&s->mutex);
			pid = ttl_slot_active_pid(s);
			logical = SlotIsLogical(s);
			pos = logical ? s->data.confirmed_flush : s->data.restart_lsn;
			SpinLockRelease(&s->mutex);
			if (pid == 0)
				continue;
			if (logical)
				logical_pids[nlogical++] = pid;
			if (pos != InvalidXLogRecPtr && now > pos)
				*slot_gap = Max(*slot_gap, now - pos);
		}
		LWLockRelease(ReplicationSlotControlLock);
	}

	if (WalSndCtl != NULL)
	{
		for (int i = 0; i < max_wal_senders; i++)
		{
			WalSnd	   *w = &WalSndCtl->walsnds[i];
			pid_t		pid;
			WalSndState state;
			XLogRecPtr	apply;
			bool		logical = false;

			SpinLockAcquire(&w->mutex);
			pid = w->pid;
			state = w->state;
			apply = w->apply;
			SpinLockRelease(&w->mutex);
			if (pid == 0 || state != WALSNDSTATE_STREAMING)
				continue;
			/* a logical walsender holds its slot: counted above */
			for (int j = 0; j < nlogical; j++)
				logical = logical || logical_pids[j] == pid;
			if (logical)
				continue;
			if (apply != InvalidXLogRecPtr && now > apply)
				*standby_gap = Max(*standby_gap, now - apply);
		}
	}
	pfree(logical_pids);
}

/*
 * ttl_replicas_hold
 *		Whether the worker must hold its next batch; *phase says for what.
 */
bool
ttl_replicas_hold(const char **phase)
{
	uint64		standby_gap;
	uint64		slot_gap;
	uint64		standby_max = (uint64) ttl_max_standby_lag * 1024 * 1024;
	uint64		slot_max = (uint64) ttl_max_slot_lag * 1024 * 1024;

	*phase = HoldingFor;
	if (ttl_max_standby_lag <= 0 && ttl_max_slot_lag <= 0)
	{
		Holding = false;
		return false;
	}
	ttl_replicas_gaps(&standby_gap, &slot_gap);
	if (ttl_max_standby_lag <= 0)
		standby_gap = 0;
	if (ttl_max_slot_lag <= 0)
		slot_gap = 0;
	if (!Holding)
	{
		if (standby_max > 0 && standby_gap > standby_max)
			HoldingFor = "waiting for standby";
		else if (slot_max > 0 && slot_gap > slot_max)
			HoldingFor = "waiting for replication slot";
		else
			return false;
		Holding = true;
		ereport(LOG,
				(errmsg("ttl_index worker holds its batches: %s",
						HoldingFor),
				 errdetail("A standby is %llu kB behind in replay (ttl_index.max_standby_lag is %d MB), "
						   "a replication slot's consumer %llu kB behind (ttl_index.max_slot_lag is %d MB).",
						   (unsigned long long) (standby_gap / 1024), ttl_max_standby_lag,
						   (unsigned long long) (slot_gap / 1024), ttl_max_slot_lag)));
	}
	else if (standby_gap <= standby_max / 2 && slot_gap <= slot_max / 2)
	{
		Holding = false;
		ereport(LOG,
				(errmsg("ttl_index worker goes on: the replicas caught up")));
		HoldingFor = NULL;
	}
	*phase = HoldingFor;
	return Holding;
}
