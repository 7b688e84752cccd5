/*
 * Unit tests for simhash on bad input, at every instruction-set level this
 * CPU has: binary junk, NUL bytes in HTML, markup left open, enormous
 * terms, documents placed against inaccessible pages (an out-of-bounds
 * read faults), and a document of hundreds of megabytes (tens under
 * AddressSanitizer).  Each gives a fingerprint or EMPTY_DOCUMENT, equal to
 * the naive reference's where that is affordable.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "simhash.h"
#include "simhash_ref.h"
#include "stopwords.h"
#include "testutil.h"

#ifdef __SANITIZE_ADDRESS__
#define ROBUST_HUGE_MB 32
#else
#define ROBUST_HUGE_MB 320
#endif

static const enum simhash_simd levels[] = {
	SIMHASH_SIMD_SCALAR, SIMHASH_SIMD_AVX2, SIMHASH_SIMD_AVX512,
};

static struct stopwords *sw;
static struct ref_stopwords *ref_sw;
static struct simhash *sh;
static struct simhash_scratch *sc;

static void
setup(void)
{
	char *path = tu_source_path("conf/stopwords.txt"), *cause = NULL;

	ck_assert_msg((sw = stopwords_load(path, &cause)) != NULL, "%s", cause);
	free(path);
	ref_sw = ref_stopwords_new(stopwords_list(sw));
	ck_assert_ptr_nonnull(sh = simhash_new(SIMHASH_TERM_HASH_SDBM_FMIX64,
	    sw, &cause));
	ck_assert_ptr_nonnull(sc = simhash_scratch_new());
}

static void
teardown(void)
{
	char *cause = NULL;

	simhash_scratch_free(sc);
	simhash_free(sh);
	ref_stopwords_free(ref_sw);
	stopwords_free(sw);
	simhash_simd_select(SIMHASH_SIMD_AUTO, &cause);
}

static int
use_level(enum simhash_simd level)
{
	char *cause = NULL;

	if (!simhash_simd_supported(level)) {
		printf("simhash_robust: skipping %s: not supported by this "
		    "CPU\n", simhash_simd_name(level));
		return 0;
	}
	ck_assert_int_eq(simhash_simd_select(level, &cause), 0);
	return 1;
}

/* Computes doc as every input kind and compares with the reference. */
static void
check_all(const char *doc, size_t len, const char *what)
{
	static const enum simhash_input in[] = { SIMHASH_INPUT_TEXT,
	    SIMHASH_INPUT_HTML, SIMHASH_INPUT_PREPROCESSED };
	uint64_t want = 0, got = 0;
	size_t k;
	int rw, rg;

	for (k = 0; k < 3; k++) {
		rg = simhash_compute(sh, sc, in[k], doc, len, &got);
		ck_assert(rg == SIMHASH_OK || rg == SIMHASH_EMPTY_DOCUMENT);
		if (in[k] == SIMHASH_INPUT_PREPROCESSED)
			rw = ref_simhash_preprocessed(doc, len, 0, &want);
		else
			rw = ref_simhash(doc, len, in[k] == SIMHASH_INPUT_HTML,
			    0, ref_sw, &want);
		ck_assert_msg(rw == 0 ? rg == SIMHASH_OK && got == want :
		    rg == SIMHASH_EMPTY_DOCUMENT, "%s (%s, input %zu, %zu "
		    "bytes): %016llx (%d), reference %016llx (%d)", what,
		    simhash_simd_name(simhash_simd_active()), k, len,
		    (unsigned long long)got, rg, (unsigned long long)want, rw);
	}
}

START_TEST(test_junk)
{
	uint64_t seed = 99;
	size_t len, i;
	char *doc = malloc(100000);
	int round;

	if (!use_level(levels[_i])) {
		free(doc);
		return;
	}
	for (round = 0; round < 60; round++) {
		len = (size_t)tu_rand_below(&seed, round < 30 ? 300 : 100000);
		for (i = 0; i < len; i++)
			doc[i] = (char)tu_rand(&seed);
		check_all(doc, len, "binary junk");
	}
	free(doc);
}
END_TEST

START_TEST(test_html_damage)
{
#define D(x) { x, sizeof(x) - 1 }
	static const struct {
		const char *s;
		size_t len;		/* NUL bytes included */
	} docs[] = {
		D("<p>cat\0dog</p>"),
		D("<scr\0ipt>hidden</script>shown"),
		D("<script>hidden\0</script>shown"),
		D("<a href=\"x\0y\">cat</a>"),
		D("cat <!-- comment \0 never closed"),
		D("cat <b class='never closed"),
		D("cat <script> var x = '</scr' + 'ipt>';"),
		D("cat <style>p { color: red }"),
		D("cat <!DOCTYPE html"),
		D("&#x\0;&amp\0;&\0"),
		D("<<<<>>>>&&&&;;;;\0\0\0"),
		D("<"),
		D("&"),
		D("<!--"),
		D("</"),
	};
#undef D
	size_t i;

	if (!use_level(levels[_i]))
		return;
	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		check_all(docs[i].s, docs[i].len, "damaged html");
}
END_TEST

START_TEST(test_enormous_terms)
{
	size_t len = 3 << 20, i;
	char *doc = malloc(len);

	if (!use_level(levels[_i])) {
		free(doc);
		return;
	}
	/* One term of 3 MB. */
	memset(doc, 'x', len);
	check_all(doc, len, "one enormous term");
	/* Terms of every length up to 4,000 bytes, one after another. */
	for (i = 0; i < len; i++)
		doc[i] = (char)('a' + i % 23);
	for (size_t pos = 0, t = 1; pos < len; t = t % 4000 + 1) {
		pos += t;
		if (pos < len)
			doc[pos++] = ' ';
	}
	check_all(doc, len, "long terms");
	free(doc);
}
END_TEST

/*
 * Much markup: every construct must cost time in proportion to its own
 * length, not to the rest of the document (a search to the end of the
 * document per comment made this quadratic once).
 */
START_TEST(test_many_markup)
{
	static const char piece[] = "<!-- c -->word<script>x<y</script>"
	    "&amp;<p class='c'>w&#65;</p><!x><?y?>text <style>s</style>";
	size_t n = 20000, len = n * (sizeof(piece) - 1), i;
	char *doc = malloc(len);

	if (!use_level(levels[_i])) {
		free(doc);
		return;
	}
	for (i = 0; i < n; i++)
		memcpy(doc + i * (sizeof(piece) - 1), piece, sizeof(piece) - 1);
	check_all(doc, len, "much markup");
	free(doc);
}
END_TEST

/*
 * Documents of every small size, ending at (then starting at) an
 * inaccessible page: reading a byte outside them faults.
 */
START_TEST(test_guard_pages)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), body = 4 * pg, len, i;
	uint8_t *map, *doc;
	uint64_t seed = 5, fp;
	static const enum simhash_input in[] = { SIMHASH_INPUT_TEXT,
	    SIMHASH_INPUT_HTML, SIMHASH_INPUT_PREPROCESSED };
	int k, where;

	if (!use_level(levels[_i]))
		return;
	map = mmap(NULL, body + 2 * pg, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(mprotect(map, pg, PROT_NONE), 0);
	ck_assert_int_eq(mprotect(map + pg + body, pg, PROT_NONE), 0);
	for (len = 0; len <= 300; len++) {
		for (where = 0; where < 2; where++) {
			doc = where ? map + pg : map + pg + body - len;
			for (i = 0; i < len; i++)
				doc[i] = "ab c<&;\0\xc3"[tu_rand_below(&seed, 9)];
			for (k = 0; k < 3; k++) {
				int rg = simhash_compute(sh, sc, in[k], doc, len,
				    &fp);

				ck_assert(rg == SIMHASH_OK ||
				    rg == SIMHASH_EMPTY_DOCUMENT);
			}
			check_all((const char *)doc, len, "guarded");
		}
	}
	munmap(map, body + 2 * pg);
}
END_TEST

START_TEST(test_huge_document)
{
	size_t len = (size_t)ROBUST_HUGE_MB << 20, i;
	char *doc = malloc(len);
	uint64_t x = 88172645463325252ULL, fp[3][3];
	static const enum simhash_input in[] = { SIMHASH_INPUT_TEXT,
	    SIMHASH_INPUT_HTML, SIMHASH_INPUT_PREPROCESSED };
	size_t li, k;
	int used = 0;

	ck_assert_ptr_nonnull(doc);
	/* Junk, then an enormous term, then words. */
	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (i < len / 4)
			doc[i] = (char)x;
		else if (i < len / 2)
			doc[i] = (char)('a' + x % 26);
		else
			doc[i] = x % 7 == 0 ? ' ' : (char)('a' + x % 26);
	}
	for (li = 0; li < 3; li++) {
		/* The vector levels; scalar only when there is none (time). */
		if (levels[li] == SIMHASH_SIMD_SCALAR &&
		    simhash_simd_supported(SIMHASH_SIMD_AVX2))
			continue;
		if (!use_level(levels[li]))
			continue;
		for (k = 0; k < 3; k++)
			ck_assert_int_eq(simhash_compute(sh, sc, in[k], doc, len,
			    &fp[li][k]), SIMHASH_OK);
		if (used++ == 0)
			memcpy(fp[0], fp[li], sizeof(fp[0]));
		for (k = 0; k < 3; k++)
			ck_assert_uint_eq(fp[li][k], fp[0][k]);
	}
	free(doc);
}
END_TEST

Suite *simhash_robust_suite(void);

Suite *
simhash_robust_suite(void)
{
	Suite *s = suite_create("simhash_robust");
	TCase *tc = tcase_create("robust");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_junk, 0, 3);
	tcase_add_loop_test(tc, test_html_damage, 0, 3);
	tcase_add_loop_test(tc, test_enormous_terms, 0, 3);
	tcase_add_loop_test(tc, test_many_markup, 0, 3);
	tcase_add_loop_test(tc, test_guard_pages, 0, 3);
	tcase_add_test(tc, test_huge_document);
	suite_add_tcase(s, tc);
	return s;
}
