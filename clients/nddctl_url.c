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
 *
 * With a shard list for -H, URLs are read in larger chunks, each routed
 * over the shards by the digest of its canonical form (libnddd's
 * nddd_shards_urls) and printed in input order once the chunk is answered.
 *
 * -n names the namespace of every batch, --ttl the time to live of
 * submits, and --times asks for the times each URL was seen, printed
 * between its count and the URL.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/*
 * A time of the daemon's, in milliseconds since the epoch, as ISO 8601 in
 * UTC to the millisecond (2026-11-24T20:40:30.123Z) in buf.
 */
static void
format_time(uint64_t ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;

	/* A time gmtime_r cannot place: the count as it came. */
	if (gmtime_r(&t, &tm) == NULL) {
		snprintf(buf, size, "%" PRIu64 "ms", ms);
		return;
	}
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, size - n, ".%03uZ", (unsigned)(ms % 1000));
}

/*
 * A result's three times: text fields, each followed by a TAB ("-" for
 * 0: never, or not recorded), or in o both NAME_ms and NAME (ISO 8601,
 * null for 0).
 */
static void
print_times(json_t *o, const struct nddd_url_result *res)
{
	const struct {
		const char *name, *ms_name;
		uint64_t ms;
	} times[] = {
		{ "first_seen", "first_seen_ms", res->first_seen_ms },
		{ "last_seen", "last_seen_ms", res->last_seen_ms },
		{ "expires", "expires_ms", res->expires_ms },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		if (times[i].ms != 0)
			format_time(times[i].ms, buf, sizeof(buf));
		if (o == NULL) {
			printf("%s\t", times[i].ms != 0 ? buf : "-");
			continue;
		}
		json_object_set_new(o, times[i].ms_name,
		    json_integer((json_int_t)times[i].ms));
		json_object_set_new(o, times[i].name, times[i].ms != 0 ?
		    json_string(buf) : json_null());
	}
}

void
nddctl_print_url_result(const struct nddctl_common *co, enum nddd_url_op op,
    bool times, const char *url, size_t len,
    const struct nddd_url_result *res)
{
	uint64_t count = res->count;
	const char *status;
	json_t *o;

	if (res->code != NDDD_OK) {
		nddctl_print_failure(co, res->code, res->message, "url", url,
		    len);
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
		/* Without printf, nor stdio's lock per call (nddctl prints
		 * from one thread): a bulk request prints millions of
		 * these. */
		char num[24], *d = num + sizeof(num);

		*--d = '\t';
		do
			*--d = (char)('0' + count % 10);
		while ((count /= 10) != 0);
		*--d = '\t';
		fputs_unlocked(status, stdout);
		fwrite_unlocked(d, 1, (size_t)(num + sizeof(num) - d), stdout);
		count = res->count;
		if (times)
			print_times(NULL, res);
		nddctl_put_field(url, len);
		putchar_unlocked('\n');
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
	if (times)
		print_times(o, res);
	nddctl_print_json(o);
}

/* Prints a batch's results; returns whether any item failed. */
static bool
print_batch(const struct nddctl_common *co, enum nddd_url_op op,
    bool times, struct batch *b)
{
	const struct nddd_reply *r = b->reply;
	bool failed = false;

	/* The reply's j-th result is that of the j-th URL sent. */
	for (size_t i = 0, j = 0; i < b->n; i++) {
		struct nddd_url_result failure = { .code = NDDD_INTERNAL };
		const struct nddd_url_result *res = &failure;

		if (b->cause != NULL && b->cause[i] != NULL) {
			failure.code = NDDD_INVALID_ARGUMENT;
			failure.message = b->cause[i];
		} else if (r->kind == NDDD_REPLY_URLS && j < r->nresults)
			res = &r->results[j++];
		else if (r->kind == NDDD_REPLY_ERROR) {
			failure.code = r->code;
			failure.message = r->message;
		} else
			failure.message = "reply has too few results";
		nddctl_print_url_result(co, op, times, b->urls[i], b->lens[i], res);
		failed |= res->code != NDDD_OK;
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

/*
 * The URLs of src over the shard list of -H: read in chunks of --batch
 * times --window URLs, each chunk routed and answered whole
 * (nddd_shards_urls), its results printed in input order.  A shard that
 * is down fails its URLs (UNAVAILABLE, exit status 1), not the others.
 */
static int
run_shards(const struct nddctl_common *co, enum nddd_url_op op,
    const struct nddd_url_opts *opts, struct source *src)
{
	struct batch chunk = { 0 };
	struct nddd_url_result *results = NULL;
	size_t max = co->batch * co->window, done = 0;
	struct progress prog;
	bool failed = false;
	nddd_shards *s;
	int status = NDDCTL_EXIT_OK;

	if ((s = nddctl_open_shards(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	nddd_shards_set_durability(s, co->durability);
	nddd_shards_use_digests(s, co->digests);
	if (nddd_shards_set_url_opts(s, opts) == -1) {
		fprintf(stderr, "nddctl: %s\n", nddd_shards_errstr(s));
		status = NDDCTL_EXIT_USAGE;
		goto out;
	}
	chunk.urls = calloc(max, sizeof(char *));
	chunk.lens = calloc(max, sizeof(size_t));
	results = calloc(max, sizeof(*results));
	if (chunk.urls == NULL || chunk.lens == NULL || results == NULL) {
		fprintf(stderr, "nddctl: out of memory\n");
		status = NDDCTL_EXIT_USAGE;
		goto out;
	}
	progress_start(&prog, co->progress && src->args == NULL, "URLs");
	while (!src->eof) {
		if (read_batch(src, &chunk, max) == -1) {
			status = NDDCTL_EXIT_USAGE;
			break;
		}
		if (chunk.n == 0)
			break;
		if (nddd_shards_urls(s, op, (const char *const *)chunk.urls,
		    chunk.n, results, co->batch, co->window) == -1) {
			fprintf(stderr, "nddctl: %s\n", nddd_shards_errstr(s));
			status = NDDCTL_EXIT_USAGE;
			break;
		}
		for (size_t i = 0; i < chunk.n; i++) {
			nddctl_print_url_result(co, op, opts->with_times, chunk.urls[i],
			    chunk.lens[i], &results[i]);
			failed |= results[i].code != NDDD_OK;
		}
		fflush(stdout);
		nddd_urls_results_free(results, chunk.n);
		done += chunk.n;
		batch_clear(&chunk);
		progress_update(&prog, done);
	}
	progress_finish(&prog);
	if (status == NDDCTL_EXIT_OK && failed)
		status = NDDCTL_EXIT_ITEMS;
out:
	batch_clear(&chunk);
	free(chunk.urls);
	free(chunk.lens);
	free(results);
	free(src->line);
	nddd_shards_close(s);
	return status;
}

static int
usage(enum nddd_url_op op, char **argv)
{
	const char *ttl = op == NDDD_URL_SUBMIT ? " [--ttl SECONDS]" : "";

	fprintf(stderr, "usage: nddctl %s [-n NAMESPACE]%s [--times] "
	    "URL...|-\n"
	    "       nddctl %s [-n NAMESPACE]%s --bulk FILE|- "
	    "[--bulk-memory MIB] [--spill-dir DIR] [--summary]\n", argv[0],
	    ttl, argv[0], ttl);
	return NDDCTL_EXIT_USAGE;
}

/*
 * The options and URLs of a URL command into opts and src, or a --bulk
 * request's into bulk.  Returns -1
 * when the command is to run, or the status to exit with (a usage error,
 * said).
 */
static int
parse_args(enum nddd_url_op op, int argc, char **argv,
    struct nddd_url_opts *opts, struct source *src, struct nddctl_bulk *bulk)
{
	static const struct option longopts[] = {
		{ "namespace", required_argument, NULL, 'n' },
		{ "ttl", required_argument, NULL, 't' },
		{ "times", no_argument, NULL, 'T' },
		{ "bulk", required_argument, NULL, 'B' },
		{ "bulk-memory", required_argument, NULL, 'M' },
		{ "spill-dir", required_argument, NULL, 'D' },
		{ "summary", no_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long mib;
	char *end;
	int ch, nargs;

	while ((ch = getopt_long(argc, argv, "n:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			if (!nddctl_namespace_ok(optarg))
				return NDDCTL_EXIT_USAGE;
			opts->ns = optarg;
			break;
		case 't':
			/* Only a submit records a URL for a time. */
			if (op != NDDD_URL_SUBMIT)
				goto usage;
			if (!nddctl_parse_ttl("--ttl", optarg,
			    &opts->ttl_seconds))
				return NDDCTL_EXIT_USAGE;
			break;
		case 'T':
			opts->with_times = 1;
			break;
		case 'B':
			bulk->path = optarg;
			break;
		case 'M':
			errno = 0;
			mib = strtoull(optarg, &end, 10);
			if (!isdigit((unsigned char)*optarg) || *end != '\0' ||
			    errno != 0 || mib == 0 || mib > SIZE_MAX >> 20) {
				fprintf(stderr, "nddctl: --bulk-memory: a "
				    "number of MiB, not '%s'\n", optarg);
				return NDDCTL_EXIT_USAGE;
			}
			bulk->memory = (size_t)mib << 20;
			break;
		case 'D':
			bulk->dir = optarg;
			break;
		case 'S':
			bulk->summary = true;
			break;
		default:
			goto usage;
		}
	}
	nargs = argc - optind;
	/* A bulk request answers counts, in the input's order. */
	if (bulk->path != NULL)
		return nargs == 0 && !opts->with_times ? -1 : usage(op, argv);
	if (bulk->memory != 0 || bulk->dir != NULL || bulk->summary)
		return usage(op, argv);
	if (nargs < 1 || (nargs > 1 && strcmp(argv[optind], "-") == 0))
		goto usage;
	if (nargs == 1 && strcmp(argv[optind], "-") == 0)
		src->args = NULL;
	else {
		src->args = argv + optind;
		src->nargs = nargs;
	}
	return -1;
usage:
	return usage(op, argv);
}

static void
ring_free(struct batch *ring, unsigned window)
{
	if (ring == NULL)
		return;
	for (unsigned i = 0; i < window; i++) {
		batch_clear(&ring[i]);
		free(ring[i].urls);
		free(ring[i].lens);
		free(ring[i].cause);
		free(ring[i].digests);
	}
	free(ring);
}

/* window batches of up to batch URLs (with digests: room for them too). */
static struct batch *
ring_new(unsigned window, size_t batch, bool digests)
{
	struct batch *ring;

	if ((ring = calloc(window, sizeof(*ring))) == NULL)
		return NULL;
	for (unsigned i = 0; i < window; i++) {
		ring[i].urls = calloc(batch, sizeof(char *));
		ring[i].lens = calloc(batch, sizeof(size_t));
		if (ring[i].urls == NULL || ring[i].lens == NULL)
			goto oom;
		if (!digests)
			continue;
		ring[i].cause = calloc(batch, sizeof(char *));
		ring[i].digests = calloc(batch, NDDD_DIGEST_LEN);
		if (ring[i].cause == NULL || ring[i].digests == NULL)
			goto oom;
	}
	return ring;
oom:
	ring_free(ring, window);
	return NULL;
}

/*
 * A URL command on one daemon: a ring of --window batches, ring[head] the
 * oldest of the count that are in flight or wait to be printed.
 */
struct url_run {
	const struct nddctl_common *co;
	enum nddd_url_op op;
	bool times;
	nddd_client *c;
	nddd_canon *canon;	/* --digests */
	struct source *src;
	struct batch *ring;
	unsigned window;
	size_t head, count;
};

/* How a step of the loop ended. */
enum url_step {
	STEP_OK,
	STEP_INPUT,		/* the input could not be read (said) */
	STEP_LOST,		/* the connection failed */
	STEP_STRAY,		/* a reply to no batch (said) */
};

/* Reads and sends batches until the window is full or the input ends. */
static enum url_step
fill_window(struct url_run *u)
{
	while (u->count < u->window && !u->src->eof) {
		struct batch *b = &u->ring[(u->head + u->count) % u->window];

		if (read_batch(u->src, b, u->co->batch) == -1)
			return STEP_INPUT;
		if (b->n == 0)
			break;
		if (send_batch(u->c, u->canon, u->op, b) == -1)
			return STEP_LOST;
		u->count++;
	}
	return STEP_OK;
}

/*
 * Prints the answered batches at the head, in input order, adding their
 * URLs to *done.  Returns whether any item failed.
 */
static bool
print_ready(struct url_run *u, size_t *done)
{
	bool failed = false;

	while (u->count > 0 && u->ring[u->head].answered) {
		failed |= print_batch(u->co, u->op, u->times,
		    &u->ring[u->head]);
		*done += u->ring[u->head].n;
		batch_clear(&u->ring[u->head]);
		u->head = (u->head + 1) % u->window;
		u->count--;
	}
	return failed;
}

/* Waits for a reply (the oldest batch's request is out) and files it. */
static enum url_step
take_reply(struct url_run *u)
{
	struct nddd_reply *r;
	size_t k;

	if (nddd_recv(u->c, &r) == -1)
		return STEP_LOST;
	for (k = 0; k < u->count; k++) {
		struct batch *b = &u->ring[(u->head + k) % u->window];

		if (!b->answered && b->id == r->id) {
			b->reply = r;
			b->answered = true;
			return STEP_OK;
		}
	}
	fprintf(stderr, "nddctl: daemon: %s: %s\n", nddd_code_name(r->code),
	    r->message ? r->message : "unexpected reply");
	nddd_reply_free(r);
	return STEP_STRAY;
}

/* The URLs of u's source through its window.  Returns the exit status. */
static int
run_window(struct url_run *u)
{
	struct progress prog;
	size_t done = 0;
	bool failed = false;
	enum url_step step;

	progress_start(&prog, u->co->progress && u->src->args == NULL,
	    "URLs");
	for (;;) {
		if ((step = fill_window(u)) != STEP_OK)
			break;
		failed |= print_ready(u, &done);
		progress_update(&prog, done);
		if (u->count == 0) {
			if (u->src->eof)
				break;
			continue;
		}
		if ((step = take_reply(u)) != STEP_OK)
			break;
	}
	switch (step) {
	case STEP_INPUT:
		return NDDCTL_EXIT_USAGE;
	case STEP_STRAY:
		return NDDCTL_EXIT_UNREACHABLE;
	case STEP_LOST:
		progress_finish(&prog);
		fprintf(stderr, "nddctl: %s\n", nddd_errstr(u->c));
		return NDDCTL_EXIT_UNREACHABLE;
	case STEP_OK:
		break;
	}
	progress_finish(&prog);
	return failed ? NDDCTL_EXIT_ITEMS : NDDCTL_EXIT_OK;
}

static int
run(const struct nddctl_common *co, enum nddd_url_op op, int argc,
    char **argv)
{
	struct nddd_url_opts opts = { 0 };
	struct nddctl_bulk bulk = { 0 };
	struct source src = { 0 };
	struct url_run u = { .co = co, .op = op, .src = &src,
	    .window = co->window };
	int status;

	if ((status = parse_args(op, argc, argv, &opts, &src, &bulk)) != -1)
		return status;
	if (bulk.path != NULL)
		return nddctl_url_bulk(co, op, &opts, &bulk);
	if (nddctl_sharded(co))
		return run_shards(co, op, &opts, &src);
	u.times = opts.with_times;
	if ((u.c = nddctl_connect(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	nddd_set_durability(u.c, co->durability);
	if (nddd_set_url_opts(u.c, &opts) == -1) {
		fprintf(stderr, "nddctl: %s\n", nddd_errstr(u.c));
		status = NDDCTL_EXIT_USAGE;
		goto out;
	}
	if (co->digests && (u.canon = daemon_canon(u.c, &status)) == NULL)
		goto out;
	if ((u.ring = ring_new(u.window, co->batch, u.canon != NULL)) ==
	    NULL) {
		fprintf(stderr, "nddctl: out of memory\n");
		status = NDDCTL_EXIT_USAGE;
		goto out;
	}
	status = run_window(&u);
out:
	ring_free(u.ring, u.window);
	free(src.line);
	nddd_canon_free(u.canon);
	nddd_close(u.c);
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
