/*
 * urlbulk: bulk URL checks and submits (nddd_bulk_*): a set of URLs too
 * large to ask about at random, asked in the store's key order so that
 * the daemon reads each page of its segments once, in large reads
 * (docs/urlstore.md, "Bulk checks").
 *
 * Each URL is hashed as it is added, with the daemon's canonicalization,
 * and kept as a record (its key, its place in the input, for submits and
 * deletes its text) in one of 256 buckets by its key's first byte; when
 * the records outgrow the memory allowed, every bucket goes to the spill
 * file as one run.  nddd_bulk_run then takes the buckets in order, each
 * read back from every run, sorted by key (a radix sort: keys are
 * uniform) and sent in pipelined batches (bulk.c's loop); each answer goes
 * to its URL's place in the results file, both files unlinked at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nsmask.h"
#include "nddd.h"
#include "nddd_impl.h"

#define BULK_BUCKETS		256
/* The bucket of the URLs refused here: their record's key holds the
 * number of the message saying why. */
#define BULK_REFUSED		BULK_BUCKETS
#define BULK_MEMORY_DEFAULT	((size_t)256 << 20)
#define BULK_BATCH_DEFAULT	4096
#define BULK_WINDOW_DEFAULT	8
/* Threads that hash the URLs of one nddd_bulk_add_many (the caller's
 * among them), at most one per processor, and the fewest URLs worth a
 * second one. */
#define BULK_HASHERS_MAX	4
#define BULK_HASH_SPLIT		4096

/* Results: a count, or one of these with a code and a message's number. */
#define RESULT_ERROR		0x80000000u
#define RESULT_UNANSWERED	0xffffffffu
#define RESULT_MESSAGES_MAX	0xffffu

/* A record: its key, its place in the input, its text's length, the text. */
struct rec_head {
	unsigned char key[NDDD_DIGEST_LEN];
	uint64_t index;
	uint32_t len;
};

struct bucket {
	unsigned char *buf;
	size_t len, cap;
};

/* A run of the spill file: where each bucket's records lie. */
struct spill_run {
	off_t off[BULK_BUCKETS + 1];
	size_t len[BULK_BUCKETS + 1];
};

/* A sorted bucket's entry: its key's first 8 bytes, in memcmp order. */
struct sorted {
	uint64_t hi;
	size_t off;
};

struct nddd_bulk {
	nddd_client *c;
	enum nddd_url_op op;
	bool texts;		/* submits and deletes send the URLs' text */
	nddd_canon *canon[BULK_HASHERS_MAX];	/* one per hashing thread */
	unsigned hashers;
	/* nddd_bulk_add_many: each URL's key, or why it is refused. */
	unsigned char *keys;
	const char **causes;
	size_t keys_cap;
	unsigned char mask[NDDD_DIGEST_LEN];
	char dir[4096];
	size_t memory, held, batch;
	unsigned window;
	struct bucket b[BULK_BUCKETS + 1];
	int spill_fd;
	off_t spill_end;
	struct spill_run *runs;
	size_t nruns;
	uint64_t n;
	/* nddd_bulk_run: the results file, mapped, one per URL. */
	uint32_t *results;
	size_t results_len;
	char **messages;
	size_t nmessages;
	/* The bucket being sent: its records and their order. */
	unsigned char *cur;
	struct sorted *order, *tmp;
	size_t ncur, next, order_cap;
	unsigned char *digests;		/* one batch's */
	const char **urls;
	size_t *lens;
	char err[256];
};

/* Sets b's error (nddd_bulk_errstr) and returns -1. */
#define bulk_fail(b, ...) errbuf_set((b)->err, sizeof((b)->err), __VA_ARGS__)

/* A file in dir, unlinked at once: it lives as long as fd. */
static int
temp_file(struct nddd_bulk *b, const char *what)
{
	char path[sizeof(b->dir) + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/nddd-bulk-%s.XXXXXX", b->dir, what);
	if ((fd = mkstemp(path)) == -1)
		return bulk_fail(b, "%s: %s", path, strerror(errno));
	unlink(path);
	return fd;
}

/* The number of message m in b's table (added if new), or -1. */
static int
message_number(struct nddd_bulk *b, const char *m)
{
	char **t;

	for (size_t i = 0; i < b->nmessages; i++)
		if (strcmp(b->messages[i], m) == 0)
			return (int)i;
	if (b->nmessages == RESULT_MESSAGES_MAX)
		return (int)b->nmessages - 1;	/* the last one says */
	if ((t = realloc(b->messages, (b->nmessages + 1) * sizeof(*t))) ==
	    NULL)
		return -1;
	b->messages = t;
	if ((t[b->nmessages] = strdup(m)) == NULL)
		return -1;
	return (int)b->nmessages++;
}

nddd_bulk *
nddd_bulk_new(nddd_client *c, enum nddd_url_op op,
    const struct nddd_bulk_opts *o, char **err)
{
	struct nddd_bulk_opts none = { 0 };
	/* The client's namespace ("": the default one). */
	const char *ns = c->url_opts.ns != NULL ? c->url_opts.ns : "";
	struct nddd_bulk *b;
	struct nddd_stats st;
	const char *dir;
	long cpus;

	*err = NULL;
	if (o == NULL)
		o = &none;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	b->c = c;
	b->op = op;
	b->texts = op != NDDD_URL_CHECK;
	b->spill_fd = -1;
	b->memory = o->memory != 0 ? o->memory : BULK_MEMORY_DEFAULT;
	b->batch = o->batch != 0 ? o->batch : BULK_BATCH_DEFAULT;
	b->window = o->window != 0 ? o->window : BULK_WINDOW_DEFAULT;
	dir = o->dir != NULL ? o->dir : getenv("TMPDIR");
	snprintf(b->dir, sizeof(b->dir), "%s", dir != NULL && dir[0] != '\0' ?
	    dir : "/tmp");
	/* Said now, not after every URL was read. */
	if (access(b->dir, W_OK | X_OK) == -1) {
		errmsg_new(err, "%s: %s", b->dir, strerror(errno));
		goto fail;
	}
	/* The daemon's canonicalization makes the keys it will look up. */
	if (nddd_stats(c, &st) == -1) {
		errmsg_new(err, "%s", nddd_errstr(c));
		goto fail;
	}
	if (st.canon[0] == '\0') {
		errmsg_new(err, "the daemon states no canonicalization (it is too "
		    "old for bulk requests)");
		goto fail;
	}
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	b->hashers = cpus < 1 ? 1 : cpus < BULK_HASHERS_MAX ? (unsigned)cpus :
	    BULK_HASHERS_MAX;
	for (unsigned t = 0; t < b->hashers; t++)
		if ((b->canon[t] = nddd_canon_new(st.canon, err)) == NULL)
			goto fail;
	if (ns_mask(ns, strlen(ns), b->mask) == -1) {
		errmsg_new(err, "cannot make the namespace's key mask");
		goto fail;
	}
	if ((b->digests = calloc(b->batch, NDDD_DIGEST_LEN)) == NULL ||
	    (b->urls = calloc(b->batch, sizeof(*b->urls))) == NULL ||
	    (b->lens = calloc(b->batch, sizeof(*b->lens))) == NULL)
		goto fail;
	return b;
fail:
	nddd_bulk_free(b);
	return NULL;
}

void
nddd_bulk_free(nddd_bulk *b)
{
	if (b == NULL)
		return;
	for (unsigned t = 0; t < BULK_HASHERS_MAX; t++)
		nddd_canon_free(b->canon[t]);
	free(b->keys);
	free(b->causes);
	for (size_t i = 0; i <= BULK_BUCKETS; i++)
		free(b->b[i].buf);
	if (b->spill_fd != -1)
		close(b->spill_fd);
	free(b->runs);
	if (b->results != NULL)
		munmap(b->results, b->results_len);
	for (size_t i = 0; i < b->nmessages; i++)
		free(b->messages[i]);
	free(b->messages);
	free(b->cur);
	free(b->order);
	free(b->tmp);
	free(b->digests);
	free(b->urls);
	free(b->lens);
	free(b);
}

const char *
nddd_bulk_errstr(const nddd_bulk *b)
{
	return b->err;
}

uint64_t
nddd_bulk_count(const nddd_bulk *b)
{
	return b->n;
}

uint64_t
nddd_bulk_spilled(const nddd_bulk *b)
{
	return (uint64_t)b->spill_end;
}

/* Writes every bucket to the spill file as a new run, and empties them. */
static int
spill(struct nddd_bulk *b)
{
	struct spill_run *runs, *r;

	if (b->spill_fd == -1 && (b->spill_fd = temp_file(b, "spill")) == -1)
		return -1;
	if ((runs = realloc(b->runs, (b->nruns + 1) * sizeof(*runs))) == NULL)
		return bulk_fail(b, "out of memory");
	b->runs = runs;
	r = &runs[b->nruns];
	for (size_t i = 0; i <= BULK_BUCKETS; i++) {
		struct bucket *k = &b->b[i];

		r->off[i] = b->spill_end;
		r->len[i] = k->len;
		for (size_t done = 0; done < k->len;) {
			ssize_t w = pwrite(b->spill_fd, k->buf + done,
			    k->len - done, b->spill_end);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return bulk_fail(b, "writing the spill file in "
				    "%s: %s", b->dir, w < 0 ? strerror(errno) :
				    "no room");
			done += (size_t)w;
			b->spill_end += w;
		}
		k->len = 0;
	}
	b->nruns++;
	b->held = 0;
	return 0;
}

/* Appends a record to bucket i. */
static int
bucket_put(struct nddd_bulk *b, size_t i, const unsigned char *key,
    const char *text, uint32_t len)
{
	struct rec_head h = { .index = b->n, .len = len };
	struct bucket *k = &b->b[i];
	size_t need = sizeof(h) + len;

	memcpy(h.key, key, NDDD_DIGEST_LEN);
	if (b->held + need > b->memory && b->held > 0 && spill(b) == -1)
		return -1;
	if (k->len + need > k->cap) {
		size_t cap = k->cap != 0 ? k->cap : 4096;
		unsigned char *p;

		while (cap < k->len + need)
			cap *= 2;
		if ((p = realloc(k->buf, cap)) == NULL)
			return bulk_fail(b, "out of memory");
		k->buf = p;
		k->cap = cap;
	}
	memcpy(k->buf + k->len, &h, sizeof(h));
	if (len > 0)
		memcpy(k->buf + k->len + sizeof(h), text, len);
	k->len += need;
	b->held += need;
	b->n++;
	return 0;
}

/* URLs [from, to) of a nddd_bulk_add_many, hashed by one thread. */
struct hash_slice {
	struct nddd_bulk *b;
	nddd_canon *canon;
	const char *const *urls;
	const size_t *lens;
	size_t from, to;
};

static void *
hash_slice(void *arg)
{
	const struct hash_slice *h = arg;
	struct nddd_bulk *b = h->b;

	canon_digest_many(h->canon, h->urls + h->from, h->lens + h->from,
	    h->to - h->from, b->keys + h->from * NDDD_DIGEST_LEN,
	    b->causes + h->from);
	for (size_t i = h->from; i < h->to; i++) {
		unsigned char *key = b->keys + i * NDDD_DIGEST_LEN;

		if (b->causes[i] == NULL)
			for (size_t j = 0; j < NDDD_DIGEST_LEN; j++)
				key[j] ^= b->mask[j];
	}
	return NULL;
}

/* Hashes urls[0..n) into b->keys and b->causes, on b->hashers threads. */
static int
hash_urls(struct nddd_bulk *b, const char *const *urls, const size_t *lens,
    size_t n)
{
	struct hash_slice h[BULK_HASHERS_MAX];
	pthread_t tid[BULK_HASHERS_MAX];
	bool started[BULK_HASHERS_MAX] = { false };
	unsigned nt = n >= BULK_HASH_SPLIT ? b->hashers : 1;

	if (n > b->keys_cap) {
		free(b->keys);
		free(b->causes);
		b->keys = malloc(n * NDDD_DIGEST_LEN);
		b->causes = malloc(n * sizeof(*b->causes));
		b->keys_cap = b->keys != NULL && b->causes != NULL ? n : 0;
		if (b->keys_cap == 0)
			return bulk_fail(b, "out of memory");
	}
	for (unsigned t = 0; t < nt; t++)
		h[t] = (struct hash_slice){ b, b->canon[t], urls, lens,
		    n * t / nt, n * (t + 1) / nt };
	/* The others start; this thread hashes the first slice, and the
	 * slice of a thread that could not start. */
	for (unsigned t = 1; t < nt; t++)
		started[t] = pthread_create(&tid[t], NULL, hash_slice,
		    &h[t]) == 0;
	hash_slice(&h[0]);
	for (unsigned t = 1; t < nt; t++) {
		if (started[t])
			pthread_join(tid[t], NULL);
		else
			hash_slice(&h[t]);
	}
	return 0;
}

int
nddd_bulk_add_many(nddd_bulk *b, const char *const *urls, const size_t *lens,
    size_t n)
{
	if (b->results != NULL)
		return bulk_fail(b, "nddd_bulk_add after nddd_bulk_run");
	if (hash_urls(b, urls, lens, n) == -1)
		return -1;
	/* Appended in input order: a bucket keeps it for equal keys. */
	for (size_t i = 0; i < n; i++) {
		const unsigned char *key = b->keys + i * NDDD_DIGEST_LEN;
		unsigned char refused[NDDD_DIGEST_LEN] = { 0 };
		int m, rc;

		if (b->causes[i] == NULL) {
			rc = bucket_put(b, key[0], key, urls[i], b->texts ?
			    (uint32_t)lens[i] : 0);
		} else {
			if ((m = message_number(b, b->causes[i])) == -1)
				return bulk_fail(b, "out of memory");
			memcpy(refused, &m, sizeof(m));
			rc = bucket_put(b, BULK_REFUSED, refused, NULL, 0);
		}
		if (rc == -1)
			return -1;
	}
	return 0;
}

int
nddd_bulk_add(nddd_bulk *b, const char *url, size_t len)
{
	return nddd_bulk_add_many(b, &url, &len, 1);
}

/* Reads bucket i back, from every run and from memory, into b->cur. */
static int
bucket_load(struct nddd_bulk *b, size_t i)
{
	size_t len = b->b[i].len, at = 0;

	for (size_t r = 0; r < b->nruns; r++)
		len += b->runs[r].len[i];
	free(b->cur);
	if ((b->cur = malloc(len != 0 ? len : 1)) == NULL)
		return bulk_fail(b, "out of memory");
	for (size_t r = 0; r < b->nruns; r++) {
		size_t want = b->runs[r].len[i];

		for (size_t done = 0; done < want;) {
			ssize_t n = pread(b->spill_fd, b->cur + at, want - done,
			    b->runs[r].off[i] + (off_t)done);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return bulk_fail(b, "reading the spill file: "
				    "%s", n < 0 ? strerror(errno) : "cut short");
			done += (size_t)n;
			at += (size_t)n;
		}
	}
	if (b->b[i].len > 0)
		memcpy(b->cur + at, b->b[i].buf, b->b[i].len);
	b->ncur = len;
	return 0;
}

/*
 * Orders b->cur's records by key: an LSD radix sort of their first 8
 * bytes after the bucket's own, stable, so that records of one key keep
 * their input order (a URL submitted twice: new, then a duplicate).  Keys
 * equal in 8 bytes but not in 16 may stay out of order: the daemon then
 * reads that batch as an unordered one, as exactly.
 */
static int
bucket_sort(struct nddd_bulk *b, size_t *count)
{
	size_t n = 0;

	for (size_t off = 0; off < b->ncur; n++) {
		struct rec_head h;

		memcpy(&h, b->cur + off, sizeof(h));
		off += sizeof(h) + h.len;
	}
	if (n > b->order_cap) {
		free(b->order);
		free(b->tmp);
		b->order_cap = n;
		b->order = malloc(n * sizeof(*b->order));
		b->tmp = malloc(n * sizeof(*b->tmp));
		if (b->order == NULL || b->tmp == NULL) {
			b->order_cap = 0;
			return bulk_fail(b, "out of memory");
		}
	}
	n = 0;
	for (size_t off = 0; off < b->ncur; n++) {
		struct rec_head h;
		uint64_t hi = 0;

		memcpy(&h, b->cur + off, sizeof(h));
		for (size_t j = 0; j < 8; j++)
			hi = hi << 8 | h.key[j];
		b->order[n] = (struct sorted){ .hi = hi, .off = off };
		off += sizeof(h) + h.len;
	}
	for (unsigned shift = 0; shift < 56; shift += 8) {
		size_t at[256] = { 0 }, sum = 0;
		struct sorted *t;

		for (size_t j = 0; j < n; j++)
			at[(b->order[j].hi >> shift) & 0xff]++;
		for (size_t d = 0; d < 256; d++) {
			size_t c = at[d];

			at[d] = sum;
			sum += c;
		}
		for (size_t j = 0; j < n; j++)
			b->tmp[at[(b->order[j].hi >> shift) & 0xff]++] =
			    b->order[j];
		t = b->order;
		b->order = b->tmp;
		b->tmp = t;
	}
	*count = n;
	return 0;
}

static void
record_at(const struct nddd_bulk *b, size_t k, struct rec_head *h,
    const char **text)
{
	const unsigned char *p = b->cur + b->order[k].off;

	memcpy(h, p, sizeof(*h));
	*text = (const char *)p + sizeof(*h);
}

/* The results of the URLs refused here, from their bucket. */
static int
answer_refused(struct nddd_bulk *b)
{
	if (bucket_load(b, BULK_REFUSED) == -1)
		return -1;
	for (size_t off = 0; off < b->ncur;) {
		struct rec_head h;
		int m;

		memcpy(&h, b->cur + off, sizeof(h));
		memcpy(&m, h.key, sizeof(m));
		b->results[h.index] = RESULT_ERROR |
		    (uint32_t)NDDD_INVALID_ARGUMENT << 16 | (uint32_t)m;
		off += sizeof(h) + h.len;
	}
	return 0;
}

/*
 * The pipeline's kind: items are the sorted records of every bucket in
 * turn.  A slot's positions hold each sent URL's place in the input (not
 * in the batch: the loop's own inflight_place is not used).
 */
struct bulk_loop {
	struct nddd_bulk *b;
	size_t bucket;		/* the next to load */
	size_t left;		/* of the loaded one, from b->next */
};

static int
bulk_batch(struct pipeline *p, struct inflight *f)
{
	struct bulk_loop *l = p->ctx;
	struct nddd_bulk *b = l->b;
	size_t m;
	int rc;

	while (l->left == 0) {
		if (l->bucket == BULK_BUCKETS) {
			client_fail(p->c, "the buckets hold fewer URLs than "
			    "were added");
			return BATCH_FAILED;
		}
		if (bucket_load(b, l->bucket) == -1 ||
		    bucket_sort(b, &l->left) == -1) {
			client_fail(p->c, "%s", b->err);
			return BATCH_FAILED;
		}
		b->next = 0;
		l->bucket++;
	}
	m = l->left < b->batch ? l->left : b->batch;
	for (size_t j = 0; j < m; j++) {
		struct rec_head h;
		const char *text;

		record_at(b, b->next + j, &h, &text);
		f->pos[j] = (size_t)h.index;
		if (b->texts) {
			b->urls[j] = text;
			b->lens[j] = h.len;
			continue;
		}
		for (size_t i = 0; i < NDDD_DIGEST_LEN; i++)
			b->digests[j * NDDD_DIGEST_LEN + i] = h.key[i] ^
			    b->mask[i];
	}
	b->next += m;
	l->left -= m;
	f->n = f->nsent = m;
	if (b->texts)
		rc = nddd_send_urls(p->c, b->op, b->urls, b->lens, m, &f->id);
	else
		rc = nddd_send_digests(p->c, b->op, nddd_canon_id(b->canon[0]),
		    b->digests, m, &f->id);
	return rc == 0 ? BATCH_SENT : BATCH_LOST;
}

static int
bulk_take(struct pipeline *p, const struct inflight *f, struct nddd_reply *r)
{
	struct bulk_loop *l = p->ctx;
	struct nddd_bulk *b = l->b;

	/* A URL's failure, or its batch's, is its result's: the run goes on. */
	for (size_t j = 0; j < f->nsent; j++) {
		uint32_t *res = &b->results[f->pos[j]];
		const struct nddd_url_result *u = j < r->nresults ?
		    &r->results[j] : NULL;
		enum nddd_code code;
		const char *why;
		int m;

		if (r->kind == NDDD_REPLY_URLS && u != NULL &&
		    u->code == NDDD_OK) {
			*res = u->count < RESULT_ERROR ? (uint32_t)u->count :
			    RESULT_ERROR - 1;
			continue;
		}
		if (r->kind == NDDD_REPLY_URLS && u != NULL) {
			code = u->code;
			why = u->message;
		} else {
			code = r->kind == NDDD_REPLY_ERROR ? r->code :
			    NDDD_INTERNAL;
			why = r->message;
		}
		if ((m = message_number(b, why != NULL ? why :
		    "reply has too few results")) == -1) {
			client_fail(p->c, "out of memory");
			return -1;
		}
		*res = RESULT_ERROR | (uint32_t)code << 16 | (uint32_t)m;
	}
	return 0;
}

/* The results say "not answered" until an answer comes. */
static void
bulk_unavailable(struct pipeline *p, size_t i)
{
	(void)p;
	(void)i;
}

/* The pipeline's progress, as the caller's. */
struct bulk_progress {
	void (*fn)(uint64_t done, uint64_t total, void *arg);
	void *arg;
	uint64_t refused, total;
};

static void
bulk_progress(size_t done, void *arg)
{
	struct bulk_progress *bp = arg;

	bp->fn(bp->refused + done, bp->total, bp->arg);
}

int
nddd_bulk_run(nddd_bulk *b,
    void (*progress)(uint64_t done, uint64_t total, void *arg), void *arg)
{
	struct bulk_loop l = { .b = b };
	struct bulk_progress bp = { .fn = progress, .arg = arg, .total = b->n };
	struct pipeline p = { .c = b->c, .window = b->window, .ctx = &l,
	    .batch = bulk_batch, .take = bulk_take,
	    .unavailable = bulk_unavailable };
	int fd, rc;

	if (b->results != NULL)
		return bulk_fail(b, "nddd_bulk_run called twice");
	b->results_len = b->n != 0 ? b->n * sizeof(*b->results) : 1;
	if ((fd = temp_file(b, "results")) == -1)
		return -1;
	if (ftruncate(fd, (off_t)b->results_len) == -1) {
		close(fd);
		return bulk_fail(b, "results file in %s: %s", b->dir,
		    strerror(errno));
	}
	b->results = mmap(NULL, b->results_len, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0);
	close(fd);
	if (b->results == MAP_FAILED) {
		b->results = NULL;
		return bulk_fail(b, "mapping the results: %s", strerror(errno));
	}
	memset(b->results, 0xff, b->n * sizeof(*b->results));
	if (answer_refused(b) == -1)
		return -1;
	for (size_t r = 0; r < b->nruns; r++)
		bp.refused += b->runs[r].len[BULK_REFUSED] /
		    sizeof(struct rec_head);
	bp.refused += b->b[BULK_REFUSED].len / sizeof(struct rec_head);
	p.n = b->n - bp.refused;
	if (progress != NULL) {
		p.progress = bulk_progress;
		p.arg = &bp;
	}
	if (pipeline_init(&p, b->batch, 1) == -1)
		return bulk_fail(b, "%s", nddd_errstr(b->c));
	rc = pipeline_run(&p);
	pipeline_free(&p);
	/* The buckets are done with. */
	for (size_t i = 0; i <= BULK_BUCKETS; i++) {
		free(b->b[i].buf);
		b->b[i] = (struct bucket){ 0 };
	}
	if (rc == -1)
		return bulk_fail(b, "%s", nddd_errstr(b->c));
	return 0;
}

enum nddd_code
nddd_bulk_result(const nddd_bulk *b, uint64_t i, uint64_t *count,
    const char **message)
{
	uint32_t r;

	*count = 0;
	*message = NULL;
	if (i >= b->n) {
		*message = "no such result";
		return NDDD_INVALID_ARGUMENT;
	}
	if (b->results == NULL) {
		/* The run failed before any answer: its error says why. */
		*message = b->err[0] != '\0' ? b->err : "not run";
		return NDDD_UNAVAILABLE;
	}
	r = b->results[i];
	if (r < RESULT_ERROR) {
		*count = r;
		return NDDD_OK;
	}
	if (r == RESULT_UNANSWERED) {
		*message = b->err[0] != '\0' ? b->err : "not answered";
		return NDDD_UNAVAILABLE;
	}
	*message = (r & RESULT_MESSAGES_MAX) < b->nmessages ?
	    b->messages[r & RESULT_MESSAGES_MAX] : "";
	return (enum nddd_code)((r >> 16) & 0x7fff);
}
