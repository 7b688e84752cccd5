/*
 * Shards: one nddd_client per daemon of a shard list, and the routing of
 * URL batches over them by a consistent hash of their digests.
 *
 * A call canonicalizes and hashes its URLs here (the daemons' own code,
 * with the settings every shard states), answers the URLs no daemon would
 * take, and sends each shard its part (the URLs themselves, or their
 * digests), the shards in parallel (a thread per shard beyond the first).
 * A shard that cannot be reached fails its part, with NDDD_UNAVAILABLE,
 * and nothing else; the next call connects to it again.  Documents over
 * the same list: shard_docs.c.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jumphash.h"
#include "nddd.h"
#include "nddd_impl.h"
#include "shards_impl.h"

uint32_t
nddd_jump_hash(uint64_t key, uint32_t buckets)
{
	return jump_hash(key, buckets);
}

uint32_t
nddd_shard_of(const unsigned char digest[NDDD_DIGEST_LEN], uint32_t nshards)
{
	return jump_hash_owner(digest, nshards);
}

void
nddd_shards_route(const unsigned char *digests, size_t n, uint32_t nshards,
    uint32_t *shard)
{
	for (size_t i = 0; i < n; i++)
		shard[i] = nddd_shard_of(digests + i * NDDD_DIGEST_LEN,
		    nshards);
}

void
shard_down(struct shard *sh, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sh->err, sizeof(sh->err), fmt, ap);
	va_end(ap);
	nddd_close(sh->c);
	sh->c = NULL;
}

/*
 * Connects to sh and reads the settings routing depends on into settings
 * (SHARD_SETTINGS_LEN bytes): its canonicalization and its k.  Returns
 * 0, or -1 with sh down and sh->err saying why.
 */
static int
shard_connect(struct nddd_shards *s, struct shard *sh, char *settings)
{
	struct nddd_stats st;
	char *err = NULL;

	if ((sh->c = nddd_connect_opts(sh->address, &s->opts, &err)) ==
	    NULL) {
		snprintf(sh->err, sizeof(sh->err), "%s: %s", sh->address,
		    err ? err : "out of memory");
		free(err);
		return -1;
	}
	if (nddd_stats(sh->c, &st) == -1) {
		shard_down(sh, "%s: %s", sh->address, nddd_errstr(sh->c));
		return -1;
	}
	if (st.canon[0] == '\0') {
		shard_down(sh, "%s: the daemon states no canonicalization "
		    "(too old to be a shard)", sh->address);
		return -1;
	}
	/* Floats to nine digits: read back, they are the same floats. */
	snprintf(settings, SHARD_SETTINGS_LEN, "%s, near k %u, answer %s, "
	    "containment %.9g, resemblance %.9g", st.canon, st.near_k,
	    st.near_answer[0] != '\0' ? st.near_answer : "hamming",
	    (double)st.near_containment, (double)st.near_resemblance);
	nddd_set_durability(sh->c, s->durability);
	nddd_set_doc_match(sh->c, s->match);
	if (nddd_set_url_opts(sh->c, &s->url_opts) == -1 ||
	    nddd_set_doc_namespace(sh->c, s->doc_ns) == -1) {
		shard_down(sh, "%s: %s", sh->address, nddd_errstr(sh->c));
		return -1;
	}
	return 0;
}

void
shard_reconnect(struct nddd_shards *s, struct shard *sh)
{
	char settings[SHARD_SETTINGS_LEN];

	if (sh->c != NULL || shard_connect(s, sh, settings) == -1)
		return;
	if (strcmp(settings, s->settings) != 0)
		shard_down(sh, "%s states \"%s\", the other shards \"%s\": "
		    "not routing to it", sh->address, settings, s->settings);
}

struct parallel_call {
	void (*fn)(void *);
	void *arg;
	pthread_t thread;
	int started;
};

static void *
parallel_run(void *arg)
{
	struct parallel_call *pc = arg;

	pc->fn(pc->arg);
	return NULL;
}

void
shards_parallel(void (*fn)(void *), void *args, size_t size, size_t n)
{
	struct parallel_call *pc = n > 1 ? calloc(n, sizeof(*pc)) : NULL;
	char *a = args;

	for (size_t i = 1; i < n && pc != NULL; i++) {
		pc[i].fn = fn;
		pc[i].arg = a + i * size;
		pc[i].started = pthread_create(&pc[i].thread, NULL,
		    parallel_run, &pc[i]) == 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (pc != NULL && pc[i].started)
			pthread_join(pc[i].thread, NULL);
		else
			fn(a + i * size);
	}
	free(pc);
}

static char *
dup_or_null(const char *p, int *oom)
{
	char *d;

	if (p == NULL)
		return NULL;
	if ((d = strdup(p)) == NULL)
		*oom = 1;
	return d;
}


nddd_shards *
nddd_shards_open(const char *const *addresses, size_t n,
    const struct nddd_options *opts, char **err)
{
	struct nddd_options none = { 0 };
	struct nddd_shards *s;
	const char *first = NULL;
	char answer[16];
	int oom = 0;

	*err = NULL;
	if (n == 0 || n > NDDD_SHARDS_MAX) {
		errmsg_new(err, "a shard list has 1 to %d addresses, not %zu",
		    NDDD_SHARDS_MAX, n);
		return NULL;
	}
	if (opts == NULL)
		opts = &none;
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->shards = calloc(n, sizeof(*s->shards))) == NULL) {
		free(s);
		return NULL;
	}
	s->n = n;
	s->opts = *opts;
	s->opts.token = dup_or_null(opts->token, &oom);
	s->opts.tls_ca = dup_or_null(opts->tls_ca, &oom);
	s->opts.tls_cert = dup_or_null(opts->tls_cert, &oom);
	s->opts.tls_key = dup_or_null(opts->tls_key, &oom);
	s->opts.tls_name = dup_or_null(opts->tls_name, &oom);
	for (size_t i = 0; i < n; i++) {
		s->shards[i].address = dup_or_null(addresses[i], &oom);
		for (size_t j = 0; j < i && !oom; j++)
			if (strcmp(addresses[i], addresses[j]) == 0) {
				errmsg_new(err, "shard %s is listed twice",
				    addresses[i]);
				goto fail;
			}
	}
	if (oom)
		goto fail;
	/* Every shard that answers must state the settings of the others: a
	 * URL routed by one canonical form and keyed by another would be
	 * stored twice, and groups decided with two distances would differ
	 * from shard to shard. */
	for (size_t i = 0; i < n; i++) {
		struct shard *sh = &s->shards[i];
		char settings[SHARD_SETTINGS_LEN];

		if (shard_connect(s, sh, settings) == -1)
			continue;
		if (first == NULL) {
			memcpy(s->settings, settings, sizeof(s->settings));
			first = sh->address;
		} else if (strcmp(settings, s->settings) != 0) {
			errmsg_new(err, "the shards' settings differ: %s "
			    "states \"%s\", %s \"%s\"", first, s->settings,
			    sh->address, settings);
			goto fail;
		}
	}
	if (first == NULL) {
		errmsg_new(err, "no shard answers (%s)", s->shards[0].err);
		goto fail;
	}
	if (sscanf(s->settings, "%127[^,], near k %u, answer %15[a-z], "
	    "containment %f, resemblance %f", s->canon_id, &s->k, answer,
	    &s->containment, &s->resemblance) != 5) {
		errmsg_new(err, "cannot read the settings \"%s\"",
		    s->settings);
		goto fail;
	}
	s->hamming = strcmp(answer, "hamming") == 0;
	if ((s->canon = nddd_canon_new(s->canon_id, err)) == NULL)
		goto fail;
	return s;
fail:
	nddd_shards_close(s);
	return NULL;
}

void
nddd_shards_close(nddd_shards *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		struct shard *sh = &s->shards[i];

		nddd_close(sh->c);
		free(sh->address);
		free(sh->pos);
		free(sh->digests);
		free(sh->urls);
		free(sh->results);
	}
	free(s->shards);
	free((char *)s->opts.token);
	free((char *)s->opts.tls_ca);
	free((char *)s->opts.tls_cert);
	free((char *)s->opts.tls_key);
	free((char *)s->opts.tls_name);
	free((char *)s->url_opts.ns);
	free(s->doc_ns);
	free(s->seqmap);
	nddd_canon_free(s->canon);
	free(s);
}

size_t
nddd_shards_count(const nddd_shards *s)
{
	return s->n;
}

const char *
nddd_shards_address(const nddd_shards *s, size_t i)
{
	return i < s->n ? s->shards[i].address : NULL;
}

const char *
nddd_shards_canon_id(const nddd_shards *s)
{
	return s->canon_id;
}

const char *
nddd_shards_errstr(const nddd_shards *s)
{
	return s->err;
}

void
nddd_shards_use_digests(nddd_shards *s, int on)
{
	s->digests = on != 0;
}

void
nddd_shards_set_durability(nddd_shards *s, enum nddd_durability d)
{
	s->durability = d;
	for (size_t i = 0; i < s->n; i++)
		if (s->shards[i].c != NULL)
			nddd_set_durability(s->shards[i].c, d);
}

int
nddd_shards_set_url_opts(nddd_shards *s, const struct nddd_url_opts *o)
{
	struct nddd_url_opts none = { 0 };
	char *ns = NULL;

	if (o == NULL)
		o = &none;
	if (o->ns != NULL && !nddd_namespace_valid(o->ns)) {
		snprintf(s->err, sizeof(s->err), "namespace \"%s\" is not a "
		    "valid name", o->ns);
		return -1;
	}
	if (o->ttl_seconds > NDDD_TTL_MAX) {
		snprintf(s->err, sizeof(s->err), "time to live %llu s is over "
		    "the most, %u s", (unsigned long long)o->ttl_seconds,
		    NDDD_TTL_MAX);
		return -1;
	}
	if (o->ns != NULL && (ns = strdup(o->ns)) == NULL) {
		snprintf(s->err, sizeof(s->err), "out of memory");
		return -1;
	}
	free((char *)s->url_opts.ns);
	s->url_opts = *o;
	s->url_opts.ns = ns;
	for (size_t i = 0; i < s->n; i++)
		if (s->shards[i].c != NULL)
			nddd_set_url_opts(s->shards[i].c, &s->url_opts);
	return 0;
}

/* Room for need URLs in sh's part. */
static int
part_reserve(struct shard *sh, size_t need)
{
	size_t *pos;
	unsigned char *digests;
	const char **urls;
	struct nddd_url_result *results;

	if (need <= sh->cap)
		return 0;
	if ((pos = realloc(sh->pos, need * sizeof(*pos))) == NULL)
		return -1;
	sh->pos = pos;
	if ((digests = realloc(sh->digests, need * NDDD_DIGEST_LEN)) == NULL)
		return -1;
	sh->digests = digests;
	if ((urls = realloc(sh->urls, need * sizeof(*urls))) == NULL)
		return -1;
	sh->urls = urls;
	if ((results = realloc(sh->results, need * sizeof(*results))) ==
	    NULL)
		return -1;
	sh->results = results;
	sh->cap = need;
	return 0;
}

struct part_call {
	struct shard *sh;
	enum nddd_url_op op;
	const char *canon_id;	/* send digests made with it; NULL: URLs */
	size_t batch;
	unsigned window;
};

static void
part_run(void *arg)
{
	struct part_call *pc = arg;
	struct shard *sh = pc->sh;

	if (pc->canon_id != NULL)
		sh->failed = nddd_digests(sh->c, pc->op, pc->canon_id,
		    sh->digests, sh->n, sh->results, pc->batch,
		    pc->window) == -1;
	else
		sh->failed = nddd_urls(sh->c, pc->op, sh->urls, sh->n,
		    sh->results, pc->batch, pc->window, NULL, NULL) == -1;
}

/*
 * Moves sh's part's results to their places in results.  When its
 * connection failed (nddd_urls and nddd_digests answer what they could not
 * send or hear back NDDD_UNAVAILABLE), the shard is down and those URLs
 * say which it is.
 */
static void
part_scatter(struct shard *sh, struct nddd_url_result *results)
{
	int lost = 0;

	for (size_t j = 0; sh->failed && j < sh->n; j++)
		lost |= sh->results[j].code == NDDD_UNAVAILABLE;
	if (lost)
		shard_down(sh, "%s: %s", sh->address, nddd_errstr(sh->c));
	for (size_t j = 0; j < sh->n; j++) {
		struct nddd_url_result *r = &sh->results[j];

		if (lost && r->code == NDDD_UNAVAILABLE) {
			free((char *)r->message);
			r->message = strdup(sh->err);
		}
		results[sh->pos[j]] = *r;
	}
}

/* Every URL of sh's part fails: the shard is down. */
static void
part_unavailable(struct shard *sh, struct nddd_url_result *results)
{
	for (size_t j = 0; j < sh->n; j++) {
		struct nddd_url_result *r = &results[sh->pos[j]];

		r->code = NDDD_UNAVAILABLE;
		r->message = strdup(sh->err);
	}
}

uint32_t
shards_moved_route_by(const char *message)
{
	unsigned long places;

	if (message == NULL ||
	    sscanf(message, "moved: route by %lu shards", &places) != 1 ||
	    places == 0 || places > NDDD_SHARDS_MAX)
		return 0;
	return (uint32_t)places;
}

int
shards_grow(struct nddd_shards *s, struct shard *sh, uint32_t places)
{
	struct nddd_stats st;
	struct shard *grown;
	char *list, *next, *addr;
	size_t n = 0, had = s->n;

	if (places <= s->n)
		return 0;
	if (sh->c == NULL || nddd_stats(sh->c, &st) == -1) {
		snprintf(s->err, sizeof(s->err), "%s names %u shards, and its "
		    "list cannot be read", sh->address, places);
		return -1;
	}
	if (st.shard_count < places || st.shard_list[0] == '\0') {
		snprintf(s->err, sizeof(s->err), "%s names %u shards but "
		    "states no list of them", sh->address, places);
		return -1;
	}
	/* sh is one of the list's: not to be read past the realloc. */
	sh = NULL;
	if ((grown = realloc(s->shards, st.shard_count * sizeof(*grown))) ==
	    NULL) {
		snprintf(s->err, sizeof(s->err), "out of memory");
		return -1;
	}
	s->shards = grown;
	list = st.shard_list;
	/* The daemons' list must extend this one: places keep their keys. */
	for (addr = list; addr != NULL && n < st.shard_count; addr = next) {
		if ((next = strchr(addr, ',')) != NULL)
			*next++ = '\0';
		if (n < s->n) {
			if (strcmp(addr, s->shards[n].address) != 0) {
				snprintf(s->err, sizeof(s->err), "the shards' "
				    "list names %.100s in place %zu, this one "
				    "%.100s", addr, n, s->shards[n].address);
				return -1;
			}
		} else {
			memset(&s->shards[n], 0, sizeof(s->shards[n]));
			if ((s->shards[n].address = strdup(addr)) == NULL) {
				snprintf(s->err, sizeof(s->err),
				    "out of memory");
				return -1;
			}
			snprintf(s->shards[n].err, sizeof(s->shards[n].err),
			    "%.200s: not connected yet", addr);
			s->n = n + 1;
		}
		n++;
	}
	if (s->n < places) {
		snprintf(s->err, sizeof(s->err), "a shard names %u shards, "
		    "its list %zu (this one had %zu)", places, s->n, had);
		return -1;
	}
	return 0;
}

int
shards_moved_pause(unsigned round, long long *start_ms)
{
	struct timespec now, pause;
	long long ms, wait = round < 8 ? 1LL << round : 100;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	if (round == 1)
		*start_ms = ms;
	else if (ms - *start_ms > SHARDS_MOVED_WAIT_MS)
		return 0;
	/* The first retry at once: a key that moved is at its new owner. */
	if (round > 1) {
		pause.tv_sec = wait / 1000;
		pause.tv_nsec = (wait % 1000) * 1000000;
		nanosleep(&pause, NULL);
	}
	return 1;
}

/*
 * Sends the items pend[0..npend) of a call (digests d, routed by
 * route_by[i] places each) to their shards, in parallel, their results
 * into results.
 */
static int
urls_round(nddd_shards *s, enum nddd_url_op op, const char *const *urls,
    const unsigned char *d, const uint32_t *route_by, const size_t *pend,
    size_t npend, struct nddd_url_result *results, size_t batch,
    unsigned window)
{
	struct part_call *calls;
	size_t nparts = 0;

	for (size_t i = 0; i < s->n; i++)
		s->shards[i].n = 0;
	for (size_t t = 0; t < npend; t++) {
		size_t i = pend[t];
		struct shard *sh = &s->shards[nddd_shard_of(d + i *
		    NDDD_DIGEST_LEN, route_by[i])];

		if (part_reserve(sh, sh->n + 1 < 64 ? 64 : 2 * sh->n) == -1)
			return -1;
		sh->pos[sh->n] = i;
		sh->urls[sh->n] = urls[i];
		memcpy(sh->digests + sh->n * NDDD_DIGEST_LEN, d + i *
		    NDDD_DIGEST_LEN, NDDD_DIGEST_LEN);
		sh->n++;
	}
	if ((calls = calloc(s->n, sizeof(*calls))) == NULL)
		return -1;
	for (size_t i = 0; i < s->n; i++) {
		struct shard *sh = &s->shards[i];
		struct part_call *pc = &calls[nparts];

		if (sh->n == 0)
			continue;
		shard_reconnect(s, sh);
		if (sh->c == NULL) {
			part_unavailable(sh, results);
			continue;
		}
		*pc = (struct part_call){ sh, op, s->digests ? s->canon_id :
		    NULL, batch, window };
		nparts++;
	}
	shards_parallel(part_run, calls, sizeof(*calls), nparts);
	for (size_t k = 0; k < nparts; k++)
		part_scatter(calls[k].sh, results);
	free(calls);
	return 0;
}

int
nddd_shards_urls(nddd_shards *s, enum nddd_url_op op,
    const char *const *urls, size_t n, struct nddd_url_result *results,
    size_t batch, unsigned window)
{
	unsigned char *d = malloc(n * NDDD_DIGEST_LEN + 1);
	uint32_t *route_by = malloc(n * sizeof(*route_by) + 1);
	size_t *pend = malloc(n * sizeof(*pend) + 1), npend = 0;
	long long start_ms = 0;

	memset(results, 0, n * sizeof(*results));
	if (d == NULL || route_by == NULL || pend == NULL)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		const char *cause;

		if (nddd_canon_digest(s->canon, urls[i], strlen(urls[i]),
		    d + i * NDDD_DIGEST_LEN, &cause) == -1) {
			results[i].code = NDDD_INVALID_ARGUMENT;
			results[i].message = strdup(cause);
			continue;
		}
		route_by[i] = (uint32_t)s->n;
		pend[npend++] = i;
	}
	/* Rounds: the items answered NDDD_MOVED go again, routed as the
	 * shard said. */
	for (unsigned round = 1; npend > 0; round++) {
		size_t again = 0;

		if (urls_round(s, op, urls, d, route_by, pend, npend, results,
		    batch, window) == -1)
			goto oom;
		for (size_t t = 0; t < npend; t++) {
			size_t i = pend[t];
			struct nddd_url_result *r = &results[i];
			uint32_t by;

			if (r->code != NDDD_MOVED ||
			    (by = shards_moved_route_by(r->message)) == 0)
				continue;
			if (by > s->n && shards_grow(s, &s->shards[
			    nddd_shard_of(d + i * NDDD_DIGEST_LEN,
			    route_by[i])], by) == -1) {
				free((char *)r->message);
				r->message = strdup(s->err);
				continue;
			}
			route_by[i] = by;
			pend[again++] = i;
		}
		if (again == 0 || !shards_moved_pause(round, &start_ms))
			break;
		for (size_t t = 0; t < again; t++) {
			free((char *)results[pend[t]].message);
			memset(&results[pend[t]], 0, sizeof(results[0]));
		}
		npend = again;
	}
	free(d);
	free(route_by);
	free(pend);
	return 0;
oom:
	free(d);
	free(route_by);
	free(pend);
	snprintf(s->err, sizeof(s->err), "out of memory");
	nddd_urls_results_free(results, n);
	return -1;
}
