# ttl_index.synchronous_commit: on (the default), the worker waits for each
# batch's commit record to be flushed, one WAL sync per batch at least; off,
# it commits its batches asynchronously and the WAL writer flushes them.
# (fsync is on here: test clusters turn it off, and then nothing syncs.)
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $node = TtlIndex::node('commit', 'ttl_index.batch_size = 1000', 'wal_writer_delay = 10s', 'fsync = on');
$node->safe_psql('postgres', 'CREATE EXTENSION ttl_index');

# WAL syncs so far: pg_stat_wal.wal_sync, which PostgreSQL 18 moved to
# pg_stat_io (the fsyncs of object 'wal')
my $syncs = TtlIndex::version($node) >= 180000
  ? "SELECT coalesce(sum(fsyncs), 0) FROM pg_stat_io WHERE object = 'wal'"
  : 'SELECT wal_sync FROM pg_stat_wal';

# drain(table): 50 batches of 1000 rows; returns the WAL syncs meanwhile
sub drain
{
	my ($table) = @_;
	$node->safe_psql('postgres', qq{
CREATE TABLE $table (ts timestamptz);
INSERT INTO $table SELECT now() - interval '1 day' FROM generate_series(1, 50000);
CREATE INDEX ON $table (ts);
CHECKPOINT;
});
	my $before = $node->safe_psql('postgres', $syncs);
	$node->safe_psql('postgres', "SELECT ttl_create_index('$table', 'ts', 60)");
	$node->poll_query_until('postgres', "SELECT count(*) = 0 FROM $table")
	  or die "$table not drained";
	# the worker reports its WAL statistics with its table counters
	sleep(2);
	return $node->safe_psql('postgres', $syncs) - $before;
}

my $sync = drain('t_sync');
cmp_ok($sync, '>=', 50, "on: at least one WAL sync per batch ($sync for 50 batches)");

$node->safe_psql('postgres',
	'ALTER SYSTEM SET ttl_index.synchronous_commit = off; SELECT pg_reload_conf()');
sleep(1);
my $async = drain('t_async');
cmp_ok($async, '<', 25, "off: batches do not wait for their own WAL sync ($async for 50 batches)");
is($node->safe_psql('postgres', 'SELECT sum(errors) FROM ttl_index_stats'), '0', 'no errors either way');

$node->stop;
done_testing();
