/*
 * accel: computes simhash fingerprints of documents on an accelerator
 * backend (accel_abi.h) and hands the results back to the event loop.
 *
 * The daemon makes one struct accel at start-up, from its [accel] options,
 * on its event base.  It then submits jobs (documents of one input format)
 * from the loop; each job's done callback runs later in the loop thread,
 * with every document's fingerprint or EMPTY_DOCUMENT.  Nothing blocks the
 * loop: backends work in their own threads and complete through a mailbox
 * (mailbox.h).
 *
 * Backends.  "cpu" is built in and always started: it is the fallback.
 * The plugin NAME is the file nddd-accel-NAME.so (ACCEL_PLUGIN_PREFIX,
 * NAME, ACCEL_PLUGIN_SUFFIX) in the plugin directory.  "auto" takes the
 * first plugin there (by file name) whose probe finds an accelerator
 * device and that is not a simulation, or else cpu; files not named as
 * plugins are left alone.  Any other name loads that plugin.  A plugin
 * that cannot start (no such file, no entry symbol, another ABI version,
 * no device, init error) is logged with the reason, and cpu is used
 * instead.  A batch a plugin fails or refuses is redone on cpu, so no
 * document goes unanswered; after max_failures failed batches in a row the
 * plugin is dropped for cpu.
 *
 * Plugin files are checked before they are loaded: the directory and the
 * file must be owned by root or by the process's effective user and
 * writable by neither group nor others, and the file must be a regular
 * file (a symbolic link is refused).  "auto" skips a plugin that fails,
 * and every plugin of a directory that fails, with a warning; a named
 * plugin that fails makes accel_new fail.
 *
 * Threads: accel_new, accel_submit, accel_free and the job functions in the
 * loop thread; done callbacks run there too.  The inline engine and the
 * statistics from any thread.
 */
#ifndef NDDD_ACCEL_H
#define NDDD_ACCEL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "accel_abi.h"
#include "simhash.h"

struct event_base;
struct stopwords;

/* A plugin's file name: prefix, backend name, suffix. */
#define ACCEL_PLUGIN_PREFIX	"nddd-accel-"
#define ACCEL_PLUGIN_SUFFIX	".so"

/* The built-in backend (accel/cpu/cpu.c). */
extern const struct accel_backend accel_cpu_backend;

/* The [accel] options; see accel_options_defaults for the defaults. */
struct accel_options {
	char accelerator[64];		/* auto | cpu | NAME */
	char plugin_dir[PATH_MAX];	/* where the plugins are; "": none */
	char params[256];		/* handed to the plugin verbatim */
	unsigned threads;		/* cpu workers; 0: one per online CPU */
	unsigned batch_docs;		/* documents per backend batch, at most */
	unsigned max_failures;		/* failed batches in a row, then cpu */
};

/* Sets every option to its default. */
void accel_options_defaults(struct accel_options *opts);

/* What an accel has done, for logs and statistics. */
struct accel_stats {
	char backend[64];		/* the backend in use now */
	int simulation;			/* it models hardware in software */
	int dropped;			/* the plugin failed too often: cpu now */
	char fallback[256];		/* why the configured one is not used */
	uint64_t jobs;
	uint64_t docs;
	uint64_t bytes;
	uint64_t batches;		/* batches given to a backend */
	uint64_t batches_failed;	/* ... that a plugin failed or refused */
	uint64_t batches_cpu;		/* of them computed on cpu (all when cpu
					   is in use; else the redone ones) */
};

struct accel;
struct accel_job;

/* Called in the loop thread when every document of the job is done. */
typedef void (*accel_done_fn)(struct accel_job *job, void *arg);

/*
 * Starts the backends the options ask for, fingerprinting with the term
 * hash th and the stop words sw (NULL: none; must outlive the accel).
 * Falls back to cpu as described above, logging why.  Returns NULL with
 * *cause set (the caller frees it) only when cpu itself cannot start, or
 * when the plugin the options name was refused by the checks of its file.
 */
struct accel *accel_new(struct event_base *base,
    const struct accel_options *opts, enum simhash_term_hash th,
    const struct stopwords *sw, char **cause);
/*
 * Waits for the jobs in flight, runs their done callbacks (in the calling
 * thread), stops the backends and frees the accel.  NULL is ignored.
 */
void accel_free(struct accel *acc);

/* The backend in use ("cpu" when fallen back). */
const char *accel_backend_name(const struct accel *acc);
/* Fills *st. */
void accel_stats(const struct accel *acc, struct accel_stats *st);

/*
 * Any thread: the engine, when the backend in use is cpu, so that a caller
 * holding documents on a thread of its own computes them there, with a
 * scratch of its own: the cpu backend's pool would cost two hand-overs
 * between threads and a copy of each body to keep it alive in between,
 * which take longer than fingerprinting a page.  NULL while a plugin is in
 * use: documents then go through accel_submit.  A caller that computes
 * inline counts what it did with accel_count_inline, so the statistics
 * stay whole.
 */
const struct simhash *accel_inline_engine(const struct accel *acc);
/* The cpu backend's engine, whatever the backend: its settings (term
 * hash, stop words) are every backend's.  Any thread. */
const struct simhash *accel_engine(const struct accel *acc);
/* Any thread: docs documents of bytes in all, computed inline as one
 * batch. */
void accel_count_inline(struct accel *acc, size_t docs, size_t bytes);

/*
 * A job of ndocs documents of one format.  Returns NULL when out of
 * memory.  The caller sets each document with accel_job_set and frees the
 * job (after done was called, or if it was never submitted).
 */
struct accel_job *accel_job_new(size_t ndocs, enum simhash_input input);
void accel_job_free(struct accel_job *job);
/*
 * Document i: data is not copied, and must stay valid until the job's done
 * callback has run.
 */
void accel_job_set(struct accel_job *job, size_t i, const void *data,
    size_t len);
size_t accel_job_ndocs(const struct accel_job *job);
/*
 * The outcome for document i, once done was called: SIMHASH_OK with *fp,
 * or SIMHASH_EMPTY_DOCUMENT.
 */
enum simhash_status accel_job_result(const struct accel_job *job, size_t i,
    uint64_t *fp);

/*
 * Starts a job; done(job, arg) runs in the loop thread when it is finished
 * (also for a job of no documents).  Returns 0, or -1 with errno ENOMEM
 * when the job cannot be set up (done is then not called).
 */
int accel_submit(struct accel *acc, struct accel_job *job, accel_done_fn done,
    void *arg);

#endif
