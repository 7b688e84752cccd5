/*
 * Integration tests of doc_batch, the bulk document operation, with the
 * real daemon and raw protocol frames:
 *  - a sequence of Reuters bodies and L3S-GN1 pages, with stored and
 *    query_only documents, an empty one, a bad URL and a re-submitted URL,
 *    sent in batches gets, document by document, what the same sequence
 *    sent one doc_submit at a time to another daemon gets (ids, groups,
 *    neighbours, errors), and every fingerprint is the naive reference's:
 *    on the cpu engine (fingerprinted by the request workers) and on the
 *    test plugin (through the loop and the accelerator);
 *  - what is acknowledged survives kill -9;
 *  - a document with more neighbours than its share of the reply lists
 *    the nearest, and counts them all;
 *  - bad batches (too many documents, a reply that could pass max_frame)
 *    are refused whole and change nothing; a read token may send a batch
 *    of queries only.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corpus.h"
#include "docfp.h"
#include "harness.h"
#include "simhash_ref.h"
#include "stopwords.h"
#include "testutil.h"

/* Documents per batch in the sequence tests. */
#define BATCH 64

/* One document of a test sequence. */
struct tdoc {
	char url[96];
	const char *body;
	size_t len;
	int html;
	int query_only;
};

/* What a document got: an error code, or its result. */
struct tres {
	int code;
	uint64_t id, fp, group, total;
	int created;
	uint64_t created_ms, stored_id;
	size_t nnear;
	uint64_t near_id[8];
	unsigned near_dist[8];
};

static struct corpus *
load_corpus(const char *rel, int html)
{
	char *dir = tu_data_path(rel);
	struct corpus *c = html ? corpus_files(dir, ".html") :
	    corpus_reuters(dir, 0);

	free(dir);
	ck_assert_ptr_nonnull(c);
	return c;
}

/*
 * n documents: Reuters bodies, every 10th an L3S page (HTML), every 7th
 * query_only; an empty one, a bad URL, a URL submitted again with another
 * body, and a query under a stored URL (not its own neighbour).
 */
static struct tdoc *
make_sequence(const struct corpus *text, const struct corpus *html, size_t n)
{
	struct tdoc *d = calloc(n, sizeof(*d));

	for (size_t i = 0; i < n; i++) {
		snprintf(d[i].url, sizeof(d[i].url),
		    "http://batch.example/doc/%zu", i);
		if (i % 10 == 3) {
			const struct corpus_doc *p = &html->docs[i % html->n];

			d[i].body = p->data;
			d[i].len = p->len;
			d[i].html = 1;
		} else {
			/* Repeats of earlier bodies: neighbours and groups. */
			const struct corpus_doc *p = &text->docs[i % 400];

			d[i].body = p->data;
			d[i].len = p->len;
		}
		d[i].query_only = i % 7 == 6;
	}
	d[5].body = "  the, a! <> ";
	d[5].len = strlen(d[5].body);
	snprintf(d[9].url, sizeof(d[9].url), "mailto:someone");
	snprintf(d[13].url, sizeof(d[13].url), "http://batch.example/doc/2");
	d[13].query_only = 0;
	snprintf(d[20].url, sizeof(d[20].url), "http://batch.example/doc/1");
	d[20].query_only = 1;
	return d;
}

static void
fill_submit(Nddd__V1__DocSubmit *s, const struct tdoc *d)
{
	nddd__v1__doc_submit__init(s);
	s->url.data = (uint8_t *)d->url;
	s->url.len = strlen(d->url);
	s->body.data = (uint8_t *)d->body;
	s->body.len = d->len;
	s->format = d->html ? NDDD__V1__DOC_FORMAT__HTML :
	    NDDD__V1__DOC_FORMAT__TEXT;
	s->query_only = d->query_only;
}

static void
result_of(struct tres *t, const Nddd__V1__DocResult *r)
{
	t->code = 0;
	t->id = r->doc_id;
	t->fp = r->simhash;
	t->group = r->group;
	t->total = r->near_total;
	t->created = r->created;
	t->created_ms = r->created_ms;
	t->stored_id = r->stored_id;
	t->nnear = r->n_near;
	for (size_t j = 0; j < r->n_near && j < 8; j++) {
		t->near_id[j] = r->near[j]->doc_id;
		t->near_dist[j] = r->near[j]->distance;
	}
}

/* Sends d[0..n) in doc_batch requests of BATCH, one at a time. */
static void
run_batches(const struct harness *h, const struct tdoc *d, size_t n,
    struct tres *out)
{
	Nddd__V1__DocSubmit subs[BATCH], *subv[BATCH];

	for (size_t first = 0; first < n; first += BATCH) {
		Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
		Nddd__V1__DocBatch db = NDDD__V1__DOC_BATCH__INIT;
		Nddd__V1__Response *r;
		size_t m = n - first < BATCH ? n - first : BATCH;

		for (size_t j = 0; j < m; j++) {
			fill_submit(&subs[j], &d[first + j]);
			subv[j] = &subs[j];
		}
		db.n_docs = m;
		db.docs = subv;
		req.id = first + 1;
		req.op_case = NDDD__V1__REQUEST__OP_DOC_BATCH;
		req.doc_batch = &db;
		r = harness_raw_call(h, &req);
		ck_assert_msg(r->status == NULL, "batch at %zu refused: %s",
		    first, r->status ? r->status->message : "");
		ck_assert_uint_eq(r->id, first + 1);
		ck_assert_int_eq(r->result_case,
		    NDDD__V1__RESPONSE__RESULT_DOCS);
		ck_assert_uint_eq(r->docs->n_docs, m);
		for (size_t j = 0; j < m; j++)
			result_of(&out[first + j], r->docs->docs[j]);
		for (size_t e = 0; e < r->docs->n_errors; e++) {
			const Nddd__V1__ItemError *ie = r->docs->errors[e];

			ck_assert_uint_lt(ie->index, m);
			ck_assert_uint_eq(r->docs->docs[ie->index]->doc_id, 0);
			out[first + ie->index].code = ie->status->code;
		}
		nddd__v1__response__free_unpacked(r, NULL);
	}
}

/* Sends d[0..n) one doc_submit at a time, through the client library. */
static void
run_singles(const struct harness *h, const struct tdoc *d, size_t n,
    struct tres *out)
{
	nddd_client *c = harness_client(h);

	for (size_t i = 0; i < n; i++) {
		struct nddd_reply *r;
		uint64_t id;

		ck_assert_int_eq(nddd_send_doc_submit(c, d[i].url,
		    strlen(d[i].url), d[i].body, d[i].len, d[i].html ?
		    NDDD_HTML : NDDD_TEXT, d[i].query_only, &id), 0);
		r = nddd_call(c, id);
		ck_assert_ptr_nonnull(r);
		memset(&out[i], 0, sizeof(out[i]));
		if (r->kind != NDDD_REPLY_DOC)
			out[i].code = r->code;
		else {
			out[i].id = r->doc.doc_id;
			out[i].fp = r->doc.simhash;
			out[i].group = r->doc.group;
			out[i].total = r->doc.near_total;
			out[i].created = r->doc.created;
			out[i].created_ms = r->doc.created_ms;
			out[i].stored_id = r->doc.stored_id;
			out[i].nnear = r->doc.nnear;
			for (size_t j = 0; j < r->doc.nnear && j < 8; j++) {
				out[i].near_id[j] = r->doc.near[j].doc_id;
				out[i].near_dist[j] = r->doc.near[j].distance;
			}
		}
		nddd_reply_free(r);
	}
	nddd_close(c);
}

/*
 * The reference's fingerprint of d: of its text, or of a page's main
 * content (what the daemon judges it by, [text] html = main).
 */
static int
expected_simhash(struct docfp_scratch *fx, const struct tdoc *d,
    const struct ref_stopwords *rsw, uint64_t *fp)
{
	enum docfp_content content;
	enum simhash_input in;
	const uint8_t *text;
	size_t len;

	ck_assert_int_eq(docfp_text(fx, true, d->html ? SIMHASH_INPUT_HTML :
	    SIMHASH_INPUT_TEXT, d->body, d->len, &in, &text, &len, &content),
	    0);
	return ref_simhash((const char *)text, len, in == SIMHASH_INPUT_HTML, 0,
	    rsw, fp);
}

/*
 * Each stored document's first time, kept by a re-submit; a query under
 * a stored URL names that document and its time, other queries none.
 */
static void
check_times(const struct tdoc *d, const struct tres *r, size_t n)
{
	uint64_t last = 0;

	for (size_t i = 0; i < n; i++) {
		if (r[i].code != 0)
			continue;
		if (d[i].query_only) {
			ck_assert_uint_eq(r[i].stored_id, i == 20 ? r[1].id : 0);
			ck_assert_uint_eq(r[i].created_ms, i == 20 ?
			    r[1].created_ms : 0);
		} else if (r[i].created) {
			ck_assert_uint_ge(r[i].created_ms, last);
			last = r[i].created_ms;
			ck_assert_uint_eq(r[i].stored_id, 0);
		}
	}
	ck_assert_uint_ne(r[1].created_ms, 0);
	ck_assert_uint_eq(r[13].created_ms, r[2].created_ms);
}

/* _i: 0 on the cpu engine, 1 on the test plugin. */
START_TEST(test_batches_equal_singles)
{
	struct docfp_scratch *fx = docfp_scratch_new();
	struct corpus *text = load_corpus("text_corpora/reuters21578", 0);
	struct corpus *html = load_corpus("text_corpora/l3s_gn1_html/original",
	    1);
	const size_t n = 1000;
	struct tdoc *d = make_sequence(text, html, n);
	struct tres *got = calloc(n, sizeof(*got));
	struct tres *want = calloc(n, sizeof(*want));
	char *stop = tu_source_path("conf/stopwords.txt"), *cause = NULL;
	char conf[1024], *dir = NULL;
	struct stopwords *sw = stopwords_load(stop, &cause);
	struct ref_stopwords *rsw;
	struct harness a, b;
	struct nddd_stats st;
	nddd_client *c;
	size_t stored = 0;

	ck_assert_ptr_nonnull(sw);
	rsw = ref_stopwords_new(stopwords_list(sw));
	harness_init(&a, NULL);
	harness_init(&b, NULL);
	snprintf(conf, sizeof(conf), "[simhash]\nstopwords = %s\n", stop);
	harness_add_conf(&a, conf);
	harness_add_conf(&b, conf);
	if (_i == 1) {
		dir = harness_plugin_dir(&a, "test", "test", 0755);
		snprintf(conf, sizeof(conf), "[accel]\naccelerator = test\n"
		    "plugin_dir = %s\n", dir);
		harness_add_conf(&a, conf);
	}
	harness_start(&a);
	harness_start(&b);
	run_batches(&a, d, n, got);
	run_singles(&b, d, n, want);

	ck_assert_int_eq(want[5].code, NDDD_EMPTY_DOCUMENT);
	ck_assert_int_eq(want[9].code, NDDD_INVALID_ARGUMENT);
	ck_assert_int_eq(want[13].code, 0);
	ck_assert(!want[13].created);
	ck_assert_uint_eq(want[13].id, want[2].id);
	check_times(d, got, n);
	check_times(d, want, n);
	for (size_t i = 0; i < n; i++) {
		uint64_t fp;

		ck_assert_msg(got[i].code == want[i].code,
		    "document %zu: code %d in a batch, %d alone", i,
		    got[i].code, want[i].code);
		if (want[i].code != 0)
			continue;
		ck_assert_int_eq(expected_simhash(fx, &d[i], rsw, &fp), 0);
		ck_assert_msg(got[i].fp == fp, "document %zu: %016llx, the "
		    "reference says %016llx", i, (unsigned long long)got[i].fp,
		    (unsigned long long)fp);
		ck_assert_uint_eq(got[i].fp, want[i].fp);
		ck_assert_uint_eq(got[i].id, want[i].id);
		ck_assert_msg(got[i].group == want[i].group,
		    "document %zu: group %llu in a batch, %llu alone", i,
		    (unsigned long long)got[i].group,
		    (unsigned long long)want[i].group);
		ck_assert_uint_eq(got[i].total, want[i].total);
		ck_assert_int_eq(got[i].created, want[i].created);
		/* The batch lists the nearest that fit its share. */
		ck_assert_uint_le(got[i].nnear, want[i].nnear);
		ck_assert_uint_ge(got[i].nnear, want[i].nnear < 8 ?
		    want[i].nnear : 8);
		for (size_t j = 0; j < got[i].nnear && j < 8; j++) {
			ck_assert_uint_eq(got[i].near_id[j], want[i].near_id[j]);
			ck_assert_uint_eq(got[i].near_dist[j],
			    want[i].near_dist[j]);
		}
		if (!d[i].query_only && got[i].created)
			stored++;
	}
	/* The query under a stored URL is not its own neighbour. */
	for (size_t j = 0; j < got[20].nnear && j < 8; j++)
		ck_assert_uint_ne(got[20].near_id[j], got[1].id);
	c = harness_client(&a);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_uint_eq(st.docs, stored);
	ck_assert_str_eq(st.accel_backend, _i == 1 ? "test" : "cpu");
	nddd_close(c);

	/* Acknowledged is durable: kill -9, restart, every one is there. */
	harness_kill(&a);
	harness_start(&a);
	c = harness_client(&a);
	for (size_t i = 0; i < n; i++) {
		struct nddd_reply *r;
		uint64_t id;

		if (got[i].code != 0 || d[i].query_only)
			continue;
		ck_assert_int_eq(nddd_send_doc_get(c, d[i].url,
		    strlen(d[i].url), &id), 0);
		r = nddd_call(c, id);
		ck_assert_int_eq(r->kind, NDDD_REPLY_DOC);
		ck_assert_uint_eq(r->doc.doc_id, got[i].id);
		nddd_reply_free(r);
	}
	nddd_close(c);
	harness_cleanup(&a);
	harness_cleanup(&b);
	ref_stopwords_free(rsw);
	stopwords_free(sw);
	free(dir);
	free(stop);
	free(got);
	free(want);
	free(d);
	corpus_free(text);
	corpus_free(html);
	docfp_scratch_free(fx);
}
END_TEST

/* One batch of n copies of body under distinct URLs. */
static Nddd__V1__Response *
copies(const struct harness *h, const char *body, size_t n, int query_only,
    const char *token)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__DocBatch db = NDDD__V1__DOC_BATCH__INIT;
	Nddd__V1__DocSubmit *subs = calloc(n, sizeof(*subs));
	Nddd__V1__DocSubmit **subv = calloc(n, sizeof(*subv));
	char (*urls)[64] = calloc(n, sizeof(*urls));
	Nddd__V1__Response *r;

	for (size_t i = 0; i < n; i++) {
		struct tdoc d = { .body = body, .len = strlen(body),
		    .query_only = query_only };

		snprintf(d.url, sizeof(d.url), "http://copies.example/%zu", i);
		fill_submit(&subs[i], &d);
		memcpy(urls[i], d.url, sizeof(urls[i]));
		subs[i].url.data = (uint8_t *)urls[i];
		subv[i] = &subs[i];
	}
	db.n_docs = n;
	db.docs = subv;
	req.id = 7;
	req.op_case = NDDD__V1__REQUEST__OP_DOC_BATCH;
	req.doc_batch = &db;
	req.token = (char *)(token != NULL ? token : "");
	r = harness_raw_call(h, &req);
	free(subs);
	free(subv);
	free(urls);
	return r;
}

START_TEST(test_batch_reply_cut_and_limits)
{
	const char *body = "a wire story copied by every paper in the land";
	struct harness h;
	Nddd__V1__Response *r;
	nddd_client *c;
	struct nddd_stats st;
	char conf[256];

	harness_init(&h, "[server]\nmax_frame = 1M\n");
	ck_assert_int_ne(snprintf(conf, sizeof(conf), "[auth]\ntokens_file = "
	    "%s/tokens\n", h.dir), -1);
	{
		char *path;
		FILE *f;

		ck_assert_int_ne(asprintf(&path, "%s/tokens", h.dir), -1);
		ck_assert_ptr_nonnull(f = fopen(path, "w"));
		fputs("read-token-0123456789 read\n"
		    "write-token-0123456789 write\n", f);
		fclose(f);
		free(path);
	}
	harness_add_conf(&h, conf);
	harness_start(&h);

	/* 300 copies: the last has 299 neighbours; its share lists the
	 * nearest that fit in 1 KiB and counts them all. */
	r = copies(&h, body, 300, 0, "write-token-0123456789");
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->docs->n_docs, 300);
	ck_assert_uint_eq(r->docs->n_errors, 0);
	for (size_t i = 0; i < 300; i++) {
		const Nddd__V1__DocResult *d = r->docs->docs[i];

		ck_assert_uint_eq(d->doc_id, i + 1);
		ck_assert_uint_eq(d->group, 1);
		ck_assert_uint_eq(d->near_total, i);
		ck_assert_uint_le(nddd__v1__doc_result__get_packed_size(d),
		    1024);
		ck_assert_uint_eq(d->url.len, 0);
		/* Oldest first among equals. */
		for (size_t j = 0; j < d->n_near; j++)
			ck_assert_uint_eq(d->near[j]->doc_id, j + 1);
	}
	ck_assert_uint_ge(r->docs->docs[299]->n_near, 8);
	ck_assert_uint_le(r->docs->docs[299]->n_near, 24);
	nddd__v1__response__free_unpacked(r, NULL);

	/* A read token: queries only. */
	r = copies(&h, body, 3, 1, "read-token-0123456789");
	ck_assert_ptr_null(r->status);
	ck_assert_uint_eq(r->docs->docs[2]->doc_id, 0);
	/* A query under a stored URL: the copy itself is left out. */
	ck_assert_uint_eq(r->docs->docs[2]->near_total, 299);
	nddd__v1__response__free_unpacked(r, NULL);
	r = copies(&h, body, 3, 0, "read-token-0123456789");
	ck_assert_ptr_nonnull(r->status);
	ck_assert_int_eq(r->status->code, NDDD__V1__CODE__PERMISSION_DENIED);
	nddd__v1__response__free_unpacked(r, NULL);

	/* Too many documents; a reply that could pass max_frame (1 MiB). */
	r = copies(&h, body, 4097, 0, "write-token-0123456789");
	ck_assert_ptr_nonnull(r->status);
	ck_assert_int_eq(r->status->code, NDDD__V1__CODE__INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(r->status->message, "4,096"));
	nddd__v1__response__free_unpacked(r, NULL);
	r = copies(&h, body, 1000, 0, "write-token-0123456789");
	ck_assert_ptr_nonnull(r->status);
	ck_assert_int_eq(r->status->code, NDDD__V1__CODE__INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(r->status->message, "max_frame"));
	nddd__v1__response__free_unpacked(r, NULL);

	/* An empty batch: an empty answer. */
	r = copies(&h, body, 0, 0, "write-token-0123456789");
	ck_assert_ptr_null(r->status);
	ck_assert_int_eq(r->result_case, NDDD__V1__RESPONSE__RESULT_DOCS);
	ck_assert_uint_eq(r->docs->n_docs, 0);
	nddd__v1__response__free_unpacked(r, NULL);

	/* Nothing refused was stored. */
	c = harness_client_opts(h.address, &(struct nddd_options){
	    .timeout_ms = 10000, .token = "write-token-0123456789" });
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_uint_eq(st.docs, 300);
	nddd_close(c);
	harness_cleanup(&h);
}
END_TEST

Suite *docbatch_suite(void);

Suite *
docbatch_suite(void)
{
	Suite *s = suite_create("docbatch");
	TCase *tc = tcase_create("docbatch");

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_batches_equal_singles, 0, 2);
	tcase_add_test(tc, test_batch_reply_cut_and_limits);
	suite_add_tcase(s, tc);
	return s;
}
