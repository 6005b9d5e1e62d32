/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The ttl_index.* settings: their variables and their definitions.
 *
 * The bottom floor: every file reads these variables, and this file calls
 * nothing of the extension's.  The module's load (ttl_index.c) defines
 * them first thing.  The two that size shared memory exist only when the
 * library is preloaded.  No locking: the variables are this process's,
 * set by the GUC machinery.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/guc.h"

#include "ttl_index.h"

bool		ttl_enabled = true;
bool		ttl_synchronous_commit = false;
int			ttl_wal_compression = TTL_WAL_COMPRESSION_DEFAULT;
bool		ttl_replication_origin = true;
int			ttl_max_standby_lag = 1024;
int			ttl_max_slot_lag = 4096;
bool		ttl_keep_up = true;
int			ttl_behind_warning = 300;
int			ttl_stalled_after = 300;
int			ttl_batch_size = 10000;
int			ttl_batch_time = 200;
int			ttl_batch_timeout = -1;
int			ttl_max_sleep = 1000;
int			ttl_lock_timeout = 100;
int			ttl_error_delay = 10;
int			ttl_launcher_naptime = 5;
int			ttl_max_databases = 64;
int			ttl_max_policies = 10000;
int			ttl_max_workers = 3;
int			ttl_free_worker_slots = 2;
int			ttl_free_replication_states = 2;
int			ttl_database_turn = 10;
int			ttl_log_min_duration = 10000;
int			ttl_rate_limit = 0;
int			ttl_busy_share = 5;
int			ttl_worker_nice = 19;
int			ttl_max_parallel_workers = 1;

/* true when loaded through shared_preload_libraries (shared memory exists) */
bool		ttl_preloaded = false;

/*
 * ttl_index.wal_compression: the methods this server's build can read, as
 * wal_compression names them ("server" leaves wal_compression alone)
 */
static const struct config_enum_entry ttl_wal_compression_options[] = {
	{"server", TTL_WAL_COMPRESSION_SERVER, false},
	{"off", TTL_WAL_COMPRESSION_OFF, false},
	{"pglz", TTL_WAL_COMPRESSION_PGLZ, false},
#ifdef USE_LZ4
	{"lz4", TTL_WAL_COMPRESSION_LZ4, false},
#endif
#ifdef USE_ZSTD
	{"zstd", TTL_WAL_COMPRESSION_ZSTD, false},
#endif
	{NULL, 0, false}
};

/*
 * The definitions, a table per type as PostgreSQL's own (guc_tables.c),
 * each entry the arguments of its DefineCustom*Variable call in order:
 * name, short and long description, variable, boot value (the variable's
 * initial value above), bounds, context, flags and the check, assign and
 * show hooks.  Each table ends with an entry without a name.
 */
typedef struct TtlBoolSetting
{
	const char *name;
	const char *short_desc;
	const char *long_desc;
	bool	   *variable;
	bool		boot_val;
	GucContext	context;
	int			flags;
	GucBoolCheckHook check_hook;
	GucBoolAssignHook assign_hook;
	GucShowHook show_hook;
} TtlBoolSetting;

typedef struct TtlIntSetting
{
	const char *name;
	const char *short_desc;
	const char *long_desc;
	int		   *variable;
	int			boot_val;
	int			min;
	int			max;
	GucContext	context;
	int			flags;
	GucIntCheckHook check_hook;
	GucIntAssignHook assign_hook;
	GucShowHook show_hook;
} TtlIntSetting;

typedef struct TtlEnumSetting
{
	const char *name;
	const char *short_desc;
	const char *long_desc;
	int		   *variable;
	int			boot_val;
	const struct config_enum_entry *options;
	GucContext	context;
	int			flags;
	GucEnumCheckHook check_hook;
	GucEnumAssignHook assign_hook;
	GucShowHook show_hook;
} TtlEnumSetting;

static const TtlBoolSetting ttl_bool_settings[] = {
	/*
	 * PGC_SUSET, so that ALTER DATABASE ... SET can pause one database (a
	 * superuser's, or a role's granted SET on it).  What each level means
	 * (docs/reference.md, Settings):
	 *	- the configuration (postgresql.conf, ALTER SYSTEM, the command
	 *	  line): every database; off keeps the workers running, idle.  The
	 *	  workers read it as the launcher published it (shmem.c), never
	 *	  their own value, which login settings change;
	 *	- ALTER DATABASE d SET (pg_db_role_setting with setrole = 0, which
	 *	  ALTER ROLE ALL IN DATABASE d SET writes too): off pauses d alone,
	 *	  whose worker leaves and is not started again until it is reset
	 *	  (worker.c, launcher.c); on there does not override an off of the
	 *	  configuration, the server-wide stop;
	 *	- ALTER ROLE ... SET (in a database or not) and a session's SET: the
	 *	  workers never read them, and ttl_runner() ignores the setting at
	 *	  every level (a call is an explicit request): they change only
	 *	  what SHOW says in those sessions.
	 */
	{"ttl_index.enabled",
		"Whether the background workers delete expired rows.",
		"When off in the configuration, the workers keep running but delete nothing; "
		"off for a database (ALTER DATABASE ... SET) pauses that database's worker.",
		&ttl_enabled, true,
		PGC_SUSET, 0,
		NULL, NULL, NULL},
	{"ttl_index.replication_origin",
		"Whether the workers' changes carry the replication origin ttl_index, so that logical decoding can tell them apart.",
		"A policy's replication_origin option overrides it.  Marked changes are skipped by "
		"subscriptions made WITH (origin = none) and by test_decoding's only-local.",
		&ttl_replication_origin, true,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{"ttl_index.keep_up",
		"Whether a worker that gives way to the application still deletes at least as fast as rows expire.",
		"When on, the pauses of giving way are cut short where they would let a policy's backlog grow.",
		&ttl_keep_up, true,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{"ttl_index.synchronous_commit",
		"Whether the workers' batches follow synchronous_commit, or commit without waiting for the WAL flush.",
		"When off, batches commit as with synchronous_commit = off: faster, but a crash can undo "
		"the batches of its last moments (never part of one); their rows, still expired, are "
		"deleted again after the restart.",
		&ttl_synchronous_commit, false,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{NULL}
};

static const TtlIntSetting ttl_int_settings[] = {
	{"ttl_index.max_standby_lag",
		"Most WAL a streaming standby may be behind in replay before the workers hold their batches.",
		"They go on once it is below half of this.  0: no limit.",
		&ttl_max_standby_lag, 1024, 0, INT_MAX,
		PGC_SIGHUP, GUC_UNIT_MB,
		NULL, NULL, NULL},
	{"ttl_index.max_slot_lag",
		"Most WAL the consumer of an active replication slot may have left to consume before the workers hold their batches.",
		"They go on once it is below half of this.  Slots without a connected consumer do not count.  0: no limit.",
		&ttl_max_slot_lag, 4096, 0, INT_MAX,
		PGC_SIGHUP, GUC_UNIT_MB,
		NULL, NULL, NULL},
	{"ttl_index.behind_warning",
		"How long a policy's backlog must have grown, pass after pass, before a WARNING says so.",
		NULL,
		&ttl_behind_warning, 300, 1, 86400,
		PGC_SIGHUP, GUC_UNIT_S,
		NULL, NULL, NULL},
	{"ttl_index.stalled_after",
		"How long a policy's oldest expired row must have waited before ttl_index_stats says why in its stalled column.",
		NULL,
		&ttl_stalled_after, 300, 0, 86400 * 30,
		PGC_SIGHUP, GUC_UNIT_S,
		NULL, NULL, NULL},
	{"ttl_index.max_parallel_workers",
		"Most helper processes a database's worker starts to share one large backlog.",
		"Helpers count against ttl_index.max_workers and start only while no database waits for a worker; 0 turns them off.",
		&ttl_max_parallel_workers, 1, 0, TTL_MAX_HELPERS,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{"ttl_index.batch_size",
		"Most rows deleted in one batch (one transaction), unless the policy sets its own.",
		NULL,
		&ttl_batch_size, 10000, 1, 1000000,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{"ttl_index.batch_time",
		"Target duration of one batch (one transaction).",
		"A batch stops scanning when this time is up, and the next batch of the same policy "
		"takes fewer rows if the last one took longer.",
		&ttl_batch_time, 200, 1, 60000,
		PGC_SIGHUP, GUC_UNIT_MS,
		NULL, NULL, NULL},
	{"ttl_index.batch_timeout",
		"Longest time one batch of a background worker may run, whatever the table owner's code in it does.",
		"Past it the batch is canceled and its policy rests as after an error, while the others go on.  "
		"-1: a hundred times ttl_index.batch_time, at least 10 s.  0: no limit.",
		&ttl_batch_timeout, -1, -1, INT_MAX,
		PGC_SIGHUP, GUC_UNIT_MS,
		NULL, NULL, NULL},
	{"ttl_index.max_sleep",
		"Longest time a worker sleeps before it looks for expired rows again.",
		"Workers sleep until the next known expiry, but never longer than this, so that rows "
		"inserted already expired are found.",
		&ttl_max_sleep, 1000, 10, 3600 * 1000,
		PGC_SIGHUP, GUC_UNIT_MS,
		NULL, NULL, NULL},
	{"ttl_index.lock_timeout",
		"Longest time a batch waits for a lock before it gives up and retries later.",
		NULL,
		&ttl_lock_timeout, 100, 1, 60000,
		PGC_SIGHUP, GUC_UNIT_MS,
		NULL, NULL, NULL},
	{"ttl_index.error_delay",
		"Time a policy rests after a failed batch before it is tried again.",
		NULL,
		&ttl_error_delay, 10, 1, 3600,
		PGC_SIGHUP, GUC_UNIT_S,
		NULL, NULL, NULL},
	{"ttl_index.launcher_naptime",
		"Time between two looks of the launcher at the list of databases.",
		NULL,
		&ttl_launcher_naptime, 5, 1, 3600,
		PGC_SIGHUP, GUC_UNIT_S,
		NULL, NULL, NULL},
	{"ttl_index.rate_limit",
		"Most rows per second the background workers delete, all databases together.",
		"0 means no limit.  Each running worker gets an equal share.  ttl_runner() is not limited.",
		&ttl_rate_limit, 0, 0, INT_MAX,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{"ttl_index.busy_share",
		"Percentage of its time a background worker spends purging while other sessions are writing.",
		"While the application commits writes, a worker takes small batches and pauses after each one; "
		"100 means it never gives way.",
		&ttl_busy_share, 5, 1, 100,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{"ttl_index.worker_nice",
		"CPU priority (nice value) the background workers run at.",
		"19 is the lowest priority: a worker gets CPU after every session of the application.  "
		"0 runs workers at the server's own priority.",
		&ttl_worker_nice, 19, 0, 19,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{"ttl_index.log_min_duration",
		"Log a summary of every purge pass that takes at least this long.",
		"-1 logs none, 0 logs every pass that deleted or skipped rows.",
		&ttl_log_min_duration, 10000, -1, INT_MAX,
		PGC_SIGHUP, GUC_UNIT_MS,
		NULL, NULL, NULL},
	{"ttl_index.max_workers",
		"Most ttl_index workers running at once, over all databases.",
		"When more databases have the extension, they take turns.",
		&ttl_max_workers, 3, 1, 1000,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{"ttl_index.free_worker_slots",
		"Background worker slots ttl_index leaves to others (parallel query, logical replication, extensions).",
		"ttl_index runs at most max_worker_processes - 1 - this many workers, whatever ttl_index.max_workers says.",
		&ttl_free_worker_slots, 2, 0, 1000,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{"ttl_index.free_replication_states",
		"Replication origin states ttl_index leaves to others (subscriptions' apply and table-sync workers).",
		"A ttl_index process sets up its replication origin only while more than this many of the server's "
		"states (max_replication_slots, from PostgreSQL 18 max_active_replication_origins) are free.",
		&ttl_free_replication_states, 2, 0, 1000,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{"ttl_index.database_turn",
		"Longest turn of a database's worker while other databases wait for one.",
		NULL,
		&ttl_database_turn, 10, 1, 3600,
		PGC_SIGHUP, GUC_UNIT_S,
		NULL, NULL, NULL},
	{NULL}
};

/* those that size shared memory: only when the library is preloaded */
static const TtlIntSetting ttl_shmem_settings[] = {
	{"ttl_index.max_databases",
		"Most databases the launcher keeps track of.",
		NULL,
		&ttl_max_databases, 64, 1, 10000,
		PGC_POSTMASTER, 0,
		NULL, NULL, NULL},
	{"ttl_index.max_policies",
		"Most policies, over all databases, whose counters are kept in shared memory.",
		NULL,
		&ttl_max_policies, 10000, 10, 1000000,
		PGC_POSTMASTER, 0,
		NULL, NULL, NULL},
	{NULL}
};

static const TtlEnumSetting ttl_enum_settings[] = {
	{"ttl_index.wal_compression",
		"How the workers' batches compress the full-page images in their WAL.",
		"Each process keeps compressing through a pass only if a trial batch showed "
		"that it cuts the WAL.  server: as wal_compression says.  Standbys must be "
		"built with the method chosen, as for wal_compression.",
		&ttl_wal_compression, TTL_WAL_COMPRESSION_DEFAULT,
		ttl_wal_compression_options,
		PGC_SIGHUP, 0,
		NULL, NULL, NULL},
	{NULL}
};

/*
 * ttl_settings_define_ints
 *		Define the integer settings of one table.
 */
static void
ttl_settings_define_ints(const TtlIntSetting *table)
{
	for (const TtlIntSetting *s = table; s->name != NULL; s++)
		DefineCustomIntVariable(s->name, s->short_desc, s->long_desc,
								s->variable, s->boot_val, s->min, s->max,
								s->context, s->flags,
								s->check_hook, s->assign_hook, s->show_hook);
}

/*
 * ttl_settings_define
 *		Define the settings; those of the shared memory's size only when
 *		preloading (preload).  Reserves the ttl_index prefix.
 */
void
ttl_settings_define(bool preload)
{
	for (const TtlBoolSetting *s = ttl_bool_settings; s->name != NULL; s++)
		DefineCustomBoolVariable(s->name, s->short_desc, s->long_desc,
								 s->variable, s->boot_val,
								 s->context, s->flags,
								 s->check_hook, s->assign_hook, s->show_hook);
	ttl_settings_define_ints(ttl_int_settings);
	if (preload)
		ttl_settings_define_ints(ttl_shmem_settings);
	for (const TtlEnumSetting *s = ttl_enum_settings; s->name != NULL; s++)
		DefineCustomEnumVariable(s->name, s->short_desc, s->long_desc,
								 s->variable, s->boot_val, s->options,
								 s->context, s->flags,
								 s->check_hook, s->assign_hook, s->show_hook);

	MarkGUCPrefixReserved("ttl_index");
}

/*
 * The settings whose server-wide value the owner's code starts from (step
 * 1 of owner.c): those that change what SQL means or prints.  The
 * launcher publishes their values (shmem.c).  Here, at the bottom, for
 * both.
 */
const char *const ttl_server_setting_names[] = {
	"search_path",
	"TimeZone",
	"DateStyle",
	"IntervalStyle",
	"extra_float_digits",
	"standard_conforming_strings",
	"bytea_output",
	"lc_monetary",
	"lc_numeric",
	"lc_time",
	"default_text_search_config",
	"array_nulls",
	"backslash_quote",
	"xmlbinary",
	"xmloption"
};
const int	ttl_server_setting_count = lengthof(ttl_server_setting_names);
