/*
 * defer: the store writer's deferred commits.
 *
 * Without them, each group of the store writer's jobs is one LMDB
 * transaction, committed (two fsyncs, and every page it touched written
 * anew) before its jobs are answered.  With them, the writer keeps one
 * transaction open across groups (the held transaction): each group runs
 * in a child of it, whose puts and deletes are captured, written to the
 * store journal (store.journal, redo.h) as one frame and synced (with
 * [store] sync = full) before its jobs are answered; the held transaction
 * takes the child's changes in memory.  A checkpoint commits it, with the
 * number of the journal's last frame, and the journal starts again.  A
 * group then costs one sequential append and one fdatasync, and a page
 * that groups touch again and again is written once per checkpoint.  This
 * is the URL store's way (docs/urlstore.md), with the store's own B-trees
 * in place of URL segments.
 *
 * Readers.  What the held transaction holds is not in LMDB yet: a reader's
 * store_get and scans look first in the view of it (pending.h), which a
 * group's operations join once they are journaled.  A reader takes the
 * newest view when it begins, before its snapshot: if a checkpoint
 * commits in between, its view is older than its snapshot and says
 * nothing the snapshot does not say too.  Other threads' write
 * transactions read through the view too (they begin only when nothing
 * is held, or when what the view holds could not be committed).  Counts
 * (store_count) read LMDB alone: the writer checkpoints before any job
 * that is not journaled, and before verification.
 *
 * Crashes.  LMDB holds the state of the last checkpoint and the number of
 * the last frame it includes; store_open applies the frames after it (the
 * same operations, in the same order, to the same state) and commits
 * them; if that commit finds no room, the frames go to the view, and the
 * store writer's first group or checkpoint applies them again.  A group is answered only once its frame is written (and synced
 * for durability), and readers see only what frames hold: nothing
 * acknowledged or seen is lost.
 *
 * Other writers.  LMDB has one write lock.  While the store writer holds
 * it, another thread's store_write_begin tells it (defer_on_wanted's
 * callback) and waits; the writer checkpoints after its current group.
 *
 * Failures.  A group whose frame cannot be written (its jobs fail), or a
 * checkpoint whose commit fails (a full disk or map), loses the held
 * transaction, and LMDB's write lock with it: the next group builds it
 * again from the journal's frames since the last checkpoint, and the
 * checkpoint is tried again, no sooner than DEFER_RETRY_MS after a failed
 * one.  Readers' views keep what was journaled meanwhile.  A group too
 * large for what is left of the journal or the view is refused with
 * STORE_JOURNAL_FULL, nothing changed: the writer checkpoints and runs it
 * again, or, when it is larger than an empty journal, commits it
 * directly.
 *
 * Threads: the store writer calls defer_group_begin, defer_group_end,
 * defer_checkpoint and defer_checkpoint_due; store.c the rest, from any
 * thread.
 */
#ifndef NDDD_DEFER_H
#define NDDD_DEFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redo.h"
#include "store.h"

struct store_view;

/*
 * store_open: opens the store journal of data directory dir (size bytes),
 * applies the frames the store does not hold yet and commits them.
 * sync: groups are synced before they are answered.  Returns 0, or -1
 * with *cause (caller frees; NULL: out of memory).
 */
int defer_open(struct store *st, const char *dir, size_t size, bool sync,
    char **cause);
/* store_close: gives up a held transaction (its frames are replayed at
 * the next start) and frees what defer_open made. */
void defer_close(struct store *st);

/* Any thread: whether reads of the transaction whose writes are deferred
 * must look at a view, and captures taken. */
bool defer_enabled(const struct store *st);
/* store_reader_begin: the newest view, held until defer_view_release. */
struct store_view *defer_view_take(struct store *st);
void defer_view_release(struct store *st, struct store_view *v);
/* What view v holds for table t's key: STORE_OK (*out set),
 * STORE_NOTFOUND (deleted), or -1 (nothing: read LMDB). */
int defer_view_get(const struct store_view *v, enum store_table t,
    const void *key, size_t klen, struct store_val *out);
/* The entries view v holds for table t, in no order, in a new array *out
 * (caller frees).  Returns their number, or -1 when out of memory. */
long defer_view_entries(const struct store_view *v, enum store_table t,
    struct pending_entry **out);
/* A deferred group's put or delete, done. */
void defer_capture(struct store *st, const struct redo_op *op);
/* Whether this thread is the one that holds deferred writes. */
bool defer_is_holder(void);
/* Another thread is about to wait for the write lock, and is done
 * waiting: the holder is asked to checkpoint. */
void defer_want_begin(struct store *st);
void defer_want_end(struct store *st);

/*
 * The store writer: begins a group's transaction, a child of the held one
 * (begun if none is), whose puts and deletes are captured.  End it with
 * defer_group_end, or store_abort.  Returns a store status.
 */
int defer_group_begin(struct store *st, struct store_txn **out);
/*
 * The store writer: journals the group of txn (one frame, synced if the
 * store syncs), moves its changes into the held transaction and shows
 * them to readers; txn is freed, whatever happens.  Returns STORE_OK;
 * STORE_JOURNAL_FULL when the group does not fit what is left of the
 * journal or the view (nothing changed: checkpoint and try again); or a
 * failure, after which the group changed nothing.
 */
int defer_group_end(struct store_txn *txn);
/*
 * The store writer: commits the held transaction, if any, recording the
 * journal's last frame; the journal then starts again and readers move
 * to a new view.  Returns a store status: on failure the held
 * transaction is gone, to be built again from the journal; until
 * DEFER_RETRY_MS later, a checkpoint with none held answers the same
 * failure at once.
 */
int defer_checkpoint(struct store *st);
/* The store writer: whether a transaction is held (or must be built
 * again): a checkpoint has something to commit. */
bool defer_holding(const struct store *st);
/* The store writer: whether a checkpoint is due now: the journal or the
 * view half full, the held transaction older than DEFER_MAX_AGE_MS, or
 * another thread waiting for the write lock. */
bool defer_checkpoint_due(const struct store *st, uint64_t now_ms);
/* Calls fn(arg), from the waiting thread, when another thread begins to
 * wait for the write lock; set before the writer starts. */
void defer_on_wanted(struct store *st, void (*fn)(void *), void *arg);

#define DEFER_MAX_AGE_MS	5000
#define DEFER_RETRY_MS		1000

struct defer_stats {
	uint64_t journal_bytes;		/* in the current round */
	uint64_t journal_bytes_written;
	uint64_t frames, syncs;
	uint64_t checkpoints;
	uint64_t pending;		/* keys written since the last one */
	uint64_t failures;		/* groups and checkpoints that lost
					   the held transaction */
};

/* Any thread; zeroes when deferral is off. */
void defer_stats(struct store *st, struct defer_stats *out);

#endif
