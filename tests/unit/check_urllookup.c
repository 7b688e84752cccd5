/*
 * Tests for urllookup (checks, in batches): urlset_check against a model
 * kept here, on a real store whose URLs lie in the journal's table, in
 * segments, in dead records that the index may still lead to, in two
 * namespaces and with times to live, asked at times before and after they
 * end, with duplicates and invalid items in the batches; the tally it
 * counts; urlset_lookup_store's places, read back from the store, and its
 * retries when a merge moved a key's segment after the snapshot began;
 * checks from reader threads while the writer applies groups, flushes,
 * merges and grows the index, which must never miss an acknowledged
 * submit or see an acknowledged delete; and a reader that may not wait
 * (the event loop's), which answers what is in memory as any reader does
 * and refuses, having answered nothing, what would need the disk.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "store.h"
#include "testutil.h"
#include "urlfixture.h"
#include "urlset.h"
#include "urlset_impl.h"

#define POOL		1500
#define NNS		2
#define GROUP		48
#define T0		1700000000000ULL

static const char *ns_names[NNS] = { "", "crawl" };

static uint64_t fake_now = T0;

static uint64_t
fake_clock(void)
{
	return __atomic_load_n(&fake_now, __ATOMIC_RELAXED);
}


/* Keys of n URLs http://HOST/i in each namespace. */
static void
make_keys(struct urlset *us, const char *host, size_t n,
    struct url_key (*keys)[NNS])
{
	struct url_keyer *k = urlset_keyer_new(us);
	struct urlset_ns_mask mask;
	const char *why;
	char url[96];

	ck_assert_ptr_nonnull(k);
	urlset_ns_mask(ns_names[1], strlen(ns_names[1]), &mask);
	for (size_t i = 0; i < n; i++) {
		snprintf(url, sizeof(url), "http://%s/%zu", host, i);
		ck_assert_int_eq(urlset_key(k, url, strlen(url), &keys[i][0],
		    &why), 0);
		keys[i][1] = keys[i][0];
		urlset_key_masked(us, &mask, &keys[i][1]);
	}
	urlset_keyer_free(k);
}

/* One group of one job, as the writer applies it. */
static void
apply(struct urlset *us, enum urlset_op op, int nsi, uint64_t ttl,
    const struct url_key *keys, size_t n)
{
	struct url_state states[GROUP];
	struct urlset_job job;

	ck_assert_uint_le(n, GROUP);
	memset(&job, 0, sizeof(job));
	job.op = op;
	job.durability = URLSET_RELAXED;
	snprintf(job.ns, sizeof(job.ns), "%s", ns_names[nsi]);
	job.ttl_ms = ttl;
	job.keys = keys;
	job.n = n;
	job.states = states;
	urlset_apply_group(us, &job);
	ck_assert_int_eq(job.status, STORE_OK);
}

/* What a reader of namespace nsi at now is told of a URL whose model
 * state is st (count 0: no record). */
static struct url_state
model_answer(const struct url_state *st, uint64_t now)
{
	struct url_state a = *st;

	if (st->count == 0)
		memset(&a, 0, sizeof(a));
	else if (st->expires_ms != 0 && st->expires_ms <= now)
		a.count = 0;
	return a;
}

static bool
same_answer(const struct url_state *a, const struct url_state *b)
{
	return a->count == b->count && a->ns == b->ns &&
	    a->first_seen_ms == b->first_seen_ms &&
	    a->last_seen_ms == b->last_seen_ms && a->expires_ms == b->expires_ms;
}

/*
 * Checks a random batch of the pool's keys (and unseen ones) in a random
 * namespace at a random time, against the model; the tally too.
 */
#define BATCH		700

static void
random_batch(struct url_fixture *fx, uint64_t *seed,
    struct url_key (*keys)[NNS],
    struct url_key (*unseen)[NNS], struct url_state (*model)[NNS],
    const uint32_t *ids, const char *when)
{
	static struct url_key batch[BATCH];
	static struct url_state got[BATCH], want[BATCH];
	static bool valid[BATCH];
	struct urlset_tally tally = { 0 };
	size_t n = 1 + tu_rand_below(seed, BATCH), nvalid = 0, nseen = 0;
	int nsi = (int)tu_rand_below(seed, NNS);
	bool use_valid = tu_rand_below(seed, 3) == 0;
	uint32_t id = ids[nsi];
	uint64_t now = fake_now + tu_rand_below(seed, 400) - 100;

	/* Sometimes a namespace with no records at all. */
	if (tu_rand_below(seed, 8) == 0)
		id = tu_rand_below(seed, 2) ? URLNS_NONE : 777;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = tu_rand_below(seed, 10);

		valid[i] = !use_valid || tu_rand_below(seed, 4) != 0;
		memset(&got[i], 0xa5, sizeof(got[i]));
		memset(&want[i], 0, sizeof(want[i]));
		if (r == 0) {
			batch[i] = unseen[tu_rand_below(seed, POOL)][nsi];
		} else {
			size_t u = tu_rand_below(seed, POOL);

			batch[i] = keys[u][nsi];
			if (id == ids[nsi])
				want[i] = model_answer(&model[u][nsi], now);
		}
		nvalid += valid[i];
		nseen += valid[i] && want[i].count > 0;
	}
	if (tu_rand_below(seed, 5) == 0)
		urlset_reader_release(fx->rd);	/* scratch grows again */
	ck_assert_int_eq(urlset_check(fx->us, fx->rd, id, now, batch,
	    use_valid ? valid : NULL, n, got, &tally), STORE_OK);
	for (size_t i = 0; i < n; i++) {
		if (!valid[i]) {
			struct url_state untouched;

			memset(&untouched, 0xa5, sizeof(untouched));
			ck_assert_msg(memcmp(&got[i], &untouched,
			    sizeof(untouched)) == 0, "%s: an invalid item's "
			    "state was written", when);
			continue;
		}
		if (!same_answer(&got[i], &want[i]))
			ck_abort_msg("%s: item %zu of %zu (namespace %u, now "
			    "%+lld): count %u ns %u first %llu expires %llu; "
			    "the model: count %u ns %u first %llu expires %llu",
			    when, i, n, id, (long long)(now - fake_now),
			    got[i].count, got[i].ns,
			    (unsigned long long)got[i].first_seen_ms,
			    (unsigned long long)got[i].expires_ms,
			    want[i].count, want[i].ns,
			    (unsigned long long)want[i].first_seen_ms,
			    (unsigned long long)want[i].expires_ms);
	}
	/* Every valid item is checked; what the filter does not answer
	 * alone and is not seen is a false positive. */
	ck_assert_uint_eq(tally.checks, nvalid);
	ck_assert_uint_le(tally.filter_only, nvalid - nseen);
	ck_assert_uint_eq(tally.false_positives,
	    nvalid - tally.filter_only - nseen);
}

START_TEST(test_checks_against_model)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct url_key (*keys)[NNS] = calloc(POOL, sizeof(*keys));
	struct url_key (*unseen)[NNS] = calloc(POOL, sizeof(*unseen));
	struct url_state (*model)[NNS] = calloc(POOL, sizeof(*model));
	uint64_t seed = 4242, ttls[] = { 0, 0, 0, 50, 150, 300 };
	uint32_t ids[NNS];
	struct urlset_stats st;
	char when[64];

	ck_assert_ptr_nonnull(keys);
	ck_assert_ptr_nonnull(unseen);
	ck_assert_ptr_nonnull(model);
	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.opts = (struct urlset_options){ .capacity = 4000,
	    .journal_entries = 256, .segment_records = 64 };
	url_fixture_open(&fx);
	make_keys(fx.us, "pool.example", POOL, keys);
	make_keys(fx.us, "unseen.example", POOL, unseen);
	/* Both namespaces exist from the start. */
	for (int s = 0; s < NNS; s++) {
		apply(fx.us, URLSET_SUBMIT, s, 0, &keys[0][s], 1);
		model[0][s] = (struct url_state){ .count = 1,
		    .first_seen_ms = T0, .last_seen_ms = T0 };
		ids[s] = urlns_find(urlset_namespaces(fx.us), ns_names[s],
		    strlen(ns_names[s]), NULL);
		model[0][s].ns = ids[s];
	}
	for (int step = 0; step < 1200; step++) {
		uint64_t r = tu_rand_below(&seed, 20);

		fake_now += tu_rand_below(&seed, 20);
		snprintf(when, sizeof(when), "step %d", step);
		if (r < 12) {
			struct url_key batch[GROUP];
			int nsi = (int)tu_rand_below(&seed, NNS);
			size_t n = 1 + tu_rand_below(&seed, GROUP);
			bool del = tu_rand_below(&seed, 10) < 3;
			uint64_t ttl = ttls[tu_rand_below(&seed, 6)];

			/* Distinct URLs in a group: the model applies
			 * each once. */
			for (size_t i = 0; i < n; i++) {
				size_t u = tu_rand_below(&seed, POOL);
				struct url_state *m = &model[u][nsi];
				bool dup = false;

				for (size_t j = 0; j < i; j++)
					dup |= memcmp(batch[j].fp,
					    keys[u][nsi].fp, CBF_FP_LEN) == 0;
				if (dup) {
					n = i;
					break;
				}
				batch[i] = keys[u][nsi];
				if (del)
					memset(m, 0, sizeof(*m));
				else if (m->count > 0 && (m->expires_ms == 0 ||
				    m->expires_ms > fake_now)) {
					m->count++;
					m->last_seen_ms = fake_now;
				} else {
					*m = (struct url_state){ .count = 1,
					    .ns = ids[nsi],
					    .first_seen_ms = fake_now,
					    .last_seen_ms = fake_now,
					    .expires_ms = ttl ? fake_now + ttl :
					    0 };
				}
			}
			if (n > 0)
				apply(fx.us, del ? URLSET_DELETE :
				    URLSET_SUBMIT, nsi, ttl, batch, n);
		} else if (r < 13) {
			ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
		} else if (r < 14) {
			bool did;

			ck_assert_int_eq(urlset_merge_step(fx.us, &did,
			    false), STORE_OK);
		} else
			random_batch(&fx, &seed, keys, unseen, model, ids,
			    when);
		if (step == 600) {
			url_fixture_drop(&fx);
			url_fixture_open(&fx);
		}
	}
	urlset_stats(fx.us, &st);
	/* The checks met segments and dead records, not only the table. */
	ck_assert_uint_gt(st.segments, 10);
	ck_assert_uint_gt(st.dead_records + st.merges, 0);
	free(keys);
	free(unseen);
	free(model);
	url_fixture_end(&fx);
}
END_TEST

/* A stored record as the store holds it at (seg, slot). */
static bool
read_record(struct store *st, uint32_t seg, uint32_t slot,
    struct url_record *r, bool *live)
{
	struct store_txn *txn = store_reader_new(st);
	struct store_val v, b;
	bool ok = false;
	int64_t nrec;

	ck_assert_ptr_nonnull(txn);
	ck_assert_int_eq(store_reader_begin(txn), STORE_OK);
	if (store_get(txn, STORE_URL_SEGS, &seg, sizeof(seg), &v) ==
	    STORE_OK && store_get(txn, STORE_URL_LIVE, &seg, sizeof(seg),
	    &b) == STORE_OK && (nrec = urlseg_check(v.data, v.len)) >= 0 &&
	    slot < (uint64_t)nrec) {
		urlrec_decode(urlseg_record(v.data, slot), r);
		*live = urlseg_bit(b.data, slot);
		ok = true;
	}
	store_reader_end(txn);
	store_reader_free(txn);
	return ok;
}

/* urlset_lookup_store through a reader, as a check uses it. */
static void
lookup(struct url_fixture *fx, const struct url_key *keys,
    const uint32_t *which,
    size_t n, struct url_found *found, uint32_t *retry, size_t *nretry,
    bool begin)
{
	/* As urlset_check does: entered before the snapshot begins.
	 * Without begin, the caller has done both. */
	if (begin) {
		urlset_enter(fx->us, fx->rd);
		ck_assert_int_eq(store_reader_begin(fx->rd->txn), STORE_OK);
	}
	ck_assert_int_eq(urlset_lookup_store(fx->rd, keys, which, n, found,
	    retry, nretry), STORE_OK);
	urlset_leave(fx->rd);
	store_reader_end(fx->rd->txn);
}

#define LPOOL		800

/*
 * urlset_lookup_store finds each stored key's live record, at a place the
 * store confirms, and no other; when a merge moved a key's segment after
 * the snapshot began, the key is found or handed back for a retry, never
 * lost.
 */
START_TEST(test_lookup_store)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct url_key (*keys)[NNS] = calloc(LPOOL, sizeof(*keys));
	struct url_key *k0 = calloc(LPOOL, sizeof(*k0));
	struct url_found *found = calloc(LPOOL, sizeof(*found));
	uint32_t *which = calloc(LPOOL, sizeof(*which));
	uint32_t *retry = calloc(LPOOL, sizeof(*retry));
	bool *stored = calloc(LPOOL, sizeof(*stored));
	uint64_t seed = 9;
	size_t n = 0, nretry, retried = 0;
	bool did;

	ck_assert_ptr_nonnull(keys);
	ck_assert_ptr_nonnull(k0);
	ck_assert_ptr_nonnull(found);
	ck_assert_ptr_nonnull(which);
	ck_assert_ptr_nonnull(retry);
	ck_assert_ptr_nonnull(stored);
	fx.opts = (struct urlset_options){ .capacity = 4000,
	    .journal_entries = 64, .segment_records = 32 };
	url_fixture_open(&fx);
	make_keys(fx.us, "lookup.example", LPOOL, keys);
	for (size_t i = 0; i < LPOOL; i++)
		k0[i] = keys[i][0];
	/* Every other URL stored, in small segments (a flush per group of
	 * 8) for the merges below, a tenth of them deleted again: their dead
	 * records stay in segments until merged. */
	for (size_t at = 0; at < LPOOL; at += 2 * 8) {
		struct url_key g[8];
		size_t m = 0;

		for (size_t i = at; i < at + 16 && i < LPOOL; i += 2) {
			g[m++] = k0[i];
			stored[i] = true;
		}
		apply(fx.us, URLSET_SUBMIT, 0, 0, g, m);
		ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	}
	for (size_t i = 0; i < LPOOL; i += 20) {
		apply(fx.us, URLSET_DELETE, 0, 0, &k0[i], 1);
		stored[i] = false;
	}
	ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);

	/* Every other key, in a scattered order: found[] of the others is
	 * not touched. */
	for (size_t i = 0; i < LPOOL; i++) {
		found[i].found = true;
		found[i].seg = UINT32_MAX;
		if (tu_rand_below(&seed, 2))
			which[n++] = (uint32_t)i;
	}
	for (size_t i = n; i > 1; i--) {
		size_t j = tu_rand_below(&seed, i);
		uint32_t t = which[i - 1];

		which[i - 1] = which[j];
		which[j] = t;
	}
	lookup(&fx, k0, which, n, found, retry, &nretry, true);
	ck_assert_uint_eq(nretry, 0);
	for (size_t i = 0, w = 0; i < LPOOL; i++) {
		bool asked = false;
		struct url_record r;
		bool live;

		for (w = 0; w < n && !asked; w++)
			asked = which[w] == i;
		if (!asked) {
			ck_assert(found[i].found);
			ck_assert_uint_eq(found[i].seg, UINT32_MAX);
			continue;
		}
		ck_assert_msg(found[i].found == stored[i], "URL %zu: found %d, "
		    "stored %d", i, found[i].found, stored[i]);
		if (!stored[i])
			continue;
		ck_assert_uint_eq(found[i].st.count, 1);
		ck_assert(read_record(fx.st, found[i].seg, found[i].slot, &r,
		    &live));
		ck_assert(live);
		ck_assert(memcmp(r.fp, k0[i].fp, CBF_FP_LEN) == 0);
	}

	/* A snapshot taken before two merges moved segments, read with the
	 * index after them.  The second merge must not give a segment an id
	 * the first freed: the snapshot still holds that id with its old
	 * records, and a key sent there would be neither found nor
	 * retried. */
	for (size_t i = 0; i < LPOOL; i++)
		which[i] = (uint32_t)i;
	urlset_enter(fx.us, fx.rd);
	ck_assert_int_eq(store_reader_begin(fx.rd->txn), STORE_OK);
	ck_assert_int_eq(urlset_merge_step(fx.us, &did, true), STORE_OK);
	ck_assert(did);
	ck_assert_int_eq(urlset_merge_step(fx.us, &did, true), STORE_OK);
	lookup(&fx, k0, which, LPOOL, found, retry, &nretry, false);
	for (size_t i = 0, r = 0; i < LPOOL; i++) {
		bool in_retry = r < nretry && retry[r] == i;

		r += in_retry;
		if (!stored[i]) {
			ck_assert(!found[i].found);
			continue;
		}
		ck_assert_msg(found[i].found != in_retry, "URL %zu: found %d, "
		    "to retry %d", i, found[i].found, in_retry);
		retried += in_retry;
	}
	ck_assert_msg(retried > 0, "the merges moved no key out of the "
	    "snapshot");
	/* Read again with a new snapshot: every one is found. */
	memcpy(which, retry, nretry * sizeof(*which));
	lookup(&fx, k0, which, nretry, found, retry, &nretry, true);
	ck_assert_uint_eq(nretry, 0);
	for (size_t i = 0; i < LPOOL; i++)
		ck_assert_msg(found[i].found == stored[i], "URL %zu after the "
		    "retry", i);
	free(keys);
	free(k0);
	free(found);
	free(which);
	free(retry);
	free(stored);
	url_fixture_end(&fx);
}
END_TEST

/* Readers checking while the writer works. */
#define STABLE		12000
#define GONE		600
#define CHURN		400
#define READERS		2

struct shared {
	struct urlset *us;
	struct url_key *stable, *gone, *churn, *unseen;
	uint64_t stable_acked;		/* submitted: [0, this) */
	uint64_t gone_acked;		/* deleted: [0, this) */
	int stop;
	/* A reader's first failure. */
	pthread_mutex_t lock;
	char failure[256];
	uint64_t batches;
};

struct reader_arg {
	struct shared *sh;
	struct urlset_reader *rd;
	uint64_t seed;
};

static void
reader_fail(struct shared *sh, const char *what, size_t i, uint32_t count)
{
	pthread_mutex_lock(&sh->lock);
	if (sh->failure[0] == '\0')
		snprintf(sh->failure, sizeof(sh->failure), "%s URL %zu "
		    "answered count %u", what, i, count);
	pthread_mutex_unlock(&sh->lock);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
}

static void *
reader_main(void *arg)
{
	struct reader_arg *ra = arg;
	struct shared *sh = ra->sh;
	struct url_key batch[192];
	struct url_state states[192];
	size_t idx[192];
	int kind[192];

	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		uint64_t s = __atomic_load_n(&sh->stable_acked,
		    __ATOMIC_ACQUIRE);
		uint64_t g = __atomic_load_n(&sh->gone_acked,
		    __ATOMIC_ACQUIRE);
		struct urlset_tally tally = { 0 };
		size_t n = 0;

		for (int i = 0; i < 192; i++) {
			uint64_t r = tu_rand_below(&ra->seed, 4);

			if (r == 0 && s > 0) {
				idx[n] = tu_rand_below(&ra->seed, s);
				batch[n] = sh->stable[idx[n]];
				kind[n++] = 0;
			} else if (r == 1 && g > 0) {
				idx[n] = tu_rand_below(&ra->seed, g);
				batch[n] = sh->gone[idx[n]];
				kind[n++] = 1;
			} else if (r == 2) {
				idx[n] = tu_rand_below(&ra->seed, STABLE);
				batch[n] = sh->unseen[idx[n]];
				kind[n++] = 1;
			} else {
				/* Churn: any answer, but read. */
				idx[n] = tu_rand_below(&ra->seed, CHURN);
				batch[n] = sh->churn[idx[n]];
				kind[n++] = 2;
			}
		}
		if (urlset_check(sh->us, ra->rd, URLNS_DEFAULT, clock_wall_ms(),
		    batch, NULL, n, states, &tally) != STORE_OK) {
			reader_fail(sh, "a check failed:", 0, 0);
			break;
		}
		for (size_t i = 0; i < n; i++) {
			if (kind[i] == 0 && states[i].count == 0)
				reader_fail(sh, "acknowledged stable", idx[i], 0);
			else if (kind[i] == 1 && states[i].count != 0)
				reader_fail(sh, "deleted or unseen", idx[i],
				    states[i].count);
		}
		__atomic_fetch_add(&sh->batches, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

START_TEST(test_concurrent_readers)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct shared sh = { 0 };
	struct reader_arg ra[READERS];
	pthread_t th[READERS];
	struct urlset_stats st;
	struct url_key (*tmp)[NNS];
	uint64_t seed = 31337;
	size_t s = 0, g = 0;
	uint64_t grown_from;

	/* A small capacity: the index is replaced while readers use it. */
	fx.opts = (struct urlset_options){ .capacity = 512,
	    .journal_entries = 128, .segment_records = 64 };
	url_fixture_open(&fx);
	grown_from = urlidx_capacity(fx.us->rd.idx);
	sh.us = fx.us;
	pthread_mutex_init(&sh.lock, NULL);
	tmp = calloc(STABLE, sizeof(*tmp));
	sh.stable = calloc(STABLE, sizeof(*sh.stable));
	sh.gone = calloc(GONE, sizeof(*sh.gone));
	sh.churn = calloc(CHURN, sizeof(*sh.churn));
	sh.unseen = calloc(STABLE, sizeof(*sh.unseen));
	ck_assert(tmp && sh.stable && sh.gone && sh.churn && sh.unseen);
	make_keys(fx.us, "stable.example", STABLE, tmp);
	for (size_t i = 0; i < STABLE; i++)
		sh.stable[i] = tmp[i][0];
	make_keys(fx.us, "unseen.example", STABLE, tmp);
	for (size_t i = 0; i < STABLE; i++)
		sh.unseen[i] = tmp[i][0];
	make_keys(fx.us, "gone.example", GONE, tmp);
	for (size_t i = 0; i < GONE; i++)
		sh.gone[i] = tmp[i][0];
	make_keys(fx.us, "churn.example", CHURN, tmp);
	for (size_t i = 0; i < CHURN; i++)
		sh.churn[i] = tmp[i][0];
	free(tmp);
	/* The URLs to delete are stored first. */
	for (size_t at = 0; at < GONE; at += GROUP)
		apply(fx.us, URLSET_SUBMIT, 0, 0, sh.gone + at,
		    GONE - at < GROUP ? GONE - at : GROUP);
	for (int i = 0; i < READERS; i++) {
		ra[i].sh = &sh;
		ra[i].rd = urlset_reader_new(fx.us);
		ra[i].seed = 100 + (uint64_t)i;
		ck_assert_ptr_nonnull(ra[i].rd);
		ck_assert_int_eq(pthread_create(&th[i], NULL, reader_main,
		    &ra[i]), 0);
	}
	while ((s < STABLE || g < GONE) &&
	    !__atomic_load_n(&sh.stop, __ATOMIC_ACQUIRE)) {
		uint64_t r = tu_rand_below(&seed, 10);
		size_t n = 1 + tu_rand_below(&seed, 24);

		if (r < 4 && s < STABLE) {
			n = n < STABLE - s ? n : STABLE - s;
			apply(fx.us, URLSET_SUBMIT, 0, 0, sh.stable + s, n);
			s += n;
			__atomic_store_n(&sh.stable_acked, s, __ATOMIC_RELEASE);
		} else if (r < 6 && g < GONE) {
			n = n < GONE - g ? n : GONE - g;
			apply(fx.us, URLSET_DELETE, 0, 0, sh.gone + g, n);
			g += n;
			__atomic_store_n(&sh.gone_acked, g, __ATOMIC_RELEASE);
		} else if (r < 8) {
			size_t at = tu_rand_below(&seed, CHURN - 24);

			apply(fx.us, tu_rand_below(&seed, 2) ? URLSET_SUBMIT :
			    URLSET_DELETE, 0, 0, sh.churn + at, n);
		} else if (r < 9) {
			ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
		} else {
			bool did;

			ck_assert_int_eq(urlset_merge_step(fx.us, &did,
			    tu_rand_below(&seed, 2)), STORE_OK);
		}
	}
	/* Let the readers see the end state a while. */
	for (uint64_t b = __atomic_load_n(&sh.batches, __ATOMIC_RELAXED);
	    __atomic_load_n(&sh.batches, __ATOMIC_RELAXED) < b + 20 &&
	    !__atomic_load_n(&sh.stop, __ATOMIC_ACQUIRE);)
		sched_yield();
	__atomic_store_n(&sh.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++) {
		pthread_join(th[i], NULL);
		urlset_reader_free(ra[i].rd);
	}
	ck_assert_msg(sh.failure[0] == '\0', "%s", sh.failure);
	urlset_stats(fx.us, &st);
	ck_assert_uint_gt(st.flushes, 10);
	ck_assert_uint_gt(st.merges, 0);
	ck_assert_msg(urlidx_capacity(fx.us->rd.idx) > grown_from,
	    "the index was not replaced");
	ck_assert_uint_gt(sh.batches, 20);
	pthread_mutex_destroy(&sh.lock);
	free(sh.stable);
	free(sh.gone);
	free(sh.churn);
	free(sh.unseen);
	url_fixture_end(&fx);
}
END_TEST

static bool
never_resident(const void *page)
{
	(void)page;
	return false;
}

/* Checks keys[from, from + n) in the default namespace with rd. */
static int
check_range(struct url_fixture *fx, struct urlset_reader *rd,
    const struct url_key (*keys)[NNS], size_t from, size_t n,
    struct url_state *got, struct urlset_tally *tally)
{
	struct url_key batch[16];

	ck_assert_uint_le(n, 16);
	for (size_t i = 0; i < n; i++)
		batch[i] = keys[from + i][0];
	memset(got, 0xa5, n * sizeof(*got));
	return urlset_check(fx->us, rd, urlns_find(urlset_namespaces(fx->us),
	    "", 0, NULL), T0, batch, NULL, n, got, tally);
}

START_TEST(test_nowait_reader)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct url_key (*keys)[NNS] = calloc(POOL, sizeof(*keys));
	struct url_key (*unseen)[NNS] = calloc(POOL, sizeof(*unseen));
	struct urlset_reader *nw;
	struct url_state got[16], want[16];
	struct urlset_tally tally = { 0 };
	const size_t stored = 480, journaled = 32;

	ck_assert_ptr_nonnull(keys);
	ck_assert_ptr_nonnull(unseen);
	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.opts = (struct urlset_options){ .capacity = 4000,
	    .journal_entries = 1024, .segment_records = 64 };
	url_fixture_open(&fx);
	make_keys(fx.us, "pool.example", POOL, keys);
	make_keys(fx.us, "unseen.example", POOL, unseen);
	/* Keys [0, stored) in segments, [stored, stored + journaled) only in
	 * the journal's table. */
	for (size_t i = 0; i < stored + journaled; i += GROUP) {
		struct url_key batch[GROUP];
		size_t n = i < stored ? GROUP : journaled;

		for (size_t j = 0; j < n; j++)
			batch[j] = keys[i + j][0];
		apply(fx.us, URLSET_SUBMIT, 0, 0, batch, n);
		if (i + n == stored)
			ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	}
	ck_assert_ptr_nonnull(nw = urlset_reader_new(fx.us));
	urlset_reader_nowait(nw);

	/* In memory, it answers as the reader that may wait. */
	for (size_t i = 0; i + 16 <= stored + journaled; i += 16) {
		ck_assert_int_eq(check_range(&fx, fx.rd, keys, i, 16, want,
		    &tally), STORE_OK);
		ck_assert_int_eq(check_range(&fx, nw, keys, i, 16, got,
		    &tally), STORE_OK);
		for (size_t j = 0; j < 16; j++) {
			ck_assert_uint_eq(want[j].count, 1);
			ck_assert_msg(same_answer(&got[j], &want[j]),
			    "key %zu", i + j);
		}
	}
	/* With the segments' pages out of memory: URLs in segments would
	 * need the disk, and it refuses them; the reader that may wait
	 * reads them.  What the filter or the journal's table settles it
	 * still answers. */
	urlset_resident_hook = never_resident;
	for (size_t i = 0; i + 16 <= stored; i += 16) {
		struct urlset_tally t = { 0 };

		ck_assert_int_eq(check_range(&fx, nw, keys, i, 16, got, &t),
		    STORE_WOULD_BLOCK);
		ck_assert_int_eq(check_range(&fx, fx.rd, keys, i, 16, want,
		    &t), STORE_OK);
		for (size_t j = 0; j < 16; j++)
			ck_assert_uint_eq(want[j].count, 1);
	}
	ck_assert_int_eq(check_range(&fx, nw, keys, stored, 16, got, &tally),
	    STORE_OK);
	for (size_t j = 0; j < 16; j++)
		ck_assert_uint_eq(got[j].count, 1);
	for (size_t i = 0; i + 16 <= POOL; i += 16) {
		int rc = check_range(&fx, nw, unseen, i, 16, got, &tally);

		/* A filter false positive may need a page: then it waits
		 * for none either. */
		ck_assert(rc == STORE_OK || rc == STORE_WOULD_BLOCK);
		for (size_t j = 0; rc == STORE_OK && j < 16; j++)
			ck_assert_uint_eq(got[j].count, 0);
	}
	urlset_resident_hook = NULL;
	urlset_reader_free(nw);
	free(keys);
	free(unseen);
	url_fixture_end(&fx);
}
END_TEST

/* A key of the read-ahead test, and whether it was stored. */
struct sorted_key {
	struct url_key key;
	bool stored;
};

static int
cmp_sorted_key(const void *a, const void *b)
{
	return memcmp(((const struct sorted_key *)a)->key.fp,
	    ((const struct sorted_key *)b)->key.fp, CBF_FP_LEN);
}

#define AHEAD_KEYS	16384
#define AHEAD_STORED	12000
#define AHEAD_BATCH	1024

/* Checks sk[0..n) in batches of AHEAD_BATCH, asserting each answer. */
static void
check_sorted_keys(struct url_fixture *fx, const struct sorted_key *sk,
    size_t n)
{
	struct url_key batch[AHEAD_BATCH];
	struct url_state got[AHEAD_BATCH];
	struct urlset_tally tally = { 0 };
	uint32_t ns = urlns_find(urlset_namespaces(fx->us), "", 0, NULL);

	for (size_t i = 0; i < n; i += AHEAD_BATCH) {
		size_t m = n - i < AHEAD_BATCH ? n - i : AHEAD_BATCH;

		for (size_t j = 0; j < m; j++)
			batch[j] = sk[i + j].key;
		ck_assert_int_eq(urlset_check(fx->us, fx->rd, ns, T0, batch,
		    NULL, m, got, &tally), STORE_OK);
		for (size_t j = 0; j < m; j++)
			ck_assert_msg(got[j].count == (sk[i + j].stored ? 1 : 0),
			    "key %zu: count %u", i + j, got[j].count);
	}
}

/*
 * Batches in key order (a bulk check's) read each segment ahead in
 * windows when its pages are not in memory, and answer as any batch; a
 * batch in another order asks for no window.
 */
START_TEST(test_sorted_batches_read_ahead)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct url_key (*keys)[NNS] = calloc(AHEAD_KEYS, sizeof(*keys));
	struct sorted_key *sk = calloc(AHEAD_KEYS, sizeof(*sk));
	struct urlset_stats st;
	uint64_t windows;

	ck_assert_ptr_nonnull(keys);
	ck_assert_ptr_nonnull(sk);
	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.opts = (struct urlset_options){ .capacity = 40000,
	    .journal_entries = AHEAD_KEYS, .segment_records = 4096 };
	url_fixture_open(&fx);
	make_keys(fx.us, "ahead.example", AHEAD_KEYS, keys);
	for (size_t i = 0; i < AHEAD_STORED; i += GROUP) {
		size_t n = AHEAD_STORED - i < GROUP ? AHEAD_STORED - i : GROUP;
		struct url_key batch[GROUP];

		for (size_t j = 0; j < n; j++)
			batch[j] = keys[i + j][0];
		apply(fx.us, URLSET_SUBMIT, 0, 0, batch, n);
	}
	ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	urlset_stats(fx.us, &st);
	ck_assert_uint_ge(st.segments, 3);
	for (size_t i = 0; i < AHEAD_KEYS; i++)
		sk[i] = (struct sorted_key){ keys[i][0], i < AHEAD_STORED };

	/* Out of memory and in input order: no window. */
	urlset_resident_hook = never_resident;
	check_sorted_keys(&fx, sk, AHEAD_KEYS);
	ck_assert_uint_eq(fx.rd->read_ahead, 0);

	/* In key order: windows, each asked once, however many batches
	 * read in it: at most one per window of a segment of 64 pages (and
	 * one more, the last window cut short). */
	qsort(sk, AHEAD_KEYS, sizeof(*sk), cmp_sorted_key);
	check_sorted_keys(&fx, sk, AHEAD_KEYS);
	windows = fx.rd->read_ahead;
	ck_assert_uint_gt(windows, 0);
	ck_assert_uint_le(windows, st.segments * (64 * 4096 /
	    URLSET_READ_AHEAD + 1));

	/* In memory, a page seen there is not asked about again, and no
	 * window is asked for. */
	urlset_resident_hook = NULL;
	check_sorted_keys(&fx, sk, AHEAD_KEYS);
	ck_assert_uint_eq(fx.rd->read_ahead, windows);
	free(keys);
	free(sk);
	url_fixture_end(&fx);
}
END_TEST

Suite *urllookup_suite(void);

Suite *
urllookup_suite(void)
{
	Suite *s = suite_create("urllookup");
	TCase *tc = tcase_create("urllookup");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_checks_against_model);
	tcase_add_test(tc, test_lookup_store);
	tcase_add_test(tc, test_concurrent_readers);
	tcase_add_test(tc, test_nowait_reader);
	tcase_add_test(tc, test_sorted_batches_read_ahead);
	suite_add_tcase(s, tc);
	return s;
}
