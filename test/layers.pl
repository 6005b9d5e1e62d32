#!/usr/bin/perl
#
# test/layers.pl [SRCDIR]: checks the layout of docs/design.md on the C
# files: which file calls which (a call of a function, or a use of a
# variable, that another file defines), that no call goes up a floor,
# that no file calls back into a file that calls it, directly or through
# others, that each file is in its floor's folder, and that no file or
# header includes a header of a folder above its own.  Prints the
# offending calls and includes; exits 1 if there are any.
#
# The floors are those of docs/design.md, top first, each in a folder of
# src/ ('' is src/ itself: the module's load at the top, the settings and
# errors at the bottom).  A file missing from them is an error, so a new
# file must be given its floor here and there.
use strict;
use warnings;

my $src = shift // 'src';
my @floors = (
	[ '', qw(ttl_index.c) ],
	[ 'api', qw(api.c alter.c views.c runner.c preview.c import.c engine_test.c) ],
	[ 'bgw', qw(launcher.c worker.c helper.c hooks.c) ],
	[ 'engine', qw(pass.c) ],
	[ 'engine', qw(drain.c) ],
	[ 'engine', qw(batch.c cap.c partition.c held.c skip.c probe.c backlog.c origin.c wal.c timeout.c) ],
	[ 'policy', qw(hide.c targets.c statement.c filter.c set.c window.c expiry.c catalog.c) ],
	[ 'citus', qw(citus.c citus_follow.c citus_nodes.c) ],
	[ 'env', qw(owner.c extension.c) ],
	[ 'shared', qw(shmem.c stats.c writes.c yield.c replicas.c keepup.c parallel.c) ],
	[ 'shared', qw(slices.c) ],
	[ '', qw(settings.c errors.c) ],
);
my (%floor, %home);
for my $i (0 .. $#floors)
{
	my ($dir, @files) = @{ $floors[$i] };
	for (@files) { $floor{$_} = $i; $home{$_} = $dir; }
}
# a folder's rank: top first; src/'s own headers are the bottom's
my @folders = qw(api bgw engine policy citus env shared);
my %rank = map { $folders[$_] => $_ + 1 } 0 .. $#folders;
$rank{''} = @folders + 1;

# the files: path relative to src/, and the folder each is in
my (%path, %dir);
for my $p (glob("$src/*.c $src/*/*.c $src/*.h $src/*/*.h"))
{
	(my $rel = $p) =~ s{^\Q$src\E/}{};
	my ($d, $f) = $rel =~ m{^(?:(\w+)/)?([^/]+)$};
	$path{$f} = $rel;
	$dir{$f} = $d // '';
}

my @errors;

# each file in its floor's folder
for my $f (sort keys %path)
{
	next unless $f =~ /\.c$/ && defined $home{$f};
	push @errors, "$path{$f} is not in its floor's folder src/$home{$f}"
	  unless $dir{$f} eq $home{$f};
}

# includes: no file or header includes a header of a folder above its own
# (ttl_index.c, the top, includes them all)
for my $f (sort keys %path)
{
	next if $f eq 'ttl_index.c';
	open(my $fh, '<', "$src/$path{$f}") or die "$src/$path{$f}: $!";
	while (my $line = <$fh>)
	{
		next unless $line =~ /^\s*#\s*include\s+"([^"]+)"/;
		my $inc = $1;
		my ($d) = $inc =~ m{^(\w+)/};
		$d //= $dir{$f} if -e "$src/$dir{$f}/$inc" && $dir{$f} ne '';
		$d //= '';
		next unless defined $rank{$d};
		push @errors, "$path{$f} includes $inc, a header of a folder above its own"
		  if $rank{$d} < $rank{ $dir{$f} };
	}
	close($fh);
}

# each file's text without comments and string literals
my %text;
for my $path (glob("$src/*.c $src/*/*.c"))
{
	(my $file = $path) =~ s{.*/}{};
	open(my $fh, '<', $path) or die "$path: $!";
	local $/;
	my $t = <$fh>;
	$t =~ s{/\*.*?\*/}{ }gs;
	$t =~ s{//[^\n]*}{}g;
	$t =~ s{"(?:\\.|[^"\\])*"}{""}g;
	$text{$file} = $t;
}

# the functions and variables each file defines for others: at the start of a line, not
# static (the line above, in house style), with a body
my %defined_in;
for my $file (keys %text)
{
	while ($text{$file} =~ /^(\w[^\n;]*)\n(\w+)\([^;{]*?\)\s*\{/mg)
	{
		my ($type, $name) = ($1, $2);
		next if $type =~ /\bstatic\b/;
		$defined_in{$name} //= $file;
	}
	# and the variables it defines for others: at file scope, not static
	while ($text{$file} =~ /^(?!static\b|extern\b|typedef\b|return\b)[A-Za-z_][\w ]*?[\s*]+(\w+)(?:\[[^\]\n]*\])?\s*(?:=[^;(]*)?;\s*$/mg)
	{
		$defined_in{$1} //= $file;
	}
	# ... and those with an initializer in braces, over several lines
	while ($text{$file} =~ /^(?!static\b|extern\b|typedef\b|return\b)[A-Za-z_][\w *]*?[\s*]+(\w+)(?:\[[^\]\n]*\])?\s*=\s*\{\s*$/mg)
	{
		$defined_in{$1} //= $file;
	}
}

my %calls;						# $calls{a}{b} = [functions]
for my $file (keys %text)
{
	for my $name (sort keys %defined_in)
	{
		my $owner = $defined_in{$name};
		next if $owner eq $file;
		push @{ $calls{$file}{$owner} }, $name if $text{$file} =~ /\b\Q$name\E\b/;
	}
}

for my $file (sort keys %text)
{
	push @errors, "$file has no floor in test/layers.pl (and docs/design.md)"
	  unless defined $floor{$file};
}
for my $a (sort keys %calls)
{
	for my $b (sort keys %{ $calls{$a} })
	{
		next unless defined $floor{$a} && defined $floor{$b};
		push @errors, "$a calls up into $b: @{ $calls{$a}{$b} }"
		  if $floor{$b} < $floor{$a};
	}
}

# cycles: a file that reaches itself
for my $start (sort keys %calls)
{
	my @stack = map { [ $_, "$start -> $_" ] } sort keys %{ $calls{$start} };
	my %seen;
	while (my $e = pop @stack)
	{
		my ($f, $path) = @$e;
		if ($f eq $start)
		{
			push @errors, "cycle: $path";
			last;
		}
		next if $seen{$f}++;
		push @stack, map { [ $_, "$path -> $_" ] } sort keys %{ $calls{$f} // {} };
	}
}

if (@errors)
{
	print "$_\n" for @errors;
	exit 1;
}
my $edges = 0;
$edges += keys %{ $calls{$_} } for keys %calls;
printf "%d files, %d calls between files: none goes up a floor, no cycle\n",
  scalar(keys %text), $edges;
exit 0;
