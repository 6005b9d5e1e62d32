# The workers' CPU priority (ttl_index.worker_nice): a worker runs at that
# nice value, or at the postmaster's if that is higher; raising it on reload
# renices the running worker, lowering it makes the worker exit and the
# launcher start a new one at the lower value.  Only workers are reniced:
# the postmaster and sessions calling ttl_runner() keep their priority.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use List::Util qw(max);
use FindBin;
use lib $FindBin::RealBin;
use TtlIndex;

# the nice value in the text of a /proc/PID/stat file (its 19th field)
sub nice_in_stat
{
	my ($stat) = @_;
	$stat =~ s/^.*\) //s;
	return (split / /, $stat)[16];
}

# nice value of a process
sub nice_of
{
	my ($pid) = @_;
	return nice_in_stat(slurp_file("/proc/$pid/stat"));
}

my $node = TtlIndex::node('nice', 'ttl_index.max_sleep = 100');
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (id bigserial, ts timestamptz NOT NULL);
SELECT ttl_create_index('t', 'ts', 60);
});

my $pm_pid = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
my $pm_nice = nice_of($pm_pid);
note "postmaster runs at nice value $pm_nice";

# the worker's pid once it is (again) running and is not $old (or '' if
# none comes)
sub worker_pid
{
	my ($old) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		my $pid = $node->safe_psql('postgres',
			q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl_index worker'});
		return $pid if $pid ne '' && (!defined $old || $pid ne $old);
		sleep 0.1;
	}
	return '';
}

# the worker's nice value once it reached $want (or what it is when giving
# up)
sub wait_nice
{
	my ($pid, $want) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	my $n;
	while (time() < $deadline)
	{
		$n = nice_of($pid);
		return $n if $n == $want;
		sleep 0.1;
	}
	return $n;
}

# rows expired an hour ago are gone
sub purges
{
	$node->safe_psql('postgres',
		q{INSERT INTO t (ts) SELECT now() - interval '1 hour' FROM generate_series(1, 1000)});
	return $node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM t WHERE ts < now() - interval '1 minute'});
}

# default: the lowest priority
my $pid = worker_pid();
isnt($pid, '', 'a worker runs');
is($node->safe_psql('postgres', 'SHOW ttl_index.worker_nice'), '19', 'default is 19');
is(wait_nice($pid, max(19, $pm_nice)), max(19, $pm_nice), 'the worker runs at nice value 19');
ok(purges(), 'and purges');

# a session calling ttl_runner() keeps the server's priority: it reads its
# own nice value after the call
my $stat = $node->safe_psql('postgres', q{
INSERT INTO t (ts) SELECT now() - interval '1 hour' FROM generate_series(1, 10);
SELECT ttl_runner();
SELECT translate(pg_read_file('/proc/self/stat'), E'\\n', ' ');
});
$stat = (split /\n/, $stat)[-1];
is(nice_in_stat($stat), $pm_nice, 'a session that ran ttl_runner() keeps the server\'s priority');
is(nice_of($pm_pid), $pm_nice, 'the postmaster keeps its priority');

# lowering the value: the worker cannot lower its own, a new one starts
my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', q{ALTER SYSTEM SET ttl_index.worker_nice = 5; SELECT pg_reload_conf()});
my $want = max(5, $pm_nice);
my $new_pid = worker_pid($want < 19 ? $pid : undef);
isnt($new_pid, '', 'a worker runs after lowering worker_nice');
if ($want < 19)
{
	isnt($new_pid, $pid, 'lowering worker_nice starts a new worker');
	ok($node->log_contains('ttl_index worker restarting to run at nice value 5', $log_offset),
		'and says why in the log');
}
is(wait_nice($new_pid, $want), $want, 'the worker runs at nice value 5');
ok(purges(), 'and purges');

# raising it: the same worker, reniced
$node->safe_psql('postgres', q{ALTER SYSTEM SET ttl_index.worker_nice = 12; SELECT pg_reload_conf()});
$want = max(12, $pm_nice);
is(wait_nice($new_pid, $want), $want, 'raising worker_nice renices the running worker');
is(worker_pid(), $new_pid, 'without restarting it');

# bad values: a clear error, nothing changed
foreach my $bad ('20', '-1', 'low')
{
	my ($ret, $out, $err) = $node->psql('postgres',
		"ALTER SYSTEM SET ttl_index.worker_nice = '$bad'");
	isnt($ret, 0, "worker_nice = $bad is refused");
	like($err,
		$bad eq 'low'
		? qr/invalid value for parameter "ttl_index.worker_nice": "low"/
		: qr/$bad is outside the valid range for parameter "ttl_index.worker_nice" \(0 \.\. 19\)/,
		"with a clear error ($bad)");
}
# a reload then: it reaches the worker (another setting changed with it
# says when the server has it), and the worker purges twice after it (it
# reads its settings between batches), as the same process, reniced as
# before
$node->safe_psql('postgres',
	q{ALTER SYSTEM SET ttl_index.behind_warning = '6min'; SELECT pg_reload_conf()});
TtlIndex::wait_setting($node, 'ttl_index.behind_warning', '6min', 'the reload reached the server');
ok(purges(), 'the worker purges after the reload');
ok(purges(), 'and again');
is($node->safe_psql('postgres', 'SHOW ttl_index.worker_nice'), '12', 'the setting is unchanged');
is(worker_pid(), $new_pid, 'the worker is the same');
is(nice_of($new_pid), $want, 'at the same nice value');

# 0: the server's own priority
$node->safe_psql('postgres', q{ALTER SYSTEM SET ttl_index.worker_nice = 0; SELECT pg_reload_conf()});
$want = $pm_nice;
my $last_pid = worker_pid($want < max(12, $pm_nice) ? $new_pid : undef);
is(wait_nice($last_pid, $want), $want, 'worker_nice = 0: the worker runs at the server\'s priority');
ok(purges(), 'and purges');

$node->stop;
done_testing();
