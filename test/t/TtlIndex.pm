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
#   TtlIndex::version($node)                 # server_version_num
package TtlIndex;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

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
	while (!$seen && time() < $deadline)
	{
		my $got = eval { $node->safe_psql('postgres', $query) };
		$seen = defined $got && $got eq 't';
		sleep(0.1) unless $seen;
	}
	return ok($seen, $name // "the worker of database $db runs");
}

# wait_until(node, db, query, name[, seconds]): a test that the query
# returns t within the time (30 s by default)
sub wait_until
{
	my ($node, $db, $query, $name, $secs) = @_;
	local $PostgreSQL::Test::Utils::timeout_default = $secs // 30;
	return ok($node->poll_query_until($db, $query), $name);
}

# wait_is(node, db, query, expected, name[, seconds]): a test that the
# query's output becomes the expected one within the time (10 s by
# default); counters are bumped just after a batch commits, so they may
# trail the table by a moment
sub wait_is
{
	my ($node, $db, $query, $expected, $name, $secs) = @_;
	my $deadline = time() + ($secs // 10);
	my $got;
	for (;;)
	{
		$got = $node->safe_psql($db, $query);
		last if $got eq $expected || time() > $deadline;
		sleep(0.1);
	}
	return is($got, $expected, $name);
}

# version(node): the server's version number (150000 and up)
sub version
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SHOW server_version_num');
}

1;
