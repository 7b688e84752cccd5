/*
 * store: the LMDB environment that is nddd's source of truth.  See store.h.
 */
#include "store_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <lmdb.h>

#include "clock.h"
#include "defer.h"
#include "log.h"
#include "memroom.h"

static const char *const store_table_names[STORE_NTABLES] = {
	[STORE_META] = "meta",
	[STORE_URLS] = "urls",
	[STORE_URL_SEGS] = "url_segs",
	[STORE_URL_LIVE] = "url_live",
	[STORE_DOCS] = "docs",
	[STORE_DOC_URLS] = "doc_urls",
	[STORE_URL_HOSTS] = "url_hosts",
};

/* Free space below which a failed write is taken for a full disk. */
#define STORE_FULL_BELOW	(16ull << 20)
/* While writes are refused for want of room, the log says so at most this
 * often (a writer may retry many times a second). */
#define STORE_FULL_LOG_MS	60000
/* LMDB's lock file, in the data directory, and the part of it that holds
 * its header (written when LMDB creates the file). */
#define STORE_LOCK_FILE		"lock.mdb"
#define STORE_LOCK_HEADER	4096

/* Tables keyed by a native unsigned integer (LMDB compares them as such). */
static const unsigned store_table_flags[STORE_NTABLES] = {
	[STORE_URL_SEGS] = MDB_INTEGERKEY,
	[STORE_URL_LIVE] = MDB_INTEGERKEY,
};


const char *
store_strstatus(int status)
{
	switch (status) {
	case STORE_OK: return "ok";
	case STORE_NOTFOUND: return "not found";
	case STORE_EXISTS: return "exists";
	case STORE_FULL: return "store full: the store reached [store] "
	    "map_size (raise it and restart nddd)";
	case STORE_TXN_FULL: return "transaction too large";
	case STORE_FAILED: return "store failure (see the daemon's log)";
	case STORE_NOSPACE: return "disk full: no space left on the data "
	    "directory's file system (writes resume once there is room)";
	case STORE_JOURNAL_FULL: return "the store journal cannot take the "
	    "group";
	case STORE_WOULD_BLOCK: return "the read would wait";
	}
	return "unknown store status";
}

int (*store_fault_hook)(const char *call);

/* Translates an LMDB return code at the module's edge. */
int
store_status(int rc, const char *what)
{
	switch (rc) {
	case MDB_SUCCESS:
		return STORE_OK;
	case MDB_NOTFOUND:
		return STORE_NOTFOUND;
	case MDB_KEYEXIST:
		return STORE_EXISTS;
	case MDB_MAP_FULL:
		return STORE_FULL;
	case MDB_TXN_FULL:
		return STORE_TXN_FULL;
	case ENOSPC:
	case EDQUOT:
		return STORE_NOSPACE;
	default:
		log_warnx("store: %s: %s", what, mdb_strerror(rc));
		return STORE_FAILED;
	}
}

/* Whether the store's file system has next to no room left. */
static bool
store_disk_nearly_full(struct store *st, uint64_t *free_bytes,
    uint64_t *size)
{
	struct statvfs vfs;

	if (fstatvfs(st->lock_fd, &vfs) == -1)
		return false;
	*free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	*size = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	return *free_bytes < STORE_FULL_BELOW;
}

void
store_note_full(struct store *st, int status)
{
	uint64_t now = clock_mono_ms(), refused = 0, secs = 0;
	bool begins, tell;

	__atomic_fetch_add(&st->refused_total, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&st->full_lock);
	begins = st->full != status;
	if (st->full == 0) {
		st->full_since_ms = now;
		st->full_refused = 0;
		st->full_told = false;
	}
	__atomic_store_n(&st->full, status, __ATOMIC_RELAXED);
	st->full_refused++;
	/* An episode that begins is told unless one was told within the
	 * last minute (writes that find room now and then would make a
	 * message of each); one that goes on is recalled once a minute. */
	tell = st->full_logged_ms == 0 ||
	    now - st->full_logged_ms >= STORE_FULL_LOG_MS;
	if (tell) {
		st->full_logged_ms = now;
		st->full_told = true;
		refused = st->full_refused;
		secs = (now - st->full_since_ms) / 1000;
	}
	pthread_mutex_unlock(&st->full_lock);
	if (!tell)
		return;
	if (begins)
		log_warnx("store: %s; writes that need room are refused with "
		    "RESOURCE_EXHAUSTED, reads go on (said again once a minute "
		    "while it lasts)", store_strstatus(status));
	else
		log_warnx("store: %s: still, for %" PRIu64 " s; %" PRIu64
		    " writes refused", status == STORE_NOSPACE ? "disk full" :
		    "store full", secs, refused);
}

bool
store_disk_has_room(struct store *st)
{
	uint64_t free_bytes, size;

	return !store_disk_nearly_full(st, &free_bytes, &size) ||
	    free_bytes >= size / 8;
}

/*
 * A transaction that wrote committed.  A full disk's episode ends once the
 * file system has room again (a small commit may fit in pages LMDB freed
 * earlier while the disk stays full); a full map's at once.
 */
void
store_note_room(struct store *st)
{
	uint64_t now = clock_mono_ms(), refused, since;
	int full = __atomic_load_n(&st->full, __ATOMIC_RELAXED);
	bool told;

	if (full == 0)
		return;
	if (full == STORE_NOSPACE && !store_disk_has_room(st))
		return;
	pthread_mutex_lock(&st->full_lock);
	told = st->full != 0 && st->full_told;
	refused = st->full_refused;
	since = st->full_since_ms;
	if (told)
		st->full_logged_ms = now;
	__atomic_store_n(&st->full, 0, __ATOMIC_RELAXED);
	st->full_told = false;
	pthread_mutex_unlock(&st->full_lock);
	if (told)
		log_info("store: room again after %.1f s: writes go through "
		    "(%" PRIu64 " were refused)", (double)(now - since) / 1000,
		    refused);
}

int
store_full_state(struct store *st, uint64_t *refused)
{
	if (refused != NULL)
		*refused = __atomic_load_n(&st->refused_total,
		    __ATOMIC_RELAXED);
	return __atomic_load_n(&st->full, __ATOMIC_RELAXED);
}

int
store_write_status(struct store_txn *txn, int rc, const char *what)
{
	int status = store_status(rc, what);

	if (store_status_full(status))
		store_note_full(txn->st, status);
	else if (status == STORE_OK)
		txn->wrote = true;
	return status;
}

/*
 * Allocates the blocks of LMDB's lock file, at least its header's: LMDB
 * maps it writable after making it with ftruncate, and a reader taking a
 * slot on a page never written would get SIGBUS if the disk were full
 * then.  Before the environment opens (the file may be new: its header),
 * and after (all of it, before any reader).
 */
static int
store_alloc_lock(const char *dir, char **cause)
{
	char *path = NULL;
	struct stat sb;
	int fd = -1, rc;

	if (asprintf(&path, "%s/%s", dir, STORE_LOCK_FILE) == -1) {
		path = NULL;
		goto nomem;
	}
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640)) == -1 ||
	    fstat(fd, &sb) == -1) {
		rc = errno;
		goto err;
	}
	rc = posix_fallocate(fd, 0, sb.st_size > STORE_LOCK_HEADER ?
	    sb.st_size : STORE_LOCK_HEADER);
	if (rc == EOPNOTSUPP || rc == EINVAL) {
		/* Nothing to fear where blocks are not allocated ahead. */
		log_debug("%s: %s: %s", __func__, path, strerror(rc));
		rc = 0;
	}
	if (rc != 0)
		goto err;
	close(fd);
	free(path);
	return 0;
err:
	if (asprintf(cause, "data directory %s: %s%s: %s", dir, rc == ENOSPC ||
	    rc == EDQUOT ? "disk full: cannot allocate " : "", path,
	    strerror(rc)) == -1)
		*cause = NULL;
	if (fd != -1)
		close(fd);
	free(path);
	return -1;
nomem:
	*cause = NULL;
	return -1;
}

static int
store_mkdirs(const char *dir, char **cause)
{
	char *path = strdup(dir);

	if (path == NULL)
		goto err;
	for (char *p = path + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0750) == -1 && errno != EEXIST)
			goto err;
		*p = '/';
	}
	if (mkdir(path, 0750) == -1 && errno != EEXIST)
		goto err;
	free(path);
	return 0;
err:
	if (asprintf(cause, "data directory %s: cannot create %s: %s", dir,
	    path ? path : dir, strerror(errno)) == -1)
		*cause = NULL;
	free(path);
	return -1;
}

static int
store_lock(struct store *st, const char *dir, char **cause)
{
	char *path = NULL, pid[32];
	int n;

	if (asprintf(&path, "%s/nddd.lock", dir) == -1) {
		*cause = NULL;
		return -1;
	}
	st->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (st->lock_fd == -1) {
		if (asprintf(cause, "data directory %s is not writable: %s",
		    dir, strerror(errno)) == -1)
			*cause = NULL;
		goto err;
	}
	if (flock(st->lock_fd, LOCK_EX | LOCK_NB) == -1) {
		memset(pid, 0, sizeof(pid));
		if (read(st->lock_fd, pid, sizeof(pid) - 1) < 0)
			pid[0] = '\0';
		if (asprintf(cause, "data directory %s is in use by another "
		    "nddd (pid %s)", dir, pid[0] ? pid : "unknown") == -1)
			*cause = NULL;
		goto err;
	}
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(st->lock_fd, 0) == -1 ||
	    pwrite(st->lock_fd, pid, (size_t)n, 0) != n) {
		if (asprintf(cause, "data directory %s: cannot write %s: %s",
		    dir, path, strerror(errno)) == -1)
			*cause = NULL;
		goto err;
	}
	free(path);
	return 0;
err:
	free(path);
	return -1;
}

/*
 * Warming.  At start-up every URL segment and every document record is
 * read (the filter, the index and the documents' tables are rebuilt from
 * them), and after a reboot none of them is in the page cache.  Read at
 * random, as the map is (MDB_NORDAHEAD), the tables lie scattered in the
 * file and come in 4 KiB at a time; read in the file's order they come at
 * the disk's sequential speed.  So when the data file fits in half the
 * memory available (memroom.h: under a memory cgroup's limit too, as when
 * the daemon runs with less memory than its store), a thread reads it,
 * WARM_CHUNK bytes at a time from the start, while the rebuilds run: they
 * find most pages there already, or read them sooner than their turn.  (Reads, not POSIX_FADV_WILLNEED: the
 * kernel caps what one such advice reads at the device's readahead size.)
 * A chunk whose pages are all in memory (a restart without a reboot) is
 * not read again.  A file larger than that is left alone: reading it
 * would only push out what is in use.
 */
#define WARM_CHUNK	(1u << 20)
#define WARM_PAGE	4096
#define WARM_LOG_BYTES	(256u << 20)	/* below this, warming is not told */

/* Whether the len bytes of the file at at are all in memory (map: the
 * file, mapped for mincore). */
static bool
warm_resident(const uint8_t *map, off_t at, size_t len, unsigned char *vec)
{
	size_t pages = (len + WARM_PAGE - 1) / WARM_PAGE;

	if (map == NULL || mincore((void *)(map + at), len, vec) == -1)
		return false;
	for (size_t i = 0; i < pages; i++)
		if (!(vec[i] & 1))
			return false;
	return true;
}

static void *
warm_run(void *arg)
{
	struct store *st = arg;
	unsigned char vec[WARM_CHUNK / WARM_PAGE];
	off_t size = st->warm_size;
	mdb_filehandle_t fd;
	uint64_t t0 = clock_mono_ms(), read = 0;
	const uint8_t *map;
	char *buf;
	off_t at;

	if (mdb_env_get_fd(st->env, &fd) != 0 ||
	    (buf = malloc(WARM_CHUNK)) == NULL)
		return NULL;
	/* A mapping of its own, only to ask which pages are in memory
	 * (LMDB does not tell where its map is). */
	if ((map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0)) ==
	    MAP_FAILED)
		map = NULL;
	for (at = 0; at < size &&
	    !__atomic_load_n(&st->warm_stop, __ATOMIC_RELAXED);
	    at += WARM_CHUNK) {
		size_t len = (size_t)(size - at) < WARM_CHUNK ?
		    (size_t)(size - at) : WARM_CHUNK;
		ssize_t n;

		if (warm_resident(map, at, len, vec))
			continue;
		while ((n = pread(fd, buf, len, at)) == -1 && errno == EINTR)
			;
		if (n <= 0)
			break;
		read += (uint64_t)n;
	}
	free(buf);
	if (map != NULL)
		munmap((void *)map, (size_t)size);
	if (size >= WARM_LOG_BYTES)
		log_info("store: %" PRIu64 " MB of the data file's %lld read "
		    "into memory in %.1f s (the rest was there)", read >> 20,
		    (long long)(size >> 20),
		    (double)(clock_mono_ms() - t0) / 1000);
	return NULL;
}

/* Starts warming st's data file if it fits in half the memory available. */
static void
warm_start(struct store *st)
{
	struct stat sb;
	mdb_filehandle_t fd;
	uint64_t avail = memroom();

	if (st->warming) {
		/* The earlier warming is done, or nearly. */
		pthread_join(st->warm_thread, NULL);
		st->warming = false;
	}
	if (mdb_env_get_fd(st->env, &fd) != 0 || fstat(fd, &sb) == -1 ||
	    sb.st_size == 0)
		return;
	if (avail == 0 || (uint64_t)sb.st_size > avail / 2) {
		if ((uint64_t)sb.st_size >= WARM_LOG_BYTES)
			log_info("store: the data file (%lld MB) is larger "
			    "than half the memory available (%llu MB): read "
			    "as needed", (long long)(sb.st_size >> 20),
			    (unsigned long long)(avail >> 20));
		return;
	}
	st->warm_size = sb.st_size;
	st->warming = pthread_create(&st->warm_thread, NULL, warm_run, st) ==
	    0;
}

struct store *
store_open(const struct store_options *opts, char **cause)
{
	struct store *st;
	MDB_txn *txn;
	unsigned flags = MDB_NOTLS | MDB_NORDAHEAD;
	int rc, dead;

	*cause = NULL;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return NULL;
	st->lock_fd = -1;
	pthread_mutex_init(&st->full_lock, NULL);
	if (store_mkdirs(opts->dir, cause) == -1 ||
	    store_lock(st, opts->dir, cause) == -1 ||
	    store_alloc_lock(opts->dir, cause) == -1)
		goto err;
	if (opts->sync == STORE_SYNC_NONE)
		flags |= MDB_NOSYNC;
	/*
	 * With MDB_NOTLS a read transaction keeps its reader slot from its
	 * creation to its end, reset or not (store_reader_new): every reader
	 * the daemon holds needs a slot of its own, or it fails to begin with
	 * MDB_READERS_FULL.  We hold the lock of the directory, so LMDB sizes
	 * the table of lock.mdb anew.
	 */
	if ((rc = mdb_env_create(&st->env)) != 0 ||
	    (rc = mdb_env_set_maxdbs(st->env, STORE_NTABLES)) != 0 ||
	    (rc = mdb_env_set_mapsize(st->env, opts->map_size)) != 0 ||
	    (opts->max_readers > 0 && (rc = mdb_env_set_maxreaders(st->env,
	    opts->max_readers)) != 0) ||
	    (rc = mdb_env_open(st->env, opts->dir, flags, 0640)) != 0) {
		if (asprintf(cause, "data directory %s: %s", opts->dir,
		    mdb_strerror(rc)) == -1)
			*cause = NULL;
		goto err;
	}
	/* Reader slots of a killed process stay taken until cleared. */
	if (mdb_reader_check(st->env, &dead) == 0 && dead > 0)
		log_info("%s: cleared %d stale reader slots", __func__, dead);

	if ((rc = mdb_txn_begin(st->env, NULL, 0, &txn)) != 0)
		goto lmdb_err;
	for (int t = 0; t < STORE_NTABLES; t++) {
		rc = mdb_dbi_open(txn, store_table_names[t], MDB_CREATE |
		    store_table_flags[t], &st->dbi[t]);
		if (rc != 0) {
			mdb_txn_abort(txn);
			goto lmdb_err;
		}
	}
	if ((rc = mdb_txn_commit(txn)) != 0)
		goto lmdb_err;
	if (store_alloc_lock(opts->dir, cause) == -1)
		goto err;
	st->map_size = opts->map_size;
	if (opts->journal_size > 0 && defer_open(st, opts->dir,
	    opts->journal_size, opts->sync == STORE_SYNC_FULL, cause) == -1)
		goto err;
	if ((st->dir = strdup(opts->dir)) == NULL ||
	    (rc = store_ident_now(st, &st->opened)) != STORE_OK) {
		if (asprintf(cause, "data directory %s: %s", opts->dir,
		    st->dir == NULL ? "out of memory" : store_strstatus(rc)) ==
		    -1)
			*cause = NULL;
		goto err;
	}
	warm_start(st);
	return st;
lmdb_err:
	if (asprintf(cause, "data directory %s: %s", opts->dir,
	    mdb_strerror(rc)) == -1)
		*cause = NULL;
err:
	store_close(st);
	return NULL;
}

unsigned
store_max_readers(struct store *st)
{
	unsigned n = 0;

	if (mdb_env_get_maxreaders(st->env, &n) != 0)
		return 0;
	return n;
}

void
store_warm(struct store *st)
{
	warm_start(st);
}

void
store_close(struct store *st)
{
	if (st == NULL)
		return;
	if (st->warming) {
		__atomic_store_n(&st->warm_stop, true, __ATOMIC_RELAXED);
		pthread_join(st->warm_thread, NULL);
	}
	defer_close(st);
	if (st->env != NULL)
		mdb_env_close(st->env);
	if (st->lock_fd != -1)
		close(st->lock_fd);
	pthread_mutex_destroy(&st->full_lock);
	free(st->dir);
	free(st);
}

void
store_ident_at_open(struct store *st, struct store_ident *out)
{
	*out = st->opened;
}

int
store_ident_now(struct store *st, struct store_ident *out)
{
	struct store_txn *rd = store_reader_new(st);
	mdb_filehandle_t fd;
	struct stat sb;
	int rc;

	if (rd == NULL)
		return STORE_FAILED;
	if ((rc = store_reader_begin(rd)) == STORE_OK) {
		out->txn_id = store_txn_id(rd);
		store_reader_end(rd);
	}
	store_reader_free(rd);
	if (rc != STORE_OK)
		return rc;
	if (mdb_env_get_fd(st->env, &fd) != 0 || fstat(fd, &sb) == -1)
		return STORE_FAILED;
	out->dev = (uint64_t)sb.st_dev;
	out->ino = (uint64_t)sb.st_ino;
	return STORE_OK;
}

const char *
store_dir(struct store *st)
{
	return st->dir;
}

int
store_write_begin(struct store *st, struct store_txn **out)
{
	struct store_txn *txn;
	int rc;

	if ((txn = calloc(1, sizeof(*txn))) == NULL)
		return STORE_FAILED;
	txn->st = st;
	if (defer_enabled(st) && defer_is_holder() && defer_holding(st)) {
		/* LMDB's write lock is this thread's already. */
		log_warnx("%s: the store writer holds a transaction", __func__);
		free(txn);
		return STORE_FAILED;
	}
	if (defer_enabled(st) && !defer_is_holder()) {
		/* Through the view: what it holds could not be committed,
		 * if the store writer lets go of the lock with it. */
		defer_want_begin(st);
		rc = mdb_txn_begin(st->env, NULL, 0, &txn->txn);
		defer_want_end(st);
		if (rc == 0)
			txn->view = defer_view_take(st);
	} else
		rc = mdb_txn_begin(st->env, NULL, 0, &txn->txn);
	if (rc != 0) {
		free(txn);
		rc = store_status(rc, "begin");
		if (store_status_full(rc))
			store_note_full(st, rc);
		return rc;
	}
	*out = txn;
	return STORE_OK;
}

int
store_commit(struct store_txn *txn)
{
	struct store *st = txn->st;
	bool wrote = txn->wrote;
	int rc = mdb_txn_commit(txn->txn);

	if (txn->view != NULL)
		defer_view_release(st, txn->view);
	free(txn);
	return store_commit_status(st, rc, wrote);
}

int
store_commit_status(struct store *st, int rc, bool wrote)
{
	uint64_t free_bytes, size;

	/* LMDB reports a short write as EIO, which is what a full disk gives
	 * when part of a commit's pages fit: with next to no room left on
	 * the store's file system, that EIO means "full". */
	if (rc == EIO && store_disk_nearly_full(st, &free_bytes, &size))
		rc = ENOSPC;
	rc = store_status(rc, "commit");
	if (store_status_full(rc))
		store_note_full(st, rc);
	else if (rc == STORE_OK && wrote)
		store_note_room(st);
	return rc;
}

void
store_abort(struct store_txn *txn)
{
	mdb_txn_abort(txn->txn);
	if (txn->view != NULL)
		defer_view_release(txn->st, txn->view);
	free(txn);
}

struct store_txn *
store_reader_new(struct store *st)
{
	struct store_txn *txn;

	if ((txn = calloc(1, sizeof(*txn))) == NULL)
		return NULL;
	txn->st = st;
	if (mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn->txn) != 0) {
		free(txn);
		return NULL;
	}
	mdb_txn_reset(txn->txn);
	return txn;
}

void
store_reader_free(struct store_txn *txn)
{
	if (txn == NULL)
		return;
	mdb_txn_abort(txn->txn);
	if (txn->view != NULL)
		defer_view_release(txn->st, txn->view);
	free(txn);
}

int
store_reader_begin(struct store_txn *txn)
{
	int rc;

	/* The view first, then the snapshot: a checkpoint in between makes
	 * the view older than the snapshot, never newer (defer.h). */
	if (defer_enabled(txn->st) && txn->view == NULL)
		txn->view = defer_view_take(txn->st);
	if ((rc = store_status(mdb_txn_renew(txn->txn), "renew")) !=
	    STORE_OK && txn->view != NULL) {
		defer_view_release(txn->st, txn->view);
		txn->view = NULL;
	}
	return rc;
}

void
store_reader_end(struct store_txn *txn)
{
	mdb_txn_reset(txn->txn);
	if (txn->view != NULL) {
		defer_view_release(txn->st, txn->view);
		txn->view = NULL;
	}
}

int
store_get(struct store_txn *txn, enum store_table t, const void *key,
    size_t klen, struct store_val *out)
{
	MDB_val k = { klen, (void *)key }, v;
	int rc;

	if (txn->view != NULL && (rc = defer_view_get(txn->view, t, key, klen,
	    out)) >= 0)
		return rc;
	rc = store_fault_hook != NULL && store_fault_hook("get") ? EIO :
	    mdb_get(txn->txn, txn->st->dbi[t], &k, &v);
	if (rc == 0) {
		out->data = v.mv_data;
		out->len = v.mv_size;
	}
	return store_status(rc, "get");
}

int
store_put(struct store_txn *txn, enum store_table t, const void *key,
    size_t klen, const void *val, size_t vlen, unsigned flags,
    struct store_val *existing)
{
	MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };
	unsigned mflags = (flags & STORE_NOOVERWRITE) ? MDB_NOOVERWRITE : 0;
	int rc = mdb_put(txn->txn, txn->st->dbi[t], &k, &v, mflags);

	if (rc == MDB_KEYEXIST && existing != NULL) {
		existing->data = v.mv_data;
		existing->len = v.mv_size;
	}
	if (rc == 0 && txn->capture)
		defer_capture(txn->st, &(struct redo_op){ .table = t,
		    .key = key, .klen = klen, .val = val, .vlen = vlen });
	return store_write_status(txn, rc, "put");
}

int
store_del(struct store_txn *txn, enum store_table t, const void *key,
    size_t klen)
{
	MDB_val k = { klen, (void *)key };
	int rc = mdb_del(txn->txn, txn->st->dbi[t], &k, NULL);

	if (rc == 0 && txn->capture)
		defer_capture(txn->st, &(struct redo_op){ .table = t,
		    .del = true, .key = key, .klen = klen });
	return store_write_status(txn, rc, "del");
}

/* Whether txn's changes are journaled, one by one: those that cannot be
 * are refused. */
static bool
store_refuse_captured(struct store_txn *txn, const char *what)
{
	if (!txn->capture)
		return false;
	log_warnx("store: %s in a journaled group", what);
	return true;
}

int
store_reserve(struct store_txn *txn, enum store_table t, const void *key,
    size_t klen, size_t vlen, void **out)
{
	MDB_val k = { klen, (void *)key }, v = { vlen, NULL };
	int rc;

	if (store_refuse_captured(txn, "reserve"))
		return STORE_FAILED;
	rc = mdb_put(txn->txn, txn->st->dbi[t], &k, &v, MDB_RESERVE);
	if (rc == 0)
		*out = v.mv_data;
	return store_write_status(txn, rc, "reserve");
}

int
store_drop(struct store_txn *txn, enum store_table t)
{
	if (store_refuse_captured(txn, "drop"))
		return STORE_FAILED;
	return store_write_status(txn, mdb_drop(txn->txn, txn->st->dbi[t], 0),
	    "drop");
}

uint64_t
store_txn_id(struct store_txn *txn)
{
	return (uint64_t)mdb_txn_id(txn->txn);
}

int
store_count(struct store_txn *txn, enum store_table t, uint64_t *out)
{
	MDB_stat stat;
	int rc;

	*out = 0;
	if (store_fault_hook != NULL && store_fault_hook("count"))
		rc = EIO;
	else
		rc = mdb_stat(txn->txn, txn->st->dbi[t], &stat);
	if (rc != MDB_SUCCESS)
		return store_status(rc, "count");
	*out = stat.ms_entries;
	return STORE_OK;
}

uint64_t
store_bytes_used(struct store *st)
{
	MDB_envinfo info;
	MDB_stat stat;

	if (mdb_env_info(st->env, &info) != 0 || mdb_env_stat(st->env, &stat))
		return 0;
	return (uint64_t)(info.me_last_pgno + 1) * stat.ms_psize;
}

/* qsort_r's order of view entries: the table's own. */
struct entry_order {
	MDB_txn *txn;
	MDB_dbi dbi;
};

static int
entry_cmp(const void *a, const void *b, void *arg)
{
	const struct pending_entry *x = a, *y = b;
	const struct entry_order *o = arg;
	MDB_val kx = { x->klen, (void *)x->key }, ky = { y->klen,
	    (void *)y->key };

	return mdb_cmp(o->txn, o->dbi, &kx, &ky);
}

/*
 * The entries of txn's view for table t from key from on, in the table's
 * order, in a new array *out (caller frees).  Returns their number, or -1
 * when out of memory.
 */
static long
view_entries_from(struct store_txn *txn, enum store_table t,
    const void *from, size_t flen, struct pending_entry **out)
{
	struct entry_order o = { txn->txn, txn->st->dbi[t] };
	MDB_val kf = { flen, (void *)from };
	long n = defer_view_entries(txn->view, t, out), kept = 0;

	if (n <= 0)
		return n;
	for (long i = 0; i < n; i++) {
		MDB_val k = { (*out)[i].klen, (void *)(*out)[i].key };

		if (from == NULL || mdb_cmp(txn->txn, o.dbi, &k, &kf) >= 0)
			(*out)[kept++] = (*out)[i];
	}
	qsort_r(*out, (size_t)kept, sizeof(**out), entry_cmp, &o);
	return kept;
}

int
store_scan_from(struct store_txn *txn, enum store_table t, const void *from,
    size_t flen, store_scan_fn fn, void *arg)
{
	MDB_cursor *cur;
	MDB_val k = { flen, (void *)from }, v;
	struct pending_entry *e = NULL;
	long ne = 0, ie = 0;
	int rc, ret = STORE_OK;

	/* Merged with what the view holds: a key it names is its, deleted
	 * or not, in the table's order. */
	if (txn->view != NULL && (ne = view_entries_from(txn, t, from, flen,
	    &e)) < 0) {
		log_warnx("%s: out of memory", __func__);
		return STORE_FAILED;
	}
	if ((rc = mdb_cursor_open(txn->txn, txn->st->dbi[t], &cur)) != 0) {
		free(e);
		return store_status(rc, "scan");
	}
	rc = mdb_cursor_get(cur, &k, &v, from != NULL ? MDB_SET_RANGE :
	    MDB_FIRST);
	while (ret == 0 && (rc == 0 || ie < ne)) {
		int c = -1;

		if (ie < ne) {
			MDB_val ke = { e[ie].klen, (void *)e[ie].key };

			c = rc == 0 ? mdb_cmp(txn->txn, txn->st->dbi[t], &k,
			    &ke) : 1;
		}
		if (c < 0) {
			ret = fn(k.mv_data, k.mv_size, v.mv_data, v.mv_size,
			    arg);
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
			continue;
		}
		if (e[ie].val != NULL)
			ret = fn(e[ie].key, e[ie].klen, e[ie].val, e[ie].vlen,
			    arg);
		ie++;
		if (c == 0)
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	if (rc != 0 && rc != MDB_NOTFOUND)
		ret = store_status(rc, "scan");
	mdb_cursor_close(cur);
	free(e);
	return ret;
}

int
store_scan_txn(struct store_txn *txn, enum store_table t, store_scan_fn fn,
    void *arg)
{
	return store_scan_from(txn, t, NULL, 0, fn, arg);
}

int
store_scan(struct store *st, enum store_table t, store_scan_fn fn, void *arg)
{
	struct store_txn txn = { .st = st };
	int rc, ret;

	/* The view first, then the snapshot, as store_reader_begin. */
	if (defer_enabled(st))
		txn.view = defer_view_take(st);
	if ((rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn.txn)) != 0)
		ret = store_status(rc, "scan");
	else {
		ret = store_scan_txn(&txn, t, fn, arg);
		mdb_txn_abort(txn.txn);
	}
	if (txn.view != NULL)
		defer_view_release(st, txn.view);
	return ret;
}

int
store_meta_get(struct store_txn *txn, const char *key, char *buf, size_t size)
{
	struct store_val v = { NULL, 0 };
	int rc = store_get(txn, STORE_META, key, strlen(key), &v);

	if (rc != STORE_OK)
		return rc;
	if (v.len >= size) {
		log_warnx("%s: metadata %s is too long", __func__, key);
		return STORE_FAILED;
	}
	memcpy(buf, v.data, v.len);
	buf[v.len] = '\0';
	return STORE_OK;
}

int
store_meta_put(struct store_txn *txn, const char *key, const char *val)
{
	return store_put(txn, STORE_META, key, strlen(key), val, strlen(val),
	    0, NULL);
}
