/*
 * URL namespaces and times to live, against a real daemon, in protobuf
 * frames: namespaces are independent sets (the same URL new in one and a
 * duplicate in another); a time to live ends with the daemon's clock (a
 * test-only file, NDDD_TEST_CLOCK) and its records are reclaimed exactly;
 * dropping a namespace forgets its URLs exactly (every filter counter equal
 * to min(15, the records naming it), which verify checks), also across a
 * kill -9 midway, and leaves the others intact; bad names and times are
 * INVALID_ARGUMENT; a token limited to namespaces reaches only those.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

/* A clock file the daemon reads its wall time from. */
static void
set_clock(const struct harness *h, uint64_t ms)
{
	char *path, *tmp;
	FILE *f;

	ck_assert_int_ne(asprintf(&path, "%s/clock", h->dir), -1);
	ck_assert_int_ne(asprintf(&tmp, "%s/clock.new", h->dir), -1);
	ck_assert_ptr_nonnull(f = fopen(tmp, "w"));
	fprintf(f, "%llu\n", (unsigned long long)ms);
	ck_assert_int_eq(fclose(f), 0);
	/* Renamed over: the daemon never reads a half-written file. */
	ck_assert_int_eq(rename(tmp, path), 0);
	free(path);
	free(tmp);
}

static void
start_with_clock(struct harness *h, uint64_t ms)
{
	char *path;

	set_clock(h, ms);
	ck_assert_int_ne(asprintf(&path, "%s/clock", h->dir), -1);
	setenv("NDDD_TEST_CLOCK", path, 1);
	harness_start(h);
	unsetenv("NDDD_TEST_CLOCK");
	free(path);
}

/* The URLs http://HOST/0 .. /n-1. */
static ProtobufCBinaryData *
make_urls(const char *host, size_t n)
{
	ProtobufCBinaryData *u = calloc(n, sizeof(*u));

	ck_assert_ptr_nonnull(u);
	for (size_t i = 0; i < n; i++) {
		char *s;

		ck_assert_int_ne(asprintf(&s, "http://%s/%zu", host, i), -1);
		u[i].data = (uint8_t *)s;
		u[i].len = strlen(s);
	}
	return u;
}

static void
free_urls(ProtobufCBinaryData *u, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(u[i].data);
	free(u);
}

/* One URL batch (op: the request's case) with token (NULL: none). */
static Nddd__V1__Response *
url_call_as(const struct harness *h, const char *token,
    Nddd__V1__Request__OpCase op, ProtobufCBinaryData *urls, size_t n,
    const char *ns, uint64_t ttl, bool with_times)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__UrlBatch b = NDDD__V1__URL_BATCH__INIT;

	req.token = (char *)(token != NULL ? token : "");

	b.n_urls = n;
	b.urls = urls;
	b.namespace_ = (char *)ns;
	b.ttl_seconds = ttl;
	b.with_times = with_times;
	req.id = 1;
	req.op_case = op;
	if (op == NDDD__V1__REQUEST__OP_URL_SUBMIT)
		req.url_submit = &b;
	else if (op == NDDD__V1__REQUEST__OP_URL_CHECK)
		req.url_check = &b;
	else
		req.url_delete = &b;
	return harness_raw_call(h, &req);
}

static Nddd__V1__Response *
url_call(const struct harness *h, Nddd__V1__Request__OpCase op,
    ProtobufCBinaryData *urls, size_t n, const char *ns, uint64_t ttl,
    bool with_times)
{
	return url_call_as(h, NULL, op, urls, n, ns, ttl, with_times);
}

/* The counts of a batch, which must be answered. */
static void
counts_of(Nddd__V1__Response *r, uint64_t *counts, size_t n)
{
	ck_assert_msg(r->status == NULL, "refused: %s",
	    r->status ? r->status->message : "");
	ck_assert_int_eq(r->result_case, NDDD__V1__RESPONSE__RESULT_URLS);
	ck_assert_uint_eq(r->urls->n_counts, n);
	ck_assert_uint_eq(r->urls->n_errors, 0);
	memcpy(counts, r->urls->counts, n * sizeof(*counts));
	nddd__v1__response__free_unpacked(r, NULL);
}

static void
expect_counts(const struct harness *h, Nddd__V1__Request__OpCase op,
    ProtobufCBinaryData *urls, size_t n, const char *ns, uint64_t want,
    const char *what)
{
	uint64_t *got = calloc(n, sizeof(*got));

	/* In batches the smallest max_batch here takes. */
	for (size_t at = 0; at < n; at += 500)
		counts_of(url_call(h, op, urls + at, n - at < 500 ? n - at :
		    500, ns, 0, false), got + at, n - at < 500 ? n - at : 500);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(got[i] == want, "%s: URL %zu has count %llu, "
		    "want %llu", what, i, (unsigned long long)got[i],
		    (unsigned long long)want);
	free(got);
}

static Nddd__V1__Response *
ns_call_as(const struct harness *h, const char *token, bool drop,
    const char *name, uint64_t ttl)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__NamespaceSet set = NDDD__V1__NAMESPACE_SET__INIT;
	Nddd__V1__NamespaceDrop dr = NDDD__V1__NAMESPACE_DROP__INIT;

	req.token = (char *)(token != NULL ? token : "");
	req.id = 2;
	if (drop) {
		dr.name = (char *)name;
		req.op_case = NDDD__V1__REQUEST__OP_NAMESPACE_DROP;
		req.namespace_drop = &dr;
	} else {
		set.name = (char *)name;
		set.default_ttl_seconds = ttl;
		req.op_case = NDDD__V1__REQUEST__OP_NAMESPACE_SET;
		req.namespace_set = &set;
	}
	return harness_raw_call(h, &req);
}

static Nddd__V1__Response *
ns_call(const struct harness *h, bool drop, const char *name, uint64_t ttl)
{
	return ns_call_as(h, NULL, drop, name, ttl);
}

static Nddd__V1__StatsResult *
stats_as(const struct harness *h, const char *token,
    Nddd__V1__Response **resp)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__StatsRequest sr = NDDD__V1__STATS_REQUEST__INIT;

	req.token = (char *)(token != NULL ? token : "");
	req.id = 3;
	req.op_case = NDDD__V1__REQUEST__OP_STATS;
	req.stats = &sr;
	*resp = harness_raw_call(h, &req);
	ck_assert_ptr_null((*resp)->status);
	return (*resp)->stats;
}

static Nddd__V1__StatsResult *
stats_of(const struct harness *h, Nddd__V1__Response **resp)
{
	return stats_as(h, NULL, resp);
}

/* The URLs stats counts in namespace name (-1: not listed). */
static int64_t
ns_urls(const struct harness *h, const char *name)
{
	Nddd__V1__Response *r;
	Nddd__V1__StatsResult *s = stats_of(h, &r);
	int64_t n = -1;

	for (size_t i = 0; i < s->n_namespaces; i++)
		if (strcmp(s->namespaces[i]->name, name) == 0)
			n = (int64_t)s->namespaces[i]->urls;
	nddd__v1__response__free_unpacked(r, NULL);
	return n;
}

/* Waits (up to 20 s) until stats' field says what is left is 0. */
static void
wait_dropped(const struct harness *h)
{
	for (int i = 0; i < 400; i++) {
		Nddd__V1__Response *r;
		uint64_t left = stats_of(h, &r)->urls_dropping;

		nddd__v1__response__free_unpacked(r, NULL);
		if (left == 0)
			return;
		usleep(50 * 1000);
	}
	ck_abort_msg("the dropped namespace's URLs are still there");
}

START_TEST(test_namespaces_are_independent)
{
	struct harness h;
	ProtobufCBinaryData *u = make_urls("ns.example", 50);
	char long_name[80];

	harness_init(&h, NULL);
	harness_start(&h);
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 50, "crawl-a",
	    1, "new in crawl-a");
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u, 50, "crawl-b",
	    0, "unseen in crawl-b");
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u, 50, "", 0,
	    "unseen in the default namespace");
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 50, "crawl-b",
	    1, "new in crawl-b");
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 25, "crawl-a",
	    2, "a duplicate in crawl-a");
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_DELETE, u, 10, "crawl-b",
	    1, "deleted from crawl-b");
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u, 10, "crawl-a",
	    2, "still in crawl-a");
	/* A read of a namespace that does not exist creates nothing. */
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u, 5, "never", 0,
	    "unseen in an unknown namespace");
	ck_assert_int_eq(ns_urls(&h, "never"), -1);
	ck_assert_int_eq(ns_urls(&h, "crawl-a"), 50);
	ck_assert_int_eq(ns_urls(&h, "crawl-b"), 40);
	ck_assert_int_eq(ns_urls(&h, ""), 0);
	/* Bad input. */
	memset(long_name, 'n', 65);
	long_name[65] = '\0';
	harness_expect_refused(url_call(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 1,
	    long_name, 0, false), NDDD__V1__CODE__INVALID_ARGUMENT,
	    "at most 64 bytes");
	harness_expect_refused(url_call(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u, 1,
	    "a/b", 0, false), NDDD__V1__CODE__INVALID_ARGUMENT, "ASCII");
	harness_expect_refused(url_call(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 1,
	    "ok", 3155760001ULL, false), NDDD__V1__CODE__INVALID_ARGUMENT,
	    "100 years");
	/* What a negative number becomes on the wire. */
	harness_expect_refused(url_call(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 1,
	    "ok", (uint64_t)-5, false), NDDD__V1__CODE__INVALID_ARGUMENT,
	    "100 years");
	harness_expect_refused(ns_call(&h, true, "", 0),
	    NDDD__V1__CODE__INVALID_ARGUMENT, "cannot be dropped");
	harness_expect_refused(ns_call(&h, true, "never", 0),
	    NDDD__V1__CODE__NOT_FOUND, "no such namespace");
	/* Nothing of the refused batches was recorded. */
	ck_assert_int_eq(ns_urls(&h, "ok"), -1);
	/* Namespaces and their sets survive a restart. */
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_start(&h);
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u + 10, 40,
	    "crawl-b", 1, "crawl-b after a restart");
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u, 10, "crawl-b",
	    0, "crawl-b's deletes after a restart");
	ck_assert_int_eq(ns_urls(&h, "crawl-a"), 50);
	harness_assert_verified(&h, 90, "two namespaces");
	harness_cleanup(&h);
	free_urls(u, 50);
}
END_TEST

START_TEST(test_time_to_live)
{
	struct harness h;
	const uint64_t t0 = 1700000000000ULL;
	ProtobufCBinaryData *u = make_urls("ttl.example", 40);
	Nddd__V1__Response *r;
	uint64_t c[40];

	/* Expired records are kept 5 s, telling their times, then
	 * reclaimed. */
	harness_init(&h, "[urls]\nkeep_expired = 5s\n");
	start_with_clock(&h, t0);
	/* A default of 60 s for the namespace; 10 s given for half. */
	r = ns_call(&h, false, "recrawl", 60);
	ck_assert_ptr_null(r->status);
	ck_assert_str_eq(r->namespace_->name, "recrawl");
	ck_assert_uint_eq(r->namespace_->default_ttl_seconds, 60);
	nddd__v1__response__free_unpacked(r, NULL);
	r = url_call(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 20, "recrawl",
	    10, true);
	ck_assert_uint_eq(r->urls->n_expires_ms, 20);
	for (size_t i = 0; i < 20; i++) {
		ck_assert_uint_eq(r->urls->first_seen_ms[i], t0);
		ck_assert_uint_eq(r->urls->expires_ms[i], t0 + 10000);
	}
	nddd__v1__response__free_unpacked(r, NULL);
	r = url_call(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, u + 20, 20,
	    "recrawl", 0, true);
	for (size_t i = 0; i < 20; i++)
		ck_assert_uint_eq(r->urls->expires_ms[i], t0 + 60000);
	nddd__v1__response__free_unpacked(r, NULL);
	/* The same URLs in the default namespace: no time to live. */
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 40, "", 1,
	    "default namespace");

	/* At 9 s, a duplicate submit does not postpone the end. */
	set_clock(&h, t0 + 9000);
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 5, "recrawl",
	    2, "duplicates at 9 s");
	/* At 10 s the first half is unseen, with its times. */
	set_clock(&h, t0 + 10000);
	r = url_call(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u, 40, "recrawl",
	    0, true);
	for (size_t i = 0; i < 40; i++) {
		ck_assert_uint_eq(r->urls->counts[i], i < 20 ? 0 : 1);
		ck_assert_uint_eq(r->urls->first_seen_ms[i], t0);
		ck_assert_uint_eq(r->urls->last_seen_ms[i],
		    i < 5 ? t0 + 9000 : t0);
	}
	nddd__v1__response__free_unpacked(r, NULL);
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u, 40, "", 1,
	    "the default namespace keeps them");
	/* A submit of an expired URL records it as new, for a new time. */
	r = url_call(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 2, "recrawl",
	    0, true);
	ck_assert_uint_eq(r->urls->counts[0], 1);
	ck_assert_uint_eq(r->urls->first_seen_ms[0], t0 + 10000);
	ck_assert_uint_eq(r->urls->expires_ms[0], t0 + 70000);
	nddd__v1__response__free_unpacked(r, NULL);

	/* Not before they have been expired for 5 s. */
	usleep(300 * 1000);
	r = url_call(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u + 2, 18, "recrawl",
	    0, true);
	for (size_t i = 0; i < 18; i++)
		ck_assert_uint_eq(r->urls->first_seen_ms[i], t0);
	nddd__v1__response__free_unpacked(r, NULL);
	r = NULL;
	ck_assert_uint_eq(stats_of(&h, &r)->urls_expired, 0);
	nddd__v1__response__free_unpacked(r, NULL);
	/* Then the other 18 are reclaimed in the background, exactly. */
	set_clock(&h, t0 + 15000);
	for (int i = 0; i < 400; i++) {
		Nddd__V1__Response *sr;
		uint64_t expired = stats_of(&h, &sr)->urls_expired;

		nddd__v1__response__free_unpacked(sr, NULL);
		if (expired == 18)
			break;
		ck_assert_uint_lt(expired, 18);
		usleep(50 * 1000);
	}
	ck_assert_int_eq(ns_urls(&h, "recrawl"), 22);
	harness_assert_verified(&h, 62, "after the reclaim");
	r = url_call(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u + 2, 18, "recrawl",
	    0, true);
	for (size_t i = 0; i < 18; i++)
		ck_assert_uint_eq(r->urls->first_seen_ms[i], 0);
	nddd__v1__response__free_unpacked(r, NULL);
	/* After a restart, at 61 s: everything in recrawl but the two
	 * renewed has expired. */
	ck_assert_int_eq(harness_stop(&h), 0);
	start_with_clock(&h, t0 + 61000);
	counts_of(url_call(&h, NDDD__V1__REQUEST__OP_URL_CHECK, u, 40,
	    "recrawl", 0, false), c, 40);
	for (size_t i = 0; i < 40; i++)
		ck_assert_uint_eq(c[i], i < 2 ? 1 : 0);
	harness_cleanup(&h);
	free_urls(u, 40);
}
END_TEST

/* Many URLs in a tiny filter (its counters saturate), in three
 * namespaces; "gone" is dropped. */
static void
drop_case(bool kill_midway)
{
	struct harness h;
	ProtobufCBinaryData *gone = make_urls("gone.example", 3000);
	ProtobufCBinaryData *kept = make_urls("kept.example", 1000);
	Nddd__V1__Response *r;

	harness_init(&h, "[server]\nmax_batch = 500\n[urls]\ncapacity = 100\n"
	    "journal_entries = 512\n"
	    "segment_records = 64\n");
	harness_start(&h);
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, gone, 3000, "gone",
	    1, "gone");
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, kept, 1000,
	    "kept", 1, "kept");
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, kept, 500, "",
	    1, "default");
	r = ns_call(&h, true, "gone", 0);
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->namespace_->urls, 3000);
	nddd__v1__response__free_unpacked(r, NULL);
	if (kill_midway) {
		harness_kill(&h);
		harness_start(&h);
	}
	/* The name is free at once: an empty set. */
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_CHECK, gone, 3000, "gone",
	    0, "gone after the drop");
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_SUBMIT, gone, 7, "gone",
	    1, "gone created again");
	wait_dropped(&h);
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_CHECK, kept, 1000, "kept",
	    1, "kept intact");
	expect_counts(&h, NDDD__V1__REQUEST__OP_URL_CHECK, kept, 500, "", 1,
	    "the default namespace intact");
	ck_assert_int_eq(ns_urls(&h, "gone"), 7);
	harness_assert_verified(&h, 1507, "after the drop");
	harness_kill(&h);
	harness_start(&h);
	harness_assert_verified(&h, 1507, "after a restart");
	harness_cleanup(&h);
	free_urls(gone, 3000);
	free_urls(kept, 1000);
}

START_TEST(test_drop_namespace)
{
	drop_case(false);
}
END_TEST

START_TEST(test_drop_namespace_killed_midway)
{
	drop_case(true);
}
END_TEST

/* In batches of at most 16 URLs (the max_batch of the test below). */
static void
submit_small(const struct harness *h, ProtobufCBinaryData *urls, size_t n,
    const char *ns, uint64_t ttl)
{
	for (size_t at = 0; at < n; at += 16) {
		size_t m = n - at < 16 ? n - at : 16;
		uint64_t c[16];

		counts_of(url_call(h, NDDD__V1__REQUEST__OP_URL_SUBMIT,
		    urls + at, m, ns, ttl, false), c, m);
		for (size_t i = 0; i < m; i++)
			ck_assert_uint_eq(c[i], 1);
	}
}

/*
 * A journal's table of 16 URLs and segments of 256: the sweep forgets at
 * most 8 URLs a step, so it reads each segment in parts, across flushes
 * and merges; every expired URL and every URL of the dropped namespace is
 * still forgotten exactly.
 */
START_TEST(test_sweep_in_small_steps)
{
	const uint64_t t0 = 1700000000000ULL;
	struct harness h;
	ProtobufCBinaryData *ttl = make_urls("short.example", 600);
	ProtobufCBinaryData *keep = make_urls("keep.example", 200);
	ProtobufCBinaryData *gone = make_urls("gone.example", 300);
	Nddd__V1__Response *r;

	harness_init(&h, "[server]\nmax_batch = 16\n[urls]\ncapacity = 500\n"
	    "journal_entries = 16\nsegment_records = 256\n"
	    "keep_expired = 0\n");
	start_with_clock(&h, t0);
	submit_small(&h, ttl, 600, "", 10);
	submit_small(&h, keep, 200, "", 0);
	submit_small(&h, gone, 300, "gone", 0);
	set_clock(&h, t0 + 11000);
	r = ns_call(&h, true, "gone", 0);
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->namespace_->urls, 300);
	nddd__v1__response__free_unpacked(r, NULL);
	for (int i = 0; i < 600; i++) {
		Nddd__V1__Response *sr;
		Nddd__V1__StatsResult *st = stats_of(&h, &sr);
		bool done = st->urls_expired == 600 && st->urls_dropping == 0;

		ck_assert_uint_le(st->urls_expired, 600);
		nddd__v1__response__free_unpacked(sr, NULL);
		if (done)
			break;
		ck_assert_int_lt(i, 599);
		usleep(50 * 1000);
	}
	harness_assert_verified(&h, 200, "after the sweep");
	for (size_t at = 0; at < 200; at += 16)
		expect_counts(&h, NDDD__V1__REQUEST__OP_URL_CHECK, keep + at,
		    200 - at < 16 ? 200 - at : 16, "", 1, "kept");
	harness_cleanup(&h);
	free_urls(ttl, 600);
	free_urls(keep, 200);
	free_urls(gone, 300);
}
END_TEST

#define CRAWL_TOKEN	"crawl-a-token-0123456789"
#define OPS_TOKEN	"ops-token-0123456789"
#define ADMIN_TOKEN	"admin-token-0123456789"

START_TEST(test_tokens_limited_to_namespaces)
{
	struct harness h;
	ProtobufCBinaryData *u = make_urls("tok.example", 3);
	Nddd__V1__Response *r;
	Nddd__V1__StatsResult *st;
	char *path, conf[512], *out;
	FILE *f;

	harness_init(&h, NULL);
	ck_assert_int_ne(asprintf(&path, "%s/tokens", h.dir), -1);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(CRAWL_TOKEN " write namespaces=crawl-a\n"
	    OPS_TOKEN " admin namespaces=,crawl-b # the default and crawl-b\n"
	    ADMIN_TOKEN " admin\n", f);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(conf, sizeof(conf), "[auth]\ntokens_file = %s\n", path);
	harness_add_conf(&h, conf);
	harness_start(&h);

	/* Its role in its namespace; nothing in the others. */
	r = url_call_as(&h, CRAWL_TOKEN, NDDD__V1__REQUEST__OP_URL_SUBMIT, u,
	    3, "crawl-a", 0, false);
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->urls->counts[0], 1);
	nddd__v1__response__free_unpacked(r, NULL);
	harness_expect_refused(url_call_as(&h, CRAWL_TOKEN,
	    NDDD__V1__REQUEST__OP_URL_CHECK, u, 3, "", 0, false),
	    NDDD__V1__CODE__PERMISSION_DENIED, "does not reach");
	harness_expect_refused(url_call_as(&h, CRAWL_TOKEN,
	    NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 3, "crawl-b", 0, false),
	    NDDD__V1__CODE__PERMISSION_DENIED, "does not reach");
	/* Within its namespace, still its role: no deletes. */
	harness_expect_refused(url_call_as(&h, CRAWL_TOKEN,
	    NDDD__V1__REQUEST__OP_URL_DELETE, u, 3, "crawl-a", 0, false),
	    NDDD__V1__CODE__PERMISSION_DENIED, "role");
	/* What spans every namespace: read at most, so basic stats, with
	 * no namespace listed, and no verify. */
	st = stats_as(&h, CRAWL_TOKEN, &r);
	ck_assert_uint_eq(st->n_namespaces, 0);
	ck_assert_ptr_null(st->url_store);
	nddd__v1__response__free_unpacked(r, NULL);

	/* An admin of the default namespace and crawl-b. */
	r = url_call_as(&h, OPS_TOKEN, NDDD__V1__REQUEST__OP_URL_SUBMIT, u, 3,
	    "crawl-b", 0, false);
	ck_assert_ptr_null(r->status);
	nddd__v1__response__free_unpacked(r, NULL);
	r = url_call_as(&h, OPS_TOKEN, NDDD__V1__REQUEST__OP_URL_DELETE, u, 1,
	    "", 0, false);
	ck_assert_ptr_null(r->status);
	nddd__v1__response__free_unpacked(r, NULL);
	harness_expect_refused(ns_call_as(&h, OPS_TOKEN, true, "crawl-a", 0),
	    NDDD__V1__CODE__PERMISSION_DENIED, "does not reach");
	r = ns_call_as(&h, OPS_TOKEN, true, "crawl-b", 0);
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->namespace_->urls, 3);
	nddd__v1__response__free_unpacked(r, NULL);
	st = stats_as(&h, OPS_TOKEN, &r);
	ck_assert_uint_eq(st->n_namespaces, 0);
	nddd__v1__response__free_unpacked(r, NULL);
	/* The unlimited admin sees them all. */
	st = stats_as(&h, ADMIN_TOKEN, &r);
	ck_assert_uint_ge(st->n_namespaces, 2);
	ck_assert_str_eq(st->namespaces[1]->name, "crawl-a");
	ck_assert_uint_eq(st->namespaces[1]->urls, 3);
	nddd__v1__response__free_unpacked(r, NULL);
	ck_assert_int_eq(harness_stop(&h), 0);

	/* A bad namespace in the file stops the start, saying where. */
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(ADMIN_TOKEN " admin namespaces=ok,not/ok\n", f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_ne(harness_start_failing(&h, &out), 0);
	ck_assert_msg(strstr(out, "tokens:1: bad namespaces=") != NULL, "%s",
	    out);
	free(out);
	free(path);
	harness_cleanup(&h);
	free_urls(u, 3);
}
END_TEST

Suite *namespaces_suite(void);

Suite *
namespaces_suite(void)
{
	Suite *s = suite_create("namespaces");
	TCase *tc = tcase_create("namespaces");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_namespaces_are_independent);
	tcase_add_test(tc, test_time_to_live);
	tcase_add_test(tc, test_drop_namespace);
	tcase_add_test(tc, test_drop_namespace_killed_midway);
	tcase_add_test(tc, test_tokens_limited_to_namespaces);
	tcase_add_test(tc, test_sweep_in_small_steps);
	suite_add_tcase(s, tc);
	return s;
}
