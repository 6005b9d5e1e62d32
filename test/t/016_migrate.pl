# Switching from pg_ttl_index.
#
# 1. The statements a pg_ttl_index user runs (test/compat/
#    pg_ttl_index_statements.sql, written from its documentation) do here
#    what the file says of each: those marked [works] succeed, those marked
#    [refused] fail (by design: docs/migrating.md says what replaces them).
#    The counts are printed for the record.
# 2. The documented switch, end to end, on a server that runs pg_ttl_index:
#    copy its ttl_index_table, drop it, CREATE EXTENSION ttl_index, import,
#    change shared_preload_libraries and restart; the worker then purges
#    the imported policies as pg_ttl_index did, and leaves the paused one.
#    pg_ttl_index itself is not used: the server has the objects it leaves
#    (its table, with the documented columns, its idx_ttl_* indexes, and a
#    stand-in for its ttl_runner() function).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

# --- 1. the statements --------------------------------------------------

# the worker stays off: ttl_runner() does every purge, so the counts are
# exact
my $node = TtlIndex::node('migrate', 'ttl_index.enabled = off');
$node->safe_psql('postgres', 'CREATE DATABASE cat');
$node->safe_psql('cat', 'CREATE EXTENSION ttl_index');

my $file = "$FindBin::RealBin/../compat/pg_ttl_index_statements.sql";
open(my $fh, '<', $file) or die "could not open $file: $!";
my $text = do { local $/; <$fh> };
close($fh);

my %count = (works => 0, refused => 0, varies => 0);
my ($succeeded, $failed) = (0, 0);
for my $block (split /\n\s*\n/, $text)
{
	next unless $block =~ /^-- \[(works|refused|varies)\]([^\n]*)\n(.*)$/s;
	my ($expect, $why, $sql) = ($1, $2, $3);
	$count{$expect}++;
	my ($ret, $out, $err) = $node->psql('cat', $sql);
	$ret == 0 ? $succeeded++ : $failed++;
	(my $first = $sql) =~ s/\n.*//s;
	if ($expect eq 'works')
	{
		is($ret, 0, "works: $first") or diag($err);
	}
	elsif ($expect eq 'refused')
	{
		isnt($ret, 0, "refused ($why): $first");
		like($err, qr/ERROR:/, "refused with an error: $first");
	}
}
diag(sprintf('pg_ttl_index statements: %d run, %d succeeded, %d failed '
	  . '(marked: %d work, %d refused by design, %d not asserted)',
	$succeeded + $failed, $succeeded, $failed,
	$count{works}, $count{refused}, $count{varies}));

# what those statements did
is($node->safe_psql('cat',
	"SELECT count(*) FROM user_sessions WHERE created_at < now() - interval '30 minutes'"),
	'0', 'ttl_runner() deleted the sessions older than the TTL of 1800 s given as a quoted literal');
is($node->safe_psql('cat', 'SELECT count(*) FROM user_sessions'), '30',
	'and kept the 30 younger ones');
is($node->safe_psql('cat',
	'SELECT count(*) FROM audit_log WHERE deleted_at IS NOT NULL'),
	'30', 'the soft-delete policy marked its 30 expired rows');
is($node->safe_psql('cat',
	"SELECT expire_after_seconds FROM ttl_summary() WHERE table_name = 'events'"),
	'86400', "a TTL of '86400' is 86400 seconds");
is($node->safe_psql('cat', q{
SELECT string_agg(format('%s.%s %s %s %s', table_name, column_name, cleanup_mode, active,
                         index_name IS NOT NULL), ', ' ORDER BY table_name, column_name)
  FROM ttl_summary()}),
	'audit_log.created_at soft_delete t t, events.timestamp hard_delete t t, '
	. 'metrics.collected_at hard_delete t t, notifications.created_at hard_delete t t, '
	. 'user_sessions.created_at hard_delete t t, user_sessions.last_activity hard_delete t t',
	'ttl_summary() lists the six remaining policies with their mode and index');
my $counts = q{
SELECT rows_deleted_last_run, total_rows_deleted FROM ttl_summary()
 WHERE table_name = 'user_sessions' AND column_name = 'created_at'};
is($node->safe_psql('cat', $counts), '210|210',
	'ttl_summary(): the pass of ttl_runner() deleted 210 rows');
$node->safe_psql('cat', 'SELECT ttl_runner()');
is($node->safe_psql('cat', $counts), '0|210',
	'ttl_summary(): the next pass found none, 210 rows in all');

# --- 2. the switch ------------------------------------------------------

my $old = PostgreSQL::Test::Cluster->new('switch');
$old->init;
$old->start;
$old->safe_psql('postgres', q{
CREATE SCHEMA app;
CREATE TABLE app.sessions (id int, created_at timestamptz NOT NULL);
INSERT INTO app.sessions SELECT g, now() - interval '2 hours' FROM generate_series(1, 100) g;
INSERT INTO app.sessions SELECT g, now() FROM generate_series(101, 110) g;
CREATE TABLE logs (id int, logged_at timestamptz NOT NULL, deleted_at timestamptz);
INSERT INTO logs SELECT g, now() - interval '8 days', NULL FROM generate_series(1, 40) g;
CREATE TABLE events (user_id int, at timestamptz NOT NULL);
CREATE INDEX events_user_at ON events (user_id, at);
INSERT INTO events SELECT g, now() - interval '2 hours' FROM generate_series(1, 20) g;
CREATE TABLE cache (k text, expires_at timestamptz NOT NULL);
INSERT INTO cache SELECT g::text, now() - interval '1 minute' FROM generate_series(1, 30) g;

-- what pg_ttl_index leaves in the database: its table and its indexes
-- (made by its functions, so not members of the extension), and its
-- functions (here a stand-in for one of them)
CREATE INDEX idx_ttl_sessions_created_at ON app.sessions (created_at);
CREATE INDEX idx_ttl_logs_logged_at ON logs (logged_at);
CREATE INDEX idx_ttl_cache_expires_at ON cache (expires_at);
CREATE TABLE ttl_index_table (
    schema_name text NOT NULL DEFAULT 'public',
    table_name text NOT NULL,
    column_name text NOT NULL,
    expire_after_seconds integer NOT NULL,
    active boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz DEFAULT now(),
    last_run timestamptz,
    batch_size integer NOT NULL DEFAULT 10000,
    rows_deleted_last_run bigint DEFAULT 0,
    total_rows_deleted bigint DEFAULT 0,
    index_name text,
    soft_delete_column text,
    index_created_by_extension boolean NOT NULL DEFAULT false,
    PRIMARY KEY (schema_name, table_name, column_name));
INSERT INTO ttl_index_table (schema_name, table_name, column_name, expire_after_seconds,
                             active, batch_size, index_name, soft_delete_column,
                             index_created_by_extension) VALUES
    ('app', 'sessions', 'created_at', 3600, true, 10000, 'idx_ttl_sessions_created_at', NULL, true),
    ('public', 'logs', 'logged_at', 604800, true, 500, 'idx_ttl_logs_logged_at', 'deleted_at', true),
    ('public', 'events', 'at', 3600, false, 10000, 'events_user_at', NULL, false),
    ('public', 'cache', 'expires_at', 0, true, 10000, 'idx_ttl_cache_expires_at', NULL, true),
    ('public', 'dropped_since', 'at', 60, true, 10000, 'idx_ttl_dropped_since_at', NULL, true);
CREATE FUNCTION ttl_runner() RETURNS integer LANGUAGE sql AS 'SELECT 0';
});

my ($ret, $out, $err) = $old->psql('postgres', 'CREATE EXTENSION ttl_index');
isnt($ret, 0, 'ttl_index cannot be created beside pg_ttl_index');
like($err, qr/function "ttl_runner" already exists/, 'because both have ttl_runner()');

# step 1: keep a copy of the policies; step 2: drop pg_ttl_index (here,
# what DROP EXTENSION pg_ttl_index drops); step 3: create ttl_index
$old->safe_psql('postgres', q{
CREATE TABLE pg_ttl_index_policies AS TABLE ttl_index_table;
DROP TABLE ttl_index_table;
DROP FUNCTION ttl_runner();
CREATE EXTENSION ttl_index;
});

# step 4: import
is($old->safe_psql('postgres', q{
SELECT string_agg(status, ', ') FROM ttl_import_pg_ttl_index('pg_ttl_index_policies', dry_run => true)}),
	'would import, would import, skipped: table not found, would import, paused, would import',
	'a dry run says what the import would do');
is($old->safe_psql('postgres', 'SELECT count(*) FROM ttl_index_policy'), '0',
	'and does nothing');

my $import = $old->safe_psql('postgres', q{
SELECT format('%s.%s %s %s %s %s %s %s', table_name, column_name, expire_after,
              coalesce(batch_size::text, 'default'), paused, index_name,
              coalesce(redundant_index::text, '-'), status)
  FROM ttl_import_pg_ttl_index('pg_ttl_index_policies')});
is($import, join("\n",
	'app.sessions.created_at 01:00:00 default f app.idx_ttl_sessions_created_at - imported',
	'public.cache.expires_at 00:00:00 default f idx_ttl_cache_expires_at - imported',
	'public.dropped_since.at 00:01:00 default f  - skipped: table not found',
	'public.events.at 01:00:00 default t events_at_ttl_idx - imported, paused',
	'public.logs.logged_at 168:00:00 500 f logs_logged_at_ttl_idx idx_ttl_logs_logged_at imported'),
	'the import makes each policy, reuses the idx_ttl_* indexes that serve, and names the one a soft delete no longer needs');
is($old->safe_psql('postgres', q{
SELECT string_agg(format('%s %s %s %s %s', table_name, expire_after, batch_size, paused,
                         coalesce(soft_delete_column::text, '-')), ', ' ORDER BY table_name::text)
  FROM ttl_index_stats}),
	'app.sessions 01:00:00 10000 f -, cache 00:00:00 10000 f -, events 01:00:00 10000 t -, '
	. 'logs 168:00:00 500 f deleted_at',
	'the policies are those pg_ttl_index had');
is($old->safe_psql('postgres',
	"SELECT count(*) FROM app.sessions WHERE created_at < now() - interval '1 hour'"),
	'100', 'nothing is purged before the restart');

# step 5: shared_preload_libraries names ttl_index, and a restart
$old->append_conf('postgresql.conf',
	"shared_preload_libraries = 'ttl_index'\nttl_index.launcher_naptime = 1\n");
$old->restart;
TtlIndex::wait_is($old, 'postgres', q{
SELECT (SELECT count(*) FROM app.sessions) || ' ' ||
       (SELECT count(*) FROM cache) || ' ' ||
       (SELECT count(*) FROM logs WHERE deleted_at IS NOT NULL)},
	'10 0 40', 'after the restart the worker purges the imported policies', 60);
is($old->safe_psql('postgres', 'SELECT count(*) FROM events'), '20',
	'and leaves the table whose policy pg_ttl_index had inactive');
is($old->safe_psql('postgres', 'SELECT count(*) FROM logs'), '40',
	'soft delete marks the rows and keeps them, as in pg_ttl_index');
$old->safe_psql('postgres', 'DROP INDEX idx_ttl_logs_logged_at');
is($old->safe_psql('postgres', 'SELECT ttl_resume(\'events\')'), '1', 'ttl_resume() starts the paused one');
TtlIndex::wait_is($old, 'postgres', 'SELECT count(*) FROM events', '0',
	'which the worker then purges', 60);

$old->stop;
$node->stop;

# --- 3. from pg_cron ----------------------------------------------------

# ttl_from_cron() reads pg_cron's own catalog, where pg_cron is installed
# (Debian packages it for PostgreSQL 15 only: postgresql-15-cron)
my $pkglib = `pg_config --pkglibdir`;
chomp $pkglib;
SKIP:
{
	skip 'pg_cron is not installed for this PostgreSQL', 5 unless -f "$pkglib/pg_cron.so";

	my $cron = TtlIndex::node('cron', "shared_preload_libraries = 'pg_cron,ttl_index'",
		"cron.database_name = 'postgres'");
	$cron->safe_psql('postgres', q{
CREATE EXTENSION pg_cron;
CREATE EXTENSION ttl_index;
CREATE TABLE sessions (id int, created_at timestamptz NOT NULL);
INSERT INTO sessions SELECT g, now() - interval '2 hours' FROM generate_series(1, 50) g;
SELECT cron.schedule('purge-sessions', '*/5 * * * *',
                     $$DELETE FROM sessions WHERE created_at < now() - interval '1 hour'$$);
SELECT cron.schedule('vacuum', '0 3 * * *', 'VACUUM sessions');
});
	is($cron->safe_psql('postgres',
		"SELECT jobname || ': ' || coalesce(ttl_call, note) FROM ttl_from_cron() ORDER BY jobid"),
		"purge-sessions: SELECT ttl_create_index('sessions', 'created_at', interval '1 hour');\n"
		. "vacuum: not recognised as an expiry cleanup (DELETE FROM t WHERE c < now() - interval '...')",
		'ttl_from_cron() reads the jobs from pg_cron and gives the call for the cleanup');
	is($cron->safe_psql('postgres', 'SELECT count(*) FROM ttl_index_policy'), '0',
		'and changes nothing');
	my $call = $cron->safe_psql('postgres',
		"SELECT ttl_call FROM ttl_from_cron() WHERE jobname = 'purge-sessions'");
	my $unschedule = $cron->safe_psql('postgres',
		"SELECT substring(note FROM 'then (.*)') FROM ttl_from_cron() WHERE jobname = 'purge-sessions'");
	$cron->safe_psql('postgres', "$call $unschedule");
	is($cron->safe_psql('postgres', 'SELECT jobname FROM cron.job'), 'vacuum',
		'the job is unscheduled as the note says');
	TtlIndex::wait_is($cron, 'postgres', 'SELECT count(*) FROM sessions', '0',
		'and the policy the call made purges the table', 60);
	is($cron->safe_psql('postgres', 'SELECT count(*) FROM ttl_from_cron()'), '1',
		'one job left');
	$cron->stop;
}

done_testing();
