/*-------------------------------------------------------------------------
 *
 * ttl_index.c
 *	  Module load: defines the settings (settings.c), requests the shared
 *	  memory and installs the hooks the extension installs.
 *
 * Loaded through shared_preload_libraries, the module reserves shared memory
 * (shmem.c), registers the launcher (launcher.c; not in binary-upgrade
 * mode, under pg_upgrade) and installs the utility and executor hooks
 * (hooks.c).  Loaded any other way (CREATE EXTENSION without preloading),
 * only the SQL functions work: ttl_runner() purges, nothing purges
 * automatically, and the stats view shows no counters.
 * Every process that loads the module registers the transaction callbacks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "compat.h"
#include "ttl_index.h"
#include "api/api.h"
#include "bgw/bgw.h"
#include "engine/engine.h"
#include "policy/policy.h"
#include "citus/citus.h"
#include "env/env.h"
#include "shared/shared.h"

TTL_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void ttl_shmem_request_hook(void);
static void ttl_shmem_startup_hook(void);

/*
 * _PG_init
 *		Define the settings; when preloaded, also claim shared memory,
 *		register the launcher and install the hooks.
 */
void
_PG_init(void)
{
	ttl_settings_define(process_shared_preload_libraries_in_progress);

	ttl_hooks_install_local();
	ttl_citus_hooks_install();

	if (!process_shared_preload_libraries_in_progress)
		return;

	ttl_preloaded = true;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ttl_shmem_request_hook;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ttl_shmem_startup_hook;

	ttl_hooks_install();

	/*
	 * A server that pg_upgrade runs (binary-upgrade mode) must do nothing
	 * but what pg_upgrade asks of it: no launcher, hence no worker reading
	 * the catalogs or deleting rows while the schema is being restored.
	 * The server started after the upgrade registers it as usual.
	 */
	if (!IsBinaryUpgrade)
		ttl_launcher_register();
}

/*
 * ttl_shmem_request_hook
 *		Reserve the shared memory and the locks we need.
 */
static void
ttl_shmem_request_hook(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	ttl_shmem_request();
	ttl_citus_shmem_request();
}

/*
 * ttl_shmem_startup_hook
 *		Create or attach to the shared memory; in the postmaster, read back
 *		the counters a clean shutdown saved (stats.c).
 */
static void
ttl_shmem_startup_hook(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	ttl_shmem_init();
	ttl_citus_shmem_init();
	if (!IsUnderPostmaster)
		ttl_stats_init();
}
