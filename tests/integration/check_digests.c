/*
 * Integration tests of URL digests and durability: libnddd canonicalizes
 * and hashes URLs with the daemon's own code and sends the digests; a real
 * daemon must then answer exactly as if it had been sent the URLs.  The
 * reference is a second daemon given the same operations on the URLs
 * themselves; the URLs are the real lists of the shared test data plus
 * strings no daemon takes.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "harness.h"
#include "nddd.pb-c.h"
#include "testutil.h"

#define CANON_PLAIN \
	"urlcanon/1 strip_session_ids=no strip_tracking=no sort_query=no"

/* Strings that are not URLs a daemon takes, each for its own reason. */
static const char *const invalid_urls[] = {
	"", "not a url", "mailto:someone@example.com", "data:,x",
	"file:///etc/passwd", "javascript:alert(1)", "http:///nohost",
	"http://exa mple.com/", "http://[::1/", "ftp://", "//example.com/x",
	"http://example.com:99999999999/", "http://example.com/%zz",
	"\x01\x02", "urn:isbn:0451450523", "http://ex\x7f" "ample.com/",
};

struct list {
	char **urls;
	size_t n, cap;
};

static void
list_add(struct list *l, const char *s, size_t len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4096;
		l->urls = realloc(l->urls, l->cap * sizeof(*l->urls));
		ck_assert_ptr_nonnull(l->urls);
	}
	ck_assert_ptr_nonnull(l->urls[l->n++] = strndup(s, len));
}

static void
list_add_line(void *l, const char *s, size_t len)
{
	list_add(l, s, len);
}

/* Adds every line of a list of the test data, and its URL. */
static void
list_load(struct list *l, const char *rel)
{
	tu_foreach_list_line(rel, list_add_line, l);
}

static void
list_free(struct list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->urls[i]);
	free(l->urls);
	memset(l, 0, sizeof(*l));
}

/*
 * Runs op over urls[0..n) with nddd_urls.  Submits and deletes go one
 * batch at a time: a URL in two batches in flight could be counted in
 * either order, and the two daemons compared must see the same order.
 */
static struct nddd_url_result *
run_op(nddd_client *c, enum nddd_url_op op, char **urls, size_t n)
{
	struct nddd_url_result *res = calloc(n + 1, sizeof(*res));

	ck_assert_ptr_nonnull(res);
	ck_assert_msg(nddd_urls(c, op, (const char *const *)urls, n, res, 1000,
	    op == NDDD_URL_CHECK ? 8 : 1, NULL, NULL) == 0, "nddd_urls: %s",
	    nddd_errstr(c));
	return res;
}

/* Asserts that got and want agree item by item: code, count, message. */
static void
assert_same(const char *what, char **urls,
    const struct nddd_url_result *got, const struct nddd_url_result *want,
    size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *gm = got[i].message ? got[i].message : "";
		const char *wm = want[i].message ? want[i].message : "";

		ck_assert_msg(got[i].code == want[i].code &&
		    got[i].count == want[i].count &&
		    (want[i].code == NDDD_OK || strcmp(gm, wm) == 0),
		    "%s: item %zu '%s': %s %llu '%s', the URLs' daemon says "
		    "%s %llu '%s'", what, i, urls[i],
		    nddd_code_name(got[i].code),
		    (unsigned long long)got[i].count, gm,
		    nddd_code_name(want[i].code),
		    (unsigned long long)want[i].count, wm);
	}
}

/* Runs op with a (digests or URLs) and ref (URLs) and compares them. */
static struct nddd_url_result *
compare_op(const char *what, nddd_client *a, nddd_client *ref,
    enum nddd_url_op op, char **urls, size_t n)
{
	struct nddd_url_result *got = run_op(a, op, urls, n);
	struct nddd_url_result *want = run_op(ref, op, urls, n);

	assert_same(what, urls, got, want, n);
	nddd_urls_results_free(got, n);
	free(got);
	return want;
}

static void
results_free(struct nddd_url_result *res, size_t n)
{
	nddd_urls_results_free(res, n);
	free(res);
}

START_TEST(test_digests_match_urls_on_real_lists)
{
	struct harness ha, hb;
	nddd_client *ad, *au, *ref;
	struct list all = { 0 };
	struct nddd_url_result *res;
	struct nddd_stats sa, sb;
	struct nddd_verify v;
	size_t n1, n, invalid = 0, dups = 0, unseen = 0;
	nddd_canon *k;
	char *err;

	/* Set 1, the URLs submitted as digests first, then set 2. */
	list_load(&all, "url_lists/ada_url_various_datasets/kasztp.txt");
	list_load(&all, "url_lists/ada_url_various_datasets/userbait.txt");
	list_load(&all,
	    "url_lists/ut1_blacklists/phishing_urls_2021-03-17.txt");
	for (size_t i = 0; i < sizeof(invalid_urls) / sizeof(*invalid_urls);
	    i++)
		list_add(&all, invalid_urls[i], strlen(invalid_urls[i]));
	{
		/* Longer than any URL taken. */
		char *huge = malloc(20001);

		memcpy(huge, "http://example.com/", 19);
		memset(huge + 19, 'a', 20000 - 19);
		list_add(&all, huge, 20000);
		free(huge);
	}
	n1 = all.n;
	list_load(&all, "url_lists/ada_url_various_datasets/node_files.txt");
	list_load(&all,
	    "url_lists/ut1_blacklists/all_categories_urls_HEAD.tsv");
	n = all.n;

	harness_init(&ha, NULL);
	harness_start(&ha);
	harness_init(&hb, NULL);
	harness_start(&hb);
	ad = harness_client(&ha);
	au = harness_client(&ha);
	ref = harness_client(&hb);
	ck_assert_msg(nddd_use_digests(ad, 1, &err) == 0, "%s", err);

	/* Digests in, URLs out. */
	results_free(compare_op("submit set 1 as digests", ad, ref,
	    NDDD_URL_SUBMIT, all.urls, n1), n1);
	res = compare_op("check all as URLs", au, ref, NDDD_URL_CHECK,
	    all.urls, n);
	for (size_t i = 0; i < n; i++) {
		invalid += res[i].code != NDDD_OK;
		unseen += res[i].code == NDDD_OK && res[i].count == 0;
		dups += res[i].count > 1;
	}
	/* The lists hold duplicates (also once canonical), URLs that are
	 * not URLs, and set 2 was not submitted yet. */
	ck_assert_uint_ge(invalid, 1000);
	ck_assert_uint_ge(dups, 100);
	ck_assert_uint_ge(unseen, 20000);
	results_free(res, n);

	/* URLs in, digests out, over records of both kinds. */
	results_free(compare_op("submit set 2 as URLs", au, ref,
	    NDDD_URL_SUBMIT, all.urls + n1, n - n1), n - n1);
	results_free(compare_op("submit set 1 again as URLs", au, ref,
	    NDDD_URL_SUBMIT, all.urls, n1), n1);
	results_free(compare_op("check all as digests", ad, ref,
	    NDDD_URL_CHECK, all.urls, n), n);
	results_free(compare_op("delete part of set 2 as digests", ad, ref,
	    NDDD_URL_DELETE, all.urls + n1, (n - n1) / 2), (n - n1) / 2);
	results_free(compare_op("delete part of set 1 as URLs", au, ref,
	    NDDD_URL_DELETE, all.urls + n1 / 2, n1 / 4), n1 / 4);
	results_free(compare_op("check all as digests, after deletes", ad,
	    ref, NDDD_URL_CHECK, all.urls, n), n);
	res = compare_op("check all as URLs, after deletes", au, ref,
	    NDDD_URL_CHECK, all.urls, n);

	/* Every URL the daemon refuses is refused here, with its message,
	 * and no other. */
	k = nddd_canon_new(CANON_PLAIN, &err);
	ck_assert_msg(k != NULL, "%s", err);
	for (size_t i = 0; i < n; i++) {
		unsigned char d[NDDD_DIGEST_LEN];
		const char *cause = NULL;
		int rc = nddd_canon_digest(k, all.urls[i], strlen(all.urls[i]),
		    d, &cause);

		ck_assert_msg((rc == 0) == (res[i].code == NDDD_OK),
		    "'%s': locally %s, by the daemon %s", all.urls[i],
		    rc == 0 ? "valid" : cause, nddd_code_name(res[i].code));
		if (rc == -1) {
			ck_assert_int_eq(res[i].code, NDDD_INVALID_ARGUMENT);
			ck_assert_str_eq(cause, res[i].message);
		}
	}
	nddd_canon_free(k);
	results_free(res, n);

	ck_assert_int_eq(nddd_stats(au, &sa), 0);
	ck_assert_int_eq(nddd_stats(ref, &sb), 0);
	ck_assert_uint_eq(sa.urls, sb.urls);
	ck_assert_uint_gt(sa.urls, 100000);
	ck_assert_str_eq(sa.canon, CANON_PLAIN);
	ck_assert_int_eq(nddd_verify(au, &v), 0);
	ck_assert_msg(v.consistent && v.url_index_mismatches == 0, "%s",
	    v.detail);
	ck_assert_uint_eq(v.urls, sa.urls);

	/* Off again: URLs as they are. */
	ck_assert_int_eq(nddd_use_digests(ad, 0, &err), 0);
	results_free(compare_op("check set 1 as URLs again", ad, ref,
	    NDDD_URL_CHECK, all.urls, n1), n1);

	nddd_close(ad);
	nddd_close(au);
	nddd_close(ref);
	harness_cleanup(&ha);
	harness_cleanup(&hb);
	list_free(&all);
}
END_TEST

START_TEST(test_canon_ids)
{
	static const char *const bad[] = {
		"urlcanon/999 strip_session_ids=no strip_tracking=no "
		"sort_query=no",
		"urlcanon/0 strip_session_ids=no strip_tracking=no "
		"sort_query=no",
		"urlcanon/1 strip_session_ids=no strip_tracking=no",
		"urlcanon/1 strip_session_ids=maybe strip_tracking=no "
		"sort_query=no",
		"urlcanon/1 strip_session_ids=no strip_tracking=no "
		"sort_query=no ",
		"", "md5",
	};
	unsigned char d1[NDDD_DIGEST_LEN], d2[NDDD_DIGEST_LEN];
	unsigned char md[EVP_MAX_MD_SIZE];
	const char *cause;
	unsigned int mdlen;
	nddd_canon *k;
	char *err, id[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		err = NULL;
		ck_assert_msg(nddd_canon_new(bad[i], &err) == NULL, "'%s' "
		    "accepted", bad[i]);
		ck_assert_ptr_nonnull(err);
		ck_assert_msg(strstr(err, "cannot be reproduced") != NULL,
		    "%s", err);
		free(err);
	}
	for (int o = 0; o < 8; o++) {
		bool sess = o & 1, track = o & 2, sort = o & 4;

		snprintf(id, sizeof(id), "urlcanon/1 strip_session_ids=%s "
		    "strip_tracking=%s sort_query=%s", sess ? "yes" : "no",
		    track ? "yes" : "no", sort ? "yes" : "no");
		k = nddd_canon_new(id, &err);
		ck_assert_msg(k != NULL, "%s: %s", id, err);
		ck_assert_str_eq(nddd_canon_id(k), id);

		/* The digest is the MD5 of the canonical form. */
		ck_assert_int_eq(nddd_canon_digest(k,
		    "HTTP://Example.COM:80/a/./b#top", 31, d1, &cause), 0);
		ck_assert(EVP_Digest("http://example.com/a/b", 22, md, &mdlen,
		    EVP_md5(), NULL) == 1);
		ck_assert_int_eq(memcmp(d1, md, NDDD_DIGEST_LEN), 0);

		/* Each option does what its name says, and only it. */
		ck_assert_int_eq(nddd_canon_digest(k,
		    "http://e.example/?utm_source=x&a=1", 34, d1, &cause), 0);
		ck_assert_int_eq(nddd_canon_digest(k, "http://e.example/?a=1",
		    21, d2, &cause), 0);
		ck_assert_int_eq(memcmp(d1, d2, NDDD_DIGEST_LEN) == 0, track);
		ck_assert_int_eq(nddd_canon_digest(k,
		    "http://e.example/?jsessionid=abc&a=1", 36, d1, &cause), 0);
		ck_assert_int_eq(memcmp(d1, d2, NDDD_DIGEST_LEN) == 0, sess);
		ck_assert_int_eq(nddd_canon_digest(k,
		    "http://e.example/?b=2&a=1", 25, d1, &cause), 0);
		ck_assert_int_eq(nddd_canon_digest(k,
		    "http://e.example/?a=1&b=2", 25, d2, &cause), 0);
		ck_assert_int_eq(memcmp(d1, d2, NDDD_DIGEST_LEN) == 0, sort);

		ck_assert_int_eq(nddd_canon_digest(k, "nope", 4, d1, &cause),
		    -1);
		ck_assert_str_eq(cause, "not an absolute URL");
		nddd_canon_free(k);
	}
}
END_TEST

START_TEST(test_canon_digests_batch)
{
	static const char urls[] = "http://a.example/x" "nope"
	    "HTTP://A.EXAMPLE:80/x#f" "http://b.example/";
	static const size_t lens[] = { 18, 4, 23, 17 };
	unsigned char d[4 * NDDD_DIGEST_LEN], one[NDDD_DIGEST_LEN];
	static const unsigned char zero[NDDD_DIGEST_LEN];
	int valid[4];
	const char *cause;
	nddd_canon *k;
	char *err;

	k = nddd_canon_new(CANON_PLAIN, &err);
	ck_assert_ptr_nonnull(k);
	memset(d, 0xaa, sizeof(d));
	ck_assert_uint_eq(nddd_canon_digests(k, urls, lens, 4, d, valid), 3);
	ck_assert(valid[0] == 1 && valid[1] == 0 && valid[2] == 1 &&
	    valid[3] == 1);
	ck_assert_int_eq(memcmp(d + NDDD_DIGEST_LEN, zero, NDDD_DIGEST_LEN),
	    0);
	ck_assert_int_eq(memcmp(d, d + 2 * NDDD_DIGEST_LEN, NDDD_DIGEST_LEN),
	    0);
	ck_assert_int_eq(nddd_canon_digest(k, "http://b.example/", 17, one,
	    &cause), 0);
	ck_assert_int_eq(memcmp(d + 3 * NDDD_DIGEST_LEN, one,
	    NDDD_DIGEST_LEN), 0);
	ck_assert_uint_eq(nddd_canon_digests(k, urls, lens, 0, d, valid), 0);
	nddd_canon_free(k);
}
END_TEST

/* Refused whole, INVALID_ARGUMENT, with a message naming what. */
static void
assert_refused(Nddd__V1__Response *resp, uint64_t id, const char *what)
{
	ck_assert_uint_eq(resp->id, id);
	ck_assert_ptr_nonnull(resp->status);
	ck_assert_int_eq(resp->status->code,
	    NDDD__V1__CODE__INVALID_ARGUMENT);
	ck_assert_msg(strstr(resp->status->message, what) != NULL, "%s",
	    resp->status->message);
	nddd__v1__response__free_unpacked(resp, NULL);
}

START_TEST(test_bad_batches_refused)
{
	static const char *const urls[] = { "http://refused.example/" };
	unsigned char d[2 * NDDD_DIGEST_LEN + 1];
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__UrlBatch batch = NDDD__V1__URL_BATCH__INIT;
	ProtobufCBinaryData url = {
		.data = (uint8_t *)"http://refused.example/", .len = 23,
	};
	struct nddd_url_result res[1];
	struct nddd_reply *r;
	struct harness h;
	nddd_client *c;
	const char *cause;
	nddd_canon *k;
	uint64_t id;
	char *err;

	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);

	/* Digests of another canonicalization, or naming none: refused
	 * whole, nothing stored. */
	k = nddd_canon_new("urlcanon/1 strip_session_ids=no "
	    "strip_tracking=yes sort_query=no", &err);
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(nddd_canon_digest(k, urls[0], strlen(urls[0]), d,
	    &cause), 0);
	ck_assert_int_eq(nddd_canon_digest(k, "http://other.example/", 21,
	    d + NDDD_DIGEST_LEN, &cause), 0);
	ck_assert_int_eq(nddd_send_digests(c, NDDD_URL_SUBMIT,
	    nddd_canon_id(k), d, 2, &id), 0);
	r = nddd_call(c, id);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->kind, NDDD_REPLY_ERROR);
	ck_assert_int_eq(r->code, NDDD_INVALID_ARGUMENT);
	ck_assert_msg(strstr(r->message, "canonicalization") != NULL, "%s",
	    r->message);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_send_digests(c, NDDD_URL_SUBMIT, NULL, d, 2,
	    &id), 0);
	r = nddd_call(c, id);
	ck_assert_int_eq(r->kind, NDDD_REPLY_ERROR);
	ck_assert_int_eq(r->code, NDDD_INVALID_ARGUMENT);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK, urls, 1, res, 1, 1,
	    NULL, NULL), 0);
	ck_assert_uint_eq(res[0].count, 0);
	nddd_urls_results_free(res, 1);
	/* The same digests with the server's id go through. */
	ck_assert_int_eq(nddd_send_digests(c, NDDD_URL_SUBMIT, CANON_PLAIN, d,
	    2, &id), 0);
	r = nddd_call(c, id);
	ck_assert_int_eq(r->kind, NDDD_REPLY_URLS);
	ck_assert_uint_eq(r->nresults, 2);
	ck_assert_uint_eq(r->results[0].count, 1);
	nddd_reply_free(r);
	nddd_canon_free(k);

	/* URLs and digests in one batch; 17 bytes of digests. */
	k = nddd_canon_new(CANON_PLAIN, &err);
	ck_assert_int_eq(nddd_canon_digest(k, urls[0], strlen(urls[0]), d,
	    &cause), 0);
	batch.n_urls = 1;
	batch.urls = &url;
	batch.digests.data = d;
	batch.digests.len = NDDD_DIGEST_LEN;
	batch.canon = CANON_PLAIN;
	req.id = 7;
	req.op_case = NDDD__V1__REQUEST__OP_URL_SUBMIT;
	req.url_submit = &batch;
	assert_refused(harness_raw_call(&h, &req), 7, "not both");
	batch.n_urls = 0;
	batch.urls = NULL;
	batch.digests.len = NDDD_DIGEST_LEN + 1;
	req.id = 8;
	req.op_case = NDDD__V1__REQUEST__OP_URL_CHECK;
	req.url_check = &batch;
	assert_refused(harness_raw_call(&h, &req), 8, "16 bytes");
	nddd_canon_free(k);

	/* Still the one submit that went through. */
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK, urls, 1, res, 1, 1,
	    NULL, NULL), 0);
	ck_assert_uint_eq(res[0].count, 1);
	nddd_urls_results_free(res, 1);
	nddd_close(c);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_server_options_picked_up)
{
	static const char *const tracked[] = {
		"http://t.example/a?utm_source=news&q=1&utm_medium=mail",
		"http://t.example/a?q=1&fbclid=xyz",
		"nope",
	};
	static const char *const plain[] = { "http://t.example/a?q=1" };
	unsigned char d1[NDDD_DIGEST_LEN], d2[NDDD_DIGEST_LEN];
	struct nddd_url_result res[3];
	struct nddd_stats st;
	struct harness h;
	nddd_client *c, *u;
	const char *cause;
	nddd_canon *k;
	char *err;

	harness_init(&h, "[urls]\nstrip_tracking = yes\n");
	harness_start(&h);
	c = harness_client(&h);
	u = harness_client(&h);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_str_eq(st.canon, "urlcanon/1 strip_session_ids=no "
	    "strip_tracking=yes sort_query=no");
	k = nddd_canon_new(st.canon, &err);
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(nddd_canon_digest(k, tracked[0], strlen(tracked[0]),
	    d1, &cause), 0);
	ck_assert_int_eq(nddd_canon_digest(k, plain[0], strlen(plain[0]), d2,
	    &cause), 0);
	ck_assert_int_eq(memcmp(d1, d2, NDDD_DIGEST_LEN), 0);
	nddd_canon_free(k);

	ck_assert_msg(nddd_use_digests(c, 1, &err) == 0, "%s", err);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, tracked, 3, res, 2, 2,
	    NULL, NULL), 0);
	ck_assert_uint_eq(res[0].count, 1);
	ck_assert_uint_eq(res[1].count, 2);	/* the same page */
	ck_assert_int_eq(res[2].code, NDDD_INVALID_ARGUMENT);
	ck_assert_str_eq(res[2].message, "not an absolute URL");
	nddd_urls_results_free(res, 3);
	ck_assert_int_eq(nddd_urls(u, NDDD_URL_CHECK, plain, 1, res, 1, 1,
	    NULL, NULL), 0);
	ck_assert_uint_eq(res[0].count, 2);
	nddd_urls_results_free(res, 1);
	nddd_close(c);
	nddd_close(u);
	harness_cleanup(&h);
}
END_TEST

/*
 * Submits and deletes with durability d, as URLs and as digests: each is
 * answered and seen at once by a check on another connection.
 */
static void
durability_round(const struct harness *h, enum nddd_durability d,
    const char *tag)
{
	char *urls[200], *err;
	struct nddd_url_result res[200];
	nddd_client *w = harness_client(h), *r = harness_client(h);

	for (int i = 0; i < 200; i++)
		ck_assert_int_ne(asprintf(&urls[i], "http://%s.example/%d",
		    tag, i), -1);
	nddd_set_durability(w, d);
	for (int digests = 0; digests < 2; digests++) {
		char **part = urls + digests * 100;

		ck_assert_int_eq(nddd_use_digests(w, digests, &err), 0);
		ck_assert_int_eq(nddd_urls(w, NDDD_URL_SUBMIT,
		    (const char *const *)part, 100, res, 30, 4, NULL, NULL),
		    0);
		for (int i = 0; i < 100; i++)
			ck_assert_uint_eq(res[i].count, 1);
		nddd_urls_results_free(res, 100);
		ck_assert_int_eq(nddd_urls(r, NDDD_URL_CHECK,
		    (const char *const *)part, 100, res, 100, 1, NULL, NULL),
		    0);
		for (int i = 0; i < 100; i++)
			ck_assert_msg(res[i].count == 1, "%s not seen at once",
			    part[i]);
		nddd_urls_results_free(res, 100);
		ck_assert_int_eq(nddd_urls(w, NDDD_URL_DELETE,
		    (const char *const *)part, 50, res, 30, 4, NULL, NULL), 0);
		for (int i = 0; i < 50; i++)
			ck_assert_uint_eq(res[i].count, 1);
		nddd_urls_results_free(res, 50);
		ck_assert_int_eq(nddd_urls(r, NDDD_URL_CHECK,
		    (const char *const *)part, 100, res, 100, 1, NULL, NULL),
		    0);
		for (int i = 0; i < 100; i++)
			ck_assert_uint_eq(res[i].count, i < 50 ? 0 : 1);
		nddd_urls_results_free(res, 100);
	}
	for (int i = 0; i < 200; i++)
		free(urls[i]);
	nddd_close(w);
	nddd_close(r);
}

static uint64_t
journal_syncs(const struct harness *h)
{
	struct nddd_stats st;
	nddd_client *c = harness_client(h);

	ck_assert_int_eq(nddd_stats(c, &st), 0);
	nddd_close(c);
	return st.url_store.journal_syncs;
}

START_TEST(test_durability)
{
	static const char *const one[] = { "http://sync.example/" };
	struct nddd_url_result res[1];
	struct harness h;
	nddd_client *c;
	uint64_t before;

	/* Relaxed changes wait this long for their fdatasync: the test
	 * sees none of those. */
	harness_init(&h, "[store]\nrelaxed_sync_interval = 600s\n");
	harness_start(&h);
	durability_round(&h, NDDD_RELAXED, "relaxed");
	durability_round(&h, NDDD_DURABLE, "durable");
	durability_round(&h, NDDD_DURABILITY_DEFAULT, "default");

	/* The durability asked for reaches the daemon: a relaxed submit
	 * is answered without a sync of the journal, a durable one after
	 * one. */
	c = harness_client(&h);
	before = journal_syncs(&h);
	nddd_set_durability(c, NDDD_RELAXED);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, one, 1, res, 1, 1, NULL,
	    NULL), 0);
	ck_assert_uint_eq(journal_syncs(&h), before);
	nddd_set_durability(c, NDDD_DURABLE);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, one, 1, res, 1, 1, NULL,
	    NULL), 0);
	ck_assert_uint_eq(res[0].count, 2);
	ck_assert_uint_gt(journal_syncs(&h), before);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
}
END_TEST

Suite *digests_suite(void);

Suite *
digests_suite(void)
{
	Suite *s = suite_create("digests");
	TCase *tc = tcase_create("digests");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_canon_ids);
	tcase_add_test(tc, test_canon_digests_batch);
	tcase_add_test(tc, test_bad_batches_refused);
	tcase_add_test(tc, test_server_options_picked_up);
	tcase_add_test(tc, test_durability);
	tcase_add_test(tc, test_digests_match_urls_on_real_lists);
	suite_add_tcase(s, tc);
	return s;
}
