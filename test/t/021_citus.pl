# Citus: a coordinator that holds shards and two workers, a third worker
# added halfway.  One ttl_create_index() on the coordinator purges a
# distributed table's shards on every node; purging goes on through shard
# moves (block_writes and logical), a split, citus_add_node and a
# rebalance; the policy follows renames of the table, its schema and its
# column, and goes with DROP TABLE; ttl_drop_index() leaves no TTL index on
# any node; a shard published without a replica identity (as a logical
# move publishes it) is skipped, not counted as an error; the
# coordinator's ttl_index_citus_stats and ttl_index_citus_nodes() show the
# whole table and each node; reference and Citus local tables are refused
# and nothing changes; DROP DATABASE works with Citus's maintenance daemon
# and our worker both connected.
#
# No silent stall on Citus: a policy follows its table through
# create_distributed_table() (made before it), citus_schema_distribute()
# and citus_schema_undistribute(), ALTER TABLE ... SET SCHEMA into and out
# of a distributed schema, alter_distributed_table(), undistribute_table()
# and create_distributed_table_concurrently() (run by the table's owner, a
# role that cannot write the catalog): same id, same settings, its TTL
# index still ttl_index's, on every node at once; create_reference_table()
# and citus_add_local_table_to_metadata() of a table with a policy are
# refused, as is distributing one whose policy archives; a node added
# without ttl_index preloaded, and a node down, show in the coordinator's
# ttl_index_stats (stalled, and the down node's last known counts, never a
# smaller total), read while the rows wait.
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

# citus first: it must be the first library preloaded
my @conf = ("shared_preload_libraries = 'citus,ttl_index'",
	'max_worker_processes = 20', 'wal_level = logical',
	'max_wal_senders = 10', 'max_replication_slots = 10',
	'ttl_index.log_min_duration = -1');
my $coord = TtlIndex::node('coord', @conf);
my @workers = map { TtlIndex::node("worker$_", @conf) } 1 .. 2;
my $late = TtlIndex::node('worker3', @conf);
my $db = 'postgres';

for my $n ($coord, @workers, $late)
{
	# the nodes listen on a socket directory only: shard moves and splits
	# connect back to this node by this name
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
is($coord->safe_psql($db, 'SELECT count(*) FROM pg_dist_node WHERE shouldhaveshards'), '3',
	'three nodes hold shards');

# Citus propagates CREATE EXTENSION to the nodes it knows
$coord->safe_psql($db, 'CREATE EXTENSION ttl_index');
for my $w (@workers)
{
	is($w->safe_psql($db, q{SELECT count(*) FROM pg_extension WHERE extname = 'ttl_index'}), '1',
		'the extension is on worker ' . $w->name);
}

# indexes(pattern): the indexes named so, counted over the nodes, shards'
# included (Citus hides them unless citus.override_table_visibility is off;
# the servers keep it on, as ttl_index must work with it)
sub indexes
{
	my ($pattern, @nodes) = @_;
	my $n = 0;

	# a shard placement a move left behind keeps its indexes until Citus's
	# deferred cleanup drops it: run that now, not at the daemon's leisure
	$coord->safe_psql($db, 'CALL citus_cleanup_orphaned_resources()');
	for my $node (@nodes ? @nodes : ($coord, @workers))
	{
		$n += $node->safe_psql($db,
			"SET citus.override_table_visibility = off;
			 SELECT count(*) FROM pg_class WHERE relkind = 'i' AND relname LIKE '$pattern'");
	}
	return $n;
}

# expire(table, n): n rows of the table that expired an hour ago
sub expire
{
	my ($table, $n) = @_;
	$coord->safe_psql($db, qq{INSERT INTO $table
	  SELECT g, now() - interval '2 hours', 'x' FROM generate_series(1, $n) g});
}

# per_node(policy id): "port:rows_deleted" per node, from the coordinator
sub per_node
{
	my ($id) = @_;
	return $coord->safe_psql($db, qq{SELECT string_agg(rows_deleted::text, ' ' ORDER BY nodeport)
	  FROM ttl_index_citus_nodes() WHERE policy_id = $id});
}

# ---- one ttl_create_index() on the coordinator purges every node's shards
$coord->safe_psql($db, q{
CREATE TABLE events (id bigint, created_at timestamptz NOT NULL, payload text);
SELECT create_distributed_table('events', 'id', shard_count => 8);
INSERT INTO events SELECT g, now() - interval '2 hours', 'x' FROM generate_series(1, 30000) g;
INSERT INTO events SELECT g, now(), 'live' FROM generate_series(30001, 30030) g;
});
is($coord->safe_psql($db, q{SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'events'::regclass}),
	'3', 'the shards are on the three nodes');
my $id = $coord->safe_psql($db, q{SELECT ttl_create_index('events', 'created_at', 3600)});
ok($id > 0, 'ttl_create_index() on the distributed table returns a policy id');
for my $w (@workers)
{
	is($w->safe_psql($db, qq{SELECT table_schema || '.' || table_name || '.' || column_name || ' ' || expire_after
	  FROM ttl_index_citus_policy WHERE id = $id}),
		'public.events.created_at 01:00:00', 'worker ' . $w->name . ' has the policy');
}
cmp_ok(indexes('events_created_at_ttl_idx%'), '>=', 9, 'the TTL index is on every shard');
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM events', '30',
	'every node purged its shards; the live rows stay', 30);
TtlIndex::wait_until($coord, $db,
	qq{SELECT count(*) = 3 AND bool_and(rows_deleted > 0) FROM ttl_index_citus_nodes() WHERE policy_id = $id},
	'each of the three nodes deleted rows');
TtlIndex::wait_is($coord, $db,
	qq{SELECT nodes || ' ' || rows_deleted || ' ' || errors || ' ' || lag FROM ttl_index_citus_stats WHERE policy_id = $id},
	'3 30000 0 00:00:00', 'ttl_index_citus_stats: three nodes, the rows summed, no lag');
is($coord->safe_psql($db, qq{SELECT sum(rows_deleted) FROM ttl_index_citus_nodes() WHERE policy_id = $id}),
	'30000', 'the per-node rows add up to the table\'s');
is($coord->safe_psql($db, qq{SELECT rows_deleted || ' ' || errors || ' ' || lag FROM ttl_index_stats WHERE policy_id = $id}),
	'30000 0 00:00:00', 'the coordinator\'s ttl_index_stats shows the whole table');
cmp_ok($coord->safe_psql($db, qq{SELECT rows_deleted FROM ttl_index_policy_stats() WHERE policy_id = $id}),
	'<', 30000, 'while its own counter has its own shards\' rows only');
for my $w (@workers)
{
	# (a node keeps the coordinator's policy N as -N, apart from its own)
	cmp_ok($w->safe_psql($db, qq{SELECT rows_deleted FROM ttl_index_policy_stats() WHERE policy_id = -$id}),
		'>', 0, 'worker ' . $w->name . ' counts its own rows');
}
# every transaction bounded: no node deleted more than batch_size rows a batch
my $batch_size = $coord->safe_psql($db, q{SELECT current_setting('ttl_index.batch_size')});
for my $n ($coord, @workers)
{
	my $here = $n == $coord ? $id : -$id;
	is($n->safe_psql($db, qq{SELECT batches * $batch_size >= rows_deleted
	  FROM ttl_index_policy_stats() WHERE policy_id = $here}), 't',
		'node ' . $n->name . ' deleted in batches of at most batch_size rows');
}

# ---- caps, windows and anonymize on a distributed table: the cap is the
# whole table's (each node reads the cut over every node), each node reads
# the window in the policy's zone, and resets the columns of its shards'
# expired rows
$coord->safe_psql($db, q{
CREATE TABLE feed (id bigint, at timestamptz NOT NULL, email text, note text);
SELECT create_distributed_table('feed', 'id', shard_count => 8);
INSERT INTO feed SELECT g, now() - g * interval '1 s', 'x', 'capped' FROM generate_series(1, 8000) g;
SELECT ttl_create_index('feed', 'at', NULL, max_rows => 800);
});
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM feed', '800',
	'the capped distributed table comes down to its cap, read over every node', 60);
TtlIndex::wait_until($coord, $db,
	q{SELECT count(*) = 3 AND bool_and(rows_deleted > 0) FROM ttl_index_citus_nodes()
	   WHERE policy_id = (SELECT id FROM ttl_index_policy WHERE relid = 'feed'::regclass)},
	'every node took its part');
for my $w (@workers)
{
	cmp_ok($w->safe_psql($db, q{SELECT rows_capped FROM ttl_index_policy_stats()
	  WHERE policy_id = -(SELECT id FROM ttl_index_citus_policy WHERE table_name = 'feed')}),
		'>', 0, 'worker ' . $w->name . ' counts the rows it capped');
}
$coord->safe_psql($db, q{
SELECT ttl_drop_index('feed', 'at');
INSERT INTO feed SELECT g, now() - interval '2 hours', 'x@example.com', 'window' FROM generate_series(10001, 10300) g;
SELECT ttl_create_index('feed', 'at', 3600, set_columns => 'email = NULL',
	purge_window => to_char((now() AT TIME ZONE ttl_index_server_time_zone()) + interval '2 hours', 'HH24:MI')
		|| '-' || to_char((now() AT TIME ZONE ttl_index_server_time_zone()) + interval '3 hours', 'HH24:MI'));
});
for my $w (@workers)
{
	TtlIndex::wait_is($w, $db, q{SELECT stalled FROM ttl_index_policy_health()
	  WHERE policy_id = -(SELECT id FROM ttl_index_citus_policy WHERE table_name = 'feed')},
		'waiting for its purge window', 'worker ' . $w->name . ': outside the window, the rows wait');
}
is($coord->safe_psql($db, q{SELECT count(email) FROM feed WHERE note = 'window'}), '300',
	'no node anonymized outside the window');
$coord->safe_psql($db, q{
SELECT ttl_create_index('feed', 'at', 3600, set_columns => 'email = NULL',
	purge_window => to_char((now() AT TIME ZONE ttl_index_server_time_zone()) - interval '1 hour', 'HH24:MI')
		|| '-' || to_char((now() AT TIME ZONE ttl_index_server_time_zone()) + interval '1 hour', 'HH24:MI'));
});
TtlIndex::wait_is($coord, $db, q{SELECT count(*) || ' ' || count(email) FROM feed WHERE note = 'window'},
	'300 0', 'inside the window every node anonymizes its expired rows, which stay', 60);
my ($fret, $fout, $ferr) = $coord->psql($db,
	q{SELECT ttl_create_index('feed', 'at', 3600, set_columns => 'id = NULL')});
like($ferr, qr/must not name column "id": it is the distribution column of table "feed"/,
	'set_columns refuses the distribution column');
$coord->safe_psql($db, q{SELECT ttl_drop_index('feed', 'at')});

# ---- no other role reaches the policies through the sync trigger: it is
# not executable by PUBLIC, so a role cannot attach it to a look-alike
# table of its own and plant a policy on another role's distributed table
$coord->safe_psql($db, q{
CREATE ROLE alice LOGIN;
GRANT CREATE ON SCHEMA public TO alice;
});
my (undef, undef, $plant_err) = $coord->psql($db, q{
CREATE TABLE alice_lookalike (id int, relid regclass, column_name name, expire_after interval,
	batch_size int, enabled boolean, ttl_column name, filter text, unit text, action text,
	soft_delete_column name, rate_limit int, replication_origin boolean);
CREATE TRIGGER plant AFTER INSERT ON alice_lookalike
	FOR EACH ROW EXECUTE FUNCTION ttl_index_citus_sync();
}, extra_params => ['-U', 'alice']);
like($plant_err, qr/permission denied for function ttl_index_citus_sync/,
	'a role cannot attach the sync trigger to a table of its own');
$coord->psql($db, qq{INSERT INTO alice_lookalike VALUES ($id, 'events', 'created_at', '0',
	NULL, true, NULL, NULL, NULL, 'delete', NULL, NULL, NULL)}, extra_params => ['-U', 'alice']);
for my $w (@workers)
{
	is($w->safe_psql($db, qq{SELECT expire_after FROM ttl_index_citus_policy WHERE id = $id}),
		'01:00:00', 'worker ' . $w->name . ' still has the owner\'s policy, unchanged');
}
is($coord->safe_psql($db, 'SELECT count(*) FROM events'), '30', 'and the live rows are all there');
$coord->safe_psql($db, 'DROP TABLE IF EXISTS alice_lookalike; REVOKE CREATE ON SCHEMA public FROM alice; DROP ROLE alice');

# ---- rows inserted already expired are found (Citus writes shards past
# the hooks that note writes: the workers look every max_sleep)
expire('events', 6000);
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM events', '30',
	'rows inserted already expired are purged on every node', 30);

# ---- purging goes on through moves, a split, a new node and a rebalance
# (a write may fail while a shard is split: that is Citus's, and the
# writer goes on)
my $writer = $coord->background_psql($db, on_error_stop => 0);
$writer->query_until(qr/started/, "\\echo started\n" . join('',
	map { "INSERT INTO events SELECT g, now() - interval '2 hours', 'x' FROM generate_series(1, 1000) g;\n"
		  . "SELECT pg_sleep(0.05);\n" } 1 .. 60));
my ($from, $shard) = split /\|/, $coord->safe_psql($db,
	q{SELECT nodeport, shardid FROM citus_shards WHERE table_name = 'events'::regclass
	   AND nodeport <> } . $coord->port . q{ ORDER BY shardid LIMIT 1});
my $to = $from == $workers[0]->port ? $workers[1]->port : $workers[0]->port;
my $host = $coord->host;	# every node's socket directory
$coord->safe_psql($db, qq{SELECT citus_move_shard_placement($shard, '$host', $from, '$host', $to,
	shard_transfer_mode => 'block_writes')});
is($coord->safe_psql($db, qq{SELECT nodeport FROM citus_shards WHERE shardid = $shard}), $to,
	'a shard moved with block_writes');
$coord->safe_psql($db, qq{SELECT citus_move_shard_placement($shard, '$host', $to, '$host', $from,
	shard_transfer_mode => 'force_logical')});
is($coord->safe_psql($db, qq{SELECT nodeport FROM citus_shards WHERE shardid = $shard}), $from,
	'and back with logical replication');
my ($split, $min, $max) = split /\|/, $coord->safe_psql($db,
	q{SELECT shardid, shardminvalue, shardmaxvalue FROM pg_dist_shard
	   WHERE logicalrelid = 'events'::regclass ORDER BY shardid LIMIT 1});
my $point = int(($min + $max) / 2);
my $nodeid = $coord->safe_psql($db, 'SELECT nodeid FROM pg_dist_node WHERE groupid = 0');
$coord->safe_psql($db, qq{SELECT citus_split_shard_by_split_points($split, ARRAY['$point'],
	ARRAY[$nodeid, $nodeid], shard_transfer_mode => 'force_logical')});
is($coord->safe_psql($db, q{SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass}),
	'9', 'a shard split in two');
$coord->safe_psql($db, sprintf(q{SELECT citus_add_node('%s', %d)}, $late->host, $late->port));
$coord->safe_psql($db, q{SELECT rebalance_table_shards('events', shard_transfer_mode => 'force_logical')});
cmp_ok($coord->safe_psql($db, sprintf(q{SELECT count(*) FROM citus_shards
	WHERE table_name = 'events'::regclass AND nodeport = %d}, $late->port)),
	'>', 0, 'the rebalance moved shards to the new node');
is($late->safe_psql($db, qq{SELECT count(*) FROM ttl_index_citus_policy WHERE id = $id}), '1',
	'the new node has the policy (Citus copied the reference table)');
$writer->quit;
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM events', '30',
	'rows written through the moves, the split and the rebalance are purged', 60);
expire('events', 8000);
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM events', '30',
	'and rows written after them, on every placement', 30);
TtlIndex::wait_until($coord, $db,
	sprintf(q{SELECT rows_deleted > 0 FROM ttl_index_citus_nodes() WHERE policy_id = %d AND nodeport = %d},
		$id, $late->port),
	'the new node purges the shards it received');
is($coord->safe_psql($db, qq{SELECT sum(errors) FROM ttl_index_citus_nodes() WHERE policy_id = $id}),
	'0', 'no node counted an error');

# ---- a shard published without a replica identity is skipped, not failed
my $target = $workers[0];
my $pub_shard = $target->safe_psql($db, sprintf(q{SELECT shard_name('events'::regclass, shardid)
	FROM citus_shards WHERE table_name = 'events'::regclass AND nodeport = %d ORDER BY shardid LIMIT 1},
	$target->port));
# (on this node only, as a move's publication is)
$target->safe_psql($db, "SET citus.enable_ddl_propagation = off; CREATE PUBLICATION moving FOR TABLE $pub_shard");
my $before = $target->safe_psql($db, qq{SELECT errors FROM ttl_index_policy_stats() WHERE policy_id = -$id});
expire('events', 4000);
my $held = 0;
for (1 .. 300)
{
	$held = $target->safe_psql($db, "SELECT count(*) FROM $pub_shard WHERE payload = 'x'");
	last if $coord->safe_psql($db, 'SELECT count(*) FROM events') == 30 + $held;
	select(undef, undef, undef, 0.1);
}
cmp_ok($held, '>', 0, 'the published shard keeps its expired rows');
is($coord->safe_psql($db, 'SELECT count(*) FROM events'), 30 + $held,
	'while every other shard is purged');
sleep 2;
is($target->safe_psql($db, "SELECT count(*) FROM $pub_shard WHERE payload = 'x'"), $held,
	'the published shard is left alone');
is($target->safe_psql($db, qq{SELECT errors FROM ttl_index_policy_stats() WHERE policy_id = -$id}),
	$before, 'and the node counts no error for it');
$target->safe_psql($db, 'SET citus.enable_ddl_propagation = off; DROP PUBLICATION moving');
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM events', '30',
	'once unpublished, the shard is purged', 30);

# ---- the policy follows renames of the table, its schema and its column
$coord->safe_psql($db, q{
ALTER TABLE events RENAME TO happenings;
ALTER TABLE happenings RENAME COLUMN created_at TO made_at;
CREATE SCHEMA archive2;
ALTER TABLE happenings SET SCHEMA archive2;
});
for my $n ($coord, @workers, $late)
{
	is($n->safe_psql($db, qq{SELECT table_schema || '.' || table_name || '.' || column_name
	  FROM ttl_index_citus_policy WHERE id = $id}),
		'archive2.happenings.made_at', 'node ' . $n->name . ' follows the renames');
}
expire('archive2.happenings', 5000);
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM archive2.happenings', '30',
	'the renamed table is purged on every node', 30);

# ---- pause and resume reach the nodes
$coord->safe_psql($db, q{SELECT ttl_pause('archive2.happenings')});
is($workers[1]->safe_psql($db, qq{SELECT enabled FROM ttl_index_citus_policy WHERE id = $id}), 'f',
	'a paused policy is paused on the workers');
expire('archive2.happenings', 3000);
sleep 3;
is($coord->safe_psql($db, 'SELECT count(*) FROM archive2.happenings'), '3030',
	'no node purges a paused policy');
$coord->safe_psql($db, q{SELECT ttl_resume('archive2.happenings')});
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM archive2.happenings', '30',
	'resumed, it is purged again', 30);

# ---- ttl_drop_index() drops the index on every shard of every node
$coord->safe_psql($db, q{SELECT ttl_drop_index('archive2.happenings', 'made_at')});
is(indexes('%ttl_idx%', $coord, @workers, $late), 0,
	'ttl_drop_index() left no TTL index on any node');
for my $n ($coord, @workers, $late)
{
	is($n->safe_psql($db, 'SELECT count(*) FROM ttl_index_citus_policy'), '0',
		'node ' . $n->name . ' forgot the policy');
}
expire('archive2.happenings', 1000);
sleep 2;
is($coord->safe_psql($db, 'SELECT count(*) FROM archive2.happenings'), '1030',
	'and no node purges the table any more');

# ---- DROP TABLE takes the policy along on every node
$coord->safe_psql($db, q{SELECT ttl_create_index('archive2.happenings', 'made_at', 3600)});
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM archive2.happenings', '30',
	'a policy made again purges again', 30);
$coord->safe_psql($db, 'DROP TABLE archive2.happenings');
for my $n ($coord, @workers, $late)
{
	is($n->safe_psql($db, 'SELECT count(*) FROM ttl_index_citus_policy'), '0',
		'DROP TABLE: node ' . $n->name . ' has no policy left');
}
is($coord->safe_psql($db, 'SELECT count(*) FROM ttl_index_policy'), '0',
	'nor the coordinator\'s catalog');

# ---- a policy made before its table was distributed carries on
$coord->safe_psql($db, q{
CREATE TABLE later (id bigint, created_at timestamptz NOT NULL, payload text);
SELECT ttl_create_index('later', 'created_at', 3600);
SELECT ttl_pause('later');
INSERT INTO later SELECT g, now() - interval '2 hours', 'x' FROM generate_series(1, 4000) g;
SELECT create_distributed_table('later', 'id', shard_count => 8);
SELECT ttl_resume('later');
});
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM later', '0',
	'a table distributed after its policy is purged on every node', 30);

# ---- a single-shard distributed table (schema-based sharding's kind)
# (its shard on a worker: the coordinator's own worker purges its shards
# even without the policy's copy)
$coord->safe_psql($db, q{
CREATE TABLE single (id bigint, created_at timestamptz NOT NULL, payload text);
SELECT create_distributed_table('single', NULL);
});
my ($single_shard, $single_port) = split /\|/, $coord->safe_psql($db,
	q{SELECT shardid, nodeport FROM citus_shards WHERE table_name = 'single'::regclass});
if ($single_port == $coord->port)
{
	$coord->safe_psql($db, sprintf(q{SELECT citus_move_shard_placement(%d, '%s', %d, '%s', %d,
		shard_transfer_mode => 'block_writes')},
		$single_shard, $host, $coord->port, $host, $workers[0]->port));
}
isnt($coord->safe_psql($db, q{SELECT nodeport FROM citus_shards WHERE table_name = 'single'::regclass}),
	$coord->port, 'the single shard is on a worker');
$coord->safe_psql($db, q{
INSERT INTO single SELECT g, now() - interval '2 hours', 'x' FROM generate_series(1, 2000) g;
SELECT ttl_create_index('single', 'created_at', 3600);
});
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM single', '0',
	'a single-shard distributed table is purged on the node that holds it', 30);

# ---- what is refused, and changes nothing
$coord->safe_psql($db, q{
CREATE TABLE ref (created_at timestamptz NOT NULL);
SELECT create_reference_table('ref');
CREATE TABLE loc (created_at timestamptz NOT NULL);
SELECT citus_add_local_table_to_metadata('loc');
CREATE TABLE arch (id bigint, created_at timestamptz NOT NULL);
SELECT create_distributed_table('arch', 'id');
CREATE TABLE arch_old (id bigint, created_at timestamptz NOT NULL);
});
my $policies = $coord->safe_psql($db, 'SELECT count(*) FROM ttl_index_policy');
my ($rc, $out, $err) = $coord->psql($db, q{SELECT ttl_create_index('ref', 'created_at', 3600)});
like($err, qr/cannot purge the Citus reference table "ref"/, 'a reference table is refused');
like($err, qr/copied on every node/, 'with the reason');
($rc, $out, $err) = $coord->psql($db, q{SELECT ttl_create_index('loc', 'created_at', 3600)});
like($err, qr/cannot purge the Citus local table "loc"/, 'a Citus local table is refused');
($rc, $out, $err) = $coord->psql($db,
	q{SELECT ttl_create_index('arch', 'created_at', 3600, action => 'archive', archive_table => 'arch_old')});
like($err, qr/action "archive" is not supported on the distributed table "arch"/,
	'the archive action is refused on a distributed table');
($rc, $out, $err) = $workers[0]->psql($db, q{SELECT ttl_create_index('arch', 'created_at', 3600)});
like($err, qr/is made on the coordinator/, 'a worker refuses a policy on a distributed table');
is($coord->safe_psql($db, 'SELECT count(*) FROM ttl_index_policy'), $policies, 'no policy was written');
is(indexes('ref_created_at%') + indexes('loc_created_at%') + indexes('arch_created_at%'), 0,
	'no index was made on any node');

# ---- a plain table on the coordinator is purged as anywhere else
$coord->safe_psql($db, q{
CREATE TABLE plain (created_at timestamptz NOT NULL);
INSERT INTO plain SELECT now() - interval '2 hours' FROM generate_series(1, 1000);
INSERT INTO plain SELECT now() FROM generate_series(1, 10);
SELECT ttl_create_index('plain', 'created_at', 3600);
});
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM plain', '10',
	'a plain table of the coordinator is purged', 30);
is($workers[0]->safe_psql($db, 'SELECT count(*) FROM ttl_index_citus_policy WHERE table_name = \'plain\''),
	'0', 'and its policy stays on the coordinator');

# ==== No silent stall on Citus.  A policy follows its
# table through every Citus function that distributes, converts or
# replaces it (same id, same settings, its TTL index still marked as
# ttl_index's), and reaches the nodes at once; a node that cannot purge
# shows in the coordinator's ttl_index_stats.  Each case reads what the
# coordinator's ttl_index_stats said while the rows waited.

# said(sql): what the coordinator answers, or "error: ..." (a column the
# code under test lacks is a failed test, not the end of the script)
sub said
{
	my ($sql, $node) = @_;
	my ($rc, $out, $err) = ($node // $coord)->psql($db, $sql);
	return $rc == 0 ? $out : "error: $err";
}

# wait_said(sql, expected, name): a test that the coordinator's answer
# becomes the expected one (60 s at most)
sub wait_said
{
	my ($sql, $expected, $name) = @_;
	my $deadline = time() + 60;
	my $got;
	for (;;)
	{
		$got = said($sql);
		last if $got eq $expected || time() > $deadline;
		sleep(0.1);
	}
	return is($got, $expected, $name);
}

# purged(table, policy id, nodes, total, name): the table's expired rows
# (payload 'x') are all deleted; at each look while they waited, the
# coordinator's ttl_index_stats said of the policy that nothing stalls and
# ttl_index_citus_stats that every node answered with it (nodes: 0 for a
# table that is not distributed); at the end ttl_index_stats counts the
# total (undef: not checked)
sub purged
{
	my ($table, $id, $nodes, $total, $name) = @_;
	my ($left, $wrong) = (-1, '');
	my $deadline = time() + 60;
	while (time() < $deadline)
	{
		my $now = said(qq{SELECT coalesce(s.stalled, 'none') || ' ' || coalesce(c.nodes, 0)
		  FROM ttl_index_stats s LEFT JOIN ttl_index_citus_stats c USING (policy_id)
		 WHERE s.policy_id = $id});
		$wrong = $now if $wrong eq '' && $now ne "none $nodes";
		$left = said("SELECT count(*) FROM $table WHERE payload = 'x'");
		last if $left eq '0';
		sleep(0.1);
	}
	is($left, '0', "$name: every node purged the table");
	is($wrong, '', "$name: while the rows waited, ttl_index_stats showed every node purging the policy");
	wait_said(qq{SELECT rows_deleted || ' ' || errors || ' ' || coalesce(stalled, 'none')
	  FROM ttl_index_stats WHERE policy_id = $id}, "$total 0 none",
		"$name: ttl_index_stats counts every node's rows")
	  if defined $total;
}

# marked(table): the table's indexes marked as ttl_index's (the ones
# ttl_drop_index() and DROP EXTENSION drop)
sub marked
{
	my ($table) = @_;
	return said(qq{SELECT count(*) FROM pg_index
	  WHERE indrelid = '$table'::regclass
	    AND obj_description(indexrelid, 'pg_class') = 'created by ttl_index; dropped by ttl_drop_index()'});
}

# copies(id): "node:table" of the policy's copy on each worker node
sub copies
{
	my ($id, @nodes) = @_;
	return join ' ', map { $_->name . ':' . said(qq{SELECT coalesce(min(table_schema || '.' || table_name), 'none')
	  FROM ttl_index_citus_policy WHERE id = $id}, $_) } (@nodes ? @nodes : (@workers, $late));
}

# all_copies(id, table): what copies() says when every worker node has it
sub all_copies
{
	my ($table, @nodes) = @_;
	return join ' ', map { $_->name . ":$table" } (@nodes ? @nodes : (@workers, $late));
}

# expire_from(table, first id, n): n rows expired an hour ago, ids from
# first on (a table with a primary key takes rows a failed purge left)
sub expire_from
{
	my ($table, $first, $n) = @_;
	$coord->safe_psql($db, sprintf(q{INSERT INTO %s
	  SELECT g, now() - interval '2 hours', 'x' FROM generate_series(%d, %d) g},
		$table, $first, $first + $n - 1));
}

# on_node(table, node, where): rows of the table on the node's placements
sub on_node
{
	my ($table, $node, $where) = @_;
	return $coord->safe_psql($db, sprintf(q{SELECT coalesce(sum(result::bigint), 0)
	  FROM run_command_on_placements('%s', 'SELECT count(*) FROM %%s %s') WHERE nodeport = %d},
		$table, $where, $node->port));
}

# ---- a policy made before create_distributed_table() reaches every node
# (it stayed on the coordinator, whose own shards only were purged)
$coord->safe_psql($db, q{
CREATE TABLE early (id bigint, created_at timestamptz NOT NULL, payload text);
SELECT ttl_create_index('early', 'created_at', 3600, batch_size => 500);
SELECT create_distributed_table('early', 'id', shard_count => 8, colocate_with => 'none');
});
my $early = $coord->safe_psql($db, q{SELECT id FROM ttl_index_policy WHERE relid = 'early'::regclass});
is(copies($early), all_copies('public.early'),
	'create_distributed_table() after ttl_create_index(): every node has the policy');
is(said(qq{SELECT batch_size FROM ttl_index_citus_policy WHERE id = $early}, $late), '500',
	'with its settings');
expire('early', 4000);
purged('early', $early, 4, 4000, 'a table distributed after its policy');

# ---- citus_schema_distribute(): its tables' policies reach the nodes
$coord->safe_psql($db, q{
CREATE SCHEMA tenant;
CREATE TABLE tenant.visits (id bigint, created_at timestamptz NOT NULL, payload text);
SELECT ttl_create_index('tenant.visits', 'created_at', 3600);
SELECT citus_schema_distribute('tenant');
});
my $visits = $coord->safe_psql($db, q{SELECT id FROM ttl_index_policy WHERE relid = 'tenant.visits'::regclass});
# its one shard on a worker, which purges it only with the policy's copy
my ($vshard, $vport) = split /\|/, $coord->safe_psql($db,
	q{SELECT shardid, nodeport FROM citus_shards WHERE table_name = 'tenant.visits'::regclass});
if ($vport == $coord->port)
{
	$coord->safe_psql($db, sprintf(q{SELECT citus_move_shard_placement(%d, '%s', %d, '%s', %d,
		shard_transfer_mode => 'block_writes')},
		$vshard, $host, $coord->port, $host, $workers[0]->port));
}
is(copies($visits), all_copies('tenant.visits'), 'citus_schema_distribute(): every node has the policy');
expire('tenant.visits', 2000);
purged('tenant.visits', $visits, 4, 2000, 'citus_schema_distribute()');

# ---- citus_schema_undistribute() makes new tables: the policy follows
$coord->safe_psql($db, q{SELECT citus_schema_undistribute('tenant')});
is(said(q{SELECT id FROM ttl_index_policy WHERE relid = 'tenant.visits'::regclass}), $visits,
	'citus_schema_undistribute(): the policy follows the table, under its id');
is(marked('tenant.visits'), '1', 'with its TTL index');
is(copies($visits), all_copies('none'), 'and the nodes forget it');
expire('tenant.visits', 1000);
purged('tenant.visits', $visits, 0, undef, 'citus_schema_undistribute()');

# ---- ALTER TABLE ... SET SCHEMA into a distributed schema, and out
$coord->safe_psql($db, q{
CREATE SCHEMA tenant2;
SELECT citus_schema_distribute('tenant2');
ALTER TABLE tenant.visits SET SCHEMA tenant2;
});
is(copies($visits), all_copies('tenant2.visits'),
	'SET SCHEMA into a distributed schema: every node has the policy');
$coord->safe_psql($db, q{ALTER TABLE tenant2.visits SET SCHEMA tenant});
is(said(q{SELECT id FROM ttl_index_policy WHERE relid = 'tenant.visits'::regclass}) . ' ' . marked('tenant.visits'),
	"$visits 1", 'SET SCHEMA out of it: the policy follows the new table, with its TTL index');
is(copies($visits), all_copies('none'), 'and the nodes forget it');

# ---- alter_distributed_table(), undistribute_table() and
# create_distributed_table_concurrently(), run by the table's owner, a role
# that cannot write the catalog: the policy keeps its id, its settings and
# its TTL index (it was dropped, or left on the old relation)
$coord->safe_psql($db, q{
CREATE ROLE bob LOGIN;
GRANT CREATE ON SCHEMA public TO bob;
});
sub as_bob
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $coord->psql($db, $sql, extra_params => ['-U', 'bob']);
	return $rc == 0 ? $out : "error: $err";
}
is(as_bob(q{
CREATE TABLE conv (id bigint PRIMARY KEY, created_at timestamptz NOT NULL, payload text);
SELECT create_distributed_table('conv', 'id', shard_count => 4, colocate_with => 'none');
SELECT ttl_create_index('conv', 'created_at', 3600, batch_size => 300, filter => $$payload <> 'keep'$$) > 0;
}), "\nt", 'bob distributes his table and gives it a policy');
my $settings = q{SELECT id || ' ' || batch_size || ' ' || filter FROM ttl_index_policy WHERE relid = 'conv'::regclass};
my $conv_settings = said($settings);
my $conv = (split / /, $conv_settings)[0];
expire_from('conv', 1, 2000);
purged('conv', $conv, 4, 2000, 'before alter_distributed_table()');

is(as_bob(q{SELECT alter_distributed_table('conv', shard_count => 6)}), '',
	'alter_distributed_table() as bob');
is(said(q{SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'conv'::regclass}), '6',
	'the table was replaced by one of six shards');
is(said($settings), $conv_settings, 'alter_distributed_table(): the policy follows, same id and settings');
is(marked('conv'), '1', 'with its TTL index');
is(copies($conv), all_copies('public.conv'), 'and every node has it');
expire_from('conv', 10001, 3000);
purged('conv', $conv, 4, 5000, 'alter_distributed_table()');

is(as_bob(q{SELECT undistribute_table('conv')}), '', 'undistribute_table() as bob');
is(said($settings), $conv_settings, 'undistribute_table(): the policy follows, same id and settings');
is(marked('conv'), '1', 'with its TTL index');
is(copies($conv), all_copies('none'), 'and the nodes forget it');
expire_from('conv', 20001, 1000);
purged('conv', $conv, 0, undef, 'undistribute_table()');

is(as_bob(q{SELECT create_distributed_table_concurrently('conv', 'id')}), '',
	'create_distributed_table_concurrently() as bob');
is(said(q{SELECT count(*) > 1 FROM pg_dist_shard WHERE logicalrelid = 'conv'::regclass}), 't',
	'the table is distributed');
is(said($settings), $conv_settings,
	'create_distributed_table_concurrently(): the policy follows, same id and settings');
is(marked('conv'), '1', 'with its TTL index');
is(copies($conv), all_copies('public.conv'), 'and every node has it');
expire_from('conv', 30001, 2000);
purged('conv', $conv, 4, undef, 'create_distributed_table_concurrently()');
is(as_bob(q{SELECT ttl_drop_index('conv', 'created_at')}), 't', 'bob drops the policy');
# (the Citus local table's shard that create_distributed_table_concurrently()
# split, with its index, is Citus's to drop later: now)
$coord->safe_psql($db, 'CALL citus_cleanup_orphaned_resources()');
is(indexes('conv_created_at_ttl_idx%', $coord, @workers, $late), 0,
	'and no TTL index of his table is left on any node');

# ---- refused: a Citus function that would leave a policy where no node
# purges it, or a distributed table archiving; nothing changes
$coord->safe_psql($db, q{
CREATE TABLE refd (id bigint, created_at timestamptz NOT NULL);
SELECT ttl_create_index('refd', 'created_at', 3600);
CREATE TABLE arch2 (id bigint, created_at timestamptz NOT NULL);
CREATE TABLE arch2_old (id bigint, created_at timestamptz NOT NULL);
SELECT ttl_create_index('arch2', 'created_at', 3600, action => 'archive', archive_table => 'arch2_old');
});
like(said(q{SELECT create_reference_table('refd')}),
	qr/cannot make table "refd" a Citus reference table: it has a TTL policy/,
	'create_reference_table() of a table with a policy is refused');
like(said(q{SELECT citus_add_local_table_to_metadata('refd')}),
	qr/cannot make table "refd" a Citus local table: it has a TTL policy/,
	'citus_add_local_table_to_metadata() too');
like(said(q{SELECT create_distributed_table('arch2', 'id')}),
	qr/cannot distribute table "arch2": its TTL policy archives/,
	'and create_distributed_table() of a table whose policy archives');
is(said(q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid IN ('refd'::regclass, 'arch2'::regclass)}),
	'0', 'the tables stay local');
is(said(q{SELECT count(*) FROM ttl_index_policy WHERE relid IN ('refd'::regclass, 'arch2'::regclass)}),
	'2', 'with their policies');

# ---- a node added without ttl_index preloaded: its rows wait, and the
# coordinator says which node and why (it showed nothing, no error)
my $bare = TtlIndex::node('worker4', @conf, "shared_preload_libraries = 'citus'");
$bare->append_conf('postgresql.conf', "citus.local_hostname = '" . $bare->host . "'");
$bare->reload;
$bare->safe_psql($db, 'CREATE EXTENSION citus');
$coord->safe_psql($db, sprintf(q{SELECT citus_add_node('%s', %d)}, $bare->host, $bare->port));
is($bare->safe_psql($db, q{SELECT count(*) FROM pg_extension WHERE extname = 'ttl_index'}), '1',
	'Citus gave the new node the extension, but not the library');
$coord->safe_psql($db, q{
CREATE TABLE spread (id bigint, created_at timestamptz NOT NULL, payload text);
SELECT create_distributed_table('spread', 'id', shard_count => 10, colocate_with => 'none');
SELECT ttl_create_index('spread', 'created_at', 3600);
});
my $spread = $coord->safe_psql($db, q{SELECT id FROM ttl_index_policy WHERE relid = 'spread'::regclass});
expire('spread', 4000);
my $stuck = on_node('spread', $bare, '');
cmp_ok($stuck, '>', 0, 'the new node holds some of the expired rows');
my $bare_at = $bare->host . ':' . $bare->port;
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM spread', $stuck,
	'every other node purges its rows; the new node\'s wait', 30);
wait_said(qq{SELECT rows_deleted || ' ' || errors || ' ' || coalesce(stalled, 'none')
  FROM ttl_index_stats WHERE policy_id = $spread},
	(4000 - $stuck) . " 0 ttl_index not preloaded ($bare_at)",
	'while they wait, ttl_index_stats counts the other nodes\' rows and says which node does not purge, and why');
is(said(sprintf(q{SELECT reachable || ' ' || state FROM ttl_index_citus_nodes()
	WHERE policy_id = %d AND nodeport = %d}, $spread, $bare->port)),
	'true ttl_index not preloaded', 'ttl_index_citus_nodes() says it of the node');
is(said(qq{SELECT nodes || ' ' || stalled FROM ttl_index_citus_stats WHERE policy_id = $spread}),
	"5 ttl_index not preloaded ($bare_at)", 'and ttl_index_citus_stats');
is(said(qq{SELECT stalled FROM ttl_index_stats WHERE policy_id = $spread}) eq
	as_bob(qq{SELECT stalled FROM ttl_index_stats WHERE policy_id = $spread}) ? 'same' : 'differs',
	'same', 'another role reads the same');
$bare->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,ttl_index'");
$bare->restart;
purged('spread', $spread, 5, 4000, 'the node preloading ttl_index');
$coord->safe_psql($db, 'DROP TABLE spread');
$coord->safe_psql($db, sprintf(q{SELECT citus_remove_node('%s', %d)}, $bare->host, $bare->port));

# ---- a node down: the coordinator keeps its last known counts, marked
# stale, and says it is down; the total never falls (it fell from 6,000
# to 3,992 with nothing said)
$coord->safe_psql($db, q{
CREATE TABLE steady (id bigint, created_at timestamptz NOT NULL, payload text);
SELECT create_distributed_table('steady', 'id', shard_count => 8, colocate_with => 'none');
SELECT ttl_create_index('steady', 'created_at', 3600);
});
my $steady = $coord->safe_psql($db, q{SELECT id FROM ttl_index_policy WHERE relid = 'steady'::regclass});
expire('steady', 6000);
purged('steady', $steady, 4, 6000, 'before a node goes down');
my $down = $workers[1];
my $down_at = $down->host . ':' . $down->port;
# rows that expire in ten seconds, while the node is down
$coord->safe_psql($db, q{INSERT INTO steady
  SELECT g, now() - interval '1 hour' + interval '10 seconds', 'x' FROM generate_series(10001, 13000) g});
my $down_later = on_node('steady', $down, 'WHERE id > 10000');
my $down_rows = said(sprintf(q{SELECT rows_deleted FROM ttl_index_citus_nodes()
	WHERE policy_id = %d AND nodeport = %d}, $steady, $down->port));
cmp_ok($down_rows, '>', 0, 'the node to go down has deleted rows');
$down->stop('fast');
my $others = 6000 + 3000 - $down_later;
my ($fell, $unsaid, $last) = ('', '', '');
my $deadline = time() + 60;
while (time() < $deadline)
{
	$last = said(qq{SELECT rows_deleted || ' ' || coalesce(stalled, 'none') FROM ttl_index_stats WHERE policy_id = $steady});
	my ($rows, $stalled) = split / /, $last, 2;
	$fell = $last if $fell eq '' && !($rows =~ /^\d+$/ && $rows >= 6000);
	$unsaid = $last if $unsaid eq '' && ($stalled // '') ne "node down ($down_at)";
	last if $rows =~ /^\d+$/ && $rows == $others;
	sleep(0.1);
}
is($fell, '', 'while the node is down, ttl_index_stats.rows_deleted never falls below what it was');
is($unsaid, '', 'and stalled says the node is down');
is($last, "$others node down ($down_at)",
	'the other nodes purge the rows that expired meanwhile, counted with the node\'s last known rows');
is(said(sprintf(q{SELECT reachable || ' ' || stale || ' ' || state || ' ' || rows_deleted
	  || ' ' || (counted_at < now()) FROM ttl_index_citus_nodes() WHERE policy_id = %d AND nodeport = %d},
	$steady, $down->port)), "false true node down $down_rows true",
	'ttl_index_citus_nodes(): the node\'s last known counts, stale, and when they were read');
is(said(qq{SELECT nodes || ' ' || nodes_unreachable || ' ' || nodes_stale || ' ' || rows_deleted
	FROM ttl_index_citus_stats WHERE policy_id = $steady}), "3 1 1 $others",
	'ttl_index_citus_stats: three nodes answered, one did not, its counts stale');
$down->start;
purged('steady', $steady, 4, 9000, 'the node back');

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

# ---- DROP EXTENSION with a policy on a distributed table (and a plain one)
cmp_ok(indexes('later_created_at_ttl_idx%', $coord, @workers, $late), '>=', 9,
	'the distributed table has its TTL index on its shards');
$coord->safe_psql($db, 'DROP EXTENSION ttl_index');
for my $n ($coord, @workers, $late)
{
	is($n->safe_psql($db, q{SELECT count(*) FROM pg_extension WHERE extname = 'ttl_index'}), '0',
		'DROP EXTENSION: gone from node ' . $n->name);
}
is(indexes('%ttl_idx%', $coord, @workers, $late), 0, 'and no TTL index is left on any node');
$coord->safe_psql($db, 'CREATE EXTENSION ttl_index');
$coord->safe_psql($db, q{SELECT ttl_create_index('later', 'created_at', 3600)});
expire('later', 2000);
TtlIndex::wait_is($coord, $db, 'SELECT count(*) FROM later', '0',
	'made again after CREATE EXTENSION, a policy purges every node', 30);

for my $n ($coord, @workers, $late)
{
	ok(!$n->log_contains('TRAP:|PANIC|terminated by signal'), 'no crash on ' . $n->name);
}
$_->stop for ($coord, @workers, $late);
done_testing();
