#!/usr/bin/env bash
#
# test/deb.sh DIR: build the Debian package of the tree in DIR with
# dpkg-buildpackage (pg_buildext) for the PostgreSQL that PG_CONFIG names
# (postgresql-15-ttl-index on Debian 12, postgresql-17-ttl-index in the
# Debian 13 root of test/debian_root.sh 17, postgresql-19-ttl-index in the
# Debian sid root of test/debian_root.sh 19) and install it.  Run as root;
# test/run_tests.sh then runs the suites on that version against what the
# package installed.  The .deb is left in test/log/.
#
# pg_buildext builds for the versions postgresql-common calls supported:
# in the sid root that is sid's default (18, whose development files
# postgresql-server-dev-all brings), not 19 from experimental, so the
# version is named (PG_SUPPORTED_VERSIONS) rather than left to the machine.
set -euo pipefail
dir=$(cd "${1:-$(dirname "$0")/..}" && pwd)
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
major=$("$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
export PG_SUPPORTED_VERSIONS=$major
version=$(dpkg-parsechangelog -l "$dir/debian/changelog" -S Version)
work=$(mktemp -d /tmp/ttl_index_deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/ttl-index-$version"
# the tree as git has it, without build products or test output
(cd "$dir" && tar cf - --exclude=.git --exclude=test/log --exclude=tmp_check --exclude=results \
	--exclude='*.o' --exclude='*.so' --exclude='*.bc' .) | tar xf - -C "$work/ttl-index-$version"
echo "== building the Debian package ttl-index $version for PostgreSQL $major"
(cd "$work/ttl-index-$version" && dpkg-buildpackage -us -uc -b) > "$work/build.log" 2>&1 ||
	{ tail -40 "$work/build.log"; exit 1; }
debs=$(ls "$work"/postgresql-*-ttl-index_"$version"_*.deb)
echo "== installing $(basename -a $debs | tr '\n' ' ')"
dpkg -i $debs > /dev/null
mkdir -p "$dir/test/log"
cp $debs "$dir/test/log/"
for deb in $debs; do
	dpkg -L "$(dpkg-deb -f "$deb" Package)" | grep -E '\.so$|\.control$'
done
