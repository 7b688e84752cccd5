/*
 * request: turning a frame's payload into a Request.  See request.h.
 */
#include "request.h"

#include "arena.h"

/*
 * What protobuf-c allocates per repeated item beyond its bytes, at most:
 * its descriptor (16), its bytes' rounding to the arena's alignment (16),
 * and the decoder's scratch records of each field (32, in slabs that
 * double: 64).  Measured: 66 bytes per empty URL of a 10,000-URL batch,
 * 82 per 1-byte URL.
 */
#define REQUEST_ITEM_OVERHEAD 128
#define REQUEST_MESSAGE_OVERHEAD (64 * 1024)

static void *
request_alloc(void *data, size_t size)
{
	return arena_alloc(data, size);
}

static void
request_free(void *data, void *p)
{
	(void)data;
	(void)p;	/* released with the arena */
}

size_t
request_decode_budget(size_t len, const struct request_limits *lim)
{
	return 2 * len + (size_t)lim->max_batch * REQUEST_ITEM_OVERHEAD +
	    REQUEST_MESSAGE_OVERHEAD;
}

Nddd__V1__Code
request_decode(struct arena *a, const uint8_t *payload, size_t len,
    const struct request_limits *lim, Nddd__V1__Request **out,
    const char **message)
{
	ProtobufCAllocator alloc = {
		.alloc = request_alloc,
		.free = request_free,
		.allocator_data = a,
	};
	size_t limit = a->limit;

	/* Only this decode's failures count. */
	a->over_limit = a->out_of_memory = false;
	arena_set_limit(a, a->handed_out + request_decode_budget(len, lim));
	*out = nddd__v1__request__unpack(&alloc, len, payload);
	arena_set_limit(a, limit);
	if (*out != NULL)
		return NDDD__V1__CODE__OK;
	if (a->over_limit) {
		*message = "the request decodes to more memory than its size "
		    "allows (a flood of unknown fields?)";
		return NDDD__V1__CODE__RESOURCE_EXHAUSTED;
	}
	if (a->out_of_memory) {
		*message = "out of memory decoding the request";
		return NDDD__V1__CODE__INTERNAL;
	}
	*message = "frame is not a valid nddd.v1.Request";
	return NDDD__V1__CODE__INVALID_ARGUMENT;
}
