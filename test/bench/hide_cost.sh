#!/usr/bin/env bash
#
# test/bench/hide_cost.sh [ROWS] [SECONDS]: what hide_expired costs readers.
# One table of ROWS rows (default 1M; a tenth expired, kept: the worker is
# off), read by an ordinary role granted SELECT, with pgbench for SECONDS
# (default 10) per query, without and with hide_expired on the same table,
# alternating, in 3 rounds (the medians are printed):
#   point   pgbench -S's query: SELECT by primary key
#   range   an index range scan over one minute of the TTL column
#   like    a LIKE prefix on an indexed text column (text_pattern_ops):
#           LIKE is not leakproof, so with row security PostgreSQL does not
#           use it below the policy's qual
#   prefix  the same rows as a range of the pattern operators (~>=~, ~<~),
#           which are leakproof: the index serves it under row security
# Prints transactions per second side by side, and each query's plan with
# the option.  Uses the build already installed for PG_CONFIG (or PGBIN);
# run as the postgres user, or as root (it re-runs itself as postgres).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
pgbin_override=${PGBIN:-}
. "$here/test/lib.sh"
[ -n "$pgbin_override" ] && PGBIN=$pgbin_override
rows=${1:-1000000}
secs=${2:-10}
if [ "$(id -u)" = 0 ]; then
	exec su postgres -s /bin/bash -c "PGBIN='$PGBIN' PG_CONFIG='$PG_CONFIG' bash '$here/test/bench/hide_cost.sh' $rows $secs"
fi
ttl_scratch_server hide 55499 "ttl_index.enabled = off" "shared_buffers = 512MB" "autovacuum = off"
$psql >/dev/null <<SQL
CREATE EXTENSION ttl_index;
CREATE ROLE reader LOGIN;
CREATE TABLE bench (id int PRIMARY KEY, created_at timestamptz NOT NULL, note text NOT NULL);
INSERT INTO bench SELECT g, now() - (g % 7200) * interval '1 s', md5(g::text) FROM generate_series(1, $rows) g;
CREATE INDEX bench_note ON bench (note text_pattern_ops);
GRANT SELECT ON bench TO reader;
SELECT ttl_create_index('bench', 'created_at', interval '108 minutes') > 0;
VACUUM ANALYZE bench;
SQL
cd "$dir"
cat > point.sql <<SQL
\set id random(1, $rows)
SELECT note FROM bench WHERE id = :id;
SQL
cat > range.sql <<'SQL'
\set m random(0, 100)
SELECT count(*), max(note) FROM bench WHERE created_at >= now() - (:m + 1) * interval '1 minute' AND created_at < now() - :m * interval '1 minute';
SQL
cat > like.sql <<'SQL'
\set n random(4096, 65534)
SELECT count(*) FROM bench WHERE note LIKE to_hex(:n) || '%';
SQL
cat > prefix.sql <<'SQL'
\set n random(4096, 65534)
SELECT count(*) FROM bench WHERE note ~>=~ to_hex(:n) AND note ~<~ to_hex(:n + 1);
SQL
run() {
	"$PGBIN/pgbench" -n -h "$dir" -p 55499 -U reader -c 1 -T "$secs" -f "$1.sql" postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
median() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
declare -A off on
for round in 1 2 3; do
	$psql -c "SELECT ttl_alter_index('bench', 'created_at', hide_expired => false) > 0" >/dev/null
	for q in point range like prefix; do off[$q]="${off[$q]:-} $(run $q)"; done
	$psql -c "SELECT ttl_alter_index('bench', 'created_at', hide_expired => true) > 0" >/dev/null
	for q in point range like prefix; do on[$q]="${on[$q]:-} $(run $q)"; done
done
echo "hide_expired read cost: $rows rows (10% expired), 1 client, ${secs}s per query and round, median of 3 rounds, $(date -u '+%Y-%m-%d %H:%M UTC')"
printf '%-6s %14s %14s %8s\n' query "tps without" "tps with" ratio
for q in point range like prefix; do
	a=$(median ${off[$q]}); b=$(median ${on[$q]})
	printf '%-6s %14.0f %14.0f %8.2f\n' $q "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
echo "leakproof operators (may be used below the policy's qual):"
$psql -c "SELECT o.oprname || ' (' || o.oprleft::regtype || ')', p.proleakproof FROM pg_operator o JOIN pg_proc p ON p.oid = o.oprcode
 WHERE (o.oprname IN ('~~', '~>=~', '~<~', '=', '>=') AND o.oprleft = 'text'::regtype AND o.oprright = 'text'::regtype)
    OR (o.oprname = '@>' AND o.oprleft = 'jsonb'::regtype) ORDER BY 1" | sed 's/^/  /'
echo "plans with hide_expired, as the reader:"
$psql -c "SET ROLE reader; EXPLAIN (COSTS OFF) SELECT count(*) FROM bench WHERE note LIKE 'abcd%'" | sed 's/^/  like:  /'
$psql -c "SET ROLE reader; EXPLAIN (COSTS OFF) SELECT count(*) FROM bench WHERE note ~>=~ 'abcd' AND note ~<~ 'abce'" | sed 's/^/  prefix: /'
$psql -c "SET ROLE reader; EXPLAIN (COSTS OFF) SELECT count(*) FROM bench WHERE created_at >= now() - interval '2 minutes' AND created_at < now() - interval '1 minute'" | sed 's/^/  range: /'
