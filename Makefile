# Makefile for ttl_index (PGXS)

MODULE_big = ttl_index
OBJS = \
	src/api.o \
	src/backlog.o \
	src/catalog.o \
	src/expiry.o \
	src/launcher.o \
	src/partition.o \
	src/progress.o \
	src/purge.o \
	src/stats.o \
	src/target.o \
	src/ttl_index.o \
	src/worker.o \
	src/yield.o

EXTENSION = ttl_index
DATA = sql/ttl_index--1.0.sql sql/ttl_index--1.0--1.1.sql sql/ttl_index--1.1--1.2.sql
PGFILEDESC = "ttl_index - TTL indexes for PostgreSQL"

REGRESS = ttl_index ttl_expiry_rules
REGRESS_OPTS = --dbname=ttl_regress

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wmissing-prototypes -Werror=implicit-function-declaration

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
