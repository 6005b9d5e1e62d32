# Makefile for ttl_index (PGXS)
#
#   make && make install                 build and install (PG_CONFIG selects the server)
#   make installcheck                    pg_regress, isolation and TAP tests against a
#                                        running server (PGHOST/PGPORT)
#   make prove_installcheck              the TAP tests alone (they start their own servers)
#
# bash test/run_tests.sh runs all of it on every supported PostgreSQL (see
# CONTRIBUTING.md).

MODULE_big = ttl_index
OBJS = \
	src/errors.o \
	src/settings.o \
	src/ttl_index.o \
	src/api/alter.o \
	src/api/api.o \
	src/api/engine_test.o \
	src/api/import.o \
	src/api/preview.o \
	src/api/runner.o \
	src/api/views.o \
	src/bgw/helper.o \
	src/bgw/hooks.o \
	src/bgw/launcher.o \
	src/bgw/worker.o \
	src/citus/citus.o \
	src/citus/citus_follow.o \
	src/citus/citus_nodes.o \
	src/engine/backlog.o \
	src/engine/batch.o \
	src/engine/cap.o \
	src/engine/drain.o \
	src/engine/held.o \
	src/engine/origin.o \
	src/engine/partition.o \
	src/engine/pass.o \
	src/engine/probe.o \
	src/engine/skip.o \
	src/engine/timeout.o \
	src/engine/wal.o \
	src/env/extension.o \
	src/env/owner.o \
	src/policy/catalog.o \
	src/policy/expiry.o \
	src/policy/filter.o \
	src/policy/hide.o \
	src/policy/set.o \
	src/policy/statement.o \
	src/policy/targets.o \
	src/policy/window.o \
	src/shared/keepup.o \
	src/shared/parallel.o \
	src/shared/replicas.o \
	src/shared/shmem.o \
	src/shared/slices.o \
	src/shared/stats.o \
	src/shared/writes.o \
	src/shared/yield.o

EXTENSION = ttl_index
DATA = sql/ttl_index--1.0.sql sql/ttl_index--1.0--1.1.sql sql/ttl_index--1.1--1.2.sql \
	sql/ttl_index--1.2--1.3.sql sql/ttl_index--1.3--1.4.sql sql/ttl_index--1.4--1.5.sql
PGFILEDESC = "ttl_index - TTL indexes for PostgreSQL"

# the install and upgrade scripts are in sql/; the tests under test/:
# pg_regress runs test/sql/*.sql against test/expected/*.out, on a server
# without the library preloaded (PGXS runs them in the database
# contrib_regression)
REGRESS_OPTS = --inputdir=$(srcdir)/test
REGRESS = ttl_index ttl_alter ttl_expiry_rules ttl_windows_caps ttl_anonymize ttl_edges ttl_migrate ttl_tenants ttl_engine ttl_caps_edges ttl_views_owner_code ttl_held_runner ttl_anonymize_checks ttl_ofix_extreme \
	ttl_weekday_windows ttl_calendar ttl_preview ttl_hide_expired ttl_max_bytes

# isolation specs and their expected output live under test/isolation
ISOLATION = $(sort $(basename $(notdir $(wildcard $(srcdir)/test/isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=$(srcdir)/test/isolation

# TAP tests (PostgreSQL::Test::Cluster); they start their own servers
TAP_TESTS = 1
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wmissing-prototypes -Werror=implicit-function-declaration

EXTRA_CLEAN = output_iso tmp_check

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Every object depends on the project's headers: a server built without
# --enable-depend tracks no header dependencies, and an object left with an
# old layout of a shared struct corrupts shared memory.
$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h)

# PGXS runs the TAP tests as part of installcheck; this target runs them alone
.PHONY: prove_installcheck
prove_installcheck:
	$(prove_installcheck)
