/*
 * server: the TCP front end on libevent.
 *
 * Accepts connections, cuts their input into frames, hands each frame to the
 * layer above (a struct server_handler) and writes replies.
 *
 * Memory is bounded per connection and in total.  A frame longer than
 * [server] max_frame is refused before it is read.  Each request in flight
 * reserves the bytes its reply may take (conn_hold), and reading stops
 * while more than max_inflight requests await replies or while the replies
 * queued plus those reserved exceed output_high_water; it resumes as the
 * client takes them.  A connection thus holds at most output_high_water,
 * one reply's bound and one frame, whether its client reads or not; one
 * that takes no reply bytes for write_timeout is closed.  All connections'
 * buffers and reservations together are counted against buffer_memory:
 * beyond it the layer above refuses new requests (conn_buffers_full), and
 * only connections holding less than 64 KiB are read until there is room
 * again, so that the total stays within buffer_memory plus 64 KiB and a
 * refusal per connection.
 * A connection beyond max_connections is told RESOURCE_EXHAUSTED and
 * closed; so is one whose frame does not arrive whole within
 * frame_timeout.  A connection idle for idle_timeout, with nothing in
 * flight, is closed.  A client that shuts down its sending side still gets
 * the replies to what it sent; the connection closes once they are sent.
 *
 * Two listeners speak the same protocol: plain TCP ([server] listen) and
 * TLS ([tls] listen, OpenSSL through bufferevent_openssl, optionally
 * requiring client certificates; its context is made by tls.h).
 *
 * Shutdown (server_shutdown): stop accepting and reading, let every request
 * in flight finish (however long that takes), give clients shutdown_timeout
 * to take their replies, then close every connection and leave the loop.
 *
 * Threads: everything here runs in the event loop thread.
 */
#ifndef NDDD_SERVER_H
#define NDDD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "nddd.pb-c.h"

struct config;
struct event_base;
struct evbuffer;
struct metrics;

struct conn;
struct server;

/* What the server hands its frames to: the layer above it. */
struct server_handler {
	/*
	 * Loop thread: a frame from c of len payload bytes, at the front of
	 * in during the call: frame_copy takes the payload (the server
	 * removes the frame after the call).  The reply comes later, through
	 * conn_send_buffer; conn_hold keeps c while it is awaited.
	 */
	void (*frame)(void *arg, struct conn *c, struct evbuffer *in,
	    uint32_t len);
	/* Requests accepted and not yet answered (a shutdown waits). */
	size_t (*pending)(void *arg);
	void *arg;
};

/*
 * Binds cfg->listen and cfg->tls_listen (those set) and starts accepting
 * into base, handing frames to h (copied).  Returns NULL with *cause
 * (caller frees) if an address cannot be bound or the TLS certificate, key
 * or CA cannot be loaded.
 */
struct server *server_new(struct event_base *base, const struct config *cfg,
    const struct server_handler *h, struct metrics *m, char **cause);
void server_free(struct server *srv);

/* Begins the graceful shutdown; the loop exits when it is complete. */
void server_shutdown(struct server *srv);

/* Open connections.  Any thread. */
uint32_t server_connections(const struct server *srv);
/* True once server_shutdown has begun. */
bool server_shutting_down(const struct server *srv);

/* Moves the frames in buf to c's output (dropped if c has been closed). */
void conn_send_buffer(struct conn *c, struct evbuffer *buf);
/* Sends an error response with request id (0: not tied to a request). */
void conn_send_error(struct conn *c, uint64_t id, Nddd__V1__Code code,
    const char *message);
/* Sends an error response with id 0, then closes c once it is sent. */
void conn_fail(struct conn *c, Nddd__V1__Code code, const char *message);
/*
 * A request of c continues asynchronously: c stays allocated and counts it
 * in flight until conn_release, and reply_bound bytes (the most its reply
 * may take) are reserved for it meanwhile.  conn_release is given the same
 * bound.
 */
void conn_hold(struct conn *c, size_t reply_bound);
void conn_release(struct conn *c, size_t reply_bound);
/*
 * True when all connections' buffers and reservations exceed
 * [server] buffer_memory: new requests are then to be refused.
 */
bool conn_buffers_full(const struct conn *c);
/* Bytes of all connections' buffers and reservations (the gauge). */
size_t server_buffered(const struct server *srv);

#endif
