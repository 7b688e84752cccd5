/*
 * canon: libnddd's URL canonicalization and digests, the nddd_canon_*
 * functions of nddd.h, and nddd_use_digests, which gives a client the
 * canonicalization its server states (nddd_urls then sends digests, in
 * bulk.c); the other files are listed in nddd_impl.h.
 *
 * Digests are made by urldigest (from the fingerprint library), as the
 * daemon keys URLs: a digest made here and a URL sent as text reach the
 * same record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nddd.h"
#include "nddd_impl.h"
#include "urldigest.h"

struct nddd_canon {
	struct urldigest *dg;
	char id[URLCANON_ID_LEN];
};

int
nddd_use_digests(nddd_client *c, int on, char **err)
{
	struct nddd_stats st;
	nddd_canon *k;

	*err = NULL;
	if (!on) {
		nddd_canon_free(c->canon);
		c->canon = NULL;
		return 0;
	}
	if (nddd_stats(c, &st) == -1)
		goto err;
	if (st.canon[0] == '\0') {
		client_fail(c, "the server states no canonicalization: it "
		    "takes no digests (too old)");
		goto err;
	}
	if ((k = nddd_canon_new(st.canon, err)) == NULL) {
		client_fail(c, "%s", *err ? *err : "out of memory");
		return -1;
	}
	nddd_canon_free(c->canon);
	c->canon = k;
	return 0;
err:
	*err = strdup(c->err);
	return -1;
}

nddd_canon *
nddd_canon_new(const char *canon_id, char **err)
{
	struct urlcanon_options opts;
	nddd_canon *k;

	*err = NULL;
	if (canon_id == NULL || urlcanon_parse_id(canon_id, &opts) == -1) {
		if (asprintf(err, "canonicalization \"%s\" cannot be "
		    "reproduced here (this library makes urlcanon/%d)",
		    canon_id ? canon_id : "", URLCANON_VERSION) == -1)
			*err = NULL;
		return NULL;
	}
	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	urlcanon_id(&opts, k->id);
	if ((k->dg = urldigest_new(&opts)) == NULL) {
		free(k);
		return NULL;
	}
	return k;
}

void
nddd_canon_free(nddd_canon *k)
{
	if (k == NULL)
		return;
	urldigest_free(k->dg);
	free(k);
}

const char *
nddd_canon_id(const nddd_canon *k)
{
	return k->id;
}

const char *
nddd_canon_url(nddd_canon *k, const char *url, size_t len, size_t *out_len,
    const char **cause)
{
	return urlcanon_canonicalize(urldigest_canon(k->dg), url, len, out_len,
	    cause);
}

int
nddd_canon_digest(nddd_canon *k, const char *url, size_t len,
    unsigned char digest[NDDD_DIGEST_LEN], const char **cause)
{
	const char *canon;
	size_t clen;

	return urldigest_one(k->dg, url, len, digest, &canon, &clen, cause);
}

size_t
canon_digest_many(nddd_canon *k, const char *const *urls, const size_t *lens,
    size_t n, unsigned char *digests, const char **causes)
{
	size_t nvalid = 0;

	for (size_t i = 0; i < n; i += URLDIGEST_BATCH)
		nvalid += urldigest_many(k->dg, urls + i, lens + i,
		    n - i < URLDIGEST_BATCH ? n - i : URLDIGEST_BATCH,
		    digests + i * NDDD_DIGEST_LEN, causes + i, NULL, NULL);
	return nvalid;
}

size_t
nddd_canon_digests(nddd_canon *k, const char *urls, const size_t *lens,
    size_t n, unsigned char *digests, int *valid)
{
	const char *ptr[URLDIGEST_BATCH], *causes[URLDIGEST_BATCH];
	size_t off = 0, nvalid = 0;

	for (size_t i = 0; i < n; i += URLDIGEST_BATCH) {
		size_t m = n - i < URLDIGEST_BATCH ? n - i : URLDIGEST_BATCH;

		for (size_t j = 0; j < m; j++) {
			ptr[j] = urls + off;
			off += lens[i + j];
		}
		nvalid += urldigest_many(k->dg, ptr, lens + i, m,
		    digests + i * NDDD_DIGEST_LEN, causes, NULL, NULL);
		for (size_t j = 0; j < m; j++)
			valid[i + j] = causes[j] == NULL;
	}
	return nvalid;
}
