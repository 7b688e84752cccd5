/*
 * Unit tests for sketch: documents' sketches against a naive reference
 * (every shingle hashed, the set sorted, the smallest kept), and the
 * estimates of resemblance and containment against the exact ones of the
 * two documents' full shingle sets, on the Reuters bodies and on edited
 * copies of them.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "simhash.h"
#include "sketch.h"
#include "stopwords.h"
#include "testutil.h"
#include "textbytes.h"

static struct stopwords *sw;
static struct sketch_scratch *sc;

static void
setup(void)
{
	char *path = tu_source_path("conf/stopwords.txt"), *cause = NULL;

	ck_assert_msg((sw = stopwords_load(path, &cause)) != NULL, "%s", cause);
	ck_assert_ptr_nonnull(sc = sketch_scratch_new());
	free(path);
}

static void
teardown(void)
{
	sketch_scratch_free(sc);
	stopwords_free(sw);
}

/* ---- The reference: the whole set of shingle hashes, naively. ---- */

struct hset {
	uint32_t *h;
	size_t n, cap;
};

static uint64_t
rotl(uint64_t x, unsigned r)
{
	return x << r | x >> (64 - r);
}

/* The shingle hash sketch.h defines: fmix64 of the rotated term hashes. */
static uint32_t
ref_shingle(uint64_t a, uint64_t b, uint64_t c)
{
	return (uint32_t)(simhash_fmix64(rotl(a, 42) ^ rotl(b, 21) ^ c ^
	    0x6e64646473686e67ULL) >> 32);
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/*
 * The distinct shingle hashes of text (TEXT input), sorted: terms cut at
 * simhash's separators, folded, stop words dropped, hashed with sdbm and
 * fmix64, three at a time.
 */
static struct hset
ref_set(const char *text, size_t len)
{
	struct hset s = { NULL, 0, 0 };
	uint64_t *terms = calloc(len / 2 + 2, sizeof(*terms));
	char *term = malloc(len + 1);
	size_t nt = 0, tl = 0, k = 0;

	ck_assert_ptr_nonnull(terms);
	ck_assert_ptr_nonnull(term);
	for (size_t i = 0; i <= len; i++) {
		uint8_t c = i < len ? (uint8_t)text[i] : ' ';

		if (!simhash_byte_is_separator(c)) {
			term[tl++] = (char)simhash_byte_fold(c);
			continue;
		}
		if (tl > 0 && !stopwords_contains(sw, term, tl))
			terms[nt++] = simhash_term(SIMHASH_TERM_HASH_SDBM_FMIX64,
			    term, tl);
		tl = 0;
	}
	s.cap = nt + 1;
	ck_assert_ptr_nonnull(s.h = malloc(s.cap * sizeof(*s.h)));
	if (nt == 1)
		s.h[s.n++] = ref_shingle(0, 0, terms[0]);
	else if (nt == 2)
		s.h[s.n++] = ref_shingle(0, terms[0], terms[1]);
	for (size_t i = 2; i < nt; i++)
		s.h[s.n++] = ref_shingle(terms[i - 2], terms[i - 1], terms[i]);
	qsort(s.h, s.n, sizeof(*s.h), cmp_u32);
	for (size_t i = 0; i < s.n; i++)
		if (k == 0 || s.h[k - 1] != s.h[i])
			s.h[k++] = s.h[i];
	s.n = k;
	free(terms);
	free(term);
	return s;
}

/* |a n b| of two sorted sets. */
static size_t
ref_inter(const struct hset *a, const struct hset *b)
{
	size_t i = 0, j = 0, n = 0;

	while (i < a->n && j < b->n) {
		if (a->h[i] == b->h[j]) {
			n++;
			i++;
			j++;
		} else if (a->h[i] < b->h[j])
			i++;
		else
			j++;
	}
	return n;
}

static struct sketch
sketch_of(const char *text, size_t len)
{
	struct sketch s;

	ck_assert_int_eq(sketch_compute(sw, sc, SIMHASH_INPUT_TEXT, text, len,
	    &s), 0);
	return s;
}

/* The sketch holds the reference's count and smallest hashes. */
static void
check_against_ref(const char *text, size_t len)
{
	struct sketch s = sketch_of(text, len);
	struct hset r = ref_set(text, len);

	ck_assert_uint_eq(s.shingles, r.n);
	ck_assert_uint_eq(s.n, r.n < SKETCH_K ? r.n : SKETCH_K);
	for (uint32_t i = 0; i < s.n; i++)
		ck_assert_uint_eq(s.h[i], r.h[i]);
	free(r.h);
}

START_TEST(test_reference)
{
	char *dir = tu_data_path("text_corpora/reuters21578");
	struct corpus *c = corpus_reuters(dir, 2000);

	ck_assert_ptr_nonnull(c);
	for (size_t i = 0; i < c->n; i++)
		check_against_ref((const char *)c->docs[i].data,
		    c->docs[i].len);
	/* Short documents: none, one or two terms left, and stop words. */
	check_against_ref("", 0);
	check_against_ref("the of and", 10);
	check_against_ref("Word", 4);
	check_against_ref("two words", 9);
	check_against_ref("three words here", 16);
	check_against_ref("A, b; C! d", 10);
	corpus_free(c);
	free(dir);
}
END_TEST

/* HTML is read as simhash reads it; preprocessed text takes terms as
 * they are; what separates terms does not matter, only the terms. */
START_TEST(test_inputs)
{
	static const char html[] = "<p>Oil prices rose&nbsp;sharply</p>"
	    "<script>var x = 1;</script><p>on Monday &amp; Tuesday</p>";
	static const char text[] = " Oil prices rose\xc2\xa0sharply   on Monday "
	    "& Tuesday ";
	static const char pre[] = "oil prices rose\xc2\xa0sharply monday "
	    "tuesday";
	struct sketch a, b, d;

	ck_assert_int_eq(sketch_compute(sw, sc, SIMHASH_INPUT_HTML, html,
	    strlen(html), &a), 0);
	ck_assert_int_eq(sketch_compute(sw, sc, SIMHASH_INPUT_TEXT, text,
	    strlen(text), &b), 0);
	ck_assert_int_eq(sketch_compute(sw, sc, SIMHASH_INPUT_PREPROCESSED,
	    pre, strlen(pre), &d), 0);
	ck_assert_uint_eq(a.shingles, 3);
	ck_assert_mem_eq(&a, &b, sizeof(a));
	ck_assert_mem_eq(&a, &d, sizeof(a));
}
END_TEST

/* A word of the text cut into pieces, a word of NUL bytes, a word longer
 * than any stop word: terms are bytes, as simhash's. */
START_TEST(test_odd_bytes)
{
	static const char text[] = "a\0b the\0 x c";
	char *big = malloc(100000);

	check_against_ref(text, sizeof(text) - 1);
	ck_assert_ptr_nonnull(big);
	memset(big, 'q', 99990);
	memcpy(big + 99990, " the end x", 10);
	check_against_ref(big, 100000);
	free(big);
}
END_TEST

/* ---- Estimates against exact figures. ---- */

/* Word boundaries of text: each word's start and length. */
struct words {
	const char **w;
	size_t *len;
	size_t n;
};

static struct words
words_of(const char *text, size_t len)
{
	struct words ws = { NULL, NULL, 0 };
	size_t i = 0;

	ck_assert_ptr_nonnull(ws.w = calloc(len + 1, sizeof(*ws.w)));
	ck_assert_ptr_nonnull(ws.len = calloc(len + 1, sizeof(*ws.len)));
	while (i < len) {
		size_t j;

		while (i < len && (text[i] == ' ' || text[i] == '\n' ||
		    text[i] == '\t'))
			i++;
		for (j = i; j < len && text[j] != ' ' && text[j] != '\n' &&
		    text[j] != '\t'; j++)
			;
		if (j > i) {
			ws.w[ws.n] = text + i;
			ws.len[ws.n++] = j - i;
		}
		i = j;
	}
	return ws;
}

/*
 * Words from..to of ws, every every-th of them (0: none) replaced by a
 * random word, then words 0..nextra of extra (may be NULL), joined by
 * spaces.
 */
static char *
join(const struct words *ws, size_t from, size_t to, size_t every,
    const struct words *extra, size_t nextra, uint64_t *seed,
    size_t *out_len)
{
	size_t cap = 16, o = 0;
	char *s;

	for (size_t i = from; i < to; i++)
		cap += ws->len[i] + 10;
	for (size_t i = 0; extra != NULL && i < nextra && i < extra->n; i++)
		cap += extra->len[i] + 1;
	ck_assert_ptr_nonnull(s = malloc(cap));
	for (size_t i = from; i < to; i++) {
		if (every > 0 && i % every == every - 1) {
			for (int k = 0; k < 7; k++)
				s[o++] = (char)('a' + tu_rand_below(seed, 26));
		} else {
			memcpy(s + o, ws->w[i], ws->len[i]);
			o += ws->len[i];
		}
		s[o++] = ' ';
	}
	for (size_t i = 0; extra != NULL && i < nextra && i < extra->n; i++) {
		memcpy(s + o, extra->w[i], extra->len[i]);
		o += extra->len[i];
		s[o++] = ' ';
	}
	s[o] = '\0';
	*out_len = o;
	return s;
}

struct error_stats {
	double worst_r, worst_c;
	double sum_r, sum_c;
	size_t n, exact;
};

/* Compares the estimates for a and b with the exact figures. */
static void
estimate(const char *a, size_t alen, const char *b, size_t blen,
    struct error_stats *st)
{
	struct sketch sa = sketch_of(a, alen), sb = sketch_of(b, blen);
	struct hset ra = ref_set(a, alen), rb = ref_set(b, blen);
	struct sketch_similarity sim, rev;
	size_t inter = ref_inter(&ra, &rb);
	double jac, con, er, ec;

	if (ra.n == 0 || rb.n == 0) {
		free(ra.h);
		free(rb.h);
		return;
	}
	jac = (double)inter / (double)(ra.n + rb.n - inter);
	con = (double)inter / (double)(ra.n < rb.n ? ra.n : rb.n);
	sketch_compare(&sa, &sb, &sim);
	sketch_compare(&sb, &sa, &rev);
	/* Symmetric, and within [0, 1]. */
	ck_assert(sim.resemblance == rev.resemblance &&
	    sim.containment == rev.containment);
	ck_assert(sim.resemblance >= 0 && sim.resemblance <= 1);
	ck_assert(sim.containment >= sim.resemblance - 1e-6 &&
	    sim.containment <= 1);
	er = fabs(sim.resemblance - jac);
	ec = fabs(sim.containment - con);
	/* Both sets held whole: the figures are exact. */
	if (ra.n <= SKETCH_K && rb.n <= SKETCH_K) {
		ck_assert_msg(er < 1e-6 && ec < 1e-5, "exact sets: %f/%f, "
		    "%f/%f", sim.resemblance, jac, sim.containment, con);
		st->exact++;
	}
	st->worst_r = er > st->worst_r ? er : st->worst_r;
	st->worst_c = ec > st->worst_c ? ec : st->worst_c;
	st->sum_r += er;
	st->sum_c += ec;
	st->n++;
	free(ra.h);
	free(rb.h);
}

/*
 * Edited copies of Reuters bodies (cut to a share of their words, a
 * word in fifteen replaced, framed by other words) and pairs of unrelated
 * bodies: the estimates stay close to the exact figures (a bottom-k
 * sketch of 128 hashes: a standard error of about 0.04 at 0.5), and are
 * exact where both documents have at most 128 shingles.
 */
START_TEST(test_estimates)
{
	char *dir = tu_data_path("text_corpora/reuters21578");
	struct corpus *c = corpus_reuters(dir, 3000);
	struct error_stats st = { 0, 0, 0, 0, 0, 0 };
	uint64_t seed = 20261128;

	ck_assert_ptr_nonnull(c);
	for (size_t i = 0; i + 1 < c->n; i++) {
		const char *t = (const char *)c->docs[i].data;
		const char *u = (const char *)c->docs[i + 1].data;
		struct words ws = words_of(t, c->docs[i].len);
		struct words next = words_of(u, c->docs[i + 1].len);
		size_t len, k;
		char *edited;

		if (ws.n >= 40) {
			/* Cut to 60-90%, framed by the next body's first 40
			 * words. */
			k = ws.n * (60 + tu_rand_below(&seed, 31)) / 100;
			edited = join(&ws, 0, k, 0, &next, 40, &seed, &len);
			estimate(t, c->docs[i].len, edited, len, &st);
			free(edited);
			/* A word in fifteen replaced. */
			edited = join(&ws, 0, ws.n, 15, NULL, 0, &seed, &len);
			estimate(t, c->docs[i].len, edited, len, &st);
			free(edited);
		}
		/* Unrelated: the next body. */
		estimate(t, c->docs[i].len, u, c->docs[i + 1].len, &st);
		free(ws.w);
		free(ws.len);
		free(next.w);
		free(next.len);
	}
	ck_assert_uint_gt(st.n, 3000);
	ck_assert_uint_gt(st.exact, 100);
	ck_assert_msg(st.sum_r / (double)st.n < 0.01 &&
	    st.sum_c / (double)st.n < 0.01, "mean errors %f, %f",
	    st.sum_r / (double)st.n, st.sum_c / (double)st.n);
	ck_assert_msg(st.worst_r < 0.15 && st.worst_c < 0.25, "worst errors %f, "
	    "%f", st.worst_r, st.worst_c);
	corpus_free(c);
	free(dir);
}
END_TEST

/* A sketch and its keys survive the encoding; damaged ones are refused. */
START_TEST(test_encoding)
{
	static const char text[] = "the quick brown fox jumps over the lazy "
	    "dog while five boxing wizards jump quickly";
	uint8_t buf[SKETCH_WIRE_MAX], bad[SKETCH_WIRE_MAX];
	uint32_t keys[SKETCH_KEYS];
	struct sketch s = sketch_of(text, strlen(text)), d;
	size_t len = sketch_encode(&s, buf);

	ck_assert_uint_eq(len, 6 + 4 * (size_t)s.n);
	ck_assert_int_eq(sketch_decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.n, s.n);
	ck_assert_uint_eq(d.shingles, s.shingles);
	ck_assert_mem_eq(d.h, s.h, s.n * sizeof(s.h[0]));
	ck_assert_uint_eq(sketch_keys(&s, keys), s.n < SKETCH_KEYS ? s.n :
	    SKETCH_KEYS);
	ck_assert_int_eq(keys[0], s.h[0]);
	/* Too short, a version, a count, an order that is not one. */
	ck_assert_int_eq(sketch_decode(buf, len - 1, &d), -1);
	ck_assert_int_eq(sketch_decode(buf, 5, &d), -1);
	memcpy(bad, buf, len);
	bad[0] = 9;
	ck_assert_int_eq(sketch_decode(bad, len, &d), -1);
	memcpy(bad, buf, len);
	bad[1] = (uint8_t)(s.n + 1);
	ck_assert_int_eq(sketch_decode(bad, len, &d), -1);
	memcpy(bad, buf, len);
	bad[2] ^= 0x40;		/* a count that disagrees with n */
	ck_assert_int_eq(sketch_decode(bad, len, &d), -1);
	memcpy(bad, buf, len);
	memcpy(bad + 6, buf + 10, 4);	/* the first hash twice */
	ck_assert_int_eq(sketch_decode(bad, len, &d), -1);
	/* An empty sketch (a document without terms) is one. */
	memset(&s, 0, sizeof(s));
	len = sketch_encode(&s, buf);
	ck_assert_int_eq(sketch_decode(buf, len, &d), 0);
	ck_assert_uint_eq(d.n, 0);
}
END_TEST

/*
 * More distinct shingles than the set counts exactly: the count is then
 * estimated from the hashes kept, within a few per cent, and the hashes
 * are still the smallest.
 */
START_TEST(test_overflow)
{
	size_t words = SKETCH_EXACT_MAX + SKETCH_EXACT_MAX / 2, len = 0;
	char *text = malloc(words * 9 + 1);
	uint64_t seed = 7;
	struct sketch s;
	struct hset r;

	ck_assert_ptr_nonnull(text);
	for (size_t i = 0; i < words; i++) {
		uint64_t v = tu_rand(&seed);

		for (int k = 0; k < 8; k++)
			text[len++] = (char)('a' + (v >> (5 * k)) % 26);
		text[len++] = ' ';
	}
	s = sketch_of(text, len);
	r = ref_set(text, len);
	ck_assert_uint_eq(s.n, SKETCH_K);
	for (uint32_t i = 0; i < s.n; i++)
		ck_assert_uint_eq(s.h[i], r.h[i]);
	ck_assert_msg(fabs((double)s.shingles - (double)r.n) <
	    0.2 * (double)r.n, "estimated %u of %zu", s.shingles, r.n);
	free(r.h);
	free(text);
}
END_TEST

/*
 * Texts of every kind of term the pass reads in different ways, against
 * the reference: stop words (cut by the 16 KiB windows the pass reads,
 * too), words of 1 to 40 bytes (15, 16 and 17 among them: the longest
 * read at once and the shortest that are not), upper case, digits, bytes
 * 0 and above 127, runs of separators of every kind; then the same text
 * normalised and read as preprocessed, without stop words, against itself
 * read as text.
 */
START_TEST(test_windows)
{
	static const char seps[] = " \t\n\r\v\f,.;:!?'\"()[]{}<>-_/\\|@#$%^&*+=~`";
	const char *const *stops = stopwords_list(sw);
	size_t nstops = stopwords_count(sw);
	uint64_t seed = 29;

	for (int round = 0; round < 40; round++) {
		size_t cap = 20000 + tu_rand_below(&seed, 50000), len = 0;
		char *text = malloc(cap + 64 + stopwords_max_len(sw));

		ck_assert_ptr_nonnull(text);
		while (len < cap) {
			uint64_t r = tu_rand_below(&seed, 10);

			if (r < 4) {
				const char *w = stops[tu_rand_below(&seed,
				    nstops)];

				for (size_t i = 0; w[i] != '\0'; i++)
					text[len++] = r == 0 ? (char)(w[i] &
					    ~0x20) : w[i];
			} else {
				size_t wl = 1 + tu_rand_below(&seed, 40);

				for (size_t i = 0; i < wl; i++) {
					uint64_t c = tu_rand_below(&seed, 40);

					text[len++] = (char)(c < 26 ? 'a' + c :
					    c < 30 ? 'A' + c - 26 : c < 34 ?
					    '0' + c - 30 : c < 36 ? 0 : 0x80 +
					    tu_rand_below(&seed, 128));
				}
			}
			for (uint64_t k = 1 + tu_rand_below(&seed, 3) / 2;
			    k > 0; k--)
				text[len++] = seps[tu_rand_below(&seed,
				    sizeof(seps) - 1)];
		}
		check_against_ref(text, len);
		if (round % 4 == 0) {
			struct sketch t, p;

			for (size_t i = 0; i < len; i++)
				text[i] = (char)textbytes_norm[(uint8_t)
				    text[i]];
			ck_assert_int_eq(sketch_compute(NULL, sc,
			    SIMHASH_INPUT_TEXT, text, len, &t), 0);
			ck_assert_int_eq(sketch_compute(sw, sc,
			    SIMHASH_INPUT_PREPROCESSED, text, len, &p), 0);
			ck_assert_mem_eq(&t, &p, sizeof(t));
			ck_assert_uint_gt(t.shingles, 1000);
		}
		free(text);
	}
}
END_TEST

/* A sketch of a random set: n hashes drawn from pool[0..npool) (sorted,
 * distinct), each taken with probability 1/2 until n are taken, of a set of
 * shingles elements. */
static struct sketch
random_sketch(const uint32_t *pool, uint32_t npool, uint32_t n,
    uint32_t shingles, uint64_t *seed)
{
	struct sketch s = { .shingles = shingles, .n = 0 };

	for (uint32_t i = 0; i < npool && s.n < n; i++)
		if (tu_rand(seed) & 1 || npool - i == n - s.n)
			s.h[s.n++] = pool[i];
	return s;
}

/*
 * Every vector level compares sketches as the scalar code does; sketches
 * of whole sets (at most SKETCH_K shingles) against the Jaccard similarity
 * counted by brute force.  Random sets of every size from a shared pool,
 * its hashes spread or bunched, so that blocks meet in every way.
 */
START_TEST(test_levels)
{
	static const enum simhash_simd levels[] = { SIMHASH_SIMD_SCALAR,
	    SIMHASH_SIMD_AVX2, SIMHASH_SIMD_AVX512 };
	uint64_t seed = 11;
	uint32_t pool[4 * SKETCH_K];
	size_t tried = 0;

	for (int round = 0; round < 2000; round++) {
		uint32_t npool = SKETCH_K + (uint32_t)(tu_rand(&seed) % (3 *
		    SKETCH_K)), bunch = round % 2 ? 1000 : UINT32_MAX;
		uint32_t na = (uint32_t)(tu_rand(&seed) % (SKETCH_K + 1));
		uint32_t nb = (uint32_t)(tu_rand(&seed) % (SKETCH_K + 1));
		bool whole = round % 3 != 0;
		uint32_t distinct = 0;
		struct sketch a, b;
		struct sketch_similarity want, got;
		size_t both = 0;

		for (uint32_t i = 0; i < npool; i++)
			pool[i] = (uint32_t)(tu_rand(&seed) % bunch);
		qsort(pool, npool, sizeof(pool[0]), cmp_u32);
		for (uint32_t i = 0; i < npool; i++)
			if (distinct == 0 || pool[i] != pool[distinct - 1])
				pool[distinct++] = pool[i];
		if (!whole)
			na = nb = SKETCH_K;
		a = random_sketch(pool, distinct, na, whole ? na : na + 500,
		    &seed);
		b = random_sketch(pool, distinct, nb, whole ? nb : nb + 900,
		    &seed);
		if (a.n != na || b.n != nb)
			continue;	/* the pool had too few distinct */
		ck_assert_int_eq(simhash_simd_select(SIMHASH_SIMD_SCALAR,
		    NULL), 0);
		sketch_compare(&a, &b, &want);
		if (whole && a.n > 0 && b.n > 0) {
			for (uint32_t i = 0; i < a.n; i++)
				for (uint32_t j = 0; j < b.n; j++)
					both += a.h[i] == b.h[j];
			ck_assert_float_eq_tol(want.resemblance, (double)both /
			    (double)(a.n + b.n - both), 1e-6);
		}
		for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]);
		    l++) {
			if (!simhash_simd_supported(levels[l]))
				continue;
			ck_assert_int_eq(simhash_simd_select(levels[l], NULL),
			    0);
			sketch_compare(&a, &b, &got);
			ck_assert_msg(got.resemblance == want.resemblance &&
			    got.containment == want.containment,
			    "%s: %u and %u hashes", simhash_simd_name(
			    levels[l]), a.n, b.n);
		}
		tried++;
	}
	ck_assert_uint_gt(tried, 1000);
}
END_TEST

Suite *sketch_suite(void);

Suite *
sketch_suite(void)
{
	Suite *s = suite_create("sketch");
	TCase *tc = tcase_create("sketch");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_reference);
	tcase_add_test(tc, test_inputs);
	tcase_add_test(tc, test_odd_bytes);
	tcase_add_test(tc, test_estimates);
	tcase_add_test(tc, test_encoding);
	tcase_add_test(tc, test_overflow);
	tcase_add_test(tc, test_levels);
	tcase_add_test(tc, test_windows);
	suite_add_tcase(s, tc);
	return s;
}
