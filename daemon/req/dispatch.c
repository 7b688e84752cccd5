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

#include <event2/buffer.h>

#include "accel.h"
#include "arena.h"
#include "auth.h"
#include "cbf.h"
#include "docreq.h"
#include "docset.h"
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
	struct docset *ds;
	struct writer *w;
	struct accel *acc;
	struct docreq_env docs;
	struct server *srv;
	struct workers *workers;
	struct metrics *metrics;
	pthread_rwlock_t auth_lock;
	struct auth *auth;		/* NULL: no tokens, all allowed */
	struct store_txn *loop_reader;	/* the loop's own, for gauges */
	struct request_limits limits;
	enum urlset_durability durability;	/* of batches naming none */
	time_t started;
};

/* One frame, from the loop to a worker and back. */
struct req_task {
	struct worker_task wt;
	struct request_origin origin;
	struct evbuffer *reply;		/* frames to send back */
	bool garbage;			/* not a Request: close conn */
	bool failed;			/* refused as a whole */
	bool handed_off;		/* a writer job answers instead */
	struct doc_op *doc;		/* to the accelerator, from the loop */
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
	ctx->urls = urlset_reader_new(d->us);
	ctx->reader = store_reader_new(d->st);
	if (ctx->keyer == NULL || ctx->urls == NULL || ctx->reader == NULL) {
		urlset_keyer_free(ctx->keyer);
		urlset_reader_free(ctx->urls);
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
	urlset_reader_free(ctx->urls);
	store_reader_free(ctx->reader);
	arena_release(&ctx->arena);
	free(ctx);
}

static enum metric_op
metric_op_of(const Nddd__V1__Request *req)
{
	switch (req->op_case) {
	case NDDD__V1__REQUEST__OP_URL_SUBMIT: return METRIC_URL_SUBMIT;
	case NDDD__V1__REQUEST__OP_URL_CHECK: return METRIC_URL_CHECK;
	case NDDD__V1__REQUEST__OP_URL_DELETE: return METRIC_URL_DELETE;
	case NDDD__V1__REQUEST__OP_STATS: return METRIC_STATS;
	case NDDD__V1__REQUEST__OP_VERIFY: return METRIC_VERIFY;
	case NDDD__V1__REQUEST__OP_DOC_SUBMIT: return METRIC_DOC_SUBMIT;
	case NDDD__V1__REQUEST__OP_DOC_QUERY: return METRIC_DOC_QUERY;
	case NDDD__V1__REQUEST__OP_DOC_GET: return METRIC_DOC_GET;
	case NDDD__V1__REQUEST__OP_DOC_DELETE: return METRIC_DOC_DELETE;
	default: return METRIC_INVALID;
	}
}

/*
 * The role req's token grants (ROLE_ADMIN when no tokens are configured),
 * or ROLE_NONE with *why set.
 */
static enum role
authorize(struct dispatch *d, const Nddd__V1__Request *req, const char **why)
{
	enum role role = ROLE_ADMIN;

	pthread_rwlock_rdlock(&d->auth_lock);
	if (d->auth != NULL) {
		const char *tok = req->token ? req->token : "";

		role = *tok ? auth_role(d->auth, tok, strlen(tok)) : ROLE_NONE;
		*why = *tok ? "unknown token" : "a token is required";
	}
	pthread_rwlock_unlock(&d->auth_lock);
	return role;
}

static void
run_stats(struct dispatch *d, struct worker_ctx *ctx, uint64_t id, bool full,
    struct evbuffer *out)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__StatsResult res = NDDD__V1__STATS_RESULT__INIT;
	Nddd__V1__FilterStats fs = NDDD__V1__FILTER_STATS__INIT;
	Nddd__V1__NearStats ns = NDDD__V1__NEAR_STATS__INIT;
	Nddd__V1__AccelStats as = NDDD__V1__ACCEL_STATS__INIT;
	Nddd__V1__UrlStoreStats uss = NDDD__V1__URL_STORE_STATS__INIT;
	const struct cbf *f = urlset_filter(d->us);
	struct urlset_stats us = { 0 };
	struct docset_stats ds = { 0 };
	struct accel_stats acs;
	struct writer_stats ws;
	int rc;

	if ((rc = store_reader_begin(ctx->reader)) != STORE_OK) {
		frame_write_error(out, id, NDDD__V1__CODE__INTERNAL,
		    store_strstatus(rc));
		return;
	}
	rc = docset_stats(d->ds, ctx->reader, &ds);
	store_reader_end(ctx->reader);
	if (rc != STORE_OK) {
		frame_write_error(out, id, NDDD__V1__CODE__INTERNAL,
		    store_strstatus(rc));
		return;
	}
	urlset_stats(d->us, &us);
	res.version = (char *)NDDD_VERSION;
	res.canon = (char *)urlset_canon_id(d->us);
	res.uptime_seconds = (uint64_t)(time(NULL) - d->started);
	res.urls = us.urls;
	res.docs = ds.docs;
	ns.k = ds.k;
	ns.blocks = ds.blocks;
	ns.tables = ds.tables;
	res.near = &ns;
	if (full) {
		ns.bytes = ds.table_bytes;
		ns.distinct = ds.distinct;
		accel_stats(d->acc, &acs);
		as.backend = acs.backend;
		as.simulation = acs.simulation;
		as.batches = acs.batches;
		as.batches_failed = acs.batches_failed;
		as.docs = acs.docs;
		as.bytes = acs.bytes;
		res.accel = &as;
		writer_stats(d->w, &ws);
		fs.counters = cbf_stat_counters(f);
		fs.nonzero = cbf_stat_nonzero(f);
		fs.saturated = cbf_stat_saturated(f);
		fs.k = CBF_K;
		fs.bytes = cbf_stat_bytes(f);
		res.cbf = &fs;
		res.checks = us.checks;
		res.checks_filter_only = us.checks_filter_only;
		res.filter_false_positives = us.filter_false_positives;
		res.submits_new = us.submits_new;
		res.submits_duplicate = us.submits_duplicate;
		res.deletes = us.deletes;
		res.commits = ws.commits;
		uss.journal_entries = us.journal_entries;
		uss.journal_capacity = us.journal_capacity;
		uss.journal_bytes = us.journal_bytes;
		uss.journal_bytes_written = us.journal_bytes_written;
		uss.journal_syncs = us.journal_syncs;
		uss.groups = us.groups;
		uss.flushes = us.flushes;
		uss.merges = us.merges;
		uss.merges_forced = us.merges_forced;
		uss.segments = us.segments;
		uss.small_segments = us.small_segments;
		uss.records = us.records;
		uss.dead_records = us.dead_records;
		uss.store_bytes_written = us.store_bytes_written;
		uss.pending = us.pending;
		uss.index_bytes = us.index_bytes;
		uss.journal_table_bytes = us.journal_table_bytes;
		res.url_store = &uss;
		res.store_bytes = store_bytes_used(d->st);
		res.connections = d->srv ? server_connections(d->srv) : 0;
	}
	resp.id = id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_STATS;
	resp.stats = &res;
	frame_write(out, &resp.base);
}

/*
 * verify: the URL writer flushes and checks the URLs, then the store writer
 * checks the documents, alone between its transactions; the reply goes
 * out after both.
 */
struct verify_job {
	struct urlset_job uj;
	struct writer_job wj;
	struct request_origin origin;
	struct dispatch *d;
	struct urlset_verify urls;
	struct docset_verify docs;
};

static struct verify_job *
verify_of_writer_job(struct writer_job *wj)
{
	return (struct verify_job *)(void *)((char *)wj -
	    offsetof(struct verify_job, wj));
}

static void
verify_reply(struct verify_job *j, int status)
{
	struct evbuffer *out = evbuffer_new();
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__VerifyResult res = NDDD__V1__VERIFY_RESULT__INIT;

	if (out != NULL && status != STORE_OK)
		frame_write_error(out, j->origin.id, NDDD__V1__CODE__INTERNAL,
		    j->urls.detail[0] ? j->urls.detail :
		    j->docs.detail[0] ? j->docs.detail :
		    store_strstatus(status));
	else if (out != NULL) {
		res.consistent = j->urls.counter_mismatches == 0 &&
		    j->urls.index_mismatches == 0 &&
		    j->docs.table_mismatches == 0 &&
		    j->docs.url_mismatches == 0;
		res.urls = j->urls.records;
		res.counter_mismatches = j->urls.counter_mismatches;
		res.url_index_mismatches = j->urls.index_mismatches;
		res.docs = j->docs.records;
		res.table_mismatches = j->docs.table_mismatches +
		    j->docs.url_mismatches;
		res.detail = j->urls.detail[0] ? j->urls.detail :
		    j->docs.detail;
		resp.id = j->origin.id;
		resp.result_case = NDDD__V1__RESPONSE__RESULT_VERIFY;
		resp.verify = &res;
		frame_write(out, &resp.base);
		if (!res.consistent)
			log_warnx("%s: memory and store disagree: %s",
			    __func__, res.detail);
	}
	dispatch_finish(&j->origin, out, status != STORE_OK);
	if (out != NULL)
		evbuffer_free(out);
	free(j);
}

static void
verify_docs_alone(struct writer_job *wj)
{
	struct verify_job *j = verify_of_writer_job(wj);

	wj->status = docset_verify(j->d->ds, &j->docs);
}

static void
verify_docs_done(struct writer_job *wj)
{
	verify_reply(verify_of_writer_job(wj), wj->status);
}

static const struct writer_job_ops verify_job_ops = {
	.alone = verify_docs_alone,
	.done = verify_docs_done,
};

static void
verify_urls_done(struct urlset_job *uj)
{
	struct verify_job *j = (struct verify_job *)uj;

	if (uj->status != STORE_OK) {
		verify_reply(j, uj->status);
		return;
	}
	j->wj.ops = &verify_job_ops;
	writer_submit(j->d->w, &j->wj);
}

static bool
start_verify(struct dispatch *d, const struct request_origin *o,
    struct evbuffer *out)
{
	struct verify_job *j = calloc(1, sizeof(*j));

	if (j == NULL) {
		frame_write_error(out, o->id, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return false;
	}
	j->origin = *o;
	j->d = d;
	j->uj.op = URLSET_VERIFY;
	j->uj.verify = &j->urls;
	j->uj.done = verify_urls_done;
	urlset_submit_job(d->us, &j->uj);
	return true;
}

static void
req_run(struct worker_task *wt, void *arg)
{
	struct req_task *t = (struct req_task *)wt;
	struct worker_ctx *ctx = arg;
	struct dispatch *d = t->origin.d;
	Nddd__V1__Request *req;
	Nddd__V1__Code code;
	const char *msg = NULL;
	enum role role;

	arena_reset(&ctx->arena);
	if ((req = request_decode(&ctx->arena, t->payload, t->len)) == NULL) {
		t->garbage = true;
		return;
	}
	t->origin.id = req->id;
	t->origin.op = metric_op_of(req);
	role = authorize(d, req, &msg);
	if (role < request_role(req)) {
		frame_write_error(t->reply, req->id,
		    NDDD__V1__CODE__PERMISSION_DENIED, role == ROLE_NONE ? msg :
		    "the token's role does not allow this operation");
		t->failed = true;
		return;
	}
	code = request_validate(req, &d->limits, &msg);
	if (code != NDDD__V1__CODE__OK) {
		frame_write_error(t->reply, req->id, code, msg);
		t->failed = true;
		return;
	}
	switch (req->op_case) {
	case NDDD__V1__REQUEST__OP_URL_CHECK:
		urlreq_check(d->us, ctx->keyer, ctx->urls, &ctx->arena,
		    req->id, req->url_check, t->reply);
		break;
	case NDDD__V1__REQUEST__OP_URL_SUBMIT:
		t->handed_off = urlreq_mutate(d->us, ctx->keyer, &t->origin,
		    URLSET_SUBMIT, d->durability, req->url_submit, t->reply);
		break;
	case NDDD__V1__REQUEST__OP_URL_DELETE:
		t->handed_off = urlreq_mutate(d->us, ctx->keyer, &t->origin,
		    URLSET_DELETE, d->durability, req->url_delete, t->reply);
		break;
	case NDDD__V1__REQUEST__OP_STATS:
		run_stats(d, ctx, req->id, role >= ROLE_ADMIN, t->reply);
		break;
	case NDDD__V1__REQUEST__OP_VERIFY:
		t->handed_off = start_verify(d, &t->origin, t->reply);
		break;
	case NDDD__V1__REQUEST__OP_DOC_SUBMIT:
	case NDDD__V1__REQUEST__OP_DOC_QUERY:
	case NDDD__V1__REQUEST__OP_DOC_GET:
	case NDDD__V1__REQUEST__OP_DOC_DELETE:
		switch (docreq_start(&d->docs, ctx, req, &t->origin, t->reply,
		    &t->doc)) {
		case DOCREQ_ANSWERED:
			break;
		case DOCREQ_HANDED_OFF:
		case DOCREQ_FINGERPRINT:
			t->handed_off = true;
			break;
		}
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

	if (t->garbage) {
		conn_fail(t->origin.conn, NDDD__V1__CODE__INVALID_ARGUMENT,
		    "frame is not a valid nddd.v1.Request");
		dispatch_finish(&t->origin, NULL, true);
	} else if (t->doc != NULL)
		docreq_fingerprint(t->doc);	/* the accelerator is the loop's */
	else if (!t->handed_off)
		dispatch_finish(&t->origin, t->reply, t->failed);
	evbuffer_free(t->reply);
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

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	d->cfg = cfg;
	d->st = deps->st;
	d->us = deps->us;
	d->ds = deps->ds;
	d->w = deps->w;
	d->acc = deps->acc;
	d->metrics = deps->metrics;
	d->auth = deps->auth;
	pthread_rwlock_init(&d->auth_lock, NULL);
	d->limits.max_batch = cfg->max_batch;
	d->durability = cfg->sync == STORE_SYNC_FULL ? URLSET_DURABLE :
	    URLSET_RELAXED;
	d->started = time(NULL);
	if ((d->loop_reader = store_reader_new(d->st)) == NULL)
		goto err;
	d->workers = workers_new((unsigned)cfg->workers, base, worker_ctx_new,
	    worker_ctx_free, d);
	if (d->workers == NULL)
		goto err;
	d->docs.ds = d->ds;
	d->docs.w = d->w;
	d->docs.acc = d->acc;
	d->docs.workers = d->workers;
	d->docs.max_results = cfg->near_max_results;
	d->docs.batch_docs = (unsigned)cfg->accel_batch_docs;
	if (docreq_env_init(&d->docs, base) == -1)
		goto err;
	return d;
err:
	if (d->workers != NULL)
		workers_free(d->workers);
	store_reader_free(d->loop_reader);
	pthread_rwlock_destroy(&d->auth_lock);
	free(d);
	return NULL;
}

void
dispatch_free(struct dispatch *d)
{
	if (d == NULL)
		return;
	workers_free(d->workers);
	docreq_env_clear(&d->docs);
	store_reader_free(d->loop_reader);
	auth_free(d->auth);
	pthread_rwlock_destroy(&d->auth_lock);
	free(d);
}

void
dispatch_set_server(struct dispatch *d, struct server *srv)
{
	d->srv = srv;
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
	struct urlset_stats us;

	urlset_stats(d->us, &us);
	return workers_pending(d->workers) + writer_pending(d->w) + us.pending +
	    d->docs.in_accel;
}

void
dispatch_finish(const struct request_origin *o, struct evbuffer *reply,
    bool failed)
{
	if (reply != NULL)
		conn_send_buffer(o->conn, reply);
	metrics_observe(o->d->metrics, o->op, o->t0_ns, failed);
	conn_release(o->conn);
}

void
dispatch_frame(struct dispatch *d, struct conn *c, const uint8_t *payload,
    size_t len)
{
	struct req_task *t = malloc(sizeof(*t) + len);

	if (t != NULL) {
		memset(t, 0, sizeof(*t));
		t->reply = evbuffer_new();
	}
	if (t == NULL || t->reply == NULL) {
		free(t);
		conn_send_error(c, 0, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	t->wt.ops = &req_task_ops;
	t->origin.d = d;
	t->origin.conn = c;
	t->origin.t0_ns = metrics_now_ns();
	t->origin.op = METRIC_INVALID;
	t->len = len;
	memcpy(t->payload, payload, len);
	conn_hold(c);
	workers_submit(d->workers, &t->wt);
}

static void
handler_frame(void *arg, struct conn *c, const uint8_t *payload, size_t len)
{
	dispatch_frame(arg, c, payload, len);
}

static size_t
handler_pending(void *arg)
{
	return dispatch_pending(arg);
}

void
dispatch_server_handler(struct dispatch *d, struct server_handler *h)
{
	h->frame = handler_frame;
	h->pending = handler_pending;
	h->arg = d;
}

void
dispatch_render_gauges(void *arg, struct evbuffer *out)
{
	struct dispatch *d = arg;
	const struct cbf *f = urlset_filter(d->us);
	struct urlset_stats us = { 0 };
	struct docset_stats ds = { 0 };
	struct accel_stats as;
	struct writer_stats ws;
	int docs_rc = store_reader_begin(d->loop_reader);

	if (docs_rc == STORE_OK) {
		docs_rc = docset_stats(d->ds, d->loop_reader, &ds);
		store_reader_end(d->loop_reader);
	}
	urlset_stats(d->us, &us);
	writer_stats(d->w, &ws);
	accel_stats(d->acc, &as);
	/* A count the store could not give is left out, not shown as 0. */
	if (docs_rc == STORE_OK)
		metrics_render_value(out, "nddd_docs", "gauge",
		    "Documents stored.", (double)ds.docs);
	metrics_render_value(out, "nddd_docs_distinct_fingerprints", "gauge",
	    "Distinct fingerprints among the stored documents.",
	    (double)ds.distinct);
	metrics_render_value(out, "nddd_tables_bytes", "gauge",
	    "Memory of the near-duplicate tables.", (double)ds.table_bytes);
	metrics_render_value(out, "nddd_tables", "gauge",
	    "Near-duplicate tables.", (double)ds.tables);
	metrics_render_value(out, "nddd_accel_batches_total", "counter",
	    "Document batches given to the accelerator backend.",
	    (double)as.batches);
	metrics_render_value(out, "nddd_accel_batches_failed_total", "counter",
	    "Batches a plugin failed or refused (redone on the cpu).",
	    (double)as.batches_failed);
	metrics_render_value(out, "nddd_accel_documents_total", "counter",
	    "Documents fingerprinted.", (double)as.docs);
	metrics_render_value(out, "nddd_accel_bytes_total", "counter",
	    "Bytes of documents fingerprinted.", (double)as.bytes);
	evbuffer_add_printf(out, "# HELP nddd_accel_backend The accelerator "
	    "backend in use (1), and whether it is a simulation.\n"
	    "# TYPE nddd_accel_backend gauge\n"
	    "nddd_accel_backend{backend=\"%s\",simulation=\"%s\"} 1\n",
	    as.backend, as.simulation ? "yes" : "no");
	metrics_render_value(out, "nddd_urls", "gauge", "URLs stored.",
	    (double)us.urls);
	metrics_render_value(out, "nddd_filter_counters", "gauge",
	    "Counters of the URL filter (m).", (double)cbf_stat_counters(f));
	metrics_render_value(out, "nddd_filter_nonzero", "gauge",
	    "Filter counters above zero.", (double)cbf_stat_nonzero(f));
	metrics_render_value(out, "nddd_filter_saturated", "gauge",
	    "Filter counters at 15.", (double)cbf_stat_saturated(f));
	metrics_render_value(out, "nddd_filter_fill_ratio", "gauge",
	    "Share of filter counters above zero.",
	    (double)cbf_stat_nonzero(f) / (double)cbf_stat_counters(f));
	metrics_render_value(out, "nddd_filter_bytes", "gauge",
	    "Memory of the URL filter.", (double)cbf_stat_bytes(f));
	metrics_render_value(out, "nddd_url_checks_total", "counter",
	    "URLs checked.", (double)us.checks);
	metrics_render_value(out, "nddd_url_checks_filter_only_total",
	    "counter", "URL checks answered by the filter alone.",
	    (double)us.checks_filter_only);
	metrics_render_value(out, "nddd_filter_false_positives_total",
	    "counter", "URL checks the filter sent to the store in vain.",
	    (double)us.filter_false_positives);
	metrics_render_value(out, "nddd_url_submits_new_total", "counter",
	    "URL submits that were new.", (double)us.submits_new);
	metrics_render_value(out, "nddd_url_submits_duplicate_total",
	    "counter", "URL submits that were duplicates.",
	    (double)us.submits_duplicate);
	metrics_render_value(out, "nddd_url_deletes_total", "counter",
	    "URL records deleted.", (double)us.deletes);
	metrics_render_value(out, "nddd_url_journal_entries", "gauge",
	    "URLs changed since the last flush into the store.",
	    (double)us.journal_entries);
	metrics_render_value(out, "nddd_url_journal_capacity", "gauge",
	    "URLs changed between flushes, at most.",
	    (double)us.journal_capacity);
	metrics_render_value(out, "nddd_url_journal_bytes", "gauge",
	    "Bytes in the URL journal file now.", (double)us.journal_bytes);
	metrics_render_value(out, "nddd_url_journal_written_bytes_total",
	    "counter", "Bytes written to the URL journal.",
	    (double)us.journal_bytes_written);
	metrics_render_value(out, "nddd_url_journal_syncs_total", "counter",
	    "fdatasyncs of the URL journal.", (double)us.journal_syncs);
	metrics_render_value(out, "nddd_url_group_commits_total", "counter",
	    "Groups of URL submits and deletes committed to the journal.",
	    (double)us.groups);
	metrics_render_value(out, "nddd_url_flushes_total", "counter",
	    "Flushes of the journal into store segments.",
	    (double)us.flushes);
	metrics_render_value(out, "nddd_url_merges_total", "counter",
	    "Merges of small or sparse URL segments.", (double)us.merges);
	metrics_render_value(out, "nddd_url_merges_forced_total", "counter",
	    "Merges that held URL writers back (back-pressure).",
	    (double)us.merges_forced);
	metrics_render_value(out, "nddd_url_segments", "gauge",
	    "URL segments in the store.", (double)us.segments);
	metrics_render_value(out, "nddd_url_small_segments", "gauge",
	    "URL segments below half the segment size (merge backlog).",
	    (double)us.small_segments);
	metrics_render_value(out, "nddd_url_dead_records", "gauge",
	    "Replaced or deleted URL records not merged away yet (merge "
	    "backlog).", (double)us.dead_records);
	metrics_render_value(out, "nddd_url_store_written_bytes_total",
	    "counter", "Bytes of URL segments and bitmaps written.",
	    (double)us.store_bytes_written);
	metrics_render_value(out, "nddd_url_writes_pending", "gauge",
	    "URL submits and deletes queued for the URL writer.",
	    (double)us.pending);
	metrics_render_value(out, "nddd_url_index_bytes", "gauge",
	    "Memory of the URL index.", (double)us.index_bytes);
	metrics_render_value(out, "nddd_store_commits_total", "counter",
	    "Store transactions committed.", (double)ws.commits);
	metrics_render_value(out, "nddd_store_failed_transactions_total",
	    "counter", "Store transactions that failed.",
	    (double)ws.failed_txns);
	metrics_render_value(out, "nddd_store_bytes", "gauge",
	    "Bytes of the store in use.", (double)store_bytes_used(d->st));
	metrics_render_value(out, "nddd_connections", "gauge",
	    "Client connections open.",
	    d->srv ? (double)server_connections(d->srv) : 0);
	metrics_render_value(out, "nddd_requests_pending", "gauge",
	    "Requests accepted and not yet answered.",
	    (double)dispatch_pending(d));
}
