/*
 * docreq: the document operations of the protocol (doc_submit, doc_query,
 * doc_get, doc_delete) on top of docset and the accelerator.
 *
 * A request's way through the daemon:
 *   worker:  decode, canonicalize the URL, copy the body;
 *   loop:    hand the body to the accelerator (accel_submit is the loop's);
 *   loop:    the fingerprint is back: an empty document is answered
 *            EMPTY_DOCUMENT; a submit becomes a store-writer job (its
 *            neighbours and group decided in the writer, answered after the
 *            commit); a query goes back to a worker, which reads the
 *            neighbours and answers.
 * doc_get, and doc_query by fingerprint, are answered by the first worker;
 * doc_delete goes from it straight to the writer.
 */
#ifndef NDDD_DOCREQ_H
#define NDDD_DOCREQ_H

#include <stdint.h>

#include "nddd.pb-c.h"

struct accel;
struct docset;
struct evbuffer;
struct request_origin;
struct workers;
struct worker_ctx;
struct writer;

/* What the document operations work with; owned by the dispatcher. */
struct docreq_env {
	struct docset *ds;
	struct writer *w;
	struct accel *acc;
	struct workers *workers;
	uint64_t max_results;		/* [near] max_results */
	unsigned in_accel;		/* documents there now (loop thread) */
};

/* A document on its way to the accelerator. */
struct doc_op;

enum docreq_next {
	DOCREQ_ANSWERED,	/* the reply is in out: finish the request */
	DOCREQ_HANDED_OFF,	/* a writer job will finish it */
	DOCREQ_FINGERPRINT,	/* *op must go to the accelerator (loop) */
};

/*
 * Worker thread: starts a document request.  Returns what happens next;
 * with DOCREQ_FINGERPRINT, the caller passes *op to docreq_fingerprint in
 * the loop thread.
 */
enum docreq_next docreq_start(struct docreq_env *env,
    struct worker_ctx *ctx, const Nddd__V1__Request *req,
    const struct request_origin *origin, struct evbuffer *out,
    struct doc_op **op);

/*
 * Loop thread: fingerprints op's body on the accelerator; the request is
 * finished from there on (replied to, or failed with INTERNAL).
 */
void docreq_fingerprint(struct doc_op *op);

#endif
