# What an operator sees: ttl_index_stats after a known purge (counters,
# backlog estimate, error message and who may read it), ttl_index_progress
# and pg_stat_activity during a drain, the log lines of a pass and of a
# failure, ttl_index_stats_reset(), counters kept across a clean restart and
# dropped by a crash, and the postgres_exporter queries.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use TtlIndex;

my $node = TtlIndex::node('monitoring', 'ttl_index.log_min_duration = 0', 'restart_after_crash = on');

$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
CREATE ROLE watcher LOGIN;
CREATE TABLE known (id bigserial, ts timestamptz);
INSERT INTO known (ts) SELECT now() - interval '2 hours' FROM generate_series(1, 25000);
INSERT INTO known (ts) SELECT now() + interval '10 minutes' FROM generate_series(1, 10);
SELECT ttl_create_index('known', 'ts', 3600);
});

# a known purge, as the stats view reports it
ok($node->poll_query_until('postgres', "SELECT rows_deleted = 25000 FROM ttl_index_stats"),
	'the worker deleted the 25000 expired rows');
is($node->safe_psql('postgres', q{
SELECT batches >= 1, passes >= 1, errors, last_error IS NULL, lag, expired_estimate,
	   next_expiry BETWEEN now() + interval '69 minutes' AND now() + interval '71 minutes',
	   time_spent > interval '0', last_run > now() - interval '1 minute', stats_reset IS NULL
  FROM ttl_index_stats}),
	't|t|0|t|00:00:00|0|t|t|t|t',
	'counters, lag, estimate and next expiry after the purge');
is($node->safe_psql('postgres', 'SELECT count(*) FROM known'), '10', 'unexpired rows kept');
# the worker reports its deletes to the cumulative statistics while it runs
# (not only at exit): autovacuum decides from these counts when to vacuum
ok($node->poll_query_until('postgres',
		"SELECT n_tup_del = 25000 FROM pg_stat_user_tables WHERE relname = 'known'"),
	'pg_stat_user_tables counts the rows the worker deleted');

ok($node->wait_for_log(qr/LOG:  ttl_index: deleted 25000 rows from public\.known in \d+ ms/),
	'the pass is summarised in the log (log_min_duration = 0)');

# the backlog estimate, on a backlog the worker is told to leave alone
# (once it says it is disabled, it deletes nothing more)
$node->safe_psql('postgres', q{
ALTER SYSTEM SET ttl_index.enabled = off;
SELECT pg_reload_conf();
});
TtlIndex::wait_until($node, 'postgres',
	"SELECT phase = 'disabled' FROM ttl_index_progress WHERE datname = 'postgres'",
	'the worker is disabled');
$node->safe_psql('postgres', q{
INSERT INTO known (ts) SELECT now() - interval '3 hours' + i * interval '1 s'
  FROM generate_series(1, 50000) i;
ANALYZE known;
});
my ($lag_ok, $estimate, $expired) = split /\|/, $node->safe_psql('postgres',
	"SELECT lag > interval '1 hour 59 minutes', expired_estimate,
			(SELECT count(*) FROM known WHERE ts < now() - interval '1 hour')
	   FROM ttl_index_stats");
is($lag_ok, 't', 'lag shows the oldest expired row');
cmp_ok($expired, '>', 7000, "a backlog of $expired expired rows among 50010");
cmp_ok(abs($estimate - $expired), '<=', 0.05 * $expired,
	"expired_estimate within 5% of the real backlog ($estimate for $expired)");

# ttl_index_progress and pg_stat_activity while the worker drains it.  The
# worker, woken at once by the reload, would otherwise give way to the
# 1.5M-row INSERT just committed (busy_share, 011_yield.pl) and spend most
# of the drain in the phase 'yielding', which names no pass: this section
# lets it run flat out, and sets busy_share back once the backlog is gone.
$node->safe_psql('postgres', q{
INSERT INTO known (ts) SELECT now() - interval '3 hours' FROM generate_series(1, 1500000);
ALTER SYSTEM SET ttl_index.enabled = on;
ALTER SYSTEM SET ttl_index.busy_share = 100;
SELECT pg_reload_conf();
});
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM ttl_index_progress
 WHERE datname = 'postgres' AND phase = 'deleting' AND table_name = 'public.known'
   AND pass_rows_deleted > 0 AND pass_batches > 0 AND batch_row_limit > 0
   AND pass_started <= now()}, 't'),
	'ttl_index_progress shows the table, the pass so far and the batch in flight');
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type = 'ttl_index worker' AND application_name = 'ttl_index worker'
   AND query = 'ttl_index: purging expired rows of public.known'}, 't'),
	'pg_stat_activity names the table being purged');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM known WHERE ts < now() - interval '1 hour'"),
	'backlog drained');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET ttl_index.busy_share; SELECT pg_reload_conf()');
ok($node->poll_query_until('postgres', q{
SELECT phase = 'sleeping' AND policy_id IS NULL AND table_name IS NULL AND batch_started IS NULL
  FROM ttl_index_progress WHERE datname = 'postgres'}),
	'ttl_index_progress shows the worker sleeping once done');
# PostgreSQL 17 and later let the worker name its wait events
my $sleeping = $node->safe_psql('postgres', 'SHOW server_version_num') >= 170000
  ? 'TtlIndexSleeping' : 'Extension';
ok($node->poll_query_until('postgres', qq{
SELECT wait_event_type = 'Extension' AND wait_event = '$sleeping'
  FROM pg_stat_activity WHERE backend_type = 'ttl_index worker'}),
	"the sleeping worker waits under the $sleeping wait event");

# a failure of the policy (not of some rows: a trigger that writes to a
# table that was dropped): logged once as autovacuum logs a failed table,
# the original error (message, query, context) with a context line naming
# the table and the SQLSTATE; counted, message kept
$node->safe_psql('postgres', q{
CREATE TABLE parent (id int PRIMARY KEY, ts timestamptz);
CREATE TABLE parent_log (id int);
CREATE FUNCTION parent_log() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO public.parent_log VALUES (OLD.id); RETURN OLD; END $$;
CREATE TRIGGER parent_log BEFORE DELETE ON parent FOR EACH ROW EXECUTE FUNCTION parent_log();
DROP TABLE parent_log;
INSERT INTO parent VALUES (1, now() - interval '1 day');
SELECT ttl_create_index('parent', 'ts', 60);
});
ok($node->wait_for_log(
		qr/LOG:  relation "public\.parent_log" does not exist[^\n]*\n(?:[^\n]*\n)*?[^\n]*QUERY:  INSERT INTO public\.parent_log VALUES \(OLD\.id\)\n(?:[^\n]*\n)*?[^\n]*while purging expired rows of table public\.parent, column ts\n\s*ttl_index: a batch of the policy on table public\.parent failed \(SQLSTATE 42P01\); the policy rests ttl_index\.error_delay\n/),
	'a failed batch is logged as raised, its query and context kept, with the table and the SQLSTATE');
like($node->safe_psql('postgres', "SELECT errors || ' ' || last_error_sqlstate || ' ' || last_error FROM ttl_index_stats WHERE table_name = 'parent'::regclass"),
	qr/^[1-9]\d* 42P01 relation "public.parent_log" does not exist/,
	'the failure is counted and its SQLSTATE and message kept');
is($node->safe_psql('postgres', 'SELECT count(*) FROM parent'), '1', 'the referenced row stays');
# another role sees the counters, not the message nor the backlog
is($node->safe_psql('postgres',
		"SET ROLE watcher; SELECT errors > 0, last_error IS NULL, lag IS NULL, expired_estimate IS NULL FROM ttl_index_stats WHERE table_name = 'parent'::regclass"),
	't|t|t|t', 'a role that does not own the table sees counts but not the message or the backlog');
is($node->safe_psql('postgres',
		"GRANT pg_read_all_stats TO watcher; SET ROLE watcher; SELECT last_error IS NOT NULL, lag IS NOT NULL FROM ttl_index_stats WHERE table_name = 'parent'::regclass"),
	't|t', 'pg_read_all_stats sees the message and the backlog');
$node->safe_psql('postgres', q{
SELECT ttl_drop_index('parent', 'ts');
REVOKE pg_read_all_stats FROM watcher;
});

# counters survive a clean restart (first stop the ramp of rows that
# expire one a second, and let the worker end its run, so the counters of
# its last batch are in and they hold still)
$node->safe_psql('postgres', 'TRUNCATE known');
TtlIndex::wait_asleep($node, 'postgres');
my ($rows, $batches, $passes) = split /\|/, $node->safe_psql('postgres',
	"SELECT rows_deleted, batches, passes FROM ttl_index_stats WHERE table_name = 'known'::regclass");
cmp_ok($rows, '>', 1500000, 'counters before the restart');
$node->restart;
# the restarted worker may already have run an empty pass: counts only grow
is($node->safe_psql('postgres',
		"SELECT rows_deleted, batches >= $batches, passes >= $passes FROM ttl_index_stats WHERE table_name = 'known'::regclass"),
	"$rows|t|t", "counters kept across a clean restart ($rows rows, $batches batches)");

# an immediate shutdown ends in crash recovery: the counters are not kept,
# as for PostgreSQL's own statistics (they could count lost batches)
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres',
		"SELECT rows_deleted FROM ttl_index_stats WHERE table_name = 'known'::regclass"),
	'0', 'counters start from zero after an immediate shutdown');

# reset: one table, by a superuser or a role granted EXECUTE
my ($ret, $out, $err) = $node->psql('postgres', 'SET ROLE watcher; SELECT ttl_index_stats_reset()');
like($err, qr/permission denied for function ttl_index_stats_reset/, 'reset refused to an ordinary role');
$node->safe_psql('postgres', q{
GRANT EXECUTE ON FUNCTION ttl_index_stats_reset(regclass) TO watcher;
SET ROLE watcher;
SELECT ttl_index_stats_reset('known');
});
is($node->safe_psql('postgres',
		"SELECT rows_deleted, batches, passes, stats_reset > now() - interval '1 minute' FROM ttl_index_stats WHERE table_name = 'known'::regclass"),
	'0|0|0|t', 'reset zeroes the counters of the table and stamps the time');

# a crash drops the counters too
$node->safe_psql('postgres', q{
INSERT INTO known (ts) SELECT now() - interval '3 hours' FROM generate_series(1, 100);
});
ok($node->poll_query_until('postgres', "SELECT rows_deleted = 100 FROM ttl_index_stats WHERE table_name = 'known'::regclass"),
	'counting again after the reset');
my $victim = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl_index worker'");
kill 'KILL', $victim;
# (the crash may undo the worker's last batch, which did not wait for its
# WAL flush: its rows are back, expired, and are deleted and counted again)
ok($node->poll_query_until('postgres',
		"SELECT rows_deleted IN (0, 100) AND stats_reset IS NULL FROM ttl_index_stats WHERE table_name = 'known'::regclass"),
	'after a crash the counters start from zero');

# the view on many policies: it probes each table without keeping its
# locks, so it fits in the lock table (this node: max_connections = 10)
$node->safe_psql('postgres', q{
CREATE DATABASE many;
});
$node->safe_psql('many', q{
CREATE EXTENSION ttl_index;
DO $$ BEGIN FOR i IN 1..1500 LOOP
	EXECUTE format('CREATE TABLE t%s (ts timestamptz)', i);
	EXECUTE format('INSERT INTO t%s VALUES (now() - interval ''2 hours''), (now())', i);
	PERFORM ttl_create_index(format('t%s', i)::regclass, 'ts', 3600);
	IF i % 100 = 0 THEN COMMIT; END IF;
END LOOP; END $$;
ANALYZE;
});
($ret, $out, $err) = $node->psql('many', q{
BEGIN;
SELECT count(*), count(lag), count(expired_estimate) FROM ttl_index_stats;
SELECT count(*) < 100 FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;});
is($out, "1500|1500|1500
t", 'ttl_index_stats on 1500 policies, holding no lock per policy') or diag($err);

# the postgres_exporter queries run and return every metric they declare;
# counters end in _total; a figure that is not known is absent (the row is
# not returned), never NULL (NaN in Prometheus); stalled_reason labels
# ttl_index_stalled alone
open(my $fh, '<', "$FindBin::RealBin/../../monitoring/postgres_exporter.yml")
  or die "cannot read postgres_exporter.yml: $!";
my (%query, %metrics, %usage, $section, $in_query, $metric);
while (my $line = <$fh>)
{
	next if $line =~ /^\s*#/;
	if ($line =~ /^(\w+):\s*$/) { $section = $1; $in_query = 0; next; }
	if ($line =~ /^  query: \|/) { $in_query = 1; next; }
	if ($line =~ /^  metrics:/) { $in_query = 0; next; }
	if ($in_query) { $query{$section} .= $line; next; }
	if ($line =~ /^    - (\w+):/) { $metric = $1; push @{ $metrics{$section} }, $metric; next; }
	$usage{"${section}_$metric"} = $1 if $line =~ /^        usage: "(\w+)"/;
}
close $fh;
is_deeply([ sort keys %query ],
	[ sort qw(ttl ttl_index ttl_index_expired ttl_index_in ttl_index_last_run_age ttl_index_lag
		ttl_index_max ttl_index_max_size ttl_index_next_expiry ttl_index_next_window ttl_index_workers) ],
	'exporter file has its queries');
my @counters = grep { $usage{$_} eq 'COUNTER' } sort keys %usage;
is_deeply([ grep { !/_total$/ } @counters ], [], 'every counter of the exporter ends in _total');
is_deeply([ map { s/_stalled_reason$//r } grep { /stalled_reason$/ } sort keys %usage ], [ 'ttl' ],
	'stalled_reason is a label of ttl_index_stalled alone');
ok(exists $usage{ttl_index_stalled} && $usage{ttl_index_stalled} eq 'GAUGE', 'the gauge is named ttl_index_stalled');
foreach my $s (sort keys %query)
{
	my ($r, $o, $e) = $node->psql('postgres', "\\pset tuples_only off\n\\pset footer off\n\\pset null NULL\n$query{$s}",
		extra_params => [ '-X' ]);
	is($r, 0, "exporter query $s runs") or diag($e);
	my ($header, @rows) = split /\n/, $o;
	is_deeply([ split /\|/, $header ], $metrics{$s}, "exporter query $s returns the declared metrics");
	my @cols = split /\|/, $header;
	my $nulls = 0;
	foreach my $row (@rows)
	{
		my @v = split /\|/, $row, -1;
		for my $i (0 .. $#cols)
		{
			$nulls++ if $usage{"${s}_$cols[$i]"} ne 'LABEL' && defined $v[$i] && $v[$i] eq 'NULL';
		}
	}
	is($nulls, 0, "exporter query $s returns no NULL value (" . scalar(@rows) . " rows)");
}

$node->stop;
done_testing();
