/*
 * canon: libnddd's URL canonicalization and digests, the nddd_canon_*
 * functions of nddd.h, and nddd_use_digests, which gives a client the
 * canonicalization its server states (nddd_urls then sends digests, in
 * bulk.c); the other files are listed in nddd_impl.h.
 *
 * Digests are made with urlcanon, the daemon's own canonicalizer (from the
 * fingerprint library), and OpenSSL's MD5, as the daemon keys URLs
 * (urlset_key_canonical): a digest made here and a URL sent as text reach
 * the same record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "nddd.h"
#include "nddd_impl.h"
#include "urlcanon.h"

struct nddd_canon {
	struct urlcanon *uc;
	EVP_MD *md5;
	EVP_MD_CTX *md_ctx;
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
	/* The MD5 is fetched once; each digest re-initializes the context
	 * with it rather than looking it up again. */
	if ((k->uc = urlcanon_new(&opts)) == NULL ||
	    (k->md5 = EVP_MD_fetch(NULL, "MD5", NULL)) == NULL ||
	    (k->md_ctx = EVP_MD_CTX_new()) == NULL ||
	    !EVP_DigestInit_ex2(k->md_ctx, k->md5, NULL)) {
		if (k->uc != NULL && asprintf(err, "OpenSSL offers no MD5") ==
		    -1)
			*err = NULL;
		nddd_canon_free(k);
		return NULL;
	}
	return k;
}

void
nddd_canon_free(nddd_canon *k)
{
	if (k == NULL)
		return;
	EVP_MD_CTX_free(k->md_ctx);
	EVP_MD_free(k->md5);
	urlcanon_free(k->uc);
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
	return urlcanon_canonicalize(k->uc, url, len, out_len, cause);
}

int
nddd_canon_digest(nddd_canon *k, const char *url, size_t len,
    unsigned char digest[NDDD_DIGEST_LEN], const char **cause)
{
	const char *canon;
	size_t clen;
	unsigned int mdlen;

	/* What urlset_key_canonical does in the daemon. */
	if ((canon = urlcanon_canonicalize(k->uc, url, len, &clen,
	    cause)) == NULL)
		return -1;
	if (!EVP_DigestInit_ex2(k->md_ctx, NULL, NULL) ||
	    !EVP_DigestUpdate(k->md_ctx, canon, clen) ||
	    !EVP_DigestFinal_ex(k->md_ctx, digest, &mdlen) ||
	    mdlen != NDDD_DIGEST_LEN) {
		*cause = "MD5 failed";
		return -1;
	}
	return 0;
}

size_t
nddd_canon_digests(nddd_canon *k, const char *urls, const size_t *lens,
    size_t n, unsigned char *digests, int *valid)
{
	const char *cause;
	size_t off = 0, nvalid = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char *d = digests + i * NDDD_DIGEST_LEN;

		valid[i] = nddd_canon_digest(k, urls + off, lens[i], d,
		    &cause) == 0;
		if (valid[i])
			nvalid++;
		else
			memset(d, 0, NDDD_DIGEST_LEN);
		off += lens[i];
	}
	return nvalid;
}
