/*
 * nearidx_scan: the inner loop of the near-duplicate index, comparing a
 * query with every entry of one bucket, in a portable version and in
 * AVX2 and AVX-512 versions picked at run time.  Internal to nearidx.
 *
 * A bucket stores the low 48 bits of each permuted fingerprint as two
 * arrays, hi (bits 47..16) and lo (bits 15..0).  The kernels compare the
 * 32-bit words first, several at a time, and look at lo only for the few
 * words already within distance.
 */
#ifndef NDDD_NEARIDX_SCAN_H
#define NDDD_NEARIDX_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* Room a caller gives a kernel's output: a kernel stops before it could
 * overflow, so that a whole unrolled step always fits. */
#define NEARIDX_SCAN_OUT 128

struct nearidx_kernel {
	const char *name;
	/*
	 * Appends to out the indices i in [*from, n) with
	 * popcount(hi[i] ^ qhi) + popcount(lo[i] ^ qlo) <= kq, in increasing
	 * order, at most NEARIDX_SCAN_OUT of them; sets *from to where it
	 * stopped (n when done) and returns how many it wrote.  It stops
	 * early only when out could fill up, so a caller loops until *from
	 * reaches n.
	 */
	size_t (*scan)(const uint32_t *hi, const uint16_t *lo, size_t n,
	    size_t *from, uint32_t qhi, uint16_t qlo, unsigned kq,
	    uint32_t *out);
};

/*
 * The kernel called name ("avx512", "avx2", "scalar"), or for "auto" or
 * NULL the fastest this CPU runs.  Returns NULL with *cause set (caller
 * frees) for an unknown name or one this CPU cannot run.
 */
const struct nearidx_kernel *nearidx_kernel_lookup(const char *name,
    char **cause);

#endif
