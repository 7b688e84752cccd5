/*
 * accel_bench: throughput of the accelerator backends through nddd's
 * accelerator interface (accel.h, plugins loaded with dlopen as the daemon
 * loads them), in MB/s (10^6 bytes of input per second), all measured in
 * the same run so that their ratios mean something.
 *
 * Workload: the Reuters-21578 bodies preprocessed into the accelerator
 * format (terms separated by single spaces, stop words gone), handed over
 * as ACCEL_INPUT_PREPROCESSED, so that what is timed is the backends' own
 * work: the cpu backend's vectorised engine on its worker threads, the
 * opencl plugin's transfers and kernel, or fpga-sim's Verilator model of
 * the RTL (a simulation: its MB/s are the simulator's, not the hardware's).
 * The corpus goes as jobs of -j documents, cut into batches of -b; a
 * measurement submits them all, runs the event loop until the last is
 * done, and repeats that for at least -s seconds.  Each measurement is
 * repeated -r times; the best and the median are printed.  Every
 * fingerprint is compared with the cpu backend's once; any difference
 * makes the exit status 1.
 *
 *   accel_bench [-d datadir] [-D plugindir] [-s seconds] [-r repeats]
 *       [-t threads] [-b batchdocs] [-j jobdocs] [-n docs]
 *       [-a backend[:params]]... [-S stopwords] [-H sdbm|sdbm-fmix64]
 *
 * Default backends: cpu, opencl and fpga-sim (those built: the plugins in
 * -D, by default ../accel next to this program).
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "accel.h"
#include "corpus.h"
#include "log.h"
#include "simhash.h"
#include "stopwords.h"

#define BENCH_MAX_BACKENDS 8

struct bench {
	struct event_base *base;
	struct corpus *docs;		/* preprocessed */
	size_t job_docs;
	unsigned pending;
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void
bench_done(struct accel_job *job, void *arg)
{
	struct bench *b = arg;

	(void)job;
	if (--b->pending == 0)
		event_base_loopbreak(b->base);
}

/* One pass over the corpus; the jobs are returned for checking. */
static struct accel_job **
bench_pass(struct bench *b, struct accel *acc, size_t *njobs)
{
	size_t nj = (b->docs->n + b->job_docs - 1) / b->job_docs, j, k;
	struct accel_job **jobs = calloc(nj, sizeof(*jobs));

	if (jobs == NULL)
		return NULL;
	for (j = 0; j < nj; j++) {
		size_t first = j * b->job_docs;
		size_t n = b->docs->n - first < b->job_docs ?
		    b->docs->n - first : b->job_docs;

		if ((jobs[j] = accel_job_new(n, SIMHASH_INPUT_PREPROCESSED)) ==
		    NULL)
			return NULL;
		for (k = 0; k < n; k++)
			accel_job_set(jobs[j], k, b->docs->docs[first + k].data,
			    b->docs->docs[first + k].len);
		b->pending++;
		if (accel_submit(acc, jobs[j], bench_done, b) == -1)
			return NULL;
	}
	event_base_dispatch(b->base);
	*njobs = nj;
	return jobs;
}

static void
bench_free_jobs(struct accel_job **jobs, size_t nj)
{
	size_t j;

	for (j = 0; j < nj; j++)
		accel_job_free(jobs[j]);
	free(jobs);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
usage(void)
{
	fprintf(stderr, "usage: accel_bench [-d datadir] [-D plugindir] "
	    "[-s seconds] [-r repeats] [-t threads] [-b batchdocs] "
	    "[-j jobdocs] [-n docs] [-a backend[:params]]... [-S stopwords] "
	    "[-H sdbm|sdbm-fmix64]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *datadir = "../shared/data", *swpath = "conf/stopwords.txt";
	char *names[BENCH_MAX_BACKENDS], plugin_dir[4096] = "", exe[4096];
	char path[4200], *cause = NULL;
	double seconds = 3, mbs[64];
	unsigned repeats = 3, threads = 0, batch_docs = 1024, nb = 0, i, r;
	size_t ndocs = 0, k;
	enum simhash_term_hash th = SIMHASH_TERM_HASH_SDBM_FMIX64;
	uint64_t *want = NULL;
	struct bench b = { 0 };
	struct simhash_scratch *sc;
	struct stopwords *sw;
	struct simhash *sh;
	struct corpus *raw;
	ssize_t n;
	int c, mismatched = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	b.job_docs = 4096;
	while ((c = getopt(argc, argv, "a:b:d:D:H:j:n:r:s:S:t:")) != -1) {
		switch (c) {
		case 'a':
			if (nb == BENCH_MAX_BACKENDS)
				usage();
			names[nb++] = optarg;
			break;
		case 'b':
			batch_docs = (unsigned)atoi(optarg);
			break;
		case 'd':
			datadir = optarg;
			break;
		case 'D':
			snprintf(plugin_dir, sizeof(plugin_dir), "%s", optarg);
			break;
		case 'H':
			if (simhash_term_hash_parse(optarg, &th) == -1)
				usage();
			break;
		case 'j':
			b.job_docs = (size_t)atol(optarg);
			break;
		case 'n':
			ndocs = (size_t)atol(optarg);
			break;
		case 'r':
			repeats = (unsigned)atoi(optarg);
			break;
		case 's':
			seconds = atof(optarg);
			break;
		case 'S':
			swpath = optarg;
			break;
		case 't':
			threads = (unsigned)atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (repeats < 1 || repeats > 64 || b.job_docs < 1 || batch_docs < 1)
		usage();
	if (nb == 0) {
		names[nb++] = "cpu";
		names[nb++] = "opencl";
		names[nb++] = "fpga-sim";
	}
	if (plugin_dir[0] == '\0' &&
	    (n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
		exe[n] = '\0';
		snprintf(plugin_dir, sizeof(plugin_dir), "%s/../accel",
		    dirname(exe));
	}
	log_init(LOG_LEVEL_INFO, "accel_bench");
	if ((sw = stopwords_load(swpath, &cause)) == NULL ||
	    (sh = simhash_new(th, sw, &cause)) == NULL) {
		fprintf(stderr, "accel_bench: %s\n", cause);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/text_corpora/reuters21578", datadir);
	if ((raw = corpus_reuters(path, ndocs)) == NULL) {
		fprintf(stderr, "accel_bench: no Reuters-21578 in %s\n", path);
		return 1;
	}
	/* Preprocessed once, with nddd's own code. */
	b.docs = calloc(1, sizeof(*b.docs));
	b.docs->docs = calloc(raw->n, sizeof(*b.docs->docs));
	sc = simhash_scratch_new();
	for (k = 0; k < raw->n; k++) {
		uint8_t *out;
		size_t len;

		if (simhash_preprocess(sh, sc, SIMHASH_INPUT_TEXT,
		    raw->docs[k].data, raw->docs[k].len, &out, &len) == -1) {
			fprintf(stderr, "accel_bench: out of memory\n");
			return 1;
		}
		b.docs->docs[k].data = (char *)out;
		b.docs->docs[k].len = len;
		b.docs->bytes += len;
	}
	b.docs->n = raw->n;
	simhash_scratch_free(sc);
	b.base = event_base_new();
	printf("accel_bench: %zu Reuters-21578 bodies, %.2f MB preprocessed "
	    "(%.2f MB raw), term hash %s, jobs of %zu, batches of %u; "
	    "%u repeats of >= %.1f s; %ld online CPUs\n", b.docs->n,
	    (double)b.docs->bytes / 1e6, (double)raw->bytes / 1e6,
	    simhash_term_hash_name(th), b.job_docs, batch_docs, repeats,
	    seconds, sysconf(_SC_NPROCESSORS_ONLN));
	corpus_free(raw);

	for (i = 0; i < nb; i++) {
		struct accel_options o;
		struct accel_stats st;
		struct accel_job **jobs;
		struct accel *acc;
		char *params;
		size_t nj, j, bad = 0;
		double t0, el;
		uint64_t bytes;

		accel_options_defaults(&o);
		if ((params = strchr(names[i], ':')) != NULL)
			*params++ = '\0';
		snprintf(o.accelerator, sizeof(o.accelerator), "%s", names[i]);
		snprintf(o.plugin_dir, sizeof(o.plugin_dir), "%s", plugin_dir);
		snprintf(o.params, sizeof(o.params), "%s",
		    params != NULL ? params : "");
		o.threads = threads;
		o.batch_docs = batch_docs;
		if ((acc = accel_new(b.base, &o, th, sw, &cause)) == NULL) {
			fprintf(stderr, "accel_bench: %s\n", cause);
			return 1;
		}
		accel_stats(acc, &st);
		if (strcmp(st.backend, names[i]) != 0) {
			printf("  %-9s skipped: %s\n", names[i], st.fallback);
			accel_free(acc);
			continue;
		}
		/* A first pass, unmeasured: warm-up and the check. */
		if ((jobs = bench_pass(&b, acc, &nj)) == NULL) {
			fprintf(stderr, "accel_bench: out of memory\n");
			return 1;
		}
		if (want == NULL)
			want = calloc(b.docs->n, sizeof(*want));
		for (j = 0, k = 0; j < nj; j++) {
			size_t d;

			for (d = 0; d < accel_job_ndocs(jobs[j]); d++, k++) {
				uint64_t fp = 0;

				if (accel_job_result(jobs[j], d, &fp) !=
				    SIMHASH_OK)
					fp = ~0ULL;
				if (i == 0)
					want[k] = fp;
				else if (fp != want[k])
					bad++;
			}
		}
		bench_free_jobs(jobs, nj);
		for (r = 0; r < repeats; r++) {
			bytes = 0;
			t0 = now();
			do {
				if ((jobs = bench_pass(&b, acc, &nj)) == NULL)
					return 1;
				bench_free_jobs(jobs, nj);
				bytes += b.docs->bytes;
			} while ((el = now() - t0) < seconds);
			mbs[r] = (double)bytes / el / 1e6;
		}
		qsort(mbs, repeats, sizeof(mbs[0]), cmp_double);
		accel_stats(acc, &st);
		printf("  %-9s best %9.2f MB/s, median %9.2f MB/s%s%s%s\n",
		    names[i], mbs[repeats - 1], mbs[repeats / 2],
		    st.simulation ? "  (a simulation of the RTL, not "
		    "hardware)" : "", i > 0 && bad > 0 ? "  MISMATCHES" : "",
		    st.batches_failed > 0 ? "  (failed batches)" : "");
		if (i > 0 && bad > 0) {
			printf("  %-9s %zu fingerprints differ from %s's\n",
			    names[i], bad, names[0]);
			mismatched = 1;
		}
		accel_free(acc);
	}
	free(want);
	event_base_free(b.base);
	corpus_free(b.docs);
	simhash_free(sh);
	stopwords_free(sw);
	/* A backend that disagrees is a defect, not a figure. */
	return mismatched;
}
