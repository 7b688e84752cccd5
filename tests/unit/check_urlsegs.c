/*
 * Tests for urlsegs (the URL segments in the store): flushes and merges
 * against a model kept here (the live URLs and their counts), checked by
 * reading the store's segments and live bitmaps directly, decoded with the
 * layout urlrec.h documents: after a flush the store's live records are
 * exactly the model's, each once, in sorted segments of at most
 * segment_records; the statistics count what the store holds; merges keep
 * the live set and leave no sparse segment and at most one small one;
 * urlset_merge_due agrees with the store; a reopen (the rebuild) finds the
 * same; the index grows when the URLs outgrow it; urlset_verify_store
 * finds a store changed behind the set's back; damaged segments stop the
 * rebuild; and a crash at each step of a flush or merge loses nothing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "store.h"
#include "testutil.h"
#include "urlfixture.h"
#include "urlset.h"
#include "urlset_impl.h"

#define POOL		2000
#define GROUP		64

/* The keys of the test's URLs (make_keys). */
static struct url_key pool_keys[POOL];

/* Keys of digests drawn from seed: uniform fingerprints, as MD5s are. */
static void
make_keys(struct url_fixture *fx, uint64_t seed)
{
	for (int u = 0; u < POOL; u++) {
		uint8_t d[CBF_FP_LEN];

		for (int i = 0; i < CBF_FP_LEN; i++)
			d[i] = (uint8_t)tu_rand(&seed);
		urlset_key_digest(fx->us, d, &pool_keys[u]);
	}
}

static void
apply(struct url_fixture *fx, enum urlset_op op, const int *which, size_t n)
{
	struct url_key keys[GROUP];
	struct url_state states[GROUP];
	struct urlset_job job;

	for (size_t i = 0; i < n; i++)
		keys[i] = pool_keys[which[i]];
	memset(&job, 0, sizeof(job));
	job.op = op;
	job.durability = URLSET_RELAXED;
	job.keys = keys;
	job.n = n;
	job.states = states;
	urlset_apply_group(fx->us, &job);
	ck_assert_int_eq(job.status, STORE_OK);
}

/* What the store holds, read directly. */
struct scan {
	struct url_record *live;
	size_t nlive, cap;
	uint64_t segments, records, dead, small, sparse;
	uint32_t max_nrec;
	const char *bad;
	uint32_t bad_id;
	struct store_txn *txn;
	uint32_t seg_records;
};

static int
scan_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct scan *sc = arg;
	struct store_val b;
	uint32_t id, nlive = 0;
	int64_t nrec;

	ck_assert_uint_eq(klen, sizeof(id));
	memcpy(&id, key, sizeof(id));
	if ((nrec = urlseg_check(val, vlen)) <= 0) {
		sc->bad = "not a segment, or an empty one";
		sc->bad_id = id;
		return 1;
	}
	if (store_get(sc->txn, STORE_URL_LIVE, &id, sizeof(id), &b) !=
	    STORE_OK || b.len != URLSEG_BITMAP_LEN(nrec)) {
		sc->bad = "no live bitmap of its size";
		sc->bad_id = id;
		return 1;
	}
	for (uint32_t i = 0; i < (uint32_t)nrec; i++) {
		const uint8_t *r = urlseg_record(val, i);

		if (i > 0 && memcmp(urlseg_record(val, i - 1), r,
		    CBF_FP_LEN) >= 0) {
			sc->bad = "records out of order";
			sc->bad_id = id;
			return 1;
		}
		if (!urlseg_bit(b.data, i))
			continue;
		if (sc->nlive == sc->cap) {
			sc->cap = sc->cap ? 2 * sc->cap : 1024;
			sc->live = realloc(sc->live, sc->cap *
			    sizeof(*sc->live));
			ck_assert_ptr_nonnull(sc->live);
		}
		urlrec_decode(r, &sc->live[sc->nlive++]);
		nlive++;
	}
	sc->segments++;
	sc->records += (uint64_t)nrec;
	sc->dead += (uint64_t)nrec - nlive;
	sc->small += (uint64_t)nrec < sc->seg_records / 2;
	sc->sparse += nlive * 2 <= (uint64_t)nrec;
	if ((uint32_t)nrec > sc->max_nrec)
		sc->max_nrec = (uint32_t)nrec;
	return 0;
}

static int
cmp_record(const void *a, const void *b)
{
	return memcmp(((const struct url_record *)a)->fp,
	    ((const struct url_record *)b)->fp, CBF_FP_LEN);
}

static void
scan_store(struct url_fixture *fx, struct scan *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->seg_records = fx->opts.segment_records;
	sc->txn = store_reader_new(fx->st);
	ck_assert_ptr_nonnull(sc->txn);
	ck_assert_int_eq(store_reader_begin(sc->txn), STORE_OK);
	store_scan_txn(sc->txn, STORE_URL_SEGS, scan_one, sc);
	store_reader_end(sc->txn);
	store_reader_free(sc->txn);
	ck_assert_msg(sc->bad == NULL, "segment %u: %s", sc->bad_id, sc->bad);
	if (sc->nlive > 1)
		qsort(sc->live, sc->nlive, sizeof(*sc->live), cmp_record);
}

struct model_key {
	uint8_t fp[CBF_FP_LEN];
	uint32_t count;
};

static int
cmp_model_key(const void *a, const void *b)
{
	return memcmp(a, b, CBF_FP_LEN);
}

/*
 * The store, with the journal's table flushed, against the model: its live
 * records are the model's URLs, once each, with their counts and their
 * counters; the statistics count what it holds.
 */
static void
assert_store(struct url_fixture *fx, const uint32_t *model, const char *when)
{
	static struct model_key want[POOL];
	const struct cbf *f = urlset_filter(fx->us);
	struct urlset_stats st;
	struct scan sc;
	size_t n = 0;

	ck_assert_uint_eq(urlmem_count(fx->us->mem), 0);
	for (int u = 0; u < POOL; u++)
		if (model[u] > 0) {
			memcpy(want[n].fp, pool_keys[u].fp, CBF_FP_LEN);
			want[n++].count = model[u];
		}
	qsort(want, n, sizeof(want[0]), cmp_model_key);
	scan_store(fx, &sc);
	ck_assert_msg(sc.nlive == n, "%s: %zu live records, the model %zu",
	    when, sc.nlive, n);
	for (size_t i = 0; i < n; i++) {
		uint32_t idx[CBF_K];

		if (memcmp(sc.live[i].fp, want[i].fp, CBF_FP_LEN) != 0 ||
		    sc.live[i].st.count != want[i].count)
			ck_abort_msg("%s: live record %zu differs from the "
			    "model (count %u, the model's %u)", when, i,
			    sc.live[i].st.count, want[i].count);
		cbf_indices(f, sc.live[i].fp, idx);
		ck_assert(memcmp(idx, sc.live[i].idx, sizeof(idx)) == 0);
	}
	ck_assert_uint_le(sc.max_nrec, fx->opts.segment_records);
	urlset_stats(fx->us, &st);
	if (st.segments != sc.segments || st.records != sc.records ||
	    st.dead_records != sc.dead || st.small_segments != sc.small ||
	    st.urls != n)
		ck_abort_msg("%s: stats segments %llu records %llu dead %llu "
		    "small %llu urls %llu; the store %llu %llu %llu %llu %zu",
		    when, (unsigned long long)st.segments,
		    (unsigned long long)st.records,
		    (unsigned long long)st.dead_records,
		    (unsigned long long)st.small_segments,
		    (unsigned long long)st.urls,
		    (unsigned long long)sc.segments,
		    (unsigned long long)sc.records,
		    (unsigned long long)sc.dead, (unsigned long long)sc.small,
		    n);
	free(sc.live);
}

/* Every URL's count as a check answers it. */
static void
assert_checks(struct url_fixture *fx, const uint32_t *model, const char *when)
{
	static struct url_state states[POOL];
	struct urlset_tally tally = { 0 };

	ck_assert_int_eq(urlset_check(fx->us, fx->rd, URLNS_DEFAULT,
	    clock_wall_ms(), pool_keys, NULL, POOL, states, &tally), STORE_OK);
	for (int u = 0; u < POOL; u++)
		if (states[u].count != model[u])
			ck_abort_msg("%s: URL %d count %u, the model %u", when,
			    u, states[u].count, model[u]);
}

static void
assert_verified(struct url_fixture *fx, const char *when)
{
	struct urlset_verify v;

	ck_assert_int_eq(urlset_verify_store(fx->us, &v), STORE_OK);
	ck_assert_msg(v.counter_mismatches == 0 && v.index_mismatches == 0,
	    "%s: verify: %s", when, v.detail);
}

/* Merges until none is due; then no segment is sparse and at most one is
 * small, and urlset_merge_due says so. */
static void
merge_all(struct url_fixture *fx, const char *when)
{
	struct scan sc;
	bool did, forced;
	int steps = 0;

	do {
		ck_assert_int_eq(urlset_merge_step(fx->us, &did, false),
		    STORE_OK);
		ck_assert_int_lt(++steps, 1000);
	} while (did);
	scan_store(fx, &sc);
	ck_assert_msg(sc.sparse == 0 && sc.small <= 1, "%s: after merging, "
	    "%llu sparse and %llu small segments", when,
	    (unsigned long long)sc.sparse, (unsigned long long)sc.small);
	ck_assert(!urlset_merge_due(fx->us, &forced));
	free(sc.live);
}

START_TEST(test_flush_and_merge_against_model)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	static uint32_t model[POOL];
	uint64_t seed = 606, merges = 0, flushes = 0;
	struct urlset_stats st;
	char when[64];

	memset(model, 0, sizeof(model));
	fx.opts = (struct urlset_options){ .capacity = 4000,
	    .journal_entries = 256, .segment_records = 48 };
	url_fixture_open(&fx);
	make_keys(&fx, 1);
	for (int step = 0; step < 1500; step++) {
		uint64_t r = tu_rand_below(&seed, 20);

		snprintf(when, sizeof(when), "step %d", step);
		if (r < 14) {
			int which[GROUP];
			size_t n = 1 + tu_rand_below(&seed, GROUP);
			/* Phases: the population grows, then shrinks. */
			bool del = tu_rand_below(&seed, 100) <
			    ((step / 300) % 2 ? 60 : 25);

			for (size_t i = 0; i < n; i++) {
				which[i] = (int)tu_rand_below(&seed, POOL);
				if (del)
					model[which[i]] = 0;
				else
					model[which[i]]++;
			}
			apply(&fx, del ? URLSET_DELETE : URLSET_SUBMIT, which,
			    n);
		} else if (r < 17) {
			bool forced, due, want;
			struct scan sc;

			ck_assert_int_eq(urlset_flush(fx.us,
			    tu_rand_below(&seed, 2)), STORE_OK);
			assert_store(&fx, model, when);
			/* Due exactly when two segments are small or one
			 * is sparse. */
			scan_store(&fx, &sc);
			due = urlset_merge_due(fx.us, &forced);
			want = sc.small >= 2 || sc.sparse > 0;
			ck_assert_msg(due == want, "%s: merge due %d, the "
			    "store has %llu small and %llu sparse", when, due,
			    (unsigned long long)sc.small,
			    (unsigned long long)sc.sparse);
			ck_assert(!forced || due);
			if (sc.small > 64)
				ck_assert(forced);
			free(sc.live);
		} else if (r < 19) {
			bool did;

			ck_assert_int_eq(urlset_merge_step(fx.us, &did,
			    tu_rand_below(&seed, 2)), STORE_OK);
			/* A merge empties the journal's table first. */
			assert_store(&fx, model, when);
		} else
			assert_checks(&fx, model, when);
		if (step % 250 == 249) {
			merge_all(&fx, when);
			assert_store(&fx, model, when);
			assert_verified(&fx, when);
			/* The rebuild finds what the set had. */
			struct urlset_stats before, after;

			urlset_stats(fx.us, &before);
			merges += before.merges;
			flushes += before.flushes;
			url_fixture_drop(&fx);
			url_fixture_open(&fx);
			urlset_stats(fx.us, &after);
			ck_assert_uint_eq(after.segments, before.segments);
			ck_assert_uint_eq(after.records, before.records);
			ck_assert_uint_eq(after.dead_records,
			    before.dead_records);
			ck_assert_uint_eq(after.small_segments,
			    before.small_segments);
			ck_assert_uint_eq(after.urls, before.urls);
			assert_store(&fx, model, "after a reopen");
			assert_checks(&fx, model, "after a reopen");
			assert_verified(&fx, "after a reopen");
		}
	}
	urlset_stats(fx.us, &st);
	merges += st.merges;
	flushes += st.flushes;
	ck_assert_msg(merges > 50 && flushes > 100, "merges %llu, flushes "
	    "%llu: too few", (unsigned long long)merges,
	    (unsigned long long)flushes);
	url_fixture_end(&fx);
}
END_TEST

/* URLs well past the capacity: the index is replaced by larger ones, at
 * flushes and at the rebuild, and nothing is lost. */
START_TEST(test_index_grows)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	static uint32_t model[POOL];
	uint64_t cap;
	int which[GROUP];

	memset(model, 0, sizeof(model));
	fx.opts = (struct urlset_options){ .capacity = 100,
	    .journal_entries = 512, .segment_records = 256 };
	url_fixture_open(&fx);
	make_keys(&fx, 2);
	cap = urlidx_capacity(fx.us->rd.idx);
	for (int at = 0; at < POOL; at += GROUP) {
		size_t n = 0;

		for (int u = at; u < at + GROUP && u < POOL; u++) {
			which[n++] = u;
			model[u] = 1;
		}
		apply(&fx, URLSET_SUBMIT, which, n);
	}
	ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	ck_assert_uint_gt(urlidx_capacity(fx.us->rd.idx), cap);
	assert_store(&fx, model, "grown");
	assert_checks(&fx, model, "grown");
	assert_verified(&fx, "grown");
	/* The rebuild starts from the configured capacity again. */
	url_fixture_drop(&fx);
	url_fixture_open(&fx);
	ck_assert_uint_ge(urlidx_capacity(fx.us->rd.idx), POOL);
	assert_checks(&fx, model, "rebuilt");
	assert_verified(&fx, "rebuilt");
	url_fixture_end(&fx);
}
END_TEST

/* A put behind the set's back, in a transaction of the test's. */
static void
put_raw(struct store *st, enum store_table t, uint32_t id, const void *v,
    size_t len)
{
	struct store_txn *txn;

	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(store_put(txn, t, &id, sizeof(id), v, len, 0, NULL),
	    STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
}

static void *
get_raw(struct store *st, enum store_table t, uint32_t id, size_t *len)
{
	struct store_txn *txn = store_reader_new(st);
	struct store_val v;
	void *p;

	ck_assert_int_eq(store_reader_begin(txn), STORE_OK);
	ck_assert_int_eq(store_get(txn, t, &id, sizeof(id), &v), STORE_OK);
	p = malloc(v.len + 1);
	ck_assert_ptr_nonnull(p);
	memcpy(p, v.data, v.len);
	*len = v.len;
	store_reader_end(txn);
	store_reader_free(txn);
	return p;
}

/*
 * verify finds a record whose live bit was cleared in the store behind the
 * set's back; a reopen then takes the store for the truth.  A damaged
 * segment, or one without its bitmap, stops the rebuild with the reason.
 */
START_TEST(test_verify_and_damage)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	static uint32_t model[POOL];
	struct urlset_verify v;
	struct url_record r;
	uint8_t *seg, *bits;
	size_t slen, blen;
	int which[GROUP];
	char *cause;
	int gone = -1;

	memset(model, 0, sizeof(model));
	fx.opts = (struct urlset_options){ .capacity = 4000,
	    .segment_records = 32 };
	url_fixture_open(&fx);
	make_keys(&fx, 3);
	for (int u = 0; u < GROUP; u++) {
		which[u] = u;
		model[u] = 1;
	}
	apply(&fx, URLSET_SUBMIT, which, GROUP);
	ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	assert_verified(&fx, "before");

	/* Record 3 of segment 1 loses its live bit. */
	seg = get_raw(fx.st, STORE_URL_SEGS, 1, &slen);
	bits = get_raw(fx.st, STORE_URL_LIVE, 1, &blen);
	ck_assert_int_gt(urlseg_check(seg, slen), 3);
	urlrec_decode(urlseg_record(seg, 3), &r);
	for (int u = 0; u < GROUP; u++)
		if (memcmp(pool_keys[u].fp, r.fp, CBF_FP_LEN) == 0)
			gone = u;
	ck_assert_int_ge(gone, 0);
	urlseg_set_bit(bits, 3, false);
	put_raw(fx.st, STORE_URL_LIVE, 1, bits, blen);
	ck_assert_int_eq(urlset_verify_store(fx.us, &v), STORE_OK);
	ck_assert_uint_eq(v.records, GROUP - 1);
	ck_assert_uint_gt(v.counter_mismatches, 0);
	ck_assert_uint_gt(v.index_mismatches, 0);
	ck_assert(v.detail[0] != '\0');

	/* The store is the truth: rebuilt from it, memory agrees. */
	url_fixture_drop(&fx);
	url_fixture_open(&fx);
	model[gone] = 0;
	assert_store(&fx, model, "rebuilt");
	assert_checks(&fx, model, "rebuilt");
	assert_verified(&fx, "rebuilt");
	url_fixture_drop(&fx);

	/* A damaged segment. */
	fx.st = store_open(&(struct store_options){ .dir = fx.dir,
	    .map_size = 128 << 20, .sync = STORE_SYNC_NONE }, &cause);
	ck_assert_ptr_nonnull(fx.st);
	seg[0] ^= 0xff;			/* its magic */
	put_raw(fx.st, STORE_URL_SEGS, 1, seg, slen);
	store_close(fx.st);
	fx.st = NULL;
	ck_assert_ptr_null(url_fixture_try_open(&fx, &cause));
	ck_assert_msg(cause != NULL && strstr(cause, "damaged") != NULL, "%s",
	    cause ? cause : "no cause");
	free(cause);
	url_fixture_drop(&fx);

	/* A segment without its bitmap. */
	fx.st = store_open(&(struct store_options){ .dir = fx.dir,
	    .map_size = 128 << 20, .sync = STORE_SYNC_NONE }, &cause);
	ck_assert_ptr_nonnull(fx.st);
	seg[0] ^= 0xff;
	put_raw(fx.st, STORE_URL_SEGS, 1, seg, slen);
	{
		struct store_txn *txn;
		uint32_t id = 1;

		ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
		ck_assert_int_eq(store_del(txn, STORE_URL_LIVE, &id,
		    sizeof(id)), STORE_OK);
		ck_assert_int_eq(store_commit(txn), STORE_OK);
	}
	store_close(fx.st);
	fx.st = NULL;
	ck_assert_ptr_null(url_fixture_try_open(&fx, &cause));
	ck_assert_msg(cause != NULL && strstr(cause, "bitmap") != NULL, "%s",
	    cause ? cause : "no cause");
	free(cause);
	free(seg);
	free(bits);
	url_fixture_end(&fx);
}
END_TEST

/* Crash injection: fires once, at the armed point. */
static int crash_armed = -1;

static bool
crash_hook(enum urlset_crash_point point)
{
	if ((int)point != crash_armed)
		return false;
	crash_armed = -1;
	return true;
}

/* A crash in each step of a flush and of a merge: after the reopen (the
 * journal replayed into the store), the store holds exactly the model. */
START_TEST(test_crashes_in_flush_and_merge)
{
	static const int points[] = { URLSET_CRASH_FLUSH_WRITTEN,
	    URLSET_CRASH_FLUSH_COMMITTED, URLSET_CRASH_MERGE_WRITTEN,
	    URLSET_CRASH_MERGE_COMMITTED };
	struct url_fixture fx = { .dir = tu_tmpdir() };
	static uint32_t model[POOL];
	uint64_t seed = 5;
	char when[64];

	memset(model, 0, sizeof(model));
	fx.opts = (struct urlset_options){ .capacity = 4000,
	    .journal_entries = 128, .segment_records = 32 };
	url_fixture_open(&fx);
	make_keys(&fx, 4);
	urlset_crash_hook = crash_hook;
	for (int round = 0; round < 40; round++) {
		int point = points[round % 4];
		bool did;
		int rc;

		/* Small segments and dead records for the merge. */
		for (int g = 0; g < 6; g++) {
			int which[GROUP];
			size_t n = 1 + tu_rand_below(&seed, 20);
			bool del = tu_rand_below(&seed, 3) == 0;

			for (size_t i = 0; i < n; i++) {
				which[i] = (int)tu_rand_below(&seed, 400);
				if (del)
					model[which[i]] = 0;
				else
					model[which[i]]++;
			}
			apply(&fx, del ? URLSET_DELETE : URLSET_SUBMIT, which,
			    n);
			if (point >= URLSET_CRASH_MERGE_WRITTEN)
				ck_assert_int_eq(urlset_flush(fx.us, true),
				    STORE_OK);
		}
		crash_armed = point;
		if (point < URLSET_CRASH_MERGE_WRITTEN)
			rc = urlset_flush(fx.us, true);
		else
			rc = urlset_merge_step(fx.us, &did, true);
		snprintf(when, sizeof(when), "round %d, crash at %d", round,
		    point);
		ck_assert_msg(crash_armed == -1 && rc != STORE_OK, "%s: no "
		    "crash", when);
		url_fixture_drop(&fx);
		url_fixture_open(&fx);
		assert_store(&fx, model, when);
		assert_checks(&fx, model, when);
		assert_verified(&fx, when);
	}
	url_fixture_end(&fx);
}
END_TEST

Suite *urlsegs_suite(void);

Suite *
urlsegs_suite(void)
{
	Suite *s = suite_create("urlsegs");
	TCase *tc = tcase_create("urlsegs");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_flush_and_merge_against_model);
	tcase_add_test(tc, test_index_grows);
	tcase_add_test(tc, test_verify_and_damage);
	tcase_add_test(tc, test_crashes_in_flush_and_merge);
	suite_add_tcase(s, tc);
	return s;
}
