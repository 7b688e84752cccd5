/*
 * workers: a pool of threads for requests' CPU work.  See workers.h.
 *
 * Locking: w->lock guards the queue, the pending count and the stop flag;
 * idle threads wait on w->cond.
 */
#include "workers.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "log.h"

struct workers {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct worker_task *head, *tail;
	size_t pending;
	bool stopping;
	struct mailbox *mb;
	pthread_t *threads;
	unsigned nthreads;
	void *(*ctx_new)(void *);
	void (*ctx_free)(void *);
	void *arg;
	int start_failed;
	unsigned started;
};

static void
workers_deliver(struct mailbox_msg *msg, void *arg)
{
	struct workers *w = arg;
	struct worker_task *t = MAILBOX_CONTAINER(msg, struct worker_task, msg);

	pthread_mutex_lock(&w->lock);
	w->pending--;
	pthread_mutex_unlock(&w->lock);
	t->ops->done(t);
}

static void *
worker_main(void *arg)
{
	struct workers *w = arg;
	struct worker_task *t;
	void *ctx;

	pthread_setname_np(pthread_self(), "nddd-worker");
	ctx = w->ctx_new(w->arg);

	pthread_mutex_lock(&w->lock);
	w->started++;
	if (ctx == NULL)
		w->start_failed = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	if (ctx == NULL)
		return NULL;

	for (;;) {
		pthread_mutex_lock(&w->lock);
		while (w->head == NULL && !w->stopping)
			pthread_cond_wait(&w->cond, &w->lock);
		if ((t = w->head) == NULL) {
			pthread_mutex_unlock(&w->lock);
			break;
		}
		if ((w->head = t->next) == NULL)
			w->tail = NULL;
		pthread_mutex_unlock(&w->lock);

		t->ops->run(t, ctx);
		mailbox_post(w->mb, &t->msg);
	}
	w->ctx_free(ctx);
	return NULL;
}

struct workers *
workers_new(unsigned n, struct event_base *base, void *(*ctx_new)(void *),
    void (*ctx_free)(void *), void *arg)
{
	struct workers *w;

	if (n == 0 || (w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->ctx_new = ctx_new;
	w->ctx_free = ctx_free;
	w->arg = arg;
	if ((w->mb = mailbox_new(base, workers_deliver, w)) == NULL ||
	    (w->threads = calloc(n, sizeof(*w->threads))) == NULL)
		goto err;
	for (; w->nthreads < n; w->nthreads++)
		if (pthread_create(&w->threads[w->nthreads], NULL, worker_main,
		    w) != 0)
			goto err;
	/* Wait for every context: a failure must stop start-up. */
	pthread_mutex_lock(&w->lock);
	while (w->started < w->nthreads)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	if (w->start_failed)
		goto err;
	return w;
err:
	log_warnx("%s: cannot start %u workers", __func__, n);
	workers_free(w);
	return NULL;
}

void
workers_submit(struct workers *w, struct worker_task *t)
{
	t->next = NULL;
	pthread_mutex_lock(&w->lock);
	if (w->tail != NULL)
		w->tail->next = t;
	else
		w->head = t;
	w->tail = t;
	w->pending++;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

size_t
workers_pending(struct workers *w)
{
	size_t n;

	pthread_mutex_lock(&w->lock);
	n = w->pending;
	pthread_mutex_unlock(&w->lock);
	return n;
}

void
workers_free(struct workers *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	if (w->mb != NULL) {
		mailbox_drain(w->mb);
		mailbox_free(w->mb);
	}
	free(w->threads);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
