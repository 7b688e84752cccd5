/*
 * doc_bench: documents through a running nddd, end to end over loopback,
 * against the simhash engine measured in the same run on the same corpus:
 * the fraction of the engine's speed a client gets through the daemon.
 *
 *   doc_bench -H HOST:PORT (--reuters DIR | --html DIR) [-c CLIENTS]
 *             [-w WINDOW] [-r REPEAT] [-b BATCH] [-t THREADS]
 *             [-l auto|scalar|avx2|avx512] [-S STOPWORDS] [-L DOCS]
 *
 * --reuters: the Reuters-21578 bodies as text; --html: the *.html pages of
 * a directory (the L3S-GN1 pages) as HTML.  REPEAT > 1 submits the corpus
 * again under other URLs.  BATCH documents per request: doc_batch when
 * above 1, else doc_submit and doc_query (default 1).
 *
 * Phases, each a line:
 *   phase=doc-submit  every document stored (durable as the server's
 *                     [store] sync makes it), answered with its group;
 *   phase=doc-query   every document again, nothing stored: doc_query by
 *                     body, or, in batches, documents with query_only
 *                     under URLs not stored;
 *   phase=latency-submit, latency-query  DOCS single documents (default
 *                     2,000; 0: none) one at a time on one connection:
 *                     p50 and p99 of each one's round trip;
 *   engine=           simhash_compute on the same documents, in this
 *                     process, THREADS threads (default: one per online
 *                     CPU), best of 5 runs of >= 0.3 s, at level -l
 *                     (default auto; the server's [simhash] simd should
 *                     name the same) with the stop words of -S (default
 *                     conf/stopwords.txt);
 * and the ratio of each phase's MB/s to the engine's.  Request frames are
 * encoded before the clock starts and replies decoded as they come.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchnet.h"
#include "corpus.h"
#include "simhash.h"
#include "stopwords.h"

struct work {
	struct bench_stream stream;
	size_t refused;		/* replies or documents refused */
	char error[256];	/* the stream's failure, if any */
};

static int
count_reply(void *arg, const Nddd__V1__Response *r)
{
	struct work *w = arg;

	if (r->status != NULL && r->status->code != 0)
		w->refused++;
	else if (r->result_case == NDDD__V1__RESPONSE__RESULT_DOCS)
		w->refused += r->docs->n_errors;
	return 0;
}

static void *
client_main(void *arg)
{
	struct work *w = arg;

	if (bench_stream_run(&w->stream, w->error, sizeof(w->error)) == -1)
		return w;
	return NULL;
}

/* The frames of one phase and what they carry. */
struct phase {
	const char *name;
	uint8_t **frames;
	size_t *lens;
	size_t nframes;
	size_t docs, bytes;
};

static void
phase_free(struct phase *p)
{
	for (size_t i = 0; i < p->nframes; i++)
		free(p->frames[i]);
	free(p->frames);
	free(p->lens);
	memset(p, 0, sizeof(*p));
}

/* Runs p's frames on clients connections; its MB/s in *mbs. */
static int
run_phase(const struct phase *p, const char *address, unsigned clients,
    unsigned window, double *mbs)
{
	pthread_t th[64];
	struct work w[64];
	size_t refused = 0;
	double t0, secs;
	int error = 0;

	for (unsigned i = 0; i < clients; i++) {
		size_t b = p->nframes * i / clients;
		size_t e = p->nframes * (i + 1) / clients;

		w[i] = (struct work){ .stream = { .address = address,
		    .frames = p->frames + b, .lens = p->lens + b, .n = e - b,
		    .window = window, .reply = count_reply, .arg = &w[i] } };
	}
	/* On standard error, for a profiler that follows the phases. */
	fprintf(stderr, "doc_bench: phase=%s starts\n", p->name);
	t0 = bench_now();
	for (unsigned i = 0; i < clients; i++)
		pthread_create(&th[i], NULL, client_main, &w[i]);
	for (unsigned i = 0; i < clients; i++) {
		void *failed_stream;

		pthread_join(th[i], &failed_stream);
		refused += w[i].refused;
		if (failed_stream != NULL) {
			fprintf(stderr, "doc_bench: %s\n", w[i].error);
			error = 1;
		}
	}
	secs = bench_now() - t0;
	/* A phase that lost a connection has no figure to give. */
	if (error)
		return -1;
	*mbs = (double)p->bytes / secs / 1e6;
	printf("phase=%s docs=%zu bytes=%zu requests=%zu seconds=%.3f "
	    "docs_per_s=%.0f mb_per_s=%.1f refused=%zu\n", p->name, p->docs,
	    p->bytes, p->nframes, secs, (double)p->docs / secs, *mbs, refused);
	fflush(stdout);
	return 0;
}

/* p50 and p99 of single documents, one at a time on one connection. */
static int
run_latency(const struct phase *p, const char *address)
{
	double *lat = calloc(p->nframes, sizeof(*lat));
	struct work w = { .stream = { .address = address,
	    .frames = p->frames, .lens = p->lens, .n = p->nframes,
	    .window = 1, .reply = count_reply, .latency = lat } };

	w.stream.arg = &w;
	if (lat == NULL || bench_stream_run(&w.stream, w.error,
	    sizeof(w.error)) == -1) {
		fprintf(stderr, "doc_bench: %s\n", lat ? w.error : "no memory");
		free(lat);
		return -1;
	}
	printf("phase=%s docs=%zu p50_us=%.0f p99_us=%.0f refused=%zu\n",
	    p->name, p->nframes, bench_percentile(lat, p->nframes, 50) * 1e6,
	    bench_percentile(lat, p->nframes, 99) * 1e6, w.refused);
	fflush(stdout);
	free(lat);
	return 0;
}

enum kind { KIND_SUBMIT, KIND_QUERY };

/*
 * The frames of n documents (document i is corpus document i % co->n,
 * under a URL of repetition i / co->n), batch per request.
 */
static void
make_phase(struct phase *p, const char *name, const struct corpus *co,
    size_t first, size_t n, size_t batch, enum kind kind, int html)
{
	Nddd__V1__DocSubmit *subs = calloc(batch, sizeof(*subs));
	Nddd__V1__DocSubmit **subv = calloc(batch, sizeof(*subv));
	char (*urls)[96] = calloc(batch, sizeof(*urls));
	Nddd__V1__DocFormat fmt = html ? NDDD__V1__DOC_FORMAT__HTML :
	    NDDD__V1__DOC_FORMAT__TEXT;

	memset(p, 0, sizeof(*p));
	p->name = name;
	p->nframes = (n + batch - 1) / batch;
	p->frames = calloc(p->nframes, sizeof(*p->frames));
	p->lens = calloc(p->nframes, sizeof(*p->lens));
	if (subs == NULL || subv == NULL || urls == NULL || p->frames == NULL ||
	    p->lens == NULL) {
		fprintf(stderr, "doc_bench: out of memory\n");
		exit(1);
	}
	for (size_t f = 0; f < p->nframes; f++) {
		Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
		Nddd__V1__DocBatch db = NDDD__V1__DOC_BATCH__INIT;
		Nddd__V1__DocQuery q = NDDD__V1__DOC_QUERY__INIT;
		Nddd__V1__DocBody body = NDDD__V1__DOC_BODY__INIT;
		size_t m = n - f * batch < batch ? n - f * batch : batch;

		for (size_t j = 0; j < m; j++) {
			size_t i = first + f * batch + j;
			const struct corpus_doc *doc = &co->docs[i % co->n];

			nddd__v1__doc_submit__init(&subs[j]);
			snprintf(urls[j], sizeof(urls[j]),
			    "http://%s.example/%zu/%zu", kind == KIND_SUBMIT ?
			    "stored" : "query", i / co->n, i % co->n);
			subs[j].url.data = (uint8_t *)urls[j];
			subs[j].url.len = strlen(urls[j]);
			subs[j].body.data = (uint8_t *)doc->data;
			subs[j].body.len = doc->len;
			subs[j].format = fmt;
			subs[j].query_only = kind == KIND_QUERY;
			subv[j] = &subs[j];
			p->bytes += doc->len;
		}
		p->docs += m;
		req.id = f + 1;
		if (batch > 1) {
			db.n_docs = m;
			db.docs = subv;
			req.op_case = NDDD__V1__REQUEST__OP_DOC_BATCH;
			req.doc_batch = &db;
		} else if (kind == KIND_SUBMIT) {
			req.op_case = NDDD__V1__REQUEST__OP_DOC_SUBMIT;
			req.doc_submit = &subs[0];
		} else {
			body.body = subs[0].body;
			body.format = fmt;
			q.what_case = NDDD__V1__DOC_QUERY__WHAT_BODY;
			q.body = &body;
			req.op_case = NDDD__V1__REQUEST__OP_DOC_QUERY;
			req.doc_query = &q;
		}
		p->frames[f] = bench_frame(&req, &p->lens[f]);
	}
	free(subs);
	free(subv);
	free(urls);
}

struct engine_job {
	const struct simhash *sh;
	const struct corpus *co;
	enum simhash_input input;
	size_t tid, nthreads;
	double min_seconds;
	size_t bytes;			/* out */
	double secs;			/* out */
	uint64_t sum;			/* out, to keep the work */
	pthread_barrier_t *barrier;
};

static void *
engine_thread(void *arg)
{
	struct engine_job *j = arg;
	struct simhash_scratch *sc = simhash_scratch_new();
	double t0;
	uint64_t fp;

	pthread_barrier_wait(j->barrier);
	t0 = bench_now();
	do {
		for (size_t i = j->tid; i < j->co->n; i += j->nthreads) {
			const struct corpus_doc *d = &j->co->docs[i];

			if (i + j->nthreads < j->co->n)
				simhash_prefetch(d[j->nthreads].data,
				    d[j->nthreads].len);
			if (simhash_compute(j->sh, sc, j->input, d->data, d->len,
			    &fp) == SIMHASH_OK)
				j->sum += fp;
			j->bytes += d->len;
		}
	} while (bench_now() - t0 < j->min_seconds);
	j->secs = bench_now() - t0;
	simhash_scratch_free(sc);
	return NULL;
}

/* The engine's best MB/s over 5 runs on nthreads threads. */
static double
engine_mbs(const struct simhash *sh, const struct corpus *co,
    enum simhash_input input, size_t nthreads)
{
	struct engine_job jobs[64];
	pthread_t th[64];
	pthread_barrier_t barrier;
	double best = 0;

	for (int run = 0; run < 5; run++) {
		double mbs = 0;

		pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
		for (size_t t = 0; t < nthreads; t++) {
			jobs[t] = (struct engine_job){ .sh = sh, .co = co,
			    .input = input, .tid = t, .nthreads = nthreads,
			    .min_seconds = 0.3, .barrier = &barrier };
			pthread_create(&th[t], NULL, engine_thread, &jobs[t]);
		}
		for (size_t t = 0; t < nthreads; t++) {
			pthread_join(th[t], NULL);
			mbs += (double)jobs[t].bytes / jobs[t].secs / 1e6;
		}
		pthread_barrier_destroy(&barrier);
		if (mbs > best)
			best = mbs;
	}
	return best;
}

static void
usage(void)
{
	fprintf(stderr, "usage: doc_bench -H HOST:PORT (--reuters DIR | "
	    "--html DIR) [-c N] [-w N] [-r N] [-b N] [-t N] [-l LEVEL] "
	    "[-S FILE] [-L N]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "reuters", required_argument, NULL, 'R' },
		{ "html", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	const char *address = "127.0.0.1:6464", *reuters = NULL, *html = NULL;
	const char *stopfile = "conf/stopwords.txt";
	unsigned clients = 2, window = 64, repeat = 1;
	size_t batch = 1, nthreads = (size_t)sysconf(_SC_NPROCESSORS_ONLN);
	size_t ldocs = 2000, n;
	enum simhash_simd level = SIMHASH_SIMD_AUTO;
	struct stopwords *sw;
	struct simhash *sh;
	struct corpus *co;
	struct phase p;
	double engine, submit = 0, query = 0;
	char *cause = NULL;
	int ch, rc = 0;

	while ((ch = getopt_long(argc, argv, "H:c:w:r:b:t:l:S:L:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'H': address = optarg; break;
		case 'c': clients = (unsigned)atoi(optarg); break;
		case 'w': window = (unsigned)atoi(optarg); break;
		case 'r': repeat = (unsigned)atoi(optarg); break;
		case 'b': batch = (size_t)atol(optarg); break;
		case 't': nthreads = (size_t)atol(optarg); break;
		case 'S': stopfile = optarg; break;
		case 'L': ldocs = (size_t)atol(optarg); break;
		case 'R': reuters = optarg; break;
		case 'T': html = optarg; break;
		case 'l':
			if (simhash_simd_parse(optarg, &level) == -1)
				usage();
			break;
		default:
			usage();
		}
	}
	if ((reuters == NULL) == (html == NULL))
		usage();
	co = reuters != NULL ? corpus_reuters(reuters, 0) :
	    corpus_files(html, ".html");
	if (co == NULL || co->n == 0) {
		fprintf(stderr, "doc_bench: cannot read the corpus\n");
		return 2;
	}
	if (clients < 1 || clients > 64)
		clients = 2;
	if (window < 1)
		window = 1;
	if (batch < 1)
		batch = 1;
	if (nthreads < 1 || nthreads > 64)
		nthreads = 2;
	if (simhash_simd_select(level, &cause) == -1) {
		fprintf(stderr, "doc_bench: %s\n", cause);
		return 2;
	}
	if ((sw = stopwords_load(stopfile, &cause)) == NULL ||
	    (sh = simhash_new(SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &cause)) ==
	    NULL) {
		fprintf(stderr, "doc_bench: %s\n", cause);
		return 2;
	}
	n = co->n * repeat;
	printf("bench corpus=%s docs=%zu bytes=%zu clients=%u window=%u "
	    "batch=%zu\n", reuters != NULL ? "reuters" : "html", n,
	    co->bytes * repeat, clients, window, batch);
	make_phase(&p, "doc-submit", co, 0, n, batch, KIND_SUBMIT,
	    html != NULL);
	rc |= run_phase(&p, address, clients, window, &submit);
	phase_free(&p);
	make_phase(&p, "doc-query", co, 0, n, batch, KIND_QUERY, html != NULL);
	rc |= run_phase(&p, address, clients, window, &query);
	phase_free(&p);
	if (ldocs > 0) {
		/* Single documents under URLs of their own. */
		make_phase(&p, "latency-submit", co, n, ldocs, 1, KIND_SUBMIT,
		    html != NULL);
		rc |= run_latency(&p, address);
		phase_free(&p);
		make_phase(&p, "latency-query", co, n, ldocs, 1, KIND_QUERY,
		    html != NULL);
		rc |= run_latency(&p, address);
		phase_free(&p);
	}
	engine = engine_mbs(sh, co, html != NULL ? SIMHASH_INPUT_HTML :
	    SIMHASH_INPUT_TEXT, nthreads);
	printf("engine=%s threads=%zu mb_per_s=%.1f\n",
	    simhash_simd_name(simhash_simd_active()), nthreads, engine);
	if (rc == 0)
		printf("ratio doc-submit/engine=%.2f doc-query/engine=%.2f\n",
		    submit / engine, query / engine);
	simhash_free(sh);
	stopwords_free(sw);
	corpus_free(co);
	return rc ? 1 : 0;
}
