/*
 * simhash_avx512: the AVX-512 kernel (F, BW, VL, DQ, CD, VBMI, VBMI2).
 *
 * Per window:
 *  1. Tokenize: 64 bytes at a time, compare with SPACE, and compress the
 *     positions of term ends (a SPACE after a term byte) into an array.
 *  2. Stage: copy the 16 bytes before each term end into a staging array,
 *     so that four terms fill one register, one 128-bit lane each.
 *  3. Per eight terms: find each lane's last SPACE (vplzcntq on the
 *     comparison mask); bytes up to it are not the term's and are zeroed.
 *     A lane without SPACE holds a term of 16 bytes or more, left to the
 *     scalar path (rare).  sdbm is a polynomial in 65599, so the term's hash
 *     is sum(b[k] * 65599^(15-k)) over the 16 bytes, zero bytes included:
 *     pairs of bytes are combined with vpmaddubsw (63 * b0 + b1, plus
 *     b0 << 16: b0 * 65599 + b1), interleaved into 32-bit digits, and each
 *     digit multiplied by its power of 65599 with two vpmuludq (low and high
 *     32 bits of the power).
 *  4. Stop words: one probe of the perfect hash table (simhash_impl.h) by
 *     two gathers, comparing the term's 16 bytes, SPACE-padded.
 *  5. fmix64 with vpmullq, then count: the eight hashes go to carry-save
 *     adders (vpternlogq), bit-sliced counters of weight 1, 2, 4 and 8 over
 *     the 64 bit positions; every 16 vectors the weight-16 carry is added
 *     to byte counters with one masked byte add per lane.
 */
#include "simhash_impl.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq," \
	"avx512cd,avx512vbmi,avx512vbmi2,bmi,bmi2,popcnt,lzcnt")))

/* The carry-save state kept in acc->kstate between windows. */
struct avx512_state {
	__m512i w1, w2, w4, w8;		/* bit-sliced counts of weight 1..8 */
	__m512i c16;			/* byte counters of weight 16 */
	unsigned n16;			/* carries added to c16 since folded */
	unsigned nvec;			/* vectors in vec */
	__m512i vec[16];
};

_Static_assert(sizeof(struct avx512_state) <= sizeof(((struct simhash_acc *)0)->kstate),
    "kstate too small");

AVX512 static void
avx512_normalize(uint8_t *dst, const uint8_t *src, size_t n)
{
	__m512i lo = _mm512_loadu_si512(simhash_norm);
	__m512i hi = _mm512_loadu_si512(simhash_norm + 64);
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

/* Adds the byte counters to cnt, with weight w, and clears them. */
AVX512 static void
avx512_flush_bytes(uint64_t cnt[64], __m512i *c8, uint64_t w)
{
	uint8_t b[64] __attribute__((aligned(64)));
	__m512i v, wv = _mm512_set1_epi64((long long)w);
	int k;

	_mm512_store_si512(b, *c8);
	for (k = 0; k < 8; k++) {
		v = _mm512_cvtepu8_epi64(_mm_loadl_epi64((const void *)(b +
		    8 * k)));
		v = _mm512_add_epi64(_mm512_loadu_si512(cnt + 8 * k),
		    _mm512_mullo_epi64(v, wv));
		_mm512_storeu_si512(cnt + 8 * k, v);
	}
	*c8 = _mm512_setzero_si512();
}

/* Adds the bits of the 8 lanes of v to byte counters. */
AVX512 static inline __m512i
avx512_count8(__m512i c8, __m512i v)
{
	uint64_t h[8] __attribute__((aligned(64)));
	const __m512i m1 = _mm512_set1_epi8(-1);
	int j;

	_mm512_store_si512(h, v);
	for (j = 0; j < 8; j++)
		c8 = _mm512_mask_sub_epi8(c8, _cvtu64_mask64(h[j]), c8, m1);
	return c8;
}

/* Full adder on bit vectors: s = a ^ b ^ c, returns the carry. */
#define CSA(s, a, b, c) do {						\
	__m512i a_ = (a), b_ = (b), c_ = (c);				\
	(s) = _mm512_ternarylogic_epi64(a_, b_, c_, 0x96);		\
	carry_ = _mm512_ternarylogic_epi64(a_, b_, c_, 0xe8);		\
} while (0)

/* Folds 16 vectors into the carry-save counters (Harley-Seal). */
AVX512 static void
avx512_csa16(struct avx512_state *st, uint64_t cnt[64])
{
	__m512i carry_, twosA, twosB, foursA, foursB, eightsA, eightsB, c16;
	__m512i *v = st->vec;

	CSA(st->w1, st->w1, v[0], v[1]);
	twosA = carry_;
	CSA(st->w1, st->w1, v[2], v[3]);
	twosB = carry_;
	CSA(st->w2, st->w2, twosA, twosB);
	foursA = carry_;
	CSA(st->w1, st->w1, v[4], v[5]);
	twosA = carry_;
	CSA(st->w1, st->w1, v[6], v[7]);
	twosB = carry_;
	CSA(st->w2, st->w2, twosA, twosB);
	foursB = carry_;
	CSA(st->w4, st->w4, foursA, foursB);
	eightsA = carry_;
	CSA(st->w1, st->w1, v[8], v[9]);
	twosA = carry_;
	CSA(st->w1, st->w1, v[10], v[11]);
	twosB = carry_;
	CSA(st->w2, st->w2, twosA, twosB);
	foursA = carry_;
	CSA(st->w1, st->w1, v[12], v[13]);
	twosA = carry_;
	CSA(st->w1, st->w1, v[14], v[15]);
	twosB = carry_;
	CSA(st->w2, st->w2, twosA, twosB);
	foursB = carry_;
	CSA(st->w4, st->w4, foursA, foursB);
	eightsB = carry_;
	CSA(st->w8, st->w8, eightsA, eightsB);
	c16 = carry_;
	st->c16 = avx512_count8(st->c16, c16);
	st->nvec = 0;
	/* Each round adds at most 8 to a byte counter. */
	if (++st->n16 == 31) {
		avx512_flush_bytes(cnt, &st->c16, 16);
		st->n16 = 0;
	}
}

/* Adds everything the carry-save state holds to acc->cnt. */
AVX512 static void
avx512_fold(struct simhash_acc *acc)
{
	struct avx512_state *st = (struct avx512_state *)acc->kstate;
	__m512i c8 = _mm512_setzero_si512();
	unsigned i;

	avx512_flush_bytes(acc->cnt, &st->c16, 16);
	c8 = avx512_count8(c8, st->w8);
	avx512_flush_bytes(acc->cnt, &c8, 8);
	c8 = avx512_count8(c8, st->w4);
	avx512_flush_bytes(acc->cnt, &c8, 4);
	c8 = avx512_count8(c8, st->w2);
	avx512_flush_bytes(acc->cnt, &c8, 2);
	c8 = avx512_count8(c8, st->w1);
	for (i = 0; i < st->nvec; i++)
		c8 = avx512_count8(c8, st->vec[i]);
	avx512_flush_bytes(acc->cnt, &c8, 1);
	acc->kstate_used = 0;
}

AVX512 static struct avx512_state *
avx512_state(struct simhash_acc *acc)
{
	struct avx512_state *st = (struct avx512_state *)acc->kstate;

	if (!acc->kstate_used) {
		st->w1 = st->w2 = st->w4 = st->w8 = st->c16 =
		    _mm512_setzero_si512();
		st->n16 = 0;
		st->nvec = 0;
		acc->kstate_used = 1;
	}
	return st;
}

/*
 * a * k mod 2^64 with vpmuludq: a shorter latency than vpmullq's, which
 * keeps more iterations in flight.
 */
AVX512 static inline __m512i
avx512_mul64(__m512i a, uint64_t k)
{
	const __m512i klo = _mm512_set1_epi64((long long)(k & 0xffffffff));
	const __m512i khi = _mm512_set1_epi64((long long)(k >> 32));
	__m512i cross;

	cross = _mm512_add_epi64(_mm512_mul_epu32(a, khi),
	    _mm512_mul_epu32(_mm512_srli_epi64(a, 32), klo));
	return _mm512_add_epi64(_mm512_mul_epu32(a, klo),
	    _mm512_slli_epi64(cross, 32));
}

AVX512 static inline __m512i
avx512_fmix(__m512i h)
{
	h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
	h = avx512_mul64(h, 0xff51afd7ed558ccdULL);
	h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
	h = avx512_mul64(h, 0xc4ceb9fe1a85ec53ULL);
	return _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
}

/* Terms tokenized at a time: 16 blocks of 64 bytes, at most 32 each. */
#define AVX512_CHUNK_BLOCKS 8
#define AVX512_CHUNK_TERMS (AVX512_CHUNK_BLOCKS * 32)

/* What one chunk of terms needs; in the scratch's stage area. */
struct avx512_chunk {
	uint64_t wlo[AVX512_CHUNK_TERMS + 32];	/* bytes e-8..e-1 */
	uint64_t whi[AVX512_CHUNK_TERMS + 32];	/* bytes e-16..e-9 */
	uint32_t end[AVX512_CHUNK_TERMS + 32];	/* e, from p */
	/* Terms of 8 bytes or more, compacted: their second words, ... */
	uint64_t lhi[AVX512_CHUNK_TERMS + 8];
	/* ... then their weighted hashes and stop-word keys. */
	uint64_t lh[AVX512_CHUNK_TERMS + 8];
	uint64_t lkey[AVX512_CHUNK_TERMS + 8];
	uint64_t h[AVX512_CHUNK_TERMS];		/* sdbm of the last 8 bytes */
	uint64_t klo[AVX512_CHUNK_TERMS];	/* stop-word keys, low word */
	uint8_t longm[AVX512_CHUNK_TERMS / 8];	/* lanes of 8+ bytes */
	uint16_t loff[AVX512_CHUNK_TERMS / 8];	/* their index in lhi */
};

_Static_assert(sizeof(struct avx512_chunk) <= SIMHASH_STAGE_SIZE,
    "stage too small");

/*
 * The sdbm hash of 8 lanes of 8 bytes (bytes before the term zeroed), as
 * the sum of b[k] * 65599^(7 - k + shift), shift 0 or 8.  Byte pairs are
 * combined by vpmaddubsw (63 * b0 + b1, plus b0 << 16, is b0 * 65599 + b1)
 * and interleaved into 32-bit digits; each digit is multiplied by its power
 * of 65599 with two vpmuludq, by the low and the high 32 bits of the power
 * (simhash_pow[] in simhash.c, written out here as constants).  KQ(x, y):
 * x in the even qwords, y in the odd ones.
 */
#define KQ(x, y) _mm512_set_epi64(y, x, y, x, y, x, y, x)
#define AVX512_POLY8(name, e_lo, e_hi, o_lo, o_hi)			\
AVX512 static inline __m512i						\
name(__m512i w)								\
{									\
	__m512i x, y, l, h, lo, hi;					\
									\
	x = _mm512_maddubs_epi16(w, _mm512_set1_epi16(0x013f));	\
	y = _mm512_and_si512(w, _mm512_set1_epi16(0x00ff));		\
	l = _mm512_unpacklo_epi16(x, y);	/* even lanes: d0 d1 | d2 d3 */ \
	h = _mm512_unpackhi_epi16(x, y);	/* odd lanes */		\
	lo = _mm512_add_epi64(_mm512_mul_epu32(l, e_lo),		\
	    _mm512_mul_epu32(_mm512_srli_epi64(l, 32), o_lo));		\
	hi = _mm512_add_epi64(_mm512_mul_epu32(l, e_hi),		\
	    _mm512_mul_epu32(_mm512_srli_epi64(l, 32), o_hi));		\
	l = _mm512_add_epi64(lo, _mm512_slli_epi64(hi, 32));		\
	l = _mm512_add_epi64(l, _mm512_shuffle_epi32(l, _MM_PERM_BADC)); \
	lo = _mm512_add_epi64(_mm512_mul_epu32(h, e_lo),		\
	    _mm512_mul_epu32(_mm512_srli_epi64(h, 32), o_lo));		\
	hi = _mm512_add_epi64(_mm512_mul_epu32(h, e_hi),		\
	    _mm512_mul_epu32(_mm512_srli_epi64(h, 32), o_hi));		\
	h = _mm512_add_epi64(lo, _mm512_slli_epi64(hi, 32));		\
	h = _mm512_add_epi64(h, _mm512_shuffle_epi32(h, _MM_PERM_BADC)); \
	return _mm512_mask_blend_epi64(0xaa, l, h);			\
}
/* Digits d0, d2 weigh 65599^6, ^2; d1, d3 weigh ^4, ^0. */
AVX512_POLY8(avx512_poly8_lo, KQ(0xd62aee81, 0x007e0f81),
    KQ(0x5d02f409, 0x1), KQ(0x43ec5f01, 0x1), KQ(0x00fc5d15, 0x0))
/* The same times 65599^8: ^14, ^10 and ^12, ^8. */
AVX512_POLY8(avx512_poly8_hi, KQ(0x50c7ac81, 0x6698cd81),
    KQ(0xa0320d66, 0xf2d7b418), KQ(0xcc881d01, 0xd319be01),
    KQ(0x0cda7b04, 0xfdcbe423))
#undef KQ

/* For each lane, the bytes after its last SPACE (all if none). */
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
 * Tokenizes blocks of p from b (a SPACE or the first byte after one) to t
 * (the last SPACE): for each term end (a SPACE after a term byte), the two
 * words before it are picked out of the current and previous blocks with
 * vpermi2b.  Stops after AVX512_CHUNK_BLOCKS blocks; returns the number of
 * terms and updates *bp, *prev and *carry.
 */
AVX512 static size_t
avx512_tokenize(const uint8_t *p, size_t *bp, size_t t, __m512i *prev,
    uint64_t *carry, struct avx512_chunk *ck)
{
	const __m512i sp = _mm512_set1_epi8(' ');
	const __m512i iota = _mm512_set_epi8(63, 62, 61, 60, 59, 58, 57, 56,
	    55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40,
	    39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24,
	    23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7,
	    6, 5, 4, 3, 2, 1, 0);
	/* Byte k of lane j: end j, then + 56 + k, i.e. e - 8 + k + 64. */
	const __m512i bcast = _mm512_set_epi64(0x0707070707070707LL,
	    0x0606060606060606LL, 0x0505050505050505LL,
	    0x0404040404040404LL, 0x0303030303030303LL,
	    0x0202020202020202LL, 0x0101010101010101LL, 0);
	const __m512i off = _mm512_set1_epi64(0x3f3e3d3c3b3a3938LL);
	const __m512i eight = _mm512_set1_epi8(8);
	size_t b = *bp, n = 0, k;
	uint64_t m, spm, em;
	__m512i cur, pos, idx;
	unsigned cnt, r;

	for (k = 0; k < AVX512_CHUNK_BLOCKS && b <= t; k++, b += 64) {
		m = t + 1 - b >= 64 ? ~0ULL : _bzhi_u64(~0ULL,
		    (unsigned)(t + 1 - b));
		cur = _mm512_maskz_loadu_epi8(m, p + b);
		spm = _mm512_mask_cmpeq_epi8_mask(m, cur, sp);
		em = spm & ~((spm << 1) | *carry);
		*carry = spm >> 63;
		cnt = (unsigned)_mm_popcnt_u64(em);
		pos = _mm512_maskz_compress_epi8(em, iota);
		_mm512_storeu_si512(ck->end + n, _mm512_add_epi32(
		    _mm512_cvtepu8_epi32(_mm512_castsi512_si128(pos)),
		    _mm512_set1_epi32((int)b)));
		for (r = 0; r < cnt; r += 8) {
			if (r == 16)
				_mm512_storeu_si512(ck->end + n + 16,
				    _mm512_add_epi32(_mm512_cvtepu8_epi32(
				    _mm512_extracti32x4_epi32(pos, 1)),
				    _mm512_set1_epi32((int)b)));
			idx = _mm512_add_epi8(_mm512_permutexvar_epi8(
			    _mm512_add_epi8(bcast, _mm512_set1_epi8((char)r)),
			    pos), off);
			_mm512_storeu_si512(ck->wlo + n + r,
			    _mm512_permutex2var_epi8(*prev, idx, cur));
			_mm512_storeu_si512(ck->whi + n + r,
			    _mm512_permutex2var_epi8(*prev, _mm512_sub_epi8(idx,
			    eight), cur));
		}
		n += cnt;
		*prev = cur;
	}
	*bp = b;
	return n;
}

/* A term the vector path left aside, ending at e: the scalar way. */
static void
avx512_long_term(struct simhash_acc *acc, const uint8_t *p, size_t e)
{
	size_t b = e;
	uint64_t h = 0;

	while (p[b - 1] != ' ')
		b--;
	for (size_t i = b; i < e; i++)
		h = h * SIMHASH_SDBM_MULT + p[i];
	simhash_acc_term(acc, h, p + b, e - b);
}

/* Whether the term ending at e is a stop word (lists too large for the
 * table). */
static int
avx512_stop_slow(const struct simhash *sh, const uint8_t *p, size_t e)
{
	size_t b = e;

	while (p[b - 1] != ' ')
		b--;
	return stopwords_contains(sh->sw, p + b, e - b);
}

/*
 * Hashes, filters and counts the n terms of a chunk, in passes of
 * independent iterations with short dependency chains (which keeps the
 * out-of-order window full):
 *  1. the sdbm of each term's last 8 bytes; terms of 8 bytes or more (no
 *     SPACE in those bytes) have their second word compacted;
 *  2. the second words' share of the hash (65599^8 times theirs);
 *  3. both added, stop words, fmix64, counting.
 * Terms of 16 bytes or more go the scalar way.
 */
AVX512 static void
avx512_terms(struct simhash_acc *acc, const uint8_t *p,
    struct avx512_chunk *ck, size_t n)
{
	const struct simhash *sh = acc->sh;
	const struct simhash_stoptab *tab = &sh->tab;
	struct avx512_state *st = avx512_state(acc);
	const __m512i spaces = _mm512_set1_epi8(' ');
	const __m512i low8 = _mm512_set1_epi64(0xff);
	const __m128i shift = _mm_cvtsi32_si128((int)tab->shift);
	int stop = acc->stop, fast_stop = acc->stop && sh->have_tab;
	int fmix = acc->fmix;
	size_t g, ng = (n + 7) / 8, nl = 0, j;
	uint64_t nterms = 0;

	for (g = 0; g < ng; g++) {
		__m512i w = _mm512_loadu_si512(ck->wlo + 8 * g), keep;
		__mmask8 valid = (__mmask8)_bzhi_u32(0xff,
		    (unsigned)(n - 8 * g)), has;
		__mmask8 lm;

		keep = avx512_keep(w, &has);
		_mm512_storeu_si512(ck->h + 8 * g, avx512_poly8_lo(
		    _mm512_and_si512(w, keep)));
		if (stop)
			_mm512_storeu_si512(ck->klo + 8 * g,
			    _mm512_ternarylogic_epi64(keep, w, spaces, 0xca));
		lm = valid & ~has;
		ck->longm[g] = lm;
		ck->loff[g] = (uint16_t)nl;
		_mm512_storeu_si512(ck->lhi + nl, _mm512_maskz_compress_epi64(lm,
		    _mm512_loadu_si512(ck->whi + 8 * g)));
		nl += (size_t)_mm_popcnt_u32(lm);
	}
	for (g = 0; g < nl; g += 8) {
		__m512i w = _mm512_loadu_si512(ck->lhi + g), keep;
		__mmask8 has;

		keep = avx512_keep(w, &has);
		_mm512_storeu_si512(ck->lh + g, avx512_poly8_hi(
		    _mm512_and_si512(w, keep)));
		_mm512_storeu_si512(ck->lkey + g, _mm512_ternarylogic_epi64(
		    keep, w, spaces, 0xca));
	}
	for (g = 0; g < ng; g++) {
		__mmask8 valid = (__mmask8)_bzhi_u32(0xff,
		    (unsigned)(n - 8 * g)), lm = ck->longm[g], vlong, cm;
		__m512i h, khi;

		h = _mm512_add_epi64(_mm512_loadu_si512(ck->h + 8 * g),
		    _mm512_maskz_expandloadu_epi64(lm, ck->lh + ck->loff[g]));
		khi = _mm512_mask_expandloadu_epi64(spaces, lm,
		    ck->lkey + ck->loff[g]);
		/* 16 bytes or more: no SPACE padding in the first byte. */
		vlong = _mm512_mask_cmpneq_epi64_mask(lm, _mm512_and_si512(khi,
		    low8), _mm512_set1_epi64(' '));
		cm = valid & ~vlong;
		if (fast_stop) {
			__m512i slot = _mm512_srl_epi64(avx512_mul64(h,
			    tab->mul), shift);
			__m512i tlo = _mm512_mask_i64gather_epi64(spaces, cm,
			    slot, tab->lo, 8);
			__m512i thi = _mm512_mask_i64gather_epi64(spaces, cm,
			    slot, tab->hi, 8);

			cm &= ~(_mm512_cmpeq_epi64_mask(tlo,
			    _mm512_loadu_si512(ck->klo + 8 * g)) &
			    _mm512_cmpeq_epi64_mask(thi, khi));
		} else if (stop) {
			for (j = 0; j < 8; j++)
				if ((cm >> j & 1) && avx512_stop_slow(sh, p,
				    ck->end[8 * g + j]))
					cm &= (__mmask8)~(1u << j);
		}
		if (fmix)
			h = avx512_fmix(h);
		nterms += (uint64_t)_mm_popcnt_u32(cm);
		st->vec[st->nvec++] = _mm512_maskz_mov_epi64(cm, h);
		if (st->nvec == 16)
			avx512_csa16(st, acc->cnt);
		while (vlong) {
			j = (size_t)__builtin_ctz(vlong);
			vlong &= (__mmask8)(vlong - 1);
			avx512_long_term(acc, p, ck->end[8 * g + j]);
		}
	}
	acc->nterms += nterms;
}

AVX512 static void
avx512_run(struct simhash_acc *acc, struct simhash_scratch *sc,
    const uint8_t *p, size_t n, size_t before)
{
	struct avx512_chunk *ck = (struct avx512_chunk *)sc->stage;
	size_t lo0 = before >= 16 ? 0 : 16 - before, s, t, b, nt;
	uint64_t carry = 1;
	const uint8_t *q;
	__m512i prev;

	/* The first SPACE from which 16 bytes back are readable. */
	if (n <= lo0 || (q = memchr(p + lo0, ' ', n - lo0)) == NULL) {
		simhash_scalar_run(acc, p, n);
		return;
	}
	s = (size_t)(q - p);
	t = (size_t)((const uint8_t *)memrchr(p + s, ' ', n - s) - p);
	simhash_scalar_run(acc, p, s + 1);
	/* The 64 bytes before s, as far as they are readable. */
	prev = _mm512_maskz_loadu_epi8(s + before >= 64 ? ~0ULL :
	    ~0ULL << (64 - s - before), p + s - 64);
	for (b = s; b <= t;)
		if ((nt = avx512_tokenize(p, &b, t, &prev, &carry, ck)) > 0)
			avx512_terms(acc, p, ck, nt);
	simhash_scalar_run(acc, p + t + 1, n - t - 1);
}

const struct simhash_kernel simhash_kernel_avx512 = {
	.level = SIMHASH_SIMD_AVX512,
	.normalize = avx512_normalize,
	.run = avx512_run,
	.fold = avx512_fold,
};

#else

const struct simhash_kernel simhash_kernel_avx512 = {
	.level = SIMHASH_SIMD_AVX512,
	.normalize = NULL,
	.run = NULL,
	.fold = NULL,
};

#endif
