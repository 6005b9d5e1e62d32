# Marked deletes: the worker's changes carry a replication origin.
#
# 1. Logical decoding (test_decoding): with only-local, the worker's
#    deletes are skipped and the application's are not; a policy with
#    replication_origin => false, or ttl_index.replication_origin = off,
#    leaves them unmarked; a policy with replication_origin => true marks
#    them whatever the setting says.
# 2. PostgreSQL 16 and later: a subscription made WITH (origin = none) does
#    not receive the worker's deletes and keeps every expired row; one with
#    origin = any, the default, loses them as the publisher did.  Both get
#    the application's own delete.
# 3. No origin can be set up (no replication state free): a policy whose
#    deletes carry one waits, and keeps its rows rather than delete them
#    unmarked; one with replication_origin => false is purged; one WARNING
#    says so.
# 4. Pacing: a standby whose replay is paused (pg_wal_replay_pause()) falls
#    behind as the worker drains; past ttl_index.max_standby_lag the worker
#    holds its batches ('waiting for standby' in ttl_index_progress,
#    counted in ttl_index_databases), and goes on when replay resumes.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use TtlIndex;

# --- 1. decoding --------------------------------------------------------

my $node = TtlIndex::node('decoding', 'wal_level = logical');
my $version = TtlIndex::version($node);
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
SELECT 'slot' FROM pg_create_logical_replication_slot('s', 'test_decoding');
});

# decoded(table, only_local): the DELETEs of the table the slot holds, ids
# in order
sub decoded
{
	my ($table, $only_local) = @_;
	my $opts = $only_local ? q{, 'only-local', '1'} : '';
	return $node->safe_psql('postgres', qq{
SELECT coalesce(string_agg(substring(data FROM 'id\\[integer\\]:([0-9]+)'), ',' ORDER BY
                           substring(data FROM 'id\\[integer\\]:([0-9]+)')::int), '')
  FROM pg_logical_slot_peek_changes('s', NULL, NULL$opts)
 WHERE data LIKE 'table public.$table: DELETE:%'});
}

# decoded_is(table, only_local, expected, name): decoding reads the WAL up
# to its flush, and the worker commits its batches without waiting for it
# (ttl_index.synchronous_commit = off): the WAL writer flushes them within
# moments, so wait for them
sub decoded_is
{
	my ($table, $only_local, $expected, $name) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	my $got = decoded($table, $only_local);
	while ($got ne $expected && time() < $deadline)
	{
		sleep(0.1);
		$got = decoded($table, $only_local);
	}
	return is($got, $expected, $name);
}

# each case: a table with five expired rows, the application deletes the
# first, the worker the others
sub case
{
	my ($table, $options) = @_;
	$node->safe_psql('postgres', qq{
CREATE TABLE $table (id int PRIMARY KEY, ts timestamptz NOT NULL);
INSERT INTO $table SELECT g, now() - interval '2 hours' FROM generate_series(1, 5) g;
DELETE FROM $table WHERE id = 1;
SELECT ttl_create_index('$table', 'ts', 3600$options);
});
	TtlIndex::wait_is($node, 'postgres', "SELECT count(*) FROM $table", '0',
		"the worker purges $table");
}

case('marked', '');
decoded_is('marked', 0, '1,2,3,4,5', 'decoding sees every delete');
decoded_is('marked', 1, '1', "with only-local, the worker's deletes are skipped");
is($node->safe_psql('postgres',
	"SELECT string_agg(roname, ',') FROM pg_replication_origin WHERE roname LIKE 'ttl\\_index\\_%'"),
	'ttl_index_process_0',
	'under the origin of the worker\'s process slot, ttl_index_process_0, created when first needed');
# origins no process may use any more are dropped (a worker does it as it
# starts and after a reload): those of process slots past
# ttl_index.max_workers, and the per-database ones of earlier versions
$node->safe_psql('postgres', q{
SELECT pg_replication_origin_create('ttl_index_4242');
SELECT pg_replication_origin_create('ttl_index_4242_helper0');
SELECT pg_replication_origin_create('ttl_index_process_9');
SELECT pg_replication_origin_create('ttl_index_keep_me');
SELECT pg_reload_conf();
});
TtlIndex::wait_is($node, 'postgres',
	"SELECT string_agg(roname, ',' ORDER BY roname) FROM pg_replication_origin WHERE roname LIKE 'ttl\\_index\\_%'",
	'ttl_index_keep_me,ttl_index_process_0',
	'unused origins of ours are dropped, other names left alone');

case('unmarked', ', replication_origin => false');
decoded_is('unmarked', 1, '1,2,3,4,5',
	'a policy with replication_origin => false leaves its deletes unmarked');
is($node->safe_psql('postgres',
	"SELECT replication_origin FROM ttl_index_stats WHERE table_name = 'unmarked'::regclass"),
	'f', 'ttl_index_stats shows the option');

$node->append_conf('postgresql.conf', "ttl_index.replication_origin = off\n");
$node->reload;
# the idle worker reads its settings as soon as it is told
TtlIndex::wait_setting($node, 'ttl_index.replication_origin', 'off');
case('setting_off', '');
decoded_is('setting_off', 1, '1,2,3,4,5',
	'ttl_index.replication_origin = off leaves them unmarked');
case('forced', ', replication_origin => true');
decoded_is('forced', 0, '1,2,3,4,5', 'decoding sees every delete of the forced case');
decoded_is('forced', 1, '1',
	'a policy with replication_origin => true marks them whatever the setting says');

# ttl_runner() never marks, whatever the policy says: its deletes are the
# caller's transaction's (the worker is off meanwhile)
$node->append_conf('postgresql.conf', "ttl_index.enabled = off\n");
$node->reload;
TtlIndex::wait_until($node, 'postgres', q{SELECT phase = 'disabled' FROM ttl_index_progress},
	'the worker is disabled');
$node->safe_psql('postgres', q{
CREATE TABLE by_runner (id int PRIMARY KEY, ts timestamptz NOT NULL);
SELECT ttl_create_index('by_runner', 'ts', 3600, replication_origin => true);
INSERT INTO by_runner SELECT g, now() - interval '2 hours' FROM generate_series(1, 3) g;
SELECT ttl_runner();
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM by_runner'), '0', 'ttl_runner() purges');
decoded_is('by_runner', 1, '1,2,3', "ttl_runner()'s deletes are not marked");
$node->safe_psql('postgres', "SELECT pg_drop_replication_slot('s')");
$node->stop;

# --- 2. subscriptions ---------------------------------------------------

SKIP:
{
	skip 'origin = none subscriptions need PostgreSQL 16', 5 if $version < 160000;
	my $pub = TtlIndex::node('publisher', 'wal_level = logical', 'max_wal_senders = 10');
	my $sub = PostgreSQL::Test::Cluster->new('subscriber');
	$sub->init;
	$sub->start;

	my $table = 'CREATE TABLE events (id int PRIMARY KEY, ts timestamptz NOT NULL)';
	$pub->safe_psql('postgres', qq{
CREATE EXTENSION ttl_index;
$table;
SELECT ttl_create_index('events', 'ts', 3600);
SELECT ttl_pause('events');
CREATE PUBLICATION p FOR TABLE events;
});
	my $connstr = $pub->connstr . ' dbname=postgres';
	for my $db (qw(keep mirror))
	{
		my $origin = $db eq 'keep' ? 'none' : 'any';
		$sub->safe_psql('postgres', "CREATE DATABASE $db");
		$sub->safe_psql($db, $table);
		$sub->safe_psql($db,
			"CREATE SUBSCRIPTION s_$db CONNECTION '$connstr' PUBLICATION p "
			. "WITH (origin = $origin, slot_name = s_$db)");
		$sub->wait_for_subscription_sync($pub, "s_$db", $db);
	}
	$pub->safe_psql('postgres', q{
INSERT INTO events SELECT g, now() - interval '2 hours' FROM generate_series(1, 100) g;
DELETE FROM events WHERE id = 1;
});
	$pub->wait_for_catchup('s_keep');
	$pub->wait_for_catchup('s_mirror');
	is($sub->safe_psql('keep', 'SELECT count(*) FROM events'), '99',
		'origin = none: the rows and the application delete arrived');

	$pub->safe_psql('postgres', "SELECT ttl_resume('events')");
	TtlIndex::wait_is($pub, 'postgres', 'SELECT count(*) FROM events', '0',
		'the publisher purges its 99 expired rows', 60);
	$pub->safe_psql('postgres', 'INSERT INTO events VALUES (1000, now())');
	$pub->wait_for_catchup('s_keep');
	$pub->wait_for_catchup('s_mirror');
	is($sub->safe_psql('keep', 'SELECT count(*) FROM events'), '100',
		'origin = none: the subscriber keeps every expired row, and gets the new one');
	is($sub->safe_psql('mirror', 'SELECT count(*) FROM events'), '1',
		'origin = any: the subscriber loses them as the publisher did');
	is($sub->safe_psql('keep', 'SELECT count(*) FROM events WHERE id = 1'), '0',
		"origin = none still receives the application's delete");

	$sub->stop;
	$pub->stop;
}

# --- 3. no origin free --------------------------------------------------

my $tight = TtlIndex::node('no_origin', 'max_replication_slots = 0',
	$version >= 180000 ? 'max_active_replication_origins = 0' : '');
$tight->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (id int PRIMARY KEY, ts timestamptz NOT NULL);
CREATE TABLE u (id int PRIMARY KEY, ts timestamptz NOT NULL);
INSERT INTO t SELECT g, now() - interval '2 hours' FROM generate_series(1, 10) g;
INSERT INTO u SELECT g, now() - interval '2 hours' FROM generate_series(1, 10) g;
SELECT ttl_create_index('t', 'ts', 3600);
SELECT ttl_create_index('u', 'ts', 3600, replication_origin => false);
});
TtlIndex::wait_is($tight, 'postgres', 'SELECT count(*) FROM u', '0',
	'without a free origin, a policy that does not ask for marking is purged');
$tight->safe_psql('postgres',
	"INSERT INTO u SELECT g, now() - interval '2 hours' FROM generate_series(11, 20) g");
TtlIndex::wait_is($tight, 'postgres', 'SELECT count(*) FROM u', '0', 'batch after batch');
TtlIndex::wait_until($tight, 'postgres',
	q{SELECT phase = 'waiting for a replication origin' FROM ttl_index_progress},
	'a policy whose deletes carry the origin waits for one');
is($tight->safe_psql('postgres', 'SELECT count(*) FROM t'), '10', 'and keeps its rows meanwhile');
TtlIndex::wait_until($tight, 'postgres',
	q{SELECT last_error LIKE 'waiting for a replication origin:%' FROM ttl_index_stats
	   WHERE table_name = 't'::regclass},
	'and says why in ttl_index_stats');
my $log = slurp_file($tight->logfile);
my @warnings = $log =~ /WARNING:  ttl_index could not set up replication origin/g;
is(scalar(@warnings), 1, 'and says so in one WARNING');
like($log, qr/HINT:  Raise max_(replication_slots|active_replication_origins)/,
	'which names the setting to raise');
$tight->stop;

# --- 4. a standby that does not replay ------------------------------------

my $primary = PostgreSQL::Test::Cluster->new('pace_primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ttl_index'
ttl_index.launcher_naptime = 1
ttl_index.max_standby_lag = 2MB
ttl_index.log_min_duration = -1
});
$primary->start;
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('pace_standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
# the standby reports its replay position every second
$standby->append_conf('postgresql.conf', "wal_receiver_status_interval = 1\n");
$standby->start;

$primary->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
CREATE TABLE backlog (id int, ts timestamptz NOT NULL);
SELECT ttl_create_index('backlog', 'ts', 60, batch_size => 2000);
SELECT ttl_pause('backlog');
INSERT INTO backlog SELECT g, now() - interval '1 hour' FROM generate_series(1, 200000) g;
});
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');

my $t0 = time();
$primary->safe_psql('postgres', "SELECT ttl_resume('backlog')");
# the worker holds; a helper that shared the drain leaves when a replica
# falls behind, after its batch in hand: the count holds still once it has
TtlIndex::wait_until($primary, 'postgres', q{
SELECT (SELECT phase = 'waiting for standby' FROM ttl_index_progress)
   AND NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'ttl_index helper')},
	'with replay paused, the worker stops at the limit and waits for the standby', 60);
my $held_after = time() - $t0;
my $left = $primary->safe_psql('postgres', 'SELECT count(*) FROM backlog');
ok($left > 150000 && $left < 200000,
	"it deleted a little past 2MB of WAL's worth and holds ($left rows left)");
# a change of the catalog (another policy) ends its wait: it reads its
# policies again ('reading policies') and is about to take a batch of the
# backlog, and holds again, with a new phase_since
my $mark = $primary->safe_psql('postgres', 'SELECT clock_timestamp()');
$primary->safe_psql('postgres', q{
CREATE TABLE other (ts timestamptz NOT NULL);
SELECT ttl_create_index('other', 'ts', 60);
});
TtlIndex::wait_until($primary, 'postgres',
	qq{SELECT phase = 'waiting for standby' AND phase_since > '$mark' FROM ttl_index_progress},
	'the worker went through its schedule again, and holds again');
my $held_again = time();
is($primary->safe_psql('postgres', 'SELECT count(*) FROM backlog'), $left,
	'nothing more is deleted while replay stays paused');
my $gap = $primary->safe_psql('postgres', q{
SELECT pg_current_wal_lsn() - replay_lsn > 2 * 1024 * 1024 FROM pg_stat_replication});
is($gap, 't', 'pg_stat_replication shows the standby more than 2MB behind in replay');

my $t1 = time();
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
TtlIndex::wait_is($primary, 'postgres', 'SELECT count(*) FROM backlog', '0',
	'once replay resumes, the worker goes on and drains the table', 120);
my $drained_after = time() - $t1;
# two holds at least (the catalog change ended the first); the second
# lasted at least from when it was seen to when replay resumed (less a
# millisecond: the view counts whole ones)
my $held_secs = $t1 - $held_again - 0.001;
ok($primary->safe_psql('postgres',
	"SELECT replica_holds >= 2 AND replica_hold_time >= $held_secs * interval '1 s' FROM ttl_index_databases WHERE datname = 'postgres'") eq 't',
	sprintf('ttl_index_databases counts the holds and their time (at least %.2f s)', $held_secs));
like(slurp_file($primary->logfile), qr/ttl_index worker holds its batches: waiting for standby/,
	'the log says when the worker holds');
diag(sprintf('standby paused: held %.1f s after resume_policy; replay resumed: drained %.1f s later',
	$held_after, $drained_after));
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is($standby->safe_psql('postgres', 'SELECT count(*) FROM backlog'), '0',
	'the standby has replayed the whole drain');
$standby->stop;
$primary->stop;

done_testing();
