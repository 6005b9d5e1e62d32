# Size caps with the worker, where they went wrong in 1.4.
#
# A cap alone (expire_after NULL) deletes no row by its age: not the keys
# at the far end of an epoch's range (bigint INT64_MIN seconds, float8
# -Infinity, about -9.2e12 s and below) nor -infinity, while the table is
# under its cap; over it, the oldest go, those first.
#
# A cap on a partitioned table with a foreign partition whose server is
# down counts and cuts its other partitions, and brings them to the cap
# (postgres_fdw, where the server install has it).
#
# A never-analyzed capped table whose live-row count began again from zero
# (pg_stat_reset(), an immediate shutdown) while it kept its rows comes
# back to its cap: the cap counts for itself rather than trusting the
# count.  autovacuum is off, so that nothing measures the tables meanwhile.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $node = TtlIndex::node('caps', 'ttl_index.max_sleep = 200ms',
	'ttl_index.log_min_duration = -1', 'autovacuum = off');
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
-- rows put here go in the worker's next round (TtlIndex::wait_round)
CREATE TABLE mark (at timestamptz);
SELECT ttl_create_index('mark', 'at', 60);
});
TtlIndex::wait_worker($node, 'postgres');

# --- a cap alone keeps the keys at the far end ---------------------------
$node->safe_psql('postgres', q{
CREATE TABLE far_s (id int, k bigint);
INSERT INTO far_s VALUES (1, -9223372036854775808), (2, -9300000000000), (3, 0),
	(4, extract(epoch FROM now())::bigint);
SELECT ttl_create_index('far_s', 'k', NULL, unit => 's', max_rows => 1000);
CREATE TABLE far_f (id int, k float8);
INSERT INTO far_f VALUES (1, '-Infinity'), (2, -1e300), (3, extract(epoch FROM now()));
SELECT ttl_create_index('far_f', 'k', NULL, unit => 's', max_rows => 1000);
CREATE TABLE far_tz (id int, k timestamptz);
INSERT INTO far_tz VALUES (1, '-infinity'), (2, now());
SELECT ttl_create_index('far_tz', 'k', NULL, max_rows => 1000);
});
# two passes over each since its rows were there
TtlIndex::wait_until($node, 'postgres', q{
SELECT bool_and(passes >= 2) FROM ttl_index_stats
 WHERE table_name IN ('far_s'::regclass, 'far_f'::regclass, 'far_tz'::regclass)},
	'the worker made passes over the capped tables');
is($node->safe_psql('postgres', q{
SELECT (SELECT string_agg(id::text, ',' ORDER BY id) FROM far_s) || ' ' ||
	   (SELECT string_agg(id::text, ',' ORDER BY id) FROM far_f) || ' ' ||
	   (SELECT string_agg(id::text, ',' ORDER BY id) FROM far_tz)}),
	'1,2,3,4 1,2,3 1,2', 'under its cap, a cap alone deletes no row, whatever its key');
is($node->safe_psql('postgres', q{
SELECT string_agg(coalesce(expired_estimate, -1) || '/' || coalesce(next_expiry::text, 'none'), ' ' ORDER BY policy_id)
  FROM ttl_index_stats WHERE table_name IN ('far_s'::regclass, 'far_f'::regclass, 'far_tz'::regclass)}),
	'0/none 0/none 0/none', 'and the view says none has expired, nor will');
# over the cap (1000 newer rows on each): the far keys go first
$node->safe_psql('postgres', q{
INSERT INTO far_s SELECT i, extract(epoch FROM now())::bigint + i FROM generate_series(5, 1004) i;
INSERT INTO far_f SELECT i, extract(epoch FROM now()) + i FROM generate_series(4, 1003) i;
INSERT INTO far_tz SELECT i, now() + i * interval '1 s' FROM generate_series(3, 1002) i;
});
TtlIndex::wait_is($node, 'postgres', q{
SELECT (SELECT count(*) || ':' || min(id) FROM far_s) || ' ' ||
	   (SELECT count(*) || ':' || min(id) FROM far_f) || ' ' ||
	   (SELECT count(*) || ':' || min(id) FROM far_tz)},
	'1000:5 1000:4 1000:3', 'over its cap, the oldest rows go, the far keys first, down to the cap');

# --- a foreign partition whose server is down ----------------------------
SKIP:
{
	skip 'postgres_fdw is not installed', 2
	  unless $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_available_extensions WHERE name = 'postgres_fdw'") eq '1';
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $host = $node->host;
	$node->safe_psql('postgres', qq{
CREATE EXTENSION postgres_fdw;
CREATE SERVER down FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '$host', port '$port', dbname 'postgres');
CREATE USER MAPPING FOR PUBLIC SERVER down;
CREATE TABLE events (id int, at timestamptz NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE events_new PARTITION OF events FOR VALUES FROM ('2020-01-01') TO (MAXVALUE);
CREATE TABLE events_mid PARTITION OF events FOR VALUES FROM ('2000-01-01') TO ('2020-01-01');
CREATE FOREIGN TABLE events_old PARTITION OF events FOR VALUES FROM (MINVALUE) TO ('2000-01-01')
	SERVER down OPTIONS (table_name 'events_archive');
INSERT INTO events_new SELECT i, now() - i * interval '1 s' FROM generate_series(1, 149) i;
INSERT INTO events_mid SELECT i, timestamptz '2010-01-01' - i * interval '1 s' FROM generate_series(150, 199) i;
SELECT ttl_create_index('events', 'at', NULL, max_rows => 100);
});
	TtlIndex::wait_is($node, 'postgres',
		"SELECT count(*), min(id), max(id) FROM ONLY events_new",
		'100|1|100', 'a cap beside a foreign partition whose server is down brings the other partitions to the cap');
	is($node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM events_mid), errors, rows_capped
  FROM ttl_index_stats WHERE table_name = 'events'::regclass}),
		'0|0|99', 'the oldest went, from every partition it purges, without an error');
}

# --- rows the cap takes in the hour the clocks skip -------------------------
# A timestamp key read in Europe/Berlin, with the expiry's cut-off 20
# minutes after the clocks went forward (2025-03-30 01:00 UTC).  Keys of the
# skipped hour (02:00-03:00) are read with the offset from before the change
# (CET): 02:30 is 01:30 UTC, later than the cut-off, so not expired, though
# below the cut-off's wall-clock time (03:20 CEST).  The cap takes them and
# rows_capped counts them (it counted them as expired: oracle, 18.3, seed
# 795275762, case o3_1).
$node->safe_psql('postgres', q{
CREATE TABLE dst (id int, k timestamp);
INSERT INTO dst VALUES (1, '2025-03-30 01:40'), (2, '2025-03-30 02:30'), (3, '2025-03-30 02:45'),
	(4, now() AT TIME ZONE 'Europe/Berlin'), (5, now() AT TIME ZONE 'Europe/Berlin');
SELECT ttl_create_index('dst', 'k',
	extract(epoch FROM now() - timestamptz '2025-03-30 01:20+00')::int,
	time_zone => 'Europe/Berlin', max_rows => 2);
});
TtlIndex::wait_is($node, 'postgres', q{SELECT string_agg(id::text, ',' ORDER BY id) FROM dst}, '4,5',
	'the cap keeps the two newest rows of the table whose cut-off is near a change of clocks');
TtlIndex::wait_is($node, 'postgres', q{
SELECT rows_deleted, rows_capped FROM ttl_index_stats WHERE table_name = 'dst'::regclass},
	'3|2', 'rows_capped counts the two rows of the skipped hour, which had not expired');

# --- counts begun again: pg_stat_reset() and an immediate shutdown -------
$node->safe_psql('postgres', q{
CREATE TABLE feed (id int PRIMARY KEY, at timestamptz NOT NULL) WITH (autovacuum_enabled = off);
SELECT ttl_create_index('feed', 'at', NULL, max_rows => 1000);
INSERT INTO feed SELECT i, now() - interval '1 day' + i * interval '1 s' FROM generate_series(1, 1500) i;
});
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*), min(id) FROM feed', '1000|501',
	'the never-analyzed table comes down to its cap');
is($node->safe_psql('postgres', "SELECT reltuples FROM pg_class WHERE oid = 'feed'::regclass"),
	'-1', 'and it has never been measured');

# 900 rows while the policy is paused, then every count reset
$node->safe_psql('postgres', "SELECT ttl_pause('feed')");
TtlIndex::wait_round($node, 'postgres', 'mark');
$node->safe_psql('postgres', q{
INSERT INTO feed SELECT i, now() - interval '1 day' + i * interval '1 s' FROM generate_series(1501, 2400) i;
});
TtlIndex::wait_sessions_gone($node, 'postgres');
$node->safe_psql('postgres', 'SELECT pg_stat_reset()');
is($node->safe_psql('postgres', "SELECT n_live_tup FROM pg_stat_user_tables WHERE relid = 'feed'::regclass"),
	'0', 'after pg_stat_reset() the table is counted empty while it holds 1900 rows');
$node->safe_psql('postgres', "SELECT ttl_resume('feed')");
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*), min(id), max(id) FROM feed', '1000|1401|2400',
	'after pg_stat_reset() the table comes back to its cap, the newest rows kept');
TtlIndex::wait_is($node, 'postgres', q{
SELECT rows_capped, stalled IS NULL FROM ttl_index_stats WHERE table_name = 'feed'::regclass},
	'1400|t', 'rows_capped counts the 900 rows over the cap');

# 950 rows while paused, then an immediate shutdown: the counts are lost
$node->safe_psql('postgres', "SELECT ttl_pause('feed')");
TtlIndex::wait_round($node, 'postgres', 'mark');
$node->safe_psql('postgres', q{
INSERT INTO feed SELECT i, now() - interval '1 day' + i * interval '1 s' FROM generate_series(2401, 3350) i;
});
$node->stop('immediate');
$node->start;
TtlIndex::wait_worker($node, 'postgres', 'the worker is back after the immediate shutdown');
is($node->safe_psql('postgres', 'SELECT count(*) FROM feed'), '1950',
	'the table holds 1950 rows after the restart');
$node->safe_psql('postgres', "SELECT ttl_resume('feed')");
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*), min(id), max(id) FROM feed', '1000|2351|3350',
	'after an immediate shutdown the table comes back to its cap, the newest rows kept');

my $log = slurp_file($node->logfile);
unlike($log, qr/TRAP:|PANIC/, 'no assertion failure or PANIC in the server log');
$node->stop;
done_testing();
