#!/usr/bin/env bash
#
# test/pg17_root.sh: the Debian 13 (trixie) root where PostgreSQL 17 is
# tested, made once per machine and cached like the source builds.
#
#   bash test/pg17_root.sh              # makes the root if needed, prints its path
#   bash test/pg17_root.sh run CMD...   # runs CMD as root inside it (chroot),
#                                       # with /proc, /dev/shm and /dev/pts mounted
#
# Debian 12 has no PostgreSQL 17; Debian 13 ships it in its own packages.
# The root is made with debootstrap --variant=minbase from Debian's archive,
# then the packages below are installed in it with apt-get (no cluster is
# created: createcluster.conf says create_main_cluster = false, and no
# service is started).  It lives in /var/cache/ttl_index/trixie-pg17-<key>,
# the key being the checksum of the suite and the package list, so that a
# changed list makes a new root.  A root that was not finished has no
# stamp and is made again from scratch on the next call.
#
# Environment: TTL_PG_CACHE (default: /var/cache/ttl_index), TTL_DEBIAN_MIRROR
# (default: http://deb.debian.org/debian).  Run as root.
set -euo pipefail

suite=trixie
mirror=${TTL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${TTL_PG_CACHE:-/var/cache/ttl_index}
# what the suites need in the root: the server and its development files
# (PGXS, PostgreSQL::Test::Cluster, pg_isolation_regress), the Debian
# packaging tools (pg_buildext, dpkg-buildpackage and its build-essential),
# perl for the TAP tests (prove, Test::More, IPC::Run)
packages="postgresql-17 postgresql-server-dev-17 postgresql-server-dev-all make gcc libc6-dev
	build-essential libipc-run-perl perl debhelper dpkg-dev"

log() { echo "$@" >&2; }

[ "$(id -u)" = 0 ] || { log "pg17_root.sh: run as root (debootstrap, chroot)"; exit 1; }

key=$(echo "$suite $mirror" $packages | sha256sum | cut -c1-16)
root=$cache/$suite-pg17-$key

# make_root: debootstrap, then the packages, then the stamp
make_root() {
	local start
	mkdir -p "$cache"
	if ! command -v debootstrap >/dev/null; then
		log "== installing: debootstrap"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
	fi
	log "== making the Debian 13 root with PostgreSQL 17 in $root (once per machine)"
	start=$(date +%s)
	unmount_all
	rm -rf "$root"
	debootstrap --variant=minbase "$suite" "$root" "$mirror" > "$cache/$suite-pg17-$key.log" 2>&1 ||
		{ tail -30 "$cache/$suite-pg17-$key.log" >&2; exit 1; }
	# no service starts inside the root, and no cluster is created there
	printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	mkdir -p "$root/etc/postgresql-common"
	echo "create_main_cluster = false" > "$root/etc/postgresql-common/createcluster.conf"
	run_in apt-get update -qq >> "$cache/$suite-pg17-$key.log" 2>&1
	run_in env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		$packages >> "$cache/$suite-pg17-$key.log" 2>&1 ||
		{ tail -30 "$cache/$suite-pg17-$key.log" >&2; exit 1; }
	run_in apt-get clean
	echo "made in $(($(date +%s) - start)) s: $packages" > "$root/.complete"
	log "== the Debian 13 root made in $(($(date +%s) - start)) s"
}

# unmount_all: what run_in mounted, innermost first
unmount_all() {
	local m
	for m in dev/pts dev/shm proc; do
		if mountpoint -q "$root/$m"; then
			umount "$root/$m" || umount -l "$root/$m"
		fi
	done
}

# run_in CMD...: run CMD in the root, with the file systems a server needs
run_in() {
	local rc=0
	trap unmount_all EXIT
	mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
	mkdir -p "$root/dev/shm" "$root/dev/pts"
	mountpoint -q "$root/dev/shm" || mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
	mountpoint -q "$root/dev/pts" ||
		mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$root/dev/pts"
	cp -L /etc/resolv.conf "$root/etc/resolv.conf"
	chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@" || rc=$?
	unmount_all
	trap - EXIT
	return $rc
}

[ -f "$root/.complete" ] || make_root

case "${1:-}" in
	"")
		echo "$root"
		;;
	run)
		shift
		run_in "$@"
		;;
	*)
		log "usage: $0 [run CMD...]"
		exit 2
		;;
esac
