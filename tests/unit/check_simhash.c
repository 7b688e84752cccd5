/*
 * Unit tests for simhash: fingerprints worked out by hand from the
 * definition (DESIGN section 4), names and formatting.
 *
 * Most vectors use the paper-exact term hash (plain sdbm), whose values are
 * easy to derive: sdbm("a") = 97 = 0x61, sdbm("b") = 0x62, and in general
 * sdbm(c0 c1 ... cn) = ((c0 * 65599 + c1) * 65599 + ...) + cn.  Then:
 *  - a document of one distinct term has that term's hash as fingerprint
 *    (every V[i] is +n or -n);
 *  - two distinct terms once each give h1 | h2: where the bits agree V[i]
 *    is +2 or -2, where they differ it is 0, a tie, which gives 1;
 *  - a term twice and another once give the first one's hash.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "simhash.h"
#include "stopwords.h"
#include "testutil.h"

#define P 65599ULL
/* A string literal and its length. */
#define S(x) x, sizeof(x) - 1

/* Fingerprint of doc with the given term hash and stop words. */
static enum simhash_status
fp_of(const char *doc, size_t len, enum simhash_input in,
    enum simhash_term_hash th, const char *const *stop, uint64_t *fp)
{
	struct stopwords *sw = NULL;
	struct simhash *sh;
	struct simhash_scratch *sc;
	enum simhash_status st;
	char *cause = NULL;

	if (stop != NULL) {
		ck_assert_ptr_nonnull(sw = stopwords_new());
		for (; *stop != NULL; stop++)
			ck_assert_int_eq(stopwords_add(sw, *stop,
			    strlen(*stop), &cause), 0);
	}
	ck_assert_ptr_nonnull(sh = simhash_new(th, sw, &cause));
	ck_assert_ptr_nonnull(sc = simhash_scratch_new());
	st = simhash_compute(sh, sc, in, doc, len, fp);
	simhash_scratch_free(sc);
	simhash_free(sh);
	stopwords_free(sw);
	return st;
}

static uint64_t
paper(const char *doc)
{
	uint64_t fp = 0;

	ck_assert_int_eq(fp_of(doc, strlen(doc), SIMHASH_INPUT_TEXT,
	    SIMHASH_TERM_HASH_SDBM, NULL, &fp), SIMHASH_OK);
	return fp;
}

static uint64_t
paper_html(const char *doc)
{
	uint64_t fp = 0;

	ck_assert_int_eq(fp_of(doc, strlen(doc), SIMHASH_INPUT_HTML,
	    SIMHASH_TERM_HASH_SDBM, NULL, &fp), SIMHASH_OK);
	return fp;
}

static int
is_empty(const char *doc, size_t len, enum simhash_input in,
    const char *const *stop)
{
	uint64_t fp;

	return fp_of(doc, len, in, SIMHASH_TERM_HASH_SDBM_FMIX64, stop,
	    &fp) == SIMHASH_EMPTY_DOCUMENT;
}

START_TEST(test_term_hash)
{
	/* h = c + (h << 6) + (h << 16) - h, from h = 0. */
	ck_assert_uint_eq(simhash_term(SIMHASH_TERM_HASH_SDBM, "a", 1), 97);
	ck_assert_uint_eq(simhash_term(SIMHASH_TERM_HASH_SDBM, "ab", 2),
	    97 * P + 98);
	ck_assert_uint_eq(simhash_term(SIMHASH_TERM_HASH_SDBM, "ab", 2),
	    0x611841);
	ck_assert_uint_eq(simhash_term(SIMHASH_TERM_HASH_SDBM, "cat", 3),
	    (99 * P + 97) * P + 116);
	/* The empty term hashes to 0; fmix64(0) is 0 as well. */
	ck_assert_uint_eq(simhash_term(SIMHASH_TERM_HASH_SDBM, "", 0), 0);
	ck_assert_uint_eq(simhash_fmix64(0), 0);
	/* fmix64(97), the three xor-shifts and two multiplies by hand. */
	ck_assert_uint_eq(simhash_term(SIMHASH_TERM_HASH_SDBM_FMIX64, "a", 1),
	    0x685fdf50e51fa977ULL);
	ck_assert_uint_eq(simhash_term(SIMHASH_TERM_HASH_SDBM_FMIX64, "b", 1),
	    0xac62ed3c7549b674ULL);
	/* 64-bit wrap-around: a long term keeps only the low 64 bits. */
	{
		uint64_t h = 0;
		int i;

		for (i = 0; i < 40; i++)
			h = h * P + 'z';
		ck_assert_uint_eq(simhash_term(SIMHASH_TERM_HASH_SDBM,
		    "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", 40), h);
	}
}
END_TEST

START_TEST(test_one_term)
{
	ck_assert_uint_eq(paper("a"), 0x61);
	ck_assert_uint_eq(paper("cat"), (99 * P + 97) * P + 116);
	/* Repetition does not change a one-term document. */
	ck_assert_uint_eq(paper("cat cat cat"), (99 * P + 97) * P + 116);
	/* Default mode: the finalized hash. */
	{
		uint64_t fp;

		ck_assert_int_eq(fp_of("a", 1, SIMHASH_INPUT_TEXT,
		    SIMHASH_TERM_HASH_SDBM_FMIX64, NULL, &fp), SIMHASH_OK);
		ck_assert_uint_eq(fp, 0x685fdf50e51fa977ULL);
	}
}
END_TEST

START_TEST(test_tie_rule)
{
	/* Two terms: differing bits tie at 0 and give 1, so h(a) | h(b). */
	ck_assert_uint_eq(paper("a b"), 0x61 | 0x62);
	ck_assert_uint_eq(paper("b a"), 0x63);
	{
		uint64_t fp;

		ck_assert_int_eq(fp_of("a b", 3, SIMHASH_INPUT_TEXT,
		    SIMHASH_TERM_HASH_SDBM_FMIX64, NULL, &fp), SIMHASH_OK);
		ck_assert_uint_eq(fp, 0x685fdf50e51fa977ULL |
		    0xac62ed3c7549b674ULL);
	}
	/* Four terms, two and two: "a a b b" ties like "a b". */
	ck_assert_uint_eq(paper("a a b b"), 0x63);
}
END_TEST

START_TEST(test_repeated_terms)
{
	/*
	 * a = 0x61 (bits 0, 5, 6), b = 0x62 (bits 1, 5, 6).  "a a b":
	 * bit 0: +2 -1 = +1, bit 1: -2 +1 = -1, bits 5, 6: +3, others -3.
	 */
	ck_assert_uint_eq(paper("a a b"), 0x61);
	ck_assert_uint_eq(paper("b a b"), 0x62);
	/* Weights are frequencies wherever the occurrences are. */
	ck_assert_uint_eq(paper("a b c a"), paper("a a b c"));
	/* c = 0x63: "a b c": bits 0 (+1), 1 (+1), 5, 6 set. */
	ck_assert_uint_eq(paper("a b c"), 0x63);
}
END_TEST

START_TEST(test_case_and_punctuation)
{
	uint64_t cat = (99 * P + 97) * P + 116;
	uint64_t dog = (100 * P + 111) * P + 103;

	ck_assert_uint_eq(paper("CAT"), cat);
	ck_assert_uint_eq(paper("Cat"), cat);
	/* Punctuation and whitespace separate terms. */
	ck_assert_uint_eq(paper("cat,dog"), cat | dog);
	ck_assert_uint_eq(paper("cat\tdog"), cat | dog);
	ck_assert_uint_eq(paper("  cat...\n\r\v\fDOG!?  "), cat | dog);
	ck_assert_uint_eq(paper("(cat)[dog]"), cat | dog);
	ck_assert_uint_eq(paper("cat_dog"), cat | dog);
	ck_assert_uint_eq(paper("cat~dog"), cat | dog);
	ck_assert_uint_eq(paper("cat`dog"), cat | dog);
	ck_assert_uint_eq(paper("cat@dog"), cat | dog);
	/* "cat's": the apostrophe splits off "s" (0x73): cat | s. */
	ck_assert_uint_eq(paper("cat's"), cat | 0x73);
}
END_TEST

START_TEST(test_digits_and_utf8)
{
	/* Digits belong to terms: "1987" is one term. */
	ck_assert_uint_eq(paper("1987"),
	    ((('1' * P + '9') * P + '8') * P) + '7');
	ck_assert_uint_eq(paper("b2b"), ('b' * P + '2') * P + 'b');
	/* UTF-8 bytes belong to terms; only ASCII letters are folded. */
	{
		const char *cafe = "caf\xc3\xa9";	/* café */
		uint64_t h = (((('c' * P + 'a') * P + 'f') * P) + 0xc3) * P +
		    0xa9;

		ck_assert_uint_eq(paper(cafe), h);
		ck_assert_uint_eq(paper("CAF\xc3\xa9"), h);
		/* Upper-case E acute (C3 89) is not folded. */
		ck_assert_uint_ne(paper("caf\xc3\x89"), h);
	}
	/* Control bytes are neither whitespace nor punctuation. */
	ck_assert_uint_eq(paper("a\001b"), ('a' * P + 1) * P + 'b');
	/* A NUL byte too (the document has a length). */
	{
		uint64_t fp;

		ck_assert_int_eq(fp_of("a\0b", 3, SIMHASH_INPUT_TEXT,
		    SIMHASH_TERM_HASH_SDBM, NULL, &fp), SIMHASH_OK);
		ck_assert_uint_eq(fp, ('a' * P + 0) * P + 'b');
	}
	/* DEL (0x7f) is not punctuation. */
	ck_assert_uint_eq(paper("a\177"), 'a' * P + 0x7f);
}
END_TEST

START_TEST(test_stop_words)
{
	static const char *const stop[] = { "the", "of", "a", NULL };
	uint64_t cat = (99 * P + 97) * P + 116, fp;

	ck_assert_int_eq(fp_of("The cat of a", 12, SIMHASH_INPUT_TEXT,
	    SIMHASH_TERM_HASH_SDBM, stop, &fp), SIMHASH_OK);
	ck_assert_uint_eq(fp, cat);
	/* Matching is on whole terms after folding. */
	ck_assert_int_eq(fp_of("THE theater", 11, SIMHASH_INPUT_TEXT,
	    SIMHASH_TERM_HASH_SDBM, stop, &fp), SIMHASH_OK);
	ck_assert_uint_eq(fp, simhash_term(SIMHASH_TERM_HASH_SDBM,
	    "theater", 7));
	/* Preprocessed input keeps every term. */
	ck_assert_int_eq(fp_of("the", 3, SIMHASH_INPUT_PREPROCESSED,
	    SIMHASH_TERM_HASH_SDBM, stop, &fp), SIMHASH_OK);
	ck_assert_uint_eq(fp, ('t' * P + 'h') * P + 'e');
	/* Only stop words: nothing left. */
	ck_assert(is_empty(S("The of A the"), SIMHASH_INPUT_TEXT, stop));
}
END_TEST

START_TEST(test_empty)
{
	static const char *const stop[] = { "the", NULL };

	ck_assert(is_empty(S(""), SIMHASH_INPUT_TEXT, NULL));
	ck_assert(is_empty(S("   \t\n "), SIMHASH_INPUT_TEXT, NULL));
	ck_assert(is_empty(S(".,;:!?-"), SIMHASH_INPUT_TEXT, NULL));
	ck_assert(is_empty(S(""), SIMHASH_INPUT_HTML, NULL));
	ck_assert(is_empty(S("<p> </p><!-- words --><script>x</script>"),
	    SIMHASH_INPUT_HTML, NULL));
	ck_assert(is_empty(S("<b>The</b>"), SIMHASH_INPUT_HTML, stop));
	ck_assert(is_empty(S(""), SIMHASH_INPUT_PREPROCESSED, NULL));
	ck_assert(is_empty(S("    "), SIMHASH_INPUT_PREPROCESSED, NULL));
	/* Preprocessed input separates by SPACE only: "." is a term. */
	ck_assert(!is_empty(S("."), SIMHASH_INPUT_PREPROCESSED, NULL));
}
END_TEST

START_TEST(test_html)
{
	uint64_t cat = (99 * P + 97) * P + 116;
	uint64_t dog = (100 * P + 111) * P + 103;

	/* Tags go, and separate. */
	ck_assert_uint_eq(paper_html("<p>Cat</p>"), cat);
	ck_assert_uint_eq(paper_html("<p class=\"x y\">cat</p><p>dog</p>"),
	    cat | dog);
	/* "b<i>a</i>b": three terms b, a, b, so b wins. */
	ck_assert_uint_eq(paper_html("b<i>a</i>b"), 0x62);
	ck_assert_uint_eq(paper_html("a<br>b"), 0x63);
	/* Script and style contents, comments, declarations go. */
	ck_assert_uint_eq(paper_html("<!DOCTYPE html><script>var dog;"
	    "</script>cat<style>dog{}</style><!-- dog --><?xml dog?>"), cat);
	ck_assert_uint_eq(paper_html("<SCRIPT type=\"a\">dog</ScRiPt >cat"),
	    cat);
	/* "</scripts>" does not end a script. */
	ck_assert_uint_eq(paper_html("<script>dog</scripts>dog</script>cat"),
	    cat);
	/* A ">" inside a quoted attribute value does not end the tag. */
	ck_assert_uint_eq(paper_html("<a title=\"dog > dog\">cat</a>"), cat);
	ck_assert_uint_eq(paper_html("<a title='dog > dog'>cat</a>"), cat);
	/* "<" not followed by a letter, "!", "/" or "?" is text. */
	ck_assert_uint_eq(paper_html("cat < dog"), cat | dog);
	/* Empty comments. */
	ck_assert_uint_eq(paper_html("<!-->cat"), cat);
	ck_assert_uint_eq(paper_html("<!--->cat"), cat);
	ck_assert_uint_eq(paper_html("<!-- dog --!>cat"), cat);
	/* Character references. */
	ck_assert_uint_eq(paper_html("&#65;"), 0x61);	/* "A" folds */
	ck_assert_uint_eq(paper_html("&#x41;"), 0x61);
	ck_assert_uint_eq(paper_html("&#X41"), 0x61);
	ck_assert_uint_eq(paper_html("&lt;b&gt;"), 0x62);	/* "<b>" text */
	ck_assert_uint_eq(paper_html("cat&amp;dog"), cat | dog);
	ck_assert_uint_eq(paper_html("caf&eacute;"), paper("caf\xc3\xa9"));
	ck_assert_uint_eq(paper_html("caf&#233;"), paper("caf\xc3\xa9"));
	/* Legacy name without ";": "&eacute" too. */
	ck_assert_uint_eq(paper_html("caf&eacute"), paper("caf\xc3\xa9"));
	/* &nbsp; is U+00A0, bytes C2 A0: not a separator. */
	ck_assert_uint_eq(paper_html("a&nbsp;b"), paper("a\xc2\xa0" "b"));
	/* Windows-1252: &#150; is an en dash, E2 80 93. */
	ck_assert_uint_eq(paper_html("a&#150;b"), paper("a\xe2\x80\x93" "b"));
	/* Zero and out of range become U+FFFD (EF BF BD). */
	ck_assert_uint_eq(paper_html("&#0;"), paper("\xef\xbf\xbd"));
	ck_assert_uint_eq(paper_html("&#x110000;"), paper("\xef\xbf\xbd"));
	ck_assert_uint_eq(paper_html("&#xD800;"), paper("\xef\xbf\xbd"));
	/* No reference: "&" is text (a separator). */
	ck_assert_uint_eq(paper_html("cat&dog"), cat | dog);
	ck_assert_uint_eq(paper_html("cat&#;dog"), cat | dog);
	/* "&notit;": the longest legacy name, "not", then "it;". */
	ck_assert_uint_eq(paper_html("&notit;"), paper("\xc2\xac" "it"));
}
END_TEST

START_TEST(test_names_and_format)
{
	enum simhash_term_hash th;
	enum simhash_simd lv;
	char hex[SIMHASH_HEX_LEN + 1];

	ck_assert_str_eq(simhash_term_hash_name(SIMHASH_TERM_HASH_SDBM_FMIX64),
	    "sdbm-fmix64");
	ck_assert_str_eq(simhash_term_hash_name(SIMHASH_TERM_HASH_SDBM),
	    "sdbm");
	ck_assert_int_eq(simhash_term_hash_parse("sdbm", &th), 0);
	ck_assert_int_eq(th, SIMHASH_TERM_HASH_SDBM);
	ck_assert_int_eq(simhash_term_hash_parse("sdbm-fmix64", &th), 0);
	ck_assert_int_eq(th, SIMHASH_TERM_HASH_SDBM_FMIX64);
	ck_assert_int_eq(simhash_term_hash_parse("md5", &th), -1);
	ck_assert_ptr_null(simhash_term_hash_name((enum simhash_term_hash)7));
	ck_assert_int_eq(simhash_simd_parse("avx2", &lv), 0);
	ck_assert_int_eq(lv, SIMHASH_SIMD_AVX2);
	ck_assert_int_eq(simhash_simd_parse("sse", &lv), -1);
	ck_assert(simhash_simd_supported(SIMHASH_SIMD_SCALAR));
	simhash_format(0x61, hex);
	ck_assert_str_eq(hex, "0000000000000061");
	simhash_format(0xfedcba9876543210ULL, hex);
	ck_assert_str_eq(hex, "fedcba9876543210");
}
END_TEST

START_TEST(test_default_list)
{
	char *path = tu_source_path("conf/stopwords.txt"), *cause = NULL;
	struct stopwords *sw = stopwords_load(path, &cause);

	ck_assert_msg(sw != NULL, "%s", cause);
	ck_assert(stopwords_contains(sw, "the", 3));
	ck_assert(stopwords_contains(sw, "t", 1));
	ck_assert(!stopwords_contains(sw, "cat", 3));
	ck_assert(stopwords_count(sw) > 100);
	stopwords_free(sw);
	free(path);
}
END_TEST

START_TEST(test_preprocess)
{
	static const char *const stop[] = { "the", NULL };
	struct stopwords *sw = stopwords_new();
	struct simhash *sh;
	struct simhash_scratch *sc = simhash_scratch_new();
	char *cause = NULL;
	uint8_t *out;
	size_t len;

	ck_assert_int_eq(stopwords_add(sw, stop[0], 3, &cause), 0);
	ck_assert_ptr_nonnull(sh = simhash_new(SIMHASH_TERM_HASH_SDBM, sw,
	    &cause));
	ck_assert_int_eq(simhash_preprocess(sh, sc, SIMHASH_INPUT_TEXT,
	    "  The Cat,  sat on THE mat. ", 28, &out, &len), 0);
	ck_assert_str_eq((char *)out, "cat sat on mat");
	ck_assert_uint_eq(len, 14);
	free(out);
	ck_assert_int_eq(simhash_preprocess(sh, sc, SIMHASH_INPUT_HTML,
	    "<p>The <b>cat</b>&amp;dog</p>", 29, &out, &len), 0);
	ck_assert_str_eq((char *)out, "cat dog");
	free(out);
	ck_assert_int_eq(simhash_preprocess(sh, sc, SIMHASH_INPUT_TEXT,
	    "the", 3, &out, &len), 0);
	ck_assert_str_eq((char *)out, "");
	free(out);
	ck_assert_int_eq(simhash_preprocess(sh, sc, SIMHASH_INPUT_PREPROCESSED,
	    " the  x.y ", 10, &out, &len), 0);
	ck_assert_str_eq((char *)out, "the x.y");
	free(out);
	simhash_scratch_free(sc);
	simhash_free(sh);
	stopwords_free(sw);
}
END_TEST

Suite *simhash_suite(void);

Suite *
simhash_suite(void)
{
	Suite *s = suite_create("simhash");
	TCase *tc = tcase_create("definition");

	tcase_add_test(tc, test_term_hash);
	tcase_add_test(tc, test_one_term);
	tcase_add_test(tc, test_tie_rule);
	tcase_add_test(tc, test_repeated_terms);
	tcase_add_test(tc, test_case_and_punctuation);
	tcase_add_test(tc, test_digits_and_utf8);
	tcase_add_test(tc, test_stop_words);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_html);
	tcase_add_test(tc, test_names_and_format);
	tcase_add_test(tc, test_default_list);
	tcase_add_test(tc, test_preprocess);
	suite_add_tcase(s, tc);
	return s;
}
