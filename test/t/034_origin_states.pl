# Replication origin states are the server's (DESIGN.md, trap 26).  With
# ttl_index.max_workers = 12, fifteen databases and 10 states, ttl_index
# leaves ttl_index.free_replication_states (2) of them free, gives a
# state back as each process exits, and says at start that its settings do
# not fit: a logical subscription made afterwards in the same cluster finds
# its states and syncs.  DROP EXTENSION and DROP DATABASE leave no
# ttl_index_process_N origin (nor its state) behind, across a restart.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use TtlIndex;

my $node = TtlIndex::node('origins', 'wal_level = logical', 'max_replication_slots = 10', 'max_wal_senders = 10',
	'max_worker_processes = 24', 'ttl_index.max_workers = 12',
	'ttl_index.database_turn = 2', 'ttl_index.log_min_duration = -1');
# the states: max_replication_slots up to 17, max_active_replication_origins
# (10 by default) from 18
is($node->safe_psql('postgres', TtlIndex::version($node) >= 180000 ?
	'SHOW max_active_replication_origins' : 'SHOW max_replication_slots'), '10', 'the server has 10 states');

my @dbs = map { "db$_" } 1 .. 15;
for my $db (@dbs)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (ts timestamptz NOT NULL);
SELECT ttl_create_index('t', 'ts', 60);
});
}

# ours(): the states ttl_index's origins hold now
my $ours = q{SELECT count(*) FROM pg_replication_origin_status WHERE external_id LIKE 'ttl_index%'};

# fill(): expired rows in every database; purged(): how many are clean
sub fill
{
	$node->safe_psql($_, q{INSERT INTO t SELECT now() - interval '1 hour' FROM generate_series(1, 100)}) for @dbs;
}
sub purged
{
	my $n = 0;
	for my $db (@dbs)
	{
		$n++ if $node->safe_psql($db, 'SELECT count(*) FROM t') eq '0';
	}
	return $n;
}

# twice over: every database purged (their changes carry the origin), the
# states ttl_index holds sampled all along
my $max_ours = 0;
for my $round (1, 2)
{
	fill();
	my $t0 = time();
	for (;;)
	{
		my $n = $node->safe_psql('postgres', $ours);
		$max_ours = $n if $n > $max_ours;
		last if purged() == 15 || time() - $t0 > $PostgreSQL::Test::Utils::timeout_default;
	}
	is(purged(), 15, "round $round: every one of the fifteen databases is purged");
}
# the states held once the rows are gone: those of running workers only
my $n = $node->safe_psql('postgres', $ours);
$max_ours = $n if $n > $max_ours;
cmp_ok($max_ours, '<=', 8, "ttl_index never held more than 10 - 2 states ($max_ours)");
cmp_ok($max_ours, '>=', 1, 'its changes did carry its origin');
like(slurp_file($node->logfile),
	qr/ttl_index may run 12 processes, but only 8 of the server's 10 replication states may carry its replication origin/,
	'the log says at start that the settings do not fit');

# workers busy again while a subscription in the same cluster starts: its
# apply and table-sync workers find free states
fill();
$node->safe_psql('postgres', 'CREATE DATABASE pub');
$node->safe_psql('postgres', 'CREATE DATABASE sub');
$node->safe_psql('pub', q{
CREATE TABLE s (id int PRIMARY KEY);
INSERT INTO s SELECT generate_series(1, 100);
CREATE PUBLICATION p FOR TABLE s;
SELECT pg_create_logical_replication_slot('subslot', 'pgoutput');
});
(my $conn = $node->connstr('pub')) =~ s/'/''/g;
$node->safe_psql('sub', qq{
CREATE TABLE s (id int PRIMARY KEY);
CREATE SUBSCRIPTION sub CONNECTION '$conn' PUBLICATION p WITH (create_slot = false, slot_name = 'subslot');
});
TtlIndex::wait_is($node, 'sub', 'SELECT count(*) FROM s', '100',
	'the subscription synced all 100 rows while ttl_index workers ran');
$node->safe_psql('pub', 'INSERT INTO s VALUES (101)');
TtlIndex::wait_is($node, 'sub', 'SELECT count(*) FROM s', '101', 'and applies later changes');
unlike(slurp_file($node->logfile), qr/could not find free replication state/,
	'no replication worker went without a state');
# the slot is dropped apart: DROP SUBSCRIPTION would drop it through a
# walsender of this same cluster, whose start can wait for the lock on
# pg_subscription that DROP SUBSCRIPTION holds (a backend rebuilding its
# catalog caches reads it), and neither would ever go on (seen once on 16)
$node->safe_psql('sub', q{
ALTER SUBSCRIPTION sub DISABLE;
ALTER SUBSCRIPTION sub SET (slot_name = NONE);
DROP SUBSCRIPTION sub;
});
TtlIndex::wait_until($node, 'pub',
	q{SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name = 'subslot' AND NOT active},
	'the subscription\'s slot is free');
$node->safe_psql('pub', q{SELECT pg_drop_replication_slot('subslot')});

# a plain session can set an origin up too (a state is free)
$node->safe_psql('postgres', q{
SELECT pg_replication_origin_create('plain');
SELECT pg_replication_origin_session_setup('plain');
SELECT pg_replication_origin_session_reset();
SELECT pg_replication_origin_drop('plain');
});
pass('a plain session found a free state');

# uninstall: DROP EXTENSION in ten databases, DROP DATABASE the others
$node->safe_psql($_, 'DROP EXTENSION ttl_index') for @dbs[0 .. 9];
$node->safe_psql('postgres', "DROP DATABASE $_") for @dbs[10 .. 14];
TtlIndex::wait_is($node, 'postgres',
	q{SELECT count(*) FROM pg_replication_origin WHERE roname LIKE 'ttl_index%'}, '0',
	'no ttl_index origin is left after DROP EXTENSION and DROP DATABASE');
is($node->safe_psql('postgres', $ours), '0', 'nor any state');
$node->restart;
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_replication_origin WHERE roname LIKE 'ttl_index%'}), '0',
	'none after a restart');
is($node->safe_psql('postgres', $ours), '0', 'nor any state after a restart');

done_testing();
