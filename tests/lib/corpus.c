/*
 * corpus: documents from the shared test data.  See corpus.h.
 */
#include "corpus.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
corpus_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long size;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size + 1)) !=
	    NULL) {
		if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
			free(buf);
			buf = NULL;
		} else {
			buf[size] = '\0';
			*len = (size_t)size;
		}
	}
	fclose(f);
	return buf;
}

static void
corpus_add(struct corpus *c, const char *data, size_t len)
{
	if ((c->n & (c->n - 1)) == 0 || c->n == 0)
		c->docs = realloc(c->docs, (c->n ? c->n * 2 : 1) *
		    sizeof(*c->docs));
	c->docs[c->n].data = malloc(len + 1);
	memcpy(c->docs[c->n].data, data, len);
	c->docs[c->n].data[len] = '\0';
	c->docs[c->n].len = len;
	c->n++;
	c->bytes += len;
}

struct corpus *
corpus_reuters(const char *dir, size_t max)
{
	struct corpus *c = calloc(1, sizeof(*c));
	char path[4096], *buf, *p, *e;
	size_t len;
	int i;

	for (i = 0; i <= 21 && (max == 0 || c->n < max); i++) {
		snprintf(path, sizeof(path), "%s/reut2-%03d.sgm", dir, i);
		if ((buf = corpus_read(path, &len)) == NULL)
			continue;
		for (p = buf; (max == 0 || c->n < max) &&
		    (p = strstr(p, "<BODY>")) != NULL; p = e) {
			p += 6;
			if ((e = strstr(p, "</BODY>")) == NULL)
				break;
			corpus_add(c, p, (size_t)(e - p));
		}
		free(buf);
	}
	if (c->n == 0) {
		corpus_free(c);
		return NULL;
	}
	return c;
}

static int
corpus_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct corpus *
corpus_files(const char *dir, const char *suffix)
{
	struct corpus *c = calloc(1, sizeof(*c));
	char **names = NULL, path[4096], *buf;
	size_t n = 0, i, len, sl = strlen(suffix);
	struct dirent *de;
	DIR *d;

	if ((d = opendir(dir)) == NULL) {
		free(c);
		return NULL;
	}
	while ((de = readdir(d)) != NULL) {
		size_t nl = strlen(de->d_name);

		if (nl < sl || strcmp(de->d_name + nl - sl, suffix) != 0)
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), corpus_name_cmp);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if ((buf = corpus_read(path, &len)) != NULL) {
			corpus_add(c, buf, len);
			free(buf);
		}
		free(names[i]);
	}
	free(names);
	if (c->n == 0) {
		corpus_free(c);
		return NULL;
	}
	return c;
}

void
corpus_free(struct corpus *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < c->n; i++)
		free(c->docs[i].data);
	free(c->docs);
	free(c);
}
