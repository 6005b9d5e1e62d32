# OracleModel: the reference model of test/t/040_oracle.pl, written from
# the docs (README.md, docs/reference.md, docs/expiry-rules.md,
# docs/limits.md), never from src/ and never by running the extension's
# SQL.  It owns no server state: given a generated case (its table, its
# rows as the text they were inserted as, its policy) and the two instants
# that bound the settle, it says for each row whether it must be gone,
# must stay or may go, what an anonymized or soft-deleted row must hold,
# and what the counters must say.
#
# Readings chosen where the docs leave room (each is marked READING below):
#   - '-infinity' keys (timestamptz, timestamp, date, float8, numeric) are
#     in the past: they expire under any TTL ("a row expires when column +
#     expire_after is in the past"); 'infinity' and NaN never expire.
#   - a numeric epoch beyond the range of timestamps (a bigint
#     -9223372036854775808 s) denotes "that many seconds after 1970": an
#     instant in the past, so it expires under a TTL; under a cap-only
#     policy (expire_after NULL) nothing expires by age, whatever the key.
#   - the cap: the newest max_rows rows by key (in the index's order: by
#     wall-clock value for timestamp and date keys) among the non-NULL keys are
#     never deleted for the cap, nor rows tied with the max_rows-th newest
#     key; rows with a NULL key never go.  Rows older than that cut must
#     be gone once the worker has settled (the count is reported within a
#     second; the settle waits for passes that start after that).  NaN and
#     'infinity' sort newest.
#   - rows_held: every expired row the last pass left in place because a
#     trigger refused it or a foreign key references it, whatever their
#     number ("the held set must not have a cliff": issue 45 case 5; the
#     docs' "at most 1,000 rows are held" bounds memory, not the promise
#     that "every other expired row is deleted in the same pass").
#   - with ttl_column on a timestamp key, column + ttl_column is read in
#     the zone either before or after the addition; where the two readings
#     disagree about a row's fate the row may go.
#   - max_bytes (at least 1 MB): a case's table without padding is far
#     below it (at most a few thousand rows of a few columns: under 300
#     kB), and the cap takes no row.  With padding (each row TOASTed,
#     incompressible bytes, the table about 2 MB), how many rows fit is
#     the engine's reading of the files ("the footprint the rows have
#     now"), which the model cannot know: each row the cap may take is
#     "may", but the rows with the newest key always stay (at least one
#     row fits), and the checker asserts that the rows the cap took are
#     all older than every row it kept (the kept rows are a newest run).
#   - on Citus the model is the same: a distributed table's rows, cap and
#     windows are the table's (README, Citus), whatever the node holding
#     a row and its clock's zone.
#   - hide_expired (expiry-rules.md, Hiding expired rows): a reader
#     subject to row security sees a row exactly when a pass starting at
#     its now() would not find it expired by age: the filter does not
#     select it, its key or per-row TTL is NULL, or its expiry is not
#     before now().  A soft-deleted row whose column is set is expired by
#     age all the same: hidden.  Checked before the pass, in the batches
#     where ttl_runner() makes the pass (no worker deletes meanwhile).
#   - ttl_runner() returns the rows deleted, archived or soft-deleted; an
#     anonymize policy's rows are not in its return value (the docs list
#     the three actions only), so the model does not check it for them.
package OracleModel;

use strict;
use warnings;
use Time::Local qw(timegm);
use POSIX qw(floor);
use Time::HiRes ();

# --- time zones -----------------------------------------------------------
# The zones the generator uses, with their rules since 2007 (the generated
# wall-clock keys lie between 2020 and 2030): standard and daylight offsets
# in seconds east of UTC, and the daylight period of a year in UTC.
our %ZONES = (
	'UTC'              => [0, undef],
	'Asia/Tokyo'       => [32400, undef],
	'Asia/Kolkata'     => [19800, undef],
	'Europe/Berlin'    => [3600, 'eu'],
	'America/New_York' => [-18000, 'us'],
);
our @ZONE_NAMES = sort keys %ZONES;
# whether the server has postgres_fdw, for foreign partitions (set by the test)
our $HAVE_FDW = 0;
# whether the extension installed is 1.4 or older (set by the test): no
# ttl_alter_index, no time_zone for the windows of a key of instants
our $API_14 = 0;

# day of month of the n-th Sunday (n = -1: the last) of a month (1-12)
sub sunday
{
	my ($y, $m, $n) = @_;
	if ($n > 0)
	{
		my $wday = (gmtime(timegm(0, 0, 0, 1, $m - 1, $y)))[6];
		return 1 + (7 - $wday) % 7 + 7 * ($n - 1);
	}
	my $last = (gmtime(timegm(0, 0, 0, 1, $m % 12, $y + ($m == 12)) - 86400))[3];
	my $wday = (gmtime(timegm(0, 0, 0, $last, $m - 1, $y)))[6];
	return $last - $wday;
}

# offset_at(zone, instant): seconds east of UTC in force at the instant
sub offset_at
{
	my ($zone, $t) = @_;
	my ($std, $rule) = @{ $ZONES{$zone} // die "unknown zone $zone" };
	return $std unless $rule;
	my $y = (gmtime($t))[5] + 1900;
	# far from now (keys at the ends of time) the change of clocks does not
	# decide whether a row expires, and Time::Local cannot place such
	# years: read them in standard time
	return $std if $y < 1902 || $y > 9999;
	my ($from, $to);
	if ($rule eq 'eu')
	{
		# last Sunday of March 01:00 UTC to last Sunday of October 01:00 UTC
		$from = timegm(0, 0, 1, sunday($y, 3, -1), 2, $y);
		$to = timegm(0, 0, 1, sunday($y, 10, -1), 9, $y);
	}
	else
	{
		# second Sunday of March 02:00 EST to first Sunday of November 02:00 EDT
		$from = timegm(0, 0, 7, sunday($y, 3, 2), 2, $y);
		$to = timegm(0, 0, 6, sunday($y, 11, 1), 10, $y);
	}
	return ($t >= $from && $t < $to) ? $std + 3600 : $std;
}

# wall_to_instant(zone, wall): the instant a wall-clock time (given as
# seconds as if it were UTC) denotes in the zone, as the docs say
# PostgreSQL reads it: in a skipped hour with the offset from before the
# change, in a repeated hour its later occurrence
sub wall_to_instant
{
	my ($zone, $w) = @_;
	my ($std, $rule) = @{ $ZONES{$zone} };
	return $w - $std unless $rule;
	my @ok = grep { offset_at($zone, $w - $_) == $_ } ($std, $std + 3600);
	return $w - $std unless @ok;    # the gap: the offset before the change (standard)
	my @t = sort { $b <=> $a } map { $w - $_ } @ok;
	return $t[0];                   # the later occurrence
}

# instant_to_wall(zone, instant): the wall-clock time (as if UTC)
sub instant_to_wall
{
	my ($zone, $t) = @_;
	return $t + offset_at($zone, $t);
}

# add_months_wall(wall, n): a wall-clock time (as if UTC) n calendar months
# later (earlier when n < 0), as expiry-rules.md (Months and years) says
# PostgreSQL counts them: the time of day kept, a day past the end of the
# month reached clamped to its last day (March 31 less a month is
# February 28 or 29)
sub add_months_wall
{
	my ($w, $n) = @_;
	my $s = floor($w);
	my $frac = $w - $s;
	my @g = gmtime($s);
	my $mi = $g[5] * 12 + $g[4] + $n;    # months since 1900-01
	my ($y, $mo) = (floor($mi / 12) + 1900, $mi % 12);
	my $last = (gmtime(timegm(0, 0, 0, 1, ($mo + 1) % 12, $y + ($mo == 11)) - 86400))[3];
	my $d = $g[3] > $last ? $last : $g[3];
	return timegm(@g[0, 1, 2], $d, $mo, $y) + $frac;
}

# month_zone(case): the zone a policy's months are counted in: the
# policy's zone (time_zone, else the server's), UTC for an epoch key
sub month_zone
{
	my ($c) = @_;
	return 'UTC' if $c->{unit};
	return $c->{zone} if $c->{keytype} eq 'timestamp' || $c->{keytype} eq 'date';
	return $c->{window_zone} // $c->{server_zone};
}

# months_expiry(zone, t, n): the instant after which a row whose instant
# plus the TTL's fixed part is t has expired under n calendar months: the
# cutoff (now less n months in the zone) passes t then.  Usually t plus n
# months; when that was clamped to the end of a shorter month, the cutoff
# passes t only when the next month starts (a row of January 31 under '1
# month' goes at midnight on March 1)
sub months_expiry
{
	my ($zone, $t, $n) = @_;
	# keys at the ends of time: their fate does not depend on the calendar
	# (and Time::Local cannot place such years)
	return $t + $n * 2629800 if $t < -3e10 || $t > 2.5e11;
	my $w = instant_to_wall($zone, $t);
	my $a = add_months_wall($w, $n);
	return wall_to_instant($zone, $a) if add_months_wall($a, -$n) >= $w;
	my @g = gmtime(floor($a));
	my $next = timegm(0, 0, 0, 1, ($g[4] + 1) % 12, $g[5] + 1900 + ($g[4] == 11));
	return wall_to_instant($zone, $next) - 1e-6;
}

# months_back(zone, t, n): t less n calendar months in the zone
sub months_back
{
	my ($zone, $t, $n) = @_;
	return $t - $n * 2629800 if $t < -3e10 || $t > 2.5e11;
	return wall_to_instant($zone, add_months_wall(instant_to_wall($zone, $t), -$n));
}

# fmt(seconds[, with fraction]): 'YYYY-MM-DD HH:MM:SS[.ffffff]' of a UTC time
sub fmt
{
	my ($t, $frac) = @_;
	my $s = floor($t);
	my $us = sprintf('%.0f', ($t - $s) * 1e6);
	if ($us >= 1000000) { $s++; $us = 0; }
	my @g = gmtime($s);
	my $out = sprintf('%04d-%02d-%02d %02d:%02d:%02d', $g[5] + 1900, $g[4] + 1, @g[3, 2, 1, 0]);
	$out .= sprintf('.%06d', $us) if $frac && $us;
	return $out;
}

# parse(text): seconds (as if UTC) of 'YYYY-MM-DD[ HH:MM:SS[.f]][+00]'
sub parse
{
	my ($txt) = @_;
	# the ends of the range: far enough for every rule here
	return -2.1e11 if $txt =~ /BC/;
	return 9.2e12 if $txt =~ /^\d{5,}-/;
	my ($y, $mo, $d, $h, $mi, $s, $f) =
	  $txt =~ /^(\d{4})-(\d\d)-(\d\d)(?: (\d\d):(\d\d):(\d\d)(\.\d+)?)?/
	  or die "cannot parse $txt";
	return timegm($s // 0, $mi // 0, $h // 0, $d, $mo - 1, $y) + ($f // 0);
}

# --- keys -------------------------------------------------------------------
my %UNIT = (s => 1, ms => 1e3, us => 1e6, ns => 1e9);

# instant(case, key text): the instant a stored key denotes (seconds since
# the epoch; '+inf', '-inf' or undef for NULL and NaN, which never expire)
sub instant
{
	my ($c, $k) = @_;
	return undef unless defined $k;
	my $type = $c->{keytype};
	return '+inf' if $k =~ /^'?\+?infinity'?$/i;
	return '-inf' if $k =~ /^'?-infinity'?$/i;
	return undef if $k =~ /nan/i;
	# the ends of the timestamp range (finite, far away)
	return -2.1e11 if $k =~ /BC/;
	return 9.2e12 if $k =~ /^\d{5,}-/;
	if ($type eq 'timestamptz')
	{
		(my $v = $k) =~ s/\+00$//;
		return parse($v);
	}
	return wall_to_instant($c->{zone}, parse($k)) if $type eq 'timestamp' || $type eq 'date';
	# numeric epochs: that many units after 1970-01-01 00:00 UTC
	return $k / $UNIT{ $c->{unit} };
}

# order key of a stored key, for the cap (ascending: oldest first); NaN and
# 'infinity' sort newest, as in the column's btree order
sub order_key
{
	my ($c, $k) = @_;
	my $i = instant($c, $k);
	my $inf = 9**9**9;
	return [ 3, 0 ] if !defined $i;    # NaN (NULL is handled by the caller)
	return [ 2, 0 ] if $i eq '+inf';
	return [ 0, 0 ] if $i eq '-inf';
	# the index's order (expiry-rules.md, Size caps: the cut is read from
	# the index): the raw value orders a numeric key exactly, a timestamptz
	# by its instant, and a timestamp or date by its wall-clock value, not
	# its instant: a key in the hour the clocks skip (02:50, read as 03:50
	# daylight time) sorts below 03:10 there, though it is a later instant
	return [ 1, $c->{keytype} eq 'timestamptz' ? $i
		: $c->{keytype} =~ /^(timestamp|date)$/ ? ($k =~ /BC|^\d{5,}-/ ? $i : parse($k))
		: $k + 0 ];
}

# cmp_keys(a, b): the btree order of two order_key()s
sub cmp_keys
{
	my ($a, $b) = @_;
	return $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1];
}

# expiry(case, row): when the row expires, in seconds (or '+inf'/'-inf'),
# or undef when it never does; a second value for the other reading of a
# per-row TTL on a timestamp key (see READING above)
sub expiry
{
	my ($c, $r) = @_;
	return undef unless defined $c->{ttl};    # cap-only: nothing expires by age
	my $i = instant($c, $r->{k});
	return undef unless defined $i;
	# a NULL per-row TTL never expires, whatever the key
	return undef if $c->{ttl_column} && !defined $r->{rttl};
	return $i if $i eq '+inf' || $i eq '-inf';
	my $e = $i + $c->{ttl};
	# calendar months: counted after the fixed part (Months and years)
	return months_expiry(month_zone($c), $e, $c->{ttl_months}) if $c->{ttl_months};
	if ($c->{ttl_column})
	{
		return undef unless defined $r->{rttl};
		$e += $r->{rttl};
		if ($c->{keytype} eq 'timestamp')
		{
			my $alt = wall_to_instant($c->{zone}, parse($r->{k}) + $r->{rttl}) + $c->{ttl};
			return ($e, $alt);
		}
	}
	return $e;
}

# fate of an expiry given the settle's bounds: 'go' when it had expired
# before the settle began (every pass that counts began after that), 'stay'
# when it had not at the check, else 'may'
sub fate_of
{
	my ($e, $t0, $t1) = @_;
	return 'stay' unless defined $e;
	return 'stay' if $e eq '+inf';
	return 'go' if $e eq '-inf';
	return 'go' if $e < $t0;
	return 'stay' if $e > $t1;
	return 'may';
}

# hidden(case, row, ta, tb): whether a reader subject to row security, whose
# now() lies in [ta, tb], sees the row of a hide_expired policy: 'visible',
# 'hidden' or 'may' (an expiry inside [ta, tb], or two readings that differ)
sub hidden
{
	my ($c, $r, $ta, $tb) = @_;
	return 'visible' if $c->{filter} && !($r->{f} // 0);
	my @v = map {
		my $e = $_;
		!defined $e || $e eq '+inf' ? 'visible'
		  : $e eq '-inf' ? 'hidden'
		  : $e < $ta ? 'hidden'
		  : $e > $tb ? 'visible' : 'may'
	} expiry($c, $r);
	return (@v == 2 && $v[0] ne $v[1]) ? 'may' : $v[0];
}

# window_open(case, instant): whether one of the policy's windows holds it,
# read in the policy's zone (time_zone for timestamp/date keys; for other
# keys the time_zone given for the windows, else the server's TimeZone).  A
# window may name the days it starts on ('Fri-Mon 22:00-02:00'): its tail
# past midnight belongs to the day before
sub window_open
{
	my ($c, $t) = @_;
	return 1 unless $c->{window};
	my $zone = ($c->{keytype} eq 'timestamp' || $c->{keytype} eq 'date') ? $c->{zone}
	  : ($c->{window_zone} // $c->{server_zone});
	my $w = instant_to_wall($zone, $t);
	my $min = floor(($w % 86400) / 60);
	# 0 Monday ... 6 Sunday (1970-01-01 was a Thursday)
	my $today = (floor($w / 86400) + 3) % 7;
	for my $part (split /,/, $c->{window})
	{
		my ($days, $a, $b) = $part =~ /^\s*(?:([A-Za-z]+(?:\s*-\s*[A-Za-z]+)?)\s+)?(\d\d:\d\d)-(\d\d:\d\d)\s*$/ or die "window $part";
		my %on = map { $_ => 1 } (defined $days ? day_range($days) : (0 .. 6));
		my ($ah, $am) = split /:/, $a;
		my ($bh, $bm) = split /:/, $b;
		my ($s, $e) = ($ah * 60 + $am, $bh * 60 + $bm);
		if ($s < $e) { return 1 if $on{$today} && $min >= $s && $min < $e; }
		else
		{
			return 1 if $on{$today} && $min >= $s;
			return 1 if $on{ ($today + 6) % 7 } && $min < $e;
		}
	}
	return 0;
}

# day_range('Fri-Mon'): the days (0 Monday ... 6 Sunday) of a day or a
# range of days, which wraps over the week's end
sub day_range
{
	my ($text) = @_;
	my @names = qw(mon tue wed thu fri sat sun);
	my %num = map { $names[$_] => $_ } 0 .. 6;
	my ($f, $l) = map { $num{ lc substr($_, 0, 3) } // die "day $_" } split /\s*-\s*/, $text;
	$l //= $f;
	my @d = ($f);
	push @d, ($d[-1] + 1) % 7 while $d[-1] != $l;
	return @d;
}

# --- typmods ------------------------------------------------------------------
# coerce(column, value text): the value an UPDATE's assignment stores into
# the anonymized columns the generator uses (numeric(5,2), timestamp(0),
# varchar(10), the domain over integer, text); undef is NULL
sub coerce
{
	my ($col, $v) = @_;
	return undef unless defined $v;
	if ($col eq 'amount')
	{
		# numeric(5,2): rounded half away from zero to 2 places
		my $x = $v + 0;
		my $r = floor(abs($x) * 100 + 0.5 + 1e-9) / 100;
		return sprintf('%.2f', $x < 0 ? -$r : $r);
	}
	if ($col eq 'at0')
	{
		# timestamp(0): rounded to the second, half up
		my $t = parse($v);
		return fmt(floor($t + 0.5));
	}
	return $v;
}

# --- the model ------------------------------------------------------------------
# expect(case, t0, t1): per row id, { fate => go|stay|may, why => ..., and
# for an anonymized or soft-deleted row the values it must hold }
# cap_kept(case, outcome, row): whether a row a cap would take stays
# because the table keeps it (a refusing trigger's held row, a row a
# foreign key references), marking its outcome so: held, and whether
# rows_held counts the rows the cap wanted is left open (age_fate may)
sub cap_kept
{
	my ($c, $o, $r) = @_;
	return 1 if $o->{why} eq 'refused' || $o->{why} eq 'referenced';
	return 0 unless ($r->{hold} && $c->{refuse}) || $r->{ref};
	$o->{why} = $r->{ref} ? 'referenced' : 'refused';
	$o->{age_fate} = 'may';
	return 1;
}

sub expect
{
	my ($c, $t0, $t1) = @_;
	my %out;
	my %byid = map { $_->{id} => $_ } @{ $c->{rows} };
	my $open0 = window_open($c, $t0);
	my $open1 = window_open($c, $t1);
	for my $r (@{ $c->{rows} })
	{
		my @e = expiry($c, $r);
		my @f = map { fate_of($_, $t0, $t1) } @e;
		my $fate = (@f == 2 && $f[0] ne $f[1]) ? 'may' : $f[0];
		# a filter: only rows for which it is true expire (NULL is false)
		$fate = 'stay' if $c->{filter} && !($r->{f} // 0);
		# a soft delete: rows whose column is already set are left alone
		$fate = 'stay' if $c->{action} eq 'soft_delete' && defined $r->{sd};
		# an anonymize: a row already holding every value is done
		if ($c->{action} eq 'anonymize')
		{
			my $done = 1;
			for my $col (keys %{ $c->{set} })
			{
				my $want = coerce($col, $c->{set}{$col});
				my $have = $r->{$col};
				$done = 0 if (defined $want xor defined $have)
				  || (defined $want && $want ne $have);
			}
			$fate = 'stay' if $done;
		}
		my $age_fate = $fate;
		my $why = $fate eq 'go' ? 'expired' : '';
		# rows the table keeps whatever the policy wants
		if ($fate ne 'stay' && $r->{hold} && $c->{refuse})
		{
			$why = 'refused';
		}
		if ($fate ne 'stay' && $r->{ref})
		{
			$why = 'referenced';
		}
		# a closed window holds everything back, the cap included
		if ($fate eq 'go' && !($open0 && $open1))
		{
			$fate = ($open0 || $open1) ? 'may' : 'wait';
		}
		$out{ $r->{id} } = { fate => $fate, why => $why, age_fate => $age_fate };
	}
	# the cap: rows older than the max_rows-th newest non-NULL key go
	if (defined $c->{max_rows} && $open0 && $open1)
	{
		my @nn = sort { cmp_keys($b->[1], $a->[1]) }
		  map { [ $_->{id}, order_key($c, $_->{k}) ] }
		  grep { defined $_->{k} } @{ $c->{rows} };
		if (@nn > $c->{max_rows})
		{
			my $cut = $nn[ $c->{max_rows} - 1 ][1];
			for my $x (@nn)
			{
				next unless cmp_keys($x->[1], $cut) < 0;
				my $o = $out{ $x->[0] };
				next if cap_kept($c, $o, $byid{ $x->[0] });
				if ($o->{fate} eq 'stay') { $o->{fate} = 'go'; $o->{why} = 'capped'; }
				elsif ($o->{fate} eq 'may') { $o->{why} = 'capped or expired'; }
			}
		}
	}
	# the cap by bytes: over it (padded rows), each row it may take is
	# "may", but the rows with the newest key, which always fit
	if (defined $c->{max_bytes} && $c->{pad} && $open0 && $open1)
	{
		my @nn = sort { cmp_keys($b->[1], $a->[1]) }
		  map { [ $_->{id}, order_key($c, $_->{k}) ] }
		  grep { defined $_->{k} } @{ $c->{rows} };
		for my $x (@nn)
		{
			next unless cmp_keys($x->[1], $nn[0][1]) < 0;
			my $o = $out{ $x->[0] };
			next if cap_kept($c, $o, $byid{ $x->[0] });
			if ($o->{fate} eq 'stay') { $o->{fate} = 'may'; $o->{why} = 'capped'; }
			elsif ($o->{fate} eq 'may' && $o->{why} eq '') { $o->{why} = 'capped or expired'; }
		}
	}
	# rows refused or referenced stay, and are held; behind a closed
	# window no pass tries them: they wait with the others
	for my $o (values %out)
	{
		next unless $o->{why} eq 'refused' || $o->{why} eq 'referenced';
		$o->{fate} = 'held';
		$o->{fate} = 'wait' unless $open0 && $open1;
	}
	# what the affected rows must hold
	for my $r (@{ $c->{rows} })
	{
		my $o = $out{ $r->{id} };
		if ($c->{action} eq 'anonymize')
		{
			$o->{set} = { map { $_ => coerce($_, $c->{set}{$_}) } keys %{ $c->{set} } };
		}
		if ($c->{action} eq 'soft_delete')
		{
			my ($e, $alt) = expiry($c, $r);
			$o->{sd} = $e;
			# READING: the other reading of a per-row TTL on a timestamp
			# key across a change of clocks (see expiry) is as good
			$o->{sd_alt} = $alt;
			# READING: a finite expiry outside the range of timestamptz
			# (4713 BC to 294276 AD: a sentinel epoch) has no soft-delete
			# time the column can hold; the docs promise nothing for it
			if ($o->{fate} eq 'go' && defined $e && $e ne '-inf' && $e ne '+inf'
				&& ($e < -2.1e11 || $e > 9.2e12))
			{
				# (it may be held too: rows_held may count it)
				$o->{fate} = 'may';
				$o->{unrepresentable} = 1;
			}
		}
	}
	return \%out;
}

# --- the generator ---------------------------------------------------------------
# gen_case(name, runner, server zone): a random case, from Perl's rand()
# (the test seeds it): its rows, its setup and policy SQL, and what the
# model needs.  Every dimension is drawn from its ordinary distribution.

sub pick { my ($l) = @_; return $l->[ int(rand(@$l)) ]; }
sub chance { return rand() < $_[0]; }
sub U { my ($a, $b) = @_; return $a + rand($b - $a); }
sub sqlq { my ($v) = @_; return 'NULL' unless defined $v; $v =~ s/'/''/g; return "'$v'"; }

my %EXTREME = (
	timestamptz => [ '4713-01-01 00:00:00+00 BC', '294276-12-31 23:59:59+00' ],
	timestamp   => [ '4713-01-01 00:00:00 BC', '294276-12-31 23:59:59' ],
	date        => [ '4713-01-01 BC', '5874897-12-31' ],
	integer     => [ '-2147483648', '2147483647' ],
	bigint      => [ '-9223372036854775808', '9223372036854775807' ],
	numeric     => [ '-9223372036854775808', '9223372036854775807' ],
	float8      => [ '-1e308', '1e308' ],
);

# keytext(case, instant, writer zone): the key a writer stores for an instant
sub keytext
{
	my ($c, $t, $wz) = @_;
	my $type = $c->{keytype};
	return fmt($t, 1) . '+00' if $type eq 'timestamptz';
	return fmt(instant_to_wall($wz, $t), 1) if $type eq 'timestamp';
	return substr(fmt(instant_to_wall($wz, $t)), 0, 10) if $type eq 'date';
	my $v = $t * $UNIT{ $c->{unit} };
	return sprintf('%.0f', floor($t)) if $type eq 'integer';
	return sprintf('%.0f', floor($v)) if $type eq 'bigint';
	return sprintf('%.6f', $v) if $type eq 'numeric';
	return sprintf('%.17g', $v);
}

sub gen_case
{
	my ($name, $runner, $server_zone, $citus) = @_;
	my $now = Time::HiRes::time();
	my $c = { name => $name, table => $name, runner => $runner, server_zone => $server_zone, citus => $citus, rows => [] };
	my @why;
	$c->{keytype} = pick([qw(timestamptz timestamptz timestamptz timestamp timestamp date integer bigint numeric float8)]);
	my $kt = $c->{keytype};
	my $wall = $kt eq 'timestamp' || $kt eq 'date';
	$c->{unit} = $kt eq 'integer' ? 's' : $kt =~ /bigint|numeric|float8/ ? pick([qw(s ms us ns)]) : undef;
	$c->{session_zone} = pick(\@ZONE_NAMES);
	if ($wall)
	{
		$c->{zone} = pick(\@ZONE_NAMES);
		$c->{tz_option} = chance(0.5);
		$c->{session_zone} = $c->{zone} unless $c->{tz_option};
	}
	# (Citus refuses archive on a distributed table: README, Citus)
	$c->{action} = pick($citus ? [qw(delete delete delete soft_delete anonymize anonymize)]
		: [qw(delete delete delete delete archive soft_delete anonymize anonymize)]);
	my $act = $c->{action};
	$c->{max_rows} = undef;
	if ($act =~ /delete|archive/ && $act ne 'soft_delete' && chance(0.3))
	{
		$c->{max_rows} = pick([ 1, 2, 3, 5, 10, 25, 1000 ]);
	}
	my $cap = defined $c->{max_rows};
	# a cap by bytes (not on Citus: refused there), beside max_rows or not;
	# padded rows take the table over it
	if ($act =~ /^(delete|archive)$/ && !$citus && !$API_14 && chance(0.2))
	{
		$c->{max_bytes} = 1048576;
		$c->{pad} = chance(0.6);
	}
	my $bcap = defined $c->{max_bytes};
	$c->{ttl} = pick([ 0, 60, 3600, 86400, 7 * 86400, 30 * 86400 ]);
	$c->{ttl} = undef if ($cap || $bcap) && chance(0.4);
	$c->{ttl_form} = pick([qw(seconds interval text)]);
	# calendar months (Months and years), beside no per-row TTL
	if (defined $c->{ttl} && !$API_14 && chance(0.25))
	{
		$c->{ttl_months} = pick([ 1, 1, 2, 12, 13 ]);
		$c->{ttl_form} = pick([qw(interval text)]);
	}
	if (($kt eq 'timestamptz' || $kt eq 'timestamp') && !$cap && !$bcap && !$c->{ttl_months} && chance(0.2))
	{
		$c->{ttl_column} = pick([qw(integer bigint interval)]);
	}
	$c->{filter} = pick([ 'f', 'f IS TRUE', 'coalesce(f, false)' ]) if !$cap && !$bcap && chance(0.25);
	$c->{batch_size} = pick([ 7, 50, 500 ]) if chance(0.3);
	# hide_expired: not for a cap alone, an anonymize or a Citus table
	# (refused there), nor on 1.4
	$c->{hide} = !$citus && !$API_14 && defined $c->{ttl} && $act ne 'anonymize' && chance(0.3);
	# the shape
	# (Citus distributes neither sub-partitions nor inheritance)
	my @shapes = $citus ? qw(plain plain plain range_id list_grp hash_id) : qw(plain plain plain range_id list_grp hash_id sub inherit);
	push @shapes, 'foreign' if $HAVE_FDW && !$citus;
	push @shapes, 'range_key', 'range_key' if $kt eq 'timestamptz';
	# (a cap by bytes counts no foreign partition: the rows kept there
	# would not be a newest run)
	@shapes = grep { $_ ne 'foreign' } @shapes if $bcap;
	$c->{shape} = pick(\@shapes);
	$c->{dropped} = chance(0.2);
	$c->{shuffle} = chance(0.3);
	$c->{fk} = !$citus && $c->{shape} eq 'plain' && $act =~ /^(delete|archive)$/ && chance(0.2);
	# on Citus, the table's shards (Citus lays them over both workers)
	$c->{shards} = pick([ 1, 2, 4, 8 ]) if $citus;
	if (!$citus && chance(0.25))
	{
		$c->{refuse} = pick([qw(P0001 P0001 P0001 23514 42501 mixed)]);
		$c->{nrefuse} = chance(0.15) ? int(U(1001, 1400)) : int(U(1, 5));
		# a BEFORE trigger, or a deferred constraint trigger (checked at the
		# end of each batch's statement, as the docs say)
		$c->{deferred} = chance(0.3);
	}
	# anonymize: a few columns, values with typmods, domains, constraints
	if ($act eq 'anonymize')
	{
		my %pool = (
			note   => [ undef, 'erased' ],
			amount => [ '1.234', '0', '-1.005', '999.994' ],
			at0    => [ '2020-01-01 10:00:00.6', '1970-01-01 00:00:00' ],
			vc     => [ 'erased', undef ],
			dom    => [ '0', undef ],
		);
		my @cols = grep { chance(0.5) } sort keys %pool;
		@cols = (pick([ sort keys %pool ])) unless @cols;
		$c->{set} = { map { $_ => pick($pool{$_}) } @cols };
		# READING: "a value is coerced to the column's type as an UPDATE's
		# assignment is" and the rules are "refused by ttl_create_index":
		# a value the column cannot hold is refused at creation
		if (chance(0.05))
		{
			my ($col, $v) = @{ pick([ [ 'vc', 'erased-too-long' ], [ 'dom', '-1' ] ]) };
			$c->{set}{$col} = $v;
			$c->{must_refuse} = "set_columns $col = $v, which the column cannot hold";
		}
	}
	# a window, open or closed, in the policy's zone
	if (chance(0.2))
	{
		# a key of instants may carry a zone for its windows alone
		$c->{window_zone} = pick(\@ZONE_NAMES) if !$wall && chance(0.5);
		delete $c->{window_zone} if $API_14;
		my $wz = $wall ? $c->{zone} : ($c->{window_zone} // $server_zone);
		my $lm = floor((instant_to_wall($wz, $now) % 86400) / 60);
		my ($s, $e);
		if (chance(0.5)) { $s = $lm - int(U(60, 240)); $e = $lm + int(U(60, 240)); }
		else { $s = $lm + int(U(60, 300)); $e = $s + int(U(30, 120)); }
		my $hm = sub { my $m = $_[0] % 1440; return sprintf('%02d:%02d', int($m / 60), $m % 60); };
		my $end = $hm->($e);
		$end = '24:00' if $end eq '00:00';
		$c->{window} = $hm->($s) . '-' . $end;
		# sometimes on some days of the week only: the day the window
		# starts on (yesterday or tomorrow when it is past midnight) in them or
		# not, and sometimes the other days with the same hours as well
		if (chance(0.4))
		{
			my $today = (floor(instant_to_wall($wz, $now) / 86400) + 3) % 7;
			my $d0 = ($today + floor($s / 1440) + 7) % 7;
			my $len = 1 + int(U(0, 6));
			my $first = chance(0.7) ? ($d0 - int(U(0, $len)) + 7) % 7 : ($d0 + 1 + int(U(0, 7 - $len))) % 7;
			my @short = qw(Mon Tue Wed Thu Fri Sat Sun);
			my @long = qw(monday TUESDAY Wednesday thursday FRIDAY Saturday sunday);
			my $name = sub { my $d = $_[0] % 7; return chance(0.7) ? $short[$d] : $long[$d]; };
			my $last = $first + $len - 1;
			my $days = $len == 1 ? $name->($first) : $name->($first) . '-' . $name->($last);
			my $hours = $c->{window};
			$c->{window} = "$days $hours";
			if ($len < 7 && chance(0.3))
			{
				my ($of, $ol) = ($last + 1, $first + 6);
				$c->{window} .= ', ' . ($of % 7 == $ol % 7 ? $name->($of) : $name->($of) . '-' . $name->($ol)) . " $hours";
			}
		}
	}
	# a day the clocks change, and a TTL that puts the cutoff between the
	# two readings of its skipped or repeated hour
	my @dst_walls;
	if ($kt eq 'timestamp' && $ZONES{ $c->{zone} }[1] && !$c->{ttl_column} && !$c->{ttl_months} && defined $c->{ttl} && chance(0.4))
	{
		my $eu = $ZONES{ $c->{zone} }[1] eq 'eu';
		my $spring = chance(0.5);
		my $day = $eu ? ($spring ? '2025-03-30' : '2025-10-26') : ($spring ? '2025-03-09' : '2025-11-02');
		my $hour = $eu ? ($spring ? '02' : '02') : ($spring ? '02' : '01');
		my $w = parse("$day $hour:30:00");
		my $std = $ZONES{ $c->{zone} }[0];
		# the two readings of the ambiguous wall time: w - std and w - std - 3600
		my $cut = $w - $std - 1800;
		$c->{ttl} = int($now - $cut);
		$c->{ttl_form} = 'seconds';
		$c->{dst} = $day;
		for my $m (-90, -50, -30, -15, 0, 10, 20, 45, 70, 100)
		{
			push @dst_walls, fmt($w + $m * 60);
		}
	}
	# the rows
	my $n = chance(0.1) ? int(U(100, 300)) : int(U(3, 40));
	my $ttl_eff = $c->{ttl} // 0;
	my @classes = (('old') x 30, ('fresh') x 30, ('null') x 7, ('inf') x 3, ('-inf') x 3,
		('sentinel') x 4, ('tie') x 10);
	push @classes, ('band') x 5 unless $cap || $bcap;
	push @classes, ('nan') x 2 if $kt =~ /float8|numeric/;
	my $id = 0;
	my $last_k;
	my $mkrow = sub {
		my ($k, $extra) = @_;
		my $r = { id => ++$id, k => $k, grp => $id % 4, %{ $extra // {} } };
		if ($c->{ttl_column})
		{
			$r->{rttl} = chance(0.1) ? undef : int(U(-3600, 5 * 86400));
		}
		$r->{f} = pick([ 1, 0, undef ]);
		$r->{note} = pick([ 'a@b.c', undef, 'erased' ]);
		$r->{amount} = pick([ '12.34', undef, '1.23', '0.00' ]);
		$r->{at0} = pick([ '2021-05-05 05:05:05', '2020-01-01 10:00:01', undef ]);
		$r->{vc} = pick([ 'alice', 'erased', undef ]);
		$r->{dom} = pick([ '5', '0', undef ]);
		$r->{sd} = ($act eq 'soft_delete' && chance(0.2)) ? '2021-01-01 00:00:00+00' : undef;
		push @{ $c->{rows} }, $r;
		$last_k = $k;
		return $r;
	};
	my $place = sub {
		# the key of a row that expires at e (a writer in another zone, sometimes)
		my ($e, $rttl) = @_;
		my $t = $e - $ttl_eff - ($rttl // 0);
		$t = months_back(month_zone($c), $t, $c->{ttl_months}) if $c->{ttl_months};
		my $wz = ($wall && chance(0.15)) ? pick(\@ZONE_NAMES) : $c->{zone};
		return keytext($c, $t, $wz);
	};
	my $date_margin = $kt eq 'date' ? 2 * 86400 : 7200;
	# refused rows: the oldest keys
	if ($c->{refuse})
	{
		my $e = $now - U(300 * 86400, 400 * 86400);
		for (1 .. $c->{nrefuse})
		{
			my $r = $mkrow->(undef, { hold => 1 });
			$r->{k} = $place->($e - $_, $r->{rttl});
			$r->{f} = 1;
			$r->{rttl} //= 0 if $c->{ttl_column};
		}
	}
	for my $w (@dst_walls)
	{
		$mkrow->($w);
	}
	for (1 .. $n)
	{
		my $cl = pick(\@classes);
		my $r = $mkrow->(undef);
		my $rt = $r->{rttl};
		if ($cl eq 'old') { $r->{k} = $place->($now - U($date_margin, 400 * 86400), $rt); }
		elsif ($cl eq 'fresh') { $r->{k} = $place->($now + U($date_margin, 30 * 86400), $rt); }
		elsif ($cl eq 'band') { $r->{k} = $place->($now + U(-1, 5), $rt); }
		elsif ($cl eq 'null') { $r->{k} = undef; }
		elsif ($cl eq 'inf' || $cl eq '-inf')
		{
			my $neg = $cl eq '-inf' ? '-' : '';
			$r->{k} = $kt =~ /float8|numeric/ ? "${neg}Infinity" : $kt =~ /int/ ? $EXTREME{$kt}[ $neg ? 0 : 1 ] : "${neg}infinity";
		}
		elsif ($cl eq 'sentinel') { $r->{k} = pick($EXTREME{$kt}); }
		elsif ($cl eq 'nan') { $r->{k} = 'NaN'; }
		elsif ($cl eq 'tie') { $r->{k} = $id > 1 ? $c->{rows}[-2]{k} : $place->($now - 86400 * 3, $rt); }
	}
	# rows a foreign key references
	my @refd;
	if ($c->{fk})
	{
		@refd = grep { !$_->{hold} && chance(0.15) } @{ $c->{rows} };
		$_->{ref} = 1 for @refd;
	}
	# the SQL
	my $t = $c->{table};
	my $kdef = { timestamptz => 'timestamptz', timestamp => 'timestamp', date => 'date', integer => 'integer',
		bigint => 'bigint', numeric => 'numeric', float8 => 'double precision' }->{$kt};
	my @cols = ("id integer NOT NULL", "k $kdef", "f boolean", "hold boolean NOT NULL DEFAULT false", "grp integer",
		"note text", "amount numeric(5,2)", "at0 timestamp(0)", "vc varchar(10)", "dom ora_dom", "sd timestamptz");
	push @cols, "rttl $c->{ttl_column}" if $c->{ttl_column};
	push @cols, "junk integer" if $c->{dropped};
	push @cols, "pad bytea" if $c->{pad};
	if ($c->{shuffle})
	{
		for my $i (reverse 1 .. $#cols) { my $j = int(rand($i + 1)); @cols[ $i, $j ] = @cols[ $j, $i ]; }
	}
	my $pk = { plain => $c->{fk} || chance(0.5) ? ', PRIMARY KEY (id)' : '', range_id => ', PRIMARY KEY (id)',
		hash_id => ', PRIMARY KEY (id)', list_grp => ', PRIMARY KEY (id, grp)', sub => ', PRIMARY KEY (id)',
		inherit => ', PRIMARY KEY (id)', range_key => '', foreign => '' }->{ $c->{shape} };
	my $sql = "CREATE TABLE $t (" . join(', ', @cols) . "$pk)";
	my $third = int($id / 3) + 1;
	my @children;
	my $sh = $c->{shape};
	if ($sh eq 'plain' || $sh eq 'inherit') { $sql .= ";\n"; }
	elsif ($sh eq 'range_id')
	{
		$sql .= " PARTITION BY RANGE (id);\nCREATE TABLE ${t}_p1 PARTITION OF $t FOR VALUES FROM (MINVALUE) TO ($third);\n"
		  . "CREATE TABLE ${t}_p2 PARTITION OF $t FOR VALUES FROM ($third) TO (" . (2 * $third) . ");\n"
		  . "CREATE TABLE ${t}_pd PARTITION OF $t DEFAULT;\n";
	}
	elsif ($sh eq 'foreign')
	{
		# READING: a foreign partition whose server is down holds none of
		# the case's rows; the docs promise the policy covers every
		# partition and that a failure of one partition leaves it "for
		# now": the local partitions purge, caps included, as if it were
		# empty (its failures may be counted as errors)
		$sql .= " PARTITION BY RANGE (id);\nCREATE TABLE ${t}_p1 PARTITION OF $t FOR VALUES FROM (MINVALUE) TO ($third);\n"
		  . "CREATE FOREIGN TABLE ${t}_pf PARTITION OF $t FOR VALUES FROM (100000) TO (200000) SERVER ora_down OPTIONS (table_name '${t}_remote');\n"
		  . "CREATE TABLE ${t}_pd PARTITION OF $t DEFAULT;\n";
	}
	elsif ($sh eq 'hash_id')
	{
		$sql .= " PARTITION BY HASH (id);\n" . join('', map { "CREATE TABLE ${t}_h$_ PARTITION OF $t FOR VALUES WITH (MODULUS 3, REMAINDER $_);\n" } 0 .. 2);
	}
	elsif ($sh eq 'list_grp')
	{
		$sql .= " PARTITION BY LIST (grp);\nCREATE TABLE ${t}_l0 PARTITION OF $t FOR VALUES IN (0);\n"
		  . "CREATE TABLE ${t}_l1 PARTITION OF $t FOR VALUES IN (1, 2);\nCREATE TABLE ${t}_ld PARTITION OF $t DEFAULT;\n";
	}
	elsif ($sh eq 'sub')
	{
		$sql .= " PARTITION BY RANGE (id);\nCREATE TABLE ${t}_s1 PARTITION OF $t FOR VALUES FROM (MINVALUE) TO ($third) PARTITION BY HASH (id);\n"
		  . "CREATE TABLE ${t}_s1a PARTITION OF ${t}_s1 FOR VALUES WITH (MODULUS 2, REMAINDER 0);\n"
		  . "CREATE TABLE ${t}_s1b PARTITION OF ${t}_s1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);\n"
		  . "CREATE TABLE ${t}_sd PARTITION OF $t DEFAULT;\n";
	}
	elsif ($sh eq 'range_key')
	{
		my $b1 = fmt($now - $ttl_eff - 200 * 86400) . '+00';
		my $b2 = fmt($now - $ttl_eff - 86400) . '+00';
		$sql .= " PARTITION BY RANGE (k);\nCREATE TABLE ${t}_k1 PARTITION OF $t FOR VALUES FROM (MINVALUE) TO ('$b1');\n"
		  . "CREATE TABLE ${t}_k2 PARTITION OF $t FOR VALUES FROM ('$b1') TO ('$b2');\n"
		  . "CREATE TABLE ${t}_k3 PARTITION OF $t FOR VALUES FROM ('$b2') TO (MAXVALUE);\n"
		  . "CREATE TABLE ${t}_kd PARTITION OF $t DEFAULT;\n";
	}
	if ($sh eq 'inherit')
	{
		@children = ("${t}_c1", "${t}_c2");
		$sql .= "CREATE TABLE $_ () INHERITS ($t);\n" for @children;
	}
	$sql .= "ALTER TABLE $t DROP COLUMN junk;\n" if $c->{dropped};
	$sql .= "SELECT create_distributed_table('$t', 'id', shard_count => $c->{shards});\n" if $citus;
	my @ic = qw(id k f hold grp note amount at0 vc dom sd);
	push @ic, 'rttl' if $c->{ttl_column};
	push @ic, 'pad' if $c->{pad};
	# about 2 MB of incompressible bytes over the rows, TOASTed
	my $padn = $c->{pad} ? int(2 * 1048576 / 16 / @{ $c->{rows} }) + 1 : 0;
	my %byt;
	for my $r (@{ $c->{rows} })
	{
		my $into = $sh eq 'inherit' && $r->{id} % 3 ? $children[ $r->{id} % 3 - 1 ] : $t;
		my $rt = $c->{ttl_column} && defined $r->{rttl} && $c->{ttl_column} eq 'interval' ? "$r->{rttl} seconds" : $r->{rttl};
		push @{ $byt{$into} }, '(' . join(', ', $r->{id}, sqlq($r->{k}), defined $r->{f} ? ($r->{f} ? 'true' : 'false') : 'NULL',
			$r->{hold} ? 'true' : 'false', $r->{grp}, sqlq($r->{note}), sqlq($r->{amount}), sqlq($r->{at0}), sqlq($r->{vc}),
			sqlq($r->{dom}), sqlq($r->{sd}), $c->{ttl_column} ? (sqlq($rt)) : (),
			$c->{pad} ? ("(SELECT string_agg(decode(md5($r->{id} || '-' || g), 'hex'), '') FROM generate_series(1, $padn) g)") : ()) . ')';
	}
	for my $into (sort keys %byt)
	{
		my @v = @{ $byt{$into} };
		while (my @chunk = splice(@v, 0, 500))
		{
			$sql .= "INSERT INTO $into (" . join(', ', @ic) . ") VALUES\n  " . join(",\n  ", @chunk) . ";\n";
		}
	}
	if ($c->{refuse})
	{
		my $ev = $act =~ /soft|anon/ ? 'UPDATE' : 'DELETE';
		for my $on ($t, @children)
		{
			# (a constraint trigger cannot be made on a table with a foreign partition)
			$c->{deferred} = 0 if $sh eq 'foreign';
			$sql .= $c->{deferred}
			  ? "CREATE CONSTRAINT TRIGGER ${on}_refuse AFTER $ev ON $on DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ora_refuse('$c->{refuse}');\n"
			  : "CREATE TRIGGER ${on}_refuse BEFORE $ev ON $on FOR EACH ROW EXECUTE FUNCTION ora_refuse('$c->{refuse}');\n";
		}
	}
	if ($c->{fk})
	{
		$sql .= "CREATE TABLE ${t}_ref (x integer REFERENCES $t (id));\n";
		$sql .= "INSERT INTO ${t}_ref VALUES " . join(', ', map { "($_->{id})" } @refd) . ";\n" if @refd;
	}
	$sql .= "CREATE TABLE ${t}_arch (LIKE $t);\n" if $act eq 'archive';
	$c->{setup_sql} = $sql;
	# the policy
	my $ttlsql;
	if (!defined $c->{ttl}) { $ttlsql = 'NULL'; }
	elsif ($c->{ttl_form} eq 'seconds') { $ttlsql = $c->{ttl}; }
	elsif ($c->{ttl_months}) { $ttlsql = ($c->{ttl_form} eq 'interval' ? 'interval ' : '') . "'$c->{ttl_months} months $c->{ttl} seconds'"; }
	elsif ($c->{ttl_form} eq 'interval') { $ttlsql = "interval '$c->{ttl} seconds'"; }
	else { $ttlsql = $c->{ttl} % 86400 == 0 && $c->{ttl} ? "'" . ($c->{ttl} / 86400) . " days'" : "'$c->{ttl}'"; }
	my @opt;
	push @opt, "unit => '$c->{unit}'" if $c->{unit};
	push @opt, "time_zone => '$c->{zone}'" if $wall && $c->{tz_option};
	push @opt, "time_zone => '$c->{window_zone}'" if $c->{window_zone};
	push @opt, "ttl_column => 'rttl'" if $c->{ttl_column};
	push @opt, "filter => \$\$$c->{filter}\$\$" if $c->{filter};
	push @opt, "max_rows => $c->{max_rows}" if $cap;
	push @opt, "max_bytes => $c->{max_bytes}" if $bcap;
	push @opt, "purge_window => '$c->{window}'" if $c->{window};
	push @opt, "batch_size => $c->{batch_size}" if $c->{batch_size};
	push @opt, "archive_table => '${t}_arch'" if $act eq 'archive';
	push @opt, "soft_delete_column => 'sd'" if $act eq 'soft_delete';
	push @opt, "hide_expired => true" if $c->{hide};
	if ($act eq 'anonymize')
	{
		my $list = join(', ', map {
			my $v = $c->{set}{$_};
			"$_ = " . (!defined $v ? 'NULL' : ($_ eq 'amount' || $_ eq 'dom') ? $v : sqlq($v))
		} sort keys %{ $c->{set} });
		push @opt, "set_columns => \$\$$list\$\$";
	}
	my $call = "SELECT ttl_create_index('$t', 'k', " . join(', ', $ttlsql, @opt) . ");";
	my $ttl_given = $ttlsql ne 'NULL';
	if ($c->{ttl_column} && defined $c->{ttl} && $c->{ttl} == 0 && chance(0.5))
	{
		$call = "SELECT ttl_create_index('$t', 'k', " . join(', ', @opt) . ");";
		$ttl_given = 0;
	}
	my $create = "SET TimeZone = '$c->{session_zone}';\n";
	if (chance(0.15))
	{
		# a first call, changed in place by the second in the same
		# transaction.  reference.md (Changing a policy): a call on a column
		# that has a policy changes what it names and keeps every other
		# option, so a second ttl_create_index() that gives no TTL keeps the
		# first call's 5 days; ttl_alter_index() names the TTL, or removes
		# it with reset for a cap alone
		$c->{second_call} = 1;
		my @o1 = grep { /^unit/ } @opt;
		my $first = "SELECT ttl_create_index('$t', 'k', " . join(', ', "interval '5 days'", @o1) . ");";
		if (chance(0.5) && !$API_14)
		{
			my @a = @opt;
			if (defined $c->{ttl}) { unshift @a, "expire_after => interval '" . ($c->{ttl_months} ? "$c->{ttl_months} months " : '') . "$c->{ttl} seconds'"; }
			else { push @a, "reset => '{expire_after}'"; }
			$call = "SELECT ttl_alter_index('$t', 'k', " . join(', ', @a) . ");";
			$c->{second_call} = 'alter';
		}
		elsif (!$ttl_given)
		{
			$c->{ttl} = 5 * 86400;	# kept from the first call
			delete $c->{ttl_months};
		}
		$create .= "BEGIN;\n$first\n$call\nCOMMIT;";
		$c->{calls} = [ $first, $call ];
	}
	else
	{
		$create .= $call;
		$c->{calls} = [$call];
	}
	$c->{create_sql} = $create;
	$c->{summary} = join(', ', ($citus ? "Citus, $c->{shards} shards" : ()), "key $kt" . ($c->{unit} ? " unit $c->{unit}" : '') . ($wall ? " zone $c->{zone}" . ($c->{tz_option} ? ' (option)' : ' (session)') : ''),
		"shape $sh" . ($c->{dropped} ? ' +dropped column' : '') . ($c->{shuffle} ? ' +column order' : ''),
		"action $act", 'ttl ' . ($c->{ttl_months} ? "$c->{ttl_months} months + " : '') . ($c->{ttl} // 'NULL'), ($cap ? "max_rows $c->{max_rows}" : ()),
		($bcap ? "max_bytes $c->{max_bytes}" . ($c->{pad} ? ' (padded over it)' : '') : ()),
		($c->{ttl_column} ? "ttl_column $c->{ttl_column}" : ()), ($c->{filter} ? 'filter' : ()),
		($c->{window} ? "window $c->{window}" . ($c->{window_zone} ? " in $c->{window_zone}" : '') : ()), ($c->{refuse} ? "refuse $c->{nrefuse} ($c->{refuse}" . ($c->{deferred} ? ', deferred' : '') . ')' : ()),
		($c->{fk} ? 'fk' : ()), ($c->{hide} ? 'hide_expired' : ()), ($c->{dst} ? "dst $c->{dst}" : ()), ($c->{second_call} ? ($c->{second_call} eq 'alter' ? 'second call (ttl_alter_index)' : 'second call') : ()),
		scalar(@{ $c->{rows} }) . ' rows');
	return $c;
}

1;
