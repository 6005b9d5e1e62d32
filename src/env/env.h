/*-------------------------------------------------------------------------
 *
 * env.h
 *	  The environment's header (env/): where the extension is, whose rights
 *	  and settings user code runs with, the parse environment.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TTL_ENV_H
#define TTL_ENV_H

#include "ttl_index.h"

/* where the extension is (extension.c) */
extern bool ttl_extension_info(Oid *nspoid, Oid *owner);
extern Oid	ttl_catalog_namespace(bool missing_ok);

/* ----------
 * Whose rights and settings (owner.c)
 * ----------
 */
typedef struct TtlOwnerSave
{
	Oid			userid;
	int			sec_context;
	int			nestlevel;
} TtlOwnerSave;

extern Oid	ttl_table_owner(Oid relid);
extern Oid	ttl_table_owner_if_exists(Oid relid);
struct FormData_pg_class;
extern bool ttl_rel_class(Oid relid, struct FormData_pg_class *form);
extern void ttl_owner_enter(Oid owner, TtlOwnerSave *save);
extern void ttl_owner_leave(TtlOwnerSave *save);
extern void ttl_owner_release_session_locks(void);
extern void ttl_pin_process_settings(const char *application_name);
extern int	ttl_parse_env_enter(void);
extern void ttl_parse_env_leave(int nestlevel);
extern int	ttl_as_extension_owner(const char *sql, int nargs, Oid *argtypes,
								   Datum *values, const char *nulls);
extern const char *ttl_server_setting(const char *name);
extern char *ttl_login_setting(Oid dboid, Oid roleid, const char *name);
extern bool ttl_database_paused(Oid dboid);


#endif							/* TTL_ENV_H */
