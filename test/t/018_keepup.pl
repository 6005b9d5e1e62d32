# Keeping up: while the application writes without pause, giving way
# (here at ttl_index.busy_share = 1) must not let a policy whose rows expire
# faster than the giving-way pace fall behind.
#
# Phase A, ttl_index.keep_up = off (giving way as before): every pass is
# longer than the last, ttl_index_stats says falling_behind, and after
# ttl_index.behind_warning (5 s here) the worker logs one WARNING.
# Phase B, keep_up on: the worker catches up (one LOG says so), and the age
# of the oldest expired row shrinks, to under 2 s, while the load goes on
# (the worker deletes 25% faster than rows expire), never growing much
# past what it was when the worker caught up, with delete_rate at or
# above expiry_rate.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use TtlIndex;

my $node = TtlIndex::node('keepup', 'ttl_index.busy_share = 1',
	'ttl_index.keep_up = off', 'ttl_index.behind_warning = 5s',
	'ttl_index.log_min_duration = -1');
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
CREATE TABLE events (id bigserial PRIMARY KEY, expires_at timestamptz NOT NULL);
SELECT ttl_create_index('events', 'expires_at', 0);
});

# the application: 100 transactions a second, each inserting 100 rows that
# expire a second later (10,000 rows a second, two to three times the pace
# of giving way at busy_share = 1, 3,500 to 4,500 rows a second in CI),
# until the test ends (the time is a ceiling, not a schedule).  At 20,000
# rows a second, with the other versions' suites running beside it, the
# worker with keep_up on had too little of the two cores to catch up.
my $script = PostgreSQL::Test::Utils::tempdir() . '/insert.sql';
PostgreSQL::Test::Utils::append_to_file($script,
	"INSERT INTO events (expires_at) SELECT now() + interval '1 s' FROM generate_series(1, 100);\n");
my ($out, $err) = ('', '');
my $pgbench = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '1', '-R', '100', '-T', '600', '-f', $script,
	  '-h', $node->host, '-p', $node->port, 'postgres' ],
	'>', \$out, '2>', \$err);

my $lag_sql = q{SELECT coalesce(extract(epoch FROM now() - min(expires_at)), 0)
                  FROM events WHERE expires_at < now()};

# --- phase A: keep_up off -------------------------------------------------
# log_says(re): a test that the server log comes to match re
sub log_says
{
	my ($re, $name) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	my $seen = 0;
	while (!$seen && time() < $deadline)
	{
		$seen = slurp_file($node->logfile) =~ $re;
		sleep(0.2) unless $seen;
	}
	return ok($seen, $name);
}

TtlIndex::wait_until($node, 'postgres',
	"SELECT falling_behind FROM ttl_index_stats WHERE table_name = 'events'::regclass",
	'keep_up off: the passes keep growing and ttl_index_stats says falling_behind');
my $lag_a = $node->safe_psql('postgres', $lag_sql);
log_says(qr/WARNING:  ttl_index: the purge of public\.events is falling behind/,
	'and the worker logs a WARNING once it has lasted ttl_index.behind_warning');
my ($rates_a) = $node->safe_psql('postgres',
	"SELECT round(expiry_rate) || ' ' || round(delete_rate) FROM ttl_index_stats WHERE table_name = 'events'::regclass");
diag("keep_up off: lag $lag_a s, rows/s expiring and deleted: $rates_a");

# --- phase B: keep_up on ----------------------------------------------------
$node->append_conf('postgresql.conf', "ttl_index.keep_up = on\n");
$node->reload;
log_says(qr/LOG:  ttl_index: the purge of public\.events keeps up again/,
	'keep_up on: the worker catches up and says so');
my $lag_b = $node->safe_psql('postgres', $lag_sql);
TtlIndex::wait_is($node, 'postgres',
	"SELECT falling_behind FROM ttl_index_stats WHERE table_name = 'events'::regclass", 'f',
	'falling_behind is false again');

# the load goes on and the backlog shrinks: sampled until the oldest
# expired row is younger than 2 s (a pass every half second or so, once
# caught up; keep_up off, the age only grows), it never grew much past its
# age when the worker caught up (2 s more is loose, for a busy machine)
my $max_lag = 0;
my @lags;
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
my $lag;
do
{
	sleep(0.2) if @lags;
	$lag = $node->safe_psql('postgres', $lag_sql);
	push @lags, sprintf('%.2f', $lag);
	$max_lag = $lag if $lag > $max_lag;
} while ($lag >= 2 && time() < $deadline);
note("lag samples: @lags");
cmp_ok($lag, '<', 2, sprintf('the backlog shrinks: the oldest expired row is %.2f s old, from %.2f s when the worker caught up',
	$lag, $lag_b));
cmp_ok($max_lag, '<', $lag_b + 2, sprintf('and it never grew meanwhile (at most %.2f s)', $max_lag));
my ($expiry, $delete) = split /\|/, $node->safe_psql('postgres',
	"SELECT expiry_rate, delete_rate FROM ttl_index_stats WHERE table_name = 'events'::regclass");
cmp_ok($expiry, '>', 5000, "the worker measures the expiry rate ($expiry rows/s)");
cmp_ok($delete, '>=', $expiry * 0.9, "and deletes at least as fast ($delete rows/s)");
# one WARNING per time it falls behind, not one per pass: on a busy machine
# keep_up on may fall behind once more (and say it keeps up again), so up
# to two, over many passes
my @warnings = slurp_file($node->logfile) =~ /WARNING:  ttl_index: the purge of public\.events is falling behind/g;
my @again = slurp_file($node->logfile) =~ /LOG:  ttl_index: the purge of public\.events keeps up again/g;
my $passes = $node->safe_psql('postgres', "SELECT passes FROM ttl_index_stats WHERE table_name = 'events'::regclass");
ok(@warnings >= 1 && @warnings <= 2 && @warnings <= @again + 1 && $passes >= 3,
	sprintf('one WARNING each time it fell behind: %d WARNING(s), %d keeps up again, %d passes',
		scalar(@warnings), scalar(@again), $passes));
diag(sprintf('keep_up on: max lag %.2f s, rows/s expiring %.0f, deleted %.0f', $max_lag, $expiry, $delete));

$pgbench->kill_kill;
$node->stop;
done_testing();
