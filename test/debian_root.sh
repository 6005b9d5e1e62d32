#!/usr/bin/env bash
#
# test/debian_root.sh: the Debian roots where PostgreSQL 17 and 19 are
# tested, each made once per machine and cached like the source builds.
#
#   bash test/debian_root.sh 17            # makes the root if needed, prints its path
#   bash test/debian_root.sh 17 run CMD... # runs CMD as root inside it (chroot),
#                                          # with /proc, /dev/shm and /dev/pts mounted
#
#   17  Debian 13 (trixie), whose own archive ships postgresql-17
#   19  Debian sid, with postgresql-19 (the release candidate, 19~rc1) and
#       the libpq it needs taken from experimental; every other package
#       comes from sid.  experimental is NotAutomatic, so only the packages
#       named "NAME/experimental" below come from it ("-t experimental"
#       would pull a perl that conflicts with sid's)
#
# Each root is made with debootstrap --variant=minbase, then the packages
# below are installed in it with apt-get (no cluster is created:
# createcluster.conf says create_main_cluster = false, and no service is
# started).  It lives in /var/cache/ttl_index/<suite>-pg<major>-<key>, the
# key being the checksum of the suite, the mirror and the package list, so
# that a changed list makes a new root.  A root that was not finished has
# no stamp and is made again from scratch on the next call.
#
# TTL_ROOT_SHARE=DIR (for "run"): a directory of the host, bind-mounted at
# the same path inside the root while CMD runs (test/run_tests.sh shares
# its TAP port lock directory between the host and every root this way).
#
# The Debian mirror is the one this machine's apt already uses (the first
# "deb" source in /etc/apt/sources.list.d/ or /etc/apt/sources.list that is
# not a security archive); TTL_DEBIAN_MIRROR overrides it.  The mirror may
# be a dated snapshot whose Release files have expired, hence
# Check-Valid-Until=false.  Environment: TTL_PG_CACHE (default:
# /var/cache/ttl_index).  Run as root.
set -euo pipefail

log() { echo "$@" >&2; }

[ "$(id -u)" = 0 ] || { log "debian_root.sh: run as root (debootstrap, chroot)"; exit 1; }

major=${1:?usage: debian_root.sh 17|19 [run CMD...]}
shift
# what the suites need in the root: the server and its development files
# (PGXS, PostgreSQL::Test::Cluster, pg_isolation_regress), the Debian
# packaging tools (pg_buildext, dpkg-buildpackage and its build-essential),
# perl for the TAP tests (prove, Test::More, IPC::Run)
common="postgresql-server-dev-all make gcc libc6-dev build-essential libipc-run-perl perl
	debhelper dpkg-dev"
case $major in
	17)
		suite=trixie
		extra_suite=""
		packages="postgresql-17 postgresql-server-dev-17 $common"
		;;
	19)
		suite=sid
		extra_suite=experimental
		packages="postgresql-19/experimental postgresql-server-dev-19/experimental
			postgresql-client-19/experimental libpq-dev/experimental libpq5/experimental
			$common"
		;;
	*)
		log "debian_root.sh: no Debian root for PostgreSQL $major (17 or 19)"
		exit 2
		;;
esac

# apt_mirror: the Debian archive this machine's apt uses, read from its
# sources (deb822 ".sources" files, then one-line ".list" files)
apt_mirror() {
	local f m
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		m=$(awk '
			/^[ \t]*$/ { if (uri != "" && deb && suites !~ /-security/) { print uri; exit } uri = ""; deb = 0; suites = ""; next }
			/^Types:/ { deb = ($0 ~ /[ \t]deb([ \t]|$)/) }
			/^URIs:/ { uri = $2 }
			/^Suites:/ { suites = $0 }
			END { if (uri != "" && deb && suites !~ /-security/) print uri }
		' "$f" | head -n 1)
		[ -n "$m" ] && { echo "${m%/}"; return; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		m=$(awk '$1 == "deb" && $0 !~ /-security/ {
				for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) { print $i; exit }
			}' "$f" | grep -i debian | head -n 1 || true)
		[ -n "$m" ] && { echo "${m%/}"; return; }
	done
	return 1
}

mirror=${TTL_DEBIAN_MIRROR:-$(apt_mirror)} ||
	{ log "debian_root.sh: no Debian mirror in /etc/apt (set TTL_DEBIAN_MIRROR)"; exit 1; }
cache=${TTL_PG_CACHE:-/var/cache/ttl_index}
key=$(echo "$suite $extra_suite $mirror" $packages | sha256sum | cut -c1-16)
root=$cache/$suite-pg$major-$key
logf=$cache/$suite-pg$major-$key.log
apt_opts="-o Acquire::Check-Valid-Until=false"

# make_root: debootstrap, then the packages, then the stamp
make_root() {
	local start
	mkdir -p "$cache"
	if ! command -v debootstrap >/dev/null; then
		log "== installing: debootstrap"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
	fi
	log "== making the Debian $suite root with PostgreSQL $major in $root (once per machine)"
	start=$(date +%s)
	unmount_all
	rm -rf "$root"
	debootstrap --variant=minbase "$suite" "$root" "$mirror" > "$logf" 2>&1 ||
		{ tail -30 "$logf" >&2; exit 1; }
	# no service starts inside the root, and no cluster is created there
	printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	mkdir -p "$root/etc/postgresql-common"
	echo "create_main_cluster = false" > "$root/etc/postgresql-common/createcluster.conf"
	if [ -n "$extra_suite" ]; then
		echo "deb $mirror $extra_suite main" > "$root/etc/apt/sources.list.d/$extra_suite.list"
	fi
	run_in apt-get $apt_opts update -qq >> "$logf" 2>&1
	run_in env DEBIAN_FRONTEND=noninteractive apt-get $apt_opts install -y -qq \
		--no-install-recommends $packages >> "$logf" 2>&1 ||
		{ tail -30 "$logf" >&2; exit 1; }
	run_in apt-get clean
	echo "made in $(($(date +%s) - start)) s: $packages" > "$root/.complete"
	log "== the Debian $suite root made in $(($(date +%s) - start)) s"
}

# unmount_all: whatever is mounted inside the root, innermost first, so
# that nothing of the host is reachable through it when it is removed
unmount_all() {
	local m
	for m in $(awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$m" || umount -l "$m"
	done
}

# mount_in WHERE MOUNT-ARGS...: mount at $root/WHERE unless something is
# mounted there already (another run in the same root); remember it
mounted=""
mount_in() {
	local where=$root/$1
	shift
	mkdir -p "$where"
	mountpoint -q "$where" && return
	mount "$@" "$where"
	mounted="$where $mounted"
}

# unmount_ours: what this run mounted, innermost first (a run beside it in
# the same root keeps its own)
unmount_ours() {
	local m
	for m in $mounted; do
		umount "$m" || umount -l "$m"
	done
	mounted=""
}

# run_in CMD...: run CMD in the root, with the file systems a server needs,
# and the host's directory TTL_ROOT_SHARE (if set) at the same path inside
run_in() {
	local rc=0
	trap unmount_ours EXIT
	mount_in proc -t proc proc
	mount_in dev/shm -t tmpfs -o mode=1777 tmpfs
	mount_in dev/pts -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts
	if [ -n "${TTL_ROOT_SHARE:-}" ]; then
		mount_in "${TTL_ROOT_SHARE#/}" --bind "$TTL_ROOT_SHARE"
	fi
	cp -L /etc/resolv.conf "$root/etc/resolv.conf"
	chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@" || rc=$?
	unmount_ours
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
		log "usage: $0 17|19 [run CMD...]"
		exit 2
		;;
esac
