/*
 * shardreq: the resharding operations.  See shardreq.h.
 *
 * An export session spans the URL set and the documents: BEGIN starts
 * the URL set's (a URL writer job: it flushes and takes its snapshot),
 * then the documents' (a store writer job, so that it falls between two
 * transactions), and only then names the session.  A page reads both
 * from a worker; the changed keys come from both too, the URLs' through
 * the URL writer.  An import is a URL writer job, then a store writer
 * job.
 */
#include "shardreq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docmove.h"
#include "docreq.h"
#include "log.h"
#include "reply.h"
#include "shardstate.h"
#include "sketch.h"
#include "store.h"
#include "urlcanon.h"
#include "urlhosts.h"
#include "urlset.h"
#include "writer.h"

/* The most a moved URL or document takes in a reply: its namespace,
 * digest, times and text (the host index keeps at most URLHOSTS_TEXT_MAX
 * bytes); a document's canonical URL of up to URLCANON_MAX_LEN bytes. */
#define MOVED_URL_MAX		(URLNS_NAME_MAX + URLHOSTS_TEXT_MAX + 96)
#define MOVED_DOC_MAX		(DOCNS_NAME_MAX + URLCANON_MAX_LEN + 96)

Nddd__V1__Code
shardreq_validate_set(const Nddd__V1__ShardState *s, const char **message)
{
	if (s == NULL) {
		*message = "shard_set names a state";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	return NDDD__V1__CODE__OK;
}

Nddd__V1__Code
shardreq_validate_export(const Nddd__V1__ShardExport *e, const char **message)
{
	if (e == NULL) {
		*message = "shard_export names a step";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	if (e->step == NDDD__V1__EXPORT_STEP__EXPORT_BEGIN &&
	    (e->shards < 2 || e->shards > 65535)) {
		*message = "a shard list has 2 to 65,535 places";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	return NDDD__V1__CODE__OK;
}

Nddd__V1__Code
shardreq_validate_import(const Nddd__V1__MovedKeys *m, const char **message)
{
	if (m == NULL)
		return NDDD__V1__CODE__OK;
	if (m->n_urls > SHARDREQ_PAGE_MAX || m->n_docs > SHARDREQ_PAGE_MAX) {
		*message = "an import carries at most 4,096 URLs and 4,096 "
		    "documents";
		return NDDD__V1__CODE__RESOURCE_EXHAUSTED;
	}
	for (size_t i = 0; i < m->n_urls; i++) {
		const Nddd__V1__MovedUrl *u = m->urls[i];

		if (u->digest.len != CBF_FP_LEN) {
			*message = "a moved URL's digest is 16 bytes";
			return NDDD__V1__CODE__INVALID_ARGUMENT;
		}
		if (u->url.len > URLHOSTS_TEXT_MAX) {
			*message = "a moved URL's text is too long for the "
			    "host index";
			return NDDD__V1__CODE__INVALID_ARGUMENT;
		}
		if ((*message = urlns_check_name(u->namespace_,
		    strlen(u->namespace_))) != NULL)
			return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	for (size_t i = 0; i < m->n_docs; i++) {
		const Nddd__V1__MovedDoc *d = m->docs[i];
		Nddd__V1__Code code;

		if (d->url.len == 0) {
			*message = "a moved document names its URL";
			return NDDD__V1__CODE__INVALID_ARGUMENT;
		}
		if (d->group >> 63 != 0) {
			*message = "group ids are below 2^63";
			return NDDD__V1__CODE__INVALID_ARGUMENT;
		}
		if (d->sketch.len > 0 && sketch_decode(d->sketch.data,
		    d->sketch.len, &(struct sketch){ 0 }) == -1) {
			*message = "a moved document's sketch is not one";
			return NDDD__V1__CODE__INVALID_ARGUMENT;
		}
		if ((code = docreq_namespace_validate(d->namespace_,
		    message)) != NDDD__V1__CODE__OK)
			return code;
	}
	return NDDD__V1__CODE__OK;
}

void
shardreq_set(struct op_call *call)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__ShardState now;
	Nddd__V1__Code code;
	char list[SHARD_LIST_MAX + 1];
	const char *why;

	if ((why = shard_state_set(call->svc->shard, call->req->shard_set,
	    &code)) != NULL) {
		reply_error(call->reply, code, why);
		return;
	}
	shard_state_message(call->svc->shard, &now, list);
	resp.id = call->reply->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_SHARD;
	resp.shard = &now;
	reply_message(call->reply, &resp.base);
}

/* ---- Messages of moved keys. ---- */

/* A MovedKeys message's lists, pointing into the keys they carry. */
struct moved_msg {
	Nddd__V1__MovedKeys keys;
	Nddd__V1__MovedUrl *urls, **urlp;
	Nddd__V1__MovedDoc *docs, **docp;
	uint8_t *sketches;		/* the documents' encodings */
};

static int
moved_msg_init(struct moved_msg *m, const struct url_moved *u, size_t nu,
    const struct doc_moved *d, size_t nd)
{
	memset(m, 0, sizeof(*m));
	nddd__v1__moved_keys__init(&m->keys);
	if ((m->urls = calloc(nu + 1, sizeof(*m->urls))) == NULL ||
	    (m->urlp = calloc(nu + 1, sizeof(*m->urlp))) == NULL ||
	    (m->docs = calloc(nd + 1, sizeof(*m->docs))) == NULL ||
	    (m->docp = calloc(nd + 1, sizeof(*m->docp))) == NULL ||
	    (m->sketches = malloc((nd + 1) * SKETCH_WIRE_MAX)) == NULL)
		return -1;
	for (size_t i = 0; i < nu; i++) {
		Nddd__V1__MovedUrl *o = &m->urls[i];

		nddd__v1__moved_url__init(o);
		o->namespace_ = (char *)u[i].ns;
		o->digest.data = (uint8_t *)u[i].digest;
		o->digest.len = CBF_FP_LEN;
		if (!u[i].text_only) {
			o->count = u[i].st.count;
			o->first_seen_ms = u[i].st.first_seen_ms;
			o->last_seen_ms = u[i].st.last_seen_ms;
			o->expires_ms = u[i].st.expires_ms;
		}
		if (u[i].text != NULL) {
			o->url.data = (uint8_t *)u[i].text;
			o->url.len = u[i].text_len;
		}
		o->text_only = u[i].text_only;
		m->urlp[i] = o;
	}
	for (size_t i = 0; i < nd; i++) {
		Nddd__V1__MovedDoc *o = &m->docs[i];

		nddd__v1__moved_doc__init(o);
		o->namespace_ = (char *)d[i].ns;
		o->url.data = (uint8_t *)d[i].url;
		o->url.len = d[i].url_len;
		o->simhash = d[i].fp;
		o->group = d[i].group;
		o->created_ms = d[i].created_ms;
		o->last_ms = d[i].updated_ms;
		o->deleted = d[i].deleted;
		if (d[i].has_sketch && !d[i].deleted) {
			o->sketch.data = m->sketches + i * SKETCH_WIRE_MAX;
			o->sketch.len = sketch_encode(&d[i].sketch,
			    o->sketch.data);
		}
		m->docp[i] = o;
	}
	m->keys.n_urls = nu;
	m->keys.urls = m->urlp;
	m->keys.n_docs = nd;
	m->keys.docs = m->docp;
	return 0;
}

static void
moved_msg_clear(struct moved_msg *m)
{
	free(m->urls);
	free(m->urlp);
	free(m->docs);
	free(m->docp);
	free(m->sketches);
}

/* Answers r with keys (or an error if memory is short). */
static void
reply_moved(struct reply *r, const struct url_moved *u, size_t nu,
    const struct doc_moved *d, size_t nd, uint64_t session,
    uint64_t url_cursor, uint64_t doc_cursor, bool done, bool texts_follow)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	struct moved_msg m;

	if (moved_msg_init(&m, u, nu, d, nd) == -1) {
		moved_msg_clear(&m);
		reply_error(r, NDDD__V1__CODE__INTERNAL, "out of memory");
		return;
	}
	m.keys.session = session;
	m.keys.url_cursor = url_cursor;
	m.keys.doc_cursor = doc_cursor;
	m.keys.done = done;
	m.keys.texts_follow = texts_follow;
	resp.id = r->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_MOVED;
	resp.moved = &m.keys;
	reply_message(r, &resp.base);
	moved_msg_clear(&m);
}

/* ---- shard_export. ---- */

/* How many moved URLs, or documents, fit in share (1/share) of a reply. */
static size_t
urls_per_reply(const struct req_services *svc, size_t share)
{
	size_t n = svc->limits.max_frame / share / MOVED_URL_MAX;

	return n < 1 ? 1 : n > SHARDREQ_PAGE_MAX ? SHARDREQ_PAGE_MAX : n;
}

static size_t
docs_per_reply(const struct req_services *svc, size_t share)
{
	size_t n = svc->limits.max_frame / share / MOVED_DOC_MAX;

	return n < 1 ? 1 : n > SHARDREQ_PAGE_MAX ? SHARDREQ_PAGE_MAX : n;
}

/* A step of an export travelling through the writers. */
struct export_job {
	struct urlset_job uj;
	struct docmove_begin_job begin;
	struct reply reply;
	struct req_services *svc;
	Nddd__V1__ExportStep step;
	uint64_t session;
	uint32_t shards, place;
	struct doc_moved *docs;		/* EXPORT_CHANGED's */
	size_t ndocs;
	bool docs_more;
};

static void
export_job_free(struct export_job *j)
{
	docmove_free(j->docs, j->ndocs);
	free(j);
}

/* A failure of the documents' export: no session is one to begin. */
static void
reply_move_error(struct reply *r, int status)
{
	if (status == DOCMOVE_NOSESSION || status == DOCMOVE_STALE ||
	    status == DOCMOVE_INVALID)
		reply_error(r, status == DOCMOVE_INVALID ?
		    NDDD__V1__CODE__INVALID_ARGUMENT :
		    NDDD__V1__CODE__FAILED_PRECONDITION,
		    docmove_strstatus(status));
	else
		reply_store_error(r, status);
}

/* Loop: both sessions are open. */
static void
export_begun(struct docmove_begin_job *b)
{
	struct export_job *j = b->arg;

	if (b->wj.status != STORE_OK)
		reply_move_error(&j->reply, b->wj.status);
	else {
		uint64_t id = shard_session_begin(j->svc->shard);

		log_info("export session %llu begun: the keys another place "
		    "owns among %u, this one %u", (unsigned long long)id,
		    j->shards, j->place);
		reply_moved(&j->reply, NULL, 0, NULL, 0, id, 0, 0, false, false);
	}
	reply_finish(&j->reply);
	export_job_free(j);
}

/* Loop: a URL writer step is done; carries on with the documents. */
static void
export_url_done(struct urlset_job *uj)
{
	struct export_job *j = (struct export_job *)uj;

	if (uj->status != STORE_OK) {
		if (uj->status == STORE_FAILED && j->step !=
		    NDDD__V1__EXPORT_STEP__EXPORT_BEGIN &&
		    !urlset_export_open(j->svc->us))
			reply_error(&j->reply,
			    NDDD__V1__CODE__FAILED_PRECONDITION, "the URL "
			    "set's export session failed (memory): begin "
			    "again");
		else if (uj->refused != NULL)
			reply_error(&j->reply,
			    NDDD__V1__CODE__INVALID_ARGUMENT, uj->refused);
		else
			reply_store_error(&j->reply, uj->status);
		goto out;
	}
	switch (j->step) {
	case NDDD__V1__EXPORT_STEP__EXPORT_BEGIN:
		docmove_begin_job_init(&j->begin, j->svc->ds, j->shards,
		    j->place, export_begun, j);
		writer_submit(j->svc->w, &j->begin.wj);
		return;
	case NDDD__V1__EXPORT_STEP__EXPORT_CHANGED:
		reply_moved(&j->reply, uj->moved, uj->nmoved, j->docs,
		    j->ndocs, j->session, 0, 0,
		    !uj->more && !j->docs_more,
		    urlset_hosts_complete(j->svc->us));
		urlset_moved_free(uj->moved);
		break;
	default:
		docmove_end(j->svc->ds);
		shard_session_end(j->svc->shard);
		log_info("export session ended");
		reply_moved(&j->reply, NULL, 0, NULL, 0, 0, 0, 0, true,
		    false);
		break;
	}
out:
	reply_finish(&j->reply);
	export_job_free(j);
}

/*
 * A page: the URL set's records from url_cursor on (UINT64_MAX once they
 * are all read), then the documents' from doc_cursor on, within the
 * frame.
 */
static void
export_page(struct op_call *call, const Nddd__V1__ShardExport *e)
{
	struct req_services *svc = call->svc;
	struct url_moved *urls = NULL;
	struct doc_moved *docs = NULL;
	size_t nurls = 0, ndocs = 0;
	uint64_t url_cursor = e->url_cursor, doc_cursor = e->doc_cursor;
	bool done = false;
	int rc = STORE_OK;

	if (url_cursor != UINT64_MAX) {
		bool urls_done;

		rc = urlset_export_page(svc->us, &url_cursor,
		    urls_per_reply(svc, 2), &urls, &nurls, &urls_done);
		if (rc == STORE_OK && urls_done)
			url_cursor = UINT64_MAX;
	}
	if (rc == STORE_OK && url_cursor == UINT64_MAX && nurls == 0) {
		if ((rc = store_reader_begin(call->ctx->reader)) ==
		    STORE_OK) {
			rc = docmove_page(svc->ds, call->ctx->reader,
			    &doc_cursor, docs_per_reply(svc, 2), &docs, &ndocs,
			    &done);
			store_reader_end(call->ctx->reader);
		}
	}
	if (rc == STORE_FAILED && !urlset_export_open(svc->us))
		reply_error(call->reply, NDDD__V1__CODE__FAILED_PRECONDITION,
		    "the URL set's export session failed (memory): begin "
		    "again");
	else if (rc != STORE_OK)
		reply_move_error(call->reply, rc);
	else
		reply_moved(call->reply, urls, nurls, docs, ndocs, e->session,
		    url_cursor, doc_cursor, done,
		    urlset_hosts_complete(svc->us));
	urlset_moved_free(urls);
	docmove_free(docs, ndocs);
}

void
shardreq_export(struct op_call *call)
{
	const Nddd__V1__ShardExport *e = call->req->shard_export;
	struct req_services *svc = call->svc;
	struct shard_view v;
	struct export_job *j;
	int rc;

	if (e->step != NDDD__V1__EXPORT_STEP__EXPORT_BEGIN &&
	    e->step != NDDD__V1__EXPORT_STEP__EXPORT_END &&
	    !shard_session_is(svc->shard, e->session)) {
		reply_error(call->reply, NDDD__V1__CODE__FAILED_PRECONDITION,
		    "no such export session (the daemon restarted, or "
		    "another began): begin again");
		return;
	}
	if (e->step == NDDD__V1__EXPORT_STEP__EXPORT_PAGE) {
		export_page(call, e);
		return;
	}
	if ((j = calloc(1, sizeof(*j))) == NULL) {
		reply_error(call->reply, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	j->svc = svc;
	j->step = e->step;
	j->session = e->session;
	switch (e->step) {
	case NDDD__V1__EXPORT_STEP__EXPORT_BEGIN:
		shard_state_view(svc->shard, &v);
		j->shards = e->shards;
		/* A shard's own place, else the one the request names. */
		j->place = v.shards > 0 ? v.place : e->place;
		if (j->place >= j->shards) {
			reply_error(call->reply,
			    NDDD__V1__CODE__INVALID_ARGUMENT,
			    "the exporting place is not in the new list");
			export_job_free(j);
			return;
		}
		j->uj.op = URLSET_EXPORT_BEGIN;
		j->uj.shards = j->shards;
		j->uj.place = j->place;
		break;
	case NDDD__V1__EXPORT_STEP__EXPORT_CHANGED:
		/* The documents first, then the URLs through their
		 * writer: both answer in one reply. */
		if ((rc = store_reader_begin(call->ctx->reader)) ==
		    STORE_OK) {
			rc = docmove_changed(svc->ds, call->ctx->reader,
			    docs_per_reply(svc, 4), &j->docs, &j->ndocs,
			    &j->docs_more);
			store_reader_end(call->ctx->reader);
		}
		if (rc != STORE_OK) {
			reply_move_error(call->reply, rc);
			export_job_free(j);
			return;
		}
		j->uj.op = URLSET_EXPORT_CHANGED;
		j->uj.n = urls_per_reply(svc, 4);
		break;
	default:
		j->uj.op = URLSET_EXPORT_END;
		break;
	}
	j->uj.done = export_url_done;
	reply_move(&j->reply, call->reply);
	urlset_submit_job(svc->us, &j->uj);
}

/* ---- shard_import. ---- */

struct import_job {
	struct urlset_job uj;
	struct docmove_import_job docs_job;
	struct reply reply;
	struct req_services *svc;
	struct url_moved *urls;
	size_t nurls;
	struct doc_moved *docs;
	size_t ndocs;
	char *text;			/* the texts and URLs, copied */
};

static void
import_job_free(struct import_job *j)
{
	docmove_import_job_clear(&j->docs_job);
	free(j->urls);
	free(j->docs);
	free(j->text);
	free(j);
}

/* Loop: the documents are in too. */
static void
import_done(struct docmove_import_job *dj)
{
	struct import_job *j = dj->arg;

	/* An empty page: the keys are in. */
	if (dj->wj.status != STORE_OK)
		reply_move_error(&j->reply, dj->wj.status);
	else
		reply_moved(&j->reply, NULL, 0, NULL, 0, 0, 0, 0, true,
		    false);
	reply_finish(&j->reply);
	import_job_free(j);
}

/* Loop: the URLs are in; the documents next. */
static void
import_urls_done(struct urlset_job *uj)
{
	struct import_job *j = (struct import_job *)uj;

	if (uj->status != STORE_OK) {
		reply_store_error(&j->reply, uj->status);
		reply_finish(&j->reply);
		import_job_free(j);
		return;
	}
	writer_submit(j->svc->w, &j->docs_job.wj);
}

void
shardreq_import(struct op_call *call)
{
	const Nddd__V1__MovedKeys *m = call->req->shard_import;
	struct import_job *j;
	size_t nu = m != NULL ? m->n_urls : 0, nd = m != NULL ? m->n_docs : 0;
	size_t text = 0, off = 0;
	int rc;

	for (size_t i = 0; i < nu; i++)
		text += m->urls[i]->url.len + 1;
	for (size_t i = 0; i < nd; i++)
		text += m->docs[i]->url.len + 1;
	if ((j = calloc(1, sizeof(*j))) == NULL ||
	    (j->urls = calloc(nu + 1, sizeof(*j->urls))) == NULL ||
	    (j->docs = calloc(nd + 1, sizeof(*j->docs))) == NULL ||
	    (j->text = malloc(text + 1)) == NULL) {
		if (j != NULL)
			import_job_free(j);
		reply_error(call->reply, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	j->svc = call->svc;
	/* The request's memory is the worker's: the job keeps copies. */
	for (size_t i = 0; i < nu; i++) {
		const Nddd__V1__MovedUrl *u = m->urls[i];
		struct url_moved *o = &j->urls[i];

		memcpy(o->digest, u->digest.data, CBF_FP_LEN);
		snprintf(o->ns, sizeof(o->ns), "%s", u->namespace_);
		o->st.count = u->count;
		o->st.first_seen_ms = u->first_seen_ms;
		o->st.last_seen_ms = u->last_seen_ms;
		o->st.expires_ms = u->expires_ms;
		if (u->url.len > 0) {
			o->text = memcpy(j->text + off, u->url.data,
			    u->url.len);
			o->text_len = u->url.len;
			off += u->url.len + 1;
		}
		o->text_only = u->text_only;
	}
	for (size_t i = 0; i < nd; i++) {
		const Nddd__V1__MovedDoc *d = m->docs[i];
		struct doc_moved *o = &j->docs[i];

		snprintf(o->ns, sizeof(o->ns), "%s", d->namespace_);
		o->url = memcpy(j->text + off, d->url.data, d->url.len);
		o->url[d->url.len] = '\0';
		o->url_len = d->url.len;
		off += d->url.len + 1;
		o->fp = d->simhash;
		o->group = d->group;
		o->created_ms = d->created_ms;
		o->updated_ms = d->last_ms;
		o->deleted = d->deleted;
		/* Checked with the request. */
		o->has_sketch = d->sketch.len > 0 && sketch_decode(
		    d->sketch.data, d->sketch.len, &o->sketch) == 0;
	}
	j->nurls = nu;
	j->ndocs = nd;
	/* The documents are checked before anything changes. */
	if ((rc = docmove_import_job_init(&j->docs_job, call->svc->ds,
	    j->docs, nd, import_done, j)) != STORE_OK) {
		reply_move_error(call->reply, rc);
		import_job_free(j);
		return;
	}
	j->uj.op = URLSET_IMPORT;
	j->uj.texts_follow = m != NULL && m->texts_follow;
	j->uj.durability = call->svc->durability;
	j->uj.moved = j->urls;
	j->uj.nmoved = nu;
	j->uj.done = import_urls_done;
	reply_move(&j->reply, call->reply);
	urlset_submit_job(call->svc->us, &j->uj);
}
