/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The ttl_index.* settings (settings.c): every file's, the bottom floor.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_SETTINGS_H
#define TTL_SETTINGS_H

/*
 * ttl_index.wal_compression (wal.c).  The default is lz4 where the build
 * has it: a drain's WAL is mostly full-page images (the first change to
 * each page after a checkpoint), and lz4 halves it at little CPU.  pglz,
 * which every build can read, costs several times lz4's CPU for the same
 * saving (docs/benchmarks.md): not a default.
 */
typedef enum TtlWalCompression
{
	TTL_WAL_COMPRESSION_SERVER,
	TTL_WAL_COMPRESSION_OFF,
	TTL_WAL_COMPRESSION_PGLZ,
	TTL_WAL_COMPRESSION_LZ4,
	TTL_WAL_COMPRESSION_ZSTD
} TtlWalCompression;

#ifdef USE_LZ4
#define TTL_WAL_COMPRESSION_DEFAULT	TTL_WAL_COMPRESSION_LZ4
#else
#define TTL_WAL_COMPRESSION_DEFAULT	TTL_WAL_COMPRESSION_SERVER
#endif

extern bool ttl_enabled;
extern bool ttl_synchronous_commit;
extern int	ttl_wal_compression;	/* TtlWalCompression */
extern bool ttl_replication_origin;
extern int	ttl_max_standby_lag;
extern int	ttl_max_slot_lag;
extern bool ttl_keep_up;
extern int	ttl_behind_warning;		/* s */
extern int	ttl_stalled_after;		/* s */
extern int	ttl_batch_size;
extern int	ttl_batch_time;			/* ms */
extern int	ttl_batch_timeout;		/* ms, -1 = derived, 0 = none */
extern int	ttl_max_sleep;			/* ms */
extern int	ttl_lock_timeout;		/* ms */
extern int	ttl_error_delay;		/* s */
extern int	ttl_launcher_naptime;	/* s */
extern int	ttl_max_databases;
extern int	ttl_max_policies;
extern int	ttl_max_workers;
extern int	ttl_free_worker_slots;
extern int	ttl_free_replication_states;
extern int	ttl_database_turn;		/* s */
extern int	ttl_log_min_duration;	/* ms, -1 = off */
extern int	ttl_rate_limit;			/* rows/s over all workers, 0 = none */
extern int	ttl_busy_share;			/* %, 100 = never yield */
extern int	ttl_worker_nice;		/* 0..19, workers' CPU priority */
extern int	ttl_max_parallel_workers;	/* helpers per database's worker */

/* true when loaded through shared_preload_libraries (shared memory exists) */
extern bool ttl_preloaded;

extern void ttl_settings_define(bool preload);

/* the settings whose server-wide values the launcher publishes (settings.c) */
extern const char *const ttl_server_setting_names[];
extern const int ttl_server_setting_count;

#endif							/* TTL_SETTINGS_H */
