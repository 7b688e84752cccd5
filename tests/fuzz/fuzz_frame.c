/*
 * fuzz_frame: the path every byte from the network takes before any
 * operation runs: framing (in pieces, as TCP delivers it), protobuf
 * unpacking into an arena, request validation, the role check, and the
 * walk over a URL batch's items.
 *
 * Input: the first byte chooses how the rest is cut into reads; the rest is
 * the byte stream of one connection.
 */
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "arena.h"
#include "frame.h"
#include "operation.h"
#include "request.h"
#include "urlcanon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct urlcanon *uc;
	struct request_limits lim = { .max_batch = 1000 };
	struct evbuffer *in;
	struct arena a;
	size_t chunk, pos = 1;

	if (size < 1)
		return 0;
	if (uc == NULL) {
		struct urlcanon_options o = { true, true, true };

		uc = urlcanon_new(&o);
	}
	chunk = 1 + data[0] % 64;
	in = evbuffer_new();
	arena_init(&a, 4096);
	while (pos < size) {
		size_t n = size - pos < chunk ? size - pos : chunk;
		static uint8_t payload[65536];
		uint32_t len;
		enum frame_status st;

		evbuffer_add(in, data + pos, n);
		pos += n;
		while ((st = frame_peek(in, sizeof(payload), &len)) ==
		    FRAME_READY) {
			const struct operation *op;
			Nddd__V1__Request *req;
			const Nddd__V1__UrlBatch *batch;
			const char *msg;
			Nddd__V1__Code code;

			frame_copy(in, len, payload);
			arena_reset(&a);
			code = request_decode(&a, payload, len, &lim, &req,
			    &msg);
			frame_consume(in, len);
			if (code != NDDD__V1__CODE__OK)
				continue;
			op = operation_of(req);
			(void)operation_role(op, req);
			if (operation_validate(op, req, &lim, &msg) !=
			    NDDD__V1__CODE__OK)
				continue;
			/* The URL operations' batches share their place. */
			batch = req->op_case ==
			    NDDD__V1__REQUEST__OP_URL_SUBMIT ||
			    req->op_case == NDDD__V1__REQUEST__OP_URL_CHECK ||
			    req->op_case == NDDD__V1__REQUEST__OP_URL_DELETE ?
			    req->url_check : NULL;
			if (batch == NULL)
				continue;
			for (size_t i = 0; i < batch->n_urls; i++) {
				size_t outlen;
				const char *cause;

				(void)urlcanon_canonicalize(uc,
				    (const char *)batch->urls[i].data,
				    batch->urls[i].len, &outlen, &cause);
			}
		}
		if (st == FRAME_OVERSIZED)
			break;	/* the server closes the connection here */
	}
	arena_release(&a);
	evbuffer_free(in);
	return 0;
}
