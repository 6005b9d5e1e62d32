# Docs that are tests: every psql example of README.md, CONTRIBUTING.md and
# docs/*.md runs on a fresh server with the worker, and what it prints is
# compared with what the page shows.
#
# An example is a fenced block that shows psql's output (a "(N rows)"
# footer, a command tag such as "CREATE TABLE", a table's header rule or
# an expanded display's "-[ RECORD 1 ]"): its statements are the
# lines that are not output, run with psql -a as a reader would type them,
# in a database of the page's own, one block after another, so that a block
# sees what the page's earlier blocks made.  A block without output (the
# calls a page lists) is not an example of output and is not run.
#
# The comparison masks what changes from run to run: timestamps, pids,
# durations below a minute, a zone's UTC offset "now" (it follows
# daylight-saving time), and column widths (runs of spaces and of
# dashes count as one).  An HTML comment on the line before a block, which
# a reader of the page does not see, says what the page leaves to the
# prose:
#   <!-- test: wait SQL -->    before the block, wait until SQL is true (the
#                              worker's pass the prose describes)
#   <!-- test: setup SQL -->   before the block, run SQL unseen
#   <!-- test: skip REASON --> the block is not run (a Citus cluster, a
#                              figure of a benchmark machine); the reason is
#                              printed
# Several may stand on consecutive lines.  A failure prints the page, the
# line of the block and a diff.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use TtlIndex;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use File::Path;

my $root = "$FindBin::RealBin/../..";
my @pages = ('README.md', 'CONTRIBUTING.md', map { s{^\Q$root\E/}{}r } sort glob("$root/docs/*.md"));

# The pages show what PostgreSQL 15 and 18 print, where their output was
# checked; psql and the server format some results differently from one
# major to the next, so the comparison runs on those two (every run of the
# test command has both)
my ($docs_major) = `pg_config --version` =~ /(\d+)/;
plan skip_all => "the pages' output is compared on PostgreSQL 15 and 18; this is $docs_major"
  unless $docs_major == 15 || $docs_major == 18;

my $node = TtlIndex::node('docs', 'ttl_index.naptime = 1', 'ttl_index.stalled_after = 0',
	"timezone = 'UTC'", "lc_messages = 'C'",
	# README.md and operations.md decode the worker's deletes
	'wal_level = logical');

# blocks(page): the page's examples, each with its line, lines and directives
sub blocks
{
	my ($page) = @_;
	open(my $fh, '<', "$root/$page") or die "$page: $!";
	my @lines = <$fh>;
	close $fh;
	chomp @lines;
	my (@blocks, @directives, $in, $cur);
	for my $i (0 .. $#lines)
	{
		my $l = $lines[$i];
		if (!$in && $l =~ /^<!-- test: (\w+)\s*(.*?)\s*-->$/)
		{
			push @directives, [ $1, $2 ];
			next;
		}
		if ($l =~ /^```/)
		{
			if (!$in)
			{
				$in = 1;
				$cur = { line => $i + 1, lines => [], directives => [@directives] };
			}
			else
			{
				$in = 0;
				push @blocks, $cur if grep {
					/^\(\d+ rows?\)$/
					  || /^(CREATE|INSERT|UPDATE|DELETE|ALTER|DROP|SET)( [A-Z]+)*( \d+)*$/
					  # a result shown without its footer, or in expanded display
					  || /^-{3,}(\+-+)*\s*$/ || /^-\[ RECORD \d+ \]/
				} @{ $cur->{lines} };
			}
			@directives = ();
			next;
		}
		if ($in) { push @{ $cur->{lines} }, $l; next; }
		@directives = () if $l =~ /\S/;
	}
	return @blocks;
}

# is_statement_start(line): a line a reader types, not one psql prints
sub is_statement_start
{
	my ($l) = @_;
	# psql's command tags ("CREATE TABLE", "INSERT 0 3") and table rules
	return 0 if $l =~ /^[A-Z]+( [A-Z]+)*( \d+)*\s*$/ || $l =~ /^-+(\+-+)*\s*$/;
	return $l =~ /^(SELECT|WITH|CREATE|INSERT|UPDATE|DELETE|ALTER|DROP|SET|RESET|SHOW|CALL|BEGIN|COMMIT|ROLLBACK|TRUNCATE|GRANT|REVOKE|VACUUM|ANALYZE|EXPLAIN|TABLE|VALUES|DO|LOCK|COPY|COMMENT|REFRESH)\b/i
	  || $l =~ /^\\/ || $l =~ /^--/;
}

# split_block(lines): the statements a reader types, as one script.  A
# statement ends at a semicolon outside a dollar-quoted body, or at a
# meta-command that sends it (\g, \gexec, \gx, \gset); what psql echoes
# of the statements \gexec runs (lines without a semicolon) is output.
sub split_block
{
	my @lines = @_;
	my ($script, $open, $dollar, $gexec) = ('', 0, undef, 0);
	for my $l (@lines)
	{
		if (!$open && is_statement_start($l))
		{
			next if $gexec && $l !~ /^\\/ && $l !~ /^--/ && $l !~ /;\s*(--.*)?$/;
			$gexec = 0;
			$script .= "$l\n";
			$dollar = undef;
			$open = 1;
			$open = 0 if $l =~ /^\\/ || $l =~ /^--/;
		}
		elsif ($open)
		{
			$script .= "$l\n";
		}
		else
		{
			next;
		}
		next if !$open;
		# dollar quotes opened and closed on this line
		my $rest = $l;
		while ($rest =~ /(\$[A-Za-z_]*\$)/g)
		{
			my $tag = $1;
			if (!defined $dollar) { $dollar = $tag; }
			elsif ($dollar eq $tag) { $dollar = undef; }
		}
		next if defined $dollar;
		if ($l =~ /\\g(exec|x|set)?\b[^;]*$/)
		{
			$open = 0;
			$gexec = 1 if $1 && $1 eq 'exec';
		}
		$open = 0 if $l =~ /;\s*(--.*)?$/;
	}
	return $script;
}

# normalize(text): what the comparison keeps
sub normalize
{
	my ($t) = @_;
	my @out;
	for my $l (split /\n/, $t)
	{
		$l =~ s/\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?([+-]\d\d(:\d\d)?)?( [A-Z]{3,4})?/<timestamp>/g;
		$l =~ s/\b(pid|worker_pid)\b(\s*[=:]\s*)\d+/$1$2<pid>/g;
		$l =~ s/\b00:00:\d\d(\.\d+)?\b/<seconds>/g;
		# a zone's offset on the day of the run (daylight-saving time)
		$l =~ s/\(UTC[+-]\d\d:\d\d now\)/(UTC<offset> now)/g;
		$l =~ s/\s+$//;
		$l =~ s/^\s+//;
		$l =~ s/-{2,}/--/g;
		$l =~ s/\s+/ /g;
		$l =~ s/\s*\|\s*/|/g;
		$l =~ s/\s*\+\s*/+/g if $l =~ /^[-+]+$/;
		next if $l eq '';
		push @out, $l;
	}
	return join("\n", @out) . "\n";
}

sub wait_true
{
	my ($db, $sql, $what) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		my ($r, $o) = $node->psql($db, $sql);
		return 1 if $r == 0 && $o eq 't';
		sleep(0.2);
	}
	diag("timed out waiting for: $sql ($what)");
	return 0;
}

# the .want and .got files of this run only
File::Path::rmtree("${PostgreSQL::Test::Utils::tmp_check}/docs");

my $n = 0;
for my $page (@pages)
{
	my @blocks = blocks($page);
	next unless @blocks;
	(my $db = lc($page)) =~ s/[^a-z0-9]+/_/g;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	for my $b (@blocks)
	{
		my $name = "$page:$b->{line}";
		my @skip = grep { $_->[0] eq 'skip' } @{ $b->{directives} };
		if (@skip)
		{
			note("$name not run: $skip[0][1]");
			next;
		}
		for my $d (@{ $b->{directives} })
		{
			$node->safe_psql($db, $d->[1]) if $d->[0] eq 'setup';
			wait_true($db, $d->[1], $name) if $d->[0] eq 'wait';
		}
		my $script = split_block(@{ $b->{lines} });
		my ($stdout, $stderr);
		IPC::Run::run([ 'psql', '-X', '-a', '-h', $node->host, '-p', $node->port,
			'-d', $db ], '<', \$script, '>&', \$stdout);
		my $want = normalize(join("\n", @{ $b->{lines} }));
		my $got = normalize($stdout);
		$n++;
		if (!is($got, $want, "$name: the example prints what the page shows"))
		{
			# for a diff by hand: tmp_check/docs/<page>_<line>.{want,got}
			(my $f = $name) =~ s/[^A-Za-z0-9]+/_/g;
			mkdir("${PostgreSQL::Test::Utils::tmp_check}/docs");
			PostgreSQL::Test::Utils::append_to_file("${PostgreSQL::Test::Utils::tmp_check}/docs/$f.want", $want);
			PostgreSQL::Test::Utils::append_to_file("${PostgreSQL::Test::Utils::tmp_check}/docs/$f.got", $got);
		}
	}
}
cmp_ok($n, '>=', 30, "the pages' examples ran ($n)");

$node->stop;
done_testing();
