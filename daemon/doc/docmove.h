/*
 * docmove: the documents' side of adding a shard (docs/sharding.md).
 *
 * A document belongs to the shard that jump_hash_owner picks among a
 * list's places for the MD5 of its canonical URL (whatever its
 * namespace).  When a shard is added, the daemon at place P of the new
 * list of n places exports the documents it holds whose owner is not P,
 * while it keeps serving, and their new owner imports them:
 *
 *   - docmove_begin, in a store writer transaction, opens an export
 *     session for (n, P): from then on every put or delete of a moving
 *     document (a namespace's forgetting included) notes its namespace
 *     and URL in the session's changed set;
 *   - docmove_page reads the stored moving documents in id order, a page
 *     at a time, each through a read transaction that sees the begin;
 *   - docmove_changed then hands out the current state of the documents
 *     noted since, taking them out of the set, until it is empty; what
 *     changes meanwhile is noted again;
 *   - docmove_end closes the session.
 *
 * A page or a changed batch carries each document's whole state, and the
 * importer (docmove_import) sets the document to exactly that state, so
 * that a document read twice (by a page and again as changed) converges
 * to its last state.  Groups travel global: a group the exporter founded
 * (below 2^48) is sent with its place plus one in the top 16 bits, as the
 * sharded clients name it (nddd_shards_global_id); a global one is sent
 * as it is.  The importer keeps the group given, as a put keeps a group a
 * client decided.
 *
 * Imports are not noted in the changed set: the old owner, dropping what
 * it handed off (docmove_import with deleted), must not export those
 * deletions to the new owner should its session still be open.
 *
 * Statuses: the functions returning int return a store status (store.h)
 * or one of DOCMOVE_NOSESSION, DOCMOVE_STALE, DOCMOVE_INVALID;
 * docmove_strstatus describes any of them.
 *
 * The session and its changed set hang on the document set as its change
 * hook (docset_set_change_hook): the first docmove_begin registers it,
 * and it hears of every put and delete from then on; docset_free frees
 * it.  A change it cannot note (memory is short) fails its transaction.
 *
 * Threads.  docmove_begin, docmove_import and the jobs' callbacks run in
 * the store writer thread; docmove_page, docmove_changed, docmove_end
 * and docmove_open in any thread (the session and the changed set are
 * under a lock).
 */
#ifndef NDDD_DOCMOVE_H
#define NDDD_DOCMOVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "docns.h"
#include "docset.h"
#include "store.h"
#include "writer.h"

/* No export session is open. */
#define DOCMOVE_NOSESSION	100
/* The read transaction does not see the session's begin: read with a
 * newer one. */
#define DOCMOVE_STALE		101
/* A document to import is not one (no URL, a NUL in it, no group). */
#define DOCMOVE_INVALID		102

/* Where a shard's own ids end: global ids carry a place above them. */
#define DOCMOVE_GLOBAL_SHIFT	48

/* A document as resharding moves it (docs/sharding.md). */
struct doc_moved {
	char ns[DOCNS_NAME_MAX + 1];	/* its namespace ("": default) */
	char *url;			/* canonical */
	size_t url_len;
	uint64_t fp;			/* simhash */
	uint64_t group;			/* global */
	uint64_t created_ms, updated_ms;
	bool deleted;			/* it has no record */
	bool has_sketch;		/* else stored without one */
	struct sketch sketch;
};

/* A description of a status, DOCMOVE_* or a store status. */
const char *docmove_strstatus(int status);

/*
 * Store writer thread, in txn (a writer job's apply): opens an export
 * session for place place among shards places (place < shards), replacing
 * any open one and its changed set, and records it in the metadata
 * ("docs.export": the last session's shards and place).  Puts and deletes
 * applied after it, in this transaction or later ones, are noted; pages
 * must read through transactions that see txn committed.  If txn aborts,
 * the session stays open (docmove_end closes it).  Returns a store
 * status, or DOCMOVE_INVALID for a place not among the shards.
 */
int docmove_begin(struct docset *ds, struct store_txn *txn, uint32_t shards,
    uint32_t place);
/* Any thread: closes the session, if one is open, and drops its changed
 * set. */
void docmove_end(struct docset *ds);
/* Any thread: whether a session is open. */
bool docmove_open(struct docset *ds);

/*
 * Any thread, through its begun reader txn: the stored documents from id
 * *cursor on (0: the first), in id order, that the session moves (their
 * owner is not its place; documents of dropped namespaces are left out),
 * at most max of them in a new array *out of *n (free it with
 * docmove_free).  *cursor is where the next page starts, and *done says
 * that none is left.  A page looks at a bounded number of records, so it
 * may hold none without being done.  Returns STORE_OK, DOCMOVE_NOSESSION,
 * DOCMOVE_STALE (txn does not see the begin) or the store's failure.
 */
int docmove_page(struct docset *ds, struct store_txn *txn, uint64_t *cursor,
    size_t max, struct doc_moved **out, size_t *n, bool *done);
/*
 * Any thread, through its begun reader txn: up to max documents of the
 * changed set, taken out of it, each in its state as txn sees it (deleted
 * when it has no record, or is a dropped namespace's), in a new array
 * *out of *n (free it with docmove_free).  Only changes whose transaction
 * txn sees are handed out: a later one waits for a later read, and a
 * change that commits after this read is noted again.  (A change whose
 * transaction aborted waits for the next transaction that commits, which
 * takes its id.)  *more says whether
 * the set still holds any (visible to txn or not).  On failure the
 * documents taken out are put back.  Returns STORE_OK, DOCMOVE_NOSESSION
 * or the store's failure.
 */
int docmove_changed(struct docset *ds, struct store_txn *txn, size_t max,
    struct doc_moved **out, size_t *n, bool *more);
/* Frees n documents that docmove_page or docmove_changed returned. */
void docmove_free(struct doc_moved *m, size_t n);

/*
 * Store writer thread, in txn: sets the document of (d->ns, d->url) to d,
 * whoever owns it: deleted, it is deleted if it is there; else it is put
 * with d's fingerprint, group (kept as given, as docset_put keeps a group
 * given to join: not 0, not DOCSET_OWN_GROUP) and times.  The document's
 * key is derived here (docset_key) from d's namespace (a checked name, as
 * for docset_put) and URL (canonical, as a page gives it).  *undo takes
 * it back if txn aborts (docset_undo), and is empty when nothing changed.
 * Returns a store status, or DOCMOVE_INVALID for a document without a
 * URL, with a NUL in it, or with no group.
 */
int docmove_import(struct docset *ds, struct store_txn *txn,
    const struct doc_moved *d, struct doc_undo *undo);

/*
 * A store writer job that begins a session (docmove_begin), and closes it
 * again if its transaction aborts.  Set it up with docmove_begin_job_init,
 * then writer_submit(w, &job->wj); done runs in the loop thread with
 * wj.status saying how it went.
 */
struct docmove_begin_job {
	struct writer_job wj;
	struct docset *ds;
	uint32_t shards, place;
	void (*done)(struct docmove_begin_job *j);
	void *arg;			/* the caller's */
};
void docmove_begin_job_init(struct docmove_begin_job *j, struct docset *ds,
    uint32_t shards, uint32_t place, void (*done)(struct docmove_begin_job *),
    void *arg);

/*
 * A store writer job that imports docs[0 .. n) (docmove_import) in one
 * transaction, in order; if the transaction aborts, every import is taken
 * back.  docs stay the caller's until done runs (loop thread, wj.status
 * saying how it went: the first failure, if any).
 * docmove_import_job_init checks every document first: it returns
 * DOCMOVE_INVALID if one cannot be imported (so that no transaction
 * fails for it, taking other jobs with it), STORE_FAILED when memory is
 * short, else STORE_OK; docmove_import_job_clear frees what it
 * allocated.
 */
struct docmove_import_job {
	struct writer_job wj;
	struct docset *ds;
	const struct doc_moved *docs;
	size_t n;
	struct doc_undo *undo;		/* n of them: the imports applied */
	size_t applied;
	void (*done)(struct docmove_import_job *j);
	void *arg;			/* the caller's */
};
int docmove_import_job_init(struct docmove_import_job *j, struct docset *ds,
    const struct doc_moved *docs, size_t n,
    void (*done)(struct docmove_import_job *), void *arg);
void docmove_import_job_clear(struct docmove_import_job *j);

#endif
