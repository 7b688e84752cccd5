/*
 * dispatch: from a frame to its operation.  See dispatch.h.
 */
#include "dispatch.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "arena.h"
#include "cbf.h"
#include "config.h"
#include "frame.h"
#include "log.h"
#include "request.h"
#include "server.h"
#include "store.h"
#include "urlreq.h"
#include "urlset.h"
#include "version.h"
#include "workers.h"
#include "writer.h"

struct dispatch {
	const struct config *cfg;
	struct store *st;
	struct urlset *us;
	struct writer *w;
	struct server *srv;
	struct workers *workers;
	struct request_limits limits;
	time_t started;
};

/* What one request worker owns. */
struct worker_ctx {
	struct url_keyer *keyer;
	struct store_txn *reader;
	struct arena arena;		/* one request's memory */
};

/* One frame, from the loop to a worker and back. */
struct req_task {
	struct worker_task wt;
	struct dispatch *d;
	struct conn *conn;
	struct evbuffer *reply;		/* frames to send back */
	bool garbage;			/* not a Request: close conn */
	bool handed_off;		/* a writer job answers instead */
	size_t len;
	uint8_t payload[];
};

static void *
worker_ctx_new(void *arg)
{
	struct dispatch *d = arg;
	struct worker_ctx *ctx = calloc(1, sizeof(*ctx));

	if (ctx == NULL)
		return NULL;
	arena_init(&ctx->arena, 64 * 1024);
	ctx->keyer = urlset_keyer_new(d->us);
	ctx->reader = store_reader_new(d->st);
	if (ctx->keyer == NULL || ctx->reader == NULL) {
		urlset_keyer_free(ctx->keyer);
		store_reader_free(ctx->reader);
		free(ctx);
		return NULL;
	}
	return ctx;
}

static void
worker_ctx_free(void *arg)
{
	struct worker_ctx *ctx = arg;

	urlset_keyer_free(ctx->keyer);
	store_reader_free(ctx->reader);
	arena_release(&ctx->arena);
	free(ctx);
}

static void
run_stats(struct dispatch *d, struct worker_ctx *ctx, uint64_t id,
    struct evbuffer *out)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__StatsResult res = NDDD__V1__STATS_RESULT__INIT;
	Nddd__V1__FilterStats fs = NDDD__V1__FILTER_STATS__INIT;
	const struct cbf *f = urlset_filter(d->us);
	struct urlset_stats us = { 0 };
	struct writer_stats ws;
	int rc;

	if ((rc = store_reader_begin(ctx->reader)) != STORE_OK) {
		frame_write_error(out, id, NDDD__V1__CODE__INTERNAL,
		    store_strstatus(rc));
		return;
	}
	urlset_stats(d->us, ctx->reader, &us);
	store_reader_end(ctx->reader);
	writer_stats(d->w, &ws);

	fs.counters = cbf_stat_counters(f);
	fs.nonzero = cbf_stat_nonzero(f);
	fs.saturated = cbf_stat_saturated(f);
	fs.k = CBF_K;
	fs.bytes = cbf_stat_bytes(f);
	res.version = (char *)NDDD_VERSION;
	res.uptime_seconds = (uint64_t)(time(NULL) - d->started);
	res.urls = us.urls;
	res.cbf = &fs;
	res.checks = us.checks;
	res.checks_filter_only = us.checks_filter_only;
	res.filter_false_positives = us.filter_false_positives;
	res.submits_new = us.submits_new;
	res.submits_duplicate = us.submits_duplicate;
	res.deletes = us.deletes;
	res.commits = ws.commits;
	res.store_bytes = store_bytes_used(d->st);
	res.connections = d->srv ? server_connections(d->srv) : 0;
	resp.id = id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_STATS;
	resp.stats = &res;
	frame_write(out, &resp.base);
}

static void
req_run(struct worker_task *wt, void *arg)
{
	struct req_task *t = (struct req_task *)wt;
	struct worker_ctx *ctx = arg;
	struct dispatch *d = t->d;
	Nddd__V1__Request *req;
	Nddd__V1__Code code;
	const char *msg;

	arena_reset(&ctx->arena);
	if ((req = request_decode(&ctx->arena, t->payload, t->len)) == NULL) {
		t->garbage = true;
		return;
	}
	code = request_validate(req, &d->limits, &msg);
	if (code != NDDD__V1__CODE__OK) {
		frame_write_error(t->reply, req->id, code, msg);
		return;
	}
	switch (req->op_case) {
	case NDDD__V1__REQUEST__OP_URL_CHECK:
		urlreq_check(d->us, ctx->keyer, ctx->reader, &ctx->arena,
		    req->id, req->url_check, t->reply);
		break;
	case NDDD__V1__REQUEST__OP_URL_SUBMIT:
		t->handed_off = urlreq_mutate(d->us, ctx->keyer, d->w, t->conn,
		    req->id, URLREQ_SUBMIT, req->url_submit, t->reply);
		break;
	case NDDD__V1__REQUEST__OP_URL_DELETE:
		t->handed_off = urlreq_mutate(d->us, ctx->keyer, d->w, t->conn,
		    req->id, URLREQ_DELETE, req->url_delete, t->reply);
		break;
	case NDDD__V1__REQUEST__OP_STATS:
		run_stats(d, ctx, req->id, t->reply);
		break;
	default:
		/* request_validate refused it. */
		break;
	}
}

static void
req_done(struct worker_task *wt)
{
	struct req_task *t = (struct req_task *)wt;

	if (t->garbage)
		conn_fail(t->conn, NDDD__V1__CODE__INVALID_ARGUMENT,
		    "frame is not a valid nddd.v1.Request");
	else
		conn_send_buffer(t->conn, t->reply);
	if (!t->handed_off)
		conn_release(t->conn);
	evbuffer_free(t->reply);
	free(t);
}

static const struct worker_task_ops req_task_ops = {
	.run = req_run,
	.done = req_done,
};

struct dispatch *
dispatch_new(const struct config *cfg, struct event_base *base,
    struct store *st, struct urlset *us, struct writer *w)
{
	struct dispatch *d;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	d->cfg = cfg;
	d->st = st;
	d->us = us;
	d->w = w;
	d->limits.max_batch = cfg->max_batch;
	d->started = time(NULL);
	d->workers = workers_new((unsigned)cfg->workers, base, worker_ctx_new,
	    worker_ctx_free, d);
	if (d->workers == NULL) {
		free(d);
		return NULL;
	}
	return d;
}

void
dispatch_free(struct dispatch *d)
{
	if (d == NULL)
		return;
	workers_free(d->workers);
	free(d);
}

void
dispatch_set_server(struct dispatch *d, struct server *srv)
{
	d->srv = srv;
}

size_t
dispatch_pending(struct dispatch *d)
{
	return workers_pending(d->workers) + writer_pending(d->w);
}

void
dispatch_frame(struct dispatch *d, struct conn *c, const uint8_t *payload,
    size_t len)
{
	struct req_task *t = malloc(sizeof(*t) + len);

	if (t == NULL || (t->reply = evbuffer_new()) == NULL) {
		free(t);
		conn_send_error(c, 0, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	t->wt.ops = &req_task_ops;
	t->d = d;
	t->conn = c;
	t->garbage = t->handed_off = false;
	t->len = len;
	memcpy(t->payload, payload, len);
	conn_hold(c);
	workers_submit(d->workers, &t->wt);
}
