# Defects the randomized oracle (040_oracle.pl) found outside issue 45.
#
# rows_capped counts the rows a cap deletes while a trigger refuses others.
# A BEFORE DELETE trigger that raises on some rows fails the batch's
# statement; the pass then retries its rows in halves down to single rows
# (held.c) and the rows deleted by those retries were counted as deleted
# but not as capped (oracle seeds 798861329 o2_19, o8_16; 802987547 o3_9).
# A trigger that returns NULL for some rows leaves them without failing;
# those tables are counted right and stay so.  The worker purges.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TtlIndex;

my $node = TtlIndex::node('ofix', 'ttl_index.max_sleep = 200ms',
	'ttl_index.log_min_duration = -1', 'autovacuum = off');
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl_index;
-- 30 rows, one a minute into the past; ids that are multiples of 3 are
-- refused: by an error (r), by a NULL (n)
CREATE TABLE r (id int, k timestamptz);
CREATE FUNCTION r_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.id % 3 = 0 THEN
		RAISE EXCEPTION 'row % is kept', OLD.id;
	END IF;
	RETURN OLD;
END $$;
CREATE TRIGGER r_keep BEFORE DELETE ON r FOR EACH ROW EXECUTE FUNCTION r_keep();
CREATE TABLE n (id int, k timestamptz);
CREATE FUNCTION n_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.id % 3 = 0 THEN
		RETURN NULL;
	END IF;
	RETURN OLD;
END $$;
CREATE TRIGGER n_keep BEFORE DELETE ON n FOR EACH ROW EXECUTE FUNCTION n_keep();
INSERT INTO r SELECT g, now() - g * interval '1 min' FROM generate_series(1, 30) g;
INSERT INTO n SELECT * FROM r;
-- m: the same rows, 10 minutes of expiry and a cap of 5: ids 6 to 9 go
-- for the cap, 10 to 30 for their age, in one statement that the trigger
-- leaves some rows of
CREATE TABLE m (id int, k timestamptz);
CREATE TRIGGER m_keep BEFORE DELETE ON m FOR EACH ROW EXECUTE FUNCTION n_keep();
INSERT INTO m SELECT * FROM r;
SELECT pg_stat_force_next_flush();
});
$node->safe_psql('postgres', q{
ANALYZE r;
ANALYZE n;
ANALYZE m;
SELECT ttl_create_index('m', 'k', 600, max_rows => 5);
SELECT ttl_create_index('r', 'k', NULL::interval, max_rows => 10);
SELECT ttl_create_index('n', 'k', NULL::interval, max_rows => 10);
});

# the 20 oldest (ids 11 to 30) go over the cap, but for the 7 refused
my $left = q{SELECT (SELECT string_agg(id::text, ',' ORDER BY id) FROM r WHERE id > 10) || ' ' ||
	(SELECT string_agg(id::text, ',' ORDER BY id) FROM n WHERE id > 10) || ' ' ||
	(SELECT count(*) FROM r) || ' ' || (SELECT count(*) FROM n)};
TtlIndex::wait_is($node, 'postgres', $left,
	'12,15,18,21,24,27,30 12,15,18,21,24,27,30 17 17',
	'the cap deletes the oldest rows the triggers let go');
TtlIndex::wait_is($node, 'postgres',
	q{SELECT string_agg(id::text, ',' ORDER BY id) FROM m WHERE id > 5},
	'6,9,12,15,18,21,24,27,30',
	'the cap and the expiry delete the rows the trigger lets go');
# every row the cap deleted is counted as capped, and no other
TtlIndex::wait_is($node, 'postgres', q{
SELECT string_agg(table_name || ' ' || rows_deleted || ' ' || rows_capped, ', ' ORDER BY table_name::text)
  FROM ttl_index_stats WHERE table_name IN ('r'::regclass, 'n'::regclass, 'm'::regclass)},
	'm 16 2, n 13 13, r 13 13',
	'rows_capped counts the rows deleted over the cap, refused rows retried one by one too');

done_testing();
