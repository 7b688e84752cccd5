/*
 * extract_bench: speed of main-content extraction on one thread, alone and
 * followed by the fingerprint of the text it gives (what nddd does with an
 * HTML page), with the fingerprint of the raw page (simhash's own HTML
 * preprocessing) for scale.  tests/bench/extract_bench.py runs it and sets
 * its figures beside readability-lxml's and the quality of both.
 *
 *   extract_bench [-s seconds] [-r repeats] [-S stopwords] [-o outdir]
 *       dir...
 *
 * Every *.html file of each dir is a page; the dirs are measured one by
 * one, then together.  A measurement runs over the pages again and again
 * for at least the given time (default 0.5 s); each is repeated (default 5)
 * and the best and median printed, as lines
 *
 *   RESULT set=NAME mode=MODE pages=N bytes=B best_pps=X best_mbps=Y
 *       median_pps=X median_mbps=Y
 *
 * with MODE main (extract_main), main+fp (extract_main, then simhash of its
 * text), whole (extract_whole) or html-fp (simhash of the page as HTML).
 * MB are 10^6 bytes of input.  With -o, the text of each page is written
 * to outdir/NAME.main (extract_main's, its status in outdir/status.tsv) and
 * outdir/NAME.whole (extract_whole's), NAME the file's name without .html.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "extract.h"
#include "simhash.h"
#include "stopwords.h"

struct page {
	char *name;
	uint8_t *data;
	size_t len;
};

struct set {
	const char *name;
	struct page *pages;
	size_t n;
	size_t bytes;
};

enum mode { M_MAIN, M_MAIN_FP, M_WHOLE, M_HTML_FP };
static const char *const mode_names[] = { "main", "main+fp", "whole",
    "html-fp" };

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint8_t *
read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 ||
	    (buf = malloc((size_t)n + 1)) == NULL) {
		fclose(f);
		return NULL;
	}
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void
load_set(struct set *s, const char *dir)
{
	char **names = NULL, path[4096];
	size_t n = 0, i;
	struct dirent *de;
	DIR *d;

	if ((d = opendir(dir)) == NULL) {
		fprintf(stderr, "extract_bench: %s: %s\n", dir,
		    strerror(errno));
		exit(1);
	}
	while ((de = readdir(d)) != NULL) {
		size_t nl = strlen(de->d_name);

		if (nl < 6 || strcmp(de->d_name + nl - 5, ".html") != 0)
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	if (n == 0) {
		fprintf(stderr, "extract_bench: %s: no .html file\n", dir);
		exit(1);
	}
	qsort(names, n, sizeof(*names), name_cmp);
	s->pages = calloc(n, sizeof(*s->pages));
	s->name = dir;
	for (i = 0; i < n; i++) {
		struct page *p = &s->pages[s->n];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if ((p->data = read_file(path, &p->len)) == NULL) {
			fprintf(stderr, "extract_bench: %s: %s\n", path,
			    strerror(errno));
			exit(1);
		}
		names[i][strlen(names[i]) - 5] = '\0';
		p->name = names[i];
		s->bytes += p->len;
		s->n++;
	}
	free(names);
}

static void
write_text(const char *dir, const char *name, const char *ext,
    const uint8_t *text, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext);
	if ((f = fopen(path, "wb")) == NULL || fwrite(text, 1, len, f) !=
	    len || fclose(f) != 0) {
		fprintf(stderr, "extract_bench: %s: %s\n", path,
		    strerror(errno));
		exit(1);
	}
}

static void
dump(const struct set *s, const char *outdir, struct extract_scratch *ex)
{
	char path[4096];
	const uint8_t *out;
	size_t i, len;
	FILE *st;
	int r;

	mkdir(outdir, 0777);
	snprintf(path, sizeof(path), "%s/status.tsv", outdir);
	if ((st = fopen(path, "a")) == NULL) {
		fprintf(stderr, "extract_bench: %s: %s\n", path,
		    strerror(errno));
		exit(1);
	}
	for (i = 0; i < s->n; i++) {
		const struct page *p = &s->pages[i];

		if ((r = extract_main(ex, p->data, p->len, &out, &len)) == -1) {
			fprintf(stderr, "extract_bench: out of memory\n");
			exit(1);
		}
		write_text(outdir, p->name, "main", out, len);
		fprintf(st, "%s\t%s\n", p->name, r == EXTRACT_MAIN ? "main" :
		    "whole");
		if (extract_whole(ex, p->data, p->len, &out, &len) == -1) {
			fprintf(stderr, "extract_bench: out of memory\n");
			exit(1);
		}
		write_text(outdir, p->name, "whole", out, len);
	}
	fclose(st);
}

/* One run over the sets' pages for at least min seconds: pages/s, MB/s. */
static void
run(struct set *const *sets, size_t nsets, enum mode m, double min,
    struct extract_scratch *ex, const struct simhash *sh,
    struct simhash_scratch *hs, double *pps, double *mbps)
{
	size_t pages = 0, bytes = 0, i, k;
	const uint8_t *out;
	uint64_t fp, sum = 0;
	double start = now(), el;
	size_t len;

	do {
		for (k = 0; k < nsets; k++) {
			for (i = 0; i < sets[k]->n; i++) {
				const struct page *p = &sets[k]->pages[i];

				switch (m) {
				case M_MAIN:
					extract_main(ex, p->data, p->len, &out,
					    &len);
					sum += len;
					break;
				case M_MAIN_FP:
					extract_main(ex, p->data, p->len, &out,
					    &len);
					fp = 0;
					simhash_compute(sh, hs,
					    SIMHASH_INPUT_TEXT, out, len, &fp);
					sum += fp;
					break;
				case M_WHOLE:
					extract_whole(ex, p->data, p->len,
					    &out, &len);
					sum += len;
					break;
				case M_HTML_FP:
					fp = 0;
					simhash_compute(sh, hs,
					    SIMHASH_INPUT_HTML, p->data, p->len,
					    &fp);
					sum += fp;
					break;
				}
				pages++;
				bytes += p->len;
			}
		}
	} while ((el = now() - start) < min);
	/* Keeps the work from being optimised away. */
	if (sum == 42)
		fprintf(stderr, " ");
	*pps = (double)pages / el;
	*mbps = (double)bytes / el / 1e6;
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
measure(const char *label, struct set *const *sets, size_t nsets,
    double min, int repeats, struct extract_scratch *ex,
    const struct simhash *sh, struct simhash_scratch *hs)
{
	double pps[64], mbps[64];
	size_t pages = 0, bytes = 0, k;
	int m, r;

	for (k = 0; k < nsets; k++) {
		pages += sets[k]->n;
		bytes += sets[k]->bytes;
	}
	for (m = M_MAIN; m <= M_HTML_FP; m++) {
		for (r = 0; r < repeats; r++)
			run(sets, nsets, (enum mode)m, min, ex, sh, hs, &pps[r],
			    &mbps[r]);
		qsort(pps, (size_t)repeats, sizeof(double), dbl_cmp);
		qsort(mbps, (size_t)repeats, sizeof(double), dbl_cmp);
		printf("RESULT set=%s mode=%s pages=%zu bytes=%zu "
		    "best_pps=%.1f best_mbps=%.2f median_pps=%.1f "
		    "median_mbps=%.2f\n", label, mode_names[m], pages, bytes,
		    pps[repeats - 1], mbps[repeats - 1], pps[repeats / 2],
		    mbps[repeats / 2]);
		fflush(stdout);
	}
}

static void
usage(void)
{
	fprintf(stderr, "usage: extract_bench [-s seconds] [-r repeats] "
	    "[-S stopwords] [-o outdir] dir...\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *sw_path = "conf/stopwords.txt", *outdir = NULL;
	struct set **sets;
	struct extract_scratch *ex;
	struct simhash_scratch *hs;
	struct stopwords *sw;
	struct simhash *sh;
	double seconds = 0.5;
	char *cause = NULL;
	int c, repeats = 5, i, n;

	while ((c = getopt(argc, argv, "s:r:S:o:")) != -1) {
		switch (c) {
		case 's':
			seconds = atof(optarg);
			break;
		case 'r':
			repeats = atoi(optarg);
			if (repeats < 1 || repeats > 64)
				usage();
			break;
		case 'S':
			sw_path = optarg;
			break;
		case 'o':
			outdir = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	if ((sw = stopwords_load(sw_path, &cause)) == NULL ||
	    (sh = simhash_new(SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &cause)) ==
	    NULL) {
		fprintf(stderr, "extract_bench: %s\n", cause);
		return 1;
	}
	if ((ex = extract_scratch_new()) == NULL ||
	    (hs = simhash_scratch_new()) == NULL) {
		fprintf(stderr, "extract_bench: out of memory\n");
		return 1;
	}
	n = argc;
	sets = calloc((size_t)n, sizeof(*sets));
	for (i = 0; i < n; i++) {
		sets[i] = calloc(1, sizeof(**sets));
		load_set(sets[i], argv[i]);
		if (outdir != NULL)
			dump(sets[i], outdir, ex);
	}
	printf("# simhash kernel: %s\n",
	    simhash_simd_name(simhash_simd_active()));
	if (seconds > 0) {
		for (i = 0; i < n; i++)
			measure(sets[i]->name, &sets[i], 1, seconds, repeats,
			    ex, sh, hs);
		if (n > 1)
			measure("all", sets, (size_t)n, seconds, repeats, ex,
			    sh, hs);
	}
	extract_scratch_free(ex);
	simhash_scratch_free(hs);
	simhash_free(sh);
	stopwords_free(sw);
	return 0;
}
