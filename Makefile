# nddd: build, run, test and benchmark.
#
#   make          build daemon/nddd, clients/nddctl and the backend plugins
#   make run      install missing Debian packages, build, start nddd in the
#                 foreground on conf/nddd.conf with its data under var/
#   make test     install missing packages, build, run every test, then run
#                 them again built with AddressSanitizer and UBSan
#   make bench    install missing packages, build, run the benchmarks
#   make clean
#
# Objects go to build/$(VARIANT)/.  VARIANT=asan builds everything with
# AddressSanitizer and UndefinedBehaviorSanitizer; its binaries stay under
# build/asan/bin.  The release binaries are also copied to daemon/nddd and
# clients/nddctl.

VARIANT ?= release
B := build/$(VARIANT)

PKGS := libevent libevent_pthreads openssl lmdb libprotobuf-c liburiparser \
	inih libsystemd jansson
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARNINGS := -Wall -Wextra -Wshadow -Wpointer-arith -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wvla
CFLAGS_release := -O2 -g
CFLAGS_asan := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
LDFLAGS_asan := -fsanitize=address,undefined

CFLAGS ?= $(CFLAGS_$(VARIANT))
ALL_CFLAGS := -std=c11 -pthread $(WARNINGS) $(CFLAGS) $(PKG_CFLAGS) \
	-D_GNU_SOURCE -I$(B)/gen -Idaemon -Idaemon/accel -Iclients/libnddd \
	-Itests/lib -MMD -MP
ALL_LDFLAGS := -pthread $(LDFLAGS_$(VARIANT)) $(LDFLAGS)
LIBS := $(PKG_LIBS) -ldl -lm

# Protocol code generated from proto/nddd.proto.
GEN_C := $(B)/gen/nddd.pb-c.c
GEN_H := $(B)/gen/nddd.pb-c.h
GEN_O := $(B)/gen/nddd.pb-c.o

# Everything in daemon/ but main.c is the daemon's core library, shared with
# nddctl (simhash) and the tests; the cpu backend is compiled in.
CORE_SRCS := $(filter-out daemon/main.c,$(wildcard daemon/*.c)) \
	$(wildcard daemon/accel/cpu/*.c)
CORE_OBJS := $(CORE_SRCS:%.c=$(B)/%.o) $(GEN_O)
CLIENT_SRCS := $(wildcard clients/libnddd/*.c)
CLIENT_OBJS := $(CLIENT_SRCS:%.c=$(B)/%.o)
NDDCTL_SRCS := $(wildcard clients/nddctl*.c)
NDDCTL_OBJS := $(NDDCTL_SRCS:%.c=$(B)/%.o)
# Test programs: every tests/<kind>/check_NAME.c exports NAME_suite(), and
# the runner's list of suites is generated from the file names.
TESTLIB_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard tests/lib/*.c))
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_OBJS := $(UNIT_SRCS:%.c=$(B)/%.o) $(TESTLIB_OBJS)
INTEG_SRCS := $(wildcard tests/integration/*.c)
INTEG_OBJS := $(INTEG_SRCS:%.c=$(B)/%.o) $(TESTLIB_OBJS)
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BINS := $(BENCH_SRCS:tests/bench/%.c=$(B)/bin/%)

CORE_LIB := $(B)/libnddd-core.a
CLIENT_LIB := $(B)/libnddd.a
BINS := $(B)/bin/nddd $(B)/bin/nddctl
TEST_BINS := $(B)/bin/unit-tests $(B)/bin/integration-tests

TEST_DATA ?= $(abspath ../shared/data)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)
BENCH_LIBS := $(shell pkg-config --libs hiredis 2>/dev/null)
BENCH_CFLAGS := $(shell pkg-config --cflags hiredis 2>/dev/null)

.PHONY: all binaries tests run test check bench clean install deps-build \
	deps-test deps-bench

ifeq ($(VARIANT),release)
all: daemon/nddd clients/nddctl
else
all: binaries
endif

binaries: $(BINS)

daemon/nddd: $(B)/bin/nddd
	cp $< $@
clients/nddctl: $(B)/bin/nddctl
	cp $< $@

$(GEN_C) $(GEN_H) &: proto/nddd.proto
	@mkdir -p $(B)/gen
	protoc-c --c_out=$(B)/gen -Iproto $<

# Generated code is not ours to warn about.
$(GEN_O): $(GEN_C)
	$(CC) -std=c11 $(CFLAGS) $(PKG_CFLAGS) -I$(B)/gen -c -o $@ $<

$(B)/gen/%_suites.h: $(wildcard tests/unit/check_*.c tests/integration/check_*.c)
	@mkdir -p $(dir $@)
	for f in tests/$*/check_*.c; do \
		n=$${f##*/check_}; echo "SUITE($${n%.c})"; \
	done > $@.tmp && mv $@.tmp $@
$(B)/tests/unit/main.o: $(B)/gen/unit_suites.h
$(B)/tests/integration/main.o: $(B)/gen/integration_suites.h

$(B)/%.o: %.c | $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(CORE_LIB): $(CORE_OBJS)
	rm -f $@
	ar rcs $@ $^
$(CLIENT_LIB): $(CLIENT_OBJS) $(GEN_O)
	rm -f $@
	ar rcs $@ $^

$(B)/bin/nddd: $(B)/daemon/main.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -rdynamic -o $@ $^ $(LIBS)
$(B)/bin/nddctl: $(NDDCTL_OBJS) $(CLIENT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)
$(B)/bin/unit-tests: $(UNIT_OBJS) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
$(B)/bin/integration-tests: $(INTEG_OBJS) $(CLIENT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
$(B)/bin/%: $(B)/tests/bench/%.o $(CLIENT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(BENCH_LIBS) $(LIBS)

# nearidx_bench measures FAISS in the same process.  FAISS is C++ and
# Debian's libfaiss-dev has no C API for binary indexes, so that part is
# C++, compiled and linked only here (make bench).
FAISS_LIBS := -lfaiss -fopenmp -lblas -llapack
$(B)/tests/bench/%.o: tests/bench/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -pthread -fopenmp $(CFLAGS) -Wall -Wextra \
		-Itests/bench -MMD -MP -c -o $@ $<
$(B)/bin/nearidx_bench: $(B)/tests/bench/nearidx_bench.o \
		$(B)/tests/bench/nearidx_faiss.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(ALL_LDFLAGS) -o $@ $^ $(FAISS_LIBS) $(LIBS)

tests: $(TEST_BINS)

deps-build:
	tools/install-deps build
deps-test:
	tools/install-deps test
deps-bench:
	tools/install-deps bench

run: deps-build
	$(MAKE) all
	@mkdir -p var
	exec daemon/nddd -c conf/nddd.conf

# One variant: build it, then run its tests.
TEST_ENV := NDDD_BIN=$(abspath $(B)/bin/nddd) \
	NDDCTL_BIN=$(abspath $(B)/bin/nddctl) \
	NDDD_TEST_DATA=$(TEST_DATA) NDDD_SOURCE_DIR=$(CURDIR)
check: all tests
	$(TEST_ENV) $(B)/bin/unit-tests
	$(TEST_ENV) $(B)/bin/integration-tests

test: deps-test
	$(MAKE) WARNINGS="$(WARNINGS) -Werror" VARIANT=release check
	$(MAKE) WARNINGS="$(WARNINGS) -Werror" VARIANT=asan check
	tests/systemd-verify.sh

bench: deps-bench
	$(MAKE) all $(BENCH_BINS)
	tests/bench/run.sh $(B)/bin

# Installs for systemd: binaries under $(PREFIX), the configuration in
# /etc/nddd (kept if present), the unit and its user.
PREFIX ?= /usr/local
DESTDIR ?=
install: all
	install -D -m 0755 daemon/nddd $(DESTDIR)$(PREFIX)/bin/nddd
	install -D -m 0755 clients/nddctl $(DESTDIR)$(PREFIX)/bin/nddctl
	install -d $(DESTDIR)/etc/nddd
	[ -e $(DESTDIR)/etc/nddd/nddd.conf ] || \
		install -m 0644 conf/nddd.conf $(DESTDIR)/etc/nddd/nddd.conf
	sed 's|/usr/local|$(PREFIX)|g' systemd/nddd.service > nddd.service.tmp
	install -D -m 0644 nddd.service.tmp \
		$(DESTDIR)$(PREFIX)/lib/systemd/system/nddd.service
	rm -f nddd.service.tmp
	install -D -m 0644 systemd/nddd.sysusers \
		$(DESTDIR)$(PREFIX)/lib/sysusers.d/nddd.conf
	install -D -m 0644 README.md $(DESTDIR)$(PREFIX)/share/doc/nddd/README.md

clean:
	rm -rf build daemon/nddd clients/nddctl

-include $(shell find build/$(VARIANT) -name '*.d' 2>/dev/null)
