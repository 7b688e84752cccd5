/*
 * simhash_avx2: the AVX2 kernel (with BMI2 and POPCNT: Haswell and
 * later).  See simhash_impl.h for the frame.  It follows the AVX-512
 * kernel (simhash_avx512.c): a window is tokenized 64 bytes at a time and
 * its terms are handled in chunks, each pass a loop of independent
 * iterations with short dependency chains and few data-dependent branches
 * (a mispredicted branch costs about as much as hashing two terms).  What
 * AVX2 lacks is done otherwise:
 *
 *  Tokenize.  The SPACE masks of two 32-byte halves (vpmovmskb) make one
 *    64-bit mask; a term ends at a SPACE after a term byte.  The ends are
 *    picked off with tzcnt and blsr, and the 16 bytes before each copied
 *    with one 16-byte load and store, its record: fourteen rounds always
 *    (no branch to mispredict; an exhausted mask gives position 64, whose
 *    16 bytes before are the block's last, and the slot is unused), more
 *    in the rare blocks that have more ends.  Stores bound this loop, so
 *    the ends themselves are not stored: the rare terms that need theirs
 *    find it again from the blocks' masks.  The first block of a document
 *    and the last of a window are read from a copy with SPACE around it,
 *    so that no byte outside the window is read and no term goes the
 *    scalar way for want of bytes before it.
 *  Pass 1.  4 terms per register: two registers of records unpacked give
 *    the last 8 bytes of 4 terms, and the 8 before.  Bytes up to each
 *    lane's last SPACE are cleared (the SPACE mask, bytes reversed, is
 *    smeared upwards by x | -x), and the hash of the last 8 bytes
 *    computed as in the AVX-512 kernel (vpshufb and vpmaddubsw make
 *    32-bit digits of byte pairs, vpmuludq joins them by twos exactly,
 *    and one 64-bit multiply the halves).  The second words of the terms
 *    of 8 bytes or more are compacted into a list (vpermd with a table of
 *    the 16 lane masks stands in for vpcompressq).
 *  Pass 2.  The 8 bytes before those of the long terms: their share of the
 *    hash and their stop-word key, in list order.
 *  Pass 3.  The shares are moved back into their terms' lanes (vpermd with
 *    a table of the 16 lane masks stands in for vpexpandq).  Stop words:
 *    one lookup of 4 slots in the perfect hash table (simhash_impl.h), by
 *    scalar loads rather than a gather, a second for the rare long
 *    candidates.  Then fmix64 (64-bit multiplies from vpmuludq and
 *    vpmulld), and the lanes not counted are cleared.
 *  Count.  Per bit position, how many hashes have it set, without a
 *    per-bit add for every hash: 8 registers of 4 hashes go through a
 *    carry-save adder tree (Harley-Seal) into bit-sliced ones, twos, fours
 *    and eights; only the eights are spread into byte counters, one per
 *    bit position and lane (8 registers: bit 8j + k of lane l is byte
 *    8l + j of register k).  Ones, twos and fours are added in at the end
 *    of a window.  The byte counters are emptied into 64-bit ones before
 *    they can overflow (every thousand terms or so); a document that
 *    never needed that (most) gets its fingerprint straight from them.
 * Terms of 16 bytes or more go the scalar way.  Text is normalised with
 * two nibble lookups (vpshufb) that give each byte's class.
 */
#include "simhash_impl.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,bmi,bmi2,popcnt")))

/* Terms handled at a time (a block of 64 bytes has at most 32). */
#define AVX2_CHUNK_TERMS 256

/*
 * One chunk of terms, in the scratch's stage area (64-byte aligned; so are
 * the arrays that are read and written a vector at a time: a vector across
 * two cache lines costs twice).
 */
#define A64 __attribute__((aligned(64)))
struct avx2_chunk {
	/* Per term ending at e: bytes e-16..e-1 (two words, hi then lo). */
	uint64_t rec[2 * (AVX2_CHUNK_TERMS + 32)] A64;
	/* The blocks with ends: where they start, their ends' mask. */
	uint32_t bb[AVX2_CHUNK_TERMS + 1];
	uint64_t bem[AVX2_CHUNK_TERMS + 1];
	uint32_t end[AVX2_CHUNK_TERMS + 32];	/* e, for the slow stop path */
	/* sdbm, then the hashes to count, 0 for the others (to 32 terms) */
	uint64_t h[AVX2_CHUNK_TERMS + 64] A64;
	uint64_t klo[AVX2_CHUNK_TERMS + 32] A64;	/* stop-word keys */
	/* Terms of 8 bytes or more: their second word (bytes e-16..e-9) ... */
	uint64_t lhi[AVX2_CHUNK_TERMS + 32] A64;
	/* ... their share of the hash and their keys, in that order ... */
	uint64_t lh[AVX2_CHUNK_TERMS + 32] A64;
	uint64_t lkey[AVX2_CHUNK_TERMS + 32] A64;
	/* ... from lh[loff[g]] for the terms of group g. */
	uint16_t loff[AVX2_CHUNK_TERMS / 4 + 8];
	uint8_t longm[AVX2_CHUNK_TERMS / 4 + 8];	/* per 4 terms: 8+ */
	uint8_t vlong[AVX2_CHUNK_TERMS / 4 + 8];	/* 16+ bytes */
};
#undef A64

_Static_assert(sizeof(struct avx2_chunk) <= SIMHASH_STAGE_SIZE,
    "stage area too small");

/* Byte counters kept in acc->kstate. */
struct avx2_state {
	__m256i c[8];		/* c[k] byte 8l + j: bit 8j + k of lane l */
	unsigned max;		/* no byte counter is above this */
};

_Static_assert(sizeof(struct avx2_state) <=
    sizeof(((struct simhash_acc *)0)->kstate), "kstate too small");

/* The bit-sliced counts of a window not yet in the byte counters. */
struct avx2_csa {
	__m256i ones, twos, fours;
};

/*
 * Lane masks and, for vpermd, where lane j of an expansion comes from and
 * where lane j of a compaction does.
 */
#define L(m, j) ((m) >> (j) & 1 ? -1 : 0)
#define MASK(m) { L(m, 0), L(m, 0), L(m, 1), L(m, 1), L(m, 2), L(m, 2),	\
	L(m, 3), L(m, 3) }
#define BELOW(m, j) (((m) & ((1 << (j)) - 1) & 1) +			\
	(((m) & ((1 << (j)) - 1)) >> 1 & 1) + (((m) & ((1 << (j)) - 1)) >> 2 & 1))
#define PERM(m) { 2 * BELOW(m, 0), 2 * BELOW(m, 0) + 1, 2 * BELOW(m, 1),	\
	2 * BELOW(m, 1) + 1, 2 * BELOW(m, 2), 2 * BELOW(m, 2) + 1,	\
	2 * BELOW(m, 3), 2 * BELOW(m, 3) + 1 }
#define SEL(m, i) (BELOW(m, 1) > (i) ? 0 : BELOW(m, 2) > (i) ? 1 :	\
	BELOW(m, 3) > (i) ? 2 : 3)
#define PACK(m) { 2 * SEL(m, 0), 2 * SEL(m, 0) + 1, 2 * SEL(m, 1),	\
	2 * SEL(m, 1) + 1, 2 * SEL(m, 2), 2 * SEL(m, 2) + 1,		\
	2 * SEL(m, 3), 2 * SEL(m, 3) + 1 }
#define ALL16(f) { f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7), f(8),	\
	f(9), f(10), f(11), f(12), f(13), f(14), f(15) }
static const int32_t avx2_mask[16][8] __attribute__((aligned(32))) =
    ALL16(MASK);
static const int32_t avx2_perm[16][8] __attribute__((aligned(32))) =
    ALL16(PERM);
static const int32_t avx2_pack[16][8] __attribute__((aligned(32))) =
    ALL16(PACK);
#undef L
#undef MASK
#undef BELOW
#undef PERM
#undef SEL
#undef PACK
#undef ALL16

AVX2 static inline __m256i
avx2_lanemask(unsigned m)
{
	return _mm256_load_si256((const __m256i *)avx2_mask[m]);
}

/*
 * Text to the normalised form.  A byte's class comes from two table
 * lookups (vpshufb), by its low and by its high nibble: a separator has a
 * bit set in both.  Bytes from 0x80 have no class (vpshufb gives 0).
 */
AVX2 static void
avx2_normalize(uint8_t *dst, const uint8_t *src, size_t n)
{
	/*
	 * Classes: 1: 0x09-0x0d, 2: 0x20-0x2f, 4: 0x3a-0x3f, 8: 0x40 and
	 * 0x60, 16: 0x5b-0x5f, 32: 0x7b-0x7e.
	 */
	const __m256i lot = _mm256_setr_epi8(
	    2 | 8, 2, 2, 2, 2, 2, 2, 2, 2, 2 | 1, 2 | 1 | 4, 2 | 1 | 4 | 16 | 32,
	    2 | 1 | 4 | 16 | 32, 2 | 1 | 4 | 16 | 32, 2 | 4 | 16 | 32,
	    2 | 4 | 16,
	    2 | 8, 2, 2, 2, 2, 2, 2, 2, 2, 2 | 1, 2 | 1 | 4, 2 | 1 | 4 | 16 | 32,
	    2 | 1 | 4 | 16 | 32, 2 | 1 | 4 | 16 | 32, 2 | 4 | 16 | 32,
	    2 | 4 | 16);
	const __m256i hit = _mm256_setr_epi8(1, 0, 2, 4, 8, 16, 8, 32,
	    0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 4, 8, 16, 8, 32,
	    0, 0, 0, 0, 0, 0, 0, 0);
	const __m256i sp = _mm256_set1_epi8(' ');
	size_t i = 0;

#define NORM32(d, s) do {						\
	__m256i v_ = _mm256_loadu_si256((const __m256i *)(s)), c_, up_;	\
									\
	c_ = _mm256_and_si256(_mm256_shuffle_epi8(lot, v_),		\
	    _mm256_shuffle_epi8(hit, _mm256_and_si256(			\
	    _mm256_srli_epi16(v_, 4), _mm256_set1_epi8(0x0f))));	\
	/* 'A'..'Z' + 0x3f is 0x80..0x99: below -102 as signed. */	\
	up_ = _mm256_cmpgt_epi8(_mm256_set1_epi8(-102),			\
	    _mm256_add_epi8(v_, _mm256_set1_epi8(0x3f)));		\
	v_ = _mm256_add_epi8(v_, _mm256_and_si256(up_,			\
	    _mm256_set1_epi8(0x20)));					\
	_mm256_storeu_si256((__m256i *)(d), _mm256_blendv_epi8(sp, v_,	\
	    _mm256_cmpeq_epi8(c_, _mm256_setzero_si256())));		\
} while (0)
	for (; i + 32 <= n; i += 32)
		NORM32(dst + i, src + i);
	if (i < n) {
		if (n >= 32) {
			/*
			 * The last 32 bytes again: normalising is idempotent,
			 * so bytes done already (dst may equal src) stay.
			 */
			NORM32(dst + n - 32, src + n - 32);
		} else {
			for (; i < n; i++)
				dst[i] = textbytes_norm[src[i]];
		}
	}
#undef NORM32
}

/* The kernel's counters, set up for this document. */
AVX2 static inline struct avx2_state *
avx2_state(struct simhash_acc *acc)
{
	struct avx2_state *st = (struct avx2_state *)acc->kstate;
	int k;

	if (!acc->kstate_used) {
		for (k = 0; k < 8; k++)
			st->c[k] = _mm256_setzero_si256();
		st->max = 0;
		acc->kstate_used = 1;
	}
	return st;
}

/* Adds the byte counters to cnt and clears them (rare). */
AVX2 static void
avx2_empty(struct avx2_state *st, struct simhash_acc *acc)
{
	uint8_t b[8][32] __attribute__((aligned(32)));
	int k, j, l;

	if (!acc->cnt_used) {
		memset(acc->cnt, 0, sizeof(acc->cnt));
		acc->cnt_used = 1;
	}
	for (k = 0; k < 8; k++) {
		_mm256_store_si256((__m256i *)b[k], st->c[k]);
		st->c[k] = _mm256_setzero_si256();
	}
	for (k = 0; k < 8; k++)
		for (j = 0; j < 8; j++)
			for (l = 0; l < 4; l++)
				acc->cnt[8 * j + k] += b[k][8 * l + j];
	st->max = 0;
}

/* Bit k of each byte of v, moved to bit `to` (no other bit set). */
#define AVX2_BIT(v, k, to) _mm256_and_si256((k) >= (to) ?		\
	_mm256_srli_epi64(v, (k) >= (to) ? (k) - (to) : 0) :		\
	_mm256_slli_epi64(v, (to) > (k) ? (to) - (k) : 0),		\
	_mm256_set1_epi8(1 << (to)))

/* The carry-save adder: h:l = a + b + c, bit by bit. */
#define AVX2_CSA(h, l, a, b, c) do {					\
	__m256i u_ = _mm256_xor_si256(a, b);				\
									\
	h = _mm256_or_si256(_mm256_and_si256(a, b),			\
	    _mm256_and_si256(u_, c));					\
	l = _mm256_xor_si256(u_, c);					\
} while (0)

/*
 * Counts the bits of n hashes, n a multiple of 32: 8 registers at a time
 * into the carry-save adders, their eights into the byte counters.
 */
AVX2 static void
avx2_hs(struct avx2_state *st, struct simhash_acc *acc, struct avx2_csa *cs,
    const uint64_t *h, size_t n)
{
	__m256i ones = cs->ones, twos = cs->twos, fours = cs->fours;
	__m256i t2a, t2b, f4a, f4b, e8;
	size_t i;

	for (i = 0; i < n; i += 32) {
		const __m256i *v = (const __m256i *)(h + i);

		AVX2_CSA(t2a, ones, ones, _mm256_loadu_si256(v),
		    _mm256_loadu_si256(v + 1));
		AVX2_CSA(t2b, ones, ones, _mm256_loadu_si256(v + 2),
		    _mm256_loadu_si256(v + 3));
		AVX2_CSA(f4a, twos, twos, t2a, t2b);
		AVX2_CSA(t2a, ones, ones, _mm256_loadu_si256(v + 4),
		    _mm256_loadu_si256(v + 5));
		AVX2_CSA(t2b, ones, ones, _mm256_loadu_si256(v + 6),
		    _mm256_loadu_si256(v + 7));
		AVX2_CSA(f4b, twos, twos, t2a, t2b);
		AVX2_CSA(e8, fours, fours, f4a, f4b);
		/* Each eight adds 8; with ones, twos, fours at most 7 more. */
		if (st->max > 255 - 8 - 7)
			avx2_empty(st, acc);
		st->max += 8;
		st->c[0] = _mm256_add_epi8(st->c[0], AVX2_BIT(e8, 0, 3));
		st->c[1] = _mm256_add_epi8(st->c[1], AVX2_BIT(e8, 1, 3));
		st->c[2] = _mm256_add_epi8(st->c[2], AVX2_BIT(e8, 2, 3));
		st->c[3] = _mm256_add_epi8(st->c[3], AVX2_BIT(e8, 3, 3));
		st->c[4] = _mm256_add_epi8(st->c[4], AVX2_BIT(e8, 4, 3));
		st->c[5] = _mm256_add_epi8(st->c[5], AVX2_BIT(e8, 5, 3));
		st->c[6] = _mm256_add_epi8(st->c[6], AVX2_BIT(e8, 6, 3));
		st->c[7] = _mm256_add_epi8(st->c[7], AVX2_BIT(e8, 7, 3));
	}
	cs->ones = ones;
	cs->twos = twos;
	cs->fours = fours;
}

/* Adds ones, twos and fours to the byte counters. */
AVX2 static void
avx2_fold(struct avx2_state *st, struct simhash_acc *acc,
    const struct avx2_csa *cs)
{
	const __m256i o = cs->ones, t = cs->twos, f = cs->fours;

	if (st->max > 255 - 7)
		avx2_empty(st, acc);
	st->max += 7;
#define FOLD(k) st->c[k] = _mm256_add_epi8(st->c[k], _mm256_add_epi8(	\
	_mm256_add_epi8(AVX2_BIT(o, k, 0), AVX2_BIT(t, k, 1)),		\
	AVX2_BIT(f, k, 2)))
	FOLD(0); FOLD(1); FOLD(2); FOLD(3);
	FOLD(4); FOLD(5); FOLD(6); FOLD(7);
#undef FOLD
}

/* Counts n hashes finished by the scalar path. */
AVX2 static void
avx2_count(struct simhash_acc *acc, const uint64_t *h, size_t n)
{
	struct avx2_state *st = avx2_state(acc);
	struct avx2_csa cs = { _mm256_setzero_si256(), _mm256_setzero_si256(),
	    _mm256_setzero_si256() };
	uint64_t b[32];
	size_t m;

	while (n > 0) {
		m = n < 32 ? n : 32;
		memcpy(b, h, m * sizeof(*h));
		memset(b + m, 0, (32 - m) * sizeof(*h));
		avx2_hs(st, acc, &cs, b, 32);
		h += m;
		n -= m;
	}
	avx2_fold(st, acc, &cs);
}

/* Bit 8i + j to bit 8j + i (Hacker's Delight, transpose8). */
static inline uint64_t
avx2_transpose8(uint64_t x)
{
	uint64_t t;

	t = (x ^ (x >> 7)) & 0x00aa00aa00aa00aaULL;
	x ^= t ^ (t << 7);
	t = (x ^ (x >> 14)) & 0x0000cccc0000ccccULL;
	x ^= t ^ (t << 14);
	t = (x ^ (x >> 28)) & 0x00000000f0f0f0f0ULL;
	x ^= t ^ (t << 28);
	return x;
}

/*
 * Bit i is set iff at least half the occurrences have it (ties give 1).
 * Unless the counters were ever emptied, straight from them: a position's
 * count is the sum of its 4 lanes' bytes, at most 1020.
 */
AVX2 static uint64_t
avx2_finish(struct simhash_acc *acc)
{
	struct avx2_state *st = avx2_state(acc);
	uint64_t half = (acc->nterms + 1) / 2, m = 0;
	__m128i t[8], lim;
	__m256i c, s;
	int k;

	if (acc->cnt_used) {
		avx2_empty(st, acc);
		return simhash_finish_scalar(acc);
	}
	lim = _mm_set1_epi16((short)(half < 32767 ? half - 1 : 32766));
	for (k = 0; k < 8; k++) {
		/*
		 * Lanes 0 + 1 and 2 + 3, then the two halves; from the whole
		 * register (fold has just stored it: a load of half of it
		 * would wait for the store).
		 */
		c = st->c[k];
		s = _mm256_add_epi16(_mm256_unpacklo_epi8(c,
		    _mm256_setzero_si256()), _mm256_unpackhi_epi8(c,
		    _mm256_setzero_si256()));
		t[k] = _mm_cmpgt_epi16(_mm_add_epi16(_mm256_castsi256_si128(s),
		    _mm256_extracti128_si256(s, 1)), lim);
	}
	/* Bit 8k + j of m: position 8j + k. */
	for (k = 0; k < 8; k += 2)
		m |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_packs_epi16(t[k],
		    t[k + 1])) << (8 * k);
	return avx2_transpose8(m);
}

/*
 * a * k mod 2^64: the low halves' product by vpmuludq, and the two cross
 * products, of which only the low 32 bits count, by one vpmulld of a by
 * k's halves swapped; added in the high half.  6 operations where three
 * vpmuludq took 7 (on Intel cores, where vpmulld is two micro-operations,
 * 7 either way).
 */
AVX2 static inline __m256i
avx2_mul64(__m256i a, uint64_t k)
{
	const __m256i klo = _mm256_set1_epi64x((long long)(k & 0xffffffff));
	const __m256i kswap = _mm256_set1_epi64x((long long)(k >> 32 |
	    k << 32));
	const __m256i hi = _mm256_set1_epi64x((long long)0xffffffff00000000ULL);
	__m256i cross;

	/* Low half alo * khi, high half ahi * klo (each mod 2^32). */
	cross = _mm256_mullo_epi32(a, kswap);
	return _mm256_add_epi64(_mm256_mul_epu32(a, klo), _mm256_add_epi64(
	    _mm256_slli_epi64(cross, 32), _mm256_and_si256(cross, hi)));
}

AVX2 static inline __m256i
avx2_fmix(__m256i h)
{
	h = _mm256_xor_si256(h, _mm256_srli_epi64(h, 33));
	h = avx2_mul64(h, 0xff51afd7ed558ccdULL);
	h = _mm256_xor_si256(h, _mm256_srli_epi64(h, 33));
	h = avx2_mul64(h, 0xc4ceb9fe1a85ec53ULL);
	return _mm256_xor_si256(h, _mm256_srli_epi64(h, 33));
}

/*
 * The sdbm polynomial of 4 lanes of 8 bytes, as in the AVX-512 kernel
 * (simhash_avx512.c): the halves A (bytes 0-3) and B (4-7) of each lane,
 * exact, from a vpshufb, a vpmaddubsw, a vpmuludq and the qwords' halves
 * swapped (vpshufd).  The hash is A * P^4 + B, with one 64-bit
 * multiply (avx2_mul64): 4 multiplies for 4 terms where digits times
 * powers took 8.
 */
AVX2 static inline void
avx2_halves(__m256i w, __m256i *a, __m256i *b)
{
	const __m256i ia = _mm256_setr_epi32((int)0x80000001,
	    (int)0x80020203, (int)0x80080809, (int)0x800a0a0b,
	    (int)0x80000001, (int)0x80020203, (int)0x80080809,
	    (int)0x800a0a0b);
	const __m256i ib = _mm256_setr_epi32((int)0x80040405,
	    (int)0x80060607, (int)0x800c0c0d, (int)0x800e0e0f,
	    (int)0x80040405, (int)0x80060607, (int)0x800c0c0d,
	    (int)0x800e0e0f);
	const __m256i k = _mm256_set1_epi32(0x00013f01);
	const __m256i p2 = _mm256_set1_epi64x(0x007e0f81);
	__m256i da, db;

	da = _mm256_maddubs_epi16(_mm256_shuffle_epi8(w, ia), k);
	db = _mm256_maddubs_epi16(_mm256_shuffle_epi8(w, ib), k);
	*a = _mm256_add_epi64(_mm256_mul_epu32(da, p2),
	    _mm256_shuffle_epi32(da, 0xb1));
	*b = _mm256_add_epi64(_mm256_mul_epu32(db, p2),
	    _mm256_shuffle_epi32(db, 0xb1));
}

/* The sdbm hash of each lane's 8 bytes (bytes before the term zeroed). */
AVX2 static inline __m256i
avx2_poly8_lo(__m256i w)
{
	__m256i a, b;

	avx2_halves(w, &a, &b);
	return _mm256_add_epi64(avx2_mul64(a, 0x00fc5d1543ec5f01ULL), b);
}

/* The same times P^8: the share of the 8 bytes before those. */
AVX2 static inline __m256i
avx2_poly8_hi(__m256i w)
{
	__m256i a, b;

	avx2_halves(w, &a, &b);
	return _mm256_add_epi64(avx2_mul64(a, 0x0cda7b04cc881d01ULL),
	    avx2_mul64(b, 0xfdcbe423d319be01ULL));
}

/*
 * For each lane, a mask of the bytes up to its last SPACE (none if it has
 * none); *nospace gets the lanes without SPACE as a 4-bit mask.  With the
 * bytes reversed the mask is every bit from the lowest set one up, x | -x.
 */
AVX2 static inline __m256i
avx2_drop(__m256i w, unsigned *nospace)
{
	const __m256i rev = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14,
	    13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11,
	    10, 9, 8);
	__m256i m = _mm256_shuffle_epi8(_mm256_cmpeq_epi8(w,
	    _mm256_set1_epi8(' ')), rev);

	*nospace = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(
	    _mm256_cmpeq_epi64(m, _mm256_setzero_si256())));
	return _mm256_shuffle_epi8(_mm256_or_si256(m, _mm256_sub_epi64(
	    _mm256_setzero_si256(), m)), rev);
}

/*
 * Tokenizes the 64-byte block q[0..64), at b in the window: the 16 bytes
 * before each end of a term, from ck->rec[2 * nt]; the block's mask of
 * ends in ck->bem[*nb] if it has any.  lim: the positions that may end a
 * term; *carry: whether the byte before is a SPACE.  The 16 bytes before
 * q are readable.  Returns the new number of terms.
 *
 * Only one load and one store per round: an exhausted mask gives
 * position 64 (tzcnt), whose 16 bytes before are the block's last.  The
 * ends themselves are not kept: the rare terms that need theirs (16 bytes
 * or more) find it again from the block masks (simhash_block_end).
 */
AVX2 static inline size_t
avx2_block(const uint8_t *q, size_t b, uint64_t lim, uint64_t *carry,
    struct avx2_chunk *ck, size_t nt, size_t *nb)
{
	const __m256i sp = _mm256_set1_epi8(' ');
	uint64_t spm, em;
	unsigned cnt, r, pos;

	spm = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(
	    _mm256_loadu_si256((const __m256i *)q), sp)) |
	    (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(
	    _mm256_loadu_si256((const __m256i *)(q + 32)), sp)) << 32;
	spm &= lim;
	em = spm & ~((spm << 1) | *carry);
	*carry = spm >> 63;
	cnt = (unsigned)_mm_popcnt_u64(em);
	ck->bb[*nb] = (uint32_t)b;
	ck->bem[*nb] = em;
	*nb += em != 0;
#pragma GCC unroll 14
	for (r = 0; r < 14; r++) {
		pos = (unsigned)_tzcnt_u64(em);
		em = _blsr_u64(em);
		_mm_store_si128((__m128i *)(ck->rec + 2 * (nt + r)),
		    _mm_loadu_si128((const __m128i *)(q + pos - 16)));
	}
	for (; __builtin_expect(r < cnt, 0); r++) {
		pos = (unsigned)_tzcnt_u64(em);
		em = _blsr_u64(em);
		_mm_store_si128((__m128i *)(ck->rec + 2 * (nt + r)),
		    _mm_loadu_si128((const __m128i *)(q + pos - 16)));
	}
	return nt + cnt;
}

/*
 * The first block of a document or the last of a window, at b, copied
 * into tmp (208 bytes) with the 16 bytes before it (SPACE where they are
 * not readable) and SPACE from n on.  With fixed-size vector moves where
 * the bytes are there: position x from the block's start is byte b + x of
 * the window wherever it is written, so the moves may overlap.  Returns
 * where the copy of the block starts.
 */
AVX2 static const uint8_t *
avx2_copy(uint8_t *tmp, const uint8_t *p, size_t b, size_t n, size_t before)
{
	const __m256i sp = _mm256_set1_epi8(' ');
	uint8_t *q = tmp + 64 + 16;
	size_t m;

	if (b + before >= 16)
		_mm_storeu_si128((__m128i *)(q - 16), _mm_loadu_si128(
		    (const __m128i *)(p + b - 16)));
	else {
		_mm_storeu_si128((__m128i *)(q - 16), _mm256_castsi256_si128(sp));
		m = b + before;
		memcpy(q - m, p + b - m, m);
	}
	if (n - b >= 64) {
		_mm256_storeu_si256((__m256i *)q, _mm256_loadu_si256(
		    (const __m256i *)(p + b)));
		_mm256_storeu_si256((__m256i *)(q + 32), _mm256_loadu_si256(
		    (const __m256i *)(p + b + 32)));
		return q;
	}
	if (n + before >= 64) {
		/* The window's last 64 bytes, ending at q + n - b. */
		_mm256_storeu_si256((__m256i *)(q + n - b - 64),
		    _mm256_loadu_si256((const __m256i *)(p + n - 64)));
		_mm256_storeu_si256((__m256i *)(q + n - b - 32),
		    _mm256_loadu_si256((const __m256i *)(p + n - 32)));
	} else
		memcpy(q, p + b, n - b);
	_mm256_storeu_si256((__m256i *)(q + n - b), sp);
	_mm256_storeu_si256((__m256i *)(q + n - b + 32), sp);
	return q;
}

/*
 * t[slot] for the 4 slots (each below the table's size).  Not vpgatherqq,
 * which takes about 10 cycles on Zen 4: 4 scalar loads, with the moves of
 * the slots out of the register and of the words back in, take fewer
 * (plain text 3% faster, measured).
 */
AVX2 static inline __m256i
avx2_lookup(const uint64_t *t, __m256i slot)
{
	uint64_t s[4] __attribute__((aligned(32)));

	_mm256_store_si256((__m256i *)s, slot);
	return _mm256_set_epi64x((long long)t[s[3]], (long long)t[s[2]],
	    (long long)t[s[1]], (long long)t[s[0]]);
}

/*
 * A group of 4 records loaded as two registers and unpacked gives its
 * terms in the lanes 0, 2, 1, 3: the term of lane j, and the lanes of the
 * first n terms.
 */
static const uint8_t avx2_term_of_lane[4] = { 0, 2, 1, 3 };
static const uint8_t avx2_valid[5] = { 0x0, 0x1, 0x5, 0x7, 0xf };

/*
 * Hashes, filters and counts the n terms of a chunk, from nb blocks; no
 * term starts before p + lo.  Always inlined into one
 * copy per mode (avx2_terms_by_mode), so that no loop tests the mode.
 */
AVX2 static inline __attribute__((always_inline)) void
avx2_terms(struct simhash_acc *acc, struct avx2_state *st,
    struct avx2_csa *cs, const uint8_t *p, size_t lo, struct avx2_chunk *ck,
    size_t n, size_t nb, const enum simhash_stop stop_mode, const int fmix)
{
	const struct simhash *sh = acc->sh;
	const struct simhash_stoptab *tab = &sh->tab;
	const __m256i spaces = _mm256_set1_epi8(' ');
	const __m256i mul = _mm256_set1_epi64x(tab->mul);
	const __m256i slotmask = _mm256_set1_epi64x(((long long)1 <<
	    tab->bits) - 1);
	const __m128i shift = _mm_cvtsi32_si128((int)tab->shift);
	const int stop = stop_mode != SIMHASH_STOP_NONE;
	const int fast_stop = stop_mode == SIMHASH_STOP_TABLE;
	size_t g, ng = (n + 3) / 4, nl = 0, j, k;
	uint64_t nterms = 0;
	unsigned nospace, valid, cm, lm, vl;

	SIMHASH_PROF_T(t0);

	if (stop_mode == SIMHASH_STOP_SLOW)
		simhash_block_ends(ck->bb, ck->bem, nb, ck->end);
	/* Pass 1: the last 8 bytes. */
	for (g = 0; g < ng; g++) {
		__m256i r0 = _mm256_load_si256((const __m256i *)(ck->rec +
		    8 * g)), r1 = _mm256_load_si256((const __m256i *)(ck->rec +
		    8 * g + 4)), w, drop;

		w = _mm256_unpackhi_epi64(r0, r1);
		valid = avx2_valid[n - 4 * g < 4 ? n - 4 * g : 4];
		drop = avx2_drop(w, &nospace);
		_mm256_storeu_si256((__m256i *)(ck->h + 4 * g),
		    avx2_poly8_lo(_mm256_andnot_si256(drop, w)));
		if (stop)
			_mm256_storeu_si256((__m256i *)(ck->klo + 4 * g),
			    _mm256_blendv_epi8(w, spaces, drop));
		lm = nospace & valid;
		ck->longm[g] = (uint8_t)lm;
		ck->vlong[g] = 0;
		ck->loff[g] = (uint16_t)nl;
		/* The second words of the terms of 8 bytes or more. */
		_mm256_storeu_si256((__m256i *)(ck->lhi + nl),
		    _mm256_permutevar8x32_epi32(_mm256_unpacklo_epi64(r0, r1),
		    _mm256_load_si256((const __m256i *)avx2_pack[lm])));
		nl += (size_t)__builtin_popcount(lm);
	}
	/* Pass 2: the bytes before those, for terms of 8 bytes or more. */
	for (g = 0; g < nl; g += 4) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(ck->lhi + g)),
		    drop;

		drop = avx2_drop(w, &nospace);
		_mm256_storeu_si256((__m256i *)(ck->lh + g), avx2_poly8_hi(
		    _mm256_andnot_si256(drop, w)));
		if (stop)
			_mm256_storeu_si256((__m256i *)(ck->lkey + g),
			    _mm256_blendv_epi8(w, spaces, drop));
		/* No SPACE in 16 bytes: 16 or more, for the scalar path. */
		nospace &= simhash_lanes(nl - g, 4);
		while (__builtin_expect(nospace != 0, 0)) {
			k = simhash_long_term_at(ck->loff, ck->longm, ng, 4,
			    g + (size_t)__builtin_ctz(nospace));
			nospace &= nospace - 1;
			ck->vlong[k / 4] |= (uint8_t)(1u << (k % 4));
		}
	}
	SIMHASH_PROF_ADD(hash, t0);
	/* Pass 3: stop words, fmix64, the lanes to count. */
	for (g = 0; g < ng; g++) {
		__m256i h, perm;

		valid = avx2_valid[n - 4 * g < 4 ? n - 4 * g : 4];
		lm = ck->longm[g];
		vl = ck->vlong[g];
		cm = valid & ~vl;
		/* The second words' shares, back in their terms' lanes. */
		perm = _mm256_load_si256((const __m256i *)avx2_perm[lm]);
		h = _mm256_add_epi64(_mm256_loadu_si256((const __m256i *)
		    (ck->h + 4 * g)), _mm256_and_si256(avx2_lanemask(lm),
		    _mm256_permutevar8x32_epi32(_mm256_loadu_si256(
		    (const __m256i *)(ck->lh + ck->loff[g])), perm)));
		if (fast_stop) {
			__m256i slot = _mm256_and_si256(_mm256_srl_epi64(
			    _mm256_mul_epu32(h, mul), shift), slotmask);
			__m256i eq = _mm256_cmpeq_epi64(avx2_lookup(tab->lo,
			    slot), _mm256_loadu_si256((const __m256i *)(ck->klo +
			    4 * g)));
			unsigned em = (unsigned)_mm256_movemask_pd(
			    _mm256_castsi256_pd(eq)) & cm;
			unsigned leq = em & lm;

			/* Long candidates must match their first 8 bytes too. */
			if (leq)
				em &= ~leq | (unsigned)_mm256_movemask_pd(
				    _mm256_castsi256_pd(_mm256_cmpeq_epi64(
				    avx2_lookup(tab->hi, slot),
				    _mm256_blendv_epi8(spaces,
				    _mm256_permutevar8x32_epi32(
				    _mm256_loadu_si256((const __m256i *)
				    (ck->lkey + ck->loff[g])), perm),
				    avx2_lanemask(lm)))));
			cm &= ~em;
		} else if (stop) {
			for (j = 0; j < 4; j++)
				if ((cm >> j & 1) && simhash_stop_slow(sh, p, lo,
				    ck->end[4 * g + avx2_term_of_lane[j]]))
					cm &= ~(1u << j);
		}
		if (fmix)
			h = avx2_fmix(h);
		nterms += (uint64_t)__builtin_popcount(cm);
		/* Lanes not counted become 0, which adds nothing. */
		_mm256_storeu_si256((__m256i *)(ck->h + 4 * g),
		    _mm256_and_si256(h, avx2_lanemask(cm)));
		/* Terms of 16 bytes or more: the scalar way (rare). */
		if (__builtin_expect(vl != 0, 0)) {
			while (vl) {
				j = (size_t)__builtin_ctz(vl);
				vl &= vl - 1;
				simhash_long_term(acc, p, lo,
				    simhash_block_end(ck->bb, ck->bem, nb,
				    4 * g + avx2_term_of_lane[j]));
			}
		}
	}
	SIMHASH_PROF_ADD(filter, t0);
	/* Count, in 32s: the lanes after the last term are zeros. */
	for (g = 4 * ng; g % 32 != 0; g += 4)
		_mm256_storeu_si256((__m256i *)(ck->h + g),
		    _mm256_setzero_si256());
	avx2_hs(st, acc, cs, ck->h, g);
	SIMHASH_PROF_ADD(filter, t0);
	acc->nterms += nterms;
#ifdef SIMHASH_PROFILE
	simhash_profile.terms += n;
#endif
}

#define AVX2_TERMS(name, stop_mode, fmix)				\
AVX2 static void							\
name(struct simhash_acc *acc, struct avx2_state *st, struct avx2_csa *cs,	\
    const uint8_t *p, size_t lo, struct avx2_chunk *ck, size_t n,	\
    size_t nb)								\
{									\
	avx2_terms(acc, st, cs, p, lo, ck, n, nb, stop_mode, fmix);	\
}
AVX2_TERMS(avx2_terms_none_fmix, SIMHASH_STOP_NONE, 1)
AVX2_TERMS(avx2_terms_none_sdbm, SIMHASH_STOP_NONE, 0)
AVX2_TERMS(avx2_terms_table_fmix, SIMHASH_STOP_TABLE, 1)
AVX2_TERMS(avx2_terms_table_sdbm, SIMHASH_STOP_TABLE, 0)
AVX2_TERMS(avx2_terms_slow_fmix, SIMHASH_STOP_SLOW, 1)
AVX2_TERMS(avx2_terms_slow_sdbm, SIMHASH_STOP_SLOW, 0)
#undef AVX2_TERMS

typedef void (*avx2_terms_fn)(struct simhash_acc *, struct avx2_state *,
    struct avx2_csa *, const uint8_t *, size_t, struct avx2_chunk *, size_t,
    size_t);

/* The copy of avx2_terms for a document's mode. */
static avx2_terms_fn
avx2_terms_by_mode(const struct simhash_acc *acc)
{
	static const avx2_terms_fn fns[3][2] = {
		{ avx2_terms_none_sdbm, avx2_terms_none_fmix },
		{ avx2_terms_table_sdbm, avx2_terms_table_fmix },
		{ avx2_terms_slow_sdbm, avx2_terms_slow_fmix },
	};
	return fns[simhash_stop_mode(acc)][acc->fmix != 0];
}

AVX2 static void
avx2_run(struct simhash_acc *acc, struct simhash_scratch *sc,
    const uint8_t *p, size_t n, size_t before, int final)
{
	struct avx2_chunk *ck = (struct avx2_chunk *)sc->stage;
	avx2_terms_fn terms = avx2_terms_by_mode(acc);
	struct avx2_state *st;
	struct avx2_csa cs = { _mm256_setzero_si256(), _mm256_setzero_si256(),
	    _mm256_setzero_si256() };
	/* A block with SPACE around it: 16 bytes before, 64, 64 after. */
	uint8_t tmp[64 + 16 + 64 + 64] __attribute__((aligned(32)));
	size_t s = 0, t, b, nt = 0, nb = 0;
	uint64_t carry = 1, lim;
	const uint8_t *q;

	if (n == 0)
		return;
	if (acc->part_len > 0 && (s = simhash_finish_carried(acc, p, n)) == n)
		return;
	if (final)
		t = n;		/* the end of the document ends a term */
	else if ((q = memrchr(p + s, ' ', n - s)) != NULL)
		t = (size_t)(q - p);
	else {
		simhash_scalar_run(acc, p + s, n - s);
		return;
	}
	st = avx2_state(acc);
	SIMHASH_PROF_T(t0);
	for (b = s; b <= t; b += 64) {
		lim = t - b >= 63 ? ~0ULL : _bzhi_u64(~0ULL,
		    (unsigned)(t - b + 1));
		if (b + before >= 16 && n - b >= 64)
			q = p + b;
		else
			q = avx2_copy(tmp, p, b, n, before);
		nt = avx2_block(q, b, lim, &carry, ck, nt, &nb);
		if (nt > AVX2_CHUNK_TERMS - 32) {
			SIMHASH_PROF_ADD(tokenize, t0);
			terms(acc, st, &cs, p, s, ck, nt, nb);
#ifdef SIMHASH_PROFILE
			t0 = __rdtsc();
#endif
			nt = nb = 0;
		}
	}
	SIMHASH_PROF_ADD(tokenize, t0);
	if (nt > 0)
		terms(acc, st, &cs, p, s, ck, nt, nb);
	avx2_fold(st, acc, &cs);
	if (t < n)
		simhash_scalar_run(acc, p + t + 1, n - t - 1);
}

const struct simhash_kernel simhash_kernel_avx2 = {
	.level = SIMHASH_SIMD_AVX2,
	.normalize = avx2_normalize,
	.run = avx2_run,
	.count = avx2_count,
	.finish = avx2_finish,
};

#else

const struct simhash_kernel simhash_kernel_avx2 = {
	.level = SIMHASH_SIMD_AVX2,
	.normalize = NULL,
	.run = NULL,
	.count = NULL,
	.finish = NULL,
};

#endif
