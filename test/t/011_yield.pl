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

-- what this database's worker does, sampled every 5 ms for secs seconds
-- and at least 50 samples (a busy machine takes longer over them), how
-- many XIDs were taken meanwhile (by anyone), and how long it watched;
-- writes nothing, so it takes no XID itself
CREATE FUNCTION watch(secs float8, OUT samples int, OUT yielding int,
					  OUT small_batches int, OUT large_batches int, OUT xids bigint,
					  OUT watched float8)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	x0 bigint := txid_snapshot_xmax(txid_current_snapshot());
	r record;
BEGIN
	samples := 0; yielding := 0; small_batches := 0; large_batches := 0;
	WHILE clock_timestamp() < t0 + secs * interval '1 s' OR samples < 50 LOOP
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
	watched := extract(epoch FROM clock_timestamp() - t0);
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
	my $app0 = app_rows();
	my @r = split /\|/, $node->safe_psql($db, "SELECT * FROM watch($secs)");
	return { samples => $r[0], yielding => $r[1], small => $r[2], large => $r[3],
		xids_per_s => $r[4] / $r[5], app_per_s => (app_rows() - $app0) / $r[5] };
}

# disabled(db): a test that the worker of db says it is disabled (once it
# does, it deletes nothing more)
sub disabled
{
	my ($db) = @_;
	TtlIndex::wait_until($node, $db,
		"SELECT phase = 'disabled' FROM ttl_index_progress WHERE datname = '$db'",
		"$db: the worker is disabled");
}

# deleted(db): rows the policy of db has deleted so far
sub deleted { return $node->safe_psql($_[0], 'SELECT rows_deleted FROM ttl_index_stats'); }

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

# The rates below are premises, not measures of speed: what makes a worker
# give way is 50 XIDs a second taken by others (yield.c), so the workers'
# own XIDs, and the application's writes, must come at least twice that
# fast for the test to say anything.  A busy machine leaves them far above
# it (a subtransaction per row in two, a commit per insert in one).

# 1. Two workers draining at once, nobody else writing, each taking
# hundreds of XIDs a second (small batches; in two, a subtransaction per
# row): neither takes the other's XIDs, nor its own, for an application's.
load('one', $rows);
load('two', 300000);
set_conf('ttl_index.batch_size = 100', 'ttl_index.enabled = on');
# after waking up a worker watches for 10 ms, in small batches with short
# pauses, before it decides: twenty batches each are past that
foreach my $db ('one', 'two')
{
	TtlIndex::wait_until($node, $db, 'SELECT batches >= 20 FROM ttl_index_stats',
		"$db: the worker is deleting, past its first look");
}
my %w = (one => watch('one', 1.5));
$w{two} = watch('two', 1);
foreach my $db ('one', 'two')
{
	cmp_ok($w{$db}{xids_per_s}, '>', 100,
		sprintf('%s: the workers took many XIDs meanwhile (%.0f a second)', $db, $w{$db}{xids_per_s}));
	cmp_ok($w{$db}{samples}, '>=', 50, "$db: sampled");
	is($w{$db}{yielding}, 0, "$db: no pause while only workers write");
}
cmp_ok($node->safe_psql('two', 'SELECT count(*) FROM seen'), '>', 1000,
	'two: the trigger wrote in its subtransactions');
set_conf('ttl_index.enabled = off', 'ttl_index.batch_size = 10000');
disabled($_) for ('one', 'two');
$node->safe_psql('two', 'TRUNCATE t');

# 2. The application writes: the worker of one gives way; when it stops,
# the worker goes back to large batches at once.  (The policy's own rate
# limit, 100,000 rows/s, far above the giving-way pace, keeps the backlog
# long enough to watch.)
load('one', $rows);
my $app = start_app();
my $deleted = deleted('one');
set_conf('ttl_index.enabled = on');
TtlIndex::wait_until($node, 'one', "SELECT rows_deleted > $deleted FROM ttl_index_stats",
	'the worker deletes again while the application writes');
my $seen = watch('one', 2);
# a large batch means the worker saw no write for a second: on a machine
# busy enough to stall the application that long, watch again once
if ($seen->{large} > 0)
{
	diag("$seen->{large} of $seen->{samples} samples saw a large batch (the application wrote $seen->{app_per_s} rows a second): watching again");
	$seen = watch('one', 2);
}
cmp_ok($seen->{app_per_s}, '>', 100,
	sprintf('the application was writing (%.0f rows a second)', $seen->{app_per_s}));
cmp_ok($seen->{yielding}, '>', $seen->{samples} / 2,
	"the worker pauses between batches most of the time ($seen->{yielding} of $seen->{samples} samples)");
cmp_ok($seen->{small}, '>', 0, 'it deletes in small batches');
is($seen->{large}, 0, 'and in no batch larger than 500 rows');
stop_app($app);
# it gives way for a second after the last write it saw, and a pause ends
# as soon as nobody writes: large batches come back at once (30 s is a
# loose bound, for a busy machine).  A large batch is over in milliseconds,
# and then the worker waits for the policy's rate limit: watched, not
# polled, to be seen
TtlIndex::wait_until($node, 'one', 'SELECT large_batches > 0 FROM watch(0.5)',
	'once the application stops, batches are large again', 30);
$seen = watch('one', 1);
cmp_ok($seen->{large}, '>', 0, 'they stay large');
is($seen->{yielding}, 0, 'and there is no pause');

# 3. busy_share = 100: no giving way, even while the application writes
set_conf('ttl_index.busy_share = 100');
TtlIndex::wait_setting($node, 'ttl_index.busy_share', '100');
load('one', $rows);
$app = start_app();
my $rows0 = app_rows();
TtlIndex::wait_until($node, 'one', "SELECT count(*) >= $rows0 + 100 FROM app",
	'the application writes');
TtlIndex::wait_until($node, 'one', 'SELECT large_batches > 0 FROM watch(0.5)',
	'busy_share = 100: large batches while the application writes');
$seen = watch('one', 1.5);
cmp_ok($seen->{app_per_s}, '>', 100,
	sprintf('the application was writing (%.0f rows a second)', $seen->{app_per_s}));
# giving way is a pause after every batch: none.  A batch's rows are also
# bounded by its time (pass.c), so on a machine too busy to run the worker
# (a load average of 11 to 13 in CI runs) a batch may take 500 rows or
# fewer without giving way, for the whole window: said, not asserted (the
# large batch while the application writes is asserted above)
is($seen->{yielding}, 0, 'busy_share = 100: no pause while the application writes');
diag("busy_share = 100: $seen->{small} of $seen->{samples} samples saw a batch of 500 rows or fewer, $seen->{large} a larger one")
  if $seen->{small} || !$seen->{large};
stop_app($app);
set_conf('ttl_index.enabled = off');
disabled('one');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET ttl_index.busy_share; SELECT pg_reload_conf()');

is($node->safe_psql('one', 'SELECT errors FROM ttl_index_stats'), '0', 'one: no batch failed');
is($node->safe_psql('two', 'SELECT errors FROM ttl_index_stats'), '0', 'two: no batch failed');

$node->stop;
done_testing();
