/*
 * docmove: the documents' side of adding a shard.  See docmove.h.
 *
 * The changed set is a hash set of (namespace, URL) entries, also kept in
 * a list in the order of the transactions that last changed them: the
 * writer appends (or moves to the end) the entries of its transaction,
 * whose ids only grow, so docmove_changed hands out from the front what
 * its reader sees and stops at the first change it does not.
 *
 * The session and its changed set (struct docmove) are made by the first
 * docmove_begin, in the store writer, and registered then as the document
 * set's change hook (docset.h), which hands every put and delete to
 * note() and frees them with the set.  Before any session there is none:
 * nothing is noted, and no session is open.
 */
#include "docmove.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jumphash.h"
#include "log.h"

/* docmove_page looks at this many records per document asked for (and a
 * few more), so that a page over documents that mostly stay ends. */
#define PAGE_LOOK_PER_DOC	64
#define PAGE_LOOK_MIN		1024
/* docset_records' callback: the page is complete (or failed). */
#define PAGE_STOP		1000
/*
 * The last session begun, "SHARDS PLACE", in the metadata: written so
 * that the begin's transaction commits (LMDB commits an empty one
 * without a new id), which lets a page's read tell whether it sees every
 * change made before the session.  A session does not outlive the
 * daemon: the value only says what the last one was.
 */
#define SESSION_KEY		"docs.export"

struct moved_key {
	struct moved_key *hnext;	/* the bucket's chain */
	struct moved_key *prev, *next;	/* by transaction */
	uint64_t hash;
	uint64_t txn_id;		/* the last transaction changing it */
	size_t ns_len, url_len;
	char data[];			/* the namespace, then the URL */
};

struct docmove {
	pthread_mutex_t lock;		/* all below but importing */
	bool open;
	uint32_t shards, place;
	uint64_t begin_txn;		/* the transaction that began it */
	uint64_t generation;		/* changes at each begin and end */
	struct moved_key **buckets;
	size_t nbuckets;		/* a power of 2, or 0 */
	size_t count;
	struct moved_key *head, *tail;
	bool importing;			/* writer thread: in docmove_import */
};

const char *
docmove_strstatus(int status)
{
	switch (status) {
	case DOCMOVE_NOSESSION:
		return "no export session";
	case DOCMOVE_STALE:
		return "the read does not see the export session's beginning";
	case DOCMOVE_INVALID:
		return "not a document to import";
	}
	return store_strstatus(status);
}

/* FNV-1a over the namespace, a NUL and the URL. */
static uint64_t
key_hash(const char *ns, size_t ns_len, const char *url, size_t url_len)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < ns_len; i++)
		h = (h ^ (uint8_t)ns[i]) * 1099511628211ULL;
	h *= 1099511628211ULL;
	for (size_t i = 0; i < url_len; i++)
		h = (h ^ (uint8_t)url[i]) * 1099511628211ULL;
	return h;
}

static struct moved_key **
bucket_of(struct docmove *m, uint64_t hash)
{
	return &m->buckets[hash & (m->nbuckets - 1)];
}

static void
list_unlink(struct docmove *m, struct moved_key *e)
{
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		m->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		m->tail = e->prev;
	e->prev = e->next = NULL;
}

static void
list_append(struct docmove *m, struct moved_key *e)
{
	e->next = NULL;
	e->prev = m->tail;
	if (m->tail != NULL)
		m->tail->next = e;
	else
		m->head = e;
	m->tail = e;
}

static void
list_prepend(struct docmove *m, struct moved_key *e)
{
	e->prev = NULL;
	e->next = m->head;
	if (m->head != NULL)
		m->head->prev = e;
	else
		m->tail = e;
	m->head = e;
}

static struct moved_key *
set_find(struct docmove *m, uint64_t hash, const char *ns, size_t ns_len,
    const char *url, size_t url_len)
{
	if (m->nbuckets == 0)
		return NULL;
	for (struct moved_key *e = *bucket_of(m, hash); e != NULL;
	    e = e->hnext)
		if (e->hash == hash && e->ns_len == ns_len &&
		    e->url_len == url_len && memcmp(e->data, ns, ns_len) == 0 &&
		    memcmp(e->data + ns_len, url, url_len) == 0)
			return e;
	return NULL;
}

/* Takes e out of the set (not freed). */
static void
set_unlink(struct docmove *m, struct moved_key *e)
{
	struct moved_key **p = bucket_of(m, e->hash);

	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	e->hnext = NULL;
	list_unlink(m, e);
	m->count--;
}

/* Doubles the buckets once they average one entry; a failure leaves
 * longer chains, not a lost entry. */
static int
set_grow(struct docmove *m)
{
	size_t n = m->nbuckets ? m->nbuckets * 2 : 256;
	struct moved_key **b;

	if (m->count < m->nbuckets)
		return 0;
	if ((b = calloc(n, sizeof(*b))) == NULL)
		return m->nbuckets > 0 ? 0 : -1;
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = n;
	for (struct moved_key *e = m->head; e != NULL; e = e->next) {
		struct moved_key **p = bucket_of(m, e->hash);

		e->hnext = *p;
		*p = e;
	}
	return 0;
}

/* Puts e (not in the set) into it, at the end of the list or, with front,
 * at its beginning. */
static int
set_link(struct docmove *m, struct moved_key *e, bool front)
{
	struct moved_key **p;

	if (set_grow(m) == -1)
		return -1;
	p = bucket_of(m, e->hash);
	e->hnext = *p;
	*p = e;
	if (front)
		list_prepend(m, e);
	else
		list_append(m, e);
	m->count++;
	return 0;
}

static void
set_clear(struct docmove *m)
{
	struct moved_key *e, *next;

	for (e = m->head; e != NULL; e = next) {
		next = e->next;
		free(e);
	}
	free(m->buckets);
	m->buckets = NULL;
	m->nbuckets = 0;
	m->count = 0;
	m->head = m->tail = NULL;
}

/* The change hook's release: frees the session with the document set. */
static void
docmove_free_state(void *arg)
{
	struct docmove *m = arg;

	set_clear(m);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* Any thread: ds's session state, NULL before the first session. */
static struct docmove *
docmove_of(struct docset *ds)
{
	return docset_change_hook_arg(ds);
}

/* The place among shards that owns the document of canonical URL url. */
static uint32_t
owner_of(const char *url, size_t url_len, uint32_t shards)
{
	uint8_t digest[DOCSET_KEY_LEN];

	/* The key in the default namespace is the URL's MD5 alone. */
	docset_key("", 0, url, url_len, digest);
	return jump_hash_owner(digest, shards);
}

/* The change hook: notes, in the store writer's transaction txn_id, that
 * the document of ns and url changes, if the session moves it; -1 when it
 * cannot (the change must fail). */
static int
note(void *arg, uint64_t txn_id, const char *ns, size_t ns_len,
    const char *url, size_t url_len)
{
	struct docmove *m = arg;
	struct moved_key *e;
	uint64_t hash;
	int rc = 0;

	/* Imports are the session's counterpart, not changes to export. */
	if (m->importing)
		return 0;
	pthread_mutex_lock(&m->lock);
	if (!m->open)
		goto out;
	if (owner_of(url, url_len, m->shards) == m->place)
		goto out;
	hash = key_hash(ns, ns_len, url, url_len);
	if ((e = set_find(m, hash, ns, ns_len, url, url_len)) != NULL) {
		/* Changed again: handed out only once this change is seen. */
		e->txn_id = txn_id;
		list_unlink(m, e);
		list_append(m, e);
		goto out;
	}
	if ((e = malloc(sizeof(*e) + ns_len + url_len)) == NULL) {
		rc = -1;
		goto out;
	}
	e->hash = hash;
	e->txn_id = txn_id;
	e->ns_len = ns_len;
	e->url_len = url_len;
	memcpy(e->data, ns, ns_len);
	memcpy(e->data + ns_len, url, url_len);
	if ((rc = set_link(m, e, false)) == -1)
		free(e);
out:
	pthread_mutex_unlock(&m->lock);
	if (rc == -1)
		log_warnx("%s: out of memory: a moving document's change "
		    "fails", __func__);
	return rc;
}

/* Store writer thread: ds's session state, made and registered as its
 * change hook if there is none yet; NULL when memory is short. */
static struct docmove *
docmove_make(struct docset *ds)
{
	struct docmove *m = docmove_of(ds);

	if (m != NULL)
		return m;
	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	if (pthread_mutex_init(&m->lock, NULL) != 0) {
		free(m);
		return NULL;
	}
	if (docset_set_change_hook(ds, note, docmove_free_state, m) == -1) {
		log_warnx("%s: the documents have another change hook",
		    __func__);
		docmove_free_state(m);
		return NULL;
	}
	return m;
}

int
docmove_begin(struct docset *ds, struct store_txn *txn, uint32_t shards,
    uint32_t place)
{
	struct docmove *m;
	char val[32];
	int rc;

	if (place >= shards)
		return DOCMOVE_INVALID;
	if ((m = docmove_make(ds)) == NULL)
		return STORE_FAILED;
	snprintf(val, sizeof(val), "%" PRIu32 " %" PRIu32, shards, place);
	if ((rc = store_meta_put(txn, SESSION_KEY, val)) != STORE_OK)
		return rc;
	pthread_mutex_lock(&m->lock);
	set_clear(m);
	m->open = true;
	m->shards = shards;
	m->place = place;
	m->begin_txn = store_txn_id(txn);
	m->generation++;
	pthread_mutex_unlock(&m->lock);
	return STORE_OK;
}

void
docmove_end(struct docset *ds)
{
	struct docmove *m = docmove_of(ds);

	if (m == NULL)
		return;
	pthread_mutex_lock(&m->lock);
	set_clear(m);
	m->open = false;
	m->generation++;
	pthread_mutex_unlock(&m->lock);
}

bool
docmove_open(struct docset *ds)
{
	struct docmove *m = docmove_of(ds);
	bool open;

	if (m == NULL)
		return false;
	pthread_mutex_lock(&m->lock);
	open = m->open;
	pthread_mutex_unlock(&m->lock);
	return open;
}

void
docmove_free(struct doc_moved *m, size_t n)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(m[i].url);
	free(m);
}

/* A group as the shard at place names it among all shards. */
static uint64_t
global_group(uint64_t group, uint32_t place)
{
	if (group >> DOCMOVE_GLOBAL_SHIFT != 0)
		return group;
	return (uint64_t)(place + 1) << DOCMOVE_GLOBAL_SHIFT | group;
}

/* Fills d with record r (its namespace's name included); -1 when memory
 * is short. */
static int
moved_of(const struct doc_record *r, uint32_t place, struct doc_moved *d)
{
	memset(d, 0, sizeof(*d));
	if ((d->url = malloc(r->url_len + 1)) == NULL)
		return -1;
	memcpy(d->url, r->url, r->url_len);
	d->url[r->url_len] = '\0';
	d->url_len = r->url_len;
	memcpy(d->ns, r->ns_name, r->ns_len);
	d->ns[r->ns_len] = '\0';
	d->fp = r->fp;
	d->group = global_group(r->group, place);
	d->created_ms = r->created_ms;
	d->updated_ms = r->updated_ms;
	d->has_sketch = docset_record_sketch(r, &d->sketch) == 0;
	return 0;
}

struct page_scan {
	struct docset *ds;
	uint32_t shards, place;
	size_t max, look;
	struct doc_moved *out;
	size_t n;
	uint64_t next;		/* the id after the last record looked at */
	bool stopped;
	int rc;
};

static int
page_one(const struct doc_record *r, void *arg)
{
	struct page_scan *ps = arg;

	ps->next = r->id + 1;
	if (!docns_dropping(docset_namespaces(ps->ds), r->ns)) {
		if (owner_of(r->url, r->url_len, ps->shards) != ps->place) {
			if (moved_of(r, ps->place, &ps->out[ps->n]) == -1) {
				log_warnx("%s: out of memory", __func__);
				ps->rc = STORE_FAILED;
				return PAGE_STOP;
			}
			ps->n++;
		}
	}
	if (ps->n == ps->max || --ps->look == 0) {
		ps->stopped = true;
		return PAGE_STOP;
	}
	return 0;
}

int
docmove_page(struct docset *ds, struct store_txn *txn, uint64_t *cursor,
    size_t max, struct doc_moved **out, size_t *n, bool *done)
{
	struct docmove *m = docmove_of(ds);
	struct page_scan ps = { .ds = ds, .max = max, .rc = STORE_OK };
	uint64_t begin_txn;
	bool open;
	int rc;

	*out = NULL;
	*n = 0;
	*done = false;
	if (m == NULL)
		return DOCMOVE_NOSESSION;
	pthread_mutex_lock(&m->lock);
	open = m->open;
	ps.shards = m->shards;
	ps.place = m->place;
	begin_txn = m->begin_txn;
	pthread_mutex_unlock(&m->lock);
	if (!open)
		return DOCMOVE_NOSESSION;
	if (store_txn_id(txn) < begin_txn)
		return DOCMOVE_STALE;
	if (max == 0)
		return STORE_OK;
	ps.look = max > (SIZE_MAX - PAGE_LOOK_MIN) / PAGE_LOOK_PER_DOC ?
	    SIZE_MAX : max * PAGE_LOOK_PER_DOC + PAGE_LOOK_MIN;
	if ((ps.out = calloc(max, sizeof(*ps.out))) == NULL) {
		log_warnx("%s: out of memory", __func__);
		return STORE_FAILED;
	}
	ps.next = *cursor > 0 ? *cursor : 1;
	rc = docset_records(ds, txn, ps.next, page_one, &ps);
	if (rc == PAGE_STOP)
		rc = ps.rc;
	if (rc != STORE_OK) {
		docmove_free(ps.out, ps.n);
		return rc;
	}
	*cursor = ps.next;
	*done = !ps.stopped;
	if (ps.n == 0) {
		free(ps.out);
		ps.out = NULL;
	}
	*out = ps.out;
	*n = ps.n;
	return STORE_OK;
}

/*
 * The state of the document of e as txn sees it, into d; place names its
 * group globally.
 */
static int
changed_state(struct docset *ds, struct store_txn *txn,
    const struct moved_key *e, uint32_t place, struct doc_moved *d)
{
	struct doc_record r;
	uint8_t key[DOCSET_KEY_LEN];
	uint32_t nsid;
	int rc;

	memset(d, 0, sizeof(*d));
	memcpy(d->ns, e->data, e->ns_len);
	d->ns[e->ns_len] = '\0';
	docset_key(d->ns, e->ns_len, e->data + e->ns_len, e->url_len, key);
	nsid = docset_ns_find(ds, d->ns);
	rc = docset_get(ds, txn, nsid, key, &r);
	if (rc == STORE_OK) {
		if (moved_of(&r, place, d) == -1) {
			log_warnx("%s: out of memory", __func__);
			return STORE_FAILED;
		}
		return STORE_OK;
	}
	if (rc != STORE_NOTFOUND)
		return rc;
	/* Gone, or never committed (its transaction aborted). */
	if ((d->url = malloc(e->url_len + 1)) == NULL) {
		log_warnx("%s: out of memory", __func__);
		return STORE_FAILED;
	}
	memcpy(d->url, e->data + e->ns_len, e->url_len);
	d->url[e->url_len] = '\0';
	d->url_len = e->url_len;
	d->deleted = true;
	return STORE_OK;
}

/* Puts back taken[0 .. n) (in the set's order) after a failed read,
 * unless the session changed meanwhile; frees what is not put back. */
static void
changed_restore(struct docmove *m, struct moved_key **taken, size_t n,
    uint64_t generation)
{
	pthread_mutex_lock(&m->lock);
	for (size_t i = n; i-- > 0;) {
		struct moved_key *e = taken[i];

		/* Noted again meanwhile: the newer entry stands. */
		if (m->generation != generation || set_find(m, e->hash,
		    e->data, e->ns_len, e->data + e->ns_len, e->url_len) !=
		    NULL || set_link(m, e, true) == -1)
			free(e);
	}
	pthread_mutex_unlock(&m->lock);
}

int
docmove_changed(struct docset *ds, struct store_txn *txn, size_t max,
    struct doc_moved **out, size_t *n, bool *more)
{
	struct docmove *m = docmove_of(ds);
	struct moved_key **taken = NULL;
	struct doc_moved *docs = NULL;
	uint64_t seen = store_txn_id(txn), generation;
	uint32_t place;
	size_t ntaken = 0;
	int rc = STORE_OK;

	*out = NULL;
	*n = 0;
	*more = false;
	if (m == NULL)
		return DOCMOVE_NOSESSION;
	if (max > 0 && ((taken = calloc(max, sizeof(*taken))) == NULL ||
	    (docs = calloc(max, sizeof(*docs))) == NULL)) {
		free(taken);
		log_warnx("%s: out of memory", __func__);
		return STORE_FAILED;
	}
	pthread_mutex_lock(&m->lock);
	if (!m->open) {
		pthread_mutex_unlock(&m->lock);
		free(taken);
		free(docs);
		return DOCMOVE_NOSESSION;
	}
	while (ntaken < max && m->head != NULL && m->head->txn_id <= seen) {
		taken[ntaken] = m->head;
		set_unlink(m, taken[ntaken++]);
	}
	*more = m->count > 0;
	place = m->place;
	generation = m->generation;
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < ntaken && rc == STORE_OK; i++)
		rc = changed_state(ds, txn, taken[i], place, &docs[i]);
	if (rc != STORE_OK) {
		changed_restore(m, taken, ntaken, generation);
		free(taken);
		docmove_free(docs, ntaken);
		*more = true;
		return rc;
	}
	for (size_t i = 0; i < ntaken; i++)
		free(taken[i]);
	free(taken);
	if (ntaken == 0) {
		free(docs);
		docs = NULL;
	}
	*out = docs;
	*n = ntaken;
	return STORE_OK;
}

/* Whether d can be imported. */
static bool
import_valid(const struct doc_moved *d)
{
	if (d->url == NULL || d->url_len == 0 ||
	    memchr(d->url, '\0', d->url_len) != NULL ||
	    memchr(d->ns, '\0', sizeof(d->ns)) == NULL)
		return false;
	return d->deleted || (d->group != 0 && d->group != DOCSET_OWN_GROUP);
}

int
docmove_import(struct docset *ds, struct store_txn *txn,
    const struct doc_moved *d, struct doc_undo *undo)
{
	struct docmove *m = docmove_of(ds);
	struct doc_record r;
	uint8_t key[DOCSET_KEY_LEN];
	uint64_t id;
	bool created;
	int rc;

	memset(undo, 0, sizeof(*undo));
	if (!import_valid(d))
		return DOCMOVE_INVALID;
	docset_key(d->ns, strlen(d->ns), d->url, d->url_len, key);
	/* Without a session state nothing is noted anyway. */
	if (m != NULL)
		m->importing = true;
	if (d->deleted)
		rc = docset_delete(ds, txn, d->ns, key, &id, undo);
	else
		rc = docset_put_times(ds, txn, d->ns, key, d->url, d->url_len,
		    d->fp, d->has_sketch ? &d->sketch : NULL, d->group,
		    d->created_ms, d->updated_ms, &r, &created, undo);
	if (m != NULL)
		m->importing = false;
	return rc;
}

/* ---- Writer jobs. ---- */

static int
begin_apply(struct writer_job *wj, struct store_txn *txn)
{
	struct docmove_begin_job *j = (struct docmove_begin_job *)wj;

	return docmove_begin(j->ds, txn, j->shards, j->place);
}

static void
begin_committed(struct writer_job *wj)
{
	(void)wj;	/* the session is open since apply */
}

/* A begin that failed leaves no session: its requester hears it failed. */
static void
begin_aborted(struct writer_job *wj)
{
	struct docmove_begin_job *j = (struct docmove_begin_job *)wj;

	docmove_end(j->ds);
}

static void
begin_done(struct writer_job *wj)
{
	struct docmove_begin_job *j = (struct docmove_begin_job *)wj;

	j->done(j);
}

static const struct writer_job_ops begin_job_ops = {
	.apply = begin_apply,
	.committed = begin_committed,
	.aborted = begin_aborted,
	.done = begin_done,
};

void
docmove_begin_job_init(struct docmove_begin_job *j, struct docset *ds,
    uint32_t shards, uint32_t place, void (*done)(struct docmove_begin_job *),
    void *arg)
{
	memset(j, 0, sizeof(*j));
	j->wj.ops = &begin_job_ops;
	j->wj.cost = 1;
	j->ds = ds;
	j->shards = shards;
	j->place = place;
	j->done = done;
	j->arg = arg;
}

static int
import_apply(struct writer_job *wj, struct store_txn *txn)
{
	struct docmove_import_job *j = (struct docmove_import_job *)wj;
	int rc;

	j->applied = 0;
	for (size_t i = 0; i < j->n; i++) {
		rc = docmove_import(j->ds, txn, &j->docs[i], &j->undo[i]);
		/* A failed import may have changed the tables: its undo
		 * says how much. */
		j->applied = i + 1;
		if (rc != STORE_OK)
			return rc;
	}
	return STORE_OK;
}

static void
import_committed(struct writer_job *wj)
{
	struct docmove_import_job *j = (struct docmove_import_job *)wj;

	j->applied = 0;	/* the tables changed with the transaction */
}

static void
import_aborted(struct writer_job *wj)
{
	struct docmove_import_job *j = (struct docmove_import_job *)wj;

	/* The last first, as docset_undo wants. */
	while (j->applied > 0) {
		j->applied--;
		docset_undo(j->ds, &j->undo[j->applied]);
		memset(&j->undo[j->applied], 0, sizeof(j->undo[j->applied]));
	}
}

static void
import_done(struct writer_job *wj)
{
	struct docmove_import_job *j = (struct docmove_import_job *)wj;

	j->done(j);
}

static const struct writer_job_ops import_job_ops = {
	.apply = import_apply,
	.committed = import_committed,
	.aborted = import_aborted,
	.done = import_done,
};

int
docmove_import_job_init(struct docmove_import_job *j, struct docset *ds,
    const struct doc_moved *docs, size_t n,
    void (*done)(struct docmove_import_job *), void *arg)
{
	memset(j, 0, sizeof(*j));
	for (size_t i = 0; i < n; i++)
		if (!import_valid(&docs[i]))
			return DOCMOVE_INVALID;
	if (n > 0 && (j->undo = calloc(n, sizeof(*j->undo))) == NULL)
		return STORE_FAILED;
	j->wj.ops = &import_job_ops;
	j->wj.cost = n > 0 ? n : 1;
	j->ds = ds;
	j->docs = docs;
	j->n = n;
	j->done = done;
	j->arg = arg;
	return STORE_OK;
}

void
docmove_import_job_clear(struct docmove_import_job *j)
{
	free(j->undo);
	j->undo = NULL;
}
