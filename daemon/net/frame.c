/*
 * frame: the wire's framing.  See frame.h.
 */
#include "frame.h"

#include <event2/buffer.h>

#include "nddd.pb-c.h"

enum frame_status
frame_peek(struct evbuffer *in, size_t max_len, uint32_t *len)
{
	uint8_t hdr[FRAME_HEADER_LEN];

	if (evbuffer_copyout(in, hdr, sizeof(hdr)) < (ev_ssize_t)sizeof(hdr))
		return FRAME_INCOMPLETE;
	*len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	    (uint32_t)hdr[2] << 8 | hdr[3];
	if (*len > max_len)
		return FRAME_OVERSIZED;
	if (evbuffer_get_length(in) < FRAME_HEADER_LEN + (size_t)*len)
		return FRAME_INCOMPLETE;
	return FRAME_READY;
}

void
frame_copy(struct evbuffer *in, uint32_t len, uint8_t *dst)
{
	struct evbuffer_ptr at;

	/* frame_peek saw the whole frame: neither call can fall short. */
	evbuffer_ptr_set(in, &at, FRAME_HEADER_LEN, EVBUFFER_PTR_SET);
	evbuffer_copyout_from(in, &at, dst, len);
}

void
frame_consume(struct evbuffer *in, uint32_t len)
{
	evbuffer_drain(in, FRAME_HEADER_LEN + (size_t)len);
}

int
frame_write(struct evbuffer *out, const ProtobufCMessage *msg)
{
	return frame_write_limited(out, msg, UINT32_MAX);
}

int
frame_write_limited(struct evbuffer *out, const ProtobufCMessage *msg,
    size_t max_len)
{
	size_t size = protobuf_c_message_get_packed_size(msg);
	struct evbuffer_iovec vec;
	uint8_t *p;

	if (size > max_len || size > UINT32_MAX)
		return FRAME_TOO_LONG;
	if (evbuffer_reserve_space(out, (ev_ssize_t)(FRAME_HEADER_LEN + size),
	    &vec, 1) != 1)
		return -1;
	p = vec.iov_base;
	p[0] = (uint8_t)(size >> 24);
	p[1] = (uint8_t)(size >> 16);
	p[2] = (uint8_t)(size >> 8);
	p[3] = (uint8_t)size;
	protobuf_c_message_pack(msg, p + FRAME_HEADER_LEN);
	vec.iov_len = FRAME_HEADER_LEN + size;
	return evbuffer_commit_space(out, &vec, 1);
}

int
frame_write_error(struct evbuffer *out, uint64_t id, int code,
    const char *message)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__Status status = NDDD__V1__STATUS__INIT;

	status.code = (Nddd__V1__Code)code;
	status.message = (char *)message;
	resp.id = id;
	resp.status = &status;
	return frame_write(out, &resp.base);
}
