#!/usr/bin/env bash
#
# test/run_tests.sh [--pg "15 16 17 18 19"] [--suites "layers regress isolation tap bench deb"]
#                   [--tap "t/001_worker.pl ..."]
#
# Installs what the tests need, builds the servers and the extension, then
# runs every suite (pg_regress, isolation, TAP, the benchmark's smoke run)
# on each supported PostgreSQL, the versions side by side, on throwaway
# servers as an ordinary OS user.  The last line is "N passed, N failed".
#
#   15  Debian 12's package (postgresql-15); the extension is installed from
#       the .deb this tree builds (debian/, dpkg-buildpackage), so the suite
#       also proves the package
#   16  PostgreSQL 16.2, built from ../shared/sources with assertions on
#   17  Debian 13's package (postgresql-17, assertions off), in a Debian 13
#       (trixie) root made with debootstrap (test/debian_root.sh 17): this script
#       runs again inside it (chroot, --in-root), where it builds the package
#       postgresql-17-ttl-index with dpkg-buildpackage, installs it, and runs
#       the same suites as that root's "postgres" user.  The benchmark's
#       smoke run draws no chart there (no gnuplot in the root)
#   18  PostgreSQL 18.3, built as 16 is, with Citus 14.0.1 built into it
#       (the Citus test, t/021_citus.pl, runs there and skips elsewhere)
#   19  the release candidate 19~rc1 from Debian experimental (assertions
#       off), in a Debian sid root (test/debian_root.sh 19), run as 17 is:
#       this script again inside it builds and installs the package
#       postgresql-19-ttl-index and runs the suites as its "postgres" user
#
# t/025_pg_upgrade.pl upgrades a cluster of Debian's 15, with this tree's
# ttl_index, to 16 and 18 with pg_upgrade; it skips on 15 itself and in the
# Debian roots (no 15 there).
#
# The source builds and the Debian roots are made once per machine and
# cached under /var/cache/ttl_index (test/pg_build.sh, test/debian_root.sh).
# Every server log of a version's run is read afterwards: a "TRAP:" (failed
# assertion), a "PANIC" or a process "terminated by signal" other than the
# tests' own kill -9 counts as a failure, whatever the tests said.
#
# As root (a fresh Debian 12 machine): installs packages, builds, installs,
# copies the tree to a scratch directory owned by the "postgres" user and
# runs each version's suites there as that user, since PostgreSQL refuses to
# run as root.
#
# --pg: the versions to run, in increasing order (default "15 16 17 18 19";
# "--pg 15" for quick work).  --suites: which suites (default all; "layers"
# checks the file layout of docs/design.md once, test/layers.pl; "deb"
# builds and installs the package for 15, 17 and 19, else they get a plain
# make install).  --tap: TAP files to run (default all).  The same three can be
# given as TTL_PG_VERSIONS, TTL_TEST_SUITES and TTL_TAP_TESTS.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
versions=${TTL_PG_VERSIONS:-15 16 17 18 19}
suites=${TTL_TEST_SUITES:-layers regress isolation tap bench deb}
taps=${TTL_TAP_TESTS:-}
inner=0
in_root=0
while [ $# -gt 0 ]; do
	case $1 in
		--pg) versions=${2:?--pg needs versions}; shift ;;
		--suites) suites=${2:?--suites needs suite names}; shift ;;
		--tap) taps=${2:?--tap needs test files}; shift ;;
		--inner) inner=1 ;;
		--in-root) in_root=1 ;;
		-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		*) echo "run_tests.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done
has_suite() { [[ " $suites " == *" $1 "* ]]; }

# in_debian_root VERSION: whether a version is tested in a Debian root of
# its own (test/debian_root.sh): 17 in Debian 13, 19 in Debian sid
in_debian_root() { [ "$1" = 17 ] || [ "$1" = 19 ]; }

# packaged VERSION: whether a version is tested as the Debian package
# installs it (15 on this Debian 12 machine, the versions of the roots)
packaged() { [ "$1" = 15 ] || in_debian_root "$1"; }

# prep_order VERSIONS: the order in which the versions are made ready,
# each starting its suites as soon as it is: 15 first (its package is what
# t/025_pg_upgrade.pl upgrades from), then 18, whose suite is the longest
# (an assert-enabled server, and Citus), then the others
prep_order() {
	local v
	for v in "$@"; do [ "$v" = 15 ] && echo "$v"; done
	for v in "$@"; do [ "$v" = 18 ] && echo "$v"; done
	for v in "$@"; do [ "$v" != 15 ] && [ "$v" != 18 ] && echo "$v"; done
}

# tap_jobs VERSION: how many TAP files of the version run at once: two for
# 18, whose suite is the longest, so that it ends with the others; one for
# the others (TTL_TAP_JOBS sets it for all)
tap_jobs() {
	if [ -n "${TTL_TAP_JOBS:-}" ]; then
		echo "$TTL_TAP_JOBS"
	elif [ "$1" = 18 ]; then
		echo 2
	else
		echo 1
	fi
}

# pg_config_for VERSION: the pg_config of a version (builds it if needed;
# 17 and 19 only inside their Debian roots)
pg_config_for() {
	if packaged "$1"; then
		echo "/usr/lib/postgresql/$1/bin/pg_config"
	elif [ "$1" = 18 ]; then
		# with Citus 14.0.1 installed into it, for test/t/021_citus.pl
		# (Citus 14 builds against 16 to 18; 18 is the one we test it on)
		echo "$(bash "$here/test/pg_build.sh" citus 18)/pg_config"
	else
		echo "$(bash "$here/test/pg_build.sh" "$1")/pg_config"
	fi
}

# ---------------------------------------------------------------- as root
if [ "$(id -u)" = 0 ] && [ $inner = 0 ]; then
	. "$here/test/lib.sh"
	start=$(date +%s)
	# in increasing order: 15 first, whose package the pg_upgrade test of
	# 16 and 18 (t/025_pg_upgrade.pl) upgrades from
	versions=$(printf '%s\n' $versions | sort -n | tr '\n' ' ')
	versions=${versions% }
	if [ $in_root = 0 ]; then
		ttl_packages postgresql-15 postgresql-server-dev-15 make gcc libipc-run-perl \
			gnuplot-nox bc bison flex libreadline-dev zlib1g-dev libicu-dev pkg-config \
			postgresql-server-dev-all debhelper dpkg-dev postgresql-15-cron
		ttl_postgres_user
	fi
	work=$(mktemp -d /tmp/ttl_index_test.XXXXXX)
	trap 'rm -rf "$work"' EXIT
	passed=0
	failed=0
	summary=""
	# the layout of docs/design.md: no call up a floor, no cycle of files
	if has_suite layers && [ $in_root = 0 ]; then
		if perl "$here/test/layers.pl" "$here/src"; then
			echo "ok - layers: calls go down the floors, no cycle"
			passed=$((passed + 1))
		else
			echo "not ok - layers: calls go down the floors, no cycle"
			failed=$((failed + 1))
		fi
	fi
	# t/025_pg_upgrade.pl upgrades Debian's PostgreSQL 15 with this tree's
	# ttl_index (as its run installs it) to 16 and 18: without 15 in the
	# run, install the tree there first
	if [ $in_root = 0 ] && has_suite tap && [[ " $versions " != *" 15 "* ]] &&
		[[ " $versions " == *" 16 "* || " $versions " == *" 18 "* ]]; then
		PG_CONFIG=$TTL_DEBIAN_PG_CONFIG ttl_install_extension "$here"
	fi

	# failures_of FILE: what failed in a version's output, a line each
	# (the summary is what a CI log's tail shows).  Nothing found is not a
	# failure: under set -e and pipefail, a grep that finds nothing in a
	# command substitution would end the run.
	failures_of() {
		{ grep -E '^(not ok|test/t/[^ ]+ +\(Wstat)|\.\.\. FAILED|^# === oracle FAILURE' "$1" || true; } |
			{ grep -v '# SKIP' || true; } | awk 'NR <= 12 { printf "\n    %s", $0 }'
	}

	# count_run FILE: add the counts of a run's last line ("N passed, N
	# failed") and set line to it
	count_run() {
		line=$(tail -n 1 "$1")
		if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
			passed=$((passed + BASH_REMATCH[1]))
			failed=$((failed + BASH_REMATCH[2]))
		else
			echo "not ok - PostgreSQL $v: the run did not finish"
			failed=$((failed + 1))
			line="did not finish"
		fi
	}

	# Each version is made ready in turn (its server built, the extension
	# installed, its Debian root made: prepare_version), and its suites
	# start as soon as it is, in a lane of its own, while the next one is
	# made ready.  The suites mostly wait for states (a worker's pass, a
	# standby's replay): a version's suites use about a third of a core on
	# average, so the five versions side by side share two cores, and the
	# run takes about as long as its slowest version.  TTL_TEST_LANES=N
	# runs at most N versions at once (1: one after another).  Each
	# version has its own copy of the tree, its own regress and benchmark
	# ports (run_tests.sh --inner), and the TAP servers of every lane take
	# their ports through one lock directory (PG_TEST_PORT_DIR), which each
	# Debian root sees at the same path (bind-mounted: TTL_ROOT_SHARE of
	# test/debian_root.sh) so that the runs inside them share it.
	#
	# The benchmark's smoke run is a check that the benchmark runs, not a
	# measure: it runs once, with the first version (TTL_BENCH_VERSION
	# names another).
	lanes=${TTL_TEST_LANES:-5}
	bench_version=${TTL_BENCH_VERSION:-${versions%% *}}
	ready=""
	chmod 755 "$work"
	# prepare_version V: make a version ready (its server built, the
	# extension installed from a copy of the tree of its own, its Debian
	# root made); false when it cannot be
	prepare_version() {
		local v=$1 root rwork
		mkdir -p "$work/v$v"
		if in_debian_root "$v" && [ $in_root = 0 ]; then
			if ! root=$(bash "$here/test/debian_root.sh" "$v"); then
				echo "not ok - PostgreSQL $v: could not make its Debian root"
				failed=$((failed + 1))
				return 1
			fi
			rwork=$(mktemp -d "$root/tmp/ttl_index_test.XXXXXX")
			cp -a "$here"/. "$rwork/tree"/
			echo "$rwork" > "$work/v$v/rwork"
		else
			if ! PG_CONFIG=$(pg_config_for "$v"); then
				echo "not ok - PostgreSQL $v: could not build the server"
				failed=$((failed + 1))
				return 1
			fi
			export PG_CONFIG
			echo "$PG_CONFIG" > "$work/v$v/pg_config"
			cp -a "$here"/. "$work/v$v/tree"/
			# 15 on Debian 12, 17 on Debian 13 and 19 on sid are tested
			# as packaged
			if packaged "$v" && has_suite deb; then
				if bash "$here/test/deb.sh" "$work/v$v/tree"; then
					echo "ok - the .deb builds and installs" > "$work/v$v/deb"
				else
					echo "not ok - the .deb builds and installs" > "$work/v$v/deb"
					ttl_install_extension "$work/v$v/tree"
				fi
			else
				ttl_install_extension "$work/v$v/tree"
			fi
			chown -R postgres "$work/v$v"
			chmod 755 "$work" "$work/v$v" "$work/v$v/tree"
		fi
	}

	if [ -n "${TTL_PORT_DIR:-}" ]; then
		portdir=$TTL_PORT_DIR	# in a root, the host's run gave it
	else
		portdir=$work/ports
	fi

	# has_citus V: whether the server of version V has Citus
	has_citus() {
		[ -f "$work/v$1/pg_config" ] &&
			[ -e "$("$(cat "$work/v$1/pg_config")" --pkglibdir)/citus.so" ]
	}

	# run_version V: the suites of one version, its output in
	# $work/v$V/out, its time in $work/v$V/time
	run_version() {
		local v=$1 t0 vsuites=" $suites "
		t0=$(date +%s)
		# the Citus build's (18) bench suite is the Citus scenario's smoke run
		[ "$v" = "$bench_version" ] || has_citus "$v" || vsuites=${vsuites/ bench / }
		vsuites=${vsuites# }
		vsuites=${vsuites% }
		echo "== PostgreSQL $v: started $(date -u +%H:%M:%S)"
		if in_debian_root "$v" && [ $in_root = 0 ]; then
			# this script again, in the version's Debian root, as root
			# there: it builds and installs postgresql-$v-ttl-index and
			# runs the suites as that root's postgres user, taking its
			# TAP ports through the host's lock directory
			local rwork
			rwork=$(cat "$work/v$v/rwork")
			TTL_ROOT_SHARE=$portdir bash "$here/test/debian_root.sh" "$v" run \
				env TTL_PORT_DIR="$portdir" TTL_TAP_JOBS="$(tap_jobs "$v")" \
				bash "/tmp/${rwork##*/}/tree/test/run_tests.sh" \
				--in-root --pg "$v" --suites "$vsuites" ${taps:+--tap "$taps"} \
				> "$work/v$v/out" 2>&1 || true
			rm -rf "$here/test/log/pg$v" "$here"/test/log/postgresql-"$v"-ttl-index*.deb
			mkdir -p "$here/test/log"
			cp -a "$rwork/tree/test/log/pg$v" "$rwork"/tree/test/log/postgresql-"$v"-*.deb \
				"$here/test/log/" 2>/dev/null || true
			rm -rf "$rwork"
		else
			{
				[ -f "$work/v$v/deb" ] && cat "$work/v$v/deb"
				su postgres -s /bin/bash -c "PG_CONFIG='$(cat "$work/v$v/pg_config")' \
					PG_TEST_PORT_DIR='$portdir' TTL_TAP_JOBS='$(tap_jobs "$v")' \
					bash '$work/v$v/tree/test/run_tests.sh' --inner \
					--pg '$v' --suites '$vsuites' ${taps:+--tap '$taps'}" || true
			} > "$work/v$v/out" 2>&1
			# keep the logs of the run beside the tree, for whoever looks next
			rm -rf "$here/test/log/pg$v"
			mkdir -p "$here/test/log"
			cp -a "$work/v$v/tree/test/log/pg$v" "$here/test/log/" 2>/dev/null || true
		fi
		echo $(($(date +%s) - t0)) > "$work/v$v/time"
		echo "== PostgreSQL $v: finished $(date -u +%H:%M:%S), $(cat "$work/v$v/time") s"
	}

	mkdir -p "$portdir"
	chmod 1777 "$portdir"
	# the versions that need no build first: their suites run while the
	# source builds of the others (once per machine) go on
	for v in $(prep_order $versions); do
		prepare_version "$v" || continue
		ready="$ready $v"
		while [ "$(jobs -rp | wc -l)" -ge "$lanes" ]; do
			wait -n || true
		done
		run_version "$v" &
	done
	wait || true

	for v in $versions; do
		[[ " $ready " == *" $v "* ]] || continue
		# the version's own output, whole, then its count (a deb check of
		# 15 counts here; the runs in the roots count their own)
		cat "$work/v$v/out"
		if [ -f "$work/v$v/deb" ]; then
			if grep -q '^ok - the .deb' "$work/v$v/deb"; then
				passed=$((passed + 1))
			else
				failed=$((failed + 1))
			fi
		fi
		count_run "$work/v$v/out"
		summary="$summary
PostgreSQL $v: $line ($(cat "$work/v$v/time" 2>/dev/null || echo '?') s)$(failures_of "$work/v$v/out")"
	done
	if [ $in_root = 0 ]; then
		echo "== summary$summary
whole run: $(($(date +%s) - start)) s"
	fi
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
fi

# ---------------------------------------------------- one version, as postgres
. "$here/test/lib.sh"
[ "$(id -un)" != root ] || { echo "run_tests.sh: PostgreSQL does not run as root" >&2; exit 1; }
v=$versions
cd "$here"
export PATH=$PGBIN:$PATH
passed=0
failed=0
logdir=$here/test/log/pg$v
rm -rf "$logdir"
mkdir -p "$logdir"
pgxs=$(dirname "$("$PG_CONFIG" --pgxs)")/..
echo "== PostgreSQL $v: $("$PG_CONFIG" --version), $PG_CONFIG"

# a port of its own per version, so that a leftover server does not collide
port=$((55400 + ${v%%.*}))

start_server() {
	local dir=$1
	shift
	rm -rf "$dir"
	initdb -D "$dir" -A trust -U postgres >/dev/null
	{
		echo "port = $port"
		echo "unix_socket_directories = '$here/test'"
		echo "listen_addresses = ''"
		for line in "$@"; do echo "$line"; done
	} >> "$dir/postgresql.conf"
	pg_ctl -D "$dir" -l "$logdir/regress_server.log" -w start >/dev/null
}

stop_server() {
	pg_ctl -D "$1" -m fast -w stop >/dev/null || true
}

count_regress() {
	# pg_regress prints "ok N - name" / "not ok N - name" (16+) or
	# "test x ... ok" / "x ... FAILED" (15)
	local out=$1
	local ok bad
	ok=$(grep -cE '^(ok|test .* \.\.\. ok|     [a-z_0-9]+ +\.\.\. ok| *[a-z_0-9]+ +\.\.\. ok)' "$out" || true)
	bad=$(grep -cE '(\.\.\. FAILED|^not ok)' "$out" || true)
	passed=$((passed + ok))
	failed=$((failed + bad))
}

if has_suite regress || has_suite isolation; then
	echo "== pg_regress and isolation (server without shared_preload_libraries)"
	start_server "$here/test/regress_data"
	export PGHOST=$here/test PGPORT=$port PGUSER=postgres
	if has_suite regress; then
		make -s installcheck PG_CONFIG="$PG_CONFIG" ISOLATION= TAP_TESTS= 2>&1 |
			tee "$logdir/regress.out" || true
		count_regress "$logdir/regress.out"
		[ -f regression.diffs ] && cat regression.diffs && cp regression.diffs "$logdir/"
	fi
	if has_suite isolation; then
		make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= TAP_TESTS= 2>&1 |
			tee "$logdir/isolation.out" || true
		count_regress "$logdir/isolation.out"
		[ -f output_iso/regression.diffs ] && cat output_iso/regression.diffs &&
			cp output_iso/regression.diffs "$logdir/isolation.diffs"
	fi
	stop_server "$here/test/regress_data"
	unset PGHOST PGPORT PGUSER
fi

if has_suite tap; then
	echo "== TAP"
	tests=${taps:-$(ls test/t/*.pl)}
	tests=$(for t in $tests; do case $t in test/*) echo "$t" ;; *) echo "test/$t" ;; esac; done | tr '\n' ' ')
	# PostgreSQL 17 and later copy a cluster made once (INITDB_TEMPLATE)
	# where a test's node would run initdb: a few seconds of CPU per node
	# on an assert-enabled server, some sixty nodes per version
	rm -rf "$here/tmp_check_template"
	if [ "${v%%.*}" -ge 17 ] &&
		initdb --no-sync --auth trust -D "$here/tmp_check_template/pgdata" >/dev/null 2>&1; then
		export INITDB_TEMPLATE=$here/tmp_check_template/pgdata
	fi
	make -s prove_installcheck PG_CONFIG="$PG_CONFIG" PROVE_TESTS="$tests" PROVE_FLAGS="--timer -j$(tap_jobs "$v")" 2>&1 |
		tee "$logdir/tap.out" || true
	ok=$(grep -cE '^test/t/.* ok$|^\[.*\] test/t/.* ok' "$logdir/tap.out" || true)
	bad=$(grep -cE '^test/t/.*(Failed|Dubious)|^\[.*\] test/t/.*(Failed|Dubious)' "$logdir/tap.out" || true)
	grep -q "^Result: PASS" "$logdir/tap.out" || [ "$bad" -gt 0 ] || bad=1
	passed=$((passed + ok))
	failed=$((failed + bad))
	cp -a tmp_check/log "$logdir/tap" 2>/dev/null || true
fi

# bench_verdict NAME OUT OK FROM RC: one test, passed when the run exited
# 0 (RC) and its output OUT has a line matching OK; prints OUT from the line
# matching FROM on, or whole when it failed
bench_verdict() {
	if [ "$5" = 0 ] && grep -q "$3" "$2"; then
		sed -n "/$4/,\$p" "$2"
		echo "ok - $1"
		passed=$((passed + 1))
	else
		cat "$2"
		echo "not ok - $1"
		failed=$((failed + 1))
	fi
}

if has_suite bench && [ -e "$("$PG_CONFIG" --pkglibdir)/citus.so" ]; then
	# the Citus scenario at tiny sizes (about 40 s): its harness works
	echo "== bench (test/bench/citus.sh --smoke)"
	rc=0
	TTL_BENCH_BIN=$PGBIN TTL_BENCH_PORT=$((55310 + ${v%%.*} * 3)) \
		bash "$here/test/bench/citus.sh" --smoke --out "$logdir/bench_citus" > "$logdir/bench_citus.out" 2>&1 || rc=$?
	bench_verdict "bench smoke run (Citus)" "$logdir/bench_citus.out" 'x the DELETE$' '^distributed DELETE at expiry' $rc
elif has_suite bench; then
	# the benchmark suite at tiny sizes (about a minute): checks that the
	# harness works and its figures are sane, not the performance targets
	echo "== bench (test/bench/run.sh --smoke)"
	# a port of its own per version: another version's lane may run it too
	export TTL_BENCH_PORT=$((55300 + ${v%%.*}))
	rc=0
	bash "$here/test/bench/run.sh" --smoke --out "$logdir/bench" > "$logdir/bench.out" 2>&1 || rc=$?
	bench_verdict "bench smoke run" "$logdir/bench.out" '^== summary' '^== summary' $rc
fi

# Every server log of this version's run: an assertion failure, a PANIC or
# a crashed process is a failure even when the tests passed.  kill -9
# (signal 9) is what the crash tests do on purpose.
echo "== server logs"
bad_logs=0
while IFS= read -r -d '' f; do
	if grep -qE 'TRAP:|PANIC|terminated by signal ([0-8]|[1-9][0-9])([^0-9]|$)' "$f"; then
		echo "not ok - server log $(basename "$f"):"
		grep -nE 'TRAP:|PANIC|terminated by signal ([0-8]|[1-9][0-9])([^0-9]|$)' "$f" | head -5
		bad_logs=$((bad_logs + 1))
	fi
done < <(find "$logdir" -name '*.log' ! -name 'regress_log_*' -print0)
if [ $bad_logs = 0 ]; then
	echo "ok - no TRAP, PANIC or crashed process in $(find "$logdir" -name '*.log' ! -name 'regress_log_*' | wc -l) server logs"
	passed=$((passed + 1))
else
	failed=$((failed + bad_logs))
fi

echo "PostgreSQL $v: $passed passed, $failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
