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
#include "urlset.h"
#include "writer.h"

/* One URL of a batch that failed before reaching the store. */
struct bad_item {
	uint32_t pos;
	const char *cause;	/* static */
};

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

void
urlreq_check(struct urlset *us, struct url_keyer *k, struct store_txn *rd,
    struct arena *a, uint64_t id, const Nddd__V1__UrlBatch *batch,
    struct evbuffer *out)
{
	size_t n = batch ? batch->n_urls : 0, nbad = 0;
	struct urlset_tally tally = { 0 };
	struct url_key *keys;
	uint64_t *counts;
	struct bad_item *bad;
	bool *ok;
	int rc = STORE_OK;

	keys = arena_alloc(a, n * sizeof(*keys) + 1);
	counts = arena_alloc(a, n * sizeof(*counts) + 1);
	bad = arena_alloc(a, n * sizeof(*bad) + 1);
	ok = arena_alloc(a, n * sizeof(*ok) + 1);
	if (keys == NULL || counts == NULL || bad == NULL || ok == NULL) {
		frame_write_error(out, id, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	/* Keys first, prefetching their counters, then the lookups: the
	 * filter's cache misses overlap instead of queueing. */
	for (size_t i = 0; i < n; i++) {
		const ProtobufCBinaryData *url = &batch->urls[i];
		const char *cause;

		counts[i] = 0;
		ok[i] = urlset_key(k, (const char *)url->data, url->len,
		    &keys[i], &cause) == 0;
		if (!ok[i]) {
			bad[nbad].pos = (uint32_t)i;
			bad[nbad++].cause = cause;
			continue;
		}
		urlset_prefetch(us, &keys[i]);
	}
	if (n > nbad && (rc = store_reader_begin(rd)) == STORE_OK) {
		for (size_t i = 0; i < n && rc == STORE_OK; i++)
			if (ok[i])
				rc = urlset_check(us, rd, &keys[i], &counts[i],
				    &tally);
		store_reader_end(rd);
	}
	urlset_add_tally(us, &tally);
	if (rc != STORE_OK) {
		frame_write_error(out, id, NDDD__V1__CODE__INTERNAL,
		    store_strstatus(rc));
		return;
	}
	write_results(out, id, counts, n, bad, nbad);
}

/* A url_submit or url_delete request travelling through the writer. */
struct url_job {
	struct writer_job wj;
	enum urlreq_op op;
	struct urlset *us;
	struct request_origin origin;
	size_t n;			/* URLs in the request */
	size_t nbad;
	struct bad_item *bad;
	uint64_t *counts;		/* per URL of the request */
	size_t nitems;			/* valid URLs */
	struct job_item {
		struct url_key key;
		uint32_t pos;
		bool added;		/* submit incremented the filter */
		bool removed;		/* delete found a record */
		uint32_t removed_idx[CBF_K];
	} items[];
};

static int
url_job_apply(struct writer_job *wj, struct store_txn *txn)
{
	struct url_job *j = (struct url_job *)wj;
	int rc;

	for (size_t i = 0; i < j->nitems; i++) {
		struct job_item *it = &j->items[i];
		uint64_t *count = &j->counts[it->pos];

		/* The filter's lines for a few items ahead: their misses
		 * overlap with this item's B-tree work. */
		if (i + 8 < j->nitems)
			urlset_prefetch(j->us, &j->items[i + 8].key);
		it->added = it->removed = false;
		if (j->op == URLREQ_SUBMIT)
			rc = urlset_submit(j->us, txn, &it->key, wj->now_ms,
			    count, &it->added);
		else {
			rc = urlset_delete(j->us, txn, &it->key, count,
			    it->removed_idx);
			it->removed = rc == STORE_OK && *count > 0;
		}
		if (rc != STORE_OK)
			return rc;
	}
	return STORE_OK;
}

static void
url_job_committed(struct writer_job *wj)
{
	struct url_job *j = (struct url_job *)wj;
	uint64_t added = 0;

	for (size_t i = 0; i < j->nitems; i++) {
		struct job_item *it = &j->items[i];

		added += it->added;
		if (it->removed)
			urlset_commit_remove(j->us, it->removed_idx);
	}
	if (j->op == URLREQ_SUBMIT)
		urlset_count_committed(j->us, added, j->nitems - added);
}

static void
url_job_aborted(struct writer_job *wj)
{
	struct url_job *j = (struct url_job *)wj;

	for (size_t i = 0; i < j->nitems; i++) {
		struct job_item *it = &j->items[i];

		if (it->added)
			urlset_undo_add(j->us, &it->key);
		it->added = it->removed = false;
	}
}

static void
url_job_free(struct url_job *j)
{
	free(j->bad);
	free(j->counts);
	free(j);
}

static void
url_job_done(struct writer_job *wj)
{
	struct url_job *j = (struct url_job *)wj;
	struct evbuffer *out = evbuffer_new();

	if (out != NULL) {
		if (wj->status == STORE_OK)
			write_results(out, j->origin.id, j->counts, j->n,
			    j->bad, j->nbad);
		else
			frame_write_error(out, j->origin.id,
			    wj->status == STORE_FULL ||
			    wj->status == STORE_TXN_FULL ?
			    NDDD__V1__CODE__RESOURCE_EXHAUSTED :
			    NDDD__V1__CODE__INTERNAL,
			    store_strstatus(wj->status));
	}
	dispatch_finish(&j->origin, out, wj->status != STORE_OK);
	if (out != NULL)
		evbuffer_free(out);
	url_job_free(j);
}

static const struct writer_job_ops url_job_ops = {
	.apply = url_job_apply,
	.committed = url_job_committed,
	.aborted = url_job_aborted,
	.done = url_job_done,
};

bool
urlreq_mutate(struct urlset *us, struct url_keyer *k, struct writer *w,
    const struct request_origin *origin, enum urlreq_op op,
    const Nddd__V1__UrlBatch *batch, struct evbuffer *out)
{
	uint64_t id = origin->id;
	size_t n = batch ? batch->n_urls : 0;
	struct url_job *j;

	j = calloc(1, sizeof(*j) + n * sizeof(j->items[0]));
	if (j == NULL || (j->counts = calloc(n + 1, sizeof(*j->counts))) ==
	    NULL || (j->bad = calloc(n + 1, sizeof(*j->bad))) == NULL) {
		if (j != NULL)
			url_job_free(j);
		frame_write_error(out, id, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return false;
	}
	j->wj.ops = &url_job_ops;
	j->op = op;
	j->us = us;
	j->origin = *origin;
	j->n = n;
	for (size_t i = 0; i < n; i++) {
		const ProtobufCBinaryData *url = &batch->urls[i];
		struct job_item *it = &j->items[j->nitems];
		const char *cause;

		if (urlset_key(k, (const char *)url->data, url->len, &it->key,
		    &cause) == -1) {
			j->bad[j->nbad].pos = (uint32_t)i;
			j->bad[j->nbad++].cause = cause;
			continue;
		}
		it->pos = (uint32_t)i;
		j->nitems++;
	}
	if (j->nitems == 0) {
		/* Nothing to write. */
		write_results(out, id, j->counts, n, j->bad, j->nbad);
		url_job_free(j);
		return false;
	}
	j->wj.cost = j->nitems;
	writer_submit(w, &j->wj);
	return true;
}
