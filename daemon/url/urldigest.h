/*
 * urldigest: a URL's digest, the MD5 of its canonical form (urlcanon.h,
 * md5.h), which the URL store files it under before a namespace's mask.
 * The daemon's request workers and libnddd's clients (which send digests
 * instead of URLs) make it here, so that both make the same one.
 *
 * A batch is canonicalized URL by URL, then digested several at a time
 * (md5_digests: sixteen with AVX-512, eight with AVX2).
 */
#ifndef NDDD_URLDIGEST_H
#define NDDD_URLDIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "md5.h"
#include "urlcanon.h"

#define URLDIGEST_LEN	MD5_DIGEST_LEN
/* The most URLs urldigest_many takes at once. */
#define URLDIGEST_BATCH	256

/* A canonicalizer and a batch's scratch memory; one per thread. */
struct urldigest;

struct urldigest *urldigest_new(const struct urlcanon_options *opts);
void urldigest_free(struct urldigest *d);

/* Its canonicalizer, for URLs canonicalized without a digest. */
struct urlcanon *urldigest_canon(struct urldigest *d);

/*
 * The digest of url[0..len) into out, and its canonical form in *canon
 * (*canon_len bytes, NUL-terminated, valid until the next call on d).
 * Returns -1 for an invalid URL, with a static description in *cause.
 */
int urldigest_one(struct urldigest *d, const char *url, size_t len,
    uint8_t out[URLDIGEST_LEN], const char **canon, size_t *canon_len,
    const char **cause);

/*
 * The digests of n URLs (at most URLDIGEST_BATCH): URL i's into out + URLDIGEST_LEN * i and causes[i]
 * NULL, or (an invalid URL) zeros and causes[i] why.  If canon is not NULL,
 * canon[i] and canon_len[i] give URL i's canonical form, NUL-terminated,
 * valid until the next call on d (NULL for an invalid URL).  Returns how
 * many URLs have digests.  A URL whose canonical form finds no memory is
 * invalid, its cause "out of memory".
 */
size_t urldigest_many(struct urldigest *d, const char *const *urls,
    const size_t *lens, size_t n, uint8_t *out, const char **causes,
    const char **canon, size_t *canon_len);

#endif
