#!/usr/bin/env bash
#
# test/bench/citus.sh [--release] [--smoke] [--distinct] [--out DIR] [--rows N] [--runs N] [--shards N] [--set "NAME = VALUE"]...:
# a distributed table's backlog on three local Citus nodes (a coordinator
# that holds no shards and two workers), drained by ttl_index beside the
# distributed DELETE of the same rows, timed as a user sees them: from the
# instant the rows expire to the instant the last one is gone.
#
# Each run loads N rows (default 1,000,000, 40-byte payload, their keys
# within one millisecond, plus 1,000 live ones) into a table distributed
# over --shards shards (default 32, sixteen per worker node), then either
#   - delete: at the instant the rows expire, DELETE FROM events WHERE
#     created_at < now() - <ttl> from the coordinator (one transaction on
#     every shard, the nodes in parallel), timed from that instant; or
#   - ttl_index: the policy is created a few seconds before the rows
#     expire (its TTL chosen so), each node's worker sleeps until then, and
#     the time runs from the instant of expiry to the last of the nodes'
#     log lines of their passes, once the lines count every row.  The time
#     comes from the lines' timestamps, so the harness polls only every
#     200 ms and reads only the log written since: a poll that counted the
#     table would take the nodes' CPU from the drain.
# The two alternate, --runs times each (default 3); the medians and their
# ratio are printed, with each node's rows, its passes, its batches (the
# worker's and its helpers' transactions) and how long after the expiry its
# first pass began (where the time goes).  --set adds a
# server setting on every node (repeatable).  --distinct: every expired
# row has a key of its own, one microsecond apart (the rows expire over
# N microseconds, a second for a million: a btree of distinct keys is
# larger than one of 1,000 repeated ones, which deduplication shrinks), and
# the clock starts when the last of them expires; the policy is created at
# that instant, not before, so that the workers do not start on the first
# rows while the others have not expired yet (the time counts the workers'
# wake-up by the new policy).  --smoke: 20,000 rows over 4
# shards, one run: checks that the harness works (the test command runs it
# on the Citus build), not the figure.  --out DIR keeps the runs' table and
# the nodes' server logs there.
#
# The servers are the PostgreSQL 18.3 build with Citus of test/pg_build.sh,
# with assertions on (absolute times are slower than a production build's),
# or with --release one built as production servers are (no assertions;
# built once per machine, about 10 minutes on 2 cores).  PG_CONFIG set to
# a build that has Citus uses that one as it is installed (the test
# command's).  TTL_BENCH_KEEP=1 leaves the nodes running, to read their
# logs; TTL_BENCH_PORT sets the first of the three ports (default 5801).
# Run as root (builds what is missing, then re-runs itself as the postgres
# user) or as the postgres user.
set -Eeuo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rows=1000000
runs=3
shards=32
lead=5
extra=()
release=
smoke=
distinct=
out=
args=("$@")
while [ $# -gt 0 ]; do
	case $1 in
		--release) release=release ;;
		--smoke) smoke=1 ;;
		--distinct) distinct=1 ;;
		--out) out=${2:?--out needs a directory}; shift ;;
		--rows) rows=${2:?--rows needs a number}; shift ;;
		--runs) runs=${2:?--runs needs a number}; shift ;;
		--shards) shards=${2:?--shards needs a number}; shift ;;
		--set) extra+=("${2:?--set needs NAME = VALUE}"); shift ;;
		-h|--help) sed -n '2,/^set -Eeuo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		*) echo "unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
if [ -n "$smoke" ]; then
	rows=20000
	shards=4
	runs=1
fi

if [ "$(id -u)" = 0 ]; then
	if [ -n "${PG_CONFIG:-}" ] && [ -e "$("$PG_CONFIG" --pkglibdir)/citus.so" ]; then
		# the test command's build, the extension installed in it already
		bin=$("$PG_CONFIG" --bindir)
	else
		bin=$(bash "$here/test/pg_build.sh" citus 18 $release)
		make -s -C "$here" clean >/dev/null
		make -s -C "$here" PG_CONFIG="$bin/pg_config" install >/dev/null
		make -s -C "$here" clean >/dev/null
	fi
	id postgres >/dev/null 2>&1 || useradd -m postgres
	# the nodes' logs are copied there by the postgres user
	if [ -n "$out" ]; then
		mkdir -p "$out"
		chown postgres "$out"
	fi
	work=$(mktemp -d /tmp/ttl_citus_bench.XXXXXX)
	cp "$0" "$work/citus.sh"
	chown -R postgres "$work"
	exec su postgres -c "TTL_BENCH_BIN='$bin' TTL_BENCH_KEEP='${TTL_BENCH_KEEP:-}' TTL_BENCH_PORT='${TTL_BENCH_PORT:-}' bash '$work/citus.sh' $(printf '%q ' "${args[@]}")"
fi
bin=${TTL_BENCH_BIN:?run as root, or set TTL_BENCH_BIN to the bin directory of the Citus build}
[ -e "$("$bin/pg_config" --pkglibdir)/citus.so" ] || { echo "no Citus in $bin" >&2; exit 1; }

base=$(mktemp -d /tmp/ttl_citus_nodes.XXXXXX)
port0=${TTL_BENCH_PORT:-5801}
ports=("$port0" $((port0 + 1)) $((port0 + 2)))
cleanup()
{
	[ -n "${TTL_BENCH_KEEP:-}" ] && { echo "nodes kept in $base"; return; }
	for i in 0 1 2; do
		"$bin/pg_ctl" -D "$base/n$i" -m immediate stop >/dev/null 2>&1 || true
	done
	if [ -n "$out" ]; then
		mkdir -p "$out"
		cp "$base"/*.log "$base/runs.tsv" "$out"/ 2>/dev/null || true
	fi
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
		echo "shared_buffers = $([ -n "$smoke" ] && echo 128MB || echo 512MB)"
		echo "max_wal_size = 4GB"
		echo "checkpoint_timeout = 30min"
		echo "ttl_index.log_min_duration = 0"
		echo "log_line_prefix = '%m [%p] '"
		echo "log_timezone = 'UTC'"
		for s in "${extra[@]}"; do echo "$s"; done
	} >> "$base/n$i/postgresql.conf"
	"$bin/pg_ctl" -D "$base/n$i" -l "$base/n$i.log" -w start >/dev/null
done
c=${ports[0]}
q() { "$bin/psql" -X -q -h "$base" -p "$1" -d postgres -v ON_ERROR_STOP=1 -Atc "$2"; }
for p in "${ports[@]}"; do q "$p" 'CREATE EXTENSION citus'; done
q "$c" "SELECT citus_set_coordinator_host('$base', $c)" >/dev/null
q "$c" "SELECT citus_add_node('$base', ${ports[1]})" >/dev/null
q "$c" "SELECT citus_add_node('$base', ${ports[2]})" >/dev/null
q "$c" 'CREATE EXTENSION ttl_index'

# The expired rows' keys are within one millisecond of base (1,000 keys),
# or with --distinct one microsecond apart; the TTL is chosen, when a run
# starts, so that the last of them expires $lead seconds later, at the
# instant the run is timed from.
base_ts="timestamptz '2020-01-01 00:00:00+00'"
if [ -n "$distinct" ]; then
	key_of_g="$base_ts + (g - 1) * interval '1 microsecond'"
	last_key="$base_ts + $((rows - 1)) * interval '1 microsecond'"
else
	key_of_g="$base_ts + (g % 1000) * interval '1 microsecond'"
	last_key="$base_ts + interval '999 microseconds'"
fi
# load: the table afresh, expired rows and live ones, analyzed, checkpointed
load()
{
	q "$c" "DROP TABLE IF EXISTS events" 2>/dev/null
	q "$c" "CREATE TABLE events (id bigint, created_at timestamptz NOT NULL, payload text)"
	q "$c" "SELECT create_distributed_table('events', 'id', shard_count => $shards)" >/dev/null
	q "$c" "CREATE INDEX events_created_at ON events (created_at)"
	q "$c" "INSERT INTO events SELECT g, $key_of_g,
		repeat('x', 40) FROM generate_series(1, $rows) g"
	q "$c" "INSERT INTO events SELECT g, $base_ts + interval '100 years', repeat('x', 40)
		FROM generate_series($rows + 1, $rows + 1000) g"
	q "$c" "VACUUM ANALYZE events"
	for p in "${ports[@]}"; do q "$p" CHECKPOINT; done
}
# expiry: the instant the rows will expire ($lead s from now, epoch
# seconds) and the TTL in seconds that makes them expire then
expiry()
{
	q "$c" "SELECT e, extract(epoch FROM to_timestamp(e) - ($last_key))
		FROM (SELECT round(extract(epoch FROM clock_timestamp()) + $lead, 3) AS e) x" | tr '|' ' '
}
expired="SELECT count(*) FROM events WHERE created_at < $base_ts + interval '1 year'"
epoch_of() { date -u -d "$1" +%s.%N; }
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
later() { awk "BEGIN { exit !($1 > $2) }"; }

printf 'run\tmethod\tseconds\trows_per_s\tper_node\n' > "$base/runs.tsv"
for r in $(seq 1 "$runs"); do
	# the distributed DELETE, started by the server at the instant of expiry
	load
	read -r T ttl < <(expiry)
	# (statements of their own: now() is the DELETE's start)
	end=$("$bin/psql" -X -q -h "$base" -p "$c" -d postgres -v ON_ERROR_STOP=1 -At <<SQL | tail -1
SELECT pg_sleep(greatest(0, $T - extract(epoch FROM clock_timestamp())));
DELETE FROM events WHERE created_at < now() - make_interval(secs => $ttl);
SELECT extract(epoch FROM clock_timestamp());
SQL
	)
	s=$(calc "$end - $T")
	[ "$(q "$c" "$expired")" = 0 ] || { echo "expired rows left after the DELETE" >&2; exit 1; }
	printf '%d\tdelete\t%s\t%.0f\t-\n' "$r" "$s" "$(calc "$rows / $s")" >> "$base/runs.tsv"

	# ttl_index: the policy made before the rows expire
	load
	declare -a from
	for i in 0 1 2; do from[$i]=$(stat -c %s "$base/n$i.log"); done
	read -r T ttl < <(expiry)
	if [ -n "$distinct" ]; then
		# made at the instant the last row expires (server side, as the
		# DELETE is started)
		id=$("$bin/psql" -X -q -h "$base" -p "$c" -d postgres -v ON_ERROR_STOP=1 -At <<SQL | tail -1
SELECT pg_sleep(greatest(0, $T - extract(epoch FROM clock_timestamp())));
SELECT ttl_create_index('events', 'created_at', make_interval(secs => $ttl));
SQL
		)
	else
		id=$(q "$c" "SELECT ttl_create_index('events', 'created_at', make_interval(secs => $ttl))")
	fi
	pat="ttl_index: deleted [0-9]* rows from public\.events in [0-9]* ms"
	n=0
	for w in $(seq 1 3000); do
		n=0
		for i in 1 2; do
			k=$({ tail -c +"$((from[i] + 1))" "$base/n$i.log" | grep -o "$pat" || true; } | awk '{n += $3} END {print n + 0}')
			n=$((n + k))
		done
		[ "$n" -ge "$rows" ] && break
		sleep 0.2
	done
	[ "$n" -ge "$rows" ] || { echo "the nodes did not delete $rows rows within 600 s" >&2; exit 1; }
	[ "$(q "$c" "$expired")" = 0 ] || { echo "expired rows left after the drain" >&2; exit 1; }
	# per node: its rows, its passes, and when its first pass that deleted
	# began (the line's time less its duration), after the expiry
	last=0
	per=
	for i in 1 2; do
		lines=$(tail -c +"$((from[i] + 1))" "$base/n$i.log" | grep "$pat" || true)
		[ -n "$lines" ] || continue
		l=$(epoch_of "$(tail -1 <<<"$lines" | awk '{print $1 " " $2}')")
		later "$l" "$last" && last=$l
		f=$(head -1 <<<"$lines")
		fs=$(calc "$(epoch_of "$(awk '{print $1 " " $2}' <<<"$f")") - $(grep -o 'in [0-9]* ms' <<<"$f" | awk '{print $2}') / 1000 - $T")
		nr=$(grep -o "$pat" <<<"$lines" | awk '{n += $3} END {print n + 0}')
		nb=$(q "${ports[$i]}" "SELECT coalesce(sum(batches), 0) FROM ttl_index_policy_stats()")
		per="$per${per:+ }n$i:${nr}rows/$(wc -l <<<"$lines")passes/${nb}batches/start+${fs}s"
	done
	s=$(calc "$last - $T")
	printf '%d\tttl_index\t%s\t%.0f\t%s\n' "$r" "$s" "$(calc "$rows / $s")" "$per" >> "$base/runs.tsv"
	q "$c" "SELECT ttl_drop_index('events', 'created_at')" >/dev/null
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
printf 'distributed DELETE at expiry: %.3f s (median of %d), %.0f rows/s\n' "$d" "$runs" "$(calc "$rows / $d")"
printf 'ttl_index, expiry to gone:    %.3f s (median of %d), %.0f rows/s: %.2fx the DELETE\n' \
	"$t" "$runs" "$(calc "$rows / $t")" "$(calc "$d / $t")"
asserts="assertions on"
"$bin/pg_config" --configure | grep -q enable-cassert || asserts="no assertions"
echo "$rows rows over $shards shards on 2 worker nodes (the coordinator holds none), $([ -n "$distinct" ] && echo "every key distinct, the policy created at the expiry" || echo "1,000 distinct keys, the policy created $lead s before the expiry")"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), PostgreSQL $("$bin/pg_config" --version | cut -d' ' -f2) ($asserts), Citus $(q "$c" "SELECT extversion FROM pg_extension WHERE extname = 'citus'")"
