/*
 * docreq: the document operations of the protocol (doc_submit, doc_query,
 * doc_get, doc_delete) on top of docset and the accelerator.
 *
 * doc_submit, doc_query by body and doc_batch carry a batch of documents
 * (one, or up to DOCREQ_BATCH_MAX), each fingerprinted and sketched (its
 * main content, for a page: docfp.h), then stored or only answered, in
 * request order.  Their way through the daemon:
 *   worker:  decode, canonicalize the URLs, sketch the documents; with
 *            the cpu backend in use (accel_inline_engine), fingerprint
 *            them right here, from the request's own memory: a page takes
 *            less time to fingerprint than two hand-overs between threads;
 *   then:    nothing to store: the worker reads the neighbours and answers
 *            (two hops in all, as url_check); else the batch is one
 *            store-writer job (every document put or answered in request
 *            order, neighbours and groups decided in the transaction,
 *            answered after the commit: three hops).
 * With a plugin, the worker copies the texts the documents are judged by
 * (a page's main content) and the loop hands them to the accelerator (accel_submit is the loop's) with the other documents of
 * the same turn of the loop; once the fingerprints are back, the batch goes
 * to the store writer, or to a worker for the neighbours.  An empty
 * document is EMPTY_DOCUMENT: the request's status for a single one, an
 * item error in a batch.
 * doc_get, and doc_query by fingerprint, are answered by the first worker;
 * doc_delete goes from it straight to the writer.
 *
 * Namespaces: every operation names one (empty: the default), each
 * document of a doc_batch its own.  A document's key is derived in the
 * first worker, its URL's MD5 masked by the namespace's name (docns.h);
 * the store writer finds or creates the namespace by name when it stores
 * the document, and readers look the name up when they read, so that a
 * namespace dropped meanwhile is never read under its old id.
 */
#ifndef NDDD_DOCREQ_H
#define NDDD_DOCREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nddd.pb-c.h"
#include "opcall.h"

struct accel;
struct docdrop;
struct docset;
struct doc_batch;
struct event;
struct event_base;
struct workers;
struct writer;

/*
 * The longest document reply (or [server] max_frame if less): the default
 * max_results of 1,000 neighbours with URLs of 100 bytes, 60 with URLs of
 * 2 KiB, 8 with the longest URLs.  Neighbours past it are left out,
 * nearest kept; near_total counts them all.  Each document in flight
 * reserves this much of its connection's output_high_water: 4 MiB lets a
 * client keep 30 in flight.
 */
#define DOCREQ_REPLY_MAX (128 * 1024)

/*
 * doc_batch: at most this many documents; each one's result takes at most
 * DOCREQ_BATCH_ITEM_MAX bytes of the reply (ids, fingerprint, group and
 * the nearest neighbours that fit: ten with URLs of 80 bytes; near_total
 * counts them all), and neighbours past DOCREQ_BATCH_NEAR_MAX (more than
 * fit with URLs of 20 bytes) are not even read.  A full batch reserves 4.6 MiB of its connection's
 * output_high_water.
 */
#define DOCREQ_BATCH_MAX 4096
#define DOCREQ_BATCH_ITEM_MAX 1024
#define DOCREQ_BATCH_NEAR_MAX 24
/* An item error (index, code, a message under 64 bytes); the reply's own
 * fields. */
#define DOCREQ_BATCH_ERROR_MAX 96
#define DOCREQ_BATCH_BASE_MAX 4096

/* What the document operations work with; owned by the dispatcher. */
struct docreq_env {
	struct docset *ds;
	struct writer *w;
	struct accel *acc;
	struct workers *workers;
	uint64_t max_results;		/* [near] max_results */
	unsigned batch_docs;		/* [accel] batch_docs */
	bool html_main;			/* [text] html = main */
	bool hamming;			/* [near] answer = hamming */
	/* Loop thread: documents gathered for the accelerator during one
	 * turn of the loop, handed over together at its end. */
	struct doc_batch *pending;
	struct doc_batch **pending_tail;
	unsigned npending;		/* their documents */
	struct event *flush;
	unsigned in_accel;		/* documents there now */
	struct docdrop *drop;		/* dropped namespaces' documents */
};

/* Sets up env's loop-side state on base.  Returns -1 if out of memory. */
int docreq_env_init(struct docreq_env *env, struct event_base *base);
void docreq_env_clear(struct docreq_env *env);

/* The operations' handlers (operation.h), on a request worker. */
void docreq_submit(struct op_call *call);
void docreq_query(struct op_call *call);
void docreq_get(struct op_call *call);
void docreq_delete(struct op_call *call);
void docreq_batch(struct op_call *call);

/*
 * OK, or INVALID_ARGUMENT with a static *message for a name that cannot
 * be a namespace (checked as URL namespaces are; NULL or "": the default
 * one).
 */
Nddd__V1__Code docreq_namespace_validate(const char *ns,
    const char **message);
/* doc_batch's checks: the count of documents, its reply's bound. */
Nddd__V1__Code docreq_batch_validate(const Nddd__V1__DocBatch *db,
    const struct request_limits *lim, const char **message);
/* The most the reply to a doc_batch of docs documents takes. */
size_t docreq_batch_reply_bound(size_t docs);

#endif
