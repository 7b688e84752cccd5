/*
 * workers: a pool of threads that carry requests' CPU work (decoding,
 * canonicalizing, hashing, reading the store) off the event loop.
 *
 * Each thread has a context of its own (made by ctx_new at start), so the
 * work needs no locks of its own.  A task is queued from the loop, run on
 * some worker, then handed back to the loop through a mailbox, where its
 * done callback runs.
 */
#ifndef NDDD_WORKERS_H
#define NDDD_WORKERS_H

#include "mailbox.h"
#include "workq.h"

struct event_base;
struct worker_task;
struct workers;

struct worker_task_ops {
	/* Worker thread: the work, with this thread's context. */
	void (*run)(struct worker_task *t, void *ctx);
	/* Loop thread: after run. */
	void (*done)(struct worker_task *t);
};

struct worker_task {
	const struct worker_task_ops *ops;
	struct workq_item item;		/* the pool's queue */
	struct mailbox_msg msg;		/* back to the loop */
	struct workers *workers;
};

/*
 * Starts n threads; each calls ctx_new(arg) once (NULL fails the start) and
 * ctx_free(ctx) when it stops.  Returns NULL if a thread cannot start.
 */
struct workers *workers_new(unsigned n, struct event_base *base,
    void *(*ctx_new)(void *arg), void (*ctx_free)(void *ctx), void *arg);
/* Loop thread: queues t. */
void workers_submit(struct workers *w, struct worker_task *t);
/* Tasks queued or running, not yet handed back. */
size_t workers_pending(struct workers *w);
/* Runs what is queued, stops the threads, delivers the last tasks. */
void workers_free(struct workers *w);

#endif
