/*
 * urlreq: the URL batch operations of the protocol.  See urlreq.h.
 */
#include "urlreq.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "reply.h"
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

/* The number of items of a batch (URLs or digests). */
static size_t
batch_len(const Nddd__V1__UrlBatch *batch)
{
	if (batch == NULL)
		return 0;
	return batch->digests.len > 0 ? batch->digests.len / CBF_FP_LEN :
	    batch->n_urls;
}

Nddd__V1__Code
urlreq_validate(const Nddd__V1__UrlBatch *batch,
    const struct request_limits *lim, const char **message)
{
	if (batch == NULL)
		return NDDD__V1__CODE__OK;
	if (batch->n_urls > 0 && batch->digests.len > 0) {
		*message = "a batch names urls or digests, not both";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	if (batch->digests.len % CBF_FP_LEN != 0) {
		*message = "digests must be 16 bytes each";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	if (batch->n_urls > lim->max_batch ||
	    batch->digests.len / CBF_FP_LEN > lim->max_batch) {
		*message = "batch exceeds the server's max_batch";
		return NDDD__V1__CODE__RESOURCE_EXHAUSTED;
	}
	if (batch->durability != NDDD__V1__DURABILITY__DURABILITY_DEFAULT &&
	    batch->durability != NDDD__V1__DURABILITY__DURABLE &&
	    batch->durability != NDDD__V1__DURABILITY__RELAXED) {
		*message = "unknown durability";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	return NDDD__V1__CODE__OK;
}

/* Appends a UrlResults reply to r. */
static void
write_results(struct reply *r, uint64_t *counts, size_t n,
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
			reply_error(r, NDDD__V1__CODE__INTERNAL,
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
	resp.id = r->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_URLS;
	resp.urls = &res;
	reply_message(r, &resp.base);
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
urlreq_check(struct op_call *call)
{
	const Nddd__V1__UrlBatch *batch = call->req->url_check;
	struct urlset *us = call->svc->us;
	struct arena *a = &call->ctx->arena;
	struct reply *r = call->reply;
	struct batch_keys bk = { .n = batch_len(batch) };
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
		reply_error(r, NDDD__V1__CODE__INTERNAL, "out of memory");
		return;
	}
	if ((refused = derive_keys(us, call->ctx->keyer, batch, &bk)) !=
	    NULL) {
		reply_error(r, NDDD__V1__CODE__INVALID_ARGUMENT, refused);
		return;
	}
	rc = urlset_check(us, call->ctx->urls, bk.keys, NULL, bk.nkeys,
	    kcounts, &tally);
	urlset_add_tally(us, &tally);
	if (rc != STORE_OK) {
		reply_store_error(r, rc);
		return;
	}
	memset(counts, 0, bk.n * sizeof(*counts));
	for (size_t i = 0; i < bk.nkeys; i++)
		counts[bk.pos[i]] = kcounts[i];
	write_results(r, counts, bk.n, bk.bad, bk.nbad);
}

/* A url_submit or url_delete request travelling through the URL writer. */
struct url_job {
	struct urlset_job uj;
	struct reply reply;
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

	if (uj->status == STORE_OK) {
		for (size_t i = 0; i < j->bk.nkeys; i++)
			j->counts[j->bk.pos[i]] = j->kcounts[i];
		write_results(&j->reply, j->counts, j->bk.n, j->bk.bad,
		    j->bk.nbad);
	} else
		reply_store_error(&j->reply, uj->status);
	reply_finish(&j->reply);
	url_job_free(j);
}

/*
 * A url_submit (op URLSET_SUBMIT) or url_delete (URLSET_DELETE) batch:
 * answered at once when there is nothing to write, else a job for the URL
 * writer, which answers once it is as durable as the batch asked.
 */
static void
mutate(struct op_call *call, enum urlset_op op,
    const Nddd__V1__UrlBatch *batch)
{
	struct urlset *us = call->svc->us;
	size_t n = batch_len(batch);
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
	if ((refused = derive_keys(us, call->ctx->keyer, batch, &j->bk)) !=
	    NULL) {
		reply_error(call->reply, NDDD__V1__CODE__INVALID_ARGUMENT,
		    refused);
		url_job_free(j);
		return;
	}
	if (j->bk.nkeys == 0) {
		/* Nothing to write. */
		write_results(call->reply, j->counts, n, j->bk.bad,
		    j->bk.nbad);
		url_job_free(j);
		return;
	}
	j->uj.op = op;
	switch (batch->durability) {
	case NDDD__V1__DURABILITY__DURABLE:
		j->uj.durability = URLSET_DURABLE;
		break;
	case NDDD__V1__DURABILITY__RELAXED:
		j->uj.durability = URLSET_RELAXED;
		break;
	default:
		j->uj.durability = call->svc->durability;
		break;
	}
	j->uj.keys = j->bk.keys;
	j->uj.n = j->bk.nkeys;
	j->uj.counts = j->kcounts;
	j->uj.done = url_job_done;
	reply_move(&j->reply, call->reply);
	urlset_submit_job(us, &j->uj);
	return;
nomem:
	if (j != NULL)
		url_job_free(j);
	reply_error(call->reply, NDDD__V1__CODE__INTERNAL, "out of memory");
}

void
urlreq_submit(struct op_call *call)
{
	mutate(call, URLSET_SUBMIT, call->req->url_submit);
}

void
urlreq_delete(struct op_call *call)
{
	mutate(call, URLSET_DELETE, call->req->url_delete);
}
