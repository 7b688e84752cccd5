/*
 * simhash_avx512: the AVX-512 kernel (F, BW, VL, DQ, CD, VBMI, VBMI2,
 * BITALG and GFNI: Ice Lake and later).  See simhash_impl.h for the frame.
 *
 * A window is tokenized 64 bytes at a time and its terms are then handled
 * in chunks of 16 blocks, each pass a loop of independent iterations with
 * short dependency chains and as few data-dependent branches as can be (a
 * mispredicted branch costs about as much as hashing two terms):
 *
 *  Tokenize.  Compare the block with SPACE; a term ends at a SPACE after a
 *    term byte.  The positions of the ends are compressed (vpcompressb),
 *    and for 8 ends at a time the 16 bytes before each end are picked out
 *    of this block and the previous one with two vpermi2b: term words,
 *    right-aligned, one per 64-bit lane, bytes e-8..e-1 in one array and
 *    e-16..e-9 (needed for terms of 8 bytes or more) in another.  Two
 *    rounds of 8 always run, more when a block has more than 16 ends
 *    (rare).  The ends themselves are not stored, only each block's mask
 *    of them: the rare terms that need theirs find it from the masks.
 *  Pass 1.  In each word, the bytes up to the last SPACE are not the term's
 *    and are zeroed (vplzcntq of the SPACE mask).  A word without SPACE
 *    holds a term of 8 bytes or more: its second word is compacted into a
 *    list (vpcompressq).
 *  Pass 2.  sdbm is a polynomial in 65599, so a term's hash is
 *    sum(b[k] * 65599^(7-k)) over the 8 bytes, zeros included: a vpshufb
 *    and a vpmaddubsw make 32-bit digits b0 * 65599 + b1 of byte pairs,
 *    one vpmuludq and a rotation join two digits exactly, and one vpmullq
 *    the two halves (avx512_halves).
 *  Pass 3.  The second words of the long terms, 8 terms at a time: their
 *    share of the hash (the same polynomial times 65599^8) and their
 *    stop-word key.
 *  Pass 4.  The shares are moved back into their terms' lanes (vpermq by
 *    a table: vpexpandq is slow on Zen 4); terms of 16 bytes or more are
 *    left to the scalar path (rare).  Stop words: one lookup of 8 slots in
 *    the perfect hash table (simhash_impl.h), by scalar loads rather than
 *    a gather, comparing the SPACE-padded last 8 bytes, which decides for
 *    terms under 8 bytes; longer ones compare their first 8 bytes too.
 *    The hashes to count are stored back, the others as 0.
 *  Pass 5.  fmix64 and counting: the 8 hashes' bytes are transposed
 *    (vpermb), each 8x8 bit block transposed with gf2p8affineqb, and
 *    vpopcntb gives, per bit position, how many of the 8 hashes have it
 *    set: one byte counter per bit, kept in a register through the pass
 *    and added up in 8, 16 and 64 bits.
 *
 * The passes are split where one loop would otherwise hold long dependency
 * chains (the masks and the polynomial, gathers, fmix64, the transposition)
 * one after the other: the waiting operations fill the schedulers and the
 * next iterations cannot start.  On Zen 4 that bounds the kernel more than
 * its ports do: a pass more, its stores and loads included, is cheaper.
 */
#include "simhash_impl.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq," \
	"avx512cd,avx512vbmi,avx512vbmi2,avx512bitalg,gfni,bmi,bmi2,popcnt," \
	"lzcnt")))

/* Blocks tokenized before their terms are hashed; 32 terms at most each. */
#define AVX512_CHUNK_BLOCKS 16
#define AVX512_CHUNK_TERMS (AVX512_CHUNK_BLOCKS * 32)

/*
 * One chunk of terms, in the scratch's stage area (64-byte aligned; so are
 * the arrays that are read and written a vector at a time: a vector across
 * two cache lines costs twice).
 */
#define A64 __attribute__((aligned(64)))
struct avx512_chunk {
	uint64_t wlo[AVX512_CHUNK_TERMS + 32];	/* bytes e-8..e-1 */
	/* e, from p: for lists beyond the table only (see bb) */
	uint32_t end[AVX512_CHUNK_TERMS + 32];
	uint64_t h[AVX512_CHUNK_TERMS] A64;	/* sdbm */
	/*
	 * Pass 1 reads the words of a group before it writes their keys:
	 * the keys take the words' place.
	 */
	union {
		uint64_t whi[AVX512_CHUNK_TERMS + 32];	/* bytes e-16..e-9 */
		uint64_t klo[AVX512_CHUNK_TERMS + 32];	/* stop-word keys */
	} A64;
	/* Terms of 8 bytes or more: their second word. */
	uint64_t lhi[AVX512_CHUNK_TERMS + 8] A64;
	/* ... their share of the hash and their keys, in that order ... */
	uint64_t lh[AVX512_CHUNK_TERMS + 8] A64;
	uint64_t lkey[AVX512_CHUNK_TERMS + 8] A64;
	/* ... from lh[loff[g]] for the terms of group g. */
	uint16_t loff[AVX512_CHUNK_TERMS / 8];
	uint8_t longm[AVX512_CHUNK_TERMS / 8];	/* per 8 terms: 8+ bytes */
	uint8_t vlong[AVX512_CHUNK_TERMS / 8];	/* 16+ bytes */
	/*
	 * The blocks: where each starts, its mask of term ends.  The ends
	 * themselves are found from them only where needed (terms of 16 bytes
	 * or more, lists beyond the table): storing them all costs more.
	 */
	uint32_t bb[AVX512_CHUNK_BLOCKS];
	uint64_t bem[AVX512_CHUNK_BLOCKS];
	unsigned nb;
};
#undef A64

_Static_assert(sizeof(struct avx512_chunk) <= SIMHASH_STAGE_SIZE,
    "stage area too small");

/* Counters kept in acc->kstate between windows. */
struct avx512_state {
	__m512i c8;		/* per bit position, 8-bit */
	__m512i c16[2];		/* 16-bit: positions 0-31, 32-63 */
	unsigned n8;		/* groups added to c8 (each adds <= 8) */
	unsigned n16;		/* c8 flushes added to c16 */
};

_Static_assert(sizeof(struct avx512_state) <=
    sizeof(((struct simhash_acc *)0)->kstate), "kstate too small");

/*
 * Where lane j of an expansion by the lane mask m takes its element from:
 * byte j of avx512_expand_idx[m] is the number of lanes of m below j.
 * vpermq with it stands in for vpexpandq, which takes about 5 cycles on
 * Zen 4 (from memory or not).
 */
#define POP7(x) (((x) & 1) + ((x) >> 1 & 1) + ((x) >> 2 & 1) +		\
	((x) >> 3 & 1) + ((x) >> 4 & 1) + ((x) >> 5 & 1) + ((x) >> 6 & 1))
#define BELOW(m, j) ((uint64_t)POP7((m) & ((1 << (j)) - 1)) << (8 * (j)))
#define IDX(m) (BELOW(m, 1) | BELOW(m, 2) | BELOW(m, 3) | BELOW(m, 4) |	\
	BELOW(m, 5) | BELOW(m, 6) | BELOW(m, 7))
#define IDX4(m) IDX(m), IDX((m) + 1), IDX((m) + 2), IDX((m) + 3)
#define IDX16(m) IDX4(m), IDX4((m) + 4), IDX4((m) + 8), IDX4((m) + 12)
#define IDX64(m) IDX16(m), IDX16((m) + 16), IDX16((m) + 32), IDX16((m) + 48)
static const uint64_t avx512_expand_idx[256] = {
	IDX64(0), IDX64(64), IDX64(128), IDX64(192)
};
#undef POP7
#undef BELOW
#undef IDX
#undef IDX4
#undef IDX16
#undef IDX64

/* The first elements of v in the lanes of m, in order; 0 in the others. */
AVX512 static inline __m512i
avx512_expand(__mmask8 m, const uint64_t *v)
{
	return _mm512_maskz_permutexvar_epi64(m, _mm512_cvtepu8_epi64(
	    _mm_loadl_epi64((const __m128i *)(avx512_expand_idx + m))),
	    _mm512_loadu_si512(v));
}

AVX512 static void
avx512_normalize(uint8_t *dst, const uint8_t *src, size_t n)
{
	__m512i lo = _mm512_loadu_si512(textbytes_norm);
	__m512i hi = _mm512_loadu_si512(textbytes_norm + 64);
	__mmask64 m, ascii;
	__m512i v;
	size_t i;

	for (i = 0; i < n; i += 64) {
		m = n - i >= 64 ? ~(__mmask64)0 : _bzhi_u64(~0ULL,
		    (unsigned)(n - i));
		v = _mm512_maskz_loadu_epi8(m, src + i);
		ascii = ~_mm512_movepi8_mask(v);
		/* Bytes below 0x80 through the table, the others as they are. */
		v = _mm512_mask2_permutex2var_epi8(lo, v, ascii, hi);
		_mm512_mask_storeu_epi8(dst + i, m, v);
	}
}

/* c16 += c8 (zero-extended); c8 = 0. */
AVX512 static inline void
avx512_flush8(struct avx512_state *st)
{
	st->c16[0] = _mm512_add_epi16(st->c16[0], _mm512_cvtepu8_epi16(
	    _mm512_castsi512_si256(st->c8)));
	st->c16[1] = _mm512_add_epi16(st->c16[1], _mm512_cvtepu8_epi16(
	    _mm512_extracti64x4_epi64(st->c8, 1)));
	st->c8 = _mm512_setzero_si512();
	st->n8 = 0;
}

/* cnt += c16 (zero-extended); c16 = 0. */
AVX512 static void
avx512_flush16(struct avx512_state *st, struct simhash_acc *acc)
{
	__m128i w[8] = {
		_mm512_extracti32x4_epi32(st->c16[0], 0),
		_mm512_extracti32x4_epi32(st->c16[0], 1),
		_mm512_extracti32x4_epi32(st->c16[0], 2),
		_mm512_extracti32x4_epi32(st->c16[0], 3),
		_mm512_extracti32x4_epi32(st->c16[1], 0),
		_mm512_extracti32x4_epi32(st->c16[1], 1),
		_mm512_extracti32x4_epi32(st->c16[1], 2),
		_mm512_extracti32x4_epi32(st->c16[1], 3),
	};
	int k;

	if (!acc->cnt_used) {
		memset(acc->cnt, 0, sizeof(acc->cnt));
		acc->cnt_used = 1;
	}
	for (k = 0; k < 8; k++)
		_mm512_storeu_si512(acc->cnt + 8 * k, _mm512_add_epi64(
		    _mm512_loadu_si512(acc->cnt + 8 * k),
		    _mm512_cvtepu16_epi64(w[k])));
	st->c16[0] = st->c16[1] = _mm512_setzero_si512();
	st->n16 = 0;
}

/* The kernel's counters, set up for this document. */
AVX512 static inline struct avx512_state *
avx512_state(struct simhash_acc *acc)
{
	struct avx512_state *st = (struct avx512_state *)acc->kstate;

	if (!acc->kstate_used) {
		st->c8 = st->c16[0] = st->c16[1] = _mm512_setzero_si512();
		st->n8 = st->n16 = 0;
		acc->kstate_used = 1;
	}
	return st;
}

/*
 * Adds, per bit position, how many of the 8 lanes of v have it set, to c8
 * (kept in a register by the callers' loops: through memory, each group
 * would wait for the previous one's store).  The bytes are transposed so
 * that qword k holds byte k of every lane, each 8x8 bit block is transposed
 * by gf2p8affineqb (byte i of the result gathers bit i of the 8 bytes), and
 * vpopcntb counts.  Every 31 groups c8 is flushed to st.
 */
AVX512 static inline __m512i
avx512_count8(struct avx512_state *st, struct simhash_acc *acc, __m512i c8,
    unsigned *n8, __m512i v)
{
	const __m512i tidx = _mm512_set_epi64(
	    0x3f372f271f170f07LL, 0x3e362e261e160e06LL, 0x3d352d251d150d05LL,
	    0x3c342c241c140c04LL, 0x3b332b231b130b03LL, 0x3a322a221a120a02LL,
	    0x3931292119110901LL, 0x3830282018100800LL);
	const __m512i bitsel = _mm512_set1_epi64(0x8040201008040201LL);

	v = _mm512_permutexvar_epi8(tidx, v);
	v = _mm512_gf2p8affine_epi64_epi8(bitsel, v, 0);
	c8 = _mm512_add_epi8(c8, _mm512_popcnt_epi8(v));
	if (__builtin_expect(++*n8 == 31, 0)) {
		st->c8 = c8;
		avx512_flush8(st);
		if (++st->n16 == 255)
			avx512_flush16(st, acc);
		c8 = _mm512_setzero_si512();
		*n8 = 0;
	}
	return c8;
}

/* Counts n hashes finished by the scalar path. */
AVX512 static void
avx512_count(struct simhash_acc *acc, const uint64_t *h, size_t n)
{
	struct avx512_state *st = avx512_state(acc);
	__m512i c8 = st->c8;
	unsigned n8 = st->n8;
	size_t i;

	for (i = 0; i < n; i += 8)
		c8 = avx512_count8(st, acc, c8, &n8,
		    _mm512_maskz_loadu_epi64((__mmask8)simhash_lanes(n - i, 8),
		    h + i));
	st->c8 = c8;
	st->n8 = n8;
}

/* Bit i is set iff at least half the occurrences have it (ties give 1). */
AVX512 static uint64_t
avx512_finish(struct simhash_acc *acc)
{
	struct avx512_state *st = avx512_state(acc);
	const __m512i half = _mm512_set1_epi64((long long)((acc->nterms + 1) /
	    2));
	uint8_t c8[64] __attribute__((aligned(64)));
	uint16_t c16[64] __attribute__((aligned(64)));
	uint64_t fp = 0;
	__m512i t;
	int k;

	if (!acc->cnt_used && acc->nterms < 65536) {
		/* Every count fits 16 bits. */
		const __m512i h16 = _mm512_set1_epi16((short)((acc->nterms +
		    1) / 2));

		t = _mm512_add_epi16(st->c16[0], _mm512_cvtepu8_epi16(
		    _mm512_castsi512_si256(st->c8)));
		fp = _mm512_cmpge_epu16_mask(t, h16);
		t = _mm512_add_epi16(st->c16[1], _mm512_cvtepu8_epi16(
		    _mm512_extracti64x4_epi64(st->c8, 1)));
		return fp | (uint64_t)_mm512_cmpge_epu16_mask(t, h16) << 32;
	}
	_mm512_store_si512(c8, st->c8);
	_mm512_store_si512(c16, st->c16[0]);
	_mm512_store_si512(c16 + 32, st->c16[1]);
	for (k = 0; k < 8; k++) {
		t = _mm512_add_epi64(_mm512_cvtepu8_epi64(_mm_loadl_epi64(
		    (const __m128i *)(c8 + 8 * k))), _mm512_cvtepu16_epi64(
		    _mm_load_si128((const __m128i *)(c16 + 8 * k))));
		if (acc->cnt_used)
			t = _mm512_add_epi64(t, _mm512_loadu_si512(acc->cnt +
			    8 * k));
		fp |= (uint64_t)_mm512_cmpge_epu64_mask(t, half) << (8 * k);
	}
	return fp;
}

AVX512 static inline __m512i
avx512_fmix(__m512i h)
{
	h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
	h = _mm512_mullo_epi64(h, _mm512_set1_epi64(
	    (long long)0xff51afd7ed558ccdULL));
	h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
	h = _mm512_mullo_epi64(h, _mm512_set1_epi64(
	    (long long)0xc4ceb9fe1a85ec53ULL));
	return _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
}

/*
 * sdbm is a polynomial in P = 65599: over the 8 bytes b0..b7 of a lane
 * (bytes before the term zeroed), sum(b[k] * P^(7-k)) = A * P^4 + B with
 * A = d0 * P^2 + d1 and B = d2 * P^2 + d3, d[j] = b[2j] * P + b[2j+1].
 * A vpshufb puts b1, b0, b0, 0 in each 32 bits (b3, b2, b2, 0 in the
 * next, and so on) and vpmaddubsw by 1, 63, 1, 0 makes that the digit
 * 63 * b0 + b1 + 65536 * b0 = d0, below 2^24.  A qword then holds d0 in
 * its low half and d1 in its high half, and as P^2 = 2^32 + 0x7e0f81,
 * d0 * P^2 + d1 = d0 * 0x7e0f81 + (d0 << 32) + d1: one vpmuludq plus the
 * qword rotated by 32 bits, exact (below 2^57).  A and B come out in the
 * lanes of *a and *b; vpmullq (one operation on Zen 4) weighs them.  Half
 * the operations of multiplying every digit by its power in 32-bit halves.
 */
AVX512 static inline void
avx512_halves(__m512i w, __m512i *a, __m512i *b)
{
	const __m512i ia = _mm512_set4_epi32((int)0x800a0a0b,
	    (int)0x80080809, (int)0x80020203, (int)0x80000001);
	const __m512i ib = _mm512_set4_epi32((int)0x800e0e0f,
	    (int)0x800c0c0d, (int)0x80060607, (int)0x80040405);
	const __m512i k = _mm512_set1_epi32(0x00013f01);
	const __m512i p2 = _mm512_set1_epi64(0x007e0f81);
	__m512i da, db;

	da = _mm512_maddubs_epi16(_mm512_shuffle_epi8(w, ia), k);
	db = _mm512_maddubs_epi16(_mm512_shuffle_epi8(w, ib), k);
	*a = _mm512_add_epi64(_mm512_mul_epu32(da, p2),
	    _mm512_ror_epi64(da, 32));
	*b = _mm512_add_epi64(_mm512_mul_epu32(db, p2),
	    _mm512_ror_epi64(db, 32));
}

/* The sdbm hash of each lane's 8 bytes. */
AVX512 static inline __m512i
avx512_poly8_lo(__m512i w)
{
	__m512i a, b;

	avx512_halves(w, &a, &b);
	return _mm512_add_epi64(_mm512_mullo_epi64(a, _mm512_set1_epi64(
	    (long long)0x00fc5d1543ec5f01ULL)), b);	/* P^4 */
}

/* The same times P^8: the share of the 8 bytes before those. */
AVX512 static inline __m512i
avx512_poly8_hi(__m512i w)
{
	__m512i a, b;

	avx512_halves(w, &a, &b);
	return _mm512_add_epi64(_mm512_mullo_epi64(a, _mm512_set1_epi64(
	    (long long)0x0cda7b04cc881d01ULL)), _mm512_mullo_epi64(b,
	    _mm512_set1_epi64((long long)0xfdcbe423d319be01ULL)));
}

/* For each lane, a mask of the bytes after its last SPACE (all if none). */
AVX512 static inline __m512i
avx512_keep(__m512i w, __mmask8 *has_space)
{
	__m512i m = _mm512_movm_epi8(_mm512_cmpeq_epi8_mask(w,
	    _mm512_set1_epi8(' ')));

	*has_space = _mm512_test_epi64_mask(m, m);
	return _mm512_sllv_epi64(_mm512_set1_epi64(-1), _mm512_sub_epi64(
	    _mm512_set1_epi64(64), _mm512_lzcnt_epi64(m)));
}

/*
 * Tokenizes from *bp up to t (the last position that may end a term) for
 * at most AVX512_CHUNK_BLOCKS blocks.  Bytes from n on read as SPACE.
 * Returns the number of terms; updates *bp, *prev (the previous block) and
 * *carry (whether the byte before *bp is a SPACE), and records the blocks
 * in ck (bb, bem, nb).
 */
AVX512 static size_t
avx512_tokenize(const uint8_t *p, size_t n, size_t *bp, size_t t,
    __m512i *prev, uint64_t *carry, struct avx512_chunk *ck)
{
	const __m512i sp = _mm512_set1_epi8(' ');
	const __m512i iota = _mm512_set_epi8(63, 62, 61, 60, 59, 58, 57, 56,
	    55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40,
	    39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24,
	    23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7,
	    6, 5, 4, 3, 2, 1, 0);
	/* Lane j takes end j; its byte k is at e - 8 + k, + 64 in prev:cur. */
	const __m512i bcast = _mm512_set_epi64(0x0707070707070707LL,
	    0x0606060606060606LL, 0x0505050505050505LL,
	    0x0404040404040404LL, 0x0303030303030303LL,
	    0x0202020202020202LL, 0x0101010101010101LL, 0);
	const __m512i off = _mm512_set1_epi64(0x3f3e3d3c3b3a3938LL);
	const __m512i eight = _mm512_set1_epi8(8);
	size_t b = *bp, nt = 0, k;
	uint64_t m, spm, em;
	__m512i cur, pos, idx;
	unsigned cnt, r;

	for (k = 0; k < AVX512_CHUNK_BLOCKS && b <= t; k++, b += 64) {
		m = t + 1 - b >= 64 ? ~0ULL : _bzhi_u64(~0ULL,
		    (unsigned)(t + 1 - b));
		cur = _mm512_mask_loadu_epi8(sp, n - b >= 64 ? ~0ULL :
		    _bzhi_u64(~0ULL, (unsigned)(n - b)), p + b);
		spm = _mm512_mask_cmpeq_epi8_mask(m, cur, sp);
		em = spm & ~((spm << 1) | *carry);
		*carry = spm >> 63;
		cnt = (unsigned)_mm_popcnt_u64(em);
		pos = _mm512_maskz_compress_epi8(em, iota);
		ck->bb[k] = (uint32_t)b;
		ck->bem[k] = em;
		/*
		 * Two rounds of 8 always (no branch to mispredict: most
		 * blocks have 5 to 16 ends), more rarely.
		 */
		idx = _mm512_add_epi8(_mm512_permutexvar_epi8(bcast, pos), off);
		_mm512_storeu_si512(ck->wlo + nt,
		    _mm512_permutex2var_epi8(*prev, idx, cur));
		_mm512_storeu_si512(ck->whi + nt, _mm512_permutex2var_epi8(
		    *prev, _mm512_sub_epi8(idx, eight), cur));
		idx = _mm512_add_epi8(_mm512_permutexvar_epi8(_mm512_add_epi8(
		    bcast, eight), pos), off);
		_mm512_storeu_si512(ck->wlo + nt + 8,
		    _mm512_permutex2var_epi8(*prev, idx, cur));
		_mm512_storeu_si512(ck->whi + nt + 8, _mm512_permutex2var_epi8(
		    *prev, _mm512_sub_epi8(idx, eight), cur));
		for (r = 16; r < cnt; r += 8) {
			idx = _mm512_add_epi8(_mm512_permutexvar_epi8(
			    _mm512_add_epi8(bcast, _mm512_set1_epi8((char)r)),
			    pos), off);
			_mm512_storeu_si512(ck->wlo + nt + r,
			    _mm512_permutex2var_epi8(*prev, idx, cur));
			_mm512_storeu_si512(ck->whi + nt + r,
			    _mm512_permutex2var_epi8(*prev, _mm512_sub_epi8(idx,
			    eight), cur));
		}
		nt += cnt;
		*prev = cur;
	}
	ck->nb = (unsigned)k;
	*bp = b;
	return nt;
}

/*
 * t[slot] for the 8 slots (each below the table's size).  Not vpgatherqq,
 * which takes about 16 cycles on Zen 4: 8 scalar loads, with the moves of
 * the slots out of the register and of the words back in, take fewer
 * (plain text 4 to 7% faster, measured).
 */
AVX512 static inline __m512i
avx512_lookup(const uint64_t *t, __m512i slot)
{
	uint64_t s[8] __attribute__((aligned(64)));

	_mm512_store_si512(s, slot);
	return _mm512_set_epi64((long long)t[s[7]], (long long)t[s[6]],
	    (long long)t[s[5]], (long long)t[s[4]], (long long)t[s[3]],
	    (long long)t[s[2]], (long long)t[s[1]], (long long)t[s[0]]);
}

/*
 * Hashes, filters and counts the n terms of a chunk; no term starts before
 * p + lo.  Always inlined into one
 * copy per mode (avx512_terms_by_mode), so that no loop tests the mode.
 */
AVX512 static inline __attribute__((always_inline)) void
avx512_terms(struct simhash_acc *acc, struct avx512_state *st,
    const uint8_t *p, size_t lo, struct avx512_chunk *ck, size_t n,
    const enum simhash_stop stop_mode, const int fmix)
{
	const struct simhash *sh = acc->sh;
	const struct simhash_stoptab *tab = &sh->tab;
	const __m512i spaces = _mm512_set1_epi8(' ');
	const __m512i mul = _mm512_set1_epi64(tab->mul);
	const __m128i shift = _mm_cvtsi32_si128((int)tab->shift);
	const __m512i slotmask = _mm512_set1_epi64(((long long)1 << tab->bits) -
	    1);
	const int stop = stop_mode != SIMHASH_STOP_NONE;
	const int fast_stop = stop_mode == SIMHASH_STOP_TABLE;
	size_t g, ng = (n + 7) / 8, nl = 0, j;
	uint64_t nterms = 0;
	unsigned n8;
	__m512i c8;

	SIMHASH_PROF_T(t0);

	if (stop_mode == SIMHASH_STOP_SLOW)
		simhash_block_ends(ck->bb, ck->bem, ck->nb, ck->end);
	/* Pass 1: masks, and the lists of long terms. */
	for (g = 0; g < ng; g++) {
		__m512i w = _mm512_loadu_si512(ck->wlo + 8 * g), keep;
		__m512i whi = _mm512_loadu_si512(ck->whi + 8 * g);
		__mmask8 valid = (__mmask8)simhash_lanes(n - 8 * g, 8), has,
		    lm;

		keep = avx512_keep(w, &has);
		_mm512_storeu_si512(ck->h + 8 * g, _mm512_and_si512(w, keep));
		if (stop) {
			_mm512_storeu_si512(ck->klo + 8 * g,
			    _mm512_ternarylogic_epi64(keep, w, spaces, 0xca));
		}
		lm = valid & ~has;
		ck->longm[g] = lm;
		ck->vlong[g] = 0;
		ck->loff[g] = (uint16_t)nl;
		/* The second words of the terms of 8 bytes or more. */
		_mm512_storeu_si512(ck->lhi + nl, _mm512_maskz_compress_epi64(lm,
		    whi));
		nl += (size_t)_mm_popcnt_u32(lm);
	}
	/* Pass 2: sdbm of the last 8 bytes. */
	for (g = 0; g < ng; g++)
		_mm512_storeu_si512(ck->h + 8 * g, avx512_poly8_lo(
		    _mm512_loadu_si512(ck->h + 8 * g)));
	/* Pass 3: the bytes before those, for terms of 8 bytes or more. */
	for (g = 0; g < nl; g += 8) {
		__m512i w = _mm512_loadu_si512(ck->lhi + g), keep;
		__mmask8 has;
		unsigned nv;

		keep = avx512_keep(w, &has);
		_mm512_storeu_si512(ck->lh + g, avx512_poly8_hi(
		    _mm512_and_si512(w, keep)));
		if (stop)
			_mm512_storeu_si512(ck->lkey + g,
			    _mm512_ternarylogic_epi64(keep, w, spaces, 0xca));
		/* No SPACE in 16 bytes: 16 or more, for the scalar path. */
		nv = (unsigned)(uint8_t)~has & simhash_lanes(nl - g, 8);
		while (__builtin_expect(nv != 0, 0)) {
			size_t k = simhash_long_term_at(ck->loff, ck->longm,
			    ng, 8, g + (size_t)__builtin_ctz(nv));

			nv &= nv - 1;
			ck->vlong[k / 8] |= (uint8_t)(1u << (k % 8));
		}
	}
	SIMHASH_PROF_ADD(hash, t0);
	/*
	 * Pass 4: stop words; the hashes to count go back to h, those not
	 * counted as 0 (which adds nothing).  fmix64 and counting are a pass
	 * of their own: behind the gathers and the second words' loads in
	 * the same loop, their operations would wait in the schedulers,
	 * which then fill up before the next groups' loads can start
	 * (measured: 13% faster on preprocessed text, 45% on plain text).
	 */
	for (g = 0; g < ng; g++) {
		__mmask8 valid = (__mmask8)simhash_lanes(n - 8 * g, 8),
		    lm = ck->longm[g], cm;
		__mmask8 vlong = ck->vlong[g];
		__m512i h;

		/* The second words' shares, back in their terms' lanes. */
		h = _mm512_add_epi64(_mm512_loadu_si512(ck->h + 8 * g),
		    avx512_expand(lm, ck->lh + ck->loff[g]));
		cm = valid & ~vlong;
		if (fast_stop) {
			__m512i slot = _mm512_and_si512(_mm512_srl_epi64(
			    _mm512_mul_epu32(h, mul), shift), slotmask);
			__mmask8 eq = _mm512_mask_cmpeq_epi64_mask(cm,
			    avx512_lookup(tab->lo, slot),
			    _mm512_loadu_si512(ck->klo + 8 * g));
			__mmask8 leq = eq & lm;

			/* Long candidates must match their first 8 bytes too. */
			if (leq)
				eq &= ~leq | _mm512_mask_cmpeq_epi64_mask(leq,
				    _mm512_mask_i64gather_epi64(spaces, leq,
				    slot, tab->hi, 8),
				    _mm512_mask_expandloadu_epi64(spaces, lm,
				    ck->lkey + ck->loff[g]));
			cm &= ~eq;
		} else if (stop) {
			for (j = 0; j < 8; j++)
				if ((cm >> j & 1) && simhash_stop_slow(sh, p, lo,
				    ck->end[8 * g + j]))
					cm &= (__mmask8)~(1u << j);
		}
		nterms += (uint64_t)_mm_popcnt_u32(cm);
		_mm512_storeu_si512(ck->h + 8 * g, _mm512_maskz_mov_epi64(cm,
		    h));
		/* Terms of 16 bytes or more: the scalar way (rare). */
		if (__builtin_expect(vlong != 0, 0)) {
			while (vlong) {
				j = (size_t)__builtin_ctz(vlong);
				vlong &= (__mmask8)(vlong - 1);
				simhash_long_term(acc, p, lo,
				    simhash_block_end(ck->bb, ck->bem, ck->nb,
				    8 * g + j));
			}
		}
	}
	/* Pass 5: fmix64 and counting (fmix64(0) is 0). */
	c8 = st->c8;
	n8 = st->n8;
	for (g = 0; g < ng; g++) {
		__m512i h = _mm512_loadu_si512(ck->h + 8 * g);

		if (fmix)
			h = avx512_fmix(h);
		c8 = avx512_count8(st, acc, c8, &n8, h);
	}
	st->c8 = c8;
	st->n8 = n8;
	SIMHASH_PROF_ADD(filter, t0);
	acc->nterms += nterms;
#ifdef SIMHASH_PROFILE
	simhash_profile.terms += n;
#endif
}

#define AVX512_TERMS(name, stop_mode, fmix)				\
AVX512 static void							\
name(struct simhash_acc *acc, struct avx512_state *st, const uint8_t *p,	\
    size_t lo, struct avx512_chunk *ck, size_t n)			\
{									\
	avx512_terms(acc, st, p, lo, ck, n, stop_mode, fmix);		\
}
AVX512_TERMS(avx512_terms_none_fmix, SIMHASH_STOP_NONE, 1)
AVX512_TERMS(avx512_terms_none_sdbm, SIMHASH_STOP_NONE, 0)
AVX512_TERMS(avx512_terms_table_fmix, SIMHASH_STOP_TABLE, 1)
AVX512_TERMS(avx512_terms_table_sdbm, SIMHASH_STOP_TABLE, 0)
AVX512_TERMS(avx512_terms_slow_fmix, SIMHASH_STOP_SLOW, 1)
AVX512_TERMS(avx512_terms_slow_sdbm, SIMHASH_STOP_SLOW, 0)
#undef AVX512_TERMS

typedef void (*avx512_terms_fn)(struct simhash_acc *, struct avx512_state *,
    const uint8_t *, size_t, struct avx512_chunk *, size_t);

/* The copy of avx512_terms for a document's mode. */
static avx512_terms_fn
avx512_terms_by_mode(const struct simhash_acc *acc)
{
	static const avx512_terms_fn fns[3][2] = {
		{ avx512_terms_none_sdbm, avx512_terms_none_fmix },
		{ avx512_terms_table_sdbm, avx512_terms_table_fmix },
		{ avx512_terms_slow_sdbm, avx512_terms_slow_fmix },
	};
	return fns[simhash_stop_mode(acc)][acc->fmix != 0];
}

AVX512 static void
avx512_run(struct simhash_acc *acc, struct simhash_scratch *sc,
    const uint8_t *p, size_t n, size_t before, int final)
{
	struct avx512_chunk *ck = (struct avx512_chunk *)sc->stage;
	avx512_terms_fn terms = avx512_terms_by_mode(acc);
	struct avx512_state *st;
	size_t s = 0, t, b, nt;
	uint64_t carry = 1;
	const uint8_t *q;
	__m512i prev;

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
	st = avx512_state(acc);
	/*
	 * The 64 bytes before s; SPACE where they are not readable.  None
	 * are at the start of a preprocessed document: no load then, as one
	 * with every byte masked off still costs (2 to 3% of such documents'
	 * time, measured).
	 */
	if (s + before == 0)
		prev = _mm512_set1_epi8(' ');
	else
		prev = _mm512_mask_loadu_epi8(_mm512_set1_epi8(' '),
		    s + before >= 64 ? ~0ULL : ~_bzhi_u64(~0ULL,
		    (unsigned)(64 - s - before)), p + s - 64);
	for (b = s; b <= t;) {
		SIMHASH_PROF_T(t0);

		nt = avx512_tokenize(p, n, &b, t, &prev, &carry, ck);
		SIMHASH_PROF_ADD(tokenize, t0);
		if (nt > 0)
			terms(acc, st, p, s, ck, nt);
	}
	if (t < n)
		simhash_scalar_run(acc, p + t + 1, n - t - 1);
}

const struct simhash_kernel simhash_kernel_avx512 = {
	.level = SIMHASH_SIMD_AVX512,
	.normalize = avx512_normalize,
	.run = avx512_run,
	.count = avx512_count,
	.finish = avx512_finish,
};

#else

const struct simhash_kernel simhash_kernel_avx512 = {
	.level = SIMHASH_SIMD_AVX512,
	.normalize = NULL,
	.run = NULL,
	.count = NULL,
	.finish = NULL,
};

#endif
