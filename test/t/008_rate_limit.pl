# ttl_index.rate_limit: the workers delete at most that many rows per second,
# all databases together, over any window of a few seconds, and wait for
# it (ttl_index_progress says 'rate limited'); the limit can be changed with
# a reload, and 0 lifts it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use FindBin;
use lib $FindBin::RealBin;
use TtlIndex;

my $node = TtlIndex::node('rate', 'ttl_index.enabled = off', 'ttl_index.rate_limit = 4000');

# two databases share the limit
foreach my $db ('one', 'two')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (ts timestamptz);
INSERT INTO t SELECT now() - interval '1 day' FROM generate_series(1, 100000);
SELECT ttl_create_index('t', 'ts', 60);
});
}

sub deleted
{
	my $total = 0;
	$total += $node->safe_psql($_, 'SELECT rows_deleted FROM ttl_index_stats') foreach ('one', 'two');
	return $total;
}

$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl_index.enabled = on; SELECT pg_reload_conf()');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'ttl_index worker'"),
	'both workers run');
ok($node->poll_query_until('one', 'SELECT rows_deleted > 0 FROM ttl_index_stats'),
	'deleting has started in one');
ok($node->poll_query_until('two', 'SELECT rows_deleted > 0 FROM ttl_index_stats'),
	'and in two');

# The rate over a window of 5 s.  Each of the two workers gets half the
# limit, in a bucket that holds one second of its share (full when the
# window opens, after a start or a worker slowed down by a busy machine),
# and goes into debt by at most one batch (a fifth of a second of the
# whole limit, when it ran alone); its counters may trail its last batch
# before the window, and so count it in the window.  So over T seconds
# they delete at most 4000 T + 4000 + 2 * 2 * 800 rows, however loaded the
# machine is: a slower worker only deletes less.  The window is timed from
# before the first count to after the last one, which can only make it
# longer than the counts' own.  How far below the limit they stay depends
# on the CPU they get, so the rate has no floor here: that they wait for
# the limit is shown by the phase they wait in.
my $t0 = time();
my $n0 = deleted();
sleep(5);
my $n1 = deleted();
my $t1 = time();
my $max = 4000 * ($t1 - $t0) + 4000 + 2 * 2 * 800;
cmp_ok($n1 - $n0, '<=', $max,
	sprintf('at most the limit: %d rows in %.1f s (%.0f rows/s for 4000; at most %d with the burst)',
		$n1 - $n0, $t1 - $t0, ($n1 - $n0) / ($t1 - $t0), $max));
ok($node->poll_query_until('one',
	"SELECT count(*) = 1 FROM ttl_index_progress WHERE datname = 'one' AND phase = 'rate limited'"),
	'ttl_index_progress shows the worker of this database waiting for the limit');

# lifting the limit: the rest goes at full speed
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl_index.rate_limit = 0; SELECT pg_reload_conf()');
my $start = time();
ok($node->poll_query_until('one', 'SELECT count(*) = 0 FROM t'), 'database one drained once the limit is lifted');
ok($node->poll_query_until('two', 'SELECT count(*) = 0 FROM t'), 'database two drained once the limit is lifted');
# (a loose bound: the limit would take tens of seconds, the drain without
# it a few, on a busy machine too)
my $left = 200000 - $n1;
cmp_ok(time() - $start, '<', $left / 4000,
	sprintf('faster than the limit would allow (%d rows in %.1f s)', $left, time() - $start));

$node->stop;
done_testing();
