/* placeholder */
#include "simhash_impl.h"

static void
simhash_avx2_normalize(uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] = simhash_norm[src[i]];
}

static void
simhash_avx2_run(struct simhash_acc *acc, struct simhash_scratch *sc,
    const uint8_t *p, size_t n, size_t before, int final)
{
	(void)sc;
	(void)before;
	(void)final;
	simhash_scalar_run(acc, p, n);
}

const struct simhash_kernel simhash_kernel_avx2 = {
	.level = SIMHASH_SIMD_AVX2,
	.normalize = simhash_avx2_normalize,
	.run = simhash_avx2_run,
	.count = simhash_count_scalar,
	.finish = simhash_finish_scalar,
};
