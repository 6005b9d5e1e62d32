# Size caps by bytes (max_bytes) with the worker, under steady inserts:
# the issue's must-show.  The cap holds by reuse: the rows it takes leave
# their space, VACUUM records it, and the rows that come after fill it,
# so that once the table has reached max_bytes it stops growing.
#
# Rounds of inserts of newer rows, bounded in number.  Each round waits
# for two rounds of the worker's schedule that began after its inserts
# (TtlIndex::wait_round), then runs the VACUUM that autovacuum would (with
# the table's thresholds at 0 it would come after every round; waiting for
# it is a wait on statistics that a busy machine reports late, and the
# test command once measured a round before autovacuum had come).  After
# each round: the rows kept are the newest (a run of ids ending at the
# last one inserted), and once the table first reached max_bytes, its
# size (pg_total_relation_size) stays within max_bytes plus the bound
# docs/expiry-rules.md "### By bytes" gives: the rows written between a
# pass and the VACUUM that frees what it took (one round here), and as
# much again for the index pages the cap emptied, which become reusable a
# VACUUM or two later.
#
# Where Citus is installed (the 18 build): refused on a distributed table,
# with nothing changed.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $cap = 4 * 1024 * 1024;
my $round_rows = 5000;
my $rounds = 12;

my $node = TtlIndex::node('max_bytes', 'ttl_index.max_sleep = 200ms',
	'ttl_index.log_min_duration = -1', 'autovacuum_naptime = 1s');
$node->safe_psql('postgres', qq{
CREATE EXTENSION ttl_index;
-- rows put here go in the worker's next round (TtlIndex::wait_round)
CREATE TABLE mark (at timestamptz);
SELECT ttl_create_index('mark', 'at', 60);
CREATE TABLE ev (id bigint, at timestamptz, payload text)
	WITH (autovacuum_vacuum_threshold = 0, autovacuum_vacuum_scale_factor = 0,
		  autovacuum_vacuum_insert_threshold = 0, autovacuum_vacuum_insert_scale_factor = 0,
		  autovacuum_analyze_threshold = 0, autovacuum_analyze_scale_factor = 0);
SELECT ttl_create_index('ev', 'at', NULL::interval, max_bytes => $cap);
});
TtlIndex::wait_worker($node, 'postgres');

my $top = 0;
my $reached;		# the round whose table first took max_bytes
my $row_bytes;		# a row's footprint then: size over rows
my $worst = 0;		# the largest size after that round
my @sizes;
for my $round (1 .. $rounds)
{
	$node->safe_psql('postgres', qq{
INSERT INTO ev SELECT i, now() - interval '1 day' + i * interval '1 ms', repeat('x', 100)
  FROM generate_series($top + 1, $top + $round_rows) i;
});
	$top += $round_rows;
	# two rounds of the worker's schedule after the inserts: a pass over
	# ev that began after them
	TtlIndex::wait_round($node, 'postgres', 'mark', "round $round: the worker went through its schedule");
	TtlIndex::wait_round($node, 'postgres', 'mark', "round $round: twice");
	# the VACUUM that records the space the capped rows left, as autovacuum
	# does (a wait for autovacuum's own is a wait on statistics a busy
	# machine reports late: the test command failed so once on 18)
	$node->safe_psql('postgres', 'VACUUM ev');
	my ($size, $n, $lo, $hi) = split /\|/, $node->safe_psql('postgres',
		"SELECT pg_total_relation_size('ev'), count(*), min(id), max(id) FROM ev");
	push @sizes, "$round: $size bytes, $n rows";
	is("$hi " . ($hi - $lo + 1), "$top $n",
		"round $round: the rows kept are the newest, ids up to the last one inserted");
	if (!defined $reached && $size >= $cap)
	{
		$reached = $round;
		$row_bytes = $size / ($n + $round_rows);
	}
	$worst = $size if defined $reached && $round > $reached && $size > $worst;
}
note("sizes: " . join('; ', @sizes));
ok(defined $reached && $reached < $rounds - 3,
	"the table reached its cap early enough to be watched (round " . ($reached // 'none') . ")");
my $bound = $cap + 2 * $round_rows * ($row_bytes // 0);
cmp_ok($worst, '<=', $bound,
	"after it reached max_bytes, the table stayed within max_bytes plus two rounds' rows ($bound bytes)");
is($node->safe_psql('postgres',
	"SELECT rows_capped > 0 AND max_bytes = $cap FROM ttl_index_stats WHERE table_name = 'ev'::regclass"),
	't', 'the view shows the cap and the rows it took');

$node->stop;

# --- Citus: refused on a distributed table, nothing changed ---------------
# (each node would see only its own shards' size: docs, By bytes)
SKIP:
{
	my $libdir = $node->config_data('--pkglibdir');
	skip "Citus is not installed in $libdir", 3 unless -e "$libdir/citus.so";
	my $coord = TtlIndex::node('citus', "shared_preload_libraries = 'citus,ttl_index'",
		'max_worker_processes = 20', 'ttl_index.log_min_duration = -1');
	$coord->append_conf('postgresql.conf', "citus.local_hostname = '" . $coord->host . "'");
	$coord->reload;
	$coord->safe_psql('postgres', 'CREATE EXTENSION citus');
	$coord->safe_psql('postgres', sprintf(q{SELECT citus_set_coordinator_host('%s', %d)},
		$coord->host, $coord->port));
	$coord->safe_psql('postgres', q{
SELECT citus_set_node_property(nodename, nodeport, 'shouldhaveshards', true) FROM pg_dist_node WHERE groupid = 0;
CREATE EXTENSION ttl_index;
CREATE TABLE dist (id bigint, at timestamptz);
SELECT create_distributed_table('dist', 'id');
SELECT ttl_create_index('dist', 'at', interval '1 day');
CREATE TABLE dist2 (id bigint, at timestamptz);
SELECT create_distributed_table('dist2', 'id');
});
	my $before = $coord->safe_psql('postgres',
		'SELECT p::text FROM ttl_index_policy p ORDER BY id; SELECT m::text FROM ttl_index_citus_policy m ORDER BY id');
	my ($ret, $out, $err) = $coord->psql('postgres',
		"SELECT ttl_alter_index('dist', 'at', max_bytes => 2097152)");
	like($err, qr/ERROR:  max_bytes is not supported on the distributed table "dist"/,
		'max_bytes on a distributed table: a clear error');
	($ret, $out, $err) = $coord->psql('postgres',
		"SELECT ttl_create_index('dist2', 'at', NULL::interval, max_bytes => 2097152)");
	like($err, qr/ERROR:  max_bytes is not supported on the distributed table "dist2"/,
		'and for a new policy');
	is($coord->safe_psql('postgres',
		'SELECT p::text FROM ttl_index_policy p ORDER BY id; SELECT m::text FROM ttl_index_citus_policy m ORDER BY id'),
		$before, 'nothing changed: the policies and their copies for the nodes are as they were');
	$coord->stop;
}

done_testing();
