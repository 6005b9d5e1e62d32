/*-------------------------------------------------------------------------
 *
 * api.h
 *	  The SQL surface's header (api/): what its files share.  Nothing
 *	  below calls into this floor; its SQL-callable functions are reached
 *	  through the extension's SQL objects only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_API_H
#define TTL_API_H

#include "ttl_index.h"

/* ----------
 * What a call that changes a policy keeps (alter.c); needs fmgr.h, array.h
 * ----------
 */
struct ArrayType;
extern FunctionCallInfo ttl_alter_keep(FunctionCallInfo fcinfo, struct ArrayType *reset,
									   bool *exists, Interval **expire_after);
extern bool ttl_alter_was_kept(int argno);
extern bool ttl_alter_was_reset(int argno);

#endif							/* TTL_API_H */
