#!/usr/bin/env bash
#
# test/bench/drain.sh [ROWS]: time to drain ROWS expired rows (default 1M),
# side by side on identical tables in one run:
#   delete   one plain DELETE ... WHERE ts < cutoff (the physical reference)
#   pgcron   DELETE ... WHERE id IN (SELECT ... ORDER BY ts LIMIT 10000), repeated
#   runner   SELECT ttl_runner()
#   worker   the background worker, with default settings
#   worker_async  the same with ttl_index.synchronous_commit = off
# Prints rows/s, the ratio to the plain DELETE and WAL bytes per row.
# Run as root (builds and installs first) or as the postgres user.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/test/lib.sh"
rows=${1:-1000000}
if [ "$(id -u)" = 0 ]; then
	ttl_root_setup "$here" bc >/dev/null
	exec su postgres -s /bin/bash -c "bash '$here/test/bench/drain.sh' $rows"
fi
ttl_scratch_server bench 55498 "ttl_index.enabled = off" "shared_buffers = 1GB" \
	"max_wal_size = 8GB" "checkpoint_timeout = 30min" "autovacuum = off" \
	"ttl_index.log_min_duration = 0"
$psql -c "CREATE EXTENSION ttl_index"
for t in delete pgcron runner worker worker_async; do
	$psql <<SQL
CREATE TABLE b_$t (id bigserial PRIMARY KEY, ts timestamptz NOT NULL, payload text);
INSERT INTO b_$t (ts, payload)
  SELECT now() - interval '2 days' + g * interval '1 ms', repeat('x', 40) FROM generate_series(1, $rows) g;
INSERT INTO b_$t (ts, payload) SELECT now() + interval '1 day', 'keep' FROM generate_series(1, 1000);
CREATE INDEX ON b_$t (ts);
VACUUM ANALYZE b_$t;
SQL
done
$psql -c "CHECKPOINT"

now_ms() { date +%s%3N; }
wal() { $psql -c "SELECT pg_current_wal_lsn()"; }
walbytes() { $psql -c "SELECT pg_wal_lsn_diff('$2', '$1')"; }

declare -A secs walb
run() {
	local name=$1; shift
	local l0 t0 t1 l1
	$psql -c "CHECKPOINT"
	l0=$(wal); t0=$(now_ms)
	"$@"
	t1=$(now_ms); l1=$(wal)
	secs[$name]=$(echo "scale=3; ($t1 - $t0) / 1000" | bc)
	walb[$name]=$(walbytes "$l0" "$l1")
}
do_delete() { $psql -c "DELETE FROM b_delete WHERE ts < now() - interval '1 minute'"; }
do_pgcron() {
	while :; do
		n=$($psql -c "WITH d AS (DELETE FROM b_pgcron WHERE id IN (SELECT id FROM b_pgcron WHERE ts < now() - interval '1 minute' ORDER BY ts LIMIT 10000) RETURNING 1) SELECT count(*) FROM d")
		[ "$n" = 0 ] && break
	done
}
do_runner() {
	$psql -c "SELECT ttl_create_index('b_runner', 'ts', 60)" >/dev/null
	$psql -c "SELECT ttl_runner()" >/dev/null
}
# wait_worker TABLE: until the worker's counter for TABLE reaches $rows;
# a count(*) here would scan the table and compete with the worker
wait_worker() {
	until [ "$($psql -c "SELECT rows_deleted FROM ttl_index_policy_stats() s JOIN ttl_index_policy p ON p.id = s.policy_id WHERE p.relid = '$1'::regclass")" = "$rows" ]; do
		sleep 0.02
	done
}
do_worker() {
	$psql -c "SELECT ttl_create_index('b_worker', 'ts', 60)" >/dev/null
	$psql -c "ALTER SYSTEM SET ttl_index.enabled = on" -c "SELECT pg_reload_conf()" >/dev/null
	wait_worker b_worker
}
do_worker_async() {
	$psql -c "SELECT ttl_create_index('b_worker_async', 'ts', 60)" >/dev/null
	wait_worker b_worker_async
}
run delete do_delete
run pgcron do_pgcron
run runner do_runner
run worker do_worker
$psql -c "ALTER SYSTEM SET ttl_index.synchronous_commit = off" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
run worker_async do_worker_async
for t in delete pgcron runner worker worker_async; do
	left=$($psql -c "SELECT count(*) FROM b_$t")
	[ "$left" = 1000 ] || { echo "b_$t: $left rows left, expected 1000" >&2; exit 1; }
done
printf "%-12s %10s %12s %8s %10s\n" method seconds rows/s ratio WAL/row
for t in delete pgcron runner worker worker_async; do
	printf "%-12s %10s %12.0f %8.2f %10.1f\n" $t ${secs[$t]} \
		$(echo "$rows / ${secs[$t]}" | bc -l) \
		$(echo "${secs[delete]} / ${secs[$t]}" | bc -l) \
		$(echo "${walb[$t]} / $rows" | bc -l)
done
$psql -c "SELECT table_name || ': ' || batches || ' batches, ' || passes || ' passes, time in batches ' || time_spent FROM ttl_index_stats ORDER BY policy_id"
grep -o 'ttl_index: deleted .*' "$dir/log" | tail -2
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -m), PostgreSQL $($PGBIN/postgres --version | awk '{print $3}')"
