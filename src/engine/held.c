/*-------------------------------------------------------------------------
 *
 * held.c
 *	  Rows that cannot be deleted: telling a failure of some rows from a
 *	  failure of the whole policy, and remembering the rows held back.
 *
 * A batch can fail because of some of its rows: a row a foreign key still
 * references (when the NOT EXISTS pre-check of statement.c could not see
 * the reference), a trigger that raises for one row (a legal hold), an
 * archive table whose CHECK constraint rejects one row, a filter that
 * divides by zero on one row.  Such a failure must not stop the others
 * forever, since the next batch would start at the same row.  The callers
 * (worker.c, runner.c) retry the batch's rows in halves, down to single
 * rows; a single row that still fails is held: left in place, skipped by
 * the scans, and tried again after a backoff that doubles from
 * ttl_index.error_delay up to TTL_HELD_MAX_BACKOFF_S.  A row is known by
 * its table, TID and xmin, so a new row that reuses the TID after a VACUUM
 * is not mistaken for it.
 *
 * Errors that are not tied to rows (the table dropped, a permission the
 * owner lacks on a table a trigger uses, out of disk, a query cancel) fail
 * the policy as a whole, as before: retrying rows one by one cannot help.
 * Every SQLSTATE class that PostgreSQL itself uses for such conditions is
 * listed below; everything else, including the codes users raise from
 * triggers, is taken to be about the rows.
 *
 * The callers catch such failures in internal subtransactions;
 * ttl_error_catch_subxact() is the one way they do it, so that a cancel or a
 * shutdown request is never taken for a row's failure.
 *
 * A whole table can be held too: on a policy over several tables
 * (partitions, inheritance children), a failure of a batch on one of them
 * that is not some rows' (a trigger of that partition refusing the owner,
 * say) holds that table, with the same backoff, and the pass goes on with
 * the next: one table that cannot be purged does not stop the others.
 * Its key is the table with an invalid TID.
 *
 * Held rows are logged once per policy and SQLSTATE, not once per batch,
 * and counted in ttl_index_stats (rows_held, last_error).
 *
 * No cliff.  The set remembers at most TTL_HELD_MAX rows per policy (its
 * memory bound).  A row that fails on its own past that bound is held all
 * the same, without being remembered: ttl_held_add returns false, and the
 * caller steps over it as the scan steps over the rows a foreign key keeps
 * (the batch's resume point is already past the rows of its statement,
 * batch.c; a row the filter failed on is stepped over by the target's
 * next scan).  It is tried again at the next pass, not after a backoff,
 * and counted as held like the others.  More refused rows cost more
 * retries, never the policy.
 *
 * What is counted.  ttl_held_count is the rows held in the pass now
 * running, or in the last one: the remembered rows it met (skipped, or
 * held again) and the rows it stepped over, each once.  A held row that
 * was since deleted, released or changed is not met, so it is not counted;
 * ttl_held_pass_done forgets, at the end of a complete pass, the
 * remembered rows it did not meet, which makes room for others.
 *
 * Memory: a held set lives in the memory context it was created in (the
 * worker's policy context); nothing here is shared.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "ttl_index.h"
#include "engine/engine.h"

#define TTL_HELD_MAX			1000
#define TTL_HELD_MAX_BACKOFF_S	600
#define TTL_HELD_MAX_CODES		16

typedef struct TtlHeldKey
{
	Oid			relid;
	ItemPointerData tid;
} TtlHeldKey;

typedef struct TtlHeldRow
{
	TtlHeldKey	key;
	TransactionId xmin;
	TimestampTz retry_at;
	int			attempts;
	uint32		met;			/* the last pass that met it */
} TtlHeldRow;

struct TtlHeld
{
	HTAB	   *rows;			/* NULL until a first row or table is held */
	MemoryContext cxt;			/* where rows is made */
	int			count;			/* rows remembered */
	int			tables;			/* tables held */
	uint32		pass;			/* the pass now running (from 1) */
	int64		met;			/* remembered rows it met, each once */
	int64		stepped;		/* rows it held past the bound */
	int			reported[TTL_HELD_MAX_CODES];
	int			nreported;
};

/*
 * ttl_held_error_row_related
 *		Whether an error may be caused by some rows of a batch, rather than
 *		by the table, the server or the session (see the top of the file).
 */
bool
ttl_held_error_row_related(int sqlerrcode)
{
	switch (ERRCODE_TO_CATEGORY(sqlerrcode))
	{
		case ERRCODE_CONNECTION_EXCEPTION:	/* 08 */
		case ERRCODE_FEATURE_NOT_SUPPORTED: /* 0A */
		case ERRCODE_INVALID_TRANSACTION_STATE: /* 25 */
		case ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION:	/* 28 */
		case ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION: /* 42 */
		case ERRCODE_INSUFFICIENT_RESOURCES:	/* 53 */
		case ERRCODE_PROGRAM_LIMIT_EXCEEDED:	/* 54 */
		case ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE:	/* 55 */
		case ERRCODE_OPERATOR_INTERVENTION: /* 57 */
		case ERRCODE_SYSTEM_ERROR:	/* 58 */
		case ERRCODE_CONFIG_FILE_ERROR: /* F0 */
		case ERRCODE_FDW_ERROR: /* HV */
		case ERRCODE_INTERNAL_ERROR:	/* XX */
			return false;
		default:
			return true;
	}
}

/*
 * ttl_held_create
 *		An empty held set in cxt.
 */
TtlHeld *
ttl_held_create(MemoryContext cxt)
{
	TtlHeld    *held = MemoryContextAllocZero(cxt, sizeof(TtlHeld));

	held->cxt = cxt;
	return held;
}

/*
 * ttl_held_rows
 *		The held set's table, made on first use: most policies never hold a
 *		row, and an empty hash table costs a context of 8 kB per policy.
 */
static HTAB *
ttl_held_rows(TtlHeld *held)
{
	HASHCTL		info;

	if (held->rows != NULL)
		return held->rows;
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(TtlHeldKey);
	info.entrysize = sizeof(TtlHeldRow);
	info.hcxt = held->cxt;
	held->rows = hash_create("ttl_index held rows", 64, &info,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	return held->rows;
}

static void
ttl_held_key(TtlHeldKey *key, Oid relid, ItemPointer tid)
{
	memset(key, 0, sizeof(TtlHeldKey));
	key->relid = relid;
	ItemPointerCopy(tid, &key->tid);
}

/*
 * ttl_held_meet
 *		The pass met a remembered row that is still held: count it, once.
 */
static void
ttl_held_meet(TtlHeld *held, TtlHeldRow *row)
{
	if (row->met != held->pass)
	{
		row->met = held->pass;
		held->met++;
	}
}

/*
 * ttl_held_pass_begin
 *		A pass begins: nothing held in it yet (see the top of the file).
 */
void
ttl_held_pass_begin(TtlHeld *held)
{
	if (held == NULL)
		return;
	held->pass++;
	held->met = 0;
	held->stepped = 0;
}

/*
 * ttl_held_pass_done
 *		A pass went over every target: forget the remembered rows it did
 *		not meet (deleted, released or changed since).  Held tables stay.
 */
void
ttl_held_pass_done(TtlHeld *held)
{
	HASH_SEQ_STATUS seq;
	TtlHeldRow *row;

	if (held == NULL || held->count == 0)
		return;
	hash_seq_init(&seq, held->rows);
	while ((row = hash_seq_search(&seq)) != NULL)
	{
		if (!ItemPointerIsValid(&row->key.tid) || row->met == held->pass)
			continue;
		/* removing the entry just returned is allowed during a scan */
		hash_search(held->rows, &row->key, HASH_REMOVE, NULL);
		held->count--;
	}
}

/*
 * ttl_held_skip
 *		Whether the scan should skip this row version: it is held and its
 *		backoff has not run out.  A held entry whose TID now holds another
 *		row is forgotten.
 */
bool
ttl_held_skip(TtlHeld *held, Oid relid, ItemPointer tid, TransactionId xmin,
			  TimestampTz now)
{
	TtlHeldKey	key;
	TtlHeldRow *row;

	if (held == NULL || held->count == 0)
		return false;
	ttl_held_key(&key, relid, tid);
	row = hash_search(held->rows, &key, HASH_FIND, NULL);
	if (row == NULL)
		return false;
	if (row->xmin != xmin)
	{
		hash_search(held->rows, &key, HASH_REMOVE, NULL);
		held->count--;
		return false;
	}
	if (now >= row->retry_at)
		return false;			/* tried again: counted if it fails again */
	ttl_held_meet(held, row);
	return true;
}

/*
 * ttl_held_add
 *		Hold a row that failed on its own, or hold it again with a doubled
 *		backoff; it is counted as held in this pass either way.  Returns
 *		whether the row is remembered (the scans skip it until its backoff
 *		runs out).  False: the set is full, and the caller steps over the
 *		row for the rest of the pass (see the top of the file); never a
 *		reason to fail the policy.
 */
bool
ttl_held_add(TtlHeld *held, Oid relid, ItemPointer tid, TransactionId xmin,
			 TimestampTz now)
{
	TtlHeldKey	key;
	TtlHeldRow *row;
	bool		found;
	int64		backoff_s;

	ttl_held_key(&key, relid, tid);
	row = hash_search(ttl_held_rows(held), &key, HASH_FIND, NULL);
	if (row == NULL && held->count >= TTL_HELD_MAX)
	{
		held->stepped++;
		return false;
	}
	row = hash_search(held->rows, &key, HASH_ENTER, &found);
	if (!found || row->xmin != xmin)
	{
		if (!found)
		{
			held->count++;
			row->met = 0;
		}
		row->xmin = xmin;
		row->attempts = 0;
	}
	ttl_held_meet(held, row);
	row->attempts++;
	backoff_s = (int64) ttl_error_delay << Min(row->attempts - 1, 16);
	row->retry_at = TimestampTzPlusMilliseconds(now,
												Min(backoff_s, TTL_HELD_MAX_BACKOFF_S) * 1000);
	return true;
}

/*
 * ttl_held_table_skip
 *		Whether a pass should leave this table alone: it is held (see the
 *		top of the file) and its backoff has not run out.
 */
bool
ttl_held_table_skip(TtlHeld *held, Oid relid, TimestampTz now)
{
	ItemPointerData none;
	TtlHeldKey	key;
	TtlHeldRow *row;

	if (held == NULL || held->tables == 0)
		return false;
	ItemPointerSetInvalid(&none);
	ttl_held_key(&key, relid, &none);
	row = hash_search(held->rows, &key, HASH_FIND, NULL);
	return row != NULL && now < row->retry_at;
}

/*
 * ttl_held_add_table
 *		Hold a whole table, or hold it again with a doubled backoff.
 */
void
ttl_held_add_table(TtlHeld *held, Oid relid, TimestampTz now)
{
	ItemPointerData none;
	TtlHeldKey	key;
	TtlHeldRow *row;
	bool		found;
	int64		backoff_s;

	ItemPointerSetInvalid(&none);
	ttl_held_key(&key, relid, &none);
	row = hash_search(ttl_held_rows(held), &key, HASH_ENTER, &found);
	if (!found)
	{
		held->tables++;
		row->xmin = InvalidTransactionId;
		row->attempts = 0;
	}
	row->attempts++;
	backoff_s = (int64) ttl_error_delay << Min(row->attempts - 1, 16);
	row->retry_at = TimestampTzPlusMilliseconds(now,
												Min(backoff_s, TTL_HELD_MAX_BACKOFF_S) * 1000);
}

/*
 * ttl_held_count
 *		How many rows are held now: those the pass now running (or the last
 *		one) held or met held, remembered or stepped over, each once.
 */
int64
ttl_held_count(TtlHeld *held)
{
	return held ? held->met + held->stepped : 0;
}

/*
 * ttl_held_first_report
 *		Whether this is the first time the policy holds rows for this
 *		SQLSTATE: only then is it logged.
 */
bool
ttl_held_first_report(TtlHeld *held, int sqlerrcode)
{
	for (int i = 0; i < held->nreported; i++)
	{
		if (held->reported[i] == sqlerrcode)
			return false;
	}
	if (held->nreported < TTL_HELD_MAX_CODES)
		held->reported[held->nreported++] = sqlerrcode;
	return true;
}
