/*-------------------------------------------------------------------------
 *
 * citus.h
 *	  Citus's header (citus/): telling Citus tables, the policies as each
 *	  node reads them, the placements a node purges, policies following
 *	  their tables, what the coordinator says of each node.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_CITUS_H
#define TTL_CITUS_H

#include "ttl_index.h"

/* ----------
 * Citus tables (citus.c)
 * ----------
 */
typedef enum TtlCitusKind
{
	TTL_CITUS_NONE,				/* not in Citus's metadata, or no Citus */
	TTL_CITUS_DISTRIBUTED,
	TTL_CITUS_REFERENCE,
	TTL_CITUS_LOCAL				/* a local table added to the metadata */
} TtlCitusKind;

/* the policies on distributed tables, as every node reads them */
#define TTL_CITUS_POLICY_NAME	"ttl_index_citus_policy"
/*
 * The id a Citus node gives its copy of the coordinator's policy id: the
 * negative, a space of its own, apart from the node's local policies
 * (catalog.c).
 */
#define TTL_CITUS_COPY_ID(coordinator_id)	(-(coordinator_id))

extern TtlCitusKind ttl_citus_kind(Oid relid);
extern void ttl_citus_check_create(TtlPolicy *policy);
extern char *ttl_citus_policies_sql(Oid nsp);
extern bool ttl_citus_policy_copy(const char *relname, Oid relnamespace);
extern List *ttl_citus_shards(Oid relid);
extern bool ttl_citus_unpublishable(Relation rel);
extern void ttl_citus_refuse(Oid relid, bool has_policy);
extern char *ttl_citus_distribution_column(Oid relid);
extern char *ttl_citus_set_distribution(Oid relid, const char *set_columns);
extern void ttl_citus_check_set(TtlPolicy *policy);
extern bool ttl_citus_placement_current(Relation rel);
extern char *ttl_citus_index_name(Oid indexoid);
extern void ttl_drop_index_named(const char *name);
extern void ttl_drop_created(Oid indexoid);

/* policies following their tables through Citus's functions (citus_follow.c) */
extern void ttl_citus_hooks_install(void);
extern void *ttl_citus_utility_begin(Node *parsetree);
extern void ttl_citus_utility_end(void *span);

/* what the coordinator says of each node (citus_nodes.c) */
extern void ttl_citus_shmem_request(void);
extern void ttl_citus_shmem_init(void);

#endif							/* TTL_CITUS_H */
