/*
 * request: turning a frame's payload into a validated Request.
 *
 * Decoding allocates from an arena, reset by the caller once the request
 * has been handled, so a batch of thousands of URLs costs no malloc per URL.
 * Validation checks what is the same for every operation (an operation is
 * set, batch sizes are within the limit); items are checked one by one by
 * the operation, so that one bad item fails only itself.
 */
#ifndef NDDD_REQUEST_H
#define NDDD_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "nddd.pb-c.h"

struct arena;

struct request_limits {
	uint64_t max_batch;
};

/*
 * Decodes payload[0..len) into a Request in arena.  Returns NULL if the
 * bytes are not a Request (the connection must then be closed).
 */
Nddd__V1__Request *request_decode(struct arena *a, const uint8_t *payload,
    size_t len);

/*
 * Returns NDDD__V1__CODE__OK, or the code with which to refuse the whole
 * request and a static *message saying why.
 */
Nddd__V1__Code request_validate(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message);

/* The least role that may carry out req (see proto/nddd.proto). */
enum role request_role(const Nddd__V1__Request *req);

/* The batch of a URL operation, or NULL for other operations. */
const Nddd__V1__UrlBatch *request_url_batch(const Nddd__V1__Request *req);

#endif
