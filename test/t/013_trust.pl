# Trust: a table owner's code never runs with anyone else's rights nor takes
# the server down, and what ttl_runner() deletes depends on nothing of the
# calling session.
#
#  1. An owner who may only create objects in a schema plants an IMMUTABLE
#     function that makes the owner superuser whenever it runs as one: in a
#     policy's filter, and in the predicate of a partial index on the TTL
#     column of a policy without a filter.  Whoever resolves the policy (the
#     worker, a superuser reading ttl_index_stats, calling ttl_runner(),
#     ttl_pause(), ttl_resume(), or altering the table) never runs it as
#     anyone but the owner.
#  2. A filter calling an IMMUTABLE SQL function that cannot be inlined (it
#     needs a snapshot) neither crashes the worker nor the view.
#  3. ttl_runner() from a session in a far-east TimeZone deletes nothing of
#     a timestamp, a date or a timestamp-partitioned table that has not
#     expired in the server's TimeZone.
#  4. A session search_path with a planted "=" operator does not change what
#     a stored filter means, to ttl_runner() or to the view.
#  5. ttl_runner() rolled back counts nothing.
#  6. The owner's trigger with unqualified names works under the worker as
#     in the owner's own DELETE, with the owner's ALTER ROLE ... SET
#     search_path.
#  7. Wall-clock rows inside the spring gap and the autumn overlap of the
#     server's zone are not deleted before their instant + TTL.
#  8. ALTER DATABASE ... SET session_replication_role = replica does not
#     switch off ON DELETE CASCADE or the table's DELETE triggers.
#
# The server's TimeZone is Europe/Berlin.  The test command also reads the
# server log for crashes.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use TtlIndex;

my $node = TtlIndex::node('trust', "timezone = 'Europe/Berlin'", 'ttl_index.error_delay = 1');
$node->safe_psql('postgres', q{
CREATE DATABASE app;
CREATE ROLE mallory LOGIN;
});
my $db = 'app';
sub sql { return $node->safe_psql($db, shift); }

sql(q{
CREATE EXTENSION ttl_index;
CREATE SCHEMA m AUTHORIZATION mallory;
SET ROLE mallory;
CREATE TABLE m.calls (who name, su boolean, at text, q text);
-- volatile: records who runs it, and escalates when it can
CREATE FUNCTION m.escalate(at text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	su boolean;
BEGIN
	SELECT rolsuper INTO su FROM pg_catalog.pg_roles WHERE rolname = current_user;
	INSERT INTO m.calls VALUES (current_user, su, at, left(current_query(), 60));
	IF su THEN
		ALTER ROLE mallory SUPERUSER;
	END IF;
	RETURN true;
END $$;
-- declared IMMUTABLE, so that the planner folds it with constant arguments
CREATE FUNCTION m.evil(at text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	RETURN m.escalate(at);
END $$;
CREATE TABLE m.f (id int, ts timestamptz, kind text);
SELECT ttl_create_index('m.f', 'ts', 3600, filter => $$kind = 'debug' AND m.evil('filter')$$);
CREATE TABLE m.p (id int, ts timestamptz);
SELECT ttl_create_index('m.p', 'ts', 3600);
DROP INDEX m.p_ts_ttl_idx;
CREATE INDEX p_partial ON m.p (ts) WHERE m.evil('predicate');
SELECT ttl_create_index('m.p', 'ts', 3600);
RESET ROLE;
});
TtlIndex::wait_worker($node, $db);

# expired rows in both, inserted by the owner (an INSERT evaluates a
# partial index's predicate as whoever inserts, as PostgreSQL always does:
# a superuser should not write to a table of an untrusted owner); the
# worker purges them as mallory
sql(q{
SET ROLE mallory;
INSERT INTO m.f SELECT g, now() - interval '2 hours', 'debug' FROM generate_series(1, 10) g;
INSERT INTO m.f VALUES (11, now() - interval '2 hours', 'keep');
INSERT INTO m.p SELECT g, now() - interval '2 hours' FROM generate_series(1, 10) g;
});
# (read as mallory too: planning a query on a table with a partial index
# folds its predicate, as whoever plans; a superuser should not query an
# untrusted owner's tables either)
sub as_mallory { return $node->safe_psql($db, shift, extra_params => ['-U', 'mallory']); }
sub wait_as_mallory
{
	my ($query, $name) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		return pass($name) if as_mallory($query) eq 't';
		sleep(0.1);
	}
	return fail($name);
}
wait_as_mallory("SELECT (SELECT count(*) FROM m.f) = 1 AND (SELECT count(*) FROM m.p) = 0",
	'the worker purged the filtered table and the one with a partial index');
is(as_mallory("SELECT count(*) > 0 FROM m.calls WHERE who = 'mallory'"), 't',
	'the worker ran the filter function, as the owner');

# every other way in, as a superuser
sql(q{SET ROLE mallory; INSERT INTO m.f VALUES (12, now() - interval '2 hours', 'debug')});
$node->safe_psql($db, 'SELECT * FROM ttl_index_stats');
$node->safe_psql($db, 'SELECT ttl_runner()');
$node->safe_psql($db, "SELECT ttl_pause('m.f'), ttl_pause('m.p')");
$node->safe_psql($db, "SELECT ttl_resume('m.f'), ttl_resume('m.p')");
$node->safe_psql($db, 'ALTER TABLE m.f ADD COLUMN note text; ALTER TABLE m.p ADD COLUMN note text');
$node->safe_psql($db, "SELECT ttl_create_index('m.p', 'ts', 7200)");
is(sql("SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'"), 'f',
	'the owner is still not a superuser');
is(as_mallory("SELECT count(*) FROM m.calls WHERE su OR who <> 'mallory'"), '0',
	'the planted function never ran as anyone but its owner')
  or diag(as_mallory("SELECT string_agg(who || ' ' || su || ' ' || at || ' ' || q, E'\n') FROM m.calls"));
is(as_mallory("SELECT count(*) FROM m.f WHERE kind = 'debug'"), '0', 'the superuser\'s ttl_runner() purged as the owner');

# 2. a filter function that needs a snapshot when folded
sql(q{
SET ROLE mallory;
CREATE FUNCTION m.always() RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true FROM (VALUES (1)) v';
CREATE TABLE m.s (ts timestamptz);
SELECT ttl_create_index('m.s', 'ts', 60, filter => 'm.always()');
INSERT INTO m.s SELECT now() - interval '1 hour' FROM generate_series(1, 5);
RESET ROLE;
});
wait_as_mallory('SELECT count(*) = 0 FROM m.s',
	'a non-inlinable SQL function in the filter: the worker purges, no crash');
as_mallory(q{INSERT INTO m.s SELECT now() - interval '1 hour'});
is(sql("SELECT lag IS NOT NULL FROM ttl_index_stats WHERE table_name = 'm.s'::regclass"), 't',
	'the view evaluates it too');
is(sql('SELECT ttl_runner() >= 0'), 't', 'and ttl_runner()');

# 3. ttl_runner() from Tokyo: nothing goes that has 30 minutes left in Berlin
sql(q{
CREATE TABLE ts_local (ts timestamp);
SELECT ttl_create_index('ts_local', 'ts', interval '1 hour');
INSERT INTO ts_local VALUES ((now() AT TIME ZONE 'Europe/Berlin') - interval '30 minutes'),
	((now() AT TIME ZONE 'Europe/Berlin') - interval '2 hours');
CREATE TABLE d_local (day date);
INSERT INTO d_local VALUES ((now() AT TIME ZONE 'Europe/Berlin')::date),
	((now() AT TIME ZONE 'Europe/Berlin')::date - 10);
CREATE TABLE parted (ts timestamp NOT NULL) PARTITION BY RANGE (ts);
SELECT format('CREATE TABLE parted_a PARTITION OF parted FOR VALUES FROM (%L) TO (%L)',
	(now() AT TIME ZONE 'Europe/Berlin') - interval '1 day',
	(now() AT TIME ZONE 'Europe/Berlin') - interval '30 minutes') \gexec
CREATE TABLE parted_rest PARTITION OF parted DEFAULT;
INSERT INTO parted VALUES ((now() AT TIME ZONE 'Europe/Berlin') - interval '31 minutes'),
	((now() AT TIME ZONE 'Europe/Berlin') - interval '5 hours');
SELECT ttl_create_index('parted', 'ts', interval '1 hour');
SELECT ttl_pause('ts_local'), ttl_pause('parted');
});
# the date policy: the day of today expires 30 minutes from now, in Berlin
my $secs = sql(q{SELECT extract(epoch FROM (now() AT TIME ZONE 'Europe/Berlin')
	- (now() AT TIME ZONE 'Europe/Berlin')::date)::bigint + 1800});
sql("SELECT ttl_create_index('d_local', 'day', $secs); SELECT ttl_pause('d_local')");
# the worker is paused on these three: only ttl_runner() runs, in Tokyo
$node->safe_psql($db, qq{
BEGIN;
SET LOCAL TimeZone = 'Asia/Tokyo';
SELECT ttl_resume('ts_local'), ttl_resume('d_local'), ttl_resume('parted');
SELECT ttl_runner();
SELECT ttl_pause('ts_local'), ttl_pause('d_local'), ttl_pause('parted');
COMMIT;
});
is(sql('SELECT count(*) FROM ts_local'), '1', 'timestamp: the row with 30 minutes left stays, under a Tokyo session');
is(sql('SELECT count(*) FROM d_local'), '1', 'date: the day that expires in 30 minutes stays');
is(sql("SELECT count(*) FROM parted"), '1', 'partitioned: the expired row went, the other stays');
is(sql("SELECT count(*) FROM pg_class WHERE relname = 'parted_a'"), '1',
	'the partition whose last rows have not expired in Berlin is not dropped');

# 4. a planted operator on the session's search_path
sql(q{
CREATE SCHEMA evil;
CREATE FUNCTION evil.yes(text, text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.yes);
CREATE TABLE kinds (ts timestamptz, kind text);
SELECT ttl_create_index('kinds', 'ts', 60, filter => $$kind = 'debug'$$);
SELECT ttl_pause('kinds');
INSERT INTO kinds VALUES (now() - interval '3 hours', 'keep'), (now() - interval '1 hour', 'debug');
});
is(sql(q{SET search_path = evil, public, pg_catalog;
	SELECT coalesce(lag < interval '90 minutes', true)
	       AND backlog_reason LIKE '%owner''s code%'
	  FROM ttl_index_stats WHERE table_name = 'kinds'::regclass}),
	't', 'the view never parses the stored filter in the reader\'s session: the older kept row is not the backlog');
sql(q{BEGIN; SELECT ttl_resume('kinds');
	SET LOCAL search_path = evil, public, pg_catalog; SELECT ttl_runner();
	SELECT ttl_pause('kinds'); COMMIT;});
is(sql('SELECT kind FROM kinds'), 'keep', 'ttl_runner() under a hijacked search_path keeps the row the filter keeps');

# 5. a rolled-back ttl_runner() counts nothing
# (one transaction: the worker never sees the policy but paused, so the
# rows can only be deleted by the ttl_runner() calls below)
sql(q{
BEGIN;
CREATE TABLE rb (ts timestamptz);
SELECT ttl_create_index('rb', 'ts', 60);
SELECT ttl_pause('rb');
INSERT INTO rb SELECT now() - interval '1 hour' FROM generate_series(1, 50);
COMMIT;
});
sql(q{BEGIN; SELECT ttl_resume('rb'); SELECT ttl_runner(); ROLLBACK;});
is(sql("SELECT count(*) || ' ' || rows_deleted FROM rb, ttl_index_stats WHERE table_name = 'rb'::regclass GROUP BY rows_deleted"),
	'50 0', 'a rolled-back ttl_runner(): the rows are back, and not counted');
sql(q{BEGIN; SELECT ttl_resume('rb'); SAVEPOINT s; SELECT ttl_runner(); ROLLBACK TO s; SELECT ttl_pause('rb'); COMMIT;});
is(sql("SELECT rows_deleted FROM ttl_index_stats WHERE table_name = 'rb'::regclass"), '0',
	'nor one rolled back to a savepoint');
sql(q{BEGIN; SELECT ttl_resume('rb'); SELECT ttl_runner(); SELECT ttl_pause('rb'); COMMIT;});
is(sql("SELECT rows_deleted FROM ttl_index_stats WHERE table_name = 'rb'::regclass"), '50',
	'a committed one is counted');

# 6. the owner's trigger with unqualified names, and the owner's search_path
sql(q{
CREATE ROLE olga;
CREATE SCHEMA olga AUTHORIZATION olga;
CREATE SCHEMA olga_logs AUTHORIZATION olga;
GRANT CREATE ON SCHEMA public TO olga;
SET ROLE olga;
CREATE TABLE public.a (ts timestamptz, v int);
CREATE TABLE public.a_log (v int);
CREATE TABLE olga_logs.b_log (v int);
CREATE FUNCTION public.a_del() RETURNS trigger LANGUAGE plpgsql AS
	$$ BEGIN INSERT INTO a_log VALUES (OLD.v); RETURN OLD; END $$;
CREATE TABLE public.b (ts timestamptz, v int);
CREATE FUNCTION public.b_del() RETURNS trigger LANGUAGE plpgsql AS
	$$ BEGIN INSERT INTO b_log VALUES (OLD.v); RETURN OLD; END $$;
CREATE TRIGGER a_del BEFORE DELETE ON public.a FOR EACH ROW EXECUTE FUNCTION public.a_del();
CREATE TRIGGER b_del BEFORE DELETE ON public.b FOR EACH ROW EXECUTE FUNCTION public.b_del();
SELECT ttl_create_index('public.a', 'ts', 60);
SELECT ttl_create_index('public.b', 'ts', 60);
RESET ROLE;
ALTER ROLE olga IN DATABASE app SET search_path = olga_logs, public;
INSERT INTO a VALUES (now() - interval '1 hour', 1), (now() - interval '1 hour', 2);
INSERT INTO b VALUES (now() - interval '1 hour', 3);
});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM (SELECT FROM a UNION ALL SELECT FROM b) x',
	'the owner\'s triggers with unqualified names work under the worker');
is(sql('SELECT (SELECT string_agg(v::text, \',\' ORDER BY v) FROM a_log) || \'|\' || (SELECT string_agg(v::text, \',\') FROM olga_logs.b_log)'),
	'1,2|3', 'they found a_log on the default search_path, b_log on the owner\'s');

# 7. wall-clock rows around the changes of Europe/Berlin in 2025: spring on
# 2025-03-30 (02:00 -> 03:00), autumn on 2025-10-26 (03:00 -> 02:00)
sql(q{
CREATE TABLE spring (ts timestamp, what text);
CREATE TABLE autumn (ts timestamp, what text);
INSERT INTO spring VALUES ('2025-03-30 01:50', 'expired'), ('2025-03-30 02:30', 'in the gap'),
	('2025-03-30 03:30', 'after');
INSERT INTO autumn VALUES ('2025-10-26 01:50', 'expired'), ('2025-10-26 02:15', 'in the overlap'),
	('2025-10-26 02:45', 'later in the overlap');
});
# TTLs putting the cutoff at 01:10 UTC (03:10 CEST) on the spring day, and at
# 00:30 UTC (02:30 CEST, the first 02:30) on the autumn day
my $ttl_spring = sql(q{SELECT extract(epoch FROM now() - timestamptz '2025-03-30 01:10+00')::bigint});
my $ttl_autumn = sql(q{SELECT extract(epoch FROM now() - timestamptz '2025-10-26 00:30+00')::bigint});
sql("SELECT ttl_create_index('spring', 'ts', $ttl_spring), ttl_create_index('autumn', 'ts', $ttl_autumn)");
TtlIndex::wait_until($node, $db, q{SELECT NOT EXISTS (SELECT FROM spring WHERE what = 'expired')
	AND NOT EXISTS (SELECT FROM autumn WHERE what = 'expired')}, 'the expired rows around the changes go');
is(sql("SELECT string_agg(what, ', ' ORDER BY ts) FROM spring"), 'in the gap, after',
	'spring: 02:30 (skipped hour, 01:30 UTC) is after the cutoff and stays');
is(sql("SELECT string_agg(what, ', ' ORDER BY ts) FROM autumn"), 'in the overlap, later in the overlap',
	'autumn: 02:15 (read as its later occurrence, 01:15 UTC) stays');
is(sql(q{SELECT next_expiry = timestamptz '2025-03-30 01:30+00' + make_interval(secs => } . $ttl_spring . q{)
	FROM ttl_index_stats WHERE table_name = 'spring'::regclass}), 't',
	'the view agrees: the next expiry is 02:30 read as 01:30 UTC');

# 8. database settings do not switch off foreign-key actions and triggers
sql(q{
CREATE TABLE parent (id int PRIMARY KEY, ts timestamptz);
CREATE TABLE child (pid int REFERENCES parent ON DELETE CASCADE);
CREATE TABLE parent_log (id int);
CREATE FUNCTION parent_del() RETURNS trigger LANGUAGE plpgsql AS
	$$ BEGIN INSERT INTO public.parent_log VALUES (OLD.id); RETURN OLD; END $$;
CREATE TRIGGER parent_del AFTER DELETE ON parent FOR EACH ROW EXECUTE FUNCTION parent_del();
SELECT ttl_create_index('parent', 'ts', 60);
ALTER DATABASE app SET session_replication_role = replica;
ALTER ROLE postgres SET session_replication_role = replica;
});
# a new worker starts with those settings
my $pid = TtlIndex::worker_pid($node, $db);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'ttl_index worker' AND datname = '$db' AND pid <> $pid");
$node->safe_psql($db, q{
INSERT INTO parent SELECT g, now() - interval '1 hour' FROM generate_series(1, 100) g;
INSERT INTO child SELECT g FROM generate_series(1, 100) g;
});
TtlIndex::wait_until($node, $db, 'SELECT count(*) = 0 FROM parent', 'the parents are deleted');
is(sql('SELECT (SELECT count(*) FROM child) || \' \' || (SELECT count(*) FROM parent_log)'), '0 100',
	'their children went with them (ON DELETE CASCADE) and the trigger logged each');
$node->safe_psql('postgres', 'ALTER DATABASE app RESET session_replication_role; ALTER ROLE postgres RESET session_replication_role');

$node->stop;
done_testing();
