/*
 * sketchidx_bench: the memory of what nddd holds per stored document for
 * its near-duplicate answers (the permuted simhash tables, nearidx, and the
 * sketch index, sketchidx), at a given number of documents, and the speed
 * of their loading and of candidate queries.
 *
 *   sketchidx_bench [-n DOCS] [-c CHURN] [-q QUERIES] [-b BLOCKS]
 *
 * DOCS documents (default 10,000,000) with random 64-bit fingerprints and
 * sketches of SKETCH_KEYS keys each (the keys of a real document: its
 * smallest shingle hashes, spread evenly over 32 bits), bulk loaded as at
 * start-up; then CHURN (default 1,000,000) deletes of stored documents and
 * as many inserts of new ones, one at a time, as online writes do; then
 * QUERIES (default 100,000) candidate queries of 128 hashes, half of them
 * with two keys of a stored document among their smallest (the probed
 * ones).  Prints, after the load and after the churn, the bytes each structure holds and their sum per
 * document, and the rates.  Document namespaces' tags (4 bytes per
 * document, once a named namespace holds documents) are not counted.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "nearidx.h"
#include "sketchidx.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t
splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Document i's keys: SKETCH_KEYS pseudo-random 32-bit hashes. */
static void
keys_of(uint64_t i, uint32_t keys[SKETCH_KEYS])
{
	uint64_t s = i * 0x2545F4914F6CDD1DULL + 7;

	for (int k = 0; k < SKETCH_KEYS; k++)
		keys[k] = (uint32_t)splitmix(&s);
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static void
report(const char *when, uint64_t docs, struct nearidx *nx,
    struct sketchidx *sx)
{
	uint64_t nb = nearidx_memory_bytes(nx), sb = sketchidx_memory_bytes(sx);

	printf("%s docs=%llu tables_bytes=%llu sketch_bytes=%llu "
	    "tables_per_doc=%.1f sketch_per_doc=%.1f total_per_doc=%.1f\n",
	    when, (unsigned long long)docs, (unsigned long long)nb,
	    (unsigned long long)sb, (double)nb / (double)docs,
	    (double)sb / (double)docs, (double)(nb + sb) / (double)docs);
}

int
main(int argc, char **argv)
{
	uint64_t n = 10000000, churn = 1000000, queries = 100000, next;
	unsigned blocks = 4;
	struct nearidx_config cfg;
	struct nearidx *nx;
	struct sketchidx *sx;
	uint64_t *fps, *ids, seed = 1, found = 0, cands = 0;
	struct sketchidx_stage *stage;
	uint32_t out[256];
	char *cause = NULL;
	double t0, tmid, t1;
	int c;

	while ((c = getopt(argc, argv, "n:c:q:b:")) != -1) {
		switch (c) {
		case 'n': n = strtoull(optarg, NULL, 10); break;
		case 'c': churn = strtoull(optarg, NULL, 10); break;
		case 'q': queries = strtoull(optarg, NULL, 10); break;
		case 'b': blocks = (unsigned)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: sketchidx_bench [-n DOCS] "
			    "[-c CHURN] [-q QUERIES] [-b BLOCKS]\n");
			return 2;
		}
	}
	if (n == 0 || churn > n) {
		fprintf(stderr, "sketchidx_bench: 0 < CHURN <= DOCS\n");
		return 2;
	}
	nearidx_config_defaults(&cfg);
	cfg.blocks = blocks;
	cfg.expected = n;
	fps = malloc(n * sizeof(*fps));
	ids = malloc(n * sizeof(*ids));
	stage = sketchidx_stage_new();
	if (fps == NULL || ids == NULL || stage == NULL ||
	    (nx = nearidx_new(&cfg, &cause)) == NULL ||
	    (sx = sketchidx_new(n)) == NULL) {
		fprintf(stderr, "sketchidx_bench: %s\n", cause ? cause :
		    "out of memory");
		return 1;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint32_t keys[SKETCH_KEYS];

		fps[i] = splitmix(&seed);
		ids[i] = i + 1;
		keys_of(i + 1, keys);
		if (sketchidx_stage_add(stage, (uint32_t)(i + 1), keys,
		    SKETCH_KEYS) == -1) {
			fprintf(stderr, "sketchidx_bench: out of memory\n");
			return 1;
		}
	}
	t0 = now();
	if (nearidx_bulk_load(nx, fps, ids, n, &cause) == -1) {
		fprintf(stderr, "sketchidx_bench: load: %s\n", cause ? cause :
		    "out of memory");
		return 1;
	}
	tmid = now();
	/* As the daemon loads it: the shards shared among every CPU. */
	if (sketchidx_bulk_load(sx, stage, (unsigned)sysconf(
	    _SC_NPROCESSORS_ONLN)) == -1) {
		fprintf(stderr, "sketchidx_bench: load: out of memory\n");
		return 1;
	}
	t1 = now();
	sketchidx_stage_free(stage);
	printf("load docs=%llu seconds=%.2f docs_per_s=%.0f "
	    "tables_seconds=%.2f sketch_seconds=%.2f\n",
	    (unsigned long long)n, t1 - t0, (double)n / (t1 - t0),
	    tmid - t0, t1 - tmid);
	report("after-load", n, nx, sx);

	/* Online churn: the oldest go, new ones come. */
	next = n + 1;
	t0 = now();
	for (uint64_t i = 0; i < churn; i++) {
		uint32_t keys[SKETCH_KEYS];

		keys_of(i + 1, keys);
		if (nearidx_delete(nx, fps[i], i + 1) != 1 ||
		    sketchidx_delete(sx, (uint32_t)(i + 1), keys,
		    SKETCH_KEYS) != SKETCH_KEYS) {
			fprintf(stderr, "sketchidx_bench: a delete missed\n");
			return 1;
		}
		fps[i] = splitmix(&seed);
		keys_of(next, keys);
		if (nearidx_insert(nx, fps[i], next) == -1 ||
		    sketchidx_insert(sx, (uint32_t)next, keys, SKETCH_KEYS) ==
		    -1) {
			fprintf(stderr, "sketchidx_bench: out of memory\n");
			return 1;
		}
		ids[i] = next++;
	}
	t1 = now();
	printf("churn deletes=%llu inserts=%llu seconds=%.2f "
	    "changes_per_s=%.0f\n", (unsigned long long)churn,
	    (unsigned long long)churn, t1 - t0,
	    2.0 * (double)churn / (t1 - t0));
	report("after-churn", n, nx, sx);

	/* Queries: 128 random hashes, half with two keys of a stored one. */
	t0 = now();
	for (uint64_t q = 0; q < queries; q++) {
		struct sketchidx_counts counts = { 0, 0 };
		struct sketch sk = { .shingles = SKETCH_K, .n = SKETCH_K };
		uint64_t pick = splitmix(&seed) % n;
		uint32_t keys[SKETCH_KEYS];
		int64_t m;

		uint32_t floor = 0;

		/*
		 * A planted query's other hashes are above its two keys, so
		 * that the keys are among the smallest, the probed ones, as a
		 * copy's are.
		 */
		if (q % 2 == 0) {
			keys_of(ids[pick], keys);
			floor = keys[0] > keys[1] ? keys[0] : keys[1];
		}
		for (int k = 0; k < SKETCH_K; k++)
			sk.h[k] = floor + (uint32_t)(splitmix(&seed) %
			    ((uint64_t)UINT32_MAX - floor + 1));
		if (q % 2 == 0) {
			sk.h[0] = keys[0];
			sk.h[1] = keys[1];
		}
		qsort(sk.h, SKETCH_K, sizeof(sk.h[0]), cmp_u32);
		m = sketchidx_candidates(sx, &sk, NULL, NULL, 0, out, 256,
		    &counts);
		cands += (uint64_t)(m > 0 ? m : 0);
		for (int64_t i = 0; i < m && i < 256; i++)
			found += q % 2 == 0 && out[i] == ids[pick];
	}
	t1 = now();
	printf("queries=%llu seconds=%.2f queries_per_s=%.0f "
	    "candidates=%llu found=%llu of %llu\n",
	    (unsigned long long)queries, t1 - t0, (double)queries / (t1 - t0),
	    (unsigned long long)cands, (unsigned long long)found,
	    (unsigned long long)(queries / 2));
	nearidx_free(nx);
	sketchidx_free(sx);
	free(fps);
	free(ids);
	return 0;
}
