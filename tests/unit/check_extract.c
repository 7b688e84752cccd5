/*
 * Unit tests for extract: the text format on hand-made markup, the choice
 * of the main content (an article among the template; no article on list
 * and error pages; each rule beyond readability's on a small page where it
 * decides), and hostile pages, each checked for the format, for output and
 * memory bounded by the input, and for finishing at all.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "extract.h"
#include "testutil.h"

/*
 * Checks the format extract.h promises: lines joined by single "\n", none
 * empty, no SPACE at either end of a line nor two in a row, no other ASCII
 * whitespace unless the input had it literally as a byte of text (it never
 * does in these tests).
 */
static void
check_format(const uint8_t *out, size_t len)
{
	size_t i, bad = SIZE_MAX;

	/* One assertion, not one a byte: each costs Check a message. */
	ck_assert_uint_eq(out[len], '\0');
	if (len == 0)
		return;
	ck_assert_msg(out[0] != '\n' && out[0] != ' ', "leading separator");
	ck_assert_msg(out[len - 1] != '\n' && out[len - 1] != ' ',
	    "trailing separator");
	for (i = 0; i + 1 < len && bad == SIZE_MAX; i++)
		if (((out[i] == '\n' || out[i] == ' ') &&
		    (out[i + 1] == '\n' || out[i + 1] == ' ')) ||
		    out[i] == '\t' || out[i] == '\r' || out[i] == '\f')
			bad = i;
	ck_assert_msg(bad == SIZE_MAX, "bad separator at %zu: \"%.*s\"", bad,
	    (int)(len - bad < 40 ? len - bad : 40), out + bad);
}

/*
 * Runs both functions on doc (copied to a buffer of its own size, so that
 * AddressSanitizer sees a read past it), checks the format, the bounds
 * and the agreement between them; returns extract_main's status and its
 * text (the caller frees it).
 */
static int
run(struct extract_scratch *sc, const void *doc, size_t len, char **text,
    size_t *textlen)
{
	uint8_t *copy = malloc(len > 0 ? len : 1);
	const uint8_t *out;
	size_t olen, wlen;
	int r;

	memcpy(copy, doc, len);
	ck_assert_int_eq(extract_whole(sc, copy, len, &out, &wlen),
	    EXTRACT_WHOLE);
	check_format(out, wlen);
	ck_assert_uint_le(wlen, 2 * len);
	r = extract_main(sc, copy, len, &out, &olen);
	ck_assert(r == EXTRACT_MAIN || r == EXTRACT_WHOLE);
	check_format(out, olen);
	/*
	 * The main content is some of the page's text, or hidden text that
	 * the whole text leaves out (bounded as the whole text is).
	 */
	if (r == EXTRACT_WHOLE)
		ck_assert_uint_eq(olen, wlen);
	ck_assert_uint_le(olen, 2 * len);
	if (text != NULL) {
		*text = malloc(olen + 1);
		memcpy(*text, out, olen + 1);
		*textlen = olen;
	}
	free(copy);
	return r;
}

/* extract_whole of doc must be want. */
static void
check_whole(const char *doc, const char *want)
{
	struct extract_scratch *sc = extract_scratch_new();
	const uint8_t *out;
	size_t len;

	ck_assert_ptr_nonnull(sc);
	ck_assert_int_eq(extract_whole(sc, doc, strlen(doc), &out, &len),
	    EXTRACT_WHOLE);
	ck_assert_msg(len == strlen(want) && memcmp(out, want, len) == 0,
	    "\"%s\" gave \"%.*s\", want \"%s\"", doc, (int)len, out, want);
	run(sc, doc, strlen(doc), NULL, NULL);
	extract_scratch_free(sc);
}

START_TEST(test_format)
{
	check_whole("", "");
	check_whole("plain text", "plain text");
	check_whole("  a \n\t b  ", "a b");
	check_whole("<p>one</p><p>two</p>", "one\ntwo");
	check_whole("<div> a <div> b </div> c </div>", "a\nb\nc");
	check_whole("a<b>b</b>c <i> d </i> e", "abc d e");
	/* Whitespace after an inline tag separates as well as before. */
	check_whole("rose <b>sharply</b> on <i>Monday</i>  after", "rose "
	    "sharply on Monday after");
	check_whole("<p>a <i>b</i> c<b>d</b>e <span> f </span>g</p>",
	    "a b cde f g");
	check_whole("line<br>break<br/><br>twice", "line\nbreak\ntwice");
	check_whole("<ul><li>x<li>y</ul>z", "x\ny\nz");
	check_whole("<table><tr><td>a<td>b<tr><td>c</table>", "a\nb\nc");
	check_whole("<h1>Title</h1>Text", "Title\nText");
	check_whole("<p>a</p> <p> </p> <p>b</p>", "a\nb");
	check_whole("x<!-- c -->y<!---->z", "xyz");
	check_whole("<!DOCTYPE html><html><head><title>T</title></head>"
	    "<body>b</body></html>", "b");
}
END_TEST

START_TEST(test_entities)
{
	check_whole("&amp; &lt;b&gt; &quot;q&quot;", "& <b> \"q\"");
	check_whole("caf&eacute; &#233;t&#xE9;", "caf\xc3\xa9 \xc3\xa9t"
	    "\xc3\xa9");
	check_whole("a&nbsp;b &nbsp; c&nbsp;", "a b c");
	check_whole("a&NewLine;&Tab;b&#32;&#32;c", "a b c");
	check_whole("&copy 2020 &amp", "\xc2\xa9 2020 &");
	check_whole("&bogus; & &#;", "&bogus; & &#;");
	check_whole("&#128;", "\xe2\x82\xac");
}
END_TEST

START_TEST(test_dropped)
{
	check_whole("a<script>var x = '<p>no</p>';</script>b", "ab");
	check_whole("a<style>p { x: y }</style>b", "ab");
	check_whole("a<SCRIPT type=x>1</script >b", "ab");
	check_whole("a<noscript>n</noscript>b", "ab");
	check_whole("a<svg><text>s</text></svg>b", "ab");
	check_whole("a<select><option>o</select>b", "ab");
	check_whole("a<textarea><p>t</textarea>b", "ab");
	check_whole("a<iframe>i</iframe>b", "ab");
	/* Hidden blocks make no line either. */
	check_whole("a<div hidden>h</div>b", "ab");
	check_whole("a<template><p>t</p></template>b", "ab");
	check_whole("a<span style=\"display: none\">h</span>b", "ab");
	check_whole("a<span aria-hidden=\"true\">h</span>b", "ab");
	check_whole("a<span class=\"x sr-only\">h</span>b", "ab");
	/* A title left open hides nothing; a script left open does. */
	check_whole("<title>t<p>b", "t\nb");
	check_whole("a<script>b", "a");
}
END_TEST

START_TEST(test_bytes)
{
	/* ISO-8859-1, invalid UTF-8, control bytes and NUL pass through. */
	static const char doc[] = "<p>caf\xe9 \xff\x01\x7f x\0y</p>";
	struct extract_scratch *sc = extract_scratch_new();
	const uint8_t *out;
	size_t len;

	ck_assert_int_eq(extract_whole(sc, doc, sizeof(doc) - 1, &out, &len),
	    EXTRACT_WHOLE);
	ck_assert_uint_eq(len, 12);
	ck_assert(memcmp(out, "caf\xe9 \xff\x01\x7f x\0y", 12) == 0);
	extract_scratch_free(sc);
}
END_TEST

START_TEST(test_plain)
{
	static const char text[] = "This is a text with no markup at all, "
	    "and it goes on for a while, long enough to be an article if it "
	    "were one, with commas, clauses, and more words than a heading "
	    "has, so that only its lack of structure could tell.";
	struct extract_scratch *sc = extract_scratch_new();
	const uint8_t *out;
	size_t len;
	int r;

	r = extract_main(sc, text, strlen(text), &out, &len);
	ck_assert(r == EXTRACT_MAIN || r == EXTRACT_WHOLE);
	ck_assert_uint_eq(len, strlen(text));
	ck_assert(memcmp(out, text, len) == 0);
	extract_scratch_free(sc);
}
END_TEST

/* A news page: the article among a site's template. */
static char *
article_page(size_t *len)
{
	static const char *const paras[] = {
		"The city council voted on Tuesday to approve the new budget, "
		"which raises spending on schools, parks, and public transport "
		"by nearly a tenth over last year.",
		"Supporters said the plan, long in the making, would help "
		"families across the region, while critics warned that taxes, "
		"fees, and debt would all rise as a result.",
		"The mayor, speaking after the vote, called it a historic day "
		"for the city and thanked the council members, the staff, and "
		"the residents who had taken part in the hearings.",
		"The budget takes effect in January, and the first new bus "
		"lines are expected to open in the spring, according to the "
		"transport authority.",
	};
	char *p = malloc(16384);
	size_t i, o = 0;

	o += (size_t)sprintf(p + o, "<!DOCTYPE html><html><head><title>"
	    "Council passes budget</title><script>var a=1;</script></head>"
	    "<body><header><nav class=\"menu\"><ul>");
	for (i = 0; i < 12; i++)
		o += (size_t)sprintf(p + o, "<li><a href=\"/s%zu\">Section "
		    "number %zu</a></li>", i, i);
	o += (size_t)sprintf(p + o, "</ul></nav></header><div id=\"main\">"
	    "<article><h1>Council passes budget</h1><div class=\"byline\">"
	    "By A. Writer</div><div class=\"article-body\">");
	for (i = 0; i < 4; i++)
		o += (size_t)sprintf(p + o, "<p>%s</p>", paras[i]);
	o += (size_t)sprintf(p + o, "<div class=\"share-bar\"><a href=\"#\">"
	    "Share on social media</a></div></div></article>"
	    "<aside class=\"sidebar\"><h3>Most read</h3><ul>");
	for (i = 0; i < 8; i++)
		o += (size_t)sprintf(p + o, "<li><a href=\"/r%zu\">Another "
		    "story that people read today, number %zu</a></li>", i, i);
	o += (size_t)sprintf(p + o, "</ul></aside></div><div class=\"comments\">"
	    "<p>What a great decision, finally, after all these years of "
	    "waiting, thank you council, thank you mayor.</p></div>"
	    "<footer><p>Copyright 2024 The Daily Example. All rights "
	    "reserved, every single one of them, forever.</p></footer>"
	    "</body></html>");
	*len = o;
	return p;
}

START_TEST(test_article)
{
	struct extract_scratch *sc = extract_scratch_new();
	size_t len, tl;
	char *page = article_page(&len), *text;

	ck_assert_int_eq(run(sc, page, len, &text, &tl), EXTRACT_MAIN);
	ck_assert_ptr_nonnull(strstr(text, "The city council voted"));
	ck_assert_ptr_nonnull(strstr(text, "according to the transport "
	    "authority."));
	ck_assert_ptr_null(strstr(text, "Section number"));
	ck_assert_ptr_null(strstr(text, "Another story"));
	ck_assert_ptr_null(strstr(text, "Share on social"));
	ck_assert_ptr_null(strstr(text, "What a great decision"));
	ck_assert_ptr_null(strstr(text, "Copyright"));
	ck_assert_ptr_null(strstr(text, "var a"));
	/* One paragraph a line. */
	ck_assert_ptr_nonnull(strstr(text, "last year.\nSupporters said"));
	free(text);
	free(page);
	extract_scratch_free(sc);
}
END_TEST

START_TEST(test_no_article)
{
	struct extract_scratch *sc = extract_scratch_new();
	char *page = malloc(65536), *text;
	size_t i, o = 0, tl;

	/* A list page: headlines and links, no prose. */
	o += (size_t)sprintf(page + o, "<html><body><h1>Latest news</h1>"
	    "<ul class=\"stories\">");
	for (i = 0; i < 40; i++)
		o += (size_t)sprintf(page + o, "<li><a href=\"/n/%zu\">Headline "
		    "of the story number %zu, with a few words</a> <span>2 "
		    "hours ago</span></li>", i, i);
	o += (size_t)sprintf(page + o, "</ul></body></html>");
	ck_assert_int_eq(run(sc, page, o, &text, &tl), EXTRACT_WHOLE);
	ck_assert_ptr_nonnull(strstr(text, "Headline of the story number 39"));
	free(text);
	/* An error page. */
	o = (size_t)sprintf(page, "<html><head><title>404</title></head><body>"
	    "<div class=\"error\"><h1>Page not found</h1><p>Sorry, the page "
	    "you asked for is not here.</p><a href=\"/\">Home</a></div>"
	    "</body></html>");
	ck_assert_int_eq(run(sc, page, o, &text, &tl), EXTRACT_WHOLE);
	ck_assert_str_eq(text, "Page not found\nSorry, the page you asked for "
	    "is not here.\nHome");
	free(text);
	free(page);
	extract_scratch_free(sc);
}
END_TEST

/* Random markup: the format and bounds hold, scratches are reusable. */
START_TEST(test_random)
{
	static const char *const bits[] = {
		"<p>", "</p>", "<div class=\"article-body\">", "</div>", "<a>",
		"</a>", "<li>", "<ul>", "</ul>", "<td>", "<table>", "<tr>",
		"</table>", "<br>", "<script>", "</script>", "<!--", "-->",
		"<h2>", "</h2>", "<nav>", "</nav>", "<title>", "<b>", "</b>",
		"&amp;", "&nbsp;", "&#10;", "&", "<", ">", "\"", "'", "=", " ",
		"\n", "\t", "word", "text, more", "\0", "\xc3\xa9", "\xff",
		"<span hidden>", "</span>", "<x-y>", "</x-y>", "<svg>",
		"</body>", "<body>", "<head>", "</html>",
	};
	struct extract_scratch *sc = extract_scratch_new(), *fresh;
	uint64_t seed = 7;
	char doc[2048], *a, *b;
	size_t len, i, la, lb;
	int round, ra, rb;

	for (round = 0; round < 3000; round++) {
		size_t n = (size_t)tu_rand_below(&seed, 120);

		len = 0;
		for (i = 0; i < n; i++) {
			const char *x = bits[tu_rand_below(&seed,
			    sizeof(bits) / sizeof(bits[0]))];
			size_t xl = x[0] == '\0' ? 1 : strlen(x);

			memcpy(doc + len, x, xl);
			len += xl;
		}
		ra = run(sc, doc, len, &a, &la);
		/* A used scratch gives what a new one gives. */
		fresh = extract_scratch_new();
		rb = run(fresh, doc, len, &b, &lb);
		extract_scratch_free(fresh);
		ck_assert_int_eq(ra, rb);
		ck_assert(la == lb && memcmp(a, b, la) == 0);
		free(a);
		free(b);
	}
	extract_scratch_free(sc);
}
END_TEST

/*
 * A hostile page: it must finish (the test case's timeout), keep the
 * format, and hold memory to a small multiple of its size.
 */
static void
check_hostile(const char *what, const char *doc, size_t len)
{
	struct extract_scratch *sc = extract_scratch_new();
	double t0 = tu_now();
	size_t mem;

	run(sc, doc, len, NULL, NULL);
	mem = extract_scratch_bytes(sc);
	fprintf(stderr, "extract %s: %zu bytes, %.2f s, scratch %.1f times "
	    "the input\n", what, len, tu_now() - t0,
	    (double)mem / (double)(len > 0 ? len : 1));
	ck_assert_msg(mem <= 12 * len + (1 << 20), "%s: scratch %zu bytes",
	    what, mem);
	extract_scratch_free(sc);
}

static char *
repeat(const char *unit, size_t times, const char *tail, size_t *len)
{
	size_t ul = strlen(unit), tl = strlen(tail), i;
	char *p = malloc(ul * times + tl + 1);

	for (i = 0; i < times; i++)
		memcpy(p + i * ul, unit, ul);
	memcpy(p + ul * times, tail, tl + 1);
	*len = ul * times + tl;
	return p;
}

START_TEST(test_hostile)
{
	char *p, *q;
	size_t len, i, n;
	uint64_t seed = 99;

	p = repeat("<div>", 100000, "deep text", &len);
	check_hostile("100,000 unclosed divs", p, len);
	free(p);
	p = repeat("<div><p>x", 100000, "", &len);
	q = malloc(len + 100000 * 6 + 1);
	memcpy(q, p, len);
	for (i = 0; i < 100000; i++)
		memcpy(q + len + i * 6, "</div>", 6);
	check_hostile("100,000 nested divs, closed", q, len + 600000);
	free(q);
	free(p);
	p = repeat("<table><tr><td>", 30000, "cell", &len);
	check_hostile("30,000 nested tables", p, len);
	free(p);
	p = repeat("<b>", 1000000, "", &len);
	check_hostile("all markup", p, len);
	free(p);
	p = repeat("</p></div></li></td>", 100000, "", &len);
	check_hostile("stray end tags", p, len);
	free(p);
	p = repeat("<a href=x>", 200000, "", &len);
	check_hostile("200,000 open links", p, len);
	free(p);
	p = repeat("word ", 10000000, "", &len);
	check_hostile("one 50 MB text node", p, len);
	free(p);
	p = repeat("x<br>", 1000000, "", &len);
	check_hostile("a million lines", p, len);
	free(p);
	p = repeat("&amp;", 1000000, "", &len);
	check_hostile("a million references", p, len);
	free(p);
	p = repeat("a", 4000000, "\">text", &len);
	memcpy(p, "<p class=\"", 10);
	check_hostile("a 4 MB attribute", p, len);
	p[9] = 'x';
	check_hostile("a 4 MB attribute, unquoted", p, len);
	free(p);
	p = repeat("<p>text ", 1000, "<script>", &len);
	q = repeat("if (a < b) { c = '</p>'; } ", 100000, "", &n);
	p = realloc(p, len + n + 1);
	memcpy(p + len, q, n + 1);
	check_hostile("a script never closed", p, len + n);
	free(q);
	free(p);
	n = 1 << 22;
	p = malloc(n);
	for (i = 0; i < n; i++)
		p[i] = (char)tu_rand(&seed);
	check_hostile("4 MB of random bytes", p, n);
	memset(p, 0, n);
	check_hostile("4 MB of NUL bytes", p, n);
	for (i = 0; i < n; i++)
		p[i] = "<>/=\"' a&!-"[tu_rand_below(&seed, 11)];
	check_hostile("4 MB of markup bytes", p, n);
	free(p);
}
END_TEST

/* A page cut at any byte still gives sane text. */
START_TEST(test_truncated)
{
	struct extract_scratch *sc = extract_scratch_new();
	size_t len, cut;
	char *page = article_page(&len);

	for (cut = 0; cut <= len; cut += cut < 64 ? 1 : 7)
		run(sc, page, cut, NULL, NULL);
	free(page);
	extract_scratch_free(sc);
}
END_TEST

/*
 * The rules beyond readability, each on a small page where it decides.
 * A story of four paragraphs of sentences, as a page would write it.
 */
#define STORY_1 "The city council voted on Tuesday to approve the new " \
	"budget, which raises spending on schools, parks, and public " \
	"transport by nearly a tenth over last year."
#define STORY_2 "Supporters said the plan, long in the making, would " \
	"help families across the region, while critics warned that taxes, " \
	"fees, and debt would all rise as a result."
#define STORY_3 "The mayor, speaking after the vote, called it a " \
	"historic day for the city and thanked the council members, the " \
	"staff, and the residents who had taken part in the hearings."
#define STORY_4 "The budget takes effect in January, and the first new " \
	"bus lines are expected to open in the spring, according to the " \
	"transport authority."
#define STORY "<p>" STORY_1 "</p><p>" STORY_2 "</p><p>" STORY_3 "</p><p>" \
	STORY_4 "</p>"
#define NAV "<div><a href=\"/\">Home</a> <a href=\"/n\">News</a> " \
	"<a href=\"/s\">Sports</a> <a href=\"/w\">Weather</a></div>"

/*
 * extract_main of doc must find an article (EXTRACT_MAIN) holding every
 * string of want and none of avoid (lists that end with NULL).
 */
static void
check_main(const char *what, const char *doc, const char *const *want,
    const char *const *avoid)
{
	struct extract_scratch *sc = extract_scratch_new();
	size_t tl, i;
	char *text;
	int r;

	r = run(sc, doc, strlen(doc), &text, &tl);
	ck_assert_msg(r == EXTRACT_MAIN, "%s: no article in \"%s\"", what,
	    text);
	for (i = 0; want[i] != NULL; i++)
		ck_assert_msg(strstr(text, want[i]) != NULL,
		    "%s: \"%s\" missing from \"%s\"", what, want[i], text);
	for (i = 0; avoid[i] != NULL; i++)
		ck_assert_msg(strstr(text, avoid[i]) == NULL,
		    "%s: \"%s\" in \"%s\"", what, avoid[i], text);
	free(text);
	extract_scratch_free(sc);
}

static const char *const story_lines[] = { STORY_1, STORY_4, NULL };

/* A list of short lines (addresses) is not prose, whatever its name. */
START_TEST(test_short_lines)
{
	static const char doc[] = "<html><body>" NAV
	    "<div class=\"content\"><p>Shop local</p>"
	    "<p>Acme Hardware<br>\"Tools for all\"<br>12 Main Street<br>"
	    "555-0100</p><p>Bea's Bakery<br>\"Bread daily\"<br>40 Mill "
	    "Road<br>555-0101</p><p>City Cycles<br>\"Ride on\"<br>7 Main "
	    "Street<br>555-0102</p><p>Dan's Diner<br>\"Eat well\"<br>9 Oak "
	    "Lane<br>555-0103</p><p>Eve's Books<br>\"Read more\"<br>3 Elm "
	    "Road<br>555-0104</p><p>Fay's Flowers<br>\"In bloom\"<br>5 Main "
	    "Street<br>555-0105</p><p>Gus Garage<br>\"Fixed fast\"<br>8 Mill "
	    "Road<br>555-0106</p><p>Hal's Hats<br>\"Hats off\"<br>2 Oak "
	    "Lane<br>555-0107</p></div>"
	    "<div><span>Council passes budget</span><br>" STORY "</div>"
	    "</body></html>";
	static const char *const avoid[] = { "Main Street", "555-01", NULL };

	check_main("addresses", doc, story_lines, avoid);
}
END_TEST

/*
 * The article follows its headline (the heading the title holds): it wins
 * over a teaser elsewhere that has more commas.
 */
START_TEST(test_headline)
{
	static const char doc[] = "<html><head><title>Council passes budget "
	    "- The Daily Example</title></head><body>" NAV "<table><tr><td>"
	    "<h1>Council passes budget</h1><div>" STORY "</div></td><td>"
	    "<h2>From the blogs</h2><div><p><a href=\"/b/1\">A walk</a></p>"
	    "<p>We went up, then down, then up again, past Ann, Bob, Cat, "
	    "Dan, Eve, Fay, Gus, Hal, Ian, Jo, Kim, Lou, Max, Ned, Olga, "
	    "Pat, Quin, Rob, Sue, Tom, Uma, Val, Wes, and Xia, who all, in "
	    "turn, waved, smiled, and went on their way home.</p><p>"
	    "<a href=\"/b/1\">Read more</a></p></div></td></tr></table>"
	    "</body></html>";
	static const char *const avoid[] = { "past Ann", NULL };

	check_main("headline", doc, story_lines, avoid);
}
END_TEST

/* Text between a div's blocks is paragraphs too (an ad amid the story). */
START_TEST(test_runs)
{
	static const char doc[] = "<html><body>" NAV "<div><h1>Council "
	    "passes budget</h1><p>By A. Writer<br>Staff<br>Jan. 2</p><div>"
	    STORY_1 "<br><br>" STORY_2 "<br><br><table><tr><td>Ad</td></tr>"
	    "</table>" STORY_3 "<br><br>" STORY_4 "</div></div><div><p>The "
	    "Daily Example is the newspaper of the city since 1901.</p></div>"
	    "</body></html>";
	static const char *const avoid[] = { "since 1901", NULL };

	check_main("runs", doc, story_lines, avoid);
}
END_TEST

/*
 * A template name on prose is a mistake ("subMenu" around the story), but
 * not one that names a notice, however prosy.
 */
START_TEST(test_prose_name)
{
	static const char doc[] = "<html><body><table><tr>"
	    "<td class=\"menu\"><a href=\"/\">Home</a><br><a href=\"/n\">News"
	    "</a><br><a href=\"/s\">Sports</a></td><td class=\"subMenu\">"
	    STORY "</td></tr></table><div class=\"cookie-notice\"><p>We use "
	    "cookies to make this site work, to remember what you chose, and "
	    "to count visits, so that we know which pages people read.</p><p>"
	    "Some cookies are set by others, such as the services that show "
	    "videos or maps on our pages, and they have rules of their own.</p>"
	    "<p>You can turn cookies off in your browser at any time, but "
	    "parts of the site may then stop working the way they should.</p>"
	    "</div><div><p>The Daily Example has been the newspaper of the "
	    "city and of the towns around it since the year 1901, and it is "
	    "read by one household in three.</p><p>Its reporters cover the "
	    "council, the courts, the schools, and the teams, and its letters "
	    "page is open to every reader who signs a name.</p></div>"
	    "</body></html>";
	static const char *const avoid[] = { "cookies", "Sports", "1901",
	    NULL };

	check_main("prose name", doc, story_lines, avoid);
}
END_TEST

/*
 * A hidden story that is most of the page is the article, a script being
 * to reveal it; the whole text still leaves it out, and a hidden notice
 * stays out of the article.
 */
START_TEST(test_hidden)
{
	static const char doc[] = "<html><body>" NAV "<h1>Council passes "
	    "budget</h1><div style=\"visibility: hidden\">" STORY "</div>"
	    "<p>Tell us what you think: write to the editor, who reads every "
	    "letter.</p></body></html>";
	static const char modal[] = "<html><body>" NAV "<div>" STORY "</div>"
	    "<div class=\"modal\" aria-hidden=\"true\"><p>" STORY_2 " " STORY_3
	    "</p><p>" STORY_1 " " STORY_4 "</p><p>" STORY_3 " " STORY_2
	    "</p></div></body></html>";
	static const char text[] = STORY_1 "\n" STORY_2 "\n" STORY_3 "\n"
	    STORY_4;
	static const char *const none[] = { NULL };
	struct extract_scratch *sc = extract_scratch_new();
	const uint8_t *out;
	size_t len;

	check_main("hidden story", doc, story_lines, none);
	ck_assert_int_eq(extract_whole(sc, doc, strlen(doc), &out, &len),
	    EXTRACT_WHOLE);
	ck_assert_ptr_null(memmem(out, len, "The city council", 16));
	ck_assert_ptr_nonnull(memmem(out, len, "Tell us", 7));
	extract_scratch_free(sc);
	/* The notice repeats the story's sentences: none must be added. */
	check_main("hidden notice", modal, story_lines, none);
	sc = extract_scratch_new();
	ck_assert_int_eq(extract_main(sc, modal, strlen(modal), &out, &len),
	    EXTRACT_MAIN);
	ck_assert_msg(len == strlen(text) && memcmp(out, text, len) == 0,
	    "hidden notice: \"%.*s\"", (int)len, out);
	extract_scratch_free(sc);
}
END_TEST

/*
 * Where "#comments" leads, after the article, the readers' comments begin,
 * however plain their markup; the same mark before the article ends
 * nothing.
 */
START_TEST(test_comments_mark)
{
	static const char after[] = "<html><body>" NAV "<div><h1>Council "
	    "passes budget</h1>" STORY "<a name=\"comments\"></a><h3>Your "
	    "views</h3><p>Posted by: Ann | Jan. 2, 2024</p><p>About time too, "
	    "frankly, after years of delay, waste, and broken promises, I say "
	    "well done to all of them.</p><p>Posted by: Bob | Jan. 2, 2024</p>"
	    "<p>More taxes, more fees, more debt, and the buses will still be "
	    "late, as they always are, every single morning.</p></div>"
	    "</body></html>";
	static const char before[] = "<html><body>" NAV "<div><h1>Council "
	    "passes budget</h1><div id=\"comments\"></div>" STORY "</div>"
	    "</body></html>";
	/* The mark in a heading's picture (a block of no text) still ends. */
	static const char pictured[] = "<html><body>" NAV "<div><h1>Council "
	    "passes budget</h1>" STORY "<div><a name=\"comment\"></a><img "
	    "src=\"/comments.gif\"></div><p>About time too, frankly, after "
	    "years of delay, waste, and broken promises, I say well done to "
	    "all of them.</p></div></body></html>";
	static const char *const avoid[] = { "Posted by", "About time",
	    "More taxes", NULL };
	static const char *const none[] = { NULL };

	check_main("comments after", after, story_lines, avoid);
	check_main("comments mark first", before, story_lines, none);
	check_main("comments mark pictured", pictured, story_lines, avoid);
}
END_TEST

/* A list of short lines with links and dates, after the story, is not it. */
START_TEST(test_link_list)
{
	static const char doc[] = "<html><body>" NAV "<div><h1>Council "
	    "passes budget</h1>" STORY "<b>Councillors of the year</b><br>"
	    "<a href=\"/c/1\">Ann Smith</a> (Ward 1), Jan. 7, 2023<br>"
	    "<a href=\"/c/2\">Bob Jones</a> (Ward 4), Jan. 9, 2022<br>"
	    "<a href=\"/c/3\">Cat Brown</a> (Ward 2), Jan. 3, 2021<br>"
	    "<a href=\"/c/4\">Dan Green</a> (Ward 3), Jan. 5, 2020<br>"
	    "<a href=\"/c/5\">Eve White</a> (Ward 1), Jan. 8, 2019<br>"
	    "Fay Black (Ward 5), Jan. 2, 2018</div></body></html>";
	static const char *const avoid[] = { "(Ward", "Councillors of", NULL };

	check_main("link list", doc, story_lines, avoid);
}
END_TEST

/* A block too short to be an article is not the article, whatever its name. */
START_TEST(test_short_candidate)
{
	static const char doc[] = "<html><body>" NAV "<div>" STORY "</div>"
	    "<div class=\"content-note\"><p>Note: please keep comments under "
	    "500 words, and civil.</p></div></body></html>";
	static const char *const avoid[] = { "500 words", NULL };

	check_main("short candidate", doc, story_lines, avoid);
}
END_TEST

/*
 * Teasers of other stories after the story, in the story's column: a run
 * of short blocks with links (a headline, its source, its date: commas
 * enough for readability to take it for prose) goes with its heading, and
 * so does what a heading such as "Other news" titles.  A digest of linked
 * items that is the page's content stays.
 */
START_TEST(test_teasers)
{
	static const char list[] = "<html><body>" NAV "<div><h1>Council "
	    "passes budget</h1>" STORY "<div><h2>Breaking news</h2>"
	    "<p><a href=\"/n/1\">Dutch minister expects budget surplus</a>"
	    "<br>Wire Service | <span>Wed, Jan 16 2008, 07:42 GMT</span></p>"
	    "<p>Markets - <a href=\"/n/2\">Bonds close firmer</a> by Example "
	    "Bank<br><span>Wed, Jan 16 2008, 07:40 GMT</span></p>"
	    "<p><a href=\"/n/3\">Car sales up 1.2 pct in December</a><br>"
	    "Wire Service | <span>Wed, Jan 16 2008, 07:26 GMT</span></p>"
	    "<p><a href=\"/n/4\">Prices post largest jump since 1994</a>"
	    "<br>Wire Service | <span>Wed, Jan 16 2008, 07:23 GMT</span></p>"
	    "<p><a href=\"/n/5\">Output grows 0.1 pct in November</a><br>"
	    "Wire Service | <span>Wed, Jan 16 2008, 07:21 GMT</span></p>"
	    "</div></div></body></html>";
	static const char section[] = "<html><body>" NAV "<div><h1>Council "
	    "passes budget</h1><div>" STORY "<h3>Other news</h3><p>The "
	    "Herald reports that the mayor of a small town plans to break the "
	    "electoral finance laws this month to force a test case.</p><p>The "
	    "Press looks at figures linking late-night crime in the city "
	    "centre to the number of liquor licences.</p></div></div>"
	    "</body></html>";
	static const char digest[] = "<html><head><title>Ten things to know"
	    "</title></head><body>" NAV "<div><h1>Ten things to know</h1>"
	    "<p>Good morning! This is the news you need to know today.</p><ol>"
	    "<li><a href=\"/a\">The council passed its budget</a>. Spending on "
	    "schools, parks, and buses rises by nearly a tenth over last year, "
	    "and the first new lines open in the spring, according to the "
	    "transport authority.</li>"
	    "<li><a href=\"/b\">The mayor called it a historic day</a>. He "
	    "thanked the council members, the staff, and the residents who "
	    "had taken part in the hearings, and said the plan had been long "
	    "in the making.</li>"
	    "<li><a href=\"/c\">Critics warned of higher taxes</a>. Fees and "
	    "debt would all rise as a result, they said, while supporters said "
	    "the plan would help families across the region.</li>"
	    "<li><a href=\"/d\">New bus lines open in the spring</a>. The "
	    "transport authority named the first routes on Wednesday, and said "
	    "that buses would run every ten minutes at peak hours.</li>"
	    "</ol></div></body></html>";
	static const char *const avoid_list[] = { "GMT", "Breaking news",
	    "Bonds close", NULL };
	static const char *const avoid_section[] = { "Other news",
	    "The Herald", "The Press", NULL };
	static const char *const want_digest[] = { "historic day",
	    "New bus lines", "first routes", NULL };
	static const char *const none[] = { NULL };

	check_main("teaser list", list, story_lines, avoid_list);
	check_main("teaser section", section, story_lines, avoid_section);
	check_main("digest", digest, want_digest, none);
}
END_TEST

/*
 * Blocks of the template inside the story's column: a photograph with its
 * caption, a log-in box around a form, a notice of copyright and a call to
 * subscribe.  A paragraph of the story that speaks of copyright stays.
 */
START_TEST(test_template_blocks)
{
	static const char doc[] = "<html><body>" NAV "<div><h1>Council "
	    "passes budget</h1><div class=\"topPhoto\"><p><a href=\"/p\">"
	    "View larger image</a></p><img src=\"/i.jpg\"><p>The mayor meets "
	    "council members before the vote on Tuesday. (A. Photographer / "
	    "The Daily Example)</p></div>" STORY "<p>The budget also settles "
	    "a copyright dispute over the city's crest, which a local company "
	    "had claimed, according to the council's lawyers.</p>"
	    "<div><table><tr><td>Please create an account or log in to read "
	    "this story</td></tr><tr><td><form action=\"/login\">Email <input "
	    "name=\"e\"> Password <input name=\"p\"></form></td></tr></table>"
	    "</div><p>Copyright &copy; 2008 The Daily Example. All rights "
	    "reserved.</p><p>Subscribe FREE to all of our monthly magazines. "
	    "Click <a href=\"/s\">here</a> now.</p></div></body></html>";
	static const char *const want[] = { STORY_1, STORY_4,
	    "copyright dispute", NULL };
	static const char *const avoid[] = { "View larger", "The mayor meets",
	    "create an account", "Password", "All rights", "Subscribe", NULL };

	check_main("template blocks", doc, want, avoid);
}
END_TEST

/* The L3S-GN1 news pages: nearly all have an article. */
START_TEST(test_corpus)
{
	struct extract_scratch *sc = extract_scratch_new();
	struct corpus *pages;
	size_t i, main = 0;
	char *path;

	path = tu_data_path("text_corpora/l3s_gn1_html/original");
	ck_assert_ptr_nonnull(pages = corpus_files(path, ".html"));
	for (i = 0; i < pages->n; i++)
		main += run(sc, pages->docs[i].data, pages->docs[i].len, NULL,
		    NULL) == EXTRACT_MAIN;
	ck_assert_uint_ge(main * 100, pages->n * 95);
	corpus_free(pages);
	free(path);
	extract_scratch_free(sc);
}
END_TEST

Suite *extract_suite(void);

Suite *
extract_suite(void)
{
	Suite *s = suite_create("extract");
	TCase *tc = tcase_create("extract");

	/* The hostile pages take seconds under a sanitizer. */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_entities);
	tcase_add_test(tc, test_dropped);
	tcase_add_test(tc, test_bytes);
	tcase_add_test(tc, test_plain);
	tcase_add_test(tc, test_article);
	tcase_add_test(tc, test_no_article);
	tcase_add_test(tc, test_short_lines);
	tcase_add_test(tc, test_headline);
	tcase_add_test(tc, test_runs);
	tcase_add_test(tc, test_prose_name);
	tcase_add_test(tc, test_hidden);
	tcase_add_test(tc, test_comments_mark);
	tcase_add_test(tc, test_link_list);
	tcase_add_test(tc, test_short_candidate);
	tcase_add_test(tc, test_teasers);
	tcase_add_test(tc, test_template_blocks);
	tcase_add_test(tc, test_random);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_corpus);
	suite_add_tcase(s, tc);
	return s;
}
