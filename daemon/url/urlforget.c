/*
 * urlforget: forgetting a namespace's URLs by host or by URL prefix, in the
 * URL writer: the fingerprints of the host index's keys in the range, in
 * every run (urlhostidx.c writes the runs), deleted through the journal in
 * durable groups, exactly, like any delete.
 *
 * Entries outlive their records (deletes, expiry, forgets, dropped
 * namespaces): a forget deletes only what the store holds, and counts
 * that.
 */
#include <stdlib.h>
#include <string.h>

#include "urlhostrun.h"
#include "urlhosts.h"
#include "urlset_impl.h"

/* URLs deleted per step of a forget, at most. */
#define FORGET_STEP		4096

/* Fingerprints a forget found, to delete. */
struct fp_list {
	uint8_t (*fp)[CBF_FP_LEN];
	size_t n, cap;
};

static int
fp_add(struct fp_list *l, const uint8_t *fp)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 1024;
		void *p = realloc(l->fp, cap * sizeof(*l->fp));

		if (p == NULL)
			return -1;
		l->fp = p;
		l->cap = cap;
	}
	memcpy(l->fp[l->n++], fp, CBF_FP_LEN);
	return 0;
}

static int
cmp_fp(const void *a, const void *b)
{
	return memcmp(a, b, CBF_FP_LEN);
}

/* Adds the fingerprints of every run's keys under prefix to l. */
static int
find_range(struct urlset *us, const uint8_t *prefix, size_t plen,
    struct fp_list *l)
{
	struct hostrun_iter it;
	int rc = STORE_OK;

	if ((rc = store_reader_begin(us->w.wrd->txn)) != STORE_OK)
		return rc;
	for (size_t r = 0; r < us->hosts.nruns && rc == STORE_OK; r++) {
		bool done = false;

		if ((rc = hostrun_iter_init(&it, us->w.wrd->txn,
		    &us->hosts.runs[r], prefix, plen)) != STORE_OK) {
			hostrun_iter_free(&it);
			break;
		}
		while ((rc = hostrun_iter_next(&it, &done)) == STORE_OK &&
		    !done) {
			int c = memcmp(it.key, prefix, it.klen < plen ?
			    it.klen : plen);

			if (c == 0 && it.klen >= plen + CBF_FP_LEN) {
				if (fp_add(l, urlhosts_key_fp(it.key,
				    it.klen)) == -1) {
					rc = STORE_FAILED;
					break;
				}
			} else if (c > 0)
				break;		/* past the range */
		}
		hostrun_iter_free(&it);
	}
	store_reader_end(us->w.wrd->txn);
	return rc;
}

/* Deletes the records of l's fingerprints, durably, in steps of at most
 * cap; counts those the store held in *forgotten. */
static int
delete_found(struct urlset *us, struct urlset_job *job,
    const struct fp_list *l, size_t cap)
{
	struct url_key *keys = malloc(cap * sizeof(*keys));
	struct url_state *states = malloc(cap * sizeof(*states));
	struct urlset_job step;
	int rc = STORE_OK;

	if (keys == NULL || states == NULL)
		rc = STORE_FAILED;
	for (size_t at = 0; at < l->n && rc == STORE_OK; at += cap) {
		size_t n = l->n - at < cap ? l->n - at : cap;

		for (size_t i = 0; i < n; i++) {
			memcpy(keys[i].fp, l->fp[at + i], CBF_FP_LEN);
			cbf_indices(us->filter, keys[i].fp, keys[i].idx);
		}
		memset(&step, 0, sizeof(step));
		step.op = URLSET_DELETE;
		step.durability = URLSET_DURABLE;
		memcpy(step.ns, job->ns, sizeof(step.ns));
		step.keys = keys;
		step.n = n;
		step.states = states;
		urlset_apply_group(us, &step);
		if ((rc = step.status) != STORE_OK)
			break;
		for (size_t i = 0; i < n; i++)
			job->forget->forgotten += states[i].count > 0;
	}
	free(keys);
	free(states);
	return rc;
}

int
urlset_forget(struct urlset *us, struct urlset_job *job)
{
	struct urlset_forget *f = job->forget;
	uint8_t prefix[URLHOSTS_KEY_MAX];
	struct fp_list l = { NULL, 0, 0 };
	size_t plen, cap, n = 0;
	uint32_t id;
	int rc = STORE_OK;

	f->forgotten = 0;
	/* Every text into a run first: the search reads only the runs. */
	if (us->hosts.texts_len > 0 && (rc = urlset_flush(us, true)) !=
	    STORE_OK)
		return rc;
	f->complete = !us->hosts.partial;
	if ((id = urlns_find(us->ns, job->ns, strlen(job->ns), NULL)) ==
	    URLNS_NONE)
		return STORE_OK;
	for (int r = 0; r < (f->host != NULL && f->subdomains ? 2 : 1) &&
	    rc == STORE_OK; r++) {
		if (f->host != NULL)
			plen = urlhosts_host_prefix(id, f->host, f->hlen,
			    r == 0 ? '\0' : '.', prefix);
		else
			plen = urlhosts_url_prefix(id, f->prefix, f->plen,
			    prefix);
		if (plen > 0)
			rc = find_range(us, prefix, plen, &l);
	}
	/* A URL in several runs is deleted once. */
	if (l.n > 1)
		qsort(l.fp, l.n, sizeof(*l.fp), cmp_fp);
	for (size_t i = 0; i < l.n; i++)
		if (n == 0 || memcmp(l.fp[n - 1], l.fp[i], CBF_FP_LEN) != 0)
			memcpy(l.fp[n++], l.fp[i], CBF_FP_LEN);
	l.n = n;
	/* A step fits the journal's table, as a group must. */
	if ((cap = urlmem_capacity(us->mem) / 2) > FORGET_STEP)
		cap = FORGET_STEP;
	if (cap == 0)
		cap = 1;
	if (rc == STORE_OK)
		rc = delete_found(us, job, &l, cap);
	free(l.fp);
	return rc;
}
