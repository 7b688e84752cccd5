/*
 * urlrec: the on-disk form of stored URLs: records, and the segments that
 * hold them.
 *
 * A record is one URL's state, 64 bytes, little-endian:
 *
 *	 0  fp[16]		MD5 of the canonical URL (urlset.h: with its
 *				namespace's name, outside the default one)
 *	16  count u32		reference count (submits)
 *	20  block u32		its filter counters' block (index / 128)
 *	24  off u8[8]		its counters: block * 128 + off[i]
 *	32  first_seen_ms u64
 *	40  last_seen_ms u64
 *	48  expires_ms u64	when its time to live ends; 0: never
 *	56  ns u32		its namespace's id (urlns.h)
 *	60  reserved u32	0
 *
 * (Format 2 records were the first 48 bytes: urlrec_decode_v2 reads them
 * for the upgrade.)
 *
 * The record keeps its counter indices (the IMP-CBFilter scheme), so that a
 * delete decrements exactly what the submit incremented.
 *
 * A segment is an immutable LMDB value holding up to URLSEG_MAX records
 * sorted by fingerprint (memcmp order), after a header:
 *
 *	 0  magic u32 ("USG3"; "USG1" in format 2)
 *	 4  nrec u32
 *	 8  fence u32[64]	fence[j]: the first 4 bytes (big-endian) of
 *				record 64 * j's fingerprint; UINT32_MAX past
 *				the last record
 *	264 records
 *
 * The fences narrow a search to 64 records (4 KiB, one or two pages) from
 * the header alone, and interpolation within them finds the record's cache
 * line and page before it is read: a lookup reads one page of a segment
 * that is not in memory, and a batch can ask for all its pages at once.
 * Which records of a segment are live is kept apart (a bitmap per segment,
 * URLSEG_BITMAP_LEN bytes), so that a segment is written once and never
 * rewritten in place.
 *
 * Everything here is pure: no I/O, no allocation.
 */
#ifndef NDDD_URLREC_H
#define NDDD_URLREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cbf.h"

#define URLREC_LEN		64
#define URLREC_V2_LEN		48
#define URLSEG_MAX		4096	/* records per segment, at most */
#define URLSEG_RUN		64	/* records per fence */
#define URLSEG_FENCES		(URLSEG_MAX / URLSEG_RUN)
#define URLSEG_HEADER		(8 + 4 * URLSEG_FENCES)
#define URLSEG_MAGIC		0x33475355u	/* "USG3" little-endian */
#define URLSEG_V2_MAGIC		0x31475355u	/* "USG1" */

/* Bytes of a segment of n records, and of its live bitmap. */
#define URLSEG_LEN(n)		(URLSEG_HEADER + (size_t)(n) * URLREC_LEN)
#define URLSEG_V2_LEN(n)	(URLSEG_HEADER + (size_t)(n) * URLREC_V2_LEN)
#define URLSEG_BITMAP_LEN(n)	(((size_t)(n) + 7) / 8)

/* A stored URL's state: what its record keeps besides its key. */
struct url_state {
	uint32_t count;			/* submits; 0: no record */
	uint32_t ns;			/* its namespace's id */
	uint64_t first_seen_ms;
	uint64_t last_seen_ms;
	uint64_t expires_ms;		/* 0: never */
};

/*
 * Whether a URL in state st answers as seen to a reader of namespace ns at
 * now: stored, in that namespace (a record of a dropped namespace of the
 * same name is not), and not expired.
 */
static inline bool
url_state_visible(const struct url_state *st, uint32_t ns, uint64_t now_ms)
{
	return st->count > 0 && st->ns == ns &&
	    (st->expires_ms == 0 || st->expires_ms > now_ms);
}

struct url_record {
	uint8_t fp[CBF_FP_LEN];
	uint32_t idx[CBF_K];
	struct url_state st;
};

/*
 * Encodes r at out.  The indices must lie in one block of CBF_BLOCK
 * counters (cbf_indices gives such); returns -1 if they do not.
 */
int urlrec_encode(const struct url_record *r, uint8_t out[URLREC_LEN]);
void urlrec_decode(const uint8_t in[URLREC_LEN], struct url_record *r);
/* A format 2 record (namespace 0, no time to live). */
void urlrec_decode_v2(const uint8_t in[URLREC_V2_LEN], struct url_record *r);
/* A record's expires_ms alone, for scans that need nothing else. */
uint64_t urlrec_expires_ms(const uint8_t in[URLREC_LEN]);

/*
 * Segments.  urlseg_init writes the header of a segment of n records whose
 * records (already at URLSEG_HEADER, sorted) are in place: call it last.
 */
void urlseg_init(uint8_t *seg, uint32_t n);
/*
 * Checks a stored segment's header against its length.  Returns its number
 * of records, or -1 if it is not a segment.
 */
int64_t urlseg_check(const uint8_t *seg, size_t len);
/* The same for a segment of format 2 (the upgrade's). */
int64_t urlseg_check_v2(const uint8_t *seg, size_t len);
/* Record i of a checked segment. */
const uint8_t *urlseg_record(const uint8_t *seg, uint32_t i);

/*
 * Where fp would be in a checked segment of n records, from the header
 * alone: the records [*lo, *hi) may hold it, and *guess (in that range, or
 * *lo when empty) is the likeliest.  Reads only the fences.
 */
void urlseg_locate(const uint8_t *seg, uint32_t n, const uint8_t fp[CBF_FP_LEN],
    uint32_t *lo, uint32_t *hi, uint32_t *guess);
/*
 * The fence where fp should be in a segment of n records, from fp alone (the
 * fingerprints are uniform): its header line can be fetched ahead.
 */
uint32_t urlseg_fence_guess(const uint8_t fp[CBF_FP_LEN], uint32_t n);
/* The address of fence j, to prefetch. */
static inline const uint8_t *
urlseg_fence_addr(const uint8_t *seg, uint32_t j)
{
	return seg + 8 + 4 * (size_t)j;
}

/*
 * Finds fp among records [lo, hi), starting at guess (urlseg_locate's).
 * Returns its index, or -1.
 */
int64_t urlseg_find(const uint8_t *seg, uint32_t lo, uint32_t hi,
    uint32_t guess, const uint8_t fp[CBF_FP_LEN]);

/* Bit i of a live bitmap. */
static inline bool
urlseg_bit(const uint8_t *bitmap, uint32_t i)
{
	return (bitmap[i >> 3] >> (i & 7)) & 1;
}

static inline void
urlseg_set_bit(uint8_t *bitmap, uint32_t i, bool on)
{
	if (on)
		bitmap[i >> 3] |= (uint8_t)(1u << (i & 7));
	else
		bitmap[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

/* 8 bytes of a fingerprint as a big-endian number: their memcmp order. */
static inline uint64_t
urlrec_be64(const uint8_t *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, sizeof(v));
	return __builtin_bswap64(v);
}

/*
 * The order of two fingerprints (or a record's, which starts with it), as
 * memcmp gives it, in two loads and compares instead of a library call:
 * the comparison every search and sort of the store makes.
 */
static inline int
urlrec_cmp_fp(const uint8_t *a, const uint8_t *b)
{
	uint64_t x = urlrec_be64(a), y = urlrec_be64(b);

	if (x == y) {
		x = urlrec_be64(a + 8);
		y = urlrec_be64(b + 8);
	}
	return (x > y) - (x < y);
}

/*
 * Sorts n items of size bytes, each starting with a fingerprint, by it:
 * a counting sort on the leading bits (fingerprints are uniform, so the
 * buckets hold one item or so), then insertion within buckets.  tmp holds
 * n items.  Returns -1 if memory for the counts is short (nothing moved).
 */
int urlrec_sort(void *items, size_t n, size_t size, void *tmp);

#endif
