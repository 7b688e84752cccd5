/*
 * stopwords: the set of terms that simhash leaves out.  See stopwords.h.
 *
 * Words live in an array (their order of addition, for stopwords_list) and
 * in an open-addressing hash table of indices into it, for
 * stopwords_contains.  The engine builds its own vectorised lookup table
 * from the list (simhash.c); this one serves everything else.
 */
#include "stopwords.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textbytes.h"

struct stopwords {
	char **words;		/* NULL-terminated */
	size_t *lens;
	size_t n, cap;
	uint32_t *slots;	/* index + 1, 0 = empty; size nslots */
	size_t nslots;		/* power of two, at least twice n */
	size_t max_len;
};

static uint64_t
stopwords_hash(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	while (len-- > 0)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

/* Slot of the word, or of the empty slot where it would go. */
static size_t
stopwords_find(const struct stopwords *sw, const uint8_t *p, size_t len)
{
	size_t mask = sw->nslots - 1, i = stopwords_hash(p, len) & mask;
	uint32_t v;

	while ((v = sw->slots[i]) != 0) {
		if (sw->lens[v - 1] == len && memcmp(sw->words[v - 1], p,
		    len) == 0)
			break;
		i = (i + 1) & mask;
	}
	return i;
}

static int
stopwords_grow(struct stopwords *sw)
{
	size_t ncap = sw->cap ? sw->cap * 2 : 64, i, nslots = ncap * 2;
	char **words;
	size_t *lens;
	uint32_t *slots;

	if ((words = realloc(sw->words, (ncap + 1) * sizeof(*words))) == NULL)
		return -1;
	sw->words = words;
	if ((lens = realloc(sw->lens, ncap * sizeof(*lens))) == NULL)
		return -1;
	sw->lens = lens;
	if ((slots = calloc(nslots, sizeof(*slots))) == NULL)
		return -1;
	free(sw->slots);
	sw->slots = slots;
	sw->nslots = nslots;
	sw->cap = ncap;
	for (i = 0; i < sw->n; i++)
		sw->slots[stopwords_find(sw, (const uint8_t *)sw->words[i],
		    sw->lens[i])] = (uint32_t)i + 1;
	return 0;
}

struct stopwords *
stopwords_new(void)
{
	struct stopwords *sw;

	if ((sw = calloc(1, sizeof(*sw))) == NULL)
		return NULL;
	if (stopwords_grow(sw) == -1) {
		stopwords_free(sw);
		return NULL;
	}
	sw->words[0] = NULL;
	return sw;
}

void
stopwords_free(struct stopwords *sw)
{
	size_t i;

	if (sw == NULL)
		return;
	for (i = 0; i < sw->n; i++)
		free(sw->words[i]);
	free(sw->words);
	free(sw->lens);
	free(sw->slots);
	free(sw);
}

int
stopwords_add(struct stopwords *sw, const void *word, size_t len,
    char **cause)
{
	const uint8_t *src = word;
	char *w = NULL;
	size_t i;

	if (len == 0) {
		*cause = strdup("empty stop word");
		return -1;
	}
	if (len > STOPWORDS_MAX_LEN) {
		if (asprintf(cause, "stop word longer than %d bytes",
		    STOPWORDS_MAX_LEN) == -1)
			*cause = NULL;
		return -1;
	}
	if ((w = malloc(len + 1)) == NULL)
		goto nomem;
	for (i = 0; i < len; i++) {
		if (src[i] == '\0') {
			free(w);
			*cause = strdup("stop word contains a NUL byte");
			return -1;
		}
		if (textbytes_is_separator(src[i])) {
			if (asprintf(cause, "stop word \"%.*s\" contains the "
			    "separator '%c' (0x%02x); no term ever does",
			    (int)len, (const char *)src, src[i] >= 0x20 ?
			    src[i] : '?', src[i]) == -1)
				*cause = NULL;
			free(w);
			return -1;
		}
		w[i] = (char)textbytes_fold(src[i]);
	}
	w[len] = '\0';
	if (sw->slots[stopwords_find(sw, (uint8_t *)w, len)] != 0) {
		free(w);
		return 0;
	}
	if (sw->n == sw->cap && stopwords_grow(sw) == -1)
		goto nomem;
	sw->words[sw->n] = w;
	sw->lens[sw->n] = len;
	sw->n++;
	sw->words[sw->n] = NULL;
	sw->slots[stopwords_find(sw, (uint8_t *)w, len)] = (uint32_t)sw->n;
	if (len > sw->max_len)
		sw->max_len = len;
	return 0;
nomem:
	free(w);
	*cause = strdup(strerror(ENOMEM));
	return -1;
}

static int
stopwords_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	    c == '\r';
}

/*
 * Reads a list from f (NULL: it could not be opened, errno says why),
 * named path in messages, and closes f.
 */
static struct stopwords *
stopwords_read(FILE *f, const char *path, char **cause)
{
	struct stopwords *sw = NULL;
	char *line = NULL, *why = NULL;
	size_t cap = 0, lineno = 0, s, e;
	ssize_t n;

	if (f == NULL) {
		why = strdup(strerror(errno));
		goto err;
	}
	if ((sw = stopwords_new()) == NULL) {
		why = strdup(strerror(ENOMEM));
		goto err;
	}
	while ((n = getline(&line, &cap, f)) != -1) {
		lineno++;
		for (e = 0; e < (size_t)n && line[e] != '#'; e++)
			;
		for (s = 0; s < e && stopwords_space(line[s]); s++)
			;
		while (e > s && stopwords_space(line[e - 1]))
			e--;
		if (e == s)
			continue;
		for (size_t i = s; i < e; i++) {
			if (stopwords_space(line[i])) {
				if (asprintf(&why, "more than one word on a "
				    "line (\"%.*s\")", (int)(e - s),
				    line + s) == -1)
					why = NULL;
				goto err;
			}
		}
		if (stopwords_add(sw, line + s, e - s, &why) == -1)
			goto err;
	}
	if (ferror(f)) {
		lineno = 0;
		why = strdup(strerror(errno));
		goto err;
	}
	free(line);
	fclose(f);
	return sw;
err:
	if (lineno > 0) {
		if (asprintf(cause, "%s:%zu: %s", path, lineno,
		    why != NULL ? why : "out of memory") == -1)
			*cause = NULL;
	} else if (asprintf(cause, "%s: %s", path, why != NULL ? why :
	    "out of memory") == -1)
		*cause = NULL;
	free(why);
	free(line);
	if (f != NULL)
		fclose(f);
	stopwords_free(sw);
	return NULL;
}

struct stopwords *
stopwords_load(const char *path, char **cause)
{
	return stopwords_read(fopen(path, "r"), path, cause);
}

struct stopwords *
stopwords_parse(const void *text, size_t len, const char *name,
    char **cause)
{
	struct stopwords *sw;

	/* A stream of no bytes is an empty list. */
	if (len == 0) {
		if ((sw = stopwords_new()) == NULL &&
		    asprintf(cause, "%s: %s", name, strerror(ENOMEM)) == -1)
			*cause = NULL;
		return sw;
	}
	return stopwords_read(fmemopen((void *)text, len, "r"), name, cause);
}

int
stopwords_contains(const struct stopwords *sw, const void *term, size_t len)
{
	if (sw == NULL || len == 0 || len > sw->max_len)
		return 0;
	return sw->slots[stopwords_find(sw, term, len)] != 0;
}

size_t
stopwords_count(const struct stopwords *sw)
{
	return sw == NULL ? 0 : sw->n;
}

size_t
stopwords_max_len(const struct stopwords *sw)
{
	return sw == NULL ? 0 : sw->max_len;
}

const char *const *
stopwords_list(const struct stopwords *sw)
{
	return (const char *const *)sw->words;
}
