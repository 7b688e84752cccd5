/*
 * nddctl's JSON lines without jansson on the common path: doc-submit
 * --jsonl reads and writes a line per document, and jansson's parser and
 * printer, which build a tree of values for each, took most of nddctl's
 * time (perf: 72% of it on the Reuters bodies, the daemon's share of two
 * cores going to the client).
 *
 * jsonl_parse_doc reads the lines jansson would read, and only those:
 * an object whose values are all strings, with no key twice, valid UTF-8,
 * no control character, no \u0000 (which jansson refuses).  Anything else
 * (a nested value, a number, a syntax error, ...) makes it give up, and
 * the caller parses the line with jansson, which gives the same answer or
 * the same error message as before.  jsonl_put_string writes a string as
 * json_dumps does with no flags, after nddctl_json_string's replacement
 * of invalid UTF-8 bytes by U+FFFD.
 */
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "nddctl.h"

/* Keys of one object remembered for the duplicate check; more: jansson. */
#define JSONL_MAX_KEYS 16

/* Bytes that end a run of plain string bytes: '"', '\\', controls, and
 * all of 0x80-0xff (UTF-8, checked on its own). */
static const unsigned char special[256] = {
	[0x00 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1,
};

/*
 * Moves the run of plain bytes at *rp (up to the next special byte, or
 * end) to *wp, where the string decoded so far ends (at or before *rp),
 * and moves both past it.  16 bytes at a time where SSE2 is: HTML pages
 * in JSON have an escape every few dozen bytes, and a byte loop with a
 * table lookup took half of nddctl's time on them.
 */
static void
move_run(char **wp, char **rp, const char *end)
{
	char *w = *wp, *r = *rp;

#ifdef __SSE2__
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
	const __m128i space = _mm_set1_epi8(0x20);

	while (end - r >= 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)r);
		/* Signed: below 0x20, and 0x80-0xff (negative), at once. */
		__m128i s = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
		    _mm_cmpeq_epi8(x, bslash)), _mm_cmplt_epi8(x, space));
		unsigned m = (unsigned)_mm_movemask_epi8(s);
		size_t n = m != 0 ? (size_t)__builtin_ctz(m) : 16;

		/* A whole vector stored where it cannot reach bytes not read
		 * yet; a shorter move otherwise. */
		if (r - w >= 16)
			_mm_storeu_si128((__m128i *)w, x);
		else if (w != r)
			memmove(w, r, n);
		w += n;
		r += n;
		if (m != 0)
			goto out;
	}
#endif
	while (r < end && !special[(unsigned char)*r])
		*w++ = *r++;
#ifdef __SSE2__
out:
#endif
	*wp = w;
	*rp = r;
}

size_t
nddctl_utf8_seq(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' ||
	    *p == '\r'))
		p++;
	return p;
}

static int
hex4(const char *p, uint32_t *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	return 0;
}

/*
 * Decodes the string whose opening quote is at *pp, in place: its value
 * goes to *out (not NUL-terminated), *pp past the closing quote.  Returns
 * -1 for what this parser leaves to jansson.
 */
static int
parse_string(char **pp, const char *end, const char **out, size_t *out_len)
{
	char *r = *pp + 1, *w = r;

	*out = r;
	for (;;) {
		unsigned char c;
		uint32_t cp, lo;
		size_t n;

		move_run(&w, &r, end);
		if (r == end)
			return -1;
		c = (unsigned char)*r;
		if (c == '"')
			break;
		if (c >= 0x80) {
			if ((n = nddctl_utf8_seq((const unsigned char *)r,
			    (size_t)(end - r))) == 0)
				return -1;
			memmove(w, r, n);
			w += n;
			r += n;
			continue;
		}
		if (c != '\\' || end - r < 2)
			return -1;	/* a control character */
		switch (r[1]) {
		case '"': *w++ = '"'; break;
		case '\\': *w++ = '\\'; break;
		case '/': *w++ = '/'; break;
		case 'b': *w++ = '\b'; break;
		case 'f': *w++ = '\f'; break;
		case 'n': *w++ = '\n'; break;
		case 'r': *w++ = '\r'; break;
		case 't': *w++ = '\t'; break;
		case 'u':
			if (end - r < 6 || hex4(r + 2, &cp) == -1)
				return -1;
			r += 4;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (end - r < 8 || r[2] != '\\' ||
				    r[3] != 'u' || hex4(r + 4, &lo) == -1 ||
				    lo < 0xdc00 || lo > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				    (lo - 0xdc00);
				r += 6;
			} else if ((cp >= 0xdc00 && cp <= 0xdfff) || cp == 0)
				return -1;
			if (cp < 0x80)
				*w++ = (char)cp;
			else if (cp < 0x800) {
				*w++ = (char)(0xc0 | cp >> 6);
				*w++ = (char)(0x80 | (cp & 0x3f));
			} else if (cp < 0x10000) {
				*w++ = (char)(0xe0 | cp >> 12);
				*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
				*w++ = (char)(0x80 | (cp & 0x3f));
			} else {
				*w++ = (char)(0xf0 | cp >> 18);
				*w++ = (char)(0x80 | ((cp >> 12) & 0x3f));
				*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
				*w++ = (char)(0x80 | (cp & 0x3f));
			}
			break;
		default:
			return -1;
		}
		r += 2;
	}
	*out_len = (size_t)(w - *out);
	*pp = r + 1;
	return 0;
}

int
jsonl_parse_doc(char *buf, size_t len, struct jsonl_doc *doc)
{
	const char *end = buf + len, *keys[JSONL_MAX_KEYS];
	size_t key_lens[JSONL_MAX_KEYS], nkeys = 0;
	char *p = buf;

	memset(doc, 0, sizeof(*doc));
	p = (char *)skip_ws(p, end);
	if (p == end || *p != '{')
		return -1;
	p = (char *)skip_ws(p + 1, end);
	if (p < end && *p == '}')
		return -1;	/* {}: jansson says what is missing */
	for (;;) {
		const char *key, *val;
		size_t klen, vlen;

		if (p == end || *p != '"' || parse_string(&p, end, &key,
		    &klen) == -1)
			return -1;
		p = (char *)skip_ws(p, end);
		if (p == end || *p != ':')
			return -1;
		p = (char *)skip_ws(p + 1, end);
		if (p == end || *p != '"' || parse_string(&p, end, &val,
		    &vlen) == -1)
			return -1;
		if (nkeys == JSONL_MAX_KEYS)
			return -1;
		for (size_t i = 0; i < nkeys; i++)
			if (key_lens[i] == klen && memcmp(keys[i], key,
			    klen) == 0)
				return -1;	/* jansson names it */
		keys[nkeys] = key;
		key_lens[nkeys++] = klen;
		if (klen == 3 && memcmp(key, "url", 3) == 0) {
			doc->url = val;
			doc->url_len = vlen;
		} else if (klen == 4 && memcmp(key, "text", 4) == 0) {
			doc->text = val;
			doc->text_len = vlen;
		} else if (klen == 4 && memcmp(key, "html", 4) == 0) {
			doc->html = val;
			doc->html_len = vlen;
		}
		p = (char *)skip_ws(p, end);
		if (p == end)
			return -1;
		if (*p == '}')
			break;
		if (*p != ',')
			return -1;
		p = (char *)skip_ws(p + 1, end);
	}
	return skip_ws(p + 1, end) == end ? 0 : -1;
}

void
jsonl_put_string(FILE *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s,
	    *end = p + len, *run;

	putc_unlocked('"', out);
	while (p < end) {
		size_t n;

		for (run = p; p < end && !special[*p]; p++)
			;
		if (p > run)
			fwrite_unlocked(run, 1, (size_t)(p - run), out);
		if (p == end)
			break;
		if (*p >= 0x80) {
			if ((n = nddctl_utf8_seq(p, (size_t)(end - p))) == 0) {
				fputs_unlocked("\xef\xbf\xbd", out);
				p++;
			} else {
				fwrite_unlocked(p, 1, n, out);
				p += n;
			}
			continue;
		}
		switch (*p) {
		case '"': fputs_unlocked("\\\"", out); break;
		case '\\': fputs_unlocked("\\\\", out); break;
		case '\b': fputs_unlocked("\\b", out); break;
		case '\f': fputs_unlocked("\\f", out); break;
		case '\n': fputs_unlocked("\\n", out); break;
		case '\r': fputs_unlocked("\\r", out); break;
		case '\t': fputs_unlocked("\\t", out); break;
		default: fprintf(out, "\\u%04X", *p); break;
		}
		p++;
	}
	putc_unlocked('"', out);
}
