# ttl_index.wal_compression: the workers' batches compress the full-page
# images of their WAL (most of a drain's WAL: the first change to each page
# after a checkpoint logs the whole page) with the method it names, lz4 by
# default where the build has it, whatever the server's or the database's
# wal_compression,
# as long as a trial (a batch not compressed, then one compressed) shows that
# compressing shrinks the WAL: on rows that do not compress it stops.
# "server" leaves them as wal_compression says.  ttl_runner() compresses
# its own batches' the same way, leaving the session's wal_compression as
# it was.  A streaming standby replays
# the compressed WAL.  A method the build lacks is refused, and nothing
# changes.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $primary = PostgreSQL::Test::Cluster->new('walc_primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ttl_index'
ttl_index.launcher_naptime = 1
ttl_index.max_parallel_workers = 0
wal_compression = off
autovacuum = off
});
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION ttl_index');
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('walc_standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;

my $methods = $primary->safe_psql('postgres',
	"SELECT array_to_string(enumvals, ' ') FROM pg_settings WHERE name = 'ttl_index.wal_compression'");
my $has_lz4 = $methods =~ /\blz4\b/;
note("methods this build offers: $methods");

# set(value): ttl_index.wal_compression, reloaded
sub set
{
	my ($value) = @_;
	$primary->safe_psql('postgres', "ALTER SYSTEM SET ttl_index.wal_compression = '$value'");
	$primary->reload;
	TtlIndex::wait_is($primary, 'postgres', 'SHOW ttl_index.wal_compression', $value,
		"ttl_index.wal_compression is $value");
	return;
}

# drain(table[, rows, extra DDL, doc]): expired rows of 100 bytes (and a
# doc column, when given its value), each page's first change after a
# checkpoint; returns the bytes of WAL the worker's drain wrote
sub drain
{
	my ($table, $rows, $ddl, $doc) = @_;
	$rows //= 100000;
	$ddl //= '';
	my $cols = $doc ? ', doc' : '';
	$primary->safe_psql('postgres', qq{
CREATE TABLE $table (ts timestamptz NOT NULL, payload text, doc text);
$ddl
INSERT INTO $table (ts, payload$cols) SELECT now() - interval '1 day', rpad(g::text, 100, '.')@{[$doc ? ", $doc" : '']} FROM generate_series(1, $rows) g;
CREATE INDEX ON $table (ts);
VACUUM $table;
CHECKPOINT;
});
	my $lsn = $primary->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
	$primary->safe_psql('postgres', "SELECT ttl_create_index('$table', 'ts', 60)");
	$primary->poll_query_until('postgres',
		"SELECT rows_deleted = $rows FROM ttl_index_stats WHERE table_name = '$table'::regclass")
	  or die "$table not drained";
	return $primary->safe_psql('postgres', "SELECT pg_current_wal_lsn() - '$lsn'");
}

my $default = $primary->safe_psql('postgres', 'SHOW ttl_index.wal_compression');
is($default, $has_lz4 ? 'lz4' : 'server', 'the default is lz4 where the build has it, else the server\'s');

# the database's own wal_compression, which the table owner's settings
# bring (owner.c), does not undo the workers' choice
$primary->safe_psql('postgres', 'ALTER DATABASE postgres SET wal_compression = off');

set('off');
my $off = drain('t_off');
note("off: $off bytes of WAL");

$primary->safe_psql('postgres', 'ALTER SYSTEM RESET ttl_index.wal_compression');
$primary->reload;
TtlIndex::wait_is($primary, 'postgres', 'SHOW ttl_index.wal_compression', $default, 'reset to the default');
my $dflt = drain('t_default');
if ($has_lz4)
{
	cmp_ok($dflt, '<', 0.7 * $off,
		"default (lz4), though the database sets wal_compression = off: the drain writes less WAL ($dflt bytes, $off without compression)");
}
else
{
	cmp_ok($dflt, '>', 0.8 * $off, "default (server, wal_compression = off): not compressed ($dflt bytes, $off off)");
}

set('pglz');
my $pglz = drain('t_pglz');
cmp_ok($pglz, '<', 0.7 * $off, "pglz, the database's off as well: the drain writes less WAL ($pglz bytes)");

# "server": as wal_compression says
$primary->safe_psql('postgres', 'ALTER DATABASE postgres RESET wal_compression');
set('server');
$primary->safe_psql('postgres', 'ALTER SYSTEM SET wal_compression = pglz');
$primary->reload;
TtlIndex::wait_is($primary, 'postgres', 'SHOW wal_compression', 'pglz', 'the server compresses with pglz');
my $server = drain('t_server');
cmp_ok($server, '<', 0.7 * $off, "server, wal_compression = pglz: the drain writes less WAL ($server bytes)");
$primary->safe_psql('postgres', 'ALTER SYSTEM RESET wal_compression');
$primary->reload;

# rows that do not compress (2 KB of distinct hashes, stored out of line):
# the trial's compressed batch saves little, and the pass stops compressing
my $method = $has_lz4 ? 'lz4' : 'pglz';
set($method);
$primary->safe_psql('postgres', q{ALTER SYSTEM SET log_min_messages = debug1});
$primary->reload;
my $from = -s $primary->logfile;
my $toast = 'ALTER TABLE %s ALTER COLUMN doc SET STORAGE EXTERNAL;';
my $random = q{(SELECT string_agg(md5(g::text || ':' || i), '') FROM generate_series(1, 64) i)};
drain('t_random', 20000, sprintf($toast, 't_random'), $random);
# and rows that do: the pass goes on compressing
drain('t_repeated', 20000, sprintf($toast, 't_repeated'), 'repeat(md5(g::text), 64)');
$primary->safe_psql('postgres', q{ALTER SYSTEM RESET log_min_messages});
$primary->reload;
my @said = grep { /compress its full-page images: / || /compresses its full-page images: / }
  split /\n/, substr(slurp_file($primary->logfile), $from);
my ($random_id, $repeated_id) = split /\|/, $primary->safe_psql('postgres',
	q{SELECT (SELECT id FROM ttl_index_policy WHERE relid = 't_random'::regclass),
	         (SELECT id FROM ttl_index_policy WHERE relid = 't_repeated'::regclass)});
ok((grep { /policy $random_id does not compress/ } @said), "$method, rows that do not compress: the pass stops compressing")
  or diag(join("\n", @said));
ok(!(grep { /policy $random_id compresses/ } @said), 'and never decides to compress them');
ok((grep { /policy $repeated_id compresses/ } @said), "$method, rows that compress: the pass goes on compressing")
  or diag(join("\n", @said));
set('server');

# ttl_runner() compresses its batches' images as the workers do, for its
# own batches only: a table owner's session, not a superuser, has
# wal_compression as it was after the call, in its transaction and after
# it.  (The workers are off: the runner does the drain.)
$primary->safe_psql('postgres', q{ALTER SYSTEM SET ttl_index.enabled = off});
$primary->reload;
TtlIndex::wait_is($primary, 'postgres', 'SHOW ttl_index.enabled', 'off', 'the workers are off');
$primary->safe_psql('postgres', q{CREATE ROLE walc_owner LOGIN; GRANT CREATE ON SCHEMA public TO walc_owner});
# runner_drain(table): the WAL ttl_runner() wrote, as walc_owner, and
# wal_compression in its transaction after the call and after the commit
# (the tables drained before are vacuumed first: the runner's pass over
# their dead rows would prune them, and log it)
sub runner_drain
{
	my ($table) = @_;
	$primary->safe_psql('postgres', qq{
SET ROLE walc_owner;
CREATE TABLE $table (ts timestamptz NOT NULL, payload text);
INSERT INTO $table SELECT now() - interval '1 day', rpad(g::text, 100, '.') FROM generate_series(1, 100000) g;
CREATE INDEX ON $table (ts);
SELECT ttl_create_index('$table', 'ts', 60);
RESET ROLE;
VACUUM;
CHECKPOINT;});
	my $lsn = $primary->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
	my $out = $primary->safe_psql('postgres', qq{
SET ROLE walc_owner;
BEGIN;
SELECT ttl_runner();
SHOW wal_compression;
COMMIT;
SHOW wal_compression;});
	my $wal = $primary->safe_psql('postgres', "SELECT pg_current_wal_lsn() - '$lsn'");
	return ($wal, $out);
}
set('off');
my ($roff, $roff_out) = runner_drain('t_runner_off');
is($roff_out, "100000\noff\noff", 'ttl_runner(), ttl_index.wal_compression = off: every row, wal_compression off');
set($method);
my ($ron, $ron_out) = runner_drain('t_runner_on');
is($ron_out, "100000\noff\noff",
	"ttl_runner(), $method: every row, and the session's wal_compression is off in its transaction and after");
cmp_ok($ron, '<', 0.7 * $roff, "ttl_runner(), $method: its drain writes less WAL ($ron bytes, $roff without compression)");
set('server');
$primary->safe_psql('postgres', q{ALTER SYSTEM RESET ttl_index.enabled});
$primary->reload;

# the standby replays the compressed full-page images
my $lsn = $primary->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
$primary->wait_for_catchup($standby, 'replay', $lsn);
is($standby->safe_psql('postgres',
	'SELECT (SELECT count(*) FROM t_off) + (SELECT count(*) FROM t_default) + (SELECT count(*) FROM t_pglz)'
	  . ' + (SELECT count(*) FROM t_server) + (SELECT count(*) FROM t_random) + (SELECT count(*) FROM t_repeated)'
	  . ' + (SELECT count(*) FROM t_runner_off) + (SELECT count(*) FROM t_runner_on)'),
	'0', 'the standby replayed every drain: no row left there');
unlike(slurp_file($standby->logfile), qr/FATAL|PANIC|TRAP:|could not restore image/,
	'the standby logged no replay failure');

# bad input: a clear error, and the setting stays as it was
my ($ret, $out, $err) = $primary->psql('postgres', "ALTER SYSTEM SET ttl_index.wal_compression = 'brotli'");
isnt($ret, 0, 'an unknown method is refused');
like($err, qr/invalid value for parameter "ttl_index.wal_compression": "brotli"/, 'with the parameter and the value named');
$primary->reload;
is($primary->safe_psql('postgres', 'SHOW ttl_index.wal_compression'), 'server', 'and the setting is unchanged');
if (!$has_lz4)
{
	($ret, $out, $err) = $primary->psql('postgres', "ALTER SYSTEM SET ttl_index.wal_compression = 'lz4'");
	isnt($ret, 0, 'lz4, which this build cannot write, is refused');
}

is($primary->safe_psql('postgres', 'SELECT sum(errors) FROM ttl_index_stats'), '0', 'no errors counted');

$standby->stop;
$primary->stop;
done_testing();
