# ttl_runner() with helpers: called outside a transaction block, it shares
# a large backlog with helper processes as a worker does (drain.c), with the
# worker disabled (ttl_index.enabled = off, as pg_cron users run it).
#
# 1. Outside a transaction block: a helper deletes part of the backlog
#    (its log line counts rows), every expired row is gone, the live rows
#    stay, ttl_runner() returns every row deleted, the helpers' included,
#    and rows_deleted counts them once.
# 2. In a transaction block: no helper; ROLLBACK brings every row back (a
#    helper would have committed its rows whatever the caller did).
# 3. Called by a table owner who is no superuser: the helpers' deletes run
#    as the owner (a trigger records current_user), and its rows go, every
#    one (a slice of the call's that a helper halved made both wait for
#    the other's rows: the helper's batch failed on its lock_timeout, and
#    the rows it had taken stayed, as the call makes one pass only).
# 4. Cancelled while its helpers run: the call fails, its helpers leave
#    after their batch in hand, and the next call leads helpers again (its
#    runner slot was given back) and drains what is left.
# 5. Locks the call holds, which its helpers cannot take: a partition it
#    dropped (the parent's ACCESS EXCLUSIVE lock, kept until it ends), a
#    LOCK TABLE of its caller's (a procedure).  Every expired row goes all
#    the same: the first shares nothing, the second's helpers give the
#    table up and the call walks it whole (they left 15/16 of the rows).
# 6. A backlog two days old and five minutes wide (a bulk load, or rows
#    left while the purge was off): the job's slices are cut over the keys
#    the table holds, not over the two days up to the cutoff, so a helper
#    finds rows in its slices (cut up to the cutoff, every row was in the
#    call's first slice, which no helper may halve, and the helper found
#    all of its own empty).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $node = TtlIndex::node('runner_helpers', 'ttl_index.enabled = off',
	'ttl_index.batch_size = 2000', 'ttl_index.max_parallel_workers = 1',
	'ttl_index.max_workers = 4', 'log_min_messages = debug1');
sub sql { return $node->safe_psql('postgres', $_[0]); }
sql('CREATE EXTENSION ttl_index');

# backlog(table, rows): `rows` expired rows spread over a day, then 1,000
# that expire in a day
sub backlog
{
	my ($table, $rows) = @_;
	sql(qq{
INSERT INTO $table (id, ts) SELECT g, now() - interval '25 hours' + g * (interval '1 day' / $rows)
  FROM generate_series(1, $rows) g;
INSERT INTO $table (id, ts) SELECT $rows + g, now() + interval '1 day' FROM generate_series(1, 1000) g;
VACUUM ANALYZE $table;
});
}

# the rows the helpers that left since log offset $from deleted, from their
# DEBUG1 line (helper.c)
sub helper_rows
{
	my ($from) = @_;
	my $log = slurp_file($node->logfile, $from);
	my $n = 0;
	$n += $1 while $log =~ /ttl_index helper of policy \d+ leaves after (\d+) rows/g;
	return $n;
}

# --- 1. outside a transaction block -------------------------------------------
sql(q{
CREATE TABLE big (id int, ts timestamptz NOT NULL, payload text DEFAULT repeat('x', 40));
SELECT ttl_create_index('big', 'ts', 3600);
});
backlog('big', 300000);
my $from = -s $node->logfile;
is(sql('SELECT ttl_runner()'), '300000', 'outside a block: ttl_runner() returns every row deleted');
is(sql(q{SELECT count(*) FILTER (WHERE ts < now() - interval '1 hour') || ' ' || count(*) FROM big}),
	'0 1000', 'every expired row is gone, the 1,000 live rows stay');
# the helper's line comes when it leaves, after the job it shared ended
TtlIndex::wait_until($node, 'postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'ttl_index helper'},
	'the helpers have left');
my $h = helper_rows($from);
cmp_ok($h, '>', 0, "a helper shared the backlog ($h rows), with ttl_index.enabled = off");
cmp_ok($h, '<', 300000, 'and the call deleted rows of its own');
is(sql(q{SELECT rows_deleted FROM ttl_index_stats WHERE table_name = 'big'::regclass}), '300000',
	'rows_deleted counts the helpers\' rows and the call\'s, once');

# --- 2. in a transaction block ------------------------------------------------
sql('TRUNCATE big');
backlog('big', 300000);
$from = -s $node->logfile;
is(sql('BEGIN; SELECT ttl_runner(); ROLLBACK'), '300000',
	'in a block: ttl_runner() deletes the backlog');
is(sql('SELECT count(*) FROM big'), '301000', 'and ROLLBACK brings every row back');
is(helper_rows($from), 0, 'no helper shared it');
unlike(slurp_file($node->logfile, $from), qr/helper\(s\) share the backlog/,
	'no helper was started');

# --- 3. by a table owner who is no superuser ----------------------------------
sql(q{
CREATE ROLE app LOGIN;
GRANT CREATE ON SCHEMA public TO app;
CREATE TABLE deleters (who name);
GRANT INSERT ON deleters TO app;
CREATE TABLE app_t (id int, ts timestamptz NOT NULL, payload text DEFAULT repeat('x', 40));
ALTER TABLE app_t OWNER TO app;
CREATE FUNCTION who_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.id % 1000 = 0 THEN
		INSERT INTO public.deleters VALUES (current_user);
	END IF;
	RETURN OLD;
END $$;
ALTER FUNCTION who_deletes() OWNER TO app;
CREATE TRIGGER who_deletes BEFORE DELETE ON app_t FOR EACH ROW EXECUTE FUNCTION who_deletes();
});
$node->safe_psql('postgres', q{SELECT ttl_create_index('app_t', 'ts', 3600)},
	extra_params => [ '-U', 'app' ]);
backlog('app_t', 200000);
$from = -s $node->logfile;
is($node->safe_psql('postgres', 'SELECT ttl_runner()', extra_params => [ '-U', 'app' ]),
	'200000', 'a table owner\'s call deletes its backlog');
TtlIndex::wait_until($node, 'postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'ttl_index helper'},
	'the helpers have left');
cmp_ok(helper_rows($from), '>', 0, 'with a helper');
is(sql('SELECT count(*) FROM app_t'), '1000', 'only its live rows stay');
is(sql(q{SELECT count(*) || ' ' || string_agg(DISTINCT who::text, ',') FROM deleters}), '200 app',
	'every delete ran as the table owner, the helpers\' too');

# --- 4. cancelled while its helpers run ----------------------------------------
sql('TRUNCATE big');
backlog('big', 1000000);
$from = -s $node->logfile;
my $bg = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
$bg->query_until(qr/started/, "\\echo started\nSELECT ttl_runner();\n");
TtlIndex::wait_until($node, 'postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'ttl_index helper'},
	'a helper runs beside the call');
sql("SELECT pg_cancel_backend($pid)");
TtlIndex::wait_until($node, 'postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid AND state = 'active'",
	'the call ends');
like(slurp_file($node->logfile, $from), qr/canceling statement due to user request/,
	'the call was cancelled');
TtlIndex::wait_until($node, 'postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'ttl_index helper'},
	'its helpers leave');
my $left = sql(q{SELECT count(*) FROM big WHERE ts < now() - interval '1 hour'});
cmp_ok($left, '<', 1000000, "the helpers' committed rows stay deleted ($left left)");
$from = -s $node->logfile;
# in the cancelled call's session, as a pooled connection would be
my $again = $bg->query('SELECT ttl_runner()');
$again =~ s/\s+$//;
is($again, $left,
	'the next call in the same session deletes what is left, and says so (no count of the cancelled call\'s)');
$bg->quit;
is(sql(q{SELECT count(*) FROM big}), '1000', 'only the live rows stay');
TtlIndex::wait_until($node, 'postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'ttl_index helper'},
	'the helpers have left');
cmp_ok(helper_rows($from), '>', 0, 'and it led a helper again: its runner slot was given back');

# --- 5. locks the call holds ------------------------------------------------------
sql(q{
CREATE TABLE parts (id int, ts timestamptz NOT NULL, payload text DEFAULT repeat('x', 40))
  PARTITION BY RANGE (ts);
CREATE TABLE parts_old PARTITION OF parts FOR VALUES FROM ('2000-01-01') TO ('2001-01-01');
CREATE TABLE parts_now PARTITION OF parts FOR VALUES FROM ('2001-01-01') TO ('infinity');
INSERT INTO parts (id, ts) SELECT g, timestamptz '2000-06-01' + g * interval '1 s' FROM generate_series(1, 1000) g;
SELECT ttl_create_index('parts', 'ts', 3600);
});
backlog('parts', 200000);
$from = -s $node->logfile;
is(sql('SELECT ttl_runner()'), '200000',
	'a call that drops a partition deletes the other\'s backlog (the dropped rows are not counted)');
is(sql(q{SELECT count(*) FILTER (WHERE ts < now() - interval '1 hour') || ' ' || count(*) FROM parts}),
	'0 1000', 'every expired row is gone');
is(sql(q{SELECT count(*) FROM pg_class WHERE relname = 'parts_old'}), '0', 'the old partition was dropped');
is(helper_rows($from), 0, 'no helper: it could lock none of the tables');

sql(q{
TRUNCATE big;
CREATE PROCEDURE locked_run(INOUT n bigint) LANGUAGE plpgsql AS $$
BEGIN
	LOCK TABLE big IN SHARE ROW EXCLUSIVE MODE;
	n := ttl_runner();
END $$;
});
backlog('big', 300000);
is(sql('CALL locked_run(NULL)'), '300000',
	'a call under its caller\'s LOCK TABLE deletes the backlog');
is(sql(q{SELECT count(*) FROM big}), '1000', 'only the live rows stay');

# --- 6. an old, narrow backlog ----------------------------------------------------
sql(q{
TRUNCATE big;
INSERT INTO big (id, ts) SELECT g, now() - interval '2 days' + g * interval '1 ms'
  FROM generate_series(1, 300000) g;
INSERT INTO big (id, ts) SELECT 300000 + g, now() + interval '1 day' FROM generate_series(1, 1000) g;
VACUUM ANALYZE big;
});
$from = -s $node->logfile;
is(sql('SELECT ttl_runner()'), '300000', 'an old, narrow backlog: every row deleted');
is(sql(q{SELECT count(*) FROM big}), '1000', 'only the live rows stay');
TtlIndex::wait_until($node, 'postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'ttl_index helper'},
	'the helpers have left');
$h = helper_rows($from);
cmp_ok($h, '>', 0, "a helper found rows in its slices ($h)");

done_testing();
