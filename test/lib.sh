#!/usr/bin/env bash
#
# test/lib.sh: what the test, demo and benchmark scripts share when they
# start as root on a fresh Debian 12 machine: install the Debian packages
# they need, make sure the "postgres" OS user exists, and build and install
# the extension.  Source it, then call ttl_root_setup with the extra
# packages the script needs.
#
# PG_CONFIG selects the server everywhere (default: Debian's PostgreSQL 15);
# PGBIN is its bin directory.  PostgreSQL refuses to run as root, so each
# script then re-runs itself as the "postgres" OS user.

TTL_DEBIAN_PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PG_CONFIG=${PG_CONFIG:-$TTL_DEBIAN_PG_CONFIG}
if [ -x "$PG_CONFIG" ]; then
	PGBIN=$("$PG_CONFIG" --bindir)
else
	PGBIN=$(dirname "$PG_CONFIG")
fi
export PG_CONFIG

# ttl_packages PACKAGE...: install those that are missing
ttl_packages() {
	local p missing=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		echo "== installing:$missing"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
	fi
}

# ttl_postgres_user: create the "postgres" OS user if it is missing (the
# postgresql-15 package creates it; a machine without it may not have it)
ttl_postgres_user() {
	if ! id postgres >/dev/null 2>&1; then
		echo "== creating the postgres OS user"
		useradd --system --user-group --create-home --home-dir /var/lib/postgresql \
			--shell /bin/bash postgres
	fi
}

# ttl_install_extension DIR: build and install the extension in DIR into
# the server PG_CONFIG names
ttl_install_extension() {
	local dir=$1
	echo "== building and installing ttl_index for $("$PG_CONFIG" --version)"
	make -C "$dir" -s clean >/dev/null 2>&1 || true
	make -C "$dir" -s PG_CONFIG="$PG_CONFIG"
	make -C "$dir" -s PG_CONFIG="$PG_CONFIG" install
	make -C "$dir" -s clean >/dev/null 2>&1 || true
}

# ttl_root_setup DIR [PACKAGE...]: install what is missing of the base
# packages and the given ones, then build and install the extension in DIR.
ttl_root_setup() {
	local dir=$1
	shift
	ttl_packages postgresql-15 postgresql-server-dev-15 make gcc "$@"
	ttl_postgres_user
	ttl_install_extension "$dir"
}

# ttl_scratch_server NAME PORT [LINE...]: as the postgres user, create a
# throwaway server with ttl_index preloaded in a new directory under /tmp,
# append the given postgresql.conf lines, start it, and remove it all when
# the script exits.  Sets "dir" (data/ and log inside) and "psql" (quiet,
# unaligned, tuples only) for the caller.
ttl_scratch_server() {
	local name=$1 port=$2 line
	shift 2
	dir=$(mktemp -d "/tmp/ttl_index_$name.XXXXXX")
	trap '$PGBIN/pg_ctl -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
	$PGBIN/initdb -D "$dir/data" -A trust -U postgres >/dev/null
	{
		echo "port = $port"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$dir'"
		echo "shared_preload_libraries = 'ttl_index'"
		for line in "$@"; do echo "$line"; done
	} >> "$dir/data/postgresql.conf"
	$PGBIN/pg_ctl -D "$dir/data" -l "$dir/log" -w start >/dev/null
	psql="$PGBIN/psql -X -q -At -h $dir -p $port -U postgres -d postgres"
}
