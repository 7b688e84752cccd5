/*
 * load_bench: many concurrent pipelining clients against a running nddd,
 * for a bounded time, in one event loop (libevent, plain or TLS).
 *
 *   load_bench -H HOST:PORT [-c CONNS] [-w WINDOW] [-b BATCH] [-d SECONDS]
 *              [--tls --ca FILE] [--idle]
 *
 * Each connection keeps WINDOW url_check requests of BATCH URLs in flight
 * and sends a new one for every reply.  --idle opens CONNS connections and
 * holds them, silent, for SECONDS: for measuring what an idle connection
 * costs the daemon.  Prints one line:
 *   load conns=N connected=N tls=0|1 seconds=S requests=R urls_per_s=U
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/util.h>
#include <openssl/ssl.h>

#include "nddd.pb-c.h"

struct load {
	struct event_base *base;
	SSL_CTX *tls;
	struct sockaddr_storage addr;
	int addrlen;
	unsigned window;
	bool idle;
	uint8_t *frame;
	size_t frame_len;
	unsigned connected, failed;
	uint64_t replies;
	bool stopping;
};

static void
send_frames(struct load *l, struct bufferevent *bev, unsigned n)
{
	for (unsigned i = 0; i < n && !l->stopping; i++)
		bufferevent_write(bev, l->frame, l->frame_len);
}

static void
read_cb(struct bufferevent *bev, void *arg)
{
	struct load *l = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	unsigned done = 0;

	for (;;) {
		uint8_t h[4];
		uint32_t len;

		if (evbuffer_copyout(in, h, 4) < 4)
			break;
		len = (uint32_t)h[0] << 24 | h[1] << 16 | h[2] << 8 | h[3];
		if (evbuffer_get_length(in) < 4 + (size_t)len)
			break;
		evbuffer_drain(in, 4 + (size_t)len);
		done++;
	}
	l->replies += done;
	send_frames(l, bev, done);
}

static void
event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct load *l = arg;

	if (what & BEV_EVENT_CONNECTED) {
		l->connected++;
		if (!l->idle)
			send_frames(l, bev, l->window);
		return;
	}
	if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) {
		if (!l->stopping)
			l->failed++;
		bufferevent_free(bev);
	}
}

static void
make_frame(struct load *l, size_t batch)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__UrlBatch b = NDDD__V1__URL_BATCH__INIT;
	ProtobufCBinaryData *urls = calloc(batch, sizeof(*urls));
	size_t len;

	for (size_t i = 0; i < batch; i++) {
		char *u;

		if (asprintf(&u, "http://www.site%zu.example/load/%zu.html",
		    i % 977, i) == -1)
			exit(1);
		urls[i].data = (uint8_t *)u;
		urls[i].len = strlen(u);
	}
	b.n_urls = batch;
	b.urls = urls;
	req.id = 1;
	req.op_case = NDDD__V1__REQUEST__OP_URL_CHECK;
	req.url_check = &b;
	len = nddd__v1__request__get_packed_size(&req);
	l->frame = malloc(4 + len);
	l->frame[0] = (uint8_t)(len >> 24);
	l->frame[1] = (uint8_t)(len >> 16);
	l->frame[2] = (uint8_t)(len >> 8);
	l->frame[3] = (uint8_t)len;
	nddd__v1__request__pack(&req, l->frame + 4);
	l->frame_len = 4 + len;
	for (size_t i = 0; i < batch; i++)
		free(urls[i].data);
	free(urls);
}

static void
stop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct load *l = arg;

	(void)fd;
	(void)what;
	l->stopping = true;
	event_base_loopbreak(l->base);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tls", no_argument, NULL, 'S' },
		{ "ca", required_argument, NULL, 'A' },
		{ "idle", no_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	struct load l = { .window = 4, .addrlen = sizeof(l.addr) };
	const char *address = "127.0.0.1:6464", *ca = NULL;
	unsigned conns = 100, seconds = 10;
	size_t batch = 100;
	bool tls = false;
	struct timeval tv;
	struct rlimit rl;
	struct timespec t0, t1;
	double secs;
	int ch;

	while ((ch = getopt_long(argc, argv, "H:c:w:b:d:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'H': address = optarg; break;
		case 'c': conns = (unsigned)atoi(optarg); break;
		case 'w': l.window = (unsigned)atoi(optarg); break;
		case 'b': batch = strtoull(optarg, NULL, 10); break;
		case 'd': seconds = (unsigned)atoi(optarg); break;
		case 'S': tls = true; break;
		case 'A': ca = optarg; break;
		case 'I': l.idle = true; break;
		default:
			fprintf(stderr, "usage: load_bench -H HOST:PORT [-c N] "
			    "[-w N] [-b N] [-d S] [--tls --ca FILE] [--idle]\n");
			return 2;
		}
	}
	/* One descriptor per connection, and some. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < conns + 64) {
		rl.rlim_cur = rl.rlim_max < conns + 64 ? rl.rlim_max :
		    conns + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (evutil_parse_sockaddr_port(address, (struct sockaddr *)&l.addr,
	    &l.addrlen) == -1) {
		fprintf(stderr, "load_bench: bad address %s\n", address);
		return 2;
	}
	l.base = event_base_new();
	make_frame(&l, batch);
	if (tls) {
		l.tls = SSL_CTX_new(TLS_client_method());
		SSL_CTX_set_verify(l.tls, SSL_VERIFY_PEER, NULL);
		if (ca == NULL ||
		    SSL_CTX_load_verify_locations(l.tls, ca, NULL) != 1) {
			fprintf(stderr, "load_bench: --tls needs --ca FILE\n");
			return 2;
		}
	}
	for (unsigned i = 0; i < conns; i++) {
		struct bufferevent *bev;

		if (tls)
			bev = bufferevent_openssl_socket_new(l.base, -1,
			    SSL_new(l.tls), BUFFEREVENT_SSL_CONNECTING,
			    BEV_OPT_CLOSE_ON_FREE);
		else
			bev = bufferevent_socket_new(l.base, -1,
			    BEV_OPT_CLOSE_ON_FREE);
		bufferevent_setcb(bev, read_cb, NULL, event_cb, &l);
		bufferevent_enable(bev, EV_READ | EV_WRITE);
		if (bufferevent_socket_connect(bev, (struct sockaddr *)&l.addr,
		    l.addrlen) == -1) {
			l.failed++;
			bufferevent_free(bev);
		}
	}
	tv.tv_sec = seconds;
	tv.tv_usec = 0;
	event_base_once(l.base, -1, EV_TIMEOUT, stop_cb, &l, &tv);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	event_base_dispatch(l.base);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("load conns=%u connected=%u failed=%u tls=%d seconds=%.2f "
	    "requests=%llu urls_per_s=%.0f\n", conns, l.connected, l.failed,
	    tls, secs, (unsigned long long)l.replies,
	    (double)l.replies * (double)batch / secs);
	return 0;
}
