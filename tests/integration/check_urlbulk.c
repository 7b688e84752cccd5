/*
 * Integration tests of bulk URL requests (libnddd's nddd_bulk_*) against
 * a real daemon: a bulk check answers every URL as the online check of the
 * same daemon does, and as a model of the operations says (namespaces,
 * deletes, times to live, URLs given twice, URLs no daemon takes), also
 * when its records spill to disk; bulk submits count references in input
 * order and reach the host index; a bulk submit killed midway leaves whole
 * batches applied, a prefix of the key order, and can be run again.
 */
#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "harness.h"
#include "testutil.h"

#define POOL		3000
#define HOSTS		7

static const char *const namespaces[] = { "", "crawl" };

/* URL i of the pool: URLs of HOSTS hosts, every 97th not one a daemon
 * takes. */
static void
pool_url(size_t i, char *buf, size_t size)
{
	if (i % 97 == 0)
		snprintf(buf, size, "not a url %zu", i);
	else
		snprintf(buf, size, "http://h%zu.bulk.example/p/%zu", i % HOSTS,
		    i);
}

/* The pool's URLs, and their end. */
static char **
pool_new(void)
{
	char **pool = calloc(POOL, sizeof(*pool));
	char url[128];

	ck_assert_ptr_nonnull(pool);
	for (size_t i = 0; i < POOL; i++) {
		pool_url(i, url, sizeof(url));
		ck_assert_ptr_nonnull(pool[i] = strdup(url));
	}
	return pool;
}

static void
pool_free(char **pool)
{
	for (size_t i = 0; i < POOL; i++)
		free(pool[i]);
	free(pool);
}

/* The number of a pool URL. */
static size_t
pool_index(const char *u)
{
	const char *p = strrchr(u, '/');

	if (p == NULL || strncmp(u, "not ", 4) == 0)
		p = strrchr(u, ' ');
	return (size_t)strtoull(p + 1, NULL, 10);
}

/* Pool URLs that live one second (all their submits). */
static bool
brief(size_t i)
{
	return i % 53 == 1;
}

/* Online answers to urls[0..n) in namespace ns. */
static struct nddd_url_result *
online(nddd_client *c, enum nddd_url_op op, const char *ns,
    const char *const *urls, size_t n)
{
	struct nddd_url_opts o = { .ns = ns };
	struct nddd_url_result *r = calloc(n, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(nddd_set_url_opts(c, &o), 0);
	nddd_urls(c, op, urls, n, r, 100, 4, NULL, NULL);
	return r;
}

/* A bulk request of urls[0..n) in namespace ns; the caller frees it. */
static nddd_bulk *
bulk(nddd_client *c, enum nddd_url_op op, const char *ns,
    const char *const *urls, size_t n, const struct nddd_bulk_opts *bo)
{
	struct nddd_url_opts o = { .ns = ns };
	char *err = NULL;
	nddd_bulk *b;

	ck_assert_int_eq(nddd_set_url_opts(c, &o), 0);
	b = nddd_bulk_new(c, op, bo, &err);
	ck_assert_msg(b != NULL, "nddd_bulk_new: %s", err ? err : "");
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(nddd_bulk_add(b, urls[i], strlen(urls[i])), 0);
	ck_assert_uint_eq(nddd_bulk_count(b), n);
	nddd_bulk_run(b, NULL, NULL);
	return b;
}

START_TEST(test_bulk_checks_equal_online_checks)
{
	struct harness h;
	nddd_client *c;
	char **pool = pool_new();
	const char **ask = calloc(2 * POOL, sizeof(*ask));
	/* The model: each pool URL's count in each namespace. */
	uint64_t (*count)[2] = calloc(POOL, sizeof(*count));
	uint64_t rng = 0x5eed2026;
	struct nddd_bulk_opts small = { .memory = 4096, .batch = 100,
	    .window = 3 };

	ck_assert_ptr_nonnull(ask);
	ck_assert_ptr_nonnull(count);
	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);
	/* Random submits and deletes, one URL at a time, in both
	 * namespaces; a few URLs live one second. */
	for (size_t step = 0; step < 3 * POOL; step++) {
		size_t i = (size_t)tu_rand_below(&rng, POOL);
		int ns = (int)tu_rand_below(&rng, 2);
		bool del = !brief(i) && tu_rand_below(&rng, 4) == 0;
		struct nddd_url_opts o = { .ns = namespaces[ns],
		    .ttl_seconds = brief(i) ? 1 : 0 };
		struct nddd_url_result r;
		const char *u = pool[i];

		ck_assert_int_eq(nddd_set_url_opts(c, &o), 0);
		nddd_urls(c, del ? NDDD_URL_DELETE : NDDD_URL_SUBMIT, &u, 1, &r,
		    1, 1, NULL, NULL);
		if (i % 97 == 0) {
			ck_assert_int_eq(r.code, NDDD_INVALID_ARGUMENT);
			nddd_urls_results_free(&r, 1);
			continue;
		}
		ck_assert_int_eq(r.code, NDDD_OK);
		if (del)
			count[i][ns] = 0;	/* the record goes */
		else if (!brief(i))
			count[i][ns]++;
	}
	/* The brief ones have expired: answered count 0. */
	sleep(2);
	/* Asked: every pool URL twice, in a random order. */
	for (size_t i = 0; i < 2 * POOL; i++)
		ask[i] = pool[i % POOL];
	for (size_t i = 2 * POOL - 1; i > 0; i--) {
		size_t j = (size_t)tu_rand_below(&rng, i + 1);
		const char *t = ask[i];

		ask[i] = ask[j];
		ask[j] = t;
	}
	for (int ns = 0; ns < 2; ns++) {
		struct nddd_url_result *want = online(c, NDDD_URL_CHECK,
		    namespaces[ns], ask, 2 * POOL);
		nddd_bulk *b = bulk(c, NDDD_URL_CHECK, namespaces[ns], ask,
		    2 * POOL, &small);

		/* 4 KiB of memory: its records went to the spill file. */
		ck_assert_uint_gt(nddd_bulk_spilled(b), 0);
		for (size_t i = 0; i < 2 * POOL; i++) {
			uint64_t got;
			const char *msg;
			enum nddd_code code = nddd_bulk_result(b, i, &got, &msg);
			size_t p = pool_index(ask[i]);

			ck_assert_msg(code == want[i].code, "%s: %s, online %s",
			    ask[i], nddd_code_name(code),
			    nddd_code_name(want[i].code));
			if (code != NDDD_OK) {
				ck_assert_int_eq(p % 97, 0);
				ck_assert_str_eq(msg, want[i].message);
				continue;
			}
			ck_assert_msg(got == want[i].count, "%s: %llu, online "
			    "%llu", ask[i], (unsigned long long)got,
			    (unsigned long long)want[i].count);
			ck_assert_msg(got == count[p][ns], "%s in '%s': %llu", ask[i],
			    namespaces[ns], (unsigned long long)got);
		}
		nddd_bulk_free(b);
		nddd_urls_results_free(want, 2 * POOL);
		free(want);
	}
	nddd_close(c);
	harness_cleanup(&h);
	pool_free(pool);
	free(ask);
	free(count);
}
END_TEST

START_TEST(test_bulk_submits_count_and_reach_the_host_index)
{
	struct harness h;
	nddd_client *c;
	const char **urls = calloc(2 * POOL, sizeof(*urls));
	char **pool = pool_new();
	size_t *first = calloc(POOL, sizeof(*first));
	uint64_t rng = 42, forgotten;
	nddd_bulk *b;
	size_t valid = 0, of_h3 = 0;

	harness_init(&h, "[urls]\nhost_index = yes\n");
	harness_start(&h);
	c = harness_client(&h);
	for (size_t i = 0; i < POOL; i++) {
		first[i] = SIZE_MAX;
		if (i % 97 != 0) {
			valid++;
			of_h3 += i % HOSTS == 3;
		}
	}
	for (size_t i = 0; i < 2 * POOL; i++)
		urls[i] = pool[i % POOL];
	for (size_t i = 2 * POOL - 1; i > 0; i--) {
		size_t j = (size_t)tu_rand_below(&rng, i + 1);
		const char *t = urls[i];

		urls[i] = urls[j];
		urls[j] = t;
	}
	/* Each URL twice: the first in the input is new, the second a
	 * duplicate, as one submit after the other would say. */
	b = bulk(c, NDDD_URL_SUBMIT, "", urls, 2 * POOL,
	    &(struct nddd_bulk_opts){ .batch = 64, .window = 1 });
	for (size_t i = 0; i < 2 * POOL; i++) {
		uint64_t got;
		const char *msg;
		size_t p = pool_index(urls[i]);

		if (p % 97 == 0) {
			ck_assert_int_eq(nddd_bulk_result(b, i, &got, &msg),
			    NDDD_INVALID_ARGUMENT);
			continue;
		}
		ck_assert_int_eq(nddd_bulk_result(b, i, &got, &msg), NDDD_OK);
		ck_assert_uint_eq(got, first[p] == SIZE_MAX ? 1 : 2);
		first[p] = i;
	}
	nddd_bulk_free(b);
	/* The host index holds them: forgetting a host forgets its URLs,
	 * and only them. */
	ck_assert_int_eq(nddd_url_forget_host(c, "", "h3.bulk.example", 0,
	    &forgotten), 0);
	ck_assert_uint_eq(forgotten, of_h3);
	/* A bulk delete of all: the others' records (counted twice) go. */
	b = bulk(c, NDDD_URL_DELETE, "", (const char *const *)pool, POOL,
	    NULL);
	for (size_t i = 0; i < POOL; i++) {
		uint64_t got;
		const char *msg;
		enum nddd_code code = nddd_bulk_result(b, i, &got, &msg);

		if (i % 97 == 0) {
			ck_assert_int_eq(code, NDDD_INVALID_ARGUMENT);
			continue;
		}
		ck_assert_int_eq(code, NDDD_OK);
		ck_assert_uint_eq(got, i % HOSTS == 3 ? 0 : 2);
	}
	nddd_bulk_free(b);
	ck_assert_uint_gt(valid, of_h3);
	nddd_close(c);
	harness_cleanup(&h);
	pool_free(pool);
	free(urls);
	free(first);
}
END_TEST

#define KILLED_URLS	20000
#define KILLED_BATCH	250

/* The bulk submit's child dies (SIGKILL) once this many are answered. */
static void
die_midway(uint64_t done, uint64_t total, void *arg)
{
	(void)total;
	(void)arg;
	if (done >= KILLED_URLS / 3)
		raise(SIGKILL);
}

static void
killed_url(size_t i, char *buf, size_t size)
{
	snprintf(buf, size, "http://k%zu.bulk.example/%zu", i % 11, i);
}

/* The key order of the URLs: their MD5s (canonical already). */
struct keyed {
	unsigned char md5[16];
	size_t i;
};

static int
cmp_keyed(const void *a, const void *b)
{
	return memcmp(((const struct keyed *)a)->md5,
	    ((const struct keyed *)b)->md5, 16);
}

START_TEST(test_bulk_submit_killed_midway)
{
	struct harness h;
	nddd_client *c;
	const char **urls = calloc(KILLED_URLS, sizeof(*urls));
	struct keyed *order = calloc(KILLED_URLS, sizeof(*order));
	struct nddd_url_result *got;
	char url[128];
	pid_t pid;
	int status;
	size_t present = 0;
	nddd_bulk *b;

	harness_init(&h, NULL);
	harness_start(&h);
	for (size_t i = 0; i < KILLED_URLS; i++) {
		unsigned int len;

		killed_url(i, url, sizeof(url));
		ck_assert_ptr_nonnull(urls[i] = strdup(url));
		order[i].i = i;
		ck_assert(EVP_Digest(url, strlen(url), order[i].md5, &len,
		    EVP_md5(), NULL));
	}
	qsort(order, KILLED_URLS, sizeof(*order), cmp_keyed);
	/* A child runs the bulk submit, a batch at a time, and is killed
	 * with -9 a third of the way through. */
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		char *err = NULL;

		c = nddd_connect(h.address, 10000, &err);
		b = c ? nddd_bulk_new(c, NDDD_URL_SUBMIT,
		    &(struct nddd_bulk_opts){ .batch = KILLED_BATCH,
		    .window = 1 }, &err) : NULL;
		if (b == NULL)
			_exit(3);
		for (size_t i = 0; i < KILLED_URLS; i++)
			nddd_bulk_add(b, urls[i], strlen(urls[i]));
		nddd_bulk_run(b, die_midway, NULL);
		_exit(4);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* Whole batches, in key order, and each URL once. */
	c = harness_client(&h);
	got = online(c, NDDD_URL_CHECK, "", urls, KILLED_URLS);
	for (size_t k = 0; k < KILLED_URLS; k++) {
		const struct nddd_url_result *r = &got[order[k].i];

		ck_assert_int_eq(r->code, NDDD_OK);
		ck_assert_uint_le(r->count, 1);
		if (r->count == 1) {
			ck_assert_msg(present == k, "URL %zu of the key order "
			    "stored after %zu", k, present);
			present++;
		}
	}
	ck_assert_uint_ge(present, KILLED_URLS / 3);
	ck_assert_uint_lt(present, KILLED_URLS);
	nddd_urls_results_free(got, KILLED_URLS);
	free(got);
	/* Run again, it finishes: those stored before are duplicates. */
	b = bulk(c, NDDD_URL_SUBMIT, "", urls, KILLED_URLS,
	    &(struct nddd_bulk_opts){ .batch = KILLED_BATCH });
	for (size_t k = 0; k < KILLED_URLS; k++) {
		uint64_t n;
		const char *msg;

		ck_assert_int_eq(nddd_bulk_result(b, order[k].i, &n, &msg),
		    NDDD_OK);
		ck_assert_uint_eq(n, k < present ? 2 : 1);
	}
	nddd_bulk_free(b);
	nddd_close(c);
	harness_cleanup(&h);
	for (size_t i = 0; i < KILLED_URLS; i++)
		free((char *)urls[i]);
	free(urls);
	free(order);
}
END_TEST

Suite *urlbulk_suite(void);

Suite *
urlbulk_suite(void)
{
	Suite *s = suite_create("urlbulk");
	TCase *tc = tcase_create("urlbulk");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_bulk_checks_equal_online_checks);
	tcase_add_test(tc, test_bulk_submits_count_and_reach_the_host_index);
	tcase_add_test(tc, test_bulk_submit_killed_midway);
	suite_add_tcase(s, tc);
	return s;
}
