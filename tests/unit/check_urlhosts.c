/*
 * Tests for urlhosts (the host index's keys) and urlhostrun (its runs of
 * keys in the store).
 *
 * Keys are checked for what url_forget relies on, against a reference
 * that knows each URL's host because it built the URL: a key begins with
 * a host's prefix exactly when its URL is on that host (separator 0x00) or
 * on a proper subdomain of it ('.'), and with a URL prefix's key prefix
 * exactly when its URL begins with that prefix, in the same namespace.
 * The hosts are drawn from a few labels so that look-alikes meet
 * (badexample.com, example.com.evil.org, user info that reads like a
 * host), which a check on hand-picked URLs alone would miss.
 *
 * Runs are written to a real store in a temporary directory, read back
 * after a reopen with a decoder written here from the layout urlhostrun.h
 * documents, and searched from random keys against a sorted reference.
 * Damaged directories and blocks, written by hand, must fail cleanly.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbf.h"
#include "le.h"
#include "store.h"
#include "testutil.h"
#include "urlhostrun.h"
#include "urlhosts.h"

/* urlhostrun.h: a run's directory is its block UINT32_MAX. */
#define DIR_BLOCK	UINT32_MAX

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

/*
 * Every host up to URLHOSTS_HOST_MAX bytes ("the longest host the index
 * finds", which url_forget accepts) must give its URLs a key under its
 * host prefix, or a forget of that host misses them while it says it
 * found every URL.
 */
START_TEST(test_longest_hosts_indexed)
{
	static char url[URLHOSTS_REC_MAX], host[URLHOSTS_HOST_MAX + 1];
	uint8_t fp[CBF_FP_LEN], key[URLHOSTS_KEY_MAX], pfx[URLHOSTS_KEY_MAX];
	size_t n, klen, plen;
	uint64_t seed = 78;

	fill_fp(fp, &seed);
	for (size_t hl = 1; hl <= URLHOSTS_HOST_MAX; hl++) {
		long_host(host, hl);
		n = (size_t)snprintf(url, sizeof(url), "http://%s/", host);
		klen = url_key(5, fp, url, n, key);
		plen = urlhosts_host_prefix(5, host, hl, '\0', pfx);
		ck_assert_uint_eq(plen, 4 + hl + 1);
		ck_assert_msg(klen > 0 && starts_with(key, klen, pfx, plen),
		    "http://<host of %zu bytes>/ (a URL of %zu bytes): key of "
		    "%zu bytes, not under its host's prefix", hl, n, klen);
	}
}
END_TEST

/* Runs: reference keys, sorted by bytes, shorter first on a tie. */
struct rkey {
	uint8_t *p;
	size_t len;
};

static int
rkey_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c != 0 ? c : (alen > blen) - (alen < blen);
}

static int
rkey_qsort(const void *a, const void *b)
{
	const struct rkey *x = a, *y = b;

	return rkey_cmp(x->p, x->len, y->p, y->len);
}

/* The first reference key at least p[0..len), or n. */
static size_t
lower_bound(const struct rkey *ref, size_t n, const uint8_t *p, size_t len)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rkey_cmp(ref[mid].p, ref[mid].len, p, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const uint8_t tail_bytes[] = {
	0x00, 0x01, '.', '/', 'a', 'b', 0x7f, 0x80, 0xfe, 0xff,
};

/* A key much like the index's: ns, host, separator, then random bytes. */
static size_t
random_key(uint64_t *seed, size_t tail_min, size_t tail_max,
    uint8_t out[URLHOSTS_KEY_MAX])
{
	uint32_t ns = PICK(namespaces, seed);
	size_t len, tail;
	char h[64];

	random_host(seed, h, sizeof(h));
	out[0] = (uint8_t)(ns >> 24);
	out[1] = (uint8_t)(ns >> 16);
	out[2] = (uint8_t)(ns >> 8);
	out[3] = (uint8_t)ns;
	memcpy(out + 4, h, strlen(h));
	len = 4 + strlen(h);
	out[len++] = tu_rand_below(seed, 4) ? 0x00 : '.';
	tail = tail_min + tu_rand_below(seed, tail_max - tail_min + 1);
	for (size_t i = 0; i < tail && len < URLHOSTS_KEY_MAX; i++)
		out[len++] = PICK(tail_bytes, seed);
	return len;
}

static const struct {
	uint32_t id;
	size_t n;
	size_t tail_min, tail_max;
	bool many_blocks;
} run_specs[] = {
	{ 1, 0, 0, 0, false },			/* empty */
	{ 2, 1, 0, 10, false },
	{ 3, 300, 600, 600, false },		/* every key 511 bytes */
	{ 7, 300, 0, 40, false },
	/* Ids whose bytes differ in order: big-endian in the store. */
	{ 0x0100, 4000, 100, 480, true },
	{ 0x01000000, 40000, 0, 30, true },
};
#define NRUNS	NELEM(run_specs)

struct run_ref {
	struct rkey *k;
	size_t n;
	uint8_t *bytes;
	struct hostrun written;		/* the writer's */
	size_t *first;			/* block b's first key: k[first[b]] */
	uint32_t nblocks;
};

static void
build_ref(struct run_ref *r, size_t i, uint64_t *seed)
{
	size_t total = run_specs[i].n, u = 0;

	r->bytes = malloc(total * URLHOSTS_KEY_MAX + 1);
	r->k = calloc(total + 1, sizeof(*r->k));
	ck_assert_ptr_nonnull(r->bytes);
	ck_assert_ptr_nonnull(r->k);
	for (size_t j = 0; j < total; j++) {
		r->k[j].p = r->bytes + j * URLHOSTS_KEY_MAX;
		r->k[j].len = random_key(seed, run_specs[i].tail_min,
		    run_specs[i].tail_max, r->k[j].p);
	}
	qsort(r->k, total, sizeof(*r->k), rkey_qsort);
	for (size_t j = 0; j < total; j++)
		if (u == 0 || rkey_cmp(r->k[u - 1].p, r->k[u - 1].len,
		    r->k[j].p, r->k[j].len) != 0)
			r->k[u++] = r->k[j];
	r->n = u;
}

/* Writes r's keys, each given one to three times, as run id in txn. */
static void
write_run(struct store_txn *txn, uint32_t id, struct run_ref *r,
    uint64_t *seed)
{
	struct hostrun_writer *w = malloc(sizeof(*w));
	size_t added = 0;

	ck_assert_ptr_nonnull(w);
	hostrun_writer_init(w, txn, id);
	for (size_t j = 0; j < r->n; j++) {
		int times = 1 + (int)tu_rand_below(seed, 3);

		for (int t = 0; t < times; t++, added++)
			ck_assert_int_eq(hostrun_writer_add(w, r->k[j].p,
			    r->k[j].len), STORE_OK);
	}
	if (r->n > 1)
		ck_assert_uint_gt(added, r->n);	/* duplicates were given */
	ck_assert_int_eq(hostrun_writer_finish(w), STORE_OK);
	ck_assert_uint_eq(w->run.id, id);
	ck_assert_uint_eq(w->run.nkeys, r->n);
	r->written = w->run;
	free(w);
}

static void
run_key(uint8_t k[8], uint32_t id, uint32_t block)
{
	for (int i = 0; i < 4; i++) {
		k[i] = (uint8_t)(id >> (24 - 8 * i));
		k[4 + i] = (uint8_t)(block >> (24 - 8 * i));
	}
}

static size_t
common_prefix(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t s = 0;

	while (s < alen && s < blen && a[s] == b[s])
		s++;
	return s;
}

static uint32_t
le16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

/*
 * Reads run id's blocks and directory as urlhostrun.h lays them out and
 * checks them against r: every key in order, prefix-compressed within its
 * block, blocks within URLHOSTRUN_BLOCK, the directory's counts and
 * fences.  Notes each block's first key in r->first.
 */
static void
check_layout(struct store_txn *txn, uint32_t id, struct run_ref *r)
{
	struct store_val v;
	uint8_t k[8], key[URLHOSTS_KEY_MAX];
	size_t at, i = 0, klen = 0, cap = 16;
	uint32_t b;

	free(r->first);
	r->first = malloc(cap * sizeof(*r->first));
	ck_assert_ptr_nonnull(r->first);
	for (b = 0;; b++) {
		const uint8_t *p;
		uint32_t count;

		run_key(k, id, b);
		if (store_get(txn, STORE_URL_HOSTS, k, 8, &v) == STORE_NOTFOUND)
			break;
		p = v.data;
		ck_assert_uint_ge(v.len, 4);
		ck_assert_msg(v.len <= URLHOSTRUN_BLOCK, "run %u block %u: %zu "
		    "bytes", id, b, v.len);
		count = le_get32(p);
		ck_assert_uint_gt(count, 0);
		if (b == cap) {
			cap *= 2;
			r->first = realloc(r->first, cap * sizeof(*r->first));
			ck_assert_ptr_nonnull(r->first);
		}
		r->first[b] = i;
		at = 4;
		for (uint32_t c = 0; c < count; c++, i++) {
			uint32_t shared, rest;

			ck_assert_uint_le(at + 4, v.len);
			shared = le16(p + at);
			rest = le16(p + at + 2);
			/* A block's first key stands alone. */
			if (c == 0)
				ck_assert_uint_eq(shared, 0);
			ck_assert_uint_le(shared, klen);
			ck_assert_uint_le(shared + rest, URLHOSTS_KEY_MAX);
			ck_assert_uint_le(at + 4 + rest, v.len);
			memcpy(key + shared, p + at + 4, rest);
			klen = shared + rest;
			at += 4 + rest;
			ck_assert_msg(i < r->n, "run %u: more keys than %zu",
			    id, r->n);
			ck_assert_msg(klen == r->k[i].len && memcmp(key,
			    r->k[i].p, klen) == 0, "run %u block %u: key %zu "
			    "differs", id, b, i);
			/* Compressed: it shares all it can. */
			if (c > 0)
				ck_assert_uint_eq(shared, common_prefix(
				    r->k[i - 1].p, r->k[i - 1].len, key,
				    klen));
		}
		ck_assert_uint_eq(at, v.len);
	}
	ck_assert_uint_eq(i, r->n);
	r->nblocks = b;

	run_key(k, id, DIR_BLOCK);
	ck_assert_int_eq(store_get(txn, STORE_URL_HOSTS, k, 8, &v), STORE_OK);
	ck_assert_uint_ge(v.len, 8);
	ck_assert_uint_eq(le_get32(v.data), r->n);
	ck_assert_uint_eq(le_get32((const uint8_t *)v.data + 4), b);
	at = 8;
	for (b = 0; b < r->nblocks; b++) {
		const uint8_t *p = v.data;
		const struct rkey *f = &r->k[r->first[b]];

		ck_assert_uint_le(at + 2, v.len);
		ck_assert_uint_eq(le16(p + at), f->len);
		ck_assert_uint_le(at + 2 + f->len, v.len);
		ck_assert_mem_eq(p + at + 2, f->p, f->len);
		at += 2 + f->len;
	}
	ck_assert_uint_eq(at, v.len);
}

static struct store *
open_store(const char *dir)
{
	/* No fsync: nothing here outlives the test. */
	struct store_options o = { .dir = dir, .map_size = 256 << 20,
	    .sync = STORE_SYNC_NONE };
	char *cause = NULL;
	struct store *st = store_open(&o, &cause);

	ck_assert_msg(st != NULL, "store_open: %s", cause);
	return st;
}

static struct hostrun *
find_run(struct hostrun *runs, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (runs[i].id == id)
			return &runs[i];
	return NULL;
}

static void
free_runs(struct hostrun *runs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		hostrun_free(&runs[i]);
	free(runs);
}

/*
 * Loads every run from txn and checks it against what was written, but
 * for refs[gone], which must be absent (gone >= NRUNS: none).  Returns the
 * runs, *n of them.
 */
/* hostrun_load, for runs that all have their directory. */
static int
load_runs(struct store_txn *txn, struct hostrun **runs, size_t *n)
{
	uint32_t next_id;
	size_t orphans;
	int rc = hostrun_load(txn, runs, n, &next_id, &orphans);

	if (rc == STORE_OK) {
		ck_assert_uint_eq(orphans, 0);
		for (size_t i = 0; i < *n; i++)
			ck_assert_uint_gt(next_id, (*runs)[i].id);
	}
	return rc;
}

static struct hostrun *
load_and_check(struct store_txn *txn, struct run_ref *refs, size_t gone,
    size_t *n)
{
	struct hostrun *runs = NULL;

	*n = 0;
	ck_assert_int_eq(load_runs(txn, &runs, n), STORE_OK);
	ck_assert_uint_eq(*n, gone < NRUNS ? NRUNS - 1 : NRUNS);
	for (size_t i = 0; i < NRUNS; i++) {
		const struct hostrun *r = find_run(runs, *n, run_specs[i].id);
		const struct hostrun *w = &refs[i].written;

		if (i == gone) {
			ck_assert_msg(r == NULL, "run %u deleted, yet loaded",
			    run_specs[i].id);
			continue;
		}
		ck_assert_msg(r != NULL, "run %u not loaded", run_specs[i].id);
		ck_assert_uint_eq(r->nkeys, refs[i].n);
		ck_assert_uint_eq(r->nkeys, w->nkeys);
		ck_assert_uint_eq(r->nblocks, refs[i].nblocks);
		ck_assert_uint_eq(r->nblocks, w->nblocks);
		for (uint32_t b = 0; b < r->nblocks; b++) {
			const struct rkey *f = &refs[i].k[refs[i].first[b]];

			ck_assert_uint_eq(r->fence_off[b + 1] - r->fence_off[b],
			    f->len);
			ck_assert_mem_eq(r->fences + r->fence_off[b], f->p,
			    f->len);
		}
	}
	return runs;
}

/* Reads the whole run from its first key: the reference, in order. */
static void
check_full_scan(struct store_txn *txn, const struct hostrun *run,
    const struct run_ref *r)
{
	struct hostrun_iter it;
	bool done = false;
	size_t i = 0;

	ck_assert_int_eq(hostrun_iter_init(&it, txn, run, NULL, 0), STORE_OK);
	for (;;) {
		ck_assert_int_eq(hostrun_iter_next(&it, &done), STORE_OK);
		if (done)
			break;
		ck_assert_msg(i < r->n, "run %u: more than its %zu keys",
		    run->id, r->n);
		ck_assert_msg(it.klen == r->k[i].len && memcmp(it.key,
		    r->k[i].p, it.klen) == 0, "run %u: key %zu differs",
		    run->id, i);
		i++;
	}
	ck_assert_msg(i == r->n, "run %u: %zu keys read, %zu written",
	    run->id, i, r->n);
	hostrun_iter_free(&it);
}

/* A search key: the run's keys, fences, their neighbours, and others. */
static size_t
make_probe(uint64_t *seed, const struct run_ref *r,
    uint8_t out[URLHOSTS_KEY_MAX])
{
	int kind = (int)tu_rand_below(seed, 10);
	const struct rkey *k;
	size_t len;

	if (r->n == 0 && kind < 7)
		kind = 0;
	switch (kind) {
	case 0:
	case 1:
		return random_key(seed, 0, 60, out);
	case 7:
		return 0;
	case 8:
		memset(out, 0xff, URLHOSTS_KEY_MAX);
		return URLHOSTS_KEY_MAX;
	case 9:
		memset(out, 0x00, 4);
		return 4;
	}
	if (kind == 6 && r->nblocks > 0)
		k = &r->k[r->first[tu_rand_below(seed, r->nblocks)]];
	else
		k = &r->k[tu_rand_below(seed, r->n)];
	memcpy(out, k->p, k->len);
	len = k->len;
	switch (tu_rand_below(seed, 5)) {
	case 0:
		break;			/* the key itself */
	case 1:				/* just after it */
		if (len < URLHOSTS_KEY_MAX)
			out[len++] = 0x00;
		break;
	case 2:				/* just before it */
		if (len > 0)
			len--;
		break;
	case 3:
		if (len > 0 && out[len - 1] < 0xff)
			out[len - 1]++;
		break;
	case 4:
		if (len > 0 && out[len - 1] > 0x00)
			out[len - 1]--;
		break;
	}
	return len;
}

/*
 * From random keys: the iterator starts at the first key of the last
 * block whose first key is at most the probe ("the first block that may
 * hold" it), goes on in order, and reaches the first key at least the
 * probe: no such key is skipped.
 */
static void
check_probes(struct store_txn *txn, const struct hostrun *run,
    const struct run_ref *r, uint64_t *seed, size_t nprobes)
{
	uint8_t probe[URLHOSTS_KEY_MAX];
	char b1[2048], b2[2048];

	for (size_t q = 0; q < nprobes; q++) {
		size_t plen = make_probe(seed, r, probe);
		size_t lb = lower_bound(r->k, r->n, probe, plen), start = 0;
		struct hostrun_iter it;
		bool done = false;

		for (uint32_t b = 0; b < r->nblocks; b++)
			if (rkey_cmp(r->k[r->first[b]].p, r->k[r->first[b]].len,
			    probe, plen) <= 0)
				start = r->first[b];
		ck_assert_int_eq(hostrun_iter_init(&it, txn, run, probe, plen),
		    STORE_OK);
		for (size_t i = start;; i++) {
			ck_assert_int_eq(hostrun_iter_next(&it, &done),
			    STORE_OK);
			if (done) {
				ck_assert_msg(lb == r->n, "run %u, probe %s: "
				    "the run ended; key %zu of %zu (%s) is at "
				    "least the probe", run->id, show(probe,
				    plen, b1, sizeof(b1)), lb, r->n,
				    lb < r->n ? show(r->k[lb].p, r->k[lb].len,
				    b2, sizeof(b2)) : "");
				ck_assert_uint_eq(i, r->n);
				break;
			}
			ck_assert_msg(i < r->n, "run %u: more than its %zu "
			    "keys", run->id, r->n);
			if (it.klen != r->k[i].len || memcmp(it.key, r->k[i].p,
			    it.klen) != 0) {
				size_t at = lower_bound(r->k, r->n, it.key,
				    it.klen);

				ck_abort_msg("run %u, probe %s: read %s (key "
				    "%zu) where key %zu was due; the first key "
				    "at least the probe is %zu%s", run->id,
				    show(probe, plen, b1, sizeof(b1)),
				    show(it.key, it.klen, b2, sizeof(b2)), at,
				    i, lb, at > lb ? ": skipped" : "");
			}
			if (rkey_cmp(it.key, it.klen, probe, plen) >= 0) {
				ck_assert_uint_eq(i, lb);
				break;
			}
		}
		hostrun_iter_free(&it);
	}
}

struct id_count {
	uint32_t id;
	size_t n;
};

static int
count_run_records(const void *key, size_t klen, const void *val,
    size_t vlen, void *arg)
{
	struct id_count *c = arg;
	const uint8_t *k = key;

	(void)val;
	(void)vlen;
	if (klen >= 4 && ((uint32_t)k[0] << 24 | (uint32_t)k[1] << 16 |
	    (uint32_t)k[2] << 8 | k[3]) == c->id)
		c->n++;
	return 0;
}

START_TEST(test_runs_against_reference)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir);
	struct store_txn *txn, *rd;
	struct run_ref refs[NRUNS];
	struct hostrun *runs;
	struct id_count c;
	uint64_t seed = 4242;
	size_t n, gone = 4;

	memset(refs, 0, sizeof(refs));
	for (size_t i = 0; i < NRUNS; i++)
		build_ref(&refs[i], i, &seed);
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	for (size_t i = 0; i < NRUNS; i++)
		write_run(txn, run_specs[i].id, &refs[i], &seed);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	store_close(st);

	/* Read back from the files. */
	st = open_store(dir);
	rd = store_reader_new(st);
	ck_assert_ptr_nonnull(rd);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	for (size_t i = 0; i < NRUNS; i++) {
		check_layout(rd, run_specs[i].id, &refs[i]);
		ck_assert_uint_eq(refs[i].nblocks == 0, refs[i].n == 0);
		if (run_specs[i].many_blocks)
			ck_assert_msg(refs[i].nblocks > 8, "run %u: %u blocks",
			    run_specs[i].id, refs[i].nblocks);
	}
	runs = load_and_check(rd, refs, NRUNS, &n);
	for (size_t i = 0; i < NRUNS; i++) {
		const struct hostrun *r = find_run(runs, n, run_specs[i].id);

		check_full_scan(rd, r, &refs[i]);
		check_probes(rd, r, &refs[i], &seed, 400);
	}
	store_reader_end(rd);

	/* One run deleted: the others stay, it leaves nothing behind. */
	ck_assert_uint_eq(run_specs[gone].id, 0x0100);
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(hostrun_delete(txn, find_run(runs, n,
	    run_specs[gone].id)), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	free_runs(runs, n);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	runs = load_and_check(rd, refs, gone, &n);
	c.id = run_specs[gone].id;
	c.n = 0;
	ck_assert_int_eq(store_scan_txn(rd, STORE_URL_HOSTS,
	    count_run_records, &c), STORE_OK);
	ck_assert_uint_eq(c.n, 0);
	for (size_t i = 0; i < NRUNS; i++) {
		const struct hostrun *r = find_run(runs, n, run_specs[i].id);

		if (i == gone)
			continue;
		c.id = run_specs[i].id;
		c.n = 0;
		ck_assert_int_eq(store_scan_txn(rd, STORE_URL_HOSTS,
		    count_run_records, &c), STORE_OK);
		ck_assert_uint_eq(c.n, refs[i].nblocks + 1);
		check_full_scan(rd, r, &refs[i]);
		check_probes(rd, r, &refs[i], &seed, 50);
	}
	store_reader_end(rd);

	free_runs(runs, n);
	for (size_t i = 0; i < NRUNS; i++) {
		hostrun_free(&refs[i].written);
		free(refs[i].k);
		free(refs[i].bytes);
		free(refs[i].first);
	}
	store_reader_free(rd);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* Writes a run of the keys "a", "b", "c" as run id in a transaction. */
static void
write_small_run(struct store *st, uint32_t id)
{
	struct hostrun_writer *w = malloc(sizeof(*w));
	struct store_txn *txn;

	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	hostrun_writer_init(w, txn, id);
	ck_assert_int_eq(hostrun_writer_add(w, (const uint8_t *)"a", 1),
	    STORE_OK);
	ck_assert_int_eq(hostrun_writer_add(w, (const uint8_t *)"b", 1),
	    STORE_OK);
	ck_assert_int_eq(hostrun_writer_add(w, (const uint8_t *)"c", 1),
	    STORE_OK);
	ck_assert_int_eq(hostrun_writer_finish(w), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	hostrun_free(&w->run);
	free(w);
}

#define NDAMAGED_DIRS	9

/* Directory c of the damaged ones in v (1024 bytes); its length. */
static size_t
damaged_dir(int c, uint8_t *v, const char **what)
{
	memset(v, 0, 1024);
	le_put32(v, 1);			/* keys */
	le_put32(v + 4, 1);		/* blocks */
	switch (c) {
	case 0:
		*what = "shorter than its two counts";
		return 5;
	case 1:
		*what = "more blocks than its bytes could name";
		le_put32(v + 4, 0x7fffffff);
		v[8] = 1;
		v[10] = 'a';
		return 11;
	case 2:
		*what = "three blocks, one fence";
		le_put32(v + 4, 3);
		v[8] = 3;
		memcpy(v + 10, "abc", 3);
		return 13;
	case 3:
		*what = "a fence of 100 bytes in 10";
		v[8] = 100;
		memcpy(v + 10, "0123456789", 10);
		return 20;
	case 4:
		*what = "a fence one byte past the end";
		v[8] = 11;
		memcpy(v + 10, "0123456789", 10);
		return 20;
	case 5:
		*what = "a fence longer than any key";
		v[8] = 600 & 0xff;
		v[9] = 600 >> 8;
		memset(v + 10, 'k', 600);
		return 610;
	case 6:
		*what = "a fence's length cut";
		v[8] = 1;
		return 9;
	case 7:
		*what = "as many blocks as half its bytes";
		le_put32(v + 4, 10);
		return 20;
	default:
		*what = "a second fence of 65535 bytes";
		le_put32(v + 4, 2);
		v[8] = 1;
		v[10] = 'a';
		v[11] = 0xff;
		v[12] = 0xff;
		memset(v + 13, 'b', 40);
		return 53;
	}
}

/*
 * A directory that lies about its lengths fails the load, whether it
 * comes before or after a sound one, and frees what the load had read
 * (the sanitizer build finds leaks and overreads).
 */
START_TEST(test_damaged_directory)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir);
	struct store_txn *txn;
	struct hostrun *runs;
	uint8_t v[1024], k[8];
	const char *what;
	size_t n;
	int rc;

	write_small_run(st, 5);
	for (int c = 0; c < NDAMAGED_DIRS; c++)
		for (int at = 0; at < 2; at++) {
			size_t len = damaged_dir(c, v, &what);
			uint32_t id = at == 0 ? 0 : 9;

			ck_assert_int_eq(store_write_begin(st, &txn),
			    STORE_OK);
			run_key(k, id, DIR_BLOCK);
			ck_assert_int_eq(store_put(txn, STORE_URL_HOSTS, k, 8,
			    v, len, 0, NULL), STORE_OK);
			runs = NULL;
			n = 0;
			rc = load_runs(txn, &runs, &n);
			if (rc == STORE_OK) {
				free_runs(runs, n);
				store_abort(txn);
				ck_abort_msg("run %u, a directory %s: loaded",
				    id, what);
			}
			store_abort(txn);
		}

	/* The sound run alone still loads. */
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(load_runs(txn, &runs, &n), STORE_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(runs[0].id, 5);
	ck_assert_uint_eq(runs[0].nkeys, 3);
	free_runs(runs, n);
	store_abort(txn);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

#define NDAMAGED_BLOCKS	7

/* Block 0 (and the directory) of run 4 for case c; its length. */
static size_t
damaged_block(int c, uint8_t *v, uint8_t *d, size_t *dlen,
    const char **what)
{
	memset(v, 0, 1024);
	/* A sound directory: one block, first key "a". */
	memset(d, 0, 64);
	le_put32(d, 1);
	le_put32(d + 4, 1);
	d[8] = 1;
	d[10] = 'a';
	*dlen = 11;
	le_put32(v, 1);
	v[6] = 1;			/* (0, 1, "a") */
	v[8] = 'a';
	switch (c) {
	case 0:
		*what = "a block the directory names is missing";
		le_put32(d + 4, 2);
		d[11] = 1;
		d[13] = 'b';
		*dlen = 14;
		return 9;
	case 1:
		*what = "more keys than the block holds";
		le_put32(v, 3);
		return 9;
	case 2:
		*what = "a key sharing more than the one before";
		le_put32(v, 2);
		v[9] = 5;		/* (5, 1, "b") */
		v[11] = 1;
		v[13] = 'b';
		return 14;
	case 3:
		*what = "a key running past its block";
		v[6] = 50;
		return 9;
	case 4:
		*what = "shorter than its count";
		return 2;
	case 5:
		*what = "a key longer than any key";
		le_put32(v, 2);
		v[9] = 1;		/* (1, 511, ...) */
		v[11] = 511 & 0xff;
		v[12] = 511 >> 8;
		memset(v + 13, 'z', 511);
		return 13 + 511;
	default:
		*what = "a block's first key sharing bytes";
		v[4] = 3;		/* (3, 1, "a") */
		return 9;
	}
}

/*
 * A merge cut short leaves blocks of a run with no directory: loading
 * removes them, says so, and gives out no id at or below theirs; the
 * runs around them are intact.
 */
START_TEST(test_unfinished_run_removed)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir);
	struct store_txn *txn;
	struct store_val v;
	struct hostrun *runs;
	uint8_t k[8], block[16] = { 0 };
	uint32_t next_id;
	size_t n, orphans;

	write_small_run(st, 3);
	write_small_run(st, 9);
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	for (uint32_t b = 0; b < 3; b++) {
		run_key(k, 6, b);
		ck_assert_int_eq(store_put(txn, STORE_URL_HOSTS, k, 8, block,
		    sizeof(block), 0, NULL), STORE_OK);
		run_key(k, 12, b);
		ck_assert_int_eq(store_put(txn, STORE_URL_HOSTS, k, 8, block,
		    sizeof(block), 0, NULL), STORE_OK);
	}
	ck_assert_int_eq(store_commit(txn), STORE_OK);

	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(hostrun_load(txn, &runs, &n, &next_id, &orphans),
	    STORE_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(orphans, 2);
	ck_assert_uint_gt(next_id, 12);
	for (uint32_t b = 0; b < 3; b++) {
		run_key(k, 6, b);
		ck_assert_int_eq(store_get(txn, STORE_URL_HOSTS, k, 8, &v),
		    STORE_NOTFOUND);
		run_key(k, 12, b);
		ck_assert_int_eq(store_get(txn, STORE_URL_HOSTS, k, 8, &v),
		    STORE_NOTFOUND);
	}
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	free_runs(runs, n);

	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(load_runs(txn, &runs, &n), STORE_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(runs[0].nkeys + runs[1].nkeys, 6);
	free_runs(runs, n);
	store_abort(txn);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* A sound directory over damaged blocks: reading them fails, cleanly. */
START_TEST(test_damaged_blocks)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir);
	struct store_txn *txn;
	struct hostrun *runs;
	struct hostrun_iter it;
	uint8_t v[1024], d[64], k[8];
	const char *what;
	size_t n, dlen, vlen;
	bool done;
	int rc;

	for (int c = 0; c < NDAMAGED_BLOCKS; c++)
		for (int from = 0; from < 2; from++) {
			vlen = damaged_block(c, v, d, &dlen, &what);
			ck_assert_int_eq(store_write_begin(st, &txn),
			    STORE_OK);
			run_key(k, 4, DIR_BLOCK);
			ck_assert_int_eq(store_put(txn, STORE_URL_HOSTS, k, 8,
			    d, dlen, 0, NULL), STORE_OK);
			run_key(k, 4, 0);
			ck_assert_int_eq(store_put(txn, STORE_URL_HOSTS, k, 8,
			    v, vlen, 0, NULL), STORE_OK);
			ck_assert_int_eq(load_runs(txn, &runs, &n),
			    STORE_OK);
			ck_assert_uint_eq(n, 1);
			rc = hostrun_iter_init(&it, txn, &runs[0], from ?
			    (const uint8_t *)"b" : NULL, from ? 1 : 0);
			done = false;
			for (int i = 0; rc == STORE_OK && !done && i < 100; i++)
				rc = hostrun_iter_next(&it, &done);
			hostrun_iter_free(&it);
			free_runs(runs, n);
			store_abort(txn);
			ck_assert_msg(rc != STORE_OK, "%s: read to its end",
			    what);
		}
	store_close(st);
	tu_rmtree(dir);
	free(dir);
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
	tcase_add_test(tc, test_longest_hosts_indexed);
	tcase_add_test(tc, test_runs_against_reference);
	tcase_add_test(tc, test_damaged_directory);
	tcase_add_test(tc, test_damaged_blocks);
	tcase_add_test(tc, test_unfinished_run_removed);
	suite_add_tcase(s, tc);
	return s;
}
