/*
 * Integration tests of the near-duplicate service with the real daemon:
 * Reuters-21578 submitted in bulk (documents with identical bodies share a
 * group), delete then query, answers and groups unchanged by a restart
 * (through the restart image the clean stop left), kill -9 during a bulk
 * load (every acknowledged document is there and queries agree with brute
 * force over the stored fingerprints), and bad input.
 */
#include <check.h>
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corpus.h"
#include "harness.h"
#include "testutil.h"

static struct corpus *
reuters(size_t max)
{
	char *dir = tu_data_path("text_corpora/reuters21578");
	struct corpus *c = corpus_reuters(dir, max);

	free(dir);
	ck_assert_ptr_nonnull(c);
	return c;
}

static char *
doc_url(size_t i)
{
	char *u;

	ck_assert_int_ne(asprintf(&u, "http://reuters.example/article/%zu", i),
	    -1);
	return u;
}

/* Submits docs[0..n) pipelined; fills ids, fps and groups (0 for a
 * document that failed, e.g. EMPTY_DOCUMENT).  Returns the failures. */
static size_t
submit_all(nddd_client *c, const struct corpus *co, size_t n, uint64_t *ids,
    uint64_t *fps, uint64_t *groups)
{
	size_t sent = 0, done = 0, failed = 0;
	uint64_t *req_of = calloc(n, sizeof(*req_of));
	struct { uint64_t id; size_t i; } fl[32];
	size_t nfl = 0;

	while (done < n) {
		struct nddd_reply *r;
		size_t k;

		while (sent < n && nfl < 32) {
			char *u = doc_url(sent);

			ck_assert_int_eq(nddd_send_doc_submit(c, u, strlen(u),
			    co->docs[sent].data, co->docs[sent].len, NDDD_TEXT,
			    0, &fl[nfl].id), 0);
			free(u);
			fl[nfl++].i = sent++;
		}
		ck_assert_msg(nddd_recv(c, &r) == 0, "%s", nddd_errstr(c));
		for (k = 0; k < nfl && fl[k].id != r->id; k++)
			;
		ck_assert_uint_lt(k, nfl);
		if (r->kind == NDDD_REPLY_DOC) {
			ids[fl[k].i] = r->doc.doc_id;
			fps[fl[k].i] = r->doc.simhash;
			groups[fl[k].i] = r->doc.group;
		} else {
			ck_assert_int_eq(r->code, NDDD_EMPTY_DOCUMENT);
			ids[fl[k].i] = fps[fl[k].i] = groups[fl[k].i] = 0;
			failed++;
		}
		nddd_reply_free(r);
		fl[k] = fl[--nfl];
		done++;
	}
	free(req_of);
	return failed;
}

/* A body with its whitespace runs made single spaces, trimmed. */
static char *
normalized(const struct corpus_doc *d)
{
	char *out = malloc(d->len + 1), *p = out;
	int space = 1;

	for (size_t i = 0; i < d->len; i++) {
		if (isspace((unsigned char)d->data[i])) {
			space = 1;
			continue;
		}
		if (space && p != out)
			*p++ = ' ';
		space = 0;
		*p++ = d->data[i];
	}
	*p = '\0';
	return out;
}

struct body_ix {
	char *text;
	size_t i;
};

static int
cmp_body(const void *a, const void *b)
{
	const struct body_ix *x = a, *y = b;
	int c = strcmp(x->text, y->text);

	return c ? c : (x->i > y->i) - (x->i < y->i);
}

static struct nddd_reply *
call_get(nddd_client *c, size_t i)
{
	char *u = doc_url(i);
	uint64_t id;
	struct nddd_reply *r;

	ck_assert_int_eq(nddd_send_doc_get(c, u, strlen(u), &id), 0);
	free(u);
	r = nddd_call(c, id);
	ck_assert_ptr_nonnull(r);
	return r;
}

START_TEST(test_reuters_bulk_groups_restart)
{
	struct corpus *co = reuters(0);
	size_t n = co->n, failed, pairs = 0, i, j;
	uint64_t *ids = calloc(n, 8), *fps = calloc(n, 8), *groups =
	    calloc(n, 8);
	struct body_ix *b = calloc(n, sizeof(*b));
	struct harness h;
	nddd_client *c;
	struct nddd_stats st;
	struct nddd_verify v;

	ck_assert_uint_gt(n, 19000);
	harness_init(&h, "[near]\nmax_results = 100000");
	harness_start(&h);
	c = harness_client(&h);
	failed = submit_all(c, co, n, ids, fps, groups);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_uint_eq(st.docs, n - failed);

	/* Identical bodies (whitespace aside) share a group. */
	for (i = 0; i < n; i++) {
		b[i].text = normalized(&co->docs[i]);
		b[i].i = i;
	}
	qsort(b, n, sizeof(*b), cmp_body);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && strcmp(b[i].text, b[j].text) == 0;
		    j++) {
			if (ids[b[i].i] == 0)
				continue;
			ck_assert_uint_eq(fps[b[j].i], fps[b[i].i]);
			ck_assert_msg(groups[b[j].i] == groups[b[i].i],
			    "articles %zu and %zu have one body but groups "
			    "%llu and %llu", b[i].i, b[j].i,
			    (unsigned long long)groups[b[i].i],
			    (unsigned long long)groups[b[j].i]);
			pairs++;
		}
	}
	/* The corpus has 279 bodies repeated across 560 articles. */
	ck_assert_uint_ge(pairs, 250);

	/* Delete then query: of a repeated body, the other copy remains. */
	for (i = 0; i + 1 < n; i++)
		if (strcmp(b[i].text, b[i + 1].text) == 0 && ids[b[i].i] &&
		    strlen(b[i].text) > 200)
			break;
	ck_assert_uint_lt(i + 1, n);
	{
		size_t gone = b[i].i, kept = b[i + 1].i;
		char *u = doc_url(gone);
		uint64_t id;
		struct nddd_reply *r;

		/* A body repeated only twice here. */
		ck_assert_int_eq(nddd_send_doc_delete(c, u, strlen(u), &id), 0);
		free(u);
		r = nddd_call(c, id);
		ck_assert_int_eq(r->kind, NDDD_REPLY_DOC_DELETE);
		ck_assert_uint_eq(r->deleted_id, ids[gone]);
		nddd_reply_free(r);
		r = call_get(c, gone);
		ck_assert_int_eq(r->kind, NDDD_REPLY_ERROR);
		ck_assert_int_eq(r->code, NDDD_NOT_FOUND);
		nddd_reply_free(r);
		ck_assert_int_eq(nddd_send_doc_query(c, co->docs[gone].data,
		    co->docs[gone].len, NDDD_TEXT, 0, &id), 0);
		r = nddd_call(c, id);
		ck_assert_int_eq(r->kind, NDDD_REPLY_DOC_QUERY);
		ck_assert_uint_eq(r->doc.simhash, fps[gone]);
		for (size_t x = 0; x < r->doc.nnear; x++)
			ck_assert_uint_ne(r->doc.near[x].doc_id, ids[gone]);
		ck_assert_uint_ge(r->doc.nnear, 1);
		{
			int has_kept = 0;

			for (size_t x = 0; x < r->doc.nnear; x++)
				has_kept |= r->doc.near[x].doc_id == ids[kept];
			ck_assert(has_kept);
		}
		nddd_reply_free(r);
		ids[gone] = 0;
	}
	ck_assert_int_eq(nddd_verify(c, &v), 0);
	ck_assert_msg(v.consistent, "%s", v.detail);

	/* Restart: ids, groups and answers as before. */
	{
		struct nddd_reply *before[50];
		char *image;

		for (i = 0; i < 50; i++)
			before[i] = call_get(c, i * 379);
		nddd_close(c);
		ck_assert_int_eq(harness_stop(&h), 0);
		/* The clean stop leaves the restart image, which the start
		 * reads and removes. */
		ck_assert_int_ne(asprintf(&image, "%s/docs.image", h.data_dir),
		    -1);
		ck_assert_int_eq(access(image, F_OK), 0);
		harness_start(&h);
		ck_assert(harness_log_has(&h, "from the restart image"));
		ck_assert_int_eq(access(image, F_OK), -1);
		free(image);
		c = harness_client(&h);
		for (i = 0; i < 50; i++) {
			struct nddd_reply *r = call_get(c, i * 379);

			ck_assert_int_eq(r->kind, before[i]->kind);
			if (r->kind == NDDD_REPLY_DOC) {
				ck_assert_uint_eq(r->doc.doc_id,
				    before[i]->doc.doc_id);
				ck_assert_uint_eq(r->doc.group,
				    before[i]->doc.group);
				ck_assert_uint_eq(r->doc.simhash,
				    before[i]->doc.simhash);
				ck_assert_uint_eq(r->doc.nnear,
				    before[i]->doc.nnear);
				for (j = 0; j < r->doc.nnear; j++)
					ck_assert_uint_eq(r->doc.near[j].doc_id,
					    before[i]->doc.near[j].doc_id);
			}
			nddd_reply_free(r);
			nddd_reply_free(before[i]);
		}
		ck_assert_int_eq(nddd_verify(c, &v), 0);
		ck_assert_msg(v.consistent, "%s", v.detail);
	}
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	for (i = 0; i < n; i++)
		free(b[i].text);
	free(b);
	free(ids);
	free(fps);
	free(groups);
	corpus_free(co);
	harness_cleanup(&h);
}
END_TEST

struct loader {
	const char *address;
	const struct corpus *co;
	size_t n;
	bool *acked;
	uint64_t *fps;
	size_t nacked;
};

static void *
load_main(void *arg)
{
	struct loader *l = arg;
	struct { uint64_t id; size_t i; } fl[16];
	size_t sent = 0, nfl = 0;
	char *err;
	nddd_client *c = nddd_connect(l->address, 5000, &err);

	if (c == NULL) {
		free(err);
		return NULL;
	}
	for (;;) {
		struct nddd_reply *r;
		size_t k;

		while (sent < l->n && nfl < 16) {
			char *u = doc_url(sent);
			int rc = nddd_send_doc_submit(c, u, strlen(u),
			    l->co->docs[sent].data, l->co->docs[sent].len,
			    NDDD_TEXT, 0, &fl[nfl].id);

			free(u);
			if (rc == -1)
				goto out;
			fl[nfl++].i = sent++;
		}
		if (nfl == 0 || nddd_recv(c, &r) == -1)
			break;
		for (k = 0; k < nfl && fl[k].id != r->id; k++)
			;
		if (k < nfl) {
			if (r->kind == NDDD_REPLY_DOC) {
				l->acked[fl[k].i] = true;
				l->fps[fl[k].i] = r->doc.simhash;
				l->nacked++;
			}
			fl[k] = fl[--nfl];
		}
		nddd_reply_free(r);
	}
out:
	nddd_close(c);
	return NULL;
}

START_TEST(test_kill9_during_bulk_load)
{
	struct corpus *co = reuters(0);
	struct loader l = { .co = co, .n = co->n };
	struct harness h;
	pthread_t th;
	nddd_client *c;
	uint64_t *stored = calloc(co->n, 8), seed = 5;
	bool *present = calloc(co->n, sizeof(bool));
	size_t npresent = 0;
	struct nddd_verify v;

	l.acked = calloc(co->n, sizeof(bool));
	l.fps = calloc(co->n, 8);
	harness_init(&h, "[near]\nmax_results = 100000");
	harness_start(&h);
	l.address = h.address;
	pthread_create(&th, NULL, load_main, &l);
	usleep(300000 + (useconds_t)tu_rand_below(&seed, 500000));
	harness_kill(&h);
	pthread_join(th, NULL);
	ck_assert_msg(l.nacked > 0 && l.nacked < co->n,
	    "the kill should land mid-load (%zu acknowledged)", l.nacked);

	/* The store writer commits in bulk: under load, what it answered
	 * last is in its journal only, and applied again now. */
	harness_start(&h);
	ck_assert_msg(harness_log_has(&h, "applied from the store journal"),
	    "the kill should find groups in the store journal");
	c = harness_client(&h);
	/* Every acknowledged document is there, with its fingerprint. */
	for (size_t i = 0; i < co->n; i++) {
		struct nddd_reply *r = call_get(c, i);

		if (r->kind == NDDD_REPLY_DOC) {
			present[i] = true;
			stored[i] = r->doc.simhash;
			npresent++;
			if (l.acked[i])
				ck_assert_uint_eq(r->doc.simhash, l.fps[i]);
		} else {
			ck_assert_int_eq(r->code, NDDD_NOT_FOUND);
			ck_assert_msg(!l.acked[i], "acknowledged document %zu "
			    "lost", i);
		}
		nddd_reply_free(r);
	}
	ck_assert_uint_ge(npresent, l.nacked);
	/* Queries agree with brute force over what is stored. */
	for (int q = 0; q < 60; q++) {
		size_t qi = tu_rand_below(&seed, co->n);
		uint64_t fp = stored[qi] ? stored[qi] : tu_rand(&seed), id;
		unsigned k = (unsigned)(q % 4);
		struct nddd_reply *r;
		size_t want = 0;

		ck_assert_int_eq(nddd_send_doc_query_simhash(c, fp, (int)k,
		    &id), 0);
		r = nddd_call(c, id);
		ck_assert_int_eq(r->kind, NDDD_REPLY_DOC_QUERY);
		for (size_t i = 0; i < co->n; i++)
			want += present[i] &&
			    (unsigned)__builtin_popcountll(stored[i] ^ fp) <= k;
		ck_assert_uint_eq(r->doc.near_total, want);
		ck_assert_uint_eq(r->doc.nnear, want);
		for (size_t x = 0; x < r->doc.nnear; x++)
			ck_assert_uint_le(r->doc.near[x].distance, k);
		nddd_reply_free(r);
	}
	ck_assert_int_eq(nddd_verify(c, &v), 0);
	ck_assert_msg(v.consistent, "%s", v.detail);
	ck_assert_uint_eq(v.docs, npresent);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	free(stored);
	free(present);
	free(l.acked);
	free(l.fps);
	corpus_free(co);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_bad_input)
{
	struct harness h;
	nddd_client *c;
	struct nddd_reply *r;
	struct nddd_stats st;
	uint64_t id;
	char *big;
	const size_t big_len = 9 << 20;

	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);
	/* An empty document: EMPTY_DOCUMENT, nothing stored. */
	ck_assert_int_eq(nddd_send_doc_submit(c, "http://e.example/", 17,
	    "  the, a! <>", 12, NDDD_TEXT, 0, &id), 0);
	r = nddd_call(c, id);
	ck_assert_int_eq(r->kind, NDDD_REPLY_ERROR);
	ck_assert_int_eq(r->code, NDDD_EMPTY_DOCUMENT);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_send_doc_submit(c, "http://e.example/", 17,
	    "<script>x y z</script><!-- c -->", 32, NDDD_HTML, 0, &id), 0);
	r = nddd_call(c, id);
	ck_assert_int_eq(r->code, NDDD_EMPTY_DOCUMENT);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_uint_eq(st.docs, 0);
	/* A k above the configured 3. */
	ck_assert_int_eq(nddd_send_doc_query_simhash(c, 1, 4, &id), 0);
	r = nddd_call(c, id);
	ck_assert_int_eq(r->code, NDDD_INVALID_ARGUMENT);
	nddd_reply_free(r);
	/* Not a URL. */
	ck_assert_int_eq(nddd_send_doc_submit(c, "mailto:x", 8, "words", 5,
	    NDDD_TEXT, 0, &id), 0);
	r = nddd_call(c, id);
	ck_assert_int_eq(r->code, NDDD_INVALID_ARGUMENT);
	nddd_reply_free(r);
	/* A body over the frame limit: refused unread, connection closed. */
	big = malloc(big_len);
	memset(big, 'w', big_len);
	/* The daemon answers the frame's header and closes: the client sees
	 * the refusal, or, still sending the body, the reset. */
	if (nddd_send_doc_submit(c, "http://big.example/", 19, big, big_len,
	    NDDD_TEXT, 0, &id) == 0 && (r = nddd_call(c, id)) != NULL) {
		ck_assert_uint_eq(r->id, 0);
		ck_assert_int_eq(r->code, NDDD_RESOURCE_EXHAUSTED);
		nddd_reply_free(r);
	} else
		ck_assert_msg(strstr(nddd_errstr(c), "reset") ||
		    strstr(nddd_errstr(c), "closed") ||
		    strstr(nddd_errstr(c), "pipe"), "%s", nddd_errstr(c));
	free(big);
	nddd_close(c);
	/* Others are served. */
	c = harness_client(&h);
	ck_assert_int_eq(nddd_send_doc_submit(c, "http://ok.example/", 18,
	    "one fine document", 17, NDDD_TEXT, 0, &id), 0);
	r = nddd_call(c, id);
	ck_assert_int_eq(r->kind, NDDD_REPLY_DOC);
	ck_assert_uint_eq(r->doc.doc_id, 1);
	nddd_reply_free(r);
	nddd_close(c);
	harness_cleanup(&h);
}
END_TEST

Suite *docs_suite(void);

Suite *
docs_suite(void)
{
	Suite *s = suite_create("docs");
	TCase *tc = tcase_create("docs");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_reuters_bulk_groups_restart);
	tcase_add_test(tc, test_kill9_during_bulk_load);
	tcase_add_test(tc, test_bad_input);
	suite_add_tcase(s, tc);
	return s;
}
