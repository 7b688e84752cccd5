/*
 * Unit tests for html: the visible text of documents, checked against the
 * naive reference (tests/lib/simhash_ref.c) on hand-made and random
 * markup, and output cut at every size.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "simhash_ref.h"
#include "testutil.h"

/*
 * The whole text of doc, cap bytes at a time.  The document is copied to a
 * buffer of its own size, so that AddressSanitizer sees a read past it.
 */
static char *
strip_all(const char *doc, size_t len, size_t cap, size_t *outlen)
{
	struct html_strip st;
	char *out = malloc(len * 2 + 16), *copy = malloc(len > 0 ? len : 1);
	uint8_t *buf = malloc(cap);
	size_t o = 0, n;

	memcpy(copy, doc, len);
	html_strip_init(&st, copy, len);
	while ((n = html_strip_next(&st, buf, cap)) > 0) {
		ck_assert_uint_le(n, cap);
		memcpy(out + o, buf, n);
		o += n;
		ck_assert_uint_le(o, len * 2 + 16);
	}
	free(buf);
	free(copy);
	*outlen = o;
	return out;
}

static void
check_same(const char *doc, size_t len)
{
	size_t n1, n2, caps[] = { 16, 17, 31, 4096 }, i;
	char *want = ref_html_text(doc, len, &n1), *got;

	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		got = strip_all(doc, len, caps[i], &n2);
		if (n1 != n2 || memcmp(want, got, n1) != 0) {
			fprintf(stderr, "input:");
			for (size_t k = 0; k < len; k++)
				fprintf(stderr, " %02x", (uint8_t)doc[k]);
			fprintf(stderr, "\n");
		}
		ck_assert_msg(n1 == n2 && memcmp(want, got, n1) == 0,
		    "cap %zu: \"%.*s\" gave \"%.*s\", reference \"%.*s\"",
		    caps[i], (int)len, doc, (int)n2, got, (int)n1, want);
		free(got);
	}
	free(want);
}

static void
check_text(const char *doc, const char *want)
{
	size_t n;
	char *got = strip_all(doc, strlen(doc), 4096, &n);

	ck_assert_msg(n == strlen(want) && memcmp(got, want, n) == 0,
	    "\"%s\" gave \"%.*s\", want \"%s\"", doc, (int)n, got, want);
	free(got);
	check_same(doc, strlen(doc));
}

START_TEST(test_text)
{
	check_text("plain", "plain");
	check_text("a<b>c</b>d", "a c d");
	check_text("<p class='x>y'>t</p>", " t ");
	check_text("<a b=\"c\"d=e f>t", " t");
	check_text("x<!-- c -- c -->y", "x y");
	check_text("x<!-->y<!--->z", "x y z");
	check_text("x<!-- a --!>y", "x y");
	check_text("x<!DOCTYPE html>y<?pi?>z</>w</ x>v", "x y z w v");
	check_text("x<script>a</b>c</script>y", "x y");
	check_text("x<style type=a>a{b:c}</STYLE>y", "x y");
	check_text("x<script>a</scripty>b</script\t>y", "x y");
	check_text("a < b <3 <", "a < b <3 <");
	check_text("&amp;&lt;&gt;&quot;&apos;", "&<>\"'");
	check_text("&amp &lt &copy", "& < \xc2\xa9");
	check_text("&#65;&#x42;&#X43&#0068;", "ABCD");
	check_text("&#128;&#129;&#x9F;", "\xe2\x82\xac\xc2\x81\xc5\xb8");
	check_text("&#0;&#xd800;&#99999999999;", "\xef\xbf\xbd\xef\xbf\xbd"
	    "\xef\xbf\xbd");
	check_text("&#;&#x;&;&1;&zzz;", "&#;&#x;&;&1;&zzz;");
	check_text("&notin;&notit;", "\xe2\x88\x89\xc2\xacit;");
	check_text("&CounterClockwiseContourIntegral;", "\xe2\x88\xb3");
	check_text("&nGt;", "\xe2\x89\xab\xe2\x83\x92");
}
END_TEST

START_TEST(test_unterminated)
{
	check_text("a<b c=\"d", "a ");
	check_text("a<!-- never closed", "a ");
	check_text("a<script>never closed", "a ");
	check_text("a<script", "a ");
	check_text("a<!", "a ");
	check_text("a</", "a ");
	check_text("a<", "a<");
	check_text("a&", "a&");
	check_text("a&#", "a&#");
	check_text("a&#x", "a&#x");
	check_text("a&am", "a&am");
	check_text("a</script", "a ");
	check_text("x<script></script", "x ");
}
END_TEST

START_TEST(test_random)
{
	static const char *const bits[] = {
		"<", ">", "/", "!", "-", "--", "<!--", "-->", "<p", "</p",
		"<script", "</script", "<style", "</style", "\"", "'", "=",
		" ", "\t", "&", "&amp", "&amp;", "&#", "&#x", "1", "41", ";",
		"a", "Z", "x", "\xc3\xa9", "\0", "?", "<?", "<!", "--!>",
		"&not", "in", "nbsp;", "&lt", "SCRIPT", "\n",
	};
	uint64_t seed = 42;
	char doc[400];
	size_t len, i;
	int round;

	for (round = 0; round < 3000; round++) {
		size_t n = (size_t)tu_rand_below(&seed, 60);

		len = 0;
		for (i = 0; i < n; i++) {
			const char *b = bits[tu_rand_below(&seed,
			    sizeof(bits) / sizeof(bits[0]))];
			size_t bl = b[0] == '\0' ? 1 : strlen(b);

			memcpy(doc + len, b, bl);
			len += bl;
		}
		check_same(doc, len);
	}
}
END_TEST

/*
 * The scans look at 16 bytes at a time and the last bytes one at a time:
 * every marker at every offset from a block's start and from the end of the
 * input, each of its prefixes (markup cut by the end), and the output cut
 * at every window size the check uses.
 */
START_TEST(test_blocks)
{
	static const char *const marks[] = {
		"<b>", "</b>", "<a href=\"x>y\">", "<a b='c>d' e=f>",
		"<a b=c\"d>", "<a \"b=c>", "<a b= \"c>\">", "<a b=\"c\"=\"d>\">",
		"<a b==\"c>\">", "<a/b=\"c>\">", "<a b\t=\n'c>'>",
		"<!-- x -->", "<!---->", "<!-->", "<!--->", "<!--!>-->",
		"<!----!>", "<!-- a --!> b -->", "<!-- -- > --->",
		"<!DOCTYPE html>", "<?x?>", "</ a>", "</>",
		"<script>a</b>c</script>", "<SCRIPT>x</sCrIpT >",
		"<script>x</script/>", "<script>x</scripts></script\n>",
		"<style>p{}</STYLE>", "<style>x</style", "<script>x</",
		"<scripts>t</scripts>", "<stylex>t", "<s>t</s>",
		"&amp;", "&amp", "&#65;", "&#x4a", "&notin;", "&notit;",
		"&#xd800;", "\x80\xff<\xc3\xa9>",
	};
	char doc[256];
	size_t i, k, n, pre;

	for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		n = strlen(marks[i]);
		for (pre = 0; pre <= 40; pre++) {
			/* Text before it: spaces, letters, or NUL bytes. */
			memset(doc, "x \0"[pre % 3], pre);
			memcpy(doc + pre, marks[i], n);
			/* Followed by text, then cut inside the marker. */
			memcpy(doc + pre + n, "tail text here, 32 bytes long..",
			    32);
			for (k = pre + 1; k <= pre + n + 32; k++)
				check_same(doc, k);
		}
	}
}
END_TEST

/* Longer random documents: markers among text runs of every length. */
START_TEST(test_random_long)
{
	static const char *const bits[] = {
		"<p>", "</p>", "<a href=\"", "\">", "'", "\"", "=", " ", "\n",
		"<!--", "-->", "--!>", "-", "<script>", "</script>", "</SCRIPT",
		"<style type='a'>", "</style ", ">", "<", "</", "&", "&amp;",
		"&#x41", "&nbsp", "<!DOCTYPE", "\0", "\xc3\xa9", "\xff",
	};
	uint64_t seed = 7;
	char doc[2048];
	size_t len, i, k;
	int round;

	for (round = 0; round < 1500; round++) {
		size_t n = (size_t)tu_rand_below(&seed, 80);

		len = 0;
		for (i = 0; i < n; i++) {
			const char *b;
			size_t bl;

			if (tu_rand_below(&seed, 3) == 0) {
				/* A run of text or spaces, up to 70 bytes. */
				bl = (size_t)tu_rand_below(&seed, 70);
				for (k = 0; k < bl; k++)
					doc[len + k] = "ab -c.d"[
					    tu_rand_below(&seed, 7)];
				len += bl;
				continue;
			}
			b = bits[tu_rand_below(&seed,
			    sizeof(bits) / sizeof(bits[0]))];
			bl = b[0] == '\0' ? 1 : strlen(b);
			memcpy(doc + len, b, bl);
			len += bl;
		}
		check_same(doc, len);
	}
}
END_TEST

START_TEST(test_charref)
{
	uint8_t out[8];
	size_t n;
	const uint8_t *s = (const uint8_t *)"&amp;x";

	ck_assert_uint_eq(html_charref(s, s + 6, out, &n), 5);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(out[0], '&');
	/* The input may end anywhere. */
	ck_assert_uint_eq(html_charref(s, s + 4, out, &n), 4);
	ck_assert_uint_eq(html_charref(s, s + 1, out, &n), 0);
	ck_assert_uint_eq(html_charref(s, s + 2, out, &n), 0);
}
END_TEST

Suite *html_suite(void);

Suite *
html_suite(void)
{
	Suite *s = suite_create("html");
	TCase *tc = tcase_create("html");

	/* Exhaustive loops: a second alone, many under a sanitizer on a
	 * loaded machine. */
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_text);
	tcase_add_test(tc, test_unterminated);
	tcase_add_test(tc, test_random);
	tcase_add_test(tc, test_blocks);
	tcase_add_test(tc, test_random_long);
	tcase_add_test(tc, test_charref);
	suite_add_tcase(s, tc);
	return s;
}
