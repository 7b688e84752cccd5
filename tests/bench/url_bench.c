/*
 * url_bench: URL throughput of a running nddd, over loopback.
 *
 *   url_bench -H HOST:PORT -n URLS [-c CLIENTS] [-w WINDOW] [-b BATCH]
 *             [--file PATH]... [--phase submit|check|check-new|all]
 *
 * Synthetic URLs are "http://www.site<i % 50000>.example/<section>/<i>.html?
 * ref=<i*7 % 1000>", distinct and of a crawl's usual length (about 60
 * bytes); --file adds the lines of real URL lists (scheme-less lines get
 * "http://").  Each client thread has its own connection and keeps WINDOW
 * batches of BATCH URLs in flight.  Prints one line per phase:
 *   phase=submit urls=N seconds=S urls_per_s=R
 */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nddd.h"

struct work {
	const char *address;
	char **urls;
	size_t n;
	size_t batch;
	unsigned window;
	enum nddd_url_op op;
	size_t begin, end;	/* this client's slice */
	size_t failed;
	size_t counted;		/* results with count > 0 */
	int error;
};

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *
client_main(void *arg)
{
	struct work *w = arg;
	struct nddd_url_result *res;
	nddd_client *c;
	char *err;
	size_t n = w->end - w->begin;

	if ((c = nddd_connect(w->address, 60000, &err)) == NULL) {
		fprintf(stderr, "url_bench: %s\n", err);
		w->error = 1;
		return NULL;
	}
	res = calloc(n + 1, sizeof(*res));
	if (nddd_urls(c, w->op, (const char *const *)w->urls + w->begin, n,
	    res, w->batch, w->window, NULL, NULL) == -1) {
		fprintf(stderr, "url_bench: %s\n", nddd_errstr(c));
		w->error = 1;
	}
	for (size_t i = 0; i < n; i++) {
		w->failed += res[i].code != NDDD_OK;
		w->counted += res[i].count > 0;
	}
	nddd_urls_results_free(res, n);
	free(res);
	nddd_close(c);
	return NULL;
}

static int
run_phase(const char *name, enum nddd_url_op op, const char *address,
    char **urls, size_t n, unsigned clients, unsigned window, size_t batch)
{
	pthread_t th[64];
	struct work w[64];
	size_t failed = 0, counted = 0;
	double t0, secs;
	int error = 0;

	t0 = now_seconds();
	for (unsigned i = 0; i < clients; i++) {
		w[i] = (struct work){
			.address = address, .urls = urls, .n = n,
			.batch = batch, .window = window, .op = op,
			.begin = n * i / clients, .end = n * (i + 1) / clients,
		};
		pthread_create(&th[i], NULL, client_main, &w[i]);
	}
	for (unsigned i = 0; i < clients; i++) {
		pthread_join(th[i], NULL);
		failed += w[i].failed;
		counted += w[i].counted;
		error |= w[i].error;
	}
	secs = now_seconds() - t0;
	printf("phase=%s urls=%zu seconds=%.3f urls_per_s=%.0f failed=%zu "
	    "count_nonzero=%zu\n", name, n, secs, (double)n / secs, failed,
	    counted);
	fflush(stdout);
	return error ? -1 : 0;
}

static void
add_url(char ***urls, size_t *n, size_t *cap, char *u)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 1 << 20;
		*urls = realloc(*urls, *cap * sizeof(**urls));
		if (*urls == NULL) {
			perror("realloc");
			exit(1);
		}
	}
	(*urls)[(*n)++] = u;
}

static void
load_file(const char *path, char ***urls, size_t *n, size_t *cap)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, *u;
	size_t lcap = 0;
	ssize_t len;

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	while ((len = getline(&line, &lcap, f)) > 0) {
		char *s = line, *tab;

		while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r'))
			s[--len] = '\0';
		if ((tab = strchr(s, '\t')) != NULL)
			s = tab + 1;
		if (*s == '\0')
			continue;
		if (strstr(s, "://") == NULL) {
			if (asprintf(&u, "http://%s", s) == -1)
				exit(1);
		} else
			u = strdup(s);
		add_url(urls, n, cap, u);
	}
	free(line);
	fclose(f);
}

static char **
synthetic(size_t n, size_t offset)
{
	static const char *const sections[] = { "news", "world", "sport",
	    "business", "tech", "culture", "opinion", "video" };
	char **urls = malloc(n * sizeof(*urls));

	for (size_t j = 0; j < n; j++) {
		size_t i = j + offset;

		if (asprintf(&urls[j], "http://www.site%zu.example/%s/%zu.html"
		    "?ref=%zu", i % 50000, sections[i % 8], i,
		    (i * 7) % 1000) == -1)
			exit(1);
	}
	return urls;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "phase", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	const char *address = "127.0.0.1:6464", *phase = "all";
	size_t n = 1000000, batch = 1000, nurls = 0, cap = 0;
	unsigned clients = 2, window = 16;
	char **urls = NULL, **fresh;
	int ch, rc = 0;
	size_t nfiles = 0;
	const char *files[16];

	while ((ch = getopt_long(argc, argv, "H:n:c:w:b:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'H': address = optarg; break;
		case 'n': n = strtoull(optarg, NULL, 10); break;
		case 'c': clients = (unsigned)atoi(optarg); break;
		case 'w': window = (unsigned)atoi(optarg); break;
		case 'b': batch = strtoull(optarg, NULL, 10); break;
		case 'f':
			if (nfiles < 16)
				files[nfiles++] = optarg;
			break;
		case 'p': phase = optarg; break;
		default:
			fprintf(stderr, "usage: url_bench [-H HOST:PORT] [-n N]"
			    " [-c CLIENTS] [-w WINDOW] [-b BATCH] "
			    "[--file PATH] [--phase P]\n");
			return 2;
		}
	}
	if (clients < 1 || clients > 64)
		clients = 2;
	fresh = synthetic(n, 0);
	for (size_t i = 0; i < n; i++)
		add_url(&urls, &nurls, &cap, fresh[i]);
	free(fresh);
	for (size_t i = 0; i < nfiles; i++)
		load_file(files[i], &urls, &nurls, &cap);
	printf("bench urls=%zu clients=%u window=%u batch=%zu\n", nurls,
	    clients, window, batch);

	if (!strcmp(phase, "submit") || !strcmp(phase, "all"))
		rc |= run_phase("submit", NDDD_URL_SUBMIT, address, urls,
		    nurls, clients, window, batch);
	if (!strcmp(phase, "check") || !strcmp(phase, "all"))
		rc |= run_phase("check-seen", NDDD_URL_CHECK, address, urls,
		    nurls, clients, window, batch);
	if (!strcmp(phase, "check-new") || !strcmp(phase, "all")) {
		char **unseen = synthetic(n, 1000000000);

		rc |= run_phase("check-unseen", NDDD_URL_CHECK, address,
		    unseen, n, clients, window, batch);
	}
	return rc ? 1 : 0;
}
