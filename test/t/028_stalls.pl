# No silent stall: every expired row goes, or ttl_index_stats says why it
# cannot.
#
#  1. A run of one key the batches cannot take: 12,000 expired rows that
#     a foreign key still references, all inserted in one statement (one
#     now(), one key), and 1,000 deletable rows at a later key.  The
#     batches resume past the run's rows they read (key and heap TID), so
#     the 1,000 go; the 12,000 stay, and ttl_index_stats says why
#     (stalled) and how long they have waited (lag).
#  2. The same with a filter that rejects 300,000 rows of one key (a
#     non-immutable function): the 1,000 rows after them go; rows the
#     filter rejects are not the policy's, so nothing is stalled.
#  3. Deferred constraints fire at the end of the batch's statement, as the
#     owner: a deferred foreign key without child rows takes nothing, and a
#     deferred constraint trigger that refuses one row (a legal hold)
#     holds that row, not the other 999.
#  4. A policy whose index is gone says so in stalled at once.
#  4b. A paused policy is listed by ttl_index_policy_health(), stalled
#     once paused for longer than stalled_after.
#  5. The known-dead prefix is trusted only for the index storage it was
#     read from, and never over a page of LSN 0 (wal_level = minimal).
#
# Every wait is for a state (a row count, a stats column).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $node = TtlIndex::node('stalls', 'ttl_index.stalled_after = 1',
	'ttl_index.error_delay = 1', 'ttl_index.batch_time = 10ms');
sub sql { return $node->safe_psql('postgres', $_[0]); }
sql('CREATE EXTENSION ttl_index');
TtlIndex::wait_worker($node, 'postgres');

# --- 1. a run of rows a foreign key keeps ---------------------------------
sql(q{
CREATE TABLE parent (id int PRIMARY KEY, ts timestamptz NOT NULL);
CREATE TABLE child (pid int REFERENCES parent);
INSERT INTO parent SELECT g, now() - interval '2 hours' FROM generate_series(1, 12000) g;
INSERT INTO child SELECT g FROM generate_series(1, 12000) g;
INSERT INTO parent SELECT 100000 + g, now() - interval '1 hour' FROM generate_series(1, 1000) g;
SELECT ttl_create_index('parent', 'ts', 60, batch_size => 500);
});
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM parent WHERE id > 100000', '0',
	'the rows after a run of 12,000 rows kept by a foreign key are deleted', 180);
is(sql('SELECT count(*) FROM parent'), '12000', 'the referenced rows stay');
TtlIndex::wait_until($node, 'postgres',
	q{SELECT stalled = 'rows kept by triggers, rules or foreign keys'
	         AND lag > interval '1 hour' AND rows_held = 12000
	    FROM ttl_index_stats WHERE table_name = 'parent'::regclass},
	'ttl_index_stats says why they stay, how long they have waited, how many');

# --- 2. a run of rows the filter rejects ----------------------------------
sql(q{
CREATE TABLE f (ts timestamptz NOT NULL, keep boolean NOT NULL);
CREATE FUNCTION gone(k boolean) RETURNS boolean LANGUAGE plpgsql STABLE
	AS $$ BEGIN RETURN NOT k; END $$;
INSERT INTO f SELECT now() - interval '2 hours', true FROM generate_series(1, 300000);
INSERT INTO f SELECT now() - interval '1 hour', false FROM generate_series(1, 1000);
SELECT ttl_create_index('f', 'ts', 60, filter => 'gone(keep)');
});
# (a stall would keep them for good: the bound is for a busy machine, where
# the worker, at nice 19 on an assert-enabled server, took 90 s in CI)
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM f WHERE NOT keep', '0',
	'the rows after a run of 300,000 rows the filter rejects are deleted', 240);
TtlIndex::wait_until($node, 'postgres',
	q{SELECT passes > 0 AND stalled IS NULL AND lag < interval '1 hour'
	    FROM ttl_index_stats WHERE table_name = 'f'::regclass},
	'rows the filter rejects stall nothing, and the lag (from the worker) says so')
  or diag(sql(q{SELECT passes, stalled, lag, rows_held, next_expiry, now() FROM ttl_index_stats WHERE table_name = 'f'::regclass}) . ' / ' .
	sql('SELECT * FROM ttl_index_policy_health()'));
is(sql('SELECT count(*) FROM f'), '300000', 'and they stay');

# --- 3. deferred constraints ----------------------------------------------
sql(q{
CREATE TABLE d (id int PRIMARY KEY, ts timestamptz NOT NULL);
CREATE TABLE d_child (pid int REFERENCES d DEFERRABLE INITIALLY DEFERRED);
CREATE FUNCTION d_hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.id = 7 THEN
		RAISE EXCEPTION 'row % is on legal hold', OLD.id;
	END IF;
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER d_hold AFTER DELETE ON d
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION d_hold();
INSERT INTO d SELECT g, now() - interval '2 hours' FROM generate_series(1, 1000) g;
SELECT ttl_create_index('d', 'ts', 60);
});
TtlIndex::wait_is($node, 'postgres', 'SELECT string_agg(id::text, \',\') FROM d', '7',
	'a deferred trigger refusing one row holds that row only', 60);
TtlIndex::wait_until($node, 'postgres',
	q{SELECT rows_held = 1 AND stalled = 'held rows' AND lag > interval '1 hour'
	    FROM ttl_index_stats WHERE table_name = 'd'::regclass},
	'ttl_index_stats says it is held');

# --- 4. no usable index -----------------------------------------------------
sql(q{
CREATE TABLE n (ts timestamptz NOT NULL);
SELECT ttl_create_index('n', 'ts', 60);
INSERT INTO n VALUES (now() - interval '1 hour');
});
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM n', '0', 'n is purged');
sql(q{
DROP INDEX n_ts_ttl_idx;
INSERT INTO n VALUES (now() - interval '1 hour');
});
TtlIndex::wait_until($node, 'postgres',
	q{SELECT stalled = 'no usable index' FROM ttl_index_stats WHERE table_name = 'n'::regclass},
	'a policy without its index says so');

# --- 4b. a pause nobody lifted -----------------------------------------
# The worker does not look at a paused policy, so only the views can say
# it waits: ttl_index_policy_health() lists it, and once it has been paused
# for longer than stalled_after, stalled says "paused"; the expiry of its
# oldest row is read as lag is, for those who may see the backlog.
sql(q{
BEGIN;
CREATE TABLE held_back (ts timestamptz NOT NULL);
INSERT INTO held_back SELECT now() - interval '2 hours' FROM generate_series(1, 10);
SELECT ttl_create_index('held_back', 'ts', 60);
SELECT ttl_pause('held_back');
COMMIT;
CREATE ROLE onlooker LOGIN;
});
my $pause_health = q{SELECT h.stalled, h.oldest_expiry < now() - interval '1 hour'
  FROM ttl_index_policy_health() h JOIN ttl_index_policy p ON p.id = h.policy_id
 WHERE p.relid = 'held_back'::regclass};
TtlIndex::wait_is($node, 'postgres', $pause_health, 'paused|t',
	'a policy paused for longer than stalled_after is listed, stalled: paused, with its oldest expiry');
is(sql(q{SELECT stalled, paused FROM ttl_index_stats WHERE table_name = 'held_back'::regclass}),
	'paused|t', 'ttl_index_stats says so');
is(sql(q{SELECT healthy, stalled FROM ttl_summary() WHERE table_name = 'held_back'}),
	'f|paused', 'and ttl_summary()');
is($node->safe_psql('postgres', $pause_health, extra_params => [ '-U', 'onlooker' ]), 'paused|',
	'another role sees that it is paused, not when its rows expired');
is(sql('SELECT count(*) FROM held_back'), '10', 'its rows stay while it is paused');
sql(q{SELECT ttl_resume('held_back')});
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM held_back', '0',
	'resumed, its rows go');
is(sql(q{SELECT paused_since IS NULL FROM ttl_index_policy WHERE relid = 'held_back'::regclass}), 't',
	'and the catalog forgets when it was paused');
TtlIndex::wait_is($node, 'postgres',
	q{SELECT coalesce(stalled, 'none') FROM ttl_index_stats WHERE table_name = 'held_back'::regclass},
	'none', 'nothing is stalled once it runs again');

$node->stop;

# --- 5. no known-dead prefix without proof ---------------------------------
# wal_level = minimal (and wal_skip_threshold = 0, so that new storage is
# synced, not logged): a table made and loaded in one transaction, and
# again after a TRUNCATE in one transaction, has index pages of LSN 0 with
# the same numbers; the prefix the worker recorded over the first load's
# dead entries must not make it skip the second load's rows
$node = TtlIndex::node('minimal', 'wal_level = minimal', 'max_wal_senders = 0',
	'wal_skip_threshold = 0', 'autovacuum = off');
sql('CREATE EXTENSION ttl_index');
TtlIndex::wait_worker($node, 'postgres');
sql(q{
BEGIN;
CREATE TABLE m (ts timestamptz NOT NULL, pad text);
INSERT INTO m SELECT '2020-01-01'::timestamptz + g * interval '1 s', repeat('x', 100)
  FROM generate_series(1, 20000) g;
SELECT ttl_create_index('m', 'ts', 60);
COMMIT;
});
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM m', '0',
	'the first load is purged (its pass recorded the prefix of dead entries)', 30);
sql(q{
BEGIN;
TRUNCATE m;
INSERT INTO m SELECT '2020-01-01'::timestamptz + g * interval '1 s', repeat('x', 100)
  FROM generate_series(1, 20000) g;
COMMIT;
});
TtlIndex::wait_is($node, 'postgres', 'SELECT count(*) FROM m', '0',
	'the second load, on new pages of the same numbers and LSN 0, is purged too', 30);
$node->stop;
done_testing();
