/*
 * request: libnddd's request encoders, the nddd_send_* functions of
 * nddd.h, and the client's settings that every request of a kind carries
 * (durability, URL options, the document namespace and answer, the
 * server's max frame).  Each builds its Request and hands it to
 * client_queue (client.c); the other files are listed in nddd_impl.h.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nddd.h"
#include "nddd_impl.h"
#include "nddd.pb-c.h"

/*
 * The most a doc batch's reply takes, as the server bounds it
 * (docreq_batch_reply_bound): a base, and per document a result of at most
 * 1 KiB and an item error.  The server refuses a batch whose bound passes
 * its max_frame.
 */
#define DOC_REPLY_BASE 4096
#define DOC_REPLY_ITEM (1024 + 96)
/* A request frame's own fields around its documents (id, the op's tag and
 * length), with room to spare; the token comes on top. */
#define DOC_FRAME_OVERHEAD 64

void
nddd_set_durability(nddd_client *c, enum nddd_durability d)
{
	c->durability = d;
}

int
nddd_namespace_valid(const char *name)
{
	size_t n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789._-");

	return name[n] == '\0' && n <= NDDD_NAMESPACE_MAX;
}

/*
 * Refuses here what the daemon would refuse, so that a caller learns it
 * before anything is sent; the daemon checks all the same.
 */
static int
check_ns_and_ttl(nddd_client *c, const char *name, uint64_t ttl_seconds)
{
	if (!nddd_namespace_valid(name))
		return client_fail(c, "not a namespace name: at most %d bytes "
		    "of ASCII letters, digits, '.', '_' and '-'",
		    NDDD_NAMESPACE_MAX);
	if (ttl_seconds > NDDD_TTL_MAX)
		return client_fail(c, "a time to live of %llu s: at most %u s "
		    "(100 years)", (unsigned long long)ttl_seconds,
		    NDDD_TTL_MAX);
	return 0;
}

int
nddd_set_url_opts(nddd_client *c, const struct nddd_url_opts *o)
{
	static const struct nddd_url_opts none;
	char *ns = NULL;

	if (o == NULL)
		o = &none;
	if (check_ns_and_ttl(c, o->ns ? o->ns : "", o->ttl_seconds) == -1)
		return -1;
	if (o->ns != NULL && o->ns[0] != '\0' && (ns = strdup(o->ns)) == NULL)
		return client_fail(c, "out of memory");
	free((char *)c->url_opts.ns);
	c->url_opts = *o;
	c->url_opts.ns = ns;
	return 0;
}

int
nddd_set_doc_namespace(nddd_client *c, const char *ns)
{
	char *copy = NULL;

	if (ns == NULL)
		ns = "";
	if (check_ns_and_ttl(c, ns, 0) == -1)
		return -1;
	if (ns[0] != '\0' && (copy = strdup(ns)) == NULL)
		return client_fail(c, "out of memory");
	free(c->doc_ns);
	c->doc_ns = copy;
	return 0;
}

void
nddd_set_doc_match(nddd_client *c, enum nddd_match m)
{
	c->doc_match = m;
}

void
nddd_set_max_frame(nddd_client *c, size_t max_frame)
{
	c->max_frame = max_frame > 0 ? max_frame : NDDD_DEFAULT_MAX_FRAME;
}

/* The protocol's DocFormat of f. */
static Nddd__V1__DocFormat
format_of(enum nddd_doc_format f)
{
	return f == NDDD_HTML ? NDDD__V1__DOC_FORMAT__HTML :
	    NDDD__V1__DOC_FORMAT__TEXT;
}

/* The protocol's Match of m, the default as the default. */
static Nddd__V1__Match
match_wire(enum nddd_match m)
{
	return m == NDDD_MATCH_VERIFIED ? NDDD__V1__MATCH__MATCH_VERIFIED :
	    m == NDDD_MATCH_HAMMING ? NDDD__V1__MATCH__MATCH_HAMMING :
	    NDDD__V1__MATCH__MATCH_DEFAULT;
}

/* The protocol's Match for m, or the client's when m is the default. */
static Nddd__V1__Match
match_of(const nddd_client *c, enum nddd_match m)
{
	return match_wire(m == NDDD_MATCH_DEFAULT ? c->doc_match : m);
}

size_t
request_doc_ns_bytes(const nddd_client *c)
{
	size_t len = c->doc_ns != NULL ? strlen(c->doc_ns) : 0;

	return (len > 0 ? 1 + 1 + len + 1 : 0) + 2;
}

/*
 * Queues batch as op, with the client's URL options, and its durability
 * where op changes.
 */
static int
queue_batch(nddd_client *c, enum nddd_url_op op, Nddd__V1__UrlBatch *batch,
    uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;

	switch (op) {
	case NDDD_URL_SUBMIT:
		req.op_case = NDDD__V1__REQUEST__OP_URL_SUBMIT;
		req.url_submit = batch;
		break;
	case NDDD_URL_CHECK:
		req.op_case = NDDD__V1__REQUEST__OP_URL_CHECK;
		req.url_check = batch;
		break;
	case NDDD_URL_DELETE:
		req.op_case = NDDD__V1__REQUEST__OP_URL_DELETE;
		req.url_delete = batch;
		break;
	default:
		return client_fail(c, "unknown URL operation %d", (int)op);
	}
	/* The enums share their numbers with the protocol's. */
	if (op != NDDD_URL_CHECK)
		batch->durability = (Nddd__V1__Durability)c->durability;
	if (c->url_opts.ns != NULL)
		batch->namespace_ = (char *)c->url_opts.ns;
	if (op == NDDD_URL_SUBMIT)
		batch->ttl_seconds = c->url_opts.ttl_seconds;
	batch->with_times = c->url_opts.with_times != 0;
	return client_queue(c, &req, id);
}

int
nddd_send_urls(nddd_client *c, enum nddd_url_op op, const char *const *urls,
    const size_t *lens, size_t n, uint64_t *id)
{
	Nddd__V1__UrlBatch batch = NDDD__V1__URL_BATCH__INIT;
	ProtobufCBinaryData *items;
	int rc;

	if ((items = calloc(n + 1, sizeof(*items))) == NULL)
		return client_fail(c, "out of memory");
	for (size_t i = 0; i < n; i++) {
		items[i].data = (uint8_t *)urls[i];
		items[i].len = lens ? lens[i] : strlen(urls[i]);
	}
	batch.n_urls = n;
	batch.urls = items;
	rc = queue_batch(c, op, &batch, id);
	free(items);
	return rc;
}

int
nddd_send_digests(nddd_client *c, enum nddd_url_op op, const char *canon_id,
    const unsigned char *digests, size_t n, uint64_t *id)
{
	Nddd__V1__UrlBatch batch = NDDD__V1__URL_BATCH__INIT;

	if (n > SIZE_MAX / NDDD_DIGEST_LEN)
		return client_fail(c, "request too large");
	batch.digests.data = (uint8_t *)digests;
	batch.digests.len = n * NDDD_DIGEST_LEN;
	batch.canon = (char *)(canon_id ? canon_id : "");
	return queue_batch(c, op, &batch, id);
}

int
nddd_send_namespace_set(nddd_client *c, const char *name,
    uint64_t default_ttl_seconds, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__NamespaceSet m = NDDD__V1__NAMESPACE_SET__INIT;

	if (check_ns_and_ttl(c, name, default_ttl_seconds) == -1)
		return -1;
	m.name = (char *)name;
	m.default_ttl_seconds = default_ttl_seconds;
	req.op_case = NDDD__V1__REQUEST__OP_NAMESPACE_SET;
	req.namespace_set = &m;
	return client_queue(c, &req, id);
}

int
nddd_send_namespace_drop(nddd_client *c, const char *name, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__NamespaceDrop m = NDDD__V1__NAMESPACE_DROP__INIT;

	if (check_ns_and_ttl(c, name, 0) == -1)
		return -1;
	m.name = (char *)name;
	req.op_case = NDDD__V1__REQUEST__OP_NAMESPACE_DROP;
	req.namespace_drop = &m;
	return client_queue(c, &req, id);
}

/* The namespace and the request of a url_forget; m holds the rest. */
static int
send_forget(nddd_client *c, const char *ns, Nddd__V1__UrlForget *m,
    uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;

	if (ns != NULL) {
		if (check_ns_and_ttl(c, ns, 0) == -1)
			return -1;
		m->namespace_ = (char *)ns;
	}
	req.op_case = NDDD__V1__REQUEST__OP_URL_FORGET;
	req.url_forget = m;
	return client_queue(c, &req, id);
}

int
nddd_send_url_forget_host(nddd_client *c, const char *ns, const char *host,
    int subdomains, uint64_t *id)
{
	Nddd__V1__UrlForget m = NDDD__V1__URL_FORGET__INIT;

	/* Neither a host nor a prefix: the daemon would refuse it. */
	if (host == NULL || host[0] == '\0')
		return client_fail(c, "url_forget: an empty host");
	m.host = (char *)host;
	m.subdomains = subdomains != 0;
	return send_forget(c, ns, &m, id);
}

int
nddd_send_url_forget_prefix(nddd_client *c, const char *ns,
    const char *prefix, size_t len, uint64_t *id)
{
	Nddd__V1__UrlForget m = NDDD__V1__URL_FORGET__INIT;

	if (prefix == NULL || len == 0)
		return client_fail(c, "url_forget: an empty prefix");
	m.prefix.data = (uint8_t *)prefix;
	m.prefix.len = len;
	return send_forget(c, ns, &m, id);
}

/* The DocSubmit message of d, pointing at d's bytes. */
static void
doc_submit_of(Nddd__V1__DocSubmit *m, const struct nddd_doc_item *d)
{
	nddd__v1__doc_submit__init(m);
	m->url.data = (uint8_t *)d->url;
	m->url.len = d->url_len;
	m->body.data = (uint8_t *)d->body;
	m->body.len = d->body_len;
	m->format = format_of(d->format);
	m->query_only = d->query_only != 0;
	m->group = d->group;
	m->new_group = d->new_group != 0;
	m->with_sketch = d->with_sketch != 0;
	m->match = match_wire(d->match);
}

int
nddd_send_doc_submit(nddd_client *c, const char *url, size_t url_len,
    const void *body, size_t body_len, enum nddd_doc_format format,
    int query_only, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__DocSubmit d;
	const struct nddd_doc_item item = { .url = url, .url_len = url_len,
	    .body = body, .body_len = body_len, .format = format,
	    .query_only = query_only };

	doc_submit_of(&d, &item);
	d.namespace_ = c->doc_ns;
	d.match = match_of(c, NDDD_MATCH_DEFAULT);
	req.op_case = NDDD__V1__REQUEST__OP_DOC_SUBMIT;
	req.doc_submit = &d;
	return client_queue(c, &req, id);
}

size_t
nddd_doc_item_size(const struct nddd_doc_item *d)
{
	Nddd__V1__DocSubmit m;
	size_t inner, len;

	doc_submit_of(&m, d);
	inner = nddd__v1__doc_submit__get_packed_size(&m);
	/* DocBatch.docs: a one-byte tag, the length's varint, the DocSubmit. */
	for (len = 1; inner >> (7 * len) != 0; len++)
		;
	return 1 + len + inner;
}

size_t
request_doc_room(const nddd_client *c)
{
	size_t over = DOC_FRAME_OVERHEAD + (c->token ? strlen(c->token) +
	    6 : 0);

	return c->max_frame > over ? c->max_frame - over : 0;
}

size_t
nddd_doc_batch_limit(const nddd_client *c, size_t *max_bytes)
{
	size_t n = c->max_frame > DOC_REPLY_BASE + DOC_REPLY_ITEM ?
	    (c->max_frame - DOC_REPLY_BASE) / DOC_REPLY_ITEM : 1;

	if (max_bytes != NULL)
		*max_bytes = c->max_frame / 2;
	return n < NDDD_DOC_BATCH_MAX ? n : NDDD_DOC_BATCH_MAX;
}

int
nddd_send_docs(nddd_client *c, const struct nddd_doc_item *docs, size_t n,
    uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__DocBatch batch = NDDD__V1__DOC_BATCH__INIT;
	Nddd__V1__DocSubmit *items, **ptrs;
	size_t bytes = 0, limit = nddd_doc_batch_limit(c, NULL);
	int rc;

	if (n == 0 || n > limit)
		return client_fail(c, "a doc batch of %zu documents: send 1 "
		    "to %zu", n, limit);
	for (size_t i = 0; i < n; i++)
		bytes += nddd_doc_item_size(&docs[i]) + request_doc_ns_bytes(c);
	if (bytes > request_doc_room(c))
		return client_fail(c, "a doc batch of %zu bytes exceeds the "
		    "max frame (%zu bytes)", bytes, c->max_frame);
	items = malloc(n * sizeof(*items));
	ptrs = malloc(n * sizeof(*ptrs));
	if (items == NULL || ptrs == NULL) {
		free(items);
		free(ptrs);
		return client_fail(c, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		doc_submit_of(&items[i], &docs[i]);
		items[i].namespace_ = c->doc_ns;
		items[i].match = match_of(c, docs[i].match);
		ptrs[i] = &items[i];
	}
	batch.n_docs = n;
	batch.docs = ptrs;
	req.op_case = NDDD__V1__REQUEST__OP_DOC_BATCH;
	req.doc_batch = &batch;
	rc = client_queue(c, &req, id);
	free(items);
	free(ptrs);
	return rc;
}

static int
send_query(nddd_client *c, Nddd__V1__DocQuery *q, int k, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__Distance dist = NDDD__V1__DISTANCE__INIT;

	if (k >= 0) {
		dist.k = (uint32_t)k;
		q->max_distance = &dist;
	} else if (q->what_case != NDDD__V1__DOC_QUERY__WHAT_SIMHASH)
		q->match = match_of(c, NDDD_MATCH_DEFAULT);
	q->namespace_ = c->doc_ns;
	req.op_case = NDDD__V1__REQUEST__OP_DOC_QUERY;
	req.doc_query = q;
	return client_queue(c, &req, id);
}

/* Asks for the neighbours of a body: within k (-1: the answer the
 * client's match says), its sketch sent back if asked. */
static int
send_body_query(nddd_client *c, const void *body, size_t body_len,
    enum nddd_doc_format format, int k, bool with_sketch, uint64_t *id)
{
	Nddd__V1__DocQuery q = NDDD__V1__DOC_QUERY__INIT;
	Nddd__V1__DocBody b = NDDD__V1__DOC_BODY__INIT;

	b.body.data = (uint8_t *)body;
	b.body.len = body_len;
	b.format = format_of(format);
	q.what_case = NDDD__V1__DOC_QUERY__WHAT_BODY;
	q.body = &b;
	q.with_sketch = with_sketch;
	return send_query(c, &q, k, id);
}

int
nddd_send_doc_query(nddd_client *c, const void *body, size_t body_len,
    enum nddd_doc_format format, int k, uint64_t *id)
{
	return send_body_query(c, body, body_len, format, k, false, id);
}

int
nddd_send_doc_query_sketch(nddd_client *c, const void *body,
    size_t body_len, enum nddd_doc_format format, uint64_t *id)
{
	return send_body_query(c, body, body_len, format, -1, true, id);
}

int
nddd_send_doc_query_simhash(nddd_client *c, uint64_t simhash, int k,
    uint64_t *id)
{
	Nddd__V1__DocQuery q = NDDD__V1__DOC_QUERY__INIT;

	q.what_case = NDDD__V1__DOC_QUERY__WHAT_SIMHASH;
	q.simhash = simhash;
	return send_query(c, &q, k, id);
}

int
nddd_send_doc_query_print(nddd_client *c, uint64_t simhash,
    const void *sketch, size_t sketch_len, uint64_t *id)
{
	Nddd__V1__DocQuery q = NDDD__V1__DOC_QUERY__INIT;
	Nddd__V1__DocPrint p = NDDD__V1__DOC_PRINT__INIT;

	p.simhash = simhash;
	p.sketch.data = (uint8_t *)sketch;
	p.sketch.len = sketch_len;
	q.what_case = NDDD__V1__DOC_QUERY__WHAT_PRINT;
	q.print = &p;
	return send_query(c, &q, -1, id);
}

static int
send_ref(nddd_client *c, int get, const char *url, size_t url_len,
    uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__DocRef ref = NDDD__V1__DOC_REF__INIT;

	ref.url.data = (uint8_t *)url;
	ref.url.len = url_len;
	ref.namespace_ = c->doc_ns;
	if (get) {
		ref.match = match_of(c, NDDD_MATCH_DEFAULT);
		req.op_case = NDDD__V1__REQUEST__OP_DOC_GET;
		req.doc_get = &ref;
	} else {
		req.op_case = NDDD__V1__REQUEST__OP_DOC_DELETE;
		req.doc_delete = &ref;
	}
	return client_queue(c, &req, id);
}

int
nddd_send_doc_get(nddd_client *c, const char *url, size_t url_len,
    uint64_t *id)
{
	return send_ref(c, 1, url, url_len, id);
}

int
nddd_send_doc_delete(nddd_client *c, const char *url, size_t url_len,
    uint64_t *id)
{
	return send_ref(c, 0, url, url_len, id);
}

int
nddd_send_verify(nddd_client *c, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__VerifyRequest v = NDDD__V1__VERIFY_REQUEST__INIT;

	req.op_case = NDDD__V1__REQUEST__OP_VERIFY;
	req.verify = &v;
	return client_queue(c, &req, id);
}

int
nddd_send_stats(nddd_client *c, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__StatsRequest stats = NDDD__V1__STATS_REQUEST__INIT;

	req.op_case = NDDD__V1__REQUEST__OP_STATS;
	req.stats = &stats;
	return client_queue(c, &req, id);
}
