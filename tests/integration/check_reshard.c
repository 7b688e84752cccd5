/*
 * Integration tests of adding a shard (docs/sharding.md, "Adding a
 * shard"): three real daemons as shards, a fourth added by `nddctl
 * reshard` while a client of the three-shard list keeps submitting,
 * checking and deleting URLs and storing documents, every answer compared
 * with one daemon's, the reference, given the same requests in the same
 * order.  Afterwards each shard holds exactly the keys the four-place list
 * routes to it, the others answer MOVED, and stored documents keep their
 * groups.
 */
#include <check.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corpus.h"
#include "harness.h"
#include "testutil.h"
#include "urlgen.h"

#define OLD 3
#define NEW (OLD + 1)
#define REAL 3000
#define SYNTHETIC 60000
#define DOCS_BEFORE 300
#define DOCS_ROUND 12

struct cluster {
	struct harness shard[NEW];
	struct harness ref;
	const char *addr[NEW];
};

static void
cluster_start(struct cluster *cl)
{
	for (int i = 0; i < NEW; i++) {
		harness_init(&cl->shard[i], NULL);
		harness_start(&cl->shard[i]);
		cl->addr[i] = cl->shard[i].address;
	}
	harness_init(&cl->ref, NULL);
	harness_start(&cl->ref);
}

static void
cluster_cleanup(struct cluster *cl)
{
	for (int i = 0; i < NEW; i++)
		harness_cleanup(&cl->shard[i]);
	harness_cleanup(&cl->ref);
}

/* The documents: Reuters bodies, each under a URL of its own, with a
 * near copy of an earlier one now and then. */
struct docs {
	size_t n;
	char **urls, **bodies;
	struct nddd_doc_item *items;
};

static void
docs_make(struct docs *d, const struct corpus *co, size_t n)
{
	uint64_t seed = 7;

	d->n = n;
	ck_assert_ptr_nonnull(d->urls = calloc(n, sizeof(*d->urls)));
	ck_assert_ptr_nonnull(d->bodies = calloc(n, sizeof(*d->bodies)));
	ck_assert_ptr_nonnull(d->items = calloc(n, sizeof(*d->items)));
	for (size_t i = 0; i < n; i++) {
		size_t src = i % co->n;

		ck_assert_int_ne(asprintf(&d->urls[i], "http://wire%zu.example"
		    "/story/%zu", i % 11, i), -1);
		if (i > 20 && tu_rand_below(&seed, 4) == 0) {
			src = tu_rand_below(&seed, i) % co->n;
			ck_assert_int_ne(asprintf(&d->bodies[i], "%.*s copy%zu",
			    (int)co->docs[src].len, co->docs[src].data, i % 3),
			    -1);
		} else
			d->bodies[i] = strndup(co->docs[src].data,
			    co->docs[src].len);
		ck_assert_ptr_nonnull(d->bodies[i]);
		d->items[i] = (struct nddd_doc_item){ .url = d->urls[i],
		    .url_len = strlen(d->urls[i]), .body = d->bodies[i],
		    .body_len = strlen(d->bodies[i]), .format = NDDD_TEXT };
	}
}

static void
docs_free(struct docs *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->urls[i]);
		free(d->bodies[i]);
	}
	free(d->urls);
	free(d->bodies);
	free(d->items);
}

/* What the load saw: differences from the reference, and its rounds. */
struct load {
	nddd_shards *s;
	nddd_client *ref;
	struct urllist *pool;
	struct docs *docs;
	size_t next_doc;
	uint64_t (*groups)[2];		/* per document: shards', ref's */
	atomic_bool stop;
	atomic_bool resharding;
	atomic_uint rounds;
	unsigned rounds_resharding, items;
	unsigned mismatches;
	char first[512];		/* the first difference */
};

static void
mismatch(struct load *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
mismatch(struct load *l, const char *fmt, ...)
{
	va_list ap;

	if (l->mismatches++ > 0)
		return;
	va_start(ap, fmt);
	vsnprintf(l->first, sizeof(l->first), fmt, ap);
	va_end(ap);
}

/* A URL round: a batch of the pool, one operation, both sides. */
static void
url_round(struct load *l, uint64_t *rng)
{
	static const enum nddd_url_op ops[] = { NDDD_URL_SUBMIT,
	    NDDD_URL_SUBMIT, NDDD_URL_CHECK, NDDD_URL_CHECK, NDDD_URL_DELETE };
	enum nddd_url_op op = ops[tu_rand_below(rng, 5)];
	const char *urls[200];
	struct nddd_url_result got[200], want[200];
	size_t n = 200;

	for (size_t i = 0; i < n; i++)
		urls[i] = l->pool->urls[tu_rand_below(rng, l->pool->n)];
	if (nddd_shards_urls(l->s, op, urls, n, got, 100, 1) != 0 ||
	    nddd_urls(l->ref, op, urls, n, want, 100, 1, NULL, NULL) != 0) {
		mismatch(l, "a URL call failed: %s", nddd_shards_errstr(l->s));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (got[i].code != want[i].code || got[i].count !=
		    want[i].count)
			mismatch(l, "op %d on %s: code %d count %llu (%s), one "
			    "daemon code %d count %llu", op, urls[i],
			    got[i].code, (unsigned long long)got[i].count,
			    got[i].message ? got[i].message : "", want[i].code,
			    (unsigned long long)want[i].count);
		l->items++;
	}
	nddd_urls_results_free(got, n);
	nddd_urls_results_free(want, n);
}

/* A document round: the next few documents on both sides, compared:
 * fingerprint, neighbours, nearest distance, and groups named alike. */
static void
doc_round(struct load *l)
{
	size_t from = l->next_doc, n = DOCS_ROUND;
	struct nddd_doc got[DOCS_ROUND], want[DOCS_ROUND];

	if (from + n > l->docs->n)
		return;
	l->next_doc += n;
	if (nddd_shards_docs(l->s, l->docs->items + from, n, got, n) != 0 ||
	    nddd_docs(l->ref, l->docs->items + from, n, want, n, 1, NULL,
	    NULL) != 0) {
		mismatch(l, "a document call failed: %s",
		    nddd_shards_errstr(l->s));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct nddd_doc *g = &got[i], *w = &want[i];

		l->groups[from + i][0] = g->group;
		l->groups[from + i][1] = w->group;
		if (g->code != w->code || g->simhash != w->simhash ||
		    g->near_total != w->near_total ||
		    (g->nnear > 0) != (w->nnear > 0) ||
		    (w->nnear > 0 && g->near[0].distance !=
		    w->near[0].distance))
			mismatch(l, "document %s: code %d, %llu neighbours; "
			    "one daemon code %d, %llu (%s)",
			    l->docs->urls[from + i], g->code,
			    (unsigned long long)g->near_total, w->code,
			    (unsigned long long)w->near_total,
			    g->message ? g->message : "");
	}
	nddd_docs_results_free(got, n);
	nddd_docs_results_free(want, n);
}

static void *
load_run(void *arg)
{
	struct load *l = arg;
	uint64_t rng = 20261125;

	while (!atomic_load(&l->stop)) {
		bool during = atomic_load(&l->resharding);

		url_round(l, &rng);
		doc_round(l);
		atomic_fetch_add(&l->rounds, 1);
		if (during && atomic_load(&l->resharding))
			l->rounds_resharding++;
	}
	return NULL;
}

/*
 * Document groups name the same partition on both sides: two documents
 * share a group on the shards exactly when they do on the reference.
 */
static void
assert_same_partition(const struct load *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			bool gs = l->groups[i][0] != 0 &&
			    l->groups[i][0] == l->groups[j][0];
			bool gr = l->groups[i][1] != 0 &&
			    l->groups[i][1] == l->groups[j][1];

			ck_assert_msg(gs == gr, "%s and %s: one group on the "
			    "shards %d, on one daemon %d", l->docs->urls[i],
			    l->docs->urls[j], gs, gr);
		}
}

static int
run_reshard(const struct cluster *cl, char **out)
{
	const char *bin = getenv("NDDCTL_BIN");
	char *cmd, *dir = tu_tmpdir(), *path;
	int status;

	ck_assert_int_ne(asprintf(&path, "%s/out", dir), -1);
	ck_assert_int_ne(asprintf(&cmd, "%s -H %s,%s,%s reshard --add %s "
	    "> %s", bin && *bin ? bin : "clients/nddctl", cl->addr[0],
	    cl->addr[1], cl->addr[2], cl->addr[3], path), -1);
	status = system(cmd);
	*out = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(*out);
	free(cmd);
	free(path);
	free(dir);
	return status;
}

/*
 * The host index holds every stored URL's text (url_forget's complete):
 * the new shard got the texts of the URLs it took over.
 */
static void
assert_hosts_complete(const struct harness *h)
{
	nddd_client *c = harness_client(h);
	struct nddd_reply *r;
	uint64_t id;

	ck_assert_int_eq(nddd_send_url_forget_host(c, NULL,
	    "nothing-here.example", 0, &id), 0);
	ck_assert_ptr_nonnull(r = nddd_call(c, id));
	ck_assert_int_eq(r->kind, NDDD_REPLY_FORGET);
	ck_assert_msg(r->complete, "%s: the host index misses URLs",
	    h->address);
	nddd_reply_free(r);
	nddd_close(c);
}

/* The stats of shard t. */
static void
shard_stats(const struct cluster *cl, int t, struct nddd_stats *st)
{
	nddd_client *c = harness_client(&cl->shard[t]);

	ck_assert_int_eq(nddd_stats(c, st), 0);
	nddd_close(c);
}

START_TEST(test_add_a_shard_under_load)
{
	char *dir = tu_data_path("text_corpora/reuters21578");
	struct corpus *co = corpus_reuters(dir, 400);
	struct cluster cl;
	struct urllist real = { 0 }, synth = { 0 }, pool = { 0 };
	struct docs docs;
	struct load l = { 0 };
	struct nddd_doc *got, *want;
	struct nddd_stats st, ref_st;
	nddd_canon *canon;
	pthread_t th;
	char *out, *path, *err = NULL;
	uint64_t urls = 0, ndocs = 0;
	size_t seen = 0;

	ck_assert_ptr_nonnull(co);
	path = tu_data_path("url_lists/ada_url_various_datasets/kasztp.txt");
	urlgen_file(&real, path);
	free(path);
	urlgen_synthetic(&synth, SYNTHETIC, 0);
	ck_assert_ptr_nonnull(pool.urls = calloc(REAL + SYNTHETIC,
	    sizeof(*pool.urls)));
	for (size_t i = 0; i < real.n && i < REAL; i++)
		pool.urls[pool.n++] = real.urls[i];
	for (size_t i = 0; i < synth.n; i++)
		pool.urls[pool.n++] = synth.urls[i];
	docs_make(&docs, co, DOCS_BEFORE + 600 * DOCS_ROUND);
	ck_assert_ptr_nonnull(l.groups = calloc(docs.n, sizeof(*l.groups)));
	cluster_start(&cl);
	ck_assert_ptr_nonnull(l.s = nddd_shards_open(cl.addr, OLD, NULL,
	    &err));
	l.ref = harness_client(&cl.ref);
	l.pool = &pool;
	l.docs = &docs;

	/* Before: the whole pool submitted through the three shards. */
	{
		struct nddd_url_result *got1, *want1;

		ck_assert_ptr_nonnull(got1 = calloc(pool.n, sizeof(*got1)));
		ck_assert_ptr_nonnull(want1 = calloc(pool.n, sizeof(*want1)));
		ck_assert_int_eq(nddd_shards_urls(l.s, NDDD_URL_SUBMIT,
		    (const char *const *)pool.urls, pool.n, got1, 1000, 4), 0);
		ck_assert_int_eq(nddd_urls(l.ref, NDDD_URL_SUBMIT,
		    (const char *const *)pool.urls, pool.n, want1, 1000, 4,
		    NULL, NULL), 0);
		for (size_t i = 0; i < pool.n; i++)
			ck_assert_uint_eq(got1[i].count, want1[i].count);
		nddd_urls_results_free(got1, pool.n);
		nddd_urls_results_free(want1, pool.n);
		free(got1);
		free(want1);
	}

	/* Before: documents stored through the three shards. */
	ck_assert_ptr_nonnull(got = calloc(DOCS_BEFORE, sizeof(*got)));
	ck_assert_ptr_nonnull(want = calloc(DOCS_BEFORE, sizeof(*want)));
	ck_assert_int_eq(nddd_shards_docs(l.s, docs.items, DOCS_BEFORE, got,
	    64), 0);
	ck_assert_int_eq(nddd_docs(l.ref, docs.items, DOCS_BEFORE, want, 64,
	    1, NULL, NULL), 0);
	for (size_t i = 0; i < DOCS_BEFORE; i++) {
		ck_assert_int_eq(got[i].code, NDDD_OK);
		l.groups[i][0] = got[i].group;
		l.groups[i][1] = want[i].group;
	}
	nddd_docs_results_free(got, DOCS_BEFORE);
	nddd_docs_results_free(want, DOCS_BEFORE);
	free(got);
	free(want);
	l.next_doc = DOCS_BEFORE;

	/* During: the load goes on while nddctl adds the fourth shard. */
	ck_assert_int_eq(pthread_create(&th, NULL, load_run, &l), 0);
	while (atomic_load(&l.rounds) < 5)
		usleep(10000);
	atomic_store(&l.resharding, true);
	ck_assert_int_eq(run_reshard(&cl, &out), 0);
	atomic_store(&l.resharding, false);
	ck_assert_msg(strstr(out, "added ") != NULL, "%s", out);
	free(out);
	/* After: a few rounds more, routed by the four-place list. */
	{
		unsigned at = atomic_load(&l.rounds);

		while (atomic_load(&l.rounds) < at + 5)
			usleep(10000);
	}
	atomic_store(&l.stop, true);
	pthread_join(th, NULL);
	ck_assert_msg(l.mismatches == 0, "%u answers differ from one "
	    "daemon's, the first: %s", l.mismatches, l.first);
	ck_assert_msg(l.rounds_resharding > 0, "no round ran while the shard "
	    "was added");
	ck_assert_uint_eq(nddd_shards_count(l.s), NEW);
	assert_same_partition(&l, l.next_doc);

	/* Each shard holds exactly what the four places route to it. */
	ck_assert_ptr_nonnull(canon = nddd_canon_new(
	    nddd_shards_canon_id(l.s), &err));
	for (int t = 0; t < NEW; t++) {
		shard_stats(&cl, t, &st);
		ck_assert_uint_eq(st.shard_count, NEW);
		ck_assert_uint_eq(st.shard_place, (uint32_t)t);
		ck_assert_int_eq(st.shard_importing, 0);
		ck_assert_msg(st.urls > 0 && st.docs > 0, "shard %d holds "
		    "%llu URLs, %llu documents", t,
		    (unsigned long long)st.urls, (unsigned long long)st.docs);
		urls += st.urls;
		ndocs += st.docs;
		harness_assert_verified(&cl.shard[t], st.urls, "after");
		assert_hosts_complete(&cl.shard[t]);
	}
	{
		nddd_client *ref = harness_client(&cl.ref);

		ck_assert_int_eq(nddd_stats(ref, &ref_st), 0);
		nddd_close(ref);
	}
	ck_assert_uint_eq(urls, ref_st.urls);
	ck_assert_uint_eq(ndocs, ref_st.docs);
	for (size_t i = 0; i < pool.n; i += 7) {
		unsigned char d[NDDD_DIGEST_LEN];
		const char *cause;
		struct nddd_url_result want1, res;
		uint32_t owner;

		if (nddd_canon_digest(canon, pool.urls[i],
		    strlen(pool.urls[i]), d, &cause) == -1)
			continue;
		owner = nddd_shard_of(d, NEW);
		ck_assert_int_eq(nddd_urls(l.ref, NDDD_URL_CHECK, (const char
		    *const *)&pool.urls[i], 1, &want1, 1, 1, NULL, NULL), 0);
		for (int t = 0; t < NEW; t++) {
			nddd_client *c = harness_client(&cl.shard[t]);

			ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK,
			    (const char *const *)&pool.urls[i], 1, &res, 1, 1,
			    NULL, NULL), 0);
			if ((uint32_t)t == owner) {
				ck_assert_int_eq(res.code, NDDD_OK);
				ck_assert_uint_eq(res.count, want1.count);
				seen += res.count > 0;
			} else
				ck_assert_msg(res.code == NDDD_MOVED, "%s on "
				    "shard %d, owner %u: code %d", pool.urls[i],
				    t, owner, res.code);
			nddd_urls_results_free(&res, 1);
			nddd_close(c);
		}
		nddd_urls_results_free(&want1, 1);
	}
	ck_assert_uint_gt(seen, 50);

	nddd_canon_free(canon);
	nddd_close(l.ref);
	nddd_shards_close(l.s);
	free(l.groups);
	docs_free(&docs);
	free(pool.urls);
	urlgen_free(&real);
	urlgen_free(&synth);
	corpus_free(co);
	free(dir);
	free(err);
	cluster_cleanup(&cl);
}
END_TEST

/* A new shard must start empty, with the settings of the others. */
START_TEST(test_reshard_refuses_a_shard_with_keys)
{
	struct cluster cl;
	nddd_client *c;
	struct nddd_url_result r;
	const char *u = "http://example.com/already";
	char *out;

	cluster_start(&cl);
	c = harness_client(&cl.shard[3]);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, &u, 1, &r, 1, 1, NULL,
	    NULL), 0);
	nddd_urls_results_free(&r, 1);
	nddd_close(c);
	ck_assert_int_ne(run_reshard(&cl, &out), 0);
	ck_assert_ptr_null(strstr(out, "added "));
	free(out);
	/* Nothing changed on the old shards: they answer for every key. */
	for (int t = 0; t < OLD; t++) {
		struct nddd_stats st;

		shard_stats(&cl, t, &st);
		ck_assert_uint_eq(st.shard_count, 0);
	}
	cluster_cleanup(&cl);
}
END_TEST

Suite *reshard_suite(void);

Suite *
reshard_suite(void)
{
	Suite *s = suite_create("reshard");
	TCase *tc = tcase_create("reshard");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_add_a_shard_under_load);
	tcase_add_test(tc, test_reshard_refuses_a_shard_with_keys);
	suite_add_tcase(s, tc);
	return s;
}
