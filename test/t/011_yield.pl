# Giving way to the application (ttl_index.busy_share): while other sessions
# commit writes, a worker takes batches of at most 500 rows and pauses
# after each one; once they stop, it drains at full speed again.  The XIDs
# the workers take themselves, in this database or another, are not taken
# for the application's.  busy_share = 100 turns yielding off.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);

my $rows = 1000000;

my $node = PostgreSQL::Test::Cluster->new('yield');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ttl_index'
ttl_index.launcher_naptime = 1
ttl_index.enabled = off
});
$node->start;

foreach my $db ('one', 'two')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (id bigserial, ts timestamptz NOT NULL) WITH (autovacuum_enabled = off);
SELECT ttl_create_index('t', 'ts', 60);
CREATE TABLE app (id bigserial PRIMARY KEY, v text);

-- what this database's worker does, sampled every 5 ms for secs seconds;
-- writes nothing, so it takes no XID
CREATE FUNCTION watch(secs float8, OUT samples int, OUT yielding int,
					  OUT small_batches int, OUT large_batches int)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
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
		ELSIF r.phase = 'deleting' THEN
			large_batches := large_batches + 1;
		END IF;
		PERFORM pg_sleep(0.005);
	END LOOP;
END $$;
});
}

# the backlog of a database, topped up to $rows expired rows
sub load
{
	my $db = shift;
	$node->safe_psql($db, qq{
INSERT INTO t (ts) SELECT now() - interval '1 day' FROM generate_series(1, $rows - (SELECT count(*) FROM t));
VACUUM ANALYZE t;
});
}

sub left { return $node->safe_psql($_[0], 'SELECT count(*) FROM t'); }

sub set_conf
{
	$node->safe_psql('postgres', join('', map { "ALTER SYSTEM SET $_;" } @_)
		  . 'SELECT pg_reload_conf()');
}

# an application writing in database one: about 1,000 inserts a second
my $script = $node->basedir . '/app.sql';
PostgreSQL::Test::Utils::append_to_file($script,
	"INSERT INTO app (v) VALUES (repeat('x', 40));\n");
sub start_app
{
	my $secs = shift;
	my ($out, $err) = ('', '');
	return IPC::Run::start(
		[ 'pgbench', '-n', '-h', $node->host, '-p', $node->port, '-c', '2', '-j', '1',
		  '-R', '1000', '-T', $secs, '-f', $script, 'one' ],
		'>', \$out, '2>', \$err);
}

sub watch
{
	my ($db, $secs) = @_;
	my @r = split /\|/, $node->safe_psql($db, "SELECT * FROM watch($secs)");
	return { samples => $r[0], yielding => $r[1], small => $r[2], large => $r[3] };
}

# 1. Two workers draining at once, nobody else writing: neither takes the
# other's XIDs (nor its own) for an application's.  A rate limit slows the
# drains down enough to watch them.
load($_) foreach ('one', 'two');
set_conf('ttl_index.rate_limit = 200000', 'ttl_index.enabled = on');
ok($node->poll_query_until('two', 'SELECT rows_deleted > 0 FROM ttl_index_stats'),
	'both workers are deleting');
sleep(0.5);
my %w = (one => watch('one', 2));
$w{two} = watch('two', 0.5);
foreach my $db ('one', 'two')
{
	cmp_ok($w{$db}{large}, '>', 0, "$db: batches larger than 500 rows while only workers write");
	is($w{$db}{yielding} + $w{$db}{small}, 0,
		"$db: no pause and no small batch while only workers write");
}
ok($node->poll_query_until($_, 'SELECT count(*) = 0 FROM t'), "$_: backlog drained")
  foreach ('one', 'two');

# 2. The application writes: the worker of one gives way; when it stops,
# the rest of the backlog goes at full speed.
set_conf('ttl_index.enabled = off', 'ttl_index.rate_limit = 0');
sleep(1);
load('one');
my $app = start_app(8);
sleep(0.5);
my $t_on = time();
set_conf('ttl_index.enabled = on');
ok($node->poll_query_until('one', 'SELECT rows_deleted > 0 FROM ttl_index_stats'),
	'the worker started while the application writes');
my $seen = watch('one', 2);
cmp_ok($seen->{yielding}, '>', 0, 'the worker pauses between batches while the application writes');
cmp_ok($seen->{small}, '>', 0, 'it deletes in small batches');
is($seen->{large}, 0, 'and in no batch larger than 500 rows');
my $mid = left('one');
cmp_ok($mid, '>', 0, "after 2 s of yielding, rows are still there ($mid left of $rows)");
$app->finish;
my $t_app_done = time();
ok($node->poll_query_until('one', 'SELECT count(*) = 0 FROM t'),
	'once the application stops, the backlog is drained');
my $rest = time() - $t_app_done;
note sprintf('drained %.1f s after the application stopped (%.1f s after enabling)',
	$rest, time() - $t_on);
cmp_ok($rest, '<', 6, 'at full speed: far sooner than yielding would have taken');

# 3. busy_share = 100: no yielding, the application writing or not
set_conf('ttl_index.enabled = off');
sleep(1);
load('one');
$app = start_app(6);
sleep(0.5);
set_conf('ttl_index.busy_share = 100', 'ttl_index.enabled = on');
$t_on = time();
ok($node->poll_query_until('one', 'SELECT count(*) = 0 FROM t'),
	'busy_share = 100: the backlog is drained');
my $took = time() - $t_on;
$app->finish;
cmp_ok($took, '<', 5, sprintf('while the application was still writing (%.1f s)', $took));
$node->safe_psql('postgres', 'ALTER SYSTEM RESET ttl_index.busy_share; SELECT pg_reload_conf()');

is($node->safe_psql('one', 'SELECT errors FROM ttl_index_stats'), '0', 'no batch failed');

$node->stop;
done_testing();
