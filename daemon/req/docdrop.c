/*
 * docdrop: namespace_drop and the forgetting of dropped namespaces'
 * documents.  See docdrop.h.
 */
#include "docdrop.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "docreq.h"
#include "docset.h"
#include "log.h"
#include "reply.h"
#include "shardstate.h"
#include "urlreq.h"
#include "server.h"
#include "store.h"
#include "urlset.h"
#include "writer.h"

struct step_job;

struct docdrop {
	struct req_services *svc;
	struct event *next;		/* the next step, after a pause */
	struct step_job *inflight;	/* the step in the writer, or NULL */
	uint32_t ns;			/* the namespace being forgotten, 0:
					   none yet */
	char name[DOCNS_NAME_MAX + 1];	/* its name, for the log */
	uint64_t from;			/* the next document id to look at */
	uint64_t forgotten;		/* of ns, since this run began it */
	size_t step_docs;
	unsigned pause_ms;		/* between steps (tests) */
};

/* A step: documents of dropped namespace ns forgotten, from id from on. */
struct step_job {
	struct writer_job wj;
	struct docdrop *dd;		/* NULL once dd is freed */
	struct docset *ds;
	uint32_t ns;
	uint64_t from, next_from;
	bool done;			/* the namespace was retired */
	struct docset_ns_undo nsundo;
	size_t n, max;
	struct doc_undo undo[];
};

static int
step_apply(struct writer_job *wj, struct store_txn *txn)
{
	struct step_job *j = (struct step_job *)wj;

	j->next_from = j->from;
	j->done = false;
	return docset_ns_forget(j->ds, txn, j->ns, &j->next_from,
	    DOCDROP_STEP_SCAN, j->max, j->undo, &j->n, &j->done, &j->nsundo);
}

static void
step_committed(struct writer_job *wj)
{
	(void)wj;	/* the tables changed with the transaction */
}

/* Writer thread: the retirement first, then the documents, last first. */
static void
step_aborted(struct writer_job *wj)
{
	struct step_job *j = (struct step_job *)wj;

	docset_ns_undo(j->ds, &j->nsundo);
	memset(&j->nsundo, 0, sizeof(j->nsundo));
	while (j->n > 0)
		docset_undo(j->ds, &j->undo[--j->n]);
}

static void step_send(struct docdrop *dd);

/* Loop thread: the next step, or a pause before it. */
static void
step_later(struct docdrop *dd, unsigned ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (ms == 0 || dd->next == NULL || event_add(dd->next, &tv) == -1)
		step_send(dd);
}

static void
step_done(struct writer_job *wj)
{
	struct step_job *j = (struct step_job *)wj;
	struct docdrop *dd = j->dd;

	if (dd == NULL) {
		free(j);	/* its docdrop is gone: nothing goes on */
		return;
	}
	dd->inflight = NULL;
	if (wj->status != STORE_OK) {
		/* A full store says so itself. */
		if (!store_status_full(wj->status))
			log_warnx("%s: forgetting the documents of a dropped "
			    "namespace: %s; again in a second", __func__,
			    store_strstatus(wj->status));
		free(j);
		step_later(dd, DOCDROP_RETRY_MS);
		return;
	}
	dd->forgotten += j->n;
	dd->from = j->next_from;
	if (j->done) {
		log_info("%s: the documents of dropped namespace %s (id %"
		    PRIu32 ") are forgotten (%" PRIu64 " by this run)",
		    __func__, dd->name, j->ns, dd->forgotten);
		dd->ns = 0;
	}
	free(j);
	step_later(dd, dd->pause_ms);
}

static const struct writer_job_ops step_job_ops = {
	.apply = step_apply,
	.committed = step_committed,
	.aborted = step_aborted,
	.done = step_done,
};

/* Loop thread: sends the next step, if there is one to send. */
static void
step_send(struct docdrop *dd)
{
	struct req_services *svc = dd->svc;
	struct step_job *j;
	uint32_t id;

	if (dd->inflight != NULL || (svc->srv != NULL &&
	    server_shutting_down(svc->srv)))
		return;
	if (dd->ns == 0) {
		if (docset_ns_dropped(svc->ds, &id, 1) == 0)
			return;
		dd->ns = id;
		dd->from = 0;
		dd->forgotten = 0;
		if (!docns_name(docset_namespaces(svc->ds), id, dd->name))
			snprintf(dd->name, sizeof(dd->name), "%s", "?");
	}
	if ((j = calloc(1, sizeof(*j) + dd->step_docs *
	    sizeof(j->undo[0]))) == NULL) {
		log_warnx("%s: out of memory; again in a second", __func__);
		step_later(dd, DOCDROP_RETRY_MS);
		return;
	}
	j->wj.ops = &step_job_ops;
	j->wj.cost = dd->step_docs * 3;
	j->dd = dd;
	j->ds = svc->ds;
	j->ns = dd->ns;
	j->from = dd->from;
	j->max = dd->step_docs;
	dd->inflight = j;
	writer_submit(svc->w, &j->wj);
}

static void
next_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	step_send(arg);
}

struct docdrop *
docdrop_new(struct req_services *svc, struct event_base *base)
{
	struct docdrop *dd = calloc(1, sizeof(*dd));
	const char *test = getenv("NDDD_TEST_DOCDROP");
	uint32_t ids[1];
	size_t n;

	if (dd == NULL)
		return NULL;
	dd->svc = svc;
	dd->step_docs = DOCDROP_STEP_DOCS;
	if (test != NULL) {
		unsigned long docs = strtoul(test, NULL, 10);
		const char *ms = strchr(test, ',');

		if (docs > 0 && docs <= DOCDROP_STEP_DOCS)
			dd->step_docs = docs;
		if (ms != NULL)
			dd->pause_ms = (unsigned)strtoul(ms + 1, NULL, 10);
	}
	if ((dd->next = evtimer_new(base, next_cb, dd)) == NULL) {
		free(dd);
		return NULL;
	}
	if ((n = docset_ns_dropped(svc->ds, ids, 1)) > 0)
		log_info("%s: resuming the forgetting of the documents of %zu "
		    "dropped namespaces (%" PRIu64 " documents)", __func__, n,
		    docns_dropping_docs(docset_namespaces(svc->ds)));
	docdrop_kick(dd);
	return dd;
}

void
docdrop_free(struct docdrop *dd)
{
	if (dd == NULL)
		return;
	if (dd->inflight != NULL)
		dd->inflight->dd = NULL;
	if (dd->next != NULL)
		event_free(dd->next);
	free(dd);
}

void
docdrop_kick(struct docdrop *dd)
{
	if (dd != NULL && !evtimer_pending(dd->next, NULL))
		step_send(dd);
}

/* ---- namespace_drop: the documents, then the URLs. ---- */

struct drop_job {
	struct writer_job wj;		/* the documents' namespace */
	struct urlset_job uj;		/* then the URLs' */
	struct reply reply;
	struct docset *ds;
	struct urlset *us;
	struct docdrop *dd;
	char name[DOCNS_NAME_MAX + 1];
	bool docs_found;		/* the name had documents */
	uint32_t docs_ns;
	uint64_t docs;			/* being forgotten */
	struct docset_ns_undo undo;
	struct urlns_info info;
};

static int
drop_apply(struct writer_job *wj, struct store_txn *txn)
{
	struct drop_job *j = (struct drop_job *)wj;
	int rc;

	j->docs_found = false;
	j->docs = 0;
	rc = docset_ns_drop(j->ds, txn, j->name, &j->docs_ns, &j->docs,
	    &j->undo);
	if (rc == STORE_NOTFOUND)
		return STORE_OK;	/* no documents: the URLs may be */
	j->docs_found = rc == STORE_OK;
	return rc;
}

static void
drop_committed(struct writer_job *wj)
{
	(void)wj;
}

static void
drop_aborted(struct writer_job *wj)
{
	struct drop_job *j = (struct drop_job *)wj;

	docset_ns_undo(j->ds, &j->undo);
	memset(&j->undo, 0, sizeof(j->undo));
}

/* Loop thread: the URLs were dropped too, or there were none. */
static void
drop_urls_done(struct urlset_job *uj)
{
	struct drop_job *j = (struct drop_job *)((char *)uj -
	    offsetof(struct drop_job, uj));

	/* Its URLs' settings and count when it had any, its documents'. */
	if (uj->status == STORE_OK || (uj->status == STORE_NOTFOUND &&
	    j->docs_found))
		urlreq_reply_namespace(&j->reply, j->name, uj->status ==
		    STORE_OK ? &j->info : NULL, j->docs);
	else if (uj->status == STORE_NOTFOUND)
		reply_error(&j->reply, NDDD__V1__CODE__NOT_FOUND,
		    "no such namespace");
	else if (uj->refused != NULL)
		reply_error(&j->reply, NDDD__V1__CODE__RESOURCE_EXHAUSTED,
		    uj->refused);
	else
		reply_store_error(&j->reply, uj->status);
	reply_finish(&j->reply);
	free(j);
}

/* Loop thread: the documents' namespace is dropped (or there was none). */
static void
drop_docs_done(struct writer_job *wj)
{
	struct drop_job *j = (struct drop_job *)wj;

	if (wj->status != STORE_OK) {
		reply_store_error(&j->reply, wj->status);
		reply_finish(&j->reply);
		free(j);
		return;
	}
	if (j->docs_found) {
		log_info("%s: namespace %s dropped: its %" PRIu64 " documents "
		    "are forgotten in the background", __func__, j->name,
		    j->docs);
		docdrop_kick(j->dd);
	}
	j->uj.op = URLSET_NS_DROP;
	snprintf(j->uj.ns, sizeof(j->uj.ns), "%s", j->name);
	j->uj.info = &j->info;
	j->uj.done = drop_urls_done;
	urlset_submit_job(j->us, &j->uj);
}

static const struct writer_job_ops drop_job_ops = {
	.apply = drop_apply,
	.committed = drop_committed,
	.aborted = drop_aborted,
	.done = drop_docs_done,
};

void
docdrop_namespace_drop(struct op_call *call)
{
	const Nddd__V1__NamespaceDrop *nd = call->req->namespace_drop;
	struct drop_job *j;

	/* The keys it drops would not all reach the shard they move to:
	 * records forgotten in the background change after the copy. */
	if (shard_session_open(call->svc->shard)) {
		reply_error(call->reply, NDDD__V1__CODE__FAILED_PRECONDITION,
		    "a shard is being added (an export session is open): "
		    "drop the namespace once it is done");
		return;
	}
	if ((j = calloc(1, sizeof(*j))) == NULL) {
		reply_error(call->reply, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	/* Checked by operation_validate: a name, not the default one. */
	snprintf(j->name, sizeof(j->name), "%s", nd != NULL &&
	    nd->name != NULL ? nd->name : "");
	j->ds = call->svc->ds;
	j->us = call->svc->us;
	j->dd = call->svc->docs->drop;
	j->wj.ops = &drop_job_ops;
	j->wj.cost = 2;
	reply_move(&j->reply, call->reply);
	writer_submit(call->svc->w, &j->wj);
}
