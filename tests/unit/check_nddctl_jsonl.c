/*
 * Tests for nddctl's JSON lines parser (clients/nddctl_jsonl.c) against
 * jansson, the parser it stands in for: random lines of string values,
 * with escapes, surrogate pairs, raw UTF-8 and runs of plain bytes of
 * every length between them (the plain runs are moved 16 bytes at a time,
 * so escapes fall at every offset of a vector and every distance between
 * where the decoded string ends and where reading is).  Every line it
 * takes must decode as jansson decodes it; what it gives up on jansson
 * must refuse, or hold what this parser leaves to jansson.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "nddctl.h"
#include "testutil.h"

struct line {
	char *buf;
	size_t len, cap;
};

static void
put(struct line *l, const char *s, size_t n)
{
	if (l->len + n + 1 > l->cap) {
		l->cap = (l->len + n + 1) * 2;
		l->buf = realloc(l->buf, l->cap);
		ck_assert_ptr_nonnull(l->buf);
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
	l->buf[l->len] = '\0';
}

static void
puts_(struct line *l, const char *s)
{
	put(l, s, strlen(s));
}

/* A random JSON string's body (between its quotes). */
static void
random_string(struct line *l, uint64_t *seed, int bad)
{
	static const char *escapes[] = { "\\\"", "\\\\", "\\/", "\\b", "\\f",
	    "\\n", "\\r", "\\t", "\\u00e9", "\\u20ac", "\\ud83d\\ude00",
	    "\\u0041", "\\u00FF" };
	static const char *utf8[] = { "\xc3\xa9", "\xe2\x82\xac",
	    "\xf0\x9f\x98\x80", "\xd0\xb6" };
	static const char *broken[] = { "\\u0000", "\xc3", "\xff", "\x01",
	    "\\x", "\\ud83d", "\\ude00", "\xed\xa0\x80" };
	size_t parts = tu_rand_below(seed, 60);

	for (size_t i = 0; i < parts; i++) {
		uint64_t what = tu_rand_below(seed, 10);

		if (what < 5) {
			/* A plain run of 0 to 40 bytes. */
			size_t n = tu_rand_below(seed, 41);

			for (size_t k = 0; k < n; k++) {
				char c = (char)(' ' + tu_rand_below(seed, 95));

				if (c == '"' || c == '\\')
					c = 'x';
				put(l, &c, 1);
			}
		} else if (what < 8)
			puts_(l, escapes[tu_rand_below(seed,
			    sizeof(escapes) / sizeof(escapes[0]))]);
		else if (what < 9 || !bad)
			puts_(l, utf8[tu_rand_below(seed,
			    sizeof(utf8) / sizeof(utf8[0]))]);
		else
			puts_(l, broken[tu_rand_below(seed,
			    sizeof(broken) / sizeof(broken[0]))]);
	}
}

/* Compares field key of jansson's object with s[0..n). */
static void
assert_field(json_t *o, const char *key, const char *s, size_t n,
    const char *line)
{
	json_t *v = json_object_get(o, key);

	if (s == NULL) {
		ck_assert_msg(v == NULL, "%s: jansson has %s", line, key);
		return;
	}
	ck_assert_msg(v != NULL && json_is_string(v), "%s: no %s", line, key);
	ck_assert_msg(json_string_length(v) == n &&
	    memcmp(json_string_value(v), s, n) == 0, "%s: %s differs", line,
	    key);
}

START_TEST(test_against_jansson)
{
	uint64_t seed = 42;
	size_t taken = 0, left = 0;

	for (int i = 0; i < 20000; i++) {
		struct line l = { 0 };
		struct jsonl_doc d;
		json_error_t err;
		json_t *o;
		char *copy;
		int bad = i % 4 == 0, html = i % 2;

		puts_(&l, "{\"url\": \"http://x.example/");
		random_string(&l, &seed, 0);
		puts_(&l, html ? "\", \"html\": \"" : "\", \"text\": \"");
		random_string(&l, &seed, bad);
		puts_(&l, "\"}");
		copy = strdup(l.buf);
		o = json_loadb(l.buf, l.len, 0, &err);
		if (jsonl_parse_doc(l.buf, l.len, &d) == 0) {
			ck_assert_msg(o != NULL, "%s: taken, jansson says %s",
			    copy, err.text);
			assert_field(o, "url", d.url, d.url_len, copy);
			assert_field(o, "text", d.text, d.text_len, copy);
			assert_field(o, "html", d.html, d.html_len, copy);
			taken++;
		} else
			left++;
		json_decref(o);
		free(copy);
		free(l.buf);
	}
	/* Most lines are plain strings this parser takes; the broken ones
	 * are left to jansson. */
	ck_assert_uint_gt(taken, 12000);
	ck_assert_uint_gt(left, 1000);
}
END_TEST

/* Long runs between escapes, and escapes at every offset of a run. */
START_TEST(test_escapes_at_every_offset)
{
	for (size_t run = 0; run < 70; run++)
		for (size_t esc = 0; esc < 40; esc++) {
			struct line l = { 0 };
			struct jsonl_doc d;
			json_t *o;

			puts_(&l, "{\"url\": \"u\", \"text\": \"");
			for (size_t k = 0; k < esc; k++)
				puts_(&l, "\\n");
			for (size_t k = 0; k < run; k++)
				put(&l, &"abcdefghij"[k % 10], 1);
			puts_(&l, "\\\"");
			for (size_t k = 0; k < run; k++)
				put(&l, &"0123456789"[k % 10], 1);
			puts_(&l, "\"}");
			o = json_loadb(l.buf, l.len, 0, NULL);
			ck_assert_ptr_nonnull(o);
			ck_assert_int_eq(jsonl_parse_doc(l.buf, l.len, &d), 0);
			assert_field(o, "text", d.text, d.text_len, "line");
			json_decref(o);
			free(l.buf);
		}
}
END_TEST

Suite *nddctl_jsonl_suite(void);

Suite *
nddctl_jsonl_suite(void)
{
	Suite *s = suite_create("nddctl_jsonl");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_against_jansson);
	tcase_add_test(tc, test_escapes_at_every_offset);
	suite_add_tcase(s, tc);
	return s;
}
