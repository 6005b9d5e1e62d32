#!/usr/bin/env bash
#
# test/demo.sh: a live demo on a throwaway server.  As root on a fresh
# Debian 12 machine it installs what it needs, builds and installs the
# extension, then (as the postgres user) starts a server with ttl_index
# preloaded, fills a table whose rows expire over the next seconds, and shows
# them disappearing together with ttl_index_stats, then drains a backlog of
# 2M rows while ttl_index_progress and pg_stat_activity show the worker at
# work, and ends with the worker's log lines.  Cleans up at the end.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/test/lib.sh"

if [ "$(id -u)" = 0 ]; then
	ttl_root_setup "$here" >/dev/null
	exec su postgres -s /bin/bash -c "bash '$here/test/demo.sh'"
fi

ttl_scratch_server demo 55499 "ttl_index.log_min_duration = 0"
# the demo shows query results with their headers
psql="$PGBIN/psql -X -q -h $dir -p 55499 -U postgres -d postgres"

echo "== a table of sessions; each row lives 2 seconds after its created_at"
$psql -e <<'SQL'
CREATE EXTENSION ttl_index;
CREATE TABLE sessions (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL, user_name text);
SELECT ttl_create_index('public.sessions', 'created_at', 2);
-- 100,000 rows, created over the last 6 seconds: the older two thirds are already expired
INSERT INTO sessions (created_at, user_name)
  SELECT now() - (g % 6000) * interval '1 ms' * 1, 'user' || g FROM generate_series(1, 100000) g;
INSERT INTO sessions (created_at, user_name)
  SELECT now() + (g % 5) * interval '1 second', 'late' || g FROM generate_series(1, 50000) g;
SQL
for i in 1 2 3 4 5 6 7 8; do
	$psql -At -c "SELECT format('t=%ss  rows left: %s', $((i - 1)), count(*)) FROM sessions"
	sleep 1
done
echo
echo "== SELECT * FROM ttl_index_stats"
$psql -x -c "SELECT * FROM ttl_index_stats"

echo "== a backlog: 2,000,000 events that expired yesterday (the worker is paused while they load)"
$psql -e <<'SQL'
ALTER SYSTEM SET ttl_index.enabled = off;
SELECT pg_reload_conf();
CREATE TABLE events (id bigserial, at timestamptz NOT NULL, payload text);
INSERT INTO events (at, payload)
  SELECT now() - interval '1 day' - g * interval '10 ms', 'event ' || g FROM generate_series(1, 2000000) g;
SELECT ttl_create_index('public.events', 'at', interval '1 hour');
ANALYZE events;
SELECT table_name, lag, expired_estimate FROM ttl_index_stats WHERE table_name = 'events'::regclass;
ALTER SYSTEM RESET ttl_index.enabled;
SELECT pg_reload_conf();
SQL
for i in 1 2 3; do
	sleep 0.3
	echo "== SELECT * FROM ttl_index_progress  (sample $i)"
	$psql -x -c "SELECT * FROM ttl_index_progress"
done
echo "== the worker, as pg_stat_activity shows it"
$psql -c "SELECT pid, backend_type, application_name, wait_event, query FROM pg_stat_activity WHERE backend_type LIKE 'ttl_index%'"
for i in $(seq 1 30); do
	[ "$($psql -At -c 'SELECT count(*) FROM events')" = 0 ] && break
	sleep 0.5
done
echo "== once drained: SELECT * FROM ttl_index_stats WHERE table_name = 'events'::regclass"
$psql -x -c "SELECT * FROM ttl_index_stats WHERE table_name = 'events'::regclass"
echo "== SELECT * FROM ttl_index_progress"
$psql -x -c "SELECT * FROM ttl_index_progress"
echo "== the server log (ttl_index.log_min_duration = 0)"
grep -E 'LOG:  ttl_index' "$dir/log" | sed -e 's/^[0-9-]* [0-9:.]* [A-Z]* //'
