/*
 * urlgen: the URLs the URL benchmarks use.  See urlgen.h.
 */
#include "urlgen.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
add(struct urllist *l, char *u)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1 << 20;
		if ((l->urls = realloc(l->urls, l->cap * sizeof(*l->urls))) ==
		    NULL) {
			perror("urlgen");
			exit(1);
		}
	}
	l->urls[l->n++] = u;
}

void
urlgen_synthetic(struct urllist *l, size_t n, size_t offset)
{
	static const char *const sections[] = { "news", "world", "sport",
	    "business", "tech", "culture", "opinion", "video" };

	for (size_t j = 0; j < n; j++) {
		size_t i = j + offset;
		char *u;

		if (asprintf(&u, "http://www.site%zu.example/%s/%zu.html"
		    "?ref=%zu", i % 50000, sections[i % 8], i,
		    (i * 7) % 1000) == -1) {
			perror("urlgen");
			exit(1);
		}
		add(l, u);
	}
}

void
urlgen_file(struct urllist *l, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, *u;
	size_t lcap = 0;
	ssize_t len;

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	while ((len = getline(&line, &lcap, f)) > 0) {
		char *s = line, *tab;

		while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r'))
			s[--len] = '\0';
		if ((tab = strchr(s, '\t')) != NULL)
			s = tab + 1;
		if (*s == '\0')
			continue;
		if (strstr(s, "://") == NULL) {
			if (asprintf(&u, "http://%s", s) == -1)
				exit(1);
		} else
			u = strdup(s);
		add(l, u);
	}
	free(line);
	fclose(f);
}

void
urlgen_free(struct urllist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->urls[i]);
	free(l->urls);
	memset(l, 0, sizeof(*l));
}

char **
urlgen_shuffled(const struct urllist *l, unsigned long long seed)
{
	char **v = malloc((l->n + 1) * sizeof(*v));
	uint64_t x = seed;

	if (v == NULL) {
		fprintf(stderr, "urlgen: out of memory\n");
		exit(1);
	}
	memcpy(v, l->urls, l->n * sizeof(*v));
	for (size_t i = l->n; i > 1; i--) {
		size_t j;
		char *t;

		/* splitmix64 */
		x += 0x9e3779b97f4a7c15ULL;
		j = (size_t)(((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL) %
		    i);
		t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
	return v;
}
