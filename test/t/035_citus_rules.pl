# Citus: what 1.4 got wrong (issue 45), on a coordinator that holds shards
# and two workers, one of them in Tokyo.
#
#  9. A node's own policies and the coordinator's copies never share an
#     id: a plain role's local policy on every worker (id 1 there) leaves
#     another owner's Citus policy (id 1 too) purging on every node.
#  7. A timestamptz policy's purge windows are read in the coordinator's
#     zone on every node, whatever the node's TimeZone.
#  1. Anonymize never writes a distribution column: create_distributed_table()
#     by a set column and alter_distributed_table() to one are refused, and a
#     policy that sets one anyway updates nothing on any node, saying why.
#  4. A cap on a distributed table is the table's: partitions count as rows,
#     not as shards, and a skewed table (one busy tenant) keeps its newest
#     max_rows, all of them.
# 13. The coordinator's summed rows_deleted counts each row once through a
#     shard move and a split, and does not fall when a node is drained and
#     removed.
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
use Time::HiRes qw(time sleep);
use TtlIndex;

my $probe = PostgreSQL::Test::Cluster->new('probe');
my $libdir = $probe->config_data('--pkglibdir');
plan skip_all => "Citus is not installed in $libdir" unless -e "$libdir/citus.so";

# citus first: it must be the first library preloaded; logical decoding for
# the shard move and split
my @conf = ("shared_preload_libraries = 'citus,ttl_index'",
	'max_worker_processes = 20', 'wal_level = logical',
	'max_wal_senders = 10', 'max_replication_slots = 10',
	'ttl_index.log_min_duration = -1', 'ttl_index.error_delay = 1');
my $coord = TtlIndex::node('coord', @conf, "timezone = 'UTC'");
my $tokyo = TtlIndex::node('tokyo', @conf, "timezone = 'Asia/Tokyo'");
my $other = TtlIndex::node('other', @conf, "timezone = 'UTC'");
my @workers = ($tokyo, $other);
my @nodes = ($coord, @workers);
my $db = 'postgres';
my $host = $coord->host;	# every node's socket directory

for my $n (@nodes)
{
	# shard moves connect back to this node by this name
	$n->append_conf('postgresql.conf', "citus.local_hostname = '" . $n->host . "'");
	$n->reload;
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
$coord->safe_psql($db, 'CREATE EXTENSION ttl_index');

# said(sql[, node[, role]]): the answer, or "error: ..."
sub said
{
	my ($sql, $node, $role) = @_;
	my ($rc, $out, $err) = ($node // $coord)->psql($db, $sql,
		extra_params => defined $role ? ['-U', $role] : []);
	return $rc == 0 ? $out : "error: $err";
}

# wait_said(sql, expected, name[, node]): the answer becomes the expected
# one (40 s at most: a fix that fails shows in the answer, not a hang)
sub wait_said
{
	my ($sql, $expected, $name, $node) = @_;
	my $deadline = time() + 40;
	my $got;
	for (;;)
	{
		$got = said($sql, $node);
		last if $got eq $expected || time() > $deadline;
		sleep(0.1);
	}
	return is($got, $expected, $name);
}

# id(table): the coordinator's policy id of the table's policy
sub id
{
	my ($table) = @_;
	return $coord->safe_psql($db, "SELECT id FROM ttl_index_policy WHERE relid = '$table'::regclass");
}

# here(node, id): the id the node keeps the coordinator's policy under
sub here
{
	my ($node, $id) = @_;
	return $node == $coord ? $id : -$id;
}

# ==== 9. a node's own policies and the coordinator's copies never share an id
$coord->safe_psql($db, q{
CREATE ROLE bob LOGIN;
CREATE ROLE mallory LOGIN;
GRANT CREATE ON SCHEMA public TO bob, mallory;
});
is(said(q{
CREATE TABLE bobs (id bigint, at timestamptz NOT NULL, payload text);
SELECT create_distributed_table('bobs', 'id', shard_count => 6);
SELECT ttl_create_index('bobs', 'at', 3600);
}, $coord, 'bob'), "\n1", 'bob\'s policy on his distributed table is policy 1');
# (her right to create tables there, given on each worker)
$_->safe_psql($db, 'SET citus.enable_ddl_propagation = off; GRANT CREATE ON SCHEMA public TO mallory')
  for @workers;
is(said(q{SELECT string_agg(success::text, ', ') FROM run_command_on_workers($$CREATE TABLE mine (at timestamptz NOT NULL)$$)},
	$coord, 'mallory'), 'true, true', 'mallory makes a local table on every worker');
is(said(q{SELECT string_agg(success::text || ' ' || result, ', ') FROM run_command_on_workers($$SELECT ttl_create_index('mine', 'at', 3600)$$)},
	$coord, 'mallory'), 'true 1, true 1', 'and a policy on it, id 1 on each worker');
for my $w (@workers)
{
	is(said('SELECT (SELECT id FROM ttl_index_policy) || \' \' || (SELECT id FROM ttl_index_citus_policy)', $w),
		'1 1', 'worker ' . $w->name . ': its own policy 1 and the coordinator\'s policy 1');
}
$coord->safe_psql($db, q{INSERT INTO bobs SELECT g, now() - interval '2 hours', 'x' FROM generate_series(1, 3000) g});
$coord->safe_psql($db, q{SELECT run_command_on_workers($$INSERT INTO mine SELECT now() - interval '2 hours' FROM generate_series(1, 50)$$)});
wait_said('SELECT count(*) FROM bobs', '0', 'bob\'s rows are purged on every node, the workers too');
for my $w (@workers)
{
	wait_said('SELECT count(*) FROM mine', '0', 'worker ' . $w->name . ' purges mallory\'s table too', $w);
	wait_said('SELECT rows_deleted FROM ttl_index_policy_stats() WHERE policy_id = 1', '50',
		'worker ' . $w->name . ': policy 1 is its own, counting its own rows', $w);
	cmp_ok(said('SELECT rows_deleted FROM ttl_index_policy_stats() WHERE policy_id = -1', $w), '>', 0,
		'worker ' . $w->name . ': the coordinator\'s policy 1 is -1 there, counting bob\'s rows');
}
wait_said(q{SELECT count(*) || ' ' || sum(rows_deleted) || ' ' || string_agg(DISTINCT state, ',')
  FROM ttl_index_citus_nodes() WHERE policy_id = 1}, '3 3000 purging',
	'the coordinator sees every node purge policy 1, and only bob\'s rows counted');
my $bobs_deleted = 3000;

# ==== 7. windows of a timestamptz policy in the coordinator's zone on every node
# inwin: a window open now in UTC (closed in Tokyo); outwin: one open now
# in Tokyo (closed in UTC)
$coord->safe_psql($db, q{
CREATE TABLE inwin (id bigint, at timestamptz NOT NULL);
CREATE TABLE outwin (id bigint, at timestamptz NOT NULL);
SELECT create_distributed_table('inwin', 'id', shard_count => 6);
SELECT create_distributed_table('outwin', 'id', shard_count => 6);
INSERT INTO inwin SELECT g, now() - interval '2 hours' FROM generate_series(1, 600) g;
INSERT INTO outwin SELECT g, now() - interval '2 hours' FROM generate_series(1, 600) g;
});
cmp_ok($coord->safe_psql($db, sprintf(q{SELECT coalesce(sum(result::bigint), 0)
	FROM run_command_on_placements('inwin', 'SELECT count(*) FROM %%s') WHERE nodeport = %d},
	$tokyo->port)), '>', 0, 'the Tokyo node holds some of the rows');
$coord->safe_psql($db, q{
SELECT ttl_create_index('inwin', 'at', 3600,
	purge_window => to_char(now() AT TIME ZONE 'UTC' - interval '1 hour', 'HH24:MI') || '-'
				 || to_char(now() AT TIME ZONE 'UTC' + interval '1 hour', 'HH24:MI'));
SELECT ttl_create_index('outwin', 'at', 3600,
	purge_window => to_char(now() AT TIME ZONE 'Asia/Tokyo' - interval '1 hour', 'HH24:MI') || '-'
				 || to_char(now() AT TIME ZONE 'Asia/Tokyo' + interval '1 hour', 'HH24:MI'));
});
for my $w (@workers)
{
	is(said(q{SELECT string_agg(time_zone, ',') FROM ttl_index_citus_policy WHERE table_name IN ('inwin', 'outwin')}, $w),
		'UTC,UTC', 'worker ' . $w->name . ' is given the coordinator\'s zone with the policies');
}
wait_said('SELECT count(*) FROM inwin', '0',
	'inside the coordinator\'s window every node purges, the one in Tokyo too');
my $outwin = id('outwin');
for my $n (@nodes)
{
	wait_said(sprintf(q{SELECT stalled FROM ttl_index_policy_health() WHERE policy_id = %d},
		here($n, $outwin)), 'waiting for its purge window',
		'node ' . $n->name . ': outside the coordinator\'s window, the rows wait', $n);
}
is(said('SELECT count(*) FROM outwin'), '600', 'no node purged outside the window, Tokyo included');
$coord->safe_psql($db, q{DROP TABLE inwin, outwin});

# ==== 1. anonymize never writes a distribution column
# create_distributed_table() by a set column: refused, nothing changes
$coord->safe_psql($db, q{
CREATE TABLE anon (tenant int, at timestamptz NOT NULL, email text);
SELECT ttl_create_index('anon', 'at', 3600, set_columns => 'tenant = 0, email = NULL');
});
like(said(q{SELECT create_distributed_table('anon', 'tenant')}),
	qr/cannot distribute table "anon" by column "tenant": its TTL policy sets that column/,
	'create_distributed_table() by a column the policy sets is refused');
is(said(q{SELECT (SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'anon'::regclass)
  || ' ' || (SELECT count(*) FROM ttl_index_policy WHERE relid = 'anon'::regclass)}), '0 1',
	'the table stays local, with its policy');
is(said(q{SELECT create_distributed_table('anon', 'at')}), '',
	'distributing it by another column is not refused');
$coord->safe_psql($db, q{DROP TABLE anon});

# alter_distributed_table() to a set column: refused
$coord->safe_psql($db, q{
CREATE TABLE anon2 (tenant int, region int, at timestamptz NOT NULL, email text);
SELECT create_distributed_table('anon2', 'tenant', shard_count => 4);
SELECT ttl_create_index('anon2', 'at', 3600, set_columns => 'region = NULL, email = NULL');
SELECT ttl_pause('anon2');
INSERT INTO anon2 SELECT g % 10, g % 7, now() - interval '2 hours', 'x' FROM generate_series(1, 500) g;
});
like(said(q{SELECT alter_distributed_table('anon2', distribution_column => 'region')}),
	qr/cannot distribute table "anon2" by column "region": its TTL policy sets that column/,
	'alter_distributed_table() to a column the policy sets is refused');
is(said(q{SELECT column_to_column_name(logicalrelid, partkey) FROM pg_dist_partition
  WHERE logicalrelid = 'anon2'::regclass}), 'tenant', 'the table stays distributed by tenant');
$coord->safe_psql($db, q{SELECT ttl_resume('anon2')});
wait_said(q{SELECT count(*) || ' ' || count(region) || ' ' || count(email) || ' ' || count(DISTINCT tenant) FROM anon2},
	'500 0 0 10', 'the policy anonymizes as before, the distribution column untouched');
$coord->safe_psql($db, q{DROP TABLE anon2});

# a policy that sets the distribution column anyway (written into the
# catalog directly): every node refuses its batches, updates nothing, and
# says why
$coord->safe_psql($db, q{
CREATE TABLE anon3 (tenant int, at timestamptz NOT NULL, email text);
SELECT create_distributed_table('anon3', 'tenant', shard_count => 6);
SELECT ttl_create_index('anon3', 'at', 3600, set_columns => 'email = NULL');
SELECT ttl_pause('anon3');
INSERT INTO anon3 SELECT g % 20 + 1, now() - interval '2 hours', 'x' FROM generate_series(1, 600) g;
UPDATE ttl_index_policy SET set_columns = 'tenant = 0, email = NULL' WHERE relid = 'anon3'::regclass;
SELECT ttl_resume('anon3');
});
my $anon3 = id('anon3');
wait_said(qq{SELECT count(*) FILTER (WHERE errors > 0 AND last_error LIKE '%sets column "tenant", the table''s Citus distribution column%')
  FROM ttl_index_citus_nodes() WHERE policy_id = $anon3}, '3',
	'every node refuses the batches, saying the set column is the distribution column');
like(said(qq{SELECT stalled FROM ttl_index_stats WHERE policy_id = $anon3}), qr/^errors/,
	'ttl_index_stats says the policy is stalled by errors');
is(said(q{SELECT count(*) FILTER (WHERE tenant = 0) || ' ' || count(*) FILTER (WHERE email IS NULL) FROM anon3}),
	'0 0', 'no row was updated on any node');
$coord->safe_psql($db, q{DROP TABLE anon3});

# ==== 4. a cap on a distributed table is the table's
# partitions count as rows, not as shards
$coord->safe_psql($db, q{
CREATE TABLE pcap (id bigint, at timestamptz NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE pcap_1 PARTITION OF pcap FOR VALUES FROM ('2000-01-01') TO ('2020-01-01');
CREATE TABLE pcap_2 PARTITION OF pcap FOR VALUES FROM ('2020-01-01') TO ('2030-01-01');
CREATE TABLE pcap_3 PARTITION OF pcap FOR VALUES FROM ('2030-01-01') TO ('2100-01-01');
SELECT create_distributed_table('pcap', 'id', shard_count => 4);
INSERT INTO pcap SELECT g, timestamptz '2015-01-01' + g * interval '29 hours' FROM generate_series(1, 6000) g;
SELECT ttl_create_index('pcap', 'at', NULL, max_rows => 1000);
});
wait_said('SELECT count(*) FROM pcap', '1000',
	'a distributed partitioned table comes down to its cap, not to the cap times its partitions');
is(said('SELECT count(*) FROM pcap WHERE id > 5000'), '1000', 'keeping its newest rows');

# one busy tenant: the newest max_rows all stay
$coord->safe_psql($db, q{
CREATE TABLE feed (tenant int, id bigint, at timestamptz NOT NULL);
SELECT create_distributed_table('feed', 'tenant', shard_count => 6);
INSERT INTO feed SELECT g % 9 + 2, g, now() - interval '2 days' + g * interval '1 s' FROM generate_series(1, 1000) g;
INSERT INTO feed SELECT 1, g, now() - interval '1 day' + g * interval '1 s' FROM generate_series(1001, 4000) g;
SELECT ttl_create_index('feed', 'at', NULL, max_rows => 1000);
});
my ($low, $total) = (1000, '');
my $deadline = time() + 40;
while (time() < $deadline)
{
	my ($newest, $all) = split /\|/, said('SELECT count(*) FILTER (WHERE id > 3000), count(*) FROM feed');
	$low = $newest if $newest < $low;
	$total = $all;
	last if $all == 1000;
	sleep(0.1);
}
is($total, '1000', 'the skewed table comes down to its cap');
is($low, 1000, 'no row of its newest 1,000 was ever deleted (all of them one tenant\'s)');
$coord->safe_psql($db, q{DROP TABLE pcap, feed});

# ==== 13. the coordinator's sums: each row once, never falling
# a logical move and a split while rows expire
$coord->safe_psql($db, q{
CREATE TABLE churn (id bigint, at timestamptz NOT NULL, payload text);
SELECT create_distributed_table('churn', 'id', shard_count => 4);
SELECT ttl_create_index('churn', 'at', 3600);
});
my $churn = id('churn');
my $writer = $coord->background_psql($db, on_error_stop => 0);
# (a write may fail while the shard is split: each that did not says so)
my $wrote = $writer->query_until(qr/started/, "\\echo started\n" . join('',
	map { "WITH i AS (INSERT INTO churn SELECT g, now() - interval '2 hours', 'x'"
		  . " FROM generate_series($_ * 1000 + 1, $_ * 1000 + 1000) g RETURNING 1)"
		  . " SELECT 'wrote' || count(*) FROM i;\n"
		  . "SELECT pg_sleep(0.05);\n" } 1 .. 40) . "\\echo written\n");
my ($from, $shard) = split /\|/, $coord->safe_psql($db,
	q{SELECT nodeport, shardid FROM citus_shards WHERE table_name = 'churn'::regclass
	   AND nodeport <> } . $coord->port . q{ ORDER BY shardid LIMIT 1});
my $to = $from == $tokyo->port ? $other->port : $tokyo->port;
$coord->safe_psql($db, qq{SELECT citus_move_shard_placement($shard, '$host', $from, '$host', $to,
	shard_transfer_mode => 'force_logical')});
my ($split, $min, $max, $split_node) = split /\|/, $coord->safe_psql($db,
	q{SELECT s.shardid, s.shardminvalue, s.shardmaxvalue, n.nodeid FROM pg_dist_shard s
	   JOIN pg_dist_placement p USING (shardid) JOIN pg_dist_node n USING (groupid)
	  WHERE s.logicalrelid = 'churn'::regclass AND s.shardid <> } . $shard . q{ ORDER BY s.shardid LIMIT 1});
my $point = int(($min + $max) / 2);
$coord->safe_psql($db, qq{SELECT citus_split_shard_by_split_points($split, ARRAY['$point'],
	ARRAY[$split_node, $split_node], shard_transfer_mode => 'force_logical')});
$wrote .= $writer->query_until(qr/written/, '');
$writer->quit;
my $inserted = 1000 * scalar(() = $wrote =~ /wrote1000/g);
cmp_ok($inserted, '>=', 30000, "the writer wrote $inserted rows through the move and the split");
wait_said(q{SELECT count(*) FROM churn}, '0', 'every row written through the move and the split is purged');
wait_said(qq{SELECT rows_deleted FROM ttl_index_stats WHERE policy_id = $churn}, $inserted,
	'ttl_index_stats counts each of them once, through the move and the split');

# drain a node and remove it: its rows stay counted
my $bobs = id('bobs');
my $churn_deleted = said(qq{SELECT rows_deleted FROM ttl_index_stats WHERE policy_id = $churn});
is(said(qq{SELECT rows_deleted FROM ttl_index_stats WHERE policy_id = $bobs}), $bobs_deleted,
	'before the node goes: bob\'s rows, all nodes summed');
cmp_ok(said(sprintf(q{SELECT rows_deleted FROM ttl_index_citus_nodes() WHERE policy_id = %d AND nodeport = %d},
	$bobs, $other->port)), '>', 0, 'the node to go deleted some of them');
$coord->safe_psql($db, sprintf(q{SELECT citus_drain_node('%s', %d, shard_transfer_mode => 'block_writes')},
	$other->host, $other->port));
$coord->safe_psql($db, 'CALL citus_cleanup_orphaned_resources()');
$coord->safe_psql($db, sprintf(q{SELECT citus_remove_node('%s', %d)}, $other->host, $other->port));
is(said(q{SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary'}), '2', 'the node is removed');
is(said(qq{SELECT rows_deleted || ' ' || coalesce(stalled, 'none') FROM ttl_index_stats WHERE policy_id = $bobs}),
	"$bobs_deleted none", 'ttl_index_stats still counts the removed node\'s rows, and nothing stalls');
is(said(qq{SELECT rows_deleted FROM ttl_index_stats WHERE policy_id = $churn}), $churn_deleted,
	'for every policy');
is(said(sprintf(q{SELECT state || ' ' || stale FROM ttl_index_citus_nodes() WHERE policy_id = %d AND nodeport = %d},
	$bobs, $other->port)), 'node removed true', 'ttl_index_citus_nodes() keeps the removed node\'s counts');
is(said(qq{SELECT nodes || ' ' || nodes_unreachable || ' ' || rows_deleted || ' ' || coalesce(stalled, 'none')
  FROM ttl_index_citus_stats WHERE policy_id = $bobs}), "2 0 $bobs_deleted none",
	'ttl_index_citus_stats: two nodes answer, none unreachable, the rows all counted');
$coord->safe_psql($db, q{INSERT INTO bobs SELECT g, now() - interval '2 hours', 'x' FROM generate_series(1, 1000) g});
wait_said(qq{SELECT rows_deleted FROM ttl_index_stats WHERE policy_id = $bobs}, $bobs_deleted + 1000,
	'rows deleted since are added to them');
$coord->restart;
is(said(qq{SELECT rows_deleted || ' ' || coalesce(stalled, 'none') FROM ttl_index_stats WHERE policy_id = $bobs}),
	($bobs_deleted + 1000) . ' none', 'and the coordinator keeps them across a clean restart');

for my $n (@nodes)
{
	ok(!$n->log_contains('TRAP:|PANIC|terminated by signal'), 'no crash on ' . $n->name);
}
$_->stop for @nodes;
done_testing();
