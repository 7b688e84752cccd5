/*
 * docns: the namespaces of documents.  See docns.h.
 *
 * The registry is two sorted arrays of pointers to entries: the live
 * namespaces by name, and every namespace (live or dropping) by id.  They
 * change shape only when a namespace is created, dropped or retired, rare
 * next to the lookups, under the write lock.  A retired entry is kept
 * aside until the registry is freed, so that an aborted transaction can
 * bring it back.
 *
 * Tags: a directory of 2^16 chunks of 2^16 ids each (ids are 32-bit, as
 * the tables keep them), both allocated on first use and published with
 * release stores; a chunk is never freed before the registry.
 */
#include "docns.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nsmask.h"

#define NS_PREFIX	"docs.ns"
#define NS_KEY		"docs.ns/"
#define NS_DROP_KEY	"docs.ns_drop/"
#define NS_NEXT_KEY	"docs.ns.next"
#define FORMAT_KEY	"docs.format"
/* The record format that names namespaces (docset.c). */
#define FORMAT_NS	"2"

#define TAG_CHUNK_BITS	16
#define TAG_CHUNK	(1u << TAG_CHUNK_BITS)
#define TAG_CHUNKS	(1u << (32 - TAG_CHUNK_BITS))

struct ns_entry {
	char name[DOCNS_NAME_MAX + 1];
	uint32_t id;
	bool dropping;
	uint64_t docs;			/* atomic */
	struct ns_entry *next;		/* retired list */
};

struct docns {
	pthread_rwlock_t lock;		/* the arrays and the entries' shape */
	struct ns_entry **by_name;	/* live named ones, by name */
	size_t nname;
	struct ns_entry **by_id;	/* every one, the default first */
	size_t nid, cap;
	struct ns_entry *retired;
	struct ns_entry *def;		/* the default one, never moved nor
					   freed before the registry: counted
					   without the lock */
	uint32_t next_id;		/* writer; never taken back */
	uint64_t named_docs;		/* atomic */
	uint32_t **tags;		/* atomic pointer, then chunks */
};

void
docns_mask(const char *name, size_t len, uint8_t out[DOCNS_MASK_LEN])
{
	if (ns_mask(name, len, out) == -1)
		fatalx("%s: a namespace name of %zu bytes", __func__, len);
}

/* Lock held: the position of name in by_name, or where it would go. */
static size_t
name_pos(const struct docns *r, const char *name, size_t len, bool *found)
{
	size_t lo = 0, hi = r->nname;

	*found = false;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const char *m = r->by_name[mid]->name;
		size_t mlen = strlen(m);
		int c = memcmp(m, name, mlen < len ? mlen : len);

		if (c == 0)
			c = (mlen > len) - (mlen < len);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Lock held: the position of id in by_id, or where it would go. */
static size_t
id_pos(const struct docns *r, uint32_t id, bool *found)
{
	size_t lo = 0, hi = r->nid;

	*found = false;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		uint32_t m = r->by_id[mid]->id;

		if (m == id) {
			*found = true;
			return mid;
		}
		if (m < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct ns_entry *
entry_of(const struct docns *r, uint32_t id)
{
	bool found;
	size_t i = id_pos(r, id, &found);

	return found ? r->by_id[i] : NULL;
}

/* Write lock held: room for one more entry in each array. */
static int
reserve(struct docns *r)
{
	struct ns_entry **a, **b;
	size_t cap;

	if (r->nid < r->cap)
		return 0;
	cap = r->cap ? 2 * r->cap : 16;
	if ((a = realloc(r->by_id, cap * sizeof(*a))) == NULL)
		return -1;
	r->by_id = a;
	if ((b = realloc(r->by_name, cap * sizeof(*b))) == NULL)
		return -1;
	r->by_name = b;
	r->cap = cap;
	return 0;
}

/* Write lock held, room reserved: e enters the arrays. */
static void
insert_entry(struct docns *r, struct ns_entry *e)
{
	bool found;
	size_t i = id_pos(r, e->id, &found);

	memmove(&r->by_id[i + 1], &r->by_id[i], (r->nid - i) *
	    sizeof(*r->by_id));
	r->by_id[i] = e;
	r->nid++;
	if (e->dropping || e->id == DOCNS_DEFAULT)
		return;
	i = name_pos(r, e->name, strlen(e->name), &found);
	memmove(&r->by_name[i + 1], &r->by_name[i], (r->nname - i) *
	    sizeof(*r->by_name));
	r->by_name[i] = e;
	r->nname++;
}

/* Write lock held: e leaves the by-name array (it is dropped). */
static void
unname_entry(struct docns *r, struct ns_entry *e)
{
	bool found;
	size_t i = name_pos(r, e->name, strlen(e->name), &found);

	if (!found || r->by_name[i] != e)
		return;
	memmove(&r->by_name[i], &r->by_name[i + 1], (r->nname - i - 1) *
	    sizeof(*r->by_name));
	r->nname--;
}

/* Write lock held: e leaves both arrays. */
static void
remove_entry(struct docns *r, struct ns_entry *e)
{
	bool found;
	size_t i;

	unname_entry(r, e);
	i = id_pos(r, e->id, &found);
	if (!found)
		return;
	memmove(&r->by_id[i], &r->by_id[i + 1], (r->nid - i - 1) *
	    sizeof(*r->by_id));
	r->nid--;
}

static struct ns_entry *
entry_new(const char *name, size_t len, uint32_t id, bool dropping)
{
	struct ns_entry *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	memcpy(e->name, name, len);
	e->id = id;
	e->dropping = dropping;
	return e;
}

/* Opening, no lock needed yet: adds an entry, unless its id exists. */
static int
load_entry(struct docns *r, const char *name, size_t len, uint32_t id,
    bool dropping)
{
	struct ns_entry *e;
	bool found;

	id_pos(r, id, &found);
	if (found)
		return -1;
	if (!dropping) {
		name_pos(r, name, len, &found);
		if (found)
			return -1;
	}
	if (reserve(r) == -1 || (e = entry_new(name, len, id, dropping)) ==
	    NULL)
		return -1;
	insert_entry(r, e);
	if (id >= r->next_id)
		r->next_id = id + 1;
	return 0;
}

/* A name as the metadata holds it: letters, digits, '.', '_', '-'. */
static bool
name_ok(const char *name, size_t len)
{
	if (len == 0 || len > DOCNS_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		    c == '-'))
			return false;
	}
	return true;
}

struct load {
	struct docns *r;
	const char *bad;
};

/* The metadata scan at opening: one namespace or drop mark per key. */
static int
load_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct load *l = arg;
	const char *k = key, *v = val;
	char buf[32];
	unsigned long long id;
	size_t n;

	if (klen < strlen(NS_PREFIX) || memcmp(k, NS_PREFIX,
	    strlen(NS_PREFIX)) != 0)
		return 1;	/* past the registry's keys */
	if (klen > strlen(NS_DROP_KEY) && memcmp(k, NS_DROP_KEY,
	    strlen(NS_DROP_KEY)) == 0) {
		/* The key holds the id, the value the name. */
		n = klen - strlen(NS_DROP_KEY);
		if (n >= sizeof(buf) || !name_ok(v, vlen))
			goto damaged;
		memcpy(buf, k + strlen(NS_DROP_KEY), n);
		buf[n] = '\0';
		if (sscanf(buf, "%llu", &id) != 1 || id == 0 ||
		    id >= DOCNS_NONE || load_entry(l->r, v, vlen,
		    (uint32_t)id, true) == -1)
			goto damaged;
		return 0;
	}
	if (klen > strlen(NS_KEY) && memcmp(k, NS_KEY, strlen(NS_KEY)) ==
	    0) {
		n = klen - strlen(NS_KEY);
		if (vlen >= sizeof(buf) || !name_ok(k + strlen(NS_KEY), n))
			goto damaged;
		memcpy(buf, v, vlen);
		buf[vlen] = '\0';
		if (sscanf(buf, "%llu", &id) != 1 || id == 0 ||
		    id >= DOCNS_NONE || load_entry(l->r, k + strlen(NS_KEY),
		    n, (uint32_t)id, false) == -1)
			goto damaged;
		return 0;
	}
	return 0;	/* docs.ns.next, read on its own */
damaged:
	l->bad = "a document namespace's metadata is damaged";
	return -1;
}

struct docns *
docns_open(struct store_txn *txn, char **cause)
{
	struct docns *r;
	struct load l = { NULL, NULL };
	struct ns_entry *def;
	char buf[32];
	int rc;

	*cause = NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	pthread_rwlock_init(&r->lock, NULL);
	r->next_id = 1;
	l.r = r;
	if (reserve(r) == -1 || (def = entry_new("", 0, DOCNS_DEFAULT,
	    false)) == NULL)
		goto nomem;
	insert_entry(r, def);
	r->def = def;
	rc = store_scan_from(txn, STORE_META, NS_PREFIX, strlen(NS_PREFIX),
	    load_one, &l);
	if (rc != STORE_OK && rc != 1) {
		if (asprintf(cause, "document namespaces: %s", l.bad ? l.bad :
		    store_strstatus(rc)) == -1)
			*cause = NULL;
		docns_free(r);
		return NULL;
	}
	rc = store_meta_get(txn, NS_NEXT_KEY, buf, sizeof(buf));
	if (rc == STORE_OK) {
		unsigned long long next;

		if (sscanf(buf, "%llu", &next) != 1 || next == 0 ||
		    next >= DOCNS_NONE) {
			if (asprintf(cause, "document namespaces: the next id "
			    "is damaged") == -1)
				*cause = NULL;
			docns_free(r);
			return NULL;
		}
		if (next > r->next_id)
			r->next_id = (uint32_t)next;
	} else if (rc != STORE_NOTFOUND) {
		if (asprintf(cause, "document namespaces: %s",
		    store_strstatus(rc)) == -1)
			*cause = NULL;
		docns_free(r);
		return NULL;
	}
	return r;
nomem:
	docns_free(r);
	return NULL;
}

void
docns_free(struct docns *r)
{
	struct ns_entry *e, *next;

	if (r == NULL)
		return;
	for (size_t i = 0; i < r->nid; i++)
		free(r->by_id[i]);
	for (e = r->retired; e != NULL; e = next) {
		next = e->next;
		free(e);
	}
	if (r->tags != NULL) {
		for (size_t i = 0; i < TAG_CHUNKS; i++)
			free(r->tags[i]);
		free(r->tags);
	}
	free(r->by_id);
	free(r->by_name);
	pthread_rwlock_destroy(&r->lock);
	free(r);
}

uint32_t
docns_find(struct docns *r, const char *name, size_t len)
{
	uint32_t id = DOCNS_NONE;
	bool found;
	size_t i;

	if (len == 0)
		return DOCNS_DEFAULT;
	pthread_rwlock_rdlock(&r->lock);
	i = name_pos(r, name, len, &found);
	if (found)
		id = r->by_name[i]->id;
	pthread_rwlock_unlock(&r->lock);
	return id;
}

bool
docns_full(struct docns *r)
{
	bool full;

	pthread_rwlock_rdlock(&r->lock);
	full = r->nid > DOCNS_MAX;	/* the default one is not counted */
	pthread_rwlock_unlock(&r->lock);
	return full;
}

/* Its id as the metadata's value or key part. */
static void
id_text(uint32_t id, char buf[16])
{
	snprintf(buf, 16, "%" PRIu32, id);
}

/* The format that names namespaces, for a reader to know: written unless
 * the store already says a later one (docset.c's sketches). */
static int
format_at_least(struct store_txn *txn, const char *format)
{
	char buf[16];
	int rc = store_meta_get(txn, FORMAT_KEY, buf, sizeof(buf));

	if (rc == STORE_OK && strtoul(buf, NULL, 10) >= strtoul(format, NULL,
	    10))
		return STORE_OK;
	if (rc != STORE_OK && rc != STORE_NOTFOUND)
		return rc;
	return store_meta_put(txn, FORMAT_KEY, format);
}

int
docns_create(struct docns *r, struct store_txn *txn, const char *name,
    uint32_t *id)
{
	char key[sizeof(NS_KEY) + DOCNS_NAME_MAX], val[16], next[16];
	struct ns_entry *e;
	int rc;

	if (r->next_id >= DOCNS_NONE) {
		log_warnx("%s: document namespace ids are exhausted",
		    __func__);
		return STORE_FULL;
	}
	*id = r->next_id;
	snprintf(key, sizeof(key), NS_KEY "%s", name);
	id_text(*id, val);
	id_text(*id + 1, next);
	if ((rc = store_meta_put(txn, key, val)) != STORE_OK ||
	    (rc = store_meta_put(txn, NS_NEXT_KEY, next)) != STORE_OK ||
	    (rc = format_at_least(txn, FORMAT_NS)) != STORE_OK)
		return rc;
	if ((e = entry_new(name, strlen(name), *id, false)) == NULL)
		return STORE_FAILED;
	pthread_rwlock_wrlock(&r->lock);
	if (reserve(r) == -1) {
		pthread_rwlock_unlock(&r->lock);
		free(e);
		return STORE_FAILED;
	}
	insert_entry(r, e);
	pthread_rwlock_unlock(&r->lock);
	/* Not taken back with the transaction: an id once given out is
	 * never given to another name, even by a query that looked it up
	 * meanwhile. */
	r->next_id++;
	return STORE_OK;
}

void
docns_uncreate(struct docns *r, uint32_t id)
{
	struct ns_entry *e;

	pthread_rwlock_wrlock(&r->lock);
	if ((e = entry_of(r, id)) != NULL) {
		if (__atomic_load_n(&e->docs, __ATOMIC_RELAXED) != 0)
			fatalx("%s: namespace %" PRIu32 " still counts "
			    "documents", __func__, id);
		remove_entry(r, e);
	}
	pthread_rwlock_unlock(&r->lock);
	free(e);
}

int
docns_drop(struct docns *r, struct store_txn *txn, uint32_t id)
{
	char key[sizeof(NS_DROP_KEY) + 16], name[DOCNS_NAME_MAX + 1];
	char nkey[sizeof(NS_KEY) + DOCNS_NAME_MAX], idt[16];
	struct ns_entry *e;
	int rc;

	if (id == DOCNS_DEFAULT || !docns_name(r, id, name))
		return STORE_NOTFOUND;
	id_text(id, idt);
	snprintf(key, sizeof(key), NS_DROP_KEY "%s", idt);
	snprintf(nkey, sizeof(nkey), NS_KEY "%s", name);
	if ((rc = store_del(txn, STORE_META, nkey, strlen(nkey))) !=
	    STORE_OK || (rc = store_meta_put(txn, key, name)) != STORE_OK)
		return rc;
	pthread_rwlock_wrlock(&r->lock);
	if ((e = entry_of(r, id)) != NULL && !e->dropping) {
		unname_entry(r, e);
		e->dropping = true;
	}
	pthread_rwlock_unlock(&r->lock);
	return STORE_OK;
}

void
docns_undrop(struct docns *r, uint32_t id)
{
	struct ns_entry *e;
	bool found;
	size_t i;

	pthread_rwlock_wrlock(&r->lock);
	if ((e = entry_of(r, id)) != NULL && e->dropping) {
		e->dropping = false;
		i = name_pos(r, e->name, strlen(e->name), &found);
		if (found)
			fatalx("%s: namespace %s was taken meanwhile",
			    __func__, e->name);
		memmove(&r->by_name[i + 1], &r->by_name[i], (r->nname - i) *
		    sizeof(*r->by_name));
		r->by_name[i] = e;
		r->nname++;
	}
	pthread_rwlock_unlock(&r->lock);
}

int
docns_retire(struct docns *r, struct store_txn *txn, uint32_t id)
{
	char key[sizeof(NS_DROP_KEY) + 16], idt[16];
	struct ns_entry *e;
	int rc;

	id_text(id, idt);
	snprintf(key, sizeof(key), NS_DROP_KEY "%s", idt);
	if ((rc = store_del(txn, STORE_META, key, strlen(key))) != STORE_OK &&
	    rc != STORE_NOTFOUND)
		return rc;
	pthread_rwlock_wrlock(&r->lock);
	if ((e = entry_of(r, id)) != NULL && e->dropping) {
		remove_entry(r, e);
		e->next = r->retired;
		r->retired = e;
	}
	pthread_rwlock_unlock(&r->lock);
	return STORE_OK;
}

void
docns_unretire(struct docns *r, uint32_t id)
{
	struct ns_entry **pp, *e;

	pthread_rwlock_wrlock(&r->lock);
	for (pp = &r->retired; (e = *pp) != NULL; pp = &e->next) {
		if (e->id != id)
			continue;
		*pp = e->next;
		e->next = NULL;
		/* Room is there: the entry left the arrays with its retire. */
		insert_entry(r, e);
		break;
	}
	pthread_rwlock_unlock(&r->lock);
}

int
docns_adopt(struct docns *r, struct store_txn *txn, uint32_t id,
    const char *name, size_t len)
{
	char key[sizeof(NS_DROP_KEY) + 16], val[DOCNS_NAME_MAX + 1], idt[16];
	int rc;

	if (!name_ok(name, len))
		return STORE_FAILED;
	memcpy(val, name, len);
	val[len] = '\0';
	id_text(id, idt);
	snprintf(key, sizeof(key), NS_DROP_KEY "%s", idt);
	if ((rc = store_meta_put(txn, key, val)) != STORE_OK)
		return rc;
	pthread_rwlock_wrlock(&r->lock);
	rc = load_entry(r, name, len, id, true) == -1 ? STORE_FAILED :
	    STORE_OK;
	pthread_rwlock_unlock(&r->lock);
	if (rc == STORE_OK) {
		char next[16];

		id_text(r->next_id, next);
		rc = store_meta_put(txn, NS_NEXT_KEY, next);
	}
	return rc;
}

void
docns_count(struct docns *r, uint32_t id, int64_t delta)
{
	struct ns_entry *e;

	if (id == DOCNS_DEFAULT) {
		__atomic_fetch_add(&r->def->docs, (uint64_t)delta,
		    __ATOMIC_RELAXED);
		return;
	}
	pthread_rwlock_rdlock(&r->lock);
	if ((e = entry_of(r, id)) != NULL) {
		__atomic_fetch_add(&e->docs, (uint64_t)delta,
		    __ATOMIC_RELAXED);
		/* Released: a query that reads it after finding a document
		 * in the tables sees it counted. */
		__atomic_fetch_add(&r->named_docs, (uint64_t)delta,
		    __ATOMIC_RELEASE);
	}
	pthread_rwlock_unlock(&r->lock);
}

uint64_t
docns_named_docs(const struct docns *r)
{
	return __atomic_load_n(&r->named_docs, __ATOMIC_ACQUIRE);
}

uint64_t
docns_dropping_docs(struct docns *r)
{
	uint64_t n = 0;

	pthread_rwlock_rdlock(&r->lock);
	for (size_t i = 0; i < r->nid; i++)
		if (r->by_id[i]->dropping)
			n += __atomic_load_n(&r->by_id[i]->docs,
			    __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&r->lock);
	return n;
}

uint64_t
docns_docs(struct docns *r, uint32_t id)
{
	struct ns_entry *e;
	uint64_t n = 0;

	if (id == DOCNS_DEFAULT)
		return __atomic_load_n(&r->def->docs, __ATOMIC_RELAXED);
	pthread_rwlock_rdlock(&r->lock);
	if ((e = entry_of(r, id)) != NULL)
		n = __atomic_load_n(&e->docs, __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&r->lock);
	return n;
}

bool
docns_dropping(struct docns *r, uint32_t id)
{
	struct ns_entry *e;
	bool dropping;

	pthread_rwlock_rdlock(&r->lock);
	dropping = (e = entry_of(r, id)) != NULL && e->dropping;
	pthread_rwlock_unlock(&r->lock);
	return dropping;
}

size_t
docns_dropped(struct docns *r, uint32_t *ids, size_t max)
{
	size_t n = 0;

	pthread_rwlock_rdlock(&r->lock);
	for (size_t i = 0; i < r->nid; i++) {
		if (!r->by_id[i]->dropping)
			continue;
		if (n < max)
			ids[n] = r->by_id[i]->id;
		n++;
	}
	pthread_rwlock_unlock(&r->lock);
	return n;
}

bool
docns_name(struct docns *r, uint32_t id, char name[DOCNS_NAME_MAX + 1])
{
	struct ns_entry *e;

	pthread_rwlock_rdlock(&r->lock);
	if ((e = entry_of(r, id)) != NULL)
		memcpy(name, e->name, DOCNS_NAME_MAX + 1);
	pthread_rwlock_unlock(&r->lock);
	return e != NULL;
}

static void
info_of(const struct ns_entry *e, struct docns_info *out)
{
	memcpy(out->name, e->name, sizeof(out->name));
	out->id = e->id;
	out->docs = __atomic_load_n(&e->docs, __ATOMIC_RELAXED);
	out->dropping = e->dropping;
}

struct docns_info *
docns_list(struct docns *r, size_t *n)
{
	struct docns_info *list;
	size_t k = 0;

	pthread_rwlock_rdlock(&r->lock);
	if ((list = calloc(r->nid + 1, sizeof(*list))) == NULL) {
		pthread_rwlock_unlock(&r->lock);
		*n = 0;
		return NULL;
	}
	info_of(r->by_id[0], &list[k++]);	/* the default one */
	for (size_t i = 0; i < r->nname; i++)
		info_of(r->by_name[i], &list[k++]);
	for (size_t i = 0; i < r->nid; i++)
		if (r->by_id[i]->dropping)
			info_of(r->by_id[i], &list[k++]);
	pthread_rwlock_unlock(&r->lock);
	*n = k;
	return list;
}

int
docns_tag_set(struct docns *r, uint64_t doc_id, uint32_t ns)
{
	uint32_t **dir = __atomic_load_n(&r->tags, __ATOMIC_ACQUIRE);
	uint32_t *chunk;
	size_t hi = (size_t)(doc_id >> TAG_CHUNK_BITS);

	if (doc_id > UINT32_MAX)
		return -1;
	if (dir == NULL) {
		if (ns == DOCNS_DEFAULT)
			return 0;	/* every id is the default's */
		if ((dir = calloc(TAG_CHUNKS, sizeof(*dir))) == NULL)
			return -1;
		__atomic_store_n(&r->tags, dir, __ATOMIC_RELEASE);
	}
	if ((chunk = __atomic_load_n(&dir[hi], __ATOMIC_ACQUIRE)) == NULL) {
		if (ns == DOCNS_DEFAULT)
			return 0;
		if ((chunk = calloc(TAG_CHUNK, sizeof(*chunk))) == NULL)
			return -1;
		__atomic_store_n(&dir[hi], chunk, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&chunk[doc_id & (TAG_CHUNK - 1)], ns,
	    __ATOMIC_RELEASE);
	return 0;
}

uint32_t
docns_tag(const struct docns *r, uint64_t doc_id)
{
	uint32_t **dir = __atomic_load_n(&r->tags, __ATOMIC_ACQUIRE);
	uint32_t *chunk;

	if (dir == NULL || doc_id > UINT32_MAX || (chunk = __atomic_load_n(
	    &dir[doc_id >> TAG_CHUNK_BITS], __ATOMIC_ACQUIRE)) == NULL)
		return DOCNS_DEFAULT;
	return __atomic_load_n(&chunk[doc_id & (TAG_CHUNK - 1)],
	    __ATOMIC_ACQUIRE);
}

uint64_t
docns_tag_next(const struct docns *r, uint32_t ns, uint64_t from,
    uint64_t end)
{
	uint32_t **dir = __atomic_load_n(&r->tags, __ATOMIC_ACQUIRE);
	uint64_t id = from;

	if (end > (uint64_t)UINT32_MAX + 1)
		end = (uint64_t)UINT32_MAX + 1;
	if (dir == NULL || ns == DOCNS_DEFAULT)
		return end;
	while (id < end) {
		uint32_t *chunk = __atomic_load_n(&dir[id >> TAG_CHUNK_BITS],
		    __ATOMIC_ACQUIRE);
		uint64_t stop = ((id >> TAG_CHUNK_BITS) + 1) << TAG_CHUNK_BITS;

		if (stop > end)
			stop = end;
		if (chunk == NULL) {
			id = stop;
			continue;
		}
		for (; id < stop; id++)
			if (__atomic_load_n(&chunk[id & (TAG_CHUNK - 1)],
			    __ATOMIC_RELAXED) == ns)
				return id;
	}
	return end;
}
