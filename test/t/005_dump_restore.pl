# pg_dump and restore: every TTL policy comes back, equal to the source and
# active.  A source database holds policies of every shape (an index made by
# ttl_create_index and one reused, expire_after 0, a batch size of its own, a
# disabled policy, a table in another schema, names that need quotes, a
# column whose number changes in the restore because of a dropped column);
# it is dumped in custom and plain format and restored with pg_restore and
# psql into fresh databases.  Each restore must be free of errors and
# warnings, recreate no index twice, get a worker by itself that purges the
# restored policies without counting a purge error (the worker starts while
# the restore is still running), and keep "ttl_drop_index drops only its
# own index".
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ttl_index'
ttl_index.launcher_naptime = 1
max_worker_processes = 16
});
$node->start;

# run_cmd(argv): run a client program against the node; returns (exit code,
# stdout, stderr)
sub run_cmd
{
	my @cmd = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

# new_database(name): create an empty database and wait until the launcher
# has probed it: its probe worker found no extension there and left, so only
# what the restore does can get the database a worker.  The probe is seen
# as the first transaction committed in the database (we never connect to it).
sub new_database
{
	my ($db) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	ok($node->poll_query_until('postgres', qq{
SELECT xact_commit > 0 FROM pg_stat_database WHERE datname = '$db'
   AND NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'ttl_index worker' AND datname = '$db')}),
		"$db: probed by the launcher, and left without a worker, before the restore");
}

my @conn = ('-h', $node->host, '-p', $node->port);

# The policies, as the catalog holds them: the table by name, the index
# ttl_create_index made (known by its comment) by name,
# the column by name and by the name found at the stored column number (the
# number itself differs when pg_dump closes the gap of a dropped column).
my $policies_sql = q{
SELECT p.relid::text, p.column_name,
	   (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = p.relid AND a.attnum = p.attnum),
	   p.expire_after, coalesce(p.batch_size::text, 'default'), p.enabled,
	   p.action, p.purge_window, p.max_rows, p.set_columns,
	   coalesce((SELECT string_agg(i.indexrelid::regclass::text, ',') FROM pg_index i
			 WHERE i.indrelid = p.relid AND i.indkey[0] = p.attnum
			   AND obj_description(i.indexrelid, 'pg_class') = 'created by ttl_index; dropped by ttl_drop_index()'), 'reused')
  FROM ttl_index_policy p
 ORDER BY 1, 2};

# every index of the user tables, with its definition
my $indexes_sql = q{
SELECT schemaname, tablename, indexname, indexdef FROM pg_indexes
 WHERE schemaname NOT IN ('pg_catalog', 'information_schema')
   AND tablename <> 'ttl_index_policy'
 ORDER BY 1, 2, 3};

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', q{
CREATE EXTENSION ttl_index;

-- index made by ttl_create_index, TTL in seconds
CREATE TABLE sessions (id int, created_at timestamptz, note text);
SELECT ttl_create_index('sessions', 'created_at', 3600);

-- index that existed before, reused; expire_after 0; own batch size
CREATE TABLE tokens (t text, expires_at timestamptz, note text);
CREATE INDEX tokens_expires_at ON tokens (expires_at);
SELECT ttl_create_index('tokens', 'expires_at', 0, 500);

-- another schema, interval TTL, timestamp without time zone
CREATE SCHEMA app;
CREATE TABLE app.events (id int, ts timestamp, note text);
SELECT ttl_create_index('app.events', 'ts', interval '1 day');

-- names that need quoting
CREATE SCHEMA "Odd Schema";
CREATE TABLE "Odd Schema"."Odd ""Table""" (id int, "When It's" timestamptz, note text);
SELECT ttl_create_index('"Odd Schema"."Odd ""Table"""', 'When It''s', 60);

-- a dropped column before the TTL column: attnum 3 here, 2 once restored
CREATE TABLE gappy (id int, gone int, at timestamptz, note text);
ALTER TABLE gappy DROP COLUMN gone;
SELECT ttl_create_index('gappy', 'at', 60);

-- a disabled policy
CREATE TABLE paused (id int, at timestamptz, note text);
SELECT ttl_create_index('paused', 'at', 60);
UPDATE ttl_index_policy SET enabled = false WHERE relid = 'paused'::regclass;

-- beyond expiry by age: a cap alone (no TTL), a purge window, anonymize
-- (its index partial on the columns it resets)
CREATE TABLE capped (id int, at timestamptz, note text);
SELECT ttl_create_index('capped', 'at', NULL, max_rows => 50);
CREATE TABLE windowed (id int, at timestamptz, note text);
SELECT ttl_create_index('windowed', 'at', 60, purge_window => '00:00-24:00');
CREATE TABLE members (id int, at timestamptz, email text, note text);
SELECT ttl_create_index('members', 'at', 60, set_columns => $$email = NULL$$);
});

my $src_policies = $node->safe_psql('src', $policies_sql);
my $src_indexes = $node->safe_psql('src', $indexes_sql);
is($node->safe_psql('src', 'SELECT count(*) FROM ttl_index_policy'), '9', 'source has 9 policies');
is($node->safe_psql('src', "SELECT attnum FROM ttl_index_policy WHERE relid = 'gappy'::regclass"),
	'3', 'source: the column after a dropped one is attnum 3');

my $dumpdir = PostgreSQL::Test::Utils::tempdir;
my ($rc, $out, $err);

($rc, $out, $err) = run_cmd('pg_dump', @conn, '-Fc', '-f', "$dumpdir/src.dump", '-d', 'src');
is($rc, 0, 'pg_dump -Fc succeeds') or diag $err;
is($err, '', 'pg_dump -Fc writes no warning');
($rc, $out, $err) = run_cmd('pg_dump', @conn, '-Fp', '-f', "$dumpdir/src.sql", '-d', 'src');
is($rc, 0, 'pg_dump -Fp succeeds') or diag $err;
is($err, '', 'pg_dump -Fp writes no warning');

new_database('restored_custom');
($rc, $out, $err) = run_cmd('pg_restore', @conn, '-d', 'restored_custom', "$dumpdir/src.dump");
is($rc, 0, 'pg_restore of the custom dump succeeds');
is($err, '', 'pg_restore reports no error or warning');

new_database('restored_plain');
($rc, $out, $err) = run_cmd('psql', @conn, '-X', '-q', '-d', 'restored_plain', '-f', "$dumpdir/src.sql");
is($rc, 0, 'psql runs the plain dump');
is($err, '', 'psql reports no error or warning while restoring the plain dump');

foreach my $db ('restored_custom', 'restored_plain')
{
	is($node->safe_psql($db, $policies_sql), $src_policies, "$db: policies equal the source's");
	is($node->safe_psql($db, "SELECT attnum FROM ttl_index_policy WHERE relid = 'gappy'::regclass"),
		'2', "$db: column number resolved in the restored table (2, not the dumped 3)");
	is($node->safe_psql($db, $indexes_sql), $src_indexes, "$db: the same indexes as the source, none twice");

	# before anything else writes to the catalog: the restore alone gets the
	# database a worker
	{
		# it comes within a second or two; do not wait minutes when it never does
		local $PostgreSQL::Test::Utils::timeout_default = 30;
		ok($node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'ttl_index worker' AND datname = '$db'"),
			"$db: worker started by itself");
	}

	# the restored policy sequence goes on after the dumped ids
	my ($ret, $stdout, $stderr);
	$node->safe_psql($db, 'CREATE TABLE later (at timestamptz)');
	($ret, $stdout, $stderr) = $node->psql($db, "SELECT ttl_create_index('later', 'at', 60)");
	is($ret, 0, "$db: a new policy can be created") or diag $stderr;
	is($stdout, $node->safe_psql('src', 'SELECT last_value + 1 FROM ttl_index_policy_id_seq'),
		"$db: new policy id follows the restored ones");

	$node->safe_psql($db, q{
INSERT INTO sessions SELECT g, now() - interval '2 hours', 'old' FROM generate_series(1, 200) g;
INSERT INTO sessions SELECT g, now() + interval '1 hour', 'new' FROM generate_series(1, 5) g;
INSERT INTO tokens SELECT 'x', now() - interval '1 minute', 'old' FROM generate_series(1, 200);
INSERT INTO tokens SELECT 'x', now() + interval '1 hour', 'new' FROM generate_series(1, 5);
INSERT INTO app.events SELECT g, now()::timestamp - interval '2 days', 'old' FROM generate_series(1, 200) g;
INSERT INTO app.events SELECT g, now()::timestamp, 'new' FROM generate_series(1, 5) g;
INSERT INTO "Odd Schema"."Odd ""Table""" SELECT g, now() - interval '2 hours', 'old' FROM generate_series(1, 200) g;
INSERT INTO "Odd Schema"."Odd ""Table""" SELECT g, now() + interval '1 hour', 'new' FROM generate_series(1, 5) g;
INSERT INTO gappy SELECT g, now() - interval '2 hours', 'old' FROM generate_series(1, 200) g;
INSERT INTO gappy SELECT g, now() + interval '1 hour', 'new' FROM generate_series(1, 5) g;
INSERT INTO paused SELECT g, now() - interval '2 hours', 'old' FROM generate_series(1, 200) g;
INSERT INTO capped SELECT g, now() - g * interval '1 s', 'old' FROM generate_series(1, 200) g;
INSERT INTO windowed SELECT g, now() - interval '2 hours', 'old' FROM generate_series(1, 200) g;
INSERT INTO windowed SELECT g, now() + interval '1 hour', 'new' FROM generate_series(1, 5) g;
INSERT INTO members SELECT g, now() - interval '2 hours', 'm' || g || '@example.com', 'old' FROM generate_series(1, 200) g;
INSERT INTO members SELECT g, now() + interval '1 hour', 'n' || g || '@example.com', 'new' FROM generate_series(1, 5) g;
});
	my $counts = q{
SELECT string_agg(t || ':' || n, ' ' ORDER BY t) FROM (
	SELECT 'sessions' AS t, note, count(*) AS n FROM sessions GROUP BY 1, 2
	UNION ALL SELECT 'tokens', note, count(*) FROM tokens GROUP BY 1, 2
	UNION ALL SELECT 'events', note, count(*) FROM app.events GROUP BY 1, 2
	UNION ALL SELECT 'odd', note, count(*) FROM "Odd Schema"."Odd ""Table""" GROUP BY 1, 2
	UNION ALL SELECT 'gappy', note, count(*) FROM gappy GROUP BY 1, 2
	UNION ALL SELECT 'windowed', note, count(*) FROM windowed GROUP BY 1, 2
	UNION ALL SELECT 'members', note, count(*) FROM members WHERE email IS NOT NULL GROUP BY 1, 2
	UNION ALL SELECT 'capped', 'old', count(*) - 50 FROM capped HAVING count(*) > 50) s
 WHERE note = 'old'};
	if ($node->safe_psql($db, "SELECT count(*) FROM ttl_index_policy WHERE relid <> 'later'::regclass") eq '0')
	{
		# do not wait for a purge that cannot happen
		fail("$db: the worker purged the expired rows of every enabled restored policy");
		diag('no policy was restored');
	}
	else
	{
		local $PostgreSQL::Test::Utils::timeout_default = 30;
		ok($node->poll_query_until($db, $counts, ''),
			"$db: the worker purged the expired rows of every enabled restored policy");
	}
	is($node->safe_psql($db, q{
SELECT (SELECT count(*) FROM sessions) || ' ' || (SELECT count(*) FROM tokens) || ' ' ||
	   (SELECT count(*) FROM app.events) || ' ' || (SELECT count(*) FROM "Odd Schema"."Odd ""Table""") || ' ' ||
	   (SELECT count(*) FROM gappy)}),
		'5 5 5 5 5', "$db: unexpired rows kept");
	is($node->safe_psql($db, q{
SELECT (SELECT count(*) || ' ' || min(id) FROM capped) || ' ' || (SELECT count(*) FROM windowed) || ' ' ||
	   (SELECT count(*) || ' ' || count(email) FROM members)}),
		'50 1 5 205 5', "$db: the cap kept the 50 newest, the window purged, anonymize kept its rows and erased the expired ones' email");
	is($node->safe_psql($db, 'SELECT count(*) FROM paused'), '200',
		"$db: the disabled policy stays disabled");
	# a restored database is a healthy one: nothing for an alert on errors
	is($node->safe_psql($db, 'SELECT sum(errors) FROM ttl_index_stats'), '0',
		"$db: no purge error counted during or after the restore")
	  or diag $node->safe_psql($db,
		"SELECT string_agg(DISTINCT last_error, E'\\n') FROM ttl_index_stats");

	# ttl_drop_index drops the index it made, and only that one
	($ret, $stdout, $stderr) = $node->psql($db, q{
SELECT ttl_drop_index('sessions', 'created_at');
SELECT ttl_drop_index('tokens', 'expires_at');
SELECT ttl_drop_index('"Odd Schema"."Odd ""Table"""', 'When It''s');
}, on_error_stop => 1);
	is($ret, 0, "$db: ttl_drop_index of restored policies succeeds") or diag $stderr;
	is($node->safe_psql($db, q{
SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes
 WHERE tablename IN ('sessions', 'tokens', 'Odd "Table"')}),
		'tokens_expires_at', "$db: ttl_drop_index dropped the indexes ttl_create_index made, kept the reused one");
}

$node->stop;
done_testing();
