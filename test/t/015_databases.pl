# More databases than workers.  Ten databases have the extension and
# max_worker_processes is 8: at most ttl_index.max_workers workers run (3 by
# default, and never more than leave ttl_index.free_worker_slots free), the
# databases take turns, every one is purged within a bounded time, the log
# and ttl_index_databases name those that wait, and parallel query still
# gets its workers.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use TtlIndex;

my $node = TtlIndex::node('databases', 'max_worker_processes = 8',
	'ttl_index.database_turn = 2', 'ttl_index.log_min_duration = -1');
my @dbs = map { "db$_" } 1 .. 10;
for my $db (@dbs)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (ts timestamptz NOT NULL);
SELECT ttl_create_index('t', 'ts', 60);
INSERT INTO t SELECT now() - interval '1 hour' FROM generate_series(1, 100);
});
}

# purged(): how many of the databases have no expired row left
sub purged
{
	my $n = 0;
	for my $db (@dbs)
	{
		$n++ if $node->safe_psql($db, 'SELECT count(*) FROM t') eq '0';
	}
	return $n;
}

# settle(): the seconds until every database is purged, sampling
# ttl_index_databases meanwhile every 100 ms from one session (a psql
# started per look, ten more to count the purged ones, took seconds each
# round on a busy machine, and missed the databases that waited)
my $watch = $node->background_psql('db1');
my ($max_running, $saw_waiting) = (0, 0);
sub settle
{
	my $t0 = time();
	my $counted = 0;
	while (time() - $t0 < $PostgreSQL::Test::Utils::timeout_default)
	{
		my ($running, $waiting) = split /\|/, $watch->query_safe(
			q{SELECT count(*) FILTER (WHERE state = 'running'), count(*) FILTER (WHERE state = 'waiting') FROM ttl_index_databases});
		$max_running = $running if $running > $max_running;
		$saw_waiting = 1 if $waiting > 0;
		if (time() - $counted >= 1)
		{
			last if purged() == 10;
			$counted = time();
		}
		sleep(0.1);
	}
	return time() - $t0;
}

my $first = settle();
is(purged(), 10, sprintf('every one of the ten databases is purged (%.1f s)', $first));

# the turns go on: new expired rows in every database go within a bound
# (seven databases wait for three slots: at most three turns of 2 s, plus
# the time to start each worker; 20 s is loose, for a busy machine)
$node->safe_psql($_, q{INSERT INTO t SELECT now() - interval '1 hour' FROM generate_series(1, 100)}) for @dbs;
my $second = settle();
is(purged(), 10, sprintf('rows expired later go in every database too (%.1f s)', $second));
cmp_ok($second, '<', 20, 'within the bound of the turns');
cmp_ok($max_running, '<=', 3, "at most 3 workers ran at once ($max_running)");
# (while the databases were made, one by one, the workers could keep up
# with them; the ten inserts at once leave seven waiting)
ok($saw_waiting, 'ttl_index_databases showed databases waiting for a worker');
$watch->quit;

my $log = slurp_file($node->logfile);
like($log, qr/more databases need a worker than may run at once \(3\)/, 'the log says the databases take turns');
my %named = map { $_ => 1 } ($log =~ /database "(db\d+)" waits for a worker/g);
cmp_ok(scalar(keys %named), '>=', 7, 'the log names every database that waited (' . join(',', sort keys %named) . ')');

# parallel query still gets workers
$node->safe_psql('db1', q{CREATE TABLE big AS SELECT g FROM generate_series(1, 200000) g; ANALYZE big});
my $plan = $node->safe_psql('db1', q{
SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM big});
my ($launched) = $plan =~ /Workers Launched: (\d+)/;
cmp_ok($launched // 0, '>=', 1, "parallel query still launches workers ($launched)");

$node->stop;
done_testing();
