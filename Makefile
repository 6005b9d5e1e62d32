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
	src/alter.o \
	src/api.o \
	src/backlog.o \
	src/batch.o \
	src/cap.o \
	src/catalog.o \
	src/citus.o \
	src/citus_follow.o \
	src/citus_nodes.o \
	src/drain.o \
	src/engine_test.o \
	src/errors.o \
	src/expiry.o \
	src/extension.o \
	src/filter.o \
	src/held.o \
	src/helper.o \
	src/hooks.o \
	src/import.o \
	src/keepup.o \
	src/launcher.o \
	src/origin.o \
	src/owner.o \
	src/parallel.o \
	src/partition.o \
	src/pass.o \
	src/probe.o \
	src/replicas.o \
	src/runner.o \
	src/set.o \
	src/settings.o \
	src/shmem.o \
	src/skip.o \
	src/slices.o \
	src/statement.o \
	src/stats.o \
	src/targets.o \
	src/timeout.o \
	src/ttl_index.o \
	src/views.o \
	src/wal.o \
	src/window.o \
	src/worker.o \
	src/writes.o \
	src/yield.o

EXTENSION = ttl_index
DATA = sql/ttl_index--1.0.sql sql/ttl_index--1.0--1.1.sql sql/ttl_index--1.1--1.2.sql \
	sql/ttl_index--1.2--1.3.sql sql/ttl_index--1.3--1.4.sql sql/ttl_index--1.4--1.5.sql
PGFILEDESC = "ttl_index - TTL indexes for PostgreSQL"

# the install and upgrade scripts are in sql/; the tests under test/:
# pg_regress runs test/sql/*.sql against test/expected/*.out, on a server
# without the library preloaded (PGXS runs them in the database
# contrib_regression)
REGRESS_OPTS = --inputdir=$(srcdir)/test
REGRESS = ttl_index ttl_alter ttl_expiry_rules ttl_windows_caps ttl_anonymize ttl_edges ttl_migrate ttl_tenants ttl_engine ttl_caps_edges ttl_views_owner_code ttl_held_runner ttl_anonymize_checks ttl_ofix_extreme

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
$(OBJS): $(wildcard $(srcdir)/src/*.h)

# PGXS runs the TAP tests as part of installcheck; this target runs them alone
.PHONY: prove_installcheck
prove_installcheck:
	$(prove_installcheck)
