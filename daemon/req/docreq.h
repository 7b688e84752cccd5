/*
 * docreq: the document operations of the protocol (doc_submit, doc_query,
 * doc_get, doc_delete) on top of docset and the accelerator.
 *
 * A request's way through the daemon:
 *   worker:  decode, canonicalize the URL, copy the body;
 *   loop:    hand the body to the accelerator (accel_submit is the loop's),
 *            with the other documents of the same turn of the loop;
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
#include "opcall.h"

struct accel;
struct docset;
struct doc_op;
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

/* What the document operations work with; owned by the dispatcher. */
struct docreq_env {
	struct docset *ds;
	struct writer *w;
	struct accel *acc;
	struct workers *workers;
	uint64_t max_results;		/* [near] max_results */
	unsigned batch_docs;		/* [accel] batch_docs */
	/* Loop thread: documents gathered for the accelerator during one
	 * turn of the loop, handed over together at its end. */
	struct doc_op *pending;
	struct doc_op **pending_tail;
	unsigned npending;
	struct event *flush;
	unsigned in_accel;		/* documents there now */
};

/* Sets up env's loop-side state on base.  Returns -1 if out of memory. */
int docreq_env_init(struct docreq_env *env, struct event_base *base);
void docreq_env_clear(struct docreq_env *env);

/* The operations' handlers (operation.h), on a request worker. */
void docreq_submit(struct op_call *call);
void docreq_query(struct op_call *call);
void docreq_get(struct op_call *call);
void docreq_delete(struct op_call *call);

#endif
