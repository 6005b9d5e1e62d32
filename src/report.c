/*-------------------------------------------------------------------------
 *
 * report.c
 *	  Logging an error a batch raised, as autovacuum logs a failed table:
 *	  the original error (its message, detail, hint, position, query and
 *	  context), with one more context line saying whose batch it was and
 *	  what follows.  The worker and the helpers log their batches' failures
 *	  so, after the batch's transaction is rolled back and the error
 *	  copied; nothing is re-worded, so the message the user's code raised
 *	  is the one in the log.
 *
 * The bottom floor: it calls nothing of the extension's.  No locking.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/elog.h"

#include "ttl_index.h"

/*
 * ttl_report_error
 *		Log the copied error edata at elevel (LOG: a background process's
 *		failures are the server log's, not a client's), its context
 *		followed by the line fmt makes.  The SQLSTATE, which the log shows
 *		only at verbose log_error_verbosity, should be in that line.
 *		Changes edata's level and context.
 */
void
ttl_report_error(ErrorData *edata, int elevel, const char *fmt,...)
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
	edata->context = edata->context != NULL ?
		psprintf("%s\n%s", edata->context, line.data) : line.data;
	ThrowErrorData(edata);
}
