# Giving way to the application (ttl_index.busy_share): while other sessions
# commit writes, a worker takes batches of at most 500 rows and pauses
# after each one; once they stop, it drains at full speed again.  The XIDs
# the workers take themselves (top-level, and subtransactions of their
# triggers), in this database or another, are not taken for the
# application's.  busy_share = 100 turns giving way off.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);
use FindBin;
use lib $FindBin::RealBin;
use TtlIndex;

my $rows = 1000000;

my $node = TtlIndex::node('yield', 'ttl_index.enabled = off');

foreach my $db ('one', 'two')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (id bigserial, ts timestamptz NOT NULL) WITH (autovacuum_enabled = off);
CREATE TABLE app (id bigserial PRIMARY KEY, v text);

-- what this database's worker does, sampled every 5 ms for secs seconds,
-- and how many XIDs were taken meanwhile (by anyone); writes nothing, so
-- it takes no XID itself
CREATE FUNCTION watch(secs float8, OUT samples int, OUT yielding int,
					  OUT small_batches int, OUT large_batches int, OUT xids bigint)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	x0 bigint := txid_snapshot_xmax(txid_current_snapshot());
	r record;
BEGIN
	samples := 0; yielding := 0; small_batches := 0; large_batches := 0;
	WHILE clock_timestamp() < t0 + secs * interval '1 s' LOOP
		SELECT phase, batch_row_limit INTO r FROM ttl_index_progress
		 WHERE datname = current_database();
		samples := samples + 1;
		IF r.phase = 'yielding' THEN
			yielding := yielding + 1;
		ELSIF r.phase = 'deleting' AND r.batch_row_limit <= 500 THEN
			small_batches := small_batches + 1;
		ELSIF r.phase = 'deleting' AND r.batch_row_limit > 500 THEN
			large_batches := large_batches + 1;
		END IF;
		-- 'deleting' with no batch in flight (batch_row_limit NULL: one
		-- just ended, its pause not begun yet) is neither
		PERFORM pg_sleep(0.005);
	END LOOP;
	xids := txid_snapshot_xmax(txid_current_snapshot()) - x0;
END $$;
});
}

# database one: a plain policy, purged on the direct path; database two:
# a DELETE trigger whose exception block writes, so every row deleted
# (on the executor path) takes a subtransaction XID of its own
$node->safe_psql('one', q{SELECT ttl_create_index('t', 'ts', 60, rate_limit => 100000)});
$node->safe_psql('two', q{
CREATE TABLE seen (n int);
CREATE FUNCTION t_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		INSERT INTO public.seen VALUES (1);
	EXCEPTION WHEN unique_violation THEN NULL;
	END;
	RETURN OLD;
END $$;
CREATE TRIGGER t_deleted AFTER DELETE ON t FOR EACH ROW EXECUTE FUNCTION t_deleted();
SELECT ttl_create_index('t', 'ts', 60);
});

# the backlog of a database, topped up to $rows expired rows
sub load
{
	my ($db, $n) = @_;
	$node->safe_psql($db, qq{
INSERT INTO t (ts) SELECT now() - interval '1 day' FROM generate_series(1, $n - (SELECT count(*) FROM t));
VACUUM ANALYZE t;
});
}

sub left { return $node->safe_psql($_[0], 'SELECT count(*) FROM t'); }

sub set_conf
{
	$node->safe_psql('postgres', join('', map { "ALTER SYSTEM SET $_;" } @_)
		  . 'SELECT pg_reload_conf()');
}

sub watch
{
	my ($db, $secs) = @_;
	my @r = split /\|/, $node->safe_psql($db, "SELECT * FROM watch($secs)");
	return { samples => $r[0], yielding => $r[1], small => $r[2], large => $r[3],
		xids_per_s => $r[4] / $secs };
}

# an application writing in database one: about 1,000 inserts a second,
# until stopped
my $script = $node->basedir . '/app.sql';
PostgreSQL::Test::Utils::append_to_file($script,
	"INSERT INTO app (v) VALUES (repeat('x', 40));\n");
my ($app_out, $app_err);
sub start_app
{
	($app_out, $app_err) = ('', '');
	return IPC::Run::start(
		[ 'pgbench', '-n', '-h', $node->host, '-p', $node->port, '-c', '2', '-j', '1',
		  '-R', '1000', '-T', '120', '-f', $script, 'one' ],
		'>', \$app_out, '2>', \$app_err);
}
sub stop_app
{
	my $app = shift;
	# TERM, not INT: a shell running this in the background (without job
	# control) starts its children with SIGINT ignored
	$app->signal('TERM');
	$app->finish;
}
sub app_rows { return $node->safe_psql('one', 'SELECT count(*) FROM app'); }

# 1. Two workers draining at once, nobody else writing, each taking
# hundreds of XIDs a second (small batches; in two, a subtransaction per
# row): neither takes the other's XIDs, nor its own, for an application's.
load('one', $rows);
load('two', 300000);
set_conf('ttl_index.batch_size = 100', 'ttl_index.enabled = on');
ok($node->poll_query_until('two', 'SELECT rows_deleted > 0 FROM ttl_index_stats'),
	'both workers are deleting');
sleep(0.5);
my %w = (one => watch('one', 1.5));
$w{two} = watch('two', 1);
foreach my $db ('one', 'two')
{
	cmp_ok($w{$db}{xids_per_s}, '>', 200,
		sprintf('%s: the workers took many XIDs meanwhile (%.0f a second)', $db, $w{$db}{xids_per_s}));
	cmp_ok($w{$db}{samples}, '>', 50, "$db: sampled");
	is($w{$db}{yielding}, 0, "$db: no pause while only workers write");
}
cmp_ok($node->safe_psql('two', 'SELECT count(*) FROM seen'), '>', 1000,
	'two: the trigger wrote in its subtransactions');
set_conf('ttl_index.enabled = off', 'ttl_index.batch_size = 10000');
sleep(1);
$node->safe_psql('two', 'TRUNCATE t');

# 2. The application writes: the worker of one gives way; when it stops,
# the worker goes back to large batches at once.  (The policy's own rate
# limit, 100,000 rows/s, far above the giving-way pace, keeps the backlog
# long enough to watch.)
load('one', $rows);
my $app = start_app();
my $rows0 = app_rows();
set_conf('ttl_index.enabled = on');
ok($node->poll_query_until('one', 'SELECT rows_deleted > 0 FROM ttl_index_stats'),
	'the worker started while the application writes');
sleep(0.5);
my $seen = watch('one', 2);
cmp_ok(app_rows() - $rows0, '>', 500, 'the application was writing');
cmp_ok($seen->{yielding}, '>', $seen->{samples} / 2,
	"the worker pauses between batches most of the time ($seen->{yielding} of $seen->{samples} samples)");
cmp_ok($seen->{small}, '>', 0, 'it deletes in small batches');
is($seen->{large}, 0, 'and in no batch larger than 500 rows');
stop_app($app);
sleep(1.5);
$seen = watch('one', 1);
cmp_ok($seen->{large}, '>', 0, 'once the application stops, batches are large again');
is($seen->{yielding}, 0, 'and there is no pause');

# 3. busy_share = 100: no giving way, even while the application writes
set_conf('ttl_index.busy_share = 100');
load('one', $rows);
$app = start_app();
$rows0 = app_rows();
sleep(1);
$seen = watch('one', 1.5);
cmp_ok(app_rows() - $rows0, '>', 500, 'the application was writing');
cmp_ok($seen->{large}, '>', 0, 'busy_share = 100: large batches while the application writes');
is($seen->{yielding} + $seen->{small}, 0, 'and no pause, no small batch');
stop_app($app);
set_conf('ttl_index.enabled = off');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET ttl_index.busy_share; SELECT pg_reload_conf()');

is($node->safe_psql('one', 'SELECT errors FROM ttl_index_stats'), '0', 'one: no batch failed');
is($node->safe_psql('two', 'SELECT errors FROM ttl_index_stats'), '0', 'two: no batch failed');

$node->stop;
done_testing();
