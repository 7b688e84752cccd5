/*
 * accel_test: an accelerator plugin for the tests, built against
 * accel_abi.h alone like any plugin.  A software model: simhash of
 * preprocessed text in a thread of its own.  Its behaviour is set by the
 * params string, comma-separated:
 *
 *   probe=absent|usable|device   what probe says (default: usable; the
 *                                "testdev" build defaults to device)
 *   init=fail                    init fails
 *   fail_every=N                 every Nth batch fails half-way through
 *   reject_every=N               submit refuses every Nth batch
 *
 * Built as nddd-accel-test.so (a simulation, preprocessed text only) and,
 * with ACCEL_TEST_DEVICE, nddd-accel-testdev.so, which presents itself as
 * hardware and also takes raw plain text, preprocessing it itself (folding,
 * separators, the stop words of its configuration).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_abi.h"

#ifdef ACCEL_TEST_DEVICE
#define TEST_NAME "testdev"
#define TEST_FLAGS 0
#define TEST_PROBE ACCEL_PROBE_DEVICE
#define TEST_INPUTS (ACCEL_INPUT_PREPROCESSED | ACCEL_INPUT_TEXT)
#else
#define TEST_NAME "test"
#define TEST_FLAGS ACCEL_F_SIMULATION
#define TEST_PROBE ACCEL_PROBE_USABLE
#define TEST_INPUTS ACCEL_INPUT_PREPROCESSED
#endif

struct test_opts {
	int probe;
	int init_fail;
	unsigned fail_every;
	unsigned reject_every;
};

struct test_item {
	struct test_item *next;
	struct accel_batch *b;
	int fail;
};

struct test_ctx {
	const struct accel_config *cfg;
	struct test_opts o;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct test_item *head, *tail;
	int stop;
	unsigned nsubmit;
};

static void
test_parse(const char *params, struct test_opts *o)
{
	const char *p = params;

	o->probe = TEST_PROBE;
	o->init_fail = 0;
	o->fail_every = o->reject_every = 0;
	while (p != NULL && *p != '\0') {
		if (strncmp(p, "probe=absent", 12) == 0)
			o->probe = ACCEL_PROBE_ABSENT;
		else if (strncmp(p, "probe=usable", 12) == 0)
			o->probe = ACCEL_PROBE_USABLE;
		else if (strncmp(p, "probe=device", 12) == 0)
			o->probe = ACCEL_PROBE_DEVICE;
		else if (strncmp(p, "init=fail", 9) == 0)
			o->init_fail = 1;
		else if (strncmp(p, "fail_every=", 11) == 0)
			o->fail_every = (unsigned)atoi(p + 11);
		else if (strncmp(p, "reject_every=", 13) == 0)
			o->reject_every = (unsigned)atoi(p + 13);
		if ((p = strchr(p, ',')) != NULL)
			p++;
	}
}

static int
test_probe(const struct accel_config *cfg, char *msg, size_t msglen)
{
	struct test_opts o;

	test_parse(cfg->params, &o);
	if (o.probe == ACCEL_PROBE_ABSENT)
		snprintf(msg, msglen, "no test device (/dev/nddd-test0 is "
		    "missing)");
	else if (o.probe == ACCEL_PROBE_DEVICE)
		snprintf(msg, msglen, "test device 0");
	else
		snprintf(msg, msglen, "software model");
	return o.probe;
}

/* Whitespace and punctuation, for raw text. */
static int
test_sep(uint8_t c)
{
	return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x21 &&
	    c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b &&
	    c <= 0x60) || (c >= 0x7b && c <= 0x7e);
}

static int
test_stopword(const char *const *stop, const uint8_t *t, size_t n)
{
	for (; stop != NULL && *stop != NULL; stop++)
		if (strlen(*stop) == n && memcmp(*stop, t, n) == 0)
			return 1;
	return 0;
}

/*
 * The definition: on preprocessed text (terms separated by SPACE), or on
 * raw text (raw set: folded, split at separators, stop words dropped).
 */
static int
test_simhash(const uint8_t *p, size_t len, int fmix, int raw,
    const char *const *stop, uint64_t *fp)
{
	long long v[64] = { 0 };
	uint8_t *term = malloc(len + 1);
	size_t i = 0, n = 0, tl, k;
	uint64_t h;
	int bit;

	while (i < len) {
		if (raw ? test_sep(p[i]) : p[i] == ' ') {
			i++;
			continue;
		}
		for (tl = 0; i < len && !(raw ? test_sep(p[i]) : p[i] == ' ');
		    i++)
			term[tl++] = raw && p[i] >= 'A' && p[i] <= 'Z' ?
			    (uint8_t)(p[i] + 32) : p[i];
		if (raw && test_stopword(stop, term, tl))
			continue;
		for (h = 0, k = 0; k < tl; k++)
			h = term[k] + (h << 6) + (h << 16) - h;
		if (fmix) {
			h ^= h >> 33;
			h *= 0xff51afd7ed558ccdULL;
			h ^= h >> 33;
			h *= 0xc4ceb9fe1a85ec53ULL;
			h ^= h >> 33;
		}
		for (bit = 0; bit < 64; bit++)
			v[bit] += (h >> bit & 1) ? 1 : -1;
		n++;
	}
	free(term);
	if (n == 0)
		return ACCEL_DOC_EMPTY;
	for (*fp = 0, bit = 0; bit < 64; bit++)
		if (v[bit] >= 0)
			*fp |= 1ULL << bit;
	return ACCEL_DOC_OK;
}

static void *
test_thread(void *arg)
{
	struct test_ctx *c = arg;
	struct test_item *it;
	uint32_t i;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		while (c->head == NULL && !c->stop)
			pthread_cond_wait(&c->cond, &c->lock);
		if ((it = c->head) == NULL) {
			pthread_mutex_unlock(&c->lock);
			return NULL;
		}
		if ((c->head = it->next) == NULL)
			c->tail = NULL;
		pthread_mutex_unlock(&c->lock);
		for (i = 0; i < it->b->ndocs; i++) {
			struct accel_doc *d = &it->b->docs[i];

			if (it->fail && i >= it->b->ndocs / 2) {
				/* The device died half-way: junk is left. */
				d->fingerprint = 0xdeadbeefULL;
				d->status = ACCEL_DOC_OK;
				continue;
			}
			d->status = test_simhash(d->data, d->len,
			    c->cfg->term_hash == ACCEL_TERM_HASH_SDBM_FMIX64,
			    it->b->input == ACCEL_INPUT_TEXT, c->cfg->stopwords,
			    &d->fingerprint);
		}
		if (it->fail) {
			it->b->status = ACCEL_BATCH_FAILED;
			snprintf(it->b->error, sizeof(it->b->error),
			    "test device error after %u documents",
			    it->b->ndocs / 2);
		} else
			it->b->status = ACCEL_BATCH_OK;
		c->cfg->host->complete(it->b, c->cfg->host->arg);
		free(it);
	}
}

static void *
test_init(const struct accel_config *cfg, char *err, size_t errlen)
{
	struct test_ctx *c;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->cfg = cfg;
	test_parse(cfg->params, &c->o);
	if (c->o.init_fail) {
		snprintf(err, errlen, "test init failure, as asked");
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (pthread_create(&c->thread, NULL, test_thread, c) != 0) {
		snprintf(err, errlen, "pthread_create failed");
		free(c);
		return NULL;
	}
	cfg->host->log(cfg->host->arg, ACCEL_LOG_INFO, TEST_NAME " started");
	return c;
}

static int
test_submit(void *arg, struct accel_batch *b)
{
	struct test_ctx *c = arg;
	struct test_item *it;

	c->nsubmit++;
	if (c->o.reject_every && c->nsubmit % c->o.reject_every == 0) {
		snprintf(b->error, sizeof(b->error), "test queue full");
		return -1;
	}
	if (!(b->input & TEST_INPUTS) ||
	    (it = calloc(1, sizeof(*it))) == NULL) {
		snprintf(b->error, sizeof(b->error), "cannot take it");
		return -1;
	}
	it->b = b;
	it->fail = c->o.fail_every && c->nsubmit % c->o.fail_every == 0;
	pthread_mutex_lock(&c->lock);
	if (c->tail != NULL)
		c->tail->next = it;
	else
		c->head = it;
	c->tail = it;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static void
test_fini(void *arg)
{
	struct test_ctx *c = arg;

	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

const struct accel_backend nddd_accel_backend = {
	ACCEL_BACKEND_HEADER,
	.name = TEST_NAME,
	.description = "test plugin: simhash of preprocessed text in software",
	.flags = TEST_FLAGS,
	.inputs = TEST_INPUTS,
	.probe = test_probe,
	.init = test_init,
	.submit = test_submit,
	.fini = test_fini,
};
