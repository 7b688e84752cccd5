/*
 * Tests for urlmem: random puts (new keys and overwrites), gets, lookups
 * and clears against an exact map, up to the table's capacity and with
 * keys that share their home slot (long probe chains, across slots of
 * cleared generations and past the end of the table); the refusals of
 * urlmem_put; urlmem_foreach; and readers copying entries while the writer
 * rewrites and clears them, which must never see a mix of two versions.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "urlmem.h"
#include "testutil.h"

#define SEG_LIMIT	(1u << 20)	/* orig_seg below this */
#define SLOT_LIMIT	(1u << 12)	/* orig_slot below this */

/*
 * Keys: uniform, or in clusters whose two 8-byte halves XOR to the same
 * value, which the table's hash cannot tell apart (one home slot for the
 * whole cluster).  That is a property of urlmem.c's hash, but the map must
 * be right for any keys; these only make the probing long.
 */
static void
make_keys(uint64_t *seed, uint8_t (*keys)[CBF_FP_LEN], size_t n,
    int clusters)
{
	uint64_t x[8];

	for (int c = 0; c < clusters && c < 8; c++)
		x[c] = tu_rand(seed);
	for (size_t i = 0; i < n; i++) {
		uint64_t a = tu_rand(seed), b = tu_rand(seed);

		if (clusters > 0 && i % 2 == 1)
			b = a ^ x[tu_rand_below(seed, clusters)];
		memcpy(keys[i], &a, 8);
		memcpy(keys[i] + 8, &b, 8);
		for (size_t j = 0; j < i; j++)
			if (memcmp(keys[i], keys[j], CBF_FP_LEN) == 0) {
				i--;	/* all but impossible: draw again */
				break;
			}
	}
}

static void
random_entry(uint64_t *seed, const uint8_t fp[CBF_FP_LEN],
    struct urlmem_entry *e)
{
	static const uint32_t segs[] = { 0, 1, SEG_LIMIT - 1, 0 };
	static const uint32_t slots[] = { 0, SLOT_LIMIT - 1, 1, 0 };
	unsigned r = (unsigned)tu_rand_below(seed, 8);

	memset(e, 0, sizeof(*e));
	memcpy(e->fp, fp, CBF_FP_LEN);
	e->st.count = tu_rand_below(seed, 4) == 0 ? 0 : (uint32_t)tu_rand(seed);
	e->st.first_seen_ms = tu_rand(seed);
	e->st.last_seen_ms = tu_rand(seed);
	e->orig_seg = r < 4 ? segs[r] :
	    (uint32_t)tu_rand_below(seed, SEG_LIMIT);
	r = (unsigned)tu_rand_below(seed, 8);
	e->orig_slot = r < 4 ? slots[r] :
	    (uint32_t)tu_rand_below(seed, SLOT_LIMIT);
}

static int
entry_eq(const struct urlmem_entry *a, const struct urlmem_entry *b)
{
	return memcmp(a->fp, b->fp, CBF_FP_LEN) == 0 && a->st.count == b->st.count &&
	    a->st.first_seen_ms == b->st.first_seen_ms &&
	    a->st.last_seen_ms == b->st.last_seen_ms && a->orig_seg == b->orig_seg &&
	    a->orig_slot == b->orig_slot;
}

struct model {
	size_t nkeys;
	uint8_t (*keys)[CBF_FP_LEN];
	struct urlmem_entry *e;
	bool *present;
	size_t count;
	size_t *order;			/* key indices, keys in memcmp order */
};

/* One key: get and lookup must both agree with the model. */
static void
check_key(const struct urlmem *m, const struct model *mo, size_t k,
    const char *when)
{
	struct urlmem_entry got;
	bool found;

	memset(&got, 0xa5, sizeof(got));
	found = urlmem_get(m, mo->keys[k], &got);
	if (found != mo->present[k] || (found && !entry_eq(&got, &mo->e[k])))
		ck_abort_msg("%s: get of key %zu: %s, the model %s", when, k,
		    found ? (mo->present[k] ? "other fields" : "found") :
		    "not found", mo->present[k] ? "has it" : "has none");
	memset(&got, 0x5a, sizeof(got));
	urlmem_prefetch(m, mo->keys[k]);
	found = urlmem_lookup(m, mo->keys[k], &got);
	if (found != mo->present[k] || (found && !entry_eq(&got, &mo->e[k])))
		ck_abort_msg("%s: lookup of key %zu: %s, the model %s", when, k,
		    found ? (mo->present[k] ? "other fields" : "found") :
		    "not found", mo->present[k] ? "has it" : "has none");
}

struct visit {
	const struct model *mo;
	bool *seen;
	size_t n;
	const char *bad;
};

static void
visit_one(const struct urlmem_entry *e, void *arg)
{
	struct visit *v = arg;

	const struct model *mo = v->mo;
	size_t lo = 0, hi = mo->nkeys;

	v->n++;
	/* The key's index, by halves over the keys in order. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(mo->keys[mo->order[mid]], e->fp, CBF_FP_LEN);

		if (c == 0) {
			size_t k = mo->order[mid];

			if (!mo->present[k])
				v->bad = "an entry not in the model";
			else if (!entry_eq(e, &mo->e[k]))
				v->bad = "an entry with other fields";
			else if (v->seen[k])
				v->bad = "an entry twice";
			v->seen[k] = true;
			return;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	v->bad = "an unknown key";
}

static void
check_all(const struct urlmem *m, const struct model *mo, const char *when)
{
	struct visit v = { mo, calloc(mo->nkeys, sizeof(bool)), 0, NULL };

	ck_assert_ptr_nonnull(v.seen);
	if (urlmem_count(m) != mo->count)
		ck_abort_msg("%s: count %zu, the model %zu", when,
		    urlmem_count(m), mo->count);
	for (size_t k = 0; k < mo->nkeys; k++)
		check_key(m, mo, k, when);
	urlmem_foreach(m, visit_one, &v);
	if (v.bad != NULL)
		ck_abort_msg("%s: foreach visits %s", when, v.bad);
	if (v.n != mo->count)
		ck_abort_msg("%s: foreach visits %zu entries, the model has "
		    "%zu", when, v.n, mo->count);
	free(v.seen);
}

static const uint8_t (*sort_keys)[CBF_FP_LEN];

static int
cmp_order(const void *a, const void *b)
{
	return memcmp(sort_keys[*(const size_t *)a],
	    sort_keys[*(const size_t *)b], CBF_FP_LEN);
}

/*
 * Random operations on a table of this capacity, keys of a pool, a clear
 * every clear_every steps on average.
 */
static void
run_model(size_t capacity, size_t nkeys, int clusters, uint64_t seed,
    int steps, unsigned clear_every)
{
	struct urlmem *m = urlmem_new(capacity);
	struct model mo = { nkeys, NULL, NULL, NULL, 0, NULL };
	uint64_t refused_full = 0, refused_place = 0, clears = 0;
	uint32_t gen;
	char when[96];

	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(urlmem_capacity(m), capacity);
	ck_assert_uint_eq(urlmem_count(m), 0);
	/* 48-byte slots, at most 3/4 full. */
	ck_assert_uint_ge(urlmem_bytes(m), capacity * 48 * 4 / 3);
	mo.keys = calloc(nkeys, CBF_FP_LEN);
	mo.e = calloc(nkeys, sizeof(*mo.e));
	mo.present = calloc(nkeys, sizeof(*mo.present));
	ck_assert(mo.keys != NULL && mo.e != NULL && mo.present != NULL);
	make_keys(&seed, mo.keys, nkeys, clusters);
	mo.order = calloc(nkeys, sizeof(*mo.order));
	ck_assert_ptr_nonnull(mo.order);
	for (size_t k = 0; k < nkeys; k++)
		mo.order[k] = k;
	sort_keys = (const uint8_t (*)[CBF_FP_LEN])mo.keys;
	qsort(mo.order, nkeys, sizeof(*mo.order), cmp_order);
	gen = urlmem_generation(m);

	for (int step = 1; step <= steps; step++) {
		unsigned r = (unsigned)tu_rand_below(&seed, 1000);
		size_t k = tu_rand_below(&seed, nkeys);
		struct urlmem_entry e;

		snprintf(when, sizeof(when), "capacity %zu, step %d", capacity,
		    step);
		if (tu_rand_below(&seed, clear_every) == 0) {
			urlmem_clear(m);
			memset(mo.present, 0, nkeys * sizeof(*mo.present));
			mo.count = 0;
			clears++;
			if (urlmem_generation(m) == gen)
				ck_abort_msg("%s: clear kept generation %u",
				    when, gen);
			gen = urlmem_generation(m);
			check_all(m, &mo, when);
		} else if (r < 550) {
			random_entry(&seed, mo.keys[k], &e);
			if (urlmem_put(m, &e) == 0) {
				if (!mo.present[k] && mo.count == capacity)
					ck_abort_msg("%s: a new key taken when "
					    "full", when);
				mo.count += !mo.present[k];
				mo.present[k] = true;
				mo.e[k] = e;
			} else {
				if (mo.present[k] || mo.count < capacity)
					ck_abort_msg("%s: put refused with %zu "
					    "of %zu entries (key %s)", when,
					    mo.count, capacity, mo.present[k] ?
					    "present" : "new");
				refused_full++;
			}
			check_key(m, &mo, k, when);
		} else if (r < 580) {
			/* A place that does not fit: refused, and nothing
			 * changes, even for a present key. */
			random_entry(&seed, mo.keys[k], &e);
			if (tu_rand_below(&seed, 2))
				e.orig_seg = SEG_LIMIT + (uint32_t)
				    tu_rand_below(&seed, UINT32_MAX -
				    SEG_LIMIT);
			else
				e.orig_slot = SLOT_LIMIT + (uint32_t)
				    tu_rand_below(&seed, UINT32_MAX -
				    SLOT_LIMIT);
			if (urlmem_put(m, &e) != -1)
				ck_abort_msg("%s: place %u/%u taken", when,
				    e.orig_seg, e.orig_slot);
			refused_place++;
			check_key(m, &mo, k, when);
			if (urlmem_count(m) != mo.count)
				ck_abort_msg("%s: a refused put changed the "
				    "count", when);
		} else
			check_key(m, &mo, k, when);
		if (step % 500 == 0)
			check_all(m, &mo, when);
	}
	check_all(m, &mo, "the end");
	printf("urlmem: capacity %zu, %zu keys%s: %d steps, %llu clears, %llu "
	    "puts refused when full, %llu places refused\n", capacity, nkeys,
	    clusters ? " (clustered)" : "", steps, (unsigned long long)clears,
	    (unsigned long long)refused_full,
	    (unsigned long long)refused_place);
	ck_assert_uint_gt(refused_full, 0);
	ck_assert_uint_gt(refused_place, 0);
	ck_assert_uint_gt(clears, 0);
	free(mo.keys);
	free(mo.e);
	free(mo.present);
	free(mo.order);
	urlmem_free(m);
}

START_TEST(test_model_tiny)
{
	/* Full all the time. */
	run_model(1, 3, 0, 71, 20000, 500);
	run_model(2, 5, 1, 72, 20000, 500);
	run_model(3, 8, 2, 73, 20000, 500);
	run_model(7, 12, 2, 74, 20000, 500);
}
END_TEST

START_TEST(test_model)
{
	run_model(100, 150, 0, 75, 60000, 500);
	run_model(100, 150, 3, 76, 60000, 500);
	run_model(1500, 2200, 4, 77, 60000, 15000);
}
END_TEST

START_TEST(test_full_and_refusals)
{
	/* Deterministic: fill to capacity, the next new key is refused, an
	 * overwrite is not; after a clear the table takes capacity again. */
	const size_t cap = 500;
	struct urlmem *m = urlmem_new(cap);
	uint8_t (*keys)[CBF_FP_LEN] = calloc(cap + 1, CBF_FP_LEN);
	uint64_t seed = 78;
	struct urlmem_entry e, got;

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(keys);
	make_keys(&seed, keys, cap + 1, 2);
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < cap; i++) {
			random_entry(&seed, keys[i], &e);
			e.st.count = (uint32_t)(i + round);
			ck_assert_int_eq(urlmem_put(m, &e), 0);
		}
		ck_assert_uint_eq(urlmem_count(m), cap);
		random_entry(&seed, keys[cap], &e);
		ck_assert_int_eq(urlmem_put(m, &e), -1);
		ck_assert(!urlmem_get(m, keys[cap], &got));
		ck_assert(!urlmem_lookup(m, keys[cap], &got));
		/* Overwrites still go in, and the count stays. */
		for (size_t i = 0; i < cap; i++) {
			random_entry(&seed, keys[i], &e);
			e.st.count = (uint32_t)(1000 + i + round);
			ck_assert_int_eq(urlmem_put(m, &e), 0);
			ck_assert(urlmem_lookup(m, keys[i], &got));
			ck_assert(entry_eq(&e, &got));
		}
		ck_assert_uint_eq(urlmem_count(m), cap);
		urlmem_clear(m);
		ck_assert_uint_eq(urlmem_count(m), 0);
		for (size_t i = 0; i <= cap; i++) {
			ck_assert(!urlmem_get(m, keys[i], &got));
			ck_assert(!urlmem_lookup(m, keys[i], &got));
		}
	}
	free(keys);
	urlmem_free(m);
}
END_TEST

START_TEST(test_places)
{
	/* orig_seg to 2^20 - 1 and orig_slot to 4095 come back; beyond,
	 * refused; a refused put leaves a present key as it was. */
	static const uint32_t segs[] = { 0, 1, 2, 4095, 4096, 65535, 65536,
	    SEG_LIMIT / 2, SEG_LIMIT - 2, SEG_LIMIT - 1 };
	static const uint32_t slots[] = { 0, 1, 7, 8, 2047, 2048, 4094, 4095 };
	static const uint32_t bad_segs[] = { SEG_LIMIT, SEG_LIMIT + 1,
	    2 * SEG_LIMIT, UINT32_MAX };
	static const uint32_t bad_slots[] = { SLOT_LIMIT, SLOT_LIMIT + 1,
	    65535, UINT32_MAX };
	struct urlmem *m = urlmem_new(16);
	uint8_t fp[CBF_FP_LEN];
	struct urlmem_entry e, good, got;
	uint64_t seed = 79;

	ck_assert_ptr_nonnull(m);
	make_keys(&seed, &fp, 1, 0);
	for (size_t i = 0; i < sizeof(segs) / sizeof(segs[0]); i++)
		for (size_t j = 0; j < sizeof(slots) / sizeof(slots[0]); j++) {
			random_entry(&seed, fp, &e);
			e.orig_seg = segs[i];
			e.orig_slot = slots[j];
			ck_assert_int_eq(urlmem_put(m, &e), 0);
			ck_assert(urlmem_get(m, fp, &got));
			ck_assert_uint_eq(got.orig_seg, segs[i]);
			ck_assert_uint_eq(got.orig_slot, slots[j]);
			ck_assert(urlmem_lookup(m, fp, &got));
			ck_assert(entry_eq(&e, &got));
		}
	good = e;
	for (size_t i = 0; i < sizeof(bad_segs) / sizeof(bad_segs[0]); i++) {
		random_entry(&seed, fp, &e);
		e.orig_seg = bad_segs[i];
		ck_assert_int_eq(urlmem_put(m, &e), -1);
		e.orig_seg = 0;
		e.orig_slot = bad_slots[i];
		ck_assert_int_eq(urlmem_put(m, &e), -1);
		e.orig_seg = bad_segs[i];
		ck_assert_int_eq(urlmem_put(m, &e), -1);
		ck_assert(urlmem_get(m, fp, &got));
		ck_assert(entry_eq(&good, &got));
	}
	ck_assert_uint_eq(urlmem_count(m), 1);
	/* A new key with a bad place is not added. */
	fp[0] ^= 1;
	e.orig_seg = SEG_LIMIT;
	ck_assert_int_eq(urlmem_put(m, &e), -1);
	ck_assert(!urlmem_get(m, fp, &got));
	ck_assert_uint_eq(urlmem_count(m), 1);
	urlmem_free(m);
}
END_TEST

START_TEST(test_many_clears)
{
	/* Generations: a million clears, each with a few entries; nothing
	 * of an earlier generation ever shows. */
	struct urlmem *m = urlmem_new(8);
	uint8_t keys[16][CBF_FP_LEN];
	uint64_t seed = 80;
	struct urlmem_entry e, got;
	uint32_t gen = urlmem_generation(m);

	make_keys(&seed, keys, 16, 1);
	for (uint32_t round = 0; round < 1000000; round++) {
		size_t a = round % 16, b = (round * 7 + 3) % 16;

		memset(&e, 0, sizeof(e));
		memcpy(e.fp, keys[a], CBF_FP_LEN);
		e.st.count = round;
		if (urlmem_put(m, &e) != 0)
			ck_abort_msg("round %u: put refused", round);
		if (!urlmem_lookup(m, keys[a], &got) || got.st.count != round)
			ck_abort_msg("round %u: the entry put is not found",
			    round);
		if (b != a && (urlmem_get(m, keys[b], &got) ||
		    urlmem_lookup(m, keys[b], &got)))
			ck_abort_msg("round %u: key %zu of an earlier "
			    "generation found", round, b);
		if (urlmem_count(m) != 1)
			ck_abort_msg("round %u: count %zu", round,
			    urlmem_count(m));
		urlmem_clear(m);
		if (urlmem_generation(m) == gen)
			ck_abort_msg("round %u: the generation stays", round);
		gen = urlmem_generation(m);
		if (urlmem_lookup(m, keys[a], &got) || urlmem_count(m) != 0)
			ck_abort_msg("round %u: found after a clear", round);
	}
	urlmem_free(m);
}
END_TEST

/*
 * Concurrency.  Every field of an entry the writer puts derives from one
 * counter value v (of the key v % CONC_KEYS), so a copy mixing two
 * versions shows.
 */
#define CONC_KEYS	64
#define CONC_READERS	2

struct conc {
	struct urlmem *m;
	uint8_t keys[CONC_KEYS][CBF_FP_LEN];
	int stop;
	struct {
		uint64_t lookups, found, torn;
		char what[128];
	} r[CONC_READERS];
	pthread_t th[CONC_READERS];
};

struct reader_arg {
	struct conc *c;
	int id;
};

static void
versioned(const uint8_t fp[CBF_FP_LEN], uint64_t v, struct urlmem_entry *e)
{
	memcpy(e->fp, fp, CBF_FP_LEN);
	e->st.count = (uint32_t)v;
	e->st.first_seen_ms = v * 3;
	e->st.last_seen_ms = v * 5 + 1;
	e->orig_seg = (uint32_t)(v * 7 % SEG_LIMIT);
	e->orig_slot = (uint32_t)(v % SLOT_LIMIT);
}

static void *
reader(void *arg)
{
	struct reader_arg *ra = arg;
	struct conc *c = ra->c;
	uint64_t lookups = 0, found = 0, torn = 0;
	struct urlmem_entry e, want;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		for (size_t k = 0; k < CONC_KEYS; k++) {
			lookups++;
			if (!urlmem_lookup(c->m, c->keys[k], &e))
				continue;
			found++;
			versioned(c->keys[k], e.st.count, &want);
			if (!entry_eq(&e, &want) || e.st.count % CONC_KEYS != k) {
				if (torn++ == 0)
					snprintf(c->r[ra->id].what,
					    sizeof(c->r[ra->id].what),
					    "key %zu: count %u, first %llu, "
					    "last %llu, place %u/%u", k,
					    e.st.count,
					    (unsigned long long)e.st.first_seen_ms,
					    (unsigned long long)e.st.last_seen_ms,
					    e.orig_seg, e.orig_slot);
			}
		}
	}
	c->r[ra->id].lookups = lookups;
	c->r[ra->id].found = found;
	c->r[ra->id].torn = torn;
	return NULL;
}

START_TEST(test_concurrent_readers)
{
	struct conc *c = calloc(1, sizeof(*c));
	struct reader_arg ra[CONC_READERS];
	uint64_t seed = 81, v, clears = 0, lookups = 0, found = 0;
	double t0;
	struct urlmem_entry e, got;

	ck_assert_ptr_nonnull(c);
	/* Room for the keys and no more than a few free slots between
	 * them: the readers probe through slots being written. */
	c->m = urlmem_new(CONC_KEYS);
	ck_assert_ptr_nonnull(c->m);
	make_keys(&seed, c->keys, CONC_KEYS, 3);
	for (int i = 0; i < CONC_READERS; i++) {
		ra[i] = (struct reader_arg){ c, i };
		ck_assert_int_eq(pthread_create(&c->th[i], NULL, reader,
		    &ra[i]), 0);
	}
	t0 = tu_now();
	for (v = CONC_KEYS; v < 100000000; v++) {
		if (v % 4096 == 0 && tu_now() - t0 > 1.5)
			break;
		versioned(c->keys[v % CONC_KEYS], v, &e);
		if (urlmem_put(c->m, &e) != 0)
			ck_abort_msg("put %llu refused", (unsigned long long)v);
		/* Now and then a flush: the keys come back in another
		 * order, into other slots. */
		if (v % 1000 == 999) {
			urlmem_clear(c->m);
			clears++;
		}
	}
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < CONC_READERS; i++)
		pthread_join(c->th[i], NULL);
	for (int i = 0; i < CONC_READERS; i++) {
		lookups += c->r[i].lookups;
		found += c->r[i].found;
	}
	printf("urlmem: concurrency: %llu puts and %llu clears in %.2f s, "
	    "%llu reader lookups, %llu found\n",
	    (unsigned long long)(v - CONC_KEYS), (unsigned long long)clears,
	    tu_now() - t0, (unsigned long long)lookups,
	    (unsigned long long)found);
	for (int i = 0; i < CONC_READERS; i++)
		ck_assert_msg(c->r[i].torn == 0, "reader %d copied %llu torn "
		    "entries; the first: %s", i,
		    (unsigned long long)c->r[i].torn, c->r[i].what);
	ck_assert_uint_gt(found, 1000);
	/* At rest, the latest version of each key put since the clear. */
	for (uint64_t w = v - 1; w >= CONC_KEYS && w % 1000 != 999 &&
	    w + CONC_KEYS >= v; w--) {
		ck_assert(urlmem_lookup(c->m, c->keys[w % CONC_KEYS], &got));
		versioned(c->keys[w % CONC_KEYS], w, &e);
		ck_assert(entry_eq(&e, &got));
	}
	urlmem_free(c->m);
	free(c);
}
END_TEST

Suite *urlmem_suite(void);

Suite *
urlmem_suite(void)
{
	Suite *s = suite_create("urlmem");
	TCase *tc = tcase_create("urlmem");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_model_tiny);
	tcase_add_test(tc, test_model);
	tcase_add_test(tc, test_full_and_refusals);
	tcase_add_test(tc, test_places);
	tcase_add_test(tc, test_many_clears);
	tcase_add_test(tc, test_concurrent_readers);
	suite_add_tcase(s, tc);
	return s;
}
