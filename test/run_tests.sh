#!/usr/bin/env bash
#
# test/run_tests.sh: install what the tests need, build and install the
# extension, then run every suite (pg_regress, isolation, TAP, and the
# benchmark's smoke run) on throwaway servers as an ordinary OS user.  The
# last line is "N passed, N failed".
#
# As root (a fresh Debian 12 machine): installs packages, builds, installs,
# copies the tree to a scratch directory owned by the "postgres" user and
# re-runs itself there as that user, since PostgreSQL refuses to run as root.
#
# Environment: TTL_TEST_SUITES="regress isolation tap bench" (default: all),
#              TTL_TAP_TESTS="t/001_worker.pl ..." (default: all).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/test/lib.sh"
suites=${TTL_TEST_SUITES:-regress isolation tap bench}

if [ "$(id -u)" = 0 ]; then
	ttl_root_setup "$here" libipc-run-perl gnuplot-nox bc
	work=$(mktemp -d /tmp/ttl_index_test.XXXXXX)
	cp -a "$here"/. "$work"/
	chown -R postgres "$work"
	chmod 755 "$work"
	status=0
	su postgres -s /bin/bash -c "TTL_TEST_SUITES='$suites' TTL_TAP_TESTS='${TTL_TAP_TESTS:-}' bash '$work/test/run_tests.sh'" || status=$?
	rm -rf "$work"
	exit $status
fi

cd "$here"
export PATH=$PGBIN:$PATH
passed=0
failed=0
logdir=$here/test/log
mkdir -p "$logdir"

# start_server DIR PORT [extra postgresql.conf lines...]
start_server() {
	local dir=$1 port=$2
	shift 2
	rm -rf "$dir"
	initdb -D "$dir" -A trust -U postgres >/dev/null
	{
		echo "port = $port"
		echo "unix_socket_directories = '$here/test'"
		echo "listen_addresses = ''"
		for line in "$@"; do echo "$line"; done
	} >> "$dir/postgresql.conf"
	pg_ctl -D "$dir" -l "$dir.log" -w start >/dev/null
}

stop_server() {
	pg_ctl -D "$1" -m fast -w stop >/dev/null || true
}

count_regress() {
	# pg_regress prints "ok N - name" / "not ok N - name" (PG15: "test x ... ok")
	local out=$1
	local ok bad
	ok=$(grep -cE '^(ok|test .* \.\.\. ok|     [a-z_0-9]+ +\.\.\. ok| *[a-z_0-9]+ +\.\.\. ok)' "$out" || true)
	bad=$(grep -cE '(\.\.\. FAILED|^not ok)' "$out" || true)
	passed=$((passed + ok))
	failed=$((failed + bad))
}

if [[ " $suites " == *" regress "* ]] || [[ " $suites " == *" isolation "* ]]; then
	echo "== pg_regress and isolation (server without shared_preload_libraries)"
	start_server "$here/test/regress_data" 55441
	export PGHOST=$here/test PGPORT=55441 PGUSER=postgres
	if [[ " $suites " == *" regress "* ]]; then
		make -s installcheck PG_CONFIG=$PGBIN/pg_config 2>&1 | tee "$logdir/regress.out" || true
		count_regress "$logdir/regress.out"
		[ -f regression.diffs ] && cat regression.diffs
	fi
	if [[ " $suites " == *" isolation "* ]] && ls test/isolation/specs/*.spec >/dev/null 2>&1; then
		specs=$(cd test/isolation/specs && ls *.spec | sed 's/\.spec$//' | tr '\n' ' ')
		$(dirname "$($PGBIN/pg_config --pgxs)")/../test/isolation/pg_isolation_regress \
			--inputdir=test/isolation --outputdir=test/isolation/output \
			--dbname=ttl_isolation $specs 2>&1 | tee "$logdir/isolation.out" || true
		count_regress "$logdir/isolation.out"
		[ -f test/isolation/output/regression.diffs ] && cat test/isolation/output/regression.diffs
	fi
	stop_server "$here/test/regress_data"
	unset PGHOST PGPORT PGUSER
fi

if [[ " $suites " == *" tap "* ]]; then
	echo "== TAP"
	pgxs=$(dirname "$($PGBIN/pg_config --pgxs)")/..
	tests=${TTL_TAP_TESTS:-$(cd test && ls t/*.pl)}
	(
		cd test
		TESTDIR=$here/test PG_REGRESS=$pgxs/test/regress/pg_regress \
		PERL5LIB=$pgxs/test/perl prove --timer $tests
	) 2>&1 | tee "$logdir/tap.out" || true
	ok=$(grep -cE '^t/.* ok$|^\[.*\] t/.* ok' "$logdir/tap.out" || true)
	bad=$(grep -cE '^t/.*(Failed|Dubious)|^\[.*\] t/.*(Failed|Dubious)' "$logdir/tap.out" || true)
	grep -q "^Result: PASS" "$logdir/tap.out" || [ "$bad" -gt 0 ] || bad=1
	passed=$((passed + ok))
	failed=$((failed + bad))
fi

if [[ " $suites " == *" bench "* ]]; then
	# the benchmark suite at tiny sizes (about 45 s): checks that the harness
	# works and its figures are sane, not the performance targets
	echo "== bench (test/bench/run.sh --smoke)"
	if bash "$here/test/bench/run.sh" --smoke --out "$logdir/bench" > "$logdir/bench.out" 2>&1 &&
		grep -q '^== summary' "$logdir/bench.out"; then
		sed -n '/^== summary/,$p' "$logdir/bench.out"
		echo "ok - bench smoke run"
		passed=$((passed + 1))
	else
		cat "$logdir/bench.out"
		echo "not ok - bench smoke run"
		failed=$((failed + 1))
	fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
