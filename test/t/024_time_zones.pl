# Time zones: a policy on a timestamp or date key reads its rows in its
# writers' zone, recorded with the policy (by default the zone of the
# session that makes it), whatever the server's configuration says.
#
#  1. Server Asia/Tokyo, database app in UTC (ALTER DATABASE ... SET
#     TimeZone): timestamp rows written with localtimestamp 30 minutes ago
#     stay under a one-hour TTL, two hours ago go; date rows of today stay
#     under a one-day TTL, of three days ago go; a timestamp-partitioned
#     table likewise, its partition of the last hour not dropped.
#  2. Server UTC, database app in America/New_York: rows aged 5 to 50
#     minutes in New York stay under a one-hour TTL.
#  3. Server Europe/Berlin, an application session that sets TimeZone UTC
#     before it makes the policy (as Rails does): rows written in UTC half
#     an hour ago stay.
#  4. A policy in a zone with summer time (America/New_York) on a server
#     in UTC: wall-clock rows inside the autumn overlap of 2025 are not
#     deleted before their instant (their later occurrence) plus the TTL.
#  5. An update from 1.3 with live policies: they get the server's zone,
#     the one the worker read them in, and the update says so.
#  6. The importer carries the zone pg_ttl_index's worker read its rows in
#     (the database's TimeZone setting), and says which.
#
# Each waits for a state: the old rows gone and a whole pass over them
# done.  The rows are there before the policy is made, so that first pass
# read every one of them: a wrong zone would have deleted the young ones
# with the old.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $node = TtlIndex::node('zones', "timezone = 'Asia/Tokyo'", 'ttl_index.error_delay = 1');
sub sql { my ($db, $q) = @_; return $node->safe_psql($db, $q); }

# server_zone(zone): the configuration's TimeZone, as the workers read it
sub server_zone
{
	my ($zone) = @_;
	sql('postgres', "ALTER SYSTEM SET timezone = '$zone'; SELECT pg_reload_conf()");
	$node->poll_query_until('postgres', "SELECT current_setting('TimeZone') = '$zone'")
	  or die "the server's zone is not $zone";
}

# passed(db, table): wait until the policy of the table has run a whole
# pass.  Every row of these tests is there before its policy is made, so
# the first pass decides each one: a row it leaves has not expired as that
# pass read it.
sub passed
{
	my ($db, $table) = @_;
	return $node->poll_query_until($db,
		"SELECT passes >= 1 FROM ttl_index_stats WHERE table_name = '$table'::regclass");
}

# --- 1. server east of the database's writers ---------------------------
sql('postgres', 'CREATE DATABASE app');
sql('postgres', "ALTER DATABASE app SET TimeZone = 'UTC'");
my ($ret, $out, $err) = $node->psql('app', q{
CREATE EXTENSION ttl_index;
CREATE TABLE ts1 (ts timestamp NOT NULL, what text);
CREATE TABLE d1 (day date NOT NULL, what text);
CREATE TABLE p1 (ts timestamp NOT NULL, what text) PARTITION BY RANGE (ts);
SELECT format('CREATE TABLE p1_recent PARTITION OF p1 FOR VALUES FROM (%L) TO (%L)',
	localtimestamp - interval '50 minutes', localtimestamp + interval '1 day') \gexec
CREATE TABLE p1_rest PARTITION OF p1 DEFAULT;
INSERT INTO ts1 VALUES (localtimestamp - interval '30 minutes', 'young'),
	(localtimestamp - interval '2 hours', 'old');
INSERT INTO d1 VALUES (current_date, 'young'), (current_date - 3, 'old');
INSERT INTO p1 VALUES (localtimestamp - interval '30 minutes', 'young'),
	(localtimestamp - interval '2 hours', 'old');
SELECT ttl_create_index('ts1', 'ts', 3600);
SELECT ttl_create_index('d1', 'day', interval '1 day');
SELECT ttl_create_index('p1', 'ts', 3600);
});
is($ret, 0, 'the policies are made in a session of the database') or diag($err);
like($err, qr/NOTICE:  column "ts" of table "ts1" is read as wall-clock time in time zone "UTC" \(UTC\+00:00 now\)\nDETAIL:  It is the time zone of this session, not the server's "Asia\/Tokyo"/,
	'ttl_create_index says which zone it recorded, as it is not the server\'s');
is(sql('app', q{SELECT string_agg(table_name || ' ' || time_zone, ', ' ORDER BY table_name::text) FROM ttl_index_stats}),
	'd1 UTC, p1 UTC, ts1 UTC', 'ttl_index_stats shows the zone of each: the database\'s');
TtlIndex::wait_until($node, 'app',
	q{SELECT NOT EXISTS (SELECT FROM ts1 WHERE what = 'old') AND NOT EXISTS (SELECT FROM d1 WHERE what = 'old')
	  AND NOT EXISTS (SELECT FROM p1 WHERE what = 'old')}, 'the old rows go');
passed('app', $_) for qw(ts1 d1 p1);
is(sql('app', q{SELECT (SELECT string_agg(what, ',') FROM ts1) || ' ' || (SELECT string_agg(what, ',') FROM d1)
	|| ' ' || (SELECT string_agg(what, ',') FROM p1)}), 'young young young',
	'the young rows stay: timestamp 30 minutes old, today\'s date, the partitioned table\'s');
is(sql('app', q{SELECT count(*) FROM pg_class WHERE relname = 'p1_recent'}), '1',
	'the partition of the last hour is not dropped');
# ttl_runner() from a session in yet another zone deletes nothing more
sql('app', q{SET TimeZone = 'Pacific/Kiritimati'; SELECT ttl_runner()});
is(sql('app', q{SELECT count(*) FROM ts1}), '1', 'nor does ttl_runner() from a session in Kiritimati');
# changed in place, like the TTL: read in Tokyo, the young row is 9 hours old
sql('app', q{SELECT ttl_create_index('ts1', 'ts', 3600, time_zone => 'Asia/Tokyo')});
is(sql('app', q{SELECT time_zone FROM ttl_index_stats WHERE table_name = 'ts1'::regclass}),
	'Asia/Tokyo', 'the zone is changed in place');
TtlIndex::wait_is($node, 'app', 'SELECT count(*) FROM ts1', '0',
	'read in Tokyo, the row written in UTC half an hour ago has expired');

# --- 2. server west of the writers' zone ----------------------------------
server_zone('UTC');
sql('postgres', 'CREATE DATABASE ny');
sql('postgres', "ALTER DATABASE ny SET TimeZone = 'America/New_York'");
sql('ny', q{
CREATE EXTENSION ttl_index;
CREATE TABLE ts2 (ts timestamp NOT NULL, what text);
INSERT INTO ts2 SELECT localtimestamp - make_interval(mins => m), 'young'
  FROM generate_series(5, 50, 5) m;
INSERT INTO ts2 VALUES (localtimestamp - interval '3 hours', 'old');
SELECT ttl_create_index('ts2', 'ts', 3600);
});
is(sql('ny', q{SELECT time_zone FROM ttl_index_stats}), 'America/New_York',
	'the policy records New York, the database\'s zone');
TtlIndex::wait_until($node, 'ny', q{SELECT NOT EXISTS (SELECT FROM ts2 WHERE what = 'old')},
	'the old row goes');
passed('ny', 'ts2');
is(sql('ny', 'SELECT count(*) FROM ts2'), '10', 'the rows 5 to 50 minutes old in New York stay');

# --- 3. the application's session sets its own zone ------------------------
server_zone('Europe/Berlin');
sql('postgres', 'CREATE DATABASE rails');
sql('rails', q{
CREATE EXTENSION ttl_index;
CREATE TABLE sessions (updated_at timestamp NOT NULL, what text);
SET TimeZone = 'UTC';
SELECT ttl_create_index('sessions', 'updated_at', 3600);
INSERT INTO sessions VALUES (localtimestamp - interval '30 minutes', 'young'),
	(localtimestamp - interval '2 hours', 'old');
});
is(sql('rails', q{SELECT time_zone FROM ttl_index_stats}), 'UTC',
	'the policy records the zone the application\'s session set');
TtlIndex::wait_until($node, 'rails', q{SELECT NOT EXISTS (SELECT FROM sessions WHERE what = 'old')},
	'the old row goes');
passed('rails', 'sessions');
is(sql('rails', q{SELECT string_agg(what, ',') FROM sessions}), 'young',
	'the row written in UTC half an hour ago stays, on a server in Berlin');

# --- 4. a zone with summer time, on a server in UTC -----------------------
# New York's autumn change of 2025: 2025-11-02 02:00 EDT becomes 01:00 EST,
# so wall-clock 01:00 to 02:00 happens twice; PostgreSQL reads such a time
# as its later occurrence (EST, UTC-5).  The cutoff: 05:45 UTC (01:45 EDT,
# the first 01:45).  Read in UTC, every row below would have expired.
server_zone('UTC');
sql('rails', q{
CREATE TABLE autumn (ts timestamp, what text);
INSERT INTO autumn VALUES ('2025-11-02 00:50', 'expired'), ('2025-11-02 01:15', 'in the overlap'),
	('2025-11-02 01:45', 'later in the overlap');
});
my $ttl_autumn = sql('rails', q{SELECT extract(epoch FROM now() - timestamptz '2025-11-02 05:45+00')::bigint});
sql('rails', "SELECT ttl_create_index('autumn', 'ts', $ttl_autumn, time_zone => 'America/New_York')");
TtlIndex::wait_until($node, 'rails', q{SELECT NOT EXISTS (SELECT FROM autumn WHERE what = 'expired')},
	'the expired row before the change goes');
passed('rails', 'autumn');
is(sql('rails', q{SELECT string_agg(what, ', ' ORDER BY ts) FROM autumn}),
	'in the overlap, later in the overlap',
	'01:15 in the overlap, read in New York as its later occurrence (06:15 UTC), stays');

# --- 5. an update from 1.3 keeps what the worker read them in ------------
server_zone('Asia/Tokyo');
sql('postgres', 'CREATE DATABASE old');
sql('old', q{
CREATE EXTENSION ttl_index VERSION '1.3';
CREATE TABLE t (ts timestamp NOT NULL);
CREATE TABLE tz (ts timestamptz NOT NULL);
SELECT ttl_create_index('t', 'ts', 3600);
SELECT ttl_create_index('tz', 'ts', 3600);
});
($ret, $out, $err) = $node->psql('old', q{SET TimeZone = 'UTC'; ALTER EXTENSION ttl_index UPDATE});
is($ret, 0, 'the update runs') or diag($err);
like($err, qr/WARNING:  ttl_index: the policy on a timestamp or date column reads its rows in time zone Asia\/Tokyo, the server's, as before/,
	'and says once which zone the policies that exist keep');
is(sql('old', q{SELECT string_agg(table_name || ' ' || coalesce(time_zone, '-'), ', ' ORDER BY table_name::text) FROM ttl_index_stats}),
	't Asia/Tokyo, tz -', 'the timestamp policy has the server\'s zone, the timestamptz one none');

# --- 6. the importer carries the zone pg_ttl_index read its rows in ------
sql('postgres', 'CREATE DATABASE imp');
sql('postgres', "ALTER DATABASE imp SET TimeZone = 'America/New_York'");
sql('imp', q{
CREATE EXTENSION ttl_index;
CREATE TABLE events (at timestamp NOT NULL);
CREATE TABLE stamps (at timestamptz NOT NULL);
CREATE TABLE copy (table_name text, column_name text, expire_after_seconds int);
INSERT INTO copy VALUES ('public.events', 'at', 3600), ('public.stamps', 'at', 3600);
});
is(sql('imp', q{SET TimeZone = 'Asia/Tokyo'; SELECT string_agg(table_name || ': ' || status, ', ' ORDER BY table_name) FROM ttl_import_pg_ttl_index('copy')}),
	'public.events: imported (read in time zone America/New_York, as pg_ttl_index\'s worker did), public.stamps: imported',
	'the importer says which zone it carried, whatever the importing session\'s');
is(sql('imp', q{SELECT string_agg(table_name || ' ' || coalesce(time_zone, '-'), ', ' ORDER BY table_name::text) FROM ttl_index_stats}),
	'events America/New_York, stamps -', 'the database\'s zone, as pg_ttl_index\'s worker read it');

$node->stop;
done_testing();
