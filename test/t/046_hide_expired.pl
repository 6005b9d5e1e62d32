# hide_expired with the worker: readers never see the expired rows that
# are waiting to be deleted, and the worker still deletes them where the
# table forces row security on its owner (as whom it purges: without
# ttl_index_purging() in the policy the purge would not see them).  Then
# pg_dump and restore: the row-level security policies and the catalog row
# come back as one consistent pair (no policy twice, row security as it
# was), and the restored worker purges under FORCE as well.  Where Citus
# is installed (18's build), a one-node Citus cluster: hide_expired on a
# distributed table is refused with nothing changed, and a policy there
# without it reaches the nodes' copy with hide_expired false.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use TtlIndex;

my $node = TtlIndex::node('hide', 'ttl_index.naptime = 1');

$node->safe_psql('postgres', q{
CREATE DATABASE src;
CREATE ROLE hide_owner LOGIN;
CREATE ROLE hide_reader LOGIN;
});
$node->safe_psql('src', q{
CREATE EXTENSION ttl_index;
CREATE SCHEMA app AUTHORIZATION hide_owner;
GRANT USAGE ON SCHEMA app TO hide_reader;
SET ROLE hide_owner;
CREATE TABLE app.carts (id int, updated_at timestamptz, note text);
GRANT SELECT ON app.carts TO hide_reader;
ALTER TABLE app.carts FORCE ROW LEVEL SECURITY;
BEGIN;
SELECT ttl_create_index('app.carts', 'updated_at', 60, hide_expired => true);
SELECT ttl_pause('app.carts');
COMMIT;
INSERT INTO app.carts SELECT g, now() - interval '2 hours', 'old' FROM generate_series(1, 300) g;
INSERT INTO app.carts SELECT g, now() + interval '1 hour', 'new' FROM generate_series(1, 5) g;
});

# paused: the expired rows are there, and hidden from all but the superuser
is($node->safe_psql('src', 'SELECT count(*) FROM app.carts'), '305', 'superuser sees every row');
is($node->safe_psql('src', 'SET ROLE hide_reader; SELECT count(*) FROM app.carts'), '5',
	'a reader sees only the rows that have not expired');
is($node->safe_psql('src', 'SET ROLE hide_owner; SELECT count(*) FROM app.carts'), '5',
	'the owner, under FORCE ROW LEVEL SECURITY, too');

# the worker purges as the owner, under FORCE
$node->safe_psql('src', q{SET ROLE hide_owner; SELECT ttl_resume('app.carts')});
TtlIndex::wait_is($node, 'src', q{SELECT count(*) FROM app.carts WHERE note = 'old'}, '0',
	'the worker deletes the expired rows under FORCE ROW LEVEL SECURITY');
is($node->safe_psql('src', q{SELECT count(*) FROM app.carts WHERE note = 'new'}), '5',
	'and only them');
is($node->safe_psql('src', q{SELECT errors FROM ttl_index_stats WHERE table_name = 'app.carts'::regclass}),
	'0', 'without an error');

# dump and restore
my $policies = q{
SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, p.polname, p.polpermissive,
	   pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid),
	   (SELECT hide_expired FROM ttl_index_policy t WHERE t.relid = c.oid)
  FROM pg_class c JOIN pg_policy p ON p.polrelid = c.oid
 WHERE c.relnamespace = 'app'::regnamespace ORDER BY 1, 4};
my $src_policies = $node->safe_psql('src', $policies);
like($src_policies, qr/ttl_index_allow.*\n.*ttl_index_hide_expired_updated_at/,
	'source: the permissive and the restrictive policy');

my $dumpdir = PostgreSQL::Test::Utils::tempdir;
my @conn = ('-h', $node->host, '-p', $node->port);
my ($out, $err) = ('', '');
IPC::Run::run(['pg_dump', @conn, '-Fc', '-f', "$dumpdir/src.dump", '-d', 'src'], '>', \$out, '2>', \$err);
is($?, 0, 'pg_dump succeeds') or diag $err;
$node->safe_psql('postgres', 'CREATE DATABASE restored');
IPC::Run::run(['pg_restore', @conn, '-d', 'restored', "$dumpdir/src.dump"], '>', \$out, '2>', \$err);
is($?, 0, 'pg_restore succeeds');
is($err, '', 'pg_restore reports no error');
is($node->safe_psql('restored', $policies), $src_policies,
	'restored: the same policies, row security and catalog option as the source, none twice');

$node->safe_psql('restored', q{
INSERT INTO app.carts SELECT g, now() - interval '2 hours', 'old' FROM generate_series(1, 100) g;
});
is($node->safe_psql('restored', 'SET ROLE hide_reader; SELECT count(*) FROM app.carts'), '5',
	'restored: a reader does not see the expired rows');
TtlIndex::wait_is($node, 'restored', q{SELECT count(*) FROM app.carts WHERE note = 'old'}, '0',
	'restored: the worker deletes them under FORCE');

# turning it off in the restored database leaves the table as before the option
$node->safe_psql('restored', q{SET ROLE hide_owner; SELECT ttl_alter_index('app.carts', 'updated_at', hide_expired => false)});
is($node->safe_psql('restored', q{
SELECT relrowsecurity, relforcerowsecurity, (SELECT count(*) FROM pg_policy WHERE polrelid = c.oid)
  FROM pg_class c WHERE oid = 'app.carts'::regclass}), 'f|t|0',
	'restored: hide_expired => false removes what the extension made, FORCE stays the owner\'s');

$node->stop;
unlike(slurp_file($node->logfile), qr/TRAP:/, 'no assertion failure');

my $libdir = $node->config_data('--pkglibdir');
if (-e "$libdir/citus.so")
{
	my $c = TtlIndex::node('citus', "shared_preload_libraries = 'citus,ttl_index'",
		'max_worker_processes = 20');
	$c->safe_psql('postgres', sprintf(q{
CREATE EXTENSION citus;
CREATE EXTENSION ttl_index;
SELECT citus_set_coordinator_host('%s', %d);
SELECT citus_set_node_property(nodename, nodeport, 'shouldhaveshards', true) FROM pg_dist_node WHERE groupid = 0;
CREATE TABLE d (id int, ts timestamptz);
SELECT create_distributed_table('d', 'id');
}, $c->host, $c->port));
	my ($ret, $stdout, $stderr) = $c->psql('postgres',
		q{SELECT ttl_create_index('d', 'ts', 60, hide_expired => true)});
	like($stderr, qr/ERROR:  hide_expired is not supported on Citus table "d"/,
		'Citus: hide_expired on a distributed table is refused');
	is($c->safe_psql('postgres', q{SELECT count(*) FROM ttl_index_policy}), '0',
		'Citus: no policy was written');
	is($c->safe_psql('postgres', q{SELECT relrowsecurity FROM pg_class WHERE oid = 'd'::regclass}), 'f',
		'Citus: row security untouched');
	$c->safe_psql('postgres', q{SELECT ttl_create_index('d', 'ts', 60)});
	is($c->safe_psql('postgres', q{SELECT hide_expired FROM ttl_index_citus_policy}), 'f',
		"Citus: the nodes' copy carries hide_expired");
	$c->stop;
	unlike(slurp_file($c->logfile), qr/TRAP:/, 'Citus: no assertion failure');
}
done_testing();
