/*
 * Tests for urlset on a real store: the IMP-CBFilter invariant.  With one
 * block of 128 counters (capacity 1) every URL shares it, so counters
 * saturate constantly.  Random submits and deletes are committed or
 * aborted in random groups, exactly as the writer does; after every
 * transaction each counter must equal min(15, number of stored records
 * naming it) (counted by scanning the store, independently of the filter),
 * no stored URL may be missed by the filter, and a reopened set must
 * rebuild the same filter.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbf.h"
#include "store.h"
#include "testutil.h"
#include "urlset.h"

#define POOL 400

struct fixture {
	char *dir;
	struct store *st;
	struct urlset *us;
	struct url_keyer *k;
};

static void
open_set(struct fixture *fx, uint64_t capacity, bool sort_query,
    char **cause)
{
	/* No fsync per test transaction: durability is not what is tested. */
	struct store_options so = { .dir = fx->dir, .map_size = 64 << 20,
	    .sync = STORE_SYNC_NONE };
	struct urlset_options uo = { .capacity = capacity };

	uo.canon.sort_query = sort_query;
	*cause = NULL;
	fx->st = store_open(&so, cause);
	ck_assert_ptr_nonnull(fx->st);
	fx->us = urlset_open(fx->st, &uo, cause);
	fx->k = fx->us ? urlset_keyer_new(fx->us) : NULL;
}

static void
close_set(struct fixture *fx)
{
	urlset_keyer_free(fx->k);
	urlset_free(fx->us);
	store_close(fx->st);
	fx->k = NULL;
	fx->us = NULL;
	fx->st = NULL;
}

struct naming {
	uint64_t count[CBF_BLOCK];
	uint64_t records;
};

static int
count_names(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	struct naming *n = arg;
	struct url_record r;

	(void)k;
	(void)kl;
	if (urlset_record_decode(v, vl, &r) != 0)
		ck_abort_msg("a record of the wrong size");
	for (int i = 0; i < CBF_K; i++) {
		if (r.idx[i] >= CBF_BLOCK)
			ck_abort_msg("index %u beyond the block", r.idx[i]);
		n->count[r.idx[i]]++;
	}
	n->records++;
	return 0;
}

static void
assert_filter_matches_store(struct fixture *fx, const struct url_key *keys,
    const bool *present)
{
	const struct cbf *f = urlset_filter(fx->us);
	struct naming n = { { 0 }, 0 };

	ck_assert_int_eq(store_scan(fx->st, STORE_URLS, count_names, &n),
	    STORE_OK);
	/* Plain tests in the loops: Check records every passed assertion. */
	for (int i = 0; i < CBF_BLOCK; i++) {
		uint64_t want = n.count[i] < 15 ? n.count[i] : 15;

		if (cbf_counter(f, i) != want ||
		    cbf_true_count(f, i) != n.count[i])
			ck_abort_msg("counter %d is %u, %llu records name it",
			    i, cbf_counter(f, i),
			    (unsigned long long)n.count[i]);
	}
	for (int u = 0; u < POOL; u++)
		if (present[u] && !cbf_maybe(f, keys[u].idx))
			ck_abort_msg("false negative for stored URL %d", u);
}

START_TEST(test_filter_equals_store_under_saturation)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	struct url_key keys[POOL];
	bool present[POOL] = { false }, was[POOL];
	uint64_t seed = 2026, count;
	char *cause, url[64];
	const char *why;
	int saturated_seen = 0;

	open_set(&fx, 1, false, &cause);
	ck_assert_msg(fx.us != NULL, "%s", cause);
	ck_assert_uint_eq(cbf_stat_counters(urlset_filter(fx.us)), CBF_BLOCK);
	for (int u = 0; u < POOL; u++) {
		snprintf(url, sizeof(url), "http://sat.example/%d", u);
		ck_assert_int_eq(urlset_key(fx.k, url, strlen(url), &keys[u],
		    &why), 0);
	}
	for (int txn_no = 0; txn_no < 600; txn_no++) {
		struct store_txn *txn;
		int ops = 1 + (int)tu_rand_below(&seed, 20);
		bool abort_it = tu_rand_below(&seed, 5) == 0;
		struct { int u; bool added, removed; uint32_t idx[CBF_K]; }
		    log[20];
		/* Phases push the population up past saturation, then down. */
		int grow = (txn_no / 100) % 2 == 0 ? 75 : 25;

		memcpy(was, present, sizeof(was));
		ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
		for (int o = 0; o < ops; o++) {
			int u = (int)tu_rand_below(&seed, POOL);

			log[o].u = u;
			log[o].added = log[o].removed = false;
			if ((int)tu_rand_below(&seed, 100) < grow) {
				ck_assert_int_eq(urlset_submit(fx.us, txn,
				    &keys[u], 1000 + txn_no, &count,
				    &log[o].added), STORE_OK);
				ck_assert(log[o].added == !present[u]);
				present[u] = true;
			} else {
				ck_assert_int_eq(urlset_delete(fx.us, txn,
				    &keys[u], &count, log[o].idx), STORE_OK);
				log[o].removed = count > 0;
				ck_assert(log[o].removed == present[u]);
				present[u] = false;
			}
		}
		if (abort_it) {
			store_abort(txn);
			for (int o = 0; o < ops; o++)
				if (log[o].added)
					urlset_undo_add(fx.us, &keys[log[o].u]);
			memcpy(present, was, sizeof(was));
		} else {
			ck_assert_int_eq(store_commit(txn), STORE_OK);
			for (int o = 0; o < ops; o++)
				if (log[o].removed)
					urlset_commit_remove(fx.us, log[o].idx);
		}
		assert_filter_matches_store(&fx, keys, present);
		saturated_seen += cbf_stat_saturated(urlset_filter(fx.us)) > 0;
	}
	ck_assert_msg(saturated_seen > 100, "saturation too rare to test");

	/* The rebuilt filter is the same filter. */
	close_set(&fx);
	open_set(&fx, 1, false, &cause);
	ck_assert_msg(fx.us != NULL, "%s", cause);
	assert_filter_matches_store(&fx, keys, present);
	close_set(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

START_TEST(test_fixed_settings_are_enforced)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	char *cause;

	open_set(&fx, 1000, false, &cause);
	ck_assert_ptr_nonnull(fx.us);
	close_set(&fx);
	open_set(&fx, 2000, false, &cause);
	ck_assert_ptr_null(fx.us);
	ck_assert_msg(strstr(cause, "urls.cbf_m") != NULL, "%s", cause);
	free(cause);
	close_set(&fx);
	open_set(&fx, 1000, true, &cause);
	ck_assert_ptr_null(fx.us);
	ck_assert_msg(strstr(cause, "sort_query") != NULL, "%s", cause);
	free(cause);
	close_set(&fx);
	open_set(&fx, 1000, false, &cause);
	ck_assert_ptr_nonnull(fx.us);
	close_set(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

START_TEST(test_record_codec)
{
	struct url_record r = { .count = 7, .first_seen_ms = 1,
	    .last_seen_ms = 0x0102030405060708ULL,
	    .idx = { 1, 2, 3, 4, 5, 6, 7, 0xfffffffe } }, back;
	uint8_t buf[URLSET_RECORD_LEN];

	urlset_record_encode(&r, buf);
	ck_assert_int_eq(urlset_record_decode(buf, sizeof(buf), &back), 0);
	ck_assert_uint_eq(back.count, r.count);
	ck_assert_uint_eq(back.first_seen_ms, r.first_seen_ms);
	ck_assert_uint_eq(back.last_seen_ms, r.last_seen_ms);
	ck_assert_int_eq(memcmp(back.idx, r.idx, sizeof(r.idx)), 0);
	ck_assert_int_eq(urlset_record_decode(buf, sizeof(buf) - 1, &back), -1);
	/* Little-endian on disk, whatever the host. */
	ck_assert_uint_eq(buf[16], 0x08);
	ck_assert_uint_eq(buf[23], 0x01);
}
END_TEST

Suite *urlset_suite(void);

Suite *
urlset_suite(void)
{
	Suite *s = suite_create("urlset");
	TCase *tc = tcase_create("urlset");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_filter_equals_store_under_saturation);
	tcase_add_test(tc, test_fixed_settings_are_enforced);
	tcase_add_test(tc, test_record_codec);
	suite_add_tcase(s, tc);
	return s;
}
