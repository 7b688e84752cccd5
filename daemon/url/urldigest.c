/*
 * urldigest: URLs' digests, one or a batch.  See urldigest.h.
 */
#include "urldigest.h"

#include <stdlib.h>
#include <string.h>

struct urldigest {
	struct urlcanon *uc;
	/* A batch's canonical forms, one after another, each with its NUL,
	 * and each URL's offset in them (SIZE_MAX: invalid). */
	char *texts;
	size_t texts_cap;
	size_t *off;
	size_t *len;
	const void **msgs;	/* the valid ones, for md5_digests */
	size_t *mlens;
	uint8_t *digests;	/* theirs */
};

struct urldigest *
urldigest_new(const struct urlcanon_options *opts)
{
	struct urldigest *d;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	if ((d->uc = urlcanon_new(opts)) == NULL ||
	    (d->off = calloc(URLDIGEST_BATCH, sizeof(*d->off))) == NULL ||
	    (d->len = calloc(URLDIGEST_BATCH, sizeof(*d->len))) == NULL ||
	    (d->msgs = calloc(URLDIGEST_BATCH, sizeof(*d->msgs))) == NULL ||
	    (d->mlens = calloc(URLDIGEST_BATCH, sizeof(*d->mlens))) == NULL ||
	    (d->digests = calloc(URLDIGEST_BATCH, URLDIGEST_LEN)) == NULL) {
		urldigest_free(d);
		return NULL;
	}
	return d;
}

void
urldigest_free(struct urldigest *d)
{
	if (d == NULL)
		return;
	urlcanon_free(d->uc);
	free(d->texts);
	free(d->off);
	free(d->len);
	free(d->msgs);
	free(d->mlens);
	free(d->digests);
	free(d);
}

struct urlcanon *
urldigest_canon(struct urldigest *d)
{
	return d->uc;
}

int
urldigest_one(struct urldigest *d, const char *url, size_t len,
    uint8_t out[URLDIGEST_LEN], const char **canon, size_t *canon_len,
    const char **cause)
{
	const char *c;

	if ((c = urlcanon_canonicalize(d->uc, url, len, canon_len,
	    cause)) == NULL)
		return -1;
	md5_digest(c, *canon_len, out);
	*canon = c;
	return 0;
}

/* Appends a canonical form (and its NUL) to the batch's texts. */
static bool
keep(struct urldigest *d, size_t *used, const char *c, size_t len)
{
	if (*used + len + 1 > d->texts_cap) {
		size_t cap = d->texts_cap ? d->texts_cap : 4096;
		char *p;

		while (cap < *used + len + 1)
			cap *= 2;
		if ((p = realloc(d->texts, cap)) == NULL)
			return false;
		d->texts = p;
		d->texts_cap = cap;
	}
	memcpy(d->texts + *used, c, len + 1);
	*used += len + 1;
	return true;
}

size_t
urldigest_many(struct urldigest *d, const char *const *urls,
    const size_t *lens, size_t n, uint8_t *out, const char **causes,
    const char **canon, size_t *canon_len)
{
	size_t used = 0, nvalid = 0;

	/* A caller's bug (the log is not in every program linking this). */
	if (n > URLDIGEST_BATCH)
		abort();
	for (size_t i = 0; i < n; i++) {
		const char *c;
		size_t clen;

		d->off[i] = SIZE_MAX;
		if ((c = urlcanon_canonicalize(d->uc, urls[i], lens[i], &clen,
		    &causes[i])) == NULL)
			continue;
		causes[i] = NULL;
		if (!keep(d, &used, c, clen)) {
			causes[i] = "out of memory";
			continue;
		}
		d->off[i] = used - clen - 1;
		d->len[i] = clen;
	}
	/* The texts are where they stay: now the pointers. */
	for (size_t i = 0; i < n; i++) {
		if (d->off[i] == SIZE_MAX) {
			if (canon != NULL)
				canon[i] = NULL;
			continue;
		}
		d->msgs[nvalid] = d->texts + d->off[i];
		d->mlens[nvalid++] = d->len[i];
		if (canon != NULL) {
			canon[i] = d->texts + d->off[i];
			canon_len[i] = d->len[i];
		}
	}
	md5_digests(d->msgs, d->mlens, nvalid, d->digests);
	for (size_t i = 0, v = 0; i < n; i++)
		if (d->off[i] == SIZE_MAX)
			memset(out + URLDIGEST_LEN * i, 0, URLDIGEST_LEN);
		else
			memcpy(out + URLDIGEST_LEN * i,
			    d->digests + URLDIGEST_LEN * v++, URLDIGEST_LEN);
	return nvalid;
}
