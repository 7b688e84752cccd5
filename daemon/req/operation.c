/*
 * operation: the protocol's operations.  See operation.h.
 */
#include "operation.h"

#include <stddef.h>

#include "docdrop.h"
#include "docreq.h"
#include "metrics.h"
#include "shardreq.h"
#include "shardstate.h"
#include "statsreq.h"
#include "urlreq.h"
#include "verifyreq.h"

static Nddd__V1__Code
validate_url_submit(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	return urlreq_validate(req->url_submit, lim, message);
}

static Nddd__V1__Code
validate_url_check(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	return urlreq_validate(req->url_check, lim, message);
}

static Nddd__V1__Code
validate_url_delete(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	return urlreq_validate(req->url_delete, lim, message);
}

static Nddd__V1__Code
validate_namespace_set(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	const Nddd__V1__NamespaceSet *ns = req->namespace_set;

	(void)lim;
	return urlreq_namespace_validate(ns != NULL ? ns->name : NULL,
	    ns != NULL ? ns->default_ttl_seconds : 0, false, message);
}

static Nddd__V1__Code
validate_namespace_drop(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	const Nddd__V1__NamespaceDrop *ns = req->namespace_drop;

	(void)lim;
	return urlreq_namespace_validate(ns != NULL ? ns->name : NULL, 0,
	    true, message);
}

static Nddd__V1__Code
validate_url_forget(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	(void)lim;
	return urlreq_forget_validate(req->url_forget, message);
}

static Nddd__V1__Code
validate_shard_set(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	(void)lim;
	return shardreq_validate_set(req->shard_set, message);
}

static Nddd__V1__Code
validate_shard_export(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	(void)lim;
	return shardreq_validate_export(req->shard_export, message);
}

static Nddd__V1__Code
validate_shard_import(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	(void)lim;
	return shardreq_validate_import(req->shard_import, message);
}

static Nddd__V1__Code
validate_nothing_known(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	(void)req;
	(void)lim;
	*message = "request names no operation this server knows";
	return NDDD__V1__CODE__INVALID_ARGUMENT;
}

static Nddd__V1__Code
validate_doc_batch(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	return docreq_batch_validate(req->doc_batch, lim, message);
}

/* A doc_batch's namespaces fail their own documents, the others'
 * the request. */
static Nddd__V1__Code
validate_doc_submit(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	(void)lim;
	return docreq_namespace_validate(req->doc_submit != NULL ?
	    req->doc_submit->namespace_ : NULL, message);
}

static Nddd__V1__Code
validate_doc_query(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	(void)lim;
	return docreq_namespace_validate(req->doc_query != NULL ?
	    req->doc_query->namespace_ : NULL, message);
}

static Nddd__V1__Code
validate_doc_get(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	(void)lim;
	return docreq_namespace_validate(req->doc_get != NULL ?
	    req->doc_get->namespace_ : NULL, message);
}

static Nddd__V1__Code
validate_doc_delete(const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	(void)lim;
	return docreq_namespace_validate(req->doc_delete != NULL ?
	    req->doc_delete->namespace_ : NULL, message);
}

/* Asking which story a page would join changes nothing. */
static enum role
role_of_doc_submit(const Nddd__V1__Request *req)
{
	return req->doc_submit != NULL && req->doc_submit->query_only ?
	    ROLE_READ : ROLE_WRITE;
}

/* A batch of such questions neither. */
static enum role
role_of_doc_batch(const Nddd__V1__Request *req)
{
	const Nddd__V1__DocBatch *db = req->doc_batch;

	for (size_t i = 0; db != NULL && i < db->n_docs; i++)
		if (!db->docs[i]->query_only)
			return ROLE_WRITE;
	return ROLE_READ;
}

static const char *
name_or_default(const char *name)
{
	return name != NULL ? name : "";
}

/* The one namespace of an operation that acts in one: at i 0. */
static const char *
only(const char *name, size_t i)
{
	return i == 0 ? name_or_default(name) : NULL;
}

static const char *
batch_namespace(const Nddd__V1__UrlBatch *b, size_t i)
{
	return only(b != NULL ? b->namespace_ : NULL, i);
}

static const char *
namespace_of_url_submit(const Nddd__V1__Request *req, size_t i)
{
	return batch_namespace(req->url_submit, i);
}

static const char *
namespace_of_url_check(const Nddd__V1__Request *req, size_t i)
{
	return batch_namespace(req->url_check, i);
}

static const char *
namespace_of_url_delete(const Nddd__V1__Request *req, size_t i)
{
	return batch_namespace(req->url_delete, i);
}

static const char *
namespace_of_namespace_set(const Nddd__V1__Request *req, size_t i)
{
	return only(req->namespace_set != NULL ? req->namespace_set->name :
	    NULL, i);
}

static const char *
namespace_of_namespace_drop(const Nddd__V1__Request *req, size_t i)
{
	return only(req->namespace_drop != NULL ? req->namespace_drop->name :
	    NULL, i);
}

static const char *
namespace_of_url_forget(const Nddd__V1__Request *req, size_t i)
{
	return only(req->url_forget != NULL ? req->url_forget->namespace_ :
	    NULL, i);
}

static const char *
namespace_of_doc_submit(const Nddd__V1__Request *req, size_t i)
{
	return only(req->doc_submit != NULL ? req->doc_submit->namespace_ :
	    NULL, i);
}

static const char *
namespace_of_doc_query(const Nddd__V1__Request *req, size_t i)
{
	return only(req->doc_query != NULL ? req->doc_query->namespace_ :
	    NULL, i);
}

static const char *
namespace_of_doc_get(const Nddd__V1__Request *req, size_t i)
{
	return only(req->doc_get != NULL ? req->doc_get->namespace_ : NULL,
	    i);
}

static const char *
namespace_of_doc_delete(const Nddd__V1__Request *req, size_t i)
{
	return only(req->doc_delete != NULL ? req->doc_delete->namespace_ :
	    NULL, i);
}

/* A batch acts in the namespace of each of its documents. */
static const char *
namespace_of_doc_batch(const Nddd__V1__Request *req, size_t i)
{
	const Nddd__V1__DocBatch *db = req->doc_batch;

	return db != NULL && i < db->n_docs ?
	    name_or_default(db->docs[i]->namespace_) : NULL;
}

/* In the order the metrics list them; "invalid" last. */
static const struct operation operations[] = {
	{ "url_submit", NDDD__V1__REQUEST__OP_URL_SUBMIT, REPLY_PER_ITEM,
	    ROLE_WRITE, NULL, namespace_of_url_submit, validate_url_submit,
	    urlreq_submit },
	{ "url_check", NDDD__V1__REQUEST__OP_URL_CHECK, REPLY_PER_ITEM,
	    ROLE_READ, NULL, namespace_of_url_check, validate_url_check,
	    urlreq_check },
	{ "url_delete", NDDD__V1__REQUEST__OP_URL_DELETE, REPLY_PER_ITEM,
	    ROLE_ADMIN, NULL, namespace_of_url_delete, validate_url_delete,
	    urlreq_delete },
	{ "stats", NDDD__V1__REQUEST__OP_STATS, REPLY_STATS,
	    ROLE_READ, NULL, NULL, NULL, statsreq_run },
	{ "verify", NDDD__V1__REQUEST__OP_VERIFY, REPLY_SMALL,
	    ROLE_ADMIN, NULL, NULL, NULL, verifyreq_start },
	{ "doc_submit", NDDD__V1__REQUEST__OP_DOC_SUBMIT, REPLY_DOCUMENT,
	    ROLE_WRITE, role_of_doc_submit, namespace_of_doc_submit,
	    validate_doc_submit, docreq_submit },
	{ "doc_query", NDDD__V1__REQUEST__OP_DOC_QUERY, REPLY_DOCUMENT,
	    ROLE_READ, NULL, namespace_of_doc_query, validate_doc_query,
	    docreq_query },
	{ "doc_get", NDDD__V1__REQUEST__OP_DOC_GET, REPLY_DOCUMENT,
	    ROLE_READ, NULL, namespace_of_doc_get, validate_doc_get,
	    docreq_get },
	{ "doc_delete", NDDD__V1__REQUEST__OP_DOC_DELETE, REPLY_SMALL,
	    ROLE_ADMIN, NULL, namespace_of_doc_delete, validate_doc_delete,
	    docreq_delete },
	{ "doc_batch", NDDD__V1__REQUEST__OP_DOC_BATCH, REPLY_PER_DOCUMENT,
	    ROLE_WRITE, role_of_doc_batch, namespace_of_doc_batch,
	    validate_doc_batch, docreq_batch },
	{ "namespace_set", NDDD__V1__REQUEST__OP_NAMESPACE_SET, REPLY_SMALL,
	    ROLE_ADMIN, NULL, namespace_of_namespace_set,
	    validate_namespace_set, urlreq_namespace_set },
	{ "namespace_drop", NDDD__V1__REQUEST__OP_NAMESPACE_DROP, REPLY_SMALL,
	    ROLE_ADMIN, NULL, namespace_of_namespace_drop,
	    validate_namespace_drop, docdrop_namespace_drop },
	{ "url_forget", NDDD__V1__REQUEST__OP_URL_FORGET, REPLY_SMALL,
	    ROLE_ADMIN, NULL, namespace_of_url_forget, validate_url_forget,
	    urlreq_forget },
	{ "shard_set", NDDD__V1__REQUEST__OP_SHARD_SET, REPLY_SMALL,
	    ROLE_ADMIN, NULL, NULL, validate_shard_set, shardreq_set },
	{ "shard_export", NDDD__V1__REQUEST__OP_SHARD_EXPORT, REPLY_PAGE,
	    ROLE_ADMIN, NULL, NULL, validate_shard_export, shardreq_export },
	{ "shard_import", NDDD__V1__REQUEST__OP_SHARD_IMPORT, REPLY_SMALL,
	    ROLE_ADMIN, NULL, NULL, validate_shard_import, shardreq_import },
	/* Undecodable, or naming nothing known: who may learn that is the
	 * same as who may do anything. */
	{ "invalid", NDDD__V1__REQUEST__OP__NOT_SET, REPLY_SMALL,
	    ROLE_ADMIN, NULL, NULL, validate_nothing_known, NULL },
};

#define NOPS (sizeof(operations) / sizeof(operations[0]))
_Static_assert(NOPS <= METRIC_MAX_OPS, "the metrics count every operation");

/* The row of op_case ("invalid" for none the server knows). */
static const struct operation *
row_of_case(Nddd__V1__Request__OpCase op_case)
{
	for (size_t i = 0; i < NOPS - 1; i++)
		if (operations[i].op_case == op_case)
			return &operations[i];
	return operation_invalid();
}

const struct operation *
operation_of(const Nddd__V1__Request *req)
{
	return row_of_case(req->op_case);
}

const struct operation *
operation_invalid(void)
{
	return &operations[NOPS - 1];
}

unsigned
operation_index(const struct operation *op)
{
	return (unsigned)(op - operations);
}

unsigned
operation_count(void)
{
	return NOPS;
}

const struct operation *
operation_at(unsigned i)
{
	return i < NOPS ? &operations[i] : NULL;
}

enum role
operation_role(const struct operation *op, const Nddd__V1__Request *req)
{
	return op->role_of != NULL ? op->role_of(req) : op->role;
}

size_t
operation_reply_bound(Nddd__V1__Request__OpCase op_case, size_t items,
    const struct request_limits *lim)
{
	const struct operation *op = row_of_case(op_case);
	size_t batch = REPLY_SMALL_MAX + (size_t)lim->max_batch * REPLY_ITEM_MAX;
	size_t document = REPLY_SMALL_MAX + lim->doc_reply_max;
	size_t docs = docreq_batch_reply_bound(DOCREQ_BATCH_MAX), most;

	/* Unknown until decoded: whatever it turns out to be. */
	if (op == operation_invalid()) {
		most = batch > document ? batch : document;
		return most > docs ? most : docs;
	}
	switch (op->reply_size) {
	case REPLY_PER_ITEM:
		/* A batch over the limit is refused whole. */
		return items > lim->max_batch ? REPLY_SMALL_MAX :
		    REPLY_SMALL_MAX + items * REPLY_ITEM_MAX;
	case REPLY_DOCUMENT:
		return document;
	case REPLY_PER_DOCUMENT:
		return items > DOCREQ_BATCH_MAX ? REPLY_SMALL_MAX :
		    docreq_batch_reply_bound(items);
	case REPLY_STATS:
		return REPLY_SMALL_MAX + SHARD_LIST_MAX + 64 +
		    STATSREQ_NAMESPACES_MAX * STATSREQ_NAMESPACE_BYTES;
	case REPLY_PAGE:
		return lim->max_frame;
	case REPLY_SMALL:
		break;
	}
	return REPLY_SMALL_MAX;
}

Nddd__V1__Code
operation_validate(const struct operation *op, const Nddd__V1__Request *req,
    const struct request_limits *lim, const char **message)
{
	return op->validate != NULL ? op->validate(req, lim, message) :
	    NDDD__V1__CODE__OK;
}
