/*
 * simhash_scalar: the portable kernel, one byte at a time.  It is also the
 * path the vectorised kernels take for the bytes they leave aside (the ends
 * of windows, very long terms).  See simhash_impl.h.
 */
#include "simhash_impl.h"

static void
simhash_scalar_normalize(uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] = simhash_norm[src[i]];
}

static void
simhash_scalar_kernel_run(struct simhash_acc *acc, struct simhash_scratch *sc,
    const uint8_t *p, size_t n, size_t before, int final)
{
	(void)sc;
	(void)before;
	(void)final;
	simhash_scalar_run(acc, p, n);
}

const struct simhash_kernel simhash_kernel_scalar = {
	.level = SIMHASH_SIMD_SCALAR,
	.normalize = simhash_scalar_normalize,
	.run = simhash_scalar_kernel_run,
	.count = simhash_count_scalar,
	.finish = simhash_finish_scalar,
};
