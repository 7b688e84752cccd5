/*
 * pairs_ref: the exact pairs of fingerprints within Hamming distance k, by
 * brute force, for test_dedup.py to hold the batch job against: it shares
 * nothing with the job (no blocks, no tables), only XOR and popcount.
 *
 *   pairs_ref K FINGERPRINTS [QUERIES]
 *
 * FINGERPRINTS is a file of 64-bit fingerprints (native byte order), their
 * positions their numbers.  Without QUERIES, every pair i < j is compared;
 * with QUERIES (a file of 64-bit positions), every pair with at least one
 * of them.  Prints "a b distance" (a < b) per pair within K, each once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Fingerprints compared at a time: a chunk is first only counted (a loop
 * without branches, that compilers vectorize), and looked at one by one
 * when it holds a pair. */
#define REF_CHUNK 4096

static uint64_t *
ref_read(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint64_t *v;
	long size;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		perror(path);
		exit(2);
	}
	*n = (size_t)size / sizeof(*v);
	if ((v = malloc(*n * sizeof(*v) + 1)) == NULL ||
	    fread(v, sizeof(*v), *n, f) != *n) {
		perror(path);
		exit(2);
	}
	fclose(f);
	return v;
}

/* Pairs of q with fingerprints [from, to) other than itself; with
 * is_query, a pair of two queries is printed once, by the smaller. */
static void
ref_scan(const uint64_t *fp, size_t q, size_t from, size_t to, unsigned k,
    const unsigned char *is_query)
{
	uint64_t x = fp[q];

	for (size_t s = from; s < to; s += REF_CHUNK) {
		size_t m = to - s < REF_CHUNK ? to - s : REF_CHUNK;
		unsigned hits = 0;

		/* Whether the chunk has any (no branch: vectorized). */
		for (size_t j = 0; j < m; j++)
			hits += (unsigned)__builtin_popcountll(x ^ fp[s + j]) <=
			    k;
		for (size_t j = 0; hits > 0 && j < m; j++) {
			size_t o = s + j;
			unsigned d = (unsigned)__builtin_popcountll(x ^ fp[o]);

			if (d > k || o == q)
				continue;
			/* A pair of two queries: printed by the smaller. */
			if (is_query != NULL && is_query[o] && o < q)
				continue;
			printf("%zu %zu %u\n", q < o ? q : o, q < o ? o : q, d);
		}
	}
}

int
main(int argc, char **argv)
{
	uint64_t *fp, *queries = NULL;
	unsigned char *is_query = NULL;
	size_t n, nq = 0;
	unsigned k;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: pairs_ref K FINGERPRINTS [QUERIES]\n");
		return 2;
	}
	k = (unsigned)strtoul(argv[1], NULL, 10);
	fp = ref_read(argv[2], &n);
	if (argc == 4) {
		queries = ref_read(argv[3], &nq);
		if ((is_query = calloc(n + 1, 1)) == NULL)
			return 2;
		for (size_t i = 0; i < nq; i++) {
			if (queries[i] >= n) {
				fprintf(stderr, "pairs_ref: query %llu of %zu\n",
				    (unsigned long long)queries[i], n);
				return 2;
			}
			is_query[queries[i]] = 1;
		}
		for (size_t q = 0; q < n; q++)
			if (is_query[q])
				ref_scan(fp, q, 0, n, k, is_query);
	} else {
		for (size_t q = 0; q + 1 < n; q++)
			ref_scan(fp, q, q + 1, n, k, NULL);
	}
	free(fp);
	free(queries);
	free(is_query);
	return fflush(stdout) == 0 ? 0 : 1;
}
