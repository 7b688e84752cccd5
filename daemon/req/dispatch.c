/*
 * dispatch: from a frame to its operation.  See dispatch.h.
 *
 * Locking: the token table may be replaced (SIGHUP) while workers read it;
 * d->auth_lock guards the pointer.  Everything else a worker touches is
 * either its own (its context) or thread-safe (urlset, writer, store).
 */
#include "dispatch.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "auth.h"
#include "config.h"
#include "docdrop.h"
#include "docfp.h"
#include "docreq.h"
#include "frame.h"
#include "log.h"
#include "metrics.h"
#include "operation.h"
#include "reply.h"
#include "request.h"
#include "server.h"
#include "shardstate.h"
#include "simhash.h"
#include "statsreq.h"
#include "store.h"
#include "urlset.h"
#include "workers.h"

/*
 * A worker's arena keeps up to this much between requests: enough for a
 * batch of 10,000 URLs of a crawl's usual length; a larger request's
 * memory goes back to the system when it is done.
 */
#define WORKER_ARENA_KEEP (4u << 20)

/*
 * Small URL requests run in the loop.  A url_check, url_submit or
 * url_delete of at most INLINE_ITEMS URLs is carried out where its frame
 * arrives, in the event loop: the hand-off to a worker and back would cost
 * a client asking about one URL at a time more than the work itself.  A
 * submit or delete only derives its keys there and queues its job for the
 * URL writer (which answers it, as always); a check reads with a URL
 * reader that may not wait: if it would read a page that is not in memory,
 * or wait for the URL writer, it stops having answered nothing and goes to
 * a worker like any other request, so the loop never waits for the disk.
 * Larger batches go to the workers, which run them in parallel.
 */
#define INLINE_ITEMS		16

static bool
runs_inline(Nddd__V1__Request__OpCase op_case, size_t items)
{
	switch (op_case) {
	case NDDD__V1__REQUEST__OP_URL_CHECK:
	case NDDD__V1__REQUEST__OP_URL_SUBMIT:
	case NDDD__V1__REQUEST__OP_URL_DELETE:
		return items <= INLINE_ITEMS;
	default:
		return false;
	}
}

struct dispatch {
	struct req_services svc;
	struct worker_ctx *loop_ctx;	/* small URL requests in the loop */
	struct docreq_env docs;
	struct metrics *metrics;
	pthread_rwlock_t auth_lock;
	struct auth *auth;		/* NULL: no tokens, all allowed */
};

/* One frame, from the loop to a worker and back. */
struct req_task {
	struct worker_task wt;
	struct dispatch *d;
	struct reply reply;
	bool buffers_full;		/* refuse it: [server] buffer_memory */
	bool close;			/* undecodable: close the connection */
	bool would_block;		/* run in the loop, it would wait */
	Nddd__V1__Code close_code;
	const char *close_why;
	void (*then_in_loop)(void *arg);
	void *then_arg;
	size_t len;
	uint8_t payload[];
};

static void
worker_ctx_free(void *arg)
{
	struct worker_ctx *ctx = arg;

	urlset_keyer_free(ctx->keyer);
	urlset_reader_free(ctx->urls);
	store_reader_free(ctx->reader);
	simhash_scratch_free(ctx->scratch);
	docfp_scratch_free(ctx->docfp);
	arena_release(&ctx->arena);
	free(ctx);
}

static void *
worker_ctx_new(void *arg)
{
	struct dispatch *d = arg;
	struct worker_ctx *ctx = calloc(1, sizeof(*ctx));

	if (ctx == NULL)
		return NULL;
	arena_init(&ctx->arena, 64 * 1024);
	ctx->arena.keep_max = WORKER_ARENA_KEEP;
	ctx->keyer = urlset_keyer_new(d->svc.us);
	ctx->urls = urlset_reader_new(d->svc.us);
	ctx->reader = store_reader_new(d->svc.st);
	ctx->scratch = simhash_scratch_new();
	ctx->docfp = docfp_scratch_new();
	if (ctx->keyer == NULL || ctx->urls == NULL || ctx->reader == NULL ||
	    ctx->scratch == NULL || ctx->docfp == NULL) {
		worker_ctx_free(ctx);
		return NULL;
	}
	return ctx;
}

/*
 * The role token grants in every namespace op acts in for req: the least
 * of its roles in each (a repeated name is asked once); for an operation
 * on the whole daemon, or a batch of nothing, what it grants there.
 */
static enum role
token_role(const struct auth *a, const char *tok,
    const struct operation *op, const Nddd__V1__Request *req, bool *outside)
{
	const char *ns, *prev = NULL;
	enum role role, least;

	if (op->namespace_of == NULL ||
	    (ns = op->namespace_of(req, 0)) == NULL)
		return auth_role(a, tok, strlen(tok), NULL, outside);
	least = ROLE_ADMIN;
	for (size_t i = 0; ns != NULL && least > ROLE_NONE;
	    ns = op->namespace_of(req, ++i)) {
		if (prev != NULL && strcmp(prev, ns) == 0)
			continue;
		role = auth_role(a, tok, strlen(tok), ns, outside);
		least = role < least ? role : least;
		prev = ns;
	}
	return least;
}

/*
 * The role req's token grants for operation op (ROLE_ADMIN when no tokens
 * are configured), or ROLE_NONE with *why set.
 */
static enum role
authorize(struct dispatch *d, const struct operation *op,
    const Nddd__V1__Request *req, const char **why)
{
	enum role role = ROLE_ADMIN;
	bool outside = false;

	pthread_rwlock_rdlock(&d->auth_lock);
	if (d->auth != NULL) {
		const char *tok = req->token ? req->token : "";

		role = *tok ? token_role(d->auth, tok, op, req, &outside) :
		    ROLE_NONE;
		*why = outside ? "the token does not reach this namespace" :
		    *tok ? "unknown token" : "a token is required";
	}
	pthread_rwlock_unlock(&d->auth_lock);
	return role;
}

/* Worker thread: decodes t's frame, then checks and runs its operation. */
static void
run_request(struct req_task *t, struct worker_ctx *ctx)
{
	struct dispatch *d = t->d;
	struct op_call call = {
		.svc = &d->svc,
		.ctx = ctx,
		.reply = &t->reply,
	};
	const struct operation *op;
	Nddd__V1__Request *req;
	Nddd__V1__Code code;
	const char *msg = NULL;

	code = request_decode(&ctx->arena, t->payload, t->len,
	    &d->svc.limits, &req, &msg);
	if (code != NDDD__V1__CODE__OK) {
		t->close = true;
		t->close_code = code;
		t->close_why = msg;
		return;
	}
	op = operation_of(req);
	t->reply.id = req->id;
	t->reply.op = operation_index(op);
	if (t->buffers_full) {
		reply_error(&t->reply, NDDD__V1__CODE__RESOURCE_EXHAUSTED,
		    "the server's connection buffers are full "
		    "([server] buffer_memory); retry later");
		return;
	}
	call.req = req;
	call.role = authorize(d, op, req, &msg);
	if (call.role < operation_role(op, req)) {
		reply_error(&t->reply, NDDD__V1__CODE__PERMISSION_DENIED,
		    call.role == ROLE_NONE ? msg :
		    "the token's role does not allow this operation");
		return;
	}
	code = operation_validate(op, req, &d->svc.limits, &msg);
	if (code != NDDD__V1__CODE__OK) {
		reply_error(&t->reply, code, msg);
		return;
	}
	op->run(&call);
	t->would_block = call.would_block;
	t->then_in_loop = call.then_in_loop;
	t->then_arg = call.then_arg;
}

static void
req_run(struct worker_task *wt, void *arg)
{
	struct worker_ctx *ctx = arg;

	run_request((struct req_task *)wt, ctx);
	/* What the request keeps, it has copied out of the arena. */
	arena_reset(&ctx->arena);
}

static void
req_done(struct worker_task *wt)
{
	struct req_task *t = (struct req_task *)wt;

	if (t->close)
		reply_fail_connection(&t->reply, t->close_code, t->close_why);
	else
		reply_finish(&t->reply);	/* unless it was moved on */
	if (t->then_in_loop != NULL)
		t->then_in_loop(t->then_arg);
	free(t);
}

static const struct worker_task_ops req_task_ops = {
	.run = req_run,
	.done = req_done,
};

struct dispatch *
dispatch_new(const struct config *cfg, struct event_base *base,
    const struct dispatch_deps *deps)
{
	struct dispatch *d;
	const char *why;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	d->svc = (struct req_services){
		.cfg = cfg,
		.st = deps->st,
		.us = deps->us,
		.ds = deps->ds,
		.w = deps->w,
		.acc = deps->acc,
		.docs = &d->docs,
		.durability = cfg->sync == STORE_SYNC_FULL ? URLSET_DURABLE :
		    URLSET_RELAXED,
		.limits = {
			.max_batch = cfg->max_batch,
			.max_frame = cfg->max_frame,
			.doc_reply_max = cfg->max_frame < DOCREQ_REPLY_MAX ?
			    cfg->max_frame : DOCREQ_REPLY_MAX,
		},
		.started = time(NULL),
	};
	if ((d->svc.shard = shard_state_open(deps->st, &why)) == NULL) {
		log_warnx("%s", why);
		free(d);
		return NULL;
	}
	d->metrics = deps->metrics;
	for (unsigned i = 0; i < operation_count(); i++)
		metrics_name_op(d->metrics, i, operation_at(i)->name);
	d->auth = deps->auth;
	pthread_rwlock_init(&d->auth_lock, NULL);
	d->svc.workers = workers_new((unsigned)cfg->workers, base,
	    worker_ctx_new, worker_ctx_free, d);
	if (d->svc.workers == NULL || (d->loop_ctx = worker_ctx_new(d)) == NULL)
		goto err;
	urlset_reader_nowait(d->loop_ctx->urls);
	d->docs.ds = d->svc.ds;
	d->docs.w = d->svc.w;
	d->docs.acc = d->svc.acc;
	d->docs.workers = d->svc.workers;
	d->docs.max_results = cfg->near_max_results;
	d->docs.batch_docs = (unsigned)cfg->accel_batch_docs;
	d->docs.html_main = cfg->html_main;
	d->docs.hamming = cfg->near_hamming;
	if (docreq_env_init(&d->docs, base) == -1 ||
	    (d->docs.drop = docdrop_new(&d->svc, base)) == NULL)
		goto err;
	return d;
err:
	docreq_env_clear(&d->docs);
	if (d->loop_ctx != NULL)
		worker_ctx_free(d->loop_ctx);
	if (d->svc.workers != NULL)
		workers_free(d->svc.workers);
	shard_state_free(d->svc.shard);
	pthread_rwlock_destroy(&d->auth_lock);
	free(d);
	return NULL;
}

void
dispatch_free(struct dispatch *d)
{
	if (d == NULL)
		return;
	workers_free(d->svc.workers);
	worker_ctx_free(d->loop_ctx);
	docdrop_free(d->docs.drop);
	docreq_env_clear(&d->docs);
	shard_state_free(d->svc.shard);
	auth_free(d->auth);
	pthread_rwlock_destroy(&d->auth_lock);
	free(d);
}

void
dispatch_set_server(struct dispatch *d, struct server *srv)
{
	d->svc.srv = srv;
}

void
dispatch_set_auth(struct dispatch *d, struct auth *auth)
{
	struct auth *old;

	pthread_rwlock_wrlock(&d->auth_lock);
	old = d->auth;
	d->auth = auth;
	pthread_rwlock_unlock(&d->auth_lock);
	auth_free(old);
}

size_t
dispatch_pending(struct dispatch *d)
{
	return statsreq_pending(&d->svc);
}

/* Loop thread: one frame's payload from c goes to a worker, copied out of
 * the connection's input once. */
static void
dispatch_frame(void *arg, struct conn *c, struct evbuffer *in, uint32_t len)
{
	struct dispatch *d = arg;
	struct req_task *t = malloc(sizeof(*t) + len);
	Nddd__V1__Request__OpCase op_case = NDDD__V1__REQUEST__OP__NOT_SET;
	size_t items = 0, bound;

	if (t == NULL) {
		/* Its id is unknown: only closing tells the client. */
		conn_fail(c, NDDD__V1__CODE__INTERNAL,
		    "out of memory for a request");
		return;
	}
	memset(t, 0, sizeof(*t));
	frame_copy(in, len, t->payload);
	t->len = len;
	t->wt.ops = &req_task_ops;
	t->d = d;
	/* Over the budget, a request is only answered that it is refused:
	 * a short reply.  Otherwise its reply's bound is held for it. */
	t->buffers_full = conn_buffers_full(c);
	if (t->buffers_full)
		bound = REPLY_SMALL_MAX;
	else if (request_peek(t->payload, len, &op_case, &items))
		bound = operation_reply_bound(op_case, items, &d->svc.limits);
	else
		bound = operation_reply_bound(NDDD__V1__REQUEST__OP__NOT_SET, 0,
		    &d->svc.limits);
	reply_start(&t->reply, c, d->metrics,
	    operation_index(operation_invalid()), d->svc.cfg->max_frame,
	    bound);
	/* (op_case is known only when the frame could be peeked at.) */
	if (!t->buffers_full && runs_inline(op_case, items)) {
		run_request(t, d->loop_ctx);
		arena_reset(&d->loop_ctx->arena);
		if (!t->would_block) {
			req_done(&t->wt);
			return;
		}
		t->would_block = false;
	}
	workers_submit(d->svc.workers, &t->wt);
}

static size_t
handler_pending(void *arg)
{
	return dispatch_pending(arg);
}

void
dispatch_server_handler(struct dispatch *d, struct server_handler *h)
{
	h->frame = dispatch_frame;
	h->pending = handler_pending;
	h->arg = d;
}

void
dispatch_render_gauges(void *arg, struct evbuffer *out)
{
	struct dispatch *d = arg;
	struct daemon_stats s;

	statsreq_gather(&d->svc, &s);
	statsreq_render_gauges(&d->svc, &s, out);
}
