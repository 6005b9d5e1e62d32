# Keeping up: while the application writes without pause, giving way
# (here at ttl_index.busy_share = 1) must not let a policy whose rows expire
# faster than the giving-way pace fall behind.
#
# Phase A, ttl_index.keep_up = off (giving way as before): every pass is
# longer than the last, ttl_index_stats says falling_behind, and after
# ttl_index.behind_warning (5 s here) the worker logs one WARNING.
# Phase B, keep_up on: the worker catches up (one LOG says so), and the age
# of the oldest expired row stays bounded and shrinks while the load goes
# on (the worker deletes 25% faster than rows expire), with delete_rate at
# or above expiry_rate.
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

# the application: 200 transactions a second, each inserting 100 rows that
# expire a second later (20,000 rows a second, several times the pace of
# giving way at busy_share = 1)
my $script = PostgreSQL::Test::Utils::tempdir() . '/insert.sql';
PostgreSQL::Test::Utils::append_to_file($script,
	"INSERT INTO events (expires_at) SELECT now() + interval '1 s' FROM generate_series(1, 100);\n");
my ($out, $err) = ('', '');
my $pgbench = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '1', '-R', '200', '-T', '90', '-f', $script,
	  '-h', $node->host, '-p', $node->port, 'postgres' ],
	'>', \$out, '2>', \$err);

my $lag_sql = q{SELECT coalesce(extract(epoch FROM now() - min(expires_at)), 0)
                  FROM events WHERE expires_at < now()};

# --- phase A: keep_up off -------------------------------------------------
TtlIndex::wait_until($node, 'postgres',
	"SELECT falling_behind FROM ttl_index_stats WHERE table_name = 'events'::regclass",
	'keep_up off: the passes keep growing and ttl_index_stats says falling_behind', 40);
my $lag_a = $node->safe_psql('postgres', $lag_sql);
my $deadline = time() + 30;
my $warned = 0;
while (!$warned && time() < $deadline)
{
	$warned = slurp_file($node->logfile) =~ /WARNING:  ttl_index: the purge of public\.events is falling behind/;
	sleep(0.2) unless $warned;
}
ok($warned, 'and the worker logs a WARNING once it has lasted ttl_index.behind_warning');
my ($rates_a) = $node->safe_psql('postgres',
	"SELECT round(expiry_rate) || ' ' || round(delete_rate) FROM ttl_index_stats WHERE table_name = 'events'::regclass");
diag("keep_up off: lag $lag_a s, rows/s expiring and deleted: $rates_a");

# --- phase B: keep_up on ----------------------------------------------------
$node->append_conf('postgresql.conf', "ttl_index.keep_up = on\n");
$node->reload;
$deadline = time() + 30;
my $recovered = 0;
while (!$recovered && time() < $deadline)
{
	$recovered = slurp_file($node->logfile) =~ /LOG:  ttl_index: the purge of public\.events keeps up again/;
	sleep(0.2) unless $recovered;
}
ok($recovered, 'keep_up on: the worker catches up and says so');
is($node->safe_psql('postgres',
	"SELECT falling_behind FROM ttl_index_stats WHERE table_name = 'events'::regclass"), 'f',
	'falling_behind is false again');

# the load goes on: after a few seconds to settle, the lag stays bounded
sleep(5);
my $max_lag = 0;
my @lags;
for (1 .. 50)
{
	my $lag = $node->safe_psql('postgres', $lag_sql);
	push @lags, sprintf('%.2f', $lag);
	$max_lag = $lag if $lag > $max_lag;
	sleep(0.2);
}
note("lag samples: @lags");
cmp_ok($max_lag, '<', 10, sprintf('the oldest expired row stays younger than 10 s (max %.2f s over 10 s)', $max_lag));
my ($first, $last) = (0, 0);
$first += $lags[$_] for 0 .. 4;
$last += $lags[$_] for -5 .. -1;
cmp_ok($last, '<', $first,
	sprintf('and the backlog shrinks: %.2f s at the start of the 10 s, %.2f s at the end', $first / 5, $last / 5));
my ($expiry, $delete) = split /\|/, $node->safe_psql('postgres',
	"SELECT expiry_rate, delete_rate FROM ttl_index_stats WHERE table_name = 'events'::regclass");
cmp_ok($expiry, '>', 5000, "the worker measures the expiry rate ($expiry rows/s)");
cmp_ok($delete, '>=', $expiry * 0.9, "and deletes at least as fast ($delete rows/s)");
my @warnings = slurp_file($node->logfile) =~ /WARNING:  ttl_index: the purge of public\.events is falling behind/g;
is(scalar(@warnings), 1, 'one WARNING in all');
diag(sprintf('keep_up on: max lag %.2f s, rows/s expiring %.0f, deleted %.0f', $max_lag, $expiry, $delete));

$pgbench->kill_kill;
$node->stop;
done_testing();
