/*
 * Tests for cbf: a randomized property test against an exact model, with
 * tiny m (one to eight blocks) so that counters saturate constantly.  After every add or remove,
 * each counter must equal min(15, occurrences of its index among the
 * fingerprints present), its true count must equal that number, and every
 * present fingerprint must pass cbf_maybe (no false negative, ever).
 */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cbf.h"
#include "testutil.h"

#define MAX_PRESENT 4096

struct model {
	uint64_t m;
	uint64_t *count;		/* true count per counter index */
	uint8_t fps[MAX_PRESENT][CBF_FP_LEN];
	size_t n;
};

static void
random_fp(uint64_t *seed, uint8_t fp[CBF_FP_LEN])
{
	uint64_t a = tu_rand(seed), b = tu_rand(seed);

	memcpy(fp, &a, 8);
	memcpy(fp + 8, &b, 8);
}

/*
 * Check records every assertion it passes, which costs more than the
 * comparisons here: the loops test plainly and fail through ck_abort_msg.
 */
static void
check_against_model(struct cbf *f, const struct model *mo, bool all_keys)
{
	uint64_t nonzero = 0, saturated = 0;

	for (uint64_t i = 0; i < mo->m; i++) {
		uint64_t want = mo->count[i] < CBF_MAX_COUNT ? mo->count[i] :
		    CBF_MAX_COUNT;

		if (cbf_counter(f, i) != want ||
		    cbf_true_count(f, i) != mo->count[i])
			ck_abort_msg("counter %llu is %u (true %llu), want "
			    "%llu (true %llu)", (unsigned long long)i,
			    cbf_counter(f, i),
			    (unsigned long long)cbf_true_count(f, i),
			    (unsigned long long)want,
			    (unsigned long long)mo->count[i]);
		nonzero += mo->count[i] > 0;
		saturated += mo->count[i] >= CBF_MAX_COUNT;
	}
	if (cbf_stat_nonzero(f) != nonzero ||
	    cbf_stat_saturated(f) != saturated)
		ck_abort_msg("stats: %llu non-zero, %llu saturated; want %llu, "
		    "%llu", (unsigned long long)cbf_stat_nonzero(f),
		    (unsigned long long)cbf_stat_saturated(f),
		    (unsigned long long)nonzero, (unsigned long long)saturated);
	if (!all_keys)
		return;
	for (size_t j = 0; j < mo->n; j++) {
		uint32_t idx[CBF_K];

		cbf_indices(f, mo->fps[j], idx);
		if (!cbf_maybe(f, idx))
			ck_abort_msg("false negative");
	}
}

static void
run_property(uint64_t m, uint64_t seed, int steps)
{
	struct cbf *f = cbf_new(m);
	struct model mo = { .m = m };
	uint32_t idx[CBF_K];

	ck_assert_ptr_nonnull(f);
	mo.count = calloc(m, sizeof(*mo.count));
	for (int step = 0; step < steps; step++) {
		/* Drift between growing and shrinking phases so that counters
		 * climb well past 15 and come back down through it. */
		int grow = ((step / 500) % 2 == 0) ? 70 : 30;
		int add = mo.n == 0 || (mo.n < MAX_PRESENT &&
		    (int)tu_rand_below(&seed, 100) < grow);

		if (add) {
			random_fp(&seed, mo.fps[mo.n]);
			cbf_indices(f, mo.fps[mo.n], idx);
			for (int i = 0; i < CBF_K; i++) {
				if (idx[i] >= m)
					ck_abort_msg("index %u beyond m", idx[i]);
				mo.count[idx[i]]++;
			}
			cbf_add(f, idx);
			mo.n++;
		} else {
			size_t j = tu_rand_below(&seed, mo.n);

			cbf_indices(f, mo.fps[j], idx);
			for (int i = 0; i < CBF_K; i++)
				mo.count[idx[i]]--;
			cbf_remove(f, idx);
			memcpy(mo.fps[j], mo.fps[--mo.n], CBF_FP_LEN);
		}
		/* Every counter after every step; every present key (the
		 * costly part) now and then. */
		check_against_model(f, &mo, step % 16 == 0);
	}
	check_against_model(f, &mo, true);
	/* Remove everything: the filter must be all zeros again. */
	while (mo.n > 0) {
		cbf_indices(f, mo.fps[--mo.n], idx);
		for (int i = 0; i < CBF_K; i++)
			mo.count[idx[i]]--;
		cbf_remove(f, idx);
	}
	check_against_model(f, &mo, true);
	ck_assert_uint_eq(cbf_stat_nonzero(f), 0);
	free(mo.count);
	cbf_free(f);
}

START_TEST(test_property_tiny_m)
{
	static const uint64_t sizes[] = { 128, 256, 384, 1024 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		run_property(sizes[i], 1000 + i, 4000);
}
END_TEST

START_TEST(test_saturation_and_exact_recovery)
{
	/* The same fingerprint added 20 times: its k counters go past 15. */
	struct cbf *f = cbf_new(CBF_BLOCK);
	uint32_t idx[CBF_K];
	uint8_t fp[CBF_FP_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };

	cbf_indices(f, fp, idx);
	for (int i = 0; i < 20; i++)
		cbf_add(f, idx);
	ck_assert_uint_eq(cbf_counter(f, idx[0]), 15);
	ck_assert_uint_eq(cbf_true_count(f, idx[0]), 20);
	ck_assert_uint_eq(cbf_stat_saturated(f), CBF_K);
	for (int i = 0; i < 12; i++)
		cbf_remove(f, idx);
	/* 8 left: below saturation, so the counters are exact again. */
	ck_assert_uint_eq(cbf_counter(f, idx[3]), 8);
	ck_assert_uint_eq(cbf_stat_saturated(f), 0);
	for (int i = 0; i < 8; i++)
		cbf_remove(f, idx);
	ck_assert_uint_eq(cbf_counter(f, idx[0]), 0);
	ck_assert(!cbf_maybe(f, idx));
	cbf_free(f);
}
END_TEST

START_TEST(test_indices_shape)
{
	/* k distinct indices in one 128-counter block; bad sizes refused. */
	struct cbf *f = cbf_new(1280);
	uint64_t seed = 3;
	uint8_t fp[CBF_FP_LEN];
	uint32_t idx[CBF_K];

	ck_assert_ptr_null(cbf_new(0));
	ck_assert_ptr_null(cbf_new(100));
	ck_assert_ptr_null(cbf_new((uint64_t)1 << 32));
	for (int n = 0; n < 10000; n++) {
		random_fp(&seed, fp);
		cbf_indices(f, fp, idx);
		for (int i = 0; i < CBF_K; i++) {
			if (idx[i] >= 1280 || idx[i] / CBF_BLOCK !=
			    idx[0] / CBF_BLOCK)
				ck_abort_msg("index %u outside the block of %u",
				    idx[i], idx[0]);
			for (int j = 0; j < i; j++)
				if (idx[i] == idx[j])
					ck_abort_msg("index %u twice", idx[i]);
		}
	}
	cbf_free(f);
}
END_TEST

START_TEST(test_indices_spread)
{
	/* With a realistic m, random fingerprints pick blocks evenly: 64
	 * ranges of blocks each get their share within 5% (4 sigma). */
	const uint64_t m = 20000000;	/* a multiple of 128 */
	struct cbf *f = cbf_new(m);
	uint64_t seed = 7, hist[64] = { 0 };
	uint8_t fp[CBF_FP_LEN];
	uint32_t idx[CBF_K];
	const int n = 400000;

	for (int j = 0; j < n; j++) {
		random_fp(&seed, fp);
		cbf_indices(f, fp, idx);
		hist[(uint64_t)idx[0] * 64 / m]++;
	}
	for (int b = 0; b < 64; b++) {
		double expect = (double)n / 64;

		ck_assert_msg(hist[b] > expect * 0.95 && hist[b] < expect * 1.05,
		    "range %d holds %lu", b, (unsigned long)hist[b]);
	}
	ck_assert_uint_eq(cbf_stat_bytes(f), m / 2);
	cbf_free(f);
}
END_TEST

Suite *cbf_suite(void);

Suite *
cbf_suite(void)
{
	Suite *s = suite_create("cbf");
	TCase *tc = tcase_create("cbf");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_property_tiny_m);
	tcase_add_test(tc, test_saturation_and_exact_recovery);
	tcase_add_test(tc, test_indices_shape);
	tcase_add_test(tc, test_indices_spread);
	suite_add_tcase(s, tc);
	return s;
}
