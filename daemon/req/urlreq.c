/*
 * urlreq: the URL batch operations of the protocol.  See urlreq.h.
 */
#include "urlreq.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "clock.h"
#include "docset.h"
#include "log.h"
#include "reply.h"
#include "store.h"
#include "shardstate.h"
#include "urlhosts.h"

/* One URL of a batch that failed before reaching the store. */
struct bad_item {
	uint32_t pos;
	Nddd__V1__Code code;
	const char *cause;	/* static, or the batch's moved message */
};

/* A batch's keys: the valid items', in order, with their positions. */
struct batch_keys {
	size_t n;		/* items in the request */
	size_t nkeys;		/* valid ones */
	struct url_key *keys;
	uint32_t *pos;		/* of each key in the request */
	bool *valid;		/* per item */
	size_t nbad;
	struct bad_item *bad;
	/* A submit's canonical URLs (their first URLHOSTS_TEXT_MAX bytes),
	 * per key, for the host index; NULL when not kept. */
	struct url_text *texts;
	char *text_data;
	size_t text_len, text_cap;
	bool nomem;		/* a text found no memory: no job */
	/* Another shard's URLs fail with this (shardstate.h). */
	struct shard_view shard;
	char moved[SHARD_MOVED_MSG_LEN];
};

/* Keeps the canonical form canon[0..len) of the key just derived. */
static int
keep_text(struct batch_keys *bk, const char *canon, size_t len)
{
	if (len > URLHOSTS_TEXT_MAX)
		len = URLHOSTS_TEXT_MAX;
	if (bk->text_len + len > bk->text_cap) {
		size_t cap = 2 * bk->text_cap + len + 1024;
		char *p = realloc(bk->text_data, cap);

		if (p == NULL)
			return -1;
		bk->text_data = p;
		bk->text_cap = cap;
	}
	memcpy(bk->text_data + bk->text_len, canon, len);
	bk->text_len += len;
	bk->texts[bk->nkeys].len = len;
	return 0;
}

/* Points each key's text into text_data, now that it moves no more. */
static void
place_texts(struct batch_keys *bk)
{
	size_t off = 0;

	for (size_t i = 0; i < bk->nkeys; i++) {
		bk->texts[i].p = bk->text_data + off;
		off += bk->texts[i].len;
	}
}

/* The number of items of a batch (URLs or digests). */
static size_t
batch_len(const Nddd__V1__UrlBatch *batch)
{
	if (batch == NULL)
		return 0;
	return batch->digests.len > 0 ? batch->digests.len / CBF_FP_LEN :
	    batch->n_urls;
}

/* OK, or INVALID_ARGUMENT for a namespace name or a time to live that
 * cannot be. */
static Nddd__V1__Code
check_namespace(const char *name, uint64_t ttl_seconds, const char **message)
{
	if (name != NULL &&
	    (*message = urlns_check_name(name, strlen(name))) != NULL)
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	if (ttl_seconds > URLSET_TTL_MAX_MS / 1000) {
		*message = "a time to live is at most 100 years "
		    "(3155760000 seconds)";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	return NDDD__V1__CODE__OK;
}

Nddd__V1__Code
urlreq_validate(const Nddd__V1__UrlBatch *batch,
    const struct request_limits *lim, const char **message)
{
	if (batch == NULL)
		return NDDD__V1__CODE__OK;
	if (batch->n_urls > 0 && batch->digests.len > 0) {
		*message = "a batch names urls or digests, not both";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	if (batch->digests.len % CBF_FP_LEN != 0) {
		*message = "digests must be 16 bytes each";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	if (batch->n_urls > lim->max_batch ||
	    batch->digests.len / CBF_FP_LEN > lim->max_batch) {
		*message = "batch exceeds the server's max_batch";
		return NDDD__V1__CODE__RESOURCE_EXHAUSTED;
	}
	if (batch->durability != NDDD__V1__DURABILITY__DURABILITY_DEFAULT &&
	    batch->durability != NDDD__V1__DURABILITY__DURABLE &&
	    batch->durability != NDDD__V1__DURABILITY__RELAXED) {
		*message = "unknown durability";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	return check_namespace(batch->namespace_, batch->ttl_seconds, message);
}

/* A batch's answers, per item of the request. */
struct batch_results {
	size_t n;
	uint64_t *counts;
	uint64_t *first, *last, *expires;	/* NULL: not asked for */
	void *owned;				/* the lists, when malloc'ed */
};

/*
 * Room for the answers to n items, all lists in one block: from arena a
 * (a check, answered before the worker's arena is reset), or malloc'ed
 * when a is NULL (a job, answered later in the loop).  False if memory is
 * short.
 */
static bool
results_init(struct batch_results *br, size_t n, bool with_times,
    struct arena *a)
{
	size_t lists = with_times ? 4 : 1, len = lists * (n + 1) *
	    sizeof(uint64_t);
	uint64_t *p = a != NULL ? arena_alloc(a, len) : malloc(len);

	memset(br, 0, sizeof(*br));
	br->n = n;
	if (p == NULL)
		return false;
	memset(p, 0, len);
	br->owned = a != NULL ? NULL : p;
	br->counts = p;
	if (with_times) {
		br->first = p + (n + 1);
		br->last = p + 2 * (n + 1);
		br->expires = p + 3 * (n + 1);
	}
	return true;
}

static void
results_free(struct batch_results *br)
{
	free(br->owned);
}

/* Item pos's answer: the URL's state. */
static void
results_set(struct batch_results *br, size_t pos, const struct url_state *st)
{
	br->counts[pos] = st->count;
	if (br->first == NULL)
		return;
	br->first[pos] = st->first_seen_ms;
	br->last[pos] = st->last_seen_ms;
	br->expires[pos] = st->expires_ms;
}

/* Appends a UrlResults reply to r. */
static void
write_results(struct reply *r, const struct batch_results *br,
    const struct bad_item *bad, size_t nbad)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__UrlResults res = NDDD__V1__URL_RESULTS__INIT;
	Nddd__V1__ItemError *errs = NULL, **errp = NULL;
	Nddd__V1__Status *sts = NULL;

	if (nbad > 0) {
		errs = calloc(nbad, sizeof(*errs));
		errp = calloc(nbad, sizeof(*errp));
		sts = calloc(nbad, sizeof(*sts));
		if (errs == NULL || errp == NULL || sts == NULL) {
			reply_error(r, NDDD__V1__CODE__INTERNAL,
			    "out of memory");
			goto out;
		}
		for (size_t i = 0; i < nbad; i++) {
			nddd__v1__item_error__init(&errs[i]);
			nddd__v1__status__init(&sts[i]);
			sts[i].code = bad[i].code;
			sts[i].message = (char *)bad[i].cause;
			errs[i].index = bad[i].pos;
			errs[i].status = &sts[i];
			errp[i] = &errs[i];
		}
	}
	res.n_counts = br->n;
	res.counts = br->counts;
	if (br->first != NULL) {
		res.n_first_seen_ms = res.n_last_seen_ms =
		    res.n_expires_ms = br->n;
		res.first_seen_ms = br->first;
		res.last_seen_ms = br->last;
		res.expires_ms = br->expires;
	}
	res.n_errors = nbad;
	res.errors = errp;
	resp.id = r->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_URLS;
	resp.urls = &res;
	reply_message(r, &resp.base);
out:
	free(errs);
	free(errp);
	free(sts);
}

/* Item i of bk fails with code and cause. */
static void
fail_item(struct batch_keys *bk, size_t i, Nddd__V1__Code code,
    const char *cause)
{
	bk->valid[i] = false;
	bk->bad[bk->nbad].pos = (uint32_t)i;
	bk->bad[bk->nbad].code = code;
	bk->bad[bk->nbad++].cause = cause;
}

/* URLs of a batch keyed at once (urlset_keys_canonical). */
struct key_chunk {
	const char *urls[URLSET_KEY_BATCH];
	size_t lens[URLSET_KEY_BATCH];
	struct url_key keys[URLSET_KEY_BATCH];
	const char *canon[URLSET_KEY_BATCH];
	size_t canon_len[URLSET_KEY_BATCH];
	const char *causes[URLSET_KEY_BATCH];
};

/* Keys URLs [from, from + n) of batch into c. */
static void
key_urls(struct url_keyer *k, const Nddd__V1__UrlBatch *batch, size_t from,
    size_t n, struct key_chunk *c)
{
	for (size_t i = 0; i < n; i++) {
		c->urls[i] = (const char *)batch->urls[from + i].data;
		c->lens[i] = batch->urls[from + i].len;
	}
	urlset_keys_canonical(k, c->urls, c->lens, n, c->keys, c->canon,
	    c->canon_len, c->causes);
}

/*
 * Derives the keys of a batch into bk, whose arrays hold its items, in the
 * batch's namespace; the URLs another shard owns (bk->shard) fail with
 * MOVED.  Returns NULL, or why the whole batch is refused (digests of
 * another canonicalization).
 */
static const char *
derive_keys(struct urlset *us, struct url_keyer *k,
    const Nddd__V1__UrlBatch *batch, struct batch_keys *bk)
{
	struct urlset_ns_mask mask;
	struct key_chunk chunk;
	bool masked = batch != NULL && batch->namespace_ != NULL &&
	    batch->namespace_[0] != '\0';
	bool digests = batch != NULL && batch->digests.len > 0;

	bk->nkeys = bk->nbad = 0;
	if (digests && (batch->canon == NULL ||
	    strcmp(batch->canon, urlset_canon_id(us)) != 0))
		return "digests made with another canonicalization than this "
		    "server's (its stats say which)";
	if (masked)
		urlset_ns_mask(batch->namespace_, strlen(batch->namespace_),
		    &mask);
	for (size_t i = 0; i < bk->n; i++) {
		struct url_key *key = &bk->keys[bk->nkeys];
		size_t j = i % URLSET_KEY_BATCH;
		uint32_t route_by;

		/* URLs are keyed a batch at a time, their MD5s eight at a
		 * time. */
		if (!digests && j == 0)
			key_urls(k, batch, i, bk->n - i < URLSET_KEY_BATCH ?
			    bk->n - i : URLSET_KEY_BATCH, &chunk);
		if (digests)
			urlset_key_digest(us, batch->digests.data +
			    i * CBF_FP_LEN, key);
		else if (chunk.causes[j] != NULL) {
			fail_item(bk, i, NDDD__V1__CODE__INVALID_ARGUMENT,
			    chunk.causes[j]);
			continue;
		} else
			*key = chunk.keys[j];
		if (!shard_view_owns(&bk->shard, key->fp, &route_by)) {
			shard_moved_message(route_by, bk->moved);
			fail_item(bk, i, NDDD__V1__CODE__MOVED, bk->moved);
			continue;
		}
		if (!digests && bk->texts != NULL &&
		    keep_text(bk, chunk.canon[j],
		    chunk.canon_len[j]) == -1) {
			bk->nomem = true;
			return NULL;
		}
		if (masked)
			urlset_key_masked(us, &mask, key);
		urlset_prefetch(us, key);
		bk->valid[i] = true;
		bk->pos[bk->nkeys++] = (uint32_t)i;
	}
	if (bk->texts != NULL)
		place_texts(bk);
	return NULL;
}

/* The namespace a batch names, "" for none. */
static const char *
batch_namespace(const Nddd__V1__UrlBatch *batch)
{
	return batch != NULL && batch->namespace_ != NULL ?
	    batch->namespace_ : "";
}

void
urlreq_check(struct op_call *call)
{
	const Nddd__V1__UrlBatch *batch = call->req->url_check;
	struct urlset *us = call->svc->us;
	struct arena *a = &call->ctx->arena;
	struct reply *r = call->reply;
	struct batch_keys bk = { .n = batch_len(batch) };
	struct batch_results br;
	struct urlset_tally tally = { 0 };
	struct url_state *states;
	const char *refused, *ns = batch_namespace(batch);
	int rc;

	bk.keys = arena_alloc(a, bk.n * sizeof(*bk.keys) + 1);
	bk.pos = arena_alloc(a, bk.n * sizeof(*bk.pos) + 1);
	bk.valid = arena_alloc(a, bk.n * sizeof(*bk.valid) + 1);
	bk.bad = arena_alloc(a, bk.n * sizeof(*bk.bad) + 1);
	states = arena_alloc(a, bk.n * sizeof(*states) + 1);
	shard_state_view(call->svc->shard, &bk.shard);
	if (bk.keys == NULL || bk.pos == NULL || bk.valid == NULL ||
	    bk.bad == NULL || states == NULL) {
		reply_error(r, NDDD__V1__CODE__INTERNAL, "out of memory");
		return;
	}
	if ((refused = derive_keys(us, call->ctx->keyer, batch, &bk)) !=
	    NULL) {
		reply_error(r, NDDD__V1__CODE__INVALID_ARGUMENT, refused);
		return;
	}
	rc = urlset_check(us, call->ctx->urls, urlns_find(urlset_namespaces(us),
	    ns, strlen(ns), NULL), clock_wall_ms(), bk.keys, NULL, bk.nkeys,
	    states, &tally);
	if (rc == STORE_WOULD_BLOCK) {
		call->would_block = true;	/* counted where it is run */
		return;
	}
	urlset_add_tally(us, &tally);
	if (rc != STORE_OK) {
		reply_store_error(r, rc);
		return;
	}
	if (!results_init(&br, bk.n, batch != NULL && batch->with_times, a)) {
		reply_error(r, NDDD__V1__CODE__INTERNAL, "out of memory");
		return;
	}
	for (size_t i = 0; i < bk.nkeys; i++)
		results_set(&br, bk.pos[i], &states[i]);
	write_results(r, &br, bk.bad, bk.nbad);
}

/* A url_submit or url_delete request travelling through the URL writer. */
struct url_job {
	struct urlset_job uj;
	struct reply reply;
	struct batch_keys bk;
	struct batch_results br;	/* per item of the request */
	struct url_state *states;	/* per key */
	struct shard_state *shard;	/* admitted the write */
	unsigned ticket;
};

static void
url_job_free(struct url_job *j)
{
	shard_release(j->shard, j->ticket);
	free(j->bk.keys);
	free(j->bk.pos);
	free(j->bk.valid);
	free(j->bk.bad);
	free(j->bk.texts);
	free(j->bk.text_data);
	results_free(&j->br);
	free(j->states);
	free(j);
}

static void
url_job_done(struct urlset_job *uj)
{
	struct url_job *j = (struct url_job *)uj;

	if (uj->status == STORE_OK) {
		for (size_t i = 0; i < j->bk.nkeys; i++)
			results_set(&j->br, j->bk.pos[i], &j->states[i]);
		write_results(&j->reply, &j->br, j->bk.bad, j->bk.nbad);
	} else if (uj->refused != NULL)
		reply_error(&j->reply, NDDD__V1__CODE__RESOURCE_EXHAUSTED,
		    uj->refused);
	else
		reply_store_error(&j->reply, uj->status);
	reply_finish(&j->reply);
	url_job_free(j);
}

/* The durability a batch asks for, the server's by default. */
static enum urlset_durability
durability_of(const struct op_call *call, const Nddd__V1__UrlBatch *batch)
{
	switch (batch->durability) {
	case NDDD__V1__DURABILITY__DURABLE:
		return URLSET_DURABLE;
	case NDDD__V1__DURABILITY__RELAXED:
		return URLSET_RELAXED;
	default:
		return call->svc->durability;
	}
}

/*
 * A url_submit (op URLSET_SUBMIT) or url_delete (URLSET_DELETE) batch:
 * answered at once when there is nothing to write, else a job for the URL
 * writer, which answers once it is as durable as the batch asked.
 */
static void
mutate(struct op_call *call, enum urlset_op op,
    const Nddd__V1__UrlBatch *batch)
{
	struct urlset *us = call->svc->us;
	size_t n = batch_len(batch);
	const char *refused;
	struct url_job *j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		goto nomem;
	j->shard = call->svc->shard;
	j->ticket = shard_admit(j->shard, &j->bk.shard);
	j->bk.n = n;
	j->bk.keys = malloc(n * sizeof(*j->bk.keys) + 1);
	j->bk.pos = malloc(n * sizeof(*j->bk.pos) + 1);
	j->bk.valid = malloc(n * sizeof(*j->bk.valid) + 1);
	j->bk.bad = malloc(n * sizeof(*j->bk.bad) + 1);
	j->states = calloc(n + 1, sizeof(*j->states));
	/* New URLs' texts, for the host index; digests carry none.  Room
	 * for as many bytes as the URLs sent: a canonical form is rarely
	 * longer (keep_text grows it when one is). */
	if (op == URLSET_SUBMIT && urlset_host_index(us) && batch != NULL &&
	    batch->digests.len == 0) {
		for (size_t i = 0; i < n; i++)
			j->bk.text_cap += batch->urls[i].len < URLHOSTS_TEXT_MAX ?
			    batch->urls[i].len : URLHOSTS_TEXT_MAX;
		if ((j->bk.texts = calloc(n + 1, sizeof(*j->bk.texts))) ==
		    NULL || (j->bk.text_data = malloc(j->bk.text_cap + 1)) ==
		    NULL)
			goto nomem;
	}
	if (!results_init(&j->br, n, batch != NULL && batch->with_times,
	    NULL) ||
	    j->bk.keys == NULL || j->bk.pos == NULL || j->bk.valid == NULL ||
	    j->bk.bad == NULL || j->states == NULL)
		goto nomem;
	if ((refused = derive_keys(us, call->ctx->keyer, batch, &j->bk)) !=
	    NULL) {
		reply_error(call->reply, NDDD__V1__CODE__INVALID_ARGUMENT,
		    refused);
		url_job_free(j);
		return;
	}
	if (j->bk.nomem)
		goto nomem;
	if (j->bk.nkeys == 0) {
		/* Nothing to write. */
		write_results(call->reply, &j->br, j->bk.bad, j->bk.nbad);
		url_job_free(j);
		return;
	}
	j->uj.op = op;
	j->uj.durability = durability_of(call, batch);
	snprintf(j->uj.ns, sizeof(j->uj.ns), "%s", batch_namespace(batch));
	j->uj.ttl_ms = batch->ttl_seconds * 1000;
	j->uj.keys = j->bk.keys;
	j->uj.n = j->bk.nkeys;
	j->uj.texts = j->bk.texts;
	j->uj.text_bytes = j->bk.text_len;
	j->uj.states = j->states;
	j->uj.done = url_job_done;
	reply_move(&j->reply, call->reply);
	urlset_submit_job(us, &j->uj);
	return;
nomem:
	if (j != NULL)
		url_job_free(j);
	reply_error(call->reply, NDDD__V1__CODE__INTERNAL, "out of memory");
}

void
urlreq_submit(struct op_call *call)
{
	mutate(call, URLSET_SUBMIT, call->req->url_submit);
}

void
urlreq_delete(struct op_call *call)
{
	mutate(call, URLSET_DELETE, call->req->url_delete);
}

Nddd__V1__Code
urlreq_namespace_validate(const char *name, uint64_t ttl_seconds, bool drop,
    const char **message)
{
	if (drop && (name == NULL || name[0] == '\0')) {
		*message = "the default namespace cannot be dropped";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	return check_namespace(name, ttl_seconds, message);
}

/* A namespace_set travelling through the URL writer (namespace_drop is
 * docdrop's: the documents first). */
struct ns_job {
	struct urlset_job uj;
	struct reply reply;
	struct urlns_info info;
	uint64_t docs;			/* the namespace's documents */
};

void
urlreq_reply_namespace(struct reply *r, const char *name,
    const struct urlns_info *urls, uint64_t docs)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__NamespaceInfo info = NDDD__V1__NAMESPACE_INFO__INIT;

	info.name = (char *)name;
	if (urls != NULL) {
		info.urls = urls->urls;
		info.default_ttl_seconds = urls->default_ttl_ms / 1000;
	}
	info.docs = docs;
	resp.id = r->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_NAMESPACE;
	resp.namespace_ = &info;
	reply_message(r, &resp.base);
}

static void
ns_job_done(struct urlset_job *uj)
{
	struct ns_job *j = (struct ns_job *)uj;

	if (uj->status == STORE_OK)
		urlreq_reply_namespace(&j->reply, j->info.name, &j->info,
		    j->docs);
	else if (uj->refused != NULL)
		reply_error(&j->reply, NDDD__V1__CODE__RESOURCE_EXHAUSTED,
		    uj->refused);
	else
		reply_store_error(&j->reply, uj->status);
	reply_finish(&j->reply);
	free(j);
}

void
urlreq_namespace_set(struct op_call *call)
{
	const Nddd__V1__NamespaceSet *ns = call->req->namespace_set;
	struct ns_job *j = calloc(1, sizeof(*j));

	if (j == NULL) {
		reply_error(call->reply, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	j->uj.op = URLSET_NS_SET;
	snprintf(j->uj.ns, sizeof(j->uj.ns), "%s", ns != NULL &&
	    ns->name != NULL ? ns->name : "");
	/* Documents are the store writer's: counted here, as they are. */
	j->docs = docns_docs(docset_namespaces(call->svc->ds),
	    docset_ns_find(call->svc->ds, j->uj.ns));
	j->uj.ttl_ms = (ns != NULL ? ns->default_ttl_seconds : 0) * 1000;
	j->uj.info = &j->info;
	j->uj.done = ns_job_done;
	reply_move(&j->reply, call->reply);
	urlset_submit_job(call->svc->us, &j->uj);
}

Nddd__V1__Code
urlreq_forget_validate(const Nddd__V1__UrlForget *f, const char **message)
{
	bool host = f != NULL && f->host != NULL && f->host[0] != '\0';
	bool prefix = f != NULL && f->prefix.len > 0;
	Nddd__V1__Code code;

	if (host == prefix) {
		*message = "url_forget names a host or a prefix, one of them";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	if ((code = check_namespace(f->namespace_, 0, message)) !=
	    NDDD__V1__CODE__OK)
		return code;
	if (prefix && f->subdomains) {
		*message = "subdomains goes with a host, not a prefix";
		return NDDD__V1__CODE__INVALID_ARGUMENT;
	}
	if (host) {
		size_t len = strlen(f->host);
		const char *h;
		size_t hlen;
		char url[URLHOSTS_HOST_MAX + 16];

		/* A host is what a canonical URL carries between "//" and
		 * its port or path, and nothing else. */
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)f->host[i] <= ' ' ||
			    (unsigned char)f->host[i] >= 0x7f) {
				*message = "a host has no spaces, control "
				    "bytes or bytes above ASCII (use its "
				    "punycode form)";
				return NDDD__V1__CODE__INVALID_ARGUMENT;
			}
		if (len > URLHOSTS_HOST_MAX) {
			*message = "a host is at most 253 bytes";
			return NDDD__V1__CODE__INVALID_ARGUMENT;
		}
		snprintf(url, sizeof(url), "http://%s/", f->host);
		if (!urlhosts_url_host(url, strlen(url), &h, &hlen) ||
		    hlen != len || strchr(f->host, '@') != NULL) {
			*message = "a host is a name or an IP address, without "
			    "scheme, user, port or path";
			return NDDD__V1__CODE__INVALID_ARGUMENT;
		}
	}
	return NDDD__V1__CODE__OK;
}

/* A url_forget travelling through the URL writer. */
struct forget_job {
	struct urlset_job uj;
	struct reply reply;
	struct urlset_forget f;
	char host[URLHOSTS_HOST_MAX + 1];
	char prefix[URLHOSTS_TEXT_MAX + 1];
};

static void
forget_job_done(struct urlset_job *uj)
{
	struct forget_job *j = (struct forget_job *)uj;
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__UrlForgetResult res = NDDD__V1__URL_FORGET_RESULT__INIT;

	if (uj->status == STORE_OK) {
		res.forgotten = j->f.forgotten;
		res.complete = j->f.complete;
		resp.id = j->reply.id;
		resp.result_case = NDDD__V1__RESPONSE__RESULT_FORGET;
		resp.forget = &res;
		reply_message(&j->reply, &resp.base);
	} else {
		if (j->f.forgotten > 0)
			log_warnx("url_forget: %" PRIu64 " URLs forgotten "
			    "before it failed: %s", j->f.forgotten,
			    store_strstatus(uj->status));
		reply_store_error(&j->reply, uj->status);
	}
	reply_finish(&j->reply);
	free(j);
}

void
urlreq_forget(struct op_call *call)
{
	const Nddd__V1__UrlForget *f = call->req->url_forget;
	struct forget_job *j;

	if (!urlset_host_index(call->svc->us)) {
		reply_error(call->reply, NDDD__V1__CODE__FAILED_PRECONDITION,
		    "the server keeps no host index ([urls] host_index = no)");
		return;
	}
	if ((j = calloc(1, sizeof(*j))) == NULL) {
		reply_error(call->reply, NDDD__V1__CODE__INTERNAL,
		    "out of memory");
		return;
	}
	if (f->host != NULL && f->host[0] != '\0') {
		/* Canonical hosts are in lower case. */
		for (size_t i = 0; f->host[i] != '\0'; i++)
			j->host[i] = (char)tolower((unsigned char)f->host[i]);
		j->f.host = j->host;
		j->f.hlen = strlen(j->host);
		j->f.subdomains = f->subdomains;
	} else {
		struct url_key key;
		const char *canon, *cause;
		uint8_t range[URLHOSTS_KEY_MAX];
		size_t clen;

		if (urlset_key_canonical(call->ctx->keyer, (const char *)
		    f->prefix.data, f->prefix.len, &key, &canon, &clen,
		    &cause) == -1) {
			reply_error(call->reply,
			    NDDD__V1__CODE__INVALID_ARGUMENT, cause);
			free(j);
			return;
		}
		if (urlhosts_url_prefix(0, canon, clen, range) == 0) {
			reply_error(call->reply,
			    NDDD__V1__CODE__INVALID_ARGUMENT, "a prefix is at "
			    "most 490 bytes with its host, as the host index "
			    "keeps URLs, and a host at most 253");
			free(j);
			return;
		}
		memcpy(j->prefix, canon, clen);
		j->f.prefix = j->prefix;
		j->f.plen = clen;
	}
	j->uj.op = URLSET_FORGET;
	snprintf(j->uj.ns, sizeof(j->uj.ns), "%s", f->namespace_ != NULL ?
	    f->namespace_ : "");
	j->uj.forget = &j->f;
	j->uj.done = forget_job_done;
	reply_move(&j->reply, call->reply);
	urlset_submit_job(call->svc->us, &j->uj);
}
