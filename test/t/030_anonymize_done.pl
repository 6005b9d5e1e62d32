# Anonymize rows that an UPDATE cannot make "done", with the worker.
#
# A value written through a column with a typmod comes back different
# (numeric(5,2) set to 1.234 holds 1.23, timestamp(0) set to a fraction
# holds the rounded second): the policy stores the value as the column
# does, so each row is updated once, is done, and leaves the partial index.
#
# A BEFORE UPDATE trigger that changes a set column again leaves the row
# not done after its update: that row is held (rows_held), not rewritten
# again and again by the same pass or the next ones; rows_anonymized counts
# the rows the updates made done, not the UPDATEs run.  All rows share one
# key, where a pass that rewrote them would never end (each new version
# lands after the pass's resume point).  After ttl_index.error_delay a held
# row is tried again, once, and held again in place of its old version.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

# held rows are retried after ttl_index.error_delay: an hour, past the test
my $node = TtlIndex::node('anonymize_done', 'ttl_index.max_sleep = 200ms',
	'ttl_index.error_delay = 3600', 'ttl_index.log_min_duration = -1');
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
CREATE TABLE mark (at timestamptz);
SELECT ttl_create_index('mark', 'at', 60);
-- every row version an UPDATE writes, by table and id
CREATE TABLE updates (tab text, id int);
CREATE FUNCTION log_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO updates VALUES (TG_TABLE_NAME, NEW.id);
	RETURN NEW;
END $$;

-- typmods: 2,000 expired rows, all on one key
CREATE TABLE money (id int PRIMARY KEY, at timestamptz, amount numeric(5,2), paid timestamp(0));
INSERT INTO money SELECT i, '2020-01-01', 99.99, '2024-05-05 10:00:00' FROM generate_series(1, 2000) i;
CREATE TRIGGER money_log AFTER UPDATE ON money FOR EACH ROW EXECUTE FUNCTION log_update();

-- a trigger that puts the email of even ids back: 600 rows on one key
CREATE TABLE people (id int PRIMARY KEY, at timestamptz, email text);
INSERT INTO people SELECT i, '2020-01-01', 'p' || i || '@example.com' FROM generate_series(1, 600) i;
CREATE FUNCTION keep_even() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.id % 2 = 0 THEN
		NEW.email := 'kept-' || NEW.id;
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER people_keep BEFORE UPDATE ON people FOR EACH ROW EXECUTE FUNCTION keep_even();
CREATE TRIGGER people_log AFTER UPDATE ON people FOR EACH ROW EXECUTE FUNCTION log_update();

SELECT ttl_create_index('money', 'at', 60,
	set_columns => $$amount = 1.234, paid = '2020-01-01 00:00:00.7'$$);
SELECT ttl_create_index('people', 'at', 60, set_columns => $$email = 'erased'$$);
});
TtlIndex::wait_worker($node, 'postgres');

# --- typmods -------------------------------------------------------------
is($node->safe_psql('postgres',
	"SELECT set_columns FROM ttl_index_policy WHERE relid = 'money'::regclass"),
	"amount = 1.23, paid = '2020-01-01 00:00:01'::timestamp without time zone",
	'the policy stores the values as the columns hold them');
TtlIndex::wait_until($node, 'postgres',
	"SELECT count(DISTINCT id) = 2000 FROM updates WHERE tab = 'money'",
	'every typmod row is updated');
# a pass ends: with all rows on one key, one that rewrote them would not
TtlIndex::wait_until($node, 'postgres',
	"SELECT passes >= 1 FROM ttl_index_stats WHERE table_name = 'money'::regclass",
	'the pass over the typmod rows ends', 60);
TtlIndex::wait_round($node, 'postgres', 'mark');
TtlIndex::wait_round($node, 'postgres', 'mark');
is($node->safe_psql('postgres', q{
SELECT count(*), max(n) FROM (SELECT id, count(*) AS n FROM updates WHERE tab = 'money' GROUP BY id) u}),
	'2000|1', 'each typmod row is updated once');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM money WHERE amount = 1.23 AND paid = '2020-01-01 00:00:01'}),
	'2000', 'every typmod row is done');
TtlIndex::wait_is($node, 'postgres',
	"SELECT rows_anonymized, rows_held FROM ttl_index_stats WHERE table_name = 'money'::regclass",
	'2000|0', 'rows_anonymized counts the 2,000 rows, none held');

# --- a trigger that undoes the value ------------------------------------
TtlIndex::wait_until($node, 'postgres',
	"SELECT count(DISTINCT id) = 600 FROM updates WHERE tab = 'people'",
	'every row of the trigger table is updated');
TtlIndex::wait_until($node, 'postgres',
	"SELECT passes >= 2 FROM ttl_index_stats WHERE table_name = 'people'::regclass",
	'passes over the trigger table end', 60);
TtlIndex::wait_round($node, 'postgres', 'mark');
TtlIndex::wait_round($node, 'postgres', 'mark');
is($node->safe_psql('postgres', q{
SELECT count(*), max(n) FROM (SELECT id, count(*) AS n FROM updates WHERE tab = 'people' GROUP BY id) u}),
	'600|1', 'each row is updated once, the not-done ones too, over several passes');
is($node->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE email = 'erased'), count(*) FILTER (WHERE email LIKE 'kept-%') FROM people}),
	'300|300', 'the odd rows are done, the trigger kept the even ones');
TtlIndex::wait_is($node, 'postgres',
	"SELECT rows_anonymized, rows_held FROM ttl_index_stats WHERE table_name = 'people'::regclass",
	'300|300', 'rows_anonymized counts the rows made done, the not-done ones are held');

# after ttl_index.error_delay a held row is tried again: one more update,
# and held again in place of its old version, not beside it (550 kept rows
# held again beside their old versions would pass the held set's bound of
# 1,000 at their first retry, and fail the policy)
$node->append_conf('postgresql.conf', 'ttl_index.error_delay = 1');
$node->reload;
TtlIndex::wait_setting($node, 'ttl_index.error_delay', '1s');
$node->safe_psql('postgres', q{
CREATE TABLE retried (id int PRIMARY KEY, at timestamptz, email text);
INSERT INTO retried SELECT i, '2020-01-01', 'r' || i FROM generate_series(1, 1100) i;
CREATE TRIGGER retried_keep BEFORE UPDATE ON retried FOR EACH ROW EXECUTE FUNCTION keep_even();
CREATE TRIGGER retried_log AFTER UPDATE ON retried FOR EACH ROW EXECUTE FUNCTION log_update();
SELECT ttl_create_index('retried', 'at', 60, set_columns => $$email = 'erased'$$);
});
TtlIndex::wait_until($node, 'postgres', q{
SELECT count(*) = 550 AND min(n) >= 2 FROM (SELECT id, count(*) AS n FROM updates WHERE tab = 'retried' AND id % 2 = 0 GROUP BY id) u},
	'the held rows are retried after error_delay');
TtlIndex::wait_round($node, 'postgres', 'mark');
is($node->safe_psql('postgres', q{
SELECT count(*), max(n) FROM (SELECT id, count(*) AS n FROM updates WHERE tab = 'retried' AND id % 2 = 1 GROUP BY id) u}),
	'550|1', 'the rows made done are never updated again');
TtlIndex::wait_is($node, 'postgres',
	"SELECT rows_anonymized, rows_held, errors FROM ttl_index_stats WHERE table_name = 'retried'::regclass",
	'550|550|0', 'each retried row is held once, and the policy does not fail');

my $log = slurp_file($node->logfile);
unlike($log, qr/TRAP:/, 'no assertion failed');
$node->stop;
done_testing();
