/*
 * simhash_impl: what the engine's front end (simhash.c) and its kernels
 * (simhash_scalar.c, simhash_avx2.c, simhash_avx512.c) share.  Not for use
 * outside the engine, except by its tests and by the sketch's pass
 * (sketch.c), which reads text as the kernels normalise it and looks its
 * terms up in the same stop-word table.
 *
 * A document is cut into windows.  Text and HTML windows are first
 * normalised into the scratch window: separators become SPACE and ASCII
 * letters lower case, so every kernel then sees the same format as
 * preprocessed input (terms separated by SPACE).  A kernel's run() finds the
 * terms of one window, hashes them, drops stop words and counts the bits of
 * their hashes into the accumulator.  A term cut by a window's end is carried
 * to the next window as a running sdbm state.
 */
#ifndef NDDD_SIMHASH_IMPL_H
#define NDDD_SIMHASH_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "fmix64.h"
#include "simhash.h"
#include "stopwords.h"
#include "textbytes.h"	/* textbytes_norm: each byte normalised */

/* Window size: large enough to amortise per-window work, small for L1. */
#define SIMHASH_WINDOW 8192
/* Readable bytes kept before the scratch window (kernels load backwards). */
#define SIMHASH_PAD 64
/* Term hashes a scalar path may queue before they are counted. */
#define SIMHASH_PEND 64
/* Per-scratch room for a kernel's staging arrays. */
#define SIMHASH_STAGE_SIZE 32768
/* Stop words up to this length are found by the vectorised table. */
#define SIMHASH_STOP_FAST_MAX 15

/*
 * Stop words of at most 15 bytes in a perfect hash table, for vectorised
 * lookups.  A key is the word right-aligned in 16 bytes, padded with SPACE
 * on the left (SPACE never occurs in a term), as two little-endian words:
 * hi holds bytes 0-7, lo bytes 8-15.  The slot of a term is the top bits
 * of (low 32 bits of sdbm(term)) * mul mod 2^32, mul an odd multiplier found
 * at start-up so that each word has a slot of its own: one probe decides.
 * Empty slots hold a key no term has (all SPACE).
 */
struct simhash_stoptab {
	uint64_t *lo;
	uint64_t *hi;
	uint32_t mul;		/* odd */
	unsigned shift;		/* 32 - bits */
	unsigned bits;
};

/* The stop table slot of a term with this sdbm hash. */
static inline size_t
simhash_stop_slot(const struct simhash_stoptab *t, uint64_t sdbm)
{
	return (uint32_t)((uint32_t)sdbm * t->mul) >> t->shift;
}

/*
 * Makes t the table of the stop words of sw of at most 15 bytes: finds a
 * multiplier that gives each a slot of its own, in the smallest table
 * where one is likely to be found quickly.  Returns 0 when the table is
 * built, 1 when the list is too large for one (lookups then go through
 * stopwords_contains), -1 when out of memory.  The sketch's pass
 * (sketch.c) looks its terms up in one too.
 */
int simhash_stoptab_build(struct simhash_stoptab *t,
    const struct stopwords *sw);
void simhash_stoptab_free(struct simhash_stoptab *t);

struct simhash {
	enum simhash_term_hash th;
	const struct stopwords *sw;	/* NULL: none */
	size_t stop_max;		/* longest stop word */
	int have_tab;			/* tab usable (else stopwords_contains) */
	struct simhash_stoptab tab;
};

/*
 * The running state of one document.  Bit counts are kept by the kernel
 * (count, finish): cnt[i], when cnt_used, is the number of counted term
 * occurrences whose hash has bit i set, plus what the kernel keeps in
 * kstate in its own layout.  nterms is the number of counted occurrences.
 */
struct simhash_acc {
	uint64_t cnt[64];
	int cnt_used;			/* cnt holds counts (else all 0) */
	uint64_t nterms;
	const struct simhash *sh;
	const struct simhash_kernel *k;
	int stop;			/* remove stop words */
	int fmix;			/* apply fmix64 */
	/* A term not finished yet: its sdbm so far, length, first bytes. */
	uint64_t part_h;
	size_t part_len;
	uint8_t part_buf[STOPWORDS_MAX_LEN];
	/* Hashes of terms finished by scalar code, waiting to be counted. */
	unsigned npend;
	uint64_t pend[SIMHASH_PEND];
	/* The kernel's own counters; kstate_used: set up for this document. */
	int kstate_used;
	uint8_t kstate[320] __attribute__((aligned(64)));
};

struct simhash_scratch {
	size_t window;			/* bytes per window (tests shrink it) */
	uint8_t *buf;			/* SIMHASH_PAD + SIMHASH_WINDOW + 64 */
	uint8_t *win;			/* buf + SIMHASH_PAD */
	uint8_t *stage;			/* a kernel's arrays, SIMHASH_STAGE_SIZE */
	struct simhash_acc acc;
};

/* One instruction-set level's code. */
struct simhash_kernel {
	enum simhash_simd level;
	/* Text to the normalised form; dst may equal src. */
	void (*normalize)(uint8_t *dst, const uint8_t *src, size_t n);
	/*
	 * Processes normalised bytes p[0..n).  At least `before` bytes before
	 * p are readable; unless a term is carried in acc, p[-1] (if
	 * readable) is a SPACE.  A term running off the end is carried in acc,
	 * or, when final is set (the document ends at p + n), may be finished.
	 */
	void (*run)(struct simhash_acc *acc, struct simhash_scratch *sc,
	    const uint8_t *p, size_t n, size_t before, int final);
	/* Counts the bits of n finished hashes (not nterms). */
	void (*count)(struct simhash_acc *acc, const uint64_t *h, size_t n);
	/* The fingerprint from all the counts, nterms > 0. */
	uint64_t (*finish)(struct simhash_acc *acc);
};

extern const struct simhash_kernel simhash_kernel_scalar;
extern const struct simhash_kernel simhash_kernel_avx2;
extern const struct simhash_kernel simhash_kernel_avx512;

/*
 * A profile of where the time goes, for simhash_bench: with SIMHASH_PROFILE
 * defined at build time (make VARIANT=profile), the AVX-512 kernel adds the
 * time-stamp counter ticks of its phases here (one thread at a time).  The
 * measurement itself costs a few cycles per phase and chunk of ~80 terms.
 */
struct simhash_profile {
	uint64_t normalize;	/* text to the normalised form */
	uint64_t tokenize;	/* term ends and words */
	uint64_t hash;		/* sdbm of the terms */
	uint64_t filter;	/* stop words, fmix64, counting, and terms of
				   16 bytes or more (the scalar way) */
	uint64_t terms;		/* terms seen by the vector code */
};
extern struct simhash_profile simhash_profile;

#if defined(SIMHASH_PROFILE) && defined(__x86_64__)
#include <x86intrin.h>
#define SIMHASH_PROF_T(v) uint64_t v = __rdtsc()
#define SIMHASH_PROF_ADD(field, v) do {					\
	uint64_t now_ = __rdtsc();					\
	simhash_profile.field += now_ - (v);				\
	(v) = now_;							\
} while (0)
#else
#define SIMHASH_PROF_T(v) do { } while (0)
#define SIMHASH_PROF_ADD(field, v) do { } while (0)
#endif

/* The kernel of the selected level. */
const struct simhash_kernel *simhash_kernel(void);

/* Starts a document. */
void simhash_acc_init(struct simhash_acc *acc, const struct simhash *sh,
    enum simhash_input input);
/* Ends it: finishes a carried term, folds every count in. */
enum simhash_status simhash_acc_finish(struct simhash_acc *acc,
    uint64_t *fp);

/* The scalar path over normalised bytes, carried term included. */
void simhash_scalar_run(struct simhash_acc *acc, const uint8_t *p,
    size_t n);
/*
 * A finished term: its sdbm hash and bytes (term may be NULL when len is
 * above stop_max).  Drops stop words, finalises, queues for counting.
 */
void simhash_acc_term(struct simhash_acc *acc, uint64_t sdbm,
    const uint8_t *term, size_t len);
/* Counts the queued hashes. */
void simhash_acc_flush(struct simhash_acc *acc);
/*
 * A term a vector kernel left aside (16 bytes or more), ending at p + e
 * and starting at p + lo or after: hashed and counted the scalar way.
 */
void simhash_long_term(struct simhash_acc *acc, const uint8_t *p, size_t lo,
    size_t e);
/* Whether the term ending at p + e (from p + lo or after) is a stop word,
 * for lists beyond the table. */
int simhash_stop_slow(const struct simhash *sh, const uint8_t *p, size_t lo,
    size_t e);
/*
 * Finishes the term carried into a window p[0..n) the scalar way: returns
 * the offset of the SPACE that ends it, or n when the window has none (all
 * of it went to the term).
 */
size_t simhash_finish_carried(struct simhash_acc *acc, const uint8_t *p,
    size_t n);

/*
 * How a document's stop words are removed, for kernels that keep one copy
 * of their term passes per way (a loop then never tests it).
 */
enum simhash_stop {
	SIMHASH_STOP_NONE,	/* preprocessed input, or no list */
	SIMHASH_STOP_TABLE,	/* the perfect hash table */
	SIMHASH_STOP_SLOW,	/* a list too large for it */
};

static inline enum simhash_stop
simhash_stop_mode(const struct simhash_acc *acc)
{
	return !acc->stop ? SIMHASH_STOP_NONE : acc->sh->have_tab ?
	    SIMHASH_STOP_TABLE : SIMHASH_STOP_SLOW;
}
/* The portable count and finish, on cnt. */
void simhash_count_scalar(struct simhash_acc *acc, const uint64_t *h,
    size_t n);
uint64_t simhash_finish_scalar(struct simhash_acc *acc);

/*
 * A vector kernel's chunk keeps its term ends as block masks: bit j of
 * bem[k] set when a term ends at byte bb[k] + j, for its nb blocks.
 */

/* The end of the chunk's term i (counted over all its blocks). */
static inline size_t
simhash_block_end(const uint32_t *bb, const uint64_t *bem, size_t nb,
    size_t i)
{
	uint64_t em;
	size_t k, c;

	for (k = 0; k < nb; k++) {
		em = bem[k];
		c = (size_t)__builtin_popcountll(em);
		if (i < c) {
			while (i-- > 0)
				em &= em - 1;
			return bb[k] + (size_t)__builtin_ctzll(em);
		}
		i -= c;
	}
	return 0;	/* not reached: i is below the chunk's terms */
}

/* The ends of all the chunk's terms, in order, into end. */
static inline void
simhash_block_ends(const uint32_t *bb, const uint64_t *bem, size_t nb,
    uint32_t *end)
{
	uint64_t em;
	size_t k, i = 0;

	for (k = 0; k < nb; k++)
		for (em = bem[k]; em != 0; em &= em - 1)
			end[i++] = bb[k] + (uint32_t)__builtin_ctzll(em);
}

/*
 * The term (lanes * group + lane, of ng groups) whose second word is at li
 * in a chunk's list of long terms' second words: longm[g] marks group g's
 * terms of 8 bytes or more, whose words start at loff[g] in the list.
 */
static inline size_t
simhash_long_term_at(const uint16_t *loff, const uint8_t *longm, size_t ng,
    unsigned lanes, size_t li)
{
	size_t g = 0;
	unsigned m;

	while (g + 1 < ng && loff[g + 1] <= li)
		g++;
	for (m = longm[g], li -= loff[g]; li > 0; li--)
		m &= m - 1;
	return lanes * g + (size_t)__builtin_ctz(m);
}

/* sdbm powers: simhash_pow[k] == 65599^k mod 2^64, k <= 16. */
extern const uint64_t simhash_pow[17];

/* For tests: the window size of a scratch (1..SIMHASH_WINDOW). */
void simhash_scratch_set_window(struct simhash_scratch *sc, size_t window);

/*
 * The mask of a vector's first min(left, lanes) lanes (lanes <= 8), for the
 * last group of a chunk's terms.  Not BZHI alone: it takes its bit index
 * modulo 256, so a chunk with 256 or more terms left would lose a group.
 */
static inline unsigned
simhash_lanes(size_t left, unsigned lanes)
{
	return left >= lanes ? (1u << lanes) - 1 : (1u << left) - 1;
}

#endif
