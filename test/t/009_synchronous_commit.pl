# ttl_index.synchronous_commit: off (the default), the worker commits its
# batches without waiting for their WAL flush, as synchronous_commit = off
# does (the WAL writer flushes them): deleting expired rows is idempotent,
# a batch a crash loses is redone.  Two cases still wait, as
# synchronous_commit says: an archive policy (its rows are copied, a reader
# may have seen a copy a crash would take back) and a server with
# synchronous standbys (synchronous_standby_names set).  On, every batch
# waits.  A wait shows as one WAL sync per batch at least.
# (fsync is on here: test clusters turn it off, and then nothing syncs.)
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $node = TtlIndex::node('commit', 'ttl_index.batch_size = 1000', 'wal_writer_delay = 10s',
	'fsync = on', 'ttl_index.max_parallel_workers = 0');
$node->safe_psql('postgres', 'CREATE EXTENSION ttl_index');

# WAL syncs so far: pg_stat_wal.wal_sync, which PostgreSQL 18 moved to
# pg_stat_io (the fsyncs of object 'wal')
my $syncs = TtlIndex::version($node) >= 180000
  ? "SELECT coalesce(sum(fsyncs), 0) FROM pg_stat_io WHERE object = 'wal'"
  : 'SELECT wal_sync FROM pg_stat_wal';

# drain(table[, archive]): 50 batches of 1000 rows (moved to an archive
# table when asked); returns the WAL syncs meanwhile, counted once the
# worker has ended its run and reported its WAL statistics
sub drain
{
	my ($table, $archive) = @_;
	$node->safe_psql('postgres', qq{
CREATE TABLE $table (ts timestamptz);
INSERT INTO $table SELECT now() - interval '1 day' FROM generate_series(1, 50000);
CREATE INDEX ON $table (ts);
CREATE TABLE ${table}_archive (LIKE $table);
CHECKPOINT;
});
	my $before = $node->safe_psql('postgres', $syncs);
	$node->safe_psql('postgres', "SELECT ttl_create_index('$table', 'ts', 60"
		  . ($archive ? ", archive_table => '${table}_archive'" : '') . ')');
	$node->poll_query_until('postgres', "SELECT count(*) = 0 FROM $table")
	  or die "$table not drained";
	TtlIndex::wait_asleep($node, 'postgres', "$table: the worker has reported its WAL statistics");
	return $node->safe_psql('postgres', $syncs) - $before;
}

my $async = drain('t_default');
cmp_ok($async, '<', 25, "default (off): batches do not wait for their own WAL sync ($async for 50 batches)");

my $archive = drain('t_archive', 1);
cmp_ok($archive, '>=', 50, "off, an archive policy: each batch waits ($archive for 50 batches)");
is($node->safe_psql('postgres', 'SELECT count(*) FROM t_archive_archive'), '50000',
	'and every row is in the archive');

# a synchronous standby named (none connected: commits wait for the local
# flush only, synchronous_commit = local)
$node->safe_psql('postgres', q{
ALTER SYSTEM SET synchronous_standby_names = 'standby1';
ALTER SYSTEM SET synchronous_commit = local;
SELECT pg_reload_conf();
});
TtlIndex::wait_setting($node, 'synchronous_standby_names', 'standby1');
my $syncrep = drain('t_syncrep');
cmp_ok($syncrep, '>=', 50, "off, synchronous_standby_names set: each batch waits ($syncrep for 50 batches)");
$node->safe_psql('postgres', q{
ALTER SYSTEM RESET synchronous_standby_names;
ALTER SYSTEM RESET synchronous_commit;
ALTER SYSTEM SET ttl_index.synchronous_commit = on;
SELECT pg_reload_conf();
});
TtlIndex::wait_setting($node, 'ttl_index.synchronous_commit', 'on');
my $sync = drain('t_sync');
cmp_ok($sync, '>=', 50, "on: at least one WAL sync per batch ($sync for 50 batches)");
is($node->safe_psql('postgres', 'SELECT sum(errors) FROM ttl_index_stats'), '0', 'no errors in any case');

$node->stop;
done_testing();
