#!/usr/bin/perl
#
# test/layers.pl [SRCDIR]: checks the layout of docs/design.md on the C
# files: which file calls which (a call of a function, or a use of a
# variable, that another file defines), that no call goes up a floor,
# and that no file calls back into a file that calls it, directly or
# through others.  Prints the offending calls with the functions that
# make them; exits 1 if there are any.
#
# The floors are those of docs/design.md, top first; a file missing from
# them is an error, so a new file must be given its floor here and there.
use strict;
use warnings;

my $src = shift // 'src';
my @floors = (
	[qw(ttl_index.c)],
	[qw(api.c alter.c views.c runner.c import.c engine_test.c)],
	[qw(launcher.c worker.c helper.c hooks.c)],
	[qw(pass.c)],
	[qw(drain.c)],
	[qw(batch.c cap.c partition.c held.c skip.c probe.c backlog.c origin.c wal.c timeout.c)],
	[qw(targets.c statement.c filter.c set.c window.c owner.c expiry.c catalog.c citus.c citus_follow.c citus_nodes.c)],
	[qw(extension.c)],
	[qw(shmem.c stats.c writes.c yield.c replicas.c keepup.c parallel.c)],
	[qw(settings.c errors.c slices.c)],
);
my %floor;
for my $i (0 .. $#floors) { $floor{$_} = $i for @{ $floors[$i] }; }

# each file's text without comments and string literals
my %text;
for my $path (glob("$src/*.c"))
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

my @errors;
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
