/*
 * simhash_ref: the naive reference simhash.  See simhash_ref.h.
 */
#include "simhash_ref.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"

struct ref_stopwords {
	char **words;		/* sorted */
	size_t n;
};

static int
ref_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct ref_stopwords *
ref_stopwords_new(const char *const *words)
{
	struct ref_stopwords *sw = calloc(1, sizeof(*sw));
	size_t n = 0;

	while (words[n] != NULL)
		n++;
	sw->words = calloc(n + 1, sizeof(char *));
	for (sw->n = 0; sw->n < n; sw->n++)
		sw->words[sw->n] = strdup(words[sw->n]);
	qsort(sw->words, sw->n, sizeof(char *), ref_cmp);
	return sw;
}

void
ref_stopwords_free(struct ref_stopwords *sw)
{
	size_t i;

	if (sw == NULL)
		return;
	for (i = 0; i < sw->n; i++)
		free(sw->words[i]);
	free(sw->words);
	free(sw);
}

/* Whether the term is a stop word (term is a NUL-terminated copy). */
static int
ref_is_stopword(const struct ref_stopwords *sw, const char *term)
{
	if (sw == NULL)
		return 0;
	return bsearch(&term, sw->words, sw->n, sizeof(char *), ref_cmp) !=
	    NULL;
}

uint64_t
ref_term_hash(const unsigned char *term, size_t len, int paper)
{
	uint64_t h = 0;
	size_t i;

	for (i = 0; i < len; i++)
		h = term[i] + (h << 6) + (h << 16) - h;
	if (!paper) {
		h ^= h >> 33;
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 33;
		h *= 0xc4ceb9fe1a85ec53ULL;
		h ^= h >> 33;
	}
	return h;
}

/* A growing output string. */
struct ref_buf {
	char *s;
	size_t len, cap;
};

static void
ref_put(struct ref_buf *b, char c)
{
	if (b->len + 1 >= b->cap) {
		b->cap = b->cap * 2 + 64;
		b->s = realloc(b->s, b->cap);
	}
	b->s[b->len++] = c;
	b->s[b->len] = '\0';
}

static int
ref_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
ref_tag_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

/* Whether doc[i..] starts with s, ignoring ASCII case. */
static int
ref_starts(const char *doc, size_t len, size_t i, const char *s)
{
	size_t n = strlen(s), k;

	if (i + n > len)
		return 0;
	for (k = 0; k < n; k++)
		if (tolower((unsigned char)doc[i + k]) != s[k])
			return 0;
	return 1;
}

/*
 * From i, just after the first letter of a tag name, to just after the
 * tag's ">" (or len).  The tag's name goes into name (lower case, cut to
 * 15 characters).
 */
static size_t
ref_skip_tag(const char *doc, size_t len, size_t i, char *name)
{
	size_t n = 0;
	char quote;

	name[n++] = (char)tolower((unsigned char)doc[i - 1]);
	/* The name runs to whitespace, "/" or ">". */
	while (i < len && !ref_tag_space(doc[i]) && doc[i] != '/' &&
	    doc[i] != '>') {
		/* (A NUL in a name is not the end of it.) */
		if (n < 15)
			name[n++] = doc[i] == '\0' ? '?' :
			    (char)tolower((unsigned char)doc[i]);
		i++;
	}
	name[n] = '\0';
	/* Attributes: name, maybe "=" and a value, maybe quoted. */
	while (i < len) {
		if (doc[i] == '>')
			return i + 1;
		if (ref_tag_space(doc[i]) || doc[i] == '/') {
			i++;
			continue;
		}
		/* An attribute name: up to whitespace, "/", ">" or "=". */
		i++;
		while (i < len && !ref_tag_space(doc[i]) && doc[i] != '/' &&
		    doc[i] != '>' && doc[i] != '=')
			i++;
		while (i < len && ref_tag_space(doc[i]))
			i++;
		if (i >= len || doc[i] != '=')
			continue;
		/* "=" and the value. */
		i++;
		while (i < len && ref_tag_space(doc[i]))
			i++;
		if (i >= len)
			break;
		if (doc[i] == '"' || doc[i] == '\'') {
			quote = doc[i++];
			while (i < len && doc[i] != quote)
				i++;
			if (i < len)
				i++;
		} else {
			while (i < len && !ref_tag_space(doc[i]) &&
			    doc[i] != '>')
				i++;
		}
	}
	return len;
}

static void
ref_put_utf8(struct ref_buf *b, unsigned long cp)
{
	if (cp < 0x80) {
		ref_put(b, (char)cp);
	} else if (cp < 0x800) {
		ref_put(b, (char)(0xc0 | (cp >> 6)));
		ref_put(b, (char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		ref_put(b, (char)(0xe0 | (cp >> 12)));
		ref_put(b, (char)(0x80 | ((cp >> 6) & 0x3f)));
		ref_put(b, (char)(0x80 | (cp & 0x3f)));
	} else {
		ref_put(b, (char)(0xf0 | (cp >> 18)));
		ref_put(b, (char)(0x80 | ((cp >> 12) & 0x3f)));
		ref_put(b, (char)(0x80 | ((cp >> 6) & 0x3f)));
		ref_put(b, (char)(0x80 | (cp & 0x3f)));
	}
}

/* A named reference of exactly this name, by a plain linear search. */
static const struct html_entity *
ref_entity(const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < html_entities_count; i++)
		if (html_entities[i].namelen == n &&
		    memcmp(html_entities[i].name, name, n) == 0)
			return &html_entities[i];
	return NULL;
}

/*
 * A character reference at doc[i] == '&': appends its text and returns the
 * index after it, or returns i when there is none.
 */
static size_t
ref_charref(const char *doc, size_t len, size_t i, struct ref_buf *b)
{
	static const unsigned long cp1252[32] = {
		0x20ac, 0x81, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021,
		0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8d, 0x017d, 0x8f,
		0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
		0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0x9d, 0x017e, 0x0178,
	};
	const struct html_entity *e;
	unsigned long v = 0;
	size_t j = i + 1, start, n, k;
	int base = 10, digit;

	if (j < len && doc[j] == '#') {
		j++;
		if (j < len && (doc[j] == 'x' || doc[j] == 'X')) {
			base = 16;
			j++;
		}
		start = j;
		while (j < len) {
			char c = doc[j];

			if (c >= '0' && c <= '9')
				digit = c - '0';
			else if (base == 16 && c >= 'a' && c <= 'f')
				digit = c - 'a' + 10;
			else if (base == 16 && c >= 'A' && c <= 'F')
				digit = c - 'A' + 10;
			else
				break;
			if (v <= 0x10ffff)
				v = v * base + digit;
			j++;
		}
		if (j == start)
			return i;
		if (j < len && doc[j] == ';')
			j++;
		if (v == 0 || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
			v = 0xfffd;
		else if (v >= 0x80 && v <= 0x9f)
			v = cp1252[v - 0x80];
		ref_put_utf8(b, v);
		return j;
	}
	/* A name: the longest one in the table that the input starts with. */
	for (n = 32; n >= 1; n--) {
		if (j + n > len)
			continue;
		e = ref_entity(doc + j, n);
		if (e == NULL)
			continue;
		for (k = 0; k < e->valuelen; k++)
			ref_put(b, e->value[k]);
		return j + n;
	}
	return i;
}

char *
ref_html_text(const char *doc, size_t len, size_t *outlen)
{
	struct ref_buf b = { NULL, 0, 0 };
	char name[16];
	size_t i = 0, j, k;

	ref_put(&b, ' ');
	b.len = 0;
	while (i < len) {
		if (doc[i] == '&') {
			j = ref_charref(doc, len, i, &b);
			if (j == i) {
				ref_put(&b, '&');
				j = i + 1;
			}
			i = j;
			continue;
		}
		if (doc[i] != '<') {
			ref_put(&b, doc[i]);
			i++;
			continue;
		}
		/* "<": some markup, or just text. */
		if (ref_starts(doc, len, i, "<!--")) {
			/* A comment: to "-->" (from the first "-") or "--!>". */
			for (j = i + 2; j < len; j++) {
				if (ref_starts(doc, len, j, "-->")) {
					j += 3;
					break;
				}
				if (j >= i + 4 && ref_starts(doc, len, j,
				    "--!>")) {
					j += 4;
					break;
				}
			}
			if (j > len)
				j = len;
		} else if (i + 1 < len && ref_letter(doc[i + 1])) {
			j = ref_skip_tag(doc, len, i + 2, name);
			if (strcmp(name, "script") == 0 ||
			    strcmp(name, "style") == 0) {
				/* Raw text up to the matching end tag. */
				for (k = j; k < len; k++) {
					if (doc[k] != '<' || k + 1 >= len ||
					    doc[k + 1] != '/' || !ref_starts(doc,
					    len, k + 2, name))
						continue;
					if (k + 2 + strlen(name) >= len)
						continue;
					char c = doc[k + 2 + strlen(name)];
					if (c == '>' || c == '/' ||
					    ref_tag_space(c))
						break;
				}
				if (k < len)
					j = ref_skip_tag(doc, len, k + 3, name);
				else
					j = len;
			}
		} else if (i + 2 < len && doc[i + 1] == '/' &&
		    ref_letter(doc[i + 2])) {
			j = ref_skip_tag(doc, len, i + 3, name);
		} else if (i + 1 < len && (doc[i + 1] == '!' ||
		    doc[i + 1] == '?' || doc[i + 1] == '/')) {
			/* A declaration: to the next ">". */
			for (j = i + 1; j < len && doc[j] != '>'; j++)
				;
			if (j < len)
				j++;
		} else {
			ref_put(&b, '<');
			i++;
			continue;
		}
		ref_put(&b, ' ');
		i = j;
	}
	*outlen = b.len;
	return b.s;
}

static int
ref_separator(unsigned char c)
{
	return c < 128 && (isspace(c) || ispunct(c));
}

static int
ref_count(const char *text, size_t len, int paper, int preprocessed,
    const struct ref_stopwords *sw, uint64_t *fp)
{
	long long v[64] = { 0 };
	char *term = malloc(len + 1);
	size_t i = 0, n, nterms = 0;
	uint64_t h;
	int bit;

	while (i < len) {
		/* Skip separators. */
		if (preprocessed ? text[i] == ' ' :
		    ref_separator((unsigned char)text[i])) {
			i++;
			continue;
		}
		/* A term: the run of non-separators, lower-cased. */
		n = 0;
		while (i < len && !(preprocessed ? text[i] == ' ' :
		    ref_separator((unsigned char)text[i]))) {
			char c = text[i];

			if (!preprocessed && c >= 'A' && c <= 'Z')
				c = (char)(c - 'A' + 'a');
			term[n++] = c;
			i++;
		}
		term[n] = '\0';
		if (!preprocessed && memchr(term, '\0', n) == NULL &&
		    ref_is_stopword(sw, term))
			continue;
		h = ref_term_hash((unsigned char *)term, n, paper);
		for (bit = 0; bit < 64; bit++)
			v[bit] += ((h >> bit) & 1) ? 1 : -1;
		nterms++;
	}
	free(term);
	if (nterms == 0)
		return -1;
	*fp = 0;
	for (bit = 0; bit < 64; bit++)
		if (v[bit] >= 0)
			*fp |= 1ULL << bit;
	return 0;
}

int
ref_simhash(const char *doc, size_t len, int html, int paper,
    const struct ref_stopwords *sw, uint64_t *fp)
{
	char *text;
	size_t n;
	int rc;

	if (!html)
		return ref_count(doc, len, paper, 0, sw, fp);
	text = ref_html_text(doc, len, &n);
	rc = ref_count(text, n, paper, 0, sw, fp);
	free(text);
	return rc;
}

int
ref_simhash_preprocessed(const char *doc, size_t len, int paper,
    uint64_t *fp)
{
	return ref_count(doc, len, paper, 1, NULL, fp);
}
