# Nothing stalls.  Rows that cannot be deleted are left in place and the
# others go; rows written by a session that never goes idle are found at
# once; a pass does not pay again and again for dead index entries an old
# snapshot holds; and the smaller defects of the same family:
#
#  1. a row a NO ACTION foreign key references (seen by the pre-check, or
#     not: the owner cannot read the referencing table), a row a BEFORE
#     DELETE trigger refuses, a row the archive table's CHECK refuses: each
#     is held back, counted in rows_held, logged once per kind; all other
#     rows are deleted, and the held one goes once it can;
#  2. a DO block that commits as it goes, with track_counts off, writing
#     with INSERT or with COPY: the rows it writes are deleted within a
#     second of expiring (p99 of the lag);
#  3. 100,000 dead index entries held by a REPEATABLE READ transaction: the
#     passes that follow, and ttl_index_stats, read a few entries, not all
#     of them again; a row inserted below them is still found, on an
#     unlogged table too; a prefix recorded by a batch that then failed is
#     not used;
#  4. a policy made in a prepared transaction is served at COMMIT PREPARED;
#  5. with ttl_index.enabled off the progress view says "disabled";
#  6. ALTER DATABASE ... SET enable_tidscan = off does not make the executor
#     path's batches rescan the backlog;
#  7. DROP EXTENSION drops the indexes ttl_create_index made;
#  8. more policies than ttl_index.max_policies: a warning, and the rest work;
#     dropping policies frees their counters for the others.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use TtlIndex;

my $node = TtlIndex::node('stalls', 'ttl_index.error_delay = 1', 'max_prepared_transactions = 2',
	'ttl_index.log_min_duration = -1');
$node->safe_psql('postgres', 'CREATE DATABASE app');
my $db = 'app';
sub sql { return $node->safe_psql($db, shift); }
sub stat_of { my ($t, $cols) = @_; return sql("SELECT $cols FROM ttl_index_stats WHERE table_name = '$t'::regclass"); }
sql(q{
CREATE EXTENSION ttl_index;
-- its expired rows show that the worker went through its schedule
CREATE TABLE marker (ts timestamptz NOT NULL);
SELECT ttl_create_index('marker', 'ts', 60);
});
TtlIndex::wait_worker($node, $db);

# ---- 1. undeletable rows

sql(q{
CREATE TABLE parent (id int PRIMARY KEY, ts timestamptz NOT NULL);
CREATE TABLE child (pid int REFERENCES parent);
INSERT INTO parent SELECT g, now() - interval '1 day' + g * interval '1 ms' FROM generate_series(1, 20000) g;
INSERT INTO child VALUES (1);
SELECT ttl_create_index('parent', 'ts', 3600);
});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 1 FROM parent',
	'a row a foreign key references does not stop the 19,999 others');
is(sql('SELECT id FROM parent'), '1', 'the referenced row is left in place');
TtlIndex::wait_is($node, $db, q{SELECT rows_held || ' ' || errors FROM ttl_index_stats WHERE table_name = 'parent'::regclass},
	'1 0', 'the pre-check left it out: rows_held 1, no error');
sql('DELETE FROM child');
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM parent', 'and it goes once nothing references it');

# the owner cannot read the referencing table: the pre-check cannot see
# the reference, the batch fails, and the row responsible is found
sql(q{
CREATE ROLE powner;
CREATE ROLE cowner;
GRANT CREATE ON SCHEMA public TO powner;
CREATE TABLE parent2 (id int PRIMARY KEY, ts timestamptz NOT NULL);
ALTER TABLE parent2 OWNER TO powner;
GRANT REFERENCES ON parent2 TO cowner;
CREATE TABLE child2 (pid int);
ALTER TABLE child2 OWNER TO cowner;
SET ROLE cowner;
ALTER TABLE child2 ADD FOREIGN KEY (pid) REFERENCES parent2;
RESET ROLE;
INSERT INTO parent2 SELECT g, now() - interval '1 day' FROM generate_series(1, 1000) g;
INSERT INTO child2 VALUES (500);
SET ROLE powner;
SELECT ttl_create_index('parent2', 'ts', 3600);
});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 1 FROM parent2',
	'a reference the pre-check cannot see: the other 999 rows are deleted');
is(sql('SELECT id FROM parent2'), '500', 'the referenced row is found and held back');
TtlIndex::wait_is($node, $db, q{SELECT rows_held || ' ' || (errors > 0) || ' ' || last_error_sqlstate FROM ttl_index_stats WHERE table_name = 'parent2'::regclass},
	'1 true 23503', 'counted: rows_held 1, the error and its SQLSTATE');

# a trigger that refuses some rows (a legal hold), and an archive table
# whose CHECK refuses one
sql(q{
CREATE TABLE docs (id int, ts timestamptz NOT NULL, hold boolean NOT NULL DEFAULT false);
CREATE FUNCTION docs_hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.hold THEN
		RAISE EXCEPTION 'document % is on legal hold', OLD.id;
	END IF;
	RETURN OLD;
END $$;
CREATE TRIGGER docs_hold BEFORE DELETE ON docs FOR EACH ROW EXECUTE FUNCTION docs_hold();
INSERT INTO docs SELECT g, now() - interval '1 day', g IN (7, 250, 490) FROM generate_series(1, 500) g;
SELECT ttl_create_index('docs', 'ts', 3600);
CREATE TABLE orders (id int, ts timestamptz NOT NULL, total numeric);
CREATE TABLE orders_archive (id int, ts timestamptz, total numeric CHECK (total >= 0));
INSERT INTO orders SELECT g, now() - interval '1 day', CASE WHEN g = 42 THEN -1 ELSE g END FROM generate_series(1, 100) g;
SELECT ttl_create_index('orders', 'ts', 3600, archive_table => 'orders_archive');
});
TtlIndex::wait_until($node, $db, q{SELECT (SELECT count(*) FROM docs) = 3 AND (SELECT count(*) FROM orders) = 1},
	'the trigger\'s and the CHECK\'s rows stay, the others go');
is(sql(q{SELECT string_agg(id::text, ',' ORDER BY id) FROM docs}), '7,250,490', 'the rows on hold are the ones left');
is(sql(q{SELECT (SELECT id FROM orders) || ' ' || (SELECT count(*) FROM orders_archive)}), '42 99',
	'the row the archive refuses stays, 99 are archived');
TtlIndex::wait_is($node, $db, q{SELECT string_agg(rows_held || ' ' || last_error_sqlstate, ', ' ORDER BY policy_id) FROM ttl_index_stats WHERE table_name IN ('docs'::regclass, 'orders'::regclass)},
	'3 P0001, 1 23514', 'rows_held and the SQLSTATE of each');
my $log = slurp_file($node->logfile);
my @holds = ($log =~ /an expired row of table public\.docs cannot be removed and is left in place \(SQLSTATE P0001\)/g);
is(scalar(@holds), 1, 'three rows on hold, logged once');
like($log, qr/an expired row of table public\.orders cannot be removed and is left in place \(SQLSTATE 23514\)/,
	'the archive\'s refusal is logged with its SQLSTATE');

# ---- 2. a writer that commits inside one DO block

# writer_lag(table, body): run body (the loop of a DO block that writes
# rows into the table expiring 1-2 s later, committing as it goes) from a
# session with track_counts off, once the worker has looked at the empty
# table and rests; sample the age of the table's oldest expired row every
# 0.1 s for 6 s, and test its p99.  The worker comes for the rows within a
# second (ttl_index.max_sleep); one that missed the writes would leave them
# to its full pass once a minute, and the age would climb through the 6 s.
# The bound, 3 s, is loose for a busy machine and below that climb.
sub writer_lag
{
	my ($table, $body, $name) = @_;
	sql("CREATE TABLE $table (ts timestamptz NOT NULL); SELECT ttl_create_index('$table', 'ts', 0)");
	TtlIndex::wait_until($node, $db, "SELECT passes >= 1 FROM ttl_index_stats WHERE table_name = '$table'::regclass",
		"$table: the worker has looked at the empty table");
	TtlIndex::wait_asleep($node, $db, "$table: and rests");
	my $bg = $node->background_psql($db);
	$bg->query_until(qr/started/, "SET track_counts = off;\n\\echo started\nDO \$\$\nBEGIN\n$body\nEND \$\$;\n");
	my @lags;
	my $until = time() + 6;
	while (time() < $until)
	{
		push @lags, sql("SELECT coalesce(extract(epoch FROM clock_timestamp() - min(ts)), 0)
			FROM $table WHERE ts < clock_timestamp()");
		sleep(0.1);
	}
	$bg->quit;
	@lags = sort { $a <=> $b } @lags;
	my $p99 = $lags[int(0.99 * $#lags)];
	cmp_ok($p99, '<=', 3.0, sprintf('%s (track_counts off): lag p99 %.2f s, max %.2f s over %d samples',
		$name, $p99, $lags[-1], scalar(@lags)));
}

writer_lag('stream', q{
	FOR i IN 1 .. 50 LOOP
		INSERT INTO stream SELECT now() + interval '1 second' + random() * interval '1 second'
		  FROM generate_series(1, 100);
		COMMIT;
		PERFORM pg_sleep(0.1);
	END LOOP;}, 'a DO block committing its INSERTs as it goes');
# COPY does not go through the executor: the utility hook counts it
writer_lag('copied', q{
	FOR i IN 1 .. 50 LOOP
		COPY copied FROM PROGRAM 'd=$(date -u -d "+1 second" "+%Y-%m-%d %H:%M:%S.%N+00"); i=0; while [ $i -lt 100 ]; do echo "$d"; i=$((i + 1)); done';
		COMMIT;
		PERFORM pg_sleep(0.1);
	END LOOP;}, 'a DO block committing its COPYs as it goes');

# ---- 3. dead index entries held by an old snapshot
sql(q{
CREATE TABLE heldback (ts timestamptz NOT NULL, pad text);
SELECT ttl_create_index('heldback', 'ts', 0);
});
my $old = $node->background_psql($db);
$old->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$old->query_safe('SELECT count(*) FROM heldback');
sql(q{INSERT INTO heldback SELECT now() - interval '1 hour' + g * interval '1 ms', 'x' FROM generate_series(1, 100000) g});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM heldback', 'a backlog of 100,000 drained under an old snapshot');
# every index read so far is counted: the worker's (and its helpers'), and
# the test's own sessions' (all but the old snapshot's, which read the
# table before the rows were in)
my $old_pid = $old->query_safe('SELECT pg_backend_pid()');
TtlIndex::wait_asleep($node, $db);
TtlIndex::wait_sessions_gone($node, $db, $old_pid);
my $idx = q{SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelid = 'heldback_ts_ttl_idx'::regclass};
my $before = sql($idx);
# a trickle of rows expiring at once: a pass for each
for my $n (1 .. 10)
{
	sql(q{INSERT INTO heldback VALUES (now() - interval '1 second', 'new')});
	TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM heldback', "row $n of the trickle is deleted");
}
TtlIndex::wait_asleep($node, $db);
TtlIndex::wait_sessions_gone($node, $db, $old_pid);
my $read = sql($idx) - $before;
cmp_ok($read, '<', 100000, "10 passes over the held dead entries read $read index entries, not 100,000 each");
# the views' look starts past them too: the worker publishes where they end
# (counted once the sessions that looked have exited)
TtlIndex::wait_sessions_gone($node, $db, $old_pid);
$before = sql($idx);
is(sql(q{SELECT lag FROM ttl_index_stats WHERE table_name = 'heldback'::regclass}), '00:00:00',
	'ttl_index_stats: no lag') for 1 .. 3;
TtlIndex::wait_sessions_gone($node, $db, $old_pid);
$read = sql($idx) - $before;
cmp_ok($read, '<', 30000, "three looks of ttl_index_stats read $read index entries, not 100,000 each");
# a row inserted below the dead entries is still found (within 30 s, a
# loose bound for a busy machine: the worker looks again within a second)
sql(q{INSERT INTO heldback VALUES (now() - interval '2 hours', 'backfill')});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM heldback', 'a row inserted below them is deleted', 30);
# a row a prepared transaction adds below them shows in the views at COMMIT
# PREPARED (the worker is kept off the table meanwhile: once it has been
# through its schedule after the pause, it leaves the table alone)
sql(q{SELECT ttl_pause('heldback')});
TtlIndex::wait_round($node, $db, 'marker', 'the worker has seen the pause');
sql(q{BEGIN; INSERT INTO heldback VALUES (now() - interval '3 hours', 'prepared'); PREPARE TRANSACTION 'below'});
sql(q{COMMIT PREPARED 'below'});
is(sql(q{SELECT lag > interval '2 hours' FROM ttl_index_stats WHERE table_name = 'heldback'::regclass}), 't',
	'a row committed below them by COMMIT PREPARED shows in the lag');
sql(q{SELECT ttl_resume('heldback')});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM heldback', 'and is deleted once the policy resumes', 30);
$old->query_safe('COMMIT');
$old->quit;

# An unlogged table's index sets no page LSNs, which the prefix is checked
# by: none is kept, and a row inserted below the dead entries is found
sql(q{
CREATE UNLOGGED TABLE heldback_u (ts timestamptz NOT NULL);
SELECT ttl_create_index('heldback_u', 'ts', 0);
});
$old = $node->background_psql($db);
$old->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$old->query_safe('SELECT count(*) FROM heldback_u');
sql(q{INSERT INTO heldback_u SELECT now() - interval '1 hour' + g * interval '1 ms' FROM generate_series(1, 20000) g});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM heldback_u', 'an unlogged backlog drained under an old snapshot');
sql(q{INSERT INTO heldback_u VALUES (now() - interval '1 second')});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM heldback_u', 'then a row expiring at the end');
sql(q{INSERT INTO heldback_u VALUES (now() - interval '2 hours')});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM heldback_u',
	'unlogged: a row inserted below the dead entries is deleted', 30);
$old->query_safe('COMMIT');
$old->quit;

# A batch deletes the rest of a backlog (so the dead prefix now reaches the
# cutoff), then fails: the look for the next expiry runs the filter on a
# row it raises for.  The rows that batch deleted are there again, and no
# index page changed: the prefix it recorded must not be used.  (The filter
# is also the index's predicate: the function raises only once replaced,
# after the rows are in.)
sql(q{
CREATE TABLE undone (ts timestamptz NOT NULL, v int NOT NULL);
CREATE FUNCTION undone_ok(v int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	RETURN true;
END $$;
SELECT ttl_create_index('undone', 'ts', 0, filter => 'undone_ok(v)');
});
$old = $node->background_psql($db);
$old->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$old->query_safe('SELECT count(*) FROM undone');
sql(q{
BEGIN;
INSERT INTO undone VALUES (now() + interval '1 day', 666);
INSERT INTO undone SELECT now() - interval '1 hour' + g * interval '1 ms', 1 FROM generate_series(1, 20000) g;
CREATE OR REPLACE FUNCTION undone_ok(v int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF v = 666 THEN
		RAISE EXCEPTION 'not this one';
	END IF;
	RETURN true;
END $$;
COMMIT;
});
TtlIndex::wait_until($node, $db, q{SELECT errors > 1 FROM ttl_index_stats WHERE table_name = 'undone'::regclass},
	'the look past the cutoff fails on the row the filter raises for, batch after batch');
sql(q{DELETE FROM undone WHERE v = 666});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM undone',
	'then every expired row goes: none is hidden behind a prefix a failed batch recorded', 30);
$old->query_safe('COMMIT');
$old->quit;

# ---- 4. a policy made in a prepared transaction
sql(q{
BEGIN;
CREATE TABLE prepared (ts timestamptz NOT NULL);
INSERT INTO prepared SELECT now() - interval '1 hour' FROM generate_series(1, 10);
SELECT ttl_create_index('prepared', 'ts', 60);
PREPARE TRANSACTION 'ttl';
});
sql(q{COMMIT PREPARED 'ttl'});
# (30 s is a loose bound, for a busy machine: a worker not woken would come
# only when it reads its catalog again, a minute later)
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM prepared', 'COMMIT PREPARED wakes the worker', 30);

# ---- 5. disabled
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl_index.enabled = off; SELECT pg_reload_conf()');
TtlIndex::wait_until($node, $db, "SELECT phase = 'disabled' FROM ttl_index_progress WHERE datname = '$db'",
	'ttl_index.enabled = off: the progress view says disabled');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET ttl_index.enabled; SELECT pg_reload_conf()');

# ---- 6. planner settings of the database do not reach the batches
sql(q{
ALTER DATABASE app SET enable_tidscan = off;
CREATE TABLE planned (id int, ts timestamptz NOT NULL);
CREATE TABLE planned_log (n int);
CREATE FUNCTION planned_count() RETURNS trigger LANGUAGE plpgsql AS
	$$ BEGIN INSERT INTO public.planned_log VALUES (1); RETURN NULL; END $$;
CREATE TRIGGER planned_count AFTER DELETE ON planned FOR EACH STATEMENT EXECUTE FUNCTION planned_count();
INSERT INTO planned SELECT g, now() - interval '1 day' + g * interval '1 ms' FROM generate_series(1, 50000) g;
ANALYZE planned;
SELECT ttl_create_index('planned', 'ts', 3600, batch_size => 1000);
});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM planned', 'a backlog of 50,000 on the executor path drains');
TtlIndex::wait_asleep($node, $db);
$read = sql(q{SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelid = 'planned_ts_ttl_idx'::regclass});
cmp_ok($read, '<', 150000, "with enable_tidscan = off for the database, the index was read $read times, not once per batch over the backlog");
sql('ALTER DATABASE app RESET enable_tidscan');

# ---- 7. DROP EXTENSION
$node->safe_psql('postgres', 'CREATE DATABASE dropper');
$node->safe_psql('dropper', q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (ts timestamptz);
CREATE TABLE p (ts timestamptz) PARTITION BY RANGE (ts);
CREATE TABLE p1 PARTITION OF p DEFAULT;
SELECT ttl_create_index('t', 'ts', 60);
SELECT ttl_create_index('p', 'ts', 60);
CREATE INDEX mine ON t (ts);
DROP EXTENSION ttl_index;
});
is($node->safe_psql('dropper', q{SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE schemaname = 'public'}),
	'mine', 'DROP EXTENSION drops the indexes ttl_create_index made, and only those');

$node->stop;

# ---- 8. more policies than counters
my $small = TtlIndex::node('small', 'ttl_index.max_policies = 10');
$small->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
SELECT format('CREATE TABLE t%s (ts timestamptz); SELECT ttl_create_index(%L, %L, 60); INSERT INTO t%s VALUES (now() - interval ''1 hour'')',
	g, 't' || g, 'ts', g) FROM generate_series(1, 15) g \gexec
});
ok($small->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM (SELECT * FROM t1 UNION ALL SELECT * FROM t15) x}),
	'fifteen policies, ten counters: all purged');
like(slurp_file($small->logfile), qr/more policies than ttl_index.max_policies \(10\)/, 'a warning says some are not counted');
is($small->safe_psql('postgres', 'SELECT count(*) FILTER (WHERE passes > 0) <= 10 FROM ttl_index_stats'), 't',
	'at most ten are counted');

# dropped policies give their counters back, and only theirs: drop five
# (every other one, so that the kept ids lie on both sides of each dropped
# one), and the ten left are all counted, the kept counters unchanged.  A
# kept policy not yet counted gets a new expired row until it is (the first
# may be deleted before the worker has read the drop); fed records them.
my $t1_rows = $small->safe_psql('postgres',
	q{SELECT rows_deleted FROM ttl_index_stats WHERE table_name = 't1'::regclass});
$small->safe_psql('postgres', q{
SELECT ttl_drop_index('t' || g, 'ts') FROM generate_series(2, 10, 2) g;
CREATE TABLE fed (t regclass);
CREATE FUNCTION all_counted() RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
	r record;
	n bigint;
	waiting int := 0;
BEGIN
	FOR r IN SELECT table_name FROM ttl_index_stats WHERE rows_deleted = 0 LOOP
		waiting := waiting + 1;
		EXECUTE format('SELECT count(*) FROM %s', r.table_name) INTO n;
		IF n = 0 THEN
			EXECUTE format('INSERT INTO %s VALUES (now() - interval ''1 hour'')', r.table_name);
			INSERT INTO fed VALUES (r.table_name);
		END IF;
	END LOOP;
	RETURN waiting = 0 AND (SELECT count(*) FROM ttl_index_stats) = 10;
END $$;
INSERT INTO t1 VALUES (now() - interval '1 hour');
INSERT INTO fed VALUES ('t1');
});
ok($small->poll_query_until('postgres', 'SELECT all_counted()'),
	'five policies dropped: the ten left are all counted');
ok($small->poll_query_until('postgres', 'SELECT count(*) = 0 FROM t1'), 't1 purged');
is($small->safe_psql('postgres',
	q{SELECT rows_deleted - (SELECT count(*) FROM fed WHERE t = 't1'::regclass) FROM ttl_index_stats WHERE table_name = 't1'::regclass}),
	$t1_rows, 'a kept policy keeps its counters');
$small->stop;

done_testing();
