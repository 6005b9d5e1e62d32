# Locks and DDL.  The worker never waits in a lock queue: a table held in
# ACCESS EXCLUSIVE mode (or rows held FOR UPDATE) is skipped and retried
# while the other tables of the database are purged, and nobody queues
# behind the worker.  DDL on a table in the middle of a drain (DROP TABLE,
# TRUNCATE, RENAME, RENAME COLUMN, ALTER COLUMN TYPE, DROP COLUMN) completes
# at once, the policy follows it, and the worker carries on without
# crashing.  CREATE DATABASE ... TEMPLATE and ALTER DATABASE ... RENAME of a
# database whose worker runs succeed without FORCE, and both databases are
# served afterwards.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib $FindBin::RealBin;
use TtlIndex;

# A time zone west of UTC: a timestamp (without time zone) cutoff read as
# UTC would keep rows that expired hours ago.
my $node = TtlIndex::node('ddl', "max_worker_processes = 16", "timezone = 'America/New_York'");

my $db = 'app';

# policy_stat(table, columns): a row of ttl_index_stats
sub policy_stat
{
	my ($table, $cols) = @_;
	return $node->safe_psql($db,
		"SELECT $cols FROM ttl_index_stats WHERE table_name = '$table'::regclass");
}

# timed(dbname, sql): run sql, return (ret, stderr, seconds)
sub timed
{
	my ($d, $sql) = @_;
	my $t0 = time();
	my ($ret, $stdout, $stderr) = $node->psql($d, $sql);
	return ($ret, $stderr, time() - $t0);
}

# control table: it must keep being purged whatever happens to the others
sub control_purged
{
	my ($label) = @_;
	$node->safe_psql($db,
		"INSERT INTO control SELECT now() - interval '2 hours' FROM generate_series(1, 100)");
	ok($node->poll_query_until($db,
		"SELECT count(*) = 0 FROM control WHERE ts < now() - interval '1 hour'"),
		"$label: control table still purged");
}

$node->safe_psql('postgres', "CREATE DATABASE $db");
$node->safe_psql($db, q{
CREATE EXTENSION ttl_index;
CREATE TABLE control (ts timestamptz);
SELECT ttl_create_index('control', 'ts', 3600);
INSERT INTO control SELECT now() + interval '1 day' FROM generate_series(1, 10);
-- lock_waits(pids, tbl, secs): samples of pg_locks 20 ms apart until tbl
-- has no row expired an hour ago left (or secs have passed): how many
-- samples, how many ungranted locks in them that belonged to one of pids
-- or waited for one of them, and whether tbl was drained by the end
CREATE FUNCTION lock_waits(pids int[], tbl regclass, secs float8,
						   OUT samples int, OUT waits int, OUT drained boolean)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	samples := 0;
	waits := 0;
	LOOP
		EXECUTE format('SELECT NOT EXISTS (SELECT FROM %s WHERE ts < now() - interval ''1 hour'')', tbl)
		  INTO drained;
		samples := samples + 1;
		waits := waits + (SELECT count(*) FROM pg_locks l
						   WHERE NOT l.granted
							 AND (l.pid = ANY (pids) OR pg_blocking_pids(l.pid) && pids));
		EXIT WHEN drained OR clock_timestamp() > t0 + secs * interval '1 s';
		PERFORM pg_sleep(0.02);
	END LOOP;
END
$$;
});
TtlIndex::wait_worker($node, $db, 'worker running');
my $pid = TtlIndex::worker_pid($node, $db);

# ---- a table locked by someone else is skipped, the others are purged

$node->safe_psql($db, q{
CREATE TABLE a (id int, ts timestamptz);
INSERT INTO a SELECT g, now() - interval '2 hours' FROM generate_series(1, 1000) g;
INSERT INTO a SELECT g, now() + interval '1 day' FROM generate_series(1, 10) g;
CREATE INDEX ON a (ts);
CREATE TABLE b (id int, ts timestamptz);
SELECT ttl_create_index('b', 'ts', 3600, 1000);
});
# hold a's expired rows FOR UPDATE, then give a its policy (ShareLock does
# not conflict with FOR UPDATE): the worker must skip the rows, not wait
my $holder = $node->background_psql($db);
$holder->query_safe('BEGIN');
$holder->query_safe('SELECT count(*) FROM (SELECT 1 FROM a FOR UPDATE) s');
$node->safe_psql($db, "SELECT ttl_create_index('a', 'ts', 3600)");
ok($node->poll_query_until($db,
	"SELECT rows_skipped_locked >= 1000 FROM ttl_index_stats WHERE table_name = 'a'::regclass"),
	'rows locked FOR UPDATE are skipped, not waited for');
is(policy_stat('a', 'rows_deleted'), '0', 'rows locked FOR UPDATE are not deleted');
# rows_skipped_locked counts every batch's skips; rows_locked is how many
# rows the last pass left locked: the 1,000, however many passes met them
ok($node->poll_query_until($db,
	"SELECT rows_locked = 1000 AND passes >= 2 FROM ttl_index_stats WHERE table_name = 'a'::regclass"),
	'rows_locked: the 1,000 rows the last pass left locked, after several passes');

# now ACCESS EXCLUSIVE: waits at most for the worker's current batch (a
# loose bound, for a busy machine: a worker that waited in the lock queue,
# or kept its lock from batch to batch, would hold it for good)
my $t0 = time();
$holder->query_safe('LOCK TABLE a IN ACCESS EXCLUSIVE MODE');
cmp_ok(time() - $t0, '<', 30, 'LOCK TABLE ... ACCESS EXCLUSIVE granted at once');
my $skipped = policy_stat('a', 'skipped_locked');

# b gets a backlog; sample pg_locks from the start of its drain to its end
$node->safe_psql($db, q{
INSERT INTO b SELECT g, now() - interval '2 hours' FROM generate_series(1, 300000) g;
INSERT INTO b SELECT g, now() + interval '1 day' FROM generate_series(1, 10) g;
});
ok($node->poll_query_until($db,
	"SELECT rows_deleted > 0 FROM ttl_index_stats WHERE table_name = 'b'::regclass"),
	'b is purged while a is locked');
my ($samples, $waits, $drained) = split /\|/, $node->safe_psql($db,
	"SELECT * FROM lock_waits(ARRAY[$pid], 'b', $PostgreSQL::Test::Utils::timeout_default)");
is($drained, 't', "b drained while a is locked, pg_locks sampled $samples times meanwhile");
is($waits, '0', 'no ungranted lock of the worker, and nobody waiting for it, all through the drain of b');
ok($node->poll_query_until($db,
	"SELECT count(*) = 10 FROM b"), 'b drained, its unexpired rows kept');
ok($node->poll_query_until($db,
	"SELECT skipped_locked >= $skipped + 2 FROM ttl_index_stats WHERE table_name = 'a'::regclass"),
	"skipped_locked of a grows while it is locked (was $skipped)");
is(policy_stat('a', 'rows_deleted || \'|\' || errors'), '0|0', 'a: nothing deleted, no error while locked');
$holder->query_safe('COMMIT');
$holder->quit;
ok($node->poll_query_until($db, "SELECT count(*) = 10 FROM a"),
	"a's expired rows deleted once the lock holder commits");
is(TtlIndex::worker_pid($node, $db), $pid, 'same worker process throughout');

# ---- DDL on a table in the middle of a drain

my $log_offset = -s $node->logfile;

# backlog(table, type [, with_trigger]): a table with 400k expired rows
# (and 10 unexpired) and a policy, returned once the worker is deleting
# them.  Batches of 1000 rows at a policy rate limit of 100,000 rows/s make
# the drain last four seconds (and keep helpers out), so the DDL lands in
# it.
# With a DELETE trigger, the purge takes its executor path (prepared DELETE
# by TID) instead of deleting each row version itself; DDL must work on both.
sub backlog
{
	my ($table, $type, $with_trigger) = @_;
	my $trigger = $with_trigger
	  ? "CREATE TRIGGER ${table}_del AFTER DELETE ON $table FOR EACH STATEMENT EXECUTE FUNCTION noop_trigger();"
	  : '';
	$node->safe_psql($db, qq{
CREATE TABLE $table (id int, ts $type);
INSERT INTO $table SELECT g, now() - interval '2 days' FROM generate_series(1, 400000) g;
INSERT INTO $table SELECT g, now() + interval '1 day' FROM generate_series(1, 10) g;
$trigger
SELECT ttl_create_index('$table', 'ts', 3600, 1000, rate_limit => 100000);
});
	ok($node->poll_query_until($db,
		"SELECT rows_deleted >= 10000 FROM ttl_index_stats WHERE table_name = '$table'::regclass"),
		"$table: worker deleting its backlog");
	is(policy_stat($table, "lag > '0'"), 't', "$table: still rows to delete before the DDL");
}

# ddl(label, sql): run it, it must succeed, without waiting for the drain:
# it waits at most for the batch in flight (30 s is a loose bound, for a
# busy machine; a worker that waited in the lock queue, or kept its lock
# from batch to batch, would hold the DDL for good).  The tables whose
# drain goes on after the DDL also show that it came back in the middle of
# the drain (drain_goes_on)
sub ddl
{
	my ($label, $sql) = @_;
	my ($ret, $stderr, $secs) = timed($db, $sql);
	is($ret, 0, "$label succeeds") or diag $stderr;
	cmp_ok($secs, '<', 30, sprintf("$label took %.2f s", $secs));
}

# drain_goes_on(label, table): after a DDL, the drain is still under way
# (the DDL did not wait for it), goes on without an error (a failed batch
# would make the policy rest ttl_index.error_delay), and ends.  It goes on
# at once: 10,000 more rows go within 50 s, where the rate limit lets them
# go in a tenth of a second; a worker that lost the policy would come back
# to it only when it reads its catalog again, a minute later.  (50 s is a
# loose bound, for a busy machine: with five versions' suites at once, 30 s
# was not always enough after ALTER COLUMN TYPE had rewritten 400,000 rows.)
sub drain_goes_on
{
	my ($label, $table) = @_;
	my ($lag, $rows) = split /\|/, policy_stat($table, "lag > '0', rows_deleted");
	is($lag, 't', "$label: the DDL came back with rows still to delete");
	TtlIndex::wait_until($node, $db,
		"SELECT rows_deleted >= $rows + 10000 FROM ttl_index_stats WHERE table_name = '$table'::regclass",
		"$label: the drain goes on at once", 50);
	is(policy_stat($table, 'errors'), '0', "$label: no error");
	ok($node->poll_query_until($db, "SELECT count(*) = 10 FROM $table"),
		"$label: the rest of the backlog is deleted");
}

$node->safe_psql($db,
	'CREATE FUNCTION noop_trigger() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$');
my $npolicies = $node->safe_psql($db, 'SELECT count(*) FROM ttl_index_policy');

# DROP TABLE
backlog('d_drop', 'timestamptz');
ddl('DROP TABLE mid-drain', 'DROP TABLE d_drop');
is($node->safe_psql($db, 'SELECT count(*) FROM ttl_index_policy'), $npolicies,
	'DROP TABLE: its policy is gone');
is($node->safe_psql($db,
	'SELECT count(*) FROM ttl_index_policy p WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.relid)'),
	'0', 'DROP TABLE: no policy left pointing at a missing table');
control_purged('DROP TABLE');
is(TtlIndex::worker_pid($node, $db), $pid, 'DROP TABLE: same worker process');

# TRUNCATE
backlog('d_trunc', 'timestamptz');
ddl('TRUNCATE mid-drain', 'TRUNCATE d_trunc');
is($node->safe_psql($db, 'SELECT count(*) FROM d_trunc'), '0', 'TRUNCATE: table empty');
is($node->safe_psql($db,
	"SELECT count(*) FROM ttl_index_policy WHERE relid = 'd_trunc'::regclass"),
	'1', 'TRUNCATE: policy stays');
$node->safe_psql($db, q{
INSERT INTO d_trunc SELECT g, now() - interval '3 days' FROM generate_series(1, 1000) g;
INSERT INTO d_trunc SELECT g, now() + interval '1 day' FROM generate_series(1, 10) g;
});
ok($node->poll_query_until($db, 'SELECT count(*) = 10 FROM d_trunc'),
	'TRUNCATE: expired rows inserted afterwards are deleted');
is(policy_stat('d_trunc', 'errors'), '0', 'TRUNCATE: no error');

# ALTER TABLE ... RENAME
backlog('d_ren', 'timestamptz', 1);
ddl('ALTER TABLE RENAME mid-drain', 'ALTER TABLE d_ren RENAME TO d_ren2');
is($node->safe_psql($db,
	"SELECT relid::text FROM ttl_index_policy WHERE relid = 'd_ren2'::regclass"),
	'd_ren2', 'RENAME: the policy follows the table');
drain_goes_on('RENAME', 'd_ren2');

# ALTER TABLE ... RENAME COLUMN
backlog('d_col', 'timestamptz', 1);
ddl('RENAME COLUMN mid-drain', 'ALTER TABLE d_col RENAME ts TO expires');
is($node->safe_psql($db,
	"SELECT column_name FROM ttl_index_policy WHERE relid = 'd_col'::regclass"),
	'expires', 'RENAME COLUMN: the policy follows the column');
drain_goes_on('RENAME COLUMN', 'd_col');

# ALTER COLUMN ... TYPE timestamp (from timestamptz)
backlog('d_type', 'timestamptz', 1);
ddl('ALTER COLUMN TYPE timestamp mid-drain',
	'ALTER TABLE d_type ALTER COLUMN ts TYPE timestamp');
is($node->safe_psql($db,
	"SELECT count(*) FROM ttl_index_policy WHERE relid = 'd_type'::regclass"),
	'1', 'ALTER COLUMN TYPE: policy stays');
drain_goes_on('ALTER COLUMN TYPE', 'd_type');
# rows that expired two hours ago, local time (a cutoff read as UTC would
# keep them for hours more)
$node->safe_psql($db,
	"INSERT INTO d_type SELECT g, localtimestamp - interval '3 hours' FROM generate_series(1, 100) g");
ok($node->poll_query_until($db, 'SELECT count(*) = 10 FROM d_type'),
	'ALTER COLUMN TYPE: rows that expired 2 hours ago (local time) are deleted');
is(policy_stat('d_type', 'errors'), '0', 'ALTER COLUMN TYPE: no error');
is($node->safe_psql($db, q{
SELECT indexrelid::regclass::text FROM pg_index
 WHERE indrelid = 'd_type'::regclass
   AND obj_description(indexrelid, 'pg_class') = 'created by ttl_index; dropped by ttl_drop_index()'}),
	'd_type_ts_ttl_idx', 'ALTER COLUMN TYPE: the rebuilt index is still marked as made by ttl_create_index');
$node->safe_psql($db, q{SELECT ttl_drop_index('d_type', 'ts')});
is($node->safe_psql($db, q{SELECT count(*) FROM pg_index WHERE indrelid = 'd_type'::regclass}),
	'0', 'ALTER COLUMN TYPE: ttl_drop_index then drops the rebuilt index');

# DROP COLUMN of the TTL column
backlog('d_dropcol', 'timestamptz');
ddl('DROP COLUMN mid-drain', 'ALTER TABLE d_dropcol DROP COLUMN ts');
is($node->safe_psql($db,
	"SELECT count(*) FROM ttl_index_policy WHERE relid = 'd_dropcol'::regclass"),
	'0', 'DROP COLUMN: its policy is gone');

control_purged('after all the DDL');
is(TtlIndex::worker_pid($node, $db), $pid, 'after all the DDL: same worker process');
my $log = slurp_file($node->logfile, $log_offset);
unlike($log, qr/terminated by signal|PANIC|server process .* was terminated/,
	'no crash in the server log');

# ---- database-level commands against a database whose worker runs

# Each waits for the worker to leave: at once, since it is idle by now.  A
# worker that did not leave would make it fail (PostgreSQL waits 5 s for
# other sessions to go, then raises an error), so its success is the test;
# the time it took is shown (on a busy machine the copy alone took more
# than 5 s).

my ($ret, $stderr, $secs) = timed('postgres', "CREATE DATABASE app_copy TEMPLATE $db");
is($ret, 0, 'CREATE DATABASE ... TEMPLATE succeeds while the worker runs') or diag $stderr;
note(sprintf('CREATE DATABASE ... TEMPLATE took %.2f s', $secs));
TtlIndex::wait_worker($node, 'app_copy', 'the copy gets its own worker');
$node->safe_psql('app_copy',
	"INSERT INTO control SELECT now() - interval '2 hours' FROM generate_series(1, 100)");
ok($node->poll_query_until('app_copy',
	"SELECT count(*) = 0 FROM control WHERE ts < now() - interval '1 hour'"),
	"the copy's expired rows are deleted");
control_purged('after CREATE DATABASE ... TEMPLATE');

($ret, $stderr, $secs) = timed('postgres', "ALTER DATABASE $db RENAME TO app2");
is($ret, 0, 'ALTER DATABASE ... RENAME succeeds while the worker runs') or diag $stderr;
note(sprintf('ALTER DATABASE ... RENAME took %.2f s', $secs));
$db = 'app2';
TtlIndex::wait_worker($node, 'app2', 'the worker comes back to the renamed database');
control_purged('after ALTER DATABASE ... RENAME');

$node->stop;
done_testing();
