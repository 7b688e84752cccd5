/*
 * urlreq: the URL batch operations of the protocol (url_submit, url_check,
 * url_delete) on top of urlset.
 *
 * Each URL of a batch is answered on its own: an invalid URL fails its item
 * with INVALID_ARGUMENT and the others go on.  Checks are answered from the
 * store's committed state at once; submits and deletes go to the store
 * writer as one job per request and are answered after their commit.
 *
 * Threads: urlreq_check and urlreq_mutate run on a request worker, with
 * that worker's keyer, reader and arena.
 */
#ifndef NDDD_URLREQ_H
#define NDDD_URLREQ_H

#include <stdbool.h>
#include <stdint.h>

#include "nddd.pb-c.h"

struct arena;
struct evbuffer;
struct request_origin;
struct store_txn;
struct url_keyer;
struct urlset;
struct writer;

enum urlreq_op {
	URLREQ_SUBMIT,
	URLREQ_DELETE,
};

/* Answers a url_check batch: appends the reply frame to out. */
void urlreq_check(struct urlset *us, struct url_keyer *k, struct store_txn *rd,
    struct arena *a, uint64_t id, const Nddd__V1__UrlBatch *batch,
    struct evbuffer *out);

/*
 * Starts a url_submit or url_delete batch.  Returns true if it went to the
 * writer: the job then finishes origin from the loop after its commit.
 * Returns false if the reply was appended to out already (nothing to
 * write, or no memory); the caller finishes origin.
 */
bool urlreq_mutate(struct urlset *us, struct url_keyer *k, struct writer *w,
    const struct request_origin *origin, enum urlreq_op op,
    const Nddd__V1__UrlBatch *batch, struct evbuffer *out);

#endif
