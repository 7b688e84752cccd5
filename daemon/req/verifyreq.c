/*
 * verifyreq: the verify operation.  See verifyreq.h.
 */
#include "verifyreq.h"

#include <stddef.h>
#include <stdlib.h>

#include "docset.h"
#include "log.h"
#include "reply.h"
#include "store.h"
#include "urlset.h"
#include "writer.h"

struct verify_job {
	struct urlset_job uj;
	struct writer_job wj;
	struct reply reply;
	struct req_services *svc;
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
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__VerifyResult res = NDDD__V1__VERIFY_RESULT__INIT;

	if (status != STORE_OK && (j->urls.detail[0] || j->docs.detail[0]))
		reply_error(&j->reply, NDDD__V1__CODE__INTERNAL,
		    j->urls.detail[0] ? j->urls.detail : j->docs.detail);
	else if (status != STORE_OK)
		/* A full disk refuses the flush verify begins with. */
		reply_store_error(&j->reply, status);
	else {
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
		resp.id = j->reply.id;
		resp.result_case = NDDD__V1__RESPONSE__RESULT_VERIFY;
		resp.verify = &res;
		reply_message(&j->reply, &resp.base);
		if (!res.consistent)
			log_warnx("%s: memory and store disagree: %s",
			    __func__, res.detail);
	}
	reply_finish(&j->reply);
	free(j);
}

static void
verify_docs_alone(struct writer_job *wj)
{
	struct verify_job *j = verify_of_writer_job(wj);

	wj->status = docset_verify(j->svc->ds, &j->docs);
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
	writer_submit(j->svc->w, &j->wj);
}

void
verifyreq_start(struct op_call *call)
{
	struct verify_job *j = calloc(1, sizeof(*j));

	if (j == NULL) {
		reply_error(call->reply, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	j->svc = call->svc;
	j->uj.op = URLSET_VERIFY;
	j->uj.verify = &j->urls;
	j->uj.done = verify_urls_done;
	reply_move(&j->reply, call->reply);
	urlset_submit_job(call->svc->us, &j->uj);
}
