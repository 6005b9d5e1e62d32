/*-------------------------------------------------------------------------
 *
 * policy.h
 *	  The policy floor's header (policy/): the catalog, time arithmetic,
 *	  anonymize, purge windows, filters, a policy resolved to its tables
 *	  and the executor path's statement.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_POLICY_H
#define TTL_POLICY_H

#include "ttl_index.h"

/* ----------
 * Reading the policy catalog (catalog.c)
 * ----------
 */
extern char *ttl_catalog_relname(void);
extern bool ttl_catalog_is_current(void);
extern bool ttl_catalog_has_origin(void);
extern bool ttl_catalog_has_zone(void);
extern bool ttl_catalog_has_rules(void);
extern bool ttl_catalog_has_bytes(void);
extern bool ttl_catalog_has_hide(void);
extern bool ttl_catalog_paused_since(int32 policy_id, TimestampTz *since);
extern char *ttl_catalog_pause_sql(const char *enabled);
extern char *ttl_qualified_relname(Oid relid);
extern int64 ttl_interval_usecs(Interval *span);
extern List *ttl_load_policies(MemoryContext cxt);
extern bool ttl_policy_equal(TtlPolicy *a, TtlPolicy *b);
extern bool ttl_publications_exist(void);
extern Oid	ttl_created_index(Oid relid, AttrNumber attnum);

/* ----------
 * Time arithmetic (expiry.c)
 *
 * A key is the value the purge range-scans: the TTL column, or
 * ttl_expires_at(column, ttl_column).  A cutoff says which keys have
 * expired at the start of a pass.
 * ----------
 */
typedef struct TtlCutoff
{
	TimestampTz limit;			/* now - expire_after: expired when the key's
								 * instant is before this */
	Datum		bound;			/* every expired key is below this (scan bound) */
	Datum		safe_bound;		/* every key below this is expired (drops) */
	bool		recheck;		/* local-time key near a change of the
								 * server's UTC offset: check each row's
								 * instant (ttl_key_expired) */
	bool		none;			/* no key has expired (a cap alone): bound
								 * and safe_bound are the type's least value,
								 * below which there is no key */
	bool		capped;			/* the cap takes every key below cap_bound
								 * (cap.c), whatever its instant; the
								 * statement compares the key with it */
	Datum		cap_bound;		/* when capped: bound itself, or, near a
								 * change of offset, the cap's bound below
								 * the expiry's (whose keys are rechecked) */
} TtlCutoff;

extern int64 ttl_unit_parse(const char *unit);
extern bool ttl_key_type_ok(Oid typid, int64 unit_ns);
extern bool ttl_key_is_local(Oid typid, int64 unit_ns);
extern void ttl_cutoff_compute(TtlPolicy *policy, Oid typid, struct pg_tz *zone,
							   TimestampTz now, TtlCutoff *cutoff);
extern bool ttl_key_ordinal(Oid typid, Datum key, int64 *ordinal);
extern Datum ttl_key_from_ordinal(Oid typid, int64 ordinal);
extern TimestampTz ttl_key_instant(Oid typid, int64 unit_ns, struct pg_tz *zone,
								   Datum key);
extern bool ttl_key_expired(Oid typid, int64 unit_ns, struct pg_tz *zone,
							Datum key, const TtlCutoff *cutoff);
extern TimestampTz ttl_key_expiry(TtlPolicy *policy, Oid typid,
								  struct pg_tz *zone, Datum key);
extern const char *ttl_server_zone_name(void);
extern bool ttl_zone_valid(const char *name);
extern const char *ttl_policy_zone_name(TtlPolicy *policy);
extern struct pg_tz *ttl_policy_zone(TtlPolicy *policy);
extern TimestampTz ttl_local_instant(Timestamp ts, struct pg_tz *zone);
extern Timestamp ttl_instant_local(TimestampTz t, struct pg_tz *zone);

/* ----------
 * Anonymize (set.c)
 * ----------
 */
typedef struct TtlSetColumn
{
	AttrNumber	attnum;			/* in the table it was read against */
	char	   *name;
	Node	   *value;			/* coerced to the column's type */
	char	   *value_sql;		/* as deparsed in the parse environment */
} TtlSetColumn;

extern void ttl_set_check(Relation rel, TtlPolicy *policy);
extern void ttl_set_recheck(Relation rel, TtlPolicy *policy, const char *command);
extern List *ttl_set_read(Relation rel, TtlPolicy *policy, AttrNumber key_attnum,
						  AttrNumber ttl_attnum);
extern char *ttl_set_assignments_sql(List *cols);
extern char *ttl_set_pending_sql(Relation rel, List *cols);

/* ----------
 * Purge windows (window.c)
 * ----------
 */
extern char *ttl_window_normalize(const char *text);
extern void ttl_window_read(const char *text, TtlWindows *w);
extern bool ttl_window_find(TtlPolicy *policy, TimestampTz now,
							TimestampTz *from, TimestampTz *until);
extern TimestampTz ttl_window_due(TtlPolicy *policy, TimestampTz t);
extern double ttl_window_share(TtlPolicy *policy);

/* ----------
 * Filters (filter.c)
 * ----------
 */
/* a policy's text parsed behind a prefix, for ttl_policy_text_callback */
typedef struct TtlPolicyText
{
	const char *what;			/* "filter", "set_columns" */
	const char *text;
	int			prefix_len;
} TtlPolicyText;

extern void ttl_policy_text_callback(void *arg);
extern Node *ttl_filter_parse(Relation rel, const char *filter, bool stored);
extern char *ttl_filter_deparse(Relation rel, Node *expr);
extern List *ttl_filter_functions(Node *expr);
extern char *ttl_filter_function_signature(Oid funcid);
extern Oid	ttl_filter_function_lookup(const char *signature);
extern bool ttl_filter_runs_user_code(Node *expr);
extern void ttl_filter_check_functions(Node *expr, TtlPolicy *policy, List *also);

/* ----------
 * A policy resolved to its physical tables (targets.c)
 *
 * A target is one physical table a policy purges: the policy's own table,
 * or one leaf partition, or one inheritance child (or the parent's own
 * rows).  Its resolution (columns matched by name, the key, the filter,
 * the index, the statement) is done once and kept until an invalidation
 * says the table, an index or a function may have changed.
 * ----------
 */
typedef struct TtlPlan TtlPlan;	/* statement.c */

/* the known-dead prefix of a target's index (skip.c) */
typedef struct TtlSkip
{
	Oid			indexoid;		/* the index it is of */
	Oid			relfilenode;	/* ... and the index's storage it was read
								 * from (a TRUNCATE or REINDEX makes new
								 * pages, maybe with the same LSNs) */
	bool		ready;			/* recorded: passes may start at key */
	TransactionId xid;			/* the (sub)transaction that recorded it */
	uint32		writes;			/* the table's write counter (writes.c)
								 * before the pass checked it */
	bool		tracking;		/* this pass is recording it */
	Datum		key;			/* the last key of the last page but one */
	bool		have_edge;
	Datum		edge;			/* the last key of the page before pos */
	int			npages;			/* leaf pages it spans, leftmost first */
	int			maxpages;
	int			pos;			/* the page the scan is on, -1: not known */
	BlockNumber *blocks;
	XLogRecPtr *lsns;
} TtlSkip;

typedef struct TtlTarget
{
	Oid			relid;
	bool		only;			/* the parent of inheritance children: its
								 * own rows */
	bool		shard;			/* a Citus shard placement (citus.c) */
	MemoryContext cxt;			/* the resolution below lives here */
	MemoryContext skipcxt;		/* the known-dead prefix lives here */
	uint64		resolved_gen;	/* 0: not resolved */
	bool		usable;			/* resolved, and the policy can run on it */
	char	   *relname;		/* qualified, quoted */
	Oid			owner;			/* whose rights (the policy table's owner) */
	AttrNumber	attnum;			/* the TTL column in this table */
	AttrNumber	ttl_attnum;		/* per-row TTL column, or 0 */
	AttrNumber	soft_attnum;	/* soft-delete column, or 0 */
	List	   *set_columns;	/* anonymize: of TtlSetColumn (set.c) */
	char	   *set_pending_sql;	/* ... a row not done yet, as SQL */
	List	   *set_funcs;		/* ... the functions that condition calls */
	Oid			keytype;		/* type of the scanned key (a domain's base) */
	int16		keylen;
	bool		keybyval;
	Oid			indexoid;		/* InvalidOid: no usable index */
	Expr	   *filter;			/* rows that may expire, or NULL */
	char	   *key_sql;		/* the key as SQL over the table */
	char	   *filter_sql;		/* the filter as SQL, or NULL */
	TtlPlan    *plan;			/* executor path, made on first use */
	TtlSkip		skip;			/* kept from pass to pass, like the above */
	bool		scattered;		/* its rows lie on the heap in no key
								 * order (a large backlog is swept) */

	/* progress of the current pass on this table */
	uint32		writes_at_start;	/* its write counter (writes.c) */
	bool		done;			/* reached the cutoff (or gone) */
	bool		have_resume;
	Datum		resume_key;		/* by-reference keys live in cxt's parent */
	/* where in the run of entries of resume_key (batch.c, ttl_batch_scan) */
	ItemPointerData resume_tid; /* the last one read; invalid: from its start */
	int64		resume_dups;	/* how many of them were read */
	List	   *retry;			/* of TtlTidGroup: rows of a failed batch,
								 * retried in parts */
	/* a sweep of the heap in block order (batch.c, ttl_batch_sweep) */
	bool		sweep;
	BlockNumber sweep_next;		/* the next block to read */
	BlockNumber sweep_end;		/* the table's size when the sweep began */
	/* shared with helpers (parallel.c): the pass takes slices of it */
	bool		parallel;
	bool		have_stop;		/* a slice in hand: scan below stop_key */
	Datum		stop_key;
	int			slice;
	/* a row the filter failed on past the held set's bound (held.c) */
	bool		have_step;		/* the next scan steps over step_tid */
	ItemPointerData step_tid;
	bool		no_sweep;		/* and no sweep this pass (batch.c) */
} TtlTarget;

/* rows of a failed statement, to be retried (pass.c) */
typedef struct TtlTidGroup
{
	int			n;
	ItemPointerData *tids;
	TransactionId *xmins;
	bool	   *capped;			/* taken for the cap (batch.c) */
} TtlTidGroup;

typedef enum TtlResolve
{
	TTL_RESOLVE_OK,
	TTL_RESOLVE_GONE,			/* the table or a policy column is gone */
	TTL_RESOLVE_NO_INDEX		/* no usable btree index */
} TtlResolve;

extern uint64 ttl_targets_generation(void);
extern void ttl_targets_watch(Oid relid);
extern void ttl_targets_init(void);
extern bool ttl_targets_may_be_none(TtlPolicy *policy);
extern List *ttl_targets_list(TtlPolicy *policy, MemoryContext cxt);
extern TtlTarget *ttl_target_create(Oid relid, bool only, MemoryContext cxt);
extern TtlResolve ttl_target_resolve(TtlPolicy *policy, TtlTarget *t, Relation rel);
extern void ttl_target_check_types(TtlPolicy *policy, Relation rel);
extern Oid	ttl_find_index(TtlTarget *t, Relation rel);
extern char *ttl_expires_at_sql(void);
extern bool ttl_rel_has_delete_rules(Relation rel, TtlAction action, bool instead_only);

/* ----------
 * The executor path's statement (statement.c)
 * ----------
 */
extern char *ttl_statement_sql(TtlPolicy *policy, TtlTarget *t, Relation rel,
							   Relation parent, bool via_parent, bool precheck,
							   List **funcs);
extern void ttl_statement_check(TtlPolicy *policy, TtlTarget *t, Relation rel);
extern char *ttl_statement_instant(TtlTarget *t, const char *zone);

/* ----------
 * hide_expired's row-level security policies (hide.c)
 * ----------
 */
extern char *ttl_hide_visible_sql(TtlPolicy *policy, TtlTarget *t);
extern void ttl_hide_check(TtlPolicy *policy, Relation rel);
extern void ttl_hide_sync(TtlPolicy *policy);
extern void ttl_hide_remove(Oid relid, AttrNumber attnum);
extern uint64 ttl_statement_run(TtlPolicy *policy, TtlTarget *t, Relation rel,
								Relation parent, bool via_parent,
								ItemPointerData *tids, int ntids,
								const TtlCutoff *cutoff);
extern int64 ttl_statement_preview(TtlPolicy *policy, TtlTarget *t, Relation rel,
								   Relation parent, bool via_parent,
								   ItemPointerData *tids, bool *capped, int ntids,
								   const TtlCutoff *cutoff, TtlPreview *pv);

#endif							/* TTL_POLICY_H */
