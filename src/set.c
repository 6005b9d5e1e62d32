/*-------------------------------------------------------------------------
 *
 * set.c
 *	  Anonymize: the columns a policy resets instead of deleting the row
 *	  (action 'anonymize', set_columns).
 *
 * Not built yet: ttl_create_index() refuses the action.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ttl_index.h"

/*
 * ttl_set_check
 *		Check a policy's set_columns against its table and store them as
 *		they are to be read again.
 */
void
ttl_set_check(Relation rel, TtlPolicy *policy)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("action 'anonymize' is not available yet")));
}
