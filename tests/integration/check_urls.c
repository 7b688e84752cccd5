/*
 * Integration tests of the URL service: a real daemon on a loopback port,
 * a real data directory, the real client library.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

/* Runs op on urls and checks every result's code; returns the counts. */
static uint64_t *
urls_op(nddd_client *c, enum nddd_url_op op, const char *const *urls,
    size_t n, struct nddd_url_result *res)
{
	uint64_t *counts = calloc(n + 1, sizeof(*counts));

	ck_assert_msg(nddd_urls(c, op, urls, n, res, 100, 4, NULL, NULL) == 0,
	    "nddd_urls: %s", nddd_errstr(c));
	for (size_t i = 0; i < n; i++)
		counts[i] = res[i].count;
	return counts;
}

START_TEST(test_submit_check_delete)
{
	static const char *const urls[] = {
		"http://example.com/a",
		"HTTP://EXAMPLE.com:80/a#frag",	/* the same page */
		"http://example.com/b",
	};
	struct nddd_url_result res[3];
	struct harness h;
	nddd_client *c;
	uint64_t *n;

	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);

	n = urls_op(c, NDDD_URL_CHECK, urls, 3, res);
	ck_assert(n[0] == 0 && n[1] == 0 && n[2] == 0);
	free(n);
	n = urls_op(c, NDDD_URL_SUBMIT, urls, 3, res);
	/* New, then a duplicate of the canonical form, then new. */
	ck_assert_uint_eq(n[0], 1);
	ck_assert_uint_eq(n[1], 2);
	ck_assert_uint_eq(n[2], 1);
	free(n);
	n = urls_op(c, NDDD_URL_CHECK, urls, 3, res);
	ck_assert(n[0] == 2 && n[1] == 2 && n[2] == 1);
	free(n);
	n = urls_op(c, NDDD_URL_DELETE, urls, 3, res);
	/* Deleted with its count, then already gone, then deleted. */
	ck_assert(n[0] == 2 && n[1] == 0 && n[2] == 1);
	free(n);
	n = urls_op(c, NDDD_URL_CHECK, urls, 3, res);
	ck_assert(n[0] == 0 && n[1] == 0 && n[2] == 0);
	free(n);
	n = urls_op(c, NDDD_URL_SUBMIT, urls, 1, res);
	ck_assert_uint_eq(n[0], 1);	/* new again after the delete */
	free(n);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_batch_with_invalid_item)
{
	static const char *const urls[] = {
		"http://example.com/1", "not a url", "http://example.com/2",
		"mailto:someone@example.com", "http://example.com/3",
	};
	static const size_t lens[] = { 20, 9, 20, 26, 20 };
	const char nul_url[] = "http://example.com/\0hidden";
	const char *with_nul[] = { nul_url };
	const size_t nul_len[] = { sizeof(nul_url) - 1 };
	struct nddd_url_result res[5];
	struct nddd_reply *r;
	struct harness h;
	nddd_client *c;
	uint64_t id;

	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, urls, 5, res, 5, 1,
	    NULL, NULL), 0);
	for (int i = 0; i < 5; i += 2) {
		ck_assert_int_eq(res[i].code, NDDD_OK);
		ck_assert_uint_eq(res[i].count, 1);
	}
	ck_assert_int_eq(res[1].code, NDDD_INVALID_ARGUMENT);
	ck_assert_int_eq(res[3].code, NDDD_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(res[1].message);
	ck_assert(strlen(res[1].message) > 0);
	nddd_urls_results_free(res, 5);

	/* A NUL byte inside a URL is an invalid URL, not a shorter one. */
	ck_assert_int_eq(nddd_send_urls(c, NDDD_URL_SUBMIT, with_nul, nul_len,
	    1, &id), 0);
	ck_assert_int_eq(nddd_recv(c, &r), 0);
	ck_assert_int_eq(r->kind, NDDD_REPLY_URLS);
	ck_assert_int_eq(r->results[0].code, NDDD_INVALID_ARGUMENT);
	nddd_reply_free(r);

	/* The connection still works, and the valid items were stored. */
	ck_assert_int_eq(nddd_send_urls(c, NDDD_URL_CHECK, urls, lens, 5, &id),
	    0);
	ck_assert_int_eq(nddd_recv(c, &r), 0);
	ck_assert_uint_eq(r->id, id);
	ck_assert_uint_eq(r->nresults, 5);
	ck_assert_uint_eq(r->results[0].count, 1);
	ck_assert_uint_eq(r->results[4].count, 1);
	ck_assert_int_eq(r->results[3].code, NDDD_INVALID_ARGUMENT);
	nddd_reply_free(r);
	nddd_close(c);
	harness_cleanup(&h);
}
END_TEST

static char **
make_urls(size_t n, const char *tag)
{
	char **urls = malloc(n * sizeof(*urls));

	for (size_t i = 0; i < n; i++)
		ck_assert_int_ne(asprintf(&urls[i],
		    "http://host%zu.example/%s/%zu?q=%zu", i % 97, tag, i,
		    i * 31), -1);
	return urls;
}

static void
free_urls(char **urls, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(urls[i]);
	free(urls);
}

START_TEST(test_persistence_across_restart)
{
	const size_t n = 20000;
	char **urls = make_urls(n, "persist");
	struct nddd_url_result *res = calloc(n, sizeof(*res));
	struct nddd_stats st;
	struct harness h;
	nddd_client *c;
	uint64_t *counts;

	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);
	free(urls_op(c, NDDD_URL_SUBMIT, (const char *const *)urls, n, res));
	free(urls_op(c, NDDD_URL_SUBMIT, (const char *const *)urls, n / 2,
	    res));
	free(urls_op(c, NDDD_URL_DELETE, (const char *const *)urls + n - 100,
	    100, res));
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);

	harness_start(&h);
	c = harness_client(&h);
	counts = urls_op(c, NDDD_URL_CHECK, (const char *const *)urls, n, res);
	for (size_t i = 0; i < n; i++) {
		uint64_t want = i < n / 2 ? 2 : i < n - 100 ? 1 : 0;

		ck_assert_msg(counts[i] == want, "%s: count %llu, want %llu",
		    urls[i], (unsigned long long)counts[i],
		    (unsigned long long)want);
	}
	free(counts);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_uint_eq(st.urls, n - 100);
	/* The rebuilt filter answers unseen URLs without the store. */
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	free(res);
	free_urls(urls, n);
	harness_cleanup(&h);
}
END_TEST

/* A client streaming submits and recording which were acknowledged. */
struct streamer {
	const char *address;
	char **urls;
	size_t n;
	bool *acked;
	size_t nacked;
	enum nddd_durability durability;
};

static void *
stream_submits(void *arg)
{
	struct streamer *s = arg;
	struct { uint64_t id; size_t base; } fl[16];
	size_t sent = 0, nfl = 0;
	char *err;
	nddd_client *c = nddd_connect(s->address, 10000, &err);

	if (c == NULL)
		return NULL;
	nddd_set_durability(c, s->durability);
	for (;;) {
		struct nddd_reply *r;
		size_t k;

		while (nfl < 16 && sent < s->n) {
			if (nddd_send_urls(c, NDDD_URL_SUBMIT,
			    (const char *const *)s->urls + sent, NULL, 50,
			    &fl[nfl].id) == -1)
				goto out;
			fl[nfl++].base = sent;
			sent += 50;
		}
		if (nfl == 0 || nddd_recv(c, &r) == -1)
			break;
		for (k = 0; k < nfl && fl[k].id != r->id; k++)
			;
		if (k < nfl && r->kind == NDDD_REPLY_URLS) {
			for (size_t i = 0; i < r->nresults; i++) {
				if (r->results[i].code == NDDD_OK) {
					s->acked[fl[k].base + i] = true;
					__atomic_fetch_add(&s->nacked, 1,
					    __ATOMIC_RELEASE);
				}
			}
			fl[k] = fl[--nfl];
		}
		nddd_reply_free(r);
	}
out:
	nddd_close(c);
	return NULL;
}

/*
 * kill -9 in the middle of a stream of submits, durable or relaxed: every
 * acknowledged one is there after the restart.  Relaxed submits are never
 * fdatasync'ed here (a sync interval of an hour): what keeps them is that
 * each was written to the kernel before its reply.
 */
static void
kill9_stream(enum nddd_durability durability, uint64_t seed)
{
	const size_t n = 400000;
	char **urls = make_urls(n, "kill9");
	struct streamer s = { .urls = urls, .n = n, .durability = durability };
	struct nddd_url_result *res = calloc(n, sizeof(*res));
	uint64_t *counts;
	struct harness h;
	pthread_t th;
	nddd_client *c;
	size_t present = 0, target;

	s.acked = calloc(n, sizeof(bool));
	harness_init(&h, "[store]\nrelaxed_sync_interval = 1h\n");
	harness_start(&h);
	s.address = h.address;
	pthread_create(&th, NULL, stream_submits, &s);
	/* Kill at a random moment while the stream runs: once a random share
	 * of it (10% to 90%) has been acknowledged. */
	target = n / 10 + tu_rand_below(&seed, n * 8 / 10);
	while (__atomic_load_n(&s.nacked, __ATOMIC_ACQUIRE) < target)
		usleep(1000);
	harness_kill(&h);
	pthread_join(th, NULL);
	ck_assert_msg(s.nacked > 0 && s.nacked < n,
	    "the kill should land mid-stream (%zu acknowledged)", s.nacked);

	harness_start(&h);
	c = harness_client(&h);
	counts = urls_op(c, NDDD_URL_CHECK, (const char *const *)urls, n, res);
	for (size_t i = 0; i < n; i++) {
		if (s.acked[i])
			ck_assert_msg(counts[i] >= 1,
			    "acknowledged %s lost after kill -9", urls[i]);
		present += counts[i] >= 1;
	}
	ck_assert_uint_ge(present, s.nacked);
	free(counts);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	free(s.acked);
	free(res);
	free_urls(urls, n);
	harness_cleanup(&h);
}

/*
 * [urls] simd: URLs submitted by a daemon digesting with one number of
 * lanes (16, 8, or one at a time) are the same keys to a daemon choosing
 * its CPU's best, URLs of one to five MD5 blocks mixed in each batch.
 * A level the CPU lacks is refused at start.
 */
START_TEST(test_digest_lanes_agree)
{
	static const char *const level[] = { "avx512", "avx2", "scalar" };
	const size_t n = 3000;
	char **urls = malloc(n * sizeof(*urls)), conf[64];
	struct nddd_url_result *res = calloc(n, sizeof(*res));
	struct nddd_stats st;
	struct harness h;
	nddd_client *c;
	uint64_t *counts;

	for (size_t i = 0; i < n; i++)
		ck_assert_int_ne(asprintf(&urls[i], "http://h%zu.example/%zu/%.*s",
		    i % 13, i, (int)(i * 37 % 280),
		    "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwx"
		    "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwx"
		    "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwx"
		    "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwx"
		    "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwx"),
		    -1);
	harness_init(&h, NULL);
	snprintf(conf, sizeof(conf), "[urls]\nsimd = %s\n", level[_i]);
	harness_add_conf(&h, conf);
	__builtin_cpu_init();
	if ((_i == 0 && !__builtin_cpu_supports("avx512f")) ||
	    (_i == 1 && !__builtin_cpu_supports("avx2"))) {
		char *out = NULL;

		ck_assert_int_ne(harness_start_failing(&h, &out), 0);
		ck_assert_msg(strstr(out, "this CPU has no") != NULL, "%s", out);
		free(out);
		goto done;
	}
	harness_start(&h);
	c = harness_client(&h);
	free(urls_op(c, NDDD_URL_SUBMIT, (const char *const *)urls, n / 2,
	    res));
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);

	harness_add_conf(&h, "[urls]\nsimd = auto\n");
	harness_start(&h);
	c = harness_client(&h);
	counts = urls_op(c, NDDD_URL_CHECK, (const char *const *)urls, n, res);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(counts[i] == (i < n / 2), "%s (%s): count %llu",
		    urls[i], level[_i], (unsigned long long)counts[i]);
	free(counts);
	counts = urls_op(c, NDDD_URL_SUBMIT, (const char *const *)urls, n, res);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(counts[i], i < n / 2 ? 2 : 1);
	free(counts);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_uint_eq(st.urls, n);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
done:
	harness_cleanup(&h);
	free(res);
	free_urls(urls, n);
}
END_TEST

START_TEST(test_kill9_loses_no_acknowledged_submit)
{
	kill9_stream(NDDD_DURABLE, 42 + (uint64_t)_i);
}
END_TEST

START_TEST(test_kill9_loses_no_relaxed_submit)
{
	kill9_stream(NDDD_RELAXED, 4242 + (uint64_t)_i);
}
END_TEST

/*
 * Resubmitting the same URLs over and over leaves a dead record for each
 * resubmit: merges must keep them bounded, holding writers back when they
 * fall behind (stats show it), and the store must stay exact.
 */
START_TEST(test_merges_bound_dead_records)
{
	const size_t n = 2000;
	char **urls = make_urls(n, "dead");
	struct nddd_url_result *res = calloc(n, sizeof(*res));
	struct nddd_stats st;
	struct nddd_verify v;
	struct harness h;
	uint64_t most_dead = 0;
	nddd_client *c;

	harness_init(&h, "[server]\nmax_batch = 100\n[urls]\n"
	    "journal_entries = 200\nsegment_records = 32\n");
	harness_start(&h);
	c = harness_client(&h);
	for (int round = 1; round <= 20; round++) {
		ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT,
		    (const char *const *)urls, n, res, 100, 4, NULL, NULL), 0);
		for (size_t i = 0; i < n; i++)
			ck_assert_uint_eq(res[i].count, (uint64_t)round);
		nddd_urls_results_free(res, n);
		ck_assert_int_eq(nddd_stats(c, &st), 0);
		if (st.url_store.dead_records > most_dead)
			most_dead = st.url_store.dead_records;
	}
	printf("urls: 20 rounds of 2000 resubmits: %llu merges (%llu held "
	    "writers back), at most %llu dead records, %llu records for "
	    "%llu URLs at the end\n",
	    (unsigned long long)st.url_store.merges,
	    (unsigned long long)st.url_store.merges_forced,
	    (unsigned long long)most_dead,
	    (unsigned long long)st.url_store.records,
	    (unsigned long long)st.urls);
	/* 38,000 records died: a store that kept them would hold 40,000. */
	ck_assert_uint_gt(st.url_store.merges_forced, 0);
	ck_assert_uint_lt(most_dead, n);
	ck_assert_uint_lt(st.url_store.records, 2 * n);
	ck_assert_int_eq(nddd_verify(c, &v), 0);
	ck_assert_msg(v.consistent, "%s", v.detail);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	free(res);
	free_urls(urls, n);
}
END_TEST

START_TEST(test_stats)
{
	static const char *const urls[] = { "http://a.example/", 
	    "http://b.example/", "http://c.example/" };
	struct nddd_url_result res[3];
	struct nddd_stats st;
	struct harness h;
	nddd_client *c;

	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);
	free(urls_op(c, NDDD_URL_SUBMIT, urls, 3, res));
	free(urls_op(c, NDDD_URL_SUBMIT, urls, 1, res));
	free(urls_op(c, NDDD_URL_DELETE, urls + 2, 1, res));
	free(urls_op(c, NDDD_URL_CHECK, urls, 3, res));
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_uint_eq(st.urls, 2);
	ck_assert_uint_eq(st.submits_new, 3);
	ck_assert_uint_eq(st.submits_duplicate, 1);
	ck_assert_uint_eq(st.deletes, 1);
	ck_assert_uint_eq(st.checks, 3);
	/* c was deleted: its counters are zero again (k distinct indices
	 * per URL; two URLs stored). */
	ck_assert_uint_le(st.cbf_nonzero, 16);
	ck_assert_uint_ge(st.cbf_nonzero, 8);
	ck_assert_uint_eq(st.cbf_k, 8);
	ck_assert_uint_eq(st.cbf_counters, 2000000);
	ck_assert_uint_eq(st.connections, 1);
	ck_assert_str_ne(st.version, "");
	nddd_close(c);
	harness_cleanup(&h);
}
END_TEST

/* Sets c's URL options, failing the test if they are refused. */
static void
set_opts(nddd_client *c, const char *ns, uint64_t ttl_seconds,
    int with_times)
{
	struct nddd_url_opts o = {
		.ns = ns, .ttl_seconds = ttl_seconds, .with_times = with_times,
	};

	ck_assert_msg(nddd_set_url_opts(c, &o) == 0, "nddd_set_url_opts: %s",
	    nddd_errstr(c));
}

/* One URL's result of op, with c's options. */
static struct nddd_url_result
url_op(nddd_client *c, enum nddd_url_op op, const char *url)
{
	struct nddd_url_result res;

	ck_assert_msg(nddd_urls(c, op, &url, 1, &res, 1, 1, NULL, NULL) == 0,
	    "nddd_urls: %s", nddd_errstr(c));
	ck_assert_int_eq(res.code, NDDD_OK);
	return res;
}

/* The reply to request id, which must be of kind. */
static struct nddd_reply *
reply_of(nddd_client *c, uint64_t id, enum nddd_reply_kind kind)
{
	struct nddd_reply *r = nddd_call(c, id);

	ck_assert_msg(r != NULL, "nddd_call: %s", nddd_errstr(c));
	ck_assert_msg(r->kind == kind, "reply of kind %d (%s: %s), not %d",
	    r->kind, nddd_code_name(r->code), r->message ? r->message : "",
	    kind);
	return r;
}

/* The namespace name in a stats reply, or NULL. */
static const struct nddd_namespace *
stats_namespace(const struct nddd_reply *r, const char *name)
{
	for (size_t i = 0; i < r->nnamespaces; i++)
		if (strcmp(r->namespaces[i].name, name) == 0)
			return &r->namespaces[i];
	return NULL;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

START_TEST(test_namespaces_are_independent_sets)
{
	static const char *const url = "http://ns.example/a";
	const struct nddd_namespace *ns;
	struct nddd_url_opts bad = { .ns = "no spaces" };
	struct nddd_reply *r;
	struct harness h;
	char *err, longest[NDDD_NAMESPACE_MAX + 2];
	nddd_client *c;
	uint64_t id;

	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_uint_eq(url_op(c, NDDD_URL_SUBMIT, url).count, 1);
	set_opts(c, "crawl-1", 0, 0);
	ck_assert_uint_eq(url_op(c, NDDD_URL_CHECK, url).count, 0);
	ck_assert_uint_eq(url_op(c, NDDD_URL_SUBMIT, url).count, 1);
	ck_assert_uint_eq(url_op(c, NDDD_URL_SUBMIT, url).count, 2);
	ck_assert_uint_eq(url_op(c, NDDD_URL_DELETE, url).count, 2);
	ck_assert_uint_eq(url_op(c, NDDD_URL_SUBMIT, url).count, 1);

	/* Names the daemon would refuse are refused here, the options and
	 * the connection kept. */
	ck_assert_int_eq(nddd_set_url_opts(c, &bad), -1);
	ck_assert_ptr_nonnull(strstr(nddd_errstr(c), "namespace"));
	memset(longest, 'x', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	bad.ns = longest;
	ck_assert_int_eq(nddd_set_url_opts(c, &bad), -1);
	longest[NDDD_NAMESPACE_MAX] = '\0';
	ck_assert(nddd_namespace_valid(longest));
	ck_assert(nddd_namespace_valid("A.b_c-9"));
	ck_assert(nddd_namespace_valid(""));
	ck_assert(!nddd_namespace_valid("caf\xc3\xa9"));
	ck_assert(!nddd_namespace_valid("a/b"));
	bad.ns = NULL;
	bad.ttl_seconds = NDDD_TTL_MAX + 1ull;
	ck_assert_int_eq(nddd_set_url_opts(c, &bad), -1);
	ck_assert_uint_eq(url_op(c, NDDD_URL_CHECK, url).count, 1);

	/* Digests go to the namespace too. */
	ck_assert_int_eq(nddd_use_digests(c, 1, &err), 0);
	set_opts(c, "crawl-2", 0, 0);
	ck_assert_uint_eq(url_op(c, NDDD_URL_SUBMIT, url).count, 1);
	ck_assert_uint_eq(url_op(c, NDDD_URL_SUBMIT, url).count, 2);
	ck_assert_int_eq(nddd_use_digests(c, 0, &err), 0);
	ck_assert_uint_eq(url_op(c, NDDD_URL_CHECK, url).count, 2);

	/* Back to the default namespace, untouched by the others. */
	ck_assert_int_eq(nddd_set_url_opts(c, NULL), 0);
	ck_assert_uint_eq(url_op(c, NDDD_URL_CHECK, url).count, 1);

	ck_assert_int_eq(nddd_send_stats(c, &id), 0);
	r = reply_of(c, id, NDDD_REPLY_STATS);
	ck_assert_uint_ge(r->nnamespaces, 3);
	ck_assert_str_eq(r->namespaces[0].name, "");
	ck_assert_uint_eq(r->namespaces[0].urls, 1);
	ck_assert_ptr_nonnull(ns = stats_namespace(r, "crawl-1"));
	ck_assert_uint_eq(ns->urls, 1);
	ck_assert_ptr_nonnull(ns = stats_namespace(r, "crawl-2"));
	ck_assert_uint_eq(ns->urls, 1);
	ck_assert_uint_eq(r->stats.urls, 3);
	ck_assert_uint_eq(r->stats.urls_dropping, 0);
	ck_assert_uint_eq(r->stats.urls_expired, 0);
	nddd_reply_free(r);
	nddd_close(c);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_ttl_and_times)
{
	static const char *const url = "http://ttl.example/a";
	struct nddd_url_result first, res;
	struct harness h;
	nddd_client *c;
	uint64_t before, deadline;

	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);

	/* Without with_times, no times. */
	res = url_op(c, NDDD_URL_SUBMIT, url);
	ck_assert(res.first_seen_ms == 0 && res.last_seen_ms == 0 &&
	    res.expires_ms == 0);
	set_opts(c, NULL, 0, 1);
	res = url_op(c, NDDD_URL_CHECK, url);
	ck_assert_uint_ne(res.first_seen_ms, 0);
	ck_assert_uint_eq(res.expires_ms, 0);	/* no time to live */
	res = url_op(c, NDDD_URL_CHECK, "http://ttl.example/never");
	ck_assert(res.count == 0 && res.first_seen_ms == 0 &&
	    res.last_seen_ms == 0 && res.expires_ms == 0);

	before = now_ms();
	set_opts(c, "short", 2, 1);
	first = url_op(c, NDDD_URL_SUBMIT, url);
	ck_assert_uint_eq(first.count, 1);
	/* The daemon's clock is this machine's. */
	ck_assert_uint_ge(first.first_seen_ms + 1000, before);
	ck_assert_uint_le(first.first_seen_ms, now_ms() + 1000);
	ck_assert_uint_eq(first.last_seen_ms, first.first_seen_ms);
	ck_assert_uint_ge(first.expires_ms, first.first_seen_ms + 2000);
	ck_assert_uint_le(first.expires_ms, first.first_seen_ms + 3000);

	/* A duplicate submit, with a time to live of its own, does not
	 * postpone the end. */
	usleep(20 * 1000);
	set_opts(c, "short", 1000, 1);
	res = url_op(c, NDDD_URL_SUBMIT, url);
	ck_assert_uint_eq(res.count, 2);
	ck_assert_uint_eq(res.first_seen_ms, first.first_seen_ms);
	ck_assert_uint_gt(res.last_seen_ms, first.first_seen_ms);
	ck_assert_uint_eq(res.expires_ms, first.expires_ms);

	/* Past its time: unseen, with the times it had until the daemon
	 * reclaims the record in the background (an idle one at once), then
	 * as never recorded. */
	set_opts(c, "short", 0, 1);
	deadline = first.expires_ms + 5000;
	do {
		usleep(100 * 1000);
		res = url_op(c, NDDD_URL_CHECK, url);
	} while (res.count != 0 && now_ms() < deadline);
	ck_assert_uint_eq(res.count, 0);
	ck_assert_uint_ge(now_ms() + 1000, first.expires_ms);
	if (res.first_seen_ms != 0) {
		ck_assert_uint_eq(res.first_seen_ms, first.first_seen_ms);
		ck_assert_uint_eq(res.expires_ms, first.expires_ms);
	} else
		ck_assert(res.last_seen_ms == 0 && res.expires_ms == 0);

	/* A submit records it as new again, with times of its own. */
	res = url_op(c, NDDD_URL_SUBMIT, url);
	ck_assert_uint_eq(res.count, 1);
	ck_assert_uint_gt(res.first_seen_ms, first.first_seen_ms);
	ck_assert_uint_eq(res.expires_ms, 0);	/* none asked, no default */
	nddd_close(c);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_namespace_set_and_drop)
{
	static const char *const urls[] = { "http://drop.example/a",
	    "http://drop.example/b" };
	struct nddd_url_result res[2], one;
	struct nddd_reply *r;
	struct harness h;
	nddd_client *c;
	uint64_t id;

	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);

	/* A default time to live, for submits without one. */
	ck_assert_int_eq(nddd_send_namespace_set(c, "daily", 86400, &id), 0);
	r = reply_of(c, id, NDDD_REPLY_NAMESPACE);
	ck_assert_uint_eq(r->nnamespaces, 1);
	ck_assert_str_eq(r->namespaces[0].name, "daily");
	ck_assert_uint_eq(r->namespaces[0].default_ttl_seconds, 86400);
	ck_assert_uint_eq(r->namespaces[0].urls, 0);
	nddd_reply_free(r);
	set_opts(c, "daily", 0, 1);
	free(urls_op(c, NDDD_URL_SUBMIT, urls, 2, res));
	ck_assert_uint_eq(res[0].expires_ms, res[0].first_seen_ms +
	    86400 * 1000ull);
	/* One of its own wins. */
	set_opts(c, "daily", 60, 1);
	one = url_op(c, NDDD_URL_SUBMIT, "http://drop.example/c");
	ck_assert_uint_eq(one.expires_ms, one.first_seen_ms + 60 * 1000ull);

	ck_assert_int_eq(nddd_send_stats(c, &id), 0);
	r = reply_of(c, id, NDDD_REPLY_STATS);
	ck_assert_ptr_nonnull(stats_namespace(r, "daily"));
	ck_assert_uint_eq(stats_namespace(r, "daily")->urls, 3);
	ck_assert_uint_eq(stats_namespace(r, "daily")->default_ttl_seconds,
	    86400);
	nddd_reply_free(r);

	/* Dropped: the name is free at once, the URLs go. */
	ck_assert_int_eq(nddd_send_namespace_drop(c, "daily", &id), 0);
	r = reply_of(c, id, NDDD_REPLY_NAMESPACE);
	ck_assert_str_eq(r->namespaces[0].name, "daily");
	ck_assert_uint_eq(r->namespaces[0].urls, 3);
	nddd_reply_free(r);
	set_opts(c, "daily", 0, 0);
	free(urls_op(c, NDDD_URL_CHECK, urls, 2, res));
	ck_assert(res[0].count == 0 && res[1].count == 0);
	ck_assert_uint_eq(url_op(c, NDDD_URL_SUBMIT, urls[0]).count, 1);

	/* Unknown, the default one, a bad name. */
	ck_assert_int_eq(nddd_send_namespace_drop(c, "nothing", &id), 0);
	r = reply_of(c, id, NDDD_REPLY_ERROR);
	ck_assert_int_eq(r->code, NDDD_NOT_FOUND);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_send_namespace_drop(c, "", &id), 0);
	r = reply_of(c, id, NDDD_REPLY_ERROR);
	ck_assert_int_eq(r->code, NDDD_INVALID_ARGUMENT);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_send_namespace_set(c, "a b", 0, &id), -1);
	ck_assert_int_eq(nddd_send_namespace_set(c, "a", NDDD_TTL_MAX + 1ull,
	    &id), -1);
	ck_assert_uint_eq(nddd_outstanding(c), 0);

	/* The default namespace has settings too. */
	ck_assert_int_eq(nddd_send_namespace_set(c, "", 3600, &id), 0);
	r = reply_of(c, id, NDDD_REPLY_NAMESPACE);
	ck_assert_str_eq(r->namespaces[0].name, "");
	ck_assert_uint_eq(r->namespaces[0].default_ttl_seconds, 3600);
	nddd_reply_free(r);
	nddd_close(c);
	harness_cleanup(&h);
}
END_TEST

Suite *urls_suite(void);

Suite *
urls_suite(void)
{
	Suite *s = suite_create("urls");
	TCase *tc = tcase_create("urls");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_submit_check_delete);
	tcase_add_test(tc, test_batch_with_invalid_item);
	tcase_add_test(tc, test_persistence_across_restart);
	tcase_add_loop_test(tc, test_digest_lanes_agree, 0, 3);
	tcase_add_loop_test(tc, test_kill9_loses_no_acknowledged_submit, 0, 3);
	tcase_add_loop_test(tc, test_kill9_loses_no_relaxed_submit, 0, 3);
	tcase_add_test(tc, test_merges_bound_dead_records);
	tcase_add_test(tc, test_stats);
	suite_add_tcase(s, tc);
	tc = tcase_create("namespaces");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_namespaces_are_independent_sets);
	tcase_add_test(tc, test_ttl_and_times);
	tcase_add_test(tc, test_namespace_set_and_drop);
	suite_add_tcase(s, tc);
	return s;
}
