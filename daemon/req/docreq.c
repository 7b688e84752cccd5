/*
 * docreq: the document operations of the protocol.  See docreq.h.
 */
#include "docreq.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "accel.h"
#include "docset.h"
#include "reply.h"
#include "store.h"
#include "urlset.h"
#include "workers.h"
#include "writer.h"

enum doc_kind {
	DOC_STORE,		/* doc_submit: store it */
	DOC_WOULD_JOIN,		/* doc_submit with query_only */
	DOC_QUERY,		/* doc_query by body */
};

struct doc_op {
	struct docreq_env *env;
	struct reply reply;
	enum doc_kind kind;
	uint8_t key[DOCSET_KEY_LEN];
	char *url;			/* canonical */
	size_t url_len;
	uint8_t *body;
	size_t body_len;
	enum simhash_input input;
	unsigned k;
	uint64_t fp;
	struct doc_op *next;		/* the loop's pending list */
};

static void
op_free(struct doc_op *op)
{
	if (op == NULL)
		return;
	free(op->url);
	free(op->body);
	free(op);
}

/* The reply's Neighbour messages, pointing into nb. */
static Nddd__V1__Neighbour **
neighbour_messages(const struct docset_neighbour *nb, size_t n,
    Nddd__V1__Neighbour **store)
{
	Nddd__V1__Neighbour *m = calloc(n + 1, sizeof(*m));
	Nddd__V1__Neighbour **v = calloc(n + 1, sizeof(*v));

	if (m == NULL || v == NULL) {
		free(m);
		free(v);
		*store = NULL;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		nddd__v1__neighbour__init(&m[i]);
		m[i].doc_id = nb[i].id;
		m[i].url.data = (uint8_t *)nb[i].url;
		m[i].url.len = nb[i].url_len;
		m[i].distance = nb[i].distance;
		m[i].group = nb[i].group;
		v[i] = &m[i];
	}
	*store = m;
	return v;
}

/* Bytes of a varint holding v. */
static size_t
varint_size(size_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/*
 * How many of the n neighbours (nearest first) fit r's bound when the rest
 * of its Response takes base bytes.  A neighbour's URL may be 16 KiB: a
 * long list is cut here, and near_total still tells the client how many
 * there are.
 */
static size_t
neighbours_that_fit(const struct reply *r, Nddd__V1__Neighbour **v,
    size_t n, size_t base)
{
	/* Room for the frame's header and the lengths of the messages
	 * around the list, which grow with it. */
	size_t budget = (r->bound < r->max_frame ? r->bound : r->max_frame);
	size_t size = base + 16;

	for (size_t i = 0; i < n; i++) {
		size_t one = nddd__v1__neighbour__get_packed_size(v[i]);

		size += 1 + varint_size(one) + one;
		if (size > budget)
			return i;
	}
	return n;
}

/* Appends a DocResult reply to r. */
static void
write_doc(struct reply *r, uint64_t doc_id, uint64_t fp,
    uint64_t group, const char *url, size_t url_len, bool created,
    const struct docset_neighbour *nb, size_t n, uint64_t total)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__DocResult res = NDDD__V1__DOC_RESULT__INIT;
	Nddd__V1__Neighbour *msgs;

	res.near = neighbour_messages(nb, n, &msgs);
	if (res.near == NULL) {
		reply_error(r, NDDD__V1__CODE__INTERNAL, "out of memory");
		return;
	}
	res.doc_id = doc_id;
	res.simhash = fp;
	res.group = group;
	res.near_total = total;
	res.url.data = (uint8_t *)url;
	res.url.len = url_len;
	res.created = created;
	resp.id = r->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_DOC;
	resp.doc = &res;
	res.n_near = neighbours_that_fit(r, res.near, n,
	    nddd__v1__response__get_packed_size(&resp));
	reply_message(r, &resp.base);
	free(res.near);
	free(msgs);
}

/* Appends a DocQueryResult reply to r. */
static void
write_query(struct reply *r, uint64_t fp,
    const struct docset_neighbour *nb, size_t n, uint64_t total)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__DocQueryResult res = NDDD__V1__DOC_QUERY_RESULT__INIT;
	Nddd__V1__Neighbour *msgs;

	res.near = neighbour_messages(nb, n, &msgs);
	if (res.near == NULL) {
		reply_error(r, NDDD__V1__CODE__INTERNAL, "out of memory");
		return;
	}
	res.simhash = fp;
	res.near_total = total;
	resp.id = r->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_DOC_QUERY;
	resp.doc_query = &res;
	res.n_near = neighbours_that_fit(r, res.near, n,
	    nddd__v1__response__get_packed_size(&resp));
	reply_message(r, &resp.base);
	free(res.near);
	free(msgs);
}

/* ---- The store writer's side: doc_submit and doc_delete. ---- */

struct doc_job {
	struct writer_job wj;
	const struct docreq_env *env;
	struct reply reply;
	bool delete;
	struct doc_op *op;		/* doc_submit */
	uint8_t key[DOCSET_KEY_LEN];	/* doc_delete */
	struct doc_undo undo;
	/* Results, copied out of the transaction. */
	uint64_t id, group;
	bool created;
	struct docset_neighbour *near;
	size_t nnear;
	uint64_t near_total;
};

static void
doc_job_free(struct doc_job *j)
{
	docset_neighbours_free(j->near, j->nnear);
	op_free(j->op);
	free(j);
}

static int
doc_job_apply(struct writer_job *wj, struct store_txn *txn)
{
	struct doc_job *j = (struct doc_job *)wj;
	struct doc_op *op = j->op;
	struct doc_record r;
	int rc;

	/* A retried job starts afresh. */
	docset_neighbours_free(j->near, j->nnear);
	j->near = NULL;
	j->nnear = 0;
	if (j->delete)
		return docset_delete(j->env->ds, txn, j->key, &j->id,
		    &j->undo);
	rc = docset_put(j->env->ds, txn, op->key, op->url, op->url_len,
	    op->fp, wj->now_ms, &r, &j->created, &j->undo);
	if (rc != STORE_OK)
		return rc;
	j->id = r.id;
	j->group = r.group;
	return docset_neighbours(j->env->ds, txn, op->fp, op->k, r.id, r.fp,
	    j->env->max_results, &j->near, &j->nnear, &j->near_total);
}

static void
doc_job_committed(struct writer_job *wj)
{
	(void)wj;	/* the tables changed with the transaction */
}

static void
doc_job_aborted(struct writer_job *wj)
{
	struct doc_job *j = (struct doc_job *)wj;

	docset_undo(j->env->ds, &j->undo);
	memset(&j->undo, 0, sizeof(j->undo));
}

static void
doc_job_done(struct writer_job *wj)
{
	struct doc_job *j = (struct doc_job *)wj;

	if (wj->status != STORE_OK)
		reply_store_error(&j->reply, wj->status);
	else if (j->delete) {
		Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
		Nddd__V1__DocDeleteResult res =
		    NDDD__V1__DOC_DELETE_RESULT__INIT;

		res.doc_id = j->id;
		resp.id = j->reply.id;
		resp.result_case = NDDD__V1__RESPONSE__RESULT_DOC_DELETE;
		resp.doc_delete = &res;
		reply_message(&j->reply, &resp.base);
	} else
		write_doc(&j->reply, j->id, j->op->fp, j->group, j->op->url,
		    j->op->url_len, j->created, j->near, j->nnear,
		    j->near_total);
	reply_finish(&j->reply);
	doc_job_free(j);
}

static const struct writer_job_ops doc_job_ops = {
	.apply = doc_job_apply,
	.committed = doc_job_committed,
	.aborted = doc_job_aborted,
	.done = doc_job_done,
};

/* ---- A worker's side: queries, once the fingerprint is known. ---- */

struct query_task {
	struct worker_task wt;
	struct doc_op *op;
};

static void
query_task_run(struct worker_task *wt, void *arg)
{
	struct query_task *t = (struct query_task *)wt;
	struct worker_ctx *ctx = arg;
	struct doc_op *op = t->op;
	const struct docreq_env *env = op->env;
	struct docset_neighbour *nb = NULL;
	struct doc_record self;
	uint64_t total, exclude = 0, exclude_fp = 0, group = 0;
	size_t n = 0;
	int rc;

	if ((rc = store_reader_begin(ctx->reader)) != STORE_OK) {
		reply_store_error(&op->reply, rc);
		return;
	}
	/* A URL already stored is not its own neighbour. */
	if (op->kind == DOC_WOULD_JOIN && docset_get(env->ds, ctx->reader,
	    op->key, &self) == STORE_OK) {
		exclude = self.id;
		exclude_fp = self.fp;
	}
	if ((rc = docset_neighbours(env->ds, ctx->reader, op->fp, op->k,
	    exclude, exclude_fp, env->max_results, &nb, &n, &total)) !=
	    STORE_OK)
		reply_store_error(&op->reply, rc);
	else if (op->kind == DOC_WOULD_JOIN) {
		/* Sorted nearest, then oldest: the group it would join. */
		group = n > 0 ? nb[0].group : 0;
		write_doc(&op->reply, 0, op->fp, group, op->url, op->url_len,
		    false, nb, n, total);
	} else
		write_query(&op->reply, op->fp, nb, n, total);
	store_reader_end(ctx->reader);
	docset_neighbours_free(nb, n);
}

static void
query_task_done(struct worker_task *wt)
{
	struct query_task *t = (struct query_task *)wt;

	reply_finish(&t->op->reply);
	op_free(t->op);
	free(t);
}

static const struct worker_task_ops query_task_ops = {
	.run = query_task_run,
	.done = query_task_done,
};

/* ---- The loop's side: the accelerator. ---- */

static void
finish_error(struct doc_op *op, Nddd__V1__Code code, const char *message)
{
	reply_error(&op->reply, code, message);
	reply_finish(&op->reply);
	op_free(op);
}

/* A document's fingerprint is known: where it goes next. */
static void
route(struct doc_op *op, enum simhash_status st)
{
	struct query_task *t;

	/* The body is no longer needed. */
	free(op->body);
	op->body = NULL;
	if (st == SIMHASH_EMPTY_DOCUMENT) {
		finish_error(op, NDDD__V1__CODE__EMPTY_DOCUMENT,
		    "the document has no terms");
		return;
	}
	if (op->kind == DOC_STORE) {
		struct doc_job *j = calloc(1, sizeof(*j));

		if (j == NULL) {
			finish_error(op, NDDD__V1__CODE__INTERNAL,
			    "out of memory");
			return;
		}
		j->wj.ops = &doc_job_ops;
		j->wj.cost = 1;
		j->env = op->env;
		reply_move(&j->reply, &op->reply);
		j->op = op;
		writer_submit(op->env->w, &j->wj);
		return;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		finish_error(op, NDDD__V1__CODE__INTERNAL, "out of memory");
		return;
	}
	t->wt.ops = &query_task_ops;
	t->op = op;
	workers_submit(op->env->workers, &t->wt);
}

/* The documents of one accelerator job, in job order. */
struct fp_batch {
	struct doc_op **ops;
	size_t n;
};

static void
on_fingerprints(struct accel_job *job, void *arg)
{
	struct fp_batch *b = arg;

	for (size_t i = 0; i < b->n; i++) {
		enum simhash_status st = accel_job_result(job, i,
		    &b->ops[i]->fp);

		b->ops[i]->env->in_accel--;
		route(b->ops[i], st);
	}
	accel_job_free(job);
	free(b->ops);
	free(b);
}

/* Hands the n documents of list, all of one input format, over as one job. */
static void
submit_job(struct docreq_env *env, struct doc_op **list, size_t n,
    enum simhash_input input)
{
	struct accel_job *job = accel_job_new(n, input);
	struct fp_batch *b = calloc(1, sizeof(*b));

	if (job == NULL || b == NULL) {
		free(b);
		if (job != NULL)
			accel_job_free(job);
		for (size_t i = 0; i < n; i++)
			finish_error(list[i], NDDD__V1__CODE__INTERNAL,
			    "out of memory");
		free(list);
		return;
	}
	b->ops = list;
	b->n = n;
	for (size_t i = 0; i < n; i++)
		accel_job_set(job, i, list[i]->body, list[i]->body_len);
	if (accel_submit(env->acc, job, on_fingerprints, b) == -1) {
		accel_job_free(job);
		for (size_t i = 0; i < n; i++)
			finish_error(list[i], NDDD__V1__CODE__INTERNAL,
			    "cannot submit to the accelerator");
		free(list);
		free(b);
		return;
	}
	env->in_accel += (unsigned)n;
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
	struct doc_op *op, *next;
	struct doc_op **by[3] = { NULL, NULL, NULL };
	size_t n[3] = { 0, 0, 0 };

	(void)fd;
	(void)what;
	if (env->npending == 0)
		return;
	for (int f = 0; f < 3; f++)
		if ((by[f] = calloc(env->npending, sizeof(*by[f]))) == NULL) {
			for (op = env->pending; op != NULL; op = next) {
				next = op->next;
				finish_error(op, NDDD__V1__CODE__INTERNAL,
				    "out of memory");
			}
			env->pending = NULL;
			env->pending_tail = &env->pending;
			env->npending = 0;
			for (int g = 0; g < 3; g++)
				free(by[g]);
			return;
		}
	for (op = env->pending; op != NULL; op = next) {
		next = op->next;
		by[op->input][n[op->input]++] = op;
	}
	env->pending = NULL;
	env->pending_tail = &env->pending;
	env->npending = 0;
	for (int f = 0; f < 3; f++) {
		if (n[f] > 0)
			submit_job(env, by[f], n[f], (enum simhash_input)f);
		else
			free(by[f]);
	}
}

/*
 * Loop thread: op's body goes to the accelerator, together with the other
 * documents of this turn of the loop; the request is finished from there
 * on (answered, or failed with INTERNAL).
 */
static void
fingerprint_in_loop(void *arg)
{
	struct doc_op *op = arg;
	struct docreq_env *env = op->env;

	/* Kept in arrival order (replies and stores follow it). */
	op->next = NULL;
	*env->pending_tail = op;
	env->pending_tail = &op->next;
	if (env->npending++ == 0)
		event_active(env->flush, EV_TIMEOUT, 1);
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

/* ---- The first worker: decoding what each operation needs. ---- */

static enum simhash_input
input_of(Nddd__V1__DocFormat f)
{
	return f == NDDD__V1__DOC_FORMAT__HTML ? SIMHASH_INPUT_HTML :
	    SIMHASH_INPUT_TEXT;
}

/* Canonical URL and key; -1 with a static *cause if it is not a URL. */
static int
doc_key(struct worker_ctx *ctx, const ProtobufCBinaryData *url,
    uint8_t key[DOCSET_KEY_LEN], char **canon, size_t *canon_len,
    const char **cause)
{
	struct url_key k;
	const char *c;

	if (urlset_key_canonical(ctx->keyer, (const char *)url->data, url->len,
	    &k, &c, canon_len, cause) == -1)
		return -1;
	memcpy(key, k.fp, DOCSET_KEY_LEN);
	if (canon == NULL)
		return 0;
	if ((*canon = malloc(*canon_len + 1)) == NULL) {
		*cause = "out of memory";
		return -1;
	}
	memcpy(*canon, c, *canon_len);
	(*canon)[*canon_len] = '\0';
	return 0;
}

static struct doc_op *
op_new(struct docreq_env *env, enum doc_kind kind,
    const ProtobufCBinaryData *body, Nddd__V1__DocFormat format, unsigned k)
{
	struct doc_op *op = calloc(1, sizeof(*op));

	if (op == NULL)
		return NULL;
	op->env = env;
	op->kind = kind;
	op->input = input_of(format);
	op->k = k;
	op->body_len = body->len;
	/* The request's memory is the worker's, for this request only. */
	if ((op->body = malloc(body->len + 1)) == NULL) {
		free(op);
		return NULL;
	}
	/* An empty body has no buffer (protobuf-c leaves it NULL). */
	if (body->len > 0)
		memcpy(op->body, body->data, body->len);
	return op;
}

/* The worker is done with op: its body goes on in the loop thread. */
static void
to_accelerator(struct op_call *call, struct doc_op *op)
{
	reply_move(&op->reply, call->reply);
	call->then_in_loop = fingerprint_in_loop;
	call->then_arg = op;
}

void
docreq_submit(struct op_call *call)
{
	const Nddd__V1__DocSubmit *s = call->req->doc_submit;
	struct docreq_env *env = call->svc->docs;
	struct doc_op *op;
	const char *cause;

	op = op_new(env, s->query_only ? DOC_WOULD_JOIN : DOC_STORE, &s->body,
	    s->format, docset_k(env->ds));
	if (op == NULL) {
		reply_error(call->reply, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	if (doc_key(call->ctx, &s->url, op->key, &op->url, &op->url_len,
	    &cause) == -1) {
		reply_error(call->reply, NDDD__V1__CODE__INVALID_ARGUMENT,
		    cause);
		op_free(op);
		return;
	}
	to_accelerator(call, op);
}

void
docreq_query(struct op_call *call)
{
	const Nddd__V1__DocQuery *q = call->req->doc_query;
	struct docreq_env *env = call->svc->docs;
	struct store_txn *rd = call->ctx->reader;
	struct reply *r = call->reply;
	unsigned k = q->max_distance ? q->max_distance->k : docset_k(env->ds);
	struct docset_neighbour *nb;
	struct doc_op *op;
	uint64_t total;
	size_t n;
	int rc;

	if (k > docset_k(env->ds)) {
		reply_error(r, NDDD__V1__CODE__INVALID_ARGUMENT,
		    "k is above the server's [near] k");
		return;
	}
	switch (q->what_case) {
	case NDDD__V1__DOC_QUERY__WHAT_BODY:
		op = op_new(env, DOC_QUERY, &q->body->body, q->body->format,
		    k);
		if (op == NULL)
			reply_error(r, NDDD__V1__CODE__INTERNAL,
			    "out of memory");
		else
			to_accelerator(call, op);
		return;
	case NDDD__V1__DOC_QUERY__WHAT_SIMHASH:
		if ((rc = store_reader_begin(rd)) != STORE_OK) {
			reply_store_error(r, rc);
			return;
		}
		if ((rc = docset_neighbours(env->ds, rd, q->simhash, k, 0, 0,
		    env->max_results, &nb, &n, &total)) != STORE_OK)
			reply_store_error(r, rc);
		else {
			write_query(r, q->simhash, nb, n, total);
			docset_neighbours_free(nb, n);
		}
		store_reader_end(rd);
		return;
	default:
		reply_error(r, NDDD__V1__CODE__INVALID_ARGUMENT,
		    "a query names a body or a simhash");
		return;
	}
}

void
docreq_get(struct op_call *call)
{
	const Nddd__V1__DocRef *ref = call->req->doc_get;
	const struct docreq_env *env = call->svc->docs;
	struct store_txn *rd = call->ctx->reader;
	struct reply *r = call->reply;
	uint8_t key[DOCSET_KEY_LEN];
	struct doc_record rec;
	struct docset_neighbour *nb;
	const char *cause;
	uint64_t total;
	size_t n, len;
	int rc;

	if (doc_key(call->ctx, &ref->url, key, NULL, &len, &cause) == -1) {
		reply_error(r, NDDD__V1__CODE__INVALID_ARGUMENT, cause);
		return;
	}
	if ((rc = store_reader_begin(rd)) != STORE_OK) {
		reply_store_error(r, rc);
		return;
	}
	rc = docset_get(env->ds, rd, key, &rec);
	if (rc == STORE_NOTFOUND)
		reply_error(r, NDDD__V1__CODE__NOT_FOUND,
		    "no document has this URL");
	else if (rc != STORE_OK)
		reply_store_error(r, rc);
	else if ((rc = docset_neighbours(env->ds, rd, rec.fp,
	    docset_k(env->ds), rec.id, rec.fp, env->max_results, &nb, &n,
	    &total)) != STORE_OK)
		reply_store_error(r, rc);
	else {
		write_doc(r, rec.id, rec.fp, rec.group, rec.url, rec.url_len,
		    false, nb, n, total);
		docset_neighbours_free(nb, n);
	}
	store_reader_end(rd);
}

void
docreq_delete(struct op_call *call)
{
	const Nddd__V1__DocRef *ref = call->req->doc_delete;
	const struct docreq_env *env = call->svc->docs;
	struct doc_job *j;
	const char *cause;
	size_t len;

	if ((j = calloc(1, sizeof(*j))) == NULL) {
		reply_error(call->reply, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	if (doc_key(call->ctx, &ref->url, j->key, NULL, &len, &cause) == -1) {
		reply_error(call->reply, NDDD__V1__CODE__INVALID_ARGUMENT,
		    cause);
		free(j);
		return;
	}
	j->wj.ops = &doc_job_ops;
	j->wj.cost = 1;
	j->env = env;
	j->delete = true;
	reply_move(&j->reply, call->reply);
	writer_submit(env->w, &j->wj);
}
