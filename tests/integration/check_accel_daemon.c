/*
 * The daemon on each accelerator plugin that was built (OpenCL on PoCL's
 * CPU device, the RTL's Verilator model): documents submitted over the
 * protocol get exactly the fingerprints the reference engine computes, and
 * stats name the backend (and say "simulation" for fpga-sim).  A plugin
 * that was not built is skipped with its reason.  A plugin file that
 * others may write keeps the daemon from starting when it is the one
 * configured, and is passed over by "auto".
 */
#include <sys/stat.h>

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel.h"
#include "corpus.h"
#include "harness.h"
#include "simhash.h"
#include "stopwords.h"
#include "testutil.h"

static void
run_backend(const char *name, int simulation)
{
	const char *dir = getenv("NDDD_ACCEL_DIR");
	char *so, conf[1024], *path, *cause = NULL, url[64];
	struct corpus *co;
	struct stopwords *sw;
	struct simhash *sh;
	struct simhash_scratch *sc;
	struct nddd_stats st;
	struct harness h;
	nddd_client *c;
	size_t n;

	ck_assert_int_ne(asprintf(&so, "%s/%s%s%s", dir ? dir : "",
	    ACCEL_PLUGIN_PREFIX, name, ACCEL_PLUGIN_SUFFIX), -1);
	if (dir == NULL || access(so, R_OK) != 0) {
		printf("accel %s: SKIPPED: %s was not built (its toolchain is "
		    "missing; make says why)\n", name, so);
		free(so);
		return;
	}
	free(so);
	path = tu_source_path("conf/stopwords.txt");
	ck_assert_ptr_nonnull(sw = stopwords_load(path, &cause));
	snprintf(conf, sizeof(conf), "[simhash]\nstopwords = %s\n[accel]\n"
	    "accelerator = %s\nplugin_dir = %s\n", path, name, dir);
	free(path);
	ck_assert_ptr_nonnull(sh = simhash_new(SIMHASH_TERM_HASH_SDBM_FMIX64,
	    sw, &cause));
	ck_assert_ptr_nonnull(sc = simhash_scratch_new());
	path = tu_data_path("text_corpora/reuters21578");
	co = corpus_reuters(path, 0);
	free(path);
	ck_assert_ptr_nonnull(co);
	/* The simulation is slow: a slice of the corpus. */
	n = simulation ? 300 : 2000;
	harness_init(&h, conf);
	harness_start(&h);
	c = harness_client(&h);
	for (size_t i = 0; i < n; i++) {
		struct nddd_reply *r;
		uint64_t id, want = 0;
		enum simhash_status s = simhash_compute(sh, sc,
		    SIMHASH_INPUT_TEXT, co->docs[i].data, co->docs[i].len,
		    &want);

		snprintf(url, sizeof(url), "http://accel.example/%zu", i);
		ck_assert_int_eq(nddd_send_doc_submit(c, url, strlen(url),
		    co->docs[i].data, co->docs[i].len, NDDD_TEXT, 0, &id), 0);
		r = nddd_call(c, id);
		ck_assert_ptr_nonnull(r);
		if (s == SIMHASH_EMPTY_DOCUMENT)
			ck_assert_int_eq(r->code, NDDD_EMPTY_DOCUMENT);
		else
			ck_assert_msg(r->kind == NDDD_REPLY_DOC &&
			    r->doc.simhash == want, "%s: document %zu: %016llx, "
			    "want %016llx", name, i,
			    (unsigned long long)r->doc.simhash,
			    (unsigned long long)want);
		nddd_reply_free(r);
	}
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_str_eq(st.accel_backend, name);
	ck_assert_int_eq(st.accel_simulation, simulation);
	ck_assert_uint_eq(st.accel_batches_failed, 0);
	ck_assert_uint_ge(st.accel_docs, n);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	corpus_free(co);
	simhash_scratch_free(sc);
	simhash_free(sh);
	stopwords_free(sw);
}

START_TEST(test_opencl)
{
	run_backend("opencl", 0);
}
END_TEST

START_TEST(test_fpga_sim)
{
	run_backend("fpga-sim", 1);
}
END_TEST

/* The configured plugin is group-writable: nddd says so and stops. */
START_TEST(test_unsafe_plugin_refused)
{
	struct harness h;
	struct nddd_stats st;
	nddd_client *c;
	char *dir, *out = NULL, conf[4600], path[4400];

	harness_init(&h, NULL);
	dir = harness_plugin_dir(&h, "test", "test", 0775);
	snprintf(conf, sizeof(conf), "[simhash]\nstopwords = none\n"
	    "[accel]\naccelerator = test\nplugin_dir = %s\n", dir);
	harness_add_conf(&h, conf);
	ck_assert_int_eq(harness_start_failing(&h, &out), 1);
	ck_assert_msg(out != NULL && strstr(out, "refusing to load the plugin "
	    "\"test\"") != NULL && strstr(out, "nddd-accel-test.so is "
	    "writable by its group (mode 0775)") != NULL,
	    "the daemon's output does not say why: %s", out ? out : "");
	free(out);
	/* Made safe, it is loaded. */
	snprintf(path, sizeof(path), "%s/nddd-accel-test.so", dir);
	ck_assert_int_eq(chmod(path, 0755), 0);
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_str_eq(st.accel_backend, "test");
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	free(dir);
}
END_TEST

/*
 * auto passes over a world-writable plugin directory and runs on cpu; a
 * device plugin in a proper one is taken.
 */
START_TEST(test_auto_unsafe_dir)
{
	struct harness h;
	struct nddd_stats st;
	nddd_client *c;
	char *dir, conf[4600], *log;

	harness_init(&h, NULL);
	dir = harness_plugin_dir(&h, "testdev", "testdev", 0755);
	snprintf(conf, sizeof(conf), "[simhash]\nstopwords = none\n"
	    "[accel]\naccelerator = auto\nplugin_dir = %s\n", dir);
	harness_add_conf(&h, conf);
	ck_assert_int_eq(chmod(dir, 0777), 0);
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_str_eq(st.accel_backend, "cpu");
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	log = tu_read_file(h.log_path, NULL);
	ck_assert_msg(log != NULL && strstr(log, "refusing the plugin "
	    "directory") != NULL && strstr(log, "is writable by others "
	    "(mode 0777)") != NULL, "the log does not say why: %s",
	    log ? log : "");
	free(log);
	ck_assert_int_eq(chmod(dir, 0755), 0);
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_str_eq(st.accel_backend, "testdev");
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	free(dir);
}
END_TEST

Suite *accel_daemon_suite(void);

Suite *
accel_daemon_suite(void)
{
	Suite *s = suite_create("accel_daemon");
	TCase *tc = tcase_create("accel_daemon");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_opencl);
	tcase_add_test(tc, test_fpga_sim);
	tcase_add_test(tc, test_unsafe_plugin_refused);
	tcase_add_test(tc, test_auto_unsafe_dir);
	suite_add_tcase(s, tc);
	return s;
}
