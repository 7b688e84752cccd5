/*
 * sketch_bench: what a document's sketch (text/sketch.h) costs, against
 * its simhash in the same run, on one thread.
 *
 *   sketch_bench [-d DATA] [-r ROUNDS] [-l LEVEL]
 *
 * The Reuters-21578 bodies read as text and the L3S-GN1 pages read as
 * HTML (their whole visible text, as [text] html = whole does), from DATA
 * (default ../shared/data).  For each set, the best of ROUNDS (default 7)
 * passes over every document of sketch_compute, then of simhash_compute
 * with the default term hash and the same stop words, at the vector level
 * LEVEL (default: the best this CPU has; avx2 or scalar force the code a
 * CPU without AVX-512 runs).  Prints microseconds per document, MB/s, and
 * the sketch's cost over the simhash's.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchnet.h"
#include "corpus.h"
#include "simhash.h"
#include "sketch.h"
#include "stopwords.h"

struct engines {
	const struct stopwords *sw;
	struct sketch_scratch *sk;
	struct simhash *sh;
	struct simhash_scratch *ss;
};

/* The best of rounds passes over c, seconds; sketch: sketches, else
 * fingerprints.  *check gathers the results, so that none is skipped. */
static double
best_pass(const struct engines *e, const struct corpus *c,
    enum simhash_input in, int sketch, int rounds, uint64_t *check)
{
	double best = 1e30;

	for (int r = 0; r < rounds; r++) {
		double t0 = bench_now(), t;

		for (size_t i = 0; i < c->n; i++) {
			struct sketch s;
			uint64_t fp = 0;

			if (sketch) {
				if (sketch_compute(e->sw, e->sk, in,
				    c->docs[i].data, c->docs[i].len, &s) == -1) {
					fprintf(stderr, "sketch_bench: out of "
					    "memory\n");
					exit(1);
				}
				*check += s.n > 0 ? s.h[0] : 0;
			} else {
				(void)simhash_compute(e->sh, e->ss, in,
				    c->docs[i].data, c->docs[i].len, &fp);
				*check += fp;
			}
		}
		if ((t = bench_now() - t0) < best)
			best = t;
	}
	return best;
}

static void
run_set(const struct engines *e, const char *name, const struct corpus *c,
    enum simhash_input in, int rounds)
{
	uint64_t check = 0;
	double ts = best_pass(e, c, in, 1, rounds, &check);
	double tf = best_pass(e, c, in, 0, rounds, &check);

	printf("set=%s docs=%zu bytes=%zu sketch_us_per_doc=%.2f "
	    "sketch_mb_per_s=%.1f simhash_us_per_doc=%.2f "
	    "simhash_mb_per_s=%.1f sketch_over_simhash=%.1f check=%llx\n",
	    name, c->n, c->bytes, ts / (double)c->n * 1e6,
	    (double)c->bytes / ts / 1e6, tf / (double)c->n * 1e6,
	    (double)c->bytes / tf / 1e6, ts / tf,
	    (unsigned long long)(check & 0xffff));
}

int
main(int argc, char **argv)
{
	const char *data = "../shared/data", *level = "auto";
	char path[4096], *cause = NULL;
	enum simhash_simd lv;
	struct engines e;
	struct corpus *reuters, *pages;
	int rounds = 7, ch;

	while ((ch = getopt(argc, argv, "d:r:l:")) != -1) {
		switch (ch) {
		case 'd': data = optarg; break;
		case 'r': rounds = atoi(optarg); break;
		case 'l': level = optarg; break;
		default:
			fprintf(stderr, "usage: sketch_bench [-d DATA] "
			    "[-r ROUNDS] [-l LEVEL]\n");
			return 2;
		}
	}
	if (rounds < 1 || simhash_simd_parse(level, &lv) == -1 ||
	    simhash_simd_select(lv, &cause) == -1) {
		fprintf(stderr, "sketch_bench: %s\n", cause != NULL ? cause :
		    "bad -r or -l");
		return 2;
	}
	if ((e.sw = stopwords_load("conf/stopwords.txt", &cause)) == NULL) {
		fprintf(stderr, "sketch_bench: conf/stopwords.txt (run it "
		    "from the source tree): %s\n", cause);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/text_corpora/reuters21578", data);
	reuters = corpus_reuters(path, 0);
	snprintf(path, sizeof(path), "%s/text_corpora/l3s_gn1_html/original",
	    data);
	pages = corpus_files(path, ".html");
	if (reuters == NULL || reuters->n == 0 || pages == NULL ||
	    pages->n == 0) {
		fprintf(stderr, "sketch_bench: no documents under %s\n", data);
		return 1;
	}
	e.sk = sketch_scratch_new();
	e.sh = simhash_new(SIMHASH_TERM_HASH_SDBM_FMIX64, e.sw, &cause);
	e.ss = simhash_scratch_new();
	if (e.sk == NULL || e.sh == NULL || e.ss == NULL) {
		fprintf(stderr, "sketch_bench: out of memory\n");
		return 1;
	}
	printf("level=%s rounds=%d\n", simhash_simd_name(
	    simhash_simd_active()), rounds);
	run_set(&e, "reuters", reuters, SIMHASH_INPUT_TEXT, rounds);
	run_set(&e, "l3s_html", pages, SIMHASH_INPUT_HTML, rounds);
	return 0;
}
