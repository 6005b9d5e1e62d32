# The expiry semantics of 1.2, applied by the background worker (never by
# ttl_runner()): per-row TTLs, filters, Unix-epoch columns in each unit,
# partitioned tables (whole expired partitions dropped, the rest deleted row
# by row, where dropping would skip a trigger or a foreign key), archiving,
# soft delete, a policy's own rate limit, ttl_pause()/ttl_resume() and
# ttl_index.enabled.  Every section checks both sides: the rows that must go
# are gone, and the rows that must stay (not yet expired, NULL, not matching
# the filter, on a paused table) are all still there; and that
# ttl_index_stats counts what was done and reads the lag and the next
# expiry through the policy's key, unit and filter.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use FindBin;
use lib $FindBin::RealBin;
use TtlIndex;

my $start = time();

my $node = TtlIndex::node('semantics');

$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', q{
CREATE EXTENSION ttl_index;
-- its expired rows show that the worker went through its schedule
CREATE TABLE marker (ts timestamptz NOT NULL);
SELECT ttl_create_index('marker', 'ts', 60);
});
TtlIndex::wait_worker($node, 'app', 'the worker of the database runs');

# sql(query): its output in the database app
sub sql
{
	return $node->safe_psql('app', shift);
}

# wait_until(query, name[, seconds]), wait_is(query, expected, name[,
# seconds]), wait_round(name): TtlIndex's, in the database app
sub wait_until { return TtlIndex::wait_until($node, 'app', @_); }
sub wait_is { return TtlIndex::wait_is($node, 'app', @_); }
sub wait_round { return TtlIndex::wait_round($node, 'app', 'marker', @_); }

# stats_query(table, columns): the query of those columns of the table's
# ttl_index_stats row; stats(table, columns): its output
sub stats_query
{
	my ($table, $cols) = @_;
	return "SELECT $cols FROM ttl_index_stats WHERE table_name = '$table'::regclass";
}

sub stats
{
	return sql(stats_query(@_));
}

# backlog_is(table, from, to, name): a test that ttl_index_stats shows no
# lag (nothing expired left) and the next expiry between now() + from and
# now() + to, as read from the policy's index through its key, unit and
# filter
sub backlog_is
{
	my ($table, $from, $to, $name) = @_;
	return is(stats($table,
			"lag, next_expiry BETWEEN now() + interval '$from' AND now() + interval '$to'"),
		'00:00:00|t', $name);
}

###########################################################################
# 1. Per-row TTL: a row expires at column + ttl + expire_after.
###########################################################################

# integer seconds; expire_after is one hour on top of the row's own TTL
sql(q{
CREATE TABLE rt_int (id serial, created_at timestamptz, ttl integer, note text);
INSERT INTO rt_int (created_at, ttl, note)
	SELECT now() - interval '2 hours', 10, 'short' FROM generate_series(1, 100);
-- its own TTL is over (50 min ago), but not the hour on top of it
INSERT INTO rt_int (created_at, ttl, note)
	SELECT now() - interval '1 hour', 600, 'grace' FROM generate_series(1, 5);
INSERT INTO rt_int (created_at, ttl, note)
	SELECT now() - interval '2 hours', 86400, 'long' FROM generate_series(1, 5);
INSERT INTO rt_int (created_at, ttl, note)
	SELECT now() - interval '2 hours', NULL, 'null ttl' FROM generate_series(1, 5);
INSERT INTO rt_int (created_at, ttl, note) VALUES (NULL, 10, 'null column');

CREATE TABLE rt_iv (id serial, created_at timestamptz, ttl interval, note text);
INSERT INTO rt_iv (created_at, ttl, note)
	SELECT now() - interval '2 hours', interval '10 minutes', 'short' FROM generate_series(1, 100);
-- a month counts as 30 days: expired 23 hours ago
INSERT INTO rt_iv (created_at, ttl, note)
	SELECT now() - interval '31 days', interval '1 month', 'short' FROM generate_series(1, 10);
INSERT INTO rt_iv (created_at, ttl, note)
	SELECT now() - interval '1 hour', interval '10 minutes', 'grace' FROM generate_series(1, 5);
INSERT INTO rt_iv (created_at, ttl, note)
	SELECT now() - interval '29 days', interval '1 month', 'long' FROM generate_series(1, 5);
INSERT INTO rt_iv (created_at, ttl, note)
	SELECT now() - interval '2 hours', interval '2 days', 'long' FROM generate_series(1, 5);
INSERT INTO rt_iv (created_at, ttl, note)
	SELECT now() - interval '2 hours', NULL, 'null ttl' FROM generate_series(1, 5);

SELECT ttl_create_index('rt_int', 'created_at', 3600, ttl_column => 'ttl');
SELECT ttl_create_index('rt_iv', 'created_at', interval '1 hour', ttl_column => 'ttl');
});

foreach my $t ('rt_int', 'rt_iv')
{
	wait_until("SELECT count(*) = 0 FROM $t WHERE note = 'short'",
		"$t: rows past their own TTL plus expire_after deleted by the worker");
}
is(sql(q{SELECT note, count(*) FROM rt_int GROUP BY note ORDER BY note}),
	"grace|5\nlong|5\nnull column|1\nnull ttl|5",
	'rt_int: rows within expire_after of their TTL, with a long TTL, a NULL TTL or a NULL column all kept');
is(sql(q{SELECT note, count(*) FROM rt_iv GROUP BY note ORDER BY note}),
	"grace|5\nlong|10\nnull ttl|5",
	'rt_iv: interval TTLs: rows within expire_after, with a long TTL (or a month not yet over) or a NULL TTL kept');
wait_is(q{SELECT string_agg(rows_deleted::text || '/' || errors, ',' ORDER BY table_name::text)
			FROM ttl_index_stats WHERE table_name IN ('rt_int'::regclass, 'rt_iv'::regclass)},
	'100/0,110/0', 'ttl_index_stats: exactly the expired rows counted, no error');
foreach my $t ('rt_int', 'rt_iv')
{
	like(sql("SELECT indexdef FROM pg_indexes WHERE tablename = '$t'"),
		qr/USING btree \((\w+\.)?ttl_expires_at\(created_at, (ttl|\(ttl\)::bigint)\)\)$/,
		"$t: the per-row TTL is served by an expression index on ttl_expires_at(created_at, ttl)");
}
is(stats('rt_int', 'ttl_column'), 'ttl', 'ttl_index_stats shows the ttl_column');
backlog_is('rt_int', '9 minutes', '11 minutes',
	'rt_int: no lag; next expiry in 10 min (created_at + ttl + expire_after of the grace rows)');
backlog_is('rt_iv', '9 minutes', '11 minutes', 'rt_iv: no lag; next expiry in 10 min');

###########################################################################
# 2. Filter: only rows matching it expire; the index made for it is partial.
###########################################################################

sql(q{
CREATE TABLE jobs (id serial, status text, finished_at timestamptz);
INSERT INTO jobs (status, finished_at) SELECT 'done', now() - interval '2 hours' FROM generate_series(1, 200);
INSERT INTO jobs (status, finished_at) SELECT 'running', now() - interval '2 hours' FROM generate_series(1, 50);
INSERT INTO jobs (status, finished_at) SELECT NULL, now() - interval '2 hours' FROM generate_series(1, 10);
INSERT INTO jobs (status, finished_at) SELECT 'done', now() - interval '10 minutes' FROM generate_series(1, 30);
SELECT ttl_create_index('jobs', 'finished_at', 3600, filter => 'status = ''done''');

-- an existing partial index that fits the filter is used, not duplicated
CREATE TABLE jobs2 (id serial, status text, finished_at timestamptz);
INSERT INTO jobs2 (status, finished_at) SELECT 'done', now() - interval '2 hours' FROM generate_series(1, 100);
INSERT INTO jobs2 (status, finished_at) SELECT 'failed', now() - interval '2 hours' FROM generate_series(1, 20);
CREATE INDEX jobs2_done ON jobs2 (finished_at) WHERE status = 'done';
SELECT ttl_create_index('jobs2', 'finished_at', 3600, filter => 'status = ''done''');
});
wait_until(q{SELECT count(*) = 0 FROM jobs WHERE status = 'done' AND finished_at < now() - interval '1 hour'},
	'jobs: expired done rows deleted by the worker');
is(sql(q{SELECT coalesce(status, 'NULL'), count(*) FROM jobs GROUP BY 1 ORDER BY 1}),
	"NULL|10\ndone|30\nrunning|50",
	'jobs: expired rows not matching the filter (other status, NULL status) and unexpired done rows kept');
wait_is(stats_query('jobs', 'rows_deleted'), '200', 'jobs: rows_deleted counts the 200 done rows');
like(sql(q{SELECT indexdef FROM pg_indexes WHERE tablename = 'jobs'}),
	qr/\(finished_at\) WHERE \(status = 'done'::text\)/,
	'the index ttl_create_index made for the immutable filter is partial');
wait_until(q{SELECT count(*) = 0 FROM jobs2 WHERE status = 'done'}, 'jobs2: done rows deleted');
is(sql(q{SELECT (SELECT count(*) FROM jobs2), (SELECT string_agg(indexname, ',') FROM pg_indexes WHERE tablename = 'jobs2')}),
	'20|jobs2_done', 'jobs2: failed rows kept; the existing partial index served the policy, none was added');
like(stats('jobs', 'filter'), qr/status = 'done'/, 'ttl_index_stats shows the filter');
backlog_is('jobs', '49 minutes', '51 minutes',
	'jobs: no lag although expired running rows remain (the filter excludes them); next expiry is the fresh done rows\'');

# the same filter, served by a plain index the table already had: 1500
# expired rows that do not match come first in it
sql(q{
CREATE TABLE jobs_full (id serial, status text, finished_at timestamptz);
CREATE INDEX jobs_full_finished_at ON jobs_full (finished_at);
INSERT INTO jobs_full (status, finished_at) SELECT 'running', now() - interval '3 hours' FROM generate_series(1, 1500);
INSERT INTO jobs_full (status, finished_at) SELECT 'done', now() - interval '2 hours' FROM generate_series(1, 100);
INSERT INTO jobs_full (status, finished_at) SELECT 'done', now() - interval '10 minutes' FROM generate_series(1, 30);
SELECT ttl_create_index('jobs_full', 'finished_at', 3600, filter => 'status = ''done''');
});
wait_until(q{SELECT count(*) = 0 FROM jobs_full WHERE status = 'done' AND finished_at < now() - interval '1 hour'},
	'jobs_full: expired done rows deleted through the plain index');
is(sql(q{SELECT status, count(*) FROM jobs_full GROUP BY 1 ORDER BY 1}), "done|30\nrunning|1500",
	'jobs_full: the 1500 expired running rows and the 30 fresh done rows kept');
backlog_is('jobs_full', '49 minutes', '51 minutes',
	'jobs_full: no lag; next expiry is the fresh done rows\', behind 1500 expired rows the filter excludes');

# and the worker's own look for the next expiry: a done row that expires in
# 8 s, behind 1500 running rows that come first in the plain index (they
# are due in 5 s); nobody writes to the table after the policy is made.
# The worker must find the done row's expiry behind them and come back for
# it then: a worker that missed it would find the row only at the full pass
# it makes every minute, nothing written or not.  So it must be gone
# within 20 s of its expiry (a loose bound, for a busy machine: the worker
# looks again within ttl_index.max_sleep, 1 s).  The time it is seen gone
# is the test's, after the worker's: a bound on the worker's time.
sql(q{
CREATE TABLE jobs_late (id serial, status text, finished_at timestamptz);
CREATE INDEX jobs_late_finished_at ON jobs_late (finished_at);
INSERT INTO jobs_late (status, finished_at) SELECT 'running', now() + interval '5 seconds' FROM generate_series(1, 1500);
INSERT INTO jobs_late (status, finished_at) VALUES ('done', now() + interval '8 seconds');
});
my $late_due = time() + 8;
sql(q{SELECT ttl_create_index('jobs_late', 'finished_at', 0, filter => 'status = ''done''')});
wait_until(q{SELECT count(*) = 0 FROM jobs_late WHERE status = 'done'}, 'jobs_late: the done row is deleted');
my $late = time() - $late_due;
cmp_ok($late, '<', 20, sprintf('jobs_late: within 20 s of its expiry (seen gone %.1f s after it)', $late));
is(sql(q{SELECT count(*) FROM jobs_late WHERE status = 'running'}), '1500',
	'jobs_late: the running rows (expired but excluded by the filter) kept');

###########################################################################
# 3. Unix-epoch columns, one table per type and unit, expire_after 1 hour.
###########################################################################

my %units = (
	u_int4_s  => ['integer', 's', 'extract(epoch FROM %s)::integer'],
	u_int8_ms => ['bigint', 'ms', '(extract(epoch FROM %s) * 1000)::bigint'],
	u_int8_ns => ['bigint', 'ns', '(extract(epoch FROM %s) * 1000000000)::bigint'],
	u_num_s   => ['numeric', 's', 'extract(epoch FROM %s)'],
	u_f8_ms   => ['double precision', 'ms', '(extract(epoch FROM %s) * 1000)::float8'],);
foreach my $t (sort keys %units)
{
	my ($type, $unit, $expr) = @{ $units{$t} };
	my $v = sub { sprintf($expr, "now() - interval '$_[0]'") };
	sql(qq{
CREATE TABLE $t (id serial, at $type, note text);
INSERT INTO $t (at, note) SELECT ${\ $v->('2 hours') }, 'old' FROM generate_series(1, 50);
INSERT INTO $t (at, note) SELECT ${\ $v->('3610 seconds') }, 'old' FROM generate_series(1, 5);
INSERT INTO $t (at, note) SELECT ${\ $v->('3480 seconds') }, 'keep: expires in 2 min' FROM generate_series(1, 5);
INSERT INTO $t (at, note) SELECT ${\ $v->('30 minutes') }, 'keep: within the hour' FROM generate_series(1, 5);
INSERT INTO $t (at, note) SELECT ${\ $v->('-1 hour') }, 'keep: future' FROM generate_series(1, 5);
INSERT INTO $t (at, note) VALUES (NULL, 'keep: null');
SELECT ttl_create_index('$t', 'at', 3600, unit => '$unit');
});
}
foreach my $t (sort keys %units)
{
	wait_until("SELECT count(*) = 0 FROM $t WHERE note = 'old'",
		"$t ($units{$t}[0], unit $units{$t}[1]): rows older than expire_after deleted");
	is(sql("SELECT count(*) FROM $t WHERE note LIKE 'keep%'"), '16',
		"$t: rows expiring in 2 minutes, within the hour, in the future and NULL kept");
	wait_is(stats_query($t, 'rows_deleted || \'/\' || unit'), "55/$units{$t}[1]",
		"$t: rows_deleted is 55, unit shown");
	backlog_is($t, '1 minute', '2 minutes 5 seconds', "$t: no lag; next expiry in 2 minutes");
}

###########################################################################
# 4. Partitioned by month on the TTL column.
###########################################################################

# Months relative to this one (m); the cutoff, now - expire_after, is the
# 16th of the month m-2, so:
#   ev_trig [m-6, m-5)  expired, but a row-level DELETE trigger: rows deleted one by one
#   ev_fk   [m-5, m-4)  expired, but referenced by a foreign key: rows deleted one by one
#   ev_m4   [m-4, m-3)  expired: dropped
#   ev_m3   [m-3, m-2)  expired: dropped
#   ev_m2   [m-2, m-1)  half expired: its expired rows deleted
#   ev_m1, ev_m0        not expired
#   ev_def  (default)   expired rows (m-10) deleted, future ones (m+5) kept
sql(q{
CREATE TABLE trig_log (id bigint);
CREATE FUNCTION log_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.trig_log VALUES (OLD.id);
	RETURN OLD;
END $$;

CREATE TABLE events (id bigint, at timestamptz NOT NULL, payload text) PARTITION BY RANGE (at);
DO $$
DECLARE
	m timestamptz := date_trunc('month', now());
	part record;
BEGIN
	FOR part IN SELECT * FROM (VALUES ('ev_trig', -6), ('ev_fk', -5), ('ev_m4', -4), ('ev_m3', -3),
									  ('ev_m2', -2), ('ev_m1', -1), ('ev_m0', 0)) v(name, k)
	LOOP
		EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
					   part.name, m + part.k * interval '1 month', m + (part.k + 1) * interval '1 month');
	END LOOP;
	CREATE TABLE ev_def PARTITION OF events DEFAULT;

	INSERT INTO events SELECT g, m - interval '6 months' + interval '1 day' + g * interval '1 minute', 'trig'
	  FROM generate_series(1, 40) g;
	INSERT INTO events SELECT 1000 + g, m - interval '5 months' + interval '1 day' + g * interval '1 minute', 'fk'
	  FROM generate_series(1, 30) g;
	INSERT INTO events SELECT 2000 + g, m - interval '4 months' + interval '1 day' + g * interval '1 hour', 'm4'
	  FROM generate_series(1, 100) g;
	INSERT INTO events SELECT 3000 + g, m - interval '3 months' + interval '1 day' + g * interval '1 hour', 'm3'
	  FROM generate_series(1, 100) g;
	INSERT INTO events SELECT 4000 + g, m - interval '2 months' + interval '1 day' + g * interval '1 minute', 'm2 expired'
	  FROM generate_series(1, 60) g;
	INSERT INTO events SELECT 5000 + g, m - interval '2 months' + interval '25 days' + g * interval '1 minute', 'm2 kept'
	  FROM generate_series(1, 40) g;
	INSERT INTO events SELECT 6000 + g, m - interval '1 month' + interval '1 day', 'm1'
	  FROM generate_series(1, 20) g;
	INSERT INTO events SELECT 7000 + g, m + interval '1 day', 'm0'
	  FROM generate_series(1, 20) g;
	INSERT INTO events SELECT 8000 + g, m - interval '10 months', 'default expired'
	  FROM generate_series(1, 25) g;
	INSERT INTO events SELECT 9000 + g, m + interval '5 months', 'default kept'
	  FROM generate_series(1, 15) g;
END $$;

CREATE TRIGGER ev_trig_log AFTER DELETE ON ev_trig FOR EACH ROW EXECUTE FUNCTION log_delete();
ALTER TABLE ev_fk ADD PRIMARY KEY (id);
CREATE TABLE ev_refs (eid bigint REFERENCES ev_fk (id) ON DELETE CASCADE);
INSERT INTO ev_refs SELECT id FROM ev_fk;

SELECT ttl_create_index('events', 'at',
	extract(epoch FROM now() - (date_trunc('month', now()) - interval '2 months' + interval '15 days'))::bigint);
});
# First wait for the drops through the catalog alone: a poll of events
# itself locks its partitions, and a drop that finds one locked leaves it
# for a later pass (the rows are deleted meanwhile), which made this test
# fail when the poll came at the worker's first batch.
wait_until(q{SELECT count(*) = 6 FROM pg_inherits WHERE inhparent = 'events'::regclass},
	'events: the wholly expired partitions are dropped');
wait_until(q{SELECT count(*) = 0 FROM events
			  WHERE at < date_trunc('month', now()) - interval '2 months' + interval '15 days'},
	'events: every expired row is gone');
is(sql(q{SELECT payload, count(*) FROM events GROUP BY 1 ORDER BY 1}),
	"default kept|15\nm0|20\nm1|20\nm2 kept|40",
	'events: unexpired rows of the half-expired, later and default partitions kept');
is(sql(q{SELECT string_agg(c.relname, ',' ORDER BY c.relname)
		   FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		  WHERE i.inhparent = 'events'::regclass}),
	'ev_def,ev_fk,ev_m0,ev_m1,ev_m2,ev_trig',
	'the two wholly expired partitions were dropped; the half-expired, trigger, foreign-key and default ones were not');
is(sql(q{SELECT count(*) FROM pg_class WHERE relname IN ('ev_m4', 'ev_m3')}), '0',
	'ev_m4 and ev_m3 no longer exist');
wait_is(stats_query('events', 'partitions_dropped || \'/\' || errors'), '2/0',
	'partitions_dropped counts the two, no error');
backlog_is('events', '10 days', '10 days 2 minutes',
	'events: no lag; next expiry, over all partitions, is that of the oldest kept row of ev_m2');
is(sql(q{SELECT count(*), count(DISTINCT id), min(id), max(id) FROM trig_log}), '40|40|1|40',
	'the DELETE trigger of the expired partition fired once for each of its 40 rows');
is(sql(q{SELECT count(*) FROM ev_refs}), '0',
	'the rows of the partition a foreign key references were deleted, with ON DELETE CASCADE');
my $ev_deleted = stats('events', 'rows_deleted');
diag("events: rows_deleted = $ev_deleted (rows deleted one by one: 40 + 30 + 60 + 25 = 155)");
cmp_ok($ev_deleted, '>=', 155, 'rows_deleted counts at least the rows deleted one by one');

# a partition created after the policy is covered too
sql(q{
DO $$
DECLARE
	m timestamptz := date_trunc('month', now());
BEGIN
	EXECUTE format('CREATE TABLE ev_late PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
				   m - interval '8 months', m - interval '7 months');
	INSERT INTO events SELECT 10000 + g, m - interval '8 months' + g * interval '1 hour', 'late'
	  FROM generate_series(1, 50) g;
END $$;
});
wait_until(q{SELECT count(*) = 0 FROM pg_class WHERE relname = 'ev_late'},
	'a wholly expired partition created after the policy is dropped as well');
wait_is(stats_query('events', 'partitions_dropped'), '3', 'partitions_dropped is 3');
is(sql(q{SELECT count(*) FROM events}), '95', 'events: the 95 unexpired rows still there');

# Where dropping a wholly expired partition would not be the same as the
# policy, it is not dropped: a filter (rows not matching must stay), an
# archive (rows must move), a soft delete (rows must stay, marked), a
# per-row TTL (a row's own TTL can be longer than the partition is old).
# Each table has an old partition [m-4, m-3), wholly expired by its column,
# with 30 'tmp' rows (ttl 60 s) and 20 'keep' rows (ttl 10^9 s, 31 years),
# and a current one with 10 rows of now; expire_after is one day.
my %pcases = (
	p_filter  => "filter => 'kind = ''tmp'''",
	p_archive => "action => 'archive', archive_table => 'p_archive_to'",
	p_soft    => "soft_delete_column => 'deleted_at'",
	p_ttl     => "ttl_column => 'ttl'",);
sql(q{CREATE TABLE p_archive_to (id int, at timestamptz, kind text, ttl int, deleted_at timestamptz)});
foreach my $t (sort keys %pcases)
{
	sql(qq{
CREATE TABLE $t (id int, at timestamptz NOT NULL, kind text, ttl int, deleted_at timestamptz)
	PARTITION BY RANGE (at);
DO \$\$
DECLARE
	m timestamptz := date_trunc('month', now());
BEGIN
	EXECUTE format('CREATE TABLE ${t}_old PARTITION OF $t FOR VALUES FROM (%L) TO (%L)',
				   m - interval '4 months', m - interval '3 months');
	EXECUTE format('CREATE TABLE ${t}_cur PARTITION OF $t FOR VALUES FROM (%L) TO (%L)',
				   m, m + interval '1 month');
	INSERT INTO $t SELECT g, m - interval '4 months' + g * interval '1 hour', 'tmp', 60
	  FROM generate_series(1, 30) g;
	INSERT INTO $t SELECT 100 + g, m - interval '4 months' + g * interval '1 hour', 'keep', 1000000000
	  FROM generate_series(1, 20) g;
	INSERT INTO $t SELECT 200 + g, now(), 'now', 60 FROM generate_series(1, 10) g;
END \$\$;
SELECT ttl_create_index('$t', 'at', 86400, $pcases{$t});
});
}
wait_until(q{SELECT count(*) = 0 FROM p_filter WHERE kind = 'tmp'}, 'p_filter: the expired rows matching the filter deleted');
wait_until(q{SELECT count(*) = 0 FROM p_archive WHERE kind <> 'now'}, 'p_archive: the expired rows moved out');
wait_until(q{SELECT count(*) = 0 FROM p_soft WHERE kind <> 'now' AND deleted_at IS NULL}, 'p_soft: the expired rows marked');
wait_until(q{SELECT count(*) = 0 FROM p_ttl WHERE kind = 'tmp'}, 'p_ttl: the rows past their own TTL deleted');
is(sql(q{SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_class c
		  WHERE c.relname LIKE 'p\_%\_old' OR c.relname LIKE 'p\_%\_cur'}),
	'p_archive_cur,p_archive_old,p_filter_cur,p_filter_old,p_soft_cur,p_soft_old,p_ttl_cur,p_ttl_old',
	'no partition of these four tables was dropped');
is(sql(q{SELECT string_agg(table_name::text || '=' || partitions_dropped || '/' || errors, ',' ORDER BY table_name::text)
		   FROM ttl_index_stats WHERE table_name::text LIKE 'p\_%'}),
	'p_archive=0/0,p_filter=0/0,p_soft=0/0,p_ttl=0/0', 'partitions_dropped is 0 for each, no error');
is(sql(q{SELECT kind, count(*) FROM p_filter GROUP BY 1 ORDER BY 1}), "keep|20\nnow|10",
	'p_filter: the expired rows not matching the filter and the unexpired ones kept');
is(sql(q{SELECT (SELECT count(*) FROM p_archive), (SELECT count(*) FROM p_archive_to),
				(SELECT count(*) FROM p_archive_to a JOIN p_archive_old o USING (id)),
				(SELECT count(DISTINCT id) FROM p_archive_to WHERE id <= 120)}),
	'10|50|0|50', 'p_archive: the 50 expired rows are in the archive table, the 10 unexpired in place');
is(sql(q{SELECT count(*), count(*) FILTER (WHERE deleted_at = at + interval '1 day') FROM p_soft WHERE kind <> 'now'}),
	'50|50', 'p_soft: the 50 expired rows still there, marked at + expire_after');
is(sql(q{SELECT count(*) FROM p_soft WHERE kind = 'now' AND deleted_at IS NULL}), '10',
	'p_soft: the unexpired rows unmarked');
is(sql(q{SELECT kind, count(*) FROM p_ttl GROUP BY 1 ORDER BY 1}), "keep|20\nnow|10",
	'p_ttl: rows of the expired partition whose own TTL is long kept');
wait_is(q{SELECT string_agg(table_name::text || '=' || rows_deleted || '/' || rows_archived || '/' || rows_soft_deleted,
							',' ORDER BY table_name::text)
			FROM ttl_index_stats WHERE table_name::text LIKE 'p\_%'},
	'p_archive=50/50/0,p_filter=30/0/0,p_soft=0/0/50,p_ttl=30/0/0',
	'the counters of the four: rows deleted / archived / soft-deleted');

###########################################################################
# 5. Archive: expired rows move to the archive table, none lost.
###########################################################################

sql(q{
CREATE TABLE orders (id serial, created_at timestamptz, amount numeric, note text);
CREATE TABLE orders_archive (note text, amount numeric, id integer, created_at timestamptz,
							 archived_at timestamptz DEFAULT now());
INSERT INTO orders (created_at, amount, note)
	SELECT now() - interval '2 hours' - g * interval '1 second', g * 1.25, 'order ' || g
	  FROM generate_series(1, 5000) g;
INSERT INTO orders (created_at, amount, note)
	SELECT now() - interval '10 minutes', g, 'fresh ' || g FROM generate_series(1, 50) g;
CREATE TABLE orders_expected AS SELECT * FROM orders WHERE created_at < now() - interval '1 hour';
});
sql(q{SELECT ttl_create_index('orders', 'created_at', 3600, batch_size => 100,
							   action => 'archive', archive_table => 'orders_archive')});
# while the worker moves them, 100 at a time, source + archive stays 5050
# (sampled from the start of the move to its end)
my ($samples, $bad) = (0, 0);
for (my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default; time() < $deadline;)
{
	my ($total, $left) = split /\|/, sql(q{
		SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM orders_archive),
			   (SELECT count(*) FROM orders WHERE created_at < now() - interval '1 hour')});
	$samples++;
	$bad++ if $total != 5050;
	last if $left == 0;
	sleep(0.02);
}
is($bad, 0, "orders + orders_archive stayed 5050 in all $samples samples taken during the move");
is(sql(q{SELECT count(*), count(*) FILTER (WHERE note LIKE 'fresh%') FROM orders}), '50|50',
	'orders: only the 50 unexpired rows left');
is(sql(q{SELECT count(*), count(archived_at) FROM orders_archive}), '5000|5000',
	'orders_archive: the 5000 expired rows, its extra column filled by its default');
is(sql(q{SELECT count(*) FROM (
			(SELECT id, created_at, amount, note FROM orders_archive
			 EXCEPT ALL SELECT id, created_at, amount, note FROM orders_expected)
			UNION ALL
			(SELECT id, created_at, amount, note FROM orders_expected
			 EXCEPT ALL SELECT id, created_at, amount, note FROM orders_archive)) d}),
	'0', 'the archived rows are exactly the expired ones, with the same values (columns matched by name)');
wait_is(stats_query('orders', 'rows_archived || \'/\' || rows_deleted || \'/\' || action || \'/\' || archive_table::text'),
	'5000/5000/archive/orders_archive', 'rows_archived and rows_deleted count the 5000, action shown');
backlog_is('orders', '49 minutes', '51 minutes', 'orders: no lag; next expiry in 50 min');

###########################################################################
# 6. Soft delete, through the positional call of pg_ttl_index.
###########################################################################

sql(q{
CREATE TABLE sess (id serial, created_at timestamptz, deleted_at timestamptz);
INSERT INTO sess (created_at)
	SELECT now() - interval '2 hours' - g * interval '1.5 seconds' FROM generate_series(1, 300) g;
INSERT INTO sess (created_at) SELECT now() - interval '10 minutes' FROM generate_series(1, 20);
-- soft-deleted by the application already: left as they are
INSERT INTO sess (created_at, deleted_at)
	SELECT now() - interval '3 hours', '2001-02-03 04:05:06+00' FROM generate_series(1, 5);
SELECT ttl_create_index('sess', 'created_at', 3600, 5000, 'deleted_at');
});
wait_until(q{SELECT count(*) = 0 FROM sess WHERE deleted_at IS NULL AND created_at < now() - interval '1 hour'},
	'sess: every expired row marked');
is(sql(q{SELECT count(*),
				count(*) FILTER (WHERE created_at < now() - interval '1 hour' AND deleted_at IS NOT NULL),
				count(*) FILTER (WHERE created_at > now() - interval '1 hour' AND deleted_at IS NULL)
		   FROM sess}),
	'325|305|20', 'sess: no row deleted; expired rows marked, unexpired ones not');
is(sql(q{SELECT count(*), count(*) FILTER (WHERE deleted_at = created_at + interval '3600 seconds')
		   FROM sess WHERE deleted_at IS DISTINCT FROM '2001-02-03 04:05:06+00'
					   AND created_at < now() - interval '1 hour'}),
	'300|300', 'deleted_at is created_at + expire_after exactly, on every one of the 300 rows');
is(sql(q{SELECT count(*) FROM sess WHERE deleted_at = '2001-02-03 04:05:06+00'}), '5',
	'rows soft-deleted beforehand keep their deleted_at');
is(sql(q{SELECT max(id) FROM sess}), '325', 'sess: 325 rows so far');
wait_is(stats_query('sess', 'rows_soft_deleted || \'/\' || rows_deleted || \'/\' || action || \'/\' || soft_delete_column || \'/\' || batch_size'),
	'300/0/soft_delete/deleted_at/5000',
	'rows_soft_deleted counts the 300, rows_deleted none; batch size and soft_delete_column from the positional call');
# later passes over the table leave the marked rows alone: two expired rows
# inserted afterwards, one at a time, are each marked by a pass of its own
my $fingerprint = q{SELECT md5(string_agg(id || ':' || coalesce(deleted_at::text, '-') || ':' || xmin || ':' || ctid,
										   ',' ORDER BY id)) FROM sess WHERE id <= 325};
my $before = sql($fingerprint);
for my $n (1 .. 2)
{
	sql(q{INSERT INTO sess (created_at) VALUES (now() - interval '2 hours')});
	wait_until(q{SELECT count(*) = 0 FROM sess WHERE deleted_at IS NULL AND created_at < now() - interval '1 hour'},
		"sess: a row expired later is marked, by pass $n after the first");
}
is(sql($fingerprint), $before, 'two passes later no row was touched again: same deleted_at, xmin and ctid');
wait_is(stats_query('sess', 'rows_soft_deleted'), '302', 'rows_soft_deleted is 302, the 300 counted once');
backlog_is('sess', '49 minutes', '51 minutes',
	'sess: no lag (soft-deleted rows are done with); next expiry in 50 min');

# the same through a plain index the table already had, which keeps the
# marked rows: 1500 of them come first in it
sql(q{
CREATE TABLE sess_full (id serial, created_at timestamptz, deleted_at timestamptz);
CREATE INDEX sess_full_created_at ON sess_full (created_at);
INSERT INTO sess_full (created_at) SELECT now() - interval '3 hours' FROM generate_series(1, 1500);
INSERT INTO sess_full (created_at) SELECT now() - interval '10 minutes' FROM generate_series(1, 20);
SELECT ttl_create_index('sess_full', 'created_at', 3600, 5000, 'deleted_at');
});
wait_until(q{SELECT count(*) = 0 FROM sess_full WHERE deleted_at IS NULL AND created_at < now() - interval '1 hour'},
	'sess_full: every expired row marked');
wait_is(stats_query('sess_full', 'rows_soft_deleted'), '1500', 'sess_full: rows_soft_deleted is 1500');
backlog_is('sess_full', '49 minutes', '51 minutes',
	'sess_full: no lag; next expiry in 50 min, behind 1500 soft-deleted rows');

###########################################################################
# 7. A policy's own rate limit.
###########################################################################

sql(q{
CREATE TABLE rl_slow (ts timestamptz);
INSERT INTO rl_slow SELECT now() - interval '1 day' FROM generate_series(1, 2000);
CREATE TABLE rl_fast (ts timestamptz);
INSERT INTO rl_fast SELECT now() - interval '1 day' FROM generate_series(1, 20000);
CREATE INDEX ON rl_slow (ts);
CREATE INDEX ON rl_fast (ts);
});
my $t0 = time();
sql(q{
BEGIN;
SELECT ttl_create_index('rl_slow', 'ts', 60, rate_limit => 200);
SELECT ttl_create_index('rl_fast', 'ts', 60);
COMMIT;
});
wait_until('SELECT count(*) = 0 FROM rl_fast', 'the policy without a limit drains its 20000 rows');
my $fast = time() - $t0;
# (a loose bound, for a busy machine: held to rl_slow's limit it would take
# 100 s; alone it takes a fraction of one)
cmp_ok($fast, '<', 50, sprintf('in %.1f s, far faster than 200 rows/s would allow (100 s)', $fast));
wait_until('SELECT count(*) < 2000 FROM rl_slow', 'the rate-limited policy deletes too');
# its rate over at least 3 s since the policy was made: a bucket of one
# second (200 rows) full at the start, refilled at 200/s; the batch that
# empties it may take up to rate/5 = 40 rows more.  A bound whatever the
# load: a slow worker only deletes less.  (The window is measured from
# before the policy was made to after the count.)
sleep(3 - (time() - $t0)) if time() - $t0 < 3;
my $slow_left = sql('SELECT count(*) FROM rl_slow');
my $elapsed = time() - $t0;
my $slow_done = 2000 - $slow_left;
my $max = 200 * $elapsed + 200 + 40;
cmp_ok($slow_done, '<=', $max,
	sprintf('rate_limit 200: %d rows deleted in %.1f s, at most 200/s plus the 1 s burst (%d)',
		$slow_done, $elapsed, $max));
is(sql(q{SELECT string_agg(coalesce(rate_limit::text, 'NULL'), ',' ORDER BY table_name::text)
		   FROM ttl_index_stats WHERE table_name IN ('rl_slow'::regclass, 'rl_fast'::regclass)}),
	'NULL,200', 'ttl_index_stats shows the rate limit of rl_slow only');

###########################################################################
# 8. ttl_pause() / ttl_resume(), and ttl_index.enabled.
###########################################################################

sql(q{
CREATE TABLE pa (ts timestamptz);
CREATE TABLE pb (ts timestamptz);
INSERT INTO pa SELECT now() - interval '1 day' FROM generate_series(1, 1000);
INSERT INTO pb SELECT now() - interval '1 day' FROM generate_series(1, 1000);
});
# paused in the transaction that creates it: the worker never sees it enabled
my @ids = split /\n/, sql(q{
BEGIN;
SELECT ttl_create_index('pa', 'ts', 60);
SELECT ttl_create_index('pb', 'ts', 60);
SELECT ttl_pause('pa');
COMMIT;
});
is($ids[2], '1', 'ttl_pause(pa) paused one policy');
wait_until('SELECT count(*) = 0 FROM pb', 'pb drained');
wait_round('the worker went through its schedule again since');
is(sql('SELECT count(*) FROM pa'), '1000', 'the paused table keeps its 1000 expired rows meanwhile');
is(sql(q{SELECT string_agg(table_name::text || '=' || paused, ',' ORDER BY table_name::text)
		   FROM ttl_index_stats WHERE table_name IN ('pa'::regclass, 'pb'::regclass)}),
	'pa=true,pb=false', 'ttl_index_stats shows pa paused, pb not');
my ($ret, $out, $err) = $node->psql('app', q{SELECT ttl_pause('trig_log')});
like($err, qr/table "trig_log" has no TTL policy/, 'ttl_pause of a table without a policy is an error');
is(sql(q{SELECT ttl_resume('pa')}), '1', 'ttl_resume(pa) resumed one policy');
wait_until('SELECT count(*) = 0 FROM pa', 'the resumed table is drained');
is(stats('pa', 'paused'), 'f', 'and no longer shown paused');

# a pause stops a pass already under way, too: pc's pass is slowed down by
# its rate limit (600 rows at 100/s), and paused in its middle
sql(q{
CREATE TABLE pc (ts timestamptz);
INSERT INTO pc SELECT now() - interval '1 day' FROM generate_series(1, 600);
SELECT ttl_create_index('pc', 'ts', 60, rate_limit => 100);
});
wait_until('SELECT count(*) < 600 FROM pc', 'pc: its rate-limited pass has begun');
is(sql(q{SELECT ttl_pause('pc')}), '1', 'pc paused in the middle of its pass');
# a batch in flight when it was paused may still commit; none after it
wait_round('the worker has seen the pause');
my $pc_left = sql('SELECT count(*) FROM pc');
cmp_ok($pc_left, '>', 0, "pc paused with $pc_left expired rows left");
wait_round('the worker went through its schedule again since');
is(sql('SELECT count(*) FROM pc'), $pc_left,
	'after ttl_pause(), not one more row deleted from pc: the pass under way stopped');
is(sql(q{SELECT ttl_resume('pc')}), '1', 'pc resumed');
wait_until('SELECT count(*) = 0 FROM pc', 'pc drained once resumed');

# ttl_index.enabled = off: nothing is deleted until it is on again
sql('ALTER SYSTEM SET ttl_index.enabled = off; SELECT pg_reload_conf()');
wait_until(q{SELECT phase = 'disabled' FROM ttl_index_progress WHERE datname = 'app'}, 'the worker is disabled');
sql(q{INSERT INTO pb SELECT now() - interval '1 day' FROM generate_series(1, 500)});
# a backlog that waits shows as lag, also behind rows the policy skips
sql(q{
INSERT INTO jobs_full (status, finished_at) SELECT 'done', now() - interval '2 hours' FROM generate_series(1, 10);
INSERT INTO sess_full (created_at) SELECT now() - interval '2 hours' FROM generate_series(1, 10);
});
my $pb_deleted = stats('pb', 'rows_deleted');
# the worker goes through its main loop again after the rows are in: a
# change of the catalog wakes it, it reads its policies again (a phase of
# its own) and goes back to 'disabled', with a new phase_since
my $mark = sql('SELECT clock_timestamp()');
sql(q{SELECT ttl_pause('marker')});
sql(q{SELECT ttl_resume('marker')});
wait_until(qq{SELECT phase = 'disabled' AND phase_since > '$mark' FROM ttl_index_progress WHERE datname = 'app'},
	'the worker woke up after the rows were in, and stayed disabled');
is(sql('SELECT count(*) FROM pb'), '500', 'ttl_index.enabled = off: new expired rows stay');
is(stats('pb', 'rows_deleted'), $pb_deleted, 'and rows_deleted does not move');
is(stats('pb', "lag > interval '23 hours'"), 't', 'pb: the waiting backlog shows as lag');
is(sql(q{SELECT coalesce((lag > interval '59 minutes')::text, 'NULL')
		   FROM ttl_index_stats WHERE table_name = 'sess_full'::regclass}),
	'true', 'sess_full: its waiting backlog (10 rows expired an hour ago) shows as lag too');
# jobs_full's filter is its owner's code, which the view does not run in the
# reader's session: its figures are the worker's last pass's, and the view
# says so (a disabled worker makes no pass)
like(sql(q{SELECT backlog_reason FROM ttl_index_stats WHERE table_name = 'jobs_full'::regclass}),
	qr/worker's last pass|no pass of the worker/,
	'jobs_full: its filter is not run by the view, which says where its figures come from');
sql('ALTER SYSTEM SET ttl_index.enabled = on; SELECT pg_reload_conf()');
wait_until('SELECT count(*) = 0 FROM pb', 'ttl_index.enabled = on again: they are deleted');
wait_is(stats_query('pb', 'rows_deleted'), $pb_deleted + 500, 'rows_deleted counts them');
wait_until(q{SELECT (SELECT count(*) FROM jobs_full WHERE status = 'done' AND finished_at < now() - interval '1 hour') +
					(SELECT count(*) FROM sess_full WHERE deleted_at IS NULL AND created_at < now() - interval '1 hour') = 0},
	'and the backlogs of jobs_full and sess_full are done with');

# the rate-limited policy has gone on at its pace meanwhile
wait_until('SELECT count(*) = 0 FROM rl_slow', 'the rate-limited policy finishes its backlog');
my $slow_total = time() - $t0;
cmp_ok($slow_total, '>=', (2000 - 200 - 40) / 200,
	sprintf('not before its rate allows (2000 rows in %.1f s)', $slow_total));

is(sql(q{SELECT sum(errors) FROM ttl_index_stats}), '0', 'no policy counted an error');

$node->stop;
diag(sprintf('010_expiry_semantics ran in %.1f s', time() - $start));
done_testing();
