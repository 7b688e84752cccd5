/*
 * defer: the store writer's deferred commits.  See defer.h.
 *
 * Locking: views_lock guards the list of views and their readers' counts;
 * the held transaction, the journal and the capture belong to the store
 * writer (the holder thread); the statistics are atomics.
 */
#include "defer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "store_impl.h"

/* The last frame of the store journal that LMDB holds. */
#define DEFER_SEQ_KEY	"store.journal_seq"

struct store_view {
	struct pending *map;
	size_t readers;			/* under views_lock */
	struct store_view *next;	/* retired views */
};

struct defer {
	struct redo *redo;
	size_t size;
	bool sync;

	/* The holder's. */
	MDB_txn *held;
	bool lost;			/* held must be built again first */
	uint64_t held_since_ms;
	uint64_t seq;			/* the last frame LMDB holds */
	uint64_t retry_ms;		/* a failed checkpoint's next try */
	int failed;			/* the failed checkpoint's status */

	pthread_mutex_t views_lock;
	struct store_view *view;	/* the newest: what held holds */
	struct store_view *retired;	/* older ones still read */

	uint32_t wanted;		/* atomic: threads waiting to write */
	void (*on_wanted)(void *);
	void *on_wanted_arg;

	struct defer_stats stats;	/* atomics */
};

/* Set in the thread that holds deferred writes (there is one store). */
static __thread bool defer_holder;

static void
stat_set(uint64_t *field, uint64_t v)
{
	__atomic_store_n(field, v, __ATOMIC_RELAXED);
}

static void
stats_journal(struct defer *d)
{
	struct journal_stats js;

	redo_stats(d->redo, &js);
	stat_set(&d->stats.journal_bytes, js.bytes);
	stat_set(&d->stats.journal_bytes_written, js.bytes_written);
	stat_set(&d->stats.frames, js.frames_written);
	stat_set(&d->stats.syncs, js.syncs);
}

static struct store_view *
view_new(void)
{
	struct store_view *v = calloc(1, sizeof(*v));

	if (v == NULL)
		return NULL;
	if ((v->map = pending_new()) == NULL) {
		free(v);
		return NULL;
	}
	return v;
}

static void
view_free(struct store_view *v)
{
	if (v == NULL)
		return;
	pending_free(v->map);
	free(v);
}

/* Applies one journaled operation in the write transaction arg. */
struct apply {
	struct store *st;
	MDB_txn *txn;
	int rc;				/* LMDB's, of the failed operation */
};

static int
apply_op(const struct redo_op *op, void *arg)
{
	struct apply *ap = arg;
	MDB_val k = { op->klen, (void *)op->key };
	MDB_val v = { op->vlen, (void *)op->val };
	int rc;

	if (op->table >= STORE_NTABLES || op->klen == 0) {
		ap->rc = EINVAL;
		return -1;
	}
	if (op->del) {
		rc = mdb_del(ap->txn, ap->st->dbi[op->table], &k, NULL);
		if (rc == MDB_NOTFOUND)
			rc = 0;
	} else
		rc = mdb_put(ap->txn, ap->st->dbi[op->table], &k, &v, 0);
	if (rc != 0) {
		ap->rc = rc;
		return -1;
	}
	return 0;
}

static int
seq_put(struct store *st, MDB_txn *txn, uint64_t seq)
{
	char buf[32];
	MDB_val k = { strlen(DEFER_SEQ_KEY), DEFER_SEQ_KEY }, v;

	v.mv_size = (size_t)snprintf(buf, sizeof(buf), "%" PRIu64, seq);
	v.mv_data = buf;
	return mdb_put(txn, st->dbi[STORE_META], &k, &v, 0);
}

/* The last frame the store holds, from its metadata (0: none yet). */
static int
seq_get(struct store *st, uint64_t *seq)
{
	MDB_txn *txn;
	MDB_val k = { strlen(DEFER_SEQ_KEY), DEFER_SEQ_KEY }, v;
	char buf[32];
	int rc;

	*seq = 0;
	if ((rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn)) != 0)
		return rc;
	rc = mdb_get(txn, st->dbi[STORE_META], &k, &v);
	if (rc == 0 && v.mv_size < sizeof(buf)) {
		memcpy(buf, v.mv_data, v.mv_size);
		buf[v.mv_size] = '\0';
		*seq = strtoull(buf, NULL, 10);
	}
	mdb_txn_abort(txn);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* A journaled operation into a view. */
static int
view_op(const struct redo_op *op, void *arg)
{
	struct store_view *v = arg;

	if (op->table >= STORE_NTABLES || op->klen == 0)
		return -1;
	return pending_set(v->map, op->table, op->key, op->klen, op->val,
	    op->vlen, op->del);
}

/* Commits what view v holds (each key's last state) to LMDB, recording
 * the journal's frame seq.  Returns LMDB's code. */
static int
view_commit(struct store *st, const struct store_view *v, uint64_t seq)
{
	struct apply ap = { .st = st };
	struct pending_entry *e;
	long n;
	int rc;

	if ((rc = mdb_txn_begin(st->env, NULL, 0, &ap.txn)) != 0)
		return rc;
	for (unsigned t = 0; t < STORE_NTABLES; t++) {
		if ((n = pending_entries(v->map, t, &e)) < 0) {
			mdb_txn_abort(ap.txn);
			return ENOMEM;
		}
		for (long i = 0; i < n; i++) {
			struct redo_op op = { .table = t, .del = e[i].val ==
			    NULL, .key = e[i].key, .klen = e[i].klen,
			    .val = e[i].val, .vlen = e[i].vlen };

			if (apply_op(&op, &ap) == -1) {
				free(e);
				mdb_txn_abort(ap.txn);
				return ap.rc;
			}
		}
		free(e);
	}
	if ((rc = seq_put(st, ap.txn, seq)) != 0) {
		mdb_txn_abort(ap.txn);
		return rc;
	}
	return mdb_txn_commit(ap.txn);
}

int
defer_open(struct store *st, const char *dir, size_t size, bool sync,
    char **cause)
{
	struct defer *d;
	uint64_t frames = 0, ops = 0;
	int rc;

	*cause = NULL;
	if ((d = calloc(1, sizeof(*d))) == NULL)
		return -1;
	pthread_mutex_init(&d->views_lock, NULL);
	d->size = size;
	d->sync = sync;
	st->defer = d;
	if ((d->view = view_new()) == NULL)
		goto nomem;
	if ((rc = seq_get(st, &d->seq)) != 0)
		goto lmdb_err;
	if ((d->redo = redo_open(dir, size, cause)) == NULL)
		goto err;
	/* The frames after the store's last, into the view: each key's last
	 * state is what applying them in order leaves. */
	if (redo_replay(d->redo, d->seq, view_op, d->view, &frames, &ops,
	    cause) == -1)
		goto err;
	if (frames > 0) {
		rc = view_commit(st, d->view, redo_last_seq(d->redo));
		if (store_status_full(store_commit_status(st, rc, true))) {
			/* Readers see them through the view meanwhile. */
			log_warnx("%s: %" PRIu64 " groups of the store journal "
			    "cannot be committed for want of room: kept in the "
			    "journal, and tried again", __func__, frames);
			d->lost = true;
			stats_journal(d);
			return 0;
		}
		if (rc != 0)
			goto lmdb_err;
		d->seq = redo_last_seq(d->redo);
		view_free(d->view);
		if ((d->view = view_new()) == NULL)
			goto nomem;
		log_info("%s: %" PRIu64 " changes of %" PRIu64 " groups "
		    "applied from the store journal", __func__, ops, frames);
	}
	redo_restart(d->redo);
	stats_journal(d);
	return 0;
lmdb_err:
	if (asprintf(cause, "the store journal cannot be applied: %s",
	    mdb_strerror(rc)) == -1)
		*cause = NULL;
	goto err;
nomem:
	*cause = NULL;
err:
	defer_close(st);
	return -1;
}

void
defer_close(struct store *st)
{
	struct defer *d = st->defer;
	struct store_view *v, *next;

	if (d == NULL)
		return;
	if (d->held != NULL)
		mdb_txn_abort(d->held);
	redo_close(d->redo);
	view_free(d->view);
	for (v = d->retired; v != NULL; v = next) {
		next = v->next;
		view_free(v);
	}
	pthread_mutex_destroy(&d->views_lock);
	free(d);
	st->defer = NULL;
}

bool
defer_enabled(const struct store *st)
{
	return st->defer != NULL;
}

struct store_view *
defer_view_take(struct store *st)
{
	struct defer *d = st->defer;
	struct store_view *v;

	pthread_mutex_lock(&d->views_lock);
	v = d->view;
	v->readers++;
	pthread_mutex_unlock(&d->views_lock);
	return v;
}

void
defer_view_release(struct store *st, struct store_view *v)
{
	struct defer *d = st->defer;
	struct store_view **pp;
	bool last;

	pthread_mutex_lock(&d->views_lock);
	last = --v->readers == 0 && v != d->view;
	if (last) {
		for (pp = &d->retired; *pp != v; pp = &(*pp)->next)
			;
		*pp = v->next;
	}
	pthread_mutex_unlock(&d->views_lock);
	if (last)
		view_free(v);
}

int
defer_view_get(const struct store_view *v, enum store_table t,
    const void *key, size_t klen, struct store_val *out)
{
	const void *val;
	size_t vlen;

	if (pending_get(v->map, t, key, klen, &val, &vlen) == 0)
		return -1;
	if (val == NULL)
		return STORE_NOTFOUND;
	out->data = val;
	out->len = vlen;
	return STORE_OK;
}

long
defer_view_entries(const struct store_view *v, enum store_table t,
    struct pending_entry **out)
{
	return pending_entries(v->map, t, out);
}

void
defer_capture(struct store *st, const struct redo_op *op)
{
	redo_capture(st->defer->redo, op);
}

bool
defer_is_holder(void)
{
	return defer_holder;
}

void
defer_want_begin(struct store *st)
{
	struct defer *d = st->defer;

	__atomic_fetch_add(&d->wanted, 1, __ATOMIC_SEQ_CST);
	if (d->on_wanted != NULL)
		d->on_wanted(d->on_wanted_arg);
}

void
defer_want_end(struct store *st)
{
	__atomic_fetch_sub(&st->defer->wanted, 1, __ATOMIC_SEQ_CST);
}

void
defer_on_wanted(struct store *st, void (*fn)(void *), void *arg)
{
	if (st->defer == NULL)
		return;
	st->defer->on_wanted = fn;
	st->defer->on_wanted_arg = arg;
}

/* Gives up the held transaction: it is built again from the journal. */
static void
lose_held(struct defer *d)
{
	if (d->held != NULL)
		mdb_txn_abort(d->held);
	d->held = NULL;
	d->lost = true;
	__atomic_fetch_add(&d->stats.failures, 1, __ATOMIC_RELAXED);
}

/* Builds the held transaction again from the frames since the last
 * checkpoint.  Returns a store status. */
static int
rebuild_held(struct store *st)
{
	struct defer *d = st->defer;
	struct apply ap = { .st = st };
	char *cause = NULL;
	int rc;

	if ((rc = mdb_txn_begin(st->env, NULL, 0, &ap.txn)) != 0)
		return store_status(rc, "rebuild");
	if (redo_reread(d->redo, d->seq, apply_op, &ap, &cause) == -1) {
		mdb_txn_abort(ap.txn);
		if (ap.rc != 0)
			rc = store_status(ap.rc, "rebuild");
		else {
			log_warnx("%s: %s", __func__, cause ? cause :
			    "out of memory");
			rc = STORE_FAILED;
		}
		free(cause);
		if (store_status_full(rc))
			store_note_full(st, rc);
		return rc;
	}
	d->held = ap.txn;
	d->held_since_ms = clock_mono_ms();
	d->lost = false;
	return STORE_OK;
}

int
defer_group_begin(struct store *st, struct store_txn **out)
{
	struct defer *d = st->defer;
	struct store_txn *txn;
	int rc;

	defer_holder = true;
	if (d->lost && (rc = rebuild_held(st)) != STORE_OK)
		return rc;
	if (d->held == NULL) {
		if ((rc = mdb_txn_begin(st->env, NULL, 0, &d->held)) != 0) {
			d->held = NULL;
			rc = store_status(rc, "begin");
			if (store_status_full(rc))
				store_note_full(st, rc);
			return rc;
		}
		d->held_since_ms = clock_mono_ms();
	}
	if ((txn = calloc(1, sizeof(*txn))) == NULL)
		return STORE_FAILED;
	txn->st = st;
	txn->capture = true;
	if ((rc = mdb_txn_begin(st->env, d->held, 0, &txn->txn)) != 0) {
		free(txn);
		return store_status(rc, "begin a group");
	}
	redo_capture_start(d->redo);
	*out = txn;
	return STORE_OK;
}

int
defer_group_end(struct store_txn *txn)
{
	struct store *st = txn->st;
	struct defer *d = st->defer;
	bool wrote = txn->wrote;
	int rc, err;

	if (redo_capture_failed(d->redo)) {
		store_abort(txn);
		log_warnx("%s: out of memory for a group's journal frame",
		    __func__);
		return STORE_FAILED;
	}
	if (!redo_capture_fits(d->redo) || pending_count(d->view->map) +
	    redo_capture_ops(d->redo) > PENDING_MAX) {
		store_abort(txn);
		return STORE_JOURNAL_FULL;
	}
	rc = mdb_txn_commit(txn->txn);
	free(txn);
	if (rc != 0) {
		rc = store_status(rc, "commit a group");
		if (store_status_full(rc))
			store_note_full(st, rc);
		return rc;
	}
	if (store_fault_hook != NULL && store_fault_hook("journal")) {
		errno = EIO;
		rc = -1;
	} else
		rc = redo_capture_write(d->redo);
	if (rc == -1) {
		err = errno;
		log_warnx("%s: cannot write the store journal: %s", __func__,
		    strerror(err));
		/* The next group builds it again without this one. */
		lose_held(d);
		stats_journal(d);
		return err == ENOSPC || err == EDQUOT ? STORE_NOSPACE :
		    STORE_FAILED;
	}
	if (d->sync && redo_sync(d->redo) == -1)
		fatal("%s: cannot sync the store journal: what is on disk is "
		    "unknown", __func__);
	stats_journal(d);
	if (redo_capture_publish(d->redo, d->view->map) == -1) {
		/* Readers must not miss what is answered: LMDB shows it to
		 * them once committed. */
		log_warnx("%s: out of memory for the readers' view: "
		    "committing now", __func__);
		if ((rc = defer_checkpoint(st)) != STORE_OK)
			log_warnx("%s: the commit failed (%s): readers may miss "
			    "writes until one succeeds", __func__,
			    store_strstatus(rc));
	}
	stat_set(&d->stats.pending, pending_count(d->view->map));
	if (wrote)
		store_note_room(st);
	return STORE_OK;
}

int
defer_checkpoint(struct store *st)
{
	struct defer *d = st->defer;
	struct store_view *fresh, *old;
	uint64_t seq;
	int rc;

	defer_holder = true;
	if (d->held == NULL && !d->lost)
		return STORE_OK;
	/* Lost to a failed checkpoint: each try builds it again from the
	 * journal, so not at once. */
	if (d->held == NULL && clock_mono_ms() < d->retry_ms)
		return d->failed;
	if (d->lost && (rc = rebuild_held(st)) != STORE_OK)
		return rc;
	if ((fresh = view_new()) == NULL) {
		log_warnx("%s: out of memory", __func__);
		return STORE_FAILED;
	}
	seq = redo_last_seq(d->redo);
	if ((rc = seq_put(st, d->held, seq)) == 0 && store_fault_hook != NULL &&
	    store_fault_hook("checkpoint"))
		rc = EIO;
	if (rc == 0)
		rc = mdb_txn_commit(d->held);
	else
		mdb_txn_abort(d->held);
	d->held = NULL;
	if (rc != 0) {
		/* LMDB took the transaction back (and its write lock, which
		 * other writers may want meanwhile): the journal still holds
		 * everything it held, to be built again by the next group or
		 * try. */
		view_free(fresh);
		rc = store_commit_status(st, rc, true);
		lose_held(d);
		d->failed = rc;
		d->retry_ms = clock_mono_ms() + DEFER_RETRY_MS;
		return rc;
	}
	d->seq = seq;
	store_commit_status(st, 0, true);
	pthread_mutex_lock(&d->views_lock);
	old = d->view;
	d->view = fresh;
	if (old->readers > 0) {
		old->next = d->retired;
		d->retired = old;
		old = NULL;
	}
	pthread_mutex_unlock(&d->views_lock);
	view_free(old);
	redo_restart(d->redo);
	__atomic_fetch_add(&d->stats.checkpoints, 1, __ATOMIC_RELAXED);
	stat_set(&d->stats.pending, 0);
	stats_journal(d);
	return STORE_OK;
}

bool
defer_holding(const struct store *st)
{
	return st->defer != NULL && (st->defer->held != NULL ||
	    st->defer->lost);
}

bool
defer_checkpoint_due(const struct store *st, uint64_t now_ms)
{
	const struct defer *d = st->defer;
	struct journal_stats js;

	if (d == NULL || (d->held == NULL && !d->lost))
		return false;
	if (d->held != NULL && __atomic_load_n(&d->wanted,
	    __ATOMIC_SEQ_CST) > 0)
		return true;
	if (d->held == NULL && clock_mono_ms() < d->retry_ms)
		return false;
	redo_stats(d->redo, &js);
	return pending_count(d->view->map) >= PENDING_MAX / 2 ||
	    js.bytes >= d->size / 2 ||
	    now_ms - d->held_since_ms >= DEFER_MAX_AGE_MS;
}

void
defer_stats(struct store *st, struct defer_stats *out)
{
	const struct defer *d = st->defer;

	memset(out, 0, sizeof(*out));
	if (d == NULL)
		return;
	out->journal_bytes = __atomic_load_n(&d->stats.journal_bytes,
	    __ATOMIC_RELAXED);
	out->journal_bytes_written = __atomic_load_n(
	    &d->stats.journal_bytes_written, __ATOMIC_RELAXED);
	out->frames = __atomic_load_n(&d->stats.frames, __ATOMIC_RELAXED);
	out->syncs = __atomic_load_n(&d->stats.syncs, __ATOMIC_RELAXED);
	out->checkpoints = __atomic_load_n(&d->stats.checkpoints,
	    __ATOMIC_RELAXED);
	out->pending = __atomic_load_n(&d->stats.pending, __ATOMIC_RELAXED);
	out->failures = __atomic_load_n(&d->stats.failures,
	    __ATOMIC_RELAXED);
}
