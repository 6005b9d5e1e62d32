#!/usr/bin/env bash
#
# test/bench/run.sh [--smoke] [--out DIR] [--runs N] [--only "1 3 ..."] [--shapes "toast ..."] [--set "NAME = VALUE"]...:
# the ttl_index benchmark suite, on a throwaway server with ttl_index
# preloaded (settings at their defaults unless a scenario says otherwise).
#
#   1. backlog throughput: 2.4M expired rows of 3M, drained by a plain DELETE,
#      the pg_cron pattern, ttl_runner() and the background worker, alone
#      and with its helpers
#   2. expiry lag under steady inserts of about 5,000 rows/s
#   3. fairness: 20 small tables whose rows expire while an 8M-row backlog drains
#   4. foreground impact: an app's pgbench workload while the worker is
#      switched on and off every second, at its defaults (which give way to
#      writers), then at the server's CPU priority, full speed and rate limits
#   5. idle cost: the worker's CPU with 1,000 and 10,000 policies and nothing
#      to delete
#   6. scale of policies: one ttl_runner() pass over 1 to 10,000 due policies
#   7. memory: the worker's RSS while it drains the backlog of scenario 3
#   8. dead entries held: the worker's CPU and a trickle's lag while 1M, then
#      10M, deleted rows' index entries cannot be removed (a long query holds
#      the xmin horizon)
#   9. keeping up with 20,000 rows/s expiring under a pgbench load
#  10. row shapes: the drain of 40-, 100- and 500-byte rows, TOASTed rows
#      (compressible and not),
#      rows with three secondary indexes and rows whose expiry is random,
#      each beside its own plain DELETE
#  11. anonymize: two columns of 800,000 expired rows of 1M reset by the
#      worker (set_columns), beside the equivalent plain UPDATE
#  12. a size cap under steady inserts: a table capped at 100,000 rows while
#      pgbench inserts 2,000 rows/s, its row count sampled every 200 ms
#  13. a size cap by bytes under steady inserts: a table capped at 16 MB
#      (max_bytes) while pgbench inserts 2,000 rows/s, its
#      pg_total_relation_size sampled every 200 ms (autovacuum_naptime 5 s)
#
# Each scenario prints a table, its target and whether it is met; the end
# prints a summary and the machine.  Results (a TSV per scenario, the log of
# the run, two PNG charts drawn with gnuplot) go to DIR (default
# test/bench/results/).  The full run takes about 25 minutes on 2 cores;
# --smoke (tiny sizes, about 45 s) only checks that the harness works and
# that the figures are sane, and checks no target.  --runs N: runs of
# scenario 1 (the median is reported; default 3).  --only: run only the
# listed scenarios (7 needs 3).  --shapes: scenario 10's shapes to run
# (default "p40 p100 p500 toast toastx idx3 random").  --set: a server setting added to the
# defaults (repeatable), to measure a setting side by side with a run
# without it; the settings are printed with the results.
#
# Run as root (installs the packages, builds and installs the extension,
# then re-runs itself as the postgres user) or as the postgres user.
set -Eeuo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/test/lib.sh"

smoke=0
out=$here/test/bench/results
runs=3
only="1 2 3 4 5 6 7 8 9 10 11 12"
shapes="p40 p100 p500 toast toastx idx3 random"
extra=()
args=("$@")
while [ $# -gt 0 ]; do
	case $1 in
		--smoke) smoke=1 ;;
		--out) out=${2:?--out needs a directory}; shift ;;
		--runs) runs=${2:?--runs needs a number}; shift ;;
		--only) only=${2:?--only needs scenario numbers}; shift ;;
		--shapes) shapes=${2:?--shapes needs shape names}; shift ;;
		--set) extra+=("${2:?--set needs NAME = VALUE}"); shift ;;
		-h|--help) sed -n '2,/^set -Eeuo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		*) echo "run.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done
case $runs in ''|*[!0-9]*|0) echo "run.sh: --runs needs a positive number" >&2; exit 2 ;; esac

if [ "$(id -u)" = 0 ]; then
	ttl_root_setup "$here" bc gnuplot-nox >/dev/null
	mkdir -p "$out"
	chown postgres "$out"
	quoted=""
	[ ${#args[@]} = 0 ] || quoted=$(printf '%q ' "${args[@]}")
	exec su postgres -s /bin/bash -c "bash '$here/test/bench/run.sh' $quoted"
fi
[ "$(id -un)" != root ] || { echo "run.sh: PostgreSQL does not run as root" >&2; exit 1; }

# ---------------------------------------------------------------- sizes
if [ $smoke = 1 ]; then
	s1_rows=20000; s2_secs=3; s3_rows=20000; s3_secs=3; s4_rows=20000; s4_secs=4; s4_win=0.5; s4_runs=2
	s5_sizes="100"; s5_secs=5; s6_sizes="1 10 100"; s6_reps=2; s8_sizes="20000"; s8_secs=5
	s9_rate=5000; s9_secs=4; s10_rows=20000; s10_toast_rows=4000; s10_runs=1
	s11_rows=20000; s12_cap=2000; s12_rate=500; s12_secs=4
	s13_cap=$((2 * 1024 * 1024)); s13_rate=500; s13_secs=6
else
	s1_rows=3000000; s2_secs=30; s3_rows=8000000; s3_secs=120; s4_rows=4000000; s4_secs=20; s4_win=1; s4_runs=5
	s5_sizes="1000 10000"; s5_secs=60; s6_sizes="1 100 1000 10000"; s6_reps=3; s8_sizes="1000000 10000000"; s8_secs=30
	s9_rate=20000; s9_secs=40; s10_rows=1000000; s10_toast_rows=100000; s10_runs=3
	s11_rows=1000000; s12_cap=100000; s12_rate=2000; s12_secs=30
	s13_cap=$((16 * 1024 * 1024)); s13_rate=2000; s13_secs=40
fi
s1_expired=$((s1_rows * 8 / 10))
s3_small=20
port=${TTL_BENCH_PORT:-55496}

mkdir -p "$out"
[ -w "$out" ] || { echo "run.sh: cannot write to $out" >&2; exit 1; }
out=$(cd "$out" && pwd)
rm -f "$out"/*.tsv "$out"/*.png "$out"/run.log "$out"/server.log
# everything printed also goes to run.log; the tee is waited for at exit
exec 3>&1 4>&2
exec > >(tee "$out/run.log") 2>&1
teepid=$!
command -v $PGBIN/pgbench >/dev/null || { echo "run.sh: $PGBIN/pgbench not found" >&2; exit 1; }

started=$(date +%s)
echo "== ttl_index benchmark ($([ $smoke = 1 ] && echo "smoke run: tiny sizes, targets not checked" || echo "full run, about 25 minutes on 2 cores")), results in $out"

# ---------------------------------------------------------------- server
sb=$([ $smoke = 1 ] && echo 256MB || echo 1GB)
# max_locks_per_transaction: ttl_runner() over 10,000 tables (scenario 6)
# holds every table's lock until it commits
ttl_scratch_server bench $port "shared_buffers = $sb" "max_wal_size = 8GB" "checkpoint_timeout = 30min" \
	"max_locks_per_transaction = 1024" "ttl_index.log_min_duration = 0" "log_line_prefix = '%m [%p] '" \
	${extra[@]+"${extra[@]}"}
cleanup() {
	local p
	# background jobs still running (pgbench, samplers), never anything else
	for p in $(jobs -pr); do kill "$p" 2>/dev/null || true; done
	[ -f "$dir/log" ] && cp "$dir/log" "$out/server.log" 2>/dev/null
	$PGBIN/pg_ctl -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	rm -rf "$dir"
	exec 1>&3 2>&4
	wait "$teepid" 2>/dev/null || true
}
trap cleanup EXIT
trap 'echo "run.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
echo "server: PostgreSQL $($PGBIN/postgres --version | awk '{print $3}'), shared_buffers = $sb, max_wal_size = 8GB," \
	"checkpoint_timeout = 30min, max_locks_per_transaction = 1024 (for scenario 6), ttl_index.log_min_duration = 0," \
	"autovacuum on (off on the tables of scenarios 1 and 4), other ttl_index settings at their defaults"
[ ${#extra[@]} = 0 ] || echo "settings added with --set: $(printf '%s; ' "${extra[@]}")"

psql_base="$PGBIN/psql -X -q -At -v ON_ERROR_STOP=1 -h $dir -p $port -U postgres"
Q() { $psql_base -d bench "$@"; }
sql() { $psql_base -d bench -c "$1"; }
$psql_base -d postgres -c "CREATE DATABASE bench"
sql "CREATE EXTENSION ttl_index"
base=$(sql "SELECT now()")

die() { echo "run.sh: $*" >&2; exit 1; }

# timed SQL: run the script on stdin with \timing; prints the total of the
# statements' times in ms on the first line, then the statements' output
timed() {
	local res
	res=$( { echo '\timing on'; cat; } | Q) || return 1
	awk '/^Time: / {s += $2} END {printf "%.3f\n", s}' <<<"$res"
	grep -v '^Time: ' <<<"$res" || true
}

worker_pid() {
	local pid="" i
	for i in $(seq 1 300); do
		pid=$(sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl_index worker' AND datname = 'bench'")
		[ -n "$pid" ] && { echo "$pid"; return 0; }
		sleep 0.1
	done
	die "no ttl_index worker for database bench after 30 s"
}

# worker on|off: ttl_index.enabled through ALTER SYSTEM and a reload.  When
# turning it off, give the worker time to finish its batch and see it.
worker() {
	sql "ALTER SYSTEM SET ttl_index.enabled = $1" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
	[ "$1" = on ] || sleep 1
}

# lsn bytes between two LSNs
walbytes() { sql "SELECT pg_wal_lsn_diff('$2', '$1')"; }
lsn() { sql "SELECT pg_current_wal_lsn()"; }

# the counter of a table's policy
deleted() { sql "SELECT bench_deleted('$1')"; }

# server-side helpers: sampling and waiting happen inside one backend, so
# that no client process is forked every 50 or 200 ms.  Every loop commits,
# so no snapshot is held while the worker deletes.
Q <<'SQL'
CREATE TABLE bench_sample (scenario int, t float8, tbl text, age float8, big_deleted bigint);
CREATE TABLE bench_event (label text, started timestamptz, finished timestamptz, reached boolean, deleted bigint);

-- the counter of a table's policy
CREATE FUNCTION bench_deleted(rel regclass) RETURNS bigint LANGUAGE sql AS $$
	SELECT coalesce(s.rows_deleted, 0) FROM ttl_index_policy_stats() s
	  JOIN ttl_index_policy p ON p.id = s.policy_id WHERE p.relid = rel
$$;

-- Wait until the policy of rel has deleted `delta` rows since the event
-- `label` was opened (bench_open: it records the start and the counter
-- then), polling its counter every `poll` seconds (50 ms by default), for
-- at most `timeout` seconds from the start.  Records the end, whether the
-- count was reached and how many rows were deleted.  (Each poll reads the
-- policy's lag too, from its index: early in a pass that walks the entries
-- the worker has just deleted, up to 1,000 of them.)
CREATE PROCEDURE bench_open(label text, rel regclass) LANGUAGE sql AS $$
	INSERT INTO bench_event VALUES (label, clock_timestamp(), NULL, NULL, coalesce(bench_deleted(rel), 0))
$$;
CREATE PROCEDURE bench_wait_deleted(label text, rel regclass, delta bigint, timeout float8,
	poll float8 DEFAULT 0.05)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	n0 bigint;
	n bigint;
	ok boolean;
BEGIN
	SELECT e.started, e.deleted INTO STRICT t0, n0 FROM bench_event e WHERE e.label = bench_wait_deleted.label;
	LOOP
		n := bench_deleted(rel);
		ok := n - n0 >= delta;
		EXIT WHEN ok OR clock_timestamp() - t0 > timeout * interval '1 s';
		COMMIT;
		PERFORM pg_sleep(poll);
	END LOOP;
	UPDATE bench_event e SET finished = clock_timestamp(), reached = ok, deleted = n - n0
	 WHERE e.label = bench_wait_deleted.label;
END $$;

-- Every 200 ms, for at most `seconds`, sample the age of the oldest expired
-- row still present in each table (0 when none), as
--   SELECT coalesce(extract(epoch FROM now() - min(expires_at)), 0)
--     FROM t WHERE expires_at < now()
-- with the sampling instant as "now" (it uses the btree on expires_at).
-- With big, also records the counter of big's policy, and stops once it
-- reached big_target.
CREATE PROCEDURE bench_sample_lag(scenario int, tables text[], seconds float8,
	big regclass DEFAULT NULL, big_target bigint DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	v timestamptz;
	el float8;
	k int := 0;
	tb text;
	a float8;
	nbig bigint;
BEGIN
	LOOP
		v := clock_timestamp();
		el := extract(epoch FROM v - t0);
		IF big IS NOT NULL THEN
			nbig := bench_deleted(big);
		END IF;
		FOREACH tb IN ARRAY tables LOOP
			EXECUTE format('SELECT coalesce(extract(epoch FROM $1 - min(expires_at)), 0) FROM %I WHERE expires_at < $1', tb)
			  INTO a USING v;
			INSERT INTO bench_sample VALUES (scenario, el, tb, a, nbig);
		END LOOP;
		COMMIT;
		EXIT WHEN el >= seconds OR nbig >= big_target;
		k := k + 1;
		PERFORM pg_sleep(greatest(0, extract(epoch FROM t0 + k * interval '200 ms' - clock_timestamp())));
	END LOOP;
END $$;

-- Every 200 ms, for `seconds`, the float8 that `query` returns, as the
-- sample of table `tbl`
CREATE PROCEDURE bench_sample_query(scenario int, tbl text, query text, seconds float8)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	el float8;
	k int := 0;
	a float8;
BEGIN
	LOOP
		el := extract(epoch FROM clock_timestamp() - t0);
		EXECUTE query INTO a;
		INSERT INTO bench_sample VALUES (scenario, el, tbl, a, NULL);
		COMMIT;
		EXIT WHEN el >= seconds;
		k := k + 1;
		PERFORM pg_sleep(greatest(0, extract(epoch FROM t0 + k * interval '200 ms' - clock_timestamp())));
	END LOOP;
END $$;
SQL
worker_pid >/dev/null

# ticks PID: CPU time (utime + stime, in clock ticks) of a process so far
ticks() { sed 's/.*) //' /proc/$1/stat | awk '{print $12 + $13}'; }
tck=$(getconf CLK_TCK)

# ---------------------------------------------------------------- helpers
# nearest-rank percentile of the numbers on stdin: pct P
pct() { sort -g | awk -v p="$1" '{v[NR] = $1} END {if (NR == 0) {print "nan"; exit} i = int(NR * p / 100 + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; print v[i]}'; }
median() { tr ' ' '\n' | awk NF | sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
calc() { awk "BEGIN {printf \"%.${2:-3}f\", $1}"; }
# fmt N: 1234567 -> 1,234,567
fmt() { printf "%.0f" "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta'; }

declare -a summary=()
# verdict OK (1, 0 or na): "met", "NOT met", "NOT MEASURED" or "not checked (smoke)"
verdict() {
	if [ $smoke = 1 ]; then echo "not checked (smoke)"
	elif [ "$1" = na ]; then echo "NOT MEASURED"
	elif [ "$1" = 1 ]; then echo "met"
	else echo "NOT met"
	fi
}
# le A B: 1 when A <= B
le() { awk -v a="$1" -v b="$2" 'BEGIN {print (a + 0 <= b + 0) ? 1 : 0}'; }
# summary_row NUM NAME FIGURE TARGET VERDICT: a line of the final summary
summary_row() { summary+=("$(printf '%-3s %-42s %-14s %-10s %s' "$1" "$2" "$3" "$4" "$5")"); }
target() {  # target NUM NAME FIGURE TARGET OK [NOTE], e.g. target 2 "lag (s)" 0.8 "<= 1" 1
	local v
	v=$(verdict "$5")${6:+ ($6)}
	printf '  target: %s %s; measured %s: %s\n' "$2" "$4" "$3" "$v"
	summary_row "$1" "$2" "$3" "$4" "$v"
}

# ---------------------------------------------------------------- 1
s1() {
	local expired=$s1_expired live=$((s1_rows - s1_expired)) r m t l0 l1 ms n
	echo
	echo "== 1. backlog throughput: $(fmt $s1_rows) rows, $(fmt $expired) expired (btree on ts, 40-byte payload), median of $runs run(s)"
	echo "   each method has its own identical table, all loaded before any timing; CHECKPOINT before each method"
	printf 'run\tmethod\tseconds\twal_bytes\n' > "$out/s1_runs.tsv"
	for r in $(seq 1 "$runs"); do
		worker off
		for m in delete pgcron runner alone worker; do
			t=s1_${m}_r$r
			Q <<SQL
CREATE TABLE $t (id bigserial, ts timestamptz NOT NULL, payload text) WITH (autovacuum_enabled = off);
INSERT INTO $t (ts, payload)
  SELECT timestamptz '$base' - interval '2 days' + g * interval '1 ms', rpad(g::text, 40, '.') FROM generate_series(1, $expired) g;
INSERT INTO $t (ts, payload)
  SELECT timestamptz '$base' + g * interval '1 ms', rpad(g::text, 40, '.') FROM generate_series($expired + 1, $s1_rows) g;
ALTER TABLE $t ADD PRIMARY KEY (id);
CREATE INDEX ${t}_ts ON $t (ts);
VACUUM ANALYZE $t;
SQL
		done
		for m in delete pgcron runner alone worker; do
			t=s1_${m}_r$r
			# rows live one hour after ts.  The worker's policy is created only
			# now: ttl_runner() runs every policy, it would drain that table too
			case $m in
				runner|worker|alone) sql "SELECT ttl_create_index('$t', 'ts', 3600)" >/dev/null ;;
			esac
			# "alone": the worker without helpers (max_parallel_workers = 0)
			if [ $m = alone ]; then
				sql "ALTER SYSTEM SET ttl_index.max_parallel_workers = 0" >/dev/null
			else
				sql "ALTER SYSTEM RESET ttl_index.max_parallel_workers" >/dev/null
			fi
			sql "CHECKPOINT"
			l0=$(lsn)
			case $m in
				delete) ms=$(timed <<<"DELETE FROM $t WHERE ts < now() - interval '1 hour';" | sed -n 1p) ;;
				# what a pg_cron job would run, each batch its own transaction,
				# looped in the server so that no client round trip is counted
				pgcron) ms=$(timed <<SQL | sed -n 1p
DO \$\$
DECLARE n bigint;
BEGIN
	LOOP
		DELETE FROM $t WHERE id IN (SELECT id FROM $t WHERE ts < now() - interval '1 hour' ORDER BY ts LIMIT 10000);
		GET DIAGNOSTICS n = ROW_COUNT;
		COMMIT;
		EXIT WHEN n = 0;
	END LOOP;
END \$\$;
SQL
					) ;;
				runner) ms=$(timed <<<"SELECT ttl_runner();" | sed -n 1p) ;;
				# from enabling the worker to the log line of the pass that
				# deleted the rows (its batch that finds nothing left), read
				# every 200 ms: a poll of the policy's counter every 50 ms
				# also looked for the oldest expired row each time, walking
				# the dead index entries on the cores the drain runs on
				worker|alone) from=$(stat -c %s "$dir/log")
					t0=$(sql "SELECT extract(epoch FROM clock_timestamp())")
					sql "ALTER SYSTEM SET ttl_index.enabled = on" >/dev/null
					sql "SELECT pg_reload_conf()" >/dev/null
					ms=$(wait_pass 1 "$t" "$expired" "$t0" "$from")
					worker off ;;
			esac
			l1=$(lsn)
			printf '%s\t%s\t%s\t%s\n' "$r" "$m" "$(calc "$ms / 1000")" "$(walbytes "$l0" "$l1")" >> "$out/s1_runs.tsv"
			n=$(sql "SELECT count(*) FROM $t")
			[ "$n" = "$live" ] || die "scenario 1: $t has $n rows left after $m, expected $live"
			# each method's policy goes once it is measured: left, the
			# table ttl_runner() drained, whose 2.4M dead index entries the
			# worker had never walked, made the next worker pass walk them
			# (0.2-0.3 s, on the one core of "alone")
			case $m in
				runner|worker|alone) sql "SELECT ttl_drop_index('$t', 'ts')" >/dev/null ;;
			esac
		done
		# the worker's own pass time, from its log line
		for m in alone worker; do
			t=s1_${m}_r$r
			read -r n ms < <(grep -o "ttl_index: deleted [0-9]* rows from public\.$t in [0-9]* ms" "$dir/log" |
				awk '{n += $3; ms += $8} END {print n + 0, ms + 0}')
			[ "$n" = "$expired" ] || die "scenario 1: the worker's log lines for $t count $n rows, expected $expired"
			printf '%s\t%s\t%s\t%s\n' "$r" ${m}_pass "$(calc "$ms / 1000")" "" >> "$out/s1_runs.tsv"
		done
		for m in delete pgcron runner alone worker; do sql "DROP TABLE s1_${m}_r$r"; done
	done
	worker on
	sql "ALTER SYSTEM RESET ttl_index.max_parallel_workers" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null

	local label secs wal ref rate ratio walrow list
	declare -A lab=([delete]="one plain DELETE ... WHERE ts < cutoff"
		[pgcron]="pg_cron pattern (LIMIT 10000, repeated)"
		[runner]="SELECT ttl_runner()"
		[alone_pass]="worker alone: its pass (log line)"
		[alone]="worker alone: wall, enable -> end of pass"
		[worker_pass]="worker + helpers: pass (log line)"
		[worker]="worker + helpers: wall"
	)
	declare -A short=([delete]="plain DELETE" [pgcron]="pg_cron pattern" [runner]="ttl_runner()"
		[alone_pass]="worker alone (pass)" [alone]="worker alone (wall)"
		[worker_pass]="worker + helpers (pass)" [worker]="worker + helpers (wall)")
	ref=$(awk -F'\t' '$2 == "delete" {print $3}' "$out/s1_runs.tsv" | median)
	printf '%-40s %9s %12s %8s %8s  %s\n' method seconds rows/s "vs DEL" "WAL/row" "runs (s)"
	printf 'method\tlabel\tseconds\trows_per_s\tratio\twal_per_row\tshort\n' > "$out/s1_throughput.tsv"
	for m in delete pgcron runner alone_pass alone worker_pass worker; do
		list=$(awk -F'\t' -v m=$m '$2 == m {printf "%s ", $3}' "$out/s1_runs.tsv")
		secs=$(median <<<"$list")
		# the worker's pass wrote the WAL of its wall-time run
		wal=$(awk -F'\t' -v m=${m%_pass} '$2 == m {print $4}' "$out/s1_runs.tsv" | median)
		rate=$(calc "$expired / $secs" 0)
		ratio=$(calc "$ref / $secs" 2)
		walrow=$(calc "$wal / $expired" 1)
		printf '%-40s %9.3f %12s %8s %8s  %s\n' "${lab[$m]}" "$secs" "$(fmt "$rate")" "$ratio" "$walrow" "$list"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "${lab[$m]}" "$secs" "$rate" "$ratio" "$walrow" "${short[$m]}" >> "$out/s1_throughput.tsv"
	done
	echo "  (WAL/row: bytes of WAL per deleted row; the worker's pass has the same WAL as its wall-time run)"
	echo "  target: none (reference figures)"
	local wp wr
	wp=$(awk -F'\t' '$1 == "worker_pass" {print $5}' "$out/s1_throughput.tsv")
	wr=$(awk -F'\t' '$1 == "worker" {print $5}' "$out/s1_throughput.tsv")
	summary_row 1 "worker vs plain DELETE (pass / wall)" "${wp}x / ${wr}x" none reference
	target 1 "worker + helpers vs plain DELETE (wall)" "${wr}x" ">= 1.5x" "$(le 1.5 "$wr")"
}

# ---------------------------------------------------------------- 2
s2() {
	local rate=5000 secs=$s2_secs p50 p99 max n tps
	echo
	echo "== 2. expiry lag: pgbench inserts about $(fmt $rate) rows/s (10 per transaction), expiring 1-4 s later; age of the oldest expired row every 200 ms for $secs s"
	Q >/dev/null <<'SQL'
CREATE TABLE s2_lag (id bigserial PRIMARY KEY, expires_at timestamptz NOT NULL, payload text);
SELECT ttl_create_index('s2_lag', 'expires_at', 0);
SQL
	cat > "$dir/s2.sql" <<'SQL'
INSERT INTO s2_lag (expires_at, payload)
  SELECT now() + (1 + random() * 3) * interval '1 second', repeat('p', 40) FROM generate_series(1, 10);
SQL
	$PGBIN/pgbench -n -h "$dir" -p $port -U postgres -c 2 -j 2 -R $((rate / 10)) -T $((secs + 1)) \
		-f "$dir/s2.sql" bench > "$dir/s2.pgbench" 2>&1 &
	local pgb=$!
	sql "CALL bench_sample_lag(2, '{s2_lag}', $secs)"
	wait $pgb || { cat "$dir/s2.pgbench"; die "scenario 2: pgbench failed"; }
	sql "COPY (SELECT round(t::numeric, 3), round(age::numeric, 3) FROM bench_sample WHERE scenario = 2 ORDER BY t) TO STDOUT" |
		{ printf 't_s\tlag_s\n'; cat; } > "$out/s2_lag.tsv"
	n=$(($(wc -l < "$out/s2_lag.tsv") - 1))
	p50=$(tail -n +2 "$out/s2_lag.tsv" | cut -f2 | pct 50)
	p99=$(tail -n +2 "$out/s2_lag.tsv" | cut -f2 | pct 99)
	max=$(tail -n +2 "$out/s2_lag.tsv" | cut -f2 | pct 100)
	tps=$(awk '/^tps = / {print $3; exit}' "$dir/s2.pgbench")
	[ "$n" -ge $((secs * 4)) ] || die "scenario 2: only $n samples in $secs s"
	[ "$(le "$max" 30)" = 1 ] || die "scenario 2: a lag of $max s: the worker is not deleting"
	[ "$(sql "SELECT rows_deleted > 0 FROM ttl_index_stats WHERE table_name = 's2_lag'::regclass")" = t ] ||
		die "scenario 2: the worker deleted nothing"
	printf '%-34s %s\n' "inserted rows/s (pgbench)" "$(fmt "$(calc "$tps * 10" 0)")"
	printf '%-34s %s\n' "deleted by the worker" "$(fmt "$(sql "SELECT rows_deleted FROM ttl_index_stats WHERE table_name = 's2_lag'::regclass")")"
	printf '%-34s %s\n' "samples" "$n"
	printf '%-34s %8s %8s %8s\n' "lag (s)" p50 p99 max
	printf '%-34s %8s %8s %8s\n' "age of oldest expired row" "$p50" "$p99" "$max"
	printf 'p50\tp99\tmax\tsamples\tinserted_rows_per_s\n%s\t%s\t%s\t%s\t%s\n' "$p50" "$p99" "$max" "$n" "$(calc "$tps * 10" 0)" > "$out/s2_summary.tsv"
	target 2 "expiry lag p99 (s)" "$p99" "<= 1" "$(le "$p99" 1)"
	target 2 "expiry lag max (s)" "$max" "<= 2" "$(le "$max" 2)"
	sql "DROP TABLE s2_lag"
}

# ---------------------------------------------------------------- 3 and 7
s3() {
	local rows=$s3_rows i tabs="" pid memlog="$dir/s3_mem" n drain p99 max ndrain first last
	echo
	echo "== 3. fairness: a backlog of $(fmt $rows) expired rows plus $s3_small small tables whose rows expire 2 s after insertion"
	echo "   (10 rows in each, every second from enabling the worker on); lag of the small tables every 200 ms while the backlog drains"
	[[ " $only " == *" 7 "* ]] && echo "   (scenario 7 samples the worker's memory every 500 ms meanwhile)"
	worker off
	Q >/dev/null <<SQL
CREATE TABLE s3_big (id bigserial, expires_at timestamptz NOT NULL, payload text);
INSERT INTO s3_big (expires_at, payload)
  SELECT timestamptz '$base' - interval '1 day' + g * interval '1 ms', rpad(g::text, 40, '.') FROM generate_series(1, $rows) g;
INSERT INTO s3_big (expires_at, payload) SELECT timestamptz '$base' + interval '1 day', 'live' FROM generate_series(1, 1000);
CREATE INDEX s3_big_expires_at ON s3_big (expires_at);
SELECT ttl_create_index('s3_big', 'expires_at', 0);
VACUUM ANALYZE s3_big;
SQL
	for i in $(seq -w 1 $s3_small); do
		sql "CREATE TABLE s3_small_$i (id bigserial, expires_at timestamptz NOT NULL); SELECT ttl_create_index('s3_small_$i', 'expires_at', 0)" >/dev/null
		tabs="$tabs${tabs:+,}s3_small_$i"
	done
	sql "CHECKPOINT"
	pid=$(worker_pid)
	: > "$memlog"
	(
		t0=$(date +%s%N)
		while [ -d /proc/$pid ]; do
			awk -v t="$(( ($(date +%s%N) - t0) / 1000000 ))" '/^VmRSS/ {r = $2} /^RssAnon/ {a = $2} END {print t / 1000 "\t" r "\t" a}' /proc/$pid/status >> "$memlog" 2>/dev/null || break
			sleep 0.5
		done
	) &
	local mem=$!
	# the small tables' rows come from ordinary short client sessions, as an
	# application's would: the worker notices new rows in a table it found
	# empty through the table's statistics counters, which a session
	# reports when it goes idle or exits, not while it runs a procedure
	cat > "$dir/s3_refill.sql" <<SQL
$(for i in $(seq -w 1 $s3_small); do echo "INSERT INTO s3_small_$i (expires_at) SELECT now() + interval '2 s' FROM generate_series(1, 10);"; done)
SQL
	worker on
	(
		t0=$(date +%s%N)
		for k in $(seq 1 $((s3_secs + 1))); do
			Q -f "$dir/s3_refill.sql" >/dev/null
			sleep "$(awk -v t="$(( t0 + k * 1000000000 - $(date +%s%N) ))" 'BEGIN {printf "%.3f", (t > 0 ? t / 1e9 : 0)}')"
		done
	) &
	local refill=$!
	if [ $smoke = 1 ]; then
		# the tiny backlog is gone at once: sample for the whole time
		sql "CALL bench_sample_lag(3, '{$tabs}', $s3_secs, 's3_big')"
	else
		sql "CALL bench_sample_lag(3, '{$tabs}', $s3_secs, 's3_big', $rows)"
	fi
	kill $refill 2>/dev/null || true
	wait $refill 2>/dev/null || true
	kill $mem 2>/dev/null || true
	wait $mem 2>/dev/null || true
	n=$(deleted s3_big)
	[ "$n" -ge "$rows" ] || die "scenario 3: the worker deleted $n of $rows rows of the backlog in $s3_secs s"
	sql "COPY (SELECT round(t::numeric, 3), tbl, round(age::numeric, 3), big_deleted FROM bench_sample WHERE scenario = 3 ORDER BY t, tbl) TO STDOUT" |
		{ printf 't_s\ttable\tlag_s\tbig_deleted\n'; cat; } > "$out/s3_fairness.tsv"
	sql "COPY (SELECT round(t::numeric, 3), round(max(age)::numeric, 3), max(big_deleted) FROM bench_sample WHERE scenario = 3 GROUP BY t ORDER BY t) TO STDOUT" |
		{ printf 't_s\tmax_lag_s\tbig_deleted\n'; cat; } > "$out/s3_lag_max.tsv"
	# the samples that count: taken once the first small rows had expired
	# (2 s) and while the backlog was still draining (its counter below the
	# total, and still climbing)
	local ok dsec
	dsec=$(awk -F'\t' -v total=$rows 'NR > 1 && $4 >= total {print $1; exit}' "$out/s3_fairness.tsv")
	drain=$(awk -F'\t' -v total=$rows 'NR > 1 && $4 < total && $1 >= 2' "$out/s3_fairness.tsv")
	read -r first last < <(awk -F'\t' 'NF {if (n++ == 0 || $4 < lo) lo = $4; if ($4 > hi) hi = $4} END {print lo + 0, hi + 0}' <<<"$drain")
	ndrain=$(grep -c . <<<"$drain" || true)
	printf '%-46s %s\n' "backlog deleted (counter)" "$(fmt "$n")"
	printf '%-46s %s\n' "backlog drained after (s, from enabling)" "${dsec:-not within the run}"
	grep -o "ttl_index: deleted [0-9]* rows from public\.s3_big in [0-9]* ms" "$dir/log" | tail -1 | sed 's/^/worker log: /' || true
	if [ $smoke = 1 ]; then
		echo "  (smoke: the tiny backlog is gone at once; statistics over every sample from 2 s on)"
		drain=$(awk -F'\t' 'NR > 1 && $1 >= 2' "$out/s3_fairness.tsv")
		ndrain=$(grep -c . <<<"$drain" || true)
		ok=$(le "$(cut -f3 <<<"$drain" | pct 100)" 2.5)
	elif [ "$ndrain" -lt "$s3_small" ] || [ "$last" -le "$first" ]; then
		echo "  the backlog drained before the first small rows expired: fairness NOT MEASURED (use a bigger backlog)"
		drain=$(awk -F'\t' 'NR > 1 && $1 >= 2' "$out/s3_fairness.tsv")
		ok=na
	else
		printf '%-46s %s\n' "small rows expired during the drain" "from 2.0 s to ${dsec:-the end} s: $((ndrain / s3_small)) samples per table, backlog counter $(fmt "$first") -> $(fmt "$last")"
		ok=$(le "$(cut -f3 <<<"$drain" | pct 100)" 2.5)
	fi
	p99=$(cut -f3 <<<"$drain" | pct 99)
	max=$(cut -f3 <<<"$drain" | pct 100)
	printf '%-46s %s (%s tables)\n' "samples counted" "$ndrain" "$s3_small"
	printf '%-46s %8s %8s\n' "small tables: age of oldest expired row (s)" p99 max
	printf '%-46s %8s %8s\n' "" "$p99" "$max"
	printf '%-20s %8s %8s\n' table p99 max > "$dir/s3_per_table"
	for i in $(seq -w 1 $s3_small); do
		printf '%-20s %8s %8s\n' s3_small_$i "$(awk -F'\t' -v t=s3_small_$i '$2 == t {print $3}' <<<"$drain" | pct 99)" \
			"$(awk -F'\t' -v t=s3_small_$i '$2 == t {print $3}' <<<"$drain" | pct 100)" >> "$dir/s3_per_table"
	done
	echo "  worst 3 small tables:"
	tail -n +2 "$dir/s3_per_table" | sort -k3 -g -r | sed -n '1,3s/^/    /p'
	printf 'p99\tmax\tsamples\tbacklog_rows\tbacklog_drained_s\n%s\t%s\t%s\t%s\t%s\n' "$p99" "$max" "$ndrain" "$rows" "${dsec:-}" > "$out/s3_summary.tsv"
	target 3 "small tables' lag during a drain, max (s)" "$max" "<= 2.5" "$ok"

	if [[ " $only " == *" 7 "* ]]; then
		local rssmax anonmax nmem
		{ printf 't_s\tvmrss_kb\trssanon_kb\n'; cat "$memlog"; } > "$out/s7_memory.tsv"
		nmem=$(grep -c . "$memlog" || true)
		[ "$nmem" -ge 1 ] || die "scenario 7: no memory sample of worker $pid"
		rssmax=$(cut -f2 "$memlog" | pct 100)
		anonmax=$(cut -f3 "$memlog" | pct 100)
		echo
		echo "== 7. memory of worker $pid while it drained the backlog ($nmem samples)"
		printf '%-30s %10s %10s\n' "" "VmRSS" "RssAnon"
		printf '%-30s %7s MB %7s MB\n' "first sample" "$(calc "$(head -1 "$memlog" | cut -f2) / 1024" 1)" "$(calc "$(head -1 "$memlog" | cut -f3) / 1024" 1)"
		printf '%-30s %7s MB %7s MB\n' "max" "$(calc "$rssmax / 1024" 1)" "$(calc "$anonmax / 1024" 1)"
		echo "  (VmRSS includes the shared buffers the worker touched; RssAnon is its private memory)"
		printf 'vmrss_max_kb\trssanon_max_kb\tsamples\n%s\t%s\t%s\n' "$rssmax" "$anonmax" "$nmem" > "$out/s7_summary.tsv"
		target 7 "worker RssAnon while draining (MB)" "$(calc "$anonmax / 1024" 1)" "< 64" "$(le "$anonmax" $((64 * 1024)))"
	fi
	worker on
	sql "DROP TABLE s3_big"
	for i in $(seq -w 1 $s3_small); do sql "DROP TABLE s3_small_$i"; done
}

# ---------------------------------------------------------------- 4
# Each run: pgbench for s4_secs while the worker is switched on and off
# every s4_win seconds (off for the first window, a warm-up left out), so
# that the worker's windows and the idle ones take their turns through the
# same stretch of time on the same backlog.  The machine's own swings (its
# p99 moves by 10% from one 20 s run to the next with the worker idle) then
# fall on both alike.
#
# A switch is ALTER SYSTEM and a SIGHUP to the ttl_index processes alone,
# not pg_reload_conf().  A reload makes every pgbench session read the
# configuration files again: in the first 10 ms after each switch their
# p99 was about 5 ms, against 1.2 ms in the rest of a window, in the idle
# windows and the worker's alike, so that hundredth of every window set
# much of the p99 the scenario compares.  With only our processes signalled
# the first 10 ms still carry the switch's own session (its connection,
# ALTER SYSTEM's file write): about 3 ms in both kinds of window.
#
# s4_run LABEL: one run; the switches go to $dir/s4_LABEL.toggles ("epoch
# on|off"), and the counter is watched meanwhile (bench_event: when it
# reached the whole backlog, if it did)
s4_run() {
	local label=$1 pgb w state=off t pids
	sql "CHECKPOINT"
	rm -f "$dir/s4_$label".*
	: > "$dir/s4_$label.toggles"
	$PGBIN/pgbench -n -h "$dir" -p $port -U postgres -c 4 -j 2 -T $s4_secs --random-seed=4242 \
		--log --log-prefix="$dir/s4_$label" -f "$dir/s4.sql" bench > "$dir/s4_$label.out" 2>&1 &
	pgb=$!
	sql "CALL bench_open('s4_$label', 's4_app')"
	# polled every 250 ms, in the worker's windows and the idle ones alike
	sql "CALL bench_wait_deleted('s4_$label', 's4_app', $s4_rows, $s4_secs, 0.25)" &
	w=$!
	sleep "$s4_win"
	while kill -0 "$pgb" 2>/dev/null; do
		state=$([ $state = on ] && echo off || echo on)
		# the setting is read by our processes alone (see the top of s4)
		pids=$($psql_base -d bench -c "ALTER SYSTEM SET ttl_index.enabled = $state" \
			-c "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE backend_type LIKE 'ttl_index %'" | tail -1)
		[ -n "$pids" ] || die "scenario 4: no ttl_index process to switch $state"
		# one of them (a helper) may have left meanwhile
		kill -HUP $pids 2>/dev/null || true
		t=$(date +%s.%N)
		echo "$t $state" >> "$dir/s4_$label.toggles"
		sleep "$s4_win"
	done
	wait $pgb || { cat "$dir/s4_$label.out"; die "scenario 4: pgbench failed"; }
	wait $w
	worker off
	compgen -G "$dir/s4_$label.[0-9]*" >/dev/null || die "scenario 4: no pgbench transaction log"
}

# s4_split LABEL: the run's transactions by the worker's state when each
# ended: latencies in ms to $dir/s4_on (its windows up to when it had
# deleted the whole backlog, if it did: later it has nothing to do) and
# $dir/s4_off (every idle window), and the idle windows taken alternately
# to $dir/s4_offa and $dir/s4_offb (the noise: two sets of idle windows
# against each other).  Every transaction also goes to $dir/s4_tx as
# "second_of_run latency_ms worker_on(1|0)", for the per-second series.
# Prints the seconds of each: "on off offa offb"
s4_split() {
	local until
	until=$(sql "SELECT coalesce(extract(epoch FROM finished), 'Infinity') FROM bench_event
	               WHERE label = 's4_$1' AND reached")
	rm -f "$dir"/s4_on "$dir"/s4_off "$dir"/s4_offa "$dir"/s4_offb "$dir"/s4_tx
	touch "$dir"/s4_on "$dir"/s4_off "$dir"/s4_offa "$dir"/s4_offb "$dir"/s4_tx
	cat "$dir/s4_$1".[0-9]* | awk '{printf "%.6f %s\n", $5 + $6 / 1e6, $3 / 1000}' | sort -g |
		awk -v tf="$dir/s4_$1.toggles" -v until="${until:-Infinity}" -v d="$dir" '
			BEGIN {
				while ((getline l < tf) > 0) { split(l, f, " "); n++; t[n] = f[1]; st[n] = f[2] }
				if (until == "Infinity") until = 1e18
			}
			NR == 1 { t0 = $1 }
			{
				while (k < n && t[k + 1] <= $1) k++
				print int($1 - t0), $2, ((k > 0 && st[k] == "on") ? 1 : 0) > (d "/s4_tx")
				if (k == 0) next
				last = $1
				if (st[k] == "on") { if ($1 <= until) print $2 > (d "/s4_on") }
				else { print $2 > (d "/s4_off"); print $2 > (d "/s4_off" (k % 4 == 0 ? "a" : "b")) }
			}
			END {
				for (i = 1; i <= n; i++) {
					hi = i < n ? t[i + 1] : last
					if (st[i] == "on" && hi > until) hi = until
					if (hi <= t[i]) continue
					s[st[i]] += hi - t[i]
					if (st[i] == "off") s["off" (i % 4 == 0 ? "a" : "b")] += hi - t[i]
				}
				printf "%.3f %.3f %.3f %.3f\n", s["on"], s["off"], s["offa"], s["offb"]
			}'
}

# s4_stat FILE SECONDS: "tps p99_ms avg_ms count" of the latencies in FILE
s4_stat() {
	if [ ! -s "$1" ] || [ "$(calc "($2 > 0)" 0)" = 0 ]; then echo "nan nan nan 0"; return; fi
	echo "$(calc "$(wc -l < "$1") / $2" 1) $(pct 99 < "$1")" \
		"$(awk '{s += $1} END {printf "%.3f", s / NR}' "$1") $(wc -l < "$1")"
}

s4() {
	local rows=$s4_rows i
	echo
	echo "== 4. foreground impact: pgbench -c 4 -j 2 for $s4_secs s per run (INSERT a row expiring in 1 day; SELECT a recent id), same seed;"
	echo "   before every run the table is topped up to $(fmt $rows) expired rows and vacuumed.  Within each run the worker is switched"
	echo "   on and off every $s4_win s (after a first idle window, left out), and the transactions that ended while it was on (up to"
	echo "   the end of its drain) are compared with those that ended while it was off.  $s4_runs runs at its defaults (the verdict"
	echo "   takes the median), then one at the server's CPU priority (worker_nice = 0), and with yielding off (busy_share = 100)"
	echo "   a full-speed drain and the two rate limits.  Noise: the idle windows taken alternately, one half against the other."
	echo "   (autovacuum off on this table, so that it does not run in one window only)"
	worker off
	Q >/dev/null <<SQL
CREATE TABLE s4_app (id bigserial PRIMARY KEY, expires_at timestamptz NOT NULL, payload text) WITH (autovacuum_enabled = off);
INSERT INTO s4_app (expires_at, payload) SELECT now() + interval '1 day', repeat('a', 40) FROM generate_series(1, 100000);
SELECT ttl_create_index('s4_app', 'expires_at', 0);
VACUUM ANALYZE s4_app;
SQL
	cat > "$dir/s4.sql" <<'SQL'
\set back random(0, 999)
INSERT INTO s4_app (expires_at, payload) VALUES (now() + interval '1 day', repeat('a', 40)) RETURNING id \gset
SELECT payload FROM s4_app WHERE id = :id - :back;
SQL
	# every run starts from the same state: the backlog topped up to $rows,
	# the rows deleted by the run before vacuumed away
	s4_load() {
		worker off
		Q >/dev/null <<SQL
INSERT INTO s4_app (expires_at, payload)
  SELECT timestamptz '$base' - interval '1 day' + g * interval '1 ms', rpad(g::text, 40, '.')
    FROM generate_series(1, $rows - (SELECT count(*) FROM s4_app WHERE expires_at < now())) g;
VACUUM ANALYZE s4_app;
SQL
	}
	s4_setting() {  # NAME VALUE|default
		if [ "$2" = default ]; then sql "ALTER SYSTEM RESET $1" >/dev/null
		else sql "ALTER SYSTEM SET $1 = $2" >/dev/null; fi
	}
	local runs=""
	for i in $(seq 1 "$s4_runs"); do
		s4_load; s4_run "defaults$i"; runs="$runs defaults$i"
	done
	s4_setting ttl_index.worker_nice 0
	s4_load; s4_run nice0
	s4_setting ttl_index.worker_nice default
	s4_setting ttl_index.busy_share 100
	s4_load; s4_run full
	s4_setting ttl_index.rate_limit 20000
	s4_load; s4_run rate
	s4_setting ttl_index.rate_limit default
	sql "SELECT ttl_create_index('s4_app', 'expires_at', 0, rate_limit => 20000)" >/dev/null
	s4_load; s4_run prate
	sql "SELECT ttl_alter_index('s4_app', 'expires_at', reset => '{rate_limit}')" >/dev/null
	s4_setting ttl_index.busy_share default
	worker on
	runs="$runs nice0 full rate prate"

	local a on off offa offb deleted ton pon aon non toff poff aoff noff ta pa tb pb d r na nb nd nr label
	local drops="" rises="" ndrops="" nrises="" rates=""
	rise() { calc "($1 - $2) / $2 * 100" 1; }    # NEW BASE: % above the base
	drop() { calc "($2 - $1) / $2 * 100" 1; }    # NEW BASE: % below the base
	# per second of every run: transactions, p99 and whether the worker
	# was on for most of that second, for a look at how a run went
	printf 'run\tsecond\ttransactions\tp99_ms\tworker\n' > "$out/s4_series.tsv"
	printf '%-44s %9s %9s %7s %7s %7s %7s %10s  %s\n' run "on (s)" "off (s)" "TPS on" "off" "p99 on" "off" "purged/s" "TPS / p99, on vs off"
	printf 'run\ton_s\toff_s\ttps_on\ttps_off\tp99_on_ms\tp99_off_ms\tavg_on_ms\tavg_off_ms\tpurged_rows_per_s\ttps_drop_pct\tp99_rise_pct\tnoise_tps_pct\tnoise_p99_pct\n' > "$out/s4_impact.tsv"
	for a in $runs; do
		read -r on off offa offb < <(s4_split "$a")
		read -r ton pon aon non < <(s4_stat "$dir/s4_on" "$on")
		read -r toff poff aoff noff < <(s4_stat "$dir/s4_off" "$off")
		[ "$non" -gt 0 ] && [ "$noff" -gt 0 ] || die "scenario 4: run $a has no transaction with the worker on, or none with it off"
		deleted=$(sql "SELECT deleted FROM bench_event WHERE label = 's4_$a'")
		[ "$deleted" -gt 0 ] || die "scenario 4: the worker deleted nothing while pgbench ran (run $a)"
		d=$(drop "$ton" "$toff"); r=$(rise "$pon" "$poff")
		read -r ta pa _ na < <(s4_stat "$dir/s4_offa" "$offa")
		read -r tb pb _ nb < <(s4_stat "$dir/s4_offb" "$offb")
		nd=""; nr=""
		if [ "$na" -gt 0 ] && [ "$nb" -gt 0 ]; then nd=$(drop "$ta" "$tb"); nr=$(rise "$pa" "$pb"); fi
		case $a in
			defaults*) label="worker at its defaults (${a#defaults})"
				drops="$drops $d"; rises="$rises $r"; rates="$rates $(calc "$deleted / $on" 0)"
				[ -z "$nd" ] || { ndrops="$ndrops ${nd#-}"; nrises="$nrises ${nr#-}"; } ;;
			nice0) label="worker_nice = 0, otherwise defaults" ;;
			full) label="busy_share = 100: full speed" ;;
			rate) label="busy_share = 100, ttl_index.rate_limit 20000" ;;
			prate) label="busy_share = 100, policy rate_limit 20000" ;;
		esac
		eval "s4_${a}_tps=\$d s4_${a}_p99=\$r s4_${a}_on=\$on"
		printf '%-44s %9.1f %9.1f %7.0f %7.0f %7.3f %7.3f %10s  %+.1f%% / %+.1f%%\n' "$label" "$on" "$off" "$ton" "$toff" \
			"$pon" "$poff" "$(fmt "$(calc "$deleted / $on" 0)")" "$(calc "-($d)" 1)" "$r"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$on" "$off" "$ton" "$toff" "$pon" "$poff" \
			"$aon" "$aoff" "$(calc "$deleted / $on" 0)" "$d" "$r" "$nd" "$nr" >> "$out/s4_impact.tsv"
		sort -k1,1n -k2,2g "$dir/s4_tx" |
			awk -v r="$a" '
				{ s = $1; c[s]++; v[s, c[s]] = $2; w[s] += $3 }
				END {
					for (s = 0; s in c; s++)
						printf "%s\t%d\t%d\t%.3f\t%s\n", r, s, c[s], v[s, int(c[s] * 0.99 + 0.999999)], (w[s] * 2 > c[s] ? "on" : "off")
				}' >> "$out/s4_series.tsv"
	done
	local mdrop mrise noise_t noise_p
	mdrop=$(median <<<"$drops"); mrise=$(median <<<"$rises")
	noise_t=$(tr ' ' '\n' <<<"$ndrops" | awk 'NF && $1 > m {m = $1} END {printf "%.1f", m}')
	noise_p=$(tr ' ' '\n' <<<"$nrises" | awk 'NF && $1 > m {m = $1} END {printf "%.1f", m}')
	echo "  at its defaults the worker purged $(fmt "$(median <<<"$rates")") rows per second on (median) while pgbench ran; it yields while others write"
	echo "  TPS change of each run at defaults, on vs off:$(for a in $drops; do printf ' %+.1f%%' "$(calc "-($a)" 1)"; done);" \
		"p99:$(for a in $rises; do printf ' %+.1f%%' "$a"; done)"
	echo "  noise: within the runs at defaults, one half of the idle windows against the other differs by up to ${noise_t}% in TPS" \
		"(median $(median <<<"$ndrops")%) and ${noise_p}% in p99 (median $(median <<<"$nrises")%)"
	echo "  at the server's CPU priority (worker_nice = 0): TPS $(printf '%+.1f' "$(calc "-($s4_nice0_tps)" 1)")%, p99 $(printf '%+.1f' "$s4_nice0_p99")%"
	echo "  yielding off (busy_share = 100): full-speed drain ($(calc "$s4_full_on" 1) s on) TPS $(printf '%+.1f' "$(calc "-($s4_full_tps)" 1)")%, p99 $(printf '%+.1f' "$s4_full_p99")%;" \
		"ttl_index.rate_limit = 20000: TPS $(printf '%+.1f' "$(calc "-($s4_rate_tps)" 1)")%, p99 $(printf '%+.1f' "$s4_rate_p99")%;" \
		"policy rate_limit => 20000: TPS $(printf '%+.1f' "$(calc "-($s4_prate_tps)" 1)")%, p99 $(printf '%+.1f' "$s4_prate_p99")%"
	target 4 "TPS drop, worker at defaults (%)" "$mdrop" "<= 5" "$(le "$mdrop" 5)" "median of $s4_runs; noise ${noise_t}%"
	target 4 "p99 latency rise, worker at defaults (%)" "$mrise" "<= 10" "$(le "$mrise" 10)" "median of $s4_runs; noise ${noise_p}%"
	sql "DROP TABLE s4_app"
}

# ---------------------------------------------------------------- 5
# worker_memory PID: the process's memory contexts in bytes, the "Grand
# total" line pg_log_backend_memory_contexts() makes it log (its private
# memory; RSS counts the shared buffers it touched as well)
worker_memory() {
	local from i got=""
	from=$(($(stat -c %s "$dir/log") + 1))
	sql "SELECT pg_log_backend_memory_contexts($1)" >/dev/null
	for i in $(seq 1 100); do
		got=$(tail -c +"$from" "$dir/log" | sed -n "s/.*\[$1\] LOG:  Grand total: \([0-9]*\) bytes.*/\1/p" | head -1)
		[ -n "$got" ] && { echo "$got"; return 0; }
		sleep 0.1
	done
	echo 0
}

s5() {
	local n have=0 secs=$s5_secs pid a0 a1 l0 l1 lpid pct_w pct_l goal mem
	echo
	echo "== 5. idle cost: $(sed 's/ / and /' <<<"$s5_sizes") policies, one table each, nothing expiring (3 rows per table, expiring in 1 day); worker CPU over $secs s"
	worker on
	printf '%10s %-30s %10s %12s\n' policies process "CPU ticks" "% of a core"
	printf 'policies\tseconds\tworker_ticks\tworker_pct\tlauncher_pct\tworker_memory_bytes\n' > "$out/s5_idle.tsv"
	for n in $s5_sizes; do
		sql "DO \$\$ BEGIN FOR i IN $((have + 1))..$n LOOP
			EXECUTE format('CREATE TABLE s5_%s (id int, expires_at timestamptz NOT NULL)', i);
			EXECUTE format('INSERT INTO s5_%s SELECT g, now() + interval ''1 day'' FROM generate_series(1, 3) g', i);
			PERFORM ttl_create_index(format('s5_%s', i)::regclass, 'expires_at', 0);
			IF i % 100 = 0 THEN COMMIT; END IF;
		END LOOP; END \$\$"
		have=$n
		# let the worker read the new policies and settle
		sleep $([ $n -ge 10000 ] && echo 10 || echo 3)
		pid=$(worker_pid)
		lpid=$(sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl_index launcher'")
		a0=$(ticks "$pid"); l0=$(ticks "$lpid")
		sleep "$secs"
		a1=$(ticks "$pid"); l1=$(ticks "$lpid")
		pct_w=$(calc "($a1 - $a0) / $tck / $secs * 100" 2)
		pct_l=$(calc "($l1 - $l0) / $tck / $secs * 100" 2)
		printf '%10s %-30s %10s %12s\n' "$(fmt "$n")" "worker (pid $pid)" "$((a1 - a0))" "$pct_w"
		printf '%10s %-30s %10s %12s\n' "" "launcher (pid $lpid)" "$((l1 - l0))" "$pct_l"
		mem=$(worker_memory "$pid")
		printf '%10s %-30s %s MB, %s kB per policy\n' "" "worker memory contexts" \
			"$(calc "$mem / 1048576" 1)" "$(calc "$mem / 1024 / $n" 1)"
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$secs" "$((a1 - a0))" "$pct_w" "$pct_l" "$mem" >> "$out/s5_idle.tsv"
		# 1% of a core up to 1,000 policies, 5% at 10,000
		goal=$([ "$n" -gt 1000 ] && echo 5 || echo 1)
		target 5 "idle worker CPU, $(fmt "$n") policies (% core)" "$pct_w" "< $goal" "$(awk -v a="$pct_w" -v g=$goal 'BEGIN {print (a < g) ? 1 : 0}')"
	done
	echo "  ($tck ticks/s; utime + stime from /proc/PID/stat)"
	sql "DO \$\$ BEGIN FOR i IN 1..$have LOOP EXECUTE format('DROP TABLE s5_%s', i); IF i % 100 = 0 THEN COMMIT; END IF; END LOOP; END \$\$"
}

# ---------------------------------------------------------------- 6
s6() {
	local have=0 size rep ms res list med per prev_per="" ok=1 worst=1
	echo
	echo "== 6. scale of policies: one SELECT ttl_runner() over N due policies (10 expired rows each), worker disabled, median of $s6_reps"
	echo "   (max_locks_per_transaction = 1024 on this server: ttl_runner() holds each table's lock until it commits)"
	worker off
	sql "CREATE PROCEDURE s6_refill(n int) LANGUAGE plpgsql AS \$\$ BEGIN FOR i IN 1..n LOOP
		EXECUTE format('INSERT INTO s6_%s SELECT now() - interval ''1 hour'' FROM generate_series(1, 10)', i);
		IF i % 1000 = 0 THEN COMMIT; END IF; END LOOP; END \$\$"
	printf '%10s %12s %14s  %s\n' policies "ms/pass" "ms/policy" "runs (ms)"
	printf 'policies\tms_per_pass\tms_per_policy\n' > "$out/s6_scale.tsv"
	for size in $s6_sizes; do
		sql "DO \$\$ BEGIN FOR i IN $((have + 1))..$size LOOP
			EXECUTE format('CREATE TABLE s6_%s (ts timestamptz NOT NULL)', i);
			PERFORM ttl_create_index(format('s6_%s', i)::regclass, 'ts', 0);
			IF i % 500 = 0 THEN COMMIT; END IF;
		END LOOP; END \$\$"
		have=$size
		list=""
		for rep in $(seq 1 $s6_reps); do
			sql "CALL s6_refill($size)"
			res=$(timed <<<"SELECT ttl_runner();")
			ms=$(head -1 <<<"$res")
			[ "$(sed -n 2p <<<"$res")" = $((size * 10)) ] || die "scenario 6: ttl_runner() deleted $(sed -n 2p <<<"$res") rows over $size policies, expected $((size * 10))"
			list="$list$ms "
		done
		med=$(median <<<"$list")
		per=$(calc "$med / $size" 4)
		printf '%10s %12.1f %14s  %s\n' "$(fmt "$size")" "$med" "$per" "$list"
		printf '%s\t%s\t%s\n' "$size" "$med" "$per" >> "$out/s6_scale.tsv"
		# from 100 policies on, the per-policy cost must not grow (25% slack for noise)
		if [ -n "$prev_per" ] && [ "$size" -ge 100 ]; then
			worst=$(awk -v w="$worst" -v a="$per" -v b="$prev_per" 'BEGIN {r = a / b; print (r > w) ? r : w}')
		fi
		[ "$size" -ge 10 ] && prev_per=$per
	done
	worst=$(calc "$worst" 2)
	echo "  per-policy cost growth from one size to the next (from 10 policies on): at most ${worst}x"
	target 6 "per-policy cost growth (x per step)" "$worst" "<= 1.25" "$(le "$worst" 1.25)"
	worker on
	sql "DO \$\$ BEGIN FOR i IN 1..$have LOOP EXECUTE format('DROP TABLE s6_%s', i); IF i % 500 = 0 THEN COMMIT; END IF; END LOOP; END \$\$"
}

# ---------------------------------------------------------------- 8
# The dead index entries of rows the worker deleted cannot be removed (by
# VACUUM or by index scans marking them) while an older snapshot may still
# see the rows.  A pass that walked them from the start of the index each
# time would pay for all of them at every pass; this measures what the
# worker costs then, with a trickle of new rows expiring at the front.
s8() {
	local n secs=$s8_secs pid holder a0 a1 pct p99 max left trickle
	echo
	echo "== 8. dead entries held: N expired rows deleted by the worker while a long query holds the xmin horizon, then"
	echo "   10 rows a second expiring 1 s after insertion; the worker's CPU and the trickle's lag over $secs s"
	printf '%12s %12s %12s %10s %10s %10s\n' "dead rows" "CPU ticks" "% of a core" "lag p99" "lag max" "left"
	printf 'dead_rows\tseconds\tworker_ticks\tworker_pct\tlag_p99\tlag_max\n' > "$out/s8_dead.tsv"
	for n in $s8_sizes; do
		worker off
		Q >/dev/null <<SQL
CREATE TABLE s8_dead (id bigserial PRIMARY KEY, expires_at timestamptz NOT NULL, payload text) WITH (autovacuum_enabled = off);
INSERT INTO s8_dead (expires_at, payload)
  SELECT timestamptz '$base' - interval '1 day' + g * interval '1 ms', rpad(g::text, 40, '.') FROM generate_series(1, $n) g;
CREATE INDEX s8_dead_expires_at ON s8_dead (expires_at);
SELECT ttl_create_index('s8_dead', 'expires_at', 0);
VACUUM ANALYZE s8_dead;
SQL
		# the query that holds the horizon from before the rows are deleted
		$psql_base -d bench -c "SELECT pg_sleep(3600)" >/dev/null 2>&1 &
		holder=$!
		for _ in $(seq 1 100); do
			[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(3600)' AND backend_xmin IS NOT NULL")" = 1 ] && break
			sleep 0.1
		done
		sql "CALL bench_open('s8_$n', 's8_dead')"
		worker on
		sql "CALL bench_wait_deleted('s8_$n', 's8_dead', $n, 900)"
		[ "$(sql "SELECT reached FROM bench_event WHERE label = 's8_$n'")" = t ] ||
			die "scenario 8: the worker did not delete $n rows within 900 s"
		sleep 2
		# a short session a second, as an application's would
		(
			t0=$(date +%s%N)
			for k in $(seq 1 $((secs + 2))); do
				sql "INSERT INTO s8_dead (expires_at, payload) SELECT now() + interval '1 s', 'trickle' FROM generate_series(1, 10)" >/dev/null
				sleep "$(awk -v t="$(( t0 + k * 1000000000 - $(date +%s%N) ))" 'BEGIN {printf "%.3f", (t > 0 ? t / 1e9 : 0)}')"
			done
		) &
		trickle=$!
		pid=$(worker_pid)
		a0=$(ticks "$pid")
		# the trickle's lag, read through the primary key (the rows with ids
		# past the backlog), never through the index full of dead entries
		sql "CALL bench_sample_query(8, 's8_$n', 'SELECT coalesce(extract(epoch FROM clock_timestamp() - min(expires_at)), 0) FROM s8_dead WHERE id > $n AND expires_at < clock_timestamp()', $secs)"
		a1=$(ticks "$pid")
		kill $trickle 2>/dev/null || true
		wait $trickle 2>/dev/null || true
		pct=$(calc "($a1 - $a0) / $tck / $secs * 100" 2)
		p99=$(calc "$(sql "SELECT age FROM bench_sample WHERE scenario = 8 AND tbl = 's8_$n' AND t >= 2" | pct 99)" 3)
		max=$(calc "$(sql "SELECT age FROM bench_sample WHERE scenario = 8 AND tbl = 's8_$n' AND t >= 2" | pct 100)" 3)
		left=$(sql "SELECT count(*) FROM s8_dead WHERE id > $n AND expires_at < now() - interval '3 s'")
		sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(3600)'" >/dev/null
		wait $holder 2>/dev/null || true
		printf '%12s %12s %12s %10s %10s %10s\n' "$(fmt "$n")" "$((a1 - a0))" "$pct" "$p99" "$max" "$left"
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$secs" "$((a1 - a0))" "$pct" "$p99" "$max" >> "$out/s8_dead.tsv"
		target 8 "worker CPU, $(fmt "$n") dead entries (% core)" "$pct" "< 5" "$(awk -v a="$pct" 'BEGIN {print (a < 5) ? 1 : 0}')"
		target 8 "trickle lag p99, $(fmt "$n") dead (s)" "$p99" "<= 1" "$(le "$p99" 1)"
		sql "DROP TABLE s8_dead"
	done
	echo "  (lag: age of the oldest expired trickle row, every 200 ms, from 2 s on; left: expired trickle rows still there at the end)"
}

# ---------------------------------------------------------------- 9
# Keeping up: the application writes without pause (so the worker gives
# way) while its rows expire at about twice the giving-way pace.  Three
# phases of s9_secs each, on an emptied table: the worker off (the idle
# baseline of TPS and p99), ttl_index.keep_up = off (giving way as before:
# the backlog grows), keep_up on.  For each, pgbench's TPS and p99 from its
# per-transaction log, the age of the oldest expired row every 200 ms (its
# p50, p99, max, and its mean over the last 5 s against the first 5 s after
# the first 5 s: growing or not), and the worker's rates.
s9() {
	local rate=$s9_rate secs=$s9_secs phase n tps p99 l50 l99 lmax early late exp del sc
	local -A res
	echo
	echo "== 9. keeping up: pgbench -c 2 -j 2 writes without pause, $(fmt $rate) rows/s (100 per transaction) expiring 2 s later,"
	echo "   faster than the worker deletes while it gives way (busy_share 5); three phases of $secs s on an"
	echo "   emptied table: worker off (idle baseline), ttl_index.keep_up = off (giving way as before), keep_up on"
	Q >/dev/null <<'SQL'
CREATE TABLE s9_app (id bigserial PRIMARY KEY, expires_at timestamptz NOT NULL);
SELECT ttl_create_index('s9_app', 'expires_at', 0);
SQL
	echo "INSERT INTO s9_app (expires_at) SELECT now() + interval '2 s' FROM generate_series(1, 100);" > "$dir/s9.sql"
	printf 'phase	tps	p99_ms	lag_p50_s	lag_p99_s	lag_max_s	lag_early_s	lag_late_s	expiry_rate	delete_rate
' > "$out/s9_keepup.tsv"
	for phase in idle off on; do
		worker off
		sql "TRUNCATE s9_app" >/dev/null
		sql "SELECT ttl_index_stats_reset('s9_app')" >/dev/null
		case $phase in
			off) sql "ALTER SYSTEM SET ttl_index.keep_up = off" >/dev/null; worker on ;;
			on) sql "ALTER SYSTEM RESET ttl_index.keep_up" >/dev/null; worker on ;;
		esac
		case $phase in idle) sc=91 ;; off) sc=92 ;; *) sc=93 ;; esac
		rm -f "$dir"/s9_$phase.*
		$PGBIN/pgbench -n -h "$dir" -p $port -U postgres -c 2 -j 2 -R $((rate / 100)) -T $secs \
			--log --log-prefix="$dir/s9_$phase" -f "$dir/s9.sql" bench > "$dir/s9_$phase.out" 2>&1 &
		local pgb=$!
		sql "CALL bench_sample_lag($sc, '{s9_app}', $((secs - 1)))"
		wait $pgb || { cat "$dir/s9_$phase.out"; die "scenario 9: pgbench failed"; }
		cat "$dir/s9_$phase".[0-9]* | awk '{print $3 / 1000}' > "$dir/s9_lat"
		tps=$(awk '/^tps = / {printf "%.1f", $3; exit}' "$dir/s9_$phase.out")
		p99=$(pct 99 < "$dir/s9_lat")
		sql "COPY (SELECT round(age::numeric, 3) FROM bench_sample WHERE scenario = $sc ORDER BY t) TO STDOUT" > "$dir/s9_lag"
		n=$(wc -l < "$dir/s9_lag")
		l50=$(pct 50 < "$dir/s9_lag"); l99=$(pct 99 < "$dir/s9_lag"); lmax=$(pct 100 < "$dir/s9_lag")
		early=$(sql "SELECT coalesce(round(avg(age)::numeric, 3), 0) FROM bench_sample WHERE scenario = $sc AND t BETWEEN 5 AND 10")
		late=$(sql "SELECT coalesce(round(avg(age)::numeric, 3), 0) FROM bench_sample WHERE scenario = $sc AND t >= $((secs - 6))")
		exp=$(sql "SELECT round(expiry_rate) FROM ttl_index_stats WHERE table_name = 's9_app'::regclass")
		del=$(sql "SELECT round(delete_rate) FROM ttl_index_stats WHERE table_name = 's9_app'::regclass")
		res[$phase]="$tps $p99 $l50 $l99 $lmax $early $late $exp $del"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$phase" $tps $p99 $l50 $l99 $lmax $early $late $exp $del >> "$out/s9_keepup.tsv"
	done
	worker on
	sql "ALTER SYSTEM RESET ttl_index.keep_up" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
	printf '%-26s %9s %9s %8s %8s %8s %10s %10s %10s %10s\n' phase TPS "p99 ms" "lag p50" "lag p99" "lag max" "lag 5-10s" "lag end" "expire/s" "delete/s"
	for phase in idle off on; do
		read -r tps p99 l50 l99 lmax early late exp del <<<"${res[$phase]}"
		case $phase in
			idle) printf '%-26s %9s %9s %8s %8s %8s %10s %10s %10s %10s\n' "worker off (baseline)" $tps $p99 - - - - - - - ;;
			*) printf '%-26s %9s %9s %8s %8s %8s %10s %10s %10s %10s\n' "keep_up = $phase" $tps $p99 $l50 $l99 $lmax $early $late $(fmt $exp) $(fmt $del) ;;
		esac
	done
	read -r tps0 p990 _ <<<"${res[idle]}"
	read -r tps p99 l50 l99 lmax early late exp del <<<"${res[on]}"
	echo "  keep_up on against the baseline: TPS $(calc "($tps - $tps0) / $tps0 * 100" 1)%, p99 $(calc "($p99 - $p990) / $p990 * 100" 1)%"
	read -r _ _ _ _ offmax offearly offlate _ _ <<<"${res[off]}"
	echo "  keep_up off: lag $offearly s at 5-10 s, $offlate s at the end ($([ "$(le "$offlate" "$offearly")" = 1 ] && echo "not growing" || echo "growing"))"
	target 9 "keep-up lag max, keep_up on (s)" "$lmax" "<= 5" "$(le "$lmax" 5)"
	target 9 "keep-up lag at end, keep_up on (s)" "$late" "<= $(calc "2 * $early" 3) (2x at 5-10 s)" "$(le "$late" "$(calc "2 * $early" 3)")"
	sql "DROP TABLE s9_app"
}

# ---------------------------------------------------------------- 10
# s10_load TABLE SHAPE ROWS: one table of a shape, 80% of its rows expired
# (those with g % 5 <> 0), the others living a day or more; a primary key,
# a btree on the expiry column; vacuumed and analyzed.  The expiry column
# is ts (the rows live an hour) except in "random", where it is expires_at
# (expire_after 0), filled at random and so in no order on the heap.
s10_load() {
	local t=$1 shape=$2 rows=$3 cols extra_ddl="" vals key=ts names="ts, payload"
	local when="CASE WHEN g % 5 <> 0 THEN timestamptz '$base' - interval '2 days' + g * interval '1 ms' ELSE timestamptz '$base' + interval '1 day' + g * interval '1 ms' END"
	cols="id bigserial PRIMARY KEY, ts timestamptz NOT NULL, payload text"
	case $shape in
		p40) vals="$when, rpad(g::text, 40, '.')" ;;
		p100) vals="$when, rpad(g::text, 100, '.')" ;;
		p500) vals="$when, rpad(g::text, 500, '.')" ;;
		toast)
			# 2 KB stored out of line, uncompressed: two TOAST chunks a row
			cols="$cols, doc text"; names="$names, doc"
			extra_ddl="ALTER TABLE $t ALTER COLUMN doc SET STORAGE EXTERNAL;"
			vals="$when, rpad(g::text, 100, '.'), repeat(md5(g::text), 64)" ;;
		toastx)
			# the same, but 2 KB that no WAL compression shrinks (64
			# different hashes): the drain's WAL is as large as the DELETE's
			cols="$cols, doc text"; names="$names, doc"
			extra_ddl="ALTER TABLE $t ALTER COLUMN doc SET STORAGE EXTERNAL;"
			vals="$when, rpad(g::text, 100, '.'), (SELECT string_agg(md5(g::text || ':' || i), '') FROM generate_series(1, 64) i)" ;;
		idx3)
			cols="$cols, k1 int, k2 text, k3 timestamptz"; names="$names, k1, k2, k3"
			vals="$when, rpad(g::text, 100, '.'), g % 1000, md5(g::text), timestamptz '$base' + (g % 7919) * interval '1 s'"
			extra_ddl="CREATE INDEX ON $t (k1); CREATE INDEX ON $t (k2); CREATE INDEX ON $t (k3);" ;;
		random)
			key=expires_at; names="expires_at, payload"
			cols="id bigserial PRIMARY KEY, expires_at timestamptz NOT NULL, payload text"
			vals="CASE WHEN g % 5 <> 0 THEN timestamptz '$base' - interval '2 days' + random() * interval '1 day' ELSE timestamptz '$base' + interval '1 day' + random() * interval '1 day' END, rpad(g::text, 100, '.')" ;;
	esac
	Q <<SQL
CREATE TABLE $t ($cols) WITH (autovacuum_enabled = off);
$extra_ddl
INSERT INTO $t ($names) SELECT $vals FROM generate_series(1, $rows) g;
CREATE INDEX ${t}_key ON $t ($key);
VACUUM ANALYZE $t;
SQL
}

# wait_pass SCENARIO TABLE ROWS T0 FROM: wait (up to 600 s) until the
# worker's log lines for TABLE, after byte FROM of the log, count ROWS
# deleted; print the ms from T0 (epoch seconds, server clock) to the last of
# them.  The time comes from the line's timestamp, so the poll can be slow:
# at every 10 ms, grep over the log took a tenth of the 2 cores the worker
# and its helper drain with, which the plain DELETE beside it never paid
# (scenarios 1 and 10).
wait_pass() {
	local s=$1 t=$2 rows=$3 t0=$4 from=$5 i n last pat
	pat="ttl_index: deleted [0-9]* rows from public\.$t in"
	for i in $(seq 1 3000); do
		n=$({ tail -c +"$((from + 1))" "$dir/log" | grep -o "$pat" || true; } | awk '{n += $3} END {print n + 0}')
		[ "$n" -ge "$rows" ] && break
		sleep 0.2
	done
	[ "$n" -ge "$rows" ] || die "scenario $s: the worker did not delete $rows rows from $t within 600 s"
	last=$(tail -c +"$((from + 1))" "$dir/log" | grep "$pat" | tail -1 | awk '{print $1 " " $2}')
	calc "($(date -u -d "$last" +%s.%N) - $t0) * 1000"
}

s10() {
	local shape r m t rows expired l0 l1 ms n key after from cs
	declare -A what=([p40]="40-byte payload" [p100]="100-byte payload" [p500]="500-byte payload"
		[toast]="100 B + 2 KB TOASTed text" [toastx]="the same, incompressible" [idx3]="100 B + 3 secondary indexes" [random]="100 B, expiry at random")
	echo
	echo "== 10. row shapes: $(fmt $s10_rows) rows ($(fmt $s10_toast_rows) TOASTed), 80% expired, primary key + btree on the expiry, median of $s10_runs run(s)"
	echo "   per shape two identical tables; CHECKPOINT before each method; the worker's time runs from ttl_create_index() to the log line of its pass"
	# create_s: the worker's run, from before ttl_create_index() to just
	# after it returned (both on the server's clock), to tell a slow call
	# from a slow start of the pass
	printf 'run\tshape\tmethod\tseconds\twal_bytes\tcreate_s\n' > "$out/s10_runs.tsv"
	worker on
	for r in $(seq 1 "$s10_runs"); do
		for shape in $shapes; do
			rows=$s10_rows
			case $shape in toast*) rows=$s10_toast_rows ;; esac
			expired=$((rows - rows / 5))
			key=ts; after=3600
			[ $shape = random ] && { key=expires_at; after=0; }
			for m in delete worker; do s10_load "s10_${shape}_${m}_r$r" $shape $rows; done
			for m in delete worker; do
				t=s10_${shape}_${m}_r$r
				sql "CHECKPOINT"
				l0=$(lsn)
				cs=""
				case $m in
					delete) ms=$(timed <<<"DELETE FROM $t WHERE $key < now() - $after * interval '1 s';" | sed -n 1p) ;;
					# from the server's clock before ttl_create_index() to the
					# worker's log line of the pass that deleted the rows
					# (nothing polls the server meanwhile: a look at
					# ttl_index_stats walks the drained index entries)
					worker) from=$(stat -c %s "$dir/log")
						t0=$(sql "SELECT extract(epoch FROM clock_timestamp())")
						sql "SELECT ttl_create_index('$t', '$key', $after)" >/dev/null
						cs=$(calc "$(sql "SELECT extract(epoch FROM clock_timestamp())") - $t0")
						ms=$(wait_pass 10 "$t" "$expired" "$t0" "$from")
						[ "$(deleted "$t")" = "$expired" ] ||
							die "scenario 10: the worker's counter for $t is not $expired" ;;
				esac
				l1=$(lsn)
				printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" $shape $m "$(calc "$ms / 1000")" "$(walbytes "$l0" "$l1")" "$cs" >> "$out/s10_runs.tsv"
				n=$(sql "SELECT count(*) FROM $t")
				[ "$n" = $((rows - expired)) ] || die "scenario 10: $t has $n rows left after $m, expected $((rows - expired))"
			done
			for m in delete worker; do sql "DROP TABLE s10_${shape}_${m}_r$r"; done
		done
	done

	local dsecs wsecs dwal wwal ratio worst="" xratio=""
	printf '%-30s %10s %12s %10s %12s %8s %9s %9s\n' shape "DELETE s" "DELETE r/s" "worker s" "worker r/s" "ratio" "WAL/r DEL" "WAL/r wkr"
	printf 'shape\tlabel\tdelete_s\tworker_s\tratio\tdelete_wal_per_row\tworker_wal_per_row\n' > "$out/s10_shapes.tsv"
	for shape in $shapes; do
		rows=$s10_rows
		case $shape in toast*) rows=$s10_toast_rows ;; esac
		expired=$((rows - rows / 5))
		dsecs=$(awk -F'\t' -v s=$shape '$2 == s && $3 == "delete" {print $4}' "$out/s10_runs.tsv" | median)
		wsecs=$(awk -F'\t' -v s=$shape '$2 == s && $3 == "worker" {print $4}' "$out/s10_runs.tsv" | median)
		dwal=$(awk -F'\t' -v s=$shape '$2 == s && $3 == "delete" {print $5}' "$out/s10_runs.tsv" | median)
		wwal=$(awk -F'\t' -v s=$shape '$2 == s && $3 == "worker" {print $5}' "$out/s10_runs.tsv" | median)
		ratio=$(calc "$dsecs / $wsecs" 2)
		printf '%-30s %10.3f %12s %10.3f %12s %7sx %9s %9s\n' "${what[$shape]}" "$dsecs" "$(fmt "$(calc "$expired / $dsecs" 0)")" \
			"$wsecs" "$(fmt "$(calc "$expired / $wsecs" 0)")" "$ratio" "$(calc "$dwal / $expired" 1)" "$(calc "$wwal / $expired" 1)"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' $shape "${what[$shape]}" "$dsecs" "$wsecs" "$ratio" \
			"$(calc "$dwal / $expired" 1)" "$(calc "$wwal / $expired" 1)" >> "$out/s10_shapes.tsv"
		# the target is over the shapes users have; the incompressible
		# TOASTed rows are a reference beside them: both methods write the
		# same WAL there, and the WAL bounds both (docs/benchmarks.md)
		if [ $shape = toastx ]; then
			xratio=$ratio
		elif [ -z "$worst" ] || [ "$(le "$ratio" "$worst")" = 1 ]; then
			worst=$ratio
		fi
	done
	echo "  (ratio: the plain DELETE's time over the worker's, wall time from ttl_create_index() to the end of the pass that deleted the rows; WAL/r: bytes of WAL per deleted row)"
	if [ -n "$worst" ]; then
		target 10 "worker vs plain DELETE, slowest shape" "${worst}x" ">= 1.0x" "$(le 1 "$worst")" \
			"the shapes but the incompressible one"
	fi
	if [ -n "$xratio" ]; then
		echo "  the incompressible TOASTed rows: ${xratio}x (reference: as much WAL as the DELETE, which bounds both)"
		summary_row 10 "incompressible TOAST vs DELETE (WAL-bound)" "${xratio}x" none reference
	fi
}

# ---------------------------------------------------------------- 11
s11() {
	local n=$s11_rows expired=$((s11_rows * 8 / 10)) t m t_update t_worker t0 t1 ok
	local set="email = NULL, name = 'erased'"
	local pending="(email IS DISTINCT FROM NULL OR name IS DISTINCT FROM 'erased')"
	echo
	echo "== 11. anonymize: $(fmt $expired) expired rows of $(fmt $n) get two columns reset (email = NULL, name = 'erased')"
	echo "   by the equivalent plain UPDATE, and by the worker (set_columns), each on its own identical table; CHECKPOINT before each"
	worker off
	for t in s11_update s11_worker; do
		Q >/dev/null <<SQL
CREATE TABLE $t (id bigserial, seen timestamptz NOT NULL, email text, name text, payload text) WITH (autovacuum_enabled = off);
INSERT INTO $t (seen, email, name, payload)
  SELECT timestamptz '$base' - interval '800 days' + g * interval '1 ms', 'u' || g || '@example.com', 'User ' || g, rpad(g::text, 40, '.')
    FROM generate_series(1, $expired) g;
INSERT INTO $t (seen, email, name, payload)
  SELECT timestamptz '$base' + g * interval '1 ms', 'u' || g || '@example.com', 'User ' || g, rpad(g::text, 40, '.')
    FROM generate_series($expired + 1, $n) g;
ALTER TABLE $t ADD PRIMARY KEY (id);
VACUUM ANALYZE $t;
SQL
	done
	# the same index for both: the policy's, partial on the rows still to do
	Q >/dev/null <<SQL
CREATE INDEX s11_update_seen ON s11_update (seen) WHERE $pending;
SELECT ttl_create_index('s11_worker', 'seen', interval '730 days', set_columns => \$\$$set\$\$);
CHECKPOINT;
SQL
	t_update=$(timed <<SQL | head -1
UPDATE s11_update SET $set WHERE seen < now() - interval '730 days' AND $pending;
SQL
)
	sql "CHECKPOINT" >/dev/null
	t0=$(date +%s.%N)
	worker on
	Q >/dev/null <<SQL
DO \$\$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	LOOP
		EXIT WHEN (SELECT s.rows_anonymized FROM ttl_index_policy_stats() s
					 JOIN ttl_index_policy p ON p.id = s.policy_id
					WHERE p.relid = 's11_worker'::regclass) >= $expired
			   OR clock_timestamp() - t0 > interval '900 s';
		COMMIT;
		PERFORM pg_sleep(0.05);
	END LOOP;
END \$\$;
SQL
	t1=$(date +%s.%N)
	t_worker=$(calc "($t1 - $t0) * 1000" 3)
	ok=$(sql "SELECT (SELECT count(*) FROM s11_update WHERE email IS NULL AND name = 'erased') = $expired
	            AND (SELECT count(*) FROM s11_worker WHERE email IS NULL AND name = 'erased') = $expired
	            AND (SELECT count(*) FROM s11_worker) = $n")
	[ "$ok" = t ] || die "scenario 11: the two tables differ after the run"
	printf '%-40s %10s %14s %s\n' method seconds rows/s "vs UPDATE"
	printf '%-40s %10s %14s %s\n' "plain UPDATE (one statement)" "$(calc "$t_update / 1000" 3)" \
		"$(fmt "$(calc "$expired * 1000 / $t_update" 0)")" "1.00x"
	printf '%-40s %10s %14s %s\n' "worker, set_columns (batches)" "$(calc "$t_worker / 1000" 3)" \
		"$(fmt "$(calc "$expired * 1000 / $t_worker" 0)")" "$(calc "$t_update / $t_worker" 2)x"
	printf 'method\tseconds\nupdate\t%s\nworker\t%s\n' "$(calc "$t_update / 1000" 3)" "$(calc "$t_worker / 1000" 3)" > "$out/s11.tsv"
	target 11 "anonymize: worker vs UPDATE (x)" "$(calc "$t_update / $t_worker" 2)" ">= 0.5" \
		"$([ $smoke = 1 ] && echo na || le 0.5 "$(calc "$t_update / $t_worker" 2)")"
	sql "DROP TABLE s11_update, s11_worker" >/dev/null
}

# ---------------------------------------------------------------- 12
# steady_inserts N TABLE LEN RATE SECS QUERY COLUMN: pgbench inserts about
# RATE rows/s into TABLE (10 rows of a LEN-character payload a transaction)
# for SECS s, while QUERY is sampled every 200 ms into $out/sN_COLUMN.tsv;
# sets the caller's n (the samples) and inserted (the rows/s pgbench made)
steady_inserts() {
	local s=$1 table=$2 len=$3 rate=$4 secs=$5 query=$6 col=$7 pgb tps
	echo "INSERT INTO $table (payload) SELECT repeat('p', $len) FROM generate_series(1, 10);" > "$dir/s$s.sql"
	$PGBIN/pgbench -n -h "$dir" -p $port -U postgres -c 2 -j 2 -R $((rate / 10)) -T $((secs + 1)) \
		-f "$dir/s$s.sql" bench > "$dir/s$s.pgbench" 2>&1 &
	pgb=$!
	sql "CALL bench_sample_query($s, '$table', '${query//\'/\'\'}', $secs)"
	wait $pgb || { cat "$dir/s$s.pgbench"; die "scenario $s: pgbench failed"; }
	sql "COPY (SELECT round(t::numeric, 3), age::bigint FROM bench_sample WHERE scenario = $s ORDER BY t) TO STDOUT" |
		{ printf 't_s\t%s\n' "$col"; cat; } > "$out/s${s}_$col.tsv"
	n=$(($(wc -l < "$out/s${s}_$col.tsv") - 1))
	tps=$(awk '/^tps = / {print $3; exit}' "$dir/s$s.pgbench")
	inserted=$(calc "$tps * 10" 0)
}

# tsv_pct FILE P: the P-th percentile of the second column of a sample file
tsv_pct() { tail -n +2 "$1" | cut -f2 | pct "$2"; }

s12() {
	local cap=$s12_cap rate=$s12_rate secs=$s12_secs n p1 p50 p99 max inserted
	echo
	echo "== 12. a size cap under steady inserts: max_rows => $(fmt $cap), pgbench inserts about $(fmt $rate) rows/s (10 per transaction) for $secs s; count(*) every 200 ms"
	Q >/dev/null <<SQL
CREATE TABLE s12_cap (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), payload text);
INSERT INTO s12_cap (at, payload) SELECT now() - g * interval '1 ms', repeat('p', 40) FROM generate_series(1, $cap) g;
SELECT ttl_create_index('s12_cap', 'at', NULL, max_rows => $cap);
SQL
	worker on
	steady_inserts 12 s12_cap 40 $rate $secs 'SELECT count(*)::float8 FROM s12_cap' rows
	p1=$(tsv_pct "$out/s12_rows.tsv" 1)
	p50=$(tsv_pct "$out/s12_rows.tsv" 50)
	p99=$(tsv_pct "$out/s12_rows.tsv" 99)
	max=$(tsv_pct "$out/s12_rows.tsv" 100)
	printf '%-34s %s\n' "inserted rows/s (pgbench)" "$(fmt "$inserted")"
	printf '%-34s %s\n' "rows capped by the worker" "$(fmt "$(sql "SELECT rows_capped FROM ttl_index_stats WHERE table_name = 's12_cap'::regclass")")"
	printf '%-34s %s\n' "samples" "$n"
	printf '%-34s %9s %9s %9s %9s\n' "rows in the table" p1 p50 p99 max
	printf '%-34s %9s %9s %9s %9s\n' "(cap $(fmt $cap))" "$p1" "$p50" "$p99" "$max"
	printf 'p1\tp50\tp99\tmax\tcap\tinserted_rows_per_s\n%s\t%s\t%s\t%s\t%s\t%s\n' "$p1" "$p50" "$p99" "$max" "$cap" "$inserted" > "$out/s12_summary.tsv"
	# at most the cap plus two seconds of inserts, and never a percent under it
	target 12 "capped table, max rows over cap" "$((max - cap))" "<= $((2 * rate))" "$(le $((max - cap)) $((2 * rate)))"
	target 12 "capped table, min rows (p1)" "$p1" ">= $((cap * 99 / 100))" "$(le $((cap * 99 / 100)) "$p1")"
	sql "DROP TABLE s12_cap" >/dev/null
}

# ---------------------------------------------------------------- 13
s13() {
	local cap=$s13_cap rate=$s13_rate secs=$s13_secs n p50 p99 max inserted rows newest bound
	echo
	echo "== 13. a size cap by bytes under steady inserts: max_bytes => $(fmt $cap), pgbench inserts about $(fmt $rate) rows/s (10 per transaction) for $secs s; pg_total_relation_size every 200 ms; autovacuum_naptime 5 s"
	# autovacuum comes often enough to be seen in the run: the cap holds by
	# the reuse of the space VACUUM records (docs/expiry-rules.md, By bytes)
	sql "ALTER SYSTEM SET autovacuum_naptime = '5s'" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
	# filled to 90% of the cap, so that the inserts take it over the cap
	Q >/dev/null <<SQL
CREATE TABLE s13_cap (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), payload text);
DO \$\$
DECLARE
	n int := 0;
BEGIN
	-- keys of their own, older than the inserts' (rows sharing a key are
	-- never capped: the cut would take them all)
	WHILE pg_total_relation_size('s13_cap') < $cap * 0.9 LOOP
		INSERT INTO s13_cap (at, payload)
		SELECT now() - interval '1 day' + (n + g) * interval '1 ms', repeat('p', 100) FROM generate_series(1, 1000) g;
		n := n + 1000;
	END LOOP;
END \$\$;
SELECT ttl_create_index('s13_cap', 'at', NULL, max_bytes => $cap);
SQL
	worker on
	steady_inserts 13 s13_cap 100 $rate $secs "SELECT pg_total_relation_size('s13_cap')::float8" bytes
	p50=$(tsv_pct "$out/s13_bytes.tsv" 50)
	p99=$(tsv_pct "$out/s13_bytes.tsv" 99)
	max=$(tsv_pct "$out/s13_bytes.tsv" 100)
	rows=$(sql "SELECT count(*) FROM s13_cap")
	# the rows kept are the newest: a run of ids that ends at the last one
	newest=$(sql "SELECT max(id) - min(id) + 1 = count(*) AND max(id) = (SELECT last_value FROM s13_cap_id_seq) FROM s13_cap")
	[ "$newest" = t ] || die "scenario 13: the rows kept are not the newest"
	printf '%-34s %s\n' "inserted rows/s (pgbench)" "$(fmt "$inserted")"
	printf '%-34s %s\n' "rows capped by the worker" "$(fmt "$(sql "SELECT rows_capped FROM ttl_index_stats WHERE table_name = 's13_cap'::regclass")")"
	printf '%-34s %s\n' "rows in the table at the end" "$(fmt "$rows")"
	printf '%-34s %s\n' "samples" "$n"
	printf '%-34s %9s %9s %9s\n' "table size, MB" p50 p99 max
	printf '%-34s %9s %9s %9s\n' "(cap $(calc "$cap / 1048576" 1) MB)" "$(calc "$p50 / 1048576" 2)" "$(calc "$p99 / 1048576" 2)" "$(calc "$max / 1048576" 2)"
	printf 'p50\tp99\tmax\tcap\tinserted_rows_per_s\trows_at_end\n%s\t%s\t%s\t%s\t%s\t%s\n' "$p50" "$p99" "$max" "$cap" "$inserted" "$rows" > "$out/s13_summary.tsv"
	# the bound docs/expiry-rules.md (By bytes) gives: the rows written
	# until VACUUM records the space of those a pass took, with autovacuum
	# at its default threshold (a fifth of the table dead) and a naptime of
	# 5 s: a fifth of the cap, plus 10 s of inserts at the rows' footprint
	bound=$(calc "$cap * 1.2 + 10 * $inserted * $cap / $rows" 0)
	target 13 "byte cap, max size (MB)" "$(calc "$max / 1048576" 2)" "<= $(calc "$bound / 1048576" 2)" \
		"$([ $smoke = 1 ] && echo na || le "$max" "$bound")"
	sql "DROP TABLE s13_cap" >/dev/null
	sql "ALTER SYSTEM RESET autovacuum_naptime" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
}

# ---------------------------------------------------------------- run
for s in 1 10 2 3 4 5 6 8 9 11 12 13; do
	if [[ " $only " == *" $s "* ]] || { [ $s = 3 ] && [[ " $only " == *" 7 "* ]]; }; then
		t=$(date +%s)
		s$s
		echo "  (scenario $s$([ $s = 3 ] && [[ " $only " == *" 7 "* ]] && echo " and 7") took $(( $(date +%s) - t )) s)"
	fi
done

# ---------------------------------------------------------------- chart
if command -v gnuplot >/dev/null; then
	if gnuplot -e "dir='$out'; s1n='$(fmt $s1_expired)'" "$here/test/bench/chart.gp" 2> "$dir/gnuplot.err"; then
		echo
		charts=""
		for f in "$out"/*.png; do [ -e "$f" ] && charts="$charts $f"; done
		echo "charts:${charts:- none (no scenario with a chart ran)}"
	else
		echo "chart: gnuplot failed:"; cat "$dir/gnuplot.err"
		exit 1
	fi
else
	echo "chart: skipped, gnuplot is not installed (apt-get install gnuplot-nox)"
fi

# ---------------------------------------------------------------- summary
errors=$(sql "SELECT coalesce(sum(errors), 0) FROM ttl_index_policy_stats()")
echo
echo "== summary$([ $smoke = 1 ] && echo " (smoke run: sizes too small for the targets)")"
printf '%-3s %-42s %-14s %-10s %s\n' "#" "figure" "measured" "target" "verdict"
for line in "${summary[@]}"; do echo "$line"; done
echo "worker errors counted: $errors; run took $(( $(date +%s) - started )) s"
echo "machine: $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -m), PostgreSQL $($PGBIN/postgres --version | awk '{print $3}'), shared and noisy: figures vary between runs"
[ "$errors" = 0 ] || die "the worker counted $errors failed batches: see $out/server.log"
