/*
 * urlreq: the URL batch operations of the protocol.  See urlreq.h.
 */
#include "urlreq.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "arena.h"
#include "dispatch.h"
#include "frame.h"
#include "log.h"
#include "store.h"

/* One URL of a batch that failed before reaching the store. */
struct bad_item {
	uint32_t pos;
	const char *cause;	/* static */
};

/* A batch's keys: the valid items', in order, with their positions. */
struct batch_keys {
	size_t n;		/* items in the request */
	size_t nkeys;		/* valid ones */
	struct url_key *keys;
	uint32_t *pos;		/* of each key in the request */
	bool *valid;		/* per item */
	size_t nbad;
	struct bad_item *bad;
};

size_t
urlreq_batch_len(const Nddd__V1__UrlBatch *batch)
{
	if (batch == NULL)
		return 0;
	return batch->digests.len > 0 ? batch->digests.len / CBF_FP_LEN :
	    batch->n_urls;
}

/* Appends a UrlResults reply to out. */
static void
write_results(struct evbuffer *out, uint64_t id, uint64_t *counts, size_t n,
    const struct bad_item *bad, size_t nbad)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__UrlResults res = NDDD__V1__URL_RESULTS__INIT;
	Nddd__V1__ItemError *errs = NULL, **errp = NULL;
	Nddd__V1__Status *sts = NULL;

	if (nbad > 0) {
		errs = calloc(nbad, sizeof(*errs));
		errp = calloc(nbad, sizeof(*errp));
		sts = calloc(nbad, sizeof(*sts));
		if (errs == NULL || errp == NULL || sts == NULL) {
			frame_write_error(out, id, NDDD__V1__CODE__INTERNAL,
			    "out of memory");
			goto out;
		}
		for (size_t i = 0; i < nbad; i++) {
			nddd__v1__item_error__init(&errs[i]);
			nddd__v1__status__init(&sts[i]);
			sts[i].code = NDDD__V1__CODE__INVALID_ARGUMENT;
			sts[i].message = (char *)bad[i].cause;
			errs[i].index = bad[i].pos;
			errs[i].status = &sts[i];
			errp[i] = &errs[i];
		}
	}
	res.n_counts = n;
	res.counts = counts;
	res.n_errors = nbad;
	res.errors = errp;
	resp.id = id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_URLS;
	resp.urls = &res;
	frame_write(out, &resp.base);
out:
	free(errs);
	free(errp);
	free(sts);
}

/*
 * Derives the keys of a batch into bk, whose arrays hold its items.  Returns
 * NULL, or why the whole batch is refused (digests of another
 * canonicalization).
 */
static const char *
derive_keys(struct urlset *us, struct url_keyer *k,
    const Nddd__V1__UrlBatch *batch, struct batch_keys *bk)
{
	bk->nkeys = bk->nbad = 0;
	if (batch != NULL && batch->digests.len > 0) {
		if (batch->canon == NULL ||
		    strcmp(batch->canon, urlset_canon_id(us)) != 0)
			return "digests made with another canonicalization "
			    "than this server's (its stats say which)";
		for (size_t i = 0; i < bk->n; i++) {
			urlset_key_digest(us, batch->digests.data +
			    i * CBF_FP_LEN, &bk->keys[bk->nkeys]);
			bk->pos[bk->nkeys++] = (uint32_t)i;
			bk->valid[i] = true;
		}
		return NULL;
	}
	for (size_t i = 0; i < bk->n; i++) {
		const ProtobufCBinaryData *url = &batch->urls[i];
		const char *cause;

		bk->valid[i] = urlset_key(k, (const char *)url->data, url->len,
		    &bk->keys[bk->nkeys], &cause) == 0;
		if (!bk->valid[i]) {
			bk->bad[bk->nbad].pos = (uint32_t)i;
			bk->bad[bk->nbad++].cause = cause;
			continue;
		}
		urlset_prefetch(us, &bk->keys[bk->nkeys]);
		bk->pos[bk->nkeys++] = (uint32_t)i;
	}
	return NULL;
}

void
urlreq_check(struct urlset *us, struct url_keyer *k, struct urlset_reader *rd,
    struct arena *a, uint64_t id, const Nddd__V1__UrlBatch *batch,
    struct evbuffer *out)
{
	struct batch_keys bk = { .n = urlreq_batch_len(batch) };
	struct urlset_tally tally = { 0 };
	uint64_t *counts, *kcounts;
	const char *refused;
	int rc;

	bk.keys = arena_alloc(a, bk.n * sizeof(*bk.keys) + 1);
	bk.pos = arena_alloc(a, bk.n * sizeof(*bk.pos) + 1);
	bk.valid = arena_alloc(a, bk.n * sizeof(*bk.valid) + 1);
	bk.bad = arena_alloc(a, bk.n * sizeof(*bk.bad) + 1);
	counts = arena_alloc(a, bk.n * sizeof(*counts) + 1);
	kcounts = arena_alloc(a, bk.n * sizeof(*kcounts) + 1);
	if (bk.keys == NULL || bk.pos == NULL || bk.valid == NULL ||
	    bk.bad == NULL || counts == NULL || kcounts == NULL) {
		frame_write_error(out, id, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	if ((refused = derive_keys(us, k, batch, &bk)) != NULL) {
		frame_write_error(out, id, NDDD__V1__CODE__INVALID_ARGUMENT,
		    refused);
		return;
	}
	rc = urlset_check(us, rd, bk.keys, NULL, bk.nkeys, kcounts, &tally);
	urlset_add_tally(us, &tally);
	if (rc != STORE_OK) {
		frame_write_error(out, id, NDDD__V1__CODE__INTERNAL,
		    store_strstatus(rc));
		return;
	}
	memset(counts, 0, bk.n * sizeof(*counts));
	for (size_t i = 0; i < bk.nkeys; i++)
		counts[bk.pos[i]] = kcounts[i];
	write_results(out, id, counts, bk.n, bk.bad, bk.nbad);
}

/* A url_submit or url_delete request travelling through the URL writer. */
struct url_job {
	struct urlset_job uj;
	struct request_origin origin;
	struct batch_keys bk;
	uint64_t *counts;		/* per item of the request */
	uint64_t *kcounts;		/* per key */
};

static void
url_job_free(struct url_job *j)
{
	free(j->bk.keys);
	free(j->bk.pos);
	free(j->bk.valid);
	free(j->bk.bad);
	free(j->counts);
	free(j->kcounts);
	free(j);
}

static void
url_job_done(struct urlset_job *uj)
{
	struct url_job *j = (struct url_job *)uj;
	struct evbuffer *out = evbuffer_new();

	if (out != NULL && uj->status == STORE_OK) {
		for (size_t i = 0; i < j->bk.nkeys; i++)
			j->counts[j->bk.pos[i]] = j->kcounts[i];
		write_results(out, j->origin.id, j->counts, j->bk.n, j->bk.bad,
		    j->bk.nbad);
	} else if (out != NULL)
		frame_write_error(out, j->origin.id,
		    uj->status == STORE_FULL || uj->status == STORE_TXN_FULL ?
		    NDDD__V1__CODE__RESOURCE_EXHAUSTED :
		    NDDD__V1__CODE__INTERNAL, store_strstatus(uj->status));
	dispatch_finish(&j->origin, out, uj->status != STORE_OK);
	if (out != NULL)
		evbuffer_free(out);
	url_job_free(j);
}

bool
urlreq_mutate(struct urlset *us, struct url_keyer *k,
    const struct request_origin *origin, enum urlset_op op,
    enum urlset_durability dflt, const Nddd__V1__UrlBatch *batch,
    struct evbuffer *out)
{
	uint64_t id = origin->id;
	size_t n = urlreq_batch_len(batch);
	const char *refused;
	struct url_job *j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		goto nomem;
	j->bk.n = n;
	j->bk.keys = malloc(n * sizeof(*j->bk.keys) + 1);
	j->bk.pos = malloc(n * sizeof(*j->bk.pos) + 1);
	j->bk.valid = malloc(n * sizeof(*j->bk.valid) + 1);
	j->bk.bad = malloc(n * sizeof(*j->bk.bad) + 1);
	j->counts = calloc(n + 1, sizeof(*j->counts));
	j->kcounts = calloc(n + 1, sizeof(*j->kcounts));
	if (j->bk.keys == NULL || j->bk.pos == NULL || j->bk.valid == NULL ||
	    j->bk.bad == NULL || j->counts == NULL || j->kcounts == NULL)
		goto nomem;
	if ((refused = derive_keys(us, k, batch, &j->bk)) != NULL) {
		frame_write_error(out, id, NDDD__V1__CODE__INVALID_ARGUMENT,
		    refused);
		url_job_free(j);
		return false;
	}
	if (j->bk.nkeys == 0) {
		/* Nothing to write. */
		write_results(out, id, j->counts, n, j->bk.bad, j->bk.nbad);
		url_job_free(j);
		return false;
	}
	j->origin = *origin;
	j->uj.op = op;
	switch (batch->durability) {
	case NDDD__V1__DURABILITY__DURABLE:
		j->uj.durability = URLSET_DURABLE;
		break;
	case NDDD__V1__DURABILITY__RELAXED:
		j->uj.durability = URLSET_RELAXED;
		break;
	default:
		j->uj.durability = dflt;
		break;
	}
	j->uj.keys = j->bk.keys;
	j->uj.n = j->bk.nkeys;
	j->uj.counts = j->kcounts;
	j->uj.done = url_job_done;
	urlset_submit_job(us, &j->uj);
	return true;
nomem:
	if (j != NULL)
		url_job_free(j);
	frame_write_error(out, id, NDDD__V1__CODE__INTERNAL, "out of memory");
	return false;
}
