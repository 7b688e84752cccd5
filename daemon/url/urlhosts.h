/*
 * urlhosts: the host index, which finds a namespace's URLs by host or by
 * URL prefix without reading the rest of the store (url_forget).
 *
 * Each URL recorded as new from its text (a digest carries none) is kept in
 * the store's url_hosts table under the key
 *
 *	namespace id (u32, big-endian) | host, labels reversed | 0x00 |
 *	canonical URL (what room the host leaves of 490 bytes) |
 *	fingerprint
 *
 * with no value.  Reversed labels ("com.example.www") put a host's
 * subdomains in one range right after it, "com.example" 0x00 then
 * "com.example." ..., and a look-alike elsewhere ("com.badexample",
 * "org.evil.com.example"); the URL orders a host's URLs by prefix; the
 * fingerprint (the URL's in its namespace) keeps two URLs cut alike apart
 * and names the record to delete.
 *
 * The writer learns the texts with the submits, carries them in the
 * journal's frames (so a crash loses none a record survives) and puts them
 * in the table with each flush.  Entries outlive their records (deletes,
 * expiry): a forget reads the record before counting it, and removes the
 * entries it read.
 */
#ifndef NDDD_URLHOSTS_H
#define NDDD_URLHOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cbf.h"

/* The longest host the index finds: a DNS name's limit. */
#define URLHOSTS_HOST_MAX	253
/* LMDB's longest key, and the bytes of a URL and its host a key keeps:
 * a prefix of URLHOSTS_TEXT_MAX less its host's length at most. */
#define URLHOSTS_KEY_MAX	511
#define URLHOSTS_TEXT_MAX	(URLHOSTS_KEY_MAX - 4 - 1 - CBF_FP_LEN)

/*
 * A text as the journal carries it: namespace id, fingerprint, length,
 * then the canonical URL cut to URLHOSTS_TEXT_MAX bytes.
 */
#define URLHOSTS_REC_HEADER	(4 + CBF_FP_LEN + 2)
#define URLHOSTS_REC_MAX	(URLHOSTS_REC_HEADER + URLHOSTS_TEXT_MAX)

/* Encodes one text record at out; returns its length. */
size_t urlhosts_rec_encode(uint32_t ns, const uint8_t fp[CBF_FP_LEN],
    const char *url, size_t len, uint8_t *out);

/*
 * The host of canonical URL url[0..len), in *host and *hlen: what lies
 * between "://" (and any user info) and the port or path.  False if it has
 * none, or no path after it (a text cut short).
 */
bool urlhosts_url_host(const char *url, size_t len, const char **host,
    size_t *hlen);

/*
 * The index key of the text record at rec (whose whole length is *reclen
 * on return), in out.  Returns the key's length, 0 if the URL's host is
 * longer than the index finds, or lies beyond the text kept (such a URL
 * is not indexed).
 */
size_t urlhosts_rec_key(const uint8_t *rec, size_t *reclen,
    uint8_t out[URLHOSTS_KEY_MAX]);

/*
 * The key prefix every URL of host[0..hlen) in namespace ns begins with,
 * in out: namespace, reversed host, and then sep (0x00: the host itself;
 * '.': its subdomains).  Returns its length, 0 if the host is too long.
 */
size_t urlhosts_host_prefix(uint32_t ns, const char *host, size_t hlen,
    char sep, uint8_t out[URLHOSTS_KEY_MAX]);

/*
 * The key prefix of the URLs that begin with canonical URL prefix
 * prefix[0..len) in namespace ns.  Returns 0 if the prefix has no host, a
 * host too long, or is longer than the index keeps of its host's URLs.
 */
size_t urlhosts_url_prefix(uint32_t ns, const char *prefix, size_t len,
    uint8_t out[URLHOSTS_KEY_MAX]);

/* The fingerprint at the end of a key. */
static inline const uint8_t *
urlhosts_key_fp(const uint8_t *key, size_t klen)
{
	return key + klen - CBF_FP_LEN;
}

#endif
