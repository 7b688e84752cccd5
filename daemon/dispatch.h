/*
 * dispatch: from a frame to its operation.
 *
 * The event loop only moves bytes: each frame's payload is copied into a
 * task and handed to the request workers, which decode, validate and carry
 * it out.  Reads (url_check, stats) are answered by the worker; mutations
 * become store-writer jobs answered when they commit.  Replies reach the
 * connection from the loop.
 */
#ifndef NDDD_DISPATCH_H
#define NDDD_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct conn;
struct event_base;
struct server;
struct store;
struct urlset;
struct writer;

struct dispatch;

/*
 * Starts cfg->workers request workers (each with a store reader and a URL
 * keyer).  Returns NULL if they cannot start.
 */
struct dispatch *dispatch_new(const struct config *cfg,
    struct event_base *base, struct store *st, struct urlset *us,
    struct writer *w);
/* Stops the workers (finishing queued requests first) and frees d. */
void dispatch_free(struct dispatch *d);
/* Tells the dispatcher which server it serves (for statistics). */
void dispatch_set_server(struct dispatch *d, struct server *srv);

/* Loop thread: takes one frame's payload from c; the reply comes later. */
void dispatch_frame(struct dispatch *d, struct conn *c, const uint8_t *payload,
    size_t len);

/* Requests accepted and not yet answered. */
size_t dispatch_pending(struct dispatch *d);

#endif
