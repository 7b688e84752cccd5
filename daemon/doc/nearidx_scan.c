/*
 * nearidx_scan: bucket scans for the near-duplicate index.  See
 * nearidx_scan.h.
 *
 * The 32-bit words decide almost everything: an unrelated entry is within
 * distance 3 of the query on 32 bits with probability 5.5e3 / 2^32, so the
 * lo half is read only for true neighbours.  Each vector version handles
 * four vectors per step and branches once per step on "any candidate".
 */
#include "nearidx_scan.h"

#include <immintrin.h>
#include <stdio.h>
#include <string.h>

/* Every candidate of the 32-bit test gets the full 48-bit test. */
#define FULL_TEST(i)							\
	do {								\
		size_t e_ = (i);					\
		if ((unsigned)__builtin_popcount(hi[e_] ^ qhi) +	\
		    (unsigned)__builtin_popcount((uint32_t)(lo[e_] ^ qlo)) \
		    <= kq)						\
			out[cnt++] = (uint32_t)e_;			\
	} while (0)

static size_t
scan_scalar(const uint32_t *hi, const uint16_t *lo, size_t n, size_t *from,
    uint32_t qhi, uint16_t qlo, unsigned kq, uint32_t *out)
{
	size_t i = *from, cnt = 0;

	for (; i < n && cnt < NEARIDX_SCAN_OUT; i++)
		if ((unsigned)__builtin_popcount(hi[i] ^ qhi) <= kq)
			FULL_TEST(i);
	*from = i;
	return cnt;
}

__attribute__((target("avx2,popcnt")))
static inline __m256i
popcount_epi32_avx2(__m256i x)
{
	const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2,
	    3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
	const __m256i nib = _mm256_set1_epi8(0x0f);
	__m256i c8 = _mm256_add_epi8(
	    _mm256_shuffle_epi8(lut, _mm256_and_si256(x, nib)),
	    _mm256_shuffle_epi8(lut,
	    _mm256_and_si256(_mm256_srli_epi16(x, 4), nib)));

	/* Byte counts summed to 16 bits, then to 32. */
	return _mm256_madd_epi16(_mm256_maddubs_epi16(c8,
	    _mm256_set1_epi8(1)), _mm256_set1_epi16(1));
}

/* Bit j set: lane j of the 8 words is within kq of the query. */
__attribute__((target("avx2,popcnt")))
static inline unsigned
close8_avx2(const uint32_t *p, __m256i q, __m256i k)
{
	__m256i x = _mm256_xor_si256(_mm256_loadu_si256((const void *)p), q);
	__m256i far = _mm256_cmpgt_epi32(popcount_epi32_avx2(x), k);

	return ~(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(far)) & 0xff;
}

__attribute__((target("avx2,popcnt")))
static size_t
scan_avx2(const uint32_t *hi, const uint16_t *lo, size_t n, size_t *from,
    uint32_t qhi, uint16_t qlo, unsigned kq, uint32_t *out)
{
	const __m256i q = _mm256_set1_epi32((int)qhi);
	const __m256i k = _mm256_set1_epi32((int)kq);
	size_t i = *from, cnt = 0;

	for (; i + 32 <= n && cnt <= NEARIDX_SCAN_OUT - 32; i += 32) {
		uint32_t m = close8_avx2(hi + i, q, k) |
		    close8_avx2(hi + i + 8, q, k) << 8 |
		    close8_avx2(hi + i + 16, q, k) << 16 |
		    close8_avx2(hi + i + 24, q, k) << 24;

		while (m != 0) {
			FULL_TEST(i + (size_t)__builtin_ctz(m));
			m &= m - 1;
		}
	}
	for (; i + 8 <= n && cnt <= NEARIDX_SCAN_OUT - 8; i += 8) {
		unsigned m = close8_avx2(hi + i, q, k);

		while (m != 0) {
			FULL_TEST(i + (size_t)__builtin_ctz(m));
			m &= m - 1;
		}
	}
	for (; i < n && cnt < NEARIDX_SCAN_OUT; i++)
		if ((unsigned)__builtin_popcount(hi[i] ^ qhi) <= kq)
			FULL_TEST(i);
	*from = i;
	return cnt;
}

/* Bit j set: lane j of the (masked) 16 words is within kq of the query. */
__attribute__((target("avx512f,avx512vpopcntdq,popcnt")))
static inline unsigned
close16_avx512(const uint32_t *p, __mmask16 lanes, __m512i q, __m512i k)
{
	__m512i x = _mm512_xor_si512(_mm512_maskz_loadu_epi32(lanes, p), q);

	return _mm512_mask_cmple_epu32_mask(lanes, _mm512_popcnt_epi32(x), k);
}

__attribute__((target("avx512f,avx512vpopcntdq,popcnt")))
static size_t
scan_avx512(const uint32_t *hi, const uint16_t *lo, size_t n, size_t *from,
    uint32_t qhi, uint16_t qlo, unsigned kq, uint32_t *out)
{
	const __m512i q = _mm512_set1_epi32((int)qhi);
	const __m512i k = _mm512_set1_epi32((int)kq);
	size_t i = *from, cnt = 0;

	for (; i + 64 <= n && cnt <= NEARIDX_SCAN_OUT - 64; i += 64) {
		uint64_t m = (uint64_t)close16_avx512(hi + i, 0xffff, q, k) |
		    (uint64_t)close16_avx512(hi + i + 16, 0xffff, q, k) << 16 |
		    (uint64_t)close16_avx512(hi + i + 32, 0xffff, q, k) << 32 |
		    (uint64_t)close16_avx512(hi + i + 48, 0xffff, q, k) << 48;

		while (m != 0) {
			FULL_TEST(i + (size_t)__builtin_ctzll(m));
			m &= m - 1;
		}
	}
	/* The tail with masked loads, which never touch the lanes left out. */
	for (; i < n && cnt <= NEARIDX_SCAN_OUT - 16; i += 16) {
		__mmask16 lanes = n - i >= 16 ? 0xffff :
		    (__mmask16)((1u << (n - i)) - 1);
		unsigned m = close16_avx512(hi + i, lanes, q, k);

		while (m != 0) {
			FULL_TEST(i + (size_t)__builtin_ctz(m));
			m &= m - 1;
		}
	}
	*from = i < n ? i : n;
	return cnt;
}

static const struct nearidx_kernel kernel_avx512 = {
	.name = "avx512",
	.scan = scan_avx512,
};
static const struct nearidx_kernel kernel_avx2 = {
	.name = "avx2",
	.scan = scan_avx2,
};
static const struct nearidx_kernel kernel_scalar = {
	.name = "scalar",
	.scan = scan_scalar,
};

static int
cpu_runs(const struct nearidx_kernel *k)
{
	__builtin_cpu_init();
	if (k == &kernel_avx512)
		return __builtin_cpu_supports("avx512f") &&
		    __builtin_cpu_supports("avx512vpopcntdq") &&
		    __builtin_cpu_supports("popcnt");
	if (k == &kernel_avx2)
		return __builtin_cpu_supports("avx2") &&
		    __builtin_cpu_supports("popcnt");
	return 1;
}

const struct nearidx_kernel *
nearidx_kernel_lookup(const char *name, char **cause)
{
	static const struct nearidx_kernel *const kernels[] = {
		&kernel_avx512, &kernel_avx2, &kernel_scalar, NULL,
	};

	*cause = NULL;
	for (size_t i = 0; kernels[i] != NULL; i++) {
		if (name == NULL || strcmp(name, "auto") == 0) {
			if (cpu_runs(kernels[i]))
				return kernels[i];
			continue;
		}
		if (strcmp(name, kernels[i]->name) != 0)
			continue;
		if (cpu_runs(kernels[i]))
			return kernels[i];
		if (asprintf(cause, "simd = %s: this CPU lacks the "
		    "instructions it needs", name) == -1)
			*cause = NULL;
		return NULL;
	}
	if (asprintf(cause, "simd = %s: unknown (auto, avx512, avx2 or "
	    "scalar)", name) == -1)
		*cause = NULL;
	return NULL;
}
