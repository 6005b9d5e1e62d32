#!/usr/bin/env bash
#
# test/bench/turns.sh: what a database's turn costs when more databases
# need a worker than may run at once (docs/operations.md, "Workers and
# databases").  Database a has a policy with 100 rows a trigger refuses
# (held rows) among 20,000 expired ones; databases b and c have a small
# policy each.  With ttl_index.max_workers = 1 they take turns; the run
# counts, over SECS seconds, the worker lives database a had, the batches
# it rolled back and the held-row log entries, beside a run with a worker
# for each database (MAXW=3).  As root, against the PostgreSQL of
# PG_CONFIG, with ttl_index installed there; prints one line per run.
#
#   bash test/bench/turns.sh            # SECS=90, turns of 2 s
#
set -eu
PG_CONFIG=${PG_CONFIG:-pg_config}
bindir=$($PG_CONFIG --bindir)
secs=${SECS:-90}
turn=${TURN:-2}
port=${PORT:-5499}
data=$(mktemp -d /tmp/ttl_turns.XXXXXX)
chown postgres "$data"

q() { su postgres -c "$bindir/psql -h /tmp -p $port -X -q -At -d $1 -c \"$2\""; }

run() {
	local maxw=$1 pids i r0 r1 l0 l1
	rm -rf "$data/pg"
	su postgres -c "$bindir/initdb -D $data/pg -A trust >/dev/null"
	cat >> "$data/pg/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '/tmp'
shared_preload_libraries = 'ttl_index'
ttl_index.max_workers = $maxw
ttl_index.max_parallel_workers = 0
ttl_index.database_turn = $turn
ttl_index.launcher_naptime = 1
ttl_index.error_delay = 1
max_worker_processes = 8
CONF
	su postgres -c "$bindir/pg_ctl -D $data/pg -l $data/pg/log -w start >/dev/null"
	for db in a b c; do
		q postgres "CREATE DATABASE $db"
		q $db "SET client_min_messages = error; CREATE EXTENSION ttl_index"
	done
	su postgres -c "$bindir/psql -h /tmp -p $port -X -q -d a" >/dev/null <<'SQL'
CREATE TABLE docs (id int, ts timestamptz NOT NULL, hold boolean NOT NULL);
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF OLD.hold THEN RAISE EXCEPTION 'document % is on hold', OLD.id; END IF; RETURN OLD; END $$;
CREATE TRIGGER refuse BEFORE DELETE ON docs FOR EACH ROW EXECUTE FUNCTION refuse();
INSERT INTO docs SELECT g, now() - interval '1 day', g % 200 = 0 FROM generate_series(1, 20000) g;
SELECT ttl_create_index('docs', 'ts', 60);
SQL
	for db in b c; do
		q $db "CREATE TABLE t (ts timestamptz NOT NULL); INSERT INTO t SELECT now() - interval '1 day' FROM generate_series(1, 1000); SELECT ttl_create_index('t', 'ts', 60)" >/dev/null
	done
	# a state, not a time: database a's first pass has held its 100 rows
	for i in $(seq 1 600); do
		[ "$(q a 'SELECT coalesce(max(rows_held), 0) FROM ttl_index_stats')" = 100 ] && break
		sleep 0.5
	done
	r0=$(q a "SELECT xact_rollback FROM pg_stat_database WHERE datname = 'a'")
	l0=$(grep -c 'cannot be removed' "$data/pg/log" || true)
	: > "$data/pids"
	end=$((SECONDS + secs))
	while [ $SECONDS -lt $end ]; do
		q postgres "SELECT pid FROM pg_stat_activity WHERE datname = 'a' AND backend_type LIKE 'ttl_index worker%'" >> "$data/pids"
		sleep 0.3
	done
	r1=$(q a "SELECT xact_rollback FROM pg_stat_database WHERE datname = 'a'")
	l1=$(grep -c 'cannot be removed' "$data/pg/log" || true)
	pids=$(sort -u "$data/pids" | grep -c . || true)
	echo "max_workers=$maxw, ${secs} s: database a had $pids worker lives, rolled back $((r1 - r0)) batches, logged held rows $((l1 - l0)) times"
	su postgres -c "$bindir/pg_ctl -D $data/pg -m fast stop >/dev/null"
}

run 1
run 3
rm -rf "$data"
