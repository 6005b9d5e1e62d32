# A whole database paused and resumed (issue 50, item 5): ALTER DATABASE a
# SET ttl_index.enabled = off stops a's purge without a restart, while b
# goes on; a's worker leaves and no other starts for a (its slot is free);
# ttl_index_stats and ttl_summary() say why a's rows stay; RESET resumes a.
# The configuration's ttl_index.enabled = off still stops every database
# (an "on" of a database does not override it); a role's setting (ALTER
# ROLE ... IN DATABASE) is not obeyed by the worker; ttl_runner() ignores
# the setting at every level.  Refused, changing nothing: the setting from
# a role that is not a superuser (the database's owner too), a value that
# is not a boolean, and a pause rolled back; an owner granted SET on the
# parameter may pause its database.  A RESET committed by COMMIT PREPARED
# in another database, which wakes no one, is seen when the launcher starts
# the paused database's worker again to read the setting (a minute after
# its worker left).  The configuration's "on" wakes a worker asleep as
# disabled at once, not at its next wake-up.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $node = TtlIndex::node('dbpause', 'ttl_index.log_min_duration = -1', 'max_prepared_transactions = 2');
for my $db (qw(a b))
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (ts timestamptz NOT NULL);
SELECT ttl_create_index('t', 'ts', 60);
CREATE TABLE marker (ts timestamptz NOT NULL);
SELECT ttl_create_index('marker', 'ts', 60);
INSERT INTO t SELECT now() - interval '1 hour' FROM generate_series(1, 100);
});
}
for my $db (qw(a b))
{
	TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM t', "$db: purged before any pause");
}

# expire(db, n): n rows of db's t, expired an hour ago
sub expire
{
	my ($db, $n) = @_;
	$node->safe_psql($db,
		"INSERT INTO t SELECT now() - interval '1 hour' FROM generate_series(1, $n)");
}

# setting(db): the database's own entry of pg_db_role_setting, or ''
sub setting
{
	my ($db) = @_;
	return $node->safe_psql('postgres', qq{
SELECT array_to_string(setconfig, ',') FROM pg_db_role_setting
 WHERE setrole = 0 AND setdatabase = (SELECT oid FROM pg_database WHERE datname = '$db')});
}

# a's state as ttl_index_databases shows it, and whether a process serves it
my $a_state = q{SELECT state || '|' || (worker_pid IS NULL) || '|' ||
	(SELECT count(*) FROM pg_stat_activity WHERE datname = 'a'
	   AND backend_type IN ('ttl_index worker', 'ttl_index helper'))
  FROM ttl_index_databases WHERE datname = 'a'};
my $leaving = qr/ttl_index worker leaving: database "a" is paused/;

# ---- 1. ALTER DATABASE a SET ttl_index.enabled = off, from another database
my $log = -s $node->logfile;
$node->safe_psql('postgres', 'ALTER DATABASE a SET ttl_index.enabled = off');
is(setting('a'), 'ttl_index.enabled=off', 'the pause is a setting of the database');
ok($node->wait_for_log($leaving, $log), "a's worker read the setting at once, and left");
TtlIndex::wait_is($node, 'b', $a_state, 'paused|true|0',
	'a is paused: no worker runs for it (its slot is free), and ttl_index_databases says so');
is($node->safe_psql('a', 'SHOW ttl_index.enabled'), 'off', "a new session of a shows the database's value");

expire('a', 1000);
expire('b', 1000);
TtlIndex::wait_until($node, 'b', 'SELECT count(*) = 0 FROM t', 'b is purged meanwhile');

# a's worker comes again after its rows are in (a change of a's policies
# wakes the database) and leaves again, deleting nothing
$log = -s $node->logfile;
$node->safe_psql('a', q{SELECT ttl_pause('marker'); SELECT ttl_resume('marker')});
ok($node->wait_for_log($leaving, $log), "a's worker started after the rows were in, read the pause, and left");
TtlIndex::wait_is($node, 'b', $a_state, 'paused|true|0', 'and no worker started for a after it');
is($node->safe_psql('a', 'SELECT count(*) FROM t'), '1000', 'a keeps its expired rows');
is($node->safe_psql('a', q{SELECT rows_deleted, paused, stalled FROM ttl_index_stats WHERE table_name = 't'::regclass}),
	'100|f|database paused',
	'ttl_index_stats in a: nothing more deleted, the policy is not paused, stalled says the database is');
is($node->safe_psql('a', q{SELECT active, healthy, stalled FROM ttl_summary() WHERE table_name = 't'}),
	't|f|database paused', 'ttl_summary() in a: not healthy, and why');
is($node->safe_psql('b', q{SELECT healthy, stalled IS NULL FROM ttl_summary() WHERE table_name = 't'}),
	't|t', 'ttl_summary() in b: healthy');

# ttl_runner() is an explicit request: it ignores the setting at every
# level, the database's and a session's own
is($node->safe_psql('a', q{SET ttl_index.enabled = off; SELECT ttl_runner()}), '1000',
	'ttl_runner() in the paused database, with the session set off too, purges');

# ---- 2. RESET, from a itself: a is purged again
expire('a', 500);
$node->safe_psql('a', 'ALTER DATABASE a RESET ttl_index.enabled');
is(setting('a'), '', 'the setting is gone');
TtlIndex::wait_until($node, 'a', 'SELECT count(*) = 0 FROM t', 'a is purged once reset');
TtlIndex::wait_is($node, 'a', q{SELECT coalesce(stalled, 'none') FROM ttl_index_stats WHERE table_name = 't'::regclass},
	'none', 'stalled says nothing any more');
TtlIndex::wait_is($node, 'b', "SELECT state FROM ttl_index_databases WHERE datname = 'a'", 'running',
	'a worker runs for a again');

# a pause rolled back changes nothing
$node->safe_psql('a', 'BEGIN; ALTER DATABASE a SET ttl_index.enabled = off; ROLLBACK');
is(setting('a'), '', 'a pause rolled back leaves no setting');

# ---- 3. the configuration's value: every database; a database's "on"
# does not override its "off"
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl_index.enabled = off; SELECT pg_reload_conf()');
TtlIndex::wait_until($node, 'b', q{SELECT phase = 'disabled' FROM ttl_index_progress WHERE datname = 'b'},
	"b's worker is disabled by the configuration");
$node->safe_psql('postgres', 'ALTER DATABASE b SET ttl_index.enabled = on');
expire('b', 300);
my $mark = $node->safe_psql('b', 'SELECT clock_timestamp()');
$node->safe_psql('b', q{SELECT ttl_pause('marker'); SELECT ttl_resume('marker')});
TtlIndex::wait_until($node, 'b',
	qq{SELECT phase = 'disabled' AND phase_since > '$mark' FROM ttl_index_progress WHERE datname = 'b'},
	"b's worker read its database's on after the rows were in, and stayed disabled");
is($node->safe_psql('b', 'SELECT count(*) FROM t'), '300', 'b keeps its rows while the configuration says off');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET ttl_index.enabled; SELECT pg_reload_conf()');
TtlIndex::wait_until($node, 'b', 'SELECT count(*) = 0 FROM t', 'b is purged once the configuration says on');
$node->safe_psql('postgres', 'ALTER DATABASE b RESET ttl_index.enabled');

# ---- 4. a role's setting is not the worker's: the worker connects as the
# bootstrap superuser, whose ALTER ROLE ... IN DATABASE b it ignores
my $boot = $node->safe_psql('postgres', 'SELECT rolname FROM pg_authid WHERE oid = 10');
$node->safe_psql('postgres', qq{ALTER ROLE "$boot" IN DATABASE b SET ttl_index.enabled = off});
my $old = TtlIndex::worker_pid($node, 'b');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($old)");
TtlIndex::wait_worker($node, 'b', 'a new worker for b, connected with the role setting', $old);
expire('b', 200);
TtlIndex::wait_until($node, 'b', 'SELECT count(*) = 0 FROM t', 'the role setting does not pause b');
$node->safe_psql('postgres', qq{ALTER ROLE "$boot" IN DATABASE b RESET ttl_index.enabled});

# ---- 5. refused, changing nothing
$node->safe_psql('postgres', q{
CREATE ROLE dbowner LOGIN;
ALTER DATABASE b OWNER TO dbowner;
});
my ($ret, $out, $err) = $node->psql('b', 'ALTER DATABASE b SET ttl_index.enabled = off',
	extra_params => [ '-U', 'dbowner' ]);
isnt($ret, 0, "the database's owner, not a superuser, may not pause it");
like($err, qr/permission denied to set parameter "ttl_index\.enabled"/, 'permission denied');
($ret, $out, $err) = $node->psql('b', 'SET ttl_index.enabled = off',
	extra_params => [ '-U', 'dbowner' ]);
like($err, qr/permission denied to set parameter "ttl_index\.enabled"/, 'nor set it in a session');
($ret, $out, $err) = $node->psql('postgres', q{ALTER DATABASE a SET ttl_index.enabled = 'maybe'});
isnt($ret, 0, 'a value that is not a boolean is refused');
like($err, qr/parameter "ttl_index\.enabled" requires a Boolean value/, 'with the reason');
is(setting('a') . '|' . setting('b'), '|', 'neither database has the setting');
expire('a', 100);
expire('b', 100);
TtlIndex::wait_until($node, 'a', 'SELECT count(*) = 0 FROM t', 'a is purged as before');
TtlIndex::wait_until($node, 'b', 'SELECT count(*) = 0 FROM t', 'b is purged as before');

# a role a superuser granted SET on the parameter may pause its database
$node->safe_psql('postgres', 'GRANT SET ON PARAMETER ttl_index.enabled TO dbowner');
($ret, $out, $err) = $node->psql('b', 'ALTER DATABASE b SET ttl_index.enabled = off',
	extra_params => [ '-U', 'dbowner' ]);
is($ret, 0, 'the owner granted SET on ttl_index.enabled may pause the database');
is(setting('b'), 'ttl_index.enabled=off', 'and the pause is set');
TtlIndex::wait_is($node, 'a', "SELECT state FROM ttl_index_databases WHERE datname = 'b'", 'paused',
	'b is paused');
$node->psql('b', 'ALTER DATABASE b RESET ttl_index.enabled', extra_params => [ '-U', 'dbowner' ]);
is(setting('b'), '', 'and reset');
expire('b', 100);
TtlIndex::wait_until($node, 'b', 'SELECT count(*) = 0 FROM t', 'b is purged again');

# ---- 6. a RESET in a prepared transaction of another database: its
# COMMIT PREPARED does not know it and wakes no one; the launcher starts
# a's worker again within a minute of its leaving, which reads the setting
$node->safe_psql('postgres', 'ALTER DATABASE a SET ttl_index.enabled = off');
TtlIndex::wait_is($node, 'b', "SELECT state FROM ttl_index_databases WHERE datname = 'a'", 'paused',
	'a is paused again');
expire('a', 100);
$node->safe_psql('postgres', q{BEGIN; ALTER DATABASE a RESET ttl_index.enabled;
PREPARE TRANSACTION 'reset_a'; COMMIT PREPARED 'reset_a';});
is(setting('a'), '', 'the prepared RESET is committed');
TtlIndex::wait_until($node, 'a', 'SELECT count(*) = 0 FROM t',
	'a is purged after a RESET committed by COMMIT PREPARED', 240);

# ---- 7. the configuration's "on" and "off" reach a sleeping worker at
# once: the worker obeys the value the launcher publishes after the reload,
# and one that read it before the launcher had published would sleep on in
# the old state until its next wake-up (ttl_index.max_sleep, here an hour:
# the test's timeout).  Five times each way, since which of the two reads
# the configuration first is up to the scheduler.
$node->safe_psql('postgres', q{ALTER SYSTEM SET ttl_index.max_sleep = '1h'; SELECT pg_reload_conf()});
for my $round (1 .. 5)
{
	$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl_index.enabled = off; SELECT pg_reload_conf()');
	TtlIndex::wait_until($node, 'b', q{SELECT phase = 'disabled' FROM ttl_index_progress WHERE datname = 'b'},
		"round $round: b's worker, asleep for up to an hour, is disabled by the configuration's off");
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET ttl_index.enabled; SELECT pg_reload_conf()');
	TtlIndex::wait_until($node, 'b', q{SELECT phase <> 'disabled' FROM ttl_index_progress WHERE datname = 'b'},
		"round $round: and is enabled again by its on");
}
$node->safe_psql('postgres', q{ALTER SYSTEM RESET ttl_index.max_sleep; SELECT pg_reload_conf()});

$node->stop;
done_testing();
