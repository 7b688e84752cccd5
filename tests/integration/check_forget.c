/*
 * url_forget against a real daemon, in protobuf frames: a host's URLs go,
 * whatever their scheme or port, with its subdomains when asked, never a
 * look-alike host's nor another namespace's; a prefix takes exactly the
 * URLs that begin with it; the filter's counters stay exact (verify); the
 * texts a kill -9 leaves only in the journal are found after the restart,
 * and what a forget answered stays forgotten; bad input is
 * INVALID_ARGUMENT, a daemon without the host index FAILED_PRECONDITION,
 * and only an admin of the namespace may forget.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testutil.h"

/* The URLs of a table, as a batch wants them. */
static ProtobufCBinaryData *
urls_of(const char *const *list, size_t n)
{
	ProtobufCBinaryData *u = calloc(n, sizeof(*u));

	ck_assert_ptr_nonnull(u);
	for (size_t i = 0; i < n; i++) {
		u[i].data = (uint8_t *)list[i];
		u[i].len = strlen(list[i]);
	}
	return u;
}

/* Submits (or checks) urls in namespace ns; the counts into counts. */
static void
url_batch(const struct harness *h, Nddd__V1__Request__OpCase op,
    const char *const *list, size_t n, const char *ns, uint64_t *counts)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__UrlBatch b = NDDD__V1__URL_BATCH__INIT;
	Nddd__V1__Response *r;

	b.n_urls = n;
	b.urls = urls_of(list, n);
	b.namespace_ = (char *)ns;
	req.id = 1;
	req.op_case = op;
	if (op == NDDD__V1__REQUEST__OP_URL_SUBMIT)
		req.url_submit = &b;
	else
		req.url_check = &b;
	r = harness_raw_call(h, &req);
	ck_assert_msg(r->status == NULL, "refused: %s",
	    r->status ? r->status->message : "");
	ck_assert_uint_eq(r->urls->n_counts, n);
	ck_assert_uint_eq(r->urls->n_errors, 0);
	if (counts != NULL)
		memcpy(counts, r->urls->counts, n * sizeof(*counts));
	nddd__v1__response__free_unpacked(r, NULL);
	free(b.urls);
}

static void
submit(const struct harness *h, const char *const *list, size_t n,
    const char *ns)
{
	url_batch(h, NDDD__V1__REQUEST__OP_URL_SUBMIT, list, n, ns, NULL);
}

/* Each URL of list must be seen in ns (seen true) or not. */
static void
expect_seen(const struct harness *h, const char *const *list, size_t n,
    const char *ns, bool seen, const char *when)
{
	uint64_t *c = calloc(n, sizeof(*c));

	url_batch(h, NDDD__V1__REQUEST__OP_URL_CHECK, list, n, ns, c);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg((c[i] > 0) == seen, "%s: %s is %s in \"%s\"",
		    when, list[i], c[i] > 0 ? "seen" : "unseen", ns);
	free(c);
}

static Nddd__V1__Response *
forget_as(const struct harness *h, const char *token, const char *ns,
    const char *host, bool subdomains, const char *prefix)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__UrlForget f = NDDD__V1__URL_FORGET__INIT;

	req.token = (char *)(token != NULL ? token : "");
	req.id = 7;
	req.op_case = NDDD__V1__REQUEST__OP_URL_FORGET;
	req.url_forget = &f;
	f.namespace_ = (char *)(ns != NULL ? ns : "");
	f.host = (char *)(host != NULL ? host : "");
	f.subdomains = subdomains;
	if (prefix != NULL) {
		f.prefix.data = (uint8_t *)prefix;
		f.prefix.len = strlen(prefix);
	}
	return harness_raw_call(h, &req);
}

/* A forget that must be answered: how many it forgot. */
static uint64_t
forget(const struct harness *h, const char *ns, const char *host,
    bool subdomains, const char *prefix)
{
	Nddd__V1__Response *r = forget_as(h, NULL, ns, host, subdomains,
	    prefix);
	uint64_t n;

	ck_assert_msg(r->status == NULL, "refused: %s",
	    r->status ? r->status->message : "");
	ck_assert_int_eq(r->result_case, NDDD__V1__RESPONSE__RESULT_FORGET);
	/* Every URL of this store went through the index. */
	ck_assert(r->forget->complete);
	n = r->forget->forgotten;
	nddd__v1__response__free_unpacked(r, NULL);
	return n;
}

#define N(a)	(sizeof(a) / sizeof((a)[0]))

static const char *const host_urls[] = {
	"http://example.com/x", "https://example.com/y",
	"http://example.com:8080/z", "http://user@example.com/u",
};
static const char *const sub_urls[] = {
	"http://www.example.com/", "https://a.b.example.com/deep/page?q=1",
};
static const char *const lookalike_urls[] = {
	"http://badexample.com/x", "http://example.com.evil.org/x",
	"http://example.org/x", "http://examplexcom/x", "http://com/x",
};

START_TEST(test_forget_host_and_subdomains)
{
	struct harness h;

	harness_init(&h, NULL);
	harness_start(&h);
	submit(&h, host_urls, N(host_urls), "crawl-1");
	submit(&h, sub_urls, N(sub_urls), "crawl-1");
	submit(&h, lookalike_urls, N(lookalike_urls), "crawl-1");
	submit(&h, host_urls, N(host_urls), "");

	/* The host alone: every scheme, port and user, no subdomain. */
	ck_assert_uint_eq(forget(&h, "crawl-1", "example.com", false, NULL),
	    N(host_urls));
	expect_seen(&h, host_urls, N(host_urls), "crawl-1", false,
	    "host forgotten");
	expect_seen(&h, sub_urls, N(sub_urls), "crawl-1", true,
	    "subdomains kept");
	expect_seen(&h, lookalike_urls, N(lookalike_urls), "crawl-1", true,
	    "look-alikes kept");
	expect_seen(&h, host_urls, N(host_urls), "", true,
	    "the default namespace kept");
	harness_assert_verified(&h, N(sub_urls) + N(lookalike_urls) +
	    N(host_urls), "after the host");

	/* With subdomains (and a host in capitals, as users type it). */
	ck_assert_uint_eq(forget(&h, "crawl-1", "Example.COM", true, NULL),
	    N(sub_urls));
	expect_seen(&h, sub_urls, N(sub_urls), "crawl-1", false,
	    "subdomains forgotten");
	expect_seen(&h, lookalike_urls, N(lookalike_urls), "crawl-1", true,
	    "look-alikes still kept");
	expect_seen(&h, host_urls, N(host_urls), "", true,
	    "the default namespace still kept");
	harness_assert_verified(&h, N(lookalike_urls) + N(host_urls),
	    "after the subdomains");

	/* Nothing is left to forget; a namespace nobody made has nothing. */
	ck_assert_uint_eq(forget(&h, "crawl-1", "example.com", true, NULL), 0);
	ck_assert_uint_eq(forget(&h, "no-such-crawl", "example.com", true,
	    NULL), 0);

	/* A forgotten URL submitted again is new, and found again. */
	submit(&h, host_urls, 1, "crawl-1");
	ck_assert_uint_eq(forget(&h, "crawl-1", "example.com", false, NULL),
	    1);
	/* The default namespace's, by its own forget. */
	ck_assert_uint_eq(forget(&h, "", "example.com", false, NULL),
	    N(host_urls));
	harness_assert_verified(&h, N(lookalike_urls), "at the end");
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_forget_prefix)
{
	static const char *const under[] = {
		"http://example.com/blog/", "http://example.com/blog/a",
		"http://example.com/blog/a/b?c=d",
		/* Canonicalized as a submit would: the same URL. */
		"HTTP://EXAMPLE.com:80/blog/./x",
	};
	static const char *const beside[] = {
		"http://example.com/blog", "http://example.com/blog2",
		"https://example.com/blog/x", "http://www.example.com/blog/x",
		"http://example.com:8080/blog/x", "http://example.com/",
	};
	struct harness h;

	harness_init(&h, NULL);
	harness_start(&h);
	submit(&h, under, N(under), "crawl-1");
	submit(&h, beside, N(beside), "crawl-1");
	submit(&h, under, N(under), "crawl-2");
	ck_assert_uint_eq(forget(&h, "crawl-1", NULL, false,
	    "http://Example.com/blog/"), N(under));
	expect_seen(&h, under, N(under), "crawl-1", false, "under the prefix");
	expect_seen(&h, beside, N(beside), "crawl-1", true, "beside it");
	expect_seen(&h, under, N(under), "crawl-2", true, "another crawl");
	ck_assert_uint_eq(forget(&h, "crawl-1", NULL, false,
	    "http://example.com/blog/"), 0);
	/* A prefix that is a whole URL takes it and what extends it. */
	ck_assert_uint_eq(forget(&h, "crawl-1", NULL, false,
	    "http://example.com/blog"), 2);
	harness_assert_verified(&h, N(beside) - 2 + N(under),
	    "after the prefixes");
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
}
END_TEST

/* The URLs http://HOST/page/0 .. n-1, allocated. */
static char **
pages(const char *host, size_t n)
{
	char **u = calloc(n, sizeof(*u));

	ck_assert_ptr_nonnull(u);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_ne(asprintf(&u[i], "http://%s/page/%zu", host,
		    i), -1);
	return u;
}

static void
free_pages(char **u, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(u[i]);
	free(u);
}

START_TEST(test_forget_after_kill)
{
	struct harness h;
	char **a = pages("a.example", 300), **b = pages("b.example", 300);

	harness_init(&h, NULL);
	harness_start(&h);
	/* Acknowledged, durable, and only in the journal when killed. */
	submit(&h, (const char *const *)a, 300, "crawl-1");
	submit(&h, (const char *const *)b, 300, "crawl-1");
	harness_kill(&h);
	harness_start(&h);
	ck_assert_uint_eq(forget(&h, "crawl-1", "a.example", false, NULL),
	    300);
	/* What a forget answered survives the next kill. */
	harness_kill(&h);
	harness_start(&h);
	expect_seen(&h, (const char *const *)a, 300, "crawl-1", false,
	    "forgotten before the kill");
	expect_seen(&h, (const char *const *)b, 300, "crawl-1", true,
	    "the other host");
	ck_assert_uint_eq(forget(&h, "crawl-1", "a.example", false, NULL), 0);
	ck_assert_uint_eq(forget(&h, "crawl-1", "b.example", false, NULL),
	    300);
	harness_assert_verified(&h, 0, "both hosts forgotten");
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	free_pages(a, 300);
	free_pages(b, 300);
}
END_TEST

/* Many steps of a forget (its reads are 4,096 entries), with flushes
 * between the submits: the texts come from the store and the journal. */
START_TEST(test_forget_large_host)
{
	struct harness h;
	size_t n = 9000;
	char **a = pages("big.example", n), **b = pages("big.example.net", 50);

	harness_init(&h,
	    "[urls]\njournal_entries = 1000\n[server]\nmax_batch = 500\n");
	harness_start(&h);
	for (size_t at = 0; at < n; at += 500)
		submit(&h, (const char *const *)a + at, 500, "crawl-1");
	submit(&h, (const char *const *)b, 50, "crawl-1");
	ck_assert_uint_eq(forget(&h, "crawl-1", "big.example", true, NULL), n);
	for (size_t at = 0; at < n; at += 500)
		expect_seen(&h, (const char *const *)a + at, 500, "crawl-1",
		    false, "the big host");
	expect_seen(&h, (const char *const *)b, 50, "crawl-1", true,
	    "a host that ends alike");
	harness_assert_verified(&h, 50, "after the big host");
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	free_pages(a, n);
	free_pages(b, 50);
}
END_TEST

/* A URL the index cannot hold makes every later answer incomplete. */
START_TEST(test_forget_unindexable_url)
{
	struct harness h;
	char host[320], url[400];
	const char *list[] = { url };
	Nddd__V1__Response *r;

	memset(host, 'a', 300);
	strcpy(host + 300, ".example");
	snprintf(url, sizeof(url), "http://%s/x", host);
	harness_init(&h, NULL);
	harness_start(&h);
	ck_assert_uint_eq(forget(&h, "", "example.com", false, NULL), 0);
	submit(&h, list, 1, "");
	r = forget_as(&h, NULL, "", "example.com", false, NULL);
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->forget->forgotten, 0);
	ck_assert(!r->forget->complete);
	nddd__v1__response__free_unpacked(r, NULL);
	/* And after a restart: the store says so. */
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_start(&h);
	r = forget_as(&h, NULL, "", "example.com", false, NULL);
	ck_assert_ptr_null(r->status);
	ck_assert(!r->forget->complete);
	nddd__v1__response__free_unpacked(r, NULL);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
}
END_TEST

#define ADMIN_TOKEN	"admin-token-0123456789"
#define WRITE_TOKEN	"write-token-0123456789"
#define CRAWL_ADMIN	"crawl-admin-0123456789"

START_TEST(test_forget_refusals)
{
	static const char *const bad_hosts[] = {
		"ex ample.com", "example.com/x", "user@example.com",
		"example.com:80", "http://example.com", "ex\tample.com",
		"caf\xc3\xa9.example",
	};
	struct harness h;
	char *path, conf[512], longhost[300], longprefix[600];
	FILE *f;

	harness_init(&h, NULL);
	ck_assert_int_ne(asprintf(&path, "%s/tokens", h.dir), -1);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(ADMIN_TOKEN " admin\n" WRITE_TOKEN " write\n"
	    CRAWL_ADMIN " admin namespaces=crawl-1\n", f);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(conf, sizeof(conf), "[auth]\ntokens_file = %s\n", path);
	harness_add_conf(&h, conf);
	harness_start(&h);

	harness_expect_refused(forget_as(&h, ADMIN_TOKEN, "crawl-1", NULL,
	    false, NULL), NDDD__V1__CODE__INVALID_ARGUMENT, "one of them");
	harness_expect_refused(forget_as(&h, ADMIN_TOKEN, "crawl-1",
	    "example.com", false, "http://example.com/"),
	    NDDD__V1__CODE__INVALID_ARGUMENT, "one of them");
	harness_expect_refused(forget_as(&h, ADMIN_TOKEN, "crawl-1", NULL, true,
	    "http://example.com/"), NDDD__V1__CODE__INVALID_ARGUMENT,
	    "subdomains");
	for (size_t i = 0; i < N(bad_hosts); i++)
		harness_expect_refused(forget_as(&h, ADMIN_TOKEN, "crawl-1",
		    bad_hosts[i], false, NULL),
		    NDDD__V1__CODE__INVALID_ARGUMENT, "host");
	memset(longhost, 'a', 254);
	longhost[254] = '\0';
	harness_expect_refused(forget_as(&h, ADMIN_TOKEN, "crawl-1", longhost,
	    false, NULL), NDDD__V1__CODE__INVALID_ARGUMENT, "253");
	harness_expect_refused(forget_as(&h, ADMIN_TOKEN, "crawl-1", NULL,
	    false, "http://exa mple.com:99999/"),
	    NDDD__V1__CODE__INVALID_ARGUMENT, "");
	snprintf(longprefix, sizeof(longprefix), "http://example.com/%0500d",
	    7);
	harness_expect_refused(forget_as(&h, ADMIN_TOKEN, "crawl-1", NULL,
	    false, longprefix), NDDD__V1__CODE__INVALID_ARGUMENT, "490");
	harness_expect_refused(forget_as(&h, ADMIN_TOKEN, "bad name!",
	    "example.com", false, NULL), NDDD__V1__CODE__INVALID_ARGUMENT, "");

	/* Admin only, and within the token's namespaces. */
	harness_expect_refused(forget_as(&h, WRITE_TOKEN, "crawl-1",
	    "example.com", false, NULL), NDDD__V1__CODE__PERMISSION_DENIED,
	    "role");
	harness_expect_refused(forget_as(&h, CRAWL_ADMIN, "crawl-2",
	    "example.com", false, NULL), NDDD__V1__CODE__PERMISSION_DENIED,
	    "does not reach");
	{
		Nddd__V1__Response *r = forget_as(&h, CRAWL_ADMIN, "crawl-1",
		    "example.com", false, NULL);

		ck_assert_ptr_null(r->status);
		ck_assert_uint_eq(r->forget->forgotten, 0);
		nddd__v1__response__free_unpacked(r, NULL);
	}
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	free(path);

	/* Without the index there is nothing to forget by. */
	harness_init(&h, "[urls]\nhost_index = no\n");
	harness_start(&h);
	harness_expect_refused(forget_as(&h, NULL, "", "example.com", false,
	    NULL), NDDD__V1__CODE__FAILED_PRECONDITION, "host_index");
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
}
END_TEST

Suite *forget_suite(void);

Suite *
forget_suite(void)
{
	Suite *s = suite_create("forget");
	TCase *tc = tcase_create("forget");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_forget_host_and_subdomains);
	tcase_add_test(tc, test_forget_prefix);
	tcase_add_test(tc, test_forget_after_kill);
	tcase_add_test(tc, test_forget_large_host);
	tcase_add_test(tc, test_forget_refusals);
	tcase_add_test(tc, test_forget_unindexable_url);
	suite_add_tcase(s, tc);
	return s;
}
