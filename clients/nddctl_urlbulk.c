/*
 * nddctl url-check --bulk, url-submit --bulk, url-delete --bulk: a file
 * of URLs (or standard input) asked about in the store's key order
 * (libnddd's nddd_bulk_*: docs/urlstore.md, "Bulk checks").  Every URL is
 * read and hashed first, then sent; the answers are printed in the input's
 * order, as the streamed commands print them, once all are in: the input
 * is read again for that (standard input from a copy in a temporary file).
 * The input is read in blocks of whole lines, each block's URLs handed to
 * libnddd at once, which hashes them on every processor.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nddctl.h"

/* Bytes read at a time; a longer line grows the block. */
#define BLOCK_BYTES	(4u << 20)

/* A block of the input: whole lines, and the URLs of those not blank. */
struct block {
	char *buf;
	size_t len, cap;	/* bytes in buf; [lines, len) starts a line */
	size_t lines;
	const char **urls;
	size_t *lens;
	size_t n, urls_cap;
	bool eof;
};

/* Adds buf[at..end) as a URL, its line end and blank lines left out. */
static int
block_url(struct block *k, size_t at, size_t end)
{
	while (end > at && (k->buf[end - 1] == '\r' || k->buf[end - 1] == '\n'))
		end--;
	if (end == at)
		return 0;
	if (k->n == k->urls_cap) {
		size_t cap = k->urls_cap != 0 ? 2 * k->urls_cap : 65536;
		const char **u = realloc(k->urls, cap * sizeof(*u));
		size_t *l = u != NULL ? realloc(k->lens, cap * sizeof(*l)) :
		    NULL;

		if (u != NULL)
			k->urls = u;
		if (l == NULL)
			return -1;
		k->lens = l;
		k->urls_cap = cap;
	}
	k->urls[k->n] = k->buf + at;
	k->lens[k->n++] = end - at;
	return 0;
}

/*
 * Reads the next block of in into k: its URLs in k->urls.  A copy of what
 * is read goes to copy when not NULL.  Returns -1 on an error (said), 0
 * with k->n 0 at the end.
 */
static int
block_read(struct block *k, FILE *in, FILE *copy, const char *what)
{
	size_t start = 0;

	/* What followed the last whole line comes first. */
	if (k->len > k->lines)
		memmove(k->buf, k->buf + k->lines, k->len - k->lines);
	k->len -= k->lines;
	k->lines = k->n = 0;
	for (;;) {
		size_t got;
		char *nl;

		if (k->cap - k->len < BLOCK_BYTES / 2) {
			char *p = realloc(k->buf, k->cap + BLOCK_BYTES);

			if (p == NULL) {
				fprintf(stderr, "nddctl: out of memory\n");
				return -1;
			}
			k->buf = p;
			k->cap += BLOCK_BYTES;
		}
		got = k->eof ? 0 : fread(k->buf + k->len, 1, k->cap - k->len,
		    in);
		if (got == 0 && ferror(in)) {
			fprintf(stderr, "nddctl: %s: %s\n", what,
			    strerror(errno));
			return -1;
		}
		if (copy != NULL && fwrite(k->buf + k->len, 1, got, copy) !=
		    got) {
			fprintf(stderr, "nddctl: a copy of standard input: "
			    "%s\n", strerror(errno));
			return -1;
		}
		k->len += got;
		k->eof = got == 0;
		while ((nl = memchr(k->buf + start, '\n', k->len - start)) !=
		    NULL) {
			if (block_url(k, start, (size_t)(nl - k->buf)) == -1) {
				fprintf(stderr, "nddctl: out of memory\n");
				return -1;
			}
			start = (size_t)(nl - k->buf) + 1;
		}
		/* The last line may lack its newline. */
		if (k->eof && start < k->len) {
			if (block_url(k, start, k->len) == -1) {
				fprintf(stderr, "nddctl: out of memory\n");
				return -1;
			}
			start = k->len;
		}
		k->lines = start;
		if (k->n > 0 || k->eof)
			return 0;
	}
}

/* The input, and where its copy goes when it is standard input. */
static FILE *
open_input(const struct nddctl_bulk *bulk, FILE **copy)
{
	FILE *in;

	*copy = NULL;
	if (strcmp(bulk->path, "-") != 0) {
		if ((in = fopen(bulk->path, "r")) == NULL)
			fprintf(stderr, "nddctl: %s: %s\n", bulk->path,
			    strerror(errno));
		return in;
	}
	if ((*copy = tmpfile()) == NULL) {
		fprintf(stderr, "nddctl: a copy of standard input: %s\n",
		    strerror(errno));
		return NULL;
	}
	return stdin;
}

static void
bulk_progress(uint64_t done, uint64_t total, void *arg)
{
	(void)total;
	progress_update(arg, (size_t)done);
}

int
nddctl_url_bulk(const struct nddctl_common *co, enum nddd_url_op op,
    const struct nddd_url_opts *opts, const struct nddctl_bulk *bulk)
{
	struct nddd_bulk_opts bo = { .memory = bulk->memory, .dir = bulk->dir,
	    .batch = co->batch_given ? co->batch : 0, .window = co->window };
	struct block k = { 0 };
	struct progress prog;
	nddd_client *c = NULL;
	nddd_bulk *b = NULL;
	FILE *in = NULL, *copy = NULL;
	char *err = NULL;
	uint64_t i = 0;
	double t0 = nddctl_now(), t1, t2;
	bool failed = false, lost = false;
	int status = NDDCTL_EXIT_USAGE;

	if (nddctl_sharded(co)) {
		fprintf(stderr, "nddctl: --bulk asks one daemon: run it on "
		    "each shard\n");
		return NDDCTL_EXIT_USAGE;
	}
	if (bulk->dir != NULL && access(bulk->dir, W_OK | X_OK) == -1) {
		fprintf(stderr, "nddctl: --spill-dir %s: %s\n", bulk->dir,
		    strerror(errno));
		return NDDCTL_EXIT_USAGE;
	}
	/* An answer per URL, millions of lines: written a MiB at a time
	 * rather than a file system block (nothing is printed before). */
	setvbuf(stdout, NULL, _IOFBF, (size_t)1 << 20);
	if ((c = nddctl_connect(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	nddd_set_durability(c, co->durability);
	if (nddd_set_url_opts(c, opts) == -1) {
		fprintf(stderr, "nddctl: %s\n", nddd_errstr(c));
		goto out;
	}
	if ((b = nddd_bulk_new(c, op, &bo, &err)) == NULL) {
		fprintf(stderr, "nddctl: --bulk: %s\n", err != NULL ? err :
		    "out of memory");
		status = NDDCTL_EXIT_UNREACHABLE;
		goto out;
	}
	if ((in = open_input(bulk, &copy)) == NULL)
		goto out;
	do {
		if (block_read(&k, in, copy, bulk->path) == -1)
			goto out;
		if (nddd_bulk_add_many(b, k.urls, k.lens, k.n) == -1) {
			fprintf(stderr, "nddctl: --bulk: %s\n",
			    nddd_bulk_errstr(b));
			goto out;
		}
	} while (k.n > 0);
	t1 = nddctl_now();
	progress_start(&prog, co->progress, "URLs");
	if (nddd_bulk_run(b, bulk_progress, &prog) == -1) {
		progress_finish(&prog);
		fprintf(stderr, "nddctl: %s\n", nddd_bulk_errstr(b));
	} else
		progress_finish(&prog);
	t2 = nddctl_now();
	/* The answers, in the input's order: the input read again. */
	if (copy != NULL) {
		rewind(copy);
		in = copy;
		copy = NULL;
	} else if (fseek(in, 0, SEEK_SET) == -1) {
		fprintf(stderr, "nddctl: %s: %s\n", bulk->path, strerror(errno));
		goto out;
	}
	k.len = k.lines = 0;
	k.eof = false;
	do {
		if (block_read(&k, in, NULL, bulk->path) == -1)
			goto out;
		for (size_t j = 0; j < k.n && i < nddd_bulk_count(b); j++, i++) {
			struct nddd_url_result res = { 0 };

			res.code = nddd_bulk_result(b, i, &res.count,
			    &res.message);
			nddctl_print_url_result(co, op, false, k.urls[j],
			    k.lens[j], &res);
			failed |= res.code != NDDD_OK;
			lost |= res.code == NDDD_UNAVAILABLE;
		}
	} while (k.n > 0);
	if (bulk->summary)
		fprintf(stderr, "bulk: %" PRIu64 " URLs read and hashed in "
		    "%.2f s, answered in %.2f s, printed in %.2f s; %" PRIu64
		    " bytes spilled\n", nddd_bulk_count(b), t1 - t0, t2 - t1,
		    nddctl_now() - t2, nddd_bulk_spilled(b));
	/* As the streamed commands: a lost connection, items failed. */
	status = lost ? NDDCTL_EXIT_UNREACHABLE : failed ? NDDCTL_EXIT_ITEMS :
	    NDDCTL_EXIT_OK;
out:
	if (in != NULL && in != stdin)
		fclose(in);
	if (copy != NULL)
		fclose(copy);
	free(k.buf);
	free(k.urls);
	free(k.lens);
	free(err);
	nddd_bulk_free(b);
	nddd_close(c);
	return status;
}
