/*
 * sketchidx: the stored documents by the keys of their sketches (the
 * SKETCH_KEYS smallest shingle hashes, text/sketch.h): where a query finds
 * the candidates for near copies that simhash's tables cannot, copies
 * edited further than a few bits (docs/neardup.md).
 *
 * A query looks up the first SKETCH_PROBES hashes of its sketch (its
 * smallest).  A stored document is a candidate when at least
 * SKETCH_MIN_KEYS of its keys are among them:
 * two documents that share one phrase are many (every story of a
 * company names it), two that share two of their smallest shingle hashes
 * are few, and a copy shares most.  The rule looks at the two documents
 * alone, so that the candidates of a document are the same whatever
 * else is stored, and a batch job or a client over shards finds the same
 * (docs/neardup.md).  One exception, to bound a query's cost: keys that
 * more than SKETCHIDX_LIST_MAX documents hold (of any namespace, on this
 * daemon) are passed over; they tell nothing anyway.  Candidates are then
 * verified by their similarity (docset.h); this index only says where to
 * look.
 *
 * Layout.  256 shards by the top 8 bits of a key, each a directory of
 * buckets by the next bits (at least 8 of them, doubled when buckets
 * average SKETCHIDX_LOAD_MAX entries); a bucket is an array of document
 * ids (32 bits) and the low 16 bits of their keys, which with the bits of
 * the shard and the directory tell the whole key.  6 bytes per key and
 * document, plus the buckets' slack and headers.  A query fetches all
 * its hashes' directory slots, then all their buckets, before it reads
 * any: its memory misses overlap.
 *
 * Threads.  One writer at a time (the store writer: insert, delete, bulk
 * load); readers (candidates) in any thread.  One lock, which prefers
 * writers: a query holds it to read, a document's insert or delete to
 * write (a few microseconds each).
 */
#ifndef NDDD_SKETCHIDX_H
#define NDDD_SKETCHIDX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sketch.h"

/* Documents a key may have before queries pass it over. */
#define SKETCHIDX_LIST_MAX	4096
/* Mean bucket length that doubles a shard's directory. */
#define SKETCHIDX_LOAD_MAX	64

struct sketchidx;

/* Keeps the documents of one namespace: whether document id is one. */
typedef int (*sketchidx_filter_fn)(uint32_t id, void *arg);

/* A query's counts, for the statistics. */
struct sketchidx_counts {
	uint64_t keys_read;	/* entries looked at */
	uint64_t keys_skipped;	/* keys passed over as too common */
};

/* An empty index sized for expected documents.  NULL if memory is short. */
struct sketchidx *sketchidx_new(uint64_t expected);
void sketchidx_free(struct sketchidx *x);

/*
 * Files document id under keys[0..n) (n <= SKETCH_KEYS, distinct).
 * Returns 0, or -1 if memory is short (nothing is filed).  Writer.
 */
int sketchidx_insert(struct sketchidx *x, uint32_t id, const uint32_t *keys,
    size_t n);
/*
 * Takes document id off keys[0..n), as filed.  Returns the number of keys
 * it was found under (n when the index agreed with the caller).  Writer.
 */
size_t sketchidx_delete(struct sketchidx *x, uint32_t id,
    const uint32_t *keys, size_t n);

/* The most threads a bulk load files shards with. */
#define SKETCHIDX_LOAD_THREADS	16

/*
 * What a bulk load files, gathered at start-up: document id under
 * keys[0..n) for each document added (n <= SKETCH_KEYS, distinct).  add
 * returns -1 if memory is short (the document is then partly added).
 * Any thread, one at a time.
 */
struct sketchidx_stage;
struct sketchidx_stage *sketchidx_stage_new(void);
int sketchidx_stage_add(struct sketchidx_stage *st, uint32_t id,
    const uint32_t *keys, size_t n);
/* Moves what from gathered to st (a stage per thread, then one). */
void sketchidx_stage_join(struct sketchidx_stage *st,
    struct sketchidx_stage *from);
/* Entries gathered (a document under a key), not filed yet. */
uint64_t sketchidx_stage_entries(const struct sketchidx_stage *st);
void sketchidx_stage_free(struct sketchidx_stage *st);

/*
 * Files what st gathered, giving st's memory back as it goes (the
 * buckets take it: sketchidx.c says why), each bucket made once, at its
 * size; the shards are shared out among threads (this one among them; at
 * most SKETCHIDX_LOAD_THREADS).  Returns 0, st then empty, or -1 if memory
 * is short (some entries may then be filed, the rest left in st).
 * Writer, before any reader.
 */
int sketchidx_bulk_load(struct sketchidx *x, struct sketchidx_stage *st,
    unsigned threads);

/*
 * The index as bytes, for the documents' restart image (docimage.h): a
 * table of each shard's offset, then each shard: its directory bits and
 * entries, the entry count of each directory slot, every bucket's ids,
 * then every bucket's fragments, slot by slot (padded to 8 bytes).  In
 * this machine's byte order: the image is read back only where it was
 * written.  _bytes is what _write writes; _write returns 0, or -1 if f
 * failed.  Any thread, while nothing is filed or taken off.
 */
uint64_t sketchidx_image_bytes(struct sketchidx *x);
int sketchidx_image_write(struct sketchidx *x, FILE *f);
/*
 * Fills x, an index just made (sketchidx_new, nothing filed), from the
 * len bytes of an image at p, the shards shared out among threads as a
 * bulk load's are.  Returns 0, or -1 with *why "out of memory" or "damaged"
 * (x then holds part of the image: free it).  Writer, before any reader.
 */
int sketchidx_image_load(struct sketchidx *x, const void *p, size_t len,
    unsigned threads, const char **why);

/*
 * The candidates for a query of sketch q among the documents filter keeps
 * (NULL: all), except exclude (0: none): their ids, ascending, in out (at
 * most max; the count returned may be larger: out holds the max smallest
 * ids).  Returns -1 if memory is short.  Any thread.
 */
int64_t sketchidx_candidates(struct sketchidx *x, const struct sketch *q,
    sketchidx_filter_fn filter, void *arg, uint32_t exclude, uint32_t *out,
    size_t max, struct sketchidx_counts *counts);

/* Entries (a document under a key) held, and the memory they take.  Any
 * thread. */
uint64_t sketchidx_entries(struct sketchidx *x);
uint64_t sketchidx_memory_bytes(struct sketchidx *x);

/* Whether document id is filed under key (verify).  Any thread. */
int sketchidx_has(struct sketchidx *x, uint32_t id, uint32_t key);

#endif
