/*
 * cbf: the counting Bloom filter in front of the URL store.
 *
 * m counters of 4 bits, two per byte, k = CBF_K per fingerprint.  A counter
 * saturates at CBF_MAX_COUNT and never wraps.  So that deletions stay exact,
 * the true count of every saturated counter is kept in a side table: a
 * counter's 4-bit value is always min(15, number of index occurrences added
 * and not removed), and removing from a saturated counter lowers it only
 * when its true count falls below 15.
 *
 * Threads: one thread (the store writer) calls cbf_add and cbf_remove; any
 * thread may call cbf_maybe and the cbf_stat_* readers concurrently.  The
 * writer publishes counter bytes with relaxed atomic stores, so a reader
 * sees each byte either before or after an update, never torn.
 */
#ifndef NDDD_CBF_H
#define NDDD_CBF_H

#include <stdint.h>

#define CBF_K		8	/* counters per fingerprint */
#define CBF_MAX_COUNT	15	/* a 4-bit counter saturates here */
#define CBF_FP_LEN	16	/* MD5 fingerprint length */
#define CBF_BLOCK	128	/* counters per 64-byte block; m is a multiple */

/*
 * The recorded name of the index derivation below.  Stored in the URL
 * store's metadata: a data directory built with one derivation must not be
 * read with another.
 */
#define CBF_INDEX_SCHEME "md5-block128-double-hash-v1"

struct cbf;

/*
 * Allocates m zeroed counters; m must be a positive multiple of CBF_BLOCK
 * and below 2^32.  Returns NULL otherwise or if memory is short.
 */
struct cbf *cbf_new(uint64_t m);
void cbf_free(struct cbf *f);

/*
 * The k counter indices of a fingerprint, all in one 64-byte block (one
 * cache line, so a check costs one memory access, not k): the fingerprint's
 * first little-endian 64-bit half picks the block by a multiply-shift, the
 * second gives a start a and an odd step b, and index i is a + i * b modulo
 * the block's 128 counters.  The k indices are distinct.
 */
void cbf_indices(const struct cbf *f, const uint8_t fp[CBF_FP_LEN],
    uint32_t idx[CBF_K]);
/* Hints the CPU to fetch the counters named by idx. */
void cbf_prefetch(const struct cbf *f, const uint32_t idx[CBF_K]);

/* 1 if every named counter is non-zero (the key may be stored), else 0. */
int cbf_maybe(const struct cbf *f, const uint32_t idx[CBF_K]);

/* Adds or removes one occurrence of each index.  Writer thread only. */
void cbf_add(struct cbf *f, const uint32_t idx[CBF_K]);
void cbf_remove(struct cbf *f, const uint32_t idx[CBF_K]);

/*
 * The 4-bit value of counter i, and its true count (exact when saturated;
 * call it from the writer thread or while no writer runs).
 */
unsigned cbf_counter(const struct cbf *f, uint64_t i);
uint64_t cbf_true_count(const struct cbf *f, uint64_t i);

uint64_t cbf_stat_counters(const struct cbf *f);
uint64_t cbf_stat_nonzero(const struct cbf *f);
uint64_t cbf_stat_saturated(const struct cbf *f);
/* Bytes of memory held: the counters plus the side table. */
uint64_t cbf_stat_bytes(const struct cbf *f);

#endif
