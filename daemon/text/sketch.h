/*
 * sketch: a document's shingle sketch, what nddd verifies near duplicates
 * with (docs/neardup.md).
 *
 * A shingle is SKETCH_SHINGLE consecutive terms of the document, the terms
 * being exactly those of its simhash (docs/simhash.md: ASCII letters
 * folded, ASCII whitespace and punctuation separating, stop words left
 * out); a document of fewer terms has one shingle of them all.  Each
 * shingle is hashed to 32 bits, and the sketch keeps:
 *
 *   shingles   the number of distinct shingle hashes (exact up to
 *              SKETCH_EXACT_MAX, estimated from the kept hashes beyond);
 *   h[0..n)    the SKETCH_K smallest distinct hashes, ascending
 *              (n = min(shingles, SKETCH_K)): a bottom-k sketch (Broder,
 *              "On the resemblance and containment of documents", 1997).
 *
 * Two sketches estimate the resemblance of their documents (the Jaccard
 * similarity of their shingle sets: |A n B| / |A u B|) from the hashes
 * below the smaller of their two thresholds, where both sketches hold
 * every hash of their set; and, from it and the two counts, their
 * containment: |A n B| / min(|A|, |B|), the share of the smaller
 * document's shingles that the larger holds.  A cut copy is contained in
 * its original, an original in its framed copy: containment stays near 1
 * where resemblance falls with the size of the cut or of the frame.
 *
 * The first SKETCH_KEYS hashes of a sketch are its keys: what the
 * near-duplicate index files a stored document under (doc/sketchidx.h).
 * Every hash of a query's sketch is looked up among them.
 *
 * Term hashes are fixed (sdbm, then MurmurHash3's fmix64, whatever
 * [simhash] term_hash says), so sketches of all data directories agree;
 * the stop words must be those of the stored sketches, as for simhash.
 */
#ifndef NDDD_SKETCH_H
#define NDDD_SKETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simhash.h"

struct stopwords;

#define SKETCH_SHINGLE	3	/* terms per shingle */
#define SKETCH_K	128	/* smallest hashes kept */
#define SKETCH_KEYS	16	/* of them, the index's keys */
/* Keys of a stored document among a query's first SKETCH_PROBES hashes
 * that make it a candidate (doc/sketchidx.h). */
#define SKETCH_MIN_KEYS	2
#define SKETCH_PROBES	64
/* Distinct shingles counted exactly at most (a 16 MiB set); beyond,
 * the count is estimated from the hashes kept. */
#define SKETCH_EXACT_MAX (1u << 21)
/* The encoding (sketch_encode): its version, and its largest size. */
#define SKETCH_VERSION	1
#define SKETCH_WIRE_MAX	(6 + 4 * SKETCH_K)

struct sketch {
	uint32_t shingles;	/* distinct shingles of the document */
	uint32_t n;		/* hashes kept: min(shingles, SKETCH_K) */
	uint32_t h[SKETCH_K];	/* ascending, distinct */
};

/* What two sketches tell of their documents. */
struct sketch_similarity {
	float resemblance;	/* estimated |A n B| / |A u B| */
	float containment;	/* estimated |A n B| / min(|A|, |B|) */
};

struct sketch_scratch;

/* Per-thread working memory (it grows with the largest document seen).
 * NULL when out of memory. */
struct sketch_scratch *sketch_scratch_new(void);
void sketch_scratch_free(struct sketch_scratch *sc);

/*
 * The sketch of doc (len bytes) read as input (TEXT, HTML: its whole
 * visible text, as simhash reads it, or PREPROCESSED), without the terms
 * in sw (NULL: none).  A document without terms has shingles 0.  Returns
 * 0, or -1 when memory is short.
 */
int sketch_compute(const struct stopwords *sw, struct sketch_scratch *sc,
    enum simhash_input input, const void *doc, size_t len,
    struct sketch *out);

/* The index keys of s: its first min(n, SKETCH_KEYS) hashes; returns
 * how many. */
size_t sketch_keys(const struct sketch *s, uint32_t keys[SKETCH_KEYS]);

/* What a and b tell of their documents (symmetric; 0 when either is
 * empty). */
void sketch_compare(const struct sketch *a, const struct sketch *b,
    struct sketch_similarity *out);

/*
 * The encoding, stored and sent: a version byte, the number of hashes,
 * the count of shingles (32 bits), then the hashes (32 bits each), all
 * little-endian.  sketch_encode writes at most SKETCH_WIRE_MAX bytes and
 * returns how many; sketch_decode returns 0, or -1 when the bytes are not
 * a sketch of this version (a wrong size, hashes out of order, a count
 * that does not agree with them).
 */
size_t sketch_encode(const struct sketch *s, uint8_t *out);
int sketch_decode(const void *data, size_t len, struct sketch *out);

#endif
