/*
 * urlkey: a URL's key (urlset.h): the MD5 of its canonical form
 * (urldigest.h) and the filter counters it names, made by a request
 * worker's own keyer; from a client's digest; in a named namespace, XORed
 * with the namespace's mask.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nsmask.h"
#include "urldigest.h"
#include "urlset_impl.h"

struct url_keyer {
	struct urlset *us;
	struct urldigest *dg;
	uint8_t digests[URLSET_KEY_BATCH][URLDIGEST_LEN];
};

struct url_keyer *
urlset_keyer_new(struct urlset *us)
{
	struct url_keyer *k;

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	k->us = us;
	if ((k->dg = urldigest_new(&us->canon)) == NULL) {
		free(k);
		return NULL;
	}
	return k;
}

void
urlset_keyer_free(struct url_keyer *k)
{
	if (k == NULL)
		return;
	urldigest_free(k->dg);
	free(k);
}

int
urlset_key_canonical(struct url_keyer *k, const char *url, size_t len,
    struct url_key *key, const char **canon, size_t *canon_len,
    const char **cause)
{
	if (urldigest_one(k->dg, url, len, key->fp, canon, canon_len,
	    cause) == -1)
		return -1;
	cbf_indices(k->us->filter, key->fp, key->idx);
	return 0;
}

size_t
urlset_keys_canonical(struct url_keyer *k, const char *const *urls,
    const size_t *lens, size_t n, struct url_key *keys, const char **canon,
    size_t *canon_len, const char **causes)
{
	size_t nvalid;

	if (n > URLSET_KEY_BATCH)
		fatalx("%s: %zu URLs, more than a batch", __func__, n);
	nvalid = urldigest_many(k->dg, urls, lens, n, &k->digests[0][0],
	    causes, canon, canon_len);
	for (size_t i = 0; i < n; i++)
		if (causes[i] == NULL)
			urlset_key_digest(k->us, k->digests[i], &keys[i]);
	return nvalid;
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

void
urlset_ns_mask(const char *name, size_t len, struct urlset_ns_mask *out)
{
	if (ns_mask(name, len, out->m) == -1)
		fatalx("%s: a namespace name of %zu bytes", __func__, len);
}

void
urlset_key_masked(const struct urlset *us, const struct urlset_ns_mask *mask,
    struct url_key *key)
{
	for (int i = 0; i < CBF_FP_LEN; i++)
		key->fp[i] ^= mask->m[i];
	cbf_indices(us->filter, key->fp, key->idx);
}
