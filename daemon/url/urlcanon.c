/*
 * urlcanon: the canonical form of a URL.  See urlcanon.h.
 *
 * uriparser does the parsing and the RFC 3986 normalization, with its
 * allocations served from an arena that is reset per URL; this module
 * applies the scheme rules and writes the result from the parsed
 * components, so uriparser's structures are never edited.  A URL that a
 * quick scan finds already canonical skips all of that and is copied.
 */
#include "urlcanon.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <uriparser/Uri.h>

#include "arena.h"

struct urlcanon {
	struct urlcanon_options opts;
	bool fast_path;		/* false: always parse (tests) */
	struct arena arena;
	UriMemoryManager mm;
	char *out;		/* output buffer, grown as needed */
	size_t out_cap;
};

/* uriparser's allocator, on the arena: each block remembers its size. */
struct mm_header {
	size_t size;
	size_t pad;
};

static void *
mm_malloc(UriMemoryManager *mm, size_t size)
{
	struct mm_header *h = arena_alloc(mm->userData, sizeof(*h) + size);

	if (h == NULL)
		return NULL;
	h->size = size;
	return h + 1;
}

static void *
mm_calloc(UriMemoryManager *mm, size_t n, size_t size)
{
	void *p;

	if (size != 0 && n > SIZE_MAX / size)
		return NULL;
	if ((p = mm_malloc(mm, n * size)) != NULL)
		memset(p, 0, n * size);
	return p;
}

static void *
mm_realloc(UriMemoryManager *mm, void *old, size_t size)
{
	void *p = mm_malloc(mm, size);

	if (p != NULL && old != NULL) {
		size_t was = ((struct mm_header *)old - 1)->size;

		memcpy(p, old, was < size ? was : size);
	}
	return p;
}

static void *
mm_reallocarray(UriMemoryManager *mm, void *old, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size)
		return NULL;
	return mm_realloc(mm, old, n * size);
}

static void
mm_free(UriMemoryManager *mm, void *p)
{
	(void)mm;
	(void)p;	/* the arena is reset per URL */
}

struct urlcanon *
urlcanon_new(const struct urlcanon_options *opts)
{
	struct urlcanon *uc;

	if ((uc = calloc(1, sizeof(*uc))) == NULL)
		return NULL;
	uc->opts = *opts;
	uc->fast_path = true;
	arena_init(&uc->arena, 16384);
	uc->mm.malloc = mm_malloc;
	uc->mm.calloc = mm_calloc;
	uc->mm.realloc = mm_realloc;
	uc->mm.reallocarray = mm_reallocarray;
	uc->mm.free = mm_free;
	uc->mm.userData = &uc->arena;
	return uc;
}

void
urlcanon_free(struct urlcanon *uc)
{
	if (uc == NULL)
		return;
	arena_release(&uc->arena);
	free(uc->out);
	free(uc);
}

void
urlcanon_set_fast_path(struct urlcanon *uc, bool enabled)
{
	uc->fast_path = enabled;
}

/* An output string under construction in the arena. */
struct sbuf {
	char *p;
	size_t len;
	size_t cap;
};

static void
sb_put(struct sbuf *b, const char *s, size_t n)
{
	/* Capacity is reserved up front from the input length. */
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void
sb_range(struct sbuf *b, const UriTextRangeA *r)
{
	if (r->first != NULL)
		sb_put(b, r->first, (size_t)(r->afterLast - r->first));
}

static size_t
range_len(const UriTextRangeA *r)
{
	return r->first ? (size_t)(r->afterLast - r->first) : 0;
}

static int
is_trimmed(unsigned char c)
{
	return c <= 0x20 || c == 0x7f;
}

/*
 * Trims, checks the length and percent-encodes bytes above 0x7f into the
 * arena.  Returns the prepared text or NULL with *cause set.
 */
static const char *
prepare(struct urlcanon *uc, const char *url, size_t len, size_t *outlen,
    const char **cause)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t start = 0, end = len, high = 0;
	char *p;

	while (start < end && is_trimmed((unsigned char)url[start]))
		start++;
	while (end > start && is_trimmed((unsigned char)url[end - 1]))
		end--;
	if (end == start) {
		*cause = "empty URL";
		return NULL;
	}
	if (end - start > URLCANON_MAX_LEN) {
		*cause = "URL longer than 16384 bytes";
		return NULL;
	}
	for (size_t i = start; i < end; i++)
		high += (unsigned char)url[i] > 0x7f;
	if ((p = arena_alloc(&uc->arena, end - start + 2 * high + 1)) == NULL) {
		*cause = "out of memory";
		return NULL;
	}
	*outlen = 0;
	for (size_t i = start; i < end; i++) {
		unsigned char c = (unsigned char)url[i];

		if (c > 0x7f) {
			p[(*outlen)++] = '%';
			p[(*outlen)++] = hex[c >> 4];
			p[(*outlen)++] = hex[c & 0xf];
		} else
			p[(*outlen)++] = (char)c;
	}
	p[*outlen] = '\0';
	return p;
}

static int
scheme_default_port(const UriTextRangeA *scheme, unsigned *port)
{
	static const struct {
		const char *name;
		unsigned port;
	} schemes[] = { { "http", 80 }, { "https", 443 }, { "ftp", 21 } };
	size_t n = range_len(scheme);

	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		if (n == strlen(schemes[i].name) &&
		    strncasecmp(scheme->first, schemes[i].name, n) == 0) {
			*port = schemes[i].port;
			return 0;
		}
	}
	return -1;
}

/*
 * Writes the host.  uriparser 0.9.7 lower-cases a registered name but leaves
 * its percent-escapes' hex digits as they came and IP literals untouched;
 * RFC 3986 wants escapes upper-case (2.1) and hex digits of IP literals are
 * case-insensitive, so both are finished here.
 */
static void
put_host(struct sbuf *b, const UriTextRangeA *r, int ip_literal)
{
	size_t n = range_len(r), start = b->len;
	char *p;

	if (ip_literal)
		sb_put(b, "[", 1);
	sb_range(b, r);
	p = b->p + start + (ip_literal ? 1 : 0);
	for (size_t i = 0; i < n; i++) {
		if (ip_literal)
			p[i] = (char)tolower((unsigned char)p[i]);
		else if (p[i] == '%' && i + 2 < n) {
			p[i + 1] = (char)toupper((unsigned char)p[i + 1]);
			p[i + 2] = (char)toupper((unsigned char)p[i + 2]);
			i += 2;
		}
	}
	if (ip_literal)
		sb_put(b, "]", 1);
}

/* Writes ":port" unless the port is empty or the scheme's default. */
static int
put_port(struct sbuf *b, const UriTextRangeA *r, unsigned default_port,
    const char **cause)
{
	unsigned long port = 0;
	char text[8];
	int n;

	if (r->first == NULL || r->first == r->afterLast)
		return 0;
	for (const char *p = r->first; p < r->afterLast; p++) {
		port = port * 10 + (unsigned long)(*p - '0');
		if (port > 65535) {
			*cause = "port out of range";
			return -1;
		}
	}
	if (port == default_port)
		return 0;
	n = snprintf(text, sizeof(text), ":%lu", port);
	sb_put(b, text, (size_t)n);
	return 0;
}

static int
name_is(const char *name, size_t n, const char *want)
{
	return n == strlen(want) && strncasecmp(name, want, n) == 0;
}

static int
is_session_param(const char *name, size_t n)
{
	return name_is(name, n, "jsessionid") ||
	    name_is(name, n, "phpsessid") || name_is(name, n, "sid") ||
	    name_is(name, n, "cfid") || name_is(name, n, "cftoken") ||
	    (n >= 12 && strncasecmp(name, "aspsessionid", 12) == 0);
}

static int
is_tracking_param(const char *name, size_t n)
{
	static const char *const names[] = { "gclid", "fbclid", "msclkid",
	    "dclid", "yclid", "mc_cid", "mc_eid", "_ga", "igshid" };

	if (n > 4 && strncasecmp(name, "utm_", 4) == 0)
		return 1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (name_is(name, n, names[i]))
			return 1;
	return 0;
}

/*
 * The text without the ";jsessionid=..." parameter of any path segment, or
 * NULL if there is none.  This happens before normalization, so that a
 * segment it leaves as "." or ".." is removed as a dot segment (canonical
 * forms must be stable).
 */
static char *
strip_path_sessions(struct urlcanon *uc, const UriUriA *uri, const char *text,
    size_t len, size_t *outlen)
{
	static const char param[] = ";jsessionid=";
	const size_t plen = sizeof(param) - 1;
	const UriPathSegmentA *seg;
	char *out = NULL;
	size_t copied = 0;

	for (seg = uri->pathHead; seg != NULL; seg = seg->next) {
		size_t n = range_len(&seg->text);
		const char *from = NULL;

		for (size_t i = 0; n >= plen && i <= n - plen && !from; i++)
			if (strncasecmp(seg->text.first + i, param, plen) == 0)
				from = seg->text.first + i;
		if (from == NULL)
			continue;
		if (out == NULL && (out = arena_alloc(&uc->arena, len + 1)) ==
		    NULL)
			return NULL;
		/* Copy up to the parameter, skip to the segment's end. */
		memcpy(out + *outlen, text + copied,
		    (size_t)(from - text) - copied);
		*outlen += (size_t)(from - text) - copied;
		copied = (size_t)(seg->text.afterLast - text);
	}
	if (out == NULL)
		return NULL;
	memcpy(out + *outlen, text + copied, len - copied);
	*outlen += len - copied;
	out[*outlen] = '\0';
	return out;
}

struct param {
	const char *p;
	size_t n;
};

static int
param_cmp(const void *a, const void *b)
{
	const struct param *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->p, y->p, n);

	if (c != 0)
		return c;
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	/* Equal pairs: keep input order, so the sort is stable. */
	return x->p < y->p ? -1 : x->p > y->p;
}

/* Writes "?query", filtered and sorted as the options say. */
static int
put_query(struct urlcanon *uc, struct sbuf *b, const UriTextRangeA *r,
    const char **cause)
{
	const struct urlcanon_options *o = &uc->opts;
	struct param *params;
	size_t nparams = 0, n = range_len(r), kept = 0;

	if (r->first == NULL)
		return 0;
	if (!o->strip_session_ids && !o->strip_tracking && !o->sort_query) {
		sb_put(b, "?", 1);
		sb_range(b, r);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		nparams += r->first[i] == '&';
	params = arena_alloc(&uc->arena, (nparams + 1) * sizeof(*params));
	if (params == NULL) {
		*cause = "out of memory";
		return -1;
	}
	for (const char *p = r->first, *end = r->afterLast; p <= end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(stop - p));
		size_t name_len = (size_t)((eq ? eq : stop) - p);

		if (!(o->strip_session_ids && is_session_param(p, name_len)) &&
		    !(o->strip_tracking && is_tracking_param(p, name_len)) &&
		    (stop > p || !(o->strip_session_ids || o->strip_tracking))) {
			params[kept].p = p;
			params[kept].n = (size_t)(stop - p);
			kept++;
		}
		p = stop + 1;
	}
	if (o->sort_query)
		qsort(params, kept, sizeof(*params), param_cmp);
	/* A query left empty by stripping disappears with its "?". */
	if (kept == 0 && n > 0)
		return 0;
	sb_put(b, "?", 1);
	for (size_t i = 0; i < kept; i++) {
		if (i > 0)
			sb_put(b, "&", 1);
		sb_put(b, params[i].p, params[i].n);
	}
	return 0;
}

/*
 * The fast path.  Most URLs crawlers send are already canonical, and
 * parsing one with uriparser only to write the same bytes back was about 15%
 * of the daemon's time on the URL check path.  This scan accepts a subset of
 * canonical forms that is easy to recognize byte by byte:
 *
 *	"http://" or "https://"
 *	host: labels of a-z, 0-9 and "-", joined by single dots (no empty
 *	    label, so no leading or trailing dot; no user info, no IP literal)
 *	an optional ":port": 1-9 then digits, at most 65535, not the default
 *	path: "/" then pchars (RFC 3986 3.3), no segment "." or ".."
 *	an optional "?query" of pchars, "/" and "?"
 *
 * where every escape is "%" and two upper-case hex digits of a byte that is
 * not unreserved (normalization decodes those and upper-cases the others),
 * and with no "#", no byte to trim and nothing above 0x7f.  With a crawler
 * option on, a query or a ";" (a path parameter) goes to the parser: the
 * options may rewrite them.  Everything else, canonical or not, is parsed:
 * the scan is meant to be obviously right, not complete.
 */

/*
 * Byte classes for the scan, a table because the scan runs on every URL:
 * CL_P a pchar as it is (unreserved, sub-delims, ":", "@"); CL_Q the same
 * but ";"; CL_H a host name byte (a-z, 0-9, "-"); CL_U unreserved, so its
 * escape is decoded; CL_X an upper-case hex digit.  Bytes above 0x7f are 0.
 */
#define CL_P	0x01
#define CL_Q	0x02
#define CL_H	0x04
#define CL_U	0x08
#define CL_X	0x10
#define PQ	(CL_P | CL_Q)
#define PQU	(PQ | CL_U)
#define HPQU	(PQU | CL_H)
#define HPQUX	(HPQU | CL_X)
#define PQUX	(PQU | CL_X)

static const unsigned char char_class[256] = {
	/* 0x00-0x1f: controls */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/*  sp     !     "     #     $     %     &     '  */
	    0,   PQ,    0,    0,   PQ,    0,   PQ,   PQ,
	/*   (     )     *     +     ,     -     .     /  */
	    PQ,  PQ,   PQ,   PQ,   PQ, HPQU,  PQU,    0,
	/*   0 - 9 */
	HPQUX, HPQUX, HPQUX, HPQUX, HPQUX, HPQUX, HPQUX, HPQUX,
	HPQUX, HPQUX,
	/*   :     ;     <     =     >     ?  */
	    PQ, CL_P,    0,   PQ,    0,    0,
	/*   @     A - F */
	    PQ, PQUX, PQUX, PQUX, PQUX, PQUX, PQUX,
	/*   G - Z */
	PQU, PQU, PQU, PQU, PQU, PQU, PQU, PQU, PQU, PQU,
	PQU, PQU, PQU, PQU, PQU, PQU, PQU, PQU, PQU, PQU,
	/*   [     \     ]     ^     _     `  */
	     0,    0,    0,    0,  PQU,    0,
	/*   a - z */
	HPQU, HPQU, HPQU, HPQU, HPQU, HPQU, HPQU, HPQU, HPQU, HPQU,
	HPQU, HPQU, HPQU, HPQU, HPQU, HPQU, HPQU, HPQU, HPQU, HPQU,
	HPQU, HPQU, HPQU, HPQU, HPQU, HPQU,
	/*   {     |     }     ~   del */
	     0,    0,    0,  PQU,    0,
};

static int
hex_value(unsigned char c)
{
	return c <= '9' ? c - '0' : c - 'A' + 10;
}

/* Whether the escape at p[0..3) is one normalization leaves as it is. */
static int
is_normal_escape(const unsigned char *p, const unsigned char *end)
{
	if (end - p < 3 || !(char_class[p[1]] & CL_X) ||
	    !(char_class[p[2]] & CL_X))
		return 0;
	return !(char_class[hex_value(p[1]) << 4 | hex_value(p[2])] & CL_U);
}

/* Whether the path segment s[0..n) is "." or "..", which would be removed. */
static int
is_dot_segment(const unsigned char *s, size_t n)
{
	return (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' &&
	    s[1] == '.');
}

bool
urlcanon_is_canonical(const struct urlcanon_options *opts, const char *url,
    size_t len)
{
	const unsigned char *p = (const unsigned char *)url, *end;
	const unsigned char *seg;
	unsigned long port;
	unsigned default_port;
	int options, in_query;
	unsigned char plain;

	/* An empty item may come as a null pointer: no arithmetic on it. */
	if (len == 0 || len > URLCANON_MAX_LEN)
		return false;
	end = p + len;
	options = opts->strip_session_ids || opts->strip_tracking ||
	    opts->sort_query;
	plain = options ? CL_Q : CL_P;

	if (len >= 7 && memcmp(p, "http://", 7) == 0) {
		p += 7;
		default_port = 80;
	} else if (len >= 8 && memcmp(p, "https://", 8) == 0) {
		p += 8;
		default_port = 443;
	} else
		return false;

	/* The host: each label non-empty, so dots are single and inside. */
	for (;;) {
		if (p == end || !(char_class[*p] & CL_H))
			return false;
		while (p < end && (char_class[*p] & CL_H))
			p++;
		if (p == end || *p != '.')
			break;
		p++;
	}

	/* The port: no leading zero, so the text is the number. */
	if (p < end && *p == ':') {
		const unsigned char *digits = ++p;

		if (p == end || *p < '1' || *p > '9')
			return false;
		for (port = 0; p < end && *p >= '0' && *p <= '9'; p++) {
			if (p - digits == 5)
				return false;
			port = port * 10 + (unsigned long)(*p - '0');
		}
		if (port > 65535 || port == default_port || p == end)
			return false;
	}

	/* The path must begin with "/": an empty one is written as "/". */
	if (p == end || *p != '/')
		return false;
	seg = ++p;
	in_query = 0;
	for (; p < end; p++) {
		if (char_class[*p] & plain)
			continue;
		if (*p == '%') {
			if (!is_normal_escape(p, end))
				return false;
			p += 2;
		} else if (*p == '/' || *p == '?') {
			if (!in_query) {
				if (is_dot_segment(seg, (size_t)(p - seg)))
					return false;
				seg = p + 1;
			}
			if (*p == '?') {
				if (options)
					return false;
				in_query = 1;
			}
		} else
			return false;	/* or ";" with options */
	}
	return in_query || !is_dot_segment(seg, (size_t)(p - seg));
}

/* Makes the output buffer hold at least size bytes. */
static int
out_reserve(struct urlcanon *uc, size_t size, const char **cause)
{
	if (size <= uc->out_cap)
		return 0;
	free(uc->out);
	uc->out_cap = size * 2;
	if ((uc->out = malloc(uc->out_cap)) == NULL) {
		uc->out_cap = 0;
		*cause = "out of memory";
		return -1;
	}
	return 0;
}

const char *
urlcanon_canonicalize(struct urlcanon *uc, const char *url, size_t len,
    size_t *outlen, const char **cause)
{
	UriUriA uri;
	const char *text, *errpos;
	size_t tlen;
	unsigned default_port;
	struct sbuf b;
	const UriPathSegmentA *seg;
	unsigned int mask;
	int ip_literal;

	if (uc->fast_path && urlcanon_is_canonical(&uc->opts, url, len)) {
		if (out_reserve(uc, len + 1, cause) == -1)
			return NULL;
		memcpy(uc->out, url, len);
		uc->out[len] = '\0';
		*outlen = len;
		return uc->out;
	}

	arena_reset(&uc->arena);
	if ((text = prepare(uc, url, len, &tlen, cause)) == NULL)
		return NULL;
	if (uriParseSingleUriExMmA(&uri, text, text + tlen, &errpos,
	    &uc->mm) != URI_SUCCESS) {
		*cause = "not a valid URI";
		return NULL;
	}
	if (uri.scheme.first == NULL) {
		*cause = "not an absolute URL";
		return NULL;
	}
	if (scheme_default_port(&uri.scheme, &default_port) == -1) {
		*cause = "scheme is not http, https or ftp";
		return NULL;
	}
	if (uc->opts.strip_session_ids) {
		size_t slen = 0;
		char *stripped = strip_path_sessions(uc, &uri, text, tlen,
		    &slen);

		if (stripped != NULL) {
			text = stripped;
			tlen = slen;
			if (uriParseSingleUriExMmA(&uri, text, text + tlen,
			    &errpos, &uc->mm) != URI_SUCCESS) {
				*cause = "not a valid URI";
				return NULL;
			}
		}
	}
	ip_literal = uri.hostData.ip6 != NULL || uri.hostData.ipFuture.first;
	if (uri.hostText.first == NULL ||
	    (uri.hostText.first == uri.hostText.afterLast && !ip_literal)) {
		*cause = "URL has no host";
		return NULL;
	}
	/* Most URLs are already normal: asking first spares the copy of
	 * every component that normalizing makes. */
	mask = uriNormalizeSyntaxMaskRequiredA(&uri) & (URI_NORMALIZE_SCHEME |
	    URI_NORMALIZE_USER_INFO | URI_NORMALIZE_HOST | URI_NORMALIZE_PATH |
	    URI_NORMALIZE_QUERY);
	if (mask != 0 && uriNormalizeSyntaxExMmA(&uri, mask, &uc->mm) !=
	    URI_SUCCESS) {
		*cause = "cannot normalize URL";
		return NULL;
	}

	/* Normalization never lengthens a component; add room for the
	 * delimiters and the path's "/" we may add. */
	b.cap = tlen + 16;
	if (out_reserve(uc, b.cap, cause) == -1)
		return NULL;
	b.p = uc->out;
	b.len = 0;

	sb_range(&b, &uri.scheme);
	sb_put(&b, "://", 3);
	/* An empty user info ("@" or ":@") says nothing: drop it. */
	if (range_len(&uri.userInfo) > 1 ||
	    (range_len(&uri.userInfo) == 1 && uri.userInfo.first[0] != ':')) {
		sb_range(&b, &uri.userInfo);
		sb_put(&b, "@", 1);
	}
	put_host(&b, &uri.hostText, ip_literal);
	if (put_port(&b, &uri.portText, default_port, cause) == -1)
		return NULL;
	sb_put(&b, "/", 1);
	for (seg = uri.pathHead; seg != NULL; seg = seg->next) {
		sb_range(&b, &seg->text);
		if (seg->next != NULL)
			sb_put(&b, "/", 1);
	}
	if (put_query(uc, &b, &uri.query, cause) == -1)
		return NULL;
	/* Percent-encoding can triple a URL: the bound holds for what is
	 * stored and sent back in replies, not only for what came in. */
	if (b.len > URLCANON_MAX_LEN) {
		*cause = "URL longer than 16384 bytes once canonical";
		return NULL;
	}
	b.p[b.len] = '\0';
	*outlen = b.len;
	return b.p;
}

void
urlcanon_id(const struct urlcanon_options *opts, char buf[URLCANON_ID_LEN])
{
	snprintf(buf, URLCANON_ID_LEN, "urlcanon/%d strip_session_ids=%s "
	    "strip_tracking=%s sort_query=%s", URLCANON_VERSION,
	    opts->strip_session_ids ? "yes" : "no",
	    opts->strip_tracking ? "yes" : "no",
	    opts->sort_query ? "yes" : "no");
}

int
urlcanon_parse_id(const char *id, struct urlcanon_options *opts)
{
	char buf[URLCANON_ID_LEN];

	/* Eight combinations: the one whose id matches, or none. */
	for (int o = 0; o < 8; o++) {
		struct urlcanon_options c = {
			.strip_session_ids = o & 1,
			.strip_tracking = (o >> 1) & 1,
			.sort_query = (o >> 2) & 1,
		};

		urlcanon_id(&c, buf);
		if (strcmp(buf, id) == 0) {
			*opts = c;
			return 0;
		}
	}
	return -1;
}
