#!/usr/bin/env bash
#
# test/lib.sh: what the test, demo and benchmark scripts share when they
# start as root on a fresh Debian 12 machine: install the Debian packages
# they need and build and install the extension.  Source it, then call
# ttl_root_setup with the extra packages the script needs.
#
# PostgreSQL refuses to run as root, so each script then re-runs itself as
# the "postgres" OS user (created by the postgresql-15 package).

PGBIN=/usr/lib/postgresql/15/bin

# ttl_root_setup DIR [PACKAGE...]: install what is missing of the base
# packages and the given ones, then build and install the extension in DIR.
ttl_root_setup() {
	local dir=$1
	shift
	local p missing=""
	for p in postgresql-15 postgresql-server-dev-15 make gcc "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		echo "== installing:$missing"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
	fi
	echo "== building and installing ttl_index"
	make -C "$dir" -s clean >/dev/null 2>&1 || true
	make -C "$dir" -s PG_CONFIG=$PGBIN/pg_config
	make -C "$dir" -s PG_CONFIG=$PGBIN/pg_config install
}
