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

#include "textbytes.h"

/* Largest output of one step: a character reference expands to 6 bytes. */
#define HTML_STEP_MAX 8

/*
 * The scans below look at 16 bytes at a time with SSE2, which every x86-64
 * has, so the one object serves every simhash kernel; markup is mostly
 * short (27 bytes a tag on average in the L3S pages), so wider vectors
 * would mostly look past the byte sought.  A block is loaded only where it
 * lies wholly inside the input, which is not padded: the last bytes are
 * scanned one at a time, and that loop is the whole scan elsewhere.
 */
#ifdef __SSE2__
#define HTML_VEC 16

static inline __m128i
html_load(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

static inline __m128i
html_eq(__m128i v, char c)
{
	return _mm_cmpeq_epi8(v, _mm_set1_epi8(c));
}

static inline unsigned
html_bits(__m128i m)
{
	return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* The first '<' or '&' in [p, lim), or lim. */
static const uint8_t *
html_text_end(const uint8_t *p, const uint8_t *lim)
{
#ifdef __SSE2__
	for (; lim - p >= HTML_VEC; p += HTML_VEC) {
		__m128i v = html_load(p);
		unsigned m = html_bits(_mm_or_si128(html_eq(v, '<'),
		    html_eq(v, '&')));

		if (m != 0)
			return p + __builtin_ctz(m);
	}
#endif
	while (p < lim && *p != '<' && *p != '&')
		p++;
	return p;
}

/*
 * Copies the text at p to out (room bytes) up to the first '<' or '&', the
 * end, or room bytes.  Returns where it stopped.  A whole block is stored
 * before it is known how much of it is text: room allows it, and what lies
 * past the text is overwritten or never returned.
 */
static const uint8_t *
html_text_copy(const uint8_t *p, const uint8_t *end, uint8_t *out,
    size_t room)
{
	const uint8_t *q;

#ifdef __SSE2__
	for (; end - p >= HTML_VEC && room >= HTML_VEC; p += HTML_VEC,
	    out += HTML_VEC, room -= HTML_VEC) {
		__m128i v = html_load(p);
		unsigned m = html_bits(_mm_or_si128(html_eq(v, '<'),
		    html_eq(v, '&')));

		_mm_storeu_si128((__m128i *)out, v);
		if (m != 0)
			return p + __builtin_ctz(m);
	}
#endif
	q = html_text_end(p, p + (room < (size_t)(end - p) ? room :
	    (size_t)(end - p)));
	memcpy(out, p, (size_t)(q - p));
	return q;
}

/* The first c in [p, end), or end. */
static const uint8_t *
html_byte(const uint8_t *p, const uint8_t *end, char c)
{
#ifdef __SSE2__
	for (; end - p >= HTML_VEC; p += HTML_VEC) {
		unsigned m = html_bits(html_eq(html_load(p), c));

		if (m != 0)
			return p + __builtin_ctz(m);
	}
#endif
	while (p < end && *p != (uint8_t)c)
		p++;
	return p;
}

/* The first '>', '"' or '\'' in [p, end), or end. */
static const uint8_t *
html_tag_stop(const uint8_t *p, const uint8_t *end)
{
#ifdef __SSE2__
	for (; end - p >= HTML_VEC; p += HTML_VEC) {
		__m128i v = html_load(p);
		unsigned m = html_bits(_mm_or_si128(html_eq(v, '>'),
		    _mm_or_si128(html_eq(v, '"'), html_eq(v, '\''))));

		if (m != 0)
			return p + __builtin_ctz(m);
	}
#endif
	while (p < end && *p != '>' && *p != '"' && *p != '\'')
		p++;
	return p;
}

/*
 * The tokenizer's states inside a tag, as the shift that picks the next
 * state out of a word of html_tag_next; the quoted-value states are not
 * needed (see html_skip_tag).
 */
#define HTML_NAME		0
#define HTML_BEFORE_ATTR	8
#define HTML_ATTR		16
#define HTML_AFTER_ATTR		24
#define HTML_BEFORE_VALUE	32
#define HTML_VALUE_UNQ		40
#define HTML_AFTER_VALUE	48

/* What a byte is to the tag states: other, whitespace, '/' or '='. */
#define HTML_C_OTHER	0
#define HTML_C_SPACE	1
#define HTML_C_SLASH	2
#define HTML_C_EQ	3

static const uint8_t html_tag_class[256] = {
	['\t'] = HTML_C_SPACE, ['\n'] = HTML_C_SPACE, ['\f'] = HTML_C_SPACE,
	['\r'] = HTML_C_SPACE, [' '] = HTML_C_SPACE, ['/'] = HTML_C_SLASH,
	['='] = HTML_C_EQ,
};

#define HTML_NEXT(name, ba, attr, aa, bv, vu, av)			\
	((uint64_t)(name) | (uint64_t)(ba) << 8 | (uint64_t)(attr) << 16 | \
	(uint64_t)(aa) << 24 | (uint64_t)(bv) << 32 | (uint64_t)(vu) << 40 | \
	(uint64_t)(av) << 48)

/*
 * The state after a byte of each class, byte s of a word for state s:
 * a transition is a shift and a mask, with no branch to mispredict.
 */
static const uint64_t html_tag_next[4] = {
	[HTML_C_OTHER] = HTML_NEXT(HTML_NAME, HTML_ATTR, HTML_ATTR, HTML_ATTR,
	    HTML_VALUE_UNQ, HTML_VALUE_UNQ, HTML_ATTR),
	[HTML_C_SPACE] = HTML_NEXT(HTML_BEFORE_ATTR, HTML_BEFORE_ATTR,
	    HTML_AFTER_ATTR, HTML_AFTER_ATTR, HTML_BEFORE_VALUE,
	    HTML_BEFORE_ATTR, HTML_BEFORE_ATTR),
	[HTML_C_SLASH] = HTML_NEXT(HTML_BEFORE_ATTR, HTML_BEFORE_ATTR,
	    HTML_BEFORE_ATTR, HTML_BEFORE_ATTR, HTML_VALUE_UNQ, HTML_VALUE_UNQ,
	    HTML_BEFORE_ATTR),
	[HTML_C_EQ] = HTML_NEXT(HTML_NAME, HTML_ATTR, HTML_BEFORE_VALUE,
	    HTML_BEFORE_VALUE, HTML_VALUE_UNQ, HTML_VALUE_UNQ, HTML_ATTR),
};

/*
 * Skips a start or end tag; p points just past its name's first letter.
 * Returns the position after its ">", or end when the input ends inside it.
 *
 * Every state but a quoted value's ends the tag at '>', and a quote opens
 * a value only in the state before a value (after "=").  So the tag ends at
 * the first '>' when no quote comes before it, as in most tags; only the
 * bytes between quotes are followed through the states, to tell whether a
 * quote opens a value.
 */
static const uint8_t *
html_skip_tag(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *q;
	unsigned s = HTML_NAME;

	for (;;) {
		if ((q = html_tag_stop(p, end)) == end)
			return end;
		if (*q == '>')
			return q + 1;
		for (; p < q; p++)
			s = (unsigned)(html_tag_next[html_tag_class[*p]] >> s) &
			    0xff;
		if (s != HTML_BEFORE_VALUE) {
			/* A quote in a name or an unquoted value. */
			s = (unsigned)(html_tag_next[HTML_C_OTHER] >> s) & 0xff;
			p = q + 1;
			continue;
		}
		if ((q = html_byte(q + 1, end, (char)*q)) == end)
			return end;
		p = q + 1;
		s = HTML_AFTER_VALUE;
	}
}

/*
 * Whether the tag name at name (up to the first whitespace, '/' or '>', or
 * the end) is want, in any case.
 */
static int
html_tag_is(const uint8_t *name, const uint8_t *end, const char *want,
    size_t len)
{
	size_t i;

	if ((size_t)(end - name) < len)
		return 0;
	for (i = 0; i < len; i++)
		if ((name[i] | 0x20) != (uint8_t)want[i])
			return 0;
	return name + len == end || name[len] == '>' || name[len] == '/' ||
	    textbytes_html_space(name[len]);
}

/* The first "</" in [p, end), or end. */
static const uint8_t *
html_end_tag(const uint8_t *p, const uint8_t *end)
{
#ifdef __SSE2__
	/* Two loads a block: the second, one byte on, must fit too. */
	for (; end - p > HTML_VEC; p += HTML_VEC) {
		unsigned m = html_bits(_mm_and_si128(html_eq(html_load(p), '<'),
		    html_eq(html_load(p + 1), '/')));

		if (m != 0)
			return p + __builtin_ctz(m);
	}
#endif
	for (; end - p >= 2; p++)
		if (p[0] == '<' && p[1] == '/')
			return p;
	return end;
}

/*
 * Skips the raw text of a script or style element (tag, len bytes) and its
 * end tag.
 */
static const uint8_t *
html_skip_rawtext(const uint8_t *p, const uint8_t *end, const char *tag,
    size_t len)
{
	for (; (p = html_end_tag(p, end)) != end; p++)
		/* The end tag's name must be followed by a byte. */
		if ((size_t)(end - p) >= len + 3 &&
		    html_tag_is(p + 2, end, tag, len))
			return html_skip_tag(p + 3, end);
	return end;
}

/*
 * The end of the comment at p ("<!--"): after the first "-->" from p + 2
 * (so "<!-->" and "<!--->" are empty comments) or "--!>" from p + 4,
 * whichever comes first; or end.
 */
static const uint8_t *
html_comment_end(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *q = p + 2;

#ifdef __SSE2__
	/* Four loads a block, each a byte further on. */
	for (; end - q >= HTML_VEC + 3; q += HTML_VEC) {
		__m128i v2 = html_load(q + 2);
		unsigned m = html_bits(_mm_and_si128(_mm_and_si128(
		    html_eq(html_load(q), '-'), html_eq(html_load(q + 1), '-')),
		    _mm_or_si128(html_eq(v2, '>'), _mm_and_si128(
		    html_eq(v2, '!'), html_eq(html_load(q + 3), '>')))));

		for (; m != 0; m &= m - 1) {
			const uint8_t *r = q + __builtin_ctz(m);

			if (r[2] == '>')
				return r + 3;
			if (r >= p + 4)
				return r + 4;
		}
	}
#endif
	for (; end - q >= 3; q++) {
		if (q[0] != '-' || q[1] != '-')
			continue;
		if (q[2] == '>')
			return q + 3;
		if (end - q >= 4 && q[2] == '!' && q[3] == '>' && q >= p + 4)
			return q + 4;
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
	const uint8_t *q;

	if (end - p < 2)
		return 0;
	if (textbytes_alpha(p[1])) {
		q = html_skip_tag(p + 2, end);
		if ((p[1] | 0x20) == 's') {
			if (html_tag_is(p + 1, end, "script", 6))
				q = html_skip_rawtext(q, end, "script", 6);
			else if (html_tag_is(p + 1, end, "style", 5))
				q = html_skip_rawtext(q, end, "style", 5);
		}
		return (size_t)(q - p);
	}
	if (p[1] == '/') {
		if (end - p >= 3 && textbytes_alpha(p[2]))
			return (size_t)(html_skip_tag(p + 3, end) - p);
	} else if (p[1] == '!') {
		if (end - p >= 4 && p[2] == '-' && p[3] == '-')
			return (size_t)(html_comment_end(p, end) - p);
	} else if (p[1] != '?')
		return 0;
	q = html_byte(p + 1, end, '>');
	return q == end ? (size_t)(end - p) : (size_t)(q + 1 - p);
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
	for (run = 0; q + run < end && run < 32 &&
	    textbytes_alnum(q[run]); run++)
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
	const uint8_t *p = st->p, *end = st->end, *q;
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
		q = html_text_copy(p, end, out + o, cap - o);
		o += (size_t)(q - p);
		p = q;
	}
	st->p = p;
	return o;
}
