/*
 * dispatch: from a frame to its operation.
 *
 * The event loop only moves bytes: each frame's payload is copied into a
 * task and handed to the request workers, which decode, authorize,
 * validate and carry it out.  Reads (url_check, stats) are answered by the
 * worker; mutations and verification become store-writer jobs answered
 * when they are done.  Replies reach the connection from the loop, where
 * every request is counted in the metrics.
 */
#ifndef NDDD_DISPATCH_H
#define NDDD_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "metrics.h"

struct accel;
struct auth;
struct config;
struct docset;
struct conn;
struct evbuffer;
struct event_base;
struct server;
struct server_handler;
struct store;
struct urlset;
struct writer;

struct dispatch;
struct store_txn;
struct url_keyer;
struct urlset_reader;

/* What one request worker owns; every task's run gets it. */
struct worker_ctx {
	struct url_keyer *keyer;
	struct urlset_reader *urls;	/* URL checks */
	struct store_txn *reader;	/* a read transaction, renewed per use */
	struct arena arena;		/* one request's memory */
};

/*
 * Where a request came from and when, carried by whatever answers it.
 * Finish it exactly once, in the loop thread, with dispatch_finish.
 */
struct request_origin {
	struct dispatch *d;
	struct conn *conn;
	uint64_t id;
	uint64_t t0_ns;
	enum metric_op op;
};

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

/* Loop thread: takes one frame's payload from c; the reply comes later. */
void dispatch_frame(struct dispatch *d, struct conn *c, const uint8_t *payload,
    size_t len);
/* The server's handler of frames: dispatch_frame and dispatch_pending. */
void dispatch_server_handler(struct dispatch *d, struct server_handler *h);

/*
 * Loop thread: sends reply (frames; may be NULL) to the origin's
 * connection, counts the request in the metrics and releases the
 * connection's hold.
 */
void dispatch_finish(const struct request_origin *o, struct evbuffer *reply,
    bool failed);

/* Requests accepted and not yet answered. */
size_t dispatch_pending(struct dispatch *d);

/*
 * Appends the daemon's gauges (store, filter, connections...) to out; d is
 * a struct dispatch (the signature of httpd_gauges_fn).
 */
void dispatch_render_gauges(void *d, struct evbuffer *out);

#endif
