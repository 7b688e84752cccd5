/*
 * Tests for nearidx: every query against brute force over a model of the
 * stored documents, through seeded sequences of inserts, deletes and
 * queries, for every supported shape of index and every SIMD kernel this
 * CPU runs.  The fingerprints are built to be hard: planted neighbours at
 * each distance from 0 to k + 1, exact duplicates under several ids, and
 * families that share most blocks with one template, so that a few
 * buckets of every table grow long.  Also: bulk loading against
 * incremental inserts, directory doubling, truncated results, batches,
 * error returns, and queries running while a writer thread changes the
 * index.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nearidx.h"
#include "testutil.h"

struct shape {
	unsigned k, blocks, tables;
};

/* The default, the two larger ones, and the other keys widths. */
static const struct shape shapes[] = {
	{ 3, 4, 4 }, { 3, 5, 10 }, { 3, 6, 20 }, { 1, 2, 2 }, { 2, 3, 3 },
	{ 2, 4, 6 }, { 4, 6, 15 }, { 3, 7, 35 },
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

static const char *const simds[] = { "scalar", "avx2", "avx512" };

struct model {
	uint64_t *fp;
	uint64_t *id;
	size_t n, cap;
	uint64_t next_id;
};

static void
model_add(struct model *m, uint64_t fp, uint64_t id)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 1024;
		m->fp = realloc(m->fp, m->cap * sizeof(*m->fp));
		m->id = realloc(m->id, m->cap * sizeof(*m->id));
		ck_assert_ptr_nonnull(m->fp);
		ck_assert_ptr_nonnull(m->id);
	}
	m->fp[m->n] = fp;
	m->id[m->n++] = id;
}

static void
model_remove_at(struct model *m, size_t i)
{
	m->fp[i] = m->fp[--m->n];
	m->id[i] = m->id[m->n];
}

static void
model_free(struct model *m)
{
	free(m->fp);
	free(m->id);
}

static int
hit_cmp(const void *a, const void *b)
{
	const struct nearidx_hit *x = a, *y = b;

	if (x->distance != y->distance)
		return x->distance < y->distance ? -1 : 1;
	return x->doc_id < y->doc_id ? -1 : x->doc_id > y->doc_id;
}

/* The exact answer: every model entry within kq, by (distance, id). */
static size_t
brute(const struct model *m, uint64_t q, unsigned kq, struct nearidx_hit *out)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++) {
		unsigned d = (unsigned)__builtin_popcountll(q ^ m->fp[i]);

		if (d <= kq)
			out[n++] = (struct nearidx_hit){ .doc_id = m->id[i],
			    .fp = m->fp[i], .distance = d };
	}
	qsort(out, n, sizeof(*out), hit_cmp);
	return n;
}

static void
hits_equal(const struct nearidx_hit *got, const struct nearidx_hit *want,
    size_t n, uint64_t q)
{
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(got[i].doc_id == want[i].doc_id &&
		    got[i].fp == want[i].fp &&
		    got[i].distance == want[i].distance,
		    "query %016llx hit %zu: got id %llu fp %016llx d %u, "
		    "want id %llu fp %016llx d %u", (unsigned long long)q, i,
		    (unsigned long long)got[i].doc_id,
		    (unsigned long long)got[i].fp, got[i].distance,
		    (unsigned long long)want[i].doc_id,
		    (unsigned long long)want[i].fp, want[i].distance);
	}
}

/* Queries q with every kq and a few output sizes; all must match. */
static void
check_query(struct nearidx *x, const struct model *m, uint64_t q,
    unsigned k, uint64_t *seed)
{
	struct nearidx_hit *want = malloc((m->n + 1) * sizeof(*want));
	struct nearidx_hit *got = malloc((m->n + 1) * sizeof(*got));
	unsigned kq = (unsigned)tu_rand_below(seed, k + 1);
	size_t nw = brute(m, q, kq, want), max;
	int64_t total;

	total = nearidx_query(x, q, kq, got, m->n + 1);
	ck_assert_msg(total == (int64_t)nw, "query %016llx kq %u: %lld hits, "
	    "brute force %zu", (unsigned long long)q, kq, (long long)total,
	    nw);
	hits_equal(got, want, nw, q);
	/* Cut short: the best max, still in order, and the full count. */
	max = nw > 0 ? tu_rand_below(seed, nw) : 0;
	total = nearidx_query(x, q, kq, got, max);
	ck_assert_int_eq(total, (int64_t)nw);
	hits_equal(got, want, max, q);
	free(want);
	free(got);
}

static uint64_t
flip_bits(uint64_t fp, unsigned d, uint64_t *seed)
{
	uint64_t mask = 0;

	while ((unsigned)__builtin_popcountll(mask) < d)
		mask |= 1ULL << tu_rand_below(seed, 64);
	return fp ^ mask;
}

/* Bits of the blocks in set (bit j: block j) for b blocks. */
static uint64_t
blocks_mask(unsigned b, uint64_t set)
{
	uint64_t mask = 0;
	unsigned top = 64;

	for (unsigned j = 0; j < b; j++) {
		unsigned w = 64 / b + (j < 64 % b);

		top -= w;
		if (set & (1ULL << j))
			mask |= ((1ULL << w) - 1) << top;
	}
	return mask;
}

/*
 * A fingerprint for the mix: fresh random; near an existing one at 0 to
 * k + 1 bits; or of a family sharing all blocks but one or two with a
 * template, so that some buckets of every table hold many entries.
 */
static uint64_t
next_fp(const struct model *m, unsigned k, unsigned b, uint64_t tmpl,
    uint64_t *seed)
{
	unsigned r = (unsigned)tu_rand_below(seed, 100);

	if (r < 35 || m->n == 0)
		return tu_rand(seed);
	if (r < 75)
		return flip_bits(m->fp[tu_rand_below(seed, m->n)],
		    (unsigned)tu_rand_below(seed, k + 2), seed);
	if (r < 85)
		return m->fp[tu_rand_below(seed, m->n)];	/* duplicate */
	{
		uint64_t keep = blocks_mask(b, ~(1ULL <<
		    tu_rand_below(seed, b) | 1ULL << tu_rand_below(seed, b)));

		return (tmpl & keep) | (tu_rand(seed) & ~keep);
	}
}

/* Small segments, so that compaction runs at test sizes. */
#define SMALL_SEGMENTS (64u << 10)

static struct nearidx *
make_index(const struct shape *s, const char *simd, unsigned load)
{
	struct nearidx_config cfg;
	struct nearidx *x;
	char *cause = NULL;

	nearidx_config_defaults(&cfg);
	cfg.k = s->k;
	cfg.blocks = s->blocks;
	cfg.simd = simd;
	if (load != 0)
		cfg.bucket_load = load;
	cfg.segment_bytes = SMALL_SEGMENTS;
	x = nearidx_new(&cfg, &cause);
	ck_assert_msg(x != NULL, "k %u blocks %u: %s", s->k, s->blocks,
	    cause);
	ck_assert_uint_eq(nearidx_tables(x), s->tables);
	return x;
}

static void
check_verify(struct nearidx *x, const struct model *m)
{
	char *cause = NULL;

	ck_assert_msg(nearidx_verify(x, &cause) == 0, "%s", cause);
	ck_assert_uint_eq(nearidx_count(x), m->n);
}

/*
 * Random inserts, deletes (present, absent, wrong id) and queries on x,
 * mirrored in m, each query checked against brute force.
 */
static void
run_mix(struct nearidx *x, struct model *m, const struct shape *s,
    uint64_t *seed, int steps, int grow_pct)
{
	uint64_t tmpl = tu_rand(seed);

	for (int step = 0; step < steps; step++) {
		unsigned r = (unsigned)tu_rand_below(seed, 100);

		if (r < (unsigned)grow_pct) {
			uint64_t fp = next_fp(m, s->k, s->blocks, tmpl, seed);
			uint64_t id = m->next_id++;

			ck_assert_int_eq(nearidx_insert(x, fp, id), 0);
			model_add(m, fp, id);
		} else if (r < (unsigned)grow_pct + 15 && m->n > 0) {
			size_t i = tu_rand_below(seed, m->n);

			ck_assert_int_eq(nearidx_delete(x, m->fp[i],
			    m->id[i]), 1);
			model_remove_at(m, i);
		} else if (r < (unsigned)grow_pct + 20 && m->n > 0) {
			/* Right fingerprint, id never stored: nothing. */
			size_t i = tu_rand_below(seed, m->n);

			ck_assert_int_eq(nearidx_delete(x, m->fp[i],
			    m->next_id + 1000), 0);
			ck_assert_int_eq(nearidx_delete(x, tu_rand(seed),
			    m->id[i]), 0);
		} else {
			uint64_t q = m->n > 0 && tu_rand_below(seed, 4) != 0 ?
			    flip_bits(m->fp[tu_rand_below(seed, m->n)],
			    (unsigned)tu_rand_below(seed, s->k + 2), seed) :
			    tu_rand(seed);

			check_query(x, m, q, s->k, seed);
		}
		if (step % 1000 == 999)
			check_verify(x, m);
	}
	check_verify(x, m);
}

START_TEST(test_brute_force)
{
	/* _i picks the shape; each shape with every kernel the CPU runs. */
	const struct shape *s = &shapes[_i];

	for (size_t v = 0; v < sizeof(simds) / sizeof(simds[0]); v++) {
		struct nearidx_config cfg;
		struct model m = { .next_id = 1 };
		struct nearidx *x;
		uint64_t seed = 1000 + (uint64_t)_i * 10 + v;
		char *cause = NULL;

		nearidx_config_defaults(&cfg);
		cfg.simd = simds[v];
		if (nearidx_config_check(&cfg, &cause) == -1) {
			free(cause);	/* not on this CPU */
			continue;
		}
		x = make_index(s, simds[v], 0);
		ck_assert_str_eq(nearidx_simd(x), simds[v]);
		/* Growing, then shrinking to nothing, then growing. */
		run_mix(x, &m, s, &seed, 3000, 65);
		run_mix(x, &m, s, &seed, 1500, 10);
		while (m.n > 0) {
			ck_assert_int_eq(nearidx_delete(x, m.fp[m.n - 1],
			    m.id[m.n - 1]), 1);
			m.n--;
		}
		check_verify(x, &m);
		ck_assert_uint_eq(nearidx_distinct(x), 0);
		run_mix(x, &m, s, &seed, 1500, 65);
		model_free(&m);
		nearidx_free(x);
	}
}
END_TEST

START_TEST(test_duplicates)
{
	/* Many documents on one fingerprint, found through every table:
	 * each reported once, oldest first, at every distance. */
	const struct shape *s = &shapes[_i];
	struct nearidx *x = make_index(s, NULL, 0);
	struct model m = { .next_id = 1 };
	uint64_t seed = 77, base = tu_rand(&seed);

	for (int i = 0; i < 300; i++) {
		uint64_t fp = i % 3 == 0 ? base : flip_bits(base,
		    1 + (unsigned)(i % s->k), &seed);
		uint64_t id = 5000 - (uint64_t)i;	/* out of order */

		ck_assert_int_eq(nearidx_insert(x, fp, id), 0);
		model_add(&m, fp, id);
	}
	for (unsigned d = 0; d <= s->k + 1; d++)
		for (int i = 0; i < 20; i++)
			check_query(x, &m, flip_bits(base, d, &seed), s->k,
			    &seed);
	/* Delete the duplicates of base one by one. */
	for (size_t i = 0; i < m.n;) {
		if (m.fp[i] != base) {
			i++;
			continue;
		}
		ck_assert_int_eq(nearidx_delete(x, m.fp[i], m.id[i]), 1);
		model_remove_at(&m, i);
		check_query(x, &m, base, s->k, &seed);
	}
	check_verify(x, &m);
	model_free(&m);
	nearidx_free(x);
}
END_TEST

static int
query_sets_equal(struct nearidx *a, struct nearidx *b, uint64_t q,
    unsigned kq)
{
	static struct nearidx_hit ha[4096], hb[4096];
	int64_t na = nearidx_query(a, q, kq, ha, 4096);
	int64_t nb = nearidx_query(b, q, kq, hb, 4096);

	if (na != nb || na > 4096)
		return 0;
	/* Field by field: the padding after distance is undefined. */
	for (int64_t i = 0; i < na; i++)
		if (ha[i].doc_id != hb[i].doc_id || ha[i].fp != hb[i].fp ||
		    ha[i].distance != hb[i].distance)
			return 0;
	return 1;
}

START_TEST(test_bulk_equals_incremental)
{
	const struct shape *s = &shapes[_i];
	struct nearidx *inc = make_index(s, NULL, 0);
	struct nearidx *bulk = make_index(s, NULL, 0);
	struct model m = { .next_id = 1 };
	uint64_t seed = 500 + (uint64_t)_i, tmpl = tu_rand(&seed);
	char *cause = NULL;

	for (int i = 0; i < 6000; i++) {
		uint64_t fp = next_fp(&m, s->k, s->blocks, tmpl, &seed);
		uint64_t id = tu_rand_below(&seed, 1ULL << 32);

		model_add(&m, fp, id);
		ck_assert_int_eq(nearidx_insert(inc, fp, id), 0);
	}
	ck_assert_int_eq(nearidx_bulk_load(bulk, m.fp, m.id, m.n, &cause),
	    0);
	check_verify(bulk, &m);
	ck_assert_uint_eq(nearidx_distinct(bulk), nearidx_distinct(inc));
	for (int i = 0; i < 2000; i++) {
		uint64_t q = flip_bits(m.fp[tu_rand_below(&seed, m.n)],
		    (unsigned)tu_rand_below(&seed, s->k + 2), &seed);
		unsigned kq = (unsigned)tu_rand_below(&seed, s->k + 1);

		ck_assert(query_sets_equal(inc, bulk, q, kq));
		if (i % 10 == 0)
			check_query(bulk, &m, q, s->k, &seed);
	}
	/* A loaded index keeps working online. */
	run_mix(bulk, &m, s, &seed, 1500, 50);
	/* Loading again is refused; so is a bad id, leaving it empty. */
	ck_assert_int_eq(nearidx_bulk_load(bulk, m.fp, m.id, m.n, &cause),
	    -1);
	ck_assert_ptr_nonnull(cause);
	free(cause);
	nearidx_free(bulk);
	bulk = make_index(s, NULL, 0);
	m.id[m.n / 2] = 1ULL << 32;
	ck_assert_int_eq(nearidx_bulk_load(bulk, m.fp, m.id, m.n, &cause),
	    -1);
	ck_assert_ptr_nonnull(strstr(cause, "4294967296"));
	free(cause);
	ck_assert_uint_eq(nearidx_count(bulk), 0);
	ck_assert_int_eq(nearidx_bulk_load(bulk, NULL, NULL, 0, &cause), 0);
	model_free(&m);
	nearidx_free(inc);
	nearidx_free(bulk);
}
END_TEST

START_TEST(test_directory_doubling)
{
	/* A bucket load of 1 doubles a directory past 65,536 entries, so
	 * that doubling (online and in bulk) is exercised at test sizes. */
	const struct shape s = { 3, 5, 10 };
	struct nearidx *x = make_index(&s, NULL, 1);
	struct nearidx *bulk = make_index(&s, NULL, 1);
	struct model m = { .next_id = 1 };
	uint64_t seed = 99, tmpl = tu_rand(&seed);
	uint64_t *fps, *ids;
	size_t n = 140000, nb = 0;
	char *cause = NULL;

	fps = malloc(n * sizeof(*fps));
	ids = malloc(n * sizeof(*ids));
	for (size_t i = 0; i < n; i++) {
		fps[i] = next_fp(&m, s.k, s.blocks, tmpl, &seed);
		ids[i] = m.next_id++;
		model_add(&m, fps[i], ids[i]);
	}
	/* In batches, with a query between them. */
	while (nb < n) {
		size_t len = n - nb < 7000 ? n - nb : 7000;

		ck_assert_uint_eq(nearidx_insert_batch(x, fps + nb, ids + nb,
		    len), len);
		nb += len;
		m.n = nb;
		check_query(x, &m, flip_bits(fps[tu_rand_below(&seed, nb)],
		    (unsigned)tu_rand_below(&seed, 5), &seed), s.k, &seed);
	}
	check_verify(x, &m);
	ck_assert_int_eq(nearidx_bulk_load(bulk, fps, ids, n, &cause), 0);
	check_verify(bulk, &m);
	for (int i = 0; i < 200; i++) {
		uint64_t q = flip_bits(fps[tu_rand_below(&seed, n)],
		    (unsigned)tu_rand_below(&seed, 5), &seed);

		ck_assert(query_sets_equal(x, bulk, q, 3));
		if (i % 20 == 0)
			check_query(x, &m, q, s.k, &seed);
	}
	run_mix(x, &m, &s, &seed, 500, 50);
	free(fps);
	free(ids);
	model_free(&m);
	nearidx_free(x);
	nearidx_free(bulk);
}
END_TEST

START_TEST(test_batch_query)
{
	const struct shape *s = &shapes[_i];
	struct nearidx *x = make_index(s, NULL, 0);
	struct model m = { .next_id = 1 };
	uint64_t seed = 31 + (uint64_t)_i, tmpl = tu_rand(&seed);
	enum { NQ = 300, MAXP = 3 };
	uint64_t qs[NQ], totals[NQ];
	struct nearidx_hit out[NQ * MAXP], one[MAXP];

	for (int i = 0; i < 4000; i++) {
		uint64_t fp = next_fp(&m, s->k, s->blocks, tmpl, &seed);

		ck_assert_int_eq(nearidx_insert(x, fp, m.next_id), 0);
		model_add(&m, fp, m.next_id++);
	}
	for (int i = 0; i < NQ; i++)
		qs[i] = flip_bits(m.fp[tu_rand_below(&seed, m.n)],
		    (unsigned)tu_rand_below(&seed, s->k + 2), &seed);
	for (unsigned kq = 0; kq <= s->k; kq++) {
		ck_assert_int_eq(nearidx_query_batch(x, qs, NQ, kq, out,
		    MAXP, totals), 0);
		for (int i = 0; i < NQ; i++) {
			int64_t t = nearidx_query(x, qs[i], kq, one, MAXP);
			size_t kept = t < MAXP ? (size_t)t : MAXP;

			ck_assert_uint_eq(totals[i], (uint64_t)t);
			hits_equal(out + i * MAXP, one, kept, qs[i]);
		}
	}
	ck_assert_int_eq(nearidx_query_batch(x, qs, NQ, s->k + 1, out, MAXP,
	    totals), -1);
	ck_assert_int_eq(nearidx_query_batch(x, qs, 0, 1, out, MAXP, totals),
	    0);
	model_free(&m);
	nearidx_free(x);
}
END_TEST

START_TEST(test_config)
{
	static const struct {
		unsigned k, blocks;
		const char *simd;
		unsigned load;
		const char *why;	/* NULL: accepted */
	} cases[] = {
		{ 3, 4, NULL, 0, NULL },
		{ 3, 5, "auto", 0, NULL },
		{ 3, 6, "scalar", 0, NULL },
		{ 1, 64, NULL, 0, NULL },	/* 64 tables of 63 bits */
		{ 6, 8, NULL, 0, NULL },	/* 28 tables of 16 bits */
		{ 0, 4, NULL, 0, "k = 0" },
		{ 4, 4, NULL, 0, "k = 4" },
		{ 3, 1, NULL, 0, "blocks = 1" },
		{ 3, 65, NULL, 0, "blocks = 65" },
		{ 4, 5, NULL, 0, "on 12 bits" },	/* 1 block of 12 */
		{ 5, 6, NULL, 0, "on 10 bits" },
		{ 4, 8, NULL, 0, "70 tables" },
		{ 2, 64, NULL, 0, "2016 tables" },
		{ 3, 4, "sse9", 0, "sse9: unknown" },
		{ 3, 4, NULL, 65537, "bucket load 65537" },
		{ 3, 4, "seg", 0, "segment bytes 65535" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nearidx_config cfg;
		struct nearidx *x;
		char *cause = NULL;

		nearidx_config_defaults(&cfg);
		cfg.k = cases[i].k;
		cfg.blocks = cases[i].blocks;
		cfg.simd = cases[i].simd;
		if (cfg.simd != NULL && strcmp(cfg.simd, "seg") == 0) {
			cfg.simd = NULL;
			cfg.segment_bytes = 65535;
		}
		if (cases[i].load)
			cfg.bucket_load = cases[i].load;
		x = nearidx_new(&cfg, &cause);
		if (cases[i].why == NULL) {
			ck_assert_msg(x != NULL, "case %zu: %s", i, cause);
			nearidx_free(x);
			continue;
		}
		ck_assert_msg(x == NULL, "case %zu accepted", i);
		ck_assert_msg(cause != NULL &&
		    strstr(cause, cases[i].why) != NULL,
		    "case %zu: cause '%s', want '%s'", i, cause,
		    cases[i].why);
		free(cause);
	}
}
END_TEST

START_TEST(test_errors)
{
	struct nearidx_config cfg;
	struct nearidx *x;
	struct nearidx_hit h[4];
	char *cause = NULL;
	uint64_t mem;

	nearidx_config_defaults(&cfg);
	x = nearidx_new(&cfg, &cause);
	ck_assert_ptr_nonnull(x);
	mem = nearidx_memory_bytes(x);
	ck_assert_uint_gt(mem, 0);
	ck_assert_int_eq(nearidx_query(x, 1, 4, h, 4), -1);
	ck_assert_int_eq(nearidx_query(x, 1, 3, h, 4), 0);
	ck_assert_int_eq(nearidx_insert(x, 1, 1ULL << 32), -1);
	ck_assert_uint_eq(nearidx_count(x), 0);
	ck_assert_int_eq(nearidx_insert(x, 1, UINT32_MAX), 0);
	ck_assert_int_eq(nearidx_delete(x, 1, 1ULL << 32), 0);
	ck_assert_int_eq(nearidx_delete(x, 1, 7), 0);
	ck_assert_int_eq(nearidx_delete(x, 3, UINT32_MAX), 0);
	ck_assert_uint_eq(nearidx_count(x), 1);
	ck_assert_int_eq(nearidx_query(x, 0, 1, h, 4), 1);
	ck_assert_uint_eq(h[0].doc_id, UINT32_MAX);
	ck_assert_uint_eq(h[0].fp, 1);
	ck_assert_uint_eq(h[0].distance, 1);
	ck_assert_int_eq(nearidx_delete(x, 1, UINT32_MAX), 1);
	ck_assert_int_eq(nearidx_delete(x, 1, UINT32_MAX), 0);
	ck_assert_uint_eq(nearidx_count(x), 0);
	/* Everything replaced is freed once no query runs. */
	ck_assert_uint_eq(nearidx_reclaim(x), 0);
	ck_assert_uint_ge(nearidx_memory_bytes(x), mem);
	nearidx_free(x);
	nearidx_free(NULL);
}
END_TEST

START_TEST(test_memory_accounting)
{
	/* Memory grows with the entries and comes back when they go. */
	struct nearidx_config cfg;
	struct nearidx *x;
	char *cause = NULL;
	uint64_t empty, full, seed = 5;
	uint64_t fps[20000], ids[20000];

	nearidx_config_defaults(&cfg);
	cfg.segment_bytes = SMALL_SEGMENTS;
	x = nearidx_new(&cfg, &cause);
	empty = nearidx_memory_bytes(x);
	for (size_t i = 0; i < 20000; i++) {
		fps[i] = tu_rand(&seed);
		ids[i] = i + 1;
	}
	ck_assert_uint_eq(nearidx_insert_batch(x, fps, ids, 20000), 20000);
	nearidx_reclaim(x);
	full = nearidx_memory_bytes(x);
	/* 28 bytes of entries per fingerprint at the least. */
	ck_assert_uint_gt(full - empty, 20000 * 28);
	/* Replaced buckets are garbage until compaction: deleting
	 * everything and inserting it again stays under a steady bound. */
	for (int cycle = 0; cycle < 3; cycle++) {
		for (size_t i = 0; i < 20000; i++)
			ck_assert_int_eq(nearidx_delete(x, fps[i], ids[i]), 1);
		ck_assert_uint_eq(nearidx_count(x), 0);
		ck_assert_uint_eq(nearidx_reclaim(x), 0);
		ck_assert_uint_eq(nearidx_insert_batch(x, fps, ids, 20000),
		    20000);
		nearidx_reclaim(x);
		ck_assert_uint_lt(nearidx_memory_bytes(x), full + full / 4);
	}
	nearidx_free(x);
}
END_TEST

/*
 * Readers against a writer: stable documents stay put while the writer
 * inserts and deletes others; every query must find exactly the stable
 * documents in range, plus possibly churning ones, never one twice.
 */
struct race {
	struct nearidx *x;
	const uint64_t *stable_fp;
	size_t nstable;
	unsigned k;
	int stop;
	int failed;
	uint64_t queries;
};

#define CHURN_BASE 1000000

static void *
race_reader(void *arg)
{
	struct race *r = arg;
	struct nearidx_hit hits[512];
	uint64_t seed = (uint64_t)(uintptr_t)&hits;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		size_t i = tu_rand_below(&seed, r->nstable);
		uint64_t q = flip_bits(r->stable_fp[i],
		    (unsigned)tu_rand_below(&seed, r->k + 1), &seed);
		int64_t n = nearidx_query(r->x, q, r->k, hits, 512);
		size_t want = 0, got = 0;

		for (size_t j = 0; j < r->nstable; j++)
			want += (unsigned)__builtin_popcountll(q ^
			    r->stable_fp[j]) <= r->k;
		for (int64_t j = 0; j < n && j < 512; j++) {
			if (hits[j].doc_id < CHURN_BASE)
				got++;
			if ((unsigned)__builtin_popcountll(q ^ hits[j].fp) !=
			    hits[j].distance || hits[j].distance > r->k)
				__atomic_store_n(&r->failed, 1,
				    __ATOMIC_RELAXED);
			if (j > 0 && hits[j].distance == hits[j - 1].distance &&
			    hits[j].doc_id <= hits[j - 1].doc_id)
				/* twice, or out of order */
				__atomic_store_n(&r->failed, 1,
				    __ATOMIC_RELAXED);
		}
		if (n > 512 || got != want)
			__atomic_store_n(&r->failed, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&r->queries, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

START_TEST(test_concurrent_readers)
{
	const struct shape *s = &shapes[_i];
	struct nearidx *x = make_index(s, NULL, 0);
	struct race r = { .x = x, .k = s->k };
	pthread_t th[2];
	uint64_t seed = 4242, *stable, churn[512];
	size_t nchurn = 0;

	stable = malloc(400 * sizeof(*stable));
	for (size_t i = 0; i < 400; i++) {
		stable[i] = i < 200 || i % 4 ? tu_rand(&seed) :
		    flip_bits(stable[i - 100], (unsigned)(i % 4), &seed);
		ck_assert_int_eq(nearidx_insert(x, stable[i], i), 0);
	}
	r.stable_fp = stable;
	r.nstable = 400;
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, race_reader, &r),
		    0);
	/* Churn near the stable documents, so that their buckets are the
	 * ones copied and replaced. */
	for (uint64_t step = 0; step < 30000; step++) {
		if (nchurn < 512 && (nchurn == 0 || tu_rand_below(&seed, 2))) {
			churn[nchurn] = flip_bits(stable[tu_rand_below(&seed,
			    400)], (unsigned)tu_rand_below(&seed, 5), &seed);
			ck_assert_int_eq(nearidx_insert(x, churn[nchurn],
			    CHURN_BASE + nchurn), 0);
			nchurn++;
		} else {
			nchurn--;
			ck_assert_int_eq(nearidx_delete(x, churn[nchurn],
			    CHURN_BASE + nchurn), 1);
		}
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ck_assert_msg(!r.failed, "a query saw a wrong answer");
	ck_assert_uint_gt(r.queries, 0);
	nearidx_reclaim(x);
	free(stable);
	nearidx_free(x);
}
END_TEST

Suite *nearidx_suite(void);

Suite *
nearidx_suite(void)
{
	Suite *s = suite_create("nearidx");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_config);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_memory_accounting);
	tcase_add_loop_test(tc, test_brute_force, 0, NSHAPES);
	tcase_add_loop_test(tc, test_duplicates, 0, NSHAPES);
	tcase_add_loop_test(tc, test_bulk_equals_incremental, 0, NSHAPES);
	tcase_add_loop_test(tc, test_batch_query, 0, NSHAPES);
	tcase_add_test(tc, test_directory_doubling);
	tcase_add_loop_test(tc, test_concurrent_readers, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}
