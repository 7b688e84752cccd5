/*
 * docreq: the document operations of the protocol.  See docreq.h.
 *
 * doc_submit, doc_query by body and doc_batch are one thing here: a batch
 * of documents (one, or many), each fingerprinted, then stored or only
 * answered, in request order.  A batch holds everything its documents
 * need after the request's memory is gone (their canonical URLs; their
 * bodies too when they go to a plugin), and its reply.
 */
#include "docreq.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "accel.h"
#include "docfp.h"
#include "docset.h"
#include "reply.h"
#include "shardstate.h"
#include "simhash.h"
#include "store.h"
#include "urlset.h"
#include "workers.h"
#include "writer.h"

/* How a batch is answered. */
enum doc_answer {
	ANSWER_DOC,		/* doc_submit: a DocResult, or the error */
	ANSWER_QUERY,		/* doc_query by body: a DocQueryResult */
	ANSWER_BATCH,		/* doc_batch: DocResults, errors per item */
};

struct doc_item {
	uint8_t key[DOCSET_KEY_LEN];	/* in its namespace */
	size_t url_off, url_len;	/* canonical, in the batch's urls */
	bool has_url;			/* doc_query has none */
	size_t ns_off, ns_len;		/* its namespace's name, in the
					   batch's urls; ns_len 0: the
					   default one */
	bool store;			/* stored; else only answered */
	uint64_t join;			/* the group it joins; 0: decided
					   here */
	enum simhash_input input;
	const uint8_t *body;		/* the request's, or the batch's copy */
	size_t body_len;
	bool hamming;			/* the Hamming answer, not verified */
	bool with_sketch;		/* its sketch sent back */
	/* OK, or why the document failed (message: static). */
	Nddd__V1__Code code;
	const char *message;
	uint64_t fp;
	bool has_sketch;		/* else a fingerprint alone */
	struct sketch sketch;
	enum docfp_content content;
	/* The answer. */
	uint64_t id, group;
	bool created;
	uint64_t created_ms;		/* its URL's document's first time */
	uint64_t stored_id;		/* only answered: its URL's document */
	struct docset_neighbour *near;
	size_t nnear;
	uint64_t near_total;
	struct doc_undo undo;		/* the store writer's, for an abort */
};

struct doc_batch {
	struct writer_job wj;		/* when documents are stored */
	struct worker_task wt;		/* queries after a plugin */
	struct docreq_env *env;
	struct reply reply;
	enum doc_answer answer;
	unsigned k;
	size_t max_near;		/* neighbours read per document */
	size_t nstore;			/* documents to store */
	char *urls;			/* the canonical URLs, and the
					   namespaces' names */
	size_t urls_len, urls_cap;
	uint8_t *bodies;		/* copies for a plugin, or NULL */
	size_t at_accel;		/* loop: documents not back yet */
	struct doc_batch *next;		/* loop: the pending list */
	/* Its place in a shard list: the documents of other shards' URLs
	 * fail with moved, and neighbours of theirs are left out. */
	struct shard_view shard;
	struct shard_state *admitted;	/* a write: admitted there */
	unsigned ticket;
	char moved[SHARD_MOVED_MSG_LEN];
	size_t n;
	struct doc_item items[];
};

/* The batch of its worker task. */
#define BATCH_OF_TASK(t)						\
	((struct doc_batch *)((char *)(t) - offsetof(struct doc_batch, wt)))

static void
batch_free(struct doc_batch *b)
{
	if (b == NULL)
		return;
	if (b->admitted != NULL)
		shard_release(b->admitted, b->ticket);
	for (size_t i = 0; i < b->n; i++)
		docset_neighbours_free(b->items[i].near, b->items[i].nnear);
	free(b->urls);
	free(b->bodies);
	free(b);
}

/*
 * A batch of n documents; write: it may store some, so it is admitted
 * under the shard state (shardstate.h) until it is freed.
 */
static struct doc_batch *
batch_new(struct op_call *call, enum doc_answer answer, size_t n,
    unsigned k, bool write)
{
	struct docreq_env *env = call->svc->docs;
	struct doc_batch *b;

	if ((b = calloc(1, sizeof(*b) + n * sizeof(b->items[0]))) == NULL)
		return NULL;
	if (write) {
		b->admitted = call->svc->shard;
		b->ticket = shard_admit(b->admitted, &b->shard);
	} else
		shard_state_view(call->svc->shard, &b->shard);
	b->env = env;
	b->answer = answer;
	b->n = n;
	b->k = k;
	/* A batch's reply lists a few per document; the rest is counted. */
	b->max_near = answer == ANSWER_BATCH &&
	    env->max_results > DOCREQ_BATCH_NEAR_MAX ? DOCREQ_BATCH_NEAR_MAX :
	    env->max_results;
	return b;
}

static const char *
item_url(const struct doc_batch *b, const struct doc_item *it)
{
	return it->has_url ? b->urls + it->url_off : NULL;
}

/* The name of its namespace, "" for the default one. */
static const char *
item_ns(const struct doc_batch *b, const struct doc_item *it)
{
	return it->ns_len > 0 ? b->urls + it->ns_off : "";
}

static void
item_fail(struct doc_item *it, Nddd__V1__Code code, const char *message)
{
	it->code = code;
	it->message = message;
}

/* ---- Replies. ---- */

/* The reply's Neighbour messages of nb[0..n), pointing into it, in m and
 * their addresses in v. */
static void
neighbour_messages(const struct docset_neighbour *nb, size_t n,
    Nddd__V1__Neighbour *m, Nddd__V1__Neighbour **v)
{
	for (size_t i = 0; i < n; i++) {
		nddd__v1__neighbour__init(&m[i]);
		m[i].doc_id = nb[i].id;
		m[i].url.data = (uint8_t *)nb[i].url;
		m[i].url.len = nb[i].url_len;
		m[i].distance = nb[i].distance;
		m[i].group = nb[i].group;
		m[i].created_ms = nb[i].created_ms;
		m[i].resemblance = nb[i].resemblance;
		m[i].containment = nb[i].containment;
		m[i].verified = nb[i].verified;
		v[i] = &m[i];
	}
}

/* Room for n Neighbour messages and their addresses, in one allocation:
 * the messages in *m; returns the addresses (free that), or NULL. */
static Nddd__V1__Neighbour **
neighbour_room(size_t n, Nddd__V1__Neighbour **m)
{
	Nddd__V1__Neighbour **v = calloc(n + 1, sizeof(*v) + sizeof(**m));

	*m = v != NULL ? (Nddd__V1__Neighbour *)(v + n + 1) : NULL;
	return v;
}

/* Bytes of a varint holding v. */
static size_t
varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Bytes of a field of varint v with a one-byte tag; proto3 leaves 0 out. */
static size_t
varint_field_size(uint64_t v)
{
	return v != 0 ? 1 + varint_size(v) : 0;
}

/* Bytes of a Neighbour message, as protobuf-c packs it (without asking it:
 * this runs for every neighbour of every reply). */
static size_t
neighbour_size(const Nddd__V1__Neighbour *m)
{
	return varint_field_size(m->doc_id) + (m->url.len > 0 ?
	    1 + varint_size(m->url.len) + m->url.len : 0) +
	    varint_field_size(m->distance) + varint_field_size(m->group) +
	    varint_field_size(m->created_ms) + (m->resemblance != 0 ? 5 : 0) +
	    (m->containment != 0 ? 5 : 0) + (m->verified ? 2 : 0);
}

/*
 * How many of the n neighbours (nearest first) fit in budget bytes when
 * the rest of the message takes base bytes.  A neighbour's URL may be
 * 16 KiB: a long list is cut here, and near_total still tells the client
 * how many there are.
 */
static size_t
neighbours_that_fit(Nddd__V1__Neighbour **v, size_t n, size_t base,
    size_t budget)
{
	/* Room for the lengths of the messages around the list, which grow
	 * with it. */
	size_t size = base + 16;

	for (size_t i = 0; i < n; i++) {
		size_t one = neighbour_size(v[i]);

		size += 1 + varint_size(one) + one;
		if (size > budget)
			return i;
	}
	return n;
}

/* The most one reply of r may take. */
static size_t
reply_budget(const struct reply *r)
{
	return r->bound < r->max_frame ? r->bound : r->max_frame;
}

/*
 * Fills res from it, with its neighbours' messages in m and their
 * addresses in res->near (v: room for it->nnear of each), but none counted
 * yet in res->n_near: the caller decides how many fit.
 */
static void
doc_result(Nddd__V1__DocResult *res, const struct doc_item *it,
    Nddd__V1__Neighbour *m, Nddd__V1__Neighbour **v, uint8_t *wire)
{
	nddd__v1__doc_result__init(res);
	neighbour_messages(it->near, it->nnear, m, v);
	res->near = v;
	res->doc_id = it->id;
	res->simhash = it->fp;
	res->group = it->group;
	res->near_total = it->near_total;
	res->created = it->created;
	res->created_ms = it->created_ms;
	res->stored_id = it->stored_id;
	res->content = (Nddd__V1__Content)it->content;
	if (it->with_sketch && it->has_sketch) {
		res->sketch.data = wire;
		res->sketch.len = sketch_encode(&it->sketch, wire);
	}
}

/* Appends doc_submit's DocResult for its one document. */
static void
write_doc(struct reply *r, const struct doc_batch *b, const struct doc_item *it)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__DocResult res;
	Nddd__V1__Neighbour *msgs, **v = neighbour_room(it->nnear, &msgs);
	uint8_t wire[SKETCH_WIRE_MAX];

	if (v == NULL) {
		reply_error(r, NDDD__V1__CODE__INTERNAL, "out of memory");
		return;
	}
	doc_result(&res, it, msgs, v, wire);
	res.url.data = (uint8_t *)item_url(b, it);
	res.url.len = it->url_len;
	resp.id = r->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_DOC;
	resp.doc = &res;
	res.n_near = neighbours_that_fit(res.near, it->nnear,
	    nddd__v1__response__get_packed_size(&resp), reply_budget(r));
	reply_message(r, &resp.base);
	free(v);
}

/* Appends a DocQueryResult (content: what a body was judged by; sk,
 * if not NULL, its sketch). */
static void
write_query(struct reply *r, uint64_t fp, enum docfp_content content,
    const struct sketch *sk, const struct docset_neighbour *nb, size_t n,
    uint64_t total)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__DocQueryResult res = NDDD__V1__DOC_QUERY_RESULT__INIT;
	Nddd__V1__Neighbour *msgs, **v = neighbour_room(n, &msgs);
	uint8_t wire[SKETCH_WIRE_MAX];

	if (v == NULL) {
		reply_error(r, NDDD__V1__CODE__INTERNAL, "out of memory");
		return;
	}
	neighbour_messages(nb, n, msgs, v);
	res.near = v;
	res.simhash = fp;
	res.near_total = total;
	res.content = (Nddd__V1__Content)content;
	if (sk != NULL) {
		res.sketch.data = wire;
		res.sketch.len = sketch_encode(sk, wire);
	}
	resp.id = r->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_DOC_QUERY;
	resp.doc_query = &res;
	res.n_near = neighbours_that_fit(res.near, n,
	    nddd__v1__response__get_packed_size(&resp), reply_budget(r));
	reply_message(r, &resp.base);
	free(v);
}

/*
 * Appends doc_batch's DocResults: each document's result within
 * DOCREQ_BATCH_ITEM_MAX bytes (neighbours cut, nearest kept), the errors
 * of the failed ones.
 */
static void
write_batch(struct reply *r, const struct doc_batch *b)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__DocResults res = NDDD__V1__DOC_RESULTS__INIT;
	Nddd__V1__DocResult *docs, **dv;
	Nddd__V1__ItemError *errs, **ev;
	Nddd__V1__Status *sts;
	Nddd__V1__Neighbour *nm, **nv;
	size_t i, nerr = 0, near = 0, base, n = b->n + 1, sketches = 0;
	uint8_t *wires = NULL, *wire;
	void *mem;

	/* Every message of the reply in one allocation: the results, the
	 * errors, and all the documents' neighbours. */
	for (i = 0; i < b->n; i++) {
		if (b->items[i].code != NDDD__V1__CODE__OK)
			continue;
		near += b->items[i].nnear;
		sketches += b->items[i].with_sketch;
	}
	mem = calloc(1, n * (sizeof(*docs) + sizeof(*dv) + sizeof(*errs) +
	    sizeof(*ev) + sizeof(*sts)) + (near + 1) * (sizeof(*nm) +
	    sizeof(*nv)));
	if (mem == NULL || (sketches > 0 && (wires = malloc(sketches *
	    SKETCH_WIRE_MAX)) == NULL)) {
		free(mem);
		reply_error(r, NDDD__V1__CODE__INTERNAL, "out of memory");
		return;
	}
	docs = mem;
	errs = (Nddd__V1__ItemError *)(docs + n);
	sts = (Nddd__V1__Status *)(errs + n);
	nm = (Nddd__V1__Neighbour *)(sts + n);
	dv = (Nddd__V1__DocResult **)(nm + near + 1);
	wire = wires;
	ev = (Nddd__V1__ItemError **)(dv + n);
	nv = (Nddd__V1__Neighbour **)(ev + n);
	for (i = 0; i < b->n; i++) {
		const struct doc_item *it = &b->items[i];

		dv[i] = &docs[i];
		if (it->code != NDDD__V1__CODE__OK) {
			nddd__v1__doc_result__init(&docs[i]);
			nddd__v1__status__init(&sts[nerr]);
			sts[nerr].code = it->code;
			sts[nerr].message = (char *)it->message;
			nddd__v1__item_error__init(&errs[nerr]);
			errs[nerr].index = (uint32_t)i;
			errs[nerr].status = &sts[nerr];
			ev[nerr] = &errs[nerr];
			nerr++;
			continue;
		}
		doc_result(&docs[i], it, nm, nv, wire);
		nm += it->nnear;
		nv += it->nnear;
		if (it->with_sketch)
			wire += SKETCH_WIRE_MAX;
		base = nddd__v1__doc_result__get_packed_size(&docs[i]);
		docs[i].n_near = neighbours_that_fit(docs[i].near, it->nnear,
		    base, DOCREQ_BATCH_ITEM_MAX);
	}
	res.n_docs = b->n;
	res.docs = dv;
	res.n_errors = nerr;
	res.errors = ev;
	resp.id = r->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_DOCS;
	resp.docs = &res;
	reply_message(r, &resp.base);
	free(mem);
	free(wires);
}

/* Answers b into r, as its operation answers. */
static void
batch_answer(struct doc_batch *b, struct reply *r)
{
	const struct doc_item *it = &b->items[0];

	switch (b->answer) {
	case ANSWER_BATCH:
		write_batch(r, b);
		return;
	case ANSWER_QUERY:
		if (it->code != NDDD__V1__CODE__OK)
			reply_error(r, it->code, it->message);
		else
			write_query(r, it->fp, it->content, it->with_sketch &&
			    it->has_sketch ? &it->sketch : NULL, it->near,
			    it->nnear, it->near_total);
		return;
	case ANSWER_DOC:
		if (it->code != NDDD__V1__CODE__OK)
			reply_error(r, it->code, it->message);
		else
			write_doc(r, b, it);
		return;
	}
}

/* ---- Neighbours and the store. ---- */

/*
 * Leaves out of a list of neighbours those another shard answers for now
 * (shard): while a shard is added, the documents it took over are still
 * here until they are dropped.  An importing shard answers none.
 * near_total loses those left out; the ones beyond the list's end are
 * not read, so it may still count some.  The list stays one allocation,
 * freed as before.
 */
static void
shard_neighbours(const struct shard_view *shard, struct docset_neighbour *nb,
    size_t *n, uint64_t *total)
{
	size_t kept = 0;

	if (shard->importing) {
		*n = 0;
		*total = 0;
		return;
	}
	if (!shard_view_hides(shard))
		return;
	for (size_t i = 0; i < *n; i++) {
		if (shard_view_owns_url(shard, nb[i].url, nb[i].url_len))
			nb[kept++] = nb[i];
		else if (*total > 0)
			(*total)--;
	}
	*n = kept;
}

/*
 * The neighbours of a document only answered, read through txn: a URL
 * already stored is not its own neighbour; a submit with query_only is
 * told the group it would join (its nearest, then oldest, neighbour's).
 */
static int
item_query(struct doc_batch *b, struct doc_item *it, struct store_txn *txn)
{
	struct docreq_env *env = b->env;
	struct doc_record self;
	struct docset_query q = { .fp = it->fp, .k = b->k, .sketch =
	    it->hamming || !it->has_sketch ? NULL : &it->sketch };
	uint32_t ns = docset_ns_find(env->ds, item_ns(b, it));
	int rc;

	if (it->has_url && docset_get(env->ds, txn, ns, it->key, &self) ==
	    STORE_OK) {
		q.exclude = self.id;
		q.exclude_fp = self.fp;
		it->stored_id = self.id;
		it->created_ms = self.created_ms;
	}
	rc = docset_neighbours(env->ds, txn, ns, &q, b->max_near, &it->near,
	    &it->nnear, &it->near_total);
	if (rc == STORE_OK)
		shard_neighbours(&b->shard, it->near, &it->nnear,
		    &it->near_total);
	if (rc == STORE_OK && it->nnear > 0)
		it->group = it->near[0].group;
	return rc;
}

/* Forgets the answers of every document (a retried transaction). */
static void
batch_clear_answers(struct doc_batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct doc_item *it = &b->items[i];

		docset_neighbours_free(it->near, it->nnear);
		it->near = NULL;
		it->nnear = 0;
		it->near_total = 0;
		it->id = it->group = 0;
		it->created = false;
		it->created_ms = it->stored_id = 0;
		memset(&it->undo, 0, sizeof(it->undo));
	}
}

/*
 * Writer thread: every document in request order, so that each sees the
 * ones before it: stored ones put, then their neighbours and group read
 * in the transaction; the others only answered.
 */
static int
batch_apply(struct writer_job *wj, struct store_txn *txn)
{
	struct doc_batch *b = (struct doc_batch *)wj;
	struct docset *ds = b->env->ds;
	struct docset_near_list near;
	struct doc_record r;
	int rc;

	batch_clear_answers(b);
	for (size_t i = 0; i < b->n; i++) {
		struct doc_item *it = &b->items[i];

		if (it->code != NDDD__V1__CODE__OK)
			continue;
		if (!it->store) {
			if ((rc = item_query(b, it, txn)) != STORE_OK)
				return rc;
			continue;
		}
		near.max = b->max_near;
		near.hamming = it->hamming;
		near.list = NULL;
		near.n = 0;
		rc = docset_put(ds, txn, item_ns(b, it), it->key,
		    item_url(b, it), it->url_len, it->fp, it->has_sketch ?
		    &it->sketch : NULL, it->join, wj->now_ms, &r, &it->created,
		    &it->undo, &near);
		/* Freed with the answers, also after a failure. */
		it->near = near.list;
		it->nnear = near.n;
		it->near_total = near.total;
		shard_neighbours(&b->shard, it->near, &it->nnear,
		    &it->near_total);
		if (rc != STORE_OK)
			return rc;
		it->id = r.id;
		it->group = r.group;
		it->created_ms = r.created_ms;
	}
	return STORE_OK;
}

static void
batch_committed(struct writer_job *wj)
{
	(void)wj;	/* the tables changed with the transaction */
}

/* Writer thread: the tables take back what the documents did, last first. */
static void
batch_aborted(struct writer_job *wj)
{
	struct doc_batch *b = (struct doc_batch *)wj;

	for (size_t i = b->n; i-- > 0;) {
		docset_undo(b->env->ds, &b->items[i].undo);
		memset(&b->items[i].undo, 0, sizeof(b->items[i].undo));
	}
}

static void
batch_stored(struct writer_job *wj)
{
	struct doc_batch *b = (struct doc_batch *)wj;

	if (wj->status != STORE_OK)
		reply_store_error(&b->reply, wj->status);
	else
		batch_answer(b, &b->reply);
	reply_finish(&b->reply);
	batch_free(b);
}

static const struct writer_job_ops batch_job_ops = {
	.apply = batch_apply,
	.committed = batch_committed,
	.aborted = batch_aborted,
	.done = batch_stored,
	.journaled = true,
};

/*
 * Answers a batch with nothing to store, through the reader rd (a
 * worker's): reads every document's neighbours, then the reply.
 */
static void
batch_answer_queries(struct doc_batch *b, struct reply *r,
    struct store_txn *rd)
{
	int rc;

	if ((rc = store_reader_begin(rd)) != STORE_OK) {
		reply_store_error(r, rc);
		return;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct doc_item *it = &b->items[i];

		if (it->code == NDDD__V1__CODE__OK &&
		    (rc = item_query(b, it, rd)) != STORE_OK)
			break;
	}
	if (rc != STORE_OK)
		reply_store_error(r, rc);
	else
		batch_answer(b, r);
	store_reader_end(rd);
}

/* A worker, after a plugin computed the fingerprints: the neighbours. */
static void
queries_run(struct worker_task *wt, void *arg)
{
	struct doc_batch *b = BATCH_OF_TASK(wt);
	struct worker_ctx *ctx = arg;

	batch_answer_queries(b, &b->reply, ctx->reader);
}

static void
queries_done(struct worker_task *wt)
{
	struct doc_batch *b = BATCH_OF_TASK(wt);

	reply_finish(&b->reply);
	batch_free(b);
}

static const struct worker_task_ops queries_task_ops = {
	.run = queries_run,
	.done = queries_done,
};

/* Whether a single document's request has nothing left to do. */
static bool
batch_failed_whole(const struct doc_batch *b)
{
	return b->answer != ANSWER_BATCH &&
	    b->items[0].code != NDDD__V1__CODE__OK;
}

/* The store writer takes b, and its reply. */
static void
batch_to_writer(struct doc_batch *b)
{
	b->wj.ops = &batch_job_ops;
	b->wj.cost = b->n;
	writer_submit(b->env->w, &b->wj);
}

/* ---- Fingerprints on a plugin, through the loop. ---- */

/* A document of a job and where it goes back to. */
struct job_ref {
	struct doc_batch *b;
	size_t i;
};

struct fp_job {
	struct job_ref *refs;
	size_t n;
};

static void
empty_document(struct doc_item *it)
{
	item_fail(it, NDDD__V1__CODE__EMPTY_DOCUMENT,
	    "the document has no terms");
}

/* Loop thread: every fingerprint of b is known: where it goes next. */
static void
batch_fingerprinted(struct doc_batch *b)
{
	struct docreq_env *env = b->env;

	free(b->bodies);
	b->bodies = NULL;
	if (batch_failed_whole(b)) {
		batch_answer(b, &b->reply);
		reply_finish(&b->reply);
		batch_free(b);
	} else if (b->nstore > 0)
		batch_to_writer(b);
	else {
		b->wt.ops = &queries_task_ops;
		workers_submit(env->workers, &b->wt);
	}
}

static void
on_fingerprints(struct accel_job *job, void *arg)
{
	struct fp_job *fj = arg;

	for (size_t j = 0; j < fj->n; j++) {
		struct doc_batch *b = fj->refs[j].b;
		struct doc_item *it = &b->items[fj->refs[j].i];

		if (accel_job_result(job, j, &it->fp) == SIMHASH_EMPTY_DOCUMENT)
			empty_document(it);
		else if (it->store)
			b->nstore++;
		b->env->in_accel--;
		if (--b->at_accel == 0)
			batch_fingerprinted(b);
	}
	accel_job_free(job);
	free(fj->refs);
	free(fj);
}

/* Fails every document of the n refs (the job could not be made). */
static void
refs_fail(struct job_ref *refs, size_t n, const char *message)
{
	for (size_t j = 0; j < n; j++) {
		struct doc_batch *b = refs[j].b;

		item_fail(&b->items[refs[j].i], NDDD__V1__CODE__INTERNAL,
		    message);
		b->env->in_accel--;
		if (--b->at_accel == 0)
			batch_fingerprinted(b);
	}
}

/* Hands the n documents of refs, all of input, over as one job. */
static void
submit_job(struct docreq_env *env, struct job_ref *refs, size_t n,
    enum simhash_input input)
{
	struct accel_job *job = accel_job_new(n, input);
	struct fp_job *fj = calloc(1, sizeof(*fj));

	env->in_accel += (unsigned)n;
	if (job == NULL || fj == NULL) {
		free(fj);
		if (job != NULL)
			accel_job_free(job);
		refs_fail(refs, n, "out of memory");
		free(refs);
		return;
	}
	fj->refs = refs;
	fj->n = n;
	for (size_t j = 0; j < n; j++) {
		const struct doc_item *it = &refs[j].b->items[refs[j].i];

		accel_job_set(job, j, it->body, it->body_len);
	}
	if (accel_submit(env->acc, job, on_fingerprints, fj) == -1) {
		accel_job_free(job);
		free(fj);
		refs_fail(refs, n, "cannot submit to the accelerator");
		free(refs);
	}
}

/*
 * The end of a turn of the loop: the documents gathered go to the
 * accelerator as one job per input format, so a burst of requests costs
 * one hand-over, not one each.
 */
static void
flush_pending(evutil_socket_t fd, short what, void *arg)
{
	struct docreq_env *env = arg;
	struct job_ref *by[3] = { NULL, NULL, NULL };
	size_t n[3] = { 0, 0, 0 };
	struct doc_batch *b, *next, *list = env->pending;
	bool oom = false;

	(void)fd;
	(void)what;
	if (list == NULL)
		return;
	env->pending = NULL;
	env->pending_tail = &env->pending;
	for (int f = 0; f < 3; f++)
		if ((by[f] = calloc(env->npending, sizeof(*by[f]))) == NULL)
			oom = true;
	env->npending = 0;
	for (b = list; b != NULL; b = next) {
		next = b->next;
		for (size_t i = 0; i < b->n; i++) {
			struct doc_item *it = &b->items[i];

			if (it->code != NDDD__V1__CODE__OK)
				continue;
			if (oom) {
				item_fail(it, NDDD__V1__CODE__INTERNAL,
				    "out of memory");
				continue;
			}
			by[it->input][n[it->input]].b = b;
			by[it->input][n[it->input]++].i = i;
			b->at_accel++;
		}
		if (b->at_accel == 0)
			batch_fingerprinted(b);
	}
	for (int f = 0; f < 3; f++) {
		if (n[f] > 0)
			submit_job(env, by[f], n[f], (enum simhash_input)f);
		else
			free(by[f]);
	}
}

/*
 * Loop thread: b's documents go to the accelerator, together with the
 * other documents of this turn of the loop; the request is finished from
 * there on.
 */
static void
batch_to_accel(void *arg)
{
	struct doc_batch *b = arg;
	struct docreq_env *env = b->env;

	/* Kept in arrival order (replies and stores follow it). */
	b->next = NULL;
	*env->pending_tail = b;
	env->pending_tail = &b->next;
	if (env->npending == 0)
		event_active(env->flush, EV_TIMEOUT, 1);
	env->npending += (unsigned)b->n;
	if (env->npending >= env->batch_docs)
		flush_pending(-1, 0, env);
}

int
docreq_env_init(struct docreq_env *env, struct event_base *base)
{
	env->pending = NULL;
	env->pending_tail = &env->pending;
	env->npending = 0;
	env->flush = event_new(base, -1, 0, flush_pending, env);
	return env->flush ? 0 : -1;
}

void
docreq_env_clear(struct docreq_env *env)
{
	if (env->flush != NULL)
		event_free(env->flush);
	env->flush = NULL;
}

/* ---- The first worker: decoding, keys, and fingerprints inline. ---- */

static enum simhash_input
input_of(Nddd__V1__DocFormat f)
{
	return f == NDDD__V1__DOC_FORMAT__HTML ? SIMHASH_INPUT_HTML :
	    SIMHASH_INPUT_TEXT;
}

/* Whether a request's match asks for the Hamming answer. */
static bool
answer_hamming(const struct docreq_env *env, Nddd__V1__Match match)
{
	return match == NDDD__V1__MATCH__MATCH_HAMMING ||
	    (match == NDDD__V1__MATCH__MATCH_DEFAULT && env->hamming);
}

/* A namespace's key mask, made once for the documents that share it. */
struct ns_mask {
	char name[DOCNS_NAME_MAX + 1];
	bool made;
	uint8_t m[DOCNS_MASK_LEN];
};

/* The name a message gives, "" for none. */
static const char *
name_of(const char *ns)
{
	return ns != NULL ? ns : "";
}

/*
 * Canonical URL and key in namespace ns (checked; "": the default one,
 * whose key is the URL's MD5 alone); -1 with a static *cause if it is not
 * a URL, -2 with the MOVED message as *cause if another shard owns it
 * (shard; the message is kept in moved).  mask keeps the last named
 * namespace's mask.
 */
static int
doc_key(struct worker_ctx *ctx, const ProtobufCBinaryData *url,
    const char *ns, struct ns_mask *mask, uint8_t key[DOCSET_KEY_LEN],
    const char **canon, size_t *canon_len, const char **cause,
    const struct shard_view *shard, char moved[SHARD_MOVED_MSG_LEN])
{
	struct url_key k;
	const char *c;
	uint32_t route_by;

	if (urlset_key_canonical(ctx->keyer, (const char *)url->data, url->len,
	    &k, &c, canon_len, cause) == -1)
		return -1;
	if (!shard_view_owns(shard, k.fp, &route_by)) {
		shard_moved_message(route_by, moved);
		*cause = moved;
		return -2;
	}
	memcpy(key, k.fp, DOCSET_KEY_LEN);
	if (ns[0] != '\0') {
		if (!mask->made || strcmp(mask->name, ns) != 0) {
			snprintf(mask->name, sizeof(mask->name), "%s", ns);
			docns_mask(ns, strlen(ns), mask->m);
			mask->made = true;
		}
		for (size_t i = 0; i < DOCSET_KEY_LEN; i++)
			key[i] ^= mask->m[i];
	}
	if (canon != NULL)
		*canon = c;
	return 0;
}

/* Keeps s[0..len) and a NUL in b's memory at *off; -1 when out of
 * memory. */
static int
batch_keep(struct doc_batch *b, const char *s, size_t len, size_t *off)
{
	if (b->urls_len + len + 1 > b->urls_cap) {
		size_t cap = b->urls_cap ? b->urls_cap : 256;
		char *grown;

		while (cap < b->urls_len + len + 1)
			cap *= 2;
		if ((grown = realloc(b->urls, cap)) == NULL)
			return -1;
		b->urls = grown;
		b->urls_cap = cap;
	}
	memcpy(b->urls + b->urls_len, s, len);
	b->urls[b->urls_len + len] = '\0';
	*off = b->urls_len;
	b->urls_len += len + 1;
	return 0;
}

/* Keeps a canonical URL in b's memory; -1 when out of memory. */
static int
batch_keep_url(struct doc_batch *b, struct doc_item *it, const char *url,
    size_t len)
{
	if (batch_keep(b, url, len, &it->url_off) == -1)
		return -1;
	it->url_len = len;
	it->has_url = true;
	return 0;
}

/*
 * Keeps ns, the namespace of it, in b's memory, sharing the previous
 * document's copy when it names the same; -1 when out of memory.
 */
static int
batch_keep_ns(struct doc_batch *b, struct doc_item *it, const char *ns)
{
	size_t len = strlen(ns);

	if (len == 0)
		return 0;
	if (it > b->items && it[-1].ns_len == len &&
	    memcmp(b->urls + it[-1].ns_off, ns, len) == 0) {
		it->ns_off = it[-1].ns_off;
		it->ns_len = len;
		return 0;
	}
	if (batch_keep(b, ns, len, &it->ns_off) == -1)
		return -1;
	it->ns_len = len;
	return 0;
}

/*
 * Document i of b from a DocSubmit: its namespace, key and canonical URL.
 * A namespace that cannot be fails the document.
 */
static void
item_from_submit(struct worker_ctx *ctx, struct doc_batch *b, size_t i,
    const Nddd__V1__DocSubmit *s, struct ns_mask *mask)
{
	struct doc_item *it = &b->items[i];
	const char *canon, *cause, *ns = name_of(s->namespace_);
	Nddd__V1__Code code;
	size_t len;
	int rc;

	it->store = !s->query_only;
	if (it->store)
		it->join = s->new_group ? DOCSET_OWN_GROUP : s->group;
	it->hamming = answer_hamming(b->env, s->match);
	it->with_sketch = s->with_sketch;
	it->input = input_of(s->format);
	/* An empty body has no buffer (protobuf-c leaves it NULL). */
	it->body = s->body.len > 0 ? s->body.data : (const uint8_t *)"";
	it->body_len = s->body.len;
	if ((code = docreq_namespace_validate(ns, &cause)) !=
	    NDDD__V1__CODE__OK)
		item_fail(it, code, cause);
	else if (it->store && (s->group >> 63 != 0 || (s->group != 0 &&
	    s->new_group)))
		item_fail(it, NDDD__V1__CODE__INVALID_ARGUMENT, s->new_group ?
		    "a document joins a group or founds one, not both" :
		    "group ids are below 2^63");
	else if (it->store && ns[0] != '\0' && docset_ns_find(b->env->ds,
	    ns) == DOCNS_NONE && docns_full(docset_namespaces(b->env->ds)))
		item_fail(it, NDDD__V1__CODE__RESOURCE_EXHAUSTED, "the server "
		    "holds documents in 16,384 namespaces: drop some first");
	else if ((rc = doc_key(ctx, &s->url, ns, mask, it->key, &canon, &len,
	    &cause, &b->shard, b->moved)) < 0)
		item_fail(it, rc == -2 ? NDDD__V1__CODE__MOVED :
		    NDDD__V1__CODE__INVALID_ARGUMENT, cause);
	else if (batch_keep_url(b, it, canon, len) == -1 ||
	    batch_keep_ns(b, it, ns) == -1)
		item_fail(it, NDDD__V1__CODE__INTERNAL, "out of memory");
}

/* Keeps what docfp_compute made of it. */
static void
item_print(struct doc_item *it, const struct docfp *f)
{
	it->fp = f->fp;
	it->sketch = f->sketch;
	it->has_sketch = true;
	it->content = f->content;
}

/* Computes every document's fingerprint and sketch on this worker.
 * Returns -1 when memory is short. */
static int
batch_fingerprint_inline(struct doc_batch *b, const struct simhash *sh,
    struct worker_ctx *ctx)
{
	struct docfp f;
	size_t docs = 0, bytes = 0;
	int rc;

	for (size_t i = 0; i < b->n; i++) {
		struct doc_item *it = &b->items[i];

		if (it->code != NDDD__V1__CODE__OK)
			continue;
		if (i + 1 < b->n)
			simhash_prefetch(it[1].body, it[1].body_len);
		if ((rc = docfp_compute(sh, simhash_stopwords(sh), ctx->docfp,
		    ctx->scratch, b->env->html_main, it->input, it->body,
		    it->body_len, &f, NULL)) == -1)
			return -1;
		if (rc == SIMHASH_EMPTY_DOCUMENT)
			empty_document(it);
		else {
			item_print(it, &f);
			b->nstore += it->store;
		}
		docs++;
		bytes += it->body_len;
		/* The request's memory is gone after this worker. */
		it->body = NULL;
	}
	if (docs > 0)
		accel_count_inline(b->env->acc, docs, bytes);
	return 0;
}

/*
 * For a plugin: every document's sketch, and a copy of the text it is
 * judged by (its main content, for a page) in b's memory, which the
 * plugin fingerprints.  Returns -1 when memory is short.
 */
static int
batch_keep_texts(struct doc_batch *b, struct worker_ctx *ctx)
{
	const struct stopwords *sw = simhash_stopwords(accel_engine(
	    b->env->acc));
	size_t cap = 0, off = 0;
	uint8_t *grown;

	for (size_t i = 0; i < b->n; i++) {
		struct doc_item *it = &b->items[i];
		struct docfp_text t;
		struct docfp f;

		if (it->code != NDDD__V1__CODE__OK)
			continue;
		if (docfp_compute(NULL, sw, ctx->docfp, NULL,
		    b->env->html_main, it->input, it->body, it->body_len, &f,
		    &t) == -1)
			return -1;
		item_print(it, &f);
		if (off + t.len + 1 > cap) {
			cap = (off + t.len + 1) * 2;
			if ((grown = realloc(b->bodies, cap)) == NULL)
				return -1;
			b->bodies = grown;
		}
		memcpy(b->bodies + off, t.text, t.len);
		/* An offset until every copy is made (bodies moves). */
		it->body = (const uint8_t *)(uintptr_t)off;
		it->body_len = t.len;
		it->input = t.input;
		off += t.len;
	}
	for (size_t i = 0; i < b->n; i++)
		if (b->items[i].code == NDDD__V1__CODE__OK)
			b->items[i].body = b->bodies + (uintptr_t)b->items[i].body;
	return 0;
}

/*
 * Carries b out from the first worker: fingerprints here when the engine
 * is this process's (then a batch with nothing to store is answered here
 * too), else through the loop to the plugin.  b is taken over.
 */
static void
batch_run(struct op_call *call, struct doc_batch *b)
{
	const struct simhash *sh = accel_inline_engine(call->svc->acc);
	bool to_compute = false;

	for (size_t i = 0; i < b->n; i++)
		if (b->items[i].code == NDDD__V1__CODE__OK)
			to_compute = true;
	if (sh != NULL && to_compute && batch_fingerprint_inline(b, sh,
	    call->ctx) == -1) {
		reply_error(call->reply, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		batch_free(b);
		return;
	}
	if (batch_failed_whole(b)) {
		batch_answer(b, call->reply);
		batch_free(b);
		return;
	}
	if (b->nstore == 0 && (sh != NULL || !to_compute)) {
		batch_answer_queries(b, call->reply, call->ctx->reader);
		batch_free(b);
		return;
	}
	if (sh == NULL && batch_keep_texts(b, call->ctx) == -1) {
		reply_error(call->reply, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		batch_free(b);
		return;
	}
	reply_move(&b->reply, call->reply);
	if (sh != NULL)
		batch_to_writer(b);
	else {
		/* accel_submit is the loop's. */
		call->then_in_loop = batch_to_accel;
		call->then_arg = b;
	}
}

static void
reply_oom(struct op_call *call)
{
	reply_error(call->reply, NDDD__V1__CODE__INTERNAL, "out of memory");
}

void
docreq_submit(struct op_call *call)
{
	const Nddd__V1__DocSubmit *s = call->req->doc_submit;
	struct docreq_env *env = call->svc->docs;
	struct ns_mask mask = { .made = false };
	struct doc_batch *b;

	if ((b = batch_new(call, ANSWER_DOC, 1, docset_k(env->ds), true)) ==
	    NULL) {
		reply_oom(call);
		return;
	}
	item_from_submit(call->ctx, b, 0, s, &mask);
	batch_run(call, b);
}

void
docreq_batch(struct op_call *call)
{
	const Nddd__V1__DocBatch *db = call->req->doc_batch;
	struct docreq_env *env = call->svc->docs;
	struct ns_mask mask = { .made = false };
	struct doc_batch *b;

	if ((b = batch_new(call, ANSWER_BATCH, db->n_docs,
	    docset_k(env->ds), true)) == NULL) {
		reply_oom(call);
		return;
	}
	for (size_t i = 0; i < db->n_docs; i++)
		item_from_submit(call->ctx, b, i, db->docs[i], &mask);
	batch_run(call, b);
}

Nddd__V1__Code
docreq_batch_validate(const Nddd__V1__DocBatch *db,
    const struct request_limits *lim, const char **message)
{
	if (db->n_docs > DOCREQ_BATCH_MAX) {
		*message = "a batch holds at most 4,096 documents";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	if (docreq_batch_reply_bound(db->n_docs) > lim->max_frame) {
		*message = "the reply to this many documents could exceed the "
		    "server's max_frame: send fewer per batch";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	return NDDD__V1__CODE__OK;
}

Nddd__V1__Code
docreq_namespace_validate(const char *ns, const char **message)
{
	if (ns != NULL && (*message = urlns_check_name(ns, strlen(ns))) !=
	    NULL)
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	return NDDD__V1__CODE__OK;
}

size_t
docreq_batch_reply_bound(size_t docs)
{
	/* Each result, and the error of each that failed. */
	return DOCREQ_BATCH_BASE_MAX + docs * (DOCREQ_BATCH_ITEM_MAX +
	    DOCREQ_BATCH_ERROR_MAX);
}

/*
 * doc_query by a fingerprint, or a print (a fingerprint and a sketch),
 * on this worker: the Hamming answer within k, or the verified one.
 */
static void
query_print(struct op_call *call, const char *ns, uint64_t fp,
    const struct sketch *sk, unsigned k)
{
	struct docreq_env *env = call->svc->docs;
	struct store_txn *rd = call->ctx->reader;
	struct docset_query q = { .fp = fp, .sketch = sk, .k = k };
	struct docset_neighbour *nb;
	struct shard_view shard;
	uint64_t total;
	size_t n;
	int rc;

	if ((rc = store_reader_begin(rd)) != STORE_OK) {
		reply_store_error(call->reply, rc);
		return;
	}
	shard_state_view(call->svc->shard, &shard);
	if ((rc = docset_neighbours(env->ds, rd, docset_ns_find(env->ds, ns),
	    &q, env->max_results, &nb, &n, &total)) != STORE_OK)
		reply_store_error(call->reply, rc);
	else {
		shard_neighbours(&shard, nb, &n, &total);
		write_query(call->reply, fp, DOCFP_TEXT, NULL, nb, n, total);
		docset_neighbours_free(nb, n);
	}
	store_reader_end(rd);
}

void
docreq_query(struct op_call *call)
{
	const Nddd__V1__DocQuery *q = call->req->doc_query;
	struct docreq_env *env = call->svc->docs;
	struct reply *r = call->reply;
	unsigned k = q->max_distance ? q->max_distance->k : docset_k(env->ds);
	const char *ns = name_of(q->namespace_);
	bool hamming = q->max_distance != NULL ||
	    answer_hamming(env, q->match);
	struct doc_batch *b;
	struct sketch sk;

	if (k > docset_k(env->ds)) {
		reply_error(r, NDDD__V1__CODE__INVALID_ARGUMENT,
		    "k is above the server's [near] k");
		return;
	}
	if (q->max_distance != NULL &&
	    q->match == NDDD__V1__MATCH__MATCH_VERIFIED) {
		reply_error(r, NDDD__V1__CODE__INVALID_ARGUMENT,
		    "max_distance asks for the Hamming answer, match for the "
		    "verified one");
		return;
	}
	switch (q->what_case) {
	case NDDD__V1__DOC_QUERY__WHAT_BODY:
		if ((b = batch_new(call, ANSWER_QUERY, 1, k, false)) ==
		    NULL) {
			reply_oom(call);
			return;
		}
		b->items[0].input = input_of(q->body->format);
		b->items[0].body = q->body->body.len > 0 ?
		    q->body->body.data : (const uint8_t *)"";
		b->items[0].body_len = q->body->body.len;
		b->items[0].hamming = hamming;
		b->items[0].with_sketch = q->with_sketch;
		if (batch_keep_ns(b, &b->items[0], ns) == -1) {
			reply_oom(call);
			batch_free(b);
			return;
		}
		batch_run(call, b);
		return;
	case NDDD__V1__DOC_QUERY__WHAT_SIMHASH:
		if (q->match == NDDD__V1__MATCH__MATCH_VERIFIED) {
			reply_error(r, NDDD__V1__CODE__INVALID_ARGUMENT,
			    "a fingerprint alone has only the Hamming answer: "
			    "send the print or the body");
			return;
		}
		query_print(call, ns, q->simhash, NULL, k);
		return;
	case NDDD__V1__DOC_QUERY__WHAT_PRINT:
		if (sketch_decode(q->print->sketch.data, q->print->sketch.len,
		    &sk) == -1) {
			reply_error(r, NDDD__V1__CODE__INVALID_ARGUMENT,
			    "not a sketch nddd sent (DocResult.sketch)");
			return;
		}
		query_print(call, ns, q->print->simhash, hamming ? NULL : &sk,
		    k);
		return;
	default:
		reply_error(r, NDDD__V1__CODE__INVALID_ARGUMENT,
		    "a query names a body, a simhash or a print");
		return;
	}
}

void
docreq_get(struct op_call *call)
{
	const Nddd__V1__DocRef *ref = call->req->doc_get;
	struct docreq_env *env = call->svc->docs;
	struct store_txn *rd = call->ctx->reader;
	struct reply *r = call->reply;
	const char *ns = name_of(ref->namespace_);
	struct ns_mask mask = { .made = false };
	struct docset_query q = { .k = docset_k(env->ds) };
	struct doc_batch *b;
	struct doc_item *it;
	struct doc_record rec;
	const char *cause;
	uint32_t nsid;
	size_t len;
	int rc;

	if ((b = batch_new(call, ANSWER_DOC, 1, docset_k(env->ds), false)) ==
	    NULL) {
		reply_oom(call);
		return;
	}
	it = &b->items[0];
	if ((rc = doc_key(call->ctx, &ref->url, ns, &mask, it->key, NULL,
	    &len, &cause, &b->shard, b->moved)) < 0) {
		reply_error(r, rc == -2 ? NDDD__V1__CODE__MOVED :
		    NDDD__V1__CODE__INVALID_ARGUMENT, cause);
		batch_free(b);
		return;
	}
	if ((rc = store_reader_begin(rd)) != STORE_OK) {
		reply_store_error(r, rc);
		batch_free(b);
		return;
	}
	nsid = docset_ns_find(env->ds, ns);
	rc = docset_get(env->ds, rd, nsid, it->key, &rec);
	if (rc == STORE_OK) {
		/* Its neighbours as a query of its own print would find
		 * them, itself left out. */
		it->has_sketch = docset_record_sketch(&rec, &it->sketch) == 0;
		q.fp = rec.fp;
		q.sketch = it->has_sketch && !answer_hamming(env, ref->match) ?
		    &it->sketch : NULL;
		q.exclude = rec.id;
		q.exclude_fp = rec.fp;
	}
	if (rc == STORE_NOTFOUND)
		reply_error(r, NDDD__V1__CODE__NOT_FOUND,
		    "no document has this URL");
	else if (rc != STORE_OK)
		reply_store_error(r, rc);
	else if (batch_keep_url(b, it, rec.url, rec.url_len) == -1)
		reply_oom(call);
	else if ((rc = docset_neighbours(env->ds, rd, nsid, &q,
	    env->max_results, &it->near, &it->nnear, &it->near_total)) !=
	    STORE_OK)
		reply_store_error(r, rc);
	else {
		shard_neighbours(&b->shard, it->near, &it->nnear,
		    &it->near_total);
		it->id = rec.id;
		it->fp = rec.fp;
		it->group = rec.group;
		it->created_ms = rec.created_ms;
		write_doc(r, b, it);
	}
	store_reader_end(rd);
	batch_free(b);
}

/* ---- doc_delete: from the first worker to the store writer. ---- */

struct delete_job {
	struct writer_job wj;
	struct docset *ds;
	struct reply reply;
	char ns[DOCNS_NAME_MAX + 1];
	uint8_t key[DOCSET_KEY_LEN];
	uint64_t id;
	struct doc_undo undo;
	struct shard_state *admitted;
	unsigned ticket;
	struct shard_view shard;
	char moved[SHARD_MOVED_MSG_LEN];
};

static void
delete_job_free(struct delete_job *j)
{
	shard_release(j->admitted, j->ticket);
	free(j);
}

static int
delete_apply(struct writer_job *wj, struct store_txn *txn)
{
	struct delete_job *j = (struct delete_job *)wj;

	memset(&j->undo, 0, sizeof(j->undo));
	return docset_delete(j->ds, txn, j->ns, j->key, &j->id, &j->undo);
}

static void
delete_committed(struct writer_job *wj)
{
	(void)wj;
}

static void
delete_aborted(struct writer_job *wj)
{
	struct delete_job *j = (struct delete_job *)wj;

	docset_undo(j->ds, &j->undo);
	memset(&j->undo, 0, sizeof(j->undo));
}

static void
delete_done(struct writer_job *wj)
{
	struct delete_job *j = (struct delete_job *)wj;
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__DocDeleteResult res = NDDD__V1__DOC_DELETE_RESULT__INIT;

	if (wj->status != STORE_OK)
		reply_store_error(&j->reply, wj->status);
	else {
		res.doc_id = j->id;
		resp.id = j->reply.id;
		resp.result_case = NDDD__V1__RESPONSE__RESULT_DOC_DELETE;
		resp.doc_delete = &res;
		reply_message(&j->reply, &resp.base);
	}
	reply_finish(&j->reply);
	delete_job_free(j);
}

static const struct writer_job_ops delete_job_ops = {
	.apply = delete_apply,
	.committed = delete_committed,
	.aborted = delete_aborted,
	.done = delete_done,
	.journaled = true,
};

void
docreq_delete(struct op_call *call)
{
	const Nddd__V1__DocRef *ref = call->req->doc_delete;
	const struct docreq_env *env = call->svc->docs;
	struct ns_mask mask = { .made = false };
	struct delete_job *j;
	const char *cause;
	size_t len;
	int rc;

	if ((j = calloc(1, sizeof(*j))) == NULL) {
		reply_oom(call);
		return;
	}
	j->admitted = call->svc->shard;
	j->ticket = shard_admit(j->admitted, &j->shard);
	/* Checked by operation_validate: at most DOCNS_NAME_MAX bytes. */
	snprintf(j->ns, sizeof(j->ns), "%s", name_of(ref->namespace_));
	if ((rc = doc_key(call->ctx, &ref->url, j->ns, &mask, j->key, NULL,
	    &len, &cause, &j->shard, j->moved)) < 0) {
		reply_error(call->reply, rc == -2 ? NDDD__V1__CODE__MOVED :
		    NDDD__V1__CODE__INVALID_ARGUMENT, cause);
		delete_job_free(j);
		return;
	}
	j->wj.ops = &delete_job_ops;
	j->wj.cost = 1;
	j->ds = env->ds;
	reply_move(&j->reply, call->reply);
	writer_submit(env->w, &j->wj);
}
