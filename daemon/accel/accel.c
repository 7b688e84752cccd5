/*
 * accel: jobs on accelerator backends, results back to the event loop.
 * See accel.h for the behaviour and accel_abi.h for the backend interface.
 *
 * A job is cut into batches of at most batch_docs documents.  Each batch
 * goes to the plugin in use (after preprocessing in our own worker threads
 * if the plugin takes only preprocessed text), or to cpu.  Backends call
 * accel_complete from their threads; a failed batch is resubmitted to cpu
 * from there.  When a job's last batch is done, the job is posted to the
 * mailbox and its done callback runs in the loop.
 *
 * Locking and ownership:
 *  - a job and its batches belong to the accel from accel_submit until the
 *    job is posted; a batch is touched by one thread at a time (the one
 *    that submitted it, then the backend, then the one that completes it);
 *  - job->pending and the counters in struct accel_counters are atomics;
 *  - acc->lock guards jobs_in_flight (accel_free waits on acc->idle);
 *  - acc->submit_lock serialises calls into the plugin's submit, as the
 *    ABI promises.
 */
#include "accel.h"

#include <sys/stat.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "mailbox.h"
#include "stopwords.h"
#include "workq.h"

struct accel_backend_run {
	const struct accel_backend *be;
	void *dl;			/* dlopen handle; NULL for cpu */
	void *ctx;
	struct accel_config cfg;
	struct accel_host host;
	char probe_msg[256];
};

struct accel_counters {
	uint64_t jobs, docs, bytes, batches, failed, cpu;
};

struct accel {
	struct mailbox *mb;
	struct accel_backend_run cpu;
	struct accel_backend_run plugin;	/* be == NULL: none */
	int dropped;				/* atomic: plugin given up */
	unsigned failures;			/* atomic: failed in a row */
	unsigned max_failures;
	unsigned batch_docs;
	struct accel_counters n;		/* atomics */
	char fallback[256];
	const char *const *stoplist;
	const char *empty_stoplist[1];
	/* For plugins that take preprocessed text only. */
	struct simhash *engine;
	struct workq *prep;
	pthread_mutex_t submit_lock;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned jobs_in_flight;
};

struct accel_hbatch {
	struct accel_batch b;
	struct accel *acc;
	struct accel_job *job;
	uint32_t first;			/* its first document in the job */
	int on_cpu;
	struct accel_doc *prep;		/* preprocessed copies, or NULL */
	struct workq_item item;
};

struct accel_job {
	struct mailbox_msg msg;
	enum simhash_input input;
	size_t ndocs;
	struct accel_doc *docs;
	accel_done_fn done;
	void *arg;
	unsigned pending;		/* batches not done; atomic */
	size_t nbatches;
	struct accel_hbatch *hb;
};

static void accel_complete(struct accel_batch *b, void *arg);

void
accel_options_defaults(struct accel_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	/* A device when one is there, the cpu otherwise. */
	snprintf(opts->accelerator, sizeof(opts->accelerator), "auto");
	/* No plugins unless a directory is given. */
	opts->plugin_dir[0] = '\0';
	opts->params[0] = '\0';
	/* One worker per CPU: fingerprinting is CPU-bound. */
	opts->threads = 0;
	/* Big enough to keep a device busy, small enough to spread. */
	opts->batch_docs = 1024;
	/* A flaky device gets a few chances before cpu takes over for good. */
	opts->max_failures = 3;
}

static uint32_t
accel_input_flag(enum simhash_input in)
{
	switch (in) {
	case SIMHASH_INPUT_TEXT:
		return ACCEL_INPUT_TEXT;
	case SIMHASH_INPUT_HTML:
		return ACCEL_INPUT_HTML;
	case SIMHASH_INPUT_PREPROCESSED:
		break;
	}
	return ACCEL_INPUT_PREPROCESSED;
}

/* A backend's log line. */
static void
accel_log(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level <= ACCEL_LOG_WARNING)
		log_warnx("accel backend: %s", msg);
	else if (level <= ACCEL_LOG_INFO)
		log_info("accel backend: %s", msg);
	else
		log_debug("accel backend: %s", msg);
}

static void
accel_config_init(struct accel *acc, struct accel_backend_run *r,
    const struct accel_options *opts, enum simhash_term_hash th,
    const char *params)
{
	r->cfg.abi_version = ACCEL_ABI_VERSION;
	r->cfg.term_hash = th == SIMHASH_TERM_HASH_SDBM ?
	    ACCEL_TERM_HASH_SDBM : ACCEL_TERM_HASH_SDBM_FMIX64;
	r->cfg.threads = opts->threads;
	r->cfg.max_batch_docs = acc->batch_docs;
	r->cfg.params = params;
	r->cfg.stopwords = acc->stoplist;
	r->cfg.host = &r->host;
	r->host.arg = acc;
	r->host.complete = accel_complete;
	r->host.log = accel_log;
}

static void
accel_unload(struct accel_backend_run *r)
{
	if (r->ctx != NULL)
		r->be->fini(r->ctx);
	if (r->dl != NULL)
		dlclose(r->dl);
	r->ctx = NULL;
	r->dl = NULL;
	r->be = NULL;
}

/*
 * Plugin files.  A plugin runs inside the process with all its rights, so
 * only what no one but root and this process's own user could have put
 * there is loaded: the plugin directory and the plugin must be owned by
 * root or by the effective user and writable by neither group nor others,
 * and the plugin must be a regular file.  A symbolic link is refused, not
 * followed: what is checked is then the very file dlopen maps, since no
 * one else may write the directory to put another in its place between the
 * check and the load.  (plugin_dir itself may be reached through links;
 * the directories above it are the operator's to protect, as for every
 * path of the configuration.)  A file that fails is refused: under "auto"
 * it is skipped, saying why; named as the accelerator, accel_new fails.
 */
#define ACCEL_REFUSED	(-2)

/* Whether an owner and a mode may be trusted; if not, why, in why. */
static int
accel_trusted(const struct stat *sb, const char *path, char *why,
    size_t whylen)
{
	uid_t me = geteuid();

	if (sb->st_uid != 0 && sb->st_uid != me) {
		snprintf(why, whylen, "%s is owned by uid %u, neither root nor "
		    "this process's user (uid %u)", path, (unsigned)sb->st_uid,
		    (unsigned)me);
		return -1;
	}
	if (sb->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen, "%s is writable by %s (mode %04o)", path,
		    (sb->st_mode & S_IWOTH) ? "others" : "its group",
		    (unsigned)(sb->st_mode & 07777));
		return -1;
	}
	return 0;
}

/*
 * Opens the plugin directory.  Returns its descriptor, or -1 (it cannot be
 * opened) or ACCEL_REFUSED (it may not be trusted) with the reason in why.
 */
static int
accel_dir_open(const char *dir, char *why, size_t whylen)
{
	struct stat sb;
	int fd;

	if (dir[0] == '\0') {
		snprintf(why, whylen, "no plugin directory is configured");
		return -1;
	}
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &sb) == -1) {
		snprintf(why, whylen, "plugin directory %s: %s", dir,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (accel_trusted(&sb, dir, why, whylen) == -1) {
		close(fd);
		return ACCEL_REFUSED;
	}
	return fd;
}

/*
 * Loads the plugin name from the directory dir, open as dfd, and checks
 * its file and its table.  Returns 0, or -1 (it cannot be used) or
 * ACCEL_REFUSED (its file may not be trusted) with the reason in why.
 */
static int
accel_load(struct accel_backend_run *r, int dfd, const char *dir,
    const char *name, char *why, size_t whylen)
{
	const struct accel_backend *be;
	char path[PATH_MAX + NAME_MAX + 2], file[NAME_MAX + 1];
	struct stat sb;
	void *dl;

	if (strchr(name, '/') != NULL || name[0] == '.' ||
	    (size_t)snprintf(file, sizeof(file), "%s%s%s", ACCEL_PLUGIN_PREFIX,
	    name, ACCEL_PLUGIN_SUFFIX) >= sizeof(file)) {
		snprintf(why, whylen, "\"%s\" is not a backend name", name);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (fstatat(dfd, file, &sb, AT_SYMLINK_NOFOLLOW) == -1) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISLNK(sb.st_mode)) {
		snprintf(why, whylen, "%s is a symbolic link (plugins are "
		    "loaded from regular files only: install the file itself)",
		    path);
		return ACCEL_REFUSED;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(why, whylen, "%s is not a regular file", path);
		return ACCEL_REFUSED;
	}
	if (accel_trusted(&sb, path, why, whylen) == -1)
		return ACCEL_REFUSED;
	if ((dl = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(why, whylen, "%s", dlerror());
		return -1;
	}
	if ((be = dlsym(dl, ACCEL_ENTRY)) == NULL) {
		snprintf(why, whylen, "%s: no symbol %s: not an nddd "
		    "accelerator plugin", path, ACCEL_ENTRY);
		goto err;
	}
	/* Only the first member may be read before the version is known. */
	if (be->abi_version != ACCEL_ABI_VERSION) {
		snprintf(why, whylen, "%s: built for accelerator ABI version "
		    "%u, this nddd speaks version %u", path, be->abi_version,
		    ACCEL_ABI_VERSION);
		goto err;
	}
	if (be->size < sizeof(*be) || be->name == NULL || be->probe == NULL ||
	    be->init == NULL || be->submit == NULL || be->fini == NULL ||
	    !(be->inputs & ACCEL_INPUT_PREPROCESSED)) {
		snprintf(why, whylen, "%s: incomplete backend table", path);
		goto err;
	}
	if (strcmp(be->name, name) != 0) {
		snprintf(why, whylen, "%s: the backend calls itself \"%s\"",
		    path, be->name);
		goto err;
	}
	r->be = be;
	r->dl = dl;
	return 0;
err:
	dlclose(dl);
	return -1;
}

/*
 * Probes and starts a loaded backend.  want_device: only a device counts
 * (auto).  Returns 0, or -1 with the reason in why.
 */
static int
accel_start(struct accel_backend_run *r, int want_device, char *why,
    size_t whylen)
{
	char err[256] = "";
	int rc;

	rc = r->be->probe(&r->cfg, r->probe_msg, sizeof(r->probe_msg));
	if (rc == ACCEL_PROBE_ABSENT) {
		snprintf(why, whylen, "%s cannot run here: %s", r->be->name,
		    r->probe_msg);
		return -1;
	}
	if (want_device && rc != ACCEL_PROBE_DEVICE) {
		snprintf(why, whylen, "%s: no accelerator device (%s)",
		    r->be->name, r->probe_msg);
		return -1;
	}
	if (want_device && (r->be->flags & ACCEL_F_SIMULATION)) {
		snprintf(why, whylen, "%s: a simulation, chosen only by name "
		    "(%s)", r->be->name, r->probe_msg);
		return -1;
	}
	if ((r->ctx = r->be->init(&r->cfg, err, sizeof(err))) == NULL) {
		snprintf(why, whylen, "%s: init failed: %s", r->be->name,
		    err[0] != '\0' ? err : "no reason given");
		return -1;
	}
	return 0;
}

static int
accel_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * "auto": the first plugin with a device, by file name.  Only files named
 * as plugins are looked at: a directory of shared objects may hold others,
 * whose constructors must not run in nddd.
 */
static void
accel_auto(struct accel *acc, const struct accel_options *opts,
    enum simhash_term_hash th)
{
	const size_t plen = strlen(ACCEL_PLUGIN_PREFIX);
	const size_t slen = strlen(ACCEL_PLUGIN_SUFFIX);
	char **names = NULL, why[PATH_MAX + 512];
	size_t n = 0, i, len;
	struct dirent *de;
	DIR *d = NULL;
	int dfd, lfd;

	if (opts->plugin_dir[0] == '\0')
		return;
	if ((dfd = accel_dir_open(opts->plugin_dir, why, sizeof(why))) < 0) {
		if (dfd == ACCEL_REFUSED)
			log_warnx("%s: refusing the plugin directory: %s; no "
			    "plugin is loaded", __func__, why);
		else
			log_info("%s: %s", __func__, why);
		return;
	}
	if ((lfd = dup(dfd)) == -1 || (d = fdopendir(lfd)) == NULL) {
		log_warn("%s: plugin directory %s", __func__, opts->plugin_dir);
		if (lfd != -1)
			close(lfd);
		close(dfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		char **nn;

		len = strlen(de->d_name);
		if (len <= slen || strcmp(de->d_name + len - slen,
		    ACCEL_PLUGIN_SUFFIX) != 0 || de->d_name[0] == '.')
			continue;
		if (len <= plen + slen || strncmp(de->d_name,
		    ACCEL_PLUGIN_PREFIX, plen) != 0) {
			log_info("%s: ignoring %s/%s: plugins are named "
			    "%sNAME%s", __func__, opts->plugin_dir, de->d_name,
			    ACCEL_PLUGIN_PREFIX, ACCEL_PLUGIN_SUFFIX);
			continue;
		}
		if ((nn = realloc(names, (n + 1) * sizeof(*names))) == NULL)
			break;
		names = nn;
		if ((names[n] = strndup(de->d_name + plen,
		    len - plen - slen)) == NULL)
			break;
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), accel_name_cmp);
	for (i = 0; i < n && acc->plugin.be == NULL; i++) {
		int rc = accel_load(&acc->plugin, dfd, opts->plugin_dir,
		    names[i], why, sizeof(why));

		if (rc == ACCEL_REFUSED) {
			log_warnx("%s: refusing %s: %s", __func__, names[i],
			    why);
			continue;
		}
		if (rc == -1) {
			log_info("%s: skipping %s: %s", __func__, names[i], why);
			continue;
		}
		accel_config_init(acc, &acc->plugin, opts, th, opts->params);
		if (accel_start(&acc->plugin, 1, why, sizeof(why)) == -1) {
			log_info("%s: skipping %s", __func__, why);
			accel_unload(&acc->plugin);
		}
	}
	close(dfd);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * The plugin named by the configuration.  Returns 0 (started, or cpu with
 * the reason kept in acc->fallback), or -1 when its directory or file was
 * refused, with *cause set.
 */
static int
accel_named(struct accel *acc, const struct accel_options *opts,
    enum simhash_term_hash th, char **cause)
{
	char why[PATH_MAX + 512] = "";
	int dfd, rc = -1;

	if ((dfd = accel_dir_open(opts->plugin_dir, why, sizeof(why))) >= 0) {
		rc = accel_load(&acc->plugin, dfd, opts->plugin_dir,
		    opts->accelerator, why, sizeof(why));
		close(dfd);
	} else
		rc = dfd;
	if (rc == ACCEL_REFUSED) {
		if (asprintf(cause, "refusing to load the plugin \"%s\": %s",
		    opts->accelerator, why) == -1)
			*cause = NULL;
		return -1;
	}
	if (rc == 0) {
		accel_config_init(acc, &acc->plugin, opts, th, opts->params);
		if (accel_start(&acc->plugin, 0, why, sizeof(why)) == -1)
			accel_unload(&acc->plugin);
	}
	if (acc->plugin.be == NULL) {
		snprintf(acc->fallback, sizeof(acc->fallback), "%.255s", why);
		log_warnx("%s: accelerator %s cannot start (%s); using cpu",
		    __func__, opts->accelerator, why);
	}
	return 0;
}

static void
accel_deliver(struct mailbox_msg *msg, void *arg)
{
	struct accel_job *job = MAILBOX_CONTAINER(msg, struct accel_job, msg);

	(void)arg;
	job->done(job, job->arg);
}

static void *
accel_prep_tls_new(void *arg)
{
	(void)arg;
	return simhash_scratch_new();
}

static void
accel_prep_tls_free(void *tls)
{
	simhash_scratch_free(tls);
}

struct accel *
accel_new(struct event_base *base, const struct accel_options *opts,
    enum simhash_term_hash th, const struct stopwords *sw, char **cause)
{
	struct accel *acc;
	char err[256] = "";
	int want_plugin;

	if ((acc = calloc(1, sizeof(*acc))) == NULL) {
		*cause = strdup(strerror(ENOMEM));
		return NULL;
	}
	pthread_mutex_init(&acc->submit_lock, NULL);
	pthread_mutex_init(&acc->lock, NULL);
	pthread_cond_init(&acc->idle, NULL);
	acc->batch_docs = opts->batch_docs > 0 ? opts->batch_docs : 1024;
	acc->max_failures = opts->max_failures > 0 ? opts->max_failures : 1;
	acc->empty_stoplist[0] = NULL;
	acc->stoplist = sw != NULL ? stopwords_list(sw) : acc->empty_stoplist;
	if ((acc->mb = mailbox_new(base, accel_deliver, acc)) == NULL) {
		if (asprintf(cause, "mailbox: %s", strerror(errno)) == -1)
			*cause = NULL;
		goto err;
	}
	if ((acc->engine = simhash_new(th, sw, cause)) == NULL)
		goto err;
	/* cpu always runs: the fallback. */
	acc->cpu.be = &accel_cpu_backend;
	accel_config_init(acc, &acc->cpu, opts, th, "");
	accel_cpu_backend.probe(&acc->cpu.cfg, acc->cpu.probe_msg,
	    sizeof(acc->cpu.probe_msg));
	if ((acc->cpu.ctx = accel_cpu_backend.init(&acc->cpu.cfg, err,
	    sizeof(err))) == NULL) {
		if (asprintf(cause, "cpu backend: %s", err) == -1)
			*cause = NULL;
		goto err;
	}
	want_plugin = strcmp(opts->accelerator, "cpu") != 0;
	if (want_plugin && strcmp(opts->accelerator, "auto") == 0) {
		accel_auto(acc, opts, th);
		if (acc->plugin.be == NULL)
			log_info("%s: auto: no accelerator device found; using "
			    "cpu", __func__);
	} else if (want_plugin && accel_named(acc, opts, th, cause) == -1)
		goto err;
	if (acc->plugin.be != NULL) {
		log_info("%s: using %s (%s): %s%s", __func__,
		    acc->plugin.be->name, acc->plugin.be->description != NULL ?
		    acc->plugin.be->description : "", acc->plugin.probe_msg,
		    (acc->plugin.be->flags & ACCEL_F_SIMULATION) ?
		    "; a simulation, not hardware" : "");
		if ((acc->plugin.be->inputs & (ACCEL_INPUT_TEXT |
		    ACCEL_INPUT_HTML)) != (ACCEL_INPUT_TEXT | ACCEL_INPUT_HTML)) {
			acc->prep = workq_new(opts->threads, accel_prep_tls_new,
			    accel_prep_tls_free, NULL, cause);
			if (acc->prep == NULL)
				goto err;
		}
	} else
		log_info("%s: using cpu: %s", __func__, acc->cpu.probe_msg);
	return acc;
err:
	accel_free(acc);
	return NULL;
}

void
accel_free(struct accel *acc)
{
	if (acc == NULL)
		return;
	pthread_mutex_lock(&acc->lock);
	while (acc->jobs_in_flight > 0)
		pthread_cond_wait(&acc->idle, &acc->lock);
	pthread_mutex_unlock(&acc->lock);
	if (acc->mb != NULL)
		mailbox_drain(acc->mb);
	workq_free(acc->prep);
	if (acc->plugin.be != NULL)
		accel_unload(&acc->plugin);
	if (acc->cpu.ctx != NULL)
		accel_cpu_backend.fini(acc->cpu.ctx);
	simhash_free(acc->engine);
	mailbox_free(acc->mb);
	pthread_cond_destroy(&acc->idle);
	pthread_mutex_destroy(&acc->lock);
	pthread_mutex_destroy(&acc->submit_lock);
	free(acc);
}

static int
accel_use_plugin(const struct accel *acc)
{
	return acc->plugin.be != NULL &&
	    !__atomic_load_n(&acc->dropped, __ATOMIC_ACQUIRE);
}

const char *
accel_backend_name(const struct accel *acc)
{
	return accel_use_plugin(acc) ? acc->plugin.be->name : "cpu";
}

const struct simhash *
accel_inline_engine(const struct accel *acc)
{
	return accel_use_plugin(acc) ? NULL : acc->engine;
}

const struct simhash *
accel_engine(const struct accel *acc)
{
	return acc->engine;
}

void
accel_count_inline(struct accel *acc, size_t docs, size_t bytes)
{
	__atomic_add_fetch(&acc->n.jobs, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&acc->n.docs, docs, __ATOMIC_RELAXED);
	__atomic_add_fetch(&acc->n.bytes, bytes, __ATOMIC_RELAXED);
	__atomic_add_fetch(&acc->n.batches, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&acc->n.cpu, 1, __ATOMIC_RELAXED);
}

void
accel_stats(const struct accel *acc, struct accel_stats *st)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->backend, sizeof(st->backend), "%s",
	    accel_backend_name(acc));
	st->simulation = accel_use_plugin(acc) &&
	    (acc->plugin.be->flags & ACCEL_F_SIMULATION);
	st->dropped = __atomic_load_n(&acc->dropped, __ATOMIC_ACQUIRE);
	snprintf(st->fallback, sizeof(st->fallback), "%s", acc->fallback);
	st->jobs = __atomic_load_n(&acc->n.jobs, __ATOMIC_RELAXED);
	st->docs = __atomic_load_n(&acc->n.docs, __ATOMIC_RELAXED);
	st->bytes = __atomic_load_n(&acc->n.bytes, __ATOMIC_RELAXED);
	st->batches = __atomic_load_n(&acc->n.batches, __ATOMIC_RELAXED);
	st->batches_failed = __atomic_load_n(&acc->n.failed, __ATOMIC_RELAXED);
	st->batches_cpu = __atomic_load_n(&acc->n.cpu, __ATOMIC_RELAXED);
}

struct accel_job *
accel_job_new(size_t ndocs, enum simhash_input input)
{
	struct accel_job *job;

	if ((job = calloc(1, sizeof(*job))) == NULL)
		return NULL;
	if ((job->docs = calloc(ndocs > 0 ? ndocs : 1,
	    sizeof(*job->docs))) == NULL) {
		free(job);
		return NULL;
	}
	job->ndocs = ndocs;
	job->input = input;
	return job;
}

static void
accel_prep_free(struct accel_hbatch *hb)
{
	uint32_t i;

	if (hb->prep == NULL)
		return;
	for (i = 0; i < hb->b.ndocs; i++)
		free((void *)hb->prep[i].data);
	free(hb->prep);
	hb->prep = NULL;
}

void
accel_job_free(struct accel_job *job)
{
	size_t i;

	if (job == NULL)
		return;
	for (i = 0; i < job->nbatches; i++)
		accel_prep_free(&job->hb[i]);
	free(job->hb);
	free(job->docs);
	free(job);
}

void
accel_job_set(struct accel_job *job, size_t i, const void *data,
    size_t len)
{
	job->docs[i].data = data;
	job->docs[i].len = len;
}

size_t
accel_job_ndocs(const struct accel_job *job)
{
	return job->ndocs;
}

enum simhash_status
accel_job_result(const struct accel_job *job, size_t i, uint64_t *fp)
{
	if (job->docs[i].status != ACCEL_DOC_OK)
		return SIMHASH_EMPTY_DOCUMENT;
	*fp = job->docs[i].fingerprint;
	return SIMHASH_OK;
}

/* A job is finished: to the loop. */
static void
accel_job_finished(struct accel *acc, struct accel_job *job)
{
	mailbox_post(acc->mb, &job->msg);
	pthread_mutex_lock(&acc->lock);
	if (--acc->jobs_in_flight == 0)
		pthread_cond_broadcast(&acc->idle);
	pthread_mutex_unlock(&acc->lock);
}

static void
accel_batch_done(struct accel_hbatch *hb)
{
	struct accel_job *job = hb->job;

	if (__atomic_sub_fetch(&job->pending, 1, __ATOMIC_ACQ_REL) == 0)
		accel_job_finished(hb->acc, job);
}

/*
 * Computes a batch on cpu: the raw documents of the job, whatever the
 * plugin had.  Any thread.
 */
static void
accel_on_cpu(struct accel_hbatch *hb)
{
	struct accel *acc = hb->acc;
	struct accel_job *job = hb->job;
	struct simhash_scratch *sc;
	uint32_t i;

	hb->on_cpu = 1;
	hb->b.input = accel_input_flag(job->input);
	hb->b.docs = job->docs + hb->first;
	hb->b.status = ACCEL_BATCH_OK;
	hb->b.error[0] = '\0';
	hb->b.backend_data = NULL;
	if (accel_cpu_backend.submit(acc->cpu.ctx, &hb->b) == 0)
		return;
	/* cpu could not take it (out of memory): here and now. */
	log_warnx("%s: cpu refused a batch (%s); computing it in place",
	    __func__, hb->b.error);
	if ((sc = simhash_scratch_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	for (i = 0; i < hb->b.ndocs; i++) {
		struct accel_doc *d = &hb->b.docs[i];

		d->status = simhash_compute(acc->engine, sc, job->input,
		    d->data, d->len, &d->fingerprint) == SIMHASH_OK ?
		    ACCEL_DOC_OK : ACCEL_DOC_EMPTY;
	}
	simhash_scratch_free(sc);
	accel_batch_done(hb);
}

/* The plugin failed or refused a batch: redo it on cpu. */
static void
accel_failed(struct accel_hbatch *hb)
{
	struct accel *acc = hb->acc;
	unsigned n;

	__atomic_add_fetch(&acc->n.failed, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&acc->n.cpu, 1, __ATOMIC_RELAXED);
	log_warnx("%s: %s failed a batch of %u documents (%s); computing it "
	    "on cpu", __func__, acc->plugin.be->name, hb->b.ndocs,
	    hb->b.error[0] != '\0' ? hb->b.error : "no reason given");
	n = __atomic_add_fetch(&acc->failures, 1, __ATOMIC_ACQ_REL);
	if (n >= acc->max_failures &&
	    !__atomic_exchange_n(&acc->dropped, 1, __ATOMIC_ACQ_REL))
		log_warnx("%s: %s failed %u batches in a row; using cpu from "
		    "now on", __func__, acc->plugin.be->name, n);
	accel_prep_free(hb);
	accel_on_cpu(hb);
}

static void
accel_complete(struct accel_batch *b, void *arg)
{
	struct accel_hbatch *hb = (struct accel_hbatch *)(void *)b;
	struct accel_doc *out;
	uint32_t i;

	(void)arg;
	if (hb->on_cpu) {
		accel_batch_done(hb);
		return;
	}
	if (b->status != ACCEL_BATCH_OK) {
		accel_failed(hb);
		return;
	}
	__atomic_store_n(&hb->acc->failures, 0, __ATOMIC_RELEASE);
	if (hb->prep != NULL) {
		out = hb->job->docs + hb->first;
		for (i = 0; i < b->ndocs; i++) {
			out[i].fingerprint = hb->prep[i].fingerprint;
			out[i].status = hb->prep[i].status;
		}
		accel_prep_free(hb);
	}
	accel_batch_done(hb);
}

/* Hands a ready batch to the plugin; a refusal goes to cpu. */
static void
accel_to_plugin(struct accel_hbatch *hb)
{
	struct accel *acc = hb->acc;
	int rc;

	pthread_mutex_lock(&acc->submit_lock);
	rc = acc->plugin.be->submit(acc->plugin.ctx, &hb->b);
	pthread_mutex_unlock(&acc->submit_lock);
	if (rc == -1)
		accel_failed(hb);
}

/* In a worker: preprocesses a batch for a plugin that needs it. */
static void
accel_prep_run(struct workq_item *item, void *tls)
{
	struct accel_hbatch *hb = WORKQ_CONTAINER(item, struct accel_hbatch,
	    item);
	struct accel_job *job = hb->job;
	uint32_t i;
	uint8_t *out;
	size_t len;

	if ((hb->prep = calloc(hb->b.ndocs, sizeof(*hb->prep))) == NULL)
		goto fail;
	for (i = 0; i < hb->b.ndocs; i++) {
		const struct accel_doc *d = &job->docs[hb->first + i];

		if (simhash_preprocess(hb->acc->engine, tls, job->input, d->data,
		    d->len, &out, &len) == -1)
			goto fail;
		hb->prep[i].data = out;
		hb->prep[i].len = len;
	}
	hb->b.input = ACCEL_INPUT_PREPROCESSED;
	hb->b.docs = hb->prep;
	accel_to_plugin(hb);
	return;
fail:
	accel_prep_free(hb);
	snprintf(hb->b.error, sizeof(hb->b.error), "host preprocessing: %s",
	    strerror(ENOMEM));
	accel_on_cpu(hb);
}

int
accel_submit(struct accel *acc, struct accel_job *job, accel_done_fn done,
    void *arg)
{
	size_t i, nb, bytes = 0;
	uint32_t flag = accel_input_flag(job->input);
	int plugin = accel_use_plugin(acc);

	job->done = done;
	job->arg = arg;
	nb = (job->ndocs + acc->batch_docs - 1) / acc->batch_docs;
	if (nb > 0 && (job->hb = calloc(nb, sizeof(*job->hb))) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	job->nbatches = nb;
	job->pending = (unsigned)nb;
	for (i = 0; i < job->ndocs; i++)
		bytes += job->docs[i].len;
	__atomic_add_fetch(&acc->n.jobs, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&acc->n.docs, job->ndocs, __ATOMIC_RELAXED);
	__atomic_add_fetch(&acc->n.bytes, bytes, __ATOMIC_RELAXED);
	__atomic_add_fetch(&acc->n.batches, nb, __ATOMIC_RELAXED);
	pthread_mutex_lock(&acc->lock);
	acc->jobs_in_flight++;
	pthread_mutex_unlock(&acc->lock);
	if (nb == 0) {
		accel_job_finished(acc, job);
		return 0;
	}
	if (!plugin)
		__atomic_add_fetch(&acc->n.cpu, nb, __ATOMIC_RELAXED);
	for (i = 0; i < nb; i++) {
		struct accel_hbatch *hb = &job->hb[i];

		hb->acc = acc;
		hb->job = job;
		hb->first = (uint32_t)(i * acc->batch_docs);
		hb->b.ndocs = (uint32_t)(job->ndocs - hb->first <
		    acc->batch_docs ? job->ndocs - hb->first : acc->batch_docs);
		if (!plugin)
			accel_on_cpu(hb);
		else if (acc->plugin.be->inputs & flag) {
			hb->b.input = flag;
			hb->b.docs = job->docs + hb->first;
			accel_to_plugin(hb);
		} else {
			hb->item.fn = accel_prep_run;
			workq_push(acc->prep, &hb->item);
		}
	}
	return 0;
}
