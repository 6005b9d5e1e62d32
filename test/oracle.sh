#!/usr/bin/env bash
#
# test/oracle.sh: run the randomized oracle (test/t/040_oracle.pl) alone,
# in soak mode.
#
#   bash test/oracle.sh --cases N   [--pg 15|18] [--seed S]
#   bash test/oracle.sh --minutes M [--pg 15|18] [--seed S]
#
# The extension must be installed for the server chosen (make install
# PG_CONFIG=...); PG_CONFIG in the environment overrides --pg. Each batch
# of cases prints its seed; --seed replays a run (TTL_ORACLE_SEED). Run as
# root, it runs itself again as the postgres OS user. Logs are in
# tmp_check/log/ (regress_log_040_oracle: every failing case's SQL).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pg=15 cases= minutes= seed=
while [ $# -gt 0 ]; do
	case $1 in
		--cases) cases=$2; shift 2 ;;
		--minutes) minutes=$2; shift 2 ;;
		--pg) pg=$2; shift 2 ;;
		--seed) seed=$2; shift 2 ;;
		*) echo "usage: $0 --cases N | --minutes M [--pg 15|18] [--seed S]" >&2; exit 2 ;;
	esac
done
if [ -z "$cases$minutes" ]; then
	echo "usage: $0 --cases N | --minutes M [--pg 15|18] [--seed S]" >&2
	exit 2
fi
if [ -z "${PG_CONFIG:-}" ]; then
	case $pg in
		15) PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config ;;
		18) PG_CONFIG="$(bash "$here/test/pg_build.sh" citus 18)/pg_config" ;;
		*) echo "--pg: 15 or 18" >&2; exit 2 ;;
	esac
fi
env=(PG_CONFIG="$PG_CONFIG")
[ -n "$cases" ] && env+=(TTL_ORACLE_CASES="$cases")
[ -n "$minutes" ] && env+=(TTL_ORACLE_MINUTES="$minutes")
[ -n "$seed" ] && env+=(TTL_ORACLE_SEED="$seed")
cmd="cd '$here' && rm -rf tmp_check/t_040_oracle_* && ${env[*]} make -s prove_installcheck PG_CONFIG='$PG_CONFIG' PROVE_TESTS=test/t/040_oracle.pl PROVE_FLAGS=--timer"
if [ "$(id -u)" = 0 ]; then
	chmod -R a+rX "$here"
	mkdir -p "$here/tmp_check" && chown -R postgres "$here/tmp_check"
	exec su postgres -s /bin/bash -c "export ${env[*]}; $cmd"
fi
exec bash -c "export ${env[*]}; $cmd"
