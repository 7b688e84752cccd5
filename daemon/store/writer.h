/*
 * writer: the store's one writing thread, with group commit.
 *
 * The event loop and the request workers hand it jobs (a batch of
 * documents to store, say).  The writer takes every job queued while its
 * previous group ran and applies them all as one group, and only then
 * hands the jobs back to the loop through a mailbox, where their replies
 * are sent.  So no reply to a mutation leaves before the mutation is
 * durable, and a burst of requests costs one sync.
 *
 * A group of journaled jobs (their ops say so) is deferred (defer.h): it
 * runs in a child of the transaction the writer holds open, is written
 * to the store journal as one frame (synced per the store's policy) and
 * answered; the writer commits the held transaction at a checkpoint:
 * when it has been idle for WRITER_IDLE_MS, when the journal or the
 * readers' view is half full, when it is DEFER_MAX_AGE_MS old, when
 * another thread waits for LMDB's write lock, before any other job, and
 * when it stops.  Any other group is one LMDB write transaction of its
 * own, committed (syncing per the store's policy) before it is answered.
 *
 * If a transaction fails because the store or the disk is full (or the
 * transaction is too large), its jobs are retried one per transaction, so
 * that what still fits (deletes, in particular) goes through; the others
 * fail with that status (STORE_FULL, STORE_NOSPACE).  Any other failure
 * fails every job of the transaction.  Nothing waits for room: the next
 * job tries afresh, so writes resume as soon as there is room, and the
 * store logs the episode (store.h), not each refusal.
 *
 * Threads: writer_submit from any thread (the loop, request workers, the
 * URL writer's callbacks: it takes the queue's lock); writer_stop from the
 * loop; the job callbacks as each one says.
 */
#ifndef NDDD_WRITER_H
#define NDDD_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mailbox.h"

struct event_base;
struct store;
struct store_txn;
struct writer_job;

struct writer_job_ops {
	/*
	 * Writer thread: apply the job in txn.  Must start from scratch on
	 * each call (a job may be retried alone after its group failed).
	 * Returns STORE_OK, or a failure that aborts the transaction.
	 */
	int (*apply)(struct writer_job *job, struct store_txn *txn);
	/* Writer thread: the transaction holding this job committed. */
	void (*committed)(struct writer_job *job);
	/*
	 * Writer thread: the transaction holding this (possibly partly)
	 * applied job was aborted; take back any effect outside the store.
	 */
	void (*aborted)(struct writer_job *job);
	/* Loop thread: the job is finished; job->status says how. */
	void (*done)(struct writer_job *job);
	/*
	 * Writer thread, instead of apply/committed/aborted when set: a job
	 * that must see the store and memory with no transaction open and
	 * nothing else running (verification).
	 */
	void (*alone)(struct writer_job *job);
	/*
	 * The job may be answered once its changes are in the store journal
	 * (defer.h): every change it makes in the store is a store_put or
	 * store_del, and what it changes in memory is rebuilt from the store
	 * at start-up.
	 */
	bool journaled;
};

struct writer_job {
	const struct writer_job_ops *ops;
	size_t cost;			/* store operations, to size groups */
	int status;			/* STORE_OK or why the job failed */
	uint64_t now_ms;		/* wall-clock time of the transaction */
	struct writer_job *next;	/* writer's queue */
	struct mailbox_msg msg;		/* back to the loop */
};

struct writer_stats {
	uint64_t commits;		/* groups committed or journaled */
	uint64_t jobs;
	uint64_t failed_txns;
};

struct writer;

/* Starts the writer thread on st, delivering finished jobs into base. */
struct writer *writer_new(struct store *st, struct event_base *base);
/* Any thread: queues a job.  Its done callback will run in the loop. */
void writer_submit(struct writer *w, struct writer_job *job);
/* Jobs queued or in a transaction, not yet handed back. */
size_t writer_pending(struct writer *w);
/*
 * Loop thread: finishes every queued job (delivering them), stops and joins
 * the thread.  After it, writer_free.
 */
void writer_stop(struct writer *w);
void writer_free(struct writer *w);

void writer_stats(const struct writer *w, struct writer_stats *out);

#endif
