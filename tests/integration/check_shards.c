/*
 * Integration tests of URL sharding (libnddd's nddd_shards_*): three real
 * daemons as shards against one daemon as the reference.  Whatever the
 * routing, the shards together must answer every URL operation exactly as
 * one daemon does; a shard that is down or dies mid-call fails its own URLs
 * and nothing else.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corpus.h"
#include "harness.h"
#include "testutil.h"
#include "urlgen.h"

#define NSHARDS 3

struct cluster {
	struct harness shard[NSHARDS];
	struct harness ref;
	const char *addr[NSHARDS];
};

static void
cluster_start(struct cluster *cl, const char *extra_conf)
{
	for (int i = 0; i < NSHARDS; i++) {
		harness_init(&cl->shard[i], extra_conf);
		harness_start(&cl->shard[i]);
		cl->addr[i] = cl->shard[i].address;
	}
	harness_init(&cl->ref, extra_conf);
	harness_start(&cl->ref);
}

static void
cluster_cleanup(struct cluster *cl)
{
	for (int i = 0; i < NSHARDS; i++)
		harness_cleanup(&cl->shard[i]);
	harness_cleanup(&cl->ref);
}

static nddd_shards *
open_shards(const struct cluster *cl)
{
	char *err = NULL;
	nddd_shards *s = nddd_shards_open(cl->addr, NSHARDS, NULL, &err);

	ck_assert_msg(s != NULL, "nddd_shards_open: %s", err ? err : "?");
	return s;
}

static uint64_t
stored_urls(const struct harness *h)
{
	nddd_client *c = harness_client(h);
	struct nddd_stats st;

	ck_assert_int_eq(nddd_stats(c, &st), 0);
	nddd_close(c);
	return st.urls;
}

static void
pool_add(struct urllist *pool, char *url)
{
	ck_assert_ptr_nonnull(url);
	if (pool->n == pool->cap) {
		pool->cap = pool->cap ? 2 * pool->cap : 1024;
		pool->urls = realloc(pool->urls, pool->cap *
		    sizeof(*pool->urls));
		ck_assert_ptr_nonnull(pool->urls);
	}
	pool->urls[pool->n++] = url;
}

/*
 * A pool of URLs: 2,000 of a real list, each also in forms that
 * canonicalize to it (a fragment; an upper-case scheme), and a few no
 * daemon takes.
 */
static void
url_pool(struct urllist *pool)
{
	struct urllist real = { 0 };
	char *path = tu_data_path("url_lists/ada_url_various_datasets/"
	    "kasztp.txt"), *v;

	urlgen_file(&real, path);
	free(path);
	for (size_t i = 0; i < real.n && i < 2000; i++) {
		const char *u = real.urls[i];

		pool_add(pool, strdup(u));
		ck_assert_int_ne(asprintf(&v, "%s#part-%zu", u, i), -1);
		pool_add(pool, v);
		if (strncmp(u, "http://", 7) == 0) {
			ck_assert_int_ne(asprintf(&v, "HTTP://%s", u + 7), -1);
			pool_add(pool, v);
		}
	}
	urlgen_free(&real);
	pool_add(pool, strdup("not a url"));
	pool_add(pool, strdup("http://"));
	pool_add(pool, strdup("mailto:someone@example.com"));
}

/* Every result the same: code and count. */
static void
assert_same(const struct nddd_url_result *got,
    const struct nddd_url_result *want, const char *const *urls, size_t n,
    const char *what)
{
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(got[i].code == want[i].code,
		    "%s: %s: code %d, one daemon %d (%s)", what, urls[i],
		    got[i].code, want[i].code,
		    got[i].message ? got[i].message : "");
		ck_assert_msg(got[i].count == want[i].count,
		    "%s: %s: count %llu, one daemon %llu", what, urls[i],
		    (unsigned long long)got[i].count,
		    (unsigned long long)want[i].count);
	}
}

/* One operation on the shards and on the reference, compared. */
static void
both(nddd_shards *s, nddd_client *ref, enum nddd_url_op op,
    const char **urls, size_t n, const char *what)
{
	struct nddd_url_result *got = calloc(n, sizeof(*got));
	struct nddd_url_result *want = calloc(n, sizeof(*want));

	ck_assert_ptr_nonnull(got);
	ck_assert_ptr_nonnull(want);
	/* One batch in flight at a time: a daemon may apply batches in
	 * flight together in any order, and a URL repeated across two of
	 * them would get its counts in that order. */
	ck_assert_int_eq(nddd_shards_urls(s, op, urls, n, got, 100, 1), 0);
	ck_assert_int_eq(nddd_urls(ref, op, urls, n, want, 100, 1, NULL,
	    NULL), 0);
	assert_same(got, want, urls, n, what);
	nddd_urls_results_free(got, n);
	nddd_urls_results_free(want, n);
	free(got);
	free(want);
}

/*
 * Random rounds of submits (with repeats in a batch), checks and deletes,
 * in the default namespace and in another, answered by the shards exactly
 * as by one daemon; then the shards hold as many URLs as it does.
 */
START_TEST(test_shards_answer_as_one_daemon)
{
	struct cluster cl;
	struct urllist pool = { 0 };
	uint64_t rng = 20261125;
	const char **pick;
	nddd_shards *s;
	nddd_client *ref;
	uint64_t total = 0;

	url_pool(&pool);
	cluster_start(&cl, NULL);
	s = open_shards(&cl);
	ref = harness_client(&cl.ref);
	ck_assert_ptr_nonnull(pick = calloc(1500, sizeof(*pick)));
	for (int round = 0; round < 24; round++) {
		static const enum nddd_url_op ops[] = { NDDD_URL_SUBMIT,
		    NDDD_URL_SUBMIT, NDDD_URL_CHECK, NDDD_URL_DELETE };
		enum nddd_url_op op = ops[tu_rand_below(&rng, 4)];
		struct nddd_url_opts o = { .ns = round % 3 == 2 ? "crawl-1" :
		    NULL };
		size_t n = 1 + tu_rand_below(&rng, 1500);
		char what[64];

		for (size_t i = 0; i < n; i++)
			pick[i] = pool.urls[tu_rand_below(&rng, pool.n)];
		ck_assert_int_eq(nddd_shards_set_url_opts(s, &o), 0);
		ck_assert_int_eq(nddd_set_url_opts(ref, &o), 0);
		snprintf(what, sizeof(what), "round %d (op %d, %zu URLs)",
		    round, op, n);
		both(s, ref, op, pick, n, what);
	}
	/* Everything stored is seen, through the shards, in both sets. */
	for (int ns = 0; ns < 2; ns++) {
		struct nddd_url_opts o = { .ns = ns ? "crawl-1" : NULL };

		ck_assert_int_eq(nddd_shards_set_url_opts(s, &o), 0);
		ck_assert_int_eq(nddd_set_url_opts(ref, &o), 0);
		both(s, ref, NDDD_URL_CHECK, (const char **)pool.urls, pool.n,
		    "the whole pool");
	}
	for (int i = 0; i < NSHARDS; i++) {
		uint64_t n = stored_urls(&cl.shard[i]);

		ck_assert_msg(n > 0, "shard %d holds no URL", i);
		total += n;
	}
	ck_assert_uint_eq(total, stored_urls(&cl.ref));
	free(pick);
	nddd_close(ref);
	nddd_shards_close(s);
	urlgen_free(&pool);
	cluster_cleanup(&cl);
}
END_TEST

/*
 * The shard of every URL is the one libnddd names for its digest: a
 * daemon alone behind each address holds exactly the URLs routed to it.
 */
START_TEST(test_each_shard_holds_its_urls)
{
	struct cluster cl;
	struct urllist pool = { 0 };
	struct nddd_url_result *res;
	size_t want[NSHARDS] = { 0 };
	nddd_canon *k;
	nddd_shards *s;
	char *err;

	urlgen_synthetic(&pool, 6000, 0);
	cluster_start(&cl, NULL);
	s = open_shards(&cl);
	ck_assert_ptr_nonnull(k = nddd_canon_new(nddd_shards_canon_id(s),
	    &err));
	for (size_t i = 0; i < pool.n; i++) {
		unsigned char d[NDDD_DIGEST_LEN];
		const char *cause;

		ck_assert_int_eq(nddd_canon_digest(k, pool.urls[i],
		    strlen(pool.urls[i]), d, &cause), 0);
		want[nddd_shard_of(d, NSHARDS)]++;
	}
	ck_assert_ptr_nonnull(res = calloc(pool.n, sizeof(*res)));
	ck_assert_int_eq(nddd_shards_urls(s, NDDD_URL_SUBMIT,
	    (const char **)pool.urls, pool.n, res, 500, 2), 0);
	for (size_t i = 0; i < pool.n; i++)
		ck_assert_int_eq(res[i].count, 1);
	for (int i = 0; i < NSHARDS; i++) {
		ck_assert_uint_eq(stored_urls(&cl.shard[i]), want[i]);
		/* About a third each (6,000 URLs: well within 20%). */
		ck_assert_msg(want[i] > 1600 && want[i] < 2400,
		    "shard %d owns %zu of 6000 URLs", i, want[i]);
	}
	nddd_urls_results_free(res, pool.n);
	free(res);
	nddd_canon_free(k);
	nddd_shards_close(s);
	urlgen_free(&pool);
	cluster_cleanup(&cl);
}
END_TEST

/*
 * The jump hash: growing the list by one moves keys only to the new last
 * shard, about 1/(n+1) of them, and spreads keys evenly.
 */
START_TEST(test_jump_hash_moves_only_to_the_new_shard)
{
	enum { KEYS = 100000, MAXN = 24 };
	uint64_t rng = 7;
	static uint32_t at[KEYS];
	size_t per[MAXN + 1];

	for (size_t i = 0; i < KEYS; i++)
		at[i] = nddd_jump_hash(tu_rand(&rng), 1);
	for (uint32_t n = 1; n < MAXN; n++) {
		size_t moved = 0;

		rng = 7;
		memset(per, 0, sizeof(per));
		for (size_t i = 0; i < KEYS; i++) {
			uint32_t b = nddd_jump_hash(tu_rand(&rng), n + 1);

			ck_assert_uint_lt(b, n + 1);
			ck_assert_msg(b == at[i] || b == n, "key %zu moved from "
			    "%u to %u going from %u to %u buckets", i, at[i], b,
			    n, n + 1);
			moved += b != at[i];
			at[i] = b;
			per[b]++;
		}
		/* 1/(n+1) of the keys move, within 10%. */
		ck_assert_msg(moved * (n + 1) > KEYS * 9 / 10 &&
		    moved * (n + 1) < KEYS * 11 / 10, "%zu of %d keys moved to "
		    "bucket %u", moved, KEYS, n);
		for (uint32_t b = 0; b <= n; b++)
			ck_assert_msg(per[b] * (n + 1) > KEYS * 8 / 10 &&
			    per[b] * (n + 1) < KEYS * 12 / 10,
			    "bucket %u of %u has %zu of %d keys", b, n + 1,
			    per[b], KEYS);
	}
}
END_TEST

/*
 * A shard that is down fails its URLs, UNAVAILABLE with its address, and
 * no other; once back, the next call reaches it and its URLs are there.
 */
START_TEST(test_shard_down_fails_only_its_urls)
{
	struct cluster cl;
	struct urllist pool = { 0 };
	struct nddd_url_result *res, *again;
	nddd_canon *k;
	nddd_shards *s;
	int *owner;
	char *err;
	size_t down = 0;

	urlgen_synthetic(&pool, 3000, 0);
	cluster_start(&cl, NULL);
	s = open_shards(&cl);
	ck_assert_ptr_nonnull(k = nddd_canon_new(nddd_shards_canon_id(s),
	    &err));
	ck_assert_ptr_nonnull(owner = calloc(pool.n, sizeof(*owner)));
	for (size_t i = 0; i < pool.n; i++) {
		unsigned char d[NDDD_DIGEST_LEN];
		const char *cause;

		ck_assert_int_eq(nddd_canon_digest(k, pool.urls[i],
		    strlen(pool.urls[i]), d, &cause), 0);
		owner[i] = (int)nddd_shard_of(d, NSHARDS);
	}
	ck_assert_ptr_nonnull(res = calloc(pool.n, sizeof(*res)));
	ck_assert_ptr_nonnull(again = calloc(pool.n, sizeof(*again)));
	ck_assert_int_eq(nddd_shards_urls(s, NDDD_URL_SUBMIT,
	    (const char **)pool.urls, pool.n, res, 200, 2), 0);
	nddd_urls_results_free(res, pool.n);

	harness_kill(&cl.shard[1]);
	ck_assert_int_eq(nddd_shards_urls(s, NDDD_URL_CHECK,
	    (const char **)pool.urls, pool.n, res, 200, 2), 0);
	for (size_t i = 0; i < pool.n; i++) {
		if (owner[i] != 1) {
			ck_assert_int_eq(res[i].code, NDDD_OK);
			ck_assert_uint_eq(res[i].count, 1);
			continue;
		}
		down++;
		ck_assert_int_eq(res[i].code, NDDD_UNAVAILABLE);
		ck_assert_ptr_nonnull(strstr(res[i].message,
		    cl.shard[1].address));
	}
	ck_assert_uint_gt(down, 0);

	harness_start(&cl.shard[1]);
	ck_assert_int_eq(nddd_shards_urls(s, NDDD_URL_CHECK,
	    (const char **)pool.urls, pool.n, again, 200, 2), 0);
	for (size_t i = 0; i < pool.n; i++) {
		ck_assert_int_eq(again[i].code, NDDD_OK);
		ck_assert_uint_eq(again[i].count, 1);
	}
	nddd_urls_results_free(res, pool.n);
	nddd_urls_results_free(again, pool.n);
	free(res);
	free(again);
	free(owner);
	nddd_canon_free(k);
	nddd_shards_close(s);
	urlgen_free(&pool);
	cluster_cleanup(&cl);
}
END_TEST

struct bulk_call {
	nddd_shards *s;
	const char **urls;
	size_t n;
	struct nddd_url_result *res;
	int rc;
};

static void *
bulk_run(void *arg)
{
	struct bulk_call *b = arg;

	b->rc = nddd_shards_urls(b->s, NDDD_URL_SUBMIT, b->urls, b->n, b->res,
	    50, 1);
	return NULL;
}

/*
 * A shard killed (SIGKILL) in the middle of a call: its URLs answered
 * before are durable, the rest UNAVAILABLE; every other URL is answered.
 */
START_TEST(test_shard_killed_mid_call)
{
	struct cluster cl;
	struct urllist pool = { 0 };
	struct bulk_call b = { 0 };
	struct nddd_url_result *after;
	pthread_t t;
	size_t ok = 0, lost = 0;
	nddd_client *victim;
	struct nddd_stats st;

	urlgen_synthetic(&pool, 30000, 0);
	cluster_start(&cl, NULL);
	b.s = open_shards(&cl);
	b.urls = (const char **)pool.urls;
	b.n = pool.n;
	ck_assert_ptr_nonnull(b.res = calloc(pool.n, sizeof(*b.res)));
	victim = harness_client(&cl.shard[2]);
	ck_assert_int_eq(pthread_create(&t, NULL, bulk_run, &b), 0);
	/* Once the victim has stored some of its part (a batch of 50 at a
	 * time, each acknowledged once on disk), kill it. */
	do {
		ck_assert_int_eq(nddd_stats(victim, &st), 0);
	} while (st.urls == 0);
	harness_kill(&cl.shard[2]);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(b.rc, 0);
	nddd_close(victim);

	harness_start(&cl.shard[2]);
	ck_assert_ptr_nonnull(after = calloc(pool.n, sizeof(*after)));
	ck_assert_int_eq(nddd_shards_urls(b.s, NDDD_URL_CHECK, b.urls, b.n,
	    after, 500, 2), 0);
	for (size_t i = 0; i < pool.n; i++) {
		ck_assert_int_eq(after[i].code, NDDD_OK);
		if (b.res[i].code == NDDD_OK) {
			/* Acknowledged: stored, on whichever shard. */
			ck_assert_uint_eq(b.res[i].count, 1);
			ck_assert_msg(after[i].count == 1, "%s acknowledged, "
			    "then lost", pool.urls[i]);
			ok++;
			continue;
		}
		ck_assert_int_eq(b.res[i].code, NDDD_UNAVAILABLE);
		ck_assert_ptr_nonnull(strstr(b.res[i].message,
		    cl.shard[2].address));
		lost++;
	}
	/* The victim died with most of its part unanswered; the other two
	 * shards' parts (about two thirds) were all answered. */
	ck_assert_uint_gt(lost, 0);
	ck_assert_uint_gt(ok, pool.n / 2);
	nddd_urls_results_free(b.res, pool.n);
	nddd_urls_results_free(after, pool.n);
	free(b.res);
	free(after);
	nddd_shards_close(b.s);
	urlgen_free(&pool);
	cluster_cleanup(&cl);
}
END_TEST

/*
 * Shards that canonicalize differently are refused, naming both; so are
 * empty lists and lists naming a shard twice; with every shard down, the
 * open fails.
 */
START_TEST(test_shard_lists_refused)
{
	struct harness a, b;
	const char *addr[2], *twice[2];
	char *err = NULL;

	harness_init(&a, NULL);
	harness_init(&b, "[urls]\nstrip_tracking = yes\n");
	harness_start(&a);
	harness_start(&b);
	addr[0] = a.address;
	addr[1] = b.address;
	ck_assert_ptr_null(nddd_shards_open(addr, 2, NULL, &err));
	ck_assert_msg(err != NULL && strstr(err, "differ") != NULL &&
	    strstr(err, a.address) != NULL && strstr(err, b.address) != NULL,
	    "refusal: %s", err ? err : "(none)");
	free(err);

	ck_assert_ptr_null(nddd_shards_open(addr, 0, NULL, &err));
	ck_assert_ptr_nonnull(err);
	free(err);
	twice[0] = twice[1] = a.address;
	ck_assert_ptr_null(nddd_shards_open(twice, 2, NULL, &err));
	ck_assert_ptr_nonnull(strstr(err, "twice"));
	free(err);

	harness_kill(&a);
	harness_kill(&b);
	ck_assert_ptr_null(nddd_shards_open(addr, 2, NULL, &err));
	ck_assert_ptr_nonnull(strstr(err, "no shard answers"));
	free(err);
	harness_cleanup(&a);
	harness_cleanup(&b);
}
END_TEST


/* The documents of the comparisons: Reuters bodies, copies of some under
 * other URLs, near copies (a word added), re-submits of a URL with
 * another body, empty bodies, bad URLs, query-only ones. */
struct doc_load {
	struct nddd_doc_item *items;
	char **urls, **bodies;
	size_t n;
};

static void
doc_load_make(struct doc_load *l, const struct corpus *co, size_t originals,
    uint64_t seed)
{
	size_t cap = originals * 2 + 64;

	l->items = calloc(cap, sizeof(*l->items));
	l->urls = calloc(cap, sizeof(*l->urls));
	l->bodies = calloc(cap, sizeof(*l->bodies));
	ck_assert(l->items && l->urls && l->bodies);
	l->n = 0;
	for (size_t i = 0; l->n < cap - 1 && i < originals * 2; i++) {
		size_t at = l->n, src;
		uint64_t roll = tu_rand_below(&seed, 100);
		char *body, *url;

		if (i < originals || roll < 30) {
			src = i < originals ? i : tu_rand_below(&seed,
			    originals);
			ck_assert_int_ne(asprintf(&url, "http://news%zu.example"
			    "/a/%zu", at % 7, at), -1);
			body = strndup(co->docs[src].data, co->docs[src].len);
		} else if (roll < 60) {
			src = tu_rand_below(&seed, originals);
			ck_assert_int_ne(asprintf(&url, "http://mirror.example"
			    "/%zu", at), -1);
			ck_assert_int_ne(asprintf(&body, "%.*s extra%zu",
			    (int)co->docs[src].len, co->docs[src].data,
			    tu_rand_below(&seed, 3)), -1);
		} else if (roll < 75) {
			/* An earlier URL with another body. */
			src = tu_rand_below(&seed, originals);
			url = strdup(l->urls[tu_rand_below(&seed, at)]);
			body = strndup(co->docs[src].data, co->docs[src].len);
		} else if (roll < 80) {
			ck_assert_int_ne(asprintf(&url, "http://empty.example"
			    "/%zu", at), -1);
			body = strdup("");
		} else if (roll < 83) {
			ck_assert_int_ne(asprintf(&url, "no url %zu", at), -1);
			body = strdup("words");
		} else
			continue;
		ck_assert(url && body);
		l->urls[at] = url;
		l->bodies[at] = body;
		l->items[at] = (struct nddd_doc_item){ .url = url,
		    .url_len = strlen(url), .body = body,
		    .body_len = strlen(body), .format = NDDD_TEXT,
		    .query_only = i >= originals && roll >= 95 - 12 &&
		    roll < 95 };
		l->n++;
	}
}

static void
doc_load_free(struct doc_load *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->urls[i]);
		free(l->bodies[i]);
	}
	free(l->items);
	free(l->urls);
	free(l->bodies);
}

/* The URL of the document id (of results[0..n) and the load), or NULL. */
static const char *
url_of(const struct doc_load *l, const struct nddd_doc *res, uint64_t id)
{
	const char *url = NULL;

	for (size_t i = 0; i < l->n && id != 0; i++)
		if (res[i].code == NDDD_OK && res[i].doc_id == id)
			url = l->urls[i];
	return url;
}

/*
 * Groups as one daemon would give them: each document's group is named by
 * the URL of its founder in both, its neighbours counted alike, its
 * nearest at the same distance.
 */
static void
assert_docs_same(const struct doc_load *l, const struct nddd_doc *got,
    const struct nddd_doc *want)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct nddd_doc *g = &got[i], *w = &want[i];
		const char *gf, *wf;

		ck_assert_msg(g->code == w->code, "document %zu (%s): code %d, "
		    "one daemon %d (%s)", i, l->urls[i], g->code, w->code,
		    g->message ? g->message : "");
		if (w->code != NDDD_OK)
			continue;
		ck_assert_uint_eq(g->simhash, w->simhash);
		ck_assert_int_eq(g->created, w->created);
		ck_assert_msg(g->near_total == w->near_total, "document %zu: "
		    "%llu neighbours, one daemon %llu", i,
		    (unsigned long long)g->near_total,
		    (unsigned long long)w->near_total);
		ck_assert_int_eq(g->nnear > 0, w->nnear > 0);
		if (w->nnear > 0)
			ck_assert_uint_eq(g->near[0].distance,
			    w->near[0].distance);
		ck_assert_int_eq(g->group == 0, w->group == 0);
		if (w->group == 0)
			continue;
		gf = url_of(l, got, g->group);
		wf = url_of(l, want, w->group);
		ck_assert_msg(gf != NULL && wf != NULL && strcmp(gf, wf) == 0,
		    "document %zu (%s): group founded by %s, one daemon's by %s",
		    i, l->urls[i], gf ? gf : "?", wf ? wf : "?");
	}
}

/*
 * Documents stored through the shards get the groups, neighbour counts
 * and nearest distances one daemon gives the same documents in the same
 * order; a query by body finds what one daemon finds; ids are global.
 */
START_TEST(test_docs_as_one_daemon)
{
	char *dir = tu_data_path("text_corpora/reuters21578");
	struct corpus *co = corpus_reuters(dir, 700);
	struct cluster cl;
	struct doc_load l;
	struct nddd_doc *got, *want, q;
	nddd_shards *s;
	nddd_client *ref;
	size_t stored[NSHARDS] = { 0 }, found = 0, cross = 0;

	ck_assert_ptr_nonnull(co);
	doc_load_make(&l, co, 700, 99);
	cluster_start(&cl, NULL);
	s = open_shards(&cl);
	ref = harness_client(&cl.ref);
	ck_assert_ptr_nonnull(got = calloc(l.n, sizeof(*got)));
	ck_assert_ptr_nonnull(want = calloc(l.n, sizeof(*want)));
	/* Chunks of 64: runs cut inside chunks, neighbours among a chunk's
	 * own documents and earlier ones'. */
	ck_assert_int_eq(nddd_shards_docs(s, l.items, l.n, got, 64), 0);
	ck_assert_int_eq(nddd_docs(ref, l.items, l.n, want, 64, 1, NULL,
	    NULL), 0);
	assert_docs_same(&l, got, want);
	for (size_t i = 0; i < l.n; i++) {
		if (got[i].code != NDDD_OK || got[i].doc_id == 0)
			continue;
		ck_assert_uint_ge(got[i].doc_id >> 48, 1);
		ck_assert_uint_le(got[i].doc_id >> 48, NSHARDS);
		stored[(got[i].doc_id >> 48) - 1]++;
		/* A group founded on another shard than its document's. */
		cross += got[i].group >> 48 != got[i].doc_id >> 48;
	}
	ck_assert_uint_gt(cross, 20);
	for (int t = 0; t < NSHARDS; t++)
		ck_assert_msg(stored[t] > 0, "shard %d stored nothing", t);

	/* A query by body: the same count, the same nearest. */
	for (size_t i = 0; i < 40; i++) {
		struct nddd_reply *r;
		uint64_t id;

		ck_assert_int_eq(nddd_shards_doc_query(s, co->docs[i].data,
		    co->docs[i].len, NDDD_TEXT, &q), 0);
		ck_assert_int_eq(nddd_send_doc_query(ref, co->docs[i].data,
		    co->docs[i].len, NDDD_TEXT, -1, &id), 0);
		ck_assert_ptr_nonnull(r = nddd_call(ref, id));
		ck_assert_int_eq(r->kind, NDDD_REPLY_DOC_QUERY);
		ck_assert_uint_eq(q.simhash, r->doc.simhash);
		ck_assert_uint_eq(q.near_total, r->doc.near_total);
		/* (A body whose URL took another one later is stored no
		 * more, unless under a copy's URL.) */
		ck_assert_uint_eq(q.nnear > 0, r->doc.nnear > 0);
		if (r->doc.nnear > 0) {
			ck_assert_uint_eq(q.near[0].distance,
			    r->doc.near[0].distance);
			ck_assert_str_eq(url_of(&l, got, q.near[0].doc_id),
			    url_of(&l, want, r->doc.near[0].doc_id));
			found++;
		}
		nddd_reply_free(r);
		nddd_docs_results_free(&q, 1);
	}
	ck_assert_uint_gt(found, 30);
	nddd_docs_results_free(got, l.n);
	nddd_docs_results_free(want, l.n);
	free(got);
	free(want);
	nddd_close(ref);
	nddd_shards_close(s);
	doc_load_free(&l);
	corpus_free(co);
	free(dir);
	cluster_cleanup(&cl);
}
END_TEST

/* A shard that is down fails the documents it owns, and no others. */
START_TEST(test_docs_shard_down)
{
	char *dir = tu_data_path("text_corpora/reuters21578");
	struct corpus *co = corpus_reuters(dir, 300);
	struct cluster cl;
	struct doc_load l;
	struct nddd_doc *got;
	nddd_shards *s;
	nddd_canon *k;
	char *err;
	size_t down = 0;

	ck_assert_ptr_nonnull(co);
	doc_load_make(&l, co, 300, 5);
	cluster_start(&cl, NULL);
	s = open_shards(&cl);
	ck_assert_ptr_nonnull(k = nddd_canon_new(nddd_shards_canon_id(s),
	    &err));
	harness_kill(&cl.shard[0]);
	ck_assert_ptr_nonnull(got = calloc(l.n, sizeof(*got)));
	ck_assert_int_eq(nddd_shards_docs(s, l.items, l.n, got, 64), 0);
	for (size_t i = 0; i < l.n; i++) {
		unsigned char d[NDDD_DIGEST_LEN];
		const char *cause;

		if (nddd_canon_digest(k, l.urls[i], strlen(l.urls[i]), d,
		    &cause) == -1) {
			ck_assert_int_eq(got[i].code, NDDD_INVALID_ARGUMENT);
			continue;
		}
		if (nddd_shard_of(d, NSHARDS) == 0) {
			ck_assert_int_eq(got[i].code, NDDD_UNAVAILABLE);
			ck_assert_ptr_nonnull(strstr(got[i].message,
			    cl.shard[0].address));
			down++;
		} else if (l.bodies[i][0] != '\0')
			ck_assert_msg(got[i].code == NDDD_OK, "document %zu: "
			    "%s", i, got[i].message);
	}
	ck_assert_uint_gt(down, 0);
	nddd_docs_results_free(got, l.n);
	free(got);
	nddd_canon_free(k);
	nddd_shards_close(s);
	doc_load_free(&l);
	corpus_free(co);
	free(dir);
	cluster_cleanup(&cl);
}
END_TEST


/*
 * DocSubmit's group and new_group: a group given is kept and reported
 * back, neighbours notwithstanding; new_group founds one; both, or a
 * group id of 2^63 or more, are INVALID_ARGUMENT for that document only.
 */
START_TEST(test_doc_group_fields)
{
	struct harness h;
	nddd_client *c;
	struct nddd_doc res[5];
	struct nddd_doc_item items[5] = {
		{ .url = "http://a.example/1", .body = "oil prices rose",
		    .group = 0 },
		{ .url = "http://a.example/2", .body = "oil prices rose",
		    .group = 0x3000000000007ULL },
		{ .url = "http://a.example/3", .body = "oil prices rose",
		    .new_group = 1 },
		{ .url = "http://a.example/4", .body = "oil prices rose",
		    .group = 5, .new_group = 1 },
		{ .url = "http://a.example/5", .body = "oil prices rose",
		    .group = UINT64_C(1) << 63 },
	};

	for (int i = 0; i < 5; i++) {
		items[i].url_len = strlen(items[i].url);
		items[i].body_len = strlen(items[i].body);
	}
	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_int_eq(nddd_docs(c, items, 5, res, 8, 1, NULL, NULL), 0);
	ck_assert_int_eq(res[0].code, NDDD_OK);
	ck_assert_uint_eq(res[0].group, res[0].doc_id);
	ck_assert_int_eq(res[1].code, NDDD_OK);
	ck_assert_uint_eq(res[1].group, 0x3000000000007ULL);
	ck_assert_int_eq(res[2].code, NDDD_OK);
	ck_assert_uint_eq(res[2].group, res[2].doc_id);
	ck_assert_uint_ne(res[2].group, res[0].group);
	ck_assert_int_eq(res[3].code, NDDD_INVALID_ARGUMENT);
	ck_assert_int_eq(res[4].code, NDDD_INVALID_ARGUMENT);
	/* Neighbours say when they were first submitted. */
	ck_assert_uint_gt(res[2].nnear, 0);
	ck_assert_uint_gt(res[2].near[0].created_ms, 1700000000000ULL);
	nddd_docs_results_free(res, 5);
	nddd_close(c);
	harness_cleanup(&h);
}
END_TEST

Suite *shards_suite(void);

Suite *
shards_suite(void)
{
	Suite *s = suite_create("shards");
	TCase *tc = tcase_create("shards");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_shards_answer_as_one_daemon);
	tcase_add_test(tc, test_each_shard_holds_its_urls);
	tcase_add_test(tc, test_jump_hash_moves_only_to_the_new_shard);
	tcase_add_test(tc, test_shard_down_fails_only_its_urls);
	tcase_add_test(tc, test_shard_killed_mid_call);
	tcase_add_test(tc, test_shard_lists_refused);
	tcase_add_test(tc, test_docs_as_one_daemon);
	tcase_add_test(tc, test_docs_shard_down);
	tcase_add_test(tc, test_doc_group_fields);
	suite_add_tcase(s, tc);
	return s;
}
