/*
 * httpd: the operators' HTTP listener, off by default ([metrics] listen).
 *
 *   GET /metrics   the Prometheus text format: requests and latencies by
 *                  operation, the store, the filter, connections
 *   GET /health    200 "ok" while serving, 503 once shutting down
 *
 * Runs in the event loop; it shares no port with the protocol and answers
 * nothing else.  One request per connection, at most 16 connections at
 * once, 10 s to send a request head of at most 16 KiB; binding it beyond
 * loopback is logged as a warning.
 */
#ifndef NDDD_HTTPD_H
#define NDDD_HTTPD_H

struct event_base;
struct evbuffer;
struct metrics;
struct server;

struct httpd;

/* Appends the gauges of the layers above (store, filter...) to out. */
typedef void (*httpd_gauges_fn)(void *arg, struct evbuffer *out);

/*
 * Listens on address ("HOST:PORT"); /metrics renders m, then calls gauges
 * with arg.  NULL with *cause (caller frees).
 */
struct httpd *httpd_new(struct event_base *base, const char *address,
    struct metrics *m, httpd_gauges_fn gauges, void *arg, struct server *srv,
    char **cause);
void httpd_free(struct httpd *h);

#endif
