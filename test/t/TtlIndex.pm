# TtlIndex: what the TAP tests of ttl_index share.
#
#   use FindBin; use lib $FindBin::RealBin; use TtlIndex;
#
#   my $node = TtlIndex::node('name', 'extra = conf', ...);  # preloaded, started
#   TtlIndex::worker_pid($node, 'db')        # pid of the db's worker, or ''
#   TtlIndex::wait_worker($node, 'db'[, $name[, $oldpid]])
#                                            # a worker runs for db (not $oldpid)
#   TtlIndex::wait_until($node, 'db', $query, $name[, $seconds])
#   TtlIndex::wait_is($node, 'db', $query, $expected, $name[, $seconds])
#   TtlIndex::wait_setting($node, 'guc', $value[, $name])
#                                            # a reload reached the server
#   TtlIndex::wait_asleep($node, 'db'[, $name])
#                                            # the worker ended its run and
#                                            # reported its statistics
#   TtlIndex::wait_sessions_gone($node, 'db'[, $keep_pid...])
#                                            # their statistics are in
#   TtlIndex::wait_round($node, 'db', 'marker_table'[, $name])
#                                            # the worker went through its
#                                            # schedule since
#   TtlIndex::version($node)                 # server_version_num
#
# The tests wait for states, never for time: CI runs two versions' suites
# side by side on two cores, where a fixed sleep is a gamble.  Every wait
# here ends when its state is reached, and gives up only after a generous
# time ($PostgreSQL::Test::Utils::timeout_default, 180 s unless
# PG_TEST_TIMEOUT_DEFAULT says otherwise), so a slow machine is slower, not
# failing.  That "X did not happen" is shown by something that did happen
# afterwards (wait_round); where a test measures a rate or a duration, its
# bound is one-sided and says why it is loose.
package TtlIndex;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use IPC::Run;

# Polling backs off: a wait polls after 50 ms, then half as long again
# each time, up to 400 ms.  Every poll starts a psql and a backend, and
# CI runs the suites of five versions at once on two cores, where a poll
# every 100 ms by each waiting test is much of the load.  A state is seen
# at most 400 ms late.  PostgreSQL::Test::Cluster's poll_query_until
# (which tests call directly too) is made to wait the same way, and to
# give up after timeout_default seconds of the clock, not after a count of
# polls that a slow machine stretches.
sub poll_delay
{
	my ($delay) = @_;
	return $delay < 0.4 ? ($delay * 1.5 > 0.4 ? 0.4 : $delay * 1.5) : 0.4;
}

{
	no warnings 'redefine';
	*PostgreSQL::Test::Cluster::poll_query_until = sub {
		my ($self, $dbname, $query, $expected) = @_;
		local %ENV = $self->_get_env();
		$expected = 't' unless defined($expected);
		my $cmd = [
			$self->installed_command('psql'), '-XAt',
			'-d', $self->connstr($dbname)
		];
		my ($stdout, $stderr);
		my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
		my $delay = 0.05;
		for (;;)
		{
			IPC::Run::run($cmd, '<', \$query, '>', \$stdout, '2>', \$stderr);
			chomp($stdout);
			chomp($stderr);
			return 1 if $stdout eq $expected && $stderr eq '';
			last if time() > $deadline;
			sleep($delay);
			$delay = poll_delay($delay);
		}
		my $msg_query = defined $query ? $query : '(connection attempt only)';
		diag("poll_query_until timed out executing this query:\n$msg_query\n"
			  . "expecting this output:\n$expected\nlast actual query output:\n$stdout\n"
			  . "with stderr:\n$stderr");
		return 0;
	};
}

# node(name, conf lines...): a server with ttl_index preloaded, the
# launcher looking at the databases every second, started
sub node
{
	my ($name, @conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', join("\n",
		"shared_preload_libraries = 'ttl_index'",
		"ttl_index.launcher_naptime = 1",
		@conf) . "\n");
	$node->start;
	return $node;
}

# worker_pid(node, db): pid of the ttl_index worker connected to db, or ''
sub worker_pid
{
	my ($node, $db) = @_;
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl_index worker' AND datname = '$db'");
}

# wait_worker(node, db[, name[, oldpid]]): a test that a worker runs for
# the database (in another process than oldpid, when given).  The server
# may be in crash recovery meanwhile: a psql that cannot connect (and may
# exit before reading its query, which IPC::Run reports as a broken pipe)
# is one more poll, not the test's end.
sub wait_worker
{
	my ($node, $db, $name, $oldpid) = @_;
	my $other = defined $oldpid ? " AND pid <> $oldpid" : '';
	my $query = "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'ttl_index worker' AND datname = '$db'$other";
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	my $seen = 0;
	my $delay = 0.05;
	while (!$seen && time() < $deadline)
	{
		my $got = eval { $node->safe_psql('postgres', $query) };
		$seen = defined $got && $got eq 't';
		next if $seen;
		sleep($delay);
		$delay = poll_delay($delay);
	}
	return ok($seen, $name // "the worker of database $db runs");
}

# wait_until(node, db, query, name[, seconds]): a test that the query
# returns t within the time (timeout_default by default)
sub wait_until
{
	my ($node, $db, $query, $name, $secs) = @_;
	local $PostgreSQL::Test::Utils::timeout_default = $secs // $PostgreSQL::Test::Utils::timeout_default;
	return ok($node->poll_query_until($db, $query), $name);
}

# wait_is(node, db, query, expected, name[, seconds]): a test that the
# query's output becomes the expected one within the time (timeout_default
# by default); counters are bumped just after a batch commits, so they may
# trail the table by a moment
sub wait_is
{
	my ($node, $db, $query, $expected, $name, $secs) = @_;
	my $deadline = time() + ($secs // $PostgreSQL::Test::Utils::timeout_default);
	my $got;
	my $delay = 0.05;
	for (;;)
	{
		$got = $node->safe_psql($db, $query);
		last if $got eq $expected || time() > $deadline;
		sleep($delay);
		$delay = poll_delay($delay);
	}
	return is($got, $expected, $name);
}

# wait_setting(node, guc, value[, name]): a test that a reload has reached
# the server: a new session shows the setting at its new value.  The
# postmaster forks a session only after it has handled a reload whole, and
# it sends SIGHUP to every server process in the same step, so by then
# every worker has been told: one asleep reads its settings as it wakes, at
# once; one in a run, after its batch in hand or the next one it starts
# (wait_round makes sure)
sub wait_setting
{
	my ($node, $guc, $value, $name) = @_;
	return wait_is($node, 'postgres', "SHOW $guc", $value, $name // "$guc is $value");
}

# the wait event of a worker's sleep between runs: PostgreSQL 17 and later
# let it name its own
sub sleep_event
{
	my ($node) = @_;
	return version($node) >= 170000 ? 'TtlIndexSleeping' : 'Extension';
}

# asleep(node, db): whether the worker of db is in the sleep of its main
# loop, which it enters only after a run has ended (ttl_index_progress
# says 'sleeping' from then on, where every nap inside a run says its own
# phase) and it has reported its statistics (pgstat_report_stat), and no
# helper of the database runs (a helper reports its own as it exits, before
# it leaves pg_stat_activity).  The phase is read first, the wait event in
# a later statement: a sleep seen after a run's end is that run's, or a
# later one's.  Asked in db (the view is the extension's), by a session
# that reads no table
sub asleep
{
	my ($node, $db) = @_;
	my $event = sleep_event($node);
	my $out = $node->safe_psql($db, qq{
SELECT coalesce((SELECT pid FROM ttl_index_progress WHERE datname = '$db' AND phase = 'sleeping')::text, 'none');
SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl_index helper' AND datname = '$db';
SELECT coalesce((SELECT pid FROM pg_stat_activity
 WHERE backend_type = 'ttl_index worker' AND datname = '$db'
   AND wait_event_type = 'Extension' AND wait_event = '$event')::text, 'none')});
	my ($pid, $helpers, $waiting) = split /\n/, $out;
	return defined $waiting && $pid ne 'none' && $helpers eq '0' && $waiting eq $pid;
}

# wait_asleep(node, db[, name]): a test that the worker of db has ended its
# run and reported its statistics (and its helpers theirs): the counters of
# pg_stat_* then include everything it did before.  Call it once what the
# test waits for is done (a table drained): a sleep seen after that is one
# after the run that did it
sub wait_asleep
{
	my ($node, $db, $name) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	my $seen = 0;
	while (!($seen = asleep($node, $db)) && time() < $deadline)
	{
		sleep(0.1);
	}
	return ok($seen, $name // "the worker of $db has ended its run and reported its statistics");
}

# wait_sessions_gone(node, db[, keep pids]): a test that no client session
# is connected to db any more but those kept (and the one asking): a
# session reports its
# statistics as it exits, before it leaves pg_stat_activity, so their
# reads and writes are counted in pg_stat_* by then (the psql of a
# safe_psql() may return before its server process has exited)
sub wait_sessions_gone
{
	my ($node, $db, @keep) = @_;
	my $kept = @keep ? ' AND pid NOT IN (' . join(', ', @keep) . ')' : '';
	return wait_until($node, 'postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = '$db' AND pid <> pg_backend_pid()$kept",
		"the sessions of $db have exited");
}

# wait_round(node, db, marker[, name]): a test that the worker of db went
# through its schedule after this call began: an expired row inserted into
# the marker table (one timestamptz column, a policy with a TTL shorter
# than a day) is deleted, by a batch that began after the insert.  A
# worker looks for catalog changes and settings to reload after every
# batch, so once the marker is gone, a batch in flight when this call began
# has ended, and a change committed before it (ttl_pause(), a reload that
# wait_setting saw) holds for every batch that follows.  (Helpers run
# beside the worker: wait_asleep waits for them.)
sub wait_round
{
	my ($node, $db, $marker, $name) = @_;
	$node->safe_psql($db, "INSERT INTO $marker VALUES (now() - interval '1 day')");
	return wait_until($node, $db, "SELECT count(*) = 0 FROM $marker",
		$name // "the worker went through its schedule ($marker)");
}

# version(node): the server's version number (150000 and up)
sub version
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SHOW server_version_num');
}

1;
