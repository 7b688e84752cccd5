/*
 * Tests for urlhosts, the host index's keys.
 *
 * Keys are checked for what url_forget relies on, against a reference
 * that knows each URL's host because it built the URL: a key begins with
 * a host's prefix exactly when its URL is on that host (separator 0x00) or
 * on a proper subdomain of it ('.'), and with a URL prefix's key prefix
 * exactly when its URL begins with that prefix, in the same namespace.
 * The hosts are drawn from a few labels so that look-alikes meet
 * (badexample.com, example.com.evil.org, user info that reads like a
 * host), which a check on hand-picked URLs alone would miss.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbf.h"
#include "testutil.h"
#include "urlhosts.h"

static bool
starts_with(const uint8_t *s, size_t slen, const void *p, size_t plen)
{
	return slen >= plen && memcmp(s, p, plen) == 0;
}

/* s[0..len) with the bytes outside printable ASCII escaped, for messages
 * (the first 200 or so characters: keys run to 511 bytes). */
static const char *
show(const void *s, size_t len, char *buf, size_t size)
{
	const uint8_t *p = s;
	size_t at = 0;

	if (size > 208)
		size = 208;
	buf[0] = '\0';
	for (size_t i = 0; i < len && at + 5 < size; i++) {
		if (p[i] >= ' ' && p[i] < 0x7f && p[i] != '\\')
			buf[at++] = (char)p[i];
		else
			at += (size_t)snprintf(buf + at, size - at, "\\x%02x",
			    p[i]);
		buf[at] = '\0';
	}
	return buf;
}

/* The key of url in ns, through a text record as the URL writer makes. */
static size_t
url_key(uint32_t ns, const uint8_t fp[CBF_FP_LEN], const char *url,
    size_t len, uint8_t key[URLHOSTS_KEY_MAX])
{
	uint8_t rec[URLHOSTS_REC_MAX];
	size_t rlen, reclen, klen, kept;

	kept = len < URLHOSTS_TEXT_MAX ? len : URLHOSTS_TEXT_MAX;
	rlen = urlhosts_rec_encode(ns, fp, url, len, rec);
	ck_assert_uint_eq(rlen, URLHOSTS_REC_HEADER + kept);
	klen = urlhosts_rec_key(rec, &reclen, key);
	ck_assert_uint_eq(reclen, rlen);
	ck_assert_uint_le(klen, URLHOSTS_KEY_MAX);
	return klen;
}

static void
fill_fp(uint8_t fp[CBF_FP_LEN], uint64_t *seed)
{
	for (int i = 0; i < CBF_FP_LEN; i++)
		fp[i] = (uint8_t)tu_rand(seed);
}

static const struct {
	const char *url;
	const char *host;	/* NULL: none */
} host_cases[] = {
	{ "http://example.com/x", "example.com" },
	/* User info and port are not the host; case is kept. */
	{ "https://user:pw@Example.com:8080/p", "Example.com" },
	{ "http://[::1]:80/", "[::1]" },
	{ "http://[2001:db8::1]/a", "[2001:db8::1]" },
	{ "http://user@[::1]:8080/", "[::1]" },
	{ "http://a.b.example.com/?q", "a.b.example.com" },
	{ "http://example.com:8080/", "example.com" },
	/* The last '@' of the authority ends the user info. */
	{ "http://a@b@example.com/", "example.com" },
	{ "http://example.com@evil.org/", "evil.org" },
	/* An '@' or ':' in the path is not the authority's. */
	{ "http://example.com/a@evil.org/", "example.com" },
	{ "http://example.com/a:b", "example.com" },
	/* Empty labels are kept as they are. */
	{ "http://a..b.com/", "a..b.com" },
	{ "http://.example.com/", ".example.com" },
	{ "http://example.com./", "example.com." },
	{ "http://./", "." },
	/* No path after the authority: a text cut short. */
	{ "http://example.com", NULL },
	{ "http://example.com:8080", NULL },
	{ "http://user@example.com", NULL },
	/* No host. */
	{ "http:///x", NULL },
	{ "http://user@/x", NULL },
	{ "http://:80/x", NULL },
	/* No "//" after the scheme. */
	{ "example.com/x", NULL },
	{ "http:/example.com/x", NULL },
	{ "http:example.com/x", NULL },
	{ "mailto:a@example.com", NULL },
	/* An IP literal without its bracket. */
	{ "http://[::1/x", NULL },
};

START_TEST(test_url_host)
{
	for (size_t i = 0; i < sizeof(host_cases) / sizeof(host_cases[0]);
	    i++) {
		const char *url = host_cases[i].url, *want = host_cases[i].host;
		const char *host = NULL;
		size_t hlen = 0;
		bool ok = urlhosts_url_host(url, strlen(url), &host, &hlen);

		if (want == NULL) {
			ck_assert_msg(!ok, "%s: host \"%.*s\", want none", url,
			    (int)hlen, host != NULL ? host : "");
			continue;
		}
		ck_assert_msg(ok, "%s: no host, want \"%s\"", url, want);
		ck_assert_msg(hlen == strlen(want) &&
		    memcmp(host, want, hlen) == 0, "%s: host \"%.*s\", want "
		    "\"%s\"", url, (int)hlen, host, want);
		/* It points into the URL, as the callers use it. */
		ck_assert_msg(host > url && host + hlen <= url + strlen(url),
		    "%s: host not within the URL", url);
	}
}
END_TEST

static const struct {
	const char *host;
	const char *reversed;
} reverse_cases[] = {
	{ "www.example.com", "com.example.www" },
	{ "example.com", "com.example" },
	{ "com", "com" },
	{ "Example.com", "com.Example" },
	{ "[::1]", "[::1]" },
	{ "1.2.3.4", "4.3.2.1" },
	{ "a..b.com", "com.b..a" },
	{ ".example.com", "com.example." },
	{ "example.com.", ".com.example" },
	{ ".", "." },
	{ "..", ".." },
};

START_TEST(test_host_prefix)
{
	const uint32_t ns = 0x01020304;
	uint8_t out[URLHOSTS_KEY_MAX], want[URLHOSTS_KEY_MAX];
	char host[URLHOSTS_HOST_MAX + 2], b1[2048], b2[2048];

	for (size_t i = 0; i < sizeof(reverse_cases) /
	    sizeof(reverse_cases[0]); i++) {
		const char *h = reverse_cases[i].host;
		size_t hl = strlen(h);

		for (int s = 0; s < 2; s++) {
			char sep = s == 0 ? '\0' : '.';
			size_t n = urlhosts_host_prefix(ns, h, hl, sep, out);

			/* Namespace big-endian, labels reversed, sep. */
			memcpy(want, "\x01\x02\x03\x04", 4);
			memcpy(want + 4, reverse_cases[i].reversed, hl);
			want[4 + hl] = (uint8_t)sep;
			ck_assert_msg(n == 4 + hl + 1 &&
			    memcmp(out, want, n) == 0, "%s sep %d: prefix "
			    "\"%s\", want \"%s\"", h, sep, show(out, n, b1,
			    sizeof(b1)), show(want, 4 + hl + 1, b2,
			    sizeof(b2)));
		}
	}
	/* The namespace's most significant byte comes first. */
	ck_assert_uint_eq(urlhosts_host_prefix(0xa0b0c0d0, "x", 1, '\0', out),
	    6);
	ck_assert_mem_eq(out, "\xa0\xb0\xc0\xd0x\0", 6);
	/* Empty and too long hosts have none; the longest has one. */
	ck_assert_uint_eq(urlhosts_host_prefix(ns, "", 0, '\0', out), 0);
	memset(host, 'a', sizeof(host));
	for (size_t i = 63; i < sizeof(host); i += 64)
		host[i] = '.';
	ck_assert_uint_eq(urlhosts_host_prefix(ns, host, URLHOSTS_HOST_MAX,
	    '.', out), 4 + URLHOSTS_HOST_MAX + 1);
	ck_assert_uint_eq(urlhosts_host_prefix(ns, host,
	    URLHOSTS_HOST_MAX + 1, '.', out), 0);
}
END_TEST

START_TEST(test_record_and_key)
{
	const uint32_t ns = 0x01020304;
	const char *url = "http://example.com/x";
	const char *url2 = "https://user:pw@Example.com:8080/p";
	uint8_t fp[CBF_FP_LEN], rec[URLHOSTS_REC_MAX];
	uint8_t key[URLHOSTS_KEY_MAX], want[URLHOSTS_KEY_MAX];
	uint8_t pfx[URLHOSTS_KEY_MAX];
	size_t n, klen, plen, reclen;
	char b1[2048], b2[2048];

	for (int i = 0; i < CBF_FP_LEN; i++)
		fp[i] = (uint8_t)(0xf0 + i);

	/* The record: namespace and length little-endian, as the journal
	 * carries it. */
	n = urlhosts_rec_encode(ns, fp, url, strlen(url), rec);
	ck_assert_uint_eq(n, URLHOSTS_REC_HEADER + strlen(url));
	ck_assert_mem_eq(rec, "\x04\x03\x02\x01", 4);
	ck_assert_mem_eq(rec + 4, fp, CBF_FP_LEN);
	ck_assert_uint_eq(rec[4 + CBF_FP_LEN], strlen(url));
	ck_assert_uint_eq(rec[4 + CBF_FP_LEN + 1], 0);
	ck_assert_mem_eq(rec + URLHOSTS_REC_HEADER, url, strlen(url));

	/* ns | com.example | 0x00 | URL | fingerprint. */
	klen = urlhosts_rec_key(rec, &reclen, key);
	ck_assert_uint_eq(reclen, n);
	memcpy(want, "\x01\x02\x03\x04" "com.example", 15);
	want[15] = 0;
	memcpy(want + 16, url, strlen(url));
	memcpy(want + 16 + strlen(url), fp, CBF_FP_LEN);
	ck_assert_msg(klen == 16 + strlen(url) + CBF_FP_LEN &&
	    memcmp(key, want, klen) == 0, "key \"%s\", want \"%s\"",
	    show(key, klen, b1, sizeof(b1)), show(want, 16 + strlen(url) +
	    CBF_FP_LEN, b2, sizeof(b2)));
	ck_assert_ptr_eq(urlhosts_key_fp(key, klen), key + klen - CBF_FP_LEN);

	/* Its host's prefix and URL prefixes match it; a subdomain's,
	 * another namespace's and a look-alike's do not. */
	plen = urlhosts_host_prefix(ns, "example.com", 11, '\0', pfx);
	ck_assert(starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns, "com", 3, '.', pfx);
	ck_assert(starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns, "example.com", 11, '.', pfx);
	ck_assert(!starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns, "com", 3, '\0', pfx);
	ck_assert(!starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns + 1, "example.com", 11, '\0', pfx);
	ck_assert(!starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns, "xample.com", 10, '\0', pfx);
	ck_assert(!starts_with(key, klen, pfx, plen));
	plen = urlhosts_url_prefix(ns, url, strlen(url), pfx);
	ck_assert_uint_eq(plen, 16 + strlen(url));
	ck_assert(starts_with(key, klen, pfx, plen));
	plen = urlhosts_url_prefix(ns, "http://example.com/", 19, pfx);
	ck_assert_uint_eq(plen, 16 + 19);
	ck_assert(starts_with(key, klen, pfx, plen));
	plen = urlhosts_url_prefix(ns, "https://example.com/", 20, pfx);
	ck_assert_uint_gt(plen, 0);
	ck_assert(!starts_with(key, klen, pfx, plen));
	plen = urlhosts_url_prefix(ns, "http://example.com/xy", 21, pfx);
	ck_assert_uint_gt(plen, 0);
	ck_assert(!starts_with(key, klen, pfx, plen));
	/* A prefix without a path after its host has no key prefix. */
	ck_assert_uint_eq(urlhosts_url_prefix(ns, "http://example.com", 18,
	    pfx), 0);
	ck_assert_uint_eq(urlhosts_url_prefix(ns, "http://exam", 11, pfx), 0);

	/* User info, port and case: the host as the URL spells it. */
	klen = url_key(ns, fp, url2, strlen(url2), key);
	memcpy(want, "\x01\x02\x03\x04" "com.Example", 15);
	want[15] = 0;
	memcpy(want + 16, url2, strlen(url2));
	memcpy(want + 16 + strlen(url2), fp, CBF_FP_LEN);
	ck_assert_msg(klen == 16 + strlen(url2) + CBF_FP_LEN &&
	    memcmp(key, want, klen) == 0, "key \"%s\", want \"%s\"",
	    show(key, klen, b1, sizeof(b1)), show(want, 16 + strlen(url2) +
	    CBF_FP_LEN, b2, sizeof(b2)));
	plen = urlhosts_host_prefix(ns, "Example.com", 11, '\0', pfx);
	ck_assert(starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns, "example.com", 11, '\0', pfx);
	ck_assert(!starts_with(key, klen, pfx, plen));
	plen = urlhosts_url_prefix(ns, "https://user:pw@Example.com:8080/",
	    33, pfx);
	ck_assert_uint_gt(plen, 0);
	ck_assert(starts_with(key, klen, pfx, plen));
	plen = urlhosts_url_prefix(ns, "https://Example.com:8080/", 25, pfx);
	ck_assert_uint_gt(plen, 0);
	ck_assert(!starts_with(key, klen, pfx, plen));

	/* An IP literal, and a URL with no path: not indexed. */
	klen = url_key(ns, fp, "http://[::1]:80/", 16, key);
	ck_assert_uint_eq(klen, 4 + 5 + 1 + 16 + CBF_FP_LEN);
	plen = urlhosts_host_prefix(ns, "[::1]", 5, '\0', pfx);
	ck_assert(starts_with(key, klen, pfx, plen));
	ck_assert_uint_eq(url_key(ns, fp, "http://example.com", 18, key), 0);
	klen = url_key(ns, fp, "http://a.b.example.com/?q", 25, key);
	plen = urlhosts_host_prefix(ns, "example.com", 11, '.', pfx);
	ck_assert(starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns, "b.example.com", 13, '.', pfx);
	ck_assert(starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns, "a.b.example.com", 15, '\0', pfx);
	ck_assert(starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns, "a.b.example.com", 15, '.', pfx);
	ck_assert(!starts_with(key, klen, pfx, plen));
	/* Empty labels: "a..b.com" is a subdomain of ".b.com" and of
	 * "b.com" (by its empty label), not of "a.b.com". */
	klen = url_key(ns, fp, "http://a..b.com/", 16, key);
	plen = urlhosts_host_prefix(ns, "b.com", 5, '.', pfx);
	ck_assert(starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns, ".b.com", 6, '.', pfx);
	ck_assert(starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns, "a.b.com", 7, '\0', pfx);
	ck_assert(!starts_with(key, klen, pfx, plen));
	plen = urlhosts_host_prefix(ns, "a..b.com", 8, '\0', pfx);
	ck_assert(starts_with(key, klen, pfx, plen));
}
END_TEST

/*
 * The property test's hosts: few labels, so that a host, its subdomains
 * and its look-alikes ("badexample.com", "xexample.com", "example.co",
 * "example.com.evil.org", "com") all occur, and some empty labels.
 */
static const char *labels[] = {
	"example", "example", "badexample", "xexample", "exampl", "com",
	"com", "co", "org", "evil", "www", "a", "",
};
static const char *literals[] = {
	"[::1]", "[2001:db8::1]", "[::ffff:1.2.3.4]", "1.2.3.4", "4.3.2.1",
};
/* User info that reads like a host must not count as one. */
static const char *userinfos[] = {
	"", "", "", "", "user@", "u:p@", "example.com@", "www.example.com:80@",
};
static const char *ports[] = { "", "", ":80", ":8080" };
/* Paths are a few of these: URLs share prefixes of every length. */
static const char *segments[] = {
	"/", "/", "/a", "/a", "/ab", "/b", "?x=1", "#f", "/example.com",
	"/@evil.org", "/a:b",
};
static const uint32_t namespaces[] = { 0, 1, 7, 0x0100, 0x01000001 };

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))
#define PICK(a, seed)	((a)[tu_rand_below((seed), NELEM(a))])

#define NURLS		3000
#define NAUTHS		150
#define NHOSTQ		400
#define NPREFIXQ	400

/* Where URLs are: scheme, user info, host and port, many URLs each. */
struct gen_auth {
	char host[64];
	char text[128];
};

struct gen_url {
	uint32_t ns;
	char host[64];
	char url[160];
	size_t len;
	size_t path_at;		/* where the path begins */
	uint8_t fp[CBF_FP_LEN];
	uint8_t key[URLHOSTS_KEY_MAX];
	size_t klen;
};

static void
random_host(uint64_t *seed, char *out, size_t size)
{
	do {
		size_t at = 0;
		int n;

		if (tu_rand_below(seed, 12) == 0) {
			snprintf(out, size, "%s", PICK(literals, seed));
			return;
		}
		n = 1 + (int)tu_rand_below(seed, 4);
		out[0] = '\0';
		for (int i = 0; i < n; i++)
			at += (size_t)snprintf(out + at, size - at, "%s%s",
			    i > 0 ? "." : "", PICK(labels, seed));
	} while (out[0] == '\0');
}

static void
random_auth(uint64_t *seed, struct gen_auth *a)
{
	random_host(seed, a->host, sizeof(a->host));
	snprintf(a->text, sizeof(a->text), "%s://%s%s%s",
	    tu_rand_below(seed, 2) ? "http" : "https", PICK(userinfos, seed),
	    a->host, PICK(ports, seed));
}

static void
random_url(uint64_t *seed, const struct gen_auth *a, struct gen_url *u)
{
	int n, nseg = (int)tu_rand_below(seed, 4);

	u->ns = PICK(namespaces, seed);
	memcpy(u->host, a->host, sizeof(u->host));
	n = snprintf(u->url, sizeof(u->url), "%s/", a->text);
	u->path_at = (size_t)n - 1;
	for (int i = 0; i < nseg; i++)
		n += snprintf(u->url + n, sizeof(u->url) - (size_t)n, "%s",
		    PICK(segments, seed));
	u->len = (size_t)n;
	fill_fp(u->fp, seed);
	u->klen = url_key(u->ns, u->fp, u->url, u->len, u->key);
}

/* Whether h is a proper subdomain of of, by the text alone. */
static bool
naive_subdomain(const char *h, const char *of)
{
	size_t hl = strlen(h), ol = strlen(of);

	return hl > ol && h[hl - ol - 1] == '.' && strcmp(h + hl - ol, of) == 0;
}

START_TEST(test_prefixes_against_reference)
{
	uint64_t seed = 20260301;
	struct gen_url *u = calloc(NURLS, sizeof(*u));
	struct gen_auth *a = calloc(NAUTHS, sizeof(*a));
	uint8_t pfx[URLHOSTS_KEY_MAX];
	char h[64], b1[2048];
	size_t same = 0, sub = 0, pre = 0, other = 0;

	ck_assert_ptr_nonnull(u);
	ck_assert_ptr_nonnull(a);
	for (size_t i = 0; i < NAUTHS; i++)
		random_auth(&seed, &a[i]);
	for (size_t i = 0; i < NURLS; i++) {
		const char *host;
		size_t hlen, hl;

		random_url(&seed, &a[tu_rand_below(&seed, NAUTHS)], &u[i]);
		hl = strlen(u[i].host);
		/* Its host, as the URL was built; the key carries both. */
		ck_assert_msg(urlhosts_url_host(u[i].url, u[i].len, &host,
		    &hlen) && hlen == hl && memcmp(host, u[i].host, hl) == 0,
		    "%s: host \"%.*s\", built with \"%s\"", u[i].url,
		    (int)hlen, host, u[i].host);
		ck_assert_msg(u[i].klen == 4 + hl + 1 + u[i].len + CBF_FP_LEN,
		    "%s: key of %zu bytes", u[i].url, u[i].klen);
		ck_assert_mem_eq(urlhosts_key_fp(u[i].key, u[i].klen),
		    u[i].fp, CBF_FP_LEN);
		ck_assert_mem_eq(u[i].key + 4 + hl + 1, u[i].url, u[i].len);
	}

	for (size_t q = 0; q < NHOSTQ; q++) {
		uint32_t ns = PICK(namespaces, &seed);
		uint8_t p0[URLHOSTS_KEY_MAX], pd[URLHOSTS_KEY_MAX];
		size_t l0, ld;

		/* Half the hosts stored, half any the labels make. */
		if (tu_rand_below(&seed, 2))
			snprintf(h, sizeof(h), "%s",
			    u[tu_rand_below(&seed, NURLS)].host);
		else
			random_host(&seed, h, sizeof(h));
		l0 = urlhosts_host_prefix(ns, h, strlen(h), '\0', p0);
		ld = urlhosts_host_prefix(ns, h, strlen(h), '.', pd);
		ck_assert_uint_eq(l0, 4 + strlen(h) + 1);
		ck_assert_uint_eq(ld, l0);
		for (size_t i = 0; i < NURLS; i++) {
			bool want0 = u[i].ns == ns && strcmp(u[i].host, h) == 0;
			bool wantd = u[i].ns == ns &&
			    naive_subdomain(u[i].host, h);
			bool got0 = starts_with(u[i].key, u[i].klen, p0, l0);
			bool gotd = starts_with(u[i].key, u[i].klen, pd, ld);

			if (got0 != want0 || gotd != wantd)
				ck_abort_msg("host \"%s\" ns %u, URL %s (host "
				    "\"%s\", ns %u): host prefix %s, want %s; "
				    "subdomain prefix %s, want %s; key %s", h,
				    ns, u[i].url, u[i].host, u[i].ns,
				    got0 ? "matches" : "does not",
				    want0 ? "match" : "none",
				    gotd ? "matches" : "does not",
				    wantd ? "match" : "none",
				    show(u[i].key, u[i].klen, b1, sizeof(b1)));
			same += want0;
			sub += wantd;
		}
	}

	for (size_t q = 0; q < NPREFIXQ; q++) {
		const struct gen_url *from = &u[tu_rand_below(&seed, NURLS)];
		/* Through the host and at least the path's first byte. */
		size_t len = from->path_at + 1 + tu_rand_below(&seed,
		    from->len - from->path_at);
		uint32_t ns = tu_rand_below(&seed, 2) ? from->ns :
		    PICK(namespaces, &seed);
		size_t plen = urlhosts_url_prefix(ns, from->url, len, pfx);

		ck_assert_msg(plen == 4 + strlen(from->host) + 1 + len,
		    "prefix %.*s: key prefix of %zu bytes", (int)len,
		    from->url, plen);
		for (size_t i = 0; i < NURLS; i++) {
			bool want = u[i].ns == ns && u[i].len >= len &&
			    memcmp(u[i].url, from->url, len) == 0;
			bool got = starts_with(u[i].key, u[i].klen, pfx, plen);

			if (got != want)
				ck_abort_msg("prefix \"%.*s\" ns %u, URL %s "
				    "ns %u: key %s, want %s", (int)len,
				    from->url, ns, u[i].url, u[i].ns,
				    got ? "matches" : "does not",
				    want ? "a match" : "none");
			pre += want && &u[i] != from;
			other += !want && u[i].ns == ns && strncmp(u[i].url,
			    from->url, from->path_at) == 0;
		}
	}
	/* The cases that matter occurred: the test cannot pass vacuously. */
	ck_assert_uint_gt(same, NHOSTQ);
	ck_assert_uint_gt(sub, NHOSTQ);
	ck_assert_uint_gt(pre, NPREFIXQ);
	ck_assert_uint_gt(other, NPREFIXQ);
	free(u);
	free(a);
}
END_TEST

/* A host of len bytes: labels of 63 'a'..'z' letters, dot-separated. */
static void
long_host(char *out, size_t len)
{
	for (size_t i = 0; i < len; i++)
		out[i] = i % 64 == 63 ? '.' : (char)('a' + i % 26);
	if (len > 0 && out[len - 1] == '.')
		out[len - 1] = 'z';
	out[len] = '\0';
}

START_TEST(test_long_texts)
{
	const uint32_t ns = 3;
	static char url[2 * URLHOSTS_REC_MAX], host[URLHOSTS_HOST_MAX + 8];
	uint8_t fp[CBF_FP_LEN], key[URLHOSTS_KEY_MAX], pfx[URLHOSTS_KEY_MAX];
	uint8_t rec[URLHOSTS_REC_MAX];
	size_t n, klen, plen, reclen, hl;
	uint64_t seed = 77;

	fill_fp(fp, &seed);

	/* Around the cut, and far past it: the record keeps
	 * URLHOSTS_TEXT_MAX bytes, the key what its host leaves of them. */
	for (size_t len = URLHOSTS_TEXT_MAX - 40; len < URLHOSTS_TEXT_MAX +
	    300; len++) {
		const char *head = "http://www.example.com/";
		size_t want_url;

		hl = strlen("www.example.com");
		memset(url, 'p', len);
		memcpy(url, head, strlen(head));
		n = urlhosts_rec_encode(ns, fp, url, len, rec);
		ck_assert_uint_eq(n, URLHOSTS_REC_HEADER + (len <
		    URLHOSTS_TEXT_MAX ? len : URLHOSTS_TEXT_MAX));
		ck_assert_uint_le(n, URLHOSTS_REC_MAX);
		ck_assert_uint_eq(rec[4 + CBF_FP_LEN] |
		    rec[4 + CBF_FP_LEN + 1] << 8, n - URLHOSTS_REC_HEADER);
		klen = urlhosts_rec_key(rec, &reclen, key);
		ck_assert_uint_eq(reclen, n);
		want_url = len < URLHOSTS_TEXT_MAX - hl ? len :
		    URLHOSTS_TEXT_MAX - hl;
		ck_assert_msg(klen == 4 + hl + 1 + want_url + CBF_FP_LEN,
		    "URL of %zu bytes: key of %zu", len, klen);
		ck_assert_uint_le(klen, URLHOSTS_KEY_MAX);
		ck_assert_mem_eq(key + 4 + hl + 1, url, want_url);
		ck_assert_mem_eq(urlhosts_key_fp(key, klen), fp, CBF_FP_LEN);
		plen = urlhosts_host_prefix(ns, "www.example.com", hl, '\0',
		    pfx);
		ck_assert(starts_with(key, klen, pfx, plen));
		plen = urlhosts_host_prefix(ns, "example.com", 11, '.', pfx);
		ck_assert(starts_with(key, klen, pfx, plen));
		plen = urlhosts_url_prefix(ns, url, 100, pfx);
		ck_assert_uint_gt(plen, 0);
		ck_assert(starts_with(key, klen, pfx, plen));
		/* The longest prefix the index keeps, and one byte more. */
		plen = urlhosts_url_prefix(ns, url, want_url, pfx);
		ck_assert_uint_gt(plen, 0);
		ck_assert(starts_with(key, klen, pfx, plen));
		if (len > URLHOSTS_TEXT_MAX - hl)
			ck_assert_uint_eq(urlhosts_url_prefix(ns, url,
			    want_url + 1, pfx), 0);
	}

	/* A host longer than the index finds: no key. */
	long_host(host, URLHOSTS_HOST_MAX + 1);
	n = (size_t)snprintf(url, sizeof(url), "http://%s/", host);
	ck_assert_uint_eq(url_key(ns, fp, url, n, key), 0);
	ck_assert_uint_eq(urlhosts_host_prefix(ns, host, strlen(host), '\0',
	    pfx), 0);
	ck_assert_uint_eq(urlhosts_url_prefix(ns, url, n, pfx), 0);

	/* A host past the text kept (long user info): no key. */
	memset(url, 0, sizeof(url));
	memcpy(url, "http://", 7);
	memset(url + 7, 'u', 600);
	n = 7 + 600 + (size_t)snprintf(url + 607, sizeof(url) - 607,
	    "@example.com/");
	ck_assert_uint_eq(url_key(ns, fp, url, n, key), 0);
}
END_TEST

Suite *urlhosts_suite(void);

Suite *
urlhosts_suite(void)
{
	Suite *s = suite_create("urlhosts");
	TCase *tc = tcase_create("urlhosts");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_url_host);
	tcase_add_test(tc, test_host_prefix);
	tcase_add_test(tc, test_record_and_key);
	tcase_add_test(tc, test_prefixes_against_reference);
	tcase_add_test(tc, test_long_texts);
	suite_add_tcase(s, tc);
	return s;
}
