/*-------------------------------------------------------------------------
 *
 * errors.c
 *	  Handling the errors user code and batches raise: catching one in an
 *	  internal subtransaction (ttl_error_try, ttl_error_catch_subxact) or
 *	  in a transaction of its own (ttl_error_catch_xact: the worker's and
 *	  helpers' batches, the worker's probes, the replication origin's
 *	  set-up and drops),
 *	  telling a cancel or shutdown that must reach the caller
 *	  (ttl_error_is_cancel), and logging a batch's error as autovacuum
 *	  logs a failed table (ttl_error_log): the original error (its
 *	  message, detail, hint, position, query and context), with one more
 *	  context line saying whose batch it was and what follows.  The
 *	  worker and the helpers log their batches' failures so, after the
 *	  batch's transaction is rolled back and the error copied; nothing is
 *	  re-worded, so the message the user's code raised is the one in the
 *	  log.
 *
 * The bottom floor: it calls nothing of the extension's.  No locking.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "lib/stringinfo.h"
#include "utils/elog.h"

#include "ttl_index.h"

/*
 * ttl_error_is_cancel
 *		Whether an error is a query cancel or a shutdown request, which must
 *		reach the caller whatever catches it.
 */
bool
ttl_error_is_cancel(int sqlerrcode)
{
	return ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_OPERATOR_INTERVENTION;
}

/*
 * ttl_error_catch_subxact
 *		For the PG_CATCH block of an internal subtransaction: copies the
 *		error into cxt, rolls the subtransaction back, and leaves cxt as the
 *		current memory context and owner as the resource owner.  A cancel
 *		or a shutdown request is thrown again; any other error is returned,
 *		the caller's to report and free.
 */
ErrorData *
ttl_error_catch_subxact(MemoryContext cxt, ResourceOwner owner)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	if (ttl_error_is_cancel(edata->sqlerrcode))
		ReThrowError(edata);
	return edata;
}

/*
 * ttl_error_try
 *		Run fn(arg) in an internal subtransaction: NULL when it returns
 *		(the subtransaction committed), else the error it raised, copied
 *		into the caller's memory context, the caller's to report and free
 *		(ttl_error_catch_subxact: a cancel or a shutdown request is thrown
 *		again).  Either way the caller's memory context and resource owner
 *		are current again.
 */
ErrorData *
ttl_error_try(void (*fn) (void *arg), void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		edata = ttl_error_catch_subxact(cxt, owner);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return edata;
}

/*
 * ttl_error_catch_xact
 *		Outside a transaction: run work in a transaction of its own and
 *		commit it.  work->begin (if any) runs first in the transaction, its
 *		errors not caught; work->body's and the commit's are.  After an
 *		error: back in cxt, work->caught (if any) runs, the error is copied
 *		into cxt, the error state flushed and the transaction rolled back.
 *		Returns NULL after the commit, else the copy (a cancel too: what
 *		it means is the caller's), the caller's to report and free.  cxt is
 *		the current memory context on return either way (the transaction's
 *		end leaves TopMemoryContext current, where nothing of the caller's
 *		belongs).
 */
ErrorData *
ttl_error_catch_xact(MemoryContext cxt, const TtlXactWork *work)
{
	ErrorData  *edata = NULL;

	StartTransactionCommand();
	if (work->begin != NULL)
		work->begin(work->arg);
	PG_TRY();
	{
		work->body(work->arg);
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		if (work->caught != NULL)
			work->caught();
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	return edata;
}

/*
 * ttl_error_log
 *		Log the copied error edata at elevel (LOG: a background process's
 *		failures are the server log's, not a client's), its context
 *		followed by the line fmt makes.  The SQLSTATE, which the log shows
 *		only at verbose log_error_verbosity, should be in that line.
 *		Changes edata's level and context (the old one freed: a worker
 *		calls this in its long-lived context, at every failure).
 */
void
ttl_error_log(ErrorData *edata, int elevel, const char *fmt,...)
{
	StringInfoData line;

	Assert(elevel < ERROR);
	initStringInfo(&line);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&line, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&line, needed);
	}
	edata->elevel = elevel;
	if (edata->context == NULL)
		edata->context = line.data;
	else
	{
		/* the caller's FreeErrorData frees the new context, not these */
		char	   *old = edata->context;

		edata->context = psprintf("%s\n%s", old, line.data);
		pfree(old);
		pfree(line.data);
	}
	ThrowErrorData(edata);
}
