/*
 * url_bench: URL throughput of a running nddd, over loopback.
 *
 *   url_bench -H HOST:PORT -n URLS [-c CLIENTS] [-w WINDOW] [-b BATCH]
 *             [--file PATH]... [--phase submit|check|check-new|all|print]
 *             [--relaxed] [--first N] [--namespace NAME]
 *
 * Synthetic URLs are "http://www.site<i % 50000>.example/<section>/<i>.html?
 * ref=<i*7 % 1000>", distinct and of a crawl's usual length (about 60
 * bytes); --file adds the lines of real URL lists (scheme-less lines get
 * "http://").  Each client thread has its own connection and keeps WINDOW
 * batches of BATCH URLs in flight.  The request frames are encoded before
 * the clock starts and the replies decoded as they come (every count is
 * checked), so the figure is the server's, not the client's encoder's.
 * --namespace works in that URL namespace (keys derived from its name).
 * --relaxed asks for relaxed durability on submits (acknowledged once
 * written to the OS, not yet on disk); --first N numbers the synthetic
 * URLs from N (to add more to a store in steps); --digests sends the MD5s
 * of the canonical URLs, computed with libnddd (the daemon's rules, as its
 * stats name them) before the clock starts, as redis_bench does for Redis.
 * --phase print writes the synthetic URLs to stdout, a line each, and
 * asks nothing (bulk_bench.sh's input).  Otherwise prints one line per
 * phase, with each batch's round trip (send to reply, queueing in the
 * window included) at the 50th and 99th percentiles and the worst:
 *   phase=submit urls=N seconds=S urls_per_s=R ... p50_ms=A p99_ms=B
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
	struct bench_stream stream;
	char **urls;
	size_t batch;
	enum nddd_url_op op;
	size_t begin, end;	/* this client's slice */
	uint8_t **frames;	/* pre-encoded requests, one per batch */
	size_t *frame_len;
	size_t nframes;
	size_t failed;		/* URLs answered with an error */
	size_t counted;		/* results with count > 0 */
	double *latency;	/* per batch */
	char error[256];	/* the stream's failure, if any */
};

static bool relaxed;
static const char *ns;		/* --namespace; NULL: the default one */
/* --digests: the client canonicalizes and hashes, with the server's rules,
 * before the clock starts (as redis_bench hashes for Redis). */
static nddd_canon *canon;

/* Encodes this client's batches as frames, before any timing. */
static void
encode_frames(struct work *w)
{
	size_t n = w->end - w->begin;
	ProtobufCBinaryData *items = calloc(w->batch, sizeof(*items));
	uint8_t *digests = calloc(w->batch, NDDD_DIGEST_LEN);

	w->nframes = (n + w->batch - 1) / w->batch;
	w->frames = calloc(w->nframes + 1, sizeof(*w->frames));
	w->frame_len = calloc(w->nframes + 1, sizeof(*w->frame_len));
	for (size_t f = 0; f < w->nframes; f++) {
		Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
		Nddd__V1__UrlBatch b = NDDD__V1__URL_BATCH__INIT;
		size_t from = w->begin + f * w->batch, m;

		m = w->end - from < w->batch ? w->end - from : w->batch;
		if (canon != NULL) {
			size_t nd = 0;

			/* A URL the canonicalizer refuses is answered by the
			 * client: it is not sent, and counts as failed. */
			for (size_t i = 0; i < m; i++) {
				const char *u = w->urls[from + i], *cause;

				if (nddd_canon_digest(canon, u, strlen(u),
				    digests + nd * NDDD_DIGEST_LEN, &cause) == 0)
					nd++;
				else
					w->failed++;
			}
			b.digests.data = digests;
			b.digests.len = nd * NDDD_DIGEST_LEN;
			b.canon = (char *)nddd_canon_id(canon);
		} else {
			for (size_t i = 0; i < m; i++) {
				items[i].data = (uint8_t *)w->urls[from + i];
				items[i].len = strlen(w->urls[from + i]);
			}
			b.n_urls = m;
			b.urls = items;
		}
		if (relaxed)
			b.durability = NDDD__V1__DURABILITY__RELAXED;
		b.namespace_ = (char *)(ns != NULL ? ns : "");
		req.id = f + 1;
		if (w->op == NDDD_URL_SUBMIT) {
			req.op_case = NDDD__V1__REQUEST__OP_URL_SUBMIT;
			req.url_submit = &b;
		} else {
			req.op_case = NDDD__V1__REQUEST__OP_URL_CHECK;
			req.url_check = &b;
		}
		w->frames[f] = bench_frame(&req, &w->frame_len[f]);
	}
	free(items);
	free(digests);
}

/* Every reply must be a URL result; its errors and counts are tallied. */
static int
count_reply(void *arg, const Nddd__V1__Response *r)
{
	struct work *w = arg;

	if (r->result_case != NDDD__V1__RESPONSE__RESULT_URLS)
		return -1;
	w->failed += r->urls->n_errors;
	for (size_t i = 0; i < r->urls->n_counts; i++)
		w->counted += r->urls->counts[i] > 0;
	return 0;
}

static void *
client_main(void *arg)
{
	struct work *w = arg;

	w->stream.frames = w->frames;
	w->stream.lens = w->frame_len;
	w->stream.n = w->nframes;
	w->stream.reply = count_reply;
	w->stream.arg = w;
	w->stream.latency = w->latency = calloc(w->nframes + 1,
	    sizeof(*w->latency));
	if (bench_stream_run(&w->stream, w->error, sizeof(w->error)) == -1)
		return w;
	return NULL;
}

/* The canonicalizer of the server at address, as its stats name it. */
static nddd_canon *
server_canon(const char *address)
{
	struct nddd_stats st;
	nddd_canon *k;
	nddd_client *c;
	char *err = NULL;

	if ((c = nddd_connect(address, 10000, &err)) == NULL ||
	    nddd_stats(c, &st) == -1 ||
	    (k = nddd_canon_new(st.canon, &err)) == NULL) {
		fprintf(stderr, "url_bench: %s\n", err ? err : c ?
		    nddd_errstr(c) : "cannot connect");
		if (c != NULL)
			nddd_close(c);
		return NULL;
	}
	nddd_close(c);
	return k;
}

static int
run_phase(const char *name, enum nddd_url_op op, const char *address,
    char **urls, size_t n, unsigned clients, unsigned window, size_t batch)
{
	pthread_t th[64];
	struct work w[64];
	size_t failed = 0, counted = 0, nlat = 0;
	double t0, secs, *lat = NULL;
	int error = 0;

	for (unsigned i = 0; i < clients; i++) {
		w[i] = (struct work){
			.stream = { .address = address, .window = window },
			.urls = urls, .batch = batch, .op = op,
			.begin = n * i / clients, .end = n * (i + 1) / clients,
		};
		encode_frames(&w[i]);
	}
	t0 = bench_now();
	for (unsigned i = 0; i < clients; i++)
		pthread_create(&th[i], NULL, client_main, &w[i]);
	for (unsigned i = 0; i < clients; i++) {
		void *failed_stream;

		pthread_join(th[i], &failed_stream);
		failed += w[i].failed;
		counted += w[i].counted;
		if (failed_stream != NULL) {
			fprintf(stderr, "url_bench: %s\n", w[i].error);
			error = 1;
		}
	}
	secs = bench_now() - t0;
	for (unsigned i = 0; i < clients; i++)
		nlat += w[i].nframes;
	lat = calloc(nlat + 1, sizeof(*lat));
	nlat = 0;
	for (unsigned i = 0; i < clients; i++) {
		for (size_t f = 0; f < w[i].nframes; f++) {
			free(w[i].frames[f]);
			if (w[i].latency != NULL)
				lat[nlat++] = w[i].latency[f];
		}
		free(w[i].frames);
		free(w[i].frame_len);
		free(w[i].latency);
	}
	/* A phase that lost a connection has no figure to give. */
	if (error) {
		free(lat);
		return -1;
	}
	printf("phase=%s urls=%zu seconds=%.3f urls_per_s=%.0f failed=%zu "
	    "count_nonzero=%zu p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", name, n,
	    secs, (double)n / secs, failed, counted,
	    1e3 * bench_percentile(lat, nlat, 50),
	    1e3 * bench_percentile(lat, nlat, 99),
	    1e3 * bench_percentile(lat, nlat, 100));
	free(lat);
	fflush(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "phase", required_argument, NULL, 'p' },
		{ "relaxed", no_argument, NULL, 'r' },
		{ "digests", no_argument, NULL, 'd' },
		{ "first", required_argument, NULL, 'F' },
		{ "namespace", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	const char *address = "127.0.0.1:6464", *phase = "all";
	size_t n = 1000000, batch = 1000, first = 0;
	bool digests = false;
	unsigned clients = 2, window = 16;
	struct urllist urls = { 0 }, unseen = { 0 };
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
		case 'r': relaxed = true; break;
		case 'd': digests = true; break;
		case 'F': first = strtoull(optarg, NULL, 10); break;
		case 'N': ns = optarg; break;
		default:
			fprintf(stderr, "usage: url_bench [-H HOST:PORT] [-n N]"
			    " [-c CLIENTS] [-w WINDOW] [-b BATCH] "
			    "[--file PATH] [--phase P] [--relaxed] "
			    "[--first N] [--digests] [--namespace NAME]\n");
			return 2;
		}
	}
	if (clients < 1 || clients > 64)
		clients = 2;
	if (!strcmp(phase, "print")) {
		/* The synthetic URLs, a line each, for other programs. */
		for (size_t off = 0; off < n; off += 1000000) {
			size_t m = n - off < 1000000 ? n - off : 1000000;

			urlgen_synthetic(&urls, m, first + off);
			for (size_t i = 0; i < urls.n; i++)
				printf("%s\n", urls.urls[i]);
			urlgen_free(&urls);
		}
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (digests && (canon = server_canon(address)) == NULL)
		return 1;
	urlgen_synthetic(&urls, n, first);
	for (size_t i = 0; i < nfiles; i++)
		urlgen_file(&urls, files[i]);
	printf("bench urls=%zu clients=%u window=%u batch=%zu\n", urls.n,
	    clients, window, batch);

	if (!strcmp(phase, "submit") || !strcmp(phase, "all"))
		rc = run_phase("submit", NDDD_URL_SUBMIT, address,
		    urls.urls, urls.n, clients, window, batch);
	if (rc == 0 && (!strcmp(phase, "check") || !strcmp(phase, "all"))) {
		char **order = urlgen_shuffled(&urls, URLGEN_CHECK_SEED);

		rc = run_phase("check-seen", NDDD_URL_CHECK, address, order,
		    urls.n, clients, window, batch);
		free(order);
	}
	if (rc == 0 &&
	    (!strcmp(phase, "check-new") || !strcmp(phase, "all"))) {
		urlgen_synthetic(&unseen, n, URLGEN_UNSEEN_FIRST);
		rc = run_phase("check-unseen", NDDD_URL_CHECK, address,
		    unseen.urls, unseen.n, clients, window, batch);
	}
	urlgen_free(&urls);
	urlgen_free(&unseen);
	nddd_canon_free(canon);
	return rc ? 1 : 0;
}
