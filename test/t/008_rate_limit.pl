# ttl_index.rate_limit: the workers delete at most that many rows per second,
# all databases together, over any window of a few seconds; the limit can
# be changed with a reload, and 0 lifts it.
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
	'deleting has started');

# the first second may spend the bucket's one-second burst; measure after
sleep(1.5);
my ($n0, $t0) = (deleted(), time());
sleep(4);
my ($n1, $t1) = (deleted(), time());
my $rate = ($n1 - $n0) / ($t1 - $t0);
cmp_ok($rate, '<=', 4000 * 1.1, sprintf('at most the limit over 4 s: %.0f rows/s for 4000', $rate));
cmp_ok($rate, '>=', 4000 * 0.6, sprintf('and not far below it: %.0f rows/s', $rate));
ok($node->poll_query_until('one',
	"SELECT count(*) = 1 FROM ttl_index_progress WHERE datname = 'one' AND phase IN ('rate limited', 'deleting')"),
	'ttl_index_progress shows the worker of this database limited or deleting');

# lifting the limit: the rest goes at full speed
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl_index.rate_limit = 0; SELECT pg_reload_conf()');
my $start = time();
ok($node->poll_query_until('one', 'SELECT count(*) = 0 FROM t'), 'database one drained once the limit is lifted');
ok($node->poll_query_until('two', 'SELECT count(*) = 0 FROM t'), 'database two drained once the limit is lifted');
my $left = 200000 - $n1;
cmp_ok(time() - $start, '<', $left / 4000,
	sprintf('faster than the limit would allow (%d rows in %.1f s)', $left, time() - $start));

$node->stop;
done_testing();
