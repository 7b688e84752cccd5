/*
 * Cross-backend tests: every backend that was built gives the naive
 * reference's bits on one shared corpus, through the real plugin ABI (the
 * plugins are loaded with dlopen by accel_new, as the daemon does): cpu,
 * and the plugins make builds into build/VARIANT/accel, opencl (on
 * whatever OpenCL device is there; PoCL's CPU device in CI) and fpga-sim
 * (the Verilator model of the RTL).  A plugin that was not built, or that
 * finds no device, is skipped with the reason printed: never passed.
 *
 * The corpus: Reuters-21578 bodies (plain text), the first 100 L3S-GN1 pages (HTML), and
 * documents in the accelerator format with the awkward cases (empty ones,
 * runs of spaces, NUL and high bytes, long terms, a document of 2 MB), in
 * both term-hash modes.  Then the bad-input paths: documents longer than
 * the OpenCL plugin's device buffer (split, or computed on the host), and
 * batches that fail on the device, redone on cpu; and the OpenCL plugin
 * loading a program binary instead of building its source.
 */
#include <check.h>
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "accel.h"
#include "accelcheck.h"
#include "corpus.h"
#include "log.h"
#include "simhash.h"
#include "simhash_ref.h"
#include "stopwords.h"
#include "testutil.h"

static const char *const backends[] = { "cpu", "opencl", "fpga-sim" };

static struct stopwords *sw;
static struct ref_stopwords *ref_sw;
static struct corpus *reuters, *pages, *prep;
static char plugin_dir[4096];

/* Documents in the accelerator format, awkward ones first. */
static struct corpus *
make_prep(void)
{
	static const char *fixed[] = {
		"", " ", "        ", "a", " a ", "a  b", "abcdefgh",
		"abcdefghi j", "school school students teachers",
		"the cat sat on the mat",
	};
	struct corpus *c = calloc(1, sizeof(*c));
	uint64_t seed = 42;
	size_t i, k, n = sizeof(fixed) / sizeof(fixed[0]) + 205;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(c->docs = calloc(n, sizeof(*c->docs)));
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		c->docs[c->n].data = strdup(fixed[i]);
		c->docs[c->n++].len = strlen(fixed[i]);
	}
	/* Every byte but SPACE is a term byte: NUL and 0xff included. */
	c->docs[c->n].data = malloc(300);
	for (k = 0; k < 300; k++)
		c->docs[c->n].data[k] = (char)(k % 7 == 3 ? ' ' : k);
	c->docs[c->n++].len = 300;
	/* Long terms: 5000 bytes, and 70 bytes among short ones. */
	c->docs[c->n].data = malloc(5000);
	memset(c->docs[c->n].data, 'x', 5000);
	c->docs[c->n++].len = 5000;
	c->docs[c->n].data = malloc(3000);
	for (k = 0; k < 3000; k++)
		c->docs[c->n].data[k] = (char)(k % 100 < 70 ? 'q' :
		    k % 3 == 0 ? ' ' : 'a' + (char)(k % 26));
	c->docs[c->n++].len = 3000;
	/* One document of 2 MB of random words. */
	c->docs[c->n].data = malloc(2 << 20);
	for (k = 0; k < (2 << 20); k++)
		c->docs[c->n].data[k] = tu_rand(&seed) % 6 == 0 ? ' ' :
		    (char)('a' + tu_rand(&seed) % 8);
	c->docs[c->n++].len = 2 << 20;
	/* Random documents of 0 to 3000 bytes. */
	while (c->n < n) {
		size_t len = (size_t)tu_rand_below(&seed, 3000);
		char *d = malloc(len + 1);

		for (k = 0; k < len; k++) {
			uint64_t r = tu_rand(&seed);

			d[k] = r % 5 == 0 ? ' ' : r % 97 == 0 ?
			    (char)(r >> 40) : (char)('a' + (r >> 8) % 26);
		}
		c->docs[c->n].data = d;
		c->docs[c->n++].len = len;
	}
	for (i = 0; i < c->n; i++)
		c->bytes += c->docs[i].len;
	return c;
}

static void
setup(void)
{
	char *path = tu_source_path("conf/stopwords.txt"), *cause = NULL;
	char exe[4096];
	ssize_t n;

	log_init(LOG_LEVEL_ERROR, "unit-tests");
	sw = stopwords_load(path, &cause);
	ck_assert_msg(sw != NULL, "%s", cause);
	free(path);
	ref_sw = ref_stopwords_new(stopwords_list(sw));
	path = tu_data_path("text_corpora/reuters21578");
	ck_assert_ptr_nonnull(reuters = corpus_reuters(path, 800));
	free(path);
	path = tu_data_path("text_corpora/l3s_gn1_html/original");
	ck_assert_ptr_nonnull(pages = corpus_files(path, ".html"));
	free(path);
	/* The first pages are enough (the simulation is slow). */
	while (pages->n > 100) {
		pages->n--;
		pages->bytes -= pages->docs[pages->n].len;
		free(pages->docs[pages->n].data);
	}
	prep = make_prep();
	/* make puts the plugins next to bin/: ../accel. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	snprintf(plugin_dir, sizeof(plugin_dir), "%s/../accel",
	    dirname(exe));
}

static void
teardown(void)
{
	corpus_free(prep);
	corpus_free(pages);
	corpus_free(reuters);
	ref_stopwords_free(ref_sw);
	stopwords_free(sw);
}

static void
host_log(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	(void)msg;
}

/*
 * Whether backend name can run here; if not, why, in why.  For a plugin,
 * its table is checked through dlopen as nddd reads it: its name, and the
 * simulation flag that fpga-sim (and only it) must carry.
 */
static int
backend_runs(const char *name, char *why, size_t whylen)
{
	struct accel_host host = { NULL, NULL, host_log };
	struct accel_config cfg = { ACCEL_ABI_VERSION, 0, 1, 64, "", NULL,
	    &host };
	const struct accel_backend *be;
	char path[4200], msg[256] = "";
	void *dl;
	int rc;

	if (strcmp(name, "cpu") == 0)
		return 1;
	snprintf(path, sizeof(path), "%s/%s%s%s", plugin_dir,
	    ACCEL_PLUGIN_PREFIX, name, ACCEL_PLUGIN_SUFFIX);
	if (access(path, F_OK) != 0) {
		snprintf(why, whylen, "%.400s was not built (make says why)",
		    path);
		return 0;
	}
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(dl != NULL, "%s", dlerror());
	be = dlsym(dl, ACCEL_ENTRY);
	ck_assert_ptr_nonnull(be);
	ck_assert_uint_eq(be->abi_version, ACCEL_ABI_VERSION);
	ck_assert_str_eq(be->name, name);
	if (strcmp(name, "fpga-sim") == 0) {
		ck_assert(be->flags & ACCEL_F_SIMULATION);
		ck_assert_ptr_nonnull(strstr(be->description, "simulation"));
	} else
		ck_assert(!(be->flags & ACCEL_F_SIMULATION));
	rc = be->probe(&cfg, msg, sizeof(msg));
	if (strcmp(name, "fpga-sim") == 0)
		ck_assert_ptr_nonnull(strstr(msg, "a simulation"));
	dlclose(dl);
	if (rc == ACCEL_PROBE_ABSENT) {
		snprintf(why, whylen, "%s", msg);
		return 0;
	}
	return 1;
}

/* Fingerprints c through acc in jobs of per_job; checks every document. */
static void
check_corpus(struct accel *acc, struct event_base *base, struct corpus *c,
    size_t per_job, enum simhash_input in, int paper)
{
	accelcheck_corpus(acc, base, c, c->n, per_job, in, paper, ref_sw, 300);
}

static struct accel *
start(struct event_base *base, const char *name, const char *params,
    unsigned batch_docs, unsigned max_failures, enum simhash_term_hash th)
{
	struct accel_options o;
	struct accel_stats st;
	struct accel *acc;
	char *cause = NULL;

	accel_options_defaults(&o);
	snprintf(o.accelerator, sizeof(o.accelerator), "%s", name);
	snprintf(o.plugin_dir, sizeof(o.plugin_dir), "%s", plugin_dir);
	snprintf(o.params, sizeof(o.params), "%s", params);
	o.threads = 2;
	if (batch_docs > 0)
		o.batch_docs = batch_docs;
	if (max_failures > 0)
		o.max_failures = max_failures;
	acc = accel_new(base, &o, th, sw, &cause);
	ck_assert_msg(acc != NULL, "%s", cause);
	accel_stats(acc, &st);
	ck_assert_msg(strcmp(st.backend, name) == 0, "%s did not start: %s",
	    name, st.fallback);
	ck_assert_int_eq(st.simulation, strcmp(name, "fpga-sim") == 0);
	return acc;
}

START_TEST(test_reference)
{
	const char *name = backends[_i];
	struct event_base *base;
	struct accel_stats st;
	struct accel *acc;
	char why[512];
	int paper;

	if (!backend_runs(name, why, sizeof(why))) {
		printf("accel_backends: skipping %s: %s\n", name, why);
		return;
	}
	base = event_base_new();
	for (paper = 0; paper <= 1; paper++) {
		acc = start(base, name, "", 128, 0, paper ?
		    SIMHASH_TERM_HASH_SDBM : SIMHASH_TERM_HASH_SDBM_FMIX64);
		check_corpus(acc, base, reuters, 300, SIMHASH_INPUT_TEXT,
		    paper);
		check_corpus(acc, base, pages, 25, SIMHASH_INPUT_HTML, paper);
		check_corpus(acc, base, prep, 100, SIMHASH_INPUT_PREPROCESSED,
		    paper);
		accel_stats(acc, &st);
		ck_assert_str_eq(st.backend, name);
		ck_assert_uint_eq(st.batches_failed, 0);
		if (strcmp(name, "cpu") != 0)
			ck_assert_uint_eq(st.batches_cpu, 0);
		accel_free(acc);
	}
	event_base_free(base);
	printf("accel_backends: %s gives the reference's bits (%zu "
	    "documents, both term hashes)\n", name, reuters->n + pages->n +
	    prep->n);
}
END_TEST

/* A plugin's batch that fails on its device is redone on cpu. */
static void
check_failed_batch(const char *name)
{
	struct event_base *base;
	struct accel_stats st;
	struct accel *acc;
	char why[512];

	if (!backend_runs(name, why, sizeof(why))) {
		printf("accel_backends: skipping %s: %s\n", name, why);
		return;
	}
	base = event_base_new();
	acc = start(base, name, "fail_batch=3", 64, 100,
	    SIMHASH_TERM_HASH_SDBM_FMIX64);
	check_corpus(acc, base, reuters, 800, SIMHASH_INPUT_TEXT, 0);
	accel_stats(acc, &st);
	ck_assert_str_eq(st.backend, name);
	ck_assert_int_eq(st.dropped, 0);
	ck_assert_uint_eq(st.batches, 13);
	ck_assert_uint_eq(st.batches_failed, 1);
	ck_assert_uint_eq(st.batches_cpu, 1);
	accel_free(acc);
	event_base_free(base);
}

START_TEST(test_failed_batch)
{
	check_failed_batch(backends[1 + _i]);
}
END_TEST

/*
 * Documents longer than the OpenCL plugin's device buffer: cut at spaces
 * into parts across transfers, or, with a term longer than the buffer,
 * computed on the host; the same bits either way.
 */
START_TEST(test_opencl_small_buffer)
{
	static const char *const params[] = {
		"buffer=64", "buffer=1000 local=4", "buffer=4k local=16",
	};
	struct event_base *base;
	struct accel_stats st;
	struct accel *acc;
	char why[512];
	size_t i;

	if (!backend_runs("opencl", why, sizeof(why))) {
		printf("accel_backends: skipping opencl: %s\n", why);
		return;
	}
	base = event_base_new();
	for (i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		acc = start(base, "opencl", params[i], 50, 0,
		    i % 2 ? SIMHASH_TERM_HASH_SDBM :
		    SIMHASH_TERM_HASH_SDBM_FMIX64);
		check_corpus(acc, base, prep, 40, SIMHASH_INPUT_PREPROCESSED,
		    i % 2);
		check_corpus(acc, base, reuters, 400, SIMHASH_INPUT_TEXT,
		    i % 2);
		accel_stats(acc, &st);
		ck_assert_uint_eq(st.batches_failed, 0);
		accel_free(acc);
	}
	event_base_free(base);
}
END_TEST

/*
 * A program binary, as an offline compiler makes one (here: the one the
 * plugin built, saved), loaded instead of the source.
 */
START_TEST(test_opencl_binary)
{
	struct event_base *base;
	struct accel_options o;
	struct accel_stats st;
	struct accel *acc;
	char *dir, params[256], why[512], *cause = NULL;

	if (!backend_runs("opencl", why, sizeof(why))) {
		printf("accel_backends: skipping opencl: %s\n", why);
		return;
	}
	base = event_base_new();
	dir = tu_tmpdir();
	snprintf(params, sizeof(params), "save_binary=%s/simhash.bin", dir);
	acc = start(base, "opencl", params, 0, 0,
	    SIMHASH_TERM_HASH_SDBM_FMIX64);
	check_corpus(acc, base, pages, 50, SIMHASH_INPUT_HTML, 0);
	accel_free(acc);
	snprintf(params, sizeof(params), "binary=%s/simhash.bin", dir);
	acc = start(base, "opencl", params, 0, 0, SIMHASH_TERM_HASH_SDBM);
	check_corpus(acc, base, reuters, 400, SIMHASH_INPUT_TEXT, 1);
	accel_free(acc);
	/* No such binary: cpu, saying why. */
	accel_options_defaults(&o);
	snprintf(o.accelerator, sizeof(o.accelerator), "opencl");
	snprintf(o.plugin_dir, sizeof(o.plugin_dir), "%s", plugin_dir);
	snprintf(o.params, sizeof(o.params), "binary=%s/none.bin", dir);
	ck_assert_ptr_nonnull(acc = accel_new(base, &o,
	    SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &cause));
	accel_stats(acc, &st);
	ck_assert_str_eq(st.backend, "cpu");
	ck_assert_ptr_nonnull(strstr(st.fallback, "cannot read it"));
	accel_free(acc);
	tu_rmtree(dir);
	free(dir);
	event_base_free(base);
}
END_TEST

/* Simulations and CPU devices are never chosen by "auto". */
START_TEST(test_auto)
{
	struct event_base *base = event_base_new();
	struct accel_options o;
	struct accel *acc;
	char *cause = NULL, why[512];

	accel_options_defaults(&o);
	snprintf(o.plugin_dir, sizeof(o.plugin_dir), "%s", plugin_dir);
	ck_assert_ptr_nonnull(acc = accel_new(base, &o,
	    SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &cause));
	if (strcmp(accel_backend_name(acc), "cpu") != 0) {
		/* Only an OpenCL GPU or accelerator may be taken. */
		ck_assert_str_eq(accel_backend_name(acc), "opencl");
		ck_assert(backend_runs("opencl", why, sizeof(why)));
	}
	check_corpus(acc, base, reuters, 800, SIMHASH_INPUT_TEXT, 0);
	accel_free(acc);
	event_base_free(base);
}
END_TEST

Suite *accel_backends_suite(void);

Suite *
accel_backends_suite(void)
{
	Suite *s = suite_create("accel_backends");
	TCase *tc = tcase_create("accel_backends");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_reference, 0, 3);
	tcase_add_loop_test(tc, test_failed_batch, 0, 2);
	tcase_add_test(tc, test_opencl_small_buffer);
	tcase_add_test(tc, test_opencl_binary);
	tcase_add_test(tc, test_auto);
	suite_add_tcase(s, tc);
	return s;
}
