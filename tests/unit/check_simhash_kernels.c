/*
 * Unit tests for the simhash kernels: every instruction-set level this CPU
 * has (the others are skipped, saying so) gives the naive reference's bits
 * on random documents, with windows of many sizes, and on the Reuters-21578
 * bodies and L3S-GN1 pages.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "simhash.h"
#include "simhash_impl.h"
#include "simhash_ref.h"
#include "stopwords.h"
#include "testutil.h"

static const enum simhash_simd levels[] = {
	SIMHASH_SIMD_SCALAR, SIMHASH_SIMD_AVX2, SIMHASH_SIMD_AVX512,
};
#define NLEVELS (sizeof(levels) / sizeof(levels[0]))

static struct stopwords *sw;
static struct ref_stopwords *ref_sw;
static struct simhash *engines[2];	/* fmix64, sdbm */
static struct simhash_scratch *sc;

static void
setup(void)
{
	char *path = tu_source_path("conf/stopwords.txt"), *cause = NULL;

	sw = stopwords_load(path, &cause);
	ck_assert_msg(sw != NULL, "%s", cause);
	free(path);
	ref_sw = ref_stopwords_new(stopwords_list(sw));
	engines[0] = simhash_new(SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &cause);
	engines[1] = simhash_new(SIMHASH_TERM_HASH_SDBM, sw, &cause);
	ck_assert_ptr_nonnull(engines[0]);
	ck_assert_ptr_nonnull(engines[1]);
	ck_assert_ptr_nonnull(sc = simhash_scratch_new());
}

static void
teardown(void)
{
	char *cause = NULL;

	simhash_scratch_free(sc);
	simhash_free(engines[0]);
	simhash_free(engines[1]);
	ref_stopwords_free(ref_sw);
	stopwords_free(sw);
	simhash_simd_select(SIMHASH_SIMD_AUTO, &cause);
}

/* Selects a level; says so and returns 0 when this CPU lacks it. */
static int
use_level(enum simhash_simd level)
{
	char *cause = NULL;

	if (!simhash_simd_supported(level)) {
		printf("simhash_kernels: skipping %s: not supported by this "
		    "CPU\n", simhash_simd_name(level));
		return 0;
	}
	ck_assert_int_eq(simhash_simd_select(level, &cause), 0);
	ck_assert_int_eq(simhash_simd_active(), level);
	return 1;
}

static void
check_doc(const char *doc, size_t len, enum simhash_input in, int paper,
    const char *what)
{
	uint64_t want = 0, got = 0;
	int rw, rg;

	if (in == SIMHASH_INPUT_PREPROCESSED)
		rw = ref_simhash_preprocessed(doc, len, paper, &want);
	else
		rw = ref_simhash(doc, len, in == SIMHASH_INPUT_HTML, paper,
		    ref_sw, &want);
	rg = simhash_compute(engines[paper], sc, in, doc, len, &got);
	/* Not ck_assert: Check records every passed assertion. */
	if (rw == 0 ? rg != SIMHASH_OK || got != want :
	    rg != SIMHASH_EMPTY_DOCUMENT)
		ck_abort_msg("%s (%s, input %d, %s, window %zu, %zu bytes): "
		    "%016llx (%d), reference %016llx (%d)", what,
		    simhash_simd_name(simhash_simd_active()), in,
		    paper ? "sdbm" : "sdbm-fmix64", sc->window, len,
		    (unsigned long long)got, rg, (unsigned long long)want,
		    rw);
}

/* Random text built to hit the kernels' corners. */
static size_t
random_doc(uint64_t *seed, char *doc, size_t cap, int preprocessed)
{
	static const char *const words[] = {
		"the", "The", "THE", "of", "a", "and", "cocoa", "Bahia",
		"s", "t", "don", "mln", "dlrs", "said", "1987", "caf\xc3\xa9",
		"international", "internationalisation", "x",
	};
	static const char seps[] = " \t\n\r\v\f.,;:!?'\"()[]{}<>-_/\\@#$%^&*+=~`|";
	size_t len = 0, target = (size_t)tu_rand_below(seed, cap), n, i;
	int style = (int)tu_rand_below(seed, 4);

	while (len < target) {
		unsigned r = (unsigned)tu_rand_below(seed, 100);

		if (style == 3) {
			/* Raw bytes, spaces now and then. */
			doc[len++] = tu_rand_below(seed, 6) == 0 ? ' ' :
			    (char)tu_rand(seed);
			continue;
		}
		if (r < 40) {
			const char *w = words[tu_rand_below(seed,
			    sizeof(words) / sizeof(words[0]))];

			n = strlen(w);
			if (len + n > cap)
				break;
			memcpy(doc + len, w, n);
			len += n;
		} else if (r < 75) {
			/* A term of random length, short ones more likely. */
			n = 1 + (size_t)tu_rand_below(seed, r < 70 ? 12 :
			    r < 74 ? 40 : 700);
			for (i = 0; i < n && len < cap; i++) {
				unsigned k = (unsigned)tu_rand_below(seed, 40);

				doc[len++] = k < 26 ? (char)('a' + k) :
				    k < 30 ? (char)('A' + k - 26) : k < 34 ?
				    (char)('0' + k - 30) : k < 38 ?
				    (char)(0x80 + tu_rand_below(seed, 128)) :
				    k < 39 ? '\0' : (char)tu_rand(seed);
			}
		}
		/* Separators: mostly one, sometimes a run. */
		n = tu_rand_below(seed, 5) == 0 ? 1 + (size_t)tu_rand_below(seed,
		    20) : 1;
		for (i = 0; i < n && len < cap; i++)
			doc[len++] = preprocessed || style == 0 ? ' ' :
			    seps[tu_rand_below(seed, sizeof(seps) - 1)];
	}
	return len;
}

START_TEST(test_random)
{
	static const size_t windows[] = { 16, 17, 31, 64, 65, 100, 333, 1000,
	    SIMHASH_WINDOW };
	enum simhash_simd level = levels[_i];
	size_t cap = 24000, len, w;
	char *doc = malloc(cap);
	uint64_t seed = 1234;
	int round, paper, pre;

	if (!use_level(level)) {
		free(doc);
		return;
	}
	for (round = 0; round < 240; round++) {
		pre = round % 3 == 2;
		len = random_doc(&seed, doc, round < 40 ? 60 : cap, pre);
		for (w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
			simhash_scratch_set_window(sc, windows[w]);
			for (paper = 0; paper < 2; paper++)
				check_doc(doc, len, pre ?
				    SIMHASH_INPUT_PREPROCESSED :
				    SIMHASH_INPUT_TEXT, paper, "random");
		}
	}
	simhash_scratch_set_window(sc, SIMHASH_WINDOW);
	free(doc);
}
END_TEST

START_TEST(test_edges)
{
	enum simhash_simd level = levels[_i];
	char doc[600];
	size_t len, t, k, w;
	int paper;

	if (!use_level(level))
		return;
	/* Terms of every length 1..40 at every offset near a window end. */
	for (t = 1; t <= 40; t++) {
		for (k = 0; k < 70; k++) {
			memset(doc, ' ', sizeof(doc));
			for (len = 0; len < t; len++)
				doc[k + len] = (char)('a' + (k + len) % 26);
			for (len = k + t + 1; len < 300; len += 3)
				doc[len] = 'q';
			for (w = 16; w <= 80; w += 16) {
				simhash_scratch_set_window(sc, w);
				for (paper = 0; paper < 2; paper++) {
					check_doc(doc, 300, SIMHASH_INPUT_TEXT,
					    paper, "edge");
					check_doc(doc, 300,
					    SIMHASH_INPUT_PREPROCESSED, paper,
					    "edge");
					check_doc(doc + k, t,
					    SIMHASH_INPUT_PREPROCESSED, paper,
					    "alone");
				}
			}
		}
	}
	simhash_scratch_set_window(sc, SIMHASH_WINDOW);
}
END_TEST

/*
 * Documents of 1- and 2-byte terms, dense enough that a kernel's chunk
 * holds 256 terms or more: its last groups must still count every lane.
 */
START_TEST(test_dense_chunks)
{
	enum simhash_simd level = levels[_i];
	char *doc = malloc(3 * 1500);
	uint64_t seed = 77;
	size_t nterms, i, len;
	int paper;

	if (!use_level(level)) {
		free(doc);
		return;
	}
	for (nterms = 100; nterms <= 1500; nterms += 7) {
		for (i = 0, len = 0; i < nterms; i++) {
			doc[len++] = (char)('a' + tu_rand_below(&seed, 3));
			if (tu_rand_below(&seed, 2))
				doc[len++] = (char)('0' + tu_rand_below(&seed,
				    2));
			doc[len++] = ' ';
		}
		for (paper = 0; paper < 2; paper++) {
			check_doc(doc, len - 1, SIMHASH_INPUT_PREPROCESSED,
			    paper, "dense");
			check_doc(doc, len - 1, SIMHASH_INPUT_TEXT, paper,
			    "dense");
		}
	}
	free(doc);
}
END_TEST

/*
 * Blocks of 64 bytes with more than 16 term ends and a term of 8 to 20
 * bytes among them: the kernels that pick term words per 8 ends must take
 * the long term's bytes from the later rounds too.
 */
START_TEST(test_dense_long)
{
	static const char *const stop[] = { "a", "i", "s", "t" };
	enum simhash_simd level = levels[_i];
	char doc[2048];
	uint64_t seed = 4242;
	size_t round, i, len, n, at;
	int paper;

	if (!use_level(level))
		return;
	for (round = 0; round < 400; round++) {
		len = 0;
		while (len < sizeof(doc) - 64) {
			/* 17 to 24 short terms, some of them stop words... */
			n = 17 + (size_t)tu_rand_below(&seed, 8);
			at = (size_t)tu_rand_below(&seed, n + 1);
			for (i = 0; i <= n; i++) {
				if (i == at) {
					/* ...and one long term among them. */
					size_t k, m = 8 + (size_t)
					    tu_rand_below(&seed, 13);

					for (k = 0; k < m; k++)
						doc[len++] = (char)('a' +
						    tu_rand_below(&seed, 26));
				} else if (tu_rand_below(&seed, 3) == 0)
					doc[len++] = stop[tu_rand_below(&seed,
					    4)][0];
				else
					doc[len++] = (char)('0' +
					    tu_rand_below(&seed, 10));
				doc[len++] = ' ';
			}
		}
		for (paper = 0; paper < 2; paper++) {
			check_doc(doc, len, SIMHASH_INPUT_PREPROCESSED, paper,
			    "dense long");
			check_doc(doc, len, SIMHASH_INPUT_TEXT, paper,
			    "dense long");
		}
	}
}
END_TEST

START_TEST(test_reuters)
{
	enum simhash_simd level = levels[_i];
	char *dir = tu_data_path("text_corpora/reuters21578");
	struct corpus *c = corpus_reuters(dir, 0);
	size_t i;

	ck_assert_ptr_nonnull(c);
	if (use_level(level)) {
		for (i = 0; i < c->n; i++) {
			check_doc(c->docs[i].data, c->docs[i].len,
			    SIMHASH_INPUT_TEXT, 0, "reuters");
			if (i < 2000)
				check_doc(c->docs[i].data, c->docs[i].len,
				    SIMHASH_INPUT_TEXT, 1, "reuters");
		}
	}
	corpus_free(c);
	free(dir);
}
END_TEST

START_TEST(test_html_pages)
{
	enum simhash_simd level = levels[_i];
	char *dir = tu_data_path("text_corpora/l3s_gn1_html/original");
	struct corpus *c = corpus_files(dir, ".html");
	size_t i;

	ck_assert_ptr_nonnull(c);
	if (use_level(level))
		for (i = 0; i < c->n && i < 120; i++)
			check_doc(c->docs[i].data, c->docs[i].len,
			    SIMHASH_INPUT_HTML, i & 1, "l3s");
	corpus_free(c);
	free(dir);
}
END_TEST

START_TEST(test_preprocess_roundtrip)
{
	enum simhash_simd level = levels[_i];
	char *dir = tu_data_path("text_corpora/reuters21578");
	struct corpus *c = corpus_reuters(dir, 0);
	uint64_t a, b;
	uint8_t *out;
	size_t i, n;

	ck_assert_ptr_nonnull(c);
	if (use_level(level)) {
		for (i = 0; i < c->n; i++) {
			if (simhash_preprocess(engines[0], sc,
			    SIMHASH_INPUT_TEXT, c->docs[i].data,
			    c->docs[i].len, &out, &n) != 0)
				ck_abort_msg("preprocess failed");
			if (simhash_compute(engines[0], sc,
			    SIMHASH_INPUT_TEXT, c->docs[i].data,
			    c->docs[i].len, &a) != SIMHASH_OK ||
			    simhash_compute(engines[0], sc,
			    SIMHASH_INPUT_PREPROCESSED, out, n, &b) !=
			    SIMHASH_OK || a != b)
				ck_abort_msg("Reuters %zu: text %016llx, "
				    "preprocessed %016llx", i,
				    (unsigned long long)a,
				    (unsigned long long)b);
			/* The accelerators' input, against the reference. */
			check_doc((const char *)out, n,
			    SIMHASH_INPUT_PREPROCESSED, 0, "reuters "
			    "preprocessed");
			free(out);
		}
	}
	corpus_free(c);
	free(dir);
}
END_TEST

/*
 * A stop-word list too large for the vectorised table (have_tab off): the
 * kernels look words up one by one.  Words of the texts are in it, long
 * ones too.
 */
START_TEST(test_huge_stoplist)
{
	enum simhash_simd level = levels[_i];
	char *dir = tu_data_path("text_corpora/reuters21578");
	struct corpus *c = corpus_reuters(dir, 300);
	struct stopwords *big = stopwords_new();
	struct ref_stopwords *ref_big;
	struct simhash *sh;
	const char *const *w = stopwords_list(sw);
	char word[32], *cause = NULL;
	uint64_t want, got;
	size_t i;
	int rw, rg;

	for (; *w != NULL; w++)
		ck_assert_int_eq(stopwords_add(big, *w, strlen(*w), &cause), 0);
	for (i = 0; i < 20000; i++) {
		snprintf(word, sizeof(word), "%zu", i);	/* numbers */
		ck_assert_int_eq(stopwords_add(big, word, strlen(word),
		    &cause), 0);
	}
	ck_assert_int_eq(stopwords_add(big, "international", 13, &cause), 0);
	ck_assert_int_eq(stopwords_add(big, "corporation", 11, &cause), 0);
	ck_assert_int_eq(stopwords_add(big, "telecommunications", 18,
	    &cause), 0);
	ref_big = ref_stopwords_new(stopwords_list(big));
	ck_assert_ptr_nonnull(sh = simhash_new(SIMHASH_TERM_HASH_SDBM_FMIX64,
	    big, &cause));
	ck_assert_int_eq(sh->have_tab, 0);
	if (use_level(level)) {
		for (i = 0; i < c->n; i++) {
			rw = ref_simhash(c->docs[i].data, c->docs[i].len, 0, 0,
			    ref_big, &want);
			rg = simhash_compute(sh, sc, SIMHASH_INPUT_TEXT,
			    c->docs[i].data, c->docs[i].len, &got);
			ck_assert_msg(rw == 0 ? rg == SIMHASH_OK && got == want :
			    rg == SIMHASH_EMPTY_DOCUMENT, "document %zu: "
			    "%016llx, reference %016llx", i,
			    (unsigned long long)got, (unsigned long long)want);
		}
	}
	simhash_free(sh);
	ref_stopwords_free(ref_big);
	stopwords_free(big);
	corpus_free(c);
	free(dir);
}
END_TEST

Suite *simhash_kernels_suite(void);

Suite *
simhash_kernels_suite(void)
{
	Suite *s = suite_create("simhash_kernels");
	TCase *tc = tcase_create("kernels");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_random, 0, NLEVELS);
	tcase_add_loop_test(tc, test_edges, 0, NLEVELS);
	tcase_add_loop_test(tc, test_dense_chunks, 0, NLEVELS);
	tcase_add_loop_test(tc, test_dense_long, 0, NLEVELS);
	tcase_add_loop_test(tc, test_reuters, 0, NLEVELS);
	tcase_add_loop_test(tc, test_html_pages, 0, NLEVELS);
	tcase_add_loop_test(tc, test_preprocess_roundtrip, 0, NLEVELS);
	tcase_add_loop_test(tc, test_huge_stoplist, 0, NLEVELS);
	suite_add_tcase(s, tc);
	return s;
}
