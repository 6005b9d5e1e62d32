# Tenants: one role's code, settings and statements never stop another
# role's purge, and no role reaches a database it has no rights on.
#
#  1. A role with LOGIN and no rights on a database cannot evict its
#     worker: DROP DATABASE, ALTER DATABASE ... RENAME and CREATE DATABASE
#     ... TEMPLATE that PostgreSQL refuses leave the worker running.  The
#     owner's DROP DATABASE still gets it out of the way.
#  2. alice's role settings reach her code only where they change what her
#     SQL means: exit_on_error and application_name do not, so a row her
#     trigger refuses is held (the worker lives on) and bob's policy in the
#     same database is purged.  A superuser reading ttl_index_stats or
#     calling ttl_runner() is not disconnected.
#  3. alice's trigger that turns on exit_on_error itself and fails ends the
#     worker once: the next worker rests her policy, says why in
#     ttl_index_stats, and purges bob's.
#  4. alice's trigger that sleeps: ttl_index.batch_timeout cancels the
#     batch, her policy rests and says why, bob's is purged meanwhile; one
#     that catches the cancel and sleeps on ends the worker at the second
#     deadline, and the next worker rests her policy.
#  5. mallory's DROP EXTENSION is refused before it waits for any lock.
#  6. An error message longer than the stats keep is cut between
#     characters.
#  7. Databases without the extension, created by a role with CREATEDB to
#     fill ttl_index.max_databases, do not keep a database that has it
#     from being purged.
#  8. One owner's slow batches take at most their share of each round of
#     the worker: another owner's batches are not held up by all of them.
#  (7 also: a session advisory lock the owner's code takes in a batch ends
#     with the batch.)
#
# Every wait is for a state (a row count, a pid, a counter).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $node = TtlIndex::node('tenants', 'ttl_index.error_delay = 1',
	'ttl_index.batch_timeout = 2s');
$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE mallory LOGIN;
CREATE DATABASE victim OWNER bob;
CREATE DATABASE app;
});
sub sql { my ($db, $q) = @_; return $node->safe_psql($db, $q); }

# --- 1. evictions only for statements that pass the privilege checks ----

sql('victim', 'CREATE EXTENSION ttl_index');
TtlIndex::wait_worker($node, 'victim');
my $pid = TtlIndex::worker_pid($node, 'victim');
for my $stmt ('DROP DATABASE victim', 'ALTER DATABASE victim RENAME TO gone',
	'CREATE DATABASE copy TEMPLATE victim')
{
	my ($ret, $out, $err) = $node->psql('postgres', $stmt,
		extra_params => ['-U', 'mallory']);
	isnt($ret, 0, "mallory's $stmt is refused");
	like($err, qr/must be owner|permission denied/, '... by PostgreSQL\'s own check');
}
is(TtlIndex::worker_pid($node, 'victim'), $pid,
	'and the worker of victim was never asked to leave');
is(sql('victim', "SELECT state FROM ttl_index_databases WHERE datname = 'victim'"),
	'running', 'nor kept out');
# the owner's DROP DATABASE goes through, the worker out of its way
sql('postgres', 'ALTER ROLE bob CREATEDB');
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE victim',
	extra_params => ['-U', 'bob']);
is($ret, 0, "the owner's DROP DATABASE evicts the worker and succeeds") or diag($err);

# --- 2. alice's role settings stay with her code -------------------------

sql('app', q{
CREATE EXTENSION ttl_index;
CREATE SCHEMA a AUTHORIZATION alice;
CREATE SCHEMA b AUTHORIZATION bob;
CREATE TABLE public.settings_seen (exit_on_error text, application_name text, tenant text);
GRANT INSERT ON public.settings_seen TO alice;
ALTER ROLE alice SET exit_on_error = on;
ALTER ROLE alice SET application_name = 'alice_app';
ALTER ROLE alice SET app.tenant = 'alice';
});
sql('app', q{
SET ROLE alice;
CREATE TABLE a.t (id int, ts timestamptz NOT NULL);
CREATE FUNCTION a.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.settings_seen VALUES (current_setting('exit_on_error'),
		current_setting('application_name'), current_setting('app.tenant', true));
	IF OLD.id = 1 THEN
		RAISE EXCEPTION 'row 1 is on hold';
	END IF;
	RETURN OLD;
END $$;
CREATE TRIGGER refuse BEFORE DELETE ON a.t FOR EACH ROW EXECUTE FUNCTION a.refuse();
SELECT ttl_create_index('a.t', 'ts', 60);
RESET ROLE;
SET ROLE bob;
CREATE TABLE b.t (id int, ts timestamptz NOT NULL);
SELECT ttl_create_index('b.t', 'ts', 60);
});
TtlIndex::wait_worker($node, 'app');
$pid = TtlIndex::worker_pid($node, 'app');
sql('app', q{
INSERT INTO a.t SELECT g, now() - interval '1 hour' FROM generate_series(1, 5) g;
INSERT INTO b.t SELECT g, now() - interval '1 hour' FROM generate_series(1, 5) g;
});
TtlIndex::wait_is($node, 'app', 'SELECT (SELECT count(*) FROM a.t) || \' \' || (SELECT count(*) FROM b.t)',
	'1 0', 'alice\'s refused row is held, the others of hers and all of bob\'s are purged', 30);
is(TtlIndex::worker_pid($node, 'app'), $pid, 'the worker did not end for her exit_on_error');
is(sql('app', "SELECT count(*) FROM settings_seen WHERE exit_on_error <> 'off' OR application_name = 'alice_app' OR tenant IS DISTINCT FROM 'alice'"),
	'0', 'her code saw her custom setting, not her exit_on_error nor her application_name');
is(sql('app', "SELECT application_name FROM pg_stat_activity WHERE pid = $pid"),
	'ttl_index worker', 'the worker keeps its own application_name');
# a superuser reading the view or purging is not disconnected by her code
sql('app', q{
SET ROLE alice;
CREATE TABLE a.f (ts timestamptz NOT NULL, d int);
CREATE FUNCTION a.chk(d int) RETURNS boolean LANGUAGE plpgsql STABLE AS $$ BEGIN RETURN 1 / d > 0; END $$;
SELECT ttl_create_index('a.f', 'ts', 60, filter => 'a.chk(d)');
INSERT INTO a.f VALUES (now() - interval '1 hour', 0);
RESET ROLE;
});
is(sql('app', "SELECT count(*) FROM ttl_index_stats WHERE table_name = 'a.f'::regclass"),
	'1', 'the view answers (it never runs her filter, which calls her function)');
($ret, $out, $err) = $node->psql('app', 'SELECT ttl_runner() >= 0');
is($out, 't', 'and so does a superuser\'s ttl_runner()');
sql('app', "SELECT ttl_drop_index('a.f', 'ts')");

# --- 3. her code turns exit_on_error on itself ---------------------------

sql('app', q{
SET ROLE alice;
CREATE TABLE a.x (ts timestamptz NOT NULL);
CREATE FUNCTION a.die() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('exit_on_error', 'on', true);
	RAISE EXCEPTION 'alice ends the worker';
END $$;
CREATE TRIGGER die BEFORE DELETE ON a.x FOR EACH ROW EXECUTE FUNCTION a.die();
SELECT ttl_create_index('a.x', 'ts', 60);
INSERT INTO a.x VALUES (now() - interval '1 hour');
});
my $xpid = TtlIndex::worker_pid($node, 'app');
TtlIndex::wait_until($node, 'app',
	"SELECT last_error LIKE '%exit_on_error%' FROM ttl_index_stats WHERE table_name = 'a.x'::regclass",
	'her code may not turn exit_on_error on: her batch fails, saying so', 60);
is(TtlIndex::worker_pid($node, 'app'), $xpid, 'and the worker goes on');
sql('app', q{INSERT INTO b.t SELECT g, now() - interval '1 hour' FROM generate_series(1, 5) g});
TtlIndex::wait_is($node, 'app', 'SELECT count(*) FROM b.t', '0',
	'and purges bob\'s table', 30);
sql('app', "SELECT ttl_drop_index('a.x', 'ts')");

# --- 4. her code does not end ---------------------------------------------

sql('app', q{
SET ROLE alice;
CREATE TABLE a.slow (ts timestamptz NOT NULL);
CREATE FUNCTION a.sleep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_sleep(3600);
	RETURN OLD;
END $$;
CREATE TRIGGER sleep BEFORE DELETE ON a.slow FOR EACH ROW EXECUTE FUNCTION a.sleep();
SELECT ttl_create_index('a.slow', 'ts', 60);
INSERT INTO a.slow VALUES (now() - interval '1 hour');
});
TtlIndex::wait_until($node, 'app',
	"SELECT last_error LIKE 'the batch ran past ttl_index.batch_timeout%' FROM ttl_index_stats WHERE table_name = 'a.slow'::regclass",
	'her sleeping batch is canceled at ttl_index.batch_timeout, and says so', 60);
sql('app', q{INSERT INTO b.t SELECT g, now() - interval '1 hour' FROM generate_series(1, 5) g});
TtlIndex::wait_is($node, 'app', 'SELECT count(*) FROM b.t', '0',
	'bob\'s rows are purged meanwhile', 60);
is(sql('app', 'SELECT count(*) FROM a.slow'), '1', 'her row stays');

# ... and one that catches the cancel and sleeps on
$pid = TtlIndex::worker_pid($node, 'app');
sql('app', q{
SET ROLE alice;
CREATE OR REPLACE FUNCTION a.sleep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	LOOP
		BEGIN
			PERFORM pg_sleep(3600);
		EXCEPTION WHEN query_canceled THEN
			NULL;
		END;
	END LOOP;
END $$;
});
TtlIndex::wait_until($node, 'app',
	"SELECT last_error LIKE 'the worker ended during a batch: the batch ran past ttl_index.batch_timeout and went on when canceled' FROM ttl_index_stats WHERE table_name = 'a.slow'::regclass",
	'one that catches the cancel ends the worker at the second deadline, and the next says why', 90);
isnt(TtlIndex::worker_pid($node, 'app'), $pid, 'a new worker runs');
sql('app', q{INSERT INTO b.t SELECT g, now() - interval '1 hour' FROM generate_series(1, 5) g});
TtlIndex::wait_is($node, 'app', 'SELECT count(*) FROM b.t', '0',
	'and purges bob\'s rows', 60);

# --- 5. DROP EXTENSION by a role that does not own it ---------------------
# PostgreSQL's ownership check comes before any lock the extension takes:
# a lock another session holds on a policy's table does not make the
# refused statement wait
my $holder = $node->background_psql('app');
$holder->query_safe('BEGIN; LOCK TABLE b.t IN ACCESS EXCLUSIVE MODE');
($ret, $out, $err) = $node->psql('app',
	"SET lock_timeout = '60s'; DROP EXTENSION ttl_index",
	extra_params => ['-U', 'mallory']);
like($err, qr/must be owner of extension ttl_index/,
	'mallory\'s DROP EXTENSION is refused at once, not after a lock wait');
$holder->query_safe('COMMIT');
$holder->quit;
is(sql('app', "SELECT count(*) FROM ttl_index_policy WHERE relid = 'b.t'::regclass"), '1',
	'and the policies stay');

# --- 6. an error message too long for the stats ---------------------------
# cut between characters: a client in another encoding reads it
sql('postgres', "CREATE DATABASE utf ENCODING 'UTF8' LOCALE 'C' TEMPLATE template0");
sql('utf', q{
CREATE EXTENSION ttl_index;
CREATE TABLE long (ts timestamptz NOT NULL);
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '%', repeat('x', 254) || 'éé';
END $$;
CREATE TRIGGER refuse BEFORE DELETE ON long FOR EACH STATEMENT EXECUTE FUNCTION refuse();
INSERT INTO long VALUES (now() - interval '1 hour');
SELECT ttl_create_index('long', 'ts', 60);
});
TtlIndex::wait_until($node, 'utf',
	"SELECT errors > 0 FROM ttl_index_stats WHERE table_name = 'long'::regclass",
	'the failing batch is counted', 60);
($ret, $out, $err) = $node->psql('utf',
	"SET client_encoding = 'LATIN1'; SELECT octet_length(last_error) <= 255 AND last_error LIKE '%xxx' FROM ttl_index_stats WHERE table_name = 'long'::regclass");
is($out, 't', 'its last_error, cut to fit, reads in LATIN1') or diag($err);

$node->stop;

# --- 7. empty databases do not crowd out those that use ttl_index ---------
# a role that may create databases fills every launcher slot with empty
# ones; a database that then gets the extension is still purged
$node = TtlIndex::node('slots', 'ttl_index.max_databases = 4');
$node->safe_psql('postgres', 'CREATE ROLE filler LOGIN CREATEDB');
for my $i (1 .. 4)
{
	$node->safe_psql('postgres', "CREATE DATABASE empty_$i", extra_params => ['-U', 'filler']);
}
$node->safe_psql('postgres', 'CREATE DATABASE prod');
$node->safe_psql('prod', q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (ts timestamptz NOT NULL);
INSERT INTO t SELECT now() - interval '1 hour' FROM generate_series(1, 100);
SELECT ttl_create_index('t', 'ts', 60);
});
TtlIndex::wait_is($node, 'prod', 'SELECT count(*) FROM t', '0',
	'with every launcher slot taken by empty databases, a database with the extension is purged', 60);
# an empty database that then gets the extension is served, whether it
# kept its slot or gave it up (three with the extension fit four slots)
for my $i (1, 3)
{
	$node->safe_psql("empty_$i", q{
CREATE EXTENSION ttl_index;
CREATE TABLE t (ts timestamptz NOT NULL);
INSERT INTO t SELECT now() - interval '1 hour' FROM generate_series(1, 10);
SELECT ttl_create_index('t', 'ts', 60);
});
}
for my $i (1, 3)
{
	TtlIndex::wait_is($node, "empty_$i", 'SELECT count(*) FROM t', '0',
		"empty_$i, given the extension later, is purged", 60);
}

# a session advisory lock the owner's code takes ends with the batch: the
# worker's process does not keep it
$node->safe_psql('prod', q{
CREATE TABLE lk (ts timestamptz NOT NULL);
CREATE FUNCTION lk() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_advisory_lock(4242);
	RETURN NULL;
END $$;
CREATE TRIGGER lk AFTER DELETE ON lk FOR EACH STATEMENT EXECUTE FUNCTION lk();
INSERT INTO lk VALUES (now() - interval '1 hour');
SELECT ttl_create_index('lk', 'ts', 60);
});
TtlIndex::wait_is($node, 'prod', 'SELECT count(*) FROM lk', '0', 'the table with the locking trigger is purged');
TtlIndex::wait_until($node, 'prod', 'SELECT pg_try_advisory_lock(4242)',
	'and the advisory lock its trigger took is free again');
$node->stop;

# --- 8. one owner's slow batches do not hold up another owner --------------
# carol's four policies each have a batch that takes two seconds (her
# trigger sleeps), dave's one policy a backlog of quick batches: the worker
# runs dave's batch after at most one of carol's per round (her share of a
# round is two batch times), not after all four of hers
$node = TtlIndex::node('fair', 'ttl_index.batch_timeout = 60s');
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
CREATE ROLE carol;
CREATE ROLE dave;
CREATE TABLE batches (n serial, who text);
GRANT INSERT ON batches TO carol, dave;
GRANT USAGE ON SEQUENCE batches_n_seq TO carol, dave;
CREATE SCHEMA c AUTHORIZATION carol;
CREATE SCHEMA d AUTHORIZATION dave;
SET ROLE carol;
CREATE FUNCTION c.slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_sleep(greatest(0, 2 - extract(epoch FROM clock_timestamp() - transaction_timestamp())));
	INSERT INTO public.batches (who) VALUES ('carol');
	RETURN NULL;
END $$;
DO $$
BEGIN
	FOR i IN 1..4 LOOP
		EXECUTE format('CREATE TABLE c.t%s (ts timestamptz NOT NULL)', i);
		EXECUTE format('CREATE TRIGGER slow AFTER DELETE ON c.t%s FOR EACH STATEMENT EXECUTE FUNCTION c.slow()', i);
		-- a row expiring every second: always due
		EXECUTE format('INSERT INTO c.t%s SELECT now() - interval ''1 day'' + g * interval ''1 second'' FROM generate_series(1, 3600) g', i);
		PERFORM ttl_create_index(format('c.t%s', i)::regclass, 'ts', interval '1 day');
	END LOOP;
END $$;
SET ROLE dave;
CREATE FUNCTION d.log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.batches (who) VALUES ('dave');
	RETURN NULL;
END $$;
CREATE TABLE d.t (ts timestamptz NOT NULL);
CREATE TRIGGER log AFTER DELETE ON d.t FOR EACH STATEMENT EXECUTE FUNCTION d.log();
INSERT INTO d.t SELECT now() - interval '1 hour' FROM generate_series(1, 100000);
SELECT ttl_create_index('d.t', 'ts', 60, batch_size => 100);
});
TtlIndex::wait_until($node, 'postgres',
	q{SELECT count(*) >= 6 FROM batches WHERE who = 'dave'}, 'dave\'s batches run', 120);
# the longest run of carol's batches between two of dave's
my $runs = $node->safe_psql('postgres', q{
SELECT coalesce(max(carols), 0) FROM (
	SELECT count(*) FILTER (WHERE who = 'carol') AS carols
	  FROM (SELECT who, count(*) FILTER (WHERE who = 'dave') OVER (ORDER BY n) AS daves
			  FROM batches) b
	 WHERE daves BETWEEN 1 AND 5
	 GROUP BY daves) r});
cmp_ok($runs, '<=', 2, "at most $runs of carol's two-second batches between two of dave's (four policies of hers)");
$node->stop;
done_testing();
