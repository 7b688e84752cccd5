/*
 * httpd: the operators' HTTP listener.  See httpd.h.
 */
#include "httpd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "metrics.h"
#include "server.h"

struct httpd {
	struct evhttp *http;
	struct metrics *metrics;
	httpd_gauges_fn gauges;
	void *gauges_arg;
	struct server *server;
};

static void
send_text(struct evhttp_request *req, int code, const char *reason,
    struct evbuffer *body)
{
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, code, reason, body);
}

static void
on_metrics(struct evhttp_request *req, void *arg)
{
	struct httpd *h = arg;
	struct evbuffer *body = evbuffer_new();

	if (body == NULL) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	metrics_render(h->metrics, body);
	h->gauges(h->gauges_arg, body);
	send_text(req, 200, "OK", body);
	evbuffer_free(body);
}

static void
on_health(struct evhttp_request *req, void *arg)
{
	struct httpd *h = arg;
	struct evbuffer *body = evbuffer_new();
	int stopping = server_shutting_down(h->server);

	if (body == NULL) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	evbuffer_add_printf(body, "%s\n", stopping ? "shutting down" : "ok");
	send_text(req, stopping ? 503 : 200, stopping ? "Service Unavailable" :
	    "OK", body);
	evbuffer_free(body);
}

struct httpd *
httpd_new(struct event_base *base, const char *address, struct metrics *m,
    httpd_gauges_fn gauges, void *arg, struct server *srv, char **cause)
{
	struct httpd *h;
	char host[128];
	const char *colon = strrchr(address, ':');
	size_t hlen;
	int port;

	*cause = NULL;
	if (colon == NULL || (hlen = (size_t)(colon - address)) >= sizeof(host))
		goto bad;
	memcpy(host, address, hlen);
	host[hlen] = '\0';
	/* evhttp wants an IPv6 address without its brackets. */
	if (host[0] == '[' && hlen > 2 && host[hlen - 1] == ']') {
		memmove(host, host + 1, hlen - 2);
		host[hlen - 2] = '\0';
	}
	port = atoi(colon + 1);
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->metrics = m;
	h->gauges = gauges;
	h->gauges_arg = arg;
	h->server = srv;
	if ((h->http = evhttp_new(base)) == NULL ||
	    evhttp_bind_socket(h->http, host, (ev_uint16_t)port) != 0) {
		if (asprintf(cause, "metrics: cannot listen on %s", address) ==
		    -1)
			*cause = NULL;
		httpd_free(h);
		return NULL;
	}
	evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_cb(h->http, "/metrics", on_metrics, h);
	evhttp_set_cb(h->http, "/health", on_health, h);
	/* Bounds on what a client may send this listener. */
	evhttp_set_max_headers_size(h->http, 16384);
	evhttp_set_max_body_size(h->http, 0);
	evhttp_set_timeout(h->http, 10);
	return h;
bad:
	if (asprintf(cause, "metrics: %s is not HOST:PORT", address) == -1)
		*cause = NULL;
	return NULL;
}

void
httpd_free(struct httpd *h)
{
	if (h == NULL)
		return;
	if (h->http != NULL)
		evhttp_free(h->http);
	free(h);
}
