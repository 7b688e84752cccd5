/*
 * urlidx: where each stored URL lives: an in-memory map from a URL's
 * fingerprint to the segment that holds its record, in 4 bytes per URL.
 *
 * An entry is 32 bits: a 12-bit tag taken from the fingerprint and a
 * 20-bit segment id (ids start at 1; 0 is an empty slot).  The table is a
 * cuckoo hash table of 64-byte buckets of 16 entries; a fingerprint has two
 * buckets, the first from its bits, the other computed from the first and
 * the tag alone (b' = H(tag) - b modulo the bucket count, its own inverse),
 * so that an entry can move to its other bucket without its fingerprint.
 * Sized so that the given capacity fills 95% of its slots; it takes more
 * (a cuckoo table of 16-entry buckets fills to 99%), and when an entry
 * finds no place, urlidx_insert fails and the caller makes a larger index
 * from the store (the entries hold no fingerprints to rehash).
 *
 * The entries are hints: a lookup returns the segments of the entries in
 * its two buckets whose tag matches, and the caller searches those
 * segments for the exact fingerprint (urlrec).  Two fingerprints with the
 * same tag in the same bucket pair are interchangeable here, so the index
 * is a multiset: it holds exactly one entry (tag, segment) in the pair of
 * each stored record.  A false match (another fingerprint's tag) costs a
 * segment search: 2 x 16 x 4096^-1, under 1% of lookups.
 *
 * Threads.  One writer (the URL writer) inserts, removes and moves entries;
 * any number of readers look up at the same time, without locks.  An entry
 * is written with one atomic store; a cuckoo displacement (an entry moved
 * to its other bucket) is bracketed by a version counter of each bucket's
 * stripe, which readers check around their probe and retry on change, so a
 * reader never misses an entry that is being moved.
 */
#ifndef NDDD_URLIDX_H
#define NDDD_URLIDX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cbf.h"

#define URLIDX_SEG_BITS		20
#define URLIDX_SEG_MAX		((1u << URLIDX_SEG_BITS) - 1)	/* ids 1.. */
#define URLIDX_MAX_CANDIDATES	32	/* 2 buckets of 16, all matching */

struct urlidx;

struct urlidx_stats {
	uint64_t entries;
	uint64_t slots;
	uint64_t bytes;			/* memory held */
};

/*
 * An index sized for capacity entries (at least one bucket).  NULL when
 * memory is short.
 */
struct urlidx *urlidx_new(uint64_t capacity);
void urlidx_free(struct urlidx *x);
/* The capacity it was made for. */
uint64_t urlidx_capacity(const struct urlidx *x);

/* Writer.  Adds an entry for fp in segment seg (1..URLIDX_SEG_MAX).
 * Returns -1 when the table has no room for it (nothing changed). */
int urlidx_insert(struct urlidx *x, const uint8_t fp[CBF_FP_LEN], uint32_t seg);
/* Writer.  Removes one entry (fp's tag, seg) of fp's pair; -1 if none. */
int urlidx_remove(struct urlidx *x, const uint8_t fp[CBF_FP_LEN], uint32_t seg);
/* Writer.  Changes one entry (fp's tag, from) to (tag, to); -1 if none. */
int urlidx_move(struct urlidx *x, const uint8_t fp[CBF_FP_LEN], uint32_t from,
    uint32_t to);

/*
 * Any thread.  The segments that may hold fp (with repeats when several
 * entries match), at most URLIDX_MAX_CANDIDATES; returns how many were
 * written to out (of room max).
 */
size_t urlidx_lookup(const struct urlidx *x, const uint8_t fp[CBF_FP_LEN],
    uint32_t *out, size_t max);
/* Hints the CPU to fetch fp's buckets ahead of urlidx_lookup. */
void urlidx_prefetch(const struct urlidx *x, const uint8_t fp[CBF_FP_LEN]);

/* Any thread. */
void urlidx_stats(const struct urlidx *x, struct urlidx_stats *out);

/*
 * Writer, or no writer running.  The number of entries (tag of fp, seg) in
 * fp's bucket pair: for verification.
 */
uint64_t urlidx_count_matching(const struct urlidx *x,
    const uint8_t fp[CBF_FP_LEN], uint32_t seg);
/* A key naming fp's bucket pair and tag, equal for interchangeable
 * fingerprints (for verification: grouping records). */
uint64_t urlidx_pair_key(const struct urlidx *x, const uint8_t fp[CBF_FP_LEN]);

#endif
