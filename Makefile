# nddd: build, run, test and benchmark.
#
#   make          build daemon/nddd, clients/nddctl and the backend plugins
#   make run      install missing Debian packages, build, start nddd in the
#                 foreground on conf/nddd.conf with its data under var/
#   make test     install missing packages, build, run every test, then run
#                 them again built with AddressSanitizer and UBSan
#   make check-unit   build, run the unit tests and the layers' and
#                 pages' checks (a development loop's subset; make check
#                 adds the integration tests)
#   make bench    install missing packages, build, run the benchmarks
#   make test-python   the Python client's, Scrapy filter's and batch
#                 job's tests, part of make test, against the release
#                 daemon
#   make clean
#
# Objects go to build/$(VARIANT)/.  VARIANT=asan builds everything with
# AddressSanitizer and UndefinedBehaviorSanitizer; its binaries stay under
# build/asan/bin.  The release binaries are also copied to daemon/nddd and
# clients/nddctl.  The Python package's protocol module is generated into
# clients/python/nddd/ (git-ignored) so that the package works from the
# source tree with PYTHONPATH=clients/python.

VARIANT ?= release
B := build/$(VARIANT)

PKGS := libevent libevent_pthreads libevent_openssl openssl lmdb libprotobuf-c liburiparser \
	inih libsystemd jansson
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARNINGS := -Wall -Wextra -Wshadow -Wpointer-arith -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wvla
# The release build is hardened: the C library's checking variants of the
# string, memory and printf functions where the compiler knows a buffer's
# size (_FORTIFY_SOURCE, which needs the optimizer: -O2), canaries on the
# stack of functions with arrays or addresses taken, position-independent
# executables (so that address-space randomization moves them too), and
# relocations all resolved at start-up, then made read-only (full RELRO),
# in the programs, the plugins and libnddd.so.  tests/hardening-check.sh
# (make test) checks nddd and nddctl for each.  The sanitizer and fuzzing
# builds go without: AddressSanitizer intercepts the functions fortify
# would check, and finds more.
HARDEN_CFLAGS_release := -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 \
	-fstack-protector-strong
CFLAGS_release := -O2 -g $(HARDEN_CFLAGS_release)
LDFLAGS_release := -Wl,-z,relro,-z,now
# Executables only: shared objects are built -fPIC -shared.
PIE_CFLAGS_release := -fPIE
PIE_LDFLAGS_release := -pie
PIE_CFLAGS := $(PIE_CFLAGS_$(VARIANT))
PIE_LDFLAGS := $(PIE_LDFLAGS_$(VARIANT))
CFLAGS_asan := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
LDFLAGS_asan := -fsanitize=address,undefined
# The fuzzing build: clang's libFuzzer with the same sanitizers.
CFLAGS_fuzz := -O1 -g -fsanitize=fuzzer-no-link,address,undefined \
	-fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS_fuzz := -fsanitize=fuzzer,address,undefined
ifeq ($(VARIANT),fuzz)
CC := clang
endif

CFLAGS ?= $(CFLAGS_$(VARIANT))
BASE_CFLAGS := -std=c11 -pthread $(WARNINGS) $(CFLAGS) $(PIE_CFLAGS) \
	$(PKG_CFLAGS) -D_GNU_SOURCE -MMD -MP

# The daemon's layers, each a folder, lowest first.  A layer's code sees
# its own headers and those of the layers below it, and no others: the
# include paths below enforce it at compile time, and tools/check-layers
# (run by make test) checks every #include against the same table.
#   lib                 arena, log, mailbox, work queue, worker threads,
#                       CRC-32C, byte order, hash mixing
#   text, store         documents' terms and fingerprints; the LMDB store
#                       and its writer
#   url, doc, accel     the URL set; the documents and their tables; the
#                       accelerator host and its backends
#   conf                the configuration
#   net                 connections, frames, HTTP, metrics
#   req                 requests: decoding, authorization, the operations
#   daemon              main: wires the layers together
# (layer: the folders it may include)
LAYER_daemon/lib := daemon/lib
LAYER_daemon/text := daemon/text daemon/lib
LAYER_daemon/store := daemon/store daemon/lib
LAYER_daemon/url := daemon/url daemon/store daemon/lib
LAYER_daemon/doc := daemon/doc daemon/store daemon/text daemon/lib
LAYER_daemon/accel := daemon/accel daemon/text daemon/lib
LAYER_daemon/conf := daemon/conf daemon/store daemon/text daemon/lib
LAYER_daemon/net := daemon/net daemon/conf daemon/store daemon/text \
	daemon/lib $(B)/gen
LAYER_daemon/req := daemon/req daemon/net daemon/conf daemon/accel \
	daemon/doc daemon/url daemon/store daemon/text daemon/lib $(B)/gen
LAYER_daemon := daemon $(LAYER_daemon/req)
DAEMON_INC := $(addprefix -I,$(LAYER_daemon))
# Clients see the client library, the protocol and the fingerprint
# library's headers; tests, benchmarks and fuzz targets see everything.
CLIENT_INC := -Iclients/libnddd -I$(B)/gen -Idaemon/accel -Idaemon/text \
	-Idaemon/lib -Idaemon/url
TEST_INC := $(DAEMON_INC) -Iclients/libnddd -Iclients -Itests/lib
# The include path of a source file: its layer's (cpu/ and the plugins'
# folders belong to daemon/accel).
layer_of = $(firstword $(foreach l,daemon/lib daemon/text daemon/store \
	daemon/url daemon/doc daemon/accel daemon/conf daemon/net daemon/req,\
	$(if $(filter $(l)/%,$(1)),$(l))) $(if $(filter daemon/%,$(1)),daemon))
inc_of = $(if $(call layer_of,$(1)),$(addprefix -I,$(LAYER_$(call \
	layer_of,$(1)))),$(if $(filter clients/%,$(1)),$(CLIENT_INC),$(TEST_INC)))
ALL_CFLAGS = $(BASE_CFLAGS) $(call inc_of,$<)
LAYERS := daemon/lib daemon/text daemon/store daemon/url daemon/doc \
	daemon/accel daemon/conf daemon/net daemon/req daemon
ALL_LDFLAGS := -pthread $(LDFLAGS_$(VARIANT)) $(PIE_LDFLAGS) $(LDFLAGS)
LIBS := $(PKG_LIBS) -ldl -lm

# Protocol code generated from proto/nddd.proto.
GEN_C := $(B)/gen/nddd.pb-c.c
GEN_H := $(B)/gen/nddd.pb-c.h
GEN_O := $(B)/gen/nddd.pb-c.o

# The fingerprint library: what nddctl and the client library share with
# the daemon (URL canonicalization; the simhash engine and the accelerator
# host with its built-in cpu backend; the utilities they use; the shard
# routing's jump hash, a header alone).
FP_SRCS := daemon/lib/arena.c daemon/lib/log.c daemon/lib/mailbox.c \
	daemon/lib/md5.c daemon/lib/nsmask.c \
	daemon/lib/workq.c $(wildcard daemon/text/*.c) daemon/url/urlcanon.c \
	daemon/url/urldigest.c daemon/accel/accel.c $(wildcard daemon/accel/cpu/*.c)
FP_OBJS := $(FP_SRCS:%.c=$(B)/%.o)
FP_HDRS := $(wildcard $(filter-out daemon/text/html_entities.h \
	daemon/text/simhash_%.h,$(FP_SRCS:.c=.h)) daemon/text/simhash_impl.h \
	daemon/accel/accel_abi.h daemon/lib/jumphash.h)
# The rest of daemon/ but main.c is the daemon's core library, shared with
# the tests (the plugins are built on their own, below).
CORE_SRCS := $(filter-out daemon/main.c $(FP_SRCS) daemon/accel/opencl/% \
	daemon/accel/fpga/%,$(shell find daemon -name '*.c'))
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
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES := $(FUZZ_SRCS:tests/fuzz/fuzz_%.c=%)

FP_LIB := $(B)/libnddd-fp.a
CORE_LIB := $(B)/libnddd-core.a $(FP_LIB)
CLIENT_LIB := $(B)/libnddd.a
BINS := $(B)/bin/nddd $(B)/bin/nddctl
TEST_BINS := $(B)/bin/unit-tests $(B)/bin/integration-tests

TEST_DATA ?= $(abspath ../shared/data)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)
BENCH_LIBS := $(shell pkg-config --libs hiredis 2>/dev/null)
BENCH_CFLAGS := $(shell pkg-config --cflags hiredis 2>/dev/null)

# Debian's interpreter, with Debian's python3-protobuf and python3-scrapy.
PYTHON ?= /usr/bin/python3
PY_DIR := clients/python
PY_GEN := $(PY_DIR)/nddd/nddd_pb2.py

.PHONY: all binaries tests run test check check-unit check-docs bench clean \
	install deps-build print-layers check-layers \
	deps-test deps-bench fuzz fuzz-bins fuzz-run python test-python

ifeq ($(VARIANT),release)
all: daemon/nddd clients/nddctl $(PY_GEN)
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

$(PY_GEN): proto/nddd.proto
	protoc --python_out=$(PY_DIR)/nddd -Iproto $<

python: $(PY_GEN)

# Generated code is not ours to warn about.
$(GEN_O): $(GEN_C)
	$(CC) -std=c11 $(CFLAGS) $(PIE_CFLAGS) $(PKG_CFLAGS) -I$(B)/gen -c \
		-o $@ $<

$(B)/gen/%_suites.h: $(wildcard tests/unit/check_*.c tests/integration/check_*.c)
	@mkdir -p $(dir $@)
	for f in tests/$*/check_*.c; do \
		[ -e "$$f" ] || continue; \
		n=$${f##*/check_}; echo "SUITE($${n%.c})"; \
	done > $@.tmp && mv $@.tmp $@
$(B)/tests/unit/main.o: $(B)/gen/unit_suites.h
$(B)/tests/integration/main.o: $(B)/gen/integration_suites.h

$(B)/%.o: %.c | $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/libnddd-core.a: $(CORE_OBJS)
	rm -f $@
	ar rcs $@ $^
$(FP_LIB): $(FP_OBJS)
	rm -f $@
	ar rcs $@ $^
$(CLIENT_LIB): $(CLIENT_OBJS) $(GEN_O)
	rm -f $@
	ar rcs $@ $^

# The client library as a shared object, for bindings that load it (the
# Python client's digests and the batch job's fingerprints, through
# ctypes): libnddd, the protocol code, the canonicalizer with its arena,
# the URL digests with MD5, and the simhash engine (daemon/text: its AVX2
# and AVX-512 kernels pick their instructions per function, so they need
# no flags of their own), compiled again as position-independent code
# into $(B)/pic and linked against protobuf-c, uriparser and OpenSSL.  It
# exports the nddd_* functions only (not nddd__v1__*: the protocol code,
# nor urlcanon_*, urldigest_*, md5_* or simhash_*), so that it clashes
# with nothing of the process loading it.  In the asan variant it keeps
# UBSan but not ASan, whose runtime must be the first library of the
# process, which an interpreter's is not; in the release variant it is
# linked with full RELRO like the programs.
SO_SRCS := $(CLIENT_SRCS) daemon/url/urlcanon.c daemon/url/urldigest.c \
	daemon/lib/md5.c daemon/lib/nsmask.c daemon/lib/arena.c \
	$(wildcard daemon/text/*.c)
SO_OBJS := $(SO_SRCS:%.c=$(B)/pic/%.o) $(B)/pic/gen/nddd.pb-c.o
SO_SAN := $(if $(filter asan,$(VARIANT)),-fsanitize=undefined \
	-fno-sanitize-recover=undefined)
SO_CFLAGS = $(filter-out -fsanitize=% -fno-sanitize-recover=% -fPIE,\
	$(ALL_CFLAGS)) $(SO_SAN) -fPIC
SO_LDFLAGS := $(filter-out -fsanitize=%,$(LDFLAGS_$(VARIANT)))
SO_LIBS := $(shell pkg-config --libs libprotobuf-c liburiparser openssl \
	2>/dev/null)
all: $(B)/libnddd.so
$(B)/pic/%.o: %.c | $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(SO_CFLAGS) -c -o $@ $<
$(B)/pic/gen/nddd.pb-c.o: $(GEN_C)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(filter-out -fsanitize=% -fno-sanitize-recover=%,\
		$(CFLAGS)) $(SO_SAN) -fPIC $(PKG_CFLAGS) -I$(B)/gen -c -o $@ $<
$(B)/pic/libnddd.map:
	@mkdir -p $(dir $@)
	printf '{\n  global: nddd_[a-z]*;\n  local: *;\n};\n' > $@
$(B)/libnddd.so: $(SO_OBJS) $(B)/pic/libnddd.map
	$(CC) -shared -pthread $(SO_SAN) $(SO_LDFLAGS) $(LDFLAGS) \
		-Wl,--no-undefined -Wl,-soname,libnddd.so \
		-Wl,--version-script=$(B)/pic/libnddd.map -o $@ $(SO_OBJS) \
		$(SO_LIBS)

$(B)/bin/nddd: $(B)/daemon/main.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -rdynamic -o $@ $^ $(LIBS)
$(B)/bin/nddctl: $(NDDCTL_OBJS) $(CLIENT_LIB) $(FP_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)
# nddctl's JSON lines parser is tested against jansson as a unit of its own.
$(B)/bin/unit-tests: $(UNIT_OBJS) $(B)/clients/nddctl_jsonl.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
$(B)/bin/integration-tests: $(INTEG_OBJS) $(CLIENT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
$(B)/bin/fuzz_%: $(B)/tests/fuzz/fuzz_%.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)
$(B)/bin/%: $(B)/tests/bench/%.o $(CLIENT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(BENCH_LIBS) $(LIBS)

# nearidx_bench measures FAISS in the same process.  FAISS is C++ and
# Debian's libfaiss-dev has no C API for binary indexes, so that part is
# C++, compiled and linked only here (make bench).
FAISS_LIBS := -lfaiss -fopenmp -lblas -llapack
$(B)/tests/bench/%.o: tests/bench/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -pthread -fopenmp $(CFLAGS) $(PIE_CFLAGS) -Wall \
		-Wextra -Itests/bench -MMD -MP -c -o $@ $<
$(B)/bin/nearidx_bench: $(B)/tests/bench/nearidx_bench.o \
		$(B)/tests/bench/nearidx_faiss.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(ALL_LDFLAGS) -o $@ $^ $(FAISS_LIBS) $(LIBS)

tests: $(TEST_BINS)

# The layer table, for tools/check-layers: each layer, then the folders
# (or, for the clients, the fingerprint library's headers) it may include.
print-layers:
	@$(foreach l,$(LAYERS),echo "$(l): $(LAYER_$(l))";)
	@echo "clients/libnddd: clients/libnddd $(FP_HDRS)"
	@echo "clients: clients clients/libnddd $(FP_HDRS)"
check-layers:
	@$(MAKE) -s --no-print-directory print-layers | tools/check-layers

deps-build:
	tools/install-deps build
deps-test:
	tools/install-deps test
deps-bench:
	tools/install-deps bench

# nddd refuses to run as root unless told: a development machine's root
# shell is told here, and nddd says so in its log.
run: deps-build
	$(MAKE) all
	@mkdir -p var
	exec daemon/nddd -c conf/nddd.conf \
		$$([ "$$(id -u)" -eq 0 ] && echo --allow-root)

# One variant: build it, then run its tests.  The sanitizer runtime of
# gcc 12 misreads glibc's dynamic TLS blocks of dlopen'ed libraries (the
# OpenCL and FPGA plugins) and its leak checker can crash at exit
# (google/sanitizers#1322): it is told not to track them; every other leak
# is still reported.
TEST_ENV := ASAN_OPTIONS=intercept_tls_get_addr=0 \
	NDDD_BIN=$(abspath $(B)/bin/nddd) \
	NDDD_LIBRARY=$(abspath $(B)/libnddd.so) \
	NDDD_ACCEL_DIR=$(abspath $(B)/accel) \
	NDDCTL_BIN=$(abspath $(B)/bin/nddctl) \
	NDDD_TEST_DATA=$(TEST_DATA) NDDD_SOURCE_DIR=$(CURDIR)
# The unit and the integration tests run at the same time
# (tests/run-together.sh): the integration tests wait for daemons much of
# theirs, and a 2-core machine has room for the unit tests meanwhile.
check: all tests check-layers check-docs
	$(TEST_ENV) tests/run-together.sh $(B)/bin/unit-tests \
		$(B)/bin/integration-tests

# A development loop's subset: the unit tests, without the integration
# tests (about 2 minutes on 2 cores, against make check's 4 to 5).
check-unit: all $(B)/bin/unit-tests check-layers check-docs
	$(TEST_ENV) $(B)/bin/unit-tests

# The reference pages against the code's own tables, and every link of
# README.md and docs/ (a second); then the checker's own test.
check-docs:
	$(PYTHON) tests/docs/check_docs.py
	$(PYTHON) tests/docs/check_docs.py --self-test

# Python tests: a real daemon (NDDD_BIN), nddctl, Scrapy in subprocesses.
# The sanitizer pass runs the client's tests only (the crawls are slow
# there and reach no part of the daemon the client tests do not).
PY_TESTS ?= test_*.py
test-python: all $(PY_GEN)
	$(TEST_ENV) PYTHONPATH=$(CURDIR)/$(PY_DIR) $(PYTHON) -m unittest \
		discover -s tests/python -t tests/python -p '$(PY_TESTS)' -v

test: deps-test
	$(MAKE) WARNINGS="$(WARNINGS) -Werror" VARIANT=release check
	$(MAKE) WARNINGS="$(WARNINGS) -Werror" VARIANT=release test-python
	tests/hardening-check.sh build/release
	$(MAKE) WARNINGS="$(WARNINGS) -Werror" VARIANT=asan check
	$(MAKE) WARNINGS="$(WARNINGS) -Werror" VARIANT=asan test-python \
		PY_TESTS=test_client.py
	tests/systemd-verify.sh
	$(MAKE) FUZZ_SECONDS=$(FUZZ_TEST_SECONDS) fuzz-run

# Fuzzing with libFuzzer: `make fuzz` runs each target for FUZZ_RUNS
# executions (10 million; BENCHMARKS.md has the figures), `make fuzz-run
# FUZZ_SECONDS=N` for N seconds each; `make test` replays the corpora and
# regressions, then fuzzes each target for FUZZ_TEST_SECONDS.  New inputs go
# to build/fuzz/corpus/TARGET, crashes to build/fuzz/crashes/: a crash found
# is fixed and its input added to tests/fuzz/regressions/TARGET/, which every
# run replays.  Each target's line ends with its wall time and its corpus
# after the run (files, bytes).
FUZZ_RUNS ?= 10000000
FUZZ_SECONDS ?= 300
FUZZ_TEST_SECONDS ?= 15
FUZZ_LIMIT = -max_total_time=$(FUZZ_SECONDS)
# fuzz_dispatch's threads make LeakSanitizer's check after each new input
# cost a third of its rate: its leaks are looked for at exit only.
FUZZ_FLAGS_dispatch := -detect_leaks=0
fuzz: deps-test
	$(MAKE) FUZZ_LIMIT=-runs=$(FUZZ_RUNS) fuzz-run
fuzz-bins:
	$(MAKE) VARIANT=fuzz $(FUZZ_NAMES:%=build/fuzz/bin/fuzz_%)
fuzz-run: fuzz-bins
	@mkdir -p build/fuzz/crashes
	@for t in $(FUZZ_NAMES); do \
		case $$t in \
		dispatch) flags="$(FUZZ_FLAGS_dispatch)";; \
		*) flags=;; \
		esac; \
		mkdir -p build/fuzz/corpus/$$t; \
		regress=; [ -d tests/fuzz/regressions/$$t ] && \
			regress=tests/fuzz/regressions/$$t; \
		echo "fuzz $$t: replaying the corpus and regressions"; \
		build/fuzz/bin/fuzz_$$t $$flags -runs=0 tests/fuzz/corpus/$$t \
			$$regress > build/fuzz/replay-$$t.log 2>&1 || \
			{ tail -30 build/fuzz/replay-$$t.log; exit 1; }; \
		tail -1 build/fuzz/replay-$$t.log; \
		echo "fuzz $$t: $(FUZZ_LIMIT)"; \
		start=$$(date +%s); \
		build/fuzz/bin/fuzz_$$t $$flags $(FUZZ_LIMIT) \
			-artifact_prefix=build/fuzz/crashes/$$t- \
			-print_final_stats=1 build/fuzz/corpus/$$t \
			tests/fuzz/corpus/$$t 2>&1 | \
			grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|Done|ERROR|SUMMARY|fuzz_dispatch:' \
			|| exit 1; \
		echo "fuzz $$t: $$(($$(date +%s) - start)) s, corpus" \
			"$$(ls build/fuzz/corpus/$$t | wc -l) files," \
			"$$(cat build/fuzz/corpus/$$t/* 2>/dev/null | wc -c) bytes"; \
		test -z "$$(ls build/fuzz/crashes/$$t-* 2>/dev/null)" || \
			{ echo "fuzz $$t: crashes in build/fuzz/crashes"; exit 1; }; \
	done

bench: deps-bench
	$(MAKE) all $(BENCH_BINS)
	tests/bench/run.sh $(B)/bin
	$(MAKE) bench-accel

# Installs for systemd: binaries and plugins under $(PREFIX), the
# configuration and stop words in /etc/nddd (kept if present, with their
# paths made absolute), the unit and its user.
PREFIX ?= /usr/local
DESTDIR ?=
install: all
	install -D -m 0755 daemon/nddd $(DESTDIR)$(PREFIX)/bin/nddd
	install -D -m 0755 clients/nddctl $(DESTDIR)$(PREFIX)/bin/nddctl
	install -D -m 0644 build/release/libnddd.so \
		$(DESTDIR)$(PREFIX)/lib/libnddd.so
	install -d $(DESTDIR)$(PREFIX)/lib/nddd/accel
	for p in build/release/accel/nddd-accel-*.so; do \
		[ -e "$$p" ] || continue; \
		install -m 0755 "$$p" $(DESTDIR)$(PREFIX)/lib/nddd/accel/; \
	done
	install -d $(DESTDIR)/etc/nddd
	[ -e $(DESTDIR)/etc/nddd/stopwords.txt ] || \
		install -m 0644 conf/stopwords.txt $(DESTDIR)/etc/nddd/
	[ -e $(DESTDIR)/etc/nddd/nddd.conf ] || { \
		sed -e 's|^stopwords = .*|stopwords = /etc/nddd/stopwords.txt|' \
		    -e 's|^plugin_dir =.*|plugin_dir = $(PREFIX)/lib/nddd/accel|' \
		    -e 's|^data_dir = .*|data_dir = /var/lib/nddd|' \
		    conf/nddd.conf > nddd.conf.tmp && \
		install -m 0644 nddd.conf.tmp $(DESTDIR)/etc/nddd/nddd.conf; \
		rm -f nddd.conf.tmp; }
	sed 's|/usr/local|$(PREFIX)|g' systemd/nddd.service > nddd.service.tmp
	install -D -m 0644 nddd.service.tmp \
		$(DESTDIR)$(PREFIX)/lib/systemd/system/nddd.service
	rm -f nddd.service.tmp
	install -D -m 0644 systemd/nddd.sysusers \
		$(DESTDIR)$(PREFIX)/lib/sysusers.d/nddd.conf
	install -D -m 0644 README.md $(DESTDIR)$(PREFIX)/share/doc/nddd/README.md
	install -m 0644 docs/*.md $(DESTDIR)$(PREFIX)/share/doc/nddd/

clean:
	rm -rf build daemon/nddd clients/nddctl $(PY_GEN) $(PY_DIR)/build \
		$(PY_DIR)/*.egg-info
	find clients/python tests -name __pycache__ -type d -prune \
		-exec rm -rf {} +

# --- simhash engine ---------------------------------------------------------
# VARIANT=profile: the release build with the simhash kernels' phase
# profile compiled in (simhash_bench prints it).
ifeq ($(VARIANT),profile)
ALL_CFLAGS += -O2 -g -DSIMHASH_PROFILE
endif

# Benchmarks that share the URL generator, the naive simhash reference or
# the corpus reader of tests/lib (which need no Check).
$(B)/bin/url_bench $(B)/bin/shards_bench $(B)/bin/md5_bench: $(B)/bin/%: \
	$(B)/tests/bench/%.o $(B)/tests/lib/urlgen.o \
	$(B)/tests/lib/benchnet.o $(CLIENT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)
$(B)/bin/redis_bench: $(B)/tests/bench/redis_bench.o $(B)/tests/lib/urlgen.o \
	$(B)/tests/lib/benchnet.o $(CLIENT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(BENCH_LIBS) $(LIBS)
$(B)/bin/doc_bench: $(B)/tests/bench/doc_bench.o $(B)/tests/lib/corpus.o \
	$(B)/tests/lib/benchnet.o $(CLIENT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)
$(B)/bin/simhash_bench: $(B)/tests/bench/simhash_bench.o \
	$(B)/tests/lib/simhash_ref.o $(B)/tests/lib/corpus.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)
$(B)/bin/sketch_bench: $(B)/tests/bench/sketch_bench.o \
	$(B)/tests/lib/corpus.o $(B)/tests/lib/benchnet.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# nddd loads a plugin only from a file and a directory that no one but
# root and its own user may write (daemon/accel/accel.h): a plugin is made
# so, and its directory, whatever the umask of the build.
PLUGIN_TRUST = chmod go-w $(dir $@) $@

# Accelerator plugins for the unit tests: shared objects built against
# daemon/accel/accel_abi.h alone, linking nothing of nddd; the tests load
# them from $(B)/plugins.
TEST_PLUGIN_SRCS := $(wildcard tests/plugins/accel_*.c)
TEST_PLUGINS := $(TEST_PLUGIN_SRCS:tests/plugins/accel_%.c=\
	$(B)/plugins/nddd-accel-%.so)
$(B)/plugins/nddd-accel-%.so: tests/plugins/accel_%.c \
	daemon/accel/accel_abi.h tests/plugins/accel_test.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -pthread $(WARNINGS) $(CFLAGS) -D_GNU_SOURCE \
		-Idaemon/accel -fPIC -shared $(LDFLAGS_$(VARIANT)) -o $@ $<
	$(PLUGIN_TRUST)
# The unit tests also run nddctl simhash, and load libnddd.so.
$(B)/bin/unit-tests: | $(TEST_PLUGINS) $(B)/bin/nddctl $(B)/libnddd.so
$(B)/bin/integration-tests: | $(TEST_PLUGINS)
# ----------------------------------------------------------------------------

# --- accelerator plugins ------------------------------------------------------
# make builds the plugins whose toolchains are here into
# $(B)/accel/nddd-accel-NAME.so (point [accel] plugin_dir, or nddctl
# --accel-dir, at that directory) and says why it skips the others.  Each
# is built against accel_abi.h (and plugin_params.h) alone, plus its own
# toolkit:
#   opencl      the OpenCL ICD loader (-lOpenCL) and OpenCL headers;
#   fpga-sim    the Verilator model of daemon/accel/fpga/rtl and a C++
#               compiler.
# Neither toolkit is needed for nddd itself.
ACCEL_DIR := $(B)/accel
HASH := \#
CXX ?= g++
VERILATOR ?= verilator

OPENCL_CFLAGS := $(shell pkg-config --cflags OpenCL 2>/dev/null)
OPENCL_LIBS := $(shell pkg-config --libs OpenCL 2>/dev/null)
OPENCL_SKIP := $(if $(shell pkg-config --exists OpenCL 2>/dev/null && \
	echo y),,no OpenCL ICD loader to link with (pkg-config OpenCL; \
	Debian: ocl-icd-opencl-dev))
OPENCL_SKIP := $(or $(OPENCL_SKIP),$(if $(shell printf \
	'$(HASH)include <CL/cl.h>\n' | $(CC) $(OPENCL_CFLAGS) -E -x c - \
	>/dev/null 2>&1 && echo y),,no OpenCL headers (CL/cl.h; Debian: \
	opencl-headers)))

FPGA_SKIP := $(if $(shell command -v $(VERILATOR) 2>/dev/null),,no \
	$(VERILATOR) (Debian: verilator))
FPGA_SKIP := $(or $(FPGA_SKIP),$(if $(shell command -v $(CXX) 2>/dev/null),,no \
	C++ compiler $(CXX) (Debian: g++)))
YOSYS_SKIP := $(if $(shell command -v yosys 2>/dev/null),,no yosys \
	(Debian: yosys))

ACCEL_PLUGINS := $(if $(OPENCL_SKIP),,$(ACCEL_DIR)/nddd-accel-opencl.so) \
	$(if $(FPGA_SKIP),,$(ACCEL_DIR)/nddd-accel-fpga-sim.so)

.PHONY: accel-plugins check-accel-hw bench-accel
all: accel-plugins
accel-plugins: $(ACCEL_PLUGINS)
ifneq ($(OPENCL_SKIP),)
	@echo "skipping opencl plugin: $(OPENCL_SKIP)"
endif
ifneq ($(FPGA_SKIP),)
	@echo "skipping fpga-sim plugin: $(FPGA_SKIP)"
endif

# OpenCL: the kernel's source goes into the plugin as an array.
$(B)/gen/opencl_kernel.h: daemon/accel/opencl/simhash.cl tools/embed-file
	@mkdir -p $(dir $@)
	tools/embed-file opencl_kernel_source $< > $@.tmp && mv $@.tmp $@
$(ACCEL_DIR)/nddd-accel-opencl.so: daemon/accel/opencl/opencl.c \
	$(B)/gen/opencl_kernel.h daemon/accel/accel_abi.h \
	daemon/accel/plugin_params.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -pthread $(WARNINGS) $(CFLAGS) -D_GNU_SOURCE \
		-Idaemon/accel -I$(B)/gen $(OPENCL_CFLAGS) -fPIC -shared \
		$(LDFLAGS_$(VARIANT)) -o $@ $< $(OPENCL_LIBS)
	$(PLUGIN_TRUST)

# FPGA: the RTL, verilated with the parameters below, is compiled once for
# every variant into build/fpga-model/CONFIG (the generated code is
# Verilator's, not checked with the sanitizers); the driver, the plugin and
# the test bench are compiled per variant into $(B)/fpga/CONFIG, and those
# of the configuration in use are copied to $(B)/accel and $(B)/bin.
FPGA_ENGINES ?= 1
FPGA_CORES ?= 8
FPGA_COUNTER_W ?= 32
FPGA_CONFIG := e$(FPGA_ENGINES)-c$(FPGA_CORES)-w$(FPGA_COUNTER_W)
FPGA_RTL := $(wildcard daemon/accel/fpga/rtl/*.v)
FPGA_MODEL_DIR := build/fpga-model/$(FPGA_CONFIG)
FPGA_MODEL := $(FPGA_MODEL_DIR)/Vsimhash_top__ALL.a
FPGA_OBJ := $(B)/fpga/$(FPGA_CONFIG)
FPGA_VLT_ROOT := $(if $(FPGA_SKIP),,$(shell $(VERILATOR) --getenv \
	VERILATOR_ROOT 2>/dev/null))
FPGA_VLT_OBJS := $(FPGA_MODEL_DIR)/verilated.o \
	$(FPGA_MODEL_DIR)/verilated_threads.o
FPGA_PARAMS := -GENGINES=$(FPGA_ENGINES) -GCORES=$(FPGA_CORES) \
	-GCOUNTER_W=$(FPGA_COUNTER_W)
FPGA_CXXFLAGS := -std=c++17 -O2 -g -fPIC -Wall -Wextra \
	-isystem $(FPGA_VLT_ROOT)/include -isystem $(FPGA_VLT_ROOT)/include/vltstd \
	-I$(FPGA_MODEL_DIR) -Idaemon/accel/fpga -DFPGA_ENGINES=$(FPGA_ENGINES) \
	-DFPGA_CORES=$(FPGA_CORES) -DFPGA_COUNTER_W=$(FPGA_COUNTER_W)

# The configuration last built, rewritten only when it changes.
$(B)/fpga/config: FORCE
	@mkdir -p $(dir $@)
	@echo '$(FPGA_CONFIG)' | cmp -s - $@ || echo '$(FPGA_CONFIG)' > $@
$(FPGA_MODEL) $(FPGA_MODEL_DIR)/Vsimhash_top.h &: $(FPGA_RTL)
	rm -rf $(FPGA_MODEL_DIR)/obj && mkdir -p $(FPGA_MODEL_DIR)/obj
	$(VERILATOR) --cc -Wall -O3 --x-assign fast --x-initial fast \
		--Mdir $(FPGA_MODEL_DIR)/obj $(FPGA_PARAMS) \
		--top-module simhash_top $(FPGA_RTL)
	$(MAKE) -s -C $(FPGA_MODEL_DIR)/obj -f Vsimhash_top.mk CXX=$(CXX) \
		OPT_FAST=-O2 CXXFLAGS=-fPIC Vsimhash_top__ALL.a
	cp $(FPGA_MODEL_DIR)/obj/*.h $(FPGA_MODEL_DIR)/
	cp $(FPGA_MODEL_DIR)/obj/Vsimhash_top__ALL.a $(FPGA_MODEL)
$(FPGA_VLT_OBJS): $(FPGA_MODEL_DIR)/%.o:
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -fPIC -w -I$(FPGA_VLT_ROOT)/include \
		-I$(FPGA_VLT_ROOT)/include/vltstd -c -o $@ \
		$(FPGA_VLT_ROOT)/include/$*.cpp
$(FPGA_OBJ)/fpga_drv.o: daemon/accel/fpga/fpga_drv.cpp \
	daemon/accel/fpga/fpga_drv.h $(FPGA_MODEL_DIR)/Vsimhash_top.h
	@mkdir -p $(dir $@)
	$(CXX) $(FPGA_CXXFLAGS) $(if $(filter asan,$(VARIANT)),$(CFLAGS_asan)) \
		$(HARDEN_CFLAGS_$(VARIANT)) -c -o $@ $<
$(FPGA_OBJ)/fpga-sim.so: daemon/accel/fpga/fpga_sim.c $(FPGA_OBJ)/fpga_drv.o \
	$(FPGA_MODEL) $(FPGA_VLT_OBJS) daemon/accel/accel_abi.h \
	daemon/accel/plugin_params.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -pthread $(WARNINGS) $(CFLAGS) -D_GNU_SOURCE \
		-Idaemon/accel -Idaemon/accel/fpga -fPIC -c \
		-o $(FPGA_OBJ)/fpga_sim.o $<
	$(CXX) -shared -fPIC -pthread $(LDFLAGS_$(VARIANT)) -o $@ \
		$(FPGA_OBJ)/fpga_sim.o $(FPGA_OBJ)/fpga_drv.o $(FPGA_MODEL) \
		$(FPGA_VLT_OBJS)
$(ACCEL_DIR)/nddd-accel-fpga-sim.so: $(FPGA_OBJ)/fpga-sim.so $(B)/fpga/config
	@mkdir -p $(dir $@)
	cp $< $@
	$(PLUGIN_TRUST)

# The test bench of the RTL (tests/fpga/simhash_tb.cpp), on the same model
# and driver, with nddd's preprocessing and the naive reference.
$(FPGA_OBJ)/simhash_tb: tests/fpga/simhash_tb.cpp $(FPGA_OBJ)/fpga_drv.o \
	$(FPGA_MODEL) $(FPGA_VLT_OBJS) $(B)/tests/lib/corpus.o \
	$(B)/tests/lib/simhash_ref.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(FPGA_CXXFLAGS) $(TEST_INC) -o $@ $< \
		$(FPGA_OBJ)/fpga_drv.o $(FPGA_MODEL) $(FPGA_VLT_OBJS) \
		$(B)/tests/lib/corpus.o $(B)/tests/lib/simhash_ref.o \
		$(CORE_LIB) $(ALL_LDFLAGS) $(LIBS)
$(B)/bin/simhash_tb: $(FPGA_OBJ)/simhash_tb $(B)/fpga/config
	@mkdir -p $(dir $@)
	cp $< $@

# The accelerators' benchmark links the corpus reader of tests/lib.
$(B)/bin/accel_bench: $(B)/tests/bench/accel_bench.o $(B)/tests/lib/corpus.o \
	$(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# make bench-accel: the accelerators' figures for BENCHMARKS.md: throughput
# through the plugin interface, the RTL's cycles per byte (and the
# simulation's speed), and its synthesis estimate.
bench-accel: deps-bench
	$(MAKE) all $(B)/bin/accel_bench $(if $(FPGA_SKIP),,$(B)/bin/simhash_tb)
	$(B)/bin/accel_bench -d $(TEST_DATA)
ifeq ($(FPGA_SKIP),)
	$(B)/bin/simhash_tb -p -r 0 -d $(TEST_DATA)
else
	@echo "skipping the RTL cycle count: $(FPGA_SKIP)"
endif
ifeq ($(YOSYS_SKIP),)
	daemon/accel/fpga/synth.sh -e 1
else
	@echo "skipping the RTL synthesis estimate: $(YOSYS_SKIP)"
endif

# make check (so make test) also runs, in the release variant, the RTL's
# test bench (on the configuration in use, then on a small one of another
# shape: 2 engines of 3 cores, 16-bit counters) and its synthesis check, or
# says why not.
FPGA_CONFIG2 := e2-c3-w16
check: check-accel-hw
ifeq ($(VARIANT),release)
check-accel-hw: $(if $(FPGA_SKIP),,$(B)/bin/simhash_tb)
ifeq ($(FPGA_SKIP),)
	$(B)/bin/simhash_tb -d $(TEST_DATA)
	$(MAKE) FPGA_ENGINES=2 FPGA_CORES=3 FPGA_COUNTER_W=16 \
		$(B)/fpga/$(FPGA_CONFIG2)/simhash_tb
	$(B)/fpga/$(FPGA_CONFIG2)/simhash_tb -d $(TEST_DATA) -n 1000 -r 500
else
	@echo "skipping the RTL test bench: $(FPGA_SKIP)"
endif
ifeq ($(YOSYS_SKIP),)
	daemon/accel/fpga/synth.sh
	! daemon/accel/fpga/synth.sh -g -t latch_example \
		tests/fpga/latch_example.v 2>/dev/null
	@echo "synth.sh: refuses a design with a latch, as it should"
else
	@echo "skipping the RTL synthesis check: $(YOSYS_SKIP)"
endif
else
check-accel-hw:
	@echo "the RTL test bench and synthesis check run in the release variant"
endif

FORCE:
# ----------------------------------------------------------------------------

-include $(shell find build/$(VARIANT) -name '*.d' 2>/dev/null)
