/*
 * nddctl url-submit, url-check, url-delete: URL batches, streamed.
 *
 * URLs are read as they come (arguments, or lines of standard input), cut
 * into batches, and up to --window batches are in flight at once; each
 * batch's results are printed as soon as it and every batch before it have
 * been answered, so the output follows the input order.
 *
 * With --digests, URLs are canonicalized and hashed here with the daemon's
 * rules (asked from it once) and only the digests of the valid ones are
 * sent; the invalid ones are answered here with the daemon's message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nddctl.h"

struct batch {
	char **urls;
	size_t *lens;
	size_t n;
	uint64_t id;
	struct nddd_reply *reply;
	bool answered;		/* replied to, or nothing was sent */
	/* --digests: why each URL was refused here (NULL: it was sent), and
	 * the digests of those sent, in order. */
	const char **cause;
	unsigned char *digests;
	size_t nsent;
};

struct source {
	char **args;		/* argument URLs, or NULL for stdin */
	int nargs, next;
	char *line;
	size_t line_cap;
	bool eof;
};

/* Reads up to max URLs into b.  Returns -1 on an input error. */
static int
read_batch(struct source *src, struct batch *b, size_t max)
{
	b->n = 0;
	b->reply = NULL;
	b->answered = false;
	while (b->n < max && !src->eof) {
		char *url;
		size_t len;

		if (src->args != NULL) {
			if (src->next == src->nargs) {
				src->eof = true;
				break;
			}
			url = src->args[src->next++];
			len = strlen(url);
		} else {
			ssize_t n = getline(&src->line, &src->line_cap, stdin);

			if (n == -1) {
				if (ferror(stdin)) {
					perror("nddctl: standard input");
					return -1;
				}
				src->eof = true;
				break;
			}
			len = (size_t)n;
			while (len > 0 && (src->line[len - 1] == '\n' ||
			    src->line[len - 1] == '\r'))
				len--;
			if (len == 0)
				continue;	/* blank lines carry no URL */
			url = src->line;
		}
		if ((b->urls[b->n] = malloc(len + 1)) == NULL) {
			fprintf(stderr, "nddctl: out of memory\n");
			return -1;
		}
		memcpy(b->urls[b->n], url, len);
		b->urls[b->n][len] = '\0';
		b->lens[b->n++] = len;
	}
	return 0;
}

static void
print_result(const struct nddctl_common *co, enum nddd_url_op op,
    const char *url, size_t len, enum nddd_code code, uint64_t count,
    const char *message)
{
	const char *status;
	json_t *o, *e;

	if (code != NDDD_OK) {
		if (!co->json) {
			nddctl_print_error(nddd_code_name(code), message, url,
			    len);
			return;
		}
		o = json_object();
		e = json_object();
		json_object_set_new(o, "url", nddctl_json_string(url, len));
		json_object_set_new(e, "code",
		    json_string(nddd_code_name(code)));
		json_object_set_new(e, "message",
		    nddctl_json_string(message ? message : "",
		    message ? strlen(message) : 0));
		json_object_set_new(o, "error", e);
		nddctl_print_json(o);
		return;
	}
	switch (op) {
	case NDDD_URL_SUBMIT:
		status = count == 1 ? "new" : "duplicate";
		break;
	case NDDD_URL_CHECK:
		status = count > 0 ? "seen" : "unseen";
		break;
	default:
		status = count > 0 ? "deleted" : "not_found";
		break;
	}
	if (!co->json) {
		printf("%s\t%llu\t", status, (unsigned long long)count);
		nddctl_put_field(url, len);
		putchar('\n');
		return;
	}
	o = json_object();
	json_object_set_new(o, "url", nddctl_json_string(url, len));
	if (op == NDDD_URL_CHECK)
		json_object_set_new(o, "seen", json_boolean(count > 0));
	else
		json_object_set_new(o, "status", json_string(status));
	if (op != NDDD_URL_DELETE)
		json_object_set_new(o, "count", json_integer((json_int_t)count));
	nddctl_print_json(o);
}

/* Prints a batch's results; returns whether any item failed. */
static bool
print_batch(const struct nddctl_common *co, enum nddd_url_op op,
    struct batch *b)
{
	const struct nddd_reply *r = b->reply;
	bool failed = false;

	/* The reply's j-th result is that of the j-th URL sent. */
	for (size_t i = 0, j = 0; i < b->n; i++) {
		if (b->cause != NULL && b->cause[i] != NULL) {
			print_result(co, op, b->urls[i], b->lens[i],
			    NDDD_INVALID_ARGUMENT, 0, b->cause[i]);
			failed = true;
			continue;
		}
		if (r->kind == NDDD_REPLY_URLS && j < r->nresults) {
			const struct nddd_url_result *res = &r->results[j++];

			print_result(co, op, b->urls[i], b->lens[i], res->code,
			    res->count, res->message);
			failed |= res->code != NDDD_OK;
		} else {
			print_result(co, op, b->urls[i], b->lens[i],
			    r->kind == NDDD_REPLY_ERROR ? r->code :
			    NDDD_INTERNAL, 0, r->kind == NDDD_REPLY_ERROR ?
			    r->message : "reply has too few results");
			failed = true;
		}
	}
	fflush(stdout);
	return failed;
}

static void
batch_clear(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->urls[i]);
	b->n = 0;
	nddd_reply_free(b->reply);
	b->reply = NULL;
}

/*
 * Sends a batch: its URLs, or with k the digests of the valid ones (none
 * valid: nothing is sent, the batch is answered).
 */
static int
send_batch(nddd_client *c, nddd_canon *k, enum nddd_url_op op,
    struct batch *b)
{
	const char *cause;

	if (k == NULL)
		return nddd_send_urls(c, op, (const char *const *)b->urls,
		    b->lens, b->n, &b->id);
	b->nsent = 0;
	for (size_t i = 0; i < b->n; i++) {
		b->cause[i] = NULL;
		if (nddd_canon_digest(k, b->urls[i], b->lens[i], b->digests +
		    b->nsent * NDDD_DIGEST_LEN, &cause) == -1)
			b->cause[i] = cause;
		else
			b->nsent++;
	}
	if (b->nsent == 0) {
		b->answered = true;
		return 0;
	}
	return nddd_send_digests(c, op, nddd_canon_id(k), b->digests,
	    b->nsent, &b->id);
}

/*
 * The daemon's canonicalizer, for --digests; NULL after saying why, with
 * *status the exit status.
 */
static nddd_canon *
daemon_canon(nddd_client *c, int *status)
{
	struct nddd_stats st;
	nddd_canon *k;
	char *err;

	if (nddd_stats(c, &st) == -1) {
		fprintf(stderr, "nddctl: %s\n", nddd_errstr(c));
		*status = NDDCTL_EXIT_UNREACHABLE;
		return NULL;
	}
	*status = NDDCTL_EXIT_USAGE;
	if (st.canon[0] == '\0') {
		fprintf(stderr, "nddctl: --digests: the daemon states no "
		    "canonicalization (it is too old for digests)\n");
		return NULL;
	}
	if ((k = nddd_canon_new(st.canon, &err)) == NULL) {
		fprintf(stderr, "nddctl: --digests: %s\n",
		    err ? err : "out of memory");
		free(err);
	}
	return k;
}

static int
run(const struct nddctl_common *co, enum nddd_url_op op, int argc,
    char **argv)
{
	struct source src = { 0 };
	struct batch *ring = NULL;
	nddd_canon *canon = NULL;
	struct progress prog;
	size_t head = 0, count = 0, done = 0;
	unsigned window = co->window;
	bool failed = false;
	nddd_client *c;
	int status = NDDCTL_EXIT_OK;

	if (argc < 2 || (argc > 2 && strcmp(argv[1], "-") == 0)) {
		fprintf(stderr, "usage: nddctl %s URL...|-\n", argv[0]);
		return NDDCTL_EXIT_USAGE;
	}
	if (argc == 2 && strcmp(argv[1], "-") == 0)
		src.args = NULL;
	else {
		src.args = argv + 1;
		src.nargs = argc - 1;
	}
	if ((c = nddctl_connect(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	nddd_set_durability(c, co->durability);
	if (co->digests && (canon = daemon_canon(c, &status)) == NULL)
		goto out;
	if ((ring = calloc(window, sizeof(*ring))) == NULL)
		goto oom;
	for (unsigned i = 0; i < window; i++) {
		ring[i].urls = calloc(co->batch, sizeof(char *));
		ring[i].lens = calloc(co->batch, sizeof(size_t));
		if (ring[i].urls == NULL || ring[i].lens == NULL)
			goto oom;
		if (canon == NULL)
			continue;
		ring[i].cause = calloc(co->batch, sizeof(char *));
		ring[i].digests = calloc(co->batch, NDDD_DIGEST_LEN);
		if (ring[i].cause == NULL || ring[i].digests == NULL)
			goto oom;
	}
	progress_start(&prog, co->progress && src.args == NULL, "URLs");

	for (;;) {
		struct nddd_reply *r;
		size_t k;

		/* Keep the window full. */
		while (count < window && !src.eof) {
			struct batch *b = &ring[(head + count) % window];

			if (read_batch(&src, b, co->batch) == -1) {
				status = NDDCTL_EXIT_USAGE;
				goto out;
			}
			if (b->n == 0)
				break;
			if (send_batch(c, canon, op, b) == -1)
				goto lost;
			count++;
		}
		/* Print what is complete, in input order. */
		while (count > 0 && ring[head].answered) {
			failed |= print_batch(co, op, &ring[head]);
			done += ring[head].n;
			batch_clear(&ring[head]);
			head = (head + 1) % window;
			count--;
		}
		progress_update(&prog, done);
		if (count == 0) {
			if (src.eof)
				break;
			continue;
		}
		/* The oldest batch is not answered: its request is out. */
		if (nddd_recv(c, &r) == -1)
			goto lost;
		for (k = 0; k < count; k++)
			if (!ring[(head + k) % window].answered &&
			    ring[(head + k) % window].id == r->id)
				break;
		if (k == count) {
			fprintf(stderr, "nddctl: daemon: %s: %s\n",
			    nddd_code_name(r->code),
			    r->message ? r->message : "unexpected reply");
			nddd_reply_free(r);
			status = NDDCTL_EXIT_UNREACHABLE;
			goto out;
		}
		ring[(head + k) % window].reply = r;
		ring[(head + k) % window].answered = true;
	}
	progress_finish(&prog);
	if (failed)
		status = NDDCTL_EXIT_ITEMS;
	goto out;
lost:
	progress_finish(&prog);
	fprintf(stderr, "nddctl: %s\n", nddd_errstr(c));
	status = NDDCTL_EXIT_UNREACHABLE;
	goto out;
oom:
	fprintf(stderr, "nddctl: out of memory\n");
	status = NDDCTL_EXIT_USAGE;
out:
	if (ring != NULL) {
		for (unsigned i = 0; i < window; i++) {
			batch_clear(&ring[i]);
			free(ring[i].urls);
			free(ring[i].lens);
			free(ring[i].cause);
			free(ring[i].digests);
		}
		free(ring);
	}
	free(src.line);
	nddd_canon_free(canon);
	nddd_close(c);
	return status;
}

int
nddctl_url_submit(const struct nddctl_common *co, int argc, char **argv)
{
	return run(co, NDDD_URL_SUBMIT, argc, argv);
}

int
nddctl_url_check(const struct nddctl_common *co, int argc, char **argv)
{
	return run(co, NDDD_URL_CHECK, argc, argv);
}

int
nddctl_url_delete(const struct nddctl_common *co, int argc, char **argv)
{
	return run(co, NDDD_URL_DELETE, argc, argv);
}
