#!/usr/bin/env bash
#
# test/pg_build.sh: build a PostgreSQL server (or Citus) from the source
# archives in ../shared/sources, once per machine, into a cache keyed by the
# archive's checksum, and print the installation's bin directory.
#
#   bash test/pg_build.sh 16          # PostgreSQL 16.2, assertions on
#   bash test/pg_build.sh 18          # PostgreSQL 18.3, assertions on
#   bash test/pg_build.sh citus 18    # Citus 14.0.1 into the 18 build
#   bash test/pg_build.sh citus 18 release
#                                     # the same without assertions, in a
#                                     # cache of its own, for benchmarks
#
# Nothing is downloaded.  The servers are configured with --enable-cassert
# --enable-debug --enable-tap-tests, so that an extension breaking one of
# the server's rules stops with TRAP: in the log.  A build that did not
# finish leaves no stamp and is redone from scratch on the next call.
#
# Environment: TTL_SOURCES (default: ../shared/sources beside the clone),
# TTL_PG_CACHE (default: /var/cache/ttl_index, or ~/.cache/ttl_index when
# that is not writable).  Run as root on a fresh machine: installs the
# build dependencies with apt-get first.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
sources=${TTL_SOURCES:-$(cd "$here/.." && pwd)/shared/sources}
cache=${TTL_PG_CACHE:-/var/cache/ttl_index}
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
	cache=${HOME:-/tmp}/.cache/ttl_index
	mkdir -p "$cache"
fi

log() { echo "$@" >&2; }

# archive_for VERSION: the archive file name of a PostgreSQL major version
archive_for() {
	local f
	f=$(cd "$sources" && ls postgresql-"$1".*.tar.gz 2>/dev/null | sort -V | tail -n 1)
	[ -n "$f" ] || { log "no PostgreSQL $1 archive in $sources"; exit 1; }
	echo "$f"
}

# checksum FILE: its SHA-256, checked against SHA256SUMS when listed there
checksum() {
	local f=$1 sum listed
	sum=$(sha256sum "$sources/$f" | cut -d' ' -f1)
	listed=$(awk -v f="$f" '$2 == f { print $1 }' "$sources/SHA256SUMS" 2>/dev/null || true)
	if [ -n "$listed" ] && [ "$listed" != "$sum" ]; then
		log "$f: checksum $sum does not match SHA256SUMS ($listed)"
		exit 1
	fi
	echo "$sum"
}

build_deps() {
	local p missing=""
	[ "$(id -u)" = 0 ] || return 0
	for p in gcc make bison flex libreadline-dev zlib1g-dev libicu-dev pkg-config \
		libipc-run-perl "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		log "== installing:$missing"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
	fi
}

# build_pg MAJOR [release]: prints the prefix of an assert-enabled build, or
# with "release" of one configured as a production server is (no
# assertions, optimized; -release in the cache's name)
build_pg() {
	local f sum prefix src start flags="--enable-cassert --enable-debug --enable-tap-tests" tag=""
	if [ "${2:-}" = release ]; then
		flags=""
		tag=-release
	fi
	f=$(archive_for "$1")
	sum=$(checksum "$f")
	prefix=$cache/${f%.tar.gz}-${sum:0:16}$tag
	if [ -f "$prefix/.complete" ]; then
		echo "$prefix"
		return
	fi
	build_deps
	log "== building ${f%.tar.gz} into $prefix (once per machine)"
	start=$(date +%s)
	rm -rf "$prefix"
	src=$(mktemp -d /tmp/ttl_pg_src.XXXXXX)
	tar xzf "$sources/$f" -C "$src"
	(
		cd "$src"/postgresql-*
		./configure --prefix="$prefix" $flags >"$src/configure.log" 2>&1 ||
			{ tail -30 "$src/configure.log" >&2; exit 1; }
		make -j"$(nproc)" -s >"$src/make.log" 2>&1 ||
			{ grep -E "error|Error" "$src/make.log" | tail -30 >&2; exit 1; }
		make -s install >>"$src/make.log" 2>&1
		make -s -C src/test/isolation install >>"$src/make.log" 2>&1
		make -s -C contrib/test_decoding install >>"$src/make.log" 2>&1
	)
	rm -rf "$src"
	chmod -R a+rX "$prefix"
	echo "built in $(($(date +%s) - start)) s" > "$prefix/.complete"
	log "== ${f%.tar.gz} built in $(($(date +%s) - start)) s"
	echo "$prefix"
}

# build_citus MAJOR [release]: Citus into the build of that major
build_citus() {
	local pg f sum src start stamp
	pg=$(build_pg "$1" "${2:-}")
	f=$(cd "$sources" && ls citus-*.tar.gz | sort -V | tail -n 1)
	sum=$(checksum "$f")
	stamp=$pg/.citus-${sum:0:16}
	if [ -f "$stamp" ]; then
		echo "$pg"
		return
	fi
	build_deps libcurl4-openssl-dev liblz4-dev libzstd-dev
	log "== building ${f%.tar.gz} into $pg (once per machine)"
	start=$(date +%s)
	src=$(mktemp -d /tmp/ttl_citus_src.XXXXXX)
	tar xzf "$sources/$f" -C "$src"
	(
		cd "$src"/citus-*
		./configure PG_CONFIG="$pg/bin/pg_config" >"$src/configure.log" 2>&1 ||
			{ tail -30 "$src/configure.log" >&2; exit 1; }
		make -j"$(nproc)" -s >"$src/make.log" 2>&1 ||
			{ grep -E "error|Error" "$src/make.log" | tail -30 >&2; exit 1; }
		make -s install >>"$src/make.log" 2>&1
	)
	rm -rf "$src"
	chmod -R a+rX "$pg"
	echo "built in $(($(date +%s) - start)) s" > "$stamp"
	log "== ${f%.tar.gz} built in $(($(date +%s) - start)) s"
	echo "$pg"
}

case "${1:-}" in
	citus)
		echo "$(build_citus "${2:-18}" "${3:-}")/bin"
		;;
	[0-9]*)
		echo "$(build_pg "$1" "${2:-}")/bin"
		;;
	*)
		log "usage: $0 MAJOR [release] | citus MAJOR [release]"
		exit 2
		;;
esac
