/*
 * workq: a fixed pool of worker threads.  See workq.h.
 *
 * Locking: the queue, its tail and the stop flag are guarded by wq->lock;
 * idle threads wait on wq->cond.  An item is run with no lock held.
 */
#include "workq.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct workq_thread {
	struct workq *wq;
	pthread_t tid;
	void *tls;
	int started;
};

struct workq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct workq_item *head, *tail;
	int stopping;
	unsigned nthreads;
	struct workq_thread *threads;
	void *(*tls_new)(void *);
	void (*tls_free)(void *);
	void *arg;
};

static void *
workq_main(void *arg)
{
	struct workq_thread *t = arg;
	struct workq *wq = t->wq;
	struct workq_item *item;

	for (;;) {
		pthread_mutex_lock(&wq->lock);
		while (wq->head == NULL && !wq->stopping)
			pthread_cond_wait(&wq->cond, &wq->lock);
		if ((item = wq->head) == NULL) {
			pthread_mutex_unlock(&wq->lock);
			break;
		}
		if ((wq->head = item->next) == NULL)
			wq->tail = NULL;
		pthread_mutex_unlock(&wq->lock);
		item->fn(item, t->tls);
	}
	return NULL;
}

struct workq *
workq_new(unsigned nthreads, void *(*tls_new)(void *arg),
    void (*tls_free)(void *tls), void *arg, char **cause)
{
	struct workq *wq;
	unsigned i;
	int rc;

	if (nthreads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = n > 0 ? (unsigned)n : 1;
	}
	if ((wq = calloc(1, sizeof(*wq))) == NULL ||
	    (wq->threads = calloc(nthreads, sizeof(*wq->threads))) == NULL) {
		free(wq);
		*cause = strdup(strerror(ENOMEM));
		return NULL;
	}
	pthread_mutex_init(&wq->lock, NULL);
	pthread_cond_init(&wq->cond, NULL);
	wq->tls_new = tls_new;
	wq->tls_free = tls_free;
	wq->arg = arg;
	wq->nthreads = nthreads;
	for (i = 0; i < nthreads; i++) {
		struct workq_thread *t = &wq->threads[i];

		t->wq = wq;
		if (tls_new != NULL && (t->tls = tls_new(arg)) == NULL) {
			*cause = strdup("cannot make a worker's state");
			goto err;
		}
		if ((rc = pthread_create(&t->tid, NULL, workq_main, t)) != 0) {
			if (asprintf(cause, "pthread_create: %s",
			    strerror(rc)) == -1)
				*cause = NULL;
			goto err;
		}
		t->started = 1;
	}
	return wq;
err:
	workq_free(wq);
	return NULL;
}

void
workq_free(struct workq *wq)
{
	unsigned i;

	if (wq == NULL)
		return;
	pthread_mutex_lock(&wq->lock);
	wq->stopping = 1;
	pthread_cond_broadcast(&wq->cond);
	pthread_mutex_unlock(&wq->lock);
	for (i = 0; i < wq->nthreads; i++) {
		struct workq_thread *t = &wq->threads[i];

		if (t->started)
			pthread_join(t->tid, NULL);
		if (t->tls != NULL && wq->tls_free != NULL)
			wq->tls_free(t->tls);
	}
	pthread_cond_destroy(&wq->cond);
	pthread_mutex_destroy(&wq->lock);
	free(wq->threads);
	free(wq);
}

void
workq_push(struct workq *wq, struct workq_item *item)
{
	item->next = NULL;
	pthread_mutex_lock(&wq->lock);
	if (wq->tail != NULL)
		wq->tail->next = item;
	else
		wq->head = item;
	wq->tail = item;
	pthread_cond_signal(&wq->cond);
	pthread_mutex_unlock(&wq->lock);
}
