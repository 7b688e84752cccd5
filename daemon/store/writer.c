/*
 * writer: the store's one writing thread, with group commit.  See writer.h.
 *
 * Locking: w->lock guards the queue, the stop flag, the pending count and
 * the wanted flag; the writer waits on w->cond for work (or, holding a
 * deferred transaction, for WRITER_IDLE_MS at most).  Jobs belong to the
 * writer from writer_submit until they are posted to the mailbox, and to
 * the loop after.
 */
#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "defer.h"
#include "log.h"
#include "store.h"

/*
 * Store operations gathered into one transaction, at most.  LMDB refuses a
 * transaction that dirties more than 128Ki pages; with random keys each
 * operation can dirty its own leaf, so a group stops growing here (a single
 * job, bounded by [server] max_batch, may carry it past by one job).
 */
#define WRITER_GROUP_MAX_COST 65536
/* A deferred transaction is committed once the writer has had nothing to
 * do for this long: the checkpoint's syncs cost no one any time then. */
#define WRITER_IDLE_MS 50

struct writer {
	struct store *st;
	struct mailbox *mb;
	pthread_t thread;
	bool started;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct writer_job *head, *tail;
	bool stopping;
	bool wanted;			/* another thread waits to write */
	size_t pending;

	/* Statistics: written by the writer thread. */
	uint64_t commits, jobs, failed_txns;
};

static void
writer_deliver(struct mailbox_msg *msg, void *arg)
{
	struct writer *w = arg;
	struct writer_job *job = MAILBOX_CONTAINER(msg, struct writer_job, msg);

	pthread_mutex_lock(&w->lock);
	w->pending--;
	pthread_mutex_unlock(&w->lock);
	job->ops->done(job);
}

static void
finish(struct writer *w, struct writer_job *job)
{
	__atomic_fetch_add(&w->jobs, 1, __ATOMIC_RELAXED);
	mailbox_post(w->mb, &job->msg);
}

/* Reverses the jobs from list up to end in place; returns the new first. */
static struct writer_job *
reverse_jobs(struct writer_job *list, struct writer_job *end)
{
	struct writer_job *prev = end, *job = list, *next;

	while (job != end) {
		next = job->next;
		job->next = prev;
		prev = job;
		job = next;
	}
	return prev;
}

/*
 * Tells the jobs from list up to (not including) end that their transaction
 * aborted, the last first: effects outside the store are taken back in the
 * reverse order of their doing (a document changed twice in one
 * transaction must end as it began).
 */
static void
undo_jobs(struct writer_job *list, struct writer_job *end)
{
	struct writer_job *last = reverse_jobs(list, end), *job;

	/* No allocation here: an abort must not be able to fail. */
	for (job = last; job != end; job = job->next)
		job->ops->aborted(job);
	reverse_jobs(last, end);	/* the queue's order, for the retries */
}

/*
 * Applies the jobs of list in txn, at one wall-clock time.  Returns
 * STORE_OK, or the failure with *end the job after the one that failed
 * (the jobs before *end were applied, in part for the last).
 */
static int
apply_jobs(struct writer_job *list, struct store_txn *txn,
    struct writer_job **end)
{
	uint64_t now = clock_wall_ms();
	int rc;

	for (struct writer_job *job = list; job != NULL; job = job->next) {
		job->now_ms = now;
		if ((rc = job->ops->apply(job, txn)) != STORE_OK) {
			*end = job->next;
			return rc;
		}
	}
	return STORE_OK;
}

/* The jobs of list are done: counted as a group, each told. */
static void
jobs_committed(struct writer *w, struct writer_job *list)
{
	__atomic_fetch_add(&w->commits, 1, __ATOMIC_RELAXED);
	for (struct writer_job *job = list; job != NULL; job = job->next) {
		job->status = STORE_OK;
		job->ops->committed(job);
	}
}

/* The jobs of list up to end failed: counted, the applied ones undone. */
static void
jobs_aborted(struct writer *w, struct writer_job *list, struct writer_job *end)
{
	__atomic_fetch_add(&w->failed_txns, 1, __ATOMIC_RELAXED);
	undo_jobs(list, end);
}

/*
 * Applies the jobs of list as one group: in a transaction of its own, or
 * deferred (defer.h).  Returns STORE_OK (all committed or journaled), or
 * the failure, after which every applied job has been told it was aborted
 * and none has been finished; STORE_JOURNAL_FULL (deferred only) when the
 * group does not fit what is left of the journal: nothing was done.
 */
static int
apply_group(struct writer *w, struct writer_job *list, bool deferred)
{
	struct store_txn *txn;
	struct writer_job *end = NULL;
	int rc;

	rc = deferred ? defer_group_begin(w->st, &txn) :
	    store_write_begin(w->st, &txn);
	if (rc != STORE_OK)
		return rc;
	if ((rc = apply_jobs(list, txn, &end)) != STORE_OK)
		store_abort(txn);
	else
		rc = deferred ? defer_group_end(txn) : store_commit(txn);
	if (rc == STORE_JOURNAL_FULL)
		undo_jobs(list, end);	/* no failure: tried again */
	else if (rc != STORE_OK)
		jobs_aborted(w, list, end);
	else
		jobs_committed(w, list);
	return rc;
}

/* Commits what the writer holds deferred.  Returns a store status. */
static int
checkpoint(struct writer *w)
{
	int rc;

	if (!defer_holding(w->st))
		return STORE_OK;
	if ((rc = defer_checkpoint(w->st)) != STORE_OK &&
	    !store_status_full(rc))
		log_warnx("%s: %s", __func__, store_strstatus(rc));
	return rc;
}

/* Whether every job of list may be answered from the journal. */
static bool
list_journaled(const struct writer_job *list)
{
	for (; list != NULL; list = list->next)
		if (!list->ops->journaled)
			return false;
	return true;
}

/*
 * Applies the jobs of list, deferred when they all allow it and the store
 * defers, else in a transaction of their own (after a checkpoint: LMDB
 * has one write transaction at a time).  Returns as apply_group does.
 */
static int
run_jobs(struct writer *w, struct writer_job *list)
{
	int rc;

	if (defer_enabled(w->st) && list_journaled(list)) {
		if ((rc = apply_group(w, list, true)) != STORE_JOURNAL_FULL)
			return rc;
		/* Room for it after a checkpoint, or none in an empty
		 * journal: then it is committed on its own. */
		if ((rc = checkpoint(w)) != STORE_OK)
			return rc;
		if ((rc = apply_group(w, list, true)) != STORE_JOURNAL_FULL)
			return rc;
	}
	if ((rc = checkpoint(w)) != STORE_OK)
		return rc;
	return apply_group(w, list, false);
}

/* Logs a failed transaction, unless it was refused for want of room:
 * the store tells of that once, not once per transaction. */
static void
log_failure(const char *func, const char *what, int rc)
{
	if (!store_status_full(rc))
		log_warnx("%s: %s failed: %s", func, what,
		    store_strstatus(rc));
}

static void
run_group(struct writer *w, struct writer_job *list)
{
	struct writer_job *job, *next;
	int rc = run_jobs(w, list);

	if ((store_status_full(rc) || rc == STORE_TXN_FULL) &&
	    list->next != NULL) {
		/* Let what still fits through, one job at a time. */
		for (job = list; job != NULL; job = next) {
			next = job->next;
			job->next = NULL;
			if ((job->status = run_jobs(w, job)) != STORE_OK)
				log_failure(__func__, "a job's transaction",
				    job->status);
			finish(w, job);
		}
		return;
	}
	if (rc != STORE_OK)
		log_failure(__func__, list->next ? "a transaction of several "
		    "jobs" : "a job's transaction", rc);
	for (job = list; job != NULL; job = next) {
		next = job->next;
		job->status = rc;
		finish(w, job);
	}
}

/*
 * Waits, w->lock held, until a job is queued or the writer stops, or,
 * while it holds a deferred transaction, until it is idle for
 * WRITER_IDLE_MS or another thread waits to write.  Returns whether a
 * checkpoint is due instead of a job.
 */
static bool
wait_for_work(struct writer *w)
{
	struct timespec until;
	uint64_t ms;

	while (w->head == NULL && !w->stopping) {
		if (!defer_holding(w->st)) {
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		if (w->wanted)
			return true;
		clock_gettime(CLOCK_REALTIME, &until);
		ms = (uint64_t)until.tv_nsec / 1000000 + WRITER_IDLE_MS;
		until.tv_sec += (time_t)(ms / 1000);
		until.tv_nsec = (long)(ms % 1000) * 1000000 +
		    until.tv_nsec % 1000000;
		if (pthread_cond_timedwait(&w->cond, &w->lock, &until) ==
		    ETIMEDOUT && w->head == NULL)
			return true;
	}
	return w->head == NULL;	/* stopping: commit before leaving */
}

static void *
writer_main(void *arg)
{
	struct writer *w = arg;
	struct writer_job *list, *last;
	size_t cost;
	bool due;

	pthread_setname_np(pthread_self(), "nddd-writer");
	for (;;) {
		pthread_mutex_lock(&w->lock);
		due = wait_for_work(w);
		w->wanted = false;
		if (due) {
			pthread_mutex_unlock(&w->lock);
			checkpoint(w);
			pthread_mutex_lock(&w->lock);
			if (w->head == NULL && w->stopping) {
				pthread_mutex_unlock(&w->lock);
				break;
			}
			pthread_mutex_unlock(&w->lock);
			continue;
		}
		/* Take what is queued, up to a group's worth; a job that runs
		 * alone is a group of its own. */
		list = last = w->head;
		cost = list->cost;
		while (list->ops->alone == NULL && last->next != NULL &&
		    last->next->ops->alone == NULL &&
		    cost + last->next->cost <= WRITER_GROUP_MAX_COST) {
			last = last->next;
			cost += last->cost;
		}
		w->head = last->next;
		if (w->head == NULL)
			w->tail = NULL;
		last->next = NULL;
		pthread_mutex_unlock(&w->lock);

		if (list->ops->alone != NULL) {
			/* It must see the store whole: nothing held back. */
			if ((list->status = checkpoint(w)) == STORE_OK)
				list->ops->alone(list);
			finish(w, list);
		} else
			run_group(w, list);
		if (defer_checkpoint_due(w->st, clock_mono_ms()))
			checkpoint(w);
	}
	return NULL;
}

/* Another thread waits for LMDB's write lock: the writer checkpoints. */
static void
on_wanted(void *arg)
{
	struct writer *w = arg;

	pthread_mutex_lock(&w->lock);
	w->wanted = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

struct writer *
writer_new(struct store *st, struct event_base *base)
{
	struct writer *w;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->st = st;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if ((w->mb = mailbox_new(base, writer_deliver, w)) == NULL)
		goto err;
	defer_on_wanted(st, on_wanted, w);
	if (pthread_create(&w->thread, NULL, writer_main, w) != 0)
		goto err;
	w->started = true;
	return w;
err:
	writer_free(w);
	return NULL;
}

void
writer_submit(struct writer *w, struct writer_job *job)
{
	job->next = NULL;
	job->status = STORE_OK;
	pthread_mutex_lock(&w->lock);
	if (w->tail != NULL)
		w->tail->next = job;
	else
		w->head = job;
	w->tail = job;
	w->pending++;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

size_t
writer_pending(struct writer *w)
{
	size_t n;

	pthread_mutex_lock(&w->lock);
	n = w->pending;
	pthread_mutex_unlock(&w->lock);
	return n;
}

void
writer_stop(struct writer *w)
{
	if (!w->started)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	w->started = false;
	/* Hand back what the thread finished after the loop last looked. */
	mailbox_drain(w->mb);
}

void
writer_free(struct writer *w)
{
	if (w == NULL)
		return;
	if (w->started)
		writer_stop(w);
	mailbox_free(w->mb);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

void
writer_stats(const struct writer *w, struct writer_stats *out)
{
	out->commits = __atomic_load_n(&w->commits, __ATOMIC_RELAXED);
	out->jobs = __atomic_load_n(&w->jobs, __ATOMIC_RELAXED);
	out->failed_txns = __atomic_load_n(&w->failed_txns, __ATOMIC_RELAXED);
}
