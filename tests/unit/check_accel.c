/*
 * Unit tests for accel: jobs through the event loop on the cpu backend
 * with any number of threads, and on test plugins loaded with dlopen
 * (tests/plugins, built into build/VARIANT/plugins): a plugin of another
 * ABI version, one without the entry symbol, one without its device, one
 * whose init fails, and ones that fail or refuse batches, whose documents
 * the host redoes on cpu.  Every fingerprint is checked against the naive
 * reference.  Plugin files that others could have written, symbolic links
 * and files not named as plugins are not loaded.
 */
#include <sys/stat.h>

#include <check.h>
#include <fcntl.h>
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

static struct stopwords *sw;
static struct ref_stopwords *ref_sw;
static struct corpus *reuters, *pages, *randoms;
static char plugin_dir[4096];

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
	ck_assert_ptr_nonnull(reuters = corpus_reuters(path, 1200));
	free(path);
	path = tu_data_path("text_corpora/l3s_gn1_html/original");
	ck_assert_ptr_nonnull(pages = corpus_files(path, ".html"));
	free(path);
	/* Random documents: words, junk, long terms, separators. */
	{
		static const char *const bits[] = { "the ", "Cocoa ", "1987",
		    ",", " ", "  ", "\t", "caf\xc3\xa9 ", "<p>", "&amp;",
		    "internationalisation ", "x", "\0", "\xff", "-" };
		uint64_t seed = 7;
		size_t i, k, nb;

		ck_assert_ptr_nonnull(randoms = calloc(1, sizeof(*randoms)));
		randoms->n = 500;
		randoms->docs = calloc(randoms->n, sizeof(*randoms->docs));
		for (i = 0; i < randoms->n; i++) {
			struct corpus_doc *d = &randoms->docs[i];

			nb = (size_t)tu_rand_below(&seed, 400);
			d->data = malloc(nb * 21 + 1);
			for (k = 0; k < nb; k++) {
				const char *b = bits[tu_rand_below(&seed,
				    sizeof(bits) / sizeof(bits[0]))];
				size_t bl = b[0] == '\0' ? 1 : strlen(b);

				memcpy(d->data + d->len, b, bl);
				d->len += bl;
			}
			randoms->bytes += d->len;
		}
	}
	/* The plugins are built next to this program: ../plugins. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	snprintf(plugin_dir, sizeof(plugin_dir), "%s/../plugins",
	    dirname(exe));
}

static void
teardown(void)
{
	corpus_free(randoms);
	corpus_free(pages);
	corpus_free(reuters);
	ref_stopwords_free(ref_sw);
	stopwords_free(sw);
}

/* Checks the first ndocs documents of c through acc, in jobs of per_job. */
static void
check_jobs(struct accel *acc, struct event_base *base, struct corpus *c,
    size_t ndocs, size_t per_job, enum simhash_input in, int paper)
{
	accelcheck_corpus(acc, base, c, ndocs, per_job, in, paper, ref_sw, 120);
}

static struct accel *
start(struct event_base *base, const char *name, const char *params,
    unsigned threads, unsigned batch_docs, unsigned max_failures,
    enum simhash_term_hash th)
{
	struct accel_options o;
	struct accel *acc;
	char *cause = NULL;

	accel_options_defaults(&o);
	snprintf(o.accelerator, sizeof(o.accelerator), "%s", name);
	snprintf(o.plugin_dir, sizeof(o.plugin_dir), "%s", plugin_dir);
	snprintf(o.params, sizeof(o.params), "%s", params);
	o.threads = threads;
	if (batch_docs > 0)
		o.batch_docs = batch_docs;
	if (max_failures > 0)
		o.max_failures = max_failures;
	acc = accel_new(base, &o, th, sw, &cause);
	ck_assert_msg(acc != NULL, "%s", cause);
	return acc;
}

START_TEST(test_cpu_threads)
{
	static const unsigned threads[] = { 1, 2, 3, 8 };
	struct event_base *base = event_base_new();
	struct accel_stats st;
	struct accel *acc;

	acc = start(base, "cpu", "", threads[_i], 50, 0,
	    SIMHASH_TERM_HASH_SDBM_FMIX64);
	ck_assert_str_eq(accel_backend_name(acc), "cpu");
	check_jobs(acc, base, reuters, 1200, 300, SIMHASH_INPUT_TEXT, 0);
	check_jobs(acc, base, reuters, 1200, 1, SIMHASH_INPUT_TEXT, 0);
	check_jobs(acc, base, pages, 40, 7, SIMHASH_INPUT_HTML, 0);
	check_jobs(acc, base, randoms, 500, 100, SIMHASH_INPUT_TEXT, 0);
	check_jobs(acc, base, randoms, 500, 500, SIMHASH_INPUT_HTML, 0);
	accel_stats(acc, &st);
	ck_assert_str_eq(st.backend, "cpu");
	ck_assert_uint_eq(st.docs, 1200 + 1200 + 40 + 500 + 500);
	ck_assert_uint_eq(st.batches_failed, 0);
	accel_free(acc);
	acc = start(base, "cpu", "", threads[_i], 0, 0, SIMHASH_TERM_HASH_SDBM);
	check_jobs(acc, base, reuters, 600, 600, SIMHASH_INPUT_TEXT, 1);
	accel_free(acc);
	event_base_free(base);
}
END_TEST

START_TEST(test_empty_job)
{
	struct event_base *base = event_base_new();
	struct accel *acc = start(base, "cpu", "", 2, 0, 0,
	    SIMHASH_TERM_HASH_SDBM_FMIX64);
	struct accel_job *job = accel_job_new(0, SIMHASH_INPUT_TEXT);
	struct accel_job *job2 = accel_job_new(2, SIMHASH_INPUT_TEXT);
	struct accelcheck_run r = { base, 2 };
	uint64_t fp;

	accel_job_set(job2, 0, "", 0);
	accel_job_set(job2, 1, "the", 3);
	ck_assert_int_eq(accel_submit(acc, job, accelcheck_job_done, &r), 0);
	ck_assert_int_eq(accel_submit(acc, job2, accelcheck_job_done, &r), 0);
	event_base_dispatch(base);
	ck_assert_uint_eq(r.pending, 0);
	ck_assert_int_eq(accel_job_result(job2, 0, &fp),
	    SIMHASH_EMPTY_DOCUMENT);
	ck_assert_int_eq(accel_job_result(job2, 1, &fp),
	    SIMHASH_EMPTY_DOCUMENT);
	accel_job_free(job);
	accel_job_free(job2);
	accel_free(acc);
	event_base_free(base);
}
END_TEST

START_TEST(test_plugin)
{
	struct event_base *base = event_base_new();
	struct accel_stats st;
	struct accel *acc;

	acc = start(base, "test", "", 2, 64, 0, SIMHASH_TERM_HASH_SDBM_FMIX64);
	accel_stats(acc, &st);
	ck_assert_str_eq(st.backend, "test");
	ck_assert_int_eq(st.simulation, 1);
	ck_assert_str_eq(st.fallback, "");
	/* The plugin takes preprocessed text: the host preprocesses. */
	check_jobs(acc, base, reuters, 1200, 500, SIMHASH_INPUT_TEXT, 0);
	check_jobs(acc, base, randoms, 500, 250, SIMHASH_INPUT_TEXT, 0);
	check_jobs(acc, base, pages, 30, 30, SIMHASH_INPUT_HTML, 0);
	accel_stats(acc, &st);
	ck_assert_uint_eq(st.batches_failed, 0);
	ck_assert_uint_eq(st.batches_cpu, 0);
	accel_free(acc);
	acc = start(base, "test", "", 2, 64, 0, SIMHASH_TERM_HASH_SDBM);
	check_jobs(acc, base, reuters, 300, 300, SIMHASH_INPUT_TEXT, 1);
	accel_free(acc);
	event_base_free(base);
}
END_TEST

/* A backend that cannot start: cpu does the work, the reason is kept. */
static void
check_fallback(const char *name, const char *params, const char *why)
{
	struct event_base *base = event_base_new();
	struct accel_stats st;
	struct accel *acc;

	acc = start(base, name, params, 2, 0, 0,
	    SIMHASH_TERM_HASH_SDBM_FMIX64);
	accel_stats(acc, &st);
	ck_assert_str_eq(st.backend, "cpu");
	ck_assert_msg(strstr(st.fallback, why) != NULL,
	    "%s: fallback reason \"%s\" lacks \"%s\"", name, st.fallback, why);
	check_jobs(acc, base, reuters, 100, 100, SIMHASH_INPUT_TEXT, 0);
	accel_free(acc);
	event_base_free(base);
}

START_TEST(test_fallbacks)
{
	check_fallback("badabi", "", "built for accelerator ABI version 2, "
	    "this nddd speaks version 1");
	check_fallback("nosym", "", "no symbol nddd_accel_backend");
	check_fallback("nosuch", "", "nddd-accel-nosuch.so: No such file");
	check_fallback("test", "probe=absent", "no test device "
	    "(/dev/nddd-test0 is missing)");
	check_fallback("test", "init=fail", "init failed: test init failure");
	check_fallback("../test", "", "is not a backend name");
}
END_TEST

START_TEST(test_failed_batches)
{
	struct event_base *base = event_base_new();
	struct accel_stats st;
	struct accel *acc;

	/* Every second batch fails half-way: redone on cpu, same bits. */
	acc = start(base, "test", "fail_every=2", 2, 50, 1000,
	    SIMHASH_TERM_HASH_SDBM_FMIX64);
	check_jobs(acc, base, reuters, 1200, 400, SIMHASH_INPUT_TEXT, 0);
	accel_stats(acc, &st);
	ck_assert_str_eq(st.backend, "test");
	ck_assert_uint_eq(st.batches, 24);
	ck_assert_uint_eq(st.batches_failed, 12);
	ck_assert_uint_eq(st.batches_cpu, 12);
	accel_free(acc);
	/* Every third refused: the same. */
	acc = start(base, "test", "reject_every=3", 2, 50, 1000,
	    SIMHASH_TERM_HASH_SDBM_FMIX64);
	check_jobs(acc, base, reuters, 1200, 1200, SIMHASH_INPUT_TEXT, 0);
	accel_stats(acc, &st);
	ck_assert_uint_eq(st.batches_failed, 8);
	accel_free(acc);
	/* Always failing: dropped for cpu after 3 in a row. */
	acc = start(base, "test", "fail_every=1", 2, 100, 3,
	    SIMHASH_TERM_HASH_SDBM_FMIX64);
	check_jobs(acc, base, reuters, 300, 100, SIMHASH_INPUT_TEXT, 0);
	check_jobs(acc, base, reuters, 1200, 100, SIMHASH_INPUT_TEXT, 0);
	accel_stats(acc, &st);
	ck_assert_int_eq(st.dropped, 1);
	ck_assert_str_eq(st.backend, "cpu");
	ck_assert_uint_eq(st.batches_failed, 3);
	accel_free(acc);
	event_base_free(base);
}
END_TEST

START_TEST(test_auto)
{
	struct event_base *base = event_base_new();
	struct accel *acc;

	/* testdev finds its device; the simulation is never picked. */
	acc = start(base, "auto", "", 2, 100, 0, SIMHASH_TERM_HASH_SDBM_FMIX64);
	ck_assert_str_eq(accel_backend_name(acc), "testdev");
	/* It preprocesses plain text itself; HTML the host does for it. */
	check_jobs(acc, base, reuters, 1200, 600, SIMHASH_INPUT_TEXT, 0);
	check_jobs(acc, base, randoms, 500, 500, SIMHASH_INPUT_TEXT, 0);
	check_jobs(acc, base, pages, 20, 20, SIMHASH_INPUT_HTML, 0);
	accel_free(acc);
	/* Without a device, auto is cpu. */
	acc = start(base, "auto", "probe=absent", 2, 0, 0,
	    SIMHASH_TERM_HASH_SDBM_FMIX64);
	ck_assert_str_eq(accel_backend_name(acc), "cpu");
	accel_free(acc);
	acc = start(base, "auto", "probe=usable", 2, 0, 0,
	    SIMHASH_TERM_HASH_SDBM_FMIX64);
	ck_assert_str_eq(accel_backend_name(acc), "cpu");
	accel_free(acc);
	event_base_free(base);
}
END_TEST

/* Copies the test plugin from into dir as file, with mode. */
static void
plugin_copy(const char *dir, const char *from, const char *file, mode_t mode)
{
	char src[4200], dst[4200];

	snprintf(src, sizeof(src), "%s/nddd-accel-%s.so", plugin_dir, from);
	snprintf(dst, sizeof(dst), "%s/%s", dir, file);
	tu_copy_file(src, dst, mode);
}

/* Starts name from dir, expecting a refusal that says why. */
static void
check_refused(const char *dir, const char *name, const char *why)
{
	struct event_base *base = event_base_new();
	struct accel_options o;
	struct accel *acc;
	char *cause = NULL;

	accel_options_defaults(&o);
	snprintf(o.accelerator, sizeof(o.accelerator), "%s", name);
	snprintf(o.plugin_dir, sizeof(o.plugin_dir), "%s", dir);
	acc = accel_new(base, &o, SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &cause);
	ck_assert_msg(acc == NULL, "%s from %s was loaded; want refused (%s)",
	    name, dir, why);
	ck_assert_msg(cause != NULL && strstr(cause, why) != NULL,
	    "refusal \"%s\" lacks \"%s\"", cause ? cause : "", why);
	free(cause);
	event_base_free(base);
}

/* The backend auto picks from dir. */
static void
check_auto_picks(const char *dir, const char *want)
{
	struct event_base *base = event_base_new();
	struct accel_options o;
	struct accel *acc;
	char *cause = NULL;

	accel_options_defaults(&o);
	snprintf(o.plugin_dir, sizeof(o.plugin_dir), "%s", dir);
	acc = accel_new(base, &o, SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &cause);
	ck_assert_msg(acc != NULL, "%s", cause);
	ck_assert_str_eq(accel_backend_name(acc), want);
	if (strcmp(want, "cpu") != 0)
		check_jobs(acc, base, reuters, 100, 100, SIMHASH_INPUT_TEXT, 0);
	accel_free(acc);
	event_base_free(base);
}

/*
 * A plugin named by the configuration is loaded only from a file and a
 * directory that no one but root and this user may write, and not through
 * a symbolic link; otherwise nddd refuses to start, saying why.
 */
START_TEST(test_named_plugin_checks)
{
	char *dir = tu_tmpdir(), *dir2 = tu_tmpdir();
	char path[4200], target[4200];
	struct event_base *base = event_base_new();
	struct accel_options o;
	struct accel *acc;
	char *cause = NULL;

	/* A proper plugin: owned by this user, mode 0755. */
	ck_assert_int_eq(chmod(dir, 0755), 0);
	plugin_copy(dir, "test", "nddd-accel-test.so", 0755);
	accel_options_defaults(&o);
	snprintf(o.accelerator, sizeof(o.accelerator), "test");
	snprintf(o.plugin_dir, sizeof(o.plugin_dir), "%s", dir);
	acc = accel_new(base, &o, SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &cause);
	ck_assert_msg(acc != NULL, "%s", cause);
	ck_assert_str_eq(accel_backend_name(acc), "test");
	check_jobs(acc, base, reuters, 100, 100, SIMHASH_INPUT_TEXT, 0);
	accel_free(acc);
	/* Group- or world-writable files. */
	snprintf(path, sizeof(path), "%s/nddd-accel-test.so", dir);
	ck_assert_int_eq(chmod(path, 0775), 0);
	check_refused(dir, "test", "nddd-accel-test.so is writable by its "
	    "group (mode 0775)");
	ck_assert_int_eq(chmod(path, 0757), 0);
	check_refused(dir, "test", "is writable by others (mode 0757)");
	/* A world-writable directory, even with a proper file in it. */
	ck_assert_int_eq(chmod(path, 0755), 0);
	ck_assert_int_eq(chmod(dir, 0777), 0);
	check_refused(dir, "test", "is writable by others (mode 0777)");
	ck_assert_int_eq(chmod(dir, 01777), 0);
	check_refused(dir, "test", "is writable by others (mode 1777)");
	ck_assert_int_eq(chmod(dir, 0775), 0);
	check_refused(dir, "test", "is writable by its group (mode 0775)");
	ck_assert_int_eq(chmod(dir, 0755), 0);
	/* A symbolic link, even to a proper plugin. */
	ck_assert_int_eq(chmod(dir2, 0755), 0);
	snprintf(target, sizeof(target), "%s/nddd-accel-test.so", dir);
	snprintf(path, sizeof(path), "%s/nddd-accel-test.so", dir2);
	ck_assert_int_eq(symlink(target, path), 0);
	check_refused(dir2, "test", "is a symbolic link");
	/* Not a regular file. */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	check_refused(dir2, "test", "is not a regular file");
	/* Another user's file (only root can make one). */
	snprintf(path, sizeof(path), "%s/nddd-accel-test.so", dir);
	if (geteuid() == 0) {
		ck_assert_int_eq(chown(path, 65534, 65534), 0);
		check_refused(dir, "test", "is owned by uid 65534, neither "
		    "root nor this process's user");
		ck_assert_int_eq(chown(path, 0, 0), 0);
		ck_assert_int_eq(chown(dir, 65534, 65534), 0);
		check_refused(dir, "test", "is owned by uid 65534");
		ck_assert_int_eq(chown(dir, 0, 0), 0);
	}
	/* Still a proper plugin after all that. */
	acc = accel_new(base, &o, SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &cause);
	ck_assert_msg(acc != NULL, "%s", cause);
	ck_assert_str_eq(accel_backend_name(acc), "test");
	accel_free(acc);
	event_base_free(base);
	tu_rmtree(dir2);
	tu_rmtree(dir);
	free(dir2);
	free(dir);
}
END_TEST

/*
 * "auto" looks only at files named as plugins, and skips, without failing,
 * those that others could have written, and every plugin of a directory
 * that others may write.
 */
START_TEST(test_auto_plugin_checks)
{
	char *dir = tu_tmpdir(), path[4200];

	ck_assert_int_eq(chmod(dir, 0755), 0);
	/* Shared objects not named nddd-accel-NAME.so are left alone, even
	 * one with a device behind it. */
	plugin_copy(dir, "testdev", "testdev.so", 0755);
	plugin_copy(dir, "testdev", "libtestdev.so", 0755);
	plugin_copy(dir, "testdev", "nddd-accel-.so", 0755);
	check_auto_picks(dir, "cpu");
	/* The same file named as a plugin is taken. */
	plugin_copy(dir, "testdev", "nddd-accel-testdev.so", 0755);
	check_auto_picks(dir, "testdev");
	/* Group-writable: skipped. */
	snprintf(path, sizeof(path), "%s/nddd-accel-testdev.so", dir);
	ck_assert_int_eq(chmod(path, 0775), 0);
	check_auto_picks(dir, "cpu");
	/* A world-writable directory: nothing is loaded from it. */
	ck_assert_int_eq(chmod(path, 0755), 0);
	ck_assert_int_eq(chmod(dir, 0777), 0);
	check_auto_picks(dir, "cpu");
	ck_assert_int_eq(chmod(dir, 0755), 0);
	check_auto_picks(dir, "testdev");
	tu_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_free_delivers)
{
	struct event_base *base = event_base_new();
	struct accel *acc = start(base, "test", "", 2, 10, 0,
	    SIMHASH_TERM_HASH_SDBM_FMIX64);
	struct accel_job *job = accel_job_new(100, SIMHASH_INPUT_TEXT);
	struct accelcheck_run r = { base, 1 };
	size_t k;

	for (k = 0; k < 100; k++)
		accel_job_set(job, k, reuters->docs[k].data,
		    reuters->docs[k].len);
	ck_assert_int_eq(accel_submit(acc, job, accelcheck_job_done, &r), 0);
	/* Without running the loop: accel_free waits and delivers. */
	accel_free(acc);
	ck_assert_uint_eq(r.pending, 0);
	accel_job_free(job);
	event_base_free(base);
}
END_TEST

Suite *accel_suite(void);

Suite *
accel_suite(void)
{
	Suite *s = suite_create("accel");
	TCase *tc = tcase_create("accel");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_cpu_threads, 0, 4);
	tcase_add_test(tc, test_empty_job);
	tcase_add_test(tc, test_plugin);
	tcase_add_test(tc, test_fallbacks);
	tcase_add_test(tc, test_failed_batches);
	tcase_add_test(tc, test_auto);
	tcase_add_test(tc, test_named_plugin_checks);
	tcase_add_test(tc, test_auto_plugin_checks);
	tcase_add_test(tc, test_free_delivers);
	suite_add_tcase(s, tc);
	return s;
}
