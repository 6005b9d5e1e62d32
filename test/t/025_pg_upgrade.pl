# pg_upgrade with live policies: a PostgreSQL 15 cluster with ttl_index
# preloaded, whose worker is purging, is upgraded with pg_upgrade to the
# server under test.  The servers pg_upgrade runs (binary-upgrade mode) must
# start no ttl_index launcher and no worker; after the upgrade every policy
# is there as it was, and the worker, started by itself, purges the rows that
# expired while the old cluster's worker was switched off.  A table that
# hides its expired rows (hide_expired) keeps its row-level security
# policies, which call the extension's ttl_index_purging(): a reader sees
# no expired row on either side, and the new worker still purges them.
#
# The old cluster runs from an installation of PostgreSQL 15 that carries
# the same ttl_index (TTL_UPGRADE_FROM, default Debian's /usr/lib/postgresql/15,
# where test/run_tests.sh installs the package it builds).  Without one, or
# when the server under test is not newer, the test is skipped.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TtlIndex;

my $old_path = $ENV{TTL_UPGRADE_FROM} // '/usr/lib/postgresql/15';
my $old_pkglib = -x "$old_path/bin/pg_config" ? `"$old_path/bin/pg_config" --pkglibdir` : '';
chomp $old_pkglib;
plan skip_all => "no PostgreSQL 15 with ttl_index installed in $old_path to upgrade from"
  unless -x "$old_path/bin/pg_ctl" && $old_pkglib ne '' && -f "$old_pkglib/ttl_index.so";

my $new = PostgreSQL::Test::Cluster->new('new');
my $old_major = `"$old_path/bin/pg_config" --version` =~ /PostgreSQL (\d+)/ ? $1 : 0;
plan skip_all => "pg_upgrade goes from PostgreSQL $old_major to a newer major; this is "
  . $new->pg_version->major
  unless $new->pg_version->major > $old_major;

my $old = PostgreSQL::Test::Cluster->new('old', install_path => $old_path);

# Both clusters get data checksums, which 18's initdb turns on by default
# and 15's does not (pg_upgrade needs them alike).
my $conf = "shared_preload_libraries = 'ttl_index'\nttl_index.launcher_naptime = 1\n";
$old->init(extra => ['--data-checksums']);
$old->append_conf('postgresql.conf', $conf);
$old->start;

# --- live policies on 15 -------------------------------------------------
$old->safe_psql('postgres', 'CREATE DATABASE app');
$old->safe_psql('app', q{
CREATE EXTENSION ttl_index;
CREATE TABLE sessions (id serial PRIMARY KEY, created_at timestamptz, note text);
SELECT ttl_create_index('sessions', 'created_at', 3600);
CREATE TABLE events (at bigint, kind text);
-- a filter calling a function of the database: the policy records it by
-- its signature, which pg_upgrade keeps (it keeps no function OID)
CREATE FUNCTION noisy(kind text) RETURNS boolean LANGUAGE sql IMMUTABLE
    AS $$ SELECT kind = 'debug' $$;
SELECT ttl_create_index('events', 'at', interval '1 day', unit => 's',
                        filter => 'noisy(kind)', batch_size => 500);
CREATE TABLE held (created_at timestamptz);
SELECT ttl_create_index('held', 'created_at', 60);
SELECT ttl_pause('held');
-- hide_expired: row-level security policies that call the extension's
-- ttl_index_purging(); paused, so that its expired rows are still there,
-- and hidden, on either side of the upgrade
-- and owned by a role that is not a superuser, under FORCE ROW LEVEL
-- SECURITY: the owner too sees no expired row, and the worker purges as it
CREATE ROLE hide_owner;
CREATE ROLE hide_reader;
CREATE TABLE carts (id int, updated_at timestamptz, note text);
ALTER TABLE carts OWNER TO hide_owner;
GRANT SELECT ON carts TO hide_reader;
ALTER TABLE carts FORCE ROW LEVEL SECURITY;
BEGIN;
SELECT ttl_create_index('carts', 'updated_at', 60, hide_expired => true);
SELECT ttl_pause('carts');
COMMIT;
INSERT INTO carts SELECT g, now() - interval '2 hours', 'old' FROM generate_series(1, 200) g;
INSERT INTO carts SELECT g, now() + interval '1 day', 'new' FROM generate_series(1, 7) g;
});

# expired_rows(node, tag): rows that have expired, in each table
sub expired_rows
{
	my ($node, $tag) = @_;
	$node->safe_psql('app', qq{
INSERT INTO sessions (created_at, note) SELECT now() - interval '2 hours', '$tag' FROM generate_series(1, 3000);
INSERT INTO events SELECT extract(epoch FROM now() - interval '2 days')::bigint, 'debug' FROM generate_series(1, 1000);
INSERT INTO held SELECT now() - interval '1 hour' FROM generate_series(1, 10);
});
}

$old->safe_psql('app', q{
INSERT INTO sessions (created_at, note) SELECT now(), 'fresh' FROM generate_series(1, 100);
INSERT INTO events SELECT extract(epoch FROM now() - interval '2 days')::bigint, 'audit' FROM generate_series(1, 50);
});
expired_rows($old, 'old');
TtlIndex::wait_worker($old, 'app', 'PostgreSQL 15: the worker runs');
TtlIndex::wait_is($old, 'app',
	"SELECT (SELECT count(*) FROM sessions) || ' ' || (SELECT count(*) FROM events) || ' ' || (SELECT count(*) FROM held)",
	'100 50 10', 'PostgreSQL 15: the worker purges the expired rows (the paused policy keeps its rows)', 60);

# The old cluster's worker is switched off (ALTER SYSTEM: the new cluster
# does not inherit it), then more rows expire: only the new cluster's
# worker can purge them.
$old->safe_psql('postgres', 'ALTER SYSTEM SET ttl_index.enabled = off');
$old->reload;
TtlIndex::wait_until($old, 'app',
	"SELECT phase = 'disabled' FROM ttl_index_progress WHERE datname = 'app'",
	'PostgreSQL 15: the worker is switched off');
expired_rows($old, 'late');
is($old->safe_psql('app', "SELECT count(*) FROM sessions WHERE note = 'late'"), '3000',
	'PostgreSQL 15: expired rows are left for the new cluster');

my $policies_sql = q{
SELECT table_name, column_name, expire_after, batch_size, enabled, paused, filter, unit
  FROM ttl_index_stats ORDER BY table_name::text};
my $policies = $old->safe_psql('app', $policies_sql);
# what hide_expired made: row security and the two policies, each with its
# expression (the restrictive one calls ttl_index_purging())
my $hide_sql = q{
SELECT c.relrowsecurity, c.relforcerowsecurity, p.polname, p.polpermissive,
	   pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid),
	   (SELECT hide_expired FROM ttl_index_policy t WHERE t.relid = c.oid)
  FROM pg_class c JOIN pg_policy p ON p.polrelid = c.oid
 WHERE c.oid = 'carts'::regclass ORDER BY p.polname};
my $hide = $old->safe_psql('app', $hide_sql);
like($hide, qr/ttl_index_allow.*\n.*ttl_index_hide_expired_updated_at.*ttl_index_purging/,
	'PostgreSQL 15: hide_expired made its two policies');
is($old->safe_psql('app', 'SET ROLE hide_reader; SELECT count(*) FROM carts') . ' '
	. $old->safe_psql('app', 'SET ROLE hide_owner; SELECT count(*) FROM carts'), '7 7',
	'PostgreSQL 15: neither a reader nor the owner under FORCE sees the expired rows of a hide_expired table');
my $version = $old->safe_psql('app', "SELECT extversion FROM pg_extension WHERE extname = 'ttl_index'");

# Debian's PostgreSQL 15.20 (like Debian 13's 17.12) stamps every column it
# creates with the attribute option pg_attver.  Its own pg_dump leaves the
# option out, but the pg_dump of the older releases 16.2 and 18.3 dumps it,
# and their server refuses it ("unrecognized parameter"): pg_upgrade to
# them fails on any table, with or without ttl_index.  The option is
# cleared from the old cluster's catalog first.
foreach my $db (split /\n/, $old->safe_psql('postgres',
		'SELECT datname FROM pg_database WHERE datallowconn'))
{
	$old->safe_psql($db, q{
SET allow_system_table_mods = on;
UPDATE pg_attribute
   SET attoptions = nullif(ARRAY(SELECT o FROM unnest(attoptions) o WHERE o NOT LIKE 'pg_attver=%'), '{}')
 WHERE attrelid >= 16384 AND attoptions::text LIKE '%pg_attver=%';
});
}
# The servers pg_upgrade starts log at DEBUG1, where the postmaster names
# every background worker it registers or starts.
$old->append_conf('postgresql.conf', "log_min_messages = debug1\n");
$old->stop;

# --- pg_upgrade ------------------------------------------------------------
$new->init(extra => ['--data-checksums']);
$new->append_conf('postgresql.conf', $conf . "log_min_messages = debug1\n");

my $sockdir = PostgreSQL::Test::Utils::tempdir_short();
command_ok([
		'pg_upgrade', '--no-sync', '--retain',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', "$old_path/bin", '-B', $new->config_data('--bindir'),
		'-s', $sockdir, '-p', $old->port, '-P', $new->port,
	],
	'pg_upgrade from PostgreSQL 15 with live policies');

# The log of the servers pg_upgrade started (old and new, one file; the
# retained output directory of the new cluster)
my @logs = glob($new->data_dir . '/pg_upgrade_output.d/*/log/pg_upgrade_server.log');
is(scalar(@logs), 1, 'pg_upgrade kept the log of its servers');
my $log = @logs ? slurp_file($logs[0]) : '';
like($log, qr/starting PostgreSQL \Q@{[$new->pg_version]}\E\b/,
	'the log holds the new cluster\'s servers');
is(join("\n", grep { /ttl_index (launcher|worker)/ } split(/\n/, $log)), '',
	'no ttl_index launcher or worker in binary-upgrade mode');

# --- after the upgrade -----------------------------------------------------
# back to the default log level for the new cluster's own life
$new->adjust_conf('postgresql.conf', 'log_min_messages', 'warning');
$new->start;
is($new->safe_psql('app', "SELECT extversion FROM pg_extension WHERE extname = 'ttl_index'"),
	$version, 'the extension keeps its version');
is($new->safe_psql('app', $policies_sql), $policies, 'every policy is there, as it was');
TtlIndex::wait_worker($new, 'app', 'the worker starts by itself after the upgrade');
TtlIndex::wait_is($new, 'app',
	"SELECT (SELECT count(*) FROM sessions) || ' ' || (SELECT count(*) FROM events) || ' ' || (SELECT count(*) FROM held)",
	'100 50 20', 'the worker purges the rows that expired before the upgrade (the paused policy keeps its rows)', 60);
TtlIndex::wait_is($new, 'app',
	"SELECT string_agg(table_name || ' ' || rows_deleted || ' ' || errors, ', ' ORDER BY table_name::text) FROM ttl_index_stats",
	'carts 0 0, events 1000 0, held 0 0, sessions 3000 0', 'ttl_index_stats counts what the new worker did');
$new->safe_psql('app', q{SELECT ttl_resume('held')});
TtlIndex::wait_is($new, 'app', 'SELECT count(*) FROM held', '0',
	'a policy paused before the upgrade purges once resumed');

# hide_expired: the same policies, still hiding the expired rows from a
# reader and from the owner under FORCE, and the worker, once the policy
# is resumed, still purges them as that owner
is($new->safe_psql('app', $hide_sql), $hide,
	'hide_expired: the same row security, policies and catalog option after the upgrade');
is($new->safe_psql('app', 'SELECT count(*) FROM carts'), '207',
	'hide_expired: the expired rows are still there (the policy is paused)');
is($new->safe_psql('app', 'SET ROLE hide_reader; SELECT count(*) FROM carts') . ' '
	. $new->safe_psql('app', 'SET ROLE hide_owner; SELECT count(*) FROM carts'), '7 7',
	'hide_expired: neither the reader nor the owner sees them after the upgrade');
$new->safe_psql('app', q{SELECT ttl_resume('carts')});
TtlIndex::wait_is($new, 'app', q{SELECT count(*) FROM carts WHERE note = 'old'}, '0',
	'hide_expired: the new worker deletes them under FORCE ROW LEVEL SECURITY');
is($new->safe_psql('app', q{SELECT count(*) || ' ' || (SELECT errors FROM ttl_index_stats WHERE table_name = 'carts'::regclass) FROM carts}),
	'7 0', 'hide_expired: and only them, without an error');

$new->stop;
done_testing();
