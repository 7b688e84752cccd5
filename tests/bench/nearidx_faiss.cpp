/*
 * nearidx_faiss: FAISS's binary indexes for nearidx_bench.  See
 * nearidx_faiss.h.  Codes are 64-bit fingerprints passed as 8 bytes each;
 * the byte order does not change a Hamming distance.
 */
#include "nearidx_faiss.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <cstdio>

#include <faiss/IndexBinaryFlat.h>
#include <faiss/IndexBinaryHash.h>
#include <faiss/impl/AuxIndexStructures.h>
#include <omp.h>

#define NF_STR2(x) #x
#define NF_STR(x) NF_STR2(x)

const char *
nf_version(void)
{
	return NF_STR(FAISS_VERSION_MAJOR) "." NF_STR(FAISS_VERSION_MINOR)
	    "." NF_STR(FAISS_VERSION_PATCH);
}

void
nf_threads(int n)
{
	omp_set_num_threads(n);
}

void *
nf_multihash_new(const uint64_t *codes, size_t n, int nhash, int bits)
{
	try {
		faiss::IndexBinaryMultiHash *ix =
		    new faiss::IndexBinaryMultiHash(64, nhash, bits);

		ix->add((faiss::Index::idx_t)n,
		    reinterpret_cast<const uint8_t *>(codes));
		return ix;
	} catch (const std::exception &e) {
		std::fprintf(stderr, "nearidx_faiss: %s\n", e.what());
		return nullptr;
	}
}

void *
nf_flat_new(const uint64_t *codes, size_t n)
{
	try {
		faiss::IndexBinaryFlat *ix = new faiss::IndexBinaryFlat(64);

		ix->add((faiss::Index::idx_t)n,
		    reinterpret_cast<const uint8_t *>(codes));
		return ix;
	} catch (const std::exception &e) {
		std::fprintf(stderr, "nearidx_faiss: %s\n", e.what());
		return nullptr;
	}
}

void
nf_free(void *index)
{
	delete static_cast<faiss::IndexBinary *>(index);
}

int
nf_range(void *index, const uint64_t *queries, size_t nq, int radius,
    size_t **lims, int64_t **labels)
{
	try {
		faiss::IndexBinary *ix = static_cast<faiss::IndexBinary *>(index);
		faiss::RangeSearchResult r((faiss::Index::idx_t)nq);
		size_t total;

		ix->range_search((faiss::Index::idx_t)nq,
		    reinterpret_cast<const uint8_t *>(queries), radius, &r);
		total = r.lims[nq];
		*lims = static_cast<size_t *>(std::malloc((nq + 1) *
		    sizeof(size_t)));
		*labels = static_cast<int64_t *>(std::malloc((total + 1) *
		    sizeof(int64_t)));
		if (*lims == nullptr || *labels == nullptr) {
			std::free(*lims);
			std::free(*labels);
			return -1;
		}
		std::memcpy(*lims, r.lims, (nq + 1) * sizeof(size_t));
		for (size_t i = 0; i < total; i++)
			(*labels)[i] = r.labels[i];
		return 0;
	} catch (const std::exception &e) {
		std::fprintf(stderr, "nearidx_faiss: %s\n", e.what());
		return -1;
	}
}
