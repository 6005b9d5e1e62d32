# Citus: three local nodes (a coordinator that holds shards and two
# workers).  In this version a TTL policy cannot be put on a Citus table:
# the table on the coordinator is an empty shell and a policy on it would
# purge nothing while saying nothing expired.  So ttl_create_index() refuses
# distributed, reference and Citus local tables with a clear error and
# changes nothing; a policy made before its table was distributed fails
# each pass with that error (shown by ttl_index_stats) instead of a lag of
# 0; ttl_drop_index() drops the TTL index on every shard, on every node,
# through the statement Citus propagates; a policy on a plain table of a
# Citus coordinator purges as anywhere else; and DROP DATABASE works with
# both Citus's maintenance daemon and the worker connected.
#
# Runs where Citus is installed in the server under test (the PostgreSQL
# 18.3 build of test/pg_build.sh); skipped elsewhere.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $probe = PostgreSQL::Test::Cluster->new('probe');
my $libdir = $probe->config_data('--pkglibdir');
plan skip_all => "Citus is not installed in $libdir" unless -e "$libdir/citus.so";

# citus first: it must be the first library preloaded
my @conf = ("shared_preload_libraries = 'citus,ttl_index'",
	'max_worker_processes = 20', 'wal_level = logical',
	'citus.override_table_visibility = off', 'ttl_index.log_min_duration = -1');
my $coord = TtlIndex::node('coord', @conf);
my @workers = map { TtlIndex::node("worker$_", @conf) } 1 .. 2;
my $db = 'postgres';

for my $n ($coord, @workers)
{
	$n->safe_psql($db, 'CREATE EXTENSION citus');
}
$coord->safe_psql($db, sprintf(q{SELECT citus_set_coordinator_host('%s', %d)},
	$coord->host, $coord->port));
for my $w (@workers)
{
	$coord->safe_psql($db, sprintf(q{SELECT citus_add_node('%s', %d)}, $w->host, $w->port));
}
$coord->safe_psql($db, q{SELECT citus_set_node_property(nodename, nodeport, 'shouldhaveshards', true)
  FROM pg_dist_node WHERE groupid = 0});
is($coord->safe_psql($db, 'SELECT count(*) FROM pg_dist_node WHERE shouldhaveshards'), '3',
	'three nodes hold shards');

# Citus propagates CREATE EXTENSION to the nodes it knows
$coord->safe_psql($db, 'CREATE EXTENSION ttl_index');
for my $w (@workers)
{
	is($w->safe_psql($db, q{SELECT count(*) FROM pg_extension WHERE extname = 'ttl_index'}), '1',
		'the extension is on worker ' . $w->name);
}

# indexes(pattern): the indexes named so, counted over the three nodes
# (shard tables included: citus.override_table_visibility is off)
sub indexes
{
	my ($pattern) = @_;
	my $n = 0;
	for my $node ($coord, @workers)
	{
		$n += $node->safe_psql($db,
			"SELECT count(*) FROM pg_class WHERE relkind = 'i' AND relname LIKE '$pattern'");
	}
	return $n;
}

# ---- a distributed table is refused, and nothing changes
$coord->safe_psql($db, q{
CREATE TABLE events (id bigint, created_at timestamptz NOT NULL, payload text);
SELECT create_distributed_table('events', 'id', shard_count => 8);
INSERT INTO events SELECT g, now() - interval '2 hours', 'x' FROM generate_series(1, 8000) g;
});
my ($rc, $out, $err) = $coord->psql($db, q{SELECT ttl_create_index('events', 'created_at', 3600)});
isnt($rc, 0, 'ttl_create_index() on a distributed table fails');
like($err, qr/ttl_index cannot purge the Citus distributed table "events"/, 'and says why');
like($err, qr/Its rows live in shard tables/, 'with the detail');
is($coord->safe_psql($db, 'SELECT count(*) FROM ttl_index_policy'), '0', 'no policy was written');
is(indexes('events_created_at%'), 0, 'no index was made on any node');

# reference and Citus local tables alike
$coord->safe_psql($db, q{
CREATE TABLE ref (created_at timestamptz NOT NULL);
SELECT create_reference_table('ref');
CREATE TABLE loc (created_at timestamptz NOT NULL);
SELECT citus_add_local_table_to_metadata('loc');
});
($rc, $out, $err) = $coord->psql($db, q{SELECT ttl_create_index('ref', 'created_at', 3600)});
like($err, qr/cannot purge the Citus reference table "ref"/, 'a reference table is refused');
($rc, $out, $err) = $coord->psql($db, q{SELECT ttl_create_index('loc', 'created_at', 3600)});
like($err, qr/cannot purge the Citus local table "loc"/, 'a Citus local table is refused');
is($coord->safe_psql($db, 'SELECT count(*) FROM ttl_index_policy'), '0', 'still no policy');

# ---- a plain table on the coordinator is purged as anywhere else
$coord->safe_psql($db, q{
CREATE TABLE plain (created_at timestamptz NOT NULL);
INSERT INTO plain SELECT now() - interval '2 hours' FROM generate_series(1, 1000);
INSERT INTO plain SELECT now() FROM generate_series(1, 10);
SELECT ttl_create_index('plain', 'created_at', 3600);
});
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM plain', '10',
	'a plain table of the coordinator is purged', 30);

# ---- a policy made before its table was distributed: an error, not a green
$coord->safe_psql($db, q{
CREATE TABLE later (id bigint, created_at timestamptz NOT NULL);
SELECT ttl_create_index('later', 'created_at', 3600);
SELECT ttl_pause('later');
INSERT INTO later SELECT g, now() - interval '2 hours' FROM generate_series(1, 4000) g;
SELECT create_distributed_table('later', 'id', shard_count => 8);
SELECT ttl_resume('later');
});
cmp_ok(indexes('later_created_at_ttl_idx%'), '>=', 9,
	'Citus copied the TTL index to the shards');
TtlIndex::wait_is($coord, $db,
	q{SELECT errors > 0 AND last_error LIKE 'ttl_index cannot purge the Citus distributed table "later"%' FROM ttl_index_stats WHERE table_name = 'later'::regclass},
	't', 'a pass over a table distributed after its policy counts the error', 30);
is($coord->safe_psql($db, 'SELECT count(*) FROM later'), '4000', 'no row of it was deleted');
ok($coord->log_contains('ttl_index cannot purge the Citus distributed table "later"'),
	'the log says why');

# ---- ttl_drop_index() drops the index on every shard of every node
$coord->safe_psql($db, q{SELECT ttl_drop_index('later', 'created_at')});
is(indexes('later_created_at_ttl_idx%'), 0, 'ttl_drop_index() left no TTL index on any node');
is($coord->safe_psql($db, 'SELECT count(*) FROM ttl_index_policy'), '1',
	'only the plain table\'s policy is left');

# ---- DROP DATABASE with Citus's maintenance daemon and the worker in it
$coord->safe_psql('postgres', 'CREATE DATABASE other');
$coord->safe_psql('other', q{
CREATE EXTENSION citus;
CREATE EXTENSION ttl_index;
CREATE TABLE t (created_at timestamptz NOT NULL);
SELECT ttl_create_index('t', 'created_at', 3600);
});
TtlIndex::wait_worker($coord, 'other');
TtlIndex::wait_until($coord, 'postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = 'other' AND application_name LIKE 'Citus Maintenance Daemon%'},
	"Citus's maintenance daemon runs in the database");
$coord->safe_psql('postgres', 'DROP DATABASE other');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM pg_database WHERE datname = 'other'}), '0',
	'DROP DATABASE succeeded');
is($coord->safe_psql($db, 'SELECT count(*) FROM plain'), '10', 'the other database was not touched');

$_->stop for ($coord, @workers);
done_testing();
