/*
 * simhash_avx2: the AVX2 kernel (with BMI2 and POPCNT: Haswell and
 * later).  The same frame as the AVX-512 kernel (simhash_avx512.c), with
 * what AVX2 lacks done otherwise:
 *
 *  Tokenize.  32 bytes at a time, SPACE mask by vpmovmskb; the term ends
 *    are picked off the mask with tzcnt, and each term's two words (the 8
 *    bytes before its end and the 8 before those) are read with scalar
 *    loads into arrays.
 *  Pass 1.  4 terms per register: bytes up to each lane's last SPACE are
 *    cleared (the SPACE mask smeared downwards by shifts), and the hash of
 *    the last 8 bytes computed as in the AVX-512 kernel (vpmaddubsw, then
 *    32-bit digits times powers of 65599 by vpmuludq).  Terms of 8 bytes
 *    or more are listed.
 *  Pass 2.  Their second words' share of the hash.
 *  Pass 3.  Stop words (vpgatherqq from the perfect hash table), fmix64,
 *    and counting: byte counters per bit position, 8 registers, each adding
 *    bits k, k+8, ... of 4 hashes at a time; emptied into 64-bit counters
 *    every 255 additions.
 * Terms of 16 bytes or more go the scalar way.
 */
#include "simhash_impl.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,bmi,bmi2,popcnt")))

/* Terms handled at a time (a block of 32 bytes has at most 16). */
#define AVX2_CHUNK_TERMS 256

struct avx2_chunk {
	uint64_t wlo[AVX2_CHUNK_TERMS + 16];
	uint64_t whi[AVX2_CHUNK_TERMS + 16];
	uint32_t end[AVX2_CHUNK_TERMS + 16];
	uint64_t h[AVX2_CHUNK_TERMS + 8];
	uint64_t klo[AVX2_CHUNK_TERMS + 8];
	uint64_t khi[AVX2_CHUNK_TERMS + 8];
	uint64_t lhi[AVX2_CHUNK_TERMS + 8];
	uint32_t lidx[AVX2_CHUNK_TERMS + 8];
	uint8_t vlong[AVX2_CHUNK_TERMS / 4 + 2];	/* per 4 terms */
	uint8_t longm[AVX2_CHUNK_TERMS / 4 + 2];
};

_Static_assert(sizeof(struct avx2_chunk) <= SIMHASH_STAGE_SIZE,
    "stage area too small");

/* Byte counters kept in acc->kstate. */
struct avx2_state {
	__m256i c[8];		/* c[k] byte j of lane l: bit 8j + k */
	unsigned n;		/* additions since emptied */
};

_Static_assert(sizeof(struct avx2_state) <=
    sizeof(((struct simhash_acc *)0)->kstate), "kstate too small");

AVX2 static void
avx2_normalize(uint8_t *dst, const uint8_t *src, size_t n)
{
	const __m256i sp = _mm256_set1_epi8(' ');
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(src + i));
		__m256i x, sep, up;

		/*
		 * Separators: 0x09-0x0d, 0x20-0x2f, 0x3a-0x40, 0x5b-0x60,
		 * 0x7b-0x7e.  Signed compares suffice: bytes from 0x80 are
		 * negative and fall in none of the ranges.
		 */
#define IN(lo, hi) _mm256_and_si256(					\
	_mm256_cmpgt_epi8(v, _mm256_set1_epi8((char)((lo) - 1))),	\
	_mm256_cmpgt_epi8(_mm256_set1_epi8((char)((hi) + 1)), v))
		sep = _mm256_or_si256(_mm256_or_si256(IN(0x09, 0x0d),
		    IN(0x20, 0x2f)), _mm256_or_si256(_mm256_or_si256(
		    IN(0x3a, 0x40), IN(0x5b, 0x60)), IN(0x7b, 0x7e)));
		up = IN('A', 'Z');
#undef IN
		x = _mm256_add_epi8(v, _mm256_and_si256(up,
		    _mm256_set1_epi8(0x20)));
		_mm256_storeu_si256((__m256i *)(dst + i),
		    _mm256_blendv_epi8(x, sp, sep));
	}
	for (; i < n; i++)
		dst[i] = simhash_norm[src[i]];
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
		st->n = 0;
		acc->kstate_used = 1;
	}
	return st;
}

/* Adds the byte counters to cnt and clears them. */
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
	st->n = 0;
}

/* Adds the bits of 4 hashes. */
AVX2 static inline void
avx2_count4(struct avx2_state *st, struct simhash_acc *acc, __m256i h)
{
	const __m256i ones = _mm256_set1_epi8(1);

	st->c[0] = _mm256_add_epi8(st->c[0], _mm256_and_si256(h, ones));
	st->c[1] = _mm256_add_epi8(st->c[1], _mm256_and_si256(
	    _mm256_srli_epi64(h, 1), ones));
	st->c[2] = _mm256_add_epi8(st->c[2], _mm256_and_si256(
	    _mm256_srli_epi64(h, 2), ones));
	st->c[3] = _mm256_add_epi8(st->c[3], _mm256_and_si256(
	    _mm256_srli_epi64(h, 3), ones));
	st->c[4] = _mm256_add_epi8(st->c[4], _mm256_and_si256(
	    _mm256_srli_epi64(h, 4), ones));
	st->c[5] = _mm256_add_epi8(st->c[5], _mm256_and_si256(
	    _mm256_srli_epi64(h, 5), ones));
	st->c[6] = _mm256_add_epi8(st->c[6], _mm256_and_si256(
	    _mm256_srli_epi64(h, 6), ones));
	st->c[7] = _mm256_add_epi8(st->c[7], _mm256_and_si256(
	    _mm256_srli_epi64(h, 7), ones));
	if (++st->n == 255)
		avx2_empty(st, acc);
}

AVX2 static void
avx2_count(struct simhash_acc *acc, const uint64_t *h, size_t n)
{
	struct avx2_state *st = avx2_state(acc);
	uint64_t v[4] __attribute__((aligned(32)));
	size_t i, j;

	for (i = 0; i < n; i += 4) {
		for (j = 0; j < 4; j++)
			v[j] = i + j < n ? h[i + j] : 0;
		avx2_count4(st, acc, _mm256_load_si256((const __m256i *)v));
	}
}

AVX2 static uint64_t
avx2_finish(struct simhash_acc *acc)
{
	avx2_empty(avx2_state(acc), acc);
	return simhash_finish_scalar(acc);
}

/* a * k mod 2^64 with vpmuludq. */
AVX2 static inline __m256i
avx2_mul64(__m256i a, uint64_t k)
{
	const __m256i klo = _mm256_set1_epi64x((long long)(k & 0xffffffff));
	const __m256i khi = _mm256_set1_epi64x((long long)(k >> 32));
	__m256i cross;

	cross = _mm256_add_epi64(_mm256_mul_epu32(a, khi),
	    _mm256_mul_epu32(_mm256_srli_epi64(a, 32), klo));
	return _mm256_add_epi64(_mm256_mul_epu32(a, klo),
	    _mm256_slli_epi64(cross, 32));
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

/* The sdbm polynomial of 4 lanes of 8 bytes; see simhash_avx512.c. */
#define KQ(x, y) _mm256_set_epi64x(y, x, y, x)
#define AVX2_POLY8(name, e_lo, e_hi, o_lo, o_hi)			\
AVX2 static inline __m256i						\
name(__m256i w)								\
{									\
	__m256i x, y, l, h, lo, hi;					\
									\
	x = _mm256_maddubs_epi16(w, _mm256_set1_epi16(0x013f));	\
	y = _mm256_and_si256(w, _mm256_set1_epi16(0x00ff));		\
	l = _mm256_unpacklo_epi16(x, y);				\
	h = _mm256_unpackhi_epi16(x, y);				\
	lo = _mm256_add_epi64(_mm256_mul_epu32(l, e_lo),		\
	    _mm256_mul_epu32(_mm256_srli_epi64(l, 32), o_lo));		\
	hi = _mm256_add_epi64(_mm256_mul_epu32(l, e_hi),		\
	    _mm256_mul_epu32(_mm256_srli_epi64(l, 32), o_hi));		\
	l = _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32));		\
	lo = _mm256_add_epi64(_mm256_mul_epu32(h, e_lo),		\
	    _mm256_mul_epu32(_mm256_srli_epi64(h, 32), o_lo));		\
	hi = _mm256_add_epi64(_mm256_mul_epu32(h, e_hi),		\
	    _mm256_mul_epu32(_mm256_srli_epi64(h, 32), o_hi));		\
	h = _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32));		\
	return _mm256_add_epi64(_mm256_unpacklo_epi64(l, h),		\
	    _mm256_unpackhi_epi64(l, h));				\
}
AVX2_POLY8(avx2_poly8_lo, KQ(0xd62aee81, 0x007e0f81),
    KQ(0x5d02f409, 0x1), KQ(0x43ec5f01, 0x1), KQ(0x00fc5d15, 0x0))
AVX2_POLY8(avx2_poly8_hi, KQ(0x50c7ac81, 0x6698cd81),
    KQ(0xa0320d66, 0xf2d7b418), KQ(0xcc881d01, 0xd319be01),
    KQ(0x0cda7b04, 0xfdcbe423))
#undef KQ

/*
 * For each lane, a mask of the bytes after its last SPACE (all if none);
 * *nospace gets the lanes without SPACE as a 4-bit mask.
 */
AVX2 static inline __m256i
avx2_keep(__m256i w, unsigned *nospace)
{
	__m256i m = _mm256_cmpeq_epi8(w, _mm256_set1_epi8(' '));

	m = _mm256_or_si256(m, _mm256_srli_epi64(m, 8));
	m = _mm256_or_si256(m, _mm256_srli_epi64(m, 16));
	m = _mm256_or_si256(m, _mm256_srli_epi64(m, 32));
	*nospace = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(
	    _mm256_cmpeq_epi64(m, _mm256_setzero_si256())));
	return _mm256_xor_si256(m, _mm256_set1_epi64x(-1));
}

/* A term left to the scalar way, ending at e and starting at lo or after. */
static void
avx2_long_term(struct simhash_acc *acc, const uint8_t *p, size_t lo,
    size_t e)
{
	size_t b = e;
	uint64_t h = 0;

	while (b > lo && p[b - 1] != ' ')
		b--;
	for (size_t i = b; i < e; i++)
		h = h * SIMHASH_SDBM_MULT + p[i];
	simhash_acc_term(acc, h, p + b, e - b);
}

static int
avx2_stop_slow(const struct simhash *sh, const uint8_t *p, size_t lo,
    size_t e)
{
	size_t b = e;

	while (b > lo && p[b - 1] != ' ')
		b--;
	return stopwords_contains(sh->sw, p + b, e - b);
}

/* Hashes, filters and counts the n terms of a chunk. */
AVX2 static void
avx2_terms(struct simhash_acc *acc, const uint8_t *p, size_t lo,
    struct avx2_chunk *ck, size_t n)
{
	const struct simhash *sh = acc->sh;
	const struct simhash_stoptab *tab = &sh->tab;
	struct avx2_state *st = avx2_state(acc);
	const __m256i spaces = _mm256_set1_epi8(' ');
	const __m256i mul = _mm256_set1_epi64x(tab->mul);
	const __m256i slotmask = _mm256_set1_epi64x(((long long)1 <<
	    tab->bits) - 1);
	const __m128i shift = _mm_cvtsi32_si128((int)tab->shift);
	int stop = acc->stop, fast_stop = acc->stop && sh->have_tab;
	int fmix = acc->fmix;
	size_t g, ng = (n + 3) / 4, nl = 0, j, k;
	uint64_t nterms = 0;
	unsigned nospace, valid, cm, lm, vl;

	for (g = 0; g < ng; g++) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(ck->wlo +
		    4 * g)), keep;

		valid = simhash_lanes(n - 4 * g, 4);
		keep = avx2_keep(w, &nospace);
		_mm256_storeu_si256((__m256i *)(ck->h + 4 * g),
		    avx2_poly8_lo(_mm256_and_si256(w, keep)));
		if (stop) {
			_mm256_storeu_si256((__m256i *)(ck->klo + 4 * g),
			    _mm256_or_si256(_mm256_and_si256(keep, w),
			    _mm256_andnot_si256(keep, spaces)));
			_mm256_storeu_si256((__m256i *)(ck->khi + 4 * g),
			    spaces);
		}
		lm = nospace & valid;
		ck->longm[g] = (uint8_t)lm;
		ck->vlong[g] = 0;
		while (lm) {
			j = (size_t)__builtin_ctz(lm);
			lm &= lm - 1;
			ck->lhi[nl] = ck->whi[4 * g + j];
			ck->lidx[nl++] = (uint32_t)(4 * g + j);
		}
	}
	for (g = 0; g < nl; g += 4) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(ck->lhi + g)),
		    keep;
		uint64_t hh[4] __attribute__((aligned(32)));
		uint64_t key[4] __attribute__((aligned(32)));

		keep = avx2_keep(w, &nospace);
		_mm256_store_si256((__m256i *)hh, avx2_poly8_hi(
		    _mm256_and_si256(w, keep)));
		_mm256_store_si256((__m256i *)key, _mm256_or_si256(
		    _mm256_and_si256(keep, w), _mm256_andnot_si256(keep,
		    spaces)));
		for (j = 0; j < 4 && g + j < nl; j++) {
			k = ck->lidx[g + j];
			ck->h[k] += hh[j];
			ck->khi[k] = key[j];
			if (nospace >> j & 1)
				ck->vlong[k / 4] |= (uint8_t)(1u << (k % 4));
		}
	}
	for (g = 0; g < ng; g++) {
		__m256i h = _mm256_loadu_si256((const __m256i *)(ck->h + 4 * g));

		valid = simhash_lanes(n - 4 * g, 4);
		vl = ck->vlong[g];
		cm = valid & ~vl;
		if (fast_stop) {
			__m256i slot = _mm256_and_si256(_mm256_srl_epi64(
			    _mm256_mul_epu32(h, mul), shift), slotmask);
			__m256i eq = _mm256_cmpeq_epi64(_mm256_i64gather_epi64(
			    (const long long *)tab->lo, slot, 8),
			    _mm256_loadu_si256((const __m256i *)(ck->klo +
			    4 * g)));
			unsigned em = (unsigned)_mm256_movemask_pd(
			    _mm256_castsi256_pd(eq)) & cm;
			unsigned leq = em & ck->longm[g];

			if (leq)
				em &= ~leq | (unsigned)_mm256_movemask_pd(
				    _mm256_castsi256_pd(_mm256_cmpeq_epi64(
				    _mm256_i64gather_epi64(
				    (const long long *)tab->hi, slot, 8),
				    _mm256_loadu_si256((const __m256i *)
				    (ck->khi + 4 * g)))));
			cm &= ~em;
		} else if (stop) {
			for (j = 0; j < 4; j++)
				if ((cm >> j & 1) && avx2_stop_slow(sh, p, lo,
				    ck->end[4 * g + j]))
					cm &= ~(1u << j);
		}
		if (fmix)
			h = avx2_fmix(h);
		nterms += (uint64_t)__builtin_popcount(cm);
		/* Lanes not counted become 0, which adds nothing. */
		h = _mm256_and_si256(h, _mm256_set_epi64x(
		    -(long long)(cm >> 3 & 1), -(long long)(cm >> 2 & 1),
		    -(long long)(cm >> 1 & 1), -(long long)(cm & 1)));
		avx2_count4(st, acc, h);
		while (vl) {
			j = (size_t)__builtin_ctz(vl);
			vl &= vl - 1;
			avx2_long_term(acc, p, lo, ck->end[4 * g + j]);
		}
	}
	acc->nterms += nterms;
}

AVX2 static void
avx2_run(struct simhash_acc *acc, struct simhash_scratch *sc,
    const uint8_t *p, size_t n, size_t before, int final)
{
	struct avx2_chunk *ck = (struct avx2_chunk *)sc->stage;
	const __m256i sp = _mm256_set1_epi8(' ');
	size_t lo = before >= 16 ? 0 : 16 - before, s, t, b, nt = 0, e;
	uint8_t tail[32];
	uint32_t spm, em, carry = 1;
	unsigned cnt, r;
	const uint8_t *q;
	__m256i v;

	if (n == 0)
		return;
	/*
	 * The scalar way up to the first SPACE from which 16 bytes back are
	 * readable; the carried term ends there too.
	 */
	if (n <= lo || (q = memchr(p + lo, ' ', n - lo)) == NULL) {
		simhash_scalar_run(acc, p, n);
		return;
	}
	s = (size_t)(q - p);
	simhash_scalar_run(acc, p, s + 1);
	if (final)
		t = n;		/* the end of the document ends a term */
	else
		t = (size_t)((const uint8_t *)memrchr(p + s, ' ', n - s) - p);
	for (b = s; b <= t; b += 32) {
		if (n - b >= 32)
			v = _mm256_loadu_si256((const __m256i *)(p + b));
		else {
			memset(tail, ' ', sizeof(tail));
			memcpy(tail, p + b, n - b);
			v = _mm256_loadu_si256((const __m256i *)tail);
		}
		spm = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, sp));
		if (t + 1 - b < 32)
			spm &= (uint32_t)_bzhi_u32(~0u, (unsigned)(t + 1 - b));
		em = spm & ~((spm << 1) | carry);
		carry = spm >> 31;
		/*
		 * Eight ends without a branch to mispredict (an exhausted mask
		 * gives b, whose bytes are readable; the slot is then unused),
		 * eight more in the rare blocks that have them.
		 */
		cnt = (unsigned)__builtin_popcount(em);
		for (r = 0; r < (cnt > 8 ? 16u : 8u); r++) {
			e = b + (_tzcnt_u32(em) & 31);
			em = _blsr_u32(em);
			memcpy(&ck->wlo[nt + r], p + e - 8, 8);
			memcpy(&ck->whi[nt + r], p + e - 16, 8);
			ck->end[nt + r] = (uint32_t)e;
		}
		nt += cnt;
		if (nt > AVX2_CHUNK_TERMS - 16) {
			avx2_terms(acc, p, s, ck, nt);
			nt = 0;
		}
	}
	if (nt > 0)
		avx2_terms(acc, p, s, ck, nt);
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
