/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  The shapes of the shared areas, for the files that handle them
 *	  directly: shmem.c, which creates them; launcher.c, which runs the
 *	  database slots; parallel.c, which runs the helpers' share of a slot,
 *	  and slices.c, the arithmetic of its slices;
 *	  stats.c, which owns the stats hash's entries; writes.c, which keeps
 *	  the prepared transactions' tables.  Every
 *	  other file goes through the accessors declared in ttl_index.h.
 *
 * Locking: see shmem.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_SHMEM_H
#define TTL_SHMEM_H

#include "access/xact.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "ttl_index.h"
#include "shared/shared.h"

/*
 * A database's large backlog shared with helper processes (parallel.c):
 * the tables of one pass (a table, or its partitions or shards from the
 * one in hand on), the first cut by key into slices, each other one slice
 * of its own from its index's start; each slice is taken by one process at
 * a time, and a process with no free slice takes the upper half of the
 * widest slice another holds.  Keys are ordinals (ttl_key_ordinal): int64
 * that sort as the keys.  Under the slots lock; written by the database's
 * worker (the lead: post, end) and by the helpers (attach, detach), and by
 * both as they claim, progress and release slices.
 */
typedef enum TtlSliceState
{
	TTL_SLICE_UNUSED = 0,
	TTL_SLICE_FREE,
	TTL_SLICE_TAKEN,
	TTL_SLICE_DONE
} TtlSliceState;

typedef struct TtlSlice
{
	uint8		state;
	uint8		target;			/* the table: an index into job->targets */
	bool		from_start;		/* cur not known yet: the index's start */
	pid_t		taken_by;
	int64		cur;			/* where it resumes: committed progress */
	int64		hi;				/* it ends below this */
} TtlSlice;

typedef struct TtlJob
{
	uint32		id;				/* bumped at each post */
	bool		active;			/* posted, not yet ended */
	int32		policy_id;
	Oid			keytype;		/* of the ordinals */
	TimestampTz pass_now;		/* the lead's pass: the same cutoff */
	int			ntargets;
	TtlJobTarget targets[TTL_MAX_JOB_TARGETS];
	/* TTL_BATCH_MORE while a table is worked on, else why it was given up */
	uint8		outcomes[TTL_MAX_JOB_TARGETS];
	TtlSlice	slices[TTL_MAX_SLICES];
	pid_t		runner_lead;	/* the ttl_runner() call that leads it, or 0
								 * (a worker): its slices are never halved,
								 * nor does it halve others' (slices.c) */
	int			reserved;		/* helpers registered, not yet attached */
	pid_t		helpers[TTL_MAX_HELPERS];	/* attached, 0 = free */
	int64		helper_rows;	/* deleted by the helpers, committed */
	int64		helper_left;	/* expired rows they left in place */
	int64		helper_skipped; /* and rows they found locked */
} TtlJob;

/*
 * A policy during whose batch a worker of the database ended (FATAL): every
 * one is remembered, not only the last, so that each new worker rests them
 * all (worker.c).  Past TTL_MAX_DEATHS policies, the record of the one
 * that killed a worker longest ago is reused.
 */
#define TTL_MAX_DEATHS	32

typedef struct TtlDeath
{
	int32		policy_id;		/* 0: free */
	int			code;			/* its SQLSTATE */
	int			count;			/* in a row for that policy */
	TimestampTz at;				/* the last time */
	bool		reported;		/* a worker has logged and counted it */
	char		message[128];
} TtlDeath;

/*
 * One database the launcher keeps track of.  Each field has one writer
 * except where noted:
 *	launcher: dboid, datname, worker_running, last_start, failures,
 *			  waiting_since, turn_started, turns, turn_over (set)
 *	worker:   pid, latch, has_extension, progress, replica_holds,
 *			  replica_hold_ms, death_*
 *	backends: probe, generation, blocked_until
 *	worker and helpers: job (parallel.c)
 */
typedef struct TtlDbSlot
{
	Oid			dboid;			/* InvalidOid: slot is free */
	NameData	datname;
	bool		has_extension;	/* false until a worker has seen it */
	bool		probe;			/* start a worker even if !has_extension */
	bool		worker_running; /* registered and not yet seen stopped */
	pid_t		pid;			/* worker's pid once attached, else 0 */
	Latch	   *latch;			/* worker's latch once attached */
	uint32		generation;		/* bumped when the policy catalog changes */
	TimestampTz blocked_until;	/* no worker may run before this */
	TimestampTz last_start;
	int			failures;
	TimestampTz waiting_since;	/* wants a worker, none may start: since */
	TimestampTz turn_started;	/* its worker started then */
	bool		turn_over;		/* the launcher asks the worker to leave */
	/* its worker found it paused (ALTER DATABASE): none starts until a wake */
	bool		db_paused;
	int64		turns;			/* workers started for it */
	TtlProgress progress;		/* what the worker is doing now */
	int64		replica_holds;	/* times a worker held for replicas */
	int64		replica_hold_ms;	/* and for how long in all */
	TtlJob		job;			/* helpers on a backlog (parallel.c) */
	/* policies during whose batch a worker ended (FATAL) (worker.c) */
	TtlDeath	deaths[TTL_MAX_DEATHS];
} TtlDbSlot;

/*
 * One policy's counters in the stats hash (stats.c: the entry is found and
 * created under the stats lock, its counters changed under its mutex).
 */
typedef struct TtlStatsKey
{
	Oid			dboid;
	int32		policy_id;
} TtlStatsKey;

typedef struct TtlStatsEntry
{
	TtlStatsKey key;			/* hash key: must be first */
	slock_t		mutex;			/* protects the counters and the prefix */
	TtlStatsCounters c;
	/* the worker's known-dead prefix of one target (not saved to the file) */
	Oid			prefix_relid;	/* InvalidOid: none */
	Oid			prefix_indexoid;
	Datum		prefix_key;		/* a by-value key */
	uint32		prefix_writes;	/* the table's write counter it holds for */
	TtlHealth	health;			/* the worker's, not saved to the file */
} TtlStatsEntry;

/*
 * The tables a prepared transaction wrote (writes.c), as write-counter
 * buckets, kept from PREPARE TRANSACTION to COMMIT PREPARED.  One per
 * prepared transaction the server may hold; under the slots lock.
 */
#define TTL_PREPARED_BUCKETS	32

typedef struct TtlPrepared
{
	char		gid[GIDSIZE];	/* "": free */
	Oid			dboid;
	int			n;				/* buckets below; -1: too many to keep */
	uint32		buckets[TTL_PREPARED_BUCKETS];
} TtlPrepared;

extern TtlPrepared *ttl_shmem_prepared_find(const char *gid, Oid dboid, bool create);

extern LWLock *ttl_shmem_slots_lock(void);
extern int	ttl_shmem_nslots(void);
extern TtlDbSlot *ttl_shmem_slot(int i);
extern TtlDbSlot *ttl_shmem_slot_find(Oid dboid);
extern TtlDbSlot *ttl_shmem_slot_any(int i);
extern int	ttl_shmem_runner_helpers(void);
extern int	ttl_shmem_take_probe_requests(Oid *dboids);
extern void ttl_shmem_launcher_detach(void);
extern int	ttl_shmem_max_workers(void);
extern int	ttl_shmem_helpers_of(TtlDbSlot *slot);
extern int	ttl_shmem_processes_of(TtlDbSlot *slot);

/* a job's slices, on the job given (slices.c) */
extern int	ttl_slices_cut(TtlJob *job, const TtlJobTarget *tables, int ntables,
						   int64 lo, int64 top, int64 hi, int nslices);
extern int	ttl_slices_claim(TtlJob *job, pid_t who, TtlClaim *claim);
extern bool ttl_slices_end(TtlJob *job, int i, pid_t who, int64 *hi);
extern bool ttl_slices_progress(TtlJob *job, int i, pid_t who, bool have_cur,
								int64 cur);
extern void ttl_slices_give_back(TtlJob *job, int i);
extern bool ttl_slices_let_go(TtlJob *job, int i, pid_t who, TtlSliceState state,
							  int outcome);
extern int	ttl_slices_finished(TtlJob *job, uint32 handled, int *outcome);

#endif							/* TTL_SHMEM_H */
