/*
 * httpd: the operators' HTTP listener, off by default ([metrics] listen).
 *
 *   GET /metrics   the Prometheus text format: requests and latencies by
 *                  operation, the store, the filter, connections
 *   GET /health    200 "ok" while serving, 503 once shutting down
 *
 * Runs in the event loop (libevent's evhttp); it shares no port with the
 * protocol and answers nothing else.
 */
#ifndef NDDD_HTTPD_H
#define NDDD_HTTPD_H

struct dispatch;
struct event_base;
struct metrics;
struct server;

struct httpd;

/* Listens on address ("HOST:PORT").  NULL with *cause (caller frees). */
struct httpd *httpd_new(struct event_base *base, const char *address,
    struct metrics *m, struct dispatch *d, struct server *srv, char **cause);
void httpd_free(struct httpd *h);

#endif
