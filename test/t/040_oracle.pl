# A randomized oracle for ttl_index's promises.
#
# Cases are generated at random from a seed (printed; TTL_ORACLE_SEED
# replays a run): a table (key type, shape), its rows (NULLs, infinities,
# sentinels, ties, wall-clock times in the hours the clocks skip or
# repeat), a policy (TTL forms, per-row TTL, filter, cap, window,
# anonymize, archive, soft delete, zones), what happens meanwhile (a
# trigger that refuses rows, a foreign key, rows locked by another
# session, a second ttl_create_index, kill -9 of the worker, helpers on or
# off) and who purges (the worker, or ttl_runner() from a session with odd
# settings, while the worker is stopped by the configuration or by a pause
# of the database).  A batch of cases is set up at once, each in its own table,
# then settled together; OracleModel.pm, written from the docs, says what
# each row must become, and the counters must equal what left or changed.
# A failure prints the seed, the case's SQL, and the rows that disagree.
#
#   TTL_ORACLE_SEED=n     replay one run
#   TTL_ORACLE_CASES=n    soak: this many cases (default 80, the normal run)
#   TTL_ORACLE_MINUTES=m  soak: batches until m minutes have passed
#   TTL_ORACLE_VERBOSE=1  name the case that kept a batch from settling
#   TTL_ORACLE_CITUS=0|all  no Citus batches, or only Citus batches (where
#                         the server has Citus)
#
# What the generator leaves out, because it cannot be checked exactly here
# (or not yet):
#   - inserts and updates that move rows across the cutoff during a pass
#     (the cutoff is the pass's own, unknown to the test);
#   - rate limits, keep-up, falling_behind, giving way (time, not state);
#   - options changed in place after a pass (the second call is in the
#     same transaction as the first: the model knows the final policy);
#   - counters after kill -9 (a crash zeroes them, by the docs): that
#     batch checks rows only;
#   - window edges on the days the clocks change, several windows;
#   - a CHECK constraint refusing an anonymize value (a BEFORE UPDATE
#     trigger refuses instead);
#   - on Citus: refusing triggers, foreign keys, locked rows, kill -9,
#     ttl_runner(), sub-partitions and inheritance (Citus distributes
#     none of them), archive (refused there); replication, standbys.
#
# Where the server under test has Citus (the 18.3 build), a coordinator
# that holds no shards and two workers run beside the single server, each
# worker's clock in another zone than the coordinator's, and a quarter of
# the worker batches run there on distributed tables (TTL_ORACLE_CITUS=0
# turns this off, =all runs every batch there): the rows must be what the same model says, each
# node's counters must add up to what left the table, and the
# coordinator's rows_deleted must be their sum.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use POSIX qw(floor);
use TtlIndex;
use OracleModel;

my $seed = $ENV{TTL_ORACLE_SEED} // (int(time()) ^ ($$ << 8)) % 1000000007;
my $want_cases = $ENV{TTL_ORACLE_CASES} // 80;
my $minutes = $ENV{TTL_ORACLE_MINUTES};
my $per_batch = 20;
srand($seed);
diag("oracle seed $seed (replay: TTL_ORACLE_SEED=$seed)");
my $t_start = time();

my $server_zone = OracleModel::pick(\@OracleModel::ZONE_NAMES);
my $main = TtlIndex::node('oracle',
	"timezone = '$server_zone'",
	'ttl_index.max_sleep = 200ms',
	'ttl_index.error_delay = 1s',
	'ttl_index.stalled_after = 0',
	'ttl_index.log_min_duration = -1',
	'max_worker_processes = 16',
	# a kill -9 of the worker restarts the server, as in production
	'restart_after_crash = on');
# the server the batch runs on: $main, or the Citus coordinator
my $node = $main;
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
CREATE DOMAIN ora_dom AS integer CHECK (VALUE >= 0);

CREATE FUNCTION ora_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.hold THEN
		-- 'mixed': a row error for odd ids, one that is not about rows for even ones
		RAISE EXCEPTION 'row % is held', OLD.id USING ERRCODE =
			CASE WHEN TG_ARGV[0] <> 'mixed' THEN TG_ARGV[0] WHEN OLD.id % 2 = 0 THEN '42501' ELSE 'P0001' END;
	END IF;
	RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;
});
# the server of foreign partitions, down (where the build has
# postgres_fdw: test/pg_build.sh builds only test_decoding of contrib)
if ($node->safe_psql('postgres', "SELECT count(*) FROM pg_available_extensions WHERE name = 'postgres_fdw'") eq '1')
{
	$node->safe_psql('postgres', q{
CREATE EXTENSION postgres_fdw;
CREATE SERVER ora_down FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '1', dbname 'nowhere');
CREATE USER MAPPING FOR PUBLIC SERVER ora_down;});
	$OracleModel::HAVE_FDW = 1;
}
else
{
	diag('postgres_fdw is not installed: no foreign partitions in this run');
}
TtlIndex::wait_worker($node, 'postgres');
# an older version of the extension: the generator uses only what 1.4
# has (no ttl_alter_index, no time_zone for the windows of a key of
# instants), so that the oracle can be run against it
my $extversion = $node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'ttl_index'");
# a library that lets ALTER DATABASE set ttl_index.enabled (a database
# paused: expiry-rules.md, A whole database): half the ttl_runner()
# batches stop the worker that way instead of by the configuration, and
# the runner's count then also says that the paused database's worker
# deleted nothing
my $db_pause_ok = ($node->psql('postgres',
	'ALTER DATABASE postgres SET ttl_index.enabled = on; ALTER DATABASE postgres RESET ttl_index.enabled'))[0] == 0;
$OracleModel::API_14 = $extversion =~ /^1\.[0-4]$/ ? 1 : 0;
# ttl_preview() (1.5), asked before each ttl_runner() (see check_preview)
my $have_preview = $node->safe_psql('postgres', "SELECT count(*) FROM pg_proc WHERE proname = 'ttl_preview'") eq '1';
$node->safe_psql('postgres', q{
CREATE FUNCTION ora_preview(t regclass) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	RETURN (SELECT pg_catalog.sum(p.rows)::text FROM public.ttl_preview(t) p);
EXCEPTION WHEN others THEN
	RETURN 'error: ' || SQLERRM;
END $$;}) if $have_preview;
diag("ttl_index $extversion" . ($OracleModel::API_14 ? ': cases use the 1.4 API only' : ''));

# Citus: a coordinator (no shards) and two workers
my ($coord, @cworkers);
my $libdir = $main->config_data('--pkglibdir');
if (-e "$libdir/citus.so" && ($ENV{TTL_ORACLE_CITUS} // 1))
{
	my @conf = ("shared_preload_libraries = 'citus,ttl_index'",
		'max_worker_processes = 24',
		'ttl_index.max_sleep = 200ms',
		'ttl_index.error_delay = 1s',
		'ttl_index.stalled_after = 0',
		'ttl_index.log_min_duration = -1');
	my @other = grep { $_ ne $server_zone } @OracleModel::ZONE_NAMES;
	$coord = TtlIndex::node('ora_coord', @conf, "timezone = '$server_zone'");
	@cworkers = map { TtlIndex::node("ora_worker$_", @conf, "timezone = '" . OracleModel::pick(\@other) . "'") } 1 .. 2;
	for my $n ($coord, @cworkers)
	{
		$n->append_conf('postgresql.conf', "citus.local_hostname = '" . $n->host . "'");
		$n->reload;
		$n->safe_psql('postgres', 'CREATE EXTENSION citus');
	}
	$coord->safe_psql('postgres', sprintf(q{SELECT citus_set_coordinator_host('%s', %d)}, $coord->host, $coord->port));
	$coord->safe_psql('postgres', sprintf(q{SELECT citus_add_node('%s', %d)}, $_->host, $_->port)) for @cworkers;
	# (both propagate to the workers)
	$coord->safe_psql('postgres', 'CREATE EXTENSION ttl_index; CREATE DOMAIN ora_dom AS integer CHECK (VALUE >= 0);');
	TtlIndex::wait_worker($_, 'postgres', 'a worker runs on Citus node ' . $_->name) for $coord, @cworkers;
	diag('Citus: a coordinator and two workers, zones ' . join(', ',
		map { $_->safe_psql('postgres', 'SHOW timezone') } $coord, @cworkers));
}

my ($ncases, $nbatch, $failed_cases) = (0, 0, 0);
while (1)
{
	last if !$minutes && $ncases >= $want_cases;
	last if $minutes && time() - $t_start > $minutes * 60;
	my $n = $minutes ? $per_batch : ($want_cases - $ncases < $per_batch ? $want_cases - $ncases : $per_batch);
	run_batch($nbatch++, $n);
	$ncases += $n;
}
diag(sprintf('oracle: %d cases in %d batches, %d failed, %.0f s, seed %d',
	$ncases, $nbatch, $failed_cases, time() - $t_start, $seed));

# the server log: no TRAP, no PANIC, no crash but the test's own kill -9
for my $n ($main, $coord // (), @cworkers)
{
	$n->stop('fast');
	my $log = slurp_file($n->logfile);
	my @bad = grep { /TRAP:|PANIC|terminated by signal (?!9)/ } split /\n/, $log;
	is(join("\n", @bad), '', 'no TRAP, PANIC or crash in the server log of ' . $n->name . " (seed $seed)");
}
done_testing();

# ---------------------------------------------------------------------------
# a batch: generate, set up, settle, check

sub run_batch
{
	my ($b, $n) = @_;
	my $all_citus = $coord && ($ENV{TTL_ORACLE_CITUS} // '') eq 'all';
	my $runner = !$all_citus && rand() < 0.35;
	my $helpers = rand() < 0.5 ? 0 : 2;
	my $on_citus = $coord && !$runner && ($all_citus || rand() < 0.33);
	my $kill = !$runner && !$on_citus && rand() < 0.1;
	my $lock = !$runner && !$on_citus && rand() < 0.3;
	my $db_pause = $runner && $db_pause_ok && rand() < 0.5;
	my $off = $runner && !$db_pause;
	$node = $on_citus ? $coord : $main;
	$main->safe_psql('postgres', 'ALTER DATABASE postgres RESET ttl_index.enabled') if $db_pause_ok;
	for my $n ($node, $on_citus ? @cworkers : ())
	{
		$n->safe_psql('postgres', "ALTER SYSTEM SET ttl_index.enabled = " . ($off ? 'off' : 'on') . ";
ALTER SYSTEM SET ttl_index.max_parallel_workers = $helpers; SELECT pg_reload_conf();");
		TtlIndex::wait_setting($n, 'ttl_index.enabled', $off ? 'off' : 'on');
	}
	if ($db_pause)
	{
		# the database's own pause: its worker leaves, none starts again
		$node->safe_psql('postgres', 'ALTER DATABASE postgres SET ttl_index.enabled = off');
		TtlIndex::wait_until($node, 'postgres',
			"SELECT state = 'paused' FROM ttl_index_databases WHERE datname = 'postgres'",
			'the database is paused for the runner batch');
	}
	elsif ($runner)
	{
		# the worker ends its run and stays idle
		TtlIndex::wait_until($node, 'postgres',
			"SELECT count(*) = 0 FROM ttl_index_progress WHERE phase NOT IN ('disabled', 'sleeping')",
			'the worker is idle for the runner batch');
		TtlIndex::wait_until($node, 'postgres',
			"SELECT count(*) = 0 FROM ttl_index_progress WHERE phase <> 'disabled'",
			'the worker says it is disabled');
	}
	my @cases = map { OracleModel::gen_case("o${b}_$_", $runner, $server_zone, $on_citus) } 1 .. $n;
	my ($sret, $serr) = (1, '');
	eval {
		($sret, undef, $serr) = $node->psql('postgres', join("\n", map { $_->{setup_sql} } @cases),
			extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
		1;
	} or $serr = $@;
	if ($sret)
	{
		# the generator made SQL that does not run: the oracle's own bug
		ok(0, "batch $b: its setup runs, seed $seed") or diag($serr);
		$node->psql('postgres', join("\n", map {
			"DROP TABLE IF EXISTS $_->{table}_ref, $_->{table} CASCADE; DROP TABLE IF EXISTS $_->{table}_arch;" } @cases));
		return;
	}
	my $before = snapshot_all([ map { $_->{table} } @cases ]);
	$_->{before} = $before->{ $_->{table} } // {} for @cases;
	my $t0 = time();
	# each case's calls in a block of its own (the same transaction, as
	# its script's BEGIN ... COMMIT), in the case's session zone; a refused
	# call says so in a WARNING and leaves the others alone
	my $do = join("\n", map {
		my $c = $_;
		my $calls = join("\n", map { (my $x = $_) =~ s/^SELECT /PERFORM /; $x } @{ $c->{calls} });
		"DO \$o\$ BEGIN PERFORM pg_catalog.set_config('TimeZone', '$c->{session_zone}', false);\n$calls\n"
		  . "EXCEPTION WHEN others THEN RAISE WARNING 'oracle refused $c->{name}: %', SQLERRM; END \$o\$;"
	} @cases);
	my (undef, undef, $err) = $node->psql('postgres', $do);
	for my $c (@cases)
	{
		$c->{create_err} = $1 if $err =~ /oracle refused $c->{name}: ([^\n]*)/;
	}
	# rows locked by another session, in one case
	my $bg;
	my ($lc) = grep { !$_->{create_err} && $_->{action} ne 'anonymize' } @cases;
	if ($lock && $lc)
	{
		my @ids = map { $_->{id} } grep { !$_->{hold} && !$_->{ref} } @{ $lc->{rows} };
		@ids = @ids[0 .. ($#ids < 4 ? $#ids : 4)];
		if (@ids)
		{
			$bg = $node->background_psql('postgres');
			$bg->query_safe('BEGIN');
			$bg->query_safe("SELECT id FROM $lc->{table} WHERE id IN (" . join(',', @ids) . ") FOR UPDATE");
			$lc->{locked} = { map { $_ => 1 } @ids };
		}
	}
	if ($kill)
	{
		my $pid = TtlIndex::worker_pid($node, 'postgres');
		if ($pid)
		{
			kill 'KILL', $pid;
			$_->{killed} = 1 for @cases;
			TtlIndex::wait_worker($node, 'postgres', 'a worker runs again after kill -9', $pid);
		}
	}
	# hide_expired: before the pass, a reader sees exactly the rows that
	# have not expired (no worker deletes in a runner batch)
	check_hidden($b, [ grep { $_->{hide} && !$_->{create_err} && !$_->{must_refuse} } @cases ])
	  if $runner;
	my $ret;
	if ($runner)
	{
		# a session with odd settings (ttl_runner() ignores ttl_index.enabled)
		my $z = OracleModel::pick([ 'Pacific/Chatham', 'America/Sao_Paulo', 'Asia/Kathmandu' ]);
		# what the pass will do, asked just before it in the same session
		my @live = grep { !$_->{create_err} } @cases;
		my $preview = $have_preview && @live ? "SELECT string_agg(t || '=' || public.ora_preview(('public.' || t)::regclass), '|') FROM (VALUES "
		  . join(', ', map { "('$_->{table}')" } @live) . ") v(t);" : '';
		my $r = $node->safe_psql('postgres', "SET TimeZone = '$z'; SET DateStyle = 'SQL, DMY';
SET search_path = pg_catalog; SET IntervalStyle = 'sql_standard';"
			. ($db_pause_ok ? ' SET ttl_index.enabled = off;' : '') . " $preview SELECT public.ttl_runner();");
		my @out = split /\n/, $r;
		$ret = $out[-1];
		if ($preview)
		{
			my %p = map { split /=/, $_, 2 } split /\|/, $out[0];
			$_->{preview} = $p{ $_->{table} } for @live;
		}
	}
	# settle: until every case checks, or the deadline; then the verdict
	my $deadline = time() + ($runner ? 10 : 30);
	my %fail;
	for (;;)
	{
		my $t1 = time();
		%fail = ();
		my $settled = 1;
		my $unsettled = '';
		my @live = grep { !$_->{create_err} && !$_->{must_refuse} } @cases;
		my $after = snapshot_all([ map { $_->{table} } @live ]);
		my $arch = snapshot_all([ map { "$_->{table}_arch" } grep { $_->{action} eq 'archive' } @live ]);
		my $stats = $on_citus ? stats_citus([ map { $_->{table} } @live ]) : stats_all([ map { $_->{table} } @live ]);
		for my $c (@cases)
		{
			my ($f, $ok_passes) = eval { check_case($c, $t0, $t1, $after->{ $c->{table} } // {},
				$arch->{"$c->{table}_arch"} // {}, $stats->{ $c->{table} }) };
			($f, $ok_passes) = ([ "the oracle itself failed: $@" ], 1) unless $f;
			$fail{ $c->{name} } = $f if @$f;
			# A policy with nothing left to do gets no second pass until
			# its next row expires (the worker sleeps till then): after one
			# pass, 6 s after the setup (the live-row counts a cap reads are
			# reported within a second, a sleep is at most 200 ms), a case
			# that checks is settled.  Soak batches waited out their 30 s
			# deadline for such a case, one batch in three.
			$ok_passes = 1 if !$ok_passes && ($stats->{ $c->{table} }{passes} // 0) >= 1
			  && $t1 - $t0 >= 6;
			if (!$ok_passes)
			{
				$settled = 0;
				$unsettled = "$c->{name} ($c->{summary}): passes " . ($stats->{ $c->{table} }{passes} // 'none');
			}
		}
		last if !%fail && $settled;
		if (time() > $deadline)
		{
			diag("batch $b: not settled at the deadline: $unsettled") if !%fail && !$settled && $ENV{TTL_ORACLE_VERBOSE};
			last;
		}
		sleep(0.3);
	}
	if ($runner)
	{
		for my $c (@cases)
		{
			my $f = check_preview($c);
			push @{ $fail{ $c->{name} } }, @$f if @$f;
		}
		my ($gone, $anon) = (0, 0);
		for my $c (@cases)
		{
			$gone += $c->{gone_count} // 0;
			$anon += $c->{anon_count} // 0;
		}
		unless ($ret == $gone + $anon)
		{
			$fail{runner} = [ "ttl_runner() returned $ret, while $gone rows left the tables (not counting dropped partitions) or were soft-deleted, and $anon were anonymized" ];
		}
	}
	# (a kill -9 of the worker may have ended the locking session too)
	eval { $bg->query_safe('COMMIT'); $bg->quit; } if $bg;
	for my $c (@cases)
	{
		my $f = $fail{ $c->{name} };
		if (!$f)
		{
			next;
		}
		$failed_cases++;
		diag("=== oracle FAILURE, seed $seed, batch $b, case $c->{name} ($c->{summary})");
		diag("  $_") for @$f;
		diag("--- to reproduce:\n$c->{setup_sql}\n$c->{create_sql}\n"
			  . ($runner ? "SELECT ttl_runner();\n" : "-- then let the worker settle\n")
			  . "SELECT * FROM ttl_index_stats WHERE table_name = '$c->{table}'::regclass;");
	}
	diag("=== $fail{runner}[0]") if $fail{runner};
	ok(!%fail, "batch $b: $n cases (" . ($runner ? 'ttl_runner()' : $on_citus ? 'Citus' : 'worker')
		  . ", helpers $helpers" . ($kill ? ', kill -9' : '') . ($lock ? ', locked rows' : '') . "), seed $seed");
	# leave nothing for the next batch's passes
	$node->psql('postgres', join("\n", map {
		"DROP TABLE IF EXISTS $_->{table}_ref, $_->{table} CASCADE; DROP TABLE IF EXISTS $_->{table}_arch;" } @cases));
}

# snapshot_all(tables): table => id => row text, in one query
sub snapshot_all
{
	my ($tables) = @_;
	return {} unless @$tables;
	my $q = join("\nUNION ALL\n", map { "SELECT '$_', id, coalesce(k::text, '<null>'), coalesce(extract(epoch FROM sd)::text, '<null>'),
	   coalesce(note, '<null>'), coalesce(amount::text, '<null>'), coalesce(at0::text, '<null>'),
	   coalesce(vc::text, '<null>'), coalesce(dom::text, '<null>'), tableoid::regclass FROM $_ WHERE id < 100000" } @$tables);
	my $out = $node->safe_psql('postgres', "SET DateStyle = ISO; SET TimeZone = 'UTC'; SET extra_float_digits = 3;\n$q");
	my %rows;
	for my $l (split /\n/, $out)
	{
		my @f = split /\|/, $l, -1;
		$rows{ $f[0] }{ $f[1] } = { k => $f[2], sd => $f[3], note => $f[4], amount => $f[5], at0 => $f[6],
			vc => $f[7], dom => $f[8], part => $f[9] };
	}
	return \%rows;
}

# check_hidden(batch, cases): for each case of a hide_expired policy, a
# role granted SELECT alone sees the rows OracleModel::hidden says are
# visible, and none it says are hidden
sub check_hidden
{
	my ($b, $cases) = @_;
	return unless @$cases;
	$node->safe_psql('postgres', q{
DO $$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'oracle_hide_reader') THEN
		CREATE ROLE oracle_hide_reader;
	END IF;
END $$;} . join('', map { "GRANT SELECT ON $_->{table} TO oracle_hide_reader;\n" } @$cases));
	my $ta = time();
	my $out = $node->safe_psql('postgres', "SET ROLE oracle_hide_reader;\n"
		. join("\nUNION ALL\n", map { "SELECT '$_->{table}', id FROM $_->{table} WHERE id < 100000" } @$cases));
	my $tb = time();
	my %seen;
	for my $l (split /\n/, $out)
	{
		my ($t, $id) = split /\|/, $l;
		$seen{$t}{$id} = 1;
	}
	my @bad;
	for my $c (@$cases)
	{
		for my $r (@{ $c->{rows} })
		{
			next if $r->{id} >= 100000;
			my $h = OracleModel::hidden($c, $r, $ta, $tb);
			my $sees = $seen{ $c->{table} }{ $r->{id} } ? 1 : 0;
			push @bad, "$c->{name} ($c->{summary}): row $r->{id} key " . ($r->{k} // 'NULL') . " is $h but the reader "
			  . ($sees ? 'sees' : 'does not see') . ' it'
			  if ($h eq 'hidden' && $sees) || ($h eq 'visible' && !$sees);
		}
	}
	ok(!@bad, "batch $b: a reader sees exactly the rows that have not expired (hide_expired), seed $seed")
	  or diag(join("\n", @bad[0 .. ($#bad < 20 ? $#bad : 19)]));
}

# stats_all(tables): table => its ttl_index_stats figures
sub stats_all
{
	my ($tables) = @_;
	return {} unless @$tables;
	my $st = $node->safe_psql('postgres', "SELECT table_name::text, passes, errors, rows_deleted, rows_archived,
	rows_soft_deleted, rows_anonymized, rows_capped, rows_held, rows_skipped_locked,
	coalesce(stalled, '<null>'), coalesce(last_error_sqlstate, '<null>'), partitions_dropped, skipped_locked
  FROM ttl_index_stats WHERE table_name::text IN (" . join(', ', map { "'$_'" } @$tables) . ")");
	my %all;
	for my $l (split /\n/, $st)
	{
		my ($t, @v) = split /\|/, $l, -1;
		my %s;
		@s{qw(passes errors deleted archived soft anon capped held locked stalled sqlstate dropped skipped_locked)} = @v;
		$all{$t} = \%s;
	}
	return \%all;
}

# stats_citus(tables): as stats_all, for distributed tables, from each
# worker node's own counters (the coordinator's policy N is -N there):
# summed over the nodes, passes and the window's word those of the node
# that is behind; the coordinator's summed rows_deleted beside them
sub stats_citus
{
	my ($tables) = @_;
	return {} unless @$tables;
	my $in = join(', ', map { "'$_'" } @$tables);
	my %id = map { my ($i, $t) = split /\|/; ($i => $t) } split /\n/,
	  $node->safe_psql('postgres', "SELECT id, relid::regclass::text FROM ttl_index_policy WHERE relid::regclass::text IN ($in)");
	my %coord = map { my ($t, $d) = split /\|/; ($t => $d) } split /\n/,
	  $node->safe_psql('postgres', "SELECT table_name::text, rows_deleted FROM ttl_index_stats WHERE table_name::text IN ($in)");
	return {} unless %id;
	my $ids = join(', ', map { -$_ } keys %id);
	my %all;
	for my $w (@cworkers)
	{
		my $st = $w->safe_psql('postgres', "SELECT -s.policy_id, coalesce(s.passes, 0), coalesce(s.errors, 0), coalesce(s.rows_deleted, 0),
	coalesce(s.rows_archived, 0), coalesce(s.rows_soft_deleted, 0), coalesce(s.rows_anonymized, 0), coalesce(s.rows_capped, 0),
	coalesce(s.rows_held, 0), coalesce(s.rows_skipped_locked, 0), coalesce(h.stalled, '<null>'), coalesce(s.last_error_sqlstate, '<null>'),
	coalesce(s.partitions_dropped, 0), coalesce(s.skipped_locked, 0)
  FROM ttl_index_policy_stats() s LEFT JOIN ttl_index_policy_health() h USING (policy_id)
 WHERE s.policy_id IN ($ids)");
		for my $l (split /\n/, $st)
		{
			my ($pid, @v) = split /\|/, $l, -1;
			my $t = $id{$pid} // next;
			my %s;
			@s{qw(passes errors deleted archived soft anon capped held locked stalled sqlstate dropped skipped_locked)} = @v;
			my $a = $all{$t} //= { passes => $s{passes}, stalled => $s{stalled}, sqlstate => $s{sqlstate} };
			$a->{$_} += $s{$_} for qw(errors deleted archived soft anon capped held locked dropped skipped_locked);
			$a->{passes} = $s{passes} if $s{passes} < $a->{passes};
			$a->{stalled} = $s{stalled} if $a->{stalled} eq '<null>';
			$a->{sqlstate} = $s{sqlstate} if $a->{sqlstate} eq '<null>';
			$a->{nodes}++;
		}
	}
	for my $t (keys %all)
	{
		$all{$t}{passes} = 0 if ($all{$t}{nodes} // 0) < @cworkers;
		$all{$t}{coord_deleted} = $coord{$t};
	}
	return \%all;
}

sub same_row
{
	my ($x, $y) = @_;
	return join('|', map { $x->{$_} } qw(k sd note amount at0 vc dom)) eq
	  join('|', map { $y->{$_} } qw(k sd note amount at0 vc dom));
}

sub rowtxt
{
	my ($x) = @_;
	return defined $x ? join('|', map { "$_=$x->{$_}" } qw(k sd note amount at0 vc dom)) : '<absent>';
}

# check_case(case, t0, t1): the failures, and whether the policy has had
# the passes the settle waits for
sub check_case
{
	my ($c, $t0, $t1, $after, $arch, $sp) = @_;
	my @f;
	# a call the docs say must be refused, or one refused that must not be
	if ($c->{create_err})
	{
		return ([ "ttl_create_index failed: $c->{create_err}" ], 1) unless $c->{must_refuse};
		return ([], 1);
	}
	return ([ "ttl_create_index accepted what it must refuse: $c->{must_refuse}" ], 1) if $c->{must_refuse};
	my $exp = OracleModel::expect($c, $t0, $t1);
	push @f, "the policy is not in ttl_index_stats" unless $sp;
	my %s = %{ $sp // {} };
	my $policy_error = $c->{refuse} && ($c->{refuse} eq '42501' || $c->{refuse} eq 'mixed');
	my ($gone, $capped_gone, $ambig_gone, $soft_n, $anon_n) = (0, 0, 0, 0, 0);
	my ($held_go, $held_may, $waiting, $locked_left, $unrep) = (0, 0, 0, 0, 0);
	my %dropped_part;
	for my $r (@{ $c->{rows} })
	{
		my $id = $r->{id};
		my $e = $exp->{$id};
		my $b = $c->{before}{$id};
		my $a = $after->{$id};
		my $fate = $e->{fate};
		# rows locked by another session may stay, and say so (one that
		# the worker reached before the lock was taken is done already: a
		# soft-deleted row stays, changed, and is not a locked row left;
		# while a failure that is not about rows fails every batch, a
		# failed batch counts nothing, its skips neither)
		if ($c->{locked}{$id} && $fate eq 'go')
		{
			$fate = 'may';
			$locked_left++ if $a && same_row($a, $b) && !$policy_error;
		}
		# a failure that is not about rows fails the policy's batches: its
		# other expired rows may stay, and the failure is counted
		$fate = 'may' if $policy_error && $fate eq 'go';
		$held_go++ if $fate eq 'held' && $e->{age_fate} eq 'go';
		$held_may++ if $fate eq 'held' && $e->{age_fate} eq 'may';
		$waiting++ if $fate eq 'wait';
		$unrep++ if $e->{unrepresentable} && $a;
		if (!$a)
		{
			$gone++;
			$capped_gone++ if $e->{why} eq 'capped';
			$ambig_gone++ if $e->{why} eq 'capped or expired';
			if ($c->{action} =~ /soft|anon/ || $fate =~ /^(stay|held|wait)$/)
			{
				push @f, "row $id is gone but must stay ($fate" . ($e->{why} ? ", $e->{why}" : '') . "): was " . rowtxt($b);
			}
			next;
		}
		my $changed = !same_row($a, $b);
		if ($c->{action} eq 'soft_delete' && $changed)
		{
			$soft_n++;
			my $want = $e->{sd};
			# READING: a key past the ends of the timestamp range (a
			# sentinel epoch) gets some soft-delete time; -infinity its own
			my $close = !defined $want ? 0
			  : $want eq '-inf' ? $a->{sd} eq '-Infinity'
			  : $want eq '+inf' ? $a->{sd} eq 'Infinity'
			  : abs($want) > 6e10 ? 1
			  : $a->{sd} !~ /Infinity/ && (abs($a->{sd} - $want) < 2e-6
				|| (defined $e->{sd_alt} && $e->{sd_alt} !~ /inf/ && abs($a->{sd} - $e->{sd_alt}) < 2e-6));
			my $ok = $fate =~ /go|may/ && $b->{sd} eq '<null>' && $a->{sd} ne '<null>' && $close;
			push @f, "row $id: soft-deleted to $a->{sd}, the model says $fate with expiry " . ($want // 'none') . ": was " . rowtxt($b)
			  unless $ok;
			next;
		}
		if ($c->{action} eq 'anonymize' && $changed)
		{
			$anon_n++;
			my $ok = $fate =~ /go|may/;
			for my $col (keys %{ $e->{set} })
			{
				my $w = $e->{set}{$col} // '<null>';
				$ok = 0 if $a->{$col} ne $w;
			}
			for my $col (qw(k sd note amount at0 vc dom))
			{
				$ok = 0 if !exists $e->{set}{$col} && $a->{$col} ne $b->{$col};
			}
			push @f, "row $id: anonymized to " . rowtxt($a) . ", the model says $fate, with "
			  . join(', ', map { "$_=" . ($e->{set}{$_} // '<null>') } sort keys %{ $e->{set} }) . "; was " . rowtxt($b)
			  unless $ok;
			next;
		}
		if ($changed)
		{
			push @f, "row $id changed: " . rowtxt($b) . ' -> ' . rowtxt($a);
			next;
		}
		if ($fate eq 'go')
		{
			my $what = $c->{action} eq 'anonymize' ? 'not anonymized' : $c->{action} eq 'soft_delete' ? 'not soft-deleted' : 'still there';
			push @f, "row $id is $what but must go ($e->{why}): " . rowtxt($a);
		}
	}
	# a cap by bytes over its table (padded rows): the rows it took are all
	# older than every row it kept, the kept rows a newest run (OracleModel,
	# READING)
	if ($c->{max_bytes} && $c->{pad} && !$policy_error)
	{
		my ($oldest_kept, $newest_capped);
		for my $r (@{ $c->{rows} })
		{
			next unless defined $r->{k};
			my $e = $exp->{ $r->{id} };
			my $key = OracleModel::order_key($c, $r->{k});
			if ($after->{ $r->{id} })
			{
				next if $e->{fate} =~ /^(held|wait)$/ || $c->{locked}{ $r->{id} };
				$oldest_kept = $key
				  if !defined $oldest_kept || OracleModel::cmp_keys($key, $oldest_kept) < 0;
			}
			elsif ($e->{why} eq 'capped' && $e->{age_fate} eq 'stay')
			{
				$newest_capped = $key
				  if !defined $newest_capped || OracleModel::cmp_keys($key, $newest_capped) > 0;
			}
		}
		push @f, "the cap by bytes took a row with key @$newest_capped, not older than a row it kept (@$oldest_kept)"
		  if defined $oldest_kept && defined $newest_capped
		  && OracleModel::cmp_keys($newest_capped, $oldest_kept) >= 0;
	}
	# the counters equal what left or changed in the table
	my $ok_passes = ($s{passes} // 0) >= 2 || $waiting || ($s{errors} // 0) >= 2
	  || !OracleModel::window_open($c, $t1);
	my $part_rows = 0;
	if (!$c->{killed} && defined $s{passes})
	{
		if (($s{dropped} // 0) > 0)
		{
			my %live = map { $_->{part} => 1 } values %$after;
			my $parts = $node->safe_psql('postgres', "SELECT string_agg(c::regclass::text, ',') FROM pg_partition_tree('$c->{table}') p(c) WHERE isleaf");
			my %exists = map { $_ => 1 } split /,/, ($parts // '');
			for my $b (values %{ $c->{before} })
			{
				$part_rows++ if !$exists{ $b->{part} };
			}
		}
		if ($c->{action} =~ /delete|archive/)
		{
			# A partition is dropped at the start of a pass, when its lock is
			# free at once; one that was not (the oracle's own snapshot reads
			# it) has its rows deleted by batches, and may be dropped empty by
			# a later pass: its rows were counted as deleted.  So the rows of
			# dropped partitions are those that left without a count, at
			# most all of them.
			if ($s{deleted} <= $gone && $s{deleted} >= $gone - $part_rows)
			{
				$part_rows = $gone - $s{deleted};
			}
			else
			{
				push @f, "rows_deleted $s{deleted}, while $gone rows left the table ($part_rows in dropped partitions)";
			}
			push @f, "rows_capped $s{capped}, while $capped_gone rows went for the cap before they expired"
			  . ($ambig_gone ? " (and $ambig_gone that were expiring)" : '')
			  unless $s{capped} >= $capped_gone && $s{capped} <= $capped_gone + $ambig_gone;
		}
		else
		{
			push @f, "rows_deleted $s{deleted} for a policy that keeps its rows, $gone gone" if $s{deleted} || $gone;
		}
		if ($c->{action} eq 'archive')
		{
			my @lost = grep { !$after->{$_} && !$arch->{$_} } keys %{ $c->{before} };
			my @twice = grep { $after->{$_} && $arch->{$_} } keys %{ $c->{before} };
			push @f, "rows neither in the table nor in the archive: @lost" if @lost;
			push @f, "rows both in the table and in the archive: @twice" if @twice;
			push @f, "rows_archived $s{archived}, while the archive holds " . scalar(keys %$arch)
			  unless $s{archived} == scalar(keys %$arch);
		}
		push @f, "the coordinator's rows_deleted is $s{coord_deleted}, the nodes' sum $s{deleted}"
		  if exists $s{coord_deleted} && ($s{coord_deleted} // '<none>') ne $s{deleted};
		push @f, "rows_soft_deleted $s{soft}, while $soft_n rows were soft-deleted" unless $s{soft} == $soft_n;
		push @f, "rows_anonymized $s{anon}, while $anon_n rows were anonymized" unless $s{anon} == $anon_n;
		# held rows are explained, with the right reason
		if (!$policy_error && $held_go && !$held_may && $ok_passes)
		{
			push @f, "rows_held $s{held}, while $held_go expired rows are refused or referenced"
			  . ($unrep ? " (and $unrep may be held: no soft-delete time fits them)" : '')
			  unless $s{held} >= $held_go && $s{held} <= $held_go + $unrep;
		}
		# (with a foreign partition whose server is down, its 08001 may be the last error)
		if ($policy_error && $held_go && ($s{errors} == 0 || $s{sqlstate} !~ /^(42501|P0001)$/)
			&& !($c->{shape} eq 'foreign' && $s{sqlstate} eq '08001'))
		{
			push @f, "a policy-failing refusal is not counted: errors $s{errors}, sqlstate $s{sqlstate}";
		}
		# stalled is the worker's (its last pass): not checked after ttl_runner()
		if ($waiting && !$c->{runner} && $s{stalled} ne 'waiting for its purge window')
		{
			push @f, "$waiting expired rows wait for a closed window, and stalled says '$s{stalled}'";
		}
		if ($locked_left && $s{locked} == 0 && $s{skipped_locked} == 0 && $s{stalled} ne 'locked rows')
		{
			push @f, "$locked_left locked rows stay, and neither rows_skipped_locked nor stalled says so (locked: "
			  . join(',', sort { $a <=> $b } keys %{ $c->{locked} }) . ')';
		}
	}
	# what ttl_runner() counts (reference.md): rows deleted, archived,
	# soft-deleted or anonymized, as rows_deleted not those of partitions
	# it dropped whole
	$c->{gone_count} = $c->{action} eq 'anonymize' ? 0 : $gone + $soft_n - $part_rows;
	$c->{anon_count} = $anon_n;
	# what ttl_preview() must have said (check_preview)
	$c->{acted} = $gone + $soft_n + $anon_n;
	$c->{may_n} = scalar(grep { $_->{fate} eq 'may' } values %$exp);
	$c->{unrep_n} = scalar(grep { $_->{unrepresentable} } values %$exp);
	$c->{window_closed} = !OracleModel::window_open($c, $t0) || !OracleModel::window_open($c, $t1);
	return (\@f, $ok_passes || $c->{runner});
}

# check_preview(case): ttl_preview(), asked just before ttl_runner() in the
# same session, said how many rows the pass would delete, archive,
# soft-delete or anonymize (the rows of dropped partitions included): that
# many left or changed, give or take the rows the model leaves open (they
# expire between t0 and t1, or, soft-deleted, have no time the column can
# hold: the statement fails on them and they are held, while the preview's
# count runs no soft-delete expression).  Not checked where the preview
# cannot know: a trigger that refuses rows (it runs none), a purge window
# (ttl_runner() skips a policy outside it, the preview counts its rows all
# the same), a foreign partition whose server is down.
sub check_preview
{
	my ($c) = @_;
	return [] unless defined $c->{preview} && defined $c->{acted};
	return [] if $c->{create_err} || $c->{must_refuse} || $c->{refuse} || $c->{shape} eq 'foreign'
	  || $c->{window_closed};
	my $p = $c->{preview};
	diag("$c->{name}: ttl_preview() said $p, $c->{acted} left or changed") if $ENV{TTL_ORACLE_VERBOSE};
	return [ "ttl_preview() failed: $p" ] unless $p =~ /^\d+$/;
	my $slack = $c->{may_n} + $c->{unrep_n};
	return [] if abs($p - $c->{acted}) <= $slack;
	return [ "ttl_preview() said $p rows, while $c->{acted} left the table or changed"
		  . ($slack ? " (give or take $slack)" : '') ];
}
