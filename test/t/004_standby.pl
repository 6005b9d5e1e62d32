# Streaming replication: a hot standby with the library preloaded (and
# ttl_index.enabled on) runs no launcher and no worker and logs no ttl_index
# errors, while policies and expired rows replicate to it; once promoted, the
# launcher and the worker start by themselves and purge the expired rows,
# keeping the unexpired ones.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $ttl_procs = q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type IN ('ttl_index launcher', 'ttl_index worker')};

# server_messages(node): the log lines the server wrote itself (prefixed
# lines, without the statements log_statement = all echoes), from byte
# offset `from` on
sub server_messages
{
	my ($node, $from) = @_;
	my $log = substr(slurp_file($node->logfile), $from // 0);
	return grep { /^\d{4}-\d\d-\d\d / && !/ LOG:  statement: / } split /\n/, $log;
}

# The primary must not purge the rows we want to see replicated, so it runs
# with ttl_index.enabled = off from the start (set in postgresql.conf before
# the first start: no reload race with its worker).  The base backup copies
# postgresql.conf, so the standby turns the setting back on explicitly: the
# standby must be a node that WOULD purge if its worker ran.
my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ttl_index'
ttl_index.launcher_naptime = 1
ttl_index.enabled = off
});
my $primary_started = time();
$primary->start;

$primary->safe_psql('postgres', 'CREATE DATABASE app');
$primary->safe_psql('app', 'CREATE EXTENSION ttl_index');
ok($primary->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'ttl_index worker' AND datname = 'app'"),
	'primary: worker runs (idle, ttl_index.enabled = off)');
# how long this machine, as busy as it is now, took to start a server, its
# launcher and the worker of a database: the yardstick of the standby's
# watch below
my $primary_took = time() - $primary_started;

$primary->backup('bk');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bk', has_streaming => 1);
$standby->append_conf('postgresql.conf', 'ttl_index.enabled = on');
# the log file is appended to when a test directory is reused: read only ours
my $started_at = -s $standby->logfile // 0;
my $standby_started = time();
$standby->start;

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'standby is in recovery');
is($standby->safe_psql('postgres', 'SHOW shared_preload_libraries'), 'ttl_index',
	'standby preloads ttl_index');
is($standby->safe_psql('postgres', 'SHOW ttl_index.enabled'), 'on',
	'standby has ttl_index.enabled on (the library is loaded and would purge)');
is($primary->safe_psql('postgres', 'SHOW ttl_index.enabled'), 'off',
	'primary has ttl_index.enabled off');

# a policy and rows created on the primary replicate
$primary->safe_psql('app', q{
CREATE TABLE sessions (id int, created_at timestamptz, note text);
SELECT ttl_create_index('sessions', 'created_at', 3600);
INSERT INTO sessions SELECT g, now() - interval '2 hours', 'old' FROM generate_series(1, 1000) g;
INSERT INTO sessions SELECT g, now() + interval '1 day', 'fresh' FROM generate_series(1, 10) g;
INSERT INTO sessions VALUES (0, NULL, 'never');
});
$primary->wait_for_catchup($standby);

is($standby->safe_psql('app',
	"SELECT relid::text, column_name, attnum, expire_after,
			(SELECT i.indexrelid::regclass::text FROM pg_index i WHERE i.indrelid = p.relid)
	   FROM ttl_index_policy p"),
	'sessions|created_at|2|01:00:00|sessions_created_at_ttl_idx',
	'policy created on the primary is on the standby');
is($standby->safe_psql('app', "SELECT note, count(*) FROM sessions GROUP BY 1 ORDER BY 1"),
	"fresh|10\nnever|1\nold|1000", 'expired and unexpired rows replayed on the standby');

# Nothing on a standby can show that a launcher has had its chance and let
# it go (nothing runs there to delete a marker row): the postmaster keeps
# the launcher out until recovery ends (BgWorkerStart_RecoveryFinished).  So
# the standby is watched: nothing runs and nothing changes for twice as
# long, since its start, as the primary took from its start to a running
# worker (and at least 3 s).  That time is measured on this machine, under
# its load of the moment, and covers several launcher naptimes: a launcher
# let in by the standby would have started its worker by the end.  A slow
# machine only makes the watch longer.
my $procs = $standby->safe_psql('postgres', $ttl_procs);
my $rows = $standby->safe_psql('app', 'SELECT count(*) FROM sessions');
my $watch = 2 * $primary_took;
$watch = 3 if $watch < 3;
my $deadline = $standby_started + $watch;
note(sprintf('the primary took %.1f s to start its worker; the standby is watched for %.1f s after its start',
	$primary_took, $watch));
while (time() < $deadline)
{
	my $p = $standby->safe_psql('postgres', $ttl_procs);
	my $r = $standby->safe_psql('app', 'SELECT count(*) FROM sessions');
	if ($p ne $procs || $r ne $rows)
	{
		($procs, $rows) = ($p, $r);
		last;
	}
	usleep(200_000);
}
is($procs, '0', 'standby: no ttl_index launcher or worker in pg_stat_activity');
is($rows, '1011', 'standby: expired rows still there after the watch');
is($primary->safe_psql('app', "SELECT count(*) FROM sessions WHERE note = 'old'"), '1000',
	'primary (enabled = off) kept the expired rows too');

# An error raised in a background worker does not always name ttl_index on
# its line (no application_name), so refuse any error, and any message at all
# about ttl_index (the launcher logs "ttl_index launcher started" when it runs).
my @bad = grep { /\b(ERROR|FATAL|PANIC)\b/ || /ttl_index/ } server_messages($standby, $started_at);
is(join("\n", @bad), '', 'standby log has no error and nothing from ttl_index');

# promotion: the launcher and the worker come by themselves and purge
$primary->stop;
$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'), 'standby promoted');
my $promoted_at = -s $standby->logfile;
ok($standby->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'ttl_index launcher'"),
	'promoted: launcher started by itself');
ok($standby->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'ttl_index worker' AND datname = 'app'"),
	'promoted: worker started by itself for the database with the extension');
ok($standby->poll_query_until('app', "SELECT count(*) = 0 FROM sessions WHERE note = 'old'"),
	'promoted: expired rows deleted');
is($standby->safe_psql('app', "SELECT note, count(*) FROM sessions GROUP BY 1 ORDER BY 1"),
	"fresh|10\nnever|1", 'promoted: unexpired and NULL rows kept');
ok($standby->poll_query_until('app', 'SELECT rows_deleted = 1000 AND errors = 0 FROM ttl_index_stats'),
	'promoted: ttl_index_stats counts the purge');

# and new expired rows keep being purged on the new primary
$standby->safe_psql('app',
	"INSERT INTO sessions SELECT g, now() - interval '3 hours', 'old' FROM generate_series(1, 100) g");
ok($standby->poll_query_until('app', "SELECT count(*) = 0 FROM sessions WHERE note = 'old'"),
	'promoted: rows inserted after promotion are purged too');

# once promoted (the walreceiver's complaints about the stopped primary come
# before), no error
@bad = grep { /\b(ERROR|FATAL|PANIC)\b/ } server_messages($standby, $promoted_at);
is(join("\n", @bad), '', 'promoted node log has no error');

$standby->stop;
done_testing();
