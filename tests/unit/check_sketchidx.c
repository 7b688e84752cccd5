/*
 * Unit tests for sketchidx: the candidates of random queries against a
 * brute-force model (every stored document whose keys meet the query's
 * hashes at least SKETCH_MIN_KEYS times), through inserts, deletes, a
 * bulk load, an image read back, directory growth and keys too common to
 * read; and readers
 * running while the writer changes the index.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sketchidx.h"
#include "testutil.h"

/* A stored document of the model: its id and keys (0: none, deleted). */
struct mdoc {
	uint32_t id;
	uint32_t keys[SKETCH_KEYS];
	size_t nkeys;
};

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* A sketch of n distinct hashes drawn from a pool of pool values. */
static void
random_sketch(uint64_t *seed, uint32_t pool, uint32_t n, struct sketch *s)
{
	memset(s, 0, sizeof(*s));
	while (s->n < n) {
		uint32_t v = (uint32_t)tu_rand_below(seed, pool) * 2654435761u;
		bool dup = false;

		for (uint32_t i = 0; i < s->n && !dup; i++)
			dup = s->h[i] == v;
		if (!dup)
			s->h[s->n++] = v;
	}
	qsort(s->h, s->n, sizeof(s->h[0]), cmp_u32);
	s->shingles = n;
}

/* The model's candidates for q: ids ascending. */
static size_t
model_candidates(const struct mdoc *docs, size_t n, const struct sketch *q,
    uint32_t exclude, uint32_t odd_only, uint32_t *out)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned shared = 0;

		if (docs[i].id == 0 || docs[i].id == exclude ||
		    (odd_only && docs[i].id % 2 == 0))
			continue;
		/* q's hashes are sorted and distinct; its first
		 * SKETCH_PROBES are looked up. */
		for (size_t k = 0; k < docs[i].nkeys; k++)
			shared += bsearch(&docs[i].keys[k], q->h, q->n <
			    SKETCH_PROBES ? q->n : SKETCH_PROBES,
			    sizeof(q->h[0]), cmp_u32) != NULL;
		if (shared >= SKETCH_MIN_KEYS)
			out[m++] = docs[i].id;
	}
	qsort(out, m, sizeof(*out), cmp_u32);
	return m;
}

static int
odd(uint32_t id, void *arg)
{
	(void)arg;
	return id % 2 == 1;
}

/* Queries with random sketches against the model. */
static void
check_queries(struct sketchidx *x, const struct mdoc *docs, size_t n,
    uint64_t *seed, uint32_t pool, int queries)
{
	uint32_t *got = malloc(n * sizeof(*got) + 4);
	uint32_t *want = malloc(n * sizeof(*want) + 4);

	ck_assert_ptr_nonnull(got);
	ck_assert_ptr_nonnull(want);
	for (int t = 0; t < queries; t++) {
		struct sketchidx_counts counts = { 0, 0 };
		uint32_t exclude = (uint32_t)tu_rand_below(seed, n + 1);
		uint32_t filtered = t % 3 == 0;
		struct sketch q;
		int64_t m;
		size_t w;

		random_sketch(seed, pool, 1 + (uint32_t)tu_rand_below(seed,
		    SKETCH_K), &q);
		/* Now and then a stored document's own keys. */
		if (t % 4 == 1 && n > 0) {
			const struct mdoc *d = &docs[tu_rand_below(seed, n)];

			memcpy(q.h, d->keys, d->nkeys * sizeof(q.h[0]));
			q.n = (uint32_t)d->nkeys;
			qsort(q.h, q.n, sizeof(q.h[0]), cmp_u32);
		}
		m = sketchidx_candidates(x, &q, filtered ? odd : NULL, NULL,
		    exclude, got, n, &counts);
		w = model_candidates(docs, n, &q, exclude, filtered, want);
		ck_assert_int_eq(m, (int64_t)w);
		ck_assert_mem_eq(got, want, w * sizeof(*got));
	}
	free(got);
	free(want);
}

/* Files document d in the index and the model. */
static void
add(struct sketchidx *x, struct mdoc *d, uint32_t id, uint64_t *seed,
    uint32_t pool)
{
	struct sketch s;

	random_sketch(seed, pool, 1 + (uint32_t)tu_rand_below(seed,
	    SKETCH_KEYS), &s);
	d->id = id;
	d->nkeys = sketch_keys(&s, d->keys);
	ck_assert_int_eq(sketchidx_insert(x, id, d->keys, d->nkeys), 0);
}

/*
 * Random documents over a small pool of hashes (so that keys are shared
 * often), then deletes and re-inserts; the candidates always those of
 * the model, and the counts of entries right.
 */
START_TEST(test_model)
{
	enum { N = 3000, POOL = 6000 };
	struct mdoc *docs = calloc(N, sizeof(*docs));
	struct sketchidx *x = sketchidx_new(0);
	uint64_t seed = 42, entries = 0;

	ck_assert_ptr_nonnull(docs);
	ck_assert_ptr_nonnull(x);
	for (uint32_t i = 0; i < N; i++) {
		add(x, &docs[i], i + 1, &seed, POOL);
		entries += docs[i].nkeys;
	}
	ck_assert_uint_eq(sketchidx_entries(x), entries);
	check_queries(x, docs, N, &seed, POOL, 300);
	/* Deletes, each key found; then some back with new keys. */
	for (uint32_t i = 0; i < N; i += 3) {
		ck_assert_uint_eq(sketchidx_delete(x, docs[i].id,
		    docs[i].keys, docs[i].nkeys), docs[i].nkeys);
		entries -= docs[i].nkeys;
		docs[i].id = 0;
	}
	ck_assert_uint_eq(sketchidx_entries(x), entries);
	check_queries(x, docs, N, &seed, POOL, 300);
	for (uint32_t i = 0; i < N; i += 6) {
		add(x, &docs[i], i + 1, &seed, POOL);
		entries += docs[i].nkeys;
	}
	ck_assert_uint_eq(sketchidx_entries(x), entries);
	check_queries(x, docs, N, &seed, POOL, 300);
	/* A key not filed is not found; a second delete finds nothing. */
	ck_assert_uint_eq(sketchidx_delete(x, 999999, docs[1].keys,
	    docs[1].nkeys), 0);
	ck_assert_int_eq(sketchidx_has(x, docs[1].id, docs[1].keys[0]), 1);
	ck_assert_int_eq(sketchidx_has(x, docs[1].id + 7, docs[1].keys[0]),
	    0);
	ck_assert_uint_gt(sketchidx_memory_bytes(x), entries * 6);
	sketchidx_free(x);
	free(docs);
}
END_TEST

/*
 * A bulk load answers as inserts one by one do, also into an index that
 * holds documents already; inserts after it too; by one thread or by
 * several sharing the shards.
 */
START_TEST(test_bulk_load)
{
	enum { N = 20000, POOL = 1000000, BEFORE = 50 };
	static const unsigned threads[] = { 1, 4 };
	unsigned t = threads[_i];
	struct mdoc *docs = calloc(N + 100, sizeof(*docs));
	struct sketchidx_stage *st = sketchidx_stage_new();
	struct sketchidx *x = sketchidx_new(N), *y = sketchidx_new(0);
	uint64_t seed = 7 + t;
	size_t n = 0, before = 0;

	ck_assert_ptr_nonnull(docs);
	ck_assert_ptr_nonnull(st);
	for (uint32_t i = 0; i < N; i++) {
		add(y, &docs[i], i + 1, &seed, POOL);
		if (i < BEFORE) {
			/* In x before the load. */
			ck_assert_int_eq(sketchidx_insert(x, docs[i].id,
			    docs[i].keys, docs[i].nkeys), 0);
			before += docs[i].nkeys;
			continue;
		}
		ck_assert_int_eq(sketchidx_stage_add(st, docs[i].id,
		    docs[i].keys, docs[i].nkeys), 0);
		n += docs[i].nkeys;
	}
	ck_assert_uint_eq(sketchidx_stage_entries(st), n);
	ck_assert_int_eq(sketchidx_bulk_load(x, st, t), 0);
	ck_assert_uint_eq(sketchidx_stage_entries(st), 0);
	ck_assert_uint_eq(sketchidx_entries(x), before + n);
	for (uint32_t i = N; i < N + 100; i++)
		add(x, &docs[i], i + 1, &seed, POOL);
	check_queries(x, docs, N + 100, &seed, POOL, 200);
	check_queries(y, docs, N, &seed, POOL, 200);
	sketchidx_stage_free(st);
	sketchidx_free(x);
	sketchidx_free(y);
	free(docs);
}
END_TEST

/*
 * Directories double as documents arrive (far past what the index was
 * sized for), and the answers stay the model's.
 */
START_TEST(test_growth)
{
	enum { N = 150000, POOL = 2000000 };
	struct mdoc *docs = calloc(N, sizeof(*docs));
	struct sketchidx *x = sketchidx_new(0);
	uint64_t seed = 99, before;

	ck_assert_ptr_nonnull(docs);
	before = sketchidx_memory_bytes(x);
	for (uint32_t i = 0; i < N; i++)
		add(x, &docs[i], i + 1, &seed, POOL);
	ck_assert_uint_gt(sketchidx_memory_bytes(x), before);
	check_queries(x, docs, N, &seed, POOL, 100);
	sketchidx_free(x);
	free(docs);
}
END_TEST

/* x's restart image, in memory; its length in *len. */
static char *
image_of(struct sketchidx *x, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(sketchidx_image_write(x, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_uint_eq(*len, sketchidx_image_bytes(x));
	return buf;
}

/*
 * An index read back from its image answers as the index written: shards
 * whose directories grew past what a new index is sized for, others
 * empty, after deletes; by one thread or several; and it takes inserts
 * and deletes after.  An image damaged anywhere (cut short, a byte
 * changed) is refused as damaged or gives an index that is freed
 * cleanly, never a crash.
 */
START_TEST(test_image)
{
	enum { N = 40000, POOL = 1000000 };
	struct mdoc *docs = calloc(N + 100, sizeof(*docs));
	struct sketchidx *x = sketchidx_new(0), *y;
	uint64_t seed = 5 + (uint64_t)_i;
	unsigned threads = _i ? 3 : 1;
	const char *why;
	size_t len;
	char *img;

	ck_assert_ptr_nonnull(docs);
	for (uint32_t i = 0; i < N; i++)
		add(x, &docs[i], i + 1, &seed, POOL);
	for (uint32_t i = 0; i < N; i += 5) {
		sketchidx_delete(x, docs[i].id, docs[i].keys, docs[i].nkeys);
		docs[i].id = 0;
	}
	img = image_of(x, &len);
	/* Sized for more: its directories are larger than the image's. */
	ck_assert_ptr_nonnull(y = sketchidx_new(20 * N));
	ck_assert_int_eq(sketchidx_image_load(y, img, len, threads, &why), 0);
	ck_assert_uint_eq(sketchidx_entries(y), sketchidx_entries(x));
	check_queries(y, docs, N, &seed, POOL, 200);
	for (uint32_t i = N; i < N + 100; i++)
		add(y, &docs[i], i + 1, &seed, POOL);
	for (uint32_t i = 1; i < N; i += 5) {
		ck_assert_uint_eq(sketchidx_delete(y, docs[i].id,
		    docs[i].keys, docs[i].nkeys), docs[i].nkeys);
		docs[i].id = 0;
	}
	check_queries(y, docs, N + 100, &seed, POOL, 200);
	sketchidx_free(y);
	/* Damage: cut short, and a byte at random changed (a count, a
	 * directory's bits, an offset...): refused or harmless. */
	for (int t = 0; t < 60; t++) {
		size_t cut = t < 20 ? tu_rand_below(&seed, len) : len;
		size_t at = tu_rand_below(&seed, len);
		char saved = img[at];
		int rc;

		if (t >= 20)
			img[at] ^= (char)(1 + tu_rand_below(&seed, 255));
		ck_assert_ptr_nonnull(y = sketchidx_new(0));
		rc = sketchidx_image_load(y, img, cut, threads, &why);
		if (t < 20)
			ck_assert_int_eq(rc, -1);
		if (rc == -1)
			ck_assert_str_eq(why, "damaged");
		sketchidx_free(y);
		img[at] = saved;
	}
	free(img);
	sketchidx_free(x);
	free(docs);
}
END_TEST

/* A key more than SKETCHIDX_LIST_MAX documents hold is passed over. */
START_TEST(test_common_key)
{
	struct sketchidx *x = sketchidx_new(0);
	struct sketchidx_counts counts = { 0, 0 };
	uint32_t keys[2] = { 0x11111111, 0x22222222 }, other = 0x33333333;
	uint32_t *out = malloc((SKETCHIDX_LIST_MAX + 10) * sizeof(*out));
	struct sketch q = { .shingles = 3, .n = 3,
	    .h = { 0x11111111, 0x22222222, 0x33333333 } };

	ck_assert_ptr_nonnull(out);
	/* As many documents as may hold the keys: all candidates. */
	for (uint32_t id = 1; id <= SKETCHIDX_LIST_MAX; id++)
		ck_assert_int_eq(sketchidx_insert(x, id, keys, 2), 0);
	ck_assert_int_eq(sketchidx_candidates(x, &q, NULL, NULL, 0, out,
	    SKETCHIDX_LIST_MAX + 10, &counts), SKETCHIDX_LIST_MAX);
	ck_assert_uint_eq(counts.keys_skipped, 0);
	/* One more: both keys tell nothing now; a document that also holds
	 * the third is a candidate no more either. */
	ck_assert_int_eq(sketchidx_insert(x, SKETCHIDX_LIST_MAX + 1, keys, 2),
	    0);
	ck_assert_int_eq(sketchidx_insert(x, SKETCHIDX_LIST_MAX + 2, &other,
	    1), 0);
	ck_assert_int_eq(sketchidx_candidates(x, &q, NULL, NULL, 0, out,
	    SKETCHIDX_LIST_MAX + 10, &counts), 0);
	ck_assert_uint_eq(counts.keys_skipped, 2);
	sketchidx_free(x);
	free(out);
}
END_TEST

/* ---- Readers while the writer changes the index. ---- */

struct race {
	struct sketchidx *x;
	const struct mdoc *fixed;	/* never changed: always found */
	size_t nfixed;
	volatile int stop;
	unsigned long queries;
	int failed;
};

static void *
race_reader(void *arg)
{
	struct race *r = arg;
	uint32_t out[64];
	uint64_t seed = 5;

	while (!r->stop) {
		const struct mdoc *d = &r->fixed[tu_rand_below(&seed,
		    r->nfixed)];
		struct sketchidx_counts counts = { 0, 0 };
		struct sketch q = { .shingles = (uint32_t)d->nkeys,
		    .n = (uint32_t)d->nkeys };
		int64_t m;
		bool found = false;

		memcpy(q.h, d->keys, d->nkeys * sizeof(q.h[0]));
		qsort(q.h, q.n, sizeof(q.h[0]), cmp_u32);
		m = sketchidx_candidates(r->x, &q, NULL, NULL, 0, out, 64,
		    &counts);
		for (int64_t i = 0; i < m && i < 64; i++)
			found |= out[i] == d->id;
		if (!found && m <= 64)
			r->failed = 1;
		r->queries++;
	}
	return NULL;
}

/*
 * Documents that no write touches are found by every query made while
 * other documents are inserted and deleted (directories doubling
 * meanwhile).
 */
START_TEST(test_readers_during_writes)
{
	enum { FIXED = 2000, CHURN = 60000, POOL = 1 << 30 };
	struct mdoc *fixed = calloc(FIXED, sizeof(*fixed));
	struct mdoc *churn = calloc(CHURN, sizeof(*churn));
	struct race r = { .fixed = fixed, .nfixed = FIXED };
	pthread_t t[2];
	uint64_t seed = 11;

	ck_assert_ptr_nonnull(fixed);
	ck_assert_ptr_nonnull(churn);
	ck_assert_ptr_nonnull(r.x = sketchidx_new(0));
	for (uint32_t i = 0; i < FIXED; i++) {
		add(r.x, &fixed[i], i + 1, &seed, POOL);
		/* Two keys at least, so that a query of them finds it. */
		while (fixed[i].nkeys < SKETCH_MIN_KEYS) {
			sketchidx_delete(r.x, fixed[i].id, fixed[i].keys,
			    fixed[i].nkeys);
			add(r.x, &fixed[i], i + 1, &seed, POOL);
		}
	}
	for (int k = 0; k < 2; k++)
		ck_assert_int_eq(pthread_create(&t[k], NULL, race_reader, &r),
		    0);
	for (uint32_t i = 0; i < CHURN; i++) {
		add(r.x, &churn[i], FIXED + 1 + i, &seed, POOL);
		if (i % 2 == 1)
			sketchidx_delete(r.x, churn[i - 1].id, churn[i - 1].keys,
			    churn[i - 1].nkeys);
	}
	r.stop = 1;
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	ck_assert_int_eq(r.failed, 0);
	ck_assert_uint_gt(r.queries, 0);
	sketchidx_free(r.x);
	free(fixed);
	free(churn);
}
END_TEST

Suite *sketchidx_suite(void);

Suite *
sketchidx_suite(void)
{
	Suite *s = suite_create("sketchidx");
	TCase *tc = tcase_create("sketchidx");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_model);
	tcase_add_loop_test(tc, test_bulk_load, 0, 2);
	tcase_add_test(tc, test_growth);
	tcase_add_loop_test(tc, test_image, 0, 2);
	tcase_add_test(tc, test_common_key);
	tcase_add_test(tc, test_readers_during_writes);
	suite_add_tcase(s, tc);
	return s;
}
