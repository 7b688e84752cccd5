/*
 * forget_bench: url_forget of a small host in a running nddd's store,
 * against its peer, url_delete of as many URLs that the client lists.
 *
 *   forget_bench -H HOST:PORT [--hosts H] [--per-host N] [--namespace NAME]
 *
 * Adds H hosts of N URLs ("http://fb<h>.example/page/<i>", 100 each by
 * default) to whatever the store holds (fill it first with url_bench), then
 * forgets half the hosts one url_forget each, and deletes the other half
 * one url_delete batch of N URLs each: both durable, one round trip and
 * one sync each, so what differs is finding the URLs.  Every answer is
 * checked (a forget must delete exactly N).  The timing starts once no
 * merge of the index's runs is under way.  A forget that read the whole
 * store would take what a verify takes, which it also reports.  Prints:
 *   store_urls=S host_runs=R hosts=H per_host=N forget_p50_ms=A
 *   forget_max_ms=B
 *   delete_p50_ms=C delete_max_ms=D forget_per_delete=A/C verify_ms=V
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nddd.h"

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
die(nddd_client *c, const char *what)
{
	fprintf(stderr, "forget_bench: %s: %s\n", what,
	    c != NULL ? nddd_errstr(c) : "");
	exit(1);
}

/* The URLs of host h, allocated. */
static char **
host_urls(size_t h, size_t n)
{
	char **u = calloc(n, sizeof(*u));

	if (u == NULL)
		die(NULL, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (asprintf(&u[i], "http://fb%zu.example/page/%zu", h, i) ==
		    -1)
			die(NULL, "out of memory");
	return u;
}

static void
free_urls(char **u, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(u[i]);
	free(u);
}

/* Applies op to host h's URLs in one batch: each must answer a count
 * above 0 (new, duplicate, or deleted). */
static void
host_batch(nddd_client *c, enum nddd_url_op op, size_t h, size_t n)
{
	char **u = host_urls(h, n);
	struct nddd_url_result *res = calloc(n, sizeof(*res));

	if (res == NULL)
		die(NULL, "out of memory");
	if (nddd_urls(c, op, (const char *const *)u, n, res, n, 1, NULL,
	    NULL) == -1)
		die(c, "URL batch");
	for (size_t i = 0; i < n; i++)
		if (res[i].code != NDDD_OK || res[i].count == 0)
			die(NULL, "a URL of the bench's hosts is missing");
	nddd_urls_results_free(res, n);
	free(res);
	free_urls(u, n);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "hosts", required_argument, NULL, 'h' },
		{ "per-host", required_argument, NULL, 'N' },
		{ "namespace", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	const char *address = "127.0.0.1:6464", *ns = "";
	size_t hosts = 40, per_host = 100, half;
	double *forget_ms, *delete_ms, t0, verify_ms;
	struct nddd_url_opts uo = { 0 };
	struct nddd_stats st;
	struct nddd_verify v;
	nddd_client *c;
	char *err = NULL, host[64];
	int ch;

	while ((ch = getopt_long(argc, argv, "H:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'H': address = optarg; break;
		case 'h': hosts = strtoul(optarg, NULL, 10); break;
		case 'N': per_host = strtoul(optarg, NULL, 10); break;
		case 's': ns = optarg; break;
		default:
			fprintf(stderr, "usage: forget_bench [-H HOST:PORT] "
			    "[--hosts H] [--per-host N] [--namespace NAME]\n");
			return 2;
		}
	}
	if (hosts < 2 || per_host == 0 || per_host > 10000) {
		fprintf(stderr, "forget_bench: --hosts at least 2, --per-host "
		    "1 to 10000\n");
		return 2;
	}
	if ((c = nddd_connect(address, 600000, &err)) == NULL) {
		fprintf(stderr, "forget_bench: %s\n", err);
		return 1;
	}
	uo.ns = ns;
	if (nddd_set_url_opts(c, &uo) == -1)
		die(c, "namespace");
	half = hosts / 2;
	forget_ms = calloc(half, sizeof(*forget_ms));
	delete_ms = calloc(half, sizeof(*delete_ms));
	if (forget_ms == NULL || delete_ms == NULL)
		die(NULL, "out of memory");
	for (size_t h = 0; h < 2 * half; h++)
		host_batch(c, NDDD_URL_SUBMIT, h, per_host);
	/* The index at rest: no merge of its runs under way (a merge's
	 * steps come between groups, and would be timed with them). */
	for (int i = 0;; i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		if (nddd_stats(c, &st) == -1)
			die(c, "stats");
		if (!st.url_store.host_merging)
			break;
		if (i == 1200)
			die(NULL, "the host index is still merging after 60 s");
		nanosleep(&ts, NULL);
	}

	/* Alternating, so that neither runs on a warmer cache. */
	for (size_t i = 0; i < half; i++) {
		uint64_t n;

		snprintf(host, sizeof(host), "fb%zu.example", 2 * i);
		t0 = now_ms();
		if (nddd_url_forget_host(c, ns, host, 0, &n) == -1)
			die(c, "url_forget");
		forget_ms[i] = now_ms() - t0;
		if (n != per_host)
			die(NULL, "a forget missed URLs");
		t0 = now_ms();
		host_batch(c, NDDD_URL_DELETE, 2 * i + 1, per_host);
		delete_ms[i] = now_ms() - t0;
	}
	t0 = now_ms();
	if (nddd_verify(c, &v) == -1 || !v.consistent)
		die(c, "verify");
	verify_ms = now_ms() - t0;
	qsort(forget_ms, half, sizeof(*forget_ms), cmp_double);
	qsort(delete_ms, half, sizeof(*delete_ms), cmp_double);
	printf("store_urls=%llu host_runs=%llu hosts=%zu per_host=%zu "
	    "forget_p50_ms=%.2f forget_max_ms=%.2f delete_p50_ms=%.2f "
	    "delete_max_ms=%.2f forget_per_delete=%.2f verify_ms=%.0f\n",
	    (unsigned long long)st.urls,
	    (unsigned long long)st.url_store.host_runs, 2 * half, per_host,
	    forget_ms[half / 2], forget_ms[half - 1], delete_ms[half / 2],
	    delete_ms[half - 1], forget_ms[half / 2] / delete_ms[half / 2],
	    verify_ms);
	free(forget_ms);
	free(delete_ms);
	nddd_close(c);
	return 0;
}
