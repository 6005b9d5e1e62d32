# The worker's memory over many rounds and timed-out batches (issue 45, case
# 14): what it allocates outside a transaction lives in a context reset at
# each round (worker.c, Memory), so TopMemoryContext does not grow.  Each of
# 25 policies' batches runs a trigger that sleeps past
# ttl_index.batch_timeout: every batch is canceled, and the policy rests
# ttl_index.error_delay (1 s) before the next.  Before the fix
# TopMemoryContext grew by 393,216 bytes over 500 such batches.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use TtlIndex;

my $node = TtlIndex::node('mem', 'ttl_index.batch_timeout = 100', 'ttl_index.error_delay = 1',
	'ttl_index.log_min_duration = -1');
$node->safe_psql('postgres', 'CREATE DATABASE mem');
$node->safe_psql('mem', q{
CREATE EXTENSION ttl_index;
CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN PERFORM pg_sleep(10); RETURN OLD; END';
DO $$
BEGIN
	FOR i IN 1 .. 25 LOOP
		EXECUTE format('CREATE TABLE m%s (ts timestamptz NOT NULL)', i);
		EXECUTE format('CREATE TRIGGER slow BEFORE DELETE ON m%s FOR EACH ROW EXECUTE FUNCTION slow()', i);
		EXECUTE format('INSERT INTO m%s SELECT now() - interval ''1 hour'' FROM generate_series(1, 10)', i);
		PERFORM ttl_create_index(format('m%s', i), 'ts', 60);
	END LOOP;
END $$;
});
TtlIndex::wait_worker($node, 'mem');
my $pid = TtlIndex::worker_pid($node, 'mem');
my $errors = q{SELECT coalesce(sum(errors), 0) FROM ttl_index_stats};

# total(): the worker's memory, as pg_log_backend_memory_contexts logs it:
# TopMemoryContext's own blocks (where what outlives a transaction and is
# no policy's lands), and the grand total (which moves with the passes in
# hand at the moment: their contexts come and go)
sub total
{
	my $from = -s $node->logfile;
	my ($top, $grand);
	my ($t0, $asked) = (time(), 0);
	while (!defined $grand && time() - $t0 < $PostgreSQL::Test::Utils::timeout_default)
	{
		# asked again every 2 s: a request that comes during a batch can be
		# lost to the batch's own cancel (ProcessInterrupts handles that
		# first, and the request waits for the next interrupt)
		if (time() - $asked > 2)
		{
			$node->safe_psql('mem', "SELECT pg_log_backend_memory_contexts($pid)");
			$asked = time();
		}
		my $log = slurp_file($node->logfile, $from);
		($top) = $log =~ /\[$pid\] LOG:  level: [01]; TopMemoryContext: (\d+) total/;
		($grand) = $log =~ /\[$pid\] LOG:  Grand total: (\d+) bytes/;
		sleep(0.1) unless defined $grand;
	}
	return ($top, $grand);
}

# warm: every policy has timed out a few times (caches filled)
TtlIndex::wait_until($node, 'mem', "SELECT ($errors) >= 75", 'the batches time out');
my ($top0, $grand0) = total();
my $e0 = $node->safe_psql('mem', $errors);
TtlIndex::wait_until($node, 'mem', "SELECT ($errors) >= $e0 + 500", '500 more batches timed out', 300);
my ($top1, $grand1) = total();
is(TtlIndex::worker_pid($node, 'mem'), $pid, 'the same worker all along (no batch outlived its second deadline)');
ok(defined $top0 && defined $top1 && defined $grand0 && defined $grand1,
	"the worker logged its memory (TopMemoryContext $top0 then $top1 bytes, grand total $grand0 then $grand1)");
cmp_ok(($top1 // 1e9) - ($top0 // 0), '<=', 0, 'TopMemoryContext did not grow');
cmp_ok(($grand1 // 1e9) - ($grand0 // 0), '<', 65536, 'nor the worker\'s memory, beyond its passes in hand');
is($node->safe_psql('mem', 'SELECT count(*) FROM m1'), '10', 'and no row of theirs went');
done_testing();
