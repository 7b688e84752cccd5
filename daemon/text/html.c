/*
 * html: the text of an HTML document, for simhash.  See html.h for the
 * rules.
 *
 * The input is in memory as a whole; only the output is produced in pieces,
 * so the state between two calls of html_strip_next is just the input
 * position: markup never produces more than one byte, and is always skipped
 * whole within one call.
 */
#include "html.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Largest output of one step: a character reference expands to 6 bytes. */
#define HTML_STEP_MAX 8

static int
html_alpha(uint8_t c)
{
	return (uint8_t)((c | 0x20) - 'a') < 26;
}

static int
html_alnum(uint8_t c)
{
	return html_alpha(c) || (uint8_t)(c - '0') < 10;
}

/* Whitespace inside tags: TAB LF FF CR SPACE. */
static int
html_space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

/* The first '<' or '&' in [p, lim), or lim. */
static const uint8_t *
html_text_end(const uint8_t *p, const uint8_t *lim)
{
#ifdef __SSE2__
	const __m128i lt = _mm_set1_epi8('<'), amp = _mm_set1_epi8('&');

	for (; lim - p >= 16; p += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)p);
		int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lt),
		    _mm_cmpeq_epi8(v, amp)));

		if (m != 0)
			return p + __builtin_ctz((unsigned)m);
	}
#endif
	while (p < lim && *p != '<' && *p != '&')
		p++;
	return p;
}

/*
 * The first byte in [p, end) that may end a tag name, an attribute name or
 * an unquoted value: whitespace, '/', '>' or '='.
 */
static const uint8_t *
html_name_end(const uint8_t *p, const uint8_t *end)
{
#ifdef __SSE2__
	const __m128i gt = _mm_set1_epi8('>'), sl = _mm_set1_epi8('/');
	const __m128i eq = _mm_set1_epi8('='), sp = _mm_set1_epi8(' ');
	const __m128i tab = _mm_set1_epi8('\t'), lf = _mm_set1_epi8('\n');
	const __m128i ff = _mm_set1_epi8('\f'), cr = _mm_set1_epi8('\r');

	for (; end - p >= 16; p += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)p);
		__m128i m = _mm_or_si128(_mm_or_si128(_mm_or_si128(
		    _mm_cmpeq_epi8(v, gt), _mm_cmpeq_epi8(v, sl)),
		    _mm_or_si128(_mm_cmpeq_epi8(v, eq), _mm_cmpeq_epi8(v, sp))),
		    _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, tab),
		    _mm_cmpeq_epi8(v, lf)), _mm_or_si128(_mm_cmpeq_epi8(v, ff),
		    _mm_cmpeq_epi8(v, cr))));
		int bits = _mm_movemask_epi8(m);

		if (bits != 0)
			return p + __builtin_ctz((unsigned)bits);
	}
#endif
	while (p < end && *p != '>' && *p != '/' && *p != '=' &&
	    !html_space(*p))
		p++;
	return p;
}

static const uint8_t *
html_find(const uint8_t *p, const uint8_t *end, const char *needle)
{
	const void *r;

	if (p >= end)
		return NULL;
	r = memmem(p, (size_t)(end - p), needle, strlen(needle));
	return r;
}

/*
 * Skips a start or end tag; p points just past its name's first letter.
 * Stores the tag name's extent.  Returns the position after its ">", or end
 * when the input ends inside it.
 */
static const uint8_t *
html_skip_tag(const uint8_t *p, const uint8_t *end, const uint8_t **name,
    size_t *namelen)
{
	enum { NAME, BEFORE_ATTR, ATTR, AFTER_ATTR, BEFORE_VALUE,
	    VALUE_DQ, VALUE_SQ, VALUE_UNQ, AFTER_VALUE } s = NAME;
	const uint8_t *start = p - 1;
	uint8_t c;

	*name = start;
	*namelen = 0;
	for (; p < end; p++) {
		/* Skip the bytes of names and unquoted values in bulk. */
		if ((s == NAME || s == ATTR || s == VALUE_UNQ) &&
		    (p = html_name_end(p, end)) == end)
			break;
		c = *p;
		switch (s) {
		case NAME:
			if (c == '>' || c == '/' || html_space(c)) {
				*namelen = (size_t)(p - start);
				if (c == '>')
					return p + 1;
				s = BEFORE_ATTR;
			}
			break;
		case BEFORE_ATTR:
			if (c == '>')
				return p + 1;
			if (c != '/' && !html_space(c))
				s = ATTR;
			break;
		case ATTR:
			if (c == '>')
				return p + 1;
			if (c == '=')
				s = BEFORE_VALUE;
			else if (c == '/')
				s = BEFORE_ATTR;
			else if (html_space(c))
				s = AFTER_ATTR;
			break;
		case AFTER_ATTR:
			if (c == '>')
				return p + 1;
			if (c == '=')
				s = BEFORE_VALUE;
			else if (c == '/')
				s = BEFORE_ATTR;
			else if (!html_space(c))
				s = ATTR;
			break;
		case BEFORE_VALUE:
			if (c == '>')
				return p + 1;
			if (c == '"')
				s = VALUE_DQ;
			else if (c == '\'')
				s = VALUE_SQ;
			else if (!html_space(c))
				s = VALUE_UNQ;
			break;
		case VALUE_DQ:
		case VALUE_SQ: {
			const uint8_t *q = memchr(p, s == VALUE_DQ ? '"' : '\'',
			    (size_t)(end - p));

			if (q == NULL)
				return end;
			p = q;
			s = AFTER_VALUE;
			break;
		}
		case VALUE_UNQ:
			if (c == '>')
				return p + 1;
			if (html_space(c))
				s = BEFORE_ATTR;
			break;
		case AFTER_VALUE:
			if (c == '>')
				return p + 1;
			s = BEFORE_ATTR;
			if (c != '/' && !html_space(c))
				s = ATTR;
			break;
		}
	}
	if (s == NAME)
		*namelen = (size_t)(p - start);
	return end;
}

static int
html_name_is(const uint8_t *name, size_t len, const char *want)
{
	size_t i;

	if (len != strlen(want))
		return 0;
	for (i = 0; i < len; i++)
		if ((name[i] | 0x20) != (uint8_t)want[i])
			return 0;
	return 1;
}

/* Skips the raw text of a script or style element and its end tag. */
static const uint8_t *
html_skip_rawtext(const uint8_t *p, const uint8_t *end, const char *tag)
{
	size_t n = strlen(tag);
	const uint8_t *q, *name;
	size_t namelen;

	for (q = p; q < end; q++) {
		q = memchr(q, '<', (size_t)(end - q));
		if (q == NULL)
			break;
		if ((size_t)(end - q) < n + 3 || q[1] != '/' ||
		    !html_name_is(q + 2, n, tag))
			continue;
		if (q[2 + n] != '>' && q[2 + n] != '/' && !html_space(q[2 + n]))
			continue;
		return html_skip_tag(q + 3, end, &name, &namelen);
	}
	return end;
}

/*
 * The length of the markup at p (p[0] == '<'), script and style contents
 * included, or 0 if this "<" is text.
 */
static size_t
html_markup(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *q, *r, *name;
	size_t namelen;

	if (end - p < 2)
		return 0;
	if (p[1] == '!') {
		if (end - p >= 4 && p[2] == '-' && p[3] == '-') {
			/* "--!>" counts only before the first "-->". */
			q = html_find(p + 2, end, "-->");
			r = html_find(p + 4, q != NULL ? q + 3 : end, "--!>");
			if (r != NULL)
				return (size_t)(r + 4 - p);
			if (q != NULL)
				return (size_t)(q + 3 - p);
			return (size_t)(end - p);
		}
	} else if (html_alpha(p[1])) {
		q = html_skip_tag(p + 2, end, &name, &namelen);
		if (html_name_is(name, namelen, "script"))
			q = html_skip_rawtext(q, end, "script");
		else if (html_name_is(name, namelen, "style"))
			q = html_skip_rawtext(q, end, "style");
		return (size_t)(q - p);
	} else if (p[1] == '/') {
		if (end - p >= 3 && html_alpha(p[2]))
			return (size_t)(html_skip_tag(p + 3, end, &name,
			    &namelen) - p);
	} else if (p[1] != '?')
		return 0;
	q = memchr(p + 1, '>', (size_t)(end - p - 1));
	return q == NULL ? (size_t)(end - p) : (size_t)(q + 1 - p);
}

static size_t
html_utf8(uint32_t cp, uint8_t *out)
{
	if (cp < 0x80) {
		out[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (uint8_t)(0xc0 | (cp >> 6));
		out[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (uint8_t)(0xe0 | (cp >> 12));
		out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (uint8_t)(0xf0 | (cp >> 18));
	out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

/* Numeric references to 0x80..0x9F mean Windows-1252 (0: unchanged). */
static const uint16_t html_cp1252[32] = {
	0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021,
	0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0,
	0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
	0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
};

static const struct html_entity *
html_entity_find(const uint8_t *name, size_t len)
{
	size_t lo = 0, hi = html_entities_count, mid, n;
	const struct html_entity *e;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		e = &html_entities[mid];
		n = e->namelen < len ? e->namelen : len;
		c = memcmp(e->name, name, n);
		if (c == 0)
			c = e->namelen < len ? -1 : e->namelen > len;
		if (c == 0)
			return e;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

size_t
html_charref(const uint8_t *p, const uint8_t *end, uint8_t *out,
    size_t *outlen)
{
	const struct html_entity *e;
	const uint8_t *q = p + 1, *digits;
	uint32_t v = 0;
	size_t run, k;
	int hex;

	if (q < end && *q == '#') {
		q++;
		hex = q < end && (*q == 'x' || *q == 'X');
		if (hex)
			q++;
		for (digits = q; q < end; q++) {
			unsigned d;

			if ((uint8_t)(*q - '0') < 10)
				d = *q - '0';
			else if (hex && (uint8_t)((*q | 0x20) - 'a') < 6)
				d = (*q | 0x20) - 'a' + 10;
			else
				break;
			v = v * (hex ? 16 : 10) + d;
			if (v > 0x10ffff)
				v = 0x110000;
		}
		if (q == digits)
			return 0;
		if (q < end && *q == ';')
			q++;
		if (v == 0 || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
			v = 0xfffd;
		else if (v >= 0x80 && v <= 0x9f && html_cp1252[v - 0x80] != 0)
			v = html_cp1252[v - 0x80];
		*outlen = html_utf8(v, out);
		return (size_t)(q - p);
	}
	for (run = 0; q + run < end && run < 32 && html_alnum(q[run]); run++)
		;
	if (run == 0)
		return 0;
	if (run < 32 && q + run < end && q[run] == ';' &&
	    (e = html_entity_find(q, run + 1)) != NULL) {
		memcpy(out, e->value, e->valuelen);
		*outlen = e->valuelen;
		return run + 2;
	}
	/* Legacy names without ";" are at most 6 characters. */
	for (k = run < 6 ? run : 6; k >= 2; k--) {
		if ((e = html_entity_find(q, k)) != NULL) {
			memcpy(out, e->value, e->valuelen);
			*outlen = e->valuelen;
			return k + 1;
		}
	}
	return 0;
}

void
html_strip_init(struct html_strip *st, const void *doc, size_t len)
{
	st->p = doc;
	st->end = st->p + len;
}

size_t
html_strip_next(struct html_strip *st, uint8_t *out, size_t cap)
{
	const uint8_t *p = st->p, *end = st->end, *q, *lim;
	size_t o = 0, n, outlen;

	while (p < end && cap - o >= HTML_STEP_MAX) {
		if (*p == '<') {
			if ((n = html_markup(p, end)) == 0) {
				out[o++] = *p++;
				continue;
			}
			p += n;
			out[o++] = ' ';
			continue;
		}
		if (*p == '&') {
			if ((n = html_charref(p, end, out + o, &outlen)) == 0) {
				out[o++] = *p++;
				continue;
			}
			p += n;
			o += outlen;
			continue;
		}
		lim = p + (cap - o < (size_t)(end - p) ? cap - o :
		    (size_t)(end - p));
		q = html_text_end(p, lim);
		memcpy(out + o, p, (size_t)(q - p));
		o += (size_t)(q - p);
		p = q;
	}
	st->p = p;
	return o;
}
