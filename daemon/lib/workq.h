/*
 * workq: a fixed pool of worker threads taking items from one queue.
 *
 * Items are intrusive: embed a struct workq_item and recover the enclosing
 * object with WORKQ_CONTAINER.  Each thread has its own state, made by the
 * pool's tls_new when the thread starts (for example a simhash scratch
 * area), passed to every item it runs.  Items run in the order they were
 * queued, several at once.
 */
#ifndef NDDD_WORKQ_H
#define NDDD_WORKQ_H

#include <stddef.h>

struct workq;

struct workq_item {
	struct workq_item *next;
	/* Runs in a worker thread; tls is that thread's state. */
	void (*fn)(struct workq_item *item, void *tls);
};

#define WORKQ_CONTAINER(item, type, member) \
	((type *)(void *)((char *)(item) - offsetof(type, member)))

/*
 * Starts nthreads threads (0: one per online CPU).  tls_new(arg) makes a
 * thread's state (NULL is an error), tls_free frees it; both may be NULL.
 * Returns NULL with *cause set (the caller frees it) when a thread or its
 * state cannot be made.
 */
struct workq *workq_new(unsigned nthreads, void *(*tls_new)(void *arg),
    void (*tls_free)(void *tls), void *arg, char **cause);
/* Runs what is queued, stops the threads and frees the pool. */
void workq_free(struct workq *wq);
/* Queues an item; any thread may call it. */
void workq_push(struct workq *wq, struct workq_item *item);

#endif
