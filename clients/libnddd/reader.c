/*
 * reader: libnddd's reply reader, with no I/O (hiredis read.c): received
 * bytes go in (reader_space and reader_wrote, or reader_feed), complete
 * replies come out (reader_get), each frame (a 4-byte big-endian length,
 * then a Response) turned into the struct nddd_reply of nddd.h, which
 * nddd_reply_free frees.  nddd_recv (client.c) feeds it from the socket;
 * a test can feed it bytes of its own.  It needs no other file of the
 * library; the others are listed in nddd_impl.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nddd.h"
#include "nddd_impl.h"
#include "nddd.pb-c.h"

int
errbuf_set(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return -1;
}

int
errmsg_new(char **err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(err, fmt, ap) == -1)
		*err = NULL;
	va_end(ap);
	return -1;
}

/* Sets rd's error and returns -1. */
#define reader_fail(rd, ...) errbuf_set((rd)->err, sizeof((rd)->err), \
    __VA_ARGS__)

const char *
nddd_code_name(enum nddd_code code)
{
	static const char *const names[] = {
		"OK", "INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED",
		"RESOURCE_EXHAUSTED", "EMPTY_DOCUMENT", "UNAVAILABLE",
		"INTERNAL", "FAILED_PRECONDITION", "MOVED",
	};

	if ((unsigned)code < sizeof(names) / sizeof(names[0]))
		return names[code];
	return "UNKNOWN";
}

int
buf_grow(unsigned char **buf, size_t *cap, size_t need)
{
	size_t ncap = *cap ? *cap : 65536;
	unsigned char *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if ((p = realloc(*buf, ncap)) == NULL)
		return -1;
	*buf = p;
	*cap = ncap;
	return 0;
}

struct reader *
reader_new(void)
{
	struct reader *rd = calloc(1, sizeof(*rd));

	if (rd != NULL)
		rd->max_frame = READER_MAX_REPLY;
	return rd;
}

void
reader_free(struct reader *rd)
{
	if (rd == NULL)
		return;
	free(rd->buf);
	free(rd);
}

unsigned char *
reader_space(struct reader *rd, size_t want, size_t *room)
{
	if (rd->off > 0) {
		memmove(rd->buf, rd->buf + rd->off, rd->len - rd->off);
		rd->len -= rd->off;
		rd->off = 0;
	}
	if (buf_grow(&rd->buf, &rd->cap, rd->len + want) == -1) {
		reader_fail(rd, "out of memory");
		return NULL;
	}
	*room = rd->cap - rd->len;
	return rd->buf + rd->len;
}

void
reader_wrote(struct reader *rd, size_t n)
{
	rd->len += n;
}

int
reader_feed(struct reader *rd, const void *buf, size_t len)
{
	unsigned char *p;
	size_t room;

	if ((p = reader_space(rd, len, &room)) == NULL)
		return -1;
	memcpy(p, buf, len);
	reader_wrote(rd, len);
	return 0;
}

static char *
dup_message(const Nddd__V1__Status *st)
{
	return strdup(st && st->message ? st->message : "");
}

static void
copy_url_store(struct nddd_stats *o, const Nddd__V1__UrlStoreStats *u)
{
	o->url_store.journal_entries = u->journal_entries;
	o->url_store.journal_capacity = u->journal_capacity;
	o->url_store.journal_bytes = u->journal_bytes;
	o->url_store.journal_bytes_written = u->journal_bytes_written;
	o->url_store.journal_syncs = u->journal_syncs;
	o->url_store.groups = u->groups;
	o->url_store.flushes = u->flushes;
	o->url_store.merges = u->merges;
	o->url_store.merges_forced = u->merges_forced;
	o->url_store.segments = u->segments;
	o->url_store.small_segments = u->small_segments;
	o->url_store.records = u->records;
	o->url_store.dead_records = u->dead_records;
	o->url_store.store_bytes_written = u->store_bytes_written;
	o->url_store.pending = u->pending;
	o->url_store.index_bytes = u->index_bytes;
	o->url_store.journal_table_bytes = u->journal_table_bytes;
	o->url_store.host_runs = u->host_runs;
	o->url_store.host_keys = u->host_keys;
	o->url_store.host_merging = u->host_merging;
}

static void
copy_doc_store(struct nddd_stats *o, const Nddd__V1__DocStoreStats *d)
{
	o->doc_store.journal_bytes = d->journal_bytes;
	o->doc_store.journal_bytes_written = d->journal_bytes_written;
	o->doc_store.journal_syncs = d->journal_syncs;
	o->doc_store.groups = d->groups;
	o->doc_store.checkpoints = d->checkpoints;
	o->doc_store.pending = d->pending;
	o->doc_store.failures = d->failures;
}

static void
copy_near(struct nddd_stats *o, const Nddd__V1__NearStats *n)
{
	o->near_k = n->k;
	o->near_blocks = n->blocks;
	o->near_tables = n->tables;
	o->near_bytes = n->bytes;
	o->near_distinct = n->distinct;
	snprintf(o->near_answer, sizeof(o->near_answer), "%s",
	    n->answer != NULL ? n->answer : "");
	snprintf(o->near_html, sizeof(o->near_html), "%s",
	    n->html != NULL ? n->html : "");
	o->near_containment = n->containment;
	o->near_resemblance = n->resemblance;
	o->near_sketch_keys = n->sketch_keys;
	o->near_sketch_bytes = n->sketch_bytes;
	o->near_candidates = n->candidates;
	o->near_verified = n->verified;
	o->near_keys_skipped = n->keys_skipped;
	o->near_unsketched = n->unsketched;
}

/* The sections a server may leave out (an older one) stay zero. */
static void
copy_stats(struct nddd_stats *o, const Nddd__V1__StatsResult *s)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->version, sizeof(o->version), "%s",
	    s->version ? s->version : "");
	o->uptime_seconds = s->uptime_seconds;
	o->urls = s->urls;
	if (s->cbf != NULL) {
		o->cbf_counters = s->cbf->counters;
		o->cbf_nonzero = s->cbf->nonzero;
		o->cbf_saturated = s->cbf->saturated;
		o->cbf_bytes = s->cbf->bytes;
		o->cbf_k = s->cbf->k;
	}
	o->checks = s->checks;
	o->checks_filter_only = s->checks_filter_only;
	o->filter_false_positives = s->filter_false_positives;
	o->submits_new = s->submits_new;
	o->submits_duplicate = s->submits_duplicate;
	o->deletes = s->deletes;
	o->commits = s->commits;
	o->store_bytes = s->store_bytes;
	o->connections = s->connections;
	o->docs = s->docs;
	snprintf(o->canon, sizeof(o->canon), "%s", s->canon ? s->canon : "");
	if (s->url_store != NULL)
		copy_url_store(o, s->url_store);
	if (s->doc_store != NULL)
		copy_doc_store(o, s->doc_store);
	o->urls_dropping = s->urls_dropping;
	o->urls_expired = s->urls_expired;
	o->docs_dropping = s->docs_dropping;
	if (s->shard != NULL) {
		o->shard_place = s->shard->place;
		o->shard_count = s->shard->shards;
		o->shard_importing = s->shard->importing;
		o->shard_keep_moved_docs = s->shard->keep_moved_docs;
		snprintf(o->shard_list, sizeof(o->shard_list), "%s",
		    s->shard->shard_list != NULL ? s->shard->shard_list : "");
	}
	if (s->near != NULL)
		copy_near(o, s->near);
	if (s->accel != NULL) {
		snprintf(o->accel_backend, sizeof(o->accel_backend), "%s",
		    s->accel->backend ? s->accel->backend : "");
		o->accel_simulation = s->accel->simulation;
		o->accel_batches = s->accel->batches;
		o->accel_batches_failed = s->accel->batches_failed;
		o->accel_docs = s->accel->docs;
		o->accel_bytes = s->accel->bytes;
	}
}

/* The n namespaces m[0..n) into r's.  Returns -1 when out of memory. */
static int
copy_namespaces(struct nddd_reply *r, Nddd__V1__NamespaceInfo *const *m,
    size_t n)
{
	if ((r->namespaces = calloc(n + 1, sizeof(*r->namespaces))) == NULL)
		return -1;
	r->nnamespaces = n;
	for (size_t i = 0; i < n; i++) {
		struct nddd_namespace *ns = &r->namespaces[i];

		snprintf(ns->name, sizeof(ns->name), "%s",
		    m[i]->name ? m[i]->name : "");
		ns->urls = m[i]->urls;
		ns->default_ttl_seconds = m[i]->default_ttl_seconds;
		ns->docs = m[i]->docs;
	}
	return 0;
}

/*
 * The times of a URL batch's reply into r's results: each list holds one
 * per URL, or none when the batch did not ask for them.
 */
static int
copy_times(struct reader *rd, struct nddd_reply *r,
    const Nddd__V1__UrlResults *m)
{
	size_t n = r->nresults;

	if (m->n_first_seen_ms == 0 && m->n_last_seen_ms == 0 &&
	    m->n_expires_ms == 0)
		return 0;
	if (m->n_first_seen_ms != n || m->n_last_seen_ms != n ||
	    m->n_expires_ms != n)
		return reader_fail(rd, "reply has %zu, %zu and %zu times for "
		    "%zu URLs", m->n_first_seen_ms, m->n_last_seen_ms,
		    m->n_expires_ms, n);
	for (size_t i = 0; i < n; i++) {
		r->results[i].first_seen_ms = m->first_seen_ms[i];
		r->results[i].last_seen_ms = m->last_seen_ms[i];
		r->results[i].expires_ms = m->expires_ms[i];
	}
	return 0;
}

/* A URL batch's reply: a count per URL, its item errors, its times. */
static int
convert_urls(struct reader *rd, struct nddd_reply *r,
    const Nddd__V1__UrlResults *m)
{
	r->kind = NDDD_REPLY_URLS;
	r->nresults = m->n_counts;
	r->results = calloc(r->nresults + 1, sizeof(*r->results));
	if (r->results == NULL)
		return reader_fail(rd, "out of memory");
	for (size_t i = 0; i < r->nresults; i++)
		r->results[i].count = m->counts[i];
	for (size_t i = 0; i < m->n_errors; i++) {
		const Nddd__V1__ItemError *e = m->errors[i];

		if (e->index >= r->nresults)
			return reader_fail(rd, "reply names item %u of %zu",
			    e->index, r->nresults);
		r->results[e->index].code = e->status ?
		    (enum nddd_code)e->status->code : NDDD_INTERNAL;
		r->results[e->index].message = dup_message(e->status);
	}
	return copy_times(rd, r, m);
}

/*
 * Fills d from a DocResult (or a query's simhash and neighbours, with m
 * NULL).  The neighbours and every string but the message live in one
 * block: the neighbour array first, then the URLs; without neighbours the
 * block starts with the document's URL, and an empty URL with no
 * neighbours takes none ("").  reader_doc_release frees it.  Returns -1
 * when out of memory.
 */
static int
doc_copy(struct nddd_doc *d, const Nddd__V1__DocResult *m,
    Nddd__V1__Neighbour **near, size_t n, uint64_t total,
    const ProtobufCBinaryData *sketch)
{
	size_t url_len = m != NULL ? m->url.len : 0, size;
	size_t sketch_len = sketch->len;
	char *p;

	d->near_total = total;
	if (m != NULL) {
		d->doc_id = m->doc_id;
		d->simhash = m->simhash;
		d->group = m->group;
		d->created = m->created;
		d->created_ms = m->created_ms;
		d->stored_id = m->stored_id;
		d->content = (enum nddd_content)m->content;
	}
	d->url = "";
	d->url_len = 0;
	d->sketch = NULL;
	d->sketch_len = 0;
	if (n == 0 && url_len == 0 && sketch_len == 0)
		return 0;
	size = n * sizeof(*d->near) + url_len + 1 + sketch_len;
	for (size_t i = 0; i < n; i++)
		size += near[i]->url.len + 1;
	if ((p = malloc(size)) == NULL)
		return -1;
	if (n > 0) {
		d->near = (struct nddd_neighbour *)(void *)p;
		p += n * sizeof(*d->near);
		d->nnear = n;
	}
	for (size_t i = 0; i < n; i++) {
		d->near[i].doc_id = near[i]->doc_id;
		d->near[i].distance = near[i]->distance;
		d->near[i].group = near[i]->group;
		d->near[i].created_ms = near[i]->created_ms;
		d->near[i].resemblance = near[i]->resemblance;
		d->near[i].containment = near[i]->containment;
		d->near[i].verified = near[i]->verified;
		d->near[i].url_len = near[i]->url.len;
		d->near[i].url = p;
		if (near[i]->url.len > 0)
			memcpy(p, near[i]->url.data, near[i]->url.len);
		p[near[i]->url.len] = '\0';
		p += near[i]->url.len + 1;
	}
	if (url_len > 0)
		memcpy(p, m->url.data, url_len);
	p[url_len] = '\0';
	d->url = p;
	d->url_len = url_len;
	if (sketch_len > 0) {
		d->sketch = memcpy(p + url_len + 1, sketch->data, sketch_len);
		d->sketch_len = sketch_len;
	}
	return 0;
}

void
reader_doc_release(struct nddd_doc *d)
{
	if (d->nnear > 0)
		free(d->near);
	else if (d->url_len > 0 || d->sketch_len > 0)
		free((char *)d->url);
	free((char *)d->message);
	memset(d, 0, sizeof(*d));
}

/* The results of a doc batch's reply, and its item errors, into r. */
static int
convert_docs(struct reader *rd, struct nddd_reply *r,
    const Nddd__V1__DocResults *m)
{
	r->kind = NDDD_REPLY_DOCS;
	r->ndocs = m->n_docs;
	if ((r->docs = calloc(r->ndocs + 1, sizeof(*r->docs))) == NULL)
		return reader_fail(rd, "out of memory");
	for (size_t i = 0; i < r->ndocs; i++) {
		const Nddd__V1__DocResult *d = m->docs[i];

		if (doc_copy(&r->docs[i], d, d->near, d->n_near,
		    d->near_total, &d->sketch) == -1)
			return reader_fail(rd, "out of memory");
	}
	for (size_t i = 0; i < m->n_errors; i++) {
		const Nddd__V1__ItemError *e = m->errors[i];
		struct nddd_doc *d;

		if (e->index >= r->ndocs)
			return reader_fail(rd, "reply names document %u of %zu",
			    e->index, r->ndocs);
		d = &r->docs[e->index];
		d->code = e->status ? (enum nddd_code)e->status->code :
		    NDDD_INTERNAL;
		if (d->code == NDDD_OK)
			d->code = NDDD_INTERNAL;
		free((char *)d->message);
		if ((d->message = dup_message(e->status)) == NULL)
			return reader_fail(rd, "out of memory");
	}
	return 0;
}

/* Keeps a page of moved keys as it came, packed again. */
static int
moved_keep(struct nddd_moved *out, const Nddd__V1__MovedKeys *m)
{
	out->session = m->session;
	out->url_cursor = m->url_cursor;
	out->doc_cursor = m->doc_cursor;
	out->done = m->done;
	out->nurls = m->n_urls;
	out->ndocs = m->n_docs;
	out->packed_len = nddd__v1__moved_keys__get_packed_size(m);
	if ((out->packed = malloc(out->packed_len + 1)) == NULL)
		return -1;
	nddd__v1__moved_keys__pack(m, out->packed);
	return 0;
}

void
nddd_moved_free(struct nddd_moved *m)
{
	free(m->packed);
	m->packed = NULL;
	m->packed_len = 0;
}

static void
convert_verify(struct nddd_reply *r, const Nddd__V1__VerifyResult *v)
{
	r->kind = NDDD_REPLY_VERIFY;
	r->verify.consistent = v->consistent;
	r->verify.urls = v->urls;
	r->verify.counter_mismatches = v->counter_mismatches;
	r->verify.docs = v->docs;
	r->verify.table_mismatches = v->table_mismatches;
	r->verify.url_index_mismatches = v->url_index_mismatches;
	snprintf(r->verify.detail, sizeof(r->verify.detail), "%s",
	    v->detail ? v->detail : "");
}

/* The reply of resp, or NULL with rd's error. */
static struct nddd_reply *
convert(struct reader *rd, const Nddd__V1__Response *resp)
{
	struct nddd_reply *r = calloc(1, sizeof(*r));

	if (r == NULL)
		goto oom;
	r->id = resp->id;
	if (resp->status != NULL && resp->status->code != 0) {
		r->kind = NDDD_REPLY_ERROR;
		r->code = (enum nddd_code)resp->status->code;
		r->message = dup_message(resp->status);
		return r;
	}
	switch (resp->result_case) {
	case NDDD__V1__RESPONSE__RESULT_URLS:
		if (convert_urls(rd, r, resp->urls) == -1)
			goto err;
		return r;
	case NDDD__V1__RESPONSE__RESULT_STATS:
		r->kind = NDDD_REPLY_STATS;
		copy_stats(&r->stats, resp->stats);
		if (copy_namespaces(r, resp->stats->namespaces,
		    resp->stats->n_namespaces) == -1)
			goto oom;
		return r;
	case NDDD__V1__RESPONSE__RESULT_NAMESPACE:
		r->kind = NDDD_REPLY_NAMESPACE;
		if (copy_namespaces(r, &resp->namespace_, 1) == -1)
			goto oom;
		return r;
	case NDDD__V1__RESPONSE__RESULT_SHARD:
		r->kind = NDDD_REPLY_SHARD;
		return r;
	case NDDD__V1__RESPONSE__RESULT_MOVED:
		r->kind = NDDD_REPLY_MOVED;
		if (moved_keep(&r->moved, resp->moved) == -1)
			goto oom;
		return r;
	case NDDD__V1__RESPONSE__RESULT_FORGET:
		r->kind = NDDD_REPLY_FORGET;
		r->forgotten = resp->forget->forgotten;
		r->complete = resp->forget->complete;
		return r;
	case NDDD__V1__RESPONSE__RESULT_DOC:
		r->kind = NDDD_REPLY_DOC;
		if (doc_copy(&r->doc, resp->doc, resp->doc->near,
		    resp->doc->n_near, resp->doc->near_total,
		    &resp->doc->sketch) == -1)
			goto oom;
		return r;
	case NDDD__V1__RESPONSE__RESULT_DOC_QUERY:
		r->kind = NDDD_REPLY_DOC_QUERY;
		r->doc.simhash = resp->doc_query->simhash;
		r->doc.content = (enum nddd_content)resp->doc_query->content;
		if (doc_copy(&r->doc, NULL, resp->doc_query->near,
		    resp->doc_query->n_near, resp->doc_query->near_total,
		    &resp->doc_query->sketch) == -1)
			goto oom;
		return r;
	case NDDD__V1__RESPONSE__RESULT_DOCS:
		if (convert_docs(rd, r, resp->docs) == -1)
			goto err;
		return r;
	case NDDD__V1__RESPONSE__RESULT_DOC_DELETE:
		r->kind = NDDD_REPLY_DOC_DELETE;
		r->deleted_id = resp->doc_delete->doc_id;
		return r;
	case NDDD__V1__RESPONSE__RESULT_VERIFY:
		convert_verify(r, resp->verify);
		return r;
	default:
		r->kind = NDDD_REPLY_ERROR;
		r->code = NDDD_INTERNAL;
		r->message = strdup("reply carries no result");
		return r;
	}
oom:
	reader_fail(rd, "out of memory");
err:
	nddd_reply_free(r);
	return NULL;
}

int
reader_get(struct reader *rd, struct nddd_reply **out)
{
	size_t have = rd->len - rd->off;
	Nddd__V1__Response *resp;
	const unsigned char *p;
	uint32_t len;

	*out = NULL;
	if (have < 4)
		return 0;
	p = rd->buf + rd->off;
	len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
	if (len > rd->max_frame)
		return reader_fail(rd, "reply of %u bytes exceeds the client's "
		    "limit", len);
	if (have < 4 + (size_t)len)
		return 0;
	resp = nddd__v1__response__unpack(NULL, len, p + 4);
	rd->off += 4 + (size_t)len;
	if (resp == NULL)
		return reader_fail(rd, "malformed reply");
	rd->shards = resp->shards;
	*out = convert(rd, resp);
	nddd__v1__response__free_unpacked(resp, NULL);
	return *out != NULL ? 0 : -1;
}

void
nddd_reply_free(struct nddd_reply *r)
{
	if (r == NULL)
		return;
	if (r->results != NULL)
		for (size_t i = 0; i < r->nresults; i++)
			free((char *)r->results[i].message);
	free(r->results);
	reader_doc_release(&r->doc);
	if (r->docs != NULL)
		for (size_t i = 0; i < r->ndocs; i++)
			reader_doc_release(&r->docs[i]);
	free(r->docs);
	free(r->namespaces);
	nddd_moved_free(&r->moved);
	free((char *)r->message);
	free(r);
}
