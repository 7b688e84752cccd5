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
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/util.h>

#include "corpus.h"
#include "nddd.pb-c.h"

struct work {
	const char *address;
	uint8_t **frames;
	size_t *frame_len;
	size_t nframes;
	unsigned window;
	size_t failed;
	int error;
};

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint8_t *
frame_of(Nddd__V1__Request *req, size_t *len)
{
	size_t n = nddd__v1__request__get_packed_size(req);
	uint8_t *f = malloc(n + 4);

	f[0] = (uint8_t)(n >> 24);
	f[1] = (uint8_t)(n >> 16);
	f[2] = (uint8_t)(n >> 8);
	f[3] = (uint8_t)n;
	nddd__v1__request__pack(req, f + 4);
	*len = n + 4;
	return f;
}

static int
connect_to(const char *address)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss), fd, one = 1;

	if (evutil_parse_sockaddr_port(address, (struct sockaddr *)&ss,
	    &len) == -1 || (fd = socket(ss.ss_family, SOCK_STREAM, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, (socklen_t)len) == -1) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void *
client_main(void *arg)
{
	struct work *w = arg;
	size_t sent = 0, answered = 0, have = 0, cap = 1 << 20;
	uint8_t *in = malloc(cap);
	int fd = connect_to(w->address);

	if (fd == -1) {
		w->error = 1;
		free(in);
		return NULL;
	}
	while (answered < w->nframes) {
		size_t used = 0;
		ssize_t n;

		while (sent < w->nframes && sent - answered < w->window) {
			const uint8_t *p = w->frames[sent];
			size_t left = w->frame_len[sent];

			while (left > 0) {
				ssize_t k = write(fd, p, left);

				if (k <= 0) {
					w->error = 1;
					goto out;
				}
				p += k;
				left -= (size_t)k;
			}
			sent++;
		}
		if ((n = read(fd, in + have, cap - have)) <= 0) {
			w->error = 1;
			goto out;
		}
		have += (size_t)n;
		for (;;) {
			Nddd__V1__Response *r;
			uint32_t len;

			if (have - used < 4)
				break;
			len = (uint32_t)in[used] << 24 | in[used + 1] << 16 |
			    in[used + 2] << 8 | in[used + 3];
			if (have - used < 4 + (size_t)len)
				break;
			r = nddd__v1__response__unpack(NULL, len,
			    in + used + 4);
			if (r == NULL) {
				w->error = 1;
				goto out;
			}
			if (r->status != NULL && r->status->code != 0)
				w->failed++;
			nddd__v1__response__free_unpacked(r, NULL);
			used += 4 + len;
			answered++;
		}
		memmove(in, in + used, have - used);
		have -= used;
	}
out:
	close(fd);
	free(in);
	return NULL;
}

static void
run_phase(const char *name, const char *address, uint8_t **frames,
    size_t *lens, size_t n, size_t bytes, unsigned clients, unsigned window)
{
	pthread_t th[64];
	struct work w[64];
	size_t failed = 0;
	double t0, secs;

	for (unsigned i = 0; i < clients; i++) {
		size_t b = n * i / clients, e = n * (i + 1) / clients;

		w[i] = (struct work){ .address = address, .frames = frames + b,
		    .frame_len = lens + b, .nframes = e - b,
		    .window = window };
	}
	t0 = now_seconds();
	for (unsigned i = 0; i < clients; i++)
		pthread_create(&th[i], NULL, client_main, &w[i]);
	for (unsigned i = 0; i < clients; i++) {
		pthread_join(th[i], NULL);
		failed += w[i].failed;
		if (w[i].error)
			fprintf(stderr, "doc_bench: a client failed\n");
	}
	secs = now_seconds() - t0;
	printf("phase=%s docs=%zu bytes=%zu seconds=%.3f docs_per_s=%.0f "
	    "mb_per_s=%.1f refused=%zu\n", name, n, bytes, secs,
	    (double)n / secs, (double)bytes / secs / 1e6, failed);
	fflush(stdout);
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
	int ch;

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
		frames[i] = frame_of(&req, &lens[i]);
		bytes += doc->len;
	}
	printf("bench docs=%zu bytes=%zu clients=%u window=%u\n", n, bytes,
	    clients, window);
	run_phase("doc-submit", address, frames, lens, n, bytes, clients,
	    window);
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
		frames[i] = frame_of(&req, &lens[i]);
	}
	run_phase("doc-query", address, frames, lens, n, bytes, clients,
	    window);
	for (size_t i = 0; i < n; i++)
		free(frames[i]);
	free(frames);
	free(lens);
	corpus_free(co);
	return 0;
}
