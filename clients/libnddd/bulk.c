/*
 * bulk: libnddd's pipelined loops, nddd_urls, nddd_digests and nddd_docs:
 * a call's items cut into batches, up to a window of them in flight on
 * one connection, each reply's results moved to the items' places.  One
 * loop (pipeline_run) serves every kind of item, each kind saying how it
 * fills and sends a batch and takes its results (urlbulk.c's is another).  The requests are
 * request.c's, the replies reader.c's (by nddd_recv); the other files are
 * listed in nddd_impl.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nddd.h"
#include "nddd_impl.h"

/* The place in the call's input of the j-th item f sent. */
size_t
inflight_place(const struct inflight *f, size_t j)
{
	return f->base + (f->pos != NULL ? f->pos[j] : j);
}

/*
 * Batch k of the *nfl in flight is answered: the last takes its place,
 * and its slot of positions goes to the free ones after them.
 */
static void
inflight_retire(struct inflight *fl, size_t *nfl, size_t k)
{
	size_t *slot = fl[k].pos;

	fl[k] = fl[--*nfl];
	fl[*nfl].pos = slot;
}

/*
 * Waits for the reply to one of the nfl batches in flight: returns its
 * index, with the reply in *rp, or (size_t)-1 when the connection failed
 * or the reply is to no batch of ours (a refusal of the connection, id 0).
 */
static size_t
recv_inflight(nddd_client *c, const struct inflight *fl, size_t nfl,
    struct nddd_reply **rp)
{
	struct nddd_reply *r;
	size_t k;

	if (nddd_recv(c, &r) == -1)
		return (size_t)-1;
	for (k = 0; k < nfl && fl[k].id != r->id; k++)
		;
	if (k < nfl) {
		*rp = r;
		return k;
	}
	if (r->kind == NDDD_REPLY_ERROR)
		client_fail(c, "%s: %s", nddd_code_name(r->code), r->message);
	else
		client_fail(c, "reply to an unknown request %llu",
		    (unsigned long long)r->id);
	nddd_reply_free(r);
	return (size_t)-1;
}

/*
 * Slots for the window of p, each with room for the positions of batch
 * items when with_pos.  Returns -1 with c's error when out of memory.
 */
int
pipeline_init(struct pipeline *p, size_t batch, int with_pos)
{
	if ((p->fl = calloc(p->window, sizeof(*p->fl))) == NULL)
		return client_fail(p->c, "out of memory");
	if (!with_pos)
		return 0;
	/* fl[nfl..window) hold the free slots of positions. */
	if ((p->pos = calloc((size_t)p->window * batch, sizeof(*p->pos))) ==
	    NULL)
		return client_fail(p->c, "out of memory");
	for (unsigned i = 0; i < p->window; i++)
		p->fl[i].pos = p->pos + (size_t)i * batch;
	return 0;
}

void
pipeline_free(struct pipeline *p)
{
	free(p->fl);
	free(p->pos);
}

static void
pipeline_advance(struct pipeline *p, size_t n)
{
	p->done += n;
	if (p->progress != NULL)
		p->progress(p->done, p->arg);
}

/*
 * After a connection error: every item of the first nfl batches in
 * flight, and every one not sent, is lost.
 */
static void
pipeline_lost(struct pipeline *p, size_t nfl)
{
	for (size_t k = 0; k < nfl; k++)
		for (size_t j = 0; j < p->fl[k].nsent; j++)
			p->unavailable(p, inflight_place(&p->fl[k], j));
	for (size_t i = p->sent; i < p->n; i++)
		p->unavailable(p, i);
}

/*
 * Runs p until every item is answered.  Returns -1, with c's error, when
 * some item failed (its result says why) or the connection did (every
 * item without an answer is then NDDD_UNAVAILABLE).
 */
int
pipeline_run(struct pipeline *p)
{
	int rc = 0;

	while (p->done < p->n) {
		struct nddd_reply *r;
		size_t k, answered;

		while (p->sent < p->n && p->nfl < p->window) {
			struct inflight *f = &p->fl[p->nfl];
			int sent;

			f->base = p->sent;
			if ((sent = p->batch(p, f)) == BATCH_FAILED)
				return -1;
			p->sent += f->n;
			if (sent == BATCH_LOST) {
				pipeline_lost(p, p->nfl + 1);
				return -1;
			}
			/* Every one refused here: nothing to ask. */
			if (f->nsent == 0) {
				pipeline_advance(p, f->n);
				continue;
			}
			p->nfl++;
		}
		if (p->nfl == 0)
			continue;	/* the rest was answered here */
		k = recv_inflight(p->c, p->fl, p->nfl, &r);
		if (k == (size_t)-1) {
			pipeline_lost(p, p->nfl);
			return -1;
		}
		if (p->take(p, &p->fl[k], r) == -1)
			rc = -1;
		answered = p->fl[k].n;
		inflight_retire(p->fl, &p->nfl, k);
		nddd_reply_free(r);
		pipeline_advance(p, answered);
	}
	return rc;
}

/*
 * What a URL loop sends: urls as text (or as the digests the client's
 * canonicalizer makes of them, after nddd_use_digests), or digests made
 * already with the canonicalization canon_id.
 */
struct url_source {
	const char *const *urls;
	const unsigned char *digests;
	const char *canon_id;
};

/* A URL loop's own. */
struct url_loop {
	enum nddd_url_op op;
	const struct url_source *src;
	struct nddd_url_result *results;
	size_t batch;
	int canon;		/* URLs go as the client's digests */
	unsigned char *digests;	/* ... made here: one batch's, copied out
				   when queued */
};

/* URLs digested at once by canon_batch (urldigest's batch). */
#define CANON_CHUNK	256

/*
 * Digests of urls[0..n) into digests; the valid ones' positions go to pos,
 * the invalid ones get their result now.  Returns how many are valid, or
 * (size_t)-1 when out of memory.
 */
static size_t
canon_batch(nddd_canon *k, const char *const *urls, size_t n,
    struct nddd_url_result *results, unsigned char *digests, size_t *pos)
{
	const char *causes[CANON_CHUNK];
	size_t lens[CANON_CHUNK], nv = 0;

	for (size_t i = 0; i < n; i += CANON_CHUNK) {
		size_t m = n - i < CANON_CHUNK ? n - i : CANON_CHUNK;

		for (size_t j = 0; j < m; j++)
			lens[j] = strlen(urls[i + j]);
		/* At i, above the valid ones' digests packed so far. */
		canon_digest_many(k, urls + i, lens, m,
		    digests + i * NDDD_DIGEST_LEN, causes);
		for (size_t j = 0; j < m; j++) {
			if (causes[j] == NULL) {
				memmove(digests + nv * NDDD_DIGEST_LEN,
				    digests + (i + j) * NDDD_DIGEST_LEN,
				    NDDD_DIGEST_LEN);
				pos[nv++] = i + j;
				continue;
			}
			results[i + j].code = NDDD_INVALID_ARGUMENT;
			results[i + j].count = 0;
			if ((results[i + j].message = strdup(causes[j])) ==
			    NULL)
				return (size_t)-1;
		}
	}
	return nv;
}

static int
url_batch(struct pipeline *p, struct inflight *f)
{
	struct url_loop *u = p->ctx;
	const struct url_source *src = u->src;
	nddd_client *c = p->c;
	size_t m = p->n - p->sent < u->batch ? p->n - p->sent : u->batch;
	int rc;

	f->n = f->nsent = m;
	if (src->digests != NULL)
		rc = nddd_send_digests(c, u->op, src->canon_id,
		    src->digests + p->sent * NDDD_DIGEST_LEN, m, &f->id);
	else if (!u->canon)
		rc = nddd_send_urls(c, u->op, src->urls + p->sent, NULL, m,
		    &f->id);
	else {
		f->nsent = canon_batch(c->canon, src->urls + p->sent, m,
		    u->results + p->sent, u->digests, f->pos);
		if (f->nsent == (size_t)-1) {
			client_fail(c, "out of memory");
			return BATCH_FAILED;
		}
		if (f->nsent == 0)
			return BATCH_SENT;
		rc = nddd_send_digests(c, u->op, nddd_canon_id(c->canon),
		    u->digests, f->nsent, &f->id);
	}
	return rc == 0 ? BATCH_SENT : BATCH_LOST;
}

/* Moves reply r's results into the batch f's places of results. */
static int
url_take(struct pipeline *p, const struct inflight *f, struct nddd_reply *r)
{
	struct url_loop *u = p->ctx;
	int rc = 0;

	for (size_t j = 0; j < f->nsent; j++) {
		struct nddd_url_result *res =
		    &u->results[inflight_place(f, j)];

		if (r->kind == NDDD_REPLY_URLS && j < r->nresults) {
			*res = r->results[j];
			r->results[j].message = NULL;
		} else {
			res->code = r->kind == NDDD_REPLY_ERROR ? r->code :
			    NDDD_INTERNAL;
			res->message = strdup(r->message ? r->message :
			    "reply has too few results");
			rc = -1;
		}
	}
	if (r->kind == NDDD_REPLY_ERROR)
		client_fail(p->c, "batch refused: %s: %s",
		    nddd_code_name(r->code), r->message);
	return rc;
}

static void
url_unavailable(struct pipeline *p, size_t i)
{
	struct url_loop *u = p->ctx;

	u->results[i].code = NDDD_UNAVAILABLE;
	u->results[i].message = strdup(p->c->err);
}

/* nddd_urls and nddd_digests: batches of src, pipelined. */
static int
url_loop(nddd_client *c, enum nddd_url_op op, const struct url_source *src,
    size_t n, struct nddd_url_result *results, size_t batch,
    unsigned window, void (*progress)(size_t done, void *arg), void *arg)
{
	struct url_loop u = { .op = op, .src = src, .results = results,
	    .batch = batch != 0 ? batch : 1000,
	    .canon = src->urls != NULL && c->canon != NULL };
	struct pipeline p = { .c = c, .n = n, .window = window != 0 ?
	    window : 1, .progress = progress, .arg = arg, .ctx = &u,
	    .batch = url_batch, .take = url_take,
	    .unavailable = url_unavailable };
	int rc = -1;

	if (pipeline_init(&p, u.batch, u.canon) == -1)
		goto out;
	if (u.canon && (u.digests = calloc(u.batch, NDDD_DIGEST_LEN)) ==
	    NULL) {
		client_fail(c, "out of memory");
		goto out;
	}
	memset(results, 0, n * sizeof(*results));
	rc = pipeline_run(&p);
out:
	pipeline_free(&p);
	free(u.digests);
	return rc;
}

int
nddd_urls(nddd_client *c, enum nddd_url_op op, const char *const *urls,
    size_t n, struct nddd_url_result *results, size_t batch,
    unsigned window, void (*progress)(size_t done, void *arg), void *arg)
{
	struct url_source src = { .urls = urls };

	return url_loop(c, op, &src, n, results, batch, window, progress, arg);
}

int
nddd_digests(nddd_client *c, enum nddd_url_op op, const char *canon_id,
    const unsigned char *digests, size_t n, struct nddd_url_result *results,
    size_t batch, unsigned window)
{
	struct url_source src = { .digests = digests, .canon_id = canon_id };

	return url_loop(c, op, &src, n, results, batch, window, NULL, NULL);
}

void
nddd_urls_results_free(struct nddd_url_result *results, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)results[i].message);
		results[i].message = NULL;
	}
}

/* A doc loop's own. */
struct doc_loop {
	const struct nddd_doc_item *docs;
	struct nddd_doc *results;
	struct nddd_doc_item *items;	/* one batch's, to send */
	size_t batch, max_bytes, room;
};

/*
 * Fills f by count and by bytes; a document over the half frame goes
 * alone, one over the frame not at all.
 */
static int
doc_batch(struct pipeline *p, struct inflight *f)
{
	struct doc_loop *dl = p->ctx;
	nddd_client *c = p->c;
	size_t bytes = 0;

	f->n = f->nsent = 0;
	while (p->sent + f->n < p->n && f->n < dl->batch) {
		const struct nddd_doc_item *d = &dl->docs[p->sent + f->n];
		size_t size = nddd_doc_item_size(d) + request_doc_ns_bytes(c);

		if (size > dl->room) {
			struct nddd_doc *res = &dl->results[p->sent + f->n];

			res->code = NDDD_RESOURCE_EXHAUSTED;
			if (asprintf((char **)&res->message, "a document of "
			    "%zu bytes exceeds the max frame (%zu bytes)",
			    size, c->max_frame) == -1)
				res->message = NULL;
			f->n++;
			continue;
		}
		if (f->nsent > 0 && bytes + size > dl->max_bytes)
			break;
		bytes += size;
		dl->items[f->nsent] = *d;
		f->pos[f->nsent++] = f->n++;
	}
	if (f->nsent == 0)
		return BATCH_SENT;
	return nddd_send_docs(c, dl->items, f->nsent, &f->id) == 0 ?
	    BATCH_SENT : BATCH_LOST;
}

/* Moves a doc batch reply's results into f's places of results. */
static int
doc_take(struct pipeline *p, const struct inflight *f, struct nddd_reply *r)
{
	struct doc_loop *dl = p->ctx;
	int rc = 0;

	for (size_t j = 0; j < f->nsent; j++) {
		struct nddd_doc *res = &dl->results[inflight_place(f, j)];

		if (r->kind == NDDD_REPLY_DOCS && j < r->ndocs) {
			*res = r->docs[j];
			memset(&r->docs[j], 0, sizeof(r->docs[j]));
			continue;
		}
		res->code = r->kind == NDDD_REPLY_ERROR ? r->code :
		    NDDD_INTERNAL;
		res->message = strdup(r->kind == NDDD_REPLY_ERROR && r->message ?
		    r->message : "reply has too few results");
		res->url = "";
		rc = -1;
	}
	if (rc == -1 && r->kind == NDDD_REPLY_ERROR)
		client_fail(p->c, "batch refused: %s: %s",
		    nddd_code_name(r->code), r->message);
	else if (rc == -1)
		client_fail(p->c, "reply to a doc batch has too few results");
	return rc;
}

static void
doc_unavailable(struct pipeline *p, size_t i)
{
	struct doc_loop *dl = p->ctx;

	dl->results[i].code = NDDD_UNAVAILABLE;
	dl->results[i].message = strdup(p->c->err);
}

int
nddd_docs(nddd_client *c, const struct nddd_doc_item *docs, size_t n,
    struct nddd_doc *results, size_t batch, unsigned window,
    void (*progress)(size_t done, void *arg), void *arg)
{
	struct doc_loop dl = { .docs = docs, .results = results,
	    .batch = batch != 0 ? batch : 256, .room = request_doc_room(c) };
	struct pipeline p = { .c = c, .n = n, .window = window != 0 ?
	    window : 1, .progress = progress, .arg = arg, .ctx = &dl,
	    .batch = doc_batch, .take = doc_take,
	    .unavailable = doc_unavailable };
	size_t limit = nddd_doc_batch_limit(c, &dl.max_bytes);
	int rc = -1;

	if (dl.batch > limit)
		dl.batch = limit;
	memset(results, 0, n * sizeof(*results));
	for (size_t i = 0; i < n; i++)
		results[i].url = "";
	if (pipeline_init(&p, dl.batch, 1) == -1)
		goto out;
	if ((dl.items = calloc(dl.batch, sizeof(*dl.items))) == NULL) {
		client_fail(c, "out of memory");
		goto out;
	}
	rc = pipeline_run(&p);
out:
	pipeline_free(&p);
	free(dl.items);
	return rc;
}

void
nddd_docs_results_free(struct nddd_doc *results, size_t n)
{
	for (size_t i = 0; i < n; i++)
		reader_doc_release(&results[i]);
}
