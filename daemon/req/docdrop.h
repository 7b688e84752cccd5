/*
 * docdrop: namespace_drop, which drops a namespace's documents and then
 * its URLs, and the forgetting of dropped namespaces' documents in the
 * background.
 *
 * namespace_drop goes from the first worker to the store writer, which
 * frees the name of the namespace's documents and marks it dropped in the
 * store's metadata (docset_ns_drop, one transaction), then from the loop
 * to the URL writer, which drops its URLs (urlset.h); the reply counts
 * both.  A name with neither URLs nor documents is NOT_FOUND.
 *
 * The documents are then forgotten a step at a time: each step is a store
 * writer job that forgets at most DOCDROP_STEP_DOCS of them, exactly as
 * doc_delete would (docset_ns_forget), and commits on its own, so the
 * writer's other jobs come between and no transaction grows with the
 * namespace.  One step is in flight at a time, for one namespace at a
 * time; the next is sent when the last is back in the loop, a failed one
 * again a second later.  The drop marks stay in the metadata until the
 * last document is gone: a daemon stopped or killed midway goes on at its
 * next start (docdrop_new).  Steps stop once the server shuts down (the
 * one in flight is waited for, as every writer job is).
 *
 * Threads: the loop's, but the jobs' apply, committed and aborted (the
 * store writer's) and docdrop_namespace_drop (a worker's handler).
 */
#ifndef NDDD_DOCDROP_H
#define NDDD_DOCDROP_H

#include <stddef.h>

#include "opcall.h"

/* Documents forgotten per step, at most, and document ids looked at. */
#define DOCDROP_STEP_DOCS	256
#define DOCDROP_STEP_SCAN	(1u << 20)
/* A failed step is tried again after this long. */
#define DOCDROP_RETRY_MS	1000

struct docdrop;
struct event_base;

/*
 * Loop thread: the forgetting of svc's dropped namespaces' documents, on
 * base; it begins at once with those a previous run left.  Returns NULL
 * when memory is short.
 *
 * For tests, NDDD_TEST_DOCDROP=DOCS[,MS] in the environment makes a step
 * forget at most DOCS documents and wait MS milliseconds before the next,
 * so that a drop of a few thousand documents can be caught midway.
 */
struct docdrop *docdrop_new(struct req_services *svc,
    struct event_base *base);
/* Loop thread: frees dd; a step still in the writer finishes alone. */
void docdrop_free(struct docdrop *dd);

/* Loop thread: a namespace was dropped: its documents are to go. */
void docdrop_kick(struct docdrop *dd);

/* The namespace_drop operation's handler (operation.h). */
void docdrop_namespace_drop(struct op_call *call);

#endif
