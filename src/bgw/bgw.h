/*-------------------------------------------------------------------------
 *
 * bgw.h
 *	  The processes' header (bgw/): the launcher, the per-database worker,
 *	  the helper and the hooks, for the module's load (ttl_index.c) and the
 *	  SQL surface (a commit that changes a policy wakes its worker).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_BGW_H
#define TTL_BGW_H

#include "ttl_index.h"

/* ----------
 * Launcher (launcher.c)
 * ----------
 */
extern void ttl_launcher_register(void);
extern PGDLLEXPORT void ttl_launcher_main(Datum main_arg);

/* ----------
 * Hooks (hooks.c)
 * ----------
 */
extern void ttl_hooks_install(void);
extern void ttl_hooks_install_local(void);
extern void ttl_wake_at_commit(void);

/* ----------
 * Worker (worker.c) and ttl_runner() (runner.c)
 * ----------
 */
extern PGDLLEXPORT void ttl_worker_main(Datum main_arg);

extern PGDLLEXPORT void ttl_helper_main(Datum main_arg);

#endif							/* TTL_BGW_H */
