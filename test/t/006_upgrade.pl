# ALTER EXTENSION ttl_index UPDATE, from every installed version that is not
# the default one.  For each such version: install it, create policies and
# expired rows, update, and check that the updated extension is exactly a
# fresh install of the default version (same member objects, function and
# view definitions, catalog columns, constraints, indexes, triggers, event
# triggers, grants, comments, pg_dump configuration), that the policies
# survived, and that the worker purges them afterwards.  With only the
# default version installed, it checks that version installs and is listed,
# and skips the upgrade part.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# The worker stays idle (enabled = off) until every old version has been
# installed, filled and updated, so the expired rows are still there to be
# purged after the update.
my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ttl_index'
ttl_index.launcher_naptime = 1
ttl_index.enabled = off
max_worker_processes = 16
});
$node->start;

# Everything that defines the installed extension in the current database,
# one item per object, each with the properties an upgrade script could get
# wrong.  Columns are numbered by position among the live ones (an upgrade
# cannot reorder columns, so a new column must go last in the fresh script
# too; a dropped column leaves a gap that is not a difference).
my $fingerprint_sql = q{
WITH ext AS (SELECT e.* FROM pg_extension e WHERE e.extname = 'ttl_index'),
mem AS (
	SELECT d.classid, d.objid, d.objsubid FROM pg_depend d, ext
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'),
rels AS (SELECT objid AS oid FROM mem WHERE classid = 'pg_class'::regclass),
items(item) AS (
	SELECT 'member ' || pg_describe_object(classid, objid, objsubid) FROM mem
	UNION ALL
	SELECT 'extension relocatable=' || extrelocatable || ' schema=' || extnamespace::regnamespace
		   || ' dumped=' || coalesce((SELECT string_agg(c::regclass::text || ' where ' || quote_literal(w), ', ' ORDER BY c::regclass::text)
									   FROM unnest(extconfig, extcondition) AS u(c, w)), '')
	  FROM ext
	UNION ALL
	SELECT 'function ' || p.oid::regprocedure || ' acl=' || coalesce(p.proacl::text, 'default')
		   || ' comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '') || E'\n'
		   || CASE WHEN p.prokind = 'a' THEN 'aggregate' ELSE pg_get_functiondef(p.oid) END
	  FROM pg_proc p JOIN mem ON mem.classid = 'pg_proc'::regclass AND mem.objid = p.oid
	UNION ALL
	SELECT 'relation ' || c.oid::regclass || ' kind=' || c.relkind::text || ' persistence=' || c.relpersistence::text
		   || ' owner=' || c.relowner::regrole || ' acl=' || coalesce(c.relacl::text, 'default')
		   || ' options=' || coalesce(c.reloptions::text, '') || ' rls=' || c.relrowsecurity
		   || ' comment=' || coalesce(obj_description(c.oid, 'pg_class'), '')
	  FROM pg_class c JOIN rels USING (oid)
	UNION ALL
	SELECT 'view ' || c.oid::regclass || E'\n' || pg_get_viewdef(c.oid)
	  FROM pg_class c JOIN rels USING (oid) WHERE c.relkind IN ('v', 'm')
	UNION ALL
	SELECT 'column ' || c.oid::regclass || ' #' || row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum)
		   || ' ' || quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod)
		   || ' notnull=' || a.attnotnull || ' default=' || coalesce(pg_get_expr(ad.adbin, ad.adrelid), '')
		   || ' identity=' || a.attidentity::text || ' generated=' || a.attgenerated::text
		   || ' collation=' || a.attcollation::regcollation || ' acl=' || coalesce(a.attacl::text, '')
		   || ' comment=' || coalesce(col_description(c.oid, a.attnum), '')
	  FROM pg_class c JOIN rels USING (oid)
	  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	  LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
	UNION ALL
	SELECT 'constraint ' || con.conrelid::regclass || ' ' || quote_ident(con.conname) || ' '
		   || pg_get_constraintdef(con.oid)
	  FROM pg_constraint con JOIN rels ON rels.oid = con.conrelid
	UNION ALL
	SELECT 'index ' || pg_get_indexdef(i.indexrelid)
	  FROM pg_index i JOIN rels ON rels.oid = i.indrelid
	UNION ALL
	SELECT 'trigger ' || pg_get_triggerdef(t.oid) || ' enabled=' || t.tgenabled::text
	  FROM pg_trigger t JOIN rels ON rels.oid = t.tgrelid WHERE NOT t.tgisinternal
	UNION ALL
	SELECT 'policy ' || pol.polrelid::regclass || ' ' || quote_ident(pol.polname) || ' cmd=' || pol.polcmd::text
		   || ' permissive=' || pol.polpermissive || ' roles=' || pol.polroles::regrole[]::text
		   || ' using=' || coalesce(pg_get_expr(pol.polqual, pol.polrelid), '')
		   || ' check=' || coalesce(pg_get_expr(pol.polwithcheck, pol.polrelid), '')
	  FROM pg_policy pol JOIN rels ON rels.oid = pol.polrelid
	UNION ALL
	SELECT 'sequence ' || s.seqrelid::regclass || ' type=' || s.seqtypid::regtype || ' start=' || s.seqstart
		   || ' increment=' || s.seqincrement || ' min=' || s.seqmin || ' max=' || s.seqmax
		   || ' cache=' || s.seqcache || ' cycle=' || s.seqcycle || ' owned_by='
		   || coalesce((SELECT string_agg(pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid), ', ')
						  FROM pg_depend d
						 WHERE d.classid = 'pg_class'::regclass AND d.objid = s.seqrelid
						   AND d.deptype IN ('a', 'i')), '')
	  FROM pg_sequence s JOIN rels ON rels.oid = s.seqrelid
	UNION ALL
	SELECT 'event trigger ' || quote_ident(e.evtname) || ' on ' || e.evtevent
		   || ' tags=' || coalesce(e.evttags::text, '') || ' function=' || e.evtfoid::regprocedure
		   || ' enabled=' || e.evtenabled::text
	  FROM pg_event_trigger e JOIN mem ON mem.classid = 'pg_event_trigger'::regclass AND mem.objid = e.oid
)
SELECT string_agg(item, chr(30) ORDER BY item) FROM items};

sub fingerprint
{
	my ($db) = @_;
	return split /\x1e/, $node->safe_psql($db, $fingerprint_sql);
}

# same_objects(\@got, \@expected, name): one test, listing the differences
sub same_objects
{
	my ($got, $expected, $name) = @_;
	my %got = map { $_ => 1 } @$got;
	my %expected = map { $_ => 1 } @$expected;
	my @missing = grep { !$got{$_} } @$expected;
	my @extra = grep { !$expected{$_} } @$got;
	ok(!@missing && !@extra, $name)
	  or diag(join("\n", (map { "missing after the update: $_" } @missing),
			(map { "not in a fresh install: $_" } @extra)));
}

# the policies, in the columns every version has
my $policies_sql = q{
SELECT id, relid::text, column_name, attnum, expire_after, batch_size, enabled
  FROM ttl_index_policy ORDER BY id};

# the indexes ttl_create_index made, known by their comment (1.1 and later;
# 1.0 recorded them in ttl_index_policy.created_index, which 1.1 drops)
my $made_indexes_sql = q{
SELECT string_agg(indexrelid::regclass::text, ',' ORDER BY 1) FROM pg_index
 WHERE obj_description(indexrelid, 'pg_class') = 'created by ttl_index; dropped by ttl_drop_index()'};

my $default = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'ttl_index'");
isnt($default, '', "ttl_index is available, default version '$default'");
my @versions = split /\n/, $node->safe_psql('postgres',
	"SELECT version FROM pg_available_extension_versions WHERE name = 'ttl_index' ORDER BY version");
ok((grep { $_ eq $default } @versions), 'pg_available_extension_versions lists the default version')
  or diag "listed: @versions";
my @old = grep { $_ ne $default } @versions;
diag("installed versions: @versions; default: $default");

# a fresh install of the default version: the reference
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
my ($ret, $stdout, $stderr) = $node->psql('fresh', 'CREATE EXTENSION ttl_index');
is($ret, 0, 'CREATE EXTENSION installs the default version') or diag $stderr;
is($stderr, '', 'CREATE EXTENSION says nothing');
is($node->safe_psql('fresh', "SELECT extversion FROM pg_extension WHERE extname = 'ttl_index'"),
	$default, "fresh install is at version $default");
my @fresh = fingerprint('fresh');

# the fingerprint really covers every kind of object the extension has
foreach my $kind ('member', 'extension', 'function', 'relation', 'view', 'column',
	'constraint', 'index', 'trigger', 'sequence', 'event trigger')
{
	cmp_ok(scalar(grep { /^\Q$kind\E / } @fresh), '>', 0, "fingerprint of a fresh install has $kind items");
}
ok((grep { /^extension .* dumped=.*\bttl_index_policy where ''/ } @fresh),
	'fingerprint records what pg_dump dumps');

SKIP:
{
	skip "only the default version $default of ttl_index is installed: no upgrade path to test", 1
	  unless @old;

	my %expired;
	$node->safe_psql('postgres', 'CREATE ROLE upgrade_reader');
	foreach my $v (@old)
	{
		(my $db = "from_$v") =~ s/\W/_/g;
		$node->safe_psql('postgres', "CREATE DATABASE $db");
		($ret, $stdout, $stderr) = $node->psql($db, "CREATE EXTENSION ttl_index VERSION '$v'");
		is($ret, 0, "$v: CREATE EXTENSION ttl_index VERSION '$v'") or diag $stderr;
		next if $ret != 0;
		is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'ttl_index'"),
			$v, "$v: installed at version $v");
		$node->safe_psql($db, q{
CREATE TABLE sessions (id int, created_at timestamptz);
SELECT ttl_create_index('sessions', 'created_at', 3600);
CREATE TABLE tokens (expires_at timestamptz);
CREATE INDEX tokens_expires_at ON tokens (expires_at);
SELECT ttl_create_index('tokens', 'expires_at', 0, 500);
INSERT INTO sessions SELECT g, now() - interval '2 hours' FROM generate_series(1, 300) g;
INSERT INTO sessions SELECT g, now() + interval '1 hour' FROM generate_series(1, 3) g;
INSERT INTO tokens SELECT now() - interval '1 minute' FROM generate_series(1, 300);
INSERT INTO tokens SELECT now() + interval '1 hour' FROM generate_series(1, 3);
});
		my $before = $node->safe_psql($db, $policies_sql);

		($ret, $stdout, $stderr) = $node->psql($db, 'ALTER EXTENSION ttl_index UPDATE');
		is($ret, 0, "$v: ALTER EXTENSION ttl_index UPDATE succeeds") or diag $stderr;
		is($stderr, '', "$v: ALTER EXTENSION ttl_index UPDATE says nothing");
		is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'ttl_index'"),
			$default, "$v: updated to $default");
		same_objects([ fingerprint($db) ], \@fresh, "$v: updated extension equals a fresh install of $default");
		is($node->safe_psql($db, $policies_sql), $before, "$v: policies survived the update");
		is($node->safe_psql($db, $made_indexes_sql), 'sessions_created_at_ttl_idx',
			"$v: the index ttl_create_index made is known as such after the update, the reused one is not");
		is($node->safe_psql($db,
			"SELECT string_agg(table_name::text || '.' || column_name, ',' ORDER BY policy_id) FROM ttl_index_stats"),
			'sessions.created_at,tokens.expires_at', "$v: ttl_index_stats shows them");
		is($node->safe_psql($db, 'SELECT (SELECT count(*) FROM sessions) + (SELECT count(*) FROM tokens)'),
			'606', "$v: expired rows still there (worker disabled so far)");
		$expired{$db} = $v;
	}

	# now let the workers purge (within seconds: do not wait minutes when
	# they never do)
	$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl_index.enabled = on');
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	local $PostgreSQL::Test::Utils::timeout_default = 30;
	foreach my $db (sort keys %expired)
	{
		my $v = $expired{$db};
		ok($node->poll_query_until($db,
			"SELECT (SELECT count(*) FROM sessions) = 3 AND (SELECT count(*) FROM tokens) = 3"),
			"$v: the worker purges the expired rows after the update");
		ok($node->poll_query_until($db,
			"SELECT sum(rows_deleted) = 600 AND sum(errors) = 0 FROM ttl_index_stats"),
			"$v: ttl_index_stats counts the purge, no errors");

		# what 1.4 adds works on an updated extension: a cap alone, anonymize
		# inside a window
		($ret, $stdout, $stderr) = $node->psql($db, q{
CREATE TABLE capped (at timestamptz);
INSERT INTO capped SELECT now() - g * interval '1 s' FROM generate_series(1, 100) g;
SELECT ttl_create_index('capped', 'at', NULL, max_rows => 10);
CREATE TABLE members (at timestamptz, email text);
INSERT INTO members SELECT now() - interval '2 hours', 'x' FROM generate_series(1, 10);
SELECT ttl_create_index('members', 'at', 3600, set_columns => 'email = NULL', purge_window => '00:00-24:00');
}, on_error_stop => 1);
		is($ret, 0, "$v: a capped and an anonymizing policy can be made after the update") or diag $stderr;
		ok($node->poll_query_until($db, q{
SELECT (SELECT count(*) FROM capped) = 10 AND (SELECT count(*) FROM members) = 10
   AND (SELECT count(email) FROM members) = 0}),
			"$v: the worker caps and anonymizes after the update");

		# what 1.5 adds works on an updated extension: ttl_alter_index()
		# changes one option, the views say why a figure is missing and
		# ttl_summary() whether a policy is healthy
		$node->safe_psql($db, q{SELECT ttl_alter_index('capped', 'at', max_rows => 20)});
		is($node->safe_psql($db, q{
SELECT (SELECT expire_after IS NULL FROM ttl_index_policy WHERE relid = 'capped'::regclass),
       (SELECT max_rows FROM ttl_index_policy WHERE relid = 'capped'::regclass),
       (SELECT count(*) FROM ttl_index_stats WHERE backlog_reason IS NULL OR backlog_reason IS NOT NULL),
       (SELECT count(*) FROM ttl_summary() WHERE healthy IS NOT NULL)}),
			't|20|4|4', "$v: ttl_alter_index, backlog_reason and ttl_summary's health after the update");

		# and hide_expired, whose row-level security policy calls the
		# ttl_index_purging() the update made, and ttl_preview(): a reader
		# does not see the expired rows the paused policy keeps, the
		# preview counts them (paused in the transaction that makes it, so
		# that no pass of the worker starts in between)
		$node->safe_psql($db, q{
CREATE TABLE carts (updated_at timestamptz);
GRANT SELECT ON carts TO upgrade_reader;
BEGIN;
SELECT ttl_create_index('carts', 'updated_at', 60, hide_expired => true);
SELECT ttl_pause('carts');
COMMIT;
INSERT INTO carts SELECT now() - interval '1 hour' FROM generate_series(1, 4);
INSERT INTO carts VALUES (now() + interval '1 hour');
});
		is($node->safe_psql($db, q{
SELECT (SELECT count(*) FROM carts) || ' ' ||
       (SELECT "rows" FROM ttl_preview('carts')) || ' ' ||
       (SELECT count(*) FROM pg_policy WHERE polrelid = 'carts'::regclass);
SET ROLE upgrade_reader;
SELECT count(*) FROM carts}),
			"5 4 2\n1", "$v: hide_expired and ttl_preview after the update");
	}
}

$node->stop;
done_testing();
