/*
 * A full store and a full disk.  Submits and deletes that cannot be made
 * durable are refused with RESOURCE_EXHAUSTED ("disk full: ..." when the
 * file system has no room), nothing acknowledged is lost, and the daemon
 * keeps answering reads (no crash, no SIGBUS) without flooding its log.
 * A full store comes back with a larger map_size and a restart; a full
 * disk comes back by itself once there is room, and a restart afterwards
 * finds every acknowledged record, consistent.
 *
 * The full disk is a tmpfs of a few megabytes, mounted for the test; where
 * mounting is not allowed (not root), that test says so and skips.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
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

enum url_state {
	URL_REFUSED,		/* in a batch refused whole: not stored */
	URL_ACKED,		/* its submit acknowledged: stored once */
	URL_GONE,		/* its delete acknowledged: not stored */
};

struct fill {
	char *urls[MAX_URLS];
	enum url_state state[MAX_URLS];
	size_t n;		/* sent */
	size_t acked;		/* acknowledged, deleted or not */
	size_t ngone;
};

/*
 * Submits batches of new URLs, at most max of them (0: no bound), until
 * one is refused whole; returns its code and message (*why, caller frees),
 * or NDDD_OK when max were acknowledged.  The refused batch's URLs count
 * as sent, not acknowledged.
 */
static enum nddd_code
fill_batches(nddd_client *c, struct fill *f, const char *tag, size_t max,
    char **why)
{
	for (size_t b = 0; max == 0 || b < max; b++) {
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
			*why = strdup(r->message ? r->message : "");
			nddd_reply_free(r);
			return code;
		}
		ck_assert_int_eq(r->kind, NDDD_REPLY_URLS);
		for (size_t i = 0; i < r->nresults; i++) {
			ck_assert_uint_eq(r->results[i].count, 1);
			f->state[f->n - BATCH + i] = URL_ACKED;
		}
		nddd_reply_free(r);
		f->acked += BATCH;
	}
	return NDDD_OK;
}

/*
 * Every acknowledged URL is stored, once; those deleted since, and those
 * of refused batches, are not.
 */
static void
assert_acked_present(nddd_client *c, const struct fill *f, const char *when)
{
	struct nddd_url_result *res = calloc(f->n + 1, sizeof(*res));

	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK,
	    (const char *const *)f->urls, f->n, res, BATCH, 4, NULL, NULL),
	    0);
	for (size_t i = 0; i < f->n; i++)
		ck_assert_msg(res[i].count == (f->state[i] == URL_ACKED),
		    "%s: %s %s has count %llu", when, f->state[i] == URL_ACKED ?
		    "acknowledged" : f->state[i] == URL_GONE ? "deleted" :
		    "refused", f->urls[i], (unsigned long long)res[i].count);
	nddd_urls_results_free(res, f->n);
	free(res);
}

static void
assert_consistent(nddd_client *c, const struct fill *f, const char *when)
{
	struct nddd_verify v;

	ck_assert_int_eq(nddd_verify(c, &v), 0);
	ck_assert_msg(v.consistent, "%s: %s", when, v.detail);
	ck_assert_uint_ge(v.urls, f->acked - f->ngone);
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
	char *log, *why;

	memset(&f, 0, sizeof(f));
	harness_init(&h, "[server]\nmax_batch = 500\n[store]\nmap_size = 1M\n"
	    "[urls]\ncapacity = 100000\njournal_entries = 2000\n");
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_int_eq(fill_batches(c, &f, "map", 0, &why),
	    NDDD_RESOURCE_EXHAUSTED);
	ck_assert_msg(strncmp(why, "store full: ", 12) == 0, "the refusal "
	    "says \"%s\"", why);
	free(why);
	ck_assert_uint_gt(f.acked, 1000);
	/* Still answering, and everything acknowledged is there. */
	assert_acked_present(c, &f, "full");
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);

	/* A restart on the full store keeps the journal and answers. */
	harness_start(&h);
	log = tu_read_file(h.log_path, NULL);
	ck_assert_msg(log != NULL && strstr(log, "urlset_replay: store full: ")
	    != NULL, "the restart does not say the store is full");
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

/*
 * The full disk: a tmpfs of DISK_SMALL, mounted by the runner's process
 * (an unchecked fixture) so that it is unmounted even when the test fails
 * or crashes.  Where mounting is not allowed, the test says so and skips.
 */
#define DISK_SMALL	"size=6m"
#define DISK_LARGE	"size=64m"
#define MAX_DOCS	20000

static char disk_mnt[256];
static char disk_skip[512];

static void
disk_setup(void)
{
	const char *base = getenv("TMPDIR");

	disk_skip[0] = '\0';
	snprintf(disk_mnt, sizeof(disk_mnt), "%s/nddd-disk.XXXXXX",
	    base != NULL && *base != '\0' ? base : "/tmp");
	if (mkdtemp(disk_mnt) == NULL) {
		snprintf(disk_skip, sizeof(disk_skip), "cannot make %s: %s",
		    disk_mnt, strerror(errno));
		disk_mnt[0] = '\0';
		return;
	}
	if (mount("tmpfs", disk_mnt, "tmpfs", 0, DISK_SMALL) == -1)
		snprintf(disk_skip, sizeof(disk_skip), "cannot mount a tmpfs "
		    "(%s); it needs root", strerror(errno));
}

static void
disk_teardown(void)
{
	if (disk_mnt[0] == '\0')
		return;
	/* Detached: a daemon still dying cannot keep it mounted. */
	if (disk_skip[0] == '\0' && umount2(disk_mnt, MNT_DETACH) == -1)
		fprintf(stderr, "full: cannot unmount %s: %s\n", disk_mnt,
		    strerror(errno));
	tu_rmtree(disk_mnt);
	disk_mnt[0] = '\0';
}

struct acked_doc {
	char *url;
	uint64_t id;
	uint64_t simhash;
};

struct docs {
	struct acked_doc d[MAX_DOCS];
	size_t n;		/* acknowledged */
	size_t tried;		/* urls used */
	uint64_t rng;
};

/* A document of random words: every one has its own fingerprint. */
static char *
doc_body(uint64_t *rng)
{
	char *body = malloc(40 * 8 + 1), *p = body;

	ck_assert_ptr_nonnull(body);
	for (int w = 0; w < 40; w++) {
		for (int i = 0; i < 7; i++)
			*p++ = (char)('a' + tu_rand_below(rng, 26));
		*p++ = ' ';
	}
	*p = '\0';
	return body;
}

/*
 * Submits one new document; returns NDDD_OK and records it, or the code
 * of its refusal with the message in *why (caller frees).
 */
static enum nddd_code
submit_doc(nddd_client *c, struct docs *d, const char *tag, char **why)
{
	struct nddd_reply *r;
	enum nddd_code code = NDDD_OK;
	char *url, *body = doc_body(&d->rng);
	uint64_t id;

	ck_assert_uint_lt(d->n, MAX_DOCS);
	ck_assert_int_ne(asprintf(&url, "http://%s.example/doc/%zu", tag,
	    d->tried++), -1);
	ck_assert_int_eq(nddd_send_doc_submit(c, url, strlen(url), body,
	    strlen(body), NDDD_TEXT, 0, &id), 0);
	free(body);
	r = nddd_call(c, id);
	ck_assert_ptr_nonnull(r);
	if (r->kind == NDDD_REPLY_ERROR) {
		code = r->code;
		*why = strdup(r->message ? r->message : "");
		free(url);
	} else {
		ck_assert_int_eq(r->kind, NDDD_REPLY_DOC);
		ck_assert_int_eq(r->doc.created, 1);
		d->d[d->n].url = url;
		d->d[d->n].id = r->doc.doc_id;
		d->d[d->n++].simhash = r->doc.simhash;
	}
	nddd_reply_free(r);
	return code;
}

/* Every acknowledged document is stored as it was answered. */
static void
assert_docs_present(nddd_client *c, const struct docs *d, const char *when)
{
	for (size_t i = 0; i < d->n; i++) {
		struct nddd_reply *r;
		uint64_t id;

		if (d->d[i].url == NULL)
			continue;	/* deleted */
		ck_assert_int_eq(nddd_send_doc_get(c, d->d[i].url,
		    strlen(d->d[i].url), &id), 0);
		r = nddd_call(c, id);
		ck_assert_ptr_nonnull(r);
		ck_assert_msg(r->kind == NDDD_REPLY_DOC, "%s: acknowledged "
		    "document %s is missing (%s)", when, d->d[i].url,
		    r->message ? r->message : "");
		ck_assert_uint_eq(r->doc.doc_id, d->d[i].id);
		ck_assert_uint_eq(r->doc.simhash, d->d[i].simhash);
		nddd_reply_free(r);
	}
}

/* A refusal for want of room says so. */
static void
assert_disk_full(enum nddd_code code, const char *why, const char *what)
{
	ck_assert_msg(code == NDDD_RESOURCE_EXHAUSTED, "%s: refused with %s "
	    "(%s), not RESOURCE_EXHAUSTED", what, nddd_code_name(code), why);
	ck_assert_msg(strncmp(why, "disk full: ", 11) == 0, "%s: the refusal "
	    "says \"%s\", not \"disk full: ...\"", what, why);
}

/* Lines of the daemon's log that are warnings or errors. */
static size_t
log_warnings(const struct harness *h)
{
	char *log = tu_read_file(h->log_path, NULL), *p;
	size_t n = 0;

	ck_assert_ptr_nonnull(log);
	for (p = log; (p = strstr(p, " warn: ")) != NULL; p++)
		n++;
	for (p = log; (p = strstr(p, " error: ")) != NULL; p++)
		n++;
	free(log);
	return n;
}


/*
 * Deletes f's URL i on a full disk: refused for want of room, or, if a
 * flush found room meanwhile (LMDB reuses the pages older transactions
 * freed), done.  Either way the URL is then what the answer said.
 */
static void
delete_url_on_full(nddd_client *c, struct fill *f, size_t i)
{
	const char *u[] = { f->urls[i] };
	struct nddd_url_result res[1];
	struct nddd_reply *r;
	uint64_t id;

	ck_assert_int_eq(f->state[i], URL_ACKED);
	ck_assert_int_eq(nddd_send_urls(c, NDDD_URL_DELETE, u, NULL, 1, &id),
	    0);
	r = nddd_call(c, id);
	ck_assert_ptr_nonnull(r);
	if (r->kind == NDDD_REPLY_ERROR)
		assert_disk_full(r->code, r->message, "url_delete");
	else {
		ck_assert_int_eq(r->kind, NDDD_REPLY_URLS);
		ck_assert_uint_eq(r->results[0].count, 1);
		f->state[i] = URL_GONE;
		f->ngone++;
	}
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK, u, 1, res, 1, 1, NULL,
	    NULL), 0);
	ck_assert_uint_eq(res[0].count, f->state[i] == URL_ACKED);
	nddd_urls_results_free(res, 1);
}

/* The same for document i. */
static void
delete_doc_on_full(nddd_client *c, struct docs *d, size_t i)
{
	struct nddd_reply *r;
	uint64_t id;

	ck_assert_int_eq(nddd_send_doc_delete(c, d->d[i].url,
	    strlen(d->d[i].url), &id), 0);
	r = nddd_call(c, id);
	ck_assert_ptr_nonnull(r);
	if (r->kind == NDDD_REPLY_ERROR)
		assert_disk_full(r->code, r->message, "doc_delete");
	else {
		ck_assert_int_eq(r->kind, NDDD_REPLY_DOC_DELETE);
		ck_assert_uint_eq(r->deleted_id, d->d[i].id);
		free(d->d[i].url);
		d->d[i].url = NULL;
	}
	nddd_reply_free(r);
}

/* Writes a file into dir until the file system has no byte left. */
static void
fill_disk(const char *dir)
{
	char *path, buf[4096];
	int fd;

	memset(buf, 'x', sizeof(buf));
	ck_assert_int_ne(asprintf(&path, "%s/ballast", dir), -1);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	ck_assert_int_ne(fd, -1);
	for (size_t len = sizeof(buf); len > 0;)
		if (write(fd, buf, len) == -1) {
			ck_assert_int_eq(errno, ENOSPC);
			len /= 2;
		}
	close(fd);
	free(path);
}

/* Both halves acknowledged before are there, and the stats answer. */
static void
assert_all_present(nddd_client *c, const struct fill *f,
    const struct docs *d, const char *when)
{
	struct nddd_stats st;

	ck_assert_int_eq(nddd_stats(c, &st), 0);
	assert_acked_present(c, f, when);
	assert_docs_present(c, d, when);
}

START_TEST(test_full_disk)
{
	static struct fill f;
	static struct docs d;
	struct harness h;
	char *conf, *why = NULL;
	nddd_client *c;
	enum nddd_code code;
	size_t warnings;

	if (disk_skip[0] != '\0') {
		printf("full: skipped the full disk test: %s\n", disk_skip);
		return;
	}
	memset(&f, 0, sizeof(f));
	memset(&d, 0, sizeof(d));
	d.rng = 42;
	ck_assert_int_ne(asprintf(&conf, "[server]\nmax_batch = 500\n"
	    "[store]\ndata_dir = %s/data\nmap_size = 1G\njournal_size = 1M\n"
	    "[urls]\ncapacity = 100000\njournal_entries = 2000\n",
	    disk_mnt), -1);
	harness_init(&h, conf);
	free(conf);
	harness_start(&h);
	c = harness_client(&h);

	/* Documents while there is room, then URLs until the disk is full,
	 * then documents until they do not fit either. */
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(submit_doc(c, &d, "early", &why), NDDD_OK);
	code = fill_batches(c, &f, "disk", 0, &why);
	assert_disk_full(code, why, "url_submit");
	free(why);
	ck_assert_uint_gt(f.acked, 1000);
	while ((code = submit_doc(c, &d, "late", &why)) == NDDD_OK)
		;
	assert_disk_full(code, why, "doc_submit");
	free(why);

	/* Whatever room is left goes to another file, as a disk filled by
	 * something else would be: not a byte left. */
	fill_disk(disk_mnt);

	/* Full: alive, answering reads, losing nothing, and quiet in the
	 * log while it waits for room. */
	assert_all_present(c, &f, &d, "disk full");
	warnings = log_warnings(&h);
	usleep(2500 * 1000);
	ck_assert_msg(log_warnings(&h) <= warnings + 2, "the full disk "
	    "floods the log: %zu warnings in 2.5 s", log_warnings(&h) -
	    warnings);
	ck_assert_msg(harness_log_has(&h, "disk full"), "the log does not say "
	    "the disk is full");
	delete_url_on_full(c, &f, 0);
	delete_doc_on_full(c, &d, 0);
	assert_all_present(c, &f, &d, "disk full, after deletes");
	nddd_close(c);

	/* Stopping with a flush that cannot be written, then starting on
	 * the full disk: no crash, and the journal keeps what it holds.
	 * With more workers than before: each holds two of LMDB's reader
	 * slots, and 40 of them reach a page of its lock file that the
	 * first run never wrote. */
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_add_conf(&h, "[server]\nworkers = 40\n");
	harness_start(&h);
	c = harness_client(&h);
	delete_url_on_full(c, &f, 1);
	assert_all_present(c, &f, &d, "restarted on a full disk");

	/* Room again, without a restart: writes resume by themselves. */
	ck_assert_int_eq(mount("tmpfs", disk_mnt, "tmpfs", MS_REMOUNT,
	    DISK_LARGE), 0);
	{
		const char *u[] = { "http://after.example/first" };
		struct nddd_url_result res[1];

		ck_assert_msg(nddd_urls(c, NDDD_URL_SUBMIT, u, 1, res, 1, 1,
		    NULL, NULL) == 0, "the first submit once there is room: "
		    "%s", res[0].message ? res[0].message : "");
		ck_assert_uint_eq(res[0].count, 1);
		nddd_urls_results_free(res, 1);
	}
	/* Several journals' worth: flushes and merges work again. */
	ck_assert_int_eq(fill_batches(c, &f, "after", 8, &why), NDDD_OK);
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(submit_doc(c, &d, "after", &why), NDDD_OK);
	ck_assert(harness_log_has(&h, "room again"));
	assert_all_present(c, &f, &d, "with room");
	assert_consistent(c, &f, "with room");
	nddd_close(c);

	/* And a restart finds every acknowledged record. */
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_start(&h);
	c = harness_client(&h);
	assert_all_present(c, &f, &d, "restarted with room");
	assert_consistent(c, &f, "restarted with room");
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	free_fill(&f);
	for (size_t i = 0; i < d.n; i++)
		free(d.d[i].url);
}
END_TEST

Suite *full_suite(void);

Suite *
full_suite(void)
{
	Suite *s = suite_create("full");
	TCase *tc = tcase_create("full"), *disk = tcase_create("disk");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_full_map);
	suite_add_tcase(s, tc);
	tcase_set_timeout(disk, 180);
	tcase_add_unchecked_fixture(disk, disk_setup, disk_teardown);
	tcase_add_test(disk, test_full_disk);
	suite_add_tcase(s, disk);
	return s;
}
