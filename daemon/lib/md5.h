/*
 * md5: the MD5 digest (RFC 1321) of URLs, the keys of the URL store.
 *
 * Why not OpenSSL's EVP, which nddd uses for its other digests (SHA-256):
 * a URL key is one MD5 of about 60 bytes, made millions of times a
 * second, and OpenSSL 3.0's EVP frees and allocates its digest state at
 * every re-initialization (md5_bench: 205 to 217 ns a URL through EVP,
 * 147 to 164 ns here one at a time).  And a batch of URLs is digested
 * sixteen or eight at a time here, one message in each 32-bit lane of an
 * AVX-512 or AVX2 register, which no library offers for MD5 (64 to 74 ns
 * a URL with AVX2 on the AMD EPYC without AVX-512).  The tests compare
 * every path with OpenSSL's EVP.
 */
#ifndef NDDD_MD5_H
#define NDDD_MD5_H

#include <stddef.h>
#include <stdint.h>

#define MD5_DIGEST_LEN	16

/* The digest of len bytes at msg. */
void md5_digest(const void *msg, size_t len, uint8_t out[MD5_DIGEST_LEN]);

/* The most messages digested side by side (the lanes of AVX-512). */
#define MD5_LANES_MAX	16

/*
 * The digests of n messages, msgs[i] of lens[i] bytes, into out (16 bytes
 * each, in order): sixteen at a time where the CPU has AVX-512, eight
 * where it has AVX2, one at a time otherwise (or as md5_limit_lanes
 * said).  Messages of any lengths mix; each lane takes the next message
 * as soon as its own is done.
 */
void md5_digests(const void *const *msgs, const size_t *lens, size_t n,
    uint8_t *out);

/* The lanes md5_digests uses (16, 8 or 1): the CPU's answer, unless told
 * fewer.  md5_limit_lanes(8) forces AVX2, (1) one at a time, and
 * (MD5_LANES_MAX) lets the CPU choose again: for tests and benchmarks. */
int md5_lanes(void);
void md5_limit_lanes(int lanes);

#endif
