/*
 * frame: the wire's framing, with no I/O of its own.
 *
 * A frame is a 4-byte big-endian length, then that many bytes: one protobuf
 * message.  The decoder looks at bytes already received (an evbuffer, which
 * is plain memory: tests and fuzzers feed it directly) and checks the length
 * against the limit before anything is allocated for the payload.
 */
#ifndef NDDD_FRAME_H
#define NDDD_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

struct evbuffer;

#define FRAME_HEADER_LEN 4

enum frame_status {
	FRAME_INCOMPLETE,	/* need more bytes */
	FRAME_READY,		/* a whole frame is buffered */
	FRAME_OVERSIZED,	/* its length exceeds the limit */
};

/*
 * Looks at the front of in.  On FRAME_READY a whole frame is buffered and
 * *len is its payload's length: copy the payload out with frame_copy,
 * remove the frame with frame_consume.  On FRAME_OVERSIZED, *len is the
 * announced length.  On FRAME_INCOMPLETE, *len is the announced length
 * when the header is buffered (then FRAME_HEADER_LEN + *len bytes make
 * the frame: the server reads what is missing), and untouched before.
 */
enum frame_status frame_peek(struct evbuffer *in, size_t max_len,
    uint32_t *len);
/* Copies the payload (len bytes) of the frame at the front of in to dst,
 * leaving in as it is: one copy, from in's chains as they lie. */
void frame_copy(struct evbuffer *in, uint32_t len, uint8_t *dst);
/* Removes the frame whose payload length is len from the front of in. */
void frame_consume(struct evbuffer *in, uint32_t len);

/* Appends msg to out as one frame.  Returns 0, or -1 if out of memory. */
int frame_write(struct evbuffer *out, const ProtobufCMessage *msg);
/*
 * The same for a frame whose payload may not exceed max_len bytes: returns
 * FRAME_TOO_LONG, appending nothing, if msg packs to more.
 */
#define FRAME_TOO_LONG (-2)
int frame_write_limited(struct evbuffer *out, const ProtobufCMessage *msg,
    size_t max_len);
/*
 * Appends a Response with request id, status code (an Nddd__V1__Code) and
 * message to out.  Returns 0, or -1 if out of memory.
 */
int frame_write_error(struct evbuffer *out, uint64_t id, int code,
    const char *message);

#endif
