/*
 * store: the LMDB environment that is nddd's source of truth.
 *
 * One environment per data directory, holding named tables (metadata, URL
 * segments and their live bitmaps, documents and their URL index).  This
 * module owns the environment, the transactions and the translation of
 * LMDB's error codes into the few outcomes callers act on; the record
 * formats belong to the modules that store them (urlset for URLs, docset
 * for documents).
 *
 * A full disk.  Nothing nddd writes goes through a mapping of a file whose
 * blocks are not allocated yet, because a write fault on such a page when
 * the file system has no room kills the process with SIGBUS:
 *
 *   - dirty pages are written with pwrite at commit (no MDB_WRITEMAP), so
 *     a full disk fails the commit with STORE_NOSPACE, and a page is
 *     written without being read first;
 *   - LMDB's lock file (lock.mdb), which it maps writable and sizes with
 *     ftruncate (leaving holes), has its blocks allocated (fallocate) when
 *     the store opens, before any reader takes a slot in it: a reader slot
 *     on a page never written before (more workers than in any earlier
 *     run) would otherwise fault on a full disk.
 *
 * A write refused for want of room (STORE_FULL: the map, STORE_NOSPACE:
 * the disk) changes nothing in the store, and the next write is tried
 * afresh: writes resume by themselves once there is room.  This module
 * says so in the log once when it starts and once when it ends (and at
 * most once a minute in between), for both writers: callers need not
 * log these statuses themselves.
 *
 * Threads: one write transaction at a time (LMDB serializes them), begun,
 * used and ended by one thread (the store writer for documents, the URL
 * writer for URLs).  Read transactions are reusable handles (renewed per
 * use, never held across event-loop callbacks) and may be used from any one
 * thread at a time.
 */
#ifndef NDDD_STORE_H
#define NDDD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum store_sync {
	STORE_SYNC_FULL,	/* fsync at every commit: survives power loss */
	STORE_SYNC_NONE,	/* leave flushing to the OS: survives a crash
				   of nddd (kill -9), not of the machine */
};

enum store_table {
	STORE_META,
	STORE_URLS,		/* format 1 URL records, read once to upgrade */
	STORE_URL_SEGS,		/* segment id (u32) -> segment (urlrec.h) */
	STORE_URL_LIVE,		/* segment id (u32) -> its live bitmap */
	STORE_DOCS,		/* document id -> record */
	STORE_DOC_URLS,		/* MD5 of a document's URL -> its id */
	STORE_URL_HOSTS,	/* URLs by namespace and host (urlhosts.h) */
	STORE_NTABLES
};

/* Outcomes.  Every function returning int returns one of these. */
enum store_status {
	STORE_OK = 0,
	STORE_NOTFOUND,		/* no such key */
	STORE_EXISTS,		/* put with STORE_NOOVERWRITE on a present key */
	STORE_FULL,		/* the map is full ([store] map_size) */
	STORE_TXN_FULL,		/* the transaction touched too many pages */
	STORE_FAILED,		/* I/O or internal error; see the log */
	STORE_NOSPACE,		/* the disk is full (ENOSPC, EDQUOT) */
	STORE_JOURNAL_FULL,	/* a deferred group does not fit (defer.h) */
	STORE_WOULD_BLOCK,	/* a read that may not wait needs the disk
				   or another thread (urlset_reader_nowait) */
};

/* Whether status refused a write for want of room: the map or the disk. */
static inline int
store_status_full(int status)
{
	return status == STORE_FULL || status == STORE_NOSPACE;
}

#define STORE_NOOVERWRITE 0x1

struct store_options {
	const char *dir;
	uint64_t map_size;
	enum store_sync sync;
	unsigned max_readers;	/* read transactions held at once, at most
				   (store_reader_new); 0: LMDB's default,
				   126 */
	size_t journal_size;	/* the store journal's bytes (defer.h); 0:
				   the store writer commits each group */
};

struct store_val {
	const void *data;	/* points into the map: valid until txn ends */
	size_t len;
};

struct store;
struct store_txn;

/*
 * Opens (creating if needed) the data directory and its environment, and
 * takes an exclusive lock on it so that two daemons never share one.
 * Returns NULL with *cause set (caller frees) on failure.
 */
struct store *store_open(const struct store_options *opts, char **cause);
void store_close(struct store *st);
/*
 * Reads the data file into memory in its own order, in a thread, as at
 * store_open (see "Warming" in store.c), for a scan of most of it that
 * follows (the documents' restart image, saved at a stop).  The thread
 * of an earlier warming is joined first.  One thread at a time calls it.
 */
void store_warm(struct store *st);
/*
 * The reader slots of the environment: readers beyond them fail to begin
 * (at least max_readers; more when an earlier run left a larger table).
 */
unsigned store_max_readers(struct store *st);

/* A short description of a status, for error replies and logs. */
const char *store_strstatus(int status);

/*
 * Any thread: notes a write refused for want of room (status STORE_FULL or
 * STORE_NOSPACE) that did not come from this module (the URL journal's
 * file), so that it is logged and counted with the store's own.
 */
void store_note_full(struct store *st, int status);
/*
 * Any thread: 0 while writes go through, else the status (STORE_FULL or
 * STORE_NOSPACE) that refused the last write since; *refused (if non-NULL)
 * counts the writes refused for want of room since the store opened.
 */
int store_full_state(struct store *st, uint64_t *refused);
/*
 * Whether the data directory's file system has room again after a write
 * was refused for want of it: at least 16 MiB, or an eighth of it, free.
 * One statvfs.
 */
bool store_disk_has_room(struct store *st);

/* Begins the write transaction.  Returns STORE_OK or STORE_FAILED. */
int store_write_begin(struct store *st, struct store_txn **out);
/* Commits (syncing per the sync policy) and frees txn, whatever happens. */
int store_commit(struct store_txn *txn);
/* Aborts and frees txn. */
void store_abort(struct store_txn *txn);

/* A reusable read transaction: create once, then begin/end around uses. */
struct store_txn *store_reader_new(struct store *st);
void store_reader_free(struct store_txn *txn);
int store_reader_begin(struct store_txn *txn);
void store_reader_end(struct store_txn *txn);

int store_get(struct store_txn *txn, enum store_table t, const void *key,
    size_t klen, struct store_val *out);
/*
 * Puts key -> val.  With STORE_NOOVERWRITE, a present key is left alone,
 * STORE_EXISTS is returned and *existing (if non-NULL) holds its value.
 */
int store_put(struct store_txn *txn, enum store_table t, const void *key,
    size_t klen, const void *val, size_t vlen, unsigned flags,
    struct store_val *existing);
int store_del(struct store_txn *txn, enum store_table t, const void *key,
    size_t klen);
/*
 * Makes room for a value of vlen bytes under key and sets *out to it: the
 * caller writes the value there before the transaction's next call.
 */
int store_reserve(struct store_txn *txn, enum store_table t, const void *key,
    size_t klen, size_t vlen, void **out);
/* Deletes every record of t. */
int store_drop(struct store_txn *txn, enum store_table t);
/*
 * The transaction's id: a reader's is that of the last commit it sees; a
 * write transaction's, the one it commits as.  Ids only grow.
 */
uint64_t store_txn_id(struct store_txn *txn);
/* Number of records in table t as seen by txn, in *out.  Returns a status. */
int store_count(struct store_txn *txn, enum store_table t, uint64_t *out);
/*
 * For tests: when set, store_count and store_get ask it first (with "count"
 * or "get") and fail as a damaged map would (STORE_FAILED) when it returns
 * non-zero; deferred commits ask it before writing a group's frame
 * ("journal") and committing a checkpoint ("checkpoint"), and fail as an
 * I/O error would.
 */
extern int (*store_fault_hook)(const char *call);
/* Bytes of the map in use (pages below the last page used). */
uint64_t store_bytes_used(struct store *st);

/*
 * What names the store's contents for a file kept beside them (the
 * documents' restart image, docimage.h): the data file and its last
 * commit.  Two idents are equal only if nothing was committed between.
 */
struct store_ident {
	uint64_t txn_id;	/* the last commit */
	uint64_t dev, ino;	/* the data file */
};
/* The store as opened, before any write of this process (deferred
 * commits replayed). */
void store_ident_at_open(struct store *st, struct store_ident *out);
/* The store now; stable only while nothing writes.  Returns a status. */
int store_ident_now(struct store *st, struct store_ident *out);
/* The data directory. */
const char *store_dir(struct store *st);

/*
 * Calls fn for every record of t in key order, in one read transaction.
 * Stops early if fn returns non-zero and returns that value; else STORE_OK.
 */
typedef int (*store_scan_fn)(const void *key, size_t klen, const void *val,
    size_t vlen, void *arg);
int store_scan(struct store *st, enum store_table t, store_scan_fn fn,
    void *arg);

/* The same within txn (a begun reader or the write transaction). */
int store_scan_txn(struct store_txn *txn, enum store_table t,
    store_scan_fn fn, void *arg);
/* The same from the first key at or after from[0..flen) (NULL: the first). */
int store_scan_from(struct store_txn *txn, enum store_table t,
    const void *from, size_t flen, store_scan_fn fn, void *arg);

/* Metadata: small text values under text keys. */
int store_meta_get(struct store_txn *txn, const char *key, char *buf,
    size_t size);
int store_meta_put(struct store_txn *txn, const char *key, const char *val);

#endif
