/*
 * fpga-sim: an accelerator plugin (accel_abi.h) that computes fingerprints
 * on nddd's fingerprint accelerator RTL (rtl/, after Luo, Najjar and
 * Hristidis) in simulation: the Verilator model of the design, driven
 * cycle by cycle through its ports (fpga_drv.h).  It is a simulation, not
 * hardware, and says so: ACCEL_F_SIMULATION (so "auto" never picks it), its
 * description, its probe message, and its log lines.  Its use is to run
 * the daemon on the hardware design itself, bit for bit, and to measure
 * the design's cycles; the simulation is far slower than the cpu backend.
 *
 * Built as nddd-accel-fpga-sim.so from this file, fpga_drv.cpp and the
 * model; it links the C++ runtime and Verilator's, nothing of nddd.
 *
 * params (plugin_params.h syntax):
 *   fail_batch=N   testing aid: the Nth batch submitted fails as if the
 *                  device had failed, after it ran (nddd redoes it on cpu)
 *
 * Threads: the model belongs to one thread of the plugin's own, which
 * makes it, runs the batches (all those queued, as one run, so that the
 * cores stay busy) and completes them; submit only queues.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_abi.h"
#include "fpga_drv.h"
#include "plugin_params.h"

struct fsim_item {
	struct fsim_item *next;
	struct accel_batch *b;
	unsigned long long seq;		/* 1 for the first submitted */
};

struct fsim_ctx {
	const struct accel_config *cfg;
	unsigned long long fail_batch;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct fsim_item *head, *tail;
	int stop;
	int ready;			/* the thread made its model (1) or
					   could not (-1) */
	char err[256];
	unsigned long long nsubmit;
	struct fpga_drv_stats total;
};

static void
fsim_log(const struct fsim_ctx *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
fsim_log(const struct fsim_ctx *c, int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "fpga-sim (a simulation): ");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	c->cfg->host->log(c->cfg->host->arg, level, msg);
}

static int
fsim_parse(const char *params, unsigned long long *fail_batch, char *err,
    size_t errlen)
{
	const char *p = params;
	char key[32], val[64];
	int rc;

	*fail_batch = 0;
	while ((rc = plugin_params_next(&p, key, sizeof(key), val,
	    sizeof(val), err, errlen)) == 1) {
		if (strcmp(key, "fail_batch") == 0) {
			if (plugin_params_number(key, val, ~0ULL, fail_batch,
			    err, errlen) == -1)
				return -1;
		} else {
			snprintf(err, errlen, "params: unknown setting \"%s\" "
			    "(fpga-sim takes fail_batch)", key);
			return -1;
		}
	}
	return rc;
}

/* "Verilator 5.006 model of the RTL: 1 engine x 8 SimHash cores, ..." */
static void
fsim_describe(char *msg, size_t len)
{
	snprintf(msg, len, "%s model of the fingerprint accelerator RTL: %u "
	    "engine(s) x %u SimHash cores, %u-bit counters; a simulation, not "
	    "an FPGA", fpga_drv_verilator(), fpga_drv_engines(),
	    fpga_drv_cores(), fpga_drv_counter_bits());
}

static int
fsim_probe(const struct accel_config *cfg, char *msg, size_t msglen)
{
	unsigned long long fb;

	if (fsim_parse(cfg->params, &fb, msg, msglen) == -1)
		return ACCEL_PROBE_ABSENT;
	fsim_describe(msg, msglen);
	return ACCEL_PROBE_USABLE;
}

/* Runs queued batches through the model as one run; completes them. */
static void
fsim_run(struct fsim_ctx *c, struct fpga_drv *drv, struct fsim_item *items)
{
	struct fpga_drv_doc *docs = NULL;
	struct fpga_drv_stats st;
	struct fsim_item *it;
	char err[256] = "";
	size_t n = 0, k;
	uint32_t i;
	int failed = 0;

	for (it = items; it != NULL; it = it->next)
		n += it->b->ndocs;
	if (n > 0 && (docs = calloc(n, sizeof(*docs))) == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		failed = 1;
	}
	for (k = 0, it = items; !failed && it != NULL; it = it->next)
		for (i = 0; i < it->b->ndocs; i++, k++) {
			const struct accel_doc *d = &it->b->docs[i];

			if ((uint64_t)d->len > fpga_drv_max_doc()) {
				snprintf(err, sizeof(err), "a document of %zu "
				    "bytes is beyond the counters' range",
				    d->len);
				failed = 1;
				break;
			}
			docs[k].data = d->data;
			docs[k].len = d->len;
		}
	if (!failed && fpga_drv_run(drv, docs, n, NULL, &st, err,
	    sizeof(err)) == -1) {
		fsim_log(c, ACCEL_LOG_WARNING, "%s", err);
		failed = 1;
	}
	if (!failed) {
		c->total.cycles += st.cycles;
		c->total.bytes += st.bytes;
		c->total.words += st.words;
		c->total.docs += st.docs;
	}
	for (k = 0; items != NULL; items = it) {
		struct accel_batch *b = items->b;

		it = items->next;
		for (i = 0; !failed && i < b->ndocs; i++, k++) {
			b->docs[i].fingerprint = docs[k].fp;
			b->docs[i].status = docs[k].empty ? ACCEL_DOC_EMPTY :
			    ACCEL_DOC_OK;
		}
		if (failed) {
			b->status = ACCEL_BATCH_FAILED;
			snprintf(b->error, sizeof(b->error), "simulated "
			    "accelerator: %.100s", err);
		} else if (c->fail_batch != 0 && items->seq == c->fail_batch) {
			b->status = ACCEL_BATCH_FAILED;
			snprintf(b->error, sizeof(b->error), "injected device "
			    "error in batch %llu (params fail_batch, a testing "
			    "aid)", c->fail_batch);
		} else
			b->status = ACCEL_BATCH_OK;
		b->backend_data = NULL;
		free(items);
		c->cfg->host->complete(b, c->cfg->host->arg);
	}
	free(docs);
}

static void *
fsim_thread(void *arg)
{
	struct fsim_ctx *c = arg;
	struct fpga_drv *drv;
	struct fsim_item *items;
	char err[256];

	/* The model lives and runs in this thread only. */
	drv = fpga_drv_new(c->cfg->term_hash == ACCEL_TERM_HASH_SDBM_FMIX64,
	    err, sizeof(err));
	pthread_mutex_lock(&c->lock);
	if (drv == NULL)
		snprintf(c->err, sizeof(c->err), "%s", err);
	c->ready = drv != NULL ? 1 : -1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (drv == NULL)
		return NULL;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		while (c->head == NULL && !c->stop)
			pthread_cond_wait(&c->cond, &c->lock);
		items = c->head;
		c->head = c->tail = NULL;
		pthread_mutex_unlock(&c->lock);
		if (items == NULL)
			break;
		fsim_run(c, drv, items);
	}
	fpga_drv_free(drv);
	return NULL;
}

static void
fsim_fini(void *arg)
{
	struct fsim_ctx *c = arg;

	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	if (c->total.bytes > 0)
		fsim_log(c, ACCEL_LOG_INFO, "simulated %llu cycles for %llu "
		    "documents, %llu bytes: %.4f cycles per byte per core",
		    (unsigned long long)c->total.cycles,
		    (unsigned long long)c->total.docs,
		    (unsigned long long)c->total.bytes,
		    (double)c->total.cycles * fpga_drv_engines() *
		    fpga_drv_cores() / (double)c->total.bytes);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void *
fsim_init(const struct accel_config *cfg, char *err, size_t errlen)
{
	struct fsim_ctx *c;
	char desc[256];

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->cfg = cfg;
	if (fsim_parse(cfg->params, &c->fail_batch, err, errlen) == -1) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (pthread_create(&c->thread, NULL, fsim_thread, c) != 0) {
		snprintf(err, errlen, "pthread_create failed");
		pthread_cond_destroy(&c->cond);
		pthread_mutex_destroy(&c->lock);
		free(c);
		return NULL;
	}
	pthread_mutex_lock(&c->lock);
	while (c->ready == 0)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
	if (c->ready < 0) {
		snprintf(err, errlen, "%s", c->err);
		fsim_fini(c);
		return NULL;
	}
	fsim_describe(desc, sizeof(desc));
	fsim_log(c, ACCEL_LOG_INFO, "started: %s; term hash %s", desc,
	    cfg->term_hash == ACCEL_TERM_HASH_SDBM ? "sdbm" : "sdbm-fmix64");
	return c;
}

static int
fsim_submit(void *arg, struct accel_batch *b)
{
	struct fsim_ctx *c = arg;
	struct fsim_item *it;

	if (b->input != ACCEL_INPUT_PREPROCESSED) {
		snprintf(b->error, sizeof(b->error), "fpga-sim takes "
		    "preprocessed documents only");
		return -1;
	}
	if ((it = calloc(1, sizeof(*it))) == NULL) {
		snprintf(b->error, sizeof(b->error), "out of memory");
		return -1;
	}
	it->b = b;
	pthread_mutex_lock(&c->lock);
	it->seq = ++c->nsubmit;
	if (c->tail != NULL)
		c->tail->next = it;
	else
		c->head = it;
	c->tail = it;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

const struct accel_backend nddd_accel_backend = {
	ACCEL_BACKEND_HEADER,
	.name = "fpga-sim",
	.description = "simulation (Verilator) of the fingerprint accelerator "
	    "RTL, not hardware",
	.flags = ACCEL_F_SIMULATION,
	.inputs = ACCEL_INPUT_PREPROCESSED,
	.probe = fsim_probe,
	.init = fsim_init,
	.submit = fsim_submit,
	.fini = fsim_fini,
};
