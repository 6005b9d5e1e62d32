/*-------------------------------------------------------------------------
 *
 * ttl_index.h
 *	  The bottom floor's header, the one every file of ttl_index includes:
 *	  the module's names, the settings (settings.h), catching and logging
 *	  errors (errors.c), and the few types every floor hands down to the
 *	  ones below it: a policy as read from the catalog, a pass and a
 *	  batch's result (which the shared counters and slots take), a shared
 *	  drain's tables and claims.  Their functions are declared in the
 *	  header of the folder that owns them.
 *
 * The source is laid out by floors (docs/design.md draws them), a folder a
 * floor group, each with one header that is the only way into it from
 * above; a file includes the headers of its own folder and of folders
 * below, never above (test/layers.pl checks it, as it checks the calls):
 *
 *	ttl_index.c		the module's load: settings, shared memory, hooks (top)
 *	api/			the SQL surface (api.h): management, views, ttl_runner()
 *	bgw/			the processes (bgw.h): launcher, worker, helper, hooks
 *	engine/			a pass and its batches (engine.h; batch.h and drain.h
 *					within the engine and for the processes that drive it)
 *	policy/			what a policy means for a table (policy.h): catalog,
 *					expiry, filter, anonymize, windows, targets, statement
 *	citus/			Citus tables and nodes (citus.h)
 *	env/			whose rights and settings, where the extension is (env.h)
 *	shared/			shared memory and what lives in it (shared.h; shmem.h
 *					for the files that handle its shapes)
 *	settings.c, errors.c, compat.h	the bottom, with this header
 *
 * Locking rules are described at the top of the file that owns the lock
 * (shared/shmem.c for all shared memory).
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
/* helpers one worker may run at once (the bound of ttl_index.max_parallel_workers) */
#define TTL_MAX_HELPERS		8


/* ----------
 * Settings (settings.c)
 * ----------
 */

#include "settings.h"

/* ----------
 * Errors: catching, telling a cancel, logging a batch's (errors.c)
 * ----------
 */
/*
 * The steps of a piece of work that ttl_error_catch_xact runs in a
 * transaction of its own: begin (may be NULL) opens it, its errors not
 * caught; body's errors are caught; caught (may be NULL) runs first thing
 * after one, before the error is copied and the transaction rolled back (a
 * batch disarms its deadline there).  begin and body take arg.
 */
typedef struct TtlXactWork
{
	void		(*begin) (void *arg);
	void		(*body) (void *arg);
	void		(*caught) (void);
	void	   *arg;
} TtlXactWork;

extern bool ttl_error_is_cancel(int sqlerrcode);
extern ErrorData *ttl_error_catch_subxact(MemoryContext cxt, ResourceOwner owner);
extern ErrorData *ttl_error_try(void (*fn) (void *arg), void *arg);
extern ErrorData *ttl_error_catch_xact(MemoryContext cxt, const TtlXactWork *work);
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
	uint8		days[TTL_MAX_WINDOWS];	/* the days it starts on: bit 0 Monday
										 * ... bit 6 Sunday; 0x7F every day */
	int			open_minutes;	/* minutes of the week inside a window */
} TtlWindows;

typedef struct TtlPolicy
{
	int32		id;
	Oid			relid;
	AttrNumber	attnum;
	char	   *column_name;	/* as stored in the catalog */
	int64		expire_after;	/* microseconds; 0 when no_expiry, which
								 * every reader tests first (expiry.c);
								 * without the months */
	int32		expire_months;	/* calendar months of expire_after (months
								 * and years), counted in the policy's zone
								 * before the microseconds (expiry.c) */
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
	struct pg_tz *zone;			/* that zone, kept by ttl_policy_zone; NULL:
								 * not looked up yet */
	uint32		zone_generation;	/* ... with the server's settings of
									 * this publication */
	bool		filter_funcs_known; /* the filter's functions are recorded */
	int			nfilter_funcs;
	Oid		   *filter_funcs;	/* the functions it calls (filter.c) */
	bool		no_expiry;		/* expire_after NULL: a cap alone (max_rows,
								 * max_bytes) */
	char	   *purge_window;	/* as stored, or NULL (window.c) */
	TtlWindows	windows;		/* ... read */
	int64		max_rows;		/* 0: no cap (cap.c) */
	char	   *set_columns;	/* TTL_ACTION_ANONYMIZE (set.c) */
	int64		max_bytes;		/* 0: no cap by size (cap.c) */
	bool		hide_expired;	/* row security hides expired rows (hide.c) */
} TtlPolicy;

/* the smallest max_bytes a policy takes (cap.c): 1 MB */
#define TTL_CAP_MIN_BYTES		1048576

/* types the engine passes down to the shared state: defined where noted */
typedef struct TtlHeld TtlHeld;	/* engine/held.c */
struct TtlTarget;				/* policy/policy.h */
struct TtlDrain;				/* engine/drain.c */

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
	struct TtlTarget *failing_target;
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
	/* a preview's (preview.c): counts what it finds, changes nothing */
	struct TtlPreview *preview;
} TtlPass;

/*
 * What a preview of a pass found (api/preview.c): the rows the statement
 * would act on, counted by running its selection (statement.c).
 */
typedef struct TtlPreview
{
	MemoryContext cxt;			/* where the keys live */
	int64		rows;			/* rows the pass would act on */
	int64		capped;			/* of which taken for the cap */
	int64		kept;			/* found expired, left by the statement (a
								 * foreign key still references them) */
	int64		partitions;		/* partitions the pass would drop whole */
	bool		have_keys;
	Oid			keytype;		/* of the keys below */
	Datum		oldest;			/* the key of the first to expire */
	TimestampTz oldest_expiry;
	Datum		newest;			/* ... of the last */
	TimestampTz newest_expiry;
} TtlPreview;

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


#endif							/* TTL_INDEX_H */
