/*
 * Tests for urlidx: random inserts, removes and moves against an exact
 * multiset model of (fingerprint, segment) pairs, on indexes filled to 97%
 * of their capacity and past it, up to where inserts fail (displacement
 * chains all the way); the load an index takes; and readers looking up
 * while the writer displaces entries.
 *
 * The index holds hints: two fingerprints with the same tag and bucket pair
 * are interchangeable, so a lookup may name a segment that another
 * fingerprint put there.  The model checks inclusion per fingerprint (its
 * segments, each at least as often as the model holds it), and equality
 * per group of interchangeable fingerprints (urlidx_pair_key) and segment
 * through urlidx_count_matching.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "urlidx.h"
#include "testutil.h"

/* More room than a lookup may use: a lookup that overruns shows. */
#define MAX_OUT		(2 * URLIDX_MAX_CANDIDATES)

struct pair {
	uint8_t fp[CBF_FP_LEN];
	uint32_t seg;
};

struct model {
	struct pair *p;
	size_t n, cap;
};

static void
random_fp(uint64_t *seed, uint8_t fp[CBF_FP_LEN])
{
	uint64_t a = tu_rand(seed), b = tu_rand(seed);

	memcpy(fp, &a, 8);
	memcpy(fp + 8, &b, 8);
}

static uint32_t
random_seg(uint64_t *seed)
{
	/* Mostly few segments, so that interchangeable fingerprints share
	 * one; the largest ids too. */
	switch (tu_rand_below(seed, 16)) {
	case 0:
		return URLIDX_SEG_MAX - (uint32_t)tu_rand_below(seed, 2);
	case 1:
		return 1 + (uint32_t)tu_rand_below(seed, URLIDX_SEG_MAX);
	default:
		return 1 + (uint32_t)tu_rand_below(seed, 64);
	}
}

static void
model_add(struct model *mo, const uint8_t fp[CBF_FP_LEN], uint32_t seg)
{
	if (mo->n == mo->cap) {
		mo->cap = mo->cap ? 2 * mo->cap : 1024;
		mo->p = realloc(mo->p, mo->cap * sizeof(*mo->p));
		ck_assert_ptr_nonnull(mo->p);
	}
	memcpy(mo->p[mo->n].fp, fp, CBF_FP_LEN);
	mo->p[mo->n++].seg = seg;
}

static size_t
count_seg(const uint32_t *out, size_t n, uint32_t seg)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += out[i] == seg;
	return c;
}

/* A lookup, checked against its bound and for ids in range. */
static size_t
lookup(const struct urlidx *x, const uint8_t fp[CBF_FP_LEN], uint32_t *out)
{
	size_t n = urlidx_lookup(x, fp, out, MAX_OUT);

	if (n > URLIDX_MAX_CANDIDATES)
		ck_abort_msg("%zu candidates", n);
	for (size_t i = 0; i < n; i++)
		if (out[i] == 0 || out[i] > URLIDX_SEG_MAX)
			ck_abort_msg("candidate segment %u", out[i]);
	return n;
}

static int
cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	int c = memcmp(x->fp, y->fp, CBF_FP_LEN);

	if (c != 0)
		return c;
	return x->seg < y->seg ? -1 : x->seg > y->seg;
}

struct keyed {
	uint64_t key;
	uint32_t seg;
	size_t at;		/* a pair of the group */
};

static int
cmp_keyed(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seg < y->seg ? -1 : x->seg > y->seg;
}

/*
 * The index against the model: entries, every fingerprint's segments
 * among its candidates, and every group's entries.
 */
static void
check_model(const struct urlidx *x, struct model *mo, const char *when)
{
	struct urlidx_stats st;
	uint32_t out[MAX_OUT];
	struct keyed *k;

	urlidx_stats(x, &st);
	if (st.entries != mo->n)
		ck_abort_msg("%s: %llu entries, the model %zu", when,
		    (unsigned long long)st.entries, mo->n);
	if (st.entries > st.slots || st.bytes < st.slots * 4)
		ck_abort_msg("%s: stats: %llu entries, %llu slots, %llu bytes",
		    when, (unsigned long long)st.entries,
		    (unsigned long long)st.slots, (unsigned long long)st.bytes);

	/* Inclusion, one lookup per fingerprint. */
	qsort(mo->p, mo->n, sizeof(*mo->p), cmp_pair);
	for (size_t i = 0, j; i < mo->n; i = j) {
		size_t n = lookup(x, mo->p[i].fp, out);

		for (j = i; j < mo->n && memcmp(mo->p[j].fp, mo->p[i].fp,
		    CBF_FP_LEN) == 0; ) {
			size_t e = j, have;

			while (e < mo->n && cmp_pair(&mo->p[e], &mo->p[j]) == 0)
				e++;
			have = count_seg(out, n, mo->p[j].seg);
			if (have < e - j)
				ck_abort_msg("%s: a fingerprint in segment %u "
				    "%zu times, its lookup names it %zu times "
				    "(of %zu candidates)", when, mo->p[j].seg,
				    e - j, have, n);
			j = e;
		}
	}

	/* Groups of interchangeable fingerprints and one segment: exactly
	 * as many entries as pairs. */
	k = malloc((mo->n + 1) * sizeof(*k));
	ck_assert_ptr_nonnull(k);
	for (size_t i = 0; i < mo->n; i++) {
		k[i].key = urlidx_pair_key(x, mo->p[i].fp);
		k[i].seg = mo->p[i].seg;
		k[i].at = i;
	}
	qsort(k, mo->n, sizeof(*k), cmp_keyed);
	for (size_t i = 0, j; i < mo->n; i = j) {
		uint64_t have;

		for (j = i + 1; j < mo->n && cmp_keyed(&k[i], &k[j]) == 0; j++)
			;
		for (size_t m = i; m < j; m++) {
			have = urlidx_count_matching(x, mo->p[k[m].at].fp,
			    k[m].seg);
			if (have != j - i)
				ck_abort_msg("%s: %llu entries for %zu pairs "
				    "of segment %u sharing a bucket pair and "
				    "tag", when, (unsigned long long)have,
				    j - i, k[i].seg);
		}
	}
	free(k);
}

/* A lookup's candidates, sorted: to compare before and after. */
static size_t
sorted_lookup(const struct urlidx *x, const uint8_t fp[CBF_FP_LEN],
    uint32_t *out)
{
	size_t n = lookup(x, fp, out);

	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
			uint32_t t = out[j];

			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

/*
 * A remove or move of (fp, seg) with no such entry must fail and change
 * nothing.  Returns whether it was tried.
 */
static int
try_absent(struct urlidx *x, const uint8_t fp[CBF_FP_LEN], uint32_t seg,
    uint64_t *seed)
{
	uint32_t before[MAX_OUT], after[MAX_OUT];
	size_t nb, na;
	struct urlidx_stats s0, s1;
	int rc;

	if (urlidx_count_matching(x, fp, seg) != 0)
		return 0;
	urlidx_stats(x, &s0);
	nb = sorted_lookup(x, fp, before);
	if (tu_rand_below(seed, 2))
		rc = urlidx_remove(x, fp, seg);
	else
		rc = urlidx_move(x, fp, seg, random_seg(seed));
	if (rc != -1)
		ck_abort_msg("removing or moving an absent entry (segment %u) "
		    "gives %d", seg, rc);
	urlidx_stats(x, &s1);
	na = sorted_lookup(x, fp, after);
	if (s1.entries != s0.entries || na != nb ||
	    memcmp(before, after, nb * sizeof(*before)) != 0)
		ck_abort_msg("a failed remove or move changed the index");
	return 1;
}

/* Mean candidates for absent fingerprints. */
static double
false_candidates(const struct urlidx *x, uint64_t *seed, int n)
{
	uint32_t out[MAX_OUT];
	uint8_t fp[CBF_FP_LEN];
	uint64_t total = 0;

	for (int i = 0; i < n; i++) {
		random_fp(seed, fp);
		total += lookup(x, fp, out);
	}
	return (double)total / n;
}

/*
 * Random operations: grow to peak (a fraction of capacity), or until
 * inserts keep failing, churn there, then shrink to half of it.  Checks
 * the model every few hundred steps.  An insert that fails must change
 * nothing; below capacity none may fail.
 */
static void
run_model(uint64_t capacity, double peak, uint64_t seed)
{
	struct urlidx *x = urlidx_new(capacity);
	struct model mo = { NULL, 0, 0 };
	size_t target = (size_t)(capacity * peak), top = 0;
	uint64_t steps = 0, absent = 0, failed = 0, churned = 0;
	enum { GROW, CHURN, SHRINK } phase = GROW;
	struct urlidx_stats st;
	char when[96];
	double fc;

	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(urlidx_capacity(x), capacity);
	for (;;) {
		unsigned r = (unsigned)tu_rand_below(&seed, 100);
		unsigned pins = phase == GROW ? 70 : phase == CHURN ? 34 : 20;
		unsigned prem = phase == GROW ? 15 : phase == CHURN ? 33 : 60;

		if (mo.n > top)
			top = mo.n;
		if (phase == GROW && (mo.n >= target || failed >= 100)) {
			urlidx_stats(x, &st);
			fc = false_candidates(x, &seed, 200000);
			printf("urlidx: capacity %llu at %zu entries (%.1f%% "
			    "of capacity, %.1f%% of %llu slots), %llu inserts "
			    "refused: %.4f false candidates per absent lookup "
			    "(2 x 16 / 4096 = %.4f when full)\n",
			    (unsigned long long)capacity, mo.n,
			    100.0 * mo.n / capacity, 100.0 * mo.n / st.slots,
			    (unsigned long long)st.slots,
			    (unsigned long long)failed, fc, 2.0 * 16 / 4096);
			/* A tag of fewer bits, or tags not compared, would
			 * give several times more. */
			if (fc > 0.015)
				ck_abort_msg("%.4f false candidates per lookup",
				    fc);
			phase = CHURN;
		} else if (phase == CHURN && churned++ >= 5000)
			phase = SHRINK;
		else if (phase == SHRINK && mo.n <= target / 2)
			break;

		if (r < pins || mo.n == 0) {
			uint8_t fp[CBF_FP_LEN];
			uint32_t seg = random_seg(&seed);
			uint32_t before[MAX_OUT], after[MAX_OUT];
			size_t nb = 0, na;

			/* Sometimes a fingerprint again, another segment or
			 * the same one (a multiset). */
			if (mo.n > 0 && tu_rand_below(&seed, 8) == 0)
				memcpy(fp, mo.p[tu_rand_below(&seed, mo.n)].fp,
				    CBF_FP_LEN);
			else
				random_fp(&seed, fp);
			if (mo.n >= capacity)
				nb = sorted_lookup(x, fp, before);
			if (urlidx_insert(x, fp, seg) == 0)
				model_add(&mo, fp, seg);
			else {
				if (mo.n < capacity)
					ck_abort_msg("step %llu: insert "
					    "refused at %zu entries, below "
					    "capacity",
					    (unsigned long long)steps, mo.n);
				urlidx_stats(x, &st);
				na = sorted_lookup(x, fp, after);
				if (st.entries != mo.n || na != nb ||
				    memcmp(before, after, nb * sizeof(*before)))
					ck_abort_msg("step %llu: a refused "
					    "insert changed the index",
					    (unsigned long long)steps);
				/* The first few times, everything. */
				if (failed++ < 5) {
					snprintf(when, sizeof(when), "refused "
					    "insert %llu",
					    (unsigned long long)failed);
					check_model(x, &mo, when);
				}
			}
		} else if (r < pins + prem) {
			size_t i = tu_rand_below(&seed, mo.n);

			if (urlidx_remove(x, mo.p[i].fp, mo.p[i].seg) != 0)
				ck_abort_msg("step %llu: removing a present "
				    "entry (segment %u) failed",
				    (unsigned long long)steps, mo.p[i].seg);
			mo.p[i] = mo.p[--mo.n];
		} else {
			size_t i = tu_rand_below(&seed, mo.n);
			uint32_t to = random_seg(&seed);

			if (urlidx_move(x, mo.p[i].fp, mo.p[i].seg, to) != 0)
				ck_abort_msg("step %llu: moving a present "
				    "entry (segment %u) failed",
				    (unsigned long long)steps, mo.p[i].seg);
			mo.p[i].seg = to;
		}
		steps++;

		/* Absent pairs: a new fingerprint, or a present one with a
		 * segment it does not have. */
		if (steps % 8 == 0) {
			uint8_t fp[CBF_FP_LEN];

			random_fp(&seed, fp);
			absent += try_absent(x, fp, random_seg(&seed), &seed);
			if (mo.n > 0) {
				size_t i = tu_rand_below(&seed, mo.n);

				absent += try_absent(x, mo.p[i].fp,
				    random_seg(&seed), &seed);
			}
		}
		if (steps % 400 == 0) {
			snprintf(when, sizeof(when), "capacity %llu, step %llu",
			    (unsigned long long)capacity,
			    (unsigned long long)steps);
			check_model(x, &mo, when);
		}
	}
	snprintf(when, sizeof(when), "capacity %llu, the end",
	    (unsigned long long)capacity);
	check_model(x, &mo, when);
	urlidx_stats(x, &st);
	printf("urlidx: model, capacity %llu (%llu slots) to %.0f%%: %llu "
	    "steps, %zu entries at most, %llu inserts refused, %llu absent "
	    "removes or moves refused\n", (unsigned long long)capacity,
	    (unsigned long long)st.slots, 100 * peak,
	    (unsigned long long)steps, top, (unsigned long long)failed,
	    (unsigned long long)absent);
	ck_assert_uint_ge(absent, steps / 16);
	if (peak > 1.0)
		ck_assert_uint_gt(top, capacity);
	/* Everything out: the index is empty again. */
	while (mo.n > 0) {
		mo.n--;
		ck_assert_int_eq(urlidx_remove(x, mo.p[mo.n].fp,
		    mo.p[mo.n].seg), 0);
	}
	check_model(x, &mo, "emptied");
	free(mo.p);
	urlidx_free(x);
}

START_TEST(test_model_97_percent)
{
	run_model(10000, 0.97, 51);
}
END_TEST

START_TEST(test_model_past_capacity)
{
	/* 1.05 x capacity is 99.7% of the slots: inserts fail before. */
	run_model(10000, 1.05, 52);
}
END_TEST

START_TEST(test_model_tiny)
{
	/* One or a few buckets: every fingerprint shares them. */
	run_model(1, 20.0, 53);
	run_model(16, 2.0, 54);
	run_model(40, 1.5, 55);
}
END_TEST

START_TEST(test_load)
{
	/* An index takes its capacity, then more, to the first refusal;
	 * every entry is found throughout, and the refusal changes nothing. */
	static const uint64_t caps[] = { 1, 15, 16, 17, 100, 5000, 600000 };
	uint64_t seed = 56;

	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		uint64_t cap = caps[c], total = cap + cap / 10 + 20, n = 0;
		struct urlidx *x = urlidx_new(cap);
		struct pair *p = malloc(total * sizeof(*p));
		struct urlidx_stats st;
		uint32_t out[MAX_OUT];
		double t0 = tu_now();

		ck_assert_ptr_nonnull(x);
		ck_assert_ptr_nonnull(p);
		urlidx_stats(x, &st);
		ck_assert_uint_eq(st.entries, 0);
		/* 95% of the slots at capacity. */
		if (st.slots < cap / 0.95 || st.slots > cap / 0.95 + 16)
			ck_abort_msg("capacity %llu: %llu slots",
			    (unsigned long long)cap,
			    (unsigned long long)st.slots);
		for (; n < total; n++) {
			random_fp(&seed, p[n].fp);
			p[n].seg = 1 + (uint32_t)(n % URLIDX_SEG_MAX);
			if (urlidx_insert(x, p[n].fp, p[n].seg) != 0)
				break;
		}
		urlidx_stats(x, &st);
		printf("urlidx: capacity %llu: the first refused insert at "
		    "%llu entries, %.2f%% of %llu slots (%.2f s)\n",
		    (unsigned long long)cap, (unsigned long long)n,
		    100.0 * n / st.slots, (unsigned long long)st.slots,
		    tu_now() - t0);
		if (n < cap)
			ck_abort_msg("capacity %llu: refused at %llu entries",
			    (unsigned long long)cap, (unsigned long long)n);
		/* The cuckoo table fills to 99% (urlidx.h), not counting
		 * the tiny ones, where pairs are single buckets. */
		if (cap >= 5000 && n < 0.99 * st.slots)
			ck_abort_msg("capacity %llu: refused at %.2f%% of the "
			    "slots", (unsigned long long)cap,
			    100.0 * n / st.slots);
		ck_assert_uint_eq(st.entries, n);
		for (uint64_t k = 0; k < n; k++) {
			size_t m = lookup(x, p[k].fp, out);

			if (count_seg(out, m, p[k].seg) == 0)
				ck_abort_msg("capacity %llu: entry %llu lost",
				    (unsigned long long)cap,
				    (unsigned long long)k);
			urlidx_prefetch(x, p[k].fp);
		}
		free(p);
		urlidx_free(x);
	}
}
END_TEST

/* Twins: fingerprints with A's tag and bucket pair (A's pair key). */
static void
make_twin(struct urlidx *x, const uint8_t a[CBF_FP_LEN], uint64_t *seed,
    uint8_t twin[CBF_FP_LEN])
{
	uint64_t key = urlidx_pair_key(x, a);

	for (long tries = 0; tries < 10000000; tries++) {
		uint64_t h = tu_rand(seed);

		/* The first 8 bytes, which give the tag, kept. */
		memcpy(twin, a, 8);
		memcpy(twin + 8, &h, 8);
		if (memcmp(twin, a, CBF_FP_LEN) != 0 &&
		    urlidx_pair_key(x, twin) == key)
			return;
	}
	ck_abort_msg("no twin found");
}

START_TEST(test_twins)
{
	/* Twins are interchangeable, as urlidx.h says: removing through one
	 * takes one of the group's entries, and each remaining twin keeps
	 * its segment.  32 twins fill their pair, whose entries cannot move
	 * out of it: the 33rd is refused, changing nothing. */
	uint64_t seed = 59;
	struct urlidx *x;
	uint8_t a[CBF_FP_LEN], t[33][CBF_FP_LEN];
	struct urlidx_stats st;
	uint32_t out[MAX_OUT];
	int fit;

	/* A pair of two buckets (not one bucket twice), so that 32 twins
	 * fit: try them on a scratch index first. */
	do {
		x = urlidx_new(4096);
		ck_assert_ptr_nonnull(x);
		random_fp(&seed, a);
		for (int i = 0; i < 33; i++)
			make_twin(x, a, &seed, t[i]);
		fit = 0;
		while (fit < 32 && urlidx_insert(x, t[fit], 1) == 0)
			fit++;
		urlidx_free(x);
	} while (fit < 32);
	x = urlidx_new(4096);
	ck_assert_ptr_nonnull(x);

	/* Twins 0..3 in segment 5, 4..7 in 6. */
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(urlidx_insert(x, t[i], 5 + i / 4), 0);
	for (int i = 0; i < 33; i++) {
		ck_assert_uint_eq(urlidx_count_matching(x, t[i], 5), 4);
		ck_assert_uint_eq(urlidx_count_matching(x, t[i], 6), 4);
		ck_assert_uint_eq(urlidx_count_matching(x, t[i], 7), 0);
		ck_assert_uint_eq(urlidx_pair_key(x, t[i]),
		    urlidx_pair_key(x, a));
	}
	ck_assert_int_eq(urlidx_remove(x, t[0], 5), 0);
	ck_assert_int_eq(urlidx_move(x, t[4], 6, 5), 0);
	for (int i = 0; i < 8; i++) {
		size_t n = lookup(x, t[i], out);

		ck_assert_uint_eq(urlidx_count_matching(x, t[i], 5), 4);
		ck_assert_uint_eq(urlidx_count_matching(x, t[i], 6), 3);
		ck_assert_uint_eq(n, 7);
		ck_assert_uint_eq(count_seg(out, n, 5), 4);
	}
	/* Fill the pair: 32 twins, then one more. */
	ck_assert_int_eq(urlidx_insert(x, t[0], 5), 0);
	ck_assert_int_eq(urlidx_move(x, t[0], 5, 6), 0);
	for (int i = 8; i < 32; i++)
		ck_assert_int_eq(urlidx_insert(x, t[i], 100 + i), 0);
	urlidx_stats(x, &st);
	ck_assert_uint_eq(st.entries, 32);
	ck_assert_int_eq(urlidx_insert(x, t[32], 7), -1);
	ck_assert_int_eq(urlidx_insert(x, a, 5), -1);
	urlidx_stats(x, &st);
	ck_assert_uint_eq(st.entries, 32);
	ck_assert_uint_eq(urlidx_count_matching(x, t[32], 7), 0);
	for (int i = 8; i < 32; i++)
		ck_assert_uint_eq(urlidx_count_matching(x, t[i], 100 + i), 1);
	ck_assert_uint_eq(lookup(x, a, out), 32);
	/* A slot freed takes it. */
	ck_assert_int_eq(urlidx_remove(x, t[20], 120), 0);
	ck_assert_int_eq(urlidx_insert(x, t[32], 7), 0);
	ck_assert_uint_eq(urlidx_count_matching(x, t[32], 7), 1);
	urlidx_free(x);
}
END_TEST

/* Concurrency: readers look up fixed entries while the writer churns. */
#define CONC_CAPACITY	40000
#define CONC_FIXED	20000
#define CONC_READERS	2

struct conc {
	struct urlidx *x;
	struct pair fixed[CONC_FIXED];
	int stop;
	struct {
		uint64_t lookups, misses;
		uint32_t first_miss;
	} r[CONC_READERS];
	pthread_t th[CONC_READERS];
};

struct reader_arg {
	struct conc *c;
	int id;
};

static void *
reader(void *arg)
{
	struct reader_arg *ra = arg;
	struct conc *c = ra->c;
	uint32_t out[MAX_OUT];
	uint64_t lookups = 0, misses = 0;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		for (size_t i = 0; i < CONC_FIXED; i++) {
			const struct pair *p = &c->fixed[i];
			size_t n = urlidx_lookup(c->x, p->fp, out, MAX_OUT);

			if (count_seg(out, n, p->seg) == 0 && misses++ == 0)
				c->r[ra->id].first_miss = (uint32_t)i;
			lookups++;
		}
	}
	c->r[ra->id].lookups = lookups;
	c->r[ra->id].misses = misses;
	return NULL;
}

START_TEST(test_concurrent_readers)
{
	struct conc *c = calloc(1, sizeof(*c));
	struct reader_arg ra[CONC_READERS];
	struct model churn = { NULL, 0, 0 };
	uint64_t seed = 60, ops = 0, lookups = 0, refused = 0;
	size_t full = (size_t)(CONC_CAPACITY * 1.045) - CONC_FIXED;
	double t0, limit = 2.0;
	struct urlidx_stats st;
	uint32_t out[MAX_OUT];
	uint8_t fp[CBF_FP_LEN];

	ck_assert_ptr_nonnull(c);
	c->x = urlidx_new(CONC_CAPACITY);
	ck_assert_ptr_nonnull(c->x);
	for (size_t i = 0; i < CONC_FIXED; i++) {
		random_fp(&seed, c->fixed[i].fp);
		c->fixed[i].seg = 1 + (uint32_t)(i % 1000);
		ck_assert_int_eq(urlidx_insert(c->x, c->fixed[i].fp,
		    c->fixed[i].seg), 0);
	}
	for (int i = 0; i < CONC_READERS; i++) {
		ra[i] = (struct reader_arg){ c, i };
		ck_assert_int_eq(pthread_create(&c->th[i], NULL, reader,
		    &ra[i]), 0);
	}

	/*
	 * The writer: fill to 104.5% of capacity (99.3% of the slots, where
	 * most inserts displace, along long chains), then churn there:
	 * remove, insert, move; then insert until refused.  Half the entries
	 * are the readers', so that many of those displaced are.
	 */
	t0 = tu_now();
	while (churn.n < full) {
		uint32_t seg = random_seg(&seed);

		random_fp(&seed, fp);
		if (urlidx_insert(c->x, fp, seg) != 0)
			ck_abort_msg("insert refused at %zu entries", churn.n);
		model_add(&churn, fp, seg);
		ops++;
	}
	for (uint64_t iter = 0; iter < 3000000; iter++) {
		size_t i = tu_rand_below(&seed, churn.n);
		uint32_t to = random_seg(&seed);

		if (iter % 256 == 0 && tu_now() - t0 > limit)
			break;
		if (urlidx_remove(c->x, churn.p[i].fp, churn.p[i].seg) != 0)
			ck_abort_msg("remove failed");
		/* A refusal leaves one slot less used: refill it. */
		for (int tries = 0;; tries++) {
			if (tries == 1000)
				ck_abort_msg("no insert taken after a remove");
			random_fp(&seed, churn.p[i].fp);
			churn.p[i].seg = random_seg(&seed);
			ops++;
			if (urlidx_insert(c->x, churn.p[i].fp,
			    churn.p[i].seg) == 0)
				break;
			refused++;
		}
		i = tu_rand_below(&seed, churn.n);
		if (urlidx_move(c->x, churn.p[i].fp, churn.p[i].seg, to) != 0)
			ck_abort_msg("move failed");
		churn.p[i].seg = to;
		ops += 2;
	}
	for (;;) {
		uint32_t seg = random_seg(&seed);

		random_fp(&seed, fp);
		ops++;
		if (urlidx_insert(c->x, fp, seg) != 0)
			break;
		model_add(&churn, fp, seg);
	}
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < CONC_READERS; i++)
		pthread_join(c->th[i], NULL);
	urlidx_stats(c->x, &st);
	for (int i = 0; i < CONC_READERS; i++)
		lookups += c->r[i].lookups;
	printf("urlidx: concurrency: %llu writer operations in %.2f s (%llu "
	    "inserts refused while churning at %.1f%% of the slots, %.1f%% "
	    "at the end), %llu reader lookups (%llu, %llu)\n",
	    (unsigned long long)ops, tu_now() - t0, (unsigned long long)refused,
	    100.0 * (CONC_FIXED + full) / st.slots, 100.0 * st.entries /
	    st.slots, (unsigned long long)lookups,
	    (unsigned long long)c->r[0].lookups,
	    (unsigned long long)c->r[1].lookups);
	for (int i = 0; i < CONC_READERS; i++)
		if (c->r[i].misses != 0)
			ck_abort_msg("readers missed a present entry %llu and "
			    "%llu times (reader %d first: fixed entry %u)",
			    (unsigned long long)c->r[0].misses,
			    (unsigned long long)c->r[1].misses, i,
			    c->r[i].first_miss);
	for (int i = 0; i < CONC_READERS; i++)
		ck_assert_uint_ge(c->r[i].lookups, CONC_FIXED);
	ck_assert_uint_eq(st.entries, CONC_FIXED + churn.n);
	for (size_t i = 0; i < CONC_FIXED; i++) {
		size_t n = lookup(c->x, c->fixed[i].fp, out);

		if (count_seg(out, n, c->fixed[i].seg) == 0)
			ck_abort_msg("fixed entry %zu lost", i);
	}
	for (size_t i = 0; i < churn.n; i++) {
		size_t n = lookup(c->x, churn.p[i].fp, out);

		if (count_seg(out, n, churn.p[i].seg) == 0)
			ck_abort_msg("entry %zu lost", i);
	}
	free(churn.p);
	urlidx_free(c->x);
	free(c);
}
END_TEST

Suite *urlidx_suite(void);

Suite *
urlidx_suite(void)
{
	Suite *s = suite_create("urlidx");
	TCase *tc = tcase_create("urlidx");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_model_97_percent);
	tcase_add_test(tc, test_model_past_capacity);
	tcase_add_test(tc, test_model_tiny);
	tcase_add_test(tc, test_load);
	tcase_add_test(tc, test_twins);
	tcase_add_test(tc, test_concurrent_readers);
	suite_add_tcase(s, tc);
	return s;
}
