/*
 * Tests for urlsweep (forgetting expired records and those of dropped
 * namespaces, in the background).  The directory's expiry seconds against
 * brute force; then, with the test's wall clock, random submits with times
 * to live in two namespaces, deletes, flushes and merges, and sweeps run to
 * the end at random times, against a model kept here: once the sweep is
 * done, every record expired for keep_expired_ms is gone (store scanned
 * directly) and counted in url_store.expired, every other record is as it
 * was, and a record expired more recently still answers with its times.  A
 * dropped namespace's records are all forgotten, not counted as expired,
 * and its id retired, while the name's new namespace keeps its own; a
 * busy writer sweeps at most every 100 ms; and a sweep cut short by a
 * crash (its group lost, or journaled and not flushed) is redone or
 * replayed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "store.h"
#include "testutil.h"
#include "urlfixture.h"
#include "urlset.h"
#include "urlset_impl.h"

#define POOL		1200
#define NNS		2
#define GROUP		48
#define T0		1700000000000ULL

static const char *ns_names[NNS] = { "", "ttl" };

static uint64_t fake_now = T0;

static uint64_t
fake_clock(void)
{
	return fake_now;
}

/* The keys of the test's URLs (make_keys). */
static struct url_key pool_keys[NNS][POOL];

static void
make_keys(struct url_fixture *fx, const char *host)
{
	struct url_keyer *k = urlset_keyer_new(fx->us);
	struct urlset_ns_mask mask;
	const char *why;
	char url[96];

	ck_assert_ptr_nonnull(k);
	urlset_ns_mask(ns_names[1], strlen(ns_names[1]), &mask);
	for (int u = 0; u < POOL; u++) {
		snprintf(url, sizeof(url), "http://%s/%d", host, u);
		ck_assert_int_eq(urlset_key(k, url, strlen(url),
		    &pool_keys[0][u], &why), 0);
		pool_keys[1][u] = pool_keys[0][u];
		urlset_key_masked(fx->us, &mask, &pool_keys[1][u]);
	}
	urlset_keyer_free(k);
}

static uint32_t
ns_id(struct url_fixture *fx, int nsi)
{
	return urlns_find(urlset_namespaces(fx->us), ns_names[nsi],
	    strlen(ns_names[nsi]), NULL);
}

/* The model: each URL's record in each namespace (count 0: none). */
struct model {
	struct url_state st[NNS][POOL];
	uint64_t expired;		/* reclaimed since the set opened */
};

static void
apply(struct url_fixture *fx, struct model *m, enum urlset_op op, int nsi,
    uint64_t ttl, const int *which, size_t n)
{
	struct url_key keys[GROUP];
	struct url_state states[GROUP];
	struct urlset_job job;

	for (size_t i = 0; i < n; i++) {
		struct url_state *st = &m->st[nsi][which[i]];
		bool seen = st->count > 0 && (st->expires_ms == 0 ||
		    st->expires_ms > fake_now);

		keys[i] = pool_keys[nsi][which[i]];
		if (op == URLSET_DELETE)
			memset(st, 0, sizeof(*st));
		else if (seen) {
			st->count++;
			st->last_seen_ms = fake_now;
		} else
			*st = (struct url_state){ .count = 1,
			    .first_seen_ms = fake_now, .last_seen_ms = fake_now,
			    .expires_ms = ttl ? fake_now + ttl : 0 };
	}
	memset(&job, 0, sizeof(job));
	job.op = op;
	job.durability = URLSET_RELAXED;
	snprintf(job.ns, sizeof(job.ns), "%s", ns_names[nsi]);
	job.ttl_ms = ttl;
	job.keys = keys;
	job.n = n;
	job.states = states;
	urlset_apply_group(fx->us, &job);
	ck_assert_int_eq(job.status, STORE_OK);
}

/*
 * Runs the sweep until a whole round over the segments forgets nothing.
 * (Not until a step finds nothing due: the directory's expiry is rounded
 * down to the second, so a segment may look due for up to a second before
 * its first record is, and this clock stands still.)  Returns the rounds.
 */
static int
sweep_all(struct url_fixture *fx)
{
	uint64_t before = UINT64_MAX;
	int rounds = 0;

	for (int i = 0; i < 100000; i++) {
		uint64_t live;

		if (urlset_sweep_step(fx->us, true))
			continue;
		/* The end of a round. */
		live = __atomic_load_n(&fx->us->stats.live, __ATOMIC_RELAXED);
		if (live == before &&
		    urlns_dropped(urlset_namespaces(fx->us), NULL, 0) == 0)
			return rounds;
		before = live;
		rounds++;
	}
	ck_abort_msg("the sweep never ends");
	return -1;
}

/* The model after a sweep: what expired keep ms ago or more is gone. */
static void
model_sweep(struct model *m, uint64_t keep)
{
	for (int s = 0; s < NNS; s++)
		for (int u = 0; u < POOL; u++) {
			struct url_state *st = &m->st[s][u];

			if (st->count > 0 && st->expires_ms != 0 &&
			    st->expires_ms + keep <= fake_now) {
				memset(st, 0, sizeof(*st));
				m->expired++;
			}
		}
}

/* Live records in the store (scanned directly) of namespace id ns, or of
 * any (URLNS_NONE); and how many of them are reclaimable at now. */
struct live_count {
	uint32_t ns;
	uint64_t keep, now;
	uint64_t live, reclaimable;
	struct store_txn *txn;
};

static int
count_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct live_count *lc = arg;
	struct store_val b;
	int64_t nrec = urlseg_check(val, vlen);

	ck_assert_int_gt(nrec, 0);
	ck_assert_int_eq(store_get(lc->txn, STORE_URL_LIVE, key, klen, &b),
	    STORE_OK);
	for (uint32_t i = 0; i < (uint32_t)nrec; i++) {
		struct url_record r;

		if (!urlseg_bit(b.data, i))
			continue;
		urlrec_decode(urlseg_record(val, i), &r);
		if (lc->ns != URLNS_NONE && r.st.ns != lc->ns)
			continue;
		lc->live++;
		lc->reclaimable += r.st.expires_ms != 0 &&
		    r.st.expires_ms + lc->keep <= lc->now;
	}
	return 0;
}

static struct live_count
count_store(struct url_fixture *fx, uint32_t ns)
{
	struct live_count lc = { .ns = ns, .keep = fx->opts.keep_expired_ms,
	    .now = fake_now };

	lc.txn = store_reader_new(fx->st);
	ck_assert_int_eq(store_reader_begin(lc.txn), STORE_OK);
	ck_assert_int_eq(store_scan_txn(lc.txn, STORE_URL_SEGS, count_one,
	    &lc), STORE_OK);
	store_reader_end(lc.txn);
	store_reader_free(lc.txn);
	return lc;
}

static void
assert_model(struct url_fixture *fx, const struct model *m, const char *when)
{
	struct url_state got[POOL];
	struct urlset_tally tally = { 0 };
	struct urlset_stats st;
	uint64_t live = 0;

	for (int s = 0; s < NNS; s++) {
		uint32_t id = ns_id(fx, s);

		ck_assert_int_eq(urlset_current_states(fx->us, pool_keys[s],
		    POOL, got), STORE_OK);
		for (int u = 0; u < POOL; u++) {
			const struct url_state *w = &m->st[s][u];

			live += w->count > 0;
			if (got[u].count != w->count || (w->count > 0 &&
			    (got[u].expires_ms != w->expires_ms ||
			    got[u].first_seen_ms != w->first_seen_ms ||
			    got[u].ns != id)))
				ck_abort_msg("%s: ns %d URL %d: count %u "
				    "expires %+lld; the model: count %u expires "
				    "%+lld", when, s, u, got[u].count,
				    (long long)(got[u].expires_ms - fake_now),
				    w->count,
				    (long long)(w->expires_ms - fake_now));
		}
		/* Expired and kept: unseen, with its times. */
		if (id == URLNS_NONE)
			continue;
		ck_assert_int_eq(urlset_check(fx->us, fx->rd, id, fake_now,
		    pool_keys[s], NULL, POOL, got, &tally), STORE_OK);
		for (int u = 0; u < POOL; u++) {
			const struct url_state *w = &m->st[s][u];
			bool expired = w->count > 0 && w->expires_ms != 0 &&
			    w->expires_ms <= fake_now;

			ck_assert_uint_eq(got[u].count, expired ? 0 :
			    w->count);
			if (w->count > 0)
				ck_assert_uint_eq(got[u].expires_ms,
				    w->expires_ms);
		}
	}
	urlset_stats(fx->us, &st);
	ck_assert_msg(st.expired == m->expired && st.urls == live,
	    "%s: expired %llu, urls %llu; the model %llu, %llu", when,
	    (unsigned long long)st.expired, (unsigned long long)st.urls,
	    (unsigned long long)m->expired, (unsigned long long)live);
}

START_TEST(test_expires_s)
{
	uint64_t seed = 1;
	uint8_t recs[16 * URLREC_LEN];

	ck_assert_uint_eq(urlset_expires_s_of(0), 0);
	ck_assert_uint_eq(urlset_expires_s_of(1), 1);
	ck_assert_uint_eq(urlset_expires_s_of(999), 1);
	ck_assert_uint_eq(urlset_expires_s_of(1000), 1);
	ck_assert_uint_eq(urlset_expires_s_of(1999), 1);
	ck_assert_uint_eq(urlset_expires_s_of(2000), 2);
	ck_assert_uint_eq(urlset_expires_s_of(UINT64_MAX), UINT32_MAX);
	ck_assert_uint_eq(urlset_expires_s_of((uint64_t)UINT32_MAX * 1000),
	    UINT32_MAX);
	/* Never late: the second is at or before the time, and not 0. */
	for (int i = 0; i < 100000; i++) {
		uint64_t ms = 1 + tu_rand_below(&seed, (uint64_t)1 << 45);
		uint32_t s = urlset_expires_s_of(ms);

		ck_assert_uint_ge(s, 1);
		ck_assert_uint_le((uint64_t)s * 1000, ms < 1000 ? 1000 : ms);
		if (ms >= 1000 && ms / 1000 < UINT32_MAX)
			ck_assert_uint_gt((uint64_t)s * 1000 + 1000, ms);
	}
	/* A segment's: its earliest expiry, records without one aside. */
	for (int t = 0; t < 2000; t++) {
		size_t n = 1 + tu_rand_below(&seed, 16);
		uint64_t min = 0;

		for (size_t i = 0; i < n; i++) {
			struct url_record r;

			memset(&r, 0, sizeof(r));
			r.st.count = 1;
			r.st.expires_ms = tu_rand_below(&seed, 3) == 0 ? 0 :
			    T0 + tu_rand_below(&seed, 100000000);
			if (r.st.expires_ms != 0 && (min == 0 ||
			    r.st.expires_ms < min))
				min = r.st.expires_ms;
			ck_assert_int_eq(urlrec_encode(&r, recs +
			    i * URLREC_LEN), 0);
		}
		ck_assert_uint_eq(urlset_expires_s(recs, n), min == 0 ? 0 :
		    min / 1000);
	}
}
END_TEST

START_TEST(test_sweep_against_model)
{
	static const uint64_t ttls[] = { 0, 0, 200, 800, 3000, 20000 };
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct model *m = calloc(1, sizeof(*m));
	uint64_t seed = 8080;
	int sweeps = 0;
	char when[64];

	ck_assert_ptr_nonnull(m);
	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.opts = (struct urlset_options){ .capacity = 6000,
	    .journal_entries = 256, .segment_records = 40,
	    .keep_expired_ms = 500 };
	url_fixture_open(&fx);
	make_keys(&fx, "sweep.example");
	for (int step = 0; step < 600; step++) {
		uint64_t r = tu_rand_below(&seed, 30);

		fake_now += tu_rand_below(&seed, 60);
		snprintf(when, sizeof(when), "step %d", step);
		if (r < 22) {
			int which[GROUP];
			int nsi = (int)tu_rand_below(&seed, NNS);
			size_t n = 1 + tu_rand_below(&seed, GROUP);
			bool del = tu_rand_below(&seed, 10) == 0;

			for (size_t i = 0; i < n; i++) {
				which[i] = (int)tu_rand_below(&seed, POOL);
				for (size_t j = 0; j < i; j++)
					if (which[j] == which[i]) {
						i--;
						break;
					}
			}
			apply(&fx, m, del ? URLSET_DELETE : URLSET_SUBMIT, nsi,
			    ttls[tu_rand_below(&seed, 6)], which, n);
		} else if (r < 24) {
			ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
		} else if (r < 25) {
			bool did;

			ck_assert_int_eq(urlset_merge_step(fx.us, &did, false),
			    STORE_OK);
		} else if (r < 27) {
			/* A step alone: it may forget some, but only what
			 * has expired keep ms ago. */
			struct live_count before, after;

			ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
			before = count_store(&fx, URLNS_NONE);
			urlset_sweep_step(fx.us, true);
			ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
			after = count_store(&fx, URLNS_NONE);
			ck_assert_uint_eq(before.live - after.live,
			    before.reclaimable - after.reclaimable);
			/* Keep the model in step: what went is what had
			 * expired; the full sweep below settles it. */
			model_sweep(m, fx.opts.keep_expired_ms);
			sweeps++;
			sweep_all(&fx);
			ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
			ck_assert_uint_eq(count_store(&fx,
			    URLNS_NONE).reclaimable, 0);
			assert_model(&fx, m, when);
		} else {
			/* Everything in segments, then swept to the end. */
			ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
			sweep_all(&fx);
			model_sweep(m, fx.opts.keep_expired_ms);
			sweeps++;
			ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
			ck_assert_uint_eq(count_store(&fx,
			    URLNS_NONE).reclaimable, 0);
			assert_model(&fx, m, when);
		}
		if (step % 300 == 299) {
			ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
			url_fixture_drop(&fx);
			url_fixture_open(&fx);
			m->expired = 0;
			assert_model(&fx, m, "reopened");
		}
	}
	ck_assert_int_gt(sweeps, 30);
	free(m);
	url_fixture_end(&fx);
}
END_TEST

/*
 * A dropped namespace: all its records forgotten by sweeps, round after
 * round (those still in the journal's table too), none counted as
 * expired; then its id is retired.  The name's new namespace, and the
 * default one, keep theirs.
 */
START_TEST(test_dropped_namespace)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct model *m = calloc(1, sizeof(*m));
	struct urlns *ns;
	struct urlns_info info;
	struct urlset_stats st;
	uint32_t old_id, new_id;
	int which[GROUP];

	ck_assert_ptr_nonnull(m);
	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.opts = (struct urlset_options){ .capacity = 6000,
	    .journal_entries = 256, .segment_records = 40 };
	url_fixture_open(&fx);
	make_keys(&fx, "drop.example");
	ns = urlset_namespaces(fx.us);
	for (int at = 0; at < POOL; at += GROUP) {
		for (int i = 0; i < GROUP; i++)
			which[i] = at + i;
		apply(&fx, m, URLSET_SUBMIT, 1, 0, which, GROUP);
		if (at % (2 * GROUP) == 0)
			apply(&fx, m, URLSET_SUBMIT, 0, 0, which, GROUP / 2);
	}
	/* Some of its records still in the journal's table. */
	old_id = ns_id(&fx, 1);
	ck_assert_uint_gt(urlmem_count(fx.us->mem), 0);
	ck_assert_int_eq(urlns_drop(ns, old_id), STORE_OK);
	ck_assert_uint_eq(ns_id(&fx, 1), URLNS_NONE);
	memset(m->st[1], 0, sizeof(m->st[1]));
	/* The name again: a new namespace, with some of the same URLs. */
	for (int i = 0; i < GROUP; i++)
		which[i] = 3 * i;
	apply(&fx, m, URLSET_SUBMIT, 1, 0, which, GROUP);
	new_id = ns_id(&fx, 1);
	ck_assert_uint_ne(new_id, old_id);
	ck_assert_uint_gt(count_store(&fx, old_id).live, 0);
	sweep_all(&fx);
	ck_assert_uint_eq(urlns_dropped(ns, NULL, 0), 0);
	ck_assert(!urlns_info(ns, old_id, &info));
	ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	ck_assert_uint_eq(count_store(&fx, old_id).live, 0);
	ck_assert_uint_eq(urlns_dropping_urls(ns), 0);
	urlset_stats(fx.us, &st);
	ck_assert_uint_eq(st.dropping, 0);
	ck_assert_uint_eq(st.expired, 0);
	ck_assert(urlns_info(ns, new_id, &info));
	ck_assert_uint_eq(info.urls, GROUP);
	assert_model(&fx, m, "after the drop");
	/* Retired for good: a reopen does not bring it back. */
	url_fixture_drop(&fx);
	url_fixture_open(&fx);
	ns = urlset_namespaces(fx.us);
	ck_assert(!urlns_info(ns, old_id, &info));
	ck_assert_uint_eq(urlns_dropped(ns, NULL, 0), 0);
	assert_model(&fx, m, "reopened after the drop");
	free(m);
	url_fixture_end(&fx);
}
END_TEST

/* A busy writer (not idle) sweeps a step at most every 100 ms. */
START_TEST(test_busy_writer_throttled)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct model *m = calloc(1, sizeof(*m));
	struct timespec nap = { 0, 120 * 1000000 };
	int which[GROUP];

	ck_assert_ptr_nonnull(m);
	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.opts = (struct urlset_options){ .capacity = 6000,
	    .journal_entries = 256, .segment_records = 16 };
	url_fixture_open(&fx);
	make_keys(&fx, "busy.example");
	for (int at = 0; at < 640; at += 32) {
		for (int i = 0; i < 32; i++)
			which[i] = at + i;
		apply(&fx, m, URLSET_SUBMIT, 0, 100, which, 32);
	}
	ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	fake_now += 1000;
	/* 40 segments due; a step reads 4 at most. */
	nanosleep(&nap, NULL);
	ck_assert(urlset_sweep_step(fx.us, false));
	ck_assert(!urlset_sweep_step(fx.us, false));
	ck_assert(urlset_sweep_step(fx.us, true));
	ck_assert(urlset_sweep_step(fx.us, true));
	nanosleep(&nap, NULL);
	ck_assert(urlset_sweep_step(fx.us, false));
	sweep_all(&fx);
	model_sweep(m, 0);
	assert_model(&fx, m, "swept");
	free(m);
	url_fixture_end(&fx);
}
END_TEST

static int crash_armed = -1;

static bool
crash_hook(enum urlset_crash_point point)
{
	if ((int)point != crash_armed)
		return false;
	crash_armed = -1;
	return true;
}

/* A sweep's group lost in a crash (staged only) is redone after the
 * reopen; one journaled but not flushed is replayed. */
START_TEST(test_sweep_after_crash)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct model *m = calloc(1, sizeof(*m));
	struct live_count before, after;
	int which[GROUP];

	ck_assert_ptr_nonnull(m);
	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.opts = (struct urlset_options){ .capacity = 6000,
	    .journal_entries = 512, .segment_records = 32 };
	url_fixture_open(&fx);
	make_keys(&fx, "crash.example");
	for (int at = 0; at < 480; at += GROUP) {
		for (int i = 0; i < GROUP; i++)
			which[i] = at + i;
		apply(&fx, m, URLSET_SUBMIT, at % 96 ? 0 : 1,
		    (at / GROUP) % 3 ? 50 : 0, which, GROUP);
	}
	ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	fake_now += 100;
	urlset_crash_hook = crash_hook;

	/* Lost: nothing forgotten. */
	crash_armed = URLSET_CRASH_STAGED;
	ck_assert(urlset_sweep_step(fx.us, true));
	ck_assert_int_eq(crash_armed, -1);
	url_fixture_drop(&fx);
	url_fixture_open(&fx);
	assert_model(&fx, m, "after a lost sweep");

	/* Journaled: replayed at the reopen (which flushes it). */
	before = count_store(&fx, URLNS_NONE);
	ck_assert_uint_gt(before.reclaimable, 0);
	crash_armed = URLSET_CRASH_PUBLISHED;
	ck_assert(urlset_sweep_step(fx.us, true));
	ck_assert_int_eq(crash_armed, -1);
	ck_assert_uint_gt(urlmem_count(fx.us->mem), 0);
	url_fixture_drop(&fx);
	url_fixture_open(&fx);
	after = count_store(&fx, URLNS_NONE);
	ck_assert_uint_lt(after.reclaimable, before.reclaimable);
	ck_assert_uint_eq(before.live - after.live,
	    before.reclaimable - after.reclaimable);
	urlset_crash_hook = NULL;
	sweep_all(&fx);
	model_sweep(m, 0);
	/* This session counted only what it reclaimed itself. */
	m->expired = after.reclaimable;
	assert_model(&fx, m, "swept after the crashes");
	ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	ck_assert_uint_eq(count_store(&fx, URLNS_NONE).reclaimable, 0);
	free(m);
	url_fixture_end(&fx);
}
END_TEST

Suite *urlsweep_suite(void);

Suite *
urlsweep_suite(void)
{
	Suite *s = suite_create("urlsweep");
	TCase *tc = tcase_create("urlsweep");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_expires_s);
	tcase_add_test(tc, test_sweep_against_model);
	tcase_add_test(tc, test_dropped_namespace);
	tcase_add_test(tc, test_busy_writer_throttled);
	tcase_add_test(tc, test_sweep_after_crash);
	suite_add_tcase(s, tc);
	return s;
}
