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
 * batches of BATCH URLs in flight.  The request frames are encoded before
 * the clock starts and the replies decoded as they come (every count is
 * checked), so the figure is the server's, not the client's encoder's.
 * Prints one line per phase:
 *   phase=submit urls=N seconds=S urls_per_s=R
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

#include "nddd.h"
#include "nddd.pb-c.h"
#include "urlgen.h"

struct work {
	const char *address;
	char **urls;
	size_t batch;
	unsigned window;
	enum nddd_url_op op;
	size_t begin, end;	/* this client's slice */
	uint8_t **frames;	/* pre-encoded requests, one per batch */
	size_t *frame_len;
	size_t nframes;
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

/* Encodes this client's batches as frames, before any timing. */
static void
encode_frames(struct work *w)
{
	size_t n = w->end - w->begin;
	ProtobufCBinaryData *items = calloc(w->batch, sizeof(*items));

	w->nframes = (n + w->batch - 1) / w->batch;
	w->frames = calloc(w->nframes + 1, sizeof(*w->frames));
	w->frame_len = calloc(w->nframes + 1, sizeof(*w->frame_len));
	for (size_t f = 0; f < w->nframes; f++) {
		Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
		Nddd__V1__UrlBatch b = NDDD__V1__URL_BATCH__INIT;
		size_t from = w->begin + f * w->batch, m, len;

		m = w->end - from < w->batch ? w->end - from : w->batch;
		for (size_t i = 0; i < m; i++) {
			items[i].data = (uint8_t *)w->urls[from + i];
			items[i].len = strlen(w->urls[from + i]);
		}
		b.n_urls = m;
		b.urls = items;
		req.id = f + 1;
		if (w->op == NDDD_URL_SUBMIT) {
			req.op_case = NDDD__V1__REQUEST__OP_URL_SUBMIT;
			req.url_submit = &b;
		} else {
			req.op_case = NDDD__V1__REQUEST__OP_URL_CHECK;
			req.url_check = &b;
		}
		len = nddd__v1__request__get_packed_size(&req);
		w->frames[f] = malloc(len + 4);
		w->frames[f][0] = (uint8_t)(len >> 24);
		w->frames[f][1] = (uint8_t)(len >> 16);
		w->frames[f][2] = (uint8_t)(len >> 8);
		w->frames[f][3] = (uint8_t)len;
		nddd__v1__request__pack(&req, w->frames[f] + 4);
		w->frame_len[f] = len + 4;
	}
	free(items);
}

static int
connect_to(const char *address)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss), fd, one = 1;

	if (evutil_parse_sockaddr_port(address, (struct sockaddr *)&ss,
	    &len) == -1)
		return -1;
	if ((fd = socket(ss.ss_family, SOCK_STREAM, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, (socklen_t)len) == -1) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int
write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void *
client_main(void *arg)
{
	struct work *w = arg;
	size_t sent = 0, answered = 0, have = 0, cap = 1 << 20;
	uint8_t *in = malloc(cap);
	int fd = connect_to(w->address);

	if (fd == -1) {
		fprintf(stderr, "url_bench: cannot connect to %s\n",
		    w->address);
		w->error = 1;
		free(in);
		return NULL;
	}
	while (answered < w->nframes) {
		size_t used = 0;
		ssize_t n;

		while (sent < w->nframes && sent - answered < w->window) {
			if (write_all(fd, w->frames[sent], w->frame_len[sent])) {
				w->error = 1;
				goto out;
			}
			sent++;
		}
		if ((n = read(fd, in + have, cap - have)) <= 0) {
			fprintf(stderr, "url_bench: connection lost\n");
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
			if (have - used < 4 + (size_t)len) {
				if (4 + (size_t)len > cap) {
					cap = 8 + (size_t)len;
					in = realloc(in, cap);
				}
				break;
			}
			r = nddd__v1__response__unpack(NULL, len,
			    in + used + 4);
			if (r == NULL || r->result_case !=
			    NDDD__V1__RESPONSE__RESULT_URLS) {
				fprintf(stderr, "url_bench: request refused: "
				    "%s\n", r && r->status ? r->status->message :
				    "malformed reply");
				w->error = 1;
				goto out;
			}
			w->failed += r->urls->n_errors;
			for (size_t i = 0; i < r->urls->n_counts; i++)
				w->counted += r->urls->counts[i] > 0;
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

static int
run_phase(const char *name, enum nddd_url_op op, const char *address,
    char **urls, size_t n, unsigned clients, unsigned window, size_t batch)
{
	pthread_t th[64];
	struct work w[64];
	size_t failed = 0, counted = 0;
	double t0, secs;
	int error = 0;

	for (unsigned i = 0; i < clients; i++) {
		w[i] = (struct work){
			.address = address, .urls = urls,
			.batch = batch, .window = window, .op = op,
			.begin = n * i / clients, .end = n * (i + 1) / clients,
		};
		encode_frames(&w[i]);
	}
	t0 = now_seconds();
	for (unsigned i = 0; i < clients; i++)
		pthread_create(&th[i], NULL, client_main, &w[i]);
	for (unsigned i = 0; i < clients; i++) {
		pthread_join(th[i], NULL);
		failed += w[i].failed;
		counted += w[i].counted;
		error |= w[i].error;
	}
	secs = now_seconds() - t0;
	for (unsigned i = 0; i < clients; i++) {
		for (size_t f = 0; f < w[i].nframes; f++)
			free(w[i].frames[f]);
		free(w[i].frames);
		free(w[i].frame_len);
	}
	printf("phase=%s urls=%zu seconds=%.3f urls_per_s=%.0f failed=%zu "
	    "count_nonzero=%zu\n", name, n, secs, (double)n / secs, failed,
	    counted);
	fflush(stdout);
	return error ? -1 : 0;
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
	size_t n = 1000000, batch = 1000;
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
		default:
			fprintf(stderr, "usage: url_bench [-H HOST:PORT] [-n N]"
			    " [-c CLIENTS] [-w WINDOW] [-b BATCH] "
			    "[--file PATH] [--phase P]\n");
			return 2;
		}
	}
	if (clients < 1 || clients > 64)
		clients = 2;
	urlgen_synthetic(&urls, n, 0);
	for (size_t i = 0; i < nfiles; i++)
		urlgen_file(&urls, files[i]);
	printf("bench urls=%zu clients=%u window=%u batch=%zu\n", urls.n,
	    clients, window, batch);

	if (!strcmp(phase, "submit") || !strcmp(phase, "all"))
		rc |= run_phase("submit", NDDD_URL_SUBMIT, address,
		    urls.urls, urls.n, clients, window, batch);
	if (!strcmp(phase, "check") || !strcmp(phase, "all"))
		rc |= run_phase("check-seen", NDDD_URL_CHECK, address,
		    urls.urls, urls.n, clients, window, batch);
	if (!strcmp(phase, "check-new") || !strcmp(phase, "all")) {
		urlgen_synthetic(&unseen, n, 1000000000);
		rc |= run_phase("check-unseen", NDDD_URL_CHECK, address,
		    unseen.urls, unseen.n, clients, window, batch);
	}
	urlgen_free(&urls);
	urlgen_free(&unseen);
	return rc ? 1 : 0;
}
