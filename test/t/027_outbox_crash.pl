# An outbox survives a crash.  A table's DELETE trigger writes an outbox
# row for each row the worker deletes, and a poller (the test) delivers
# every outbox row it can see.  Batches commit without waiting for their
# WAL flush (ttl_index.synchronous_commit = off), but a batch whose table
# has user code that can write elsewhere waits for it: were its commit not
# flushed, a crash would undo an outbox row the poller had delivered, with
# its delete, and the next pass would write and deliver it again.
#
#  1. The crash window: the WAL writer is stopped (SIGSTOP), so nothing
#     flushes the WAL but the commits that wait for it.  The worker drains
#     3,000 expired rows of the outbox table and 30,000 of a control table
#     without a trigger, in alternating batches of 500, while the poller
#     records the outbox rows it sees and the control rows left.
#  2. Every server process, the postmaster and the stopped WAL writer
#     included, is killed at once (kill -9): the WAL still in shared memory
#     is lost.  The server restarts (crash recovery), with the worker off.
#  3. Every outbox row the poller saw is still there, and its source row is
#     still deleted.  The window was real: control rows the poller saw
#     deleted are back (their batches came after the outbox table's last
#     flush, and nothing flushed them).
#  4. The worker, on again, deletes them anew; every source row has exactly
#     one outbox row in the end.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use TtlIndex;

my $OUTBOXED = 3000;
my $CONTROL = 30000;

# Nothing but a waiting commit may flush the WAL in the window: no
# autovacuum, no background writer writing pages (a page written out needs
# its WAL flushed first), no checkpoint, WAL buffers that hold the whole
# window (a full buffer is written out), no helpers.  The worker starts
# disabled.
my $node = TtlIndex::node('outbox',
	'ttl_index.enabled = off', 'ttl_index.batch_size = 500', 'ttl_index.max_parallel_workers = 0',
	'autovacuum = off', 'bgwriter_lru_maxpages = 0', 'wal_buffers = 64MB',
	'checkpoint_timeout = 1h', 'max_wal_size = 4GB');
$node->safe_psql('postgres', qq{
CREATE EXTENSION ttl_index;
CREATE TABLE events (id int PRIMARY KEY, ts timestamptz NOT NULL);
CREATE TABLE outbox (src_id int NOT NULL);
CREATE FUNCTION events_outbox() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	INSERT INTO public.outbox VALUES (OLD.id);
	RETURN OLD;
END \$\$;
CREATE TRIGGER events_outbox AFTER DELETE ON events FOR EACH ROW EXECUTE FUNCTION events_outbox();
CREATE TABLE control (id int PRIMARY KEY, ts timestamptz NOT NULL);
INSERT INTO events SELECT g, now() - interval '2 days' + g * interval '1 s' FROM generate_series(1, $OUTBOXED) g;
INSERT INTO control SELECT g, now() - interval '2 days' + g * interval '1 s' FROM generate_series(1, $CONTROL) g;
SELECT ttl_create_index('events', 'ts', 3600);
SELECT ttl_create_index('control', 'ts', 3600);
CHECKPOINT;
});
TtlIndex::wait_until($node, 'postgres', q{SELECT phase = 'disabled' FROM ttl_index_progress},
	'the worker runs, disabled');

# --- 1. the window -----------------------------------------------------------

# the fields of /proc/PID/stat after the command's name: state, ppid, pgrp
sub proc_stat
{
	my ($pid) = @_;
	my $stat = eval { slurp_file("/proc/$pid/stat") } // '';
	return split / /, ($stat =~ s/^.*\) //sr);
}

# stop the WAL writer inside its wait (then it holds no lock a flush needs):
# the server is idle, so it waits; if it was caught elsewhere, try again
my $walwriter = $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'});
ok($walwriter, "the WAL writer runs ($walwriter)");
my $stopped = 0;
for (my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default; !$stopped && time() < $deadline;)
{
	kill 'STOP', $walwriter;
	# stopped once /proc says so (T); the wait event it shows is then the
	# one it was stopped in
	sleep(0.01) until ((proc_stat($walwriter))[0] // 'T') eq 'T' || time() > $deadline;
	$stopped = $node->safe_psql('postgres',
		"SELECT wait_event = 'WalWriterMain' FROM pg_stat_activity WHERE pid = $walwriter") eq 't';
	if (!$stopped)
	{
		kill 'CONT', $walwriter;
		sleep(0.05);
	}
}
ok($stopped, 'the WAL writer is stopped in its wait');

my $log_offset = -s $node->logfile;
$node->append_conf('postgresql.conf', "ttl_index.enabled = on\n");
$node->reload;

# the poller: what it saw of the outbox, and the fewest control rows it saw
# left, until both tables are drained and the worker rests
my %seen;
my $control_seen = $CONTROL;
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
my $done = 0;
while (time() < $deadline)
{
	my ($outbox, $events_left, $control_left) = split /\n/, $node->safe_psql('postgres', q{
SELECT coalesce(string_agg(src_id::text, ','), '') FROM outbox;
SELECT count(*) FROM events;
SELECT count(*) FROM control;
}), -1;
	$seen{$_} = 1 for split /,/, $outbox;
	$control_seen = $control_left if $control_left < $control_seen;
	last if $done;
	# one more look after the worker rests, so that the last is complete
	$done = $events_left == 0 && $control_left == 0 && TtlIndex::asleep($node, 'postgres');
	sleep(0.02) unless $done;
}
ok($done, 'both tables drained while the WAL writer is stopped');
note('WAL inserted, written, flushed: ' . $node->safe_psql('postgres',
	q{SELECT pg_current_wal_insert_lsn() || ', ' || pg_current_wal_lsn() || ', ' || pg_current_wal_flush_lsn()}));
is(scalar(keys %seen), $OUTBOXED, "the poller saw all $OUTBOXED outbox rows");
is($control_seen, 0, 'and the control table empty');

# --- 2. the crash ------------------------------------------------------------

# Every server process is a child of the postmaster (each in a session of
# its own).  SIGKILL leaves a process no moment to act: the children go
# first, all in one call, then the postmaster; a child that saw its
# postmaster die would exit on its own, and might write WAL as it goes.
my $pm = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
sub children { return grep { ((proc_stat($_))[1] // '') eq $pm } map { m{/proc/(\d+)$} ? $1 : () } glob('/proc/[0-9]*'); }
my @killed = children();
ok((grep { $_ == $walwriter } @killed), 'the WAL writer is among the postmaster\'s ' . scalar(@killed) . ' processes');
kill 'KILL', @killed, $pm;
# one the postmaster started meanwhile, if any
my @late = grep { my $p = $_; !grep { $_ == $p } @killed } children();
kill 'KILL', @late if @late;
push @killed, @late, $pm;
kill 'CONT', $walwriter;
# the restart needs them gone: a new postmaster refuses to start while the
# old one's pid is alive (even as a zombie) or its shared memory attached
my $gone = 0;
for (my $t = time() + $PostgreSQL::Test::Utils::timeout_default; !$gone && time() < $t;)
{
	$gone = !grep { kill 0, $_ } @killed;
	sleep(0.1) unless $gone;
}
ok($gone, 'every server process is gone');
$node->kill9;    # the node's own record: stopped
$node->append_conf('postgresql.conf', "ttl_index.enabled = off\n");
$node->start;
ok($node->log_contains(qr/database system was interrupted|was not properly shut down/, $log_offset),
	'the server went through crash recovery');

# --- 3. after the crash ----------------------------------------------------

my %there = map { $_ => 1 } split /,/,
  $node->safe_psql('postgres', q{SELECT coalesce(string_agg(src_id::text, ','), '') FROM outbox});
my @lost = grep { !$there{$_} } sort { $a <=> $b } keys %seen;
is(scalar(@lost), 0, 'every outbox row the poller saw is still there')
  or diag('lost: ' . join(',', @lost[0 .. ($#lost < 9 ? $#lost : 9)]) . (@lost > 10 ? ', ...' : ''));
my $ids = join(',', keys %seen);
is($node->safe_psql('postgres', "SELECT count(*) FROM events WHERE id = ANY ('{$ids}'::int[])"), '0',
	'and their source rows are still deleted');
my $control_back = $node->safe_psql('postgres', 'SELECT count(*) FROM control');
cmp_ok($control_back, '>', $control_seen,
	"the window was real: $control_back control rows the poller saw deleted are back (their batches were not flushed)");

# --- 4. the worker deletes them anew ------------------------------------------

$node->append_conf('postgresql.conf', "ttl_index.enabled = on\n");
$node->reload;
TtlIndex::wait_until($node, 'postgres',
	'SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM control) = 0',
	'the worker deletes what the crash brought back');
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT src_id) FROM outbox'),
	"$OUTBOXED|$OUTBOXED", 'one outbox row for each source row, none twice');

$node->stop;
done_testing();
