/*
 * nearidx_faiss: the FAISS side of nearidx_bench, behind a C interface
 * (FAISS is C++ and Debian ships no C API for its binary indexes).
 */
#ifndef NDDD_NEARIDX_FAISS_H
#define NDDD_NEARIDX_FAISS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* FAISS's version string, e.g. "1.7.3". */
const char *nf_version(void);
/* OpenMP threads FAISS may use. */
void nf_threads(int n);

/*
 * An IndexBinaryMultiHash(64, nhash, bits) or an IndexBinaryFlat(64) over
 * n 64-bit codes (FAISS label i is codes[i]).  NULL on failure.
 */
void *nf_multihash_new(const uint64_t *codes, size_t n, int nhash, int bits);
void *nf_flat_new(const uint64_t *codes, size_t n);
void nf_free(void *index);

/*
 * range_search of nq codes with FAISS's radius (hits have distance <
 * radius).  Query i's labels are (*labels)[(*lims)[i] .. (*lims)[i+1]];
 * the caller frees both arrays.  Returns 0, or -1 on failure.
 */
int nf_range(void *index, const uint64_t *queries, size_t nq, int radius,
    size_t **lims, int64_t **labels);

#ifdef __cplusplus
}
#endif

#endif
