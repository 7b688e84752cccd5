/*
 * nddctl simhash: fingerprints documents locally with the daemon's engine
 * and accelerator interface (accel.h), no daemon needed.  The settings
 * (term hash, stop words, vector code) are made into an nddd_engine, as
 * libnddd makes them for its own callers (engine.h): the accelerator then
 * runs on what that engine parsed and loaded.
 *
 * The input is read whole (files are mapped).  With --nul it holds many
 * documents, each ended by a NUL byte (the last one may lack it): an empty
 * input is no document, "a\0\0b" three.  Pages are turned into the text
 * nddd judges them by (their main content, unless --whole) first.
 * Documents go to the accelerator in jobs; the fingerprints are printed in
 * input order, one line each.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "accel.h"
#include "engine.h"
#include "log.h"
#include "nddctl.h"
#include "nddd.h"
#include "simhash.h"

/* Documents per job: enough to keep every backend thread busy. */
#define NDDCTL_JOB_DOCS 4096

#define EXIT_EMPTY 1
#define EXIT_USAGE 2

static void
nddctl_simhash_usage(FILE *f)
{
	fprintf(f,
"usage: nddctl simhash [--html [--whole] | --preprocessed]\n"
"           [--term-hash sdbm|sdbm-fmix64]\n"
"           [--accel NAME] [--accel-dir DIR] [--accel-params STRING]\n"
"           [--stopwords FILE|none] [--threads N] [--simd LEVEL] [--nul]\n"
"           [FILE|-]\n"
"\n"
"Prints the 64-bit simhash of the document in FILE (or standard input) as\n"
"16 lower-case hex digits, or EMPTY_DOCUMENT when it has no terms.\n"
"\n"
"  --html             the input is HTML: its main content is fingerprinted,\n"
"                     as nddd's [text] html = main does (nddctl text\n"
"                     prints it); a page without an article, all its text\n"
"  --whole            with --html, the whole page (markup, scripts, styles dropped,\n"
"                     character references decoded)\n"
"  --preprocessed     the input is terms separated by spaces, as the\n"
"                     accelerators take it (no folding, no stop words)\n"
"  --term-hash H      sdbm-fmix64 (default) or sdbm (the paper's)\n"
"  --accel NAME       cpu (default), auto, or the plugin\n"
"                     nddd-accel-NAME.so in DIR; one that cannot start is\n"
"                     replaced by cpu, with a warning, but one whose file\n"
"                     or DIR others may write is refused (an error)\n"
"  --accel-dir DIR    where plugins are\n"
"  --accel-params S   a string handed to the plugin\n"
"  --stopwords FILE   the stop-word list, or \"none\"; by default the first\n"
"                     of $NDDD_STOPWORDS, ./conf/stopwords.txt, the\n"
"                     conf/stopwords.txt of the source tree nddctl was\n"
"                     built in (../conf or ../../../conf from nddctl),\n"
"                     and /etc/nddd/stopwords.txt\n"
"  --threads N        worker threads (default: one per CPU)\n"
"  --simd LEVEL       auto (default), avx512, avx2 or scalar\n"
"  --nul              the input is many documents, each ended by a NUL\n"
"                     byte; one line per document, in input order\n"
"\n"
"Exit status: 0 every document has a fingerprint; 1 some document had no\n"
"terms (EMPTY_DOCUMENT); 2 usage error, unreadable input or stop words,\n"
"or other failure; 4 the output could not be written.\n");
}

/* The whole input: mapped for a regular file, read otherwise. */
struct nddctl_input {
	uint8_t *data;
	size_t len;
	int mapped;
};

static int
nddctl_read(const char *path, struct nddctl_input *in)
{
	int fd = 0;
	struct stat sb;
	size_t cap = 0;
	ssize_t n;
	uint8_t *p;

	memset(in, 0, sizeof(*in));
	if (strcmp(path, "-") != 0 && (fd = open(path, O_RDONLY)) == -1)
		goto err;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
		in->data = mmap(NULL, (size_t)sb.st_size, PROT_READ,
		    MAP_PRIVATE, fd, 0);
		if (in->data != MAP_FAILED) {
			in->len = (size_t)sb.st_size;
			in->mapped = 1;
			goto out;
		}
		in->data = NULL;
	}
	for (;;) {
		if (in->len == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			if ((p = realloc(in->data, cap)) == NULL)
				goto err;
			in->data = p;
		}
		if ((n = read(fd, in->data + in->len, cap - in->len)) == -1) {
			if (errno == EINTR)
				continue;
			goto err;
		}
		if (n == 0)
			break;
		in->len += (size_t)n;
	}
out:
	if (fd != 0)
		close(fd);
	return 0;
err:
	fprintf(stderr, "nddctl simhash: %s: %s\n", strcmp(path, "-") == 0 ?
	    "standard input" : path, strerror(errno));
	if (fd > 0)
		close(fd);
	if (!in->mapped)
		free(in->data);
	in->data = NULL;
	return -1;
}

static void
nddctl_unread(struct nddctl_input *in)
{
	if (in->mapped)
		munmap(in->data, in->len);
	else
		free(in->data);
}

/* One document of the input. */
struct nddctl_doc {
	const uint8_t *data;
	size_t len;
};

/*
 * The documents of in: the whole input, or with nul each run ended by a
 * NUL byte (the last one may lack it).  Returns them (the caller frees
 * them) and their count in *n, or NULL when memory is short.
 */
static struct nddctl_doc *
nddctl_split(const struct nddctl_input *in, int nul, size_t *n)
{
	struct nddctl_doc *docs;
	size_t count = 1, start = 0;

	if (nul) {
		count = 0;
		for (size_t i = 0; i < in->len; i++)
			count += in->data[i] == '\0';
		if (in->len > 0 && in->data[in->len - 1] != '\0')
			count++;
	}
	if ((docs = calloc(count + 1, sizeof(*docs))) == NULL)
		return NULL;
	for (size_t k = 0; k < count; k++) {
		const uint8_t *e = !nul ? NULL : memchr(in->data + start, '\0',
		    in->len - start);

		docs[k].data = in->data + start;
		docs[k].len = e == NULL ? in->len - start :
		    (size_t)(e - (in->data + start));
		start += docs[k].len + 1;
	}
	*n = count;
	return docs;
}

/*
 * Replaces each page of docs by the text engine judges it by (its main
 * content), copied into *texts (the caller frees it).  Returns -1 (said
 * on standard error) when memory is short.
 */
static int
nddctl_main_texts(nddd_engine *engine, struct nddctl_doc *docs, size_t n,
    uint8_t **texts)
{
	size_t *off = calloc(n + 1, sizeof(*off)), len = 0, cap = 0;
	uint8_t *buf = NULL, *p;

	if (off == NULL)
		goto nomem;
	for (size_t k = 0; k < n; k++) {
		enum nddd_content content;
		const char *text;
		size_t tlen;

		if (nddd_engine_text(engine, docs[k].data, docs[k].len,
		    NDDD_FORMAT_HTML, &text, &tlen, &content) != NDDD_OK)
			goto nomem;
		if (len + tlen + 1 > cap) {
			cap = (len + tlen + 1) * 2;
			if ((p = realloc(buf, cap)) == NULL)
				goto nomem;
			buf = p;
		}
		memcpy(buf + len, text, tlen);
		off[k] = len;
		docs[k].len = tlen;
		len += tlen;
	}
	for (size_t k = 0; k < n; k++)
		docs[k].data = buf + off[k];
	free(off);
	*texts = buf;
	return 0;
nomem:
	fprintf(stderr, "nddctl simhash: %s\n", strerror(ENOMEM));
	free(off);
	free(buf);
	return -1;
}

struct nddctl_run {
	struct event_base *base;
	size_t pending;
};

static void
nddctl_job_done(struct accel_job *job, void *arg)
{
	struct nddctl_run *r = arg;

	(void)job;
	if (--r->pending == 0)
		event_base_loopbreak(r->base);
}

/* What nddctl simhash is asked to do. */
struct simhash_args {
	enum simhash_input input;
	struct nddd_engine_opts eo;
	struct accel_options ao;
	int nul;
	const char *path;	/* the input; "-": standard input */
};

/*
 * The options and argument of nddctl simhash into a.  Returns -1 when
 * there is work to do, or the status to exit with (0 after --help).
 */
static int
simhash_parse(int argc, char **argv, struct simhash_args *a)
{
	static const struct option longopts[] = {
		{ "html", no_argument, NULL, 'H' },
		{ "whole", no_argument, NULL, 'W' },
		{ "preprocessed", no_argument, NULL, 'P' },
		{ "term-hash", required_argument, NULL, 't' },
		{ "accel", required_argument, NULL, 'a' },
		{ "accel-dir", required_argument, NULL, 'd' },
		{ "accel-params", required_argument, NULL, 'p' },
		{ "stopwords", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 'j' },
		{ "simd", required_argument, NULL, 'v' },
		{ "nul", no_argument, NULL, '0' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'H':
			a->input = SIMHASH_INPUT_HTML;
			break;
		case 'P':
			a->input = SIMHASH_INPUT_PREPROCESSED;
			break;
		case 'W':
			a->eo.html = "whole";
			break;
		case 't':
			a->eo.term_hash = optarg;
			break;
		case 'a':
			snprintf(a->ao.accelerator, sizeof(a->ao.accelerator),
			    "%s", optarg);
			break;
		case 'd':
			snprintf(a->ao.plugin_dir, sizeof(a->ao.plugin_dir),
			    "%s", optarg);
			break;
		case 'p':
			snprintf(a->ao.params, sizeof(a->ao.params), "%s",
			    optarg);
			break;
		case 's':
			a->eo.stopwords = optarg;
			break;
		case 'j':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v > 1024) {
				fprintf(stderr, "nddctl simhash: bad thread "
				    "count \"%s\"\n", optarg);
				return EXIT_USAGE;
			}
			a->ao.threads = (unsigned)v;
			break;
		case 'v':
			a->eo.simd = optarg;
			break;
		case '0':
			a->nul = 1;
			break;
		case 'h':
			nddctl_simhash_usage(stdout);
			return 0;
		default:
			nddctl_simhash_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		nddctl_simhash_usage(stderr);
		return EXIT_USAGE;
	}
	a->path = optind < argc ? argv[optind] : "-";
	return -1;
}

/*
 * Submits docs[0..ndocs) to acc in the njobs jobs of jobs (made here, of
 * NDDCTL_JOB_DOCS documents at most), each counted in run->pending until
 * done.  Returns -1, said, when one cannot be made or submitted.
 */
static int
simhash_submit(struct accel *acc, struct nddctl_run *run,
    const struct nddctl_doc *docs, size_t ndocs, enum simhash_input input,
    struct accel_job **jobs, size_t njobs)
{
	for (size_t j = 0, i = 0; j < njobs; j++) {
		size_t n = ndocs - j * NDDCTL_JOB_DOCS < NDDCTL_JOB_DOCS ?
		    ndocs - j * NDDCTL_JOB_DOCS : NDDCTL_JOB_DOCS;

		if ((jobs[j] = accel_job_new(n, input)) == NULL) {
			fprintf(stderr, "nddctl simhash: %s\n",
			    strerror(ENOMEM));
			return -1;
		}
		for (size_t k = 0; k < n; k++, i++)
			accel_job_set(jobs[j], k, docs[i].data, docs[i].len);
		run->pending++;
		if (accel_submit(acc, jobs[j], nddctl_job_done, run) == -1) {
			run->pending--;
			fprintf(stderr, "nddctl simhash: %s\n", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * Prints the fingerprints of jobs[0..njobs), in order.  Returns whether a
 * document had none (EMPTY_DOCUMENT).
 */
static bool
simhash_print(struct accel_job *const *jobs, size_t njobs)
{
	char hex[SIMHASH_HEX_LEN + 1];
	bool empty = false;
	uint64_t fp;

	for (size_t j = 0; j < njobs; j++) {
		for (size_t k = 0; k < accel_job_ndocs(jobs[j]); k++) {
			if (accel_job_result(jobs[j], k, &fp) == SIMHASH_OK) {
				simhash_format(fp, hex);
				puts(hex);
			} else {
				puts("EMPTY_DOCUMENT");
				empty = true;
			}
		}
	}
	return empty;
}

/* Fingerprints a's input as a says.  Returns the exit status. */
static int
simhash_run(struct simhash_args *a)
{
	struct nddctl_input in = { NULL, 0, 0 };
	struct nddctl_run run = { NULL, 0 };
	struct accel_job **jobs = NULL;
	struct nddctl_doc *docs = NULL;
	uint8_t *texts = NULL;
	nddd_engine *engine = NULL;
	struct accel *acc = NULL;
	char *cause = NULL;
	size_t ndocs = 0, njobs = 0;
	int rc = EXIT_USAGE;

	if ((engine = nddd_engine_new(&a->eo, &cause)) == NULL) {
		fprintf(stderr, "nddctl simhash: %s\n", cause != NULL ? cause :
		    strerror(ENOMEM));
		goto out;
	}
	if (nddctl_read(a->path, &in) == -1)
		goto out;
	if ((run.base = event_base_new()) == NULL) {
		fprintf(stderr, "nddctl simhash: cannot make an event base\n");
		goto out;
	}
	if ((acc = accel_new(run.base, &a->ao, engine_term_hash(engine),
	    engine_stopwords_set(engine), &cause)) == NULL) {
		fprintf(stderr, "nddctl simhash: %s\n", cause);
		goto out;
	}
	/* The documents; of pages, by default, their main content. */
	if ((docs = nddctl_split(&in, a->nul, &ndocs)) == NULL) {
		fprintf(stderr, "nddctl simhash: %s\n", strerror(ENOMEM));
		goto out;
	}
	if (a->input == SIMHASH_INPUT_HTML && a->eo.html == NULL) {
		if (nddctl_main_texts(engine, docs, ndocs, &texts) == -1)
			goto out;
		a->input = SIMHASH_INPUT_TEXT;
	}
	njobs = (ndocs + NDDCTL_JOB_DOCS - 1) / NDDCTL_JOB_DOCS;
	if (njobs > 0 && (jobs = calloc(njobs, sizeof(*jobs))) == NULL) {
		fprintf(stderr, "nddctl simhash: %s\n", strerror(ENOMEM));
		goto out;
	}
	if (simhash_submit(acc, &run, docs, ndocs, a->input, jobs, njobs) ==
	    -1)
		goto out;
	if (run.pending > 0)
		event_base_dispatch(run.base);
	/* A failure to write the output is nddctl's main's to report. */
	rc = simhash_print(jobs, njobs) ? EXIT_EMPTY : 0;
out:
	/* Waits for jobs still in flight before their memory goes. */
	accel_free(acc);
	for (size_t j = 0; jobs != NULL && j < njobs; j++)
		accel_job_free(jobs[j]);
	free(jobs);
	if (run.base != NULL)
		event_base_free(run.base);
	if (in.data != NULL)
		nddctl_unread(&in);
	free(docs);
	free(texts);
	nddd_engine_free(engine);
	free(cause);
	return rc;
}

int
nddctl_simhash(int argc, char **argv)
{
	struct simhash_args a = { .input = SIMHASH_INPUT_TEXT,
	    .eo = { .simd = "auto" } };
	int rc;

	accel_options_defaults(&a.ao);
	snprintf(a.ao.accelerator, sizeof(a.ao.accelerator), "cpu");
	log_init(LOG_LEVEL_WARN, "nddctl");
	/* getopt's messages then name the command. */
	argv[0] = (char *)"nddctl simhash";
	/* 0, not 1: getopt starts afresh, permuting options again after
	 * nddctl's own option parsing stopped at the command name. */
	optind = 0;
	if ((rc = simhash_parse(argc, argv, &a)) != -1)
		return rc;
	return simhash_run(&a);
}
