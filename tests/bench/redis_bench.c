/*
 * redis_bench: the way crawlers deduplicate URLs today, measured against a
 * running Redis: the client hashes each URL (MD5, 16 bytes, as nddd does
 * on the server) and keeps the digests in one Redis set, SADD to record
 * and SMISMEMBER to check, one command per batch, pipelined.
 *
 *   redis_bench -p PORT -n URLS [-c CLIENTS] [-w WINDOW] [-b BATCH]
 *               [--file PATH]...
 *
 * Uses the same URLs as url_bench (same generator, same files) and prints
 * the same kind of lines (each command's round trip as p50_ms, p99_ms and
 * max_ms), plus the set's memory per URL.  As in url_bench,
 * the commands (digests included) are formatted before the clock starts:
 * the figure is the server's.  Note what that leaves out: a crawler using
 * Redis pays for canonicalizing and hashing in its own process, which
 * nddd does on the server, inside its figure.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "benchnet.h"
#include "urlgen.h"

#define KEY "nddd-bench:seen"

struct work {
	int port;
	char **urls;
	size_t begin, end, batch;
	unsigned window;
	const char *cmd;	/* SADD or SMISMEMBER */
	char **cmds;		/* pre-formatted, one per batch */
	size_t *cmd_len;
	size_t ncmds;
	double *latency;	/* per command: its reply's time since sent */
	size_t hits;
	int error;
};

/* Hashes the URLs and formats this client's commands, before timing. */
static void
format_commands(struct work *w)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char (*digests)[16] = malloc(w->batch * 16);
	const char **argv = malloc((w->batch + 2) * sizeof(*argv));
	size_t *argl = malloc((w->batch + 2) * sizeof(*argl));
	size_t n = w->end - w->begin;
	unsigned int len;

	w->ncmds = (n + w->batch - 1) / w->batch;
	w->cmds = calloc(w->ncmds + 1, sizeof(*w->cmds));
	w->cmd_len = calloc(w->ncmds + 1, sizeof(*w->cmd_len));
	w->latency = calloc(w->ncmds + 1, sizeof(*w->latency));
	for (size_t c = 0; c < w->ncmds; c++) {
		size_t from = w->begin + c * w->batch;
		size_t m = w->end - from < w->batch ? w->end - from : w->batch;
		long long flen;

		argv[0] = w->cmd;
		argl[0] = strlen(w->cmd);
		argv[1] = KEY;
		argl[1] = strlen(KEY);
		for (size_t i = 0; i < m; i++) {
			const char *u = w->urls[from + i];

			EVP_DigestInit_ex(ctx, EVP_md5(), NULL);
			EVP_DigestUpdate(ctx, u, strlen(u));
			EVP_DigestFinal_ex(ctx, digests[i], &len);
			argv[2 + i] = (const char *)digests[i];
			argl[2 + i] = 16;
		}
		flen = redisFormatCommandArgv(&w->cmds[c], (int)m + 2, argv,
		    argl);
		w->cmd_len[c] = flen > 0 ? (size_t)flen : 0;
	}
	EVP_MD_CTX_free(ctx);
	free(digests);
	free(argv);
	free(argl);
}

static void *
client_main(void *arg)
{
	struct work *w = arg;
	redisContext *rc = redisConnect("127.0.0.1", w->port);
	size_t sent = 0, answered = 0;

	if (rc == NULL || rc->err) {
		fprintf(stderr, "redis_bench: connect: %s\n",
		    rc ? rc->errstr : "?");
		w->error = 1;
		return NULL;
	}
	while (answered < w->ncmds) {
		redisReply *r;

		while (sent < w->ncmds && sent - answered < w->window) {
			redisAppendFormattedCommand(rc, w->cmds[sent],
			    w->cmd_len[sent]);
			w->latency[sent] = bench_now();	/* sent, nearly:
							   written below */
			sent++;
		}
		if (redisGetReply(rc, (void **)&r) != REDIS_OK) {
			fprintf(stderr, "redis_bench: %s\n", rc->errstr);
			w->error = 1;
			break;
		}
		w->latency[answered] = bench_now() - w->latency[answered];
		if (r->type == REDIS_REPLY_INTEGER)
			w->hits += (size_t)r->integer;
		else if (r->type == REDIS_REPLY_ARRAY)
			for (size_t i = 0; i < r->elements; i++)
				w->hits += r->element[i]->integer > 0;
		else if (r->type == REDIS_REPLY_ERROR) {
			fprintf(stderr, "redis_bench: %s\n", r->str);
			w->error = 1;
		}
		freeReplyObject(r);
		answered++;
	}
	redisFree(rc);
	return NULL;
}

static int
run_phase(const char *name, const char *cmd, int port, char **urls, size_t n,
    unsigned clients, unsigned window, size_t batch)
{
	pthread_t th[64];
	struct work w[64];
	double *lat;
	size_t hits = 0, nlat = 0;
	double t0, secs;
	int error = 0;

	for (unsigned i = 0; i < clients; i++) {
		w[i] = (struct work){ .port = port, .urls = urls,
		    .begin = n * i / clients, .end = n * (i + 1) / clients,
		    .batch = batch, .window = window, .cmd = cmd };
		format_commands(&w[i]);
	}
	t0 = bench_now();
	for (unsigned i = 0; i < clients; i++)
		pthread_create(&th[i], NULL, client_main, &w[i]);
	for (unsigned i = 0; i < clients; i++) {
		pthread_join(th[i], NULL);
		hits += w[i].hits;
		error |= w[i].error;
	}
	secs = bench_now() - t0;
	for (unsigned i = 0; i < clients; i++)
		nlat += w[i].ncmds;
	lat = calloc(nlat + 1, sizeof(*lat));
	nlat = 0;
	for (unsigned i = 0; i < clients; i++) {
		for (size_t c = 0; c < w[i].ncmds; c++) {
			redisFreeCommand(w[i].cmds[c]);
			if (lat != NULL)
				lat[nlat++] = w[i].latency[c];
		}
		free(w[i].cmds);
		free(w[i].cmd_len);
		free(w[i].latency);
	}
	/* A phase that lost a connection has no figure to give. */
	if (error || lat == NULL) {
		free(lat);
		return -1;
	}
	printf("phase=%s urls=%zu seconds=%.3f urls_per_s=%.0f hits=%zu "
	    "p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", name, n, secs,
	    (double)n / secs, hits, 1e3 * bench_percentile(lat, nlat, 50),
	    1e3 * bench_percentile(lat, nlat, 99),
	    1e3 * bench_percentile(lat, nlat, 100));
	free(lat);
	fflush(stdout);
	return 0;
}

static long long
used_memory(int port)
{
	redisContext *rc = redisConnect("127.0.0.1", port);
	redisReply *r;
	long long v = -1;
	char *p;

	if (rc == NULL || rc->err)
		return -1;
	r = redisCommand(rc, "INFO memory");
	if (r != NULL && r->type == REDIS_REPLY_STRING &&
	    (p = strstr(r->str, "used_memory:")) != NULL)
		v = atoll(p + strlen("used_memory:"));
	freeReplyObject(r);
	redisFree(rc);
	return v;
}

/* The same URLs as url_bench, from urlgen. */
int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	int port = 6379, ch, rc = 0;
	size_t n = 1000000, batch = 1000;
	unsigned clients = 2, window = 16;
	struct urllist urls = { 0 }, unseen = { 0 };
	const char *files[16];
	size_t nfiles = 0;
	long long mem0, mem1;
	char **order;

	while ((ch = getopt_long(argc, argv, "p:n:c:w:b:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'p': port = atoi(optarg); break;
		case 'n': n = strtoull(optarg, NULL, 10); break;
		case 'c': clients = (unsigned)atoi(optarg); break;
		case 'w': window = (unsigned)atoi(optarg); break;
		case 'b': batch = strtoull(optarg, NULL, 10); break;
		case 'f':
			if (nfiles < 16)
				files[nfiles++] = optarg;
			break;
		default:
			fprintf(stderr, "usage: redis_bench [-p PORT] [-n N] "
			    "[-c CLIENTS] [-w WINDOW] [-b BATCH] "
			    "[--file PATH]\n");
			return 2;
		}
	}
	if (clients < 1 || clients > 64)
		clients = 2;
	urlgen_synthetic(&urls, n, 0);
	for (size_t i = 0; i < nfiles; i++)
		urlgen_file(&urls, files[i]);
	urlgen_synthetic(&unseen, n, URLGEN_UNSEEN_FIRST);
	printf("redis urls=%zu clients=%u window=%u batch=%zu\n", urls.n,
	    clients, window, batch);
	mem0 = used_memory(port);
	rc |= run_phase("submit", "SADD", port, urls.urls, urls.n, clients,
	    window, batch);
	mem1 = used_memory(port);
	order = urlgen_shuffled(&urls, URLGEN_CHECK_SEED);
	rc |= run_phase("check-seen", "SMISMEMBER", port, order, urls.n,
	    clients, window, batch);
	free(order);
	rc |= run_phase("check-unseen", "SMISMEMBER", port,
	    unseen.urls, unseen.n, clients, window, batch);
	printf("redis_memory_per_url=%.1f\n",
	    (double)(mem1 - mem0) / (double)urls.n);
	urlgen_free(&urls);
	urlgen_free(&unseen);
	return rc ? 1 : 0;
}
