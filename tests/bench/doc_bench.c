/*
 * doc_bench: documents through a running nddd, end to end over loopback:
 * the Reuters-21578 bodies submitted as documents (fingerprinted by the
 * daemon's accelerator, stored, grouped), then queried by body.
 *
 *   doc_bench -H HOST:PORT --reuters DIR [-c CLIENTS] [-w WINDOW]
 *             [-r REPEAT]
 *
 * Request frames are encoded before the clock starts and replies decoded
 * as they come.  REPEAT > 1 submits the corpus again under other URLs.
 * Prints one line per phase:
 *   phase=doc-submit docs=N bytes=B seconds=S docs_per_s=R mb_per_s=M
 */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchnet.h"
#include "corpus.h"

struct work {
	struct bench_stream stream;
	size_t refused;		/* replies with a status other than OK */
	char error[256];	/* the stream's failure, if any */
};

static int
count_reply(void *arg, const Nddd__V1__Response *r)
{
	struct work *w = arg;

	if (r->status != NULL && r->status->code != 0)
		w->refused++;
	return 0;
}

static void *
client_main(void *arg)
{
	struct work *w = arg;

	if (bench_stream_run(&w->stream, w->error, sizeof(w->error)) == -1)
		return w;
	return NULL;
}

static int
run_phase(const char *name, const char *address, uint8_t **frames,
    size_t *lens, size_t n, size_t bytes, unsigned clients, unsigned window)
{
	pthread_t th[64];
	struct work w[64];
	size_t refused = 0;
	double t0, secs;
	int error = 0;

	for (unsigned i = 0; i < clients; i++) {
		size_t b = n * i / clients, e = n * (i + 1) / clients;

		w[i] = (struct work){ .stream = { .address = address,
		    .frames = frames + b, .lens = lens + b, .n = e - b,
		    .window = window, .reply = count_reply, .arg = &w[i] } };
	}
	t0 = bench_now();
	for (unsigned i = 0; i < clients; i++)
		pthread_create(&th[i], NULL, client_main, &w[i]);
	for (unsigned i = 0; i < clients; i++) {
		void *failed_stream;

		pthread_join(th[i], &failed_stream);
		refused += w[i].refused;
		if (failed_stream != NULL) {
			fprintf(stderr, "doc_bench: %s\n", w[i].error);
			error = 1;
		}
	}
	secs = bench_now() - t0;
	/* A phase that lost a connection has no figure to give. */
	if (error)
		return -1;
	printf("phase=%s docs=%zu bytes=%zu seconds=%.3f docs_per_s=%.0f "
	    "mb_per_s=%.1f refused=%zu\n", name, n, bytes, secs,
	    (double)n / secs, (double)bytes / secs / 1e6, refused);
	fflush(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "reuters", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	const char *address = "127.0.0.1:6464", *dir = NULL;
	unsigned clients = 2, window = 64, repeat = 1;
	struct corpus *co;
	uint8_t **frames;
	size_t *lens, n, bytes = 0;
	int ch, rc = 0;

	while ((ch = getopt_long(argc, argv, "H:c:w:r:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'H': address = optarg; break;
		case 'c': clients = (unsigned)atoi(optarg); break;
		case 'w': window = (unsigned)atoi(optarg); break;
		case 'r': repeat = (unsigned)atoi(optarg); break;
		case 'R': dir = optarg; break;
		default:
			fprintf(stderr, "usage: doc_bench -H HOST:PORT --reuters "
			    "DIR [-c N] [-w N] [-r N]\n");
			return 2;
		}
	}
	if (dir == NULL || (co = corpus_reuters(dir, 0)) == NULL) {
		fprintf(stderr, "doc_bench: cannot read the Reuters corpus\n");
		return 2;
	}
	if (clients < 1 || clients > 64)
		clients = 2;
	n = co->n * repeat;
	frames = calloc(n, sizeof(*frames));
	lens = calloc(n, sizeof(*lens));
	for (size_t i = 0; i < n; i++) {
		Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
		Nddd__V1__DocSubmit d = NDDD__V1__DOC_SUBMIT__INIT;
		const struct corpus_doc *doc = &co->docs[i % co->n];
		char url[96];

		snprintf(url, sizeof(url), "http://reuters.example/%zu/%zu",
		    i / co->n, i % co->n);
		d.url.data = (uint8_t *)url;
		d.url.len = strlen(url);
		d.body.data = (uint8_t *)doc->data;
		d.body.len = doc->len;
		req.id = i + 1;
		req.op_case = NDDD__V1__REQUEST__OP_DOC_SUBMIT;
		req.doc_submit = &d;
		frames[i] = bench_frame(&req, &lens[i]);
		bytes += doc->len;
	}
	printf("bench docs=%zu bytes=%zu clients=%u window=%u\n", n, bytes,
	    clients, window);
	rc |= run_phase("doc-submit", address, frames, lens, n, bytes,
	    clients, window);
	for (size_t i = 0; i < n; i++) {
		Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
		Nddd__V1__DocQuery q = NDDD__V1__DOC_QUERY__INIT;
		Nddd__V1__DocBody b = NDDD__V1__DOC_BODY__INIT;
		const struct corpus_doc *doc = &co->docs[i % co->n];

		free(frames[i]);
		b.body.data = (uint8_t *)doc->data;
		b.body.len = doc->len;
		q.what_case = NDDD__V1__DOC_QUERY__WHAT_BODY;
		q.body = &b;
		req.id = i + 1;
		req.op_case = NDDD__V1__REQUEST__OP_DOC_QUERY;
		req.doc_query = &q;
		frames[i] = bench_frame(&req, &lens[i]);
	}
	rc |= run_phase("doc-query", address, frames, lens, n, bytes,
	    clients, window);
	for (size_t i = 0; i < n; i++)
		free(frames[i]);
	free(frames);
	free(lens);
	corpus_free(co);
	return rc ? 1 : 0;
}
