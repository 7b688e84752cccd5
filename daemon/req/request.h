/*
 * request: turning a frame's payload into a Request.
 *
 * Decoding allocates from an arena, reset by the caller once the request
 * has been handled, so a batch of thousands of URLs costs no malloc per URL.
 * The bytes come from anyone who can connect, before their token is
 * checked, so the memory decoding may take is bounded by what the frame's
 * size and the batch limit justify: a message of the right shape never
 * comes near it, while a flood of tiny unknown fields (each kept by the
 * decoder at many times its size) is refused.
 */
#ifndef NDDD_REQUEST_H
#define NDDD_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nddd.pb-c.h"
#include "opcall.h"

struct arena;

/*
 * The most arena memory decoding a payload of len bytes may take: twice
 * its bytes (copies of them and the arrays that point at them), plus room
 * for the descriptors of max_batch URLs or of a doc_batch's most
 * documents, plus a little for the message itself.
 */
size_t request_decode_budget(size_t len, const struct request_limits *lim);

/*
 * Loop thread, before the frame is decoded: which operation payload asks
 * for (its last op field, as decoding takes it) and, for a URL batch or a
 * doc_batch, how many items it holds, by walking the wire format without
 * allocating.
 * False if the bytes are not well-formed protobuf.
 */
bool request_peek(const uint8_t *payload, size_t len,
    Nddd__V1__Request__OpCase *op_case, size_t *items);

/*
 * Decodes payload[0..len) into *out, allocated in arena a.  Returns OK;
 * INVALID_ARGUMENT if the bytes are not a Request; RESOURCE_EXHAUSTED if
 * decoding them would take more than request_decode_budget; INTERNAL if
 * memory ran out.  Otherwise than OK, *message says why (static) and the
 * request's id is unknown: the connection must be closed.
 */
Nddd__V1__Code request_decode(struct arena *a, const uint8_t *payload,
    size_t len, const struct request_limits *lim, Nddd__V1__Request **out,
    const char **message);

#endif
