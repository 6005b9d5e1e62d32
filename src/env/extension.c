/*-------------------------------------------------------------------------
 *
 * extension.c
 *	  Where the extension is in this database: its schema and its owner.
 *
 * The lowest of the lookups: the policy catalog (catalog.c), the Citus
 * code (citus.c) and the API all ask it, and it calls none of them.  It
 * reads pg_extension only, under AccessShareLock, and must be called
 * inside a transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "ttl_index.h"
#include "env/env.h"

/*
 * ttl_extension_info
 *		Schema and owner of the extension in this database.  Returns false
 *		when it is not installed.  Either output may be NULL.
 */
bool
ttl_extension_info(Oid *nspoid, Oid *owner)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum(TTL_EXTENSION_NAME));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	found = HeapTupleIsValid(tup);
	if (found)
	{
		Form_pg_extension ext = (Form_pg_extension) GETSTRUCT(tup);

		if (nspoid)
			*nspoid = ext->extnamespace;
		if (owner)
			*owner = ext->extowner;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * ttl_catalog_namespace
 *		Schema the extension is installed in, or InvalidOid when it is not
 *		installed in this database (and missing_ok).
 */
Oid
ttl_catalog_namespace(bool missing_ok)
{
	Oid			nspoid = InvalidOid;

	if (!ttl_extension_info(&nspoid, NULL) && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"%s\" is not installed in this database",
						TTL_EXTENSION_NAME)));
	return nspoid;
}
