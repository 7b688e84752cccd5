/*
 * listener: a listening socket that hands each accepted connection to a
 * callback, for the protocol's listeners and the metrics listener alike.
 *
 * When accept() fails for want of resources (EMFILE, ENFILE, ENOBUFS,
 * ENOMEM), the connection stays queued in the kernel and the socket stays
 * readable: a listener that retried at once would spin the loop and log
 * every turn.  This one stops accepting for LISTENER_RETRY_MS, logs once
 * when such a spell begins and once when it ends, and meanwhile the loop
 * goes on serving the connections already open.
 *
 * Threads: the event loop's.
 */
#ifndef NDDD_LISTENER_H
#define NDDD_LISTENER_H

#include <event2/util.h>

struct event_base;
struct sockaddr;

#define LISTENER_RETRY_MS 100

struct listener;

/* An accepted connection (fd is the callback's to close). */
typedef void (*listener_cb)(void *arg, evutil_socket_t fd,
    const struct sockaddr *peer);

/*
 * Binds address ("HOST:PORT", "[IPv6]:PORT") and accepts into cb; name
 * ("listener", "TLS listener", "metrics") says which in the log.  NULL with
 * *cause (caller frees) if the address is not one or cannot be bound.
 */
struct listener *listener_new(struct event_base *base, const char *name,
    const char *address, listener_cb cb, void *arg, char **cause);
void listener_free(struct listener *l);

#endif
