# Nothing hangs, nothing crashes, nothing leaks:
#
#  1. With log_min_messages = debug1 and three databases on one worker, the
#     workers take turns and none crashes (a DEBUG1 line looked a name up
#     outside a transaction).
#  2. Eleven databases with policies, every setting at its default: the
#     workers' replication origins are the processes' (at most
#     ttl_index.max_workers), so a subscription beside them still gets a
#     replication state and replicates; pg_replication_origin_status
#     answers, and a fast shutdown finishes.
#  3. A policy created with replication_origin => true whose origin cannot
#     be set up (no free replication state) keeps its rows, and says why;
#     a policy that does not ask for marking is purged meanwhile; once a
#     state is free, the first one is purged too.
#  4. 50 COMMIT PREPARED of transactions that wrote a table without a
#     policy wake none of 200 idle policies; one that wrote a policy's
#     table wakes that one.
#  5. A pass over 500 rows its filter fails on, one by one, does not grow
#     the worker's memory by what each failed batch had collected.
#  6. A cancel of the worker's batch (pg_cancel_backend) is not counted as
#     the policy's error.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

# --- 1. debug1 and turns ---------------------------------------------------
my $node = TtlIndex::node('turns', 'log_min_messages = debug1', 'ttl_index.max_workers = 1',
	'ttl_index.database_turn = 1', 'ttl_index.free_worker_slots = 0');
for my $db (qw(d1 d2 d3))
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{CREATE EXTENSION ttl_index;
CREATE TABLE t (ts timestamptz NOT NULL);
SELECT ttl_create_index('t', 'ts', 60);
INSERT INTO t SELECT now() - interval '1 hour' FROM generate_series(1, 100)});
}
TtlIndex::wait_until($node, 'd1',
	q{SELECT count(*) = 3 FROM ttl_index_databases WHERE datname IN ('d1', 'd2', 'd3') AND turns >= 3},
	'three databases take turns on one worker, three turns each', 90);
for my $db (qw(d1 d2 d3))
{
	is($node->safe_psql($db, 'SELECT count(*) FROM t'), '0', "database $db is purged");
}
$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|server process .* was terminated|TRAP:/,
	'no process crashed with log_min_messages = debug1');
like($log, qr/ends its turn/, 'the workers said, at DEBUG1, that they end their turns');

# --- 2. eleven databases beside a subscription --------------------------
$node = TtlIndex::node('origins', 'wal_level = logical', 'max_wal_senders = 4',
	'ttl_index.database_turn = 1');
for my $i (1 .. 11)
{
	$node->safe_psql('postgres', "CREATE DATABASE o$i");
	$node->safe_psql("o$i", q{CREATE EXTENSION ttl_index;
CREATE TABLE t (ts timestamptz NOT NULL);
SELECT ttl_create_index('t', 'ts', 60, replication_origin => true);
INSERT INTO t SELECT now() - interval '1 hour' FROM generate_series(1, 100)});
}
for my $i (1 .. 11)
{
	TtlIndex::wait_is($node, "o$i", 'SELECT count(*) FROM t', '0', "database o$i is purged", 120);
}
cmp_ok($node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_replication_origin WHERE roname LIKE 'ttl\_index\_%'}),
	'<=', 3, 'the workers of eleven databases used at most ttl_index.max_workers origins');
# a subscription of this server's own database: it needs a replication
# state for its origin, which the workers left
$node->safe_psql('postgres', q{
CREATE DATABASE pub;
CREATE DATABASE sub;
});
$node->safe_psql('pub', q{
CREATE TABLE r (id int PRIMARY KEY);
CREATE PUBLICATION p FOR TABLE r;
SELECT pg_create_logical_replication_slot('s', 'pgoutput');
});
$node->safe_psql('sub', 'CREATE TABLE r (id int PRIMARY KEY)');
my $connstr = $node->connstr . ' dbname=pub';
$node->safe_psql('sub', qq{CREATE SUBSCRIPTION s CONNECTION '$connstr' PUBLICATION p
	WITH (create_slot = false, slot_name = 's', copy_data = false)});
$node->safe_psql('pub', 'INSERT INTO r VALUES (1), (2), (3)');
TtlIndex::wait_is($node, 'sub', 'SELECT count(*) FROM r', '3',
	'a subscription beside them replicates', 60);
is($node->safe_psql('postgres', 'SELECT count(*) >= 1 FROM pg_replication_origin_status'), 't',
	'pg_replication_origin_status answers');
$node->safe_psql('sub', 'ALTER SUBSCRIPTION s DISABLE');
$node->safe_psql('sub', "ALTER SUBSCRIPTION s SET (slot_name = NONE)");
$node->safe_psql('sub', 'DROP SUBSCRIPTION s');
$node->safe_psql('pub', "SELECT pg_drop_replication_slot('s')");
$node->stop('fast');
pass('a fast shutdown finishes');

# --- 3. an origin that cannot be set up ----------------------------------
my ($major) = `pg_config --version` =~ /(\d+)/;
my $cap = $major >= 18 ?
  'max_active_replication_origins = 1' : 'max_replication_slots = 1';
# (free_replication_states = 0: the test is about the server's only state,
# which ttl_index may take when nobody else needs one)
$node = TtlIndex::node('noorigin', $cap, 'ttl_index.error_delay = 1',
	'ttl_index.free_replication_states = 0');
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
CREATE TABLE marked (ts timestamptz NOT NULL);
CREATE TABLE unmarked (ts timestamptz NOT NULL);
SELECT pg_replication_origin_create('other');
});
# another session holds the server's only replication state
my $other = $node->background_psql('postgres');
$other->query_safe(q{SELECT pg_replication_origin_session_setup('other')});
$node->safe_psql('postgres', q{
SELECT ttl_create_index('marked', 'ts', 60, replication_origin => true);
SELECT ttl_create_index('unmarked', 'ts', 60, replication_origin => false);
INSERT INTO marked SELECT now() - interval '1 hour' FROM generate_series(1, 100);
INSERT INTO unmarked SELECT now() - interval '1 hour' FROM generate_series(1, 100);
});
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM unmarked', '0',
	'the policy that does not ask for marking is purged');
TtlIndex::wait_until($node, 'postgres',
	q{SELECT last_error LIKE 'waiting for a replication origin:%' AND last_error_sqlstate = '53400'
	  FROM ttl_index_stats WHERE table_name = 'marked'::regclass},
	'the one that does says why it waits');
TtlIndex::wait_until($node, 'postgres',
	q{SELECT phase = 'waiting for a replication origin' FROM ttl_index_progress},
	'its worker shows it in ttl_index_progress');
is($node->safe_psql('postgres', 'SELECT count(*) FROM marked'), '100',
	'and deletes nothing unmarked');
is($node->safe_psql('postgres', q{SELECT errors FROM ttl_index_stats WHERE table_name = 'marked'::regclass}),
	'1', 'counted once, not at every try');
is($node->safe_psql('postgres', 'SELECT count(*) >= 1 FROM pg_replication_origin_status'), 't',
	'pg_replication_origin_status answers meanwhile (no lock left held)');
$other->query_safe(q{SELECT pg_replication_origin_session_reset(); SELECT pg_replication_origin_drop('other')});
$other->quit;
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM marked', '0',
	'once a replication state is free, it is purged, marked', 60);
my $slog = slurp_file($node->logfile);
my @warnings = ($slog =~ /WARNING:  ttl_index could not set up replication origin/g);
is(scalar(@warnings), 1, 'with one WARNING');
$node->stop('fast');

# --- 4. COMMIT PREPARED wakes the tables it wrote ------------------------
$node = TtlIndex::node('prepared', 'max_prepared_transactions = 60');
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
CREATE TABLE other (id int);
CREATE TABLE marker (ts timestamptz NOT NULL);
SELECT ttl_create_index('marker', 'ts', 60);
DO $$ BEGIN
	FOR i IN 1 .. 200 LOOP
		EXECUTE format('CREATE TABLE idle_%s (ts timestamptz NOT NULL)', i);
		PERFORM ttl_create_index(format('idle_%s', i)::regclass, 'ts', 3600);
	END LOOP;
END $$;
});
# every policy has had its first pass, and is idle
TtlIndex::wait_until($node, 'postgres', 'SELECT bool_and(passes >= 1) FROM ttl_index_stats',
	'the 201 policies had their first pass', 60);
my $before = $node->safe_psql('postgres', 'SELECT sum(passes) FROM ttl_index_stats');
for my $i (1 .. 50)
{
	$node->safe_psql('postgres', qq{BEGIN; INSERT INTO other VALUES ($i); PREPARE TRANSACTION 'p$i'});
	$node->safe_psql('postgres', qq{COMMIT PREPARED 'p$i'});
}
# the last one writes an expired row to a policy's table: its deletion
# says the worker has been through its schedule since
$node->safe_psql('postgres', q{BEGIN; INSERT INTO marker VALUES (now() - interval '1 hour'); PREPARE TRANSACTION 'last'});
$node->safe_psql('postgres', q{COMMIT PREPARED 'last'});
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM marker', '0',
	'a COMMIT PREPARED that wrote a policy\'s table wakes that policy', 30);
my $passes = $node->safe_psql('postgres', 'SELECT sum(passes) FROM ttl_index_stats') - $before;
cmp_ok($passes, '<', 60, "50 COMMIT PREPARED of another table: $passes passes of 201 policies, not one each");
$node->stop('fast');

# --- 5. a pass over 500 rows that fail one by one -------------------------
$node = TtlIndex::node('leak', 'ttl_index.error_delay = 3600');
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
CREATE TABLE f (ts timestamptz NOT NULL, d int NOT NULL);
CREATE FUNCTION chk(d int) RETURNS boolean LANGUAGE plpgsql STABLE AS $$ BEGIN RETURN 1 / d > 0; END $$;
INSERT INTO f SELECT now() - interval '1 hour', CASE WHEN g <= 25 THEN 1 ELSE 0 END
  FROM generate_series(1, 525) g;
});
TtlIndex::wait_worker($node, 'postgres');
my $pid = TtlIndex::worker_pid($node, 'postgres');
sub rss_anon_kb
{
	my ($p) = @_;
	my $status = slurp_file("/proc/$p/status");
	return $status =~ /^RssAnon:\s+(\d+) kB/m ? $1 : 0;
}
my $rss_before = rss_anon_kb($pid);
$node->safe_psql('postgres', q{SELECT ttl_create_index('f', 'ts', 60, filter => 'chk(d)')});
TtlIndex::wait_until($node, 'postgres',
	q{SELECT rows_held = 500 FROM ttl_index_stats WHERE table_name = 'f'::regclass},
	'the 500 rows its filter fails on are held, one failed batch each', 120);
is($node->safe_psql('postgres', 'SELECT count(*) FROM f'), '500', 'and the 25 others deleted');
is(TtlIndex::worker_pid($node, 'postgres'), $pid, 'by the same worker');
my $grown = rss_anon_kb($pid) - $rss_before;
cmp_ok($grown, '<', 20000, "its memory grew by $grown kB, not by what 500 failed batches collected");

# --- 6. a cancel is no failure of the policy's ----------------------------
$node->safe_psql('postgres', q{
CREATE TABLE c (ts timestamptz NOT NULL);
CREATE TABLE c_gate (go boolean);
INSERT INTO c_gate VALUES (false);
CREATE FUNCTION c_wait() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	-- the first batch waits here until the test has canceled it
	WHILE NOT (SELECT go FROM c_gate) LOOP
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN OLD;
END $$;
CREATE TRIGGER c_wait BEFORE DELETE ON c FOR EACH ROW EXECUTE FUNCTION c_wait();
INSERT INTO c SELECT now() - interval '1 hour' FROM generate_series(1, 10);
SELECT ttl_create_index('c', 'ts', 60);
});
TtlIndex::wait_until($node, 'postgres',
	q{SELECT batch_started IS NOT NULL FROM ttl_index_progress WHERE table_name = 'public.c'},
	'a batch of c is in flight');
$pid = TtlIndex::worker_pid($node, 'postgres');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
TtlIndex::wait_until($node, 'postgres',
	q{SELECT batch_started IS NULL OR policy_id IS DISTINCT FROM (SELECT id FROM ttl_index_policy WHERE relid = 'c'::regclass)
	  FROM ttl_index_progress},
	'the canceled batch ended');
$node->safe_psql('postgres', 'UPDATE c_gate SET go = true');
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM c', '0', 'the rows go in a later pass', 60);
is($node->safe_psql('postgres', q{SELECT errors FROM ttl_index_stats WHERE table_name = 'c'::regclass}),
	'0', 'and the cancel was not counted as an error');
$node->stop('fast');

done_testing();
