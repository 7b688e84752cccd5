/*
 * reply: a request's answer.  See reply.h.
 */
#include "reply.h"

#include <stdio.h>

#include <event2/buffer.h>

#include "frame.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "store.h"

bool (*reply_fault_hook)(void);

/* Every Response states it (Response.shards); atomic. */
static uint32_t reply_shards;

void
reply_set_shards(uint32_t shards)
{
	__atomic_store_n(&reply_shards, shards, __ATOMIC_RELAXED);
}

void
reply_start(struct reply *r, struct conn *c, struct metrics *m, unsigned op,
    size_t max_frame, size_t bound)
{
	*r = (struct reply){
		.conn = c,
		.metrics = m,
		.op = op,
		.t0_ns = metrics_now_ns(),
		.max_frame = max_frame,
		.bound = bound,
	};
	conn_hold(c, bound);
}

void
reply_message(struct reply *r, const ProtobufCMessage *msg)
{
	int rc;

	if (r->lost)
		return;
	if (msg->descriptor == &nddd__v1__response__descriptor)
		((Nddd__V1__Response *)msg)->shards =
		    __atomic_load_n(&reply_shards, __ATOMIC_RELAXED);
	if (r->frames == NULL && (r->frames = evbuffer_new()) == NULL) {
		r->lost = true;
		return;
	}
	rc = reply_fault_hook != NULL && reply_fault_hook() ? -1 :
	    frame_write_limited(r->frames, msg, r->max_frame);
	if (rc == FRAME_TOO_LONG) {
		char why[128];

		snprintf(why, sizeof(why), "the reply would exceed the frame "
		    "limit of %zu bytes; ask for fewer items", r->max_frame);
		r->refused = true;
		/* Past the limit itself if need be: it is short. */
		if (frame_write_error(r->frames, r->id,
		    NDDD__V1__CODE__RESOURCE_EXHAUSTED, why) != 0)
			r->lost = true;
	} else if (rc != 0)
		r->lost = true;
}

void
reply_error(struct reply *r, Nddd__V1__Code code, const char *message)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__Status status = NDDD__V1__STATUS__INIT;

	status.code = code;
	status.message = (char *)message;
	resp.id = r->id;
	resp.status = &status;
	r->refused = true;
	reply_message(r, &resp.base);
}

void
reply_store_error(struct reply *r, int store_status)
{
	reply_error(r, store_status_full(store_status) ||
	    store_status == STORE_TXN_FULL ?
	    NDDD__V1__CODE__RESOURCE_EXHAUSTED : NDDD__V1__CODE__INTERNAL,
	    store_strstatus(store_status));
}

void
reply_move(struct reply *to, struct reply *from)
{
	*to = *from;
	from->conn = NULL;
	from->frames = NULL;
}

struct evbuffer *
reply_take_frames(struct reply *r)
{
	struct evbuffer *frames = r->frames;

	r->frames = NULL;
	if (!r->lost && frames != NULL && evbuffer_get_length(frames) > 0)
		return frames;
	/* Whatever was built is incomplete: the client gets an error. */
	log_warnx("%s: request %llu: %s", __func__,
	    (unsigned long long)r->id, r->lost ? "out of memory for its "
	    "reply" : "nothing answered it");
	r->refused = true;
	if (frames == NULL && (frames = evbuffer_new()) == NULL)
		return NULL;
	evbuffer_drain(frames, evbuffer_get_length(frames));
	if (frame_write_error(frames, r->id, NDDD__V1__CODE__INTERNAL,
	    r->lost ? "the server ran out of memory for the reply" :
	    "the server lost the reply") != 0) {
		evbuffer_free(frames);
		return NULL;
	}
	return frames;
}

static void
reply_done(struct reply *r)
{
	metrics_observe(r->metrics, r->op, r->t0_ns, r->refused);
	conn_release(r->conn, r->bound);
	r->conn = NULL;
}

void
reply_finish(struct reply *r)
{
	struct evbuffer *frames;

	if (r->conn == NULL)
		return;
	if ((frames = reply_take_frames(r)) != NULL) {
		conn_send_buffer(r->conn, frames);
		evbuffer_free(frames);
	} else
		conn_fail(r->conn, NDDD__V1__CODE__INTERNAL,
		    "out of memory for a reply");
	reply_done(r);
}

void
reply_fail_connection(struct reply *r, Nddd__V1__Code code,
    const char *message)
{
	if (r->conn == NULL)
		return;
	if (r->frames != NULL)
		evbuffer_free(r->frames);
	r->frames = NULL;
	r->refused = true;
	conn_fail(r->conn, code, message);
	reply_done(r);
}
