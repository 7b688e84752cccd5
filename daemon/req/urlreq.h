/*
 * urlreq: the URL batch operations of the protocol (url_submit, url_check,
 * url_delete) on top of urlset.
 *
 * A batch names its URLs, or their digests made by the client with the
 * server's canonicalization (refused whole if it names another).  Each URL
 * of a batch is answered on its own: an invalid URL fails its item with
 * INVALID_ARGUMENT and the others go on.  Checks are answered at once;
 * submits and deletes go to the URL writer as one job per request and are
 * answered once as durable as the batch asked.
 *
 * Threads: urlreq_check and urlreq_mutate run on a request worker, with
 * that worker's keyer, reader and arena; a job's reply is sent from the
 * loop.
 */
#ifndef NDDD_URLREQ_H
#define NDDD_URLREQ_H

#include <stdbool.h>
#include <stdint.h>

#include "nddd.pb-c.h"
#include "urlset.h"

struct arena;
struct evbuffer;
struct request_origin;
struct url_keyer;

/* Answers a url_check batch: appends the reply frame to out. */
void urlreq_check(struct urlset *us, struct url_keyer *k,
    struct urlset_reader *rd, struct arena *a, uint64_t id,
    const Nddd__V1__UrlBatch *batch, struct evbuffer *out);

/*
 * Starts a url_submit (op URLSET_SUBMIT) or url_delete (URLSET_DELETE)
 * batch; a batch that names no durability gets dflt.  Returns true if it
 * went to the URL writer: the job then finishes origin from the loop.
 * Returns false if the reply was appended to out already (nothing to
 * write, a refused batch, or no memory); the caller finishes origin.
 */
bool urlreq_mutate(struct urlset *us, struct url_keyer *k,
    const struct request_origin *origin, enum urlset_op op,
    enum urlset_durability dflt, const Nddd__V1__UrlBatch *batch,
    struct evbuffer *out);

/* The number of items of a batch (URLs or digests). */
size_t urlreq_batch_len(const Nddd__V1__UrlBatch *batch);

#endif
