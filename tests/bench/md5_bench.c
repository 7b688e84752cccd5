/*
 * md5_bench: URL digests a second, one thread: the canonical forms of real
 * URL lists (../shared/data/url_lists) and of 100,000 of url_bench's
 * synthetic URLs, digested by OpenSSL's EVP (a context re-initialized per
 * URL, as nddd did before md5.c: the peer), by md5_digest one at a time,
 * and by md5_digests in batches of 256 with the lanes the CPU has (16
 * with AVX-512, 8 with AVX2), with AVX2's 8 forced and one at a time
 * forced.  Also the whole key of a URL (canonicalization and digest):
 * with EVP's digest (as before), and by urldigest.h one at a time and in
 * batches (the CPU's lanes and AVX2's).  Each figure is the best of R
 * rounds of at least S seconds, and its ratio to EVP's (the keys: to
 * key_evp's) of the same run; every path's digests are checked against
 * EVP's first.
 *
 *   md5_bench [-d datadir] [-s seconds] [-r rounds]
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "md5.h"
#include "urldigest.h"
#include "urlgen.h"

struct urls {
	const char **p;
	size_t *len;
	size_t n, cap;
};

static void
add(struct urls *u, const char *s, size_t len)
{
	if (u->n == u->cap) {
		u->cap = u->cap ? 2 * u->cap : 4096;
		u->p = realloc(u->p, u->cap * sizeof(*u->p));
		u->len = realloc(u->len, u->cap * sizeof(*u->len));
		if (u->p == NULL || u->len == NULL) {
			perror("md5_bench");
			exit(1);
		}
	}
	u->p[u->n] = s;
	u->len[u->n++] = len;
}

/* The canonical forms of the URLs of l (those that are URLs). */
static void
canonical(struct urls *u, struct urldigest *d, const struct urllist *l)
{
	uint8_t dg[URLDIGEST_LEN];

	for (size_t i = 0; i < l->n; i++) {
		const char *canon, *cause;
		size_t clen;

		if (urldigest_one(d, l->urls[i], strlen(l->urls[i]), dg,
		    &canon, &clen, &cause) == 0)
			add(u, strdup(canon), clen);
	}
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum path {
	EVP, ONE, BATCH, BATCH_AVX2, BATCH_SCALAR, KEY_EVP, KEY_ONE,
	KEY_BATCH, KEY_BATCH_AVX2, NPATHS
};
static const char *const path_names[NPATHS] = {
	"evp", "md5_digest", "md5_digests", "md5_digests_avx2",
	"md5_digests_scalar", "key_evp", "key_one", "key_batch",
	"key_batch_avx2",
};

/* One pass of path p over u's URLs into out. */
static void
pass(enum path p, const struct urls *u, uint8_t *out, EVP_MD_CTX *ctx,
    struct urldigest *d)
{
	enum { B = URLDIGEST_BATCH };
	const char *causes[B], *canon;
	size_t clen;
	unsigned int mdlen;

	/* The slower paths forced: what a CPU without AVX-512 (or AVX2)
	 * runs. */
	md5_limit_lanes(p == BATCH_SCALAR ? 1 : p == BATCH_AVX2 ||
	    p == KEY_BATCH_AVX2 ? 8 : MD5_LANES_MAX);
	for (size_t i = 0; i < u->n; i += B) {
		size_t m = u->n - i < B ? u->n - i : B;
		uint8_t *o = out + URLDIGEST_LEN * i;

		switch (p) {
		case EVP:
			for (size_t j = 0; j < m; j++)
				if (!EVP_DigestInit_ex2(ctx, NULL, NULL) ||
				    !EVP_DigestUpdate(ctx, u->p[i + j],
				    u->len[i + j]) ||
				    !EVP_DigestFinal_ex(ctx,
				    o + URLDIGEST_LEN * j, &mdlen))
					exit(1);
			break;
		case ONE:
			for (size_t j = 0; j < m; j++)
				md5_digest(u->p[i + j], u->len[i + j],
				    o + URLDIGEST_LEN * j);
			break;
		case BATCH:
		case BATCH_AVX2:
		case BATCH_SCALAR:
			md5_digests((const void *const *)(u->p + i),
			    u->len + i, m, o);
			break;
		case KEY_EVP:
			for (size_t j = 0; j < m; j++) {
				if ((canon = urlcanon_canonicalize(
				    urldigest_canon(d), u->p[i + j],
				    u->len[i + j], &clen, &causes[0])) ==
				    NULL ||
				    !EVP_DigestInit_ex2(ctx, NULL, NULL) ||
				    !EVP_DigestUpdate(ctx, canon, clen) ||
				    !EVP_DigestFinal_ex(ctx,
				    o + URLDIGEST_LEN * j, &mdlen))
					exit(1);
			}
			break;
		case KEY_ONE:
			for (size_t j = 0; j < m; j++)
				(void)urldigest_one(d, u->p[i + j],
				    u->len[i + j], o + URLDIGEST_LEN * j,
				    &canon, &clen, &causes[0]);
			break;
		case KEY_BATCH:
		case KEY_BATCH_AVX2:
			(void)urldigest_many(d, u->p + i, u->len + i, m, o,
			    causes, NULL, NULL);
			break;
		default:
			break;
		}
	}
	md5_limit_lanes(MD5_LANES_MAX);
}

static void
run(const char *name, const struct urls *u, double secs, int rounds,
    EVP_MD_CTX *ctx, struct urldigest *d)
{
	uint8_t *want = malloc(u->n * URLDIGEST_LEN + 1);
	uint8_t *got = malloc(u->n * URLDIGEST_LEN + 1);
	double best[NPATHS] = { 0 };
	size_t bytes = 0;

	if (want == NULL || got == NULL)
		exit(1);
	for (size_t i = 0; i < u->n; i++)
		bytes += u->len[i];
	pass(EVP, u, want, ctx, d);
	for (int p = 0; p < NPATHS; p++) {
		pass(p, u, got, ctx, d);
		if (memcmp(got, want, u->n * URLDIGEST_LEN) != 0) {
			fprintf(stderr, "md5_bench: %s: %s differs from "
			    "EVP\n", name, path_names[p]);
			exit(1);
		}
	}
	/* Rounds take turns between the paths: the machine's drift
	 * reaches them all alike. */
	for (int r = 0; r < rounds; r++)
		for (int p = 0; p < NPATHS; p++) {
			double t0 = now(), t;
			size_t done = 0;

			do {
				pass(p, u, got, ctx, d);
				done += u->n;
			} while ((t = now() - t0) < secs);
			if (done / t > best[p])
				best[p] = done / t;
		}
	printf("%s: %zu URLs, %.1f bytes each (canonical)\n", name, u->n,
	    (double)bytes / (double)u->n);
	for (int p = 0; p < NPATHS; p++)
		printf("md5 set=%s path=%s urls_per_s=%.0f ns_per_url=%.1f "
		    "vs_evp=%.2f\n", name, path_names[p], best[p],
		    1e9 / best[p], best[p] / best[p < KEY_EVP ? EVP : KEY_EVP]);
	free(want);
	free(got);
}

int
main(int argc, char **argv)
{
	const char *data = getenv("NDDD_TEST_DATA") ? getenv("NDDD_TEST_DATA") :
	    "../shared/data";
	struct urlcanon_options opts = { 0 };
	struct urldigest *d = urldigest_new(&opts);
	EVP_MD *md5 = EVP_MD_fetch(NULL, "MD5", NULL);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	struct urls real = { 0 }, synth = { 0 };
	struct urllist lists = { 0 }, gen = { 0 };
	double secs = 0.3;
	int rounds = 5, c;
	char path[4096];

	while ((c = getopt(argc, argv, "d:s:r:")) != -1) {
		switch (c) {
		case 'd':
			data = optarg;
			break;
		case 's':
			secs = atof(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: md5_bench [-d datadir] "
			    "[-s seconds] [-r rounds]\n");
			return 2;
		}
	}
	if (d == NULL || md5 == NULL || ctx == NULL ||
	    !EVP_DigestInit_ex2(ctx, md5, NULL))
		return 1;
	printf("md5_bench: one thread; md5_digests lanes %d (%s)\n",
	    md5_lanes(), md5_lanes() == 16 ? "AVX-512" : md5_lanes() == 8 ?
	    "AVX2; this CPU has no AVX-512" : "this CPU has no AVX2");
	snprintf(path, sizeof(path),
	    "%s/url_lists/ada_url_various_datasets/kasztp.txt", data);
	urlgen_file(&lists, path);
	snprintf(path, sizeof(path),
	    "%s/url_lists/ut1_blacklists/phishing_urls_2021-03-17.txt", data);
	urlgen_file(&lists, path);
	canonical(&real, d, &lists);
	urlgen_synthetic(&gen, 100000, 0);
	canonical(&synth, d, &gen);
	run("real", &real, secs, rounds, ctx, d);
	run("synthetic", &synth, secs, rounds, ctx, d);
	urlgen_free(&lists);
	urlgen_free(&gen);
	EVP_MD_CTX_free(ctx);
	EVP_MD_free(md5);
	urldigest_free(d);
	return 0;
}
