/*-------------------------------------------------------------------------
 *
 * wal.c
 *	  How the WAL of a worker's or helper's batch is written: whether its
 *	  commit waits for the flush, and how its full-page images are
 *	  compressed.
 *
 * Both are set for the batch's transaction only (GUC_ACTION_LOCAL), in
 * the workers' and helpers' own processes.  ttl_runner() compresses its
 * batches' images the same way, each decision set for the policy's
 * subtransaction only (GUC_ACTION_SAVE: its end puts the caller's value
 * back, commit or not), and never touches the commit, which is the
 * caller's: after the call, the session's settings are as they were.
 *
 * The commit.  Deleting expired rows is idempotent: a batch whose commit a
 * crash loses is redone by the next pass, its rows still expired.  So
 * batches commit as with synchronous_commit = off
 * (ttl_index.synchronous_commit), unless the archive action (rows a reader
 * may have copied elsewhere would be archived twice) or synchronous
 * standbys (the server promises that a commit survives a failover) ask for
 * the wait, or the application writes (yield.c): then the application's
 * next commit would flush our WAL, and pay for it.  A batch that ran user
 * code able to write outside the expired rows (a DELETE trigger, a DO ALSO
 * rule: an outbox row a poller may deliver before a crash undoes it) waits
 * too (ttl_wal_batch_flush), whatever the setting.
 *
 * Full-page images.  The first change to a page after a checkpoint logs
 * the whole page, and a drain changes every page its expired rows are on:
 * full-page images are most of a drain's WAL, and nearly all of it on
 * TOASTed rows.  Where the WAL bounds the drain (wide rows, TOAST),
 * compressing them speeds it up a lot; but compressing what does not
 * shrink (rows compressed already, as TOAST stores them by default, or
 * random) only costs CPU and slows the drain (docs/benchmarks.md, "Where
 * the time goes", has the figures).  So each process
 * makes a trial: a batch not compressed, then one compressed, each with
 * enough full-page images to tell (TTL_WAL_TRIAL_FPI; until then the
 * batches go on as the trial's next one), and goes on compressing only if
 * that wrote at most TTL_WAL_KEEP_RATIO as much WAL per row.  The
 * uncompressed one comes first: a policy's first batch is its smallest
 * (TTL_FIRST_BATCH_ROWS), and on rows scattered over the heap, where every
 * row is a full-page image, a full uncompressed batch writes far more WAL
 * than it has to.  Two trial batches with full-page images of very different
 * density (rows per image) do not compare: the older one is measured
 * again.  A worker's decision is kept from pass to pass of the policy (the
 * rows of a table compress the same from one pass to the next); a helper
 * decides for its job.  The WAL a batch wrote is this process's own
 * (pgWalUsage).
 *
 * The setting wins over the owner's role and database settings (owner.c
 * pins wal_compression).  If the server refuses the method (a library
 * built with lz4 on a server built without), the process warns once and
 * leaves wal_compression alone from then on.
 *
 * No locks: everything here is the process's own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/instrument.h"
#include "replication/syncrep.h"
#include "utils/guc.h"

#include "compat.h"
#include "ttl_index.h"
#include "engine/engine.h"
#include "shared/shared.h"

/* a trial batch tells only with at least this many full-page images */
#define TTL_WAL_TRIAL_FPI		32
/* compressing goes on if it writes at most this share of the WAL per row */
#define TTL_WAL_KEEP_RATIO		0.8
/* two trial batches compare if their rows per image differ less than this */
#define TTL_WAL_TRIAL_DENSITY	1.5

/* wal_compression's names of ttl_index.wal_compression's methods */
static const char *const ttl_wal_methods[] = {
	[TTL_WAL_COMPRESSION_SERVER] = NULL,
	[TTL_WAL_COMPRESSION_OFF] = "off",
	[TTL_WAL_COMPRESSION_PGLZ] = "pglz",
	[TTL_WAL_COMPRESSION_LZ4] = "lz4",
	[TTL_WAL_COMPRESSION_ZSTD] = "zstd",
};

/*
 * ttl_wal_batch_flush
 *		Before the commit of a batch whose user code may have written
 *		outside the expired rows (batch.c: a trigger, a DO ALSO rule): the
 *		commit waits for the flush as synchronous_commit says, as the
 *		owner's own statement's would.
 */
void
ttl_wal_batch_flush(void)
{
	const char *value = GetConfigOptionResetString("synchronous_commit");

	(void) set_config_option("synchronous_commit", value ? value : "on", PGC_SUSET,
							 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
}

/*
 * ttl_wal_batch_compress
 *		How the full-page images of the batch about to run are compressed:
 *		wal_compression set for a worker's or helper's batch transaction
 *		(GUC_ACTION_LOCAL), or, in_runner, for ttl_runner()'s subtransaction
 *		of the policy (GUC_ACTION_SAVE: its end puts the session's value
 *		back).
 */
void
ttl_wal_batch_compress(TtlPolicy *policy, TtlPass *pass, bool in_runner)
{
	static bool refused = false;
	TtlWalTrial *w = &pass->wal;

	w->measuring = false;
	if (ttl_wal_compression != TTL_WAL_COMPRESSION_SERVER && !refused)
	{
		const char *method = ttl_wal_methods[ttl_wal_compression];
		bool		trial = false;

		if (ttl_wal_compression != TTL_WAL_COMPRESSION_OFF)
		{
			/* the trial's uncompressed batch first: a policy's first is small */
			if (w->decided == 0)
				w->batch_compresses = w->bytes_per_row[0] != 0;
			else
				w->batch_compresses = w->decided > 0;
			if (!w->batch_compresses)
				method = "off";
			trial = w->decided == 0;
		}
		if (set_config_option("wal_compression", method, PGC_SUSET,
							  PGC_S_SESSION,
							  in_runner ? GUC_ACTION_SAVE : GUC_ACTION_LOCAL,
							  true, WARNING,
							  false) <= 0)
		{
			ereport(WARNING,
					(errmsg("ttl_index: this server cannot compress WAL with %s; the workers leave wal_compression as it is",
							method),
					 errhint("Set ttl_index.wal_compression to a method the server offers, or to server.")));
			refused = true;
		}
		else if (trial)
		{
			w->measuring = true;
			w->start_bytes = pgWalUsage.wal_bytes;
			w->start_fpi = pgWalUsage.wal_fpi;
		}
	}
}

/*
 * ttl_wal_batch_mode
 *		At the start of a worker's or helper's batch, in its transaction:
 *		how the batch's WAL is written.
 */
void
ttl_wal_batch_mode(TtlPolicy *policy, TtlPass *pass)
{
	ttl_wal_batch_compress(policy, pass, false);
	if (ttl_synchronous_commit || policy->action == TTL_ACTION_ARCHIVE ||
		(SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0'))
		return;
	if (ttl_yield_in_worker && ttl_yield_busy())
		return;
	(void) set_config_option("synchronous_commit", "off", PGC_SUSET,
							 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
}

/*
 * ttl_wal_batch_learn
 *		Once a batch committed (or, in ttl_runner(), ended), having deleted
 *		(or archived, or updated) rows: what its WAL says of compressing the
 *		full-page images.
 */
void
ttl_wal_batch_learn(TtlPolicy *policy, TtlPass *pass, int64 rows)
{
	TtlWalTrial *w = &pass->wal;
	int			this = w->batch_compresses ? 1 : 0;
	int64		fpi;

	if (!w->measuring || rows <= 0)
		return;
	w->measuring = false;
	fpi = pgWalUsage.wal_fpi - w->start_fpi;
	if (fpi < TTL_WAL_TRIAL_FPI)
		return;
	w->bytes_per_row[this] = (double) (pgWalUsage.wal_bytes - w->start_bytes) / rows;
	w->fpi_per_row[this] = (double) fpi / rows;
	if (w->bytes_per_row[1 - this] == 0)
		return;

	/* images of very different density: measure the other kind again */
	if (w->fpi_per_row[this] > TTL_WAL_TRIAL_DENSITY * w->fpi_per_row[1 - this] ||
		w->fpi_per_row[1 - this] > TTL_WAL_TRIAL_DENSITY * w->fpi_per_row[this])
	{
		w->bytes_per_row[1 - this] = 0;
		return;
	}
	w->decided = w->bytes_per_row[1] <= TTL_WAL_KEEP_RATIO * w->bytes_per_row[0] ? 1 : -1;
	ereport(DEBUG1,
			(errmsg_internal("ttl_index: policy %d %s its full-page images: %.0f bytes of WAL a row compressed, %.0f not",
							 policy->id,
							 w->decided > 0 ? "compresses" : "does not compress",
							 w->bytes_per_row[1], w->bytes_per_row[0])));
}
