# Scattered tables: when the expiry column is filled in no time order, a
# drain in key order visits a heap page once per row.  A large backlog on
# such a table is swept instead: its heap is read in block order, in
# bounded batches, as a plain DELETE's sequential scan reads it.
#
# 1. Random expiry, 300,000 rows, 80% expired, one expired row referenced
#    by a foreign key: every other expired row goes, none before it
#    expires, the referenced one is held, and the table was read
#    sequentially (pg_stat_user_tables.seq_scan).
# 2. The same rows in time order: the index alone, no sequential read.
# 3. Random per-row TTLs (the key is an expression): the index alone, and
#    the same result.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $node = TtlIndex::node('sweep', 'ttl_index.max_parallel_workers = 0');
$node->safe_psql('postgres', 'CREATE EXTENSION ttl_index');

# load(table, order): 300,000 rows, every fifth living a day or more; the
# expiry at random (order 'random') or rising with the id ('time')
sub load
{
	my ($table, $order) = @_;
	my $when = $order eq 'random'
	  ? "now() - interval '2 days' + random() * interval '1 day'"
	  : "now() - interval '2 days' + g * interval '100 ms'";
	$node->safe_psql('postgres', qq{
CREATE TABLE $table (id bigint PRIMARY KEY, expires_at timestamptz NOT NULL, payload text);
INSERT INTO $table
  SELECT g, CASE WHEN g % 5 <> 0 THEN $when ELSE now() + interval '1 day' + random() * interval '1 day' END,
         rpad(g::text, 100, '.')
    FROM generate_series(1, 300000) g;
CREATE INDEX ON $table (expires_at);
VACUUM ANALYZE $table;
CREATE TABLE ${table}_child (parent bigint REFERENCES $table (id));
INSERT INTO ${table}_child VALUES (150001);
});
}

# seq_scans(table): the table's sequential scans so far, once every one is
# counted: the worker has ended its run and reported its counters, and the
# test's own sessions (the load, the checks) have exited, reporting theirs
sub seq_scans
{
	my ($table) = @_;
	TtlIndex::wait_asleep($node, 'postgres');
	TtlIndex::wait_sessions_gone($node, 'postgres');
	return $node->safe_psql('postgres',
		"SELECT seq_scan FROM pg_stat_user_tables WHERE relname = '$table'");
}

# check(table, how): the drain's result, waited for on the counters (the
# test's own queries on the table would count as sequential scans); returns
# the table's sequential scans once drained
sub check
{
	my ($table, $how) = @_;
	TtlIndex::wait_is($node, 'postgres',
		"SELECT rows_deleted, rows_held, errors FROM ttl_index_stats WHERE table_name = '$table'::regclass",
		'239999|1|0', "$how: 239,999 rows deleted, the referenced one held", 120);
	my $scans = seq_scans($table);
	is($node->safe_psql('postgres', "SELECT id FROM $table WHERE expires_at < now()"),
		'150001', "$how: the one expired row left is the referenced row");
	is($node->safe_psql('postgres', "SELECT count(*) FROM $table WHERE id % 5 = 0"),
		'60000', "$how: no row is deleted before it expires");
	return $scans;
}

load('scattered', 'random');
my $before = seq_scans('scattered');
$node->safe_psql('postgres', "SELECT ttl_create_index('scattered', 'expires_at', 0)");
cmp_ok(check('scattered', 'random expiry'), '>', $before,
	'the scattered table was swept (read in block order)');

load('ordered', 'time');
$before = seq_scans('ordered');
$node->safe_psql('postgres', "SELECT ttl_create_index('ordered', 'expires_at', 0)");
is(check('ordered', 'time order'), $before,
	'a table in time order is drained through its index alone');

# per-row TTLs: the key is ttl_expires_at(created_at, ttl), an expression
$node->safe_psql('postgres', q{
CREATE TABLE per_row (id bigint PRIMARY KEY, created_at timestamptz NOT NULL, ttl interval NOT NULL);
INSERT INTO per_row
  SELECT g, now() - interval '2 days' + random() * interval '1 day',
         CASE WHEN g % 5 <> 0 THEN interval '1 second' ELSE interval '10 days' END
    FROM generate_series(1, 300000) g;
-- the index the policy uses, built first (a build reads the table)
CREATE INDEX ON per_row (ttl_expires_at(created_at, ttl));
VACUUM ANALYZE per_row;
});
$before = seq_scans('per_row');
$node->safe_psql('postgres', "SELECT ttl_create_index('per_row', 'created_at', ttl_column => 'ttl')");
TtlIndex::wait_is($node, 'postgres',
	"SELECT rows_deleted FROM ttl_index_stats WHERE table_name = 'per_row'::regclass",
	'240000', 'random per-row TTLs: every expired row is deleted', 120);
is(seq_scans('per_row'), $before, 'a per-row TTL is drained through its index');
is($node->safe_psql('postgres', "SELECT count(*) FROM per_row WHERE ttl = interval '10 days'"),
	'60000', 'and no row before it expires');

unlike(slurp_file($node->logfile), qr/TRAP:|PANIC|terminated by signal/, 'no crash in the server log');
$node->stop;
done_testing();
