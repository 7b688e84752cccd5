/* placeholder */
#include "simhash_impl.h"

static void
simhash_avx512_normalize(uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] = simhash_norm[src[i]];
}

static void
simhash_avx512_run(struct simhash_acc *acc, struct simhash_scratch *sc,
    const uint8_t *p, size_t n, size_t before)
{
	(void)sc;
	(void)before;
	simhash_scalar_run(acc, p, n);
}

const struct simhash_kernel simhash_kernel_avx512 = {
	.level = SIMHASH_SIMD_AVX512,
	.normalize = simhash_avx512_normalize,
	.run = simhash_avx512_run,
};
