/*
 * urlhostrun: the host index's runs in the store (urlhosts.h has the keys).
 *
 * A run is an immutable sorted list of index keys, written whole by one
 * flush or one merge, as a log-structured store writes: a flush adds the
 * round's keys as a new run instead of inserting them among the others (a
 * B-tree would rewrite a page per host touched), and runs of one size are
 * merged into one eight times larger, so a key is rewritten a few times and
 * a forget reads one block per run.
 *
 * In the store's url_hosts table, under an 8-byte key (run id, block
 * number; big-endian):
 *
 *	block b		u32 keys, then per key: u16 bytes shared with the
 *			previous key of the block, u16 bytes that follow,
 *			those bytes (the first key shares none)
 *	block DIR	u32 keys, u32 blocks, then per block its first key:
 *			u16 length, bytes (the fences a search bisects)
 *
 * Threads: the URL writer alone, but for a writer without a transaction.
 */
#ifndef NDDD_URLHOSTRUN_H
#define NDDD_URLHOSTRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "urlhosts.h"

/* A block's bytes, at most (a key goes over it rather than alone). */
#define URLHOSTRUN_BLOCK	(32 * 1024)

struct hostrun {
	uint32_t id;
	uint64_t nkeys;
	uint32_t nblocks;
	uint8_t *fences;		/* the blocks' first keys, one after
					   another */
	uint32_t *fence_off;		/* of block b's, nblocks + 1 */
};

/*
 * Writes a run key by key, in ascending order, in txn.  Or, without a
 * transaction (txn NULL; any thread), only encodes it: the blocks stay in
 * memory until hostrun_writer_put writes them (a flush's keys, encoded
 * while the flush writes its segments).
 */
struct hostrun_writer {
	struct store_txn *txn;
	struct hostrun run;
	uint8_t block[URLHOSTRUN_BLOCK + URLHOSTS_KEY_MAX + 8];
	size_t len;
	uint32_t count;
	uint8_t last[URLHOSTS_KEY_MAX];
	size_t last_len;
	size_t fences_cap;
	uint32_t off_cap;
	uint8_t *held;			/* without a transaction: the blocks,
					   each a u32 length and its bytes */
	size_t held_len, held_cap;
};

void hostrun_writer_init(struct hostrun_writer *w, struct store_txn *txn,
    uint32_t id);
/* Adds key (after the last one added; an equal key is skipped). */
int hostrun_writer_add(struct hostrun_writer *w, const uint8_t *key,
    size_t klen);
/* Writes the last block and the directory; the run is then w->run's (the
 * caller frees it).  On failure the caller aborts txn and calls
 * hostrun_writer_discard. */
int hostrun_writer_finish(struct hostrun_writer *w);
/* For a writer without a transaction, finished: writes its blocks and the
 * directory in txn as run id, as hostrun_writer_finish would have. */
int hostrun_writer_put(struct hostrun_writer *w, struct store_txn *txn,
    uint32_t id);
/* Frees what the writer holds, w->run included. */
void hostrun_writer_discard(struct hostrun_writer *w);

void hostrun_free(struct hostrun *r);

/*
 * Reads every run's directory from txn (a write transaction) into *runs
 * (*n of them, the caller frees each and the array), and the first id no
 * run has used into *next_id.  The blocks of runs without a directory (a
 * merge cut short) are deleted: *orphans says how many runs had some, and
 * the caller commits.  A store status.
 */
int hostrun_load(struct store_txn *txn, struct hostrun **runs, size_t *n,
    uint32_t *next_id, size_t *orphans);
/* Deletes run r's blocks and directory in txn. */
int hostrun_delete(struct store_txn *txn, const struct hostrun *r);

/* Reads a run's keys in order, from a block on, one block at a time. */
struct hostrun_iter {
	struct store_txn *txn;
	const struct hostrun *run;
	uint32_t block;			/* the one loaded */
	uint8_t *data;			/* a copy of it (writes may move the
					   store's pages) */
	size_t len, cap, off;
	uint32_t left;			/* keys left in it */
	uint8_t key[URLHOSTS_KEY_MAX];
	size_t klen;
};

/*
 * Starts at the first block that may hold key from[0..flen) (NULL: the
 * first block).  A store status.
 */
int hostrun_iter_init(struct hostrun_iter *it, struct store_txn *txn,
    const struct hostrun *run, const uint8_t *from, size_t flen);
/* The next key in it->key, it->klen; *done at the end.  A store status. */
int hostrun_iter_next(struct hostrun_iter *it, bool *done);
void hostrun_iter_free(struct hostrun_iter *it);

#endif
