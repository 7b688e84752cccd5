/*
 * workers: a pool of threads for requests' CPU work.  See workers.h.
 *
 * The pool is a workq (one queue, threads with their own context); what
 * this adds is the way back: a finished task is posted to a mailbox and its
 * done callback runs in the loop.  w->pending counts tasks from submit to
 * delivery, for the server's shutdown, under w->lock.
 */
#include "workers.h"

#include <pthread.h>
#include <stdlib.h>

#include "log.h"
#include "workq.h"

struct workers {
	struct workq *wq;
	struct mailbox *mb;
	pthread_mutex_t lock;
	size_t pending;
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

static void
task_run(struct workq_item *item, void *ctx)
{
	struct worker_task *t = WORKQ_CONTAINER(item, struct worker_task,
	    item);

	t->ops->run(t, ctx);
	mailbox_post(t->workers->mb, &t->msg);
}

struct workers *
workers_new(unsigned n, struct event_base *base, void *(*ctx_new)(void *),
    void (*ctx_free)(void *), void *arg)
{
	struct workers *w;
	char *cause = NULL;

	if (n == 0 || (w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	pthread_mutex_init(&w->lock, NULL);
	if ((w->mb = mailbox_new(base, workers_deliver, w)) == NULL ||
	    (w->wq = workq_new(n, ctx_new, ctx_free, arg, &cause)) == NULL) {
		log_warnx("%s: cannot start %u workers: %s", __func__, n,
		    cause ? cause : "out of memory");
		free(cause);
		workers_free(w);
		return NULL;
	}
	return w;
}

void
workers_submit(struct workers *w, struct worker_task *t)
{
	t->workers = w;
	t->item.fn = task_run;
	pthread_mutex_lock(&w->lock);
	w->pending++;
	pthread_mutex_unlock(&w->lock);
	workq_push(w->wq, &t->item);
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
	/* Runs what is queued, then delivers the last tasks here. */
	workq_free(w->wq);
	if (w->mb != NULL) {
		mailbox_drain(w->mb);
		mailbox_free(w->mb);
	}
	pthread_mutex_destroy(&w->lock);
	free(w);
}
