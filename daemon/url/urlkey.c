/*
 * urlkey: a URL's key (urlset.h): the MD5 of its canonical form and the
 * filter counters it names, made by a request worker's own keyer; from a
 * client's digest; in a named namespace, XORed with the namespace's mask.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "urlset_impl.h"

/* A namespace's mask is the MD5 of this and the namespace's name. */
#define NS_MASK_PREFIX		"nddd.ns/"
#define NS_MASK_TEXT_MAX	(sizeof(NS_MASK_PREFIX) - 1 + URLNS_NAME_MAX)

struct url_keyer {
	struct urlset *us;
	struct urlcanon *canon;
	EVP_MD_CTX *md_ctx;
};

struct url_keyer *
urlset_keyer_new(struct urlset *us)
{
	struct url_keyer *k;

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	k->us = us;
	if ((k->canon = urlcanon_new(&us->canon)) == NULL ||
	    (k->md_ctx = EVP_MD_CTX_new()) == NULL ||
	    !EVP_DigestInit_ex2(k->md_ctx, us->md5, NULL)) {
		urlset_keyer_free(k);
		return NULL;
	}
	return k;
}

void
urlset_keyer_free(struct url_keyer *k)
{
	if (k == NULL)
		return;
	urlcanon_free(k->canon);
	EVP_MD_CTX_free(k->md_ctx);
	free(k);
}

int
urlset_key_canonical(struct url_keyer *k, const char *url, size_t len,
    struct url_key *key, const char **canon, size_t *canon_len,
    const char **cause)
{
	const char *c;
	size_t clen;
	unsigned int mdlen;

	if ((c = urlcanon_canonicalize(k->canon, url, len, &clen,
	    cause)) == NULL)
		return -1;
	/* Re-initializing with no digest named reuses the fetched MD5
	 * without reallocating its state. */
	if (!EVP_DigestInit_ex2(k->md_ctx, NULL, NULL) ||
	    !EVP_DigestUpdate(k->md_ctx, c, clen) ||
	    !EVP_DigestFinal_ex(k->md_ctx, key->fp, &mdlen) ||
	    mdlen != CBF_FP_LEN)
		fatalx("%s: MD5 failed", __func__);
	cbf_indices(k->us->filter, key->fp, key->idx);
	*canon = c;
	*canon_len = clen;
	return 0;
}

int
urlset_key(struct url_keyer *k, const char *url, size_t len,
    struct url_key *key, const char **cause)
{
	const char *canon;
	size_t canon_len;

	return urlset_key_canonical(k, url, len, key, &canon, &canon_len,
	    cause);
}

void
urlset_key_digest(const struct urlset *us, const uint8_t digest[CBF_FP_LEN],
    struct url_key *key)
{
	memcpy(key->fp, digest, CBF_FP_LEN);
	cbf_indices(us->filter, key->fp, key->idx);
}

/* What a namespace's mask is the MD5 of: "nddd.ns/" and its name;
 * returns its length. */
static size_t
mask_text(const char *name, size_t len, char buf[NS_MASK_TEXT_MAX])
{
	if (len > URLNS_NAME_MAX)
		fatalx("%s: a namespace name of %zu bytes", __func__, len);
	memcpy(buf, NS_MASK_PREFIX, sizeof(NS_MASK_PREFIX) - 1);
	memcpy(buf + sizeof(NS_MASK_PREFIX) - 1, name, len);
	return sizeof(NS_MASK_PREFIX) - 1 + len;
}

void
urlset_ns_mask(struct url_keyer *k, const char *name, size_t len,
    struct urlset_ns_mask *out)
{
	char buf[NS_MASK_TEXT_MAX];
	size_t n = mask_text(name, len, buf);
	unsigned int mdlen;

	if (!EVP_DigestInit_ex2(k->md_ctx, NULL, NULL) ||
	    !EVP_DigestUpdate(k->md_ctx, buf, n) ||
	    !EVP_DigestFinal_ex(k->md_ctx, out->m, &mdlen) ||
	    mdlen != CBF_FP_LEN)
		fatalx("%s: MD5 failed", __func__);
}

void
urlset_ns_mask_of(const struct urlset *us, const char *name, size_t len,
    struct urlset_ns_mask *out)
{
	char buf[NS_MASK_TEXT_MAX];
	size_t n;
	unsigned int mdlen;

	if (len == 0) {
		memset(out, 0, sizeof(*out));
		return;
	}
	n = mask_text(name, len, buf);
	if (!EVP_Digest(buf, n, out->m, &mdlen, us->md5, NULL) ||
	    mdlen != CBF_FP_LEN)
		fatalx("%s: MD5 failed", __func__);
}

void
urlset_key_masked(const struct urlset *us, const struct urlset_ns_mask *mask,
    struct url_key *key)
{
	for (int i = 0; i < CBF_FP_LEN; i++)
		key->fp[i] ^= mask->m[i];
	cbf_indices(us->filter, key->fp, key->idx);
}
