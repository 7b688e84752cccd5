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
 *
 * The fast path (urlcanon_is_canonical) is judged against the parser: a
 * table of inputs near the edge of what it accepts, then the real URL lists
 * and mutations of them, each canonicalized with and without the fast path
 * under every combination of options, which must agree byte for byte.
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
	/* The limit holds for the canonical form too: a URL short enough
	 * as given but not once its bytes above 0x7f are percent-encoded
	 * (three bytes each) is refused, so that nothing longer is stored
	 * or sent back in a reply. */
	memset(huge + 9, 'x', URLCANON_MAX_LEN - 9);
	for (size_t i = 9; i < 9 + 100; i++)
		huge[i] = (char)0xe9;
	huge[URLCANON_MAX_LEN - 2 * 100] = '\0';
	got = canon(uc, huge);
	ck_assert_ptr_nonnull(got);
	ck_assert_uint_eq(strlen(got), URLCANON_MAX_LEN);
	free(got);
	huge[URLCANON_MAX_LEN - 2 * 100] = 'x';
	huge[URLCANON_MAX_LEN - 2 * 100 + 1] = '\0';
	ck_assert_ptr_null(urlcanon_canonicalize(uc, huge,
	    URLCANON_MAX_LEN - 2 * 100 + 1, &n, &cause));
	ck_assert_str_eq(cause, "URL longer than 16384 bytes once canonical");
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

/*
 * The fast path's answers at its edges.  "plain" is the answer with no
 * crawler option, "opts" with any.  Each true answer is also checked
 * against the parser; a false one may be canonical (the scan is
 * conservative) or not.
 */
START_TEST(test_fast_path_table)
{
	static const struct {
		const char *url;
		int plain, opts;
	} cases[] = {
		{ "http://example.com/", 1, 1 },
		{ "https://example.com/", 1, 1 },
		{ "http://a/", 1, 1 },
		{ "http://example.com/a/b.html", 1, 1 },
		{ "http://www.site1.example/news/1.html?ref=7", 1, 0 },
		{ "http://xn--bcher-kva.example/", 1, 1 },
		{ "http://-a-.example/", 1, 1 },
		/* A dotted-decimal host is written as it came. */
		{ "http://1.2.3.4:8080/", 1, 1 },
		{ "http://01.02.03.004/", 1, 1 },
		/* Canonical, but the scan does not take these hosts. */
		{ "http://example.com./", 0, 0 },
		{ "http://example..com/", 0, 0 },
		{ "http://.example.com/", 0, 0 },
		{ "http://a_b.example/", 0, 0 },
		{ "http://[::1]/", 0, 0 },
		{ "http://[fe80::a]/", 0, 0 },
		{ "http://user@example.com/", 0, 0 },
		/* Not canonical: case, user info, no path. */
		{ "http://Example.com/", 0, 0 },
		{ "HTTP://example.com/", 0, 0 },
		{ "ftp://example.com/", 0, 0 },
		{ "http://@example.com/", 0, 0 },
		{ "http://:@example.com/", 0, 0 },
		{ "http://example.com", 0, 0 },
		{ "http://example.com?a", 0, 0 },
		{ "http://example.com:8080", 0, 0 },
		/* Ports. */
		{ "http://example.com:8080/", 1, 1 },
		{ "http://example.com:443/", 1, 1 },
		{ "https://example.com:80/", 1, 1 },
		{ "http://example.com:65535/", 1, 1 },
		{ "http://example.com:80/", 0, 0 },
		{ "https://example.com:443/", 0, 0 },
		{ "http://example.com:08080/", 0, 0 },
		{ "http://example.com:0/", 0, 0 },
		{ "http://example.com:/", 0, 0 },
		{ "http://example.com:65536/", 0, 0 },
		{ "http://example.com:100000/", 0, 0 },
		{ "http://example.com:8o/", 0, 0 },
		/* Escapes: an unreserved byte is decoded, hex is upper-cased. */
		{ "http://example.com/%2F", 1, 1 },
		{ "http://example.com/%25%00%20%7F%C3%A9", 1, 1 },
		{ "http://example.com/%21%3A%2B%26%3D%40%2C", 1, 1 },
		{ "http://example.com/%7E", 0, 0 },
		{ "http://example.com/%41", 0, 0 },
		{ "http://example.com/%2E", 0, 0 },
		{ "http://example.com/%2D%5F%30", 0, 0 },
		{ "http://example.com/%2f", 0, 0 },
		{ "http://example.com/%c3%a9", 0, 0 },
		{ "http://example.com/?a=%7E", 0, 0 },
		{ "http://example.com/?a=%2f", 0, 0 },
		{ "http://example.com/%", 0, 0 },
		{ "http://example.com/%4", 0, 0 },
		{ "http://example.com/%G0", 0, 0 },
		/* A ";jsessionid=" path parameter must be literal. */
		{ "http://example.com/a%3Bjsessionid=1", 1, 1 },
		/* Path characters. */
		{ "http://example.com/+!'()*$,=&:@", 1, 1 },
		{ "http://example.com/a:b", 1, 1 },
		{ "http://example.com//x", 1, 1 },
		{ "http://example.com///", 1, 1 },
		{ "http://example.com/a;b", 1, 0 },
		{ "http://example.com/[x]", 0, 0 },
		{ "http://example.com/x|y", 0, 0 },
		{ "http://example.com/x\\y", 0, 0 },
		{ "http://example.com/x\"y", 0, 0 },
		{ "http://example.com/x{y}", 0, 0 },
		{ "http://example.com/a b", 0, 0 },
		{ " http://example.com/", 0, 0 },
		{ "http://example.com/\t", 0, 0 },
		{ "http://example.com/\x7f", 0, 0 },
		{ "http://example.com/caf\xc3\xa9", 0, 0 },
		/* Dot segments, and segments that only look like them. */
		{ "http://example.com/.", 0, 0 },
		{ "http://example.com/..", 0, 0 },
		{ "http://example.com/./x", 0, 0 },
		{ "http://example.com/x/../y", 0, 0 },
		{ "http://example.com/x/.", 0, 0 },
		{ "http://example.com/x/..", 0, 0 },
		{ "http://example.com//..", 0, 0 },
		{ "http://example.com//.", 0, 0 },
		{ "http://example.com/x/.?a", 0, 0 },
		{ "http://example.com/x/..?", 0, 0 },
		{ "http://example.com/.../x", 1, 1 },
		{ "http://example.com/.x/x.", 1, 1 },
		{ "http://example.com/..a/a..", 1, 1 },
		/* The query: "/" and "?" allowed, dots untouched. */
		{ "http://example.com/?", 1, 0 },
		{ "http://example.com/?a/b?c", 1, 0 },
		{ "http://example.com/?/../", 1, 0 },
		{ "http://example.com/?.", 1, 0 },
		{ "http://example.com/?utm_source=1", 1, 0 },
		{ "http://example.com/?[x]", 0, 0 },
		/* Fragments are dropped. */
		{ "http://example.com/#", 0, 0 },
		{ "http://example.com/?#", 0, 0 },
		{ "http://example.com/a#b", 0, 0 },
	};
	struct urlcanon_options plain = { 0 };
	struct urlcanon *uc = canon_new(0, 0, 0), *all = canon_new(1, 1, 1);
	char *huge;

	/* The parser judges: the fast path would return the input. */
	urlcanon_set_fast_path(uc, false);
	urlcanon_set_fast_path(all, false);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *url = cases[i].url;
		size_t len = strlen(url);

		ck_assert_msg(urlcanon_is_canonical(&plain, url, len) ==
		    cases[i].plain, "%s: want %d without options", url,
		    cases[i].plain);
		for (int o = 1; o < 8; o++) {
			struct urlcanon_options opts = {
				.strip_session_ids = o & 1,
				.strip_tracking = (o >> 1) & 1,
				.sort_query = (o >> 2) & 1,
			};

			ck_assert_msg(urlcanon_is_canonical(&opts, url, len) ==
			    cases[i].opts, "%s: want %d with options %d", url,
			    cases[i].opts, o);
		}
		if (cases[i].plain) {
			char *got = canon(uc, url);

			ck_assert_msg(got && strcmp(got, url) == 0,
			    "%s: canonical form %s", url, got);
			free(got);
		}
		if (cases[i].opts) {
			char *got = canon(all, url);

			ck_assert_msg(got && strcmp(got, url) == 0,
			    "%s: canonical form with options %s", url, got);
			free(got);
		}
	}
	/* The length counts, not a NUL; an empty item (protobuf-c gives it
	 * no buffer) is no URL. */
	ck_assert(!urlcanon_is_canonical(&plain, "http://a/\0b", 11));
	ck_assert(!urlcanon_is_canonical(&plain, NULL, 0));
	ck_assert(!urlcanon_is_canonical(&plain, "", 0));
	huge = malloc(URLCANON_MAX_LEN + 1);
	memcpy(huge, "http://a/", 9);
	memset(huge + 9, 'x', URLCANON_MAX_LEN + 1 - 9);
	ck_assert(urlcanon_is_canonical(&plain, huge, URLCANON_MAX_LEN));
	ck_assert(!urlcanon_is_canonical(&plain, huge, URLCANON_MAX_LEN + 1));
	free(huge);
	urlcanon_free(uc);
	urlcanon_free(all);
}
END_TEST

/* A canonicalizer with the fast path and one without, for each option set. */
struct both {
	struct urlcanon_options opts[8];
	struct urlcanon *fast[8];
	struct urlcanon *slow[8];
	size_t inputs;
	size_t fired;		/* (input, options) pairs the scan took */
};

static void
both_init(struct both *b)
{
	memset(b, 0, sizeof(*b));
	for (int o = 0; o < 8; o++) {
		b->opts[o].strip_session_ids = o & 1;
		b->opts[o].strip_tracking = (o >> 1) & 1;
		b->opts[o].sort_query = (o >> 2) & 1;
		b->fast[o] = urlcanon_new(&b->opts[o]);
		b->slow[o] = urlcanon_new(&b->opts[o]);
		ck_assert_ptr_nonnull(b->fast[o]);
		ck_assert_ptr_nonnull(b->slow[o]);
		urlcanon_set_fast_path(b->slow[o], false);
	}
}

static void
both_free(struct both *b)
{
	for (int o = 0; o < 8; o++) {
		urlcanon_free(b->fast[o]);
		urlcanon_free(b->slow[o]);
	}
}

/*
 * Canonicalizes url[0..len) with and without the fast path under every
 * option set: the outcome, the bytes and the cause must be the same, and
 * whatever the scan takes must be its own canonical form.
 */
static void
assert_fast_is_slow(struct both *b, const char *url, size_t len)
{
	b->inputs++;
	for (int o = 0; o < 8; o++) {
		const char *fcause = NULL, *scause = NULL, *f, *s;
		size_t fn = 0, sn = 0;

		f = urlcanon_canonicalize(b->fast[o], url, len, &fn, &fcause);
		s = urlcanon_canonicalize(b->slow[o], url, len, &sn, &scause);
		/* Plain tests, as in canon(): millions of them. */
		if ((f == NULL) != (s == NULL) || (f != NULL && (fn != sn ||
		    memcmp(f, s, fn) != 0 || f[fn] != '\0')) ||
		    (f == NULL && strcmp(fcause, scause) != 0))
			ck_abort_msg("%.*s (options %d): fast %s, slow %s",
			    (int)len, url, o, f ? f : fcause, s ? s : scause);
		if (urlcanon_is_canonical(&b->opts[o], url, len)) {
			if (s == NULL || sn != len || memcmp(s, url, len) != 0)
				ck_abort_msg("%.*s (options %d): taken by the "
				    "fast path, canonical form %s", (int)len,
				    url, o, s ? s : scause);
			b->fired++;
		}
	}
}

/*
 * Every byte value in the host, the path and the query, bare and escaped,
 * against the character sets of RFC 3986 written out here, independently of
 * urlcanon.c's table; and with and without the fast path, the same results.
 */
START_TEST(test_fast_path_every_byte)
{
	static const char unreserved[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-._~";
	static const char pchar_more[] = "!$&'()*+,;=:@";
	static const char host[] = "abcdefghijklmnopqrstuvwxyz0123456789-.";
	struct urlcanon_options plain = { 0 }, all = {
		.strip_session_ids = true, .strip_tracking = true,
		.sort_query = true,
	};
	struct both b;

	both_init(&b);
	for (int c = 0; c < 256; c++) {
		int unres = c != 0 && strchr(unreserved, c) != NULL;
		int pchar = unres || (c != 0 && strchr(pchar_more, c) != NULL);
		char url[32];
		size_t n;

		/* "http://a/x" c "y": "/" and "?" only split it. */
		n = (size_t)snprintf(url, sizeof(url), "http://a/x%cy", 1);
		url[n - 2] = (char)c;
		ck_assert_msg(urlcanon_is_canonical(&plain, url, n) ==
		    (pchar || c == '/' || c == '?'), "path byte 0x%02x", c);
		ck_assert_msg(urlcanon_is_canonical(&all, url, n) ==
		    ((pchar && c != ';') || c == '/'), "path byte 0x%02x", c);
		assert_fast_is_slow(&b, url, n);

		n = (size_t)snprintf(url, sizeof(url), "http://a/?x%cy", 1);
		url[n - 2] = (char)c;
		ck_assert_msg(urlcanon_is_canonical(&plain, url, n) ==
		    (pchar || c == '/' || c == '?'), "query byte 0x%02x", c);
		ck_assert(!urlcanon_is_canonical(&all, url, n));
		assert_fast_is_slow(&b, url, n);

		/* "http://a" c "b/": "." makes two labels, "/" a path, "@"
		 * user info, ":" a bad port. */
		n = (size_t)snprintf(url, sizeof(url), "http://a%cb/", 1);
		url[n - 3] = (char)c;
		ck_assert_msg(urlcanon_is_canonical(&plain, url, n) ==
		    ((c != 0 && strchr(host, c) != NULL) || c == '/'),
		    "host byte 0x%02x", c);
		assert_fast_is_slow(&b, url, n);

		/* Escapes: kept only upper-case and not unreserved. */
		n = (size_t)snprintf(url, sizeof(url), "http://a/%%%02X?%%%02X",
		    (unsigned)c, (unsigned)c);
		ck_assert_msg(urlcanon_is_canonical(&plain, url, n) == !unres,
		    "escape %%%02X", c);
		assert_fast_is_slow(&b, url, n);
		n = (size_t)snprintf(url, sizeof(url), "http://a/%%%02x",
		    (unsigned)c);
		ck_assert_msg(urlcanon_is_canonical(&all, url, n) == (!unres &&
		    strpbrk(url + 10, "abcdef") == NULL), "escape %%%02x", c);
		assert_fast_is_slow(&b, url, n);
	}
	both_free(&b);
}
END_TEST

static const char *const url_lists[] = {
	"url_lists/ada_url_various_datasets/kasztp.txt",
	"url_lists/ada_url_various_datasets/node_files.txt",
	"url_lists/ada_url_various_datasets/userbait.txt",
	"url_lists/ut1_blacklists/all_categories_urls_HEAD.tsv",
	"url_lists/ut1_blacklists/phishing_urls_2021-03-17.txt",
};

/*
 * Calls fn on every line of every list: the line as it is, and its URL as
 * urlgen reads it (after a tab, "http://" added where there is no scheme).
 */
static void
foreach_list_url(void (*fn)(void *, const char *, size_t), void *arg)
{
	for (size_t i = 0; i < sizeof(url_lists) / sizeof(url_lists[0]); i++)
		tu_foreach_list_line(url_lists[i], fn, arg);
}

struct real_run {
	struct both *b;
	struct urlcanon *uc;	/* slow, no options: the canonical forms */
	size_t canonical;	/* canonical forms of http(s) URLs */
	size_t taken;		/* of which the fast path takes */
};

static void
real_one(void *arg, const char *url, size_t len)
{
	struct real_run *r = arg;
	const char *out, *cause;
	char *copy;
	size_t n;

	assert_fast_is_slow(r->b, url, len);
	if ((out = urlcanon_canonicalize(r->uc, url, len, &n, &cause)) == NULL)
		return;
	copy = strndup(out, n);
	assert_fast_is_slow(r->b, copy, n);
	if (strncmp(copy, "http://", 7) == 0 ||
	    strncmp(copy, "https://", 8) == 0) {
		struct urlcanon_options plain = { 0 };

		r->canonical++;
		r->taken += urlcanon_is_canonical(&plain, copy, n);
	}
	free(copy);
}

/*
 * Every line of the real lists and every canonical form, with and without
 * the fast path; and the fast path must take most canonical forms, or it
 * saves nothing.
 */
START_TEST(test_fast_path_real_urls)
{
	struct both b;
	struct real_run r = { .b = &b };

	both_init(&b);
	r.uc = canon_new(0, 0, 0);
	urlcanon_set_fast_path(r.uc, false);
	foreach_list_url(real_one, &r);
	printf("urlcanon: fast path takes %zu of %zu canonical forms of the "
	    "real lists (%.2f%%); %zu inputs, taken %zu times in %zu\n",
	    r.taken, r.canonical, 100.0 * (double)r.taken /
	    (double)r.canonical, b.inputs, b.fired, 8 * b.inputs);
	ck_assert_uint_ge(r.canonical, 180000);
	ck_assert_uint_ge(r.taken * 100, r.canonical * 95);
	urlcanon_free(r.uc);
	both_free(&b);
}
END_TEST

struct url_pool {
	char **urls;
	size_t n, cap;
};

static void
pool_add(void *arg, const char *url, size_t len)
{
	struct url_pool *pool = arg;

	if (len > 512)
		return;
	if (pool->n == pool->cap) {
		pool->cap = pool->cap ? pool->cap * 2 : 4096;
		pool->urls = realloc(pool->urls, pool->cap *
		    sizeof(*pool->urls));
		ck_assert_ptr_nonnull(pool->urls);
	}
	pool->urls[pool->n++] = strndup(url, len);
}

/* Inserts s[0..n) at u[at], u holding *len bytes of at most cap. */
static void
insert(char *u, size_t *len, size_t cap, size_t at, const char *s, size_t n)
{
	if (*len + n > cap || at > *len)
		return;
	memmove(u + at + n, u + at, *len - at);
	memcpy(u + at, s, n);
	*len += n;
}

/*
 * One random edit of u, of the kinds that move a URL across the fast
 * path's edge: bytes, case, escapes, dots, ports, delimiters.
 */
static void
mutate(uint64_t *seed, char *u, size_t *len, size_t cap)
{
	static const char bytes[] = "aZ09-._~%/?#&=;:@[]!$'()*+, \t\x7f\x80"
	    "\xff";
	static const char hex[] = "0123456789ABCDEFabcdef";
	static const char *const escapes[] = { "%41", "%7E", "%7e", "%2E",
	    "%2e", "%2D", "%5F", "%30", "%2F", "%2f", "%3F", "%23", "%25",
	    "%3B", "%C3%A9", "%c3%a9", "%00", "%", "%4", "%G1" };
	static const char *const pieces[] = { ".", "..", "/.", "/..", "./",
	    "../", "/./", "/../", "//", "/", "?", "#", "@", ":@", ";",
	    ";jsessionid=1", "?sid=1", "&utm_source=x", "&a=1", "?", "[::1]",
	    "." };
	static const char *const ports[] = { ":", ":0", ":00", ":80", ":080",
	    ":443", ":8080", ":08080", ":65535", ":65536", ":999999" };
	static const char *const schemes[] = { "HTTP://", "Http://",
	    "https://", "http://", "ftp://", "http:/", "http:", "" };
	size_t at = tu_rand_below(seed, *len + 1), host_end;
	char *auth;

	u[*len] = '\0';
	auth = strstr(u, "://");
	auth = auth ? auth + 3 : u;
	host_end = (size_t)(auth - u) + strcspn(auth, "/?#");
	switch (tu_rand_below(seed, 11)) {
	case 0:
		if (*len > 0 && at < *len)
			u[at] = bytes[tu_rand_below(seed, sizeof(bytes) - 1)];
		break;
	case 1:
		if (at < *len && isalpha((unsigned char)u[at]))
			u[at] ^= 0x20;
		break;
	case 2: {
		const char *e = escapes[tu_rand_below(seed,
		    sizeof(escapes) / sizeof(escapes[0]))];

		insert(u, len, cap, at, e, strlen(e));
		break;
	}
	case 3: {
		char e[3] = { '%', hex[tu_rand_below(seed, 22)],
		    hex[tu_rand_below(seed, 22)] };

		insert(u, len, cap, at, e, 3);
		break;
	}
	case 4: {
		const char *pc = pieces[tu_rand_below(seed,
		    sizeof(pieces) / sizeof(pieces[0]))];

		insert(u, len, cap, at, pc, strlen(pc));
		break;
	}
	case 5: {
		const char *pt = ports[tu_rand_below(seed,
		    sizeof(ports) / sizeof(ports[0]))];

		insert(u, len, cap, host_end, pt, strlen(pt));
		break;
	}
	case 6:
		/* Dots around and in the host. */
		insert(u, len, cap, tu_rand_below(seed, 2) ? host_end :
		    (size_t)(auth - u), ".", 1);
		break;
	case 7:
		if (at < *len) {
			memmove(u + at, u + at + 1, *len - at - 1);
			(*len)--;
		}
		break;
	case 8:
		*len = at;
		break;
	case 9: {
		const char *sc = schemes[tu_rand_below(seed,
		    sizeof(schemes) / sizeof(schemes[0]))];
		size_t skip = (size_t)(auth - u);

		memmove(u, u + skip, *len - skip);
		*len -= skip;
		insert(u, len, cap, 0, sc, strlen(sc));
		break;
	}
	case 10:
		insert(u, len, cap, tu_rand_below(seed, 2) ? 0 : *len, " \r\n",
		    1 + tu_rand_below(seed, 3));
		break;
	}
}

/*
 * Mutations of the real URLs and of their canonical forms (which sit at
 * the fast path's edge): with and without it, the same results.
 */
START_TEST(test_fast_path_mutated)
{
	struct url_pool pool = { 0 };
	struct both b;
	struct urlcanon *uc;
	uint64_t seed = 20250611;
	char u[1024];
	size_t base;

	both_init(&b);
	uc = canon_new(0, 0, 0);
	urlcanon_set_fast_path(uc, false);
	foreach_list_url(pool_add, &pool);
	/* Add the canonical forms. */
	base = pool.n;
	for (size_t i = 0; i < base; i++) {
		const char *out, *cause;
		size_t n;

		out = urlcanon_canonicalize(uc, pool.urls[i],
		    strlen(pool.urls[i]), &n, &cause);
		if (out != NULL)
			pool_add(&pool, out, n);
	}
	for (int k = 0; k < 1000000; k++) {
		const char *src = pool.urls[tu_rand_below(&seed, pool.n)];
		size_t len = strlen(src), edits = 1 + tu_rand_below(&seed, 3);

		memcpy(u, src, len);
		while (edits-- > 0)
			mutate(&seed, u, &len, sizeof(u) - 1);
		assert_fast_is_slow(&b, u, len);
	}
	printf("urlcanon: %zu mutated URLs, taken by the fast path %zu times "
	    "in %zu\n", b.inputs, b.fired, 8 * b.inputs);
	ck_assert_uint_ge(b.fired, 100000);
	for (size_t i = 0; i < pool.n; i++)
		free(pool.urls[i]);
	free(pool.urls);
	urlcanon_free(uc);
	both_free(&b);
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
	tcase_add_test(tc, test_fast_path_table);
	tcase_add_test(tc, test_fast_path_every_byte);
	tcase_add_test(tc, test_fast_path_real_urls);
	tcase_add_test(tc, test_fast_path_mutated);
	suite_add_tcase(s, tc);
	return s;
}
