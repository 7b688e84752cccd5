/*
 * shards_bench: URL throughput through libnddd's shard routing.
 *
 *   shards_bench -H HOST:PORT[,HOST:PORT...] -n URLS [-c CLIENTS]
 *                [-b BATCH] [-w WINDOW] [-C CHUNK] [--phase submit|check]
 *                [--direct] [--digests]
 *
 * The synthetic URLs of url_bench (urlgen.h).  Each client thread opens
 * the shard list (nddd_shards_open) and hands its slice of the URLs to
 * nddd_shards_urls CHUNK URLs at a time (default 10,000), as a crawler's
 * frontier would: canonicalizing and hashing them, routing, the shards'
 * parts in parallel, every count checked.  Unlike url_bench, nothing is
 * encoded before the clock: the figure is what an application calling the
 * library gets.  --digests sends the shards digests instead of the URLs
 * (nddd_shards_use_digests).  --direct sends the same chunks to the first
 * address with nddd_urls (URLs as text, the daemon canonicalizes), for
 * the cost of the routing itself.  Prints one line:
 *   phase=check shards=N urls=N seconds=S urls_per_s=R
 */
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchnet.h"
#include "nddd.h"
#include "urlgen.h"

struct work {
	const char **addresses;
	size_t nshards;
	char **urls;
	size_t begin, end, chunk, batch;
	unsigned window;
	enum nddd_url_op op;
	bool direct, digests;
	size_t failed, counted;
	char error[256];
};

static void *
client_run(void *arg)
{
	struct work *w = arg;
	struct nddd_url_result *res = calloc(w->chunk, sizeof(*res));
	nddd_shards *s = NULL;
	nddd_client *c = NULL;
	char *err = NULL;

	if (w->direct)
		c = nddd_connect(w->addresses[0], 30000, &err);
	else if ((s = nddd_shards_open(w->addresses, w->nshards, NULL,
	    &err)) != NULL)
		nddd_shards_use_digests(s, w->digests);
	if ((c == NULL && s == NULL) || res == NULL) {
		snprintf(w->error, sizeof(w->error), "%s",
		    err ? err : "out of memory");
		free(err);
		free(res);
		return NULL;
	}
	for (size_t at = w->begin; at < w->end; at += w->chunk) {
		size_t m = w->end - at < w->chunk ? w->end - at : w->chunk;
		int rc = w->direct ? nddd_urls(c, w->op,
		    (const char *const *)w->urls + at, m, res, w->batch,
		    w->window, NULL, NULL) : nddd_shards_urls(s, w->op,
		    (const char *const *)w->urls + at, m, res, w->batch,
		    w->window);

		if (rc == -1) {
			snprintf(w->error, sizeof(w->error), "%s", w->direct ?
			    nddd_errstr(c) : nddd_shards_errstr(s));
			nddd_urls_results_free(res, m);
			break;
		}
		for (size_t i = 0; i < m; i++) {
			w->failed += res[i].code != NDDD_OK;
			w->counted += res[i].count > 0;
		}
		nddd_urls_results_free(res, m);
	}
	free(res);
	nddd_shards_close(s);
	nddd_close(c);
	return NULL;
}

static void
usage(void)
{
	fprintf(stderr, "usage: shards_bench -H HOST:PORT[,HOST:PORT...] "
	    "-n URLS [-c CLIENTS] [-b BATCH]\n"
	    "                    [-w WINDOW] [-C CHUNK] "
	    "[--phase submit|check] [--direct] [--digests]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "phase", required_argument, NULL, 'p' },
		{ "direct", no_argument, NULL, 'd' },
		{ "digests", no_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	const char *list = NULL, *phase = "check", *addresses[NDDD_SHARDS_MAX];
	size_t n = 0, batch = 1000, chunk = 10000, nshards = 0;
	unsigned clients = 2, window = 4;
	struct urllist urls = { 0 };
	struct work *w;
	pthread_t *t;
	char *copy, *p;
	bool direct = false, digests = false;
	size_t failed = 0, counted = 0;
	double t0, secs;
	int ch;

	while ((ch = getopt_long(argc, argv, "H:n:c:b:w:C:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'H': list = optarg; break;
		case 'n': n = strtoull(optarg, NULL, 10); break;
		case 'c': clients = (unsigned)atoi(optarg); break;
		case 'b': batch = strtoull(optarg, NULL, 10); break;
		case 'w': window = (unsigned)atoi(optarg); break;
		case 'C': chunk = strtoull(optarg, NULL, 10); break;
		case 'p': phase = optarg; break;
		case 'd': direct = true; break;
		case 'D': digests = true; break;
		default: usage();
		}
	}
	if (list == NULL || n == 0 || clients == 0 || batch == 0 ||
	    chunk == 0 || window == 0 || (strcmp(phase, "submit") != 0 &&
	    strcmp(phase, "check") != 0))
		usage();
	copy = strdup(list);
	for (p = strtok(copy, ","); p != NULL && nshards < NDDD_SHARDS_MAX;
	    p = strtok(NULL, ","))
		addresses[nshards++] = p;
	urlgen_synthetic(&urls, n, 0);
	w = calloc(clients, sizeof(*w));
	t = calloc(clients, sizeof(*t));
	for (unsigned i = 0; i < clients; i++) {
		w[i] = (struct work){
			.addresses = addresses, .nshards = nshards,
			.urls = urls.urls, .begin = n * i / clients,
			.end = n * (i + 1) / clients, .chunk = chunk,
			.batch = batch, .window = window, .direct = direct,
			.digests = digests,
			.op = strcmp(phase, "submit") == 0 ? NDDD_URL_SUBMIT :
			    NDDD_URL_CHECK,
		};
	}
	t0 = bench_now();
	for (unsigned i = 0; i < clients; i++)
		pthread_create(&t[i], NULL, client_run, &w[i]);
	for (unsigned i = 0; i < clients; i++) {
		pthread_join(t[i], NULL);
		if (w[i].error[0] != '\0') {
			fprintf(stderr, "shards_bench: %s\n", w[i].error);
			return 1;
		}
		failed += w[i].failed;
		counted += w[i].counted;
	}
	secs = bench_now() - t0;
	if (failed > 0 || counted != n) {
		fprintf(stderr, "shards_bench: %zu URLs failed, %zu of %zu "
		    "counted\n", failed, counted, n);
		return 1;
	}
	printf("phase=%s shards=%zu%s%s urls=%zu seconds=%.3f "
	    "urls_per_s=%.0f\n", phase, nshards, direct ? " direct=1" : "",
	    digests ? " digests=1" : "", n, secs, (double)n / secs);
	free(w);
	free(t);
	free(copy);
	urlgen_free(&urls);
	return 0;
}
