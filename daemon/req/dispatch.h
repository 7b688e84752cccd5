/*
 * dispatch: from a frame to its operation.
 *
 * The event loop only moves bytes: each frame's payload is copied into a
 * task and handed to the request workers, which decode it, find its
 * operation (operation.h), authorize, validate and run its handler.  Reads
 * (url_check, stats, doc_get) are answered by the worker; mutations and
 * verification become writer jobs that take the request's reply along and
 * finish it when they are done (reply.h).  Replies reach the connection
 * from the loop, where every request is counted in the metrics.
 * docs/threads.md follows every operation across the threads.
 */
#ifndef NDDD_DISPATCH_H
#define NDDD_DISPATCH_H

#include <stddef.h>

struct accel;
struct auth;
struct config;
struct docset;
struct evbuffer;
struct event_base;
struct metrics;
struct server;
struct server_handler;
struct store;
struct urlset;
struct writer;

struct dispatch;

/* What the dispatcher serves requests with. */
struct dispatch_deps {
	struct store *st;
	struct urlset *us;
	struct docset *ds;
	struct writer *w;
	struct accel *acc;
	struct metrics *metrics;
	struct auth *auth;		/* NULL: no tokens; becomes d's */
};

/*
 * Starts cfg->workers request workers (each with a store reader and a URL
 * keyer).  Returns NULL if they cannot start.
 */
struct dispatch *dispatch_new(const struct config *cfg,
    struct event_base *base, const struct dispatch_deps *deps);
/* Stops the workers (finishing queued requests first) and frees d. */
void dispatch_free(struct dispatch *d);
/* Tells the dispatcher which server it serves (for statistics). */
void dispatch_set_server(struct dispatch *d, struct server *srv);
/* Replaces the tokens (SIGHUP); the old ones are freed. */
void dispatch_set_auth(struct dispatch *d, struct auth *auth);

/*
 * The server's handler: each frame goes to a worker (its reply comes
 * later); pending is dispatch_pending.
 */
void dispatch_server_handler(struct dispatch *d, struct server_handler *h);

/* Requests accepted and not yet answered. */
size_t dispatch_pending(struct dispatch *d);

/*
 * Appends the daemon's gauges (store, filter, connections...) to out; d is
 * a struct dispatch (the signature of httpd_gauges_fn).
 */
void dispatch_render_gauges(void *d, struct evbuffer *out);

#endif
