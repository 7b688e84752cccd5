/*
 * httpd: the operators' HTTP listener.  See httpd.h.
 *
 * Two GET endpoints do not need a general HTTP server, and libevent 2.1's
 * evhttp (Debian 12's) cannot bound how many connections it holds.  So the
 * listener is the protocol's own (listener.c: no spinning when descriptors
 * run out) and each connection is a bufferevent that reads one request
 * head, answers it and closes: no keep-alive, no body, a head of at most
 * HTTPD_MAX_HEAD bytes within HTTPD_TIMEOUT_S, at most
 * HTTPD_MAX_CONNECTIONS connections at once.
 */
#include "httpd.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "config.h"
#include "listener.h"
#include "log.h"
#include "metrics.h"
#include "server.h"

/* A scraper or two and a health checker; more at once is not one of
 * them. */
#define HTTPD_MAX_CONNECTIONS 16
#define HTTPD_MAX_HEAD 16384
#define HTTPD_TIMEOUT_S 10

struct httpd {
	struct listener *listener;
	struct event_base *base;
	struct metrics *metrics;
	httpd_gauges_fn gauges;
	void *gauges_arg;
	struct server *server;
	TAILQ_HEAD(, http_conn) conns;
	unsigned nconns;
};

struct http_conn {
	struct httpd *h;
	struct bufferevent *bev;
	TAILQ_ENTRY(http_conn) entry;
	bool answered;		/* close once the answer is sent */
};

static void
http_close(struct http_conn *hc)
{
	TAILQ_REMOVE(&hc->h->conns, hc, entry);
	hc->h->nconns--;
	bufferevent_free(hc->bev);
	free(hc);
}

/* Queues the whole answer; the connection closes once it is sent. */
static void
http_answer(struct http_conn *hc, const char *status, bool head_only,
    struct evbuffer *body)
{
	struct evbuffer *out = bufferevent_get_output(hc->bev);
	size_t len = body != NULL ? evbuffer_get_length(body) : 0;

	evbuffer_add_printf(out, "HTTP/1.1 %s\r\n"
	    "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, len);
	if (body != NULL && !head_only)
		evbuffer_add_buffer(out, body);
	hc->answered = true;
	bufferevent_disable(hc->bev, EV_READ);
}

static void
http_route(struct http_conn *hc, const char *method, const char *path)
{
	struct httpd *h = hc->h;
	bool head = strcmp(method, "HEAD") == 0;
	struct evbuffer *body;
	int stopping;

	if (!head && strcmp(method, "GET") != 0) {
		http_answer(hc, "405 Method Not Allowed", false, NULL);
		return;
	}
	if ((body = evbuffer_new()) == NULL) {
		http_answer(hc, "500 Internal Server Error", false, NULL);
		return;
	}
	if (strcmp(path, "/metrics") == 0) {
		metrics_render(h->metrics, body);
		h->gauges(h->gauges_arg, body);
		http_answer(hc, "200 OK", head, body);
	} else if (strcmp(path, "/health") == 0) {
		stopping = server_shutting_down(h->server);
		evbuffer_add_printf(body, "%s\n", stopping ? "shutting down" :
		    "ok");
		http_answer(hc, stopping ? "503 Service Unavailable" :
		    "200 OK", head, body);
	} else
		http_answer(hc, "404 Not Found", head, NULL);
	evbuffer_free(body);
}

/* Reads the request line, then waits for the end of the head. */
static void
http_read_cb(struct bufferevent *bev, void *arg)
{
	struct http_conn *hc = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end;
	char *line, method[16], path[256], version[16];
	size_t len;

	if (hc->answered)
		return;
	end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (end.pos == -1) {
		/* HTTP/1.0 clients may end lines with LF alone. */
		end = evbuffer_search(in, "\n\n", 2, NULL);
	}
	if (end.pos == -1) {
		if (evbuffer_get_length(in) > HTTPD_MAX_HEAD)
			http_answer(hc, "431 Request Header Fields Too Large",
			    false, NULL);
		return;
	}
	if ((size_t)end.pos > HTTPD_MAX_HEAD) {
		http_answer(hc, "431 Request Header Fields Too Large", false,
		    NULL);
		return;
	}
	line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF);
	if (line == NULL || sscanf(line, "%15s %255s %15s", method, path,
	    version) != 3 || strncmp(version, "HTTP/1.", 7) != 0) {
		free(line);
		http_answer(hc, "400 Bad Request", false, NULL);
		return;
	}
	free(line);
	http_route(hc, method, path);
}

static void
http_write_cb(struct bufferevent *bev, void *arg)
{
	struct http_conn *hc = arg;

	if (hc->answered &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		http_close(hc);
}

static void
http_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	/* End of file, an error or a timeout: nothing more to say. */
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		http_close(arg);
}

static void
http_accept_cb(void *arg, evutil_socket_t fd, const struct sockaddr *peer)
{
	struct httpd *h = arg;
	struct timeval tv = { HTTPD_TIMEOUT_S, 0 };
	struct http_conn *hc;

	(void)peer;
	if (h->nconns >= HTTPD_MAX_CONNECTIONS) {
		log_debug("%s: %u connections open; refusing one", __func__,
		    h->nconns);
		evutil_closesocket(fd);
		return;
	}
	if ((hc = calloc(1, sizeof(*hc))) == NULL ||
	    (hc->bev = bufferevent_socket_new(h->base, fd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		free(hc);
		evutil_closesocket(fd);
		return;
	}
	hc->h = h;
	TAILQ_INSERT_TAIL(&h->conns, hc, entry);
	h->nconns++;
	bufferevent_setcb(hc->bev, http_read_cb, http_write_cb, http_event_cb,
	    hc);
	/* Reading and writing each have HTTPD_TIMEOUT_S. */
	bufferevent_set_timeouts(hc->bev, &tv, &tv);
	bufferevent_enable(hc->bev, EV_READ | EV_WRITE);
}

struct httpd *
httpd_new(struct event_base *base, const char *address, struct metrics *m,
    httpd_gauges_fn gauges, void *arg, struct server *srv, char **cause)
{
	struct httpd *h;

	*cause = NULL;
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->base = base;
	h->metrics = m;
	h->gauges = gauges;
	h->gauges_arg = arg;
	h->server = srv;
	TAILQ_INIT(&h->conns);
	if ((h->listener = listener_new(base, "metrics", address,
	    http_accept_cb, h, cause)) == NULL) {
		free(h);
		return NULL;
	}
	/* The figures name no secret, but say much about the crawl. */
	if (!config_is_loopback(address))
		log_warnx("metrics listener on %s, beyond loopback: anyone "
		    "who can connect may read the figures (no token is "
		    "asked)", address);
	return h;
}

void
httpd_free(struct httpd *h)
{
	if (h == NULL)
		return;
	listener_free(h->listener);
	while (!TAILQ_EMPTY(&h->conns))
		http_close(TAILQ_FIRST(&h->conns));
	free(h);
}
