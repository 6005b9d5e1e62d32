# Size caps, purge windows and anonymize, with the worker.
#
# Caps: a capped table is brought down to its cap, the newest rows kept,
# and held there under a steady insert load; the rows taken before they
# expired count as rows_capped, apart from the expired ones.  A crash
# during an archiving capped drain leaves every row in the table or in the
# archive, never both, never neither.
#
# Windows: outside its window a policy with expired rows waits (the
# worker's phase and the stalled column say so, the rows stay); once a
# window holds now, they go.  A window that closes during a long pass ends
# it: the rows left wait for the next window, falling_behind is set and
# one WARNING says so.  The window's edge is placed a few seconds ahead by
# reading a timestamp column in a zone whose offset has seconds, so the
# test waits for states, not for a minute to turn.
#
# Anonymize: the worker resets the columns of expired rows, counted as
# rows_anonymized and not as deleted, and a crash during a long run of it
# leaves every row either reset in all its columns or untouched.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use TtlIndex;

my $node = TtlIndex::node('windows_caps', 'ttl_index.max_sleep = 200ms',
	'ttl_index.log_min_duration = -1');
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
-- rows put here go in the worker's next round (TtlIndex::wait_round)
CREATE TABLE mark (at timestamptz);
SELECT ttl_create_index('mark', 'at', 60);
CREATE TABLE log (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), msg text);
SELECT ttl_create_index('log', 'at', interval '1 hour', max_rows => 1000);
-- 500 rows expired an hour ago, 4500 fresh ones
INSERT INTO log (at, msg) SELECT now() - interval '2 hours' - i * interval '1 s', 'old'
  FROM generate_series(1, 500) i;
INSERT INTO log (at, msg) SELECT now() - i * interval '1 ms', 'fresh'
  FROM generate_series(1, 4500) i;
});
TtlIndex::wait_worker($node, 'postgres');

# --- caps ---------------------------------------------------------------
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM log', '1000',
	'the worker brings the capped table down to its cap');
is($node->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE msg = 'old'), min(at) > now() - interval '1 hour' FROM log}),
	'0|t', 'the expired rows went first, and the newest rows stayed');
my $newest = $node->safe_psql('postgres',
	"SELECT count(*) FROM (SELECT at FROM log ORDER BY at DESC LIMIT 1000) n WHERE at >= (SELECT min(at) FROM log)");
is($newest, '1000', 'the rows kept are the 1000 newest');
TtlIndex::wait_is($node, 'postgres',
	"SELECT rows_deleted, rows_capped FROM ttl_index_stats WHERE table_name = 'log'::regclass",
	'4000|3500', 'rows_deleted counts every row gone, rows_capped the 3500 taken before they expired');

# a steady insert load: 20 transactions of 100 rows; once each has been
# seen by a pass the table is back at the cap
for my $round (1 .. 20)
{
	$node->safe_psql('postgres',
		"INSERT INTO log (msg) SELECT 'load $round' FROM generate_series(1, 100)");
}
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM log', '1000',
	'under 2000 inserted rows the table comes back to its cap');
is($node->safe_psql('postgres', "SELECT count(*) FROM log WHERE msg LIKE 'load%'"),
	'1000', 'and it holds the newest rows: the last 1000 inserted');

# a crash during a capped drain that archives: no row is half-moved
$node->safe_psql('postgres', q{
CREATE TABLE orders (id int PRIMARY KEY, at timestamptz NOT NULL);
CREATE TABLE orders_archive (id int, at timestamptz);
INSERT INTO orders SELECT i, now() - i * interval '1 ms' FROM generate_series(1, 30000) i;
SELECT ttl_create_index('orders', 'at', NULL, max_rows => 1000, rate_limit => 3000,
						archive_table => 'orders_archive');
});
TtlIndex::wait_until($node, 'postgres', 'SELECT count(*) > 2000 FROM orders_archive',
	'the capped drain archives its first rows');
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM orders_archive),
	   (SELECT count(*) FROM orders o JOIN orders_archive a USING (id)),
	   (SELECT count(*) FROM orders_archive) < 29000}),
	'30000|0|t', 'after a crash mid-drain every row is in the table or the archive, none in both');
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM orders', '1000',
	'after the restart the drain goes on to the cap', 60);
is($node->safe_psql('postgres', 'SELECT min(id), max(id) FROM orders'), '1|1000',
	'the newest rows stay');

# --- windows ------------------------------------------------------------
# a window that opens in two hours and closes in three: expired rows wait
$node->safe_psql('postgres', q{
CREATE TABLE clicks (id int, at timestamptz);
INSERT INTO clicks SELECT i, now() - interval '1 day' FROM generate_series(1, 100) i;
SELECT ttl_create_index('clicks', 'at', 60,
	purge_window => to_char((now() AT TIME ZONE ttl_index_server_time_zone()) + interval '2 hours', 'HH24:MI')
		|| '-' || to_char((now() AT TIME ZONE ttl_index_server_time_zone()) + interval '3 hours', 'HH24:MI'));
});
TtlIndex::wait_is($node, 'postgres',
	"SELECT stalled FROM ttl_index_stats WHERE table_name = 'clicks'::regclass",
	'waiting for its purge window', 'outside its window, stalled says the rows wait for it');
TtlIndex::wait_is($node, 'postgres', 'SELECT phase FROM ttl_index_progress',
	'waiting for a purge window', 'and the worker, with nothing else to do, says it waits for a window');
is($node->safe_psql('postgres', 'SELECT count(*) FROM clicks'), '100', 'the expired rows stay');
is($node->safe_psql('postgres', q{
SELECT lower(next_window) > now(), upper(next_window) > lower(next_window)
  FROM ttl_index_stats WHERE table_name = 'clicks'::regclass}),
	't|t', 'next_window is the window to come');
# a window that holds now
$node->safe_psql('postgres', q{
SELECT ttl_create_index('clicks', 'at', 60,
	purge_window => to_char((now() AT TIME ZONE ttl_index_server_time_zone()) - interval '1 hour', 'HH24:MI')
		|| '-' || to_char((now() AT TIME ZONE ttl_index_server_time_zone()) + interval '1 hour', 'HH24:MI'));
});
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM clicks', '0',
	'once a window holds now, the rows go');
TtlIndex::wait_is($node, 'postgres',
	"SELECT coalesce(stalled, '') FROM ttl_index_stats WHERE table_name = 'clicks'::regclass",
	'', 'and nothing is said to wait any more');

# a window that closes during a pass.  The key is a timestamp read in a
# zone 1 to 60 seconds ahead of UTC, chosen so that its clock turns a
# minute 20 seconds from now: the window, from a minute ago to that turn,
# closes in 20 seconds, while a rate limit of 1000 rows a second makes the
# pass over 30,000 expired rows last 30.  The policy's first pass finds
# its table locked so that not even its oldest row can be read (as one
# does that starts before the lock of the transaction that created the
# table and its policy is released: the policy is visible at commit, the
# lock goes a moment later): what the worker remembers of that pass must
# not hide, when the window closes, how long the rows left have waited.
my $utc_s = $node->safe_psql('postgres', "SELECT floor(extract(epoch FROM now()))::bigint % 60");
my $offset = (60 - (($utc_s + 20) % 60)) % 60;
$offset = 60 if $offset == 0;
my $zone = sprintf('<+00>-00:%02d:%02d', int($offset / 60), $offset % 60);
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl_index.enabled = off; SELECT pg_reload_conf()');
TtlIndex::wait_until($node, 'postgres',
	"SELECT phase = 'disabled' FROM ttl_index_progress WHERE datname = 'postgres'",
	'the worker is disabled');
$node->safe_psql('postgres', qq{
CREATE TABLE stream (id int, at timestamp);
INSERT INTO stream SELECT i, (now() AT TIME ZONE '$zone') - interval '1 day' FROM generate_series(1, 30000) i;
SELECT ttl_create_index('stream', 'at', 60, rate_limit => 1000, time_zone => '$zone',
	purge_window => to_char((now() AT TIME ZONE '$zone') - interval '1 minute', 'HH24:MI')
		|| '-' || to_char(date_trunc('minute', now() AT TIME ZONE '$zone') + interval '1 minute', 'HH24:MI'));
});
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN');
$locker->query_safe('LOCK TABLE stream IN ACCESS EXCLUSIVE MODE');
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl_index.enabled = on; SELECT pg_reload_conf()');
TtlIndex::wait_until($node, 'postgres',
	"SELECT skipped_locked >= 1 FROM ttl_index_stats WHERE table_name = 'stream'::regclass",
	'the first pass finds the table locked');
$locker->query_safe('COMMIT');
$locker->quit;
TtlIndex::wait_until($node, 'postgres', 'SELECT count(*) < 30000 FROM stream',
	'inside its window the policy purges');
TtlIndex::wait_until($node, 'postgres',
	"SELECT falling_behind FROM ttl_index_stats WHERE table_name = 'stream'::regclass",
	'the window closes during the pass: falling_behind');
my $left = $node->safe_psql('postgres', 'SELECT count(*) FROM stream');
ok($left > 0, "expired rows are left for the next window ($left)");
# (a long pass publishes its health as it goes: wait for the pass that met
# the closed window to say so)
TtlIndex::wait_is($node, 'postgres',
	"SELECT stalled FROM ttl_index_stats WHERE table_name = 'stream'::regclass",
	'waiting for its purge window', 'stalled says why they stay');
ok(slurp_file($node->logfile) =~
	qr/WARNING:  ttl_index: the purge window of public\.stream closed with expired rows left/,
	'one WARNING says the window closed with expired rows left');
# the worker has looked at the policy again since (its schedule wakes for
# the window's opening, not before): the rows are still there
TtlIndex::wait_round($node, 'postgres', 'mark');
is($node->safe_psql('postgres', 'SELECT count(*) FROM stream'), $left,
	'no row goes outside the window');

# --- anonymize ----------------------------------------------------------
$node->safe_psql('postgres', q{
CREATE TABLE people (id int PRIMARY KEY, seen timestamptz, email text UNIQUE, name text);
INSERT INTO people SELECT i, now() - interval '3 years', 'p' || i || '@example.com', 'P' || i
  FROM generate_series(1, 100) i;
INSERT INTO people VALUES (0, now(), 'fresh@example.com', 'Fresh');
SELECT ttl_create_index('people', 'seen', interval '730 days', set_columns => $$email = NULL, name = 'erased'$$);
});
TtlIndex::wait_is($node, 'postgres',
	"SELECT count(*) FROM people WHERE email IS NULL AND name = 'erased'", '100',
	'the worker anonymizes the expired rows');
TtlIndex::wait_is($node, 'postgres',
	"SELECT rows_anonymized, rows_deleted FROM ttl_index_stats WHERE table_name = 'people'::regclass",
	'100|0', 'counted as rows_anonymized, not as deleted');
is($node->safe_psql('postgres', 'SELECT count(*), count(email) FROM people'), '101|1',
	'the rows stay, the fresh one untouched');

# a crash during a long run: every row whole
$node->safe_psql('postgres', q{
CREATE TABLE contacts (id int PRIMARY KEY, seen timestamptz, email text, phone text);
INSERT INTO contacts SELECT i, now() - interval '3 years', 'c' || i, 'tel' || i FROM generate_series(1, 30000) i;
SELECT ttl_create_index('contacts', 'seen', interval '365 days', rate_limit => 3000,
						set_columns => 'email = NULL, phone = NULL');
});
TtlIndex::wait_until($node, 'postgres', 'SELECT count(*) > 2000 FROM contacts WHERE email IS NULL',
	'a long anonymize run is under way');
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE (email IS NULL) <> (phone IS NULL)), count(*) FILTER (WHERE email IS NULL) < 30000
  FROM contacts}),
	'0|t', 'after a crash mid-run no row is half anonymized');
TtlIndex::wait_is($node, 'postgres', 'SELECT count(email) + count(phone) FROM contacts', '0',
	'after the restart the worker finishes the run', 60);

my $log = slurp_file($node->logfile);
unlike($log, qr/TRAP:|PANIC/, 'no assertion failure or PANIC in the server log');
$node->stop;
done_testing();
