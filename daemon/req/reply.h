/*
 * reply: a request's answer, from the moment its frame arrives until its
 * frames are on the connection and the request is counted.
 *
 * Every request has exactly one struct reply, and whoever holds it
 * finishes it exactly once (reply_finish), in the loop thread.  A request
 * that goes on elsewhere (to the URL writer, the store writer, the
 * accelerator) takes its reply along with reply_move; the holder it left
 * then has nothing to finish.
 *
 * Building an answer cannot lose it.  A frame that cannot be written (out
 * of memory) marks the reply lost; one longer than the client's frame
 * limit is replaced by RESOURCE_EXHAUSTED.  A lost reply is finished with
 * INTERNAL for its request id, and if even that cannot be written the
 * connection is closed: a client never waits for an answer that will not
 * come.
 *
 * Threads: a reply is filled by one thread at a time (the worker, writer
 * or loop that holds it) and finished in the loop thread.
 */
#ifndef NDDD_REPLY_H
#define NDDD_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "nddd.pb-c.h"

struct conn;
struct evbuffer;
struct metrics;

struct reply {
	struct conn *conn;		/* NULL: moved or finished */
	struct metrics *metrics;
	unsigned op;			/* the metrics' index of its operation */
	uint64_t t0_ns;			/* when its frame arrived */
	uint64_t id;			/* the request's id, once decoded */
	size_t max_frame;		/* the longest frame a client takes */
	size_t bound;			/* the most its frames may take: held
					   for it on the connection */
	struct evbuffer *frames;	/* NULL until the first one */
	bool refused;			/* answered with an error status */
	bool lost;			/* a frame could not be written */
};

/*
 * Loop thread: the reply to a frame just read from c, which is held (in
 * flight, with bound bytes reserved: see conn_hold) until the reply is
 * finished.
 */
void reply_start(struct reply *r, struct conn *c, struct metrics *m,
    unsigned op, size_t max_frame, size_t bound);

/* Appends msg as the reply's frame. */
void reply_message(struct reply *r, const ProtobufCMessage *msg);
/* The shard count every Response states from now on (shardstate.h). */
void reply_set_shards(uint32_t shards);
/* Appends an error Status (code and message) for the request's id. */
void reply_error(struct reply *r, Nddd__V1__Code code, const char *message);
/*
 * Appends the error of a store status (store.h): RESOURCE_EXHAUSTED when
 * the write found no room (the disk, the map, a transaction's size), with
 * the status's message ("disk full: ...", "store full: ..."), INTERNAL
 * otherwise.
 */
void reply_store_error(struct reply *r, int store_status);

/* Moves the reply from *from to *to; *from then has nothing to finish. */
void reply_move(struct reply *to, struct reply *from);

/*
 * Loop thread: sends the reply's frames (or INTERNAL if it was lost or is
 * empty), counts the request in the metrics and releases its connection.
 * Does nothing for a reply that was moved or finished.
 */
void reply_finish(struct reply *r);
/*
 * Loop thread: the frame was not a request that can be answered by its
 * id: fails the connection with code and message (an error with id 0,
 * then closing), and finishes the request as refused.
 */
void reply_fail_connection(struct reply *r, Nddd__V1__Code code,
    const char *message);

/*
 * The frames the reply's client will get, taken from it: what was built,
 * or INTERNAL for its id if building failed or produced nothing.  NULL
 * only when not even that can be written.  reply_finish sends these; tests
 * read them.
 */
struct evbuffer *reply_take_frames(struct reply *r);

/*
 * Test hook: when set and returning true, the reply's next frame fails as
 * if memory had run out.
 */
extern bool (*reply_fault_hook)(void);

#endif
