#!/usr/bin/env bash
#
# test/bench/soak.sh [SECONDS] [ROWS_PER_SECOND]: a soak run (default 600 s
# at 2,000 rows/s).  pgbench inserts rows that expire 1 to 5 s later into a
# TTL table while the worker deletes them and autovacuum (default settings)
# cleans up.  Every 10 s it samples the worker's memory (RSS, and its private
# part RssAnon, which excludes the shared buffers it has touched), the
# table's size with its indexes, the live rows and the lag, then prints the
# series and a summary: memory must stay flat and the size bounded.
# Run as root (installs and builds first) or as the postgres user.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/test/lib.sh"
seconds=${1:-600}
rate=${2:-2000}
if [ "$(id -u)" = 0 ]; then
	ttl_root_setup "$here" >/dev/null
	exec su postgres -s /bin/bash -c "bash '$here/test/bench/soak.sh' $seconds $rate"
fi
ttl_scratch_server soak 55497
$psql <<'SQL'
CREATE EXTENSION ttl_index;
CREATE TABLE soak (id bigserial PRIMARY KEY, expires_at timestamptz NOT NULL, payload text);
SELECT ttl_create_index('soak', 'expires_at', 0);
SQL
# 10 rows per transaction
cat > "$dir/insert.sql" <<'SQL'
INSERT INTO soak (expires_at, payload)
  SELECT now() + (1 + random() * 4) * interval '1 second', repeat('p', 100) FROM generate_series(1, 10);
SQL
$PGBIN/pgbench -n -h "$dir" -p 55497 -U postgres -c 2 -j 2 -R $((rate / 10)) -T "$seconds" \
	-f "$dir/insert.sql" postgres > "$dir/pgbench.out" 2>&1 &
bench=$!

printf '%6s %10s %12s %12s %10s %8s\n' t_s rss_kb rss_anon_kb size_kb live_rows lag_s
samples="$dir/samples"
: > "$samples"
start=$(date +%s)
while kill -0 $bench 2>/dev/null; do
	sleep 10
	now=$(( $(date +%s) - start ))
	pid=$($psql -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl_index worker'")
	rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
	anon=$(awk '/^RssAnon/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
	read -r size live lag <<<"$($psql -F ' ' -c "SELECT pg_total_relation_size('soak') / 1024, (SELECT count(*) FROM soak), coalesce(extract(epoch FROM lag), 0)::numeric(10,2) FROM ttl_index_stats")"
	printf '%6s %10s %12s %12s %10s %8s\n' "$now" "$rss" "$anon" "$size" "$live" "$lag" | tee -a "$samples"
done
wait $bench || true
echo
grep -E "^(number of transactions actually processed|tps)" "$dir/pgbench.out" || true
$psql -F ' ' -c "SELECT 'deleted', rows_deleted, 'batches', batches, 'errors', errors FROM ttl_index_stats"
# summary: skip the first minute (warm-up) for the flatness figures
awk -v skip=60 '
	$1 > skip {
		n++
		if (n == 1) { rss0 = $2; anon0 = $3; size0 = $4 }
		if ($2 > rssmax) rssmax = $2
		if ($3 > anonmax) anonmax = $3
		if ($4 > sizemax) sizemax = $4
		if ($6 > lagmax) lagmax = $6
		rss1 = $2; anon1 = $3; size1 = $4
	}
	END {
		printf "after the first minute: RSS %d -> %d kB (max %d), RssAnon %d -> %d kB (max %d)\n", rss0, rss1, rssmax, anon0, anon1, anonmax
		printf "table + indexes: %d -> %d kB (max %d); max lag %.2f s\n", size0, size1, sizemax, lagmax
	}' "$samples"
