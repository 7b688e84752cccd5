/*
 * simhash_bench: throughput of the simhash engine, in MB/s (10^6 bytes of
 * input per second), against the naive reference measured in the same run.
 *
 * Workloads:
 *   (a) preprocessed text: the Reuters-21578 bodies preprocessed (terms
 *       separated by single spaces, stop words gone), as the accelerators
 *       take them;
 *   (b) raw HTML, preprocessing included: the L3S-GN1 pages;
 *   (c) plain text, preprocessing included: the Reuters-21578 bodies.
 * Each at every instruction-set level this CPU has, with 1 thread and with
 * one thread per core (the threads share the documents out), and the naive
 * reference with 1 thread.  A measurement runs the whole workload over and
 * over for at least the given time; each (the naive reference's too) is
 * repeated and the best and median are printed: on a machine shared with
 * other work the best is the closest to the uncontended speed.
 *
 *   simhash_bench [-d datadir] [-s seconds] [-r repeats] [-t threads]
 *       [-w a|b|c]... [-l scalar|avx2|avx512]... [-S stopwords]
 *       [-B megabytes]
 *
 * -B also fingerprints one synthetic document of that many megabytes (a
 * bad-input check: a huge document with enormous terms and binary junk).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "corpus.h"
#include "simhash.h"
#include "simhash_impl.h"
#include "simhash_ref.h"
#include "stopwords.h"

struct workload {
	const char *name;
	enum simhash_input input;
	struct corpus *docs;
};

struct job {
	const struct workload *w;
	const struct simhash *sh;
	const struct ref_stopwords *ref_sw;
	int naive;
	size_t tid, nthreads;
	double min_seconds;
	size_t bytes;			/* out */
	double start, end;		/* out: when it started and ended */
	uint64_t sum;			/* out, to keep the work */
	pthread_barrier_t *barrier;
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *
bench_thread(void *arg)
{
	struct job *j = arg;
	struct simhash_scratch *sc = simhash_scratch_new();
	const struct corpus *c = j->w->docs;
	double start;
	uint64_t fp;
	size_t i;

	pthread_barrier_wait(j->barrier);
	start = j->start = now();
	do {
		for (i = j->tid; i < c->n; i += j->nthreads) {
			const char *d = c->docs[i].data;
			size_t len = c->docs[i].len;

			fp = 0;
			if (!j->naive) {
				/* As the cpu backend does. */
				if (i + j->nthreads < c->n)
					simhash_prefetch(c->docs[i +
					    j->nthreads].data, c->docs[i +
					    j->nthreads].len);
				simhash_compute(j->sh, sc, j->w->input, d, len,
				    &fp);
			}
			else if (j->w->input == SIMHASH_INPUT_PREPROCESSED)
				ref_simhash_preprocessed(d, len,
				    simhash_term_hash_of(j->sh) ==
				    SIMHASH_TERM_HASH_SDBM, &fp);
			else
				ref_simhash(d, len, j->w->input ==
				    SIMHASH_INPUT_HTML, simhash_term_hash_of(j->sh)
				    == SIMHASH_TERM_HASH_SDBM, j->ref_sw, &fp);
			j->sum += fp;
			j->bytes += len;
		}
	} while ((j->end = now()) - start < j->min_seconds);
	simhash_scratch_free(sc);
	return NULL;
}

/* One measurement: MB/s over nthreads threads. */
static double
measure(const struct workload *w, const struct simhash *sh,
    const struct ref_stopwords *ref_sw, int naive, size_t nthreads,
    double seconds)
{
	pthread_t th[64];
	struct job jobs[64];
	pthread_barrier_t barrier;
	size_t i, bytes = 0;
	double start, end, elapsed;

	pthread_barrier_init(&barrier, NULL, (unsigned)nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		memset(&jobs[i], 0, sizeof(jobs[i]));
		jobs[i].w = w;
		jobs[i].sh = sh;
		jobs[i].ref_sw = ref_sw;
		jobs[i].naive = naive;
		jobs[i].tid = i;
		jobs[i].nthreads = nthreads;
		jobs[i].min_seconds = seconds;
		jobs[i].barrier = &barrier;
		pthread_create(&th[i], NULL, bench_thread, &jobs[i]);
	}
	pthread_barrier_wait(&barrier);
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	/* From the first thread's start to the last one's end. */
	start = jobs[0].start;
	end = jobs[0].end;
	for (i = 0; i < nthreads; i++) {
		bytes += jobs[i].bytes;
		if (jobs[i].start < start)
			start = jobs[i].start;
		if (jobs[i].end > end)
			end = jobs[i].end;
	}
	elapsed = end - start;
	pthread_barrier_destroy(&barrier);
	return (double)bytes / elapsed / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Repeats a measurement; stores best and median. */
static void
measure_many(const struct workload *w, const struct simhash *sh,
    const struct ref_stopwords *ref_sw, int naive, size_t nthreads,
    double seconds, int repeats, double *best, double *median)
{
	double r[64];
	int i;

	for (i = 0; i < repeats; i++)
		r[i] = measure(w, sh, ref_sw, naive, nthreads, seconds);
	qsort(r, (size_t)repeats, sizeof(r[0]), cmp_double);
	*best = r[repeats - 1];
	*median = r[repeats / 2];
}

static struct corpus *
preprocess_all(const struct simhash *sh, const struct corpus *in)
{
	struct simhash_scratch *sc = simhash_scratch_new();
	struct corpus *out = calloc(1, sizeof(*out));
	uint8_t *buf;
	size_t i, n;

	out->docs = calloc(in->n, sizeof(*out->docs));
	for (i = 0; i < in->n; i++) {
		if (simhash_preprocess(sh, sc, SIMHASH_INPUT_TEXT,
		    in->docs[i].data, in->docs[i].len, &buf, &n) == -1)
			abort();
		if (n == 0) {
			free(buf);
			continue;
		}
		out->docs[out->n].data = (char *)buf;
		out->docs[out->n].len = n;
		out->n++;
		out->bytes += n;
	}
	simhash_scratch_free(sc);
	return out;
}

/* A document of mb megabytes: text, junk and terms of megabytes. */
static void
huge_document(const struct simhash *sh, size_t mb)
{
	struct simhash_scratch *sc = simhash_scratch_new();
	size_t len = mb << 20, i;
	char *d = malloc(len);
	uint64_t x = 88172645463325252ULL, fp = 0;
	enum simhash_status st;
	double t;
	int k;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (i < len / 4)
			d[i] = (char)x;			/* binary junk */
		else if (i < len / 2)
			d[i] = (char)('a' + x % 26);	/* one enormous term */
		else
			d[i] = x % 7 == 0 ? ' ' : (char)('a' + x % 26);
	}
	for (k = 0; k < 3; k++) {
		static const enum simhash_input in[3] = { SIMHASH_INPUT_TEXT,
		    SIMHASH_INPUT_HTML, SIMHASH_INPUT_PREPROCESSED };
		static const char *names[3] = { "text", "html",
		    "preprocessed" };

		t = now();
		st = simhash_compute(sh, sc, in[k], d, len, &fp);
		t = now() - t;
		printf("huge document: %zu MB as %s: %s %016llx in %.3f s "
		    "(%.0f MB/s)\n", mb, names[k], st == SIMHASH_OK ? "ok" :
		    "EMPTY_DOCUMENT", (unsigned long long)fp, t,
		    (double)len / t / 1e6);
	}
	free(d);
	simhash_scratch_free(sc);
}

#if defined(SIMHASH_PROFILE) && defined(__x86_64__)
/*
 * Core cycles per time-stamp-counter tick: a chain of dependent 64-bit
 * multiplies takes 3 cycles each on every x86 core of this century.
 */
static double
core_per_tsc(void)
{
	double best = 0;
	int r;

	for (r = 0; r < 5; r++) {
		uint64_t x = 3, t0 = __rdtsc(), t;
		long i;

		for (i = 0; i < 10000000; i++)
			__asm__ volatile("imul %0, %0\n\timul %0, %0\n\t"
			    "imul %0, %0\n\timul %0, %0" : "+r"(x));
		t = __rdtsc() - t0;
		if (12.0 * 1e7 / (double)t > best)
			best = 12.0 * 1e7 / (double)t;
	}
	return best;
}

/*
 * The phase profile of a pass over a workload (VARIANT=profile): the
 * fastest of several, the one least disturbed by other work.
 */
static void
profile(const struct workload *w, const struct simhash *sh)
{
	struct simhash_scratch *sc = simhash_scratch_new();
	struct simhash_profile best = { 0 };
	double ratio = core_per_tsc(), b;
	uint64_t fp, total, best_total = UINT64_MAX;
	size_t i;
	int r;

	for (r = 0; r < 15; r++) {
		memset(&simhash_profile, 0, sizeof(simhash_profile));
		total = __rdtsc();
		for (i = 0; i < w->docs->n; i++) {
			if (i + 1 < w->docs->n)
				simhash_prefetch(w->docs->docs[i + 1].data,
				    w->docs->docs[i + 1].len);
			simhash_compute(sh, sc, w->input, w->docs->docs[i].data,
			    w->docs->docs[i].len, &fp);
		}
		total = __rdtsc() - total;
		if (total < best_total) {
			best_total = total;
			best = simhash_profile;
		}
	}
	total = best_total;
	b = (double)w->docs->bytes;
	printf("  profile (%s, 1 thread, fastest of 15 passes, %.2f core "
	    "cycles per TSC tick; core cycles per input byte):\n",
	    simhash_simd_name(simhash_simd_active()), ratio);
	printf("    total %.3f = normalize %.3f + tokenize %.3f + hash %.3f + "
	    "stop words, fmix64 and count %.3f + rest %.3f; %.2f bytes and "
	    "%.1f core cycles per term\n", ratio * (double)total / b,
	    ratio * (double)best.normalize / b, ratio * (double)best.tokenize /
	    b, ratio * (double)best.hash / b, ratio * (double)best.filter / b,
	    ratio * (double)(total - best.normalize - best.tokenize -
	    best.hash - best.filter) / b, b / (double)best.terms, ratio *
	    (double)total / (double)best.terms);
	simhash_scratch_free(sc);
}
#endif

static void
usage(void)
{
	fprintf(stderr, "usage: simhash_bench [-d datadir] [-s seconds] "
	    "[-r repeats] [-t threads] [-w a|b|c]... [-l level]... "
	    "[-S stopwords] [-B megabytes]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *datadir = getenv("NDDD_TEST_DATA"), *stopfile =
	    "conf/stopwords.txt";
	char path[4096], *cause = NULL, model[256] = "unknown";
	double seconds = 1.0, best, median, ref_best[3] = { 0 };
	int repeats = 5, c, want_w = 0, want_l = 0, li, wi;
	size_t ncores = (size_t)sysconf(_SC_NPROCESSORS_ONLN), threads[2],
	    nt, ti, huge_mb = 0;
	struct workload w[3];
	struct stopwords *sw;
	struct ref_stopwords *ref_sw;
	struct simhash *sh;
	FILE *f;
	static const enum simhash_simd levels[3] = { SIMHASH_SIMD_SCALAR,
	    SIMHASH_SIMD_AVX2, SIMHASH_SIMD_AVX512 };

	if (datadir == NULL)
		datadir = "../shared/data";
	while ((c = getopt(argc, argv, "B:d:l:r:s:S:t:w:")) != -1) {
		switch (c) {
		case 'B':
			huge_mb = (size_t)atol(optarg);
			break;
		case 'd':
			datadir = optarg;
			break;
		case 'l': {
			enum simhash_simd lv;

			if (simhash_simd_parse(optarg, &lv) == -1)
				usage();
			for (li = 0; li < 3; li++)
				if (levels[li] == lv)
					want_l |= 1 << li;
			break;
		}
		case 'r':
			repeats = atoi(optarg);
			if (repeats < 1 || repeats > 64)
				usage();
			break;
		case 's':
			seconds = atof(optarg);
			break;
		case 'S':
			stopfile = optarg;
			break;
		case 't':
			ncores = (size_t)atol(optarg);
			if (ncores < 1 || ncores > 64)
				usage();
			break;
		case 'w':
			if (optarg[0] < 'a' || optarg[0] > 'c' ||
			    optarg[1] != '\0')
				usage();
			want_w |= 1 << (optarg[0] - 'a');
			break;
		default:
			usage();
		}
	}
	if (want_w == 0)
		want_w = 7;
	if (want_l == 0)
		want_l = 7;
	if ((f = fopen("/proc/cpuinfo", "r")) != NULL) {
		char line[512];

		while (fgets(line, sizeof(line), f) != NULL) {
			if (strncmp(line, "model name", 10) == 0) {
				char *v = strchr(line, ':');

				if (v != NULL) {
					snprintf(model, sizeof(model), "%s",
					    v + 2);
					model[strcspn(model, "\n")] = '\0';
				}
				break;
			}
		}
		fclose(f);
	}
	if ((sw = stopwords_load(stopfile, &cause)) == NULL) {
		fprintf(stderr, "simhash_bench: %s\n", cause);
		return 1;
	}
	ref_sw = ref_stopwords_new(stopwords_list(sw));
	if ((sh = simhash_new(SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &cause)) ==
	    NULL) {
		fprintf(stderr, "simhash_bench: %s\n", cause);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/text_corpora/reuters21578", datadir);
	w[2].name = "(c) plain text, Reuters-21578 bodies";
	w[2].input = SIMHASH_INPUT_TEXT;
	if ((w[2].docs = corpus_reuters(path, 0)) == NULL) {
		fprintf(stderr, "simhash_bench: cannot read %s\n", path);
		return 1;
	}
	w[0].name = "(a) preprocessed text (Reuters, stop words removed)";
	w[0].input = SIMHASH_INPUT_PREPROCESSED;
	w[0].docs = preprocess_all(sh, w[2].docs);
	snprintf(path, sizeof(path), "%s/text_corpora/l3s_gn1_html/original",
	    datadir);
	w[1].name = "(b) raw HTML, L3S-GN1 pages";
	w[1].input = SIMHASH_INPUT_HTML;
	if ((w[1].docs = corpus_files(path, ".html")) == NULL) {
		fprintf(stderr, "simhash_bench: cannot read %s\n", path);
		return 1;
	}
	printf("machine: %s, %zu online CPUs\n", model,
	    (size_t)sysconf(_SC_NPROCESSORS_ONLN));
	printf("term hash: %s; stop words: %s (%zu)\n",
	    simhash_term_hash_name(SIMHASH_TERM_HASH_SDBM_FMIX64), stopfile,
	    stopwords_count(sw));
	printf("each figure: MB/s (10^6 input bytes/s), best and median of "
	    "%d runs of >= %.1f s\n", repeats, seconds);
	threads[0] = 1;
	threads[1] = ncores;
	nt = ncores > 1 ? 2 : 1;
	for (wi = 0; wi < 3; wi++) {
		if (!(want_w & (1 << wi)))
			continue;
		printf("\n%s: %zu documents, %.1f MB\n", w[wi].name,
		    w[wi].docs->n, (double)w[wi].docs->bytes / 1e6);
		measure_many(&w[wi], sh, ref_sw, 1, 1, seconds, repeats, &best,
		    &median);
		ref_best[wi] = best;
		printf("  %-8s %2d thread   best %8.1f  median %8.1f\n",
		    "naive", 1, best, median);
		for (li = 0; li < 3; li++) {
			if (!(want_l & (1 << li)))
				continue;
			if (!simhash_simd_supported(levels[li])) {
				printf("  %-8s skipped: not supported by this "
				    "CPU\n", simhash_simd_name(levels[li]));
				continue;
			}
			simhash_simd_select(levels[li], &cause);
			for (ti = 0; ti < nt; ti++) {
				measure_many(&w[wi], sh, ref_sw, 0, threads[ti],
				    seconds, repeats, &best, &median);
				printf("  %-8s %2zu thread%s  best %8.1f  median "
				    "%8.1f  (%.1fx naive)\n",
				    simhash_simd_name(levels[li]), threads[ti],
				    threads[ti] > 1 ? "s" : " ", best, median,
				    best / ref_best[wi]);
			}
#if defined(SIMHASH_PROFILE) && defined(__x86_64__)
			if (levels[li] == SIMHASH_SIMD_AVX512)
				profile(&w[wi], sh);
#endif
		}
	}
	if (huge_mb > 0) {
		simhash_simd_select(SIMHASH_SIMD_AUTO, &cause);
		printf("\n");
		huge_document(sh, huge_mb);
	}
	simhash_free(sh);
	ref_stopwords_free(ref_sw);
	stopwords_free(sw);
	for (wi = 0; wi < 3; wi++)
		corpus_free(w[wi].docs);
	return 0;
}
