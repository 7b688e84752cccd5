/*
 * nearidx_bench: the near-duplicate index in memory, with FAISS's binary
 * indexes measured on the same data in the same run.
 *
 *   nearidx_bench [-n FINGERPRINTS] [-q QUERIES] [-b BLOCKS[,BLOCKS...]]
 *                 [-r REPEATS] [-s SEED] [--truth N] [--faiss-queries N]
 *                 [--flat-queries N] [--no-faiss] [--queries-only]
 *
 * Data (seeded): n fingerprints (default 10,000,000), ids 1..n in order;
 * 80% are random, 20% are planted near-duplicates, each a copy of an
 * earlier fingerprint with 0 to 3 bits flipped (a quarter of them exact
 * duplicates).  Queries (default 1,000,000): half are a stored fingerprint
 * with 0 to 4 bits flipped, half random.  k = 3 throughout.
 *
 * For each number of blocks (default 4, 5, 6): bulk-load the first 90%,
 * then, REPEATS times (default 3), insert the last 10% one by one and
 * delete them one by one; insert them again in batches of 4,096 (also
 * REPEATS times, deleting between); then the memory it holds; then every
 * query one at a time and in batches of 1,024, REPEATS times each.  The
 * answers to the first --truth queries (default 1,000) are checked
 * against a brute-force scan, exactly.  Then FAISS with one OpenMP
 * thread: IndexBinaryMultiHash(64, 4, 16) on all n codes answering
 * --faiss-queries (default 100,000) in one range_search call, and 2,000 of
 * them one call each; IndexBinaryFlat on --flat-queries (default 200), as
 * it scans all n codes per query.  FAISS's radius 4 means distance <= 3.
 * Recall is against the same brute-force answers.
 *
 * --queries-only loads all n at once and measures only the memory and the
 * queries.  First, what bounds the queries: the latency of a random read
 * from main memory, and how many random lines a core reads per second.
 * Everything runs on one thread.  Each figure is one line; rates from
 * repeated runs give the best and the median.
 */
#include <getopt.h>
#include <immintrin.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "nearidx.h"
#include "nearidx_faiss.h"

#define K		3
#define MAX_REPEATS	9
#define BATCH_QUERIES	1024
#define BATCH_INSERTS	4096
#define MAX_PER		64

struct truth {
	size_t *lims;		/* query i: idx[lims[i] .. lims[i+1]] */
	uint32_t *idx;		/* fingerprint indices, by (distance, index) */
};

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

static uint64_t
flip(uint64_t fp, unsigned d, uint64_t *s)
{
	uint64_t mask = 0;

	while ((unsigned)__builtin_popcountll(mask) < d)
		mask |= 1ULL << (splitmix(s) & 63);
	return fp ^ mask;
}

/* Resident bytes of this process, after handing free heap back. */
static uint64_t
rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f;

	malloc_trim(0);
	if ((f = fopen("/proc/self/statm", "r")) == NULL)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
print_rates(const char *prefix, const char *name, double *rates,
    int repeats, const char *extra)
{
	double best = 0;

	for (int i = 0; i < repeats; i++)
		if (rates[i] > best)
			best = rates[i];
	qsort(rates, (size_t)repeats, sizeof(*rates), dbl_cmp);
	printf("%s %s=%.0f median=%.0f runs=%d%s\n", prefix, name, best,
	    rates[repeats / 2], repeats, extra);
	fflush(stdout);
}

static double
best_of(const double *rates, int repeats)
{
	double best = 0;

	for (int i = 0; i < repeats; i++)
		if (rates[i] > best)
			best = rates[i];
	return best;
}

/* ---- the memory system ---- */

/*
 * What bounds a query at this size: random cache-line reads from a 1 GiB
 * buffer on huge pages, as one chain of dependent reads (the latency of
 * one miss) and as 16 independent chains (the most misses a core keeps
 * in flight).
 */
static void
memory_probe(void)
{
	size_t bytes = (size_t)1 << 30, n = bytes / 64, steps = 2000000;
	uint64_t *next, p[16], s = 1, sink = 0;
	uint32_t *order;
	char *m;
	double t;

	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	order = malloc(n * sizeof(*order));
	if (m == MAP_FAILED || order == NULL) {
		printf("memory probe skipped: no memory\n");
		return;
	}
	madvise(m, bytes, MADV_HUGEPAGE);
	/* One random cycle through every line. */
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = splitmix(&s) % (i + 1);
		uint32_t tmp = order[i];

		order[i] = order[j];
		order[j] = tmp;
	}
	for (size_t i = 0; i < n; i++) {
		next = (uint64_t *)(void *)(m + (size_t)order[i] * 64);
		*next = (uint64_t)order[(i + 1) % n] * 64;
	}
	p[0] = 0;
	t = now();
	for (size_t i = 0; i < steps; i++)
		p[0] = *(uint64_t *)(void *)(m + p[0]);
	t = now() - t;
	sink ^= p[0];
	printf("memory random_read_latency_ns=%.0f (one dependent chain)\n",
	    t * 1e9 / (double)steps);
	for (int c = 0; c < 16; c++)
		p[c] = (uint64_t)order[(size_t)c * (n / 16)] * 64;
	t = now();
	for (size_t i = 0; i < steps / 4; i++)
		for (int c = 0; c < 16; c++)
			p[c] = *(uint64_t *)(void *)(m + p[c]);
	t = now() - t;
	for (int c = 0; c < 16; c++)
		sink ^= p[c];
	printf("memory random_lines_per_s=%.0f (16 independent chains)%s\n",
	    (double)(steps / 4 * 16) / t, sink == 1 ? " " : "");
	fflush(stdout);
	munmap(m, bytes);
	free(order);
}

/* ---- brute force ---- */

struct grow {
	uint32_t *v;
	size_t n, cap;
};

static void
grow_push(struct grow *g, uint32_t v)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 16;
		if ((g->v = realloc(g->v, g->cap * sizeof(*g->v))) == NULL) {
			perror("realloc");
			exit(1);
		}
	}
	g->v[g->n++] = v;
}

__attribute__((target("avx512f,avx512vpopcntdq")))
static void
brute_chunk_avx512(const uint64_t *fps, size_t base, size_t len, uint64_t q,
    struct grow *g)
{
	const __m512i vq = _mm512_set1_epi64((long long)q);
	const __m512i vk = _mm512_set1_epi64(K);
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		__m512i x = _mm512_xor_si512(_mm512_loadu_si512(fps + base + i),
		    vq);
		unsigned m = _mm512_cmple_epu64_mask(_mm512_popcnt_epi64(x),
		    vk);

		while (m != 0) {
			grow_push(g, (uint32_t)(base + i +
			    (size_t)__builtin_ctz(m)));
			m &= m - 1;
		}
	}
	for (; i < len; i++)
		if (__builtin_popcountll(fps[base + i] ^ q) <= K)
			grow_push(g, (uint32_t)(base + i));
}

static void
brute_chunk_scalar(const uint64_t *fps, size_t base, size_t len, uint64_t q,
    struct grow *g)
{
	for (size_t i = 0; i < len; i++)
		if (__builtin_popcountll(fps[base + i] ^ q) <= K)
			grow_push(g, (uint32_t)(base + i));
}

static const uint64_t *sort_fps;
static uint64_t sort_q;

static int
by_distance(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int dx = __builtin_popcountll(sort_fps[x] ^ sort_q);
	int dy = __builtin_popcountll(sort_fps[y] ^ sort_q);

	if (dx != dy)
		return dx < dy ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Every fingerprint within K of each query, scanning fps in chunks that
 * stay in cache while all queries pass over them. */
static void
brute_force(const uint64_t *fps, size_t n, const uint64_t *q, size_t nq,
    struct truth *t)
{
	struct grow *g = calloc(nq, sizeof(*g));
	int avx512 = __builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512vpopcntdq");
	size_t total = 0, at = 0;

	for (size_t base = 0; base < n; base += 8192) {
		size_t len = n - base < 8192 ? n - base : 8192;

		for (size_t j = 0; j < nq; j++) {
			if (avx512)
				brute_chunk_avx512(fps, base, len, q[j], &g[j]);
			else
				brute_chunk_scalar(fps, base, len, q[j], &g[j]);
		}
	}
	for (size_t j = 0; j < nq; j++)
		total += g[j].n;
	t->lims = malloc((nq + 1) * sizeof(*t->lims));
	t->idx = malloc((total + 1) * sizeof(*t->idx));
	sort_fps = fps;
	for (size_t j = 0; j < nq; j++) {
		sort_q = q[j];
		qsort(g[j].v, g[j].n, sizeof(*g[j].v), by_distance);
		t->lims[j] = at;
		if (g[j].n > 0)
			memcpy(t->idx + at, g[j].v, g[j].n * sizeof(*g[j].v));
		at += g[j].n;
		free(g[j].v);
	}
	t->lims[nq] = at;
	free(g);
}

/* ---- nearidx ---- */

struct data {
	uint64_t *fps, *ids, *q;
	size_t n, nq, held;	/* the last held are inserted online */
	int repeats;
	int queries_only;	/* bulk-load all, skip the online phases */
	struct truth truth;
	size_t ntruth;
};

struct result {
	unsigned blocks;
	double single_qps, batch_qps, bytes_per_fp;
};

static int
check_exact(struct nearidx *x, const struct data *d, uint64_t *hits_seen)
{
	struct nearidx_hit *out = malloc(4096 * sizeof(*out));
	int ok = 1;

	*hits_seen = 0;
	for (size_t j = 0; j < d->ntruth && ok; j++) {
		size_t lo = d->truth.lims[j], hi = d->truth.lims[j + 1];
		int64_t total = nearidx_query(x, d->q[j], K, out, 4096);

		*hits_seen += (uint64_t)total;
		if (total != (int64_t)(hi - lo) || total > 4096) {
			printf("# query %zu: %lld hits, brute force %zu\n", j,
			    (long long)total, hi - lo);
			ok = 0;
			break;
		}
		for (size_t i = lo; i < hi; i++) {
			uint32_t e = d->truth.idx[i];

			if (out[i - lo].doc_id != d->ids[e] ||
			    out[i - lo].distance != (unsigned)
			    __builtin_popcountll(d->fps[e] ^ d->q[j])) {
				printf("# query %zu: hit %zu differs\n", j,
				    i - lo);
				ok = 0;
				break;
			}
		}
	}
	free(out);
	return ok;
}

static int
bench_nearidx(const struct data *d, unsigned blocks, struct result *res)
{
	struct nearidx_config cfg;
	struct nearidx *x;
	struct nearidx_hit *out;
	uint64_t *totals, sum, rss0, rss1, hits_seen;
	double t, rates[MAX_REPEATS], dels[MAX_REPEATS];
	size_t base = d->queries_only ? d->n : d->n - d->held;
	char prefix[64], *cause = NULL;
	int ok;

	nearidx_config_defaults(&cfg);
	cfg.k = K;
	cfg.blocks = blocks;
	snprintf(prefix, sizeof(prefix), "nearidx blocks=%u", blocks);
	rss0 = rss_bytes();
	if ((x = nearidx_new(&cfg, &cause)) == NULL) {
		fprintf(stderr, "nearidx_bench: %s\n", cause);
		return -1;
	}
	printf("%s tables=%u simd=%s k=%u\n", prefix, nearidx_tables(x),
	    nearidx_simd(x), K);

	t = now();
	if (nearidx_bulk_load(x, d->fps, d->ids, base, &cause) == -1) {
		fprintf(stderr, "nearidx_bench: %s\n", cause);
		return -1;
	}
	t = now() - t;
	printf("%s bulk_load_per_s=%.0f seconds=%.2f fingerprints=%zu\n",
	    prefix, (double)base / t, t, base);
	nearidx_reclaim(x);
	printf("%s bytes_per_fp_after_bulk_load=%.1f\n", prefix,
	    (double)nearidx_memory_bytes(x) / (double)base);

	/* Online, at 9 to 10 million: one by one, then in batches. */
	for (int r = 0; r < d->repeats && !d->queries_only; r++) {
		t = now();
		for (size_t i = base; i < d->n; i++)
			if (nearidx_insert(x, d->fps[i], d->ids[i]) == -1)
				return -1;
		rates[r] = (double)d->held / (now() - t);
		t = now();
		for (size_t i = base; i < d->n; i++)
			if (nearidx_delete(x, d->fps[i], d->ids[i]) != 1)
				return -1;
		dels[r] = (double)d->held / (now() - t);
	}
	if (!d->queries_only) {
		print_rates(prefix, "inserts_per_s", rates, d->repeats,
		    " (one by one)");
		print_rates(prefix, "deletes_per_s", dels, d->repeats,
		    " (one by one)");
	}
	for (int r = 0; r < d->repeats && !d->queries_only; r++) {
		t = now();
		for (size_t i = base; i < d->n; i += BATCH_INSERTS) {
			size_t len = d->n - i < BATCH_INSERTS ? d->n - i :
			    BATCH_INSERTS;

			if (nearidx_insert_batch(x, d->fps + i, d->ids + i,
			    len) != len)
				return -1;
		}
		rates[r] = (double)d->held / (now() - t);
		if (r + 1 < d->repeats)
			for (size_t i = base; i < d->n; i++)
				if (nearidx_delete(x, d->fps[i], d->ids[i]) != 1)
					return -1;
	}
	if (!d->queries_only)
		print_rates(prefix, "batch_inserts_per_s", rates, d->repeats,
		    " (batches of 4096)");
	if (nearidx_count(x) != d->n)
		return -1;

	nearidx_reclaim(x);
	rss1 = rss_bytes();
	res->bytes_per_fp = (double)nearidx_memory_bytes(x) / (double)d->n;
	printf("%s bytes_per_fp=%.1f rss_bytes_per_fp=%.1f "
	    "fingerprints=%zu distinct=%llu\n", prefix, res->bytes_per_fp,
	    (double)(rss1 - rss0) / (double)d->n, d->n,
	    (unsigned long long)nearidx_distinct(x));

	out = malloc(BATCH_QUERIES * MAX_PER * sizeof(*out));
	totals = malloc(BATCH_QUERIES * sizeof(*totals));
	sum = 0;
	for (int r = 0; r < d->repeats; r++) {
		sum = 0;
		t = now();
		for (size_t j = 0; j < d->nq; j++)
			sum += (uint64_t)nearidx_query(x, d->q[j], K, out,
			    MAX_PER);
		rates[r] = (double)d->nq / (now() - t);
	}
	{
		char extra[96];

		snprintf(extra, sizeof(extra), " hits_per_query=%.3f "
		    "queries=%zu", (double)sum / (double)d->nq, d->nq);
		print_rates(prefix, "queries_per_s", rates, d->repeats, extra);
	}
	res->single_qps = best_of(rates, d->repeats);
	for (int r = 0; r < d->repeats; r++) {
		uint64_t bsum = 0;

		t = now();
		for (size_t j = 0; j < d->nq; j += BATCH_QUERIES) {
			size_t len = d->nq - j < BATCH_QUERIES ? d->nq - j :
			    BATCH_QUERIES;

			nearidx_query_batch(x, d->q + j, len, K, out, MAX_PER,
			    totals);
			for (size_t i = 0; i < len; i++)
				bsum += totals[i];
		}
		rates[r] = (double)d->nq / (now() - t);
		if (bsum != sum)
			return -1;
	}
	print_rates(prefix, "batch_queries_per_s", rates, d->repeats,
	    " (batches of 1024)");
	res->batch_qps = best_of(rates, d->repeats);
	free(out);
	free(totals);

	ok = check_exact(x, d, &hits_seen);
	printf("%s exact=%s checked_queries=%zu hits=%llu\n", prefix,
	    ok ? "yes" : "NO", d->ntruth, (unsigned long long)hits_seen);
	fflush(stdout);
	nearidx_free(x);
	res->blocks = blocks;
	return ok ? 0 : -1;
}

/* ---- FAISS ---- */

/* Recall and extras of FAISS's answers to the first nq truth queries. */
static void
faiss_recall(const struct data *d, size_t nq, const size_t *lims,
    const int64_t *labels, double *recall, uint64_t *extras)
{
	uint64_t want = 0, found = 0;

	*extras = 0;
	for (size_t j = 0; j < nq; j++) {
		size_t lo = d->truth.lims[j], hi = d->truth.lims[j + 1];

		want += hi - lo;
		for (size_t i = lims[j]; i < lims[j + 1]; i++) {
			int hit = 0;

			for (size_t e = lo; e < hi && !hit; e++)
				hit = (int64_t)d->truth.idx[e] == labels[i];
			found += hit;
			*extras += !hit;
		}
	}
	*recall = want ? (double)found / (double)want : 1.0;
}

static int
bench_faiss(const struct data *d, size_t fq, size_t flatq, double *mh_qps,
    double *mh_bytes)
{
	size_t *lims = NULL, nsingle = fq < 2000 ? fq : 2000;
	int64_t *labels = NULL;
	uint64_t rss0, rss1, extras, hits;
	double t, recall;
	void *ix;
	size_t nrec;

	nf_threads(1);
	printf("faiss version=%s threads=1\n", nf_version());
	rss0 = rss_bytes();
	t = now();
	if ((ix = nf_multihash_new(d->fps, d->n, 4, 16)) == NULL)
		return -1;
	t = now() - t;
	rss1 = rss_bytes();
	*mh_bytes = (double)(rss1 - rss0) / (double)d->n;
	printf("faiss multihash(64,4,16) build_seconds=%.2f "
	    "rss_bytes_per_code=%.1f codes=%zu\n", t, *mh_bytes, d->n);
	t = now();
	if (nf_range(ix, d->q, fq, K + 1, &lims, &labels) == -1)
		return -1;
	t = now() - t;
	*mh_qps = (double)fq / t;
	hits = lims[fq];
	nrec = d->ntruth < fq ? d->ntruth : fq;
	faiss_recall(d, nrec, lims, labels, &recall, &extras);
	printf("faiss multihash queries_per_s=%.0f queries=%zu "
	    "hits_per_query=%.3f (one range_search call)\n", *mh_qps, fq,
	    (double)hits / (double)fq);
	printf("faiss multihash recall=%.6f extras=%llu checked_queries=%zu\n",
	    recall, (unsigned long long)extras, nrec);
	free(lims);
	free(labels);
	t = now();
	for (size_t j = 0; j < nsingle; j++) {
		if (nf_range(ix, d->q + j, 1, K + 1, &lims, &labels) == -1)
			return -1;
		free(lims);
		free(labels);
	}
	printf("faiss multihash queries_per_s_single=%.0f queries=%zu "
	    "(one call each)\n", (double)nsingle / (now() - t), nsingle);
	nf_free(ix);

	if (flatq == 0)
		return 0;
	if ((ix = nf_flat_new(d->fps, d->n)) == NULL)
		return -1;
	t = now();
	if (nf_range(ix, d->q, flatq, K + 1, &lims, &labels) == -1)
		return -1;
	t = now() - t;
	nrec = d->ntruth < flatq ? d->ntruth : flatq;
	faiss_recall(d, nrec, lims, labels, &recall, &extras);
	printf("faiss flat queries_per_s=%.1f queries=%zu recall=%.6f "
	    "extras=%llu\n", (double)flatq / t, flatq, recall,
	    (unsigned long long)extras);
	free(lims);
	free(labels);
	nf_free(ix);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: nearidx_bench [-n FINGERPRINTS] [-q QUERIES] "
	    "[-b BLOCKS[,BLOCKS...]] [-r REPEATS] [-s SEED] [--truth N] "
	    "[--faiss-queries N] [--flat-queries N] [--no-faiss] "
	    "[--queries-only]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "truth", required_argument, NULL, 't' },
		{ "faiss-queries", required_argument, NULL, 'f' },
		{ "flat-queries", required_argument, NULL, 'F' },
		{ "no-faiss", no_argument, NULL, 'N' },
		{ "queries-only", no_argument, NULL, 'Q' },
		{ NULL, 0, NULL, 0 },
	};
	struct data d = { .n = 10000000, .nq = 1000000, .repeats = 3,
	    .ntruth = 1000 };
	struct result res[8];
	unsigned blocks[8] = { 4, 5, 6 }, nblocks = 3;
	size_t fq = 100000, flatq = 200;
	uint64_t seed = 20070508, s;
	double t, mh_qps = 0, mh_bytes = 0;
	int c, faiss = 1;
	char cpu[512] = "?";
	FILE *f;

	while ((c = getopt_long(argc, argv, "n:q:b:r:s:", longopts, NULL)) !=
	    -1) {
		switch (c) {
		case 'n':
			d.n = strtoull(optarg, NULL, 10);
			break;
		case 'q':
			d.nq = strtoull(optarg, NULL, 10);
			break;
		case 'b':
			nblocks = 0;
			for (char *p = optarg; *p != '\0' && nblocks < 8;) {
				blocks[nblocks++] = (unsigned)strtoul(p, &p,
				    10);
				if (*p == ',')
					p++;
				else if (*p != '\0')
					usage();
			}
			break;
		case 'r':
			d.repeats = atoi(optarg);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 10);
			break;
		case 't':
			d.ntruth = strtoull(optarg, NULL, 10);
			break;
		case 'f':
			fq = strtoull(optarg, NULL, 10);
			break;
		case 'F':
			flatq = strtoull(optarg, NULL, 10);
			break;
		case 'N':
			faiss = 0;
			break;
		case 'Q':
			d.queries_only = 1;
			break;
		default:
			usage();
		}
	}
	if (d.n < 10 || d.nq == 0 || d.repeats < 1 ||
	    d.repeats > MAX_REPEATS || d.n > NEARIDX_MAX_DOC_ID)
		usage();
	if (d.ntruth > d.nq)
		d.ntruth = d.nq;
	if (fq > d.nq)
		fq = d.nq;
	if (flatq > d.nq)
		flatq = d.nq;
	d.held = d.n / 10;

	if ((f = fopen("/proc/cpuinfo", "r")) != NULL) {
		char line[512];

		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "model name", 10) == 0) {
				char *v = strchr(line, ':');

				snprintf(cpu, sizeof(cpu), "%s", v ? v + 2 :
				    line);
				cpu[strcspn(cpu, "\n")] = '\0';
				break;
			}
		fclose(f);
	}
	printf("machine cores=%ld cpu=\"%s\"\n", sysconf(_SC_NPROCESSORS_ONLN),
	    cpu);
	memory_probe();

	t = now();
	d.fps = malloc(d.n * sizeof(*d.fps));
	d.ids = malloc(d.n * sizeof(*d.ids));
	d.q = malloc(d.nq * sizeof(*d.q));
	if (d.fps == NULL || d.ids == NULL || d.q == NULL)
		return 1;
	s = seed;
	for (size_t i = 0; i < d.n; i++) {
		d.ids[i] = i + 1;
		if (i > 0 && splitmix(&s) % 5 == 0)
			d.fps[i] = flip(d.fps[splitmix(&s) % i],
			    (unsigned)(splitmix(&s) % 4), &s);
		else
			d.fps[i] = splitmix(&s);
	}
	for (size_t j = 0; j < d.nq; j++)
		d.q[j] = splitmix(&s) % 2 ? splitmix(&s) :
		    flip(d.fps[splitmix(&s) % d.n],
		    (unsigned)(splitmix(&s) % 5), &s);
	brute_force(d.fps, d.n, d.q, d.ntruth, &d.truth);
	printf("data fingerprints=%zu queries=%zu online=%zu seed=%llu "
	    "brute_force_queries=%zu seconds=%.1f\n", d.n, d.nq, d.held,
	    (unsigned long long)seed, d.ntruth, now() - t);
	fflush(stdout);

	for (unsigned i = 0; i < nblocks; i++)
		if (bench_nearidx(&d, blocks[i], &res[i]) == -1) {
			fprintf(stderr, "nearidx_bench: blocks=%u failed\n",
			    blocks[i]);
			return 1;
		}
	if (faiss) {
		if (bench_faiss(&d, fq, flatq, &mh_qps, &mh_bytes) == -1) {
			fprintf(stderr, "nearidx_bench: FAISS failed\n");
			return 1;
		}
		for (unsigned i = 0; i < nblocks; i++)
			printf("ratio blocks=%u queries_vs_multihash=%.1f "
			    "batch_queries_vs_multihash=%.1f "
			    "bytes_vs_multihash=%.2f\n", res[i].blocks,
			    res[i].single_qps / mh_qps,
			    res[i].batch_qps / mh_qps,
			    res[i].bytes_per_fp / mh_bytes);
	}
	free(d.fps);
	free(d.ids);
	free(d.q);
	free(d.truth.lims);
	free(d.truth.idx);
	return 0;
}
