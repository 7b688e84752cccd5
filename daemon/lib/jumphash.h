/*
 * jumphash: which shard of a list owns a key (docs/sharding.md).  The
 * daemons check ownership with it while a shard is added; the clients
 * (libnddd) route with it.  One definition, so that both always agree.
 */
#ifndef NDDD_JUMPHASH_H
#define NDDD_JUMPHASH_H

#include <stdint.h>

/*
 * Lamping and Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm"
 * (2014): the bucket of key among buckets (at least 1).  When buckets grow
 * by one, a key either stays or moves to the new last bucket.
 */
static inline uint32_t
jump_hash(uint64_t key, uint32_t buckets)
{
	int64_t b = -1, j = 0;

	while (j < (int64_t)buckets) {
		b = j;
		key = key * 2862933555777941757ULL + 1;
		j = (int64_t)((double)(b + 1) *
		    ((double)(1LL << 31) / (double)((key >> 33) + 1)));
	}
	return (uint32_t)b;
}

/*
 * The shard among shards that owns a URL, or the document of that URL:
 * the jump hash of the first 8 bytes, big-endian, of its digest (the MD5
 * of its canonical form, in the default namespace: a namespace does not
 * move a key).
 */
static inline uint32_t
jump_hash_owner(const uint8_t digest[16], uint32_t shards)
{
	uint64_t key = 0;

	for (int i = 0; i < 8; i++)
		key = key << 8 | digest[i];
	return jump_hash(key, shards);
}

#endif
