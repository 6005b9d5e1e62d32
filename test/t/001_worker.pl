# The background worker: starts by itself, deletes expired rows and only
# those, survives restarts and crashes, serves new databases, gets out of the
# way of DROP DATABASE, and drains a large backlog.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib $FindBin::RealBin;
use TtlIndex;

my $node = TtlIndex::node('main', 'max_worker_processes = 16', 'restart_after_crash = on');

$node->safe_psql('postgres', 'CREATE DATABASE app');
my ($ret, $stdout, $stderr) = $node->psql('app', 'CREATE EXTENSION ttl_index');
is($ret, 0, 'CREATE EXTENSION succeeds');
unlike($stderr, qr/WARNING/, 'no warning when preloaded');

ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'ttl_index launcher'"),
	'launcher runs');
TtlIndex::wait_worker($node, 'app', 'worker started by itself for the database with the extension');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl_index worker' AND datname = 'postgres'"),
	'0', 'no worker stays in a database without the extension');

# expired rows vanish, unexpired ones stay
$node->safe_psql('app', q{
CREATE TABLE sessions (id serial PRIMARY KEY, created_at timestamptz, note text);
SELECT ttl_create_index('sessions', 'created_at', 3600);
INSERT INTO sessions (created_at, note) SELECT now() - interval '2 hours', 'old' FROM generate_series(1, 5000);
INSERT INTO sessions (created_at, note) SELECT now() - interval '30 minutes', 'fresh' FROM generate_series(1, 100);
INSERT INTO sessions (created_at, note) VALUES (NULL, 'never');
});
ok($node->poll_query_until('app', "SELECT count(*) = 0 FROM sessions WHERE note = 'old'"),
	'expired rows deleted by the worker');
is($node->safe_psql('app', "SELECT count(*) FROM sessions"), '101',
	'unexpired and NULL rows kept');
is($node->safe_psql('app',
	"SELECT rows_deleted, errors, passes > 0, batches > 0, last_run IS NOT NULL, lag FROM ttl_index_stats"),
	'5000|0|t|t|t|00:00:00', 'ttl_index_stats counts what the worker did');

# rows that expire a moment from now go within a couple of seconds
$node->safe_psql('app', q{
CREATE TABLE tokens (t text, expires_at timestamptz);
SELECT ttl_create_index('tokens', 'expires_at', 0);
INSERT INTO tokens SELECT 'soon', now() + interval '1 second' FROM generate_series(1, 100);
INSERT INTO tokens VALUES ('later', now() + interval '1 hour');
});
my $t0 = time();
ok($node->poll_query_until('app', "SELECT count(*) = 0 FROM tokens WHERE t = 'soon'"),
	'rows expiring in 1 s deleted');
my $waited = time() - $t0;
# the worker comes back for them at their expiry; one that missed it would
# leave them to its full pass once a minute (nothing is written after the
# insert).  10 s is a loose bound, for a busy machine.
cmp_ok($waited, '<', 10, "deleted soon after expiring in 1 s (took " . sprintf('%.1f', $waited) . " s)");
is($node->safe_psql('app', "SELECT count(*) FROM tokens"), '1', 'unexpired token kept');

# a second database is served after CREATE EXTENSION, without a restart
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (at timestamptz);
SELECT ttl_create_index('t', 'at', 60);
INSERT INTO t SELECT now() - interval '1 hour' FROM generate_series(1, 100);
});
ok($node->poll_query_until('other', "SELECT count(*) = 0 FROM t"),
	'second database served after CREATE EXTENSION');

# DROP DATABASE with a worker connected succeeds at once, without FORCE (a
# worker that did not leave would make it fail: PostgreSQL waits 5 s for
# other sessions to go; the bound on its time, loose for a busy machine, is
# that same 5 s)
$t0 = time();
($ret, $stdout, $stderr) = $node->psql('postgres', 'DROP DATABASE other');
is($ret, 0, 'DROP DATABASE succeeds while its worker runs') or diag $stderr;
cmp_ok(time() - $t0, '<', 5, 'DROP DATABASE did not wait for the worker');

# after a restart, the worker comes back by itself
$node->restart;
$node->safe_psql('app', "INSERT INTO sessions (created_at, note) SELECT now() - interval '2 hours', 'old' FROM generate_series(1, 100)");
ok($node->poll_query_until('app', "SELECT count(*) = 0 FROM sessions WHERE note = 'old'"),
	'served after a restart');

# kill -9 of the worker: crash restart, then served again
my $pid = TtlIndex::worker_pid($node, 'app');
ok($pid, 'worker running before kill -9');
kill 'KILL', $pid;
TtlIndex::wait_worker($node, 'app', 'worker back after kill -9 of the worker', $pid);
$node->safe_psql('app', "INSERT INTO sessions (created_at, note) SELECT now() - interval '2 hours', 'old' FROM generate_series(1, 100)");
ok($node->poll_query_until('app', "SELECT count(*) = 0 FROM sessions WHERE note = 'old'"),
	'served after kill -9 of the worker');

# kill -9 of an ordinary backend: crash restart of everything
my $bg = $node->background_psql('app');
my $backend = $bg->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $backend;
eval { $bg->quit; };
TtlIndex::wait_worker($node, 'app', 'worker back after kill -9 of a backend');
$node->safe_psql('app', "INSERT INTO sessions (created_at, note) SELECT now() - interval '2 hours', 'old' FROM generate_series(1, 100)");
ok($node->poll_query_until('app', "SELECT count(*) = 0 FROM sessions WHERE note = 'old'"),
	'served after kill -9 of a backend');

# DROP EXTENSION stops the worker
$node->safe_psql('postgres', 'CREATE DATABASE dropper');
$node->safe_psql('dropper', "CREATE EXTENSION ttl_index; CREATE TABLE x (at timestamptz); SELECT ttl_create_index('x', 'at', 60)");
TtlIndex::wait_worker($node, 'dropper', 'worker for a third database');
$node->safe_psql('dropper', 'DROP EXTENSION ttl_index');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'ttl_index worker' AND datname = 'dropper'"),
	'DROP EXTENSION stops the worker');

# a table with 1M expired rows drains, in bounded batches
$node->safe_psql('app', q{
CREATE TABLE big (id bigint, ts timestamptz, pad text);
INSERT INTO big SELECT g, now() - interval '1 day' + g * interval '1 ms', 'x' FROM generate_series(1, 1000000) g;
INSERT INTO big SELECT g, now() + interval '1 day', 'keep' FROM generate_series(1, 10) g;
CREATE INDEX ON big (ts);
VACUUM ANALYZE big;
});
$t0 = time();
$node->safe_psql('app', "SELECT ttl_create_index('big', 'ts', 60)");
$node->poll_query_until('app', "SELECT count(*) = 10 FROM big");
my $drain = time() - $t0;
is($node->safe_psql('app', "SELECT count(*) FROM big"), '10', '1M expired rows drained, unexpired kept');
my $batches = $node->safe_psql('app',
	"SELECT batches FROM ttl_index_stats WHERE table_name = 'big'::regclass");
cmp_ok($batches, '>=', 100, "drained in bounded batches ($batches batches)");
diag(sprintf("worker drained 1M expired rows in %.2f s", $drain));

$node->stop;
done_testing();
