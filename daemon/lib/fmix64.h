/*
 * fmix64: MurmurHash3's 64-bit finalizer, a bijection that spreads every
 * input bit over the whole word.  The simhash engine mixes sdbm term
 * hashes with it (the sdbm-fmix64 term hash), sketches their terms and
 * shingles, and the URL index derives a tag's alternate bucket from it.
 */
#ifndef NDDD_FMIX64_H
#define NDDD_FMIX64_H

#include <stdint.h>

static inline uint64_t
fmix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

#endif
