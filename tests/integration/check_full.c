/*
 * A full store and a full disk: submits are refused with
 * RESOURCE_EXHAUSTED, nothing acknowledged is lost, the daemon keeps
 * answering checks (no crash, no SIGBUS), a restart on the full store
 * works, and once there is room again everything is there and consistent.
 *
 * The full disk is a tmpfs of a few megabytes, mounted for the test; where
 * mounting is not allowed (not root), that test says so and skips.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

#define BATCH 500
#define MAX_URLS 400000

struct fill {
	char *urls[MAX_URLS];
	size_t n;		/* sent */
	size_t acked;		/* the first acked were acknowledged */
};

/*
 * Submits batches of new URLs until one is refused whole; returns its
 * code.  The refused batch's URLs count as sent, not acknowledged.
 */
static enum nddd_code
fill_until_refused(nddd_client *c, struct fill *f, const char *tag)
{
	for (;;) {
		struct nddd_reply *r;
		enum nddd_code code;
		uint64_t id;

		ck_assert_msg(f->n + BATCH <= MAX_URLS, "never refused");
		for (size_t i = f->n; i < f->n + BATCH; i++)
			ck_assert_int_ne(asprintf(&f->urls[i],
			    "http://%s.example/fill/%zu", tag, i), -1);
		ck_assert_int_eq(nddd_send_urls(c, NDDD_URL_SUBMIT,
		    (const char *const *)f->urls + f->n, NULL, BATCH, &id), 0);
		f->n += BATCH;
		r = nddd_call(c, id);
		ck_assert_ptr_nonnull(r);
		if (r->kind == NDDD_REPLY_ERROR) {
			code = r->code;
			nddd_reply_free(r);
			return code;
		}
		ck_assert_int_eq(r->kind, NDDD_REPLY_URLS);
		for (size_t i = 0; i < r->nresults; i++)
			ck_assert_uint_eq(r->results[i].count, 1);
		nddd_reply_free(r);
		f->acked = f->n;
	}
}

/* Every acknowledged URL is stored, once. */
static void
assert_acked_present(nddd_client *c, const struct fill *f, const char *when)
{
	struct nddd_url_result *res = calloc(f->acked + 1, sizeof(*res));

	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK,
	    (const char *const *)f->urls, f->acked, res, BATCH, 4, NULL, NULL),
	    0);
	for (size_t i = 0; i < f->acked; i++)
		ck_assert_msg(res[i].count == 1, "%s: acknowledged %s has "
		    "count %llu", when, f->urls[i],
		    (unsigned long long)res[i].count);
	nddd_urls_results_free(res, f->acked);
	free(res);
}

static void
assert_consistent(nddd_client *c, const struct fill *f, const char *when)
{
	struct nddd_verify v;

	ck_assert_int_eq(nddd_verify(c, &v), 0);
	ck_assert_msg(v.consistent, "%s: %s", when, v.detail);
	ck_assert_uint_ge(v.urls, f->acked);
}

static void
free_fill(struct fill *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->urls[i]);
}

START_TEST(test_full_map)
{
	static struct fill f;
	struct harness h;
	nddd_client *c;
	char *log;

	memset(&f, 0, sizeof(f));
	harness_init(&h, "[server]\nmax_batch = 500\n[store]\nmap_size = 1M\n"
	    "[urls]\ncapacity = 100000\njournal_entries = 2000\n");
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_int_eq(fill_until_refused(c, &f, "map"),
	    NDDD_RESOURCE_EXHAUSTED);
	ck_assert_uint_gt(f.acked, 1000);
	/* Still answering, and everything acknowledged is there. */
	assert_acked_present(c, &f, "full");
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);

	/* A restart on the full store keeps the journal and answers. */
	harness_start(&h);
	log = tu_read_file(h.log_path, NULL);
	ck_assert_msg(log != NULL && strstr(log, "the store is full") != NULL,
	    "the restart does not say the store is full");
	free(log);
	c = harness_client(&h);
	assert_acked_present(c, &f, "restarted full");
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);

	/* Room again: everything is there, consistent, and writable. */
	harness_add_conf(&h, "[store]\nmap_size = 64M\n");
	harness_start(&h);
	c = harness_client(&h);
	assert_acked_present(c, &f, "with room");
	assert_consistent(c, &f, "with room");
	{
		const char *more[] = { "http://more.example/after" };
		struct nddd_url_result res[1];

		ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, more, 1, res, 1,
		    1, NULL, NULL), 0);
		ck_assert_uint_eq(res[0].count, 1);
		nddd_urls_results_free(res, 1);
	}
	nddd_close(c);
	harness_cleanup(&h);
	free_fill(&f);
}
END_TEST

START_TEST(test_full_disk)
{
	static struct fill f;
	struct harness h;
	char *mnt, *conf;
	nddd_client *c;

	memset(&f, 0, sizeof(f));
	mnt = tu_tmpdir();
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=6m") == -1) {
		printf("full: skipped the full disk test: cannot mount a "
		    "tmpfs (%s); it needs root\n", strerror(errno));
		tu_rmtree(mnt);
		free(mnt);
		return;
	}
	ck_assert_int_ne(asprintf(&conf, "[server]\nmax_batch = 500\n"
	    "[store]\ndata_dir = %s/data\nmap_size = 1G\n[urls]\n"
	    "capacity = 100000\njournal_entries = 2000\n", mnt), -1);
	harness_init(&h, conf);
	free(conf);
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_int_eq(fill_until_refused(c, &f, "disk"),
	    NDDD_RESOURCE_EXHAUSTED);
	ck_assert_uint_gt(f.acked, 1000);
	assert_acked_present(c, &f, "disk full");
	nddd_close(c);
	/* Stopping with a flush that cannot be written, then starting on
	 * the full disk: no crash, and the journal keeps what it holds. */
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_start(&h);
	c = harness_client(&h);
	assert_acked_present(c, &f, "restarted on a full disk");
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);

	ck_assert_int_eq(mount("tmpfs", mnt, "tmpfs", MS_REMOUNT, "size=64m"),
	    0);
	harness_start(&h);
	c = harness_client(&h);
	assert_acked_present(c, &f, "with room");
	assert_consistent(c, &f, "with room");
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	ck_assert_int_eq(umount(mnt), 0);
	harness_cleanup(&h);
	tu_rmtree(mnt);
	free(mnt);
	free_fill(&f);
}
END_TEST

Suite *full_suite(void);

Suite *
full_suite(void)
{
	Suite *s = suite_create("full");
	TCase *tc = tcase_create("full");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_full_map);
	tcase_add_test(tc, test_full_disk);
	suite_add_tcase(s, tc);
	return s;
}
