# Crashes in the middle of a drain: kill -9 of the worker while it deletes a
# large backlog, an immediate shutdown while it deletes another, and kill -9
# while it is held inside a batch.  After each, no committed batch is lost,
# no batch is half applied (every deleted row has its audit row, written by
# an AFTER DELETE trigger in the same transaction, and no other row has
# one), unexpired rows are all there, and the worker comes back by itself
# and finishes the drain.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib $FindBin::RealBin;
use TtlIndex;

my $node = TtlIndex::node('crash', 'restart_after_crash = on');

# expired rows have ids below $KEEP_ID, unexpired ones from $KEEP_ID on
my $KEEP_ID = 100_000_000;
my $BACKLOG = 2_000_000;
my $expired = 0;			# expired rows inserted so far
my $keep = 0;				# unexpired rows inserted so far

sub rows_deleted
{
	return $node->safe_psql('app',
		"SELECT rows_deleted FROM ttl_index_stats WHERE table_name = 'events'::regclass");
}

# add_expired(n): insert n more expired rows (and 100 unexpired ones)
sub add_expired
{
	my ($n) = @_;
	my ($from, $to) = ($expired + 1, $expired + $n);
	my ($kfrom, $kto) = ($KEEP_ID + $keep, $KEEP_ID + $keep + 99);
	$node->safe_psql('app', qq{
INSERT INTO events SELECT g, now() - interval '2 days' + g * interval '10 us' FROM generate_series($from, $to) g;
INSERT INTO events SELECT g, now() + interval '1 day' FROM generate_series($kfrom, $kto) g;
});
	$expired += $n;
	$keep += 100;
}

# check_atomic(label): every row missing from events has exactly one audit
# row, no row still in events (or never expired) has one, and every
# unexpired row is there.  One statement, so one snapshot.  (Joins, not
# EXISTS under an OR, and no nested loop: either can mean a scan of events
# per audit row.)
sub check_atomic
{
	my ($label) = @_;
	my $r = $node->safe_psql('app', qq{
SET enable_nestloop = off;
SELECT $expired - (SELECT count(*) FROM events WHERE id < $KEEP_ID),
	   (SELECT count(*) FROM audit),
	   (SELECT count(*) - count(DISTINCT id) FROM audit),
	   (SELECT count(*) FROM audit WHERE id >= $KEEP_ID OR id > $expired)
		 + (SELECT count(*) FROM audit JOIN events USING (id)),
	   (SELECT count(*) FROM events WHERE id >= $KEEP_ID)}, timeout => 120);
	my ($missing, $audited, $dup, $bogus, $kept) = split /\|/, $r;
	is($audited, $missing,
		"$label: rows deleted ($missing) == audit rows, no half batch");
	is($dup, '0', "$label: no row audited twice");
	is($bogus, '0', "$label: no audit row for a row that is still there");
	is($kept, $keep, "$label: all $keep unexpired rows kept");
	return $missing;
}

# wait_back(oldpid): wait until the worker of app runs again, in a new process
sub wait_back
{
	my ($oldpid, $label) = @_;
	TtlIndex::wait_worker($node, 'app', "$label: worker back by itself", $oldpid);
}

# wait_drained(label, since): all expired rows gone, and a batch ended
# after `since` (epoch seconds), i.e. the new worker did the rest
sub wait_drained
{
	my ($label, $since) = @_;
	ok($node->poll_query_until('app',
		"SELECT count(*) = 0 FROM events WHERE id < $KEEP_ID"),
		"$label: the rest of the backlog drained");
	my $r = $node->safe_psql('app',
		"SELECT rows_deleted > 0, extract(epoch FROM last_run) > $since, errors FROM ttl_index_stats WHERE table_name = 'events'::regclass");
	is($r, 't|t|0', "$label: ttl_index_stats shows batches by the new worker, no error");
}

$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', q{
CREATE EXTENSION ttl_index;
CREATE TABLE audit (id int);
CREATE TABLE events (id int, ts timestamptz);
-- one audit row per deleted row, in the deleting transaction; the advisory
-- lock lets the test hold a batch between its DELETE and its commit
CREATE FUNCTION audit_deletes() RETURNS trigger
LANGUAGE plpgsql SET lock_timeout = 0 AS $$
BEGIN
	PERFORM pg_advisory_xact_lock_shared(42);
	INSERT INTO public.audit SELECT id FROM gone;
	RETURN NULL;
END
$$;
CREATE TRIGGER events_audit AFTER DELETE ON events
	REFERENCING OLD TABLE AS gone
	FOR EACH STATEMENT EXECUTE FUNCTION audit_deletes();
});
add_expired($BACKLOG);
$node->safe_psql('app', "CREATE INDEX ON events (ts); VACUUM ANALYZE events");

# ---- crash 1: kill -9 of the worker mid-drain
my $t0 = time();
$node->safe_psql('app', "SELECT ttl_create_index('events', 'ts', 3600)");
ok($node->poll_query_until('app',
	"SELECT rows_deleted >= 200000 FROM ttl_index_stats WHERE table_name = 'events'::regclass"),
	'crash 1: the worker is deleting the backlog');
my $pid = TtlIndex::worker_pid($node, 'app');
my $before = rows_deleted();
cmp_ok($before, '<', $expired, "crash 1: still draining when killed ($before deleted)");
my $log_offset = -s $node->logfile;
my $killed_at = time();
kill 'KILL', $pid;
wait_back($pid, 'crash 1');
ok($node->log_contains(qr/ttl_index worker.*terminated by signal 9/, $log_offset),
	'crash 1: the log shows the worker was killed');
ok($node->log_contains(qr/all server processes terminated; reinitializing/, $log_offset),
	'crash 1: the server went through crash recovery');
check_atomic('crash 1, right after recovery');
wait_drained('crash 1', $killed_at);
check_atomic('crash 1, drained');
diag(sprintf('crash 1 done %.1f s after the policy was created', time() - $t0));

# ---- crash 2: immediate shutdown while the worker purges a fresh backlog
my $base = rows_deleted();
add_expired($BACKLOG);
ok($node->poll_query_until('app',
	"SELECT rows_deleted >= $base + 200000 FROM ttl_index_stats WHERE table_name = 'events'::regclass"),
	'crash 2: the worker is deleting the fresh backlog');
$pid = TtlIndex::worker_pid($node, 'app');
$before = rows_deleted() - $base;
cmp_ok($before, '<', $BACKLOG, "crash 2: still draining at the shutdown ($before deleted)");
$log_offset = -s $node->logfile;
$killed_at = time();
$node->stop('immediate');
$node->start;
wait_back($pid, 'crash 2');
ok($node->log_contains(qr/database system was (interrupted|not properly shut down)/, $log_offset),
	'crash 2: the server went through crash recovery');
check_atomic('crash 2, right after recovery');
wait_drained('crash 2', $killed_at);
check_atomic('crash 2, drained');

# ---- crash 3: kill -9 of the worker while it waits inside a batch: its
# DELETE has run, its trigger waits for the advisory lock the test holds.
my $holder = $node->background_psql('app');
$holder->query_safe('SELECT pg_advisory_lock(42)');
my $first = $expired + 1;
add_expired(5000);
ok($node->poll_query_until('app', q{
SELECT count(*) = 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE a.backend_type = 'ttl_index worker' AND l.locktype = 'advisory' AND NOT l.granted}),
	'crash 3: the worker waits inside a batch, after its DELETE');
$pid = TtlIndex::worker_pid($node, 'app');
# keep the next worker idle, to see what the crash left behind
$node->safe_psql('app', 'ALTER SYSTEM SET ttl_index.enabled = off; SELECT pg_reload_conf()');
ok($node->poll_query_until('app', 'SHOW ttl_index.enabled', 'off'),
	'crash 3: ttl_index.enabled off for the next worker');
$log_offset = -s $node->logfile;
kill 'KILL', $pid;
eval { $holder->quit; };
wait_back($pid, 'crash 3');
ok($node->log_contains(qr/ttl_index worker.*terminated by signal 9/, $log_offset),
	'crash 3: the log shows the worker was killed');
is($node->safe_psql('app', qq{
SELECT (SELECT count(*) FROM events WHERE id BETWEEN $first AND $expired),
	   (SELECT count(*) FROM audit WHERE id BETWEEN $first AND $expired)}),
	'5000|0', 'crash 3: the interrupted batch rolled back entirely');
check_atomic('crash 3, after recovery');
$node->safe_psql('app', 'ALTER SYSTEM RESET ttl_index.enabled; SELECT pg_reload_conf()');
ok($node->poll_query_until('app', "SELECT count(*) = 0 FROM events WHERE id < $KEEP_ID"),
	'crash 3: the rows are deleted once the worker runs again');
is($node->safe_psql('app', "SELECT count(*) FROM audit WHERE id BETWEEN $first AND $expired"),
	'5000', 'crash 3: each audited once, by the batch that committed');
check_atomic('crash 3, drained');

ok(!$node->log_contains(qr/PANIC/, 0), 'no PANIC in the server log');

$node->stop;
done_testing();
