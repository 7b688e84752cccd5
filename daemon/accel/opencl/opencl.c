/*
 * opencl: an accelerator plugin (accel_abi.h) that computes fingerprints
 * with one OpenCL kernel, simhash.cl, on any OpenCL 1.2 device: a GPU, an
 * accelerator card, or a CPU runtime such as PoCL.  Built as
 * nddd-accel-opencl.so against accel_abi.h and the OpenCL ICD loader
 * (-lOpenCL); the kernel's source is compiled into the plugin and built for
 * the device at init.
 * docs/accelerators.md describes it for operators, params included.
 *
 * Transfers.  The plugin packs the documents of the batches it holds into
 * transfers: a buffer of at most "buffer" bytes and a table of pieces,
 * each piece followed by a SPACE that ends its last term for the kernel.
 * A document that does not fit in a buffer so is cut into parts at SPACE
 * bytes, one part per transfer, and the parts' per-bit counts are added up
 * here (the bits are the same: every term lies in exactly one part).  A
 * document with a term too long for a buffer cannot be cut so; the plugin
 * computes it on the host instead, with the same definition.  A transfer
 * may hold documents of several batches, and a batch may span transfers.
 *
 * Double buffering.  There are two sets of buffers (pinned host staging,
 * device input, device output) and two in-order command queues, one for
 * uploads and one for the kernel and its results.  The worker thread packs
 * and uploads transfer n+1 into one set while the device computes transfer
 * n from the other, then waits for n, hands out its results, and swaps.
 *
 * Failure.  An OpenCL error on a transfer fails the batches that had
 * pieces in it: each is completed with ACCEL_BATCH_FAILED and the error,
 * and nddd computes it again on its cpu backend.  The queues are drained
 * and the next transfer goes on.
 *
 * Threads.  submit (nddd's threads, one at a time) appends to the queue
 * under ctx->lock; everything else, OpenCL included, is the worker's.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "accel_abi.h"
#include "opencl_kernel.h"
#include "plugin_params.h"

/* Bytes per transfer by default: the daemon's largest frame (8 MiB), so
 * that any document it accepts goes whole. */
#define OCL_BUFFER_DEFAULT	(8u << 20)
/* Pieces' offsets are 32-bit in the kernel. */
#define OCL_BUFFER_MAX		(1u << 30)
#define OCL_BUFFER_MIN		16u
/* Parts of split documents per transfer: the first and the last piece. */
#define OCL_SLOTS		2
/* Per-bit counts and the term count of a part. */
#define OCL_COUNTS		65
/* Work-group size on GPUs and accelerators unless params say otherwise. */
#define OCL_LOCAL_GPU		64

struct ocl_opts {
	int platform;			/* -1: choose */
	int device;			/* -1: choose */
	size_t buffer;
	size_t local;			/* 0: by device type */
	char binary[256];		/* a program binary to load, or "" */
	char save_binary[256];		/* where to write the built one */
	unsigned long long fail_batch;	/* testing aid: 0 none */
};

/* The per-bit counts of a document that is split into parts. */
struct ocl_split {
	uint64_t ones[64];
	uint64_t n;
};

/* A batch while the plugin holds it. */
struct ocl_batch {
	struct accel_batch *b;
	struct ocl_batch *next;		/* queue */
	unsigned long long seq;		/* 1 for the first submitted */
	unsigned pending;		/* transfers with its pieces, + packing */
	int failed;
	char error[128];
};

/* What the host knows of a piece of a transfer. */
struct ocl_ref {
	struct ocl_batch *ob;
	uint32_t doc;
	struct ocl_split *split;	/* a part; NULL for a whole document */
	int last;			/* the last part of its document */
};

/* One set of buffers and the transfer in it. */
struct ocl_xfer {
	cl_mem d_pieces, d_data, d_fps, d_nterms, d_counts;
	cl_mem h_pinned;		/* host staging of the data */
	uint8_t *h_data;		/* mapped h_pinned */
	cl_uint *h_pieces;		/* 4 per piece */
	cl_ulong *h_fps;
	cl_uint *h_nterms;
	cl_uint *h_counts;
	struct ocl_ref *refs;
	struct ocl_batch **batches;	/* with pieces here, each once */
	size_t npieces, used, nbatches;
	unsigned nslots;
	int inflight;
	int failed;
	char error[128];
	cl_event done;
};

struct ocl_ctx {
	const struct accel_config *cfg;
	struct ocl_opts o;
	size_t max_pieces;
	size_t local;
	cl_platform_id platform;
	cl_device_id device;
	cl_context context;
	cl_command_queue q_up, q_run;
	cl_program program;
	cl_kernel kernel;
	struct ocl_xfer x[2];

	/* The packer's place: the batch, document and offset it is at. */
	struct ocl_batch *packing;
	uint32_t pdoc;
	size_t poff;
	struct ocl_split *psplit;

	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ocl_batch *head, *tail;	/* submitted, not yet packed */
	int stop;
	unsigned long long nsubmit;
};

static void
ocl_log(const struct ocl_ctx *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
ocl_log(const struct ocl_ctx *c, int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "opencl: ");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	c->cfg->host->log(c->cfg->host->arg, level, msg);
}

static const char *
ocl_strerror(cl_int rc)
{
	switch (rc) {
	case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
	case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
	case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
	case CL_MEM_OBJECT_ALLOCATION_FAILURE:
		return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
	case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
	case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
	case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
	case CL_MAP_FAILURE: return "CL_MAP_FAILURE";
	case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
		return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
	case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
	case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
	case CL_INVALID_CONTEXT: return "CL_INVALID_CONTEXT";
	case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
	case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
	case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
	case CL_INVALID_PROGRAM_EXECUTABLE:
		return "CL_INVALID_PROGRAM_EXECUTABLE";
	case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
	case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
	case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
	case CL_INVALID_GLOBAL_WORK_SIZE:
		return "CL_INVALID_GLOBAL_WORK_SIZE";
	case CL_INVALID_EVENT_WAIT_LIST: return "CL_INVALID_EVENT_WAIT_LIST";
	case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
	case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
	default: return "OpenCL error";
	}
}

/*
 * Keeps the OpenCL ICD loader loaded for the life of the process.  It
 * reads the vendors' drivers once and keeps that list, with no destructor;
 * if nddd unloads this plugin, the loader would go with it and the list be
 * lost (and read again on the next load).
 */
static void
ocl_pin_loader(void)
{
	void *dl = dlopen("libOpenCL.so.1", RTLD_LAZY | RTLD_NOLOAD |
	    RTLD_NODELETE);

	if (dl != NULL)
		dlclose(dl);
}

/* ---- params ------------------------------------------------------------ */

static int
ocl_parse(const char *params, struct ocl_opts *o, char *err, size_t errlen)
{
	const char *p = params;
	char key[32], val[256];
	unsigned long long v;
	int rc;

	memset(o, 0, sizeof(*o));
	o->platform = -1;
	o->device = -1;
	o->buffer = OCL_BUFFER_DEFAULT;
	o->local = 0;
	o->fail_batch = 0;
	while ((rc = plugin_params_next(&p, key, sizeof(key), val,
	    sizeof(val), err, errlen)) == 1) {
		if (strcmp(key, "platform") == 0) {
			if (plugin_params_number(key, val, 1023, &v, err,
			    errlen) == -1)
				return -1;
			o->platform = (int)v;
		} else if (strcmp(key, "device") == 0) {
			if (plugin_params_number(key, val, 1023, &v, err,
			    errlen) == -1)
				return -1;
			o->device = (int)v;
		} else if (strcmp(key, "buffer") == 0) {
			if (plugin_params_number(key, val, OCL_BUFFER_MAX, &v,
			    err, errlen) == -1)
				return -1;
			if (v < OCL_BUFFER_MIN) {
				snprintf(err, errlen, "params: buffer=%s: at "
				    "least %u bytes", val, OCL_BUFFER_MIN);
				return -1;
			}
			o->buffer = (size_t)v;
		} else if (strcmp(key, "local") == 0) {
			if (plugin_params_number(key, val, 4096, &v, err,
			    errlen) == -1)
				return -1;
			o->local = (size_t)v;
		} else if (strcmp(key, "binary") == 0) {
			snprintf(o->binary, sizeof(o->binary), "%s", val);
		} else if (strcmp(key, "save_binary") == 0) {
			snprintf(o->save_binary, sizeof(o->save_binary), "%s",
			    val);
		} else if (strcmp(key, "fail_batch") == 0) {
			if (plugin_params_number(key, val, ~0ULL, &v, err,
			    errlen) == -1)
				return -1;
			o->fail_batch = v;
		} else {
			snprintf(err, errlen, "params: unknown setting \"%s\" "
			    "(opencl takes platform, device, buffer, local, "
			    "binary, save_binary, fail_batch)", key);
			return -1;
		}
	}
	return rc;
}

/* ---- the device --------------------------------------------------------- */

static int
ocl_is_accelerator(cl_device_id dev)
{
	cl_device_type type = 0;

	clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
	return (type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR |
	    CL_DEVICE_TYPE_CUSTOM)) != 0;
}

/* The devices of a platform; NULL (and *n 0) when it has none. */
static cl_device_id *
ocl_devices(cl_platform_id pl, cl_uint *n)
{
	cl_device_id *devs;

	*n = 0;
	if (clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 0, NULL, n) != CL_SUCCESS ||
	    *n == 0)
		return NULL;
	if ((devs = calloc(*n, sizeof(*devs))) == NULL ||
	    clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, *n, devs, NULL) !=
	    CL_SUCCESS) {
		free(devs);
		*n = 0;
		return NULL;
	}
	return devs;
}

/*
 * Finds the device the options name: platform P, device D; without
 * "device", the platform's first GPU or accelerator, else its first
 * device; without "platform", the first GPU or accelerator of any
 * platform, else the first device of the first platform that has one.
 * Returns 0 with a description in msg, or -1 with the reason in msg.
 */
static int
ocl_pick(const struct ocl_opts *o, cl_platform_id *pl_out,
    cl_device_id *dev_out, int *pl_index, int *dev_index, char *msg,
    size_t msglen)
{
	cl_platform_id *pls = NULL;
	cl_device_id *devs;
	cl_uint np = 0, nd, p, d;
	int found = 0, pass;
	cl_int rc;

	ocl_pin_loader();
	rc = clGetPlatformIDs(0, NULL, &np);
	if (rc != CL_SUCCESS || np == 0) {
		snprintf(msg, msglen, "no OpenCL platform (the ICD loader found "
		    "no driver in /etc/OpenCL/vendors%s%s)", rc != CL_SUCCESS ?
		    ": " : "", rc != CL_SUCCESS ? ocl_strerror(rc) : "");
		return -1;
	}
	if ((pls = calloc(np, sizeof(*pls))) == NULL ||
	    clGetPlatformIDs(np, pls, NULL) != CL_SUCCESS) {
		free(pls);
		snprintf(msg, msglen, "cannot list the OpenCL platforms");
		return -1;
	}
	if (o->platform >= (int)np) {
		snprintf(msg, msglen, "params: platform=%d, but there are %u "
		    "OpenCL platforms", o->platform, np);
		free(pls);
		return -1;
	}
	/* Pass 0: GPUs and accelerators only; pass 1: any device. */
	for (pass = 0; pass < 2 && !found; pass++) {
		for (p = 0; p < np && !found; p++) {
			if (o->platform >= 0 && p != (cl_uint)o->platform)
				continue;
			if (o->platform < 0 && o->device >= 0 && p != 0)
				continue;
			devs = ocl_devices(pls[p], &nd);
			if (o->device >= 0) {
				if ((cl_uint)o->device < nd) {
					*dev_out = devs[o->device];
					*dev_index = o->device;
					found = 1;
				} else {
					snprintf(msg, msglen, "params: device=%d,"
					    " but platform %u has %u devices",
					    o->device, p, nd);
					free(devs);
					free(pls);
					return -1;
				}
			}
			for (d = 0; d < nd && !found; d++) {
				if (pass == 0 && !ocl_is_accelerator(devs[d]))
					continue;
				*dev_out = devs[d];
				*dev_index = (int)d;
				found = 1;
			}
			if (found) {
				*pl_out = pls[p];
				*pl_index = (int)p;
			}
			free(devs);
		}
	}
	free(pls);
	if (!found) {
		snprintf(msg, msglen, "no OpenCL device on %s",
		    o->platform >= 0 ? "that platform" : "any platform");
		return -1;
	}
	return 0;
}

/* "platform 0 (PoCL), device 0: NAME (CPU, OpenCL 3.0 ...)" */
static void
ocl_describe(cl_platform_id pl, cl_device_id dev, int pi, int di, char *msg,
    size_t msglen)
{
	char pname[128] = "", dname[128] = "", dver[128] = "";
	cl_device_type type = 0;

	clGetPlatformInfo(pl, CL_PLATFORM_NAME, sizeof(pname), pname, NULL);
	clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(dname), dname, NULL);
	clGetDeviceInfo(dev, CL_DEVICE_VERSION, sizeof(dver), dver, NULL);
	clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
	snprintf(msg, msglen, "platform %d (%s), device %d: %s (%s, %s)", pi,
	    pname, di, dname, type & CL_DEVICE_TYPE_GPU ? "GPU" :
	    type & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator" :
	    type & CL_DEVICE_TYPE_CPU ? "CPU" : "other", dver);
}

static int
ocl_probe(const struct accel_config *cfg, char *msg, size_t msglen)
{
	struct ocl_opts o;
	cl_platform_id pl;
	cl_device_id dev;
	cl_bool avail = CL_FALSE;
	int pi, di;

	if (ocl_parse(cfg->params, &o, msg, msglen) == -1 ||
	    ocl_pick(&o, &pl, &dev, &pi, &di, msg, msglen) == -1)
		return ACCEL_PROBE_ABSENT;
	ocl_describe(pl, dev, pi, di, msg, msglen);
	clGetDeviceInfo(dev, CL_DEVICE_AVAILABLE, sizeof(avail), &avail, NULL);
	if (!avail) {
		size_t n = strlen(msg);

		snprintf(msg + n, msglen - n, ": not available");
		return ACCEL_PROBE_ABSENT;
	}
	return ocl_is_accelerator(dev) ? ACCEL_PROBE_DEVICE :
	    ACCEL_PROBE_USABLE;
}

/* ---- the host's own computation ---------------------------------------- */

/* The fingerprint of a document in the accelerator format, on the host. */
static int32_t
ocl_host_simhash(const uint8_t *p, size_t len, int fmix, uint64_t *fp)
{
	uint64_t ones[64] = { 0 }, n = 0, h;
	size_t i = 0;
	int k;

	while (i < len) {
		if (p[i] == ' ') {
			i++;
			continue;
		}
		for (h = 0; i < len && p[i] != ' '; i++)
			h = h * 65599ULL + p[i];
		if (fmix) {
			h ^= h >> 33;
			h *= 0xff51afd7ed558ccdULL;
			h ^= h >> 33;
			h *= 0xc4ceb9fe1a85ec53ULL;
			h ^= h >> 33;
		}
		for (k = 0; k < 64; k++)
			ones[k] += (h >> k) & 1;
		n++;
	}
	if (n == 0)
		return ACCEL_DOC_EMPTY;
	for (*fp = 0, k = 0; k < 64; k++)
		if (2 * ones[k] >= n)
			*fp |= 1ULL << k;
	return ACCEL_DOC_OK;
}

/* The longest run of bytes other than SPACE. */
static size_t
ocl_longest_term(const uint8_t *p, size_t len)
{
	size_t i = 0, start, best = 0;

	while (i < len) {
		const uint8_t *sp;

		start = i;
		sp = memchr(p + i, ' ', len - i);
		i = sp != NULL ? (size_t)(sp - p) : len;
		if (i - start > best)
			best = i - start;
		i++;
	}
	return best;
}

/* ---- transfers ---------------------------------------------------------- */

static void
ocl_complete(struct ocl_ctx *c, struct ocl_batch *ob)
{
	struct accel_batch *b = ob->b;

	if (ob->failed) {
		b->status = ACCEL_BATCH_FAILED;
		snprintf(b->error, sizeof(b->error), "%s", ob->error);
	} else
		b->status = ACCEL_BATCH_OK;
	b->backend_data = NULL;
	free(ob);
	c->cfg->host->complete(b, c->cfg->host->arg);
}

/* One reference of a batch dropped (a transfer finished, or packing). */
static void
ocl_unref(struct ocl_ctx *c, struct ocl_batch *ob)
{
	if (--ob->pending == 0)
		ocl_complete(c, ob);
}

static void
ocl_fail_batch(struct ocl_batch *ob, const char *why)
{
	if (ob->failed)
		return;
	ob->failed = 1;
	snprintf(ob->error, sizeof(ob->error), "%s", why);
}

/* Adds [off, off + len) of document doc of ob to the transfer. */
static void
ocl_add_piece(struct ocl_xfer *t, struct ocl_batch *ob, uint32_t doc,
    size_t off, size_t len, struct ocl_split *split, int last)
{
	const struct accel_doc *d = &ob->b->docs[doc];
	size_t i = t->npieces++;

	memcpy(t->h_data + t->used, d->data + off, len);
	t->h_data[t->used + len] = ' ';		/* the kernel's sentinel */
	t->h_pieces[4 * i] = (cl_uint)t->used;
	t->h_pieces[4 * i + 1] = (cl_uint)len;
	t->h_pieces[4 * i + 2] = split != NULL ? 1u | t->nslots << 1 : 0;
	t->h_pieces[4 * i + 3] = 0;
	if (split != NULL)
		t->nslots++;
	t->used += len + 1;
	t->refs[i].ob = ob;
	t->refs[i].doc = doc;
	t->refs[i].split = split;
	t->refs[i].last = last;
	if (t->nbatches == 0 || t->batches[t->nbatches - 1] != ob) {
		t->batches[t->nbatches++] = ob;
		ob->pending++;
	}
}

/* The last SPACE in p[from, to], or (size_t)-1. */
static size_t
ocl_last_space(const uint8_t *p, size_t from, size_t to)
{
	size_t i;

	for (i = to + 1; i-- > from;)
		if (p[i] == ' ')
			return i;
	return (size_t)-1;
}

/*
 * Fills a transfer from the queued batches, until it is full or they run
 * out.  Documents that need no device (empty ones, and ones with a term
 * longer than the buffer) are done here and now.
 */
static void
ocl_pack(struct ocl_ctx *c, struct ocl_xfer *t)
{
	const size_t cap = c->o.buffer;
	const int fmix = c->cfg->term_hash == ACCEL_TERM_HASH_SDBM_FMIX64;

	t->npieces = t->used = t->nbatches = 0;
	t->nslots = 0;
	t->failed = 0;
	t->error[0] = '\0';
	for (;;) {
		struct ocl_batch *ob = c->packing;

		if (ob == NULL) {
			pthread_mutex_lock(&c->lock);
			if ((ob = c->head) != NULL &&
			    (c->head = ob->next) == NULL)
				c->tail = NULL;
			pthread_mutex_unlock(&c->lock);
			if (ob == NULL)
				return;
			c->packing = ob;
			c->pdoc = 0;
			c->poff = 0;
			c->psplit = NULL;
			ob->pending = 1;	/* packing */
		}
		while (c->pdoc < ob->b->ndocs) {
			struct accel_doc *d = &ob->b->docs[c->pdoc];
			/* Room for a piece and the SPACE after it. */
			size_t rest = d->len - c->poff, room = t->used < cap ?
			    cap - t->used - 1 : 0;
			size_t cut;
			int last;

			if (c->psplit == NULL && d->len > cap - 1) {
				/* Split, if every term fits in a buffer. */
				size_t longest = ocl_longest_term(d->data,
				    d->len);

				if (longest >= cap - 1 || (c->psplit =
				    calloc(1, sizeof(*c->psplit))) == NULL) {
					d->status = ocl_host_simhash(d->data,
					    d->len, fmix, &d->fingerprint);
					ocl_log(c, ACCEL_LOG_DEBUG, "a document "
					    "of %zu bytes with a term of %zu "
					    "bytes, computed on the host (%s)",
					    d->len, longest, longest >= cap - 1 ?
					    "the term does not fit a buffer" :
					    "out of memory");
					c->pdoc++;
					continue;
				}
			}
			if (c->psplit == NULL) {
				if (d->len == 0) {
					d->status = ACCEL_DOC_EMPTY;
					c->pdoc++;
					continue;
				}
				if (d->len > room ||
				    t->npieces == c->max_pieces)
					return;
				ocl_add_piece(t, ob, c->pdoc, 0, d->len, NULL,
				    0);
				c->pdoc++;
				continue;
			}
			/* A part, ending at a SPACE (or the end). */
			if (room == 0 || t->npieces == c->max_pieces ||
			    t->nslots == OCL_SLOTS)
				return;
			if (rest <= room) {
				cut = d->len;
				last = 1;
			} else {
				cut = ocl_last_space(d->data, c->poff + 1,
				    c->poff + room);
				if (cut == (size_t)-1)
					return;	/* fits a fresh buffer */
				last = 0;
			}
			ocl_add_piece(t, ob, c->pdoc, c->poff, cut - c->poff,
			    c->psplit, last);
			if (!last) {
				c->poff = cut;
				return;		/* full */
			}
			c->psplit = NULL;
			c->poff = 0;
			c->pdoc++;
		}
		c->packing = NULL;
		ocl_unref(c, ob);
	}
}

static void
ocl_xfer_error(struct ocl_xfer *t, const char *what, cl_int rc)
{
	if (t->failed)
		return;
	t->failed = 1;
	snprintf(t->error, sizeof(t->error), "OpenCL device error: %s: %s "
	    "(%d)", what, ocl_strerror(rc), (int)rc);
}

/* Uploads a packed transfer and queues its kernel and results. */
static void
ocl_launch(struct ocl_ctx *c, struct ocl_xfer *t)
{
	const cl_uint fmix = c->cfg->term_hash == ACCEL_TERM_HASH_SDBM_FMIX64;
	size_t global = t->npieces * c->local;
	cl_event up = NULL;
	cl_int rc;

	t->inflight = 1;
	t->done = NULL;
	rc = clEnqueueWriteBuffer(c->q_up, t->d_pieces, CL_FALSE, 0,
	    t->npieces * 4 * sizeof(cl_uint), t->h_pieces, 0, NULL, NULL);
	if (rc == CL_SUCCESS)
		rc = clEnqueueWriteBuffer(c->q_up, t->d_data, CL_FALSE, 0,
		    t->used > 0 ? t->used : 1, t->h_data, 0, NULL, &up);
	if (rc != CL_SUCCESS) {
		ocl_xfer_error(t, "clEnqueueWriteBuffer", rc);
		return;
	}
	clFlush(c->q_up);
	rc = clSetKernelArg(c->kernel, 0, sizeof(cl_mem), &t->d_pieces);
	rc |= clSetKernelArg(c->kernel, 1, sizeof(cl_mem), &t->d_data);
	rc |= clSetKernelArg(c->kernel, 2, sizeof(cl_uint), &fmix);
	rc |= clSetKernelArg(c->kernel, 3, sizeof(cl_mem), &t->d_fps);
	rc |= clSetKernelArg(c->kernel, 4, sizeof(cl_mem), &t->d_nterms);
	rc |= clSetKernelArg(c->kernel, 5, sizeof(cl_mem), &t->d_counts);
	rc |= clSetKernelArg(c->kernel, 6, OCL_COUNTS * sizeof(cl_uint), NULL);
	if (rc != CL_SUCCESS) {
		ocl_xfer_error(t, "clSetKernelArg", CL_INVALID_KERNEL_ARGS);
		goto out;
	}
	rc = clEnqueueNDRangeKernel(c->q_run, c->kernel, 1, NULL, &global,
	    &c->local, 1, &up, NULL);
	if (rc != CL_SUCCESS) {
		ocl_xfer_error(t, "clEnqueueNDRangeKernel", rc);
		goto out;
	}
	rc = clEnqueueReadBuffer(c->q_run, t->d_fps, CL_FALSE, 0,
	    t->npieces * sizeof(cl_ulong), t->h_fps, 0, NULL, NULL);
	if (rc == CL_SUCCESS)
		rc = clEnqueueReadBuffer(c->q_run, t->d_nterms, CL_FALSE, 0,
		    t->npieces * sizeof(cl_uint), t->h_nterms, 0, NULL,
		    t->nslots == 0 ? &t->done : NULL);
	if (rc == CL_SUCCESS && t->nslots > 0)
		rc = clEnqueueReadBuffer(c->q_run, t->d_counts, CL_FALSE, 0,
		    t->nslots * OCL_COUNTS * sizeof(cl_uint), t->h_counts, 0,
		    NULL, &t->done);
	if (rc != CL_SUCCESS) {
		ocl_xfer_error(t, "clEnqueueReadBuffer", rc);
		goto out;
	}
	clFlush(c->q_run);
out:
	if (up != NULL)
		clReleaseEvent(up);
}

/* Waits for a transfer, hands out its results, and drops its batches. */
static void
ocl_finish(struct ocl_ctx *c, struct ocl_xfer *t)
{
	const cl_uint *cnt;
	cl_int rc, st = CL_COMPLETE;
	size_t i, j;
	int k;

	if (t->done != NULL) {
		rc = clWaitForEvents(1, &t->done);
		if (rc == CL_SUCCESS)
			rc = clGetEventInfo(t->done,
			    CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st,
			    NULL);
		if (rc != CL_SUCCESS)
			ocl_xfer_error(t, "clWaitForEvents", rc);
		else if (st < 0)
			ocl_xfer_error(t, "transfer", st);
		clReleaseEvent(t->done);
		t->done = NULL;
	}
	if (t->failed) {
		/* Nothing of this set may be in use when it is refilled. */
		clFinish(c->q_up);
		clFinish(c->q_run);
		ocl_log(c, ACCEL_LOG_WARNING, "%s; failing the %zu batch(es) "
		    "in this transfer", t->error, t->nbatches);
	}
	for (j = 0; j < t->nbatches; j++) {
		struct ocl_batch *ob = t->batches[j];

		if (t->failed)
			ocl_fail_batch(ob, t->error);
		if (c->o.fail_batch != 0 && ob->seq == c->o.fail_batch) {
			char why[128];

			snprintf(why, sizeof(why), "injected device error in "
			    "batch %llu (params fail_batch, a testing aid)",
			    c->o.fail_batch);
			ocl_fail_batch(ob, why);
		}
	}
	for (i = 0; i < t->npieces; i++) {
		struct ocl_ref *r = &t->refs[i];
		struct accel_doc *d = &r->ob->b->docs[r->doc];
		struct ocl_split *sp = r->split;

		if (sp == NULL) {
			if (!r->ob->failed) {
				d->fingerprint = t->h_fps[i];
				d->status = t->h_nterms[i] != 0 ?
				    ACCEL_DOC_OK : ACCEL_DOC_EMPTY;
			}
			continue;
		}
		cnt = t->h_counts + OCL_COUNTS * (t->h_pieces[4 * i + 2] >> 1);
		for (k = 0; k < 64; k++)
			sp->ones[k] += cnt[k];
		sp->n += cnt[64];
		if (!r->last)
			continue;
		if (!r->ob->failed) {
			d->status = sp->n != 0 ? ACCEL_DOC_OK : ACCEL_DOC_EMPTY;
			for (d->fingerprint = 0, k = 0; k < 64; k++)
				if (2 * sp->ones[k] >= sp->n)
					d->fingerprint |= 1ULL << k;
		}
		free(sp);
	}
	t->inflight = 0;
	for (j = 0; j < t->nbatches; j++)
		ocl_unref(c, t->batches[j]);
	t->nbatches = 0;
	t->npieces = 0;
}

static int
ocl_idle(struct ocl_ctx *c)
{
	return c->head == NULL && c->packing == NULL && !c->x[0].inflight &&
	    !c->x[1].inflight;
}

/* More to pack than the transfers hold. */
static int
ocl_more(struct ocl_ctx *c)
{
	int more;

	pthread_mutex_lock(&c->lock);
	more = c->packing != NULL || c->head != NULL;
	pthread_mutex_unlock(&c->lock);
	return more;
}

static void *
ocl_thread(void *arg)
{
	struct ocl_ctx *c = arg;
	int cur = 0;

	for (;;) {
		struct ocl_xfer *t = &c->x[cur], *o = &c->x[cur ^ 1];

		pthread_mutex_lock(&c->lock);
		while (ocl_idle(c) && !c->stop)
			pthread_cond_wait(&c->cond, &c->lock);
		if (ocl_idle(c) && c->stop) {
			pthread_mutex_unlock(&c->lock);
			return NULL;
		}
		pthread_mutex_unlock(&c->lock);

		/* Upload the next transfer while the device has the other. */
		if (!t->inflight) {
			ocl_pack(c, t);
			if (t->npieces > 0)
				ocl_launch(c, t);
		}
		/* Then wait for the older one; for the new one only when
		 * nothing is left to pack meanwhile. */
		if (o->inflight)
			ocl_finish(c, o);
		else if (t->inflight && !ocl_more(c))
			ocl_finish(c, t);
		cur ^= 1;
	}
}

/* ---- life cycle -------------------------------------------------------- */

static void
ocl_fini(void *arg)
{
	struct ocl_ctx *c = arg;
	int i;

	if (c == NULL)
		return;
	if (c->started) {
		pthread_mutex_lock(&c->lock);
		c->stop = 1;
		pthread_cond_signal(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	if (c->q_up != NULL)
		clFinish(c->q_up);
	if (c->q_run != NULL)
		clFinish(c->q_run);
	for (i = 0; i < 2; i++) {
		struct ocl_xfer *t = &c->x[i];

		if (t->h_data != NULL)
			clEnqueueUnmapMemObject(c->q_up, t->h_pinned, t->h_data,
			    0, NULL, NULL);
		if (t->h_pinned != NULL)
			clReleaseMemObject(t->h_pinned);
		if (t->d_pieces != NULL)
			clReleaseMemObject(t->d_pieces);
		if (t->d_data != NULL)
			clReleaseMemObject(t->d_data);
		if (t->d_fps != NULL)
			clReleaseMemObject(t->d_fps);
		if (t->d_nterms != NULL)
			clReleaseMemObject(t->d_nterms);
		if (t->d_counts != NULL)
			clReleaseMemObject(t->d_counts);
		free(t->h_pieces);
		free(t->h_fps);
		free(t->h_nterms);
		free(t->h_counts);
		free(t->refs);
		free(t->batches);
	}
	if (c->q_up != NULL)
		clFinish(c->q_up);
	if (c->kernel != NULL)
		clReleaseKernel(c->kernel);
	if (c->program != NULL)
		clReleaseProgram(c->program);
	if (c->q_up != NULL)
		clReleaseCommandQueue(c->q_up);
	if (c->q_run != NULL)
		clReleaseCommandQueue(c->q_run);
	if (c->context != NULL)
		clReleaseContext(c->context);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Reads a whole file; NULL if it cannot. */
static unsigned char *
ocl_read_file(const char *path, size_t *len)
{
	unsigned char *buf = NULL;
	FILE *f;
	long n;

	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) != NULL &&
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	} else if (buf != NULL)
		*len = (size_t)n;
	fclose(f);
	return buf;
}

/* Writes the program's binary for the device to path (via path.tmp). */
static int
ocl_save_binary(struct ocl_ctx *c, const char *path, char *err,
    size_t errlen)
{
	unsigned char *bin = NULL, *bins[1];
	char tmp[300];
	size_t size = 0;
	FILE *f = NULL;
	int ok = 0;

	if (clGetProgramInfo(c->program, CL_PROGRAM_BINARY_SIZES, sizeof(size),
	    &size, NULL) == CL_SUCCESS && size > 0 &&
	    (bin = malloc(size)) != NULL) {
		bins[0] = bin;
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		ok = clGetProgramInfo(c->program, CL_PROGRAM_BINARIES,
		    sizeof(bins), bins, NULL) == CL_SUCCESS &&
		    (f = fopen(tmp, "wb")) != NULL &&
		    fwrite(bin, 1, size, f) == size;
		if (f != NULL && fclose(f) != 0)
			ok = 0;
		if (ok && rename(tmp, path) != 0)
			ok = 0;
		if (!ok)
			remove(tmp);
	}
	free(bin);
	if (!ok) {
		snprintf(err, errlen, "params: save_binary=%s: cannot write the "
		    "program binary", path);
		return -1;
	}
	return 0;
}

/*
 * Makes the program: from the binary the params name (as an FPGA
 * toolchain's offline compiler makes it), or built from the embedded
 * source.  On failure, the reason (with the build log's start) in err.
 */
static int
ocl_build(struct ocl_ctx *c, char *err, size_t errlen)
{
	const char *src = (const char *)opencl_kernel_source;
	size_t len = sizeof(opencl_kernel_source), loglen = 0, n;
	unsigned char *bin = NULL;
	cl_int rc, binrc = CL_SUCCESS;

	if (c->o.binary[0] != '\0') {
		if ((bin = ocl_read_file(c->o.binary, &len)) == NULL) {
			snprintf(err, errlen, "params: binary=%s: cannot read "
			    "it", c->o.binary);
			return -1;
		}
		c->program = clCreateProgramWithBinary(c->context, 1,
		    &c->device, &len, (const unsigned char **)&bin, &binrc,
		    &rc);
		free(bin);
		if (c->program == NULL || binrc != CL_SUCCESS) {
			snprintf(err, errlen, "params: binary=%s: not a program "
			    "for this device: %s", c->o.binary,
			    ocl_strerror(rc != CL_SUCCESS ? rc : binrc));
			return -1;
		}
	} else {
		c->program = clCreateProgramWithSource(c->context, 1, &src,
		    &len, &rc);
		if (c->program == NULL) {
			snprintf(err, errlen, "clCreateProgramWithSource: %s",
			    ocl_strerror(rc));
			return -1;
		}
	}
	rc = clBuildProgram(c->program, 1, &c->device, c->o.binary[0] ? NULL :
	    "-cl-std=CL1.2", NULL, NULL);
	if (rc != CL_SUCCESS) {
		n = (size_t)snprintf(err, errlen, "building the kernel: %s",
		    ocl_strerror(rc));
		clGetProgramBuildInfo(c->program, c->device,
		    CL_PROGRAM_BUILD_LOG, 0, NULL, &loglen);
		if (n + 3 < errlen && loglen > 1) {
			memcpy(err + n, ": ", 2);
			clGetProgramBuildInfo(c->program, c->device,
			    CL_PROGRAM_BUILD_LOG, errlen - n - 2, err + n + 2,
			    NULL);
			err[errlen - 1] = '\0';
		}
		return -1;
	}
	c->kernel = clCreateKernel(c->program, "nddd_simhash", &rc);
	if (c->kernel == NULL) {
		snprintf(err, errlen, "clCreateKernel: %s", ocl_strerror(rc));
		return -1;
	}
	if (c->o.save_binary[0] != '\0' &&
	    ocl_save_binary(c, c->o.save_binary, err, errlen) == -1)
		return -1;
	return 0;
}

static int
ocl_alloc(struct ocl_ctx *c, struct ocl_xfer *t, char *err, size_t errlen)
{
	const size_t P = c->max_pieces;
	cl_int rc = CL_SUCCESS;

	t->d_pieces = clCreateBuffer(c->context, CL_MEM_READ_ONLY,
	    P * 4 * sizeof(cl_uint), NULL, &rc);
	if (rc == CL_SUCCESS)
		t->d_data = clCreateBuffer(c->context, CL_MEM_READ_ONLY,
		    c->o.buffer, NULL, &rc);
	if (rc == CL_SUCCESS)
		t->d_fps = clCreateBuffer(c->context, CL_MEM_WRITE_ONLY,
		    P * sizeof(cl_ulong), NULL, &rc);
	if (rc == CL_SUCCESS)
		t->d_nterms = clCreateBuffer(c->context, CL_MEM_WRITE_ONLY,
		    P * sizeof(cl_uint), NULL, &rc);
	if (rc == CL_SUCCESS)
		t->d_counts = clCreateBuffer(c->context, CL_MEM_WRITE_ONLY,
		    OCL_SLOTS * OCL_COUNTS * sizeof(cl_uint), NULL, &rc);
	/* Pinned host memory, mapped once, for fast uploads. */
	if (rc == CL_SUCCESS)
		t->h_pinned = clCreateBuffer(c->context, CL_MEM_READ_WRITE |
		    CL_MEM_ALLOC_HOST_PTR, c->o.buffer, NULL, &rc);
	if (rc == CL_SUCCESS)
		t->h_data = clEnqueueMapBuffer(c->q_up, t->h_pinned, CL_TRUE,
		    CL_MAP_READ | CL_MAP_WRITE, 0, c->o.buffer, 0, NULL, NULL,
		    &rc);
	if (rc != CL_SUCCESS) {
		snprintf(err, errlen, "allocating 2 x %zu bytes of buffers: %s",
		    c->o.buffer, ocl_strerror(rc));
		return -1;
	}
	t->h_pieces = calloc(P, 4 * sizeof(cl_uint));
	t->h_fps = calloc(P, sizeof(cl_ulong));
	t->h_nterms = calloc(P, sizeof(cl_uint));
	t->h_counts = calloc(OCL_SLOTS * OCL_COUNTS, sizeof(cl_uint));
	t->refs = calloc(P, sizeof(*t->refs));
	t->batches = calloc(P, sizeof(*t->batches));
	if (t->h_pieces == NULL || t->h_fps == NULL || t->h_nterms == NULL ||
	    t->h_counts == NULL || t->refs == NULL || t->batches == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static void *
ocl_init(const struct accel_config *cfg, char *err, size_t errlen)
{
	struct ocl_ctx *c;
	char desc[384];
	size_t wg = 0;
	cl_device_type type = 0;
	struct timespec t0, t1;
	int pi, di;
	cl_int rc;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->cfg = cfg;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (ocl_parse(cfg->params, &c->o, err, errlen) == -1 ||
	    ocl_pick(&c->o, &c->platform, &c->device, &pi, &di, err,
	    errlen) == -1)
		goto err;
	ocl_describe(c->platform, c->device, pi, di, desc, sizeof(desc));
	c->max_pieces = cfg->max_batch_docs > 0 ? cfg->max_batch_docs : 1024;
	if (c->max_pieces < 64)
		c->max_pieces = 64;
	c->context = clCreateContext(NULL, 1, &c->device, NULL, NULL, &rc);
	if (c->context == NULL) {
		snprintf(err, errlen, "clCreateContext: %s", ocl_strerror(rc));
		goto err;
	}
	c->q_up = clCreateCommandQueue(c->context, c->device, 0, &rc);
	if (c->q_up != NULL)
		c->q_run = clCreateCommandQueue(c->context, c->device, 0, &rc);
	if (c->q_run == NULL) {
		snprintf(err, errlen, "clCreateCommandQueue: %s",
		    ocl_strerror(rc));
		goto err;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (ocl_build(c, err, errlen) == -1)
		goto err;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* One work-item per document on a CPU (its cores take the groups),
	 * a group sharing each document on GPUs. */
	clGetDeviceInfo(c->device, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
	clGetKernelWorkGroupInfo(c->kernel, c->device,
	    CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg, NULL);
	c->local = c->o.local > 0 ? c->o.local :
	    (type & CL_DEVICE_TYPE_CPU) ? 1 : OCL_LOCAL_GPU;
	if (wg > 0 && c->local > wg) {
		if (c->o.local > 0) {
			snprintf(err, errlen, "params: local=%zu, but the kernel "
			    "allows work-groups of %zu at most", c->o.local, wg);
			goto err;
		}
		c->local = wg;
	}
	if (ocl_alloc(c, &c->x[0], err, errlen) == -1 ||
	    ocl_alloc(c, &c->x[1], err, errlen) == -1)
		goto err;
	if (pthread_create(&c->thread, NULL, ocl_thread, c) != 0) {
		snprintf(err, errlen, "pthread_create failed");
		goto err;
	}
	c->started = 1;
	ocl_log(c, ACCEL_LOG_INFO, "%s; kernel %s %s in %.2f s; work-groups "
	    "of %zu; 2 transfer buffers of %zu bytes, %zu documents", desc,
	    c->o.binary[0] ? "loaded from" : "built from",
	    c->o.binary[0] ? c->o.binary : "source", (double)(t1.tv_sec -
	    t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9, c->local,
	    c->o.buffer, c->max_pieces);
	return c;
err:
	ocl_fini(c);
	return NULL;
}

static int
ocl_submit(void *arg, struct accel_batch *b)
{
	struct ocl_ctx *c = arg;
	struct ocl_batch *ob;

	if (b->input != ACCEL_INPUT_PREPROCESSED) {
		snprintf(b->error, sizeof(b->error), "opencl takes "
		    "preprocessed documents only");
		return -1;
	}
	if ((ob = calloc(1, sizeof(*ob))) == NULL) {
		snprintf(b->error, sizeof(b->error), "out of memory");
		return -1;
	}
	ob->b = b;
	b->backend_data = ob;
	pthread_mutex_lock(&c->lock);
	ob->seq = ++c->nsubmit;
	if (c->tail != NULL)
		c->tail->next = ob;
	else
		c->head = ob;
	c->tail = ob;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

const struct accel_backend nddd_accel_backend = {
	ACCEL_BACKEND_HEADER,
	.name = "opencl",
	.description = "simhash kernel on an OpenCL device",
	.flags = 0,
	.inputs = ACCEL_INPUT_PREPROCESSED,
	.probe = ocl_probe,
	.init = ocl_init,
	.submit = ocl_submit,
	.fini = ocl_fini,
};
