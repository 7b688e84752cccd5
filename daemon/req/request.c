/*
 * request: turning a frame's payload into a validated Request.  See
 * request.h.
 */
#include "request.h"

#include "arena.h"

/* A URL digest: an MD5. */
#define REQUEST_DIGEST_LEN 16

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

Nddd__V1__Request *
request_decode(struct arena *a, const uint8_t *payload, size_t len)
{
	ProtobufCAllocator alloc = {
		.alloc = request_alloc,
		.free = request_free,
		.allocator_data = a,
	};

	return nddd__v1__request__unpack(&alloc, len, payload);
}

const Nddd__V1__UrlBatch *
request_url_batch(const Nddd__V1__Request *req)
{
	switch (req->op_case) {
	case NDDD__V1__REQUEST__OP_URL_SUBMIT:
		return req->url_submit;
	case NDDD__V1__REQUEST__OP_URL_CHECK:
		return req->url_check;
	case NDDD__V1__REQUEST__OP_URL_DELETE:
		return req->url_delete;
	default:
		return NULL;
	}
}

enum role
request_role(const Nddd__V1__Request *req)
{
	switch (req->op_case) {
	case NDDD__V1__REQUEST__OP_URL_CHECK:
	case NDDD__V1__REQUEST__OP_STATS:
	case NDDD__V1__REQUEST__OP_DOC_QUERY:
	case NDDD__V1__REQUEST__OP_DOC_GET:
		return ROLE_READ;
	case NDDD__V1__REQUEST__OP_DOC_SUBMIT:
		/* Asking which story a page would join changes nothing. */
		return req->doc_submit && req->doc_submit->query_only ?
		    ROLE_READ : ROLE_WRITE;
	case NDDD__V1__REQUEST__OP_URL_SUBMIT:
		return ROLE_WRITE;
	default:
		return ROLE_ADMIN;
	}
}

Nddd__V1__Code
request_validate(const Nddd__V1__Request *req, const struct request_limits *lim,
    const char **message)
{
	const Nddd__V1__UrlBatch *batch;

	switch (req->op_case) {
	case NDDD__V1__REQUEST__OP_URL_SUBMIT:
	case NDDD__V1__REQUEST__OP_URL_CHECK:
	case NDDD__V1__REQUEST__OP_URL_DELETE:
		if ((batch = request_url_batch(req)) == NULL)
			return NDDD__V1__CODE__OK;
		if (batch->n_urls > 0 && batch->digests.len > 0) {
			*message = "a batch names urls or digests, not both";
			return NDDD__V1__CODE__INVALID_ARGUMENT;
		}
		if (batch->digests.len % REQUEST_DIGEST_LEN != 0) {
			*message = "digests must be 16 bytes each";
			return NDDD__V1__CODE__INVALID_ARGUMENT;
		}
		if (batch->n_urls > lim->max_batch ||
		    batch->digests.len / REQUEST_DIGEST_LEN > lim->max_batch) {
			*message = "batch exceeds the server's max_batch";
			return NDDD__V1__CODE__RESOURCE_EXHAUSTED;
		}
		if (batch->durability != NDDD__V1__DURABILITY__DURABILITY_DEFAULT
		    && batch->durability != NDDD__V1__DURABILITY__DURABLE &&
		    batch->durability != NDDD__V1__DURABILITY__RELAXED) {
			*message = "unknown durability";
			return NDDD__V1__CODE__INVALID_ARGUMENT;
		}
		return NDDD__V1__CODE__OK;
	case NDDD__V1__REQUEST__OP_STATS:
	case NDDD__V1__REQUEST__OP_VERIFY:
	case NDDD__V1__REQUEST__OP_DOC_SUBMIT:
	case NDDD__V1__REQUEST__OP_DOC_QUERY:
	case NDDD__V1__REQUEST__OP_DOC_GET:
	case NDDD__V1__REQUEST__OP_DOC_DELETE:
		return NDDD__V1__CODE__OK;
	default:
		*message = "request names no operation this server knows";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
}
