#!/usr/bin/env bash
#
# test/bench/citus.sh [--release] [--rows N] [--runs N] [--shards N] [--set "NAME = VALUE"]...:
# a distributed table's backlog on three local Citus nodes (a coordinator
# that holds shards and two workers), drained by ttl_index beside the
# distributed DELETE of the same rows, in the same run.
#
# Each run loads N rows (default 2,400,000, 40-byte payload, all expired an
# hour ago, plus 1,000 live ones) into a table distributed over --shards
# shards (default 12, four per node), then either
#   - delete: DELETE FROM events WHERE created_at < now() - interval '1 hour'
#     from the coordinator: one transaction on every shard, the nodes in
#     parallel; or
#   - ttl_index: ttl_create_index() on the coordinator, timed from the call
#     to the last of the nodes' log lines of their passes, once the lines
#     count every row (each node deletes its own shards in bounded batches).
#     The time comes from the lines' timestamps, so the harness polls only
#     every 200 ms and reads only the log written since the call: a poll
#     that counted the table would take the nodes' CPU from the drain.
# The two alternate, --runs times each (default 3); the medians and their
# ratio are printed, with each node's share of the rows.  --set adds a
# server setting on every node (repeatable).
#
# The servers are the PostgreSQL 18.3 build with Citus of test/pg_build.sh,
# with assertions on (absolute times are slower than a production build's),
# or with --release one built as production servers are (no assertions;
# built once per machine, about 10 minutes on 2 cores).  TTL_BENCH_KEEP=1 leaves the nodes running, to
# read their logs.  Run as root (builds what is missing, then re-runs
# itself as the postgres user) or as the postgres user.
set -Eeuo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rows=2400000
runs=3
shards=12
extra=()
release=
args=("$@")
while [ $# -gt 0 ]; do
	case $1 in
		--release) release=release ;;
		--rows) rows=${2:?--rows needs a number}; shift ;;
		--runs) runs=${2:?--runs needs a number}; shift ;;
		--shards) shards=${2:?--shards needs a number}; shift ;;
		--set) extra+=("${2:?--set needs NAME = VALUE}"); shift ;;
		-h|--help) sed -n '2,/^set -Eeuo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		*) echo "unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

if [ "$(id -u)" = 0 ]; then
	bin=$(bash "$here/test/pg_build.sh" citus 18 $release)
	make -s -C "$here" clean >/dev/null
	make -s -C "$here" PG_CONFIG="$bin/pg_config" install >/dev/null
	make -s -C "$here" clean >/dev/null
	id postgres >/dev/null 2>&1 || useradd -m postgres
	work=$(mktemp -d /tmp/ttl_citus_bench.XXXXXX)
	cp "$0" "$work/citus.sh"
	chown -R postgres "$work"
	exec su postgres -c "TTL_BENCH_BIN='$bin' bash '$work/citus.sh' $(printf '%q ' "${args[@]}")"
fi
bin=${TTL_BENCH_BIN:?run as root, or set TTL_BENCH_BIN to the bin directory of the Citus build}
[ -e "$("$bin/pg_config" --pkglibdir)/citus.so" ] || { echo "no Citus in $bin" >&2; exit 1; }

base=$(mktemp -d /tmp/ttl_citus_nodes.XXXXXX)
ports=(5801 5802 5803)
cleanup()
{
	[ -n "${TTL_BENCH_KEEP:-}" ] && { echo "nodes kept in $base"; return; }
	for i in 0 1 2; do
		"$bin/pg_ctl" -D "$base/n$i" -m immediate stop >/dev/null 2>&1 || true
	done
	rm -rf "$base"
}
trap cleanup EXIT

for i in 0 1 2; do
	"$bin/initdb" -D "$base/n$i" -A trust >/dev/null
	{
		echo "port = ${ports[$i]}"
		echo "unix_socket_directories = '$base'"
		echo "listen_addresses = ''"
		echo "shared_preload_libraries = 'citus,ttl_index'"
		echo "citus.local_hostname = '$base'"
		echo "max_worker_processes = 24"
		echo "shared_buffers = 512MB"
		echo "max_wal_size = 4GB"
		echo "checkpoint_timeout = 30min"
		echo "ttl_index.log_min_duration = 0"
		echo "log_line_prefix = '%m [%p] '"
		for s in "${extra[@]}"; do echo "$s"; done
	} >> "$base/n$i/postgresql.conf"
	"$bin/pg_ctl" -D "$base/n$i" -l "$base/n$i.log" -w start >/dev/null
done
q() { "$bin/psql" -X -q -h "$base" -p "$1" -d postgres -Atc "$2"; }
for p in "${ports[@]}"; do q "$p" 'CREATE EXTENSION citus'; done
q 5801 "SELECT citus_set_coordinator_host('$base', 5801)" >/dev/null
q 5801 "SELECT citus_add_node('$base', 5802)" >/dev/null
q 5801 "SELECT citus_add_node('$base', 5803)" >/dev/null
q 5801 "SELECT citus_set_node_property('$base', 5801, 'shouldhaveshards', true)" >/dev/null
q 5801 'CREATE EXTENSION ttl_index'

now() { date +%s.%N; }
# load: the table afresh, expired rows and live ones, analyzed, checkpointed
load()
{
	q 5801 "DROP TABLE IF EXISTS events" 2>/dev/null
	q 5801 "CREATE TABLE events (id bigint, created_at timestamptz NOT NULL, payload text)"
	q 5801 "SELECT create_distributed_table('events', 'id', shard_count => $shards)" >/dev/null
	q 5801 "CREATE INDEX events_created_at ON events (created_at)"
	q 5801 "INSERT INTO events SELECT g, now() - interval '2 hours' + g * interval '1 microsecond',
		repeat('x', 40) FROM generate_series(1, $rows) g"
	q 5801 "INSERT INTO events SELECT g, now() + interval '1 hour', repeat('x', 40)
		FROM generate_series($rows + 1, $rows + 1000) g"
	q 5801 "VACUUM ANALYZE events"
	for p in "${ports[@]}"; do q "$p" CHECKPOINT; done
}
expired="SELECT count(*) FROM events WHERE created_at < now() - interval '1 hour'"

printf 'run\tmethod\tseconds\trows_per_s\tper_node_rows\n' > "$base/runs.tsv"
for r in $(seq 1 "$runs"); do
	load
	t0=$(now)
	q 5801 "DELETE FROM events WHERE created_at < now() - interval '1 hour'"
	t1=$(now)
	s=$(echo "$t1 - $t0" | bc -l)
	printf '%d\tdelete\t%.3f\t%.0f\t-\n' "$r" "$s" "$(echo "$rows / $s" | bc -l)" >> "$base/runs.tsv"

	load
	declare -a from
	for i in 0 1 2; do from[$i]=$(stat -c %s "$base/n$i.log"); done
	t0=$(q 5801 "SELECT extract(epoch FROM clock_timestamp())")
	id=$(q 5801 "SELECT ttl_create_index('events', 'created_at', 3600)")
	pat="ttl_index: deleted [0-9]* rows from public\.events in"
	for w in $(seq 1 3000); do
		n=0
		for i in 0 1 2; do
			c=$({ tail -c +"$((from[i] + 1))" "$base/n$i.log" | grep -o "$pat" || true; } | awk '{n += $3} END {print n + 0}')
			n=$((n + c))
		done
		[ "$n" -ge "$rows" ] && break
		sleep 0.2
	done
	[ "$n" -ge "$rows" ] || { echo "the nodes did not delete $rows rows within 600 s" >&2; exit 1; }
	last=0
	for i in 0 1 2; do
		l=$(tail -c +"$((from[i] + 1))" "$base/n$i.log" | grep "$pat" | tail -1 | awk '{print $1 " " $2}')
		[ -n "$l" ] || continue
		l=$(date -u -d "$l" +%s.%N)
		[ "$(echo "$l > $last" | bc -l)" = 1 ] && last=$l
	done
	s=$(echo "$last - $t0" | bc -l)
	[ "$(q 5801 "$expired")" = 0 ] || { echo "expired rows left after the drain" >&2; exit 1; }
	per=$(q 5801 "SELECT string_agg(rows_deleted::text, '/' ORDER BY nodeport) FROM ttl_index_citus_nodes() WHERE policy_id = $id")
	printf '%d\tttl_index\t%.3f\t%.0f\t%s\n' "$r" "$s" "$(echo "$rows / $s" | bc -l)" "$per" >> "$base/runs.tsv"
	q 5801 "SELECT ttl_drop_index('events', 'created_at')" >/dev/null
done

column -t -s $'\t' "$base/runs.tsv"
median()
{
	awk -F'\t' -v m="$1" '$2 == m { print $3 }' "$base/runs.tsv" | sort -n |
		awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
d=$(median delete)
t=$(median ttl_index)
echo
printf 'distributed DELETE: %.3f s (median of %d), %.0f rows/s\n' "$d" "$runs" "$(echo "$rows / $d" | bc -l)"
printf 'ttl_index drain:    %.3f s (median of %d), %.0f rows/s: %.2fx the DELETE\n' \
	"$t" "$runs" "$(echo "$rows / $t" | bc -l)" "$(echo "$d / $t" | bc -l)"
asserts="assertions on"
"$bin/pg_config" --configure | grep -q enable-cassert || asserts="no assertions"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), PostgreSQL $("$bin/pg_config" --version | cut -d' ' -f2) ($asserts), Citus $(q 5801 "SELECT extversion FROM pg_extension WHERE extname = 'citus'")"
