/*
 * accel_abi: the interface between nddd and its accelerator backends.
 *
 * This header is self-contained (it needs only the C library's stddef.h and
 * stdint.h): a backend plugin is built against it alone and links none of
 * nddd.  The fingerprint a backend computes is defined in docs/simhash.md
 * (DESIGN section 4); every backend must give the same 64 bits as the
 * built-in cpu backend.
 *
 * A backend is one table of operations, struct accel_backend.  The cpu
 * backend is compiled into nddd.  Any other is a shared object
 * nddd-accel-NAME.so in the configured plugin directory (a regular file
 * that only root or nddd's user may write; accel.h) that exports the
 * table as the data symbol named by ACCEL_ENTRY:
 *
 *	#include "accel_abi.h"
 *
 *	const struct accel_backend nddd_accel_backend = {
 *		ACCEL_BACKEND_HEADER,
 *		.name = "opencl",
 *		.description = "OpenCL kernel on any OpenCL device",
 *		.inputs = ACCEL_INPUT_PREPROCESSED,
 *		.probe = my_probe,
 *		.init = my_init,
 *		.submit = my_submit,
 *		.fini = my_fini,
 *	};
 *
 * Versions.  The table starts with abi_version and size (that is
 * ACCEL_BACKEND_HEADER), in every version of this interface.  nddd refuses
 * a table whose abi_version is not its own ACCEL_ABI_VERSION, without
 * reading further; ACCEL_ABI_VERSION changes whenever a structure or a rule
 * below changes incompatibly.
 *
 * Life cycle.  probe (may be called before init, and when nddd chooses a
 * backend by itself), then init, then any number of submit, then fini.
 * nddd calls fini only when no batch is in flight.
 *
 * Batches.  submit hands over a batch of documents and must not block on
 * the work: it returns at once, the backend computes in its own threads or
 * on its device, and then calls host->complete(batch, host->arg) exactly
 * once, from any thread, after writing every document's fingerprint and
 * status.  From that call on, the batch is nddd's again.  nddd never calls
 * submit from two threads at once, but may call it from any thread.
 *
 * Failure.  A backend that cannot finish a batch (a device error, a lost
 * device) sets batch->status to ACCEL_BATCH_FAILED, says why in
 * batch->error, and completes it: nddd then computes the whole batch on the
 * cpu, so no reply is lost.  Document outputs of a failed batch are
 * ignored.  submit returning -1 means the batch was not taken (the same
 * remedy applies; complete must then not be called).  After a number of
 * failures in a row nddd stops using the backend.
 *
 * Inputs.  Every backend takes ACCEL_INPUT_PREPROCESSED: terms separated by
 * SPACE bytes (one or more), every other byte part of a term, taken as it
 * is (stop words are already removed, letters already folded).  A backend
 * may also take raw documents (ACCEL_INPUT_TEXT, ACCEL_INPUT_HTML) and
 * preprocess them itself, if it gives the same bits; config->stopwords has
 * the stop words for that.
 *
 * Devices.  A backend that needs hardware that is absent says so from
 * probe (ACCEL_PROBE_ABSENT and the reason): nddd then skips it with that
 * reason in its log.  It never pretends.  A backend that models hardware in
 * software (a simulation) sets ACCEL_F_SIMULATION: nddd reports it in its
 * log and statistics, and never chooses it by itself.
 */
#ifndef NDDD_ACCEL_ABI_H
#define NDDD_ACCEL_ABI_H

#include <stddef.h>
#include <stdint.h>

/* The interface version this header describes. */
#define ACCEL_ABI_VERSION 1

/* The name of the symbol a plugin exports: its struct accel_backend. */
#define ACCEL_ENTRY "nddd_accel_backend"

/* The first members of every struct accel_backend. */
#define ACCEL_BACKEND_HEADER \
	.abi_version = ACCEL_ABI_VERSION, .size = sizeof(struct accel_backend)

/* Backend flags. */
#define ACCEL_F_SIMULATION	0x1	/* models hardware in software */

/* Document formats (struct accel_batch.input; inputs is a mask of them). */
#define ACCEL_INPUT_PREPROCESSED 0x1	/* terms separated by SPACE */
#define ACCEL_INPUT_TEXT	0x2	/* raw plain text */
#define ACCEL_INPUT_HTML	0x4	/* raw HTML */

/* Term hashes (struct accel_config.term_hash). */
#define ACCEL_TERM_HASH_SDBM_FMIX64 0	/* sdbm, then MurmurHash3 fmix64 */
#define ACCEL_TERM_HASH_SDBM	1	/* sdbm alone (the paper's) */

/* What probe found. */
#define ACCEL_PROBE_ABSENT	(-1)	/* cannot run here: skip it */
#define ACCEL_PROBE_USABLE	0	/* runs, but choose it only by name */
#define ACCEL_PROBE_DEVICE	1	/* an accelerator is there: may be chosen */

/* Document and batch outcomes. */
#define ACCEL_DOC_OK		0	/* fingerprint set */
#define ACCEL_DOC_EMPTY		1	/* no term: EMPTY_DOCUMENT */
#define ACCEL_BATCH_OK		0
#define ACCEL_BATCH_FAILED	(-1)	/* redo it elsewhere; see error */

/* Log levels for accel_host.log (syslog priorities). */
#define ACCEL_LOG_ERR		3
#define ACCEL_LOG_WARNING	4
#define ACCEL_LOG_INFO		6
#define ACCEL_LOG_DEBUG		7

struct accel_batch;

/* What nddd offers a backend. */
struct accel_host {
	void *arg;
	/* Hands a finished (or failed) batch back; any thread, once. */
	void (*complete)(struct accel_batch *batch, void *arg);
	/* Logs a line through nddd (any thread). */
	void (*log)(void *arg, int level, const char *msg);
};

/* How nddd wants a backend to run. */
struct accel_config {
	uint32_t abi_version;		/* ACCEL_ABI_VERSION */
	uint32_t term_hash;		/* ACCEL_TERM_HASH_* */
	uint32_t threads;		/* host threads it may use; 0: its choice */
	uint32_t max_batch_docs;	/* no batch has more documents */
	/* [accel] params from the configuration, verbatim ("" if none). */
	const char *params;
	/* Stop words, lower case, NULL-terminated (for raw inputs). */
	const char *const *stopwords;
	const struct accel_host *host;
};

/* One document of a batch. */
struct accel_doc {
	const uint8_t *data;		/* in; not NUL-terminated */
	size_t len;			/* in */
	uint64_t fingerprint;		/* out, when status is ACCEL_DOC_OK */
	int32_t status;			/* out: ACCEL_DOC_OK or ACCEL_DOC_EMPTY */
	uint32_t reserved;
};

/* Documents handed over together. */
struct accel_batch {
	uint32_t input;			/* in: one ACCEL_INPUT_* the backend takes */
	uint32_t ndocs;			/* in */
	struct accel_doc *docs;		/* in and out */
	int32_t status;			/* out: ACCEL_BATCH_OK or _FAILED */
	char error[128];		/* out: why it failed, NUL-terminated */
	void *backend_data;		/* the backend's while it holds the batch */
};

/* A backend: the table a plugin exports as ACCEL_ENTRY. */
struct accel_backend {
	uint32_t abi_version;		/* ACCEL_ABI_VERSION it was built with */
	uint32_t size;			/* sizeof(struct accel_backend) */
	const char *name;		/* as in "accelerator = NAME" */
	const char *description;	/* one line, for logs */
	uint32_t flags;			/* ACCEL_F_* */
	uint32_t inputs;		/* ACCEL_INPUT_* it takes */

	/*
	 * Whether it can run here: ACCEL_PROBE_DEVICE, _USABLE or _ABSENT,
	 * with a line in msg (the device found, or why not).  Must not keep
	 * anything; may be called without init.
	 */
	int (*probe)(const struct accel_config *config, char *msg,
	    size_t msglen);
	/*
	 * Starts the backend.  Returns its context, or NULL with the reason in
	 * err.  config and what it points to stay valid until fini.
	 */
	void *(*init)(const struct accel_config *config, char *err,
	    size_t errlen);
	/*
	 * Takes a batch (see above).  Returns 0, or -1 if it was not taken,
	 * with the reason in batch->error.
	 */
	int (*submit)(void *ctx, struct accel_batch *batch);
	/* Stops the backend and frees ctx; no batch is in flight. */
	void (*fini)(void *ctx);
};

#endif
