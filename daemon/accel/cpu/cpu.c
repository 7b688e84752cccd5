/*
 * cpu: the built-in accelerator backend, the simhash engine (vectorised,
 * see simhash.h) on a pool of worker threads.
 *
 * It takes every input format, preprocessing included.  A batch is cut
 * into tasks of whole documents, about CPU_TASK_BYTES each, that the
 * workers share; the worker that finishes a batch's last task completes
 * it.  Each worker has its own scratch area.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "simhash.h"
#include "stopwords.h"
#include "workq.h"

/* Input bytes per task: enough to amortise the queueing. */
#define CPU_TASK_BYTES (64 * 1024)
/* Documents per task at most, so that small documents spread too. */
#define CPU_TASK_DOCS 256

struct cpu_ctx {
	const struct accel_host *host;
	struct stopwords *sw;
	struct simhash *sh;
	struct workq *wq;
};

struct cpu_batch;

struct cpu_task {
	struct workq_item item;
	struct cpu_batch *cb;
	uint32_t first, count;
};

struct cpu_batch {
	struct accel_batch *b;
	struct cpu_ctx *ctx;
	enum simhash_input input;
	unsigned remaining;		/* tasks not done; atomic */
	struct cpu_task tasks[];
};

static int
cpu_probe(const struct accel_config *config, char *msg, size_t msglen)
{
	(void)config;
	snprintf(msg, msglen, "simhash engine, %s code",
	    simhash_simd_name(simhash_simd_active()));
	return ACCEL_PROBE_USABLE;
}

static void *
cpu_tls_new(void *arg)
{
	(void)arg;
	return simhash_scratch_new();
}

static void
cpu_tls_free(void *tls)
{
	simhash_scratch_free(tls);
}

static void
cpu_fini(void *arg)
{
	struct cpu_ctx *ctx = arg;

	if (ctx == NULL)
		return;
	workq_free(ctx->wq);
	simhash_free(ctx->sh);
	stopwords_free(ctx->sw);
	free(ctx);
}

static void *
cpu_init(const struct accel_config *config, char *err, size_t errlen)
{
	struct cpu_ctx *ctx;
	char *cause = NULL;
	size_t i;

	if ((ctx = calloc(1, sizeof(*ctx))) == NULL) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return NULL;
	}
	ctx->host = config->host;
	if ((ctx->sw = stopwords_new()) == NULL) {
		cause = strdup(strerror(ENOMEM));
		goto err;
	}
	for (i = 0; config->stopwords != NULL &&
	    config->stopwords[i] != NULL; i++)
		if (stopwords_add(ctx->sw, config->stopwords[i],
		    strlen(config->stopwords[i]), &cause) == -1)
			goto err;
	ctx->sh = simhash_new(config->term_hash == ACCEL_TERM_HASH_SDBM ?
	    SIMHASH_TERM_HASH_SDBM : SIMHASH_TERM_HASH_SDBM_FMIX64, ctx->sw,
	    &cause);
	if (ctx->sh == NULL)
		goto err;
	ctx->wq = workq_new(config->threads, cpu_tls_new, cpu_tls_free, NULL,
	    &cause);
	if (ctx->wq == NULL)
		goto err;
	return ctx;
err:
	snprintf(err, errlen, "%s", cause != NULL ? cause : "out of memory");
	free(cause);
	cpu_fini(ctx);
	return NULL;
}

static void
cpu_task_run(struct workq_item *item, void *tls)
{
	struct cpu_task *t = WORKQ_CONTAINER(item, struct cpu_task, item);
	struct cpu_batch *cb = t->cb;
	struct accel_batch *b = cb->b;
	const struct accel_host *host = cb->ctx->host;
	uint32_t i;

	for (i = t->first; i < t->first + t->count; i++) {
		struct accel_doc *d = &b->docs[i];

		if (i + 1 < t->first + t->count)
			simhash_prefetch(d[1].data, d[1].len);
		d->status = simhash_compute(cb->ctx->sh, tls, cb->input,
		    d->data, d->len, &d->fingerprint) == SIMHASH_OK ?
		    ACCEL_DOC_OK : ACCEL_DOC_EMPTY;
	}
	if (__atomic_sub_fetch(&cb->remaining, 1, __ATOMIC_ACQ_REL) == 0) {
		b->status = ACCEL_BATCH_OK;
		b->backend_data = NULL;
		free(cb);
		host->complete(b, host->arg);
	}
}

static int
cpu_submit(void *arg, struct accel_batch *b)
{
	struct cpu_ctx *ctx = arg;
	struct cpu_batch *cb;
	uint32_t i, first = 0, ntasks = 0;
	size_t bytes = 0;

	if (b->ndocs == 0) {
		b->status = ACCEL_BATCH_OK;
		ctx->host->complete(b, ctx->host->arg);
		return 0;
	}
	/* At most one task per document. */
	if ((cb = malloc(sizeof(*cb) + b->ndocs * sizeof(cb->tasks[0]))) ==
	    NULL) {
		snprintf(b->error, sizeof(b->error), "%s", strerror(ENOMEM));
		return -1;
	}
	cb->b = b;
	cb->ctx = ctx;
	cb->input = b->input == ACCEL_INPUT_HTML ? SIMHASH_INPUT_HTML :
	    b->input == ACCEL_INPUT_TEXT ? SIMHASH_INPUT_TEXT :
	    SIMHASH_INPUT_PREPROCESSED;
	for (i = 0; i < b->ndocs; i++) {
		bytes += b->docs[i].len;
		if (bytes >= CPU_TASK_BYTES || i + 1 - first >= CPU_TASK_DOCS ||
		    i + 1 == b->ndocs) {
			cb->tasks[ntasks].cb = cb;
			cb->tasks[ntasks].first = first;
			cb->tasks[ntasks].count = i + 1 - first;
			cb->tasks[ntasks].item.fn = cpu_task_run;
			ntasks++;
			first = i + 1;
			bytes = 0;
		}
	}
	cb->remaining = ntasks;
	b->backend_data = cb;
	for (i = 0; i < ntasks; i++)
		workq_push(ctx->wq, &cb->tasks[i].item);
	return 0;
}

const struct accel_backend accel_cpu_backend = {
	ACCEL_BACKEND_HEADER,
	.name = "cpu",
	.description = "vectorised simhash on a pool of threads",
	.flags = 0,
	.inputs = ACCEL_INPUT_PREPROCESSED | ACCEL_INPUT_TEXT | ACCEL_INPUT_HTML,
	.probe = cpu_probe,
	.init = cpu_init,
	.submit = cpu_submit,
	.fini = cpu_fini,
};
