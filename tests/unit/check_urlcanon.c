/*
 * Tests for urlcanon: conformance with the RFC 3986 normalization vectors of
 * uriparser and url-normalize (../shared/data/url_normalization), our scheme
 * rules, idempotence on real URL lists, invalid input and the crawler
 * options.
 *
 * How a vector is judged.  Inputs that begin with http://, https:// or
 * ftp:// (any case) must canonicalize to the vector's expected value after
 * the scheme rules nddd adds on top of RFC 3986 syntax normalization are
 * applied to that value (fragment dropped, default port dropped, empty path
 * made "/"; see expect_with_scheme_rules).  Every other input (other schemes,
 * relative references, "http:host" without "//") must be rejected: nddd
 * accepts only absolute http, https and ftp URLs.  The vectors excluded
 * below are listed with the reason each is not a test of what nddd does.
 */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "testutil.h"
#include "urlcanon.h"

struct exclusion {
	const char *input;
	const char *reason;
};

/* uriparser test/test.cpp vectors that are not tests of nddd's rules. */
static const struct exclusion uriparser_excluded[] = {
	{ "HTTP://%41@EXAMPLE.ORG/../a?%41#%41",
	  "normalizes one component in isolation (a mask other than ALL); "
	  "nddd always normalizes every component" },
	{ "HTTP://EXAMPLE.ORG:00080/",
	  "URI_NORMALIZE_PORT alone: the expected value keeps scheme and host "
	  "upper-case, which full normalization lower-cases" },
	{ NULL, NULL },
};

/* url-normalize tests that are not tests of nddd's rules. */
static const struct exclusion url_normalize_excluded[] = {
	{ "http://example.com/?q=%C7",
	  "url-normalize replaces invalid UTF-8 in the query by U+FFFD; RFC "
	  "3986 treats the query as octets and keeps %C7" },
	{ "http://example.com/?q=C%CC%A7",
	  "Unicode NFC normalization of decoded text is beyond RFC 3986 "
	  "syntax normalization" },
	{ "http://example.com/#!5753509/hello-world",
	  "rewrites #! into Google's retired _escaped_fragment_ AJAX crawling "
	  "scheme; nddd drops the fragment" },
	{ "http://www.example.com./",
	  "a trailing dot names the same DNS host, but RFC 3986 syntax "
	  "normalization keeps it" },
	{ "http://www.foo.com.:81/foo", "trailing dot in the host, as above" },
	{ "http://www.foo.com./foo/bar.html",
	  "trailing dot in the host, as above" },
	{ NULL, NULL },
};

/* Whole url-normalize test functions excluded, by name. */
static const struct exclusion url_normalize_excluded_tests[] = {
	{ "test_url_normalize_with_default_domain",
	  "resolves against url-normalize's default_domain option; nddd has "
	  "no base URL" },
	{ "test_normalize_path_result_is_expected",
	  "component-level test of a path, not a URL (and collapses "
	  "repeated slashes, which RFC 3986 does not)" },
	{ "test_normalize_host_result_is_expected",
	  "component-level test of a host, with IDNA, not a URL" },
	{ "test_normalize_query_result_is_expected",
	  "component-level test of a query, not a URL" },
	{ "test_normalize_scheme_result_is_expected",
	  "component-level test of a scheme, not a URL" },
	{ "test_normalize_userinfo_result_is_expected",
	  "component-level test of user info, not a URL" },
	{ "test_normalize_fragment_result_is_expected",
	  "component-level test of a fragment, not a URL" },
	{ NULL, NULL },
};

static struct urlcanon *
canon_new(int session, int tracking, int sort)
{
	struct urlcanon_options o = {
		.strip_session_ids = session,
		.strip_tracking = tracking,
		.sort_query = sort,
	};
	struct urlcanon *uc = urlcanon_new(&o);

	ck_assert_ptr_nonnull(uc);
	return uc;
}

/* Canonical form of s, copied (caller frees), or NULL if rejected. */
static char *
canon(struct urlcanon *uc, const char *s)
{
	const char *cause = NULL, *out;
	size_t n;

	out = urlcanon_canonicalize(uc, s, strlen(s), &n, &cause);
	/* Plain tests: this runs hundreds of thousands of times, and Check
	 * records every passed assertion. */
	if (out == NULL) {
		if (cause == NULL)
			ck_abort_msg("%s: rejected without a cause", s);
		return NULL;
	}
	if (strlen(out) != n)
		ck_abort_msg("%s: length %zu, not %zu", s, strlen(out), n);
	return strdup(out);
}

static int
is_absolute_http_ftp(const char *s)
{
	return strncasecmp(s, "http://", 7) == 0 ||
	    strncasecmp(s, "https://", 8) == 0 ||
	    strncasecmp(s, "ftp://", 6) == 0;
}

/*
 * The expected value of an RFC 3986 vector with nddd's scheme rules applied:
 * no fragment, no default port, "/" for an empty path.  Written from the
 * rules, independently of urlcanon.c.
 */
static char *
expect_with_scheme_rules(const char *expected)
{
	char *s = strdup(expected), *hash, *auth, *auth_end, *port, *out;
	const char *dflt;

	if ((hash = strchr(s, '#')) != NULL)
		*hash = '\0';
	auth = strstr(s, "://") + 3;
	auth_end = auth + strcspn(auth, "/?");
	dflt = strncasecmp(s, "https", 5) == 0 ? "443" :
	    strncasecmp(s, "http", 4) == 0 ? "80" : "21";
	port = auth_end;
	while (port > auth && isdigit((unsigned char)port[-1]))
		port--;
	if (port > auth && port[-1] == ':' && (port == auth_end ||
	    ((size_t)(auth_end - port) == strlen(dflt) &&
	    strncmp(port, dflt, strlen(dflt)) == 0))) {
		memmove(port - 1, auth_end, strlen(auth_end) + 1);
		auth_end = port - 1;
	}
	if (*auth_end == '/')
		return s;
	ck_assert_int_ne(asprintf(&out, "%.*s/%s", (int)(auth_end - s), s,
	    auth_end), -1);
	free(s);
	return out;
}

static const char *
excluded(const struct exclusion *list, const char *input)
{
	for (; list->input != NULL; list++)
		if (strcmp(list->input, input) == 0)
			return list->reason;
	return NULL;
}

static json_t *
load_vectors(const char *rel)
{
	char *path = tu_data_path(rel);
	json_error_t err;
	json_t *v = json_load_file(path, 0, &err);

	ck_assert_msg(v != NULL && json_is_array(v), "%s: %s", path, err.text);
	free(path);
	return v;
}

/* Judges one vector; returns 1 if it was compared, 0 if it was rejected. */
static int
judge(struct urlcanon *uc, const char *input, const char *expected)
{
	char *got = canon(uc, input), *want;

	if (!is_absolute_http_ftp(input)) {
		ck_assert_msg(got == NULL, "%s: accepted as %s, want rejection",
		    input, got);
		return 0;
	}
	want = expect_with_scheme_rules(expected);
	ck_assert_msg(got != NULL && strcmp(got, want) == 0,
	    "%s: got %s, want %s", input, got ? got : "(rejected)", want);
	free(got);
	free(want);
	return 1;
}

/* Every excluded input must be in the data: the list may not rot. */
static void
assert_exclusions_present(json_t *vectors, const struct exclusion *list,
    const char *field)
{
	for (; list->input != NULL; list++) {
		size_t i;
		json_t *v;
		int found = 0;

		json_array_foreach(vectors, i, v) {
			const char *in = json_string_value(
			    json_object_get(v, field));

			found |= in != NULL && strcmp(in, list->input) == 0;
		}
		ck_assert_msg(found, "excluded vector %s is not in the data",
		    list->input);
	}
}

START_TEST(test_uriparser_vectors)
{
	json_t *vectors = load_vectors(
	    "url_normalization/uriparser/normalize_syntax_vectors.json");
	struct urlcanon *uc = canon_new(0, 0, 0);
	size_t i, compared = 0, rejected = 0, skipped = 0;
	json_t *v;

	assert_exclusions_present(vectors, uriparser_excluded, "input");
	json_array_foreach(vectors, i, v) {
		const char *in = json_string_value(json_object_get(v, "input"));
		const char *want = json_string_value(
		    json_object_get(v, "expected"));

		ck_assert_ptr_nonnull(in);
		ck_assert_ptr_nonnull(want);
		if (excluded(uriparser_excluded, in)) {
			skipped++;
			continue;
		}
		if (judge(uc, in, want))
			compared++;
		else
			rejected++;
	}
	/* 46 vectors: 7 excluded (one input appears six times), 12
	 * compared, the rest not absolute http(s)/ftp URLs. */
	ck_assert_uint_eq(skipped, 7);
	ck_assert_uint_eq(compared, 12);
	ck_assert_uint_eq(compared + rejected + skipped,
	    json_array_size(vectors));
	urlcanon_free(uc);
	json_decref(vectors);
}
END_TEST

START_TEST(test_url_normalize_vectors)
{
	json_t *vectors = load_vectors(
	    "url_normalization/url_normalize/url_normalize_vectors.json");
	struct urlcanon *uc = canon_new(0, 0, 0);
	size_t i, compared = 0, rejected = 0, skipped = 0;
	json_t *v;

	assert_exclusions_present(vectors, url_normalize_excluded, "value");
	json_array_foreach(vectors, i, v) {
		const char *test = json_string_value(
		    json_object_get(v, "test"));
		const char *in = json_string_value(json_object_get(v, "value"));
		const char *want = json_string_value(
		    json_object_get(v, "expected"));

		if (excluded(url_normalize_excluded_tests, test) ||
		    (in != NULL && excluded(url_normalize_excluded, in))) {
			skipped++;
			continue;
		}
		ck_assert_msg(in != NULL, "vector %zu has no value", i);
		if (judge(uc, in, want ? want : in))
			compared++;
		else
			rejected++;
	}
	ck_assert_uint_ge(compared, 30);
	ck_assert_uint_eq(compared + rejected + skipped,
	    json_array_size(vectors));
	urlcanon_free(uc);
	json_decref(vectors);
}
END_TEST

START_TEST(test_scheme_rules)
{
	static const char *const cases[][2] = {
		{ "http://example.com", "http://example.com/" },
		{ "http://example.com?a=1", "http://example.com/?a=1" },
		{ "http://example.com:80/x", "http://example.com/x" },
		{ "http://example.com:/x", "http://example.com/x" },
		{ "http://example.com:0080/x", "http://example.com/x" },
		{ "http://example.com:443/x", "http://example.com:443/x" },
		{ "https://example.com:443/x", "https://example.com/x" },
		{ "https://example.com:80/x", "https://example.com:80/x" },
		{ "ftp://example.com:21/x", "ftp://example.com/x" },
		{ "http://example.com:08080/", "http://example.com:8080/" },
		{ "http://example.com/a#frag", "http://example.com/a" },
		{ "http://example.com/a?q#frag", "http://example.com/a?q" },
		{ "HTTP://Example.COM/A/./B/../C", "http://example.com/A/C" },
		{ "http://example.com/%7e%41%2f", "http://example.com/~A%2F" },
		{ "  http://example.com/x \r\n", "http://example.com/x" },
		{ "http://example.com/caf\xc3\xa9",
		  "http://example.com/caf%C3%A9" },
		{ "http://[::1]:8080/", "http://[::1]:8080/" },
		{ "http://[FE80::A]/", "http://[fe80::a]/" },
		{ "http://user@example.com/", "http://user@example.com/" },
		{ "http://example.com/?", "http://example.com/?" },
		{ "http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1" },
	};
	struct urlcanon *uc = canon_new(0, 0, 0);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = canon(uc, cases[i][0]);

		ck_assert_msg(got && strcmp(got, cases[i][1]) == 0,
		    "%s: got %s, want %s", cases[i][0], got ? got : "(rejected)",
		    cases[i][1]);
		free(got);
	}
	urlcanon_free(uc);
}
END_TEST

START_TEST(test_invalid)
{
	static const char *const cases[] = {
		"", "   ", "example.com", "/path", "//example.com/",
		"mailto:a@example.com", "javascript:alert(1)",
		"file:///etc/passwd", "http:example.com", "http://",
		"http:///path", "http://exa mple.com/", "http://example.com/a b",
		"http://example.com:65536/", "http://example.com:99999999999/",
		"http://example.com:8o/", "http://[::1/", "http://a/%zz",
		"http://example.com/\x01x", "ht tp://example.com/",
	};
	struct urlcanon *uc = canon_new(0, 0, 0);
	const char *cause;
	size_t n;
	char *huge, *got;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		got = canon(uc, cases[i]);
		ck_assert_msg(got == NULL, "%s: accepted as %s", cases[i], got);
	}
	/* A NUL byte inside is invalid, not the end of the URL. */
	ck_assert_ptr_null(urlcanon_canonicalize(uc, "http://a/\0b", 11, &n,
	    &cause));
	/* The length limit. */
	huge = malloc(URLCANON_MAX_LEN + 2);
	memcpy(huge, "http://a/", 9);
	memset(huge + 9, 'x', URLCANON_MAX_LEN + 1 - 9);
	huge[URLCANON_MAX_LEN + 1] = '\0';
	ck_assert_ptr_null(canon(uc, huge));
	huge[URLCANON_MAX_LEN] = '\0';
	got = canon(uc, huge);
	ck_assert_ptr_nonnull(got);
	free(got);
	free(huge);
	urlcanon_free(uc);
}
END_TEST

START_TEST(test_options)
{
	struct urlcanon *plain = canon_new(0, 0, 0);
	struct urlcanon *session = canon_new(1, 0, 0);
	struct urlcanon *tracking = canon_new(0, 1, 0);
	struct urlcanon *sort = canon_new(0, 0, 1);
	struct urlcanon *all = canon_new(1, 1, 1);
	static const char *const in =
	    "http://example.com/a;jsessionid=ABC?z=1&utm_source=x&"
	    "PHPSESSID=42&b=2&gclid=9&a=1&sid=7";
	char *got;

	got = canon(plain, in);
	ck_assert_str_eq(got, in);
	free(got);
	got = canon(session, in);
	ck_assert_str_eq(got,
	    "http://example.com/a?z=1&utm_source=x&b=2&gclid=9&a=1");
	free(got);
	got = canon(tracking, in);
	ck_assert_str_eq(got, "http://example.com/a;jsessionid=ABC?z=1&"
	    "PHPSESSID=42&b=2&a=1&sid=7");
	free(got);
	got = canon(sort, "http://example.com/?b=2&a=2&a=1&c");
	ck_assert_str_eq(got, "http://example.com/?a=1&a=2&b=2&c");
	free(got);
	got = canon(all, in);
	ck_assert_str_eq(got, "http://example.com/a?a=1&b=2&z=1");
	free(got);
	/* A session parameter is stripped before dot segments are removed:
	 * what it leaves as ".." goes too, so the result is stable (found by
	 * fuzzing). */
	got = canon(session, "http://example.com/a/b/..;jsessionid=1/c");
	ck_assert_str_eq(got, "http://example.com/a/c");
	free(got);
	/* A query emptied by stripping loses its "?". */
	got = canon(all, "http://example.com/?utm_medium=x&sid=1");
	ck_assert_str_eq(got, "http://example.com/");
	free(got);
	urlcanon_free(plain);
	urlcanon_free(session);
	urlcanon_free(tracking);
	urlcanon_free(sort);
	urlcanon_free(all);
}
END_TEST

/* Canonicalizing a canonical form changes nothing. */
static void
assert_idempotent(struct urlcanon *uc, const char *url, size_t *accepted)
{
	char *once = canon(uc, url), *twice;

	if (once == NULL)
		return;
	twice = canon(uc, once);
	if (twice == NULL || strcmp(once, twice) != 0)
		ck_abort_msg("%s -> %s -> %s", url, once,
		    twice ? twice : "(rejected)");
	(*accepted)++;
	free(once);
	free(twice);
}

static void
idempotent_on_list(struct urlcanon *uc, const char *rel, const char *prefix,
    size_t *accepted)
{
	char *path = tu_data_path(rel), *data, *line, *save = NULL, *url;

	data = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(data);
	for (line = strtok_r(data, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');

		if (tab != NULL)
			line = tab + 1;
		if (asprintf(&url, "%s%s", prefix, line) == -1)
			ck_abort_msg("out of memory");
		assert_idempotent(uc, url, accepted);
		free(url);
	}
	free(data);
	free(path);
}

START_TEST(test_idempotent_real_urls)
{
	struct urlcanon *uc = canon_new(0, 0, 0);
	struct urlcanon *all = canon_new(1, 1, 1);
	size_t accepted = 0;

	idempotent_on_list(uc, "url_lists/ada_url_various_datasets/kasztp.txt",
	    "", &accepted);
	idempotent_on_list(uc,
	    "url_lists/ada_url_various_datasets/userbait.txt", "", &accepted);
	idempotent_on_list(uc,
	    "url_lists/ut1_blacklists/phishing_urls_2021-03-17.txt",
	    "http://", &accepted);
	idempotent_on_list(all,
	    "url_lists/ut1_blacklists/all_categories_urls_HEAD.tsv",
	    "HTTP://", &accepted);
	/* Nearly all of these ~186,000 real URLs are valid. */
	ck_assert_uint_ge(accepted, 180000);
	urlcanon_free(uc);
	urlcanon_free(all);
}
END_TEST

START_TEST(test_idempotent_random)
{
	static const char alphabet[] = "aB0-._~%2F/?#&=;:@[]!$'()*+,AF ";
	struct urlcanon *uc = canon_new(1, 1, 1);
	uint64_t seed = 20261121;
	size_t accepted = 0;
	char url[128];

	for (int n = 0; n < 200000; n++) {
		size_t len = 7 + tu_rand_below(&seed, 40);

		memcpy(url, "http://", 7);
		for (size_t i = 7; i < len; i++)
			url[i] = alphabet[tu_rand_below(&seed,
			    sizeof(alphabet) - 1)];
		url[len] = '\0';
		assert_idempotent(uc, url, &accepted);
	}
	ck_assert_uint_ge(accepted, 1000);
	urlcanon_free(uc);
}
END_TEST

Suite *urlcanon_suite(void);

Suite *
urlcanon_suite(void)
{
	Suite *s = suite_create("urlcanon");
	TCase *tc = tcase_create("urlcanon");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_uriparser_vectors);
	tcase_add_test(tc, test_url_normalize_vectors);
	tcase_add_test(tc, test_scheme_rules);
	tcase_add_test(tc, test_invalid);
	tcase_add_test(tc, test_options);
	tcase_add_test(tc, test_idempotent_real_urls);
	tcase_add_test(tc, test_idempotent_random);
	suite_add_tcase(s, tc);
	return s;
}
