/*
 * Documents in namespaces, against a real daemon, in protobuf frames: the
 * same body is a new document in each namespace, and a namespace's
 * neighbours, groups, gets, deletes and queries never see another's (a
 * model of every namespace, answered by brute force over the fingerprints,
 * which are checked against the naive simhash of tests/lib, must agree
 * with every answer, before and after a restart); the default namespace's
 * documents, stored before any named one, are untouched; a token limited
 * to namespaces reaches only their documents, also in a doc_batch; bad
 * names are INVALID_ARGUMENT; dropping a namespace forgets its documents
 * exactly (verify agrees; the other namespaces' documents and groups stay
 * as they were), in the background, also when the daemon is killed midway
 * and started again, and its name starts an empty set at once.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "simhash_ref.h"
#include "testutil.h"

#define K 3	/* the daemon's default [near] k */

static Nddd__V1__Response *
call_as(const struct harness *h, const char *token, Nddd__V1__Request *req)
{
	req->id = 7;
	req->token = (char *)(token != NULL ? token : "");
	return harness_raw_call(h, req);
}

/* A doc_submit of body as text at url in namespace ns. */
static Nddd__V1__Response *
submit_as(const struct harness *h, const char *token, const char *ns,
    const char *url, const char *body, bool query_only)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__DocSubmit ds = NDDD__V1__DOC_SUBMIT__INIT;

	ds.url.data = (uint8_t *)url;
	ds.url.len = strlen(url);
	ds.body.data = (uint8_t *)body;
	ds.body.len = strlen(body);
	ds.query_only = query_only;
	ds.namespace_ = (char *)ns;
	req.op_case = NDDD__V1__REQUEST__OP_DOC_SUBMIT;
	req.doc_submit = &ds;
	return call_as(h, token, &req);
}

static Nddd__V1__Response *
submit(const struct harness *h, const char *ns, const char *url,
    const char *body)
{
	return submit_as(h, NULL, ns, url, body, false);
}

/* A doc_get (delete false) or doc_delete of url in ns. */
static Nddd__V1__Response *
ref_as(const struct harness *h, const char *token, bool delete,
    const char *ns, const char *url)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__DocRef ref = NDDD__V1__DOC_REF__INIT;

	ref.url.data = (uint8_t *)url;
	ref.url.len = strlen(url);
	ref.namespace_ = (char *)ns;
	if (delete) {
		req.op_case = NDDD__V1__REQUEST__OP_DOC_DELETE;
		req.doc_delete = &ref;
	} else {
		req.op_case = NDDD__V1__REQUEST__OP_DOC_GET;
		req.doc_get = &ref;
	}
	return call_as(h, token, &req);
}

/* A doc_query of fp (body NULL) or of body, in ns. */
static Nddd__V1__Response *
query_as(const struct harness *h, const char *token, const char *ns,
    uint64_t fp, const char *body)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__DocQuery q = NDDD__V1__DOC_QUERY__INIT;
	Nddd__V1__DocBody b = NDDD__V1__DOC_BODY__INIT;

	if (body != NULL) {
		b.body.data = (uint8_t *)body;
		b.body.len = strlen(body);
		q.what_case = NDDD__V1__DOC_QUERY__WHAT_BODY;
		q.body = &b;
	} else {
		q.what_case = NDDD__V1__DOC_QUERY__WHAT_SIMHASH;
		q.simhash = fp;
	}
	q.namespace_ = (char *)ns;
	req.op_case = NDDD__V1__REQUEST__OP_DOC_QUERY;
	req.doc_query = &q;
	return call_as(h, token, &req);
}

/* A doc_batch of n documents: urls[i] and bodies[i] in nss[i]. */
static Nddd__V1__Response *
batch_as(const struct harness *h, const char *token, size_t n,
    const char *const *nss, const char *const *urls,
    const char *const *bodies)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__DocBatch db = NDDD__V1__DOC_BATCH__INIT;
	Nddd__V1__DocSubmit ds[8], *dp[8];
	Nddd__V1__Response *r;

	ck_assert_uint_le(n, 8);
	for (size_t i = 0; i < n; i++) {
		nddd__v1__doc_submit__init(&ds[i]);
		ds[i].url.data = (uint8_t *)urls[i];
		ds[i].url.len = strlen(urls[i]);
		ds[i].body.data = (uint8_t *)bodies[i];
		ds[i].body.len = strlen(bodies[i]);
		ds[i].namespace_ = (char *)nss[i];
		dp[i] = &ds[i];
	}
	db.n_docs = n;
	db.docs = dp;
	req.op_case = NDDD__V1__REQUEST__OP_DOC_BATCH;
	req.doc_batch = &db;
	r = call_as(h, token, &req);
	return r;
}

/* A namespace_drop of name, answered or not. */
static Nddd__V1__Response *
drop_ns_refused(const struct harness *h, const char *name)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__NamespaceDrop nd = NDDD__V1__NAMESPACE_DROP__INIT;

	nd.name = (char *)name;
	req.op_case = NDDD__V1__REQUEST__OP_NAMESPACE_DROP;
	req.namespace_drop = &nd;
	return call_as(h, NULL, &req);
}

static void
expect_code(Nddd__V1__Response *r, Nddd__V1__Code code, const char *part)
{
	ck_assert_msg(r->status != NULL, "answered, want code %d", code);
	ck_assert_int_eq(r->status->code, code);
	ck_assert_msg(part == NULL || strstr(r->status->message, part) !=
	    NULL, "%s", r->status->message);
	nddd__v1__response__free_unpacked(r, NULL);
}

/* The document of an answered doc_submit or doc_get. */
static Nddd__V1__DocResult *
doc_of(Nddd__V1__Response *r)
{
	ck_assert_msg(r->status == NULL, "refused: %s", r->status ?
	    r->status->message : "");
	ck_assert_int_eq(r->result_case, NDDD__V1__RESPONSE__RESULT_DOC);
	return r->doc;
}

/* assert_consistent's count when it cannot be known (a drop going on). */
#define ANY_COUNT UINT64_MAX

static void
assert_consistent(const struct harness *h, uint64_t docs, const char *when)
{
	nddd_client *c = harness_client(h);
	struct nddd_verify v;

	ck_assert_int_eq(nddd_verify(c, &v), 0);
	ck_assert_msg(v.consistent && v.table_mismatches == 0 &&
	    v.url_index_mismatches == 0, "%s: %s", when, v.detail);
	ck_assert_msg(docs == ANY_COUNT || v.docs == docs, "%s: %llu "
	    "documents, want %llu", when, (unsigned long long)v.docs,
	    (unsigned long long)docs);
	nddd_close(c);
}

/* ---- A model of every namespace's documents. ---- */

#define MODEL_MAX 1024

struct mdoc {
	char ns[8];
	char url[64];
	uint64_t id, fp, group;
	bool live;
};

struct model {
	struct mdoc d[MODEL_MAX];
	size_t n;
	uint64_t next_id;
	/* What the submits' answers held: neighbours in all, and the
	 * documents of other namespaces within k that they left out. */
	uint64_t near_seen, others_within_k;
};

static struct mdoc *
model_find(struct model *m, const char *ns, const char *url)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->d[i].live && strcmp(m->d[i].ns, ns) == 0 &&
		    strcmp(m->d[i].url, url) == 0)
			return &m->d[i];
	return NULL;
}

struct mhit {
	uint64_t id, group;
	unsigned distance;
};

static int
cmp_mhit(const void *a, const void *b)
{
	const struct mhit *x = a, *y = b;

	if (x->distance != y->distance)
		return x->distance < y->distance ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Brute force: the live documents of ns within k of fp but exclude, in
 * the daemon's order. */
static size_t
model_near(const struct model *m, const char *ns, uint64_t fp, unsigned k,
    uint64_t exclude, struct mhit *out)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++) {
		const struct mdoc *d = &m->d[i];
		unsigned dist = (unsigned)__builtin_popcountll(d->fp ^ fp);

		if (!d->live || d->id == exclude || strcmp(d->ns, ns) != 0 ||
		    dist > k)
			continue;
		out[n].id = d->id;
		out[n].group = d->group;
		out[n++].distance = dist;
	}
	qsort(out, n, sizeof(*out), cmp_mhit);
	return n;
}

static void
assert_near(const char *what, Nddd__V1__Neighbour **near, size_t nnear,
    uint64_t total, const struct mhit *want, size_t nwant)
{
	ck_assert_msg(total == nwant, "%s: %llu neighbours, want %zu", what,
	    (unsigned long long)total, nwant);
	ck_assert_msg(nnear == nwant, "%s: %zu listed, want %zu", what, nnear,
	    nwant);
	for (size_t i = 0; i < nwant; i++) {
		ck_assert_msg(near[i]->doc_id == want[i].id, "%s: neighbour "
		    "%zu is %llu, want %llu", what, i,
		    (unsigned long long)near[i]->doc_id,
		    (unsigned long long)want[i].id);
		ck_assert_uint_eq(near[i]->distance, want[i].distance);
		ck_assert_uint_eq(near[i]->group, want[i].group);
	}
}

/*
 * Submits body at url in ns and checks the answer against the model
 * (then updates it): created or not, its id, its neighbours in ns and the
 * group it joins, and a fingerprint equal to the naive simhash's.
 */
static void
model_submit(const struct harness *h, struct model *m, const char *ns,
    const char *url, const char *body)
{
	Nddd__V1__Response *r = submit(h, ns, url, body);
	Nddd__V1__DocResult *doc = doc_of(r);
	struct mdoc *old = model_find(m, ns, url), *d;
	struct mhit want[MODEL_MAX];
	uint64_t fp;
	size_t n;
	char what[160];

	ck_assert_int_eq(ref_simhash(body, strlen(body), 0, 0, NULL, &fp), 0);
	ck_assert_msg(doc->simhash == fp, "%s in \"%s\": simhash %016llx, the "
	    "reference %016llx", url, ns, (unsigned long long)doc->simhash,
	    (unsigned long long)fp);
	snprintf(what, sizeof(what), "submit %s in \"%s\"", url, ns);
	n = model_near(m, ns, fp, K, old != NULL ? old->id : 0, want);
	assert_near(what, doc->near, doc->n_near, doc->near_total, want, n);
	m->near_seen += n;
	for (size_t i = 0; i < m->n; i++)
		m->others_within_k += m->d[i].live &&
		    strcmp(m->d[i].ns, ns) != 0 &&
		    __builtin_popcountll(m->d[i].fp ^ fp) <= K;
	ck_assert_int_eq(doc->created, old == NULL);
	if (old != NULL) {
		d = old;
		ck_assert_uint_eq(doc->doc_id, d->id);
	} else {
		ck_assert_uint_lt(m->n, MODEL_MAX);
		d = &m->d[m->n++];
		snprintf(d->ns, sizeof(d->ns), "%s", ns);
		snprintf(d->url, sizeof(d->url), "%s", url);
		d->id = m->next_id++;
		d->live = true;
		ck_assert_msg(doc->doc_id == d->id, "%s: id %llu, want %llu",
		    what, (unsigned long long)doc->doc_id,
		    (unsigned long long)d->id);
	}
	d->fp = fp;
	d->group = n > 0 ? want[0].group : d->id;
	ck_assert_msg(doc->group == d->group, "%s: group %llu, want %llu",
	    what, (unsigned long long)doc->group,
	    (unsigned long long)d->group);
	nddd__v1__response__free_unpacked(r, NULL);
}

/* Every document of the model as doc_get answers it, and the URLs of the
 * model in namespaces where they are not. */
static void
model_check_gets(const struct harness *h, const struct model *m,
    const char *const *nss, size_t nns)
{
	struct mhit want[MODEL_MAX];

	for (size_t i = 0; i < m->n; i++) {
		const struct mdoc *d = &m->d[i];

		for (size_t j = 0; j < nns; j++) {
			Nddd__V1__Response *r = ref_as(h, NULL, false, nss[j],
			    d->url);
			struct mdoc *mine = model_find((struct model *)m,
			    nss[j], d->url);
			Nddd__V1__DocResult *doc;
			size_t n;

			if (mine == NULL) {
				expect_code(r, NDDD__V1__CODE__NOT_FOUND, NULL);
				continue;
			}
			doc = doc_of(r);
			ck_assert_uint_eq(doc->doc_id, mine->id);
			ck_assert_uint_eq(doc->simhash, mine->fp);
			ck_assert_uint_eq(doc->group, mine->group);
			n = model_near(m, nss[j], mine->fp, K, mine->id, want);
			assert_near("get", doc->near, doc->n_near,
			    doc->near_total, want, n);
			nddd__v1__response__free_unpacked(r, NULL);
		}
	}
}

/* Queries by fingerprint in each namespace against brute force. */
static void
model_check_queries(const struct harness *h, const struct model *m,
    const char *const *nss, size_t nns)
{
	struct mhit want[MODEL_MAX];

	for (size_t i = 0; i < m->n; i += 3) {
		for (size_t j = 0; j < nns; j++) {
			Nddd__V1__Response *r = query_as(h, NULL, nss[j],
			    m->d[i].fp ^ 1, NULL);
			size_t n = model_near(m, nss[j], m->d[i].fp ^ 1, K, 0,
			    want);

			ck_assert_ptr_null(r->status);
			ck_assert_int_eq(r->result_case,
			    NDDD__V1__RESPONSE__RESULT_DOC_QUERY);
			assert_near("query", r->doc_query->near,
			    r->doc_query->n_near, r->doc_query->near_total,
			    want, n);
			nddd__v1__response__free_unpacked(r, NULL);
		}
	}
}

/* A text of nwords words of a vocabulary of 2,000 (no stop words), from
 * base; then changes words changed at random. */
static char *
make_body(uint64_t base, size_t nwords, unsigned changes, uint64_t *rng)
{
	char *s = malloc(nwords * 8 + 1), *p = s;
	/* Not a multiple of the generator's step: the bases' words are
	 * unrelated, not the same run shifted. */
	uint64_t st = (base + 1) * 0xd1b54a32d192ed03ULL;
	size_t *at = calloc(changes + 1, sizeof(*at));

	ck_assert_ptr_nonnull(s);
	for (unsigned c = 0; c < changes; c++)
		at[c] = (size_t)tu_rand_below(rng, nwords);
	for (size_t i = 0; i < nwords; i++) {
		uint64_t w = tu_rand_below(&st, 2000);

		for (unsigned c = 0; c < changes; c++)
			if (at[c] == i)
				w = 2000 + tu_rand_below(rng, 2000);
		p += sprintf(p, "%sw%" PRIu64, i ? " " : "", w);
	}
	free(at);
	return s;
}

/*
 * The same bodies, and near copies of them, stored at URLs that recur
 * within and across three namespaces (the default one among them), in an
 * order that mixes them: every answer agrees with the model, whose
 * namespaces are separate sets; so do gets and queries, before and after
 * a restart, and verify finds memory and store consistent.
 */
START_TEST(test_namespaces_are_separate_sets)
{
	static const char *const nss[] = { "", "a", "b", "c" };
	struct harness h;
	struct model *m = calloc(1, sizeof(*m));
	uint64_t rng = 42;
	char url[64];
	size_t live;

	m->next_id = 1;
	harness_init(&h, NULL);
	/* The model keeps the paper's answer: neighbours by distance (the
	 * verified answer's namespaces are checked in check_neardup.c). */
	harness_add_conf(&h, "[near]\nanswer = hamming\n");
	harness_start(&h);
	for (int i = 0; i < 360; i++) {
		const char *ns = nss[tu_rand_below(&rng, 3)];
		char *body = make_body(tu_rand_below(&rng, 10), 1500,
		    (unsigned)tu_rand_below(&rng, 3), &rng);

		snprintf(url, sizeof(url), "http://docns.example/%d",
		    (int)tu_rand_below(&rng, 60));
		model_submit(&h, m, ns, url, body);
		free(body);
	}
	/* Neighbours were many, and so were the documents of other
	 * namespaces that would have been. */
	ck_assert_uint_ge(m->near_seen, 1000);
	ck_assert_uint_ge(m->others_within_k, 1000);
	model_check_gets(&h, m, nss, 4);
	model_check_queries(&h, m, nss, 4);
	live = m->n;
	assert_consistent(&h, live, "after the submits");
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_start(&h);
	model_check_gets(&h, m, nss, 4);
	model_check_queries(&h, m, nss, 4);
	assert_consistent(&h, live, "after a restart");
	harness_cleanup(&h);
	free(m);
}
END_TEST

static const char body_a[] = "Oil prices rose sharply on Monday after the "
    "cartel agreed to cut output by two million barrels a day, traders "
    "said, while refiners warned of shortages in the winter months";
/* body_a with one more word: a near copy (at distance 2). */
static const char body_b[] = "Oil prices rose sharply on Monday morning "
    "after the cartel agreed to cut output by two million barrels a day, "
    "traders said, while refiners warned of shortages in the winter months";

/*
 * One URL, one body, three namespaces: a new document in each, none a
 * neighbour of another nor in its group; a get, query or delete in one
 * never sees the others'; the default namespace's document, stored
 * before the others, is untouched by them and by a restart.
 */
START_TEST(test_same_document_in_three_namespaces)
{
	static const char url[] = "http://news.example/oil";
	static const char url2[] = "http://news.example/oil-2";
	struct harness h;
	Nddd__V1__Response *r;
	Nddd__V1__DocResult *doc;
	uint64_t id_def, id_a, id_b, id2_a;

	harness_init(&h, NULL);
	harness_start(&h);
	r = submit(&h, "", url, body_a);
	doc = doc_of(r);
	ck_assert(doc->created);
	id_def = doc->doc_id;
	nddd__v1__response__free_unpacked(r, NULL);
	/* A restart: the default namespace's document was stored before
	 * any named one existed. */
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_start(&h);

	r = submit(&h, "a", url, body_a);
	doc = doc_of(r);
	ck_assert(doc->created);
	ck_assert_uint_ne(doc->doc_id, id_def);
	ck_assert_uint_eq(doc->group, doc->doc_id);
	ck_assert_uint_eq(doc->near_total, 0);
	id_a = doc->doc_id;
	nddd__v1__response__free_unpacked(r, NULL);
	r = submit(&h, "b", url, body_a);
	doc = doc_of(r);
	ck_assert(doc->created);
	ck_assert_uint_eq(doc->group, doc->doc_id);
	ck_assert_uint_eq(doc->near_total, 0);
	id_b = doc->doc_id;
	nddd__v1__response__free_unpacked(r, NULL);
	ck_assert_uint_ne(id_a, id_b);

	/* A near copy in a joins a's group, with a's document its only
	 * neighbour; asked only, in b, it would join b's. */
	r = submit(&h, "a", url2, body_b);
	doc = doc_of(r);
	ck_assert(doc->created);
	ck_assert_uint_eq(doc->group, id_a);
	ck_assert_uint_eq(doc->near_total, 1);
	ck_assert_uint_eq(doc->near[0]->doc_id, id_a);
	id2_a = doc->doc_id;
	nddd__v1__response__free_unpacked(r, NULL);
	r = submit_as(&h, NULL, "b", url2, body_b, true);
	doc = doc_of(r);
	ck_assert_uint_eq(doc->doc_id, 0);
	ck_assert_uint_eq(doc->group, id_b);
	ck_assert_uint_eq(doc->near_total, 1);
	ck_assert_uint_eq(doc->near[0]->doc_id, id_b);
	nddd__v1__response__free_unpacked(r, NULL);

	/* Gets and queries see their own namespace only. */
	r = ref_as(&h, NULL, false, "", url);
	doc = doc_of(r);
	ck_assert_uint_eq(doc->doc_id, id_def);
	ck_assert_uint_eq(doc->group, id_def);
	ck_assert_uint_eq(doc->near_total, 0);
	nddd__v1__response__free_unpacked(r, NULL);
	r = ref_as(&h, NULL, false, "a", url);
	doc = doc_of(r);
	ck_assert_uint_eq(doc->doc_id, id_a);
	ck_assert_uint_eq(doc->near_total, 1);
	ck_assert_uint_eq(doc->near[0]->doc_id, id2_a);
	nddd__v1__response__free_unpacked(r, NULL);
	expect_code(ref_as(&h, NULL, false, "b", url2),
	    NDDD__V1__CODE__NOT_FOUND, NULL);
	expect_code(ref_as(&h, NULL, false, "nobody", url),
	    NDDD__V1__CODE__NOT_FOUND, NULL);
	r = query_as(&h, NULL, "b", 0, body_b);
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->doc_query->near_total, 1);
	ck_assert_uint_eq(r->doc_query->near[0]->doc_id, id_b);
	nddd__v1__response__free_unpacked(r, NULL);
	r = query_as(&h, NULL, "nobody", 0, body_a);
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->doc_query->near_total, 0);
	nddd__v1__response__free_unpacked(r, NULL);

	/* A delete in a leaves b's and the default's. */
	r = ref_as(&h, NULL, true, "nobody", url);
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->doc_delete->doc_id, 0);
	nddd__v1__response__free_unpacked(r, NULL);
	r = ref_as(&h, NULL, true, "a", url);
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->doc_delete->doc_id, id_a);
	nddd__v1__response__free_unpacked(r, NULL);
	expect_code(ref_as(&h, NULL, false, "a", url),
	    NDDD__V1__CODE__NOT_FOUND, NULL);
	r = ref_as(&h, NULL, false, "b", url);
	ck_assert_uint_eq(doc_of(r)->doc_id, id_b);
	nddd__v1__response__free_unpacked(r, NULL);
	assert_consistent(&h, 3, "after the delete");

	ck_assert_int_eq(harness_stop(&h), 0);
	harness_start(&h);
	r = ref_as(&h, NULL, false, "", url);
	doc = doc_of(r);
	ck_assert_uint_eq(doc->doc_id, id_def);
	ck_assert_uint_eq(doc->group, id_def);
	ck_assert_uint_eq(doc->near_total, 0);
	nddd__v1__response__free_unpacked(r, NULL);
	r = ref_as(&h, NULL, false, "a", url2);
	doc = doc_of(r);
	ck_assert_uint_eq(doc->doc_id, id2_a);
	ck_assert_uint_eq(doc->group, id_a);
	ck_assert_uint_eq(doc->near_total, 0);
	nddd__v1__response__free_unpacked(r, NULL);
	assert_consistent(&h, 3, "after a restart");
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_bad_namespace_names)
{
	static const char *const bad[] = { "not/ok", "sp ace", "caf\xc3\xa9",
	    "0123456789012345678901234567890123456789012345678901234567890123"
	    "4" };
	const char *nss[3], *urls[3] = { "http://x.example/1",
	    "http://x.example/2", "http://x.example/3" };
	const char *bodies[3] = { body_a, body_a, "" };
	struct harness h;
	Nddd__V1__Response *r;

	harness_init(&h, NULL);
	harness_start(&h);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		expect_code(submit(&h, bad[i], urls[0], body_a),
		    NDDD__V1__CODE__INVALID_ARGUMENT, "namespace");
		expect_code(ref_as(&h, NULL, false, bad[i], urls[0]),
		    NDDD__V1__CODE__INVALID_ARGUMENT, "namespace");
		expect_code(ref_as(&h, NULL, true, bad[i], urls[0]),
		    NDDD__V1__CODE__INVALID_ARGUMENT, "namespace");
		expect_code(query_as(&h, NULL, bad[i], 1, NULL),
		    NDDD__V1__CODE__INVALID_ARGUMENT, "namespace");
		/* In a batch, only that document fails. */
		nss[0] = "ok";
		nss[1] = bad[i];
		nss[2] = "ok";
		r = batch_as(&h, NULL, 3, nss, urls, bodies);
		ck_assert_ptr_null(r->status);
		ck_assert_uint_eq(r->docs->n_docs, 3);
		ck_assert_uint_eq(r->docs->n_errors, 2);
		ck_assert_uint_eq(r->docs->errors[0]->index, 1);
		ck_assert_int_eq(r->docs->errors[0]->status->code,
		    NDDD__V1__CODE__INVALID_ARGUMENT);
		ck_assert_uint_eq(r->docs->errors[1]->index, 2);
		ck_assert_int_eq(r->docs->errors[1]->status->code,
		    NDDD__V1__CODE__EMPTY_DOCUMENT);
		ck_assert_uint_ne(r->docs->docs[0]->doc_id, 0);
		nddd__v1__response__free_unpacked(r, NULL);
	}
	assert_consistent(&h, 1, "after the refusals");
	harness_cleanup(&h);
}
END_TEST

#define CRAWL_TOKEN	"crawl-a-token-0123456789"
#define ADMIN_TOKEN	"admin-token-0123456789"

/* A token limited to namespace a reads and writes a's documents only. */
START_TEST(test_tokens_limited_to_namespaces)
{
	const char *urls[2] = { "http://t.example/1", "http://t.example/2" };
	const char *bodies[2] = { body_a, body_b };
	const char *nss[2];
	struct harness h;
	Nddd__V1__Response *r;
	char *path, conf[512];
	FILE *f;

	harness_init(&h, NULL);
	ck_assert_int_ne(asprintf(&path, "%s/tokens", h.dir), -1);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(CRAWL_TOKEN " write namespaces=a\n" ADMIN_TOKEN " admin\n", f);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(conf, sizeof(conf), "[auth]\ntokens_file = %s\n", path);
	harness_add_conf(&h, conf);
	harness_start(&h);

	r = submit_as(&h, ADMIN_TOKEN, "b", urls[0], body_a, false);
	ck_assert(doc_of(r)->created);
	nddd__v1__response__free_unpacked(r, NULL);
	r = submit_as(&h, CRAWL_TOKEN, "a", urls[0], body_a, false);
	ck_assert(doc_of(r)->created);
	nddd__v1__response__free_unpacked(r, NULL);
	/* Nothing of b, nor of the default namespace. */
	expect_code(submit_as(&h, CRAWL_TOKEN, "b", urls[1], body_a, false),
	    NDDD__V1__CODE__PERMISSION_DENIED, "does not reach");
	expect_code(submit_as(&h, CRAWL_TOKEN, "", urls[1], body_a, true),
	    NDDD__V1__CODE__PERMISSION_DENIED, "does not reach");
	expect_code(ref_as(&h, CRAWL_TOKEN, false, "b", urls[0]),
	    NDDD__V1__CODE__PERMISSION_DENIED, "does not reach");
	expect_code(query_as(&h, CRAWL_TOKEN, "b", 0, body_a),
	    NDDD__V1__CODE__PERMISSION_DENIED, "does not reach");
	/* Its role within a: no deletes. */
	expect_code(ref_as(&h, CRAWL_TOKEN, true, "a", urls[0]),
	    NDDD__V1__CODE__PERMISSION_DENIED, "role");
	r = ref_as(&h, CRAWL_TOKEN, false, "a", urls[0]);
	ck_assert_uint_eq(doc_of(r)->near_total, 0);
	nddd__v1__response__free_unpacked(r, NULL);
	/* A batch must stay within a, every document of it. */
	nss[0] = "a";
	nss[1] = "b";
	expect_code(batch_as(&h, CRAWL_TOKEN, 2, nss, urls, bodies),
	    NDDD__V1__CODE__PERMISSION_DENIED, "does not reach");
	nss[1] = "a";
	r = batch_as(&h, CRAWL_TOKEN, 2, nss, urls, bodies);
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->docs->n_errors, 0);
	ck_assert_uint_eq(r->docs->docs[1]->near_total, 1);
	nddd__v1__response__free_unpacked(r, NULL);
	/* b holds one document still, unseen by the batch. */
	r = ref_as(&h, ADMIN_TOKEN, false, "b", urls[0]);
	ck_assert_uint_eq(doc_of(r)->near_total, 0);
	nddd__v1__response__free_unpacked(r, NULL);
	expect_code(ref_as(&h, ADMIN_TOKEN, false, "b", urls[1]),
	    NDDD__V1__CODE__NOT_FOUND, NULL);
	free(path);
	harness_cleanup(&h);
}
END_TEST

/* The namespace_drop of name, which must be answered. */
static Nddd__V1__NamespaceInfo *
drop_ns(const struct harness *h, const char *name, Nddd__V1__Response **r)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__NamespaceDrop nd = NDDD__V1__NAMESPACE_DROP__INIT;

	nd.name = (char *)name;
	req.op_case = NDDD__V1__REQUEST__OP_NAMESPACE_DROP;
	req.namespace_drop = &nd;
	*r = call_as(h, NULL, &req);
	ck_assert_msg((*r)->status == NULL, "drop refused: %s",
	    (*r)->status ? (*r)->status->message : "");
	ck_assert_int_eq((*r)->result_case,
	    NDDD__V1__RESPONSE__RESULT_NAMESPACE);
	return (*r)->namespace_;
}

static Nddd__V1__StatsResult *
stats_of(const struct harness *h, Nddd__V1__Response **r)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__StatsRequest sr = NDDD__V1__STATS_REQUEST__INIT;

	req.op_case = NDDD__V1__REQUEST__OP_STATS;
	req.stats = &sr;
	*r = call_as(h, NULL, &req);
	ck_assert_ptr_null((*r)->status);
	return (*r)->stats;
}

/* The documents stats count in namespace name (-1: not listed). */
static int64_t
ns_docs(const struct harness *h, const char *name)
{
	Nddd__V1__Response *r;
	Nddd__V1__StatsResult *st = stats_of(h, &r);
	int64_t n = -1;

	for (size_t i = 0; i < st->n_namespaces; i++)
		if (strcmp(st->namespaces[i]->name, name) == 0)
			n = (int64_t)st->namespaces[i]->docs;
	nddd__v1__response__free_unpacked(r, NULL);
	return n;
}

/* Waits (up to 60 s) until no dropped namespace's document is left. */
static void
wait_docs_dropped(const struct harness *h)
{
	for (int i = 0; i < 1200; i++) {
		Nddd__V1__Response *r;
		uint64_t left = stats_of(h, &r)->docs_dropping;

		nddd__v1__response__free_unpacked(r, NULL);
		if (left == 0)
			return;
		usleep(50 * 1000);
	}
	ck_abort_msg("the dropped namespace's documents are still there");
}

/* Stores n documents in namespace ns through libnddd's doc batches: at
 * http://HOST/i, bodies of base i % 7, changed at i. */
static void
store_many(const struct harness *h, const char *ns, const char *host,
    size_t n)
{
	nddd_client *c = harness_client(h);
	struct nddd_doc_item *items = calloc(n, sizeof(*items));
	struct nddd_doc *res = calloc(n, sizeof(*res));
	char **urls = calloc(n, sizeof(*urls)), **bodies = calloc(n,
	    sizeof(*bodies));
	uint64_t rng = n;

	for (size_t i = 0; i < n; i++) {
		ck_assert_int_ne(asprintf(&urls[i], "http://%s/%zu", host, i),
		    -1);
		bodies[i] = make_body(i % 7, 300, 1, &rng);
		items[i].url = urls[i];
		items[i].url_len = strlen(urls[i]);
		items[i].body = bodies[i];
		items[i].body_len = strlen(bodies[i]);
	}
	ck_assert_int_eq(nddd_set_doc_namespace(c, ns), 0);
	ck_assert_int_eq(nddd_docs(c, items, n, res, 256, 4, NULL, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(res[i].code == NDDD_OK, "%s", res[i].message);
		ck_assert(res[i].created);
		free(urls[i]);
		free(bodies[i]);
	}
	nddd_docs_results_free(res, n);
	free(res);
	free(items);
	free(urls);
	free(bodies);
	nddd_close(c);
}

/* The id and group of the document of url in ns (0, 0: none). */
static void
doc_at(const struct harness *h, const char *ns, const char *url,
    uint64_t *id, uint64_t *group)
{
	Nddd__V1__Response *r = ref_as(h, NULL, false, ns, url);

	*id = *group = 0;
	if (r->status != NULL)
		ck_assert_int_eq(r->status->code, NDDD__V1__CODE__NOT_FOUND);
	else {
		*id = r->doc->doc_id;
		*group = r->doc->group;
	}
	nddd__v1__response__free_unpacked(r, NULL);
}

/* How a drop is interrupted. */
enum interruption {
	GOES_ON,	/* it is not */
	KILLED,		/* kill -9 right after its answer */
	STOPPED,	/* SIGTERM right after its answer */
};

/*
 * 2,000 documents in "gone" (and URLs), 300 in "kept" and 300 in the
 * default namespace, of the same few stories; "gone" is dropped, and the
 * daemon interrupted right after the drop's answer as how says (steps of
 * 16 documents, 20 ms apart, make it midway), then started again: its
 * documents are gone at once for every reader, a document stored under
 * its name is new, and once they are forgotten verify agrees, stats count
 * none of the old ones, and the others are what they were.
 */
static void
drop_case(enum interruption how)
{
	struct harness h;
	uint64_t kept_id[300], kept_group[300], def_id[300], def_group[300];
	uint64_t id, group;
	Nddd__V1__Response *r;
	Nddd__V1__NamespaceInfo *info;
	char url[64], *log;
	nddd_client *c;
	const char *urls[2] = { "http://gone.example/u1",
	    "http://gone.example/u2" };
	struct nddd_url_result ures[2];

	setenv("NDDD_TEST_DOCDROP", "16,20", 1);
	harness_init(&h, NULL);
	harness_start(&h);
	store_many(&h, "", "default.example", 300);
	store_many(&h, "gone", "gone.example", 2000);
	store_many(&h, "kept", "kept.example", 300);
	c = harness_client(&h);
	ck_assert_int_eq(nddd_set_url_opts(c, &(struct nddd_url_opts){
	    .ns = "gone" }), 0);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, urls, 2, ures, 2, 1,
	    NULL, NULL), 0);
	nddd_urls_results_free(ures, 2);
	nddd_close(c);
	for (int i = 0; i < 300; i++) {
		snprintf(url, sizeof(url), "http://kept.example/%d", i);
		doc_at(&h, "kept", url, &kept_id[i], &kept_group[i]);
		snprintf(url, sizeof(url), "http://default.example/%d", i);
		doc_at(&h, "", url, &def_id[i], &def_group[i]);
		ck_assert_uint_ne(kept_id[i] * def_id[i], 0);
	}
	ck_assert_int_eq(ns_docs(&h, "gone"), 2000);

	info = drop_ns(&h, "gone", &r);
	ck_assert_uint_eq(info->docs, 2000);
	ck_assert_uint_eq(info->urls, 2);
	nddd__v1__response__free_unpacked(r, NULL);
	if (how != GOES_ON) {
		if (how == KILLED)
			harness_kill(&h);
		else
			ck_assert_int_eq(harness_stop(&h), 0);
		harness_start(&h);
		log = tu_read_file(h.log_path, NULL);
		ck_assert_msg(log != NULL && strstr(log, "resuming the "
		    "forgetting of the documents of 1 dropped") != NULL,
		    "not resumed: %s", log ? log : "");
		free(log);
	}
	/* Gone at once for every reader; its name starts empty. */
	doc_at(&h, "gone", "http://gone.example/5", &id, &group);
	ck_assert_uint_eq(id, 0);
	r = query_as(&h, NULL, "gone", 0, body_a);
	ck_assert_uint_eq(r->doc_query->near_total, 0);
	nddd__v1__response__free_unpacked(r, NULL);
	ck_assert_int_le(ns_docs(&h, "gone"), 0);
	store_many(&h, "gone", "gone.example", 3);
	/* Its story had 285 copies among the old ones: none is a
	 * neighbour, nor gives it a group. */
	r = ref_as(&h, NULL, false, "gone", "http://gone.example/1");
	ck_assert_uint_eq(doc_of(r)->near_total, 0);
	ck_assert_uint_eq(doc_of(r)->group, doc_of(r)->doc_id);
	ck_assert_uint_gt(doc_of(r)->doc_id, 2600);
	nddd__v1__response__free_unpacked(r, NULL);
	/* The last of the old ones, still there when the drop is slow:
	 * replaced by a new document. */
	r = submit(&h, "gone", "http://gone.example/1999", body_a);
	ck_assert(doc_of(r)->created);
	ck_assert_uint_gt(doc_of(r)->doc_id, 2600);
	ck_assert_uint_eq(doc_of(r)->near_total, 0);
	nddd__v1__response__free_unpacked(r, NULL);
	assert_consistent(&h, ANY_COUNT, "during the drop");
	expect_code(drop_ns_refused(&h, "nothing"), NDDD__V1__CODE__NOT_FOUND,
	    NULL);

	wait_docs_dropped(&h);
	ck_assert_int_eq(ns_docs(&h, "gone"), 4);
	assert_consistent(&h, 604, "after the drop");
	for (int i = 0; i < 300; i++) {
		snprintf(url, sizeof(url), "http://kept.example/%d", i);
		doc_at(&h, "kept", url, &id, &group);
		ck_assert_uint_eq(id, kept_id[i]);
		ck_assert_uint_eq(group, kept_group[i]);
		snprintf(url, sizeof(url), "http://default.example/%d", i);
		doc_at(&h, "", url, &id, &group);
		ck_assert_uint_eq(id, def_id[i]);
		ck_assert_uint_eq(group, def_group[i]);
	}
	ck_assert_int_eq(ns_docs(&h, "kept"), 300);
	ck_assert_int_eq(ns_docs(&h, ""), 300);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_start(&h);
	assert_consistent(&h, 604, "after a restart");
	ck_assert_int_eq(ns_docs(&h, "gone"), 4);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	unsetenv("NDDD_TEST_DOCDROP");
}

START_TEST(test_drop_namespace)
{
	drop_case(GOES_ON);
}
END_TEST

START_TEST(test_drop_namespace_killed_midway)
{
	drop_case(KILLED);
}
END_TEST

START_TEST(test_drop_namespace_stopped_midway)
{
	drop_case(STOPPED);
}
END_TEST

Suite *docns_suite(void);

Suite *
docns_suite(void)
{
	Suite *s = suite_create("docns");
	TCase *tc = tcase_create("docns");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_same_document_in_three_namespaces);
	tcase_add_test(tc, test_namespaces_are_separate_sets);
	tcase_add_test(tc, test_bad_namespace_names);
	tcase_add_test(tc, test_tokens_limited_to_namespaces);
	tcase_add_test(tc, test_drop_namespace);
	tcase_add_test(tc, test_drop_namespace_killed_midway);
	tcase_add_test(tc, test_drop_namespace_stopped_midway);
	suite_add_tcase(s, tc);
	return s;
}
