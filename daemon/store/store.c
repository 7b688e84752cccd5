/*
 * store: the LMDB environment that is nddd's source of truth.  See store.h.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <lmdb.h>

#include "log.h"

static const char *const store_table_names[STORE_NTABLES] = {
	[STORE_META] = "meta",
	[STORE_URLS] = "urls",
	[STORE_URL_SEGS] = "url_segs",
	[STORE_URL_LIVE] = "url_live",
	[STORE_DOCS] = "docs",
	[STORE_DOC_URLS] = "doc_urls",
};

/* Free space below which a failed write is taken for a full disk. */
#define STORE_FULL_BELOW	(16ull << 20)

/* Tables keyed by a native unsigned integer (LMDB compares them as such). */
static const unsigned store_table_flags[STORE_NTABLES] = {
	[STORE_URL_SEGS] = MDB_INTEGERKEY,
	[STORE_URL_LIVE] = MDB_INTEGERKEY,
};

struct store {
	MDB_env *env;
	MDB_dbi dbi[STORE_NTABLES];
	int lock_fd;
	uint64_t map_size;
};

struct store_txn {
	struct store *st;
	MDB_txn *txn;
};

const char *
store_strstatus(int status)
{
	switch (status) {
	case STORE_OK: return "ok";
	case STORE_NOTFOUND: return "not found";
	case STORE_EXISTS: return "exists";
	case STORE_FULL: return "the store is full (raise [store] map_size, "
	    "or free disk space)";
	case STORE_TXN_FULL: return "transaction too large";
	case STORE_FAILED: return "store failure (see the daemon's log)";
	}
	return "unknown store status";
}

int (*store_fault_hook)(const char *call);

/* Translates an LMDB return code at the module's edge. */
static int
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
		log_warnx("store: %s: %s", what, mdb_strerror(rc));
		return STORE_FULL;
	default:
		log_warnx("store: %s: %s", what, mdb_strerror(rc));
		return STORE_FAILED;
	}
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
	if (store_mkdirs(opts->dir, cause) == -1 ||
	    store_lock(st, opts->dir, cause) == -1)
		goto err;
	if (opts->sync == STORE_SYNC_NONE)
		flags |= MDB_NOSYNC;
	if ((rc = mdb_env_create(&st->env)) != 0 ||
	    (rc = mdb_env_set_maxdbs(st->env, STORE_NTABLES)) != 0 ||
	    (rc = mdb_env_set_mapsize(st->env, opts->map_size)) != 0 ||
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
	st->map_size = opts->map_size;
	return st;
lmdb_err:
	if (asprintf(cause, "data directory %s: %s", opts->dir,
	    mdb_strerror(rc)) == -1)
		*cause = NULL;
err:
	store_close(st);
	return NULL;
}

void
store_close(struct store *st)
{
	if (st == NULL)
		return;
	if (st->env != NULL)
		mdb_env_close(st->env);
	if (st->lock_fd != -1)
		close(st->lock_fd);
	free(st);
}

int
store_write_begin(struct store *st, struct store_txn **out)
{
	struct store_txn *txn;
	int rc;

	if ((txn = calloc(1, sizeof(*txn))) == NULL)
		return STORE_FAILED;
	txn->st = st;
	if ((rc = mdb_txn_begin(st->env, NULL, 0, &txn->txn)) != 0) {
		free(txn);
		return store_status(rc, "begin");
	}
	*out = txn;
	return STORE_OK;
}

/*
 * LMDB reports a short write as EIO, which is what a full disk gives when
 * part of a commit's pages fit: with next to no room left on the store's
 * file system, that EIO means "full".
 */
static bool
store_disk_full(struct store *st)
{
	struct statvfs vfs;

	return fstatvfs(st->lock_fd, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < STORE_FULL_BELOW;
}

int
store_commit(struct store_txn *txn)
{
	struct store *st = txn->st;
	int rc = mdb_txn_commit(txn->txn);

	free(txn);
	if (rc == EIO && store_disk_full(st)) {
		log_warnx("store: commit: the disk is full");
		return STORE_FULL;
	}
	return store_status(rc, "commit");
}

void
store_abort(struct store_txn *txn)
{
	mdb_txn_abort(txn->txn);
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
	free(txn);
}

int
store_reader_begin(struct store_txn *txn)
{
	return store_status(mdb_txn_renew(txn->txn), "renew");
}

void
store_reader_end(struct store_txn *txn)
{
	mdb_txn_reset(txn->txn);
}

int
store_get(struct store_txn *txn, enum store_table t, const void *key,
    size_t klen, struct store_val *out)
{
	MDB_val k = { klen, (void *)key }, v;
	int rc = store_fault_hook != NULL && store_fault_hook("get") ? EIO :
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
	return store_status(rc, "put");
}

int
store_del(struct store_txn *txn, enum store_table t, const void *key,
    size_t klen)
{
	MDB_val k = { klen, (void *)key };

	return store_status(mdb_del(txn->txn, txn->st->dbi[t], &k, NULL),
	    "del");
}

int
store_reserve(struct store_txn *txn, enum store_table t, const void *key,
    size_t klen, size_t vlen, void **out)
{
	MDB_val k = { klen, (void *)key }, v = { vlen, NULL };
	int rc = mdb_put(txn->txn, txn->st->dbi[t], &k, &v, MDB_RESERVE);

	if (rc == 0)
		*out = v.mv_data;
	return store_status(rc, "reserve");
}

int
store_drop(struct store_txn *txn, enum store_table t)
{
	return store_status(mdb_drop(txn->txn, txn->st->dbi[t], 0), "drop");
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

int
store_scan_txn(struct store_txn *txn, enum store_table t, store_scan_fn fn,
    void *arg)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc, ret = STORE_OK;

	if ((rc = mdb_cursor_open(txn->txn, txn->st->dbi[t], &cur)) != 0)
		return store_status(rc, "scan");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if ((ret = fn(k.mv_data, k.mv_size, v.mv_data, v.mv_size,
		    arg)) != 0)
			break;
	}
	if (rc != 0 && rc != MDB_NOTFOUND)
		ret = store_status(rc, "scan");
	mdb_cursor_close(cur);
	return ret;
}

int
store_scan(struct store *st, enum store_table t, store_scan_fn fn, void *arg)
{
	struct store_txn txn = { .st = st };
	int rc, ret;

	if ((rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn.txn)) != 0)
		return store_status(rc, "scan");
	ret = store_scan_txn(&txn, t, fn, arg);
	mdb_txn_abort(txn.txn);
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
