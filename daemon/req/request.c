/*
 * request: turning a frame's payload into a Request.  See request.h.
 */
#include "request.h"

#include "arena.h"
#include "docreq.h"

/*
 * What protobuf-c allocates per repeated item beyond its bytes, at most:
 * its descriptor (16), its bytes' rounding to the arena's alignment (16),
 * and the decoder's scratch records of each field (32, in slabs that
 * double: 64).  Measured: 66 bytes per empty URL of a 10,000-URL batch,
 * 82 per 1-byte URL.
 */
#define REQUEST_ITEM_OVERHEAD 128
/* The same for a document of a doc_batch: its DocSubmit message (72) and
 * two fields of bytes. */
#define REQUEST_DOC_OVERHEAD 256
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

/* Reads a base-128 varint; false past end or beyond 64 bits. */
static bool
wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		x |= (uint64_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0) {
			*v = x;
			return true;
		}
	}
	return false;
}

/*
 * Steps over one field at *p: its number, and for a length-delimited one
 * its bytes (*value, *vlen; otherwise *value is NULL).
 */
static bool
wire_field(const uint8_t **p, const uint8_t *end, uint64_t *field,
    const uint8_t **value, size_t *vlen)
{
	uint64_t key, n;

	*value = NULL;
	if (!wire_varint(p, end, &key))
		return false;
	*field = key >> 3;
	switch (key & 7) {
	case 0:
		return wire_varint(p, end, &n);
	case 1:
		n = 8;
		break;
	case 2:
		if (!wire_varint(p, end, &n) || n > (uint64_t)(end - *p))
			return false;
		*value = *p;
		*vlen = (size_t)n;
		break;
	case 5:
		n = 4;
		break;
	default:
		return false;	/* groups: protobuf-c refuses them too */
	}
	if (n > (uint64_t)(end - *p))
		return false;
	*p += n;
	return true;
}

/*
 * The items of a batch message: its field 1 (a UrlBatch's urls, a
 * DocBatch's documents) and, for a UrlBatch, its digests (field 3, 16
 * bytes each).
 */
static bool
batch_items(const uint8_t *p, const uint8_t *end, bool url_batch,
    size_t *items)
{
	const uint8_t *value;
	uint64_t field;
	size_t vlen;

	while (p < end) {
		if (!wire_field(&p, end, &field, &value, &vlen))
			return false;
		if (field == 1 && value != NULL)
			(*items)++;
		else if (url_batch && field == 3 && value != NULL)
			*items += vlen / 16;
	}
	return true;
}

bool
request_peek(const uint8_t *payload, size_t len,
    Nddd__V1__Request__OpCase *op_case, size_t *items)
{
	const uint8_t *p = payload, *end = payload + len, *value;
	size_t per_op[NDDD__V1__REQUEST__OP_NAMESPACE_DROP + 1] = { 0 };
	uint64_t field;
	size_t vlen;

	*op_case = NDDD__V1__REQUEST__OP__NOT_SET;
	*items = 0;
	if (len == 0)
		return true;	/* an empty Request: no operation */
	while (p < end) {
		if (!wire_field(&p, end, &field, &value, &vlen))
			return false;
		/* The oneof's cases are its fields' numbers. */
		if (field < NDDD__V1__REQUEST__OP_URL_SUBMIT ||
		    field > NDDD__V1__REQUEST__OP_NAMESPACE_DROP)
			continue;
		*op_case = (Nddd__V1__Request__OpCase)field;
		/* A message field given twice is merged: its items add up. */
		if ((field <= NDDD__V1__REQUEST__OP_URL_DELETE ||
		    field == NDDD__V1__REQUEST__OP_DOC_BATCH) && value != NULL &&
		    !batch_items(value, value + vlen,
		    field <= NDDD__V1__REQUEST__OP_URL_DELETE, &per_op[field]))
			return false;
	}
	*items = per_op[*op_case];
	return true;
}

size_t
request_decode_budget(size_t len, const struct request_limits *lim)
{
	size_t urls = (size_t)lim->max_batch * REQUEST_ITEM_OVERHEAD;
	size_t docs = (size_t)DOCREQ_BATCH_MAX * REQUEST_DOC_OVERHEAD;

	return 2 * len + (urls > docs ? urls : docs) + REQUEST_MESSAGE_OVERHEAD;
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
